/* test-harness.c — the model-family harness (src/learn/train.h) and typed key tables
 * (src/common/keys.h), through a toy family defined here: a new family is an adapter of a
 * dozen small functions, not a copy of a training loop.
 *
 * The toy family: linear regression y = x·w + b with w, b parameters, data from Philox keyed
 * by (train.seed, step), loss = mean squared error, one metric ("abs_err"), validation score =
 * −(mean squared error on fixed data). Checked:
 *   keys       defaults, "010" is ten, ranges, enum messages, float round trip, lists, text
 *              round trip, unknown keys, a broken value leaves the config unchanged
 *   run        the loss falls, metrics.csv has the family's columns, the run directory holds
 *              config.txt, log.txt, last.ckpt, best.ckpt
 *   resume     3 + 3 steps give the same metrics.csv rows (loss bits) as 6 steps at once
 *   NaN        (with --enable-test-hooks) a NaN loss stops the run, last.ckpt kept
 *   can fail   a deliberately different loss row is detected by the comparison used
 *   chance     a toy whose first metric is 0.5 before step 40 and 0.9 from it (chance 0.5):
 *              the uninterrupted run leaves chance at step 100 (the first full window of 100);
 *              stopped at 20, 60 and 99 and resumed, it still does (the window is in the
 *              checkpoint; without it a resume at 60 left chance at step 160)
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "keys.h"
#include "metacl.h"
#include "testutil.h"
#include "train.h"
#include "acl_train.h"

#define SEED 20261124u
#define DIM 4
#define ROWS 32

/* ======================================================================= the toy family */

typedef struct toy_cfg {
    int dim;
    float noise;
    int kind; /* enum: linear|affine */
} toy_cfg;

static const mcl_key toy_keys[] = {
    MCL_KEY_INT("task.dim", toy_cfg, dim, 1, 64, "4", "input size"),
    MCL_KEY_FLOAT("task.noise", toy_cfg, noise, 0, 10, "0.01", "label noise std"),
    MCL_KEY_ENUM("task.kind", toy_cfg, kind, "linear|affine", "affine", "model form"),
};
static const mcl_key_group toy_group = {"", toy_keys, 3, 0};
static const mcl_key_group *const toy_groups[] = {&toy_group};

typedef struct toy {
    toy_cfg cfg;
    mcl_ctx *ctx;
    mcl_params *params;
    mcl_tensor *w, *b;
    uint64_t seed;
    int batch;
} toy;

static mcl_status toy_create(mcl_ctx *ctx, const void *fcfg, const mcl_train_cfg *t,
                             mcl_train_log *log, void **out, char *err, size_t len)
{
    toy *m = calloc(1, sizeof *m);
    if (!m) return mcl_errbuf(err, len, MCL_ERR_OOM, "oom");
    *out = m;
    m->cfg = *(const toy_cfg *)fcfg;
    m->ctx = ctx;
    m->seed = t->seed;
    m->batch = t->batch;
    m->params = mcl_params_create(ctx);
    const int64_t sw[2] = {m->cfg.dim, 1}, sb[1] = {1};
    m->w = mcl_params_add(m->params, "w", 2, sw);
    m->b = mcl_params_add(m->params, "b", 1, sb);
    if (!m->w || !m->b) return mcl_errbuf(err, len, MCL_ERR_OOM, "%s", mcl_ctx_error(ctx));
    mcl_train_logf(log, "toy: %d inputs", m->cfg.dim);
    return mcl_tensor_randn(m->w, 7, 0, 0.0f, 0.1f);
}

static void toy_free(void *p)
{
    toy *m = p;
    if (m) mcl_params_free(m->params);
    free(m);
}

static mcl_params *toy_params(void *p) { return ((toy *)p)->params; }

/* The batch of a step: x ~ N(0,1) from (seed, stream), y = x·w* + b* + noise. */
static void toy_data(const toy *m, uint64_t stream, float *x, float *y, int n)
{
    mcl_rng r;
    mcl_rng_init(&r, m->seed, stream);
    for (int i = 0; i < n; i++) {
        double s = m->cfg.kind ? 0.5 : 0.0;
        for (int j = 0; j < m->cfg.dim; j++) {
            x[i * m->cfg.dim + j] = mcl_rng_next_normal(&r);
            s += (j + 1) * 0.25 * x[i * m->cfg.dim + j];
        }
        y[i] = (float)(s + m->cfg.noise * mcl_rng_next_normal(&r));
    }
}

