/* dropout.c — reference inverted dropout with a counter-based (Philox) mask.
 *
 * The keep mask is a pure function of (seed, stream, counter, element index), so it is never
 * stored: backward draws it again, and the OpenCL kernel draws the very same one (rng.h).
 *   p      = p.f[0]  drop probability, 0 <= p < 1 (checked by the front end)
 *   seed   = p.u[0], stream = p.u[1], counter = p.u[2]
 *   keep_i = mcl_rng_uniform(seed, stream, counter + i) >= p     (i = flat element index)
 *   scale  = 1 / (1 - p), computed once in float; each kept element is multiplied by it
 *            (x * scale, not x / (1 - p): both backends round the same way).
 * A dropped element is a select, not a multiplication by 0: it gives exactly 0 forward and
 * adds nothing backward, even when the input or gradient there is NaN or Inf.
 * p == 0 keeps everything with scale 1, so the op is an exact copy (no draws are made).
 *
 * Draws come in blocks: one Philox4x32-10 block gives the 32-bit words of four consecutive
 * indices (index j is word j % 4 of block j / 4, rng.h). mcl_rng_uniform computes the whole
 * block for each index and keeps one word; here the elements are taken in chunks of
 * DRAW_CHUNK indices that start at a block boundary, and the DRAW_LANES blocks of a chunk
 * are computed side by side (one lane per block, which the compiler vectorizes), so every
 * block is computed once. The words are the same, so is the mask. The few elements before
 * the first block boundary and after the last whole chunk use mcl_rng_uniform directly.
 */
#include <string.h>

#include "ref.h"
#include "rng.h"

/* Work (in elements) below which a loop stays serial. */
#define DROPOUT_PAR_MIN ((int64_t)1 << 13)
/* Philox blocks computed side by side, and the indices (4 per block) they cover. */
#define DRAW_LANES 16
#define DRAW_CHUNK (4 * DRAW_LANES)

/* See conv.c: MCL_HOT compiles a helper at -O3 (vectorized lanes), MCL_SIMD marks a loop
 * over independent lanes. Neither changes any result (integer arithmetic, exact selects). */
/* MCL_HOT and MCL_SIMD: ref.h. */

/* The words of indices j0 .. j0 + DRAW_CHUNK - 1 of stream (seed, stream), j0 % 4 == 0:
 *   u[e] = mcl_rng_u32(seed, stream, j0 + e)
 * i.e. word e % 4 of Philox4x32-10 block (j0 / 4 + e / 4), exactly as mcl_philox4x32_r
 * computes it (counter = (block low, block high, stream low, stream high), key = seed). */
MCL_HOT static void draw_chunk(uint64_t seed, uint64_t stream, uint64_t j0,
                               uint32_t u[DRAW_CHUNK])
{
    uint32_t c0[DRAW_LANES], c1[DRAW_LANES], c2[DRAW_LANES], c3[DRAW_LANES];
    const uint64_t blk0 = j0 >> 2;
    MCL_SIMD for (int l = 0; l < DRAW_LANES; l++) {
        const uint64_t blk = blk0 + (uint64_t)l;
        c0[l] = (uint32_t)blk;
        c1[l] = (uint32_t)(blk >> 32);
        c2[l] = (uint32_t)stream;
        c3[l] = (uint32_t)(stream >> 32);
    }
    uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
    for (int r = 0; r < 10; r++) {
        MCL_SIMD for (int l = 0; l < DRAW_LANES; l++) {
            const uint64_t p0 = (uint64_t)MCL_PHILOX_M0 * c0[l];
            const uint64_t p1 = (uint64_t)MCL_PHILOX_M1 * c2[l];
            const uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1[l] ^ k0;
            const uint32_t n2 = (uint32_t)(p0 >> 32) ^ c3[l] ^ k1;
            c0[l] = n0;
            c1[l] = (uint32_t)p1;
            c2[l] = n2;
            c3[l] = (uint32_t)p0;
        }
        k0 += MCL_PHILOX_W0;
        k1 += MCL_PHILOX_W1;
    }
    for (int l = 0; l < DRAW_LANES; l++) {
        u[4 * l + 0] = c0[l];
        u[4 * l + 1] = c1[l];
        u[4 * l + 2] = c2[l];
        u[4 * l + 3] = c3[l];
    }
}

/* Elements [0, n) of one call split as: head [0, h) before the first block boundary,
 * whole chunks [h, h + nchunks * DRAW_CHUNK), tail up to n. */
static void split(uint64_t ctr, int64_t n, int64_t *h, int64_t *nchunks)
{
    int64_t head = (int64_t)((4 - (ctr & 3)) & 3);
    if (head > n) head = n;
    *h = head;
    *nchunks = (n - head) / DRAW_CHUNK;
}

