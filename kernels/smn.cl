/* smn.cl — Sparse Meta Networks: grad_preproc and smn_write, forward and backward. Equations,
 * shapes and parameters: src/ref/smn.c (and the rows of ops.def).
 *
 * grad_preproc: one work-item per element of z; thr = e^-P and ep = e^P come from the host,
 * computed there in float as the reference computes them (the same two floats).
 *
 * smn_write: the host copies M0 into M (copy_fwd), then smn_write_fwd runs one work-item per
 * entry e and stores g_phi(zs_e) at idx_e. An index that is not an integer in [0, n) makes its
 * entry a no-op (nothing is written, nothing read out of bounds; its gradients are zero); the
 * reference refuses such an index instead (the caller's contract forbids it, ops.def). The
 * work-items keep no arrays: g_phi's hidden values are recomputed where they are needed (a1 is
 * two products), so the forward costs O(H^2) per entry like the matrix product it stands for.
 * Dot products are (hi, lo) float pairs (common.cl), close to the reference's double sums.
 *
 * Backward, in launches on the in-order queue (src/opencl/smn.c):
 *   1. smn_write_bwd_entry, one item per entry: a row of the scratch buffer,
 *        [g, saved, h2 (H), d2 (2H), h1 (H), d1 (2H)]   (SMN_ROW(H) floats)
 *      g = gM[idx_e], saved = gM0[idx_e] before the next step, h1, h2 recomputed, and the deltas
 *      d2 = g W3 ⊙ lrelu'(a2), d1 = W2ᵀ d2 ⊙ lrelu'(a1) as (hi, lo) float pairs (hi values,
 *      then lo values: the product g W3 kept exactly, the sum kept with its rounding errors),
 *      as the reference keeps them in double; a skipped entry's row is all zeros;
 *   2. gM0 += gM (copy_bwd over all of M), then smn_write_bwd_restore puts the saved values
 *      back at the written elements (exactly: no subtraction);
 *   3. smn_write_bwd_zs, one item per entry: gzs_e += W1ᵀ d1_e;
 *   4. smn_write_bwd_phi, one launch for the wanted phi tensors, one work-group per element of
 *      one of them: item l sums the entries e = l, l + W, l + 2W, ... in order, then a fixed
 *      tree over the group (mcl_group_sum), so the result depends only on m and the group size
 *      W, never on scheduling (nor on which other tensors the launch does).
 */
#pragma OPENCL FP_CONTRACT OFF

/* ------------------------------------------------------------------------------------ */
/* grad_preproc */

/* out[i,0] = |z_i| >= thr ? log|z_i| / P : -1;  out[i,1] = |z_i| >= thr ? sign z_i : ep·z_i */
__kernel void grad_preproc_fwd(__global const float *z, long z_off, __global float *out,
                               long out_off, float P, float thr, float ep, long n)
{
    const long i = get_global_id(0);
    if (i >= n) return;
    const float x = z[z_off + i];
    if (fabs(x) >= thr) {
        out[out_off + 2 * i] = log(fabs(x)) / P;
        out[out_off + 2 * i + 1] = x > 0.0f ? 1.0f : -1.0f;
    } else {
        out[out_off + 2 * i] = -1.0f;
        out[out_off + 2 * i + 1] = ep * x;
    }
}

/* gz_i += |z_i| >= thr ? g_i,0 / (P·z_i) : g_i,1·ep */
__kernel void grad_preproc_bwd(__global const float *z, long z_off, __global const float *g,
                               long g_off, __global float *gz, long gz_off, float P, float thr,
                               float ep, long n)
{
    const long i = get_global_id(0);
    if (i >= n) return;
    const float x = z[z_off + i];
    gz[gz_off + i] += fabs(x) >= thr ? g[g_off + 2 * i] / (P * x) : g[g_off + 2 * i + 1] * ep;
}

/* ------------------------------------------------------------------------------------ */
/* smn_write */

/* Floats per entry in the backward's scratch rows, and where each part of a row starts (the
 * deltas: H hi values, then their H lo values). */
