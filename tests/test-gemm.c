/* test-gemm.c — correctness and determinism of the reference sgemm (src/ref/gemm.c).
 *
 * Compares mcl_ref_sgemm with a naive triple loop accumulated in double, over many shapes
 * (odd sizes, sizes around the blocking constants, K across several k slices), all four
 * transpose combinations, padded lda/ldb/ldc, several alpha/beta (beta = 0 on a NaN-filled
 * C), K = 0 and alpha = 0. Padding columns of C are guarded: they must not change.
 * Determinism: two calls give identical bits; 1, 2 and 3 OpenMP threads give identical bits;
 * a block of C computed alone equals the same block of the full product; A or B given
 * transposed (same values) gives identical bits (so A read in place, the direct-A path, equals
 * A packed). mcl_ref_sgemm_fresh (a fresh gradient: beta =
 * 1 into a C that reads as zeros, C not read) gives the bits of mcl_ref_sgemm with beta = 1 on a
 * zero-filled C, into a NaN-filled one, on the simple, blocked and threaded paths, the edge
 * tiles and several k slices, with products of exactly -0 among them (stored as +0 both ways).
 * A product computed as its transpose (C^T = op(B)^T op(A)^T) gives the bits of the same values
 * stored so that it is not, at 1, 2 and 3 threads.
 * Finally the comparison itself is checked: a result with one corrupted element must be
 * rejected.
 *
 * Exit status 0 if everything passed, 1 otherwise. Last line: "N passed, N failed".
 */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "ref.h"

#define SEED 20240611u
#define GUARD 12345.0f /* value in the padding columns of C, must survive */

static int n_pass, n_fail;

static void check(int ok, const char *what)
{
    if (ok) {
        n_pass++;
    } else {
        n_fail++;
        printf("FAIL: %s\n", what);
    }
}

/* Small deterministic generator (64-bit LCG, high bits), values in [-1, 1). */
static uint64_t rng_state = SEED;
static float rnd(void)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (float)(rng_state >> 40) * (2.0f / 16777216.0f) - 1.0f;
}

static float *alloc_f(size_t n)
{
    float *p = malloc((n ? n : 1) * sizeof(float));
    if (!p) {
        fprintf(stderr, "test-gemm: out of memory\n");
        exit(1);
    }
    return p;
}

/* A problem instance: op(A) [M,K], op(B) [K,N], C [M,N], all with padded leading dims. */
typedef struct prob {
    int ta, tb;
    int64_t M, N, K, lda, ldb, ldc;
    float alpha, beta;
    float *A, *B, *C0; /* C0: C before the call */
} prob;

static void prob_init(prob *p, int ta, int tb, int64_t M, int64_t N, int64_t K, int64_t pad,
                      float alpha, float beta, int nan_c)
{
    p->ta = ta;
    p->tb = tb;
    p->M = M;
    p->N = N;
    p->K = K;
    p->alpha = alpha;
    p->beta = beta;
    const int64_t arows = ta ? K : M, acols = ta ? M : K;
    const int64_t brows = tb ? N : K, bcols = tb ? K : N;
    p->lda = acols + pad;
    p->ldb = bcols + pad;
    p->ldc = N + pad;
    p->A = alloc_f((size_t)(arows * p->lda));
    p->B = alloc_f((size_t)(brows * p->ldb));
    p->C0 = alloc_f((size_t)(M * p->ldc));
    for (int64_t i = 0; i < arows * p->lda; i++) p->A[i] = rnd();
    for (int64_t i = 0; i < brows * p->ldb; i++) p->B[i] = rnd();
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < p->ldc; j++)
            p->C0[i * p->ldc + j] = j >= N ? GUARD : nan_c ? NAN : rnd();
}

static void prob_free(prob *p)
{
    free(p->A);
    free(p->B);
    free(p->C0);
}

static float op_a(const prob *p, int64_t i, int64_t k)
{
    return p->ta ? p->A[k * p->lda + i] : p->A[i * p->lda + k];
}
static float op_b(const prob *p, int64_t k, int64_t j)
{
    return p->tb ? p->B[j * p->ldb + k] : p->B[k * p->ldb + j];
}

/* Runs mcl_ref_sgemm on a copy of C0 (returned, caller frees). */
static float *run(const prob *p)
{
    float *C = alloc_f((size_t)(p->M * p->ldc));
    memcpy(C, p->C0, sizeof(float) * (size_t)(p->M * p->ldc));
    mcl_ref_sgemm(p->ta, p->tb, p->M, p->N, p->K, p->alpha, p->A, p->lda, p->B, p->ldb, p->beta,
                  C, p->ldc);
    return C;
}