/* The mean squared error over rows [lo, hi) of the n rows drawn from stream. */
static mcl_tensor *toy_loss(toy *m, uint64_t stream, int n, int lo, int hi, double *abs_err)
{
    float x[ROWS * 64], y[ROWS], p[ROWS];
    toy_data(m, stream, x, y, n);
    n = hi - lo;
    const int64_t sx[2] = {n, m->cfg.dim}, sy[2] = {n, 1};
    mcl_tensor *tx = tu_tensor_from(m->ctx, 2, sx, x + (int64_t)lo * m->cfg.dim),
               *ty = tu_tensor_from(m->ctx, 2, sy, y + lo);
    mcl_tensor *pred = mcl_bias_add(m->ctx, mcl_matmul(m->ctx, tx, m->w, 0, 0), m->b);
    mcl_tensor *d = mcl_sub(m->ctx, pred, ty);
    mcl_tensor *loss = mcl_mean(m->ctx, mcl_mul(m->ctx, d, d));
    if (abs_err && pred && mcl_tensor_read(pred, p, n) == MCL_OK) {
        double s = 0;
        for (int i = 0; i < n; i++) s += fabs(p[i] - y[lo + i]);
        *abs_err = s / n;
    }
    mcl_tensor_free(tx);
    mcl_tensor_free(ty);
    return loss;
}

static const char *const toy_metrics[] = {"abs_err"};

static mcl_status toy_step_loss(void *p, int64_t s, const mcl_train_part *part, mcl_tensor **loss,
                                double *metrics, char *err, size_t len)
{
    toy *m = p;
    *loss = toy_loss(m, 1000 + (uint64_t)s, m->batch, (int)part->lo, (int)part->hi, &metrics[0]);
    return *loss ? MCL_OK : mcl_errbuf(err, len, MCL_ERR_BACKEND, "%s", mcl_ctx_error(m->ctx));
}

static mcl_status toy_validate(void *p, int64_t batches, double *score, char *err, size_t len)
{
    toy *m = p;
    double sum = 0;
    mcl_no_grad_begin(m->ctx);
    for (int64_t v = 0; v < batches; v++) {
        float l = NAN;
        mcl_tensor *loss = toy_loss(m, 5000 + (uint64_t)v, ROWS, 0, ROWS, NULL);
        if (!loss || mcl_tensor_read(loss, &l, 1) != MCL_OK) {
            mcl_no_grad_end(m->ctx);
            return mcl_errbuf(err, len, MCL_ERR_BACKEND, "%s", mcl_ctx_error(m->ctx));
        }
        sum += l;
        mcl_ctx_reset(m->ctx);
    }
    mcl_no_grad_end(m->ctx);
    *score = -sum / (double)batches;
    return MCL_OK;
}

static mcl_status toy_save(void *p, const char *path, const mcl_optim *opt,
                           const mcl_ckpt_counter *cn, int n_cn, char *err, size_t len)
{
    toy *m = p;
    mcl_ckpt_save_desc d;
    memset(&d, 0, sizeof d);
    d.model_kind = "toy";
    d.config = "";
    d.params = m->params;
    d.optim = opt;
    d.rng.seed = mcl_ctx_seed(m->ctx);
    d.rng.counter = mcl_ctx_stream(m->ctx);
    d.counters = cn;
    d.n_counters = n_cn;
    return mcl_ckpt_save(m->ctx, path, &d, err, len);
}

static mcl_status toy_load(void *p, const char *path, mcl_optim *opt, mcl_ckpt_info *info,
                           char *err, size_t len)
{
    toy *m = p;
    return mcl_ckpt_load(m->ctx, path, "toy", m->params, opt, info, err, len);
}

static mcl_status toy_init_from(void *p, const char *path, char *note, size_t nl, char *err,
                                size_t len)
{
    (void)p;
    (void)note;
    (void)nl;
    return mcl_errbuf(err, len, MCL_ERR_UNSUPPORTED, "toy: no train.init (%s)", path);
}

