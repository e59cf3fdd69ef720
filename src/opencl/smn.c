/* smn.c — OpenCL host glue of the Sparse Meta Networks ops: grad_preproc and smn_write.
 * Kernels: kernels/smn.cl; equations and semantics: src/ref/smn.c.
 *
 * grad_preproc: one launch, one work-item per element; thr = e^-P and ep = e^P are computed
 * here once in float with the reference's helper (mcl_grad_preproc_consts, backend.h), so the
 * kernels use the same two floats as the reference.
 *
 * smn_write forward: M = M0 (copy_fwd), then one work-item per entry writes g_phi(zs_e) at
 * idx_e. Backward: per-entry rows of h1, h2 and the deltas (float pairs) in the backend's
 * scratch buffer (m · (6H + 2) floats), then one work-group per phi element reduces over the
 * entries in a fixed order (kernels/smn.cl). Entries whose index is not an integer in [0, n) are skipped by
 * every kernel: nothing is read or written out of bounds whatever idx holds.
 */
#include "ocl.h"

/* ------------------------------------------------------------------------------------ */
/* grad_preproc */

/* kname over the elements of z: (z, [gout,] dst, P, thr, ep, n) */
static mcl_status gp_launch(mcl_backend *be, const mcl_op_args *a, const char *kname,
                            const mcl_tensor *g, const mcl_tensor *dst, const char *dir)
{
    const float P = a->p.f[0];
    float thr, ep;
    mcl_grad_preproc_consts(P, &thr, &ep);
    const int64_t n = mcl_tensor_numel(a->in[0]);
    cl_kernel k = mcl_ocl_kernel(be, kname, NULL);
    int i = k ? 0 : -1;
    i = mcl_ocl_arg_tensor(be, k, i, a->in[0]);
    if (g) i = mcl_ocl_arg_tensor(be, k, i, g);
    i = mcl_ocl_arg_tensor(be, k, i, dst);
    i = mcl_ocl_arg_float(be, k, i, P);
    i = mcl_ocl_arg_float(be, k, i, thr);
    i = mcl_ocl_arg_float(be, k, i, ep);
    i = mcl_ocl_arg_long(be, k, i, n);
    char wb[160];
    mcl_ocl_what_op(wb, sizeof wb, "grad_preproc", dir, kname, "z", a->in[0]);
    return mcl_ocl_launch(be, k, i, n, wb);
}

/* forward: out[..,0] = |z| >= thr ? log|z| / P : -1;  out[..,1] = |z| >= thr ? sign z : ep·z
 * z [any] -> out [shape of z, 2] */
mcl_status mcl_ocl_grad_preproc_fwd(mcl_backend *be, const mcl_op_args *a)
{
    return gp_launch(be, a, "grad_preproc_fwd", NULL, a->out[0], "forward");
}

/* backward: gz += |z| >= thr ? g0 / (P·z) : g1·ep
 * gout [shape of z, 2];  gin[0] [shape of z] (or NULL) */
mcl_status mcl_ocl_grad_preproc_bwd(mcl_backend *be, const mcl_op_args *a)
{
    if (!a->gin[0]) return MCL_OK;
    return gp_launch(be, a, "grad_preproc_bwd", a->gout[0], a->gin[0], "backward");
}

/* ------------------------------------------------------------------------------------ */
/* smn_write */

/* The six phi tensors in[3..8] as kernel arguments (SMN_PHI_ARGS in the .cl file). */
static int phi_args(mcl_backend *be, cl_kernel k, int i, const mcl_op_args *a)
{
    for (int j = 3; j < 9; j++) i = mcl_ocl_arg_tensor(be, k, i, a->in[j]);
    return i;
}

/* forward: M = M0;  M[idx_e] = W3 lrelu(W2 lrelu(W1 zs_e + b1) + b2) + b3
 * M0 [any], idx [m], zs [m,2], W1 [H,2], b1 [H], W2 [H,H], b2 [H], W3 [1,H], b3 [1] -> M [shape of M0] */
