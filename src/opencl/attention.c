/* attention.c — OpenCL host glue of attn_kv (forward, backward), kv_push and rel_attn
 * (forward, backward).
 * Kernels: kernels/attention.cl; equations and semantics: src/ref/attention.c.
 *
 * Tiled kernels (kernels/attention.cl's header; doc/opencl-backend.md "Attention kernels"):
 * a work-group of NT items owns a block of BT rows (queries; keys for dk, dv; distances for
 * dr) and walks the other side in tiles of BT rows staged in __local memory. NT = 64, or the
 * largest power of two the kernel allows; BT = 16, halved while the block's accumulators do
 * not fit the items (BT·D > ATTN_MAXC·NT, D the wider head) or the tiles do not fit the
 * device's __local memory (CL_DEVICE_LOCAL_MEM_SIZE less the kernel's own). A head wider than
 * ATTN_MAXC·NT (512 at NT = 64), or one whose tiles of a single row do not fit, is refused
 * with a clear error. __local bytes per group: local_floats (about 4·BT·(5·D + 3·BT)
 * bytes; at most 18 KiB for any head up to 512 columns with NT = 64).
 *
 * The backward first computes D_r = go_r · o_r of every query row into the scratch buffer
 * (kernel attn_row_dot), read by the q, kv and r kernels. Indices in the kernels are 32-bit:
 * tensors of 2^31 floats or more are refused (check_int_sizes).
 */
#include <limits.h>
#include <string.h>

#include "ocl.h"

#define ATTN_MAXC 8 /* accumulators per item (kernels/attention.cl) */
#define ATTN_BT 16  /* block and tile rows, at most */

/* The kernels, for their __local layouts. */
typedef enum { KV_FWD, KV_BWD_Q, KV_BWD_KV, REL_FWD, REL_BWD_Q, REL_BWD_KV, REL_BWD_R } attn_kind;

/* __local floats (lf) and ints (li) of one group with blocks and tiles of B rows, head sizes
 * Dk (rel_attn: D) and Dv; keep in step with the carving at the top of each kernel. */
static size_t local_floats(attn_kind kind, size_t B, size_t Dk, size_t Dv)
{
    const size_t ldk = Dk + 1, ldv = Dv + 1, ldp = B + 1, NR = 2 * B - 1;
    switch (kind) {
    case KV_FWD: return 2 * B + B * ldk + B * ldk + B * ldv + B * ldp + 3 * B;
    case KV_BWD_Q: return B * ldk + B * ldv + B * ldk + B * ldv + B * ldp + 3 * B;
    case KV_BWD_KV: return B * ldk + B * ldv + B * ldk + B * ldv + 2 * B * ldp + 3 * B;
    case REL_FWD: return 2 * B + 2 * B * ldk + B * ldk + B * ldv + NR * ldk + B * ldp + 2 * B;
    case REL_BWD_Q: return 2 * B * ldk + B * ldv + B * ldk + B * ldv + NR * ldk + B * ldp + 2 * B;
    case REL_BWD_KV: return B * ldk + B * ldv + 2 * B * ldk + B * ldv + NR * ldk + 2 * B * ldp + 2 * B;
    case REL_BWD_R: return B * ldk + 2 * B * ldk + B * ldv + NR * ldk + NR * ldv + B * ldp + 2 * B;
    }
    return 0;
}
static size_t local_ints(attn_kind kind, size_t B)
{
    return kind <= KV_BWD_KV ? 3 * B : 3 * B + 2 * B - 1;
}
static size_t local_bytes(attn_kind kind, size_t B, size_t Dk, size_t Dv)
{
    return local_floats(kind, B, Dk, Dv) * sizeof(float) + local_ints(kind, B) * sizeof(int);
}

/* The kernel's own __local bytes (CL_KERNEL_LOCAL_MEM_SIZE, recorded at lookup). */
static size_t static_local(mcl_ocl *o, cl_kernel k)
{
    for (int i = 0; i < o->n_kernels; i++)
        if (o->kernels[i].k == k) return o->kernels[i].local_static;
    return 0;
}

/* A launch plan: NT items per group, blocks and tiles of BT rows. */
typedef struct attn_plan {
    size_t NT, BT;
} attn_plan;

/* Look up kernel `name` and plan its launch; refused (MCL_ERR_UNSUPPORTED, naming the op,
 * the shape and the limit) when heads of Dk, Dv columns are wider than ATTN_MAXC·NT or one
 * row per tile does not fit the device's __local memory. */
