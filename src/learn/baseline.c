/* baseline.c — Conv-4 + linear head trained sequentially with SGD or Adam: the hand-crafted
 * baselines of the ACL evaluation. See baseline.h.
 *
 * Random streams (Philox, key = the baseline seed): a learning problem (run r, episode e; a
 * Split-X run has e = 0 and r = its mcl_splitx run) owns the streams base .. base+63 with
 * base = r·2^40 + e·2^6: parameter tensor k is initialized from stream base + k (k < 32), the
 * shuffles of task i come from stream base + 32 + i (i < 16 = MCL_ACL_MAX_TASKS). So the
 * "alone" learner of task i starts from the same initialization and sees the same shuffles as
 * task i inside the sequence.
 */
#include "baseline.h"
#include "conv4.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


void mcl_baseline_config_default(mcl_baseline_config *cfg)
{
    if (!cfg) return;
    memset(cfg, 0, sizeof *cfg);
    cfg->optim = MCL_OPTIM_SGD;
    cfg->lr = 1e-2f;
    cfg->epochs = 5;
    cfg->batch_size = MCL_BASELINE_MAX_BATCH;
    cfg->conv_channels = 32;
    cfg->seed = 1;
}

static uint64_t problem_base(int64_t run, int64_t episode)
{
    return ((uint64_t)run << 40) + ((uint64_t)episode << 6);
}

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* Resolve defaults and check. */
static mcl_status check_bcfg(mcl_ctx *ctx, const char *fn, const mcl_baseline_config *in,
                             mcl_baseline_config *c)
{
    *c = *in;
    if (c->batch_size == 0) c->batch_size = MCL_BASELINE_MAX_BATCH;
    if (c->conv_channels == 0) c->conv_channels = 32;
    if (c->image_size == 0) c->image_size = MCL_IMG;
    if (c->image_size < MCL_CONV4_MIN_IMAGE || c->image_size > MCL_IMG)
        return mcl_ctx_set_error(ctx, MCL_ERR_INVALID,
                                 "%s: baseline image_size %d (the data sets give %d..%d)", fn,
                                 in->image_size, MCL_CONV4_MIN_IMAGE, MCL_IMG);
    if ((c->optim != MCL_OPTIM_SGD && c->optim != MCL_OPTIM_ADAM) || !(c->lr > 0.0f) ||
        !isfinite(c->lr) || c->epochs < 1 || c->epochs > 1000000 || c->batch_size < 1 ||
        c->batch_size > MCL_BASELINE_MAX_BATCH || c->conv_channels < 1 ||
        c->conv_channels > 4096)
        return mcl_ctx_set_error(ctx, MCL_ERR_INVALID,
                                 "%s: bad baseline config (optimizer %d: SGD or Adam, lr %g > 0, "
                                 "epochs %d >= 1, batch %d in 1..%d, channels %d)",
                                 fn, (int)in->optim, (double)in->lr, in->epochs, in->batch_size,
                                 MCL_BASELINE_MAX_BATCH, in->conv_channels);
    if (!mcl_grad_enabled(ctx))
        return mcl_ctx_set_error(ctx, MCL_ERR_STATE,
                                 "%s: the baselines train with gradients; called inside a "
                                 "no-grad scope",
                                 fn);
    return MCL_OK;
}

/* ======================================================================= the learner */

typedef struct learner {
    mcl_ctx *ctx;
    mcl_params *params;
    mcl_optim *opt;
    mcl_conv4 conv;
    mcl_tensor *head_w, *head_b;
    int n_out, side;
    int64_t n_feat;
} learner;

static void learner_free(learner *L)
{
    mcl_optim_free(L->opt);
    mcl_params_free(L->params);
    memset(L, 0, sizeof *L);
}

