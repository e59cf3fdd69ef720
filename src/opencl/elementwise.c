/* elementwise.c — OpenCL host glue for add, sub, mul, scale, bias_add, copy; bias_add2.
 *
 * Kernels: kernels/elementwise.cl (one work-item per element). Same contract and equations
 * as src/ref/elementwise.c; backward ACCUMULATES into the non-NULL gin[k]. When gin[0] and
 * gin[1] are the same tensor (add(a, a), mul(a, a)), each input's contribution is its own
 * kernel launch; the queue is in order, so the second sees the first's result. The plain
 * gradient copy gx += gout (add, bias_add for x, copy) is the one kernel copy_bwd (copy_fwd
 * when gx is a fresh buffer: these backwards are fresh-aware, see buffers.c).
 *
 * Every function returns MCL_OK or the status of the first failure, whose message (kernel,
 * shapes, OpenCL error) the helpers have recorded in the context.
 */
#include <stdio.h>

#include "ocl.h"

/* Rows of a [.., N] tensor chunked per work-item in pass 1 of the bias gradient (ocl.h). */
#define BIAS_ROWS MCL_OCL_BIAS_ROWS
/* Rows per work-item of the bias_add forward (any value gives the same bits). */
#define BIAS_FWD_ROWS 8

/* ------------------------------------------------------------------------------------ */
/* add: out = a + b;  a [n], b [n] -> out [n]
 * backward: ga += gout, gb += gout */

mcl_status mcl_ocl_add_fwd(mcl_backend *be, const mcl_op_args *a)
{
    return mcl_ocl_launch_binary(be, "add_fwd", a->in[0], a->in[1], a->out[0], NULL);
}

/* gx += gout with the kernel copy_bwd, for the backward of `op`; gx = gout (copy_fwd) when
 * gx is fresh (all zeros, never written: mcl_ocl_grad_fresh) */
static mcl_status acc_grad(mcl_backend *be, const char *op, const mcl_tensor *g,
                           const mcl_tensor *gx)
{
    char what[128];
    mcl_status s;
    const char *kname = mcl_ocl_grad_fresh(be, gx, &s) ? "copy_fwd" : "copy_bwd";
    if (s != MCL_OK) return s;
    mcl_ocl_what_op(what, sizeof what, op, "backward", kname, "gin", gx);
    return mcl_ocl_launch_unary(be, kname, g, gx, what);
}

mcl_status mcl_ocl_add_bwd(mcl_backend *be, const mcl_op_args *a)
{
    for (int k = 0; k < 2; k++) {
        if (!a->gin[k]) continue;
        mcl_status s = acc_grad(be, "add", a->gout[0], a->gin[k]);
        if (s != MCL_OK) return s;
    }
    return MCL_OK;
}

/* ------------------------------------------------------------------------------------ */
/* sub: out = a - b;  a [n], b [n] -> out [n]
 * backward: ga += gout, gb -= gout */

mcl_status mcl_ocl_sub_fwd(mcl_backend *be, const mcl_op_args *a)
{
    return mcl_ocl_launch_binary(be, "sub_fwd", a->in[0], a->in[1], a->out[0], NULL);
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
        mcl_status s =
            mcl_ocl_launch(be, k, i, n, mcl_ocl_what_on(what, sizeof what, "sub_bwd", gx));
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
    return mcl_ocl_launch_binary(be, "mul_fwd", a->in[0], a->in[1], a->out[0], NULL);
}

mcl_status mcl_ocl_mul_bwd(mcl_backend *be, const mcl_op_args *a)
{
    for (int k = 0; k < 2; k++) {
        if (!a->gin[k]) continue;
        /* mul_bwd(gout, the other factor, gx, n) */
        mcl_status s =
            mcl_ocl_launch_binary(be, "mul_bwd", a->gout[0], a->in[1 - k], a->gin[k], NULL);
        if (s != MCL_OK) return s;
    }
    return MCL_OK;
}

/* ------------------------------------------------------------------------------------ */
/* scale: out = f0 * a;  a [n] -> out [n]
 * backward: ga += f0 * gout */

