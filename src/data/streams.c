/* streams.c — Split-X, piecewise-stationary and Online-X streams (see sampler.h).
 *
 * ---- Split-X (doc/acl.md, Evaluation, paper 000 App. A.7) ----
 * The split's T*C classes in a fixed order (default: the first T*C class ids ascending, so
 * Split-MNIST is {0,1},{2,3},...,{8,9}); task t = classes [t*C, t*C+C).
 * Context: for run r each class contributes its training images at positions
 * r*K, r*K+1, ..., r*K+K-1 of its image list (the dataset's order, or a fixed permutation
 * keyed by (shuffle_seed, class id)), taken modulo the class size. doc/acl-model.md says only "K
 * training images per class (different per run)"; consecutive windows are our reading: runs
 * r = 0..floor(m/K)-1 use disjoint images. Within a task the order is round robin
 * c0, c1, ..., c0, c1, ... (example i of every class, in class order, before example i+1);
 * tasks follow each other in order; the state is carried over all of them (caller).
 * Labels: domain-incremental j (the class's position in its task, 0..C-1); class-incremental
 * t*C + j, the class's position in the split list — the "true" label when the split is
 * classes 0..T*C-1 of a set with ids 0..9 (Split-MNIST / Split-FMNIST).
 * Queries: every test image of every task class (test set order within a class).
 *
 * ---- piecewise-stationary streams (online-transformer paper §4) ----
 * "first randomly selecting 10 classes ..., assigning them to the 10 observed label-classes
 * and randomly selecting corresponding images until the desired number of examples". We
 * read "randomly selecting corresponding images" as draws without replacement from the union
 * of the task's class images (so class frequencies follow class sizes; balanced sets give
 * balanced tasks); when the union is used up a fresh random pass begins. Tasks are drawn
 * independently (consecutive tasks may share classes, under new labels).
 *
 * ---- Online-X (Sparse-MetaNet §4.1.2, App. D "OnlineCifarGenerator") ----
 * Appendix code, with its naming (ids = task-level labels, lbls = global classes):
 *   kept_ids   = sample(prev labels, n_kept); kept classes = prev map[kept_ids]
 *   all_ids    = labels - kept_ids
 *   perv_old_id= sample(all_ids, n_persev);   perv classes = prev map[perv_old_id]
 *   perv_ids   = sample(all_ids, n_persev)    (new labels, drawn independently of the old)
 *   new_ids    = sample(all_ids - perv_ids, n_new); new classes = sample(classes - kept - perv, n_new)
 *   tags: perv_y = old label (perv_old_id) for a perseveration class, -1 otherwise; kept flag.
 * Ambiguities, and how we resolve them:
 *  1. The code lets a perseveration class draw its old label again (perv_ids independent of
 *     perv_old_id), while the text says these classes get "different task-level class
 *     labels". Default: the text — perv_ids is redrawn until no class keeps its old label
 *     (rejection, so every valid assignment is equally likely). code_exact = 1: the code.
 *  2. The code's new classes exclude only the kept and perseveration classes, so a class
 *     dropped from the previous task can return as "new" (even with its old label); the text
 *     calls them "novel concepts". Default: new classes avoid every class of the previous
 *     task (the pool needs n_way + n_new classes). code_exact = 1: the code.
 *  3. The text allocates "1 class label for the perseveration error and another 2 ... for the
 *     interference", the code's defaults are nb_classes_perv = 2, nb_classes_kept = 1; we
 *     follow the code (and doc/data.md): n_kept = 1, n_persev = 2, configurable.
 *  4. Task length: the appendix leaves it to the caller; §4.1.2 gives ranges in rounds of 32
 *     examples ("32 to 480 examples for a task with length 1-15"): rounds uniform in
 *     [len_min, len_max]. Examples of a task: the code shuffles all training images of the
 *     task's classes (capped at nb_samples_per_class) and reads batches, reshuffling when it
 *     runs out; we draw without replacement from that union and start a fresh random pass when
 *     it is used up (the code's last short batch of a pass is not reproduced).
 *  5. The first task: 5 random classes with random labels, all tagged NEW.
 * Draw order per task: kept, perseveration old labels, perseveration new labels, new labels,
 * new classes, the task length, the per-class caps, the examples. Each task depends only on the
 * draws before it, so the first k tasks of a stream do not depend on n_tasks.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sampler.h"

/* ======================================================================= Split-X */