static const mcl_family toy_family = {
    .kind = "toy",
    .summary = "linear regression (test)",
    .cfg_size = sizeof(toy_cfg),
    .groups = toy_groups,
    .n_groups = 1,
    .create = toy_create,
    .free = toy_free,
    .params = toy_params,
    .n_metrics = 1,
    .metric_names = toy_metrics,
    .step_loss = toy_step_loss,
    .validate = toy_validate,
    .save = toy_save,
    .load = toy_load,
    .init_from = toy_init_from,
};

/* The same toy with a first metric that leaves chance (0.5) at step 40 (0.9 from there). */
static double chancy_chance(void *p)
{
    (void)p;
    return 0.5;
}

static mcl_status chancy_step_loss(void *p, int64_t s, const mcl_train_part *part, mcl_tensor **loss,
                                   double *metrics, char *err, size_t len)
{
    mcl_status st = toy_step_loss(p, s, part, loss, metrics, err, len);
    metrics[0] = s >= 40 ? 0.9 : 0.5;
    return st;
}

static const mcl_family chancy_family = {
    .kind = "toy",
    .summary = "linear regression with a made-up accuracy (test)",
    .cfg_size = sizeof(toy_cfg),
    .groups = toy_groups,
    .n_groups = 1,
    .create = toy_create,
    .free = toy_free,
    .params = toy_params,
    .n_metrics = 1,
    .metric_names = toy_metrics,
    .chance = chancy_chance,
    .step_loss = chancy_step_loss,
    .validate = toy_validate,
    .save = toy_save,
    .load = toy_load,
    .init_from = toy_init_from,
};

/* ======================================================================= helpers */

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *b = calloc(1, 1 << 16);
    if (b) fread(b, 1, (1 << 16) - 1, f);
    fclose(f);
    return b;
}

/* The "step,loss" prefix of every data row of a metrics.csv, joined. */
static void loss_rows(const char *csv, char *out, size_t cap)
{
    out[0] = 0;
    const char *p = csv ? strchr(csv, '\n') : NULL;
    while (p && p[1]) {
        p++;
        const char *c1 = strchr(p, ',');
        const char *c2 = c1 ? strchr(c1 + 1, ',') : NULL;
        if (!c2) break;
        size_t n = strlen(out);
        snprintf(out + n, cap - n, "%.*s;", (int)(c2 - p), p);
        p = strchr(p, '\n');
    }
}

static int run(mcl_ctx *ctx, const char *dir, int resume, const char *const *sets, int n_sets,
               char *err, size_t len)
{
    mcl_run_cfg c;
    if (mcl_run_cfg_init(&c, &toy_family, err, len) != MCL_OK) return -1;
    int rc = 0;
    for (int i = 0; !resume && i < n_sets; i++)
        if (mcl_run_cfg_parse(&c, sets[i], "test", err, len) != MCL_OK) rc = -1;
    mcl_train_opts o;
    memset(&o, 0, sizeof o);
    o.run_dir = dir;
    o.resume = resume;
    o.overrides = sets;
    o.n_overrides = resume ? n_sets : 0;
    mcl_train_result res;
    if (rc == 0 && mcl_train_run(ctx, &toy_family, resume ? NULL : &c, &o, &res, err, len) != MCL_OK)
        rc = 1;
    mcl_run_cfg_free(&c);
    return rc;
}

/* A run of fam: fresh with `sets`, or resumed with overrides; *chance_step its result. */
static int run_fam(const mcl_family *fam, mcl_ctx *ctx, const char *dir, int resume, const char *const *sets,
                   int n_sets, int64_t *chance_step, char *err, size_t len)
{
    mcl_run_cfg c;
    if (mcl_run_cfg_init(&c, fam, err, len) != MCL_OK) return -1;
    int rc = 0;
    for (int i = 0; !resume && i < n_sets; i++)
        if (mcl_run_cfg_parse(&c, sets[i], "test", err, len) != MCL_OK) rc = -1;
    mcl_train_opts o;
    memset(&o, 0, sizeof o);
    o.run_dir = dir;
    o.resume = resume;
    o.overrides = sets;
    o.n_overrides = resume ? n_sets : 0;
    mcl_train_result res;
    if (rc == 0 && mcl_train_run(ctx, fam, resume ? NULL : &c, &o, &res, err, len) != MCL_OK) rc = 1;
    *chance_step = res.chance_step;
    mcl_run_cfg_free(&c);
    return rc;
}

