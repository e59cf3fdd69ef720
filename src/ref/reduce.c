/* reduce.c — reference reductions: sum, mean, sumsq (of all elements, out [1]) and
 * sum_last, mean_last (over the last dim, [..,N] -> [..]).
 *
 * Sums accumulate in double and have a fixed order, so results are bit-identical for any
 * number of threads:
 *   - full reductions (sum, mean, sumsq) cut the n elements into NCHUNK chunks whose bounds
 *     depend only on n (chunk c = [c*n/NCHUNK, (c+1)*n/NCHUNK)); each chunk is summed in order
 *     by one thread into its own slot of a small stack array, and the NCHUNK partial sums are
 *     then added in chunk order on the calling thread;
 *   - row reductions (sum_last, mean_last) give each row to one thread, which sums it in order.
 * Backward ACCUMULATES (ga += ...) and is skipped when gin[0] == NULL. Loops run under OpenMP
 * only above PAR_MIN elements.
 */
#include "ref.h"

/* Below this many elements a loop runs on the calling thread. */
#define PAR_MIN 32768
/* Fixed number of chunks of a full reduction (a stack array of this many doubles). */
#define NCHUNK 256

static int64_t numel(const mcl_tensor *t)
{
    return mcl_ref_rows(t) * mcl_ref_cols(t);
}

/* Sum (square = 0) or sum of squares (square = 1) of x[0..n), in double, in the fixed chunked
 * order described above. */
static double full_sum(const float *x, int64_t n, int square)
{
    double part[NCHUNK];
#pragma omp parallel for schedule(static) if (n > PAR_MIN)
    for (int c = 0; c < NCHUNK; c++) {
        const int64_t lo = n * c / NCHUNK, hi = n * (c + 1) / NCHUNK;
        double s = 0.0;
        if (square) {
            for (int64_t i = lo; i < hi; i++) s += (double)x[i] * (double)x[i];
        } else {
            for (int64_t i = lo; i < hi; i++) s += (double)x[i];
        }
        part[c] = s;
    }
    double total = 0.0;
    for (int c = 0; c < NCHUNK; c++) total += part[c];
    return total;
}

/* ------------------------------------------------------------------------------------ */
/* sum: out = sum_i a[i]
 *   a [..] (n elements) -> out [1]
 * backward: ga[i] += gout[0] */

mcl_status mcl_ref_sum_fwd(mcl_backend *be, const mcl_op_args *a)
{
    (void)be;
    const float *x = mcl_ref_ptr(a->in[0]);
    float *out = mcl_ref_ptr(a->out[0]);
    out[0] = (float)full_sum(x, numel(a->in[0]), 0);
    return MCL_OK;
}

mcl_status mcl_ref_sum_bwd(mcl_backend *be, const mcl_op_args *a)
{
    (void)be;
    if (!a->gin[0]) return MCL_OK;
    const float g = mcl_ref_ptr(a->gout[0])[0];
    float *gx = mcl_ref_ptr(a->gin[0]);
    const int64_t n = numel(a->in[0]);
#pragma omp parallel for schedule(static) if (n > PAR_MIN)
    for (int64_t i = 0; i < n; i++) gx[i] += g;
    return MCL_OK;
}

/* ------------------------------------------------------------------------------------ */
/* mean: out = (1/n) sum_i a[i]
 *   a [..] (n elements) -> out [1]
 * backward: ga[i] += gout[0] / n */

mcl_status mcl_ref_mean_fwd(mcl_backend *be, const mcl_op_args *a)
{
    (void)be;
    const float *x = mcl_ref_ptr(a->in[0]);
    float *out = mcl_ref_ptr(a->out[0]);
    const int64_t n = numel(a->in[0]);
    out[0] = (float)(full_sum(x, n, 0) / (double)n);
    return MCL_OK;
}

mcl_status mcl_ref_mean_bwd(mcl_backend *be, const mcl_op_args *a)
{
    (void)be;
    if (!a->gin[0]) return MCL_OK;
    const int64_t n = numel(a->in[0]);
    const float g = (float)((double)mcl_ref_ptr(a->gout[0])[0] / (double)n);
    float *gx = mcl_ref_ptr(a->gin[0]);
#pragma omp parallel for schedule(static) if (n > PAR_MIN)
    for (int64_t i = 0; i < n; i++) gx[i] += g;
    return MCL_OK;
}

