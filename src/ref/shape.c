/* shape.c — reference shape ops: concat, slice, reshape, transpose, permute, repeat_batch,
 * repeat_batch4.
 *
 * None of these computes anything: forward moves elements to new positions, backward moves
 * the gradient back to where each element came from and ADDS it there. Every output element
 * comes from exactly one input element, so the backward passes are scatters without
 * collisions: each gin element receives at most one addition per call, whatever the thread
 * count, and the result is deterministic. The exception is repeat_batch, whose backward sums
 * the n copies' gradients (in double, in a fixed order).
 *
 * Axis arguments were validated and normalized to 0..ndim-1 by the front end (ops.c).
 */
#include <string.h>

#include "ref.h"

/* Work (in elements) below which a loop stays serial: threads cost more than they save. */
#define SHAPE_PAR_MIN ((int64_t)1 << 16)
/* Tile edge of the blocked transpose (a 32 x 32 float tile is 4 KiB). */
#define SHAPE_TILE 32

/* Product of t->shape[from .. to-1] (1 for an empty range). */
static int64_t dims_prod(const mcl_tensor *t, int from, int to)
{
    int64_t p = 1;
    for (int d = from; d < to; d++) p *= t->shape[d];
    return p;
}

/* dst[r * dld + j] = src[r * sld + j]  for r < rows, j < len */
static void copy_rows(float *dst, int64_t dld, const float *src, int64_t sld, int64_t rows,
                      int64_t len)
{
#pragma omp parallel for schedule(static) if (rows > 1 && rows * len >= SHAPE_PAR_MIN)
    for (int64_t r = 0; r < rows; r++)
        memcpy(dst + r * dld, src + r * sld, (size_t)len * sizeof(float));
}

/* dst[r * dld + j] += src[r * sld + j]  for r < rows, j < len; fresh (dst logically zero,
 * not yet written: mcl_ref_grad_fresh): dst[..] = 0 + src[..], the same floats, dst not read */
static void add_rows(float *dst, int64_t dld, const float *src, int64_t sld, int64_t rows,
                     int64_t len, int fresh)
{
    if (rows == 1) { /* one long row (reshape, concat/slice on axis 0): split the row */
        if (fresh) {
#pragma omp parallel for simd schedule(static) if (len >= SHAPE_PAR_MIN)
            for (int64_t j = 0; j < len; j++) dst[j] = 0.0f + src[j];
        } else {
#pragma omp parallel for simd schedule(static) if (len >= SHAPE_PAR_MIN)
            for (int64_t j = 0; j < len; j++) dst[j] += src[j];
        }
        return;
    }
#pragma omp parallel for schedule(static) if (rows * len >= SHAPE_PAR_MIN)
    for (int64_t r = 0; r < rows; r++) {
        float *d = dst + r * dld;
        const float *s = src + r * sld;
        if (fresh)
            for (int64_t j = 0; j < len; j++) d[j] = 0.0f + s[j];
        else
            for (int64_t j = 0; j < len; j++) d[j] += s[j];
    }
}

/* Rows of len floats set to zero, rows dld apart (the part of a fresh gradient that an op
 * gives no term: slice's rows outside the slice) */
static void zero_rows(float *dst, int64_t dld, int64_t rows, int64_t len)
{
    if (len <= 0) return;
#pragma omp parallel for schedule(static) if (rows > 1 && rows * len >= SHAPE_PAR_MIN)
    for (int64_t r = 0; r < rows; r++) memset(dst + r * dld, 0, (size_t)len * sizeof(float));
}

/* ------------------------------------------------------------------------------------------ */
/* concat along axis x = p.i[0]. View every tensor as [outer, rows_x * inner] where
 * outer = prod of the dims before x and inner = prod of the dims after x: each out row is
 * the a row followed by the b row. */

/* Forward:  out[.., i, ..] = a[.., i, ..]        for i <  a.shape[x]
 *           out[.., i, ..] = b[.., i - a_x, ..]  for i >= a.shape[x]   (a_x = a.shape[x])
 * a   [.., a_x, ..]
 * b   [.., b_x, ..]   (all other dims equal to a's)
 * out [.., a_x + b_x, ..] */
mcl_status mcl_ref_concat_fwd(mcl_backend *be, const mcl_op_args *a)
{
    (void)be;
    const mcl_tensor *A = a->in[0], *B = a->in[1];
    int x = (int)a->p.i[0];
    int64_t outer = dims_prod(A, 0, x);
    int64_t inner = dims_prod(A, x + 1, A->ndim);
    int64_t ra = A->shape[x] * inner, rb = B->shape[x] * inner, ro = ra + rb;
    float *O = mcl_ref_ptr(a->out[0]);
    copy_rows(O, ro, mcl_ref_ptr(A), ra, outer, ra);
    copy_rows(O + ra, ro, mcl_ref_ptr(B), rb, outer, rb);
    return MCL_OK;
}