static void test_chance_window(mcl_ctx *ctx, const char *tmp)
{
    char err[1024], dir[600];
    const char *sets[] = {"train.steps = 120\ntrain.log_every = 60\ntrain.val_every = 0\n"
                          "train.ckpt_every = 1000\ntrain.batch = 2\n"};
    int64_t whole = -1, split = -1;
    snprintf(dir, sizeof dir, "%s/chance-whole", tmp);
    CHECK(run_fam(&chancy_family, ctx, dir, 0, sets, 1, &whole, err, sizeof err) == 0, "120 steps: %s", err);
    CHECK(whole == 100, "the uninterrupted run leaves chance at step %lld (100)", (long long)whole);
    static const char *const stops[] = {"20", "60", "99"};
    for (int i = 0; i < 3; i++) {
        char first[64];
        snprintf(first, sizeof first, "train.steps = %s", stops[i]);
        const char *fs[] = {sets[0], first}, *more[] = {"train.steps = 120"};
        snprintf(dir, sizeof dir, "%s/chance-%s", tmp, stops[i]);
        int64_t ignore = -1;
        CHECK(run_fam(&chancy_family, ctx, dir, 0, fs, 2, &ignore, err, sizeof err) == 0, "%s steps: %s", stops[i], err);
        CHECK(run_fam(&chancy_family, ctx, dir, 1, more, 1, &split, err, sizeof err) == 0, "resume: %s", err);
        CHECK(split == whole, "stopped at %s and resumed: leaves chance at step %lld (uninterrupted: %lld)", stops[i],
              (long long)split, (long long)whole);
    }
}

/* ======================================================================= tests */

