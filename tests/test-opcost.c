/* test-opcost.c — the per-call costs of src/common/opcost.c and the roofline tally.
 *
 *   1. coverage: every op of ops.def has a cost formula (the table is generated from ops.def,
 *      so a missing cost function does not even compile; this checks that each entry is filled
 *      and its text is not empty), and an op id out of range costs 0;
 *   2. the formulas on known shapes against hand-computed values: matmul 2·M·N·K (batched,
 *      transposed, each gradient), conv2d 2·|y|·C·k² (padding and stride through the output's
 *      shape, each gradient's pass), attn_kv's visible pairs (ring in use, the masks), rel_attn's
 *      (memory, window), layer_norm, a pointwise op, smn_write in place and not;
 *   3. the tally (mcl_ctx_bound_begin): a matmul, sum and backward on the reference backend add
 *      exactly the calls' costs, bound = Σ max(flops / peak, bytes / bandwidth) with the roof
 *      each call is under, and nothing is tallied after mcl_ctx_bound_end;
 *   4. the comparison can fail: a deliberately wrong flop count is rejected by the same check.
 * No timing here (`metacl bench --bound` is exercised by tests/test-bench-bound.sh).
 * Exit status 0 if everything passed, 1 otherwise; the last line is "N passed, N failed".
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "opcost.h"
#include "ops.h"
#include "testutil.h"

#define SEED 30u /* fixed; the checks use no random numbers beyond the tensors' values */

static mcl_tensor *owned[64];
static int n_owned;

static mcl_tensor *T4(mcl_ctx *ctx, int ndim, int64_t d0, int64_t d1, int64_t d2, int64_t d3)
{
    const int64_t s[4] = {d0, d1, d2, d3};
    mcl_tensor *t = mcl_tensor_create(ctx, ndim, s);
    if (t && n_owned < 64) owned[n_owned++] = t;
    return t;
}

static void free_owned(void)
{
    while (n_owned > 0) mcl_tensor_free(owned[--n_owned]);
}

/* The costs are sums of products of small integers: exact in double. */
static int same(double got, double want) { return got == want; }

static void expect(const char *what, const mcl_op_args *a, int bwd, double flops, double bytes)
{
    mcl_op_cost c;
    mcl_op_cost_of(a, bwd, &c);
    CHECK(same(c.flops, flops), "%s: flops %.0f, expected %.0f", what, c.flops, flops);
    CHECK(same(c.bytes, bytes), "%s: bytes %.0f, expected %.0f", what, c.bytes, bytes);
}

static void args(mcl_op_args *a, mcl_op op)
{
    memset(a, 0, sizeof *a);
    a->op = op;
}

static void test_coverage(void)
{
    int missing = 0;
    for (int op = 0; op < MCL_OP_COUNT; op++) {
        const char *f = mcl_op_cost_formula((mcl_op)op);
        if (!f || !*f) {
            printf("FAIL: op %s has no cost formula\n", mcl_op_table[op].name);
            missing++;
        }
    }
    CHECK(missing == 0, "%d of %d ops of ops.def without a cost formula", missing, (int)MCL_OP_COUNT);
    CHECK(mcl_op_cost_formula(MCL_OP_COUNT) == NULL, "an op id out of range has a formula");
    mcl_op_args a;
    args(&a, MCL_OP_COUNT);
    mcl_op_cost c = {1, 1};
    mcl_op_cost_of(&a, 0, &c);
    CHECK(c.flops == 0 && c.bytes == 0, "an op id out of range costs %g flops, %g bytes", c.flops, c.bytes);
}

static void test_matmul(mcl_ctx *ctx)
{
    mcl_op_args a;
    const double M = 5, K = 7, N = 3;
    args(&a, MCL_OP_MATMUL);
    a.in[0] = T4(ctx, 2, 5, 7, 1, 1);
    a.in[1] = T4(ctx, 2, 7, 3, 1, 1);
    a.out[0] = T4(ctx, 2, 5, 3, 1, 1);
    expect("matmul fwd", &a, 0, 2 * M * N * K, 4 * (M * K + K * N + M * N));
    a.gout[0] = a.out[0];
    a.gin[0] = a.in[0];
    a.gin[1] = a.in[1];
    expect("matmul bwd (both)", &a, 1, 4 * M * N * K, 4 * (M * N + 3 * M * K + 3 * K * N));
    a.gin[1] = NULL;
    expect("matmul bwd (ga only)", &a, 1, 2 * M * N * K, 4 * (M * N + 2 * M * K + K * N));
    /* batched, a given transposed: [4,K,M]^T · [4,K,N] */
    args(&a, MCL_OP_MATMUL);
    a.in[0] = T4(ctx, 3, 4, 7, 5, 1);
    a.in[1] = T4(ctx, 3, 4, 7, 3, 1);
    a.out[0] = T4(ctx, 3, 4, 5, 3, 1);
    a.p.i[0] = 1;
    expect("matmul fwd batched, ta", &a, 0, 2 * 4 * M * N * K, 4 * 4 * (M * K + K * N + M * N));
}

