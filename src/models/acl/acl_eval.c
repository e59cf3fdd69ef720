/* acl_eval.c — evaluation protocols of an ACL model (doc/acl.md, Evaluation). See acl_eval.h.
 *
 * Structure: two building blocks do every model call,
 *   run_context  B sequences × L labelled steps from a carried (detached) state, in calls of
 *                at most `chunk` steps; the new state is detached so it survives mcl_ctx_reset;
 *   query_hits   B sequences × Q queries from a state, in calls of at most `chunk` rows
 *                (whole sequences when they fit, else slices of one sequence's queries; a call
 *                on a subset of the sequences reads row views of the state);
 * and the protocols (task sequences, Split-X, fast-weight traces) only arrange rows of host
 * index arrays for them. Everything runs inside one eval scope: gradients off, dropout off.
 */
#include "acl_eval.h"
#include "tensor_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* ======================================================================= eval scope */

typedef struct eval_scope {
    mcl_acl *m;
    mcl_ctx *ctx;
    int training;
} eval_scope;

static void scope_begin(eval_scope *s, mcl_acl *m, mcl_ctx *ctx)
{
    s->m = m;
    s->ctx = ctx;
    s->training = m->training;
    mcl_acl_set_training(m, 0);
    mcl_no_grad_begin(ctx);
}

static void scope_end(eval_scope *s)
{
    mcl_ctx_reset(s->ctx);
    mcl_no_grad_end(s->ctx);
    mcl_acl_set_training(s->m, s->training);
}

static mcl_status check_model(mcl_acl *m, mcl_ctx *ctx, const char *fn, int n_outputs)
{
    if (m->ctx != ctx)
        return mcl_ctx_set_error(ctx, MCL_ERR_INVALID, "%s: ctx is not the model's context", fn);
    if (m->cfg.image_size > MCL_IMG || m->cfg.in_channels != 1)
        return mcl_ctx_set_error(ctx, MCL_ERR_INVALID,
                                 "%s: the model takes %d×%d images with %d channels; the datasets "
                                 "are grayscale at sides up to %d",
                                 fn, m->cfg.image_size, m->cfg.image_size, m->cfg.in_channels,
                                 MCL_IMG);
    if (n_outputs > m->cfg.n_way)
        return mcl_ctx_set_error(ctx, MCL_ERR_INVALID,
                                 "%s: the model has %d outputs (n_way) but the protocol needs %d",
                                 fn, m->cfg.n_way, n_outputs);
    return MCL_OK;
}

static mcl_status fail_oom(mcl_ctx *ctx, const char *fn)
{
    return mcl_ctx_set_error(ctx, MCL_ERR_OOM, "%s: out of memory", fn);
}

/* ======================================================================= building blocks */

/* Run L steps of B sequences (row b·L + t of idx/lab = step t of sequence b) from *state
 * (NULL = W0) in calls of at most `chunk` steps (<= 0: one call). On success *state is the
 * detached final state (the previous one is freed). */
static mcl_status run_context(mcl_acl *m, mcl_ctx *ctx, mcl_acl_state **state,
                              const mcl_dataset *ds, const int64_t *idx, const int32_t *lab,
                              int64_t B, int64_t L, int64_t chunk, int normalize)
{
    if (L < 1) return MCL_OK;
    if (chunk <= 0 || chunk > L) chunk = L;
    int64_t *pi = NULL;
    int32_t *pl = NULL;
    if (chunk < L) {
        pi = malloc((size_t)(B * chunk) * sizeof *pi);
        pl = malloc((size_t)(B * chunk) * sizeof *pl);
        if (!pi || !pl) {
            free(pi);
            free(pl);
            return fail_oom(ctx, "eval context");
        }
    }
    mcl_status st = MCL_OK;
    for (int64_t t0 = 0; t0 < L && st == MCL_OK; t0 += chunk) {
        const int64_t n = min64(chunk, L - t0);
        const int64_t *ri = idx;
        const int32_t *rl = lab;
        if (pi && pl) { /* a piece of the sequences: gather its rows */
            for (int64_t b = 0; b < B; b++)
                for (int64_t t = 0; t < n; t++) {
                    pi[b * n + t] = idx[b * L + t0 + t];
                    pl[b * n + t] = lab[b * L + t0 + t];
                }
            ri = pi;
            rl = pl;
        }
        mcl_tensor *img = NULL, *lt = NULL;
        mcl_acl_state *so = NULL, *det = NULL;
        st = mcl_learner_rows_side(ctx, "eval", ds, ri, rl, B * n, m->cfg.image_size, normalize,
                                   &img, &lt);
        if (st == MCL_OK) st = mcl_acl_forward_state(m, ctx, img, lt, B, n, *state, &so);
        if (st == MCL_OK && !(det = mcl_acl_state_detach(so))) st = fail_oom(ctx, "eval context");
        mcl_acl_state_free(so);
        mcl_tensor_free(img);
        mcl_tensor_free(lt);
        mcl_ctx_reset(ctx);
        if (st == MCL_OK) {
            mcl_acl_state_free(*state);
            *state = det;
        }
    }
    free(pi);
    free(pl);
    return st;
}

