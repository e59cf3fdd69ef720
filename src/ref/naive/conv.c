/* conv.c — naive direct 2-D convolution (forward, both gradients) and 2x2 max pooling
 * (the definition behind src/ref/conv.c, which uses zero-bordered planes, the GEMM's
 * register tile and im2col). */
#include <math.h>

#include "naive.h"

/* Ho = (H + 2 pad - k) / stride + 1 (floor), Wo likewise. */
void mcl_naive_conv_init(mcl_naive_conv *cv, int64_t B, int64_t C, int64_t H, int64_t W,
                         int64_t O, int64_t k, int64_t stride, int64_t pad)
{
    cv->B = B, cv->C = C, cv->H = H, cv->W = W, cv->O = O, cv->k = k;
    cv->stride = stride, cv->pad = pad;
    cv->Ho = (H + 2 * pad - k) / stride + 1;
    cv->Wo = (W + 2 * pad - k) / stride + 1;
}

/* x[b][c][iy][ix], or 0 outside the image (the zero padding). */
static double x_at(const mcl_naive_conv *cv, const float *x, int64_t b, int64_t c, int64_t iy,
                   int64_t ix)
{
    if (iy < 0 || iy >= cv->H || ix < 0 || ix >= cv->W) return 0.0;
    return x[((b * cv->C + c) * cv->H + iy) * cv->W + ix];
}

/* out[b][o][oy][ox] = bias[o] + sum_{c, ky, kx} w[o][c][ky][kx] * x[b][c][oy*s - p + ky][ox*s - p + kx]
 *   (s = stride, p = pad; x is 0 outside the image)
 *   x     [B,C,H,W]
 *   w     [O,C,k,k]
 *   bias  [O]
 *   out   [B,O,Ho,Wo] */
void mcl_naive_conv2d_fwd(const mcl_naive_conv *cv, const float *x, const float *w,
                          const float *bias, double *out)
{
    const int64_t C = cv->C, O = cv->O, k = cv->k, s = cv->stride, p = cv->pad;
    for (int64_t b = 0; b < cv->B; b++)
        for (int64_t o = 0; o < O; o++)
            for (int64_t oy = 0; oy < cv->Ho; oy++)
                for (int64_t ox = 0; ox < cv->Wo; ox++) {
                    double acc = bias[o];
                    for (int64_t c = 0; c < C; c++)
                        for (int64_t ky = 0; ky < k; ky++)
                            for (int64_t kx = 0; kx < k; kx++)
                                acc += (double)w[((o * C + c) * k + ky) * k + kx] *
                                       x_at(cv, x, b, c, oy * s - p + ky, ox * s - p + kx);
                    out[((b * O + o) * cv->Ho + oy) * cv->Wo + ox] = acc;
                }
}

/* gx[b][c][iy][ix] = sum over (o, oy, ox, ky, kx) with oy*s - p + ky = iy and
 *                    ox*s - p + kx = ix  of  w[o][c][ky][kx] * gout[b][o][oy][ox]
 * written as a scatter: every product of the forward sends its gradient back to the input
 * element it read (products that read the zero padding send nothing).
 *   gout  [B,O,Ho,Wo]
 *   w     [O,C,k,k]
 *   gx    [B,C,H,W] */
void mcl_naive_conv2d_bwd_input(const mcl_naive_conv *cv, const float *gout, const float *w,
                                double *gx)
{
    const int64_t C = cv->C, O = cv->O, k = cv->k, s = cv->stride, p = cv->pad;
    for (int64_t i = 0; i < cv->B * C * cv->H * cv->W; i++) gx[i] = 0.0;
    for (int64_t b = 0; b < cv->B; b++)
        for (int64_t o = 0; o < O; o++)
            for (int64_t oy = 0; oy < cv->Ho; oy++)
                for (int64_t ox = 0; ox < cv->Wo; ox++) {
                    const double g = gout[((b * O + o) * cv->Ho + oy) * cv->Wo + ox];
                    for (int64_t c = 0; c < C; c++)
                        for (int64_t ky = 0; ky < k; ky++)
                            for (int64_t kx = 0; kx < k; kx++) {
                                const int64_t iy = oy * s - p + ky, ix = ox * s - p + kx;
                                if (iy < 0 || iy >= cv->H || ix < 0 || ix >= cv->W) continue;
                                gx[((b * C + c) * cv->H + iy) * cv->W + ix] +=
                                    (double)w[((o * C + c) * k + ky) * k + kx] * g;
                            }
                }
}

/* gw[o][c][ky][kx] = sum_{b, oy, ox} gout[b][o][oy][ox] * x[b][c][oy*s - p + ky][ox*s - p + kx]
 * gb[o]            = sum_{b, oy, ox} gout[b][o][oy][ox]
 *   gout  [B,O,Ho,Wo]
 *   x     [B,C,H,W]
 *   gw    [O,C,k,k]
 *   gb    [O]        (NULL: not computed) */
void mcl_naive_conv2d_bwd_weight(const mcl_naive_conv *cv, const float *gout, const float *x,
                                 double *gw, double *gb)
{
    const int64_t C = cv->C, O = cv->O, k = cv->k, s = cv->stride, p = cv->pad;
    for (int64_t o = 0; o < O; o++) {
        for (int64_t c = 0; c < C; c++)
            for (int64_t ky = 0; ky < k; ky++)
                for (int64_t kx = 0; kx < k; kx++) {
                    double acc = 0.0;
                    for (int64_t b = 0; b < cv->B; b++)
                        for (int64_t oy = 0; oy < cv->Ho; oy++)
                            for (int64_t ox = 0; ox < cv->Wo; ox++)
                                acc += (double)gout[((b * O + o) * cv->Ho + oy) * cv->Wo + ox] *
                                       x_at(cv, x, b, c, oy * s - p + ky, ox * s - p + kx);
                    gw[((o * C + c) * k + ky) * k + kx] = acc;
                }
        if (gb) {
            double acc = 0.0;
            for (int64_t b = 0; b < cv->B; b++)
                for (int64_t i = 0; i < cv->Ho * cv->Wo; i++) acc += gout[(b * O + o) * cv->Ho * cv->Wo + i];
            gb[o] = acc;
        }
    }
}

/* out[q][i][j] = max_{t < 4} x[q][2i + t/2][2j + t%2]
 * arg[q][i][j] = the first t (= dy*2 + dx) attaining that maximum
 * (odd H or W: the last row or column is not part of any window)
 *   x    [Q,H,W]        Q = B*C planes
 *   out  [Q,H/2,W/2]
 *   arg  [Q,H/2,W/2] */
void mcl_naive_maxpool2d(int64_t Q, int64_t H, int64_t W, const float *x, double *out,
                         double *arg)
{
    const int64_t Ho = H / 2, Wo = W / 2;
    for (int64_t q = 0; q < Q; q++)
        for (int64_t i = 0; i < Ho; i++)
            for (int64_t j = 0; j < Wo; j++) {
                double m = -INFINITY;
                int best = -1;
                for (int t = 0; t < 4; t++) {
                    double v = x[(q * H + 2 * i + t / 2) * W + 2 * j + t % 2];
                    if (best < 0 || v > m) m = v, best = t;
                }
                out[(q * Ho + i) * Wo + j] = m;
                arg[(q * Ho + i) * Wo + j] = best;
            }
}
