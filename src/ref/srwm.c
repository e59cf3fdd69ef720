/* srwm.c — reference self-referential weight matrix over a sequence (doc/acl-model.md §1; paper
 * 000_* Sec. 2.3, Eqs. 1-5, the "4-learning-rate" variant), forward and memory-light backward.
 *
 * Notation (doc/acl-model.md §1): per sequence b and head h, four fast-weight matrices stored W[e][m]
 * (e = input index, m = output index; a read is y_m = sum_e x_e W[e][m]):
 *   W_y, W_q, W_k  D x D,   w_b  D x 4   (the paper's single (3D+4) x D matrix, transposed)
 * and i = 0..3 indexes them in the order y, q, k, b (the order of beta and of the four Δ).
 *
 *   in[0] x [B,H,L,D];  in[1..4] the initial state W_y, W_q, W_k [B,H,D,D], w_b [B,H,D,4]
 *   out[0] y [B,H,L,D];  out[1..4] the final state (shapes of in[1..4])   (differentiable)
 *   out[5] q, out[6] k [B,H,L,D] (after softmax);  out[7] beta [B,H,L,4] (after sigmoid);
 *   out[8..10] Δ_y, Δ_q, Δ_k [B,H,L,D];  out[11] Δ_b [B,H,L,4]            (saved for backward)
 *
 * How. The B*H sequences are independent: one thread runs one whole sequence at a time
 * (OpenMP over b*h, static schedule), so no value depends on the thread count. A sequence
 * works in a per-thread scratch (allocated once per call and thread; no tensor is allocated):
 * matrices are copied into rows padded with zeros to LD = a multiple of NL = 16 floats, so
 * every inner loop runs over whole 16-float blocks (vectorized by GCC: MCL_HOT, MCL_SIMD as
 * in gemm.c), and the zero pads feed exact zeros into every sum. The layouts make every hot
 * loop an elementwise or axpy loop over contiguous floats:
 *   forward:  W_y, W_q, W_k as stored (rows e), w_b transposed (4 rows of D);
 *   backward: the weights transposed (rows m) — their products W·g sum over m —, the
 *             gradient G of W_y, W_q, W_k as stored (rows e: k^T G sums over e), G of w_b
 *             transposed. Only G·(βΔ) and the few w_b sums need horizontal sums.
 *
 * Rounding is pinned down, so the result does not depend on vector width or threads:
 *   - an axpy loop sums in the order of its outer index (rows e = 0, 1, ..., or m = 0, 1, ...),
 *     acc = fmaf(v[e], W[e][m], acc), every lane its own exact fmaf; the backward's sums over
 *     the three matrices (M gΔ, g_x) keep one such sum per matrix and add them at the end in
 *     the order ((y + q) + k) + b (independent chains: a step is a chain of dependent sums,
 *     and their latency, more than the arithmetic, limits the speed);
 *   - a horizontal sum keeps NL = 16 partial sums (lane l takes the indices l, l+16, ...) added
 *     by the fixed pairwise tree 8, 4, 2, 1 (lane_tree);
 *   - the rank-1 update is W = fmaf(k[e], bd[m], W) with bd = β_i·Δ_i rounded to float; the
 *     backward undoes it with the very same bd (β and Δ are saved): W = fmaf(-bd[m], k[e], W);
 *   - softmax sums its exponentials in double (like softmax.c); sigmoid never forms exp of a
 *     large positive number.
 * Δ_i = v_i - v̄_i = q·M_i - k·M_i is formed as (q - k)·M_i: the same quantity with one sum
 * instead of two (and no cancellation between two large sums); (q - k) is also what the
 * backward's G_i += (q - k) ⊗ gΔ_i needs. The OpenCL kernels (kernels/srwm.cl) compute the
 * same operations, with their sums in other orders.
 *
 * Backward ACCUMULATES into the non-NULL gin[0..4].
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "exp_nonpos.h" /* mcl_exp_nonpos: exp(x <= 0), vectorizable, within 1 ulp */
#include "ref.h"

/* Lanes of the fixed-order partial sums; the scratch rows are padded to a multiple of it
 * (lane_tree is written for 16). */
#define NL 16
/* Below this much work (B*H*L*D*D) everything runs on the calling thread. */
#define PAR_MIN 32768

/* Compiler help for the hot loops: MCL_HOT and MCL_SIMD (ref.h), no effect on the results.
 * The per-sequence bodies are inlined (MCL_BODY) into one copy per common head size (D = 4,
 * 8, 16, 32, 64) and one for any D: with D a constant every loop has a known trip count and
 * runs without run-time checks (for D = 16, the paper's: 1.6x faster than the generic copy).
 * Every copy does the same operations in the same order: which one runs changes no bit. */
