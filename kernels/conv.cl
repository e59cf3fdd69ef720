/* conv.cl — convolution family, NCHW: conv2d (im2col / col2im around CLBlast GEMMs, host
 * glue in src/opencl/conv.c), maxpool2d, instance_norm, inorm_relu, inorm_pool_relu,
 * inorm_add_pool_relu; forward and backward.
 * Same equations as src/ref/conv.c (instance_norm, inorm_relu, inorm_add_pool_relu:
 * src/ref/inorm.c).
 *
 * conv2d works on a chunk of nb images at a time (images b0 .. b0+nb-1; the host passes the
 * tensors' offsets already moved to image b0) in the "wide" layout: a matrix whose row holds
 * the P = Ho*Wo pixels of image 0 of the chunk, then those of image 1, ... (row length
 * ld = nb*P). col [KK, ld] is the im2col matrix (KK = C*k*k, row r = (c*k + ky)*k + kx);
 * [O, ld] matrices hold outputs or output gradients. Index layout, one work-item per element
 * WRITTEN, row-major, ids >= n return:
 *   conv2d_im2col    col[r, b*P + oy*Wo + ox]  item i = (r*nb + b)*P + oy*Wo + ox: the
 *                    element at address i (coalesced writes)
 *   conv2d_out       out[b, o, p] (+ bias)    item i = (b*O + o)*P + p
 *   conv2d_to_wide   gw[o, b*P + p] = g[b,o,p] item i = o*ld + b*P + p
 *   conv2d_col2im    gx[b, c, iy, ix]          item i = ((b*C + c)*H + iy)*W + ix: one pixel,
 *                    the sum of the <= k*k col entries that came from it, in (ky, kx) order
 * The conv2d kernels index with 32-bit ints (the host keeps a chunk's matrices and images
 * below 2^31 elements; tensor offsets stay 64-bit).
 *   conv2d_sum_parts gw[j] += sum_{s < S} part[s*n + j] (in order s = 0, 1, ..), item j: the
 *                    K-split weight gradient's partial products (conv.c)
 *   conv2d_bias_bwd  one work-group per output channel o (group id), W items (power of two)
 *                    summing g[b, o, p] over the flat (b, p) with stride W, then a fixed tree
 *   maxpool2d_fwd    out/arg[q, i, j]         item = (q*Ho + i)*Wo + j   (q = b*C + c)
 *   maxpool2d_bwd    gx[q, y, x]              item = (q*H + y)*W + x: adds its window's gout
 *                    when it is the window's argmax (a gather: no collisions)
 *   instance_norm_fwd, instance_norm_bwd_dx   one work-group per plane r = b*C + c, as
 *                    layer_norm_fwd / layer_norm_bwd_dx of norm.c with gamma[r % C]
 *   instance_norm_bwd_gb  one work-group per channel c: sums over the flat (b, j), then a tree
 *   inorm_relu_fwd   as instance_norm_fwd (one work-group per plane), y through the relu
 *   inorm_relu_bwd   work-groups first + g: g < B*C instance_norm_bwd_dx's plane g, the next C
 *                    instance_norm_bwd_gb's channels, gout gated by y > 0 (one launch for
 *                    both parts when they take the same group size, else one per part)
 *   inorm_pool_relu_fwd, inorm_pool_relu_bwd_dx   one work-group per plane, as instance_norm's
 *                    (the statistics by in_stats), the windows taken item by item
 *   inorm_pool_relu_bwd_gb  one work-group per channel c: sums over the flat (b, window)
 *   inorm_pool_relu_bwd_all  both in one launch: B*C plane groups, then C channel groups
 *   inorm_add_pool_relu_fwd  as inorm_pool_relu_fwd, the skip added before the windows' max
 *   inorm_add_pool_relu_bwd  as inorm_relu_bwd's groups, with inorm_pool_relu's plane and
 *                    channel parts; the plane groups also write the skip's gradient
 * All deterministic (no atomics). Backward kernels ACCUMULATE (inorm_relu_bwd and
 * inorm_add_pool_relu_bwd store into a fresh gradient instead: in_put). Sums are (hi, lo)
 * pairs with exact products (common.cl), about as accurate as the reference's double sums. The
 * instance_norm statistics go further (pair deviations, a Newton-corrected 1/sqrt: in_rstd):
 * the saved mean and rstd then equal the reference's bit for bit in practice (8000 planes of
 * 5 to 2145 values: no difference), so both backends' backward passes start from the same
 * saved values; a 1-ulp rstd difference once showed as a 1e-5 relative difference of a
 * gamma gradient whose sum over images cancelled.
 */
#pragma OPENCL FP_CONTRACT OFF

/* ---- conv2d ----------------------------------------------------------------------------- */

/* im2col, chunk of nb images, wide layout:
 *   col[(c*k + ky)*k + kx, b*P + oy*Wo + ox] = x[b, c, oy*s - pd + ky, ox*s - pd + kx]  (0 outside)
 *   x [nb,C,H,W] (from x_off), col [KK, nb*P] (from col_off); n = KK*nb*P
 * Item i writes col element i (row r, column b*P + oy*Wo + ox): consecutive items write
 * consecutive addresses and, at stride 1, read consecutive pixels of a row of x. 32-bit
 * indices: the host keeps every chunk below 2^31 elements (conv.c, conv_dims_get). */
