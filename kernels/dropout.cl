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

/* ---- bias_dropout_relu: out = dropout(relu(x + b));  x, out [R, N], b [N] ----
 * t = x + b rounded (bias_add_fwd's), then dropout_fwd's relu-first expression at the flat
 * index i = r * N + j. Backward: d_i = keep_i && t_i > 0 ? 0 + gout_i * scale : 0 (t
 * recomputed: dropout_bwd's relu terms into a zeroed gradient), gx = d or gx += d, and
 * gb[j] += the column sums of d in bias_add_bwd_one's chunks, pairs and order
 * (elementwise.cl), so the same bits as bias_add's backward on d, in one launch. */

/* forward: item i is the flat element i (n = R * N) */
__kernel void bias_dropout_relu_fwd(__global const float *x, long x_off, __global const float *b,
                                    long b_off, __global float *out, long out_off, float p,
                                    float scale, ulong seed, ulong stream, ulong counter, long N,
                                    long n)
{
    long i = get_global_id(0);
    if (i >= n) return;
    const float t = x[x_off + i] + b[b_off + i % N];
    const float r = t > 0.0f ? t : 0.0f;
    if (p == 0.0f) {
        out[out_off + i] = r;
        return;
    }
    const int keep = mcl_rng_uniform(seed, stream, counter + (ulong)i) >= p;
    out[out_off + i] = keep ? r * scale : 0.0f;
}

/* d_i of element i = r * N + j from x_i, b_j and gout_i (relu == 0: bias_add_dropout's
 * d_i = keep_i ? 0 + gout_i * scale : 0, x and b unused) */
float bias_dropout_relu_d(float x, float b, float g, float p, float scale, ulong seed,
                          ulong stream, ulong counter, long i, int relu)
{
    if (relu && !(x + b > 0.0f)) return 0.0f;
    if (p == 0.0f) return 0.0f + g;
    return mcl_rng_uniform(seed, stream, counter + (ulong)i) >= p ? 0.0f + g * scale : 0.0f;
}

/* d of one element for elementwise.cl's BIAS_XBG_ROWS4/1, with the kernel's mask arguments */
#define DROPOUT_D_OF(x, b, g, e) \
    bias_dropout_relu_d(x, b, g, p, scale, seed, stream, counter, e, relu)

/* backward: item q does the columns j = 4q .. 4q+3 over every chunk of `rows` rows (as
 * bias_add_bwd_one, on d computed on the fly); gx_mode 1: gx = d, 2: gx += d, 0: none;
 * gb stored (accumulate == 0) or added to; gb_mode 0: no gb; relu 0: bias_add_dropout's d.
 * n = ceil(N / 4) items. */
__kernel void bias_dropout_relu_bwd(__global const float *x, long x_off, __global const float *b,
                                    long b_off, __global const float *g, long g_off,
                                    __global float *gb, long gb_off, int accumulate, int gb_mode,
                                    __global float *gx, long gx_off, int gx_mode, int relu,
                                    float p, float scale, ulong seed, ulong stream, ulong counter, long R,
                                    long N, long rows, long n)
{
    long q = get_global_id(0);
    if (q >= n) return;
    const long j0 = 4 * q;
    const long w = min(4L, N - j0);
    __global const float *xc = x + x_off + j0;
    __global const float *gc = g + g_off + j0;
    __global const float *bc = b + b_off + j0;
    __global float *oc = gx + gx_off + j0;
    float2 acc[4] = {(float2)(0.0f), (float2)(0.0f), (float2)(0.0f), (float2)(0.0f)};
    for (long r0 = 0; r0 < R; r0 += rows) {
        const long r1 = min(r0 + rows, R);
        if (w == 4) {
            const float4 b4 = vload4(0, bc);
            float4 hi = (float4)(0.0f), lo = (float4)(0.0f);
            BIAS_XBG_ROWS4(DROPOUT_D_OF, r0, r1, hi, lo);
            acc[0] = bias_add_ff_add(acc[0], (float2)(hi.s0, lo.s0));
            acc[1] = bias_add_ff_add(acc[1], (float2)(hi.s1, lo.s1));
            acc[2] = bias_add_ff_add(acc[2], (float2)(hi.s2, lo.s2));
            acc[3] = bias_add_ff_add(acc[3], (float2)(hi.s3, lo.s3));
            continue;
        }
        for (long j = 0; j < w; j++) {
            float2 s = (float2)(0.0f, 0.0f);
            BIAS_XBG_ROWS1(DROPOUT_D_OF, r0, r1, j, s);
            acc[j] = bias_add_ff_add(acc[j], s);
        }
    }
    if (!gb_mode) return;
    for (long j = 0; j < w; j++) {
        const float v = acc[j].x + acc[j].y;
        if (accumulate)
            gb[gb_off + j0 + j] += v;
        else
            gb[gb_off + j0 + j] = v;
    }
}

/* backward in two passes (the host's choice, mcl_ocl_bias_one_launch), pass 1 as
 * elementwise.cl's bias_add_bwd_part on d computed on the fly: part[c, j] = float-float sum of
 * d[r, j] over the rows of chunk c, four columns per item (i = c * Q + q, Q = ceil(N / 4));
 * gx_mode 1: gx = d, 2: gx += d, 0: no gx. Pass 2 is bias_add_bwd_sum. Each chunk's pair is
 * the one bias_dropout_relu_bwd adds for that chunk: the same bits. */
__kernel void bias_dropout_relu_bwd_part(__global const float *x, long x_off,
                                         __global const float *b, long b_off,
                                         __global const float *g, long g_off, float p,
                                         float scale, ulong seed, ulong stream, ulong counter,
                                         int relu, __global float *part, __global float *gx,
                                         long gx_off, int gx_mode, long R, long N, long rows,
                                         long n)
{
    BIAS_XBG_PART(DROPOUT_D_OF);
}

/* ---- bias_add_dropout: out_i = a_i + (keep_i ? t_i * scale : 0), t = x + b rounded;
 * a, x, out [R, N], b [N] (add_dropout_fwd on bias_add_fwd's sum, the same floats). Backward:
 * the host runs add's accumulation for a (when not handed over) and bias_dropout_relu_bwd
 * with relu = 0 for x and b. */
__kernel void bias_add_dropout_fwd(__global const float *a, long a_off, __global const float *x,
                                   long x_off, __global const float *b, long b_off,
                                   __global float *out, long out_off, float p, float scale,
                                   ulong seed, ulong stream, ulong counter, long N, long n)
{
    long i = get_global_id(0);
    if (i >= n) return;
    const float t = x[x_off + i] + b[b_off + i % N];
    float d = t;
    if (p != 0.0f)
        d = mcl_rng_uniform(seed, stream, counter + (ulong)i) >= p ? t * scale : 0.0f;
    out[out_off + i] = a[a_off + i] + d;
}
