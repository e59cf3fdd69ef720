/* gemm.c — the reference backend's single-precision GEMM.
 *
 * What it computes (row-major, like everything in metacl):
 *
 *     C[M,N] = alpha * op(A)[M,K] * op(B)[K,N] + beta * C[M,N]
 *
 * op(X) is X or X^T. A is stored [M,K] with row stride lda (or [K,M] if transA), B is stored
 * [K,N] with row stride ldb (or [N,K] if transB), C is [M,N] with row stride ldc.
 * beta == 0 overwrites C without reading it (old NaNs do not leak through). alpha == 0 or
 * K == 0 gives C = beta * C without touching A and B (the BLAS convention).
 *
 * How (the BLIS / GotoBLAS scheme, in plain C):
 *
 *   for jc in N, step NC                         columns of C            (B panel -> L3)
 *     for pc in K, step KC                       a slice of the sum over k
 *       pack B[pc:pc+KC, jc:jc+NC] -> Bp         NR-wide column strips, k-major
 *       for ic in M, step MC                                              (A block -> L2)
 *         pack A[ic:ic+MC, pc:pc+KC] -> Ap       MR-tall row strips, k-major
 *         for jr in NC, step NR                                           (B strip -> L2, L1)
 *           for ir in MC, step MR
 *             micro-kernel: an MR x NR tile of C += alpha * Ap-strip * Bp-strip
 *
 * Packing copies each block into the exact order the micro-kernel reads it, so the kernel
 * streams through contiguous memory whatever lda/ldb/transpose were; that is also where the
 * transposes are handled (the kernel never sees them). Edge strips are zero-padded to MR/NR,
 * so there is only one kernel; the padded rows/columns of the tile are simply not stored.
 *
 * The micro-kernel keeps an MR x NR block of accumulators (16 AVX-512 registers for 8 x 32)
 * and, for every k, broadcasts MR values of A and does MR*NR fused multiply-adds against one
 * NR-wide row of B. It is an ordinary C loop nest over fixed-size arrays; GCC unrolls it,
 * keeps the accumulators in registers and turns fmaf() into vfmadd (see MCL_HOT below).
 *
 * Two shortcuts, both computing the very same bits:
 *   - When op(B) is B (not transposed) and this thread's block of C has at most
 *     DIRECT_B_MAX_ROWS rows, each packed B element would be used only a few times, so the
 *     kernel reads B in place (row stride ldb) instead of packing it (16 x 1024 x 1024: about
 *     1.4x faster). Only full NR-wide strips; the last, narrow one is still packed.
 *   - When op(A) is A (not transposed) and this thread's block of C has at most
 *     DIRECT_A_MAX_COLS columns, each packed A element would be used only a few times
 *     (one NR strip of C per use), so the kernel reads the MR rows of A in place (row stride
 *     lda) instead of packing them: the broadcasts it does per k are MR loads either way.
 *     The attention's P · V (200 x 64 x 1050: packing P was a pass over 840 KB per product),
 *     the LM's 1024 x 192 x 192 products.
 *     Only full MR-tall strips; the last, short one is still packed.
 *   - Some products are computed as their transpose, C^T = op(B)^T · op(A)^T, the register
 *     tiles of C^T stored transposed (8 x 8 blocks in registers, transpose8.h); swap_pays()
 *     decides: when op(B) is B^T, op(A) is A and C has at most SWAP_MAX_ROWS rows (a few
 *     queries against many keys: the attention's Q · K^T), B becomes the "A" of the swapped
 *     product, read in place (the direct-A path above) instead of transposed into packed
 *     strips at every call; when op(A) is A^T and op(B) is B, if the tiles of C^T hold fewer
 *     padding zeros than those of C (C 32 x 48: a 32-wide and a half-empty 16-wide strip of
 *     NR, against six full MR strips). Each element is the same sum: fmaf(a, b, acc) and
 *     fmaf(b, a, acc) are the same correctly rounded value.
 *   - Tiny problems (M*N*K <= SIMPLE_MAX_MNK), and the unlikely case that the packing
 *     buffers cannot be allocated, run gemm_simple(): a plain loop in the same order.
 *
 * Threads (OpenMP): C is cut into a grid of rectangles, one per thread, along MR/NR tile
 * boundaries (choose_grid: balanced tiles, preferring cuts across the longer side); each
 * thread runs the whole blocked algorithm above on its own rectangle, with its own packing
 * buffers. No C element is touched by two threads, so there is no reduction across threads.
 * Under MCL_GEMM_PAR_MIN_FLOPS, or when called inside a parallel region, the calling thread
 * does everything: starting a team would cost more than it saves.
 *
 * Why the result is deterministic: every element c = C[i][j] is computed by exactly this
 * sequence, whichever path, tile, rectangle or thread handles it:
 *
 *     for each slice [p, p+KC) of [0, K), in increasing p:
 *         acc = 0;  for k = p .. min(p+KC, K)-1:  acc = fmaf(op(A)[i][k], op(B)[k][j], acc);
 *         c = (beta' == 0) ? alpha*acc : fmaf(beta', c, alpha*acc)
 *                                      (beta' = beta for the first slice, 1 afterwards)
 *
 * (fmaf is MADD below: a*b + c on CPUs without FMA.) Every step is correctly rounded, and
 * zero padding only feeds exact zeros into padded entries that are never stored. So the
 * bits of C[i][j] depend only on row i of op(A), column j of op(B), K, alpha, beta and the
 * constant KC -- not on the thread count, nor on M, N, lda, ldb, ldc (a block of C computed
 * alone equals the same block of a larger product).
 * This needs IEEE float arithmetic without -ffast-math (which could reorder the sums) and,
 * only for builds without FMA, -ffp-contract=off.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "ref.h"
#include "transpose8.h"

/* ---- blocking constants ------------------------------------------------------------------
 * MR x NR: the register tile (any values give the same bits; only KC matters for rounding).
 *          AVX-512: 8 x 32 floats = 16 zmm accumulators + 2 for the B row; with FMA latency
 *          4 and 2 FMA pipes, 16 independent chains keep both pipes busy. AVX2 (16 ymm
 *          registers): 6 x 16 = 12 ymm accumulators; plain SSE: 4 x 8.
 * KC:      length of one k slice. C is read and written once per slice, and those C misses
 *          are what the kernel cannot hide, so KC is large: the B strip the kernel re-reads
 *          (KC x NR floats, 64 KiB with AVX-512) then lives in L2 rather than L1, which the
 *          kernel does not mind (2 vector loads per 16 FMAs). On the (noisy) test machine
 *          512 was a few % faster than 256 at 1024^3. Changing KC changes the rounding.
 * MC:      rows of the packed A block (about 128 x KC floats = 256 KiB, L2 resident).
 * NC:      columns of the packed B panel (about KC x 2048 floats = 4 MiB, L3 resident).
 * Tuned on an AVX-512 AMD EPYC (L1d 48 KiB, L2 1 MiB per core); the cache sizes are
 * typical of current x86-64 cores. */
