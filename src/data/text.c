/* text.c — a prepared text corpus: reading, verifying, the parts of a domain and the
 * evaluation stream (text.h). */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include "text.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dataset.h"
#include "prepared.h" /* mcl_sha256_file */
#include "rng.h"
#include "sha256.h"
#include "utf8.h"
#include "util.h"

#define PARTS 3
static const char *const part_names[PARTS] = {"train", "valid", "test"};

typedef struct text_domain {
    char name[MCL_TEXT_MAX_NAME + 1];
    char *source; /* "<pkg> <version>, ..." or "" */
    int64_t part[PARTS];
    uint8_t *bytes; /* train | valid | test, contiguous */
} text_domain;

struct mcl_text_corpus {
    mcl_kv_list meta; /* every line of meta.txt */
    char name[64];
    char path[4096];
    int n;
    text_domain d[MCL_TEXT_MAX_DOMAINS];
};

struct mcl_text_stream {
    uint8_t *bytes;
    int64_t n;
    int n_blocks;
    int64_t *start;  /* n_blocks + 1 */
    int *domain;     /* n_blocks */
    int64_t *offset; /* n_blocks */
    int n_order;
    int order[MCL_TEXT_MAX_DOMAINS];
};

static int valid_domain_name(const char *s, size_t k)
{
    if (k == 0 || k > MCL_TEXT_MAX_NAME) return 0;
    for (size_t i = 0; i < k; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!isalnum(c) && c != '-' && c != '_') return 0;
    }
    return 1;
}

static int valid_dir_name(const char *s)
{
    size_t k = strlen(s);
    if (k == 0 || k > 63 || s[0] == '.') return 0;
    for (size_t i = 0; i < k; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!isalnum(c) && c != '.' && c != '-' && c != '_') return 0;
    }
    return 1;
}

mcl_status mcl_text_dir(const char *data_dir, const char *name, char *out, size_t cap, char *err,
                        size_t len)
{
    if (!out || cap == 0) return mcl_errbuf(err, len, MCL_ERR_NULL, "text corpus: null argument");
    if (!name || !*name) name = MCL_TEXT_DEFAULT_NAME;
    if (!valid_dir_name(name))
        return mcl_errbuf(err, len, MCL_ERR_INVALID,
                          "'%s' is not a corpus name (letters, digits, '.', '_', '-'; at most "
                          "63; not starting with '.')",
                          name);
    if (!data_dir || !*data_dir) data_dir = mcl_data_dir_default();
    if (!data_dir) return mcl_errbuf(err, len, MCL_ERR_INVALID, "%s", MCL_NO_DATA_DIR);
    int r = snprintf(out, cap, "%s/%s", data_dir, name);
    if (r < 0 || (size_t)r + 64 >= cap) /* room for "/<domain>.<part>" */
        return mcl_errbuf(err, len, MCL_ERR_INVALID, "%s/%s: path too long", data_dir, name);
    return MCL_OK;
}

static int join(char *out, size_t cap, const char *dir, const char *file)
{
    int r = snprintf(out, cap, "%s/%s", dir, file);
    return r < 0 || (size_t)r >= cap ? -1 : 0;
}

/* ---- meta.txt ---- */

static mcl_status meta_read(const char *dir, mcl_kv_list *m, char *err, size_t len)
{
    memset(m, 0, sizeof *m);
    char path[4200];
    if (join(path, sizeof path, dir, "meta.txt") != 0)
        return mcl_errbuf(err, len, MCL_ERR_INVALID, "%s: path too long", dir);
    struct stat st;
    if (stat(path, &st) != 0 && errno != ENOENT && errno != ENOTDIR) /* EACCES: not "prepare it" */
        return mcl_errbuf(err, len, MCL_ERR_IO, "%s: cannot read the text corpus there (%s: %s)", dir,
                          path, strerror(errno));
    if (stat(path, &st) != 0)
        return mcl_errbuf(err, len, MCL_ERR_IO,
                          "%s: no text corpus there (%s: %s); prepare it: metacl data prepare "
                          "text (or txt:FILE,... --name NAME) --data-dir DIR",
                          dir, path, strerror(errno));
    char *txt = NULL;
    mcl_status s = mcl_read_text_file(path, 1u << 20, &txt, err, len);
    if (s != MCL_OK) return s;
    s = mcl_kv_parse(txt, path, mcl_kv_list_add, m, err, len);
    free(txt);
    if (s != MCL_OK) {
        mcl_kv_list_free(m);
        return s == MCL_ERR_OOM ? s : MCL_ERR_FORMAT;
    }
    return MCL_OK;
}

