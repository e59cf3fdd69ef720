/* idx.c — IDX files: strict reading (plain or gzip, from a file or from memory) and atomic
 * writing. See idx.h. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include "idx.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "util.h"

/* a message into the caller's error buffer (status.h) */
#define set_err(err, len, ...) ((void)mcl_errbuf((err), (len), MCL_OK, __VA_ARGS__))

/* ---- byte sources: a gzFile (plain or gzip file), plain memory, gzip memory ---- */

enum { SRC_GZFILE, SRC_MEM, SRC_MEMGZ };

typedef struct src {
    int kind;
    const char *name;
    gzFile gz;
    const uint8_t *mem;
    size_t mem_n, mem_pos;
    z_stream zs;
    int zs_open, zs_eof;
    char *err;
    size_t len;
} src;

/* zlib's gzerror() message without its "<fd:N>: " prefix. */
static const char *gz_msg(gzFile gz, int *errnum)
{
    const char *m = gzerror(gz, errnum);
    if (!m || !*m) return "zlib error";
    if (strncmp(m, "<fd:", 4) == 0) {
        const char *c = strstr(m, ": ");
        if (c) m = c + 2;
    }
    return m;
}

/* Read up to n bytes. Returns the count read (less than n only at the end of the data), or
 * -1 after writing an error message. */
static int64_t src_read(src *s, void *dst, size_t n)
{
    uint8_t *out = dst;
    size_t got = 0;
    if (s->kind == SRC_MEM) {
        size_t avail = s->mem_n - s->mem_pos;
        got = n < avail ? n : avail;
        if (got) memcpy(out, s->mem + s->mem_pos, got);
        s->mem_pos += got;
        return (int64_t)got;
    }
    if (s->kind == SRC_GZFILE) {
        while (got < n) {
            size_t want = n - got;
            if (want > (1u << 30)) want = 1u << 30;
            int r = gzread(s->gz, out + got, (unsigned)want);
            if (r < 0) {
                int e = Z_OK;
                const char *m = gz_msg(s->gz, &e);
                set_err(s->err, s->len, "%s: %s (%s)", s->name,
                        e == Z_DATA_ERROR ? "corrupt gzip data" : "read error", m);
                return -1;
            }
            got += (size_t)r;
            if ((size_t)r < want) break;
        }
        if (got < n) {
            int e = Z_OK;
            const char *m = gz_msg(s->gz, &e);
            if (e != Z_OK) {
                set_err(s->err, s->len, "%s: %s (%s)", s->name,
                        e == Z_BUF_ERROR ? "truncated gzip stream" : "corrupt gzip data", m);
                return -1;
            }
        }
        return (int64_t)got;
    }
    /* gzip in memory: inflate; concatenated members are read in turn and bytes after the
     * last member that do not start a new one are ignored (as gzread does). */
    while (got < n && !s->zs_eof) {
        if (s->zs.avail_in == 0 && s->mem_pos < s->mem_n) {
            size_t chunk = s->mem_n - s->mem_pos;
            if (chunk > (1u << 30)) chunk = 1u << 30;
            s->zs.next_in = (Bytef *)(uintptr_t)(s->mem + s->mem_pos);
            s->zs.avail_in = (uInt)chunk;
            s->mem_pos += chunk;
        }
        size_t want = n - got;
        if (want > (1u << 30)) want = 1u << 30;
        s->zs.next_out = out + got;
        s->zs.avail_out = (uInt)want;
        int r = inflate(&s->zs, Z_NO_FLUSH);
        got += want - s->zs.avail_out;
        if (r == Z_STREAM_END) {
            size_t left = s->zs.avail_in + (s->mem_n - s->mem_pos);
            const uint8_t *next = s->zs.avail_in ? s->zs.next_in : s->mem + s->mem_pos;
            if (left >= 2 && next[0] == 0x1f && next[1] == 0x8b) {
                if (inflateReset(&s->zs) != Z_OK) {
                    set_err(s->err, s->len, "%s: zlib error", s->name);
                    return -1;
                }
            } else {
                s->zs_eof = 1;
            }
            continue;
        }
        if (r == Z_OK) continue;
        if (r == Z_BUF_ERROR && s->zs.avail_in == 0 && s->mem_pos >= s->mem_n) {
            set_err(s->err, s->len, "%s: truncated gzip stream (unexpected end of data)",
                    s->name);
            return -1;
        }
        if (r == Z_MEM_ERROR) {
            set_err(s->err, s->len, "%s: out of memory inflating gzip data", s->name);
            return -1;
        }
        set_err(s->err, s->len, "%s: corrupt gzip data (%s)", s->name,
                s->zs.msg ? s->zs.msg : "zlib error");
        return -1;
    }
    return (int64_t)got;
}

