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

/* Item i = c * N + j of a row-chunk launch (the host's mcl_ocl_launch_row_chunks: bias_add_fwd,
 * bias_add2_fwd, activation.cl's bias_gelu_fwd and bias_gelu_bwd_x): returns its column j; its
 * rows are [*r0, *r1) = [c*rows, min((c+1)*rows, R)) */
long row_chunk_item(long i, long N, long rows, long R, long *r0, long *r1)
{
    const long c = i / N;
    *r0 = c * rows;
    *r1 = min(c * rows + rows, R);
    return i - c * N;
}

/* Item i = c * Q + q of a bias-gradient pass 1 (Q = ceil(N / 4)): returns its first column
 * j0 = 4q (columns j0 .. j0+3, fewer in a last partial quad); *c its chunk, whose rows are
 * [*r0, *r1) = [c*rows, min((c+1)*rows, R)) */
long bias_quad_item(long i, long N, long rows, long R, long *c, long *r0, long *r1)
{
    const long Q = (N + 3) / 4;
    *c = i / Q;
    *r0 = *c * rows;
    *r1 = min(*r0 + rows, R);
    return 4 * (i - *c * Q);
}

/* bias_add: out[r, j] = x[r, j] + b[j]; x, out [R, N], b [N].
 * Item i = c * N + j adds b[j] to column j of the rows [c*rows, (c+1)*rows) (n = chunks * N
 * items): one division per item instead of one per element, and neighbouring items touch
 * neighbouring columns (contiguous loads on a GPU, vector loads on a CPU). */
__kernel void bias_add_fwd(__global const float *x, long x_off, __global const float *b,
                           long b_off, __global float *out, long out_off, long R, long N,
                           long rows, long n)
{
    long i = get_global_id(0);
    if (i >= n) return;
    long r0, r1;
    const long j = row_chunk_item(i, N, rows, R, &r0, &r1);
    const float bj = b[b_off + j];
    for (long r = r0; r < r1; r++) out[out_off + r * N + j] = x[x_off + r * N + j] + bj;
}

/* ---- bias gradient: gb[j] += sum_r gout[r, j] ----
 * The reference sums each column in double over the rows in increasing order and rounds the
 * sum to float once. Without fp64 we carry the sum as an unevaluated pair of floats
 * (hi + lo, "float-float", about 48 significant bits) using error-free transformations, which
 * makes the final float the same as the reference's except in near-ties.
 * Pass 1 (bias_add_bwd_part): sums rows [c*rows, (c+1)*rows) of column j into
 *   part[2*(c*N + j)] (hi) and part[2*(c*N + j) + 1] (lo), four columns per work-item.
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
    const float2 s = mcl_two_sum(acc.x, v.x);
    if (!isfinite(s.x)) return (float2)(s.x, 0.0f);
    const float e = s.y + (acc.y + v.y);
    const float hi = s.x + e; /* FastTwoSum: e is small next to s.x */
    return (float2)(hi, e - (hi - s.x));
}

/* The same for four columns at once: (hi, lo) += (v, 0) lane by lane, with the same
 * operations in the same order as bias_add_ff_add, so every lane gets the same bits. */
void bias_add_ff_add4(float4 *hi, float4 *lo, float4 v)
{
    const float4 s = *hi + v;
    const float4 bv = s - *hi;
    const float4 av = s - bv;
    const float4 e = ((*hi - av) + (v - bv)) + (*lo + 0.0f);
    const float4 h = s + e;
    const float4 l = e - (h - s);
    const int4 fin = isfinite(s);
    *hi = select(s, h, fin);
    *lo = select((float4)(0.0f), l, fin);
}

/* The shared steps of the pass-1 kernels (bias_add_bwd_part, bias_add_bwd_one,
 * bias_add2_bwd_part, activation.cl's bias_gelu_bwd_part), the same operations in the same order in each:
 * one row of a quad: (hi, lo) += v, and xr[0..3] = v (gx_mode 1) or += v (2) */
