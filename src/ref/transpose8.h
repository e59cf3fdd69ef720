/* transpose8.h — one 8 x 8 block of floats transposed in registers (internal to the reference
 * backend: conv.c's write-outs and transposes, gemm.c's packing of transposed operands).
 * A copy: no arithmetic, so no bits depend on which path moved a value. */
#ifndef MCL_TRANSPOSE8_H
#define MCL_TRANSPOSE8_H

#include <stdint.h>
#if defined(__AVX__)
#include <immintrin.h>
#endif

#include "hot.h"

#if defined(__AVX__)
/* v[k] = (m[0*ldm + k], .., m[7*ldm + k]) for k < 8: the 8 x 8 block m (rows ldm apart)
 * transposed in eight 256-bit registers (unpack, shuffle, lane permute: 24 instructions). GCC
 * compiled the same with float arrays into element moves through the stack, whose vector
 * reloads waited on failed store forwarding (band_out_t took a third of the time of the
 * tiles whose results it wrote out, 800 x 32 x 14 x 14). */
static inline void tr8x8(const float *m, int64_t ldm, __m256 v[8])
{
    __m256 r[8], t[8], u[8];
    for (int i = 0; i < 8; i++) r[i] = _mm256_loadu_ps(m + i * ldm);
    for (int i = 0; i < 8; i += 2) {
        t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 8; i += 4) {
        u[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
        u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xEE);
        u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
        u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
    }
    for (int i = 0; i < 4; i++) {
        v[i] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x20);
        v[i + 4] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x31);
    }
}
#endif

/* t[k*ldt + o] = m[o*ldm + k] for o < 8, k < 8: one 8 x 8 block, its sizes fixed so that
 * the compiler keeps it in vector registers (measured on 32 x 196 floats: 2.4x faster than
 * 16 x 16 blocks of run-time size through a small array); with AVX, tr8x8 */
MCL_HOT static inline void transpose8(const float *restrict m, int64_t ldm, float *restrict t, int64_t ldt)
{
#if defined(__AVX__)
    __m256 v[8];
    tr8x8(m, ldm, v);
    for (int k = 0; k < 8; k++) _mm256_storeu_ps(t + k * ldt, v[k]);
#else
    float blk[8][8];
    for (int o = 0; o < 8; o++)
        for (int k = 0; k < 8; k++) blk[o][k] = m[o * ldm + k];
    for (int k = 0; k < 8; k++)
        for (int o = 0; o < 8; o++) t[k * ldt + o] = blk[o][k];
#endif
}

#endif
