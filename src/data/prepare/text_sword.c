/* text_sword.c — SWORD zText / zCom modules (Bibles and commentaries) to plain text
 * (textprep.h).
 *
 * A compressed SWORD module keeps, per testament ("ot", "nt"), a block index <part>.Xzs and
 * the blocks <part>.Xzz (X = b: a block per book, c: per chapter, v: per verse). Every index
 * entry is 12 bytes: three little-endian uint32, the block's offset in .Xzz, its compressed
 * size and its uncompressed size; a block is one zlib stream (CompressType=ZIP), sometimes
 * followed by padding. The verse index (.Xzv) is not needed: the blocks hold the entries in
 * canonical order, and the text is read block after block. The markup is OSIS (or ThML/GBF
 * for older modules): XML-like tags around the words, which mcl_sword_strip removes. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <zlib.h>

#include "textprep.h"
#include "util.h"

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

mcl_status mcl_sword_blocks(const uint8_t *idx, size_t idx_n, const uint8_t *dat, size_t dat_n,
                            const char *what, mcl_buf *out, char *err, size_t len)
{
    if (idx_n % 12 != 0)
        return mcl_errbuf(err, len, MCL_ERR_FORMAT,
                          "%s: block index of %zu bytes is not a whole number of 12-byte "
                          "entries",
                          what, idx_n);
    for (size_t e = 0; e < idx_n / 12; e++) {
        uint32_t off = le32(idx + 12 * e), csize = le32(idx + 12 * e + 4),
                 usize = le32(idx + 12 * e + 8);
        if (csize == 0) {
            if (usize != 0)
                return mcl_errbuf(err, len, MCL_ERR_FORMAT,
                                  "%s: block %zu has no data but %u bytes of text", what, e,
                                  usize);
            continue;
        }
        if ((uint64_t)off + csize > dat_n)
            return mcl_errbuf(err, len, MCL_ERR_FORMAT,
                              "%s: block %zu (offset %u, %u bytes) lies past the end of the "
                              "data (%zu bytes)",
                              what, e, off, csize, dat_n);
        /* deflate expands at most 1032:1; more is a lie, refused before allocating */
        if ((uint64_t)usize > (uint64_t)csize * 1032 + 64)
            return mcl_errbuf(err, len, MCL_ERR_FORMAT,
                              "%s: block %zu claims %u bytes from %u compressed bytes", what, e,
                              usize, csize);
        if (usize > MCL_TEXT_MAX_SOURCE || out->n + usize > MCL_TEXT_MAX_SOURCE)
            return mcl_errbuf(err, len, MCL_ERR_INVALID,
                              "%s: block %zu claims %u bytes: more text than accepted (%zu MiB)",
                              what, e, usize, MCL_TEXT_MAX_SOURCE >> 20);
        size_t base = out->n;
        /* room for the block and one byte more, to notice a block longer than it says */
        if (out->cap < base + usize + 1) {
            size_t nc = out->cap ? out->cap : 4096;
            while (nc < base + usize + 1) nc *= 2;
            uint8_t *np = realloc(out->p, nc);
            if (!np) return mcl_errbuf(err, len, MCL_ERR_OOM, "%s: out of memory", what);
            out->p = np;
            out->cap = nc;
        }
        z_stream z;
        memset(&z, 0, sizeof z);
        if (inflateInit(&z) != Z_OK) return mcl_errbuf(err, len, MCL_ERR_OOM, "%s: zlib: out of memory", what);
        z.next_in = (Bytef *)(uintptr_t)(dat + off);
        z.avail_in = csize;
        z.next_out = out->p + base;
        z.avail_out = usize + 1;
        int r = inflate(&z, Z_FINISH);
        size_t got = (size_t)z.total_out;
        inflateEnd(&z);
        if (r != Z_STREAM_END)
            return mcl_errbuf(err, len, MCL_ERR_FORMAT,
                              "%s: block %zu (offset %u): %s", what, e, off,
                              r == Z_DATA_ERROR  ? "corrupt zlib data"
                              : r == Z_BUF_ERROR ? (got > usize ? "more text than the index says"
                                                                : "zlib data cut short")
                                                 : "zlib error");
        if (got != usize)
            return mcl_errbuf(err, len, MCL_ERR_FORMAT,
                              "%s: block %zu inflates to %zu bytes, the index says %u", what, e,
                              got, usize);
        out->n = base + got;
    }
    return MCL_OK;
}

