/* test-dataset.c — image sets in memory and on disk (src/data/dataset.c, fmnist.c).
 *
 *  - the 32×32 fitting rule (centre padding; exact area resize checked against an
 *    independent supersampling reference; aspect kept by padding);
 *  - datasets from arrays: the class index, class positions, label checks;
 *  - user data: idx:IMAGES,LABELS (plain/gzip, ubyte/int32 labels, any H×W) and pngdir:DIR
 *    (sorted class folders and files, mixed sizes and colour types), built in a temporary
 *    directory under the current one; the committed fixtures in data/fixtures/ with recorded
 *    SHA-256 of their decoded contents; malformed user data;
 *  - prepared sets: mcl_prepared_write + mcl_dataset_load for each split (class split and
 *    example split), statistics, deterministic bytes, SHA256SUMS verification and tamper
 *    detection, the "not prepared" message, corrupt sets;
 *  - Fashion-MNIST from /usr/share/datasets/fashion-mnist when installed (else that part is
 *    reported as skipped; everything else still runs), and the missing-package message.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dataset.h"
#include "dataset_io.h"
#include "fmnist.h"
#include "idx.h"
#include "png_io.h"
#include "prepared.h"
#include "rng.h"
#include "sha256.h"
#include "testutil.h"

#define SEED 0xda7a5e7ULL
#define PIX (MCL_IMG * MCL_IMG)

static char g_tmp[128];
static char g_err[1024];

/* ---- helpers ---- */


static void tpath(char *out, size_t cap, const char *rel)
{
    snprintf(out, cap, "%s/%s", g_tmp, rel);
}

static int mkdirs(const char *rel)
{
    char p[512];
    tpath(p, sizeof p, rel);
    return mkdir(p, 0755) == 0 ? 0 : -1;
}

static void fill_random(uint8_t *p, size_t n, uint64_t stream)
{
    mcl_rng r;
    mcl_rng_init(&r, SEED, stream);
    for (size_t i = 0; i < n; i++) p[i] = (uint8_t)mcl_rng_next_u32(&r);
}

static void hex_of(const void *p, size_t n, char hex[65])
{
    mcl_sha256_buf_hex(p, n, hex);
}

/* Reference for the area resize: replicate every source pixel nh × nw times, then average
 * blocks of h × w (exact integers, one rounding). Independent of dataset.c's overlap loops. */
static void ref_resize(const uint8_t *src, int h, int w, int nh, int nw, uint8_t *dst)
{
    for (int oy = 0; oy < nh; oy++)
        for (int ox = 0; ox < nw; ox++) {
            int64_t s = 0;
            for (int64_t Y = (int64_t)oy * h; Y < (int64_t)(oy + 1) * h; Y++)
                for (int64_t X = (int64_t)ox * w; X < (int64_t)(ox + 1) * w; X++)
                    s += src[(Y / nh) * w + X / nw];
            int64_t tot = (int64_t)h * w;
            dst[oy * nw + ox] = (uint8_t)((s + tot / 2) / tot);
        }
}

static void ref_fit(const uint8_t *src, int h, int w, uint8_t *out)
{
    memset(out, 0, PIX);
    int nh = h, nw = w;
    uint8_t *tmp = NULL;
    const uint8_t *img = src;
    if (h > 32 || w > 32) {
        int L = h > w ? h : w;
        nh = (int)lround(h * 32.0 / L);
        nw = (int)lround(w * 32.0 / L);
        if (nh < 1) nh = 1;
        if (nw < 1) nw = 1;
        tmp = malloc((size_t)nh * nw);
        if (!tmp) return;
        ref_resize(src, h, w, nh, nw, tmp);
        img = tmp;
    }
    int oy = (32 - nh) / 2, ox = (32 - nw) / 2;
    for (int y = 0; y < nh; y++)
        for (int x = 0; x < nw; x++) out[(oy + y) * 32 + ox + x] = img[y * nw + x];
    free(tmp);
}

/* ---- the fitting rule ---- */

static void test_fit(void)
{
    uint8_t out[PIX], want[PIX];
    /* 28x28: a 2-pixel border */
    uint8_t a[28 * 28];
    fill_random(a, sizeof a, 1);
    mcl_image_fit32(a, 28, 28, out);
    int ok = 1;
    for (int y = 0; y < 32; y++)
        for (int x = 0; x < 32; x++) {
            int in = y >= 2 && y < 30 && x >= 2 && x < 30;
            ok &= out[y * 32 + x] == (in ? a[(y - 2) * 28 + x - 2] : 0);
        }
    CHECK(ok, "28x28 is centred with a 2-pixel border");
    /* 32x32: unchanged */
    uint8_t b[PIX];
    fill_random(b, sizeof b, 2);
    mcl_image_fit32(b, 32, 32, out);
    CHECK(memcmp(out, b, PIX) == 0, "32x32 is unchanged");
    /* odd sizes: offsets floor((32-h)/2), floor((32-w)/2) */
    uint8_t c[30 * 31];
    fill_random(c, sizeof c, 3);
    mcl_image_fit32(c, 30, 31, out);
    CHECK(out[1 * 32 + 0] == c[0] && out[30 * 32 + 30] == c[29 * 31 + 30] && out[0] == 0 &&
              out[31 * 32 + 31] == 0,
          "30x31 sits at row 1, column 0");
    uint8_t one = 77;
    mcl_image_fit32(&one, 1, 1, out);
    int others = 0;
    for (int i = 0; i < PIX; i++) others += i != 15 * 32 + 15 && out[i];
    CHECK(out[15 * 32 + 15] == 77 && others == 0, "1x1 lands at (15,15)");
    /* 64x64 constant and checkerboard */
    uint8_t *d = malloc(100 * 100);
    if (!CHECK(d != NULL, "malloc")) return;
    memset(d, 200, 64 * 64);
    mcl_image_fit32(d, 64, 64, out);
    ok = 1;
    for (int i = 0; i < PIX; i++) ok &= out[i] == 200;
    CHECK(ok, "64x64 constant 200 stays 200 everywhere");
    for (int y = 0; y < 64; y++)
        for (int x = 0; x < 64; x++) d[y * 64 + x] = (uint8_t)((x + y) % 2 ? 255 : 0);
    mcl_image_fit32(d, 64, 64, out);
    ok = 1;
    for (int i = 0; i < PIX; i++) ok &= out[i] == 128;
    CHECK(ok, "64x64 checkerboard averages to 127.5, rounded to 128");
    /* 64 tall x 32 wide: becomes 32x16 centred (columns 8..23) */
    memset(d, 90, 64 * 32);
    mcl_image_fit32(d, 64, 32, out);
    ok = 1;
    for (int y = 0; y < 32; y++)
        for (int x = 0; x < 32; x++) ok &= out[y * 32 + x] == (x >= 8 && x < 24 ? 90 : 0);
    CHECK(ok, "64x32 keeps its aspect: 32x16 in columns 8..23");
    /* non-integer ratios against the supersampling reference */
    static const int sizes[][2] = {{48, 48}, {100, 37}, {33, 32}, {32, 33}, {45, 70}, {99, 1},
                                   {3, 90}};
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        int h = sizes[k][0], w = sizes[k][1];
        fill_random(d, (size_t)h * w, 10 + k);
        mcl_image_fit32(d, h, w, out);
        ref_fit(d, h, w, want);
        int bad = -1;
        for (int i = 0; i < PIX && bad < 0; i++)
            if (out[i] != want[i]) bad = i;
        CHECK(bad < 0, "%dx%d area resize: pixel %d is %d, reference %d", h, w, bad,
              bad >= 0 ? out[bad] : 0, bad >= 0 ? want[bad] : 0);
    }
    free(d);
}