/* keep_i, the slow way (a whole block for one word): for the head and the tail */
static int keep_one(const mcl_op_args *a, int64_t i)
{
    return mcl_rng_uniform(a->p.u[0], a->p.u[1], a->p.u[2] + (uint64_t)i) >= a->p.f[0];
}

/* The elements i in [i0, i1) of the head or the tail. */
static void fwd_slow(const mcl_op_args *a, int64_t i0, int64_t i1, float scale)
{
    const float *A = mcl_ref_ptr(a->in[0]);
    float *O = mcl_ref_ptr(a->out[0]);
    for (int64_t i = i0; i < i1; i++) O[i] = keep_one(a, i) ? A[i] * scale : 0.0f;
}
static void bwd_slow(const mcl_op_args *a, int64_t i0, int64_t i1, float scale, int fresh)
{
    const float *G = mcl_ref_ptr(a->gout[0]);
    float *GA = mcl_ref_ptr(a->gin[0]);
    for (int64_t i = i0; i < i1; i++) {
        if (keep_one(a, i))
            GA[i] = (fresh ? 0.0f : GA[i]) + G[i] * scale;
        else if (fresh)
            GA[i] = 0.0f;
    }
}

/* out_i = keep_i ? a_i * scale : 0 for the DRAW_CHUNK elements of one chunk */
MCL_HOT static void fwd_chunk(const uint32_t *u, const float *restrict A, float *restrict O,
                              float p, float scale)
{
    MCL_SIMD for (int e = 0; e < DRAW_CHUNK; e++)
        O[e] = mcl_u32_to_unit(u[e]) >= p ? A[e] * scale : 0.0f;
}

/* ga_i += keep_i ? gout_i * scale : 0 (fresh: ga_i = 0 + that) for one chunk */
MCL_HOT static void bwd_chunk(const uint32_t *u, const float *restrict G, float *restrict GA,
                              float p, float scale, int fresh)
{
    if (fresh)
        MCL_SIMD for (int e = 0; e < DRAW_CHUNK; e++)
            GA[e] = mcl_u32_to_unit(u[e]) >= p ? 0.0f + G[e] * scale : 0.0f;
    else
        MCL_SIMD for (int e = 0; e < DRAW_CHUNK; e++)
            GA[e] = mcl_u32_to_unit(u[e]) >= p ? GA[e] + G[e] * scale : GA[e];
}

/* Forward:  out_i = keep_i ? a_i * scale : 0
 * a   [any]
 * out [same as a] */
mcl_status mcl_ref_dropout_fwd(mcl_backend *be, const mcl_op_args *a)
{
    (void)be;
    const float *A = mcl_ref_ptr(a->in[0]);
    float *O = mcl_ref_ptr(a->out[0]);
    int64_t n = mcl_ref_rows(a->in[0]) * mcl_ref_cols(a->in[0]);
    float p = a->p.f[0];
    uint64_t seed = a->p.u[0], stream = a->p.u[1], ctr = a->p.u[2];
    if (p == 0.0f) {
        memcpy(O, A, (size_t)n * sizeof(float));
        return MCL_OK;
    }
    float scale = 1.0f / (1.0f - p);
    int64_t h, nchunks;
    split(ctr, n, &h, &nchunks);
#pragma omp parallel for schedule(static) if (n >= DROPOUT_PAR_MIN)
    for (int64_t c = 0; c < nchunks; c++) {
        const int64_t i0 = h + c * DRAW_CHUNK;
        uint32_t u[DRAW_CHUNK];
        draw_chunk(seed, stream, ctr + (uint64_t)i0, u);
        fwd_chunk(u, A + i0, O + i0, p, scale);
    }
    fwd_slow(a, 0, h, scale);
    fwd_slow(a, h + nchunks * DRAW_CHUNK, n, scale);
    return MCL_OK;
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
    uint64_t seed = a->p.u[0], stream = a->p.u[1], ctr = a->p.u[2];
    if (p == 0.0f) {
#pragma omp parallel for schedule(static) if (n >= ((int64_t)1 << 16))
        for (int64_t i = 0; i < n; i++) GA[i] = (fresh ? 0.0f : GA[i]) + G[i];
        return MCL_OK;
    }
    float scale = 1.0f / (1.0f - p);
    int64_t h, nchunks;
    split(ctr, n, &h, &nchunks);
#pragma omp parallel for schedule(static) if (n >= DROPOUT_PAR_MIN)
    for (int64_t c = 0; c < nchunks; c++) {
        const int64_t i0 = h + c * DRAW_CHUNK;
        uint32_t u[DRAW_CHUNK];
        draw_chunk(seed, stream, ctr + (uint64_t)i0, u);
        bwd_chunk(u, G + i0, GA + i0, p, scale, fresh);
    }
    bwd_slow(a, 0, h, scale, fresh);
    bwd_slow(a, h + nchunks * DRAW_CHUNK, n, scale, fresh);
    return MCL_OK;
}
