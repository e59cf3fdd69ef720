/* acl_objective.c — the ACL meta-training objective (doc/acl-model.md §3). See acl.h.
 *
 * For T tasks in order, with S_0 = the parameters:
 *   fs_i       = CE(query_i | run(first_i | S_{i-1}))          first-shot (auxiliary) term
 *   S_i        = run(ctx_i | S_{i-1})                           learn task i in context
 *   main_i     = CE(query_i | S_i)                              learn the new task
 *   acl_{j,i}  = CE(query_j | S_i), j < i                       remember the old ones (ACL)
 *   loss       = c · [Σ_i s_i (fs_i + main_i) + a · Σ_{j<i} acl_{j,i}]
 * where "query | S" is a length-1 call with the unknown label from the carried state S.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acl.h"
#include "tape.h"
#include "tensor_impl.h"

void mcl_acl_objective_two_task(mcl_acl_objective *o, float c, float s_a, float s_b)
{
    if (!o) return;
    memset(o, 0, sizeof *o);
    o->n_tasks = 2;
    o->acl = 1;
    o->first_shot = 1;
    o->scale = c;
    o->task_scale[0] = s_a;
    o->task_scale[1] = s_b;
    o->acl_scale = 1.0f;
}

void mcl_acl_objective_mean(mcl_acl_objective *o, int n_tasks, int first_shot)
{
    if (!o) return;
    memset(o, 0, sizeof *o);
    o->n_tasks = n_tasks;
    o->acl = 1;
    o->first_shot = first_shot ? 1 : 0;
    int terms = n_tasks + n_tasks * (n_tasks - 1) / 2 + (first_shot ? n_tasks : 0);
    o->scale = terms > 0 ? 1.0f / (float)terms : 0.0f;
    for (int i = 0; i < MCL_ACL_MAX_TASKS; i++) o->task_scale[i] = 1.0f;
    o->acl_scale = 1.0f;
}

/* s [B, ...] (4-D) -> [B·Q, ...]: sequence b's copies at rows b·Q .. b·Q+Q-1.
 *   [B,d1,d2,d3] -reshape-> [B,F] -repeat_rows-> [B,Q,F] -reshape-> [B·Q,d1,d2,d3]
 * (one kernel). Gradient: the sum over the Q copies (repeat_batch's backward). */
static mcl_tensor *repeat_rows(mcl_ctx *ctx, mcl_tensor *s, int64_t Q)
{
    const int64_t B = s->shape[0], F = mcl_tensor_numel(s) / B;
    const int64_t s2[2] = {B, F};
    const int64_t so[4] = {B * Q, s->shape[1], s->shape[2], s->shape[3]};
    return mcl_reshape(ctx, mcl_repeat_rows(ctx, mcl_reshape(ctx, s, 2, s2), Q), 4, so);
}

/* stats [B, F] -> [B·Q, F] the same way (through a [B, F, 1, 1] view). */
static mcl_tensor *repeat_stat_rows(mcl_ctx *ctx, mcl_tensor *s, int64_t Q)
{
    const int64_t B = s->shape[0], F = mcl_tensor_numel(s) / B;
    const int64_t s4[4] = {B, F, 1, 1}, s2[2] = {B * Q, F};
    return mcl_reshape(ctx, repeat_rows(ctx, mcl_reshape(ctx, s, 4, s4), Q), 2, s2);
}

/* rep = state repeated for Q queries per sequence: batch B·Q, every tensor [B·Q, ..] with
 * sequence b's copies at rows b·Q .. b·Q+Q-1 (a layer's four tensors in one repeat_batch4),
 * the context statistics likewise (repeat_rows).
 * rep->t is the caller's to free (the tensors are temporaries owned by the context). */
