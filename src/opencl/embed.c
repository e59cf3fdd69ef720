/* embed.c — OpenCL host glue for one_hot and embedding.
 *
 * Kernels: kernels/embed.cl. Same contract and equations as src/ref/embed.c: an index value
 * v selects row floor(v) when 0 <= v < range, anything else selects nothing (zero row
 * forward, no gradient). The embedding backward is deterministic without atomics and gives
 * the reference's bits: each table element is owned by one work-item that adds the matching
 * gout rows in increasing order (see embed.cl for the cost).
 */
#include <stdio.h>

#include "ocl.h"

/* Work-items per compute unit wanted for the embedding backward: enough to fill a GPU's
 * cores (and hide memory latency) without multiplying the index scans beyond need. */
#define EMBED_ITEMS_PER_CU 512

/* ------------------------------------------------------------------------------------------ */
/* one_hot:  out[r, c] = (c == floor(idx[r])) ? 1 : 0,  0 <= c < depth
 *           (a zero row when idx[r] is negative, >= depth or NaN)
 * idx [..] (R elements) -> out [.., depth]   (depth = p.i[0] = out's last dim)
 * No backward. */
mcl_status mcl_ocl_one_hot_fwd(mcl_backend *be, const mcl_op_args *a)
{
    const mcl_tensor *idx = a->in[0], *out = a->out[0];
    int64_t depth = mcl_ocl_cols(out), n = mcl_tensor_numel(out);
    char what[160], s1[64], s2[64];
    cl_kernel k = mcl_ocl_kernel(be, "one_hot_fwd", NULL);
    int i = k ? 0 : -1;
    i = mcl_ocl_arg_tensor(be, k, i, idx);
    i = mcl_ocl_arg_tensor(be, k, i, out);
    i = mcl_ocl_arg_long(be, k, i, depth);
    i = mcl_ocl_arg_long(be, k, i, n);
    snprintf(what, sizeof what, "one_hot_fwd: idx %s -> %s", mcl_shape_str(idx, s1, sizeof s1),
             mcl_shape_str(out, s2, sizeof s2));
    return mcl_ocl_launch(be, k, i, n, what);
}

/* ------------------------------------------------------------------------------------------ */
/* embedding:  out[r, :] = table[idx[r], :]   (zero row for an index outside [0, V))
 * table [V, D], idx [..] (R elements) -> out [.., D] */
mcl_status mcl_ocl_embedding_fwd(mcl_backend *be, const mcl_op_args *a)
{
    const mcl_tensor *T = a->in[0], *idx = a->in[1], *out = a->out[0];
    int64_t V = mcl_ocl_rows(T), D = mcl_ocl_cols(T), n = mcl_tensor_numel(out);
    char what[200], s1[64], s2[64], s3[64];
    cl_kernel k = mcl_ocl_kernel(be, "embedding_fwd", NULL);
    int i = k ? 0 : -1;
    i = mcl_ocl_arg_tensor(be, k, i, T);
    i = mcl_ocl_arg_tensor(be, k, i, idx);
    i = mcl_ocl_arg_tensor(be, k, i, out);
    i = mcl_ocl_arg_long(be, k, i, V);
    i = mcl_ocl_arg_long(be, k, i, D);
    i = mcl_ocl_arg_long(be, k, i, n);
    snprintf(what, sizeof what, "embedding_fwd: table %s, idx %s -> %s",
             mcl_shape_str(T, s1, sizeof s1), mcl_shape_str(idx, s2, sizeof s2),
             mcl_shape_str(out, s3, sizeof s3));
    return mcl_ocl_launch(be, k, i, n, what);
}

/* The number of vocabulary blocks for the backward: about EMBED_ITEMS_PER_CU work-items per
 * compute unit in all, at least 1 block and at most V (one row per block). Any value gives
 * the same bits; it only trades parallelism against repeated index scans. */
static int64_t embedding_blocks(mcl_backend *be, int64_t V, int64_t D)
{
    cl_uint cu = 1;
    if (clGetDeviceInfo(mcl_ocl_of(be)->device, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof cu, &cu,
                        NULL) != CL_SUCCESS || cu == 0)
        cu = 1;
    int64_t want = (int64_t)cu * EMBED_ITEMS_PER_CU;
    int64_t b = (want + D - 1) / D;
    return b < 1 ? 1 : b > V ? V : b;
}

/* Backward:  gtable[k, :] += sum over r with idx[r] = k of gout[r, :]  (r increasing)
 * idx gets no gradient (gin[1] is left untouched).
 * gout[0] [.., D];  gin[0] [V, D] (or NULL) */
mcl_status mcl_ocl_embedding_bwd(mcl_backend *be, const mcl_op_args *a)
{
    if (!a->gin[0]) return MCL_OK;
    const mcl_tensor *T = a->in[0], *idx = a->in[1], *g = a->gout[0];
    int64_t V = mcl_ocl_rows(T), D = mcl_ocl_cols(T), R = mcl_ocl_rows(g);
    int64_t blocks = embedding_blocks(be, V, D);
    int64_t vblock = (V + blocks - 1) / blocks;
    blocks = (V + vblock - 1) / vblock; /* no empty trailing block */
    int64_t n = blocks * D;
    char what[200], s1[64], s2[64];
    cl_kernel k = mcl_ocl_kernel(be, "embedding_bwd", NULL);
    int i = k ? 0 : -1;
    i = mcl_ocl_arg_tensor(be, k, i, idx);
    i = mcl_ocl_arg_tensor(be, k, i, g);
    i = mcl_ocl_arg_tensor(be, k, i, a->gin[0]);
    i = mcl_ocl_arg_long(be, k, i, V);
    i = mcl_ocl_arg_long(be, k, i, D);
    i = mcl_ocl_arg_long(be, k, i, R);
    i = mcl_ocl_arg_long(be, k, i, vblock);
    i = mcl_ocl_arg_long(be, k, i, n);
    snprintf(what, sizeof what, "embedding_bwd: gout %s -> table %s (%lld blocks of %lld rows)",
             mcl_shape_str(g, s1, sizeof s1), mcl_shape_str(T, s2, sizeof s2),
             (long long)blocks, (long long)vblock);
    return mcl_ocl_launch(be, k, i, n, what);
}
