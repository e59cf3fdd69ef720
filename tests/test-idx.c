/* test-idx.c — IDX reading and writing (src/data/idx.c).
 *
 * Round trips (ubyte 3-D and 1-D, int32 1-D; plain and gzip; from a file and from memory),
 * deterministic output bytes, atomic writes, and a table of malformed inputs — each must
 * give an error status and a message naming the file and the problem, never a crash, and
 * leave the output empty. Files are made in the current directory and removed. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "idx.h"
#include "rng.h"
#include "testutil.h"

#define SEED 0x1d3ULL

static char g_dir[128];

static void path_in(char *out, size_t cap, const char *name)
{
    snprintf(out, cap, "%s/%s", g_dir, name);
}

static int write_bytes(const char *path, const void *b, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    size_t w = n ? fwrite(b, 1, n, f) : 0;
    return fclose(f) == 0 && w == n ? 0 : -1;
}

static uint8_t *read_bytes(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long k = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc(k > 0 ? (size_t)k : 1);
    if (b && k > 0 && fread(b, 1, (size_t)k, f) != (size_t)k) {
        free(b);
        b = NULL;
    }
    fclose(f);
    *n = k > 0 ? (size_t)k : 0;
    return b;
}

/* gzip-compress a buffer (one member, level 6). */
static uint8_t *gzip_bytes(const uint8_t *src, size_t n, size_t *out_n)
{
    z_stream z;
    memset(&z, 0, sizeof z);
    if (deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) return NULL;
    size_t cap = deflateBound(&z, (uLong)n) + 32;
    uint8_t *out = malloc(cap);
    if (!out) {
        deflateEnd(&z);
        return NULL;
    }
    z.next_in = (Bytef *)(uintptr_t)src;
    z.avail_in = (uInt)n;
    z.next_out = out;
    z.avail_out = (uInt)cap;
    int r = deflate(&z, Z_FINISH);
    *out_n = cap - z.avail_out;
    deflateEnd(&z);
    if (r != Z_STREAM_END) {
        free(out);
        return NULL;
    }
    return out;
}

static int idx_equal(const mcl_idx *x, int type, int ndim, const int64_t *dims, const void *data)
{
    if (x->type != type || x->ndim != ndim || !x->data) return 0;
    int64_t count = 1;
    for (int d = 0; d < ndim; d++) {
        if (x->dims[d] != dims[d]) return 0;
        count *= dims[d];
    }
    if (x->count != count) return 0;
    return memcmp(x->data, data, (size_t)count * (type == MCL_IDX_INT32 ? 4 : 1)) == 0;
}

static int no_temp_files(void)
{
    DIR *d = opendir(g_dir);
    if (!d) return 0;
    struct dirent *e;
    int ok = 1;
    while ((e = readdir(d)) != NULL)
        if (strstr(e->d_name, ".tmp.")) ok = 0;
    closedir(d);
    return ok;
}

