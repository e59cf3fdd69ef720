/* acl_train.c — the ACL family on the training harness: config keys, data, the loss of a
 * step, validation, checkpoints, train.init. See acl_train.h; the loop, the run directory and
 * resume are the harness's (src/learn/train.c). */
#define _POSIX_C_SOURCE 200809L
#include "acl_train.h"
#include "util.h"

#include "acl_eval.h"
#include "tensor_impl.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define STREAM_EPISODES 1000000ULL /* + step                       */
#define STREAM_VAL 2000000ULL      /* + validation batch index     */
#define MCL_VAL_SPLITX_CLASSES 2   /* data.val = fmnist-val: Split-FMNIST, data.val_tasks */
                                   /* tasks of 2 classes (10 classes: at most 5 tasks)     */

#define fail mcl_errbuf

/* ====================================================================== config */

#define C mcl_acl_task_cfg
static const mcl_key task_keys[] = {
    MCL_KEY_INT("task.n_way", C, n_way, 1, 1 << 16, "5", "N classes per task"),
    MCL_KEY_INT("task.k_shot", C, k_shot, 1, 1 << 16, "5", "K context examples per class"),
    MCL_KEY_INT("task.n_tasks", C, n_tasks, 1, MCL_ACL_MAX_TASKS, "2", "T tasks per sequence"),
    MCL_KEY_BOOL("task.first_shot", C, first_shot, "1", "first-shot terms (auxiliary loss)"),
    MCL_KEY_BOOL("task.acl", C, acl, "1", "ACL (backward-transfer) terms; 0 = the no-ACL baseline"),
    MCL_KEY_ENUM("task.objective", C, objective_mean, "two_task|mean", "two_task",
                 "two_task: c*[sum s_d (fs + main) + acl]; mean: the mean of the terms"),
    MCL_KEY_FLOAT("task.scale", C, scale, 0, 1e6, "0.2", "c of the two_task form"),
    MCL_KEY_BOOL("task.class_incremental", C, class_incremental, "0", "labels of task i shifted by N*i"),
    MCL_KEY_STRLIST("data.domains", C, domains, n_domains, MCL_TRAIN_MAX_DOMAINS, "hanzi,hershey",
                    "data sets, separated by , or ; (prepared names, pngdir:DIR, idx:IMAGES,LABELS)"),
    MCL_KEY_FLOATLIST("data.domain_scale", C, domain_scale, n_domain_scale, MCL_TRAIN_MAX_DOMAINS, 0,
                      1e6, "1", "loss scale s_d of each domain (one value = all)"),
    MCL_KEY_BOOL("data.alternate", C, alternate, "1", "the domain order alternates every step"),
    MCL_KEY_STR("data.dir", C, data_dir, "", "prepared-data directory (\"\" = $METACL_DATA or data/cache)"),
    MCL_KEY_BOOL("data.normalize", C, normalize, "1", "images standardized with the set's mean/std"),
    MCL_KEY_ENUM("data.augment", C, augment, "none|task", "none",
                 "task: every training task gets one random image transformation (fill, "
                 "thickness, blur, texture, contrast, inversion, noise); never in validation"),
    MCL_KEY_STR("data.val", C, val_data, "",
                "validation data: \"\" = the domains' held-out classes; fmnist-val = Split-FMNIST "
                "domain-incremental accuracy on 5000 held-out Fashion-MNIST training images"),
    MCL_KEY_INT("data.val_tasks", C, val_tasks, 1, 5, "5",
                "tasks of 2 classes in the fmnist-val validation (class-incremental with "
                "task.class_incremental: then model.n_way >= 2 * data.val_tasks)"),
};
#undef C

static const mcl_key_group model_group = {"model.", mcl_acl_config_key_table, MCL_ACL_CONFIG_N_KEYS,
                                          offsetof(mcl_acl_task_cfg, model)};
static const mcl_key_group task_group = {"", task_keys, (int)(sizeof task_keys / sizeof task_keys[0]), 0};
static const mcl_key_group *const acl_groups[] = {&model_group, &task_group};

