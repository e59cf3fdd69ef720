/* strokes.c — stroke-based character sets: sources, parsers, class splits, preparation.
 *
 * Sources (see doc/data.md):
 *   hanzi    npm hanzi-writer-data@2.0.1, `<data_dir>/hanzi-writer-data-2.0.1.tgz` (fetched
 *            with `npm pack` when missing). Each `package/<char>.json` holds "medians": one
 *            polyline per stroke in a 1024-unit box with y UP (image y = (900 - y) / 1024).
 *            The package's licence (package/ARPHICPL.TXT, Arphic Public License) is copied to
 *            `<data_dir>/hanzi/LICENSE-ARPHIC.txt`.
 *   kanji    Debian python3-kanjidraw, /usr/lib/python3/dist-packages/kanjidraw/data.json:
 *            {"<stroke count>": {"<char>": [[x1, y1, x2, y2], ...]}}, 0..255, y down; every
 *            stroke is one straight segment. CC-BY-SA-3.0.
 *   hershey  Debian hershey-fonts-data, the .jhf files in /usr/share/hershey-fonts, read in
 *            file-name order; empty glyphs are dropped and glyphs that are identical up to a
 *            translation are kept once (the first occurrence names the class).
 *
 * Points are stored in the unit square, y down (hanzi: x/1024, (900-y)/1024; kanji: v/256;
 * hershey: v/128 + 1/2 with v = char - 'R'). The renderer normalizes each glyph's box anyway.
 *
 * Class order: hanzi and kanji by the UTF-8 bytes of the character (= code point order);
 * hershey in file-name order, then line order. Class id = position in that order.
 *
 * Class split (fixed, documented in doc/data.md): b = FNV-1a-64(key) mod 100, the key being
 *   hanzi, kanji: the UTF-8 bytes of the character;
 *   hershey:      the glyph's shape moved to its box corner, written as .jhf coordinate
 *                 characters: for every stroke, " R" between strokes, then per point
 *                 the two bytes 'R' + (x - min x), 'R' + (y - min y)  (y down, integer units).
 * b < 70 → meta-train, 70 <= b < 80 → meta-validation, b >= 80 → meta-test.
 * (FNV-1a-64: h = 14695981039346656037; for each byte h = (h ^ byte) * 1099511628211, mod 2^64.)
 * The rule depends only on the character/shape, so a character present in both hanzi and
 * kanji falls in the same split in both sets, and adding or removing other classes never
 * moves a class to another split.
 *
 * Parsers are strict: every malformed input gives MCL_ERR_FORMAT with "file:line" (or the
 * archive offset / JSON member) in err; none of them crashes on any input (tests/fuzz/).
 * The tar reader (ustar, what `npm pack` writes) is the one hand-written archive parser.
 */
#define _POSIX_C_SOURCE 200809L
#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include "dataset_io.h"
#include "prepared.h"
#include "strokes.h"

/* ---- from-memory entry points (tests, fuzzing); to be moved into strokes.h ----------- */
typedef mcl_status (*mcl_tar_file_fn)(void *user, const char *name, const uint8_t *data,
                                      size_t size, char *err, size_t len);
mcl_split mcl_stroke_split_of(const void *key, size_t len);
mcl_status mcl_jhf_parse_buffer(const char *buf, size_t n, const char *fname, mcl_strokeset **out,
                                char *err, size_t len);
mcl_status mcl_glyph_from_json(const char *json, size_t n, const char *format, mcl_glyph *g,
                               char *err, size_t len);
void mcl_glyph_clear(mcl_glyph *g);
mcl_status mcl_kanji_parse_buffer(const char *buf, size_t n, int max_strokes, mcl_strokeset **out,
                                  char *err, size_t len);
mcl_status mcl_tar_parse_buffer(const uint8_t *buf, size_t n, mcl_tar_file_fn fn, void *user,
                                char *err, size_t len);
/* ------------------------------------------------------------------------------------ */

#define HANZI_PKG "hanzi-writer-data@2.0.1"
#define HANZI_TGZ "hanzi-writer-data-2.0.1.tgz"
#define HANZI_LICENCE_MEMBER "package/ARPHICPL.TXT"
#define KANJI_JSON "/usr/lib/python3/dist-packages/kanjidraw/data.json"
#define HERSHEY_DIR "/usr/share/hershey-fonts"
#define HERSHEY_COPYRIGHT "/usr/share/doc/hershey-fonts-data/copyright"

#define MAX_FILE_BYTES (64u << 20) /* largest source file we read (kanji json is 1.7 MB) */
#define MAX_TAR_ENTRY (64u << 20)  /* largest tar member we accept                        */
#define MAX_STROKES 4096           /* per glyph                                           */
#define MAX_POINTS (1 << 20)       /* per glyph                                           */
#define MAX_COORD 1.0e4            /* |raw coordinate| in JSON sources                    */

#if defined(__GNUC__)
#define MCL_FMT(f, a) __attribute__((format(printf, f, a)))
#else
#define MCL_FMT(f, a)
#endif

/* Prefix err with "what: " (keeps the original message). */
static mcl_status prefix_err(char *err, size_t len, mcl_status s, const char *what)
{
    if (!err || !len) return s;
    char tmp[512];
    snprintf(tmp, sizeof tmp, "%s", err);
    snprintf(err, len, "%s: %s", what, tmp);
    return s;
}

/* ---------------------------------------------------------------------------------------
 * Splits
 * ------------------------------------------------------------------------------------- */
static uint64_t fnv1a64(const void *p, size_t n)
{
    const unsigned char *b = p;
    uint64_t h = 14695981039346656037ull;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 1099511628211ull;
    }
    return h;
}

mcl_split mcl_stroke_split_of(const void *key, size_t len)
{
    unsigned b = (unsigned)(fnv1a64(key, len) % 100u);
    return b < 70 ? MCL_SPLIT_TRAIN : b < 80 ? MCL_SPLIT_VAL : MCL_SPLIT_TEST;
}

/* ---------------------------------------------------------------------------------------
 * Glyph and set builders
 * ------------------------------------------------------------------------------------- */
typedef struct gbuild {
    float *pts;
    int np, cap_p; /* points */
    int *ends;
    int ns, cap_s; /* strokes (end offsets) */
    int cur_start; /* first point of the open stroke */
} gbuild;

static void gb_free(gbuild *b)
{
    free(b->pts);
    free(b->ends);
    memset(b, 0, sizeof *b);
}

static int gb_point(gbuild *b, float x, float y)
{
    if (b->np >= MAX_POINTS) return -1;
    if (b->np == b->cap_p) {
        int nc = b->cap_p ? 2 * b->cap_p : 64;
        float *p = realloc(b->pts, (size_t)nc * 2 * sizeof *p);
        if (!p) return -2;
        b->pts = p;
        b->cap_p = nc;
    }
    b->pts[2 * b->np] = x;
    b->pts[2 * b->np + 1] = y;
    b->np++;
    return 0;
}

/* Close the open stroke (nothing when it has no points). */
static int gb_end_stroke(gbuild *b)
{
    if (b->np == b->cur_start) return 0;
    if (b->ns >= MAX_STROKES) return -1;
    if (b->ns == b->cap_s) {
        int nc = b->cap_s ? 2 * b->cap_s : 16;
        int *e = realloc(b->ends, (size_t)nc * sizeof *e);
        if (!e) return -2;
        b->ends = e;
        b->cap_s = nc;
    }
    b->ends[b->ns++] = b->np;
    b->cur_start = b->np;
    return 0;
}

