/* acl_train.c — ACL meta-training runs: config, loop, run directory, exact resume. See
 * acl_train.h for the keys and the guarantees. */
#define _POSIX_C_SOURCE 200809L
#include "acl_train.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "dataset_io.h"

#define STREAM_EPISODES 1000000ULL /* + step                       */
#define STREAM_VAL 2000000ULL      /* + validation batch index     */
#define CHANCE_WINDOW 100          /* steps in the running accuracy */
#define CHANCE_MARGIN 0.10         /* "left chance": chance + this  */
#define MAX_CONFIG_BYTES (1 << 20)

#define fail mcl_errbuf

/* ====================================================================== config */

void mcl_acl_train_cfg_default(mcl_acl_train_cfg *c)
{
    memset(c, 0, sizeof *c);
    mcl_acl_config_default(&c->model);
    c->n_way = 5;
    c->k_shot = 5;
    c->n_tasks = 2;
    c->first_shot = 1;
    c->acl = 1;
    c->scale = 0.2f;
    c->n_domains = 2;
    strcpy(c->domains[0], "hanzi");
    strcpy(c->domains[1], "hershey");
    c->n_domain_scale = 1;
    c->domain_scale[0] = 1.0f;
    c->alternate = 1;
    c->normalize = 1;
    c->steps = 1000;
    c->batch = 16;
    c->lr = 1e-3f;
    c->warmup = 5000;
    c->seed = 1;
    c->log_every = 10;
    c->val_every = 200;
    c->val_batches = 8;
    c->ckpt_every = 200;
}

/* comma list into fixed slots; returns count or -1 */
static int split_list(const char *v, char out[][MCL_TRAIN_PATH_MAX], int max)
{
    int n = 0;
    const char *p = v;
    while (*p) {
        const char *q = strchr(p, ',');
        size_t len = q ? (size_t)(q - p) : strlen(p);
        while (len && (*p == ' ')) p++, len--;
        while (len && p[len - 1] == ' ') len--;
        if (len == 0 || len >= MCL_TRAIN_PATH_MAX || n == max) return -1;
        memcpy(out[n], p, len);
        out[n][len] = 0;
        n++;
        if (!q) break;
        p = q + 1;
        if (!*p) return -1; /* trailing comma */
    }
    return n;
}

typedef struct tkey {
    const char *name;
    char type;   /* i int, I int64, f float, b bool, s string, d domains, S scales, u u64, o objective, h schedule */
    size_t off;
    double lo, hi;
} tkey;

#define O(f) offsetof(mcl_acl_train_cfg, f)
static const tkey tkeys[] = {
    {"task.n_way", 'i', O(n_way), 1, 1 << 16},
    {"task.k_shot", 'i', O(k_shot), 1, 1 << 16},
    {"task.n_tasks", 'i', O(n_tasks), 1, MCL_ACL_MAX_TASKS},
    {"task.first_shot", 'b', O(first_shot), 0, 1},
    {"task.acl", 'b', O(acl), 0, 1},
    {"task.objective", 'o', O(objective_mean), 0, 0},
    {"task.scale", 'f', O(scale), 0, 1e6},
    {"task.class_incremental", 'b', O(class_incremental), 0, 1},
    {"data.domains", 'd', O(domains), 0, 0},
    {"data.domain_scale", 'S', O(domain_scale), 0, 1e6},
    {"data.alternate", 'b', O(alternate), 0, 1},
    {"data.dir", 's', O(data_dir), 0, 0},
    {"data.normalize", 'b', O(normalize), 0, 1},
    {"train.steps", 'I', O(steps), 0, 1e12},
    {"train.batch", 'i', O(batch), 1, 4096},
    {"train.schedule", 'h', O(schedule_noam), 0, 0},
    {"train.lr", 'f', O(lr), 0, 1e3},
    {"train.warmup", 'I', O(warmup), 1, 1e12},
    {"train.clip", 'f', O(clip), 0, 1e9},
    {"train.seed", 'u', O(seed), 0, 0},
    {"train.log_every", 'I', O(log_every), 1, 1e12},
    {"train.val_every", 'I', O(val_every), 0, 1e12},
    {"train.val_batches", 'I', O(val_batches), 1, 1e6},
    {"train.ckpt_every", 'I', O(ckpt_every), 1, 1e12},
    {"train.init", 's', O(init), 0, 0},
};
#undef O
#define N_TKEYS ((int)(sizeof tkeys / sizeof tkeys[0]))