/* ---- datasets from arrays ---- */

static int index_consistent(const mcl_dataset *ds)
{
    if (ds->class_start[0] != 0 || ds->class_start[ds->n_classes] != ds->n) return 0;
    for (int c = 0; c < ds->n_classes; c++) {
        if (c && ds->class_ids[c] <= ds->class_ids[c - 1]) return 0;
        if (mcl_dataset_class_pos(ds, ds->class_ids[c]) != c) return 0;
        for (int64_t k = ds->class_start[c]; k < ds->class_start[c + 1]; k++) {
            int64_t i = ds->class_index[k];
            if (i < 0 || i >= ds->n || ds->labels[i] != ds->class_ids[c]) return 0;
            if (k > ds->class_start[c] && ds->class_index[k - 1] >= i) return 0;
        }
    }
    return 1;
}

static void test_arrays(void)
{
    enum { N = 7 };
    uint8_t img[N * PIX];
    fill_random(img, sizeof img, 20);
    int32_t lab[N] = {5, 2, 5, 9, 2, 5, 0};
    mcl_dataset *ds = NULL;
    mcl_status st = mcl_dataset_from_arrays("arr", img, lab, N, &ds, g_err, sizeof g_err);
    if (!CHECK(st == MCL_OK && ds, "from_arrays: %s", g_err)) return;
    CHECK(ds->n == N && ds->n_classes == 4 && ds->n_classes_total == 10, "n %lld, classes %d of %d",
          (long long)ds->n, ds->n_classes, ds->n_classes_total);
    CHECK(ds->class_ids[0] == 0 && ds->class_ids[1] == 2 && ds->class_ids[2] == 5 &&
              ds->class_ids[3] == 9,
          "class ids ascending");
    CHECK(index_consistent(ds), "class index consistent");
    CHECK(ds->class_start[3] - ds->class_start[2] == 3 && ds->class_index[ds->class_start[2]] == 0 &&
              ds->class_index[ds->class_start[2] + 2] == 5,
          "class 5 holds images 0, 2, 5");
    CHECK(mcl_dataset_class_pos(ds, 5) == 2 && mcl_dataset_class_pos(ds, 3) == -1 &&
              mcl_dataset_class_pos(ds, -1) == -1 && mcl_dataset_class_pos(ds, 10) == -1 &&
              mcl_dataset_class_pos(NULL, 0) == -1,
          "class positions");
    CHECK(memcmp(ds->images, img, sizeof img) == 0 && strcmp(ds->name, "arr") == 0,
          "images copied, name kept");
    double m = 0, s2 = 0;
    for (size_t i = 0; i < sizeof img; i++) m += img[i] / 255.0;
    m /= (double)sizeof img;
    for (size_t i = 0; i < sizeof img; i++) s2 += (img[i] / 255.0 - m) * (img[i] / 255.0 - m);
    CHECK_NEAR("mean of the array set", ds->mean, m, 1e-6, 0);
    CHECK_NEAR("std of the array set", ds->std, sqrt(s2 / (double)sizeof img), 1e-6, 0);
    mcl_dataset_free(ds);
    lab[3] = -4;
    st = mcl_dataset_from_arrays("arr", img, lab, N, &ds, g_err, sizeof g_err);
    CHECK(st == MCL_ERR_FORMAT && ds == NULL && strstr(g_err, "negative"), "negative label: %s",
          g_err);
    st = mcl_dataset_from_arrays("arr", NULL, lab, N, &ds, g_err, sizeof g_err);
    CHECK(st == MCL_ERR_NULL, "null images");
    st = mcl_dataset_from_arrays("empty", NULL, NULL, 0, &ds, g_err, sizeof g_err);
    CHECK(st == MCL_OK && ds && ds->n == 0 && ds->n_classes == 0, "an empty set: %s", g_err);
    mcl_dataset_free(ds);
    mcl_dataset_free(NULL);
}

/* ---- user data ---- */

static const char *srcdir(void)
{
    static char dir[1024];
    const char *cands[3] = {getenv("METACL_SRCDIR"), ".", ".."};
    for (int i = 0; i < 3; i++) {
        if (!cands[i] || !*cands[i]) continue;
        snprintf(dir, sizeof dir, "%s/data/fixtures/tiny-images-idx3-ubyte.gz", cands[i]);
        if (access(dir, R_OK) == 0) {
            snprintf(dir, sizeof dir, "%s", cands[i]);
            return dir;
        }
    }
    return NULL;
}

/* Recorded at fixture generation (tools/build/make-fixtures.c): SHA-256 of the decoded pixels and
 * labels as loaded. */
#define FIX_IDX_IMAGES_SHA "e158cd05dc0655422e7a84a44a5899dee3bb2d6c0714329aa5e4cefe524c246d"
#define FIX_IDX_LABELS_SHA "0d6036a2fc0ec3ed212cec7556dcd074bb587c0d84a7a52bc523f66bd628ffc3"
#define FIX_PNG_IMAGES_SHA "efb3f95b528568970ea8efe0e899305d67263597f62050c179a5ce1b6af69eb7"

static void test_fixtures(void)
{
    const char *sd = srcdir();
    if (!CHECK(sd != NULL, "data/fixtures not found (set METACL_SRCDIR to the source tree)"))
        return;
    char spec[4096], hex[65];
    snprintf(spec, sizeof spec, "idx:%s/data/fixtures/tiny-images-idx3-ubyte.gz,%s/data/fixtures/tiny-labels-idx1-ubyte.gz",
             sd, sd);
    mcl_dataset *ds = NULL;
    mcl_status st = mcl_dataset_load(spec, NULL, MCL_SPLIT_ALL, &ds, g_err, sizeof g_err);
    if (CHECK(st == MCL_OK, "load the IDX fixture: %s", g_err)) {
        CHECK(ds->n == 36 && ds->n_classes == 3 && ds->n_classes_total == 3, "36 images, 3 classes");
        int ok = 1;
        for (int c = 0; c < 3; c++) ok &= ds->class_start[c + 1] - ds->class_start[c] == 12;
        CHECK(ok && index_consistent(ds), "12 images per class");
        CHECK(strcmp(ds->name, "tiny-images-idx3-ubyte.gz") == 0, "name from the file: %s", ds->name);
        hex_of(ds->images, (size_t)ds->n * PIX, hex);
        printf("test-dataset: fixture idx images sha256 %s\n", hex);
        CHECK(strcmp(hex, FIX_IDX_IMAGES_SHA) == 0, "IDX fixture images: sha256 %s", hex);
        hex_of(ds->labels, sizeof *ds->labels * (size_t)ds->n, hex);
        printf("test-dataset: fixture idx labels sha256 %s\n", hex);
        CHECK(strcmp(hex, FIX_IDX_LABELS_SHA) == 0, "IDX fixture labels: sha256 %s", hex);
        CHECK(ds->mean > 0.02f && ds->mean < 0.5f && ds->std > 0.05f, "fixture statistics %f %f",
              (double)ds->mean, (double)ds->std);
    }
    mcl_dataset_free(ds);
    ds = NULL;
    st = mcl_dataset_load(spec, NULL, MCL_SPLIT_VAL, &ds, g_err, sizeof g_err);
    CHECK(st == MCL_ERR_INVALID && !ds && strstr(g_err, "val split"), "user data has no val split: %s",
          g_err);
    st = mcl_dataset_load(spec, NULL, MCL_SPLIT_TRAIN, &ds, g_err, sizeof g_err);
    CHECK(st == MCL_OK && ds && ds->n == 36, "user data as TRAIN: %s", g_err);
    mcl_dataset_free(ds);
    ds = NULL;
    snprintf(spec, sizeof spec, "pngdir:%s/data/fixtures/tiny-pngdir", sd);
    st = mcl_dataset_load(spec, NULL, MCL_SPLIT_ALL, &ds, g_err, sizeof g_err);
    if (CHECK(st == MCL_OK, "load the PNG fixture: %s", g_err)) {
        CHECK(ds->n == 6 && ds->n_classes == 2 && index_consistent(ds), "6 images, 2 classes");
        /* folders sorted by name: cross = 0, ring = 1; files 0.png 1.png 2.png */
        CHECK(ds->labels[0] == 0 && ds->labels[2] == 0 && ds->labels[3] == 1 && ds->labels[5] == 1,
              "classes in folder-name order");
        hex_of(ds->images, (size_t)ds->n * PIX, hex);
        printf("test-dataset: fixture png images sha256 %s\n", hex);
        CHECK(strcmp(hex, FIX_PNG_IMAGES_SHA) == 0, "PNG fixture images: sha256 %s", hex);
    }
    mcl_dataset_free(ds);
}

