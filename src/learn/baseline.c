/* baseline.c — Conv-4 + linear head trained sequentially with SGD or Adam, plain or with a
 * classic continual-learning method (EWC, online EWC, SI, LwF, replay): the hand-crafted
 * baselines of the ACL evaluation. See baseline.h; the methods' pieces are in cl_methods.c,
 * the spec parser in baseline_spec.c.
 *
 * Random streams (Philox, key = the baseline seed): a learning problem (run r, episode e; a
 * Split-X run has e = 0 and r = its mcl_splitx run) owns the streams base .. base+63 with
 * base = r·2^40 + e·2^6: parameter tensor k is initialized from stream base + k (k < 17), the
 * replay buffer draws (reservoir and replay mini-batches) come from stream base + 17, the
 * Fisher subsets (fisher_max) from base + 18, the shuffles of task i from stream base + 32 + i
 * (i < 16 = MCL_ACL_MAX_TASKS; later Split-X tasks wrap around into 32..63). So the "alone"
 * learner of task i starts from the same initialization and sees the same shuffles as task i
 * inside the sequence.
 */
#include "baseline.h"
#include "cl_methods.h"
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
    cfg->method = MCL_BASELINE_PLAIN;
    cfg->regime = MCL_BASELINE_SHOTS;
    cfg->ewc_lambda = 100.0f;
    cfg->ewc_gamma = 0.9f;
    cfg->fisher_max = 0;
    cfg->si_c = 1.0f;
    cfg->si_xi = 0.1f;
    cfg->lwf_lambda = 1.0f;
    cfg->lwf_t = 2.0f;
    cfg->buffer = 100;
    cfg->replay_batch = 0;
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
    if (c->replay_batch == 0) c->replay_batch = c->batch_size;
    if ((c->optim != MCL_OPTIM_SGD && c->optim != MCL_OPTIM_ADAM) || !(c->lr > 0.0f) ||
        !isfinite(c->lr) || c->epochs < 1 || c->epochs > 1000000 || c->batch_size < 1 ||
        c->batch_size > MCL_BASELINE_MAX_BATCH || c->conv_channels < 1 ||
        c->conv_channels > 4096)
        return mcl_ctx_set_error(ctx, MCL_ERR_INVALID,
                                 "%s: bad baseline config (optimizer %d: SGD or Adam, lr %g > 0, "
                                 "epochs %d >= 1, batch %d in 1..%d, channels %d)",
                                 fn, (int)in->optim, (double)in->lr, in->epochs, in->batch_size,
                                 MCL_BASELINE_MAX_BATCH, in->conv_channels);
    const char *bad = NULL;
    if ((unsigned)c->method >= MCL_BASELINE_METHOD_COUNT) bad = "method (PLAIN..REPLAY)";
    else if (c->regime != MCL_BASELINE_SHOTS && c->regime != MCL_BASELINE_FULL) bad = "regime";
    else if ((c->method == MCL_BASELINE_EWC || c->method == MCL_BASELINE_EWC_ONLINE) &&
             !(c->ewc_lambda >= 0.0f && isfinite(c->ewc_lambda)))
        bad = "EWC lambda (>= 0)";
    else if (c->method == MCL_BASELINE_EWC_ONLINE && !(c->ewc_gamma >= 0.0f && c->ewc_gamma <= 1.0f))
        bad = "online EWC gamma (0..1)";
    else if ((c->method == MCL_BASELINE_EWC || c->method == MCL_BASELINE_EWC_ONLINE) &&
             c->fisher_max < 0)
        bad = "fisher examples (>= 0)";
    else if (c->method == MCL_BASELINE_SI &&
             !(c->si_c >= 0.0f && isfinite(c->si_c) && c->si_xi > 0.0f && isfinite(c->si_xi)))
        bad = "SI c (>= 0) or xi (> 0)";
    else if (c->method == MCL_BASELINE_LWF &&
             !(c->lwf_lambda >= 0.0f && isfinite(c->lwf_lambda) && c->lwf_t > 0.0f &&
               c->lwf_t <= 1000.0f))
        bad = "LwF lambda (>= 0) or T (0 < T <= 1000)";
    else if (c->method == MCL_BASELINE_REPLAY &&
             (c->buffer < 1 || c->buffer > MCL_BASELINE_MAX_BUFFER || c->replay_batch < 1 ||
              c->replay_batch > MCL_BASELINE_MAX_BATCH))
        bad = "replay buffer (1..1000000) or replay batch (1..32)";
    if (bad)
        return mcl_ctx_set_error(ctx, MCL_ERR_INVALID, "%s: bad baseline config: %s", fn, bad);
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
    /* the continual-learning method (cl_methods.h) */
    mcl_baseline_config cfg;
    int64_t P;            /* scalars of the registry                                */
    int tasks_done;       /* tasks learned so far in this problem                   */
    int32_t max_label;    /* largest label of the tasks learned so far (-1: none)   */
    float *theta, *grad;  /* [P] host scratch: parameters before a step, gradients  */
    float *theta_after;   /* [P] SI: parameters after a step                        */
    float *fisher;        /* [P] EWC: the last task's Fisher; online: the running F */
    float *anchor;        /* [P] online EWC: θ* (the latest)                        */
    double *ewc_a, *ewc_b;/* [P] EWC: Σ_t F_t and Σ_t F_t θ*_t                       */
    mcl_cl_si si;         /* SI                                                     */
    float *old;           /* LwF: [n · n_out] the old logits of the task's inputs   */
    int old_units;        /* LwF: units of the distillation (0: none this task)     */
    mcl_cl_replay replay; /* replay                                                 */
    mcl_rng replay_rng, fisher_rng;
} learner;