#if defined(__AVX512F__)
#define MR 8
#define NR 32
#elif defined(__AVX__) || defined(__aarch64__)
#define MR 6
#define NR 16
#else
#define MR 4 /* 128-bit SSE with 16 registers */
#define NR 8
#endif
#define KC 512
#define MC (128 / MR * MR) /* multiples of MR and NR: only the last strip of C is partial */
#define NC (2048 / NR * NR)

/* A thread's block of C with at most this many rows reads B in place (no packing). */
#define DIRECT_B_MAX_ROWS (4 * MR)
/* A thread's block of C with at most this many columns reads A in place (no packing): each
 * element of A then serves at most 8 NR strips of C (the LM's 192-wide products). Was 2 NR
 * until 2026-12-02; 8 NR measured (bench gemm, alternated builds, 6 rounds at 1 and at 2
 * threads; doc/bench-runs/2026-12-02-gemm-swap/): 256 x 256 x 256 1.04 [1.02, 1.07] and 1.09
 * [1.07, 1.11] faster, 2560 x 256 x 256 a tie and 1.04 [1.03, 1.06], the other shapes ties or
 * (two threads, 50 x 1024 x 256) 1.02 [1.01, 1.04] faster. */
#define DIRECT_A_MAX_COLS (8 * NR)
/* At most this many rows of C against a transposed B: computed as C^T (swap_pays). */
#define SWAP_MAX_ROWS (2 * NR)
/* Below this many elementary products (M*N*K) the plain loop wins. */
#define SIMPLE_MAX_MNK 256
/* Below this many flops (2*M*N*K) stay on one thread. */
#define MCL_GEMM_PAR_MIN_FLOPS 1.0e6

