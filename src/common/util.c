/* util.c — atomic writes, mkdir -p, whole-file reads, the clock (see util.h). */
#define _POSIX_C_SOURCE 200809L
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int is_dir(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

mcl_status mcl_mkdir_p(const char *path, char *err, size_t len)
{
    char buf[4096];
    size_t k = strlen(path);
    if (k == 0 || k >= sizeof buf) return mcl_errbuf(err, len, MCL_ERR_INVALID, "%s: bad directory path", path);
    memcpy(buf, path, k + 1);
    for (size_t i = 1; i <= k; i++) {
        if (buf[i] != '/' && buf[i] != '\0') continue;
        char saved = buf[i];
        buf[i] = '\0';
        if (mkdir(buf, 0755) != 0 && errno != EEXIST)
            return mcl_errbuf(err, len, MCL_ERR_IO, "%s: cannot create directory: %s", buf,
                              strerror(errno));
        if (!is_dir(buf))
            return mcl_errbuf(err, len, MCL_ERR_IO, "%s: exists and is not a directory", buf);
        buf[i] = saved;
    }
    return MCL_OK;
}

int mcl_tmp_name(const char *path, char *tmp, size_t len)
{
    static atomic_uint counter;
    unsigned k = atomic_fetch_add(&counter, 1u);
    int r = snprintf(tmp, len, "%s.tmp.%ld.%u", path, (long)getpid(), k);
    return r < 0 || (size_t)r >= len ? -1 : 0;
}

int mcl_fsync_parent_dir(const char *path)
{
    char dir[4096];
    const char *slash = strrchr(path, '/');
    if (!slash) {
        strcpy(dir, ".");
    } else {
        size_t n = (size_t)(slash - path);
        if (n >= sizeof dir) return -1;
        if (n == 0) n = 1; /* "/file" */
        memcpy(dir, path, n);
        dir[n] = 0;
    }
    int fd = open(dir, O_RDONLY);
    if (fd < 0) return -1;
    int r = fsync(fd);
    /* Some file systems refuse fsync on a directory (EINVAL): the rename is still done. */
    if (r != 0 && (errno == EINVAL || errno == EBADF)) r = 0;
    close(fd);
    return r;
}

mcl_status mcl_tmp_create(const char *path, char *tmp, size_t tmp_len, int *fd, char *err,
                          size_t len)
{
    *fd = -1;
    int e = 0;
    for (int tries = 0; tries < 100; tries++) {
        if (mcl_tmp_name(path, tmp, tmp_len) != 0)
            return mcl_errbuf(err, len, MCL_ERR_INVALID, "%s: path too long", path);
        int d = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (d >= 0) {
            *fd = d;
            return MCL_OK;
        }
        e = errno;
        if (e != EEXIST && e != ELOOP) break; /* a name already taken: the next one */
    }
    return mcl_errbuf(err, len, MCL_ERR_IO, "%s: cannot create the temporary file '%s': %s", path,
                      tmp, strerror(e));
}

static int write_all_fd(int fd, const void *data, size_t n)
{
    const char *p = data;
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* fsync, close, rename tmp -> path, fsync the directory; on failure tmp is removed. */
static mcl_status finish_tmp(int fd, const char *tmp, const char *path, int bad, int e, char *err,
                             size_t len)
{
    if (!bad && fsync(fd) != 0) {
        bad = 1;
        e = errno;
    }
    if (close(fd) != 0 && !bad) {
        bad = 1;
        e = errno;
    }
    if (!bad && rename(tmp, path) != 0) {
        bad = 1;
        e = errno;
    }
    if (bad) {
        unlink(tmp);
        return mcl_errbuf(err, len, MCL_ERR_IO, "%s: write failed: %s", path,
                          e ? strerror(e) : "I/O error");
    }
    if (mcl_fsync_parent_dir(path) != 0)
        return mcl_errbuf(err, len, MCL_ERR_IO, "%s: written, but syncing its directory failed: %s",
                          path, strerror(errno));
    return MCL_OK;
}

mcl_status mcl_write_file_atomic(const char *path, const void *data, size_t n, char *err,
                                 size_t len)
{
    char tmp[4200];
    int fd;
    mcl_status st = mcl_tmp_create(path, tmp, sizeof tmp, &fd, err, len);
    if (st != MCL_OK) return st;
    int bad = write_all_fd(fd, data, n) != 0;
    return finish_tmp(fd, tmp, path, bad, bad ? errno : 0, err, len);
}

mcl_status mcl_atomic_open(mcl_atomic_file *af, const char *path, char *err, size_t len)
{
    memset(af, 0, sizeof *af);
    if (!path || !path[0]) return mcl_errbuf(err, len, MCL_ERR_NULL, "no path given");
    if (strlen(path) >= sizeof af->path)
        return mcl_errbuf(err, len, MCL_ERR_INVALID, "%s: path too long", path);
    strcpy(af->path, path);
    int fd;
    mcl_status st = mcl_tmp_create(path, af->tmp, sizeof af->tmp, &fd, err, len);
    if (st != MCL_OK) return st;
    af->f = fdopen(fd, "wb");
    if (!af->f) {
        int e = errno;
        close(fd);
        unlink(af->tmp);
        return mcl_errbuf(err, len, MCL_ERR_IO, "%s: cannot open %s: %s", path, af->tmp, strerror(e));
    }
    return MCL_OK;
}

mcl_status mcl_atomic_commit(mcl_atomic_file *af, char *err, size_t len)
{
    if (!af->f) return mcl_errbuf(err, len, MCL_ERR_NULL, "no file open");
    int bad = fflush(af->f) != 0 || ferror(af->f);
    int e = bad ? errno : 0;
    int fd = dup(fileno(af->f)); /* fclose closes the stream's own descriptor */
    if (fd < 0 && !bad) {
        bad = 1;
        e = errno;
    }
    if (fclose(af->f) != 0 && !bad) {
        bad = 1;
        e = errno;
    }
    af->f = NULL;
    if (fd < 0) {
        unlink(af->tmp);
        return mcl_errbuf(err, len, MCL_ERR_IO, "%s: write failed: %s", af->path, strerror(e));
    }
    return finish_tmp(fd, af->tmp, af->path, bad, e, err, len);
}

void mcl_atomic_abort(mcl_atomic_file *af)
{
    if (!af->f) return;
    fclose(af->f);
    af->f = NULL;
    unlink(af->tmp);
}

mcl_status mcl_fopen_append(const char *path, int truncate, FILE **f, char *err, size_t len)
{
    *f = NULL;
    int fl = O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC;
    int d = open(path, fl | (truncate ? O_TRUNC : 0), 0644);
    if (d < 0) return mcl_errbuf(err, len, MCL_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(d, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(d);
        return mcl_errbuf(err, len, MCL_ERR_IO, "%s: is not a regular file", path);
    }
    (void)fcntl(d, F_SETFL, O_APPEND);
    *f = fdopen(d, "a");
    if (!*f) {
        int e = errno;
        close(d);
        return mcl_errbuf(err, len, MCL_ERR_IO, "%s: cannot open: %s", path, strerror(e));
    }
    return MCL_OK;
}

mcl_status mcl_read_text_file(const char *path, size_t max, char **out, char *err, size_t len)
{
    *out = NULL;
    FILE *f = NULL;
    mcl_status st = mcl_fopen_regular(path, &f, NULL, err, len);
    if (st != MCL_OK) return st;
    char *buf = malloc(max + 1);
    size_t n = buf ? fread(buf, 1, max + 1, f) : 0;
    int bad = ferror(f);
    fclose(f);
    if (!buf) return mcl_errbuf(err, len, MCL_ERR_OOM, "out of memory");
    if (bad || n > max) {
        free(buf);
        if (bad) return mcl_errbuf(err, len, MCL_ERR_IO, "%s: read error", path);
        if (max == (1u << 20)) return mcl_errbuf(err, len, MCL_ERR_INVALID, "%s: larger than 1 MiB", path);
        return mcl_errbuf(err, len, MCL_ERR_INVALID, "%s: larger than %zu bytes", path, max);
    }
    buf[n] = 0;
    if (strlen(buf) != n) {
        free(buf);
        return mcl_errbuf(err, len, MCL_ERR_INVALID, "%s: contains a NUL byte (not a text file)", path);
    }
    *out = buf;
    return MCL_OK;
}

mcl_status mcl_open_regular(const char *path, int flags, int *fd, uint64_t *size, char *err,
                            size_t len)
{
    *fd = -1;
    if (size) *size = 0;
    if (!path || !path[0]) return mcl_errbuf(err, len, MCL_ERR_NULL, "no path given");
    int d = open(path, O_RDONLY | O_NONBLOCK | flags);
    if (d < 0) return mcl_errbuf(err, len, MCL_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(d, &st) != 0) {
        int e = errno;
        close(d);
        return mcl_errbuf(err, len, MCL_ERR_IO, "%s: cannot stat: %s", path, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(d);
        return mcl_errbuf(err, len, MCL_ERR_IO, "%s: %s", path,
                          S_ISDIR(st.st_mode) ? "is a directory" : "is not a regular file");
    }
    int fl = fcntl(d, F_GETFL);
    if (fl != -1 && (flags & O_NONBLOCK) == 0) (void)fcntl(d, F_SETFL, fl & ~O_NONBLOCK);
    *fd = d;
    if (size) *size = st.st_size > 0 ? (uint64_t)st.st_size : 0;
    return MCL_OK;
}

mcl_status mcl_fopen_regular(const char *path, FILE **f, uint64_t *size, char *err, size_t len)
{
    int fd;
    *f = NULL;
    mcl_status st = mcl_open_regular(path, O_CLOEXEC, &fd, size, err, len);
    if (st != MCL_OK) return st;
    *f = fdopen(fd, "rb");
    if (!*f) {
        int e = errno;
        close(fd);
        return mcl_errbuf(err, len, MCL_ERR_IO, "%s: cannot open: %s", path, strerror(e));
    }
    return MCL_OK;
}

int mcl_parse_size(const char *s, uint64_t *out)
{
    if (!s || *s < '0' || *s > '9') return -1;
    uint64_t v = 0;
    for (; *s >= '0' && *s <= '9'; s++) {
        if (v > (UINT64_MAX - 9) / 10) return -1;
        v = v * 10 + (uint64_t)(*s - '0');
    }
    int shift = 0;
    switch (*s) {
    case 'k': case 'K': shift = 10; s++; break;
    case 'm': case 'M': shift = 20; s++; break;
    case 'g': case 'G': shift = 30; s++; break;
    case 't': case 'T': shift = 40; s++; break;
    default: break;
    }
    if (shift && *s == 'i') s++;
    if (*s == 'B' || *s == 'b') s++;
    if (*s) return -1;
    if (shift && v > (UINT64_MAX >> shift)) return -1;
    *out = v << shift;
    return 0;
}

static _Atomic uint64_t memory_limit;

void mcl_set_memory_limit(uint64_t bytes) { memory_limit = bytes; }

/* Where the budget comes from, for messages. */
static uint64_t budget_from(const char **src)
{
    uint64_t v = memory_limit;
    if (v) {
        *src = "--memory-limit";
        return v;
    }
    const char *env = getenv("METACL_MEMORY_LIMIT");
    if (env && *env && mcl_parse_size(env, &v) == 0 && v > 0) {
        *src = "METACL_MEMORY_LIMIT";
        return v;
    }
    *src = "half the physical memory";
    long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGE_SIZE);
    if (pages <= 0 || psz <= 0) return (uint64_t)4 << 30; /* unknown: 4 GiB */
    return (uint64_t)pages / 2 * (uint64_t)psz;
}

uint64_t mcl_memory_budget(void)
{
    const char *src;
    return budget_from(&src);
}

uint64_t mcl_budget_bytes(double bytes)
{
    if (!(bytes > 0)) return 0;
    return bytes >= 1.8e19 ? UINT64_MAX : (uint64_t)bytes;
}

const char *mcl_fmt_bytes(uint64_t bytes, char *buf, size_t len)
{
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    double v = (double)bytes;
    int u = 0;
    while (v >= 1024.0 && u < 6) {
        v /= 1024.0;
        u++;
    }
    if (u == 0) snprintf(buf, len, "%llu B", (unsigned long long)bytes);
    else snprintf(buf, len, v < 10 ? "%.2f %s" : v < 100 ? "%.1f %s" : "%.0f %s", v, unit[u]);
    return buf;
}

mcl_status mcl_check_budget(uint64_t bytes, const char *what, char *err, size_t len)
{
    const char *src;
    uint64_t b = budget_from(&src);
    if (bytes <= b) return MCL_OK;
    char nb[32], bb[32];
    return mcl_errbuf(err, len, MCL_ERR_OOM,
                      "%s needs about %s, more than the memory budget of %s (%s); "
                      "refused before allocating (raise the budget with --memory-limit SIZE or "
                      "METACL_MEMORY_LIMIT=SIZE, e.g. 64G)",
                      what ? what : "this", mcl_fmt_bytes(bytes, nb, sizeof nb),
                      mcl_fmt_bytes(b, bb, sizeof bb), src);
}

#define LOCK_NAME ".metacl.lock"

/* The PID that holds the lock on fd (F_GETLK), else the one written in the file, else 0. */
static long lock_holder(int fd)
{
    struct flock fl;
    memset(&fl, 0, sizeof fl);
    fl.l_type = F_WRLCK;
    fl.l_whence = SEEK_SET;
    if (fcntl(fd, F_GETLK, &fl) == 0 && fl.l_type != F_UNLCK && fl.l_pid > 0) return (long)fl.l_pid;
    char buf[32];
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    if (n <= 0) return 0;
    buf[n] = 0;
    long pid = strtol(buf, NULL, 10);
    return pid > 0 ? pid : 0;
}

mcl_status mcl_dir_lock(const char *dir, int *fd, char *err, size_t len)
{
    char path[4200];
    *fd = -1;
    if (snprintf(path, sizeof path, "%s/%s", dir, LOCK_NAME) >= (int)sizeof path)
        return mcl_errbuf(err, len, MCL_ERR_INVALID, "%s: path too long", dir);
    /* A holder that removes the file (a run that failed to start) may do so between our open
     * and our lock: then we hold a lock on a file no longer in the directory, and try again. */
    for (int tries = 0; tries < 100; tries++) {
        int d = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0644);
        if (d < 0)
            return mcl_errbuf(err, len, MCL_ERR_IO, "%s: cannot open the lock file: %s", path,
                              strerror(errno));
        struct stat a, b;
        if (fstat(d, &a) != 0 || !S_ISREG(a.st_mode)) {
            close(d);
            return mcl_errbuf(err, len, MCL_ERR_IO, "%s: the lock file is not a regular file", path);
        }
        struct flock fl;
        memset(&fl, 0, sizeof fl);
        fl.l_type = F_WRLCK;
        fl.l_whence = SEEK_SET;
        if (fcntl(d, F_SETLK, &fl) != 0) {
            int e = errno;
            if (e == EACCES || e == EAGAIN) {
                long pid = lock_holder(d);
                close(d);
                char who[48] = "";
                if (pid > 0) snprintf(who, sizeof who, " (PID %ld)", pid);
                return mcl_errbuf(err, len, MCL_ERR_STATE,
                                  "%s is in use by another metacl process%s: one process writes a "
                                  "run directory at a time; wait for it to end or stop it",
                                  dir, who);
            }
            close(d);
            return mcl_errbuf(err, len, MCL_ERR_IO, "%s: cannot lock: %s", path, strerror(e));
        }
        if (stat(path, &b) != 0 || b.st_ino != a.st_ino || b.st_dev != a.st_dev) {
            close(d); /* removed or replaced under us */
            continue;
        }
        char pid[32];
        int n = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
        if (ftruncate(d, 0) != 0 || pwrite(d, pid, (size_t)n, 0) != n) {
            int e = errno;
            close(d);
            return mcl_errbuf(err, len, MCL_ERR_IO, "%s: cannot write the lock file: %s", path,
                              strerror(e));
        }
        *fd = d;
        return MCL_OK;
    }
    return mcl_errbuf(err, len, MCL_ERR_IO, "%s: the lock file keeps being replaced", path);
}

void mcl_dir_unlock(const char *dir, int fd, int remove)
{
    if (fd < 0) return;
    if (remove) {
        char path[4200];
        if (snprintf(path, sizeof path, "%s/%s", dir, LOCK_NAME) < (int)sizeof path) unlink(path);
    }
    close(fd); /* releases the lock */
}

#define GUARD_SLOTS 8
static char guard_path[GUARD_SLOTS][4200];
static volatile sig_atomic_t guard_used[GUARD_SLOTS];

int mcl_tmpdir_guard(const char *path)
{
    if (!path || strlen(path) >= sizeof guard_path[0]) return -1;
    for (int i = 0; i < GUARD_SLOTS; i++)
        if (!guard_used[i]) {
            strcpy(guard_path[i], path);
            guard_used[i] = 1; /* after the path is complete: the handler reads it only then */
            return 0;
        }
    return -1;
}

void mcl_tmpdir_unguard(const char *path)
{
    for (int i = 0; path && i < GUARD_SLOTS; i++)
        if (guard_used[i] && !strcmp(guard_path[i], path)) guard_used[i] = 0;
}

/* Async-signal-safe: fork, execve, waitpid, signal, raise. */
static void on_guard_signal(int sig)
{
    for (int i = 0; i < GUARD_SLOTS; i++) {
        if (!guard_used[i]) continue;
        pid_t p = fork();
        if (p == 0) {
            char *const argv[] = {"rm", "-rf", "--", guard_path[i], NULL};
            char *const envp[] = {NULL};
            execve("/bin/rm", argv, envp);
            _exit(127);
        }
        if (p > 0) {
            int ws;
            while (waitpid(p, &ws, 0) < 0 && errno == EINTR) {
            }
        }
        guard_used[i] = 0;
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

void mcl_tmpdir_guard_signals(void)
{
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_guard_signal;
    sigemptyset(&sa.sa_mask);
    for (int i = 0; i < 3; i++) sigaddset(&sa.sa_mask, sigs[i]); /* one cleanup at a time */
    for (int i = 0; i < 3; i++) sigaction(sigs[i], &sa, NULL);
}

double mcl_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
