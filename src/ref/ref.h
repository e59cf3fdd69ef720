/* ref.h — the reference backend's internal interface.
 *
 * One forward and one backward function per op of ops.def, named mcl_ref_<name>_fwd/_bwd,
 * implemented in src/ref/<family>.c (family column of ops.def; inorm_pool_relu of the conv
 * family in conv_tail.c). Each function takes the
 * uniform call record (backend.h): inputs in a->in[], outputs in a->out[], scalars in a->p;
 * backward reads a->gout[] and ACCUMULATES into the non-NULL a->gin[].
 * The front end has already checked shapes and allocated outputs: kernels only compute.
 */
#ifndef MCL_REF_H
#define MCL_REF_H

#include "backend.h"
#include "hot.h" /* MCL_HOT, MCL_SIMD: compiler help for hot loops, no effect on results */

/* Pointer to the first element of t (reference backend buffers are host float arrays). */
static inline float *mcl_ref_ptr(const mcl_tensor *t)
{
    return (float *)t->buf->handle + t->offset;
}

/* Product of all dims but the last ("rows") and the last dim ("cols"). */
static inline int64_t mcl_ref_rows(const mcl_tensor *t)
{
    int64_t r = 1;
    for (int d = 0; d < t->ndim - 1; d++) r *= t->shape[d];
    return r;
}
static inline int64_t mcl_ref_cols(const mcl_tensor *t)
{
    return t->shape[t->ndim - 1];
}

/* Row-major single-precision GEMM (src/ref/gemm.c):
 *   C[M,N] = alpha * op(A) * op(B) + beta * C,  op(A) [M,K], op(B) [K,N]
 * A is stored [M,K] (lda >= K) or, if transA, [K,M] (lda >= M); same for B.
 * beta == 0 means C is overwritten (its old contents, even NaN, are ignored).
 * Deterministic: the summation order of every C element depends only on K, not on threads. */
void mcl_ref_sgemm(int transA, int transB, int64_t M, int64_t N, int64_t K, float alpha,
                   const float *A, int64_t lda, const float *B, int64_t ldb, float beta,
                   float *C, int64_t ldc);
/* The same with beta = 1 into a C that reads as zeros, without reading C (a fresh gradient,
 * mcl_ref_grad_fresh): C = 0 + alpha * op(A) * op(B), the bits mcl_ref_sgemm gives with
 * beta = 1 on a zero-filled C. */
void mcl_ref_sgemm_fresh(int transA, int transB, int64_t M, int64_t N, int64_t K, float alpha,
                         const float *A, int64_t lda, const float *B, int64_t ldb, float *C,
                         int64_t ldc);
/* A backward's product into a gradient: C += alpha * op(A) * op(B) (beta = 1), or, fresh, the
 * same into a C that reads as zeros (mcl_ref_sgemm_fresh). */
void mcl_ref_sgemm_acc(int fresh, int transA, int transB, int64_t M, int64_t N, int64_t K,
                       float alpha, const float *A, int64_t lda, const float *B, int64_t ldb,
                       float *C, int64_t ldc);

/* Backward of an op marked in ref_backend.c's bwd_fresh_aware table, before it writes into
 * gin t: returns 1 when t is the whole of a buffer that is still fresh (logically zero,
 * memory not yet written; see ref_backend.c). The caller must then STORE every element of t
 * (t[i] = 0.0f + v[i], the bits of accumulating into zeros) instead of accumulating. Returns 0
 * when t holds data (accumulate as usual). Call it for one gin, write that gin, then the next:
 * two gin may be one tensor. */
int mcl_ref_grad_fresh(const mcl_tensor *t);

/* gb[j] += sum_r g[r, j] in double, rows in increasing order, rounded to float once (bias_add's
 * bias gradient, elementwise.c).  g [R, N], gb [N] */
void mcl_ref_bias_colsum(const float *g, int64_t R, int64_t N, float *gb);

/* sum_j x[j], j < n, in double: element j in lane j % MCL_REF_SUM_LANES, the lanes added
 * pairwise (an order that depends on n only; conv.c's bias sums, inorm.c's statistics) */