/* ------------------------------------------------------------------------------------ */
/* sumsq: out = sum_i a[i]^2
 *   a [..] (n elements) -> out [1]
 * backward: ga[i] += 2 * a[i] * gout[0] */

mcl_status mcl_ref_sumsq_fwd(mcl_backend *be, const mcl_op_args *a)
{
    (void)be;
    const float *x = mcl_ref_ptr(a->in[0]);
    float *out = mcl_ref_ptr(a->out[0]);
    out[0] = (float)full_sum(x, numel(a->in[0]), 1);
    return MCL_OK;
}

mcl_status mcl_ref_sumsq_bwd(mcl_backend *be, const mcl_op_args *a)
{
    (void)be;
    if (!a->gin[0]) return MCL_OK;
    const float g2 = 2.0f * mcl_ref_ptr(a->gout[0])[0];
    const float *x = mcl_ref_ptr(a->in[0]);
    float *gx = mcl_ref_ptr(a->gin[0]);
    const int64_t n = numel(a->in[0]);
#pragma omp parallel for schedule(static) if (n > PAR_MIN)
    for (int64_t i = 0; i < n; i++) gx[i] += g2 * x[i];
    return MCL_OK;
}

/* ------------------------------------------------------------------------------------ */
/* sum_last:  out[r] = sum_j a[r, j]
 * mean_last: out[r] = (1/N) sum_j a[r, j]
 *   a [..,N] (R rows of N) -> out [..] (R elements; [N] -> [1])
 * backward: ga[r, j] += gout[r]          (sum_last)
 *           ga[r, j] += gout[r] / N      (mean_last) */

/* Shared body: out[r] = (sum_j a[r, j]) / div. */
static void rows_sum(const mcl_op_args *a, double div)
{
    const float *x = mcl_ref_ptr(a->in[0]);
    float *out = mcl_ref_ptr(a->out[0]);
    const int64_t R = mcl_ref_rows(a->in[0]), N = mcl_ref_cols(a->in[0]);
#pragma omp parallel for schedule(static) if (R * N > PAR_MIN)
    for (int64_t r = 0; r < R; r++) {
        const float *xr = x + r * N;
        double s = 0.0;
        for (int64_t j = 0; j < N; j++) s += (double)xr[j];
        out[r] = (float)(s / div);
    }
}

/* Shared body: ga[r, j] += gout[r] / div. */
static void rows_sum_bwd(const mcl_op_args *a, double div)
{
    if (!a->gin[0]) return;
    const float *g = mcl_ref_ptr(a->gout[0]);
    float *gx = mcl_ref_ptr(a->gin[0]);
    const int64_t R = mcl_ref_rows(a->in[0]), N = mcl_ref_cols(a->in[0]);
#pragma omp parallel for schedule(static) if (R * N > PAR_MIN)
    for (int64_t r = 0; r < R; r++) {
        const float gr = (float)((double)g[r] / div);
        float *gxr = gx + r * N;
        for (int64_t j = 0; j < N; j++) gxr[j] += gr;
    }
}

mcl_status mcl_ref_sum_last_fwd(mcl_backend *be, const mcl_op_args *a)
{
    (void)be;
    rows_sum(a, 1.0);
    return MCL_OK;
}

mcl_status mcl_ref_sum_last_bwd(mcl_backend *be, const mcl_op_args *a)
{
    (void)be;
    rows_sum_bwd(a, 1.0);
    return MCL_OK;
}

mcl_status mcl_ref_mean_last_fwd(mcl_backend *be, const mcl_op_args *a)
{
    (void)be;
    rows_sum(a, (double)mcl_ref_cols(a->in[0]));
    return MCL_OK;
}

mcl_status mcl_ref_mean_last_bwd(mcl_backend *be, const mcl_op_args *a)
{
    (void)be;
    rows_sum_bwd(a, (double)mcl_ref_cols(a->in[0]));
    return MCL_OK;
}