mcl_status mcl_ocl_scale_fwd(mcl_backend *be, const mcl_op_args *a)
{
    return mcl_ocl_launch_unary_f(be, "scale_fwd", a->in[0], a->out[0], a->p.f[0], NULL);
}

mcl_status mcl_ocl_scale_bwd(mcl_backend *be, const mcl_op_args *a)
{
    if (!a->gin[0]) return MCL_OK;
    return mcl_ocl_launch_unary_f(be, "scale_bwd", a->gout[0], a->gin[0], a->p.f[0], NULL);
}

/* ------------------------------------------------------------------------------------ */
/* bias_add: out[r, j] = x[r, j] + b[j]
 *   x [..,N] (R rows of N), b [N] -> out [..,N]
 * backward: gx[r, j] += gout[r, j]            (in pass 1 of the bias gradient when both)
 *           gb[j]    += sum_r gout[r, j]   (float-float sum over rows in increasing order,
 *                                           in chunks of BIAS_ROWS; see elementwise.cl) */

/* A launch over (chunk of rows, column) items, item i = c * N + j doing column j of the rows
 * [c*rows, (c+1)*rows), so that neighbouring items touch neighbouring columns (the forwards of
 * bias_add, bias_add2 and bias_gelu, bias_gelu's backward for x): the kernel `name` gets the
 * nt tensors t[], then acc when acc >= 0, then R, N, rows and the item count.
 *   t[0] [R, N] (as rows; R and N are its) */
mcl_status mcl_ocl_launch_row_chunks(mcl_backend *be, const char *name,
                                     const mcl_tensor *const *t, int nt, int acc, int64_t rows)
{
    char what[128];
    const int64_t N = mcl_ocl_cols(t[0]), R = mcl_ocl_rows(t[0]);
    const int64_t n = (R + rows - 1) / rows * N;
    cl_kernel k = mcl_ocl_kernel(be, name, NULL);
    int i = k ? 0 : -1;
    for (int q = 0; q < nt; q++) i = mcl_ocl_arg_tensor(be, k, i, t[q]);
    if (acc >= 0) i = mcl_ocl_arg_int(be, k, i, acc);
    i = mcl_ocl_arg_long(be, k, i, R);
    i = mcl_ocl_arg_long(be, k, i, N);
    i = mcl_ocl_arg_long(be, k, i, rows);
    i = mcl_ocl_arg_long(be, k, i, n);
    return mcl_ocl_launch(be, k, i, n, mcl_ocl_what_on(what, sizeof what, name, t[0]));
}

mcl_status mcl_ocl_bias_add_fwd(mcl_backend *be, const mcl_op_args *a)
{
    const mcl_tensor *t[3] = {a->in[0], a->in[1], a->out[0]};
    return mcl_ocl_launch_row_chunks(be, "bias_add_fwd", t, 3, -1, BIAS_FWD_ROWS);
}

/* gb[j] += sum_r gout[r, j] in one launch, where mcl_ocl_bias_one_launch says so (the kernel
 * bias_add_bwd_one: the same bits as the two passes below); gx as pass 1 does it. */
static mcl_status bias_grad_one(mcl_backend *be, const mcl_tensor *g, const mcl_tensor *gb,
                                const mcl_tensor *gx)
{
    char what[160], sb[64];
    const int64_t N = mcl_ocl_cols(g), R = mcl_ocl_rows(g);
    mcl_status s = MCL_OK;
    const int gx_mode = !gx ? 0 : mcl_ocl_grad_fresh(be, gx, &s) ? 1 : 2; /* store / add */
    if (s != MCL_OK) return s;
    const int fresh = mcl_ocl_grad_fresh(be, gb, &s);
    if (s != MCL_OK) return s;
    cl_kernel k = mcl_ocl_kernel(be, "bias_add_bwd_one", NULL);
    int i = k ? 0 : -1;
    i = mcl_ocl_arg_tensor(be, k, i, g);
    i = mcl_ocl_arg_tensor(be, k, i, gb);
    i = mcl_ocl_arg_int(be, k, i, !fresh);
    i = mcl_ocl_arg_tensor(be, k, i, gx ? gx : gb); /* gb: unused by the kernel (gx_mode 0) */
    i = mcl_ocl_arg_int(be, k, i, gx_mode);
    i = mcl_ocl_arg_long(be, k, i, R);
    i = mcl_ocl_arg_long(be, k, i, N);
    i = mcl_ocl_arg_long(be, k, i, BIAS_ROWS);
    const int64_t items = (N + 3) / 4; /* four columns per item */
    i = mcl_ocl_arg_long(be, k, i, items);
    snprintf(what, sizeof what, "bias_add_bwd_one on gout %s", mcl_shape_str(g, sb, sizeof sb));
    return mcl_ocl_launch(be, k, i, items, what);
}

