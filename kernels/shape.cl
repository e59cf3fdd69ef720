/* shape.cl — concat, slice, transpose, permute, repeat_batch (forward and backward; reshape
 * uses the copy kernels of elementwise.cl).
 *
 * Same equations as src/ref/shape.c. Nothing is computed: forward moves each element to its
 * new position, backward ADDS each gradient element back where its element came from. Every
 * output element comes from exactly one input element, so backward has no collisions: each
 * gradient element is updated by exactly one work-item (deterministic, no atomics).
 * repeat_batch backward is the exception that sums: n gradient copies per element, added in
 * a fixed order by one work-item.
 *
 * Index layout: 1-D launch, one work-item per element of the tensor being WRITTEN (out in
 * forward, gin in backward — except slice backward, one item per gout element, which writes
 * its own element of the slice region), in row-major order, so writes are coalesced; ids >= n
 * return at once. Transpose and permute go through a __local tile when src's and dst's
 * innermost dims differ, so both their reads and their writes are coalesced (permute_tiled).
 *
 * concat/slice view tensors as [outer, rows_x * inner] (outer = product of the dims before
 * the axis x, inner = product after it): the host passes the row lengths.
 */

/* concat, slice and repeat_batch index with 32-bit ints: the host launches them over chunks of
 * whole rows (copies, for repeat_batch) of fewer than 2^31 elements, the tensor offsets moved
 * to the chunk's first row (shape.c, rows_per_launch); one chunk unless a tensor is huge. */

/* ---- concat along an axis: out row o = [a row o (ra elements) | b row o (rb elements)]
 * item i = o * (ra + rb) + j over out */
__kernel void concat_fwd(__global const float *a, long a_off, __global const float *b,
                         long b_off, __global float *out, long out_off, int ra, int rb, int n)
{
    const int i = get_global_id(0);
    if (i >= n) return;
    const int ro = ra + rb, o = i / ro, j = i - o * ro;
    out[out_off + i] = j < ra ? a[a_off + o * ra + j] : b[b_off + o * rb + (j - ra)];
}

/* concat backward for one input (row length rk, starting at column koff of each gout row):
 *   gx[o, j] += gout[o, koff + j],  item i = o * rk + j over gx
 * (koff = 0, rk = ra for a; koff = ra, rk = rb for b) */
__kernel void concat_bwd(__global const float *g, long g_off, __global float *gx, long gx_off,
                         int rk, int ro, int koff, int n)
{
    const int i = get_global_id(0);
    if (i >= n) return;
    const int o = i / rk, j = i - o * rk;
    gx[gx_off + i] += g[g_off + o * ro + koff + j];
}

/* ---- slice along an axis: out[o, j] = a[o, soff + j], soff = start * inner,
 * a rows ri long, out rows ro long; item i = o * ro + j over out */
__kernel void slice_fwd(__global const float *a, long a_off, __global float *out, long out_off,
                        int ri, int ro, int soff, int n)
{
    const int i = get_global_id(0);
    if (i >= n) return;
    const int o = i / ro, j = i - o * ro;
    out[out_off + i] = a[a_off + o * ri + soff + j];
}

/* slice backward: ga[o, soff + j] += gout[o, j]  (the rest of ga is untouched);
 * item i = o * ro + j over gout */
__kernel void slice_bwd(__global const float *g, long g_off, __global float *ga, long ga_off,
                        int ri, int ro, int soff, int n)
{
    const int i = get_global_id(0);
    if (i >= n) return;
    const int o = i / ro, j = i - o * ro;
    ga[ga_off + o * ri + soff + j] += g[g_off + i];
}

/* ---- reshape: row-major order unchanged: out_flat[i] = a_flat[i], backward
 * ga_flat[i] += gout_flat[i]: the flat copies copy_fwd / copy_bwd of elementwise.cl */

/* ---- transpose and permute (src/opencl/shape.c plans both as a 4-D permutation: a transpose
 * of [.., R, C] is the permutation (0, 1, 3, 2) of [1, batch, R, C]).
 *
 * dst is contiguous; each of its elements comes from one element of src. Name the dst dims by
 * role: q holds src's innermost dim (of size > 1: src is contiguous along q), p is dst's
 * innermost (dst is contiguous along p), a and b are the other two. Sizes Nq, Np, Na, Nb; src
 * strides sq, sp, sa, sb and dst strides dq, dp, da, db of one step along each.
 *
 * permute_tiled (q != p): one work-group per T x T tile of (q, p) of one (a, b), through a
 * __local tile of T rows of T + 1 floats (the pad puts a tile column in T different banks).
 * Items read the tile along q (consecutive items, consecutive src addresses), then write it
 * along p (consecutive items, consecutive dst addresses). T = 32 (or the group size, if
 * smaller); item l is column l mod T of rows l / T, l / T + NT / T, ...
 *   dst[oa·da + ob·db + oq·dq + op·dp] (=, or += when acc) src[oa·sa + ob·sb + oq·sq + op·sp]
 * 32-bit indices: the host uses it for tensors below 2^31 elements only. */