#define SMN_ROW(H) (6 * (H) + 2)
#define SMN_G 0
#define SMN_SAVED 1
#define SMN_H2(H) 2
#define SMN_D2(H) (2 + (H))
#define SMN_H1(H) (2 + 3 * (H))
#define SMN_D1(H) (2 + 4 * (H))

/* The meta-learner's six tensors, each as buffer + element offset, as kernel arguments; and
 * the same pointers, offsets applied, as arguments of the helpers. */
#define SMN_PHI_ARGS                                                                             \
    __global const float *W1, long W1_off, __global const float *b1, long b1_off,                \
        __global const float *W2, long W2_off, __global const float *b2, long b2_off,            \
        __global const float *W3, long W3_off, __global const float *b3, long b3_off
#define SMN_PHI_INIT W1 += W1_off; b1 += b1_off; W2 += W2_off; b2 += b2_off; W3 += W3_off; b3 += b3_off;
#define SMN_PHI_PARAMS                                                                           \
    __global const float *W1, __global const float *b1, __global const float *W2,                \
        __global const float *b2, __global const float *W3, __global const float *b3
#define SMN_PHI W1, b1, W2, b2, W3, b3

/* Element of M written by an entry whose index is v: v when it is an integer in [0, n), else
 * -1 (the entry is skipped). */
long smn_index(float v, long n)
{
    return (v >= 0.0f && v < (float)n && v == floor(v)) ? (long)v : -1;
}

float smn_lrelu(float x, float slope) { return x > 0.0f ? x : slope * x; }

/* grad_preproc of one value (src/ref/smn.c): (log|x| / P, sign x) where |x| >= thr, else
 * (-1, ep·x) */
float2 smn_preproc(float x, float P, float thr, float ep)
{
    if (fabs(x) >= thr) return (float2)(log(fabs(x)) / P, x > 0.0f ? 1.0f : -1.0f);
    return (float2)(-1.0f, ep * x);
}

/* The first entry e of the non-decreasing idx[0..m) with idx_e >= ft (m when there is none): a
 * binary search */
