/* elementwise.c — OpenCL host glue for add, sub, mul, scale, bias_add, copy.
 *
 * Kernels: kernels/elementwise.cl (one work-item per element). Same contract and equations
 * as src/ref/elementwise.c; backward ACCUMULATES into the non-NULL gin[k]. When gin[0] and
 * gin[1] are the same tensor (add(a, a), mul(a, a)), each input's contribution is its own
 * kernel launch; the queue is in order, so the second sees the first's result.
 *
 * Every function returns MCL_OK or the status of the first failure, whose message (kernel,
 * shapes, OpenCL error) the helpers have recorded in the context.
 */
#include <stdio.h>

#include "ocl.h"

/* Rows of a [.., N] tensor chunked per work-item in pass 1 of the bias gradient. A fixed
 * constant (not a device property), so the summation order depends only on the shapes. */
#define BIAS_ROWS 64

/* Status after an argument setter returned idx < 0 (the error is already recorded). */
static mcl_status arg_failed(mcl_backend *be)
{
    mcl_status s = mcl_ctx_status(be->ctx);
    return s != MCL_OK ? s : MCL_ERR_BACKEND;
}

/* Launch the 1-D kernel k over n items once its arguments were set (idx = result of the last
 * setter). `what` names the kernel and shapes for the error message. */
static mcl_status launch(mcl_backend *be, cl_kernel k, int idx, int64_t n, const char *what)
{
    if (idx < 0) return arg_failed(be);
    return mcl_ocl_run1d(be, k, (size_t)n, 0, what);
}

/* "kernel on [shape]" into buf. */
static const char *what1(char *buf, size_t len, const char *kname, const mcl_tensor *t)
{
    char sb[64];
    snprintf(buf, len, "%s on %s", kname, mcl_shape_str(t, sb, sizeof sb));
    return buf;
}

/* out = k(x, y): the binary forward kernels add_fwd, sub_fwd, mul_fwd.
 *   x [n], y [n], out [n] */
static mcl_status binary_fwd(mcl_backend *be, const mcl_op_args *a, const char *kname)
{
    char what[128];
    const int64_t n = mcl_tensor_numel(a->out[0]);
    cl_kernel k = mcl_ocl_kernel(be, kname, NULL);
    int i = k ? 0 : -1;
    i = mcl_ocl_arg_tensor(be, k, i, a->in[0]);
    i = mcl_ocl_arg_tensor(be, k, i, a->in[1]);
    i = mcl_ocl_arg_tensor(be, k, i, a->out[0]);
    i = mcl_ocl_arg_long(be, k, i, n);
    return launch(be, k, i, n, what1(what, sizeof what, kname, a->out[0]));
}

/* gx += gout through the kernel kname(g, gx, n) (add_bwd, bias_add_bwd_x, copy_bwd).
 *   g [n], gx [n] */
static mcl_status acc_grad(mcl_backend *be, const char *kname, const mcl_tensor *g,
                           const mcl_tensor *gx)
{
    char what[128];
    const int64_t n = mcl_tensor_numel(gx);
    cl_kernel k = mcl_ocl_kernel(be, kname, NULL);
    int i = k ? 0 : -1;
    i = mcl_ocl_arg_tensor(be, k, i, g);
    i = mcl_ocl_arg_tensor(be, k, i, gx);
    i = mcl_ocl_arg_long(be, k, i, n);
    return launch(be, k, i, n, what1(what, sizeof what, kname, gx));
}

/* ------------------------------------------------------------------------------------ */
/* add: out = a + b;  a [n], b [n] -> out [n]
 * backward: ga += gout, gb += gout */

mcl_status mcl_ocl_add_fwd(mcl_backend *be, const mcl_op_args *a)
{
    return binary_fwd(be, a, "add_fwd");
}

mcl_status mcl_ocl_add_bwd(mcl_backend *be, const mcl_op_args *a)
{
    for (int k = 0; k < 2; k++) {
        if (!a->gin[k]) continue;
        mcl_status s = acc_grad(be, "add_bwd", a->gout[0], a->gin[k]);
        if (s != MCL_OK) return s;
    }
    return MCL_OK;
}

/* ------------------------------------------------------------------------------------ */
/* sub: out = a - b;  a [n], b [n] -> out [n]
 * backward: ga += gout, gb -= gout */

mcl_status mcl_ocl_sub_fwd(mcl_backend *be, const mcl_op_args *a)
{
    return binary_fwd(be, a, "sub_fwd");
}

