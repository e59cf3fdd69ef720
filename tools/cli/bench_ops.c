/* bench_ops.c — `metacl bench ops`: time of every op (forward and backward) on a chosen
 * backend next to the reference backend, measured in the same run, plus one MLP training
 * step on both. Results are ratios against that baseline; nothing here is a test.
 *
 * Timing: after one warm-up call, the op is repeated until at least --min-time seconds have
 * passed (at least 3 calls); each call is followed by mcl_ctx_finish so queued device work
 * is included. The median call is reported.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "bench_run.h"
#include "cli.h"
#include "progress.h"
#include "util.h"

typedef struct op_case {
    const char *op;
    int n_in;
    int ndim[MCL_MAX_IN];
    int64_t shape[MCL_MAX_IN][4];
    int kind[MCL_MAX_IN]; /* 0 uniform in [-1, 1), 1 positive, 2 class index < 100, 3 index < 1000,
                             4 distinct flat indices 0, 10, 20, ..., 5 uniform in [-0.25, 0.25) */
    float f[5];
    int64_t i[5];
    unsigned no_grad; /* bit k: input k gets no gradient (indices, a KV ring) */
} op_case;

/* One representative, mid-sized shape per op of ops.def (a batch of activations of a small
 * model; the attention, SRWM and SMN ops at the shapes of the families' models). Every op has
 * a case: tests/test-lists.sh holds this list against ops.def. */
