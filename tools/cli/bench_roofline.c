/* bench_roofline.c — `metacl bench roofline`: how close the reference backend's heavy ops come
 * to this machine's limits.
 *
 * Once per run it measures the two roofs:
 *   - the FMA peak: each thread runs a short loop of independent fused multiply-add chains
 *     (enough chains to hide the FMA latency, in the vector width -march=native gives), for
 *     1..T threads; GFLOP/s = 2 · FMAs / the thread's own CPU time, summed over the threads,
 *     best of 5 (CPU time, so that other work on a shared machine does not lower the roof);
 *   - the memory bandwidth: the STREAM triad a[i] = b[i] + s·c[i] over three 32 MiB arrays
 *     (far beyond the last-level cache), for 1..T threads; GB/s = 12 bytes per element / time
 *     (STREAM's count: two reads, one write; write-allocate traffic not counted), best of 10.
 * Then, for each heavy op of the workloads (`metacl bench acl|oct|smn|lm`) on one of their
 * shapes, forward and backward (conv2d's backward split into its data and weight gradients), it
 * times the op on the reference backend with T threads (median of at least 3 calls and
 * --min-time seconds, after one warm-up; --clock wall (default) times the call, --clock cpu
 * takes the process's CPU time per call divided by T: robust to other work on the machine at
 * one thread, while at more threads it also counts the threads' waiting) and reports:
 *   flops  the arithmetic of the op, from the shapes (formulas at count() below; multiply-adds
 *          count 2, the transcendental and integer work of pointwise ops is not counted)
 *   bytes  the compulsory memory traffic: every input and output read or written once (an
 *          accumulated gradient read and written), nothing re-read
 *   bound  max(flops / peak_T, bytes / bandwidth_T) (bandwidth_T: the best of 1..T threads):
 *          the time the roofline allows; "compute"
 *          or "memory" says which term it is
 *   frac   bound / measured time: 1 = at the roof. Above 1 for a memory-bound op means its
 *          data stayed in the caches (the bandwidth roof is DRAM's).
 * Nothing here is a test: the numbers are for people (doc/reference-backend.md, "Measuring
 * speed") and come from one run, on whatever else the machine is doing.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "backend.h"
#include "bench_run.h"
#include "cli.h"
#include "hot.h"
#include "progress.h"
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

static double process_cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* GFLOP/s of t threads, each running fma_loop for about 20 ms: each thread's rate over its own
 * CPU time (the time it actually ran, so other work on the machine does not lower it), summed
 * over the threads: the peak of t cores; best of 5. */
static double fma_peak(int t)
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
static double triad_bandwidth(int t)
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

/* ------------------------------------------------------------------------------------------
 * The ops. */
enum { FWD, BWD, BWD_DATA, BWD_WEIGHTS };
static const char *pass_name[] = {"fwd", "bwd", "bwd-data", "bwd-weights"};

typedef struct rcase {
    const char *name; /* the workload the shape comes from */
    const char *op;
    int pass;
    int n_in;
    int ndim[9];
    int64_t shape[9][4];
    float f[2];
    int64_t i[3];
} rcase;