static void test_keys(void)
{
    char err[256];
    mcl_run_cfg c;
    CHECK(mcl_run_cfg_init(&c, &toy_family, err, sizeof err) == MCL_OK, "init: %s", err);
    toy_cfg *t = c.fcfg;
    CHECK(t->dim == 4 && t->kind == 1 && fabsf(t->noise - 0.01f) < 1e-9f, "toy defaults");
    CHECK(c.train.steps == 1000 && c.train.batch == 16 && c.train.seed == 1, "train defaults");
    CHECK(mcl_run_cfg_set(&c, "task.dim", "010", err, sizeof err) == MCL_OK && t->dim == 10,
          "'010' is ten (got %d)", t->dim);
    CHECK(mcl_run_cfg_set(&c, "task.dim", "65", err, sizeof err) == MCL_ERR_INVALID &&
              strstr(err, "[1, 64]") && t->dim == 10,
          "out of range refused, value kept: %s", err);
    CHECK(mcl_run_cfg_set(&c, "task.kind", "cubic", err, sizeof err) == MCL_ERR_INVALID &&
              strstr(err, "want linear or affine"),
          "enum message: %s", err);
    CHECK(mcl_run_cfg_set(&c, "task.noise", "nan", err, sizeof err) == MCL_ERR_INVALID, "NaN refused");
    CHECK(mcl_run_cfg_set(&c, "train.stepz", "1", err, sizeof err) == MCL_ERR_INVALID &&
              strstr(err, "unknown key 'train.stepz'"),
          "unknown key: %s", err);
    CHECK(mcl_run_cfg_set(&c, "train.seed", "18446744073709551615", err, sizeof err) == MCL_OK &&
              c.train.seed == UINT64_MAX,
          "u64 seed");
    CHECK(mcl_run_cfg_set(&c, "train.seed", "-1", err, sizeof err) == MCL_ERR_INVALID, "negative seed refused");
    /* all or nothing: a bad second line leaves the first unapplied */
    CHECK(mcl_run_cfg_parse(&c, "task.dim = 3\ntask.noise = x\n", "t", err, sizeof err) ==
                  MCL_ERR_INVALID && t->dim == 10 && strstr(err, "t:2"),
          "all or nothing: %s", err);
    /* text round trip: floats exactly */
    mcl_run_cfg_set(&c, "task.noise", "0.1", err, sizeof err);
    mcl_run_cfg_set(&c, "train.lr", "3e-4", err, sizeof err);
    char *text = mcl_run_cfg_to_text(&c);
    mcl_run_cfg d;
    mcl_run_cfg_init(&d, &toy_family, err, sizeof err);
    CHECK(text && mcl_run_cfg_parse(&d, text, "roundtrip", err, sizeof err) == MCL_OK, "reparse: %s", err);
    CHECK(memcmp(&c.train, &d.train, sizeof c.train) == 0 &&
              memcmp(c.fcfg, d.fcfg, sizeof(toy_cfg)) == 0,
          "text round trip gives the same config");
    CHECK(text && strstr(text, "task.kind = affine\n") && strstr(text, "task.noise = 0.100000001\n"),
          "config text: %s", text ? text : "(null)");
    free(text);
    /* the round-trip comparison can fail */
    mcl_run_cfg_set(&d, "task.noise", "0.10000001", err, sizeof err);
    CHECK(memcmp(c.fcfg, d.fcfg, sizeof(toy_cfg)) != 0, "a changed float is noticed");
    mcl_run_cfg_free(&d);
    mcl_run_cfg_free(&c);

    /* regression (fuzz-config): a name list holding an idx: item without its label file
     * printed with ',' read back as another list; with ';' it reads back item for item */
    {
        static const char *const cases[] = {
            "data.domains = hershey,idx:  ;= `       ,   nsains =\n",
            "data.domains = idx:a.idx,b.idx;hershey\n",
            "data.domains = idx:a.idx;hershey\n",
        };
        for (int i = 0; i < 3; i++) {
            mcl_run_cfg a, b2;
            mcl_run_cfg_init(&a, &mcl_acl_family, err, sizeof err);
            mcl_run_cfg_init(&b2, &mcl_acl_family, err, sizeof err);
            mcl_status pst = mcl_run_cfg_parse(&a, cases[i], "case", err, sizeof err);
            char *t1 = pst == MCL_OK ? mcl_run_cfg_to_text(&a) : NULL;
            char *t2 = NULL;
            if (t1 && mcl_run_cfg_parse(&b2, t1, "printed", err, sizeof err) == MCL_OK) t2 = mcl_run_cfg_to_text(&b2);
            CHECK(pst != MCL_OK || (t1 && t2 && !strcmp(t1, t2)), "domains case %d reads back as printed: %s", i, err);
            free(t1);
            free(t2);
            mcl_run_cfg_free(&a);
            mcl_run_cfg_free(&b2);
        }
    }

    /* lists */
    typedef struct lst {
        int n, nf;
        char names[3][8];
        float f[3];
    } lst;
    const mcl_key lk[] = {
        MCL_KEY_STRLIST("names", lst, names, n, 3, "a,b", "names"),
        MCL_KEY_FLOATLIST("f", lst, f, nf, 3, 0, 1, "0.5", "fractions"),
    };
    lst l;
    CHECK(mcl_keys_defaults(lk, 2, &l, err, sizeof err) == MCL_OK && l.n == 2 &&
              !strcmp(l.names[1], "b") && l.nf == 1,
          "list defaults");
    CHECK(mcl_keys_set(lk, 2, &l, "names", " x , yy ,z", err, sizeof err) == MCL_OK && l.n == 3 &&
              !strcmp(l.names[0], "x") && !strcmp(l.names[1], "yy"),
          "list trimmed");
    CHECK(mcl_keys_set(lk, 2, &l, "names", "a,b,c,d", err, sizeof err) == MCL_ERR_INVALID && l.n == 3,
          "too many items refused");
    CHECK(mcl_keys_set(lk, 2, &l, "names", "a,,b", err, sizeof err) == MCL_ERR_INVALID, "empty item refused");
    CHECK(mcl_keys_set(lk, 2, &l, "names", "toolongname", err, sizeof err) == MCL_ERR_INVALID, "long item refused");
    CHECK(mcl_keys_set(lk, 2, &l, "f", "0.25,2", err, sizeof err) == MCL_ERR_INVALID && l.nf == 1,
          "out-of-range float item refused");
    char *lt = mcl_keys_to_text(lk, 2, &l, "p.");
    CHECK(lt && !strcmp(lt, "p.names = x,yy,z\np.f = 0.5\n"), "list text: %s", lt ? lt : "(null)");
    free(lt);
}