static mcl_status acl_cfg_check(const void *fcfg, const mcl_train_cfg *t, char *err, size_t err_len)
{
    (void)t;
    const mcl_acl_task_cfg *c = fcfg;
    int64_t outputs = (int64_t)c->n_way * (c->class_incremental ? c->n_tasks : 1);
    if (c->model.n_way != outputs)
        return fail(err, err_len, MCL_ERR_INVALID,
                    "model.n_way = %d but the tasks need %lld outputs (task.n_way %d%s)",
                    c->model.n_way, (long long)outputs, c->n_way,
                    c->class_incremental ? " × task.n_tasks, class-incremental" : "");
    if (c->n_domain_scale != 1 && c->n_domain_scale != c->n_domains)
        return fail(err, err_len, MCL_ERR_INVALID,
                    "data.domain_scale has %d values for %d domains (give 1 or %d)",
                    c->n_domain_scale, c->n_domains, c->n_domains);
    if (c->model.in_channels != 1 || c->model.image_size > MCL_IMG)
        return fail(err, err_len, MCL_ERR_INVALID,
                    "training reads %dx%d grayscale data sets (given at sides %d..%d): "
                    "model.in_channels must be 1 and model.image_size at most %d (it is %d)",
                    MCL_IMG, MCL_IMG, MCL_CONV4_MIN_IMAGE, MCL_IMG, MCL_IMG, c->model.image_size);
    if (c->val_data[0] && strcmp(c->val_data, MCL_FMNIST_VAL_NAME) != 0)
        return fail(err, err_len, MCL_ERR_INVALID,
                    "data.val = '%s': give \"\" (the domains' held-out classes) or %s", c->val_data,
                    MCL_FMNIST_VAL_NAME);
    /* class-incremental training validates class-incremental Split-FMNIST (T·C outputs) */
    const int val_outputs =
        c->class_incremental ? c->val_tasks * MCL_VAL_SPLITX_CLASSES : MCL_VAL_SPLITX_CLASSES;
    if (c->val_data[0] && c->model.n_way < val_outputs)
        return fail(err, err_len, MCL_ERR_INVALID,
                    "data.val = %s scores %s Split-FMNIST with %d outputs; model.n_way is %d",
                    MCL_FMNIST_VAL_NAME, c->class_incremental ? "class-incremental" : "domain-incremental",
                    val_outputs, c->model.n_way);
    return MCL_OK;
}

/* ====================================================================== init from a checkpoint */

/* Copy src [rs, cs] (2-D view) into dst [rd, cd]: rows map through row_of (NULL = identity,
 * -1 = skip), columns 0..min(cs, cd)-1. */
static void copy_block(float *dst, int64_t rd, int64_t cd, const float *src, int64_t rs,
                       int64_t cs, const int64_t *row_of)
{
    for (int64_t r = 0; r < rd; r++) {
        int64_t from = row_of ? row_of[r] : (r < rs ? r : -1);
        if (from < 0) continue;
        for (int64_t j = 0; j < cd && j < cs; j++) dst[r * cd + j] = src[from * cs + j];
    }
}