/* Compiler help for the hot loops, with no effect on the results:
 *  - MCL_HOT compiles a function at -O3. At -O2 GCC does not fully unroll the micro-kernel's
 *    MR loop, so the accumulator array stays in memory (a load and a store per FMA, ~3x
 *    slower); at -O3 it unrolls it and keeps all MR*NR accumulators in vector registers. It
 *    also vectorizes the packing loops (~5x faster for A).
 *  - MCL_SIMD (#pragma omp simd) on the NR loops tells GCC which loop to vectorize: left to
 *    its cost model, GCC 12 sometimes vectorizes the MR loop instead (or interchanges the
 *    loops) and the kernel runs 5-30x slower (seen with NR = 16).
 * Neither changes semantics: every lane does its own MADD, rounded exactly as in scalar code. */
/* MCL_HOT and MCL_SIMD: ref.h. */

/* One multiply-add of the sums. Where the CPU has FMA (FP_FAST_FMAF: x86-64 with -march
 * including FMA, as configure's -march=native gives on any recent CPU; aarch64) it is fmaf():
 * one rounding, one instruction. Without it fmaf() is a slow library call (~100x slower), so
 * such builds use a*b + c (two roundings): still deterministic, but with different last bits
 * than FMA builds. (-ffp-contract=off keeps a*b + c from being fused behind our back.) */
#ifdef FP_FAST_FMAF
#define MADD(a, b, c) fmaf(a, b, c)
#else
#define MADD(a, b, c) ((a) * (b) + (c))
#endif

/* op(A)[i][k] and op(B)[k][j] for the simple paths. */
static inline float elem_a(int transA, const float *A, int64_t lda, int64_t i, int64_t k)
{
    return transA ? A[k * lda + i] : A[i * lda + k];
}
static inline float elem_b(int transB, const float *B, int64_t ldb, int64_t k, int64_t j)
{
    return transB ? B[j * ldb + k] : B[k * ldb + j];
}

/* The final step for one C element and one k slice (see the header comment). */
static inline float update(float acc, float c, float alpha, float beta)
{
    return beta == 0.0f ? alpha * acc : MADD(beta, c, alpha * acc);
}

/* ---- micro-kernel -------------------------------------------------------------------------
 * One MR x NR tile:  C[i][j] = update(sum_{k<kc} a[k*MR + i] * b[k*ldbp + j], C[i][j])
 * with the sum done by MADD (fmaf) in increasing k, starting from 0.
 * a: packed A strip (MR floats per k). b: NR consecutive floats per k, rows ldbp apart
 * (ldbp = NR for a packed strip, ldb when B is read in place). c: the tile, rows ldc apart. */

/* The tile's sums into C (update(), or 0 + alpha * acc into a C that reads as zeros). */
static inline void tile_store_rows(float ab[MR][NR], float alpha, float beta, int zc, float *restrict c,
                                   int64_t ldc)
{
    if (zc) { /* C is zeros, not read: update(acc, 0, alpha, 1) = 0 + alpha * acc */
        for (int i = 0; i < MR; i++)
            MCL_SIMD for (int j = 0; j < NR; j++) c[i * ldc + j] = 0.0f + alpha * ab[i][j];
    } else if (beta == 0.0f) {
        for (int i = 0; i < MR; i++)
            MCL_SIMD for (int j = 0; j < NR; j++) c[i * ldc + j] = alpha * ab[i][j];
    } else {
        for (int i = 0; i < MR; i++)
            MCL_SIMD for (int j = 0; j < NR; j++)
                c[i * ldc + j] = MADD(beta, c[i * ldc + j], alpha * ab[i][j]);
    }
}

/* The same, into a C stored transposed (ct, see the header): element (i, j) of the tile at
 * c[j*ldc + i]. With MR = 8 each 8 x 8 block goes through registers (transpose8); the values
 * are those tile_store_rows computes, element for element. */
