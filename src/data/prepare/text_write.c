/* text_write.c — write a text corpus directory (textprep.h, text.h): every file fsync'd in a
 * fresh directory, which then replaces the old corpus by rename. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "dataset.h"
#include "sha256.h"
#include "textprep.h"
#include "util.h"

static const char *const part_names[3] = {"train", "valid", "test"};

typedef struct tbuf {
    char *p;
    size_t n, cap;
    int oom;
} tbuf;

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void tb_printf(tbuf *b, const char *fmt, ...)
{
    if (b->oom) return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        size_t room = b->cap - b->n;
        int r = vsnprintf(b->p ? b->p + b->n : NULL, room, fmt, ap);
        va_end(ap);
        if (r < 0) {
            b->oom = 1;
            return;
        }
        if ((size_t)r < room) {
            b->n += (size_t)r;
            return;
        }
        size_t nc = b->cap ? b->cap * 2 : 4096;
        while (nc < b->n + (size_t)r + 1) nc *= 2;
        char *np = realloc(b->p, nc);
        if (!np) {
            b->oom = 1;
            return;
        }
        b->p = np;
        b->cap = nc;
    }
}

/* A value for one meta.txt line: control characters become spaces. */
static void clean_value(char *dst, size_t cap, const char *s)
{
    size_t o = 0;
    for (; *s && o + 1 < cap; s++) dst[o++] = (unsigned char)*s < 0x20 || *s == 0x7F ? ' ' : *s;
    dst[o] = 0;
}

static mcl_status put_file(const char *dir, const char *name, const uint8_t *p, size_t n,
                           tbuf *sums, char *err, size_t len)
{
    char path[4300];
    if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path)
        return mcl_errbuf(err, len, MCL_ERR_INVALID, "%s/%s: path too long", dir, name);
    mcl_status st = mcl_write_file_atomic(path, n ? (const void *)p : "", n, err, len);
    if (st != MCL_OK) return st;
    char hex[65];
    mcl_sha256_buf_hex(p, n, hex);
    tb_printf(sums, "%s  %s\n", hex, name);
    return MCL_OK;
}

/* The PID in a work directory's name "<prefix><pid>.<random>" (0 when there is none). */
static long name_pid(const char *rest)
{
    char *end = NULL;
    long pid = strtol(rest, &end, 10);
    return end != rest && end && *end == '.' && pid > 0 ? pid : 0;
}

static int pid_alive(long pid) { return kill((pid_t)pid, 0) == 0 || errno == EPERM; }

void mcl_text_sweep(const char *data_dir)
{
    DIR *d = opendir(data_dir);
    if (!d) return;
    struct dirent *e;
    const long self = (long)getpid();
    while ((e = readdir(d)) != NULL) {
        const char *n = e->d_name, *rest = NULL;
        int old = 0;
        if (n[0] != '.') continue;
        if (!strncmp(n, ".text-prepare.", 14)) {
            rest = n + 14;
        } else if ((rest = strstr(n, ".new.")) != NULL) {
            rest += 5;
        } else if ((rest = strstr(n, ".old.")) != NULL) {
            rest += 5;
            old = 1;
        } else {
            continue;
        }
        char path[4400];
        if (snprintf(path, sizeof path, "%s/%s", data_dir, n) >= (int)sizeof path) continue;
        struct stat sb;
        if (lstat(path, &sb) != 0 || !S_ISDIR(sb.st_mode)) continue;
        const long pid = name_pid(rest);
        if (pid == self) continue;
        if (pid > 0 ? pid_alive(pid) : time(NULL) - sb.st_mtime < 24 * 3600)
            continue; /* a run still going; a name without a PID (an older metacl): a day */
        if (old) { /* the previous corpus, moved aside: back in place when none replaced it */
            size_t bl = (size_t)(rest - 5 - (n + 1));
            char final[4400];
            if (snprintf(final, sizeof final, "%s/%.*s", data_dir, (int)bl, n + 1) < (int)sizeof final &&
                lstat(final, &sb) != 0 && errno == ENOENT && rename(path, final) == 0)
                continue;
        }
        mcl_rm_tree(path);
    }
    closedir(d);
}

