/* bench_acl.c — `metacl bench acl`: the three ACL workloads (srwm, Conv-4, a meta-training step), timed on one
 * backend. tools/torch/bench-acl-torch.py implements the same workloads with the same shapes in
 * PyTorch, and tools/torch/bench-acl-vs-torch.py runs both back to back and prints the ratios.
 *
 *   srwm       srwm forward + backward, B 16, H 16, D 16, L 160 (upstream gradients of the
 *              output and the final state random)
 *   conv4_28   Conv-4 (4 × conv 3×3 32 ch → instance norm → maxpool → dropout 0.1 → ReLU)
 *   conv4_32   forward + backward on 800 images of 1×28×28 / 1×32×32 (no input gradient),
 *              as src/nn/conv4.c runs it: conv2d, inorm_pool_relu (norm, pool, ReLU, dropout);
 *              the first layer conv_inorm_pool_relu on the reference backend (the two in one op)
 *   acl_step   one 2-task ACL meta-training step (doc/acl-model.md §3, all seven calls, first-shot
 *              and ACL terms, N queries per task): 5-way 5-shot, batch 16, hidden 128, 8 heads,
 *              2 layers, FF ×2, dropout 0.1, 1×32×32; forward + backward + Adam update
 *   train_step the harness's own training step (src/learn/train.c: the family's step_loss with
 *              the statistics it logs, backward, Adam) on the acl_step shapes, generated
 *              images (bench_train.c); with the backend counters per step
 *
 * Timing: one warm-up iteration, then --reps iterations, each ending with mcl_ctx_finish so
 * queued device work is included; best and median reported. Inputs are random (fixed seed):
 * the cost does not depend on the values.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acl.h"
#include "bench_run.h"
#include "cli.h"

#define BENCH_SEED 7ULL

static mcl_tensor *rand_tensor(mcl_ctx *ctx, int ndim, const int64_t *shape, uint64_t stream,
                               float std, int requires_grad)
{
    return mcl_bench_rand(ctx, ndim, shape, BENCH_SEED, stream, std, requires_grad);
}

/* ---------------------------------------------------------------- srwm */

typedef struct srwm_st {
    mcl_tensor *x, *s[4], *gy, *gs[4];
} srwm_st;

static void srwm_teardown(void *p)
{
    srwm_st *s = p;
    if (!s) return;
    mcl_tensor_free(s->x);
    mcl_tensor_free(s->gy);
    for (int k = 0; k < 4; k++) {
        mcl_tensor_free(s->s[k]);
        mcl_tensor_free(s->gs[k]);
    }
    free(s);
}

static void *srwm_setup(mcl_ctx *ctx)
{
    srwm_st *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    const int64_t xs[4] = {16, 16, 160, 16}, ws[4] = {16, 16, 16, 16}, bs[4] = {16, 16, 16, 4};
    int ok = (s->x = rand_tensor(ctx, 4, xs, 1, 1.0f, 1)) != NULL;
    ok = ok && (s->gy = rand_tensor(ctx, 4, xs, 2, 1.0f, 0)) != NULL;
    for (int k = 0; k < 4 && ok; k++) {
        const int64_t *sh = k == 3 ? bs : ws;
        ok = (s->s[k] = rand_tensor(ctx, 4, sh, 3 + (uint64_t)k, 0.25f, 1)) != NULL &&
             (s->gs[k] = rand_tensor(ctx, 4, sh, 7 + (uint64_t)k, 1.0f, 0)) != NULL;
    }
    if (!ok) {
        srwm_teardown(s);
        return NULL;
    }
    return s;
}

/* loss = Σ y·gy + Σ_k state_out_k·gs_k, then backward */
static int srwm_iter(mcl_ctx *ctx, void *p)
{
    srwm_st *s = p;
    mcl_tensor *y = NULL, *so[4] = {NULL, NULL, NULL, NULL};
    if (mcl_srwm(ctx, s->x, s->s, &y, so) != MCL_OK) return 1;
    mcl_tensor *loss = mcl_sum(ctx, mcl_mul(ctx, y, s->gy));
    for (int k = 0; k < 4; k++) loss = mcl_add(ctx, loss, mcl_sum(ctx, mcl_mul(ctx, so[k], s->gs[k])));
    int rc = loss && mcl_backward(ctx, loss) == MCL_OK ? 0 : 1;
    mcl_ctx_reset(ctx);
    return rc;
}

/* ---------------------------------------------------------------- Conv-4 */

typedef struct conv_st {
    int size;
    mcl_tensor *img, *g;
    mcl_tensor *w[4], *b[4], *ng[4], *nb[4];
} conv_st;