static inline void tile_store_cols(float ab[MR][NR], float alpha, float beta, int zc, float *restrict c,
                                   int64_t ldc)
{
    float v[MR][NR];
    if (beta != 0.0f && !zc) { /* C read: its block transposed into v first */
#if MR == 8 && NR % 8 == 0
        for (int q = 0; q < NR; q += 8) transpose8(c + q * ldc, ldc, &v[0][q], NR);
#else
        for (int i = 0; i < MR; i++)
            for (int j = 0; j < NR; j++) v[i][j] = c[j * ldc + i];
#endif
    }
    tile_store_rows(ab, alpha, beta, zc, &v[0][0], NR);
#if MR == 8 && NR % 8 == 0
    for (int q = 0; q < NR; q += 8) transpose8(&v[0][q], NR, c + q * ldc, ldc);
#else
    for (int i = 0; i < MR; i++)
        for (int j = 0; j < NR; j++) c[j * ldc + i] = v[i][j];
#endif
}

static inline void tile_store(float ab[MR][NR], float alpha, float beta, int zc, int ct, float *restrict c,
                              int64_t ldc)
{
    if (ct)
        tile_store_cols(ab, alpha, beta, zc, c, ldc);
    else
        tile_store_rows(ab, alpha, beta, zc, c, ldc);
}

MCL_HOT static void micro_kernel(int64_t kc, const float *restrict a, const float *restrict b,
                                 int64_t ldbp, float alpha, float beta, int zc, int ct,
                                 float *restrict c, int64_t ldc)
{
    float ab[MR][NR];
    for (int i = 0; i < MR; i++)
        for (int j = 0; j < NR; j++) ab[i][j] = 0.0f;

    for (int64_t k = 0; k < kc; k++) {
        for (int i = 0; i < MR; i++) {
            const float ai = a[i];
            MCL_SIMD for (int j = 0; j < NR; j++) ab[i][j] = MADD(ai, b[j], ab[i][j]);
        }
        a += MR;
        b += ldbp;
    }
    tile_store(ab, alpha, beta, zc, ct, c, ldc);
}

/* The same tile with A read in place: row i of the strip at a + i*lda (the direct-A path).
 * The same MADD sequence per element as micro_kernel's (the same bits). */
MCL_HOT static void micro_kernel_rows(int64_t kc, const float *restrict a, int64_t lda,
                                      const float *restrict b, int64_t ldbp, float alpha,
                                      float beta, int zc, int ct, float *restrict c, int64_t ldc)
{
    const float *ar[MR];
    for (int i = 0; i < MR; i++) ar[i] = a + i * lda;
    float ab[MR][NR];
    for (int i = 0; i < MR; i++)
        for (int j = 0; j < NR; j++) ab[i][j] = 0.0f;

    for (int64_t k = 0; k < kc; k++) {
        for (int i = 0; i < MR; i++) {
            const float ai = ar[i][k];
            MCL_SIMD for (int j = 0; j < NR; j++) ab[i][j] = MADD(ai, b[j], ab[i][j]);
        }
        b += ldbp;
    }
    tile_store(ab, alpha, beta, zc, ct, c, ldc);
}

/* A tile at the bottom or right edge of C (mr < MR or nr < NR): run the kernel on a full-size
 * copy of the tile and store back the part that exists. lda: A's row stride when A is read in
 * place, 0 for a packed strip. ct: C stored transposed (element (i, j) at c[j*ldc + i]). */
static void edge_tile(int64_t kc, const float *a, int64_t lda, const float *b, int64_t ldbp, float alpha,
                      float beta, int zc, int ct, float *c, int64_t ldc, int64_t mr, int64_t nr)
{
    const int64_t si = ct ? 1 : ldc, sj = ct ? ldc : 1; /* strides of i and j in c */
    float t[MR * NR] = {0.0f};
    if (beta != 0.0f && !zc) /* beta == 0 or zc: C is not read (it may be uninitialized) */
        for (int64_t i = 0; i < mr; i++)
            for (int64_t j = 0; j < nr; j++) t[i * NR + j] = c[i * si + j * sj];
    if (lda) /* A in place (a full strip: mr == MR) */
        micro_kernel_rows(kc, a, lda, b, ldbp, alpha, beta, zc, 0, t, NR);
    else
        micro_kernel(kc, a, b, ldbp, alpha, beta, zc, 0, t, NR);
    for (int64_t i = 0; i < mr; i++)
        for (int64_t j = 0; j < nr; j++) c[i * si + j * sj] = t[i * NR + j];
}

