/* text_extract.c — whole files (gzip or plain) and sorted directory trees for the text
 * corpus (textprep.h). */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "textprep.h"
#include "util.h"

mcl_status mcl_text_read_file(const char *path, mcl_buf *out, char *err, size_t len)
{
    int fd = -1;
    mcl_status st = mcl_open_regular(path, O_CLOEXEC, &fd, NULL, err, len);
    if (st != MCL_OK) return st;
    gzFile g = gzdopen(fd, "rb");
    if (!g) {
        close(fd);
        return mcl_errbuf(err, len, MCL_ERR_OOM, "%s: cannot open (out of memory)", path);
    }
    gzbuffer(g, 1u << 17);
    enum { CHUNK = 1 << 20 };
    uint8_t *tmp = malloc(CHUNK);
    if (!tmp) {
        gzclose(g);
        return mcl_errbuf(err, len, MCL_ERR_OOM, "out of memory");
    }
    size_t total = 0;
    for (;;) {
        int r = gzread(g, tmp, CHUNK);
        if (r < 0) {
            int zerr = 0;
            const char *msg = gzerror(g, &zerr);
            st = mcl_errbuf(err, len, zerr == Z_MEM_ERROR ? MCL_ERR_OOM : MCL_ERR_FORMAT,
                            "%s: %s after %zu bytes (corrupt gzip data?)", path,
                            zerr == Z_ERRNO ? strerror(errno) : msg, total);
            break;
        }
        if (r == 0) {
            /* gzread returns 0 at the end and on a stream cut short: ask which */
            int zerr = 0;
            const char *msg = gzerror(g, &zerr);
            if (zerr != Z_OK && zerr != Z_STREAM_END)
                st = mcl_errbuf(err, len, MCL_ERR_FORMAT, "%s: %s after %zu bytes", path, msg,
                                total);
            break;
        }
        total += (size_t)r;
        st = mcl_buf_add(out, tmp, (size_t)r);
        if (st == MCL_ERR_INVALID) {
            st = mcl_errbuf(err, len, st, "%s: more than %zu MiB of text: refused", path,
                            MCL_TEXT_MAX_SOURCE >> 20);
            break;
        }
        if (st != MCL_OK) {
            st = mcl_errbuf(err, len, st, "%s: out of memory", path);
            break;
        }
    }
    free(tmp);
    gzclose(g);
    return st;
}

typedef struct plist {
    char **v;
    int n, cap;
} plist;

static int plist_add(plist *l, const char *s)
{
    if (l->n == l->cap) {
        int nc = l->cap ? l->cap * 2 : 256;
        if (nc > 1 << 22) return -1;
        char **nv = realloc(l->v, sizeof *nv * (size_t)nc);
        if (!nv) return -1;
        l->v = nv;
        l->cap = nc;
    }
    l->v[l->n] = strdup(s);
    if (!l->v[l->n]) return -1;
    l->n++;
    return 0;
}

void mcl_text_free_paths(char **paths, int n)
{
    for (int i = 0; i < n; i++) free(paths[i]);
    free(paths);
}

static int ends_with(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && strcmp(s + a - b, suf) == 0;
}

static int in_list(const char *s, const char *const *list)
{
    for (int i = 0; list && list[i]; i++)
        if (strcmp(s, list[i]) == 0) return 1;
    return 0;
}

static int ends_with_any(const char *s, const char *const *list)
{
    for (int i = 0; list && list[i]; i++)
        if (ends_with(s, list[i])) return 1;
    return 0;
}

/* Walk base/rel (rel "" at the top), adding relative file paths. */
static mcl_status walk(const char *base, const char *rel, int depth, const char *suffix,
                       const char *const *skip_dirs, const char *const *skip_suffixes,
                       plist *out, char *err, size_t len)
{
    if (depth > 64) return mcl_errbuf(err, len, MCL_ERR_FORMAT, "%s/%s: directories nested too deep", base, rel);
    char dir[4096];
    if (snprintf(dir, sizeof dir, "%s%s%s", base, *rel ? "/" : "", rel) >= (int)sizeof dir)
        return mcl_errbuf(err, len, MCL_ERR_INVALID, "%s/%s: path too long", base, rel);
    DIR *d = opendir(dir);
    if (!d) return mcl_errbuf(err, len, MCL_ERR_IO, "%s: %s", dir, strerror(errno));
    mcl_status st = MCL_OK;
    struct dirent *e;
    while (st == MCL_OK && (e = readdir(d)) != NULL) {
        const char *nm = e->d_name;
        if (strcmp(nm, ".") == 0 || strcmp(nm, "..") == 0) continue;
        char r2[4096], full[4096];
        if (snprintf(r2, sizeof r2, "%s%s%s", rel, *rel ? "/" : "", nm) >= (int)sizeof r2 ||
            snprintf(full, sizeof full, "%s/%s", base, r2) >= (int)sizeof full) {
            st = mcl_errbuf(err, len, MCL_ERR_INVALID, "%s/%s: path too long", dir, nm);
            break;
        }
        struct stat sb;
        if (lstat(full, &sb) != 0) {
            st = mcl_errbuf(err, len, MCL_ERR_IO, "%s: %s", full, strerror(errno));
            break;
        }
        if (S_ISDIR(sb.st_mode)) {
            if (!in_list(nm, skip_dirs))
                st = walk(base, r2, depth + 1, suffix, skip_dirs, skip_suffixes, out, err, len);
        } else if (S_ISREG(sb.st_mode)) {
            if ((!suffix || ends_with(nm, suffix)) && !ends_with_any(nm, skip_suffixes) &&
                plist_add(out, r2) != 0)
                st = mcl_errbuf(err, len, MCL_ERR_OOM, "out of memory listing %s", dir);
        } /* symbolic links and the rest: not followed, not read */
    }
    closedir(d);
    return st;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

mcl_status mcl_text_list_tree(const char *root, const char *sub, const char *suffix,
                              const char *const *skip_dirs, const char *const *skip_suffixes,
                              char ***paths, int *n, char *err, size_t len)
{
    *paths = NULL;
    *n = 0;
    char base[4096];
    if (snprintf(base, sizeof base, "%s/%s", root, sub) >= (int)sizeof base)
        return mcl_errbuf(err, len, MCL_ERR_INVALID, "%s/%s: path too long", root, sub);
    struct stat sb;
    if (lstat(base, &sb) != 0)
        return mcl_errbuf(err, len, MCL_ERR_FORMAT, "%s: %s", base, strerror(errno));
    if (!S_ISDIR(sb.st_mode))
        return mcl_errbuf(err, len, MCL_ERR_FORMAT, "%s: not a directory", base);
    plist l = {0};
    mcl_status st = walk(base, "", 0, suffix, skip_dirs, skip_suffixes, &l, err, len);
    if (st != MCL_OK) {
        mcl_text_free_paths(l.v, l.n);
        return st;
    }
    qsort(l.v, (size_t)l.n, sizeof *l.v, cmp_str);
    /* relative -> full paths */
    for (int i = 0; i < l.n; i++) {
        size_t k = strlen(base) + 1 + strlen(l.v[i]) + 1;
        char *f = malloc(k);
        if (!f) {
            mcl_text_free_paths(l.v, l.n);
            return mcl_errbuf(err, len, MCL_ERR_OOM, "out of memory");
        }
        snprintf(f, k, "%s/%s", base, l.v[i]);
        free(l.v[i]);
        l.v[i] = f;
    }
    *paths = l.v;
    *n = l.n;
    return MCL_OK;
}
