/* norm.c — reference layer normalization over the last dim.
 *
 * x [..,N] is R independent rows of N. Per row: mean and biased variance (divide by N),
 * accumulated in double in a fixed order (two passes: mean first, then the squared
 * deviations, which avoids the cancellation of E[x^2] - E[x]^2); y is formed in double and
 * rounded once. The row mean and the reciprocal standard deviation are saved as outputs 1
 * and 2 (float); backward recomputes x_hat from those saved values. Rows are parallel; the gamma/beta gradients sum over rows, so they
 * are computed per column block, each column summed over the rows in order by one thread
 * (deterministic for any thread count). Backward ACCUMULATES into the non-NULL gin[k].
 * Loops run under OpenMP only above PAR_MIN elements.
 */
#include <math.h>

#include "ref.h"

/* Below this many elements a loop runs on the calling thread. */
#define PAR_MIN 32768
/* Columns per block of the gamma/beta gradients (stack arrays of this many doubles). */
#define LN_COLS 128

/* ------------------------------------------------------------------------------------ */
/* layer_norm:
 *   mean[r]  = (1/N) sum_j x[r, j]
 *   var[r]   = (1/N) sum_j (x[r, j] - mean[r])^2                 (biased)
 *   rstd[r]  = 1 / sqrt(var[r] + eps)
 *   xhat     = (x[r, j] - mean[r]) * rstd[r]
 *   y[r, j]  = xhat * gamma[j] + beta[j]
 *
 *   in[0] x [..,N] (R rows), in[1] gamma [N], in[2] beta [N]; p.f[0] = eps
 *   out[0] y [..,N], out[1] mean [R], out[2] rstd [R]   (only y is differentiable)
 *
 * backward, with dxhat_j = gout[r, j] * gamma[j]:
 *   gx[r, j]  += rstd[r] * (dxhat_j - (1/N) sum_k dxhat_k - xhat_j * (1/N) sum_k dxhat_k xhat_k)
 *   ggamma[j] += sum_r gout[r, j] * xhat[r, j]
 *   gbeta[j]  += sum_r gout[r, j]
 */

mcl_status mcl_ref_layer_norm_fwd(mcl_backend *be, const mcl_op_args *a)
{
    (void)be;
    const float *x = mcl_ref_ptr(a->in[0]);
    const float *gamma = mcl_ref_ptr(a->in[1]);
    const float *beta = mcl_ref_ptr(a->in[2]);
    float *y = mcl_ref_ptr(a->out[0]);
    float *mean = mcl_ref_ptr(a->out[1]);
    float *rstd = mcl_ref_ptr(a->out[2]);
    const double eps = (double)a->p.f[0];
    const int64_t R = mcl_ref_rows(a->in[0]), N = mcl_ref_cols(a->in[0]);
#pragma omp parallel for schedule(static) if (R * N > PAR_MIN)
    for (int64_t r = 0; r < R; r++) {
        const float *xr = x + r * N;
        float *yr = y + r * N;
        double s = 0.0;
        for (int64_t j = 0; j < N; j++) s += (double)xr[j];
        const double mu = s / (double)N;
        double v = 0.0;
        for (int64_t j = 0; j < N; j++) {
            const double d = (double)xr[j] - mu;
            v += d * d;
        }
        v /= (double)N;
        const double rs = 1.0 / sqrt(v + eps);
        mean[r] = (float)mu;
        rstd[r] = (float)rs;
        for (int64_t j = 0; j < N; j++) {
            const double xhat = ((double)xr[j] - mu) * rs;
            yr[j] = (float)(xhat * (double)gamma[j] + (double)beta[j]);
        }
    }
    return MCL_OK;
}

mcl_status mcl_ref_layer_norm_bwd(mcl_backend *be, const mcl_op_args *a)
{
    (void)be;
    const float *x = mcl_ref_ptr(a->in[0]);
    const float *gamma = mcl_ref_ptr(a->in[1]);
    const float *mean = mcl_ref_ptr(a->out[1]);
    const float *rstd = mcl_ref_ptr(a->out[2]);
    const float *g = mcl_ref_ptr(a->gout[0]);
    const int64_t R = mcl_ref_rows(a->in[0]), N = mcl_ref_cols(a->in[0]);

    /* gx: one row per thread; the two row means in double */
    if (a->gin[0]) {
        float *gx = mcl_ref_ptr(a->gin[0]);
#pragma omp parallel for schedule(static) if (R * N > PAR_MIN)
        for (int64_t r = 0; r < R; r++) {
            const float *xr = x + r * N;
            const float *gr = g + r * N;
            float *gxr = gx + r * N;
            const float m = mean[r], rs = rstd[r];
            double sum_d = 0.0, sum_dx = 0.0; /* sum dxhat, sum dxhat * xhat */
            for (int64_t j = 0; j < N; j++) {
                const float xhat = (xr[j] - m) * rs;
                const double dxhat = (double)gr[j] * (double)gamma[j];
                sum_d += dxhat;
                sum_dx += dxhat * (double)xhat;
            }
            const double mean_d = sum_d / (double)N, mean_dx = sum_dx / (double)N;
            for (int64_t j = 0; j < N; j++) {
                const float xhat = (xr[j] - m) * rs;
                const double dxhat = (double)gr[j] * (double)gamma[j];
                gxr[j] += (float)((double)rs * (dxhat - mean_d - (double)xhat * mean_dx));
            }
        }
    }

    /* ggamma, gbeta: one block of columns per thread, each column summed over rows in order */
    if (a->gin[1] || a->gin[2]) {
        float *ggamma = a->gin[1] ? mcl_ref_ptr(a->gin[1]) : NULL;
        float *gbeta = a->gin[2] ? mcl_ref_ptr(a->gin[2]) : NULL;
        const int64_t nblocks = (N + LN_COLS - 1) / LN_COLS;
#pragma omp parallel for schedule(static) if (R * N > PAR_MIN)
        for (int64_t blk = 0; blk < nblocks; blk++) {
            const int64_t j0 = blk * LN_COLS;
            const int64_t nj = (N - j0 < LN_COLS) ? N - j0 : LN_COLS;
            double acc_g[LN_COLS], acc_b[LN_COLS];
            for (int64_t j = 0; j < nj; j++) acc_g[j] = acc_b[j] = 0.0;
            for (int64_t r = 0; r < R; r++) {
                const float *xr = x + r * N + j0;
                const float *gr = g + r * N + j0;
                const float m = mean[r], rs = rstd[r];
                for (int64_t j = 0; j < nj; j++) {
                    const float xhat = (xr[j] - m) * rs;
                    acc_g[j] += (double)gr[j] * (double)xhat;
                    acc_b[j] += (double)gr[j];
                }
            }
            /* separate statements: correct even if gin[1] and gin[2] are one tensor */
            if (ggamma)
                for (int64_t j = 0; j < nj; j++) ggamma[j0 + j] += (float)acc_g[j];
            if (gbeta)
                for (int64_t j = 0; j < nj; j++) gbeta[j0 + j] += (float)acc_b[j];
        }
    }
    return MCL_OK;
}