static void test_user_idx(void)
{
    char ip[512], lp[512], spec[1100];
    mcl_dataset *ds = NULL;
    mcl_status st;
    /* 28x28 images, ubyte labels, gzip */
    enum { N = 10 };
    uint8_t *img = malloc(N * 40 * 20 + N * 28 * 28);
    if (!CHECK(img != NULL, "malloc")) return;
    fill_random(img, N * 28 * 28, 30);
    uint8_t lab8[N] = {3, 1, 3, 0, 1, 1, 3, 0, 0, 3};
    int64_t d3[3] = {N, 28, 28}, d1[1] = {N};
    tpath(ip, sizeof ip, "u28-images.gz");
    tpath(lp, sizeof lp, "u28-labels.gz");
    mcl_idx_write(ip, MCL_IDX_UBYTE, 3, d3, img, 1, g_err, sizeof g_err);
    mcl_idx_write(lp, MCL_IDX_UBYTE, 1, d1, lab8, 1, g_err, sizeof g_err);
    snprintf(spec, sizeof spec, "idx:%s,%s", ip, lp);
    st = mcl_dataset_load(spec, NULL, MCL_SPLIT_ALL, &ds, g_err, sizeof g_err);
    if (CHECK(st == MCL_OK, "idx: 28x28 gzip: %s", g_err)) {
        int ok = ds->n == N;
        uint8_t want[PIX];
        for (int i = 0; i < N && ok; i++) {
            mcl_image_fit32(img + i * 28 * 28, 28, 28, want);
            ok &= memcmp(ds->images + i * PIX, want, PIX) == 0 && ds->labels[i] == lab8[i];
            ok &= ds->images[i * PIX + 2 * 32 + 2] == img[i * 28 * 28];
        }
        CHECK(ok, "idx: 28x28 images padded in order, labels kept");
        CHECK(ds->n_classes == 3 && ds->n_classes_total == 4 && index_consistent(ds),
              "idx: classes {0,1,3} of 4");
    }
    mcl_dataset_free(ds);
    ds = NULL;
    /* 40x20 images (resized), int32 labels, plain */
    fill_random(img, N * 40 * 20, 31);
    int32_t lab32[N] = {100, 7, 7, 100, 0, 0, 7, 100, 0, 7};
    int64_t e3[3] = {N, 40, 20};
    tpath(ip, sizeof ip, "u40-images.idx");
    tpath(lp, sizeof lp, "u40-labels.idx");
    mcl_idx_write(ip, MCL_IDX_UBYTE, 3, e3, img, 0, g_err, sizeof g_err);
    mcl_idx_write(lp, MCL_IDX_INT32, 1, d1, lab32, 0, g_err, sizeof g_err);
    snprintf(spec, sizeof spec, "idx:%s,%s", ip, lp);
    st = mcl_dataset_load(spec, NULL, MCL_SPLIT_ALL, &ds, g_err, sizeof g_err);
    if (CHECK(st == MCL_OK, "idx: 40x20 int32 labels: %s", g_err)) {
        int ok = 1;
        uint8_t want[PIX];
        for (int i = 0; i < N; i++) {
            ref_fit(img + i * 40 * 20, 40, 20, want);
            ok &= memcmp(ds->images + i * PIX, want, PIX) == 0 && ds->labels[i] == lab32[i];
        }
        CHECK(ok, "idx: 40x20 resized to 32x16 and centred (reference)");
        CHECK(ds->n_classes == 3 && ds->n_classes_total == 101 && index_consistent(ds),
              "idx: sparse int32 labels {0,7,100}");
    }
    mcl_dataset_free(ds);
    ds = NULL;
    /* a path with a comma in it */
    char cp[512];
    tpath(cp, sizeof cp, "with,comma-images.idx");
    rename(ip, cp);
    snprintf(spec, sizeof spec, "idx:%s,%s", cp, lp);
    st = mcl_dataset_load(spec, NULL, MCL_SPLIT_ALL, &ds, g_err, sizeof g_err);
    CHECK(st == MCL_OK && ds && ds->n == N, "idx: an image path containing a comma: %s", g_err);
    mcl_dataset_free(ds);
    ds = NULL;
    rename(cp, ip);
    /* malformed user data */
    char lp_short[512], lp_neg[512], lp_2d[512];
    tpath(lp_short, sizeof lp_short, "short-labels.idx");
    int64_t d9[1] = {N - 1}, d2[2] = {N, 1};
    mcl_idx_write(lp_short, MCL_IDX_INT32, 1, d9, lab32, 0, g_err, sizeof g_err);
    tpath(lp_neg, sizeof lp_neg, "neg-labels.idx");
    int32_t neg[N] = {0, 1, -2, 0, 0, 0, 0, 0, 0, 0};
    mcl_idx_write(lp_neg, MCL_IDX_INT32, 1, d1, neg, 0, g_err, sizeof g_err);
    tpath(lp_2d, sizeof lp_2d, "2d-labels.idx");
    mcl_idx_write(lp_2d, MCL_IDX_INT32, 2, d2, neg, 0, g_err, sizeof g_err);
    char ip_wide[512];
    tpath(ip_wide, sizeof ip_wide, "wide-images.idx");
    int64_t dw[3] = {1, 1, 70000};
    uint8_t *wide = calloc(70000, 1);
    if (wide) mcl_idx_write(ip_wide, MCL_IDX_UBYTE, 3, dw, wide, 0, g_err, sizeof g_err);
    free(wide);
    struct {
        const char *what, *images, *labels;
        mcl_status want;
        const char *needle;
    } bad[] = {
        {"70000 pixels wide", ip_wide, lp, MCL_ERR_FORMAT, "at most 65536 pixels per side"},
        {"labels one short", ip, lp_short, MCL_ERR_FORMAT, "9 labels for 10 images"},
        {"negative label", ip, lp_neg, MCL_ERR_FORMAT, "negative"},
        {"2-D labels", ip, lp_2d, MCL_ERR_FORMAT, "1-D"},
        {"labels as images", lp, lp, MCL_ERR_FORMAT, "N x H x W"},
        {"missing images", "no-such-images.idx", lp, MCL_ERR_IO, "no-such-images.idx"},
        {"missing labels", ip, "no-such-labels.idx", MCL_ERR_IO, "no-such-labels.idx"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
        snprintf(spec, sizeof spec, "idx:%s,%s", bad[k].images, bad[k].labels);
        g_err[0] = '\0';
        st = mcl_dataset_load(spec, NULL, MCL_SPLIT_ALL, &ds, g_err, sizeof g_err);
        CHECK(st == bad[k].want && ds == NULL && strstr(g_err, bad[k].needle),
              "idx: %s: status %d, '%s'", bad[k].what, (int)st, g_err);
        mcl_dataset_free(ds);
        ds = NULL;
    }
    st = mcl_dataset_load("idx:only-one-file.idx", NULL, MCL_SPLIT_ALL, &ds, g_err, sizeof g_err);
    CHECK(st == MCL_ERR_INVALID && strstr(g_err, "IMAGES,LABELS"), "idx: without a comma: %s",
          g_err);
    st = mcl_dataset_load("", NULL, MCL_SPLIT_ALL, &ds, g_err, sizeof g_err);
    CHECK(st == MCL_ERR_INVALID, "an empty spec: %s", g_err);
    free(img);
}

/* write a gray PNG of h×w into the temp tree */
static void put_png(const char *rel, const uint8_t *g, int w, int h)
{
    char p[512], err[256];
    tpath(p, sizeof p, rel);
    if (mcl_png_write_gray(p, g, w, h, err, sizeof err) != MCL_OK)
        CHECK(0, "write %s: %s", p, err);
}

static void test_user_pngdir(void)
{
    char p[512], spec[600];
    mkdirs("pd");
    mkdirs("pd/b_second");
    mkdirs("pd/a_first");
    mkdirs("pd/.hidden");
    uint8_t g28[28 * 28], g64[64 * 64], g10[10 * 40], want[PIX];
    fill_random(g28, sizeof g28, 40);
    memset(g64, 33, sizeof g64);
    fill_random(g10, sizeof g10, 41);
    put_png("pd/a_first/z.png", g28, 28, 28);
    put_png("pd/a_first/b.PNG", g64, 64, 64);
    put_png("pd/b_second/m.png", g10, 40, 10); /* 40 wide, 10 tall */
    put_png("pd/.hidden/x.png", g28, 28, 28);
    put_png("pd/a_first/.skip.png", g28, 28, 28);
    tpath(p, sizeof p, "pd/a_first/README.txt");
    FILE *f = fopen(p, "w");
    if (f) {
        fputs("not an image\n", f);
        fclose(f);
    }
    tpath(p, sizeof p, "pd");
    snprintf(spec, sizeof spec, "pngdir:%s", p);
    mcl_dataset *ds = NULL;
    mcl_status st = mcl_dataset_load(spec, NULL, MCL_SPLIT_ALL, &ds, g_err, sizeof g_err);
    if (CHECK(st == MCL_OK, "pngdir: %s", g_err)) {
        CHECK(ds->n == 3 && ds->n_classes == 2 && ds->n_classes_total == 2 && index_consistent(ds),
              "pngdir: 3 images in 2 classes (hidden entries and non-PNG files skipped)");
        CHECK(ds->labels[0] == 0 && ds->labels[1] == 0 && ds->labels[2] == 1,
              "pngdir: a_first = 0, b_second = 1");
        /* a_first: b.PNG (64x64 of 33) before z.png */
        int ok = 1;
        for (int i = 0; i < PIX; i++) ok &= ds->images[i] == 33;
        CHECK(ok, "pngdir: b.PNG (64x64) first, resized to 32x32");
        mcl_image_fit32(g28, 28, 28, want);
        CHECK(memcmp(ds->images + PIX, want, PIX) == 0, "pngdir: z.png padded");
        ref_fit(g10, 10, 40, want);
        CHECK(memcmp(ds->images + 2 * PIX, want, PIX) == 0, "pngdir: 40x10 resized to 32x8");
        CHECK(strcmp(ds->name, "pd") == 0, "pngdir: named after the folder (%s)", ds->name);
    }
    mcl_dataset_free(ds);
    ds = NULL;
    /* errors */
    mkdirs("pd_empty");
    mkdirs("pd_noimg");
    mkdirs("pd_noimg/cls");
    mkdirs("pd_bad");
    mkdirs("pd_bad/cls");
    tpath(p, sizeof p, "pd_bad/cls/broken.png");
    f = fopen(p, "wb");
    if (f) {
        fwrite("\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR", 1, 16, f);
        fclose(f);
    }
    struct {
        const char *rel, *needle;
        mcl_status want;
    } bad[] = {
        {"pd_empty", "no class sub-folders", MCL_ERR_FORMAT},
        {"pd_noimg", "no .png files", MCL_ERR_FORMAT},
        {"pd_bad", "broken.png", MCL_ERR_FORMAT},
        {"pd_missing", "no such folder", MCL_ERR_IO},
        {"pd/a_first/z.png", "not a folder", MCL_ERR_IO},
    };
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
        tpath(p, sizeof p, bad[k].rel);
        snprintf(spec, sizeof spec, "pngdir:%s", p);
        st = mcl_dataset_load(spec, NULL, MCL_SPLIT_ALL, &ds, g_err, sizeof g_err);
        CHECK(st == bad[k].want && ds == NULL && strstr(g_err, bad[k].needle) && strstr(g_err, g_tmp),
              "pngdir %s: status %d, '%s'", bad[k].rel, (int)st, g_err);
        mcl_dataset_free(ds);
        ds = NULL;
    }
}

