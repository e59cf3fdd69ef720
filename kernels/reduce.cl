/* reduce.cl — sum, mean, sumsq (of all elements, out [1]) and sum_last, mean_last (over the
 * last dim, [..,N] -> [..]), forward and backward. Same equations as src/ref/reduce.c.
 *
 * Accuracy without fp64. The reference accumulates in double. Here every sum is carried as an
 * unevaluated pair acc = (hi, lo) of floats ("Sum2", Ogita, Rump & Oishi 2005) with the pair
 * arithmetic and the tree sum of common.cl (mcl_acc_*, mcl_group_sum); squares add their exact
 * product error fma(x, x, -x*x) to lo too.
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

/* (hi + lo) / d, rounded about once (mcl_acc_div); d = 1 returns exactly hi + lo. */
float reduce_value_div(float2 acc, float d)
{
    if (isfinite(acc.x) && d == 1.0f) return acc.x + acc.y;
    return mcl_acc_div(acc, d).x;
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
        for (long i = lo + l; i < hi; i += W) acc = mcl_acc_add_prod(acc, x[i], x[i]);
    } else {
        for (long i = lo + l; i < hi; i += W) acc = mcl_acc_add(acc, x[i]);
    }
    acc = mcl_group_sum(acc, buf);
    if (l == 0) part[g] = acc;
}

/* Pass 2: out[0] = (sum of the n_part pairs part[]) / div. Launched as one group. */
__kernel void sum_combine(__global const float2 *part, long n_part, float div,
                          __global float *out, long out_off, __local float2 *buf)
{
    const long W = get_local_size(0), l = get_local_id(0);
    float2 acc = (float2)(0.0f, 0.0f);
    for (long i = l; i < n_part; i += W) acc = mcl_acc_merge(acc, part[i]);
    acc = mcl_group_sum(acc, buf);
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
    for (long j = l; j < N; j += W) acc = mcl_acc_add(acc, x[j]);
    acc = mcl_group_sum(acc, buf);
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
