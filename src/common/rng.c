/* rng.c — derived draws over Philox4x32-10 (see rng.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hot.h"
#include "rng.h"
#include "rng_draw.h"

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

/* Box–Muller: z = sqrt(-2 ln u1) · cos(2π u2), with u1 in (0, 1] so the log is finite.
 * Uses 32-bit words 2i and 2i+1 of the stream, computed in double and rounded once. */
float mcl_rng_normal(uint64_t seed, uint64_t stream, uint64_t index)
{
    uint32_t a = mcl_rng_u32(seed, stream, 2 * index);
    uint32_t b = mcl_rng_u32(seed, stream, 2 * index + 1);
    double u1 = ((double)a + 1.0) / 4294967296.0; /* (0, 1] */
    double u2 = (double)b / 4294967296.0;         /* [0, 1) */
    return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}

void mcl_rng_init(mcl_rng *r, uint64_t seed, uint64_t stream)
{
    r->seed = seed;
    r->stream = stream;
    r->index = 0;
}

uint32_t mcl_rng_next_u32(mcl_rng *r) { return mcl_rng_u32(r->seed, r->stream, r->index++); }

float mcl_rng_next_uniform(mcl_rng *r) { return mcl_u32_to_unit(mcl_rng_next_u32(r)); }

float mcl_rng_next_normal(mcl_rng *r)
{
    /* Consume an even-aligned pair so the result equals mcl_rng_normal(.., index / 2). */
    if (r->index & 1) r->index++;
    float z = mcl_rng_normal(r->seed, r->stream, r->index / 2);
    r->index += 2;
    return z;
}

/* Lemire-style rejection: accept x·n / 2^32 when the low part is above the bias threshold. */
uint32_t mcl_rng_next_below(mcl_rng *r, uint32_t n)
{
    if (n <= 1) return 0;
    uint32_t threshold = (uint32_t)(-n) % n; /* 2^32 mod n */
    for (;;) {
        uint64_t m = (uint64_t)mcl_rng_next_u32(r) * n;
        if ((uint32_t)m >= threshold) return (uint32_t)(m >> 32);
    }
}

void mcl_rng_shuffle_int(mcl_rng *r, int *v, int64_t n)
{
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = (int64_t)mcl_rng_next_below(r, (uint32_t)(i + 1));
        int t = v[i];
        v[i] = v[j];
        v[j] = t;
    }
}

/* ---- chunks of blocks (rng_draw.h) ---- */

/* u[e] = mcl_rng_u32(seed, stream, j0 + e), e < MCL_DRAW_CHUNK, j0 % 4 == 0: the
 * MCL_DRAW_LANES blocks j0 / 4 + l side by side, each round as mcl_philox4x32_r does it
 * (counter = (block low, block high, stream low, stream high), key = seed). Integer
 * arithmetic only: vectorized or not, the words are the same. */
#if defined(__AVX512F__) && MCL_DRAW_LANES == 32
/* The high and low 32-bit halves of the 16 lanes' 64-bit products a[l]·m[l]. The compiler
 * builds (uint64_t)a · m of the portable loop below out of 64-bit lane products (vpmullq) on
 * zero-extended halves and shuffles them back; the CPU's 32 x 32 -> 64-bit product of the even
 * lanes (vpmuludq), once on the even lanes and once on the odd ones shifted down, gives all 16
 * products with fewer instructions. Exact integer arithmetic: the same words. */
static inline void mul_hi_lo16(__m512i a, __m512i m, __m512i *hi, __m512i *lo)
{
    const __m512i pe = _mm512_mul_epu32(a, m);                        /* lanes 0, 2, ..: 64 bits */
    const __m512i po = _mm512_mul_epu32(_mm512_srli_epi64(a, 32), m); /* lanes 1, 3, .. */
    *hi = _mm512_mask_blend_epi32(0xAAAA, _mm512_srli_epi64(pe, 32), po);
    *lo = _mm512_mask_blend_epi32(0xAAAA, pe, _mm512_slli_epi64(po, 32));
}

/* One Philox round on 16 blocks (c0..c3: their counters' words, lane l block l) with the round
 * key (k0, k1), as mcl_philox4x32_r. */
static inline void philox_round16(__m512i c[4], __m512i m0, __m512i m1, __m512i k0, __m512i k1)
{
    __m512i hi0, lo0, hi1, lo1;
    mul_hi_lo16(c[0], m0, &hi0, &lo0);
    mul_hi_lo16(c[2], m1, &hi1, &lo1);
    c[0] = _mm512_xor_si512(_mm512_xor_si512(hi1, c[1]), k0);
    c[2] = _mm512_xor_si512(_mm512_xor_si512(hi0, c[3]), k1);
    c[1] = lo1;
    c[3] = lo0;
}

