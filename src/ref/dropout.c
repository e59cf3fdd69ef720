/* dropout.c — reference inverted dropout with a counter-based (Philox) mask.
 *
 * The keep mask is a pure function of (seed, stream, counter, element index), so it is never
 * stored: backward draws it again, and the OpenCL kernel draws the very same one (rng.h).
 *   p      = p.f[0]  drop probability, 0 <= p < 1 (checked by the front end)
 *   seed   = p.u[0], stream = p.u[1], counter = p.u[2]
 *   keep_i = mcl_rng_uniform(seed, stream, counter + i) >= p     (i = flat element index)
 * Segments (p.i[0] = seg > 0 elements each, p.u[3] = stream step): element i of segment
 * s = i / seg draws from stream + s·step at counter + (i − s·seg), so one call over the
 * concatenation of several tensors draws exactly the masks of separate calls on each (with
 * streams stream, stream + step, ...). seg = 0: one segment (the formula above).
 * relu first (p.i[1] = 1): out_i = keep_i ? relu(a_i) * scale : 0, the values and gradients of
 * relu then dropout as two ops (backward: the dropout's gradient term d_i = keep_i ? 0 + gout_i ·
 * scale : 0, then relu's ga_i += a_i > 0 ? d_i : 0), in one pass.
 *   scale  = 1 / (1 - p), computed once in float; each kept element is multiplied by it
 *            (x * scale, not x / (1 - p): both backends round the same way).
 * A dropped element is a select, not a multiplication by 0: it gives exactly 0 forward and
 * adds nothing backward, even when the input or gradient there is NaN or Inf.
 * p == 0 keeps everything with scale 1, so the op is an exact copy (no draws are made).
 *
 * Draws come in blocks: one Philox4x32-10 block gives the 32-bit words of four consecutive
 * indices (index j is word j % 4 of block j / 4, rng.h). mcl_rng_uniform computes the whole
 * block for each index and keeps one word; here the elements are taken in chunks of
 * DRAW_CHUNK indices that start at a block boundary, whose blocks mcl_rng_draw_chunk computes
 * side by side (src/common/rng_draw.h, shared with mcl_rng_bernoulli_indices), so every
 * block is computed once. The words are the same, so is the mask. The few elements before
 * the first block boundary and after the last whole chunk take their words from one more
 * chunk each (edge_words), of which they use a part.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ref.h"
#include "rng.h"
#include "rng_draw.h"

/* Work (in elements) below which a loop stays serial. */
#define DROPOUT_PAR_MIN ((int64_t)1 << 13)
/* The chunks of Philox blocks drawn side by side (mcl_rng_draw_chunk, shared with rng.c). */
#define DRAW_CHUNK MCL_DRAW_CHUNK

/* See conv.c: MCL_HOT compiles a helper at -O3 (vectorized lanes), MCL_SIMD marks a loop
 * over independent lanes. Neither changes any result (integer arithmetic, exact selects). */
/* MCL_HOT and MCL_SIMD: hot.h (through ref.h). */

/* One segment's draws: its (seed, stream, counter) and the drop probability. */
typedef struct {
    uint64_t seed, stream, ctr;
    float p;
} seg_key;

/* keep_i, the slow way (a whole block for one word): for the edges of a run whose chunk would
 * wrap past index 2^64 (edge_words) */
static int keep_one(const seg_key *k, int64_t i)
{
    return mcl_rng_uniform(k->seed, k->stream, k->ctr + (uint64_t)i) >= k->p;
}

static float relu1(float x) { return x > 0.0f ? x : 0.0f; }

/* relu's backward on a chunk of dropout terms D: ga = 0 + (x > 0 ? d : 0) (fresh) or
 * ga = x > 0 ? ga + d : ga */
static void relu_bwd_chunk(const float *X, const float *D, float *GA, int64_t n, int fresh)
{
    for (int64_t e = 0; e < n; e++) {
        if (fresh)
            GA[e] = 0.0f + (X[e] > 0.0f ? D[e] : 0.0f);
        else if (X[e] > 0.0f)
            GA[e] = GA[e] + D[e];
    }
}