/* ---- markup ---- */

typedef enum { TAG_INLINE, TAG_SPACE, TAG_LINE, TAG_SKIP } tag_kind;

static tag_kind classify(const char *name, size_t k)
{
    static const char *const line[] = {"div", "p", "title", "chapter", "lg", "l", "lb", "br",
                                       "list", "item", "table", "row", "head", "verse",
                                       "h1", "h2", "h3", "h4", "h5", "h6", "li", "ul", "ol",
                                       "tr", "blockquote", "pb", NULL};
    static const char *const skip[] = {"note", "rdg", NULL};
    static const char *const inl[] = {"w", "transChange", "divineName", "hi", "q", "seg",
                                      "foreign", "reference", "name", "catchWord", "a", "b",
                                      "i", "u", "font", "span", "abbr", "sup", "sub", "small",
                                      "em", "strong", "scripRef", "sync", "added", "index",
                                      "milestone", "mentioned", "inscription", "date",
                                      "rdgGroup", "figure", "term", "sc", "scripContext",
                                      NULL};
    for (int i = 0; skip[i]; i++)
        if (strlen(skip[i]) == k && strncasecmp(name, skip[i], k) == 0) return TAG_SKIP;
    for (int i = 0; line[i]; i++)
        if (strlen(line[i]) == k && strncasecmp(name, line[i], k) == 0) return TAG_LINE;
    for (int i = 0; inl[i]; i++)
        if (strlen(inl[i]) == k && strncmp(name, inl[i], k) == 0) return TAG_INLINE;
    return TAG_SPACE;
}

typedef struct strip_state {
    mcl_buf *out;
    int pend;     /* 0 nothing, 1 a space, 2 a line end before the next text */
    int at_start; /* nothing written on the current line yet */
} strip_state;

static mcl_status emit(strip_state *S, const uint8_t *p, size_t k)
{
    mcl_status st = MCL_OK;
    if (!S->at_start && S->pend) st = mcl_buf_addc(S->out, S->pend == 2 ? '\n' : ' ');
    S->pend = 0;
    S->at_start = 0;
    if (st == MCL_OK) st = mcl_buf_add(S->out, p, k);
    return st;
}