static mcl_status learner_create(mcl_ctx *ctx, const mcl_baseline_config *c, int n_out,
                                 uint64_t base, learner *L)
{
    memset(L, 0, sizeof *L);
    L->ctx = ctx;
    L->n_out = n_out;
    const int64_t C = c->conv_channels;
    L->side = c->image_size > 0 ? c->image_size : MCL_IMG;
    if (L->side < MCL_CONV4_MIN_IMAGE || L->side > MCL_IMG)
        return mcl_ctx_set_error(ctx, MCL_ERR_INVALID, "baseline: image_size %d (need %d..%d)",
                                 L->side, MCL_CONV4_MIN_IMAGE, MCL_IMG);
    L->params = mcl_params_create(ctx);
    if (!L->params) return mcl_learner_fail(ctx, "baseline", "parameter registry");
    /* Conv-4 from streams base .. base+15 (conv4.h), the head from base+16 */
    mcl_status st = mcl_conv4_create(&L->conv, ctx, L->params, 1, (int)C, L->side, c->seed, base);
    L->n_feat = L->conv.n_features; /* C · s², s = 2 at 32, 1 at 28 */
    const uint64_t k = 16;
    const int64_t shw[2] = {L->n_feat, n_out}, shb[1] = {n_out};
    if (st == MCL_OK) {
        L->head_w = mcl_params_add(L->params, "head.w", 2, shw);
        L->head_b = mcl_params_add(L->params, "head.b", 1, shb);
        if (!L->head_w || !L->head_b) st = mcl_learner_fail(ctx, "baseline", "parameter");
    }
    if (st == MCL_OK)
        st = mcl_tensor_randn(L->head_w, c->seed, base + k, 0.0f,
                              1.0f / sqrtf((float)L->n_feat));
    if (st == MCL_OK) {
        mcl_optim_config oc;
        memset(&oc, 0, sizeof oc);
        oc.kind = c->optim;
        oc.sched.kind = MCL_SCHED_CONSTANT;
        oc.sched.base_lr = c->lr;
        st = mcl_optim_create(ctx, &oc, L->params, &L->opt);
    }
    if (st != MCL_OK) learner_free(L);
    return st;
}

/* x [n,1,S,S] -> logits [n, n_out] */
static mcl_tensor *learner_forward(learner *L, mcl_tensor *x, int64_t n)
{
    mcl_ctx *ctx = L->ctx;
    mcl_tensor *f = mcl_conv4_forward(ctx, &L->conv, x, n, 0.0f, 0);
    return mcl_bias_add(ctx, mcl_matmul(ctx, f, L->head_w, 0, 0), L->head_b);
}


/* epochs passes over n examples, shuffled by rng, mini-batches of at most bs. */
static mcl_status learner_train(learner *L, const mcl_dataset *ds, const int64_t *idx,
                                const int32_t *lab, int64_t n, int epochs, int bs, mcl_rng *rng,
                                int normalize)
{
    mcl_ctx *ctx = L->ctx;
    if (n < 1) return MCL_OK;
    int *order = malloc((size_t)n * sizeof *order);
    int64_t *bi = malloc((size_t)bs * sizeof *bi);
    int32_t *bl = malloc((size_t)bs * sizeof *bl);
    if (!order || !bi || !bl) {
        free(order);
        free(bi);
        free(bl);
        return mcl_ctx_set_error(ctx, MCL_ERR_OOM, "baseline: out of memory");
    }
    mcl_status st = MCL_OK;
    for (int64_t i = 0; i < n; i++) order[i] = (int)i;
    for (int e = 0; e < epochs && st == MCL_OK; e++) {
        mcl_rng_shuffle_int(rng, order, n);
        for (int64_t s0 = 0; s0 < n && st == MCL_OK; s0 += bs) {
            const int64_t m = min64(bs, n - s0);
            for (int64_t r = 0; r < m; r++) {
                bi[r] = idx[order[s0 + r]];
                bl[r] = lab[order[s0 + r]];
            }
            mcl_tensor *img = NULL, *lt = NULL;
            st = mcl_learner_rows_side(ctx, "baseline", ds, bi, bl, m, L->side, normalize, &img, &lt);
            if (st == MCL_OK) {
                mcl_optim_zero_grad(L->opt);
                mcl_tensor *loss = mcl_cross_entropy(ctx, learner_forward(L, img, m), lt);
                if (!loss) st = mcl_learner_fail(ctx, "baseline", "forward");
                if (st == MCL_OK) st = mcl_backward(ctx, loss);
                if (st == MCL_OK) st = mcl_optim_step(L->opt);
            }
            mcl_tensor_free(img);
            mcl_tensor_free(lt);
            mcl_ctx_reset(ctx);
        }
    }
    free(order);
    free(bi);
    free(bl);
    return st;
}

