/* softmax.cl — softmax and log_softmax over the last dim, forward and backward.
 * Same equations as src/ref/softmax.c.
 *
 * Index layout: a [..,N] tensor is R rows of N; one work-group per row (group id = row), W
 * work-items (a power of two chosen by the host). Item l handles the elements l, l+W, l+2W,
 * ... of the row, in order; row-wide maxima and sums are combined by a tree in local memory
 * with the fixed shape W/2, W/4, ..., 1, so results are deterministic for any N (N < W leaves
 * items idle, N >> W loops).
 *
 * Accuracy without fp64: sums are (hi, lo) float pairs, with the row maximum and the tree
 * sums from common.cl (mcl_group_max, mcl_group_sum, mcl_acc_*).
 * Backward kernels ACCUMULATE (gx += ...).
 */
#pragma OPENCL FP_CONTRACT OFF

/* ------------------------------------------------------------------------------------ */
/* softmax: y[r, j] = exp(a[r, j] - m_r) / sum_k exp(a[r, k] - m_r),  m_r = max_k a[r, k]
 * (y first holds the exponentials, then each item divides its own elements by the sum) */
__kernel void softmax_fwd(__global const float *x, long x_off, __global float *y, long y_off,
                          long N, __local float2 *buf)
{
    const long W = get_local_size(0), l = get_local_id(0), r = get_group_id(0);
    x += x_off + r * N;
    y += y_off + r * N;
    const float m = mcl_group_max(x, N, buf);
    float2 acc = (float2)(0.0f, 0.0f);
    for (long j = l; j < N; j += W) {
        const float e = exp(x[j] - m);
        y[j] = e;
        acc = mcl_acc_add(acc, e);
    }
    const float2 s = mcl_group_sum(acc, buf);
    for (long j = l; j < N; j += W) y[j] = mcl_div_acc(y[j], s);
}

/* softmax backward: ga[r, j] += y[r, j] * (gout[r, j] - sum_k gout[r, k] * y[r, k]) */
__kernel void softmax_bwd(__global const float *y, long y_off, __global const float *g, long g_off,
                          __global float *gx, long gx_off, long N, __local float2 *buf)
{
    const long W = get_local_size(0), l = get_local_id(0), r = get_group_id(0);
    y += y_off + r * N;
    g += g_off + r * N;
    gx += gx_off + r * N;
    float2 acc = (float2)(0.0f, 0.0f);
    for (long j = l; j < N; j += W) acc = mcl_acc_add_prod(acc, g[j], y[j]);
    const float2 dot = mcl_group_sum(acc, buf);
    for (long j = l; j < N; j += W) {
        const float d = isfinite(dot.x) ? (g[j] - dot.x) - dot.y : g[j] - dot.x;
        const float t = y[j] * d;
        gx[j] += t;
    }
}

/* ------------------------------------------------------------------------------------ */
/* log_softmax: y[r, j] = a[r, j] - m_r - log sum_k exp(a[r, k] - m_r)
 * (log of the pair: log(hi + lo) ~ log(hi) + lo / hi; a - m is split exactly into two floats
 * so that the result is rounded about once) */
__kernel void log_softmax_fwd(__global const float *x, long x_off, __global float *y, long y_off,
                              long N, __local float2 *buf)
{
    const long W = get_local_size(0), l = get_local_id(0), r = get_group_id(0);
    x += x_off + r * N;
    y += y_off + r * N;
    const float m = mcl_group_max(x, N, buf);
    float2 acc = (float2)(0.0f, 0.0f);
    for (long j = l; j < N; j += W) acc = mcl_acc_add(acc, exp(x[j] - m));
    const float2 s = mcl_group_sum(acc, buf);
    const float lse = mcl_acc_log(s); /* log sum exp(a - m) */
    for (long j = l; j < N; j += W) {
        const float2 d = mcl_two_sum(x[j], -m); /* a - m, exactly (if finite) */
        y[j] = isfinite(d.x) ? (d.x - lse) + d.y : d.x - lse;
    }
}

/* log_softmax backward: ga[r, j] += gout[r, j] - exp(y[r, j]) * sum_k gout[r, k] */
__kernel void log_softmax_bwd(__global const float *y, long y_off, __global const float *g,
                              long g_off, __global float *gx, long gx_off, long N,
                              __local float2 *buf)
{
    const long W = get_local_size(0), l = get_local_id(0), r = get_group_id(0);
    y += y_off + r * N;
    g += g_off + r * N;
    gx += gx_off + r * N;
    float2 acc = (float2)(0.0f, 0.0f);
    for (long j = l; j < N; j += W) acc = mcl_acc_add(acc, g[j]);
    const float2 gs = mcl_group_sum(acc, buf);
    const float gsum = mcl_acc_value(gs);
    for (long j = l; j < N; j += W) {
        const float t = exp(y[j]) * gsum;
        const float d = g[j] - t;
        gx[j] += d;
    }
}
