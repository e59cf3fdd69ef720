/* text_fetch.c — apt-get download and dpkg-deb for the text corpus, run without a shell
 * (fork + execvp), and rm -rf of the temporary directory (textprep.h). */
#ifndef _XOPEN_SOURCE
#define _XOPEN_SOURCE 700
#endif

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "textprep.h"

int mcl_run_cmd(char *const argv[], const char *cwd, mcl_buf *out, const char *log, char *err,
                size_t len)
{
    int pfd[2] = {-1, -1};
    if (out && pipe(pfd) != 0) {
        mcl_errbuf(err, len, MCL_ERR_IO, "%s: cannot make a pipe: %s", argv[0], strerror(errno));
        return -1;
    }
    int lfd = open(log ? log : "/dev/null", O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (lfd < 0) {
        mcl_errbuf(err, len, MCL_ERR_IO, "%s: %s", log ? log : "/dev/null", strerror(errno));
        if (out) {
            close(pfd[0]);
            close(pfd[1]);
        }
        return -1;
    }
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        close(lfd);
        if (out) {
            close(pfd[0]);
            close(pfd[1]);
        }
        mcl_errbuf(err, len, MCL_ERR_IO, "%s: fork failed: %s", argv[0], strerror(e));
        return -1;
    }
    if (pid == 0) {
        /* the child: stdin from /dev/null, stdout to the pipe or the log, stderr to the log */
        int nul = open("/dev/null", O_RDONLY);
        if (nul >= 0) dup2(nul, 0);
        if (dup2(out ? pfd[1] : lfd, 1) < 0 || dup2(lfd, 2) < 0) _exit(126);
        if (cwd && chdir(cwd) != 0) _exit(126);
        execvp(argv[0], argv);
        _exit(errno == ENOENT ? 127 : 126);
    }
    close(lfd);
    mcl_status rst = MCL_OK;
    if (out) {
        close(pfd[1]);
        uint8_t buf[8192];
        for (;;) {
            ssize_t r = read(pfd[0], buf, sizeof buf);
            if (r < 0 && errno == EINTR) continue;
            if (r <= 0) break;
            if (rst == MCL_OK) rst = mcl_buf_add(out, buf, (size_t)r); /* keep draining */
        }
        close(pfd[0]);
    }
    int ws = 0;
    pid_t w;
    do {
        w = waitpid(pid, &ws, 0);
    } while (w < 0 && errno == EINTR);
    if (w != pid) {
        mcl_errbuf(err, len, MCL_ERR_IO, "%s: waitpid: %s", argv[0], strerror(errno));
        return -1;
    }
    if (WIFSIGNALED(ws)) {
        mcl_errbuf(err, len, MCL_ERR_IO, "%s was killed by signal %d", argv[0], WTERMSIG(ws));
        return -1;
    }
    if (rst != MCL_OK) {
        mcl_errbuf(err, len, rst, "%s: too much output", argv[0]);
        return -1;
    }
    return WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
}

/* The last lines of a log file, on one line ("" when none). */
static void log_tail(const char *log, char *dst, size_t cap)
{
    dst[0] = 0;
    FILE *f = fopen(log, "rb");
    if (!f) return;
    char buf[600];
    long start = 0;
    if (fseek(f, 0, SEEK_END) == 0) {
        long sz = ftell(f);
        start = sz > (long)sizeof buf - 1 ? sz - (long)sizeof buf + 1 : 0;
    }
    fseek(f, start, SEEK_SET);
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    /* lines joined with " / ", control characters dropped */
    size_t o = 0;
    for (size_t i = 0; i < n && o + 4 < cap; i++) {
        unsigned char c = (unsigned char)buf[i];
        if (c == '\n') {
            if (o && i + 1 < n) {
                memcpy(dst + o, " / ", 3);
                o += 3;
            }
        } else if (c >= 0x20 && c != 0x7F)
            dst[o++] = (char)c;
    }
    dst[o] = 0;
}

