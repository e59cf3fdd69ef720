/* bench_oct.c — `metacl bench oct`: the online transformers' workloads, timed on one backend.
 * tools/torch/bench-oct-torch.py implements the same computations in PyTorch, and
 * `python3 tools/torch/bench-acl-vs-torch.py --bench oct` runs both back to back with the ratios.
 *
 *   oct_step     one online training step of the pi-transformer (doc/oct-model.md): a chunk
 *                of S = 50 images 1×32×32 through Conv-4 (32 channels), 4 parallel blocks of
 *                width 256 (4 query heads, 1 key/value head, head size 64, FFW ×4, GELU), each
 *                attending to a full ring of C = 1000 earlier tokens plus the chunk (strict
 *                mask), the linear head, cross-entropy; backward; AdamW update
 *   attn_C0      attn_kv forward + backward alone, S = 50, 4 query heads, 1 key/value head,
 *   attn_C250    head size 64, a full ring of C = 0 / 250 / 1000 / 4000 tokens; the loss is
 *   attn_C1000   sum(o ⊙ G) with a fixed random G (gradients to q, k, v)
 *   attn_C4000
 *   train_step   the harness's own online training step (src/learn/train.c: the family's
 *                step_loss with the metrics it logs, backward, AdamW) with the oct_step shapes on
 *                generated images (bench_train.c); with the backend counters per step
 * Examples per second of online training = 50 / (oct_step seconds).
 */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>

#include "bench_run.h"
#include "cli.h"
#include "oct.h"

#define BENCH_SEED 11ULL
#define S_CHUNK 50
#define HQ 4
#define DK 64

/* ---------------------------------------------------------------- one online step */

typedef struct step_st {
    mcl_oct *m;
    mcl_oct_ring ring;
    mcl_optim *opt;
    mcl_tensor *img, *lab;
} step_st;

static void step_teardown(void *p)
{
    step_st *s = p;
    if (!s) return;
    for (int l = 0; l < MCL_OCT_MAX_BLOCKS; l++) {
        mcl_tensor_free(s->ring.k[l]);
        mcl_tensor_free(s->ring.v[l]);
    }
    mcl_tensor_free(s->img);
    mcl_tensor_free(s->lab);
    mcl_optim_free(s->opt);
    mcl_oct_free(s->m);
    free(s);
}

static void *step_setup(mcl_ctx *ctx)
{
    step_st *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    mcl_oct_config c;
    memset(&c, 0, sizeof c);
    c.arch = MCL_OCT_PI;
    c.extractor = MCL_OCT_CONV4;
    c.channels = 32;
    c.width = 256;
    c.blocks = 4;
    c.heads = HQ;
    c.kv_heads = 1;
    c.head_dim = DK;
    c.ffw_mult = 4;
    c.window = 1000;
    c.pi_mask = 2;
    c.n_way = 10;
    c.seed = BENCH_SEED;
    s->m = mcl_oct_create(ctx, &c);
    if (!s->m) return step_teardown(s), NULL;
    const int64_t rs[3] = {c.window, 1, DK}, is[4] = {S_CHUNK, 1, 32, 32}, ls[1] = {S_CHUNK};
    for (int l = 0; l < c.blocks; l++) {
        s->ring.k[l] = mcl_bench_rand(ctx, 3, rs, BENCH_SEED, 10 + 2 * (uint64_t)l, 1.0f, 0);
        s->ring.v[l] = mcl_bench_rand(ctx, 3, rs, BENCH_SEED, 11 + 2 * (uint64_t)l, 1.0f, 0);
        if (!s->ring.k[l] || !s->ring.v[l]) return step_teardown(s), NULL;
    }
    s->ring.n = c.window;
    s->img = mcl_bench_rand(ctx, 4, is, BENCH_SEED, 1, 1.0f, 0);
    s->lab = mcl_tensor_create(ctx, 1, ls);
    float lab[S_CHUNK];
    for (int i = 0; i < S_CHUNK; i++) lab[i] = (float)(i % 10);
    mcl_optim_config oc;
    memset(&oc, 0, sizeof oc);
    oc.kind = MCL_OPTIM_ADAMW;
    oc.sched.kind = MCL_SCHED_CONSTANT;
    oc.sched.base_lr = 1e-4f;
    oc.weight_decay = 0.01f;
    if (!s->img || !s->lab || mcl_tensor_write(s->lab, lab, S_CHUNK) != MCL_OK ||
        mcl_optim_create(ctx, &oc, s->m->params, &s->opt) != MCL_OK)
        return step_teardown(s), NULL;
    return s;
}

static int step_iter(mcl_ctx *ctx, void *p)
{
    step_st *s = p;
    mcl_tensor *logits, *loss;
    mcl_oct_chunk ck;
    mcl_optim_zero_grad(s->opt);
    int rc = mcl_oct_forward(s->m, s->img, s->lab, S_CHUNK, &s->ring, &logits, &loss, &ck) == MCL_OK &&
                     mcl_backward(ctx, loss) == MCL_OK && mcl_optim_step(s->opt) == MCL_OK
                 ? 0
                 : 1;
    mcl_ctx_reset(ctx);
    return rc;
}

/* ---------------------------------------------------------------- attn_kv alone */