static mcl_status repeat_state(mcl_ctx *ctx, const mcl_acl_state *state, int64_t Q,
                               mcl_acl_state *rep)
{
    mcl_status st = MCL_OK;
    memset(rep, 0, sizeof *rep);
    rep->layers = state->layers;
    rep->batch = state->batch * Q;
    rep->t = calloc((size_t)(state->layers > 0 ? state->layers : 1) * 4, sizeof *rep->t);
    if (!rep->t) return mcl_ctx_set_error(ctx, MCL_ERR_OOM, "mcl_acl_query: out of memory");
    for (int l = 0; st == MCL_OK && l < state->layers; l++) { /* a layer's four in one op */
        st = mcl_repeat_batch4(ctx, state->t + 4 * l, Q, 1, rep->t + 4 * l);
        if (st != MCL_OK && mcl_ctx_status(ctx) == MCL_OK)
            st = mcl_ctx_set_error(ctx, MCL_ERR_NULL, "mcl_acl_query: bad state");
    }
    rep->feat_n = state->feat_n;
    if (st == MCL_OK && state->feat_n > 0) { /* the context statistics, likewise */
        rep->feat_mean = state->feat_mean ? repeat_stat_rows(ctx, state->feat_mean, Q) : NULL;
        rep->feat_m2 = state->feat_m2 ? repeat_stat_rows(ctx, state->feat_m2, Q) : NULL;
        if (!rep->feat_mean || !rep->feat_m2)
            st = mcl_ctx_status(ctx) != MCL_OK
                     ? mcl_ctx_status(ctx)
                     : mcl_ctx_set_error(ctx, MCL_ERR_NULL, "mcl_acl_query: bad state");
    }
    if (st != MCL_OK) {
        free(rep->t);
        rep->t = NULL;
    }
    return st;
}

/* rows labels, each the unknown label n_way (caller frees); NULL on error (in ctx). */
static mcl_tensor *unknown_labels(mcl_acl *m, mcl_ctx *ctx, int64_t rows)
{
    mcl_tensor *unknown = mcl_tensor_new(ctx, rows, 0, 0, 0);
    if (!unknown || mcl_tensor_fill(unknown, (float)m->cfg.n_way) != MCL_OK) {
        mcl_tensor_free(unknown);
        if (mcl_ctx_status(ctx) == MCL_OK)
            mcl_ctx_set_error(ctx, MCL_ERR_OOM, "mcl_acl_query: out of memory");
        return NULL;
    }
    return unknown;
}

/* The queries of mcl_acl_query from `from`, the state already repeated Q times (batch B·Q;
 * or the state itself when Q = 1, or NULL = the parameters). unknown: the B·Q unknown labels
 * (made here when NULL); oh: their one-hot (NULL: the forward call makes it). */
static mcl_status query_from(mcl_acl *m, mcl_ctx *ctx, const mcl_acl_state *from,
                             mcl_tensor *images, int64_t B, int64_t Q, mcl_tensor *unknown,
                             mcl_tensor *oh, mcl_tensor **logits)
{
    mcl_tensor *own = unknown ? NULL : unknown_labels(m, ctx, B * Q);
    if (!unknown && !own) return mcl_ctx_status(ctx);
    m->oh_next = oh;
    mcl_status st = mcl_acl_forward_query(m, ctx, images, unknown ? unknown : own, B * Q, 1,
                                          from, logits);
    m->oh_next = NULL;
    mcl_tensor_free(own);
    return st;
}

mcl_status mcl_acl_query(mcl_acl *m, mcl_ctx *ctx, const mcl_acl_state *state,
                         mcl_tensor *images, int64_t B, int64_t Q, mcl_tensor **logits)
{
    if (!ctx) return MCL_ERR_NULL;
    if (logits) *logits = NULL;
    if (!m || !images || !logits)
        return mcl_ctx_set_error(ctx, MCL_ERR_NULL, "mcl_acl_query: NULL argument");
    if (B < 1 || Q < 1 || B > INT64_MAX / Q)
        return mcl_ctx_set_error(ctx, MCL_ERR_INVALID, "mcl_acl_query: B %lld, Q %lld",
                                 (long long)B, (long long)Q);
    if (state && (state->batch != B || state->layers != m->cfg.layers))
        return mcl_ctx_set_error(ctx, MCL_ERR_SHAPE,
                                 "mcl_acl_query: state for batch %lld, %d layers; call batch "
                                 "%lld, model %d layers",
                                 (long long)state->batch, state->layers, (long long)B,
                                 m->cfg.layers);
    if (!state || Q == 1) return query_from(m, ctx, state, images, B, Q, NULL, NULL, logits);
    /* every query of sequence b reads sequence b's state: repeat it Q times */
    mcl_acl_state rep;
    mcl_status st = repeat_state(ctx, state, Q, &rep);
    if (st == MCL_OK) st = query_from(m, ctx, &rep, images, B, Q, NULL, NULL, logits);
    free(rep.t); /* temporaries: owned by the context */
    return st;
}