__kernel void conv2d_im2col(__global const float *x, long x_off, __global float *col,
                            long col_off, int C, int H, int W, int k, int s, int pd, int Wo,
                            int P, int nb, int n)
{
    const int i = get_global_id(0);
    if (i >= n) return;
    const int ld = nb * P, r = i / ld, q = i - r * ld, b = q / P, p = q - b * P;
    const int oy = p / Wo, ox = p - oy * Wo;
    const int t = r / k, kx = r - t * k, c = t / k, ky = t - c * k;
    const int iy = oy * s - pd + ky, ix = ox * s - pd + kx;
    x += x_off;
    col[col_off + i] =
        (iy >= 0 && iy < H && ix >= 0 && ix < W) ? x[((b * C + c) * H + iy) * W + ix] : 0.0f;
}

/* out[b, o, p] = outw[o, b*P + p] + bias[o]
 *   outw [O, nb*P] (the GEMM result), bias [O], out [nb,O,P] (from out_off); n = nb*O*P */
__kernel void conv2d_out(__global const float *outw, long ow_off, __global const float *bias,
                         long bias_off, __global float *out, long out_off, int O, int P, int nb,
                         int n)
{
    const int i = get_global_id(0);
    if (i >= n) return;
    const int t = i / P, p = i - t * P, b = t / O, o = t - b * O;
    out[out_off + i] = outw[ow_off + o * (nb * P) + b * P + p] + bias[bias_off + o];
}

/* gw[j] += sum over s = 0 .. S-1 (in order, as a (hi, lo) pair) of part[s*n + j];
 * part [S, n] (a plain buffer from element 0), gw [n] (from gw_off) */
__kernel void conv2d_sum_parts(__global const float *part, long S, __global float *gw,
                               long gw_off, long n)
{
    const long j = get_global_id(0);
    if (j >= n) return;
    float2 acc = (float2)(0.0f, 0.0f);
    for (long s = 0; s < S; s++) acc = mcl_acc_merge(acc, (float2)(part[s * n + j], 0.0f));
    gw[gw_off + j] += mcl_acc_value(acc);
}

/* gw[o, b*P + p] = g[b, o, p]:  g [nb,O,P] (from g_off) -> gw [O, nb*P]; n = O*nb*P */
__kernel void conv2d_to_wide(__global const float *g, long g_off, __global float *gw, long gw_off,
                             int O, int P, int nb, int n)
{
    const int i = get_global_id(0);
    if (i >= n) return;
    const int ld = nb * P, o = i / ld, q = i - o * ld, b = q / P, p = q - b * P;
    gw[gw_off + i] = g[g_off + (b * O + o) * P + p];
}

/* col2im (the adjoint of im2col), accumulated:
 *   gx[b, c, iy, ix] += sum_{ky, kx} colg[(c*k + ky)*k + kx, b*P + oy*Wo + ox]
 *   over the (ky, kx) with oy*s = iy + pd - ky, ox*s = ix + pd - kx, 0 <= oy < Ho, 0 <= ox < Wo
 *   colg [KK, nb*P], gx [nb,C,H,W] (from gx_off); n = nb*C*H*W
 * Item i gathers pixel i of gx (consecutive items: consecutive pixels of a row, which read
 * consecutive columns of each tap's col row at stride 1), summing its taps in (ky, kx) order.
 * Only the taps that hit the stride's grid are visited: ky = (iy + pd) mod s, + s, ... with
 * oy = (iy + pd - ky) / s falling by one per step (likewise kx, ox): one division per
 * dimension per item, none per tap. */
__kernel void conv2d_col2im(__global const float *colg, long cg_off, __global float *gx,
                            long gx_off, int C, int H, int W, int k, int s, int pd, int Ho,
                            int Wo, int nb, int n)
{
    const int i = get_global_id(0);
    if (i >= n) return;
    const int ty = i / W, ix = i - ty * W, tc = ty / H, iy = ty - tc * H;
    const int b = tc / C, c = tc - b * C, ld = nb * Ho * Wo;
    const int sy = iy + pd, sx = ix + pd;
    const int ky0 = sy % s, kx0 = sx % s, oy0 = sy / s, ox0 = sx / s;
    colg += cg_off + b * Ho * Wo;
    float2 acc = (float2)(0.0f, 0.0f);
    for (int ky = ky0, oy = oy0; ky < k && oy >= 0; ky += s, oy--) {
        if (oy >= Ho) continue;
        __global const float *tap = colg + (c * k + ky) * k * ld + oy * Wo;
        for (int kx = kx0, ox = ox0; kx < k && ox >= 0; kx += s, ox--)
            if (ox < Wo) acc = mcl_acc_add(acc, tap[kx * ld + ox]);
    }
    gx[gx_off + i] += mcl_acc_value(acc);
}

/* gbias[o] += sum_{b < B, p < P} g[b, o, p], one work-group per o; buf: W float2. Item l sums
 * the flat (b, p) = l, l + W, ..., advancing (b, p) by compare-and-subtract. */
__kernel void conv2d_bias_bwd(__global const float *g, long g_off, __global float *gb, long gb_off,
                              int B, int O, int P, __local float2 *buf)
{
    const int W = get_local_size(0), l = get_local_id(0), o = get_group_id(0);
    const int db = W / P, dp = W - db * P;
    g += g_off + (long)o * P;
    float2 acc = (float2)(0.0f, 0.0f);
    for (int b = l / P, p = l - (l / P) * P; b < B;) {
        acc = mcl_acc_add(acc, g[(long)b * O * P + p]); /* the whole batch: 64-bit */
        b += db;
        p += dp;
        if (p >= P) {
            p -= P;
            b++;
        }
    }
    const float2 tot = mcl_group_sum(acc, buf);
    if (l == 0) gb[gb_off + o] += mcl_acc_value(tot);
}

/* ---- maxpool2d -------------------------------------------------------------------------- */

/* The maxpool2d kernels index with 32-bit ints: the host launches them over chunks of
 * planes of fewer than 2^31 elements (conv.c), moving the offsets to the chunk's first plane. */

