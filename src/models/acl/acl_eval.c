/* acl_eval.c — evaluation protocols of an ACL model (SPEC-ACL §5). See acl_eval.h.
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

#define IMG_PIX ((int64_t)MCL_IMG * MCL_IMG)

/* ======================================================================= shared helpers */

int64_t mcl_eval_count_hits(const float *logits, int64_t rows, int64_t n_logits, int n_outputs,
                            const int32_t *labels)
{
    if (!logits || !labels || rows < 1 || n_outputs < 1 || n_outputs > n_logits) return 0;
    int64_t hit = 0;
    for (int64_t r = 0; r < rows; r++) {
        const float *l = logits + r * n_logits;
        int best = 0;
        for (int k = 1; k < n_outputs; k++)
            if (l[k] > l[best]) best = k;
        hit += best == labels[r];
    }
    return hit;
}

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* Number of classes in a pool, checked (positions valid, no duplicates). */
static mcl_status pool_size(mcl_ctx *ctx, const char *fn, const mcl_class_pool *p, int task,
                            int *n)
{
    if (!p->ds)
        return mcl_ctx_set_error(ctx, MCL_ERR_NULL, "%s: pool of task %d has no dataset", fn,
                                 task);
    int cap = p->classes ? p->n_classes : p->ds->n_classes;
    if (cap < 0)
        return mcl_ctx_set_error(ctx, MCL_ERR_INVALID, "%s: pool of task %d: %d classes", fn,
                                 task, cap);
    int *pos = malloc((size_t)(cap > 0 ? cap : 1) * sizeof *pos);
    if (!pos) return mcl_ctx_set_error(ctx, MCL_ERR_OOM, "%s: out of memory", fn);
    char err[256] = "";
    mcl_status st = mcl_class_pool_positions(p, pos, cap, n, err, sizeof err);
    free(pos);
    if (st != MCL_OK)
        return mcl_ctx_set_error(ctx, st, "%s: pool of task %d: %s", fn, task, err);
    return MCL_OK;
}

mcl_status mcl_seq_eval_resolve(mcl_ctx *ctx, const mcl_class_pool *pools,
                                const mcl_seq_eval_cfg *cfg, mcl_seq_eval_cfg *out)
{
    static const char fn[] = "task-sequence eval";
    if (!ctx) return MCL_ERR_NULL;
    if (!pools || !cfg || !out) return mcl_ctx_set_error(ctx, MCL_ERR_NULL, "%s: NULL argument", fn);
    mcl_seq_eval_cfg c = *cfg;
    if (c.n_query == 0) c.n_query = 1;
    if (c.batch == 0) c.batch = MCL_EVAL_BATCH;
    if (c.query_chunk == 0) c.query_chunk = MCL_EVAL_QUERY_CHUNK;
    if (c.n_way < 1 || c.n_way > 100000 || c.k_shot < 1 || c.k_shot > 100000 || c.n_query < 1 ||
        c.n_query > 100000 || c.n_tasks < 1 || c.n_tasks > MCL_ACL_MAX_TASKS || c.n_runs < 1 ||
        c.n_runs > 1000000 || c.n_episodes < 1 || c.batch < 1 || c.batch > 1000000 ||
        c.query_chunk < 1 || c.n_outputs < 0 ||
        (int64_t)c.n_way * (c.k_shot > c.n_query ? c.k_shot : c.n_query) > 10000000)
        return mcl_ctx_set_error(ctx, MCL_ERR_INVALID,
                                 "%s: bad config (N %d, K %d, queries/class %d, tasks %d (1..%d), "
                                 "runs %d, episodes %d, batch %d, query chunk %d, outputs %d)",
                                 fn, cfg->n_way, cfg->k_shot, cfg->n_query, cfg->n_tasks,
                                 MCL_ACL_MAX_TASKS, cfg->n_runs, cfg->n_episodes, cfg->batch,
                                 cfg->query_chunk, cfg->n_outputs);
    int n_labels = c.class_incremental ? c.n_way * c.n_tasks : c.n_way;
    if (c.n_outputs == 0) c.n_outputs = n_labels;
    if (c.n_outputs < n_labels)
        return mcl_ctx_set_error(ctx, MCL_ERR_INVALID,
                                 "%s: %d outputs cannot hold the %d labels of %d-way%s tasks", fn,
                                 c.n_outputs, n_labels, c.n_way,
                                 c.class_incremental ? " class-incremental" : "");
    for (int i = 0; i < c.n_tasks; i++) {
        int n = 0;
        mcl_status st = pool_size(ctx, fn, &pools[i], i, &n);
        if (st != MCL_OK) return st;
        if (n < c.n_way)
            return mcl_ctx_set_error(ctx, MCL_ERR_INVALID,
                                     "%s: the class pool of task %d has %d classes; %d-way tasks "
                                     "need at least %d",
                                     fn, i, n, c.n_way, c.n_way);
    }
    *out = c;
    return MCL_OK;
}