/* Largest normalized error of C against the double-accumulated product:
 *   err(i,j) = |C - ref| / (|alpha| * sum_k |a_ik b_kj| + |beta c0_ij| + FLT_MIN)
 * Returns INFINITY on a NaN mismatch, or if a padding column of C changed. */
static double max_error(const prob *p, const float *C)
{
    double worst = 0.0;
    for (int64_t i = 0; i < p->M; i++) {
        for (int64_t j = p->N; j < p->ldc; j++)
            if (C[i * p->ldc + j] != GUARD) return INFINITY;
        for (int64_t j = 0; j < p->N; j++) {
            double s = 0.0, sa = 0.0;
            if (p->alpha != 0.0f)
                for (int64_t k = 0; k < p->K; k++) {
                    const double t = (double)op_a(p, i, k) * (double)op_b(p, k, j);
                    s += t;
                    sa += fabs(t);
                }
            const double c0 = p->C0[i * p->ldc + j];
            const double ref = (double)p->alpha * s + (p->beta == 0.0f ? 0.0 : p->beta * c0);
            const double scale =
                fabs((double)p->alpha) * sa + (p->beta == 0.0f ? 0.0 : fabs(p->beta * c0)) +
                FLT_MIN;
            const double got = C[i * p->ldc + j];
            if (isnan(got) != isnan(ref)) return INFINITY;
            if (isnan(got)) continue;
            const double e = fabs(got - ref) / scale;
            if (!(e <= worst)) worst = e;
        }
    }
    return worst;
}

/* Tolerance on max_error. Reason: every C element is a chain of K float fmaf() (each one
 * rounding, unit roundoff u = 2^-24) plus one scaling step per k slice, and the worst-case
 * bound of such recursive summation is about (K + slices + 1) * u relative to
 * |alpha| sum |a b| + |beta c| (Higham, Accuracy and Stability, 3.1); twice that is safe. */
static double tolerance(int64_t K)
{
    return (double)(K + K / 256 + 4) * FLT_EPSILON;
}

static int same_bits(const float *x, const float *y, int64_t M, int64_t N, int64_t ldx,
                     int64_t ldy)
{
    for (int64_t i = 0; i < M; i++)
        if (memcmp(x + i * ldx, y + i * ldy, sizeof(float) * (size_t)N)) return 0;
    return 1;
}

static void test_case(int ta, int tb, int64_t M, int64_t N, int64_t K, int64_t pad, float alpha,
                      float beta, int nan_c)
{
    prob p;
    prob_init(&p, ta, tb, M, N, K, pad, alpha, beta, nan_c);
    float *C = run(&p);
    const double e = max_error(&p, C), tol = tolerance(K);
    char what[256];
    snprintf(what, sizeof what,
             "sgemm ta=%d tb=%d M=%lld N=%lld K=%lld pad=%lld alpha=%g beta=%g%s: error %.3g > "
             "tolerance %.3g",
             ta, tb, (long long)M, (long long)N, (long long)K, (long long)pad, alpha, beta,
             nan_c ? " (C was NaN)" : "", e, tol);
    check(e <= tol, what);
    free(C);
    prob_free(&p);
}

/* Two calls, and 1/2/3 threads, give identical bits. */
static void test_determinism(int ta, int tb, int64_t M, int64_t N, int64_t K)
{
    prob p;
    char what[160];
    prob_init(&p, ta, tb, M, N, K, 1, 1.25f, 0.5f, 0);
    float *c1 = run(&p), *c2 = run(&p);
    snprintf(what, sizeof what, "determinism ta=%d tb=%d %lldx%lldx%lld: two calls differ", ta, tb,
             (long long)M, (long long)N, (long long)K);
    check(same_bits(c1, c2, M, p.ldc, p.ldc, p.ldc), what);
    free(c2);
#ifdef _OPENMP
    const int saved = omp_get_max_threads();
    for (int t = 1; t <= 3; t++) {
        omp_set_num_threads(t);
        float *ct = run(&p);
        snprintf(what, sizeof what,
                 "determinism ta=%d tb=%d %lldx%lldx%lld: %d thread(s) differ from %d", ta, tb,
                 (long long)M, (long long)N, (long long)K, t, saved);
        check(same_bits(c1, ct, M, p.ldc, p.ldc, p.ldc), what);
        free(ct);
    }
    omp_set_num_threads(saved);
#endif
    free(c1);
    prob_free(&p);
}

