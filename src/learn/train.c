/* train.c — the model-family harness: config, the training loop, run directory, exact resume.
 * See train.h for the guarantees; a family supplies only its model, data, loss, validation
 * and checkpoint (src/models/<family>/<family>_family.c). */
#define _POSIX_C_SOURCE 200809L
#include "train.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

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
        if (k) return mcl_key_set(k, (char *)c->fcfg + gr->off, value, err, len);
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

mcl_status mcl_run_cfg_check(const mcl_run_cfg *c, char *err, size_t len)
{
    if (!c || !c->family) return fail(err, len, MCL_ERR_NULL, "NULL argument");
    if (c->family->cfg_check) {
        mcl_status st = c->family->cfg_check(c->fcfg, &c->train, err, len);
        if (st != MCL_OK) return st;
    }
    if (c->train.schedule == 0 && !(c->train.lr > 0.0f))
        return fail(err, len, MCL_ERR_INVALID, "train.lr must be > 0");
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
    char dir[MCL_TRAIN_PATH_MAX];
    int64_t step;    /* steps done */
    double train_ms; /* before this process */
    double t_start;  /* this process */
    double best_val;
    int64_t chance_step;
    double acc_window[CHANCE_WINDOW];
    int64_t n_window;
    int made_dir;   /* this process created the run directory */
    int no_ckpt;    /* resuming a run that has no checkpoint yet */
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
    mcl_ckpt_counter cn[4];
    memset(cn, 0, sizeof cn);
    strcpy(cn[0].name, "step");
    cn[0].value = (uint64_t)r->step;
    strcpy(cn[1].name, "train_ms");
    cn[1].value = (uint64_t)llround(elapsed_ms(r));
    strcpy(cn[2].name, "best_val_ppm");
    cn[2].value = isnan(r->best_val) ? UINT64_MAX : (uint64_t)llround(r->best_val * 1e6);
    strcpy(cn[3].name, "chance_step");
    cn[3].value = (uint64_t)r->chance_step;
    char e2[768];
    mcl_status st = r->fam->save(r->fs, path, r->opt, cn, 4, e2, sizeof e2);
    if (st != MCL_OK) return fail(r->err, r->err_len, st, "%s", e2);
    return MCL_OK;
}

/* Keep the metrics.csv rows of steps <= upto (resume): atomic rewrite. */
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
    char e2[512];
    st = mcl_write_file_atomic(path, text, keep, e2, sizeof e2);
    free(text);
    if (st != MCL_OK) return fail(r->err, r->err_len, st, "%s", e2);
    return MCL_OK;
}

static mcl_status open_run_dir(runner *r)
{
    char e2[768], path[MCL_TRAIN_PATH_MAX + 32];
    r->made_dir = access(r->dir, F_OK) != 0;
    mcl_status st = mcl_mkdir_p(r->dir, e2, sizeof e2);
    if (st != MCL_OK) return fail(r->err, r->err_len, st, "run directory: %s", e2);
    if (path_join(path, sizeof path, r->dir, "log.txt"))
        return fail(r->err, r->err_len, MCL_ERR_INVALID, "run directory path too long");
    r->log.file = fopen(path, "a");
    if (!r->log.file) return fail(r->err, r->err_len, MCL_ERR_IO, "%s: %s", path, strerror(errno));
    return MCL_OK;
}