#define CONV4(pass) {"conv4_28 layer 2", "conv2d", pass, 3, {4, 4, 1}, {{800, 32, 14, 14}, {32, 32, 3, 3}, {32}}, {0}, {1, 1}}
/* Conv-4's other layers: the first (one input channel), the third and the 32 x 32 input's second */
#define CONV4_L1(pass) {"conv4_28 layer 1", "conv2d", pass, 3, {4, 4, 1}, {{800, 1, 28, 28}, {32, 1, 3, 3}, {32}}, {0}, {1, 1}}
#define CONV4_L3(pass) {"conv4_28 layer 3", "conv2d", pass, 3, {4, 4, 1}, {{800, 32, 7, 7}, {32, 32, 3, 3}, {32}}, {0}, {1, 1}}
#define CONV4_32(pass) {"conv4_32 layer 2", "conv2d", pass, 3, {4, 4, 1}, {{800, 32, 16, 16}, {32, 32, 3, 3}, {32}}, {0}, {1, 1}}
#define RESNET(pass) {"smn_resnet block 2", "conv2d", pass, 3, {4, 4, 1}, {{16, 24, 16, 16}, {24, 24, 3, 3}, {24}}, {0}, {1, 1}}
#define MATMUL(pass) {"lm FFW up", "matmul", pass, 2, {2, 2}, {{1024, 192}, {192, 768}}, {0}, {0, 0}}
#define SRWM(pass) {"acl srwm", "srwm", pass, 5, {4, 4, 4, 4, 4}, \
    {{16, 16, 160, 16}, {16, 16, 16, 16}, {16, 16, 16, 16}, {16, 16, 16, 16}, {16, 16, 16, 4}}, {0}, {0}}
#define ATTN(pass) {"oct attention C1000", "attn_kv", pass, 5, {3, 3, 3, 3, 3}, \
    {{50, 4, 64}, {50, 1, 64}, {50, 1, 64}, {1000, 1, 64}, {1000, 1, 64}}, {0.125f, 0}, {1000, 0, 2}}
#define RELATTN(pass) {"lm rel_attn", "rel_attn", pass, 5, {4, 4, 4, 4, 3}, \
    {{8, 128, 4, 48}, {8, 128, 4, 48}, {8, 256, 4, 48}, {8, 256, 4, 48}, {256, 4, 48}}, {0.14433757f, 0}, {0}}
#define SMNW(pass) {"smn_wcst write", "smn_write", pass, 9, {2, 1, 2, 2, 1, 2, 1, 2, 1}, \
    {{256, 256}, {16384}, {16384, 2}, {20, 2}, {20}, {20, 20}, {20}, {1, 20}, {1}}, {0.01f, 0}, {0}}
#define IPR(pass) {"conv4_28 layer 1", "inorm_pool_relu", pass, 3, {4, 1, 1}, {{800, 32, 28, 28}, {32}, {32}}, {1e-5f, 0}, {0}}
#define LN(pass) {"lm block", "layer_norm", pass, 3, {2, 1, 1}, {{1024, 192}, {192}, {192}}, {1e-5f, 0}, {0}}
#define DROP(pass) {"conv4_28 layer 2", "dropout", pass, 1, {4}, {{800, 32, 14, 14}}, {0.1f, 0}, {0}}
#define GELU(pass) {"lm FFW", "gelu", pass, 1, {2}, {{1024, 768}}, {0}, {0}}

static const rcase rcases[] = {
    CONV4(FWD),  CONV4(BWD_DATA),  CONV4(BWD_WEIGHTS),  RESNET(FWD), RESNET(BWD_DATA), RESNET(BWD_WEIGHTS),
    CONV4_L1(FWD), CONV4_L1(BWD_WEIGHTS), CONV4_L3(FWD), CONV4_L3(BWD_DATA), CONV4_L3(BWD_WEIGHTS),
    CONV4_32(FWD), CONV4_32(BWD_DATA), CONV4_32(BWD_WEIGHTS),
    MATMUL(FWD), MATMUL(BWD),      SRWM(FWD),           SRWM(BWD),   ATTN(FWD),        ATTN(BWD),
    RELATTN(FWD), RELATTN(BWD),    SMNW(FWD),           SMNW(BWD),   IPR(FWD),         IPR(BWD),
    LN(FWD),     LN(BWD),          DROP(FWD),           DROP(BWD),   GELU(FWD),        GELU(BWD),
};
#define N_RCASES ((int)(sizeof rcases / sizeof rcases[0]))

static double numel(const rcase *c, int k)
{
    double n = 1;
    for (int d = 0; d < c->ndim[k]; d++) n *= (double)c->shape[k][d];
    return n;
}