mcl_status mcl_ocl_smn_write_fwd(mcl_backend *be, const mcl_op_args *a)
{
    const int64_t n = mcl_tensor_numel(a->in[0]), m = a->in[1]->shape[0], H = a->in[3]->shape[0];
    char wb[160];
    const int in_place = a->out[0]->buf == a->in[0]->buf && a->out[0]->offset == a->in[0]->offset;
    mcl_status s = in_place ? MCL_OK /* out[0] is M0 itself (ops.def): no copy */
                            : mcl_ocl_launch_unary(be, "copy_fwd", a->in[0], a->out[0],
                                                   mcl_ocl_what_op(wb, sizeof wb, "smn_write", "forward",
                                                                   "copy_fwd", "M0", a->in[0]));
    if (s != MCL_OK) return s;
    cl_kernel k = mcl_ocl_kernel(be, "smn_write_fwd", NULL);
    int i = k ? 0 : -1;
    i = mcl_ocl_arg_tensor(be, k, i, a->in[1]);
    i = mcl_ocl_arg_tensor(be, k, i, a->in[2]);
    i = phi_args(be, k, i, a);
    i = mcl_ocl_arg_tensor(be, k, i, a->out[0]);
    i = mcl_ocl_arg_long(be, k, i, n);
    i = mcl_ocl_arg_long(be, k, i, m);
    i = mcl_ocl_arg_long(be, k, i, H);
    i = mcl_ocl_arg_float(be, k, i, a->p.f[0]);
    mcl_ocl_what_op(wb, sizeof wb, "smn_write", "forward", "smn_write_fwd", "idx", a->in[1]);
    return mcl_ocl_launch(be, k, i, m, wb);
}

/* smn_write_eff: M[idx_e] = v_e, E[idx_e] = W[idx_e] + v_e (v_e smn_write's value), in place
 * M [any], idx [m], zs [m,2], phi (as smn_write), W [shape of M], E [shape of M]: one launch */
mcl_status mcl_ocl_smn_write_eff_fwd(mcl_backend *be, const mcl_op_args *a)
{
    const int64_t n = mcl_tensor_numel(a->in[0]), m = a->in[1]->shape[0], H = a->in[3]->shape[0];
    char wb[160];
    cl_kernel k = mcl_ocl_kernel(be, "smn_write_eff", NULL);
    int i = k ? 0 : -1;
    i = mcl_ocl_arg_tensor(be, k, i, a->in[1]);
    i = mcl_ocl_arg_tensor(be, k, i, a->in[2]);
    i = phi_args(be, k, i, a);
    i = mcl_ocl_arg_tensor(be, k, i, a->in[0]);
    i = mcl_ocl_arg_tensor(be, k, i, a->in[9]);
    i = mcl_ocl_arg_tensor(be, k, i, a->in[10]);
    i = mcl_ocl_arg_long(be, k, i, n);
    i = mcl_ocl_arg_long(be, k, i, m);
    i = mcl_ocl_arg_long(be, k, i, H);
    i = mcl_ocl_arg_float(be, k, i, a->p.f[0]);
    mcl_ocl_what_op(wb, sizeof wb, "smn_write_eff", "forward", "smn_write_eff", "idx", a->in[1]);
    return mcl_ocl_launch(be, k, i, m, wb);
}

/* Whether two of the wanted phi gradients gin[3..8] share elements of one buffer. */
static int phi_grads_overlap(const mcl_op_args *a)
{
    for (int j = 3; j < 9; j++)
        for (int l = j + 1; l < 9; l++) {
            const mcl_tensor *x = a->gin[j], *y = a->gin[l];
            if (x && y && x->buf == y->buf && x->offset < y->offset + mcl_tensor_numel(y) &&
                y->offset < x->offset + mcl_tensor_numel(x))
                return 1;
        }
    return 0;
}

/* Backward step 4 for the phi gradients in the bit mask `kinds` (bit k: gin[3 + k]), one
 * launch: one work-group per element of each, a fixed reduction over the m entries' rows
 * (a tensor not in the mask: 0 groups, the scratch as a placeholder argument). */
