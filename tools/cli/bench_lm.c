/* bench_lm.c — `metacl bench lm`: the adaptive character language model's workloads, timed on
 * one backend (doc/lm-model.md). tools/torch/bench-lm-torch.py implements the same computations in
 * PyTorch, and `python3 tools/torch/bench-acl-vs-torch.py --bench lm` runs both back to back with the
 * ratios.
 *
 * The model is the shipped one (data/configs/lm-text.conf): a byte-level Transformer-XL of 4
 * pre-LN layers, width 192, 4 heads of 48, feed-forward 768 (GELU), memory 128 rows per layer,
 * relative positional attention (mcl_rel_attn); sparse fast weights on W_q, W_k, W_v, W_o of
 * every layer and on the byte embedding (17 augmented weights, g_φ 2 → 20 → 20 → 1 each),
 * M reset at every truncation. The data are fixed pseudo-random bytes (lcg_bytes below; the
 * PyTorch script draws the same). Every workload starts with a full memory (one forward of a
 * 128-byte segment and a commit in setup) and commits its segments' memory, so the memory
 * stays at 128 rows.
 *
 *   lm_train_window  one window of Algorithm 1 (lm_train.c window_loss) with B = 8 lanes:
 *                    k = 5, i.e. 4 fast steps of 64 bytes (mark, forward through W + M with
 *                    the memory, cross-entropy, mcl_metanet_write with the log kept, memory
 *                    commit; p 0.05, γ 0, β1 0, β2 1), then the gradient step of 128 bytes
 *                    (forward through W + M_4 rebuilt on the tape from the window's writes,
 *                    cross-entropy, backward), mcl_metanet_window_end, Adam (lr 7e-4, global
 *                    norm clip 0.5), memory commit
 *   lm_train_plain   one step of the plain Transformer-XL (model.fast = 0): B = 8, a segment
 *                    of 128 bytes after 128 memory rows: forward, cross-entropy, backward,
 *                    Adam (lr 7e-4, clip 0.5), memory commit
 *   lm_eval_static   evaluation (lm_eval.c), one lane, a 128-byte segment after 128 memory
 *                    rows: forward without a tape, memory commit
 *   lm_eval_dynamic  the same segment, dynamic evaluation: forward, cross-entropy, backward,
 *                    θ ← θ − lr·g + decay·(θ0 − θ) on every slow weight (lr 1e-4, decay 1e-3),
 *                    memory commit
 *   lm_eval_smn      the same segment, Sparse-MetaNet evaluation: forward, cross-entropy,
 *                    mcl_metanet_write without a log (p 0.5, γ 0.999, β1 = β2 = 0.5; M and I
 *                    accumulate over the iterations, as over a stream), memory commit
 *   train_step       the harness's own training step (src/learn/train.c: the family's step_loss
 *                    = one window with the metrics it logs, backward, Adam, clip 0.5) with
 *                    lm_train_window's model on a generated corpus (bench_train.c); with the
 *                    backend counters per step
 *
 * Throughput: every workload's note gives the bytes it predicts per second at the median time
 * (lm_train_window: B·(4·64 + 128) = 3072 training bytes per iteration; lm_train_plain: 1024;
 * the evaluations: 128), in the JSON as bytes_per_s. lm_train_window also gives its window log
 * before the gradient step (mcl_metanet_log_bytes) as log_bytes_sparse and log_bytes_dense.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_run.h"
#include "cli.h"
#include "lm.h"
#include "ops.h"
#include "optim.h"
#include "params.h"

#define BENCH_SEED 13ULL
#define K 5          /* the window: k − 1 = 4 fast steps, then the gradient step */
#define FAST_LEN 64  /* bytes per lane of a fast step                             */
#define SEG_LEN 128  /* bytes per lane of a gradient step, a plain step, an evaluation segment */
#define LANES 8      /* training lanes                                            */
#define LR 7e-4f
#define CLIP 0.5f
#define DYN_LR 1e-4f
#define DYN_DECAY 1e-3f

typedef enum lm_kind { LM_WINDOW, LM_PLAIN, LM_STATIC, LM_DYNAMIC, LM_SMN } lm_kind;