/* ---- prepared sets ---- */

static int file_eq(const char *a, const char *b)
{
    char ha[65], hb[65], e[256];
    return mcl_sha256_file(a, ha, e, sizeof e) == MCL_OK &&
           mcl_sha256_file(b, hb, e, sizeof e) == MCL_OK && strcmp(ha, hb) == 0;
}

static int no_tmp_in(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return 0;
    struct dirent *e;
    int ok = 1;
    while ((e = readdir(d)) != NULL) ok &= strstr(e->d_name, ".tmp.") == NULL;
    closedir(d);
    return ok;
}

static void test_prepared(void)
{
    enum { C = 10, PER = 4, N = C * PER };
    uint8_t *img = malloc((size_t)N * PIX);
    int32_t lab[N];
    uint8_t esplit[N];
    if (!CHECK(img != NULL, "malloc")) return;
    fill_random(img, (size_t)N * PIX, 50);
    for (int i = 0; i < N; i++) {
        lab[i] = (i * 7) % C; /* classes interleaved */
        esplit[i] = (uint8_t)(i >= N - C ? 3 : 1); /* the last image of every class is test */
    }
    mcl_class_info ci[C];
    for (int c = 0; c < C; c++) {
        ci[c].split = c < 6 ? MCL_SPLIT_TRAIN : c < 8 ? MCL_SPLIT_VAL : MCL_SPLIT_TEST;
        snprintf(ci[c].text, sizeof ci[c].text, "class\t%d\nx", c); /* tab/newline cleaned */
    }
    mcl_prepared p = {0};
    p.name = "tiny";
    p.source = "test-dataset";
    p.licence = "CC0";
    p.n = N;
    p.images = img;
    p.labels = lab;
    p.n_classes = C;
    p.classes = ci;
    p.seed = 42;
    p.instances = PER;
    char dd[512], dd2[512], dir[600], path[700], path2[700];
    tpath(dd, sizeof dd, "cache/sub");
    tpath(dd2, sizeof dd2, "cache2");
    mcl_status st = mcl_prepared_write(dd, &p, g_err, sizeof g_err);
    if (!CHECK(st == MCL_OK, "prepared write (class split): %s", g_err)) {
        free(img);
        return;
    }
    snprintf(dir, sizeof dir, "%s/tiny", dd);
    CHECK(mcl_prepared_exists(dir) && no_tmp_in(dir), "complete, no temporary files");
    /* train statistics over classes 0..5 */
    double s1 = 0, s2 = 0, cnt = 0;
    for (int i = 0; i < N; i++)
        if (lab[i] < 6)
            for (int k = 0; k < PIX; k++) {
                double v = img[(size_t)i * PIX + k] / 255.0;
                s1 += v;
                s2 += v * v;
                cnt++;
            }
    double tm = s1 / cnt, ts = sqrt(s2 / cnt - tm * tm);
    static const struct {
        mcl_split sp;
        int n, classes;
    } want[4] = {{MCL_SPLIT_ALL, N, C}, {MCL_SPLIT_TRAIN, 6 * PER, 6}, {MCL_SPLIT_VAL, 2 * PER, 2},
                 {MCL_SPLIT_TEST, 2 * PER, 2}};
    for (int k = 0; k < 4; k++) {
        mcl_dataset *ds = NULL;
        st = mcl_dataset_load("tiny", dd, want[k].sp, &ds, g_err, sizeof g_err);
        if (!CHECK(st == MCL_OK, "load split %d: %s", (int)want[k].sp, g_err)) continue;
        CHECK(ds->n == want[k].n && ds->n_classes == want[k].classes && ds->n_classes_total == C &&
                  index_consistent(ds),
              "split %d: %lld images, %d classes of %d", (int)want[k].sp, (long long)ds->n,
              ds->n_classes, ds->n_classes_total);
        /* images and global labels in file order */
        int ok = 1;
        int64_t j = 0;
        for (int i = 0; i < N; i++) {
            int in = want[k].sp == MCL_SPLIT_ALL || ci[lab[i]].split == want[k].sp;
            if (!in) continue;
            ok &= j < ds->n && ds->labels[j] == lab[i] &&
                  memcmp(ds->images + j * PIX, img + (size_t)i * PIX, PIX) == 0;
            j++;
        }
        CHECK(ok && j == ds->n, "split %d: contents and global labels", (int)want[k].sp);
        CHECK_NEAR("stored mean (train classes)", ds->mean, tm, 2e-6, 0);
        CHECK_NEAR("stored std (train classes)", ds->std, ts, 2e-6, 0);
        mcl_dataset_free(ds);
    }
    /* meta and classes */
    mcl_prepared_meta m;
    st = mcl_prepared_read_meta(dir, &m, g_err, sizeof g_err);
    CHECK(st == MCL_OK && m.format == 1 && m.n == N && m.classes == C && m.seed == 42 &&
              m.instances == PER && strcmp(m.licence, "CC0") == 0 && strcmp(m.split, "class") == 0,
          "meta.txt: %s", g_err);
    mcl_class_info *rc = NULL;
    st = mcl_prepared_read_classes(dir, C, &rc, g_err, sizeof g_err);
    CHECK(st == MCL_OK && rc && rc[7].split == MCL_SPLIT_VAL && strcmp(rc[3].text, "class 3 x") == 0,
          "classes.txt: %s / '%s'", g_err, rc ? rc[3].text : "");
    free(rc);
    /* SHA256SUMS */
    mcl_sum_entry *e = NULL;
    int ne = 0;
    st = mcl_prepared_verify(dir, &e, &ne, g_err, sizeof g_err);
    int all_ok = ne == 4;
    for (int i = 0; i < ne; i++) all_ok &= e[i].ok;
    CHECK(st == MCL_OK && all_ok, "SHA256SUMS verifies (%d entries): %s", ne, g_err);
    free(e);
    /* same inputs, same bytes */
    st = mcl_prepared_write(dd2, &p, g_err, sizeof g_err);
    static const char *const files[] = {"images.idx", "labels.idx", "classes.txt", "meta.txt",
                                        "SHA256SUMS"};
    int same = st == MCL_OK;
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        snprintf(path2, sizeof path2, "%s/tiny/%s", dd2, files[i]);
        same &= file_eq(path, path2);
    }
    CHECK(same, "a second write gives identical files");
    /* tampering is detected */
    snprintf(path, sizeof path, "%s/images.idx", dir);
    FILE *f = fopen(path, "r+b");
    if (f) {
        fseek(f, 16 + 5 * PIX + 100, SEEK_SET);
        int c = fgetc(f);
        fseek(f, 16 + 5 * PIX + 100, SEEK_SET);
        fputc(c ^ 1, f);
        fclose(f);
    }
    st = mcl_prepared_verify(dir, &e, &ne, g_err, sizeof g_err);
    int flagged = 0;
    for (int i = 0; i < ne; i++) flagged += !e[i].ok && strcmp(e[i].file, "images.idx") == 0;
    CHECK(st == MCL_ERR_FORMAT && flagged == 1 && strstr(g_err, "mismatch") &&
              strstr(g_err, "images.idx"),
          "a flipped bit is reported: %s", g_err);
    free(e);
    /* a missing listed file, and a malformed SHA256SUMS */
    snprintf(path, sizeof path, "%s/SHA256SUMS", dir);
    f = fopen(path, "a");
    if (f) {
        fputs("0000000000000000000000000000000000000000000000000000000000000000  gone.bin\n", f);
        fclose(f);
    }
    st = mcl_prepared_verify(dir, &e, &ne, g_err, sizeof g_err);
    CHECK(st == MCL_ERR_FORMAT && ne == 5 && !e[4].ok && e[4].got[0] == '\0', "a missing file: %s",
          g_err);
    free(e);
    f = fopen(path, "a");
    if (f) {
        fputs("deadbeef  ../../etc/passwd\n", f);
        fclose(f);
    }
    st = mcl_prepared_verify(dir, &e, &ne, g_err, sizeof g_err);
    CHECK(st == MCL_ERR_FORMAT && strstr(g_err, "SHA256SUMS:6"), "a malformed line: %s", g_err);
    free(e);

    /* example split (like fmnist): rewrite over the same directory in dd2 */
    p.example_split = esplit;
    for (int c = 0; c < C; c++) ci[c].split = MCL_SPLIT_ALL;
    st = mcl_prepared_write(dd2, &p, g_err, sizeof g_err);
    CHECK(st == MCL_OK, "prepared write (example split): %s", g_err);
    int ntr = 0;
    s1 = s2 = cnt = 0;
    for (int i = 0; i < N; i++) {
        ntr += esplit[i] == 1;
        if (esplit[i] == 1)
            for (int k = 0; k < PIX; k++) {
                double v = img[(size_t)i * PIX + k] / 255.0;
                s1 += v;
                s2 += v * v;
                cnt++;
            }
    }
    tm = s1 / cnt;
    ts = sqrt(s2 / cnt - tm * tm);
    mcl_dataset *ds = NULL;
    st = mcl_dataset_load("tiny", dd2, MCL_SPLIT_TRAIN, &ds, g_err, sizeof g_err);
    CHECK(st == MCL_OK && ds->n == ntr && ds->n_classes == C, "example split train: %s", g_err);
    if (ds) {
        CHECK_NEAR("example split: mean of the train examples", ds->mean, tm, 2e-6, 0);
        CHECK_NEAR("example split: std of the train examples", ds->std, ts, 2e-6, 0);
    }
    mcl_dataset_free(ds);
    ds = NULL;
    st = mcl_dataset_load("tiny", dd2, MCL_SPLIT_TEST, &ds, g_err, sizeof g_err);
    CHECK(st == MCL_OK && ds->n == N - ntr, "example split test: %s", g_err);
    mcl_dataset_free(ds);
    ds = NULL;
    st = mcl_dataset_load("tiny", dd2, MCL_SPLIT_VAL, &ds, g_err, sizeof g_err);
    CHECK(st == MCL_ERR_INVALID && strstr(g_err, "no images in the val split"),
          "example split val is empty: %s", g_err);
    /* back to a class split: the stale split.idx goes away */
    p.example_split = NULL;
    st = mcl_prepared_write(dd2, &p, g_err, sizeof g_err);
    snprintf(path, sizeof path, "%s/tiny/split.idx", dd2);
    CHECK(st == MCL_OK && access(path, F_OK) != 0, "a stale split.idx is removed");
    st = mcl_dataset_load("tiny", dd2, MCL_SPLIT_TRAIN, &ds, g_err, sizeof g_err);
    CHECK(st == MCL_OK && ds->n == N, "classes marked 'all' count as train: %s", g_err);
    mcl_dataset_free(ds);
    ds = NULL;

    /* not prepared: the message says what to run */
    st = mcl_dataset_load("hanzi", dd, MCL_SPLIT_ALL, &ds, g_err, sizeof g_err);
    char needle[700];
    snprintf(needle, sizeof needle, "run: metacl data prepare hanzi --data-dir %s", dd);
    CHECK(st == MCL_ERR_IO && ds == NULL && strstr(g_err, needle), "not prepared: %s", g_err);
    setenv("METACL_DATA", dd, 1);
    CHECK(strcmp(mcl_data_dir_default(), dd) == 0, "METACL_DATA sets the default data dir");
    st = mcl_dataset_load("tiny", NULL, MCL_SPLIT_TEST, &ds, g_err, sizeof g_err);
    CHECK(st == MCL_OK && ds && ds->n == 2 * PER, "load from $METACL_DATA: %s", g_err);
    mcl_dataset_free(ds);
    ds = NULL;
    st = mcl_dataset_load("kanji", NULL, MCL_SPLIT_ALL, &ds, g_err, sizeof g_err);
    CHECK(st == MCL_ERR_IO && strstr(g_err, "run: metacl data prepare kanji") &&
              !strstr(g_err, "--data-dir"),
          "not prepared, default dir: %s", g_err);
    unsetenv("METACL_DATA");
    const char *back = mcl_data_dir_default(); /* NULL without HOME (test-data-dir) */
    CHECK(!back || strcmp(back, dd) != 0, "without METACL_DATA the default is back (test-data-dir)");
    st = mcl_dataset_load("../etc", dd, MCL_SPLIT_ALL, &ds, g_err, sizeof g_err);
    CHECK(st == MCL_ERR_INVALID && ds == NULL, "a name with a slash is refused: %s", g_err);

    /* corrupt prepared sets */
    snprintf(path, sizeof path, "%s/tiny/labels.idx", dd2);
    int32_t badlab[N];
    memcpy(badlab, lab, sizeof lab);
    badlab[N - 1] = C + 5;
    int64_t d1[1] = {N};
    mcl_idx_write(path, MCL_IDX_INT32, 1, d1, badlab, 0, g_err, sizeof g_err);
    st = mcl_dataset_load("tiny", dd2, MCL_SPLIT_ALL, &ds, g_err, sizeof g_err);
    CHECK(st == MCL_ERR_FORMAT && ds == NULL && strstr(g_err, "labels.idx") && strstr(g_err, "outside"),
          "a label out of range: %s", g_err);
    snprintf(path, sizeof path, "%s/tiny/images.idx", dd2);
    if (truncate(path, 16 + 3 * PIX) != 0) CHECK(0, "truncate %s", path);
    st = mcl_dataset_load("tiny", dd2, MCL_SPLIT_ALL, &ds, g_err, sizeof g_err);
    CHECK(st == MCL_ERR_FORMAT && ds == NULL && strstr(g_err, "images.idx") &&
              strstr(g_err, "truncated"),
          "a truncated images.idx: %s", g_err);
    snprintf(path, sizeof path, "%s/tiny/meta.txt", dd2);
    f = fopen(path, "w");
    if (f) {
        fputs("format=2\nname=tiny\nn=40\nclasses=10\nmean=0.5\nstd=0.2\n", f);
        fclose(f);
    }
    st = mcl_dataset_load("tiny", dd2, MCL_SPLIT_ALL, &ds, g_err, sizeof g_err);
    CHECK(st == MCL_ERR_FORMAT && strstr(g_err, "format=2"), "a newer format: %s", g_err);
    f = fopen(path, "w");
    if (f) {
        fputs("format=1\nname=tiny\nclasses=10\n", f);
        fclose(f);
    }
    st = mcl_dataset_load("tiny", dd2, MCL_SPLIT_ALL, &ds, g_err, sizeof g_err);
    CHECK(st == MCL_ERR_FORMAT && strstr(g_err, "meta.txt") && strstr(g_err, "no n="),
          "an incomplete meta.txt: %s", g_err);
    snprintf(path, sizeof path, "%s/classes.txt", dir);
    f = fopen(path, "w");
    if (f) {
        fputs("0\ttrain\ta\n1\tsideways\tb\n", f);
        fclose(f);
    }
    st = mcl_dataset_load("tiny", dd, MCL_SPLIT_ALL, &ds, g_err, sizeof g_err);
    CHECK(st == MCL_ERR_FORMAT && strstr(g_err, "classes.txt:2") && strstr(g_err, "sideways"),
          "a bad classes.txt: %s", g_err);

    /* invalid writes */
    p.name = "bad/name";
    st = mcl_prepared_write(dd, &p, g_err, sizeof g_err);
    CHECK(st == MCL_ERR_INVALID, "a bad set name is refused: %s", g_err);
    p.name = "tiny2";
    p.labels = badlab;
    st = mcl_prepared_write(dd, &p, g_err, sizeof g_err);
    CHECK(st == MCL_ERR_INVALID && strstr(g_err, "outside"), "a label >= n_classes is refused: %s",
          g_err);
    snprintf(path, sizeof path, "%s/tiny2", dd);
    CHECK(!mcl_prepared_exists(path), "nothing half-written is marked complete");
    free(img);
}