/* out[q, i, j] = max of the 2 x 2 window x[q, 2i + dy, 2j + dx]; arg = dy*2 + dx of the first
 * maximum (order (0,0), (0,1), (1,0), (1,1); strict >). x [Q,H,W], out, arg [Q,Ho,Wo];
 * n = Q*Ho*Wo */
__kernel void maxpool2d_fwd(__global const float *x, long x_off, __global float *out,
                            long out_off, __global float *arg, long arg_off, int H, int W,
                            int Ho, int Wo, int n)
{
    const int i = get_global_id(0);
    if (i >= n) return;
    const int t = i / Wo, j = i - t * Wo, q = t / Ho, oi = t - q * Ho;
    __global const float *r0 = x + x_off + (q * H + 2 * oi) * W + 2 * j;
    const float v[4] = {r0[0], r0[1], r0[W], r0[W + 1]};
    float m = v[0];
    int idx = 0;
    for (int u = 1; u < 4; u++)
        if (v[u] > m) {
            m = v[u];
            idx = u;
        }
    out[out_off + i] = m;
    arg[arg_off + i] = (float)idx;
}

/* gx[q, y, x] += gout[q, y/2, x/2] if (y%2)*2 + x%2 == arg[q, y/2, x/2] (inside the pooled
 * area); gx [Q,H,W], gout, arg [Q,Ho,Wo]; n = Q*H*W */
__kernel void maxpool2d_bwd(__global const float *g, long g_off, __global const float *arg,
                            long arg_off, __global float *gx, long gx_off, int H, int W,
                            int Ho, int Wo, int n)
{
    const int i = get_global_id(0);
    if (i >= n) return;
    const int t = i / W, xx = i - t * W, q = t / H, y = t - q * H;
    const int oy = y >> 1, ox = xx >> 1;
    if (oy >= Ho || ox >= Wo) return;
    const int o = (q * Ho + oy) * Wo + ox;
    if ((int)arg[arg_off + o] == ((y & 1) << 1) + (xx & 1)) gx[gx_off + i] += g[g_off + o];
}

/* ---- instance_norm ---------------------------------------------------------------------- */

/* The instance_norm and inorm_pool_relu kernels index within a plane (and within [B, plane]
 * for the channel sums) with 32-bit ints; the host refuses planes that would not fit (conv.c).
 * A group's items walk flat indices l, l + W, ... as (row, column) pairs of a [.., n] space
 * without a division per step: */
typedef struct conv_walk {
    int r, c;   /* the current (row, column)               */
    int dr, dc; /* one step of W items: W / n, W mod n      */
    int n;      /* row length                               */
} conv_walk;

conv_walk conv_walk_start(int f, int W, int n)
{
    conv_walk w;
    w.r = f / n;
    w.c = f - w.r * n;
    w.dr = W / n;
    w.dc = W - w.dr * n;
    w.n = n;
    return w;
}

void conv_walk_next(conv_walk *w)
{
    w->r += w->dr;
    w->c += w->dc;
    if (w->c >= w->n) {
        w->c -= w->n;
        w->r++;
    }
}

/* 1 / sqrt(v + eps) for the variance pair v = (hi, lo), rounded about once (the reference
 * rounds a double result once): r0 = 1/sqrt(s) of the float sum s = v + eps, then one
 * Newton step r0 + r0 * (1 - (s + s_lo) * r0^2) / 2 with the residual from fma and the exact
 * square of r0 (mcl_two_prod), so the plain float's 2-3 roundings do not add up. */
float in_rstd(float2 v, float eps)
{
    const float2 s = mcl_two_sum(v.x, eps);
    const float sl = s.y + v.y;
    const float r0 = 1.0f / sqrt(s.x);
    if (!isfinite(r0) || r0 == 0.0f) return r0;
    const float2 p = mcl_two_prod(r0, r0);                         /* r0^2 exactly */
    const float e = (fma(-s.x, p.x, 1.0f) - s.x * p.y) - sl * p.x; /* 1 - s r0^2 */
    return r0 + r0 * (0.5f * e);
}

/* Statistics of one plane of N values x, by the whole group (buf: W float4):
 *   mean = (1/N) sum_j x[j] (returned as the pair mu + mu_lo);  var = (1/N) sum_j (x[j] - mean)^2
 *   *rs = 1 / sqrt(var + eps) */
float2 in_stats(__global const float *x, long N, float eps, __local float4 *buf, float *rs)
{
    const long W = get_local_size(0), l = get_local_id(0);
    const float nf = (float)N;
    /* mean, as the pair mu + mu_lo */
    float2 acc = (float2)(0.0f, 0.0f);
    for (long j = l; j < N; j += W) acc = mcl_acc_add_pair(acc, (float2)(x[j], 0.0f));
    const float2 mu = mcl_acc_div(mcl_group_sum2((float4)(acc, 0.0f, 0.0f), buf).xy, nf);

    /* biased variance from the deviations d = x - mean, each as a pair (dh, dl) so that
     * d^2 = dh^2 + 2 dh dl keeps about twice float precision, like the reference's double */
    acc = (float2)(0.0f, 0.0f);
    for (long j = l; j < N; j += W) {
        float2 d = mcl_two_sum(x[j], -mu.x);
        d.y -= mu.y;
        float2 q = mcl_two_prod(d.x, d.x);
        const float t = 2.0f * d.x * d.y;
        q.y += t;
        acc = mcl_acc_add_pair(acc, q);
    }
    const float2 v = mcl_group_sum2((float4)(acc, 0.0f, 0.0f), buf).xy;
    *rs = in_rstd(mcl_acc_div(v, nf), eps);
    return mu;
}