mcl_status mcl_splitx_eval_resolve(mcl_ctx *ctx, const mcl_dataset *train,
                                   const mcl_dataset *test, const mcl_splitx_eval_cfg *cfg,
                                   mcl_splitx_eval_cfg *out)
{
    static const char fn[] = "Split-X eval";
    if (!ctx) return MCL_ERR_NULL;
    if (!train || !test || !cfg || !out)
        return mcl_ctx_set_error(ctx, MCL_ERR_NULL, "%s: NULL argument", fn);
    mcl_splitx_eval_cfg c = *cfg;
    if (c.query_chunk == 0) c.query_chunk = MCL_EVAL_QUERY_CHUNK;
    const mcl_splitx_cfg *s = &c.split;
    if (c.first_run < 0 || c.n_runs < 1 || c.n_runs > 1000000 || c.query_chunk < 1 ||
        c.ctx_chunk < 0 || c.n_outputs < 0 || s->n_tasks < 1 || s->n_tasks > 1024 ||
        s->classes_per_task < 1 || s->classes_per_task > 100000 ||
        (int64_t)s->n_tasks * s->classes_per_task > 100000 ||
        (s->mode != MCL_SPLITX_DOMAIN && s->mode != MCL_SPLITX_CLASS))
        return mcl_ctx_set_error(ctx, MCL_ERR_INVALID,
                                 "%s: bad config (first run %d, runs %d, query chunk %d, context "
                                 "chunk %d, outputs %d, tasks %d, classes per task %d, mode %d)",
                                 fn, cfg->first_run, cfg->n_runs, cfg->query_chunk,
                                 cfg->ctx_chunk, cfg->n_outputs, s->n_tasks,
                                 s->classes_per_task, (int)s->mode);
    int n_labels = s->mode == MCL_SPLITX_CLASS ? s->n_tasks * s->classes_per_task
                                               : s->classes_per_task;
    if (c.n_outputs != 0 && c.n_outputs < n_labels)
        return mcl_ctx_set_error(ctx, MCL_ERR_INVALID,
                                 "%s: %d outputs cannot hold the %d labels of this split", fn,
                                 c.n_outputs, n_labels);
    *out = c;
    return MCL_OK;
}

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
    if (m->cfg.image_size != MCL_IMG || m->cfg.in_channels != 1)
        return mcl_ctx_set_error(ctx, MCL_ERR_INVALID,
                                 "%s: the model takes %d×%d images with %d channels; the datasets "
                                 "are %d×%d grayscale",
                                 fn, m->cfg.image_size, m->cfg.image_size, m->cfg.in_channels,
                                 MCL_IMG, MCL_IMG);
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

/* The status to return after a call that failed: the context's, or a generic one. */
static mcl_status ctx_fail(mcl_ctx *ctx, const char *fn, const char *what)
{
    if (mcl_ctx_status(ctx) != MCL_OK) return mcl_ctx_status(ctx);
    return mcl_ctx_set_error(ctx, MCL_ERR_BACKEND, "%s: %s failed", fn, what);
}

/* rows images [rows,1,32,32] (+ labels [rows] when lab_out) from host index/label arrays. */
static mcl_status make_rows(mcl_ctx *ctx, const mcl_dataset *ds, const int64_t *idx,
                            const int32_t *lab, int64_t rows, int normalize, mcl_tensor **img,
                            mcl_tensor **lab_out)
{
    *img = mcl_tensor_new(ctx, rows, 1, MCL_IMG, MCL_IMG);
    if (lab_out) *lab_out = mcl_tensor_new(ctx, rows, 0, 0, 0);
    if (!*img || (lab_out && !*lab_out)) return ctx_fail(ctx, "eval", "tensor allocation");
    mcl_status st = mcl_batch_rows(*img, lab_out ? *lab_out : NULL, ds, idx, lab, rows, normalize);
    return st != MCL_OK ? ctx_fail(ctx, "eval", "batching") : MCL_OK;
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
        mcl_tensor *img = NULL, *lt = NULL, *logits = NULL;
        mcl_acl_state *so = NULL, *det = NULL;
        st = make_rows(ctx, ds, ri, rl, B * n, normalize, &img, &lt);
        if (st == MCL_OK) st = mcl_acl_forward(m, ctx, img, lt, B, n, *state, &logits, &so);
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
        if (!out->t[i]) return ctx_fail(ctx, "eval query", "state view");
    }
    return MCL_OK;
}