static cl_kernel plan_kernel(mcl_backend *be, const char *op, const char *dir, const char *name,
                             attn_kind kind, const char *tname, const mcl_tensor *t, int64_t Dk,
                             int64_t Dv, attn_plan *pl)
{
    mcl_ocl *o = mcl_ocl_of(be);
    size_t wg_max;
    cl_kernel k = mcl_ocl_kernel(be, name, &wg_max);
    if (!k) return NULL;
    const int64_t D = Dk > Dv ? Dk : Dv;
    size_t NT = 64;
    while (NT > wg_max && NT > 1) NT >>= 1;
    char sb[64];
    if ((int64_t)NT * ATTN_MAXC < D) {
        mcl_ctx_set_error(be->ctx, MCL_ERR_UNSUPPORTED,
                          "OpenCL: %s %s (%s %s): head size %lld exceeds %d x %zu = %zu, the widest "
                          "kernel %s takes with work-groups of %zu items (its limit on %s: "
                          "CL_KERNEL_WORK_GROUP_SIZE %zu); use smaller heads or the reference "
                          "backend",
                          op, dir, tname, mcl_shape_str(t, sb, sizeof sb), (long long)D, ATTN_MAXC, NT,
                          (size_t)ATTN_MAXC * NT, name, NT, o->device_name, wg_max);
        return NULL;
    }
    const size_t st = static_local(o, k), avail = o->local_mem > st ? o->local_mem - st : 0;
    size_t BT = ATTN_BT < NT ? ATTN_BT : NT;
    while (BT > 1 && ((int64_t)BT * D > (int64_t)NT * ATTN_MAXC ||
                      local_bytes(kind, BT, (size_t)Dk, (size_t)Dv) > avail))
        BT >>= 1;
    if (local_bytes(kind, BT, (size_t)Dk, (size_t)Dv) > avail) {
        mcl_ctx_set_error(be->ctx, MCL_ERR_UNSUPPORTED,
                          "OpenCL: %s %s (%s %s): kernel %s needs %zu bytes of __local memory for "
                          "tiles of one row (head sizes %lld, %lld), more than the %zu bytes "
                          "(CL_DEVICE_LOCAL_MEM_SIZE less the kernel's own) of %s; use smaller "
                          "heads or the reference backend",
                          op, dir, tname, mcl_shape_str(t, sb, sizeof sb), name,
                          local_bytes(kind, 1, (size_t)Dk, (size_t)Dv), (long long)Dk, (long long)Dv,
                          avail, o->device_name);
        return NULL;
    }
    pl->NT = NT;
    pl->BT = BT;
    return k;
}

/* The kernels index with 32-bit ints: every tensor of the op must have fewer than 2^31
 * elements (and every row count times the head size stays below that). */
static int check_int_sizes(mcl_backend *be, const char *op, const mcl_op_args *a, int nin)
{
    for (int j = 0; j < nin; j++)
        if (mcl_tensor_numel(a->in[j]) > INT_MAX) {
            char sb[64];
            mcl_ctx_set_error(be->ctx, MCL_ERR_UNSUPPORTED,
                              "OpenCL: %s: input %d %s has %lld elements; the attention kernels "
                              "index with 32-bit integers (at most %d); use the reference backend",
                              op, j, mcl_shape_str(a->in[j], sb, sizeof sb),
                              (long long)mcl_tensor_numel(a->in[j]), INT_MAX);
            return 0;
        }
    return 1;
}

/* The __local arguments lf, li of a plan (after the kernel's other arguments). */
static int local_args(mcl_backend *be, cl_kernel k, int i, attn_kind kind, const attn_plan *pl,
                      int64_t Dk, int64_t Dv)
{
    i = mcl_ocl_arg_local(be, k, i, local_floats(kind, pl->BT, (size_t)Dk, (size_t)Dv) * sizeof(float));
    return mcl_ocl_arg_local(be, k, i, local_ints(kind, pl->BT) * sizeof(int));
}