static const op_case cases[] = {
    {"add", 2, {2, 2}, {{1024, 1024}, {1024, 1024}}, {0, 0}, {0}, {0}, 0u},
    {"sub", 2, {2, 2}, {{1024, 1024}, {1024, 1024}}, {0, 0}, {0}, {0}, 0u},
    {"mul", 2, {2, 2}, {{1024, 1024}, {1024, 1024}}, {0, 0}, {0}, {0}, 0u},
    {"scale", 1, {2}, {{1024, 1024}}, {0}, {0.5f}, {0}, 0u},
    {"bias_add", 2, {2, 1}, {{1024, 1024}, {1024}}, {0, 0}, {0}, {0}, 0u},
    {"copy", 1, {2}, {{1024, 1024}}, {0}, {0}, {0}, 0u},
    {"relu", 1, {2}, {{1024, 1024}}, {0}, {0}, {0}, 0u},
    {"leaky_relu", 1, {2}, {{1024, 1024}}, {0}, {0.01f}, {0}, 0u},
    {"elu", 1, {2}, {{1024, 1024}}, {0}, {1.0f}, {0}, 0u},
    {"sigmoid", 1, {2}, {{1024, 1024}}, {0}, {0}, {0}, 0u},
    {"tanh", 1, {2}, {{1024, 1024}}, {0}, {0}, {0}, 0u},
    {"gelu", 1, {2}, {{1024, 1024}}, {0}, {0}, {0}, 0u},
    {"bias_gelu", 2, {2, 1}, {{1024, 1024}, {1024}}, {0, 0}, {0}, {0}, 0u},
    {"bias_add2", 3, {2, 1, 1}, {{1024, 1024}, {1024}, {1024}}, {0, 0, 0}, {0}, {0}, 0u},
    {"exp", 1, {2}, {{1024, 1024}}, {0}, {0}, {0}, 0u},
    {"log", 1, {2}, {{1024, 1024}}, {1}, {0}, {0}, 0u},
    {"matmul", 2, {2, 2}, {{512, 512}, {512, 512}}, {0, 0}, {0}, {0, 0}, 0u},
    {"sum", 1, {2}, {{1024, 1024}}, {0}, {0}, {0}, 0u},
    {"mean", 1, {2}, {{1024, 1024}}, {0}, {0}, {0}, 0u},
    {"sumsq", 1, {2}, {{1024, 1024}}, {0}, {0}, {0}, 0u},
    {"sum_last", 1, {2}, {{1024, 1024}}, {0}, {0}, {0}, 0u},
    {"mean_last", 1, {2}, {{1024, 1024}}, {0}, {0}, {0}, 0u},
    {"softmax", 1, {2}, {{4096, 256}}, {0}, {0}, {0}, 0u},
    {"log_softmax", 1, {2}, {{4096, 256}}, {0}, {0}, {0}, 0u},
    {"layer_norm", 3, {2, 1, 1}, {{4096, 256}, {256}, {256}}, {0, 0, 0}, {1e-5f}, {0}, 0u},
    {"cross_entropy", 2, {2, 1}, {{4096, 100}, {4096}}, {0, 2}, {0}, {0}, 2u},
    {"concat", 2, {2, 2}, {{1024, 512}, {1024, 512}}, {0, 0}, {0}, {1}, 0u},
    {"slice", 1, {2}, {{1024, 1024}}, {0}, {0}, {1, 256, 512}, 0u},
    {"reshape", 1, {2}, {{1024, 1024}}, {0}, {0}, {2, 512, 2048}, 0u},
    {"transpose", 1, {2}, {{1024, 1024}}, {0}, {0}, {0}, 0u},
    {"permute", 1, {4}, {{16, 64, 16, 64}}, {0}, {0}, {0, 2, 1, 3}, 0u},
    {"one_hot", 1, {1}, {{4096}}, {2}, {0}, {100}, 0u},
    {"embedding", 2, {2, 1}, {{1000, 256}, {4096}}, {0, 3}, {0}, {0}, 2u},
    {"dropout", 1, {2}, {{1024, 1024}}, {0}, {0.1f}, {0}, 0u},
    {"sgd_step", 3, {2, 2, 2}, {{1024, 1024}, {1024, 1024}, {1024, 1024}}, {0, 0, 0}, {1e-3f, 0.9f, 0}, {0}, 0u},
    {"dyn_step", 3, {2, 2, 2}, {{1024, 1024}, {1024, 1024}, {1024, 1024}}, {0, 0, 0}, {1e-3f, 0.02f, 0}, {0}, 0u},
    {"adam_step", 4, {2, 2, 2, 2}, {{1024, 1024}, {1024, 1024}, {1024, 1024}, {1024, 1024}}, {0, 0, 0, 1},
     {1e-3f, 0.9f, 0.999f, 1e-8f, 0}, {1, 1}, 0u},
    {"clip_scale", 2, {2, 1}, {{1024, 1024}, {1}}, {0, 1}, {1.0f}, {0}, 0u},
    {"repeat_batch", 1, {2}, {{256, 256}}, {0}, {0}, {16}, 0u},
    {"conv2d", 3, {4, 4, 1}, {{64, 32, 28, 28}, {32, 32, 3, 3}, {32}}, {0, 5, 0}, {0}, {1, 1}, 0u},
    {"maxpool2d", 1, {4}, {{64, 32, 28, 28}}, {0}, {0}, {0}, 0u},
    {"instance_norm", 3, {4, 1, 1}, {{64, 32, 28, 28}, {32}, {32}}, {0, 1, 0}, {1e-5f}, {0}, 0u},
    {"inorm_pool_relu", 3, {4, 1, 1}, {{64, 32, 28, 28}, {32}, {32}}, {0, 1, 0}, {1e-5f}, {0}, 0u},
    {"inorm_relu", 3, {4, 1, 1}, {{64, 32, 28, 28}, {32}, {32}}, {0, 1, 0}, {1e-5f}, {0}, 0u},
    {"inorm_add_pool_relu", 4, {4, 1, 1, 4}, {{64, 32, 28, 28}, {32}, {32}, {64, 32, 28, 28}}, {0, 1, 0, 0}, {1e-5f},
     {0}, 0u},
    {"conv_inorm_pool_relu", 5, {4, 4, 1, 1, 1}, {{64, 1, 28, 28}, {32, 1, 3, 3}, {32}, {32}, {32}},
     {0, 5, 0, 1, 0}, {1e-5f}, {0, 1}, 0u},
    {"srwm", 5, {4, 4, 4, 4, 4},
     {{16, 16, 160, 16}, {16, 16, 16, 16}, {16, 16, 16, 16}, {16, 16, 16, 16}, {16, 16, 16, 4}},
     {0, 5, 5, 5, 5}, {0}, {0}, 0u},
    {"attn_kv", 5, {3, 3, 3, 3, 3}, {{64, 8, 32}, {64, 8, 32}, {64, 8, 32}, {256, 8, 32}, {256, 8, 32}},
     {0, 0, 0, 0, 0}, {0.1767767f, 0}, {256, 0, 0}, 0x18u},
    {"kv_push", 2, {3, 3}, {{256, 8, 32}, {64, 8, 32}}, {0, 0}, {0}, {0}, 0u},
    {"rel_attn", 5, {4, 4, 4, 4, 3},
     {{8, 64, 8, 32}, {8, 64, 8, 32}, {8, 128, 8, 32}, {8, 128, 8, 32}, {128, 8, 32}},
     {0, 0, 0, 0, 0}, {0.1767767f}, {0}, 0u},
    {"grad_preproc", 1, {2}, {{1024, 1024}}, {0}, {10.0f}, {0}, 0u},
    {"smn_write", 9, {2, 1, 2, 2, 1, 2, 1, 2, 1},
     {{256, 256}, {6553}, {6553, 2}, {20, 2}, {20}, {20, 20}, {20}, {1, 20}, {1}},
     {0, 4, 0, 5, 5, 5, 5, 5, 5}, {0.01f}, {0}, 2u},
    {"wcst_act", 5, {1, 2, 2, 1, 1}, {{11}, {16, 4}, {16, 3}, {16}, {16}}, {2, 0, 2, 0, 0}, {1.0f, -1.0f}, {3},
     0x1fu},
    /* the LM's fast attention weight (256 x 256) written at p = 0.1 */
    {"smn_avg_z", 3, {2, 2, 1}, {{256, 256}, {256, 256}, {6553}}, {0, 0, 4}, {0.999f, 0.5f, 0.5f, 10.0f}, {0}, 7u},
    {"add_dropout", 2, {2, 2}, {{1024, 1024}, {1024, 1024}}, {0, 0}, {0.1f}, {0}, 0u},
    /* the ACL query state of a layer (16 sequences, 8 heads of 16) repeated for 5 queries */
    {"repeat_batch4", 4, {4, 4, 4, 4}, {{16, 8, 16, 16}, {16, 8, 16, 16}, {16, 8, 16, 16}, {16, 8, 16, 4}},
     {0, 0, 0, 0}, {0}, {5, 1}, 0u},
    /* the ACL feed-forward block's W1 bias, relu and dropout (p = 0.1) */
    {"bias_dropout_relu", 2, {2, 1}, {{1024, 1024}, {1024}}, {0, 0}, {0.1f}, {0}, 0u},
    /* the ACL feed-forward block's residual add with W2's bias and dropout (p = 0.1) */
    {"bias_add_dropout", 3, {2, 2, 1}, {{1024, 1024}, {1024, 1024}, {1024}}, {0, 0, 0}, {0.1f}, {0}, 0u},
    /* the LM's fast step write with E = W + M kept: smn_write's shapes, W and E */
    {"smn_write_eff", 11, {2, 1, 2, 2, 1, 2, 1, 2, 1, 2, 2},
     {{256, 256}, {6553}, {6553, 2}, {20, 2}, {20}, {20, 20}, {20}, {1, 20}, {1}, {256, 256}, {256, 256}},
     {0, 4, 0, 5, 5, 5, 5, 5, 5, 0, 0}, {0.01f}, {0}, 0x7ffu},
    /* the LM's fast step write in one op: smn_write_eff's shapes, then I and G (smn_avg_z's
     * coefficients) */
    {"smn_avg_write", 13, {2, 1, 2, 2, 1, 2, 1, 2, 1, 2, 2, 2, 2},
     {{256, 256}, {6553}, {6553, 2}, {20, 2}, {20}, {20, 20}, {20}, {1, 20}, {1}, {256, 256}, {256, 256},
      {256, 256}, {256, 256}},
     {0, 4, 0, 5, 5, 5, 5, 5, 5, 0, 0, 0, 0}, {0.01f, 0.999f, 0.5f, 0.5f, 10.0f}, {0}, 0x1fffu},
    /* the window end's W + M_{k-1} of the LM's fast attention weight: smn_write's shapes and W */
    {"smn_write_add", 10, {2, 1, 2, 2, 1, 2, 1, 2, 1, 2},
     {{256, 256}, {6553}, {6553, 2}, {20, 2}, {20}, {20, 20}, {20}, {1, 20}, {1}, {256, 256}},
     {0, 4, 0, 5, 5, 5, 5, 5, 5, 0}, {0.01f}, {0}, 0x2u},
};
#define N_CASES ((int)(sizeof cases / sizeof cases[0]))


