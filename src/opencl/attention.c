/* attention.c — OpenCL host glue of attn_kv (forward, backward), kv_push and rel_attn
 * (forward, backward).
 * Kernels: kernels/attention.cl; equations and semantics: src/ref/attention.c.
 *
 * attn_kv runs one work-group per row: per query row (t, h) in the forward and for dq, per
 * chunk key row (t', kh) for dk and dv. The group size W is the largest power of two <= 64
 * that the kernel allows; an item owns the output columns l, l + W, ... (at most
 * ATTN_MAXC = 8 of them), so head sizes above 8·W are refused with a clear error. rel_attn
 * has the same layout and limit, with a third backward kernel per distance row (dr).
 *
 * __local memory per work-group of W items (the arguments `red` and `pt` of the kernels):
 *   forward, dq (attn_kv_fwd, attn_kv_bwd_q; rel_attn_fwd, _bwd_q, _bwd_r):
 *       red W float2 + pt W floats            = 12·W bytes   (768 B at W = 64)
 *   dk, dv (attn_kv_bwd_kv, rel_attn_bwd_kv):
 *       red W float2 + pt 2·W floats (ps, pd)  = 16·W bytes   (1 KiB at W = 64)
 * independent of the sequence and head sizes, so it fits every device (the launch helpers
 * check it); the head size is limited by W instead: D <= 8·W (512 with W = 64).
 */
#include <string.h>

#include "ocl.h"

#define ATTN_MAXC 8

/* Work-group size for a kernel whose limit is wg_max, or 0 when the head size D does not fit. */
static size_t attn_wg(size_t wg_max, int64_t D)
{
    size_t w = 64;
    while (w > wg_max && w > 1) w >>= 1;
    return (int64_t)w * ATTN_MAXC >= D ? w : 0;
}

/* The geometry arguments shared by the three kernels (ATTN_GEOM_ARGS in the .cl file). */
static int geom_args(mcl_backend *be, cl_kernel k, int i, const mcl_op_args *a)
{
    const mcl_tensor *q = a->in[0], *kk = a->in[1], *v = a->in[2], *kb = a->in[3];
    i = mcl_ocl_arg_long(be, k, i, q->shape[0]);
    i = mcl_ocl_arg_long(be, k, i, q->shape[1]);
    i = mcl_ocl_arg_long(be, k, i, kk->shape[1]);
    i = mcl_ocl_arg_long(be, k, i, q->shape[2]);
    i = mcl_ocl_arg_long(be, k, i, v->shape[2]);
    i = mcl_ocl_arg_long(be, k, i, kb->shape[0]);
    i = mcl_ocl_arg_long(be, k, i, a->p.i[0]);
    i = mcl_ocl_arg_long(be, k, i, a->p.i[1]);
    i = mcl_ocl_arg_int(be, k, i, (int)a->p.i[2]);
    i = mcl_ocl_arg_float(be, k, i, a->p.f[0]);
    return mcl_ocl_arg_float(be, k, i, a->p.f[1]);
}

/* Look up a kernel and its group size W; refused (MCL_ERR_UNSUPPORTED, naming the op, the
 * shape and the limit) when heads of D columns are wider than ATTN_MAXC * W. */
static cl_kernel head_kernel(mcl_backend *be, const char *op, const char *dir, const char *name,
                             const char *tname, const mcl_tensor *t, int64_t D, size_t *W)
{
    size_t wg_max;
    cl_kernel k = mcl_ocl_kernel(be, name, &wg_max);
    if (!k) return NULL;
    *W = attn_wg(wg_max, D);
    if (*W == 0) {
        const size_t w = attn_wg(wg_max, 1);
        char sb[64];
        mcl_ctx_set_error(be->ctx, MCL_ERR_UNSUPPORTED,
                          "OpenCL: %s %s (%s %s): head size %lld exceeds %d x %zu = %zu, the widest "
                          "kernel %s takes with work-groups of %zu items (its limit on %s: "
                          "CL_KERNEL_WORK_GROUP_SIZE %zu); use smaller heads or the reference "
                          "backend",
                          op, dir, tname, mcl_shape_str(t, sb, sizeof sb), (long long)D, ATTN_MAXC, w,
                          (size_t)ATTN_MAXC * w, name, w, mcl_ocl_of(be)->device_name, wg_max);
        return NULL;
    }
    return k;
}

