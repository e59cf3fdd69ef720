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

/* The gradients of that layer norm for the output gradient g, with the oracle's own mean and
 * rstd (recomputed here in double), xhat[r][c] = (x[r][c] - mean_r) * rstd_r:
 *   dxhat[r][c] = g[r][c] * gamma[c]
 *   gx[r][c]    = rstd_r * (dxhat[r][c] - (1/N) sum_k dxhat[r][k]
 *                           - xhat[r][c] * (1/N) sum_k dxhat[r][k] * xhat[r][k])
 *   ggamma[c]   = sum_r g[r][c] * xhat[r][c]
 *   gbeta[c]    = sum_r g[r][c]
 *   x      [R,N]
 *   gamma  [N]
 *   g      [R,N]
 *   gx     [R,N]
 *   ggamma [N]
 *   gbeta  [N] */
void mcl_naive_layer_norm_bwd(int64_t R, int64_t N, const float *x, const float *gamma,
                              double eps, const float *g, double *gx, double *ggamma,
                              double *gbeta)
{
    for (int64_t c = 0; c < N; c++) ggamma[c] = gbeta[c] = 0.0;
    for (int64_t r = 0; r < R; r++) {
        const float *xr = x + r * N;
        const float *gr = g + r * N;
        double m = 0.0, v = 0.0;
        for (int64_t c = 0; c < N; c++) m += xr[c];
        m /= (double)N;
        for (int64_t c = 0; c < N; c++) v += (xr[c] - m) * (xr[c] - m);
        v /= (double)N;
        const double rstd = 1.0 / sqrt(v + eps);
        double sd = 0.0, sdx = 0.0;
        for (int64_t c = 0; c < N; c++) {
            sd += gr[c] * (double)gamma[c];
            sdx += gr[c] * (double)gamma[c] * (xr[c] - m) * rstd;
        }
        for (int64_t c = 0; c < N; c++) {
            const double xhat = (xr[c] - m) * rstd;
            const double dxhat = gr[c] * (double)gamma[c];
            gx[r * N + c] = rstd * (dxhat - sd / (double)N - xhat * sdx / (double)N);
            ggamma[c] += gr[c] * xhat;
            gbeta[c] += gr[c];
        }
    }
}

/* The statistics of one plane of N values xp:
 *   mean = (1/N) sum_i xp[i],   rstd = 1 / sqrt((1/N) sum_i (xp[i] - mean)^2 + eps) */
static void plane_stats(const float *xp, int64_t N, double eps, double *mean, double *rstd)
{
    double m = 0.0, v = 0.0;
    for (int64_t i = 0; i < N; i++) m += xp[i];
    m /= (double)N;
    for (int64_t i = 0; i < N; i++) v += (xp[i] - m) * (xp[i] - m);
    v /= (double)N;
    *mean = m;
    *rstd = 1.0 / sqrt(v + eps);
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
            plane_stats(xp, N, eps, &mean[p], &rstd[p]);
            for (int64_t i = 0; i < N; i++)
                y[p * N + i] = (xp[i] - mean[p]) * rstd[p] * gamma[c] + beta[c];
        }
}

/* The instance norm of each plane p = b*C + c (as above, over all its H*W values), then 2x2
 * max pooling with stride 2 (floor: an odd last row/column is in no window), then relu:
 *   n[p][u][v]   = (x[p][u][v] - mean_p) * rstd_p * gamma[c] + beta[c]
 *   arg[p][i][j] = the first t = dy*2 + dx attaining max_t n[p][2i + dy][2j + dx]
 *   y[p][i][j]   = max(n[p][2i + dy][2j + dx] at t = arg, 0)
 *   x      [B,C,H,W]
 *   gamma  [C]
 *   beta   [C]
 *   y      [B,C,H/2,W/2]
 *   mean   [B*C]
 *   rstd   [B*C]
 *   arg    [B,C,H/2,W/2] */