/* Host values for one input. */
static float *make_input(const op_case *c, int k, int64_t n, uint64_t stream)
{
    float *h = malloc((size_t)n * sizeof *h);
    if (!h) return NULL;
    mcl_rng r;
    mcl_rng_init(&r, 7, stream);
    for (int64_t j = 0; j < n; j++) {
        float u = mcl_rng_next_uniform(&r);
        switch (c->kind[k]) {
        case 1: h[j] = 0.5f + u; break;
        case 2: h[j] = (float)(int)(u * 100.0f); break;
        case 3: h[j] = (float)(int)(u * 1000.0f); break;
        case 4: h[j] = (float)(j * 10); break;
        case 5: h[j] = 0.5f * u - 0.25f; break;
        default: h[j] = 2.0f * u - 1.0f; break;
        }
    }
    return h;
}

typedef struct timing {
    double fwd_ms, bwd_ms; /* median; bwd < 0 when the op has no backward */
} timing;

static double median_time(mcl_ctx *ctx, mcl_op_args *a, int backward, double min_time, int *ok)
{
    double t[512];
    int n = 0;
    double start = mcl_now_s();
    for (int rep = -1; rep < 512; rep++) { /* rep -1 = warm-up */
        double t0 = mcl_now_s();
        mcl_status s;
        if (backward) {
            s = mcl_op_backward(ctx, a);
        } else {
            a->out_given = 1; /* reuse the outputs of the first call */
            s = mcl_op_run(ctx, a);
        }
        if (s == MCL_OK) s = mcl_ctx_finish(ctx);
        if (s != MCL_OK) {
            *ok = 0;
            return NAN;
        }
        if (rep >= 0) t[n++] = mcl_now_s() - t0;
        if (n >= 3 && mcl_now_s() - start >= min_time) break;
    }
    mcl_bench_sort(t, n);
    return 1e3 * t[n / 2];
}

