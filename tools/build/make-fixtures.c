/* make-fixtures.c — generate the tiny test fixtures under data/fixtures/ (committed; rerun
 * only to change them, then update the hashes in tests/test-dataset.c):
 *
 *   tiny-images-idx3-ubyte.gz  36 images 32×32 (IDX ubyte, gzip), 3 classes × 12
 *   tiny-labels-idx1-ubyte.gz  their labels (IDX ubyte, gzip): 0 ring, 1 cross, 2 bar,
 *                              in the order 0 1 2 0 1 2 ...
 *   tiny-pngdir/ring/{0,1,2}.png, tiny-pngdir/cross/{0,1,2}.png   8-bit gray 32×32
 *
 * Each image is a simple shape drawn with sub-pixel soft edges, its position, size and
 * brightness jittered with Philox (seed FIX_SEED, stream = class, index = instance).
 *
 *   build: cc -std=c11 -Isrc/common -Isrc/data -Isrc/data/prepare tools/build/make-fixtures.c \
 *             src/data/idx.c src/data/png_io.c -lpng -lz -lm -o make-fixtures
 *   run:   ./make-fixtures data/fixtures
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "idx.h"
#include "png_io.h"
#include "rng.h"

#define FIX_SEED 20240917u
#define S 32

static float clamp01(float v)
{
    return v < 0 ? 0 : v > 1 ? 1 : v;
}

/* Distance from (px, py) to the segment (ax, ay)-(bx, by). */
static float seg_dist(float px, float py, float ax, float ay, float bx, float by)
{
    float dx = bx - ax, dy = by - ay;
    float t = ((px - ax) * dx + (py - ay) * dy) / (dx * dx + dy * dy);
    t = clamp01(t);
    float qx = ax + t * dx - px, qy = ay + t * dy - py;
    return sqrtf(qx * qx + qy * qy);
}

static void draw(int cls, int inst, uint8_t *img)
{
    float u[6];
    for (int k = 0; k < 6; k++) u[k] = mcl_rng_uniform(FIX_SEED, (uint64_t)cls, (uint64_t)(inst * 6 + k));
    float cx = 15.5f + 6.0f * (u[0] - 0.5f), cy = 15.5f + 6.0f * (u[1] - 0.5f);
    float r = 7.0f + 4.0f * u[2], ink = 180.0f + 75.0f * u[3], half = 1.0f + 0.8f * u[4];
    float ang = 6.2831853f * u[5];
    for (int y = 0; y < S; y++)
        for (int x = 0; x < S; x++) {
            float px = (float)x + 0.5f, py = (float)y + 0.5f, d;
            if (cls == 0) { /* ring */
                d = fabsf(sqrtf((px - cx) * (px - cx) + (py - cy) * (py - cy)) - r);
            } else if (cls == 1) { /* cross */
                float d1 = seg_dist(px, py, cx - r, cy, cx + r, cy);
                float d2 = seg_dist(px, py, cx, cy - r, cx, cy + r);
                d = d1 < d2 ? d1 : d2;
            } else { /* bar at a random angle */
                float ex = r * cosf(ang), ey = r * sinf(ang);
                d = seg_dist(px, py, cx - ex, cy - ey, cx + ex, cy + ey);
            }
            img[y * S + x] = (uint8_t)lrintf(ink * clamp01(half + 0.5f - d));
        }
}

static int mk(const char *p)
{
    if (mkdir(p, 0755) != 0 && errno != EEXIST) {
        fprintf(stderr, "make-fixtures: cannot create %s: %s\n", p, strerror(errno));
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: make-fixtures OUTDIR\n");
        return 2;
    }
    const char *out = argv[1];
    char path[4096], err[512];
    enum { NCLS = 3, PER = 12, N = NCLS * PER };
    static uint8_t images[N * S * S];
    uint8_t labels[N];
    for (int i = 0; i < N; i++) {
        labels[i] = (uint8_t)(i % NCLS);
        draw(i % NCLS, i / NCLS, images + (size_t)i * S * S);
    }
    if (mk(out) != 0) return 1;
    int64_t d3[3] = {N, S, S}, d1[1] = {N};
    snprintf(path, sizeof path, "%s/tiny-images-idx3-ubyte.gz", out);
    if (mcl_idx_write(path, MCL_IDX_UBYTE, 3, d3, images, 1, err, sizeof err) != MCL_OK) goto fail;
    snprintf(path, sizeof path, "%s/tiny-labels-idx1-ubyte.gz", out);
    if (mcl_idx_write(path, MCL_IDX_UBYTE, 1, d1, labels, 1, err, sizeof err) != MCL_OK) goto fail;
    static const char *const cname[2] = {"ring", "cross"};
    snprintf(path, sizeof path, "%s/tiny-pngdir", out);
    if (mk(path) != 0) return 1;
    for (int c = 0; c < 2; c++) {
        snprintf(path, sizeof path, "%s/tiny-pngdir/%s", out, cname[c]);
        if (mk(path) != 0) return 1;
        for (int k = 0; k < 3; k++) {
            uint8_t img[S * S];
            draw(c, 100 + k, img);
            snprintf(path, sizeof path, "%s/tiny-pngdir/%s/%d.png", out, cname[c], k);
            if (mcl_png_write_gray(path, img, S, S, err, sizeof err) != MCL_OK) goto fail;
        }
    }
    printf("make-fixtures: wrote %d IDX images and 6 PNGs under %s\n", N, out);
    return 0;
fail:
    fprintf(stderr, "make-fixtures: %s\n", err);
    return 1;
}