/* A block of C computed alone (sub-matrices of A, B, C via pointer offsets) has the same bits
 * as that block of the full product: the summation order does not depend on M, N or ld*. */
static void test_subblock(int64_t M, int64_t N, int64_t K, int64_t r0, int64_t m, int64_t c0,
                          int64_t n)
{
    prob p;
    char what[160];
    prob_init(&p, 0, 0, M, N, K, 2, 1.0f, 0.75f, 0);
    float *full = run(&p);
    float *part = alloc_f((size_t)(M * p.ldc));
    memcpy(part, p.C0, sizeof(float) * (size_t)(M * p.ldc));
    mcl_ref_sgemm(0, 0, m, n, K, p.alpha, p.A + r0 * p.lda, p.lda, p.B + c0, p.ldb, p.beta,
                  part + r0 * p.ldc + c0, p.ldc);
    snprintf(what, sizeof what,
             "sub-block [%lld:+%lld, %lld:+%lld] of %lldx%lldx%lld differs from the full product",
             (long long)r0, (long long)m, (long long)c0, (long long)n, (long long)M, (long long)N,
             (long long)K);
    check(same_bits(full + r0 * p.ldc + c0, part + r0 * p.ldc + c0, m, n, p.ldc, p.ldc), what);
    free(part);
    free(full);
    prob_free(&p);
}

/* op(A) given as A (transA = 0) or as a stored transpose (transA = 1) holds the same values,
 * so the bits must agree; same for B. */
static void test_transpose_bits(int64_t M, int64_t N, int64_t K)
{
    prob p, q;
    char what[160];
    prob_init(&p, 0, 0, M, N, K, 0, 1.0f, 0.0f, 0);
    prob_init(&q, 1, 1, M, N, K, 3, 1.0f, 0.0f, 0);
    for (int64_t i = 0; i < M; i++)
        for (int64_t k = 0; k < K; k++) q.A[k * q.lda + i] = p.A[i * p.lda + k];
    for (int64_t k = 0; k < K; k++)
        for (int64_t j = 0; j < N; j++) q.B[j * q.ldb + k] = p.B[k * p.ldb + j];
    float *cp = run(&p), *cq = run(&q);
    snprintf(what, sizeof what, "transposed storage changes the bits (%lldx%lldx%lld)",
             (long long)M, (long long)N, (long long)K);
    check(same_bits(cp, cq, M, N, p.ldc, q.ldc), what);
    free(cp);
    free(cq);
    prob_free(&p);
    prob_free(&q);
}

/* A product that sgemm computes as its transpose (gemm.c's swap_pays: transB with at most
 * 64 rows of C, or transA where C^T's register tiles hold fewer padding zeros) against the
 * same values with op(A) = A and op(B) = B stored plainly, which is never swapped: the same
 * bits, C's padding kept, beta = 0 ignoring NaN, and 1, 2 and 3 threads alike. */
static void test_swap_bits(int ta, int tb, int64_t M, int64_t N, int64_t K, float alpha, float beta,
                           int nan_c)
{
    prob p, q;
    char what[200];
    prob_init(&p, ta, tb, M, N, K, 3, alpha, beta, nan_c);
    prob_init(&q, 0, 0, M, N, K, 1, alpha, beta, nan_c);
    for (int64_t i = 0; i < M; i++)
        for (int64_t k = 0; k < K; k++) q.A[i * q.lda + k] = op_a(&p, i, k);
    for (int64_t k = 0; k < K; k++)
        for (int64_t j = 0; j < N; j++) q.B[k * q.ldb + j] = op_b(&p, k, j);
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) q.C0[i * q.ldc + j] = p.C0[i * p.ldc + j];
    float *cq = run(&q);
    const double tol = tolerance(K);