/* the normalized value (x - mean) * rstd * gamma + beta, mean as the pair mu */
float in_affine(float x, float2 mu, float rs, float gm, float bt)
{
    const float d = (x - mu.x) - mu.y;
    const float xhat = d * rs;
    const float t = xhat * gm;
    return t + bt;
}

/* The gradient of the normalized value n at element j of a plane: gout, or with relu = 1
 * (inorm_relu) 0 + (y > 0 ? gout : 0), relu's gate from the saved output y (y > 0 exactly
 * where n > 0). g, y: the plane's */
float in_grad(__global const float *g, __global const float *y, long j, int relu)
{
    return relu ? 0.0f + (y[j] > 0.0f ? g[j] : 0.0f) : g[j];
}

/* One element of a gradient, as its mode says: 1 adds v, 2 stores 0 + v (a fresh gradient,
 * mcl_ocl_grad_fresh: not read), 0 leaves it (not wanted). The 0 + v of a fresh gradient is
 * the float an add into zeros gives, so both modes give the same bits. */
void in_put(__global float *p, long mode, float v)
{
    if (mode) *p = (mode == 2 ? 0.0f : *p) + v;
}

/* The arguments of instance_norm_fwd and inorm_relu_fwd, each tensor as buffer + element
 * offset: x [B,C,H,W], gamma [C], beta [C], y [B,C,H,W], mean [B*C], rstd [B*C], C, N = H*W,
 * eps. _ARGS declares them, the bare name passes them on. */
#define IN_FWD_ARGS                                                                             \
    __global const float *x, long x_off, __global const float *gamma, long gamma_off,           \
        __global const float *beta, long beta_off, __global float *y, long y_off,               \
        __global float *mean, long mean_off, __global float *rstd, long rstd_off, long C,       \
        long N, float eps
#define IN_FWD                                                                                  \
    x, x_off, gamma, gamma_off, beta, beta_off, y, y_off, mean, mean_off, rstd, rstd_off, C, N, eps

/* forward, one group per plane r = b*C + c of N = H*W values:
 *   mean[r] = (1/N) sum_j x[r, j];  var[r] = (1/N) sum_j (x[r, j] - mean[r])^2  (biased)
 *   rstd[r] = 1 / sqrt(var[r] + eps);  n[r, j] = (x[r, j] - mean[r]) * rstd[r] * gamma[c] + beta[c]
 *   y[r, j] = n[r, j], or with relu = 1 (inorm_relu) n[r, j] > 0 ? n[r, j] : 0
 * buf: W float4 */
void in_fwd_plane(IN_FWD_ARGS, int relu, __local float4 *buf)
{
    const long W = get_local_size(0), l = get_local_id(0), r = get_group_id(0);
    x += x_off + r * N;
    y += y_off + r * N;
    const float gm = gamma[gamma_off + r % C], bt = beta[beta_off + r % C];
    float rs;
    const float2 mu = in_stats(x, N, eps, buf, &rs);
    if (l == 0) {
        mean[mean_off + r] = mu.x;
        rstd[rstd_off + r] = rs;
    }
    for (long j = l; j < N; j += W) {
        const float n = in_affine(x[j], mu, rs, gm, bt);
        y[j] = relu ? (n > 0.0f ? n : 0.0f) : n;
    }
}

__kernel void instance_norm_fwd(IN_FWD_ARGS, __local float4 *buf)
{
    in_fwd_plane(IN_FWD, 0, buf);
}

/* The saved values the instance_norm and inorm_relu backward kernels and helpers read, each
 * tensor as buffer + element offset: mean, rstd [B*C], gout g [B,C,H,W], and the forward's
 * output y [B,C,H,W], read for inorm_relu's gate (in_grad with relu = 1; relu = 0: y is not
 * read, any tensor may stand in). _ARGS declares them, the bare name passes them on. */
#define IN_SAVED_ARGS                                                                           \
    __global const float *mean, long mean_off, __global const float *rstd, long rstd_off,       \
        __global const float *g, long g_off, __global const float *y, long y_off
#define IN_SAVED mean, mean_off, rstd, rstd_off, g, g_off, y, y_off

/* backward, input gradient of plane r, by its group; with gn_j = in_grad (gout, or gated by
 * the relu), dxhat_j = gn_j * gamma[c] and xhat_j = (x[r, j] - mean[r]) * rstd[r] (from the
 * saved mean and rstd):
 *   gx[r, j] += rstd[r] * (dxhat_j - (1/N) sum_k dxhat_k - xhat_j * (1/N) sum_k dxhat_k xhat_k)
 * (x_mode: in_put's, 1 or 2). buf: W float4 */
void in_bwd_dx_plane(__global const float *x, long x_off, __global const float *gamma,
                     long gamma_off, IN_SAVED_ARGS, int relu, __global float *gx, long gx_off,
                     long x_mode, long C, long N, __local float4 *buf, long r)
{
    const long W = get_local_size(0), l = get_local_id(0);
    const float nf = (float)N;
    x += x_off + r * N;
    g += g_off + r * N;
    y += y_off + r * N;
    gx += gx_off + r * N;
    const float gm = gamma[gamma_off + r % C];
    const float m = mean[mean_off + r], rs = rstd[rstd_off + r];

    float2 sd = (float2)(0.0f, 0.0f), sdx = (float2)(0.0f, 0.0f); /* sum dxhat, sum dxhat*xhat */
    for (long j = l; j < N; j += W) {
        const float xhat = (x[j] - m) * rs;
        const float2 dxhat = mcl_two_prod(in_grad(g, y, j, relu), gm); /* exact */
        sd = mcl_acc_add_pair(sd, dxhat);
        const float2 q = mcl_two_prod(dxhat.x, xhat);
        sdx = mcl_acc_add_pair(sdx, (float2)(q.x, q.y + dxhat.y * xhat));
    }
    const float4 sums = mcl_group_sum2((float4)(sd, sdx), buf);
    const float2 mean_d = mcl_acc_div(sums.xy, nf);
    const float mean_dx = mcl_acc_value(mcl_acc_div(sums.zw, nf));

    for (long j = l; j < N; j += W) {
        const float xhat = (x[j] - m) * rs;
        const float2 dxhat = mcl_two_prod(in_grad(g, y, j, relu), gm);
        float t = (dxhat.x - mean_d.x) + (dxhat.y - mean_d.y); /* dxhat - mean_d */
        const float u = xhat * mean_dx;
        t = t - u;
        const float dx = rs * t;
        in_put(gx + j, x_mode, dx);
    }
}

