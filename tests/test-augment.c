/* test-augment.c — per-task image randomization (src/data/augment.h), hand-checked cases:
 *   - the identity (inactive, or every part off) leaves an image as it is;
 *   - inversion is 255 − x; one and two dilations of a single pixel are 3×3 and 5×5 blocks;
 *   - fill: the inside of a closed square outline becomes ink, an open U stays open, and the
 *     comparison catches an image that was not filled (a deliberately wrong result);
 *   - blur: one pass on a single pixel gives the binomial kernel 16·[1 2 1]ᵀ[1 2 1]/16;
 *   - texture, gamma and window against the formulas of augment.h;
 *   - noise: keyed by (noise_seed, image id): the same id gives the same image, another id
 *     another one; its mean over a grey image is about 0;
 *   - the draw: always the same number of rng words, every part at its probability
 *     (binomial tolerance), all probabilities 0 = the identity. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "augment.h"
#include "testutil.h"

#define SEED 20261125ULL
#define S 16
/* Intensities are rounded to uint8 once at the end: the formulas agree within one level. */
#define LEVEL_TOL 1

static int max_diff(const uint8_t *a, const uint8_t *b, int n)
{
    int m = 0;
    for (int i = 0; i < n; i++) {
        int d = abs((int)a[i] - (int)b[i]);
        if (d > m) m = d;
    }
    return m;
}

static mcl_aug identity(void)
{
    mcl_aug a;
    memset(&a, 0, sizeof a);
    a.active = 1;
    a.gamma = 1.0f;
    a.lo = 0.0f;
    a.hi = 1.0f;
    return a;
}

static void ramp(uint8_t *img)
{
    for (int i = 0; i < S * S; i++) img[i] = (uint8_t)((i * 37) % 256);
}

static void test_identity_invert_morph(void)
{
    uint8_t img[S * S], ref[S * S];
    ramp(img);
    memcpy(ref, img, sizeof img);
    mcl_aug a;
    memset(&a, 0, sizeof a);
    mcl_aug_apply(&a, img, S, 3);
    CHECK(max_diff(img, ref, S * S) == 0, "inactive augmentation changed the image");
    a = identity();
    mcl_aug_apply(&a, img, S, 3);
    CHECK(max_diff(img, ref, S * S) == 0, "active identity changed the image (max diff %d)",
          max_diff(img, ref, S * S));

    a.invert = 1;
    mcl_aug_apply(&a, img, S, 3);
    int bad = 0;
    for (int i = 0; i < S * S; i++) bad += img[i] != 255 - ref[i];
    CHECK(bad == 0, "inversion: %d pixels differ from 255 - x", bad);

    for (int n = 1; n <= 2; n++) {
        memset(img, 0, sizeof img);
        img[8 * S + 8] = 200;
        a = identity();
        a.morph = n;
        mcl_aug_apply(&a, img, S, 3);
        int ok = 1;
        for (int r = 0; r < S; r++)
            for (int c = 0; c < S; c++) {
                int in = abs(r - 8) <= n && abs(c - 8) <= n;
                ok &= img[r * S + c] == (in ? 200 : 0);
            }
        CHECK(ok, "%d dilation(s) of one pixel is not a %dx%d block", n, 2 * n + 1, 2 * n + 1);
    }
    /* erosion undoes one dilation of a block well inside the image */
    memset(img, 0, sizeof img);
    for (int r = 5; r <= 10; r++)
        for (int c = 5; c <= 10; c++) img[r * S + c] = 255;
    memcpy(ref, img, sizeof img);
    a = identity();
    a.morph = 1;
    mcl_aug_apply(&a, img, S, 3);
    a.morph = -1;
    mcl_aug_apply(&a, img, S, 3);
    CHECK(max_diff(img, ref, S * S) == 0, "erosion after dilation of a 6x6 block is not the block");
}

static void test_fill(void)
{
    uint8_t ring[S * S], want[S * S], u[S * S];
    memset(ring, 0, sizeof ring);
    memset(want, 0, sizeof want);
    for (int r = 3; r <= 12; r++)
        for (int c = 3; c <= 12; c++) {
            int edge = r == 3 || r == 12 || c == 3 || c == 12;
            if (edge) ring[r * S + c] = 255;
            want[r * S + c] = 255;
        }
    memcpy(u, ring, sizeof u);
    for (int c = 5; c <= 10; c++) u[3 * S + c] = 0; /* an opening at the top: a U */
    uint8_t got[S * S];
    memcpy(got, ring, sizeof got);
    mcl_aug a = identity();
    a.fill = 1;
    mcl_aug_apply(&a, got, S, 0);
    CHECK(max_diff(got, want, S * S) == 0, "fill of a closed square outline is not the solid square");
    CHECK(max_diff(ring, want, S * S) != 0, "the fill check does not catch an unfilled outline");
    memcpy(got, u, sizeof got);
    mcl_aug_apply(&a, got, S, 0);
    CHECK(max_diff(got, u, S * S) == 0, "fill changed an open U (its inside reaches the border)");
}

static void test_blur(void)
{
    uint8_t img[S * S];
    memset(img, 0, sizeof img);
    img[7 * S + 7] = 255;
    mcl_aug a = identity();
    a.blur = 1;
    mcl_aug_apply(&a, img, S, 0);
    const int k[3] = {1, 2, 1};
    int bad = 0, sum = 0;
    for (int r = 0; r < S; r++)
        for (int c = 0; c < S; c++) {
            int dr = r - 7, dc = c - 7;
            double want = (abs(dr) <= 1 && abs(dc) <= 1) ? 255.0 * k[dr + 1] * k[dc + 1] / 16.0 : 0.0;
            bad += fabs(img[r * S + c] - want) > 0.5 + 1e-9;
            sum += img[r * S + c];
        }
    CHECK(bad == 0, "blur of one pixel: %d pixels differ from 255*[1 2 1]'[1 2 1]/16", bad);
    CHECK(abs(sum - 255) <= 4, "blur does not keep the sum (%d, want 255 within rounding)", sum);
}