static int time_case(mcl_ctx *ctx, const op_case *c, double min_time, timing *out)
{
    mcl_op op = mcl_op_by_name(c->op);
    const mcl_op_info *info = &mcl_op_table[op];
    mcl_op_args a;
    memset(&a, 0, sizeof a);
    a.op = op;
    mcl_tensor *owned[MCL_MAX_IN + 2 * MCL_MAX_OUT];
    int n_owned = 0, ok = 1;
    for (int k = 0; k < info->n_in && ok; k++) {
        mcl_tensor *t = mcl_tensor_create(ctx, c->ndim[k], c->shape[k]);
        float *h = t ? make_input(c, k, mcl_tensor_numel(t), (uint64_t)k) : NULL;
        ok = t && h && mcl_tensor_write(t, h, mcl_tensor_numel(t)) == MCL_OK;
        free(h);
        if (t) owned[n_owned++] = t;
        a.in[k] = t;
    }
    for (int j = 0; j < 5; j++) {
        a.p.f[j] = c->f[j];
        a.p.i[j] = c->i[j];
    }
    a.p.u[0] = 7;
    a.p.u[1] = 1;
    mcl_no_grad_begin(ctx);
    if (ok) ok = mcl_op_run(ctx, &a) == MCL_OK; /* allocates the outputs */
    if (ok) out->fwd_ms = median_time(ctx, &a, 0, min_time, &ok);
    out->bwd_ms = -1;
    if (ok && info->n_diff_out > 0) {
        for (int k = 0; k < info->n_diff_out && ok; k++) {
            mcl_tensor *g = mcl_tensor_create(ctx, a.out[k]->ndim, a.out[k]->shape);
            ok = g && mcl_tensor_fill(g, 0.01f) == MCL_OK;
            if (g) owned[n_owned++] = g;
            a.gout[k] = g;
        }
        for (int k = 0; k < info->n_in && ok; k++) {
            if ((c->no_grad >> k) & 1u) continue;
            mcl_tensor *g = mcl_tensor_create(ctx, a.in[k]->ndim, a.in[k]->shape);
            ok = g != NULL;
            if (g) owned[n_owned++] = g;
            a.gin[k] = g;
        }
        if (ok) out->bwd_ms = median_time(ctx, &a, 1, min_time, &ok);
    }
    mcl_no_grad_end(ctx);
    for (int k = 0; k < n_owned; k++) mcl_tensor_free(owned[k]);
    mcl_ctx_reset(ctx);
    return ok ? 0 : 1;
}

