/* norm.c — naive layer norm and instance norm (src/ref/norm.c, the norm part of conv.c). */
#include <math.h>

#include "naive.h"

/* For each row r of N values:
 *   mean_r = (1/N) sum_c x[r][c]
 *   var_r  = (1/N) sum_c (x[r][c] - mean_r)^2            (biased variance)
 *   rstd_r = 1 / sqrt(var_r + eps)
 *   y[r][c] = (x[r][c] - mean_r) * rstd_r * gamma[c] + beta[c]
 *   x      [R,N]
 *   gamma  [N]
 *   beta   [N]
 *   y      [R,N]
 *   mean   [R]
 *   rstd   [R] */
void mcl_naive_layer_norm(int64_t R, int64_t N, const float *x, const float *gamma,
                          const float *beta, double eps, double *y, double *mean, double *rstd)
{
    for (int64_t r = 0; r < R; r++) {
        const float *xr = x + r * N;
        double m = 0.0, v = 0.0;
        for (int64_t c = 0; c < N; c++) m += xr[c];
        m /= (double)N;
        for (int64_t c = 0; c < N; c++) v += (xr[c] - m) * (xr[c] - m);
        v /= (double)N;
        mean[r] = m;
        rstd[r] = 1.0 / sqrt(v + eps);
        for (int64_t c = 0; c < N; c++) y[r * N + c] = (xr[c] - m) * rstd[r] * gamma[c] + beta[c];
    }
}

/* Layer norm of each plane p = b*C + c over its H*W values, with the channel's gamma[c],
 * beta[c]:
 *   mean_p = (1/HW) sum_i x[p][i],   var_p = (1/HW) sum_i (x[p][i] - mean_p)^2
 *   y[p][i] = (x[p][i] - mean_p) / sqrt(var_p + eps) * gamma[c] + beta[c]
 *   x      [B,C,H,W]
 *   gamma  [C]
 *   beta   [C]
 *   y      [B,C,H,W]
 *   mean   [B*C]
 *   rstd   [B*C] */
void mcl_naive_instance_norm(int64_t B, int64_t C, int64_t H, int64_t W, const float *x,
                             const float *gamma, const float *beta, double eps, double *y,
                             double *mean, double *rstd)
{
    const int64_t N = H * W;
    for (int64_t b = 0; b < B; b++)
        for (int64_t c = 0; c < C; c++) {
            const int64_t p = b * C + c;
            const float *xp = x + p * N;
            double m = 0.0, v = 0.0;
            for (int64_t i = 0; i < N; i++) m += xp[i];
            m /= (double)N;
            for (int64_t i = 0; i < N; i++) v += (xp[i] - m) * (xp[i] - m);
            v /= (double)N;
            mean[p] = m;
            rstd[p] = 1.0 / sqrt(v + eps);
            for (int64_t i = 0; i < N; i++)
                y[p * N + i] = (xp[i] - m) * rstd[p] * gamma[c] + beta[c];
        }
}