static void learner_free(learner *L)
{
    mcl_optim_free(L->opt);
    mcl_params_free(L->params);
    free(L->theta);
    free(L->grad);
    free(L->theta_after);
    free(L->fisher);
    free(L->anchor);
    free(L->ewc_a);
    free(L->ewc_b);
    free(L->old);
    mcl_cl_si_free(&L->si);
    mcl_cl_replay_free(&L->replay);
    memset(L, 0, sizeof *L);
}

/* The host state of the method (after the network exists). */
static mcl_status method_create(learner *L, uint64_t base)
{
    const mcl_baseline_config *c = &L->cfg;
    const size_t P = (size_t)L->P;
    int oom = 0;
    L->max_label = -1;
    mcl_rng_init(&L->replay_rng, c->seed, base + 17);
    mcl_rng_init(&L->fisher_rng, c->seed, base + 18);
    if (c->method == MCL_BASELINE_EWC) { /* the two sums, then what online EWC has too */
        L->ewc_a = calloc(P, sizeof *L->ewc_a);
        L->ewc_b = calloc(P, sizeof *L->ewc_b);
        oom = !L->ewc_a || !L->ewc_b;
    }
    switch (c->method) {
    case MCL_BASELINE_EWC:
    case MCL_BASELINE_EWC_ONLINE:
        L->fisher = calloc(P, sizeof *L->fisher);
        L->anchor = calloc(P, sizeof *L->anchor);
        L->theta = malloc(P * sizeof *L->theta);
        L->grad = malloc(P * sizeof *L->grad);
        oom |= !L->fisher || !L->anchor || !L->theta || !L->grad;
        break;
    case MCL_BASELINE_SI:
        L->theta = malloc(P * sizeof *L->theta);
        L->theta_after = malloc(P * sizeof *L->theta_after);
        L->grad = malloc(P * sizeof *L->grad);
        oom = !L->theta || !L->theta_after || !L->grad;
        if (!oom) {
            mcl_status st = mcl_cl_params_read(L->params, 0, L->theta);
            if (st != MCL_OK) return st;
            oom = mcl_cl_si_init(&L->si, L->P, c->si_xi, L->theta) != MCL_OK;
        }
        break;
    case MCL_BASELINE_REPLAY:
        oom = mcl_cl_replay_init(&L->replay, c->buffer) != MCL_OK;
        break;
    default:
        break;
    }
    return oom ? mcl_ctx_set_error(L->ctx, MCL_ERR_OOM, "baseline: out of memory (%lld parameters)",
                                   (long long)L->P)
               : MCL_OK;
}