static cl_kernel attn_kernel(mcl_backend *be, const mcl_op_args *a, const char *name, size_t *W)
{
    const int64_t D = a->in[0]->shape[2] > a->in[2]->shape[2] ? a->in[0]->shape[2] : a->in[2]->shape[2];
    const int bwd = strstr(name, "_bwd") != NULL;
    return head_kernel(be, "attn_kv", bwd ? "backward" : "forward", name, "q", a->in[0], D, W);
}

/* forward: lse = log Σ exp(s), o = Σ m p v (src/ref/attention.c) */
mcl_status mcl_ocl_attn_kv_fwd(mcl_backend *be, const mcl_op_args *a)
{
    size_t W;
    cl_kernel k = attn_kernel(be, a, "attn_kv_fwd", &W);
    if (!k) return mcl_ocl_recorded(be);
    int i = 0;
    for (int j = 0; j < 5; j++) i = mcl_ocl_arg_tensor(be, k, i, a->in[j]);
    i = mcl_ocl_arg_tensor(be, k, i, a->out[0]);
    i = mcl_ocl_arg_tensor(be, k, i, a->out[1]);
    i = geom_args(be, k, i, a);
    /* __local: red W float2 + pt W floats = 12·W bytes (file comment) */
    i = mcl_ocl_arg_local(be, k, i, W * 2 * sizeof(float));
    i = mcl_ocl_arg_local(be, k, i, W * sizeof(float));
    char wb[160];
    mcl_ocl_what_op(wb, sizeof wb, "attn_kv", "forward", "attn_kv_fwd", "q", a->in[0]);
    const size_t rows = (size_t)(a->in[0]->shape[0] * a->in[0]->shape[1]);
    return mcl_ocl_launch_groups(be, k, i, rows, W, wb);
}

/* backward: gq (per query row), then gk and gv (per chunk key row) */
mcl_status mcl_ocl_attn_kv_bwd(mcl_backend *be, const mcl_op_args *a)
{
    char wb[160];
    size_t W;
    mcl_status s = MCL_OK;
    if (a->gin[0]) {
        cl_kernel k = attn_kernel(be, a, "attn_kv_bwd_q", &W);
        if (!k) return mcl_ocl_recorded(be);
        int i = 0;
        for (int j = 0; j < 5; j++) i = mcl_ocl_arg_tensor(be, k, i, a->in[j]);
        i = mcl_ocl_arg_tensor(be, k, i, a->out[0]);
        i = mcl_ocl_arg_tensor(be, k, i, a->out[1]);
        i = mcl_ocl_arg_tensor(be, k, i, a->gout[0]);
        i = mcl_ocl_arg_tensor(be, k, i, a->gin[0]);
        i = geom_args(be, k, i, a);
        /* __local: red W float2 + pt W floats = 12·W bytes */
        i = mcl_ocl_arg_local(be, k, i, W * 2 * sizeof(float));
        i = mcl_ocl_arg_local(be, k, i, W * sizeof(float));
        mcl_ocl_what_op(wb, sizeof wb, "attn_kv", "backward", "attn_kv_bwd_q", "q", a->in[0]);
        const size_t rows = (size_t)(a->in[0]->shape[0] * a->in[0]->shape[1]);
        s = mcl_ocl_launch_groups(be, k, i, rows, W, wb);
        if (s != MCL_OK) return s;
    }
    if (a->gin[1] || a->gin[2]) {
        cl_kernel k = attn_kernel(be, a, "attn_kv_bwd_kv", &W);
        if (!k) return mcl_ocl_recorded(be);
        int i = 0;
        for (int j = 0; j < 3; j++) i = mcl_ocl_arg_tensor(be, k, i, a->in[j]);
        i = mcl_ocl_arg_tensor(be, k, i, a->out[0]);
        i = mcl_ocl_arg_tensor(be, k, i, a->out[1]);
        i = mcl_ocl_arg_tensor(be, k, i, a->gout[0]);
        i = mcl_ocl_arg_tensor(be, k, i, a->gin[1] ? a->gin[1] : a->in[1]);
        i = mcl_ocl_arg_tensor(be, k, i, a->gin[2] ? a->gin[2] : a->in[2]);
        i = mcl_ocl_arg_int(be, k, i, a->gin[1] != NULL);
        i = mcl_ocl_arg_int(be, k, i, a->gin[2] != NULL);
        i = geom_args(be, k, i, a);
        /* __local: red W float2 + ps, pd 2·W floats = 16·W bytes */
        i = mcl_ocl_arg_local(be, k, i, W * 2 * sizeof(float));
        i = mcl_ocl_arg_local(be, k, i, W * 2 * sizeof(float));
        mcl_ocl_what_op(wb, sizeof wb, "attn_kv", "backward", "attn_kv_bwd_kv", "k", a->in[1]);
        const size_t rows = (size_t)(a->in[1]->shape[0] * a->in[1]->shape[1]);
        s = mcl_ocl_launch_groups(be, k, i, rows, W, wb);
    }
    return s;
}