/* ---- Fashion-MNIST ---- */

/* Recorded from the Debian dataset-fashion-mnist files: SHA-256 of the first 1000 prepared
 * (padded) images and of all 70000 labels as int32. */
#define FMNIST_FIRST1000_SHA "a25e47e25641b562565090f40ccfda2a06ae0a2691b3aeb9f0e622abf640ceff"
#define FMNIST_LABELS_SHA "d4aa62207beab3726b18ae26e95bfdf6f09fdd9d4f76fbf5a32f05a365c94620"


/* mcl_image_to_side: side 32 is the canvas; fmnist (content 28) at 28 is exactly its centred
 * box, at 30 that box on a 1-pixel border; a 32-pixel stroke canvas at 28 is the area-weighted
 * mean of what each output pixel covers (reference: overlaps in double, rounded; the exact
 * integer rule may round a tie differently: 1 level allowed). */
static void test_image_to_side(void)
{
    uint8_t canvas[PIX], out[PIX];
    fill_random(canvas, PIX, 77);
    mcl_image_to_side(canvas, 32, 32, out);
    CHECK(memcmp(out, canvas, PIX) == 0, "side 32: the canvas itself");
    mcl_image_to_side(canvas, MCL_FMNIST_SIDE, 28, out);
    int ok = 1;
    for (int y = 0; y < 28; y++)
        for (int x = 0; x < 28; x++) ok &= out[y * 28 + x] == canvas[(y + 2) * 32 + x + 2];
    CHECK(ok, "content 28 at side 28: the centred 28x28 box, exactly");
    mcl_image_to_side(canvas, MCL_FMNIST_SIDE, 30, out);
    ok = 1;
    for (int y = 0; y < 30; y++)
        for (int x = 0; x < 30; x++) {
            int in = y >= 1 && y < 29 && x >= 1 && x < 29;
            ok &= out[y * 30 + x] == (in ? canvas[(y + 1) * 32 + x + 1] : 0);
        }
    CHECK(ok, "content 28 at side 30: the box on a 1-pixel background border");
    mcl_image_to_side(canvas, 32, 28, out);
    int worst = 0;
    for (int oy = 0; oy < 28; oy++)
        for (int ox = 0; ox < 28; ox++) {
            double sum = 0.0;
            for (int y = 0; y < 32; y++)
                for (int x = 0; x < 32; x++) {
                    /* overlap of source pixel [y, y+1) with [oy·32/28, (oy+1)·32/28) */
                    double a0 = fmax(y, oy * 32.0 / 28), a1 = fmin(y + 1, (oy + 1) * 32.0 / 28);
                    double b0 = fmax(x, ox * 32.0 / 28), b1 = fmin(x + 1, (ox + 1) * 32.0 / 28);
                    if (a1 > a0 && b1 > b0) sum += (a1 - a0) * (b1 - b0) * canvas[y * 32 + x];
                }
            int want = (int)floor(sum / (32.0 / 28 * 32.0 / 28) + 0.5);
            int d = abs(want - out[oy * 28 + ox]);
            if (d > worst) worst = d;
        }
    CHECK(worst <= 1, "content 32 at side 28: area means (worst difference %d levels)", worst);
    /* the check can fail: the plain top-left 28x28 crop is not the area resize */
    ok = 1;
    for (int y = 0; y < 28; y++)
        for (int x = 0; x < 28; x++) ok &= abs(out[y * 28 + x] - canvas[y * 32 + x]) <= 1;
    CHECK(!ok, "a crop instead of the resize would be caught");
}