int mcl_text_is_corpus(const char *dir)
{
    if (!dir) return 0;
    mcl_kv_list m;
    if (meta_read(dir, &m, NULL, 0) != MCL_OK) return 0;
    const char *k = mcl_kv_list_get(&m, "kind");
    int yes = k && strcmp(k, "text") == 0;
    mcl_kv_list_free(&m);
    return yes;
}

static int parse_size(const char *s, int64_t *v)
{
    return mcl_parse_i64(s, 0, INT64_MAX / 4, v) == 0;
}

/* Fill c's domains from meta.txt. */
static mcl_status corpus_from_meta(mcl_text_corpus *c, const mcl_kv_list *m, const char *mpath,
                                   char *err, size_t len)
{
    const char *fmt = mcl_kv_list_get(m, "format"), *kind = mcl_kv_list_get(m, "kind"),
               *doms = mcl_kv_list_get(m, "domains"), *name = mcl_kv_list_get(m, "name");
    if (!kind || strcmp(kind, "text") != 0)
        return mcl_errbuf(err, len, MCL_ERR_FORMAT, "%s: not a text corpus (no 'kind = text')",
                          mpath);
    if (!fmt || strcmp(fmt, "1") != 0)
        return mcl_errbuf(err, len, MCL_ERR_FORMAT, "%s: format %s is not 1 (prepare it again)",
                          mpath, fmt ? fmt : "(none)");
    if (!doms || !*doms)
        return mcl_errbuf(err, len, MCL_ERR_FORMAT, "%s: no 'domains' line", mpath);
    snprintf(c->name, sizeof c->name, "%s", name ? name : "");
    const char *p = doms;
    while (*p) {
        const char *q = strchr(p, ',');
        size_t k = q ? (size_t)(q - p) : strlen(p);
        if (!valid_domain_name(p, k))
            return mcl_errbuf(err, len, MCL_ERR_FORMAT, "%s: '%.*s' is not a domain name", mpath,
                              (int)(k > 64 ? 64 : k), p);
        if (c->n == MCL_TEXT_MAX_DOMAINS)
            return mcl_errbuf(err, len, MCL_ERR_FORMAT, "%s: more than %d domains", mpath,
                              MCL_TEXT_MAX_DOMAINS);
        text_domain *d = &c->d[c->n];
        memcpy(d->name, p, k);
        d->name[k] = 0;
        for (int j = 0; j < c->n; j++)
            if (strcmp(c->d[j].name, d->name) == 0)
                return mcl_errbuf(err, len, MCL_ERR_FORMAT, "%s: domain %s listed twice", mpath,
                                  d->name);
        c->n++;
        p += k;
        if (*p == ',') p++;
    }
    for (int i = 0; i < c->n; i++) {
        text_domain *d = &c->d[i];
        char key[64];
        for (int s = 0; s < PARTS; s++) {
            snprintf(key, sizeof key, "%s.%s", d->name, part_names[s]);
            const char *v = mcl_kv_list_get(m, key);
            if (!v || !parse_size(v, &d->part[s]))
                return mcl_errbuf(err, len, MCL_ERR_FORMAT, "%s: '%s' is %s", mpath, key,
                                  v ? "not a size" : "missing");
        }
        snprintf(key, sizeof key, "%s.packages", d->name);
        const char *src = mcl_kv_list_get(m, key);
        d->source = strdup(src ? src : "");
        if (!d->source) return mcl_errbuf(err, len, MCL_ERR_OOM, "out of memory");
    }
    return MCL_OK;
}

