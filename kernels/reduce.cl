/* reduce.cl — sum, mean, sumsq (of all elements, out [1]) and sum_last, mean_last (over the
 * last dim, [..,N] -> [..]), forward and backward. Same equations as src/ref/reduce.c.
 *
 * Accuracy without fp64. The reference accumulates in double. Here every sum is carried as an
 * unevaluated pair acc = (hi, lo) of floats ("Sum2", Ogita, Rump & Oishi 2005): hi is the
 * plain float sum and lo collects the exact rounding error of each addition (Knuth's TwoSum),
 * so hi + lo is about as accurate as a double sum rounded to float. Squares add their exact
 * product error fma(x, x, -x*x) to lo too. Inf and NaN propagate through hi exactly as in a
 * plain float sum; the value of a pair is hi + lo when hi is finite, else hi.
 *
 * Index layout (all deterministic: fixed shapes, no atomics; W = work-group size, a power of
 * two chosen by the host from the kernel's limit):
 *   full reductions (sum, mean, sumsq), two passes:
 *     sum_partials  G groups; group g owns the contiguous chunk [g*n/G, (g+1)*n/G); item l adds
 *                   chunk elements l, l+W, l+2W, ... in order, then a tree in local memory with
 *                   the fixed shape W/2, W/4, ..., 1 combines the W pairs; pair g of the scratch
 *                   buffer part[] receives the group's (hi, lo).
 *     sum_combine   one group: item l adds part[l], part[l+W], ... in order, same tree, item 0
 *                   writes out[0] = (hi + lo) / div  (div = 1 for sum and sumsq, n for mean).
 *   row reductions (sum_last, mean_last): sum_last_fwd, one group per row (group id = row),
 *                   same per-item stride and tree, item 0 writes out[row].
 *   backward: one work-item per element of the gradient (flat index i; ids >= n return).
 * Backward kernels ACCUMULATE (gx[i] += ...).
 */
#pragma OPENCL FP_CONTRACT OFF

/* (s, e) with s = fl(a + b) and s + e == a + b exactly (Knuth's TwoSum, no branches). */
float2 reduce_two_sum(float a, float b)
{
    float s = a + b;
    float bv = s - a;
    float av = s - bv;
    return (float2)(s, (a - av) + (b - bv));
}

/* acc + x */
float2 reduce_acc_add(float2 acc, float x)
{
    float2 t = reduce_two_sum(acc.x, x);
    return (float2)(t.x, acc.y + t.y);
}

/* acc + x * x, with the exact error of the product */
float2 reduce_acc_add_sq(float2 acc, float x)
{
    float p = x * x;
    float pe = fma(x, x, -p);
    float2 t = reduce_two_sum(acc.x, p);
    return (float2)(t.x, acc.y + (t.y + pe));
}

/* a + b for two pairs */
float2 reduce_acc_merge(float2 a, float2 b)
{
    float2 t = reduce_two_sum(a.x, b.x);
    return (float2)(t.x, (a.y + b.y) + t.y);
}

/* (hi + lo) / d, rounded about once: the quotient q = hi / d is corrected by the remainder
 * (hi - q*d + lo) / d (the fma gives hi - q*d exactly). d = 1 returns hi + lo. */
float reduce_value_div(float2 acc, float d)
{
    if (!isfinite(acc.x)) return acc.x / d;
    if (d == 1.0f) return acc.x + acc.y;
    float q = acc.x / d;
    float r = fma(-q, d, acc.x) + acc.y;
    return q + r / d;
}

/* Tree-combine buf[0..W) (W = local size, a power of two; every item wrote buf[l]) and return
 * the total to every item. Ends with a barrier, so buf may be reused right away. */