/* ---- packing ------------------------------------------------------------------------------
 * Packing is a transpose-and-copy; MCL_HOT (-O3) lets GCC vectorize the fixed-size inner
 * loops (about 5x faster than -O2 for the A strips). */

/* Ap <- rows [i0, i0+mc) x k [p0, p0+kc) of op(A), as ceil(mc/MR) strips of kc x MR
 * (strip s, element (i,k) at Ap[s*kc*MR + k*MR + i]); rows past mc are zero. */
MCL_HOT static void pack_a(int transA, const float *A, int64_t lda, int64_t i0, int64_t mc,
                           int64_t p0, int64_t kc, float *restrict Ap)
{
    for (int64_t s = 0; s < mc; s += MR, Ap += kc * MR) {
        const int64_t mr = mc - s < MR ? mc - s : MR;
        if (!transA) {
            /* op(A)[i][k] = A[i*lda + k] */
            const float *a = A + (i0 + s) * lda + p0;
            if (mr == MR) {
                int64_t k = 0;
#if MR == 8 /* 8 x 8 blocks in registers (transpose8.h) */
                for (; k + 8 <= kc; k += 8) transpose8(a + k, lda, Ap + k * MR, MR);
#endif
                for (; k < kc; k++)
                    for (int i = 0; i < MR; i++) Ap[k * MR + i] = a[i * lda + k];
            } else {
                for (int64_t k = 0; k < kc; k++)
                    for (int i = 0; i < MR; i++) Ap[k * MR + i] = i < mr ? a[i * lda + k] : 0.0f;
            }
        } else {
            /* op(A)[i][k] = A[k*lda + i]: for each k the MR values are contiguous */
            const float *a = A + p0 * lda + i0 + s;
            if (mr == MR) /* a constant size: inlined vector moves */
                for (int64_t k = 0; k < kc; k++) memcpy(Ap + k * MR, a + k * lda, MR * sizeof(float));
            else
                for (int64_t k = 0; k < kc; k++)
                    for (int i = 0; i < MR; i++) Ap[k * MR + i] = i < mr ? a[k * lda + i] : 0.0f;
        }
    }
}

/* Bp <- k [p0, p0+kc) x columns [j0, j0+nc) of op(B), as ceil(nc/NR) strips of kc x NR
 * (strip s, element (k,j) at Bp[s*kc*NR + k*NR + j]); columns past nc are zero. */
MCL_HOT static void pack_b(int transB, const float *B, int64_t ldb, int64_t p0, int64_t kc,
                           int64_t j0, int64_t nc, float *restrict Bp)
{
    for (int64_t s = 0; s < nc; s += NR, Bp += kc * NR) {
        const int64_t nr = nc - s < NR ? nc - s : NR;
        if (!transB) {
            /* op(B)[k][j] = B[k*ldb + j]: a row copy */
            const float *b = B + p0 * ldb + j0 + s;
            for (int64_t k = 0; k < kc; k++)
                for (int j = 0; j < NR; j++) Bp[k * NR + j] = j < nr ? b[k * ldb + j] : 0.0f;
        } else {
            /* op(B)[k][j] = B[j*ldb + k] */
            const float *b = B + (j0 + s) * ldb + p0;
            if (nr == NR) {
                int64_t k = 0;
#if NR % 8 == 0 /* 8 x 8 blocks in registers (transpose8.h) */
                for (; k + 8 <= kc; k += 8)
                    for (int j = 0; j < NR; j += 8) transpose8(b + j * ldb + k, ldb, Bp + k * NR + j, NR);
#endif
                for (; k < kc; k++)
                    for (int j = 0; j < NR; j++) Bp[k * NR + j] = b[j * ldb + k];
            } else {
                for (int64_t k = 0; k < kc; k++)
                    for (int j = 0; j < NR; j++) Bp[k * NR + j] = j < nr ? b[j * ldb + k] : 0.0f;
            }
        }
    }
}

/* ---- one rectangle of C, on one thread ---------------------------------------------------- */