static void state_rows_free(mcl_acl_state *v)
{
    if (v->t)
        for (int i = 0; i < 4 * v->layers; i++) mcl_tensor_free(v->t[i]);
    free(v->t);
    v->t = NULL;
}

/* Queries of B sequences, Q each (row b·Q + j of idx/lab = query j of sequence b), every one
 * from its sequence's state (batch B; NULL = W0), in calls of at most `chunk` rows. Adds the
 * number of correct predictions (argmax over outputs 0..n_out-1) to *hits. */
static mcl_status query_hits(mcl_acl *m, mcl_ctx *ctx, const mcl_acl_state *state,
                             const mcl_dataset *ds, const int64_t *idx, const int32_t *lab,
                             int64_t B, int64_t Q, int n_out, int64_t chunk, int normalize,
                             int64_t *hits)
{
    if (B < 1 || Q < 1) return MCL_OK;
    int64_t nb = chunk / Q, qn = Q; /* sequences per call, queries per sequence per call */
    if (nb < 1) nb = 1, qn = chunk;
    if (nb > B) nb = B;
    const int64_t NW = m->cfg.n_way, cap = nb * qn;
    int64_t *pi = malloc((size_t)cap * sizeof *pi);
    int32_t *pl = malloc((size_t)cap * sizeof *pl);
    float *lg = malloc((size_t)(cap * NW) * sizeof *lg);
    if (!pi || !pl || !lg) {
        free(pi);
        free(pl);
        free(lg);
        return fail_oom(ctx, "eval query");
    }
    mcl_status st = MCL_OK;
    for (int64_t b0 = 0; b0 < B && st == MCL_OK; b0 += nb) {
        const int64_t bn = min64(nb, B - b0);
        for (int64_t q0 = 0; q0 < Q && st == MCL_OK; q0 += qn) {
            const int64_t qk = min64(qn, Q - q0), rows = bn * qk;
            for (int64_t b = 0; b < bn; b++)
                for (int64_t j = 0; j < qk; j++) {
                    pi[b * qk + j] = idx[(b0 + b) * Q + q0 + j];
                    pl[b * qk + j] = lab[(b0 + b) * Q + q0 + j];
                }
            mcl_acl_state view = {0, 0, NULL};
            const mcl_acl_state *from = state;
            if (state && bn < B) {
                st = state_rows(ctx, state, b0, bn, &view);
                from = &view;
            }
            mcl_tensor *img = NULL, *logits = NULL;
            if (st == MCL_OK) st = make_rows(ctx, ds, pi, NULL, rows, normalize, &img, NULL);
            if (st == MCL_OK) st = mcl_acl_query(m, ctx, from, img, bn, qk, &logits);
            if (st == MCL_OK) st = mcl_tensor_read(logits, lg, rows * NW);
            if (st == MCL_OK) *hits += mcl_eval_count_hits(lg, rows, NW, n_out, pl);
            else st = ctx_fail(ctx, "eval query", "query");
            state_rows_free(&view);
            mcl_tensor_free(img);
            mcl_ctx_reset(ctx);
        }
    }
    free(pi);
    free(pl);
    free(lg);
    return st;
}

/* ======================================================================= task sequences */

/* Host row buffers for one batch of episodes. */
typedef struct seq_rows {
    int64_t *idx;
    int32_t *lab;
} seq_rows;

/* Rows of one part of task i of b episodes, episode-major, into r. */
static const mcl_dataset *gather_part(mcl_episode *const *eps, int b, int i, mcl_task_part part,
                                      seq_rows *r, int64_t *per)
{
    const mcl_task *t0 = &eps[0]->task[i];
    const int64_t n = mcl_task_part_len(t0, part);
    for (int k = 0; k < b; k++) {
        const mcl_task *t = &eps[k]->task[i];
        const int64_t *ix = part == MCL_PART_CONTEXT ? t->ctx_index : t->query_index;
        const int32_t *lb = part == MCL_PART_CONTEXT ? t->ctx_label : t->query_label;
        memcpy(r->idx + k * n, ix, (size_t)n * sizeof *ix);
        memcpy(r->lab + k * n, lb, (size_t)n * sizeof *lb);
    }
    *per = n;
    return t0->ds;
}

