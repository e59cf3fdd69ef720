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
 * buffer, so the front end cannot check them; here forward and backward both check them, with
 * a map of n bytes, and refuse a bad one with MCL_ERR_INVALID and a message.
 *
 * Arithmetic. The forward's dot products are summed in double in index order and rounded once
 * (a1, a2, the output); the activations are floats, as stored values would be. The backward
 * recomputes the same floats and carries its deltas and sums in double. The sums over the
 * entries are split into parts, a fixed function of m (at most SMN_PARTS of at least
 * SMN_PART_MIN entries each): OpenMP runs the parts in parallel, each summing its entries in
 * order, then the parts are added in part order. So no value depends on the thread count or
 * the schedule.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ref.h"

/* Elements below which grad_preproc and the gradient copy of smn_write stay serial. */
#define SMN_ELEM_PAR_MIN ((int64_t)1 << 16)
/* Entries × H² below which smn_write's loops over entries stay serial. */
#define SMN_WORK_PAR_MIN ((int64_t)1 << 15)
/* The entries are summed in at most SMN_PARTS parts of at least SMN_PART_MIN entries. */
#define SMN_PARTS 64
#define SMN_PART_MIN 32

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

/* g_phi at one entry, as the forward computes it (activations in float, dot products in double
 * in index order, rounded once):
 *   a1 = W1 zs + b1,  h1 = lrelu(a1),  a2 = W2 h1 + b2,  h2 = lrelu(a2);  returns W3 h2 + b3
 * zs [2];  a1, h1, a2, h2 [H] (outputs) */
static float mlp(const smn_phi *f, const float *zs, float *a1, float *h1, float *a2, float *h2)
{
    const int64_t H = f->H;
    for (int64_t k = 0; k < H; k++) {
        a1[k] = (float)((double)f->W1[2 * k] * zs[0] + (double)f->W1[2 * k + 1] * zs[1] + f->b1[k]);
        h1[k] = lrelu(a1[k], f->slope);
    }
    for (int64_t j = 0; j < H; j++) {
        double s = 0.0;
        for (int64_t k = 0; k < H; k++) s += (double)f->W2[j * H + k] * h1[k];
        a2[j] = (float)(s + f->b2[j]);
        h2[j] = lrelu(a2[j], f->slope);
    }
    double s = 0.0;
    for (int64_t j = 0; j < H; j++) s += (double)f->W3[j] * h2[j];
    return (float)(s + f->b3[0]);
}

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

/* Entries [e0, e1) of part q of m (parts: a fixed function of m, see the header). */
static int64_t n_parts(int64_t m)
{
    const int64_t p = (m + SMN_PART_MIN - 1) / SMN_PART_MIN;
    return p < SMN_PARTS ? p : SMN_PARTS;
}
static void part_range(int64_t m, int64_t parts, int64_t q, int64_t *e0, int64_t *e1)
{
    *e0 = m * q / parts;
    *e1 = m * (q + 1) / parts;
}

/* forward: M = M0;  M[idx_e] = W3 lrelu(W2 lrelu(W1 zs_e + b1) + b2) + b3,  e = 0..m-1
 *   M0 [any, numel n], idx [m], zs [m,2], W1 [H,2], b1 [H], W2 [H,H], b2 [H], W3 [1,H], b3 [1]
 *   -> M [shape of M0]. The entries are independent (distinct indices): parts in parallel. */
mcl_status mcl_ref_smn_write_fwd(mcl_backend *be, const mcl_op_args *a)
{
    const smn_phi f = phi_of(a);
    const float *M0 = mcl_ref_ptr(a->in[0]), *idx = mcl_ref_ptr(a->in[1]), *zs = mcl_ref_ptr(a->in[2]);
    float *M = mcl_ref_ptr(a->out[0]);
    const int64_t n = mcl_tensor_numel(a->in[0]), m = a->in[1]->shape[0], H = f.H;
    mcl_status s;
    unsigned char *written = written_map(be, a, &s);
    if (!written) return s;
    free(written);
    const int64_t parts = n_parts(m);
    float *ws = malloc((size_t)(parts * 4 * H) * sizeof *ws); /* a1, h1, a2, h2 per part */
    if (!ws)
        return mcl_ctx_set_error(be->ctx, MCL_ERR_OOM, "smn_write: out of host memory (work space)");
    memcpy(M, M0, (size_t)n * sizeof *M);
#pragma omp parallel for schedule(static) if (m * H * H >= SMN_WORK_PAR_MIN)
    for (int64_t q = 0; q < parts; q++) {
        float *a1 = ws + q * 4 * H, *h1 = a1 + H, *a2 = h1 + H, *h2 = a2 + H;
        int64_t e0, e1;
        part_range(m, parts, q, &e0, &e1);
        for (int64_t e = e0; e < e1; e++) M[(int64_t)idx[e]] = mlp(&f, zs + 2 * e, a1, h1, a2, h2);
    }
    free(ws);
    return MCL_OK;
}

