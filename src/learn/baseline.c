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

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BL_NORM_EPS 1e-5f

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

static mcl_status ctx_fail(mcl_ctx *ctx, const char *fn, const char *what)
{
    if (mcl_ctx_status(ctx) != MCL_OK) return mcl_ctx_status(ctx);
    return mcl_ctx_set_error(ctx, MCL_ERR_BACKEND, "%s: %s failed", fn, what);
}

/* Resolve defaults and check. */
static mcl_status check_bcfg(mcl_ctx *ctx, const char *fn, const mcl_baseline_config *in,
                             mcl_baseline_config *c)
{
    *c = *in;
    if (c->batch_size == 0) c->batch_size = MCL_BASELINE_MAX_BATCH;
    if (c->conv_channels == 0) c->conv_channels = 32;
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
    mcl_tensor *conv_w[4], *conv_b[4], *norm_g[4], *norm_b[4];
    mcl_tensor *head_w, *head_b;
    int n_out;
    int64_t n_feat;
} learner;

static void learner_free(learner *L)
{
    mcl_optim_free(L->opt);
    mcl_params_free(L->params);
    memset(L, 0, sizeof *L);
}

static mcl_tensor *add(learner *L, const char *name, int ndim, const int64_t *shape)
{
    return mcl_params_add(L->params, name, ndim, shape);
}

