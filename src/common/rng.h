/* rng.h — Philox4x32-10 counter-based random numbers (Salmon et al., SC'11).
 *
 * A draw is a pure function of (key, counter): no state, so any element of any stream can be
 * computed independently, in any order, on any backend. The OpenCL kernels
 * (kernels/rng.cl) implement the same functions, so both backends draw identical numbers.
 *
 * metacl keys every random stream by (seed, stream id): key = seed (two 32-bit words),
 * counter = (index low, index high, stream low, stream high). Element i of a stream uses
 * word i % 4 of the block at index i / 4.
 */
#ifndef MCL_RNG_H
#define MCL_RNG_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MCL_PHILOX_M0 0xD2511F53u
#define MCL_PHILOX_M1 0xCD9E8D57u
#define MCL_PHILOX_W0 0x9E3779B9u
#define MCL_PHILOX_W1 0xBB67AE85u

/* One Philox4x32 block with `rounds` rounds (10 is the standard). ctr[4] in, out[4] out. */
static inline void mcl_philox4x32_r(const uint32_t ctr[4], const uint32_t key[2], int rounds,
                                    uint32_t out[4])
{
    uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3];
    uint32_t k0 = key[0], k1 = key[1];
    for (int r = 0; r < rounds; r++) {
        uint64_t p0 = (uint64_t)MCL_PHILOX_M0 * c0;
        uint64_t p1 = (uint64_t)MCL_PHILOX_M1 * c2;
        uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0;
        uint32_t hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
        c0 = hi1 ^ c1 ^ k0;
        c1 = lo1;
        c2 = hi0 ^ c3 ^ k1;
        c3 = lo0;
        k0 += MCL_PHILOX_W0;
        k1 += MCL_PHILOX_W1;
    }
    out[0] = c0; out[1] = c1; out[2] = c2; out[3] = c3;
}

static inline void mcl_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4])
{
    mcl_philox4x32_r(ctr, key, 10, out);
}

/* The 32-bit word number `index` of stream (seed, stream). */
static inline uint32_t mcl_rng_u32(uint64_t seed, uint64_t stream, uint64_t index)
{
    uint64_t blk = index >> 2;
    uint32_t ctr[4] = {(uint32_t)blk, (uint32_t)(blk >> 32), (uint32_t)stream,
                       (uint32_t)(stream >> 32)};
    uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
    uint32_t out[4];
    mcl_philox4x32_10(ctr, key, out);
    return out[index & 3];
}

/* Uniform in [0, 1) with 24 random bits: (u >> 8) * 2^-24 (exact in float). */
static inline float mcl_u32_to_unit(uint32_t u)
{
    return (float)(u >> 8) * (1.0f / 16777216.0f);
}

static inline float mcl_rng_uniform(uint64_t seed, uint64_t stream, uint64_t index)
{
    return mcl_u32_to_unit(mcl_rng_u32(seed, stream, index));
}

/* Standard normal number `index` of a stream: Box–Muller on words 2*index and 2*index+1
 * (computed in double, rounded once). */
float mcl_rng_normal(uint64_t seed, uint64_t stream, uint64_t index);

/* Bernoulli(p): 1 when uniform < p. */
static inline int mcl_rng_bernoulli(uint64_t seed, uint64_t stream, uint64_t index, float p)
{
    return mcl_rng_uniform(seed, stream, index) < p;
}

/* The chosen elements of a Bernoulli(p) mask over n elements, as an index list: element i
 * (0 <= i < n) is chosen iff mcl_rng_uniform(seed, stream, counter + i) < p (so p <= 0 chooses
 * none, p >= 1 all). The same uniform as dropout's: dropout with drop probability p and the
 * same (seed, stream, counter) KEEPS u >= p, so the chosen set is exactly the set dropout
 * drops. Writes the chosen indices in increasing order into idx (capacity n) and returns their
 * count (0 when n <= 0 or idx is NULL). Fast: whole chunks of Philox blocks at a time, in
 * parallel for long runs; the result does not depend on the thread count. This is how
 * Sparse-MetaNet draws the elements its fast-weight write touches (mcl_smn_write, ops.h). */
int64_t mcl_rng_bernoulli_indices(uint64_t seed, uint64_t stream, uint64_t counter, int64_t n,
                                  float p, int64_t *idx);

/* Host-side sequential generator over one stream (for samplers, shuffles, init). */
typedef struct mcl_rng {
    uint64_t seed, stream, index;
} mcl_rng;

void mcl_rng_init(mcl_rng *r, uint64_t seed, uint64_t stream);
uint32_t mcl_rng_next_u32(mcl_rng *r);
float mcl_rng_next_uniform(mcl_rng *r);
float mcl_rng_next_normal(mcl_rng *r);
/* Uniform integer in [0, n) without modulo bias; n >= 1. */
uint32_t mcl_rng_next_below(mcl_rng *r, uint32_t n);
/* Fisher–Yates shuffle of n ints. */
void mcl_rng_shuffle_int(mcl_rng *r, int *v, int64_t n);

#ifdef __cplusplus
}
#endif
#endif