static const char *type_name(int t)
{
    switch (t) {
    case 0x08: return "ubyte";
    case 0x09: return "signed byte";
    case 0x0B: return "int16";
    case 0x0C: return "int32";
    case 0x0D: return "float32";
    case 0x0E: return "float64";
    default: return "unknown";
    }
}

static mcl_status parse(src *s, size_t max_bytes, mcl_idx *out)
{
    const char *nm = s->name;
    char *err = s->err;
    size_t len = s->len;
    uint8_t hdr[4 + 4 * MCL_IDX_MAX_NDIM];
    int64_t got = src_read(s, hdr, 4);
    if (got < 0) return MCL_ERR_FORMAT;
    if (got == 0) {
        set_err(err, len, "%s: empty file (not an IDX file)", nm);
        return MCL_ERR_FORMAT;
    }
    if (got < 4) {
        set_err(err, len, "%s: truncated header: %d of 4 magic bytes", nm, (int)got);
        return MCL_ERR_FORMAT;
    }
    uint32_t magic = (uint32_t)hdr[0] << 24 | (uint32_t)hdr[1] << 16 | (uint32_t)hdr[2] << 8 |
                     hdr[3];
    if (hdr[0] != 0 || hdr[1] != 0) {
        set_err(err, len,
                "%s: bad magic 0x%08x: not an IDX file (expected 0x0000TTDD, e.g. 0x00000803)",
                nm, (unsigned)magic);
        return MCL_ERR_FORMAT;
    }
    int type = hdr[2], ndim = hdr[3];
    if (type != MCL_IDX_UBYTE && type != MCL_IDX_INT32) {
        set_err(err, len,
                "%s: magic 0x%08x: element type 0x%02x (%s) is not supported "
                "(ubyte 0x08 and int32 0x0C are)",
                nm, (unsigned)magic, type, type_name(type));
        return MCL_ERR_FORMAT;
    }
    if (ndim < 1 || ndim > MCL_IDX_MAX_NDIM) {
        set_err(err, len, "%s: magic 0x%08x: %d dimensions (1 to %d are supported)", nm,
                (unsigned)magic, ndim, MCL_IDX_MAX_NDIM);
        return MCL_ERR_FORMAT;
    }
    got = src_read(s, hdr + 4, (size_t)(4 * ndim));
    if (got < 0) return MCL_ERR_FORMAT;
    if (got < 4 * ndim) {
        set_err(err, len, "%s: truncated header: %d of %d dimension bytes", nm, (int)got,
                4 * ndim);
        return MCL_ERR_FORMAT;
    }
    size_t esize = type == MCL_IDX_INT32 ? 4 : 1;
    if (max_bytes == 0) max_bytes = MCL_IDX_MAX_BYTES;
    int64_t dims[MCL_IDX_MAX_NDIM] = {1, 1, 1};
    uint64_t count = 1;
    int too_big = 0;
    char shape[96];
    size_t sk = 0;
    for (int d = 0; d < ndim; d++) {
        const uint8_t *p = hdr + 4 + 4 * d;
        uint32_t v = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
        sk += (size_t)snprintf(shape + sk, sizeof shape - sk, d ? "x%u" : "%u", (unsigned)v);
        if (v == 0) {
            set_err(err, len, "%s: dimension %d of %d is 0 (empty data is not accepted)", nm,
                    d + 1, ndim);
            return MCL_ERR_FORMAT;
        }
        dims[d] = (int64_t)v;
        /* v < 2^32 and count <= max_bytes <= SIZE_MAX/2 before each step: no overflow in
         * 64 bits as long as we stop once the limit is passed */
        if (!too_big) {
            count *= v;
            if (count > (uint64_t)(max_bytes / esize)) too_big = 1;
        }
    }
    if (too_big) {
        set_err(err, len, "%s: dimensions %s (%s) exceed the size limit of %zu bytes", nm,
                shape, type_name(type), max_bytes);
        return MCL_ERR_FORMAT;
    }
    size_t total = (size_t)count * esize;
    /* Grow the buffer as data arrives, so a short file with huge dimensions does not make
     * us allocate what it claims. */
    size_t cap = total < ((size_t)1 << 20) ? total : ((size_t)1 << 20);
    uint8_t *buf = malloc(cap);
    if (!buf) {
        set_err(err, len, "%s: out of memory (%zu bytes)", nm, cap);
        return MCL_ERR_OOM;
    }
    size_t have = 0;
    while (have < total) {
        if (have == cap) {
            size_t ncap = cap * 2 < total ? cap * 2 : total;
            uint8_t *nb = realloc(buf, ncap);
            if (!nb) {
                free(buf);
                set_err(err, len, "%s: out of memory (%zu bytes)", nm, ncap);
                return MCL_ERR_OOM;
            }
            buf = nb;
            cap = ncap;
        }
        got = src_read(s, buf + have, cap - have);
        if (got < 0) {
            free(buf);
            return MCL_ERR_FORMAT;
        }
        have += (size_t)got;
        if (have < cap) break; /* a short read: the end of the data */
    }
    if (have < total) {
        free(buf);
        set_err(err, len, "%s: truncated data: %zu of %zu bytes for %s %s", nm, have, total,
                type_name(type), shape);
        return MCL_ERR_FORMAT;
    }
    uint8_t extra[256];
    got = src_read(s, extra, sizeof extra);
    if (got != 0) {
        free(buf);
        if (got > 0)
            set_err(err, len,
                    "%s: %s%d trailing bytes after the %zu data bytes of %s %s "
                    "(the file is longer than its header says)",
                    nm, got == (int64_t)sizeof extra ? "at least " : "", (int)got, total,
                    type_name(type), shape);
        return MCL_ERR_FORMAT;
    }
    if (type == MCL_IDX_INT32) {
        for (size_t i = 0; i < (size_t)count; i++) {
            const uint8_t *p = buf + 4 * i;
            uint32_t v = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
            int32_t sv;
            memcpy(&sv, &v, 4);
            memcpy(buf + 4 * i, &sv, 4);
        }
    }
    out->type = type;
    out->ndim = ndim;
    for (int d = 0; d < MCL_IDX_MAX_NDIM; d++) out->dims[d] = dims[d];
    out->count = (int64_t)count;
    out->data = buf;
    return MCL_OK;
}

