/* dropout.c — OpenCL host glue for inverted dropout with a counter-based (Philox) mask.
 *
 * Kernels: kernels/dropout.cl (one work-item per element). Same contract and equations as
 * src/ref/dropout.c, and the same mask bits (rng.cl = rng.h):
 *   p = p.f[0] (0 <= p < 1), seed = p.u[0], stream = p.u[1], counter = p.u[2]
 *   keep_i = mcl_rng_uniform(seed, stream, counter + i) >= p
 *   scale  = 1 / (1 - p), computed here once in float exactly as the reference does, so the
 *            kernels multiply by the same float
 * p == 0 is an exact copy (no draws). relu first: p.i[1] = 1 (src/ref/dropout.c). Segments: p.i[0] = seg > 0 elements each, p.u[3] = the
 * stream step (see src/ref/dropout.c); seg = 0 is passed as n (one segment).
 */
#include <stdio.h>

#include "ocl.h"

/* The mask's arguments of dropout_fwd/_bwd and add_dropout_fwd: p = p.f[0], scale = 1/(1-p)
 * (1 at p = 0) and the Philox key words seed, stream, counter = p.u[0..2]; returns the next
 * argument index. */
static int mask_args(mcl_backend *be, cl_kernel k, int i, const mcl_op_args *a)
{
    const float p = a->p.f[0];
    const float scale = p == 0.0f ? 1.0f : 1.0f / (1.0f - p);
    i = mcl_ocl_arg_float(be, k, i, p);
    i = mcl_ocl_arg_float(be, k, i, scale);
    i = mcl_ocl_arg_ulong(be, k, i, a->p.u[0]);
    i = mcl_ocl_arg_ulong(be, k, i, a->p.u[1]);
    return mcl_ocl_arg_ulong(be, k, i, a->p.u[2]);
}

/* kname(src, dst, p, scale, seed, stream, counter, n, seg, step, relu[, x]) over the n elements
 * of src; the backward also gets the op's input x (relu first). */
static mcl_status dropout_launch(mcl_backend *be, const mcl_op_args *a, const char *kname,
                                 const mcl_tensor *src, const mcl_tensor *dst)
{
    const float p = a->p.f[0];
    const int64_t n = mcl_tensor_numel(src);
    char what[160], sb[64];
    cl_kernel k = mcl_ocl_kernel(be, kname, NULL);
    int i = k ? 0 : -1;
    i = mcl_ocl_arg_tensor(be, k, i, src);
    i = mcl_ocl_arg_tensor(be, k, i, dst);
    i = mask_args(be, k, i, a);
    i = mcl_ocl_arg_long(be, k, i, n);
    i = mcl_ocl_arg_long(be, k, i, a->p.i[0] > 0 ? a->p.i[0] : (n > 0 ? n : 1));
    i = mcl_ocl_arg_ulong(be, k, i, a->p.u[3]);
    i = mcl_ocl_arg_int(be, k, i, a->p.i[1] != 0);
    if (src != a->in[0]) i = mcl_ocl_arg_tensor(be, k, i, a->in[0]);
    snprintf(what, sizeof what, "%s on %s (p = %g)", kname, mcl_shape_str(src, sb, sizeof sb),
             (double)p);
    return mcl_ocl_launch(be, k, i, n, what);
}

/* Forward:  out_i = keep_i ? a_i * scale : 0
 * a [any] -> out [same as a] */
mcl_status mcl_ocl_dropout_fwd(mcl_backend *be, const mcl_op_args *a)
{
    return dropout_launch(be, a, "dropout_fwd", a->in[0], a->out[0]);
}

/* Backward: ga_i += keep_i ? gout_i * scale : 0   (the same mask, drawn again)
 * gout[0] like a;  gin[0] like a (or NULL) */