#define MCL_BODY MCL_HOT_INLINE

/* ------------------------------------------------------------------------------------ */
/* Small helpers.                                                                        */

static int64_t pad_ld(int64_t D) { return (D + NL - 1) / NL * NL; }

/* The sum of the NL = 16 partial sums acc[0..16) by the fixed pairwise tree: lanes l and
 * l + 8, then l + 4, l + 2, l + 1 (stages written out: GCC vectorizes each). Uses acc up. */
MCL_BODY float lane_tree(float *acc)
{
    for (int l = 0; l < 8; l++) acc[l] += acc[l + 8];
    for (int l = 0; l < 4; l++) acc[l] += acc[l + 4];
    for (int l = 0; l < 2; l++) acc[l] += acc[l + 2];
    return acc[0] + acc[1];
}

/* sum_n a[n] b[n], n < LD (a multiple of NL): NL partial sums, then the fixed tree. */
MCL_BODY float lane_dot(const float *a, const float *b, int64_t LD)
{
    float acc[NL];
    for (int l = 0; l < NL; l++) acc[l] = 0.0f;
    for (int64_t n0 = 0; n0 < LD; n0 += NL) {
        MCL_SIMD
        for (int l = 0; l < NL; l++) acc[l] = fmaf(a[n0 + l], b[n0 + l], acc[l]);
    }
    return lane_tree(acc);
}

/* o_i[m] = sum_e v[e] M_i[e][m] for i = 0, 1, 2 (M_i rows of LD): axpy over the rows e in
 * order, one block of NL columns at a time (its three accumulators stay in registers). */
MCL_BODY void axpy3(const float *v, float *const M[3], int64_t D, int64_t LD, float *o0,
                    float *o1, float *o2)
{
    for (int64_t m0 = 0; m0 < LD; m0 += NL) {
        float a0[NL], a1[NL], a2[NL];
        for (int l = 0; l < NL; l++) a0[l] = a1[l] = a2[l] = 0.0f;
        for (int64_t e = 0; e < D; e++) {
            const float ve = v[e];
            const float *r0 = M[0] + e * LD + m0, *r1 = M[1] + e * LD + m0, *r2 = M[2] + e * LD + m0;
            MCL_SIMD
            for (int l = 0; l < NL; l++) {
                a0[l] = fmaf(ve, r0[l], a0[l]);
                a1[l] = fmaf(ve, r1[l], a1[l]);
                a2[l] = fmaf(ve, r2[l], a2[l]);
            }
        }
        memcpy(o0 + m0, a0, sizeof a0);
        memcpy(o1 + m0, a1, sizeof a1);
        memcpy(o2 + m0, a2, sizeof a2);
    }
}

/* doc/acl-model.md §1 step 2: β = sigmoid(b̃) = 1 / (1 + exp(-b̃)), in the form without overflow:
 * with e = exp(-|z|), 1 / (1 + e) for z >= 0 and e / (1 + e) below. */
MCL_BODY float sigmoid_(float z)
{
    const float e = mcl_exp_nonpos(z >= 0.0f ? -z : z);
    return (z >= 0.0f ? 1.0f : e) / (1.0f + e);
}

/* doc/acl-model.md §1 step 2: q = softmax(q̃) over D, max-shifted, the sum of exponentials in double
 * (in order), the quotient rounded once. */
MCL_BODY void softmax_inplace(float *v, int64_t D)
{
    float mx = v[0];
    for (int64_t j = 1; j < D; j++)
        if (v[j] > mx) mx = v[j];
    MCL_SIMD
    for (int64_t j = 0; j < D; j++) v[j] = mcl_exp_nonpos(v[j] - mx);
    double s = 0.0;
    for (int64_t j = 0; j < D; j++) s += (double)v[j];
    MCL_SIMD
    for (int64_t j = 0; j < D; j++) v[j] = (float)((double)v[j] / s);
}


/* dst[r][c] = src[r][c] (row stride ld, pads zeroed), or with trans dst[c][r] = src[r][c];
 * src is rows x cols, dense. */
MCL_BODY void load_mat(float *dst, int64_t ld, const float *src, int64_t rows, int64_t cols,
                       int trans)
{
    const int64_t drows = trans ? cols : rows;
    memset(dst, 0, (size_t)(drows * ld) * sizeof(float));
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++) dst[trans ? c * ld + r : r * ld + c] = src[r * cols + c];
}