/* Rows [b0, b0+bn) of every tensor of s as views (caller frees the views and out->t). */
static mcl_status state_rows(mcl_ctx *ctx, const mcl_acl_state *s, int64_t b0, int64_t bn,
                             mcl_acl_state *out)
{
    out->layers = s->layers;
    out->batch = bn;
    out->t = calloc((size_t)(s->layers > 0 ? s->layers : 1) * 4, sizeof *out->t);
    if (!out->t) return fail_oom(ctx, "eval query");
    for (int i = 0; i < 4 * s->layers; i++) {
        mcl_tensor *t = s->t[i];
        const int64_t per = mcl_tensor_numel(t) / t->shape[0];
        const int64_t sh[4] = {bn, t->shape[1], t->shape[2], t->shape[3]};
        out->t[i] = mcl_tensor_view(t, b0 * per, 4, sh);
        if (!out->t[i]) return mcl_learner_fail(ctx, "eval query", "state view");
    }
    out->feat_n = s->feat_n;
    if (s->feat_n > 0) { /* feature_stats context: the statistics [B, F], rows likewise */
        const int64_t F = mcl_tensor_numel(s->feat_mean) / s->batch, sh[2] = {bn, F};
        out->feat_mean = mcl_tensor_view(s->feat_mean, b0 * F, 2, sh);
        out->feat_m2 = mcl_tensor_view(s->feat_m2, b0 * F, 2, sh);
        if (!out->feat_mean || !out->feat_m2) return mcl_learner_fail(ctx, "eval query", "state view");
    }
    return MCL_OK;
}

static void state_rows_free(mcl_acl_state *v)
{
    if (v->t)
        for (int i = 0; i < 4 * v->layers; i++) mcl_tensor_free(v->t[i]);
    mcl_tensor_free(v->feat_mean);
    mcl_tensor_free(v->feat_m2);
    v->feat_mean = v->feat_m2 = NULL;
    free(v->t);
    v->t = NULL;
}

/* Queries of B sequences, Q each (row b·Q + j of idx = query j of sequence b), every one
 * from its sequence's state (batch B; NULL = W0), in calls of at most `chunk` rows. The
 * logits go to out[(b·Q + j)·n_way ...]. */