typedef struct lm_st {
    lm_kind kind;
    mcl_lm *m;
    mcl_lm_memory mem;
    mcl_optim *opt;                 /* training workloads                                     */
    int n_seg;                      /* segments per iteration                                 */
    mcl_tensor *x[K], *y[K];        /* inputs [B, n] and targets [B·n] of segment j           */
    int64_t bytes;                  /* bytes predicted per iteration                          */
    mcl_metanet_hyper h;
    int n_dyn;                      /* dynamic evaluation: the slow weights and their start   */
    mcl_tensor **dyn_w, **dyn_w0;
    uint64_t log_sparse, log_dense;
} lm_st;

static void lm_teardown(void *p)
{
    lm_st *s = p;
    if (!s) return;
    for (int j = 0; j < K; j++) {
        mcl_tensor_free(s->x[j]);
        mcl_tensor_free(s->y[j]);
    }
    for (int i = 0; i < s->n_dyn; i++) mcl_tensor_free(s->dyn_w0[i]);
    free(s->dyn_w);
    free(s->dyn_w0);
    mcl_optim_free(s->opt);
    mcl_lm_memory_free(&s->mem);
    mcl_lm_free(s->m);
    free(s);
}

/* The fixed data: lanes rows of n bytes, b_i = (x_i >> 16) mod 256 with x_0 = seed,
 * x_{i+1} = (1103515245 x_i + 12345) mod 2^31 over the rows one after the other.
 * bench-lm-torch.py draws the same bytes. */
static void lcg_bytes(float *out, int64_t count)
{
    uint64_t x = BENCH_SEED;
    for (int64_t i = 0; i < count; i++) {
        x = (1103515245ULL * x + 12345ULL) & 0x7fffffffULL;
        out[i] = (float)((x >> 16) & 255u);
    }
}

/* Segment j: lane b's bytes [off, off + n) as inputs [lanes, n] and the next bytes as targets
 * [lanes·n] (data: lanes rows of `row` bytes). */
static int make_segment(mcl_ctx *ctx, lm_st *s, int j, const float *data, int64_t lanes, int64_t row, int64_t off,
                        int64_t n)
{
    float *in = malloc((size_t)(2 * lanes * n) * sizeof *in);
    if (!in) return 1;
    for (int64_t b = 0; b < lanes; b++)
        for (int64_t i = 0; i < n; i++) {
            in[b * n + i] = data[b * row + off + i];
            in[lanes * n + b * n + i] = data[b * row + off + i + 1];
        }
    s->x[j] = mcl_tensor_new(ctx, lanes, n, 0, 0);
    s->y[j] = mcl_tensor_new(ctx, lanes * n, 0, 0, 0);
    int bad = !s->x[j] || !s->y[j] || mcl_tensor_write(s->x[j], in, lanes * n) != MCL_OK ||
              mcl_tensor_write(s->y[j], in + lanes * n, lanes * n) != MCL_OK;
    free(in);
    return bad;
}

/* Forward of segment j (mode: the fast weights' use) and, when loss is not NULL, its
 * cross-entropy; the new memory is left in *pend. */
static mcl_status seg_forward(mcl_ctx *ctx, lm_st *s, int j, mcl_fast_mode mode, mcl_tensor **loss,
                              mcl_lm_pending *pend)
{
    mcl_tensor *logits = NULL;
    mcl_status st = mcl_lm_forward(s->m, mode, &s->mem, s->x[j], &logits, pend);
    if (st == MCL_OK && loss) {
        *loss = mcl_cross_entropy(ctx, logits, s->y[j]);
        if (!*loss) st = mcl_ctx_status(ctx);
    }
    return st;
}

/* The slow weights dynamic evaluation moves (every trainable tensor but the meta-learners, as
 * lm_eval.c) and copies of their starting values. */
static int dyn_setup(mcl_ctx *ctx, lm_st *s)
{
    const int np = mcl_params_count(s->m->params);
    s->dyn_w = calloc((size_t)np, sizeof *s->dyn_w);
    s->dyn_w0 = calloc((size_t)np, sizeof *s->dyn_w0);
    if (!s->dyn_w || !s->dyn_w0) return 1;
    for (int i = 0; i < np; i++) {
        mcl_tensor *t = mcl_params_get(s->m->params, i);
        const char *nm = mcl_tensor_name(t);
        const size_t len = strlen(nm);
        if (strstr(nm, ".meta.") || (len > 5 && !strcmp(nm + len - 5, ".fast")) ||
            (len > 4 && !strcmp(nm + len - 4, ".avg")))
            continue;
        mcl_tensor *c = mcl_tensor_create(ctx, mcl_tensor_ndim(t), mcl_tensor_shape(t));
        if (!c || mcl_tensor_copy_into(c, t) != MCL_OK) {
            mcl_tensor_free(c);
            return 1;
        }
        s->dyn_w[s->n_dyn] = t;
        s->dyn_w0[s->n_dyn++] = c;
    }
    return 0;
}

