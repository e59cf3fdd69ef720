/* smn.c — reference ops of Sparse Meta Networks (Munkhdalai 2019, "Sparse Meta Networks for
 * Sequential Adaptation and its Application to Adaptive Language Modelling"): the gradient
 * preprocessing the meta-learner reads, and the sparse write of the fast weights.
 *
 * grad_preproc (Andrychowicz et al. 2016, §3.2 "preprocessing"). in[0] z [any, <= 3 dims],
 * out[0] [shape of z, 2], p.f[0] = P (0 < P <= 87, checked by the front end). With
 * thr = e^-P and ep = e^P, computed once per call in float (mcl_grad_preproc_consts,
 * backend.h, which the OpenCL host code calls too, so both backends use the same floats):
 *   |z| >= thr:  out[..,0] = log|z| / P,   out[..,1] = sign(z)    (z != 0 there: thr > 0)
 *   else:        out[..,0] = -1,           out[..,1] = ep · z
 * The first channel is the gradient's scale on a log axis, the second its sign, or, for tiny
 * gradients, a channel that is linear in z. Backward: gz += (|z| >= thr) ? g0 / (P·z) : g1·ep
 * (the sign and the constant -1 have zero derivative).
 *
 * smn_write. The fast weights M0 [any, numel n] are rewritten at m chosen elements only; each
 * new value comes from a coordinate-wise meta-learner g_phi, an MLP 2 -> H -> H -> 1 with
 * LeakyReLU, evaluated at that element's preprocessed input zs_e:
 *   in[0] M0 [any]    in[1] idx [m] (flat indices into M0 as floats)    in[2] zs [m,2]
 *   in[3] W1 [H,2]  in[4] b1 [H]  in[5] W2 [H,H]  in[6] b2 [H]  in[7] W3 [1,H]  in[8] b3 [1]
 *   p.f[0] slope (LeakyReLU's negative slope, finite)
 *   out[0] M [shape of M0]:  M = M0, then for e = 0..m-1
 *     a1 = W1 zs_e + b1,  h1 = lrelu(a1),  a2 = W2 h1 + b2,  h2 = lrelu(a2),  M[idx_e] = W3 h2 + b3
 *   lrelu(a) = a > 0 ? a : slope·a,  lrelu'(a) = a > 0 ? 1 : slope  (so lrelu'(0) = slope)
 * Backward (with g_e = gM[idx_e]; nothing was saved: the activations are recomputed from zs and
 * phi, so the op keeps no per-element state — the tape holds only the sparse write):
 *   gM0 += gM, except at the written elements (an overwritten element gets nothing from M)
 *   gb3 += Σ_e g_e                   gW3 += Σ_e g_e h2_e
 *   d2_e = g_e W3ᵀ ⊙ lrelu'(a2_e)    gb2 += Σ_e d2_e      gW2 += Σ_e d2_e ⊗ h1_e
 *   d1_e = W2ᵀ d2_e ⊙ lrelu'(a1_e)   gb1 += Σ_e d1_e      gW1 += Σ_e d1_e ⊗ zs_e
 *   gzs_e += W1ᵀ d1_e                (idx gets no gradient)
 * The index contract (ops.def): integers in [0, n), all distinct. The values live in the
 * buffer, so the front end cannot check them; here forward and backward both check them and
 * refuse a bad one with MCL_ERR_INVALID and a message: indices in increasing order (as the
 * models draw them) in one vectorized pass, any other order with a map of n bytes.
 *
 * Arithmetic. The forward's dot products are summed in double in index order and rounded once
 * (a1, a2, the output); the activations are floats, as stored values would be. The backward
 * recomputes the same floats and carries its deltas and sums in double. Both run on blocks of
 * NL entries, one entry per lane, each layer a loop over the lanes that the compiler vectorizes
 * (instead of H-term dependency chains one entry at a time); every lane does the arithmetic
 * above in the same order, so an entry's values do not depend on its block, its lane or the
 * thread count. The sums over the entries are split into parts, a fixed function of m (at most
 * SMN_PARTS of at least SMN_PART_BLOCKS blocks each): OpenMP runs the parts in parallel; in a
 * part each lane sums its entries in order and the lanes are then added in lane order; the
 * parts are added in part order. So no value depends on the thread count or the schedule.
 */
#if defined(__AVX512F__)
#include <immintrin.h>
#endif
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "exp_nonpos.h"
#include "ref.h"
#include "rng.h"

/* Elements below which grad_preproc and the gradient copy of smn_write stay serial. */
#define SMN_ELEM_PAR_MIN ((int64_t)1 << 16)
/* Entries × H² below which smn_write's loops over entries stay serial (vectorized, an entry of
 * H = 20 costs ~40 ns: 2^17 is ~330 entries, ~13 us). */
#define SMN_WORK_PAR_MIN ((int64_t)1 << 17)
/* The entries are summed in at most SMN_PARTS parts of at least SMN_PART_BLOCKS blocks. */
#define SMN_PARTS 64
#define SMN_PART_BLOCKS 4

/* ------------------------------------------------------------------------------------ */
/* grad_preproc */

/* forward: out[i,0] = |z_i| >= thr ? log|z_i| / P : -1;   out[i,1] = |z_i| >= thr ? sign z_i : ep·z_i
 *   z [any, numel n] -> out [shape of z, 2]   (P = p.f[0]; thr = e^-P, ep = e^P in float) */
mcl_status mcl_ref_grad_preproc_fwd(mcl_backend *be, const mcl_op_args *a)
{
    (void)be;
    const float *z = mcl_ref_ptr(a->in[0]);
    float *out = mcl_ref_ptr(a->out[0]);
    const int64_t n = mcl_tensor_numel(a->in[0]);
    const float P = a->p.f[0];
    float thr, ep;
    mcl_grad_preproc_consts(P, &thr, &ep);
#pragma omp parallel for schedule(static) if (n >= SMN_ELEM_PAR_MIN)
    for (int64_t i = 0; i < n; i++) {
        const float x = z[i];
        if (fabsf(x) >= thr) {
            out[2 * i] = logf(fabsf(x)) / P;
            out[2 * i + 1] = x > 0.0f ? 1.0f : -1.0f;
        } else {
            out[2 * i] = -1.0f;
            out[2 * i + 1] = ep * x;
        }
    }
    return MCL_OK;
}

/* backward: gz_i += |z_i| >= thr ? g_i,0 / (P·z_i) : g_i,1 · ep
 *   gout [shape of z, 2];  gin[0] [shape of z] (or NULL) */
mcl_status mcl_ref_grad_preproc_bwd(mcl_backend *be, const mcl_op_args *a)
{
    (void)be;
    if (!a->gin[0]) return MCL_OK;
    const float *z = mcl_ref_ptr(a->in[0]), *g = mcl_ref_ptr(a->gout[0]);
    float *gz = mcl_ref_ptr(a->gin[0]);
    const int64_t n = mcl_tensor_numel(a->in[0]);
    const float P = a->p.f[0];
    float thr, ep;
    mcl_grad_preproc_consts(P, &thr, &ep);
#pragma omp parallel for schedule(static) if (n >= SMN_ELEM_PAR_MIN)
    for (int64_t i = 0; i < n; i++) {
        const float x = z[i];
        gz[i] += fabsf(x) >= thr ? g[2 * i] / (P * x) : g[2 * i + 1] * ep;
    }
    return MCL_OK;
}

