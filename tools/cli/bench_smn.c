/* bench_smn.c — `metacl bench smn`: the Sparse Meta Networks' workloads, timed on one backend
 * (doc/smn-model.md). tools/torch/bench-smn-torch.py implements the same computations in PyTorch,
 * and `python3 tools/torch/bench-acl-vs-torch.py --bench smn` runs both back to back with the ratios.
 *
 *   smn_wcst_window    one k = 3 window of Algorithm 1 for the WCST agent (mlp 12 → 256 → 256
 *                      ReLU, policy head 4, value head 1, every layer augmented; g_φ 2 → 20 →
 *                      20 → 1; p 0.3, γ 0.9, β1 = β2 = 0.5) on fixed episodes of 16 cards
 *                      [16, 12] (one-hot colour / shape / number blocks), a different episode
 *                      per step. The loss of every step is fixed: cross-entropy of the policy
 *                      logits against fixed actions + 0.5 · mean squared error of the value
 *                      against fixed rewards (±1). (The A2C loss of `metacl train smn` differs
 *                      only in per-row weights of the same terms.) 2 fast steps (mark, forward
 *                      through W + M, loss, partial backward to G, write with the log kept),
 *                      then the gradient step: forward through W + M_2 rebuilt on the tape from
 *                      the window's writes, loss, backward, window end, Adam (lr 3e-4)
 *   smn_resnet_window  the same window for the Online-X residual CNN (width 16: blocks of 16,
 *                      24, 32, 64 channels, instance norm, 5-way head, every conv and the head
 *                      augmented) on rounds of 16 images [16, 1, 32, 32] ~ N(0, 1), fixed
 *                      labels, cross-entropy; p 0.3, γ 0.99, β1 = β2 = 0.5
 *   smn_resnet_plain   one plain online step of the same CNN without fast weights (forward,
 *                      cross-entropy, backward, Adam): the online fine-tuning baseline's step
 *   train_step         the harness's own WCST training step (src/learn/train.c: the family's
 *                      step_loss with the metrics it logs, backward, Adam), smn_wcst_window's
 *                      agent; with the backend counters per step
 *
 * Memory: just before the window's gradient-step forward the bench reads the window's log
 * (mcl_metanet_log_bytes): the sparse writes it keeps (indices and g_φ's inputs, plus M_0)
 * against a dense version (M, z, the mask and g_φ's saved activations on every element at
 * every step). Both are printed under the table and given in the JSON as log_bytes_sparse and
 * log_bytes_dense.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_run.h"
#include "cli.h"
#include "smn.h"

#define BENCH_SEED 13ULL
#define K 3   /* the window: k − 1 = 2 fast steps, then the gradient step */
#define ROWS 16
#define CARD 12 /* WCST card code: colour, shape, number, one-hot blocks of 4 */
#define ACTIONS 4
#define CLASSES 5

typedef struct smn_st {
    mcl_smn *m;
    mcl_optim *opt;
    mcl_tensor *x[K], *y[K], *r[K]; /* inputs, class targets, rewards [ROWS, 1] (wcst) or NULL */
    mcl_metanet_hyper h;
    int window; /* 1: a k-window with fast weights; 0: a plain step on x[0] */
    uint64_t log_sparse, log_dense;
} smn_st;

static void smn_teardown(void *p)
{
    smn_st *s = p;
    if (!s) return;
    for (int j = 0; j < K; j++) {
        mcl_tensor_free(s->x[j]);
        mcl_tensor_free(s->y[j]);
        mcl_tensor_free(s->r[j]);
    }
    mcl_optim_free(s->opt);
    mcl_smn_free(s->m);
    free(s);
}

static mcl_tensor *host_tensor(mcl_ctx *ctx, const float *v, int ndim, const int64_t *shape)
{
    mcl_tensor *t = mcl_tensor_create(ctx, ndim, shape);
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) n *= shape[d];
    if (t && mcl_tensor_write(t, v, n) != MCL_OK) {
        mcl_tensor_free(t);
        return NULL;
    }
    return t;
}

/* The model and Adam (lr 3e-4). */
static smn_st *smn_setup_model(mcl_ctx *ctx, const mcl_smn_config *c)
{
    smn_st *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->m = mcl_smn_create(ctx, c);
    s->h = c->train_h;
    s->window = c->fast;
    mcl_optim_config oc;
    memset(&oc, 0, sizeof oc);
    oc.kind = MCL_OPTIM_ADAM;
    oc.sched.kind = MCL_SCHED_CONSTANT;
    oc.sched.base_lr = 3e-4f;
    if (!s->m || mcl_optim_create(ctx, &oc, s->m->params, &s->opt) != MCL_OK) return smn_teardown(s), NULL;
    return s;
}