static void test_round_trip(void)
{
    enum { N = 7, H = 5, W = 3 };
    uint8_t img[N * H * W], lab[N];
    int32_t l32[N] = {0, -1, 2147483647, (int32_t)0x80000000u, 256, 65536, 7};
    mcl_rng r;
    mcl_rng_init(&r, SEED, 1);
    for (int i = 0; i < N * H * W; i++) img[i] = (uint8_t)mcl_rng_next_u32(&r);
    for (int i = 0; i < N; i++) lab[i] = (uint8_t)(i * 37);
    const int64_t d3[3] = {N, H, W}, d1[1] = {N};
    struct {
        const char *name;
        int type, ndim;
        const int64_t *dims;
        const void *data;
        uint32_t magic;
    } cases[] = {
        {"images", MCL_IDX_UBYTE, 3, d3, img, 0x00000803u},
        {"ubyte-labels", MCL_IDX_UBYTE, 1, d1, lab, 0x00000801u},
        {"int32-labels", MCL_IDX_INT32, 1, d1, l32, 0x00000C01u},
    };
    char err[512], path[256], name[64];
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++)
        for (int gz = 0; gz < 2; gz++) {
            snprintf(name, sizeof name, "%s%s", cases[c].name, gz ? ".idx.gz" : ".idx");
            path_in(path, sizeof path, name);
            mcl_status st = mcl_idx_write(path, cases[c].type, cases[c].ndim, cases[c].dims,
                                          cases[c].data, gz, err, sizeof err);
            if (!CHECK(st == MCL_OK, "write %s: %s", name, err)) continue;
            size_t nb = 0;
            uint8_t *bytes = read_bytes(path, &nb);
            if (!CHECK(bytes != NULL && nb >= 4, "read back the bytes of %s", name)) {
                free(bytes);
                continue;
            }
            if (gz) {
                CHECK(bytes[0] == 0x1f && bytes[1] == 0x8b, "%s starts with the gzip magic", name);
            } else {
                uint32_t m = (uint32_t)bytes[0] << 24 | (uint32_t)bytes[1] << 16 |
                             (uint32_t)bytes[2] << 8 | bytes[3];
                CHECK(m == cases[c].magic, "%s magic 0x%08x, want 0x%08x", name, (unsigned)m,
                      (unsigned)cases[c].magic);
                size_t esz = cases[c].type == MCL_IDX_INT32 ? 4 : 1;
                CHECK(nb == 4 + 4 * (size_t)cases[c].ndim + esz * N * (cases[c].ndim == 3 ? H * W : 1),
                      "%s has the exact size (%zu bytes)", name, nb);
                if (cases[c].type == MCL_IDX_INT32)
                    CHECK(bytes[8] == 0 && bytes[12] == 0xff && bytes[15] == 0xff &&
                              bytes[16] == 0x7f && bytes[20] == 0x80,
                          "int32 values are stored big-endian");
            }
            mcl_idx x;
            st = mcl_idx_read(path, 0, &x, err, sizeof err);
            CHECK(st == MCL_OK && idx_equal(&x, cases[c].type, cases[c].ndim, cases[c].dims,
                                             cases[c].data),
                  "file round trip %s: %s", name, st == MCL_OK ? "contents differ" : err);
            mcl_idx_free(&x);
            CHECK(x.data == NULL && x.count == 0, "mcl_idx_free clears");
            st = mcl_idx_read_mem(bytes, nb, name, 0, &x, err, sizeof err);
            CHECK(st == MCL_OK && idx_equal(&x, cases[c].type, cases[c].ndim, cases[c].dims,
                                             cases[c].data),
                  "memory round trip %s: %s", name, st == MCL_OK ? "contents differ" : err);
            mcl_idx_free(&x);
            /* the same data written again gives the same bytes */
            st = mcl_idx_write(path, cases[c].type, cases[c].ndim, cases[c].dims, cases[c].data,
                               gz, err, sizeof err);
            size_t nb2 = 0;
            uint8_t *bytes2 = read_bytes(path, &nb2);
            CHECK(st == MCL_OK && bytes2 && nb2 == nb && memcmp(bytes, bytes2, nb) == 0,
                  "%s: rewriting gives identical bytes", name);
            free(bytes2);
            free(bytes);
        }
    CHECK(no_temp_files(), "no temporary files left behind");

    /* two concatenated gzip members read as one stream (like gzip -d) */
    uint8_t plain[4 + 4 + N];
    memcpy(plain, "\0\0\x08\x01\0\0\0\x07", 8);
    memcpy(plain + 8, lab, N);
    size_t n1 = 0, n2 = 0;
    uint8_t *g1 = gzip_bytes(plain, 5, &n1), *g2 = gzip_bytes(plain + 5, sizeof plain - 5, &n2);
    uint8_t *cat = g1 && g2 ? malloc(n1 + n2 + 8) : NULL;
    if (CHECK(cat != NULL, "build a two-member gzip stream")) {
        memcpy(cat, g1, n1);
        memcpy(cat + n1, g2, n2);
        mcl_idx x;
        mcl_status st = mcl_idx_read_mem(cat, n1 + n2, "two-members", 0, &x, err, sizeof err);
        CHECK(st == MCL_OK && idx_equal(&x, MCL_IDX_UBYTE, 1, d1, lab),
              "two gzip members from memory: %s", st ? err : "contents differ");
        mcl_idx_free(&x);
        path_in(path, sizeof path, "two-members.gz");
        write_bytes(path, cat, n1 + n2);
        st = mcl_idx_read(path, 0, &x, err, sizeof err);
        CHECK(st == MCL_OK && idx_equal(&x, MCL_IDX_UBYTE, 1, d1, lab),
              "two gzip members from a file: %s", st ? err : "contents differ");
        mcl_idx_free(&x);
        /* bytes after the last member that are not gzip are ignored (as gzip -d does) */
        memcpy(cat + n1 + n2, "garbage!", 8);
        st = mcl_idx_read_mem(cat, n1 + n2 + 8, "gz+garbage", 0, &x, err, sizeof err);
        CHECK(st == MCL_OK, "non-gzip bytes after the gzip stream are ignored: %s", err);
        mcl_idx_free(&x);
        unlink(path);
    }
    free(g1);
    free(g2);
    free(cat);

    /* max_bytes limits what is accepted */
    mcl_idx x;
    path_in(path, sizeof path, "images.idx");
    mcl_status st = mcl_idx_read(path, 50, &x, err, sizeof err);
    CHECK(st == MCL_ERR_FORMAT && strstr(err, "limit") && x.data == NULL,
          "a 105-byte array over a 50-byte limit is refused: %s", err);
    mcl_idx_free(&x);

    /* mcl_idx_expect */
    st = mcl_idx_read(path, 0, &x, err, sizeof err);
    if (CHECK(st == MCL_OK, "read images.idx: %s", err)) {
        CHECK(mcl_idx_expect(&x, path, "images", MCL_IDX_UBYTE, 3, N, err, sizeof err) == MCL_OK,
              "expect the right shape: %s", err);
        st = mcl_idx_expect(&x, path, "images", MCL_IDX_UBYTE, 3, N + 1, err, sizeof err);
        CHECK(st == MCL_ERR_FORMAT && strstr(err, "7 images, expected 8") && strstr(err, path),
              "expect a wrong count: %s", err);
        st = mcl_idx_expect(&x, path, "labels", MCL_IDX_INT32, 0, -1, err, sizeof err);
        CHECK(st == MCL_ERR_FORMAT && strstr(err, "int32"), "expect a wrong type: %s", err);
        st = mcl_idx_expect(&x, path, "labels", 0, 1, -1, err, sizeof err);
        CHECK(st == MCL_ERR_FORMAT && strstr(err, "1 dimension"), "expect a wrong rank: %s", err);
    }
    mcl_idx_free(&x);

    /* write errors */
    st = mcl_idx_write("no-such-dir-xyz/sub/a.idx", MCL_IDX_UBYTE, 1, d1, lab, 0, err, sizeof err);
    CHECK(st == MCL_ERR_IO && strstr(err, "no-such-dir-xyz/sub/a.idx"),
          "writing into a missing directory: %s", err);
    int64_t zero[1] = {0};
    path_in(path, sizeof path, "zero.idx");
    st = mcl_idx_write(path, MCL_IDX_UBYTE, 1, zero, lab, 0, err, sizeof err);
    CHECK(st == MCL_ERR_INVALID && access(path, F_OK) != 0, "a zero dimension is not written: %s",
          err);
    st = mcl_idx_write(path, 0x0D, 1, d1, lab, 0, err, sizeof err);
    CHECK(st == MCL_ERR_INVALID, "float IDX is not written: %s", err);
    st = mcl_idx_write(path, MCL_IDX_UBYTE, 4, d3, lab, 0, err, sizeof err);
    CHECK(st == MCL_ERR_INVALID, "4-D IDX is not written: %s", err);
    CHECK(no_temp_files(), "no temporary files left after failed writes");
}