static void clear(mcl_idx *x)
{
    memset(x, 0, sizeof *x);
}

mcl_status mcl_idx_read(const char *path, size_t max_bytes, mcl_idx *out, char *err, size_t len)
{
    if (!out) {
        set_err(err, len, "idx: null argument");
        return MCL_ERR_NULL;
    }
    clear(out);
    if (!path) {
        set_err(err, len, "idx: null path");
        return MCL_ERR_NULL;
    }
    /* gzopen cannot tell "no such file" from other failures: open the descriptor
     * ourselves for a clear message */
    int fd = -1;
    mcl_status ost = mcl_open_regular(path, O_CLOEXEC, &fd, NULL, err, len); /* no FIFO/device */
    if (ost != MCL_OK) return ost;
    gzFile gz = gzdopen(fd, "rb");
    if (!gz) {
        close(fd);
        set_err(err, len, "%s: cannot open (out of memory)", path);
        return MCL_ERR_OOM;
    }
    gzbuffer(gz, 1u << 17);
    src s;
    memset(&s, 0, sizeof s);
    s.kind = SRC_GZFILE;
    s.name = path;
    s.gz = gz;
    s.err = err;
    s.len = len;
    mcl_status st_ = parse(&s, max_bytes, out);
    gzclose_r(gz);
    return st_;
}

