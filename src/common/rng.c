/* rng.c — derived draws over Philox4x32-10 (see rng.h). */
#include <math.h>

#include "rng.h"

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
