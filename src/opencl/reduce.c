/* reduce.c — OpenCL host glue of the reductions: sum, mean, sumsq (of all elements, out [1])
 * and sum_last, mean_last (over the last dim). Kernels: kernels/reduce.cl; equations and
 * semantics: src/ref/reduce.c.
 *
 * Full reductions run in two passes over a fixed shape that depends only on n and the
 * device's work-group limit: G groups write (hi, lo) partial sums into the backend's scratch
 * buffer, then one group adds them in order. Row reductions run one work-group per row.
 * Backward ACCUMULATES into gin[0] (skipped when NULL).
 */
#include "ocl.h"

/* Upper bound on the number of partial sums of a full reduction (pass 1 groups). */
#define REDUCE_MAX_GROUPS 512

/* "sum forward (kernel sum_partials, x [1000])" — the context of an error message. */
static const char *what(char *buf, size_t len, const char *op, int bwd, const char *kname,
                        const mcl_tensor *x)
{
    return mcl_ocl_what_op(buf, len, op, bwd ? "backward" : "forward", kname, "x", x);
}

/* ------------------------------------------------------------------------------------ */
/* Full reduction: out[0] = (sum_i f(x[i])) / div, f(x) = x (square = 0) or x^2 (square = 1),
 * div = 1 (sum, sumsq) or n (mean). */
static mcl_status full_reduce(mcl_backend *be, const mcl_op_args *a, const char *op, int square,
                              int mean)
{
    const mcl_tensor *x = a->in[0];
    const int64_t n = mcl_tensor_numel(x);
    char wb[160];
    size_t wg1, wg2;
    cl_kernel k1 = mcl_ocl_kernel(be, "sum_partials", &wg1);
    cl_kernel k2 = k1 ? mcl_ocl_kernel(be, "sum_combine", &wg2) : NULL;
    if (!k1 || !k2) return mcl_ocl_recorded(be);
    const size_t W1 = mcl_ocl_reduce_wg(wg1), W2 = mcl_ocl_reduce_wg(wg2);
    /* about one element per work-item at least, at most REDUCE_MAX_GROUPS groups */
    int64_t G = (n + (int64_t)W1 - 1) / (int64_t)W1;
    if (G > REDUCE_MAX_GROUPS) G = REDUCE_MAX_GROUPS;
    cl_mem part = mcl_ocl_scratch(be, (size_t)G * 2 * sizeof(float));
    if (!part) return mcl_ocl_recorded(be);

    int i = mcl_ocl_arg_tensor(be, k1, 0, x);
    i = mcl_ocl_arg_long(be, k1, i, n);
    i = mcl_ocl_arg_long(be, k1, i, square);
    i = mcl_ocl_arg_mem(be, k1, i, part);
    /* __local: W1 float2 = 8·W1 bytes (2 KiB at 256) */
    i = mcl_ocl_arg_local(be, k1, i, W1 * 2 * sizeof(float));
    mcl_status s = mcl_ocl_launch_groups(be, k1, i, (size_t)G, W1,
                                         what(wb, sizeof wb, op, 0, "sum_partials", x));
    if (s != MCL_OK) return s;

    i = mcl_ocl_arg_mem(be, k2, 0, part);
    i = mcl_ocl_arg_long(be, k2, i, G);
    i = mcl_ocl_arg_float(be, k2, i, mean ? (float)n : 1.0f);
    i = mcl_ocl_arg_tensor(be, k2, i, a->out[0]);
    /* __local: W2 float2 = 8·W2 bytes (2 KiB at 256) */
    i = mcl_ocl_arg_local(be, k2, i, W2 * 2 * sizeof(float));
    return mcl_ocl_launch_groups(be, k2, i, 1, W2, what(wb, sizeof wb, op, 0, "sum_combine", x));
}

/* Backward of sum (div = 1) and mean (div = n): gx[i] += gout[0] / div. */
static mcl_status full_reduce_bwd(mcl_backend *be, const mcl_op_args *a, const char *op, int mean)
{
    if (!a->gin[0]) return MCL_OK;
    const mcl_tensor *x = a->in[0];
    const int64_t n = mcl_tensor_numel(x);
    char wb[160];
    cl_kernel k = mcl_ocl_kernel(be, "sum_bwd", NULL);
    if (!k) return mcl_ocl_recorded(be);
    int i = mcl_ocl_arg_tensor(be, k, 0, a->gout[0]);
    i = mcl_ocl_arg_float(be, k, i, mean ? (float)n : 1.0f);
    i = mcl_ocl_arg_tensor(be, k, i, a->gin[0]);
    i = mcl_ocl_arg_long(be, k, i, n);
    return mcl_ocl_launch(be, k, i, n, what(wb, sizeof wb, op, 1, "sum_bwd", x));
}

