/* augment.c — per-task image randomization (augment.h; doc/acl.md, "Task augmentation"). */
#include "augment.h"

#include <math.h>
#include <string.h>

#define AUG_MAX_SIDE 32
#define AUG_MAX_PIX (AUG_MAX_SIDE * AUG_MAX_SIDE)

void mcl_aug_cfg_default(mcl_aug_cfg *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->p_fill = 0.25f;     /* filled silhouettes: clothing is shapes, not strokes        */
    cfg->p_dilate = 0.30f;   /* thicker ink: 1 or 2 dilations                             */
    cfg->p_erode = 0.0f;     /* off: a 2 px stroke does not survive a 3×3 erosion          */
    cfg->p_blur = 0.30f;
    cfg->p_texture = 0.30f;  /* intensity variation inside the ink                        */
    cfg->p_contrast = 0.50f; /* gamma and an intensity window                             */
    cfg->p_invert = 0.25f;   /* dark ink on a light ground                                */
    cfg->p_noise = 0.30f;
    cfg->gamma_log_max = 0.7f;
    cfg->lo_max = 0.3f;
    cfg->hi_min = 0.5f;
    cfg->tex_amp_max = 0.8f;
    cfg->noise_max = 0.10f;
}

void mcl_aug_draw(const mcl_aug_cfg *c, mcl_rng *rng, mcl_aug *a)
{
    /* Exactly 17 draws, whatever the outcome. */
    float u[17];
    for (int i = 0; i < 17; i++) u[i] = mcl_rng_next_uniform(rng);
    memset(a, 0, sizeof *a);
    a->active = 1;
    a->fill = u[0] < c->p_fill;
    a->morph = u[1] < c->p_dilate ? 1 + (u[1] < 0.5f * c->p_dilate)
               : u[1] < c->p_dilate + c->p_erode ? -1 : 0;
    a->blur = u[2] < c->p_blur ? 1 + (u[3] < 0.5f) : 0;
    if (u[4] < c->p_texture) {
        a->tex_amp = 0.2f + (c->tex_amp_max - 0.2f) * u[5];
        a->tex_fx = (u[6] < 0.5f ? -1.0f : 1.0f) * (0.5f + 3.5f * u[7]);
        a->tex_fy = 4.0f * u[8] - 2.0f;
        a->tex_phase = 6.2831853f * u[9];
    }
    a->gamma = 1.0f;
    a->lo = 0.0f;
    a->hi = 1.0f;
    if (u[10] < c->p_contrast) {
        a->gamma = expf(c->gamma_log_max * (2.0f * u[11] - 1.0f));
        a->lo = c->lo_max * u[12];
        a->hi = c->hi_min + (1.0f - c->hi_min) * u[13];
        if (!(a->hi > a->lo)) a->hi = 1.0f;
    }
    a->invert = u[14] < c->p_invert;
    if (u[15] < c->p_noise) a->noise = 0.02f + (c->noise_max - 0.02f) * u[16];
    a->noise_seed = mcl_rng_next_u32(rng) | ((uint64_t)mcl_rng_next_u32(rng) << 32);
}

/* Background pixels (x < 0.5) that no 4-connected background path joins to the border
 * become ink. */
static void fill_holes(float *x, int s)
{
    unsigned char seen[AUG_MAX_PIX];
    int stack[AUG_MAX_PIX];
    int top = 0;
    memset(seen, 0, (size_t)s * s);
    for (int i = 0; i < s; i++) {
        const int border[4] = {i, (s - 1) * s + i, i * s, i * s + s - 1};
        for (int k = 0; k < 4; k++) {
            int p = border[k];
            if (!seen[p] && x[p] < 0.5f) {
                seen[p] = 1;
                stack[top++] = p;
            }
        }
    }
    while (top > 0) {
        int p = stack[--top], r = p / s, c = p % s;
        const int nb[4][2] = {{r - 1, c}, {r + 1, c}, {r, c - 1}, {r, c + 1}};
        for (int k = 0; k < 4; k++) {
            int rr = nb[k][0], cc = nb[k][1];
            if (rr < 0 || rr >= s || cc < 0 || cc >= s) continue;
            int q = rr * s + cc;
            if (!seen[q] && x[q] < 0.5f) {
                seen[q] = 1;
                stack[top++] = q;
            }
        }
    }
    for (int p = 0; p < s * s; p++)
        if (!seen[p] && x[p] < 0.5f) x[p] = 1.0f;
}