mcl_status mcl_ocl_dropout_bwd(mcl_backend *be, const mcl_op_args *a)
{
    if (!a->gin[0]) return MCL_OK;
    return dropout_launch(be, a, "dropout_bwd", a->gout[0], a->gin[0]);
}

/* ---- add_dropout: out = a + dropout(x) (src/ref/dropout.c) ---- */

/* Forward:  out_i = a_i + (keep_i ? x_i * scale : 0)   (one launch)
 * a [any], x [same as a] -> out [same as a] */
mcl_status mcl_ocl_add_dropout_fwd(mcl_backend *be, const mcl_op_args *a)
{
    const float p = a->p.f[0];
    const int64_t n = mcl_tensor_numel(a->in[0]);
    char what[160], sb[64];
    cl_kernel k = mcl_ocl_kernel(be, "add_dropout_fwd", NULL);
    int i = k ? 0 : -1;
    i = mcl_ocl_arg_tensor(be, k, i, a->in[0]);
    i = mcl_ocl_arg_tensor(be, k, i, a->in[1]);
    i = mcl_ocl_arg_tensor(be, k, i, a->out[0]);
    i = mask_args(be, k, i, a);
    i = mcl_ocl_arg_long(be, k, i, n);
    snprintf(what, sizeof what, "add_dropout_fwd on %s (p = %g)",
             mcl_shape_str(a->in[0], sb, sizeof sb), (double)p);
    return mcl_ocl_launch(be, k, i, n, what);
}

/* Backward: ga += gout (add's accumulation), gx += keep_i ? gout_i * scale : 0 (dropout_bwd)
 * gout[0] like a;  gin[0], gin[1] like a (either NULL: one launch when the tape hands a's
 * gradient over as a view of gout) */
mcl_status mcl_ocl_add_dropout_bwd(mcl_backend *be, const mcl_op_args *a)
{
    /* fresh-aware (backend.c): ga through add's backward, which stores a fresh one; gx through
     * dropout_bwd's kernel, which adds to it, so a fresh gx gets its zeros first */
    if (a->gin[0]) {
        mcl_op_args g = *a;
        g.op = MCL_OP_ADD;
        g.gin[1] = NULL;
        mcl_status s = mcl_ocl_add_bwd(be, &g);
        if (s != MCL_OK) return s;
    }
    const mcl_op_args d = mcl_add_dropout_as_dropout(a);
    const mcl_status s = mcl_ocl_materialize(be, d.gin[0]);
    return s != MCL_OK ? s : mcl_ocl_dropout_bwd(be, &d);
}

/* ---- bias_dropout_relu: out = dropout(relu(x + b)) (src/ref/dropout.c) ---- */

/* Forward:  t = x + b;  out_i = keep_i ? relu(t_i) * scale : 0   (one launch)
 * x [..,N] (R rows of N), b [N] -> out [..,N] */
mcl_status mcl_ocl_bias_dropout_relu_fwd(mcl_backend *be, const mcl_op_args *a)
{
    const float p = a->p.f[0];
    const float scale = p == 0.0f ? 1.0f : 1.0f / (1.0f - p);
    const int64_t n = mcl_tensor_numel(a->in[0]), N = mcl_ocl_cols(a->in[0]);
    char what[160], sb[64];
    cl_kernel k = mcl_ocl_kernel(be, "bias_dropout_relu_fwd", NULL);
    int i = k ? 0 : -1;
    i = mcl_ocl_arg_tensor(be, k, i, a->in[0]);
    i = mcl_ocl_arg_tensor(be, k, i, a->in[1]);
    i = mcl_ocl_arg_tensor(be, k, i, a->out[0]);
    i = mcl_ocl_arg_float(be, k, i, p);
    i = mcl_ocl_arg_float(be, k, i, scale);
    i = mcl_ocl_arg_ulong(be, k, i, a->p.u[0]);
    i = mcl_ocl_arg_ulong(be, k, i, a->p.u[1]);
    i = mcl_ocl_arg_ulong(be, k, i, a->p.u[2]);
    i = mcl_ocl_arg_long(be, k, i, N);
    i = mcl_ocl_arg_long(be, k, i, n);
    snprintf(what, sizeof what, "bias_dropout_relu_fwd on %s (p = %g)",
             mcl_shape_str(a->in[0], sb, sizeof sb), (double)p);
    return mcl_ocl_launch(be, k, i, n, what);
}