/* Move the builder's content into g (text and split untouched). 0 or -2 (OOM). */
static int gb_finish(gbuild *b, mcl_glyph *g)
{
    int *ss = malloc((size_t)(b->ns + 1) * sizeof *ss);
    float *pts = malloc((size_t)(b->np > 0 ? b->np : 1) * 2 * sizeof *pts);
    if (!ss || !pts) {
        free(ss);
        free(pts);
        return -2;
    }
    ss[0] = 0;
    for (int i = 0; i < b->ns; i++) ss[i + 1] = b->ends[i];
    if (b->np) memcpy(pts, b->pts, (size_t)b->np * 2 * sizeof *pts);
    g->n_strokes = b->ns;
    g->stroke_start = ss;
    g->pts = pts;
    return 0;
}

void mcl_glyph_clear(mcl_glyph *g)
{
    if (!g) return;
    free(g->stroke_start);
    free(g->pts);
    memset(g, 0, sizeof *g);
}

static mcl_status set_new(const char *name, mcl_strokeset **out)
{
    mcl_strokeset *s = calloc(1, sizeof *s);
    if (!s) return MCL_ERR_OOM;
    snprintf(s->name, sizeof s->name, "%s", name);
    *out = s;
    return MCL_OK;
}

/* Append *g (ownership moves; *g is zeroed). cap tracks the allocation. */
static mcl_status set_push(mcl_strokeset *s, int *cap, mcl_glyph *g)
{
    if (s->n == *cap) {
        int nc = *cap ? 2 * *cap : 256;
        mcl_glyph *a = realloc(s->glyphs, (size_t)nc * sizeof *a);
        if (!a) return MCL_ERR_OOM;
        s->glyphs = a;
        *cap = nc;
    }
    s->glyphs[s->n++] = *g;
    memset(g, 0, sizeof *g);
    return MCL_OK;
}

void mcl_strokeset_free(mcl_strokeset *s)
{
    if (!s) return;
    for (int i = 0; i < s->n; i++) mcl_glyph_clear(&s->glyphs[i]);
    free(s->glyphs);
    free(s);
}

static int cmp_glyph_text(const void *a, const void *b)
{
    return strcmp(((const mcl_glyph *)a)->text, ((const mcl_glyph *)b)->text);
}

/* Valid UTF-8 without control characters (so it fits classes.txt), 1..63 bytes.
 * Returns the number of code points, or -1. */
static int utf8_text_ok(const char *s, size_t n)
{
    if (n == 0 || n >= sizeof(((mcl_glyph *)0)->text)) return -1;
    const unsigned char *p = (const unsigned char *)s;
    int cps = 0;
    for (size_t i = 0; i < n;) {
        unsigned c = p[i];
        size_t k;
        unsigned cp;
        if (c < 0x20 || c == 0x7f) return -1;
        if (c < 0x80) {
            k = 1;
            cp = c;
        } else if ((c & 0xe0) == 0xc0) {
            k = 2;
            cp = c & 0x1f;
        } else if ((c & 0xf0) == 0xe0) {
            k = 3;
            cp = c & 0x0f;
        } else if ((c & 0xf8) == 0xf0) {
            k = 4;
            cp = c & 0x07;
        } else {
            return -1;
        }
        if (i + k > n) return -1;
        for (size_t j = 1; j < k; j++) {
            if ((p[i + j] & 0xc0) != 0x80) return -1;
            cp = (cp << 6) | (p[i + j] & 0x3fu);
        }
        if ((k == 2 && cp < 0x80) || (k == 3 && cp < 0x800) || (k == 4 && cp < 0x10000) ||
            cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff) || (cp >= 0x80 && cp < 0xa0))
            return -1;
        i += k;
        cps++;
    }
    return cps;
}

/* ---------------------------------------------------------------------------------------
 * Files
 * ------------------------------------------------------------------------------------- */
static mcl_status read_file(const char *path, size_t max, char **buf, size_t *n, char *err,
                            size_t len)
{
    *buf = NULL;
    *n = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return mcl_errbuf(err, len, MCL_ERR_IO, "%s: %s", path, strerror(errno));
    size_t cap = 1 << 16, used = 0;
    char *b = malloc(cap + 1);
    if (!b) {
        fclose(f);
        return mcl_errbuf(err, len, MCL_ERR_OOM, "%s: out of memory", path);
    }
    for (;;) {
        if (used == cap) {
            if (cap >= max) {
                free(b);
                fclose(f);
                return mcl_errbuf(err, len, MCL_ERR_FORMAT, "%s: larger than %zu bytes", path, max);
            }
            size_t nc = cap * 2 > max ? max : cap * 2;
            char *nb = realloc(b, nc + 1);
            if (!nb) {
                free(b);
                fclose(f);
                return mcl_errbuf(err, len, MCL_ERR_OOM, "%s: out of memory", path);
            }
            b = nb;
            cap = nc;
        }
        size_t r = fread(b + used, 1, cap - used, f);
        used += r;
        if (r == 0) break;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(b);
        return mcl_errbuf(err, len, MCL_ERR_IO, "%s: read error", path);
    }
    b[used] = '\0';
    *buf = b;
    *n = used;
    return MCL_OK;
}

static mcl_status mkdir_p(const char *dir, char *err, size_t len)
{
    char p[4096];
    if (snprintf(p, sizeof p, "%s", dir) >= (int)sizeof p)
        return mcl_errbuf(err, len, MCL_ERR_INVALID, "path too long: %s", dir);
    for (char *s = p + 1;; s++) {
        if (*s == '/' || *s == '\0') {
            char c = *s;
            *s = '\0';
            if (mkdir(p, 0777) != 0 && errno != EEXIST)
                return mcl_errbuf(err, len, MCL_ERR_IO, "cannot create directory %s: %s", p,
                            strerror(errno));
            *s = c;
            if (c == '\0') break;
        }
    }
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return mcl_errbuf(err, len, MCL_ERR_IO, "%s is not a directory", dir);
    return MCL_OK;
}


/* ---------------------------------------------------------------------------------------
 * ustar reader
 * ------------------------------------------------------------------------------------- */
/* Source: returns bytes read (n, fewer only at the end of input) or -1 (message in err). */
typedef long (*tar_read_fn)(void *ctx, uint8_t *buf, size_t n, char *err, size_t len);

/* Parse an octal numeric header field: optional leading spaces, at least one octal digit,
 * then only NULs/spaces up to the end of the field. -1 on anything else. */
static int tar_octal(const uint8_t *f, size_t w, uint64_t *v)
{
    size_t i = 0;
    uint64_t x = 0;
    if (w && (f[0] & 0x80)) return -1; /* base-256: never used for sane sizes */
    while (i < w && f[i] == ' ') i++;
    size_t d0 = i;
    while (i < w && f[i] >= '0' && f[i] <= '7') {
        if (x > (UINT64_MAX >> 3)) return -1;
        x = (x << 3) | (uint64_t)(f[i] - '0');
        i++;
    }
    if (i == d0) return -1;
    for (; i < w; i++)
        if (f[i] != ' ' && f[i] != '\0') return -1;
    *v = x;
    return 0;
}

/* Skip n bytes; returns 0, 1 (input ended early) or -1 (read error). */
static int tar_skip(tar_read_fn rd, void *ctx, uint64_t n, char *err, size_t len)
{
    uint8_t scratch[4096];
    while (n > 0) {
        size_t k = n > sizeof scratch ? sizeof scratch : (size_t)n;
        long r = rd(ctx, scratch, k, err, len);
        if (r < 0) return -1;
        if ((size_t)r < k) return 1;
        n -= k;
    }
    return 0;
}