static mcl_status check_part(mcl_ctx *ctx, const mcl_acl *m, int task, const char *part,
                             const mcl_tensor *img, const mcl_tensor *lab, int64_t n, int64_t B)
{
    const mcl_acl_config *c = &m->cfg;
    const int64_t S = c->image_size;
    char sb[64];
    if (!img || !lab)
        return mcl_ctx_set_error(ctx, MCL_ERR_NULL,
                                 "mcl_acl_objective_loss: task %d: %s images/labels missing",
                                 task, part);
    if (n < 1 || n > INT64_MAX / B)
        return mcl_ctx_set_error(ctx, MCL_ERR_INVALID,
                                 "mcl_acl_objective_loss: task %d: %lld %s rows per sequence",
                                 task, (long long)n, part);
    if (img->ndim != 4 || img->shape[0] != B * n || img->shape[1] != c->in_channels ||
        img->shape[2] != S || img->shape[3] != S)
        return mcl_ctx_set_error(ctx, MCL_ERR_SHAPE,
                                 "mcl_acl_objective_loss: task %d: %s images %s, want "
                                 "[%lld,%d,%lld,%lld]",
                                 task, part, mcl_shape_str(img, sb, sizeof sb),
                                 (long long)(B * n), c->in_channels, (long long)S, (long long)S);
    if (mcl_tensor_numel(lab) != B * n)
        return mcl_ctx_set_error(ctx, MCL_ERR_SHAPE,
                                 "mcl_acl_objective_loss: task %d: %s labels %s, want [%lld]",
                                 task, part, mcl_shape_str(lab, sb, sizeof sb),
                                 (long long)(B * n));
    return MCL_OK;
}

/* A term's value v, and its accuracy from logits lg [rows, n_out] and targets tg [rows]. */
static void stats_of(mcl_acl_term *t, float v, const float *lg, const float *tg, int64_t rows,
                     int64_t n_out)
{
    int64_t hit = 0;
    for (int64_t r = 0; r < rows; r++) {
        int64_t best = 0;
        for (int64_t j = 1; j < n_out; j++)
            if (lg[r * n_out + j] > lg[r * n_out + best]) best = j;
        hit += (float)best == tg[r];
    }
    t->loss = v;
    t->accuracy = (double)hit / (double)rows;
}

/* Host-side value and accuracy of term i (only when the caller asked for terms): read now,
 * or queued into terms->host[i] (deferred; mcl_acl_terms_finish computes them). */
static mcl_status term_stats(mcl_ctx *ctx, mcl_tensor *ce, mcl_tensor *logits,
                             mcl_tensor *targets, int64_t rows, int64_t n_out,
                             mcl_acl_terms *terms, int i)
{
    mcl_acl_term *t = &terms->term[i];
    const size_t need = (size_t)(1 + rows * n_out + rows);
    if (terms->deferred) {
        if (terms->cap[i] < need) {
            float *h = realloc(terms->host[i], need * sizeof *h);
            if (!h) return mcl_ctx_set_error(ctx, MCL_ERR_OOM, "term stats: out of memory");
            terms->host[i] = h;
            terms->cap[i] = need;
        }
        float *h = terms->host[i];
        terms->rows[i] = rows;
        terms->n_out = n_out;
        t->loss = t->accuracy = NAN;
        mcl_status st = mcl_tensor_read_async(ce, h, 1);
        if (st == MCL_OK) st = mcl_tensor_read_async(logits, h + 1, rows * n_out);
        if (st == MCL_OK) st = mcl_tensor_read_async(targets, h + 1 + rows * n_out, rows);
        return st;
    }
    float v = 0.0f;
    float *lg = malloc((size_t)(rows * n_out) * sizeof *lg);
    float *tg = malloc((size_t)rows * sizeof *tg);
    mcl_status st = (!lg || !tg) ? mcl_ctx_set_error(ctx, MCL_ERR_OOM, "term stats: out of memory")
                                 : MCL_OK;
    if (st == MCL_OK) st = mcl_tensor_read(ce, &v, 1);
    if (st == MCL_OK) st = mcl_tensor_read(logits, lg, rows * n_out);
    if (st == MCL_OK) st = mcl_tensor_read(targets, tg, rows);
    if (st == MCL_OK) stats_of(t, v, lg, tg, rows, n_out);
    free(lg);
    free(tg);
    return st;
}