typedef struct attn_st {
    mcl_tensor *q, *k, *v, *kb, *vb, *g;
    int64_t C;
} attn_st;

static void attn_teardown(void *p)
{
    attn_st *s = p;
    if (!s) return;
    mcl_tensor *t[6] = {s->q, s->k, s->v, s->kb, s->vb, s->g};
    for (int i = 0; i < 6; i++) mcl_tensor_free(t[i]);
    free(s);
}

static void *attn_setup_c(mcl_ctx *ctx, int64_t C)
{
    attn_st *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->C = C;
    const int64_t qs[3] = {S_CHUNK, HQ, DK}, ks[3] = {S_CHUNK, 1, DK}, bs[3] = {C > 0 ? C : 1, 1, DK};
    s->q = mcl_bench_rand(ctx, 3, qs, BENCH_SEED, 20, 1.0f, 1);
    s->k = mcl_bench_rand(ctx, 3, ks, BENCH_SEED, 21, 1.0f, 1);
    s->v = mcl_bench_rand(ctx, 3, ks, BENCH_SEED, 22, 1.0f, 1);
    s->kb = mcl_bench_rand(ctx, 3, bs, BENCH_SEED, 23, 1.0f, 0);
    s->vb = mcl_bench_rand(ctx, 3, bs, BENCH_SEED, 24, 1.0f, 0);
    s->g = mcl_bench_rand(ctx, 3, qs, BENCH_SEED, 25, 1.0f, 0);
    if (!s->q || !s->k || !s->v || !s->kb || !s->vb || !s->g) return attn_teardown(s), NULL;
    return s;
}

static void *attn0_setup(mcl_ctx *ctx) { return attn_setup_c(ctx, 0); }
static void *attn250_setup(mcl_ctx *ctx) { return attn_setup_c(ctx, 250); }
static void *attn1000_setup(mcl_ctx *ctx) { return attn_setup_c(ctx, 1000); }
static void *attn4000_setup(mcl_ctx *ctx) { return attn_setup_c(ctx, 4000); }

static int attn_iter(mcl_ctx *ctx, void *p)
{
    attn_st *s = p;
    mcl_attn_opts ao;
    memset(&ao, 0, sizeof ao);
    ao.n = s->C;
    ao.mask = 2;
    ao.scale = 0.125f; /* 1/sqrt(64) */
    mcl_tensor *o = NULL;
    int rc = mcl_attn_kv(ctx, s->q, s->k, s->v, s->kb, s->vb, &ao, &o) == MCL_OK &&
                     mcl_backward(ctx, mcl_sum(ctx, mcl_mul(ctx, o, s->g))) == MCL_OK
                 ? 0
                 : 1;
    mcl_tensor_zero_grad(s->q);
    mcl_tensor_zero_grad(s->k);
    mcl_tensor_zero_grad(s->v);
    mcl_ctx_reset(ctx);
    return rc;
}

/* ---------------------------------------------------------------- the harness's step */

/* The oct_step shapes above as a training config (data: generated images, bench_train.c). */
static const char train_conf[] =
    "model.arch = pi\nmodel.channels = 32\nmodel.width = 256\nmodel.blocks = 4\nmodel.heads = 4\n"
    "model.kv_heads = 1\nmodel.head_dim = 64\nmodel.ffw_mult = 4\nmodel.window = 1000\n"
    "model.n_way = 10\ndata.source = @IMAGES@\ndata.split = all\nstream.tasks = 100\n"
    "stream.per_task = 200\ntrain.batch = 50\ntrain.steps = 0\n";

static void *train_setup(mcl_ctx *ctx) { return mcl_bench_train_open(ctx, "oct", train_conf); }

static const mcl_bench_workload workloads[] = {
    {"oct_step",
     "online pi-transformer step: S 50, Conv-4 32 ch, 4 blocks width 256, 4 heads MQA dk 64, C 1000, AdamW",
     5, step_setup, step_iter, step_teardown, NULL},
    {"attn_C0", "attn_kv fwd+bwd S 50, 4 heads MQA dk 64, ring 0", 20, attn0_setup, attn_iter, attn_teardown, NULL},
    {"attn_C250", "attn_kv fwd+bwd S 50, 4 heads MQA dk 64, ring 250", 20, attn250_setup, attn_iter, attn_teardown, NULL},
    {"attn_C1000", "attn_kv fwd+bwd S 50, 4 heads MQA dk 64, ring 1000", 10, attn1000_setup, attn_iter, attn_teardown, NULL},
    {"attn_C4000", "attn_kv fwd+bwd S 50, 4 heads MQA dk 64, ring 4000", 5, attn4000_setup, attn_iter, attn_teardown, NULL},
    {"train_step", "the harness's online training step (step_loss, backward, AdamW, metrics), oct_step shapes, generated images",
     3, train_setup, mcl_bench_train_iter, mcl_bench_train_teardown, NULL},
};

int mcl_cli_bench_oct(int argc, char **argv)
{
    return mcl_bench_main("oct",
                          "Times the online transformers' workloads: oct_step, attn_C0/250/1000/4000 "
                          "(see tools/cli/bench_oct.c).",
                          "compare with PyTorch: python3 tools/torch/bench-acl-vs-torch.py --bench oct", workloads,
                          (int)(sizeof workloads / sizeof workloads[0]), BENCH_SEED, argc, argv);
}
