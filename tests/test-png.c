/* test-png.c — PNG reading/writing (src/data/png_io.c).
 *
 * Round trip of the gray writer; conversion of every PNG colour type to 8-bit gray (gray
 * 1/2/4/8/16-bit, gray+alpha, palette with and without transparency, RGB/RGBA 8 and 16-bit,
 * Adam7 interlacing) against values computed here from the documented rule; and a table of
 * malformed inputs (empty, not a PNG, truncated, bad CRCs, absurd or invalid header fields,
 * corrupt image data) — each an error status with a message naming the file, never a crash.
 * Test PNGs are written to memory with libpng directly; files go to a temporary directory
 * in the current directory, removed at the end. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include <dirent.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <png.h>
#include <zlib.h>

#include "png_io.h"
#include "rng.h"
#include "testutil.h"

#define SEED 0x9e6ULL

static char g_dir[128];

/* ---- a PNG encoder into memory (libpng, for making test inputs) ---- */

typedef struct membuf {
    uint8_t *b;
    size_t n, cap;
    int oom;
} membuf;

typedef struct enc {
    jmp_buf jb;
    membuf out;
    /* image description */
    int w, h, depth, ctype, interlace;
    const uint8_t *rows; /* packed rows as libpng wants them (16-bit big-endian) */
    size_t rowbytes;
    const png_color *palette;
    int n_palette;
    const uint8_t *trans; /* palette alpha */
    int n_trans;
    const png_color_16 *trans_color; /* gray/RGB transparent colour */
    png_structp png;
    png_infop info;
} enc;

static void enc_write(png_structp png, png_bytep data, png_size_t n)
{
    membuf *m = png_get_io_ptr(png);
    if (m->n + n > m->cap) {
        size_t nc = m->cap ? m->cap * 2 : 4096;
        while (nc < m->n + n) nc *= 2;
        uint8_t *nb = realloc(m->b, nc);
        if (!nb) {
            m->oom = 1;
            png_error(png, "out of memory");
        }
        m->b = nb;
        m->cap = nc;
    }
    memcpy(m->b + m->n, data, n);
    m->n += n;
}

static void enc_flush(png_structp png)
{
    (void)png;
}

static void enc_error(png_structp png, png_const_charp msg)
{
    enc *e = png_get_error_ptr(png);
    fprintf(stderr, "test encoder: %s\n", msg);
    longjmp(e->jb, 1);
}