#define MCL_REF_SUM_LANES 8
double mcl_ref_dsum(const float *x, int64_t n);

/* An instance norm's gamma and beta gradients from per-chunk double sums, chunks added in
 * order (the same bits at any thread count):
 *   ggamma[c] (+)= (float) sum_ch part[ch, 0, c]   gbeta[c] (+)= (float) sum_ch part[ch, 1, c]
 * part [nchunks, 2, C]; ggamma, gbeta [C] or NULL; fresh_*: store 0 + the sum (a fresh
 * gradient, mcl_ref_grad_fresh) instead of accumulating. Separate statements: correct even if
 * ggamma and gbeta are one tensor. (instance_norm in inorm.c, inorm_pool_relu in conv_tail.c) */
void mcl_ref_norm_affine_grads(const double *part, int64_t nchunks, int64_t C, float *ggamma,
                               int fresh_g, float *gbeta, int fresh_b);

/* inorm_pool_relu by planes (conv_tail.c; the op's loops call these, and so does conv_block.c's
 * conv_inorm_pool_relu on the planes of a convolution it just computed). Backward, one plane:
 * x, gx [H,W], g, y, ag [H/2,W/2], m, rs its statistics, gm its gamma, gs the dropout's scale (1 without); s:
 * mcl_ref_ipr_bwd_scratch(H, W) floats of scratch; gx (NULL: not wanted) stored when fresh
 * (2: streamed), else added to, its rows ldx floats apart (W: one plane; more: rows of a grid,
 * then fresh is 1); next: the next plane in memory (x + H W, g + ..) is the caller's next,
 * fetched meanwhile; *sg = sum gn, *sgx = sum gn·xhat (the gamma/beta terms). */
/* The forward MCL_REF_IPR_GROUP planes at a time at most (their statistics' sums side by side,
 * conv_tail.c; each plane gets the bits it gets alone): planes x + k H W [H,W], k < np -> their
 * means, rstds and windows y, ag + k P (P = H/2 W/2; gm[k], bt[k] their channels' gamma and
 * beta; next: nnext planes to fetch meanwhile, or NULL). */
#define MCL_REF_IPR_GROUP 4
void mcl_ref_ipr_fwd_planes(int np, const float *x, const float *next, int nnext, int64_t H, int64_t W,
                            const double *gm, const double *bt, double eps, float *mean, float *rstd,
                            float *y, float *ag);
int64_t mcl_ref_ipr_bwd_scratch(int64_t H, int64_t W);
void mcl_ref_ipr_bwd_plane(const float *x, const float *g, const float *y, const float *ag, int64_t H,
                           int64_t W, float m, float rs, double gm, float gs, float *s, float *gx,
                           int64_t ldx, int fresh, int next, double *sg, double *sgx);

/* A dropout's key (ops.def's dropout row): element i of segment s = i / seg draws from stream
 * + s·step at counter + (i − s·seg); seg = 0 is one segment. p in (0, 1). */
typedef struct mcl_ref_drop_key {
    uint64_t seed, stream, counter, step;
    int64_t seg;
    float p;
} mcl_ref_drop_key;

/* y[e] = keep_{i0 + e} ? y[e] * scale : 0 for e < n, in place, on the calling thread: dropout's
 * forward (scale = 1 / (1 − p) in float) on the elements i0 .. i0 + n − 1 of a tensor whose
 * whole mask k describes, the same values as mcl_ref_dropout_fwd there (dropout.c) */
void mcl_ref_dropout_range(const mcl_ref_drop_key *k, int64_t i0, int64_t n, float *y);

/* mcl_ref_<name>_fwd for every op, mcl_ref_<name>_bwd for the ops with has_bwd = 1 (ops.def) */
#define MCL_OP(ID, name, n_in, n_out, n_diff_out, family, overwrites, has_bwd)              \
    mcl_status mcl_ref_##name##_fwd(mcl_backend *be, const mcl_op_args *a);                  \
    MCL_IF_##has_bwd(mcl_status mcl_ref_##name##_bwd(mcl_backend *be, const mcl_op_args *a);)
#include "ops.def"

#undef MCL_OP

#endif