__kernel void permute_tiled(__global const float *src, long s_off, __global float *dst,
                            long d_off, int Nq, int Np, int Nb, int sq, int sp, int sa, int sb,
                            int dq, int dp, int da, int db, int T, int acc, __local float *tile)
{
    const int NT = get_local_size(0), l = get_local_id(0), tx = l & (T - 1);
    const int ty = l >> (31 - clz(T)), dy = NT >> (31 - clz(T));
    const int nq = (Nq + T - 1) / T, np = (Np + T - 1) / T, g = get_group_id(0);
    const int t1 = g / np, tp = g - t1 * np, t2 = t1 / nq, tq = t1 - t2 * nq;
    const int oa = t2 / Nb, ob = t2 - oa * Nb, q0 = tq * T, p0 = tp * T;
    src += s_off + oa * sa + ob * sb;
    dst += d_off + oa * da + ob * db;
    for (int y = ty; y < T; y += dy) /* tile row y: p = p0 + y, along q */
        if (q0 + tx < Nq && p0 + y < Np) tile[y * (T + 1) + tx] = src[(q0 + tx) * sq + (p0 + y) * sp];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int y = ty; y < T; y += dy) { /* q = q0 + y, along p */
        if (q0 + y < Nq && p0 + tx < Np) {
            const int d = (q0 + y) * dq + (p0 + tx) * dp;
            const float v = tile[tx * (T + 1) + y];
            dst[d] = acc ? dst[d] + v : v;
        }
    }
}

/* permute_rows (q == p: src and dst contiguous along the same dim, so one item per dst
 * element reads and writes coalesced): dst[i] (=, +=) src[o0·st0 + o1·st1 + o2·st2 + o3·st3],
 * i = ((o0·d1 + o1)·d2 + o2)·d3 + o3. 32-bit indices (tensors below 2^31 elements). */
__kernel void permute_rows(__global const float *src, long s_off, __global float *dst, long d_off,
                           int d1, int d2, int d3, int st0, int st1, int st2, int st3, int acc,
                           int n)
{
    const int i = get_global_id(0);
    if (i >= n) return;
    const int t3 = i / d3, o3 = i - t3 * d3, t2 = t3 / d2, o2 = t3 - t2 * d2;
    const int o0 = t2 / d1, o1 = t2 - o0 * d1;
    const float v = src[s_off + o0 * st0 + o1 * st1 + o2 * st2 + o3 * st3];
    dst[d_off + i] = acc ? dst[d_off + i] + v : v;
}

/* ---- permute (4-D), 64-bit indices (tensors of 2^31 elements or more):
 *   dst[o0, o1, o2, o3] = src[o0 * st0 + o1 * st1 + o2 * st2 + o3 * st3]
 * dst is contiguous with shape (d0, d1, d2, d3); st_d is the src stride of one step along dst
 * dim d. forward: src = a, d_k = a.shape[perm[k]], st_k = a's stride of dim perm[k];
 * backward (permute_bwd, accumulating): src = gout, dst = ga, with the inverse permutation.
 * item i = ((o0 * d1 + o1) * d2 + o2) * d3 + o3 over dst. */
__kernel void permute_fwd(__global const float *src, long s_off, __global float *dst, long d_off,
                          long d1, long d2, long d3, long st0, long st1, long st2, long st3,
                          long n)
{
    long i = get_global_id(0);
    if (i >= n) return;
    long o3 = i % d3, t = i / d3, o2 = t % d2;
    t /= d2;
    long o1 = t % d1, o0 = t / d1;
    dst[d_off + i] = src[s_off + o0 * st0 + o1 * st1 + o2 * st2 + o3 * st3];
}

__kernel void permute_bwd(__global const float *src, long s_off, __global float *dst, long d_off,
                          long d1, long d2, long d3, long st0, long st1, long st2, long st3,
                          long n)
{
    long i = get_global_id(0);
    if (i >= n) return;
    long o3 = i % d3, t = i / d3, o2 = t % d2;
    t /= d2;
    long o1 = t % d1, o0 = t / d1;
    dst[d_off + i] += src[s_off + o0 * st0 + o1 * st1 + o2 * st2 + o3 * st3];
}

/* ---- repeat_batch: n copies of a along a new leading dim:
 *   out[i, j] = a[j]                       a [N], out [n, N]; item q = i * N + j over out
 * backward (the one shape kernel that sums, so it is not a plain move):
 *   ga[j] += sum_{i < n} gout[i, j]        item j over ga (ids >= N return), i in order,
 *   as a (hi, lo) pair of common.cl */
__kernel void repeat_batch_fwd(__global const float *a, long a_off, __global float *out,
                               long out_off, int N, int total)
{
    const int q = get_global_id(0);
    if (q >= total) return;
    out[out_off + q] = a[a_off + (q - (q / N) * N)];
}

__kernel void repeat_batch_bwd(__global const float *g, long g_off, __global float *ga,
                               long ga_off, long N, long n)
{
    const long j = get_global_id(0);
    if (j >= N) return;
    float2 acc = (float2)(0.0f, 0.0f);
    for (long i = 0; i < n; i++) acc = mcl_acc_add(acc, g[g_off + i * N + j]); /* no division */
    ga[ga_off + j] += mcl_acc_value(acc);
}