/* ------------------------------------------------------------------------------------ */
/* smn_write */

/* The meta-learner's parameters (in[3..8]) and sizes of one call. */
typedef struct smn_phi {
    const float *W1, *b1, *W2, *b2, *W3, *b3;
    int64_t H;
    float slope;
} smn_phi;

static smn_phi phi_of(const mcl_op_args *a)
{
    smn_phi f;
    f.W1 = mcl_ref_ptr(a->in[3]);
    f.b1 = mcl_ref_ptr(a->in[4]);
    f.W2 = mcl_ref_ptr(a->in[5]);
    f.b2 = mcl_ref_ptr(a->in[6]);
    f.W3 = mcl_ref_ptr(a->in[7]);
    f.b3 = mcl_ref_ptr(a->in[8]);
    f.H = a->in[3]->shape[0];
    f.slope = a->p.f[0];
    return f;
}

static float lrelu(float x, float slope) { return x > 0.0f ? x : slope * x; }

/* The index contract (ops.def): every idx_e an integer in [0, n), none twice. Marks
 * written[i] = 1 for each (written [n], zeroed by the caller). MCL_ERR_INVALID with a message
 * naming the first bad entry. */
static mcl_status check_indices(mcl_backend *be, const float *idx, int64_t m, int64_t n,
                                unsigned char *written)
{
    for (int64_t e = 0; e < m; e++) {
        const float v = idx[e];
        if (!(v >= 0.0f && v < (float)n && v == floorf(v)))
            return mcl_ctx_set_error(be->ctx, MCL_ERR_INVALID,
                                     "smn_write: idx[%lld] = %g is not an integer in [0, %lld) "
                                     "(M0 has %lld elements)",
                                     (long long)e, (double)v, (long long)n, (long long)n);
        const int64_t i = (int64_t)v;
        if (written[i])
            return mcl_ctx_set_error(be->ctx, MCL_ERR_INVALID,
                                     "smn_write: idx[%lld] = %lld repeats an earlier entry (the "
                                     "indices must be distinct)",
                                     (long long)e, (long long)i);
        written[i] = 1;
    }
    return MCL_OK;
}

/* 1 when every idx_e is an integer in [0, n) and, for order >= 0, idx_e - idx_{e-1} > order - 1
 * (0: non-decreasing; 1: increasing): one pass without a branch per entry (vectorized); 0
 * sends the caller to its loop that names the first bad entry. */
