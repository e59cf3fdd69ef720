/* activation.c — OpenCL host glue for relu, leaky_relu, elu, sigmoid, tanh, gelu, exp, log,
 * and bias_gelu (at the end: its own kernels over (row chunk, column) items).
 *
 * Kernels: kernels/activation.cl, one work-item per element, all with the same signature:
 *   <op>_fwd(a, y, f0, n)             y = f(a)
 *   <op>_bwd(a, y, gout, ga, f0, acc, n)   ga += gout * f'(a)   (from a or from the saved y;
 *                                      stored instead when ga is fresh: acc = 0)
 * so each op is a one-line call here. Equations and shapes as src/ref/activation.c:
 *   a [n] -> y [n];  backward: gout [n], gin[0] [n] (skipped when NULL), accumulated.
 * f0 = p.f[0]: the negative slope of leaky_relu, alpha of elu, unused by the others.
 */
#include <stdio.h>

#include "ocl.h"

/* y = f(a) with the kernel `kname`:  a [n] -> y [n] */
static mcl_status act_fwd(mcl_backend *be, const mcl_op_args *a, const char *kname)
{
    return mcl_ocl_launch_unary_f(be, kname, a->in[0], a->out[0], a->p.f[0], NULL);
}

/* ga += gout * f'(a) with the kernel `kname`:  a [n], y [n], gout [n] -> ga [n] (or NULL) */
static mcl_status act_bwd(mcl_backend *be, const mcl_op_args *a, const char *kname)
{
    if (!a->gin[0]) return MCL_OK;
    char what[128];
    mcl_status s;
    const int acc = !mcl_ocl_grad_fresh(be, a->gin[0], &s);
    if (s != MCL_OK) return s;
    const int64_t n = mcl_tensor_numel(a->in[0]);
    cl_kernel k = mcl_ocl_kernel(be, kname, NULL);
    int i = k ? 0 : -1;
    i = mcl_ocl_arg_tensor(be, k, i, a->in[0]);
    i = mcl_ocl_arg_tensor(be, k, i, a->out[0]);
    i = mcl_ocl_arg_tensor(be, k, i, a->gout[0]);
    i = mcl_ocl_arg_tensor(be, k, i, a->gin[0]);
    i = mcl_ocl_arg_float(be, k, i, a->p.f[0]);
    i = mcl_ocl_arg_int(be, k, i, acc);
    i = mcl_ocl_arg_long(be, k, i, n);
    return mcl_ocl_launch(be, k, i, n, mcl_ocl_what_on(what, sizeof what, kname, a->in[0]));
}

/* relu: y = max(a, 0);  ga += gout * (a > 0 ? 1 : 0) */
mcl_status mcl_ocl_relu_fwd(mcl_backend *be, const mcl_op_args *a)
{
    return act_fwd(be, a, "relu_fwd");
}

mcl_status mcl_ocl_relu_bwd(mcl_backend *be, const mcl_op_args *a)
{
    return act_bwd(be, a, "relu_bwd");
}

/* leaky_relu: y = a > 0 ? a : f0 * a;  ga += gout * (a > 0 ? 1 : f0) */
mcl_status mcl_ocl_leaky_relu_fwd(mcl_backend *be, const mcl_op_args *a)
{
    return act_fwd(be, a, "leaky_relu_fwd");
}

mcl_status mcl_ocl_leaky_relu_bwd(mcl_backend *be, const mcl_op_args *a)
{
    return act_bwd(be, a, "leaky_relu_bwd");
}

/* elu: y = a > 0 ? a : f0 * (exp(a) - 1);  ga += gout * (a > 0 ? 1 : f0 * exp(a)) */
mcl_status mcl_ocl_elu_fwd(mcl_backend *be, const mcl_op_args *a)
{
    return act_fwd(be, a, "elu_fwd");
}

mcl_status mcl_ocl_elu_bwd(mcl_backend *be, const mcl_op_args *a)
{
    return act_bwd(be, a, "elu_bwd");
}

/* sigmoid: y = 1 / (1 + exp(-a));  ga += gout * y * (1 - y) */
mcl_status mcl_ocl_sigmoid_fwd(mcl_backend *be, const mcl_op_args *a)
{
    return act_fwd(be, a, "sigmoid_fwd");
}

