/* text_rdata.c — the character vectors of an R lazy-load database (textprep.h).
 *
 * An R package's data/Rdata.rdb holds its data objects one after the other, each a 4-byte
 * big-endian length of the serialized object and the object compressed (zlib in the packages
 * used here, written before R had a type byte). The serialization (R Internals, "Serialization
 * formats") is XDR: "X\n", the format version (2 or 3), two R versions, for version 3 the
 * native encoding, then the object as a tree of items. Each item starts with a 32-bit flags
 * word: the type in the low 8 bits, "has attributes" (bit 9), "has tag" (bit 10), and the
 * gp levels from bit 12 (for a CHARSXP its encoding: Latin-1 bit 2, UTF-8 bit 3). Only what is
 * needed to walk every kind of item is read; the strings of character vectors are kept. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "textprep.h"

enum {
    NILSXP = 0, SYMSXP = 1, LISTSXP = 2, CLOSXP = 3, ENVSXP = 4, PROMSXP = 5, LANGSXP = 6,
    SPECIALSXP = 7, BUILTINSXP = 8, CHARSXP = 9, LGLSXP = 10, INTSXP = 13, REALSXP = 14,
    CPLXSXP = 15, STRSXP = 16, DOTSXP = 17, VECSXP = 19, EXPRSXP = 20, BCODESXP = 21,
    EXTPTRSXP = 22, WEAKREFSXP = 23, RAWSXP = 24, S4SXP = 25,
    ALTREP_SXP = 238, ATTRLISTSXP = 239, ATTRLANGSXP = 240, BASEENV_SXP = 241,
    EMPTYENV_SXP = 242, BCREPREF = 243, BCREPDEF = 244, GENERICREFSXP = 245,
    CLASSREFSXP = 246, PERSISTSXP = 247, PACKAGESXP = 248, NAMESPACESXP = 249,
    BASENAMESPACE_SXP = 250, MISSINGARG_SXP = 251, UNBOUNDVALUE_SXP = 252,
    GLOBALENV_SXP = 253, NILVALUE_SXP = 254, REFSXP = 255
};

#define MAX_DEPTH 200

typedef struct rs {
    const uint8_t *p;
    size_t n, i;
    mcl_buf *out;
    int64_t strings;
    const char *what;
    char *err;
    size_t len;
} rs;

static mcl_status cut_short(rs *r)
{
    return mcl_errbuf(r->err, r->len, MCL_ERR_FORMAT, "%s: R serialization cut short at byte %zu",
                      r->what, r->i);
}

static mcl_status rd_int(rs *r, int32_t *v)
{
    if (r->n - r->i < 4) return cut_short(r);
    const uint8_t *q = r->p + r->i;
    *v = (int32_t)((uint32_t)q[0] << 24 | (uint32_t)q[1] << 16 | (uint32_t)q[2] << 8 | q[3]);
    r->i += 4;
    return MCL_OK;
}

/* A vector length: an int, or -1 and then two ints (a long vector). */
static mcl_status rd_len(rs *r, uint64_t *v)
{
    int32_t a = 0;
    mcl_status st = rd_int(r, &a);
    if (st != MCL_OK) return st;
    if (a >= 0) {
        *v = (uint64_t)a;
        return MCL_OK;
    }
    if (a != -1)
        return mcl_errbuf(r->err, r->len, MCL_ERR_FORMAT, "%s: negative length %d at byte %zu",
                          r->what, a, r->i - 4);
    int32_t hi = 0, lo = 0;
    if ((st = rd_int(r, &hi)) != MCL_OK || (st = rd_int(r, &lo)) != MCL_OK) return st;
    *v = (uint64_t)(uint32_t)hi << 32 | (uint32_t)lo;
    return MCL_OK;
}

/* Skip count elements of size bytes each, checking they are there. */
static mcl_status skip(rs *r, uint64_t count, size_t size)
{
    if (count > (r->n - r->i) / size) return cut_short(r);
    r->i += (size_t)(count * size);
    return MCL_OK;
}