/* backward, input gradient, one group per plane r (in_bwd_dx_plane without the relu) */
__kernel void instance_norm_bwd_dx(__global const float *x, long x_off,
                                   __global const float *gamma, long gamma_off,
                                   __global const float *mean, long mean_off,
                                   __global const float *rstd, long rstd_off,
                                   __global const float *g, long g_off, __global float *gx,
                                   long gx_off, long C, long N, __local float4 *buf)
{
    in_bwd_dx_plane(x, x_off, gamma, gamma_off, mean, mean_off, rstd, rstd_off, g, g_off, g, g_off,
                    0, gx, gx_off, 1, C, N, buf, get_group_id(0));
}

/* backward, gamma and beta gradients of channel c (B planes r = b*C + c), by its group; with
 * gn = in_grad (gout, or gated by the relu):
 *   ggamma[c] += sum_b sum_j gn[r, j] * xhat[r, j]      (want_gamma: in_put's mode)
 *   gbeta[c]  += sum_b sum_j gn[r, j]                   (want_beta: in_put's mode)
 * item l takes the flat indices (b, j) = l, l+W, ... of [B, N]; buf: W float4.
 * The two updates are separate statements, so they are right even if both are one tensor. */
void in_bwd_gb_channel(__global const float *x, long x_off, IN_SAVED_ARGS, int relu,
                       __global float *ggamma, long ggamma_off, __global float *gbeta,
                       long gbeta_off, int B, int C, int N, long want_gamma, long want_beta,
                       __local float4 *buf, int c)
{
    const int W = get_local_size(0), l = get_local_id(0);
    float2 ag = (float2)(0.0f, 0.0f), ab = (float2)(0.0f, 0.0f);
    for (conv_walk w = conv_walk_start(l, W, N); w.r < B; conv_walk_next(&w)) {
        const int r = w.r * C + c;
        const long e = (long)r * N + w.c; /* over the whole batch: 64-bit */
        const float xhat = (x[x_off + e] - mean[mean_off + r]) * rstd[rstd_off + r];
        const float gr = in_grad(g + g_off, y + y_off, e, relu);
        ag = mcl_acc_add_pair(ag, mcl_two_prod(gr, xhat));
        ab = mcl_acc_add_pair(ab, (float2)(gr, 0.0f));
    }
    const float4 s = mcl_group_sum2((float4)(ag, ab), buf);
    if (l == 0) {
        in_put(ggamma + ggamma_off + c, want_gamma, mcl_acc_value(s.xy));
        in_put(gbeta + gbeta_off + c, want_beta, mcl_acc_value(s.zw));
    }
}

/* backward, gamma and beta gradients, one group per channel c (in_bwd_gb_channel without the
 * relu; the want flags 0 or 1) */
__kernel void instance_norm_bwd_gb(__global const float *x, long x_off,
                                   __global const float *mean, long mean_off,
                                   __global const float *rstd, long rstd_off,
                                   __global const float *g, long g_off, __global float *ggamma,
                                   long ggamma_off, __global float *gbeta, long gbeta_off, int B,
                                   int C, int N, long want_gamma, long want_beta,
                                   __local float4 *buf)
{
    in_bwd_gb_channel(x, x_off, mean, mean_off, rstd, rstd_off, g, g_off, g, g_off, 0, ggamma,
                      ggamma_off, gbeta, gbeta_off, B, C, N, want_gamma, want_beta, buf,
                      get_group_id(0));
}

/* ---- inorm_relu: instance_norm -> relu (src/ref/inorm.c) -------------------------------- */

/* forward, one group per plane: instance_norm_fwd's values through the relu (in_fwd_plane) */
__kernel void inorm_relu_fwd(IN_FWD_ARGS, __local float4 *buf)
{
    in_fwd_plane(IN_FWD, 1, buf);
}

/* backward, every gradient, groups first, first + 1, ...: group p < B·C is plane p's input
 * gradient (in_bwd_dx_plane with the relu's gate), group B·C + c channel c's gamma/beta
 * gradients (in_bwd_gb_channel, gated). The host launches both parts at once when they take
 * the same group size, else each part alone (first = 0: the planes, first = B·C: the
 * channels), so each part sums the same way either way. A group takes one branch as a whole
 * (its barriers stay uniform). x_mode, want_gamma, want_beta: in_put's modes. buf: W float4 */