static mcl_status emit_cp(strip_state *S, uint32_t cp)
{
    uint8_t u[4];
    size_t k;
    if (cp == 0 || (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) cp = 0xFFFD;
    if (cp < 0x80) {
        u[0] = (uint8_t)cp;
        k = 1;
    } else if (cp < 0x800) {
        u[0] = (uint8_t)(0xC0 | (cp >> 6));
        u[1] = (uint8_t)(0x80 | (cp & 0x3F));
        k = 2;
    } else if (cp < 0x10000) {
        u[0] = (uint8_t)(0xE0 | (cp >> 12));
        u[1] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
        u[2] = (uint8_t)(0x80 | (cp & 0x3F));
        k = 3;
    } else {
        u[0] = (uint8_t)(0xF0 | (cp >> 18));
        u[1] = (uint8_t)(0x80 | ((cp >> 12) & 0x3F));
        u[2] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
        u[3] = (uint8_t)(0x80 | (cp & 0x3F));
        k = 4;
    }
    if (cp == ' ') { /* &#32; / &nbsp; count as a space */
        if (!S->pend) S->pend = 1;
        return MCL_OK;
    }
    return emit(S, u, k);
}

/* An entity at s[0] == '&': its length in *k and its code point, or 0 when not one. */
static uint32_t entity(const uint8_t *s, size_t n, size_t *k)
{
    size_t e = 1;
    while (e < n && e < 12 && s[e] != ';' && s[e] != '&' && s[e] != '<' && s[e] > ' ') e++;
    if (e >= n || s[e] != ';') return 0;
    *k = e + 1;
    const char *name = (const char *)s + 1;
    size_t m = e - 1;
    static const struct {
        const char *n;
        uint32_t cp;
    } named[] = {{"amp", '&'}, {"lt", '<'}, {"gt", '>'}, {"quot", '"'}, {"apos", '\''}, {"nbsp", ' '}};
    for (size_t i = 0; i < sizeof named / sizeof named[0]; i++)
        if (strlen(named[i].n) == m && strncmp(name, named[i].n, m) == 0) return named[i].cp;
    if (m >= 2 && name[0] == '#') {
        uint32_t v = 0;
        int hex = name[1] == 'x' || name[1] == 'X';
        size_t i = hex ? 2 : 1;
        if (i >= m) return 0;
        for (; i < m; i++) {
            int c = name[i], d;
            if (c >= '0' && c <= '9') d = c - '0';
            else if (hex && c >= 'a' && c <= 'f') d = c - 'a' + 10;
            else if (hex && c >= 'A' && c <= 'F') d = c - 'A' + 10;
            else return 0;
            v = v * (hex ? 16u : 10u) + (uint32_t)d;
            if (v > 0x10FFFF) return 0;
        }
        return v ? v : 0;
    }
    return 0;
}

mcl_status mcl_sword_strip(const uint8_t *s, size_t n, mcl_buf *out)
{
    strip_state S = {out, 0, out->n == 0 || out->p[out->n - 1] == '\n'};
    int skip = 0; /* depth inside note / rdg */
    mcl_status st = MCL_OK;
    size_t i = 0;
    while (i < n && st == MCL_OK) {
        uint8_t c = s[i];
        if (c == '<') {
            /* a comment, a processing instruction, or a tag up to its '>' (quotes respected) */
            size_t j = i + 1;
            if (n - i >= 4 && memcmp(s + i, "<!--", 4) == 0) {
                const uint8_t *q = NULL;
                for (size_t t = i + 4; t + 2 < n && !q; t++)
                    if (s[t] == '-' && s[t + 1] == '-' && s[t + 2] == '>') q = s + t;
                i = q ? (size_t)(q - s) + 3 : n;
                continue;
            }
            uint8_t quote = 0;
            while (j < n && (quote || s[j] != '>')) {
                if (quote) {
                    if (s[j] == quote) quote = 0;
                } else if (s[j] == '"' || s[j] == '\'')
                    quote = s[j];
                j++;
            }
            if (j >= n) { /* no '>': not markup, keep the '<' */
                if (!skip) st = emit(&S, s + i, 1);
                i++;
                continue;
            }
            size_t a = i + 1;
            int closing = 0;
            if (a < j && s[a] == '/') {
                closing = 1;
                a++;
            }
            size_t b = a;
            while (b < j && s[b] != ' ' && s[b] != '\t' && s[b] != '\n' && s[b] != '\r' &&
                   s[b] != '/' && s[b] != '>')
                b++;
            int self_closing = j > i + 1 && s[j - 1] == '/';
            tag_kind kind = b > a ? classify((const char *)s + a, b - a) : TAG_INLINE;
            if (a < j && (s[a] == '?' || s[a] == '!')) kind = TAG_INLINE;
            if (kind == TAG_SKIP) {
                if (closing) {
                    if (skip > 0) skip--;
                } else if (!self_closing) {
                    if (skip < 1000) skip++;
                }
            } else if (!skip) {
                if (kind == TAG_LINE) S.pend = 2;
                else if (kind == TAG_SPACE && !S.pend) S.pend = 1;
            }
            i = j + 1;
            continue;
        }
        if (skip) {
            i++;
            continue;
        }
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
            if (!S.pend) S.pend = 1;
            i++;
            continue;
        }
        if (c == '&') {
            size_t k = 0;
            uint32_t cp = entity(s + i, n - i, &k);
            if (cp) {
                st = emit_cp(&S, cp);
                i += k;
                continue;
            }
        }
        /* a run of ordinary bytes */
        size_t j = i + 1;
        while (j < n && s[j] != '<' && s[j] != '&' && s[j] != ' ' && s[j] != '\t' &&
               s[j] != '\n' && s[j] != '\r')
            j++;
        st = emit(&S, s + i, j - i);
        i = j;
    }
    if (st == MCL_OK) st = mcl_buf_end_line(out);
    return st;
}