static mcl_status query_logits(mcl_acl *m, mcl_ctx *ctx, const mcl_acl_state *state,
                               const mcl_dataset *ds, const int64_t *idx, int64_t B, int64_t Q,
                               int64_t chunk, int normalize, float *out)
{
    if (B < 1 || Q < 1) return MCL_OK;
    int64_t nb = chunk / Q, qn = Q; /* sequences per call, queries per sequence per call */
    if (nb < 1) nb = 1, qn = chunk;
    if (nb > B) nb = B;
    const int64_t NW = m->cfg.n_way, cap = nb * qn;
    int64_t *pi = malloc((size_t)cap * sizeof *pi);
    float *lg = malloc((size_t)(cap * NW) * sizeof *lg);
    if (!pi || !lg) {
        free(pi);
        free(lg);
        return fail_oom(ctx, "eval query");
    }
    mcl_status st = MCL_OK;
    for (int64_t b0 = 0; b0 < B && st == MCL_OK; b0 += nb) {
        const int64_t bn = min64(nb, B - b0);
        for (int64_t q0 = 0; q0 < Q && st == MCL_OK; q0 += qn) {
            const int64_t qk = min64(qn, Q - q0), rows = bn * qk;
            for (int64_t b = 0; b < bn; b++)
                for (int64_t j = 0; j < qk; j++) pi[b * qk + j] = idx[(b0 + b) * Q + q0 + j];
            mcl_acl_state view = {0, 0, NULL, 0, NULL, NULL};
            const mcl_acl_state *from = state;
            if (state && bn < B) {
                st = state_rows(ctx, state, b0, bn, &view);
                from = &view;
            }
            mcl_tensor *img = NULL, *logits = NULL;
            if (st == MCL_OK)
                st = mcl_learner_rows_side(ctx, "eval", ds, pi, NULL, rows, m->cfg.image_size,
                                           normalize, &img, NULL);
            if (st == MCL_OK) st = mcl_acl_query(m, ctx, from, img, bn, qk, &logits);
            if (st == MCL_OK) st = mcl_tensor_read(logits, lg, rows * NW);
            if (st == MCL_OK) {
                for (int64_t b = 0; b < bn; b++)
                    memcpy(out + ((b0 + b) * Q + q0) * NW, lg + b * qk * NW,
                           (size_t)(qk * NW) * sizeof *lg);
            } else {
                st = mcl_learner_fail(ctx, "eval query", "query");
            }
            state_rows_free(&view);
            mcl_tensor_free(img);
            mcl_ctx_reset(ctx);
        }
    }
    free(pi);
    free(lg);
    return st;
}

/* ======================================================================= the learner */

/* The ACL model as a learner (learner.h): in-context learning, no parameter is written. A
 * problem is one sequence of the batch; reset drops the state (back to W0), observe runs the
 * context from the carried state, predict queries the state. */
typedef struct acl_learner {
    mcl_acl *m;
    int owns_model; /* opened from a checkpoint by mcl_acl_learner_open */
    eval_scope scope;
    mcl_acl_state *S; /* NULL = W0 */
} acl_learner;

static mcl_status al_begin(mcl_learner *L)
{
    acl_learner *a = L->impl;
    scope_begin(&a->scope, a->m, L->ctx);
    return MCL_OK;
}

static void al_end(mcl_learner *L)
{
    acl_learner *a = L->impl;
    mcl_acl_state_free(a->S);
    a->S = NULL;
    scope_end(&a->scope);
}

static mcl_status al_reset(mcl_learner *L, int lanes, int n_outputs, int64_t run, int64_t episode)
{
    (void)run;
    (void)episode; /* deterministic: no randomness in evaluation */
    acl_learner *a = L->impl;
    mcl_status st = check_model(a->m, L->ctx, "acl learner", n_outputs);
    if (st != MCL_OK) return st;
    mcl_acl_state_free(a->S);
    a->S = NULL;
    L->lanes = lanes;
    return MCL_OK;
}

static mcl_status al_observe(mcl_learner *L, int task, const mcl_dataset *ds, const int64_t *idx,
                             const int32_t *lab, int64_t n, const mcl_learn_opts *o)
{
    (void)task;
    acl_learner *a = L->impl;
    return run_context(a->m, L->ctx, &a->S, ds, idx, lab, L->lanes, n, o->ctx_chunk, o->normalize);
}

static mcl_status al_predict(mcl_learner *L, const mcl_dataset *ds, const int64_t *idx, int64_t n,
                             const mcl_learn_opts *o, float *logits)
{
    acl_learner *a = L->impl;
    return query_logits(a->m, L->ctx, a->S, ds, idx, L->lanes, n, o->query_chunk, o->normalize,
                        logits);
}

static void al_destroy(mcl_learner *L)
{
    acl_learner *a = L->impl;
    if (a) {
        mcl_acl_state_free(a->S);
        if (a->owns_model) mcl_acl_free(a->m);
    }
    free(a);
    free(L);
}

static const mcl_learner_ops acl_learner_ops = {"acl",      al_begin,   al_end,     al_reset,
                                                al_observe, al_predict, al_destroy};

