/* rng_draw.h — Philox words drawn a chunk of blocks at a time (internal).
 *
 * mcl_rng_uniform (rng.h) computes a whole Philox4x32-10 block for every index and keeps one
 * of its four words. Code that walks a long run of consecutive indices instead takes them in
 * chunks of MCL_DRAW_CHUNK indices that start at a block boundary: the MCL_DRAW_LANES blocks of
 * a chunk are computed side by side (one lane per block, which the compiler vectorizes; with
 * AVX-512, rng.c writes the products out with the CPU's 32 x 32 -> 64-bit lane product), so
 * every block is computed once. The words are the same as mcl_rng_u32's, bit for bit.
 * Users: the reference dropout (src/ref/dropout.c) and mcl_rng_bernoulli_indices (rng.c).
 */
#ifndef MCL_RNG_DRAW_H
#define MCL_RNG_DRAW_H

#include <stdint.h>

/* Philox blocks computed side by side, and the indices (4 per block) they cover. */
#define MCL_DRAW_LANES 32
#define MCL_DRAW_CHUNK (4 * MCL_DRAW_LANES)

/* The words of indices j0 .. j0 + MCL_DRAW_CHUNK - 1 of stream (seed, stream), j0 % 4 == 0:
 *   u[e] = mcl_rng_u32(seed, stream, j0 + e)
 * i.e. word e % 4 of Philox4x32-10 block (j0 / 4 + e / 4), exactly as mcl_philox4x32_r
 * computes it. j0 + MCL_DRAW_CHUNK - 1 must not wrap past 2^64 (the block number is
 * j0 / 4 + e / 4, not ((j0 + e) mod 2^64) / 4): mcl_rng_draw_split makes no chunk then. */
void mcl_rng_draw_chunk(uint64_t seed, uint64_t stream, uint64_t j0, uint32_t u[MCL_DRAW_CHUNK]);

/* How the elements [0, n) of a run of indices counter, counter + 1, ... split for chunked
 * drawing: a head [0, *head) before the first block boundary, *nchunks whole chunks from there,
 * and a tail after them up to n (head and tail: draw one index at a time). A run whose
 * indices wrap past 2^64 is all head (one at a time, as mcl_rng_uniform(counter + i) wraps). */
static inline void mcl_rng_draw_split(uint64_t counter, int64_t n, int64_t *head, int64_t *nchunks)
{
    int64_t h = (int64_t)((4 - (counter & 3)) & 3);
    if (h > n || (n > 0 && (uint64_t)(n - 1) > UINT64_MAX - counter)) h = n;
    *head = h;
    *nchunks = (n - h) / MCL_DRAW_CHUNK;
}

#endif
