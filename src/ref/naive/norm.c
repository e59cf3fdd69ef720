/* norm.c — naive layer norm and instance norm, and the ops that fuse an instance norm with what
 * follows it (src/ref/norm.c, inorm.c, conv_tail.c). */
#include <math.h>
#include <stdlib.h>

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
    mcl_naive_inorm_add_pool_relu(B, C, H, W, x, gamma, beta, NULL, eps, y, mean, rstd, arg);
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

/* The gradients of an instance norm from the gradient gn of its output n (any op after it:
 * the callers below say which), xhat[p][e] = (x[p][e] - mean_p) * rstd_p, e over the N = H*W
 * values of the plane p = b*C + c:
 *   dxhat[p][e] = gn[p][e] * gamma[c]
 *   gx[p][e]    = rstd_p * (dxhat[p][e] - (1/N) sum_k dxhat[p][k]
 *                           - xhat[p][e] * (1/N) sum_k dxhat[p][k] * xhat[p][k])
 *   ggamma[c]   = sum_b sum_e gn[p][e] * xhat[p][e]
 *   gbeta[c]    = sum_b sum_e gn[p][e]
 *   x, gn  [B,C,H,W]      gamma      [C]      mean, rstd [B*C]
 *   gx     [B,C,H,W]      ggamma, gbeta [C] */
static void inorm_bwd(int64_t B, int64_t C, int64_t N, const float *x, const float *gamma,
                      const double *mean, const double *rstd, const double *gn, double *gx,
                      double *ggamma, double *gbeta)
{
    for (int64_t c = 0; c < C; c++) ggamma[c] = gbeta[c] = 0.0;
    for (int64_t b = 0; b < B; b++)
        for (int64_t c = 0; c < C; c++) {
            const int64_t p = b * C + c;
            const double *g = gn + p * N;
            double sd = 0.0, sdx = 0.0;
            for (int64_t e = 0; e < N; e++) {
                const double xhat = (x[p * N + e] - mean[p]) * rstd[p];
                sd += g[e] * gamma[c];
                sdx += g[e] * gamma[c] * xhat;
                ggamma[c] += g[e] * xhat;
                gbeta[c] += g[e];
            }
            for (int64_t e = 0; e < N; e++) {
                const double xhat = (x[p * N + e] - mean[p]) * rstd[p];
                gx[p * N + e] = rstd[p] * (g[e] * gamma[c] - sd / (double)N - xhat * sdx / (double)N);
            }
        }
}

/* The gradients of inorm_pool_relu: inorm_bwd with gn the gradient of the normalized plane
 * from the windows (tail_grad_at; gn is computed into a scratch array of B*C*H*W doubles).
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
    double *gn = malloc((size_t)(B * C * N) * sizeof(double));
    if (!gn) abort(); /* the test oracle: small shapes only */
    for (int64_t p = 0; p < B * C; p++)
        for (int64_t e = 0; e < N; e++) gn[p * N + e] = tail_grad_at(H, W, p, e / W, e % W, y, arg, gout);
    inorm_bwd(B, C, N, x, gamma, mean, rstd, gn, gx, ggamma, gbeta);
    free(gn);
}

/* relu of the instance norm (mcl_naive_instance_norm):
 *   y[p][e] = max(n[p][e], 0),  n = the instance norm of x
 *   x [B,C,H,W]  gamma, beta [C]  ->  y [B,C,H,W], mean, rstd [B*C] */
void mcl_naive_inorm_relu(int64_t B, int64_t C, int64_t H, int64_t W, const float *x, const float *gamma,
                          const float *beta, double eps, double *y, double *mean, double *rstd)
{
    mcl_naive_instance_norm(B, C, H, W, x, gamma, beta, eps, y, mean, rstd);
    for (int64_t e = 0; e < B * C * H * W; e++) y[e] = y[e] > 0.0 ? y[e] : 0.0;
}