/* ---- the table of malformed inputs ---- */

typedef struct bad_case {
    const char *name;
    uint8_t *bytes;
    size_t n;
    const char *needle;  /* expected in the message (besides the file name) */
    int64_t expect_n;    /* >= 0: read must succeed, then mcl_idx_expect(INT32, 1, expect_n) fail */
    int file_only;       /* only meaningful as a file */
} bad_case;

static uint8_t *dup_bytes(const void *b, size_t n)
{
    uint8_t *d = malloc(n ? n : 1);
    if (d && n) memcpy(d, b, n);
    return d;
}

static void put_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

/* header magic + dims followed by `data` bytes of value 7 */
static uint8_t *hdr_bytes(uint32_t magic, int ndim, const uint32_t *dims, size_t data, size_t *n)
{
    *n = 4 + 4 * (size_t)ndim + data;
    uint8_t *b = malloc(*n);
    if (!b) return NULL;
    put_be32(b, magic);
    for (int d = 0; d < ndim; d++) put_be32(b + 4 + 4 * d, dims[d]);
    memset(b + 4 + 4 * ndim, 7, data);
    return b;
}

static int n_cases;
static bad_case cases[64];

static void add(const char *name, uint8_t *bytes, size_t n, const char *needle)
{
    cases[n_cases++] = (bad_case){name, bytes, n, needle, -1, 0};
}