/* The keep test on the word's top 24 bits as an integer: mcl_u32_to_unit(u) = (u >> 8) · 2^-24
 * exactly, and p · 2^24 is exact too (a power-of-two scaling of a float in [0, 1)), so
 *   mcl_u32_to_unit(u) >= p   <=>   (u >> 8) >= ceil(p · 2^24)
 * the same decision for every word. (An integer compare also lets GCC vectorize the chunk
 * loops: a float compare may trap on NaN, which GCC will not if-convert.) */
static uint32_t keep_threshold(float p) { return (uint32_t)ceilf(p * 16777216.0f); }

/* keep ? a : b on the bits (an all-ones or all-zero mask): exactly the chosen float, and a
 * select that GCC vectorizes (it will not if-convert float selects under trapping math) */
static inline float pick(uint32_t keep_mask, float a, float b)
{
    uint32_t ua, ub;
    memcpy(&ua, &a, sizeof ua);
    memcpy(&ub, &b, sizeof ub);
    const uint32_t r = (ua & keep_mask) | (ub & ~keep_mask);
    float f;
    memcpy(&f, &r, sizeof f);
    return f;
}

/* all ones when the word keeps its element (see keep_threshold), else 0 */
static inline uint32_t keep_mask(uint32_t u, uint32_t t) { return 0u - (uint32_t)((u >> 8) >= t); }

/* The words of the elements [i0, i1) of a run's head or tail (at most DRAW_CHUNK - 3 of them):
 * the chunk that holds them, drawn whole into buf (its first block at the block boundary at or
 * before counter + i0), so that *u is element i0's word, or NULL when that chunk's indices would wrap
 * past 2^64 (mcl_rng_draw_chunk's limit; then each element is drawn alone, keep_one). An index's
 * word is the same whichever chunk draws it (rng_draw.h), so the mask is too. A tail of up to
 * 127 elements drawn one at a time cost a whole Philox block per element, ~25 ns each: more than
 * the run's chunks on runs of about a thousand elements (inorm_pool_relu's dropout on Conv-4's
 * deeper layers, 1 176 elements a run with 24 in the tail). */
static const uint32_t *edge_words(const seg_key *k, int64_t i0, int64_t i1, uint32_t buf[DRAW_CHUNK])
{
    const uint64_t j = k->ctr + (uint64_t)i0, j0 = j & ~(uint64_t)3;
    if (i1 - i0 > DRAW_CHUNK - (int64_t)(j - j0) || j0 > UINT64_MAX - (DRAW_CHUNK - 1)) return NULL;
    mcl_rng_draw_chunk(k->seed, k->stream, j0, buf);
    return buf + (j - j0);
}

/* keep_i of an edge: its word when edge_words gave them (u: element i0's), else drawn alone */
static inline int keep_edge(const seg_key *k, const uint32_t *u, uint32_t t, int64_t i0, int64_t i)
{
    return u ? keep_mask(u[i - i0], t) != 0 : keep_one(k, i);
}

/* The elements i in [i0, i1) of the head or the tail (A, O: the segment's first element). */
static void fwd_edge(const seg_key *k, const float *A, float *O, int64_t i0, int64_t i1, float scale,
                     int relu)
{
    if (i0 >= i1) return;
    uint32_t buf[DRAW_CHUNK];
    const uint32_t *u = edge_words(k, i0, i1, buf), t = keep_threshold(k->p);
    for (int64_t i = i0; i < i1; i++)
        O[i] = keep_edge(k, u, t, i0, i) ? (relu ? relu1(A[i]) : A[i]) * scale : 0.0f;
}