/* Backward: d out / d a and d out / d b are selections, so the gradient splits:
 *   ga += gout[.., 0 : a_x, ..]      gb += gout[.., a_x : a_x + b_x, ..]
 * gout[0] like out;  gin[0] like a (or NULL);  gin[1] like b (or NULL) */
mcl_status mcl_ref_concat_bwd(mcl_backend *be, const mcl_op_args *a)
{
    (void)be;
    const mcl_tensor *A = a->in[0], *B = a->in[1];
    int x = (int)a->p.i[0];
    int64_t outer = dims_prod(A, 0, x);
    int64_t inner = dims_prod(A, x + 1, A->ndim);
    int64_t ra = A->shape[x] * inner, rb = B->shape[x] * inner, ro = ra + rb;
    const float *G = mcl_ref_ptr(a->gout[0]);
    /* one gin after the other (ref.h: the two may be one tensor) */
    if (a->gin[0]) add_rows(mcl_ref_ptr(a->gin[0]), ra, G, ro, outer, ra, mcl_ref_grad_fresh(a->gin[0]));
    if (a->gin[1]) add_rows(mcl_ref_ptr(a->gin[1]), rb, G + ra, ro, outer, rb, mcl_ref_grad_fresh(a->gin[1]));
    return MCL_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* slice along axis x = p.i[0], start s = p.i[1], length n = p.i[2] (0 <= s, s + n <= a_x). */

/* Forward:  out[.., i, ..] = a[.., s + i, ..]   for 0 <= i < n
 * a   [.., a_x, ..]
 * out [.., n, ..]   (all other dims equal to a's) */
mcl_status mcl_ref_slice_fwd(mcl_backend *be, const mcl_op_args *a)
{
    (void)be;
    const mcl_tensor *A = a->in[0];
    int x = (int)a->p.i[0];
    int64_t start = a->p.i[1], len = a->p.i[2];
    int64_t outer = dims_prod(A, 0, x);
    int64_t inner = dims_prod(A, x + 1, A->ndim);
    int64_t ri = A->shape[x] * inner, ro = len * inner;
    copy_rows(mcl_ref_ptr(a->out[0]), ro, mcl_ref_ptr(A) + start * inner, ri, outer, ro);
    return MCL_OK;
}

/* Backward: ga[.., s + i, ..] += gout[.., i, ..]  for 0 <= i < n (the rest of ga unchanged;
 * a fresh ga gets its zeros there, and 0 + gout in the slice)
 * gout[0] like out;  gin[0] like a (or NULL) */
mcl_status mcl_ref_slice_bwd(mcl_backend *be, const mcl_op_args *a)
{
    (void)be;
    if (!a->gin[0]) return MCL_OK;
    const mcl_tensor *A = a->in[0];
    int x = (int)a->p.i[0];
    int64_t start = a->p.i[1], len = a->p.i[2];
    int64_t outer = dims_prod(A, 0, x);
    int64_t inner = dims_prod(A, x + 1, A->ndim);
    int64_t ri = A->shape[x] * inner, ro = len * inner;
    float *ga = mcl_ref_ptr(a->gin[0]);
    const int fresh = mcl_ref_grad_fresh(a->gin[0]);
    if (fresh) { /* the elements before and after the slice in each row */
        zero_rows(ga, ri, outer, start * inner);
        zero_rows(ga + start * inner + ro, ri, outer, ri - start * inner - ro);
    }
    add_rows(ga + start * inner, ri, mcl_ref_ptr(a->gout[0]), ro, outer, ro, fresh);
    return MCL_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* reshape: row-major order is unchanged, so it is a plain copy. */

/* Forward:  out_flat[i] = a_flat[i]
 * a   [any]
 * out [any, same element count] */
mcl_status mcl_ref_reshape_fwd(mcl_backend *be, const mcl_op_args *a)
{
    (void)be;
    int64_t n = mcl_ref_rows(a->in[0]) * mcl_ref_cols(a->in[0]);
    memcpy(mcl_ref_ptr(a->out[0]), mcl_ref_ptr(a->in[0]), (size_t)n * sizeof(float));
    return MCL_OK;
}

/* Backward: ga_flat[i] += gout_flat[i]
 * gout[0] like out;  gin[0] like a (or NULL) */
mcl_status mcl_ref_reshape_bwd(mcl_backend *be, const mcl_op_args *a)
{
    (void)be;
    if (!a->gin[0]) return MCL_OK;
    int64_t n = mcl_ref_rows(a->in[0]) * mcl_ref_cols(a->in[0]);
    add_rows(mcl_ref_ptr(a->gin[0]), n, mcl_ref_ptr(a->gout[0]), n, 1, n, mcl_ref_grad_fresh(a->gin[0]));
    return MCL_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* transpose: swap the last two dims, batched over the leading dims. */

/* How a moved element reaches dst: stored (a forward), added (a backward), or 0 + it (a
 * backward into a fresh gradient: the floats of adding into zeros, dst not read). */
enum { MOVE_STORE, MOVE_ADD, MOVE_FRESH };

/* dst[b][j][i] = src[b][i][j] (MOVE_STORE; MOVE_FRESH: 0 + it) or dst[b][j][i] += src[b][i][j]
 * (MOVE_ADD)
 * src [batch, R, C], dst [batch, C, R]; walked in SHAPE_TILE x SHAPE_TILE tiles so that both
 * the reads and the writes stay in cache. Tiles are disjoint: parallel and deterministic. */
static void transpose_batched(const float *src, float *dst, int64_t batch, int64_t R, int64_t C,
                              int acc)
{
    int64_t tr = (R + SHAPE_TILE - 1) / SHAPE_TILE, tc = (C + SHAPE_TILE - 1) / SHAPE_TILE;
    int64_t per = tr * tc, ntiles = batch * per;
#pragma omp parallel for schedule(static) if (batch * R * C >= SHAPE_PAR_MIN)
    for (int64_t t = 0; t < ntiles; t++) {
        int64_t b = t / per, rem = t % per;
        int64_t i0 = (rem / tc) * SHAPE_TILE, j0 = (rem % tc) * SHAPE_TILE;
        int64_t i1 = i0 + SHAPE_TILE < R ? i0 + SHAPE_TILE : R;
        int64_t j1 = j0 + SHAPE_TILE < C ? j0 + SHAPE_TILE : C;
        const float *s = src + b * R * C;
        float *d = dst + b * R * C;
        for (int64_t j = j0; j < j1; j++) {
            if (acc == MOVE_ADD)
                for (int64_t i = i0; i < i1; i++) d[j * R + i] += s[i * C + j];
            else if (acc == MOVE_FRESH)
                for (int64_t i = i0; i < i1; i++) d[j * R + i] = 0.0f + s[i * C + j];
            else
                for (int64_t i = i0; i < i1; i++) d[j * R + i] = s[i * C + j];
        }
    }
}

/* a's shape as [batch, M, N] (a 1-D tensor [N] is treated as [1, 1, N]). */
static void transpose_dims(const mcl_tensor *t, int64_t *batch, int64_t *M, int64_t *N)
{
    int nd = t->ndim;
    *N = t->shape[nd - 1];
    *M = nd >= 2 ? t->shape[nd - 2] : 1;
    *batch = nd >= 2 ? dims_prod(t, 0, nd - 2) : 1;
}

/* Forward:  out[.., j, i] = a[.., i, j]
 * a   [.., M, N]
 * out [.., N, M] */
mcl_status mcl_ref_transpose_fwd(mcl_backend *be, const mcl_op_args *a)
{
    (void)be;
    int64_t batch, M, N;
    transpose_dims(a->in[0], &batch, &M, &N);
    transpose_batched(mcl_ref_ptr(a->in[0]), mcl_ref_ptr(a->out[0]), batch, M, N, MOVE_STORE);
    return MCL_OK;
}

/* Backward: ga[.., i, j] += gout[.., j, i]   (the transpose of gout, accumulated)
 * gout[0] [.., N, M];  gin[0] [.., M, N] (or NULL) */
mcl_status mcl_ref_transpose_bwd(mcl_backend *be, const mcl_op_args *a)
{
    (void)be;
    if (!a->gin[0]) return MCL_OK;
    int64_t batch, M, N;
    transpose_dims(a->in[0], &batch, &M, &N);
    transpose_batched(mcl_ref_ptr(a->gout[0]), mcl_ref_ptr(a->gin[0]), batch, N, M,
                      mcl_ref_grad_fresh(a->gin[0]) ? MOVE_FRESH : MOVE_ADD);
    return MCL_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* permute: 4-D, out.shape[d] = a.shape[perm[d]] with perm[d] = p.i[d]. A tensor with fewer
 * than 4 dims is read as 4-D with its unused trailing dims equal to 1 (tensor.h). */

/* dst (contiguous, shape ds[d] = ss[perm[d]]) =, += or = 0 + (acc: MOVE_*) src (contiguous,
 * shape ss) read through the permutation: dst[o0,o1,o2,o3] = src[x] with x[perm[d]] = o[d]. dst is walked in order;
 * its outer two dims are split across threads (disjoint writes). */
static void permute4(const float *src, const int64_t ss[4], const int perm[4], float *dst,
                     int acc)
{
    int64_t sstride[4] = {ss[1] * ss[2] * ss[3], ss[2] * ss[3], ss[3], 1};
    int64_t ds[4], st[4]; /* dst shape, and the src stride of one step along each dst dim */
    for (int d = 0; d < 4; d++) {
        ds[d] = ss[perm[d]];
        st[d] = sstride[perm[d]];
    }
    int64_t outer = ds[0] * ds[1], inner = ds[2] * ds[3];
#pragma omp parallel for schedule(static) if (outer > 1 && outer * inner >= SHAPE_PAR_MIN)
    for (int64_t o = 0; o < outer; o++) {
        int64_t o0 = o / ds[1], o1 = o % ds[1];
        const float *s = src + o0 * st[0] + o1 * st[1];
        float *d = dst + o * inner;
        for (int64_t o2 = 0; o2 < ds[2]; o2++) {
            const float *s2 = s + o2 * st[2];
            float *d2 = d + o2 * ds[3];
            if (acc == MOVE_ADD)
                for (int64_t o3 = 0; o3 < ds[3]; o3++) d2[o3] += s2[o3 * st[3]];
            else if (acc == MOVE_FRESH)
                for (int64_t o3 = 0; o3 < ds[3]; o3++) d2[o3] = 0.0f + s2[o3 * st[3]];
            else
                for (int64_t o3 = 0; o3 < ds[3]; o3++) d2[o3] = s2[o3 * st[3]];
        }
    }
}

/* perm[] from p.i[0..3]; MCL_ERR_INVALID unless it is a permutation of 0..3 (the front end
 * checked already: this only keeps a bad call record from reading out of bounds). */
static mcl_status permute_get(const mcl_op_args *a, int perm[4])
{
    unsigned seen = 0;
    for (int d = 0; d < 4; d++) {
        int64_t v = a->p.i[d];
        if (v < 0 || v > 3 || (seen & (1u << v))) return MCL_ERR_INVALID;
        seen |= 1u << v;
        perm[d] = (int)v;
    }
    return MCL_OK;
}

/* Forward:  out[o0, o1, o2, o3] = a[x0, x1, x2, x3]  with x[perm[d]] = o[d]
 * a   [s0, s1, s2, s3]
 * out [s_perm[0], s_perm[1], s_perm[2], s_perm[3]] */
mcl_status mcl_ref_permute_fwd(mcl_backend *be, const mcl_op_args *a)
{
    (void)be;
    int perm[4];
    mcl_status st = permute_get(a, perm);
    if (st != MCL_OK) return st;
    permute4(mcl_ref_ptr(a->in[0]), a->in[0]->shape, perm, mcl_ref_ptr(a->out[0]), MOVE_STORE);
    return MCL_OK;
}

/* Backward: the inverse permutation inv (inv[perm[d]] = d) applied to gout, accumulated:
 *   ga[x0, x1, x2, x3] += gout[o0, o1, o2, o3]  with o[inv[e]] = x[e]
 * gout[0] like out;  gin[0] like a (or NULL) */
mcl_status mcl_ref_permute_bwd(mcl_backend *be, const mcl_op_args *a)
{
    (void)be;
    if (!a->gin[0]) return MCL_OK;
    int perm[4], inv[4];
    mcl_status st = permute_get(a, perm);
    if (st != MCL_OK) return st;
    for (int d = 0; d < 4; d++) inv[perm[d]] = d;
    permute4(mcl_ref_ptr(a->gout[0]), a->gout[0]->shape, inv, mcl_ref_ptr(a->gin[0]),
             mcl_ref_grad_fresh(a->gin[0]) ? MOVE_FRESH : MOVE_ADD);
    return MCL_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* repeat_batch: n = p.i[0] copies of a along a new dim at axis p.i[1] (0 or 1). Both are
 * "a [outer, inner] -> out [outer, n, inner]": axis 0 is outer = 1, axis 1 outer = a's first
 * dim (each row's n copies next to it). */

static void repeat_dims(const mcl_op_args *a, int64_t *outer, int64_t *inner)
{
    const mcl_tensor *x = a->in[0];
    const int64_t N = mcl_ref_rows(x) * mcl_ref_cols(x);
    *outer = a->p.i[1] == 1 ? x->shape[0] : 1;
    *inner = *outer > 0 ? N / *outer : 0;
}

/* Forward:  out[o, i, j] = a[o, j]   for 0 <= i < n
 * a   [outer, inner]
 * out [outer, n, inner] */
mcl_status mcl_ref_repeat_batch_fwd(mcl_backend *be, const mcl_op_args *a)
{
    (void)be;
    int64_t outer, inner, n = a->p.i[0];
    repeat_dims(a, &outer, &inner);
    const float *x = mcl_ref_ptr(a->in[0]);
    float *out = mcl_ref_ptr(a->out[0]);
    if (outer == 1) {
        copy_rows(out, inner, x, 0, n, inner);
        return MCL_OK;
    }
#pragma omp parallel for schedule(static) if (outer * n * inner >= SHAPE_PAR_MIN)
    for (int64_t r = 0; r < outer * n; r++)
        memcpy(out + r * inner, x + (r / n) * inner, (size_t)inner * sizeof(float));
    return MCL_OK;
}

/* Backward: ga[o, j] += sum_{i < n} gout[o, i, j]   (double, i in increasing order)
 * gout[0] [outer, n, inner];  gin[0] like a (or NULL). Each row's columns are cut into blocks
 * of SHAPE_TILE * 4; one thread sums a block over all i (deterministic for any thread count). */
mcl_status mcl_ref_repeat_batch_bwd(mcl_backend *be, const mcl_op_args *a)
{
    (void)be;
    if (!a->gin[0]) return MCL_OK;
    enum { RB_COLS = SHAPE_TILE * 4 };
    int64_t outer, inner, n = a->p.i[0];
    repeat_dims(a, &outer, &inner);
    const float *G = mcl_ref_ptr(a->gout[0]);
    float *ga = mcl_ref_ptr(a->gin[0]);
    const int64_t per_row = (inner + RB_COLS - 1) / RB_COLS, nblocks = outer * per_row;
    const int fresh = mcl_ref_grad_fresh(a->gin[0]);
#pragma omp parallel for schedule(static) if (nblocks > 1 && n * outer * inner >= SHAPE_PAR_MIN)
    for (int64_t blk = 0; blk < nblocks; blk++) {
        const int64_t o = blk / per_row, j0 = (blk - o * per_row) * RB_COLS;
        const int64_t nj = inner - j0 < RB_COLS ? inner - j0 : RB_COLS;
        double acc[RB_COLS];
        for (int64_t j = 0; j < nj; j++) acc[j] = 0.0;
        for (int64_t i = 0; i < n; i++) {
            const float *g = G + (o * n + i) * inner + j0;
            for (int64_t j = 0; j < nj; j++) acc[j] += (double)g[j];
        }
        if (fresh)
            for (int64_t j = 0; j < nj; j++) ga[o * inner + j0 + j] = 0.0f + (float)acc[j];
        else
            for (int64_t j = 0; j < nj; j++) ga[o * inner + j0 + j] += (float)acc[j];
    }
    return MCL_OK;
}

/* repeat_batch4: repeat_batch of in[k] into out[k] for k = 0..3 (p as repeat_batch's; with
 * axis 1 out[k] is [B·n, ..], the same elements in the same order as repeat_batch's
 * [B, n, ..]), one call of the forward or backward above per tensor: the same floats.
 *   forward:  out_k[o·n + i, j] = x_k[o, j];   backward: gx_k[o, j] += sum_i gout_k[o·n + i, j] */
static mcl_status repeat4(mcl_backend *be, const mcl_op_args *a, int bwd)
{
    for (int k = 0; k < 4; k++) {
        mcl_op_args one;
        memset(&one, 0, sizeof one);
        one.op = MCL_OP_REPEAT_BATCH;
        one.p = a->p;
        one.in[0] = a->in[k];
        one.out[0] = a->out[k];
        one.gout[0] = a->gout[k];
        one.gin[0] = a->gin[k];
        mcl_status s = bwd ? mcl_ref_repeat_batch_bwd(be, &one) : mcl_ref_repeat_batch_fwd(be, &one);
        if (s != MCL_OK) return s;
    }
    return MCL_OK;
}

mcl_status mcl_ref_repeat_batch4_fwd(mcl_backend *be, const mcl_op_args *a) { return repeat4(be, a, 0); }
mcl_status mcl_ref_repeat_batch4_bwd(mcl_backend *be, const mcl_op_args *a) { return repeat4(be, a, 1); }