/* D_r = go_r · o_r of the `rows` rows of o [.., Dv] into the scratch buffer (returned). */
static cl_mem row_dots(mcl_backend *be, const char *op, const mcl_tensor *go, const mcl_tensor *o)
{
    const int64_t rows = mcl_ocl_rows(o), Dv = mcl_ocl_cols(o);
    cl_mem Dr = mcl_ocl_scratch(be, (size_t)rows * sizeof(float));
    if (!Dr) return NULL;
    cl_kernel k = mcl_ocl_kernel(be, "attn_row_dot", NULL);
    if (!k) return NULL;
    int i = mcl_ocl_arg_tensor(be, k, 0, go);
    i = mcl_ocl_arg_tensor(be, k, i, o);
    i = mcl_ocl_arg_mem(be, k, i, Dr);
    i = mcl_ocl_arg_int(be, k, i, (int)rows);
    i = mcl_ocl_arg_int(be, k, i, (int)Dv);
    char wb[160];
    mcl_ocl_what_op(wb, sizeof wb, op, "backward", "attn_row_dot", "o", o);
    return mcl_ocl_launch(be, k, i, rows, wb) == MCL_OK ? Dr : NULL;
}

/* The geometry arguments of the attn_kv kernels (ATTN_GEOM_ARGS in the .cl file). */
static int geom_args(mcl_backend *be, cl_kernel k, int i, const mcl_op_args *a, const attn_plan *pl)
{
    const mcl_tensor *q = a->in[0], *kk = a->in[1], *v = a->in[2], *kb = a->in[3];
    i = mcl_ocl_arg_int(be, k, i, (int)q->shape[0]);
    i = mcl_ocl_arg_int(be, k, i, (int)q->shape[1]);
    i = mcl_ocl_arg_int(be, k, i, (int)kk->shape[1]);
    i = mcl_ocl_arg_int(be, k, i, (int)q->shape[2]);
    i = mcl_ocl_arg_int(be, k, i, (int)v->shape[2]);
    i = mcl_ocl_arg_int(be, k, i, (int)kb->shape[0]);
    i = mcl_ocl_arg_int(be, k, i, (int)a->p.i[0]);
    i = mcl_ocl_arg_int(be, k, i, (int)a->p.i[1]);
    i = mcl_ocl_arg_int(be, k, i, (int)a->p.i[2]);
    i = mcl_ocl_arg_float(be, k, i, a->p.f[0]);
    i = mcl_ocl_arg_float(be, k, i, a->p.f[1]);
    i = mcl_ocl_arg_int(be, k, i, (int)pl->BT);
    return mcl_ocl_arg_int(be, k, i, (int)pl->BT);
}

static cl_kernel attn_kernel(mcl_backend *be, const mcl_op_args *a, const char *name,
                             attn_kind kind, attn_plan *pl)
{
    if (!check_int_sizes(be, "attn_kv", a, 5)) return NULL;
    return plan_kernel(be, "attn_kv", kind == KV_FWD ? "forward" : "backward", name, kind, "q",
                       a->in[0], a->in[0]->shape[2], a->in[2]->shape[2], pl);
}

/* Work-groups of a kernel: blocks of BT rows per key head (Hk · ceil(rows / BT)). */
static size_t n_blocks(int64_t heads, int64_t rows, size_t BT)
{
    return (size_t)heads * (size_t)((rows + (int64_t)BT - 1) / (int64_t)BT);
}

/* forward: lse = log Σ exp(s), o = Σ m p v (src/ref/attention.c) */
mcl_status mcl_ocl_attn_kv_fwd(mcl_backend *be, const mcl_op_args *a)
{
    attn_plan pl;
    cl_kernel k = attn_kernel(be, a, "attn_kv_fwd", KV_FWD, &pl);
    if (!k) return mcl_ocl_recorded(be);
    const int64_t S = a->in[0]->shape[0], Hq = a->in[0]->shape[1], Hk = a->in[1]->shape[1];
    int i = 0;
    for (int j = 0; j < 5; j++) i = mcl_ocl_arg_tensor(be, k, i, a->in[j]);
    i = mcl_ocl_arg_tensor(be, k, i, a->out[0]);
    i = mcl_ocl_arg_tensor(be, k, i, a->out[1]);
    i = geom_args(be, k, i, a, &pl);
    i = local_args(be, k, i, KV_FWD, &pl, a->in[0]->shape[2], a->in[2]->shape[2]);
    char wb[160];
    mcl_ocl_what_op(wb, sizeof wb, "attn_kv", "forward", "attn_kv_fwd", "q", a->in[0]);
    return mcl_ocl_launch_groups(be, k, i, n_blocks(Hk, S * (Hq / Hk), pl.BT), pl.NT, wb);
}