/* The same for the backward. X: the op's input (relu first) or NULL */
static void bwd_edge(const seg_key *k, const float *X, const float *G, float *GA, int64_t i0,
                     int64_t i1, float scale, int fresh)
{
    if (i0 >= i1) return;
    uint32_t buf[DRAW_CHUNK];
    const uint32_t *u = edge_words(k, i0, i1, buf), t = keep_threshold(k->p);
    for (int64_t i = i0; i < i1; i++) {
        const int keep = keep_edge(k, u, t, i0, i);
        if (X) { /* relu's backward on dropout's term, as the two ops */
            const float d = keep ? 0.0f + G[i] * scale : 0.0f;
            if (fresh)
                GA[i] = 0.0f + (X[i] > 0.0f ? d : 0.0f);
            else if (X[i] > 0.0f)
                GA[i] = GA[i] + d;
        } else if (keep)
            GA[i] = (fresh ? 0.0f : GA[i]) + G[i] * scale;
        else if (fresh)
            GA[i] = 0.0f;
    }
}

/* out_i = keep_i ? a_i * scale : 0 for the DRAW_CHUNK elements of one chunk (t: keep_threshold) */
MCL_HOT static void fwd_chunk(const uint32_t *restrict u, const float *restrict A, float *restrict O,
                              uint32_t t, float scale)
{
    MCL_SIMD for (int e = 0; e < DRAW_CHUNK; e++) O[e] = pick(keep_mask(u[e], t), A[e] * scale, 0.0f);
}

/* y_i = keep_i ? y_i * scale : 0 in place for one chunk (fwd_chunk's values) */
MCL_HOT static void mask_chunk(const uint32_t *restrict u, float *restrict y, uint32_t t, float scale)
{
    MCL_SIMD for (int e = 0; e < DRAW_CHUNK; e++) y[e] = pick(keep_mask(u[e], t), y[e] * scale, 0.0f);
}

/* ga_i += keep_i ? gout_i * scale : 0 (fresh: ga_i = 0 + that) for one chunk */
MCL_HOT static void bwd_chunk(const uint32_t *restrict u, const float *restrict G, float *restrict GA,
                              uint32_t t, float scale, int fresh)
{
    if (fresh)
        MCL_SIMD for (int e = 0; e < DRAW_CHUNK; e++)
            GA[e] = pick(keep_mask(u[e], t), 0.0f + G[e] * scale, 0.0f);
    else
        MCL_SIMD for (int e = 0; e < DRAW_CHUNK; e++)
            GA[e] = pick(keep_mask(u[e], t), GA[e] + G[e] * scale, GA[e]);
}

/* One segment of n elements (A, O at its first element) with its own key. */
static void fwd_seg(const seg_key *k, const float *A, float *O, int64_t n, float scale, int relu)
{
    const uint32_t t = keep_threshold(k->p);
    int64_t h, nchunks;
    mcl_rng_draw_split(k->ctr, n, &h, &nchunks); /* head [0, h), chunks, tail (rng_draw.h) */
#pragma omp parallel for schedule(static) if (n >= DROPOUT_PAR_MIN)
    for (int64_t c = 0; c < nchunks; c++) {
        const int64_t i0 = h + c * DRAW_CHUNK;
        uint32_t u[DRAW_CHUNK];
        mcl_rng_draw_chunk(k->seed, k->stream, k->ctr + (uint64_t)i0, u);
        const float *src = A + i0;
        float r[DRAW_CHUNK];
        if (relu) {
            for (int e = 0; e < DRAW_CHUNK; e++) r[e] = relu1(src[e]);
            src = r;
        }
        fwd_chunk(u, src, O + i0, t, scale);
    }
    fwd_edge(k, A, O, 0, h, scale, relu);
    fwd_edge(k, A, O, h + nchunks * DRAW_CHUNK, n, scale, relu);
}

/* The elements [i0, i0 + n) of one segment, in place (y at element i0): their draws start at
 * counter ctr + i0, so the head, chunks and tail are split from there (each element's word is
 * the same whichever chunk draws it). Serial: the caller's thread. */
