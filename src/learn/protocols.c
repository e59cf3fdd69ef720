/* protocols.c — task sequences and Split-X over any learner (see protocols.h, learner.h).
 * The loops only arrange rows of host index arrays; the learner does every model call. */
#include "protocols.h"
#include "dist.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void mcl_learner_free(mcl_learner *L)
{
    if (L && L->ops && L->ops->destroy) L->ops->destroy(L);
}

mcl_status mcl_learner_fail(mcl_ctx *ctx, const char *who, const char *what)
{
    if (mcl_ctx_status(ctx) != MCL_OK) return mcl_ctx_status(ctx);
    return mcl_ctx_set_error(ctx, MCL_ERR_BACKEND, "%s: %s failed", who, what);
}

mcl_status mcl_learner_rows(mcl_ctx *ctx, const char *who, const mcl_dataset *ds,
                            const int64_t *idx, const int32_t *lab, int64_t rows, int normalize,
                            mcl_tensor **img, mcl_tensor **lab_out)
{
    return mcl_learner_rows_side(ctx, who, ds, idx, lab, rows, MCL_IMG, normalize, img, lab_out);
}

mcl_status mcl_learner_rows_side(mcl_ctx *ctx, const char *who, const mcl_dataset *ds,
                                 const int64_t *idx, const int32_t *lab, int64_t rows,
                                 int side, int normalize, mcl_tensor **img, mcl_tensor **lab_out)
{
    *img = NULL;
    if (lab_out) *lab_out = NULL;
    if (side < 1 || side > MCL_IMG)
        return mcl_ctx_set_error(ctx, MCL_ERR_INVALID, "%s: image side %d (the data sets give 1..%d)",
                                 who, side, MCL_IMG);
    *img = mcl_tensor_new(ctx, rows, 1, side, side);
    if (lab_out) *lab_out = mcl_tensor_new(ctx, rows, 0, 0, 0);
    if (!*img || (lab_out && !*lab_out)) return mcl_learner_fail(ctx, who, "tensor allocation");
    mcl_status st = mcl_batch_rows(*img, lab_out ? *lab_out : NULL, ds, idx, lab, rows, normalize);
    return st != MCL_OK ? mcl_learner_fail(ctx, who, "batching") : MCL_OK;
}

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
        c.n_query > 100000 || c.n_tasks < 1 || c.n_tasks > MCL_EVAL_MAX_TASKS || c.n_runs < 1 ||
        c.n_runs > 1000000 || c.n_episodes < 1 || c.batch < 1 || c.batch > 1000000 ||
        c.query_chunk < 1 || c.n_outputs < 0 ||
        (int64_t)c.n_way * (c.k_shot > c.n_query ? c.k_shot : c.n_query) > 10000000)
        return mcl_ctx_set_error(ctx, MCL_ERR_INVALID,
                                 "%s: bad config (N %d, K %d, queries/class %d, tasks %d (1..%d), "
                                 "runs %d, episodes %d, batch %d, query chunk %d, outputs %d)",
                                 fn, cfg->n_way, cfg->k_shot, cfg->n_query, cfg->n_tasks,
                                 MCL_EVAL_MAX_TASKS, cfg->n_runs, cfg->n_episodes, cfg->batch,
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

/* ======================================================================= task sequences */

/* Host row buffers for one batch of episodes. */
typedef struct seq_rows {
    int64_t *idx;
    int32_t *lab;
    float *logits;
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

/* Predict n rows per lane and add the correct ones (argmax over n_out outputs) to *hits. */
static mcl_status predict_hits(mcl_learner *L, const mcl_dataset *ds, const int64_t *idx,
                               const int32_t *lab, int64_t n, int n_out, const mcl_learn_opts *o,
                               float *logits, int64_t *hits)
{
    if (n < 1) return MCL_OK;
    mcl_status st = L->ops->predict(L, ds, idx, n, o, logits);
    if (st == MCL_OK) *hits += mcl_eval_count_hits(logits, L->lanes * n, L->n_logits, n_out, lab);
    return st;
}

/* Task i learned on top of the learner's current problems: observe its context. */
static mcl_status observe_part(mcl_learner *L, mcl_episode *const *eps, int b, int i,
                               seq_rows *r, const mcl_learn_opts *o)
{
    int64_t n = 0;
    const mcl_dataset *ds = gather_part(eps, b, i, MCL_PART_CONTEXT, r, &n);
    return n > 0 ? L->ops->observe(L, i, ds, r->idx, r->lab, n, o) : MCL_OK;
}

static mcl_status query_part(mcl_learner *L, mcl_episode *const *eps, int b, int j, seq_rows *r,
                             int n_out, const mcl_learn_opts *o, int64_t *hits)
{
    int64_t n = 0;
    const mcl_dataset *ds = gather_part(eps, b, j, MCL_PART_QUERY, r, &n);
    return predict_hits(L, ds, r->idx, r->lab, n, n_out, o, r->logits, hits);
}

/* One batch of b episodes (run r, the first is episode e0): adds the correct-query counts of
 * R[i][j] to hits[i·T + j] and of the alone problems to ahits[i]. */
static mcl_status seq_batch(mcl_learner *L, mcl_episode *const *eps, int b, int r, int e0,
                            const mcl_seq_eval_cfg *c, const mcl_learn_opts *o, seq_rows *rows,
                            int64_t *hits, int64_t *ahits)
{
    const int T = c->n_tasks;
    mcl_status st = L->ops->reset(L, b, c->n_outputs, r, e0);
    for (int i = 0; i < T && st == MCL_OK; i++) {
        st = observe_part(L, eps, b, i, rows, o);
        for (int j = 0; j <= i && st == MCL_OK; j++)
            st = query_part(L, eps, b, j, rows, c->n_outputs, o, &hits[i * T + j]);
    }
    for (int i = 1; i < T && !c->skip_alone && st == MCL_OK; i++) {
        st = L->ops->reset(L, b, c->n_outputs, r, e0);
        if (st == MCL_OK) st = observe_part(L, eps, b, i, rows, o);
        if (st == MCL_OK) st = query_part(L, eps, b, i, rows, c->n_outputs, o, &ahits[i]);
    }
    return st;
}

static mcl_status fail_oom(mcl_ctx *ctx, const char *fn)
{
    return mcl_ctx_set_error(ctx, MCL_ERR_OOM, "%s: out of memory", fn);
}

/* MPI (dist.h): run r was evaluated by rank r mod N; every rank gets every run's matrix (and
 * alone column), so the summary is the single-process one, bit for bit. */
static mcl_status share_runs(mcl_ctx *ctx, mcl_cl_result *res, mcl_status st)
{
    if (mcl_dist_size() == 1) return st;
    char err[256];
    mcl_status a = mcl_dist_agree(st, NULL, err, sizeof err);
    if (st != MCL_OK) return st; /* the message is in ctx */
    if (a == MCL_OK) a = mcl_dist_gather_items(res->acc, res->n_runs, (int64_t)res->n_tasks * res->n_tasks, err, sizeof err);
    if (a == MCL_OK) a = mcl_dist_gather_items(res->alone, res->n_runs, res->n_tasks, err, sizeof err);
    return a == MCL_OK ? MCL_OK : mcl_ctx_set_error(ctx, a, "evaluation: %s", err);
}

mcl_status mcl_eval_seq(mcl_learner *L, const mcl_class_pool *pools, const mcl_seq_eval_cfg *cfg,
                        mcl_cl_result *res)
{
    static const char fn[] = "task-sequence eval";
    if (res) memset(res, 0, sizeof *res);
    if (!L || !L->ctx) return MCL_ERR_NULL;
    mcl_ctx *ctx = L->ctx;
    if (!pools || !cfg || !res) return mcl_ctx_set_error(ctx, MCL_ERR_NULL, "%s: NULL argument", fn);
    mcl_seq_eval_cfg c;
    mcl_status st = mcl_seq_eval_resolve(ctx, pools, cfg, &c);
    if (st != MCL_OK) return st;
    if (L->max_outputs && c.n_outputs > L->max_outputs)
        return mcl_ctx_set_error(ctx, MCL_ERR_INVALID,
                                 "%s: the model has %d outputs (n_way) but the protocol needs %d",
                                 fn, L->max_outputs, c.n_outputs);
    const int T = c.n_tasks;
    int B = c.batch < c.n_episodes ? c.batch : c.n_episodes;
    if (B > L->max_lanes) B = L->max_lanes;
    const int64_t N = c.n_way, per_part = N * (c.k_shot > c.n_query ? c.k_shot : c.n_query);
    const int64_t n_logits = L->max_outputs ? L->max_outputs : c.n_outputs;
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
                     malloc((size_t)(B * per_part) * sizeof(int32_t)),
                     malloc((size_t)(B * per_part * n_logits) * sizeof(float))};
    int64_t *hits = malloc((size_t)(T * T + T) * sizeof *hits);
    if (!eps || !rows.idx || !rows.lab || !rows.logits || !hits) st = fail_oom(ctx, fn);
    for (int k = 0; k < B && st == MCL_OK; k++)
        if (mcl_episode_create(&ec, &eps[k]) != MCL_OK)
            st = mcl_ctx_set_error(ctx, MCL_ERR_INVALID, "%s: cannot allocate episodes", fn);

    const mcl_learn_opts o = {c.normalize, c.query_chunk, 0};
    if (st == MCL_OK) st = L->ops->begin(L);
    const double count = (double)c.n_episodes * (double)N * c.n_query; /* queries per cell */
    for (int r = 0; r < c.n_runs && st == MCL_OK; r++) {
        if (r % mcl_dist_size() != mcl_dist_rank()) continue; /* another rank's run */
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
            if (st == MCL_OK) st = seq_batch(L, eps, b, r, e0, &c, &o, &rows, hits, hits + T * T);
        }
        if (st != MCL_OK) break;
        mcl_cl_result_set_run_hits(res, r, hits, count, !c.skip_alone);
        if (c.on_run) c.on_run(c.on_run_arg, r + 1, c.n_runs);
    }
    L->ops->end(L);

    for (int k = 0; eps && k < B; k++) mcl_episode_free(eps[k]);
    free(eps);
    free(rows.idx);
    free(rows.lab);
    free(rows.logits);
    free(hits);
    return mcl_cl_result_finish(res, share_runs(ctx, res, st));
}