int mcl_ocl_bias_one_launch(mcl_backend *be, int64_t R)
{
    const int64_t chunks = (R + BIAS_ROWS - 1) / BIAS_ROWS;
    return chunks <= mcl_ocl_of(be)->bias_one_chunks;
}

/* Pass 1 of a bias gradient, one item per four columns of a chunk of BIAS_ROWS rows: the
 * kernel `name` (bias_add_bwd_part and its kin) gets the nin tensors in[], what more(ctx)
 * sets (when more is not NULL), then part, gx (a
 * placeholder when gx is NULL), gx_mode (0: no gx, 1: store, 2: add), R, N, BIAS_ROWS, chunks
 * when with_chunks, and the item count; R and N are in[0]'s ("on" names it in the message).
 *   in[0] [R, N] (as rows), part scratch, gx [R, N] or NULL */
static mcl_status bias_part(mcl_backend *be, const char *name, const mcl_tensor *const *in,
                            int nin, mcl_ocl_more_args more, const void *ctx, const char *on,
                            cl_mem part, const mcl_tensor *gx, int with_chunks)
{
    char what[160], sb[64];
    const int64_t N = mcl_ocl_cols(in[0]), R = mcl_ocl_rows(in[0]);
    const int64_t chunks = (R + BIAS_ROWS - 1) / BIAS_ROWS;
    mcl_status s = MCL_OK;
    const int gx_mode = !gx ? 0 : mcl_ocl_grad_fresh(be, gx, &s) ? 1 : 2; /* store / add */
    if (s != MCL_OK) return s;
    cl_kernel k = mcl_ocl_kernel(be, name, NULL);
    int i = k ? 0 : -1;
    for (int t = 0; t < nin; t++) i = mcl_ocl_arg_tensor(be, k, i, in[t]);
    if (more && i >= 0) i = more(be, k, i, ctx);
    i = mcl_ocl_arg_mem(be, k, i, part);
    if (gx) {
        i = mcl_ocl_arg_tensor(be, k, i, gx);
    } else { /* unused by the kernel */
        i = mcl_ocl_arg_mem(be, k, i, part);
        i = mcl_ocl_arg_long(be, k, i, 0);
    }
    i = mcl_ocl_arg_int(be, k, i, gx_mode);
    i = mcl_ocl_arg_long(be, k, i, R);
    i = mcl_ocl_arg_long(be, k, i, N);
    i = mcl_ocl_arg_long(be, k, i, BIAS_ROWS);
    if (with_chunks) i = mcl_ocl_arg_long(be, k, i, chunks);
    const int64_t items = chunks * ((N + 3) / 4); /* four columns per item */
    i = mcl_ocl_arg_long(be, k, i, items);
    mcl_shape_str(in[0], sb, sizeof sb);
    snprintf(what, sizeof what, "%s on %s %s (%lld chunks)", name, on, sb, (long long)chunks);
    return mcl_ocl_launch(be, k, i, items, what);
}

/* gb[j] += sum_r gout[r, j] (gout: the nin tensors in[] give it to the pass-1 kernel
 * part_name, see bias_part): pass 1 writes one (hi, lo) pair per (chunk, column) into the
 * backend scratch and does gx when gx is not NULL (gx = gout when gx is fresh, else +=; it
 * reads gout anyway), pass 2 (bias_add_bwd_sum) adds the chunks per column in order.
 *   in[0] [R, N] (as rows), gb [N], gx [R, N] or NULL */