/* The 16 blocks' words in index order into u[0 .. 63]: u[4 l + w] = c[w] lane l (a 4 x 16
 * transpose: pairs and quads within 128-bit lanes, then the 128-bit lanes across vectors). */
static inline void philox_store16(const __m512i c[4], uint32_t *u)
{
    const __m512i t0 = _mm512_unpacklo_epi32(c[0], c[1]), t1 = _mm512_unpackhi_epi32(c[0], c[1]);
    const __m512i t2 = _mm512_unpacklo_epi32(c[2], c[3]), t3 = _mm512_unpackhi_epi32(c[2], c[3]);
    /* q_i: the blocks 4 j + i, j = 0..3, one per 128-bit lane j */
    const __m512i q0 = _mm512_unpacklo_epi64(t0, t2), q1 = _mm512_unpackhi_epi64(t0, t2);
    const __m512i q2 = _mm512_unpacklo_epi64(t1, t3), q3 = _mm512_unpackhi_epi64(t1, t3);
    const __m512i r0 = _mm512_shuffle_i32x4(q0, q1, 0x44), r1 = _mm512_shuffle_i32x4(q2, q3, 0x44);
    const __m512i r2 = _mm512_shuffle_i32x4(q0, q1, 0xEE), r3 = _mm512_shuffle_i32x4(q2, q3, 0xEE);
    _mm512_storeu_si512(u, _mm512_shuffle_i32x4(r0, r1, 0x88));      /* blocks 0..3 */
    _mm512_storeu_si512(u + 16, _mm512_shuffle_i32x4(r0, r1, 0xDD)); /* blocks 4..7 */
    _mm512_storeu_si512(u + 32, _mm512_shuffle_i32x4(r2, r3, 0x88)); /* blocks 8..11 */
    _mm512_storeu_si512(u + 48, _mm512_shuffle_i32x4(r2, r3, 0xDD)); /* blocks 12..15 */
}

/* The rounds of mcl_rng_draw_chunk on two groups of 16 blocks, each one vector per counter
 * word, with AVX-512. A round of one group is a chain of dependent products and xors; the two
 * groups' chains are independent, so the core overlaps them (one group a chunk: 50 ns per 64
 * words on the 2026-12-01 AMD Zen 5 machine, most of it waiting out the chain; two: see
 * doc/reference-backend.md). The words leave through a vector transpose, not a scalar loop. */
