/* augment.h — per-task image randomization for meta-training ("task augmentation").
 *
 * The stroke renderer draws white ink on black with a narrow range of pen widths; a learner
 * meta-trained only on that sees one image "style". Task augmentation draws ONE random
 * transformation per task of a training sequence and applies it to every image of that task
 * (first-shot, context and queries alike), so each task looks like a small new domain:
 * filled shapes, thicker or thinner ink, blur, a texture on the ink, a contrast/gamma curve,
 * inverted polarity, sensor noise. Evaluation never augments. doc/acl.md, "Task augmentation".
 *
 * Images are uint8, S×S (S <= 32), 0 = background. Everything is deterministic: the draw is a
 * function of the caller's rng, the noise of an image a function of (noise_seed, image index).
 */
#ifndef MCL_AUGMENT_H
#define MCL_AUGMENT_H

#include <stdint.h>

#include "rng.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One task's transformation. All-zero = the identity (active = 0). Applied in this order:
 * fill, morph, blur, texture, gamma, window, invert, noise; intensities x in [0, 1]. */
typedef struct mcl_aug {
    int active;
    int fill;        /* 1: background regions not connected to the border become ink (x = 1) */
    int morph;       /* +n: n 3×3 dilations (grey max), -n: n 3×3 erosions (grey min), 0: none */
    int blur;        /* n: n passes of the 3×3 binomial filter [1 2 1]/4 ⊗ [1 2 1]/4 (0..2)  */
    float tex_amp;   /* texture: x *= 1 - tex_amp·(1 + sin(2π(fx·u + fy·v) + phase))/2,    */
    float tex_fx, tex_fy, tex_phase; /* u, v = pixel coordinates / S; tex_amp in [0, 1)       */
    float gamma;     /* x = x^gamma (gamma > 0; 1 = none)                                   */
    float lo, hi;    /* x = lo + (hi - lo)·x (0 <= lo < hi <= 1; 0 and 1 = none)             */
    int invert;      /* 1: x = 1 - x                                                         */
    float noise;     /* x += noise·N(0, 1), clipped to [0, 1] (0 = none)                     */
    uint64_t noise_seed;
} mcl_aug;

/* The distribution of transformations (probabilities of each part and its ranges). */
typedef struct mcl_aug_cfg {
    float p_fill, p_dilate, p_erode, p_blur, p_texture, p_contrast, p_invert, p_noise;
    float gamma_log_max;   /* gamma = exp(U(-g, g))                                   */
    float lo_max;          /* lo ~ U(0, lo_max)                                        */
    float hi_min;          /* hi ~ U(hi_min, 1)                                        */
    float tex_amp_max;     /* tex_amp ~ U(0.2, tex_amp_max); frequencies U(0.5, 4) cycles */
    float noise_max;       /* noise ~ U(0.02, noise_max)                               */
} mcl_aug_cfg;

/* The default distribution of `data.augment = task` (doc/acl.md). */
void mcl_aug_cfg_default(mcl_aug_cfg *cfg);

/* Draw one task's transformation from cfg with rng (a fixed number of draws per call, so
 * the rng's position after the call does not depend on the outcome). */
void mcl_aug_draw(const mcl_aug_cfg *cfg, mcl_rng *rng, mcl_aug *out);

/* Apply a to one S×S image in place (1 <= S <= 32). image_id keys the noise (use the image's
 * index in its dataset, so an image gets the same noise wherever it appears). */
void mcl_aug_apply(const mcl_aug *a, uint8_t *img, int side, uint64_t image_id);

#ifdef __cplusplus
}
#endif

#endif