static mcl_status read_exact(const char *path, uint8_t *dst, int64_t want, char *err, size_t len)
{
    FILE *f = NULL;
    uint64_t size = 0;
    mcl_status s = mcl_fopen_regular(path, &f, &size, err, len);
    if (s != MCL_OK) return s;
    if ((int64_t)size != want) {
        fclose(f);
        return mcl_errbuf(err, len, MCL_ERR_FORMAT,
                          "%s: %llu bytes, meta.txt says %lld (the corpus is damaged; prepare "
                          "it again)",
                          path, (unsigned long long)size, (long long)want);
    }
    size_t got = want ? fread(dst, 1, (size_t)want, f) : 0;
    int bad = ferror(f);
    fclose(f);
    if (bad || got != (size_t)want)
        return mcl_errbuf(err, len, MCL_ERR_IO, "%s: read error", path);
    return MCL_OK;
}

void mcl_text_close(mcl_text_corpus *c)
{
    if (!c) return;
    mcl_kv_list_free(&c->meta);
    for (int i = 0; i < c->n; i++) {
        free(c->d[i].source);
        free(c->d[i].bytes);
    }
    free(c);
}

mcl_status mcl_text_open(const char *dir, unsigned flags, mcl_text_corpus **out, char *err,
                         size_t len)
{
    if (!dir || !out) return mcl_errbuf(err, len, MCL_ERR_NULL, "text corpus: null argument");
    *out = NULL;
    if (strlen(dir) + 64 >= sizeof ((mcl_text_corpus *)0)->path)
        return mcl_errbuf(err, len, MCL_ERR_INVALID, "%s: path too long", dir);
    mcl_text_corpus *c = calloc(1, sizeof *c);
    if (!c) return mcl_errbuf(err, len, MCL_ERR_OOM, "out of memory");
    snprintf(c->path, sizeof c->path, "%s", dir);
    mcl_status s = meta_read(dir, &c->meta, err, len);
    if (s == MCL_OK) {
        char mpath[4200];
        join(mpath, sizeof mpath, dir, "meta.txt");
        s = corpus_from_meta(c, &c->meta, mpath, err, len);
    }
    int64_t total = 0;
    for (int i = 0; i < c->n && s == MCL_OK; i++) {
        text_domain *d = &c->d[i];
        int64_t all = d->part[0] + d->part[1] + d->part[2];
        total += all;
        char what[128];
        snprintf(what, sizeof what, "text corpus domain %s", d->name);
        s = mcl_check_budget((uint64_t)total, what, err, len);
        if (s != MCL_OK) break;
        d->bytes = malloc(all ? (size_t)all : 1);
        if (!d->bytes) {
            s = mcl_errbuf(err, len, MCL_ERR_OOM, "%s: out of memory (%lld bytes)", what,
                           (long long)all);
            break;
        }
        int64_t off = 0;
        for (int p = 0; p < PARTS && s == MCL_OK; p++) {
            char fn[64], path[4200];
            snprintf(fn, sizeof fn, "%s.%s", d->name, part_names[p]);
            join(path, sizeof path, dir, fn);
            s = read_exact(path, d->bytes + off, d->part[p], err, len);
            size_t bad = 0;
            if (s == MCL_OK && !mcl_utf8_valid(d->bytes + off, (size_t)d->part[p], &bad)) {
                int64_t line, col;
                mcl_text_line_col(d->bytes + off, bad, &line, &col);
                s = mcl_errbuf(err, len, MCL_ERR_FORMAT,
                               "%s: not valid UTF-8 at byte %zu (line %lld, column %lld): the "
                               "corpus is damaged; prepare it again",
                               path, bad, (long long)line, (long long)col);
            }
            off += d->part[p];
        }
    }
    if (s == MCL_OK && (flags & MCL_TEXT_VERIFY)) {
        mcl_text_check *ch = NULL;
        int nch = 0;
        s = mcl_text_verify(dir, &ch, &nch, err, len);
        free(ch);
    }
    if (s != MCL_OK) {
        mcl_text_close(c);
        return s;
    }
    *out = c;
    return MCL_OK;
}