/* kv_push: buf[(pos + r) mod C] = x[S - m + r], r < m = min(S, C) */
mcl_status mcl_ocl_kv_push_fwd(mcl_backend *be, const mcl_op_args *a)
{
    const mcl_tensor *buf = a->in[0], *x = a->in[1];
    const int64_t C = buf->shape[0], S = x->shape[0], row = buf->shape[1] * buf->shape[2];
    const int64_t m = S < C ? S : C;
    cl_kernel k = mcl_ocl_kernel(be, "kv_push", NULL);
    if (!k) return mcl_ocl_recorded(be);
    int i = mcl_ocl_arg_tensor(be, k, 0, buf);
    i = mcl_ocl_arg_tensor(be, k, i, x);
    i = mcl_ocl_arg_long(be, k, i, C);
    i = mcl_ocl_arg_long(be, k, i, S);
    i = mcl_ocl_arg_long(be, k, i, row);
    i = mcl_ocl_arg_long(be, k, i, a->p.i[0]);
    i = mcl_ocl_arg_long(be, k, i, m * row);
    char wb[160];
    mcl_ocl_what_op(wb, sizeof wb, "kv_push", "forward", "kv_push", "x", x);
    return mcl_ocl_launch(be, k, i, m * row, wb);
}

/* ------------------------------------------------------------------------------------ */
/* rel_attn (Transformer-XL relative-position attention): one work-group per query row
 * (forward; dqc and dqp), per key row (dk, dv) and per distance row (dr); group size and the
 * head-size limit as attn_kv's. */

/* The geometry arguments of the rel_attn kernels (REL_GEOM_ARGS in the .cl file). */
static int rel_geom_args(mcl_backend *be, cl_kernel k, int i, const mcl_op_args *a)
{
    const mcl_tensor *qc = a->in[0], *kk = a->in[2], *v = a->in[3];
    i = mcl_ocl_arg_long(be, k, i, qc->shape[0]);
    i = mcl_ocl_arg_long(be, k, i, qc->shape[1]);
    i = mcl_ocl_arg_long(be, k, i, qc->shape[2]);
    i = mcl_ocl_arg_long(be, k, i, qc->shape[3]);
    i = mcl_ocl_arg_long(be, k, i, v->shape[3]);
    i = mcl_ocl_arg_long(be, k, i, kk->shape[1]);
    i = mcl_ocl_arg_long(be, k, i, a->p.i[0]);
    return mcl_ocl_arg_float(be, k, i, a->p.f[0]);
}

/* Look up a rel_attn kernel and its group size; refused when the heads are too wide. */
static cl_kernel rel_kernel(mcl_backend *be, const mcl_op_args *a, const char *name, size_t *W)
{
    const int64_t D = a->in[0]->shape[3] > a->in[3]->shape[3] ? a->in[0]->shape[3] : a->in[3]->shape[3];
    const int bwd = strstr(name, "_bwd") != NULL;
    return head_kernel(be, "rel_attn", bwd ? "backward" : "forward", name, "qc", a->in[0], D, W);
}

/* The five inputs, o, lse and gout: the first arguments of every backward kernel. */
static int rel_bwd_head(mcl_backend *be, cl_kernel k, const mcl_op_args *a)
{
    int i = 0;
    for (int j = 0; j < 5; j++) i = mcl_ocl_arg_tensor(be, k, i, a->in[j]);
    i = mcl_ocl_arg_tensor(be, k, i, a->out[0]);
    i = mcl_ocl_arg_tensor(be, k, i, a->out[1]);
    return mcl_ocl_arg_tensor(be, k, i, a->gout[0]);
}

