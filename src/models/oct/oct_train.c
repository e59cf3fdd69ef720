/* oct_train.c — the online transformers on the training harness (see oct_train.h): config
 * keys, the stream, the readers (replay streams) and their rings, the loss of a step, the
 * per-example record, checkpoints and the family table. The report of a finished or stopped
 * run is in oct_report.c. */
#define _POSIX_C_SOURCE 200809L
#include "oct_stream.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint.h"
#include "learner.h"
#include "rng.h"
#include "sampler.h"
#include "tensor_impl.h"
#include "util.h"

#define fail mcl_errbuf

#define STREAM_REPLAY 4000000ULL /* + turn: the replay readers' restarts      */

/* ====================================================================== config */

#define C mcl_oct_config
static const mcl_key model_keys[] = {
    MCL_KEY_ENUM("arch", C, arch, "pi|two_token|cnn", "pi",
                 "pi: pi-transformer; two_token: x and y tokens; cnn: extractor + linear head (baseline)"),
    MCL_KEY_ENUM("extractor", C, extractor, "conv4|conv8", "conv4", "feature extractor"),
    MCL_KEY_INT("channels", C, channels, 1, 1024, "32", "Conv-4 channels, or Conv-8's channel base"),
    MCL_KEY_INT("features", C, features, 1, 8192, "256", "Conv-8's fully connected width"),
    MCL_KEY_INT("width", C, width, 1, 8192, "128", "D: transformer width"),
    MCL_KEY_INT("blocks", C, blocks, 1, MCL_OCT_MAX_BLOCKS, "2", "transformer blocks"),
    MCL_KEY_INT("heads", C, heads, 1, 64, "4", "query heads"),
    MCL_KEY_INT("kv_heads", C, kv_heads, 1, 64, "1", "key/value heads (1 = multi-query)"),
    MCL_KEY_INT("head_dim", C, head_dim, 1, 256, "32", "query/key/value width per head"),
    MCL_KEY_INT("ffw_mult", C, ffw_mult, 1, 16, "4", "feed-forward width = ffw_mult * width"),
    MCL_KEY_INT("window", C, window, 0, 1 << 20, "500", "C: tokens kept in each block's KV ring (0 = none)"),
    MCL_KEY_INT("pi_mask", C, pi_mask, 1, 2, "2",
                "pi attention mask: 2 strictly causal; 1 the paper's diagonal zeroed after the softmax (leaks the label)"),
    MCL_KEY_FLOAT("alibi", C, alibi, 0, 100, "0", "ALiBi slope factor (0 = no positional information)"),
    MCL_KEY_INT("n_way", C, n_way, 2, 1000, "10", "labels"),
    MCL_KEY_BOOL("no_image", C, no_image, "0", "ablation: labels only (the image is not seen)"),
    MCL_KEY_BOOL("freeze_extractor", C, freeze_extractor, "0", "the extractor keeps its random init"),
    MCL_KEY_U64("seed", C, seed, "1", "initialization"),
};
#undef C
#define N_MODEL_KEYS ((int)(sizeof model_keys / sizeof model_keys[0]))

#define R mcl_oct_run
static const mcl_key run_keys[] = {
    MCL_KEY_STR("data.source", R, source, "hanzi", "data set of the stream (prepared name, pngdir:, idx:)"),
    MCL_KEY_STR("data.dir", R, data_dir, "", "prepared-data directory (\"\" = $METACL_DATA or data/cache)"),
    MCL_KEY_ENUM("data.split", R, split, "all|train|val|test", "train", "which split's classes and images"),
    MCL_KEY_BOOL("data.normalize", R, normalize, "1", "images standardized with the set's mean/std"),
    MCL_KEY_INT("stream.tasks", R, n_tasks, 1, 1 << 20, "100", "T tasks (each a random map of n_way classes to labels)"),
    MCL_KEY_I64("stream.per_task", R, per_task, 1, 1e9, "200", "M examples per task"),
    MCL_KEY_U64("stream.seed", R, data_seed, "1", "the stream's draw"),
    MCL_KEY_INT("stream.pool", R, pool, 0, 1 << 20, "0",
                "recurring classes: every task draws its classes from one fixed pool of this many classes "
                "of the split, drawn once from stream.seed (0 = every class: classes hardly recur)"),
    MCL_KEY_INT("online.streams", R, streams, 1, MCL_OCT_MAX_STREAMS, "4", "E readers (1 = no replay)"),
    MCL_KEY_ENUM("online.optimizer", R, optimizer, "adamw|adam|sgd", "adamw", "optimizer of every step"),
    MCL_KEY_FLOAT("online.weight_decay", R, weight_decay, 0, 10, "0.01", "weight decay (AdamW: decoupled)"),
    MCL_KEY_FLOAT("online.momentum", R, momentum, 0, 0.999, "0", "sgd momentum"),
    MCL_KEY_I64("online.freeze_at", R, freeze_at, 0, 1e9, "0",
                "ablation (the paper's Fig. 5): no gradient step from the chunk that starts at example P on; "
                "predictions then use the frozen weights and the KV ring (0 = never)"),
};
#undef R