/* ---- a module directory ---- */

static mcl_status read_raw(const char *path, mcl_buf *b, char *err, size_t len)
{
    FILE *f = NULL;
    uint64_t size = 0;
    mcl_status st = mcl_fopen_regular(path, &f, &size, err, len);
    if (st != MCL_OK) return st;
    if (size > MCL_TEXT_MAX_SOURCE) {
        fclose(f);
        return mcl_errbuf(err, len, MCL_ERR_INVALID, "%s: %llu bytes: larger than accepted", path,
                          (unsigned long long)size);
    }
    uint8_t *p = malloc(size ? (size_t)size : 1);
    if (!p) {
        fclose(f);
        return mcl_errbuf(err, len, MCL_ERR_OOM, "%s: out of memory", path);
    }
    size_t got = size ? fread(p, 1, (size_t)size, f) : 0;
    int bad = ferror(f);
    fclose(f);
    if (bad || got != size) {
        free(p);
        return mcl_errbuf(err, len, MCL_ERR_IO, "%s: read error", path);
    }
    b->p = p;
    b->n = b->cap = (size_t)size;
    return MCL_OK;
}

mcl_status mcl_sword_module(const char *dir, mcl_buf *out, char *err, size_t len)
{
    static const char *const parts[2] = {"ot", "nt"};
    static const char letters[3] = {'b', 'c', 'v'};
    int found = 0;
    for (int p = 0; p < 2; p++)
        for (int l = 0; l < 3; l++) {
            char idx[4200], dat[4200];
            snprintf(idx, sizeof idx, "%s/%s.%czs", dir, parts[p], letters[l]);
            snprintf(dat, sizeof dat, "%s/%s.%czz", dir, parts[p], letters[l]);
            struct stat a, b;
            if (stat(idx, &a) != 0 || stat(dat, &b) != 0 || a.st_size == 0) continue;
            mcl_buf bi = {0}, bd = {0}, raw = {0};
            mcl_status st = read_raw(idx, &bi, err, len);
            if (st == MCL_OK) st = read_raw(dat, &bd, err, len);
            if (st == MCL_OK) st = mcl_sword_blocks(bi.p, bi.n, bd.p, bd.n, idx, &raw, err, len);
            if (st == MCL_OK) {
                st = mcl_sword_strip(raw.p, raw.n, out);
                if (st != MCL_OK)
                    st = mcl_errbuf(err, len, st, "%s: %s", dir,
                                    st == MCL_ERR_OOM ? "out of memory" : "too much text");
            }
            mcl_buf_free(&bi);
            mcl_buf_free(&bd);
            mcl_buf_free(&raw);
            if (st != MCL_OK) return st;
            found++;
            break; /* one block kind per testament */
        }
    if (!found)
        return mcl_errbuf(err, len, MCL_ERR_FORMAT,
                          "%s: no SWORD block files (ot/nt.bzs+bzz, .czs+czz or .vzs+vzz)", dir);
    return MCL_OK;
}