/* Its gradients for gout [B,C,H,W], from that forward's y, mean and rstd: inorm_bwd with
 * gn = gout where y > 0 (the relu passed), else 0. gx [B,C,H,W], ggamma and gbeta [C]. */
void mcl_naive_inorm_relu_bwd(int64_t B, int64_t C, int64_t H, int64_t W, const float *x, const float *gamma,
                              const double *y, const double *mean, const double *rstd, const float *gout,
                              double *gx, double *ggamma, double *gbeta)
{
    const int64_t n = B * C * H * W;
    double *gn = malloc((size_t)n * sizeof(double));
    if (!gn) abort(); /* the test oracle: small shapes only */
    for (int64_t e = 0; e < n; e++) gn[e] = y[e] > 0.0 ? gout[e] : 0.0;
    inorm_bwd(B, C, H * W, x, gamma, mean, rstd, gn, gx, ggamma, gbeta);
    free(gn);
}

/* A residual block's tail: the instance norm n of x, the skip s added, 2x2 max pooling
 * (stride 2, floor), relu (inorm_pool_relu above is this with s = NULL, no skip):
 *   z[p][u][v]   = n[p][u][v] + s[p][u][v]
 *   arg[p][i][j] = the first t = dy*2 + dx attaining max_t z[p][2i + dy][2j + dx]
 *   y[p][i][j]   = max(z[p][2i + dy][2j + dx] at t = arg, 0)
 *   x, s   [B,C,H,W] (s: or NULL)  gamma, beta [C]
 *   y, arg [B,C,H/2,W/2]  mean, rstd [B*C] (over the full H*W planes) */
void mcl_naive_inorm_add_pool_relu(int64_t B, int64_t C, int64_t H, int64_t W, const float *x,
                                   const float *gamma, const float *beta, const float *s, double eps,
                                   double *y, double *mean, double *rstd, double *arg)
{
    const int64_t Ho = H / 2, Wo = W / 2;
    for (int64_t b = 0; b < B; b++)
        for (int64_t c = 0; c < C; c++) {
            const int64_t p = b * C + c;
            const float *xp = x + p * H * W, *sp = s ? s + p * H * W : NULL;
            plane_stats(xp, H * W, eps, &mean[p], &rstd[p]);
            for (int64_t i = 0; i < Ho; i++)
                for (int64_t j = 0; j < Wo; j++) {
                    double m = 0.0;
                    int best = -1;
                    for (int t = 0; t < 4; t++) {
                        const int64_t e = (2 * i + t / 2) * W + 2 * j + t % 2;
                        const double n = (xp[e] - mean[p]) * rstd[p] * gamma[c] + beta[c];
                        const double z = sp ? n + sp[e] : n;
                        if (best < 0 || z > m) m = z, best = t;
                    }
                    y[(p * Ho + i) * Wo + j] = m > 0.0 ? m : 0.0;
                    arg[(p * Ho + i) * Wo + j] = best;
                }
        }
}

/* Its gradients for gout [B,C,H/2,W/2], from that forward's y, mean, rstd and arg: z's
 * gradient gz is inorm_pool_relu's gn (tail_grad_at: the window's gout at its argmax where
 * y > 0), n's and the skip's are both gz: gx, ggamma, gbeta as inorm_pool_relu's backward,
 * gs [B,C,H,W] = gz. */
void mcl_naive_inorm_add_pool_relu_bwd(int64_t B, int64_t C, int64_t H, int64_t W, const float *x,
                                       const float *gamma, const double *y, const double *mean,
                                       const double *rstd, const double *arg, const float *gout, double *gx,
                                       double *ggamma, double *gbeta, double *gs)
{
    mcl_naive_inorm_pool_relu_bwd(B, C, H, W, x, gamma, y, mean, rstd, arg, gout, gx, ggamma, gbeta);
    for (int64_t p = 0; p < B * C; p++)
        for (int64_t e = 0; e < H * W; e++) gs[p * H * W + e] = tail_grad_at(H, W, p, e / W, e % W, y, arg, gout);
}