__kernel void inorm_relu_bwd(__global const float *x, long x_off, __global const float *gamma,
                             long gamma_off, IN_SAVED_ARGS, __global float *gx, long gx_off,
                             long x_mode, __global float *ggamma, long ggamma_off,
                             __global float *gbeta, long gbeta_off, int B, int C, int N,
                             long want_gamma, long want_beta, long first, __local float4 *buf)
{
    const long grp = first + (long)get_group_id(0), planes = (long)B * C;
    if (grp < planes)
        in_bwd_dx_plane(x, x_off, gamma, gamma_off, IN_SAVED, 1, gx, gx_off, x_mode, C, N, buf,
                        grp);
    else
        in_bwd_gb_channel(x, x_off, IN_SAVED, 1, ggamma, ggamma_off, gbeta, gbeta_off, B, C, N,
                          want_gamma, want_beta, buf, (int)(grp - planes));
}

/* ---- inorm_pool_relu: instance_norm -> maxpool2d -> relu (src/ref/conv.c) ---------------- */

/* The windows of plane r, by its group: one group per plane r = b*C + c of N = H*W values
 * (Ho = H/2, Wo = W/2):
 *   mean[r], rstd[r] as instance_norm_fwd over all N values;  n = in_affine(x)
 *   z = n, or with add = 1 (inorm_add_pool_relu) n + s[r, j] (float add; s: the skip)
 *   arg[r, i, j] = dy*2 + dx of the first maximum of z[r, 2i + dy, 2j + dx] (strict >)
 *   y[r, i, j]   = max(z at the argmax, 0)
 * and with the output's dropout (p > 0; dropout.cl's key and segments, seg = n for one):
 *   y[e] = keep_e ? y[e] * scale : 0   at the flat index e = r·Ho·Wo + i·Wo + j of y
 * x and s [B,C,H,W] (s not read when add = 0: any tensor may stand in), y and arg
 * [B,C,Ho,Wo]; item l takes the windows l, l + W, ...; buf: W float4 */
void ipr_fwd_plane(__global const float *x, long x_off, __global const float *gamma,
                   long gamma_off, __global const float *beta, long beta_off,
                   __global const float *s, long s_off, int add, __global float *y, long y_off,
                   __global float *mean, long mean_off, __global float *rstd, long rstd_off,
                   __global float *arg, long arg_off, int C, int H, int Wd, float eps, float p,
                   float scale, ulong seed, ulong stream, ulong counter, long seg, ulong step,
                   __local float4 *buf)
{
    const int W = get_local_size(0), l = get_local_id(0), r = get_group_id(0);
    const int Ho = H / 2, Wo = Wd / 2, P = Ho * Wo;
    x += x_off + (long)r * H * Wd;
    s += s_off + (long)r * H * Wd;
    y += y_off + (long)r * P;
    arg += arg_off + (long)r * P;
    const float gm = gamma[gamma_off + r % C], bt = beta[beta_off + r % C];
    float rs;
    const float2 mu = in_stats(x, H * Wd, eps, buf, &rs);
    if (l == 0) {
        mean[mean_off + r] = mu.x;
        rstd[rstd_off + r] = rs;
    }
    int o = l;
    for (conv_walk w = conv_walk_start(l, W, Wo); o < P; o += W, conv_walk_next(&w)) {
        const int q = 2 * w.r * Wd + 2 * w.c; /* window (w.r, w.c) = o: its first pixel */
        float m = 0.0f;
        int idx = 0;
        for (int u = 0; u < 4; u++) {
            const int e = q + (u >> 1) * Wd + (u & 1);
            float z = in_affine(x[e], mu, rs, gm, bt);
            if (add) z = z + s[e];
            if (u == 0 || z > m) {
                m = z;
                idx = u;
            }
        }
        float yo = m > 0.0f ? m : 0.0f;
        if (p != 0.0f) { /* dropout_fwd's mask and scale at the flat index of y */
            const long e = (long)r * P + o, sg = e / seg;
            const int keep =
                mcl_rng_uniform(seed, stream + (ulong)sg * step, counter + (ulong)(e - sg * seg)) >= p;
            yo = keep ? yo * scale : 0.0f;
        }
        y[o] = yo;
        arg[o] = (float)idx;
    }
}

/* inorm_pool_relu forward (ipr_fwd_plane without the skip) */
__kernel void inorm_pool_relu_fwd(__global const float *x, long x_off,
                                  __global const float *gamma, long gamma_off,
                                  __global const float *beta, long beta_off, __global float *y,
                                  long y_off, __global float *mean, long mean_off,
                                  __global float *rstd, long rstd_off, __global float *arg,
                                  long arg_off, int C, int H, int Wd, float eps, float p,
                                  float scale, ulong seed, ulong stream, ulong counter, long seg,
                                  ulong step, __local float4 *buf)
{
    ipr_fwd_plane(x, x_off, gamma, gamma_off, beta, beta_off, x, x_off, 0, y, y_off, mean,
                  mean_off, rstd, rstd_off, arg, arg_off, C, H, Wd, eps, p, scale, seed, stream,
                  counter, seg, step, buf);
}

/* inorm_add_pool_relu forward: ipr_fwd_plane with the skip s [B,C,H,W] added, no dropout */
__kernel void inorm_add_pool_relu_fwd(__global const float *x, long x_off,
                                      __global const float *gamma, long gamma_off,
                                      __global const float *beta, long beta_off,
                                      __global const float *s, long s_off, __global float *y,
                                      long y_off, __global float *mean, long mean_off,
                                      __global float *rstd, long rstd_off, __global float *arg,
                                      long arg_off, int C, int H, int Wd, float eps,
                                      __local float4 *buf)
{
    ipr_fwd_plane(x, x_off, gamma, gamma_off, beta, beta_off, s, s_off, 1, y, y_off, mean,
                  mean_off, rstd, rstd_off, arg, arg_off, C, H, Wd, eps, 0.0f, 1.0f, 0, 0, 0, 1,
                  0, buf);
}