mcl_status mcl_idx_read_mem(const void *buf, size_t n, const char *name, size_t max_bytes,
                            mcl_idx *out, char *err, size_t len)
{
    if (!out) {
        set_err(err, len, "idx: null argument");
        return MCL_ERR_NULL;
    }
    clear(out);
    if (!name) name = "<memory>";
    if (!buf && n) {
        set_err(err, len, "%s: null buffer", name);
        return MCL_ERR_NULL;
    }
    src s;
    memset(&s, 0, sizeof s);
    s.name = name;
    s.mem = buf;
    s.mem_n = n;
    s.err = err;
    s.len = len;
    s.kind = SRC_MEM;
    const uint8_t *b = buf;
    if (n >= 2 && b[0] == 0x1f && b[1] == 0x8b) {
        s.kind = SRC_MEMGZ;
        if (inflateInit2(&s.zs, 15 + 16) != Z_OK) {
            set_err(err, len, "%s: cannot start zlib", name);
            return MCL_ERR_OOM;
        }
        s.zs_open = 1;
    }
    mcl_status st = parse(&s, max_bytes, out);
    if (s.zs_open) inflateEnd(&s.zs);
    return st;
}

void mcl_idx_free(mcl_idx *x)
{
    if (!x) return;
    free(x->data);
    clear(x);
}

mcl_status mcl_idx_expect(const mcl_idx *x, const char *name, const char *what, int type,
                          int ndim, int64_t dim0, char *err, size_t len)
{
    if (!x || !x->data) {
        set_err(err, len, "%s: no data", name ? name : "idx");
        return MCL_ERR_NULL;
    }
    if (!name) name = "idx";
    if (!what) what = "data";
    if (type && x->type != type) {
        set_err(err, len, "%s: %s must be %s (IDX type 0x%02x), the file holds %s (0x%02x)",
                name, what, type_name(type), type, type_name(x->type), x->type);
        return MCL_ERR_FORMAT;
    }
    if (ndim && x->ndim != ndim) {
        set_err(err, len, "%s: %s must have %d dimension%s, the file has %d", name, what, ndim,
                ndim == 1 ? "" : "s", x->ndim);
        return MCL_ERR_FORMAT;
    }
    if (dim0 >= 0 && x->dims[0] != dim0) {
        set_err(err, len, "%s: %lld %s, expected %lld", name, (long long)x->dims[0], what,
                (long long)dim0);
        return MCL_ERR_FORMAT;
    }
    return MCL_OK;
}