static void test_runs(mcl_ctx *ctx, const char *tmp)
{
    char err[1024], a[512], b[512], path[600];
    snprintf(a, sizeof a, "%s/a", tmp);
    snprintf(b, sizeof b, "%s/b", tmp);
    const char *sets[] = {"train.steps = 6\ntrain.log_every = 1\ntrain.val_every = 3\n"
                          "train.ckpt_every = 3\ntrain.batch = 8\ntrain.lr = 0.05\n"};
    CHECK(run(ctx, a, 0, sets, 1, err, sizeof err) == 0, "6-step run: %s", err);
    const char *files[] = {"config.txt", "log.txt", "metrics.csv", "last.ckpt", "best.ckpt"};
    for (int i = 0; i < 5; i++) {
        snprintf(path, sizeof path, "%s/%s", a, files[i]);
        CHECK(access(path, F_OK) == 0, "run directory holds %s", files[i]);
    }
    snprintf(path, sizeof path, "%s/metrics.csv", a);
    char *csv_a = slurp(path);
    const char *hdr = "step,loss,abs_err,lr,steps_per_s,train_s,val_score\n";
    CHECK(csv_a && !strncmp(csv_a, hdr, strlen(hdr)),
          "metrics.csv header has the family's column: %.60s", csv_a ? csv_a : "(null)");
    /* the loss falls */
    double l1 = NAN, l6 = NAN;
    const char *r1 = csv_a ? strchr(csv_a, '\n') : NULL;
    if (r1) sscanf(r1 + 1, "1,%lf", &l1);
    const char *r6 = csv_a ? strstr(csv_a, "\n6,") : NULL;
    if (r6) sscanf(r6 + 1, "6,%lf", &l6);
    CHECK(l6 < 0.8 * l1, "loss falls: step 1 %g, step 6 %g", l1, l6);

    /* 3 + 3 steps, resumed, give the same loss bits */
    const char *half[] = {"train.steps = 3\ntrain.log_every = 1\ntrain.val_every = 3\n"
                          "train.ckpt_every = 3\ntrain.batch = 8\ntrain.lr = 0.05\n"};
    CHECK(run(ctx, b, 0, half, 1, err, sizeof err) == 0, "3-step run: %s", err);
    const char *more[] = {"train.steps = 6"};
    CHECK(run(ctx, b, 1, more, 1, err, sizeof err) == 0, "resume to 6: %s", err);
    snprintf(path, sizeof path, "%s/metrics.csv", b);
    char *csv_b = slurp(path);
    char la[4096], lb[4096];
    loss_rows(csv_a, la, sizeof la);
    loss_rows(csv_b, lb, sizeof lb);
    CHECK(la[0] && !strcmp(la, lb), "resumed losses equal the uninterrupted ones:\n  %s\n  %s", la, lb);
    /* the comparison can fail: one changed digit */
    char lc[4096];
    strcpy(lc, lb);
    char *dot = strchr(lc, '.');
    if (dot && dot[1]) dot[1] = dot[1] == '9' ? '8' : (char)(dot[1] + 1);
    CHECK(strcmp(la, lc) != 0, "a changed loss is detected");
    /* a second start in the same directory is refused */
    CHECK(run(ctx, a, 0, sets, 1, err, sizeof err) == 1 && strstr(err, "already holds a run"),
          "the run directory is not reused: %s", err);
    free(csv_a);
    free(csv_b);

    /* the batch in parts (the data-parallel path of one process, train.h): 4 parts give the
     * 1-part losses within float round-off, and the same bits run after run */
    {
        char pa[512], pb[512];
        snprintf(pa, sizeof pa, "%s/parts4", tmp);
        snprintf(pb, sizeof pb, "%s/parts4b", tmp);
        const char *p4[] = {sets[0], "train.parts = 4"};
        CHECK(run(ctx, pa, 0, p4, 2, err, sizeof err) == 0, "4-part run: %s", err);
        CHECK(run(ctx, pb, 0, p4, 2, err, sizeof err) == 0, "4-part run again: %s", err);
        char l4[4096], l4b[4096];
        snprintf(path, sizeof path, "%s/metrics.csv", pa);
        char *c4 = slurp(path);
        snprintf(path, sizeof path, "%s/metrics.csv", pb);
        char *c4b = slurp(path);
        loss_rows(c4, l4, sizeof l4);
        loss_rows(c4b, l4b, sizeof l4b);
        CHECK(l4[0] && !strcmp(l4, l4b), "4 parts: the same losses twice:\n  %s\n  %s", l4, l4b);
        /* tolerance 1e-5 relative: the parts add the same per-row terms in another order */
        double worst = 0;
        int rows = 0;
        for (const char *x = la, *y = l4; x && y && *x && *y; rows++) {
            long long sx = 0, sy = 0;
            double u = NAN, v = NAN;
            if (sscanf(x, "%lld,%lf", &sx, &u) != 2 || sscanf(y, "%lld,%lf", &sy, &v) != 2 || sx != sy) break;
            double rel = fabs(u - v) / fmax(fabs(u), 1e-30);
            if (rel > worst) worst = rel;
            x = strchr(x, ';');
            y = strchr(y, ';');
            if (x) x++;
            if (y) y++;
        }
        CHECK(rows == 6 && worst < 1e-5, "4 parts = 1 part within 1e-5 (worst %.3g over %d losses)", worst, rows);
        /* ... and a part left out would be caught: batch 6 of the same data is far off */
        char pc[512], l6b[4096];
        snprintf(pc, sizeof pc, "%s/parts-short", tmp);
        const char *p6[] = {sets[0], "train.batch = 6"};
        CHECK(run(ctx, pc, 0, p6, 2, err, sizeof err) == 0, "short-batch run: %s", err);
        snprintf(path, sizeof path, "%s/metrics.csv", pc);
        char *c6 = slurp(path);
        loss_rows(c6, l6b, sizeof l6b);
        double s6 = NAN, sa = NAN;
        sscanf(l6b, "%*d,%lf", &s6);
        sscanf(la, "%*d,%lf", &sa);
        CHECK(fabs(s6 - sa) > 1e-3 * fabs(sa),
              "a batch missing a part is detected (%s vs %s)", l6b, la);
        const char *bad[] = {sets[0], "train.parts = 9"};
        snprintf(pc, sizeof pc, "%s/parts-bad", tmp);
        CHECK(run(ctx, pc, 0, bad, 2, err, sizeof err) == 1 && strstr(err, "train.parts 9 is more than train.batch 8"),
              "more parts than sequences refused: %s", err);
        free(c4);
        free(c4b);
        free(c6);
    }

#ifdef MCL_TEST_HOOKS
    char nd[512];
    snprintf(nd, sizeof nd, "%s/nan", tmp);
    setenv("METACL_TEST_NAN_STEP", "5", 1);
    CHECK(run(ctx, nd, 0, sets, 1, err, sizeof err) == 1 && strstr(err, "step 5: the loss is nan"),
          "a NaN loss stops the run: %s", err);
    unsetenv("METACL_TEST_NAN_STEP");
    /* the kept checkpoint is the step-3 one: resuming from it gives steps 4..6 of run a */
    CHECK(run(ctx, nd, 1, more, 1, err, sizeof err) == 0, "resume after the NaN stop: %s", err);
    snprintf(path, sizeof path, "%s/metrics.csv", nd);
    char *csv_n = slurp(path);
    char ln[4096];
    loss_rows(csv_n, ln, sizeof ln);
    CHECK(!strcmp(la, ln), "resumed after NaN: the losses of the uninterrupted run:\n  %s\n  %s", la, ln);
    free(csv_n);
#else
    printf("test hooks not compiled in (configure --enable-test-hooks): NaN stop not checked\n");
#endif
}

int main(void)
{
    tu_begin("test-harness", SEED);
    test_keys();
    char tmp[] = "/tmp/metacl-harness-XXXXXX";
    if (!mkdtemp(tmp)) {
        perror("mkdtemp");
        return 1;
    }
    mcl_ctx *ctx = tu_ctx_ref();
    mcl_ctx_set_seed(ctx, SEED);
    test_runs(ctx, tmp);
    test_chance_window(ctx, tmp);
    mcl_ctx_free(ctx);
    tu_rm_rf(tmp);
    return tu_summary();
}