static void range_seg(const seg_key *k, int64_t i0, int64_t n, float *y, float scale)
{
    const seg_key kr = {k->seed, k->stream, k->ctr + (uint64_t)i0, k->p};
    const uint32_t t = keep_threshold(k->p);
    int64_t h, nchunks;
    mcl_rng_draw_split(kr.ctr, n, &h, &nchunks);
    for (int64_t c = 0; c < nchunks; c++) {
        const int64_t e0 = h + c * DRAW_CHUNK;
        uint32_t u[DRAW_CHUNK];
        mcl_rng_draw_chunk(kr.seed, kr.stream, kr.ctr + (uint64_t)e0, u);
        mask_chunk(u, y + e0, t, scale);
    }
    fwd_edge(&kr, y, y, 0, h, scale, 0);
    fwd_edge(&kr, y, y, h + nchunks * DRAW_CHUNK, n, scale, 0);
}

void mcl_ref_dropout_range(const mcl_ref_drop_key *k, int64_t i0, int64_t n, float *y)
{
    const float scale = 1.0f / (1.0f - k->p);
    for (int64_t e = 0; e < n;) { /* piece by piece within the segments */
        const int64_t i = i0 + e, s = k->seg > 0 ? i / k->seg : 0, base = s * k->seg;
        const int64_t end = k->seg > 0 ? base + k->seg - i : n - e; /* the segment's rest */
        const int64_t len = end < n - e ? end : n - e;
        const seg_key ks = {k->seed, k->stream + (uint64_t)s * k->step, k->counter, k->p};
        range_seg(&ks, i - base, len, y + e, scale);
        e += len;
    }
}

/* Forward:  out_i = keep_i ? a_i * scale : 0   (segment by segment; relu first: see the top)
 * a   [any]
 * out [same as a] */
mcl_status mcl_ref_dropout_fwd(mcl_backend *be, const mcl_op_args *a)
{
    (void)be;
    const float *A = mcl_ref_ptr(a->in[0]);
    float *O = mcl_ref_ptr(a->out[0]);
    int64_t n = mcl_ref_rows(a->in[0]) * mcl_ref_cols(a->in[0]);
    float p = a->p.f[0];
    const int relu = a->p.i[1] != 0;
    if (p == 0.0f) {
        if (relu)
            for (int64_t i = 0; i < n; i++) O[i] = relu1(A[i]);
        else
            memcpy(O, A, (size_t)n * sizeof(float));
        return MCL_OK;
    }
    float scale = 1.0f / (1.0f - p);
    const int64_t seg = a->p.i[0] > 0 ? a->p.i[0] : n;
    for (int64_t s = 0; s * seg < n; s++) {
        const seg_key k = {a->p.u[0], a->p.u[1] + (uint64_t)s * a->p.u[3], a->p.u[2], p};
        fwd_seg(&k, A + s * seg, O + s * seg, seg, scale, relu);
    }
    return MCL_OK;
}

/* One segment of n elements (G, GA at its first element) with its own key. */
static void bwd_seg(const seg_key *k, const float *X, const float *G, float *GA, int64_t n,
                    float scale, int fresh)
{
    const uint32_t t = keep_threshold(k->p);
    int64_t h, nchunks;
    mcl_rng_draw_split(k->ctr, n, &h, &nchunks); /* head [0, h), chunks, tail (rng_draw.h) */
#pragma omp parallel for schedule(static) if (n >= DROPOUT_PAR_MIN)
    for (int64_t c = 0; c < nchunks; c++) {
        const int64_t i0 = h + c * DRAW_CHUNK;
        uint32_t u[DRAW_CHUNK];
        mcl_rng_draw_chunk(k->seed, k->stream, k->ctr + (uint64_t)i0, u);
        if (X) { /* relu first: dropout's terms (as into a fresh gradient), then relu's */
            float d[DRAW_CHUNK];
            bwd_chunk(u, G + i0, d, t, scale, 1);
            relu_bwd_chunk(X + i0, d, GA + i0, DRAW_CHUNK, fresh);
        } else {
            bwd_chunk(u, G + i0, GA + i0, t, scale, fresh);
        }
    }
    bwd_edge(k, X, G, GA, 0, h, scale, fresh);
    bwd_edge(k, X, G, GA, h + nchunks * DRAW_CHUNK, n, scale, fresh);
}