#ifdef _OPENMP
    const int saved = omp_get_max_threads();
    for (int t = 1; t <= 3; t++) {
        omp_set_num_threads(t);
#else
    for (int t = 1; t <= 1; t++) {
#endif
        float *cp = run(&p);
        snprintf(what, sizeof what,
                 "swapped product ta=%d tb=%d %lldx%lldx%lld alpha=%g beta=%g%s, %d thread(s): not the "
                 "bits of the plain one (or error > %.3g)",
                 ta, tb, (long long)M, (long long)N, (long long)K, alpha, beta, nan_c ? " (C was NaN)" : "",
                 t, tol);
        check(same_bits(cp, cq, M, N, p.ldc, q.ldc) && max_error(&p, cp) <= tol, what);
        free(cp);
    }
#ifdef _OPENMP
    omp_set_num_threads(saved);
#endif
    free(cq);
    prob_free(&p);
    prob_free(&q);
}

/* mcl_ref_sgemm_fresh into a NaN-filled C against mcl_ref_sgemm with beta = 1 on zeros: the
 * same bits (its +0 + alpha * sum: a -0 sum becomes +0 either way; row 0 of op(A) is -0 so its
 * products are -0 or +0). Padding columns of C keep their guard. */
static void test_fresh(int ta, int tb, int64_t M, int64_t N, int64_t K)
{
    prob p;
    char what[160];
    prob_init(&p, ta, tb, M, N, K, 2, -1.25f, 1.0f, 0);
    for (int64_t k = 0; k < K; k++) /* op(A) row 0: -0 */
        p.A[ta ? k * p.lda : k] = -0.0f;
    float *want = alloc_f((size_t)(M * p.ldc)), *got = alloc_f((size_t)(M * p.ldc));
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < p.ldc; j++) {
            want[i * p.ldc + j] = j >= N ? GUARD : 0.0f;
            got[i * p.ldc + j] = j >= N ? GUARD : NAN;
        }
    mcl_ref_sgemm(ta, tb, M, N, K, p.alpha, p.A, p.lda, p.B, p.ldb, 1.0f, want, p.ldc);
    mcl_ref_sgemm_fresh(ta, tb, M, N, K, p.alpha, p.A, p.lda, p.B, p.ldb, got, p.ldc);
    snprintf(what, sizeof what, "sgemm_fresh ta=%d tb=%d %lldx%lldx%lld: not the bits of beta = 1 on zeros",
             ta, tb, (long long)M, (long long)N, (long long)K);
    check(same_bits(want, got, M, p.ldc, p.ldc, p.ldc), what);
    free(want);
    free(got);
    prob_free(&p);
}

/* The comparison must catch a wrong result: corrupt one element and expect a failure. */
static void test_catches_corruption(void)
{
    prob p;
    prob_init(&p, 0, 1, 37, 29, 70, 1, 1.0f, 0.0f, 0);
    float *C = run(&p);
    const double tol = tolerance(p.K);
    check(max_error(&p, C) <= tol, "corruption check: the clean result should pass");
    uint32_t bits;
    float *victim = &C[17 * p.ldc + 11];
    memcpy(&bits, victim, sizeof bits);
    bits ^= 1u << 20; /* one mantissa bit: a relative change of 2^-3 */
    memcpy(victim, &bits, sizeof bits);
    check(max_error(&p, C) > tol, "corruption check: a flipped mantissa bit was NOT caught");
    memcpy(&bits, victim, sizeof bits);
    bits ^= 1u << 20;
    memcpy(victim, &bits, sizeof bits);
    C[3 * p.ldc + p.N] = 0.0f; /* a write into the padding */
    check(max_error(&p, C) > tol, "corruption check: a write into C's padding was NOT caught");
    free(C);
    prob_free(&p);
}