static mcl_status tar_walk(tar_read_fn rd, void *ctx, const char *what, mcl_tar_file_fn fn,
                           void *user, char *err, size_t len)
{
    uint8_t h[512];
    uint64_t off = 0;
    uint8_t *data = NULL;
    size_t cap = 0;
    mcl_status st = MCL_OK;
    for (;;) {
        long r = rd(ctx, h, 512, err, len);
        if (r < 0) {
            st = MCL_ERR_IO;
            prefix_err(err, len, st, what);
            break;
        }
        if (r == 0) {
            st = mcl_errbuf(err, len, MCL_ERR_FORMAT,
                      "%s: no end-of-archive block (truncated?) at offset %llu", what,
                      (unsigned long long)off);
            break;
        }
        if (r < 512) {
            st = mcl_errbuf(err, len, MCL_ERR_FORMAT, "%s: truncated header at offset %llu", what,
                      (unsigned long long)off);
            break;
        }
        int zero = 1;
        for (int i = 0; i < 512; i++)
            if (h[i]) {
                zero = 0;
                break;
            }
        if (zero) break; /* end of archive */
        uint64_t want;
        if (tar_octal(h + 148, 8, &want) != 0) {
            st = mcl_errbuf(err, len, MCL_ERR_FORMAT, "%s: bad checksum field at offset %llu", what,
                      (unsigned long long)off);
            break;
        }
        uint64_t su = 0;
        int64_t ss = 0;
        for (int i = 0; i < 512; i++) {
            unsigned char c = (i >= 148 && i < 156) ? ' ' : h[i];
            su += c;
            ss += (signed char)c;
        }
        if (want != su && (int64_t)want != ss) {
            st = mcl_errbuf(err, len, MCL_ERR_FORMAT,
                      "%s: header checksum mismatch at offset %llu (stored %llo, computed %llo)",
                      what, (unsigned long long)off, (unsigned long long)want,
                      (unsigned long long)su);
            break;
        }
        if (memcmp(h + 257, "ustar", 5) != 0) {
            st = mcl_errbuf(err, len, MCL_ERR_FORMAT, "%s: not a ustar header at offset %llu", what,
                      (unsigned long long)off);
            break;
        }
        uint64_t size;
        if (tar_octal(h + 124, 12, &size) != 0) {
            st = mcl_errbuf(err, len, MCL_ERR_FORMAT, "%s: bad size field at offset %llu", what,
                      (unsigned long long)off);
            break;
        }
        if (size > MAX_TAR_ENTRY) {
            st = mcl_errbuf(err, len, MCL_ERR_FORMAT,
                      "%s: member at offset %llu claims %llu bytes (more than %u): refusing", what,
                      (unsigned long long)off, (unsigned long long)size, MAX_TAR_ENTRY);
            break;
        }
        /* name: [prefix "/"] name, POSIX ustar only for the prefix */
        char name[100 + 1 + 155 + 1];
        size_t nl = 0;
        if (memcmp(h + 257, "ustar\0", 6) == 0 && h[345]) {
            for (size_t i = 0; i < 155 && h[345 + i]; i++) name[nl++] = (char)h[345 + i];
            name[nl++] = '/';
        }
        for (size_t i = 0; i < 100 && h[i]; i++) name[nl++] = (char)h[i];
        name[nl] = '\0';
        uint64_t padded = (size + 511u) & ~(uint64_t)511u;
        /* regular files go to fn; everything else (directories, links, and pax 'x'/'g' or GNU
         * 'L'/'K' extension headers, whose long names we do not need: every member npm writes
         * for this package has a name of at most 100 bytes) is skipped */
        char type = (char)h[156];
        if (type == '0' || type == '\0' || type == '7') {
            if (cap < size + 1) {
                uint8_t *nd = realloc(data, (size_t)size + 1);
                if (!nd) {
                    st = mcl_errbuf(err, len, MCL_ERR_OOM, "%s: out of memory", what);
                    break;
                }
                data = nd;
                cap = (size_t)size + 1;
            }
            long got = size ? rd(ctx, data, (size_t)size, err, len) : 0;
            if (got < 0) {
                st = MCL_ERR_IO;
                prefix_err(err, len, st, what);
                break;
            }
            if ((uint64_t)got < size) {
                st = mcl_errbuf(err, len, MCL_ERR_FORMAT,
                          "%s: member '%s' at offset %llu is truncated (%llu of %llu bytes)", what,
                          name, (unsigned long long)off, (unsigned long long)got,
                          (unsigned long long)size);
                break;
            }
            int sk = tar_skip(rd, ctx, padded - size, err, len);
            if (sk != 0) {
                st = sk < 0 ? MCL_ERR_IO : MCL_ERR_FORMAT;
                if (sk < 0)
                    prefix_err(err, len, st, what);
                else
                    mcl_errbuf(err, len, st, "%s: member '%s' padding truncated", what, name);
                break;
            }
            data[size] = 0;
            st = fn(user, name, data, (size_t)size, err, len);
            if (st != MCL_OK) break;
        } else {
            int sk = tar_skip(rd, ctx, padded, err, len);
            if (sk != 0) {
                st = sk < 0 ? MCL_ERR_IO : MCL_ERR_FORMAT;
                if (sk < 0)
                    prefix_err(err, len, st, what);
                else
                    mcl_errbuf(err, len, st, "%s: member '%s' at offset %llu is truncated", what, name,
                         (unsigned long long)off);
                break;
            }
        }
        off += 512 + padded;
    }
    free(data);
    return st;
}

typedef struct mem_src {
    const uint8_t *p;
    size_t n, pos;
} mem_src;

static long mem_read(void *ctx, uint8_t *buf, size_t n, char *err, size_t len)
{
    (void)err;
    (void)len;
    mem_src *m = ctx;
    size_t k = m->n - m->pos < n ? m->n - m->pos : n;
    if (k) memcpy(buf, m->p + m->pos, k);
    m->pos += k;
    return (long)k;
}

mcl_status mcl_tar_parse_buffer(const uint8_t *buf, size_t n, mcl_tar_file_fn fn, void *user,
                                char *err, size_t len)
{
    if ((!buf && n) || !fn) return mcl_errbuf(err, len, MCL_ERR_NULL, "tar: NULL argument");
    mem_src m = {buf, n, 0};
    return tar_walk(mem_read, &m, "tar", fn, user, err, len);
}

typedef struct gz_src {
    gzFile gz;
    int checked;
} gz_src;

static long gz_read(void *ctx, uint8_t *buf, size_t n, char *err, size_t len)
{
    gz_src *g = ctx;
    size_t got = 0;
    while (got < n) {
        unsigned k = n - got > (1u << 30) ? (1u << 30) : (unsigned)(n - got);
        int r = gzread(g->gz, buf + got, k);
        if (r < 0) {
            int code;
            const char *m = gzerror(g->gz, &code);
            mcl_errbuf(err, len, MCL_ERR_IO, "gzip error: %s", m ? m : "?");
            return -1;
        }
        if (!g->checked) {
            g->checked = 1;
            if (gzdirect(g->gz)) {
                mcl_errbuf(err, len, MCL_ERR_IO, "not a gzip file");
                return -1;
            }
        }
        if (r == 0) {
            int code;
            const char *m = gzerror(g->gz, &code);
            if (code != Z_OK) {
                mcl_errbuf(err, len, MCL_ERR_IO, "gzip error: %s", m ? m : "?");
                return -1;
            }
            break;
        }
        got += (size_t)r;
    }
    return (long)got;
}

static mcl_status tar_gz_file(const char *path, mcl_tar_file_fn fn, void *user, char *err,
                              size_t len)
{
    gz_src g = {gzopen(path, "rb"), 0};
    if (!g.gz) return mcl_errbuf(err, len, MCL_ERR_IO, "%s: %s", path, strerror(errno));
    mcl_status st = tar_walk(gz_read, &g, path, fn, user, err, len);
    gzclose(g.gz);
    return st;
}

/* ---------------------------------------------------------------------------------------
 * JSON glyphs (cJSON)
 * ------------------------------------------------------------------------------------- */
