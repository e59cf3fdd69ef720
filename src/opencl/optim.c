/* optim.c — OpenCL host glue of the optimizer updates: sgd_step, adam_step, clip_scale,
 * dyn_step.
 * Kernels: kernels/optim.cl; equations and semantics: src/ref/optim.c.
 *
 * These ops update their inputs IN PLACE, have no outputs and no backward. One work-item per
 * element. Adam's bias corrections are computed here on the host, in double and rounded to
 * float exactly as the reference does, and passed to the kernel, so the device needs no fp64.
 * Clipping reads the sum of squares on the device (no round trip to the host).
 */
#include <math.h>

#include "ocl.h"

/* "adam_step (kernel adam_step, param [13,7])"; the kernel has the op's name */
static const char *what(char *buf, size_t len, const char *op, const char *tname,
                        const mcl_tensor *x)
{
    return mcl_ocl_what_op(buf, len, op, NULL, op, tname, x);
}

/* SGD with momentum and L2 weight decay; lr = f0, momentum mu = f1, weight decay wd = f2:
 *   g = grad + wd * param;  mom = mu * mom + g;  param = param - lr * mom
 * With in[2] (mom) NULL: param = param - lr * g, and nothing else is written. */
mcl_status mcl_ocl_sgd_step_fwd(mcl_backend *be, const mcl_op_args *a)
{
    const mcl_tensor *p = a->in[0];
    const int64_t n = mcl_tensor_numel(p);
    const int has_mom = a->in[2] != NULL;
    char wb[160];
    cl_kernel k = mcl_ocl_kernel(be, "sgd_step", NULL);
    if (!k) return mcl_ocl_recorded(be);
    int i = mcl_ocl_arg_tensor(be, k, 0, p);
    i = mcl_ocl_arg_tensor(be, k, i, a->in[1]);
    i = mcl_ocl_arg_tensor(be, k, i, has_mom ? a->in[2] : p); /* never written without mom */
    i = mcl_ocl_arg_long(be, k, i, n);
    i = mcl_ocl_arg_float(be, k, i, a->p.f[0]);
    i = mcl_ocl_arg_float(be, k, i, a->p.f[1]);
    i = mcl_ocl_arg_float(be, k, i, a->p.f[2]);
    i = mcl_ocl_arg_long(be, k, i, has_mom);
    return mcl_ocl_launch(be, k, i, n, what(wb, sizeof wb, "sgd_step", "param", p));
}

/* Adam (i0 = 0) or AdamW (i0 = 1); lr = f0, b1 = f1, b2 = f2, eps = f3, wd = f4, step t = i1:
 *   c1 = (float)(1 / (1 - b1^t)), c2 = (float)(1 / (1 - b2^t))       (double, here)
 *   AdamW: param -= (lr * wd) * param, g = grad;   Adam: g = grad + wd * param
 *   m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2
 *   param -= (lr * m * c1) / (sqrt(v * c2) + eps)
 * Returns MCL_ERR_INVALID if t < 1 (the bias correction would divide by zero). */
