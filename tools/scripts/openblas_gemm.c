/* openblas_gemm.c — the `metacl bench gemm` measurement, done with OpenBLAS's cblas_sgemm.
 *
 * Not part of the library or of the metacl binary: tools/scripts/gemm-vs-openblas.sh builds it
 * against OpenBLAS and compares. Same shapes, same data, same call (row-major, op(A) and op(B)
 * per shape, dense leading dimensions, alpha = 1, beta = 0) and same timing method as tools/cli/bench_gemm.c: two warm-up calls, then
 * single calls timed with clock_gettime(CLOCK_MONOTONIC) until >= 0.3 s and >= 10 calls
 * (or exactly --reps N calls); GFLOP/s = 2*M*N*K / time, for the fastest and the median call.
 *
 * Output (stdout): a JSON array, one object per line, in the same format as
 * `metacl bench gemm --json`. The OpenBLAS build and core it runs on go to stderr.
 *
 * Build: gcc -O2 -std=c11 $(pkg-config --cflags openblas) openblas_gemm.c \
 *            $(pkg-config --libs openblas)
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* clock_gettime under -std=c11 */
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cblas.h>

/* OpenBLAS extensions (declared in OpenBLAS's cblas.h; repeated in case another cblas.h was
 * found first). */
char *openblas_get_config(void);
char *openblas_get_corename(void);
int openblas_get_num_threads(void);

/* transA, transB, M, N, K: bench_gemm.c's table */
static const int64_t shapes[][5] = {
    {0, 0, 1024, 1024, 1024}, {0, 0, 256, 256, 256}, {0, 0, 2560, 256, 256}, {0, 0, 2048, 32, 288},
    {0, 0, 16, 1024, 1024},   {0, 1, 32, 256, 48},   {1, 0, 32, 48, 128},    {0, 1, 50, 1024, 256},
};
#define N_SHAPES (sizeof shapes / sizeof shapes[0])
#define MIN_SECONDS 0.3
#define MIN_REPS 10
#define MAX_REPS 100000

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Same generator and seeds as tools/cli/bench_gemm.c. */
static void fill(float *x, int64_t n, uint32_t seed)
{
    uint32_t s = seed;
    for (int64_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        x[i] = (float)(s >> 8) * (2.0f / 16777216.0f) - 1.0f;
    }
}

int main(int argc, char **argv)
{
    int reps = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--reps") && i + 1 < argc) {
            reps = atoi(argv[++i]);
            if (reps < 1 || reps > MAX_REPS) {
                fprintf(stderr, "openblas_gemm: bad --reps\n");
                return 2;
            }
        } else {
            fprintf(stderr, "usage: openblas_gemm [--reps N]\n");
            return 2;
        }
    }
    fprintf(stderr, "%s; core %s; %d threads\n", openblas_get_config(),
            openblas_get_corename(), openblas_get_num_threads());

    double *times = malloc(sizeof(double) * MAX_REPS);
    if (!times) return 1;
    printf("[");
    for (size_t s = 0; s < N_SHAPES; s++) {
        const int ta = (int)shapes[s][0], tb = (int)shapes[s][1];
        const int64_t M = shapes[s][2], N = shapes[s][3], K = shapes[s][4];
        const int lda = (int)(ta ? M : K), ldb = (int)(tb ? K : N);
        const enum CBLAS_TRANSPOSE opa = ta ? CblasTrans : CblasNoTrans, opb = tb ? CblasTrans : CblasNoTrans;
        float *A = malloc(sizeof(float) * (size_t)(M * K));
        float *B = malloc(sizeof(float) * (size_t)(K * N));
        float *C = calloc((size_t)(M * N), sizeof(float));
        if (!A || !B || !C) {
            fprintf(stderr, "openblas_gemm: out of memory\n");
            return 1;
        }
        fill(A, M * K, 12345u);
        fill(B, K * N, 67890u);
        for (int w = 0; w < 2; w++)
            cblas_sgemm(CblasRowMajor, opa, opb, (int)M, (int)N, (int)K, 1.0f, A, lda, B, ldb, 0.0f, C,
                        (int)N);
        int n = 0;
        const double start = now_seconds();
        for (;;) {
            const double t0 = now_seconds();
            cblas_sgemm(CblasRowMajor, opa, opb, (int)M, (int)N, (int)K, 1.0f, A, lda, B, ldb, 0.0f, C,
                        (int)N);
            const double t1 = now_seconds();
            times[n++] = t1 - t0;
            if (reps ? n >= reps : (n >= MIN_REPS && t1 - start >= MIN_SECONDS)) break;
            if (n >= MAX_REPS) break;
        }
        qsort(times, (size_t)n, sizeof(double), cmp_double);
        const double flops = 2.0 * (double)M * (double)N * (double)K;
        const double median = n % 2 ? times[n / 2] : 0.5 * (times[n / 2 - 1] + times[n / 2]);
        printf("%s\n  {\"ta\": %d, \"tb\": %d, \"M\": %lld, \"N\": %lld, \"K\": %lld, "
               "\"gflops_best\": %.2f, \"gflops_median\": %.2f}",
               s ? "," : "", ta, tb, (long long)M, (long long)N, (long long)K,
               times[0] > 0.0 ? flops / times[0] * 1e-9 : 0.0,
               median > 0.0 ? flops / median * 1e-9 : 0.0);
        fflush(stdout);
        free(A);
        free(B);
        free(C);
    }
    printf("\n]\n");
    free(times);
    return 0;
}