/* Parse exactly one JSON value: only white space may follow it. NULL when invalid. */
static cJSON *json_parse_strict(const char *buf, size_t n)
{
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(buf, n, &end, 0);
    if (!root) return NULL;
    size_t used = end && end >= buf ? (size_t)(end - buf) : n;
    for (size_t i = used; i < n; i++) {
        char c = buf[i];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r' && !(c == '\0' && i + 1 == n)) {
            cJSON_Delete(root);
            return NULL;
        }
    }
    return root;
}

static int json_coord(const cJSON *v, double lo, double hi, double *out)
{
    if (!cJSON_IsNumber(v)) return -1;
    double d = v->valuedouble;
    if (!isfinite(d) || d < lo || d > hi) return -1;
    *out = d;
    return 0;
}

/* hanzi-writer: {"medians": [[[x, y], ...], ...], ...} */
static mcl_status glyph_from_hanzi(const cJSON *root, mcl_glyph *g, char *err, size_t len)
{
    if (!cJSON_IsObject(root)) return mcl_errbuf(err, len, MCL_ERR_FORMAT, "not a JSON object");
    const cJSON *med = cJSON_GetObjectItemCaseSensitive(root, "medians");
    if (!med) return mcl_errbuf(err, len, MCL_ERR_FORMAT, "no \"medians\" member");
    if (!cJSON_IsArray(med)) return mcl_errbuf(err, len, MCL_ERR_FORMAT, "\"medians\" is not an array");
    int ns = cJSON_GetArraySize(med);
    if (ns < 1) return mcl_errbuf(err, len, MCL_ERR_FORMAT, "\"medians\" is empty");
    if (ns > MAX_STROKES) return mcl_errbuf(err, len, MCL_ERR_FORMAT, "too many strokes (%d)", ns);
    gbuild b;
    memset(&b, 0, sizeof b);
    int k = 0;
    mcl_status st = MCL_OK;
    const cJSON *stroke;
    cJSON_ArrayForEach (stroke, med) {
        if (!cJSON_IsArray(stroke) || cJSON_GetArraySize(stroke) < 1) {
            st = mcl_errbuf(err, len, MCL_ERR_FORMAT, "medians[%d] is not a non-empty array", k);
            break;
        }
        int j = 0;
        const cJSON *pt;
        cJSON_ArrayForEach (pt, stroke) {
            double x, y;
            if (!cJSON_IsArray(pt) || cJSON_GetArraySize(pt) != 2 ||
                json_coord(cJSON_GetArrayItem(pt, 0), -MAX_COORD, MAX_COORD, &x) ||
                json_coord(cJSON_GetArrayItem(pt, 1), -MAX_COORD, MAX_COORD, &y)) {
                st = mcl_errbuf(err, len, MCL_ERR_FORMAT,
                          "medians[%d][%d] is not a pair of numbers in [-%g, %g]", k, j, MAX_COORD,
                          MAX_COORD);
                break;
            }
            int e = gb_point(&b, (float)(x / 1024.0), (float)((900.0 - y) / 1024.0));
            if (e) {
                st = e == -2 ? mcl_errbuf(err, len, MCL_ERR_OOM, "out of memory")
                             : mcl_errbuf(err, len, MCL_ERR_FORMAT, "too many points");
                break;
            }
            j++;
        }
        if (st != MCL_OK) break;
        if (gb_end_stroke(&b) == -2) {
            st = mcl_errbuf(err, len, MCL_ERR_OOM, "out of memory");
            break;
        }
        k++;
    }
    if (st == MCL_OK && gb_finish(&b, g) != 0) st = mcl_errbuf(err, len, MCL_ERR_OOM, "out of memory");
    gb_free(&b);
    return st;
}

/* kanjidraw: [[x1, y1, x2, y2], ...] */
static mcl_status glyph_from_kanji(const cJSON *arr, mcl_glyph *g, char *err, size_t len)
{
    if (!cJSON_IsArray(arr)) return mcl_errbuf(err, len, MCL_ERR_FORMAT, "strokes are not an array");
    int ns = cJSON_GetArraySize(arr);
    if (ns < 1) return mcl_errbuf(err, len, MCL_ERR_FORMAT, "no strokes");
    if (ns > MAX_STROKES) return mcl_errbuf(err, len, MCL_ERR_FORMAT, "too many strokes (%d)", ns);
    gbuild b;
    memset(&b, 0, sizeof b);
    int k = 0;
    mcl_status st = MCL_OK;
    const cJSON *s;
    cJSON_ArrayForEach (s, arr) {
        double v[4];
        int ok = cJSON_IsArray(s) && cJSON_GetArraySize(s) == 4;
        for (int i = 0; ok && i < 4; i++)
            ok = json_coord(cJSON_GetArrayItem(s, i), 0.0, 1024.0, &v[i]) == 0;
        if (!ok) {
            st = mcl_errbuf(err, len, MCL_ERR_FORMAT,
                      "stroke %d is not [x1, y1, x2, y2] with numbers in [0, 1024]", k);
            break;
        }
        if (gb_point(&b, (float)(v[0] / 256.0), (float)(v[1] / 256.0)) ||
            gb_point(&b, (float)(v[2] / 256.0), (float)(v[3] / 256.0)) || gb_end_stroke(&b)) {
            st = mcl_errbuf(err, len, MCL_ERR_OOM, "out of memory");
            break;
        }
        k++;
    }
    if (st == MCL_OK && gb_finish(&b, g) != 0) st = mcl_errbuf(err, len, MCL_ERR_OOM, "out of memory");
    gb_free(&b);
    return st;
}

mcl_status mcl_glyph_from_json(const char *json, size_t n, const char *format, mcl_glyph *g,
                               char *err, size_t len)
{
    if (!g || !format || (!json && n)) return mcl_errbuf(err, len, MCL_ERR_NULL, "NULL argument");
    memset(g, 0, sizeof *g);
    int hanzi = strcmp(format, "hanzi") == 0;
    if (!hanzi && strcmp(format, "kanji") != 0)
        return mcl_errbuf(err, len, MCL_ERR_INVALID, "unknown glyph format '%s'", format);
    if (n == 0) return mcl_errbuf(err, len, MCL_ERR_FORMAT, "empty input");
    cJSON *root = json_parse_strict(json, n);
    if (!root) return mcl_errbuf(err, len, MCL_ERR_FORMAT, "invalid JSON");
    mcl_status st =
        hanzi ? glyph_from_hanzi(root, g, err, len) : glyph_from_kanji(root, g, err, len);
    cJSON_Delete(root);
    return st;
}

/* ---------------------------------------------------------------------------------------
 * kanji
 * ------------------------------------------------------------------------------------- */