/* The parameters the inorm_pool_relu backward kernels and helpers share, each tensor as buffer +
 * element offset: the saved forward outputs mean, rstd [B*C], y, arg [B,C,H/2,W/2] and gout g
 * [B,C,H/2,W/2], and gs, the forward's dropout scale (1 without: a window's gradient is
 * y > 0 ? g · gs : 0, where y > 0 says both that the relu passed and that the mask kept);
 * then the gamma/beta gradients [C], the sizes and the two want flags. _ARGS declares them,
 * the bare name passes them on. */
#define IPR_SAVED_ARGS                                                                          \
    __global const float *mean, long mean_off, __global const float *rstd, long rstd_off,       \
        __global const float *y, long y_off, __global const float *arg, long arg_off,           \
        __global const float *g, long g_off, float gs
#define IPR_SAVED mean, mean_off, rstd, rstd_off, y, y_off, arg, arg_off, g, g_off, gs
#define IPR_GB_ARGS                                                                             \
    __global float *ggamma, long ggamma_off, __global float *gbeta, long gbeta_off, int B,      \
        int C, int H, int Wd, long want_gamma, long want_beta
#define IPR_GB ggamma, ggamma_off, gbeta, gbeta_off, B, C, H, Wd, want_gamma, want_beta

/* The gradient of n at pixel (u, v) of a plane: gout · gs of its window where the pixel is
 * the window's argmax and the window's y > 0, else 0 (also outside the pooled area).
 * g, y, arg: the plane's [Ho,Wo] */
float ipr_grad(__global const float *g, __global const float *y, __global const float *arg,
               float gs, int u, int v, int Ho, int Wo)
{
    const int i = u >> 1, j = v >> 1;
    if (i >= Ho || j >= Wo) return 0.0f;
    const int o = i * Wo + j;
    return ((int)arg[o] == ((u & 1) << 1) + (v & 1) && y[o] > 0.0f) ? g[o] * gs : 0.0f;
}

/* backward, input gradients of plane r, by its group: instance_norm_bwd_dx with the gradient
 * of n (of z with the skip) rebuilt from gout (ipr_grad); its sums run over the windows only
 * (the other pixels add 0). x_mode: in_put's mode of gx (0: not wanted; the sums are taken
 * anyway: with them under `if (x_mode)`, PoCL 3.1 miscompiled inorm_add_pool_relu_bwd, whose
 * channel groups then ran their l == 0 update on every item); s_mode: of gsk, the skip's
 * gradient [B,C,H,W] (inorm_add_pool_relu), which gets 0 + ipr_grad at every pixel (0: no
 * skip; gsk not written, any tensor may stand in). Each item writes gx[j] before gsk[j], so
 * the two may be one tensor. buf: W float4 */
void inorm_pool_relu_bwd_dx_plane(__global const float *x, long x_off,
                                   __global const float *gamma, long gamma_off, IPR_SAVED_ARGS,
                                   __global float *gx, long gx_off, long x_mode,
                                   __global float *gsk, long gsk_off, long s_mode, int C, int H,
                                   int Wd, __local float4 *buf, int W, int l, int r)
{
    const int Ho = H / 2, Wo = Wd / 2, P = Ho * Wo, N = H * Wd;
    const float nf = (float)N;
    x += x_off + (long)r * N;
    gx += gx_off + (long)r * N;
    gsk += gsk_off + (long)r * N;
    y += y_off + (long)r * P;
    arg += arg_off + (long)r * P;
    g += g_off + (long)r * P;
    const float gm = gamma[gamma_off + r % C];
    const float m = mean[mean_off + r], rs = rstd[rstd_off + r];

    float2 sd = (float2)(0.0f, 0.0f), sdx = (float2)(0.0f, 0.0f); /* sum dxhat, sum dxhat*xhat */
    int o = l;
    for (conv_walk w = conv_walk_start(l, W, Wo); o < P; o += W, conv_walk_next(&w)) {
        const int t = (int)arg[o];
        const float gp = y[o] > 0.0f ? g[o] * gs : 0.0f;
        const float xhat = (x[(2 * w.r + (t >> 1)) * Wd + 2 * w.c + (t & 1)] - m) * rs;
        const float2 dxhat = mcl_two_prod(gp, gm); /* exact */
        sd = mcl_acc_add_pair(sd, dxhat);
        const float2 q = mcl_two_prod(dxhat.x, xhat);
        sdx = mcl_acc_add_pair(sdx, (float2)(q.x, q.y + dxhat.y * xhat));
    }
    const float4 sums = mcl_group_sum2((float4)(sd, sdx), buf);
    const float2 mean_d = mcl_acc_div(sums.xy, nf);
    const float mean_dx = mcl_acc_value(mcl_acc_div(sums.zw, nf));

    int j = l;
    for (conv_walk w = conv_walk_start(l, W, Wd); j < N; j += W, conv_walk_next(&w)) {
        const float gz = ipr_grad(g, y, arg, gs, w.r, w.c, Ho, Wo);
        const float xhat = (x[j] - m) * rs;
        const float2 dxhat = mcl_two_prod(gz, gm);
        float t = (dxhat.x - mean_d.x) + (dxhat.y - mean_d.y); /* dxhat - mean_d */
        const float u = xhat * mean_dx;
        t = t - u;
        const float dx = rs * t;
        in_put(gx + j, x_mode, dx);
        in_put(gsk + j, s_mode, 0.0f + gz);
    }
}

__kernel void inorm_pool_relu_bwd_dx(__global const float *x, long x_off,
                                     __global const float *gamma, long gamma_off, IPR_SAVED_ARGS,
                                     __global float *gx, long gx_off, int C, int H, int Wd,
                                     __local float4 *buf)
{
    inorm_pool_relu_bwd_dx_plane(x, x_off, gamma, gamma_off, IPR_SAVED, gx, gx_off, 1, gx, gx_off,
                                 0, C, H, Wd, buf, get_local_size(0), get_local_id(0),
                                 get_group_id(0));
}