/* One training step of a 64-256-256-10 MLP on a batch of 1024 (forward, backward, Adam). */
static double mlp_step_ms(mcl_ctx *ctx, double min_time, int *ok)
{
    enum { B = 1024, IN = 64, H = 256, C = 10 };
    mcl_params *P = mcl_params_create(ctx);
    int64_t s1[2] = {IN, H}, s2[2] = {H, H}, s3[2] = {H, C}, bh[1] = {H}, bc[1] = {C};
    mcl_tensor *W1 = mcl_params_add(P, "W1", 2, s1), *b1 = mcl_params_add(P, "b1", 1, bh);
    mcl_tensor *W2 = mcl_params_add(P, "W2", 2, s2), *b2 = mcl_params_add(P, "b2", 1, bh);
    mcl_tensor *W3 = mcl_params_add(P, "W3", 2, s3), *b3 = mcl_params_add(P, "b3", 1, bc);
    mcl_tensor *x = mcl_tensor_new(ctx, B, IN, 0, 0), *y = mcl_tensor_new(ctx, B, 0, 0, 0);
    mcl_optim *opt = NULL;
    mcl_optim_config oc;
    memset(&oc, 0, sizeof oc);
    oc.kind = MCL_OPTIM_ADAM;
    oc.sched.base_lr = 1e-3f;
    *ok = W1 && b1 && W2 && b2 && W3 && b3 && x && y && mcl_optim_create(ctx, &oc, P, &opt) == MCL_OK;
    if (*ok) {
        mcl_tensor_randn(W1, 1, 1, 0, 0.125f);
        mcl_tensor_randn(W2, 1, 2, 0, 0.0625f);
        mcl_tensor_randn(W3, 1, 3, 0, 0.0625f);
        mcl_tensor_randn(x, 1, 4, 0, 1);
        mcl_tensor_rand_uniform(y, 1, 5, 0, 9.99f);
        /* class indices must be integers */
        float *hy = malloc(B * sizeof *hy);
        if (hy && mcl_tensor_read(y, hy, B) == MCL_OK) {
            for (int i = 0; i < B; i++) hy[i] = floorf(hy[i]);
            mcl_tensor_write(y, hy, B);
        }
        free(hy);
    }
    double t[256];
    int n = 0;
    double start = mcl_now_s();
    for (int rep = -1; rep < 256 && *ok; rep++) {
        double t0 = mcl_now_s();
        mcl_tensor *h = mcl_relu(ctx, mcl_bias_add(ctx, mcl_matmul(ctx, x, W1, 0, 0), b1));
        h = mcl_relu(ctx, mcl_bias_add(ctx, mcl_matmul(ctx, h, W2, 0, 0), b2));
        mcl_tensor *loss = mcl_cross_entropy(ctx, mcl_bias_add(ctx, mcl_matmul(ctx, h, W3, 0, 0), b3), y);
        *ok = loss && mcl_backward(ctx, loss) == MCL_OK && mcl_optim_step(opt) == MCL_OK &&
              mcl_ctx_finish(ctx) == MCL_OK;
        mcl_optim_zero_grad(opt);
        mcl_ctx_reset(ctx);
        if (rep >= 0) t[n++] = mcl_now_s() - t0;
        if (n >= 3 && mcl_now_s() - start >= min_time) break;
    }
    mcl_optim_free(opt);
    mcl_params_free(P);
    mcl_tensor_free(x);
    mcl_tensor_free(y);
    if (!*ok || n == 0) return NAN;
    mcl_bench_sort(t, n);
    return 1e3 * t[n / 2];
}

static double ratio(double base, double x) { return (x > 0 && base > 0) ? base / x : NAN; }

typedef struct ops_opts {
    char backend[64], device[256], only[64];
    float min_time;
    int json;
} ops_opts;

static const mcl_key ops_keys[] = {
    MCL_OPT_STR("backend", 0, ops_opts, backend, "opencl", "ref|opencl", "the backend to time"),
    MCL_OPT_DEVICE(ops_opts, device),
    MCL_OPT_STR("only", 'o', ops_opts, only, NULL, "OP", "only that op; -o mlp_step only the MLP training step"),
    MCL_OPT_FLOAT("min-time", 0, ops_opts, min_time, 1e-3, 60, "0.2", "SECONDS", "seconds per measurement"),
    MCL_OPT_FLAG("json", 0, ops_opts, json, "print JSON instead of a table"),
};
static const mcl_cli_cmd ops_cmd = {
    .name = "bench ops", .synopsis = "[--backend ref|opencl] [--device N|NAME] [-o OP] [--min-time SECONDS] [--json]",
    .about = "Forward and backward time of each op on a backend next to the reference backend's.",
    .opts = ops_keys, .n_opts = (int)(sizeof ops_keys / sizeof ops_keys[0])};