/* The WCST agent and three fixed episodes: card r of step j has colour (7r + 5j) mod 4,
 * shape (3r + j + 1) mod 4, number (5r + 3j + 2) mod 4; action (r + j) mod 4; reward +1 when
 * (3r + j) is odd, else −1. bench-smn-torch.py builds the same numbers. */
static void *wcst_setup(mcl_ctx *ctx)
{
    mcl_smn_config c;
    mcl_smn_config_default(&c); /* mlp 12 → 2 × 256 → 4 + value, every layer augmented, k 3 */
    c.arch = MCL_SMN_MLP;
    c.in_dim = CARD;
    c.hidden = 256;
    c.layers = 2;
    c.n_out = ACTIONS;
    c.value_head = 1;
    c.fast = 1;
    c.fast_head = 1;
    c.k = K;
    c.meta_hidden = 20;
    c.seed = BENCH_SEED;
    const mcl_metanet_hyper h = {0.3f, 0.9f, 0.5f, 0.5f};
    c.train_h = c.eval_h = h;
    smn_st *s = smn_setup_model(ctx, &c);
    if (!s) return NULL;
    const int64_t xs[2] = {ROWS, CARD}, ys[1] = {ROWS}, rs[2] = {ROWS, 1};
    for (int j = 0; j < K; j++) {
        float x[ROWS * CARD] = {0}, y[ROWS], r[ROWS];
        for (int i = 0; i < ROWS; i++) {
            x[i * CARD + 0 + (7 * i + 5 * j) % 4] = 1.0f;
            x[i * CARD + 4 + (3 * i + j + 1) % 4] = 1.0f;
            x[i * CARD + 8 + (5 * i + 3 * j + 2) % 4] = 1.0f;
            y[i] = (float)((i + j) % ACTIONS);
            r[i] = (3 * i + j) % 2 ? 1.0f : -1.0f;
        }
        s->x[j] = host_tensor(ctx, x, 2, xs);
        s->y[j] = host_tensor(ctx, y, 1, ys);
        s->r[j] = host_tensor(ctx, r, 2, rs);
        if (!s->x[j] || !s->y[j] || !s->r[j]) return smn_teardown(s), NULL;
    }
    return s;
}

/* The Online-X CNN (width 16, 5 classes) and three rounds of 16 images ~ N(0, 1), labels
 * (i + j) mod 5. fast = 0: the plain network. */
static void *resnet_setup_fast(mcl_ctx *ctx, int fast)
{
    mcl_smn_config c;
    mcl_smn_config_default(&c);
    c.arch = MCL_SMN_RESNET;
    c.width = 16;
    c.n_out = CLASSES;
    c.value_head = 0;
    c.fast = fast;
    c.fast_head = 1;
    c.k = K;
    c.meta_hidden = 20;
    c.seed = BENCH_SEED;
    const mcl_metanet_hyper h = {0.3f, 0.99f, 0.5f, 0.5f};
    c.train_h = c.eval_h = h;
    smn_st *s = smn_setup_model(ctx, &c);
    if (!s) return NULL;
    const int64_t xs[4] = {ROWS, 1, 32, 32}, ys[1] = {ROWS};
    for (int j = 0; j < K; j++) {
        float y[ROWS];
        for (int i = 0; i < ROWS; i++) y[i] = (float)((i + j) % CLASSES);
        s->x[j] = mcl_bench_rand(ctx, 4, xs, BENCH_SEED, 1 + (uint64_t)j, 1.0f, 0);
        s->y[j] = host_tensor(ctx, y, 1, ys);
        if (!s->x[j] || !s->y[j]) return smn_teardown(s), NULL;
    }
    return s;
}

static void *resnet_window_setup(mcl_ctx *ctx) { return resnet_setup_fast(ctx, 1); }
static void *resnet_plain_setup(mcl_ctx *ctx) { return resnet_setup_fast(ctx, 0); }

/* The fixed loss of step j: CE(logits, y) (+ 0.5 · mean (value − r)² with a value head). */
static mcl_tensor *step_loss(mcl_ctx *ctx, smn_st *s, int j, mcl_smn_mode mode)
{
    mcl_tensor *lg = NULL, *v = NULL;
    if (mcl_smn_forward(s->m, mode, s->x[j], ROWS, &lg, s->r[j] ? &v : NULL) != MCL_OK) return NULL;
    mcl_tensor *loss = mcl_cross_entropy(ctx, lg, s->y[j]);
    if (s->r[j]) {
        mcl_tensor *dv = mcl_sub(ctx, v, s->r[j]);
        loss = mcl_add(ctx, loss, mcl_scale(ctx, mcl_mean(ctx, mcl_mul(ctx, dv, dv)), 0.5f));
    }
    return loss;
}