/* Logits of n examples into out[n·n_out], in calls of at most chunk rows, no gradients. */
static mcl_status learner_logits(learner *L, const mcl_dataset *ds, const int64_t *idx,
                                 int64_t n, int64_t chunk, int normalize, float *out)
{
    mcl_ctx *ctx = L->ctx;
    const int64_t cap = min64(chunk, n > 0 ? n : 1);
    mcl_status st = MCL_OK;
    mcl_no_grad_begin(ctx);
    for (int64_t s0 = 0; s0 < n && st == MCL_OK; s0 += cap) {
        const int64_t m = min64(cap, n - s0);
        mcl_tensor *img = NULL;
        st = mcl_learner_rows_side(ctx, "baseline", ds, idx + s0, NULL, m, L->side, normalize, &img,
                                   NULL);
        mcl_tensor *logits = st == MCL_OK ? learner_forward(L, img, m) : NULL;
        if (st == MCL_OK && !logits) st = mcl_learner_fail(ctx, "baseline", "forward");
        if (st == MCL_OK) st = mcl_tensor_read(logits, out + s0 * L->n_out, m * L->n_out);
        mcl_tensor_free(img);
        mcl_ctx_reset(ctx);
    }
    mcl_no_grad_end(ctx);
    return st;
}

/* ======================================================================= as a learner */

/* The baseline as a learner of the protocols (learner.h): one problem at a time (lanes 1);
 * reset builds a fresh network whose randomness is keyed by (run, episode); observe trains it
 * on the task's examples; predict gives its logits. */
typedef struct bl_learner {
    mcl_baseline_config cfg;
    learner net;
    int have_net;
    uint64_t base;
} bl_learner;

static mcl_status bl_begin(mcl_learner *L)
{
    bl_learner *b = L->impl;
    mcl_baseline_config c;
    mcl_status st = check_bcfg(L->ctx, "baseline", &b->cfg, &c);
    if (st == MCL_OK) mcl_ctx_reset(L->ctx);
    return st;
}

static void bl_drop(bl_learner *b)
{
    if (b->have_net) learner_free(&b->net);
    b->have_net = 0;
}

static void bl_end(mcl_learner *L)
{
    bl_drop(L->impl);
    mcl_ctx_reset(L->ctx);
}

static mcl_status bl_reset(mcl_learner *L, int lanes, int n_outputs, int64_t run, int64_t episode)
{
    bl_learner *b = L->impl;
    if (lanes != 1)
        return mcl_ctx_set_error(L->ctx, MCL_ERR_INVALID, "baseline: %d problems at once (1 only)", lanes);
    bl_drop(b);
    b->base = problem_base(run, episode);
    mcl_status st = learner_create(L->ctx, &b->cfg, n_outputs, b->base, &b->net);
    b->have_net = st == MCL_OK;
    L->lanes = 1;
    L->n_logits = n_outputs;
    return st;
}

static mcl_status bl_observe(mcl_learner *L, int task, const mcl_dataset *ds, const int64_t *idx,
                             const int32_t *lab, int64_t n, const mcl_learn_opts *o)
{
    bl_learner *b = L->impl;
    mcl_rng rng; /* the shuffles of task i: stream base + 32 + i */
    mcl_rng_init(&rng, b->cfg.seed, b->base + 32 + (uint64_t)task);
    return learner_train(&b->net, ds, idx, lab, n, b->cfg.epochs, b->cfg.batch_size, &rng,
                         o->normalize);
}

static mcl_status bl_predict(mcl_learner *L, const mcl_dataset *ds, const int64_t *idx, int64_t n,
                             const mcl_learn_opts *o, float *logits)
{
    bl_learner *b = L->impl;
    return learner_logits(&b->net, ds, idx, n, o->query_chunk, o->normalize, logits);
}