void mcl_splitx_free(mcl_splitx *sx)
{
    if (!sx) return;
    free(sx->task_class);
    free(sx->ctx_index);
    free(sx->ctx_label);
    free(sx->ctx_task);
    free(sx->task_ctx_start);
    free(sx->query_index);
    free(sx->query_label);
    free(sx->query_task);
    free(sx->task_query_start);
    free(sx);
}

mcl_status mcl_splitx_create(const mcl_dataset *train, const mcl_dataset *test,
                             const mcl_splitx_cfg *cfg, mcl_splitx **out, char *err,
                             size_t err_len)
{
    if (err && err_len) err[0] = '\0';
    if (!out) return mcl_errbuf(err, err_len, MCL_ERR_NULL, "splitx: NULL out");
    *out = NULL;
    if (!train || !test || !cfg) return mcl_errbuf(err, err_len, MCL_ERR_NULL, "splitx: NULL argument");
    int T = cfg->n_tasks, C = cfg->classes_per_task, K = cfg->k_shot;
    if (T < 1 || C < 1 || K < 1 || cfg->run < 0 || T > 100000 || C > 100000 ||
        (int64_t)T * C > 1000000 ||
        (cfg->mode != MCL_SPLITX_DOMAIN && cfg->mode != MCL_SPLITX_CLASS))
        return mcl_errbuf(err, err_len, MCL_ERR_INVALID,
                    "splitx: invalid config (tasks %d, classes per task %d, K %d, run %d, mode %d)",
                    T, C, K, cfg->run, (int)cfg->mode);
    int TC = T * C;
    const int same_set = train == test; /* queries: the class's images not in the context */
    if (!cfg->classes && train->n_classes < TC)
        return mcl_errbuf(err, err_len, MCL_ERR_INVALID,
                    "splitx: %d tasks x %d classes need %d classes; '%s' has %d", T, C, TC,
                    train->name, train->n_classes);
    mcl_splitx *sx = calloc(1, sizeof *sx);
    if (!sx) return mcl_errbuf(err, err_len, MCL_ERR_OOM, "splitx: out of memory");
    sx->cfg = *cfg;
    sx->cfg.classes = NULL;
    sx->train = train;
    sx->test = test;
    sx->n_outputs = cfg->mode == MCL_SPLITX_DOMAIN ? C : TC;
    mcl_status s = MCL_OK;
    int *ptrain = NULL, *ptest = NULL;
    int32_t *drawn = NULL; /* draw_classes: this run's T*C classes */
    sx->task_class = malloc((size_t)TC * sizeof *sx->task_class);
    ptrain = malloc((size_t)TC * sizeof *ptrain);
    ptest = malloc((size_t)TC * sizeof *ptest);
    sx->task_ctx_start = malloc((size_t)(T + 1) * sizeof *sx->task_ctx_start);
    sx->task_query_start = malloc((size_t)(T + 1) * sizeof *sx->task_query_start);
    if (!sx->task_class || !ptrain || !ptest || !sx->task_ctx_start || !sx->task_query_start) {
        s = mcl_errbuf(err, err_len, MCL_ERR_OOM, "splitx: out of memory");
        goto done;
    }
    int64_t nq = 0;
    if (!cfg->classes && cfg->draw_classes) {
        int nc = train->n_classes;
        int *pi = malloc((size_t)nc * sizeof *pi);
        drawn = malloc((size_t)TC * sizeof *drawn);
        if (!pi || !drawn) {
            free(pi);
            free(drawn);
            s = mcl_errbuf(err, err_len, MCL_ERR_OOM, "splitx: out of memory");
            goto done;
        }
        /* stream 2^40 + run: apart from the per-class image streams keyed by class ids */
        mcl_rng r;
        mcl_rng_init(&r, cfg->shuffle_seed, ((uint64_t)1 << 40) + (uint64_t)cfg->run);
        for (int e = 0; e < nc; e++) pi[e] = e;
        mcl_rng_shuffle_int(&r, pi, nc);
        for (int i = 0; i < TC; i++) drawn[i] = train->class_ids[pi[i]];
        free(pi);
    }
    for (int i = 0; i < TC; i++) {
        int32_t c = cfg->classes ? cfg->classes[i] : drawn ? drawn[i] : train->class_ids[i];
        for (int j = 0; j < i; j++)
            if (sx->task_class[j] == c) {
                s = mcl_errbuf(err, err_len, MCL_ERR_INVALID, "splitx: class %d listed twice", (int)c);
                goto done;
            }
        sx->task_class[i] = c;
        ptrain[i] = mcl_dataset_class_pos(train, c);
        ptest[i] = mcl_dataset_class_pos(test, c);
        if (ptrain[i] < 0 || ptest[i] < 0) {
            s = mcl_errbuf(err, err_len, MCL_ERR_INVALID, "splitx: class %d is not in the %s set '%s'",
                     (int)c, ptrain[i] < 0 ? "training" : "test",
                     ptrain[i] < 0 ? train->name : test->name);
            goto done;
        }
        int64_t m = train->class_start[ptrain[i] + 1] - train->class_start[ptrain[i]];
        if (m < K + same_set) {
            s = mcl_errbuf(err, err_len, MCL_ERR_INVALID,
                     same_set ? "splitx: class %d has %lld images, K = %d leaves none to query"
                              : "splitx: class %d has %lld training images, K = %d",
                     (int)c, (long long)m, K);
            goto done;
        }
        nq += test->class_start[ptest[i] + 1] - test->class_start[ptest[i]] - (same_set ? K : 0);
    }
    free(drawn);
    drawn = NULL;
    sx->n_ctx = (int64_t)TC * K;
    sx->n_query = nq;
    sx->ctx_index = malloc((size_t)sx->n_ctx * sizeof *sx->ctx_index);
    sx->ctx_label = malloc((size_t)sx->n_ctx * sizeof *sx->ctx_label);
    sx->ctx_task = malloc((size_t)sx->n_ctx * sizeof *sx->ctx_task);
    sx->query_index = malloc((size_t)(nq + 1) * sizeof *sx->query_index);
    sx->query_label = malloc((size_t)(nq + 1) * sizeof *sx->query_label);
    sx->query_task = malloc((size_t)(nq + 1) * sizeof *sx->query_task);
    if (!sx->ctx_index || !sx->ctx_label || !sx->ctx_task || !sx->query_index ||
        !sx->query_label || !sx->query_task) {
        s = mcl_errbuf(err, err_len, MCL_ERR_OOM, "splitx: out of memory");
        goto done;
    }
    /* the K images of each class for this run: chosen[i*K + e] */
    int64_t *chosen = malloc((size_t)TC * (size_t)K * sizeof *chosen);
    if (!chosen) {
        s = mcl_errbuf(err, err_len, MCL_ERR_OOM, "splitx: out of memory");
        goto done;
    }
    for (int i = 0; i < TC; i++) {
        int64_t start = train->class_start[ptrain[i]];
        int64_t m = train->class_start[ptrain[i] + 1] - start;
        int64_t *order = NULL;
        if (cfg->shuffle_seed) {
            int *pi = malloc((size_t)m * sizeof *pi);
            order = malloc((size_t)m * sizeof *order);
            if (!pi || !order || m > 0x7fffffff) {
                free(pi);
                free(order);
                free(chosen);
                s = mcl_errbuf(err, err_len, MCL_ERR_OOM, "splitx: out of memory");
                goto done;
            }
            mcl_rng r;
            mcl_rng_init(&r, cfg->shuffle_seed, (uint64_t)(uint32_t)sx->task_class[i]);
            for (int64_t e = 0; e < m; e++) pi[e] = (int)e;
            mcl_rng_shuffle_int(&r, pi, m);
            for (int64_t e = 0; e < m; e++) order[e] = pi[e];
            free(pi);
        }
        for (int e = 0; e < K; e++) {
            int64_t q = ((int64_t)cfg->run * K + e) % m;
            if (order) q = order[q];
            chosen[(int64_t)i * K + e] = train->class_index[start + q];
        }
        free(order);
    }
    int64_t n = 0;
    for (int t = 0; t < T; t++) {
        sx->task_ctx_start[t] = n;
        for (int e = 0; e < K; e++)
            for (int j = 0; j < C; j++) {
                int i = t * C + j;
                sx->ctx_index[n] = chosen[(int64_t)i * K + e];
                sx->ctx_label[n] = cfg->mode == MCL_SPLITX_DOMAIN ? j : i;
                sx->ctx_task[n] = t;
                n++;
            }
    }
    sx->task_ctx_start[T] = n;
    n = 0;
    for (int t = 0; t < T; t++) {
        sx->task_query_start[t] = n;
        for (int j = 0; j < C; j++) {
            int i = t * C + j;
            for (int64_t e = test->class_start[ptest[i]]; e < test->class_start[ptest[i] + 1]; e++) {
                int in_ctx = 0;
                for (int k = 0; same_set && k < K; k++) in_ctx |= chosen[(int64_t)i * K + k] == test->class_index[e];
                if (in_ctx) continue;
                sx->query_index[n] = test->class_index[e];
                sx->query_label[n] = cfg->mode == MCL_SPLITX_DOMAIN ? j : i;
                sx->query_task[n] = t;
                n++;
            }
        }
    }
    sx->task_query_start[T] = n;
    free(chosen);
done:
    free(drawn);
    free(ptrain);
    free(ptest);
    if (s != MCL_OK) {
        mcl_splitx_free(sx);
        return s;
    }
    *out = sx;
    return MCL_OK;
}

