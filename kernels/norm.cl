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
 * Accuracy without fp64: sums are (hi, lo) float pairs with exact products, from common.cl
 * (mcl_two_prod, mcl_acc_*, mcl_group_sum2). The row mean is also kept as a pair (mu, mu_lo)
 * for the deviations x - mean.
 */
#pragma OPENCL FP_CONTRACT OFF

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
    for (long j = l; j < N; j += W) acc = mcl_acc_add_pair(acc, (float2)(x[j], 0.0f));
    const float2 mu = mcl_acc_div(mcl_group_sum2((float4)(acc, 0.0f, 0.0f), buf).xy, nf);

    /* biased variance from the deviations d = x - mean */
    acc = (float2)(0.0f, 0.0f);
    for (long j = l; j < N; j += W) {
        const float d = (x[j] - mu.x) - mu.y;
        acc = mcl_acc_add_pair(acc, mcl_two_prod(d, d));
    }
    const float2 v = mcl_group_sum2((float4)(acc, 0.0f, 0.0f), buf).xy;
    const float var = mcl_acc_value(mcl_acc_div(v, nf));
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
/* the input gradient of row r, by the W items of one group (item l) */
void layer_norm_bwd_dx_row(__global const float *x, long x_off, __global const float *gamma,
                           long gamma_off, __global const float *mean, long mean_off,
                           __global const float *rstd, long rstd_off, __global const float *g,
                           long g_off, __global float *gx, long gx_off, long N,
                           __local float4 *buf, long W, long l, long r)
{
    const float nf = (float)N;
    x += x_off + r * N;
    g += g_off + r * N;
    gx += gx_off + r * N;
    gamma += gamma_off;
    const float m = mean[mean_off + r], rs = rstd[rstd_off + r];

    float2 sd = (float2)(0.0f, 0.0f), sdx = (float2)(0.0f, 0.0f); /* sum dxhat, sum dxhat*xhat */
    for (long j = l; j < N; j += W) {
        const float xhat = (x[j] - m) * rs;
        const float2 dxhat = mcl_two_prod(g[j], gamma[j]); /* exact */
        sd = mcl_acc_add_pair(sd, dxhat);
        const float2 q = mcl_two_prod(dxhat.x, xhat);
        sdx = mcl_acc_add_pair(sdx, (float2)(q.x, q.y + dxhat.y * xhat));
    }
    const float4 sums = mcl_group_sum2((float4)(sd, sdx), buf);
    const float2 mean_d = mcl_acc_div(sums.xy, nf);
    const float mean_dx = mcl_acc_value(mcl_acc_div(sums.zw, nf));

    for (long j = l; j < N; j += W) {
        const float xhat = (x[j] - m) * rs;
        const float2 dxhat = mcl_two_prod(g[j], gamma[j]);
        float t = (dxhat.x - mean_d.x) + (dxhat.y - mean_d.y); /* dxhat - mean_d */
        const float u = xhat * mean_dx;
        t = t - u;
        const float dx = rs * t;
        gx[j] += dx;
    }
}

__kernel void layer_norm_bwd_dx(__global const float *x, long x_off, __global const float *gamma,
                                long gamma_off, __global const float *mean, long mean_off,
                                __global const float *rstd, long rstd_off,
                                __global const float *g, long g_off, __global float *gx,
                                long gx_off, long N, __local float4 *buf)
{
    layer_norm_bwd_dx_row(x, x_off, gamma, gamma_off, mean, mean_off, rstd, rstd_off, g, g_off, gx,
                          gx_off, N, buf, get_local_size(0), get_local_id(0), get_group_id(0));
}

/* layer_norm backward, gamma and beta gradients, one work-item per column j:
 *   ggamma[j] += sum_r gout[r, j] * xhat[r, j]      (if want_gamma)
 *   gbeta[j]  += sum_r gout[r, j]                   (if want_beta)
 * The two updates are separate statements, so they are right even if both are one tensor. */
void layer_norm_bwd_gb_col(__global const float *x, long x_off, __global const float *mean,
                           long mean_off, __global const float *rstd, long rstd_off,
                           __global const float *g, long g_off, __global float *ggamma,
                           long ggamma_off, __global float *gbeta, long gbeta_off, long R, long N,
                           long want_gamma, long want_beta, long j)
{
    x += x_off + j;
    g += g_off + j;
    mean += mean_off;
    rstd += rstd_off;
    float2 ag = (float2)(0.0f, 0.0f), ab = (float2)(0.0f, 0.0f);
    for (long r = 0; r < R; r++) {
        const float xhat = (x[r * N] - mean[r]) * rstd[r];
        const float gr = g[r * N];
        ag = mcl_acc_add_pair(ag, mcl_two_prod(gr, xhat));
        ab = mcl_acc_add_pair(ab, (float2)(gr, 0.0f));
    }
    if (want_gamma) ggamma[ggamma_off + j] += mcl_acc_value(ag);
    if (want_beta) gbeta[gbeta_off + j] += mcl_acc_value(ab);
}

__kernel void layer_norm_bwd_gb(__global const float *x, long x_off, __global const float *mean,
                                long mean_off, __global const float *rstd, long rstd_off,
                                __global const float *g, long g_off, __global float *ggamma,
                                long ggamma_off, __global float *gbeta, long gbeta_off, long R,
                                long N, long want_gamma, long want_beta)
{
    const long j = get_global_id(0);
    if (j >= N) return;
    layer_norm_bwd_gb_col(x, x_off, mean, mean_off, rstd, rstd_off, g, g_off, ggamma, ggamma_off,
                          gbeta, gbeta_off, R, N, want_gamma, want_beta, j);
}

/* layer_norm backward, every gradient in one launch: groups 0 .. R-1 are layer_norm_bwd_dx's
 * rows, groups R, R+1, ... layer_norm_bwd_gb's columns (item l of group R + c: column c·W + l;
 * ids >= N return). The same operations as the two kernels, so the same bits; a group takes
 * one branch as a whole, so the row groups' barriers stay uniform. */
__kernel void layer_norm_bwd_all(__global const float *x, long x_off, __global const float *gamma,
                                 long gamma_off, __global const float *mean, long mean_off,
                                 __global const float *rstd, long rstd_off,
                                 __global const float *g, long g_off, __global float *gx,
                                 long gx_off, __global float *ggamma, long ggamma_off,
                                 __global float *gbeta, long gbeta_off, long R, long N,
                                 long want_gamma, long want_beta, __local float4 *buf)
{
    const long W = get_local_size(0), l = get_local_id(0), grp = get_group_id(0);
    if (grp < R) {
        layer_norm_bwd_dx_row(x, x_off, gamma, gamma_off, mean, mean_off, rstd, rstd_off, g, g_off,
                              gx, gx_off, N, buf, W, l, grp);
        return;
    }
    const long j = (grp - R) * W + l;
    if (j >= N) return;
    layer_norm_bwd_gb_col(x, x_off, mean, mean_off, rstd, rstd_off, g, g_off, ggamma, ggamma_off,
                          gbeta, gbeta_off, R, N, want_gamma, want_beta, j);
}