/* The flops and bytes of one case (F = 4 bytes per float; "r+w" = an accumulated gradient,
 * read and written).
 *  conv2d   x [B,C,H,W], w [O,C,k,k], stride 1, pad p: Ho·Wo outputs per image and channel;
 *           every pass is 2·B·O·Ho·Wo·C·k² flops (one multiply-add per weight per output);
 *           fwd F·(x + w + b + y); bwd-data F·(gy + w + gx r+w); bwd-weights F·(x + gy + gw r+w)
 *  matmul   [M,K]·[K,N]: fwd 2MNK, F·(MK + KN + MN); bwd (both gradients) 4MNK,
 *           F·(MN + MK + KN + 2MK + 2KN)
 *  srwm     n = 3D + 4 columns of the fast weights; per sequence, head and step: the read
 *           x·W (2Dn), the retrieval with q and k (2·2Dn), the rank-1 update (2Dn): fwd 8Dn;
 *           bwd: the gradients of the three products and of the update (2 each) plus the
 *           reversal of the update: 18Dn (approximate). Bytes: fwd F·(7 [B,H,L,D] tensors +
 *           2 [B,H,L,4] + the state in and out); bwd F·(9 [B,H,L,D] + 2 [B,H,L,4] + 3 states)
 *  attn_kv  strictly causal chunk on a full ring: V = S·C + S(S−1)/2 visible (query, key)
 *           pairs per query head; fwd 2·Hq·(Dk + Dv)·V (score and value), bwd 2·Hq·(3Dk +
 *           2Dv)·V (recomputed score, dP, dq, dk, dv); softmax exps not counted.
 *           fwd F·(q + k + v + ring + o + lse); bwd adds go and gq, gk, gv r+w
 *  rel_attn key j visible from query i iff j <= M + i: V = B·H·(S(M + 1) + S(S−1)/2); fwd
 *           2·(2D + Dv)·V (content and position scores, values), bwd 2·(6D + 2Dv)·V.
 *           fwd F·(qc + qp + k + v + r + o + lse); bwd adds go and all five gradients r+w
 *  smn_write m entries through g_phi (2 → H → H → 1): 2H² + 6H flops each (fwd; the copy
 *           of M0 not counted), bwd 3× that (recomputed forward and backpropagation);
 *           fwd F·(2n + 3m), bwd F·(3n + 5m) with n = numel(M0) (phi's few floats not counted)
 *  inorm_pool_relu  N = B·C·H·W: fwd 5N flops (sum, sum of squares, normalize, scale and
 *           shift; the max and relu not counted), F·(N + N/4 y + N/4 argmax + 2BC);
 *           bwd 5N, F·(N x + N/4 gy + N/4 argmax + 2BC + 2N gx r+w)
 *  layer_norm [R,N]: fwd 7RN, F·(2RN + 2R + 2N); bwd 9RN, F·(4RN + 2R + 4N)
 *  dropout  N elements: fwd F·2N (mask drawn, not read), bwd F·3N (gy, gx r+w); 0 flops
 *  gelu     N elements: fwd F·2N, bwd F·4N (x, gy, gx r+w); 0 flops (erf not counted) */