/* ======================================================================= streams */

void mcl_stream_free(mcl_stream *s)
{
    if (!s) return;
    free(s->index);
    free(s->label);
    free(s->task);
    free(s->role);
    free(s->prev_label);
    free(s->task_start);
    free(s->task_len);
    free(s->task_class);
    free(s->task_role);
    free(s->task_prev_label);
    free(s);
}

/* Example storage with growth; the per-task tables are allocated at full size. */
typedef struct stream_builder {
    mcl_stream *s;
    int64_t cap;
    /* union of the current task's images: image index and label */
    int64_t *u_idx;
    int32_t *u_lab;
    int64_t u_cap;
    int64_t *scratch; /* class-size workspace for per-class caps */
    int64_t scratch_cap;
} stream_builder;

static mcl_status builder_init(stream_builder *b, const mcl_dataset *ds, int n_tasks, int n_way)
{
    memset(b, 0, sizeof *b);
    mcl_stream *s = calloc(1, sizeof *s);
    if (!s) return MCL_ERR_OOM;
    b->s = s;
    s->ds = ds;
    s->n_way = n_way;
    s->n_tasks = n_tasks;
    size_t tn = (size_t)n_tasks * (size_t)n_way;
    s->task_start = calloc((size_t)n_tasks + 1, sizeof *s->task_start);
    s->task_len = calloc((size_t)n_tasks, sizeof *s->task_len);
    s->task_class = calloc(tn, sizeof *s->task_class);
    s->task_role = calloc(tn, sizeof *s->task_role);
    s->task_prev_label = calloc(tn, sizeof *s->task_prev_label);
    if (!s->task_start || !s->task_len || !s->task_class || !s->task_role || !s->task_prev_label)
        return MCL_ERR_OOM;
    return MCL_OK;
}