/* The mask's arguments and the relu flag of bias_dropout_relu_bwd_part (after its tensors) */
typedef struct mask_relu {
    const mcl_op_args *a;
    int relu;
} mask_relu;

static int mask_relu_args(mcl_backend *be, cl_kernel k, int i, const void *ctx)
{
    const mask_relu *m = ctx;
    i = mask_args(be, k, i, m->a);
    return mcl_ocl_arg_int(be, k, i, m->relu);
}

/* d_i = keep_i && (!relu || t_i > 0) ? 0 + gout_i * scale : 0 (t = x + b recomputed), gx += d,
 * gb[j] += sum_r d[r, j] in bias_add's chunks of MCL_OCL_BIAS_ROWS rows, pairs and order; gx,
 * gb each stored when fresh (either NULL). Where mcl_ocl_bias_one_launch says so, one launch
 * of ceil(N / 4) items (bias_dropout_relu_bwd, as bias_add_bwd_one), else bias_add's two
 * passes (bias_dropout_relu_bwd_part, then bias_add_bwd_sum when gb is wanted): the same bits.
 * x [R, N], b [N], gout [R, N] -> gx [R, N], gb [N] */
static mcl_status dropout_bias_grad(mcl_backend *be, const mcl_op_args *a, const mcl_tensor *x,
                                    const mcl_tensor *b, const mcl_tensor *gx,
                                    const mcl_tensor *gb, int relu)
{
    if (!gx && !gb) return MCL_OK;
    if (!mcl_ocl_bias_one_launch(be, mcl_ocl_rows(x))) {
        const mcl_tensor *in[3] = {x, b, a->gout[0]};
        const mask_relu m = {a, relu};
        return mcl_ocl_bias_grad(be, "bias_dropout_relu_bwd_part", in, 3, mask_relu_args, &m,
                                 "x", gb, gx);
    }
    const int64_t N = mcl_ocl_cols(x), R = mcl_ocl_rows(x);
    char what[160], sb[64];
    mcl_status s = MCL_OK;
    const int gx_mode = !gx ? 0 : mcl_ocl_grad_fresh(be, gx, &s) ? 1 : 2; /* store / add */
    if (s != MCL_OK) return s;
    const int fresh = gb ? mcl_ocl_grad_fresh(be, gb, &s) : 0;
    if (s != MCL_OK) return s;
    cl_kernel k = mcl_ocl_kernel(be, "bias_dropout_relu_bwd", NULL);
    int i = k ? 0 : -1;
    i = mcl_ocl_arg_tensor(be, k, i, x);
    i = mcl_ocl_arg_tensor(be, k, i, b);
    i = mcl_ocl_arg_tensor(be, k, i, a->gout[0]);
    i = mcl_ocl_arg_tensor(be, k, i, gb ? gb : gx); /* gx: not written as gb (gb_mode 0) */
    i = mcl_ocl_arg_int(be, k, i, !fresh);
    i = mcl_ocl_arg_int(be, k, i, gb != NULL);
    i = mcl_ocl_arg_tensor(be, k, i, gx ? gx : gb); /* gb: not written as gx (gx_mode 0) */
    i = mcl_ocl_arg_int(be, k, i, gx_mode);
    i = mcl_ocl_arg_int(be, k, i, relu);
    i = mask_args(be, k, i, a);
    i = mcl_ocl_arg_long(be, k, i, R);
    i = mcl_ocl_arg_long(be, k, i, N);
    i = mcl_ocl_arg_long(be, k, i, MCL_OCL_BIAS_ROWS);
    const int64_t items = (N + 3) / 4; /* four columns per item */
    i = mcl_ocl_arg_long(be, k, i, items);
    snprintf(what, sizeof what, "bias_dropout_relu_bwd (%s) on gout %s (p = %g)",
             relu ? "relu" : "no relu", mcl_shape_str(a->gout[0], sb, sizeof sb),
             (double)a->p.f[0]);
    return mcl_ocl_launch(be, k, i, items, what);
}