static void bl_destroy(mcl_learner *L)
{
    if (L->impl) bl_drop(L->impl);
    free(L->impl);
    free(L);
}

static const mcl_learner_ops baseline_ops = {"baseline", bl_begin,   bl_end,    bl_reset,
                                             bl_observe, bl_predict, bl_destroy};

mcl_status mcl_baseline_learner_create(mcl_ctx *ctx, const mcl_baseline_config *bcfg,
                                       mcl_learner **out)
{
    static const char fn[] = "mcl_baseline_learner_create";
    if (!ctx) return MCL_ERR_NULL;
    if (!bcfg || !out) return mcl_ctx_set_error(ctx, MCL_ERR_NULL, "%s: NULL argument", fn);
    *out = NULL;
    mcl_baseline_config c;
    mcl_status st = check_bcfg(ctx, fn, bcfg, &c);
    if (st != MCL_OK) return st;
    mcl_learner *L = calloc(1, sizeof *L);
    bl_learner *b = calloc(1, sizeof *b);
    if (!L || !b) {
        free(L);
        free(b);
        return mcl_ctx_set_error(ctx, MCL_ERR_OOM, "%s: out of memory", fn);
    }
    b->cfg = c;
    L->ops = &baseline_ops;
    L->ctx = ctx;
    L->max_lanes = 1;
    L->max_outputs = 0; /* the head is sized by reset */
    L->impl = b;
    *out = L;
    return MCL_OK;
}

mcl_status mcl_baseline_eval_seq(mcl_ctx *ctx, const mcl_baseline_config *bcfg,
                                 const mcl_class_pool *pools, const mcl_seq_eval_cfg *cfg,
                                 mcl_cl_result *res)
{
    if (!ctx) return MCL_ERR_NULL;
    if (res) memset(res, 0, sizeof *res);
    if (!bcfg || !pools || !cfg || !res)
        return mcl_ctx_set_error(ctx, MCL_ERR_NULL, "mcl_baseline_eval_seq: NULL argument");
    mcl_learner *L = NULL;
    mcl_status st = mcl_baseline_learner_create(ctx, bcfg, &L);
    if (st == MCL_OK) st = mcl_eval_seq(L, pools, cfg, res);
    mcl_learner_free(L);
    return st;
}

mcl_status mcl_baseline_eval_splitx(mcl_ctx *ctx, const mcl_baseline_config *bcfg,
                                    const mcl_dataset *train, const mcl_dataset *test,
                                    const mcl_splitx_eval_cfg *cfg, mcl_cl_result *res)
{
    if (!ctx) return MCL_ERR_NULL;
    if (res) memset(res, 0, sizeof *res);
    if (!bcfg || !train || !test || !cfg || !res)
        return mcl_ctx_set_error(ctx, MCL_ERR_NULL, "mcl_baseline_eval_splitx: NULL argument");
    mcl_learner *L = NULL;
    mcl_status st = mcl_baseline_learner_create(ctx, bcfg, &L);
    if (st == MCL_OK) st = mcl_eval_splitx(L, train, test, cfg, res);
    mcl_learner_free(L);
    return st;
}

/* ======================================================================= selection */

static const float grid_sgd_lr[] = {1e-3f, 3e-3f, 1e-2f, 3e-2f, 1e-1f};
static const float grid_adam_lr[] = {1e-4f, 3e-4f, 1e-3f, 3e-3f};
static const int grid_epochs[] = {1, 5, 10, 25};

mcl_status mcl_baseline_default_grid(mcl_optim_kind kind, const float **lrs, int *n_lr,
                                     const int **epochs, int *n_epochs)
{
    if (!lrs || !n_lr || !epochs || !n_epochs) return MCL_ERR_NULL;
    if (kind == MCL_OPTIM_SGD) {
        *lrs = grid_sgd_lr;
        *n_lr = (int)(sizeof grid_sgd_lr / sizeof grid_sgd_lr[0]);
    } else if (kind == MCL_OPTIM_ADAM) {
        *lrs = grid_adam_lr;
        *n_lr = (int)(sizeof grid_adam_lr / sizeof grid_adam_lr[0]);
    } else {
        return MCL_ERR_INVALID;
    }
    *epochs = grid_epochs;
    *n_epochs = (int)(sizeof grid_epochs / sizeof grid_epochs[0]);
    return MCL_OK;
}