static void builder_release(stream_builder *b)
{
    free(b->u_idx);
    free(b->u_lab);
    free(b->scratch);
    b->u_idx = NULL;
    b->u_lab = NULL;
    b->scratch = NULL;
}

#define GROW(p, n)                                                                                \
    do {                                                                                          \
        void *q_ = realloc((p), (size_t)(n) * sizeof *(p));                                      \
        if (!q_) return MCL_ERR_OOM;                                                              \
        (p) = q_;                                                                                 \
    } while (0)

static mcl_status builder_reserve(stream_builder *b, int64_t need)
{
    if (need <= b->cap) return MCL_OK;
    int64_t cap = b->cap ? b->cap : 1024;
    while (cap < need) cap *= 2;
    mcl_stream *s = b->s;
    GROW(s->index, cap);
    GROW(s->label, cap);
    GROW(s->task, cap);
    GROW(s->role, cap);
    GROW(s->prev_label, cap);
    b->cap = cap;
    return MCL_OK;
}

/* Task t of the stream has its table (task_class/role/prev_label for labels 0..N-1) filled:
 * build the union of its classes' images (each class capped at cap images, chosen at random,
 * when cap > 0), then append count examples drawn without replacement from the union (a fresh
 * random pass each time it is used up). */
static mcl_status task_examples(stream_builder *b, mcl_rng *rng, int t, int64_t count, int64_t cap)
{
    mcl_stream *s = b->s;
    const mcl_dataset *ds = s->ds;
    int N = s->n_way;
    const int32_t *cls = s->task_class + (int64_t)t * N;
    int64_t U = 0;
    for (int j = 0; j < N; j++) {
        int p = mcl_dataset_class_pos(ds, cls[j]);
        int64_t m = ds->class_start[p + 1] - ds->class_start[p];
        U += (cap > 0 && cap < m) ? cap : m;
    }
    if (U < 1) return MCL_ERR_INVALID;
    if (U > b->u_cap) {
        GROW(b->u_idx, U);
        GROW(b->u_lab, U);
        b->u_cap = U;
    }
    int64_t u = 0;
    for (int j = 0; j < N; j++) {
        int p = mcl_dataset_class_pos(ds, cls[j]);
        int64_t start = ds->class_start[p];
        int64_t m = ds->class_start[p + 1] - start;
        if (cap > 0 && cap < m) {
            if (m > b->scratch_cap) {
                GROW(b->scratch, m);
                b->scratch_cap = m;
            }
            int64_t *pick = b->u_idx + u; /* draw positions in place, then map */
            mcl_status st = mcl_sample_distinct(rng, m, cap, pick, b->scratch);
            if (st != MCL_OK) return st;
            for (int64_t e = 0; e < cap; e++) {
                pick[e] = ds->class_index[start + pick[e]];
                b->u_lab[u + e] = j;
            }
            u += cap;
        } else {
            for (int64_t e = 0; e < m; e++) {
                b->u_idx[u] = ds->class_index[start + e];
                b->u_lab[u++] = j;
            }
        }
    }
    mcl_status st = builder_reserve(b, s->n + count);
    if (st != MCL_OK) return st;
    if (U > (int64_t)UINT32_MAX) return MCL_ERR_INVALID;
    int64_t cur = 0;
    for (int64_t e = 0; e < count; e++) {
        if (cur == U) cur = 0; /* a fresh random pass over the union */
        int64_t r = cur + (int64_t)mcl_rng_next_below(rng, (uint32_t)(U - cur));
        int64_t ti = b->u_idx[r];
        int32_t tl = b->u_lab[r];
        b->u_idx[r] = b->u_idx[cur];
        b->u_lab[r] = b->u_lab[cur];
        b->u_idx[cur] = ti;
        b->u_lab[cur] = tl;
        cur++;
        int64_t i = s->n++;
        s->index[i] = ti;
        s->label[i] = tl;
        s->task[i] = t;
        s->role[i] = s->task_role[(int64_t)t * N + tl];
        s->prev_label[i] = s->task_prev_label[(int64_t)t * N + tl];
    }
    return MCL_OK;
}

