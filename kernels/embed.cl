/* embed.cl — one_hot (forward only) and embedding (forward, backward).
 *
 * Same equations as src/ref/embed.c. Indices are integers stored in float tensors; a value v
 * selects row floor(v) when 0 <= v < range, anything else (negative, too large, NaN, +-Inf)
 * selects nothing: a zero row forward, no gradient backward.
 *
 * Index layout:
 *   one_hot_fwd, embedding_fwd: one work-item per output element, i = r * width + c.
 *   embedding_bwd: one work-item per (vocabulary block b, column c), i = b * D + c; see there.
 * ids >= n return at once.
 */
#pragma OPENCL FP_CONTRACT OFF

/* Row selected by index value v in a range of n rows, or -1 for none. The reference tests
 * (double)v < (double)n; without fp64 the same test is: v is below 2^63 (so the conversion
 * to long is defined and truncates, i.e. floors, the non-negative v) and floor(v) < n, which
 * for an integer n is equivalent to v < n. NaN fails !(v >= 0). */
long embed_row_index(float v, long n)
{
    if (!(v >= 0.0f) || !(v < 0x1.0p63f)) return -1;
    long k = (long)v;
    return k < n ? k : -1;
}

/* one_hot: out[r, c] = (c == floor(idx[r])) ? 1 : 0, zero row for an index outside
 * [0, depth); idx [R], out [R, depth]; item i = r * depth + c */
__kernel void one_hot_fwd(__global const float *idx, long idx_off, __global float *out,
                          long out_off, long depth, long n)
{
    long i = get_global_id(0);
    if (i >= n) return;
    long r = i / depth, c = i % depth;
    out[out_off + i] = embed_row_index(idx[idx_off + r], depth) == c ? 1.0f : 0.0f;
}

/* embedding: out[r, c] = table[idx[r], c] (zero row for an index outside [0, V));
 * table [V, D], idx [R], out [R, D]; item i = r * D + c */
__kernel void embedding_fwd(__global const float *table, long t_off, __global const float *idx,
                            long idx_off, __global float *out, long out_off, long V, long D,
                            long n)
{
    long i = get_global_id(0);
    if (i >= n) return;
    long r = i / D, c = i % D;
    long k = embed_row_index(idx[idx_off + r], V);
    out[out_off + i] = k >= 0 ? table[t_off + k * D + c] : 0.0f;
}

/* embedding backward: gtable[k, c] += sum over r with idx[r] = k of gout[r, c]
 *
 * Deterministic without atomics: every element gtable[k, c] is owned by exactly one
 * work-item, which adds the gout rows hitting k one by one in increasing r, straight into
 * gtable — the same additions in the same order as the reference, so the same bits.
 * The vocabulary is split into blocks of vblock rows: item i = b * D + c owns column c of
 * rows [b * vblock, min((b + 1) * vblock, V)) and scans all R indices, skipping those outside
 * its block. Cost: (number of blocks) * D * R index tests + R * D additions, with
 * (number of blocks) * D work-items in parallel; the host picks the block count from the
 * device's size (1 block = the reference's column split, V blocks = one item per element).
 * Memory: neighbouring items share b and have neighbouring c, so a hit updates a contiguous
 * run of a gtable row and reads a contiguous run of a gout row; idx[r] is read by all items
 * alike (broadcast). */
__kernel void embedding_bwd(__global const float *idx, long idx_off, __global const float *g,
                            long g_off, __global float *gt, long gt_off, long V, long D, long R,
                            long vblock, long n)
{
    long i = get_global_id(0);
    if (i >= n) return;
    long b = i / D, c = i % D;
    long v0 = b * vblock, v1 = min(v0 + vblock, V);
    for (long r = 0; r < R; r++) {
        long k = embed_row_index(idx[idx_off + r], V);
        if (k >= v0 && k < v1) gt[gt_off + k * D + c] += g[g_off + r * D + c];
    }
}