static mcl_status phi_grads(mcl_backend *be, const mcl_op_args *a, cl_mem rows, int64_t m, int64_t H,
                            unsigned kinds)
{
    char wb[160];
    size_t wg_max = 1, groups = 0;
    cl_kernel k = mcl_ocl_kernel(be, "smn_write_bwd_phi", &wg_max);
    const size_t W = mcl_ocl_row_wg(wg_max, m);
    int i = k ? 0 : -1;
    i = mcl_ocl_arg_mem(be, k, i, rows);
    i = mcl_ocl_arg_tensor(be, k, i, a->in[2]);
    for (int kind = 0; kind < 6; kind++) {
        if ((kinds >> kind) & 1u) {
            i = mcl_ocl_arg_tensor(be, k, i, a->gin[3 + kind]);
        } else {
            i = mcl_ocl_arg_mem(be, k, i, rows);
            i = mcl_ocl_arg_long(be, k, i, 0);
        }
    }
    for (int kind = 0; kind < 6; kind++) {
        const int64_t nk = (kinds >> kind) & 1u ? mcl_tensor_numel(a->gin[3 + kind]) : 0;
        i = mcl_ocl_arg_long(be, k, i, nk);
        groups += (size_t)nk;
    }
    i = mcl_ocl_arg_long(be, k, i, m);
    i = mcl_ocl_arg_long(be, k, i, H);
    /* __local: W float2 = 8·W bytes (2 KiB at W = 256) */
    i = mcl_ocl_arg_local(be, k, i, W * 2 * sizeof(float));
    if (groups == 0) return i < 0 ? mcl_ocl_recorded(be) : MCL_OK;
    mcl_ocl_what_op(wb, sizeof wb, "smn_write", "backward", "smn_write_bwd_phi", "phi", a->in[3]);
    return mcl_ocl_launch_groups(be, k, i, groups, W, wb);
}

/* backward: gM0 += gM except at the written elements; gzs_e += W1ᵀ d1_e; the phi gradients as
 * sums over the entries (src/ref/smn.c). gout[0] [shape of M0]; gin[0] [shape of M0], gin[2]
 * [m,2], gin[3..8] like phi (each may be NULL; gin[1] is never written). */
mcl_status mcl_ocl_smn_write_bwd(mcl_backend *be, const mcl_op_args *a)
{
    const int64_t n = mcl_tensor_numel(a->in[0]), m = a->in[1]->shape[0], H = a->in[3]->shape[0];
    int want_mlp = a->gin[2] != NULL;
    for (int j = 3; j < 9; j++) want_mlp |= a->gin[j] != NULL;
    if (!a->gin[0] && !want_mlp) return MCL_OK;
    char wb[160];
    mcl_status s;
    const size_t row = (size_t)(6 * H + 2); /* SMN_ROW in kernels/smn.cl */
    cl_mem rows = mcl_ocl_scratch(be, (size_t)m * row * sizeof(float));
    if (!rows) return mcl_ocl_recorded(be);

    /* 1. the rows: g, gM0's value at the element, h2, d2 (pairs), h1, d1 (pairs) */
    cl_kernel k = mcl_ocl_kernel(be, "smn_write_bwd_entry", NULL);
    int i = k ? 0 : -1;
    i = mcl_ocl_arg_tensor(be, k, i, a->in[1]);
    i = mcl_ocl_arg_tensor(be, k, i, a->in[2]);
    i = phi_args(be, k, i, a);
    i = mcl_ocl_arg_tensor(be, k, i, a->gout[0]);
    i = mcl_ocl_arg_tensor(be, k, i, a->gin[0] ? a->gin[0] : a->gout[0]);
    i = mcl_ocl_arg_mem(be, k, i, rows);
    i = mcl_ocl_arg_long(be, k, i, n);
    i = mcl_ocl_arg_long(be, k, i, m);
    i = mcl_ocl_arg_long(be, k, i, H);
    i = mcl_ocl_arg_float(be, k, i, a->p.f[0]);
    i = mcl_ocl_arg_int(be, k, i, a->gin[0] != NULL);
    i = mcl_ocl_arg_int(be, k, i, want_mlp);
    mcl_ocl_what_op(wb, sizeof wb, "smn_write", "backward", "smn_write_bwd_entry", "idx", a->in[1]);
    if ((s = mcl_ocl_launch(be, k, i, m, wb)) != MCL_OK) return s;

    /* 2. gM0 += gM everywhere, then the written elements back to what they were */
    if (a->gin[0]) {
        mcl_ocl_what_op(wb, sizeof wb, "smn_write", "backward", "copy_bwd", "M0", a->in[0]);
        if ((s = mcl_ocl_launch_unary(be, "copy_bwd", a->gout[0], a->gin[0], wb)) != MCL_OK) return s;
        k = mcl_ocl_kernel(be, "smn_write_bwd_restore", NULL);
        i = k ? 0 : -1;
        i = mcl_ocl_arg_tensor(be, k, i, a->in[1]);
        i = mcl_ocl_arg_mem(be, k, i, rows);
        i = mcl_ocl_arg_tensor(be, k, i, a->gin[0]);
        i = mcl_ocl_arg_long(be, k, i, n);
        i = mcl_ocl_arg_long(be, k, i, m);
        i = mcl_ocl_arg_long(be, k, i, H);
        mcl_ocl_what_op(wb, sizeof wb, "smn_write", "backward", "smn_write_bwd_restore", "idx", a->in[1]);
        if ((s = mcl_ocl_launch(be, k, i, m, wb)) != MCL_OK) return s;
    }

    /* 3. gzs_e += W1ᵀ d1_e */
    if (a->gin[2]) {
        k = mcl_ocl_kernel(be, "smn_write_bwd_zs", NULL);
        i = k ? 0 : -1;
        i = mcl_ocl_arg_tensor(be, k, i, a->in[3]);
        i = mcl_ocl_arg_mem(be, k, i, rows);
        i = mcl_ocl_arg_tensor(be, k, i, a->gin[2]);
        i = mcl_ocl_arg_long(be, k, i, m);
        i = mcl_ocl_arg_long(be, k, i, H);
        mcl_ocl_what_op(wb, sizeof wb, "smn_write", "backward", "smn_write_bwd_zs", "zs", a->in[2]);
        if ((s = mcl_ocl_launch(be, k, i, m, wb)) != MCL_OK) return s;
    }

    /* 4. the wanted phi gradients: one launch, or one each when two of them share memory
     * (the groups of one launch run concurrently) */
    unsigned wanted = 0;
    for (int kind = 0; kind < 6; kind++) wanted |= a->gin[3 + kind] ? 1u << kind : 0u;
    if (!phi_grads_overlap(a)) return phi_grads(be, a, rows, m, H, wanted);
    for (int kind = 0; kind < 6; kind++)
        if ((wanted >> kind) & 1u && (s = phi_grads(be, a, rows, m, H, 1u << kind)) != MCL_OK) return s;
    return MCL_OK;
}