mcl_status mcl_acl_init_from(mcl_acl *m, const char *path, char *note, size_t note_len,
                             char *err, size_t err_len)
{
    mcl_acl *src = NULL;
    mcl_status st = mcl_acl_open(m->ctx, path, &src, err, err_len);
    if (st != MCL_OK) return st;
    int same = 0, adapted = 0, skipped = 0;
    const int F = m->n_features, Nn = m->cfg.n_way, No = src->cfg.n_way;
    for (int i = 0; i < mcl_params_count(m->params) && st == MCL_OK; i++) {
        mcl_tensor *d = mcl_params_get(m->params, i);
        mcl_tensor *s = mcl_params_find(src->params, d->name);
        if (!s) {
            skipped++;
            continue;
        }
        int64_t nd = mcl_tensor_numel(d), ns = mcl_tensor_numel(s);
        float *dv = malloc((size_t)nd * sizeof *dv), *sv = malloc((size_t)ns * sizeof *sv);
        if (!dv || !sv) st = fail(err, err_len, MCL_ERR_OOM, "out of memory");
        if (st == MCL_OK) st = mcl_tensor_read(d, dv, nd);
        if (st == MCL_OK) st = mcl_tensor_read(s, sv, ns);
        if (st == MCL_OK) {
            if (mcl_tensor_same_shape(d, s)) {
                memcpy(dv, sv, (size_t)nd * sizeof *dv);
                same++;
            } else if (!strcmp(d->name, "input.w") && d->shape[1] == s->shape[1] &&
                       F == src->n_features) {
                /* rows: F features, then N labels, then "unknown" */
                int64_t *row_of = malloc((size_t)d->shape[0] * sizeof *row_of);
                if (!row_of) {
                    st = fail(err, err_len, MCL_ERR_OOM, "out of memory");
                } else {
                    for (int64_t r = 0; r < d->shape[0]; r++)
                        row_of[r] = r < F ? r : r == F + Nn ? F + No : (r - F < No ? r : -1);
                    copy_block(dv, d->shape[0], d->shape[1], sv, s->shape[0], s->shape[1], row_of);
                    free(row_of);
                    adapted++;
                }
            } else if ((!strcmp(d->name, "head.w") && d->shape[0] == s->shape[0]) ||
                       (!strcmp(d->name, "head.b"))) {
                int64_t rows = d->ndim == 2 ? d->shape[0] : 1;
                copy_block(dv, rows, d->shape[d->ndim - 1], sv, rows, s->shape[s->ndim - 1], NULL);
                adapted++;
            } else {
                skipped++;
            }
        }
        if (st == MCL_OK) st = mcl_tensor_write(d, dv, nd);
        free(dv);
        free(sv);
    }
    if (note && note_len)
        snprintf(note, note_len,
                 "initialized from %s: %d tensors copied, %d adapted (n_way %d -> %d), %d kept "
                 "fresh",
                 path, same, adapted, No, Nn, skipped);
    mcl_acl_free(src);
    return st;
}

/* ====================================================================== the family */

typedef struct domain {
    mcl_dataset *train, *val;
    int val_is_train;
} domain;

typedef struct acl_fs {
    mcl_acl_task_cfg cfg;
    int batch;     /* train.batch */
    uint64_t seed; /* train.seed  */
    mcl_ctx *ctx;
    mcl_acl *m;
    domain dom[MCL_TRAIN_MAX_DOMAINS];
    mcl_dataset *val_train, *val_test; /* data.val = fmnist-val: its train (55 000) / val (5 000) */
    mcl_episode **eps;
    mcl_acl_task_data td[MCL_ACL_MAX_TASKS]; /* the current step's data */
    int have_td;
    mcl_acl_terms tm; /* the step's terms, read after its optimizer step (acl_step_metrics) */
    /* the validation columns (acl_val_columns): per domain d, the query accuracy of its
     * tasks right after their own context (main) and after the later tasks' (bwd: "A after
     * B"), over the last validation; [0] main, [1] bwd */
    char col[2 * MCL_TRAIN_MAX_DOMAINS][64];
    double vsum[2][MCL_TRAIN_MAX_DOMAINS];
    int vn[2][MCL_TRAIN_MAX_DOMAINS];
} acl_fs;

/* Every class of ds must hold the images of one task (first-shot + K + 1 query, disjoint):
 * checked once here so that a 15-shot config on a set prepared with fewer instances fails at
 * the start with what to do, not at the first step that draws the class. */
static mcl_status check_class_sizes(const mcl_acl_task_cfg *c, const char *spec, const char *what,
                                    const mcl_dataset *ds, char *err, size_t err_len)
{
    const int64_t need = (int64_t)(c->first_shot ? 1 : 0) + c->k_shot + 1;
    for (int p = 0; p < ds->n_classes; p++) {
        const int64_t m = ds->class_start[p + 1] - ds->class_start[p];
        if (m < need)
            return fail(err, err_len, MCL_ERR_INVALID,
                        "data set '%s' (%s): class %d has %lld images, a task takes %lld per "
                        "class (task.k_shot %d + %d first-shot + 1 query); lower task.k_shot or "
                        "prepare more (metacl data prepare NAME --instances N)",
                        spec, what, (int)ds->class_ids[p], (long long)m, (long long)need,
                        c->k_shot, c->first_shot ? 1 : 0);
    }
    return MCL_OK;
}

