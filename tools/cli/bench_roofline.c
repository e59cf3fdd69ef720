/* bench_roofline.c — `metacl bench roofline`: how close the reference backend's heavy ops come
 * to this machine's limits.
 *
 * Once per run it measures the two roofs for 1..T threads (roofs.h: the FMA peak, by CPU time,
 * and the STREAM triad's bandwidth).
 * Then, for each heavy op of the workloads (`metacl bench acl|oct|smn|lm`) on one of their
 * shapes, forward and backward (conv2d's backward split into its data and weight gradients), it
 * times the op on the reference backend with T threads (median of at least 3 calls and
 * --min-time seconds, after one warm-up; --clock wall (default) times the call, --clock cpu
 * takes the process's CPU time per call divided by T: robust to other work on the machine at
 * one thread, while at more threads it also counts the threads' waiting) and reports:
 *   flops  the arithmetic of the call, from its arguments (mcl_op_cost_of, src/common/opcost.c:
 *          the formulas of every op, the ones `metacl bench --bound` sums over a workload;
 *          multiply-adds count 2, the transcendental and integer work of pointwise ops is not
 *          counted)
 *   bytes  the compulsory memory traffic: every input and output read or written once (an
 *          accumulated gradient read and written), nothing re-read
 *   bound  max(flops / peak_T, bytes / bandwidth_T) (bandwidth_T: the best of 1..T threads;
 *          mcl_bound_of): the time the roofline allows; "compute" or "memory" says which term
 *          it is
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
#include "opcost.h"
#include "progress.h"
#include "roofs.h"
#include "util.h"

static double process_cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
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
/* the fourth: 3 x 3 planes, 9 pixels an image (a row of the table since 2026-12-02, at its end) */
#define CONV4_L4(pass) {"conv4_28 layer 4", "conv2d", pass, 3, {4, 4, 1}, {{800, 32, 3, 3}, {32, 32, 3, 3}, {32}}, {0}, {1, 1}}
#define CONV4_32(pass) {"conv4_32 layer 2", "conv2d", pass, 3, {4, 4, 1}, {{800, 32, 16, 16}, {32, 32, 3, 3}, {32}}, {0}, {1, 1}}
/* the ACL step's smaller layers: Conv-4 on 32 x 32 images, layers 3 and 4 */
#define CONV4_32L3(pass) {"conv4_32 layer 3", "conv2d", pass, 3, {4, 4, 1}, {{800, 32, 8, 8}, {32, 32, 3, 3}, {32}}, {0}, {1, 1}}
#define CONV4_32L4(pass) {"conv4_32 layer 4", "conv2d", pass, 3, {4, 4, 1}, {{800, 32, 4, 4}, {32, 32, 3, 3}, {32}}, {0}, {1, 1}}
/* the ResNet's blocks (conv2 of each: the block's widest product), 16 images; block 2 first in
 * the table (its rows kept their place when the others were added) */
#define RESNET_B(blk, c, hw, pass) {"smn_resnet block " #blk, "conv2d", pass, 3, {4, 4, 1}, \
    {{16, c, hw, hw}, {c, c, 3, 3}, {c}}, {0}, {1, 1}}
#define RESNET_ALL(blk, c, hw) RESNET_B(blk, c, hw, FWD), RESNET_B(blk, c, hw, BWD_DATA), RESNET_B(blk, c, hw, BWD_WEIGHTS)
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
/* the same with the block's dropout in the op (f1 = p), as Conv-4 trains */
#define IPRD(pass) {"conv4 l1 + dropout", "inorm_pool_relu", pass, 3, {4, 1, 1}, {{800, 32, 28, 28}, {32}, {32}}, {1e-5f, 0.1f}, {0}}
/* the second layer's tail with its dropout: planes of 14 x 14 = 196 values, where the fixed
 * cost per plane weighs */
#define IPRD2(pass) {"conv4 l2 + dropout", "inorm_pool_relu", pass, 3, {4, 1, 1}, {{800, 32, 14, 14}, {32}, {32}}, {1e-5f, 0.1f}, {0}}
/* Conv-4's first layer in one op: the convolution and the tail with its dropout, as Conv-4
 * trains (no input gradient) */
#define CIPR(pass) {"conv4 l1 fused", "conv_inorm_pool_relu", pass, 5, {4, 4, 1, 1, 1}, \
    {{800, 1, 28, 28}, {32, 1, 3, 3}, {32}, {32}, {32}}, {1e-5f, 0.1f}, {0, 1}}
/* the ResNet's blocks' norms (16 images of c channels, hw x hw): instance_norm + relu, and the
 * block's tail (instance_norm, the skip's add, relu, maxpool2d) */
#define INR(blk, c, hw, pass) {"smn_resnet block " #blk, "inorm_relu", pass, 3, {4, 1, 1}, \
    {{16, c, hw, hw}, {c}, {c}}, {1e-5f, 0}, {0}}