typedef struct gemm_args {
    int transA, transB;
    int64_t M, N, K;
    float alpha, beta;
    int zero_c; /* C reads as zeros (mcl_ref_sgemm_fresh): beta = 1 into zeros, C not read */
    int ct;     /* C stored transposed: element (i, j) at C[j*ldc + i] (sgemm's swap) */
    const float *A;
    int64_t lda;
    const float *B;
    int64_t ldb;
    float *C;
    int64_t ldc;
} gemm_args;

/* Element (i, j) of C (stored transposed when g->ct). */
static inline float *c_at(const gemm_args *g, int64_t i, int64_t j)
{
    return g->ct ? g->C + j * g->ldc + i : g->C + i * g->ldc + j;
}

/* Rows [m0,m1) x columns [n0,n1) of C with a plain loop, in the documented order. */
static void gemm_simple(const gemm_args *g, int64_t m0, int64_t m1, int64_t n0, int64_t n1)
{
    for (int64_t i = m0; i < m1; i++) {
        for (int64_t j = n0; j < n1; j++) {
            float c = g->beta == 0.0f || g->zero_c ? 0.0f : *c_at(g, i, j);
            for (int64_t p = 0; p < g->K; p += KC) {
                const int64_t pend = p + KC < g->K ? p + KC : g->K;
                float acc = 0.0f;
                for (int64_t k = p; k < pend; k++)
                    acc = MADD(elem_a(g->transA, g->A, g->lda, i, k),
                               elem_b(g->transB, g->B, g->ldb, k, j), acc);
                c = update(acc, c, g->alpha, p == 0 ? g->beta : 1.0f);
            }
            *c_at(g, i, j) = c;
        }
    }
}

static float *alloc_floats(size_t n)
{
    /* aligned_alloc wants a size that is a multiple of the alignment */
    size_t bytes = (n * sizeof(float) + 63) & ~(size_t)63;
    return aligned_alloc(64, bytes ? bytes : 64);
}

/* Rows [m0,m1) x columns [n0,n1) of C with the blocked algorithm (header comment). */
static void gemm_blocked(const gemm_args *g, int64_t m0, int64_t m1, int64_t n0, int64_t n1)
{
    const int64_t K = g->K;
    const int direct_b = !g->transB && m1 - m0 <= DIRECT_B_MAX_ROWS;
    const int direct_a = !g->transA && n1 - n0 <= DIRECT_A_MAX_COLS;
    const int64_t kc_max = K < KC ? K : KC;
    const int64_t mc_max = m1 - m0 < MC ? (m1 - m0 + MR - 1) / MR * MR : MC;
    const int64_t nc_max = n1 - n0 < NC ? (n1 - n0 + NR - 1) / NR * NR : NC;
    /* in direct mode only the last, narrow strip is packed */
    float *Ap = alloc_floats((size_t)((direct_a ? MR : mc_max) * kc_max)); /* direct A: the short strip */
    float *Bp = alloc_floats((size_t)(kc_max * (direct_b ? NR : nc_max)));
    if (!Ap || !Bp) {
        free(Ap);
        free(Bp);
        gemm_simple(g, m0, m1, n0, n1);
        return;
    }
    for (int64_t jc = n0; jc < n1; jc += NC) {
        const int64_t nc = n1 - jc < NC ? n1 - jc : NC;
        for (int64_t pc = 0; pc < K; pc += KC) {
            const int64_t kc = K - pc < KC ? K - pc : KC;
            const float beta = pc == 0 ? g->beta : 1.0f;
            const int zc = pc == 0 && g->zero_c;
            if (!direct_b) {
                pack_b(g->transB, g->B, g->ldb, pc, kc, jc, nc, Bp);
            } else if (nc % NR) {
                const int64_t full = nc - nc % NR;
                pack_b(0, g->B, g->ldb, pc, kc, jc + full, nc - full, Bp);
            }
            for (int64_t ic = m0; ic < m1; ic += MC) {
                const int64_t mc = m1 - ic < MC ? m1 - ic : MC;
                const int64_t mfull = direct_a ? mc - mc % MR : 0; /* rows read in place */
                if (mfull < mc) pack_a(g->transA, g->A, g->lda, ic + mfull, mc - mfull, pc, kc, Ap);
                for (int64_t jr = 0; jr < nc; jr += NR) {
                    const int64_t nr = nc - jr < NR ? nc - jr : NR;
                    const float *b;
                    int64_t ldbp;
                    if (!direct_b) {
                        b = Bp + jr * kc; /* strip jr/NR of kc*NR floats */
                        ldbp = NR;
                    } else if (nr == NR) {
                        b = g->B + pc * g->ldb + jc + jr;
                        ldbp = g->ldb;
                    } else {
                        b = Bp;
                        ldbp = NR;
                    }
                    for (int64_t ir = 0; ir < mc; ir += MR) {
                        const int64_t mr = mc - ir < MR ? mc - ir : MR;
                        const int rows = ir < mfull; /* this strip of A in place */
                        const float *a = rows ? g->A + (ic + ir) * g->lda + pc : Ap + (ir - mfull) * kc;
                        const int64_t lda = rows ? g->lda : 0;
                        float *c = c_at(g, ic + ir, jc + jr);
                        if (mr == MR && nr == NR && rows)
                            micro_kernel_rows(kc, a, lda, b, ldbp, g->alpha, beta, zc, g->ct, c, g->ldc);
                        else if (mr == MR && nr == NR)
                            micro_kernel(kc, a, b, ldbp, g->alpha, beta, zc, g->ct, c, g->ldc);
                        else
                            edge_tile(kc, a, lda, b, ldbp, g->alpha, beta, zc, g->ct, c, g->ldc, mr, nr);
                    }
                }
            }
        }
    }
    free(Ap);
    free(Bp);
}