/* One batch of b episodes: adds the correct-query counts of R[i][j] to hits[i·T + j] and of
 * the alone runs to ahits[i]. */
static mcl_status seq_batch(mcl_acl *m, mcl_ctx *ctx, mcl_episode *const *eps, int b,
                            const mcl_seq_eval_cfg *c, seq_rows *r, int64_t *hits,
                            int64_t *ahits)
{
    const int T = c->n_tasks;
    mcl_status st = MCL_OK;
    mcl_acl_state *S = NULL;
    int64_t n = 0;
    for (int i = 0; i < T && st == MCL_OK; i++) {
        const mcl_dataset *ds = gather_part(eps, b, i, MCL_PART_CONTEXT, r, &n);
        st = run_context(m, ctx, &S, ds, r->idx, r->lab, b, n, 0, c->normalize);
        for (int j = 0; j <= i && st == MCL_OK; j++) {
            ds = gather_part(eps, b, j, MCL_PART_QUERY, r, &n);
            st = query_hits(m, ctx, S, ds, r->idx, r->lab, b, n, c->n_outputs, c->query_chunk,
                            c->normalize, &hits[i * T + j]);
        }
    }
    mcl_acl_state_free(S);
    for (int i = 1; i < T && !c->skip_alone && st == MCL_OK; i++) {
        S = NULL;
        const mcl_dataset *ds = gather_part(eps, b, i, MCL_PART_CONTEXT, r, &n);
        st = run_context(m, ctx, &S, ds, r->idx, r->lab, b, n, 0, c->normalize);
        if (st == MCL_OK) {
            ds = gather_part(eps, b, i, MCL_PART_QUERY, r, &n);
            st = query_hits(m, ctx, S, ds, r->idx, r->lab, b, n, c->n_outputs, c->query_chunk,
                            c->normalize, &ahits[i]);
        }
        mcl_acl_state_free(S);
    }
    return st;
}

mcl_status mcl_acl_eval_seq(mcl_acl *m, mcl_ctx *ctx, const mcl_class_pool *pools,
                            const mcl_seq_eval_cfg *cfg, mcl_cl_result *res)
{
    static const char fn[] = "mcl_acl_eval_seq";
    if (!ctx) return MCL_ERR_NULL;
    if (res) memset(res, 0, sizeof *res);
    if (!m || !pools || !cfg || !res)
        return mcl_ctx_set_error(ctx, MCL_ERR_NULL, "%s: NULL argument", fn);
    mcl_seq_eval_cfg c;
    mcl_status st = mcl_seq_eval_resolve(ctx, pools, cfg, &c);
    if (st == MCL_OK) st = check_model(m, ctx, fn, c.n_outputs);
    if (st != MCL_OK) return st;
    const int T = c.n_tasks, B = c.batch < c.n_episodes ? c.batch : c.n_episodes;
    const int64_t N = c.n_way, per_part = N * (c.k_shot > c.n_query ? c.k_shot : c.n_query);
    if (mcl_cl_result_init(res, T, c.n_runs) != MCL_OK) return fail_oom(ctx, fn);

    mcl_episode_cfg ec;
    memset(&ec, 0, sizeof ec);
    ec.n_way = c.n_way;
    ec.k_shot = c.k_shot;
    ec.n_query = c.n_query;
    ec.first_shot = 0; /* no first-shot examples in evaluation */
    ec.n_tasks = T;
    ec.share_classes = c.share_classes;
    ec.class_incremental = c.class_incremental;
    mcl_episode **eps = calloc((size_t)B, sizeof *eps);
    seq_rows rows = {malloc((size_t)(B * per_part) * sizeof(int64_t)),
                     malloc((size_t)(B * per_part) * sizeof(int32_t))};
    int64_t *hits = malloc((size_t)(T * T + T) * sizeof *hits);
    if (!eps || !rows.idx || !rows.lab || !hits) st = fail_oom(ctx, fn);
    for (int k = 0; k < B && st == MCL_OK; k++)
        if (mcl_episode_create(&ec, &eps[k]) != MCL_OK)
            st = mcl_ctx_set_error(ctx, MCL_ERR_INVALID, "%s: cannot allocate episodes", fn);

    eval_scope sc;
    scope_begin(&sc, m, ctx);
    const double count = (double)c.n_episodes * (double)N * c.n_query; /* queries per cell */
    for (int r = 0; r < c.n_runs && st == MCL_OK; r++) {
        memset(hits, 0, (size_t)(T * T + T) * sizeof *hits);
        mcl_rng rng;
        mcl_rng_init(&rng, c.seed, (uint64_t)r);
        for (int e0 = 0; e0 < c.n_episodes && st == MCL_OK; e0 += B) {
            const int b = c.n_episodes - e0 < B ? c.n_episodes - e0 : B;
            for (int k = 0; k < b && st == MCL_OK; k++) {
                char err[256] = "";
                mcl_status s = mcl_episode_sample(eps[k], pools, &rng, err, sizeof err);
                if (s != MCL_OK)
                    st = mcl_ctx_set_error(ctx, s, "%s: run %d, episode %d: %s", fn, r, e0 + k,
                                           err);
            }
            if (st == MCL_OK) st = seq_batch(m, ctx, eps, b, &c, &rows, hits, hits + T * T);
        }
        if (st != MCL_OK) break;
        mcl_cl_result_set_run_hits(res, r, hits, count, !c.skip_alone);
    }
    scope_end(&sc);

    for (int k = 0; eps && k < B; k++) mcl_episode_free(eps[k]);
    free(eps);
    free(rows.idx);
    free(rows.lab);
    free(hits);
    return mcl_cl_result_finish(res, st);
}