mcl_status mcl_kanji_parse_buffer(const char *buf, size_t n, int max_strokes, mcl_strokeset **out,
                                  char *err, size_t len)
{
    if (!out || (!buf && n)) return mcl_errbuf(err, len, MCL_ERR_NULL, "NULL argument");
    *out = NULL;
    if (n == 0) return mcl_errbuf(err, len, MCL_ERR_FORMAT, "empty input");
    cJSON *root = json_parse_strict(buf, n);
    if (!root) return mcl_errbuf(err, len, MCL_ERR_FORMAT, "invalid JSON");
    mcl_strokeset *s = NULL;
    mcl_status st = set_new("kanji", &s);
    int cap = 0;
    if (st == MCL_OK && !cJSON_IsObject(root))
        st = mcl_errbuf(err, len, MCL_ERR_FORMAT, "top level is not an object");
    const cJSON *grp;
    if (st == MCL_OK)
        cJSON_ArrayForEach (grp, root) {
            const char *key = grp->string ? grp->string : "";
            char *end;
            errno = 0;
            long count = strtol(key, &end, 10);
            if (key[0] < '0' || key[0] > '9' || *end || errno || count < 1 || count > MAX_STROKES) {
                st = mcl_errbuf(err, len, MCL_ERR_FORMAT, "member \"%.40s\" is not a stroke count", key);
                break;
            }
            if (!cJSON_IsObject(grp)) {
                st = mcl_errbuf(err, len, MCL_ERR_FORMAT, "member \"%s\" is not an object", key);
                break;
            }
            const cJSON *ch;
            cJSON_ArrayForEach (ch, grp) {
                const char *c = ch->string ? ch->string : "";
                if (utf8_text_ok(c, strlen(c)) < 1) {
                    st = mcl_errbuf(err, len, MCL_ERR_FORMAT,
                              "[\"%s\"]: a character name is not valid UTF-8 text", key);
                    break;
                }
                mcl_glyph g;
                memset(&g, 0, sizeof g);
                st = glyph_from_kanji(ch, &g, err, len);
                if (st != MCL_OK) {
                    char what[96];
                    snprintf(what, sizeof what, "[\"%s\"][\"%s\"]", key, c);
                    prefix_err(err, len, st, what);
                    break;
                }
                if (g.n_strokes != count) {
                    int got = g.n_strokes;
                    mcl_glyph_clear(&g);
                    st = mcl_errbuf(err, len, MCL_ERR_FORMAT,
                              "[\"%s\"][\"%s\"]: %d strokes under stroke count %ld", key, c, got,
                              count);
                    break;
                }
                if (max_strokes > 0 && g.n_strokes > max_strokes) {
                    mcl_glyph_clear(&g);
                    continue;
                }
                snprintf(g.text, sizeof g.text, "%s", c);
                g.split = mcl_stroke_split_of(g.text, strlen(g.text));
                st = set_push(s, &cap, &g);
                if (st != MCL_OK) {
                    mcl_glyph_clear(&g);
                    mcl_errbuf(err, len, st, "out of memory");
                    break;
                }
            }
            if (st != MCL_OK) break;
        }
    cJSON_Delete(root);
    if (st == MCL_OK && s->n > 1) {
        qsort(s->glyphs, (size_t)s->n, sizeof *s->glyphs, cmp_glyph_text);
        for (int i = 1; i < s->n; i++)
            if (strcmp(s->glyphs[i - 1].text, s->glyphs[i].text) == 0) {
                st = mcl_errbuf(err, len, MCL_ERR_FORMAT, "character \"%s\" appears twice",
                          s->glyphs[i].text);
                break;
            }
    }
    if (st != MCL_OK) {
        mcl_strokeset_free(s);
        return st;
    }
    *out = s;
    return MCL_OK;
}

static mcl_status load_kanji(int max_strokes, mcl_strokeset **out, char *err, size_t len)
{
    struct stat stt;
    if (stat(KANJI_JSON, &stt) != 0)
        return mcl_errbuf(err, len, MCL_ERR_IO,
                    "kanji: %s not found: install the Debian package python3-kanjidraw "
                    "(apt-get install python3-kanjidraw)",
                    KANJI_JSON);
    char *buf;
    size_t n;
    mcl_status st = read_file(KANJI_JSON, MAX_FILE_BYTES, &buf, &n, err, len);
    if (st != MCL_OK) return st;
    st = mcl_kanji_parse_buffer(buf, n, max_strokes, out, err, len);
    free(buf);
    if (st != MCL_OK) return prefix_err(err, len, st, KANJI_JSON);
    if ((*out)->n == 0) {
        mcl_strokeset_free(*out);
        *out = NULL;
        return mcl_errbuf(err, len, MCL_ERR_FORMAT, "%s: no glyphs with at most %d strokes", KANJI_JSON,
                    max_strokes);
    }
    return MCL_OK;
}

/* ---------------------------------------------------------------------------------------
 * Hershey .jhf
 * ------------------------------------------------------------------------------------- */
/* A right-aligned decimal field (spaces, then digits). -1 if anything else. */
static long jhf_number(const char *f, int w)
{
    int i = 0;
    while (i < w && f[i] == ' ') i++;
    if (i == w) return -1;
    long v = 0;
    for (; i < w; i++) {
        if (f[i] < '0' || f[i] > '9') return -1;
        v = v * 10 + (f[i] - '0');
    }
    return v;
}

mcl_status mcl_jhf_parse_buffer(const char *buf, size_t n, const char *fname, mcl_strokeset **out,
                                char *err, size_t len)
{
    if (!out || (!buf && n)) return mcl_errbuf(err, len, MCL_ERR_NULL, "NULL argument");
    *out = NULL;
    if (!fname) fname = "<jhf>";
    mcl_strokeset *s = NULL;
    mcl_status st = set_new("hershey", &s);
    if (st != MCL_OK) return mcl_errbuf(err, len, st, "out of memory");
    int cap = 0;
    char *body = NULL; /* glyph data joined over continuation lines */
    size_t body_cap = 0;
    size_t pos = 0;
    long line_no = 0;
    while (pos < n && st == MCL_OK) {
        /* one physical line */
        size_t e = pos;
        while (e < n && buf[e] != '\n') e++;
        size_t ll = e - pos;
        const char *line = buf + pos;
        pos = e < n ? e + 1 : e;
        line_no++;
        if (ll && line[ll - 1] == '\r') ll--;
        if (ll == 0) continue; /* blank line */
        long first_line = line_no;
        for (size_t i = 0; i < ll; i++)
            if ((unsigned char)line[i] < 0x20 || (unsigned char)line[i] > 0x7e) {
                st = mcl_errbuf(err, len, MCL_ERR_FORMAT,
                          "%s:%ld: non-printable byte 0x%02x in column %zu", fname, line_no,
                          (unsigned char)line[i], i + 1);
                break;
            }
        if (st != MCL_OK) break;
        if (ll < 10) {
            st = mcl_errbuf(err, len, MCL_ERR_FORMAT,
                      "%s:%ld: line too short for a glyph header (%zu chars)", fname, line_no, ll);
            break;
        }
        long id = jhf_number(line, 5), count = jhf_number(line + 5, 3);
        if (id < 0) {
            st = mcl_errbuf(err, len, MCL_ERR_FORMAT, "%s:%ld: columns 1-5 are not a glyph number", fname,
                      line_no);
            break;
        }
        if (count < 1) {
            st = mcl_errbuf(err, len, MCL_ERR_FORMAT, "%s:%ld: columns 6-8 are not a vertex count >= 1",
                      fname, line_no);
            break;
        }
        size_t need = 2 * (size_t)count; /* margins + coordinate pairs */
        if (body_cap < need) {
            char *nb = realloc(body, need);
            if (!nb) {
                st = mcl_errbuf(err, len, MCL_ERR_OOM, "out of memory");
                break;
            }
            body = nb;
            body_cap = need;
        }
        size_t have = ll - 8;
        if (have > need) {
            st = mcl_errbuf(err, len, MCL_ERR_FORMAT,
                      "%s:%ld: %zu data characters, the vertex count %ld needs %zu", fname, line_no,
                      have, count, need);
            break;
        }
        memcpy(body, line + 8, have);
        /* long glyphs continue on the next physical lines */
        while (have < need && st == MCL_OK) {
            if (pos >= n) {
                st = mcl_errbuf(err, len, MCL_ERR_FORMAT,
                          "%s:%ld: glyph truncated at end of file (%zu of %zu data characters)",
                          fname, first_line, have, need);
                break;
            }
            e = pos;
            while (e < n && buf[e] != '\n') e++;
            ll = e - pos;
            line = buf + pos;
            pos = e < n ? e + 1 : e;
            line_no++;
            if (ll && line[ll - 1] == '\r') ll--;
            for (size_t i = 0; i < ll; i++)
                if ((unsigned char)line[i] < 0x20 || (unsigned char)line[i] > 0x7e) {
                    st = mcl_errbuf(err, len, MCL_ERR_FORMAT,
                              "%s:%ld: non-printable byte 0x%02x in column %zu", fname, line_no,
                              (unsigned char)line[i], i + 1);
                    break;
                }
            if (st != MCL_OK) break;
            if (ll == 0 || have + ll > need) {
                st = mcl_errbuf(err, len, MCL_ERR_FORMAT,
                          "%s:%ld: glyph started on line %ld has %zu data characters, its "
                          "vertex count %ld needs %zu",
                          fname, line_no, first_line, have + ll, count, need);
                break;
            }
            memcpy(body + have, line, ll);
            have += ll;
        }
        if (st != MCL_OK) break;
        /* body[0..1] = margins; then pairs */
        gbuild b;
        memset(&b, 0, sizeof b);
        for (long v = 1; v < count && st == MCL_OK; v++) {
            char cx = body[2 * v], cy = body[2 * v + 1];
            int e2;
            if (cx == ' ' && cy == 'R')
                e2 = gb_end_stroke(&b);
            else
                e2 = gb_point(&b, (float)(cx - 'R') / 128.0f + 0.5f,
                              (float)(cy - 'R') / 128.0f + 0.5f);
            if (e2) st = mcl_errbuf(err, len, MCL_ERR_OOM, "out of memory");
        }
        mcl_glyph g;
        memset(&g, 0, sizeof g);
        if (st == MCL_OK && (gb_end_stroke(&b) || gb_finish(&b, &g)))
            st = mcl_errbuf(err, len, MCL_ERR_OOM, "out of memory");
        gb_free(&b);
        if (st == MCL_OK) {
            snprintf(g.text, sizeof g.text, "%.40s #%d", fname, s->n);
            st = set_push(s, &cap, &g);
            if (st != MCL_OK) {
                mcl_glyph_clear(&g);
                mcl_errbuf(err, len, st, "out of memory");
            }
        }
    }
    free(body);
    if (st != MCL_OK) {
        mcl_strokeset_free(s);
        return st;
    }
    *out = s;
    return MCL_OK;
}

