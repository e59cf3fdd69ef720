/* bench_gemm.c — `metacl bench gemm`: throughput of the reference backend's sgemm.
 *
 * For each shape (M x N x K, op(A) = A or A^T, op(B) = B or B^T as its row says; alpha = 1,
 * beta = 0; every matrix stored densely: lda = K or M, ldb = N or K, ldc = N) it fills A and B with
 * deterministic values, runs two warm-up calls, then times single calls with
 * clock_gettime(CLOCK_MONOTONIC) until at least 0.3 s have been spent (at least 10 calls),
 * or exactly --reps calls. It reports GFLOP/s = 2*M*N*K / time for the fastest call and for
 * the median call. tools/scripts/openblas_gemm.c does the same with OpenBLAS, for comparison
 * (tools/scripts/gemm-vs-openblas.sh).
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* clock_gettime under -std=c11 */
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "cli.h"
#include "progress.h"
#include "ref.h"

typedef struct bench_shape {
    int ta, tb; /* transA, transB */
    int64_t M, N, K;
} bench_shape;

/* The square cases, the LM's and Conv-4's, B read in place; then the attention's small
 * products, which sgemm computes as their transpose (src/ref/gemm.c, swap_pays): 32 queries
 * against 256 keys (Q·K^T), a key block's gradient (dS^T·Q), and one it leaves alone (50 rows
 * against a transposed 1024 x 256, whose swapped tiles would hold more padding). */
static const bench_shape bench_shapes[] = {
    {0, 0, 1024, 1024, 1024}, {0, 0, 256, 256, 256}, {0, 0, 2560, 256, 256}, {0, 0, 2048, 32, 288},
    {0, 0, 16, 1024, 1024},   {0, 1, 32, 256, 48},   {1, 0, 32, 48, 128},    {0, 1, 50, 1024, 256},
};
#define N_SHAPES (sizeof bench_shapes / sizeof bench_shapes[0])

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

/* Deterministic values in [-1, 1), different for A and B. */
static void fill(float *x, int64_t n, uint32_t seed)
{
    uint32_t s = seed;
    for (int64_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        x[i] = (float)(s >> 8) * (2.0f / 16777216.0f) - 1.0f;
    }
}

typedef struct gemm_opts {
    int json, reps, threads;
} gemm_opts;

static const mcl_key gemm_keys[] = {
    MCL_OPT_FLAG("json", 0, gemm_opts, json, "print a JSON array instead of a table"),
    MCL_OPT_INT("reps", 0, gemm_opts, reps, 1, MAX_REPS, NULL, "N",
                "time exactly N calls per shape (default: >= 0.3 s and >= 10 calls)"),
    MCL_OPT_INT("threads", 0, gemm_opts, threads, 1, 4096, NULL, "N",
                "OpenMP threads (default: OMP_NUM_THREADS or all cores)"),
};
static const mcl_cli_cmd gemm_cmd = {
    .name = "bench gemm", .synopsis = "[--json] [--reps N] [--threads N]",
    .about = "Times the reference sgemm (row-major; op N or T per shape) on fixed shapes\n"
             "and prints GFLOP/s (best and median call).",
    .opts = gemm_keys, .n_opts = (int)(sizeof gemm_keys / sizeof gemm_keys[0])};

int mcl_cli_bench_gemm(int argc, char **argv)
{
    gemm_opts o = {0, 0, 0};
    mcl_cli_parsed p;
    int prc = mcl_cli_parse(&gemm_cmd, argc, argv, &o, &p);
    if (prc != MCL_CLI_GO) return prc;
    const int json = o.json, reps = o.reps, threads = o.threads;
#ifdef _OPENMP
    if (threads > 0) omp_set_num_threads(threads);
    const int nthreads = omp_get_max_threads();
#else
    const int nthreads = 1;
    if (threads > 1)
        fprintf(stderr, "metacl bench gemm: built without OpenMP, --threads %d ignored\n", threads);
#endif

    double *times = malloc(sizeof(double) * MAX_REPS);
    if (!times) {
        fprintf(stderr, "metacl bench gemm: out of memory\n");
        return 1;
    }
    if (json)
        printf("[");
    else
        printf("reference sgemm, %d thread%s\n%2s %6s %6s %6s %12s %14s %7s\n", nthreads,
               nthreads == 1 ? "" : "s", "op", "M", "N", "K", "GFLOP/s best", "GFLOP/s median",
               "calls");

    int rc = 0;
    for (size_t s = 0; s < N_SHAPES; s++) {
        const int64_t M = bench_shapes[s].M, N = bench_shapes[s].N, K = bench_shapes[s].K;
        const int ta = bench_shapes[s].ta, tb = bench_shapes[s].tb;
        const int64_t lda = ta ? M : K, ldb = tb ? K : N;
        float *A = malloc(sizeof(float) * (size_t)(M * K));
        float *B = malloc(sizeof(float) * (size_t)(K * N));
        float *C = malloc(sizeof(float) * (size_t)(M * N));
        if (!A || !B || !C) {
            fprintf(stderr, "metacl bench gemm: out of memory\n");
            free(A);
            free(B);
            free(C);
            rc = 1;
            break;
        }
        char label[96];
        snprintf(label, sizeof label, "bench gemm: %c%c %lldx%lldx%lld (shape %d of %d)", ta ? 'T' : 'N',
                 tb ? 'T' : 'N', (long long)M, (long long)N, (long long)K, (int)s + 1, (int)N_SHAPES);
        mcl_progress_start(label, 0);
        fill(A, M * K, 12345u);
        fill(B, K * N, 67890u);
        memset(C, 0, sizeof(float) * (size_t)(M * N));

        for (int w = 0; w < 2; w++)
            mcl_ref_sgemm(ta, tb, M, N, K, 1.0f, A, lda, B, ldb, 0.0f, C, N);

        int n = 0;
        const double start = now_seconds();
        for (;;) {
            const double t0 = now_seconds();
            mcl_ref_sgemm(ta, tb, M, N, K, 1.0f, A, lda, B, ldb, 0.0f, C, N);
            const double t1 = now_seconds();
            times[n++] = t1 - t0;
            if (reps ? n >= reps : (n >= MIN_REPS && t1 - start >= MIN_SECONDS)) break;
            if (n >= MAX_REPS) break;
        }
        mcl_progress_finish();
        qsort(times, (size_t)n, sizeof(double), cmp_double);
        const double flops = 2.0 * (double)M * (double)N * (double)K;
        const double median = n % 2 ? times[n / 2] : 0.5 * (times[n / 2 - 1] + times[n / 2]);
        const double best = times[0] > 0.0 ? flops / times[0] * 1e-9 : 0.0;
        const double med = median > 0.0 ? flops / median * 1e-9 : 0.0;
        if (json)
            printf("%s\n  {\"ta\": %d, \"tb\": %d, \"M\": %lld, \"N\": %lld, \"K\": %lld, "
                   "\"gflops_best\": %.2f, \"gflops_median\": %.2f}",
                   s ? "," : "", ta, tb, (long long)M, (long long)N, (long long)K, best, med);
        else
            printf("%c%c %6lld %6lld %6lld %12.1f %14.1f %7d\n", ta ? 'T' : 'N', tb ? 'T' : 'N',
                   (long long)M, (long long)N, (long long)K, best, med, n);
        fflush(stdout);
        free(A);
        free(B);
        free(C);
    }
    if (json) printf("\n]\n");
    free(times);
    return rc;
}