mcl_status mcl_baseline_select(mcl_ctx *ctx, const mcl_baseline_config *base,
                               const mcl_eval_data *val, const float *lrs, int n_lr,
                               const int *epochs, int n_epochs, mcl_baseline_config *best,
                               mcl_baseline_selection *sel)
{
    static const char fn[] = "mcl_baseline_select";
    if (!ctx) return MCL_ERR_NULL;
    if (sel) memset(sel, 0, sizeof *sel);
    if (!base || !val || !best) return mcl_ctx_set_error(ctx, MCL_ERR_NULL, "%s: NULL argument", fn);
    if (!lrs || !epochs) {
        const float *dl = NULL;
        const int *de = NULL;
        int nl = 0, ne = 0;
        if (mcl_baseline_default_grid(base->optim, &dl, &nl, &de, &ne) != MCL_OK)
            return mcl_ctx_set_error(ctx, MCL_ERR_INVALID,
                                     "%s: no default grid for optimizer %d (SGD or Adam)", fn,
                                     (int)base->optim);
        if (!lrs) lrs = dl, n_lr = nl;
        if (!epochs) epochs = de, n_epochs = ne;
    }
    if (n_lr < 1 || n_epochs < 1 || n_lr * n_epochs > MCL_BASELINE_GRID_MAX)
        return mcl_ctx_set_error(ctx, MCL_ERR_INVALID, "%s: grid of %d lr × %d epoch values (1..%d points)",
                                 fn, n_lr, n_epochs, MCL_BASELINE_GRID_MAX);
    if (val->kind == MCL_EVAL_SEQ ? (!val->pools || !val->seq)
                                  : val->kind == MCL_EVAL_SPLITX
                                        ? (!val->train || !val->test || !val->splitx)
                                        : 1)
        return mcl_ctx_set_error(ctx, MCL_ERR_INVALID,
                                 "%s: validation data incomplete (kind %d)", fn, (int)val->kind);
    mcl_baseline_selection local;
    memset(&local, 0, sizeof local);
    mcl_baseline_selection *s = sel ? sel : &local;
    memset(s, 0, sizeof *s);
    s->best = -1;
    double best_score = -INFINITY;
    mcl_status st = MCL_OK;
    for (int a = 0; a < n_lr && st == MCL_OK; a++)
        for (int e = 0; e < n_epochs && st == MCL_OK; e++) {
            mcl_baseline_config c = *base;
            c.lr = lrs[a];
            c.epochs = epochs[e];
            mcl_cl_result res;
            st = val->kind == MCL_EVAL_SEQ
                     ? mcl_baseline_eval_seq(ctx, &c, val->pools, val->seq, &res)
                     : mcl_baseline_eval_splitx(ctx, &c, val->train, val->test, val->splitx, &res);
            if (st != MCL_OK) break;
            mcl_baseline_grid_point *p = &s->point[s->n++];
            p->lr = c.lr;
            p->epochs = c.epochs;
            p->score = res.mean.acc;
            p->score_std = res.std.acc;
            mcl_cl_result_free(&res);
            double sc = isnan(p->score) ? -INFINITY : p->score;
            if (s->best < 0 || sc > best_score) {
                s->best = s->n - 1;
                best_score = sc;
            }
        }
    if (st == MCL_OK && s->best < 0)
        st = mcl_ctx_set_error(ctx, MCL_ERR_INVALID, "%s: empty grid", fn);
    if (st != MCL_OK) {
        memset(s, 0, sizeof *s);
        return st;
    }
    *best = *base;
    best->lr = s->point[s->best].lr;
    best->epochs = s->point[s->best].epochs;
    return MCL_OK;
}