int mcl_text_domains(const mcl_text_corpus *c) { return c ? c->n : 0; }

const char *mcl_text_domain_name(const mcl_text_corpus *c, int d)
{
    return c && d >= 0 && d < c->n ? c->d[d].name : NULL;
}

int mcl_text_domain_index(const mcl_text_corpus *c, const char *name)
{
    if (!c || !name) return -1;
    for (int i = 0; i < c->n; i++)
        if (strcmp(c->d[i].name, name) == 0) return i;
    return -1;
}

const char *mcl_text_domain_source(const mcl_text_corpus *c, int d)
{
    return c && d >= 0 && d < c->n ? c->d[d].source : NULL;
}

const char *mcl_text_name(const mcl_text_corpus *c) { return c ? c->name : NULL; }

const char *mcl_text_meta(const mcl_text_corpus *c, const char *key)
{
    return c && key ? mcl_kv_list_get(&c->meta, key) : NULL;
}
const char *mcl_text_path(const mcl_text_corpus *c) { return c ? c->path : NULL; }

/* 0..2 for a part, 3 for "all", -1 otherwise. */
static int part_index(const char *split)
{
    if (!split) return -1;
    if (strcmp(split, "train") == 0) return 0;
    if (strcmp(split, "valid") == 0 || strcmp(split, "val") == 0) return 1;
    if (strcmp(split, "test") == 0) return 2;
    if (strcmp(split, "all") == 0) return 3;
    return -1;
}

mcl_status mcl_text_split(const mcl_text_corpus *c, int domain, const char *split,
                          const uint8_t **bytes, int64_t *n)
{
    if (!c || !bytes || !n) return MCL_ERR_NULL;
    int p = part_index(split);
    if (domain < 0 || domain >= c->n || p < 0) return MCL_ERR_INVALID;
    const text_domain *d = &c->d[domain];
    int64_t off = 0;
    for (int i = 0; i < p && p < PARTS; i++) off += d->part[i]; /* "all" starts at 0 */
    *bytes = d->bytes + off;
    *n = p == 3 ? d->part[0] + d->part[1] + d->part[2] : d->part[p];
    return MCL_OK;
}

/* ---- the evaluation stream ---- */

void mcl_text_stream_free(mcl_text_stream *s)
{
    if (!s) return;
    free(s->bytes);
    free(s->start);
    free(s->domain);
    free(s->offset);
    free(s);
}