static const mcl_key_group model_group = {"model.", model_keys, N_MODEL_KEYS, offsetof(mcl_oct_run, model)};
static const mcl_key_group run_group = {"", run_keys, (int)(sizeof run_keys / sizeof run_keys[0]), 0};
static const mcl_key_group *const oct_groups[] = {&model_group, &run_group};

static void oct_cfg_default(void *fcfg, mcl_train_cfg *t)
{
    (void)fcfg;
    t->steps = 0; /* the whole stream */
    t->batch = 50;
    t->lr = 1e-4f;
    t->val_every = 0;
    t->log_every = 1;
    t->ckpt_every = 500;
}

static int64_t oct_total_steps(const void *fcfg, const mcl_train_cfg *t)
{
    const mcl_oct_run *c = fcfg;
    return (mcl_oct_stream_len(c) + t->batch - 1) / t->batch * c->streams;
}

static mcl_status oct_cfg_check(const void *fcfg, const mcl_train_cfg *t, char *err, size_t len)
{
    const mcl_oct_run *c = fcfg;
    mcl_status st = mcl_oct_config_check(&c->model, err, len);
    if (st != MCL_OK) return st;
    if (t->parts > 1)
        return fail(err, len, MCL_ERR_INVALID,
                    "train.parts = %d: an online run is one sequence (a chunk cannot be split)", t->parts);
    if (t->steps > oct_total_steps(c, t))
        return fail(err, len, MCL_ERR_INVALID,
                    "train.steps = %lld is more than the stream holds (%lld chunks x %d readers = %lld)",
                    (long long)t->steps, (long long)((mcl_oct_stream_len(c) + t->batch - 1) / t->batch),
                    c->streams, (long long)oct_total_steps(c, t));
    if (c->model.arch == MCL_OCT_CNN && c->streams > 1)
        return fail(err, len, MCL_ERR_INVALID,
                    "online.streams = %d: replay needs a transformer's rings; the cnn baseline is "
                    "trained online with 1 stream",
                    c->streams);
    if (c->pool > 0 && c->pool < c->model.n_way)
        return fail(err, len, MCL_ERR_INVALID, "stream.pool = %d: a task needs model.n_way = %d classes",
                    c->pool, c->model.n_way);
    if (c->freeze_at >= mcl_oct_stream_len(c))
        return fail(err, len, MCL_ERR_INVALID,
                    "online.freeze_at = %lld: the stream has %lld examples, so the run would never freeze "
                    "(0 = never)", (long long)c->freeze_at, (long long)mcl_oct_stream_len(c));
    if (mcl_oct_stream_len(c) > ((int64_t)1 << 26))
        return fail(err, len, MCL_ERR_INVALID, "stream of %lld examples: at most 2^26",
                    (long long)mcl_oct_stream_len(c));
    return MCL_OK;
}

/* ====================================================================== the stream */