/* a header case: the bytes are built before the count is read (argument evaluation order) */
static void addh(const char *name, uint32_t magic, int ndim, const uint32_t *dims, size_t data,
                 const char *needle)
{
    size_t n = 0;
    uint8_t *b = hdr_bytes(magic, ndim, dims, data, &n);
    add(name, b, n, needle);
}

static void build_cases(void)
{
    uint32_t d3[3] = {3, 2, 2}, d1[1] = {4};
    add("empty-file", dup_bytes("", 0), 0, "empty file");
    add("truncated-magic", dup_bytes("\0\0\x08", 3), 3, "truncated header");
    add("bad-magic", dup_bytes("\x12\x34\x56\x78\0\0\0\x01\x05", 9), 9, "bad magic");
    add("text-file", dup_bytes("hello, world\n", 13), 13, "bad magic");
    add("png-signature", dup_bytes("\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR", 16), 16, "bad magic");
    addh("float-type", 0x00000D01u, 1, d1, 16, "float32");
    addh("unknown-type", 0x00000701u, 1, d1, 4, "not supported");
    add("zero-ndim", dup_bytes("\0\0\x08\0\x01\x02", 6), 6, "0 dimensions");
    addh("four-dims", 0x00000804u, 3, d3, 0, "4 dimensions");
    add("truncated-dims", dup_bytes("\0\0\x08\x03\0\0\0\x03\0\0", 10), 10, "truncated header");
    uint32_t z[3] = {3, 0, 2};
    addh("zero-dim", 0x00000803u, 3, z, 0, "dimension 2 of 3 is 0");
    uint32_t huge[3] = {0xffffffffu, 0xffffffffu, 0xffffffffu};
    addh("huge-dims", 0x00000803u, 3, huge, 16, "exceed the size limit");
    uint32_t ovf[3] = {65536, 65536, 65536}; /* 2^48: past 2^31 and overflowing 32 bits */
    addh("overflowing-dims", 0x00000803u, 3, ovf, 16, "exceed the size limit");
    uint32_t big32[1] = {0x20000001u};       /* 4 * (2^29+1) bytes > 2^31 */
    addh("huge-int32-count", 0x00000C01u, 1, big32, 16, "exceed the size limit");
    uint32_t mnist[3] = {60000, 28, 28};
    addh("truncated-data", 0x00000803u, 3, mnist, 1000, "truncated data");
    addh("truncated-data-small", 0x00000803u, 3, d3, 11, "11 of 12 bytes");
    addh("header-only", 0x00000803u, 3, d3, 0, "0 of 12 bytes");
    addh("int32-truncated", 0x00000C01u, 1, d1, 15, "15 of 16 bytes");
    addh("trailing-bytes", 0x00000801u, 1, d1, 6, "2 trailing bytes");
    addh("trailing-many", 0x00000801u, 1, d1, 5000, "at least 256 trailing");
    /* int32 labels with the wrong count: a valid file, refused by mcl_idx_expect */
    addh("int32-wrong-count", 0x00000C01u, 1, d1, 16, "4 labels, expected 5");
    cases[n_cases - 1].expect_n = 5;
    addh("ubyte-labels-as-int32", 0x00000801u, 1, d1, 4, "must be int32");
    cases[n_cases - 1].expect_n = 5;
    /* gzip damage */
    size_t pn, gn;
    uint8_t *plain = hdr_bytes(0x00000803u, 3, d3, 12, &pn);
    for (size_t i = 0; i < 12; i++) plain[16 + i] = (uint8_t)(i * 19);
    uint8_t *gz = gzip_bytes(plain, pn, &gn);
    if (gz) {
        add("gzip-truncated", dup_bytes(gz, gn / 2), gn / 2, "truncated gzip");
        add("gzip-header-only", dup_bytes(gz, 10), 10, "truncated gzip");
        add("gzip-no-trailer", dup_bytes(gz, gn - 8), gn - 8, "truncated gzip");
        uint8_t *c = dup_bytes(gz, gn);
        c[gn - 6] ^= 0x55; /* the CRC-32 */
        add("gzip-bad-crc", c, gn, "corrupt gzip");
        c = dup_bytes(gz, gn);
        c[2] = 0x07; /* compression method */
        add("gzip-bad-method", c, gn, "corrupt gzip");
        c = dup_bytes(gz, gn);
        for (size_t i = 10; i < gn - 8; i++) c[i] = (uint8_t)(0xA5 ^ i);
        add("gzip-garbage-deflate", c, gn, "gzip");
        /* a valid gzip whose contents are a bad IDX */
        uint8_t *t = hdr_bytes(0x00000803u, 3, d3, 11, &pn);
        size_t tn;
        uint8_t *tg = gzip_bytes(t, pn, &tn);
        add("gzip-of-truncated-idx", tg, tn, "11 of 12 bytes");
        free(t);
        t = hdr_bytes(0x00000801u, 1, d1, 9, &pn);
        tg = gzip_bytes(t, pn, &tn);
        add("gzip-of-idx-with-trailing", tg, tn, "5 trailing bytes");
        free(t);
        free(gz);
    }
    free(plain);
}