int mcl_cli_bench_ops(int argc, char **argv)
{
    ops_opts o;
    mcl_cli_parsed p;
    int prc = mcl_cli_parse(&ops_cmd, argc, argv, &o, &p);
    if (prc != MCL_CLI_GO) return prc;
    const char *backend = o.backend, *device = o.device, *only = o.only[0] ? o.only : NULL;
    const int json = o.json;
    const double min_time = o.min_time;
    const int mlp_only = only && strcmp(only, "mlp_step") == 0;
    if (only && !mlp_only && mcl_op_by_name(only) == MCL_OP_COUNT) {
        fprintf(stderr, "metacl bench ops: unknown op '%s'\n", only);
        return 2;
    }
    mcl_ctx *ref = NULL, *dev = NULL;
    int rc = mcl_cli_open_ctx("ref", NULL, &ref);
    if (rc) return rc;
    rc = mcl_cli_open_ctx(backend, device, &dev);
    if (rc) {
        mcl_ctx_free(ref);
        return rc;
    }
    const char *bn = mcl_ctx_backend_name(dev);
    if (json) {
        printf("{\"backend\":\"%s\"", bn);
        mcl_cli_json_device_fields(stdout, dev);
        printf(",\"baseline\":\"ref\",\"ops\":[");
    }
    else
        printf("%-14s %10s %10s %7s   %10s %10s %7s\n", "op", "ref fwd", "fwd", "speedup", "ref bwd",
               "bwd", "speedup");
    int first = 1, failed = 0;
    for (int c = 0; c < N_CASES; c++) {
        if (only && strcmp(only, cases[c].op) != 0) continue; /* -o mlp_step matches none */
        timing tr, td;
        char label[96];
        snprintf(label, sizeof label, "bench ops: %s (case %d of %d)", cases[c].op, c + 1, N_CASES);
        mcl_progress_start(label, 0);
        const int bad = time_case(ref, &cases[c], min_time, &tr) || time_case(dev, &cases[c], min_time, &td);
        mcl_progress_finish();
        if (bad) {
            fprintf(stderr, "bench ops: %s failed: %s%s\n", cases[c].op, mcl_ctx_error(ref), mcl_ctx_error(dev));
            mcl_ctx_clear_error(ref);
            mcl_ctx_clear_error(dev);
            failed = 1;
            continue;
        }
        if (json) {
            printf("%s{\"op\":\"%s\",\"ref_fwd_ms\":%.4f,\"fwd_ms\":%.4f,\"ref_bwd_ms\":%.4f,\"bwd_ms\":%.4f}",
                   first ? "" : ",", cases[c].op, tr.fwd_ms, td.fwd_ms, tr.bwd_ms, td.bwd_ms);
        } else if (tr.bwd_ms < 0) {
            printf("%-14s %8.3fms %8.3fms %6.2fx   %10s %10s %7s\n", cases[c].op, tr.fwd_ms, td.fwd_ms,
                   ratio(tr.fwd_ms, td.fwd_ms), "-", "-", "-");
        } else {
            printf("%-14s %8.3fms %8.3fms %6.2fx   %8.3fms %8.3fms %6.2fx\n", cases[c].op, tr.fwd_ms,
                   td.fwd_ms, ratio(tr.fwd_ms, td.fwd_ms), tr.bwd_ms, td.bwd_ms, ratio(tr.bwd_ms, td.bwd_ms));
        }
        first = 0;
        fflush(stdout);
    }
    int ok1 = 1, ok2 = 1;
    const int with_mlp = !only || mlp_only;
    if (with_mlp) mcl_progress_start("bench ops: MLP training step", 0);
    double mr = with_mlp ? mlp_step_ms(ref, min_time, &ok1) : NAN;
    double md = with_mlp ? mlp_step_ms(dev, min_time, &ok2) : NAN;
    mcl_progress_finish();
    if (!ok1 || !ok2) {
        fprintf(stderr, "bench ops: MLP step failed: %s%s\n", mcl_ctx_error(ref), mcl_ctx_error(dev));
        failed = 1;
    }
    if (json)
        printf("],\"mlp_step\":{\"ref_ms\":%.4f,\"ms\":%.4f,\"ratio_vs_ref\":%.4f}}\n", mr, md, md / mr);
    else if (with_mlp)
        printf("MLP training step (64-256-256-10, batch 1024, Adam): ref %.3f ms, %s %.3f ms "
               "(%.2fx the reference's time)\n", mr, bn, md, md / mr);
    mcl_ctx_free(ref);
    mcl_ctx_free(dev);
    return failed ? 1 : 0;
}