static void test_conv2d(mcl_ctx *ctx)
{
    mcl_op_args a;
    /* x [2,3,8,8], w [4,3,3,3], padding 1, stride 1: y [2,4,8,8] */
    args(&a, MCL_OP_CONV2D);
    a.in[0] = T4(ctx, 4, 2, 3, 8, 8);
    a.in[1] = T4(ctx, 4, 4, 3, 3, 3);
    a.in[2] = T4(ctx, 1, 4, 1, 1, 1);
    a.out[0] = T4(ctx, 4, 2, 4, 8, 8);
    a.p.i[0] = 1;
    a.p.i[1] = 1;
    const double x = 384, w = 108, b = 4, y = 512, pass = 2 * y * 3 * 9; /* 27 648 */
    expect("conv2d fwd", &a, 0, pass, 4 * (x + w + b + y));
    a.gout[0] = a.out[0];
    a.gin[0] = a.in[0];
    expect("conv2d bwd data", &a, 1, pass, 4 * (y + 2 * x + w));
    a.gin[0] = NULL;
    a.gin[1] = a.in[1];
    a.gin[2] = a.in[2];
    expect("conv2d bwd weights and bias", &a, 1, pass, 4 * (y + 2 * w + 2 * b + x));
    a.gin[0] = a.in[0];
    expect("conv2d bwd all", &a, 1, 2 * pass, 4 * (y + 2 * x + 2 * w + 2 * b + w + x));
    /* stride 2, no padding: Ho = (8 - 3)/2 + 1 = 3 */
    args(&a, MCL_OP_CONV2D);
    a.in[0] = T4(ctx, 4, 2, 3, 8, 8);
    a.in[1] = T4(ctx, 4, 4, 3, 3, 3);
    a.in[2] = T4(ctx, 1, 4, 1, 1, 1);
    a.out[0] = T4(ctx, 4, 2, 4, 3, 3);
    a.p.i[0] = 2;
    expect("conv2d fwd stride 2", &a, 0, 2 * 72 * 27, 4 * (x + w + b + 72));
}

static void test_attention(mcl_ctx *ctx)
{
    mcl_op_args a;
    /* attn_kv: S 4, Hq 2, Hk 1, Dk 8, Dv 6, ring C 10 */
    args(&a, MCL_OP_ATTN_KV);
    a.in[0] = T4(ctx, 3, 4, 2, 8, 1);
    a.in[1] = T4(ctx, 3, 4, 1, 8, 1);
    a.in[2] = T4(ctx, 3, 4, 1, 6, 1);
    a.in[3] = T4(ctx, 3, 10, 1, 8, 1);
    a.in[4] = T4(ctx, 3, 10, 1, 6, 1);
    a.out[0] = T4(ctx, 3, 4, 2, 6, 1);
    a.out[1] = T4(ctx, 2, 4, 2, 1, 1);
    a.p.i[0] = 10;
    a.p.i[2] = 2; /* strictly causal: V = 4·10 + 4·3/2 = 46 pairs per query head */
    const double qkv = 64 + 32 + 24, ring = 80 + 60, o = 48, lse = 8;
    expect("attn_kv fwd, full ring, strict", &a, 0, 2 * 2 * (8 + 6) * 46, 4 * (qkv + ring + o + lse));
    a.p.i[2] = 0; /* causal: the diagonal too, V = 40 + 10 */
    expect("attn_kv fwd, causal", &a, 0, 2 * 2 * (8 + 6) * 50, 4 * (qkv + ring + o + lse));
    a.p.i[0] = 3; /* 3 ring rows in use: V = 12 + 10, the ring's bytes 3/10 */
    expect("attn_kv fwd, 3 rows", &a, 0, 2 * 2 * (8 + 6) * 22, 4 * (qkv + 0.3 * ring + o + lse));
    a.gout[0] = a.out[0];
    a.gin[0] = a.in[0];
    a.gin[1] = a.in[1];
    a.gin[2] = a.in[2];
    expect("attn_kv bwd, 3 rows", &a, 1, 2 * 2 * (3 * 8 + 2 * 6) * 22,
           4 * (o + 2 * qkv + qkv + 0.3 * ring + o + lse));

    /* rel_attn: B 1, S 3, H 2, D 4, T 5 (M = 2), Dv 4: keys 3, 4, 5 → V = 2·12 */
    args(&a, MCL_OP_REL_ATTN);
    a.in[0] = T4(ctx, 4, 1, 3, 2, 4);
    a.in[1] = T4(ctx, 4, 1, 3, 2, 4);
    a.in[2] = T4(ctx, 4, 1, 5, 2, 4);
    a.in[3] = T4(ctx, 4, 1, 5, 2, 4);
    a.in[4] = T4(ctx, 3, 5, 2, 4, 1);
    a.out[0] = T4(ctx, 4, 1, 3, 2, 4);
    a.out[1] = T4(ctx, 3, 1, 3, 2, 1);
    const double in = 24 + 24 + 40 + 40 + 40, ro = 24, rl = 6;
    expect("rel_attn fwd", &a, 0, 2 * (2 * 4 + 4) * 24, 4 * (in + ro + rl));
    a.p.i[0] = 1; /* window 1: keys 2, 2, 2 → V = 2·6 */
    expect("rel_attn fwd, window 1", &a, 0, 2 * (2 * 4 + 4) * 12, 4 * (in + ro + rl));
    a.gout[0] = a.out[0];
    for (int k = 0; k < 5; k++) a.gin[k] = a.in[k];
    expect("rel_attn bwd, window 1", &a, 1, 2 * (6 * 4 + 2 * 4) * 12, 4 * (ro + 2 * in + in + ro + rl));
}

