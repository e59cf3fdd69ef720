/* softmax.cl — softmax and log_softmax over the last dim, forward and backward.
 * Same equations as src/ref/softmax.c.
 *
 * Index layout: a [..,N] tensor is R rows of N; one work-group per row (group id = row), W
 * work-items (a power of two chosen by the host). Item l handles the elements l, l+W, l+2W,
 * ... of the row, in order; row-wide maxima and sums are combined by a tree in local memory
 * with the fixed shape W/2, W/4, ..., 1, so results are deterministic for any N (N < W leaves
 * items idle, N >> W loops).
 *
 * Accuracy without fp64: the reference sums in double; here sums are pairs (hi, lo) of floats
 * (hi the plain float sum, lo the exact rounding errors collected with Knuth's TwoSum; products
 * add their exact error fma(a, b, -a*b)), which is about as accurate as a double sum rounded to
 * float. Inf/NaN propagate through hi as in a plain float sum.
 * Backward kernels ACCUMULATE (gx += ...).
 */
#pragma OPENCL FP_CONTRACT OFF

/* (s, e) with s = fl(a + b) and s + e == a + b exactly (Knuth's TwoSum). */
float2 softmax_two_sum(float a, float b)
{
    float s = a + b;
    float bv = s - a;
    float av = s - bv;
    return (float2)(s, (a - av) + (b - bv));
}

/* acc + x */
float2 softmax_acc_add(float2 acc, float x)
{
    float2 t = softmax_two_sum(acc.x, x);
    return (float2)(t.x, acc.y + t.y);
}

/* acc + a * b, with the exact error of the product */
float2 softmax_acc_add_prod(float2 acc, float a, float b)
{
    float p = a * b;
    float pe = fma(a, b, -p);
    float2 t = softmax_two_sum(acc.x, p);
    return (float2)(t.x, acc.y + (t.y + pe));
}

/* a + b for two pairs */
float2 softmax_acc_merge(float2 a, float2 b)
{
    float2 t = softmax_two_sum(a.x, b.x);
    return (float2)(t.x, (a.y + b.y) + t.y);
}

/* Row sum: every item passes its pair; returns the total to every item (fixed tree). Ends
 * with a barrier, so buf may be reused right away. */
float2 softmax_group_sum(float2 acc, __local float2 *buf)
{
    const uint l = get_local_id(0);
    buf[l] = acc;
    for (uint s = get_local_size(0) / 2; s > 0; s >>= 1) {
        barrier(CLK_LOCAL_MEM_FENCE);
        if (l < s) buf[l] = softmax_acc_merge(buf[l], buf[l + s]);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    float2 total = buf[0];
    barrier(CLK_LOCAL_MEM_FENCE);
    return total;
}

/* Row maximum m = max_j x[j] for every item (-inf for an all -inf row). A NaN is skipped by
 * the comparisons, as in the reference's row_max, and still makes the row NaN through the sum
 * of exponentials. */
float softmax_group_max(__global const float *x, long N, __local float2 *buf)
{
    const uint l = get_local_id(0), W = get_local_size(0);
    float m = -INFINITY;
    for (long j = l; j < N; j += W) {
        const float v = x[j];
        m = v > m ? v : m;
    }
    buf[l].x = m;
    for (uint s = W / 2; s > 0; s >>= 1) {
        barrier(CLK_LOCAL_MEM_FENCE);
        if (l < s && buf[l + s].x > buf[l].x) buf[l].x = buf[l + s].x;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    m = buf[0].x;
    barrier(CLK_LOCAL_MEM_FENCE);
    return m;
}

/* e / (hi + lo) rounded about once: q = e / hi corrected by the remainder e - q*(hi + lo). */
float softmax_div(float e, float2 s)
{
    if (!isfinite(s.x)) return e / s.x;
    float q = e / s.x;
    float r = fma(-q, s.x, e) - q * s.y;
    return q + r / s.x;
}

/* ------------------------------------------------------------------------------------ */
/* softmax: y[r, j] = exp(a[r, j] - m_r) / sum_k exp(a[r, k] - m_r),  m_r = max_k a[r, k]
 * (y first holds the exponentials, then each item divides its own elements by the sum) */
__kernel void softmax_fwd(__global const float *x, long x_off, __global float *y, long y_off,
                          long N, __local float2 *buf)
{
    const long W = get_local_size(0), l = get_local_id(0), r = get_group_id(0);
    x += x_off + r * N;
    y += y_off + r * N;
    const float m = softmax_group_max(x, N, buf);
    float2 acc = (float2)(0.0f, 0.0f);
    for (long j = l; j < N; j += W) {
        const float e = exp(x[j] - m);
        y[j] = e;
        acc = softmax_acc_add(acc, e);
    }
    const float2 s = softmax_group_sum(acc, buf);
    for (long j = l; j < N; j += W) y[j] = softmax_div(y[j], s);
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
    for (long j = l; j < N; j += W) acc = softmax_acc_add_prod(acc, g[j], y[j]);
    const float2 dot = softmax_group_sum(acc, buf);
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
    const float m = softmax_group_max(x, N, buf);
    float2 acc = (float2)(0.0f, 0.0f);
    for (long j = l; j < N; j += W) acc = softmax_acc_add(acc, exp(x[j] - m));
    const float2 s = softmax_group_sum(acc, buf);
    const float lse = isfinite(s.x) ? log(s.x) + s.y / s.x : log(s.x); /* log sum exp(a - m) */
    for (long j = l; j < N; j += W) {
        const float2 d = softmax_two_sum(x[j], -m); /* a - m, exactly (if finite) */
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
    for (long j = l; j < N; j += W) acc = softmax_acc_add(acc, g[j]);
    const float2 gs = softmax_group_sum(acc, buf);
    const float gsum = isfinite(gs.x) ? gs.x + gs.y : gs.x;
    for (long j = l; j < N; j += W) {
        const float t = exp(y[j]) * gsum;
        const float d = g[j] - t;
        gx[j] += d;
    }
}