mcl_status mcl_acl_train_cfg_set(mcl_acl_train_cfg *c, const char *key, const char *v,
                                 char *err, size_t err_len)
{
    if (!c || !key || !v) return fail(err, err_len, MCL_ERR_NULL, "NULL argument");
    if (strncmp(key, "model.", 6) == 0) return mcl_acl_config_set(&c->model, key + 6, v, err, err_len);
    const tkey *k = NULL;
    for (int i = 0; i < N_TKEYS; i++)
        if (strcmp(tkeys[i].name, key) == 0) k = &tkeys[i];
    if (!k)
        return fail(err, err_len, MCL_ERR_INVALID,
                    "unknown key '%s' (keys: model.*, task.*, data.*, train.*; see "
                    "src/models/acl/acl_train.h or doc/acl.md)",
                    key);
    char *base = (char *)c + k->off;
    int64_t x = 0;
    switch (k->type) {
    case 'i':
        if (mcl_parse_i64(v, (int64_t)k->lo, (int64_t)k->hi, &x)) goto bad_int;
        *(int *)(void *)base = (int)x;
        return MCL_OK;
    case 'I':
        if (mcl_parse_i64(v, (int64_t)k->lo, (int64_t)k->hi, &x)) goto bad_int;
        *(int64_t *)(void *)base = x;
        return MCL_OK;
    case 'b':
        if (strcmp(v, "0") && strcmp(v, "1"))
            return fail(err, err_len, MCL_ERR_INVALID, "%s = '%s': want 0 or 1", key, v);
        *(int *)(void *)base = v[0] == '1';
        return MCL_OK;
    case 'f':
        if (mcl_parse_f32(v, (float)k->lo, (float)k->hi, (float *)(void *)base))
            return fail(err, err_len, MCL_ERR_INVALID, "%s = '%s': want a number in [%g, %g]",
                        key, v, k->lo, k->hi);
        return MCL_OK;
    case 'u': {
        char *end = NULL;
        errno = 0;
        unsigned long long u = strtoull(v, &end, 10);
        if (v[0] == '-' || end == v || *end || errno)
            return fail(err, err_len, MCL_ERR_INVALID, "%s = '%s': want an unsigned integer", key, v);
        c->seed = (uint64_t)u;
        return MCL_OK;
    }
    case 's':
        if (strlen(v) >= MCL_TRAIN_PATH_MAX)
            return fail(err, err_len, MCL_ERR_INVALID, "%s: value too long", key);
        strcpy(base, v);
        return MCL_OK;
    case 'd': {
        char tmp[MCL_TRAIN_MAX_DOMAINS][MCL_TRAIN_PATH_MAX];
        int n = split_list(v, tmp, MCL_TRAIN_MAX_DOMAINS);
        if (n < 1)
            return fail(err, err_len, MCL_ERR_INVALID,
                        "%s = '%s': want a comma list of 1..%d data sets", key, v,
                        MCL_TRAIN_MAX_DOMAINS);
        memcpy(c->domains, tmp, sizeof tmp);
        c->n_domains = n;
        return MCL_OK;
    }
    case 'S': {
        char tmp[MCL_TRAIN_MAX_DOMAINS][MCL_TRAIN_PATH_MAX];
        int n = split_list(v, tmp, MCL_TRAIN_MAX_DOMAINS);
        float s[MCL_TRAIN_MAX_DOMAINS];
        for (int i = 0; i < n; i++)
            if (mcl_parse_f32(tmp[i], 0.0f, 1e6f, &s[i])) n = -1;
        if (n < 1)
            return fail(err, err_len, MCL_ERR_INVALID,
                        "%s = '%s': want a comma list of 1..%d numbers >= 0", key, v,
                        MCL_TRAIN_MAX_DOMAINS);
        memcpy(c->domain_scale, s, (size_t)n * sizeof *s);
        c->n_domain_scale = n;
        return MCL_OK;
    }
    case 'o':
        if (!strcmp(v, "two_task")) c->objective_mean = 0;
        else if (!strcmp(v, "mean")) c->objective_mean = 1;
        else return fail(err, err_len, MCL_ERR_INVALID, "%s = '%s': want two_task or mean", key, v);
        return MCL_OK;
    default: /* 'h' */
        if (!strcmp(v, "constant")) c->schedule_noam = 0;
        else if (!strcmp(v, "noam")) c->schedule_noam = 1;
        else return fail(err, err_len, MCL_ERR_INVALID, "%s = '%s': want constant or noam", key, v);
        return MCL_OK;
    }
bad_int:
    return fail(err, err_len, MCL_ERR_INVALID, "%s = '%s': want an integer in [%.0f, %.0f]", key,
                v, k->lo, k->hi);
}

static mcl_status set_train_key(void *c, const char *key, const char *value, char *msg,
                                size_t n)
{
    return mcl_acl_train_cfg_set(c, key, value, msg, n);
}