/* backward: see the header. gout[0] gM [shape of M0] -> gin[0] gM0 [shape of M0], gin[2] gzs
 * [m,2], gin[3..8] gW1 [H,2], gb1 [H], gW2 [H,H], gb2 [H], gW3 [1,H], gb3 [1] (each accumulated,
 * any may be NULL; gin[1], idx's, is never written). The phi gradients are sums over the
 * entries: each part sums its entries in order in double (the partial sums P[q] below), then
 * the parts are added in order, rounded once and added to gin. */
mcl_status mcl_ref_smn_write_bwd(mcl_backend *be, const mcl_op_args *a)
{
    const smn_phi f = phi_of(a);
    const float *idx = mcl_ref_ptr(a->in[1]), *zs = mcl_ref_ptr(a->in[2]);
    const float *gM = mcl_ref_ptr(a->gout[0]);
    const int64_t n = mcl_tensor_numel(a->in[0]), m = a->in[1]->shape[0], H = f.H;
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
    float *gzs = a->gin[2] ? mcl_ref_ptr(a->gin[2]) : NULL;
    int want_phi = 0;
    for (int k = 3; k < 9; k++) want_phi |= a->gin[k] != NULL;
    if (!want_phi && !gzs) return MCL_OK;

    /* one part's sums, laid out as the six phi tensors in order */
    const int64_t off[7] = {0, 2 * H, 3 * H, 3 * H + H * H, 4 * H + H * H, 5 * H + H * H,
                            5 * H + H * H + 1};
    const int64_t NP = off[6], parts = n_parts(m);
    double *P = malloc((size_t)(parts * (NP + 2 * H)) * sizeof *P); /* sums, then d1, d2 */
    float *ws = malloc((size_t)(parts * 4 * H) * sizeof *ws);       /* a1, h1, a2, h2 */
    if (!P || !ws) {
        free(P);
        free(ws);
        return mcl_ctx_set_error(be->ctx, MCL_ERR_OOM, "smn_write backward: out of host memory");
    }
#pragma omp parallel for schedule(static) if (m * H * H >= SMN_WORK_PAR_MIN)
    for (int64_t q = 0; q < parts; q++) {
        double *S = P + q * NP, *d1 = P + parts * NP + q * 2 * H, *d2 = d1 + H;
        double *sW1 = S + off[0], *sb1 = S + off[1], *sW2 = S + off[2], *sb2 = S + off[3];
        double *sW3 = S + off[4], *sb3 = S + off[5];
        float *a1 = ws + q * 4 * H, *h1 = a1 + H, *a2 = h1 + H, *h2 = a2 + H;
        for (int64_t t = 0; t < NP; t++) S[t] = 0.0;
        int64_t e0, e1;
        part_range(m, parts, q, &e0, &e1);
        for (int64_t e = e0; e < e1; e++) {
            const float *z = zs + 2 * e;
            const double g = gM[(int64_t)idx[e]];
            (void)mlp(&f, z, a1, h1, a2, h2);
            /* out = W3 h2 + b3 */
            sb3[0] += g;
            for (int64_t j = 0; j < H; j++) sW3[j] += g * h2[j];
            /* h2 = lrelu(a2), a2 = W2 h1 + b2 */
            for (int64_t j = 0; j < H; j++) {
                d2[j] = g * f.W3[j] * (a2[j] > 0.0f ? 1.0 : (double)f.slope);
                sb2[j] += d2[j];
                for (int64_t k = 0; k < H; k++) sW2[j * H + k] += d2[j] * h1[k];
            }
            /* h1 = lrelu(a1), a1 = W1 zs + b1 */
            for (int64_t k = 0; k < H; k++) {
                double t = 0.0;
                for (int64_t j = 0; j < H; j++) t += (double)f.W2[j * H + k] * d2[j];
                d1[k] = t * (a1[k] > 0.0f ? 1.0 : (double)f.slope);
                sb1[k] += d1[k];
                sW1[2 * k] += d1[k] * z[0];
                sW1[2 * k + 1] += d1[k] * z[1];
            }
            if (gzs)
                for (int c = 0; c < 2; c++) {
                    double t = 0.0;
                    for (int64_t k = 0; k < H; k++) t += (double)f.W1[2 * k + c] * d1[k];
                    gzs[2 * e + c] += (float)t;
                }
        }
    }
    for (int k = 0; k < 6; k++) { /* the parts in order */
        if (!a->gin[3 + k]) continue;
        float *gp = mcl_ref_ptr(a->gin[3 + k]);
        for (int64_t t = 0; t < off[k + 1] - off[k]; t++) {
            double sum = 0.0;
            for (int64_t q = 0; q < parts; q++) sum += P[q * NP + off[k] + t];
            gp[t] += (float)sum;
        }
    }
    free(P);
    free(ws);
    return MCL_OK;
}
