/* softmax.c — reference softmax and log-softmax over the last dim.
 *
 * Both treat a [..,N] tensor as R independent rows of N. Each row is shifted by its maximum
 * before exponentiating (exp(a - max) <= 1: no overflow, and the result is unchanged since
 * softmax is shift-invariant); the sum of exponentials is accumulated in double, in order.
 * One row is handled by one thread, so the results do not depend on the thread count.
 * Backward ACCUMULATES into gin[0] (skipped when NULL) and uses the saved output y = out[0].
 * Loops run under OpenMP only above PAR_MIN elements.
 */
#include <math.h>

#include "ref.h"

/* Below this many elements a loop runs on the calling thread. */
#define PAR_MIN 32768

/* Largest element of x[0..n), n >= 1. (A NaN in the row makes the whole row NaN anyway,
 * through the sum of exponentials.) */
static float row_max(const float *x, int64_t n)
{
    float m = x[0];
    for (int64_t j = 1; j < n; j++)
        if (x[j] > m) m = x[j];
    return m;
}

/* ------------------------------------------------------------------------------------ */
/* softmax: y[r, j] = exp(a[r, j] - m_r) / sum_k exp(a[r, k] - m_r),  m_r = max_k a[r, k]
 *   a [..,N] (R rows of N) -> y [..,N]
 * backward: ga[r, j] += y[r, j] * (gout[r, j] - sum_k gout[r, k] * y[r, k])
 *           (the Jacobian dy_k/da_j = y_k (delta_kj - y_j), applied to gout) */

mcl_status mcl_ref_softmax_fwd(mcl_backend *be, const mcl_op_args *a)
{
    (void)be;
    const float *x = mcl_ref_ptr(a->in[0]);
    float *y = mcl_ref_ptr(a->out[0]);
    const int64_t R = mcl_ref_rows(a->in[0]), N = mcl_ref_cols(a->in[0]);
#pragma omp parallel for schedule(static) if (R * N > PAR_MIN)
    for (int64_t r = 0; r < R; r++) {
        const float *xr = x + r * N;
        float *yr = y + r * N;
        const float m = row_max(xr, N);
        double s = 0.0;
        for (int64_t j = 0; j < N; j++) {
            yr[j] = expf(xr[j] - m);
            s += (double)yr[j];
        }
        for (int64_t j = 0; j < N; j++) yr[j] = (float)((double)yr[j] / s);
    }
    return MCL_OK;
}

mcl_status mcl_ref_softmax_bwd(mcl_backend *be, const mcl_op_args *a)
{
    (void)be;
    if (!a->gin[0]) return MCL_OK;
    const float *y = mcl_ref_ptr(a->out[0]);
    const float *g = mcl_ref_ptr(a->gout[0]);
    float *gx = mcl_ref_ptr(a->gin[0]);
    const int64_t R = mcl_ref_rows(a->in[0]), N = mcl_ref_cols(a->in[0]);
#pragma omp parallel for schedule(static) if (R * N > PAR_MIN)
    for (int64_t r = 0; r < R; r++) {
        const float *yr = y + r * N;
        const float *gr = g + r * N;
        float *gxr = gx + r * N;
        double dot = 0.0; /* sum_k gout[r, k] * y[r, k] */
        for (int64_t k = 0; k < N; k++) dot += (double)gr[k] * (double)yr[k];
        for (int64_t j = 0; j < N; j++)
            gxr[j] += (float)((double)yr[j] * ((double)gr[j] - dot));
    }
    return MCL_OK;
}

/* ------------------------------------------------------------------------------------ */
/* log_softmax: y[r, j] = a[r, j] - m_r - log sum_k exp(a[r, k] - m_r),  m_r = max_k a[r, k]
 *   a [..,N] (R rows of N) -> y [..,N]
 * backward: ga[r, j] += gout[r, j] - exp(y[r, j]) * sum_k gout[r, k]
 *           (dy_k/da_j = delta_kj - softmax_j, and softmax = exp(y)) */

mcl_status mcl_ref_log_softmax_fwd(mcl_backend *be, const mcl_op_args *a)
{
    (void)be;
    const float *x = mcl_ref_ptr(a->in[0]);
    float *y = mcl_ref_ptr(a->out[0]);
    const int64_t R = mcl_ref_rows(a->in[0]), N = mcl_ref_cols(a->in[0]);
#pragma omp parallel for schedule(static) if (R * N > PAR_MIN)
    for (int64_t r = 0; r < R; r++) {
        const float *xr = x + r * N;
        float *yr = y + r * N;
        const float m = row_max(xr, N);
        double s = 0.0;
        for (int64_t j = 0; j < N; j++) s += (double)expf(xr[j] - m);
        const double shift = (double)m + log(s); /* log-sum-exp of the row */
        for (int64_t j = 0; j < N; j++) yr[j] = (float)((double)xr[j] - shift);
    }
    return MCL_OK;
}

mcl_status mcl_ref_log_softmax_bwd(mcl_backend *be, const mcl_op_args *a)
{
    (void)be;
    if (!a->gin[0]) return MCL_OK;
    const float *y = mcl_ref_ptr(a->out[0]);
    const float *g = mcl_ref_ptr(a->gout[0]);
    float *gx = mcl_ref_ptr(a->gin[0]);
    const int64_t R = mcl_ref_rows(a->in[0]), N = mcl_ref_cols(a->in[0]);
#pragma omp parallel for schedule(static) if (R * N > PAR_MIN)
    for (int64_t r = 0; r < R; r++) {
        const float *yr = y + r * N;
        const float *gr = g + r * N;
        float *gxr = gx + r * N;
        double gsum = 0.0; /* sum_k gout[r, k] */
        for (int64_t k = 0; k < N; k++) gsum += (double)gr[k];
        for (int64_t j = 0; j < N; j++)
            gxr[j] += (float)((double)gr[j] - exp((double)yr[j]) * gsum);
    }
    return MCL_OK;
}