/* fmnist-val's rule on synthetic splits (no package needed): the last 500 training images
 * of each class in file order become VAL, test images never, other names untouched,
 * deterministic, and a class too small to hold 500 out is an error. */
static void test_view_splits(void)
{
    enum { C = 10, PER = 700, NTR = C * 600, N = C * PER };
    int32_t *lab = malloc(sizeof *lab * N);
    uint8_t *sp = malloc(N), *sp2 = malloc(N);
    if (!CHECK(lab && sp && sp2, "malloc")) {
        free(lab), free(sp), free(sp2);
        return;
    }
    for (int i = 0; i < N; i++) {
        lab[i] = (i * 3) % C;
        sp[i] = (uint8_t)(i < NTR ? MCL_SPLIT_TRAIN : MCL_SPLIT_TEST);
    }
    memcpy(sp2, sp, N);
    CHECK(mcl_dataset_view_splits("fmnist", lab, sp2, N, C, g_err, sizeof g_err) == MCL_OK &&
              memcmp(sp, sp2, N) == 0,
          "fmnist itself: no view, splits unchanged");
    mcl_status st = mcl_dataset_view_splits(MCL_FMNIST_VAL_NAME, lab, sp, N, C, g_err, sizeof g_err);
    CHECK(st == MCL_OK, "fmnist-val view: %s", g_err);
    int nval = 0, ok = 1, seen[C] = {0};
    for (int i = N - 1; i >= 0; i--) {
        if (i >= NTR) {
            ok &= sp[i] == MCL_SPLIT_TEST;
            continue;
        }
        int want = seen[lab[i]]++ < MCL_FMNIST_VAL_PER_CLASS ? MCL_SPLIT_VAL : MCL_SPLIT_TRAIN;
        ok &= sp[i] == want;
        nval += sp[i] == MCL_SPLIT_VAL;
    }
    CHECK(ok && nval == C * MCL_FMNIST_VAL_PER_CLASS,
          "%d held out: the last %d training images of each class, test untouched", nval,
          MCL_FMNIST_VAL_PER_CLASS);
    for (int i = 0; i < N; i++) sp2[i] = (uint8_t)(i < NTR ? MCL_SPLIT_TRAIN : MCL_SPLIT_TEST);
    mcl_dataset_view_splits(MCL_FMNIST_VAL_NAME, lab, sp2, N, C, g_err, sizeof g_err);
    CHECK(memcmp(sp, sp2, N) == 0, "deterministic: the same split twice");
    /* a class with exactly 500 training images cannot hold them all out */
    for (int i = 0; i < N; i++)
        sp[i] = (uint8_t)(lab[i] == 4 && i >= 500 * C ? MCL_SPLIT_TEST : i < NTR ? MCL_SPLIT_TRAIN : MCL_SPLIT_TEST);
    st = mcl_dataset_view_splits(MCL_FMNIST_VAL_NAME, lab, sp, N, C, g_err, sizeof g_err);
    CHECK(st == MCL_ERR_FORMAT && strstr(g_err, "class 4 has 500 training images"),
          "too small a class: %s", g_err);
    free(lab);
    free(sp);
    free(sp2);
}