/* The shipped model (fast weights or not), its memory of `lanes` lanes filled with one
 * 128-byte segment, the iteration's segments, and Adam for the training workloads. */
static void *lm_setup(mcl_ctx *ctx, lm_kind kind)
{
    lm_st *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->kind = kind;
    mcl_lm_config c;
    mcl_lm_config_default(&c);
    c.layers = 4;
    c.width = 192;
    c.heads = 4;
    c.head_dim = 48;
    c.ffw = 768;
    c.mem_len = 128;
    c.fast = kind != LM_PLAIN;
    c.fast_embed = 1;
    c.fast_ffw = 0;
    c.meta_hidden = 20;
    c.reset = 1;
    c.seed = BENCH_SEED;
    const int train = kind == LM_WINDOW || kind == LM_PLAIN;
    const int64_t lanes = train ? LANES : 1;
    s->m = mcl_lm_create(ctx, &c);
    if (!s->m || mcl_lm_memory_create(s->m, lanes, c.mem_len, &s->mem) != MCL_OK) return lm_teardown(s), NULL;
    const mcl_metanet_hyper train_h = {0.05f, 0.0f, 0.0f, 1.0f}, eval_h = {0.5f, 0.999f, 0.5f, 0.5f};
    s->h = kind == LM_WINDOW ? train_h : eval_h;
    /* the data: per lane the window's 4·64 + 128 bytes and one more target, or 128 + 1 */
    const int64_t row = (kind == LM_WINDOW ? (K - 1) * FAST_LEN + SEG_LEN : SEG_LEN) + 1;
    float *data = malloc((size_t)(lanes * row) * sizeof *data);
    if (!data) return lm_teardown(s), NULL;
    lcg_bytes(data, lanes * row);
    int bad = 0;
    if (kind == LM_WINDOW) {
        s->n_seg = K;
        for (int j = 0; j < K - 1 && !bad; j++)
            bad = make_segment(ctx, s, j, data, lanes, row, (int64_t)j * FAST_LEN, FAST_LEN);
        if (!bad) bad = make_segment(ctx, s, K - 1, data, lanes, row, (int64_t)(K - 1) * FAST_LEN, SEG_LEN);
        s->bytes = lanes * ((K - 1) * FAST_LEN + SEG_LEN);
    } else {
        s->n_seg = 1;
        bad = make_segment(ctx, s, 0, data, lanes, row, 0, SEG_LEN);
        s->bytes = lanes * SEG_LEN;
    }
    free(data);
    if (bad) return lm_teardown(s), NULL;
    /* a full memory: one segment of 128 bytes (the last one of the iteration), committed */
    mcl_lm_pending pend;
    mcl_no_grad_begin(ctx);
    mcl_status st = seg_forward(ctx, s, s->n_seg - 1, MCL_FAST_STEP, NULL, &pend);
    mcl_no_grad_end(ctx);
    if (st == MCL_OK) st = mcl_lm_memory_commit(&s->mem, &pend);
    mcl_ctx_reset(ctx);
    if (st != MCL_OK || s->mem.rows != c.mem_len) return lm_teardown(s), NULL;
    if (train) {
        mcl_optim_config oc;
        memset(&oc, 0, sizeof oc);
        oc.kind = MCL_OPTIM_ADAM;
        oc.sched.kind = MCL_SCHED_CONSTANT;
        oc.sched.base_lr = LR;
        oc.clip_norm = CLIP;
        if (mcl_optim_create(ctx, &oc, s->m->params, &s->opt) != MCL_OK) return lm_teardown(s), NULL;
    }
    if (kind == LM_DYNAMIC && dyn_setup(ctx, s)) return lm_teardown(s), NULL;
    return s;
}

