/* train.c — the model-family harness: config, the training loop, run directory, exact resume.
 * See train.h for the guarantees; a family supplies only its model, data, loss, validation
 * and checkpoint (src/models/<family>/<family>_train.c). */
#define _POSIX_C_SOURCE 200809L
#include "train.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dist.h"
#include "tensor_impl.h"
#include "util.h"

#define CSV_HEADER_MAX 4096 /* metrics.csv's header line                                   */
#define CHANCE_WINDOW 100          /* steps in the running accuracy */
#define CHANCE_MARGIN 0.10         /* "left chance": chance + this  */
#define MAX_CONFIG_BYTES (1u << 20)
#define MAX_STEP UINT64_C(1000000000000)        /* the largest train.steps           */
#define MAX_TRAIN_MS UINT64_C(1000000000000000)
#define MAX_VAL_PPM UINT64_C(1000000000000)

#define fail mcl_errbuf

/* ====================================================================== config */

#define T mcl_train_cfg
static const mcl_key train_keys[] = {
    MCL_KEY_I64("train.steps", T, steps, 0, 1e12, "1000", "total training steps"),
    MCL_KEY_INT("train.batch", T, batch, 1, 4096, "16", "examples (sequences) per step"),
    MCL_KEY_ENUM("train.schedule", T, schedule, "constant|noam", "constant", "learning-rate schedule"),
    MCL_KEY_FLOAT("train.lr", T, lr, 0, 1e3, "1e-3",
                  "constant: the learning rate; noam: the factor (lr = f * width^-0.5 * min(..))"),
    MCL_KEY_I64("train.warmup", T, warmup, 1, 1e12, "5000", "noam warm-up steps"),
    MCL_KEY_FLOAT("train.clip", T, clip, 0, 1e9, "0", "> 0: clip the global gradient norm"),
    MCL_KEY_U64("train.seed", T, seed, "1", "data draws and dropout (the model init has its own seed)"),
    MCL_KEY_I64("train.log_every", T, log_every, 1, 1e12, "10", "a metrics.csv row every n steps"),
    MCL_KEY_I64("train.val_every", T, val_every, 0, 1e12, "200", "validation every n steps (0 = never)"),
    MCL_KEY_I64("train.val_batches", T, val_batches, 1, 1e6, "8", "validation batches"),
    MCL_KEY_I64("train.ckpt_every", T, ckpt_every, 1, 1e12, "200", "last.ckpt every n steps (and at the end)"),
    MCL_KEY_STR("train.init", T, init, "", "\"\" or a checkpoint to start from (what fits is copied)"),
    MCL_KEY_INT("train.parts", T, parts, 0, 4096, "0",
                "compute the batch in this many parts, gradients added in part order (0 = one "
                "per MPI rank; N ranks = 1 process with N parts, bit for bit)"),
    MCL_KEY_I64("train.dist_check", T, dist_check, 0, 1e12, "0",
                "MPI: every n steps, check that all ranks hold the same parameters (0 = only at "
                "the start)"),
};
#undef T
#define N_TRAIN_KEYS ((int)(sizeof train_keys / sizeof train_keys[0]))

const mcl_key *mcl_train_keys(int *n)
{
    if (n) *n = N_TRAIN_KEYS;
    return train_keys;
}

mcl_status mcl_run_cfg_init(mcl_run_cfg *c, const mcl_family *fam, char *err, size_t len)
{
    memset(c, 0, sizeof *c);
    if (!fam) return fail(err, len, MCL_ERR_NULL, "no model family");
    c->family = fam;
    c->fcfg = calloc(1, fam->cfg_size);
    if (!c->fcfg) return fail(err, len, MCL_ERR_OOM, "out of memory");
    mcl_status st = mcl_keys_defaults(train_keys, N_TRAIN_KEYS, &c->train, err, len);
    for (int g = 0; st == MCL_OK && g < fam->n_groups; g++)
        st = mcl_keys_defaults(fam->groups[g]->keys, fam->groups[g]->n,
                               (char *)c->fcfg + fam->groups[g]->off, err, len);
    if (st == MCL_OK && fam->cfg_default) fam->cfg_default(c->fcfg, &c->train);
    if (st != MCL_OK) mcl_run_cfg_free(c);
    return st;
}

void mcl_run_cfg_free(mcl_run_cfg *c)
{
    if (!c) return;
    free(c->fcfg);
    c->fcfg = NULL;
}

mcl_status mcl_run_cfg_copy(mcl_run_cfg *dst, const mcl_run_cfg *src)
{
    *dst = *src;
    dst->fcfg = malloc(src->family->cfg_size);
    if (!dst->fcfg) return MCL_ERR_OOM;
    memcpy(dst->fcfg, src->fcfg, src->family->cfg_size);
    return MCL_OK;
}

mcl_status mcl_run_cfg_set(mcl_run_cfg *c, const char *key, const char *value, char *err,
                           size_t len)
{
    if (!c || !c->family || !key || !value) return fail(err, len, MCL_ERR_NULL, "NULL argument");
    const mcl_family *fam = c->family;
    if (mcl_keys_find(train_keys, N_TRAIN_KEYS, key))
        return mcl_keys_set(train_keys, N_TRAIN_KEYS, &c->train, key, value, err, len);
    for (int g = 0; g < fam->n_groups; g++) {
        const mcl_key_group *gr = fam->groups[g];
        size_t pl = strlen(gr->prefix);
        if (strncmp(key, gr->prefix, pl) != 0) continue;
        const mcl_key *k = mcl_keys_find(gr->keys, gr->n, key + pl);
        if (!k) continue;
        mcl_status st = mcl_key_set(k, (char *)c->fcfg + gr->off, value, err, len);
        if (st != MCL_OK && pl > 0 && err && len > pl && strncmp(err, k->name, strlen(k->name)) == 0) {
            /* the message names the row ("hidden = ..."): give the full key ("model.hidden") */
            char *m = malloc(len);
            if (m) {
                snprintf(m, len, "%s%s", gr->prefix, err);
                memcpy(err, m, len);
                free(m);
            }
        }
        return st;
    }
    return fail(err, len, MCL_ERR_INVALID,
                "unknown key '%s' (`metacl train %s --help` lists the keys)", key, fam->kind);
}

static mcl_status set_one(void *obj, const char *key, const char *value, char *msg, size_t n)
{
    return mcl_run_cfg_set(obj, key, value, msg, n);
}

mcl_status mcl_run_cfg_parse(mcl_run_cfg *c, const char *text, const char *what, char *err,
                             size_t len)
{
    if (!c || !c->family || !text) return fail(err, len, MCL_ERR_NULL, "NULL argument");
    mcl_run_cfg t; /* all or nothing */
    if (mcl_run_cfg_copy(&t, c) != MCL_OK) return fail(err, len, MCL_ERR_OOM, "out of memory");
    mcl_status st = mcl_kv_parse(text, what, set_one, &t, err, len);
    if (st == MCL_OK) {
        c->train = t.train;
        memcpy(c->fcfg, t.fcfg, c->family->cfg_size);
    }
    mcl_run_cfg_free(&t);
    return st;
}

mcl_status mcl_run_cfg_load(mcl_run_cfg *c, const char *path, char *err, size_t len)
{
    char *text = NULL;
    mcl_status st = mcl_read_text_file(path, MAX_CONFIG_BYTES, &text, err, len);
    if (st == MCL_OK) st = mcl_run_cfg_parse(c, text, path, err, len);
    free(text);
    return st;
}