/* The pointers of one sequence s = b*H + h into the op's tensors. */
typedef struct seq {
    const float *x;                 /* [L,D]                                     */
    const float *w0[4];             /* initial state (forward)                    */
    float *y, *w1[4];               /* y [L,D], final state                       */
    float *q, *k, *beta, *d[4];     /* saved: q, k [L,D], beta [L,4], Δ_i [L,D|4] */
    const float *gy, *gw[4];        /* backward: gout[0] [L,D], gout[1..4]        */
    float *gx, *gw0[4];             /* backward: gin[0] [L,D], gin[1..4] (or NULL) */
    int fx, fw0[4];                 /* backward: gx, gw0[i] fresh (stored, not added) */
} seq;

/* fresh[k]: gin[k] was fresh (mcl_ref_grad_fresh, asked once per call): stored, not added */
static void seq_ptrs(const mcl_op_args *a, int64_t s, int64_t L, int64_t D, int bwd,
                     const int fresh[5], seq *p)
{
    const int64_t sl = s * L * D, s4 = s * L * 4, sdd = s * D * D, sd4 = s * D * 4;
    memset(p, 0, sizeof *p);
    p->x = mcl_ref_ptr(a->in[0]) + sl;
    for (int i = 0; i < 4; i++) {
        const int64_t off = i == 3 ? sd4 : sdd;
        p->w0[i] = mcl_ref_ptr(a->in[1 + i]) + off;
        p->w1[i] = mcl_ref_ptr(a->out[1 + i]) + off;
        p->d[i] = mcl_ref_ptr(a->out[8 + i]) + (i == 3 ? s4 : sl);
        if (bwd) {
            p->gw[i] = mcl_ref_ptr(a->gout[1 + i]) + off;
            p->gw0[i] = a->gin[1 + i] ? mcl_ref_ptr(a->gin[1 + i]) + off : NULL;
            p->fw0[i] = fresh[1 + i];
        }
    }
    p->y = mcl_ref_ptr(a->out[0]) + sl;
    p->q = mcl_ref_ptr(a->out[5]) + sl;
    p->k = mcl_ref_ptr(a->out[6]) + sl;
    p->beta = mcl_ref_ptr(a->out[7]) + s4;
    if (bwd) {
        p->gy = mcl_ref_ptr(a->gout[0]) + sl;
        p->gx = a->gin[0] ? mcl_ref_ptr(a->gin[0]) + sl : NULL;
        p->fx = fresh[0];
    }
}

/* Scratch floats per thread: the state (3 D x LD + 4 x LD), twice in backward (weights and
 * their gradient), 24 vectors of LD and D x NL partial sums. */
static size_t scratch_floats(int64_t D, int bwd)
{
    const int64_t LD = pad_ld(D), state = (3 * D + 4) * LD;
    return (size_t)((bwd ? 2 : 1) * state + 24 * LD + D * NL);
}

/* ------------------------------------------------------------------------------------ */
/* Forward of one sequence, doc/acl-model.md §1 steps 1-5 (paper Eqs. 1-5), t = 0 .. L-1, with W the
 * weights after step t-1 (W = the initial state for t = 0):
 *   1. y_t = x_t·W_y,  q̃ = x_t·W_q,  k̃ = x_t·W_k,  b̃ = x_t·w_b           (Eq. 1)
 *   2. β = sigmoid(b̃) (4 rates),  q = softmax(q̃),  k = softmax(k̃)
 *   3. Δ_i = q·M_i - k·M_i = (q - k)·M_i  for M_i in {W_y, W_q, W_k, w_b}   (Eqs. 2, 4)
 *   4. M_i[e][m] += k[e]·(β_i·Δ_i[m])                                       (Eqs. 3, 5)
 *   5. the step's output is y_t of 1 (before the update); the update is applied at every
 *      step, including the last. Saved: q, k, β, Δ_i; out: y and the final state.
 * Scratch: W_y, W_q, W_k [D][LD] (rows e), w_b^T [4][LD], then vectors of LD.           */