static void count(const rcase *c, double *flops, double *bytes)
{
    const double F = 4.0;
    const int bwd = c->pass != FWD;
    double fl = 0, by = 0;
    if (strcmp(c->op, "conv2d") == 0) {
        const double B = (double)c->shape[0][0], C = (double)c->shape[0][1], O = (double)c->shape[1][0];
        const double k = (double)c->shape[1][2], p = (double)c->i[1];
        const double Ho = (double)c->shape[0][2] + 2 * p - k + 1, Wo = (double)c->shape[0][3] + 2 * p - k + 1;
        const double y = B * O * Ho * Wo;
        fl = 2 * y * C * k * k;
        by = c->pass == FWD        ? F * (numel(c, 0) + numel(c, 1) + numel(c, 2) + y)
             : c->pass == BWD_DATA ? F * (y + numel(c, 1) + 2 * numel(c, 0))
                                   : F * (numel(c, 0) + y + 2 * numel(c, 1));
    } else if (strcmp(c->op, "matmul") == 0) {
        const double M = (double)c->shape[0][0], K = (double)c->shape[0][1], N = (double)c->shape[1][1];
        fl = (bwd ? 4 : 2) * M * N * K;
        by = bwd ? F * (M * N + 3 * M * K + 3 * K * N) : F * (M * K + K * N + M * N);
    } else if (strcmp(c->op, "srwm") == 0) {
        const double B = (double)c->shape[0][0], H = (double)c->shape[0][1], L = (double)c->shape[0][2];
        const double D = (double)c->shape[0][3], n = 3 * D + 4, state = B * H * D * n;
        fl = B * H * L * D * n * (bwd ? 18 : 8);
        by = F * ((bwd ? 9 : 7) * B * H * L * D + 2 * B * H * L * 4 + (bwd ? 3 : 2) * state);
    } else if (strcmp(c->op, "attn_kv") == 0) {
        const double S = (double)c->shape[0][0], Hq = (double)c->shape[0][1], Dk = (double)c->shape[0][2];
        const double Dv = (double)c->shape[2][2], C = (double)c->i[0];
        const double V = S * C + S * (S - 1) / 2;
        fl = 2 * Hq * (bwd ? 3 * Dk + 2 * Dv : Dk + Dv) * V;
        const double qkv = numel(c, 0) + numel(c, 1) + numel(c, 2), o = S * Hq * Dv, lse = S * Hq;
        by = F * (qkv + numel(c, 3) + numel(c, 4) + o + lse + (bwd ? o + 2 * qkv : 0));
    } else if (strcmp(c->op, "rel_attn") == 0) {
        const double B = (double)c->shape[0][0], S = (double)c->shape[0][1], H = (double)c->shape[0][2];
        const double D = (double)c->shape[0][3], T = (double)c->shape[2][1], Dv = (double)c->shape[3][3];
        const double M = T - S, V = B * H * (S * (M + 1) + S * (S - 1) / 2);
        fl = 2 * (bwd ? 6 * D + 2 * Dv : 2 * D + Dv) * V;
        double in = 0;
        for (int k = 0; k < 5; k++) in += numel(c, k);
        const double o = B * S * H * Dv, lse = B * S * H;
        by = F * (in + o + lse + (bwd ? o + 2 * in : 0));
    } else if (strcmp(c->op, "smn_write") == 0) {
        const double n = numel(c, 0), m = numel(c, 1), H = (double)c->shape[3][0];
        fl = (bwd ? 3 : 1) * (2 * H * H + 6 * H) * m;
        by = bwd ? F * (3 * n + 5 * m) : F * (2 * n + 3 * m);
    } else if (strcmp(c->op, "inorm_pool_relu") == 0) {
        const double N = numel(c, 0), BC = (double)c->shape[0][0] * (double)c->shape[0][1];
        fl = 5 * N;
        by = bwd ? F * (N + N / 4 + N / 4 + 2 * BC + 2 * N) : F * (N + N / 4 + N / 4 + 2 * BC);
    } else if (strcmp(c->op, "layer_norm") == 0) {
        const double R = (double)c->shape[0][0], N = (double)c->shape[0][1];
        fl = (bwd ? 9 : 7) * R * N;
        by = bwd ? F * (4 * R * N + 2 * R + 4 * N) : F * (2 * R * N + 2 * R + 2 * N);
    } else if (strcmp(c->op, "dropout") == 0) {
        by = F * (bwd ? 3 : 2) * numel(c, 0);
    } else if (strcmp(c->op, "gelu") == 0) {
        by = F * (bwd ? 4 : 2) * numel(c, 0);
    }
    *flops = fl;
    *bytes = by;
}