/* backward: D = go·o per query row, then gq (per block of query rows), then gk and gv (per
 * block of chunk key rows) */
mcl_status mcl_ocl_attn_kv_bwd(mcl_backend *be, const mcl_op_args *a)
{
    char wb[160];
    attn_plan pl;
    mcl_status s = MCL_OK;
    const int64_t S = a->in[0]->shape[0], Hq = a->in[0]->shape[1], Hk = a->in[1]->shape[1];
    const int64_t Dk = a->in[0]->shape[2], Dv = a->in[2]->shape[2];
    if (!a->gin[0] && !a->gin[1] && !a->gin[2]) return MCL_OK;
    if (!check_int_sizes(be, "attn_kv", a, 5)) return mcl_ocl_recorded(be);
    cl_mem Dr = row_dots(be, "attn_kv", a->gout[0], a->out[0]);
    if (!Dr) return mcl_ocl_recorded(be);
    if (a->gin[0]) {
        cl_kernel k = attn_kernel(be, a, "attn_kv_bwd_q", KV_BWD_Q, &pl);
        if (!k) return mcl_ocl_recorded(be);
        int i = 0;
        for (int j = 0; j < 5; j++) i = mcl_ocl_arg_tensor(be, k, i, a->in[j]);
        i = mcl_ocl_arg_tensor(be, k, i, a->out[1]);
        i = mcl_ocl_arg_tensor(be, k, i, a->gout[0]);
        i = mcl_ocl_arg_mem(be, k, i, Dr);
        i = mcl_ocl_arg_tensor(be, k, i, a->gin[0]);
        i = geom_args(be, k, i, a, &pl);
        i = local_args(be, k, i, KV_BWD_Q, &pl, Dk, Dv);
        mcl_ocl_what_op(wb, sizeof wb, "attn_kv", "backward", "attn_kv_bwd_q", "q", a->in[0]);
        s = mcl_ocl_launch_groups(be, k, i, n_blocks(Hk, S * (Hq / Hk), pl.BT), pl.NT, wb);
        if (s != MCL_OK) return s;
    }
    if (a->gin[1] || a->gin[2]) {
        cl_kernel k = attn_kernel(be, a, "attn_kv_bwd_kv", KV_BWD_KV, &pl);
        if (!k) return mcl_ocl_recorded(be);
        int i = 0;
        for (int j = 0; j < 3; j++) i = mcl_ocl_arg_tensor(be, k, i, a->in[j]);
        i = mcl_ocl_arg_tensor(be, k, i, a->out[1]);
        i = mcl_ocl_arg_tensor(be, k, i, a->gout[0]);
        i = mcl_ocl_arg_mem(be, k, i, Dr);
        i = mcl_ocl_arg_tensor(be, k, i, a->gin[1] ? a->gin[1] : a->in[1]);
        i = mcl_ocl_arg_tensor(be, k, i, a->gin[2] ? a->gin[2] : a->in[2]);
        i = mcl_ocl_arg_int(be, k, i, a->gin[1] != NULL);
        i = mcl_ocl_arg_int(be, k, i, a->gin[2] != NULL);
        i = geom_args(be, k, i, a, &pl);
        i = local_args(be, k, i, KV_BWD_KV, &pl, Dk, Dv);
        mcl_ocl_what_op(wb, sizeof wb, "attn_kv", "backward", "attn_kv_bwd_kv", "k", a->in[1]);
        s = mcl_ocl_launch_groups(be, k, i, n_blocks(Hk, S, pl.BT), pl.NT, wb);
    }
    return s;
}

/* kv_push: buf[(pos + r) mod C] = x[S - m + r], r < m = min(S, C) */
mcl_status mcl_ocl_kv_push_fwd(mcl_backend *be, const mcl_op_args *a)
{
    const mcl_tensor *buf = a->in[0], *x = a->in[1];
    const int64_t C = buf->shape[0], S = x->shape[0], row = buf->shape[1] * buf->shape[2];
    const int64_t m = S < C ? S : C;
    if (!check_int_sizes(be, "kv_push", a, 2)) return mcl_ocl_recorded(be);
    cl_kernel k = mcl_ocl_kernel(be, "kv_push", NULL);
    if (!k) return mcl_ocl_recorded(be);
    if (m == 0) return MCL_OK;
    const int64_t pos = ((a->p.i[0] % C) + C) % C; /* the kernel wraps pos + r < 2C itself */
    int i = mcl_ocl_arg_tensor(be, k, 0, buf);
    i = mcl_ocl_arg_tensor(be, k, i, x);
    i = mcl_ocl_arg_int(be, k, i, (int)C);
    i = mcl_ocl_arg_int(be, k, i, (int)S);
    i = mcl_ocl_arg_int(be, k, i, (int)row);
    i = mcl_ocl_arg_int(be, k, i, (int)pos);
    i = mcl_ocl_arg_int(be, k, i, (int)(m * row));
    char wb[160];
    mcl_ocl_what_op(wb, sizeof wb, "kv_push", "forward", "kv_push", "x", x);
    return mcl_ocl_launch(be, k, i, m * row, wb);
}