#define IAPR(blk, c, hw, pass) {"smn_resnet block " #blk, "inorm_add_pool_relu", pass, 4, {4, 1, 1, 4}, \
    {{16, c, hw, hw}, {c}, {c}, {16, c, hw, hw}}, {1e-5f, 0}, {0}}
#define NORMS(blk, c, hw) INR(blk, c, hw, FWD), INR(blk, c, hw, BWD), IAPR(blk, c, hw, FWD), IAPR(blk, c, hw, BWD)
#define LN(pass) {"lm block", "layer_norm", pass, 3, {2, 1, 1}, {{1024, 192}, {192}, {192}}, {1e-5f, 0}, {0}}
#define DROP(pass) {"conv4_28 layer 2", "dropout", pass, 1, {4}, {{800, 32, 14, 14}}, {0.1f, 0}, {0}}
#define GELU(pass) {"lm FFW", "gelu", pass, 1, {2}, {{1024, 768}}, {0}, {0}}

static const rcase rcases[] = {
    CONV4(FWD),  CONV4(BWD_DATA),  CONV4(BWD_WEIGHTS),  RESNET_ALL(2, 24, 16),
    CONV4_L1(FWD), CONV4_L1(BWD_WEIGHTS), CONV4_L3(FWD), CONV4_L3(BWD_DATA), CONV4_L3(BWD_WEIGHTS),
    CONV4_32(FWD), CONV4_32(BWD_DATA), CONV4_32(BWD_WEIGHTS),
    CONV4_32L3(FWD), CONV4_32L3(BWD_DATA), CONV4_32L3(BWD_WEIGHTS),
    CONV4_32L4(FWD), CONV4_32L4(BWD_DATA), CONV4_32L4(BWD_WEIGHTS),
    MATMUL(FWD), MATMUL(BWD),      SRWM(FWD),           SRWM(BWD),   ATTN(FWD),        ATTN(BWD),
    RELATTN(FWD), RELATTN(BWD),    SMNW(FWD),           SMNW(BWD),   IPR(FWD),         IPR(BWD),
    IPRD(FWD),   IPRD(BWD),        CIPR(FWD),           CIPR(BWD),   IPRD2(FWD),       IPRD2(BWD),
    LN(FWD),     LN(BWD),          DROP(FWD),           DROP(BWD),   GELU(FWD),        GELU(BWD),
    RESNET_ALL(1, 16, 32), RESNET_ALL(3, 32, 8), RESNET_ALL(4, 64, 4),
    NORMS(1, 16, 32), NORMS(2, 24, 16), NORMS(3, 32, 8), NORMS(4, 64, 4),
    CONV4_L4(FWD), CONV4_L4(BWD_DATA), CONV4_L4(BWD_WEIGHTS),
};
#define N_RCASES ((int)(sizeof rcases / sizeof rcases[0]))

/* Which inputs get a gradient in a backward pass. */
static int wants_grad(const rcase *c, int k)
{
    if (c->pass == BWD_DATA) return k == 0;
    if (c->pass == BWD_WEIGHTS) return k == 1;
    if (strcmp(c->op, "attn_kv") == 0) return k < 3;  /* the ring gets none */
    if (strcmp(c->op, "smn_write") == 0) return k != 1; /* nor the indices */
    if (strcmp(c->op, "conv_inorm_pool_relu") == 0) return k != 0; /* a first layer: its input is data */
    return 1;
}

/* Median ms of the case's pass (one warm-up call, then at least 3 calls and min_time seconds);
 * NAN on failure (the context's error says why). *cost: the call's flops and bytes
 * (mcl_op_cost_of, opcost.h: the formulas `metacl bench --bound` sums). */
static double time_rcase(mcl_ctx *ctx, const rcase *c, double min_time, int cpu_clock, int T, mcl_op_cost *cost)
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
    memset(cost, 0, sizeof *cost);
    if (ok) mcl_op_cost_of(&a, c->pass != FWD, cost);
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

/* Whether case c is asked for: its op (only, NULL: any), its workload containing text ("": any),
 * its pass (-1: any) */
static int rcase_selected(const rcase *c, const char *only, const char *text, int pass)
{
    return (!only || strcmp(only, c->op) == 0) && (!text[0] || strstr(c->name, text)) &&
           (pass < 0 || c->pass == pass);
}

typedef struct roof_opts {
    char only[64], clock[8], workload[64], pass[16];
    int threads, json;
    float min_time;
} roof_opts;

