/* rng.cl — Philox4x32-10 (Salmon et al., SC'11), identical to src/common/rng.h.
 *
 * Included first in the program, so every kernel file can draw: element i of the stream
 * (seed, stream) is word i % 4 of the Philox block with counter (i/4 low, i/4 high,
 * stream low, stream high) and key (seed low, seed high). Same bits as the C version, so
 * dropout and Bernoulli masks agree between backends.
 */

uint2 mcl_mulhilo32(uint a, uint b)
{
    /* (hi, lo) of the 64-bit product, written without mul_hi's rounding concerns */
    ulong p = (ulong)a * (ulong)b;
    return (uint2)((uint)(p >> 32), (uint)p);
}

uint4 mcl_philox4x32_10(uint4 c, uint2 k)
{
    for (int r = 0; r < 10; r++) {
        uint2 p0 = mcl_mulhilo32(0xD2511F53u, c.x);
        uint2 p1 = mcl_mulhilo32(0xCD9E8D57u, c.z);
        c = (uint4)(p1.x ^ c.y ^ k.x, p1.y, p0.x ^ c.w ^ k.y, p0.y);
        k += (uint2)(0x9E3779B9u, 0xBB67AE85u);
    }
    return c;
}

uint mcl_rng_u32(ulong seed, ulong stream, ulong index)
{
    ulong blk = index >> 2;
    uint c0 = (uint)blk, c1 = (uint)(blk >> 32), c2 = (uint)stream, c3 = (uint)(stream >> 32);
    uint4 o = mcl_philox4x32_10((uint4)(c0, c1, c2, c3), (uint2)((uint)seed, (uint)(seed >> 32)));
    /* word (index & 3) by two selects on its bits: oclgrind 21.10 picks the wrong word when
     * the compiler turns a chain of comparisons into a vector extract with a variable index
     * (tests/oclgrind/vector-select.c reproduces it) */
    uint w = (uint)(index & 3);
    uint lo = (w & 1) ? o.y : o.x, hi = (w & 1) ? o.w : o.z;
    return (w & 2) ? hi : lo;
}

/* Uniform in [0, 1) with 24 random bits: exact in float, same as mcl_u32_to_unit. */
float mcl_rng_uniform(ulong seed, ulong stream, ulong index)
{
    return (float)(mcl_rng_u32(seed, stream, index) >> 8) * (1.0f / 16777216.0f);
}

/* Known-answer probe used by the tests: out[i] = word i of Philox(ctr, key). */
__kernel void rng_philox_block(__global uint *out, uint c0, uint c1, uint c2, uint c3, uint k0,
                               uint k1)
{
    if (get_global_id(0) != 0) return;
    uint4 o = mcl_philox4x32_10((uint4)(c0, c1, c2, c3), (uint2)(k0, k1));
    out[0] = o.x;
    out[1] = o.y;
    out[2] = o.z;
    out[3] = o.w;
}