void mcl_acl_terms_finish(mcl_acl_terms *t)
{
    if (!t || !t->deferred) return;
    for (int i = 0; i < t->n; i++) {
        const float *h = t->host[i];
        const int64_t rows = t->rows[i], n_out = t->n_out;
        if (h) stats_of(&t->term[i], h[0], h + 1, h + 1 + rows * n_out, rows, n_out);
    }
}

void mcl_acl_terms_free(mcl_acl_terms *t)
{
    if (!t) return;
    for (int i = 0; i < MCL_ACL_MAX_TERMS; i++) {
        free(t->host[i]);
        t->host[i] = NULL;
        t->cap[i] = 0;
    }
}

/* One state repeated for the queries of several terms (main_i and every acl_{j,i} read S_i):
 * rep is `of` repeated q times, made by the first term that needs it. Its gradient sums the
 * terms' gradients per copy before the repeat's backward sums the copies (one repeat and one
 * backward instead of one per term; the sums' order differs: last bits). */
typedef struct rep_cache {
    const mcl_acl_state *of; /* NULL: empty */
    int64_t q;
    mcl_acl_state rep;
} rep_cache;

static void rep_cache_clear(rep_cache *c)
{
    free(c->rep.t); /* the tensors: temporaries owned by the context */
    memset(c, 0, sizeof *c);
}

/* The unknown labels of the step's queries and their one-hot [rows, n_way + 1], made once
 * for every query call with that many rows (one fill and one one_hot per step instead of one
 * per call; the same values). */
typedef struct unknown_cache {
    int64_t rows; /* 0: empty */
    mcl_tensor *labels, *oh;
} unknown_cache;

static void unknown_cache_clear(unknown_cache *u)
{
    mcl_tensor_free(u->labels); /* oh: a temporary owned by the context */
    memset(u, 0, sizeof *u);
}

static mcl_status unknown_get(mcl_acl *m, mcl_ctx *ctx, unknown_cache *u, int64_t rows)
{
    if (u->rows == rows) return MCL_OK;
    unknown_cache_clear(u);
    u->labels = unknown_labels(m, ctx, rows);
    u->oh = u->labels ? mcl_one_hot(ctx, u->labels, m->cfg.n_way + 1) : NULL;
    if (!u->oh) {
        unknown_cache_clear(u);
        return mcl_ctx_status(ctx) != MCL_OK ? mcl_ctx_status(ctx) : MCL_ERR_OOM;
    }
    u->rows = rows;
    return MCL_OK;
}

/* CE of task `task`'s queries from `state`, weighted into *sum. cache (may be NULL): the
 * repeated state shared with the other terms that read `state` (cleared by the caller before
 * `state` is freed). */