static mcl_status load_domains(acl_fs *t, mcl_train_log *log, char *err, size_t err_len)
{
    const mcl_acl_task_cfg *c = &t->cfg;
    const char *dd = c->data_dir[0] ? c->data_dir : NULL;
    for (int i = 0; i < c->n_domains; i++) {
        const char *spec = c->domains[i];
        int user = !strncmp(spec, "idx:", 4) || !strncmp(spec, "pngdir:", 7);
        char e2[768];
        mcl_status st = mcl_dataset_load(spec, dd, user ? MCL_SPLIT_ALL : MCL_SPLIT_TRAIN,
                                         &t->dom[i].train, e2, sizeof e2);
        if (st != MCL_OK) /* the loader's message may name the set already ("data set 'x' is not prepared") */
            return strstr(e2, spec) ? fail(err, err_len, st, "%s", e2) : fail(err, err_len, st, "data set '%s': %s", spec, e2);
        if (!user && mcl_dataset_load(spec, dd, MCL_SPLIT_VAL, &t->dom[i].val, e2, sizeof e2) == MCL_OK &&
            t->dom[i].val->n_classes >= c->n_way) {
            t->dom[i].val_is_train = 0;
        } else {
            if (t->dom[i].val) mcl_dataset_free(t->dom[i].val);
            t->dom[i].val = NULL;
            t->dom[i].val_is_train = 1;
        }
        st = check_class_sizes(c, spec, "training split", t->dom[i].train, err, err_len);
        if (st == MCL_OK && t->dom[i].val && !c->val_data[0])
            st = check_class_sizes(c, spec, "validation split", t->dom[i].val, err, err_len);
        if (st != MCL_OK) return st;
        mcl_train_logf(log, "data %s: %lld training images of %d classes; validation on %s", spec,
                       (long long)t->dom[i].train->n, t->dom[i].train->n_classes,
                       c->val_data[0]           ? c->val_data
                       : t->dom[i].val_is_train ? "its training data (no held-out split)"
                                                : "held-out classes");
    }
    if (c->val_data[0]) { /* fmnist-val: contexts from its train split, queries its val split */
        char e2[768];
        mcl_status st = mcl_dataset_load(c->val_data, dd, MCL_SPLIT_TRAIN, &t->val_train, e2, sizeof e2);
        if (st == MCL_OK) st = mcl_dataset_load(c->val_data, dd, MCL_SPLIT_VAL, &t->val_test, e2, sizeof e2);
        if (st != MCL_OK) return fail(err, err_len, st, "data.val '%s': %s", c->val_data, e2);
        mcl_train_logf(log,
                       "validation: Split-FMNIST %s (%d tasks of %d classes, %d "
                       "shots) on %s: %lld held-out images, contexts from the other %lld",
                       c->class_incremental ? "class-incremental" : "domain-incremental",
                       c->val_tasks, MCL_VAL_SPLITX_CLASSES, c->k_shot, c->val_data,
                       (long long)t->val_test->n, (long long)t->val_train->n);
    }
    return MCL_OK;
}

static int domain_of(const mcl_acl_task_cfg *c, int task, int64_t step)
{
    return c->alternate ? (int)(((int64_t)task + step) % c->n_domains) : task % c->n_domains;
}

/* Draw the B episodes of one batch and build the task data of sequences [lo, hi). */
static mcl_status make_batch(acl_fs *t, int64_t step, uint64_t stream, int val, int64_t lo,
                             int64_t hi, mcl_acl_task_data *td, char *err, size_t err_len)
{
    const mcl_acl_task_cfg *c = &t->cfg;
    mcl_class_pool pools[MCL_ACL_MAX_TASKS];
    for (int i = 0; i < c->n_tasks; i++) {
        const domain *d = &t->dom[domain_of(c, i, step)];
        pools[i].ds = val && !d->val_is_train ? d->val : d->train;
        pools[i].classes = NULL;
        pools[i].n_classes = 0;
    }
    mcl_rng rng;
    mcl_rng_init(&rng, t->seed, stream);
    char e2[512];
    for (int b = 0; b < t->batch; b++) {
        mcl_status st = mcl_episode_sample(t->eps[b], pools, &rng, e2, sizeof e2);
        if (st != MCL_OK) return fail(err, err_len, st, "episodes: %s", e2);
    }
    if (c->augment && !val) {
        /* Its own stream, so the episodes drawn are the same with and without augmentation. */
        mcl_aug_cfg ac;
        mcl_aug_cfg_default(&ac);
        mcl_rng arng;
        mcl_rng_init(&arng, t->seed ^ 0x61756721u, stream);
        for (int b = 0; b < t->batch; b++) mcl_episode_augment(t->eps[b], &ac, &arng);
    }
    for (int i = 0; i < c->n_tasks; i++) {
        mcl_status st = mcl_acl_task_data_from_episodes(t->ctx, (const mcl_episode *const *)t->eps + lo,
                                                        hi - lo, i, c->normalize,
                                                        c->model.image_size, &td[i]);
        if (st != MCL_OK) {
            for (int j = 0; j < i; j++) mcl_acl_task_data_free(&td[j]);
            return fail(err, err_len, st, "batch: %s", mcl_ctx_error(t->ctx));
        }
    }
    return MCL_OK;
}