mcl_status mcl_text_write(const char *data_dir, const char *name, const mcl_text_out_domain *d,
                          int n_domains, const mcl_text_out_file *files, int n_files,
                          const char *extra_meta, char *err, size_t len)
{
    if (!data_dir || !*data_dir) data_dir = mcl_data_dir_default();
    char final[4096];
    mcl_status st = mcl_text_dir(data_dir, name, final, sizeof final, err, len);
    if (st != MCL_OK) return st;
    if (n_domains < 1 || n_domains > MCL_TEXT_MAX_DOMAINS)
        return mcl_errbuf(err, len, MCL_ERR_INVALID, "a corpus has 1 to %d domains, not %d",
                          MCL_TEXT_MAX_DOMAINS, n_domains);
    struct stat sb;
    if (lstat(final, &sb) == 0 && !S_ISDIR(sb.st_mode))
        return mcl_errbuf(err, len, MCL_ERR_IO, "%s exists and is not a directory", final);
    st = mcl_mkdir_p(data_dir, err, len);
    if (st != MCL_OK) return st;
    const char *base = strrchr(final, '/');
    base = base ? base + 1 : final;
    mcl_text_sweep(data_dir);
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s/.%s.new.%ld.XXXXXX", data_dir, base, (long)getpid());
    if (!mkdtemp(tmp))
        return mcl_errbuf(err, len, MCL_ERR_IO, "cannot create a directory in %s: %s", data_dir,
                          strerror(errno));
    mcl_tmpdir_guard(tmp); /* a signal removes it (mcl_tmpdir_guard_signals) */
#ifdef MCL_TEST_HOOKS
    /* test hook (tests/test-text-cleanup.sh): wait here, the directory made, for a signal */
    if (getenv("METACL_TEST_PREPARE_PAUSE")) {
        fprintf(stderr, "test hook: paused in %s\n", tmp);
        for (int i = 0; i < 30; i++) sleep(1);
    }
#endif
    /* mkdtemp makes it private; a corpus is as readable as the other prepared sets */
    mode_t um = umask(0);
    umask(um);
    chmod(tmp, 0755 & ~um);
    tbuf sums = {0}, meta = {0};
    for (int i = 0; i < n_domains && st == MCL_OK; i++) {
        const mcl_text_out_domain *x = &d[i];
        size_t a[4] = {0, x->cut[0], x->cut[1], x->n};
        if (!(a[1] <= a[2] && a[2] <= a[3]))
            st = mcl_errbuf(err, len, MCL_ERR_INVALID, "domain %s: bad split points", x->name);
        for (int p = 0; p < 3 && st == MCL_OK; p++) {
            char fn[64];
            snprintf(fn, sizeof fn, "%s.%s", x->name, part_names[p]);
            st = put_file(tmp, fn, x->bytes + a[p], a[p + 1] - a[p], &sums, err, len);
        }
    }
    if (st == MCL_OK && n_files > 0) {
        char cdir[4300];
        snprintf(cdir, sizeof cdir, "%s/copyright", tmp);
        if (mkdir(cdir, 0755) != 0)
            st = mcl_errbuf(err, len, MCL_ERR_IO, "%s: %s", cdir, strerror(errno));
    }
    for (int i = 0; i < n_files && st == MCL_OK; i++)
        st = put_file(tmp, files[i].name, files[i].bytes, files[i].n, &sums, err, len);
    if (st == MCL_OK) {
        tb_printf(&meta, "# a metacl text corpus (doc/data.md, src/data/text.h)\n");
        tb_printf(&meta, "format = 1\nkind = text\nname = %s\n", base);
        tb_printf(&meta, "domains = ");
        for (int i = 0; i < n_domains; i++) tb_printf(&meta, "%s%s", i ? "," : "", d[i].name);
        tb_printf(&meta, "\nsplit = train, valid, test: the first 90 %%, the next 5 %%, the last "
                         "5 %% of each domain's bytes, cut at line starts\n");
        if (extra_meta) tb_printf(&meta, "%s", extra_meta);
        for (int i = 0; i < n_domains; i++) {
            const mcl_text_out_domain *x = &d[i];
            char v[600];
            tb_printf(&meta, "%s.bytes = %zu\n", x->name, x->n);
            tb_printf(&meta, "%s.train = %zu\n%s.valid = %zu\n%s.test = %zu\n", x->name,
                      x->cut[0], x->name, x->cut[1] - x->cut[0], x->name, x->n - x->cut[1]);
            tb_printf(&meta, "%s.source_bytes = %lld\n", x->name, (long long)x->source_bytes);
            tb_printf(&meta, "%s.repaired_bytes = %lld\n", x->name, (long long)x->repaired);
            clean_value(v, sizeof v, x->packages);
            tb_printf(&meta, "%s.packages = %s\n", x->name, v);
            clean_value(v, sizeof v, x->about);
            if (v[0]) tb_printf(&meta, "%s.about = %s\n", x->name, v);
        }
        if (meta.oom) st = mcl_errbuf(err, len, MCL_ERR_OOM, "out of memory");
    }
    if (st == MCL_OK) st = put_file(tmp, "meta.txt", (const uint8_t *)meta.p, meta.n, &sums, err, len);
    if (st == MCL_OK && sums.oom) st = mcl_errbuf(err, len, MCL_ERR_OOM, "out of memory");
    if (st == MCL_OK) {
        char path[4300];
        snprintf(path, sizeof path, "%s/SHA256SUMS", tmp);
        st = mcl_write_file_atomic(path, sums.p, sums.n, err, len);
    }
    free(sums.p);
    free(meta.p);
    /* the swap: the old corpus aside, the new one in place, the old one removed */
    char old[4200] = "";
    if (st == MCL_OK && lstat(final, &sb) == 0) {
        snprintf(old, sizeof old, "%s/.%s.old.%ld.XXXXXX", data_dir, base, (long)getpid());
        int made = mkdtemp(old) != NULL;
        if (!made || rename(final, old) != 0) {
            st = mcl_errbuf(err, len, MCL_ERR_IO, "cannot move the old %s aside: %s", final,
                            strerror(errno));
            if (made) rmdir(old);
            old[0] = 0;
        }
    }
    if (st == MCL_OK && rename(tmp, final) != 0) {
        st = mcl_errbuf(err, len, MCL_ERR_IO, "cannot rename %s to %s: %s", tmp, final,
                        strerror(errno));
        if (old[0] && rename(old, final) == 0) old[0] = 0; /* put the old one back */
    }
    mcl_tmpdir_unguard(tmp); /* removed below, or now the corpus */
    if (st != MCL_OK) {
        mcl_rm_tree(tmp);
        return st;
    }
    mcl_fsync_parent_dir(final);
    if (old[0]) mcl_rm_tree(old);
    return MCL_OK;
}
