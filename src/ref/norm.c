/* norm.c — reference layer normalization over the last dim.
 *
 * x [..,N] is R independent rows of N. Per row: mean and biased variance (divide by N),
 * accumulated in double in a fixed order (two passes: mean first, then the squared
 * deviations, which avoids the cancellation of E[x^2] - E[x]^2); y is formed in double and
 * rounded once. The row mean and the reciprocal standard deviation are saved as outputs 1
 * and 2 (float); backward recomputes x_hat from those saved values. Rows are parallel; the gamma/beta gradients sum over rows, so they
 * are computed per column block, each column summed over the rows in order by one thread
 * (deterministic for any thread count). Backward ACCUMULATES into the non-NULL gin[k].
 * Loops run under OpenMP only above PAR_MIN elements. The row sums of LN_RB rows run side by
 * side, each in its own order (ln_stats): the same bits as one row at a time, without
 * waiting on the adder's latency. The readable form is mcl_naive_layer_norm(_bwd)
 * (src/ref/naive/norm.c), checked against this by tests/test-naive.
 */
#include <math.h>

#include "ref.h"

/* Below this many elements a loop runs on the calling thread. */
#define PAR_MIN 32768
/* Columns per block of the gamma/beta gradients (stack arrays of this many doubles). */
#define LN_COLS 128
/* Rows whose sums run side by side (see ln_stats). */
#define LN_RB 8

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

/* The rows are taken LN_RB at a time and each row sum runs in its own variable, element by
 * element in the order j = 0, 1, ..., N - 1, exactly the sum of one row alone: a row's double
 * sum is a chain of dependent adds (4 cycles each), so one row at a time ran at the adder's
 * latency; LN_RB rows side by side fill the adder's pipeline and give the same bits. */

/* mean and reciprocal standard deviation of the nr <= LN_RB rows x [nr, N] (row stride N):
 *   mu[k] = (1/N) sum_j x[k, j],  rs[k] = 1 / sqrt((1/N) sum_j (x[k, j] - mu[k])^2 + eps)
 * Always LN_RB lanes (a fixed count keeps the sums in registers; not vectorized: across rows
 * that would take gathers, slower here); the lanes past nr repeat the last row and are dropped. */
MCL_HOT static void ln_stats(const float *x, int64_t N, int64_t nr, double eps, double *mu,
                             double *rs)
{
    int64_t off[LN_RB];
    for (int64_t k = 0; k < LN_RB; k++) off[k] = (k < nr ? k : nr - 1) * N;
    double s[LN_RB] = {0}, m[LN_RB], v[LN_RB] = {0};
    for (int64_t j = 0; j < N; j++)
        for (int64_t k = 0; k < LN_RB; k++) s[k] += (double)x[off[k] + j];
    for (int64_t k = 0; k < LN_RB; k++) m[k] = s[k] / (double)N;
    for (int64_t j = 0; j < N; j++)
        for (int64_t k = 0; k < LN_RB; k++) {
            const double d = (double)x[off[k] + j] - m[k];
            v[k] += d * d;
        }
    for (int64_t k = 0; k < nr; k++) {
        mu[k] = m[k];
        rs[k] = 1.0 / sqrt(v[k] / (double)N + eps);
    }
}

/* y [N] = ((x [N] - mu) * rs) * gamma [N] + beta [N], formed in double, rounded once */
MCL_HOT static void ln_row_out(const float *restrict xr, const float *restrict gamma,
                               const float *restrict beta, int64_t N, double mu, double rs,
                               float *restrict yr)
{
    MCL_SIMD for (int64_t j = 0; j < N; j++) {
        const double xhat = ((double)xr[j] - mu) * rs;
        yr[j] = (float)(xhat * (double)gamma[j] + (double)beta[j]);
    }
}

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
    const int64_t nblk = (R + LN_RB - 1) / LN_RB;
#pragma omp parallel for schedule(static) if (R * N > PAR_MIN)
    for (int64_t b = 0; b < nblk; b++) {
        const int64_t r0 = b * LN_RB, nr = R - r0 < LN_RB ? R - r0 : LN_RB;
        double mu[LN_RB], rs[LN_RB];
        ln_stats(x + r0 * N, N, nr, eps, mu, rs);
        for (int64_t k = 0; k < nr; k++) {
            mean[r0 + k] = (float)mu[k];
            rstd[r0 + k] = (float)rs[k];
            ln_row_out(x + (r0 + k) * N, gamma, beta, N, mu[k], rs[k], y + (r0 + k) * N);
        }
    }
    return MCL_OK;
}

/* sum_j dxhat_j and sum_j dxhat_j xhat_j of the nr <= LN_RB rows x, g [nr, N] (row stride N),
 * dxhat_j = g[k, j] * gamma[j] in double, xhat_j = (x[k, j] - m[k]) * rs[k] in float; each
 * row's sums in order j = 0 .. N - 1, LN_RB lanes (see ln_stats) */
