/* gemm.c — naive matrix product (the definition behind src/ref/matmul.c + gemm.c). */
#include "naive.h"

/* out[z][m][n] = sum_{kk < K} A[z][m][kk] * B[z][kk][n]
 *   with A = a (stored [batch,M,K]) or a transposed (ta: stored [batch,K,M]),
 *        B = b (stored [batch,K,N]) or b transposed (tb: stored [batch,N,K]).
 *   batch, M, K, N  sizes
 *   a    [batch,M,K] or [batch,K,M]
 *   b    [batch,K,N] or [batch,N,K]
 *   out  [batch,M,N] */
void mcl_naive_matmul(int64_t batch, int64_t M, int64_t K, int64_t N, int ta, int tb,
                      const float *a, const float *b, double *out)
{
    for (int64_t z = 0; z < batch; z++) {
        const float *A = a + z * M * K, *B = b + z * K * N;
        for (int64_t m = 0; m < M; m++)
            for (int64_t n = 0; n < N; n++) {
                double s = 0.0;
                for (int64_t kk = 0; kk < K; kk++) {
                    double av = ta ? A[kk * M + m] : A[m * K + kk];
                    double bv = tb ? B[n * K + kk] : B[kk * N + n];
                    s += av * bv;
                }
                out[(z * M + m) * N + n] = s;
            }
    }
}