/* Backward: d out_i / d a_i = keep_i * scale (the same mask, drawn again), so
 *   ga_i += keep_i ? gout_i * scale : 0
 * gout[0] like a;  gin[0] like a (or NULL; a fresh gin is stored, see ref.h) */
mcl_status mcl_ref_dropout_bwd(mcl_backend *be, const mcl_op_args *a)
{
    (void)be;
    if (!a->gin[0]) return MCL_OK;
    const float *G = mcl_ref_ptr(a->gout[0]);
    float *GA = mcl_ref_ptr(a->gin[0]);
    const int fresh = mcl_ref_grad_fresh(a->gin[0]);
    int64_t n = mcl_ref_rows(a->in[0]) * mcl_ref_cols(a->in[0]);
    float p = a->p.f[0];
    const float *X = a->p.i[1] != 0 ? mcl_ref_ptr(a->in[0]) : NULL; /* relu first */
    if (p == 0.0f) {
        if (X) {
            for (int64_t i = 0; i < n; i++) {
                const float d = 0.0f + G[i];
                if (fresh)
                    GA[i] = 0.0f + (X[i] > 0.0f ? d : 0.0f);
                else if (X[i] > 0.0f)
                    GA[i] = GA[i] + d;
            }
            return MCL_OK;
        }
#pragma omp parallel for schedule(static) if (n >= ((int64_t)1 << 16))
        for (int64_t i = 0; i < n; i++) GA[i] = (fresh ? 0.0f : GA[i]) + G[i];
        return MCL_OK;
    }
    float scale = 1.0f / (1.0f - p);
    const int64_t seg = a->p.i[0] > 0 ? a->p.i[0] : n;
    for (int64_t s = 0; s * seg < n; s++) {
        const seg_key k = {a->p.u[0], a->p.u[1] + (uint64_t)s * a->p.u[3], a->p.u[2], p};
        bwd_seg(&k, X ? X + s * seg : NULL, G + s * seg, GA + s * seg, seg, scale, fresh);
    }
    return MCL_OK;
}

/* ---- add_dropout: a residual add with its branch's dropout in one op ----
 * out_i = a_i + (keep_i ? x_i * scale : 0)   (dropout's mask and scale, one segment, no relu)
 * The dropout's values are written into out first, then a is added: each element rounds as
 * dropout then add would (a_i + d_i, d_i exactly dropout's). */

/* Forward:  out = a + dropout(x)
 * a [any], x [same as a] -> out [same as a] */
mcl_status mcl_ref_add_dropout_fwd(mcl_backend *be, const mcl_op_args *a)
{
    const mcl_op_args d = mcl_add_dropout_as_dropout(a);
    mcl_status s = mcl_ref_dropout_fwd(be, &d); /* out = dropout(x) */
    if (s != MCL_OK) return s;
    const float *A = mcl_ref_ptr(a->in[0]);
    float *O = mcl_ref_ptr(a->out[0]);
    const int64_t n = mcl_ref_rows(a->in[0]) * mcl_ref_cols(a->in[0]);
#pragma omp parallel for schedule(static) if (n >= DROPOUT_PAR_MIN)
    for (int64_t i = 0; i < n; i++) O[i] = A[i] + O[i];
    return MCL_OK;
}

/* Backward: ga += gout (add's), gx += keep_i ? gout_i * scale : 0 (dropout's, the mask drawn
 * again). gout[0] like a; gin[0], gin[1] like a (either NULL; a fresh gin is stored, ref.h) */
mcl_status mcl_ref_add_dropout_bwd(mcl_backend *be, const mcl_op_args *a)
{
    if (a->gin[0]) {
        const float *G = mcl_ref_ptr(a->gout[0]);
        float *GA = mcl_ref_ptr(a->gin[0]);
        const int fresh = mcl_ref_grad_fresh(a->gin[0]);
        const int64_t n = mcl_ref_rows(a->in[0]) * mcl_ref_cols(a->in[0]);
#pragma omp parallel for schedule(static) if (n >= ((int64_t)1 << 16))
        for (int64_t i = 0; i < n; i++) GA[i] = (fresh ? 0.0f : GA[i]) + G[i];
    }
    const mcl_op_args d = mcl_add_dropout_as_dropout(a);
    return mcl_ref_dropout_bwd(be, &d); /* nothing when gin[1] is NULL */
}

