/* matmul.c — reference matrix product: out = op(a) · op(b), batched over leading dims.
 *
 * op(x) is x or its transpose (flags p.i[0] for a, p.i[1] for b). Each matrix of the batch is
 * one call of mcl_ref_sgemm (src/ref/gemm.c), which owns the blocking, the vectorization and
 * the OpenMP threads; this file only works out the dimensions, strides and transpose flags,
 * forward and backward. The batch loop is serial: the GEMM parallelizes inside each product,
 * and its summation order depends only on K, so results are the same for any thread count.
 */
#include "ref.h"


/* Forward:  out[z] = op(a[z]) · op(b[z])          for every batch index z
 *   out[z][m][n] = sum_k op(a[z])[m][k] · op(b[z])[k][n]
 * a   [.., M, K] or [.., K, M] (p.i[0] = 1)
 * b   [.., K, N] or [.., N, K] (p.i[1] = 1)
 * out [.., M, N] */
mcl_status mcl_ref_matmul_fwd(mcl_backend *be, const mcl_op_args *a)
{
    (void)be;
    mcl_mm_dims d;
    mcl_mm_dims_get(a, &d);
    const float *A = mcl_ref_ptr(a->in[0]);
    const float *B = mcl_ref_ptr(a->in[1]);
    float *C = mcl_ref_ptr(a->out[0]);
    for (int64_t b = 0; b < d.batch; b++) {
        mcl_ref_sgemm(d.ta, d.tb, d.M, d.N, d.K, 1.0f, A + b * d.M * d.K, d.lda,
                      B + b * d.K * d.N, d.ldb, 0.0f, C + b * d.M * d.N, d.N);
    }
    return MCL_OK;
}

/* Backward, with G = dL/dout[z] [M,N] for each batch index z:
 *   dL/d op(a) = G · op(b)ᵀ   [M,K]        dL/d op(b) = op(a)ᵀ · G   [K,N]
 * and the gradient of the stored matrix is the transpose of that when the flag is set:
 *   ga (a stored [M,K], ta = 0):  ga += G · op(b)ᵀ
 *        tb = 0: G · bᵀ            tb = 1: G · b
 *   ga (a stored [K,M], ta = 1):  ga += (G · op(b)ᵀ)ᵀ = op(b) · Gᵀ
 *        tb = 0: b · Gᵀ            tb = 1: bᵀ · Gᵀ
 *   gb (b stored [K,N], tb = 0):  gb += op(a)ᵀ · G
 *        ta = 0: aᵀ · G            ta = 1: a · G
 *   gb (b stored [N,K], tb = 1):  gb += (op(a)ᵀ · G)ᵀ = Gᵀ · op(a)
 *        ta = 0: Gᵀ · a            ta = 1: Gᵀ · aᵀ
 * Every product runs with beta = 1, so it adds to what gin already holds; into a fresh gin
 * (mcl_ref_grad_fresh: logically zero, never written) it runs mcl_ref_sgemm_fresh, the same
 * bits without the zero fill and without reading gin.
 * gout[0] [.., M, N];  gin[0] like a (or NULL);  gin[1] like b (or NULL) */
mcl_status mcl_ref_matmul_bwd(mcl_backend *be, const mcl_op_args *a)
{
    (void)be;
    mcl_mm_dims d;
    mcl_mm_dims_get(a, &d);
    const float *A = mcl_ref_ptr(a->in[0]);
    const float *B = mcl_ref_ptr(a->in[1]);
    const float *G = mcl_ref_ptr(a->gout[0]);
    float *GA = a->gin[0] ? mcl_ref_ptr(a->gin[0]) : NULL;
    float *GB = a->gin[1] ? mcl_ref_ptr(a->gin[1]) : NULL;
    const int64_t sa = d.M * d.K, sb = d.K * d.N, sc = d.M * d.N; /* batch strides */
    /* asked one after the other: if a and b are one tensor, GB then adds to GA's terms (each
     * batch's GA block is stored before its GB block is added) */
    const int fa = GA && mcl_ref_grad_fresh(a->gin[0]), fb = GB && mcl_ref_grad_fresh(a->gin[1]);

    for (int64_t b = 0; b < d.batch; b++) {
        const float *Ab = A + b * sa, *Bb = B + b * sb, *Gb = G + b * sc;
        if (GA) {
            if (!d.ta) /* [M,K] = G[M,N] · op(b)ᵀ[N,K] */
                mcl_ref_sgemm_acc(fa, 0, !d.tb, d.M, d.K, d.N, 1.0f, Gb, d.N, Bb, d.ldb, GA + b * sa, d.K);
            else       /* [K,M] = op(b)[K,N] · Gᵀ[N,M] */
                mcl_ref_sgemm_acc(fa, d.tb, 1, d.K, d.M, d.N, 1.0f, Bb, d.ldb, Gb, d.N, GA + b * sa, d.M);
        }
        if (GB) {
            if (!d.tb) /* [K,N] = op(a)ᵀ[K,M] · G[M,N] */
                mcl_ref_sgemm_acc(fb, !d.ta, 0, d.K, d.N, d.M, 1.0f, Ab, d.lda, Gb, d.N, GB + b * sb, d.N);
            else       /* [N,K] = Gᵀ[N,M] · op(a)[M,K] */
                mcl_ref_sgemm_acc(fb, 1, d.ta, d.N, d.K, d.M, 1.0f, Gb, d.N, Ab, d.lda, GB + b * sb, d.K);
        }
    }
    return MCL_OK;
}