mcl_status mcl_acl_train_cfg_parse(mcl_acl_train_cfg *c, const char *text, const char *what,
                                   char *err, size_t err_len)
{
    if (!c || !text) return fail(err, err_len, MCL_ERR_NULL, "NULL argument");
    mcl_acl_train_cfg t = *c; /* all or nothing */
    mcl_status st = mcl_kv_parse(text, what, set_train_key, &t, err, err_len);
    if (st == MCL_OK) *c = t;
    return st;
}

static mcl_status read_text(const char *path, char **out, char *err, size_t err_len)
{
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) return fail(err, err_len, MCL_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    char *buf = malloc(MAX_CONFIG_BYTES + 1);
    size_t n = buf ? fread(buf, 1, MAX_CONFIG_BYTES + 1, f) : 0;
    int bad = ferror(f);
    fclose(f);
    if (!buf) return fail(err, err_len, MCL_ERR_OOM, "out of memory");
    if (bad || n > MAX_CONFIG_BYTES) {
        free(buf);
        return fail(err, err_len, bad ? MCL_ERR_IO : MCL_ERR_INVALID, "%s: %s", path,
                    bad ? "read error" : "larger than 1 MiB");
    }
    buf[n] = 0;
    if (strlen(buf) != n) {
        free(buf);
        return fail(err, err_len, MCL_ERR_INVALID, "%s: contains a NUL byte (not a text file)", path);
    }
    *out = buf;
    return MCL_OK;
}

mcl_status mcl_acl_train_cfg_load(mcl_acl_train_cfg *c, const char *path, char *err,
                                  size_t err_len)
{
    char *text = NULL;
    mcl_status st = read_text(path, &text, err, err_len);
    if (st == MCL_OK) st = mcl_acl_train_cfg_parse(c, text, path, err, err_len);
    free(text);
    return st;
}

mcl_status mcl_acl_train_cfg_check(const mcl_acl_train_cfg *c, char *err, size_t err_len)
{
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
    if (c->model.in_channels != 1 || c->model.image_size != MCL_IMG)
        return fail(err, err_len, MCL_ERR_INVALID,
                    "training reads %dx%d grayscale data sets: model.in_channels must be 1 and "
                    "model.image_size %d",
                    MCL_IMG, MCL_IMG, MCL_IMG);
    if (c->schedule_noam == 0 && !(c->lr > 0.0f))
        return fail(err, err_len, MCL_ERR_INVALID, "train.lr must be > 0");
    return MCL_OK;
}