MCL_BODY void fwd_seq(const seq *p, int64_t L, int64_t D, float *ws)
{
    const int64_t LD = pad_ld(D);
    float *M[3] = {ws, ws + D * LD, ws + 2 * D * LD};
    float *wbT = ws + 3 * D * LD; /* w_b^T: row j = column j of w_b */
    float *v = wbT + 4 * LD;      /* vectors of LD, pads 0 */
    float *vx = v, *vy = v + LD, *vq = v + 2 * LD, *vk = v + 3 * LD, *va = v + 4 * LD;
    float *dl[3] = {v + 5 * LD, v + 6 * LD, v + 7 * LD}, *bd[3] = {v + 8 * LD, v + 9 * LD, v + 10 * LD};
    float *vkn = v + 11 * LD;

    for (int i = 0; i < 3; i++) load_mat(M[i], LD, p->w0[i], D, D, 0);
    load_mat(wbT, LD, p->w0[3], D, 4, 1);
    memset(v, 0, (size_t)(12 * LD) * sizeof(float));

    /* 1. of step 0 (the reads of the later steps are fused with the update before them) */
    memcpy(vx, p->x, (size_t)D * sizeof(float));
    axpy3(vx, M, D, LD, vy, vq, vk);
    for (int64_t t = 0; t < L; t++) {
        /* 1. the reads (y, q̃, k̃ are in vy, vq, vk); b̃ by lane sums */
        float b[4];
        for (int j = 0; j < 4; j++) b[j] = lane_dot(vx, wbT + j * LD, LD);
        MCL_SIMD
        for (int j = 0; j < 4; j++) b[j] = sigmoid_(b[j]);
        memcpy(p->y + t * D, vy, (size_t)D * sizeof(float));

        /* 2. q, k, β (saved) */
        softmax_inplace(vq, D);
        softmax_inplace(vk, D);
        memcpy(p->q + t * D, vq, (size_t)D * sizeof(float));
        memcpy(p->k + t * D, vk, (size_t)D * sizeof(float));
        memcpy(p->beta + t * 4, b, sizeof b);

        /* 3. Δ_i = (q - k)·M_i, rows e in order; Δ_b by lane sums (saved) */
        for (int64_t m = 0; m < D; m++) va[m] = vq[m] - vk[m];
        axpy3(va, M, D, LD, dl[0], dl[1], dl[2]);
        float dbv[4];
        for (int j = 0; j < 4; j++) dbv[j] = lane_dot(va, wbT + j * LD, LD);
        for (int i = 0; i < 3; i++) memcpy(p->d[i] + t * D, dl[i], (size_t)D * sizeof(float));
        memcpy(p->d[3] + t * 4, dbv, sizeof dbv);

        /* 4. rank-1 updates with bd_i = β_i·Δ_i rounded to float, fused with the reads of
         *    step t+1 (1. for it: the same sums, in the same order, on the updated rows) */
        for (int i = 0; i < 3; i++) {
            float *bi = bd[i];
            const float *di = dl[i], bb = b[i];
            MCL_SIMD
            for (int64_t m = 0; m < LD; m++) bi[m] = bb * di[m];
        }
        const int next = t + 1 < L;
        if (next) memcpy(vx, p->x + (t + 1) * D, (size_t)D * sizeof(float));
        for (int64_t m0 = 0; m0 < LD; m0 += NL) {
            float a0[NL], a1[NL], a2[NL];
            for (int l = 0; l < NL; l++) a0[l] = a1[l] = a2[l] = 0.0f;
            const float *b0 = bd[0] + m0, *b1 = bd[1] + m0, *b2 = bd[2] + m0;
            for (int64_t e = 0; e < D; e++) {
                const float ke = vk[e], xe = next ? vx[e] : 0.0f;
                float *r0 = M[0] + e * LD + m0, *r1 = M[1] + e * LD + m0, *r2 = M[2] + e * LD + m0;
                MCL_SIMD
                for (int l = 0; l < NL; l++) {
                    r0[l] = fmaf(ke, b0[l], r0[l]);
                    r1[l] = fmaf(ke, b1[l], r1[l]);
                    r2[l] = fmaf(ke, b2[l], r2[l]);
                    a0[l] = fmaf(xe, r0[l], a0[l]);
                    a1[l] = fmaf(xe, r1[l], a1[l]);
                    a2[l] = fmaf(xe, r2[l], a2[l]);
                }
            }
            memcpy(vy + m0, a0, sizeof a0);
            memcpy(vq + m0, a1, sizeof a1);
            memcpy(vkn + m0, a2, sizeof a2); /* vk (k of step t) is still needed */
        }
        for (int j = 0; j < 4; j++) {
            const float bdj = b[3] * dbv[j];
            float *rb = wbT + j * LD;
            MCL_SIMD
            for (int64_t e = 0; e < LD; e++) rb[e] = fmaf(vk[e], bdj, rb[e]);
        }
        float *tmp = vk; /* k̃ of step t+1 */
        vk = vkn;
        vkn = tmp;
    }

    /* final state */
    for (int i = 0; i < 3; i++)
        for (int64_t e = 0; e < D; e++)
            memcpy(p->w1[i] + e * D, M[i] + e * LD, (size_t)D * sizeof(float));
    for (int64_t e = 0; e < D; e++)
        for (int j = 0; j < 4; j++) p->w1[3][e * 4 + j] = wbT[j * LD + e];
}