/* wcst_act (ops.def; src/ref/smn.c): the WCST agent's episode in place, one work-item over the
 *   state [S], logits [L,A], cards [L,3], act [L] (written), reward [L] (written). */
mcl_status mcl_ocl_wcst_act_fwd(mcl_backend *be, const mcl_op_args *a)
{
    cl_kernel k = mcl_ocl_kernel(be, "wcst_act", NULL);
    int i = k ? 0 : -1;
    for (int j = 0; j < 5; j++) i = mcl_ocl_arg_tensor(be, k, i, a->in[j]);
    i = mcl_ocl_arg_int(be, k, i, (int)a->in[0]->shape[0]);
    i = mcl_ocl_arg_int(be, k, i, (int)a->in[1]->shape[0]);
    i = mcl_ocl_arg_int(be, k, i, (int)a->in[1]->shape[1]);
    i = mcl_ocl_arg_ulong(be, k, i, a->p.u[0]);
    i = mcl_ocl_arg_ulong(be, k, i, a->p.u[1]);
    i = mcl_ocl_arg_ulong(be, k, i, a->p.u[2]);
    i = mcl_ocl_arg_int(be, k, i, (int)a->p.i[0]);
    i = mcl_ocl_arg_float(be, k, i, a->p.f[0]);
    i = mcl_ocl_arg_float(be, k, i, a->p.f[1]);
    char wb[160];
    mcl_ocl_what_op(wb, sizeof wb, "wcst_act", "forward", "wcst_act", "logits", a->in[1]);
    return mcl_ocl_launch(be, k, i, 1, wb);
}

/* ------------------------------------------------------------------------------------ */
/* smn_avg_z */

/* forward: I' = (gamma·I) + (beta1·G);  zs_e = grad_preproc(I'[idx_e] + (beta2·G[idx_e]))
 * I [any], G [shape of I], idx [m] -> I' [shape of I], zs [m,2]: one launch of max(n, m)
 * items when idx is non-decreasing (p.i[0] = 1: each element's item finds its entries), else
 * two (the average over every element, then one item per entry) */