/* The real fmnist-val (after test_fmnist prepared fmnist into dir dd): 5 000 VAL images (500
 * per class), TRAIN 55 000, together exactly fmnist's training file (a partition: every
 * training image is in one of them, in order), TEST the test file; deterministic; images at
 * side 28 are Fashion-MNIST's own pixels. */
static void test_fmnist_val(const char *dd)
{
    mcl_dataset *tr = NULL, *va = NULL, *va2 = NULL, *fr = NULL, *te = NULL;
    mcl_status st = mcl_dataset_load("fmnist", dd, MCL_SPLIT_TRAIN, &fr, g_err, sizeof g_err);
    if (st == MCL_OK) st = mcl_dataset_load(MCL_FMNIST_VAL_NAME, dd, MCL_SPLIT_TRAIN, &tr, g_err, sizeof g_err);
    if (st == MCL_OK) st = mcl_dataset_load(MCL_FMNIST_VAL_NAME, dd, MCL_SPLIT_VAL, &va, g_err, sizeof g_err);
    if (st == MCL_OK) st = mcl_dataset_load(MCL_FMNIST_VAL_NAME, dd, MCL_SPLIT_VAL, &va2, g_err, sizeof g_err);
    if (st == MCL_OK) st = mcl_dataset_load(MCL_FMNIST_VAL_NAME, dd, MCL_SPLIT_TEST, &te, g_err, sizeof g_err);
    if (CHECK(st == MCL_OK, "load fmnist-val splits: %s", g_err)) {
        int ok = va->n == 10 * MCL_FMNIST_VAL_PER_CLASS && tr->n == fr->n - va->n && te->n == 10000;
        for (int c = 0; c < 10 && ok; c++)
            ok &= va->class_start[c + 1] - va->class_start[c] == MCL_FMNIST_VAL_PER_CLASS;
        CHECK(ok, "fmnist-val: val %lld (500 per class), train %lld, test %lld", (long long)va->n,
              (long long)tr->n, (long long)te->n);
        /* walk fmnist's training file backwards: the last 500 of each class are val */
        int64_t jt = tr->n - 1, jv = va->n - 1, seen[10] = {0};
        int part = ok;
        for (int64_t i = fr->n - 1; i >= 0 && part; i--) {
            const int c = fr->labels[i];
            mcl_dataset *to = seen[c]++ < MCL_FMNIST_VAL_PER_CLASS ? va : tr;
            int64_t *j = to == va ? &jv : &jt;
            part = *j >= 0 && to->labels[*j] == c &&
                   memcmp(to->images + *j * PIX, fr->images + i * PIX, PIX) == 0;
            (*j)--;
        }
        CHECK(part && jt == -1 && jv == -1, "val and train partition fmnist's training file");
        CHECK(memcmp(va->images, va2->images, (size_t)va->n * PIX) == 0, "deterministic");
        CHECK(va->content_side == MCL_FMNIST_SIDE && tr->content_side == MCL_FMNIST_SIDE,
              "content side 28");
        CHECK(tr->mean != fr->mean && va->mean == tr->mean,
              "statistics of the 55 000 (%g, fmnist's %g), shared by the view's splits",
              (double)tr->mean, (double)fr->mean);
    }
    mcl_dataset_free(tr);
    mcl_dataset_free(va);
    mcl_dataset_free(va2);
    mcl_dataset_free(fr);
    mcl_dataset_free(te);
}