/* ------------------------------------------------------------------------------------ */
/* Backward of one sequence: memory-light BPTT, doc/acl-model.md §1 "Backward", line by line.
 * G_i = dloss/d(M_i after step t), started from the incoming gradient of the final state
 * (gout[1..4]); W starts as the saved final state. For t = L-1 ... 0, with a = q - k,
 * bd_i = β_i·Δ_i (all saved values of step t):
 *   recover the weights before step t:  M_i[e][m] -= k[e]·bd_i[m]
 *   s_i   = k^T G_i                      (so gΔ_i = β_i·s_i,  kᵀ G_i Δ_i = s_i·Δ_i)
 *   g_k  += G_i bd_i = G_i (β_i Δ_i)      (k as the update's key)
 *   g_b̃_i = (kᵀ G_i Δ_i)·β_i(1 - β_i)    (β_i = sigmoid(b̃_i))
 *   g_q  += M_i gΔ_i,  g_k -= M_i gΔ_i    (Δ_i = (q - k)·M_i, M_i before the update)
 *   softmax backward: g_q̃ = q ⊙ (g_q - <g_q, q>),  g_k̃ = k ⊙ (g_k - <g_k, k>)
 *   g_x  += W_y g_y + W_q g_q̃ + W_k g_k̃ + w_b g_b̃     (the reads of Eq. 1)
 *   G_i  += (q - k) ⊗ gΔ_i + x ⊗ g_read_i,  g_read = (g_y, g_q̃, g_k̃, g_b̃)
 * At the end G_i is the gradient of the initial state. This is the EXACT gradient of the
 * forward above: the incoming final-state gradient enters once (as G's start), and the state
 * is the real weight, not an offset from a parameter (doc/acl-model.md §1, "We compute the exact
 * gradient"). Never more than one D x D matrix per weight (and one per gradient) is stored.
 * Scratch: W^T [D][LD] x 3 (row m = column m of W), w_b^T [4][LD], G_y, G_q, G_k [D][LD]
 * (rows e), G_b^T [4][LD], then vectors of LD. Per step four passes, each needing the sums
 * of the one before: 1 (rows of G: s_i, g_k's G bd part), 2 (rows of W^T: recover, M gΔ),
 * 3+4 (rows of W^T: g_x; rows of G: the rank-2 update).                                  */