mcl_status mcl_ocl_smn_avg_z_fwd(mcl_backend *be, const mcl_op_args *a)
{
    const int64_t n = mcl_tensor_numel(a->in[0]), m = a->in[2]->shape[0];
    char wb[160];
    float thr, ep;
    mcl_grad_preproc_consts(a->p.f[3], &thr, &ep);
    cl_kernel k;
    int i;
    if (a->p.i[0]) {
        k = mcl_ocl_kernel(be, "smn_avg_z_one", NULL);
        i = k ? 0 : -1;
        i = mcl_ocl_arg_tensor(be, k, i, a->in[2]);
        i = mcl_ocl_arg_tensor(be, k, i, a->in[0]);
        i = mcl_ocl_arg_tensor(be, k, i, a->in[1]);
        i = mcl_ocl_arg_tensor(be, k, i, a->out[0]);
        i = mcl_ocl_arg_tensor(be, k, i, a->out[1]);
        for (int j = 0; j < 3; j++) i = mcl_ocl_arg_float(be, k, i, a->p.f[j]);
        i = mcl_ocl_arg_float(be, k, i, a->p.f[3]);
        i = mcl_ocl_arg_float(be, k, i, thr);
        i = mcl_ocl_arg_float(be, k, i, ep);
        i = mcl_ocl_arg_long(be, k, i, n);
        i = mcl_ocl_arg_long(be, k, i, m);
        mcl_ocl_what_op(wb, sizeof wb, "smn_avg_z", "forward", "smn_avg_z_one", "I", a->in[0]);
        return mcl_ocl_launch(be, k, i, n > m ? n : m, wb);
    }
    k = mcl_ocl_kernel(be, "smn_avg_z_avg", NULL);
    i = k ? 0 : -1;
    i = mcl_ocl_arg_tensor(be, k, i, a->in[0]);
    i = mcl_ocl_arg_tensor(be, k, i, a->in[1]);
    i = mcl_ocl_arg_tensor(be, k, i, a->out[0]);
    i = mcl_ocl_arg_float(be, k, i, a->p.f[0]);
    i = mcl_ocl_arg_float(be, k, i, a->p.f[1]);
    i = mcl_ocl_arg_long(be, k, i, n);
    mcl_ocl_what_op(wb, sizeof wb, "smn_avg_z", "forward", "smn_avg_z_avg", "I", a->in[0]);
    mcl_status s = mcl_ocl_launch(be, k, i, n, wb);
    if (s != MCL_OK) return s;
    k = mcl_ocl_kernel(be, "smn_avg_z_zs", NULL);
    i = k ? 0 : -1;
    i = mcl_ocl_arg_tensor(be, k, i, a->in[2]);
    i = mcl_ocl_arg_tensor(be, k, i, a->out[0]);
    i = mcl_ocl_arg_tensor(be, k, i, a->in[1]);
    i = mcl_ocl_arg_tensor(be, k, i, a->out[1]);
    i = mcl_ocl_arg_float(be, k, i, a->p.f[2]);
    i = mcl_ocl_arg_float(be, k, i, a->p.f[3]);
    i = mcl_ocl_arg_float(be, k, i, thr);
    i = mcl_ocl_arg_float(be, k, i, ep);
    i = mcl_ocl_arg_long(be, k, i, n);
    i = mcl_ocl_arg_long(be, k, i, m);
    mcl_ocl_what_op(wb, sizeof wb, "smn_avg_z", "forward", "smn_avg_z_zs", "idx", a->in[2]);
    return mcl_ocl_launch(be, k, i, m, wb);
}

/* ------------------------------------------------------------------------------------ */
/* smn_avg_write */

/* forward, in place: I = (gamma·I) + (beta1·G);  zs_e = grad_preproc(I[idx_e] + (beta2·G[idx_e]));
 * M[idx_e] = v_e, E[idx_e] = W[idx_e] + v_e (v_e smn_write's value at zs_e)
 * M [any, numel n], idx [m] (increasing), zs [m,2], phi (as smn_write), W, E, I, G [shape of M]:
 * one launch of n items (m <= n), each element's item finding its entries */