/* ---- bias_dropout_relu: bias_add, relu and dropout in one op ----
 * t[r, j] = x[r, j] + b[j]   (rounded, bias_add's)
 * out_i   = keep_i ? relu(t_i) * scale : 0   (dropout's mask at the flat index i, relu first)
 * The forward writes t into out, then dropout with relu runs on out in place (each element
 * reads its own t before it is written). */

/* t = x + b into T.  x [R, N], b [N] -> T [R, N] */
static void bias_sum(const float *X, const float *B, float *T, int64_t R, int64_t N)
{
#pragma omp parallel for schedule(static) if (R * N >= DROPOUT_PAR_MIN)
    for (int64_t r = 0; r < R; r++)
        for (int64_t j = 0; j < N; j++) T[r * N + j] = X[r * N + j] + B[j];
}

/* Forward:  out = dropout(relu(x + b))
 * x [..,N] (R rows of N), b [N] -> out [..,N] */
mcl_status mcl_ref_bias_dropout_relu_fwd(mcl_backend *be, const mcl_op_args *a)
{
    (void)be;
    float *O = mcl_ref_ptr(a->out[0]);
    const int64_t R = mcl_ref_rows(a->in[0]), N = mcl_ref_cols(a->in[0]), n = R * N;
    bias_sum(mcl_ref_ptr(a->in[0]), mcl_ref_ptr(a->in[1]), O, R, N);
    const float p = a->p.f[0];
    if (p == 0.0f) {
        for (int64_t i = 0; i < n; i++) O[i] = relu1(O[i]);
        return MCL_OK;
    }
    const seg_key k = {a->p.u[0], a->p.u[1], a->p.u[2], p};
    fwd_seg(&k, O, O, n, 1.0f / (1.0f - p), 1); /* relu first: its chunks read a copy */
    return MCL_OK;
}

/* Backward (t recomputed):  d_i = keep_i && t_i > 0 ? 0 + gout_i * scale : 0 (dropout_relu's
 * terms, as into a fresh gradient);  gx += d;  gb[j] += sum_r d[r, j] (bias_add's sums).
 * gout[0] [R, N];  gin[0] [R, N], gin[1] [N] (either NULL) */
mcl_status mcl_ref_bias_dropout_relu_bwd(mcl_backend *be, const mcl_op_args *a)
{
    (void)be;
    if (!a->gin[0] && !a->gin[1]) return MCL_OK;
    const int64_t R = mcl_ref_rows(a->in[0]), N = mcl_ref_cols(a->in[0]), n = R * N;
    const float *G = mcl_ref_ptr(a->gout[0]);
    float *T = malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
    float *D = malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
    if (!T || !D) {
        free(T);
        free(D);
        return MCL_ERR_OOM;
    }
    bias_sum(mcl_ref_ptr(a->in[0]), mcl_ref_ptr(a->in[1]), T, R, N);
    const float p = a->p.f[0];
    if (p == 0.0f) {
        for (int64_t i = 0; i < n; i++) D[i] = 0.0f + (T[i] > 0.0f ? 0.0f + G[i] : 0.0f);
    } else {
        const seg_key k = {a->p.u[0], a->p.u[1], a->p.u[2], p};
        bwd_seg(&k, T, G, D, n, 1.0f / (1.0f - p), 1);
    }
    if (a->gin[0]) {
        float *GX = mcl_ref_ptr(a->gin[0]);
#pragma omp parallel for schedule(static) if (n >= ((int64_t)1 << 16))
        for (int64_t i = 0; i < n; i++) GX[i] += D[i];
    }
    if (a->gin[1]) mcl_ref_bias_colsum(D, R, N, mcl_ref_ptr(a->gin[1]));
    free(T);
    free(D);
    return MCL_OK;
}