float2 reduce_group_sum(__local float2 *buf)
{
    const uint l = get_local_id(0);
    for (uint s = get_local_size(0) / 2; s > 0; s >>= 1) {
        barrier(CLK_LOCAL_MEM_FENCE);
        if (l < s) buf[l] = reduce_acc_merge(buf[l], buf[l + s]);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    float2 total = buf[0];
    barrier(CLK_LOCAL_MEM_FENCE);
    return total;
}

/* ---- full reductions ---------------------------------------------------------------- */

/* Pass 1 of sum / mean / sumsq: part[g] = sum (square = 0) or sum of squares (square = 1) of
 * the chunk [g*n/G, (g+1)*n/G) of x[0..n), as a (hi, lo) pair. */
__kernel void sum_partials(__global const float *x, long x_off, long n, long square,
                           __global float2 *part, __local float2 *buf)
{
    const long W = get_local_size(0), l = get_local_id(0);
    const long g = get_group_id(0), G = get_num_groups(0);
    const long lo = n * g / G, hi = n * (g + 1) / G;
    x += x_off;
    float2 acc = (float2)(0.0f, 0.0f);
    if (square) {
        for (long i = lo + l; i < hi; i += W) acc = reduce_acc_add_sq(acc, x[i]);
    } else {
        for (long i = lo + l; i < hi; i += W) acc = reduce_acc_add(acc, x[i]);
    }
    buf[l] = acc;
    acc = reduce_group_sum(buf);
    if (l == 0) part[g] = acc;
}

/* Pass 2: out[0] = (sum of the n_part pairs part[]) / div. Launched as one group. */
__kernel void sum_combine(__global const float2 *part, long n_part, float div,
                          __global float *out, long out_off, __local float2 *buf)
{
    const long W = get_local_size(0), l = get_local_id(0);
    float2 acc = (float2)(0.0f, 0.0f);
    for (long i = l; i < n_part; i += W) acc = reduce_acc_merge(acc, part[i]);
    buf[l] = acc;
    acc = reduce_group_sum(buf);
    if (l == 0) out[out_off] = reduce_value_div(acc, div);
}

/* sum backward:  gx[i] += gout[0]          (div = 1)
 * mean backward: gx[i] += gout[0] / n      (div = n)   over i < n */
__kernel void sum_bwd(__global const float *g, long g_off, float div, __global float *gx,
                      long gx_off, long n)
{
    const long i = get_global_id(0);
    if (i >= n) return;
    const float gi = g[g_off] / div;
    gx[gx_off + i] += gi;
}

/* sumsq backward: gx[i] += (2 * gout[0]) * x[i] */
__kernel void sumsq_bwd(__global const float *g, long g_off, __global const float *x, long x_off,
                        __global float *gx, long gx_off, long n)
{
    const long i = get_global_id(0);
    if (i >= n) return;
    const float g2 = 2.0f * g[g_off];
    const float d = g2 * x[x_off + i];
    gx[gx_off + i] += d;
}

/* ---- row reductions ----------------------------------------------------------------- */

/* sum_last (div = 1) / mean_last (div = N): out[r] = (sum_j x[r, j]) / div, one group per row r */
__kernel void sum_last_fwd(__global const float *x, long x_off, long N, float div,
                           __global float *out, long out_off, __local float2 *buf)
{
    const long W = get_local_size(0), l = get_local_id(0), r = get_group_id(0);
    x += x_off + r * N;
    float2 acc = (float2)(0.0f, 0.0f);
    for (long j = l; j < N; j += W) acc = reduce_acc_add(acc, x[j]);
    buf[l] = acc;
    acc = reduce_group_sum(buf);
    if (l == 0) out[out_off + r] = reduce_value_div(acc, div);
}

/* sum_last / mean_last backward: gx[r, j] += gout[r] / div over the n = R*N elements */
__kernel void sum_last_bwd(__global const float *g, long g_off, long N, float div,
                           __global float *gx, long gx_off, long n)
{
    const long i = get_global_id(0);
    if (i >= n) return;
    const float gr = g[g_off + i / N] / div;
    gx[gx_off + i] += gr;
}