long smn_first_at(__global const float *idx, long idx_off, long m, float ft)
{
    long lo = 0, hi = m;
    while (lo < hi) {
        const long mid = lo + (hi - lo) / 2;
        if (idx[idx_off + mid] < ft)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The pair x = (hi, lo) times f, as a pair: hi·f exactly (mcl_two_prod) plus lo·f (rounded:
 * ~2^-48 of the value). f == 1 gives x itself. */
float2 smn_pair_scale(float2 x, float f)
{
    if (f == 1.0f) return x;
    const float2 p = mcl_two_prod(x.x, f);
    return (float2)(p.x, p.y + x.y * f);
}

/* acc += a·(d.hi + d.lo) */
float2 smn_acc_add_prod_pair(float2 acc, float a, float dhi, float dlo)
{
    return mcl_acc_add_prod(mcl_acc_add_prod(acc, a, dhi), a, dlo);
}

/* a1_k = W1[k,0] z0 + W1[k,1] z1 + b1[k] */
float smn_a1(SMN_PHI_PARAMS, float z0, float z1, long k)
{
    float2 acc = (float2)(0.0f, 0.0f);
    acc = mcl_acc_add_prod(acc, W1[2 * k], z0);
    acc = mcl_acc_add_prod(acc, W1[2 * k + 1], z1);
    return mcl_acc_value(mcl_acc_add(acc, b1[k]));
}

/* a2_j = Σ_k W2[j,k] lrelu(a1_k) + b2[j] */
float smn_a2(SMN_PHI_PARAMS, long H, float slope, float z0, float z1, long j)
{
    float2 acc = (float2)(0.0f, 0.0f);
    for (long k = 0; k < H; k++)
        acc = mcl_acc_add_prod(acc, W2[j * H + k], smn_lrelu(smn_a1(SMN_PHI, z0, z1, k), slope));
    return mcl_acc_value(mcl_acc_add(acc, b2[j]));
}

/* g_phi(z) = Σ_j W3[j] lrelu(a2_j) + b3, summed as the pair and rounded once (smn_write's value) */
float smn_phi_value(SMN_PHI_PARAMS, long H, float slope, float z0, float z1)
{
    float2 acc = (float2)(0.0f, 0.0f);
    for (long j = 0; j < H; j++)
        acc = mcl_acc_add_prod(acc, W3[j], smn_lrelu(smn_a2(SMN_PHI, H, slope, z0, z1, j), slope));
    return mcl_acc_value(mcl_acc_add(acc, b3[0]));
}

/* forward, one item per entry: M[idx_e] = Σ_j W3[j] lrelu(a2_j) + b3 (M holds M0's copy) */
__kernel void smn_write_fwd(__global const float *idx, long idx_off, __global const float *zs,
                            long zs_off, SMN_PHI_ARGS, __global float *M, long M_off, long n,
                            long m, long H, float slope)
{
    const long e = get_global_id(0);
    if (e >= m) return;
    SMN_PHI_INIT
    const long i = smn_index(idx[idx_off + e], n);
    if (i < 0) return;
    const float z0 = zs[zs_off + 2 * e], z1 = zs[zs_off + 2 * e + 1];
    M[M_off + i] = smn_phi_value(SMN_PHI, H, slope, z0, z1);
}

/* smn_write_eff, one item per entry: v = smn_write's value, M[idx_e] = v, E[idx_e] = W[idx_e] + v
 * (in place; an entry whose index is not an integer in [0, n) is skipped) */
__kernel void smn_write_eff(__global const float *idx, long idx_off, __global const float *zs,
                            long zs_off, SMN_PHI_ARGS, __global float *M, long M_off,
                            __global const float *W, long W_off, __global float *E, long E_off, long n,
                            long m, long H, float slope)
{
    const long e = get_global_id(0);
    if (e >= m) return;
    SMN_PHI_INIT
    const long i = smn_index(idx[idx_off + e], n);
    if (i < 0) return;
    const float z0 = zs[zs_off + 2 * e], z1 = zs[zs_off + 2 * e + 1];
    const float v = smn_phi_value(SMN_PHI, H, slope, z0, z1);
    M[M_off + i] = v;
    E[E_off + i] = W[W_off + i] + v;
}

/* backward 1, one item per entry: row e of the scratch = [g, saved, h2, d2, h1, d1] (see the
 * top). want_saved: gM0 is wanted (saved = gM0[idx_e]); want_mlp: zs or phi gradients are
 * wanted (else h2, d2, h1, d1 are left alone). */
__kernel void smn_write_bwd_entry(__global const float *idx, long idx_off, __global const float *zs,
                                  long zs_off, SMN_PHI_ARGS, __global const float *gM, long gM_off,
                                  __global const float *gM0, long gM0_off, __global float *rows,
                                  long n, long m, long H, float slope, int want_saved,
                                  int want_mlp)
{
    const long e = get_global_id(0);
    if (e >= m) return;
    SMN_PHI_INIT
    __global float *row = rows + e * SMN_ROW(H);
    const long i = smn_index(idx[idx_off + e], n);
    if (i < 0) { /* skipped: contributes nothing */
        for (long t = 0; t < SMN_ROW(H); t++) row[t] = 0.0f;
        return;
    }
    const float g = gM[gM_off + i];
    row[SMN_G] = g;
    row[SMN_SAVED] = want_saved ? gM0[gM0_off + i] : 0.0f;
    if (!want_mlp) return;
    const float z0 = zs[zs_off + 2 * e], z1 = zs[zs_off + 2 * e + 1];
    __global float *h2 = row + SMN_H2(H), *d2 = row + SMN_D2(H);
    __global float *h1 = row + SMN_H1(H), *d1 = row + SMN_D1(H);
    for (long k = 0; k < H; k++) h1[k] = smn_lrelu(smn_a1(SMN_PHI, z0, z1, k), slope);
    for (long j = 0; j < H; j++) {
        float2 acc = (float2)(0.0f, 0.0f);
        for (long k = 0; k < H; k++) acc = mcl_acc_add_prod(acc, W2[j * H + k], h1[k]);
        const float a2 = mcl_acc_value(mcl_acc_add(acc, b2[j]));
        h2[j] = smn_lrelu(a2, slope);
        const float2 d = smn_pair_scale(mcl_two_prod(g, W3[j]), a2 > 0.0f ? 1.0f : slope);
        d2[j] = d.x;
        d2[H + j] = d.y;
    }
    for (long k = 0; k < H; k++) {
        float2 acc = (float2)(0.0f, 0.0f);
        for (long j = 0; j < H; j++) acc = smn_acc_add_prod_pair(acc, W2[j * H + k], d2[j], d2[H + j]);
        const float2 d = smn_pair_scale(mcl_two_sum(acc.x, acc.y),
                                        smn_a1(SMN_PHI, z0, z1, k) > 0.0f ? 1.0f : slope);
        d1[k] = d.x;
        d1[H + k] = d.y;
    }
}

/* backward 2 (after gM0 += gM over all of M): gM0[idx_e] = saved_e, the value before the add */
__kernel void smn_write_bwd_restore(__global const float *idx, long idx_off,
                                    __global const float *rows, __global float *gM0, long gM0_off,
                                    long n, long m, long H)
{
    const long e = get_global_id(0);
    if (e >= m) return;
    const long i = smn_index(idx[idx_off + e], n);
    if (i >= 0) gM0[gM0_off + i] = rows[e * SMN_ROW(H) + SMN_SAVED];
}

/* backward 3, one item per entry: gzs[e,c] += Σ_k W1[k,c] d1_e[k] */
__kernel void smn_write_bwd_zs(__global const float *W1, long W1_off, __global const float *rows,
                               __global float *gzs, long gzs_off, long m, long H)
{
    const long e = get_global_id(0);
    if (e >= m) return;
    W1 += W1_off;
    __global const float *d1 = rows + e * SMN_ROW(H) + SMN_D1(H);
    for (int c = 0; c < 2; c++) {
        float2 acc = (float2)(0.0f, 0.0f);
        for (long k = 0; k < H; k++) acc = smn_acc_add_prod_pair(acc, W1[2 * k + c], d1[k], d1[H + k]);
        gzs[gzs_off + 2 * e + c] += mcl_acc_value(acc);
    }
}

/* backward 4, one launch: the groups run over the elements of the six phi gradients in turn
 * (n0 groups for W1's, then n1 for b1's, ...; nk = 0 for a gradient not wanted, whose buffer
 * is then a placeholder never written); group t of tensor `kind` (0 W1, 1 b1, 2 W2, 3 b2,
 * 4 W3, 5 b3): gp[t] += Σ_e v_e with (a delta d = its hi + lo)
 *   W1[k,c]: d1_e[k] zs_e[c]   b1[k]: d1_e[k]   W2[j,k]: d2_e[j] h1_e[k]   b2[j]: d2_e[j]
 *   W3[j]: g_e h2_e[j]         b3: g_e */
__kernel void smn_write_bwd_phi(__global const float *rows, __global const float *zs, long zs_off,
                                __global float *g0, long o0, __global float *g1, long o1,
                                __global float *g2, long o2, __global float *g3, long o3,
                                __global float *g4, long o4, __global float *g5, long o5,
                                long n0, long n1, long n2, long n3, long n4, long n5, long m,
                                long H, __local float2 *red)
{
    const long W = get_local_size(0);
    const long R = SMN_ROW(H);
    /* which tensor and which of its elements: the same for the whole group */
    long t = get_group_id(0);
    int kind = 0;
    __global float *gp = g0;
    long gp_off = o0;
    if (t >= n0) { t -= n0; kind = 1; gp = g1; gp_off = o1; }
    if (kind == 1 && t >= n1) { t -= n1; kind = 2; gp = g2; gp_off = o2; }
    if (kind == 2 && t >= n2) { t -= n2; kind = 3; gp = g3; gp_off = o3; }
    if (kind == 3 && t >= n3) { t -= n3; kind = 4; gp = g4; gp_off = o4; }
    if (kind == 4 && t >= n4) { t -= n4; kind = 5; gp = g5; gp_off = o5; }
    float2 acc = (float2)(0.0f, 0.0f);
    for (long e = get_local_id(0); e < m; e += W) {
        __global const float *row = rows + e * R;
        __global const float *d1 = row + SMN_D1(H), *d2 = row + SMN_D2(H);
        switch (kind) {
        case 0: acc = smn_acc_add_prod_pair(acc, zs[zs_off + 2 * e + t % 2], d1[t / 2], d1[H + t / 2]); break;
        case 1: acc = mcl_acc_add(mcl_acc_add(acc, d1[t]), d1[H + t]); break;
        case 2: acc = smn_acc_add_prod_pair(acc, row[SMN_H1(H) + t % H], d2[t / H], d2[H + t / H]); break;
        case 3: acc = mcl_acc_add(mcl_acc_add(acc, d2[t]), d2[H + t]); break;
        case 4: acc = mcl_acc_add_prod(acc, row[SMN_G], row[SMN_H2(H) + t]); break;
        default: acc = mcl_acc_add(acc, row[SMN_G]); break;
        }
    }
    const float2 total = mcl_group_sum(acc, red);
    if (get_local_id(0) == 0) gp[gp_off + t] += mcl_acc_value(total);
}

/* ------------------------------------------------------------------------------------------ */
/* wcst_act: the WCST agent's episode in place (ops.def; src/ref/smn.c): one work-item walks
 * the L cards in order (an episode is 16 cards of 4 actions: one launch instead of a read-back
 * per card). exp is src/ref/exp_nonpos.h's, operation for operation (fma is correctly rounded
 * in OpenCL C as fmaf is in C), so the probabilities, and the action drawn, are the reference's
 * bits. state: rule, streak, solved, countdown, next, draws (S floats). */
float wcst_exp_nonpos(float x)
{
    const float big = 12582912.0f; /* 1.5 * 2^23 */
    float n = (x * 1.44269504088896341f + big) - big;
    n = n > -127.0f ? n : -127.0f;
    float r = fma(n, -0.693145751953125f, x);
    r = fma(n, -1.42860682030941723212e-6f, r);
    float p = 1.98412698412698413e-4f;
    p = fma(p, r, 1.38888888888888889e-3f);
    p = fma(p, r, 8.33333333333333333e-3f);
    p = fma(p, r, 4.16666666666666667e-2f);
    p = fma(p, r, 1.66666666666666667e-1f);
    p = fma(p, r, 0.5f);
    p = fma(p, r, 1.0f);
    p = fma(p, r, 1.0f);
    const float scale = as_float(((int)n + 127) * (1 << 23));
    return x < -87.0f ? 0.0f : p * scale;
}

__kernel void wcst_act(__global float *st, long st_off, __global const float *lg, long lg_off,
                       __global const float *cards, long cards_off, __global float *act, long act_off,
                       __global float *rew, long rew_off, int S, int L, int A, ulong seed, ulong stream,
                       ulong counter, int solve, float r_ok, float r_bad)
{
    if (get_global_id(0) != 0) return;
    st += st_off;
    lg += lg_off;
    cards += cards_off;
    act += act_off;
    rew += rew_off;
    const int rule = st[0] >= 0.0f && st[0] < 3.0f ? (int)st[0] : -1; /* else every card is wrong */
    int perfect = 1;
    for (int c = 0; c < L; c++) {
        __global const float *l = lg + c * A;
        float m = l[0], z = 0.0f;
        for (int k = 1; k < A; k++) m = l[k] > m ? l[k] : m;
        for (int k = 0; k < A; k++) z += wcst_exp_nonpos(l[k] - m);
        const float t = mcl_rng_uniform(seed, stream, counter + (ulong)c) * z;
        float acc = 0.0f;
        int pick = A - 1;
        for (int k = 0; k < A; k++) {
            acc += wcst_exp_nonpos(l[k] - m);
            if (t < acc) {
                pick = k;
                break;
            }
        }
        const int ok = rule >= 0 && cards[c * 3 + rule] == (float)pick;
        act[c] = (float)pick;
        rew[c] = ok ? r_ok : r_bad;
        perfect &= ok;
    }
    float streak = perfect ? st[1] + 1.0f : 0.0f, solved = st[2], count = st[3], next = st[4];
    float r = st[0];
    if (solved == 0.0f && streak >= (float)solve) {
        const float d = next >= 0.0f && next < (float)(S - 5) ? st[5 + (int)next] : 0.0f;
        solved = 1.0f;
        count = 1.0f + (d >= 0.0f ? d : 0.0f);
        next += 1.0f;
    }
    if (solved != 0.0f) {
        count -= 1.0f;
        if (count <= 0.0f) {
            const float o = next >= 0.0f && next < (float)(S - 5) ? st[5 + (int)next] : 0.0f;
            r = (float)((rule + 1 + (o == 1.0f ? 1 : 0)) % 3);
            next += 1.0f;
            streak = 0.0f;
            solved = 0.0f;
            count = 0.0f;
        }
    }
    st[0] = r;
    st[1] = streak;
    st[2] = solved;
    st[3] = count;
    st[4] = next;
}

/* ------------------------------------------------------------------------------------ */
/* smn_avg_z (src/ref/smn.c): two launches on the in-order queue, or one (smn_avg_z_one) when
 * the caller says idx is non-decreasing (p.i[0] = 1) */

/* 1. I'_i = (gamma·I_i) + (beta1·G_i), one item per element (FP_CONTRACT OFF: scale, scale, add) */
__kernel void smn_avg_z_avg(__global const float *I, long I_off, __global const float *G, long G_off,
                            __global float *In, long In_off, float gamma, float beta1, long n)
{
    const long i = get_global_id(0);
    if (i >= n) return;
    const float u = gamma * I[I_off + i], w = beta1 * G[G_off + i];
    In[In_off + i] = u + w;
}

/* 2. one item per entry: z = I'[idx_e] + (beta2·G[idx_e]), zs_e = grad_preproc(z); an index
 * that is not an integer in [0, n) gives zs_e = (0, 0) (nothing read out of bounds) */
__kernel void smn_avg_z_zs(__global const float *idx, long idx_off, __global const float *In,
                           long In_off, __global const float *G, long G_off, __global float *zs,
                           long zs_off, float beta2, float P, float thr, float ep, long n, long m)
{
    const long e = get_global_id(0);
    if (e >= m) return;
    const long i = smn_index(idx[idx_off + e], n);
    float2 o = (float2)(0.0f, 0.0f);
    if (i >= 0) {
        const float b = beta2 * G[G_off + i], x = In[In_off + i] + b;
        o = smn_preproc(x, P, thr, ep);
    }
    zs[zs_off + 2 * e] = o.x;
    zs[zs_off + 2 * e + 1] = o.y;
}

/* one launch for a non-decreasing idx: item t < n computes I'_t = (gamma·I_t) + (beta1·G_t),
 * stores it and, for every entry e with idx_e = t (the run of them found by a binary search),
 * zs_e = grad_preproc(I'_t + (beta2·G_t)); item t < m also writes zs_t = (0, 0) when idx_t is
 * not an integer in [0, n). Each item reads only its own element of I, so out[0] may be I
 * (in place) with no race; the floats are those of the two launches. */
__kernel void smn_avg_z_one(__global const float *idx, long idx_off, __global const float *I, long I_off,
                            __global const float *G, long G_off, __global float *In, long In_off,
                            __global float *zs, long zs_off, float gamma, float beta1, float beta2, float P,
                            float thr, float ep, long n, long m)
{
    const long t = get_global_id(0);
    if (t < m && smn_index(idx[idx_off + t], n) < 0) {
        zs[zs_off + 2 * t] = 0.0f;
        zs[zs_off + 2 * t + 1] = 0.0f;
    }
    if (t >= n) return;
    const float g = G[G_off + t];
    const float u = gamma * I[I_off + t], w = beta1 * g, v = u + w;
    In[In_off + t] = v;
    const float ft = (float)t; /* exact: n < 2^24 */
    const long lo = smn_first_at(idx, idx_off, m, ft);
    if (lo >= m || idx[idx_off + lo] != ft) return;
    const float b = beta2 * g, x = v + b;
    const float2 o = smn_preproc(x, P, thr, ep);
    for (long e = lo; e < m && idx[idx_off + e] == ft; e++) {
        zs[zs_off + 2 * e] = o.x;
        zs[zs_off + 2 * e + 1] = o.y;
    }
}

/* ------------------------------------------------------------------------------------ */
/* smn_avg_write (src/ref/smn.c): smn_avg_z_one and smn_write_eff in one launch, one item per
 * element t < n: I_t = (gamma·I_t) + (beta1·G_t) (stored in place: the item reads only its own
 * element); the entries e with idx_e = t (a binary search of the increasing idx) get
 * zs_e = grad_preproc(I_t + (beta2·G_t)), and the item evaluates g_phi there as smn_write_eff
 * does, M_t = v and E_t = W_t + v. Item t < m also writes zs_t = (0, 0) when idx_t is not an
 * integer in [0, n). The floats are those of the two kernels in a row. */
__kernel void smn_avg_write(__global const float *idx, long idx_off, __global float *zs, long zs_off,
                            SMN_PHI_ARGS, __global float *M, long M_off, __global const float *W,
                            long W_off, __global float *E, long E_off, __global float *I, long I_off,
                            __global const float *G, long G_off, float gamma, float beta1, float beta2,
                            float P, float thr, float ep, long n, long m, long H, float slope)
{
    const long t = get_global_id(0);
    if (t < m && smn_index(idx[idx_off + t], n) < 0) {
        zs[zs_off + 2 * t] = 0.0f;
        zs[zs_off + 2 * t + 1] = 0.0f;
    }
    if (t >= n) return;
    SMN_PHI_INIT
    const float g = G[G_off + t];
    const float u = gamma * I[I_off + t], w = beta1 * g, iv = u + w;
    I[I_off + t] = iv;
    const float ft = (float)t; /* exact: n < 2^24 */
    const long lo = smn_first_at(idx, idx_off, m, ft);
    if (lo >= m || idx[idx_off + lo] != ft) return;
    const float b = beta2 * g, x = iv + b;
    const float2 z = smn_preproc(x, P, thr, ep);
    const float z0 = z.x, z1 = z.y;
    for (long e = lo; e < m && idx[idx_off + e] == ft; e++) {
        zs[zs_off + 2 * e] = z0;
        zs[zs_off + 2 * e + 1] = z1;
    }
    const float v = smn_phi_value(SMN_PHI, H, slope, z0, z1);
    M[M_off + t] = v;
    E[E_off + t] = W[W_off + t] + v;
}

/* smn_write_add (src/ref/smn.c), one item per element t < n: the entry e with idx_e = t (a
 * binary search of the increasing idx) gives v = g_phi(zs_e) as smn_write_fwd computes it;
 * out_t = W_t + (found ? v : zero ? 0 : M0_t) (smn_write's M, then add's float sum). An entry
 * whose index is not an integer in [0, n) matches no element. */
__kernel void smn_write_add_fwd(__global const float *idx, long idx_off, __global const float *zs,
                                long zs_off, SMN_PHI_ARGS, __global const float *M0, long M0_off,
                                __global const float *W, long W_off, __global float *out,
                                long out_off, int zero, long n, long m, long H, float slope)
{
    const long t = get_global_id(0);
    if (t >= n) return;
    SMN_PHI_INIT
    const float ft = (float)t; /* exact: n < 2^24 */
    const long lo = smn_first_at(idx, idx_off, m, ft);
    float mv = zero ? 0.0f : M0[M0_off + t];
    if (lo < m && idx[idx_off + lo] == ft)
        mv = smn_phi_value(SMN_PHI, H, slope, zs[zs_off + 2 * lo], zs[zs_off + 2 * lo + 1]);
    out[out_off + t] = W[W_off + t] + mv;
}