/* The shape key of a hershey glyph (see the header): bytes into key (cap), length or -1. */
static long hershey_key(const mcl_glyph *g, unsigned char *key, size_t cap)
{
    int np = g->stroke_start[g->n_strokes];
    int minx = 1 << 20, miny = 1 << 20;
    for (int i = 0; i < np; i++) {
        int x = (int)lrintf((g->pts[2 * i] - 0.5f) * 128.0f);
        int y = (int)lrintf((g->pts[2 * i + 1] - 0.5f) * 128.0f);
        if (x < minx) minx = x;
        if (y < miny) miny = y;
    }
    size_t k = 0;
    for (int s = 0; s < g->n_strokes; s++) {
        if (s) {
            if (k + 2 > cap) return -1;
            key[k++] = ' ';
            key[k++] = 'R';
        }
        for (int i = g->stroke_start[s]; i < g->stroke_start[s + 1]; i++) {
            int x = (int)lrintf((g->pts[2 * i] - 0.5f) * 128.0f) - minx;
            int y = (int)lrintf((g->pts[2 * i + 1] - 0.5f) * 128.0f) - miny;
            if (k + 2 > cap || x > 255 - 'R' || y > 255 - 'R') return -1;
            key[k++] = (unsigned char)('R' + x);
            key[k++] = (unsigned char)('R' + y);
        }
    }
    return (long)k;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

typedef struct hkey {
    uint64_t h;
    long n;
    unsigned char *k;
} hkey;

static mcl_status load_hershey(int max_strokes, mcl_strokeset **out, char *err, size_t len)
{
    const char *install = "install the Debian package hershey-fonts-data "
                          "(apt-get install hershey-fonts-data)";
    DIR *d = opendir(HERSHEY_DIR);
    if (!d) return mcl_errbuf(err, len, MCL_ERR_IO, "hershey: %s not found: %s", HERSHEY_DIR, install);
    char **names = NULL;
    int nn = 0, cn = 0;
    mcl_status st = MCL_OK;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        size_t l = strlen(de->d_name);
        if (l < 5 || strcmp(de->d_name + l - 4, ".jhf") != 0) continue;
        if (nn == cn) {
            int nc = cn ? 2 * cn : 64;
            char **a = realloc(names, (size_t)nc * sizeof *a);
            if (!a) {
                st = mcl_errbuf(err, len, MCL_ERR_OOM, "out of memory");
                break;
            }
            names = a;
            cn = nc;
        }
        names[nn] = strdup(de->d_name);
        if (!names[nn]) {
            st = mcl_errbuf(err, len, MCL_ERR_OOM, "out of memory");
            break;
        }
        nn++;
    }
    closedir(d);
    if (st == MCL_OK && nn == 0)
        st = mcl_errbuf(err, len, MCL_ERR_IO, "hershey: no .jhf files in %s: %s", HERSHEY_DIR, install);
    if (nn > 1) qsort(names, (size_t)nn, sizeof *names, cmp_str);

    mcl_strokeset *s = NULL;
    if (st == MCL_OK) st = set_new("hershey", &s);
    int cap = 0;
    hkey *keys = NULL;
    unsigned char *kb = NULL;
    size_t kb_cap = 0;
    for (int f = 0; f < nn && st == MCL_OK; f++) {
        char path[4096], font[64];
        snprintf(path, sizeof path, "%s/%s", HERSHEY_DIR, names[f]);
        snprintf(font, sizeof font, "%.*s", (int)(strlen(names[f]) - 4), names[f]);
        char *buf;
        size_t n;
        st = read_file(path, MAX_FILE_BYTES, &buf, &n, err, len);
        if (st != MCL_OK) break;
        mcl_strokeset *fs = NULL;
        st = mcl_jhf_parse_buffer(buf, n, path, &fs, err, len);
        free(buf);
        if (st != MCL_OK) break;
        for (int i = 0; i < fs->n && st == MCL_OK; i++) {
            mcl_glyph *g = &fs->glyphs[i];
            if (g->n_strokes == 0) continue;
            if (max_strokes > 0 && g->n_strokes > max_strokes) continue;
            size_t need = 4 * (size_t)g->stroke_start[g->n_strokes] + 2 * (size_t)g->n_strokes + 2;
            if (need > kb_cap) {
                unsigned char *nk = realloc(kb, need);
                if (!nk) {
                    st = mcl_errbuf(err, len, MCL_ERR_OOM, "out of memory");
                    break;
                }
                kb = nk;
                kb_cap = need;
            }
            long kl = hershey_key(g, kb, kb_cap);
            if (kl < 0) {
                st = mcl_errbuf(err, len, MCL_ERR_FORMAT, "%s: glyph %d: coordinates out of range", path,
                          i);
                break;
            }
            uint64_t h = fnv1a64(kb, (size_t)kl);
            int dup = 0;
            for (int j = 0; j < s->n && !dup; j++)
                dup = keys[j].h == h && keys[j].n == kl && memcmp(keys[j].k, kb, (size_t)kl) == 0;
            if (dup) continue;
            /* keys[] grows with s->glyphs (same capacity) */
            if (s->n == cap) {
                hkey *nk = realloc(keys, (size_t)(cap ? 2 * cap : 256) * sizeof *nk);
                if (!nk) {
                    st = mcl_errbuf(err, len, MCL_ERR_OOM, "out of memory");
                    break;
                }
                keys = nk;
            }
            unsigned char *kc = malloc((size_t)kl + 1);
            if (!kc) {
                st = mcl_errbuf(err, len, MCL_ERR_OOM, "out of memory");
                break;
            }
            memcpy(kc, kb, (size_t)kl);
            int idx = s->n;
            if (fs->n == 96 && i < 95)
                snprintf(g->text, sizeof g->text, "%.40s #%d (%c)", font, i, (char)(32 + i));
            else
                snprintf(g->text, sizeof g->text, "%.40s #%d", font, i);
            g->split = mcl_stroke_split_of(kb, (size_t)kl);
            st = set_push(s, &cap, g);
            if (st != MCL_OK) {
                free(kc);
                mcl_errbuf(err, len, st, "out of memory");
                break;
            }
            keys[idx].h = h;
            keys[idx].n = kl;
            keys[idx].k = kc;
        }
        mcl_strokeset_free(fs);
    }
    if (s && keys)
        for (int j = 0; j < s->n; j++) free(keys[j].k);
    free(keys);
    free(kb);
    for (int f = 0; f < nn; f++) free(names[f]);
    free(names);
    if (st == MCL_OK && s->n == 0)
        st = mcl_errbuf(err, len, MCL_ERR_FORMAT, "hershey: no glyphs in %s", HERSHEY_DIR);
    if (st != MCL_OK) {
        mcl_strokeset_free(s);
        return st;
    }
    *out = s;
    return MCL_OK;
}

