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
 * return at once. Reads are gathers (strided for transpose/permute: simple, not tiled).
 *
 * concat/slice view tensors as [outer, rows_x * inner] (outer = product of the dims before
 * the axis x, inner = product after it): the host passes the row lengths.
 */

/* ---- concat along an axis: out row o = [a row o (ra elements) | b row o (rb elements)]
 * item i = o * (ra + rb) + j over out */
__kernel void concat_fwd(__global const float *a, long a_off, __global const float *b,
                         long b_off, __global float *out, long out_off, long ra, long rb, long n)
{
    long i = get_global_id(0);
    if (i >= n) return;
    long ro = ra + rb, o = i / ro, j = i % ro;
    out[out_off + i] = j < ra ? a[a_off + o * ra + j] : b[b_off + o * rb + (j - ra)];
}

/* concat backward for one input (row length rk, starting at column koff of each gout row):
 *   gx[o, j] += gout[o, koff + j],  item i = o * rk + j over gx
 * (koff = 0, rk = ra for a; koff = ra, rk = rb for b) */
__kernel void concat_bwd(__global const float *g, long g_off, __global float *gx, long gx_off,
                         long rk, long ro, long koff, long n)
{
    long i = get_global_id(0);
    if (i >= n) return;
    long o = i / rk, j = i % rk;
    gx[gx_off + i] += g[g_off + o * ro + koff + j];
}

/* ---- slice along an axis: out[o, j] = a[o, soff + j], soff = start * inner,
 * a rows ri long, out rows ro long; item i = o * ro + j over out */
__kernel void slice_fwd(__global const float *a, long a_off, __global float *out, long out_off,
                        long ri, long ro, long soff, long n)
{
    long i = get_global_id(0);
    if (i >= n) return;
    long o = i / ro, j = i % ro;
    out[out_off + i] = a[a_off + o * ri + soff + j];
}

/* slice backward: ga[o, soff + j] += gout[o, j]  (the rest of ga is untouched);
 * item i = o * ro + j over gout */
__kernel void slice_bwd(__global const float *g, long g_off, __global float *ga, long ga_off,
                        long ri, long ro, long soff, long n)
{
    long i = get_global_id(0);
    if (i >= n) return;
    long o = i / ro, j = i % ro;
    ga[ga_off + o * ri + soff + j] += g[g_off + i];
}

/* ---- reshape: row-major order unchanged: out_flat[i] = a_flat[i], backward
 * ga_flat[i] += gout_flat[i]: the flat copies copy_fwd / copy_bwd of elementwise.cl */

/* ---- transpose of the last two dims, batched:
 *   dst[b, c, r] = src[b, r, c]   with src [batch, R, C], dst [batch, C, R]
 * item i = (b * C + c) * R + r over dst.
 * forward: src = a [.., M, N] (R = M, C = N); backward (transpose_bwd, accumulating):
 * src = gout [.., N, M] (R = N, C = M), dst = ga. */
__kernel void transpose_fwd(__global const float *src, long s_off, __global float *dst,
                            long d_off, long R, long C, long n)
{
    long i = get_global_id(0);
    if (i >= n) return;
    long r = i % R, t = i / R, c = t % C, b = t / C;
    dst[d_off + i] = src[s_off + (b * R + r) * C + c];
}

__kernel void transpose_bwd(__global const float *src, long s_off, __global float *dst,
                            long d_off, long R, long C, long n)
{
    long i = get_global_id(0);
    if (i >= n) return;
    long r = i % R, t = i / R, c = t % C, b = t / C;
    dst[d_off + i] += src[s_off + (b * R + r) * C + c];
}

/* ---- permute (4-D): dst[o0, o1, o2, o3] = src[o0 * st0 + o1 * st1 + o2 * st2 + o3 * st3]
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
                               long out_off, long N, long total)
{
    long q = get_global_id(0);
    if (q >= total) return;
    out[out_off + q] = a[a_off + q % N];
}

__kernel void repeat_batch_bwd(__global const float *g, long g_off, __global float *ga,
                               long ga_off, long N, long n)
{
    long j = get_global_id(0);
    if (j >= N) return;
    float2 acc = (float2)(0.0f, 0.0f);
    for (long i = 0; i < n; i++) acc = mcl_acc_add(acc, g[g_off + i * N + j]);
    ga[ga_off + j] += mcl_acc_value(acc);
}