static mcl_status open_csv(runner *r, int resume)
{
    char path[MCL_TRAIN_PATH_MAX + 32];
    path_join(path, sizeof path, r->dir, "metrics.csv");
    if (resume) {
        mcl_status st = truncate_csv(r, path, r->step);
        if (st != MCL_OK) return st;
    }
    int fresh = access(path, F_OK) != 0 || !resume;
    r->csv = fopen(path, fresh ? "w" : "a");
    if (!r->csv) return fail(r->err, r->err_len, MCL_ERR_IO, "%s: %s", path, strerror(errno));
    if (fresh) {
        fprintf(r->csv, "step,loss");
        for (int i = 0; i < r->fam->n_metrics; i++) fprintf(r->csv, ",%s", r->fam->metric_names[i]);
        fprintf(r->csv, ",lr,steps_per_s,train_s,val_score\n");
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

/* One training step: *loss_out = its loss; a status (message in r->err) on failure. */
static mcl_status train_step(runner *r, double *loss_out, double *metrics)
{
    const int64_t s = r->step + 1;
    mcl_tensor *loss = NULL;
    float lv = NAN;
    mcl_optim_zero_grad(r->opt);
    mcl_status st = r->fam->step_loss(r->fs, s, &loss, metrics, r->err, r->err_len);
    if (st == MCL_OK) {
        st = mcl_tensor_read(loss, &lv, 1);
        if (st != MCL_OK) fail(r->err, r->err_len, st, "step %lld: %s", (long long)s, mcl_ctx_error(r->ctx));
    }
#ifdef MCL_TEST_HOOKS
    /* test hook (tests/test-train-cli.sh): pretend step METACL_TEST_NAN_STEP's loss is NaN */
    const char *nan_step = getenv("METACL_TEST_NAN_STEP");
    if (nan_step && atoll(nan_step) == s) lv = NAN;
#endif
    if (st == MCL_OK && !isfinite(lv)) {
        st = fail(r->err, r->err_len, MCL_ERR_INVALID,
                  "step %lld: the loss is %g: training stopped (the last good checkpoint, step "
                  "%lld or earlier, is kept)",
                  (long long)s, (double)lv, (long long)r->step);
    } else if (st == MCL_OK) {
        st = mcl_backward(r->ctx, loss);
        if (st == MCL_OK) st = mcl_optim_step(r->opt);
        if (st != MCL_OK) fail(r->err, r->err_len, st, "step %lld: %s", (long long)s, mcl_ctx_error(r->ctx));
    }
    if (r->fam->step_end) r->fam->step_end(r->fs);
    mcl_ctx_reset(r->ctx);
    *loss_out = lv;
    return st;
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
    mcl_status st = r->fam->load(r->fs, path, r->opt, &info, e2, sizeof e2);
    if (st != MCL_OK) return fail(r->err, r->err_len, st, "%s", e2);
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
    mcl_ckpt_info_free(&info);
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
    mcl_optim_free(r->opt);
    if (r->fs) r->fam->free(r->fs);
    if (r->csv) fclose(r->csv);
    if (r->log.file) fclose(r->log.file);
    mcl_run_cfg_free(&r->cfg);
}

/* Read or check the config, open the run directory, build the model, resume or initialize,
 * write config.txt and open metrics.csv. */
static mcl_status start(runner *r, const mcl_run_cfg *cfg)
{
    const mcl_train_opts *opts = r->opts;
    char path[MCL_TRAIN_PATH_MAX + 32], e2[768];
    mcl_status st;
    path_join(path, sizeof path, r->dir, "config.txt");
    if (opts->resume) {
        st = mcl_run_cfg_init(&r->cfg, r->fam, r->err, r->err_len);
        if (st == MCL_OK) st = mcl_run_cfg_load(&r->cfg, path, r->err, r->err_len);
        for (int i = 0; st == MCL_OK && i < opts->n_overrides; i++)
            st = mcl_run_cfg_parse(&r->cfg, opts->overrides[i], "--set", r->err, r->err_len);
        if (st != MCL_OK) return st;
    } else {
        if (mcl_run_cfg_copy(&r->cfg, cfg) != MCL_OK) return fail(r->err, r->err_len, MCL_ERR_OOM, "out of memory");
        if (access(path, F_OK) == 0)
            return fail(r->err, r->err_len, MCL_ERR_INVALID,
                        "%s already holds a run (config.txt): use --resume to continue it or "
                        "choose another --out",
                        r->dir);
    }
    st = open_run_dir(r);
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
    if (st == MCL_OK) { /* config.txt: the full resolved config */
        char *text = mcl_run_cfg_to_text(&r->cfg);
        path_join(path, sizeof path, r->dir, "config.txt");
        st = text ? mcl_write_file_atomic(path, text, strlen(text), e2, sizeof e2) : MCL_ERR_OOM;
        if (st != MCL_OK) fail(r->err, r->err_len, st, "%s", text ? e2 : "out of memory");
        free(text);
    }
    if (st == MCL_OK) st = open_csv(r, opts->resume && !r->no_ckpt);
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
    if (r->made_dir) rmdir(r->dir); /* only when empty */
}

mcl_status mcl_train_run(mcl_ctx *ctx, const mcl_family *family, const mcl_run_cfg *cfg,
                         const mcl_train_opts *opts, mcl_train_result *res, char *err,
                         size_t err_len)
{
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
    r->log.echo = opts->log;
    r->log.progress = opts->progress;
    if (strlen(opts->run_dir) >= sizeof r->dir - 32)
        return fail(err, err_len, MCL_ERR_INVALID, "run directory path too long");
    strcpy(r->dir, opts->run_dir);
    mcl_status st = start(r, cfg);
    if (st != MCL_OK && !opts->resume && r->log.file) {
        if (opts->log) fprintf(opts->log, "%s: the run could not start; nothing was kept\n", r->dir);
        undo_start(r);
    }
    const mcl_train_cfg *t = &r->cfg.train;
    if (st == MCL_OK && r->step >= t->steps)
        mcl_train_logf(&r->log, "nothing to do: step %lld of train.steps %lld", (long long)r->step,
                       (long long)t->steps);

    r->t_start = mcl_now_s();
    double loss = NAN, t_log = mcl_now_s();
    int64_t step_log = r->step;
    const double chance = st == MCL_OK && r->fam->chance ? r->fam->chance(r->fs) : 0.0;
    double metrics[MCL_TRAIN_MAX_METRICS];
    while (st == MCL_OK && r->step < t->steps) {
        for (int i = 0; i < MCL_TRAIN_MAX_METRICS; i++) metrics[i] = NAN;
        st = train_step(r, &loss, metrics);
        if (st != MCL_OK) break;
        r->step++;
        track_chance(r, metrics[0], chance);
        int last = r->step == t->steps;
        double val = NAN;
        if (t->val_every > 0 && (r->step % t->val_every == 0 || last)) {
            st = r->fam->validate(r->fs, t->val_batches, &val, err, err_len);
            if (st != MCL_OK) break;
            mcl_train_logf(&r->log, "step %lld: validation score %.4f (best %.4f)", (long long)r->step,
                           val, r->best_val);
            if (isnan(r->best_val) || val > r->best_val) {
                r->best_val = val;
                st = save_ckpt(r, "best.ckpt");
                if (st != MCL_OK) break;
            }
        }
        if (r->step % t->log_every == 0 || last || !isnan(val)) {
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
            fputc('\n', r->csv);
            fflush(r->csv);
            progress(r, loss, metrics[0], sps);
        }
        const int stop = opts->stop && *opts->stop;
        if (r->step % t->ckpt_every == 0 || last || stop) st = save_ckpt(r, "last.ckpt");
        if (st == MCL_OK && stop && !last) {
            st = fail(err, err_len, MCL_ERR_STATE,
                      "interrupted after step %lld; last.ckpt is written: continue with `metacl "
                      "train %s --resume %s`",
                      (long long)r->step, r->fam->kind, r->dir);
            break;
        }
    }
    if (opts->progress) fputc('\n', stderr);
    if (st == MCL_OK && isnan(loss))
        mcl_train_logf(&r->log, "done: step %lld (nothing left to do), best validation %.4f, %.1f s of training",
                       (long long)r->step, r->best_val, elapsed_ms(r) / 1e3);
    else if (st == MCL_OK)
        mcl_train_logf(&r->log, "done: step %lld, last loss %.6f, best validation %.4f, %.1f s of training",
                       (long long)r->step, loss, r->best_val, elapsed_ms(r) / 1e3);
    else
        mcl_train_logf(&r->log, "stopped: %s", err ? err : "error");
    if (res) {
        res->steps_done = r->step;
        res->last_loss = loss;
        res->best_val = r->best_val;
        res->chance_step = r->chance_step;
        res->train_seconds = elapsed_ms(r) / 1e3;
    }
    runner_free(r);
    return st;
}