static const mcl_key roof_keys[] = {
    MCL_OPT_INT("threads", 0, roof_opts, threads, 1, 4096, NULL, "N",
                "OpenMP threads of the ops (default: OpenMP's); the roofs are measured at 1..N"),
    MCL_OPT_STR("only", 'o', roof_opts, only, NULL, "OP", "only the cases of that op (conv2d, gelu, ...)"),
    MCL_OPT_STR("workload", 'w', roof_opts, workload, NULL, "TEXT",
                "only the cases whose workload contains TEXT (\"resnet block 4\", \"conv4_28\", ...)"),
    MCL_OPT_STR("pass", 0, roof_opts, pass, NULL, "PASS", "only that pass: fwd, bwd, bwd-data or bwd-weights"),
    MCL_OPT_FLOAT("min-time", 0, roof_opts, min_time, 1e-3, 60, "0.2", "SECONDS", "seconds per measurement"),
    MCL_OPT_STR("clock", 0, roof_opts, clock, "wall", "wall|cpu",
                "time the ops by the wall clock, or by the process's CPU time / threads"),
    MCL_OPT_FLAG("json", 0, roof_opts, json, "print JSON instead of a table"),
};
static const mcl_cli_cmd roof_cmd = {
    .name = "bench roofline", .synopsis = "[--threads N] [-o OP] [-w TEXT] [--pass PASS] [--min-time SECONDS] [--clock wall|cpu] [--json]",
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
    int pass = -1;
    for (int k = 0; k < 4 && o.pass[0]; k++)
        if (strcmp(o.pass, pass_name[k]) == 0) pass = k;
    if (o.pass[0] && pass < 0) {
        fprintf(stderr, "metacl bench roofline: --pass must be fwd, bwd, bwd-data or bwd-weights (not '%s')\n",
                o.pass);
        return 2;
    }
    int found = !only;
    for (int c = 0; c < N_RCASES && !found; c++) found = strcmp(rcases[c].op, only) == 0;
    int selected = 0;
    for (int c = 0; c < N_RCASES; c++) selected += rcase_selected(&rcases[c], only, o.workload, pass);
    if (found && !selected) {
        fprintf(stderr, "metacl bench roofline: no case matches%s%s%s%s%s%s (the workloads are in `metacl bench "
                        "roofline`'s table)\n", only ? " op " : "", only ? only : "", o.workload[0] ? ", workload " : "",
                o.workload, pass >= 0 ? ", pass " : "", pass >= 0 ? o.pass : "");
        return 2;
    }
    if (!found) {
        fprintf(stderr, "metacl bench roofline: no case of op '%s' (cases: conv2d, matmul, srwm, attn_kv, "
                        "rel_attn, smn_write, inorm_pool_relu, inorm_relu, inorm_add_pool_relu, layer_norm, "
                        "dropout, gelu)\n", only);
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
    double peak[65] = {0}, bw[65] = {0}, peak_T, bw_T;
    mcl_progress_start("bench roofline: FMA peak and STREAM triad", 0);
    const int no_mem = mcl_roofs_measure(T, peak, bw, &peak_T, &bw_T);
    mcl_progress_finish();
    if (no_mem) {
        fprintf(stderr, "metacl bench roofline: out of memory for the STREAM arrays (3 x 32 MiB)\n");
        return 1;
    }
    mcl_ctx *ctx = NULL;
    int rc = mcl_cli_open_ctx("ref", NULL, &ctx);
    if (rc) return rc;
    if (o.json) {
        printf("{\"bench\":\"roofline\",\"backend\":\"ref\",\"threads\":%d,\"clock\":\"%s\","
               "\"fma_lanes\":%d,\"peak\":[", T,
               cpu_clock ? "cpu" : "wall", mcl_roof_fma_lanes());
        for (int t = 1; t <= T; t++)
            printf("%s{\"threads\":%d,\"gflops\":%.2f,\"gbs\":%.2f}", t > 1 ? "," : "", t, peak[t], bw[t]);
        printf("],\"ops\":[");
    } else {
        printf("roofs (%d-float vectors):", mcl_roof_fma_lanes());
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
        if (!rcase_selected(c, only, o.workload, pass)) continue;
        char label[96], shape[64];
        snprintf(label, sizeof label, "bench roofline: %s %s", c->op, pass_name[c->pass]);
        mcl_progress_start(label, 0);
        mcl_op_cost cost;
        const double ms = time_rcase(ctx, c, o.min_time, cpu_clock, T, &cost);
        mcl_progress_finish();
        if (!(ms > 0)) {
            fprintf(stderr, "bench roofline: %s %s failed: %s\n", c->op, pass_name[c->pass], mcl_ctx_error(ctx));
            mcl_ctx_clear_error(ctx);
            failed = 1;
            continue;
        }
        const double flops = cost.flops, bytes = cost.bytes;
        const mcl_bound_tally roofs = {.gflops = peak_T, .gbs = bw_T};
        int compute;
        const double frac = mcl_bound_of(&roofs, &cost, &compute) / (ms * 1e-3);
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
