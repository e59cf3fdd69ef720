/* loss.c — OpenCL host glue of cross_entropy (softmax + negative log-likelihood, fused).
 * Kernels: kernels/loss.cl; equations and semantics: src/ref/loss.c.
 *
 *   in[0] logits [R,C], in[1] targets [R] (class index as float, < 0 = ignored row)
 *   out[0] loss [1] (mean over counted rows, 0 if none), out[1] probs [R,C] (every row)
 *
 * Forward: one work-group per row (one work-item per row when C <= CE_SHORT_ROW) writes
 * probs and the row's loss into the backend's scratch buffer, then one group adds the R row losses in order and divides by the count. Backward:
 * one group computes gout / count into the scratch buffer, then one work-item per logit
 * ACCUMULATES into gin[0] (skipped when NULL). Nothing is read back to the host.
 */
#include "ocl.h"

/* Rows of at most this many classes take one work-item each in the forward's first pass
 * (cross_entropy_rows_short), longer ones a work-group (a fixed constant: the summation order
 * depends only on the shape). */
#define CE_SHORT_ROW 32

/* "cross_entropy forward (kernel cross_entropy_rows, logits [13,7])" */
static const char *what(char *buf, size_t len, int bwd, const char *kname, const mcl_tensor *x)
{
    return mcl_ocl_what_op(buf, len, "cross_entropy", bwd ? "backward" : "forward", kname,
                           "logits", x);
}

/* cross_entropy:
 *   lse_r = m_r + log sum_c exp(logits[r, c] - m_r),  m_r = max_c logits[r, c]
 *   probs[r, c] = exp(logits[r, c] - lse_r)
 *   loss = (1/count) sum_{r counted} (lse_r - logits[r, target_r])    (0 if count == 0) */
mcl_status mcl_ocl_cross_entropy_fwd(mcl_backend *be, const mcl_op_args *a)
{
    const mcl_tensor *x = a->in[0], *t = a->in[1];
    const int64_t R = x->shape[0], C = x->shape[1];
    char wb[160];
    size_t wg1, wg2;
    cl_kernel k1 = mcl_ocl_kernel(be, "cross_entropy_rows", &wg1);
    cl_kernel k2 = k1 ? mcl_ocl_kernel(be, "cross_entropy_loss", &wg2) : NULL;
    if (!k1 || !k2) return mcl_ocl_recorded(be);
    cl_mem part = mcl_ocl_scratch(be, (size_t)R * 2 * sizeof(float));
    if (!part) return mcl_ocl_recorded(be);

    mcl_status s;
    if (C <= CE_SHORT_ROW) { /* one work-item per row */
        cl_kernel ks = mcl_ocl_kernel(be, "cross_entropy_rows_short", NULL);
        int i = ks ? 0 : -1;
        i = mcl_ocl_arg_tensor(be, ks, i, x);
        i = mcl_ocl_arg_tensor(be, ks, i, t);
        i = mcl_ocl_arg_tensor(be, ks, i, a->out[1]);
        i = mcl_ocl_arg_long(be, ks, i, R);
        i = mcl_ocl_arg_long(be, ks, i, C);
        i = mcl_ocl_arg_mem(be, ks, i, part);
        s = mcl_ocl_launch(be, ks, i, R, what(wb, sizeof wb, 0, "cross_entropy_rows_short", x));
    } else {                 /* one work-group per row */
        const size_t W1 = mcl_ocl_row_wg(wg1, C);
        int i = mcl_ocl_arg_tensor(be, k1, 0, x);
        i = mcl_ocl_arg_tensor(be, k1, i, t);
        i = mcl_ocl_arg_tensor(be, k1, i, a->out[1]);
        i = mcl_ocl_arg_long(be, k1, i, C);
        i = mcl_ocl_arg_mem(be, k1, i, part);
        /* __local: W1 float2 = 8·W1 bytes (2 KiB at 256) */
        i = mcl_ocl_arg_local(be, k1, i, W1 * 2 * sizeof(float));
        s = mcl_ocl_launch_groups(be, k1, i, (size_t)R, W1,
                                  what(wb, sizeof wb, 0, "cross_entropy_rows", x));
    }
    if (s != MCL_OK) return s;

    const size_t W2 = mcl_ocl_reduce_wg(wg2);
    int i = mcl_ocl_arg_tensor(be, k2, 0, t);
    i = mcl_ocl_arg_long(be, k2, i, R);
    i = mcl_ocl_arg_long(be, k2, i, C);
    i = mcl_ocl_arg_mem(be, k2, i, part);
    i = mcl_ocl_arg_tensor(be, k2, i, a->out[0]);
    /* __local: W2 float2 = 8·W2 bytes (2 KiB at 256) */
    i = mcl_ocl_arg_local(be, k2, i, W2 * 2 * sizeof(float));
    /* __local: W2 longs = 8·W2 bytes (2 KiB at 256) */
    i = mcl_ocl_arg_local(be, k2, i, W2 * sizeof(cl_long));
    return mcl_ocl_launch_groups(be, k2, i, 1, W2, what(wb, sizeof wb, 0, "cross_entropy_loss", x));
}

/* backward (only logits get a gradient):
 *   glogits[r, c] += gout[0] * (probs[r, c] - [c == target_r]) / count   for counted rows r
 *   (ignored rows, and every row when count == 0, get nothing) */
mcl_status mcl_ocl_cross_entropy_bwd(mcl_backend *be, const mcl_op_args *a)
{
    if (!a->gin[0]) return MCL_OK;
    const mcl_tensor *x = a->in[0], *t = a->in[1];
    const int64_t R = x->shape[0], C = x->shape[1];
    char wb[160];
    size_t wg1;
    cl_kernel k1 = mcl_ocl_kernel(be, "cross_entropy_bwd_scale", &wg1);
    cl_kernel k2 = k1 ? mcl_ocl_kernel(be, "cross_entropy_bwd", NULL) : NULL;
    if (!k1 || !k2) return mcl_ocl_recorded(be);
    cl_mem scale = mcl_ocl_scratch(be, sizeof(float));
    if (!scale) return mcl_ocl_recorded(be);

    const size_t W1 = mcl_ocl_reduce_wg(wg1);
    int i = mcl_ocl_arg_tensor(be, k1, 0, t);
    i = mcl_ocl_arg_long(be, k1, i, R);
    i = mcl_ocl_arg_long(be, k1, i, C);
    i = mcl_ocl_arg_tensor(be, k1, i, a->gout[0]);
    i = mcl_ocl_arg_mem(be, k1, i, scale);
    /* __local: W1 longs = 8·W1 bytes (2 KiB at 256) */
    i = mcl_ocl_arg_local(be, k1, i, W1 * sizeof(cl_long));
    mcl_status s = mcl_ocl_launch_groups(be, k1, i, 1, W1,
                                         what(wb, sizeof wb, 1, "cross_entropy_bwd_scale", x));
    if (s != MCL_OK) return s;

    i = mcl_ocl_arg_tensor(be, k2, 0, t);
    i = mcl_ocl_arg_tensor(be, k2, i, a->out[1]);
    i = mcl_ocl_arg_mem(be, k2, i, scale);
    i = mcl_ocl_arg_tensor(be, k2, i, a->gin[0]);
    i = mcl_ocl_arg_long(be, k2, i, C);
    i = mcl_ocl_arg_long(be, k2, i, R * C);
    return mcl_ocl_launch(be, k2, i, R * C, what(wb, sizeof wb, 1, "cross_entropy_bwd", x));
}