mcl_status mcl_ocl_adam_step_fwd(mcl_backend *be, const mcl_op_args *a)
{
    const mcl_tensor *p = a->in[0];
    const int64_t n = mcl_tensor_numel(p);
    const int decoupled = a->p.i[0] == 1, rmsprop = a->p.i[0] == 2;
    const int64_t t = a->p.i[1];
    const float lr = a->p.f[0], b1 = a->p.f[1], b2 = a->p.f[2], eps = a->p.f[3];
    const float wd = a->p.f[4];
    if (t < 1)
        return mcl_ctx_set_error(be->ctx, MCL_ERR_INVALID, "adam_step: step %lld must be >= 1",
                                 (long long)t);

    /* the same expressions as src/ref/optim.c */
    const float c1 = rmsprop ? 1.0f : (float)(1.0 / (1.0 - pow((double)b1, (double)t)));
    const float c2 = rmsprop ? 1.0f : (float)(1.0 / (1.0 - pow((double)b2, (double)t)));
    const float omb1 = 1.0f - b1, omb2 = 1.0f - b2;
    const float lrwd = lr * wd;
    const float l2 = decoupled ? 0.0f : wd;

    char wb[160];
    cl_kernel k = mcl_ocl_kernel(be, "adam_step", NULL);
    if (!k) return mcl_ocl_recorded(be);
    int i = mcl_ocl_arg_tensor(be, k, 0, p);
    i = mcl_ocl_arg_tensor(be, k, i, a->in[1]);
    i = mcl_ocl_arg_tensor(be, k, i, a->in[2]);
    i = mcl_ocl_arg_tensor(be, k, i, a->in[3]);
    i = mcl_ocl_arg_long(be, k, i, n);
    i = mcl_ocl_arg_float(be, k, i, lr);
    i = mcl_ocl_arg_float(be, k, i, b1);
    i = mcl_ocl_arg_float(be, k, i, b2);
    i = mcl_ocl_arg_float(be, k, i, eps);
    i = mcl_ocl_arg_float(be, k, i, omb1);
    i = mcl_ocl_arg_float(be, k, i, omb2);
    i = mcl_ocl_arg_float(be, k, i, lrwd);
    i = mcl_ocl_arg_float(be, k, i, l2);
    i = mcl_ocl_arg_float(be, k, i, c1);
    i = mcl_ocl_arg_float(be, k, i, c2);
    i = mcl_ocl_arg_long(be, k, i, decoupled);
    return mcl_ocl_launch(be, k, i, n, what(wb, sizeof wb, "adam_step", "param", p));
}

/* Clipping by a global norm; f0 = max_norm, in[1] sq [1] = sum of squares of all the grads:
 *   s = max_norm / (sqrt(sq) + 1e-6);  grad *= s  only if s < 1  (NaN sq: left as is) */
mcl_status mcl_ocl_clip_scale_fwd(mcl_backend *be, const mcl_op_args *a)
{
    const mcl_tensor *g = a->in[0];
    const int64_t n = mcl_tensor_numel(g);
    char wb[160];
    cl_kernel k = mcl_ocl_kernel(be, "clip_scale", NULL);
    if (!k) return mcl_ocl_recorded(be);
    int i = mcl_ocl_arg_tensor(be, k, 0, g);
    i = mcl_ocl_arg_tensor(be, k, i, a->in[1]);
    i = mcl_ocl_arg_long(be, k, i, n);
    i = mcl_ocl_arg_float(be, k, i, a->p.f[0]);
    return mcl_ocl_launch(be, k, i, n, what(wb, sizeof wb, "clip_scale", "grad", g));
}

/* Dynamic evaluation's step; lr = f0, decay = f1 >= 0 (src/ref/optim.c):
 *   a = lr * grad;  param = (param - a) + decay * (w0 - param)   (decay > 0; else param - a) */
mcl_status mcl_ocl_dyn_step_fwd(mcl_backend *be, const mcl_op_args *a)
{
    const mcl_tensor *p = a->in[0];
    const int64_t n = mcl_tensor_numel(p);
    char wb[160];
    cl_kernel k = mcl_ocl_kernel(be, "dyn_step", NULL);
    if (!k) return mcl_ocl_recorded(be);
    int i = mcl_ocl_arg_tensor(be, k, 0, p);
    i = mcl_ocl_arg_tensor(be, k, i, a->in[1]);
    i = mcl_ocl_arg_tensor(be, k, i, a->in[2]);
    i = mcl_ocl_arg_long(be, k, i, n);
    i = mcl_ocl_arg_float(be, k, i, a->p.f[0]);
    i = mcl_ocl_arg_float(be, k, i, a->p.f[1]);
    return mcl_ocl_launch(be, k, i, n, what(wb, sizeof wb, "dyn_step", "param", p));
}