static int valid_pkg(const char *p)
{
    if (!p || !*p || !((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9'))) return 0;
    for (; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '.' || *p == '+' ||
              *p == '-'))
            return 0;
    return 1;
}

int mcl_find_deb(const char *dir, const char *pkg, char *deb, size_t deb_cap)
{
    DIR *d = opendir(dir);
    if (!d) return 0;
    size_t k = strlen(pkg);
    char best[1024] = "";
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        const char *nm = e->d_name;
        size_t m = strlen(nm);
        if (m > k + 5 && strncmp(nm, pkg, k) == 0 && nm[k] == '_' && strcmp(nm + m - 4, ".deb") == 0 &&
            m < sizeof best && strcmp(nm, best) > 0)
            snprintf(best, sizeof best, "%s", nm);
    }
    closedir(d);
    if (!best[0]) return 0;
    int r = snprintf(deb, deb_cap, "%s/%s", dir, best);
    return r > 0 && (size_t)r < deb_cap;
}

mcl_status mcl_apt_download(const char *pkg, const char *dir, char *deb, size_t deb_cap,
                            char *err, size_t len)
{
    if (!valid_pkg(pkg))
        return mcl_errbuf(err, len, MCL_ERR_INVALID, "'%s' is not a Debian package name", pkg ? pkg : "");
    char log[4200];
    snprintf(log, sizeof log, "%s/apt-get.log", dir);
    remove(log);
    char *argv[] = {"apt-get", "download", "-q", (char *)pkg, NULL};
    char rerr[512] = "";
    int rc = mcl_run_cmd(argv, dir, NULL, log, rerr, sizeof rerr);
    if (rc == 127)
        return mcl_errbuf(err, len, MCL_ERR_IO,
                          "apt-get download %s: apt-get was not found (the text corpus is built "
                          "from Debian packages: this needs apt; or put the .deb files in a "
                          "directory and pass --debs DIR)",
                          pkg);
    if (rc != 0) {
        char tail[512];
        log_tail(log, tail, sizeof tail);
        if (rc < 0) snprintf(tail, sizeof tail, "%s", rerr);
        return mcl_errbuf(err, len, MCL_ERR_IO,
                          "apt-get download %s failed (exit status %d%s%s): run 'apt-get update' "
                          "(as root) and check that the package exists: apt-cache policy %s",
                          pkg, rc, tail[0] ? ": " : "", tail, pkg);
    }
    if (!mcl_find_deb(dir, pkg, deb, deb_cap))
        return mcl_errbuf(err, len, MCL_ERR_IO,
                          "apt-get download %s succeeded but left no %s_*.deb in %s", pkg, pkg,
                          dir);
    return MCL_OK;
}

static mcl_status dpkg_failed(const char *what, const char *deb, int rc, const char *log,
                              const char *rerr, char *err, size_t len)
{
    char tail[512];
    log_tail(log, tail, sizeof tail);
    if (rc == 127)
        return mcl_errbuf(err, len, MCL_ERR_IO, "dpkg-deb %s %s: dpkg-deb was not found (Debian's dpkg)",
                          what, deb);
    if (rc < 0) snprintf(tail, sizeof tail, "%s", rerr);
    return mcl_errbuf(err, len, MCL_ERR_IO, "dpkg-deb %s %s failed (exit status %d%s%s)", what, deb,
                      rc, tail[0] ? ": " : "", tail);
}

mcl_status mcl_deb_version(const char *deb, char *version, size_t cap, char *err, size_t len)
{
    char log[4200];
    snprintf(log, sizeof log, "%s.log", deb);
    remove(log);
    mcl_buf out = {0};
    char *argv[] = {"dpkg-deb", "-f", (char *)deb, "Version", NULL};
    char rerr[512] = "";
    int rc = mcl_run_cmd(argv, NULL, &out, log, rerr, sizeof rerr);
    if (rc != 0) {
        mcl_buf_free(&out);
        return dpkg_failed("-f", deb, rc, log, rerr, err, len);
    }
    size_t a = 0, b = out.n;
    while (a < b && (out.p[a] == ' ' || out.p[a] == '\n' || out.p[a] == '\t')) a++;
    while (b > a && (out.p[b - 1] == ' ' || out.p[b - 1] == '\n' || out.p[b - 1] == '\t' ||
                     out.p[b - 1] == '\r'))
        b--;
    int ok = b > a && b - a < cap && b - a < 128;
    for (size_t i = a; ok && i < b; i++)
        if (out.p[i] <= ' ' || out.p[i] >= 0x7F) ok = 0;
    if (ok) {
        memcpy(version, out.p + a, b - a);
        version[b - a] = 0;
    }
    mcl_buf_free(&out);
    if (!ok) return mcl_errbuf(err, len, MCL_ERR_FORMAT, "%s: no usable Version field", deb);
    return MCL_OK;
}

mcl_status mcl_deb_extract(const char *deb, const char *root, char *err, size_t len)
{
    char log[4200];
    snprintf(log, sizeof log, "%s.log", deb);
    remove(log);
    char *argv[] = {"dpkg-deb", "-x", (char *)deb, (char *)root, NULL};
    char rerr[512] = "";
    int rc = mcl_run_cmd(argv, NULL, NULL, log, rerr, sizeof rerr);
    if (rc != 0) return dpkg_failed("-x", deb, rc, log, rerr, err, len);
    return MCL_OK;
}

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)ftw;
    if (flag == FTW_DP) return rmdir(path) == 0 ? 0 : -1;
    return unlink(path) == 0 ? 0 : -1;
}

int mcl_rm_tree(const char *path)
{
    struct stat sb;
    if (lstat(path, &sb) != 0) return errno == ENOENT ? 0 : -1;
    return nftw(path, rm_one, 32, FTW_DEPTH | FTW_PHYS);
}