mcl_status mcl_family_cfg_from_ckpt(const mcl_family *fam, const char *path, void *fcfg, mcl_train_cfg *t, char *err,
                                    size_t len)
{
    if (!fam || !path || !fcfg) return fail(err, len, MCL_ERR_NULL, "NULL argument");
    mcl_ckpt_info info;
    memset(&info, 0, sizeof info);
    mcl_status st = mcl_ckpt_read_info(path, &info, err, len);
    if (st != MCL_OK) return st;
    if (strcmp(info.model_kind, fam->kind) != 0) {
        st = fail(err, len, MCL_ERR_FORMAT, "checkpoint '%s' holds a '%s' model, not %s", path, info.model_kind,
                  fam->kind);
    } else {
        mcl_run_cfg rc;
        st = mcl_run_cfg_init(&rc, fam, err, len);
        if (st == MCL_OK) {
            st = mcl_run_cfg_parse(&rc, info.config ? info.config : "", path, err, len);
            if (st == MCL_OK && fam->ckpt_floats) { /* before anything is built for it */
                const double need = fam->ckpt_floats(rc.fcfg, &rc.train) * sizeof(float);
                char nb[32], hb[32];
                if (need > (double)info.params_len)
                    st = fail(err, len, MCL_ERR_FORMAT,
                              "checkpoint '%s': its config asks for %s of tensors, more than its "
                              "params section holds (%s): corrupt checkpoint", path,
                              mcl_fmt_bytes(mcl_budget_bytes(need), nb, sizeof nb),
                              mcl_fmt_bytes(info.params_len, hb, sizeof hb));
                else
                    st = mcl_check_budget(mcl_budget_bytes(need), "its model's tensors", err, len);
            }
            if (st == MCL_OK) {
                memcpy(fcfg, rc.fcfg, fam->cfg_size);
                if (t) *t = rc.train;
            }
            mcl_run_cfg_free(&rc);
        }
    }
    mcl_ckpt_info_free(&info);
    return st;
}

mcl_status mcl_run_cfg_check(const mcl_run_cfg *c, char *err, size_t len)
{
    if (!c || !c->family) return fail(err, len, MCL_ERR_NULL, "NULL argument");
    if (c->family->cfg_check) {
        mcl_status st = c->family->cfg_check(c->fcfg, &c->train, err, len);
        if (st != MCL_OK) return st;
    }
    if (c->train.schedule == 0 && !(c->train.lr > 0.0f))
        return fail(err, len, MCL_ERR_INVALID, "train.lr must be > 0");
    if (c->train.parts > c->train.batch)
        return fail(err, len, MCL_ERR_INVALID,
                    "train.parts %d is more than train.batch %d (a part holds at least one sequence)",
                    c->train.parts, c->train.batch);
    return MCL_OK;
}

char *mcl_run_cfg_to_text(const mcl_run_cfg *c)
{
    const mcl_family *fam = c->family;
    char *parts[16] = {0};
    size_t total = 1;
    int n = 0, ok = fam->n_groups < 15;
    for (int g = 0; ok && g < fam->n_groups; g++, n++) {
        const mcl_key_group *gr = fam->groups[g];
        parts[n] = mcl_keys_to_text(gr->keys, gr->n, (const char *)c->fcfg + gr->off, gr->prefix);
        ok = parts[n] != NULL;
    }
    if (ok) ok = (parts[n++] = mcl_keys_to_text(train_keys, N_TRAIN_KEYS, &c->train, NULL)) != NULL;
    for (int i = 0; i < n; i++) total += parts[i] ? strlen(parts[i]) : 0;
    char *s = ok ? malloc(total) : NULL;
    if (s) {
        s[0] = 0;
        for (int i = 0; i < n; i++) strcat(s, parts[i]);
    }
    for (int i = 0; i < n; i++) free(parts[i]);
    return s;
}

void mcl_run_cfg_print_help(FILE *f, const mcl_family *fam)
{
    for (int g = 0; g < fam->n_groups; g++)
        mcl_keys_print_help(f, fam->groups[g]->keys, fam->groups[g]->n, fam->groups[g]->prefix);
    mcl_keys_print_help(f, train_keys, N_TRAIN_KEYS, NULL);
}

/* ====================================================================== the run */

struct mcl_train_log {
    FILE *file;   /* log.txt */
    FILE *echo;   /* the caller's copy, may be NULL */
    int progress; /* a progress line is on stderr: clear it first */
};

