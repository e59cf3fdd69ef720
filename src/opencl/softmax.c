/* softmax.c — OpenCL host glue of softmax and log_softmax over the last dim.
 * Kernels: kernels/softmax.cl; equations and semantics: src/ref/softmax.c.
 *
 * Every kernel runs one work-group per row of the [..,N] tensor (R rows), with a
 * power-of-two group size from the kernel's limit (smaller for short rows). Backward
 * ACCUMULATES into gin[0] (skipped when NULL) and uses the saved output y = out[0].
 */
#include "ocl.h"

/* Launch `kname` over the rows of a->in[0]:
 *   forward  (bwd = 0): kname(x, y, N, local)
 *   backward (bwd = 1): kname(y, gout, gx, N, local) */
static mcl_status run_rows(mcl_backend *be, const mcl_op_args *a, const char *op, int bwd,
                           const char *kname)
{
    const mcl_tensor *x = a->in[0];
    const int64_t R = mcl_ocl_rows(x), N = mcl_ocl_cols(x);
    size_t wg;
    cl_kernel k = mcl_ocl_kernel(be, kname, &wg);
    if (!k) return mcl_ocl_recorded(be);
    const size_t W = mcl_ocl_row_wg(wg, N);
    int i;
    if (!bwd) {
        i = mcl_ocl_arg_tensor(be, k, 0, x);
        i = mcl_ocl_arg_tensor(be, k, i, a->out[0]);
    } else {
        i = mcl_ocl_arg_tensor(be, k, 0, a->out[0]);
        i = mcl_ocl_arg_tensor(be, k, i, a->gout[0]);
        i = mcl_ocl_arg_tensor(be, k, i, a->gin[0]);
    }
    i = mcl_ocl_arg_long(be, k, i, N);
    /* __local: W float2 = 8·W bytes (2 KiB at W = 256) */
    i = mcl_ocl_arg_local(be, k, i, W * 2 * sizeof(float));
    char wb[160];
    mcl_ocl_what_op(wb, sizeof wb, op, bwd ? "backward" : "forward", kname, "x", x);
    return mcl_ocl_launch_groups(be, k, i, (size_t)R, W, wb);
}

/* softmax: y[r, j] = exp(a[r, j] - m_r) / sum_k exp(a[r, k] - m_r),  m_r = max_k a[r, k]
 * backward: ga[r, j] += y[r, j] * (gout[r, j] - sum_k gout[r, k] * y[r, k]) */
mcl_status mcl_ocl_softmax_fwd(mcl_backend *be, const mcl_op_args *a)
{
    return run_rows(be, a, "softmax", 0, "softmax_fwd");
}

mcl_status mcl_ocl_softmax_bwd(mcl_backend *be, const mcl_op_args *a)
{
    if (!a->gin[0]) return MCL_OK;
    return run_rows(be, a, "softmax", 1, "softmax_bwd");
}

/* log_softmax: y[r, j] = a[r, j] - m_r - log sum_k exp(a[r, k] - m_r)
 * backward: ga[r, j] += gout[r, j] - exp(y[r, j]) * sum_k gout[r, k] */
mcl_status mcl_ocl_log_softmax_fwd(mcl_backend *be, const mcl_op_args *a)
{
    return run_rows(be, a, "log_softmax", 0, "log_softmax_fwd");
}

mcl_status mcl_ocl_log_softmax_bwd(mcl_backend *be, const mcl_op_args *a)
{
    if (!a->gin[0]) return MCL_OK;
    return run_rows(be, a, "log_softmax", 1, "log_softmax_bwd");
}
