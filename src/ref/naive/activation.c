/* activation.c — naive GELU (src/ref/activation.c evaluates it in float with its own erfc). */
#include <math.h>

#include "naive.h"

/* 1/sqrt(2) and 1/sqrt(2 pi) (M_SQRT1_2 is not in strict C11). */
#define INV_SQRT2 0.70710678118654752440
#define INV_SQRT_2PI 0.39894228040143267794

/* GELU, the exact (erf) form:
 *   y[i] = x[i] Phi(x[i]),   Phi(a) = (1 + erf(a / sqrt 2)) / 2 = erfc(-a / sqrt 2) / 2
 * (erfc: the same function without the cancellation of 1 + erf for negative a)
 *   x [n]
 *   y [n] */
void mcl_naive_gelu_fwd(int64_t n, const float *x, double *y)
{
    for (int64_t i = 0; i < n; i++) {
        const double a = x[i];
        y[i] = 0.5 * a * erfc(-a * INV_SQRT2);
    }
}

/* Its derivative times the output gradient:
 *   gx[i] = g[i] (Phi(x[i]) + x[i] phi(x[i])),   phi(a) = exp(-a^2 / 2) / sqrt(2 pi)
 *   x  [n]
 *   g  [n]
 *   gx [n] */
void mcl_naive_gelu_bwd(int64_t n, const float *x, const float *g, double *gx)
{
    for (int64_t i = 0; i < n; i++) {
        const double a = x[i];
        const double cdf = 0.5 * erfc(-a * INV_SQRT2);
        const double pdf = INV_SQRT_2PI * exp(-0.5 * a * a);
        gx[i] = (double)g[i] * (cdf + a * pdf);
    }
}