void mcl_train_logf(mcl_train_log *log, const char *fmt, ...)
{
    char line[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (!log) return;
    if (log->file) {
        fprintf(log->file, "%s\n", line);
        fflush(log->file);
    }
    if (log->echo) {
        if (log->progress) fputs("\r\033[K", stderr);
        fprintf(log->echo, "%s\n", line);
        fflush(log->echo);
    }
}

typedef struct runner {
    mcl_run_cfg cfg;
    const mcl_family *fam;
    const mcl_train_opts *opts;
    mcl_ctx *ctx;
    void *fs; /* the family's state */
    mcl_optim *opt;
    mcl_train_log log;
    FILE *csv;
    int n_valcols;                                  /* the family's validation columns */
    const char *valcol[MCL_TRAIN_MAX_VAL_COLUMNS];
    char dir[MCL_TRAIN_PATH_MAX];
    int64_t step;    /* steps done */
    double train_ms; /* before this process */
    double t_start;  /* this process */
    double best_val;
    int64_t chance_step;
    double acc_window[CHANCE_WINDOW];
    int64_t n_window;
    int made_dir;   /* this process created the run directory */
    int lock_fd;    /* rank 0: the run directory's lock (mcl_dir_lock), else -1 */
    int no_ckpt;    /* resuming a run that has no checkpoint yet */
    /* data parallelism (mcl_train_part, dist.h) */
    int rank, size;   /* this process in the job                                    */
    int parts;        /* P                                                           */
    int p0, p1;       /* this rank's parts [p0, p1)                                  */
    float *gbuf;      /* P > 1: the gradients of this rank's parts, then of all      */
    int64_t gn;       /* floats in gbuf                                              */
    int scope;        /* error_scope of a failure                                    */
    char *err;
    size_t err_len;
} runner;

static int path_join(char *out, size_t n, const char *dir, const char *name)
{
    return snprintf(out, n, "%s/%s", dir, name) >= (int)n;
}

static double elapsed_ms(const runner *r) { return r->train_ms + (mcl_now_s() - r->t_start) * 1e3; }

static mcl_status save_ckpt(runner *r, const char *name)
{
    char path[MCL_TRAIN_PATH_MAX + 32];
    if (path_join(path, sizeof path, r->dir, name))
        return fail(r->err, r->err_len, MCL_ERR_INVALID, "run directory path too long");
    mcl_ckpt_counter cn[5 + CHANCE_WINDOW];
    memset(cn, 0, sizeof cn);
    strcpy(cn[0].name, "step");
    cn[0].value = (uint64_t)r->step;
    strcpy(cn[1].name, "train_ms");
    cn[1].value = (uint64_t)llround(elapsed_ms(r));
    strcpy(cn[2].name, "best_val_ppm");
    cn[2].value = isnan(r->best_val) ? UINT64_MAX : (uint64_t)llround(r->best_val * 1e6);
    strcpy(cn[3].name, "chance_step");
    cn[3].value = (uint64_t)r->chance_step;
    int n = 4;
    /* until the run has left chance: the window of the last accuracies (track_chance), oldest
     * first, each a double's bits, and how many there are; a resumed run needs them to decide
     * when it leaves chance as the uninterrupted one does */
    const int64_t w = r->n_window < CHANCE_WINDOW ? r->n_window : CHANCE_WINDOW;
    const double chance = r->fam->chance ? r->fam->chance(r->fs) : 0.0;
    if (r->chance_step == 0 && w > 0 && chance > 0) { /* tracked, not left yet */
        strcpy(cn[n].name, "chance_n");
        cn[n++].value = (uint64_t)w;
        for (int64_t i = 0; i < w; i++) {
            const double v = r->acc_window[(r->n_window - w + i) % CHANCE_WINDOW];
            snprintf(cn[n].name, sizeof cn[n].name, "chance.%lld", (long long)i);
            memcpy(&cn[n++].value, &v, sizeof v);
        }
    }
    char e2[768];
    mcl_status st = r->fam->save(r->fs, path, r->opt, cn, n, e2, sizeof e2);
    if (st != MCL_OK) return fail(r->err, r->err_len, st, "%s", e2);
    return MCL_OK;
}

/* Keep the metrics.csv rows of steps <= upto (resume): atomic rewrite. */
/* metrics.csv's header line (with its '\n') into buf. */
static void csv_header(const runner *r, char *buf, size_t n)
{
    size_t at = (size_t)snprintf(buf, n, "step,loss");
    for (int i = 0; i < r->fam->n_metrics && at < n; i++) at += (size_t)snprintf(buf + at, n - at, ",%s", r->fam->metric_names[i]);
    if (at < n) at += (size_t)snprintf(buf + at, n - at, ",lr,steps_per_s,train_s,val_score");
    for (int i = 0; i < r->n_valcols && at < n; i++) at += (size_t)snprintf(buf + at, n - at, ",%s", r->valcol[i]);
    if (at < n) snprintf(buf + at, n - at, "\n");
}

/* The rows up to step `upto`, under the current header (a run begun by an older version
 * gets the columns added since; its earlier rows simply lack them). */
static mcl_status truncate_csv(runner *r, const char *path, int64_t upto)
{
    char *text = NULL;
    if (access(path, F_OK) != 0) return MCL_OK;
    mcl_status st = mcl_read_text_file(path, (size_t)1 << 30, &text, r->err, r->err_len);
    if (st != MCL_OK) return st;
    size_t n = strlen(text), keep = 0;
    for (size_t at = 0; at < n;) {
        char *e = strchr(text + at, '\n');
        size_t next = e ? (size_t)(e - text) + 1 : n;
        long long step = -1;
        /* a last line without its '\n' was torn by a crash: dropped, or the next row would
         * be appended to it */
        if (e && (at == 0 || (sscanf(text + at, "%lld,", &step) == 1 && step >= 0 && step <= upto))) {
            memmove(text + keep, text + at, next - at);
            keep += next - at;
        }
        at = next;
    }
    char hdr[CSV_HEADER_MAX], e2[512];
    csv_header(r, hdr, sizeof hdr);
    const char *nl = keep ? memchr(text, '\n', keep) : NULL;
    const size_t h0 = nl ? (size_t)(nl - text) + 1 : 0, hl = strlen(hdr); /* the old header */
    char *out = malloc(hl + keep - h0 + 1);
    if (!out) {
        free(text);
        return fail(r->err, r->err_len, MCL_ERR_OOM, "out of memory (metrics.csv)");
    }
    memcpy(out, hdr, hl);
    memcpy(out + hl, text + h0, keep - h0);
    st = mcl_write_file_atomic(path, out, hl + keep - h0, e2, sizeof e2);
    free(out);
    free(text);
    if (st != MCL_OK) return fail(r->err, r->err_len, st, "%s", e2);
    return MCL_OK;
}

/* Rank 0, before it reads or writes anything in the run directory: make it (a fresh run)
 * and take its lock, so that a second process writing the same directory (two runs with one
 * --out, a --resume of a run still going) is refused rather than interleaving its files. */
static mcl_status lock_run_dir(runner *r, int resume)
{
    char e2[768];
    if (!resume) {
        r->made_dir = access(r->dir, F_OK) != 0;
        mcl_status st = mcl_mkdir_p(r->dir, e2, sizeof e2);
        if (st != MCL_OK) return fail(r->err, r->err_len, st, "run directory: %s", e2);
    } else if (access(r->dir, F_OK) != 0) {
        return MCL_OK; /* reading its config.txt says what is wrong */
    }
    mcl_status st = mcl_dir_lock(r->dir, &r->lock_fd, e2, sizeof e2);
    if (st != MCL_OK) return fail(r->err, r->err_len, st, "%s", e2);
    return MCL_OK;
}

static mcl_status open_run_dir(runner *r)
{
    char path[MCL_TRAIN_PATH_MAX + 32];
    if (path_join(path, sizeof path, r->dir, "log.txt"))
        return fail(r->err, r->err_len, MCL_ERR_INVALID, "run directory path too long");
    char e2[4400];
    mcl_status st = mcl_fopen_append(path, 0, &r->log.file, e2, sizeof e2);
    if (st != MCL_OK) return fail(r->err, r->err_len, st, "%s", e2);
    return MCL_OK;
}

static mcl_status open_csv(runner *r, int resume)
{
    char path[MCL_TRAIN_PATH_MAX + 32];
    path_join(path, sizeof path, r->dir, "metrics.csv");
    r->n_valcols = r->fam->val_columns ? r->fam->val_columns(r->fs, r->valcol, MCL_TRAIN_MAX_VAL_COLUMNS) : 0;
    if (r->n_valcols > MCL_TRAIN_MAX_VAL_COLUMNS) r->n_valcols = MCL_TRAIN_MAX_VAL_COLUMNS;
    if (resume) {
        mcl_status st = truncate_csv(r, path, r->step);
        if (st != MCL_OK) return st;
    }
    int fresh = access(path, F_OK) != 0 || !resume;
    char e2[4400];
    mcl_status st = mcl_fopen_append(path, fresh, &r->csv, e2, sizeof e2);
    if (st != MCL_OK) return fail(r->err, r->err_len, st, "%s", e2);
    if (fresh) {
        char hdr[CSV_HEADER_MAX];
        csv_header(r, hdr, sizeof hdr);
        fputs(hdr, r->csv);
    }
    fflush(r->csv);
    return MCL_OK;
}

static void progress(runner *r, double loss, double acc, double sps)
{
    if (!r->opts->progress) return;
    double left = sps > 0 ? (double)(r->cfg.train.steps - r->step) / sps : 0.0;
    fprintf(stderr, "\r\033[Kstep %lld/%lld  loss %.4f  acc %.3f  %.2f steps/s  ETA %dm%02ds",
            (long long)r->step, (long long)r->cfg.train.steps, loss, acc, sps, (int)(left / 60),
            (int)fmod(left, 60.0));
    fflush(stderr);
}

static mcl_status setup(runner *r)
{
    const mcl_train_cfg *t = &r->cfg.train;
    char e2[768];
    mcl_status st = mcl_run_cfg_check(&r->cfg, e2, sizeof e2);
    if (st != MCL_OK) return fail(r->err, r->err_len, st, "config: %s", e2);
    if (r->fam->train_bytes) { /* before anything is allocated */
        st = mcl_check_budget(mcl_budget_bytes(r->fam->train_bytes(r->cfg.fcfg, t)),
                              "training this model (parameters, gradients, optimizer state, "
                              "activations)", e2, sizeof e2);
        if (st != MCL_OK) return fail(r->err, r->err_len, st, "%s", e2);
    }
    st = r->fam->create(r->ctx, r->cfg.fcfg, t, &r->log, &r->fs, r->err, r->err_len);
    if (st != MCL_OK) return st;
    mcl_optim_config oc;
    memset(&oc, 0, sizeof oc);
    oc.kind = MCL_OPTIM_ADAM;
    oc.beta1 = 0.9f;
    oc.beta2 = 0.999f;
    oc.eps = 1e-8f;
    oc.clip_norm = t->clip;
    oc.sched.kind = t->schedule ? MCL_SCHED_NOAM : MCL_SCHED_CONSTANT;
    oc.sched.base_lr = t->lr;
    oc.sched.warmup = t->warmup;
    if (r->fam->optim_config) r->fam->optim_config(r->fs, &oc);
    if (mcl_optim_create(r->ctx, &oc, r->fam->params(r->fs), &r->opt) != MCL_OK)
        return fail(r->err, r->err_len, MCL_ERR_INVALID, "optimizer: %s", mcl_ctx_error(r->ctx));
    return MCL_OK;
}

/* ---------------------------------------------------------------------- data parallelism */

/* Floats in all the parameters (= their gradients). */
static int64_t param_floats(runner *r)
{
    mcl_params *ps = r->fam->params(r->fs);
    int64_t n = 0;
    for (int i = 0; i < mcl_params_count(ps); i++) n += mcl_tensor_numel(mcl_params_get(ps, i));
    return n;
}

/* The gradients of every parameter, in parameter order, to buf (add: buf += them) or, with
 * to_device, from buf back into the gradient tensors. A parameter no gradient reached is 0
 * (and stays without one). */
static mcl_status grads_move(runner *r, float *buf, float *tmp, int add, int to_device)
{
    mcl_params *ps = r->fam->params(r->fs);
    int64_t at = 0;
    mcl_status st = MCL_OK;
    for (int i = 0; i < mcl_params_count(ps) && st == MCL_OK; i++) {
        mcl_tensor *t = mcl_params_get(ps, i), *g = mcl_tensor_grad(t);
        const int64_t n = mcl_tensor_numel(t);
        if (to_device) {
            if (g) st = mcl_tensor_write(g, buf + at, n);
        } else if (!g) {
            if (!add) memset(buf + at, 0, (size_t)n * sizeof *buf);
        } else if (!add) {
            st = mcl_tensor_read(g, buf + at, n);
        } else {
            st = mcl_tensor_read(g, tmp, n);
            for (int64_t k = 0; st == MCL_OK && k < n; k++) buf[at + k] += tmp[k];
        }
        at += n;
    }
    if (st != MCL_OK) fail(r->err, r->err_len, st, "gradients: %s", mcl_ctx_error(r->ctx));
    return st;
}

/* A hash of every parameter's bits (all ranks must agree). Several ranks: between steps,
 * so gbuf (P >= N > 1) is free to hold one tensor. */
static mcl_status params_hash(runner *r, uint64_t *h)
{
    mcl_params *ps = r->fam->params(r->fs);
    float *buf = r->gbuf;
    mcl_status st = MCL_OK;
    *h = MCL_FNV_START;
    for (int i = 0; i < mcl_params_count(ps) && st == MCL_OK; i++) {
        mcl_tensor *t = mcl_params_get(ps, i);
        const int64_t n = mcl_tensor_numel(t);
        st = mcl_tensor_read(t, buf, n);
        if (st == MCL_OK) *h = mcl_fnv1a(*h, buf, (size_t)n * sizeof *buf);
    }
    if (st != MCL_OK) fail(r->err, r->err_len, st, "parameters: %s", mcl_ctx_error(r->ctx));
    return st;
}

/* Every rank must hold rank 0's parameters (at the start and every train.dist_check steps). */
static mcl_status check_params_agree(runner *r)
{
    uint64_t h = 0;
    int diff = -1;
    mcl_status st = params_hash(r, &h);
    if (st == MCL_OK) st = mcl_dist_compare_u64(h, &diff, r->err, r->err_len);
    if (st == MCL_OK && diff >= 0) {
        r->scope = MCL_TRAIN_ERR_ALL;
        st = fail(r->err, r->err_len, MCL_ERR_STATE,
                  "after step %lld the parameters of rank %d differ from rank 0's (hash "
                  "%016llx on rank %d): the ranks have diverged",
                  (long long)r->step, diff, (unsigned long long)h, r->rank);
    }
    return st;
}

/* The forward pass's own state (running estimates) of part 0's rank, to every rank. After
 * the step, so gbuf is free (the buffers are parameters: at most gn floats each). */
static mcl_status share_buffers(runner *r)
{
    mcl_tensor *b[16];
    const int n = r->fam->buffers ? r->fam->buffers(r->fs, b, 16) : 0;
    float *h = r->gbuf;
    mcl_status st = MCL_OK;
    for (int i = 0; i < n && st == MCL_OK; i++) {
        const int64_t k = mcl_tensor_numel(b[i]);
        st = r->rank == 0 ? mcl_tensor_read(b[i], h, k) : MCL_OK;
        if (st != MCL_OK) break;
        st = mcl_dist_bcast(h, (size_t)k * sizeof *h, 0, r->err, r->err_len);
        if (st != MCL_OK) return st; /* message in err */
        if (r->rank != 0) st = mcl_tensor_write(b[i], h, k);
    }
    if (st != MCL_OK) fail(r->err, r->err_len, st, "running estimates: %s", mcl_ctx_error(r->ctx));
    return st;
}

/* The random stream of part p of step s when the batch is in parts (dropout): a function of
 * (s, p) alone, so the rank that computes the part does not matter (a part's calls draw the
 * streams after it, 4096 of them before the next part's). */
static uint64_t part_stream(int64_t s, int p) { return ((uint64_t)s << 24) | ((uint64_t)p << 12); }

/* Part p of the batch (train.h). */
static mcl_train_part part_of(const runner *r, int p)
{
    const int64_t B = r->cfg.train.batch;
    const mcl_train_part part = {B * p / r->parts, B * (p + 1) / r->parts, p, r->parts};
    return part;
}

/* Loss, backward of part p of step s; *lv = its (weighted) loss, m = its metrics. With
 * `deferred` (one part, train.h "no stalls"), *lv and the family's step_metrics are filled
 * only when the caller has finished the queue (the read of *lv is queued here). */
static mcl_status run_part(runner *r, int64_t s, int p, float *lv, double *m, int deferred, int frozen)
{
    const int64_t B = r->cfg.train.batch;
    const mcl_train_part part = part_of(r, p);
    mcl_tensor *loss = NULL;
    *lv = NAN;
    if (r->parts > 1) mcl_ctx_set_stream(r->ctx, part_stream(s, p));
    if (frozen) mcl_no_grad_begin(r->ctx); /* a frozen step: no tape, no backward */
    mcl_status st = r->fam->step_loss(r->fs, s, &part, &loss, m, r->err, r->err_len);
    if (frozen) mcl_no_grad_end(r->ctx);
    if (st != MCL_OK) return st; /* the family's message */
    if (r->parts > 1) /* the part's share of the batch mean */
        loss = mcl_scale(r->ctx, loss, (float)(part.hi - part.lo) / (float)B);
    st = loss ? mcl_tensor_read_async(loss, lv, 1)
              : (mcl_ctx_status(r->ctx) != MCL_OK ? mcl_ctx_status(r->ctx) : MCL_ERR_NULL);
#ifdef MCL_TEST_HOOKS
    /* test hook (tests/test-stalls.c): METACL_TEST_STALL=1 reads the loss before backward, the
     * stall the harness used to have; the stall test must catch it */
    const char *stall = getenv("METACL_TEST_STALL");
    if (st == MCL_OK && stall && strcmp(stall, "1") == 0) st = mcl_tensor_read(loss, lv, 1);
#endif
    if (st == MCL_OK && !frozen) st = mcl_backward(r->ctx, loss);
    if (st == MCL_OK && !deferred) { /* several parts: the part's loss and metrics now */
        st = mcl_ctx_finish(r->ctx);
        if (st == MCL_OK && r->fam->step_metrics) r->fam->step_metrics(r->fs, m);
    }
    if (st != MCL_OK)
        fail(r->err, r->err_len, st, "step %lld: %s", (long long)s, mcl_ctx_error(r->ctx));
    return st;
}

/* One training step: *loss_out = its loss; *stop_out = the step ends the run (an interrupt
 * seen by any rank); a status (message in r->err, scope in r->scope) on failure. */
static mcl_status train_step(runner *r, double *loss_out, double *metrics, int *stop_out)
{
    const int64_t s = r->step + 1;
    const int nm = r->fam->n_metrics;
    mcl_status st = MCL_OK;
    double sc[MCL_TRAIN_MAX_METRICS + 3]; /* loss, metrics, failed, stop: summed over ranks */
    for (int i = 0; i < nm + 3; i++) sc[i] = 0.0;
    r->scope = MCL_TRAIN_ERR_LOCAL;
    /* one part: the loss and metrics are read once, after the optimizer step (train.h) */
    const int deferred = r->parts == 1 && r->size == 1;
    const int frozen = r->fam->frozen && r->fam->frozen(r->fs, s); /* no update (train.h) */
    double m[MCL_TRAIN_MAX_METRICS];
    float lv = NAN;
    for (int p = r->p0; p < r->p1 && st == MCL_OK; p++) {
        const mcl_train_part part = part_of(r, p);
        const double w = (double)(part.hi - part.lo) / (double)r->cfg.train.batch;
        lv = NAN;
        for (int i = 0; i < MCL_TRAIN_MAX_METRICS; i++) m[i] = NAN;
        mcl_optim_zero_grad(r->opt);
        st = run_part(r, s, p, &lv, m, deferred, frozen);
#ifdef MCL_TEST_HOOKS
        /* test hook (tests/test-mpi.sh): rank METACL_TEST_FAIL_RANK fails at step
         * METACL_TEST_FAIL_STEP as a device or data error would */
        const char *fr = getenv("METACL_TEST_FAIL_RANK"), *fstep = getenv("METACL_TEST_FAIL_STEP");
        if (st == MCL_OK && fr && fstep && atoi(fr) == r->rank && atoll(fstep) == s)
            st = fail(r->err, r->err_len, MCL_ERR_BACKEND, "step %lld: test hook: a failure on rank %d",
                      (long long)s, r->rank);
#endif
        if (st == MCL_OK && r->parts > 1 && !frozen) st = grads_move(r, r->gbuf, r->gbuf + r->gn, p > r->p0, 0);
        if (r->fam->step_end) r->fam->step_end(r->fs);
        if (r->parts > 1) mcl_ctx_reset(r->ctx);
        sc[0] = p == r->p0 ? (double)lv : sc[0] + (double)lv; /* in part order */
        for (int i = 0; i < nm; i++) sc[1 + i] = p == r->p0 ? w * m[i] : sc[1 + i] + w * m[i];
    }
    if (r->size > 1) { /* agreement: losses, metrics, failures and interrupts of every rank */
        char e2[512];
        sc[nm + 1] = st != MCL_OK;
        sc[nm + 2] = r->opts->stop && *r->opts->stop;
        mcl_status cs = mcl_dist_sum_f64(sc, nm + 3, e2, sizeof e2);
        if (cs != MCL_OK) return fail(r->err, r->err_len, cs, "%s", e2);
        if (st != MCL_OK) return st; /* this rank's own error */
        if (sc[nm + 1] > 0) {
            r->scope = MCL_TRAIN_ERR_OTHER;
            return fail(r->err, r->err_len, MCL_ERR_STATE, "step %lld: another rank failed",
                        (long long)s);
        }
        *stop_out = sc[nm + 2] > 0;
    } else {
        *stop_out = r->opts->stop && *r->opts->stop;
    }
    if (st == MCL_OK && r->parts > 1 && !frozen) {
        st = mcl_dist_sum_f32(r->gbuf, r->gn, r->err, r->err_len);
        if (st == MCL_OK) st = grads_move(r, r->gbuf, NULL, 0, 1);
    }
    int stepped = 0, finished = 0;
    if (deferred && st == MCL_OK) { /* the optimizer step, then the one wait of the step */
        if (!frozen) st = mcl_optim_step(r->opt);
        if (st == MCL_OK) st = mcl_ctx_finish(r->ctx), finished = 1;
        if (st != MCL_OK) fail(r->err, r->err_len, st, "step %lld: %s", (long long)s, mcl_ctx_error(r->ctx));
        if (st == MCL_OK && r->fam->step_metrics) r->fam->step_metrics(r->fs, m);
        sc[0] = (double)lv;
        for (int i = 0; i < nm; i++) sc[1 + i] = m[i];
        stepped = 1;
    }
    double lv_sum = sc[0];
    for (int i = 0; i < nm; i++) metrics[i] = sc[1 + i];
#ifdef MCL_TEST_HOOKS
    /* test hook (tests/test-train-cli.sh): pretend step METACL_TEST_NAN_STEP's loss is NaN */
    const char *nan_step = getenv("METACL_TEST_NAN_STEP");
    if (nan_step && atoll(nan_step) == s) lv_sum = NAN;
#endif
    if (st == MCL_OK && !isfinite(lv_sum)) {
        r->scope = MCL_TRAIN_ERR_ALL; /* the same sum on every rank */
        st = fail(r->err, r->err_len, MCL_ERR_INVALID,
                  "step %lld: the loss is %g: training stopped (the last good checkpoint, step "
                  "%lld or earlier, is kept)",
                  (long long)s, lv_sum, (long long)r->step);
    } else if (st == MCL_OK && !stepped && !frozen) {
        st = mcl_optim_step(r->opt);
        if (st != MCL_OK) fail(r->err, r->err_len, st, "step %lld: %s", (long long)s, mcl_ctx_error(r->ctx));
    }
    if (st == MCL_OK && r->size > 1) st = share_buffers(r);
    if (deferred && !finished) mcl_ctx_finish(r->ctx); /* a failed step: the queued read of lv lands first */
    mcl_ctx_reset(r->ctx);
    *loss_out = lv_sum;
    return st;
}

/* The optimizer updates a parameter once a gradient has reached it (its gradient tensor
 * exists from then on, zeroed before each step); one that no gradient reached is left alone.
 * Which parameters were reached is state of the uninterrupted process: on resume, every
 * parameter whose optimizer state is not all zero (a gradient reached it) gets its zero
 * gradient back, so that a step that does not reach it (a fast-weight layer with no write in
 * a window) still moves it as the uninterrupted run does (Adam's momentum). */
static mcl_status restore_reached(runner *r)
{
    mcl_params *ps = r->fam->params(r->fs);
    float *h = NULL;
    int64_t cap = 0;
    mcl_status st = MCL_OK;
    for (int i = 0; i < mcl_params_count(ps) && st == MCL_OK; i++) {
        mcl_tensor *t = mcl_params_get(ps, i);
        if (mcl_tensor_grad(t)) continue;
        int reached = 0;
        for (int slot = 0; slot < 2 && !reached && st == MCL_OK; slot++) {
            mcl_tensor *s = mcl_optim_state(r->opt, i, slot);
            const int64_t n = s ? mcl_tensor_numel(s) : 0;
            if (n == 0) continue;
            if (n > cap) {
                float *p = realloc(h, (size_t)n * sizeof *h);
                if (!p) {
                    st = MCL_ERR_OOM;
                    break;
                }
                h = p;
                cap = n;
            }
            st = mcl_tensor_read(s, h, n);
            for (int64_t k = 0; st == MCL_OK && k < n && !reached; k++) reached = h[k] != 0.0f;
        }
        if (st == MCL_OK && reached) st = mcl_tensor_grad_zeros(t);
    }
    free(h);
    if (st != MCL_OK)
        return fail(r->err, r->err_len, st, "resume: the parameters' gradients: %s", mcl_ctx_error(r->ctx));
    return MCL_OK;
}

/* The window of track_chance from the counters save_ckpt wrote (none: an empty window, as
 * in a run that has left chance or a checkpoint of an older metacl). A value must be a
 * fraction (in [0, 1]) or NaN (a step without the metric). */
static mcl_status restore_chance_window(runner *r, const mcl_ckpt_info *info, const char *path)
{
    uint64_t n = 0;
    r->n_window = 0;
    if (!mcl_ckpt_info_counter(info, "chance_n", &n)) return MCL_OK;
    if (n > CHANCE_WINDOW)
        return fail(r->err, r->err_len, MCL_ERR_FORMAT,
                    "%s: counter chance_n = %llu is out of range (at most %d): corrupt checkpoint", path,
                    (unsigned long long)n, CHANCE_WINDOW);
    for (uint64_t i = 0; i < n; i++) {
        char nm[32];
        uint64_t bits;
        double v;
        snprintf(nm, sizeof nm, "chance.%llu", (unsigned long long)i);
        if (!mcl_ckpt_info_counter(info, nm, &bits))
            return fail(r->err, r->err_len, MCL_ERR_FORMAT, "%s: counter %s missing: corrupt checkpoint", path, nm);
        memcpy(&v, &bits, sizeof v);
        if (!isnan(v) && !(v >= 0.0 && v <= 1.0))
            return fail(r->err, r->err_len, MCL_ERR_FORMAT,
                        "%s: counter %s = %g is not an accuracy: corrupt checkpoint", path, nm, v);
        r->acc_window[i] = v;
    }
    r->n_window = (int64_t)n;
    return MCL_OK;
}

static mcl_status resume_from_ckpt(runner *r)
{
    char path[MCL_TRAIN_PATH_MAX + 32], e2[768];
    mcl_ckpt_info info;
    path_join(path, sizeof path, r->dir, "last.ckpt");
    if (access(path, F_OK) != 0 && errno == ENOENT) {
        r->no_ckpt = 1;
        mcl_train_logf(&r->log, "no last.ckpt yet: the run starts again from step 0");
        return MCL_OK;
    }
    memset(&info, 0, sizeof info);
    mcl_status st = r->fam->load(r->fs, path, r->opt, &info, e2, sizeof e2);
    if (st != MCL_OK) {
        /* what the file held (config, counters) is read before the family refuses it */
        mcl_ckpt_info_free(&info);
        return fail(r->err, r->err_len, st, "%s", e2);
    }
    /* Every counter is checked against the range a run can produce before it is used: a
     * corrupt or crafted file is refused, never resumed "at step -9223372036854775808". */
    static const struct {
        const char *name;
        uint64_t max;
    } lim[] = {
        {"step", MAX_STEP},             /* train.steps is at most 10^12          */
        {"train_ms", MAX_TRAIN_MS},     /* 10^15 ms: ~31,700 years               */
        {"best_val_ppm", MAX_VAL_PPM},  /* a score of magnitude <= 10^6, or none */
        {"chance_step", MAX_STEP},
    };
    uint64_t val[4] = {0, 0, UINT64_MAX, 0};
    for (int i = 0; i < 4 && st == MCL_OK; i++) {
        uint64_t v = 0;
        if (!mcl_ckpt_info_counter(&info, lim[i].name, &v)) continue;
        /* best_val_ppm holds a signed score (two's complement; UINT64_MAX = none) */
        uint64_t mag = i == 2 && (int64_t)v < 0 ? (uint64_t)0 - v : v;
        if (mag > lim[i].max && !(i == 2 && v == UINT64_MAX))
            st = fail(r->err, r->err_len, MCL_ERR_FORMAT,
                      "%s: counter %s = %llu is out of range (at most %llu): corrupt checkpoint",
                      path, lim[i].name, (unsigned long long)v, (unsigned long long)lim[i].max);
        val[i] = v;
    }
    if (st == MCL_OK && val[3] > val[0])
        st = fail(r->err, r->err_len, MCL_ERR_FORMAT,
                  "%s: counter chance_step = %llu is after step = %llu: corrupt checkpoint", path,
                  (unsigned long long)val[3], (unsigned long long)val[0]);
    if (st == MCL_OK && info.has_optim && (uint64_t)info.optim_steps > val[0])
        st = fail(r->err, r->err_len, MCL_ERR_FORMAT,
                  "%s: the optimizer has taken %lld steps but counter step = %llu: corrupt "
                  "checkpoint", path, (long long)info.optim_steps, (unsigned long long)val[0]);
    if (st == MCL_OK) st = restore_chance_window(r, &info, path);
    mcl_ckpt_info_free(&info);
    if (st == MCL_OK) st = restore_reached(r);
    if (st != MCL_OK) return st;
    r->step = (int64_t)val[0];
    r->train_ms = (double)val[1];
    if (val[2] != UINT64_MAX) r->best_val = (double)(int64_t)val[2] / 1e6; /* may be < 0 */
    r->chance_step = (int64_t)val[3];
    mcl_train_logf(&r->log, "resumed at step %lld (%.1f s of training so far)", (long long)r->step,
                   r->train_ms / 1e3);
    return MCL_OK;
}

/* Track the family's first metric for "left chance". */
static void track_chance(runner *r, double acc, double chance)
{
    r->acc_window[r->n_window++ % CHANCE_WINDOW] = acc;
    if (r->chance_step || r->n_window < CHANCE_WINDOW || chance <= 0) return;
    double s = 0.0;
    for (int i = 0; i < CHANCE_WINDOW; i++) s += r->acc_window[i];
    if (s / CHANCE_WINDOW > chance + CHANCE_MARGIN) {
        r->chance_step = r->step;
        mcl_train_logf(&r->log, "step %lld: query accuracy left chance (mean of the last %d steps %.3f > %.3f)",
                       (long long)r->step, CHANCE_WINDOW, s / CHANCE_WINDOW, chance + CHANCE_MARGIN);
    }
}

static void runner_free(runner *r)
{
    free(r->gbuf);
    mcl_optim_free(r->opt);
    if (r->fs) r->fam->free(r->fs);
    if (r->csv) fclose(r->csv);
    if (r->log.file) fclose(r->log.file);
    mcl_dir_unlock(r->dir, r->lock_fd, 0); /* last: every file is closed */
    r->lock_fd = -1;
    mcl_run_cfg_free(&r->cfg);
}

/* Read or check the config, open the run directory, build the model, resume or initialize,
 * write config.txt and open metrics.csv. */
static mcl_status share_config_text(runner *r, const char *path, char **text)
{
    int64_t n = -1;
    char e2[512];
    mcl_status st = MCL_OK;
    *text = NULL;
    if (r->rank == 0) {
        st = mcl_read_text_file(path, MAX_CONFIG_BYTES, text, r->err, r->err_len);
        if (st == MCL_OK) n = (int64_t)strlen(*text);
    }
    if (r->size == 1) return st;
    mcl_status cs = mcl_dist_bcast(&n, sizeof n, 0, e2, sizeof e2);
    if (cs != MCL_OK) return fail(r->err, r->err_len, cs, "%s", e2);
    if (n < 0) return r->rank == 0 ? st : fail(r->err, r->err_len, MCL_ERR_IO, "rank 0 could not read %s", path);
    if (r->rank != 0 && !(*text = malloc((size_t)n + 1))) cs = MCL_ERR_OOM; /* then the job aborts */
    if (cs == MCL_OK) cs = mcl_dist_bcast(*text, (size_t)n + 1, 0, e2, sizeof e2);
    if (cs != MCL_OK) return fail(r->err, r->err_len, cs, "config.txt from rank 0: %s", e2);
    return MCL_OK;
}

static mcl_status start(runner *r, const mcl_run_cfg *cfg)
{
    const mcl_train_opts *opts = r->opts;
    char path[MCL_TRAIN_PATH_MAX + 32], e2[768];
    mcl_status st;
    const int writer = r->rank == 0; /* rank 0 alone writes the run directory */
    path_join(path, sizeof path, r->dir, "config.txt");
    st = writer ? lock_run_dir(r, opts->resume) : MCL_OK;
    if (st != MCL_OK) return st;
    if (opts->resume) {
        char *text = NULL;
        st = mcl_run_cfg_init(&r->cfg, r->fam, r->err, r->err_len);
        if (st == MCL_OK) st = share_config_text(r, path, &text);
        if (st == MCL_OK) st = mcl_run_cfg_parse(&r->cfg, text, path, r->err, r->err_len);
        free(text);
        for (int i = 0; st == MCL_OK && i < opts->n_overrides; i++)
            st = mcl_run_cfg_parse(&r->cfg, opts->overrides[i], "--set", r->err, r->err_len);
        if (st != MCL_OK) return st;
    } else {
        if (mcl_run_cfg_copy(&r->cfg, cfg) != MCL_OK) return fail(r->err, r->err_len, MCL_ERR_OOM, "out of memory");
        if (writer && access(path, F_OK) == 0)
            return fail(r->err, r->err_len, MCL_ERR_INVALID,
                        "%s already holds a run (config.txt): use --resume to continue it or "
                        "choose another --out",
                        r->dir);
    }
    if (r->cfg.train.steps == 0 && r->fam->total_steps) /* "the whole stream" */
        r->cfg.train.steps = r->fam->total_steps(r->cfg.fcfg, &r->cfg.train);
    st = writer ? open_run_dir(r) : MCL_OK;
    if (st != MCL_OK) return st;
    mcl_ctx_set_seed(r->ctx, r->cfg.train.seed);
    mcl_train_logf(&r->log, "%s run in %s on backend %s", opts->resume ? "resuming" : "starting", r->dir,
                   mcl_ctx_backend_name(r->ctx));
    st = setup(r);
    if (st == MCL_OK && opts->resume) st = resume_from_ckpt(r);
    if (st == MCL_OK && (!opts->resume || r->no_ckpt) && r->cfg.train.init[0]) {
        char note[1400];
        st = r->fam->init_from(r->fs, r->cfg.train.init, note, sizeof note, e2, sizeof e2);
        if (st != MCL_OK) fail(r->err, r->err_len, st, "train.init: %s", e2);
        else mcl_train_logf(&r->log, "%s", note);
    }
    if (st == MCL_OK && writer) { /* config.txt: the full resolved config */
        char *text = mcl_run_cfg_to_text(&r->cfg);
        path_join(path, sizeof path, r->dir, "config.txt");
        st = text ? mcl_write_file_atomic(path, text, strlen(text), e2, sizeof e2) : MCL_ERR_OOM;
        if (st != MCL_OK) fail(r->err, r->err_len, st, "%s", text ? e2 : "out of memory");
        free(text);
    }
    if (st == MCL_OK && writer) st = open_csv(r, opts->resume && !r->no_ckpt);
    return st;
}

/* Data parallelism: the parts, this rank's share, the gradient buffers; then every rank
 * must have been given the same config and hold the same parameters. */
static mcl_status start_parts(runner *r)
{
    const int64_t B = r->cfg.train.batch;
    r->parts = r->cfg.train.parts > 0 ? r->cfg.train.parts : r->size;
    r->scope = MCL_TRAIN_ERR_ALL; /* every failure below is seen alike by every rank */
    if (r->parts % r->size != 0 || r->parts > B)
        return fail(r->err, r->err_len, MCL_ERR_INVALID,
                    "%d ranks cannot share train.parts = %d parts of a batch of %lld sequences "
                    "(the parts must be a multiple of the ranks and at most train.batch)",
                    r->size, r->parts, (long long)B);
    r->p0 = r->parts / r->size * r->rank;
    r->p1 = r->p0 + r->parts / r->size;
    r->gn = param_floats(r);
    if (r->parts > 1) {
        r->gbuf = malloc((size_t)(2 * r->gn + 1) * sizeof *r->gbuf); /* sums + one read */
        if (!r->gbuf) {
            r->scope = MCL_TRAIN_ERR_LOCAL;
            return fail(r->err, r->err_len, MCL_ERR_OOM, "out of memory (gradient buffer)");
        }
    }
    if (r->size == 1) return MCL_OK;
    char *text = mcl_run_cfg_to_text(&r->cfg);
    uint64_t h = text ? mcl_fnv1a(MCL_FNV_START, text, strlen(text)) : 0;
    free(text);
    int diff = -1;
    mcl_status st = mcl_dist_compare_u64(h, &diff, r->err, r->err_len);
    if (st == MCL_OK && diff >= 0)
        return fail(r->err, r->err_len, MCL_ERR_INVALID,
                    "rank %d was given another config than rank 0 (every rank must run the same "
                    "command: compare their --config, --set and data files)",
                    diff);
    /* The run directory: rank 0 alone writes it, so another rank's own --out would be
     * ignored without a word; on --resume every rank reads its last.ckpt, so a rank that
     * cannot see it (another host's disk, another working directory for a relative path)
     * would start from scratch and be reported as diverged. */
    if (st == MCL_OK) st = mcl_dist_compare_u64(mcl_fnv1a(MCL_FNV_START, r->dir, strlen(r->dir)), &diff, r->err, r->err_len);
    if (st == MCL_OK && diff >= 0)
        return fail(r->err, r->err_len, MCL_ERR_INVALID,
                    "rank %d was given another run directory than rank 0's %s (rank 0 alone "
                    "writes it: give every rank the same --out or --resume)",
                    diff, r->dir);
    if (st == MCL_OK && r->opts->resume)
        st = mcl_dist_compare_u64(r->no_ckpt ? UINT64_MAX : (uint64_t)r->step, &diff, r->err, r->err_len);
    if (st == MCL_OK && r->opts->resume && diff >= 0) {
        char what[64] = " (none)";
        if (!r->no_ckpt) snprintf(what, sizeof what, " at step %lld", (long long)r->step);
        return fail(r->err, r->err_len, MCL_ERR_INVALID,
                    "rank %d does not read the last.ckpt that rank 0 reads in %s%s: every rank "
                    "reads the run directory on --resume, so it must be on a file system every "
                    "rank sees, under the same path (a relative path is taken from each rank's "
                    "working directory)",
                    diff, r->dir, what);
    }
    if (st == MCL_OK) st = check_params_agree(r);
    if (st == MCL_OK)
        mcl_train_logf(&r->log,
                       "data parallel: %d ranks, the batch of %lld sequences in %d parts, %lld "
                       "gradient floats (%.2f MB) added per step",
                       r->size, (long long)B, r->parts, (long long)r->gn, (double)r->gn * 4e-6);
    return st;
}

/* A fresh run that failed before its first step: remove what it created. */
static void undo_start(runner *r)
{
    static const char *const files[] = {"config.txt", "metrics.csv", "log.txt"};
    char path[MCL_TRAIN_PATH_MAX + 32];
    if (r->csv) fclose(r->csv);
    if (r->log.file) fclose(r->log.file);
    r->csv = r->log.file = NULL;
    for (int i = 0; i < 3; i++) {
        path_join(path, sizeof path, r->dir, files[i]);
        unlink(path);
    }
    mcl_dir_unlock(r->dir, r->lock_fd, 1);
    r->lock_fd = -1;
    if (r->made_dir) rmdir(r->dir); /* only when empty */
}

/* After start on every rank: did any rank fail? Sets r->scope; a rank that did not fail
 * returns an error naming the first that did. */
static mcl_status agree_on_start(runner *r, mcl_status st)
{
    int failed = 0;
    mcl_status a = mcl_dist_agree(st, &failed, r->err, r->err_len);
    if (a == MCL_OK || r->size == 1) return a;
    r->scope = st == MCL_OK ? MCL_TRAIN_ERR_OTHER
                            : failed == r->size ? MCL_TRAIN_ERR_ALL : MCL_TRAIN_ERR_LOCAL;
    return a;
}

mcl_status mcl_train_run(mcl_ctx *ctx, const mcl_family *family, const mcl_run_cfg *cfg,
                         const mcl_train_opts *opts, mcl_train_result *res, char *err,
                         size_t err_len)
{
    if (res) memset(res, 0, sizeof *res);
    if (!ctx || !opts || !opts->run_dir || (!cfg && !opts->resume) || (!family && !cfg))
        return fail(err, err_len, MCL_ERR_NULL, "mcl_train_run: NULL argument");
    runner rn;
    memset(&rn, 0, sizeof rn);
    runner *r = &rn;
    r->fam = family ? family : cfg->family;
    r->opts = opts;
    r->ctx = ctx;
    r->err = err;
    r->err_len = err_len;
    r->best_val = NAN;
    r->lock_fd = -1;
    r->rank = mcl_dist_rank();
    r->size = mcl_dist_size();
    r->log.echo = r->rank == 0 ? opts->log : NULL; /* rank 0 alone reports */
    r->log.progress = r->rank == 0 && opts->progress;
    if (strlen(opts->run_dir) >= sizeof r->dir - 32)
        return fail(err, err_len, MCL_ERR_INVALID, "run directory path too long (%zu bytes; at most %zu)",
                    strlen(opts->run_dir), sizeof r->dir - 33);
    strcpy(r->dir, opts->run_dir);
    mcl_status st = start(r, cfg);
    st = agree_on_start(r, st);
    if (st == MCL_OK) st = start_parts(r);
    if (st != MCL_OK && !opts->resume && (r->log.file || (r->made_dir && r->lock_fd >= 0))) {
        if (r->log.echo) fprintf(r->log.echo, "%s: the run could not start; nothing was kept\n", r->dir);
        undo_start(r);
    }
    const mcl_train_cfg *t = &r->cfg.train;
    if (st == MCL_OK && r->step >= t->steps)
        mcl_train_logf(&r->log, "nothing to do: step %lld of train.steps %lld", (long long)r->step,
                       (long long)t->steps);

    r->t_start = mcl_now_s();
    mcl_dist_take_comm_seconds();
    double loss = NAN, t_log = mcl_now_s(), comm_s = 0.0;
    int64_t step_log = r->step, steps_run = 0;
    const double chance = st == MCL_OK && r->fam->chance ? r->fam->chance(r->fs) : 0.0;
    double metrics[MCL_TRAIN_MAX_METRICS];
    while (st == MCL_OK && r->step < t->steps) {
        int stop = 0;
        for (int i = 0; i < MCL_TRAIN_MAX_METRICS; i++) metrics[i] = NAN;
        st = train_step(r, &loss, metrics, &stop);
        comm_s += mcl_dist_take_comm_seconds();
        if (st != MCL_OK) break;
        r->step++;
        steps_run++;
        track_chance(r, metrics[0], chance);
        int last = r->step == t->steps;
        double val = NAN, vcol[MCL_TRAIN_MAX_VAL_COLUMNS];
        for (int i = 0; i < MCL_TRAIN_MAX_VAL_COLUMNS; i++) vcol[i] = NAN;
        r->scope = MCL_TRAIN_ERR_LOCAL; /* validation and checkpoints: rank 0's own work */
        if (t->val_every > 0 && (r->step % t->val_every == 0 || last)) {
            if (r->rank == 0) st = r->fam->validate(r->fs, t->val_batches, &val, err, err_len);
            if (st == MCL_OK && r->n_valcols > 0 && r->fam->val_values) r->fam->val_values(r->fs, vcol);
            if (st == MCL_OK) st = mcl_dist_bcast(&val, sizeof val, 0, err, err_len);
            if (st != MCL_OK) break;
            if (isnan(r->best_val))
                mcl_train_logf(&r->log, "step %lld: validation score %.4f (the first)", (long long)r->step, val);
            else
                mcl_train_logf(&r->log, "step %lld: validation score %.4f (best %.4f)", (long long)r->step, val,
                               r->best_val);
            if (isnan(r->best_val) || val > r->best_val) {
                r->best_val = val;
                if (r->rank == 0) st = save_ckpt(r, "best.ckpt");
                if (st != MCL_OK) break;
            }
        }
        if (r->csv && (r->step % t->log_every == 0 || last || !isnan(val))) {
            double now = mcl_now_s();
            double sps = now > t_log ? (double)(r->step - step_log) / (now - t_log) : 0.0;
            t_log = now;
            step_log = r->step;
            fprintf(r->csv, "%lld,%.9g", (long long)r->step, loss);
            for (int i = 0; i < r->fam->n_metrics; i++) { /* NaN = absent: an empty cell */
                fputc(',', r->csv);
                if (!isnan(metrics[i])) fprintf(r->csv, "%.6f", metrics[i]);
            }
            fprintf(r->csv, ",%.9g,%.4f,%.3f,", (double)mcl_optim_last_lr(r->opt), sps,
                    elapsed_ms(r) / 1e3);
            if (!isnan(val)) fprintf(r->csv, "%.6f", val);
            for (int i = 0; i < r->n_valcols; i++) { /* empty on rows without validation */
                fputc(',', r->csv);
                if (!isnan(val) && !isnan(vcol[i])) fprintf(r->csv, "%.6f", vcol[i]);
            }
            fputc('\n', r->csv);
            fflush(r->csv);
            progress(r, loss, metrics[0], sps);
        }
        if (r->rank == 0 && (r->step % t->ckpt_every == 0 || last || stop)) st = save_ckpt(r, "last.ckpt");
        if (st == MCL_OK && r->size > 1 && t->dist_check > 0 && (r->step % t->dist_check == 0 || last))
            st = check_params_agree(r);
        if (st == MCL_OK && stop && !last) {
            r->scope = MCL_TRAIN_ERR_ALL;
            st = fail(err, err_len, MCL_ERR_STATE,
                      "interrupted after step %lld; last.ckpt is written: continue with `metacl "
                      "train %s --resume %s`",
                      (long long)r->step, r->fam->kind, r->dir);
            break;
        }
    }
    if (r->log.progress) fputc('\n', stderr);
    if (st == MCL_OK && r->size > 1 && steps_run > 0)
        mcl_train_logf(&r->log, "data parallel: %.2f ms per step in collectives (%.1f %% of the time)",
                       1e3 * comm_s / (double)steps_run,
                       100.0 * comm_s / (mcl_now_s() - r->t_start));
    char best[64] = ""; /* none: no validation ran (or the family has none) */
    if (!isnan(r->best_val)) snprintf(best, sizeof best, ", best validation %.4f", r->best_val);
    if (st == MCL_OK && isnan(loss))
        mcl_train_logf(&r->log, "done: step %lld (nothing left to do)%s, %.1f s of training", (long long)r->step,
                       best, elapsed_ms(r) / 1e3);
    else if (st == MCL_OK)
        mcl_train_logf(&r->log, "done: step %lld, last loss %.6f%s, %.1f s of training", (long long)r->step, loss,
                       best, elapsed_ms(r) / 1e3);
    else
        mcl_train_logf(&r->log, "stopped: %s", err ? err : "error");
    if (res) {
        res->steps_done = r->step;
        res->last_loss = loss;
        res->best_val = r->best_val;
        res->chance_step = r->chance_step;
        res->train_seconds = elapsed_ms(r) / 1e3;
        res->error_scope = st == MCL_OK ? MCL_TRAIN_ERR_LOCAL : r->scope;
        res->comm_seconds = comm_s;
        res->grad_floats = r->parts > 1 ? r->gn : 0;
    }
    if (st != MCL_OK && r->size > 1 && r->scope != MCL_TRAIN_ERR_LOCAL) mcl_dist_note_shared_failure();
    runner_free(r);
    return st;
}

/* ====================================================================== sessions (train.h) */

struct mcl_train_session {
    runner r;
    mcl_train_opts opts;
    char err[2048];
};

mcl_status mcl_train_session_open(mcl_ctx *ctx, const mcl_run_cfg *cfg, mcl_train_session **out,
                                  char *err, size_t len)
{
    if (out) *out = NULL;
    if (!ctx || !cfg || !cfg->family || !out)
        return fail(err, len, MCL_ERR_NULL, "mcl_train_session_open: NULL argument");
    mcl_train_session *ts = calloc(1, sizeof *ts);
    if (!ts) return fail(err, len, MCL_ERR_OOM, "out of memory");
    runner *r = &ts->r;
    r->fam = cfg->family;
    r->opts = &ts->opts;
    r->ctx = ctx;
    r->err = ts->err;
    r->err_len = sizeof ts->err;
    r->best_val = NAN;
    r->size = 1;
    mcl_status st = MCL_OK;
    if (mcl_run_cfg_copy(&r->cfg, cfg) != MCL_OK) {
        free(ts);
        return fail(err, len, MCL_ERR_OOM, "out of memory");
    }
    if (r->cfg.train.steps == 0 && r->fam->total_steps)
        r->cfg.train.steps = r->fam->total_steps(r->cfg.fcfg, &r->cfg.train);
    if (r->cfg.train.parts > 1)
        st = fail(r->err, r->err_len, MCL_ERR_INVALID, "a training session runs one part");
    if (st == MCL_OK) {
        mcl_ctx_set_seed(ctx, r->cfg.train.seed);
        st = setup(r);
    }
    if (st == MCL_OK) st = start_parts(r);
    if (st != MCL_OK) {
        fail(err, len, st, "%s", ts->err);
        mcl_train_session_free(ts);
        return st;
    }
    *out = ts;
    return MCL_OK;
}

mcl_status mcl_train_session_step(mcl_train_session *ts, double *loss, double *metrics)
{
    if (!ts) return MCL_ERR_NULL;
    runner *r = &ts->r;
    double m[MCL_TRAIN_MAX_METRICS], lv = NAN;
    int stop = 0;
    for (int i = 0; i < MCL_TRAIN_MAX_METRICS; i++) m[i] = NAN;
    mcl_status st = train_step(r, &lv, m, &stop);
    if (st != MCL_OK) return st;
    r->step++;
    track_chance(r, m[0], r->fam->chance ? r->fam->chance(r->fs) : 0.0);
    if (loss) *loss = lv;
    for (int i = 0; metrics && i < r->fam->n_metrics; i++) metrics[i] = m[i];
    return MCL_OK;
}

const char *mcl_train_session_error(const mcl_train_session *ts) { return ts ? ts->err : ""; }

void mcl_train_session_free(mcl_train_session *ts)
{
    if (!ts) return;
    runner_free(&ts->r);
    free(ts);
}