static void objective_for(const acl_fs *t, int64_t step, mcl_acl_objective *o)
{
    const mcl_acl_task_cfg *c = &t->cfg;
    if (c->objective_mean)
        mcl_acl_objective_mean(o, c->n_tasks, c->first_shot);
    else {
        memset(o, 0, sizeof *o);
        o->n_tasks = c->n_tasks;
        o->first_shot = c->first_shot;
        o->scale = c->scale;
        o->acl_scale = 1.0f;
    }
    o->acl = c->acl;
    for (int i = 0; i < c->n_tasks; i++) /* s_d of the domain task i draws from */
        o->task_scale[i] = c->domain_scale[c->n_domain_scale == 1 ? 0 : domain_of(c, i, step)];
}

/* Mean accuracy of the terms of a kind (-1 when none). */
static double term_acc(const mcl_acl_terms *tm, int kind)
{
    double s = 0.0;
    int n = 0;
    for (int i = 0; i < tm->n; i++)
        if (tm->term[i].kind == kind) s += tm->term[i].accuracy, n++;
    return n ? s / n : NAN; /* absent: an empty metrics.csv cell */
}

static void acl_free_fs(void *p)
{
    acl_fs *t = p;
    if (!t) return;
    mcl_acl_terms_free(&t->tm);
    if (t->have_td)
        for (int i = 0; i < t->cfg.n_tasks; i++) mcl_acl_task_data_free(&t->td[i]);
    if (t->eps)
        for (int b = 0; b < t->batch; b++) mcl_episode_free(t->eps[b]);
    free(t->eps);
    for (int i = 0; i < MCL_TRAIN_MAX_DOMAINS; i++) {
        mcl_dataset_free(t->dom[i].train);
        mcl_dataset_free(t->dom[i].val);
    }
    mcl_dataset_free(t->val_train);
    mcl_dataset_free(t->val_test);
    mcl_acl_free(t->m);
    free(t);
}

static mcl_status acl_create(mcl_ctx *ctx, const void *fcfg, const mcl_train_cfg *tc,
                             mcl_train_log *log, void **out, char *err, size_t err_len)
{
    acl_fs *t = calloc(1, sizeof *t);
    if (!t) return fail(err, err_len, MCL_ERR_OOM, "out of memory");
    *out = t;
    t->cfg = *(const mcl_acl_task_cfg *)fcfg;
    t->batch = tc->batch;
    t->seed = tc->seed;
    t->ctx = ctx;
    const mcl_acl_task_cfg *c = &t->cfg;
    /* parameters + gradients + Adam state + one step's activations, before allocating */
    const int64_t rows = (int64_t)c->n_tasks * c->n_way * ((int64_t)c->k_shot + 2);
    char e2[512];
    mcl_status bst = mcl_check_budget(mcl_acl_train_bytes(&c->model, t->batch, rows),
                                      "training this config (parameters, optimizer state and "
                                      "one step's activations)", e2, sizeof e2);
    if (bst != MCL_OK) return fail(err, err_len, bst, "%s", e2);
    t->m = mcl_acl_create(ctx, &c->model);
    if (!t->m) return fail(err, err_len, MCL_ERR_INVALID, "model: %s", mcl_ctx_error(ctx));
    mcl_episode_cfg ec;
    memset(&ec, 0, sizeof ec);
    ec.n_way = c->n_way;
    ec.k_shot = c->k_shot;
    ec.n_query = 1;
    ec.first_shot = c->first_shot;
    ec.n_tasks = c->n_tasks;
    ec.class_incremental = c->class_incremental;
    t->eps = calloc((size_t)t->batch, sizeof *t->eps);
    if (!t->eps) return fail(err, err_len, MCL_ERR_OOM, "out of memory");
    for (int b = 0; b < t->batch; b++)
        if (mcl_episode_create(&ec, &t->eps[b]) != MCL_OK)
            return fail(err, err_len, MCL_ERR_INVALID, "episode config rejected");
    return load_domains(t, log, err, err_len);
}