MCL_BODY void bwd_seq(const seq *p, int64_t L, int64_t D, float *ws)
{
    const int64_t LD = pad_ld(D), state = (3 * D + 4) * LD;
    float *WT[3] = {ws, ws + D * LD, ws + 2 * D * LD}, *wbT = ws + 3 * D * LD;
    float *G[3] = {ws + state, ws + state + D * LD, ws + state + 2 * D * LD};
    float *gbT = ws + state + 3 * D * LD;
    float *v = ws + 2 * state; /* vectors of LD, pads 0 */
    float *vx = v, *vq = v + LD, *vk = v + 2 * LD, *va = v + 3 * LD;
    float *dl[3] = {v + 4 * LD, v + 5 * LD, v + 6 * LD};
    float *bd[3] = {v + 7 * LD, v + 8 * LD, v + 9 * LD};
    float *sv[3] = {v + 10 * LD, v + 11 * LD, v + 12 * LD};
    float *gd[3] = {v + 13 * LD, v + 14 * LD, v + 15 * LD};
    float *gr[3] = {v + 16 * LD, v + 17 * LD, v + 18 * LD}; /* g_read: g_y, g_q̃, g_k̃ */
    float *vr = v + 19 * LD, *vu = v + 20 * LD;
    float *rl = v + 21 * LD; /* D x NL partial sums of r */

    for (int i = 0; i < 3; i++) {
        load_mat(WT[i], LD, p->w1[i], D, D, 1);
        load_mat(G[i], LD, p->gw[i], D, D, 0);
    }
    load_mat(wbT, LD, p->w1[3], D, 4, 1);
    load_mat(gbT, LD, p->gw[3], D, 4, 1);
    memset(v, 0, (size_t)(21 * LD + D * NL) * sizeof(float));

    for (int64_t t = L - 1; t >= 0; t--) {
        /* the saved values of step t */
        const float *bt = p->beta + t * 4, *db = p->d[3] + t * 4;
        const float b[4] = {bt[0], bt[1], bt[2], bt[3]};
        memcpy(vx, p->x + t * D, (size_t)D * sizeof(float));
        memcpy(vq, p->q + t * D, (size_t)D * sizeof(float));
        memcpy(vk, p->k + t * D, (size_t)D * sizeof(float));
        memcpy(gr[0], p->gy + t * D, (size_t)D * sizeof(float));
        for (int64_t m = 0; m < D; m++) va[m] = vq[m] - vk[m];
        for (int i = 0; i < 3; i++) {
            memcpy(dl[i], p->d[i] + t * D, (size_t)D * sizeof(float));
            float *bi = bd[i];
            const float *di = dl[i], bb = b[i];
            MCL_SIMD
            for (int64_t m = 0; m < LD; m++) bi[m] = bb * di[m];
        }
        float bdb[4];
        for (int j = 0; j < 4; j++) bdb[j] = b[3] * db[j];

        /* 1. rows e of G (after step t): s_i = k^T G_i (axpy over e), and the NL partial
         *    sums per row of r = sum_i G_i bd_i, by blocks of NL columns */
        for (int64_t m0 = 0; m0 < LD; m0 += NL) {
            float a0[NL], a1[NL], a2[NL];
            for (int l = 0; l < NL; l++) a0[l] = a1[l] = a2[l] = 0.0f;
            for (int64_t e = 0; e < D; e++) {
                const float ke = vk[e];
                const float *g0 = G[0] + e * LD + m0, *g1 = G[1] + e * LD + m0, *g2 = G[2] + e * LD + m0;
                const float *b0 = bd[0] + m0, *b1 = bd[1] + m0, *b2 = bd[2] + m0;
                float *re = rl + e * NL;
                MCL_SIMD
                for (int l = 0; l < NL; l++) {
                    a0[l] = fmaf(ke, g0[l], a0[l]);
                    a1[l] = fmaf(ke, g1[l], a1[l]);
                    a2[l] = fmaf(ke, g2[l], a2[l]);
                    float r = m0 ? re[l] : 0.0f;
                    r = fmaf(g0[l], b0[l], r);
                    r = fmaf(g1[l], b1[l], r);
                    re[l] = fmaf(g2[l], b2[l], r);
                }
            }
            memcpy(sv[0] + m0, a0, sizeof a0);
            memcpy(sv[1] + m0, a1, sizeof a1);
            memcpy(sv[2] + m0, a2, sizeof a2);
        }
        for (int64_t e = 0; e < D; e++) vr[e] = lane_tree(rl + e * NL);
        float sb[4];
        for (int j = 0; j < 4; j++) {
            const float *gj = gbT + j * LD;
            const float bj = bdb[j];
            MCL_SIMD
            for (int64_t e = 0; e < LD; e++) vr[e] = fmaf(gj[e], bj, vr[e]);
            sb[j] = lane_dot(vk, gj, LD);
        }

        /* gΔ_i = β_i s_i;  g_b̃_i = (s_i·Δ_i) β_i (1 - β_i) */
        float gbt[4], gdb[4];
        for (int i = 0; i < 3; i++) {
            float *gi = gd[i];
            const float *si = sv[i], bb = b[i];
            MCL_SIMD
            for (int64_t m = 0; m < LD; m++) gi[m] = bb * si[m];
            gbt[i] = lane_dot(si, dl[i], LD) * (b[i] * (1.0f - b[i]));
        }
        {
            float dbeta = 0.0f;
            for (int j = 0; j < 4; j++) {
                dbeta = fmaf(sb[j], db[j], dbeta);
                gdb[j] = b[3] * sb[j];
            }
            gbt[3] = dbeta * (b[3] * (1.0f - b[3]));
        }

        /* 2. rows m of W^T: recover the weights before step t, u = sum_i M_i gΔ_i (axpy over
         *    m, then w_b's rows j), by blocks of NL entries e */
        for (int64_t e0 = 0; e0 < LD; e0 += NL) {
            float uy[NL], uq[NL], uk[NL], ub[NL]; /* one sum per matrix */
            const float *ke = vk + e0;
            for (int l = 0; l < NL; l++) uy[l] = uq[l] = uk[l] = ub[l] = 0.0f;
            for (int64_t m = 0; m < D; m++) {
                float *w0 = WT[0] + m * LD + e0, *w1 = WT[1] + m * LD + e0, *w2 = WT[2] + m * LD + e0;
                const float c0 = bd[0][m], c1 = bd[1][m], c2 = bd[2][m];
                const float u0 = gd[0][m], u1 = gd[1][m], u2 = gd[2][m];
                MCL_SIMD
                for (int l = 0; l < NL; l++) {
                    w0[l] = fmaf(-c0, ke[l], w0[l]);
                    w1[l] = fmaf(-c1, ke[l], w1[l]);
                    w2[l] = fmaf(-c2, ke[l], w2[l]);
                    uy[l] = fmaf(u0, w0[l], uy[l]);
                    uq[l] = fmaf(u1, w1[l], uq[l]);
                    uk[l] = fmaf(u2, w2[l], uk[l]);
                }
            }
            for (int j = 0; j < 4; j++) {
                float *wj = wbT + j * LD + e0;
                const float cj = bdb[j], uj = gdb[j];
                MCL_SIMD
                for (int l = 0; l < NL; l++) {
                    wj[l] = fmaf(-cj, ke[l], wj[l]);
                    ub[l] = fmaf(uj, wj[l], ub[l]);
                }
            }
            MCL_SIMD
            for (int l = 0; l < NL; l++) uy[l] = ((uy[l] + uq[l]) + uk[l]) + ub[l];
            memcpy(vu + e0, uy, sizeof uy);
        }

        /* g_q = u, g_k = r - u; softmax backward: g_q̃ = q (g_q - <g_q, q>), same for k */
        {
            double dq = 0.0, dk = 0.0;
            for (int64_t e = 0; e < D; e++) {
                dq += (double)vu[e] * (double)vq[e];
                dk += (double)(vr[e] - vu[e]) * (double)vk[e];
            }
            const float fq = (float)dq, fk = (float)dk;
            for (int64_t e = 0; e < D; e++) {
                gr[1][e] = vq[e] * (vu[e] - fq);
                gr[2][e] = vk[e] * ((vr[e] - vu[e]) - fk);
            }
        }

        /* 3. rows m of W^T (before step t): g_x += sum_i M_i g_read_i + w_b g_b̃ (axpy over m,
         *    then w_b's rows j), by blocks of NL entries e */
        if (p->gx) {
            float *gxt = p->gx + t * D;
            for (int64_t e0 = 0; e0 < LD; e0 += NL) {
                float gy_[NL], gq_[NL], gk_[NL], gb_[NL]; /* one sum per matrix */
                for (int l = 0; l < NL; l++) gy_[l] = gq_[l] = gk_[l] = gb_[l] = 0.0f;
                for (int64_t m = 0; m < D; m++) {
                    const float *w0 = WT[0] + m * LD + e0, *w1 = WT[1] + m * LD + e0;
                    const float *w2 = WT[2] + m * LD + e0;
                    const float r0 = gr[0][m], r1 = gr[1][m], r2 = gr[2][m];
                    MCL_SIMD
                    for (int l = 0; l < NL; l++) {
                        gy_[l] = fmaf(r0, w0[l], gy_[l]);
                        gq_[l] = fmaf(r1, w1[l], gq_[l]);
                        gk_[l] = fmaf(r2, w2[l], gk_[l]);
                    }
                }
                for (int j = 0; j < 4; j++) {
                    const float *wj = wbT + j * LD + e0;
                    const float rj = gbt[j];
                    MCL_SIMD
                    for (int l = 0; l < NL; l++) gb_[l] = fmaf(rj, wj[l], gb_[l]);
                }
                const int64_t nl = D - e0 < NL ? D - e0 : NL;
                if (p->fx) { /* 0 + the term: the floats of adding into zeros */
                    MCL_SIMD
                    for (int64_t l = 0; l < nl; l++) gxt[e0 + l] = 0.0f + (((gy_[l] + gq_[l]) + gk_[l]) + gb_[l]);
                } else {
                    MCL_SIMD
                    for (int64_t l = 0; l < nl; l++) gxt[e0 + l] += ((gy_[l] + gq_[l]) + gk_[l]) + gb_[l];
                }
            }
        }
        /* 4. rows e of G: G_i += a ⊗ gΔ_i + x ⊗ g_read_i;  rows j of G_b^T likewise */
        for (int64_t e = 0; e < D; e++) {
            const float ae = va[e], xe = vx[e];
            float *g0 = G[0] + e * LD, *g1 = G[1] + e * LD, *g2 = G[2] + e * LD;
            MCL_SIMD
            for (int64_t m = 0; m < LD; m++) {
                g0[m] = fmaf(xe, gr[0][m], fmaf(ae, gd[0][m], g0[m]));
                g1[m] = fmaf(xe, gr[1][m], fmaf(ae, gd[1][m], g1[m]));
                g2[m] = fmaf(xe, gr[2][m], fmaf(ae, gd[2][m], g2[m]));
            }
        }
        for (int j = 0; j < 4; j++) {
            float *gj = gbT + j * LD;
            const float rj = gbt[j], uj = gdb[j];
            MCL_SIMD
            for (int64_t e = 0; e < LD; e++) gj[e] = fmaf(rj, vx[e], fmaf(uj, va[e], gj[e]));
        }
    }

    /* the gradient of the initial state */
    for (int i = 0; i < 3; i++) {
        float *g0 = p->gw0[i];
        if (!g0) continue;
        for (int64_t e = 0; e < D; e++)
            for (int64_t m = 0; m < D; m++)
                g0[e * D + m] = (p->fw0[i] ? 0.0f : g0[e * D + m]) + G[i][e * LD + m];
    }
    if (p->gw0[3])
        for (int64_t e = 0; e < D; e++)
            for (int j = 0; j < 4; j++)
                p->gw0[3][e * 4 + j] = (p->fw0[3] ? 0.0f : p->gw0[3][e * 4 + j]) + gbT[j * LD + e];
}