static mcl_status learner_create(mcl_ctx *ctx, const mcl_baseline_config *c, int n_out,
                                 uint64_t base, learner *L)
{
    memset(L, 0, sizeof *L);
    L->ctx = ctx;
    L->n_out = n_out;
    const int64_t C = c->conv_channels;
    L->n_feat = C * 4; /* C channels × 2 × 2 after four 2×2 pools of 32×32 */
    L->params = mcl_params_create(ctx);
    if (!L->params) return ctx_fail(ctx, "baseline", "parameter registry");
    mcl_status st = MCL_OK;
    uint64_t k = 0;
    char name[48];
    for (int i = 0; i < 4 && st == MCL_OK; i++) {
        const int64_t cin = i == 0 ? 1 : C;
        const int64_t sw[4] = {C, cin, 3, 3}, sc[1] = {C};
        snprintf(name, sizeof name, "conv%d.w", i);
        L->conv_w[i] = add(L, name, 4, sw);
        snprintf(name, sizeof name, "conv%d.b", i);
        L->conv_b[i] = add(L, name, 1, sc);
        snprintf(name, sizeof name, "conv%d.norm.g", i);
        L->norm_g[i] = add(L, name, 1, sc);
        snprintf(name, sizeof name, "conv%d.norm.b", i);
        L->norm_b[i] = add(L, name, 1, sc);
        if (!L->conv_w[i] || !L->conv_b[i] || !L->norm_g[i] || !L->norm_b[i]) {
            st = ctx_fail(ctx, "baseline", "parameter");
            break;
        }
        st = mcl_tensor_randn(L->conv_w[i], c->seed, base + k, 0.0f,
                              sqrtf(2.0f / (float)(cin * 9))); /* He-normal */
        k += 4;
        if (st == MCL_OK) st = mcl_tensor_fill(L->norm_g[i], 1.0f);
    }
    const int64_t shw[2] = {L->n_feat, n_out}, shb[1] = {n_out};
    if (st == MCL_OK) {
        L->head_w = add(L, "head.w", 2, shw);
        L->head_b = add(L, "head.b", 1, shb);
        if (!L->head_w || !L->head_b) st = ctx_fail(ctx, "baseline", "parameter");
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

/* x [n,1,32,32] -> logits [n, n_out] */
static mcl_tensor *learner_forward(learner *L, mcl_tensor *x, int64_t n)
{
    mcl_ctx *ctx = L->ctx;
    for (int i = 0; i < 4; i++) {
        x = mcl_conv2d(ctx, x, L->conv_w[i], L->conv_b[i], 1, 1);
        x = mcl_instance_norm(ctx, x, L->norm_g[i], L->norm_b[i], BL_NORM_EPS);
        x = mcl_maxpool2d(ctx, x);
        x = mcl_relu(ctx, x);
    }
    const int64_t fs[2] = {n, L->n_feat};
    mcl_tensor *f = mcl_reshape(ctx, x, 2, fs);
    return mcl_bias_add(ctx, mcl_matmul(ctx, f, L->head_w, 0, 0), L->head_b);
}

static mcl_status make_rows(mcl_ctx *ctx, const mcl_dataset *ds, const int64_t *idx,
                            const int32_t *lab, int64_t rows, int normalize, mcl_tensor **img,
                            mcl_tensor **lt)
{
    *img = mcl_tensor_new(ctx, rows, 1, MCL_IMG, MCL_IMG);
    if (lt) *lt = mcl_tensor_new(ctx, rows, 0, 0, 0);
    if (!*img || (lt && !*lt)) return ctx_fail(ctx, "baseline", "tensor allocation");
    mcl_status st = mcl_batch_rows(*img, lt ? *lt : NULL, ds, idx, lab, rows, normalize);
    return st != MCL_OK ? ctx_fail(ctx, "baseline", "batching") : MCL_OK;
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
            st = make_rows(ctx, ds, bi, bl, m, normalize, &img, &lt);
            if (st == MCL_OK) {
                mcl_optim_zero_grad(L->opt);
                mcl_tensor *loss = mcl_cross_entropy(ctx, learner_forward(L, img, m), lt);
                if (!loss) st = ctx_fail(ctx, "baseline", "forward");
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

/* Correct predictions over n examples, in calls of at most chunk rows, no gradients. */
static mcl_status learner_hits(learner *L, const mcl_dataset *ds, const int64_t *idx,
                               const int32_t *lab, int64_t n, int64_t chunk, int normalize,
                               int64_t *hits)
{
    mcl_ctx *ctx = L->ctx;
    const int64_t cap = min64(chunk, n > 0 ? n : 1);
    float *lg = malloc((size_t)(cap * L->n_out) * sizeof *lg);
    if (!lg) return mcl_ctx_set_error(ctx, MCL_ERR_OOM, "baseline: out of memory");
    mcl_status st = MCL_OK;
    mcl_no_grad_begin(ctx);
    for (int64_t s0 = 0; s0 < n && st == MCL_OK; s0 += cap) {
        const int64_t m = min64(cap, n - s0);
        mcl_tensor *img = NULL;
        st = make_rows(ctx, ds, idx + s0, NULL, m, normalize, &img, NULL);
        mcl_tensor *logits = st == MCL_OK ? learner_forward(L, img, m) : NULL;
        if (st == MCL_OK && !logits) st = ctx_fail(ctx, "baseline", "forward");
        if (st == MCL_OK) st = mcl_tensor_read(logits, lg, m * L->n_out);
        if (st == MCL_OK) *hits += mcl_eval_count_hits(lg, m, L->n_out, L->n_out, lab + s0);
        mcl_tensor_free(img);
        mcl_ctx_reset(ctx);
    }
    mcl_no_grad_end(ctx);
    free(lg);
    return st;
}

/* ======================================================================= task sequences */

/* One episode: a fresh learner trained on tasks 0..T-1 in turn; hits[i·T + j] += correct
 * queries of task j after task i; ahits[i] += correct queries of task i learned alone. */
static mcl_status seq_episode(mcl_ctx *ctx, const mcl_baseline_config *b,
                              const mcl_seq_eval_cfg *c, const mcl_episode *ep, uint64_t base,
                              int64_t *hits, int64_t *ahits)
{
    const int T = c->n_tasks;
    learner L;
    mcl_status st = learner_create(ctx, b, c->n_outputs, base, &L);
    for (int i = 0; i < T && st == MCL_OK; i++) {
        const mcl_task *t = &ep->task[i];
        mcl_rng rng;
        mcl_rng_init(&rng, b->seed, base + 32 + (uint64_t)i);
        st = learner_train(&L, t->ds, t->ctx_index, t->ctx_label, mcl_task_part_len(t, MCL_PART_CONTEXT),
                           b->epochs, b->batch_size, &rng, c->normalize);
        for (int j = 0; j <= i && st == MCL_OK; j++) {
            const mcl_task *q = &ep->task[j];
            st = learner_hits(&L, q->ds, q->query_index, q->query_label,
                              mcl_task_part_len(q, MCL_PART_QUERY), c->query_chunk, c->normalize,
                              &hits[i * T + j]);
        }
    }
    if (st == MCL_OK) learner_free(&L);
    for (int i = 1; i < T && !c->skip_alone && st == MCL_OK; i++) {
        const mcl_task *t = &ep->task[i];
        st = learner_create(ctx, b, c->n_outputs, base, &L);
        if (st != MCL_OK) break;
        mcl_rng rng;
        mcl_rng_init(&rng, b->seed, base + 32 + (uint64_t)i);
        st = learner_train(&L, t->ds, t->ctx_index, t->ctx_label, mcl_task_part_len(t, MCL_PART_CONTEXT),
                           b->epochs, b->batch_size, &rng, c->normalize);
        if (st == MCL_OK)
            st = learner_hits(&L, t->ds, t->query_index, t->query_label,
                              mcl_task_part_len(t, MCL_PART_QUERY), c->query_chunk, c->normalize,
                              &ahits[i]);
        learner_free(&L);
    }
    if (st != MCL_OK && L.params) learner_free(&L);
    return st;
}

mcl_status mcl_baseline_eval_seq(mcl_ctx *ctx, const mcl_baseline_config *bcfg,
                                 const mcl_class_pool *pools, const mcl_seq_eval_cfg *cfg,
                                 mcl_cl_result *res)
{
    static const char fn[] = "mcl_baseline_eval_seq";
    if (!ctx) return MCL_ERR_NULL;
    if (res) memset(res, 0, sizeof *res);
    if (!bcfg || !pools || !cfg || !res)
        return mcl_ctx_set_error(ctx, MCL_ERR_NULL, "%s: NULL argument", fn);
    mcl_baseline_config b;
    mcl_seq_eval_cfg c;
    mcl_status st = check_bcfg(ctx, fn, bcfg, &b);
    if (st == MCL_OK) st = mcl_seq_eval_resolve(ctx, pools, cfg, &c);
    if (st != MCL_OK) return st;
    const int T = c.n_tasks;
    if (mcl_cl_result_init(res, T, c.n_runs) != MCL_OK)
        return mcl_ctx_set_error(ctx, MCL_ERR_OOM, "%s: out of memory", fn);
    mcl_episode_cfg ec;
    memset(&ec, 0, sizeof ec);
    ec.n_way = c.n_way;
    ec.k_shot = c.k_shot;
    ec.n_query = c.n_query;
    ec.first_shot = 0;
    ec.n_tasks = T;
    ec.share_classes = c.share_classes;
    ec.class_incremental = c.class_incremental;
    mcl_episode *ep = NULL;
    int64_t *hits = malloc((size_t)(T * T + T) * sizeof *hits);
    if (!hits || mcl_episode_create(&ec, &ep) != MCL_OK) {
        free(hits);
        mcl_cl_result_free(res);
        return mcl_ctx_set_error(ctx, MCL_ERR_OOM, "%s: out of memory", fn);
    }
    mcl_ctx_reset(ctx);
    const double count = (double)c.n_episodes * (double)c.n_way * c.n_query;
    for (int r = 0; r < c.n_runs && st == MCL_OK; r++) {
        memset(hits, 0, (size_t)(T * T + T) * sizeof *hits);
        mcl_rng rng;
        mcl_rng_init(&rng, c.seed, (uint64_t)r); /* the same draws as mcl_acl_eval_seq */
        for (int e = 0; e < c.n_episodes && st == MCL_OK; e++) {
            char err[256] = "";
            mcl_status s = mcl_episode_sample(ep, pools, &rng, err, sizeof err);
            if (s != MCL_OK)
                st = mcl_ctx_set_error(ctx, s, "%s: run %d, episode %d: %s", fn, r, e, err);
            else
                st = seq_episode(ctx, &b, &c, ep, problem_base(r, e), hits, hits + T * T);
        }
        if (st != MCL_OK) break;
        mcl_cl_result_set_run_hits(res, r, hits, count, !c.skip_alone);
    }
    mcl_episode_free(ep);
    free(hits);
    mcl_ctx_reset(ctx);
    return mcl_cl_result_finish(res, st);
}

/* ======================================================================= Split-X */

mcl_status mcl_baseline_eval_splitx(mcl_ctx *ctx, const mcl_baseline_config *bcfg,
                                    const mcl_dataset *train, const mcl_dataset *test,
                                    const mcl_splitx_eval_cfg *cfg, mcl_cl_result *res)
{
    static const char fn[] = "mcl_baseline_eval_splitx";
    if (!ctx) return MCL_ERR_NULL;
    if (res) memset(res, 0, sizeof *res);
    if (!bcfg || !train || !test || !cfg || !res)
        return mcl_ctx_set_error(ctx, MCL_ERR_NULL, "%s: NULL argument", fn);
    mcl_baseline_config b;
    mcl_splitx_eval_cfg c;
    mcl_status st = check_bcfg(ctx, fn, bcfg, &b);
    if (st == MCL_OK) st = mcl_splitx_eval_resolve(ctx, train, test, cfg, &c);
    if (st != MCL_OK) return st;
    const int T = c.split.n_tasks, C = c.split.classes_per_task;
    const int n_out = c.n_outputs ? c.n_outputs : c.split.mode == MCL_SPLITX_CLASS ? T * C : C;
    if (mcl_cl_result_init(res, T, c.n_runs) != MCL_OK)
        return mcl_ctx_set_error(ctx, MCL_ERR_OOM, "%s: out of memory", fn);
    mcl_ctx_reset(ctx);
    for (int r = 0; r < c.n_runs && st == MCL_OK; r++) {
        mcl_splitx_cfg sxc = c.split;
        sxc.run = c.first_run + r;
        mcl_splitx *sx = NULL;
        char err[256] = "";
        mcl_status s = mcl_splitx_create(train, test, &sxc, &sx, err, sizeof err);
        if (s != MCL_OK) {
            st = mcl_ctx_set_error(ctx, s, "%s: run %d: %s", fn, sxc.run, err);
            break;
        }
        const uint64_t base = problem_base(sxc.run, 0);
        learner L;
        st = learner_create(ctx, &b, n_out, base, &L);
        double *R = res->acc + (int64_t)r * T * T;
        for (int i = 0; i < T && st == MCL_OK; i++) {
            const int64_t c0 = sx->task_ctx_start[i], cn = sx->task_ctx_start[i + 1] - c0;
            mcl_rng rng;
            mcl_rng_init(&rng, b.seed, base + 32 + (uint64_t)i);
            st = learner_train(&L, train, sx->ctx_index + c0, sx->ctx_label + c0, cn, b.epochs,
                               b.batch_size, &rng, c.normalize);
            if (c.final_only && i < T - 1) continue;
            for (int j = 0; j <= i && st == MCL_OK; j++) {
                const int64_t q0 = sx->task_query_start[j], qn = sx->task_query_start[j + 1] - q0;
                int64_t h = 0;
                st = learner_hits(&L, test, sx->query_index + q0, sx->query_label + q0, qn,
                                  c.query_chunk, c.normalize, &h);
                R[i * T + j] = qn > 0 ? (double)h / (double)qn : NAN;
            }
        }
        if (L.params) learner_free(&L);
        mcl_splitx_free(sx);
    }
    mcl_ctx_reset(ctx);
    return mcl_cl_result_finish(res, st);
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