MCL_HOT static int indices_valid(const float *idx, int64_t m, int64_t n, int order)
{
    const float nf = (float)n;
    int ok = 1;
    int64_t e = 0;
#if defined(__AVX512F__)
    /* 16 at a time (GCC 12 made branches of the three comparisons below and kept the loop
     * scalar) */
    const __m512 zero = _mm512_setzero_ps(), top = _mm512_set1_ps(nf);
    __mmask16 good = 0xffff;
    for (; e + 16 <= m; e += 16) {
        const __m512 v = _mm512_loadu_ps(idx + e);
        const __m512 fl = _mm512_roundscale_ps(v, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
        good &= _mm512_cmp_ps_mask(v, zero, _CMP_GE_OQ) & _mm512_cmp_ps_mask(v, top, _CMP_LT_OQ) &
                _mm512_cmp_ps_mask(fl, v, _CMP_EQ_OQ);
    }
    ok = good == 0xffff;
#endif
    for (; e < m; e++) {
        const float v = idx[e];
        ok &= v >= 0.0f && v < nf && v == floorf(v); /* NaN: false */
    }
    if (order == 0) {
        MCL_SIMD_AND(ok)
        for (e = 1; e < m; e++) ok &= idx[e] >= idx[e - 1];
    } else if (order > 0) {
        MCL_SIMD_AND(ok)
        for (e = 1; e < m; e++) ok &= idx[e] > idx[e - 1];
    }
    return ok;
}

/* The map of written elements for a call: n bytes, checked indices (NULL + error on failure). */
static unsigned char *written_map(mcl_backend *be, const mcl_op_args *a, mcl_status *s)
{
    const int64_t n = mcl_tensor_numel(a->in[0]), m = a->in[1]->shape[0];
    unsigned char *w = calloc((size_t)n, 1);
    if (!w) {
        *s = mcl_ctx_set_error(be->ctx, MCL_ERR_OOM, "smn_write: out of host memory (a map of %lld bytes)",
                               (long long)n);
        return NULL;
    }
    *s = check_indices(be, mcl_ref_ptr(a->in[1]), m, n, w);
    if (*s != MCL_OK) {
        free(w);
        return NULL;
    }
    return w;
}

/* The index contract of a call (ops.def), checked: MCL_OK, or MCL_ERR_INVALID naming the first
 * bad entry (written_map's check). */
static mcl_status check_write_set(mcl_backend *be, const mcl_op_args *a)
{
    if (indices_valid(mcl_ref_ptr(a->in[1]), a->in[1]->shape[0], mcl_tensor_numel(a->in[0]), 1))
        return MCL_OK;
    mcl_status s;
    unsigned char *written = written_map(be, a, &s);
    if (!written) return s;
    free(written);
    return MCL_OK;
}

/* Blocks. smn_write evaluates g_phi on NL entries at once, entry e0 + l in lane l: each
 * activation is an array [H][NL] (lane fastest) and each layer a loop over the lanes, which GCC
 * vectorizes (MCL_SIMD; 16 doubles are two AVX-512 or four AVX2 registers, so each sum over k
 * runs as that many independent chains). Every lane does the one-entry arithmetic of the header
 * in the same order (no fast-math, no FP contraction: src/common/hot.h), and nothing mixes
 * lanes, so an entry's values do not depend on its block, its lane, the other lanes (a short
 * last block fills its lanes with zs = 0 and drops their results) or the thread count. */
#define NL 16
/* The backward keeps the h1 and d2 of SMN_CHUNK blocks, so that its H x H sum (sW2, below)
 * loads and stores each of its per-lane accumulators once per chunk instead of once per block. */
#define SMN_CHUNK 4

/* s + a·b for floats a, b (converted to double) and a double s: the product is exact in double
 * (at most 24 + 24 = 48 significant bits of double's 53, and |a·b| within [2^-298, 2^256], far
 * inside double's normal range), so a fused multiply-add rounds exactly where the separate
 * multiply and add do: the same bits, with half the instructions where the CPU has FMA. */
#if defined(__FMA__)
#define MADD_EXACT(a, b, s) fma(a, b, s)
#else
#define MADD_EXACT(a, b, s) ((a) * (b) + (s))
#endif

/* One thread's work space: the activations of a block (a1, a2, h2 in float, as stored values
 * would be; h1 in double: exact, and the H x H layer reads each value H times), the backward's
 * d1 and its chunk of h1 and d2 ([SMN_CHUNK][H][NL]; the forward's chunk is one block), the
 * per-lane sums S of one part ([NP][NL], NP = number of phi elements; backward), zs's two
 * columns, the block's outputs and its entries' gM values. */
typedef struct smn_ws {
    float *a1, *a2, *h2; /* [H][NL] */
    double *d1;           /* [H][NL] */
    double *h1, *d2;      /* [chunk][H][NL] */
    double *S;            /* [NP][NL] */
    double *W2;           /* [H][H]: phi's W2 in double (exact), so that the H x H loops
                           * broadcast it from memory instead of converting each weight */
    double *W1, *b1, *b2, *W3; /* [2H], [H], [H], [H]: the same for the other layers */
    _Alignas(64) float z0[NL], z1[NL], out[NL];
    _Alignas(64) double g[NL];
} smn_ws;

/* bytes at a 64-byte boundary (freed with free()): the rows of the work space are whole
 * 64-byte lines, so no vector load or store splits across two lines */
static void *alloc64(size_t bytes) { return aligned_alloc(64, (bytes + 63) & ~(size_t)63); }

/* chunk: blocks kept (1 for the forward, SMN_CHUNK for the backward); NP: 0 for the forward */
static int ws_alloc(smn_ws *w, const smn_phi *f, int64_t chunk, int64_t NP)
{
    const int64_t H = f->H, HL = H * NL;
    w->a1 = alloc64((size_t)(3 * HL) * sizeof(float));
    w->d1 = alloc64((size_t)(HL + 2 * chunk * HL + NP * NL + H * H + 5 * H) * sizeof(double));
    if (!w->a1 || !w->d1) {
        free(w->a1);
        free(w->d1);
        return 0;
    }
    w->a2 = w->a1 + HL;
    w->h2 = w->a2 + HL;
    w->h1 = w->d1 + HL;
    w->d2 = w->h1 + chunk * HL;
    w->S = w->d2 + chunk * HL;
    w->W2 = w->S + NP * NL;
    w->W1 = w->W2 + H * H;
    w->b1 = w->W1 + 2 * H;
    w->b2 = w->b1 + H;
    w->W3 = w->b2 + H;
    for (int64_t i = 0; i < H * H; i++) w->W2[i] = f->W2[i];
    for (int64_t i = 0; i < 2 * H; i++) w->W1[i] = f->W1[i];
    for (int64_t i = 0; i < H; i++) {
        w->b1[i] = f->b1[i];
        w->b2[i] = f->b2[i];
        w->W3[i] = f->W3[i];
    }
    return 1;
}

static void ws_free(smn_ws *w)
{
    free(w->a1);
    free(w->d1);
}

/* The lanes of block [e0, e0 + nl), nl <= NL: zs's two columns, zs = 0 past nl. */
MCL_HOT_INLINE void load_zs(smn_ws *w, const float *zs, int64_t e0, int nl)
{
    if (nl == NL) { /* a whole block: the two columns without a test per lane */
        const float *z = zs + 2 * e0;
        MCL_SIMD
        for (int l = 0; l < NL; l++) {
            w->z0[l] = z[2 * l];
            w->z1[l] = z[2 * l + 1];
        }
        return;
    }
    for (int l = 0; l < NL; l++) {
        w->z0[l] = l < nl ? zs[2 * (e0 + l)] : 0.0f;
        w->z1[l] = l < nl ? zs[2 * (e0 + l) + 1] : 0.0f;
    }
}

/* g_phi on a block, lane by lane (activations in float, dot products in double in index order,
 * each rounded once):
 *   a1[k] = W1[k,0] zs0 + W1[k,1] zs1 + b1[k],    h1 = lrelu(a1)
 *   a2[j] = Σ_k W2[j,k] h1[k] + b2[j],             h2 = lrelu(a2)
 *   out   = Σ_j W3[j] h2[j] + b3
 * w->z0, z1 -> w->a1, a2, h2 [H][NL], h1 [H][NL] (a slot of the chunk), w->out [NL] */
/* Blocks of the H x H products, this many rows at a time and the rest one by one: mlp_block's
 * a2 and bwd_block's d1 (SMN_JB_A2, SMN_JB_D1: 20 vector accumulators of doubles for NL = 16,
 * so that an FMA's latency is covered twice over), sum_w2 (SMN_JB_W2: its accumulators are
 * loaded and stored once per chunk). Any blocking gives the same sums (each in index order). */
#define SMN_JB_A2 10
#define SMN_JB_D1 10
#define SMN_JB_W2 4

/* a2[j] = (float)(s + b2[j]), h2[j] = lrelu(a2[j]) for the NL lanes of unit j, and the output
 * layer's next term, s3 += W3[j] h2[j] (the units come in increasing j: its sum in order) */
static inline void mlp_unit2(const smn_phi *f, smn_ws *w, int64_t j, const double *s, double *s3)
{
    const double b = w->b2[j], w3 = w->W3[j];
    float *a2 = w->a2 + j * NL, *h2 = w->h2 + j * NL;
    MCL_SIMD
    for (int l = 0; l < NL; l++) {
        a2[l] = (float)(s[l] + b);
        h2[l] = lrelu(a2[l], f->slope);
        s3[l] = MADD_EXACT(w3, (double)h2[l], s3[l]);
    }
}

MCL_HOT static void mlp_block(const smn_phi *f, smn_ws *w, double *h1)
{
    const int64_t H = f->H;
    const float slope = f->slope;
    double z0[NL], z1[NL]; /* zs in double once (exact), not reloaded after every store */
    MCL_SIMD
    for (int l = 0; l < NL; l++) {
        z0[l] = w->z0[l];
        z1[l] = w->z1[l];
    }
    for (int64_t k = 0; k < H; k++) {
        const double w0 = w->W1[2 * k], w1 = w->W1[2 * k + 1], b = w->b1[k];
        float *a1 = w->a1 + k * NL;
        MCL_SIMD
        for (int l = 0; l < NL; l++) {
            const float v = (float)(w0 * z0[l] + w1 * z1[l] + b);
            a1[l] = v;
            h1[k * NL + l] = lrelu(v, slope);
        }
    }
    /* a2 = W2 h1 + b2: SMN_JB_A2 units j at a time, so that SMN_JB_A2 independent sums over k are in
     * flight (one sum's fma chain waited out its latency at every k); each sum is still fma in
     * increasing k from 0 */
    double s3[NL]; /* the output layer's sum, j in order (mlp_unit2) */
    for (int l = 0; l < NL; l++) s3[l] = 0.0;
    int64_t j = 0;
    for (; j + SMN_JB_A2 <= H; j += SMN_JB_A2) {
        double s[SMN_JB_A2][NL];
        for (int q = 0; q < SMN_JB_A2; q++)
            for (int l = 0; l < NL; l++) s[q][l] = 0.0;
        for (int64_t k = 0; k < H; k++) {
            const double *hk = h1 + k * NL;
            for (int q = 0; q < SMN_JB_A2; q++) {
                const double w2 = w->W2[(j + q) * H + k];
                MCL_SIMD
                for (int l = 0; l < NL; l++) s[q][l] = MADD_EXACT(w2, hk[l], s[q][l]);
            }
        }
        for (int q = 0; q < SMN_JB_A2; q++) mlp_unit2(f, w, j + q, s[q], s3);
    }
    for (; j < H; j++) {
        double s[NL];
        for (int l = 0; l < NL; l++) s[l] = 0.0;
        for (int64_t k = 0; k < H; k++) {
            const double w2 = w->W2[j * H + k];
            MCL_SIMD
            for (int l = 0; l < NL; l++) s[l] = MADD_EXACT(w2, h1[k * NL + l], s[l]);
        }
        mlp_unit2(f, w, j, s, s3);
    }
    const double b = f->b3[0];
    MCL_SIMD
    for (int l = 0; l < NL; l++) w->out[l] = (float)(s3[l] + b);
}

/* Blocks of a call: block b holds entries [b·NL, min(b·NL + NL, m)); nl of them. */
static int block_len(int64_t m, int64_t b) { return (int)(m - b * NL < NL ? m - b * NL : NL); }

/* The backward's parts: blocks [b0, b1) of part q of the nb blocks, a fixed function of m. */
static int64_t n_parts(int64_t nb)
{
    const int64_t p = (nb + SMN_PART_BLOCKS - 1) / SMN_PART_BLOCKS;
    return p < SMN_PARTS ? p : SMN_PARTS;
}
static void part_range(int64_t nb, int64_t parts, int64_t q, int64_t *b0, int64_t *b1)
{
    *b0 = nb * q / parts;
    *b1 = nb * (q + 1) / parts;
}

/* forward: M = M0;  M[idx_e] = W3 lrelu(W2 lrelu(W1 zs_e + b1) + b2) + b3,  e = 0..m-1
 *   M0 [any, numel n], idx [m], zs [m,2], W1 [H,2], b1 [H], W2 [H,H], b2 [H], W3 [1,H], b3 [1]
 *   -> M [shape of M0]. The entries are independent (distinct indices): blocks in parallel. */
/* The writes of smn_write and smn_write_eff: v_e = phi(zs_e) by blocks of NL entries
 * (mlp_block), M[idx_e] = v_e and, when E is given, E[idx_e] = W[idx_e] + v_e. */
MCL_HOT static mcl_status write_values(mcl_backend *be, const smn_phi *f, const float *idx, const float *zs,
                                       int64_t m, float *M, const float *W, float *E, const char *name)
{
    const int64_t nb = (m + NL - 1) / NL, H = f->H;
    int oom = 0;
#pragma omp parallel if (m * H * H >= SMN_WORK_PAR_MIN)
    {
        smn_ws w;
        const int ok = ws_alloc(&w, f, 1, 0);
        if (!ok) {
#pragma omp atomic write
            oom = 1;
        }
#pragma omp for schedule(static)
        for (int64_t b = 0; b < nb; b++) {
            if (!ok) continue;
            const int64_t e0 = b * NL;
            const int nl = block_len(m, b);
            load_zs(&w, zs, e0, nl);
            mlp_block(f, &w, w.h1);
            for (int l = 0; l < nl; l++) {
                const int64_t i = (int64_t)idx[e0 + l];
                M[i] = w.out[l];
                if (E) E[i] = W[i] + w.out[l];
            }
        }
        if (ok) ws_free(&w);
    }
    if (oom) return mcl_ctx_set_error(be->ctx, MCL_ERR_OOM, "%s: out of host memory (work space)", name);
    return MCL_OK;
}

mcl_status mcl_ref_smn_write_fwd(mcl_backend *be, const mcl_op_args *a)
{
    const smn_phi f = phi_of(a);
    const float *M0 = mcl_ref_ptr(a->in[0]), *idx = mcl_ref_ptr(a->in[1]), *zs = mcl_ref_ptr(a->in[2]);
    float *M = mcl_ref_ptr(a->out[0]);
    const int64_t n = mcl_tensor_numel(a->in[0]), m = a->in[1]->shape[0];
    const mcl_status s = check_write_set(be, a);
    if (s != MCL_OK) return s;
    if (M != M0) memcpy(M, M0, (size_t)n * sizeof *M); /* out[0] may be M0 itself (ops.def) */
    return write_values(be, &f, idx, zs, m, M, NULL, NULL, "smn_write");
}

/* smn_write_eff (issue 28: the fast-step write keeping E = W + M, in place, no output)
 *   v_e = W3 lrelu(W2 lrelu(W1 zs_e + b1) + b2) + b3   (smn_write's value, mlp_block)
 *   M[idx_e] = v_e;  E[idx_e] = W[idx_e] + v_e           e = 0..m-1
 *   in: M [any, numel n], idx [m], zs [m,2], W1 [H,2], b1 [H], W2 [H,H], b2 [H], W3 [1,H],
 *       b3 [1], W [shape of M], E [shape of M]; M and E written in place, nothing else. */
mcl_status mcl_ref_smn_write_eff_fwd(mcl_backend *be, const mcl_op_args *a)
{
    const smn_phi f = phi_of(a);
    const mcl_status s = check_write_set(be, a);
    if (s != MCL_OK) return s;
    return write_values(be, &f, mcl_ref_ptr(a->in[1]), mcl_ref_ptr(a->in[2]), a->in[1]->shape[0],
                        mcl_ref_ptr(a->in[0]), mcl_ref_ptr(a->in[9]), mcl_ref_ptr(a->in[10]), "smn_write_eff");
}

/* The backward of one block, after mlp_block, with w->g [NL] the lanes' g_e (0 past the
 * block's end). Lane by lane, in double, into the per-lane sums S (phi's six tensors in the
 * layout off[], element t at S[t·NL + l]):
 *   sb3 += g                            sW3[j] += g h2[j]
 *   d2[j] = g W3[j] lrelu'(a2[j])       sb2[j] += d2[j]       (sW2: sum_w2, per chunk)
 *   d1[k] = (Σ_j W2[j,k] d2[j]) lrelu'(a1[k])    (j in order)
 *   sb1[k] += d1[k]                     sW1[k,c] += d1[k] zs_c
 * -> d2 [H][NL] (a slot of the chunk), w->d1 [H][NL] */
/* d1[k] = t ⊙ lrelu'(a1[k]) and its sums into sb1, sW1 (unit k's NL lanes) */
static inline void bwd_unit1(smn_ws *w, int64_t k, const double *t, double slope, double *sW1,
                             double *sb1)
{
    const float *a1 = w->a1 + k * NL;
    double *d1 = w->d1 + k * NL;
    MCL_SIMD
    for (int l = 0; l < NL; l++) {
        d1[l] = t[l] * (a1[l] > 0.0f ? 1.0 : slope);
        sb1[k * NL + l] += d1[l];
        sW1[2 * k * NL + l] += d1[l] * w->z0[l];
        sW1[(2 * k + 1) * NL + l] += d1[l] * w->z1[l];
    }
}

MCL_HOT static void bwd_block(const smn_phi *f, smn_ws *w, double *d2, const int64_t *off)
{
    const int64_t H = f->H;
    const double slope = f->slope;
    double *sW1 = w->S + off[0] * NL, *sb1 = w->S + off[1] * NL, *sb2 = w->S + off[3] * NL;
    double *sW3 = w->S + off[4] * NL, *sb3 = w->S + off[5] * NL;
    MCL_SIMD
    for (int l = 0; l < NL; l++) sb3[l] += w->g[l];
    for (int64_t j = 0; j < H; j++) {
        const double w3 = f->W3[j];
        const float *a2 = w->a2 + j * NL, *h2 = w->h2 + j * NL;
        MCL_SIMD
        for (int l = 0; l < NL; l++) {
            sW3[j * NL + l] += w->g[l] * h2[l];
            d2[j * NL + l] = w->g[l] * w3 * (a2[l] > 0.0f ? 1.0 : slope);
            sb2[j * NL + l] += d2[j * NL + l];
        }
    }
    /* d1 = W2ᵀ d2 ⊙ lrelu'(a1): SMN_JB_D1 units k at a time (independent sums over j, each in
     * increasing j as one at a time) */
    int64_t k = 0;
    for (; k + SMN_JB_D1 <= H; k += SMN_JB_D1) {
        double t[SMN_JB_D1][NL];
        for (int q = 0; q < SMN_JB_D1; q++)
            for (int l = 0; l < NL; l++) t[q][l] = 0.0;
        for (int64_t j = 0; j < H; j++) {
            const double *dj = d2 + j * NL;
            for (int q = 0; q < SMN_JB_D1; q++) {
                const double w2 = w->W2[j * H + k + q];
                MCL_SIMD
                for (int l = 0; l < NL; l++) t[q][l] += w2 * dj[l];
            }
        }
        for (int q = 0; q < SMN_JB_D1; q++) bwd_unit1(w, k + q, t[q], slope, sW1, sb1);
    }
    for (; k < H; k++) {
        double t[NL];
        for (int l = 0; l < NL; l++) t[l] = 0.0;
        for (int64_t j = 0; j < H; j++) {
            const double w2 = w->W2[j * H + k];
            MCL_SIMD
            for (int l = 0; l < NL; l++) t[l] += w2 * d2[j * NL + l];
        }
        bwd_unit1(w, k, t, slope, sW1, sb1);
    }
}

/* out[t] = Σ_l S[t·NL + l] for t < NP, the lanes in order (0 + lane 0, then + lane 1, ...):
 * SMN_TOT_ROWS rows side by side, so that as many independent chains of adds are in flight
 * (one row at a time, each add waited for the one before it) */
#define SMN_TOT_ROWS 8
static void lane_totals(const double *S, int64_t NP, double *out)
{
    int64_t t = 0;
    for (; t + SMN_TOT_ROWS <= NP; t += SMN_TOT_ROWS) {
        double s[SMN_TOT_ROWS] = {0.0};
        for (int l = 0; l < NL; l++)
#pragma GCC unroll 8
            for (int r = 0; r < SMN_TOT_ROWS; r++) s[r] += S[(t + r) * NL + l];
        for (int r = 0; r < SMN_TOT_ROWS; r++) out[t + r] = s[r];
    }
    for (; t < NP; t++) {
        double s = 0.0;
        for (int l = 0; l < NL; l++) s += S[t * NL + l];
        out[t] = s;
    }
}

/* sW2[j,k] += d2[j] h1[k] for the chunk's nc blocks in order, lane by lane (the same additions
 * as block by block; each accumulator is loaded and stored once per chunk). first: the part's
 * first chunk, whose accumulators start at +0.0 instead of being loaded (the value a zero-filled
 * sW2 would give, so the same bits), so that sW2 is not zero-filled.
 *   h1, d2 [nc][H][NL] -> sW2 [H·H][NL] */
MCL_HOT_INLINE void sum_w2_as(int64_t H, const double *h1, const double *d2, int nc, int first,
                              double *sW2)
{
    const int64_t HL = H * NL;
    for (int64_t j = 0; j < H; j++) {
        int64_t k = 0;
        for (; k + SMN_JB_W2 <= H; k += SMN_JB_W2) { /* SMN_JB_W2 accumulators in flight */
            double *s = sW2 + (j * H + k) * NL, acc[SMN_JB_W2][NL];
            for (int q = 0; q < SMN_JB_W2; q++)
                for (int l = 0; l < NL; l++) acc[q][l] = first ? 0.0 : s[q * NL + l];
            for (int i = 0; i < nc; i++) {
                const double *dj = d2 + i * HL + j * NL, *hk = h1 + i * HL + k * NL;
                for (int q = 0; q < SMN_JB_W2; q++)
                    MCL_SIMD
                    for (int l = 0; l < NL; l++) acc[q][l] += dj[l] * hk[q * NL + l];
            }
            for (int q = 0; q < SMN_JB_W2; q++)
                for (int l = 0; l < NL; l++) s[q * NL + l] = acc[q][l];
        }
        for (; k < H; k++) {
            double *s = sW2 + (j * H + k) * NL, acc[NL];
            for (int l = 0; l < NL; l++) acc[l] = first ? 0.0 : s[l];
            for (int i = 0; i < nc; i++) {
                const double *dj = d2 + i * HL + j * NL, *hk = h1 + i * HL + k * NL;
                MCL_SIMD
                for (int l = 0; l < NL; l++) acc[l] += dj[l] * hk[l];
            }
            for (int l = 0; l < NL; l++) s[l] = acc[l];
        }
    }
}

/* sum_w2_as with first a constant in each instance */
MCL_HOT static void sum_w2(int64_t H, const double *h1, const double *d2, int nc, int first,
                           double *sW2)
{
    if (first)
        sum_w2_as(H, h1, d2, nc, 1, sW2);
    else
        sum_w2_as(H, h1, d2, nc, 0, sW2);
}

/* gzs[e0 + l, c] += Σ_k W1[k,c] d1[k]   (double, k in order, rounded once), l < nl */
MCL_HOT static void gzs_block(const smn_phi *f, const smn_ws *w, float *gzs, int64_t e0, int nl)
{
    for (int c = 0; c < 2; c++) {
        double t[NL];
        for (int l = 0; l < NL; l++) t[l] = 0.0;
        for (int64_t k = 0; k < f->H; k++) {
            const double w1 = f->W1[2 * k + c];
            const double *d1 = w->d1 + k * NL;
            MCL_SIMD
            for (int l = 0; l < NL; l++) t[l] += w1 * d1[l];
        }
        for (int l = 0; l < nl; l++) gzs[2 * (e0 + l) + c] += (float)t[l];
    }
}

/* gM0[i] += gM[i] for every i in [0, n) that no entry writes, the indices increasing (checked):
 * the run before each entry e, [idx_{e-1} + 1, idx_e), and the one after the last, the entries
 * cut into SMN_GAP_PARTS ranges (each element gets its one addition, whatever the cut) */
#define SMN_GAP_PARTS 16
static void add_run(float *gM0, const float *gM, int64_t lo, int64_t hi)
{
    MCL_SIMD
    for (int64_t i = lo; i < hi; i++) gM0[i] += gM[i];
}

static void add_unwritten(float *gM0, const float *gM, const float *idx, int64_t m, int64_t n)
{
    const int parts = n >= SMN_ELEM_PAR_MIN ? SMN_GAP_PARTS : 1;
#pragma omp parallel for schedule(static) if (parts > 1)
    for (int q = 0; q < parts; q++) {
        const int64_t e0 = m * q / parts, e1 = m * (q + 1) / parts;
        for (int64_t e = e0; e < e1; e++) add_run(gM0, gM, e == 0 ? 0 : (int64_t)idx[e - 1] + 1, (int64_t)idx[e]);
        if (q == parts - 1) add_run(gM0, gM, m == 0 ? 0 : (int64_t)idx[m - 1] + 1, n);
    }
}

/* backward: see the header. gout[0] gM [shape of M0] -> gin[0] gM0 [shape of M0], gin[2] gzs
 * [m,2], gin[3..8] gW1 [H,2], gb1 [H], gW2 [H,H], gb2 [H], gW3 [1,H], gb3 [1] (each accumulated,
 * any may be NULL; gin[1], idx's, is never written). The phi gradients are sums over the
 * entries: each part sums its blocks in order into per-lane sums and adds its lanes in order
 * (the partial sums P[q] below), then the parts are added in order, rounded once and added to
 * gin; all in double. */
MCL_HOT mcl_status mcl_ref_smn_write_bwd(mcl_backend *be, const mcl_op_args *a)
{
    const smn_phi f = phi_of(a);
    const float *idx = mcl_ref_ptr(a->in[1]), *zs = mcl_ref_ptr(a->in[2]);
    const float *gM = mcl_ref_ptr(a->gout[0]);
    const int64_t n = mcl_tensor_numel(a->in[0]), m = a->in[1]->shape[0], H = f.H;
    if (indices_valid(idx, m, n, 1)) { /* increasing (the common case): no map */
        if (a->gin[0]) add_unwritten(mcl_ref_ptr(a->gin[0]), gM, idx, m, n);
    } else {
        mcl_status s;
        unsigned char *written = written_map(be, a, &s);
        if (!written) return s;
        if (a->gin[0]) { /* gM0 += gM where nothing was written */
            float *gM0 = mcl_ref_ptr(a->gin[0]);
#pragma omp parallel for schedule(static) if (n >= SMN_ELEM_PAR_MIN)
            for (int64_t i = 0; i < n; i++)
                if (!written[i]) gM0[i] += gM[i];
        }
        free(written);
    }
    float *gzs = a->gin[2] ? mcl_ref_ptr(a->gin[2]) : NULL;
    int want_phi = 0;
    for (int k = 3; k < 9; k++) want_phi |= a->gin[k] != NULL;
    if (!want_phi && !gzs) return MCL_OK;

    /* one part's sums, laid out as the six phi tensors in order */
    const int64_t off[7] = {0, 2 * H, 3 * H, 3 * H + H * H, 4 * H + H * H, 5 * H + H * H,
                            5 * H + H * H + 1};
    const int64_t NP = off[6], HL = H * NL, nb = (m + NL - 1) / NL, parts = n_parts(nb);
    double *P = malloc((size_t)((parts + 1) * NP) * sizeof *P); /* the parts' sums, then their total */
    if (!P) return mcl_ctx_set_error(be->ctx, MCL_ERR_OOM, "smn_write backward: out of host memory");
    int oom = 0;
#pragma omp parallel if (m * H * H >= SMN_WORK_PAR_MIN)
    {
        smn_ws w;
        const int ok = ws_alloc(&w, &f, SMN_CHUNK, NP);
        if (!ok) {
#pragma omp atomic write
            oom = 1;
        }
#pragma omp for schedule(static)
        for (int64_t q = 0; q < parts; q++) {
            if (!ok) continue;
            int64_t b0, b1;
            part_range(nb, parts, q, &b0, &b1);
            /* the part's sums start at zero: all but sW2's rows [off[2], off[3]), which
             * sum_w2 starts at +0.0 in the part's first chunk */
            memset(w.S, 0, (size_t)(off[2] * NL) * sizeof *w.S);
            memset(w.S + off[3] * NL, 0, (size_t)((NP - off[3]) * NL) * sizeof *w.S);
            for (int64_t c0 = b0; c0 < b1; c0 += SMN_CHUNK) {
                const int nc = (int)(b1 - c0 < SMN_CHUNK ? b1 - c0 : SMN_CHUNK);
                for (int i = 0; i < nc; i++) {
                    const int64_t e0 = (c0 + i) * NL;
                    const int nl = block_len(m, c0 + i);
                    load_zs(&w, zs, e0, nl);
                    for (int l = 0; l < NL; l++) w.g[l] = l < nl ? gM[(int64_t)idx[e0 + l]] : 0.0;
                    mlp_block(&f, &w, w.h1 + i * HL);
                    bwd_block(&f, &w, w.d2 + i * HL, off);
                    if (gzs) gzs_block(&f, &w, gzs, e0, nl);
                }
                sum_w2(H, w.h1, w.d2, nc, c0 == b0, w.S + off[2] * NL);
            }
            lane_totals(w.S, NP, P + q * NP);
        }
        if (ok) ws_free(&w);
    }
    if (oom) {
        free(P);
        return mcl_ctx_set_error(be->ctx, MCL_ERR_OOM, "smn_write backward: out of host memory");
    }
    /* the parts in order: tot[t] = ((0 + P[0][t]) + P[1][t]) + ..., every t side by side */
    double *tot = P + parts * NP;
    for (int64_t t = 0; t < NP; t++) tot[t] = 0.0;
    for (int64_t q = 0; q < parts; q++) {
        MCL_SIMD
        for (int64_t t = 0; t < NP; t++) tot[t] += P[q * NP + t];
    }
    for (int k = 0; k < 6; k++) {
        if (!a->gin[3 + k]) continue;
        float *gp = mcl_ref_ptr(a->gin[3 + k]);
        for (int64_t t = 0; t < off[k + 1] - off[k]; t++) gp[t] += (float)tot[off[k] + t];
    }
    free(P);
    return MCL_OK;
}

/* wcst_act (ops.def): the WCST agent's episode in place, one card after the other.
 *   in[0] state [S]: rule, streak, solved, countdown, next, then S - 5 draws (ops.def)
 *   in[1] logits [L,A], in[2] cards [L,3], in[3] act [L] (written), in[4] reward [L] (written)
 *   p.u[0..2] seed, stream, counter; p.i[0] solve episodes; p.f[0], p.f[1] the rewards
 * Card c: e_a = exp(l_a − max_a l_a) (mcl_exp_nonpos: plain float operations, which the kernel
 * repeats, so both backends draw the same action), z = e_0 + .. + e_{A-1} in order,
 * u = mcl_rng_uniform(seed, stream, counter + c), act = the first a with u·z < e_0 + .. + e_a
 * (A − 1 if none), reward = act == cards[c, rule] ? f0 : f1. Then the rule's schedule, once per
 * call (an episode), as mcl_wcst_step's at an episode's end (src/data/wcst.c). */
mcl_status mcl_ref_wcst_act_fwd(mcl_backend *be, const mcl_op_args *a)
{
    (void)be;
    float *st = mcl_ref_ptr(a->in[0]);
    const float *lg = mcl_ref_ptr(a->in[1]), *cards = mcl_ref_ptr(a->in[2]);
    float *act = mcl_ref_ptr(a->in[3]), *rew = mcl_ref_ptr(a->in[4]);
    const int64_t S = a->in[0]->shape[0], L = a->in[1]->shape[0], A = a->in[1]->shape[1];
    const int rule = st[0] >= 0.0f && st[0] < 3.0f ? (int)st[0] : -1; /* else every card is wrong */
    int perfect = 1;
    for (int64_t c = 0; c < L; c++) {
        const float *l = lg + c * A;
        float m = l[0], z = 0.0f, e[64];
        for (int64_t k = 1; k < A; k++) m = l[k] > m ? l[k] : m;
        for (int64_t k = 0; k < A; k++) z += e[k] = mcl_exp_nonpos(l[k] - m);
        const float t = mcl_rng_uniform(a->p.u[0], a->p.u[1], a->p.u[2] + (uint64_t)c) * z;
        float acc = 0.0f;
        int64_t pick = A - 1;
        for (int64_t k = 0; k < A; k++) {
            acc += e[k];
            if (t < acc) {
                pick = k;
                break;
            }
        }
        const int ok = rule >= 0 && cards[c * 3 + rule] == (float)pick;
        act[c] = (float)pick;
        rew[c] = ok ? a->p.f[0] : a->p.f[1];
        perfect &= ok;
    }
    /* the schedule: streak, solve (draw d), countdown, switch (draw the new rule's offset) */
    float streak = perfect ? st[1] + 1.0f : 0.0f, solved = st[2], count = st[3], next = st[4];
    float r = st[0];
    if (solved == 0.0f && streak >= (float)a->p.i[0]) {
        const float d = next >= 0.0f && next < (float)(S - 5) ? st[5 + (int64_t)next] : 0.0f;
        solved = 1.0f;
        count = 1.0f + (d >= 0.0f ? d : 0.0f);
        next += 1.0f;
    }
    if (solved != 0.0f) {
        count -= 1.0f;
        if (count <= 0.0f) {
            const float o = next >= 0.0f && next < (float)(S - 5) ? st[5 + (int64_t)next] : 0.0f;
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
    return MCL_OK;
}

/* ------------------------------------------------------------------------------------ */
/* smn_avg_z (issue 28: the write's scale, scale, add, scale, add, gather, grad_preproc in one
 * op, nn/metanet.c write_layer) */

/* The error for the first entry of idx that indices_valid refused (op: the op's name), always
 * MCL_ERR_INVALID: not an integer in [0, n), or (order 0) below the entry before it, or
 * (order 1) not above it. */
static mcl_status bad_index(mcl_backend *be, const char *op, const float *idx, int64_t m, int64_t n, int order)
{
    for (int64_t e = 0; e < m; e++) {
        const float v = idx[e];
        if (!(v >= 0.0f && v < (float)n && v == floorf(v)))
            return mcl_ctx_set_error(be->ctx, MCL_ERR_INVALID, "%s: idx[%lld] = %g is not an integer in [0, %lld)",
                                     op, (long long)e, (double)v, (long long)n);
        if (e > 0 && order == 0 && v < idx[e - 1])
            return mcl_ctx_set_error(be->ctx, MCL_ERR_INVALID,
                                     "%s: idx[%lld] = %g is below idx[%lld] = %g, but idx was said to be "
                                     "non-decreasing (p.i[0] = 1)",
                                     op, (long long)e, (double)v, (long long)(e - 1), (double)idx[e - 1]);
        if (e > 0 && order > 0 && !(v > idx[e - 1]))
            return mcl_ctx_set_error(be->ctx, MCL_ERR_INVALID,
                                     "%s: idx[%lld] = %g is not above idx[%lld] = %g (the indices must be "
                                     "strictly increasing)",
                                     op, (long long)e, (double)v, (long long)(e - 1), (double)idx[e - 1]);
    }
    return mcl_ctx_set_error(be->ctx, MCL_ERR_INVALID, "%s: idx refused", op); /* not reached */
}

/* smn_avg_z's two loops (smn_avg_write's too), the indices already checked:
 *   In_i = (gamma·I_i) + (beta1·G_i)   every i < n   (In may be I: each i reads only its own)
 *   zs_e = preproc(In[idx_e] + (beta2·G[idx_e]))   every entry e < m
 * I, G, In [n]; idx [m]; zs [m,2] */
MCL_HOT static void avg_z(const float *I, const float *G, const float *idx, float *In, float *zs, int64_t n,
                          int64_t m, float gamma, float beta1, float beta2, float P)
{
    float thr, ep;
    mcl_grad_preproc_consts(P, &thr, &ep);
#pragma omp parallel for schedule(static) if (n >= SMN_ELEM_PAR_MIN)
    for (int64_t i = 0; i < n; i++) {
        const float u = gamma * I[i], w = beta1 * G[i];
        In[i] = u + w;
    }
    /* two passes: everything but the logarithm without a branch (vectorized, gathers), then
     * log|x| / P where |x| >= thr (its first column holds |x| there, -1 elsewhere) */
#pragma omp parallel for simd schedule(static) if (m >= SMN_ELEM_PAR_MIN)
    for (int64_t e = 0; e < m; e++) {
        const int64_t i = (int64_t)idx[e];
        const float b = beta2 * G[i], x = In[i] + b, ax = fabsf(x);
        const int big = ax >= thr;
        zs[2 * e] = big ? ax : -1.0f;
        zs[2 * e + 1] = big ? (x > 0.0f ? 1.0f : -1.0f) : ep * x;
    }
#pragma omp parallel for schedule(static) if (m >= SMN_ELEM_PAR_MIN)
    for (int64_t e = 0; e < m; e++)
        if (zs[2 * e] >= 0.0f) zs[2 * e] = logf(zs[2 * e]) / P; /* |x| >= thr > 0 */
}

/* forward:  I'_i = (gamma·I_i) + (beta1·G_i)                          for every i < n
 *           z_e  = I'[idx_e] + (beta2·G[idx_e]);  zs_e = preproc(z_e)   for every entry e < m
 *   I [any, numel n], G [shape of I], idx [m] -> out[0] I' [shape of I], out[1] zs [m,2]
 *   p.f = {gamma, beta1, beta2, P}; preproc as grad_preproc (thr = e^-P, ep = e^P in float);
 *   p.i[0] = 1: the caller says idx is non-decreasing (OpenCL then takes one launch).
 * Each product is rounded to float before its sum (built with -ffp-contract=off), so the
 * values are those of mcl_scale, mcl_add and mcl_grad_preproc in a row. An index that is not
 * an integer in [0, n), or a decrease in idx under p.i[0] = 1, is refused (MCL_ERR_INVALID)
 * before anything is written. */
mcl_status mcl_ref_smn_avg_z_fwd(mcl_backend *be, const mcl_op_args *a)
{
    const float *I = mcl_ref_ptr(a->in[0]), *G = mcl_ref_ptr(a->in[1]), *idx = mcl_ref_ptr(a->in[2]);
    float *In = mcl_ref_ptr(a->out[0]), *zs = mcl_ref_ptr(a->out[1]);
    const int64_t n = mcl_tensor_numel(a->in[0]), m = a->in[2]->shape[0];
    const float gamma = a->p.f[0], beta1 = a->p.f[1], beta2 = a->p.f[2], P = a->p.f[3];
    if (!indices_valid(idx, m, n, a->p.i[0] ? 0 : -1))
        return bad_index(be, "smn_avg_z", idx, m, n, a->p.i[0] ? 0 : -1);
    avg_z(I, G, idx, In, zs, n, m, gamma, beta1, beta2, P);
    return MCL_OK;
}

/* ------------------------------------------------------------------------------------ */
/* smn_avg_write (issue 28, seventh round: a fast step's write in one op, nn/metanet.c
 * write_layer with E = W + M kept) */

/* forward, in place:
 *   I_i  = (gamma·I_i) + (beta1·G_i)                                  every i < n
 *   zs_e = preproc(I[idx_e] + (beta2·G[idx_e]))                        every entry e < m
 *   v_e  = W3 lrelu(W2 lrelu(W1 zs_e + b1) + b2) + b3;  M[idx_e] = v_e;  E[idx_e] = W[idx_e] + v_e
 *   in: M [any, numel n], idx [m], zs [m,2] (written), W1 [H,2], b1 [H], W2 [H,H], b2 [H],
 *       W3 [1,H], b3 [1], W [shape of M], E [shape of M], I [shape of M] (updated), G [shape of M]
 *   p.f = {slope, gamma, beta1, beta2, P}.
 * smn_avg_z's loops (I in place) and smn_write_eff's write_values in a row: the same floats.
 * An index that is not an integer in [0, n), or not above the one before it, is refused
 * (MCL_ERR_INVALID) before anything is written. */
mcl_status mcl_ref_smn_avg_write_fwd(mcl_backend *be, const mcl_op_args *a)
{
    const smn_phi f = phi_of(a);
    const float *idx = mcl_ref_ptr(a->in[1]), *G = mcl_ref_ptr(a->in[12]);
    float *zs = mcl_ref_ptr(a->in[2]), *I = mcl_ref_ptr(a->in[11]);
    const int64_t n = mcl_tensor_numel(a->in[0]), m = a->in[1]->shape[0];
    const float gamma = a->p.f[1], beta1 = a->p.f[2], beta2 = a->p.f[3], P = a->p.f[4];
    if (!indices_valid(idx, m, n, 1)) return bad_index(be, "smn_avg_write", idx, m, n, 1);
    avg_z(I, G, idx, I, zs, n, m, gamma, beta1, beta2, P);
    return write_values(be, &f, idx, zs, m, mcl_ref_ptr(a->in[0]), mcl_ref_ptr(a->in[9]),
                        mcl_ref_ptr(a->in[10]), "smn_avg_write");
}

/* ------------------------------------------------------------------------------------ */
/* smn_write_add (issue 28, seventh round: the window end's W + M_{k-1} with the rebuild's
 * write, nn/metanet.c rebuild_fast) */

/* The index contract of smn_write_add: smn_write's, in strictly increasing order (one pass,
 * indices_valid; bad_index names the first entry that breaks it) */
static mcl_status write_add_indices(mcl_backend *be, const float *idx, int64_t m, int64_t n)
{
    return indices_valid(idx, m, n, 1) ? MCL_OK : bad_index(be, "smn_write_add", idx, m, n, 1);
}

/* forward:  M = M0 (i0 = 0) or 0 (i0 = 1);  M[idx_e] = W3 lrelu(W2 lrelu(W1 zs_e + b1) + b2) + b3;
 *           out = W + M   (smn_write's values, then add's float sum)
 *   M0 [any, numel n], idx [m], zs [m,2], W1 [H,2], b1 [H], W2 [H,H], b2 [H], W3 [1,H], b3 [1],
 *   W [shape of M0] -> out [shape of M0] */
mcl_status mcl_ref_smn_write_add_fwd(mcl_backend *be, const mcl_op_args *a)
{
    const smn_phi f = phi_of(a);
    const float *idx = mcl_ref_ptr(a->in[1]), *W = mcl_ref_ptr(a->in[9]);
    const int64_t n = mcl_tensor_numel(a->in[0]), m = a->in[1]->shape[0];
    const mcl_status s = write_add_indices(be, idx, m, n);
    if (s != MCL_OK) return s;
    /* out = W + M0 (or W + 0) everywhere, then at the written elements M = v and out = W + v:
     * write_values with out as both its M and its E (E's store comes last) */
    const float *M0 = a->p.i[0] ? NULL : mcl_ref_ptr(a->in[0]);
    float *O = mcl_ref_ptr(a->out[0]);
#pragma omp parallel for schedule(static) if (n >= SMN_ELEM_PAR_MIN)
    for (int64_t i = 0; i < n; i++) O[i] = W[i] + (M0 ? M0[i] : 0.0f);
    return write_values(be, &f, idx, mcl_ref_ptr(a->in[2]), m, O, W, O, "smn_write_add");
}

/* backward:  gW += gout;  then smn_write's backward with gM = gout (gzs, the phi gradients,
 *            and gM0 += gout where nothing was written, unless i0 = 1: M0 was not read)
 *   gout[0] [shape of M0];  gin[0] [shape of M0], gin[2] [m,2], gin[3..8] like phi, gin[9]
 *   like W (each may be NULL; gin[1] is never written) */
mcl_status mcl_ref_smn_write_add_bwd(mcl_backend *be, const mcl_op_args *a)
{
    const int64_t n = mcl_tensor_numel(a->in[0]);
    const mcl_status s = write_add_indices(be, mcl_ref_ptr(a->in[1]), a->in[1]->shape[0], n);
    if (s != MCL_OK) return s;
    if (a->gin[9]) {
        const float *G = mcl_ref_ptr(a->gout[0]);
        float *GW = mcl_ref_ptr(a->gin[9]);
#pragma omp parallel for schedule(static) if (n >= SMN_ELEM_PAR_MIN)
        for (int64_t i = 0; i < n; i++) GW[i] += G[i];
    }
    mcl_op_args b = *a;
    b.op = MCL_OP_SMN_WRITE;
    b.in[9] = NULL;
    b.gin[9] = NULL;
    if (a->p.i[0]) b.gin[0] = NULL;
    return mcl_ref_smn_write_bwd(be, &b);
}