static mcl_params *acl_params(void *fs) { return mcl_acl_params(((acl_fs *)fs)->m); }

/* feature_norm batch: the running estimates move in training forward passes */
static int acl_buffers(void *fs, mcl_tensor **out, int max)
{
    const mcl_acl *m = ((acl_fs *)fs)->m;
    if (!m->run_mean || max < 2) return 0;
    out[0] = m->run_mean;
    out[1] = m->run_var;
    return 2;
}

static void acl_optim_config(void *fs, mcl_optim_config *oc)
{
    oc->beta1 = 0.9f;
    oc->beta2 = 0.995f;
    oc->eps = 1e-9f;
    oc->sched.d_model = (float)((acl_fs *)fs)->cfg.model.hidden;
}

static const char *const acl_metric_names[] = {"acc_main", "acc_acl", "acc_first_shot"};

static double acl_chance(void *fs) { return 1.0 / ((acl_fs *)fs)->cfg.model.n_way; }

static mcl_status acl_step_loss(void *fs, int64_t s, const mcl_train_part *part,
                                mcl_tensor **loss, double *metrics, char *err, size_t err_len)
{
    acl_fs *t = fs;
    /* all B episodes are drawn (the draw of one depends on those before it); the part's
     * sequences are built and run */
    mcl_status st = make_batch(t, s, STREAM_EPISODES + (uint64_t)s, 0, part->lo, part->hi, t->td,
                               err, err_len);
    if (st != MCL_OK) return st;
    t->have_td = 1;
    mcl_acl_objective o;
    objective_for(t, s, &o);
    t->m->hold_running = part->index != 0; /* part 0 moves the running estimates */
    st = mcl_acl_objective_loss_deferred(t->m, t->ctx, &o, t->td, (int)(part->hi - part->lo), loss,
                                         &t->tm);
    t->m->hold_running = 0;
    if (st != MCL_OK) return fail(err, err_len, st, "step %lld: %s", (long long)s, mcl_ctx_error(t->ctx));
    (void)metrics; /* acl_step_metrics, once the step's reads have landed */
    return MCL_OK;
}

/* The query accuracies of the terms step_loss queued for reading. */
static void acl_step_metrics(void *fs, double *metrics)
{
    acl_fs *t = fs;
    mcl_acl_terms_finish(&t->tm);
    metrics[0] = term_acc(&t->tm, MCL_ACL_TERM_MAIN);
    metrics[1] = term_acc(&t->tm, MCL_ACL_TERM_ACL);
    metrics[2] = term_acc(&t->tm, MCL_ACL_TERM_FIRST_SHOT);
}

static void acl_step_end(void *fs)
{
    acl_fs *t = fs;
    if (!t->have_td) return;
    for (int i = 0; i < t->cfg.n_tasks; i++) mcl_acl_task_data_free(&t->td[i]);
    t->have_td = 0;
}

/* data.val = fmnist-val: the mean over `runs` runs of Split-FMNIST's final average accuracy
 * (data.val_tasks tasks of 2 classes, domain- or class-incremental as task.class_incremental,
 * task.k_shot contexts per class from the 55 000 training images outside the validation
 * split, queries = the held-out images of the tasks' classes, all after the last task; runs
 * 0..runs-1 with the class order of train.seed: the same every time). */