/* backward, gamma and beta gradients, one group per channel c (B planes r = b*C + c), over the
 * windows: with gp = (y > 0 ? gout · gs : 0) and xhat at the window's argmax,
 *   ggamma[c] += sum_b sum_o gp[r, o] * xhat[r, o]      (want_gamma: in_put's mode)
 *   gbeta[c]  += sum_b sum_o gp[r, o]                   (want_beta: in_put's mode)
 * item l takes the flat indices (b, o) = l, l+W, ... of [B, Ho*Wo]; buf: W float4 */
void inorm_pool_relu_bwd_gb_channel(__global const float *x, long x_off, IPR_SAVED_ARGS,
                                     IPR_GB_ARGS, __local float4 *buf, int W, int l, int c)
{
    const int Wo = Wd / 2, P = (H / 2) * Wo;
    float2 ag = (float2)(0.0f, 0.0f), ab = (float2)(0.0f, 0.0f);
    for (conv_walk w = conv_walk_start(l, W, P); w.r < B; conv_walk_next(&w)) {
        const int r = w.r * C + c, o = w.c, oi = o / Wo, oj = o - oi * Wo;
        const long e = (long)r * P + o; /* over the whole batch: 64-bit */
        const int t = (int)arg[arg_off + e];
        const float xv = x[x_off + (long)r * H * Wd + (2 * oi + (t >> 1)) * Wd + 2 * oj + (t & 1)];
        const float xhat = (xv - mean[mean_off + r]) * rstd[rstd_off + r];
        const float gp = y[y_off + e] > 0.0f ? g[g_off + e] * gs : 0.0f;
        ag = mcl_acc_add_pair(ag, mcl_two_prod(gp, xhat));
        ab = mcl_acc_add_pair(ab, (float2)(gp, 0.0f));
    }
    const float4 s = mcl_group_sum2((float4)(ag, ab), buf);
    if (l == 0) {
        in_put(ggamma + ggamma_off + c, want_gamma, mcl_acc_value(s.xy));
        in_put(gbeta + gbeta_off + c, want_beta, mcl_acc_value(s.zw));
    }
}

__kernel void inorm_pool_relu_bwd_gb(__global const float *x, long x_off, IPR_SAVED_ARGS,
                                     IPR_GB_ARGS, __local float4 *buf)
{
    inorm_pool_relu_bwd_gb_channel(x, x_off, IPR_SAVED, IPR_GB, buf, get_local_size(0),
                                   get_local_id(0), get_group_id(0));
}

/* backward, every gradient in one launch (the host's choice when both kernels would take the
 * same group size): groups 0 .. B·C-1 are inorm_pool_relu_bwd_dx's planes, groups B·C ..
 * B·C+C-1 inorm_pool_relu_bwd_gb's channels; the same operations, so the same bits. A group
 * takes one branch as a whole (its barriers stay uniform). */
__kernel void inorm_pool_relu_bwd_all(__global const float *x, long x_off,
                                      __global const float *gamma, long gamma_off, IPR_SAVED_ARGS,
                                      __global float *gx, long gx_off, IPR_GB_ARGS,
                                      __local float4 *buf)
{
    const int W = get_local_size(0), l = get_local_id(0), grp = get_group_id(0);
    if (grp < B * C)
        inorm_pool_relu_bwd_dx_plane(x, x_off, gamma, gamma_off, IPR_SAVED, gx, gx_off, 1, gx,
                                     gx_off, 0, C, H, Wd, buf, W, l, grp);
    else
        inorm_pool_relu_bwd_gb_channel(x, x_off, IPR_SAVED, IPR_GB, buf, W, l, grp - B * C);
}

/* ---- inorm_add_pool_relu: instance_norm -> + skip -> relu -> maxpool2d (src/ref/inorm.c) -- */

/* backward, every gradient, groups first, first + 1, ...: group p < B·C is plane p's input
 * gradients (inorm_pool_relu_bwd_dx_plane: gx, and gsk = the skip's, 0 + the window's
 * gradient at its argmax pixel, 0 at every other pixel), group B·C + c channel c's gamma/beta
 * gradients (inorm_pool_relu_bwd_gb_channel), each with gs = 1 (no dropout): the same sums as
 * inorm_pool_relu's, on the argmax of z = n + s. As inorm_relu_bwd, the host launches both
 * parts at once when they take the same group size, else each part alone. x_mode, s_mode,
 * want_gamma, want_beta: in_put's modes. buf: W float4 */
__kernel void inorm_add_pool_relu_bwd(__global const float *x, long x_off,
                                      __global const float *gamma, long gamma_off, IPR_SAVED_ARGS,
                                      __global float *gx, long gx_off, long x_mode,
                                      __global float *gsk, long gsk_off, long s_mode, IPR_GB_ARGS,
                                      long first, __local float4 *buf)
{
    const int W = get_local_size(0), l = get_local_id(0);
    const long grp = first + (long)get_group_id(0), planes = (long)B * C;
    if (grp < planes)
        inorm_pool_relu_bwd_dx_plane(x, x_off, gamma, gamma_off, IPR_SAVED, gx, gx_off, x_mode,
                                     gsk, gsk_off, s_mode, C, H, Wd, buf, W, l, (int)grp);
    else
        inorm_pool_relu_bwd_gb_channel(x, x_off, IPR_SAVED, IPR_GB, buf, W, l, (int)(grp - planes));
}