/* ---------------------------------------------------------------------------------------
 * hanzi
 * ------------------------------------------------------------------------------------- */
/* Run `npm pack hanzi-writer-data@2.0.1` in a fresh directory under data_dir, then move the
 * tarball to tgz. No shell: fork + execvp. */
static mcl_status npm_pack(const char *data_dir, const char *tgz, char *err, size_t len)
{
    char how[1024];
    snprintf(how, sizeof how,
             "run: cd '%s' && npm pack " HANZI_PKG " (needs npm: apt-get install npm, and "
             "access to the npm registry)",
             data_dir);
    mcl_status st = mkdir_p(data_dir, err, len);
    if (st != MCL_OK) return prefix_err(err, len, st, "hanzi");
    char tmpdir[4096];
    if (snprintf(tmpdir, sizeof tmpdir, "%s/.npm-pack.XXXXXX", data_dir) >= (int)sizeof tmpdir)
        return mcl_errbuf(err, len, MCL_ERR_INVALID, "data dir path too long");
    if (!mkdtemp(tmpdir))
        return mcl_errbuf(err, len, MCL_ERR_IO, "hanzi: cannot create a directory in %s: %s; %s",
                    data_dir, strerror(errno), how);
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        rmdir(tmpdir);
        return mcl_errbuf(err, len, MCL_ERR_IO, "hanzi: fork failed: %s; %s", strerror(errno), how);
    }
    if (pid == 0) {
        char *argv[] = {"npm", "pack", "--loglevel=warn", HANZI_PKG, NULL};
        /* npm prints the tarball name on stdout: keep our stdout clean */
        if (dup2(2, 1) < 0 || chdir(tmpdir) != 0) _exit(126);
        execvp("npm", argv);
        _exit(errno == ENOENT ? 127 : 126);
    }
    int ws = 0;
    pid_t w;
    do {
        w = waitpid(pid, &ws, 0);
    } while (w < 0 && errno == EINTR);
    char got[4200];
    snprintf(got, sizeof got, "%s/%s", tmpdir, HANZI_TGZ);
    int ok = w == pid && WIFEXITED(ws) && WEXITSTATUS(ws) == 0;
    if (ok && rename(got, tgz) != 0) ok = 0;
    remove(got);
    rmdir(tmpdir);
    if (!ok) {
        if (w == pid && WIFEXITED(ws) && WEXITSTATUS(ws) == 127)
            return mcl_errbuf(err, len, MCL_ERR_IO, "hanzi: %s is missing and npm was not found; %s", tgz,
                        how);
        return mcl_errbuf(err, len, MCL_ERR_IO,
                    "hanzi: %s is missing and `npm pack " HANZI_PKG "` failed (exit status %d); %s",
                    tgz, w == pid && WIFEXITED(ws) ? WEXITSTATUS(ws) : -1, how);
    }
    return MCL_OK;
}

typedef struct hanzi_ctx {
    mcl_strokeset *s;
    int cap;
    int max_strokes;
    char *licence;
    size_t licence_n;
} hanzi_ctx;

static mcl_status hanzi_member(void *user, const char *name, const uint8_t *data, size_t size,
                               char *err, size_t len)
{
    hanzi_ctx *h = user;
    if (strcmp(name, HANZI_LICENCE_MEMBER) == 0) {
        free(h->licence);
        h->licence = malloc(size + 1);
        if (!h->licence) return mcl_errbuf(err, len, MCL_ERR_OOM, "out of memory");
        memcpy(h->licence, data, size);
        h->licence[size] = 0;
        h->licence_n = size;
        return MCL_OK;
    }
    size_t nl = strlen(name);
    if (nl < 8 + 5 + 1 || strncmp(name, "package/", 8) != 0 || strcmp(name + nl - 5, ".json") != 0)
        return MCL_OK;
    const char *stem = name + 8;
    size_t sl = nl - 8 - 5;
    if (memchr(stem, '/', sl) || utf8_text_ok(stem, sl) != 1 ||
        (sl == 1 && (unsigned char)stem[0] < 0x80))
        return MCL_OK; /* package.json etc.: not a character */
    mcl_glyph g;
    mcl_status st = mcl_glyph_from_json((const char *)data, size, "hanzi", &g, err, len);
    if (st != MCL_OK) return prefix_err(err, len, st, name);
    if (h->max_strokes > 0 && g.n_strokes > h->max_strokes) {
        mcl_glyph_clear(&g);
        return MCL_OK;
    }
    memcpy(g.text, stem, sl);
    g.text[sl] = 0;
    g.split = mcl_stroke_split_of(g.text, sl);
    st = set_push(h->s, &h->cap, &g);
    if (st != MCL_OK) {
        mcl_glyph_clear(&g);
        return mcl_errbuf(err, len, st, "out of memory");
    }
    return MCL_OK;
}

static mcl_status load_hanzi(const char *data_dir, int max_strokes, mcl_strokeset **out, char *err,
                             size_t len)
{
    char tgz[4096];
    if (snprintf(tgz, sizeof tgz, "%s/%s", data_dir, HANZI_TGZ) >= (int)sizeof tgz)
        return mcl_errbuf(err, len, MCL_ERR_INVALID, "data dir path too long");
    struct stat stt;
    mcl_status st;
    if (stat(tgz, &stt) != 0) {
        st = npm_pack(data_dir, tgz, err, len);
        if (st != MCL_OK) return st;
    }
    hanzi_ctx h;
    memset(&h, 0, sizeof h);
    h.max_strokes = max_strokes;
    st = set_new("hanzi", &h.s);
    if (st != MCL_OK) return mcl_errbuf(err, len, st, "out of memory");
    st = tar_gz_file(tgz, hanzi_member, &h, err, len);
    if (st != MCL_OK) {
        char tmp[512];
        snprintf(tmp, sizeof tmp, "%s", err ? err : "");
        mcl_errbuf(err, len, st, "%s (delete %s to fetch it again)", tmp, tgz);
    }
    if (st == MCL_OK && !h.licence)
        st = mcl_errbuf(err, len, MCL_ERR_FORMAT, "%s: no %s in the package", tgz, HANZI_LICENCE_MEMBER);
    if (st == MCL_OK && h.s->n == 0)
        st = mcl_errbuf(err, len, MCL_ERR_FORMAT, "%s: no character with at most %d strokes", tgz,
                  max_strokes);
    if (st == MCL_OK) {
        qsort(h.s->glyphs, (size_t)h.s->n, sizeof *h.s->glyphs, cmp_glyph_text);
        for (int i = 1; i < h.s->n; i++)
            if (strcmp(h.s->glyphs[i - 1].text, h.s->glyphs[i].text) == 0) {
                st = mcl_errbuf(err, len, MCL_ERR_FORMAT, "%s: character %s appears twice", tgz,
                          h.s->glyphs[i].text);
                break;
            }
    }
    if (st == MCL_OK) {
        /* keep the licence next to anything derived from the data */
        char dir[4200], path[4300];
        snprintf(dir, sizeof dir, "%s/hanzi", data_dir);
        snprintf(path, sizeof path, "%s/LICENSE-ARPHIC.txt", dir);
        st = mkdir_p(dir, err, len);
        if (st == MCL_OK) st = mcl_write_file_atomic(path, h.licence, h.licence_n, err, len);
    }
    free(h.licence);
    if (st != MCL_OK) {
        mcl_strokeset_free(h.s);
        return st;
    }
    *out = h.s;
    return MCL_OK;
}