/* sum: out = sum_i a[i];  backward: ga[i] += gout[0] */
mcl_status mcl_ocl_sum_fwd(mcl_backend *be, const mcl_op_args *a)
{
    return full_reduce(be, a, "sum", 0, 0);
}

mcl_status mcl_ocl_sum_bwd(mcl_backend *be, const mcl_op_args *a)
{
    return full_reduce_bwd(be, a, "sum", 0);
}

/* mean: out = (1/n) sum_i a[i];  backward: ga[i] += gout[0] / n */
mcl_status mcl_ocl_mean_fwd(mcl_backend *be, const mcl_op_args *a)
{
    return full_reduce(be, a, "mean", 0, 1);
}

mcl_status mcl_ocl_mean_bwd(mcl_backend *be, const mcl_op_args *a)
{
    return full_reduce_bwd(be, a, "mean", 1);
}

/* sumsq: out = sum_i a[i]^2;  backward: ga[i] += 2 * a[i] * gout[0] */
mcl_status mcl_ocl_sumsq_fwd(mcl_backend *be, const mcl_op_args *a)
{
    return full_reduce(be, a, "sumsq", 1, 0);
}

mcl_status mcl_ocl_sumsq_bwd(mcl_backend *be, const mcl_op_args *a)
{
    if (!a->gin[0]) return MCL_OK;
    const mcl_tensor *x = a->in[0];
    char wb[160];
    return mcl_ocl_launch_binary(be, "sumsq_bwd", a->gout[0], x, a->gin[0],
                                 what(wb, sizeof wb, "sumsq", 1, "sumsq_bwd", x));
}

/* ------------------------------------------------------------------------------------ */
/* sum_last:  out[r] = sum_j a[r, j]            backward: ga[r, j] += gout[r]
 * mean_last: out[r] = (1/N) sum_j a[r, j]      backward: ga[r, j] += gout[r] / N
 *   a [..,N] (R rows of N) -> out [..] (R elements) */

static mcl_status rows_reduce(mcl_backend *be, const mcl_op_args *a, const char *op, int mean)
{
    const mcl_tensor *x = a->in[0];
    const int64_t R = mcl_ocl_rows(x), N = mcl_ocl_cols(x);
    char wb[160];
    size_t wg;
    cl_kernel k = mcl_ocl_kernel(be, "sum_last_fwd", &wg);
    if (!k) return mcl_ocl_recorded(be);
    const size_t W = mcl_ocl_row_wg(wg, N);
    int i = mcl_ocl_arg_tensor(be, k, 0, x);
    i = mcl_ocl_arg_long(be, k, i, N);
    i = mcl_ocl_arg_float(be, k, i, mean ? (float)N : 1.0f);
    i = mcl_ocl_arg_tensor(be, k, i, a->out[0]);
    /* __local: W float2 = 8·W bytes (2 KiB at W = 256) */
    i = mcl_ocl_arg_local(be, k, i, W * 2 * sizeof(float));
    return mcl_ocl_launch_groups(be, k, i, (size_t)R, W,
                                 what(wb, sizeof wb, op, 0, "sum_last_fwd", x));
}

static mcl_status rows_reduce_bwd(mcl_backend *be, const mcl_op_args *a, const char *op, int mean)
{
    if (!a->gin[0]) return MCL_OK;
    const mcl_tensor *x = a->in[0];
    const int64_t n = mcl_tensor_numel(x), N = mcl_ocl_cols(x);
    char wb[160];
    cl_kernel k = mcl_ocl_kernel(be, "sum_last_bwd", NULL);
    if (!k) return mcl_ocl_recorded(be);
    int i = mcl_ocl_arg_tensor(be, k, 0, a->gout[0]);
    i = mcl_ocl_arg_long(be, k, i, N);
    i = mcl_ocl_arg_float(be, k, i, mean ? (float)N : 1.0f);
    i = mcl_ocl_arg_tensor(be, k, i, a->gin[0]);
    i = mcl_ocl_arg_long(be, k, i, n);
    return mcl_ocl_launch(be, k, i, n, what(wb, sizeof wb, op, 1, "sum_last_bwd", x));
}

mcl_status mcl_ocl_sum_last_fwd(mcl_backend *be, const mcl_op_args *a)
{
    return rows_reduce(be, a, "sum_last", 0);
}

mcl_status mcl_ocl_sum_last_bwd(mcl_backend *be, const mcl_op_args *a)
{
    return rows_reduce_bwd(be, a, "sum_last", 0);
}

mcl_status mcl_ocl_mean_last_fwd(mcl_backend *be, const mcl_op_args *a)
{
    return rows_reduce(be, a, "mean_last", 1);
}

mcl_status mcl_ocl_mean_last_bwd(mcl_backend *be, const mcl_op_args *a)
{
    return rows_reduce_bwd(be, a, "mean_last", 1);
}