mcl_status mcl_ocl_bias_grad(mcl_backend *be, const char *part_name,
                             const mcl_tensor *const *in, int nin, mcl_ocl_more_args more,
                             const void *ctx, const char *on, const mcl_tensor *gb,
                             const mcl_tensor *gx)
{
    char what[160], sb[64];
    const int64_t N = mcl_ocl_cols(in[0]), R = mcl_ocl_rows(in[0]);
    const int64_t chunks = (R + BIAS_ROWS - 1) / BIAS_ROWS;
    cl_mem part = mcl_ocl_scratch(be, (size_t)(chunks * N) * 2 * sizeof(float));
    if (!part) return mcl_ocl_recorded(be);
    mcl_status s = bias_part(be, part_name, in, nin, more, ctx, on, part, gx, 0);
    if (s != MCL_OK || !gb) return s;

    const int fresh = mcl_ocl_grad_fresh(be, gb, &s); /* then store the sums */
    if (s != MCL_OK) return s;
    cl_kernel k = mcl_ocl_kernel(be, "bias_add_bwd_sum", NULL);
    int i = k ? 0 : -1;
    i = mcl_ocl_arg_mem(be, k, i, part);
    i = mcl_ocl_arg_tensor(be, k, i, gb);
    i = mcl_ocl_arg_long(be, k, i, chunks);
    i = mcl_ocl_arg_long(be, k, i, N);
    i = mcl_ocl_arg_int(be, k, i, !fresh);
    mcl_shape_str(in[0], sb, sizeof sb);
    snprintf(what, sizeof what, "bias_add_bwd_sum (%s) on %s %s (%lld chunks)", part_name, on,
             sb, (long long)chunks);
    return mcl_ocl_launch(be, k, i, N, what);
}

mcl_status mcl_ocl_bias_add_bwd(mcl_backend *be, const mcl_op_args *a)
{
    const mcl_tensor *g[1] = {a->gout[0]};
    if (a->gin[1] && mcl_ocl_bias_one_launch(be, mcl_ocl_rows(g[0])))
        return bias_grad_one(be, g[0], a->gin[1], a->gin[0]);
    if (a->gin[1])
        return mcl_ocl_bias_grad(be, "bias_add_bwd_part", g, 1, NULL, NULL, "gout", a->gin[1],
                                 a->gin[0]);
    if (a->gin[0]) return acc_grad(be, "bias_add", a->gout[0], a->gin[0]);
    return MCL_OK;
}

/* ------------------------------------------------------------------------------------ */
/* bias_add2: out0 = x + b0, out1 = x + b1;  x [..,N] (R rows of N), b0 [N], b1 [N]
 * backward: gx += gout0 + gout1 (one launch when no bias gradient is wanted); gb0, gb1: the
 * column sums of gout0, gout1 in bias_add's chunks and order, both in one pass 1 (which also
 * does gx) and one pass 2 */

mcl_status mcl_ocl_bias_add2_fwd(mcl_backend *be, const mcl_op_args *a)
{
    const mcl_tensor *t[5] = {a->in[0], a->in[1], a->in[2], a->out[0], a->out[1]};
    return mcl_ocl_launch_row_chunks(be, "bias_add2_fwd", t, 5, -1, BIAS_FWD_ROWS);
}