MCL_HOT static void ln_bwd_sums(const float *x, const float *g, const float *gamma, int64_t N,
                                int64_t nr, const float *m, const float *rs, double *sum_d,
                                double *sum_dx)
{
    int64_t off[LN_RB];
    float mk[LN_RB], rk[LN_RB];
    for (int64_t k = 0; k < LN_RB; k++) {
        const int64_t r = k < nr ? k : nr - 1;
        off[k] = r * N;
        mk[k] = m[r];
        rk[k] = rs[r];
    }
    double sd[LN_RB] = {0}, sdx[LN_RB] = {0};
    for (int64_t j = 0; j < N; j++) {
        const double gj = (double)gamma[j];
        for (int64_t k = 0; k < LN_RB; k++) {
            const float xhat = (x[off[k] + j] - mk[k]) * rk[k];
            const double dxhat = (double)g[off[k] + j] * gj;
            sd[k] += dxhat;
            sdx[k] += dxhat * (double)xhat;
        }
    }
    for (int64_t k = 0; k < nr; k++) {
        sum_d[k] = sd[k];
        sum_dx[k] = sdx[k];
    }
}

/* gx [N] += rs * (dxhat - mean_d - xhat * mean_dx), one row */
MCL_HOT static void ln_row_gx(const float *restrict xr, const float *restrict gr,
                              const float *restrict gamma, int64_t N, float m, float rs,
                              double mean_d, double mean_dx, int fresh, float *restrict gxr)
{
    /* fresh: gxr logically zero (mcl_ref_grad_fresh), not read: 0 + the term */
    if (fresh)
        MCL_SIMD for (int64_t j = 0; j < N; j++) {
            const float xhat = (xr[j] - m) * rs;
            const double dxhat = (double)gr[j] * (double)gamma[j];
            gxr[j] = 0.0f + (float)((double)rs * (dxhat - mean_d - (double)xhat * mean_dx));
        }
    else
        MCL_SIMD for (int64_t j = 0; j < N; j++) {
            const float xhat = (xr[j] - m) * rs;
            const double dxhat = (double)gr[j] * (double)gamma[j];
            gxr[j] += (float)((double)rs * (dxhat - mean_d - (double)xhat * mean_dx));
        }
}

/* one row's terms of the gamma/beta gradients of columns j < nj (each column its own sum):
 *   acc_g [nj] += g [nj] * xhat [nj],  xhat = (x - m) * rs in float;  acc_b [nj] += g [nj] */
MCL_HOT static void ln_col_acc(const float *restrict xr, const float *restrict gr, int64_t nj,
                               float m, float rs, double *restrict acc_g, double *restrict acc_b)
{
    MCL_SIMD for (int64_t j = 0; j < nj; j++) {
        const float xhat = (xr[j] - m) * rs;
        acc_g[j] += (double)gr[j] * (double)xhat;
        acc_b[j] += (double)gr[j];
    }
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

    /* gx: LN_RB rows per task; the two row means in double */
    if (a->gin[0]) {
        float *gx = mcl_ref_ptr(a->gin[0]);
        const int fresh = mcl_ref_grad_fresh(a->gin[0]);
        const int64_t nblk = (R + LN_RB - 1) / LN_RB;
#pragma omp parallel for schedule(static) if (R * N > PAR_MIN)
        for (int64_t b = 0; b < nblk; b++) {
            const int64_t r0 = b * LN_RB, nr = R - r0 < LN_RB ? R - r0 : LN_RB;
            double sum_d[LN_RB], sum_dx[LN_RB];
            ln_bwd_sums(x + r0 * N, g + r0 * N, gamma, N, nr, mean + r0, rstd + r0, sum_d, sum_dx);
            for (int64_t k = 0; k < nr; k++) {
                const int64_t r = r0 + k;
                ln_row_gx(x + r * N, g + r * N, gamma, N, mean[r], rstd[r], sum_d[k] / (double)N,
                          sum_dx[k] / (double)N, fresh, gx + r * N);
            }
        }
    }

    /* ggamma, gbeta: one block of columns per thread, each column summed over rows in order */
    if (a->gin[1] || a->gin[2]) {
        float *ggamma = a->gin[1] ? mcl_ref_ptr(a->gin[1]) : NULL;
        float *gbeta = a->gin[2] ? mcl_ref_ptr(a->gin[2]) : NULL;
        const int fresh_g = ggamma && mcl_ref_grad_fresh(a->gin[1]);
        const int fresh_b = gbeta && mcl_ref_grad_fresh(a->gin[2]);
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
                ln_col_acc(xr, gr, nj, mean[r], rstd[r], acc_g, acc_b);
            }
            /* separate statements: correct even if gin[1] and gin[2] are one tensor (then
             * only ggamma's block is stored fresh, and gbeta's is added to it) */
            if (ggamma)
                for (int64_t j = 0; j < nj; j++)
                    ggamma[j0 + j] = (fresh_g ? 0.0f : ggamma[j0 + j]) + (float)acc_g[j];
            if (gbeta)
                for (int64_t j = 0; j < nj; j++)
                    gbeta[j0 + j] = (fresh_b ? 0.0f : gbeta[j0 + j]) + (float)acc_b[j];
        }
    }
    return MCL_OK;
}