static int test_fmnist(void)
{
    char dd[512], bogus[512];
    tpath(bogus, sizeof bogus, "no-fashion-mnist-here");
    tpath(dd, sizeof dd, "fm");
    mcl_status st = mcl_fmnist_prepare(dd, bogus, NULL, g_err, sizeof g_err);
    CHECK(st == MCL_ERR_IO && strstr(g_err, "apt-get install dataset-fashion-mnist") &&
              strstr(g_err, "no-fashion-mnist-here"),
          "missing package message: %s", g_err);
    char probe[512];
    snprintf(probe, sizeof probe, "%s/train-images-idx3-ubyte.gz", MCL_FMNIST_DIR);
    if (access(probe, R_OK) != 0) {
        printf("test-dataset: SKIP Fashion-MNIST checks: %s not found "
               "(apt-get install dataset-fashion-mnist)\n", probe);
        return 0;
    }
    mcl_fmnist_stats s;
    st = mcl_fmnist_prepare(dd, NULL, &s, g_err, sizeof g_err);
    if (!CHECK(st == MCL_OK, "fmnist prepare: %s", g_err)) return 1;
    printf("test-dataset: fmnist train mean/std 28x28 %.4f/%.4f, padded 32x32 %.4f/%.4f\n",
           s.mean28, s.std28, s.mean32, s.std32);
    CHECK_NEAR("fmnist 28x28 train mean (doc/data.md 0.2860)", s.mean28, 0.2860, 5e-5, 0);
    CHECK_NEAR("fmnist 28x28 train std (doc/data.md 0.3530)", s.std28, 0.3530, 5e-5, 0);
    CHECK_NEAR("padding scales the mean by 784/1024", s.mean32, s.mean28 * 784.0 / 1024.0, 1e-9, 0);
    static const struct {
        mcl_split sp;
        int64_t n, per;
    } w[3] = {{MCL_SPLIT_ALL, 70000, 7000}, {MCL_SPLIT_TRAIN, 60000, 6000}, {MCL_SPLIT_TEST, 10000, 1000}};
    for (int k = 0; k < 3; k++) {
        mcl_dataset *ds = NULL;
        st = mcl_dataset_load("fmnist", dd, w[k].sp, &ds, g_err, sizeof g_err);
        if (!CHECK(st == MCL_OK, "load fmnist split %d: %s", (int)w[k].sp, g_err)) continue;
        int ok = ds->n == w[k].n && ds->n_classes == 10 && ds->n_classes_total == 10;
        for (int c = 0; c < 10 && ok; c++) ok &= ds->class_start[c + 1] - ds->class_start[c] == w[k].per;
        CHECK(ok && index_consistent(ds), "fmnist split %d: %lld images, %lld per class",
              (int)w[k].sp, (long long)w[k].n, (long long)w[k].per);
        CHECK_NEAR("fmnist stored mean", ds->mean, s.mean32, 1e-6, 0);
        CHECK_NEAR("fmnist stored std", ds->std, s.std32, 1e-6, 0);
        if (w[k].sp == MCL_SPLIT_ALL) {
            int border = 0;
            for (int64_t i = 0; i < ds->n; i++) {
                const uint8_t *im = ds->images + i * PIX;
                for (int t = 0; t < 32; t++)
                    border |= im[t] | im[32 + t] | im[30 * 32 + t] | im[31 * 32 + t] |
                              im[t * 32] | im[t * 32 + 1] | im[t * 32 + 30] | im[t * 32 + 31];
            }
            CHECK(border == 0, "every image has a 2-pixel empty border");
            char hex[65];
            hex_of(ds->images, 1000 * PIX, hex);
            printf("test-dataset: fmnist first 1000 images sha256 %s\n", hex);
            CHECK(strcmp(hex, FMNIST_FIRST1000_SHA) == 0, "fmnist first 1000 images: sha256 %s", hex);
            hex_of(ds->labels, sizeof *ds->labels * 70000, hex);
            printf("test-dataset: fmnist labels sha256 %s\n", hex);
            CHECK(strcmp(hex, FMNIST_LABELS_SHA) == 0, "fmnist labels: sha256 %s", hex);
            /* the first test image is the original's first, padded */
            mcl_idx te;
            snprintf(probe, sizeof probe, "%s/t10k-images-idx3-ubyte.gz", MCL_FMNIST_DIR);
            if (CHECK(mcl_idx_read(probe, 0, &te, g_err, sizeof g_err) == MCL_OK, "%s", g_err)) {
                uint8_t want[PIX];
                mcl_image_fit32((const uint8_t *)te.data + 9999 * 784, 28, 28, want);
                CHECK(memcmp(ds->images + (int64_t)69999 * PIX, want, PIX) == 0,
                      "the last image is the last test image, padded");
                mcl_idx_free(&te);
            }
        }
        mcl_dataset_free(ds);
    }
    char dir[600];
    snprintf(dir, sizeof dir, "%s/fmnist", dd);
    mcl_prepared_meta m;
    st = mcl_prepared_read_meta(dir, &m, g_err, sizeof g_err);
    CHECK(st == MCL_OK && strcmp(m.licence, "MIT") == 0 && strcmp(m.split, "example") == 0,
          "fmnist meta: licence %s, split %s", m.licence, m.split);
    mcl_class_info *ci = NULL;
    st = mcl_prepared_read_classes(dir, 10, &ci, g_err, sizeof g_err);
    CHECK(st == MCL_OK && strcmp(ci[0].text, "T-shirt/top") == 0 &&
              strcmp(ci[9].text, "Ankle boot") == 0,
          "fmnist class names: %s", g_err);
    free(ci);
    mcl_sum_entry *e = NULL;
    int ne = 0;
    st = mcl_prepared_verify(dir, &e, &ne, g_err, sizeof g_err);
    CHECK(st == MCL_OK && ne == 5, "fmnist SHA256SUMS verifies: %s", g_err);
    free(e);
    test_fmnist_val(dd);
    return 1;
}

int main(void)
{
    tu_begin("test-dataset", SEED);
    snprintf(g_tmp, sizeof g_tmp, "test-dataset.tmp.%ld", (long)getpid());
    if (mkdir(g_tmp, 0755) != 0) {
        fprintf(stderr, "test-dataset: cannot create %s in the current directory\n", g_tmp);
        return 1;
    }
    test_fit();
    test_arrays();
    test_fixtures();
    test_user_idx();
    test_user_pngdir();
    test_prepared();
    test_image_to_side();
    test_view_splits();
    test_fmnist();
    tu_rm_rf(g_tmp);
    CHECK(access(g_tmp, F_OK) != 0, "temporary directory removed");
    return tu_summary();
}