/* ------------------------------------------------------------------------------------ */
/* rel_attn (Transformer-XL relative-position attention): blocks of query rows of one (b, h)
 * (forward; dqc and dqp), of key rows (dk, dv) and of distance rows of one head (dr); plans
 * as attn_kv's. */

/* The geometry arguments of the rel_attn kernels (REL_GEOM_ARGS in the .cl file). */
static int rel_geom_args(mcl_backend *be, cl_kernel k, int i, const mcl_op_args *a,
                         const attn_plan *pl)
{
    const mcl_tensor *qc = a->in[0], *kk = a->in[2], *v = a->in[3];
    i = mcl_ocl_arg_int(be, k, i, (int)qc->shape[0]);
    i = mcl_ocl_arg_int(be, k, i, (int)qc->shape[1]);
    i = mcl_ocl_arg_int(be, k, i, (int)qc->shape[2]);
    i = mcl_ocl_arg_int(be, k, i, (int)qc->shape[3]);
    i = mcl_ocl_arg_int(be, k, i, (int)v->shape[3]);
    i = mcl_ocl_arg_int(be, k, i, (int)kk->shape[1]);
    i = mcl_ocl_arg_int(be, k, i, (int)a->p.i[0]);
    i = mcl_ocl_arg_float(be, k, i, a->p.f[0]);
    i = mcl_ocl_arg_int(be, k, i, (int)pl->BT);
    return mcl_ocl_arg_int(be, k, i, (int)pl->BT);
}

/* Look up a rel_attn kernel and plan it; refused when the heads are too wide. */
static cl_kernel rel_kernel(mcl_backend *be, const mcl_op_args *a, const char *name,
                            attn_kind kind, attn_plan *pl)
{
    if (!check_int_sizes(be, "rel_attn", a, 5)) return NULL;
    return plan_kernel(be, "rel_attn", kind == REL_FWD ? "forward" : "backward", name, kind, "qc",
                       a->in[0], a->in[0]->shape[3], a->in[3]->shape[3], pl);
}

/* The five inputs, lse, gout and the row dots Dr: the first arguments of every backward
 * kernel. */
static int rel_bwd_head(mcl_backend *be, cl_kernel k, const mcl_op_args *a, cl_mem Dr)
{
    int i = 0;
    for (int j = 0; j < 5; j++) i = mcl_ocl_arg_tensor(be, k, i, a->in[j]);
    i = mcl_ocl_arg_tensor(be, k, i, a->out[1]);
    i = mcl_ocl_arg_tensor(be, k, i, a->gout[0]);
    return mcl_ocl_arg_mem(be, k, i, Dr);
}

/* forward: lse = log Σ exp(s), o = Σ p v (src/ref/attention.c, rel_attn) */
mcl_status mcl_ocl_rel_attn_fwd(mcl_backend *be, const mcl_op_args *a)
{
    attn_plan pl;
    cl_kernel k = rel_kernel(be, a, "rel_attn_fwd", REL_FWD, &pl);
    if (!k) return mcl_ocl_recorded(be);
    const mcl_tensor *qc = a->in[0];
    int i = 0;
    for (int j = 0; j < 5; j++) i = mcl_ocl_arg_tensor(be, k, i, a->in[j]);
    i = mcl_ocl_arg_tensor(be, k, i, a->out[0]);
    i = mcl_ocl_arg_tensor(be, k, i, a->out[1]);
    i = rel_geom_args(be, k, i, a, &pl);
    i = local_args(be, k, i, REL_FWD, &pl, qc->shape[3], a->in[3]->shape[3]);
    char wb[160];
    mcl_ocl_what_op(wb, sizeof wb, "rel_attn", "forward", "rel_attn_fwd", "qc", qc);
    const size_t groups = n_blocks(qc->shape[0] * qc->shape[2], qc->shape[1], pl.BT);
    return mcl_ocl_launch_groups(be, k, i, groups, pl.NT, wb);
}

