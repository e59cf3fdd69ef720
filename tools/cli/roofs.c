/* roofs.c — the machine's two roofs, measured (roofs.h): the FMA peak and the STREAM triad. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "hot.h"
#include "roofs.h"
#include "util.h"

/* ------------------------------------------------------------------------------------------
 * The FMA roof. FMA_CHAINS independent accumulators of FMA_LANES floats: one vector register
 * each at the widest vector width, and enough of them (10-12) to cover an FMA latency of 4-5
 * cycles on two FMA pipes. */
#if defined(__AVX512F__)
#define FMA_LANES 16
#define FMA_CHAINS 12
#elif defined(__AVX__)
#define FMA_LANES 8
#define FMA_CHAINS 10
#else
#define FMA_LANES 4
#define FMA_CHAINS 8
#endif
#ifdef FP_FAST_FMAF
#define MADD(a, b, c) fmaf(a, b, c)
#else
#define MADD(a, b, c) ((a) * (b) + (c))
#endif

/* acc = acc·a + b, iters times on every lane of every chain; returns the sum (so that the loop
 * is not removed). 2 · FMA_CHAINS · FMA_LANES flops per iteration. */
MCL_HOT static float fma_loop(int64_t iters, float seed)
{
    float acc[FMA_CHAINS][FMA_LANES];
    for (int c = 0; c < FMA_CHAINS; c++)
        for (int l = 0; l < FMA_LANES; l++) acc[c][l] = seed + 1e-3f * (float)(c * FMA_LANES + l);
    const float a = 0.9999999f, b = 1e-7f;
    for (int64_t it = 0; it < iters; it++)
        for (int c = 0; c < FMA_CHAINS; c++) {
            MCL_SIMD
            for (int l = 0; l < FMA_LANES; l++) acc[c][l] = MADD(acc[c][l], a, b);
        }
    float s = 0.0f;
    for (int c = 0; c < FMA_CHAINS; c++)
        for (int l = 0; l < FMA_LANES; l++) s += acc[c][l];
    return s;
}

static volatile float fma_sink;

static double thread_cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* GFLOP/s of t threads, each running fma_loop for about 20 ms: each thread's rate over its own
 * CPU time (the time it actually ran, so other work on the machine does not lower it), summed
 * over the threads: the peak of t cores; best of 5. */
double mcl_roof_fma_peak(int t)
{
    const int64_t iters = 800000;
    double best = 0;
    for (int rep = 0; rep < 5; rep++) {
        double g = 0;
        float s = 0;
#ifdef _OPENMP
#pragma omp parallel num_threads(t) reduction(+ : s, g)
#endif
        {
            const double t0 = thread_cpu_s();
            s += fma_loop(iters, 1.0f);
            g += 2.0 * FMA_CHAINS * FMA_LANES * (double)iters / (thread_cpu_s() - t0) * 1e-9;
        }
        fma_sink = s;
        if (g > best) best = g;
    }
    return best;
}

/* ------------------------------------------------------------------------------------------
 * The bandwidth roof: STREAM's triad. */
#define TRIAD_N ((int64_t)8 << 20) /* floats per array: 32 MiB */

MCL_HOT static void triad(float *a, const float *b, const float *c, float s, int t)
{
#ifdef _OPENMP
#pragma omp parallel for num_threads(t) schedule(static)
#endif
    for (int64_t i = 0; i < TRIAD_N; i++) a[i] = b[i] + s * c[i];
}

/* GB/s of the triad on t threads (wall clock, best of 10), or 0 when the arrays cannot be allocated. */
double mcl_roof_triad(int t)
{
    float *a = malloc((size_t)TRIAD_N * sizeof *a), *b = malloc((size_t)TRIAD_N * sizeof *b),
          *c = malloc((size_t)TRIAD_N * sizeof *c);
    double best = 0;
    if (a && b && c) {
        /* first touch by the threads that use the pages */
#ifdef _OPENMP
#pragma omp parallel for num_threads(t) schedule(static)
#endif
        for (int64_t i = 0; i < TRIAD_N; i++) {
            a[i] = 0.0f;
            b[i] = 1.0f;
            c[i] = 2.0f;
        }
        for (int rep = 0; rep < 10; rep++) {
            double t0 = mcl_now_s();
            triad(a, b, c, 0.5f, t);
            const double dt = mcl_now_s() - t0;
            const double g = 12.0 * (double)TRIAD_N / dt * 1e-9;
            if (g > best) best = g;
        }
    }
    free(a);
    free(b);
    free(c);
    return best;
}

int mcl_roof_fma_lanes(void) { return FMA_LANES; }

int mcl_roofs_measure(int T, double *peak, double *bw, double *peak_T, double *bw_T)
{
    *peak_T = *bw_T = 0;
    for (int t = 1; t <= T; t++) {
        peak[t] = mcl_roof_fma_peak(t);
        bw[t] = mcl_roof_triad(t);
        if (bw[t] > *bw_T) *bw_T = bw[t];
    }
    *peak_T = peak[T];
    return bw[T] > 0 ? 0 : 1;
}
