/* norm.cl — layer normalization over the last dim, forward and backward.
 * Same equations as src/ref/norm.c:
 *   mean[r] = (1/N) sum_j x[r, j]
 *   var[r]  = (1/N) sum_j (x[r, j] - mean[r])^2           (biased, two passes)
 *   rstd[r] = 1 / sqrt(var[r] + eps)
 *   y[r, j] = (x[r, j] - mean[r]) * rstd[r] * gamma[j] + beta[j]
 *
 * Index layout:
 *   layer_norm_fwd, layer_norm_bwd_dx  one work-group per row (group id = row) of W items (a
 *       power of two from the host); item l handles the row elements l, l+W, ... in order, and
 *       row sums are combined by a tree in local memory with the fixed shape W/2, ..., 1.
 *   layer_norm_bwd_gb  one work-item per column j (ids >= N return), summing over the rows
 *       r = 0..R-1 in order (the gamma and beta gradients).
 * All deterministic (no atomics). Backward kernels ACCUMULATE.
 *
 * Accuracy without fp64: the reference sums in double; here sums are pairs (hi, lo) of floats
 * (hi the plain float sum, lo the exact rounding errors from Knuth's TwoSum and, for products,
 * fma(a, b, -a*b)), about as accurate as a double sum rounded to float. The row mean is also
 * kept as a pair (mu, mu_lo) for the deviations x - mean. Inf/NaN propagate through hi.
 */
#pragma OPENCL FP_CONTRACT OFF

/* (s, e) with s = fl(a + b) and s + e == a + b exactly (Knuth's TwoSum). */
float2 norm_two_sum(float a, float b)
{
    float s = a + b;
    float bv = s - a;
    float av = s - bv;
    return (float2)(s, (a - av) + (b - bv));
}

/* (p, e) with p = fl(a * b) and p + e == a * b exactly (e = 0 if p is not finite) */
float2 norm_two_prod(float a, float b)
{
    float p = a * b;
    return (float2)(p, isfinite(p) ? fma(a, b, -p) : 0.0f);
}

/* acc + (x.hi + x.lo) for an exact pair x (a product from norm_two_prod, or (v, 0)) */
float2 norm_acc_add(float2 acc, float2 x)
{
    float2 t = norm_two_sum(acc.x, x.x);
    return (float2)(t.x, acc.y + (t.y + x.y));
}

/* a + b for two accumulator pairs */
float2 norm_acc_merge(float2 a, float2 b)
{
    float2 t = norm_two_sum(a.x, b.x);
    return (float2)(t.x, (a.y + b.y) + t.y);
}

/* The value of an accumulator: hi + lo, or hi when it is not finite. */
float norm_value(float2 acc)
{
    return isfinite(acc.x) ? acc.x + acc.y : acc.x;
}

/* (hi + lo) / d as a pair (q, q_lo): q is the quotient rounded about once, q_lo the rest. */
float2 norm_div(float2 acc, float d)
{
    if (!isfinite(acc.x)) return (float2)(acc.x / d, 0.0f);
    float q = acc.x / d;
    float c = (fma(-q, d, acc.x) + acc.y) / d; /* remainder / d */
    float qc = q + c;
    return (float2)(qc, c - (qc - q));
}

/* Row sum of two accumulators at once (.xy and .zw); returns the totals to every item.
 * Ends with a barrier, so buf may be reused right away. */