void bias_part_row4(float4 *hi, float4 *lo, float4 v, __global float *xr, int gx_mode)
{
    bias_add_ff_add4(hi, lo, v);
    if (gx_mode == 1) vstore4(v, 0, xr);
    if (gx_mode == 2) vstore4(vload4(0, xr) + v, 0, xr);
}

/* one row of a lone column: acc += v, and *xr = v (gx_mode 1) or += v (2) */
float2 bias_part_row1(float2 acc, float v, __global float *xr, int gx_mode)
{
    acc = bias_add_ff_add(acc, (float2)(v, 0.0f));
    if (gx_mode == 1) *xr = v;
    if (gx_mode == 2) *xr += v;
    return acc;
}

/* The rows [r0, r1) of a pass-1 sum whose value d[r, j] = VAL(x[r, j], b[j], g[r, j], r*N + j)
 * is computed from an input x, the bias b and gout g (bias_gelu_bwd_part, and dropout.cl's
 * bias_dropout_relu_bwd and bias_dropout_relu_bwd_part, VAL a function-like macro of theirs):
 * BIAS_XBG_ROWS4 for the quad j0 .. j0+3 ((hi, lo) += d lane by lane, gx per gx_mode: as
 * bias_part_row4), BIAS_XBG_ROWS1 for the lone column j (acc += d: bias_part_row1). They use
 * the kernel's xc, gc, oc (x, g, gx at column j0), b4 / bc (the bias), N and gx_mode. */
#define BIAS_XBG_ROWS4(VAL, r0, r1, hi, lo)                                                   \
    for (long r = (r0); r < (r1); r++) {                                                      \
        const float4 x4 = vload4(0, xc + r * N), g4 = vload4(0, gc + r * N);                  \
        const long e = r * N + j0;                                                            \
        const float4 v = (float4)(VAL(x4.s0, b4.s0, g4.s0, e), VAL(x4.s1, b4.s1, g4.s1, e + 1), \
                                  VAL(x4.s2, b4.s2, g4.s2, e + 2), VAL(x4.s3, b4.s3, g4.s3, e + 3)); \
        bias_part_row4(&(hi), &(lo), v, oc + r * N, gx_mode);                                 \
    }
#define BIAS_XBG_ROWS1(VAL, r0, r1, j, acc)                                                   \
    for (long r = (r0); r < (r1); r++)                                                        \
        (acc) = bias_part_row1((acc), VAL(xc[r * N + (j)], bc[(j)], gc[r * N + (j)], r * N + j0 + (j)), \
                               oc + r * N + (j), gx_mode)

/* The whole body of such a pass-1 kernel (bias_gelu_bwd_part, bias_dropout_relu_bwd_part):
 * bias_add_bwd_part's items, layout and sums on d = VAL(x, b, g, e); the kernel's arguments
 * x, x_off, b, b_off, g, g_off, part, gx, gx_off, gx_mode, R, N, rows, n as that kernel's. */
#define BIAS_XBG_PART(VAL)                                                                    \
    long i = get_global_id(0);                                                                \
    if (i >= n) return;                                                                       \
    long c, r0, r1;                                                                           \
    const long j0 = bias_quad_item(i, N, rows, R, &c, &r0, &r1);                              \
    __global const float *xc = x + x_off + j0;                                                \
    __global const float *gc = g + g_off + j0;                                                \
    __global const float *bc = b + b_off + j0;                                                \
    __global float *oc = gx + gx_off + j0;                                                    \
    __global float *pc = part + 2 * (c * N + j0);                                             \
    if (j0 + 4 <= N) {                                                                        \
        const float4 b4 = vload4(0, bc);                                                      \
        float4 hi = (float4)(0.0f), lo = (float4)(0.0f);                                      \
        BIAS_XBG_ROWS4(VAL, r0, r1, hi, lo);                                                  \
        bias_part_put4(pc, hi, lo);                                                           \
        return;                                                                               \
    }                                                                                         \
    for (long j = 0; j0 + j < N; j++) {                                                       \
        float2 acc = (float2)(0.0f, 0.0f);                                                    \
        BIAS_XBG_ROWS1(VAL, r0, r1, j, acc);                                                  \
        bias_part_put1(pc + 2 * j, acc);                                                      \
    }