static mcl_status add_string(rs *r, const uint8_t *s, size_t k, int latin1)
{
    mcl_status st = MCL_OK;
    if (!latin1) st = mcl_buf_add(r->out, s, k);
    else
        for (size_t i = 0; i < k && st == MCL_OK; i++) {
            if (s[i] < 0x80) st = mcl_buf_addc(r->out, s[i]);
            else {
                uint8_t u[2] = {(uint8_t)(0xC0 | (s[i] >> 6)), (uint8_t)(0x80 | (s[i] & 0x3F))};
                st = mcl_buf_add(r->out, u, 2);
            }
        }
    if (st == MCL_OK) st = mcl_buf_addc(r->out, '\n');
    if (st != MCL_OK)
        return mcl_errbuf(r->err, r->len, st, "%s: %s", r->what,
                          st == MCL_ERR_OOM ? "out of memory" : "more text than accepted");
    r->strings++;
    return MCL_OK;
}

static mcl_status item(rs *r, int keep, int depth);

/* The rest of an item whose flags word was read; keep: collect its strings. */
static mcl_status item_body(rs *r, int32_t flags, int keep, int depth)
{
    if (depth > MAX_DEPTH)
        return mcl_errbuf(r->err, r->len, MCL_ERR_FORMAT, "%s: objects nested deeper than %d",
                          r->what, MAX_DEPTH);
    int type = flags & 0xFF, has_attr = (flags >> 9) & 1, has_tag = (flags >> 10) & 1;
    int levels = (int)((uint32_t)flags >> 12);
    mcl_status st = MCL_OK;
    uint64_t n = 0;
    int32_t v = 0;
    switch (type) {
    case NILVALUE_SXP: case EMPTYENV_SXP: case BASEENV_SXP: case GLOBALENV_SXP:
    case UNBOUNDVALUE_SXP: case MISSINGARG_SXP: case BASENAMESPACE_SXP:
        return MCL_OK;
    case REFSXP:
        return ((uint32_t)flags >> 8) == 0 ? rd_int(r, &v) : MCL_OK;
    case PERSISTSXP: case PACKAGESXP: case NAMESPACESXP:
        if ((st = rd_int(r, &v)) != MCL_OK) return st;
        if (v != 0)
            return mcl_errbuf(r->err, r->len, MCL_ERR_FORMAT, "%s: bad name vector at byte %zu",
                              r->what, r->i - 4);
        if ((st = rd_int(r, &v)) != MCL_OK) return st;
        if (v < 0 || (size_t)v > (r->n - r->i) / 4) return cut_short(r);
        for (int32_t k = 0; k < v && st == MCL_OK; k++) st = item(r, 0, depth + 1);
        return st;
    case SYMSXP:
        return item(r, 0, depth + 1);
    case ENVSXP:
        if ((st = rd_int(r, &v)) != MCL_OK) return st; /* locked */
        for (int k = 0; k < 4 && st == MCL_OK; k++) st = item(r, 0, depth + 1);
        return st;
    case LISTSXP: case LANGSXP: case CLOSXP: case PROMSXP: case DOTSXP: case ATTRLANGSXP:
    case ATTRLISTSXP:
        /* a pairlist: attributes, tag, CAR, then the CDR, walked as a loop */
        for (;;) {
            if (has_attr && (st = item(r, 0, depth + 1)) != MCL_OK) return st;
            if (has_tag && (st = item(r, 0, depth + 1)) != MCL_OK) return st;
            if ((st = item(r, keep, depth + 1)) != MCL_OK) return st;
            if ((st = rd_int(r, &flags)) != MCL_OK) return st;
            type = flags & 0xFF;
            if (type != LISTSXP && type != LANGSXP && type != CLOSXP && type != PROMSXP &&
                type != DOTSXP && type != ATTRLANGSXP && type != ATTRLISTSXP)
                return item_body(r, flags, keep, depth + 1);
            has_attr = (flags >> 9) & 1;
            has_tag = (flags >> 10) & 1;
        }
    case ALTREP_SXP:
        for (int k = 0; k < 3 && st == MCL_OK; k++) st = item(r, 0, depth + 1);
        return st;
    case EXTPTRSXP:
        if ((st = item(r, 0, depth + 1)) != MCL_OK) return st;
        st = item(r, 0, depth + 1);
        break;
    case WEAKREFSXP: case S4SXP:
        break;
    case SPECIALSXP: case BUILTINSXP:
        if ((st = rd_int(r, &v)) != MCL_OK) return st;
        if (v < 0) return cut_short(r);
        st = skip(r, (uint64_t)v, 1);
        break;
    case CHARSXP:
        if ((st = rd_int(r, &v)) != MCL_OK) return st;
        if (v == -1) break; /* NA_character_ */
        if (v < 0 || (size_t)v > r->n - r->i) return cut_short(r);
        if (keep) st = add_string(r, r->p + r->i, (size_t)v, (levels & 4) && !(levels & 8));
        r->i += (size_t)v;
        break;
    case LGLSXP: case INTSXP:
        if ((st = rd_len(r, &n)) == MCL_OK) st = skip(r, n, 4);
        break;
    case REALSXP:
        if ((st = rd_len(r, &n)) == MCL_OK) st = skip(r, n, 8);
        break;
    case CPLXSXP:
        if ((st = rd_len(r, &n)) == MCL_OK) st = skip(r, n, 16);
        break;
    case RAWSXP:
        if ((st = rd_len(r, &n)) == MCL_OK) st = skip(r, n, 1);
        break;
    case STRSXP: case VECSXP: case EXPRSXP:
        if ((st = rd_len(r, &n)) != MCL_OK) return st;
        if (n > (r->n - r->i) / 4) return cut_short(r); /* each element takes 4 bytes or more */
        for (uint64_t k = 0; k < n && st == MCL_OK; k++) st = item(r, keep, depth + 1);
        break;
    case BCODESXP: case BCREPDEF: case BCREPREF:
        return mcl_errbuf(r->err, r->len, MCL_ERR_UNSUPPORTED,
                          "%s: byte code (type %d) at byte %zu is not supported", r->what, type,
                          r->i - 4);
    default:
        return mcl_errbuf(r->err, r->len, MCL_ERR_FORMAT,
                          "%s: unknown R object type %d at byte %zu", r->what, type, r->i - 4);
    }
    if (st == MCL_OK && has_attr) st = item(r, 0, depth + 1);
    return st;
}

