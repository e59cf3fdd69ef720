/* norm.c — OpenCL host glue of layer normalization over the last dim.
 * Kernels: kernels/norm.cl; equations and semantics: src/ref/norm.c.
 *
 *   in[0] x [..,N] (R rows), in[1] gamma [N], in[2] beta [N]; p.f[0] = eps
 *   out[0] y [..,N], out[1] mean [R], out[2] rstd [R]   (only y is differentiable)
 *
 * Forward and the input gradient run one work-group per row; the gamma/beta gradients one
 * work-item per column looping over the rows in order (deterministic). Backward ACCUMULATES
 * into the non-NULL gin[k]; when the input's and a parameter's gradients are both wanted, the
 * two kernels' work runs as one launch (layer_norm_bwd_all: the row groups, then the column
 * groups; the same bits).
 */
#include "ocl.h"

/* "layer_norm forward (kernel layer_norm_fwd, x [13,7])" */
static const char *what(char *buf, size_t len, int bwd, const char *kname, const mcl_tensor *x)
{
    return mcl_ocl_what_op(buf, len, "layer_norm", bwd ? "backward" : "forward", kname, "x", x);
}

/* layer_norm:
 *   mean[r] = (1/N) sum_j x[r, j];  var[r] = (1/N) sum_j (x[r, j] - mean[r])^2  (biased)
 *   rstd[r] = 1 / sqrt(var[r] + eps);  y[r, j] = (x[r, j] - mean[r]) * rstd[r] * gamma[j] + beta[j] */
mcl_status mcl_ocl_layer_norm_fwd(mcl_backend *be, const mcl_op_args *a)
{
    const mcl_tensor *x = a->in[0];
    const int64_t R = mcl_ocl_rows(x), N = mcl_ocl_cols(x);
    size_t wg;
    char wb[160];
    cl_kernel k = mcl_ocl_kernel(be, "layer_norm_fwd", &wg);
    if (!k) return mcl_ocl_recorded(be);
    const size_t W = mcl_ocl_row_wg(wg, N);
    int i = mcl_ocl_arg_tensor(be, k, 0, x);
    i = mcl_ocl_arg_tensor(be, k, i, a->in[1]);
    i = mcl_ocl_arg_tensor(be, k, i, a->in[2]);
    i = mcl_ocl_arg_tensor(be, k, i, a->out[0]);
    i = mcl_ocl_arg_tensor(be, k, i, a->out[1]);
    i = mcl_ocl_arg_tensor(be, k, i, a->out[2]);
    i = mcl_ocl_arg_long(be, k, i, N);
    i = mcl_ocl_arg_float(be, k, i, a->p.f[0]);
    /* __local: W float4 = 16·W bytes (4 KiB at W = 256) */
    i = mcl_ocl_arg_local(be, k, i, W * 4 * sizeof(float));
    return mcl_ocl_launch_groups(be, k, i, (size_t)R, W,
                                 what(wb, sizeof wb, 0, "layer_norm_fwd", x));
}

/* The gamma/beta gradient arguments of layer_norm_bwd_gb/_all: ggamma [N], gbeta [N], R, N,
 * the two want flags. A NULL gradient is passed as the other one, with its want flag 0
 * (never written); returns the next argument index. */
static int gb_args(mcl_backend *be, cl_kernel k, int i, const mcl_op_args *a, int64_t R, int64_t N)
{
    const mcl_tensor *gg = a->gin[1] ? a->gin[1] : a->gin[2];
    const mcl_tensor *gb = a->gin[2] ? a->gin[2] : a->gin[1];
    i = mcl_ocl_arg_tensor(be, k, i, gg);
    i = mcl_ocl_arg_tensor(be, k, i, gb);
    i = mcl_ocl_arg_long(be, k, i, R);
    i = mcl_ocl_arg_long(be, k, i, N);
    i = mcl_ocl_arg_long(be, k, i, a->gin[1] != NULL);
    return mcl_ocl_arg_long(be, k, i, a->gin[2] != NULL);
}

/* backward, with dxhat_j = gout[r, j] * gamma[j] and xhat from the saved mean and rstd:
 *   gx[r, j]  += rstd[r] * (dxhat_j - (1/N) sum_k dxhat_k - xhat_j * (1/N) sum_k dxhat_k xhat_k)
 *   ggamma[j] += sum_r gout[r, j] * xhat[r, j]
 *   gbeta[j]  += sum_r gout[r, j] */
mcl_status mcl_ocl_layer_norm_bwd(mcl_backend *be, const mcl_op_args *a)
{
    const mcl_tensor *x = a->in[0];
    const int64_t R = mcl_ocl_rows(x), N = mcl_ocl_cols(x);
    char wb[160];
    mcl_status s;
    if (a->gin[0] && (a->gin[1] || a->gin[2])) { /* all in one launch: layer_norm_bwd_all */
        size_t wg;
        cl_kernel k = mcl_ocl_kernel(be, "layer_norm_bwd_all", &wg);
        if (!k) return mcl_ocl_recorded(be);
        const size_t W = mcl_ocl_row_wg(wg, N);
        int i = mcl_ocl_arg_norm_dx(be, k, 0, a);
        i = gb_args(be, k, i, a, R, N);
        i = mcl_ocl_arg_local(be, k, i, W * 4 * sizeof(float));
        /* R row groups, then the column groups of W columns each */
        const size_t groups = (size_t)R + ((size_t)N + W - 1) / W;
        return mcl_ocl_launch_groups(be, k, i, groups, W,
                                     what(wb, sizeof wb, 1, "layer_norm_bwd_all", x));
    }
    if (a->gin[0]) {
        size_t wg;
        cl_kernel k = mcl_ocl_kernel(be, "layer_norm_bwd_dx", &wg);
        if (!k) return mcl_ocl_recorded(be);
        const size_t W = mcl_ocl_row_wg(wg, N);
        int i = mcl_ocl_arg_norm_dx(be, k, 0, a);
        i = mcl_ocl_arg_long(be, k, i, N);
        /* __local: W float4 = 16·W bytes (4 KiB at W = 256) */
        i = mcl_ocl_arg_local(be, k, i, W * 4 * sizeof(float));
        s = mcl_ocl_launch_groups(be, k, i, (size_t)R, W,
                                  what(wb, sizeof wb, 1, "layer_norm_bwd_dx", x));
        if (s != MCL_OK) return s;
    }
    if (a->gin[1] || a->gin[2]) {
        cl_kernel k = mcl_ocl_kernel(be, "layer_norm_bwd_gb", NULL);
        if (!k) return mcl_ocl_recorded(be);
        int i = mcl_ocl_arg_tensor(be, k, 0, x);
        i = mcl_ocl_arg_tensor(be, k, i, a->out[1]);
        i = mcl_ocl_arg_tensor(be, k, i, a->out[2]);
        i = mcl_ocl_arg_tensor(be, k, i, a->gout[0]);
        i = gb_args(be, k, i, a, R, N);
        s = mcl_ocl_launch(be, k, i, N, what(wb, sizeof wb, 1, "layer_norm_bwd_gb", x));
        if (s != MCL_OK) return s;
    }
    return MCL_OK;
}