/* a quad's four (hi, lo) pairs into pc[0..8) */
void bias_part_put4(__global float *pc, float4 hi, float4 lo)
{
    vstore8((float8)(hi.s0, lo.s0, hi.s1, lo.s1, hi.s2, lo.s2, hi.s3, lo.s3), 0, pc);
}

/* a lone column's pair into pc[0..2) */
void bias_part_put1(__global float *pc, float2 acc)
{
    pc[0] = acc.x;
    pc[1] = acc.y;
}

/* pass 2's sum of column j: the chunks' pairs p[2*(c*N + j)], in order c = 0 .. chunks-1,
 * rounded to float once */
float bias_chunks_sum(__global const float *p, long chunks, long N, long j)
{
    float2 acc = (float2)(0.0f, 0.0f);
    for (long c = 0; c < chunks; c++)
        acc = bias_add_ff_add(acc, (float2)(p[2 * (c * N + j)], p[2 * (c * N + j) + 1]));
    return acc.x + acc.y;
}

/* pass 1: part[c, j] = float-float sum of gout[r, j] over the rows r of chunk c.
 * Item i = c * Q + q (Q = ceil(N / 4)) does the columns j = 4q .. 4q+3 of chunk c as one
 * float4 (explicit vectors: the loop carries a dependency chain per column, and four
 * independent ones per item run in SIMD lanes); a last partial quad goes column by column.
 * The same pass also does the gradient of x, which reads the same gout elements:
 * gx_mode 1: gx = gout, 2: gx += gout, 0: no gradient of x (gx unused). */
__kernel void bias_add_bwd_part(__global const float *g, long g_off, __global float *part,
                                __global float *gx, long gx_off, int gx_mode, long R, long N,
                                long rows, long n)
{
    long i = get_global_id(0);
    if (i >= n) return;
    long c, r0, r1;
    const long j0 = bias_quad_item(i, N, rows, R, &c, &r0, &r1);
    __global const float *gc = g + g_off + j0;
    __global float *xc = gx + gx_off + j0;
    __global float *pc = part + 2 * (c * N + j0);
    if (j0 + 4 <= N) {
        float4 hi = (float4)(0.0f), lo = (float4)(0.0f);
        for (long r = r0; r < r1; r++) {
            bias_part_row4(&hi, &lo, vload4(0, gc + r * N), xc + r * N, gx_mode);
        }
        bias_part_put4(pc, hi, lo);
        return;
    }
    for (long j = 0; j0 + j < N; j++) {
        float2 acc = (float2)(0.0f, 0.0f);
        for (long r = r0; r < r1; r++)
            acc = bias_part_row1(acc, gc[r * N + j], xc + r * N + j, gx_mode);
        bias_part_put1(pc + 2 * j, acc);
    }
}

/* pass 2: gb[j] += sum over chunks c (in order) of part[c, j], rounded to float once
 * (gb[j] = that sum when the host found gb fresh: accumulate == 0) */
__kernel void bias_add_bwd_sum(__global const float *part, __global float *gb, long gb_off,
                               long chunks, long N, int accumulate)
{
    long j = get_global_id(0);
    if (j >= N) return;
    const float v = bias_chunks_sum(part, chunks, N, j);
    if (accumulate)
        gb[gb_off + j] += v;
    else
        gb[gb_off + j] = v;
}

/* one pass, for few chunks (the host's choice: mcl_ocl_bias_one_launch): item q does the
 * columns j = 4q .. 4q+3 over every chunk, each chunk's pair as pass 1 computes it (the same
 * operations in the same order), then the pairs added in chunk order and rounded as pass 2
 * does: the same bits as the two passes, in one launch. gx as pass 1 (gx_mode); gb stored
 * (accumulate == 0) or added to. n = ceil(N / 4) items. */