/* Which inputs get a gradient in a backward pass. */
static int wants_grad(const rcase *c, int k)
{
    if (c->pass == BWD_DATA) return k == 0;
    if (c->pass == BWD_WEIGHTS) return k == 1;
    if (strcmp(c->op, "attn_kv") == 0) return k < 3;  /* the ring gets none */
    if (strcmp(c->op, "smn_write") == 0) return k != 1; /* nor the indices */
    return 1;
}

/* Median ms of the case's pass (one warm-up call, then at least 3 calls and min_time seconds);
 * NAN on failure (the context's error says why). */
static double time_rcase(mcl_ctx *ctx, const rcase *c, double min_time, int cpu_clock, int T)
{
    mcl_op op = mcl_op_by_name(c->op);
    const mcl_op_info *info = &mcl_op_table[op];
    mcl_op_args a;
    memset(&a, 0, sizeof a);
    a.op = op;
    mcl_tensor *owned[MCL_MAX_IN + 2 * MCL_MAX_OUT];
    int n_owned = 0, ok = 1;
    for (int k = 0; k < c->n_in && ok; k++) {
        mcl_tensor *t;
        if (strcmp(c->op, "smn_write") == 0 && k == 1) { /* distinct indices 0, 4, 8, ... */
            const int64_t m = c->shape[1][0];
            float *h = malloc((size_t)m * sizeof *h);
            t = h ? mcl_tensor_create(ctx, c->ndim[k], c->shape[k]) : NULL;
            for (int64_t j = 0; t && j < m; j++) h[j] = (float)(4 * j);
            ok = t && mcl_tensor_write(t, h, m) == MCL_OK;
            free(h);
        } else {
            t = mcl_bench_rand(ctx, c->ndim[k], c->shape[k], 5, (uint64_t)k, k == 0 ? 1.0f : 0.25f, 0);
            ok = t != NULL;
        }
        if (t) owned[n_owned++] = t;
        a.in[k] = t;
    }
    a.p.f[0] = c->f[0];
    a.p.f[1] = c->f[1];
    for (int j = 0; j < 3; j++) a.p.i[j] = c->i[j];
    a.p.u[0] = 7;
    a.p.u[1] = 1;
    mcl_no_grad_begin(ctx);
    if (ok) ok = mcl_op_run(ctx, &a) == MCL_OK; /* allocates the outputs */
    if (ok && c->pass != FWD) {
        for (int k = 0; k < info->n_diff_out && ok; k++) {
            mcl_tensor *g = mcl_bench_rand(ctx, a.out[k]->ndim, a.out[k]->shape, 6, (uint64_t)k, 0.01f, 0);
            ok = g != NULL;
            if (g) owned[n_owned++] = g;
            a.gout[k] = g;
        }
        for (int k = 0; k < c->n_in && ok; k++) {
            if (!wants_grad(c, k)) continue;
            mcl_tensor *g = mcl_tensor_create(ctx, a.in[k]->ndim, a.in[k]->shape);
            ok = g != NULL;
            if (g) owned[n_owned++] = g;
            a.gin[k] = g;
        }
    }
    double t[256];
    int n = 0;
    const double start = mcl_now_s();
    for (int rep = -1; rep < 256 && ok; rep++) { /* rep -1 = warm-up */
        const double t0 = mcl_now_s(), c0 = process_cpu_s();
        mcl_status s;
        if (c->pass != FWD) {
            s = mcl_op_backward(ctx, &a);
        } else {
            a.out_given = 1; /* reuse the outputs of the first call */
            s = mcl_op_run(ctx, &a);
        }
        if (s == MCL_OK) s = mcl_ctx_finish(ctx);
        ok = s == MCL_OK;
        if (ok && rep >= 0) t[n++] = cpu_clock ? (process_cpu_s() - c0) / T : mcl_now_s() - t0;
        if (n >= 3 && mcl_now_s() - start >= min_time) break;
    }
    mcl_no_grad_end(ctx);
    for (int k = 0; k < n_owned; k++) mcl_tensor_free(owned[k]);
    mcl_ctx_reset(ctx);
    if (!ok || n == 0) return NAN;
    mcl_bench_sort(t, n);
    return 1e3 * t[n / 2];
}