static mcl_status add_term(mcl_acl *m, mcl_ctx *ctx, const mcl_acl_state *state,
                           const mcl_acl_task_data *td, int64_t B, int kind, int task, int after,
                           float weight, mcl_tensor **sum, mcl_acl_terms *terms, rep_cache *cache,
                           unknown_cache *unk)
{
    mcl_tensor *logits = NULL;
    const int64_t Q = td->n_query;
    mcl_status st = unknown_get(m, ctx, unk, B * Q);
    if (st != MCL_OK) return st;
    if (!state || Q == 1) {
        st = query_from(m, ctx, state, td->query_img, B, Q, unk->labels, unk->oh, &logits);
    } else if (cache) {
        if (cache->of != state || cache->q != Q) {
            rep_cache_clear(cache);
            st = repeat_state(ctx, state, Q, &cache->rep);
            if (st != MCL_OK) return st;
            cache->of = state;
            cache->q = Q;
        }
        st = query_from(m, ctx, &cache->rep, td->query_img, B, Q, unk->labels, unk->oh, &logits);
    } else {
        mcl_acl_state rep;
        st = repeat_state(ctx, state, Q, &rep);
        if (st == MCL_OK)
            st = query_from(m, ctx, &rep, td->query_img, B, Q, unk->labels, unk->oh, &logits);
        free(rep.t); /* temporaries: owned by the context */
    }
    if (st != MCL_OK) return st;
    mcl_tensor *ce = mcl_cross_entropy(ctx, logits, td->query_lab);
    if (!ce) return mcl_ctx_status(ctx);
    if (terms) {
        const int i = terms->n++;
        mcl_acl_term *t = &terms->term[i];
        t->kind = kind;
        t->task = task;
        t->after = after;
        t->weight = weight;
        st = term_stats(ctx, ce, logits, td->query_lab, B * td->n_query, m->cfg.n_way, terms, i);
        if (st != MCL_OK) return st;
    }
    mcl_tensor *w = mcl_scale(ctx, ce, weight);
    *sum = *sum ? mcl_add(ctx, *sum, w) : w;
    return *sum ? MCL_OK : mcl_ctx_status(ctx);
}

static mcl_status check_objective(mcl_ctx *ctx, const mcl_acl_objective *o)
{
    if (o->n_tasks < 1 || o->n_tasks > MCL_ACL_MAX_TASKS)
        return mcl_ctx_set_error(ctx, MCL_ERR_INVALID,
                                 "mcl_acl_objective_loss: %d tasks (1..%d)", o->n_tasks,
                                 MCL_ACL_MAX_TASKS);
    int ok = isfinite(o->scale) && isfinite(o->acl_scale);
    for (int i = 0; i < o->n_tasks; i++) ok = ok && isfinite(o->task_scale[i]);
    if (!ok)
        return mcl_ctx_set_error(ctx, MCL_ERR_INVALID,
                                 "mcl_acl_objective_loss: a loss scale is not finite");
    return MCL_OK;
}

static mcl_status objective_loss(mcl_acl *m, mcl_ctx *ctx, const mcl_acl_objective *obj,
                                 const mcl_acl_task_data *tasks, int64_t B, mcl_tensor **loss,
                                 mcl_acl_terms *terms, int deferred);

mcl_status mcl_acl_objective_loss(mcl_acl *m, mcl_ctx *ctx, const mcl_acl_objective *obj,
                                  const mcl_acl_task_data *tasks, int64_t B, mcl_tensor **loss,
                                  mcl_acl_terms *terms)
{
    return objective_loss(m, ctx, obj, tasks, B, loss, terms, 0);
}

mcl_status mcl_acl_objective_loss_deferred(mcl_acl *m, mcl_ctx *ctx,
                                           const mcl_acl_objective *obj,
                                           const mcl_acl_task_data *tasks, int64_t B,
                                           mcl_tensor **loss, mcl_acl_terms *terms)
{
    if (!terms) return ctx ? mcl_ctx_set_error(ctx, MCL_ERR_NULL, "mcl_acl_objective_loss_deferred: NULL terms") : MCL_ERR_NULL;
    return objective_loss(m, ctx, obj, tasks, B, loss, terms, 1);
}

/* The images of the step's forward calls, in the order objective_loss makes them; returns
 * their number (at most MAX_CALLS). */