/* Backward:  d_i = keep_i && t_i > 0 ? 0 + gout_i * scale : 0;  gx += d;  gb[j] += sum_r d[r, j]
 * (dropout_bias_grad: one launch or two passes). gout[0] [R, N];  gin[0] [R, N], gin[1] [N] (either NULL) */
mcl_status mcl_ocl_bias_dropout_relu_bwd(mcl_backend *be, const mcl_op_args *a)
{
    return dropout_bias_grad(be, a, a->in[0], a->in[1], a->gin[0], a->gin[1], 1);
}

/* ---- bias_add_dropout: out = a + dropout(x + b) (src/ref/dropout.c) ---- */

/* Forward:  t = x + b;  out_i = a_i + (keep_i ? t_i * scale : 0)   (one launch)
 * a [..,N], x [same as a] (R rows of N), b [N] -> out [same as a] */
mcl_status mcl_ocl_bias_add_dropout_fwd(mcl_backend *be, const mcl_op_args *a)
{
    const float p = a->p.f[0];
    const float scale = p == 0.0f ? 1.0f : 1.0f / (1.0f - p);
    const int64_t n = mcl_tensor_numel(a->in[1]), N = mcl_ocl_cols(a->in[1]);
    char what[160], sb[64];
    cl_kernel k = mcl_ocl_kernel(be, "bias_add_dropout_fwd", NULL);
    int i = k ? 0 : -1;
    i = mcl_ocl_arg_tensor(be, k, i, a->in[0]);
    i = mcl_ocl_arg_tensor(be, k, i, a->in[1]);
    i = mcl_ocl_arg_tensor(be, k, i, a->in[2]);
    i = mcl_ocl_arg_tensor(be, k, i, a->out[0]);
    i = mcl_ocl_arg_float(be, k, i, p);
    i = mcl_ocl_arg_float(be, k, i, scale);
    i = mcl_ocl_arg_ulong(be, k, i, a->p.u[0]);
    i = mcl_ocl_arg_ulong(be, k, i, a->p.u[1]);
    i = mcl_ocl_arg_ulong(be, k, i, a->p.u[2]);
    i = mcl_ocl_arg_long(be, k, i, N);
    i = mcl_ocl_arg_long(be, k, i, n);
    snprintf(what, sizeof what, "bias_add_dropout_fwd on %s (p = %g)",
             mcl_shape_str(a->in[1], sb, sizeof sb), (double)p);
    return mcl_ocl_launch(be, k, i, n, what);
}

/* Backward: ga += gout (add's accumulation; nothing when the tape handed a's gradient over as
 * a view of gout), then x's and b's gradients in one launch (dropout_bias_grad, no relu).
 * gout[0] like a;  gin[0], gin[1] like a, gin[2] [N] (any NULL) */
mcl_status mcl_ocl_bias_add_dropout_bwd(mcl_backend *be, const mcl_op_args *a)
{
    if (a->gin[0]) {
        mcl_op_args g = *a;
        g.op = MCL_OP_ADD;
        g.in[2] = NULL;
        g.gin[1] = NULL;
        g.gin[2] = NULL;
        mcl_status s = mcl_ocl_add_bwd(be, &g);
        if (s != MCL_OK) return s;
    }
    return dropout_bias_grad(be, a, a->in[1], a->in[2], a->gin[1], a->gin[2], 0);
}