char *mcl_acl_train_cfg_to_text(const mcl_acl_train_cfg *c)
{
    char *model = mcl_acl_config_to_text(&c->model);
    size_t cap = 16384 + (size_t)MCL_TRAIN_MAX_DOMAINS * MCL_TRAIN_PATH_MAX * 2;
    char *s = model ? malloc(cap) : NULL;
    if (!s) {
        free(model);
        return NULL;
    }
    size_t n = 0;
#define PUT(...) n += (size_t)snprintf(s + n, cap - n, __VA_ARGS__)
    for (const char *p = model; *p;) { /* prefix every model line with "model." */
        const char *e = strchr(p, '\n');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        PUT("model.%.*s\n", (int)len, p);
        p += len + (e ? 1 : 0);
    }
    free(model);
    PUT("task.n_way = %d\ntask.k_shot = %d\ntask.n_tasks = %d\ntask.first_shot = %d\n", c->n_way,
        c->k_shot, c->n_tasks, c->first_shot);
    PUT("task.acl = %d\ntask.objective = %s\ntask.scale = %.9g\ntask.class_incremental = %d\n",
        c->acl, c->objective_mean ? "mean" : "two_task", (double)c->scale, c->class_incremental);
    PUT("data.domains = ");
    for (int i = 0; i < c->n_domains; i++) PUT("%s%s", i ? "," : "", c->domains[i]);
    PUT("\ndata.domain_scale = ");
    for (int i = 0; i < c->n_domain_scale; i++) PUT("%s%.9g", i ? "," : "", (double)c->domain_scale[i]);
    PUT("\ndata.alternate = %d\ndata.dir = %s\ndata.normalize = %d\n", c->alternate, c->data_dir,
        c->normalize);
    PUT("train.steps = %" PRId64 "\ntrain.batch = %d\ntrain.schedule = %s\ntrain.lr = %.9g\n",
        c->steps, c->batch, c->schedule_noam ? "noam" : "constant", (double)c->lr);
    PUT("train.warmup = %" PRId64 "\ntrain.clip = %.9g\ntrain.seed = %" PRIu64 "\n", c->warmup,
        (double)c->clip, c->seed);
    PUT("train.log_every = %" PRId64 "\ntrain.val_every = %" PRId64 "\ntrain.val_batches = %" PRId64
        "\ntrain.ckpt_every = %" PRId64 "\ntrain.init = %s\n",
        c->log_every, c->val_every, c->val_batches, c->ckpt_every, c->init);
#undef PUT
    return s;
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

/* ====================================================================== the run */

typedef struct domain {
    mcl_dataset *train, *val;
    int val_is_train;
} domain;

typedef struct trainer {
    mcl_acl_train_cfg cfg;
    const mcl_acl_train_opts *opts;
    mcl_ctx *ctx;
    mcl_acl *m;
    mcl_optim *opt;
    domain dom[MCL_TRAIN_MAX_DOMAINS];
    mcl_episode **eps;
    FILE *log, *csv;
    char dir[MCL_TRAIN_PATH_MAX];
    int64_t step;        /* steps done */
    double train_ms;     /* before this process */
    double t_start;      /* this process */
    double best_val;
    int64_t chance_step;
    double acc_window[CHANCE_WINDOW];
    int64_t n_window;
    char *err;
    size_t err_len;
} trainer;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void logf_(trainer *t, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static void logf_(trainer *t, const char *fmt, ...)
{
    char line[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (t->log) {
        fprintf(t->log, "%s\n", line);
        fflush(t->log);
    }
    if (t->opts->log) {
        if (t->opts->progress) fputs("\r\033[K", stderr);
        fprintf(t->opts->log, "%s\n", line);
        fflush(t->opts->log);
    }
}

static int path_join(char *out, size_t n, const char *dir, const char *name)
{
    return snprintf(out, n, "%s/%s", dir, name) >= (int)n;
}

static mcl_status load_domains(trainer *t)
{
    const mcl_acl_train_cfg *c = &t->cfg;
    const char *dd = c->data_dir[0] ? c->data_dir : NULL;
    for (int i = 0; i < c->n_domains; i++) {
        const char *spec = c->domains[i];
        int user = !strncmp(spec, "idx:", 4) || !strncmp(spec, "pngdir:", 7);
        char e2[768];
        mcl_status st = mcl_dataset_load(spec, dd, user ? MCL_SPLIT_ALL : MCL_SPLIT_TRAIN,
                                         &t->dom[i].train, e2, sizeof e2);
        if (st != MCL_OK) return fail(t->err, t->err_len, st, "data set '%s': %s", spec, e2);
        if (!user && mcl_dataset_load(spec, dd, MCL_SPLIT_VAL, &t->dom[i].val, e2, sizeof e2) == MCL_OK &&
            t->dom[i].val->n_classes >= c->n_way) {
            t->dom[i].val_is_train = 0;
        } else {
            if (t->dom[i].val) mcl_dataset_free(t->dom[i].val);
            t->dom[i].val = NULL;
            t->dom[i].val_is_train = 1;
        }
        logf_(t, "data %s: %lld training images of %d classes; validation on %s", spec,
              (long long)t->dom[i].train->n, t->dom[i].train->n_classes,
              t->dom[i].val_is_train ? "its training data (no held-out split)" : "held-out classes");
    }
    return MCL_OK;
}

static int domain_of(const mcl_acl_train_cfg *c, int task, int64_t step)
{
    return c->alternate ? (int)(((int64_t)task + step) % c->n_domains) : task % c->n_domains;
}

/* Draw the B episodes of one batch and build the task data. */
static mcl_status make_batch(trainer *t, int64_t step, uint64_t stream, int val,
                             mcl_acl_task_data *td)
{
    const mcl_acl_train_cfg *c = &t->cfg;
    mcl_class_pool pools[MCL_ACL_MAX_TASKS];
    for (int i = 0; i < c->n_tasks; i++) {
        const domain *d = &t->dom[domain_of(c, i, step)];
        pools[i].ds = val && !d->val_is_train ? d->val : d->train;
        pools[i].classes = NULL;
        pools[i].n_classes = 0;
    }
    mcl_rng rng;
    mcl_rng_init(&rng, c->seed, stream);
    char e2[512];
    for (int b = 0; b < c->batch; b++) {
        mcl_status st = mcl_episode_sample(t->eps[b], pools, &rng, e2, sizeof e2);
        if (st != MCL_OK) return fail(t->err, t->err_len, st, "episodes: %s", e2);
    }
    for (int i = 0; i < c->n_tasks; i++) {
        mcl_status st = mcl_acl_task_data_from_episodes(t->ctx, (const mcl_episode *const *)t->eps,
                                                        c->batch, i, c->normalize, &td[i]);
        if (st != MCL_OK) {
            for (int j = 0; j < i; j++) mcl_acl_task_data_free(&td[j]);
            return fail(t->err, t->err_len, st, "batch: %s", mcl_ctx_error(t->ctx));
        }
    }
    return MCL_OK;
}

static void objective_for(const trainer *t, int64_t step, mcl_acl_objective *o)
{
    const mcl_acl_train_cfg *c = &t->cfg;
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
    return n ? s / n : -1.0;
}

/* Validation score: mean query accuracy of the main and ACL terms over val_batches batches
 * (fixed episodes: the same every time), dropout off; the random state is put back. */
static mcl_status validate(trainer *t, double *score)
{
    uint64_t stream = mcl_ctx_stream(t->ctx);
    mcl_acl_set_training(t->m, 0);
    mcl_no_grad_begin(t->ctx);
    double sum = 0.0;
    int n = 0;
    mcl_status st = MCL_OK;
    for (int64_t v = 0; v < t->cfg.val_batches && st == MCL_OK; v++) {
        mcl_acl_task_data td[MCL_ACL_MAX_TASKS];
        st = make_batch(t, v, STREAM_VAL + (uint64_t)v, 1, td);
        if (st != MCL_OK) break;
        mcl_acl_objective o;
        objective_for(t, v, &o);
        o.acl = 1; /* measure remembering even for the no-ACL baseline */
        mcl_acl_terms tm;
        mcl_tensor *loss = NULL;
        st = mcl_acl_objective_loss(t->m, t->ctx, &o, td, t->cfg.batch, &loss, &tm);
        if (st != MCL_OK) fail(t->err, t->err_len, st, "validation: %s", mcl_ctx_error(t->ctx));
        for (int i = 0; st == MCL_OK && i < tm.n; i++)
            if (tm.term[i].kind != MCL_ACL_TERM_FIRST_SHOT) sum += tm.term[i].accuracy, n++;
        for (int i = 0; i < t->cfg.n_tasks; i++) mcl_acl_task_data_free(&td[i]);
        mcl_ctx_reset(t->ctx);
    }
    mcl_no_grad_end(t->ctx);
    mcl_acl_set_training(t->m, 1);
    mcl_ctx_set_stream(t->ctx, stream);
    *score = n ? sum / n : NAN;
    return st;
}

static double elapsed_ms(const trainer *t) { return t->train_ms + (now_s() - t->t_start) * 1e3; }

static mcl_status save_ckpt(trainer *t, const char *name)
{
    char path[MCL_TRAIN_PATH_MAX + 32];
    if (path_join(path, sizeof path, t->dir, name))
        return fail(t->err, t->err_len, MCL_ERR_INVALID, "run directory path too long");
    mcl_ckpt_counter cn[4];
    memset(cn, 0, sizeof cn);
    strcpy(cn[0].name, "step");
    cn[0].value = (uint64_t)t->step;
    strcpy(cn[1].name, "train_ms");
    cn[1].value = (uint64_t)llround(elapsed_ms(t));
    strcpy(cn[2].name, "best_val_ppm");
    cn[2].value = isnan(t->best_val) ? UINT64_MAX : (uint64_t)llround(t->best_val * 1e6);
    strcpy(cn[3].name, "chance_step");
    cn[3].value = (uint64_t)t->chance_step;
    char e2[768];
    mcl_status st = mcl_acl_save(t->m, path, t->opt, cn, 4, e2, sizeof e2);
    if (st != MCL_OK) return fail(t->err, t->err_len, st, "%s", e2);
    return MCL_OK;
}

/* Keep the metrics.csv rows of steps <= upto (resume): atomic rewrite. */
static mcl_status truncate_csv(trainer *t, const char *path, int64_t upto)
{
    char *text = NULL;
    if (access(path, F_OK) != 0) return MCL_OK;
    mcl_status st = read_text(path, &text, t->err, t->err_len);
    if (st != MCL_OK) return st;
    size_t n = strlen(text), keep = 0;
    for (size_t at = 0; at < n;) {
        char *e = strchr(text + at, '\n');
        size_t next = e ? (size_t)(e - text) + 1 : n;
        long long step = -1;
        if (at == 0 || (sscanf(text + at, "%lld,", &step) == 1 && step <= upto)) {
            memmove(text + keep, text + at, next - at);
            keep += next - at;
        }
        at = next;
    }
    char e2[512];
    st = mcl_write_file_atomic(path, text, keep, e2, sizeof e2);
    free(text);
    if (st != MCL_OK) return fail(t->err, t->err_len, st, "%s", e2);
    return MCL_OK;
}

static mcl_status open_run_dir(trainer *t)
{
    char e2[768], path[MCL_TRAIN_PATH_MAX + 32];
    mcl_status st = mcl_mkdir_p(t->dir, e2, sizeof e2);
    if (st != MCL_OK) return fail(t->err, t->err_len, st, "run directory: %s", e2);
    if (path_join(path, sizeof path, t->dir, "log.txt"))
        return fail(t->err, t->err_len, MCL_ERR_INVALID, "run directory path too long");
    t->log = fopen(path, "a");
    if (!t->log) return fail(t->err, t->err_len, MCL_ERR_IO, "%s: %s", path, strerror(errno));
    return MCL_OK;
}

static mcl_status open_csv(trainer *t, int resume)
{
    char path[MCL_TRAIN_PATH_MAX + 32];
    path_join(path, sizeof path, t->dir, "metrics.csv");
    if (resume) {
        mcl_status st = truncate_csv(t, path, t->step);
        if (st != MCL_OK) return st;
    }
    int fresh = access(path, F_OK) != 0 || !resume;
    t->csv = fopen(path, fresh ? "w" : "a");
    if (!t->csv) return fail(t->err, t->err_len, MCL_ERR_IO, "%s: %s", path, strerror(errno));
    if (fresh)
        fprintf(t->csv, "step,loss,acc_main,acc_acl,acc_first_shot,lr,steps_per_s,train_s,val_score\n");
    fflush(t->csv);
    return MCL_OK;
}

static void progress(trainer *t, double loss, double acc, double sps)
{
    if (!t->opts->progress) return;
    double left = sps > 0 ? (double)(t->cfg.steps - t->step) / sps : 0.0;
    fprintf(stderr, "\r\033[Kstep %lld/%lld  loss %.4f  acc %.3f  %.2f steps/s  ETA %dm%02ds",
            (long long)t->step, (long long)t->cfg.steps, loss, acc, sps, (int)(left / 60),
            (int)fmod(left, 60.0));
    fflush(stderr);
}

static void trainer_free(trainer *t)
{
    if (t->eps)
        for (int b = 0; b < t->cfg.batch; b++) mcl_episode_free(t->eps[b]);
    free(t->eps);
    for (int i = 0; i < MCL_TRAIN_MAX_DOMAINS; i++) {
        mcl_dataset_free(t->dom[i].train);
        mcl_dataset_free(t->dom[i].val);
    }
    mcl_optim_free(t->opt);
    mcl_acl_free(t->m);
    if (t->csv) fclose(t->csv);
    if (t->log) fclose(t->log);
}

static mcl_status setup(trainer *t)
{
    const mcl_acl_train_cfg *c = &t->cfg;
    char e2[768];
    mcl_status st = mcl_acl_train_cfg_check(c, e2, sizeof e2);
    if (st != MCL_OK) return fail(t->err, t->err_len, st, "config: %s", e2);
    t->m = mcl_acl_create(t->ctx, &c->model);
    if (!t->m) return fail(t->err, t->err_len, MCL_ERR_INVALID, "model: %s", mcl_ctx_error(t->ctx));
    mcl_optim_config oc;
    memset(&oc, 0, sizeof oc);
    oc.kind = MCL_OPTIM_ADAM;
    oc.beta1 = 0.9f;
    oc.beta2 = 0.995f;
    oc.eps = 1e-9f;
    oc.clip_norm = c->clip;
    oc.sched.kind = c->schedule_noam ? MCL_SCHED_NOAM : MCL_SCHED_CONSTANT;
    oc.sched.base_lr = c->lr;
    oc.sched.warmup = c->warmup;
    oc.sched.d_model = (float)c->model.hidden;
    if (mcl_optim_create(t->ctx, &oc, mcl_acl_params(t->m), &t->opt) != MCL_OK)
        return fail(t->err, t->err_len, MCL_ERR_INVALID, "optimizer: %s", mcl_ctx_error(t->ctx));
    mcl_episode_cfg ec;
    memset(&ec, 0, sizeof ec);
    ec.n_way = c->n_way;
    ec.k_shot = c->k_shot;
    ec.n_query = 1;
    ec.first_shot = c->first_shot;
    ec.n_tasks = c->n_tasks;
    ec.class_incremental = c->class_incremental;
    t->eps = calloc((size_t)c->batch, sizeof *t->eps);
    if (!t->eps) return fail(t->err, t->err_len, MCL_ERR_OOM, "out of memory");
    for (int b = 0; b < c->batch; b++)
        if (mcl_episode_create(&ec, &t->eps[b]) != MCL_OK)
            return fail(t->err, t->err_len, MCL_ERR_INVALID, "episode config rejected");
    return load_domains(t);
}

/* One training step: *loss_out = its loss; a status (message in t->err) on failure. */
static mcl_status train_step(trainer *t, double *loss_out, mcl_acl_terms *tm)
{
    const int64_t s = t->step + 1;
    mcl_acl_task_data td[MCL_ACL_MAX_TASKS];
    mcl_status st = make_batch(t, s, STREAM_EPISODES + (uint64_t)s, 0, td);
    if (st != MCL_OK) return st;
    mcl_acl_objective o;
    objective_for(t, s, &o);
    mcl_tensor *loss = NULL;
    float lv = NAN;
    mcl_optim_zero_grad(t->opt);
    st = mcl_acl_objective_loss(t->m, t->ctx, &o, td, t->cfg.batch, &loss, tm);
    if (st == MCL_OK) st = mcl_tensor_read(loss, &lv, 1);
    /* test hook (tests/test-train-cli.sh): pretend step METACL_TEST_NAN_STEP's loss is NaN */
    const char *nan_step = getenv("METACL_TEST_NAN_STEP");
    if (nan_step && atoll(nan_step) == s) lv = NAN;
    if (st == MCL_OK && !isfinite(lv)) {
        st = fail(t->err, t->err_len, MCL_ERR_INVALID,
                  "step %lld: the loss is %g: training stopped (the last good checkpoint, step "
                  "%lld or earlier, is kept)",
                  (long long)s, (double)lv, (long long)t->step);
    } else {
        if (st == MCL_OK) st = mcl_backward(t->ctx, loss);
        if (st == MCL_OK) st = mcl_optim_step(t->opt);
        if (st != MCL_OK) fail(t->err, t->err_len, st, "step %lld: %s", (long long)s, mcl_ctx_error(t->ctx));
    }
    for (int i = 0; i < t->cfg.n_tasks; i++) mcl_acl_task_data_free(&td[i]);
    mcl_ctx_reset(t->ctx);
    *loss_out = lv;
    return st;
}

mcl_status mcl_acl_train(mcl_ctx *ctx, const mcl_acl_train_cfg *cfg,
                         const mcl_acl_train_opts *opts, mcl_acl_train_result *res, char *err,
                         size_t err_len)
{
    if (!ctx || !opts || !opts->run_dir || (!cfg && !opts->resume))
        return fail(err, err_len, MCL_ERR_NULL, "mcl_acl_train: NULL argument");
    trainer tr;
    memset(&tr, 0, sizeof tr);
    trainer *t = &tr;
    t->opts = opts;
    t->ctx = ctx;
    t->err = err;
    t->err_len = err_len;
    t->best_val = NAN;
    if (strlen(opts->run_dir) >= sizeof t->dir - 32)
        return fail(err, err_len, MCL_ERR_INVALID, "run directory path too long");
    strcpy(t->dir, opts->run_dir);
    char path[MCL_TRAIN_PATH_MAX + 32], e2[768];
    mcl_status st = MCL_OK;
    path_join(path, sizeof path, t->dir, "config.txt");
    if (opts->resume) {
        mcl_acl_train_cfg_default(&t->cfg);
        st = mcl_acl_train_cfg_load(&t->cfg, path, err, err_len);
        for (int i = 0; st == MCL_OK && i < opts->n_overrides; i++)
            st = mcl_acl_train_cfg_parse(&t->cfg, opts->overrides[i], "--set", err, err_len);
        if (st != MCL_OK) return st;
    } else {
        t->cfg = *cfg;
        if (access(path, F_OK) == 0)
            return fail(err, err_len, MCL_ERR_INVALID,
                        "%s already holds a run (config.txt): use --resume to continue it or "
                        "choose another --out",
                        t->dir);
    }
    st = open_run_dir(t);
    if (st == MCL_OK) {
        mcl_ctx_set_seed(ctx, t->cfg.seed);
        logf_(t, "%s run in %s on backend %s", opts->resume ? "resuming" : "starting", t->dir,
              mcl_ctx_backend_name(ctx));
        st = setup(t);
    }
    if (st == MCL_OK && opts->resume) {
        mcl_ckpt_info info;
        path_join(path, sizeof path, t->dir, "last.ckpt");
        st = mcl_acl_load(t->m, path, t->opt, 1, &info, e2, sizeof e2);
        if (st != MCL_OK) fail(err, err_len, st, "%s", e2);
        uint64_t v = 0;
        if (st == MCL_OK && mcl_ckpt_info_counter(&info, "step", &v)) t->step = (int64_t)v;
        if (st == MCL_OK && mcl_ckpt_info_counter(&info, "train_ms", &v)) t->train_ms = (double)v;
        if (st == MCL_OK && mcl_ckpt_info_counter(&info, "best_val_ppm", &v) && v != UINT64_MAX)
            t->best_val = (double)v / 1e6;
        if (st == MCL_OK && mcl_ckpt_info_counter(&info, "chance_step", &v)) t->chance_step = (int64_t)v;
        mcl_ckpt_info_free(&info);
        if (st == MCL_OK) logf_(t, "resumed at step %lld (%.1f s of training so far)", (long long)t->step, t->train_ms / 1e3);
    } else if (st == MCL_OK && t->cfg.init[0]) {
        char note[1400];
        st = mcl_acl_init_from(t->m, t->cfg.init, note, sizeof note, e2, sizeof e2);
        if (st != MCL_OK) fail(err, err_len, st, "train.init: %s", e2);
        else logf_(t, "%s", note);
    }
    if (st == MCL_OK) { /* config.txt: the full resolved config */
        char *text = mcl_acl_train_cfg_to_text(&t->cfg);
        path_join(path, sizeof path, t->dir, "config.txt");
        st = text ? mcl_write_file_atomic(path, text, strlen(text), e2, sizeof e2) : MCL_ERR_OOM;
        if (st != MCL_OK) fail(err, err_len, st, "%s", text ? e2 : "out of memory");
        free(text);
    }
    if (st == MCL_OK) st = open_csv(t, opts->resume);
    if (st == MCL_OK && t->step >= t->cfg.steps)
        logf_(t, "nothing to do: step %lld of train.steps %lld", (long long)t->step, (long long)t->cfg.steps);

    t->t_start = now_s();
    double loss = NAN, t_log = now_s();
    int64_t step_log = t->step;
    const double chance = 1.0 / t->cfg.model.n_way;
    while (st == MCL_OK && t->step < t->cfg.steps) {
        mcl_acl_terms tm;
        st = train_step(t, &loss, &tm);
        if (st != MCL_OK) break;
        t->step++;
        double acc_main = term_acc(&tm, MCL_ACL_TERM_MAIN);
        t->acc_window[t->n_window++ % CHANCE_WINDOW] = acc_main;
        if (!t->chance_step && t->n_window >= CHANCE_WINDOW) {
            double s = 0.0;
            for (int i = 0; i < CHANCE_WINDOW; i++) s += t->acc_window[i];
            if (s / CHANCE_WINDOW > chance + CHANCE_MARGIN) {
                t->chance_step = t->step;
                logf_(t, "step %lld: query accuracy left chance (mean of the last %d steps %.3f > %.3f)",
                      (long long)t->step, CHANCE_WINDOW, s / CHANCE_WINDOW, chance + CHANCE_MARGIN);
            }
        }
        int last = t->step == t->cfg.steps;
        double val = NAN;
        if (t->cfg.val_every > 0 && (t->step % t->cfg.val_every == 0 || last)) {
            st = validate(t, &val);
            if (st != MCL_OK) break;
            logf_(t, "step %lld: validation score %.4f (best %.4f)", (long long)t->step, val, t->best_val);
            if (isnan(t->best_val) || val > t->best_val) {
                t->best_val = val;
                st = save_ckpt(t, "best.ckpt");
                if (st != MCL_OK) break;
            }
        }
        double sps = 0.0;
        if (t->step % t->cfg.log_every == 0 || last || !isnan(val)) {
            double now = now_s();
            sps = now > t_log ? (double)(t->step - step_log) / (now - t_log) : 0.0;
            t_log = now;
            step_log = t->step;
            fprintf(t->csv, "%lld,%.9g,%.6f,%.6f,%.6f,%.9g,%.4f,%.3f,", (long long)t->step, loss,
                    acc_main, term_acc(&tm, MCL_ACL_TERM_ACL), term_acc(&tm, MCL_ACL_TERM_FIRST_SHOT),
                    (double)mcl_optim_last_lr(t->opt), sps, elapsed_ms(t) / 1e3);
            if (!isnan(val)) fprintf(t->csv, "%.6f", val);
            fputc('\n', t->csv);
            fflush(t->csv);
            progress(t, loss, acc_main, sps);
        }
        if (t->step % t->cfg.ckpt_every == 0 || last) st = save_ckpt(t, "last.ckpt");
    }
    if (t->opts->progress) fputc('\n', stderr);
    if (st == MCL_OK && isnan(loss))
        logf_(t, "done: step %lld (nothing left to do), best validation %.4f, %.1f s of training",
              (long long)t->step, t->best_val, elapsed_ms(t) / 1e3);
    else if (st == MCL_OK)
        logf_(t, "done: step %lld, last loss %.6f, best validation %.4f, %.1f s of training",
              (long long)t->step, loss, t->best_val, elapsed_ms(t) / 1e3);
    else
        logf_(t, "stopped: %s", err ? err : "error");
    if (res) {
        res->steps_done = t->step;
        res->last_loss = loss;
        res->best_val = t->best_val;
        res->chance_step = t->chance_step;
        res->train_seconds = elapsed_ms(t) / 1e3;
    }
    trainer_free(t);
    return st;
}
