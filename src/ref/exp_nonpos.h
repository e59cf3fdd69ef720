/* exp_nonpos.h — exp(x) for the max-shifted arguments of a softmax (x <= 0), as plain float
 * operations that GCC vectorizes (internal to the reference backend; libm's expf is one call
 * per element: this is ~10x faster for SRWM's step softmax). Used by srwm.c (its step softmax
 * and sigmoid) and attention.c (rel_attn's probabilities).
 *
 * Within 1 ulp (0.91 ulp measured on every 7th float of [-87, 0]):
 *   x = n ln2 + r,  n = round(x log2(e)) (adding and subtracting 1.5*2^23 rounds to nearest),
 *   r by Cody-Waite (ln2 = hi + lo, hi with 15 significant bits: x - n hi is exact),
 *   exp(r) by its degree-7 Taylor polynomial (|r| <= ln2/2: truncation < 5e-9 relative),
 *   times 2^n built from its exponent bits.
 * Below -87 (exp < 1.7e-38, next to the smallest normal float) the result is 0; NaN stays NaN
 * (n is clamped before the conversion to int, so no conversion is undefined). Small positive
 * arguments (a recomputed s - lse a rounding above 0) are fine too, up to n = 127.
 * Every operation is a correctly rounded float operation (no FP contraction, no fast-math):
 * the bits do not depend on vectorization, inlining or the optimization level.
 */
#ifndef MCL_EXP_NONPOS_H
#define MCL_EXP_NONPOS_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "hot.h"

#define MCL_EXP_INLINE MCL_HOT_INLINE

MCL_EXP_INLINE float mcl_exp_nonpos(float x)
{
    const float big = 12582912.0f; /* 1.5 * 2^23 */
    float n = (x * 1.44269504088896341f + big) - big;
    n = n > -127.0f ? n : -127.0f;
    float r = fmaf(n, -0.693145751953125f, x);
    r = fmaf(n, -1.42860682030941723212e-6f, r);
    float p = 1.98412698412698413e-4f;       /* 1/7! */
    p = fmaf(p, r, 1.38888888888888889e-3f); /* 1/6! */
    p = fmaf(p, r, 8.33333333333333333e-3f); /* 1/5! */
    p = fmaf(p, r, 4.16666666666666667e-2f); /* 1/4! */
    p = fmaf(p, r, 1.66666666666666667e-1f); /* 1/3! */
    p = fmaf(p, r, 0.5f);
    p = fmaf(p, r, 1.0f);
    p = fmaf(p, r, 1.0f);
    /* 2^n from its exponent field n + 127 in [0, 254] (a shift, not a multiply: GCC kept the
     * multiply by 2^23 as vpmulld, two uops at ten cycles' latency per vector) */
    const uint32_t bits = (uint32_t)((int32_t)n + 127) << 23;
    float scale;
    memcpy(&scale, &bits, sizeof scale);
    return x < -87.0f ? 0.0f : p * scale;
}

#endif