int main(void)
{
    printf("test-gemm: seed %u\n", SEED);

    static const int64_t small[] = {1, 5, 7, 13};
    static const float ab[][2] = {{1.0f, 0.0f}, {-1.5f, 0.25f}, {0.5f, 1.0f}};
    int n = 0;
    /* every small shape, every transpose combination, rotating through alpha/beta/padding */
    for (int t = 0; t < 4; t++)
        for (int a = 0; a < 4; a++)
            for (int b = 0; b < 4; b++)
                for (int c = 0; c < 4; c++, n++)
                    test_case(t >> 1, t & 1, small[a], small[b], small[c], n % 3 == 1 ? 3 : 0,
                              ab[n % 3][0], ab[n % 3][1], 0);

    /* larger and awkward shapes: around MR/NR/MC/NC, K over several k slices, M small enough
     * for the in-place B path, large enough for threads */
    static const int64_t shapes[][3] = {
        {64, 64, 64},   {100, 100, 100}, {257, 257, 257}, {257, 13, 100}, {13, 257, 300},
        {100, 1, 257},  {1, 257, 100},   {33, 65, 600},   {16, 1024, 300}, {32, 700, 513},
        {9, 2100, 40},  {300, 40, 9},    {129, 97, 777},  {2, 3, 1000},    {255, 33, 31},
    };
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int t = 0; t < 4; t++) {
            const int k = (int)s + t;
            test_case(t >> 1, t & 1, shapes[s][0], shapes[s][1], shapes[s][2], k % 2 ? 5 : 0,
                      ab[k % 3][0], ab[k % 3][1], 0);
        }

    /* beta = 0 must ignore NaN in C (also on the edges and in the threaded path) */
    test_case(0, 0, 7, 5, 13, 1, 1.0f, 0.0f, 1);
    test_case(1, 0, 13, 100, 257, 0, 2.0f, 0.0f, 1);
    test_case(0, 1, 129, 257, 300, 2, -1.0f, 0.0f, 1);
    test_case(0, 0, 20, 1000, 100, 0, 1.0f, 0.0f, 1);
    /* K = 0 and alpha = 0: C = beta * C */
    test_case(0, 0, 5, 7, 0, 2, 1.0f, 0.5f, 0);
    test_case(1, 1, 13, 13, 0, 0, 1.0f, 0.0f, 1);
    test_case(0, 0, 64, 64, 64, 1, 0.0f, -2.0f, 0);

    /* determinism across calls and thread counts, on the blocked, threaded paths */
    test_determinism(0, 0, 257, 300, 520);
    test_determinism(1, 1, 100, 257, 300);
    test_determinism(0, 0, 16, 1024, 300); /* in-place B */
    test_determinism(0, 1, 2048, 32, 288);
    test_determinism(1, 0, 7, 13, 5);      /* simple path */
    test_determinism(0, 0, 2048, 48, 600); /* in-place A */

    /* order independent of M, N, ld*: blocks computed alone, incl. tiny ones (simple path) */
    test_subblock(257, 300, 520, 0, 5, 0, 7);
    test_subblock(257, 300, 520, 100, 3, 201, 2);
    test_subblock(257, 300, 520, 9, 130, 33, 200);
    test_subblock(64, 2100, 300, 31, 17, 5, 2090);
    test_transpose_bits(129, 97, 300);
    test_transpose_bits(5, 7, 3);
    /* in-place A (at most 8 NR columns, op(A) = A) against packed A (stored transposed): the
     * attention's P · V over three k slices, and a short last strip of rows */
    test_transpose_bits(200, 64, 1050);
    test_transpose_bits(37, 50, 600);
    test_transpose_bits(300, 200, 600); /* in place up to 8 NR columns: the LM's 192 */

    /* a fresh C: simple path, edges, blocked over several k slices, threaded, K = 0 */
    test_fresh(0, 0, 7, 5, 13);
    test_fresh(1, 0, 13, 100, 257);
    test_fresh(0, 1, 129, 257, 700);
    test_fresh(1, 1, 257, 300, 520);
    test_fresh(0, 0, 16, 1024, 300); /* in-place B */
    test_fresh(0, 0, 200, 64, 1050); /* in-place A */
    test_fresh(0, 0, 5, 7, 0);

    /* products computed as their transpose: B in place (the attention's 32 queries against
     * 256 keys; a last short strip of keys; two k slices; a team of threads), and transA with
     * fewer padded tiles (32 x 48 and 32 x 40: a half-empty strip of NR columns otherwise;
     * 64 x 1000 threaded) */
    test_swap_bits(0, 1, 32, 256, 48, 1.0f, 0.0f, 1);
    test_swap_bits(0, 1, 32, 100, 600, -1.5f, 0.25f, 0);
    test_swap_bits(0, 1, 64, 2000, 48, 0.5f, 1.0f, 0);
    test_swap_bits(0, 1, 32, 300, 33, 1.0f, 0.0f, 0);
    test_swap_bits(1, 0, 32, 48, 128, 0.125f, 0.0f, 1);
    test_swap_bits(1, 0, 32, 40, 600, 1.0f, 1.0f, 0);
    test_swap_bits(1, 0, 64, 1000, 300, -1.0f, 0.5f, 0);
    test_fresh(0, 1, 32, 256, 48);
    test_fresh(1, 0, 32, 48, 700);

    test_catches_corruption();

    printf("%d passed, %d failed\n", n_pass, n_fail);
    return n_fail ? 1 : 0;
}