/* ---- splitting C between threads ---------------------------------------------------------- */
#ifdef _OPENMP

/* Choose a tm x tn grid (tm*tn = nt) of rectangles: least work per thread (in MR x NR tiles),
 * plus a packing term that favours cutting the longer side (each thread packs its rows of A
 * and its columns of B). */
static void choose_grid(int nt, int64_t M, int64_t N, int *tm_out, int *tn_out)
{
    const int64_t mt = (M + MR - 1) / MR, ntl = (N + NR - 1) / NR;
    double best = -1.0;
    for (int tm = 1; tm <= nt; tm++) {
        if (nt % tm) continue;
        const int tn = nt / tm;
        const int64_t tiles_m = (mt + tm - 1) / tm, tiles_n = (ntl + tn - 1) / tn;
        const double cost = (double)tiles_m * tiles_n * (MR * NR) +
                            8.0 * (double)(tiles_m * MR + tiles_n * NR);
        if (best < 0.0 || cost < best) {
            best = cost;
            *tm_out = tm;
            *tn_out = tn;
        }
    }
}

/* Thread t of a tm x tn grid gets this rectangle (cut along tile boundaries; may be empty). */
static void thread_rect(const gemm_args *g, int t, int tm, int tn, int64_t *m0, int64_t *m1,
                        int64_t *n0, int64_t *n1)
{
    const int64_t mt = (g->M + MR - 1) / MR, ntl = (g->N + NR - 1) / NR;
    const int r = t / tn, s = t % tn;
    *m0 = mt * r / tm * MR;
    *m1 = mt * (r + 1) / tm * MR;
    *n0 = ntl * s / tn * NR;
    *n1 = ntl * (s + 1) / tn * NR;
    if (*m1 > g->M) *m1 = g->M;
    if (*n1 > g->N) *n1 = g->N;
}
#endif /* _OPENMP */

/* C = beta * C (alpha == 0 or K == 0). */
static void scale_c(int64_t M, int64_t N, float beta, float *C, int64_t ldc)
{
    for (int64_t i = 0; i < M; i++) {
        float *c = C + i * ldc;
        if (beta == 0.0f)
            memset(c, 0, (size_t)N * sizeof(float));
        else if (beta != 1.0f)
            for (int64_t j = 0; j < N; j++) c[j] *= beta;
    }
}

/* n rounded up to a multiple of m */
static int64_t pad_to(int64_t n, int64_t m) { return (n + m - 1) / m * m; }