/* ---------------------------------------------------------------------------------------
 * Public entry points
 * ------------------------------------------------------------------------------------- */
mcl_status mcl_strokeset_load(const char *name, const char *data_dir, int max_strokes,
                              mcl_strokeset **out, char *err, size_t len)
{
    if (!name || !out) return mcl_errbuf(err, len, MCL_ERR_NULL, "NULL argument");
    *out = NULL;
    if (!data_dir || !*data_dir) data_dir = mcl_data_dir_default();
    if (!data_dir) return mcl_errbuf(err, len, MCL_ERR_INVALID, "%s", MCL_NO_DATA_DIR);
    if (strcmp(name, "hanzi") == 0) return load_hanzi(data_dir, max_strokes, out, err, len);
    if (strcmp(name, "kanji") == 0) return load_kanji(max_strokes, out, err, len);
    if (strcmp(name, "hershey") == 0) return load_hershey(max_strokes, out, err, len);
    return mcl_errbuf(err, len, MCL_ERR_INVALID,
                "unknown stroke set '%s' (expected hanzi, kanji or hershey)", name);
}

/* Default stroke limits used by mcl_strokes_prepare. */
static int default_max_strokes(const char *name)
{
    if (strcmp(name, "hanzi") == 0) return 10;
    if (strcmp(name, "kanji") == 0) return 10;
    return 0;
}

static mcl_prepare_progress_fn progress_fn;
static void *progress_arg;

void mcl_prepare_set_progress(mcl_prepare_progress_fn fn, void *arg)
{
    progress_fn = fn;
    progress_arg = arg;
}

void mcl_prepare_progress(int64_t done, int64_t total)
{
    if (progress_fn) progress_fn(progress_arg, done, total);
}

mcl_status mcl_strokes_prepare(const char *name, const char *data_dir, int instances, uint64_t seed,
                               char *err, size_t len)
{
    if (!name) return mcl_errbuf(err, len, MCL_ERR_NULL, "NULL argument");
    if (!data_dir || !*data_dir) data_dir = mcl_data_dir_default();
    if (!data_dir) return mcl_errbuf(err, len, MCL_ERR_INVALID, "%s", MCL_NO_DATA_DIR);
    if (instances <= 0) instances = 20;
    if (instances > 100000)
        return mcl_errbuf(err, len, MCL_ERR_INVALID, "instances %d is too many (at most 100000)",
                    instances);
    mcl_strokeset *s = NULL;
    int max_strokes = default_max_strokes(name);
    mcl_status st = mcl_strokeset_load(name, data_dir, max_strokes, &s, err, len);
    if (st != MCL_OK) return st;
    int64_t n = (int64_t)s->n * instances;
    uint8_t *img = malloc((size_t)n * MCL_IMG * MCL_IMG);
    int32_t *lab = malloc((size_t)n * sizeof *lab);
    mcl_class_info *ci = calloc((size_t)s->n, sizeof *ci);
    if (!img || !lab || !ci) {
        st = mcl_errbuf(err, len, MCL_ERR_OOM, "out of memory for %lld images", (long long)n);
    } else {
        const mcl_strokeset *cs = s;
        /* in chunks, so that the progress hook is called from this thread between them (each
         * image is keyed by (seed, class, instance): the chunking changes nothing) */
        const int64_t chunk = 8192;
        for (int64_t i0 = 0; i0 < n; i0 += chunk) {
            const int64_t i1 = n - i0 < chunk ? n : i0 + chunk;
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 64)
#endif
            for (int64_t i = i0; i < i1; i++) {
                int32_t c = (int32_t)(i / instances);
                int64_t k = i % instances;
                mcl_render_glyph(&cs->glyphs[c], seed, c, k, 0, img + i * MCL_IMG * MCL_IMG);
                lab[i] = c;
            }
            mcl_prepare_progress(i1, n);
        }
        for (int c = 0; c < s->n; c++) {
            ci[c].split = s->glyphs[c].split;
            snprintf(ci[c].text, sizeof ci[c].text, "%s", s->glyphs[c].text);
        }
        char source[256];
        const char *licence;
        if (strcmp(name, "hanzi") == 0) {
            snprintf(source, sizeof source,
                     "npm " HANZI_PKG " (stroke medians), characters with <= %d strokes",
                     max_strokes);
            licence = "Arphic Public License (see LICENSE-ARPHIC.txt)";
        } else if (strcmp(name, "kanji") == 0) {
            snprintf(source, sizeof source,
                     "Debian python3-kanjidraw %s (KanjiVG-derived strokes), characters with "
                     "<= %d strokes",
                     KANJI_JSON, max_strokes);
            licence = "CC-BY-SA-3.0 (KanjiVG, Ulrich Apel; kanjidraw, FC Stegerman)";
        } else {
            snprintf(source, sizeof source,
                     "Debian hershey-fonts-data " HERSHEY_DIR "/*.jhf, unique non-empty glyphs");
            /* <= 127 chars (meta.txt keeps one line); the full text is in LICENSE-HERSHEY.txt */
            licence = "Hershey Fonts licence (free use; credit Dr. A. V. Hershey, U.S. NBS, and "
                      "James Hurt; see LICENSE-HERSHEY.txt)";
        }
        mcl_prepared p;
        memset(&p, 0, sizeof p);
        p.name = s->name;
        p.source = source;
        p.licence = licence;
        p.n = n;
        p.images = img;
        p.labels = lab;
        p.example_split = NULL;
        p.n_classes = s->n;
        p.classes = ci;
        p.seed = seed;
        p.instances = instances;
        if (strcmp(name, "hershey") == 0) {
            /* the Hershey licence asks for its acknowledgements to travel with the data */
            char dir[4200], path[4300];
            snprintf(dir, sizeof dir, "%s/hershey", data_dir);
            snprintf(path, sizeof path, "%s/LICENSE-HERSHEY.txt", dir);
            char *txt = NULL;
            size_t tn = 0;
            char e2[256];
            if (read_file(HERSHEY_COPYRIGHT, 1 << 20, &txt, &tn, e2, sizeof e2) != MCL_OK) {
                static const char ack[] =
                    "The Hershey Fonts were originally created by Dr. A. V. Hershey while "
                    "working at the U. S. National Bureau of Standards.\n"
                    "The format of the Font data in this distribution was originally created "
                    "by James Hurt, Cognition, Inc., 900 Technology Park Drive, Billerica, MA "
                    "01821.\n";
                txt = malloc(sizeof ack);
                if (txt) memcpy(txt, ack, sizeof ack);
                tn = sizeof ack - 1;
            }
            if (!txt) st = mcl_errbuf(err, len, MCL_ERR_OOM, "out of memory");
            if (st == MCL_OK) st = mkdir_p(dir, err, len);
            if (st == MCL_OK) st = mcl_write_file_atomic(path, txt, tn, err, len);
            free(txt);
        }
        if (st == MCL_OK) st = mcl_prepared_write(data_dir, &p, err, len);
    }
    free(img);
    free(lab);
    free(ci);
    mcl_strokeset_free(s);
    return st;
}