/* ---- bias_add_dropout: a residual add with its branch's bias and dropout in one op ----
 * t[r, j] = x[r, j] + b[j]   (rounded, bias_add's)
 * out_i   = a_i + (keep_i ? t_i * scale : 0)   (add_dropout's: dropout's values, then the add)
 * The backward: ga += gout (add's), d_i = keep_i ? 0 + gout_i * scale : 0 (dropout's terms as
 * into a fresh gradient), gx += d, gb[j] += sum_r d[r, j] (bias_add's sums). */

/* Forward:  out = a + dropout(x + b)
 * a [..,N], x [same as a] (R rows of N), b [N] -> out [same as a] */
mcl_status mcl_ref_bias_add_dropout_fwd(mcl_backend *be, const mcl_op_args *a)
{
    (void)be;
    const int64_t R = mcl_ref_rows(a->in[1]), N = mcl_ref_cols(a->in[1]), n = R * N;
    const float *A = mcl_ref_ptr(a->in[0]);
    float *O = mcl_ref_ptr(a->out[0]);
    const float p = a->p.f[0];
    if (p == 0.0f) { /* no draws: out = a + t in one pass (t rounded first, as bias_add's) */
        const float *X = mcl_ref_ptr(a->in[1]), *B = mcl_ref_ptr(a->in[2]);
#pragma omp parallel for schedule(static) if (n >= DROPOUT_PAR_MIN)
        for (int64_t r = 0; r < R; r++)
            for (int64_t j = 0; j < N; j++) {
                const float t = X[r * N + j] + B[j];
                O[r * N + j] = A[r * N + j] + t;
            }
        return MCL_OK;
    }
    float *T = malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
    if (!T) return MCL_ERR_OOM;
    bias_sum(mcl_ref_ptr(a->in[1]), mcl_ref_ptr(a->in[2]), T, R, N);
    const seg_key k = {a->p.u[0], a->p.u[1], a->p.u[2], p};
    fwd_seg(&k, T, O, n, 1.0f / (1.0f - p), 0); /* out = dropout(t) */
    free(T);
#pragma omp parallel for schedule(static) if (n >= DROPOUT_PAR_MIN)
    for (int64_t i = 0; i < n; i++) O[i] = A[i] + O[i];
    return MCL_OK;
}

/* Backward: ga += gout;  d = dropout's terms of gout;  gx += d;  gb[j] += sum_r d[r, j]
 * gout[0] [R, N];  gin[0], gin[1] [R, N], gin[2] [N] (any NULL) */
mcl_status mcl_ref_bias_add_dropout_bwd(mcl_backend *be, const mcl_op_args *a)
{
    (void)be;
    const int64_t R = mcl_ref_rows(a->in[1]), N = mcl_ref_cols(a->in[1]), n = R * N;
    const float *G = mcl_ref_ptr(a->gout[0]);
    if (a->gin[0]) {
        float *GA = mcl_ref_ptr(a->gin[0]);
#pragma omp parallel for schedule(static) if (n >= ((int64_t)1 << 16))
        for (int64_t i = 0; i < n; i++) GA[i] += G[i];
    }
    if (!a->gin[1] && !a->gin[2]) return MCL_OK;
    float *D = malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
    if (!D) return MCL_ERR_OOM;
    const float p = a->p.f[0];
    if (p == 0.0f) {
        for (int64_t i = 0; i < n; i++) D[i] = 0.0f + G[i];
    } else {
        const seg_key k = {a->p.u[0], a->p.u[1], a->p.u[2], p};
        bwd_seg(&k, NULL, G, D, n, 1.0f / (1.0f - p), 1);
    }
    if (a->gin[1]) {
        float *GX = mcl_ref_ptr(a->gin[1]);
#pragma omp parallel for schedule(static) if (n >= ((int64_t)1 << 16))
        for (int64_t i = 0; i < n; i++) GX[i] += D[i];
    }
    if (a->gin[2]) mcl_ref_bias_colsum(D, R, N, mcl_ref_ptr(a->gin[2]));
    free(D);
    return MCL_OK;
}