/* Whether C = op(A) op(B) is computed as C^T = op(B)^T op(A)^T (header comment), never with
 * more padding zeros in the register tiles than C's own: swapped without that condition, 50 x
 * 1024 x 256 (transB), whose tiles of C^T are a seventh larger, took about 1.4 times as long
 * and transA 24 x 48 x 128 (the same tile area either way) a little longer (a few readings);
 * op(A) = A, op(B) = B showed no gain either way: not swapped. Kept (bench gemm, 8 alternated rounds, one
 * thread; doc/reference-backend.md): 32 x 256 x 48 (transB) 1.08 [1.02, 1.15] faster, 32 x 48
 * x 128 (transA) 1.15 [1.08, 1.23]. */
static int swap_pays(int transA, int transB, int64_t M, int64_t N)
{
    const int64_t area = pad_to(M, MR) * pad_to(N, NR), area_t = pad_to(N, MR) * pad_to(M, NR);
    if (!transA && transB) /* B in place as the swapped product's A */
        return M <= SWAP_MAX_ROWS && N > M && area_t <= area;
    if (transA && !transB) /* fewer padded elements in the register tiles */
        return area_t < area;
    return 0;
}

/* mcl_ref_sgemm (zero_c = 0) and mcl_ref_sgemm_fresh (zero_c = 1, beta = 1) */
static void sgemm(int transA, int transB, int64_t M, int64_t N, int64_t K, float alpha,
                  const float *A, int64_t lda, const float *B, int64_t ldb, float beta, int zero_c,
                  float *C, int64_t ldc)
{
    if (M <= 0 || N <= 0) return;
    if (K <= 0 || alpha == 0.0f) {
        scale_c(M, N, zero_c ? 0.0f : beta, C, ldc);
        return;
    }
    gemm_args g = {transA, transB, M, N, K, alpha, beta, zero_c, 0, A, lda, B, ldb, C, ldc};
    if ((double)M * (double)N * (double)K <= SIMPLE_MAX_MNK) {
        gemm_simple(&g, 0, M, 0, N);
        return;
    }
    /* C^T = op(B)^T · op(A)^T where that is cheaper (header comment); from here on g.M x g.N
     * is the product computed */
    if (swap_pays(transA, transB, M, N))
        g = (gemm_args){!transB, !transA, N, M, K, alpha, beta, zero_c, 1, B, ldb, A, lda, C, ldc};

#ifdef _OPENMP
    const int64_t tiles = ((g.M + MR - 1) / MR) * ((g.N + NR - 1) / NR);
    int want = 1;
    if (2.0 * (double)M * (double)N * (double)K >= MCL_GEMM_PAR_MIN_FLOPS && !omp_in_parallel())
        want = omp_get_max_threads();
    if (want > tiles) want = (int)tiles;
    if (want > 1) {
#pragma omp parallel num_threads(want)
        {
            /* the team may be smaller than asked: split by its real size */
            const int nt = omp_get_num_threads(), t = omp_get_thread_num();
            int tm = 1, tn = 1;
            int64_t m0, m1, n0, n1;
            choose_grid(nt, g.M, g.N, &tm, &tn);
            thread_rect(&g, t, tm, tn, &m0, &m1, &n0, &n1);
            if (m0 < m1 && n0 < n1) gemm_blocked(&g, m0, m1, n0, n1);
        }
        return;
    }
#endif
    gemm_blocked(&g, 0, g.M, 0, g.N);
}

void mcl_ref_sgemm(int transA, int transB, int64_t M, int64_t N, int64_t K, float alpha,
                   const float *A, int64_t lda, const float *B, int64_t ldb, float beta,
                   float *C, int64_t ldc)
{
    sgemm(transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, 0, C, ldc);
}

void mcl_ref_sgemm_acc(int fresh, int transA, int transB, int64_t M, int64_t N, int64_t K,
                       float alpha, const float *A, int64_t lda, const float *B, int64_t ldb,
                       float *C, int64_t ldc)
{
    sgemm(transA, transB, M, N, K, alpha, A, lda, B, ldb, 1.0f, fresh, C, ldc);
}

void mcl_ref_sgemm_fresh(int transA, int transB, int64_t M, int64_t N, int64_t K, float alpha,
                         const float *A, int64_t lda, const float *B, int64_t ldb, float *C,
                         int64_t ldc)
{
    sgemm(transA, transB, M, N, K, alpha, A, lda, B, ldb, 1.0f, 1, C, ldc);
}