static void test_others(mcl_ctx *ctx)
{
    mcl_op_args a;
    /* layer_norm [6,10] */
    args(&a, MCL_OP_LAYER_NORM);
    a.in[0] = T4(ctx, 2, 6, 10, 1, 1);
    a.in[1] = T4(ctx, 1, 10, 1, 1, 1);
    a.in[2] = T4(ctx, 1, 10, 1, 1, 1);
    a.out[0] = T4(ctx, 2, 6, 10, 1, 1);
    a.out[1] = T4(ctx, 1, 6, 1, 1, 1);
    a.out[2] = T4(ctx, 1, 6, 1, 1, 1);
    expect("layer_norm fwd", &a, 0, 7 * 60, 4 * (60 + 20 + 60 + 12));
    a.gout[0] = a.out[0];
    a.gin[0] = a.in[0];
    expect("layer_norm bwd (gx only)", &a, 1, 9 * 60, 4 * (60 + 120 + 60 + 12 + 10));
    /* gelu [3,5]: no flops counted, x and y once; backward gy, gx r+w, x */
    args(&a, MCL_OP_GELU);
    a.in[0] = T4(ctx, 2, 3, 5, 1, 1);
    a.out[0] = T4(ctx, 2, 3, 5, 1, 1);
    expect("gelu fwd", &a, 0, 0, 4 * 2 * 15);
    a.gout[0] = a.out[0];
    a.gin[0] = a.in[0];
    expect("gelu bwd", &a, 1, 0, 4 * 4 * 15);
    /* smn_write: M0 [16,16], m = 5 entries, H = 3: (2·9 + 18)·5 = 180 flops */
    args(&a, MCL_OP_SMN_WRITE);
    a.in[0] = T4(ctx, 2, 16, 16, 1, 1);
    a.in[1] = T4(ctx, 1, 5, 1, 1, 1);
    a.in[2] = T4(ctx, 2, 5, 2, 1, 1);
    a.in[3] = T4(ctx, 2, 3, 2, 1, 1);
    a.in[4] = T4(ctx, 1, 3, 1, 1, 1);
    a.in[5] = T4(ctx, 2, 3, 3, 1, 1);
    a.in[6] = T4(ctx, 1, 3, 1, 1, 1);
    a.in[7] = T4(ctx, 2, 1, 3, 1, 1);
    a.in[8] = T4(ctx, 1, 1, 1, 1, 1);
    a.out[0] = T4(ctx, 2, 16, 16, 1, 1);
    const double phi = 6 + 3 + 9 + 3 + 3 + 1;
    expect("smn_write fwd", &a, 0, 180, 4 * (256 + 5 + 10 + phi + 256));
    a.out[0] = a.in[0]; /* in place: the copy skipped */
    expect("smn_write fwd in place", &a, 0, 180, 4 * (4 * 5 + phi));
}

/* A matmul [4,6]·[6,3], its sum and the backward to both (parameters): the tally holds the
 * forward matmul and sum and the backward sum and matmul, nothing else, and nothing more after
 * mcl_ctx_bound_end. */