static void shape_text(const rcase *c, char *buf, size_t size)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int d = 0; d < c->ndim[0] && used + 12 < size; d++)
        used += (size_t)snprintf(buf + used, size - used, "%s%lld", d ? "x" : "", (long long)c->shape[0][d]);
}

typedef struct roof_opts {
    char only[64], clock[8];
    int threads, json;
    float min_time;
} roof_opts;

static const mcl_key roof_keys[] = {
    MCL_OPT_INT("threads", 0, roof_opts, threads, 1, 4096, NULL, "N",
                "OpenMP threads of the ops (default: OpenMP's); the roofs are measured at 1..N"),
    MCL_OPT_STR("only", 'o', roof_opts, only, NULL, "OP", "only the cases of that op (conv2d, gelu, ...)"),
    MCL_OPT_FLOAT("min-time", 0, roof_opts, min_time, 1e-3, 60, "0.2", "SECONDS", "seconds per measurement"),
    MCL_OPT_STR("clock", 0, roof_opts, clock, "wall", "wall|cpu",
                "time the ops by the wall clock, or by the process's CPU time / threads"),
    MCL_OPT_FLAG("json", 0, roof_opts, json, "print JSON instead of a table"),
};
static const mcl_cli_cmd roof_cmd = {
    .name = "bench roofline", .synopsis = "[--threads N] [-o OP] [--min-time SECONDS] [--clock wall|cpu] [--json]",
    .about = "The machine's FMA peak and memory bandwidth, and each heavy op's fraction of its roof "
             "on the reference backend.",
    .opts = roof_keys, .n_opts = (int)(sizeof roof_keys / sizeof roof_keys[0])};