mcl_status mcl_ocl_smn_avg_write_fwd(mcl_backend *be, const mcl_op_args *a)
{
    const int64_t n = mcl_tensor_numel(a->in[0]), m = a->in[1]->shape[0], H = a->in[3]->shape[0];
    char wb[160];
    float thr, ep;
    mcl_grad_preproc_consts(a->p.f[4], &thr, &ep);
    cl_kernel k = mcl_ocl_kernel(be, "smn_avg_write", NULL);
    int i = k ? 0 : -1;
    i = mcl_ocl_arg_tensor(be, k, i, a->in[1]);
    i = mcl_ocl_arg_tensor(be, k, i, a->in[2]);
    i = phi_args(be, k, i, a);
    i = mcl_ocl_arg_tensor(be, k, i, a->in[0]);
    i = mcl_ocl_arg_tensor(be, k, i, a->in[9]);
    i = mcl_ocl_arg_tensor(be, k, i, a->in[10]);
    i = mcl_ocl_arg_tensor(be, k, i, a->in[11]);
    i = mcl_ocl_arg_tensor(be, k, i, a->in[12]);
    for (int j = 1; j < 5; j++) i = mcl_ocl_arg_float(be, k, i, a->p.f[j]);
    i = mcl_ocl_arg_float(be, k, i, thr);
    i = mcl_ocl_arg_float(be, k, i, ep);
    i = mcl_ocl_arg_long(be, k, i, n);
    i = mcl_ocl_arg_long(be, k, i, m);
    i = mcl_ocl_arg_long(be, k, i, H);
    i = mcl_ocl_arg_float(be, k, i, a->p.f[0]);
    mcl_ocl_what_op(wb, sizeof wb, "smn_avg_write", "forward", "smn_avg_write", "M", a->in[0]);
    return mcl_ocl_launch(be, k, i, n, wb);
}

/* ------------------------------------------------------------------------------------ */
/* smn_write_add */

/* forward: out = W + M, M = M0 (i0 = 0) or 0 (i0 = 1) with M[idx_e] = g_phi(zs_e)
 * M0 [any], idx [m] (increasing), zs [m,2], phi (as smn_write), W [shape of M0] -> out
 * [shape of M0]: one launch of n items, each element's item finding its entry */
mcl_status mcl_ocl_smn_write_add_fwd(mcl_backend *be, const mcl_op_args *a)
{
    const int64_t n = mcl_tensor_numel(a->in[0]), m = a->in[1]->shape[0], H = a->in[3]->shape[0];
    char wb[160];
    cl_kernel k = mcl_ocl_kernel(be, "smn_write_add_fwd", NULL);
    int i = k ? 0 : -1;
    i = mcl_ocl_arg_tensor(be, k, i, a->in[1]);
    i = mcl_ocl_arg_tensor(be, k, i, a->in[2]);
    i = phi_args(be, k, i, a);
    i = mcl_ocl_arg_tensor(be, k, i, a->in[0]);
    i = mcl_ocl_arg_tensor(be, k, i, a->in[9]);
    i = mcl_ocl_arg_tensor(be, k, i, a->out[0]);
    i = mcl_ocl_arg_int(be, k, i, a->p.i[0] != 0);
    i = mcl_ocl_arg_long(be, k, i, n);
    i = mcl_ocl_arg_long(be, k, i, m);
    i = mcl_ocl_arg_long(be, k, i, H);
    i = mcl_ocl_arg_float(be, k, i, a->p.f[0]);
    mcl_ocl_what_op(wb, sizeof wb, "smn_write_add", "forward", "smn_write_add_fwd", "M0", a->in[0]);
    return mcl_ocl_launch(be, k, i, n, wb);
}

/* backward: gW += gout (copy_bwd, add's); then smn_write's backward with gM = gout (gM0 only
 * when i0 = 0). gout[0] [shape of M0]; gin[0] [shape of M0], gin[2] [m,2], gin[3..8] like phi,
 * gin[9] like W (each may be NULL) */
mcl_status mcl_ocl_smn_write_add_bwd(mcl_backend *be, const mcl_op_args *a)
{
    if (a->gin[9]) {
        char wb[160];
        mcl_ocl_what_op(wb, sizeof wb, "smn_write_add", "backward", "copy_bwd", "gW", a->gin[9]);
        mcl_status s = mcl_ocl_launch_unary(be, "copy_bwd", a->gout[0], a->gin[9], wb);
        if (s != MCL_OK) return s;
    }
    mcl_op_args b = *a;
    b.op = MCL_OP_SMN_WRITE;
    b.in[9] = NULL;
    b.gin[9] = NULL;
    if (a->p.i[0]) b.gin[0] = NULL;
    return mcl_ocl_smn_write_bwd(be, &b);
}