MCL_HOT void mcl_rng_draw_chunk(uint64_t seed, uint64_t stream, uint64_t j0,
                                uint32_t u[MCL_DRAW_CHUNK])
{
    const uint64_t blk0 = j0 >> 2;
    __m512i c[2][4]; /* group g: the blocks blk0 + 16 g + l, lane l */
    for (int g = 0; g < 2; g++) {
        uint32_t lo[16], hi[16];
        for (int l = 0; l < 16; l++) {
            const uint64_t blk = blk0 + (uint64_t)(16 * g + l);
            lo[l] = (uint32_t)blk;
            hi[l] = (uint32_t)(blk >> 32);
        }
        c[g][0] = _mm512_loadu_si512(lo);
        c[g][1] = _mm512_loadu_si512(hi);
        c[g][2] = _mm512_set1_epi32((int)(uint32_t)stream);
        c[g][3] = _mm512_set1_epi32((int)(uint32_t)(stream >> 32));
    }
    const __m512i m0 = _mm512_set1_epi32((int)MCL_PHILOX_M0);
    const __m512i m1 = _mm512_set1_epi32((int)MCL_PHILOX_M1);
    uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
    for (int r = 0; r < 10; r++) {
        const __m512i vk0 = _mm512_set1_epi32((int)k0), vk1 = _mm512_set1_epi32((int)k1);
        philox_round16(c[0], m0, m1, vk0, vk1);
        philox_round16(c[1], m0, m1, vk0, vk1);
        k0 += MCL_PHILOX_W0;
        k1 += MCL_PHILOX_W1;
    }
    philox_store16(c[0], u);
    philox_store16(c[1], u + 64);
}
#else
MCL_HOT void mcl_rng_draw_chunk(uint64_t seed, uint64_t stream, uint64_t j0,
                                uint32_t u[MCL_DRAW_CHUNK])
{
    uint32_t c0[MCL_DRAW_LANES], c1[MCL_DRAW_LANES], c2[MCL_DRAW_LANES], c3[MCL_DRAW_LANES];
    const uint64_t blk0 = j0 >> 2;
    MCL_SIMD for (int l = 0; l < MCL_DRAW_LANES; l++) {
        const uint64_t blk = blk0 + (uint64_t)l;
        c0[l] = (uint32_t)blk;
        c1[l] = (uint32_t)(blk >> 32);
        c2[l] = (uint32_t)stream;
        c3[l] = (uint32_t)(stream >> 32);
    }
    uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
    for (int r = 0; r < 10; r++) {
        MCL_SIMD for (int l = 0; l < MCL_DRAW_LANES; l++) {
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
    for (int l = 0; l < MCL_DRAW_LANES; l++) {
        u[4 * l + 0] = c0[l];
        u[4 * l + 1] = c1[l];
        u[4 * l + 2] = c2[l];
        u[4 * l + 3] = c3[l];
    }
}
#endif

/* ---- Bernoulli index sets ---- */

/* Elements per segment of the parallel path (a multiple of MCL_DRAW_CHUNK), and the run
 * length from which it is used. */
#define BI_SEG ((int64_t)1 << 14)
#define BI_PAR_MIN ((int64_t)1 << 16)

/* The chosen i in [i0, i1) (u_i < p, u_i = mcl_rng_uniform(seed, stream, counter + i)) in
 * increasing order into out; returns their count. i0 - head is a multiple of MCL_DRAW_CHUNK
 * for every i0 >= head, so whole chunks start at block boundaries; the rest is drawn one
 * index at a time. */
MCL_HOT static int64_t bi_range(uint64_t seed, uint64_t stream, uint64_t counter, int64_t head,
                                int64_t nchunks, int64_t i0, int64_t i1, float p, int64_t *out)
{
    const int64_t c_end = head + nchunks * MCL_DRAW_CHUNK; /* end of the whole chunks */
    int64_t k = 0, i = i0;
    for (; i < i1 && (i < head || i >= c_end); i++) /* head (or the tail, below) */
        if (mcl_rng_uniform(seed, stream, counter + (uint64_t)i) < p) out[k++] = i;
    for (; i + MCL_DRAW_CHUNK <= i1 && i + MCL_DRAW_CHUNK <= c_end; i += MCL_DRAW_CHUNK) {
        uint32_t u[MCL_DRAW_CHUNK];
        mcl_rng_draw_chunk(seed, stream, counter + (uint64_t)i, u);
        for (int e = 0; e < MCL_DRAW_CHUNK; e++) {
            out[k] = i + e;                   /* written always, kept when chosen: no branch */
            k += mcl_u32_to_unit(u[e]) < p;
        }
    }
    for (; i < i1; i++)
        if (mcl_rng_uniform(seed, stream, counter + (uint64_t)i) < p) out[k++] = i;
    return k;
}

/* Element i of [0, n) is chosen iff mcl_rng_uniform(seed, stream, counter + i) < p (see
 * rng.h). Serial below BI_PAR_MIN elements. Above, segments of BI_SEG elements (after the
 * head) run in parallel, segment s writing its chosen indices into idx at its own first
 * element (a segment chooses at most as many as it has, so no segment reaches the next
 * one's), and are then moved down in segment order: the result is the increasing list,
 * whatever the threads did. */
int64_t mcl_rng_bernoulli_indices(uint64_t seed, uint64_t stream, uint64_t counter, int64_t n,
                                  float p, int64_t *idx)
{
    if (n <= 0 || !idx || !(p > 0.0f)) return 0; /* p <= 0 (or NaN): u < p never holds */
    if (p >= 1.0f) {                              /* u < 1 always */
        for (int64_t i = 0; i < n; i++) idx[i] = i;
        return n;
    }
    int64_t head, nchunks;
    mcl_rng_draw_split(counter, n, &head, &nchunks);
    const int64_t nseg = n >= BI_PAR_MIN ? (n - head + BI_SEG - 1) / BI_SEG : 0;
    int64_t *cnt = nseg > 0 ? malloc((size_t)nseg * sizeof *cnt) : NULL;
    if (!cnt) /* small, or no memory for the counts: one pass */
        return bi_range(seed, stream, counter, head, nchunks, 0, n, p, idx);
    int64_t k = bi_range(seed, stream, counter, head, nchunks, 0, head, p, idx);
#pragma omp parallel for schedule(static)
    for (int64_t s = 0; s < nseg; s++) {
        const int64_t i0 = head + s * BI_SEG, i1 = i0 + BI_SEG < n ? i0 + BI_SEG : n;
        cnt[s] = bi_range(seed, stream, counter, head, nchunks, i0, i1, p, idx + i0);
    }
    for (int64_t s = 0; s < nseg; s++) {
        const int64_t i0 = head + s * BI_SEG;
        if (k != i0) memmove(idx + k, idx + i0, (size_t)cnt[s] * sizeof *idx);
        k += cnt[s];
    }
    free(cnt);
    return k;
}