static int enc_inner(enc *e)
{
    if (setjmp(e->jb)) return -1;
    png_set_write_fn(e->png, &e->out, enc_write, enc_flush);
    png_set_IHDR(e->png, e->info, (png_uint_32)e->w, (png_uint_32)e->h, e->depth, e->ctype,
                 e->interlace, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    if (e->palette) png_set_PLTE(e->png, e->info, e->palette, e->n_palette);
    if (e->trans || e->trans_color)
        png_set_tRNS(e->png, e->info, e->trans, e->n_trans, e->trans_color);
    png_write_info(e->png, e->info);
    int passes = e->interlace ? png_set_interlace_handling(e->png) : 1;
    for (int p = 0; p < passes; p++)
        for (int y = 0; y < e->h; y++)
            png_write_row(e->png, (png_const_bytep)(e->rows + (size_t)y * e->rowbytes));
    png_write_end(e->png, NULL);
    return 0;
}

/* Encode; returns the PNG bytes (malloc'd) or NULL. */
static uint8_t *encode(enc *e, size_t *n)
{
    e->png = png_create_write_struct(PNG_LIBPNG_VER_STRING, e, enc_error, NULL);
    e->info = e->png ? png_create_info_struct(e->png) : NULL;
    int ok = e->png && e->info && enc_inner(e) == 0 && !e->out.oom;
    if (e->png) png_destroy_write_struct(&e->png, e->info ? &e->info : NULL);
    if (!ok) {
        free(e->out.b);
        return NULL;
    }
    *n = e->out.n;
    return e->out.b;
}

static void enc_init(enc *e, int w, int h, int depth, int ctype, const uint8_t *rows,
                     size_t rowbytes)
{
    memset(e, 0, sizeof *e);
    e->w = w;
    e->h = h;
    e->depth = depth;
    e->ctype = ctype;
    e->rows = rows;
    e->rowbytes = rowbytes;
    e->interlace = PNG_INTERLACE_NONE;
}

/* ---- helpers ---- */

static unsigned luma(unsigned r, unsigned g, unsigned b)
{
    return (299u * r + 587u * g + 114u * b + 500u) / 1000u;
}

static unsigned over_black(unsigned v, unsigned a)
{
    return (v * a + 127u) / 255u;
}

static unsigned scale16(unsigned v)
{
    return (v * 255u + 32767u) / 65535u; /* round(v / 257) */
}

static int write_file(const char *path, const void *b, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    size_t w = n ? fwrite(b, 1, n, f) : 0;
    return fclose(f) == 0 && w == n ? 0 : -1;
}

/* Decode bytes from memory and from a file; check both against want (w×h). */
static void check_decode(const char *what, const uint8_t *png, size_t n, int w, int h,
                         const uint8_t *want)
{
    char err[512], path[256];
    for (int from_file = 0; from_file < 2; from_file++) {
        uint8_t *g = NULL;
        int gw = 0, gh = 0;
        mcl_status st;
        if (from_file) {
            snprintf(path, sizeof path, "%s/%s.png", g_dir, what);
            if (!CHECK(write_file(path, png, n) == 0, "write %s", path)) continue;
            st = mcl_png_read(path, 0, &g, &gw, &gh, err, sizeof err);
            unlink(path);
        } else {
            st = mcl_png_read_mem(png, n, what, 0, &g, &gw, &gh, err, sizeof err);
        }
        if (CHECK(st == MCL_OK && gw == w && gh == h, "%s (%s): status %d %dx%d: %s", what,
                  from_file ? "file" : "memory", (int)st, gw, gh, st ? err : "")) {
            int bad = -1;
            for (int i = 0; i < w * h && bad < 0; i++)
                if (g[i] != want[i]) bad = i;
            CHECK(bad < 0, "%s (%s): pixel %d is %d, want %d", what, from_file ? "file" : "memory",
                  bad, bad >= 0 ? g[bad] : 0, bad >= 0 ? want[bad] : 0);
        }
        free(g);
    }
}

/* ---- round trip ---- */

static void test_round_trip(void)
{
    enum { W = 37, H = 23 };
    uint8_t img[W * H];
    mcl_rng r;
    mcl_rng_init(&r, SEED, 1);
    for (int i = 0; i < W * H; i++) img[i] = (uint8_t)mcl_rng_next_u32(&r);
    img[0] = 0;
    img[1] = 255;
    char path[256], err[512];
    snprintf(path, sizeof path, "%s/round.png", g_dir);
    mcl_status st = mcl_png_write_gray(path, img, W, H, err, sizeof err);
    if (!CHECK(st == MCL_OK, "write %s: %s", path, err)) return;
    uint8_t *g = NULL;
    int w = 0, h = 0;
    st = mcl_png_read(path, 0, &g, &w, &h, err, sizeof err);
    CHECK(st == MCL_OK && w == W && h == H && g && memcmp(g, img, sizeof img) == 0,
          "gray PNG round trip: %s", st ? err : "pixels differ");
    free(g);
    /* the writer's output decodes the same from memory, and the signature is PNG's */
    FILE *f = fopen(path, "rb");
    uint8_t buf[65536];
    size_t n = f ? fread(buf, 1, sizeof buf, f) : 0;
    if (f) fclose(f);
    CHECK(n > 8 && png_sig_cmp(buf, 0, 8) == 0, "the file has the PNG signature");
    check_decode("round-mem", buf, n, W, H, img);
    /* the pixel limit */
    st = mcl_png_read(path, 100, &g, &w, &h, err, sizeof err);
    CHECK(st == MCL_ERR_FORMAT && g == NULL && strstr(err, "limit") && strstr(err, path),
          "a 37x23 image over a 100-pixel limit: %s", err);
    free(g);
    /* 1x1 and a wide strip */
    uint8_t one = 200;
    snprintf(path, sizeof path, "%s/one.png", g_dir);
    st = mcl_png_write_gray(path, &one, 1, 1, err, sizeof err);
    st = st ? st : mcl_png_read(path, 0, &g, &w, &h, err, sizeof err);
    CHECK(st == MCL_OK && w == 1 && h == 1 && g[0] == 200, "1x1 round trip: %s", err);
    free(g);
    unlink(path);
    /* write errors */
    st = mcl_png_write_gray("no-such-dir-xyz/a.png", img, W, H, err, sizeof err);
    CHECK(st == MCL_ERR_IO && strstr(err, "no-such-dir-xyz/a.png"), "missing directory: %s", err);
    st = mcl_png_write_gray(path, img, 0, H, err, sizeof err);
    CHECK(st == MCL_ERR_INVALID && access(path, F_OK) != 0, "zero width is refused: %s", err);
    st = mcl_png_write_gray(path, NULL, W, H, err, sizeof err);
    CHECK(st == MCL_ERR_NULL, "null pixels are refused");
}

/* ---- colour types ---- */

static void test_conversions(void)
{
    enum { W = 19, H = 11, N = W * H };
    mcl_rng r;
    mcl_rng_init(&r, SEED, 2);
    uint8_t want[N];
    uint8_t *raw = malloc(N * 8); /* up to 8 bytes per pixel (RGBA 16) */
    if (!CHECK(raw != NULL, "malloc")) return;
    size_t n;
    uint8_t *png;
    enc e;
    char what[64];

    /* gray 8, plain and interlaced */
    for (int i = 0; i < N; i++) raw[i] = want[i] = (uint8_t)mcl_rng_next_u32(&r);
    for (int il = 0; il < 2; il++) {
        enc_init(&e, W, H, 8, PNG_COLOR_TYPE_GRAY, raw, W);
        e.interlace = il ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE;
        png = encode(&e, &n);
        snprintf(what, sizeof what, "gray8%s", il ? "-adam7" : "");
        if (CHECK(png != NULL, "encode %s", what)) check_decode(what, png, n, W, H, want);
        free(png);
    }
    /* gray 1, 2, 4 bits: packed big-endian within bytes, scaled to 0..255 */
    for (int depth = 1; depth <= 4; depth *= 2) {
        size_t rb = ((size_t)W * (size_t)depth + 7) / 8;
        memset(raw, 0, rb * H);
        unsigned maxv = (1u << depth) - 1;
        for (int y = 0; y < H; y++)
            for (int x = 0; x < W; x++) {
                unsigned v = mcl_rng_next_u32(&r) & maxv;
                size_t bit = (size_t)x * (size_t)depth;
                raw[y * rb + bit / 8] |= (uint8_t)(v << (8 - depth - bit % 8));
                want[y * W + x] = (uint8_t)(v * 255u / maxv);
            }
        enc_init(&e, W, H, depth, PNG_COLOR_TYPE_GRAY, raw, rb);
        png = encode(&e, &n);
        snprintf(what, sizeof what, "gray%d", depth);
        if (CHECK(png != NULL, "encode %s", what)) check_decode(what, png, n, W, H, want);
        free(png);
    }
    /* gray 16: rounded to 8 bits */
    for (int i = 0; i < N; i++) {
        unsigned v = mcl_rng_next_u32(&r) & 0xffffu;
        if (i == 0) v = 0;
        if (i == 1) v = 65535;
        if (i == 2) v = 128; /* rounds down to 0 */
        if (i == 3) v = 129; /* rounds up to 1 */
        raw[2 * i] = (uint8_t)(v >> 8);
        raw[2 * i + 1] = (uint8_t)v;
        want[i] = (uint8_t)scale16(v);
    }
    enc_init(&e, W, H, 16, PNG_COLOR_TYPE_GRAY, raw, 2 * W);
    png = encode(&e, &n);
    if (CHECK(png != NULL, "encode gray16")) check_decode("gray16", png, n, W, H, want);
    free(png);
    /* gray 8 with a transparent gray value (tRNS): that value becomes 0 */
    for (int i = 0; i < N; i++) raw[i] = want[i] = (uint8_t)(mcl_rng_next_u32(&r) % 4 * 60 + 10);
    for (int i = 0; i < N; i++)
        if (raw[i] == 130) want[i] = 0;
    png_color_16 tc = {0};
    tc.gray = 130;
    enc_init(&e, W, H, 8, PNG_COLOR_TYPE_GRAY, raw, W);
    e.trans_color = &tc;
    png = encode(&e, &n);
    if (CHECK(png != NULL, "encode gray8+tRNS")) check_decode("gray8-trns", png, n, W, H, want);
    free(png);
    /* gray + alpha 8 */
    for (int i = 0; i < N; i++) {
        unsigned v = mcl_rng_next_u32(&r) & 255u, a = mcl_rng_next_u32(&r) & 255u;
        raw[2 * i] = (uint8_t)v;
        raw[2 * i + 1] = (uint8_t)a;
        want[i] = (uint8_t)over_black(v, a);
    }
    enc_init(&e, W, H, 8, PNG_COLOR_TYPE_GRAY_ALPHA, raw, 2 * W);
    png = encode(&e, &n);
    if (CHECK(png != NULL, "encode gray+alpha")) check_decode("gray-alpha8", png, n, W, H, want);
    free(png);
    /* RGB 8 (plain and interlaced) and RGBA 8 */
    for (int ch = 3; ch <= 4; ch++)
        for (int il = 0; il < (ch == 3 ? 2 : 1); il++) {
            for (int i = 0; i < N; i++) {
                unsigned c[4];
                for (int k = 0; k < 4; k++) c[k] = mcl_rng_next_u32(&r) & 255u;
                for (int k = 0; k < ch; k++) raw[ch * i + k] = (uint8_t)c[k];
                unsigned y = luma(c[0], c[1], c[2]);
                want[i] = (uint8_t)(ch == 4 ? over_black(y, c[3]) : y);
            }
            enc_init(&e, W, H, 8, ch == 3 ? PNG_COLOR_TYPE_RGB : PNG_COLOR_TYPE_RGB_ALPHA, raw,
                     (size_t)ch * W);
            e.interlace = il ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE;
            png = encode(&e, &n);
            snprintf(what, sizeof what, "%s8%s", ch == 3 ? "rgb" : "rgba", il ? "-adam7" : "");
            if (CHECK(png != NULL, "encode %s", what)) check_decode(what, png, n, W, H, want);
            free(png);
        }
    /* pure colours: luma weights */
    {
        uint8_t px[4 * 3] = {255, 0, 0, 0, 255, 0, 0, 0, 255, 255, 255, 255};
        uint8_t wt[4] = {76, 150, 29, 255}; /* round(0.299 * 255) etc. */
        enc_init(&e, 4, 1, 8, PNG_COLOR_TYPE_RGB, px, 12);
        png = encode(&e, &n);
        if (CHECK(png != NULL, "encode primaries")) check_decode("primaries", png, n, 4, 1, wt);
        free(png);
    }
    /* RGB 16 and RGBA 16: each channel rounded to 8 bits, then luma (and alpha) */
    for (int ch = 3; ch <= 4; ch++) {
        for (int i = 0; i < N; i++) {
            unsigned c[4], c8[4];
            for (int k = 0; k < 4; k++) {
                c[k] = mcl_rng_next_u32(&r) & 0xffffu;
                c8[k] = scale16(c[k]);
            }
            for (int k = 0; k < ch; k++) {
                raw[2 * (ch * i + k)] = (uint8_t)(c[k] >> 8);
                raw[2 * (ch * i + k) + 1] = (uint8_t)c[k];
            }
            unsigned y = luma(c8[0], c8[1], c8[2]);
            want[i] = (uint8_t)(ch == 4 ? over_black(y, c8[3]) : y);
        }
        enc_init(&e, W, H, 16, ch == 3 ? PNG_COLOR_TYPE_RGB : PNG_COLOR_TYPE_RGB_ALPHA, raw,
                 (size_t)2 * ch * W);
        png = encode(&e, &n);
        snprintf(what, sizeof what, "%s16", ch == 3 ? "rgb" : "rgba");
        if (CHECK(png != NULL, "encode %s", what)) check_decode(what, png, n, W, H, want);
        free(png);
    }
    /* palette 8-bit and 4-bit, with and without transparency */
    png_color pal[6] = {{0, 0, 0}, {255, 0, 0}, {0, 255, 0}, {0, 0, 255}, {200, 100, 50},
                        {255, 255, 255}};
    uint8_t palpha[6] = {255, 128, 0, 255, 64, 255};
    for (int depth = 4; depth <= 8; depth += 4)
        for (int t = 0; t < 2; t++) {
            size_t rb = ((size_t)W * (size_t)depth + 7) / 8;
            memset(raw, 0, rb * H);
            for (int y = 0; y < H; y++)
                for (int x = 0; x < W; x++) {
                    unsigned k = mcl_rng_next_u32(&r) % 6;
                    if (depth == 8)
                        raw[y * rb + x] = (uint8_t)k;
                    else
                        raw[y * rb + x / 2] |= (uint8_t)(k << (x % 2 ? 0 : 4));
                    unsigned v = luma(pal[k].red, pal[k].green, pal[k].blue);
                    want[y * W + x] = (uint8_t)(t ? over_black(v, palpha[k]) : v);
                }
            enc_init(&e, W, H, depth, PNG_COLOR_TYPE_PALETTE, raw, rb);
            e.palette = pal;
            e.n_palette = 6;
            if (t) {
                e.trans = palpha;
                e.n_trans = 6;
            }
            png = encode(&e, &n);
            snprintf(what, sizeof what, "palette%d%s", depth, t ? "-trns" : "");
            if (CHECK(png != NULL, "encode %s", what)) check_decode(what, png, n, W, H, want);
            free(png);
        }
    free(raw);
}

/* ---- malformed inputs ---- */

static void put_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

/* signature + IHDR (w, h, depth, ctype; valid CRC) + the rest of `tail` */
static uint8_t *with_ihdr(uint32_t w, uint32_t h, int depth, int ctype, const uint8_t *tail,
                          size_t tail_n, size_t *n)
{
    *n = 8 + 25 + tail_n;
    uint8_t *b = malloc(*n);
    if (!b) return NULL;
    memcpy(b, "\x89PNG\r\n\x1a\n", 8);
    put_be32(b + 8, 13);
    memcpy(b + 12, "IHDR", 4);
    put_be32(b + 16, w);
    put_be32(b + 20, h);
    b[24] = (uint8_t)depth;
    b[25] = (uint8_t)ctype;
    b[26] = b[27] = b[28] = 0;
    put_be32(b + 29, (uint32_t)crc32(0, b + 12, 17));
    if (tail_n) memcpy(b + 33, tail, tail_n);
    return b;
}

/* offset of the first chunk of the given type, or 0 */
static size_t find_chunk(const uint8_t *b, size_t n, const char *type)
{
    size_t p = 8;
    while (p + 12 <= n) {
        uint32_t len = (uint32_t)b[p] << 24 | (uint32_t)b[p + 1] << 16 | (uint32_t)b[p + 2] << 8 | b[p + 3];
        if (memcmp(b + p + 4, type, 4) == 0) return p;
        p += 12 + (size_t)len;
    }
    return 0;
}

typedef struct bad_png {
    const char *name;
    uint8_t *bytes;
    size_t n;
    const char *needle;
    mcl_status want;
} bad_png;

static void test_malformed(void)
{
    /* a valid 16x16 gray image to damage */
    enum { W = 16, H = 16 };
    uint8_t img[W * H];
    for (int i = 0; i < W * H; i++) img[i] = (uint8_t)(i * 7);
    enc e;
    enc_init(&e, W, H, 8, PNG_COLOR_TYPE_GRAY, img, W);
    size_t vn = 0;
    uint8_t *valid = encode(&e, &vn);
    if (!CHECK(valid != NULL, "encode the valid image")) return;
    size_t ihdr = find_chunk(valid, vn, "IHDR"), idat = find_chunk(valid, vn, "IDAT"),
           iend = find_chunk(valid, vn, "IEND");
    CHECK(ihdr == 8 && idat > 0 && iend > idat, "chunk layout of the valid image");
    bad_png t[32];
    int nt = 0;
    uint8_t *b;
    size_t n;
#define DUP(src, len) ((b = malloc((len) ? (len) : 1)) ? memcpy(b, (src), (len)), b : NULL)
    t[nt++] = (bad_png){"empty", DUP("", 0), 0, "empty", MCL_ERR_FORMAT};
    t[nt++] = (bad_png){"four-bytes", DUP("\x89PNG", 4), 4, "not a PNG", MCL_ERR_FORMAT};
    t[nt++] = (bad_png){"text", DUP("just some text, not an image\n", 29), 29, "not a PNG",
                        MCL_ERR_FORMAT};
    t[nt++] = (bad_png){"idx-file", DUP("\0\0\x08\x03\0\0\0\x01\0\0\0\x01\0\0\0\x01\x05", 17), 17,
                        "not a PNG", MCL_ERR_FORMAT};
    t[nt++] = (bad_png){"signature-only", DUP(valid, 8), 8, "bad PNG", MCL_ERR_FORMAT};
    t[nt++] = (bad_png){"truncated-ihdr", DUP(valid, 20), 20, "bad PNG", MCL_ERR_FORMAT};
    t[nt++] = (bad_png){"truncated-half", DUP(valid, vn / 2), vn / 2, "bad PNG", MCL_ERR_FORMAT};
    t[nt++] = (bad_png){"truncated-in-idat", DUP(valid, idat + 20), idat + 20, "bad PNG",
                        MCL_ERR_FORMAT};
    t[nt++] = (bad_png){"no-iend", DUP(valid, iend), iend, "bad PNG", MCL_ERR_FORMAT};
    b = DUP(valid, vn);
    if (b) b[ihdr + 21] ^= 0x01; /* IHDR CRC (after length, type and 13 data bytes) */
    t[nt++] = (bad_png){"bad-ihdr-crc", b, vn, "IHDR: CRC error", MCL_ERR_FORMAT};
    b = DUP(valid, vn);
    if (b) b[iend - 1] ^= 0x80; /* IDAT CRC (last byte before IEND) */
    t[nt++] = (bad_png){"bad-idat-crc", b, vn, "CRC", MCL_ERR_FORMAT};
    b = DUP(valid, vn);
    if (b) { /* the first chunk becomes an unknown ancillary one (valid CRC): no IHDR */
        b[ihdr + 4] = 'x';
        put_be32(b + ihdr + 21, (uint32_t)crc32(0, b + ihdr + 4, 17));
    }
    t[nt++] = (bad_png){"missing-ihdr", b, vn, "Missing IHDR", MCL_ERR_FORMAT};
    t[nt++] = (bad_png){"huge-size", with_ihdr(100000, 100000, 8, 0, valid + idat, vn - idat, &n),
                        n, "exceeds user limit", MCL_ERR_FORMAT};
    t[nt++] = (bad_png){"max-size-ihdr",
                        with_ihdr(0x7fffffffu, 0x7fffffffu, 16, 6, valid + idat, vn - idat, &n), n,
                        "bad PNG", MCL_ERR_FORMAT};
    t[nt++] = (bad_png){"over-pixel-limit",
                        with_ihdr(16000, 16000, 8, 0, valid + idat, vn - idat, &n), n,
                        "pixels", MCL_ERR_FORMAT};
    t[nt++] = (bad_png){"zero-width", with_ihdr(0, 16, 8, 0, valid + idat, vn - idat, &n), n,
                        "bad PNG", MCL_ERR_FORMAT};
    t[nt++] = (bad_png){"bad-depth", with_ihdr(16, 16, 3, 0, valid + idat, vn - idat, &n), n,
                        "bad PNG", MCL_ERR_FORMAT};
    t[nt++] = (bad_png){"bad-color-type", with_ihdr(16, 16, 8, 5, valid + idat, vn - idat, &n), n,
                        "bad PNG", MCL_ERR_FORMAT};
    t[nt++] = (bad_png){"palette-without-plte",
                        with_ihdr(16, 16, 8, 3, valid + idat, vn - idat, &n), n, "bad PNG",
                        MCL_ERR_FORMAT};
    /* more pixels declared than the image data holds (valid CRCs everywhere) */
    t[nt++] = (bad_png){"not-enough-data",
                        with_ihdr(16, 64, 8, 0, valid + idat, vn - idat, &n), n, "bad PNG",
                        MCL_ERR_FORMAT};
    /* corrupt deflate data inside IDAT with a recomputed, valid CRC */
    b = DUP(valid, vn);
    if (b) {
        uint32_t len = (uint32_t)b[idat] << 24 | (uint32_t)b[idat + 1] << 16 |
                       (uint32_t)b[idat + 2] << 8 | b[idat + 3];
        for (uint32_t i = 2; i < len; i++) b[idat + 8 + i] = (uint8_t)(0x5A ^ (i * 31));
        put_be32(b + idat + 8 + len, (uint32_t)crc32(0, b + idat + 4, 4 + len));
    }
    t[nt++] = (bad_png){"corrupt-deflate", b, vn, "bad PNG", MCL_ERR_FORMAT};
    /* an ancillary chunk claiming 788 MB in a short file (found by fuzz-png: libpng would
     * allocate the declared length before reading) */
    {
        uint8_t tail[12 + 16];
        put_be32(tail, 788529196u);
        memcpy(tail + 4, "pCAL", 4);
        memset(tail + 8, 'x', sizeof tail - 8);
        b = with_ihdr(16, 16, 8, 0, tail, sizeof tail, &n);
        t[nt++] = (bad_png){"huge-ancillary-chunk", b, n, "pCAL", MCL_ERR_FORMAT};
            memcpy(tail + 4, "sCAL", 4);
        b = with_ihdr(16, 16, 8, 0, tail, sizeof tail, &n);
        t[nt++] = (bad_png){"huge-scal-chunk", b, n, "bad PNG", MCL_ERR_FORMAT};
    }
    /* IHDR, then IEND: no image data at all */
    b = with_ihdr(16, 16, 8, 0, valid + iend, vn - iend, &n);
    t[nt++] = (bad_png){"no-idat", b, n, "bad PNG", MCL_ERR_FORMAT};
#undef DUP
    char err[512], path[256];
    for (int i = 0; i < nt; i++) {
        if (!CHECK(t[i].bytes != NULL, "%s: build the input", t[i].name)) continue;
        for (int from_file = 0; from_file < 2; from_file++) {
            uint8_t *g = (uint8_t *)&err; /* must be reset to NULL */
            int w = -1, h = -1;
            err[0] = '\0';
            mcl_status st;
            const char *nm = t[i].name;
            if (from_file) {
                snprintf(path, sizeof path, "%s/%s.png", g_dir, t[i].name);
                if (!CHECK(write_file(path, t[i].bytes, t[i].n) == 0, "write %s", path)) continue;
                nm = path;
                st = mcl_png_read(path, 0, &g, &w, &h, err, sizeof err);
                unlink(path);
            } else {
                st = mcl_png_read_mem(t[i].bytes, t[i].n, t[i].name, 0, &g, &w, &h, err,
                                      sizeof err);
            }
            if (from_file) printf("  %-22s %s\n", t[i].name, err);
            CHECK(st == t[i].want, "%s (%s): status %d, want %d (%s)", t[i].name,
                  from_file ? "file" : "memory", (int)st, (int)t[i].want, err);
            CHECK(strstr(err, nm) != NULL && strstr(err, t[i].needle) != NULL,
                  "%s (%s): message '%s' should name the file and say '%s'", t[i].name,
                  from_file ? "file" : "memory", err, t[i].needle);
            CHECK(g == NULL && w == 0 && h == 0, "%s (%s): no image returned", t[i].name,
                  from_file ? "file" : "memory");
            if (st == MCL_OK) free(g);
        }
        free(t[i].bytes);
    }
    /* unreadable paths */
    uint8_t *g = NULL;
    int w, h;
    mcl_status st = mcl_png_read("no-such-file.png", 0, &g, &w, &h, err, sizeof err);
    CHECK(st == MCL_ERR_IO && strstr(err, "no-such-file.png"), "missing file: %s", err);
    free(valid);
    printf("test-png: %d malformed inputs, each from memory and from a file\n", nt);
}

int main(void)
{
    tu_begin("test-png", SEED);
    snprintf(g_dir, sizeof g_dir, "test-png.tmp.%ld", (long)getpid());
    if (mkdir(g_dir, 0755) != 0) {
        fprintf(stderr, "test-png: cannot create %s in the current directory\n", g_dir);
        return 1;
    }
    test_round_trip();
    test_conversions();
    test_malformed();
    const int left = tu_count_entries(g_dir, ".tmp.");
    CHECK(left == 0, "no temporary files left by the writer (%d)", left);
    CHECK(tu_rm_rf(g_dir) == 0, "remove %s", g_dir);
    return tu_summary();
}