static void conv_teardown(void *p)
{
    conv_st *s = p;
    if (!s) return;
    mcl_tensor_free(s->img);
    mcl_tensor_free(s->g);
    for (int i = 0; i < 4; i++) {
        mcl_tensor_free(s->w[i]);
        mcl_tensor_free(s->b[i]);
        mcl_tensor_free(s->ng[i]);
        mcl_tensor_free(s->nb[i]);
    }
    free(s);
}

static void *conv_setup_n(mcl_ctx *ctx, int size)
{
    conv_st *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->size = size;
    const int64_t is[4] = {800, 1, size, size}, c1[1] = {32};
    int ok = (s->img = rand_tensor(ctx, 4, is, 20, 1.0f, 0)) != NULL;
    for (int i = 0; i < 4 && ok; i++) {
        const int64_t ws[4] = {32, i == 0 ? 1 : 32, 3, 3};
        ok = (s->w[i] = rand_tensor(ctx, 4, ws, 21 + (uint64_t)i, 0.2f, 1)) != NULL &&
             (s->b[i] = rand_tensor(ctx, 1, c1, 25 + (uint64_t)i, 0.1f, 1)) != NULL &&
             (s->ng[i] = mcl_param_create(ctx, "g", 1, c1)) != NULL &&
             (s->nb[i] = mcl_param_create(ctx, "b", 1, c1)) != NULL &&
             mcl_tensor_fill(s->ng[i], 1.0f) == MCL_OK;
    }
    int64_t o = size;
    for (int i = 0; i < 4; i++) o /= 2;
    const int64_t gs[4] = {800, 32, o, o};
    ok = ok && (s->g = rand_tensor(ctx, 4, gs, 30, 1.0f, 0)) != NULL;
    if (!ok) {
        conv_teardown(s);
        return NULL;
    }
    return s;
}
static void *conv28_setup(mcl_ctx *ctx) { return conv_setup_n(ctx, 28); }
static void *conv32_setup(mcl_ctx *ctx) { return conv_setup_n(ctx, 32); }

static int conv_iter(mcl_ctx *ctx, void *p)
{
    conv_st *s = p;
    mcl_tensor *x = s->img;
    for (int i = 0; i < 4; i++) {
        /* norm → pool → dropout → relu, as src/nn/conv4.c computes it: the tail and the
         * dropout in one op (dropout commutes with the relu); on the reference backend the
         * first layer (one input channel) with its convolution in that op too */
        if (i == 0 && mcl_ctx_backend_kind(ctx) == MCL_BACKEND_REF) {
            x = mcl_conv_inorm_pool_relu_dropout(ctx, x, s->w[i], s->b[i], 1, s->ng[i], s->nb[i], 1e-5f, 0.1f, 1);
            continue;
        }
        x = mcl_conv2d(ctx, x, s->w[i], s->b[i], 1, 1);
        x = mcl_inorm_pool_relu_dropout(ctx, x, s->ng[i], s->nb[i], 1e-5f, 0.1f, 1);
    }
    mcl_tensor *loss = mcl_sum(ctx, mcl_mul(ctx, x, s->g));
    int rc = loss && mcl_backward(ctx, loss) == MCL_OK ? 0 : 1;
    mcl_ctx_reset(ctx);
    return rc;
}

/* ---------------------------------------------------------------- ACL step */

#define ACL_B 16
#define ACL_N 5
#define ACL_K 5

typedef struct acl_st {
    mcl_acl *m;
    mcl_optim *opt;
    mcl_acl_task_data td[2];
} acl_st;

static void acl_teardown(void *p)
{
    acl_st *s = p;
    if (!s) return;
    for (int i = 0; i < 2; i++) mcl_acl_task_data_free(&s->td[i]);
    mcl_optim_free(s->opt);
    mcl_acl_free(s->m);
    free(s);
}

static int rand_part(mcl_ctx *ctx, mcl_tensor **img, mcl_tensor **lab, int64_t n, uint64_t stream)
{
    const int64_t rows = ACL_B * n, is[4] = {rows, 1, 32, 32}, ls[1] = {rows};
    *img = rand_tensor(ctx, 4, is, stream, 1.0f, 0);
    *lab = mcl_tensor_create(ctx, 1, ls);
    float *v = malloc((size_t)rows * sizeof *v);
    int ok = *img && *lab && v;
    for (int64_t r = 0; ok && r < rows; r++) v[r] = (float)((r * 3 + (int64_t)stream) % ACL_N);
    ok = ok && mcl_tensor_write(*lab, v, rows) == MCL_OK;
    free(v);
    return ok;
}