static void test_texture_curve(void)
{
    uint8_t img[S * S], ref[S * S];
    ramp(img);
    memcpy(ref, img, sizeof img);
    mcl_aug a = identity();
    a.tex_amp = 0.6f;
    a.tex_fx = 1.5f;
    a.tex_fy = -0.5f;
    a.tex_phase = 0.3f;
    a.gamma = 1.7f;
    a.lo = 0.1f;
    a.hi = 0.8f;
    mcl_aug_apply(&a, img, S, 0);
    int worst = 0;
    for (int r = 0; r < S; r++)
        for (int c = 0; c < S; c++) {
            double x = ref[r * S + c] / 255.0;
            x *= 1.0 - 0.6 * 0.5 * (1.0 + sin(2 * M_PI * (1.5 * c - 0.5 * r) / S + 0.3));
            x = 0.1 + 0.7 * pow(x, 1.7);
            int want = (int)lrint(x * 255.0);
            int d = abs(want - img[r * S + c]);
            if (d > worst) worst = d;
        }
    CHECK(worst <= LEVEL_TOL, "texture + gamma + window: %d levels from the formula", worst);
}

static void test_noise(void)
{
    uint8_t g1[S * S], g2[S * S], g3[S * S];
    memset(g1, 128, sizeof g1);
    memcpy(g2, g1, sizeof g1);
    memcpy(g3, g1, sizeof g1);
    mcl_aug a = identity();
    a.noise = 0.05f;
    a.noise_seed = SEED;
    mcl_aug_apply(&a, g1, S, 41);
    mcl_aug_apply(&a, g2, S, 41);
    mcl_aug_apply(&a, g3, S, 42);
    CHECK(max_diff(g1, g2, S * S) == 0, "noise of the same image id differs");
    CHECK(max_diff(g1, g3, S * S) > 0, "noise of two image ids is the same");
    double mean = 0.0, var = 0.0;
    for (int i = 0; i < S * S; i++) mean += (g1[i] - 128.0) / 255.0;
    mean /= S * S;
    for (int i = 0; i < S * S; i++) var += pow((g1[i] - 128.0) / 255.0 - mean, 2);
    var /= S * S - 1;
    /* 256 draws: the mean's std is 0.05/16 = 0.003 (4 sigma: 0.0125); std within 20 %. */
    CHECK(fabs(mean) < 0.0125, "noise mean %.4f is not about 0", mean);
    CHECK(fabs(sqrt(var) - 0.05) < 0.01, "noise std %.4f, want 0.05", sqrt(var));
}

static void test_draw(void)
{
    mcl_aug_cfg none, all, def;
    memset(&none, 0, sizeof none);
    mcl_aug_cfg_default(&def);
    all = def;
    all.p_fill = all.p_dilate = all.p_blur = all.p_texture = all.p_contrast = all.p_invert =
        all.p_noise = 1.0f;
    mcl_rng r1, r2;
    mcl_rng_init(&r1, SEED, 5);
    mcl_rng_init(&r2, SEED, 5);
    mcl_aug a1, a2;
    mcl_aug_draw(&none, &r1, &a1);
    mcl_aug_draw(&all, &r2, &a2);
    CHECK(r1.index == r2.index, "the draw used %llu rng words with all parts off, %llu with all on",
          (unsigned long long)r1.index, (unsigned long long)r2.index);
    CHECK(a2.fill && a2.morph > 0 && a2.blur > 0 && a2.tex_amp > 0 && a2.invert && a2.noise > 0,
          "probability 1 did not turn every part on");
    uint8_t img[S * S], ref[S * S];
    ramp(img);
    memcpy(ref, img, sizeof img);
    mcl_aug_apply(&a1, img, S, 9);
    CHECK(max_diff(img, ref, S * S) == 0, "a draw with every probability 0 changed the image");

    /* frequencies of the default distribution */
    const int n = 4000;
    int cnt[7] = {0};
    mcl_rng r;
    mcl_rng_init(&r, SEED, 6);
    for (int i = 0; i < n; i++) {
        mcl_aug a;
        mcl_aug_draw(&def, &r, &a);
        cnt[0] += a.fill;
        cnt[1] += a.morph > 0;
        cnt[2] += a.blur > 0;
        cnt[3] += a.tex_amp > 0;
        cnt[4] += a.gamma != 1.0f || a.lo != 0.0f || a.hi != 1.0f;
        cnt[5] += a.invert;
        cnt[6] += a.noise > 0;
        CHECK(a.hi > a.lo && a.gamma > 0 && a.tex_amp < 1.0f, "draw %d out of range", i);
    }
    const float p[7] = {def.p_fill, def.p_dilate, def.p_blur, def.p_texture,
                        def.p_contrast, def.p_invert, def.p_noise};
    const char *name[7] = {"fill", "dilate", "blur", "texture", "contrast", "invert", "noise"};
    for (int k = 0; k < 7; k++) {
        double f = (double)cnt[k] / n, sd = sqrt(p[k] * (1.0 - p[k]) / n);
        /* binomial: 4 standard deviations */
        CHECK(fabs(f - p[k]) <= 4 * sd + 1e-9, "%s drawn with frequency %.3f, probability %.2f",
              name[k], f, (double)p[k]);
    }
}

int main(void)
{
    tu_begin("test-augment", SEED);
    test_identity_invert_morph();
    test_fill();
    test_blur();
    test_texture_curve();
    test_noise();
    test_draw();
    return tu_summary();
}