static int cmp_i64(const void *a, const void *b)
{
    const int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The fixed class pool of stream.pool = P: P distinct classes of ds drawn from (stream.seed,
 * MCL_OCT_STREAM_POOL), as global class ids in ascending order, into cls[P]. */
static mcl_status draw_pool(const mcl_oct_run *c, const mcl_dataset *ds, int32_t *cls, char *err, size_t len)
{
    if (c->pool > ds->n_classes)
        return fail(err, len, MCL_ERR_INVALID, "stream.pool = %d: the data set has only %d classes in this split",
                    c->pool, ds->n_classes);
    int64_t *pick = malloc((size_t)c->pool * sizeof *pick);
    if (!pick) return fail(err, len, MCL_ERR_OOM, "out of memory (class pool)");
    mcl_rng rng;
    mcl_rng_init(&rng, c->data_seed, MCL_OCT_STREAM_POOL);
    mcl_status st = mcl_sample_distinct(&rng, ds->n_classes, c->pool, pick, NULL);
    if (st == MCL_OK) {
        qsort(pick, (size_t)c->pool, sizeof *pick, cmp_i64);
        for (int i = 0; i < c->pool; i++) cls[i] = ds->class_ids[pick[i]];
    }
    free(pick);
    return st == MCL_OK ? MCL_OK : fail(err, len, st, "drawing the class pool: %s", mcl_status_str(st));
}

mcl_status mcl_oct_stream_draw(const mcl_oct_run *c, mcl_dataset *ds, mcl_stream **out, char *err, size_t len)
{
    mcl_class_pool pool = {ds, NULL, 0};
    mcl_pwstream_cfg pc = {c->n_tasks, c->model.n_way, c->per_task};
    int32_t *cls = NULL;
    *out = NULL;
    if (c->pool > 0) { /* recurring classes: the tasks draw from the pool alone */
        cls = malloc((size_t)c->pool * sizeof *cls);
        if (!cls) return fail(err, len, MCL_ERR_OOM, "out of memory (class pool)");
        mcl_status st = draw_pool(c, ds, cls, err, len);
        if (st != MCL_OK) {
            free(cls);
            return st;
        }
        pool.classes = cls;
        pool.n_classes = c->pool;
    }
    mcl_rng rng;
    mcl_rng_init(&rng, c->data_seed, MCL_OCT_STREAM_DATA);
    mcl_status st = mcl_stream_piecewise(&pool, &pc, &rng, out, err, len);
    free(cls);
    return st;
}

/* ====================================================================== the family state */

typedef struct oct_fs {
    mcl_oct_run cfg;
    int S;          /* chunk size = train.batch */
    uint64_t seed;  /* train.seed               */
    mcl_ctx *ctx;
    mcl_oct *m;
    mcl_dataset *ds;
    mcl_stream *stream;
    mcl_oct_ring ring[MCL_OCT_MAX_STREAMS];
    int64_t pos[MCL_OCT_MAX_STREAMS]; /* next chunk of each reader (reader 0: the turn)  */
    mcl_tensor *rec_nll, *rec_hit;    /* state: reader 0's per-example record             */
    float *nll, *hit;                 /* host copies [n]                                  */
    int64_t scored;                   /* examples of reader 0 scored so far               */
    double sum_nll, sum_hit;          /* over the scored examples                         */
    double last_acc, last_nll;        /* reader 0's latest chunk                          */
    float *lg;                        /* reader 0's chunk logits [S, n_way], read after the
                                         step's optimizer step (oct_step_metrics)         */
    int64_t lg_lo, lg_hi;             /* their examples; lg_hi > lg_lo: a read is queued  */
    /* the step in flight */
    int64_t step;
    int reader;
    mcl_oct_chunk ck;
    int have_ck;
    mcl_tensor *img, *lab; /* the step's chunk (ours until step_end) */
    mcl_tensor *zero;      /* [1] the loss of a frozen replay step (online.freeze_at)     */
    mcl_status push_status; /* of the last step's ring update, and its message */
    char push_err[256];
} oct_fs;

static void drop_chunk(oct_fs *t)
{
    mcl_tensor_free(t->img);
    mcl_tensor_free(t->lab);
    t->img = t->lab = NULL;
}

static void oct_free_fs(void *p)
{
    oct_fs *t = p;
    if (!t) return;
    drop_chunk(t);
    mcl_tensor_free(t->zero);
    mcl_oct_free(t->m);
    mcl_stream_free(t->stream);
    mcl_dataset_free(t->ds);
    free(t->nll);
    free(t->lg);
    free(t->hit);
    free(t);
}

/* A state tensor: registered with the parameters (so checkpoints hold it) but never trained. */
static mcl_tensor *state_tensor(mcl_params *p, const char *name, int nd, const int64_t *shape)
{
    mcl_tensor *x = mcl_params_add(p, name, nd, shape);
    if (x) x->flags &= ~MCL_TF_REQUIRES_GRAD;
    return x;
}

/* The family's state, registered after the model's parameters: the KV rings of every reader
 * and block (not for the cnn), then the record of the stream's n examples. */
static mcl_status add_state(mcl_params *p, const mcl_oct_run *c, mcl_oct_ring *ring, mcl_tensor **rec_nll,
                            mcl_tensor **rec_hit)
{
    char nm[64];
    const int64_t rs[3] = {mcl_oct_ring_rows(&c->model), c->model.kv_heads, c->model.head_dim};
    for (int e = 0; c->model.arch != MCL_OCT_CNN && e < c->streams; e++)
        for (int l = 0; l < c->model.blocks; l++) {
            snprintf(nm, sizeof nm, "state.reader%d.block%d.k", e, l);
            ring[e].k[l] = state_tensor(p, nm, 3, rs);
            snprintf(nm, sizeof nm, "state.reader%d.block%d.v", e, l);
            ring[e].v[l] = state_tensor(p, nm, 3, rs);
            if (!ring[e].k[l] || !ring[e].v[l]) return MCL_ERR_OOM;
        }
    const int64_t ns[1] = {mcl_oct_stream_len(c)};
    *rec_nll = state_tensor(p, "state.record.nll", 1, ns);
    *rec_hit = state_tensor(p, "state.record.hit", 1, ns);
    return *rec_nll && *rec_hit ? MCL_OK : MCL_ERR_OOM;
}

static mcl_status oct_create(mcl_ctx *ctx, const void *fcfg, const mcl_train_cfg *tc,
                             mcl_train_log *log, void **out, char *err, size_t len)
{
    oct_fs *t = calloc(1, sizeof *t);
    if (!t) return fail(err, len, MCL_ERR_OOM, "out of memory");
    *out = t;
    t->cfg = *(const mcl_oct_run *)fcfg;
    t->S = tc->batch;
    t->seed = tc->seed;
    t->ctx = ctx;
    t->last_acc = t->last_nll = NAN;
    const mcl_oct_run *c = &t->cfg;
    const int64_t n = mcl_oct_stream_len(c), E = c->streams, rows = mcl_oct_ring_rows(&c->model);
    const uint64_t ring_bytes = (uint64_t)E * (uint64_t)c->model.blocks * 2u * (uint64_t)rows *
                                (uint64_t)c->model.kv_heads * (uint64_t)c->model.head_dim * 4u * 3u;
    char e2[768];
    mcl_status st = mcl_check_budget(ring_bytes + (uint64_t)n * 16u, "the readers' KV rings and the record", e2, sizeof e2);
    if (st != MCL_OK) return fail(err, len, st, "%s", e2);
    t->m = mcl_oct_create(ctx, &c->model);
    if (!t->m) return fail(err, len, MCL_ERR_INVALID, "model: %s", mcl_ctx_error(ctx));
    const char *dd = c->data_dir[0] ? c->data_dir : NULL;
    st = mcl_dataset_load(c->source, dd, (mcl_split)c->split, &t->ds, e2, sizeof e2);
    if (st != MCL_OK) /* the loader's message may name the set already ("data set 'x' is not prepared") */
        return strstr(e2, c->source) ? fail(err, len, st, "%s", e2) : fail(err, len, st, "data set '%s': %s", c->source, e2);
    st = mcl_oct_stream_draw(c, t->ds, &t->stream, e2, sizeof e2);
    if (st != MCL_OK) return fail(err, len, st, "stream: %s", e2);
    mcl_train_logf(log, "stream: %d tasks x %lld examples of %d-way maps over %d classes of %s "
                        "(%lld images); chunks of %d, %d reader%s",
                   c->n_tasks, (long long)c->per_task, c->model.n_way, t->ds->n_classes, c->source,
                   (long long)t->ds->n, t->S, c->streams, c->streams > 1 ? "s (replay)" : "");
    if (c->pool > 0) { /* recurring classes: the pool and how many images it holds per class */
        int64_t lo = INT64_MAX, hi = 0;
        for (int i = 0; i < c->n_tasks * c->model.n_way; i++) {
            const int k = mcl_dataset_class_pos(t->ds, t->stream->task_class[i]);
            const int64_t m = k < 0 ? 0 : t->ds->class_start[k + 1] - t->ds->class_start[k];
            lo = m < lo ? m : lo;
            hi = m > hi ? m : hi;
        }
        mcl_train_logf(log, "class pool: %d classes drawn once (stream.pool), recurring across tasks under new "
                            "labels; %lld to %lld images per class, %lld examples per task",
                       c->pool, (long long)lo, (long long)hi, (long long)c->per_task);
    }
    /* state: the rings of every reader and block, the record */
    if (add_state(t->m->params, c, t->ring, &t->rec_nll, &t->rec_hit) != MCL_OK)
        return fail(err, len, MCL_ERR_OOM, "%s", mcl_ctx_error(ctx));
    t->nll = calloc((size_t)n, sizeof *t->nll);
    t->hit = calloc((size_t)n, sizeof *t->hit);
    if (!t->rec_nll || !t->rec_hit || !t->nll || !t->hit) return fail(err, len, MCL_ERR_OOM, "out of memory (record)");
    int64_t trainable = 0;
    for (int i = 0; i < mcl_params_count(t->m->params); i++) {
        const mcl_tensor *x = mcl_params_get(t->m->params, i);
        if (x->flags & MCL_TF_REQUIRES_GRAD) trainable += mcl_tensor_numel(x);
    }
    mcl_train_logf(log, "model: %s, %lld trainable parameters",
                   c->model.arch == MCL_OCT_PI ? "pi-transformer" : c->model.arch == MCL_OCT_TWO_TOKEN ? "2-token transformer" : "cnn + linear head",
                   (long long)trainable);
    return MCL_OK;
}

static mcl_params *oct_params(void *fs) { return ((oct_fs *)fs)->m->params; }

static void oct_optim_config(void *fs, mcl_optim_config *oc)
{
    const oct_fs *t = fs;
    oc->kind = t->cfg.optimizer == 0 ? MCL_OPTIM_ADAMW : t->cfg.optimizer == 1 ? MCL_OPTIM_ADAM : MCL_OPTIM_SGD;
    oc->weight_decay = t->cfg.weight_decay;
    oc->momentum = t->cfg.momentum;
}

static const char *const oct_metric_names[] = {"acc", "nll", "cum_nll", "online_acc"};

static double oct_chance(void *fs) { return 1.0 / ((oct_fs *)fs)->cfg.model.n_way; }

/* Examples [lo, hi) of the stream: images and labels on the device. */
static mcl_status chunk_data(oct_fs *t, int64_t lo, int64_t hi, mcl_tensor **img, mcl_tensor **lab)
{
    return mcl_learner_rows(t->ctx, "online", t->ds, t->stream->index + lo, t->stream->label + lo,
                            hi - lo, t->cfg.normalize, img, lab);
}

/* online.freeze_at: step s (reader (s-1) mod E of turn (s-1)/E) takes no gradient step when
 * reader 0's chunk of its turn starts at or after example freeze_at. */
static int oct_frozen(void *fs, int64_t s)
{
    const oct_fs *t = fs;
    return t->cfg.freeze_at > 0 && (s - 1) / t->cfg.streams * t->S >= t->cfg.freeze_at;
}

static mcl_status oct_step_loss(void *fs, int64_t s, const mcl_train_part *part, mcl_tensor **loss,
                                double *metrics, char *err, size_t len)
{
    oct_fs *t = fs;
    if (t->push_status != MCL_OK)
        return fail(err, len, t->push_status, "step %lld: the KV ring update of the step before failed: %s",
                    (long long)s, t->push_err);
    if (part->count > 1) /* several MPI ranks (train.parts = 0) or train.parts > 1 */
        return fail(err, len, MCL_ERR_INVALID,
                    "an online run is one sequence and cannot be cut into %d parts: run it in one "
                    "process with train.parts = 1",
                    part->count);
    const int E = t->cfg.streams;
    const int64_t turn = (s - 1) / E, n = mcl_oct_stream_len(&t->cfg);
    const int e = (int)((s - 1) % E);
    const int64_t chunk = e == 0 ? turn : t->pos[e];
    const int64_t lo = chunk * t->S, hi = lo + t->S < n ? lo + t->S : n;
    t->step = s;
    t->reader = e;
    t->have_ck = 0;
    t->lg_lo = t->lg_hi = 0;
    if (e > 0 && oct_frozen(t, s)) { /* the weights are frozen: replay has nothing to do */
        if (!t->zero) t->zero = mcl_tensor_new(t->ctx, 1, 0, 0, 0);
        if (!t->zero) return fail(err, len, MCL_ERR_OOM, "%s", mcl_ctx_error(t->ctx));
        *loss = t->zero;
        return MCL_OK;
    }
    mcl_tensor *logits = NULL;
    mcl_status st = chunk_data(t, lo, hi, &t->img, &t->lab); /* freed by step_end */
    if (st == MCL_OK) st = mcl_oct_forward(t->m, t->img, t->lab, hi - lo, &t->ring[e], &logits, loss, &t->ck);
    if (st != MCL_OK) return fail(err, len, st, "step %lld (reader %d, chunk %lld): %s", (long long)s, e,
                                  (long long)chunk, mcl_ctx_error(t->ctx));
    t->have_ck = 1;
    if (e == 0) { /* the prequential record: predictions made before training on the chunk,
                   * read once the step is done (oct_step_metrics) */
        const int64_t S = hi - lo, N = t->cfg.model.n_way;
        if (!t->lg) t->lg = malloc((size_t)(t->S * N) * sizeof *t->lg); /* S <= train.batch */
        if (!t->lg) return fail(err, len, MCL_ERR_OOM, "out of memory");
        st = mcl_tensor_read_async(logits, t->lg, S * N);
        if (st != MCL_OK) return fail(err, len, st, "reading the logits: %s", mcl_ctx_error(t->ctx));
        t->lg_lo = lo;
        t->lg_hi = hi;
    }
    (void)metrics; /* oct_step_metrics */
    return MCL_OK;
}

/* Reader 0's record of the chunk whose logits step_loss queued for reading (the same
 * arithmetic as before, now after the optimizer step), then the step's metrics. */
static void oct_step_metrics(void *fs, double *metrics)
{
    oct_fs *t = fs;
    if (t->lg_hi > t->lg_lo) {
        const int64_t lo = t->lg_lo, hi = t->lg_hi;
        const int64_t S = hi - lo, N = t->cfg.model.n_way;
        const float *lg = t->lg;
        double cn = 0.0, ch = 0.0;
        t->lg_lo = t->lg_hi = 0;
        for (int64_t i = 0; i < S; i++) {
            const float *row = lg + i * N;
            const int y = t->stream->label[lo + i];
            int best = 0;
            double mx = row[0];
            for (int64_t j = 1; j < N; j++)
                if (row[j] > mx) mx = row[j], best = (int)j;
            double z = 0.0;
            for (int64_t j = 0; j < N; j++) z += exp((double)row[j] - mx);
            t->nll[lo + i] = (float)(mx + log(z) - (double)row[y]);
            t->hit[lo + i] = best == y ? 1.0f : 0.0f;
            cn += t->nll[lo + i];
            ch += t->hit[lo + i];
        }
        t->scored = hi;
        t->sum_nll += cn;
        t->sum_hit += ch;
        t->last_acc = ch / (double)S;
        t->last_nll = cn / (double)S;
    }
    metrics[0] = t->last_acc; /* a replay step reports reader 0's latest chunk */
    metrics[1] = t->last_nll;
    metrics[2] = t->scored ? t->sum_nll / (double)t->scored : NAN;
    metrics[3] = t->scored ? t->sum_hit / (double)t->scored : NAN;
}

/* After the optimizer step: the reader's ring takes the chunk's keys and values (computed
 * before the step, as Transformer-XL caches them); its position moves; after the last
 * reader of a turn, each replay reader restarts with probability S/t. */
static void oct_step_end(void *fs)
{
    oct_fs *t = fs;
    drop_chunk(t);
    if (!t->have_ck) return;
    t->have_ck = 0;
    const int E = t->cfg.streams, e = t->reader;
    t->push_status = mcl_oct_push(t->m, &t->ring[e], &t->ck);
    if (t->push_status != MCL_OK) { /* step_end cannot fail: the next step reports it */
        snprintf(t->push_err, sizeof t->push_err, "%s", mcl_ctx_error(t->ctx));
        return;
    }
    t->pos[e]++;
    if (e != E - 1) return;
    const int64_t turn = (t->step - 1) / E;
    const double p = 1.0 / (double)(turn + 1); /* S / t with t = (turn + 1)·S examples seen */
    for (int r = 1; r < E; r++)
        if (mcl_rng_uniform(t->seed, STREAM_REPLAY + (uint64_t)turn, (uint64_t)r) < p) {
            t->pos[r] = 0;
            t->ring[r].n = t->ring[r].start = 0;
        }
}

static mcl_status oct_validate(void *fs, int64_t batches, double *score, char *err, size_t len)
{
    (void)fs, (void)batches, (void)err, (void)len;
    *score = NAN; /* an online run is scored as it goes (prequentially) */
    return MCL_OK;
}

/* Counters of the readers: r<e>.pos, r<e>.n, r<e>.start; and "scored". */
static int reader_counters(const oct_fs *t, mcl_ckpt_counter *cn, int at)
{
    for (int e = 0; e < t->cfg.streams; e++) {
        snprintf(cn[at].name, sizeof cn[at].name, "r%d.pos", e);
        cn[at++].value = (uint64_t)t->pos[e];
        snprintf(cn[at].name, sizeof cn[at].name, "r%d.n", e);
        cn[at++].value = (uint64_t)t->ring[e].n;
        snprintf(cn[at].name, sizeof cn[at].name, "r%d.start", e);
        cn[at++].value = (uint64_t)t->ring[e].start;
    }
    snprintf(cn[at].name, sizeof cn[at].name, "scored");
    cn[at++].value = (uint64_t)t->scored;
    return at;
}

static mcl_status oct_save(void *fs, const char *path, const mcl_optim *opt,
                           const mcl_ckpt_counter *cn, int n_cn, char *err, size_t len)
{
    oct_fs *t = fs;
    const int64_t n = mcl_oct_stream_len(&t->cfg);
    mcl_status st = mcl_tensor_write(t->rec_nll, t->nll, n);
    if (st == MCL_OK) st = mcl_tensor_write(t->rec_hit, t->hit, n);
    if (st != MCL_OK) return fail(err, len, st, "%s", mcl_ctx_error(t->ctx));
    mcl_ckpt_counter *all = calloc((size_t)(n_cn + 3 * MCL_OCT_MAX_STREAMS + 1), sizeof *all);
    /* the model's keys and the stream's: the file describes every tensor it holds (the
     * readers' rings, the record), so `ckpt info` and `ckpt export` rebuild them from it */
    char *mt = mcl_keys_to_text(model_keys, N_MODEL_KEYS, &t->cfg.model, "model.");
    char *rt = mcl_keys_to_text(run_keys, (int)(sizeof run_keys / sizeof run_keys[0]), &t->cfg, "");
    char *text = mt && rt ? malloc(strlen(mt) + strlen(rt) + 1) : NULL;
    if (text) strcat(strcpy(text, mt), rt);
    free(mt);
    free(rt);
    if (!all || !text) {
        free(all);
        free(text);
        return fail(err, len, MCL_ERR_OOM, "out of memory");
    }
    memcpy(all, cn, (size_t)n_cn * sizeof *all);
    const int nc = reader_counters(t, all, n_cn);
    mcl_ckpt_save_desc d;
    memset(&d, 0, sizeof d);
    d.model_kind = MCL_OCT_CKPT_KIND;
    d.config = text;
    d.params = t->m->params;
    d.optim = opt;
    d.rng.seed = mcl_ctx_seed(t->ctx);
    d.rng.counter = mcl_ctx_stream(t->ctx);
    d.counters = all;
    d.n_counters = nc;
    st = mcl_ckpt_save(t->ctx, path, &d, err, len);
    free(all);
    free(text);
    return st;
}

static mcl_status oct_load(void *fs, const char *path, mcl_optim *opt, mcl_ckpt_info *info,
                           char *err, size_t len)
{
    oct_fs *t = fs;
    mcl_status st = mcl_ckpt_load(t->ctx, path, MCL_OCT_CKPT_KIND, t->m->params, opt, info, err, len);
    if (st != MCL_OK) return st;
    const int64_t n = mcl_oct_stream_len(&t->cfg), C = t->cfg.model.window;
    char nm[MCL_CKPT_NAME_MAX + 1];
    uint64_t v[3];
    for (int e = 0; e < t->cfg.streams; e++) {
        static const char *const what[3] = {"pos", "n", "start"};
        for (int k = 0; k < 3; k++) {
            snprintf(nm, sizeof nm, "r%d.%s", e, what[k]);
            if (!mcl_ckpt_info_counter(info, nm, &v[k]))
                return fail(err, len, MCL_ERR_FORMAT, "checkpoint '%s': counter %s missing", path, nm);
        }
        if (v[0] > (uint64_t)(n / t->S + 1) || v[1] > (uint64_t)C || (C > 0 && v[2] >= (uint64_t)C) ||
            (C == 0 && v[2] != 0))
            return fail(err, len, MCL_ERR_FORMAT, "checkpoint '%s': reader %d's state (%llu, %llu, %llu) "
                        "does not fit this stream and window", path, e, (unsigned long long)v[0],
                        (unsigned long long)v[1], (unsigned long long)v[2]);
        t->pos[e] = (int64_t)v[0];
        t->ring[e].n = (int64_t)v[1];
        t->ring[e].start = (int64_t)v[2];
    }
    uint64_t sc;
    if (!mcl_ckpt_info_counter(info, "scored", &sc) || sc > (uint64_t)n)
        return fail(err, len, MCL_ERR_FORMAT, "checkpoint '%s': counter scored missing or out of range", path);
    t->scored = (int64_t)sc;
    st = mcl_tensor_read(t->rec_nll, t->nll, n);
    if (st == MCL_OK) st = mcl_tensor_read(t->rec_hit, t->hit, n);
    if (st != MCL_OK) return fail(err, len, st, "%s", mcl_ctx_error(t->ctx));
    if (t->scored > 0) { /* reader 0's latest chunk, which replay steps report */
        const int64_t c0 = (t->scored - 1) / t->S * t->S;
        double cn = 0.0, ch = 0.0;
        for (int64_t i = c0; i < t->scored; i++) cn += t->nll[i], ch += t->hit[i];
        t->last_nll = cn / (double)(t->scored - c0);
        t->last_acc = ch / (double)(t->scored - c0);
    }
    t->sum_nll = t->sum_hit = 0.0; /* in example order, as the uninterrupted run added them */
    for (int64_t c0 = 0; c0 < t->scored; c0 += t->S) {
        double cn = 0.0, ch = 0.0;
        for (int64_t i = c0; i < c0 + t->S && i < t->scored; i++) cn += t->nll[i], ch += t->hit[i];
        t->sum_nll += cn;
        t->sum_hit += ch;
    }
    return MCL_OK;
}

static mcl_status oct_init_from(void *fs, const char *path, char *note, size_t note_len, char *err,
                                size_t len)
{
    (void)fs, (void)note, (void)note_len;
    return fail(err, len, MCL_ERR_INVALID,
                "train.init = '%s': an online run starts from its initialization (model.seed)", path);
}

/* Memory from the config: the model (mcl_oct_param_floats, exact), the readers' KV rings
 * and the record in the checkpoint; in training also the gradients and optimizer moments of
 * the trained floats and the activations of one chunk (per token and block: norm, q/k/v, the
 * attention over the chunk and the ring, the feed-forward block; per image the extractor's
 * maps), each with its gradient. */
static double oct_ckpt_floats(const void *fcfg, const mcl_train_cfg *t)
{
    (void)t;
    const mcl_oct_run *c = fcfg;
    const mcl_oct_config *m = &c->model;
    double n = mcl_oct_param_floats(m, NULL) + 2.0 * (double)mcl_oct_stream_len(c);
    if (m->arch != MCL_OCT_CNN)
        n += (double)c->streams * m->blocks * 2.0 * (double)mcl_oct_ring_rows(m) * m->kv_heads * m->head_dim;
    return n;
}

static double oct_train_bytes(const void *fcfg, const mcl_train_cfg *t)
{
    const mcl_oct_run *c = fcfg;
    const mcl_oct_config *m = &c->model;
    double ext = 0;
    const double P = mcl_oct_param_floats(m, &ext), all = oct_ckpt_floats(fcfg, t);
    const double trained = P - (m->freeze_extractor ? ext : 0);
    const double S = (double)t->batch * (m->arch == MCL_OCT_TWO_TOKEN ? 2 : 1), D = m->width;
    const double Q = (double)m->heads * m->head_dim, K = (double)m->kv_heads * m->head_dim;
    double img = 0, side = MCL_IMG;
    for (int i = 0; i < 4 && !m->no_image; i++) { /* Conv-4 or Conv-8's 4 stages */
        const double ch = m->extractor == MCL_OCT_CONV8 ? 2.0 * m->channels * (1 << i) : m->channels;
        img += ch * side * side * 3.25;
        side /= 2;
    }
    double tok = 0;
    if (m->arch != MCL_OCT_CNN)
        tok = m->blocks * (10 * D + 2 * Q + 4 * K + 2.0 * m->ffw_mult * D + m->heads * (S + mcl_oct_ring_rows(m)));
    return 4 * (all + 3 * trained + 2 * ((double)t->batch * img + S * (tok + 4.0 * m->n_way)));
}

/* ckpt info / export: the model and its state from the file's config (no data is read). */
static mcl_status oct_ckpt_open(mcl_ctx *ctx, const char *path, void **model, mcl_params **params,
                                mcl_ckpt_info *info, char *err, size_t len)
{
    *model = NULL;
    mcl_oct_run c;
    mcl_status st = mcl_family_cfg_from_ckpt(&mcl_oct_family, path, &c, NULL, err, len);
    if (st != MCL_OK) return st;
    mcl_oct *m = mcl_oct_create(ctx, &c.model);
    if (!m) return fail(err, len, MCL_ERR_FORMAT, "checkpoint '%s': %s", path, mcl_ctx_error(ctx));
    mcl_oct_ring ring[MCL_OCT_MAX_STREAMS];
    mcl_tensor *nll = NULL, *hit = NULL;
    st = add_state(m->params, &c, ring, &nll, &hit);
    if (st != MCL_OK) fail(err, len, st, "%s", mcl_ctx_error(ctx));
    if (st == MCL_OK) st = mcl_ckpt_load(ctx, path, MCL_OCT_CKPT_KIND, m->params, NULL, info, err, len);
    if (st != MCL_OK) {
        mcl_oct_free(m);
        return st;
    }
    *model = m;
    *params = m->params;
    return MCL_OK;
}

static mcl_status oct_ckpt_export(void *model, const char *path, const mcl_ckpt_info *info, char *err, size_t len)
{
    mcl_oct *m = model;
    return mcl_ckpt_export(m->ctx, path, MCL_OCT_CKPT_KIND, m->params, info, err, len);
}

static void oct_ckpt_close(void *model) { mcl_oct_free(model); }

const mcl_family mcl_oct_family = {
    .kind = "oct",
    .summary = "transformers trained online on a stream (pi-transformer, 2-token; replay streams)",
    .cfg_size = sizeof(mcl_oct_run),
    .groups = oct_groups,
    .n_groups = 2,
    .cfg_default = oct_cfg_default,
    .cfg_check = oct_cfg_check,
    .total_steps = oct_total_steps,
    .create = oct_create,
    .free = oct_free_fs,
    .params = oct_params,
    .optim_config = oct_optim_config,
    .n_metrics = 4,
    .metric_names = oct_metric_names,
    .chance = oct_chance,
    .step_loss = oct_step_loss,
    .step_end = oct_step_end,
    .step_metrics = oct_step_metrics,
    .frozen = oct_frozen,
    .validate = oct_validate,
    .save = oct_save,
    .load = oct_load,
    .init_from = oct_init_from,
    .ckpt_floats = oct_ckpt_floats,
    .train_bytes = oct_train_bytes,
    .ckpt_open = oct_ckpt_open,
    .ckpt_export = oct_ckpt_export,
    .ckpt_close = oct_ckpt_close,
};
