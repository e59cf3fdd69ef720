/* embed.c — reference one_hot and embedding lookups.
 *
 * Indices are integers stored in float tensors. An index value v selects entry floor(v) when
 * 0 <= v < range; anything else (negative, too large, NaN, ±Inf) selects nothing. The range
 * check happens in floating point BEFORE the conversion to an integer, so no value can make
 * the conversion undefined. For exact integers (the only values the model code produces)
 * floor(v) is v itself.
 */
#include <string.h>

#include "ref.h"

/* Work (in elements) below which a loop stays serial. */
#define EMBED_PAR_MIN ((int64_t)1 << 16)
/* Columns per task in the embedding backward (any value gives the same bits). */
#define EMBED_COL_BLOCK 32

/* Row selected by index value v in a range of n rows, or -1 for none (see the file header). */
static int64_t embed_index(float v, int64_t n)
{
    if (!(v >= 0.0f) || !((double)v < (double)n)) return -1; /* also catches NaN */
    return (int64_t)v;                                          /* v >= 0: truncation = floor */
}

/* Forward:  out[r, c] = (c == floor(idx[r])) ? 1 : 0,  for 0 <= c < depth
 *           (a zero row when idx[r] is negative, >= depth or NaN)
 * idx [..]          (R elements, integer values stored as floats)
 * out [.., depth]   (depth = p.i[0]; read from out's last dim, which the front end set to it)
 * No backward: the output is piecewise constant in idx. */
mcl_status mcl_ref_one_hot_fwd(mcl_backend *be, const mcl_op_args *a)
{
    (void)be;
    const float *I = mcl_ref_ptr(a->in[0]);
    float *O = mcl_ref_ptr(a->out[0]);
    int64_t depth = mcl_ref_cols(a->out[0]);
    int64_t R = mcl_ref_rows(a->out[0]);
#pragma omp parallel for schedule(static) if (R * depth >= EMBED_PAR_MIN)
    for (int64_t r = 0; r < R; r++) {
        float *row = O + r * depth;
        for (int64_t c = 0; c < depth; c++) row[c] = 0.0f;
        int64_t k = embed_index(I[r], depth);
        if (k >= 0) row[k] = 1.0f;
    }
    return MCL_OK;
}

/* Forward:  out[r, :] = table[idx[r], :]
 *           (the front end rejected out-of-range indices; should one reach here anyway, its
 *           row is left zero and it gets no gradient, instead of reading out of bounds)
 * table [V, D]
 * idx   [..]      (R elements, integer values stored as floats)
 * out   [.., D] */
mcl_status mcl_ref_embedding_fwd(mcl_backend *be, const mcl_op_args *a)
{
    (void)be;
    const float *T = mcl_ref_ptr(a->in[0]);
    const float *I = mcl_ref_ptr(a->in[1]);
    float *O = mcl_ref_ptr(a->out[0]);
    int64_t V = mcl_ref_rows(a->in[0]), D = mcl_ref_cols(a->in[0]);
    int64_t R = mcl_ref_rows(a->out[0]);
#pragma omp parallel for schedule(static) if (R * D >= EMBED_PAR_MIN)
    for (int64_t r = 0; r < R; r++) {
        int64_t k = embed_index(I[r], V);
        if (k >= 0)
            memcpy(O + r * D, T + k * D, (size_t)D * sizeof(float));
        else
            memset(O + r * D, 0, (size_t)D * sizeof(float));
    }
    return MCL_OK;
}

/* Backward: d out[r, :] / d table[k, :] = I when idx[r] = k, so
 *   gtable[k, :] += sum over r with idx[r] = k of gout[r, :]
 * Several rows may hit the same k. The sum for each element runs over r in increasing order;
 * threads split the D columns (never the rows), so the bits do not depend on the thread count.
 * idx gets no gradient (gin[1] is left untouched).
 * gout[0] [.., D];  gin[0] [V, D] (or NULL) */
mcl_status mcl_ref_embedding_bwd(mcl_backend *be, const mcl_op_args *a)
{
    (void)be;
    if (!a->gin[0]) return MCL_OK;
    const float *I = mcl_ref_ptr(a->in[1]);
    const float *G = mcl_ref_ptr(a->gout[0]);
    float *GT = mcl_ref_ptr(a->gin[0]);
    int64_t V = mcl_ref_rows(a->in[0]), D = mcl_ref_cols(a->in[0]);
    int64_t R = mcl_ref_rows(a->gout[0]);
    int64_t nblk = (D + EMBED_COL_BLOCK - 1) / EMBED_COL_BLOCK;
#pragma omp parallel for schedule(static) if (nblk > 1 && R * D >= EMBED_PAR_MIN)
    for (int64_t blk = 0; blk < nblk; blk++) {
        int64_t c0 = blk * EMBED_COL_BLOCK;
        int64_t c1 = c0 + EMBED_COL_BLOCK < D ? c0 + EMBED_COL_BLOCK : D;
        for (int64_t r = 0; r < R; r++) {
            int64_t k = embed_index(I[r], V);
            if (k < 0) continue;
            float *g = GT + k * D;
            const float *go = G + r * D;
            for (int64_t c = c0; c < c1; c++) g[c] += go[c];
        }
    }
    return MCL_OK;
}