/* ======================================================================= Split-X */

mcl_status mcl_acl_eval_splitx(mcl_acl *m, mcl_ctx *ctx, const mcl_dataset *train,
                               const mcl_dataset *test, const mcl_splitx_eval_cfg *cfg,
                               mcl_cl_result *res)
{
    static const char fn[] = "mcl_acl_eval_splitx";
    if (!ctx) return MCL_ERR_NULL;
    if (res) memset(res, 0, sizeof *res);
    if (!m || !train || !test || !cfg || !res)
        return mcl_ctx_set_error(ctx, MCL_ERR_NULL, "%s: NULL argument", fn);
    mcl_splitx_eval_cfg c;
    mcl_status st = mcl_splitx_eval_resolve(ctx, train, test, cfg, &c);
    if (st != MCL_OK) return st;
    const int T = c.split.n_tasks, C = c.split.classes_per_task;
    const int is_class = c.split.mode == MCL_SPLITX_CLASS;
    int n_out = c.n_outputs;
    if (n_out == 0) n_out = is_class ? m->cfg.n_way : C;
    if (is_class && m->cfg.n_way < T * C)
        return mcl_ctx_set_error(ctx, MCL_ERR_INVALID,
                                 "%s: class-incremental %d tasks × %d classes need %d outputs; "
                                 "the model has %d (n_way)",
                                 fn, T, C, T * C, m->cfg.n_way);
    st = check_model(m, ctx, fn, n_out);
    if (st != MCL_OK) return st;
    if (mcl_cl_result_init(res, T, c.n_runs) != MCL_OK) return fail_oom(ctx, fn);

    eval_scope sc;
    scope_begin(&sc, m, ctx);
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
        double *R = res->acc + (int64_t)r * T * T;
        mcl_acl_state *S = NULL;
        for (int i = 0; i < T && st == MCL_OK; i++) {
            const int64_t c0 = sx->task_ctx_start[i], cn = sx->task_ctx_start[i + 1] - c0;
            st = run_context(m, ctx, &S, train, sx->ctx_index + c0, sx->ctx_label + c0, 1, cn,
                             c.ctx_chunk, c.normalize);
            if (c.final_only && i < T - 1) continue;
            for (int j = 0; j <= i && st == MCL_OK; j++) {
                const int64_t q0 = sx->task_query_start[j], qn = sx->task_query_start[j + 1] - q0;
                int64_t h = 0;
                st = query_hits(m, ctx, S, test, sx->query_index + q0, sx->query_label + q0, 1, qn,
                                n_out, c.query_chunk, c.normalize, &h);
                R[i * T + j] = qn > 0 ? (double)h / (double)qn : NAN;
            }
        }
        mcl_acl_state_free(S);
        mcl_splitx_free(sx);
    }
    scope_end(&sc);
    return mcl_cl_result_finish(res, st);
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