mcl_status mcl_text_stream_new(const mcl_text_corpus *c, const char *split, const int *domains,
                               int n_domains, int64_t block_bytes, uint64_t seed,
                               int64_t max_bytes, mcl_text_stream **out, char *err, size_t len)
{
    if (!c || !out) return mcl_errbuf(err, len, MCL_ERR_NULL, "text stream: null argument");
    *out = NULL;
    int p = part_index(split);
    if (p < 0 || p > 2)
        return mcl_errbuf(err, len, MCL_ERR_INVALID,
                          "text stream: split '%s' is not train, valid or test",
                          split ? split : "(null)");
    if (block_bytes < 4)
        return mcl_errbuf(err, len, MCL_ERR_INVALID,
                          "text stream: block_bytes %lld is below 4 (a block must hold a "
                          "character)",
                          (long long)block_bytes);
    if (max_bytes < 0)
        return mcl_errbuf(err, len, MCL_ERR_INVALID, "text stream: max_bytes %lld is negative",
                          (long long)max_bytes);
    if (n_domains < 0 || n_domains > c->n || (n_domains > 0 && !domains))
        return mcl_errbuf(err, len, MCL_ERR_INVALID, "text stream: bad domain list (%d domains)",
                          n_domains);
    int order[MCL_TEXT_MAX_DOMAINS], k = 0;
    if (n_domains == 0)
        for (int i = 0; i < c->n; i++) order[k++] = i;
    else
        for (int i = 0; i < n_domains; i++) {
            int d = domains[i];
            if (d < 0 || d >= c->n)
                return mcl_errbuf(err, len, MCL_ERR_INVALID,
                                  "text stream: domain %d is not in 0..%d", d, c->n - 1);
            for (int j = 0; j < k; j++)
                if (order[j] == d)
                    return mcl_errbuf(err, len, MCL_ERR_INVALID,
                                      "text stream: domain %s listed twice", c->d[d].name);
            order[k++] = d;
        }
    if (k == 0) return mcl_errbuf(err, len, MCL_ERR_INVALID, "text stream: the corpus has no domains");
    mcl_rng r;
    mcl_rng_init(&r, seed, MCL_TEXT_STREAM_RNG);
    mcl_rng_shuffle_int(&r, order, k);
    /* sizes first: the total and the number of blocks */
    const uint8_t *src[MCL_TEXT_MAX_DOMAINS];
    int64_t n_of[MCL_TEXT_MAX_DOMAINS], off[MCL_TEXT_MAX_DOMAINS];
    int64_t total = 0;
    for (int j = 0; j < k; j++) {
        mcl_text_split(c, order[j], part_names[p], &src[j], &n_of[j]);
        off[j] = 0;
        total += n_of[j];
    }
    if (max_bytes > 0 && total > max_bytes) total = max_bytes;
    if (total == 0)
        return mcl_errbuf(err, len, MCL_ERR_INVALID,
                          "text stream: the %s parts of the chosen domains are empty",
                          part_names[p]);
    /* an upper bound on the blocks: per domain ceil(n / (block - 3)) */
    int64_t max_blocks = 0;
    for (int j = 0; j < k; j++) max_blocks += n_of[j] / (block_bytes - 3) + 1;
    if (max_blocks > INT32_MAX / 2)
        return mcl_errbuf(err, len, MCL_ERR_INVALID,
                          "text stream: block_bytes %lld gives too many blocks",
                          (long long)block_bytes);
    mcl_status st = mcl_check_budget((uint64_t)total + (uint64_t)max_blocks * 24, "text stream",
                                     err, len);
    if (st != MCL_OK) return st;
    mcl_text_stream *s = calloc(1, sizeof *s);
    if (!s) return mcl_errbuf(err, len, MCL_ERR_OOM, "out of memory");
    s->bytes = malloc((size_t)total);
    s->start = malloc(sizeof *s->start * (size_t)(max_blocks + 1));
    s->domain = malloc(sizeof *s->domain * (size_t)max_blocks);
    s->offset = malloc(sizeof *s->offset * (size_t)max_blocks);
    if (!s->bytes || !s->start || !s->domain || !s->offset) {
        mcl_text_stream_free(s);
        return mcl_errbuf(err, len, MCL_ERR_OOM, "text stream: out of memory (%lld bytes)",
                          (long long)total);
    }
    s->n_order = k;
    memcpy(s->order, order, sizeof order[0] * (size_t)k);
    int64_t pos = 0;
    int nb = 0, stop = 0;
    while (!stop) {
        int any = 0;
        for (int j = 0; j < k && !stop; j++) {
            if (off[j] >= n_of[j]) continue;
            int64_t take = n_of[j] - off[j];
            if (take > block_bytes) take = block_bytes;
            if (pos + take > total) {
                take = total - pos;
                stop = 1;
            }
            /* end on a character boundary (the part itself ends on one) */
            int64_t end = (int64_t)mcl_utf8_floor(src[j], (size_t)n_of[j], (size_t)(off[j] + take));
            take = end - off[j];
            if (take <= 0) {
                stop = 1;
                break;
            }
            if (nb >= max_blocks) { /* cannot happen: the bound above holds */
                stop = 1;
                break;
            }
            memcpy(s->bytes + pos, src[j] + off[j], (size_t)take);
            s->start[nb] = pos;
            s->domain[nb] = order[j];
            s->offset[nb] = off[j];
            nb++;
            pos += take;
            off[j] += take;
            any = 1;
            if (pos >= total) stop = 1;
        }
        if (!any) break;
    }
    s->n = pos;
    s->n_blocks = nb;
    s->start[nb] = pos;
    *out = s;
    return MCL_OK;
}