/* Grey dilation (dir > 0: max) or erosion (min) over the in-image 3×3 neighbourhood. */
static void morph3(float *x, int s, int dir)
{
    float t[AUG_MAX_PIX];
    for (int r = 0; r < s; r++)
        for (int c = 0; c < s; c++) {
            float v = x[r * s + c];
            for (int dr = -1; dr <= 1; dr++)
                for (int dc = -1; dc <= 1; dc++) {
                    int rr = r + dr, cc = c + dc;
                    if (rr < 0 || rr >= s || cc < 0 || cc >= s) continue;
                    float w = x[rr * s + cc];
                    v = dir > 0 ? (w > v ? w : v) : (w < v ? w : v);
                }
            t[r * s + c] = v;
        }
    memcpy(x, t, (size_t)s * s * sizeof *x);
}

/* [1 2 1]/4 along rows then columns, the edge pixel repeated outside the image. */
static void blur3(float *x, int s)
{
    float t[AUG_MAX_PIX];
    for (int r = 0; r < s; r++)
        for (int c = 0; c < s; c++) {
            int l = c > 0 ? c - 1 : 0, rt = c < s - 1 ? c + 1 : s - 1;
            t[r * s + c] = 0.25f * x[r * s + l] + 0.5f * x[r * s + c] + 0.25f * x[r * s + rt];
        }
    for (int r = 0; r < s; r++) {
        int u = r > 0 ? r - 1 : 0, d = r < s - 1 ? r + 1 : s - 1;
        for (int c = 0; c < s; c++)
            x[r * s + c] = 0.25f * t[u * s + c] + 0.5f * t[r * s + c] + 0.25f * t[d * s + c];
    }
}

void mcl_aug_apply(const mcl_aug *a, uint8_t *img, int s, uint64_t image_id)
{
    if (!a || !a->active || !img || s < 1 || s > AUG_MAX_SIDE) return;
    const int n = s * s;
    float x[AUG_MAX_PIX];
    for (int p = 0; p < n; p++) x[p] = (float)img[p] / 255.0f;
    if (a->fill) fill_holes(x, s);
    for (int i = 0; i < (a->morph < 0 ? -a->morph : a->morph); i++) morph3(x, s, a->morph);
    for (int i = 0; i < a->blur; i++) blur3(x, s);
    if (a->tex_amp > 0.0f)
        for (int r = 0; r < s; r++)
            for (int c = 0; c < s; c++) {
                float arg = 6.2831853f * (a->tex_fx * (float)c + a->tex_fy * (float)r) / (float)s +
                            a->tex_phase;
                x[r * s + c] *= 1.0f - a->tex_amp * 0.5f * (1.0f + sinf(arg));
            }
    const int curve = a->gamma != 1.0f || a->lo != 0.0f || a->hi != 1.0f;
    for (int p = 0; p < n; p++) {
        float v = x[p];
        if (curve) v = a->lo + (a->hi - a->lo) * powf(v, a->gamma);
        if (a->invert) v = 1.0f - v;
        if (a->noise > 0.0f) v += a->noise * mcl_rng_normal(a->noise_seed, image_id, (uint64_t)p);
        v = v < 0.0f ? 0.0f : v > 1.0f ? 1.0f : v;
        img[p] = (uint8_t)lrintf(v * 255.0f);
    }
}