/* ---- repeat_batch4 (ops.def): repeat_batch of four tensors in one launch. Tensor k:
 *   out_k[(o * n + i) * inner_k + j] = a_k[o * inner_k + j]   (o < outer, i < n, j < inner_k;
 *                                                              axis 0 is outer = 1)
 * backward: ga_k[o * inner_k + j] += sum_{i < n} gout_k[(o * n + i) * inner_k + j], i in order,
 *   as a (hi, lo) pair of common.cl (repeat_batch_bwd's and repeat_rows_bwd's sums);
 * the items run over the four tensors in turn: item q belongs to the first k with q < e_k
 * (e_k the running totals: of outer * n * inner_k forward, of outer * inner_k backward).
 * The host keeps every total below 2^31 (else it launches repeat_batch's kernels per tensor). */
int repeat4_k(int q, int e0, int e1, int e2)
{
    return q < e0 ? 0 : q < e1 ? 1 : q < e2 ? 2 : 3;
}

__kernel void repeat4_fwd(__global const float *a0, long a0_off, __global const float *a1,
                          long a1_off, __global const float *a2, long a2_off,
                          __global const float *a3, long a3_off, __global float *o0, long o0_off,
                          __global float *o1, long o1_off, __global float *o2, long o2_off,
                          __global float *o3, long o3_off, int in0, int in1, int in2, int in3,
                          int n, int e0, int e1, int e2, int e3)
{
    const int q = get_global_id(0);
    if (q >= e3) return;
    const int k = repeat4_k(q, e0, e1, e2);
    const int base = k == 0 ? 0 : k == 1 ? e0 : k == 2 ? e1 : e2;
    const int inner = k == 0 ? in0 : k == 1 ? in1 : k == 2 ? in2 : in3;
    __global const float *a = k == 0 ? a0 + a0_off : k == 1 ? a1 + a1_off : k == 2 ? a2 + a2_off : a3 + a3_off;
    __global float *out = k == 0 ? o0 + o0_off : k == 1 ? o1 + o1_off : k == 2 ? o2 + o2_off : o3 + o3_off;
    const int p = q - base, r = p / inner, j = p - r * inner, o = r / n;
    out[p] = a[o * inner + j];
}

__kernel void repeat4_bwd(__global const float *g0, long g0_off, __global const float *g1,
                          long g1_off, __global const float *g2, long g2_off,
                          __global const float *g3, long g3_off, __global float *x0, long x0_off,
                          __global float *x1, long x1_off, __global float *x2, long x2_off,
                          __global float *x3, long x3_off, int in0, int in1, int in2, int in3,
                          int n, int e0, int e1, int e2, int e3)
{
    const int q = get_global_id(0);
    if (q >= e3) return;
    const int k = repeat4_k(q, e0, e1, e2);
    const int base = k == 0 ? 0 : k == 1 ? e0 : k == 2 ? e1 : e2;
    const int inner = k == 0 ? in0 : k == 1 ? in1 : k == 2 ? in2 : in3;
    __global const float *g = k == 0 ? g0 + g0_off : k == 1 ? g1 + g1_off : k == 2 ? g2 + g2_off : g3 + g3_off;
    __global float *ga = k == 0 ? x0 + x0_off : k == 1 ? x1 + x1_off : k == 2 ? x2 + x2_off : x3 + x3_off;
    const int p = q - base, o = p / inner, j = p - o * inner, b = o * n * inner + j;
    float2 acc = (float2)(0.0f, 0.0f);
    for (int i = 0; i < n; i++) acc = mcl_acc_add(acc, g[b + i * inner]);
    ga[p] += mcl_acc_value(acc);
}

/* ---- repeat_batch with axis 1 (mcl_repeat_rows): each row's n copies next to it:
 *   out[o, i, j] = a[o, j]                 a [outer, inner], out [outer, n, inner];
 *                                          item q = (o * n + i) * inner + j over out
 * backward:
 *   ga[o, j] += sum_{i < n} gout[o, i, j]  item p = o * inner + j over ga, i in order, as a
 *   (hi, lo) pair of common.cl
 * The host launches chunks of whole rows o (n * inner elements of out each, fewer than 2^31
 * per chunk), offsets moved to the chunk's first row. */
__kernel void repeat_rows_fwd(__global const float *a, long a_off, __global float *out,
                              long out_off, int inner, int n, int total)
{
    const int q = get_global_id(0);
    if (q >= total) return;
    const int r = q / inner, j = q - r * inner, o = r / n;
    out[out_off + q] = a[a_off + o * inner + j];
}

__kernel void repeat_rows_bwd(__global const float *g, long g_off, __global float *ga,
                              long ga_off, int inner, int n, int total)
{
    const int p = get_global_id(0);
    if (p >= total) return;
    const int o = p / inner, j = p - o * inner;
    const int base = o * n * inner + j;
    float2 acc = (float2)(0.0f, 0.0f);
    for (int i = 0; i < n; i++) acc = mcl_acc_add(acc, g[g_off + base + i * inner]);
    ga[ga_off + p] += mcl_acc_value(acc);
}