void mcl_naive_inorm_pool_relu(int64_t B, int64_t C, int64_t H, int64_t W, const float *x,
                               const float *gamma, const float *beta, double eps, double *y,
                               double *mean, double *rstd, double *arg)
{
    const int64_t Ho = H / 2, Wo = W / 2;
    for (int64_t b = 0; b < B; b++)
        for (int64_t c = 0; c < C; c++) {
            const int64_t p = b * C + c;
            const float *xp = x + p * H * W;
            plane_stats(xp, H * W, eps, &mean[p], &rstd[p]);
            for (int64_t i = 0; i < Ho; i++)
                for (int64_t j = 0; j < Wo; j++) {
                    double m = 0.0;
                    int best = -1;
                    for (int t = 0; t < 4; t++) {
                        const double n = (xp[(2 * i + t / 2) * W + 2 * j + t % 2] - mean[p]) *
                                             rstd[p] * gamma[c] + beta[c];
                        if (best < 0 || n > m) m = n, best = t;
                    }
                    y[(p * Ho + i) * Wo + j] = m > 0.0 ? m : 0.0;
                    arg[(p * Ho + i) * Wo + j] = best;
                }
        }
}

/* The gradient of the normalized value n[p][u][v] of inorm_pool_relu's plane p: the output
 * gradient of its window where n is the window's argmax and the relu passed it, else 0 (the
 * other three values of a window, an odd last row or column). */
static double tail_grad_at(int64_t H, int64_t W, int64_t p, int64_t u, int64_t v,
                           const double *y, const double *arg, const float *gout)
{
    const int64_t Ho = H / 2, Wo = W / 2, i = u / 2, j = v / 2;
    if (i >= Ho || j >= Wo) return 0.0;
    const int64_t q = (p * Ho + i) * Wo + j;
    return arg[q] == (double)(2 * (u % 2) + v % 2) && y[q] > 0.0 ? gout[q] : 0.0;
}

/* The gradients of inorm_pool_relu, with gn the gradient of the normalized plane
 * (tail_grad_at) and xhat[p][e] = (x[p][e] - mean_p) * rstd_p, e over the N = H*W values:
 *   dxhat[p][e] = gn[p][e] * gamma[c]
 *   gx[p][e]    = rstd_p * (dxhat[p][e] - (1/N) sum_k dxhat[p][k]
 *                           - xhat[p][e] * (1/N) sum_k dxhat[p][k] * xhat[p][k])
 *   ggamma[c]   = sum_b sum_e gn[p][e] * xhat[p][e]      (p = b*C + c)
 *   gbeta[c]    = sum_b sum_e gn[p][e]
 *   x      [B,C,H,W]      gamma      [C]
 *   y, arg [B,C,H/2,W/2]  mean, rstd [B*C]   (mcl_naive_inorm_pool_relu's)
 *   gout   [B,C,H/2,W/2]
 *   gx     [B,C,H,W]      ggamma, gbeta [C] */
void mcl_naive_inorm_pool_relu_bwd(int64_t B, int64_t C, int64_t H, int64_t W, const float *x,
                                   const float *gamma, const double *y, const double *mean,
                                   const double *rstd, const double *arg, const float *gout,
                                   double *gx, double *ggamma, double *gbeta)
{
    const int64_t N = H * W;
    for (int64_t c = 0; c < C; c++) ggamma[c] = gbeta[c] = 0.0;
    for (int64_t b = 0; b < B; b++)
        for (int64_t c = 0; c < C; c++) {
            const int64_t p = b * C + c;
            double sd = 0.0, sdx = 0.0;
            for (int64_t e = 0; e < N; e++) {
                const double gn = tail_grad_at(H, W, p, e / W, e % W, y, arg, gout);
                const double xhat = (x[p * N + e] - mean[p]) * rstd[p];
                sd += gn * gamma[c];
                sdx += gn * gamma[c] * xhat;
                ggamma[c] += gn * xhat;
                gbeta[c] += gn;
            }
            for (int64_t e = 0; e < N; e++) {
                const double gn = tail_grad_at(H, W, p, e / W, e % W, y, arg, gout);
                const double xhat = (x[p * N + e] - mean[p]) * rstd[p];
                gx[p * N + e] = rstd[p] * (gn * gamma[c] - sd / (double)N - xhat * sdx / (double)N);
            }
        }
}