const uint8_t *mcl_text_stream_bytes(const mcl_text_stream *s) { return s ? s->bytes : NULL; }
int64_t mcl_text_stream_len(const mcl_text_stream *s) { return s ? s->n : 0; }
int mcl_text_stream_blocks(const mcl_text_stream *s) { return s ? s->n_blocks : 0; }

int64_t mcl_text_stream_block_start(const mcl_text_stream *s, int i)
{
    return s && i >= 0 && i <= s->n_blocks ? s->start[i] : -1;
}

int mcl_text_stream_block_domain(const mcl_text_stream *s, int i)
{
    return s && i >= 0 && i < s->n_blocks ? s->domain[i] : -1;
}

int64_t mcl_text_stream_block_offset(const mcl_text_stream *s, int i)
{
    return s && i >= 0 && i < s->n_blocks ? s->offset[i] : -1;
}

int mcl_text_stream_block_at(const mcl_text_stream *s, int64_t pos)
{
    if (!s || pos < 0 || pos >= s->n) return -1;
    int lo = 0, hi = s->n_blocks - 1;
    while (lo < hi) { /* the last block whose start <= pos */
        int mid = lo + (hi - lo + 1) / 2;
        if (s->start[mid] <= pos) lo = mid;
        else hi = mid - 1;
    }
    return lo;
}

int mcl_text_stream_order(const mcl_text_stream *s, int *order, int cap)
{
    if (!s) return 0;
    for (int i = 0; i < s->n_order && i < cap && order; i++) order[i] = s->order[i];
    return s->n_order;
}

/* ---- SHA256SUMS ---- */

static int is_hex64(const char *s)
{
    for (int i = 0; i < 64; i++)
        if (!isxdigit((unsigned char)s[i])) return 0;
    return 1;
}

/* A file name SHA256SUMS may list: "name" or "copyright/name", each part a plain name. */
static int valid_listed(const char *f)
{
    size_t k = strlen(f);
    if (k == 0 || k >= sizeof ((mcl_text_check *)0)->file) return 0;
    const char *slash = strchr(f, '/');
    if (slash && (strchr(slash + 1, '/') || strncmp(f, "copyright/", 10) != 0)) return 0;
    const char *base = slash ? slash + 1 : f;
    if (!*base || base[0] == '.') return 0;
    for (const char *p = base; *p; p++) {
        unsigned char c = (unsigned char)*p;
        if (!isalnum(c) && c != '.' && c != '-' && c != '_' && c != '+') return 0;
    }
    return 1;
}