static void *acl_setup(mcl_ctx *ctx)
{
    acl_st *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    mcl_acl_config c;
    mcl_acl_config_default(&c);
    c.n_way = ACL_N;
    c.hidden = 128;
    c.heads = 8;
    c.layers = 2;
    c.ff_mult = 2;
    c.dropout = 0.1f;
    c.seed = BENCH_SEED;
    s->m = mcl_acl_create(ctx, &c);
    mcl_optim_config oc;
    memset(&oc, 0, sizeof oc);
    oc.kind = MCL_OPTIM_ADAM;
    oc.sched.kind = MCL_SCHED_CONSTANT;
    oc.sched.base_lr = 1e-4f;
    oc.beta1 = 0.9f;
    oc.beta2 = 0.995f;
    oc.eps = 1e-9f;
    int ok = s->m && mcl_optim_create(ctx, &oc, mcl_acl_params(s->m), &s->opt) == MCL_OK;
    for (int i = 0; i < 2 && ok; i++) {
        mcl_acl_task_data *t = &s->td[i];
        t->n_first = ACL_N;
        t->n_ctx = ACL_N * ACL_K;
        t->n_query = ACL_N;
        ok = rand_part(ctx, &t->first_img, &t->first_lab, t->n_first, 40 + 3 * (uint64_t)i) &&
             rand_part(ctx, &t->ctx_img, &t->ctx_lab, t->n_ctx, 41 + 3 * (uint64_t)i) &&
             rand_part(ctx, &t->query_img, &t->query_lab, t->n_query, 42 + 3 * (uint64_t)i);
    }
    if (!ok) {
        acl_teardown(s);
        return NULL;
    }
    return s;
}

static int acl_iter(mcl_ctx *ctx, void *p)
{
    acl_st *s = p;
    mcl_acl_objective o;
    mcl_acl_objective_two_task(&o, 0.2f, 1.0f, 0.1f);
    mcl_tensor *loss = NULL;
    mcl_optim_zero_grad(s->opt);
    int rc = mcl_acl_objective_loss(s->m, ctx, &o, s->td, ACL_B, &loss, NULL) == MCL_OK &&
                     mcl_backward(ctx, loss) == MCL_OK && mcl_optim_step(s->opt) == MCL_OK
                 ? 0
                 : 1;
    mcl_ctx_reset(ctx);
    return rc;
}

/* ---------------------------------------------------------------- the harness's step */

/* The acl_step shapes above as a training config (data: generated images, bench_train.c). */
static const char train_conf[] =
    "model.n_way = 5\nmodel.hidden = 128\nmodel.heads = 8\nmodel.layers = 2\nmodel.ff_mult = 2\n"
    "model.dropout = 0.1\nmodel.image_size = 32\ntask.n_way = 5\ntask.k_shot = 5\ntask.n_tasks = 2\n"
    "data.domains = @IMAGES@\ntrain.batch = 16\ntrain.steps = 1000000\n";

static void *train_setup(mcl_ctx *ctx) { return mcl_bench_train_open(ctx, "acl", train_conf); }

static const mcl_bench_workload workloads[] = {
    {"srwm", "srwm forward+backward B16 H16 D16 L160", 10, srwm_setup, srwm_iter, srwm_teardown, NULL},
    {"conv4_28", "Conv-4 forward+backward, 800 images 1x28x28", 10, conv28_setup, conv_iter,
     conv_teardown, NULL},
    {"conv4_32", "Conv-4 forward+backward, 800 images 1x32x32", 10, conv32_setup, conv_iter,
     conv_teardown, NULL},
    {"acl_step",
     "2-task ACL meta-training step, 5-way 5-shot, batch 16, hidden 128, 8 heads, 2 layers, "
     "1x32x32, Adam",
     5, acl_setup, acl_iter, acl_teardown, NULL},
    {"train_step",
     "the harness's training step (step_loss, backward, Adam, metrics) on the acl_step shapes, "
     "generated 28x28 images",
     3, train_setup, mcl_bench_train_iter, mcl_bench_train_teardown, NULL},
};
#define N_WORKLOADS ((int)(sizeof workloads / sizeof workloads[0]))

int mcl_cli_bench_acl(int argc, char **argv)
{
    return mcl_bench_main("acl",
                          "Times the ACL model's workloads: srwm, conv4_28, conv4_32, acl_step (see tools/cli/bench_acl.c).",
                          "compare with PyTorch: python3 tools/torch/bench-acl-vs-torch.py", workloads, N_WORKLOADS,
                          BENCH_SEED, argc, argv);
}