#define MAX_CALLS (MCL_ACL_MAX_TASKS * 3 + MCL_ACL_MAX_TASKS * (MCL_ACL_MAX_TASKS - 1) / 2)
static int step_calls(const mcl_acl_objective *obj, const mcl_acl_task_data *tasks,
                      mcl_tensor **img)
{
    int n = 0;
    for (int i = 0; i < obj->n_tasks; i++) {
        if (obj->first_shot) img[n++] = tasks[i].first_img, img[n++] = tasks[i].query_img;
        img[n++] = tasks[i].ctx_img;
        img[n++] = tasks[i].query_img;
        for (int j = 0; obj->acl && j < i; j++) img[n++] = tasks[j].query_img;
    }
    return n;
}

/* Conv-4 once for several calls. Every call k takes `per` Philox streams (4 Conv-4 dropouts,
 * then 3 per layer; 0 without dropout), from s0 + k·per. Calls k, k + d, k + 2d, ... with the
 * same number of images have Conv-4 streams in arithmetic progression (step d·per), so one
 * Conv-4 over their concatenated images with segmented dropout (mcl_conv4_forward_segments)
 * draws every call's own masks; instance norm, pooling and ReLU work image by image, so each
 * call's features are those of its own Conv-4. Groups are taken longest first: among the
 * calls not yet covered, the progression (first call k, difference d) of calls with as many
 * images as k that covers the most, ties to the smaller k, then d (2 tasks with first-shot
 * and query parts of one row per class: {1,3,5,7}, {0,4,8}, {2,6}). feat[k] = call k's
 * features [rows, F] (a slice), NULL for a call left alone (it runs its own Conv-4). */
static mcl_status batch_conv4(mcl_acl *m, mcl_ctx *ctx, mcl_tensor *const *img, int n,
                              uint64_t s0, uint64_t per, mcl_tensor **feat)
{
    const float p = m->cfg.dropout;
    const int tr = m->training;
    for (int k = 0; k < n; k++) feat[k] = NULL;
    for (;;) {
        int k = -1, d = 0, G = 1;
        for (int k1 = 0; k1 < n; k1++)
            for (int d1 = 1; !feat[k1] && k1 + d1 < n; d1++) {
                int g = 0;
                while (k1 + g * d1 < n && !feat[k1 + g * d1] &&
                       img[k1 + g * d1]->shape[0] == img[k1]->shape[0])
                    g++;
                if (g > G) k = k1, d = d1, G = g;
            }
        if (k < 0) break; /* every call left is alone */
        const int64_t R = img[k]->shape[0];
        const int64_t per_img = mcl_tensor_numel(img[k]) / R;
        const int64_t sh[4] = {R, img[k]->shape[1], img[k]->shape[2], img[k]->shape[3]};
        mcl_tensor *all = mcl_tensor_new(ctx, G * R, sh[1], sh[2], sh[3]);
        mcl_status st = all ? MCL_OK : mcl_ctx_status(ctx);
        for (int g = 0; st == MCL_OK && g < G; g++) {
            mcl_tensor *v = mcl_tensor_view(all, g * R * per_img, 4, sh);
            st = v ? mcl_tensor_copy_into(v, img[k + g * d]) : mcl_ctx_status(ctx);
            mcl_tensor_free(v);
        }
        mcl_tensor *f = st == MCL_OK ? mcl_conv4_forward_segments(ctx, &m->conv, all, G * R, p, tr, G,
                                                                  s0 + (uint64_t)k * per,
                                                                  (uint64_t)d * per)
                                     : NULL;
        mcl_tensor_free(all);
        for (int g = 0; f && g < G; g++) {
            feat[k + g * d] = mcl_slice_rows(ctx, f, g * R, R); /* a view: no kernel */
            if (!feat[k + g * d]) f = NULL;
        }
        if (!f)
            return mcl_ctx_status(ctx) != MCL_OK
                       ? mcl_ctx_status(ctx)
                       : mcl_ctx_set_error(ctx, MCL_ERR_OOM, "mcl_acl_objective_loss: Conv-4");
    }
    return MCL_OK;
}

