/* elementwise.cl — add, sub, mul, scale, bias_add, copy (forward and backward).
 *
 * Same equations as src/ref/elementwise.c. Tensors are contiguous float32 addressed as
 * (buffer, element offset); n is the element count of the output (forward) or of the
 * gradient being updated (backward).
 *
 * Index layout: 1-D launch, work-item i computes flat element i (ids >= n return at once),
 * except the bias gradient: two passes over (row chunk, column) items (see there).
 * Backward kernels ACCUMULATE (gx[i] += ...); when gin[0] and gin[1] are the same tensor the
 * host launches one kernel per input, one after the other on the in-order queue.
 *
 * FP_CONTRACT is off so that g * y + gx is two roundings, as in the reference (built with
 * -ffp-contract=off): results are then bit-identical to it.
 */
#pragma OPENCL FP_CONTRACT OFF

/* add: out = a + b */
__kernel void add_fwd(__global const float *a, long a_off, __global const float *b, long b_off,
                      __global float *out, long out_off, long n)
{
    long i = get_global_id(0);
    if (i >= n) return;
    out[out_off + i] = a[a_off + i] + b[b_off + i];
}

/* add backward, for either input: gx += gout (the kernel copy_bwd, below) */

/* sub: out = a - b */
__kernel void sub_fwd(__global const float *a, long a_off, __global const float *b, long b_off,
                      __global float *out, long out_off, long n)
{
    long i = get_global_id(0);
    if (i >= n) return;
    out[out_off + i] = a[a_off + i] - b[b_off + i];
}

/* sub backward: ga += gout (sign = +1) or gb -= gout (sign = -1) */
__kernel void sub_bwd(__global const float *g, long g_off, __global float *gx, long gx_off,
                      long sign, long n)
{
    long i = get_global_id(0);
    if (i >= n) return;
    if (sign > 0)
        gx[gx_off + i] += g[g_off + i];
    else
        gx[gx_off + i] -= g[g_off + i];
}

/* mul: out = a * b */
__kernel void mul_fwd(__global const float *a, long a_off, __global const float *b, long b_off,
                      __global float *out, long out_off, long n)
{
    long i = get_global_id(0);
    if (i >= n) return;
    out[out_off + i] = a[a_off + i] * b[b_off + i];
}

/* mul backward, for one input x with partner y: gx += gout * y
 * (ga with y = b, gb with y = a) */
__kernel void mul_bwd(__global const float *g, long g_off, __global const float *y, long y_off,
                      __global float *gx, long gx_off, long n)
{
    long i = get_global_id(0);
    if (i >= n) return;
    gx[gx_off + i] += g[g_off + i] * y[y_off + i];
}

/* scale: out = s * a */
__kernel void scale_fwd(__global const float *a, long a_off, __global float *out, long out_off,
                        float s, long n)
{
    long i = get_global_id(0);
    if (i >= n) return;
    out[out_off + i] = s * a[a_off + i];
}

/* scale backward: ga += s * gout */
__kernel void scale_bwd(__global const float *g, long g_off, __global float *gx, long gx_off,
                        float s, long n)
{
    long i = get_global_id(0);
    if (i >= n) return;
    gx[gx_off + i] += s * g[g_off + i];
}

/* bias_add: out[r, j] = x[r, j] + b[j]; x, out [R, N], b [N]; item i = r * N + j */
__kernel void bias_add_fwd(__global const float *x, long x_off, __global const float *b,
                           long b_off, __global float *out, long out_off, long N, long n)
{
    long i = get_global_id(0);
    if (i >= n) return;
    out[out_off + i] = x[x_off + i] + b[b_off + i % N];
}

/* ---- bias gradient: gb[j] += sum_r gout[r, j] ----
 * The reference sums each column in double over the rows in increasing order and rounds the
 * sum to float once. Without fp64 we carry the sum as an unevaluated pair of floats
 * (hi + lo, "float-float", about 48 significant bits) using error-free transformations, which
 * makes the final float the same as the reference's except in near-ties.
 * Pass 1 (bias_add_bwd_part): item i = c * N + j sums rows [c*rows, (c+1)*rows) of column j
 *   into part[2*i] (hi), part[2*i+1] (lo); chunk c = i / N.
 * Pass 2 (bias_add_bwd_sum): item j adds the chunks' pairs in order c = 0, 1, ... and does
 *   gb[j] += (float)(hi + lo).
 * The chunk length is a fixed constant chosen by the host (not a device property), so the
 * bits depend only on the shapes. */

/* (hi, lo) + (x, y) as a renormalized pair (|lo| <= ulp(hi) / 2; the adding of a single
 * float is y = 0), built on mcl_two_sum (common.cl). Unlike common.cl's accumulators, once
 * the leading sum is Inf or NaN the pair is (that, 0), so Inf and NaN propagate as in the
 * reference's double sum instead of turning Inf into Inf - Inf = NaN. */
float2 bias_add_ff_add(float2 acc, float2 v)
{
    float2 s = mcl_two_sum(acc.x, v.x);
    if (!isfinite(s.x)) return (float2)(s.x, 0.0f);
    float e = s.y + (acc.y + v.y);
    float hi = s.x + e; /* FastTwoSum: e is small next to s.x */
    return (float2)(hi, e - (hi - s.x));
}

/* pass 1: part[c, j] = float-float sum of gout[r, j] over the rows r of chunk c */
__kernel void bias_add_bwd_part(__global const float *g, long g_off, __global float *part,
                                long R, long N, long rows, long n)
{
    long i = get_global_id(0);
    if (i >= n) return;
    long c = i / N, j = i % N;
    long r0 = c * rows, r1 = min(r0 + rows, R);
    float2 acc = (float2)(0.0f, 0.0f);
    for (long r = r0; r < r1; r++)
        acc = bias_add_ff_add(acc, (float2)(g[g_off + r * N + j], 0.0f));
    part[2 * i] = acc.x;
    part[2 * i + 1] = acc.y;
}

/* pass 2: gb[j] += sum over chunks c (in order) of part[c, j], rounded to float once */
__kernel void bias_add_bwd_sum(__global const float *part, __global float *gb, long gb_off,
                               long chunks, long N)
{
    long j = get_global_id(0);
    if (j >= N) return;
    float2 acc = (float2)(0.0f, 0.0f);
    for (long c = 0; c < chunks; c++)
        acc = bias_add_ff_add(acc, (float2)(part[2 * (c * N + j)], part[2 * (c * N + j) + 1]));
    gb[gb_off + j] += acc.x + acc.y;
}

/* bias_add backward for x: gx += gout (the kernel copy_bwd, below) */

/* copy: out = a (also reshape's forward: the row-major order is unchanged) */
__kernel void copy_fwd(__global const float *a, long a_off, __global float *out, long out_off,
                       long n)
{
    long i = get_global_id(0);
    if (i >= n) return;
    out[out_off + i] = a[a_off + i];
}

/* copy backward: ga += gout (also the backward of add for either input, of bias_add for x and
 * of reshape) */
__kernel void copy_bwd(__global const float *g, long g_off, __global float *gx, long gx_off,
                       long n)
{
    long i = get_global_id(0);
    if (i >= n) return;
    gx[gx_off + i] += g[g_off + i];
}