float4 norm_group_sum2(float4 acc, __local float4 *buf)
{
    const uint l = get_local_id(0);
    buf[l] = acc;
    for (uint s = get_local_size(0) / 2; s > 0; s >>= 1) {
        barrier(CLK_LOCAL_MEM_FENCE);
        if (l < s) {
            const float4 a = buf[l], b = buf[l + s];
            buf[l] = (float4)(norm_acc_merge(a.xy, b.xy), norm_acc_merge(a.zw, b.zw));
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    float4 total = buf[0];
    barrier(CLK_LOCAL_MEM_FENCE);
    return total;
}

/* ------------------------------------------------------------------------------------ */
/* layer_norm forward, one group per row r:
 *   x [R,N], gamma [N], beta [N] -> y [R,N], mean [R], rstd [R];  eps > 0 */
__kernel void layer_norm_fwd(__global const float *x, long x_off, __global const float *gamma,
                             long gamma_off, __global const float *beta, long beta_off,
                             __global float *y, long y_off, __global float *mean, long mean_off,
                             __global float *rstd, long rstd_off, long N, float eps,
                             __local float4 *buf)
{
    const long W = get_local_size(0), l = get_local_id(0), r = get_group_id(0);
    const float nf = (float)N;
    x += x_off + r * N;
    y += y_off + r * N;
    gamma += gamma_off;
    beta += beta_off;

    /* mean, as the pair mu + mu_lo */
    float2 acc = (float2)(0.0f, 0.0f);
    for (long j = l; j < N; j += W) acc = norm_acc_add(acc, (float2)(x[j], 0.0f));
    const float2 mu = norm_div(norm_group_sum2((float4)(acc, 0.0f, 0.0f), buf).xy, nf);

    /* biased variance from the deviations d = x - mean */
    acc = (float2)(0.0f, 0.0f);
    for (long j = l; j < N; j += W) {
        const float d = (x[j] - mu.x) - mu.y;
        acc = norm_acc_add(acc, norm_two_prod(d, d));
    }
    const float2 v = norm_group_sum2((float4)(acc, 0.0f, 0.0f), buf).xy;
    const float var = norm_value(norm_div(v, nf));
    const float rs = 1.0f / sqrt(var + eps);
    if (l == 0) {
        mean[mean_off + r] = mu.x;
        rstd[rstd_off + r] = rs;
    }

    /* y = xhat * gamma + beta */
    for (long j = l; j < N; j += W) {
        const float d = (x[j] - mu.x) - mu.y;
        const float xhat = d * rs;
        const float t = xhat * gamma[j];
        y[j] = t + beta[j];
    }
}

/* layer_norm backward, input gradient, one group per row r; with dxhat_j = gout[r, j] * gamma[j]
 * and xhat_j = (x[r, j] - mean[r]) * rstd[r] (recomputed from the saved mean and rstd):
 *   gx[r, j] += rstd[r] * (dxhat_j - (1/N) sum_k dxhat_k - xhat_j * (1/N) sum_k dxhat_k xhat_k) */
__kernel void layer_norm_bwd_dx(__global const float *x, long x_off, __global const float *gamma,
                                long gamma_off, __global const float *mean, long mean_off,
                                __global const float *rstd, long rstd_off,
                                __global const float *g, long g_off, __global float *gx,
                                long gx_off, long N, __local float4 *buf)
{
    const long W = get_local_size(0), l = get_local_id(0), r = get_group_id(0);
    const float nf = (float)N;
    x += x_off + r * N;
    g += g_off + r * N;
    gx += gx_off + r * N;
    gamma += gamma_off;
    const float m = mean[mean_off + r], rs = rstd[rstd_off + r];

    float2 sd = (float2)(0.0f, 0.0f), sdx = (float2)(0.0f, 0.0f); /* sum dxhat, sum dxhat*xhat */
    for (long j = l; j < N; j += W) {
        const float xhat = (x[j] - m) * rs;
        const float2 dxhat = norm_two_prod(g[j], gamma[j]); /* exact */
        sd = norm_acc_add(sd, dxhat);
        const float2 q = norm_two_prod(dxhat.x, xhat);
        sdx = norm_acc_add(sdx, (float2)(q.x, q.y + dxhat.y * xhat));
    }
    const float4 sums = norm_group_sum2((float4)(sd, sdx), buf);
    const float2 mean_d = norm_div(sums.xy, nf);
    const float mean_dx = norm_value(norm_div(sums.zw, nf));

    for (long j = l; j < N; j += W) {
        const float xhat = (x[j] - m) * rs;
        const float2 dxhat = norm_two_prod(g[j], gamma[j]);
        float t = (dxhat.x - mean_d.x) + (dxhat.y - mean_d.y); /* dxhat - mean_d */
        const float u = xhat * mean_dx;
        t = t - u;
        const float dx = rs * t;
        gx[j] += dx;
    }
}

/* layer_norm backward, gamma and beta gradients, one work-item per column j:
 *   ggamma[j] += sum_r gout[r, j] * xhat[r, j]      (if want_gamma)
 *   gbeta[j]  += sum_r gout[r, j]                   (if want_beta)
 * The two updates are separate statements, so they are right even if both are one tensor. */
__kernel void layer_norm_bwd_gb(__global const float *x, long x_off, __global const float *mean,
                                long mean_off, __global const float *rstd, long rstd_off,
                                __global const float *g, long g_off, __global float *ggamma,
                                long ggamma_off, __global float *gbeta, long gbeta_off, long R,
                                long N, long want_gamma, long want_beta)
{
    const long j = get_global_id(0);
    if (j >= N) return;
    x += x_off + j;
    g += g_off + j;
    mean += mean_off;
    rstd += rstd_off;
    float2 ag = (float2)(0.0f, 0.0f), ab = (float2)(0.0f, 0.0f);
    for (long r = 0; r < R; r++) {
        const float xhat = (x[r * N] - mean[r]) * rstd[r];
        const float gr = g[r * N];
        ag = norm_acc_add(ag, norm_two_prod(gr, xhat));
        ab = norm_acc_add(ab, (float2)(gr, 0.0f));
    }
    if (want_gamma) ggamma[ggamma_off + j] += norm_value(ag);
    if (want_beta) gbeta[gbeta_off + j] += norm_value(ab);
}