mcl_status mcl_ocl_sub_bwd(mcl_backend *be, const mcl_op_args *a)
{
    char what[128];
    for (int s_k = 0; s_k < 2; s_k++) {
        const mcl_tensor *gx = a->gin[s_k];
        if (!gx) continue;
        const int64_t n = mcl_tensor_numel(gx);
        cl_kernel k = mcl_ocl_kernel(be, "sub_bwd", NULL);
        int i = k ? 0 : -1;
        i = mcl_ocl_arg_tensor(be, k, i, a->gout[0]);
        i = mcl_ocl_arg_tensor(be, k, i, gx);
        i = mcl_ocl_arg_long(be, k, i, s_k == 0 ? 1 : -1);
        i = mcl_ocl_arg_long(be, k, i, n);
        mcl_status s = launch(be, k, i, n, what1(what, sizeof what, "sub_bwd", gx));
        if (s != MCL_OK) return s;
    }
    return MCL_OK;
}

/* ------------------------------------------------------------------------------------ */
/* mul: out = a * b;  a [n], b [n] -> out [n]
 * backward: ga += gout * b, gb += gout * a
 * (mul(a, a) with gin[0] == gin[1]: two launches, ga += gout * a twice) */

mcl_status mcl_ocl_mul_fwd(mcl_backend *be, const mcl_op_args *a)
{
    return binary_fwd(be, a, "mul_fwd");
}

mcl_status mcl_ocl_mul_bwd(mcl_backend *be, const mcl_op_args *a)
{
    char what[128];
    for (int s_k = 0; s_k < 2; s_k++) {
        const mcl_tensor *gx = a->gin[s_k];
        if (!gx) continue;
        const int64_t n = mcl_tensor_numel(gx);
        cl_kernel k = mcl_ocl_kernel(be, "mul_bwd", NULL);
        int i = k ? 0 : -1;
        i = mcl_ocl_arg_tensor(be, k, i, a->gout[0]);
        i = mcl_ocl_arg_tensor(be, k, i, a->in[1 - s_k]); /* the other factor */
        i = mcl_ocl_arg_tensor(be, k, i, gx);
        i = mcl_ocl_arg_long(be, k, i, n);
        mcl_status s = launch(be, k, i, n, what1(what, sizeof what, "mul_bwd", gx));
        if (s != MCL_OK) return s;
    }
    return MCL_OK;
}

/* ------------------------------------------------------------------------------------ */
/* scale: out = f0 * a;  a [n] -> out [n]
 * backward: ga += f0 * gout */

mcl_status mcl_ocl_scale_fwd(mcl_backend *be, const mcl_op_args *a)
{
    char what[128];
    const int64_t n = mcl_tensor_numel(a->out[0]);
    cl_kernel k = mcl_ocl_kernel(be, "scale_fwd", NULL);
    int i = k ? 0 : -1;
    i = mcl_ocl_arg_tensor(be, k, i, a->in[0]);
    i = mcl_ocl_arg_tensor(be, k, i, a->out[0]);
    i = mcl_ocl_arg_float(be, k, i, a->p.f[0]);
    i = mcl_ocl_arg_long(be, k, i, n);
    return launch(be, k, i, n, what1(what, sizeof what, "scale_fwd", a->out[0]));
}

mcl_status mcl_ocl_scale_bwd(mcl_backend *be, const mcl_op_args *a)
{
    if (!a->gin[0]) return MCL_OK;
    char what[128];
    const int64_t n = mcl_tensor_numel(a->gin[0]);
    cl_kernel k = mcl_ocl_kernel(be, "scale_bwd", NULL);
    int i = k ? 0 : -1;
    i = mcl_ocl_arg_tensor(be, k, i, a->gout[0]);
    i = mcl_ocl_arg_tensor(be, k, i, a->gin[0]);
    i = mcl_ocl_arg_float(be, k, i, a->p.f[0]);
    i = mcl_ocl_arg_long(be, k, i, n);
    return launch(be, k, i, n, what1(what, sizeof what, "scale_bwd", a->gin[0]));
}

/* ------------------------------------------------------------------------------------ */
/* bias_add: out[r, j] = x[r, j] + b[j]
 *   x [..,N] (R rows of N), b [N] -> out [..,N]
 * backward: gx[r, j] += gout[r, j]
 *           gb[j]    += sum_r gout[r, j]   (float-float sum over rows in increasing order,
 *                                           in chunks of BIAS_ROWS; see elementwise.cl) */