/* Write all of buf to fd. 0 ok, -1 error (errno set). */
static int write_all(int fd, const void *buf, size_t n)
{
    const uint8_t *p = buf;
    while (n) {
        ssize_t w = write(fd, p, n > (1u << 30) ? (1u << 30) : n);
        if (w < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

mcl_status mcl_idx_write(const char *path, int type, int ndim, const int64_t *dims,
                         const void *data, int gzip, char *err, size_t len)
{
    if (!path || !dims || !data) {
        set_err(err, len, "idx write: null argument");
        return MCL_ERR_NULL;
    }
    if (type != MCL_IDX_UBYTE && type != MCL_IDX_INT32) {
        set_err(err, len, "%s: cannot write IDX type 0x%02x (ubyte 0x08 and int32 0x0C only)",
                path, type);
        return MCL_ERR_INVALID;
    }
    if (ndim < 1 || ndim > MCL_IDX_MAX_NDIM) {
        set_err(err, len, "%s: cannot write %d dimensions (1 to %d)", path, ndim,
                MCL_IDX_MAX_NDIM);
        return MCL_ERR_INVALID;
    }
    size_t esize = type == MCL_IDX_INT32 ? 4 : 1;
    uint8_t hdr[4 + 4 * MCL_IDX_MAX_NDIM] = {0, 0, (uint8_t)type, (uint8_t)ndim};
    uint64_t count = 1;
    for (int d = 0; d < ndim; d++) {
        if (dims[d] < 1 || dims[d] > (int64_t)UINT32_MAX) {
            set_err(err, len, "%s: dimension %d is %lld (must be 1 .. 2^32-1)", path, d + 1,
                    (long long)dims[d]);
            return MCL_ERR_INVALID;
        }
        count *= (uint64_t)dims[d];
        if (count > MCL_IDX_MAX_BYTES / esize) {
            set_err(err, len, "%s: data larger than the IDX limit of %zu bytes", path,
                    MCL_IDX_MAX_BYTES);
            return MCL_ERR_INVALID;
        }
        uint32_t v = (uint32_t)dims[d];
        hdr[4 + 4 * d] = (uint8_t)(v >> 24);
        hdr[5 + 4 * d] = (uint8_t)(v >> 16);
        hdr[6 + 4 * d] = (uint8_t)(v >> 8);
        hdr[7 + 4 * d] = (uint8_t)v;
    }
    char tmp[4200];
    int fd;
    mcl_status cst = mcl_tmp_create(path, tmp, sizeof tmp, &fd, err, len);
    if (cst != MCL_OK) return cst;
    /* big-endian int32 conversion goes through a bounded staging buffer */
    enum { STAGE = 1 << 16 };
    uint8_t *stage = type == MCL_IDX_INT32 ? malloc(STAGE) : NULL;
    if (type == MCL_IDX_INT32 && !stage) {
        close(fd);
        unlink(tmp);
        set_err(err, len, "%s: out of memory", path);
        return MCL_ERR_OOM;
    }
    int bad = 0;
    const char *why = NULL;
    gzFile gz = NULL;
    if (gzip) {
        int fd2 = dup(fd);
        gz = fd2 >= 0 ? gzdopen(fd2, "wb9") : NULL;
        if (!gz) {
            if (fd2 >= 0) close(fd2);
            bad = 1;
            why = "cannot start gzip";
        }
    }
#define PUT(p, n)                                                                              \
    do {                                                                                       \
        if (!bad) {                                                                            \
            if (gz) {                                                                          \
                if (gzwrite(gz, (p), (unsigned)(n)) != (int)(n)) bad = 1;                      \
            } else if (write_all(fd, (p), (n)) != 0) {                                         \
                bad = 1;                                                                       \
            }                                                                                  \
        }                                                                                      \
    } while (0)
    PUT(hdr, (size_t)(4 + 4 * ndim));
    if (type == MCL_IDX_UBYTE) {
        const uint8_t *p = data;
        for (uint64_t off = 0; off < count && !bad; off += (1u << 24)) {
            uint64_t n = count - off < (1u << 24) ? count - off : (1u << 24);
            PUT(p + off, (size_t)n);
        }
    } else {
        const int32_t *v = data;
        for (uint64_t i = 0; i < count && !bad;) {
            size_t k = 0;
            for (; k < STAGE / 4 && i < count; k++, i++) {
                uint32_t u = (uint32_t)v[i];
                stage[4 * k] = (uint8_t)(u >> 24);
                stage[4 * k + 1] = (uint8_t)(u >> 16);
                stage[4 * k + 2] = (uint8_t)(u >> 8);
                stage[4 * k + 3] = (uint8_t)u;
            }
            PUT(stage, 4 * k);
        }
    }
#undef PUT
    free(stage);
    if (gz && gzclose_w(gz) != Z_OK) bad = 1;
    if (!bad && fsync(fd) != 0) bad = 1;
    int saved = errno;
    if (close(fd) != 0 && !bad) {
        bad = 1;
        saved = errno;
    }
    if (!bad && rename(tmp, path) != 0) {
        saved = errno;
        bad = 1;
    }
    if (bad) {
        unlink(tmp);
        set_err(err, len, "%s: write failed: %s", path, why ? why : strerror(saved));
        return MCL_ERR_IO;
    }
    return MCL_OK;
}