mcl_status mcl_ocl_bias_add2_bwd(mcl_backend *be, const mcl_op_args *a)
{
    const mcl_tensor *g0 = a->gout[0], *g1 = a->gout[1], *gx = a->gin[0];
    const mcl_tensor *gb0 = a->gin[1], *gb1 = a->gin[2];
    char what[160], sb[64];
    mcl_status s = MCL_OK;
    if (!gb0 && !gb1) { /* x alone */
        if (!gx) return MCL_OK;
        const int acc = !mcl_ocl_grad_fresh(be, gx, &s);
        if (s != MCL_OK) return s;
        const int64_t n = mcl_tensor_numel(gx);
        cl_kernel k = mcl_ocl_kernel(be, "bias_add2_bwd_x", NULL);
        int i = k ? 0 : -1;
        i = mcl_ocl_arg_tensor(be, k, i, g0);
        i = mcl_ocl_arg_tensor(be, k, i, g1);
        i = mcl_ocl_arg_tensor(be, k, i, gx);
        i = mcl_ocl_arg_int(be, k, i, acc);
        i = mcl_ocl_arg_long(be, k, i, n);
        return mcl_ocl_launch(be, k, i, n, mcl_ocl_what_on(what, sizeof what, "bias_add2_bwd_x", gx));
    }
    const int64_t N = mcl_ocl_cols(g0), R = mcl_ocl_rows(g0);
    const int64_t chunks = (R + BIAS_ROWS - 1) / BIAS_ROWS;
    mcl_shape_str(g0, sb, sizeof sb);
    cl_mem part = mcl_ocl_scratch(be, (size_t)(2 * chunks * N) * 2 * sizeof(float));
    if (!part) return mcl_ocl_recorded(be);
    const mcl_tensor *g01[2] = {g0, g1};
    if ((s = bias_part(be, "bias_add2_bwd_part", g01, 2, NULL, NULL, "gout", part, gx, 1)) != MCL_OK) return s;

    /* pass 2: both sums in one launch, or one after the other when gb0 and gb1 share memory */
    const int shared = gb0 && gb1 && gb0->buf == gb1->buf && gb0->offset < gb1->offset + N &&
                       gb1->offset < gb0->offset + N;
    for (int pass = 0; pass < (shared ? 2 : 1); pass++) {
        const mcl_tensor *w0 = shared && pass == 1 ? NULL : gb0, *w1 = shared && pass == 0 ? NULL : gb1;
        const int fresh0 = w0 ? mcl_ocl_grad_fresh(be, w0, &s) : 0; /* then store the sums */
        if (s != MCL_OK) return s;
        const int fresh1 = w1 ? mcl_ocl_grad_fresh(be, w1, &s) : 0;
        if (s != MCL_OK) return s;
        cl_kernel k = mcl_ocl_kernel(be, "bias_add2_bwd_sum", NULL);
        int i = k ? 0 : -1;
        i = mcl_ocl_arg_mem(be, k, i, part);
        for (int b = 0; b < 2; b++) {
            const mcl_tensor *gb = b ? w1 : w0;
            if (gb) {
                i = mcl_ocl_arg_tensor(be, k, i, gb);
            } else { /* not written by the kernel */
                i = mcl_ocl_arg_mem(be, k, i, part);
                i = mcl_ocl_arg_long(be, k, i, 0);
            }
        }
        i = mcl_ocl_arg_long(be, k, i, chunks);
        i = mcl_ocl_arg_long(be, k, i, N);
        i = mcl_ocl_arg_int(be, k, i, w0 != NULL);
        i = mcl_ocl_arg_int(be, k, i, w1 != NULL);
        i = mcl_ocl_arg_int(be, k, i, !fresh0);
        i = mcl_ocl_arg_int(be, k, i, !fresh1);
        snprintf(what, sizeof what, "bias_add2_bwd_sum on gout %s (%lld chunks)", sb, (long long)chunks);
        if ((s = mcl_ocl_launch(be, k, i, 2 * N, what)) != MCL_OK) return s;
    }
    return MCL_OK;
}

/* ------------------------------------------------------------------------------------ */
/* copy: out = a;  a [n] -> out [n]
 * backward: ga += gout */

mcl_status mcl_ocl_copy_fwd(mcl_backend *be, const mcl_op_args *a)
{
    return mcl_ocl_launch_unary(be, "copy_fwd", a->in[0], a->out[0], NULL);
}

mcl_status mcl_ocl_copy_bwd(mcl_backend *be, const mcl_op_args *a)
{
    if (!a->gin[0]) return MCL_OK;
    return acc_grad(be, "copy", a->gout[0], a->gin[0]);
}