int mcl_cli_bench_roofline(int argc, char **argv)
{
    roof_opts o = {.threads = 0};
    mcl_cli_parsed p;
    int prc = mcl_cli_parse(&roof_cmd, argc, argv, &o, &p);
    if (prc != MCL_CLI_GO) return prc;
    const char *only = o.only[0] ? o.only : NULL;
    const int cpu_clock = strcmp(o.clock, "cpu") == 0;
    if (!cpu_clock && strcmp(o.clock, "wall") != 0) {
        fprintf(stderr, "metacl bench roofline: --clock must be wall or cpu (not '%s')\n", o.clock);
        return 2;
    }
    int found = !only;
    for (int c = 0; c < N_RCASES && !found; c++) found = strcmp(rcases[c].op, only) == 0;
    if (!found) {
        fprintf(stderr, "metacl bench roofline: no case of op '%s' (cases: conv2d, matmul, srwm, attn_kv, "
                        "rel_attn, smn_write, inorm_pool_relu, layer_norm, dropout, gelu)\n", only);
        return 2;
    }
#ifdef _OPENMP
    if (o.threads > 0) omp_set_num_threads(o.threads);
    const int T = omp_get_max_threads();
#else
    const int T = 1;
#endif
    if (T > 64) {
        fprintf(stderr, "metacl bench roofline: at most 64 threads (asked for %d)\n", T);
        return 2;
    }
    double peak[65] = {0}, bw[65] = {0};
    mcl_progress_start("bench roofline: FMA peak and STREAM triad", 0);
    for (int t = 1; t <= T; t++) {
        peak[t] = fma_peak(t);
        bw[t] = triad_bandwidth(t);
    }
    mcl_progress_finish();
    if (bw[T] <= 0) {
        fprintf(stderr, "metacl bench roofline: out of memory for the STREAM arrays (3 x 32 MiB)\n");
        return 1;
    }
    /* T threads have at least the bandwidth fewer threads measured (on a shared machine a
     * run with more threads can measure less) */
    double bw_T = 0;
    for (int t = 1; t <= T; t++) bw_T = bw[t] > bw_T ? bw[t] : bw_T;
    mcl_ctx *ctx = NULL;
    int rc = mcl_cli_open_ctx("ref", NULL, &ctx);
    if (rc) return rc;
    if (o.json) {
        printf("{\"bench\":\"roofline\",\"backend\":\"ref\",\"threads\":%d,\"clock\":\"%s\",\"fma_lanes\":%d,\"peak\":[", T,
               cpu_clock ? "cpu" : "wall", FMA_LANES);
        for (int t = 1; t <= T; t++)
            printf("%s{\"threads\":%d,\"gflops\":%.2f,\"gbs\":%.2f}", t > 1 ? "," : "", t, peak[t], bw[t]);
        printf("],\"ops\":[");
    } else {
        printf("roofs (%d-float vectors):", FMA_LANES);
        for (int t = 1; t <= T; t++)
            printf(" %d thread%s: FMA peak %.1f GFLOP/s, STREAM triad %.1f GB/s;", t, t > 1 ? "s" : "", peak[t], bw[t]);
        printf("\nops on the reference backend, %d thread%s, %s clock (frac = roofline time / measured time)\n", T,
               T > 1 ? "s" : "", cpu_clock ? "CPU-time" : "wall");
        printf("%-16s %-12s %-20s %-16s %9s %9s %9s %9s %8s %8s %6s\n", "op", "pass", "workload", "x shape", "MFLOP",
               "MB", "ms", "GFLOP/s", "GB/s", "bound", "frac");
    }
    int first = 1, failed = 0;
    for (int i = 0; i < N_RCASES; i++) {
        const rcase *c = &rcases[i];
        if (only && strcmp(only, c->op) != 0) continue;
        char label[96], shape[64];
        snprintf(label, sizeof label, "bench roofline: %s %s", c->op, pass_name[c->pass]);
        mcl_progress_start(label, 0);
        const double ms = time_rcase(ctx, c, o.min_time, cpu_clock, T);
        mcl_progress_finish();
        if (!(ms > 0)) {
            fprintf(stderr, "bench roofline: %s %s failed: %s\n", c->op, pass_name[c->pass], mcl_ctx_error(ctx));
            mcl_ctx_clear_error(ctx);
            failed = 1;
            continue;
        }
        double flops, bytes;
        count(c, &flops, &bytes);
        const double t_compute = flops / (peak[T] * 1e9), t_memory = bytes / (bw_T * 1e9);
        const int compute = t_compute > t_memory;
        const double frac = (compute ? t_compute : t_memory) / (ms * 1e-3);
        const double gflops = flops / (ms * 1e-3) * 1e-9, gbs = bytes / (ms * 1e-3) * 1e-9;
        shape_text(c, shape, sizeof shape);
        if (o.json)
            printf("%s{\"op\":\"%s\",\"pass\":\"%s\",\"workload\":\"%s\",\"shape\":\"%s\",\"flops\":%.0f,"
                   "\"bytes\":%.0f,\"ms_median\":%.4f,\"gflops\":%.3f,\"gbs\":%.3f,\"bound\":\"%s\",\"fraction\":%.4f}",
                   first ? "" : ",", c->op, pass_name[c->pass], c->name, shape, flops, bytes, ms, gflops, gbs,
                   compute ? "compute" : "memory", frac);
        else
            printf("%-16s %-12s %-20s %-16s %9.1f %9.2f %9.3f %9.2f %8.2f %8s %5.0f%%\n", c->op, pass_name[c->pass],
                   c->name, shape, flops * 1e-6, bytes * 1e-6, ms, gflops, gbs, compute ? "compute" : "memory",
                   100 * frac);
        first = 0;
        fflush(stdout);
    }
    if (o.json) printf("]}\n");
    mcl_ctx_free(ctx);
    return failed ? 1 : 0;
}