mcl_status mcl_acl_learner_create(mcl_acl *m, mcl_ctx *ctx, int max_lanes, mcl_learner **out)
{
    if (!ctx) return MCL_ERR_NULL;
    if (!m || !out) return mcl_ctx_set_error(ctx, MCL_ERR_NULL, "mcl_acl_learner_create: NULL argument");
    *out = NULL;
    mcl_status st = check_model(m, ctx, "mcl_acl_learner_create", 1);
    if (st != MCL_OK) return st;
    mcl_learner *L = calloc(1, sizeof *L);
    acl_learner *a = calloc(1, sizeof *a);
    if (!L || !a) {
        free(L);
        free(a);
        return fail_oom(ctx, "mcl_acl_learner_create");
    }
    a->m = m;
    L->ops = &acl_learner_ops;
    L->ctx = ctx;
    L->max_lanes = max_lanes > 0 ? max_lanes : 1 << 30;
    L->max_outputs = m->cfg.n_way;
    L->n_logits = m->cfg.n_way;
    L->impl = a;
    *out = L;
    return MCL_OK;
}

mcl_status mcl_acl_learner_open(mcl_ctx *ctx, const char *path, int max_lanes, mcl_learner **out,
                                char *err, size_t err_len)
{
    if (!ctx || !path || !out) return mcl_errbuf(err, err_len, MCL_ERR_NULL, "NULL argument");
    *out = NULL;
    mcl_acl *m = NULL;
    mcl_status st = mcl_acl_open(ctx, path, &m, err, err_len);
    if (st != MCL_OK) return st;
    st = mcl_acl_learner_create(m, ctx, max_lanes, out);
    if (st != MCL_OK) {
        mcl_errbuf(err, err_len, st, "%s: %s", path, mcl_ctx_error(ctx));
        mcl_acl_free(m);
        return st;
    }
    ((acl_learner *)(*out)->impl)->owns_model = 1;
    return MCL_OK;
}

/* ======================================================================= the protocols */

mcl_status mcl_acl_eval_seq(mcl_acl *m, mcl_ctx *ctx, const mcl_class_pool *pools,
                            const mcl_seq_eval_cfg *cfg, mcl_cl_result *res)
{
    if (!ctx) return MCL_ERR_NULL;
    if (res) memset(res, 0, sizeof *res);
    if (!m || !pools || !cfg || !res)
        return mcl_ctx_set_error(ctx, MCL_ERR_NULL, "mcl_acl_eval_seq: NULL argument");
    mcl_learner *L = NULL;
    mcl_status st = mcl_acl_learner_create(m, ctx, 0, &L);
    if (st == MCL_OK) st = mcl_eval_seq(L, pools, cfg, res);
    mcl_learner_free(L);
    return st;
}

mcl_status mcl_acl_eval_splitx(mcl_acl *m, mcl_ctx *ctx, const mcl_dataset *train,
                               const mcl_dataset *test, const mcl_splitx_eval_cfg *cfg,
                               mcl_cl_result *res)
{
    if (!ctx) return MCL_ERR_NULL;
    if (res) memset(res, 0, sizeof *res);
    if (!m || !train || !test || !cfg || !res)
        return mcl_ctx_set_error(ctx, MCL_ERR_NULL, "mcl_acl_eval_splitx: NULL argument");
    mcl_learner *L = NULL;
    mcl_status st = mcl_acl_learner_create(m, ctx, 1, &L);
    if (st == MCL_OK) st = mcl_eval_splitx(L, train, test, cfg, res);
    mcl_learner_free(L);
    return st;
}

/* ======================================================================= fast weights */

void mcl_acl_fw_trace_free(mcl_acl_fw_trace *t)
{
    if (!t) return;
    free(t->step);
    free(t->Wy);
    free(t->Wq);
    free(t->Wk);
    free(t->wb);
    memset(t, 0, sizeof *t);
}

/* Copy head h of the four fast-weight tensors of layer l (from S, or the parameters when S is
 * NULL) into recording k of out. buf holds H·D·D floats. */
static mcl_status copy_head(mcl_acl *m, const mcl_acl_state *S, int l, int h, int k,
                            mcl_acl_fw_trace *out, float *buf)
{
    const int64_t H = m->cfg.heads, D = m->head_dim;
    mcl_tensor *par[4] = {m->layer[l].Wy, m->layer[l].Wq, m->layer[l].Wk, m->layer[l].wb};
    float *dst[4] = {out->Wy, out->Wq, out->Wk, out->wb};
    for (int q = 0; q < 4; q++) {
        const int64_t cols = q == 3 ? 4 : D, blk = D * cols;
        mcl_tensor *t = S ? S->t[4 * l + q] : par[q]; /* state: [1,H,D,cols]; param [H,D,cols] */
        mcl_status st = mcl_tensor_read(t, buf, H * blk);
        if (st != MCL_OK) return st;
        memcpy(dst[q] + (int64_t)k * blk, buf + (int64_t)h * blk, (size_t)blk * sizeof *buf);
    }
    return MCL_OK;
}