static mcl_status item(rs *r, int keep, int depth)
{
    int32_t flags = 0;
    mcl_status st = rd_int(r, &flags);
    if (st != MCL_OK) return st;
    return item_body(r, flags, keep, depth);
}

mcl_status mcl_rserial_strings(const uint8_t *s, size_t n, const char *what, mcl_buf *out,
                               int64_t *n_strings, char *err, size_t len)
{
    rs r = {s, n, 0, out, 0, what, err, len};
    if (n < 2 || s[1] != '\n' || (s[0] != 'X' && s[0] != 'A' && s[0] != 'B'))
        return mcl_errbuf(err, len, MCL_ERR_FORMAT,
                          "%s: not an R serialization (no \"X\\n\" header)", what);
    if (s[0] != 'X')
        return mcl_errbuf(err, len, MCL_ERR_UNSUPPORTED,
                          "%s: R serialization format '%c' (only XDR, 'X', is read)", what, s[0]);
    r.i = 2;
    int32_t version, wv, mv;
    mcl_status st = rd_int(&r, &version);
    if (st == MCL_OK) st = rd_int(&r, &wv);
    if (st == MCL_OK) st = rd_int(&r, &mv);
    if (st != MCL_OK) return st;
    if (version != 2 && version != 3)
        return mcl_errbuf(err, len, MCL_ERR_UNSUPPORTED,
                          "%s: R serialization version %d (2 and 3 are read)", what, version);
    if (version == 3) {
        int32_t k;
        if ((st = rd_int(&r, &k)) != MCL_OK) return st;
        if (k < 0 || k > 64 || (size_t)k > r.n - r.i)
            return mcl_errbuf(err, len, MCL_ERR_FORMAT, "%s: bad native encoding header", what);
        r.i += (size_t)k;
    }
    st = item(&r, 1, 0);
    if (st == MCL_OK && r.i != r.n)
        st = mcl_errbuf(err, len, MCL_ERR_FORMAT, "%s: %zu bytes after the object", what,
                        r.n - r.i);
    if (n_strings) *n_strings = r.strings;
    return st;
}