mcl_status mcl_text_verify(const char *dir, mcl_text_check **checks, int *n, char *err,
                           size_t len)
{
    if (!dir || !checks || !n) return mcl_errbuf(err, len, MCL_ERR_NULL, "verify: null argument");
    *checks = NULL;
    *n = 0;
    char path[4200];
    if (join(path, sizeof path, dir, "SHA256SUMS") != 0)
        return mcl_errbuf(err, len, MCL_ERR_INVALID, "%s: path too long", dir);
    char *txt = NULL;
    mcl_status st = mcl_read_text_file(path, 1u << 20, &txt, err, len);
    if (st != MCL_OK) return st == MCL_ERR_INVALID ? MCL_ERR_FORMAT : st;
    int cap = 0, cnt = 0, lineno = 0;
    mcl_text_check *e = NULL;
    char *save = NULL;
    for (char *line = strtok_r(txt, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        lineno++;
        size_t k = strlen(line);
        if (k && line[k - 1] == '\r') line[--k] = 0;
        if (!k) continue;
        if (k < 67 || !is_hex64(line) || line[64] != ' ' || (line[65] != ' ' && line[65] != '*')) {
            st = mcl_errbuf(err, len, MCL_ERR_FORMAT, "%s:%d: expected '<64 hex digits>  <file>'",
                            path, lineno);
            break;
        }
        const char *file = line + 66;
        if (!valid_listed(file)) {
            st = mcl_errbuf(err, len, MCL_ERR_FORMAT, "%s:%d: '%s' is not a file of the corpus",
                            path, lineno, file);
            break;
        }
        if (cnt == cap) {
            int nc = cap ? cap * 2 : 64;
            mcl_text_check *ne = nc <= 100000 ? realloc(e, sizeof *e * (size_t)nc) : NULL;
            if (!ne) {
                st = mcl_errbuf(err, len, MCL_ERR_OOM, "%s: out of memory", path);
                break;
            }
            e = ne;
            cap = nc;
        }
        mcl_text_check *c = &e[cnt++];
        memset(c, 0, sizeof *c);
        snprintf(c->file, sizeof c->file, "%s", file);
        for (int i = 0; i < 64; i++) c->want[i] = (char)tolower((unsigned char)line[i]);
        c->size = -1;
    }
    free(txt);
    if (st != MCL_OK) {
        free(e);
        return st;
    }
    char first[1024] = "";
    for (int i = 0; i < cnt; i++) {
        char fp[4200], ferr[512];
        join(fp, sizeof fp, dir, e[i].file);
        struct stat sb;
        if (mcl_sha256_file(fp, e[i].got, ferr, sizeof ferr) != MCL_OK) {
            e[i].got[0] = 0;
            if (!first[0]) (void)mcl_errbuf(first, sizeof first, MCL_OK, "%s", ferr);
            continue;
        }
        if (stat(fp, &sb) == 0) e[i].size = (int64_t)sb.st_size;
        e[i].ok = strcmp(e[i].got, e[i].want) == 0;
        if (!e[i].ok && !first[0])
            (void)mcl_errbuf(first, sizeof first, MCL_OK,
                     "%s: SHA-256 mismatch: %.16s... now, SHA256SUMS says %.16s... (the file "
                     "changed since it was prepared)",
                     fp, e[i].got, e[i].want);
    }
    /* every part file of every domain, and meta.txt, must be listed */
    mcl_kv_list m;
    char merr[512] = "";
    if (!first[0] && meta_read(dir, &m, merr, sizeof merr) == MCL_OK) {
        mcl_text_corpus *c = calloc(1, sizeof *c);
        char mpath[4200];
        join(mpath, sizeof mpath, dir, "meta.txt");
        if (!c) (void)mcl_errbuf(first, sizeof first, MCL_OK, "out of memory");
        else if (corpus_from_meta(c, &m, mpath, merr, sizeof merr) != MCL_OK)
            (void)mcl_errbuf(first, sizeof first, MCL_OK, "%s", merr);
        int has_meta = 0;
        for (int i = 0; i < cnt; i++) has_meta |= strcmp(e[i].file, "meta.txt") == 0;
        if (!first[0] && !has_meta) (void)mcl_errbuf(first, sizeof first, MCL_OK, "%s: does not list meta.txt", path);
        for (int d = 0; c && d < c->n && !first[0]; d++)
            for (int p = 0; p < PARTS && !first[0]; p++) {
                char fn[64];
                snprintf(fn, sizeof fn, "%s.%s", c->d[d].name, part_names[p]);
                int found = 0;
                for (int i = 0; i < cnt; i++) found |= strcmp(e[i].file, fn) == 0;
                if (!found) (void)mcl_errbuf(first, sizeof first, MCL_OK, "%s: does not list %s", path, fn);
            }
        mcl_text_close(c);
        mcl_kv_list_free(&m);
    } else if (!first[0])
        (void)mcl_errbuf(first, sizeof first, MCL_OK, "%s", merr);
    *checks = e;
    *n = cnt;
    if (first[0]) return mcl_errbuf(err, len, MCL_ERR_FORMAT, "%s", first);
    return MCL_OK;
}