mcl_status mcl_ocl_sigmoid_bwd(mcl_backend *be, const mcl_op_args *a)
{
    return act_bwd(be, a, "sigmoid_bwd");
}

/* tanh: y = tanh(a);  ga += gout * (1 - y^2) */
mcl_status mcl_ocl_tanh_fwd(mcl_backend *be, const mcl_op_args *a)
{
    return act_fwd(be, a, "tanh_fwd");
}

mcl_status mcl_ocl_tanh_bwd(mcl_backend *be, const mcl_op_args *a)
{
    return act_bwd(be, a, "tanh_bwd");
}

/* gelu: y = a * Phi(a);  ga += gout * (Phi(a) + a * phi(a)) */
mcl_status mcl_ocl_gelu_fwd(mcl_backend *be, const mcl_op_args *a)
{
    return act_fwd(be, a, "gelu_fwd");
}

mcl_status mcl_ocl_gelu_bwd(mcl_backend *be, const mcl_op_args *a)
{
    return act_bwd(be, a, "gelu_bwd");
}

/* exp: y = exp(a);  ga += gout * y */
mcl_status mcl_ocl_exp_fwd(mcl_backend *be, const mcl_op_args *a)
{
    return act_fwd(be, a, "exp_fwd");
}

mcl_status mcl_ocl_exp_bwd(mcl_backend *be, const mcl_op_args *a)
{
    return act_bwd(be, a, "exp_bwd");
}

/* log: y = log(a);  ga += gout / a */
mcl_status mcl_ocl_log_fwd(mcl_backend *be, const mcl_op_args *a)
{
    return act_fwd(be, a, "log_fwd");
}

mcl_status mcl_ocl_log_bwd(mcl_backend *be, const mcl_op_args *a)
{
    return act_bwd(be, a, "log_bwd");
}

/* ------------------------------------------------------------------------------------ */
/* bias_gelu: y[r, j] = gelu(x[r, j] + b[j]);  x [..,N] (R rows of N), b [N] -> y [..,N]
 * backward: gt = gout * gelu'(x + b);  gx += gt;  gb[j] += sum_r gt[r, j]
 * (the floats of bias_add then gelu; the bias gradient in bias_add's chunks of
 * MCL_OCL_BIAS_ROWS rows and its pass 2, bias_add_bwd_sum) */

/* Rows per work-item of the forward and of the backward without gb (any value gives the same
 * bits) */
#define BIAS_GELU_ROWS 8

mcl_status mcl_ocl_bias_gelu_fwd(mcl_backend *be, const mcl_op_args *a)
{
    const mcl_tensor *t[3] = {a->in[0], a->in[1], a->out[0]};
    return mcl_ocl_launch_row_chunks(be, "bias_gelu_fwd", t, 3, -1, BIAS_GELU_ROWS);
}

/* gx += gt alone (one launch):  x [R, N], b [N], gout [R, N] -> gx [R, N] */
static mcl_status bias_gelu_gx(mcl_backend *be, const mcl_op_args *a)
{
    mcl_status s;
    const int acc = !mcl_ocl_grad_fresh(be, a->gin[0], &s);
    if (s != MCL_OK) return s;
    const mcl_tensor *t[4] = {a->in[0], a->in[1], a->gout[0], a->gin[0]};
    return mcl_ocl_launch_row_chunks(be, "bias_gelu_bwd_x", t, 4, acc, BIAS_GELU_ROWS);
}

mcl_status mcl_ocl_bias_gelu_bwd(mcl_backend *be, const mcl_op_args *a)
{
    const mcl_tensor *x = a->in[0], *gx = a->gin[0], *gb = a->gin[1];
    if (!gb) return gx ? bias_gelu_gx(be, a) : MCL_OK;
    const mcl_tensor *in[3] = {x, a->in[1], a->gout[0]}; /* bias_gelu_bwd_part's inputs */
    return mcl_ocl_bias_grad(be, "bias_gelu_bwd_part", in, 3, NULL, NULL, "x", gb, gx);
}