/* backward: D = go·o per query row, then gqc and gqp (per block of query rows), gk and gv
 * (per block of key rows), gr (per block of distance rows) */
mcl_status mcl_ocl_rel_attn_bwd(mcl_backend *be, const mcl_op_args *a)
{
    char wb[160];
    attn_plan pl;
    mcl_status s = MCL_OK;
    const mcl_tensor *qc = a->in[0];
    const int64_t B = qc->shape[0], S = qc->shape[1], H = qc->shape[2], D = qc->shape[3];
    const int64_t Dv = a->in[3]->shape[3], T = a->in[2]->shape[1];
    if (!a->gin[0] && !a->gin[1] && !a->gin[2] && !a->gin[3] && !a->gin[4]) return MCL_OK;
    if (!check_int_sizes(be, "rel_attn", a, 5)) return mcl_ocl_recorded(be);
    cl_mem Dr = row_dots(be, "rel_attn", a->gout[0], a->out[0]);
    if (!Dr) return mcl_ocl_recorded(be);
    if (a->gin[0] || a->gin[1]) {
        cl_kernel k = rel_kernel(be, a, "rel_attn_bwd_q", REL_BWD_Q, &pl);
        if (!k) return mcl_ocl_recorded(be);
        int i = rel_bwd_head(be, k, a, Dr);
        i = mcl_ocl_arg_tensor(be, k, i, a->gin[0] ? a->gin[0] : a->in[0]);
        i = mcl_ocl_arg_tensor(be, k, i, a->gin[1] ? a->gin[1] : a->in[1]);
        i = mcl_ocl_arg_int(be, k, i, a->gin[0] != NULL);
        i = mcl_ocl_arg_int(be, k, i, a->gin[1] != NULL);
        i = rel_geom_args(be, k, i, a, &pl);
        i = local_args(be, k, i, REL_BWD_Q, &pl, D, Dv);
        mcl_ocl_what_op(wb, sizeof wb, "rel_attn", "backward", "rel_attn_bwd_q", "qc", qc);
        s = mcl_ocl_launch_groups(be, k, i, n_blocks(B * H, S, pl.BT), pl.NT, wb);
        if (s != MCL_OK) return s;
    }
    if (a->gin[2] || a->gin[3]) {
        cl_kernel k = rel_kernel(be, a, "rel_attn_bwd_kv", REL_BWD_KV, &pl);
        if (!k) return mcl_ocl_recorded(be);
        int i = rel_bwd_head(be, k, a, Dr);
        i = mcl_ocl_arg_tensor(be, k, i, a->gin[2] ? a->gin[2] : a->in[2]);
        i = mcl_ocl_arg_tensor(be, k, i, a->gin[3] ? a->gin[3] : a->in[3]);
        i = mcl_ocl_arg_int(be, k, i, a->gin[2] != NULL);
        i = mcl_ocl_arg_int(be, k, i, a->gin[3] != NULL);
        i = rel_geom_args(be, k, i, a, &pl);
        i = local_args(be, k, i, REL_BWD_KV, &pl, D, Dv);
        mcl_ocl_what_op(wb, sizeof wb, "rel_attn", "backward", "rel_attn_bwd_kv", "k", a->in[2]);
        s = mcl_ocl_launch_groups(be, k, i, n_blocks(B * H, T, pl.BT), pl.NT, wb);
        if (s != MCL_OK) return s;
    }
    if (a->gin[4]) {
        cl_kernel k = rel_kernel(be, a, "rel_attn_bwd_r", REL_BWD_R, &pl);
        if (!k) return mcl_ocl_recorded(be);
        int i = rel_bwd_head(be, k, a, Dr);
        i = mcl_ocl_arg_tensor(be, k, i, a->gin[4]);
        i = rel_geom_args(be, k, i, a, &pl);
        i = local_args(be, k, i, REL_BWD_R, &pl, D, Dv);
        mcl_ocl_what_op(wb, sizeof wb, "rel_attn", "backward", "rel_attn_bwd_r", "r", a->in[4]);
        s = mcl_ocl_launch_groups(be, k, i, n_blocks(H, T, pl.BT), pl.NT, wb);
    }
    return s;
}