/* ======================================================================= Split-X */

mcl_status mcl_eval_splitx(mcl_learner *L, const mcl_dataset *train, const mcl_dataset *test,
                           const mcl_splitx_eval_cfg *cfg, mcl_cl_result *res)
{
    static const char fn[] = "Split-X eval";
    if (res) memset(res, 0, sizeof *res);
    if (!L || !L->ctx) return MCL_ERR_NULL;
    mcl_ctx *ctx = L->ctx;
    if (!train || !test || !cfg || !res)
        return mcl_ctx_set_error(ctx, MCL_ERR_NULL, "%s: NULL argument", fn);
    mcl_splitx_eval_cfg c;
    mcl_status st = mcl_splitx_eval_resolve(ctx, train, test, cfg, &c);
    if (st != MCL_OK) return st;
    const int T = c.split.n_tasks, C = c.split.classes_per_task;
    const int is_class = c.split.mode == MCL_SPLITX_CLASS;
    int n_out = c.n_outputs;
    if (n_out == 0) n_out = is_class ? (L->max_outputs ? L->max_outputs : T * C) : C;
    if (is_class && L->max_outputs && L->max_outputs < T * C)
        return mcl_ctx_set_error(ctx, MCL_ERR_INVALID,
                                 "%s: class-incremental %d tasks × %d classes need %d outputs; "
                                 "the model has %d (n_way)",
                                 fn, T, C, T * C, L->max_outputs);
    if (L->max_outputs && n_out > L->max_outputs)
        return mcl_ctx_set_error(ctx, MCL_ERR_INVALID,
                                 "%s: the model has %d outputs (n_way) but the protocol needs %d",
                                 fn, L->max_outputs, n_out);
    if (mcl_cl_result_init(res, T, c.n_runs) != MCL_OK) return fail_oom(ctx, fn);

    const mcl_learn_opts o = {c.normalize, c.query_chunk, c.ctx_chunk};
    st = L->ops->begin(L);
    float *logits = NULL;
    for (int r = 0; r < c.n_runs && st == MCL_OK; r++) {
        if (r % mcl_dist_size() != mcl_dist_rank()) continue; /* another rank's run */
        mcl_splitx_cfg sxc = c.split;
        sxc.run = c.first_run + r;
        mcl_splitx *sx = NULL;
        char err[256] = "";
        mcl_status s = mcl_splitx_create(train, test, &sxc, &sx, err, sizeof err);
        if (s != MCL_OK) {
            st = mcl_ctx_set_error(ctx, s, "%s: run %d: %s", fn, sxc.run, err);
            break;
        }
        int64_t most = 1; /* the largest task's test images */
        for (int j = 0; j < T; j++)
            if (sx->task_query_start[j + 1] - sx->task_query_start[j] > most)
                most = sx->task_query_start[j + 1] - sx->task_query_start[j];
        st = L->ops->reset(L, 1, n_out, sxc.run, 0);
        if (st == MCL_OK) {
            float *nl = realloc(logits, (size_t)(most * L->n_logits) * sizeof *nl);
            if (!nl) st = fail_oom(ctx, fn);
            else logits = nl;
        }
        double *R = res->acc + (int64_t)r * T * T;
        for (int i = 0; i < T && st == MCL_OK; i++) {
            const int64_t c0 = sx->task_ctx_start[i], cn = sx->task_ctx_start[i + 1] - c0;
            if (cn > 0) st = L->ops->observe(L, i, train, sx->ctx_index + c0, sx->ctx_label + c0, cn, &o);
            if (c.final_only && i < T - 1) continue;
            for (int j = 0; j <= i && st == MCL_OK; j++) {
                const int64_t q0 = sx->task_query_start[j], qn = sx->task_query_start[j + 1] - q0;
                int64_t h = 0;
                st = predict_hits(L, test, sx->query_index + q0, sx->query_label + q0, qn, n_out,
                                  &o, logits, &h);
                R[i * T + j] = qn > 0 ? (double)h / (double)qn : NAN;
            }
        }
        mcl_splitx_free(sx);
        if (st == MCL_OK && c.on_run) c.on_run(c.on_run_arg, r + 1, c.n_runs);
    }
    free(logits);
    L->ops->end(L);
    return mcl_cl_result_finish(res, share_runs(ctx, res, st));
}