/* One window (Algorithm 1 with k = 3), or one plain step. */
static int smn_iter(mcl_ctx *ctx, void *p)
{
    smn_st *s = p;
    mcl_metanet *mn = s->m->mn;
    mcl_optim_zero_grad(s->opt);
    mcl_status st = MCL_OK;
    mcl_tensor *loss = NULL;
    if (s->window) {
        st = mcl_metanet_window_begin(mn);
        for (int j = 0; j < K - 1 && st == MCL_OK; j++) {
            const size_t mark = mcl_tape_mark(ctx);
            mcl_tensor *l = step_loss(ctx, s, j, MCL_SMN_FAST_STEP);
            st = l ? mcl_metanet_write(mn, l, mark, &s->h, 1) : MCL_ERR_BACKEND;
        }
        if (st == MCL_OK) mcl_metanet_log_bytes(mn, &s->log_sparse, &s->log_dense);
        if (st == MCL_OK) {
            loss = step_loss(ctx, s, K - 1, MCL_SMN_WINDOW_END);
            if (!loss) st = MCL_ERR_BACKEND;
        }
        if (st == MCL_OK) st = mcl_backward(ctx, loss);
        if (st == MCL_OK) st = mcl_metanet_window_end(mn, &s->h);
    } else {
        loss = step_loss(ctx, s, 0, MCL_SMN_FAST_STEP);
        st = loss ? mcl_backward(ctx, loss) : MCL_ERR_BACKEND;
    }
    if (st == MCL_OK) st = mcl_optim_step(s->opt);
    mcl_ctx_reset(ctx);
    return st == MCL_OK ? 0 : 1;
}

static void smn_note(void *p, mcl_bench_note *note)
{
    const smn_st *s = p;
    const double sp = (double)s->log_sparse, de = (double)s->log_dense;
    snprintf(note->text, sizeof note->text,
             "window log before the gradient step: %.1f KiB sparse (writes + M_0) vs %.1f KiB dense (%.1f%%)",
             sp / 1024.0, de / 1024.0, de > 0 ? 100.0 * sp / de : 0.0);
    note->key[0] = "log_bytes_sparse";
    note->value[0] = sp;
    note->key[1] = "log_bytes_dense";
    note->value[1] = de;
    note->n = 2;
}

/* ---------------------------------------------------------------- the harness's step */

/* The smn_wcst_window agent as a training config (data/configs/smn-wcst.conf's model). */
static const char train_conf[] =
    "task = wcst\nmodel.arch = mlp\nmodel.in_dim = 12\nmodel.hidden = 256\nmodel.layers = 2\n"
    "model.n_out = 4\nmodel.k = 3\nmodel.p = 0.3\nmodel.gamma = 0.9\nwcst.episode_len = 16\n"
    "train.steps = 1000000\ntrain.lr = 3e-4\n";

static void *train_setup(mcl_ctx *ctx) { return mcl_bench_train_open(ctx, "smn", train_conf); }

static const mcl_bench_workload workloads[] = {
    {"smn_wcst_window",
     "WCST agent k=3 window (2 fast steps + gradient step): 16 cards x 12, mlp 256x2, heads 4+1, H 20, "
     "p 0.3, Adam",
     20, wcst_setup, smn_iter, smn_teardown, smn_note},
    {"smn_resnet_window",
     "Online-X CNN k=3 window: 16 images 1x32x32, 4 res blocks w 16, 5-way head, H 20, p 0.3, Adam", 5,
     resnet_window_setup, smn_iter, smn_teardown, smn_note},
    {"smn_resnet_plain", "the same CNN without fast weights: one online step (fwd, CE, bwd, Adam)", 10,
     resnet_plain_setup, smn_iter, smn_teardown, NULL},
    {"train_step", "the harness's WCST training step (step_loss with the A2C episode, backward, Adam, metrics), mlp 256x2",
     5, train_setup, mcl_bench_train_iter, mcl_bench_train_teardown, NULL},
};

int mcl_cli_bench_smn(int argc, char **argv)
{
    return mcl_bench_main("smn",
                          "Times the Sparse Meta Networks' workloads: smn_wcst_window, smn_resnet_window, "
                          "smn_resnet_plain (see tools/cli/bench_smn.c).",
                          "compare with PyTorch: python3 tools/torch/bench-acl-vs-torch.py --bench smn", workloads,
                          (int)(sizeof workloads / sizeof workloads[0]), BENCH_SEED, argc, argv);
}
