/* dropout.cl — inverted dropout with a counter-based (Philox) mask, forward and backward.
 *
 * Same equations as src/ref/dropout.c; the mask comes from rng.cl's mcl_rng_uniform, which
 * gives the same bits as the C version, so both backends drop the same elements:
 *   keep_i = mcl_rng_uniform(seed, stream, counter + i) >= p      (i = flat element index)
 *   scale  = 1 / (1 - p), computed once in float by the host (as the reference does)
 * A dropped element is a select, not a multiplication by 0 (exactly 0 forward, nothing added
 * backward, even where the input or gradient is NaN or Inf). p == 0 is an exact copy (no
 * draws), as in the reference.
 *
 * Segments (seg > 0 elements each): element i of segment s = i / seg draws from stream
 * stream + s·step at counter + (i − s·seg), the masks of separate calls on each segment;
 * seg = 0 is one segment (the host passes seg = n then, so s = 0).
 *
 * relu first (relu = 1): out_i = keep_i ? relu(a_i) · scale : 0; backward d_i = keep_i ? 0 +
 * gout_i · scale : 0, then ga_i += a_i > 0 ? d_i : 0 (relu then dropout as two ops, in one).
 *
 * Index layout: 1-D launch, work-item i computes flat element i; ids >= n return at once.
 */
#pragma OPENCL FP_CONTRACT OFF

/* out_i = keep_i ? a_i * scale : 0 */
__kernel void dropout_fwd(__global const float *a, long a_off, __global float *out, long out_off,
                          float p, float scale, ulong seed, ulong stream, ulong counter, long n,
                          long seg, ulong step, int relu)
{
    long i = get_global_id(0);
    if (i >= n) return;
    float x = a[a_off + i];
    if (relu) x = x > 0.0f ? x : 0.0f;
    if (p == 0.0f) {
        out[out_off + i] = x;
        return;
    }
    const long s = i / seg;
    int keep = mcl_rng_uniform(seed, stream + (ulong)s * step, counter + (ulong)(i - s * seg)) >= p;
    out[out_off + i] = keep ? x * scale : 0.0f;
}

/* ga_i += keep_i ? gout_i * scale : 0   (the same mask, drawn again) */
__kernel void dropout_bwd(__global const float *g, long g_off, __global float *ga, long ga_off,
                          float p, float scale, ulong seed, ulong stream, ulong counter, long n,
                          long seg, ulong step, int relu, __global const float *a, long a_off)
{
    long i = get_global_id(0);
    if (i >= n) return;
    if (relu && !(a[a_off + i] > 0.0f)) return; /* relu's backward: nothing added */
    if (p == 0.0f) {
        ga[ga_off + i] += relu ? 0.0f + g[g_off + i] : g[g_off + i];
        return;
    }
    const long s = i / seg;
    const int keep = mcl_rng_uniform(seed, stream + (ulong)s * step, counter + (ulong)(i - s * seg)) >= p;
    if (relu)
        ga[ga_off + i] += keep ? 0.0f + g[g_off + i] * scale : 0.0f;
    else if (keep)
        ga[ga_off + i] += g[g_off + i] * scale;
}

/* add_dropout: out_i = a_i + (keep_i ? x_i * scale : 0), a residual add with its branch's
 * dropout (one segment, no relu); the same floats as dropout_fwd then add_fwd. Backward: the
 * host runs dropout_bwd for x and add's accumulation for a. p == 0: a_i + x_i (no draws). */
__kernel void add_dropout_fwd(__global const float *a, long a_off, __global const float *x,
                              long x_off, __global float *out, long out_off, float p, float scale,
                              ulong seed, ulong stream, ulong counter, long n)
{
    long i = get_global_id(0);
    if (i >= n) return;
    const float xi = x[x_off + i];
    float d = xi;
    if (p != 0.0f)
        d = mcl_rng_uniform(seed, stream, counter + (ulong)i) >= p ? xi * scale : 0.0f;
    out[out_off + i] = a[a_off + i] + d;
}