static mcl_status learner_create(mcl_ctx *ctx, const mcl_baseline_config *c, int n_out,
                                 uint64_t base, learner *L)
{
    memset(L, 0, sizeof *L);
    L->ctx = ctx;
    L->cfg = *c;
    L->n_out = n_out;
    const int64_t C = c->conv_channels;
    L->side = c->image_size; /* c passed check_bcfg: 0 became 32, the range is checked there */
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
    if (st == MCL_OK) {
        L->P = mcl_params_numel(L->params);
        st = method_create(L, base);
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

/* Does the method put a penalty on the parameters in this task? */
static int has_penalty(const learner *L)
{
    const mcl_baseline_method m = L->cfg.method;
    return L->tasks_done > 0 &&
           (m == MCL_BASELINE_EWC || m == MCL_BASELINE_EWC_ONLINE || m == MCL_BASELINE_SI);
}

/* After the backward pass of the task loss: the penalty's gradient added on the host (SI also
 * keeps the task-loss gradient and the parameters for its path integral), then the step. */
static mcl_status learner_step(learner *L)
{
    const mcl_baseline_config *c = &L->cfg;
    const int pen = has_penalty(L), si = c->method == MCL_BASELINE_SI;
    mcl_status st = MCL_OK;
    if (pen || si) {
        st = mcl_cl_params_read(L->params, 0, L->theta);
        if (st == MCL_OK) st = mcl_cl_params_read(L->params, 1, L->grad);
    }
    if (st == MCL_OK && pen) {
        /* SI keeps the task-loss gradient in L->grad; the total goes into theta_after */
        float *g = L->grad;
        if (si) {
            memcpy(L->theta_after, L->grad, (size_t)L->P * sizeof *g);
            g = L->theta_after;
        }
        if (c->method == MCL_BASELINE_EWC)
            mcl_cl_ewc_grad(L->ewc_a, L->ewc_b, L->theta, L->P, c->ewc_lambda, g);
        else if (c->method == MCL_BASELINE_EWC_ONLINE)
            mcl_cl_quad_penalty(L->theta, L->anchor, L->fisher, L->P, 0.5 * c->ewc_lambda, g);
        else
            mcl_cl_quad_penalty(L->theta, L->si.start, L->si.Omega, L->P, c->si_c, g);
        st = mcl_cl_params_write(L->params, 1, g);
    }
    if (st == MCL_OK) st = mcl_optim_step(L->opt);
    if (st == MCL_OK && si) {
        st = mcl_cl_params_read(L->params, 0, L->theta_after);
        if (st == MCL_OK) mcl_cl_si_step(&L->si, L->grad, L->theta, L->theta_after);
    }
    return st;
}

/* Replay rows appended to a mini-batch: r examples of the buffer (images, labels). */
static mcl_status replay_rows(learner *L, int r, mcl_tensor **img, mcl_tensor **lab)
{
    mcl_ctx *ctx = L->ctx;
    int slot[MCL_BASELINE_MAX_BATCH];
    const int64_t S2 = (int64_t)L->side * L->side; /* a slot holds the image at the learner's side */
    float *px = malloc((size_t)r * (size_t)S2 * sizeof *px);
    float lb[MCL_BASELINE_MAX_BATCH];
    if (!px) return mcl_ctx_set_error(ctx, MCL_ERR_OOM, "baseline: out of memory");
    mcl_status st = mcl_cl_replay_sample(&L->replay, &L->replay_rng, r, slot);
    for (int i = 0; i < r && st == MCL_OK; i++) {
        memcpy(px + (int64_t)i * S2, L->replay.img + (int64_t)slot[i] * MCL_CL_IMG,
               (size_t)S2 * sizeof *px);
        lb[i] = (float)L->replay.lab[slot[i]];
    }
    *img = st == MCL_OK ? mcl_tensor_new(ctx, r, 1, L->side, L->side) : NULL;
    *lab = *img ? mcl_tensor_new(ctx, r, 0, 0, 0) : NULL;
    if (st == MCL_OK && (!*img || !*lab)) st = mcl_learner_fail(ctx, "baseline", "replay tensors");
    if (st == MCL_OK) st = mcl_tensor_write(*img, px, (int64_t)r * S2);
    if (st == MCL_OK) st = mcl_tensor_write(*lab, lb, r);
    free(px);
    return st;
}

/* epochs passes over n examples, shuffled by rng, mini-batches of at most bs: the task loss
 * (+ LwF's distillation on the recorded old logits, + replay rows), backward, the step. */
static mcl_status learner_train(learner *L, const mcl_dataset *ds, const int64_t *idx,
                                const int32_t *lab, int64_t n, int epochs, int bs, mcl_rng *rng,
                                int normalize)
{
    mcl_ctx *ctx = L->ctx;
    if (n < 1) return MCL_OK;
    if (n > 0x7fffffff) return mcl_ctx_set_error(ctx, MCL_ERR_INVALID, "baseline: %lld examples in one task", (long long)n);
    const int lwf = L->old_units > 0;
    int *order = malloc((size_t)n * sizeof *order);
    int64_t *bi = malloc((size_t)bs * sizeof *bi);
    int32_t *bl = malloc((size_t)bs * sizeof *bl);
    float *bold = lwf ? malloc((size_t)bs * (size_t)L->n_out * sizeof *bold) : NULL;
    if (!order || !bi || !bl || (lwf && !bold)) {
        free(order);
        free(bi);
        free(bl);
        free(bold);
        return mcl_ctx_set_error(ctx, MCL_ERR_OOM, "baseline: out of memory");
    }
    const int replay = L->cfg.method == MCL_BASELINE_REPLAY && L->replay.n > 0;
    const int rb = replay ? (L->cfg.replay_batch < L->replay.n ? L->cfg.replay_batch : L->replay.n) : 0;
    mcl_status st = MCL_OK;
    for (int64_t i = 0; i < n; i++) order[i] = (int)i;
    for (int e = 0; e < epochs && st == MCL_OK; e++) {
        mcl_rng_shuffle_int(rng, order, n);
        for (int64_t s0 = 0; s0 < n && st == MCL_OK; s0 += bs) {
            const int64_t m = min64(bs, n - s0);
            for (int64_t r = 0; r < m; r++) {
                bi[r] = idx[order[s0 + r]];
                bl[r] = lab[order[s0 + r]];
                if (lwf)
                    memcpy(bold + r * L->n_out, L->old + (int64_t)order[s0 + r] * L->n_out,
                           (size_t)L->n_out * sizeof *bold);
            }
            mcl_tensor *img = NULL, *lt = NULL, *rimg = NULL, *rlab = NULL;
            st = mcl_learner_rows_side(ctx, "baseline", ds, bi, bl, m, L->side, normalize, &img, &lt);
            if (st == MCL_OK && rb > 0) st = replay_rows(L, rb, &rimg, &rlab);
            if (st == MCL_OK) {
                mcl_optim_zero_grad(L->opt);
                mcl_tensor *x = rb > 0 ? mcl_concat(ctx, img, rimg, 0) : img;
                mcl_tensor *y = rb > 0 ? mcl_concat(ctx, lt, rlab, 0) : lt;
                mcl_tensor *logits = learner_forward(L, x, m + rb);
                mcl_tensor *loss = mcl_cross_entropy(ctx, logits, y);
                if (lwf && loss)
                    loss = mcl_add(ctx, loss, mcl_cl_lwf_loss(ctx, logits, bold, L->n_out, L->old_units,
                                                              L->cfg.lwf_t, L->cfg.lwf_lambda));
                if (!loss) st = mcl_learner_fail(ctx, "baseline", "forward");
                if (st == MCL_OK) st = mcl_backward(ctx, loss);
                if (st == MCL_OK) st = learner_step(L);
            }
            mcl_tensor_free(img);
            mcl_tensor_free(lt);
            mcl_tensor_free(rimg);
            mcl_tensor_free(rlab);
            mcl_ctx_reset(ctx);
        }
    }
    free(order);
    free(bi);
    free(bl);
    free(bold);
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

/* ======================================================================= task ends */

/* The loss −log p(y_k|x_k) of one example, for the Fisher. */
typedef struct fisher_arg {
    learner *L;
    const mcl_dataset *ds;
    const int64_t *idx;
    const int32_t *lab;
    const int *pick; /* example k of the Fisher = row pick[k] */
    int normalize;
    mcl_tensor *img, *lt;
} fisher_arg;

static mcl_tensor *fisher_loss(void *arg, int64_t k)
{
    fisher_arg *a = arg;
    mcl_tensor_free(a->img);
    mcl_tensor_free(a->lt);
    a->img = a->lt = NULL;
    const int r = a->pick[k];
    if (mcl_learner_rows_side(a->L->ctx, "baseline", a->ds, a->idx + r, a->lab + r, 1, a->L->side,
                              a->normalize, &a->img, &a->lt) != MCL_OK)
        return NULL;
    return mcl_cross_entropy(a->L->ctx, learner_forward(a->L, a->img, 1), a->lt);
}

/* EWC / online EWC after a task: the Fisher over the task's examples (or fisher_max of them,
 * a random subset from the Fisher stream) and the anchor. */
static mcl_status ewc_task_end(learner *L, const mcl_dataset *ds, const int64_t *idx,
                               const int32_t *lab, int64_t n, int normalize)
{
    const mcl_baseline_config *c = &L->cfg;
    int *pick = malloc((size_t)n * sizeof *pick);
    if (!pick) return mcl_ctx_set_error(L->ctx, MCL_ERR_OOM, "baseline: out of memory");
    for (int64_t i = 0; i < n; i++) pick[i] = (int)i;
    int64_t m = n;
    if (c->fisher_max > 0 && c->fisher_max < n) {
        mcl_rng_shuffle_int(&L->fisher_rng, pick, n);
        m = c->fisher_max;
    }
    fisher_arg fa = {L, ds, idx, lab, pick, normalize, NULL, NULL};
    float *F = c->method == MCL_BASELINE_EWC ? L->fisher : L->grad; /* online: F_new in scratch */
    mcl_status st = mcl_cl_fisher(L->ctx, L->params, fisher_loss, &fa, m, F);
    mcl_tensor_free(fa.img);
    mcl_tensor_free(fa.lt);
    free(pick);
    if (st == MCL_OK) st = mcl_cl_params_read(L->params, 0, L->theta);
    if (st != MCL_OK) return st;
    if (c->method == MCL_BASELINE_EWC) {
        mcl_cl_ewc_add_task(L->ewc_a, L->ewc_b, L->fisher, L->theta, L->P);
    } else {
        mcl_cl_fisher_decay(L->fisher, F, L->P, L->tasks_done > 0 ? c->ewc_gamma : 0.0f);
        memcpy(L->anchor, L->theta, (size_t)L->P * sizeof *L->anchor);
    }
    return MCL_OK;
}

/* Replay after a task: every example of the task offered to the reservoir, in order. */
static mcl_status replay_task_end(learner *L, const mcl_dataset *ds, const int64_t *idx,
                                  const int32_t *lab, int64_t n, int normalize)
{
    mcl_ctx *ctx = L->ctx;
    float px[MCL_CL_IMG] = {0}; /* the first side² values: the image at the learner's side */
    mcl_status st = MCL_OK;
    for (int64_t k = 0; k < n && st == MCL_OK; k++) {
        const int slot = mcl_cl_replay_offer(&L->replay, &L->replay_rng);
        if (slot < 0) continue;
        mcl_tensor *img = NULL;
        st = mcl_learner_rows_side(ctx, "baseline", ds, idx + k, NULL, 1, L->side, normalize, &img,
                                   NULL);
        if (st == MCL_OK) st = mcl_tensor_read(img, px, (int64_t)L->side * L->side);
        if (st == MCL_OK) mcl_cl_replay_put(&L->replay, slot, px, lab[k]);
        mcl_tensor_free(img);
    }
    return st;
}

/* One task of the problem: LwF's old logits first, the training, then what the method keeps. */
static mcl_status learner_task(learner *L, const mcl_dataset *ds, const int64_t *idx,
                               const int32_t *lab, int64_t n, mcl_rng *rng, int normalize)
{
    const mcl_baseline_config *c = &L->cfg;
    mcl_status st = MCL_OK;
    L->old_units = 0;
    if (c->method == MCL_BASELINE_LWF && L->tasks_done > 0 && L->max_label >= 0) {
        free(L->old);
        L->old = malloc((size_t)n * (size_t)L->n_out * sizeof *L->old);
        if (!L->old) return mcl_ctx_set_error(L->ctx, MCL_ERR_OOM, "baseline: out of memory");
        st = learner_logits(L, ds, idx, n, MCL_EVAL_QUERY_CHUNK, normalize, L->old);
        L->old_units = L->max_label + 1 < L->n_out ? L->max_label + 1 : L->n_out;
    }
    if (st == MCL_OK) st = learner_train(L, ds, idx, lab, n, c->epochs, c->batch_size, rng, normalize);
    if (st == MCL_OK && (c->method == MCL_BASELINE_EWC || c->method == MCL_BASELINE_EWC_ONLINE))
        st = ewc_task_end(L, ds, idx, lab, n, normalize);
    if (st == MCL_OK && c->method == MCL_BASELINE_SI) {
        st = mcl_cl_params_read(L->params, 0, L->theta);
        if (st == MCL_OK) mcl_cl_si_task_end(&L->si, L->theta);
    }
    if (st == MCL_OK && c->method == MCL_BASELINE_REPLAY)
        st = replay_task_end(L, ds, idx, lab, n, normalize);
    for (int64_t k = 0; k < n; k++) L->max_label = lab[k] > L->max_label ? lab[k] : L->max_label;
    L->tasks_done++;
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
    const mcl_dataset *full_ds; /* regime full: the set it trained on (never queried) */
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
    b->full_ds = NULL;
    b->base = problem_base(run, episode);
    mcl_status st = learner_create(L->ctx, &b->cfg, n_outputs, b->base, &b->net);
    b->have_net = st == MCL_OK;
    L->lanes = 1;
    L->n_logits = n_outputs;
    return st;
}

/* The full-data regime: every image of each dataset class present among the task's n examples,
 * labelled as those examples are (a class given two labels is an error). Classes in order of
 * first appearance, images in dataset order. *out_idx / *out_lab are malloc'ed. */
static mcl_status expand_full(mcl_ctx *ctx, const mcl_dataset *ds, const int64_t *idx,
                              const int32_t *lab, int64_t n, int64_t **out_idx,
                              int32_t **out_lab, int64_t *out_n)
{
    *out_idx = NULL;
    *out_lab = NULL;
    int32_t *label_of = malloc((size_t)(ds->n_classes > 0 ? ds->n_classes : 1) * sizeof *label_of);
    int *order = malloc((size_t)(n > 0 ? n : 1) * sizeof *order);
    if (!label_of || !order) {
        free(label_of);
        free(order);
        return mcl_ctx_set_error(ctx, MCL_ERR_OOM, "baseline: out of memory");
    }
    for (int c = 0; c < ds->n_classes; c++) label_of[c] = -1;
    int n_cls = 0;
    int64_t total = 0;
    mcl_status st = MCL_OK;
    for (int64_t k = 0; k < n && st == MCL_OK; k++) {
        const int pos = idx[k] >= 0 && idx[k] < ds->n ? mcl_dataset_class_pos(ds, ds->labels[idx[k]]) : -1;
        if (pos < 0)
            st = mcl_ctx_set_error(ctx, MCL_ERR_INVALID, "baseline: example %lld is not in '%s'",
                                   (long long)idx[k], ds->name);
        else if (label_of[pos] < 0) {
            label_of[pos] = lab[k];
            order[n_cls++] = pos;
            total += ds->class_start[pos + 1] - ds->class_start[pos];
        } else if (label_of[pos] != lab[k])
            st = mcl_ctx_set_error(ctx, MCL_ERR_INVALID,
                                   "baseline: regime full: class %d of '%s' has two labels (%d, %d) "
                                   "in one task",
                                   (int)ds->labels[idx[k]], ds->name, (int)label_of[pos], (int)lab[k]);
    }
    if (st == MCL_OK) {
        *out_idx = malloc((size_t)(total > 0 ? total : 1) * sizeof **out_idx);
        *out_lab = malloc((size_t)(total > 0 ? total : 1) * sizeof **out_lab);
        if (!*out_idx || !*out_lab) st = mcl_ctx_set_error(ctx, MCL_ERR_OOM, "baseline: out of memory");
    }
    int64_t w = 0;
    for (int c = 0; c < n_cls && st == MCL_OK; c++) {
        const int pos = order[c];
        for (int64_t q = ds->class_start[pos]; q < ds->class_start[pos + 1]; q++) {
            (*out_idx)[w] = ds->class_index[q];
            (*out_lab)[w++] = label_of[pos];
        }
    }
    *out_n = w;
    if (st != MCL_OK) {
        free(*out_idx);
        free(*out_lab);
        *out_idx = NULL;
        *out_lab = NULL;
    }
    free(label_of);
    free(order);
    return st;
}

static mcl_status bl_observe(mcl_learner *L, int task, const mcl_dataset *ds, const int64_t *idx,
                             const int32_t *lab, int64_t n, const mcl_learn_opts *o)
{
    bl_learner *b = L->impl;
    mcl_rng rng; /* the shuffles of task i: stream base + 32 + i (mod 32) */
    mcl_rng_init(&rng, b->cfg.seed, b->base + 32 + (uint64_t)(task % 32));
    if (b->cfg.regime != MCL_BASELINE_FULL)
        return learner_task(&b->net, ds, idx, lab, n, &rng, o->normalize);
    int64_t *fi = NULL, fn = 0;
    int32_t *fl = NULL;
    mcl_status st = expand_full(L->ctx, ds, idx, lab, n, &fi, &fl, &fn);
    if (st == MCL_OK) {
        b->full_ds = ds;
        st = learner_task(&b->net, ds, fi, fl, fn, &rng, o->normalize);
    }
    free(fi);
    free(fl);
    return st;
}

static mcl_status bl_predict(mcl_learner *L, const mcl_dataset *ds, const int64_t *idx, int64_t n,
                             const mcl_learn_opts *o, float *logits)
{
    bl_learner *b = L->impl;
    if (b->full_ds && ds == b->full_ds)
        return mcl_ctx_set_error(L->ctx, MCL_ERR_INVALID,
                                 "baseline: regime full trained on every image of '%s'; it cannot "
                                 "be queried on the same set",
                                 ds->name);
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
    if (bcfg->regime == MCL_BASELINE_FULL)
        return mcl_ctx_set_error(ctx, MCL_ERR_INVALID,
                                 "mcl_baseline_eval_seq: regime full (every image of a class) is for "
                                 "Split-X; task sequences query images of the same classes");
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

static const float grid_sgd_lr[] = {1e-4f, 3e-4f, 1e-3f, 3e-3f, 1e-2f, 3e-2f, 1e-1f};
static const float grid_adam_lr[] = {1e-6f, 3e-6f, 1e-5f, 3e-5f, 1e-4f, 3e-4f, 1e-3f, 3e-3f};
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

static const float grid_ewc[] = {1.0f, 10.0f, 100.0f, 1000.0f, 10000.0f};
static const float grid_si[] = {0.01f, 0.1f, 1.0f, 10.0f, 100.0f};
static const float grid_lwf[] = {0.1f, 0.3f, 1.0f, 3.0f, 10.0f};

mcl_status mcl_baseline_method_grid(mcl_baseline_method m, const float **vals, int *n,
                                    const char **name)
{
    if (!vals || !n || !name) return MCL_ERR_NULL;
    *vals = NULL;
    *n = 0;
    *name = NULL;
    switch (m) {
    case MCL_BASELINE_PLAIN:
    case MCL_BASELINE_REPLAY: return MCL_OK;
    case MCL_BASELINE_EWC:
    case MCL_BASELINE_EWC_ONLINE:
        *vals = grid_ewc, *n = (int)(sizeof grid_ewc / sizeof grid_ewc[0]), *name = "lambda";
        return MCL_OK;
    case MCL_BASELINE_SI:
        *vals = grid_si, *n = (int)(sizeof grid_si / sizeof grid_si[0]), *name = "c";
        return MCL_OK;
    case MCL_BASELINE_LWF:
        *vals = grid_lwf, *n = (int)(sizeof grid_lwf / sizeof grid_lwf[0]), *name = "lambda";
        return MCL_OK;
    default: return MCL_ERR_INVALID;
    }
}

void mcl_baseline_set_hp(mcl_baseline_config *c, float v)
{
    switch (c->method) {
    case MCL_BASELINE_EWC:
    case MCL_BASELINE_EWC_ONLINE: c->ewc_lambda = v; break;
    case MCL_BASELINE_SI: c->si_c = v; break;
    case MCL_BASELINE_LWF: c->lwf_lambda = v; break;
    default: break;
    }
}

float mcl_baseline_get_hp(const mcl_baseline_config *c)
{
    switch (c->method) {
    case MCL_BASELINE_EWC:
    case MCL_BASELINE_EWC_ONLINE: return c->ewc_lambda;
    case MCL_BASELINE_SI: return c->si_c;
    case MCL_BASELINE_LWF: return c->lwf_lambda;
    default: return NAN;
    }
}

/* The next value of a grid axis past v in direction dir (+1 up, -1 down); 0 when the axis'
 * ladder ends there. lr (axis 0) and the method's value (axis 2) step on the 1-3 ladder
 * (1e-3 -> 3e-3 -> 1e-2; down 1e-2 -> 3e-3), lr within [1e-7, 1], the method's value within
 * [1e-4, 1e6] and never from 0; epochs (axis 1) double up to 200 and halve down to 1. */
int mcl_baseline_grid_next(int axis, double v, int dir, double *next)
{
    if (!next || !(v > 0) || (dir != 1 && dir != -1)) return 0;
    double w;
    if (axis == 1) {
        w = dir > 0 ? 2 * v : floor(v / 2);
        if (w < 1 || w > 200 || w == v) return 0;
    } else if (axis == 0 || axis == 2) {
        /* v = m 10^k with m in [1, 10), read with a relative tolerance: a float grid value
         * such as 0.01f is 0.00999999978 as a double and must count as 1e-2 */
        double e = pow(10.0, floor(log10(v) + 1e-5)), m = v / e;
        if (m >= 9.99) e *= 10, m /= 10;
        if (dir > 0) w = m < 2 ? 3 * e : 10 * e;
        else w = m < 2 ? 0.3 * e : (m < 4 ? e : 3 * e);
        if (fabs(w - v) <= 1e-4 * v) return 0; /* no step (cannot happen on the ladder) */
        if (axis == 0 ? (w < 1e-7 * 0.999 || w > 1.001) : (w < 1e-4 * 0.999 || w > 1e6 * 1.001)) return 0;
    } else {
        return 0;
    }
    *next = w;
    return 1;
}

static double axis_value(const mcl_baseline_grid_point *p, int ax)
{
    return ax == 0 ? (double)p->lr : ax == 1 ? (double)p->epochs : (double)p->hp;
}

/* One point of the search: the baseline (base with lr, epochs and the method's value hp, NaN
 * for none) trained and evaluated on val, appended to s; s->best follows the highest score. */
static mcl_status select_visit(mcl_ctx *ctx, const mcl_baseline_config *base, const mcl_eval_data *val,
                               float lr, int epochs, float hp, mcl_baseline_selection *s)
{
    mcl_baseline_config c = *base;
    c.lr = lr;
    c.epochs = epochs;
    if (!isnan(hp)) mcl_baseline_set_hp(&c, hp);
    mcl_cl_result res;
    mcl_status st = val->kind == MCL_EVAL_SEQ
                        ? mcl_baseline_eval_seq(ctx, &c, val->pools, val->seq, &res)
                        : mcl_baseline_eval_splitx(ctx, &c, val->train, val->test, val->splitx, &res);
    if (st != MCL_OK) return st;
    mcl_baseline_grid_point *p = &s->point[s->n++];
    p->lr = c.lr;
    p->epochs = c.epochs;
    p->hp = mcl_baseline_get_hp(&c);
    p->score = res.mean.acc;
    p->score_std = res.std.acc;
    mcl_cl_result_free(&res);
    const double sc = isnan(p->score) ? -INFINITY : p->score;
    if (s->best < 0 || sc > (isnan(s->point[s->best].score) ? -INFINITY : s->point[s->best].score))
        s->best = s->n - 1;
    return MCL_OK;
}

mcl_status mcl_baseline_select(mcl_ctx *ctx, const mcl_baseline_config *base,
                               const mcl_eval_data *val, const float *lrs, int n_lr,
                               const int *epochs, int n_epochs, mcl_baseline_config *best,
                               mcl_baseline_selection *sel)
{
    return mcl_baseline_select_hp(ctx, base, val, lrs, n_lr, epochs, n_epochs, NULL, 0, best, sel);
}

mcl_status mcl_baseline_select_hp(mcl_ctx *ctx, const mcl_baseline_config *base,
                                  const mcl_eval_data *val, const float *lrs, int n_lr,
                                  const int *epochs, int n_epochs, const float *hps, int n_hp,
                                  mcl_baseline_config *best, mcl_baseline_selection *sel)
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
    const float *dh = NULL;
    int nh = 0;
    const char *hname = NULL;
    if (mcl_baseline_method_grid(base->method, &dh, &nh, &hname) != MCL_OK)
        return mcl_ctx_set_error(ctx, MCL_ERR_INVALID, "%s: unknown method %d", fn, (int)base->method);
    if (nh == 0) { /* the method has no hyperparameter of its own: one point */
        hps = NULL;
        n_hp = 1;
    } else if (!hps) {
        hps = dh;
        n_hp = nh;
    }
    if (n_lr < 1 || n_epochs < 1 || n_hp < 1 ||
        (int64_t)n_lr * n_epochs * n_hp > MCL_BASELINE_GRID_MAX)
        return mcl_ctx_set_error(ctx, MCL_ERR_INVALID,
                                 "%s: grid of %d lr × %d epoch × %d method values (1..%d points)",
                                 fn, n_lr, n_epochs, n_hp, MCL_BASELINE_GRID_MAX);
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
    mcl_status st = MCL_OK;
    for (int a = 0; a < n_lr && st == MCL_OK; a++)
        for (int e = 0; e < n_epochs && st == MCL_OK; e++)
            for (int h = 0; h < n_hp && st == MCL_OK; h++)
                st = select_visit(ctx, base, val, lrs[a], epochs[e], hps ? hps[h] : NAN, s);
    s->n_grid = s->n;
    if (st == MCL_OK && s->best < 0)
        st = mcl_ctx_set_error(ctx, MCL_ERR_INVALID, "%s: empty grid", fn);
    /* the grid grows past an edge the best point sits on: along each axis the grid gave two or
     * more values for, the best point with that value moved one step further is visited while
     * the best is at the axis' largest or smallest visited value, until it is inside or the
     * axis' ladder ends (or the point budget is spent) */
    const int axis_n[3] = {n_lr, n_epochs, hps ? n_hp : 1};
    for (int grew = 1; st == MCL_OK && grew;) {
        grew = 0;
        for (int ax = 0; ax < 3 && st == MCL_OK && !grew; ax++) {
            if (axis_n[ax] < 2) continue;
            const mcl_baseline_grid_point b = s->point[s->best];
            const double v = axis_value(&b, ax);
            double lo = v, hi = v;
            for (int g = 0; g < s->n; g++) {
                const double w = axis_value(&s->point[g], ax);
                if (w < lo) lo = w;
                if (w > hi) hi = w;
            }
            for (int dir = 1; dir >= -1 && !grew; dir -= 2) {
                if (v != (dir > 0 ? hi : lo)) continue;
                double next;
                if (!mcl_baseline_grid_next(ax, v, dir, &next)) continue;
                if (s->n >= MCL_BASELINE_GRID_MAX) break;
                mcl_baseline_grid_point q = b;
                if (ax == 0) q.lr = (float)next;
                else if (ax == 1) q.epochs = (int)next;
                else q.hp = (float)next;
                int seen = 0; /* a point is never trained twice */
                for (int g = 0; g < s->n && !seen; g++)
                    seen = s->point[g].lr == q.lr && s->point[g].epochs == q.epochs &&
                           (s->point[g].hp == q.hp || (isnan(s->point[g].hp) && isnan(q.hp)));
                if (seen) continue;
                st = select_visit(ctx, base, val, q.lr, q.epochs, q.hp, s);
                grew = st == MCL_OK;
            }
        }
    }
    if (st != MCL_OK) {
        memset(s, 0, sizeof *s);
        return st;
    }
    *best = *base;
    best->lr = s->point[s->best].lr;
    best->epochs = s->point[s->best].epochs;
    if (hps) mcl_baseline_set_hp(best, s->point[s->best].hp);
    return MCL_OK;
}