static mcl_status validate_splitx(acl_fs *t, int64_t runs, double *score, char *err, size_t err_len)
{
    mcl_splitx_eval_cfg xc;
    memset(&xc, 0, sizeof xc);
    xc.split.n_tasks = t->cfg.val_tasks;
    xc.split.classes_per_task = MCL_VAL_SPLITX_CLASSES;
    xc.split.k_shot = t->cfg.k_shot;
    xc.split.mode = t->cfg.class_incremental ? MCL_SPLITX_CLASS : MCL_SPLITX_DOMAIN;
    xc.split.shuffle_seed = t->seed;
    xc.n_runs = (int)runs;
    xc.final_only = 1;
    xc.normalize = t->cfg.normalize;
    mcl_cl_result res;
    mcl_status st = mcl_acl_eval_splitx(t->m, t->ctx, t->val_train, t->val_test, &xc, &res);
    if (st != MCL_OK) return fail(err, err_len, st, "validation on %s: %s", t->cfg.val_data, mcl_ctx_error(t->ctx));
    *score = res.mean.acc;
    mcl_cl_result_free(&res);
    return MCL_OK;
}

/* Validation columns of metrics.csv: with validation on the domains' held-out classes,
 * val_main_<domain> for every domain and, with 2 or more tasks, val_bwd_<domain>: the accuracy
 * on a task of that domain after the later tasks of the sequence (the paper's Sec. 4.2 curve
 * of in-context forgetting, measured whether or not the ACL term is trained). The domain's
 * name keeps [A-Za-z0-9_-] of its spec (others become '_'); a repeated name gets _<index>. */
static int acl_val_columns(void *fs, const char **names, int max)
{
    acl_fs *t = fs;
    const mcl_acl_task_cfg *c = &t->cfg;
    if (c->val_data[0]) return 0; /* fmnist-val validates Split-FMNIST, not the terms */
    int n = 0;
    for (int k = 0; k < (c->n_tasks > 1 ? 2 : 1); k++)
        for (int d = 0; d < c->n_domains && n < max && n < 2 * MCL_TRAIN_MAX_DOMAINS; d++) {
            char nm[40];
            size_t j = 0;
            for (const char *p = c->domains[d]; *p && j < sizeof nm - 1; p++)
                nm[j++] = (isalnum((unsigned char)*p) || *p == '_' || *p == '-') ? *p : '_';
            nm[j] = '\0';
            int dup = 0;
            for (int e = 0; e < d; e++) dup |= strcmp(c->domains[e], c->domains[d]) == 0;
            if (dup) snprintf(t->col[n], sizeof t->col[n], "val_%s_%s_%d", k ? "bwd" : "main", nm, d + 1);
            else snprintf(t->col[n], sizeof t->col[n], "val_%s_%s", k ? "bwd" : "main", nm);
            names[n] = t->col[n];
            n++;
        }
    return n;
}

/* The columns' values from the last acl_validate (NaN where no term was seen). */
static void acl_val_values(void *fs, double *values)
{
    const acl_fs *t = fs;
    int n = 0;
    for (int k = 0; k < (t->cfg.n_tasks > 1 ? 2 : 1); k++)
        for (int d = 0; d < t->cfg.n_domains; d++, n++)
            values[n] = t->vn[k][d] ? t->vsum[k][d] / t->vn[k][d] : NAN;
}

/* Validation score: mean query accuracy of the main and ACL terms over `batches` batches
 * (fixed episodes: the same every time), dropout off; the random state is put back. With
 * data.val = fmnist-val: validate_splitx with `batches` runs. */