__kernel void bias_add_bwd_one(__global const float *g, long g_off, __global float *gb, long gb_off,
                               int accumulate, __global float *gx, long gx_off, int gx_mode,
                               long R, long N, long rows, long n)
{
    long q = get_global_id(0);
    if (q >= n) return;
    const long j0 = 4 * q;
    const long w = min(4L, N - j0);
    __global const float *gc = g + g_off + j0;
    __global float *xc = gx + gx_off + j0;
    float2 acc[4] = {(float2)(0.0f), (float2)(0.0f), (float2)(0.0f), (float2)(0.0f)};
    for (long r0 = 0; r0 < R; r0 += rows) {
        const long r1 = min(r0 + rows, R);
        if (w == 4) {
            float4 hi = (float4)(0.0f), lo = (float4)(0.0f);
            for (long r = r0; r < r1; r++)
                bias_part_row4(&hi, &lo, vload4(0, gc + r * N), xc + r * N, gx_mode);
            acc[0] = bias_add_ff_add(acc[0], (float2)(hi.s0, lo.s0));
            acc[1] = bias_add_ff_add(acc[1], (float2)(hi.s1, lo.s1));
            acc[2] = bias_add_ff_add(acc[2], (float2)(hi.s2, lo.s2));
            acc[3] = bias_add_ff_add(acc[3], (float2)(hi.s3, lo.s3));
            continue;
        }
        for (long j = 0; j < w; j++) {
            float2 p = (float2)(0.0f, 0.0f);
            for (long r = r0; r < r1; r++)
                p = bias_part_row1(p, gc[r * N + j], xc + r * N + j, gx_mode);
            acc[j] = bias_add_ff_add(acc[j], p);
        }
    }
    for (long j = 0; j < w; j++) {
        const float v = acc[j].x + acc[j].y;
        if (accumulate)
            gb[gb_off + j0 + j] += v;
        else
            gb[gb_off + j0 + j] = v;
    }
}

/* bias_add backward for x: gx += gout, done by bias_add_bwd_part together with the bias
 * gradient when both are wanted, else by the kernel copy_bwd (below) */

/* ---- bias_add2: out0 = x + b0, out1 = x + b1 (b0, b1 [N] broadcast over the R rows) ----
 * forward: items as bias_add_fwd's (column j of a chunk of rows), both outputs at once. */
__kernel void bias_add2_fwd(__global const float *x, long x_off, __global const float *b0,
                            long b0_off, __global const float *b1, long b1_off,
                            __global float *o0, long o0_off, __global float *o1, long o1_off,
                            long R, long N, long rows, long n)
{
    long i = get_global_id(0);
    if (i >= n) return;
    long r0, r1;
    const long j = row_chunk_item(i, N, rows, R, &r0, &r1);
    const float bj0 = b0[b0_off + j], bj1 = b1[b1_off + j];
    for (long r = r0; r < r1; r++) {
        const float v = x[x_off + r * N + j];
        o0[o0_off + r * N + j] = v + bj0;
        o1[o1_off + r * N + j] = v + bj1;
    }
}

/* backward for x alone: gx += g0 + g1 (gx = g0 + g1 when acc == 0: gx fresh); flat items */
__kernel void bias_add2_bwd_x(__global const float *g0, long g0_off, __global const float *g1,
                              long g1_off, __global float *gx, long gx_off, int acc, long n)
{
    long i = get_global_id(0);
    if (i >= n) return;
    const float v = g0[g0_off + i] + g1[g1_off + i];
    if (acc)
        gx[gx_off + i] += v;
    else
        gx[gx_off + i] = v;
}

/* backward with the bias gradients, pass 1: bias_add_bwd_part's sums for g0 into
 * part[0 .. 2*chunks*N) and for g1 into part[2*chunks*N ..), four columns per item, and
 * gx (gx_mode 1: = g0 + g1, 2: += g0 + g1, 0: none) from the same loads. Pass 2 is
 * bias_add2_bwd_sum. */