/* forward: lse = log Σ exp(s), o = Σ p v (src/ref/attention.c, rel_attn) */
mcl_status mcl_ocl_rel_attn_fwd(mcl_backend *be, const mcl_op_args *a)
{
    size_t W;
    cl_kernel k = rel_kernel(be, a, "rel_attn_fwd", &W);
    if (!k) return mcl_ocl_recorded(be);
    int i = 0;
    for (int j = 0; j < 5; j++) i = mcl_ocl_arg_tensor(be, k, i, a->in[j]);
    i = mcl_ocl_arg_tensor(be, k, i, a->out[0]);
    i = mcl_ocl_arg_tensor(be, k, i, a->out[1]);
    i = rel_geom_args(be, k, i, a);
    /* __local: red W float2 + pt W floats = 12·W bytes (file comment) */
    i = mcl_ocl_arg_local(be, k, i, W * 2 * sizeof(float));
    i = mcl_ocl_arg_local(be, k, i, W * sizeof(float));
    char wb[160];
    mcl_ocl_what_op(wb, sizeof wb, "rel_attn", "forward", "rel_attn_fwd", "qc", a->in[0]);
    const size_t rows = (size_t)mcl_ocl_rows(a->in[0]);
    return mcl_ocl_launch_groups(be, k, i, rows, W, wb);
}

/* backward: gqc and gqp (per query row), gk and gv (per key row), gr (per distance row) */
mcl_status mcl_ocl_rel_attn_bwd(mcl_backend *be, const mcl_op_args *a)
{
    char wb[160];
    size_t W;
    mcl_status s = MCL_OK;
    if (a->gin[0] || a->gin[1]) {
        cl_kernel k = rel_kernel(be, a, "rel_attn_bwd_q", &W);
        if (!k) return mcl_ocl_recorded(be);
        int i = rel_bwd_head(be, k, a);
        i = mcl_ocl_arg_tensor(be, k, i, a->gin[0] ? a->gin[0] : a->in[0]);
        i = mcl_ocl_arg_tensor(be, k, i, a->gin[1] ? a->gin[1] : a->in[1]);
        i = mcl_ocl_arg_int(be, k, i, a->gin[0] != NULL);
        i = mcl_ocl_arg_int(be, k, i, a->gin[1] != NULL);
        i = rel_geom_args(be, k, i, a);
        /* __local: red W float2 + pt W floats = 12·W bytes */
        i = mcl_ocl_arg_local(be, k, i, W * 2 * sizeof(float));
        i = mcl_ocl_arg_local(be, k, i, W * sizeof(float));
        mcl_ocl_what_op(wb, sizeof wb, "rel_attn", "backward", "rel_attn_bwd_q", "qc", a->in[0]);
        s = mcl_ocl_launch_groups(be, k, i, (size_t)mcl_ocl_rows(a->in[0]), W, wb);
        if (s != MCL_OK) return s;
    }
    if (a->gin[2] || a->gin[3]) {
        cl_kernel k = rel_kernel(be, a, "rel_attn_bwd_kv", &W);
        if (!k) return mcl_ocl_recorded(be);
        int i = rel_bwd_head(be, k, a);
        i = mcl_ocl_arg_tensor(be, k, i, a->gin[2] ? a->gin[2] : a->in[2]);
        i = mcl_ocl_arg_tensor(be, k, i, a->gin[3] ? a->gin[3] : a->in[3]);
        i = mcl_ocl_arg_int(be, k, i, a->gin[2] != NULL);
        i = mcl_ocl_arg_int(be, k, i, a->gin[3] != NULL);
        i = rel_geom_args(be, k, i, a);
        /* __local: red W float2 + ps, pd 2·W floats = 16·W bytes */
        i = mcl_ocl_arg_local(be, k, i, W * 2 * sizeof(float));
        i = mcl_ocl_arg_local(be, k, i, W * 2 * sizeof(float));
        mcl_ocl_what_op(wb, sizeof wb, "rel_attn", "backward", "rel_attn_bwd_kv", "k", a->in[2]);
        s = mcl_ocl_launch_groups(be, k, i, (size_t)mcl_ocl_rows(a->in[2]), W, wb);
        if (s != MCL_OK) return s;
    }
    if (a->gin[4]) {
        cl_kernel k = rel_kernel(be, a, "rel_attn_bwd_r", &W);
        if (!k) return mcl_ocl_recorded(be);
        int i = rel_bwd_head(be, k, a);
        i = mcl_ocl_arg_tensor(be, k, i, a->gin[4]);
        i = rel_geom_args(be, k, i, a);
        /* __local: red W float2 + pt W floats = 12·W bytes */
        i = mcl_ocl_arg_local(be, k, i, W * 2 * sizeof(float));
        i = mcl_ocl_arg_local(be, k, i, W * sizeof(float));
        mcl_ocl_what_op(wb, sizeof wb, "rel_attn", "backward", "rel_attn_bwd_r", "r", a->in[4]);
        s = mcl_ocl_launch_groups(be, k, i, (size_t)mcl_ocl_rows(a->in[4]), W, wb);
    }
    return s;
}