static void *window_setup(mcl_ctx *ctx) { return lm_setup(ctx, LM_WINDOW); }
static void *plain_setup(mcl_ctx *ctx) { return lm_setup(ctx, LM_PLAIN); }
static void *static_setup(mcl_ctx *ctx) { return lm_setup(ctx, LM_STATIC); }
static void *dynamic_setup(mcl_ctx *ctx) { return lm_setup(ctx, LM_DYNAMIC); }
static void *smn_setup(mcl_ctx *ctx) { return lm_setup(ctx, LM_SMN); }

/* θ ← (θ − lr·g) + decay·(θ0 − θ) for every slow weight the loss reached (lm_eval.c's step,
 * one dyn_step op per weight). */
static mcl_status dyn_step(mcl_ctx *ctx, lm_st *s)
{
    return mcl_lm_dyn_step(ctx, s->dyn_w, s->dyn_w0, s->n_dyn, DYN_LR, DYN_DECAY);
}

/* One window of Algorithm 1 (lm_train.c window_loss, then the harness's backward, window end,
 * optimizer step and memory commit). */
static mcl_status window_iter(mcl_ctx *ctx, lm_st *s)
{
    mcl_metanet *mn = s->m->mn;
    mcl_lm_pending pend;
    mcl_tensor *loss = NULL;
    mcl_optim_zero_grad(s->opt);
    mcl_status st = mcl_metanet_window_begin(mn);
    for (int j = 0; j < K - 1 && st == MCL_OK; j++) {
        const size_t mark = mcl_tape_mark(ctx);
        mcl_tensor *l = NULL;
        st = seg_forward(ctx, s, j, MCL_FAST_STEP, &l, &pend);
        if (st == MCL_OK) st = mcl_metanet_write(mn, l, mark, &s->h, 1);
        if (st == MCL_OK) st = mcl_lm_memory_commit(&s->mem, &pend);
    }
    if (st == MCL_OK) mcl_metanet_log_bytes(mn, &s->log_sparse, &s->log_dense);
    if (st == MCL_OK) st = seg_forward(ctx, s, K - 1, MCL_FAST_WINDOW_END, &loss, &pend);
    if (st == MCL_OK) st = mcl_backward(ctx, loss);
    if (st == MCL_OK) st = mcl_metanet_window_end(mn, &s->h);
    if (st == MCL_OK) st = mcl_optim_step(s->opt);
    if (st == MCL_OK) st = mcl_lm_memory_commit(&s->mem, &pend);
    return st;
}

static int lm_iter(mcl_ctx *ctx, void *p)
{
    lm_st *s = p;
    mcl_lm_pending pend;
    mcl_tensor *loss = NULL;
    mcl_status st = MCL_OK;
    switch (s->kind) {
    case LM_WINDOW:
        st = window_iter(ctx, s);
        break;
    case LM_PLAIN:
        mcl_optim_zero_grad(s->opt);
        st = seg_forward(ctx, s, 0, MCL_FAST_STEP, &loss, &pend);
        if (st == MCL_OK) st = mcl_backward(ctx, loss);
        if (st == MCL_OK) st = mcl_optim_step(s->opt);
        break;
    case LM_STATIC:
        mcl_no_grad_begin(ctx);
        st = seg_forward(ctx, s, 0, MCL_FAST_STEP, NULL, &pend);
        mcl_no_grad_end(ctx);
        break;
    case LM_DYNAMIC:
        mcl_params_zero_grad(s->m->params);
        st = seg_forward(ctx, s, 0, MCL_FAST_STEP, &loss, &pend);
        if (st == MCL_OK) st = mcl_backward(ctx, loss);
        if (st == MCL_OK) st = dyn_step(ctx, s);
        break;
    case LM_SMN: {
        const size_t mark = mcl_tape_mark(ctx);
        st = seg_forward(ctx, s, 0, MCL_FAST_STEP, &loss, &pend);
        if (st == MCL_OK) st = mcl_metanet_write(s->m->mn, loss, mark, &s->h, 0);
        break;
    }
    }
    if (st == MCL_OK && s->kind != LM_WINDOW) st = mcl_lm_memory_commit(&s->mem, &pend);
    mcl_ctx_reset(ctx);
    return st == MCL_OK ? 0 : 1;
}