mcl_status mcl_acl_record_fast_weights(mcl_acl *m, mcl_ctx *ctx, const mcl_dataset *ds,
                                       const int64_t *index, const int32_t *label,
                                       int64_t n_steps, const int64_t *at, int n_at, int layer,
                                       int head, int normalize, mcl_acl_fw_trace *out)
{
    static const char fn[] = "mcl_acl_record_fast_weights";
    if (!ctx) return MCL_ERR_NULL;
    if (out) memset(out, 0, sizeof *out);
    if (!m || !ds || !at || !out || (n_steps > 0 && (!index || !label)))
        return mcl_ctx_set_error(ctx, MCL_ERR_NULL, "%s: NULL argument", fn);
    mcl_status st = check_model(m, ctx, fn, 1);
    if (st != MCL_OK) return st;
    if (layer < 0 || layer >= m->cfg.layers || head < 0 || head >= m->cfg.heads)
        return mcl_ctx_set_error(ctx, MCL_ERR_INVALID,
                                 "%s: layer %d, head %d; the model has %d layers of %d heads", fn,
                                 layer, head, m->cfg.layers, m->cfg.heads);
    if (n_steps < 0 || n_at < 1 || n_at > 1000000)
        return mcl_ctx_set_error(ctx, MCL_ERR_INVALID, "%s: %lld steps, %d recordings", fn,
                                 (long long)n_steps, n_at);
    for (int k = 0; k < n_at; k++)
        if (at[k] < 0 || at[k] > n_steps || (k > 0 && at[k] <= at[k - 1]))
            return mcl_ctx_set_error(ctx, MCL_ERR_INVALID,
                                     "%s: recording steps must increase strictly within [0, %lld] "
                                     "(at[%d] = %lld)",
                                     fn, (long long)n_steps, k, (long long)at[k]);
    for (int64_t t = 0; t < n_steps; t++)
        if (label[t] < 0 || label[t] >= m->cfg.n_way)
            return mcl_ctx_set_error(ctx, MCL_ERR_INVALID,
                                     "%s: label %d of step %lld outside 0..%d", fn, (int)label[t],
                                     (long long)t, m->cfg.n_way - 1);
    const int64_t D = m->head_dim, H = m->cfg.heads;
    out->layer = layer;
    out->head = head;
    out->D = (int)D;
    out->n = n_at;
    out->step = malloc((size_t)n_at * sizeof *out->step);
    out->Wy = malloc((size_t)(n_at * D * D) * sizeof(float));
    out->Wq = malloc((size_t)(n_at * D * D) * sizeof(float));
    out->Wk = malloc((size_t)(n_at * D * D) * sizeof(float));
    out->wb = malloc((size_t)(n_at * D * 4) * sizeof(float));
    float *buf = malloc((size_t)(H * D * D) * sizeof *buf);
    if (!out->step || !out->Wy || !out->Wq || !out->Wk || !out->wb || !buf) {
        free(buf);
        mcl_acl_fw_trace_free(out);
        return fail_oom(ctx, fn);
    }
    memcpy(out->step, at, (size_t)n_at * sizeof *at);

    eval_scope sc;
    scope_begin(&sc, m, ctx);
    mcl_acl_state *S = NULL;
    int64_t t = 0;
    for (int k = 0; k < n_at && st == MCL_OK; k++) {
        if (at[k] > t) {
            st = run_context(m, ctx, &S, ds, index + t, label + t, 1, at[k] - t,
                             MCL_EVAL_QUERY_CHUNK, normalize);
            t = at[k];
        }
        if (st == MCL_OK) st = copy_head(m, S, layer, head, k, out, buf);
    }
    mcl_acl_state_free(S);
    scope_end(&sc);
    free(buf);
    if (st != MCL_OK) {
        mcl_acl_fw_trace_free(out);
        return mcl_ctx_status(ctx) != MCL_OK ? mcl_ctx_status(ctx) : st;
    }
    return MCL_OK;
}