static mcl_status objective_loss(mcl_acl *m, mcl_ctx *ctx, const mcl_acl_objective *obj,
                                 const mcl_acl_task_data *tasks, int64_t B, mcl_tensor **loss,
                                 mcl_acl_terms *terms, int deferred)
{
    if (!ctx) return MCL_ERR_NULL;
    if (loss) *loss = NULL;
    if (terms) terms->n = 0, terms->deferred = deferred;
    if (!m || !obj || !tasks || !loss)
        return mcl_ctx_set_error(ctx, MCL_ERR_NULL, "mcl_acl_objective_loss: NULL argument");
    if (B < 1)
        return mcl_ctx_set_error(ctx, MCL_ERR_INVALID, "mcl_acl_objective_loss: B %lld",
                                 (long long)B);
    mcl_status st = check_objective(ctx, obj);
    for (int i = 0; st == MCL_OK && i < obj->n_tasks; i++) {
        const mcl_acl_task_data *td = &tasks[i];
        if (obj->first_shot)
            st = check_part(ctx, m, i, "first-shot", td->first_img, td->first_lab, td->n_first, B);
        if (st == MCL_OK) st = check_part(ctx, m, i, "context", td->ctx_img, td->ctx_lab, td->n_ctx, B);
        if (st == MCL_OK)
            st = check_part(ctx, m, i, "query", td->query_img, td->query_lab, td->n_query, B);
    }
    if (st != MCL_OK) return st;

    /* Conv-4 batched over the calls first (batch_conv4); call kc then takes feat[kc] */
    mcl_tensor *img[MAX_CALLS], *feat[MAX_CALLS];
    const int n_calls = step_calls(obj, tasks, img);
    const uint64_t s0 = mcl_ctx_stream(ctx);
    const uint64_t per = m->training && m->cfg.dropout != 0.0f ? 4 + 3 * (uint64_t)m->cfg.layers : 0;
    st = batch_conv4(m, ctx, img, n_calls, s0, per, feat);
    int kc = 0;
#define NEXT_CALL() (m->feat_next = feat[kc], m->feat_stream = s0 + (uint64_t)kc * per, kc++)

    mcl_tensor *sum = NULL;
    mcl_acl_state *prev = NULL; /* S_{i-1}; NULL (or mcl_acl_param_state) = the parameters */
    rep_cache cache = {NULL, 0, {0, 0, NULL, 0, NULL, NULL}};
    unknown_cache unk = {0, NULL, NULL};
    /* the first-shot and context calls of task 0 both start from the parameters: one repeat
     * of them shared by the two calls (mcl_acl_param_state) */
    if (st == MCL_OK && obj->first_shot) {
        prev = mcl_acl_param_state(m, ctx, B);
        if (!prev) st = mcl_ctx_status(ctx) != MCL_OK ? mcl_ctx_status(ctx) : MCL_ERR_OOM;
    }
    for (int i = 0; st == MCL_OK && i < obj->n_tasks; i++) {
        const mcl_acl_task_data *td = &tasks[i];
        const float ws = obj->scale * obj->task_scale[i];
        if (obj->first_shot) {
            mcl_acl_state *fs = NULL;
            NEXT_CALL();
            st = mcl_acl_forward_state(m, ctx, td->first_img, td->first_lab, B, td->n_first,
                                       prev, &fs);
            if (st == MCL_OK) {
                NEXT_CALL();
                st = add_term(m, ctx, fs, td, B, MCL_ACL_TERM_FIRST_SHOT, i, i, ws, &sum, terms,
                              NULL, &unk);
            }
            mcl_acl_state_free(fs);
        }
        mcl_acl_state *cur = NULL;
        if (st == MCL_OK) {
            NEXT_CALL();
            st = mcl_acl_forward_state(m, ctx, td->ctx_img, td->ctx_lab, B, td->n_ctx, prev,
                                       &cur);
        }
        mcl_acl_state_free(prev);
        prev = cur;
        if (st == MCL_OK) {
            NEXT_CALL();
            st = add_term(m, ctx, cur, td, B, MCL_ACL_TERM_MAIN, i, i, ws, &sum, terms, &cache,
                          &unk);
        }
        for (int j = 0; obj->acl && st == MCL_OK && j < i; j++) {
            NEXT_CALL();
            st = add_term(m, ctx, cur, &tasks[j], B, MCL_ACL_TERM_ACL, j, i,
                          obj->scale * obj->acl_scale, &sum, terms, &cache, &unk);
        }
        rep_cache_clear(&cache); /* S_i is freed as S_{i-1} of the next task */
    }
    rep_cache_clear(&cache);
    unknown_cache_clear(&unk);
#undef NEXT_CALL
    m->feat_next = NULL; /* a call that failed before its forward left it set */
    mcl_acl_state_free(prev);
    if (st != MCL_OK) {
        if (terms) terms->n = 0;
        return st;
    }
    *loss = sum;
    return MCL_OK;
}