mcl_status mcl_ocl_bias_add_fwd(mcl_backend *be, const mcl_op_args *a)
{
    char what[128];
    const mcl_tensor *x = a->in[0];
    const int64_t N = x->shape[x->ndim - 1], n = mcl_tensor_numel(x);
    cl_kernel k = mcl_ocl_kernel(be, "bias_add_fwd", NULL);
    int i = k ? 0 : -1;
    i = mcl_ocl_arg_tensor(be, k, i, x);
    i = mcl_ocl_arg_tensor(be, k, i, a->in[1]);
    i = mcl_ocl_arg_tensor(be, k, i, a->out[0]);
    i = mcl_ocl_arg_long(be, k, i, N);
    i = mcl_ocl_arg_long(be, k, i, n);
    return launch(be, k, i, n, what1(what, sizeof what, "bias_add_fwd", x));
}

/* Set kernel argument idx to the plain buffer m (the scratch of the bias gradient). */
static int arg_mem(mcl_backend *be, cl_kernel k, int idx, cl_mem m)
{
    if (idx < 0) return -1;
    cl_int err = clSetKernelArg(k, (cl_uint)idx, sizeof m, &m);
    if (err != CL_SUCCESS) {
        mcl_ocl_fail(be, err, "clSetKernelArg(scratch) for bias_add_bwd");
        return -1;
    }
    return idx + 1;
}

/* gb[j] += sum_r gout[r, j]: pass 1 writes one (hi, lo) pair per (chunk, column) into the
 * backend scratch, pass 2 adds the chunks per column in order.
 *   gout [R, N] (as rows), gb [N] */
static mcl_status bias_grad(mcl_backend *be, const mcl_tensor *g, const mcl_tensor *gb)
{
    char what[160], sb[64];
    const int64_t N = g->shape[g->ndim - 1], R = mcl_tensor_numel(g) / N;
    const int64_t chunks = (R + BIAS_ROWS - 1) / BIAS_ROWS;
    mcl_shape_str(g, sb, sizeof sb);
    cl_mem part = mcl_ocl_scratch(be, (size_t)(chunks * N) * 2 * sizeof(float));
    if (!part) return arg_failed(be);

    cl_kernel k = mcl_ocl_kernel(be, "bias_add_bwd_part", NULL);
    int i = k ? 0 : -1;
    i = mcl_ocl_arg_tensor(be, k, i, g);
    i = arg_mem(be, k, i, part);
    i = mcl_ocl_arg_long(be, k, i, R);
    i = mcl_ocl_arg_long(be, k, i, N);
    i = mcl_ocl_arg_long(be, k, i, BIAS_ROWS);
    i = mcl_ocl_arg_long(be, k, i, chunks * N);
    snprintf(what, sizeof what, "bias_add_bwd_part on gout %s (%lld chunks)", sb,
             (long long)chunks);
    mcl_status s = launch(be, k, i, chunks * N, what);
    if (s != MCL_OK) return s;

    k = mcl_ocl_kernel(be, "bias_add_bwd_sum", NULL);
    i = k ? 0 : -1;
    i = arg_mem(be, k, i, part);
    i = mcl_ocl_arg_tensor(be, k, i, gb);
    i = mcl_ocl_arg_long(be, k, i, chunks);
    i = mcl_ocl_arg_long(be, k, i, N);
    snprintf(what, sizeof what, "bias_add_bwd_sum on gout %s (%lld chunks)", sb, (long long)chunks);
    return launch(be, k, i, N, what);
}

mcl_status mcl_ocl_bias_add_bwd(mcl_backend *be, const mcl_op_args *a)
{
    if (a->gin[0]) {
        mcl_status s = acc_grad(be, "bias_add_bwd_x", a->gout[0], a->gin[0]);
        if (s != MCL_OK) return s;
    }
    if (a->gin[1]) return bias_grad(be, a->gout[0], a->gin[1]);
    return MCL_OK;
}

/* ------------------------------------------------------------------------------------ */
/* copy: out = a;  a [n] -> out [n]
 * backward: ga += gout */

mcl_status mcl_ocl_copy_fwd(mcl_backend *be, const mcl_op_args *a)
{
    char what[128];
    const int64_t n = mcl_tensor_numel(a->out[0]);
    cl_kernel k = mcl_ocl_kernel(be, "copy_fwd", NULL);
    int i = k ? 0 : -1;
    i = mcl_ocl_arg_tensor(be, k, i, a->in[0]);
    i = mcl_ocl_arg_tensor(be, k, i, a->out[0]);
    i = mcl_ocl_arg_long(be, k, i, n);
    return launch(be, k, i, n, what1(what, sizeof what, "copy_fwd", a->out[0]));
}

mcl_status mcl_ocl_copy_bwd(mcl_backend *be, const mcl_op_args *a)
{
    if (!a->gin[0]) return MCL_OK;
    return acc_grad(be, "copy_bwd", a->gout[0], a->gin[0]);
}