static void test_malformed(void)
{
    build_cases();
    char err[512], path[256];
    for (int i = 0; i < n_cases; i++) {
        bad_case *c = &cases[i];
        if (!CHECK(c->bytes != NULL, "%s: build the input", c->name)) continue;
        for (int from_file = 0; from_file < 2; from_file++) {
            mcl_idx x;
            memset(&x, 0xAB, sizeof x); /* must be cleared on error */
            err[0] = '\0';
            mcl_status st;
            const char *nm;
            if (from_file) {
                path_in(path, sizeof path, c->name);
                if (!CHECK(write_bytes(path, c->bytes, c->n) == 0, "write %s", path)) continue;
                nm = path;
                st = mcl_idx_read(path, 0, &x, err, sizeof err);
            } else {
                nm = c->name;
                st = mcl_idx_read_mem(c->bytes, c->n, c->name, 0, &x, err, sizeof err);
            }
            if (c->expect_n >= 0) {
                if (CHECK(st == MCL_OK, "%s (%s): a valid file: %s", c->name,
                          from_file ? "file" : "memory", err))
                    st = mcl_idx_expect(&x, nm, "labels", MCL_IDX_INT32, 1, c->expect_n, err,
                                        sizeof err);
                mcl_idx_free(&x);
            }
            CHECK(st == MCL_ERR_FORMAT, "%s (%s): status %d (%s), want MCL_ERR_FORMAT", c->name,
                  from_file ? "file" : "memory", (int)st, err);
            CHECK(strstr(err, nm) != NULL && strstr(err, c->needle) != NULL,
                  "%s (%s): message '%s' should name the file and say '%s'", c->name,
                  from_file ? "file" : "memory", err, c->needle);
            if (from_file) printf("  %-26s %s\n", c->name, err);
            if (c->expect_n < 0)
                CHECK(x.data == NULL && x.count == 0 && x.ndim == 0,
                      "%s (%s): output left empty", c->name, from_file ? "file" : "memory");
            if (from_file) unlink(path);
        }
        free(c->bytes);
    }
    /* files that cannot be read at all */
    mcl_idx x;
    mcl_status st = mcl_idx_read("no-such-file.idx", 0, &x, err, sizeof err);
    CHECK(st == MCL_ERR_IO && strstr(err, "no-such-file.idx") && strstr(err, "cannot open"),
          "missing file: %s", err);
    st = mcl_idx_read(g_dir, 0, &x, err, sizeof err);
    CHECK(st == MCL_ERR_IO && strstr(err, "directory"), "a directory: %s", err);
    st = mcl_idx_read_mem(NULL, 0, NULL, 0, &x, err, sizeof err);
    CHECK(st == MCL_ERR_FORMAT && strstr(err, "<memory>") && strstr(err, "empty"),
          "empty memory buffer: %s", err);
    printf("test-idx: %d malformed inputs, each from memory and from a file\n", n_cases);
}

int main(void)
{
    tu_begin("test-idx", SEED);
    snprintf(g_dir, sizeof g_dir, "test-idx.tmp.%ld", (long)getpid());
    if (mkdir(g_dir, 0755) != 0) {
        fprintf(stderr, "test-idx: cannot create %s in the current directory\n", g_dir);
        return 1;
    }
    test_round_trip();
    test_malformed();
    CHECK(tu_rm_rf(g_dir) == 0, "remove %s", g_dir);
    return tu_summary();
}