void mcl_acl_task_data_free(mcl_acl_task_data *d)
{
    if (!d) return;
    mcl_tensor_free(d->first_img);
    mcl_tensor_free(d->first_lab);
    mcl_tensor_free(d->ctx_img);
    mcl_tensor_free(d->ctx_lab);
    mcl_tensor_free(d->query_img);
    mcl_tensor_free(d->query_lab);
    memset(d, 0, sizeof *d);
}

static mcl_status load_part(mcl_ctx *ctx, const mcl_task *const *t, int B, mcl_task_part part,
                            int side, int normalize, mcl_tensor **img, mcl_tensor **lab, int64_t *n)
{
    *n = mcl_task_part_len(t[0], part);
    *img = mcl_tensor_new(ctx, (int64_t)B * *n, 1, side, side);
    *lab = mcl_tensor_new(ctx, (int64_t)B * *n, 0, 0, 0);
    if (!*img || !*lab) return mcl_ctx_status(ctx) != MCL_OK ? mcl_ctx_status(ctx) : MCL_ERR_OOM;
    mcl_status st = mcl_task_batch(*img, *lab, t, B, part, normalize);
    if (st != MCL_OK && mcl_ctx_status(ctx) == MCL_OK)
        mcl_ctx_set_error(ctx, st, "mcl_acl_task_data_from_episodes: batching failed");
    return st;
}

mcl_status mcl_acl_task_data_from_episodes(mcl_ctx *ctx, const mcl_episode *const *episodes,
                                           int B, int task, int normalize, int image_size,
                                           mcl_acl_task_data *out)
{
    if (!ctx) return MCL_ERR_NULL;
    if (!episodes || !out)
        return mcl_ctx_set_error(ctx, MCL_ERR_NULL,
                                 "mcl_acl_task_data_from_episodes: NULL argument");
    memset(out, 0, sizeof *out);
    if (B < 1 || B > 1 << 20 || image_size < 1 || image_size > MCL_IMG)
        return mcl_ctx_set_error(ctx, MCL_ERR_INVALID,
                                 "mcl_acl_task_data_from_episodes: B %d, image_size %d (the data "
                                 "sets give sides 1..%d)",
                                 B, image_size, MCL_IMG);
    const mcl_task **t = malloc((size_t)B * sizeof *t);
    if (!t) return mcl_ctx_set_error(ctx, MCL_ERR_OOM, "out of memory");
    mcl_status st = MCL_OK;
    for (int b = 0; b < B && st == MCL_OK; b++) {
        if (!episodes[b] || task < 0 || task >= episodes[b]->n_tasks)
            st = mcl_ctx_set_error(ctx, MCL_ERR_INVALID,
                                   "mcl_acl_task_data_from_episodes: episode %d has no task %d",
                                   b, task);
        else
            t[b] = &episodes[b]->task[task];
    }
    if (st == MCL_OK && t[0]->n_first > 0)
        st = load_part(ctx, t, B, MCL_PART_FIRST, image_size, normalize, &out->first_img,
                       &out->first_lab, &out->n_first);
    if (st == MCL_OK)
        st = load_part(ctx, t, B, MCL_PART_CONTEXT, image_size, normalize, &out->ctx_img,
                       &out->ctx_lab, &out->n_ctx);
    if (st == MCL_OK)
        st = load_part(ctx, t, B, MCL_PART_QUERY, image_size, normalize, &out->query_img,
                       &out->query_lab, &out->n_query);
    free(t);
    if (st != MCL_OK) mcl_acl_task_data_free(out);
    return st;
}