static void lm_note(void *p, mcl_bench_note *note)
{
    const lm_st *s = p;
    const double bps = note->ms_median > 0 ? (double)s->bytes / (note->ms_median * 1e-3) : 0.0;
    note->key[0] = "bytes_per_s";
    note->value[0] = bps;
    note->n = 1;
    if (s->kind != LM_WINDOW) {
        snprintf(note->text, sizeof note->text, "%lld bytes per iteration: %.0f bytes/s (median)",
                 (long long)s->bytes, bps);
        return;
    }
    const double sp = (double)s->log_sparse, de = (double)s->log_dense;
    snprintf(note->text, sizeof note->text,
             "%lld training bytes per window: %.0f bytes/s (median); window log before the gradient step: "
             "%.1f KiB sparse (writes + M_0) vs %.1f KiB dense (%.1f%%)",
             (long long)s->bytes, bps, sp / 1024.0, de / 1024.0, de > 0 ? 100.0 * sp / de : 0.0);
    note->key[1] = "log_bytes_sparse";
    note->value[1] = sp;
    note->key[2] = "log_bytes_dense";
    note->value[2] = de;
    note->n = 3;
}

/* ---------------------------------------------------------------- the harness's step */

/* The lm_train_window model as a training config (generated two-domain corpus). */
static const char train_conf[] =
    "model.layers = 4\nmodel.width = 192\nmodel.heads = 4\nmodel.head_dim = 48\nmodel.ffw = 768\n"
    "model.mem_len = 128\nmodel.fast = 1\nmodel.fast_embed = 1\nmodel.reset = 1\nsmn.k = 5\n"
    "smn.fast_len = 64\nsmn.seg_len = 128\nsmn.p = 0.05\nsmn.gamma = 0\nsmn.beta1 = 0\nsmn.beta2 = 1\n"
    "data.dir = @TEXT@\ndata.block = 2000\ndata.val_chars = 2000\ndata.eval_block = 2000\n"
    "train.batch = 8\ntrain.steps = 1000000\ntrain.lr = 0.0007\ntrain.clip = 0.5\n";

static void *train_setup(mcl_ctx *ctx) { return mcl_bench_train_open(ctx, "lm", train_conf); }

static const mcl_bench_workload workloads[] = {
    {"lm_train_window",
     "Transformer-XL 4x192 (4 heads of 48, ffw 768, memory 128) k=5 window, 8 lanes: 4 fast steps of 64 bytes "
     "+ gradient step of 128, fast q/k/v/o/embed, p 0.05, Adam",
     3, window_setup, lm_iter, lm_teardown, lm_note},
    {"lm_train_plain", "the same Transformer-XL without fast weights: one step of 8 x 128 bytes (fwd, CE, bwd, Adam)",
     3, plain_setup, lm_iter, lm_teardown, lm_note},
    {"lm_eval_static", "evaluation, 1 lane, 128 bytes after 128 memory rows: forward without a tape", 10,
     static_setup, lm_iter, lm_teardown, lm_note},
    {"lm_eval_dynamic", "the same segment, dynamic evaluation: fwd, CE, bwd, SGD with decay toward the trained weights",
     5, dynamic_setup, lm_iter, lm_teardown, lm_note},
    {"lm_eval_smn", "the same segment, Sparse-MetaNet evaluation: fwd, CE, fast-weight write (p 0.5, gamma 0.999)",
     5, smn_setup, lm_iter, lm_teardown, lm_note},
    {"train_step", "the harness's training window (step_loss = the k=5 window, backward, Adam with clip 0.5, metrics), "
     "lm_train_window's model, generated corpus",
     3, train_setup, mcl_bench_train_iter, mcl_bench_train_teardown, NULL},
};

int mcl_cli_bench_lm(int argc, char **argv)
{
    return mcl_bench_main("lm",
                          "Times the adaptive character language model's workloads: lm_train_window, lm_train_plain, "
                          "lm_eval_static, lm_eval_dynamic, lm_eval_smn (see tools/cli/bench_lm.c).",
                          "compare with PyTorch: python3 tools/torch/bench-acl-vs-torch.py --bench lm", workloads,
                          (int)(sizeof workloads / sizeof workloads[0]), BENCH_SEED, argc, argv);
}