mcl_status mcl_rdb_strings(const uint8_t *rdb, size_t n, const char *what, mcl_buf *out,
                           int *n_objects, char *err, size_t len)
{
    size_t pos = 0;
    int objs = 0;
    mcl_status st = MCL_OK;
    while (pos < n && st == MCL_OK) {
        if (n - pos < 5)
            return mcl_errbuf(err, len, MCL_ERR_FORMAT, "%s: object %d at byte %zu is cut short",
                              what, objs, pos);
        const uint8_t *q = rdb + pos;
        uint32_t ulen = (uint32_t)q[0] << 24 | (uint32_t)q[1] << 16 | (uint32_t)q[2] << 8 | q[3];
        if (ulen > MCL_TEXT_MAX_SOURCE)
            return mcl_errbuf(err, len, MCL_ERR_INVALID,
                              "%s: object %d claims %u bytes: more than accepted", what, objs, ulen);
        size_t data = pos + 4;
        uint8_t t = q[4];
        /* deflate expands at most 1032:1 (stored: 1:1); more is a lie, refused before
         * allocating */
        if ((uint64_t)ulen > (uint64_t)(n - pos) * 1032 + 64)
            return mcl_errbuf(err, len, MCL_ERR_FORMAT,
                              "%s: object %d claims %u bytes from the %zu bytes left", what, objs,
                              ulen, n - pos);
        if (t == '2' && n - pos >= 8 && memcmp(q + 5, "BZh", 3) == 0)
            return mcl_errbuf(err, len, MCL_ERR_UNSUPPORTED,
                              "%s: object %d is bzip2-compressed (only zlib is read)", what, objs);
        if (t == 'X' && n - pos >= 11 && memcmp(q + 5, "\xFD" "7zXZ", 5) == 0)
            return mcl_errbuf(err, len, MCL_ERR_UNSUPPORTED,
                              "%s: object %d is xz-compressed (only zlib is read)", what, objs);
        uint8_t *obj = malloc(ulen ? ulen : 1);
        if (!obj) return mcl_errbuf(err, len, MCL_ERR_OOM, "%s: out of memory", what);
        size_t used;
        if (t == '0') { /* stored */
            if (n - pos - 5 < ulen) {
                free(obj);
                return mcl_errbuf(err, len, MCL_ERR_FORMAT, "%s: object %d is cut short", what, objs);
            }
            memcpy(obj, q + 5, ulen);
            used = 5 + (size_t)ulen;
        } else {
            if (t == 'Z') data++;
            z_stream z;
            memset(&z, 0, sizeof z);
            if (inflateInit(&z) != Z_OK) {
                free(obj);
                return mcl_errbuf(err, len, MCL_ERR_OOM, "%s: zlib: out of memory", what);
            }
            size_t avail = n - data;
            z.next_in = (Bytef *)(uintptr_t)(rdb + data);
            z.avail_in = avail > 0xFFFFFFFFu ? 0xFFFFFFFFu : (uInt)avail;
            uint8_t extra;
            z.next_out = obj;
            z.avail_out = ulen;
            int r = inflate(&z, Z_FINISH);
            if (r == Z_BUF_ERROR && z.avail_out == 0) { /* more output than announced? */
                z.next_out = &extra;
                z.avail_out = 1;
                r = inflate(&z, Z_FINISH);
                if (r == Z_STREAM_END && z.avail_out == 0) r = Z_BUF_ERROR;
            }
            size_t got = (size_t)z.total_out, in = (size_t)z.total_in;
            inflateEnd(&z);
            if (r != Z_STREAM_END || got != ulen) {
                free(obj);
                return mcl_errbuf(err, len, MCL_ERR_FORMAT,
                                  "%s: object %d at byte %zu: %s", what, objs, pos,
                                  r == Z_DATA_ERROR ? "corrupt zlib data"
                                  : r == Z_STREAM_END ? "shorter than its length says"
                                  : got >= ulen ? "longer than its length says"
                                                : "zlib data cut short");
            }
            used = (data - pos) + in;
        }
        char w[512];
        snprintf(w, sizeof w, "%s, object %d", what, objs);
        st = mcl_rserial_strings(obj, ulen, w, out, NULL, err, len);
        free(obj);
        pos += used;
        objs++;
    }
    if (n_objects) *n_objects = objs;
    if (st == MCL_OK && objs == 0)
        st = mcl_errbuf(err, len, MCL_ERR_FORMAT, "%s: no objects", what);
    return st;
}