/* ------------------------------------------------------------------------------------ */
/* One compiled copy of each body per head size (see MCL_BODY). */
#define SRWM_SIZED(DN)                                                                      \
    MCL_HOT static void fwd_d##DN(const seq *p, int64_t L, float *ws) { fwd_seq(p, L, DN, ws); } \
    MCL_HOT static void bwd_d##DN(const seq *p, int64_t L, float *ws) { bwd_seq(p, L, DN, ws); }
SRWM_SIZED(4)
SRWM_SIZED(8)
SRWM_SIZED(16)
SRWM_SIZED(32)
SRWM_SIZED(64)
#undef SRWM_SIZED
MCL_HOT static void fwd_any(const seq *p, int64_t L, int64_t D, float *ws) { fwd_seq(p, L, D, ws); }
MCL_HOT static void bwd_any(const seq *p, int64_t L, int64_t D, float *ws) { bwd_seq(p, L, D, ws); }

static void run_seq(const seq *p, int64_t L, int64_t D, float *ws, int bwd)
{
    switch (D) {
    case 4: bwd ? bwd_d4(p, L, ws) : fwd_d4(p, L, ws); break;
    case 8: bwd ? bwd_d8(p, L, ws) : fwd_d8(p, L, ws); break;
    case 16: bwd ? bwd_d16(p, L, ws) : fwd_d16(p, L, ws); break;
    case 32: bwd ? bwd_d32(p, L, ws) : fwd_d32(p, L, ws); break;
    case 64: bwd ? bwd_d64(p, L, ws) : fwd_d64(p, L, ws); break;
    default: bwd ? bwd_any(p, L, D, ws) : fwd_any(p, L, D, ws); break;
    }
}