__kernel void bias_add2_bwd_part(__global const float *g0, long g0_off, __global const float *g1,
                                 long g1_off, __global float *part, __global float *gx,
                                 long gx_off, int gx_mode, long R, long N, long rows, long chunks,
                                 long n)
{
    long i = get_global_id(0);
    if (i >= n) return;
    long c, r0, r1;
    const long j0 = bias_quad_item(i, N, rows, R, &c, &r0, &r1);
    __global const float *ac = g0 + g0_off + j0;
    __global const float *bc = g1 + g1_off + j0;
    __global float *xc = gx + gx_off + j0;
    __global float *pa = part + 2 * (c * N + j0);
    __global float *pb = part + 2 * (chunks * N + c * N + j0);
    if (j0 + 4 <= N) {
        float4 ha = (float4)(0.0f), la = (float4)(0.0f), hb = (float4)(0.0f), lb = (float4)(0.0f);
        for (long r = r0; r < r1; r++) {
            const float4 va = vload4(0, ac + r * N), vb = vload4(0, bc + r * N);
            bias_add_ff_add4(&ha, &la, va);
            bias_add_ff_add4(&hb, &lb, vb);
            if (gx_mode == 1) vstore4(va + vb, 0, xc + r * N);
            if (gx_mode == 2) vstore4(vload4(0, xc + r * N) + (va + vb), 0, xc + r * N);
        }
        bias_part_put4(pa, ha, la);
        bias_part_put4(pb, hb, lb);
        return;
    }
    for (long j = 0; j0 + j < N; j++) {
        float2 acca = (float2)(0.0f, 0.0f), accb = (float2)(0.0f, 0.0f);
        for (long r = r0; r < r1; r++) {
            const float va = ac[r * N + j], vb = bc[r * N + j];
            acca = bias_add_ff_add(acca, (float2)(va, 0.0f));
            accb = bias_add_ff_add(accb, (float2)(vb, 0.0f));
            if (gx_mode == 1) xc[r * N + j] = va + vb;
            if (gx_mode == 2) xc[r * N + j] += va + vb;
        }
        bias_part_put1(pa + 2 * j, acca);
        bias_part_put1(pb + 2 * j, accb);
    }
}

/* pass 2: item j < 2N: gb0[j] (j < N) or gb1[j - N] += the chunks' sums in order (as
 * bias_add_bwd_sum); want0 / want1 = 0: that gradient is not wanted (its buffer a
 * placeholder); acc0 / acc1 = 0: the gradient is fresh, store. */
__kernel void bias_add2_bwd_sum(__global const float *part, __global float *gb0, long gb0_off,
                                __global float *gb1, long gb1_off, long chunks, long N,
                                int want0, int want1, int acc0, int acc1)
{
    long j = get_global_id(0);
    if (j >= 2 * N) return;
    const int second = j >= N;
    if (second ? !want1 : !want0) return;
    if (second) j -= N;
    __global const float *p = part + (second ? 2 * chunks * N : 0);
    const float v = bias_chunks_sum(p, chunks, N, j);
    __global float *gb = second ? gb1 + gb1_off : gb0 + gb0_off;
    if (second ? acc1 : acc0)
        gb[j] += v;
    else
        gb[j] = v;
}

/* copy: out = a (also reshape's forward: the row-major order is unchanged) */
/* fill: p[off + i] = v for i < n. The backend's buffer fills (lazy zeroing, mcl_tensor_fill)
 * use this kernel rather than clEnqueueFillBuffer: one code path on every device, and one that
 * oclgrind can follow (its 21.10 does not mark memory written by clEnqueueFillBuffer as
 * initialised; tests/oclgrind/fill-buffer.c reproduces that). */
__kernel void fill_f32(__global float *p, long off, float v, long n)
{
    long i = get_global_id(0);
    if (i >= n) return;
    p[off + i] = v;
}

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