static mcl_status acl_validate(void *fs, int64_t batches, double *score, char *err, size_t err_len)
{
    acl_fs *t = fs;
    uint64_t stream = mcl_ctx_stream(t->ctx);
    if (t->cfg.val_data[0]) {
        mcl_status st = validate_splitx(t, batches, score, err, err_len);
        mcl_ctx_set_stream(t->ctx, stream);
        return st;
    }
    mcl_acl_set_training(t->m, 0);
    mcl_no_grad_begin(t->ctx);
    double sum = 0.0;
    int n = 0;
    memset(t->vsum, 0, sizeof t->vsum);
    memset(t->vn, 0, sizeof t->vn);
    mcl_status st = MCL_OK;
    for (int64_t v = 0; v < batches && st == MCL_OK; v++) {
        mcl_acl_task_data td[MCL_ACL_MAX_TASKS];
        st = make_batch(t, v, STREAM_VAL + (uint64_t)v, 1, 0, t->batch, td, err, err_len);
        if (st != MCL_OK) break;
        mcl_acl_objective o;
        objective_for(t, v, &o);
        o.acl = 1; /* measure remembering even for the no-ACL baseline */
        mcl_acl_terms tm;
        mcl_tensor *loss = NULL;
        st = mcl_acl_objective_loss(t->m, t->ctx, &o, td, t->batch, &loss, &tm);
        if (st != MCL_OK) fail(err, err_len, st, "validation: %s", mcl_ctx_error(t->ctx));
        for (int i = 0; st == MCL_OK && i < tm.n; i++) {
            const mcl_acl_term *x = &tm.term[i];
            if (x->kind == MCL_ACL_TERM_FIRST_SHOT) continue;
            sum += x->accuracy, n++;
            const int k = x->kind == MCL_ACL_TERM_ACL, d = domain_of(&t->cfg, x->task, v);
            t->vsum[k][d] += x->accuracy; /* per domain: the columns of acl_val_columns */
            t->vn[k][d]++;
        }
        for (int i = 0; i < t->cfg.n_tasks; i++) mcl_acl_task_data_free(&td[i]);
        mcl_ctx_reset(t->ctx);
    }
    mcl_no_grad_end(t->ctx);
    mcl_acl_set_training(t->m, 1);
    mcl_ctx_set_stream(t->ctx, stream);
    *score = n ? sum / n : NAN;
    return st;
}

static mcl_status acl_save(void *fs, const char *path, const mcl_optim *opt,
                           const mcl_ckpt_counter *cn, int n_cn, char *err, size_t len)
{
    return mcl_acl_save(((acl_fs *)fs)->m, path, opt, cn, n_cn, err, len);
}

static mcl_status acl_load(void *fs, const char *path, mcl_optim *opt, mcl_ckpt_info *info,
                           char *err, size_t len)
{
    return mcl_acl_load(((acl_fs *)fs)->m, path, opt, 1, info, err, len);
}

static mcl_status acl_init_from(void *fs, const char *path, char *note, size_t note_len,
                                char *err, size_t len)
{
    return mcl_acl_init_from(((acl_fs *)fs)->m, path, note, note_len, err, len);
}

/* ckpt info / export: the model alone, with its random state (export keeps it). */
static mcl_status acl_ckpt_open(mcl_ctx *ctx, const char *path, void **model, mcl_params **params,
                                mcl_ckpt_info *info, char *err, size_t len)
{
    mcl_acl *m = NULL;
    *model = NULL;
    mcl_status st = mcl_acl_open(ctx, path, &m, err, len);
    if (st == MCL_OK) st = mcl_acl_load(m, path, NULL, 1, info, err, len);
    if (st != MCL_OK) {
        mcl_acl_free(m);
        return st;
    }
    *model = m;
    *params = mcl_acl_params(m);
    return MCL_OK;
}

static mcl_status acl_ckpt_export(void *model, const char *path, const mcl_ckpt_info *info, char *err, size_t len)
{
    return mcl_acl_save(model, path, NULL, info->counters, info->n_counters, err, len);
}

static void acl_ckpt_close(void *model) { mcl_acl_free(model); }

const mcl_family mcl_acl_family = {
    .kind = "acl",
    .summary = "self-referential weight matrices meta-trained with the ACL objective",
    .cfg_size = sizeof(mcl_acl_task_cfg),
    .groups = acl_groups,
    .n_groups = 2,
    .cfg_check = acl_cfg_check,
    .create = acl_create,
    .free = acl_free_fs,
    .params = acl_params,
    .optim_config = acl_optim_config,
    .n_metrics = 3,
    .metric_names = acl_metric_names,
    .chance = acl_chance,
    .step_loss = acl_step_loss,
    .step_metrics = acl_step_metrics,
    .step_end = acl_step_end,
    .buffers = acl_buffers,
    .validate = acl_validate,
    .val_columns = acl_val_columns,
    .val_values = acl_val_values,
    .save = acl_save,
    .load = acl_load,
    .init_from = acl_init_from,
    .learner_open = mcl_acl_learner_open,
    .ckpt_open = acl_ckpt_open,
    .ckpt_export = acl_ckpt_export,
    .ckpt_close = acl_ckpt_close,
};