static void test_tally(mcl_ctx *ctx)
{
    const int64_t sa[2] = {4, 6}, sb[2] = {6, 3};
    mcl_tensor *pa = mcl_param_create(ctx, "a", 2, sa), *pb = mcl_param_create(ctx, "b", 2, sb);
    CHECK(pa && pb && mcl_tensor_randn(pa, SEED, 1, 0, 1) == MCL_OK && mcl_tensor_randn(pb, SEED, 2, 0, 1) == MCL_OK,
          "parameters");
    mcl_bound_tally t;
    memset(&t, 0, sizeof t);
    t.gflops = 1.0; /* 1 GFLOP/s and 1 GB/s: every call here is memory-bound but the matmuls */
    t.gbs = 1.0;
    mcl_ctx_bound_begin(ctx, &t);
    mcl_tensor *y = mcl_matmul(ctx, pa, pb, 0, 0);
    mcl_tensor *l = mcl_sum(ctx, y);
    CHECK(l && mcl_backward(ctx, l) == MCL_OK, "forward and backward: %s", mcl_ctx_error(ctx));
    mcl_ctx_bound_end(ctx);
    const double mm_f = 2.0 * 4 * 3 * 6, mm_fb = 4 * (24 + 18 + 12); /* 144 flops, 216 bytes */
    const double mm_bf = 2 * mm_f, mm_bb = 4 * (12 + 3 * 24 + 3 * 18);
    const double sum_f = 4 * (12 + 1), sum_b = 4 * (1 + 2 * 12);
    CHECK(t.op_calls[MCL_OP_MATMUL][0] == 1 && t.op_calls[MCL_OP_MATMUL][1] == 1 && t.op_calls[MCL_OP_SUM][0] == 1 &&
              t.op_calls[MCL_OP_SUM][1] == 1,
          "calls: matmul %ld/%ld, sum %ld/%ld", t.op_calls[MCL_OP_MATMUL][0], t.op_calls[MCL_OP_MATMUL][1],
          t.op_calls[MCL_OP_SUM][0], t.op_calls[MCL_OP_SUM][1]);
    CHECK(t.calls == 4, "4 calls tallied, got %ld", t.calls);
    CHECK(same(t.flops, mm_f + mm_bf), "tally flops %.0f, expected %.0f", t.flops, mm_f + mm_bf);
    CHECK(same(t.bytes, mm_fb + mm_bb + sum_f + sum_b), "tally bytes %.0f, expected %.0f", t.bytes,
          mm_fb + mm_bb + sum_f + sum_b);
    /* per call max(flops, bytes) ns at 1 GFLOP/s and 1 GB/s: matmul fwd 216 (memory), bwd 552
     * (memory: 288 flops < 552 bytes), the sums 52 and 100 */
    const double want_s = (216 + 552 + 52 + 100) * 1e-9;
    CHECK_NEAR("tally bound (s)", t.bound_s, want_s, 0, 1e-12);
    CHECK(t.compute_s == 0, "no call is compute-bound here, compute_s = %g", t.compute_s);
    t.gflops = 0.1; /* now the matmuls are compute-bound: 1440 ns and 2880 ns */
    mcl_op_cost c = {mm_f, mm_fb};
    int compute = 0;
    CHECK_NEAR("bound of the forward matmul at 0.1 GFLOP/s", mcl_bound_of(&t, &c, &compute), 1440e-9, 0, 1e-12);
    CHECK(compute == 1, "the forward matmul at 0.1 GFLOP/s is compute-bound");
    const long calls = t.calls;
    mcl_tensor *y2 = mcl_matmul(ctx, pa, pb, 0, 0);
    CHECK(y2 && t.calls == calls, "a call after mcl_ctx_bound_end was tallied");
    mcl_ctx_reset(ctx);
    mcl_tensor_free(pa);
    mcl_tensor_free(pb);
}

/* The check itself: a flop count off by one is rejected. */
static void test_can_fail(mcl_ctx *ctx)
{
    mcl_op_args a;
    args(&a, MCL_OP_MATMUL);
    a.in[0] = T4(ctx, 2, 5, 7, 1, 1);
    a.in[1] = T4(ctx, 2, 7, 3, 1, 1);
    a.out[0] = T4(ctx, 2, 5, 3, 1, 1);
    mcl_op_cost c;
    mcl_op_cost_of(&a, 0, &c);
    CHECK(!same(c.flops, 2 * 5 * 3 * 7 + 1), "a wrong flop count (211 for 2·5·3·7) passed the check");
    CHECK(!same(c.flops, 5 * 3 * 7), "a matmul counted at M·N·K (one flop per multiply-add) passed the check");
}

int main(void)
{
    tu_begin("test-opcost", SEED);
    mcl_ctx *ctx = tu_ctx_ref();
    test_coverage();
    test_matmul(ctx);
    test_conv2d(ctx);
    test_attention(ctx);
    test_others(ctx);
    test_can_fail(ctx);
    free_owned();
    test_tally(ctx);
    CHECK(mcl_ctx_status(ctx) == MCL_OK, "no stray error left: %s", mcl_ctx_error(ctx));
    mcl_ctx_free(ctx);
    return tu_summary();
}