mcl_status mcl_stream_piecewise(const mcl_class_pool *pool, const mcl_pwstream_cfg *cfg,
                                mcl_rng *rng, mcl_stream **out, char *err, size_t err_len)
{
    if (err && err_len) err[0] = '\0';
    if (!out) return mcl_errbuf(err, err_len, MCL_ERR_NULL, "piecewise stream: NULL out");
    *out = NULL;
    if (!pool || !pool->ds || !cfg || !rng)
        return mcl_errbuf(err, err_len, MCL_ERR_NULL, "piecewise stream: NULL argument");
    const mcl_dataset *ds = pool->ds;
    if (cfg->n_tasks < 1 || cfg->n_way < 1 || cfg->per_task < 1 || cfg->n_tasks > 10000000 ||
        cfg->per_task > ((int64_t)1 << 40) / cfg->n_tasks)
        return mcl_errbuf(err, err_len, MCL_ERR_INVALID,
                    "piecewise stream: invalid config (tasks %d, N %d, per task %lld)",
                    cfg->n_tasks, cfg->n_way, (long long)cfg->per_task);
    int *pos = malloc(((size_t)ds->n_classes + 1) * sizeof *pos);
    int64_t *pick = malloc(((size_t)cfg->n_way + 1) * sizeof *pick);
    int np = 0;
    stream_builder b;
    mcl_status s = builder_init(&b, ds, cfg->n_tasks, cfg->n_way);
    if (s != MCL_OK || !pos || !pick) {
        s = mcl_errbuf(err, err_len, MCL_ERR_OOM, "piecewise stream: out of memory");
        goto done;
    }
    s = mcl_class_pool_positions(pool, pos, ds->n_classes, &np, err, err_len);
    if (s != MCL_OK) goto done;
    if (np < cfg->n_way) {
        s = mcl_errbuf(err, err_len, MCL_ERR_INVALID,
                 "piecewise stream: N = %d classes per task, the pool has %d", cfg->n_way, np);
        goto done;
    }
    s = builder_reserve(&b, (int64_t)cfg->n_tasks * cfg->per_task);
    for (int t = 0; t < cfg->n_tasks && s == MCL_OK; t++) {
        s = mcl_sample_distinct(rng, np, cfg->n_way, pick, NULL);
        if (s != MCL_OK) break;
        for (int j = 0; j < cfg->n_way; j++) {
            int64_t k = (int64_t)t * cfg->n_way + j;
            b.s->task_class[k] = ds->class_ids[pos[pick[j]]];
            b.s->task_role[k] = MCL_ROLE_NEW;
            b.s->task_prev_label[k] = -1;
        }
        b.s->task_start[t] = b.s->n;
        b.s->task_len[t] = (int32_t)(cfg->per_task > 0x7fffffff ? 0x7fffffff : cfg->per_task);
        s = task_examples(&b, rng, t, cfg->per_task, 0);
    }
    if (s != MCL_OK && !(err && err[0]))
        mcl_errbuf(err, err_len, s, "piecewise stream: %s", mcl_status_str(s));
    if (s == MCL_OK) b.s->task_start[cfg->n_tasks] = b.s->n;
done:
    free(pos);
    free(pick);
    builder_release(&b);
    if (s != MCL_OK) {
        mcl_stream_free(b.s);
        return s;
    }
    *out = b.s;
    return MCL_OK;
}