static float *alloc_floats(size_t n)
{
    /* aligned_alloc wants a size that is a multiple of the alignment */
    size_t bytes = (n * sizeof(float) + 63) & ~(size_t)63;
    return aligned_alloc(64, bytes ? bytes : 64);
}

/* ------------------------------------------------------------------------------------ */
/* Both directions: one sequence per loop iteration, a scratch per thread. */
static mcl_status run_all(mcl_backend *be, const mcl_op_args *a, int bwd)
{
    const mcl_tensor *x = a->in[0];
    const int64_t S = x->shape[0] * x->shape[1], L = x->shape[2], D = x->shape[3];
    const size_t nws = scratch_floats(D, bwd);
    int failed = 0;
    if (bwd && !a->gin[0] && !a->gin[1] && !a->gin[2] && !a->gin[3] && !a->gin[4]) return MCL_OK;
    int fresh[5] = {0, 0, 0, 0, 0}; /* one after the other (ref.h: two may be one tensor) */
    for (int k = 0; bwd && k < 5; k++) fresh[k] = a->gin[k] && mcl_ref_grad_fresh(a->gin[k]);
#pragma omp parallel if (S > 1 && S * L * D * D > PAR_MIN)
    {
        float *ws = alloc_floats(nws);
        if (!ws) {
#pragma omp atomic write
            failed = 1;
        }
#pragma omp for schedule(static)
        for (int64_t s = 0; s < S; s++) {
            if (!ws) continue;
            seq p;
            seq_ptrs(a, s, L, D, bwd, fresh, &p);
            run_seq(&p, L, D, ws, bwd);
        }
        free(ws);
    }
    if (failed)
        return mcl_ctx_set_error(be->ctx, MCL_ERR_OOM, "srwm %s: out of memory (%zu bytes of scratch "
                                 "per thread, head size D=%lld)", bwd ? "backward" : "forward",
                                 nws * sizeof(float), (long long)D);
    return MCL_OK;
}

/* srwm forward: doc/acl-model.md §1 (fwd_seq above) for every sequence b and head h. */
mcl_status mcl_ref_srwm_fwd(mcl_backend *be, const mcl_op_args *a)
{
    return run_all(be, a, 0);
}

/* srwm backward: the exact memory-light BPTT of doc/acl-model.md §1 (bwd_seq above); ACCUMULATES
 * into gin[0] (x) and gin[1..4] (the initial state), each skipped when NULL; a fresh one
 * (mcl_ref_grad_fresh) gets 0 + its terms, not read. */
mcl_status mcl_ref_srwm_bwd(mcl_backend *be, const mcl_op_args *a)
{
    return run_all(be, a, 1);
}