/* Draw k of the n values vals[] (distinct, in random order) into out. */
static mcl_status sample_from(mcl_rng *rng, const int *vals, int n, int k, int *out)
{
    int64_t pick[64];
    if (k > 64) return MCL_ERR_INVALID;
    mcl_status s = mcl_sample_distinct(rng, n, k, pick, NULL);
    if (s != MCL_OK) return s;
    for (int i = 0; i < k; i++) out[i] = vals[pick[i]];
    return MCL_OK;
}

mcl_status mcl_stream_onlinex(const mcl_class_pool *pool, const mcl_onlinex_cfg *cfg,
                              mcl_rng *rng, mcl_stream **out, char *err, size_t err_len)
{
    if (err && err_len) err[0] = '\0';
    if (!out) return mcl_errbuf(err, err_len, MCL_ERR_NULL, "online-x stream: NULL out");
    *out = NULL;
    if (!pool || !pool->ds || !cfg || !rng)
        return mcl_errbuf(err, err_len, MCL_ERR_NULL, "online-x stream: NULL argument");
    const mcl_dataset *ds = pool->ds;
    const int N = cfg->n_way, NK = cfg->n_kept, NP = cfg->n_persev;
    const int NN = N - NK - NP; /* new classes per task (t > 0) */
    if (cfg->n_tasks < 1 || cfg->n_tasks > 10000000 || N < 1 || N > 64 || NK < 0 || NP < 0 ||
        NN < 0 || cfg->len_min < 1 || cfg->len_max < cfg->len_min || cfg->round_size < 1 ||
        cfg->max_per_class < 0 || (int64_t)cfg->len_max * cfg->round_size > 0x7fffffff)
        return mcl_errbuf(err, err_len, MCL_ERR_INVALID,
                    "online-x stream: invalid config (tasks %d, N %d, kept %d, persev %d, "
                    "rounds %d..%d, round size %d)",
                    cfg->n_tasks, N, NK, NP, cfg->len_min, cfg->len_max, cfg->round_size);
    if (!cfg->code_exact && NP == 1 && N - NK == 1)
        return mcl_errbuf(err, err_len, MCL_ERR_INVALID,
                    "online-x stream: one perseveration class and one free label: it cannot "
                    "change its label (use code_exact = 1 for the appendix code)");
    int *pos = malloc(((size_t)ds->n_classes + 1) * sizeof *pos);
    int *cand = malloc(((size_t)ds->n_classes + 1) * sizeof *cand);
    unsigned char *excl = malloc((size_t)ds->n_classes + 1);
    int np = 0;
    stream_builder b;
    mcl_status s = builder_init(&b, ds, cfg->n_tasks, N);
    mcl_stream *st = b.s;
    if (s != MCL_OK || !pos || !cand || !excl) {
        s = mcl_errbuf(err, err_len, MCL_ERR_OOM, "online-x stream: out of memory");
        goto done;
    }
    s = mcl_class_pool_positions(pool, pos, ds->n_classes, &np, err, err_len);
    if (s != MCL_OK) goto done;
    int need = cfg->code_exact ? N : (cfg->n_tasks > 1 ? N + NN : N);
    if (np < need) {
        s = mcl_errbuf(err, err_len, MCL_ERR_INVALID,
                 "online-x stream: the pool has %d classes, %d are needed (%d-way tasks%s)", np,
                 need, N, cfg->code_exact ? "" : " whose new classes avoid the previous task's");
        goto done;
    }
    for (int t = 0; t < cfg->n_tasks && s == MCL_OK; t++) {
        int32_t *cls = st->task_class + (int64_t)t * N;
        int8_t *role = st->task_role + (int64_t)t * N;
        int32_t *prev = st->task_prev_label + (int64_t)t * N;
        for (int j = 0; j < N; j++) cls[j] = -1, role[j] = MCL_ROLE_NEW, prev[j] = -1;
        if (t == 0) {
            /* N random classes, random labels (the code's first-task branch) */
            int tmp[64];
            s = sample_from(rng, pos, np, N, tmp);
            if (s != MCL_OK) break;
            for (int j = 0; j < N; j++) cls[j] = ds->class_ids[tmp[j]];
        } else {
            const int32_t *pcls = cls - N; /* previous task's label -> class */
            int labels[64], kept[64], pold[64], pnew[64], nlab[64], rest[64];
            for (int j = 0; j < N; j++) labels[j] = j;
            s = sample_from(rng, labels, N, NK, kept);
            if (s != MCL_OK) break;
            int na = 0; /* all_ids = labels - kept, ascending */
            for (int j = 0; j < N; j++) {
                int is_kept = 0;
                for (int u = 0; u < NK; u++) is_kept |= kept[u] == j;
                if (!is_kept) rest[na++] = j;
            }
            s = sample_from(rng, rest, na, NP, pold);
            if (s != MCL_OK) break;
            for (;;) { /* perseveration new labels; the text's criterion unless code_exact */
                s = sample_from(rng, rest, na, NP, pnew);
                if (s != MCL_OK || cfg->code_exact) break;
                int same = 0;
                for (int u = 0; u < NP; u++) same |= pnew[u] == pold[u];
                if (!same) break;
            }
            if (s != MCL_OK) break;
            int nr = 0, remain[64]; /* labels left for new classes */
            for (int u = 0; u < na; u++) {
                int taken = 0;
                for (int v = 0; v < NP; v++) taken |= pnew[v] == rest[u];
                if (!taken) remain[nr++] = rest[u];
            }
            s = sample_from(rng, remain, nr, NN, nlab);
            if (s != MCL_OK) break;
            /* fill kept and perseveration entries */
            for (int u = 0; u < NK; u++) {
                cls[kept[u]] = pcls[kept[u]];
                role[kept[u]] = MCL_ROLE_KEPT;
            }
            for (int u = 0; u < NP; u++) {
                cls[pnew[u]] = pcls[pold[u]];
                role[pnew[u]] = MCL_ROLE_PERSEV;
                prev[pnew[u]] = pold[u];
            }
            /* new classes: not kept/perseveration (code) or not in the previous task (text) */
            memset(excl, 0, (size_t)ds->n_classes);
            for (int j = 0; j < N; j++) {
                int p;
                if (cfg->code_exact) {
                    if (role[j] == MCL_ROLE_NEW) continue;
                    p = mcl_dataset_class_pos(ds, cls[j]);
                } else {
                    p = mcl_dataset_class_pos(ds, pcls[j]);
                }
                if (p >= 0) excl[p] = 1;
            }
            int nc = 0;
            for (int i = 0; i < np; i++)
                if (!excl[pos[i]]) cand[nc++] = pos[i];
            int newc[64];
            if (nc < NN) {
                s = mcl_errbuf(err, err_len, MCL_ERR_INVALID, "online-x stream: too few classes left");
                break;
            }
            s = sample_from(rng, cand, nc, NN, newc);
            if (s != MCL_OK) break;
            for (int u = 0; u < NN; u++) cls[nlab[u]] = ds->class_ids[newc[u]];
        }
        int len = cfg->len_min +
                  (int)mcl_rng_next_below(rng, (uint32_t)(cfg->len_max - cfg->len_min + 1));
        st->task_start[t] = st->n;
        st->task_len[t] = len;
        s = task_examples(&b, rng, t, (int64_t)len * cfg->round_size, cfg->max_per_class);
    }
    if (s != MCL_OK && !(err && err[0]))
        mcl_errbuf(err, err_len, s, "online-x stream: %s", mcl_status_str(s));
    if (s == MCL_OK) st->task_start[cfg->n_tasks] = st->n;
done:
    free(pos);
    free(cand);
    free(excl);
    builder_release(&b);
    if (s != MCL_OK) {
        mcl_stream_free(b.s);
        return s;
    }
    *out = b.s;
    return MCL_OK;
}
