/* eval_acl.c — `metacl eval acl`: the evaluation protocols of doc/acl.md, Evaluation on trained ACL
 * checkpoints, next to the hand-crafted SGD/Adam baselines on the same data.
 *
 *   metacl eval acl --ckpt [NAME=]FILE... --protocol seq|two-task|split-dil|split-cil
 *                   --data SPEC... [--tasks T] [--n-way N] [--k-shot K] [--runs R]
 *                   [--episodes E] [--seed S] [--baseline NAME[:KEY=VALUE,...]]...
 *                   [--figures DIR] [--json] [--json-out FILE] [--backend ref|opencl]
 *                   [--device N|NAME]
 *
 * SPEC is a data set ("hanzi", "fmnist", "idx:IMG,LAB", "pngdir:DIR") optionally followed by
 * "@" and a class list ("fmnist@0-4", "hershey@1,5,9"). seq / two-task: one SPEC per task
 * position (the last one repeats); the TEST split (held-out classes of stroke sets, the test
 * file of fmnist). split-dil / split-cil: one SPEC whose train split gives the context
 * examples and whose test split the queries (doc/acl.md, Evaluation).
 * Output: a Markdown table on stdout (mean ± 95 % CI over runs, in %), or JSON with --json;
 * --json-out FILE writes the JSON to FILE (atomically) as well as the table to stdout. The JSON
 * carries accuracies as fractions in [0, 1] with 6 decimals ("units": "fraction"): the table's
 * cells are these numbers times 100, rounded to one decimal. It ends with a provenance block
 * (version, commit, backend, device, the evaluation settings, seed, the data sets' SHA-256).
 * On a terminal, a progress line on stderr (models and runs done, ETA; tools/cli/progress.h);
 * --figures DIR writes the accuracy matrices and, for the first checkpoint, heat-maps of one
 * SRWM head's four sub-matrices while a demo sequence is consumed.
 * --baseline NAME[:KEY=VALUE,...]: sgd, adam, ewc, ewc-online, si, lwf, replay with their keys
 * (mcl_baseline_parse in baseline.h; the old form sgd|adam:LR:EPOCHS still works).
 * --select: each baseline's lr, epochs and method value chosen by a grid search on the same
 * protocol over validation data (seq: the meta-validation classes; split: the held-out 'val'
 * images of fmnist-val), the values its spec gives kept; the grid goes to stderr and to the
 * JSON ("selection" of each selected model).
 * Exit: 0 ok, 1 runtime error, 2 usage.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acl_eval.h"
#include "acl_train.h"
#include "baseline.h"
#include "cli.h"
#include "dist.h"
#include "lm_train.h"
#include "dataset_io.h"
#include "plot.h"
#include "progress.h"
#include "smn_train.h"
#include "train.h"

#define MAX_MODELS 16 /* --ckpt + --baseline: the review job's CIL tables hold 2 + 8 */
#define MAX_DATA 16
#define MAX_CLASSES 4096
/* Split-X streams of up to 64 tasks (Split-Omniglot's 20 in the paper's App. B.2); task
 * sequences (seq, two-task) stay within MCL_ACL_MAX_TASKS, the tasks of the ACL objective */
#define MAX_SPLIT_TASKS 64

typedef struct model_entry {
    char name[128];
    const char *path;     /* checkpoint, or NULL for a baseline */
    mcl_baseline_config base;
    int fix_lr, fix_epochs, fix_hp; /* --baseline gave the value: --select keeps it */
    int selected;                   /* --select ran: sel, hp_name are set          */
    mcl_baseline_selection sel;
    const char *hp_name;            /* the method's own hyperparameter, or NULL    */
    mcl_acl *m;
    mcl_cl_result res;
} model_entry;

typedef struct data_entry {
    const char *arg; /* as given: SPEC[@classes] */
    char spec[1024];
    int32_t classes[MAX_CLASSES];
    int n_classes; /* 0 = all */
    mcl_dataset *ds, *train;
} data_entry;

typedef struct eval_opts {
    mcl_cli_arg models[MAX_MODELS]; /* --ckpt and --baseline, in command-line order */
    int n_models;
    mcl_cli_arg data[MAX_DATA];
    int n_data;
    int protocol; /* index into protocols, -1 = not given */
    int feature_stats; /* mcl_acl_feature_stats for every --ckpt, -1 = each checkpoint's own */
    int tasks, n_way, k_shot, runs, episodes, seed;
    int json, select, final_only, quiet, val_classes;
    char figures[4096], data_dir[4096], backend[64], device[256], json_out[4096];
} eval_opts;

#define PROTOCOLS "seq|two-task|split-dil|split-cil"
static const char *const protocol_names[] = {"seq", "two-task", "split-dil", "split-cil"};

static const mcl_key eval_keys[] = {
    MCL_OPT_APPEND("ckpt", 0, eval_opts, models, n_models, "[NAME=]FILE",
                   "a trained checkpoint (the table compares them); a FILE without\n"
                   "'/' that is not a file here is an installed checkpoint\n"
                   "(" MCL_CLI_CHECKPOINTS_HELP ", .ckpt optional)"),
    MCL_OPT_ENUM("protocol", 0, eval_opts, protocol, PROTOCOLS, NULL,
                 "(required) seq / two-task: N-way K-shot task sequences, A alone,\n"
                 "B alone, A and B after A->B (paper Tables 1, 2, 9); split-dil /\n"
                 "split-cil: Split-X, domain / class incremental (doc/acl-model.md 5)"),
    MCL_OPT_APPEND("data", 0, eval_opts, data, n_data, "SPEC",
                   "data set [@classes], e.g. hanzi, fmnist@0-4 (seq: one per task)"),
    MCL_OPT_INT("tasks", 0, eval_opts, tasks, 1, MAX_SPLIT_TASKS, NULL, "T",
                "tasks per sequence (seq: default = number of --data, two-task: 2, at most 16;\n"
                "split-dil: 5; split-cil: 5, or 2 for the 2-task version; at most 64)"),
    MCL_OPT_INT("n-way", 0, eval_opts, n_way, 1, 1000, "5", "N", "seq: classes per task"),
    MCL_OPT_INT("k-shot", 0, eval_opts, k_shot, 1, 10000, "5", "K",
                "seq: examples per class; split: training images per class"),
    MCL_OPT_INT("runs", 0, eval_opts, runs, 1, 1000, NULL, "R", "runs (seq: 5 sets of test episodes; split: 10 runs)"),
    MCL_OPT_INT("episodes", 0, eval_opts, episodes, 1, 1000000, "64", "E", "seq: episodes per run"),
    MCL_OPT_INT("seed", 0, eval_opts, seed, 0, 2000000000, "1", "S", "seed of the episodes, splits and baselines"),
    MCL_OPT_APPEND("baseline", 0, eval_opts, models, n_models, "NAME[:KEY=VALUE,...]",
                   "also run a Conv-4 + linear baseline trained on each task in turn:\n"
                   "NAME sgd, adam (plain fine-tuning), ewc, ewc-online, si, lwf, replay;\n"
                   "keys lr, epochs, batch, optim=sgd|adam, regime=shots|full (full: every\n"
                   "training image of a task's classes, split protocols), lambda (ewc,\n"
                   "ewc-online, lwf), gamma (ewc-online), fisher (ewc: examples of the\n"
                   "Fisher, 0 = all), c, xi (si), T (lwf), buffer, replay-batch (replay);\n"
                   "e.g. ewc:lambda=100,lr=0.01,epochs=5 (defaults and formulas: doc/acl.md)"),
    MCL_OPT_ENUM("feature-stats", 0, eval_opts, feature_stats, MCL_ACL_FEATSTATS_CHOICES, NULL,
                 "evaluate every --ckpt (feature_norm batch) with these feature\n"
                 "statistics instead of its own model.feature_stats: running\n"
                 "estimates, each call's images, or each sequence's own context\n"
                 "examples (doc/acl-model.md 2)"),
    MCL_OPT_FLAG("final-only", 0, eval_opts, final_only,
                 "split: query only after the last task (the paper's protocol; no\n"
                 "backward transfer / forgetting, 5x faster for 5 tasks)"),
    MCL_OPT_FLAG("val-classes", 0, eval_opts, val_classes,
                 "seq/two-task: episodes from the meta-validation classes of the stroke\n"
                 "sets instead of their meta-test classes (to choose between checkpoints\n"
                 "without touching the test classes)"),
    MCL_OPT_FLAG("select", 0, eval_opts, select,
                 "choose each baseline's lr, epochs and method value (lambda, c) by a\n"
                 "grid search on the same protocol (keys given in --baseline stay fixed):\n"
                 "seq/two-task on the meta-validation classes; split-dil/split-cil on a\n"
                 "held-out split of the training images (--data fmnist-val: contexts from\n"
                 "its 55000, queries its 5000 'val' images; never the test file)"),
    MCL_OPT_STR("figures", 0, eval_opts, figures, NULL, "DIR", "write PNG figures (accuracy matrices, SRWM heat-maps)"),
    MCL_OPT_STR("data-dir", 0, eval_opts, data_dir, NULL, "DIR", "prepared data sets (default $METACL_DATA, else ./data/cache if it exists, else $XDG_DATA_HOME/metacl)"),
    MCL_OPT_FLAG("json", 0, eval_opts, json, "print JSON instead of the Markdown table (accuracies as fractions)"),
    MCL_OPT_STR("json-out", 0, eval_opts, json_out, NULL, "FILE",
                "also write the JSON of --json to FILE (the table still goes to stdout)"),
    MCL_OPT_FLAG("quiet", 0, eval_opts, quiet, "no progress line on stderr (there is none when stderr is not a terminal)"),
    MCL_OPT_BACKEND(eval_opts, backend),
    MCL_OPT_DEVICE(eval_opts, device),
};
#define N_EVAL_KEYS ((int)(sizeof eval_keys / sizeof eval_keys[0]))

static const char eval_synopsis[] =
    "--ckpt [NAME=]FILE... --protocol seq|two-task|split-dil|split-cil --data SPEC...\n"
    "... [--tasks T] [--n-way N] [--k-shot K] [--runs R] [--episodes E] [--seed S]\n"
    "... [--baseline NAME[:KEY=VALUE,...]]... [--feature-stats " MCL_ACL_FEATSTATS_CHOICES "]\n"
    "... [--figures DIR] [--json] [--json-out FILE] [--backend ref|opencl]";
static const char eval_about[] =
    "The evaluation protocols of doc/acl-model.md 5 on trained checkpoints, next to the hand-crafted\n"
    "baselines (SGD, Adam, EWC, online EWC, SI, LwF, replay) on the same data. A table on stdout (mean +- 95 % CI half-width over runs, in %).";

/* "SPEC[@a-b,c,...]" */
static int parse_data(const char *arg, data_entry *d)
{
    memset(d, 0, sizeof *d);
    const char *at = strrchr(arg, '@');
    size_t n = at ? (size_t)(at - arg) : strlen(arg);
    if (n == 0 || n >= sizeof d->spec) return 1;
    memcpy(d->spec, arg, n);
    if (!at) return 0;
    const char *p = at + 1;
    while (*p) {
        char *end = NULL;
        errno = 0;
        long a = strtol(p, &end, 10), b = a;
        if (end == p || a < 0 || a > INT32_MAX || errno) return 1; /* never wraps */
        p = end;
        if (*p == '-') {
            b = strtol(p + 1, &end, 10);
            if (end == p + 1 || b < a || b > INT32_MAX || errno) return 1;
            p = end;
        }
        for (long c = a; c <= b; c++) {
            if (d->n_classes == MAX_CLASSES) return 1;
            d->classes[d->n_classes++] = (int32_t)c;
        }
        if (*p == ',') p++;
        else if (*p) return 1;
    }
    return d->n_classes == 0;
}

static int is_user_spec(const char *s) { return !strncmp(s, "idx:", 4) || !strncmp(s, "pngdir:", 7); }

/* "eval acl": messages start "metacl eval acl: " */
static char cmd_name[64] = "eval";

/* ------------------------------------------------------------------ output */

/* One table cell " mean ± h |" in percent: the mean over the runs x[0], x[stride], ... (n of
 * them) and the half-width h of its 95 % interval (Student's t, metrics.h); with one run the
 * mean alone (no interval: never "± 0.0"); "–" when nothing was measured. Bold when asked. */
static void cell(const double *x, int n, int64_t stride, int bold)
{
    const char *b = bold ? "**" : "";
    double m, h;
    mcl_ci95(x, n, stride, &m, &h, NULL);
    if (isnan(m))
        printf(" %s–%s |", b, b);
    else if (isnan(h))
        printf(" %s%.1f%s |", b, 100.0 * m, b);
    else
        printf(" %s%.1f ± %.1f%s |", b, 100.0 * m, 100.0 * h, b);
}

/* the per-run metrics: run[r].acc is at &run[0].acc + r * RUN_STRIDE */
#define RUN_STRIDE ((int64_t)(sizeof(mcl_cl_metrics) / sizeof(double)))

static void print_seq_table(model_entry *me, int n, int T, const char *const *task_names)
{
    printf("| model |");
    for (int j = 0; j < T; j++) printf(" %s alone |", task_names[j]);
    for (int j = 0; j < T; j++) printf(" %s after all |", task_names[j]);
    printf(" ACC | BWT |\n|---|");
    for (int j = 0; j < 2 * T + 2; j++) printf("---|");
    printf("\n");
    for (int k = 0; k < n; k++) {
        mcl_cl_result *r = &me[k].res;
        const int R = r->n_runs;
        printf("| %s |", me[k].name);
        for (int j = 0; j < T; j++) cell(r->alone + j, R, T, 0);
        for (int j = 0; j < T; j++) cell(r->final_acc + j, R, T, 0);
        cell(&r->run[0].acc, R, RUN_STRIDE, 0);
        cell(&r->run[0].bwt, R, RUN_STRIDE, 0);
        printf("\n");
    }
}

static void print_split_table(model_entry *me, int n, int T)
{
    printf("| model |");
    for (int j = 0; j < T; j++) printf(" task %d |", j + 1);
    printf(" mean (ACC) | BWT | forgetting |\n|---|");
    for (int j = 0; j < T + 3; j++) printf("---|");
    printf("\n");
    for (int k = 0; k < n; k++) {
        mcl_cl_result *r = &me[k].res;
        const int R = r->n_runs;
        printf("| %s |", me[k].name);
        for (int j = 0; j < T; j++) cell(r->final_acc + j, R, T, 0);
        cell(&r->run[0].acc, R, RUN_STRIDE, 1);
        cell(&r->run[0].bwt, R, RUN_STRIDE, 0);
        cell(&r->run[0].forgetting, R, RUN_STRIDE, 0);
        printf("\n");
    }
}

/* key: the runs' values x[0], x[stride], ... (n) as an array; key_ci95: their 95 % half-width
 * (null with one run). The per-run arrays let a reader (tools/scripts/acl-targets.sh) pair two models
 * run by run: run r of every model reads the same episodes (seed, Philox stream r). */
static void json_runs(mcl_json *j, const char *key, const double *x, int n, int64_t stride)
{
    double m, h, *v = malloc(sizeof *v * (size_t)(n > 0 ? n : 1));
    char k2[64];
    for (int i = 0; v && i < n; i++) v[i] = x[(int64_t)i * stride];
    mcl_json_num_array(j, key, v, v ? n : 0, 6);
    free(v);
    mcl_ci95(x, n, stride, &m, &h, NULL);
    snprintf(k2, sizeof k2, "%s_ci95", key);
    mcl_json_num(j, k2, h, 6);
}

/* What the provenance block of the JSON needs besides the context. */
typedef struct eval_facts {
    const char *protocol, *data_dir;
    int tasks, runs, n_way, k_shot, episodes, seed, final_only, select, val_classes;
    const data_entry *de;
    int n_data;
    int seq; /* task sequences (else Split-X) */
} eval_facts;

/* --select's grid of one baseline: the validation data it ran on (data sets, the splits of
 * the contexts and of the queries, the protocol), every point (lr, epochs, the method's
 * hyperparameter, score = mean ± std over runs of the final average accuracy) and the chosen
 * index. */
static void print_selection(mcl_json *j, const model_entry *e, const eval_facts *x)
{
    const mcl_baseline_selection *s = &e->sel;
    mcl_json_begin_obj(j, "selection");
    mcl_json_str(j, "protocol", x->protocol);
    mcl_json_begin_arr(j, "data");
    for (int d = 0; d < x->n_data; d++) mcl_json_str(j, NULL, x->de[d].arg);
    mcl_json_end_arr(j);
    /* seq: episodes of the meta-validation classes; Split-X: contexts from the train split
     * (the held-out images excluded), queries its held-out val split */
    mcl_json_str(j, "context_split", x->seq ? "val" : "train");
    mcl_json_str(j, "query_split", "val");
    mcl_json_int(j, "runs", x->runs);
    if (x->seq)
        mcl_json_int(j, "episodes", x->episodes);
    else
        mcl_json_bool(j, "final_only", 1);
    mcl_json_str(j, "score", "acc");
    mcl_json_str(j, "hyperparameter", e->hp_name);
    mcl_json_begin_arr(j, "fixed");
    if (e->fix_lr) mcl_json_str(j, NULL, "lr");
    if (e->fix_epochs) mcl_json_str(j, NULL, "epochs");
    if (e->fix_hp && e->hp_name) mcl_json_str(j, NULL, e->hp_name);
    mcl_json_end_arr(j);
    mcl_json_int(j, "n", s->n);
    /* points[0..n_grid) are the grid; the rest grew it past the edge the best sat on */
    mcl_json_int(j, "n_grid", s->n_grid);
    mcl_json_int(j, "chosen", s->best);
    mcl_json_begin_arr(j, "points");
    for (int g = 0; g < s->n; g++) {
        const mcl_baseline_grid_point *p = &s->point[g];
        mcl_json_begin_obj(j, NULL);
        mcl_json_num(j, "lr", (double)p->lr, 8);
        mcl_json_int(j, "epochs", p->epochs);
        if (e->hp_name) mcl_json_num(j, e->hp_name, (double)p->hp, 6);
        mcl_json_num(j, "score", p->score, 6);
        mcl_json_num(j, "score_std", p->score_std, 6);
        mcl_json_end_obj(j);
    }
    mcl_json_end_arr(j);
    mcl_json_end_obj(j);
}

static void print_json(FILE *f, model_entry *me, int n, const eval_facts *x, mcl_ctx *ctx)
{
    const int T = x->tasks;
    mcl_json j;
    mcl_json_init(&j, f);
    mcl_json_begin_obj(&j, NULL);
    mcl_json_str(&j, "protocol", x->protocol);
    mcl_json_int(&j, "tasks", T);
    mcl_json_int(&j, "runs", x->runs);
    mcl_json_str(&j, "units", "fraction"); /* the table: 100 x, one decimal */
    mcl_json_begin_arr(&j, "models");
    for (int k = 0; k < n; k++) {
        mcl_cl_result *r = &me[k].res;
        mcl_json_begin_obj(&j, NULL);
        mcl_json_str(&j, "name", me[k].name);
        mcl_json_str(&j, "kind", me[k].path ? "acl" : mcl_baseline_method_name(me[k].base.method, me[k].base.optim));
        /* the accuracy matrix R [T][T], row-major (R[i][j]: task j after training on task i) */
        mcl_json_num_array(&j, "matrix_mean", r->acc_mean, T * T, 6);
        mcl_json_num_array(&j, "matrix_std", r->acc_std, T * T, 6);
        mcl_json_num_array(&j, "alone_mean", r->alone_mean, T, 6);
        mcl_json_num_array(&j, "alone_std", r->alone_std, T, 6);
        mcl_json_num_array(&j, "final_mean", r->final_mean, T, 6);
        mcl_json_num_array(&j, "final_std", r->final_std, T, 6);
        mcl_json_num(&j, "acc", r->mean.acc, 6);
        mcl_json_num(&j, "acc_std", r->std.acc, 6);
        mcl_json_num(&j, "bwt", r->mean.bwt, 6);
        mcl_json_num(&j, "bwt_std", r->std.bwt, 6);
        mcl_json_num(&j, "forgetting", r->mean.forgetting, 6);
        mcl_json_num(&j, "forgetting_std", r->std.forgetting, 6);
        /* per run (run r: the same episodes for every model) and the 95 % half-widths */
        json_runs(&j, "acc_runs", &r->run[0].acc, r->n_runs, RUN_STRIDE);
        json_runs(&j, "bwt_runs", &r->run[0].bwt, r->n_runs, RUN_STRIDE);
        json_runs(&j, "forgetting_runs", &r->run[0].forgetting, r->n_runs, RUN_STRIDE);
        for (int t = 0; t < T && t < 16; t++) {
            char key[32];
            snprintf(key, sizeof key, "alone%d_runs", t);
            json_runs(&j, key, r->alone + t, r->n_runs, T);
            snprintf(key, sizeof key, "final%d_runs", t);
            json_runs(&j, key, r->final_acc + t, r->n_runs, T);
        }
        if (me[k].selected) print_selection(&j, &me[k], x);
        mcl_json_end_obj(&j);
    }
    mcl_json_end_arr(&j);
    mcl_cli_json_provenance_begin(&j, ctx);
    mcl_json_begin_obj(&j, "config");
    mcl_json_str(&j, "protocol", x->protocol);
    mcl_json_int(&j, "tasks", T);
    mcl_json_int(&j, "runs", x->runs);
    mcl_json_int(&j, "n_way", x->n_way);
    mcl_json_int(&j, "k_shot", x->k_shot);
    mcl_json_int(&j, "episodes", x->episodes);
    mcl_json_bool(&j, "final_only", x->final_only);
    mcl_json_str(&j, "classes", x->seq ? (x->val_classes ? "meta-validation" : "meta-test") : "test split");
    mcl_json_bool(&j, "select", x->select);
    mcl_json_begin_arr(&j, "models");
    for (int k = 0; k < n; k++) {
        mcl_json_begin_obj(&j, NULL);
        mcl_json_str(&j, "name", me[k].name);
        if (me[k].path) {
            char fs[32];
            mcl_json_str(&j, "checkpoint", me[k].path);
            if (me[k].m && mcl_key_choice_name(MCL_ACL_FEATSTATS_CHOICES, me[k].m->cfg.feature_stats, fs, sizeof fs) == 0)
                mcl_json_str(&j, "feature_stats", fs);
        } else {
            const mcl_baseline_config *b = &me[k].base;
            mcl_json_str(&j, "method", mcl_baseline_method_name(b->method, b->optim));
            mcl_json_str(&j, "optimizer", b->optim == MCL_OPTIM_SGD ? "sgd" : "adam");
            mcl_json_num(&j, "lr", (double)b->lr, 6);
            mcl_json_int(&j, "epochs", b->epochs);
            mcl_json_str(&j, "regime", b->regime == MCL_BASELINE_FULL ? "full" : "shots");
            if (b->method == MCL_BASELINE_EWC || b->method == MCL_BASELINE_EWC_ONLINE) {
                mcl_json_num(&j, "lambda", (double)b->ewc_lambda, 6);
                mcl_json_int(&j, "fisher_examples", b->fisher_max);
            }
            if (b->method == MCL_BASELINE_EWC_ONLINE) mcl_json_num(&j, "gamma", (double)b->ewc_gamma, 6);
            if (b->method == MCL_BASELINE_SI) {
                mcl_json_num(&j, "c", (double)b->si_c, 6);
                mcl_json_num(&j, "xi", (double)b->si_xi, 6);
            }
            if (b->method == MCL_BASELINE_LWF) {
                mcl_json_num(&j, "lambda", (double)b->lwf_lambda, 6);
                mcl_json_num(&j, "T", (double)b->lwf_t, 6);
            }
            if (b->method == MCL_BASELINE_REPLAY) {
                mcl_json_int(&j, "buffer", b->buffer);
                mcl_json_int(&j, "replay_batch", b->replay_batch ? b->replay_batch : b->batch_size);
            }
        }
        mcl_json_end_obj(&j);
    }
    mcl_json_end_arr(&j);
    mcl_json_end_obj(&j);
    mcl_json_begin_obj(&j, "seeds");
    mcl_json_int(&j, "seed", x->seed);
    mcl_json_end_obj(&j);
    mcl_json_begin_arr(&j, "data");
    for (int d = 0; d < x->n_data; d++) {
        char spec[1100];
        snprintf(spec, sizeof spec, "%s", x->de[d].spec);
        mcl_cli_json_dataset(&j, spec, x->data_dir);
    }
    mcl_json_end_arr(&j);
    mcl_json_end_obj(&j);
    mcl_json_end_obj(&j);
    mcl_json_finish(&j);
}

/* --json-out FILE: written atomically (mcl_atomic_open: a new temporary file, then renamed).
 * 0 ok, 1 after a message. */
static int write_json_file(const char *path, model_entry *me, int n, const eval_facts *x, mcl_ctx *ctx)
{
    char err[4400];
    mcl_atomic_file af;
    if (mcl_atomic_open(&af, path, err, sizeof err) != MCL_OK) {
        fprintf(stderr, "metacl %s: --json-out %s\n", cmd_name, err);
        return 1;
    }
    print_json(af.f, me, n, x, ctx);
    if (mcl_atomic_commit(&af, err, sizeof err) != MCL_OK) {
        fprintf(stderr, "metacl %s: --json-out %s\n", cmd_name, err);
        return 1;
    }
    return 0;
}

/* Progress: the protocols report each finished run; the line counts runs of all models. */
typedef struct run_progress {
    int64_t before; /* runs of the models already evaluated */
} run_progress;

static void on_run(void *arg, int runs_done, int n_runs)
{
    (void)n_runs;
    mcl_progress_update(((run_progress *)arg)->before + runs_done);
}

/* ------------------------------------------------------------------ figures */

/* A file-name-safe but readable form of a model name: lower case, words joined by '-',
 * "lr 0.1" -> "lr0.1", "25 epochs" -> "25ep", a trailing ".ckpt" dropped; only [a-z0-9._-]
 * and never a leading '.' or '-'. "SGD (lr 0.1, 25 epochs)" -> "sgd-lr0.1-25ep". */
static void figure_slug(const char *name, char *out, size_t n)
{
    char words[16][64];
    int nw = 0;
    const char *p = name;
    while (*p && nw < 16) {
        while (*p && !((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '.'))
            p++;
        size_t k = 0;
        while (*p && ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '.')) {
            if (k + 1 < sizeof words[0]) words[nw][k++] = (char)(*p >= 'A' && *p <= 'Z' ? *p - 'A' + 'a' : *p);
            p++;
        }
        words[nw][k] = 0;
        size_t L = strlen(words[nw]);
        if (L > 5 && !strcmp(words[nw] + L - 5, ".ckpt")) words[nw][L - 5] = 0;
        while (words[nw][0] == '.') memmove(words[nw], words[nw] + 1, strlen(words[nw]));
        if (words[nw][0]) nw++;
    }
    size_t o = 0;
    out[0] = 0;
    for (int i = 0; i < nw && o + 1 < n; i++) {
        const char *w = words[i];
        int glue = 0; /* "lr" + number, number + "epochs" */
        if (i > 0 && !strcmp(words[i - 1], "lr") && (w[0] >= '0' && w[0] <= '9')) glue = 1;
        if (!strcmp(w, "epochs") || !strcmp(w, "epoch")) {
            w = "ep";
            glue = i > 0 && words[i - 1][0] >= '0' && words[i - 1][0] <= '9';
        }
        int r = snprintf(out + o, n - o, "%s%s", (o > 0 && !glue) ? "-" : "", w);
        if (r < 0) break;
        o += (size_t)r < n - o ? (size_t)r : n - o - 1;
    }
    if (!out[0]) snprintf(out, n, "model");
}

/* The accuracy matrices of models [k0, k1) side by side with one colour bar, into path: per
 * cell the mean over runs and, under it, the 95 % CI half-width (Student's t over the runs'
 * values, metrics.h: the same numbers as the tables; none with one run); the title names the
 * protocol, the data (data: "hanzi -> hershey"), the statistic and the number of runs. */
static int write_matrices(const char *path, model_entry *me, int k0, int k1, const char *protocol, int T,
                          const char *data, int runs)
{
    mcl_heatmap_panel pn[MAX_MODELS];
    float *buf = malloc((size_t)(2 * MAX_MODELS * T * T) * sizeof *buf);
    char title[256], err[512];
    if (!buf) return 1;
    for (int k = k0; k < k1; k++) {
        float *v = buf + (size_t)(2 * (k - k0) * T * T), *e = v + T * T;
        for (int i = 0; i < T * T; i++) {
            double mean, half;
            mcl_ci95(me[k].res.acc + i, me[k].res.n_runs, (int64_t)T * T, &mean, &half, NULL);
            v[i] = (float)me[k].res.acc_mean[i];
            e[i] = (float)half; /* NaN: not measured, or one run */
        }
        pn[k - k0] = (mcl_heatmap_panel){k1 - k0 > 1 ? me[k].name : NULL, v, e, T, T};
    }
    char stat[64];
    if (runs > 1)
        snprintf(stat, sizeof stat, "mean \xC2\xB1 95%% CI over %d runs", runs);
    else
        snprintf(stat, sizeof stat, "1 run: no interval");
    if (k1 - k0 == 1)
        snprintf(title, sizeof title, "%s, %s, %s: accuracy %% (%s)", me[k0].name, protocol, data, stat);
    else
        snprintf(title, sizeof title, "%s, %s: accuracy matrices (%%, %s)", protocol, data, stat);
    mcl_heatmap_spec sp;
    memset(&sp, 0, sizeof sp);
    sp.title = title;
    sp.xlabel = "accuracy on task j";
    sp.ylabel = "after learning task i";
    sp.index_base = 1;
    sp.bar_label = "accuracy (%)";
    sp.vmin = 0.0f;
    sp.vmax = 1.0f;
    sp.annotate = 1;
    sp.annot_mul = 100.0;
    sp.annot_decimals = 1;
    mcl_status st = mcl_plot_heatmaps(path, &sp, k1 - k0, pn, err, sizeof err);
    free(buf);
    if (st != MCL_OK) {
        fprintf(stderr, "metacl %s: figure: %s\n", cmd_name, err);
        return 1;
    }
    fprintf(stderr, "wrote %s\n", path);
    return 0;
}

/* How the four SRWM sub-matrices of layer 0, head 0 change (dW = W_t - W_0) at 4 points of a
 * demo context sequence: one row per sub-matrix, each with its own symmetric colour scale. */
static int write_srwm_png(const char *dir, const char *model, const char *display, mcl_acl *m, mcl_ctx *ctx,
                          const mcl_dataset *ds, const int64_t *index, const int32_t *label,
                          int64_t n, int normalize)
{
    enum { MAX_AT = 5 };
    int64_t at[MAX_AT];
    int NAT = 0; /* up to 5 strictly increasing points 0 .. n */
    for (int i = 0; i < MAX_AT; i++) {
        int64_t s = n * i / (MAX_AT - 1);
        if (NAT == 0 || s > at[NAT - 1]) at[NAT++] = s;
    }
    if (NAT < 2) return 0; /* no change to show */
    mcl_acl_fw_trace tr;
    memset(&tr, 0, sizeof tr);
    if (mcl_acl_record_fast_weights(m, ctx, ds, index, label, n, at, NAT, 0, 0, normalize, &tr) != MCL_OK) {
        fprintf(stderr, "metacl %s: fast-weight trace: %s\n", cmd_name, mcl_ctx_error(ctx));
        mcl_ctx_clear_error(ctx);
        return 1;
    }
    const int D = tr.D, NP = NAT - 1;
    float *delta = malloc((size_t)(4 * NP) * (size_t)(D * D) * sizeof *delta);
    if (!delta) {
        mcl_acl_fw_trace_free(&tr);
        return 1;
    }
    mcl_heatmap_panel pn[4 * MAX_AT];
    char names[4 * MAX_AT][64];
    static const char *const part[4] = {"W_y", "W_q", "W_k", "w_b"};
    static const char *const bar[4] = {"\xCE\x94W_y", "\xCE\x94W_q", "\xCE\x94W_k", "\xCE\x94w_b"};
    for (int p = 0; p < 4; p++) {
        const float *base = p == 0 ? tr.Wy : p == 1 ? tr.Wq : p == 2 ? tr.Wk : tr.wb;
        int w = p == 3 ? 4 : D;
        for (int k = 1; k < NAT; k++) {
            int idx = p * NP + (k - 1);
            float *d = delta + (size_t)idx * (size_t)(D * D);
            const float *wt = base + (size_t)k * (size_t)(D * w);
            for (int e = 0; e < D * w; e++) d[e] = wt[e] - base[e];
            snprintf(names[idx], sizeof names[idx], "\xCE\x94%s after %lld example%s", part[p], (long long)at[k],
                     at[k] == 1 ? "" : "s");
            pn[idx] = (mcl_heatmap_panel){names[idx], d, NULL, D, w};
        }
    }
    char path[4400], title[256], err[512];
    snprintf(path, sizeof path, "%s/%s-srwm-layer0-head0.png", dir, model);
    snprintf(title, sizeof title, "%s: SRWM layer 0, head 0, \xCE\x94W = W_t \xE2\x88\x92 W_0 while %lld examples are consumed",
             display, (long long)n);
    mcl_heatmap_spec sp;
    memset(&sp, 0, sizeof sp);
    sp.title = title;
    sp.xlabel = "output index m";
    sp.ylabel = "input index e";
    sp.index_base = 0;
    sp.row_bar_labels = bar;
    sp.per_row_scale = 1;
    sp.panels_per_row = NP;
    mcl_status st = mcl_plot_heatmaps(path, &sp, 4 * NP, pn, err, sizeof err);
    free(delta);
    mcl_acl_fw_trace_free(&tr);
    if (st != MCL_OK) {
        fprintf(stderr, "metacl %s: figure: %s\n", cmd_name, err);
        return 1;
    }
    fprintf(stderr, "wrote %s\n", path);
    return 0;
}

/* ------------------------------------------------------------------ main */

/* --baseline NAME[:KEY=VALUE,...] (mcl_baseline_parse); 0 ok, else a message in err. The
 * values the spec gives (lr, epochs, the method's hyperparameter) are the ones --select keeps. */
static int parse_baseline(const char *arg, model_entry *e, char *err, size_t len)
{
    memset(e, 0, sizeof *e);
    if (mcl_baseline_parse(arg, &e->base, err, len) != MCL_OK) return 1;
    mcl_baseline_describe(&e->base, e->name, sizeof e->name);
    const float *hv = NULL;
    int nh = 0;
    if (mcl_baseline_method_grid(e->base.method, &hv, &nh, &e->hp_name) != MCL_OK) e->hp_name = NULL;
    e->fix_lr = mcl_baseline_spec_gives(arg, "lr");
    e->fix_epochs = mcl_baseline_spec_gives(arg, "epochs");
    e->fix_hp = e->hp_name && mcl_baseline_spec_gives(arg, e->hp_name);
    return 0;
}

/* --select with a split protocol needs held-out images of the training classes: a view of a
 * prepared set that moves some training images to its val split (fmnist-val; doc/data.md).
 * 0 when spec is one, else 2 after a message. */
static int check_split_select(const char *spec, const char *protocol)
{
    if (!is_user_spec(spec) && strcmp(mcl_dataset_prepared_name(spec), spec) != 0) return 0;
    if (!strcmp(spec, mcl_dataset_prepared_name(MCL_FMNIST_VAL_NAME)))
        fprintf(stderr, "metacl %s: --select with --protocol %s chooses on held-out training images, and\n"
                        "  '%s' has none: use --data %s (its last %d training images per class are its\n"
                        "  split 'val'; the test file is never used for the choice)\n",
                cmd_name, protocol, spec, MCL_FMNIST_VAL_NAME, MCL_FMNIST_VAL_PER_CLASS);
    else
        fprintf(stderr, "metacl %s: --select with --protocol %s chooses on held-out training images, and\n"
                        "  '%s' has none (%s has: --data %s)\n",
                cmd_name, protocol, spec, MCL_FMNIST_VAL_NAME, MCL_FMNIST_VAL_NAME);
    return 2;
}

static int eval_acl(const mcl_family *fam, int argc, char **argv);

/* The families `metacl eval` can evaluate (each one of mcl_families()). */
static const struct evaluator {
    const mcl_family *fam;
    int (*run)(const mcl_family *fam, int argc, char **argv);
} evaluators[] = {{&mcl_acl_family, eval_acl}, {&mcl_smn_family, mcl_cli_eval_smn},
                   {&mcl_lm_family, mcl_cli_eval_lm}};
#define N_EVALUATORS ((int)(sizeof evaluators / sizeof evaluators[0]))

/* "acl, ...": the families of mcl_families() that have an evaluator. */
static void list_eval_families(FILE *f)
{
    int k = 0;
    for (const mcl_family *const *fam = mcl_families(); *fam; fam++)
        for (int i = 0; i < N_EVALUATORS; i++)
            if (evaluators[i].fam == *fam) fprintf(f, "%s%s", k++ ? ", " : "", (*fam)->kind);
}

static void print_eval_families(FILE *f, const void *arg)
{
    (void)arg;
    fprintf(f, "families: ");
    list_eval_families(f);
    fprintf(f, "\n");
}

int mcl_cli_eval(int argc, char **argv)
{
    mcl_cli_cmd cmd = {.name = "eval FAMILY", .synopsis = eval_synopsis, .about = eval_about, .opts = eval_keys,
                       .n_opts = N_EVAL_KEYS, .more_help = print_eval_families};
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        mcl_cli_help(argc < 2 ? stderr : stdout, &cmd);
        return argc < 2 ? 2 : 0;
    }
    const mcl_family *fam = mcl_family_find(argv[1]);
    for (int i = 0; fam && i < N_EVALUATORS; i++)
        if (evaluators[i].fam == fam) return evaluators[i].run(fam, argc - 1, argv + 1);
    fprintf(stderr, "metacl eval: %s model family '%s' (available: ", fam ? "no evaluation for the" : "unknown",
            argv[1]);
    list_eval_families(stderr);
    fprintf(stderr, ")\n");
    return 2;
}

/* ------------------------------------------------------------------ the command, in phases */

/* One `metacl eval acl` run: the options, the models and data sets, the protocol's settings,
 * the context. Each phase below reads what the ones before it filled and returns the exit
 * code so far (0: go on). */
typedef struct acl_eval_run {
    eval_opts o;
    model_entry me[MAX_MODELS];
    int n_models;
    data_entry de[MAX_DATA];
    int n_data;
    const char *protocol, *figures, *data_dir, *json_out;
    int seq, split_mode, tasks, runs; /* seq: task sequences (seq, two-task), else Split-X */
    mcl_ctx *ctx;
    mcl_class_pool pools[MCL_ACL_MAX_TASKS]; /* seq: the classes of each task position */
    const char *task_names[MCL_ACL_MAX_TASKS];
    char tn[MCL_ACL_MAX_TASKS][48];
    mcl_seq_eval_cfg sc;
    mcl_splitx_eval_cfg xc;
} acl_eval_run;

/* Phase 1a: --ckpt / --baseline into model entries, --data into data entries (2 on a bad one). */
static int parse_entries(acl_eval_run *r)
{
    const eval_opts *o = &r->o;
    for (int i = 0; i < o->n_models; i++) {
        const char *v = o->models[i].value;
        model_entry *e = &r->me[r->n_models++];
        if (!strcmp(o->models[i].opt, "baseline")) {
            char perr[512];
            if (parse_baseline(v, e, perr, sizeof perr)) {
                fprintf(stderr, "metacl %s: --%s\n", cmd_name, perr);
                return 2;
            }
            continue;
        }
        const char *eq = strchr(v, '=');
        if (eq && eq != v && (size_t)(eq - v) < sizeof e->name) {
            memcpy(e->name, v, (size_t)(eq - v));
            e->path = eq + 1;
        } else {
            const char *b = strrchr(v, '/');
            snprintf(e->name, sizeof e->name, "%s", b ? b + 1 : v);
            e->path = v;
        }
    }
    for (int i = 0; i < o->n_data; i++) {
        if (parse_data(o->data[i].value, &r->de[r->n_data])) {
            fprintf(stderr, "metacl %s: --data '%s': want SPEC or SPEC@CLASSES (e.g. fmnist@0-4)\n", cmd_name,
                    o->data[i].value);
            return 2;
        }
        r->de[r->n_data++].arg = o->data[i].value;
    }
    return 0;
}

/* Phase 1b: the protocol, its defaults (tasks, runs) and the combinations it refuses (2). */
static int check_protocol(acl_eval_run *r)
{
    const eval_opts *o = &r->o;
    const char *protocol = r->protocol;
    r->split_mode = -1;
    if (!protocol) {
        fprintf(stderr, "metacl %s: --protocol is required (seq, two-task, split-dil, split-cil)\n", cmd_name);
        return 2;
    } else if (!strcmp(protocol, "seq") || !strcmp(protocol, "two-task")) {
        r->seq = 1;
        if (!r->tasks) r->tasks = !strcmp(protocol, "two-task") ? 2 : (r->n_data > 1 ? r->n_data : 2);
        if (r->tasks > MCL_ACL_MAX_TASKS) {
            fprintf(stderr, "metacl %s: --tasks = %d: %s takes at most %d tasks (the split protocols %d)\n",
                    cmd_name, r->tasks, protocol, MCL_ACL_MAX_TASKS, MAX_SPLIT_TASKS);
            return 2;
        }
        if (!r->runs) r->runs = 5;
    } else if (!strcmp(protocol, "split-dil") || !strcmp(protocol, "split-cil")) {
        r->split_mode = !strcmp(protocol, "split-dil") ? MCL_SPLITX_DOMAIN : MCL_SPLITX_CLASS;
        if (!r->tasks) r->tasks = 5;
        if (!r->runs) r->runs = 10;
    } else {
        fprintf(stderr, "metacl %s: unknown protocol '%s' (seq, two-task, split-dil, split-cil)\n", cmd_name, protocol);
        return 2;
    }
    if (r->n_models == 0 || r->n_data == 0) {
        fprintf(stderr, "metacl %s: give at least one --ckpt (or --baseline) and one --data\n", cmd_name);
        return 2;
    }
    for (int k = 0; k < r->n_models && r->seq; k++)
        if (!r->me[k].path && r->me[k].base.regime == MCL_BASELINE_FULL) {
            fprintf(stderr, "metacl %s: --baseline %s: regime=full is for the split protocols (task "
                            "sequences query images of the classes they learn)\n", cmd_name, r->me[k].name);
            return 2;
        }
    if (!r->seq && r->n_data != 1) {
        fprintf(stderr, "metacl %s: %s takes exactly one --data\n", cmd_name, protocol);
        return 2;
    }
    if (o->select && !r->seq && check_split_select(r->de[0].spec, protocol)) return 2;
    if (o->val_classes && !r->seq) {
        fprintf(stderr, "metacl %s: --val-classes is for seq and two-task; the split protocols validate "
                        "on held-out training images with --data fmnist-val\n", cmd_name);
        return 2;
    }
    for (int d = 0; d < r->n_data && o->val_classes; d++)
        if (is_user_spec(r->de[d].spec)) {
            fprintf(stderr, "metacl %s: --val-classes: user data '%s' has no meta-validation classes\n",
                    cmd_name, r->de[d].spec);
            return 2;
        }
    if (r->seq && r->n_data > r->tasks) {
        fprintf(stderr, "metacl %s: %d --data for %d task%s (one per task; fewer: the last one is used for "
                        "the remaining tasks)\n", cmd_name, r->n_data, r->tasks, r->tasks == 1 ? "" : "s");
        return 2;
    }
    return 0;
}

/* Phase 1: the arguments (MCL_CLI_GO's 0 to go on; 2 usage; 0 after --help is the parser's). */
static int check_args(acl_eval_run *r, int argc, char **argv, int *done)
{
    const mcl_cli_cmd cmd = {.name = cmd_name, .synopsis = eval_synopsis, .about = eval_about, .opts = eval_keys,
                             .n_opts = N_EVAL_KEYS};
    eval_opts *o = &r->o;
    o->protocol = -1;
    o->feature_stats = -1;
    mcl_cli_parsed parsed;
    int rc = mcl_cli_parse(&cmd, argc, argv, o, &parsed);
    if (rc != MCL_CLI_GO) {
        *done = 1;
        return rc;
    }
    r->tasks = o->tasks;
    r->runs = o->runs;
    r->protocol = o->protocol >= 0 ? protocol_names[o->protocol] : NULL;
    r->figures = o->figures[0] ? o->figures : NULL;
    r->data_dir = o->data_dir[0] ? o->data_dir : NULL;
    r->json_out = o->json_out[0] ? o->json_out : NULL;
    if (mcl_dist_rank() != 0) r->figures = r->json_out = NULL; /* MPI: rank 0 writes the files */
    if (o->quiet) mcl_progress_set_quiet(1);
    rc = parse_entries(r);
    return rc ? rc : check_protocol(r);
}

/* Phase 2: the data sets (seq: the test or meta-validation classes; split: train and test). */
static int load_data(acl_eval_run *r)
{
    char err[1024];
    for (int d = 0; d < r->n_data; d++) {
        data_entry *de = &r->de[d];
        int user = is_user_spec(de->spec);
        mcl_split sp = user ? MCL_SPLIT_ALL : r->o.val_classes ? MCL_SPLIT_VAL : MCL_SPLIT_TEST;
        if (mcl_dataset_load(de->spec, r->data_dir, sp, &de->ds, err, sizeof err) != MCL_OK) {
            /* the loader's message names the set ("data set 'x' is not prepared ...") */
            if (strstr(err, de->spec)) fprintf(stderr, "metacl %s: %s\n", cmd_name, err);
            else fprintf(stderr, "metacl %s: data '%s': %s\n", cmd_name, de->spec, err);
            return 1;
        } else if (!r->seq && mcl_dataset_load(de->spec, r->data_dir, user ? MCL_SPLIT_ALL : MCL_SPLIT_TRAIN,
                                               &de->train, err, sizeof err) != MCL_OK) {
            fprintf(stderr, "metacl %s: data '%s' (train split): %s\n", cmd_name, de->spec, err);
            return 1;
        }
        /* split-dil / split-cil on a set split by classes (the stroke sets): its training
         * classes are not its test classes, so the context and the queries both come from the
         * held-out test classes — each class's K context images and its other images as
         * queries, each run its own classes (Split-Omniglot's protocol; mcl_splitx_cfg) */
        if (de->train && de->ds->n_classes > 0 && mcl_dataset_class_pos(de->train, de->ds->class_ids[0]) < 0) {
            mcl_dataset_free(de->train);
            de->train = de->ds;
        }
    }
    return 0;
}

/* Phase 3: the checkpoints (with --feature-stats applied), a word on non-finite values. */
static int load_models(acl_eval_run *r)
{
    char err[1024], ckpt_path[4096];
    for (int k = 0; k < r->n_models; k++) {
        model_entry *e = &r->me[k];
        if (!e->path) continue;
        if (mcl_acl_open(r->ctx, mcl_cli_installed_file(e->path, "checkpoints", ".ckpt", ckpt_path, sizeof ckpt_path),
                         &e->m, err, sizeof err) != MCL_OK) {
            fprintf(stderr, "metacl %s: %s\n", cmd_name, err);
            return 1;
        }
        if (r->o.feature_stats >= 0 && mcl_acl_set_feature_stats(e->m, r->o.feature_stats, err, sizeof err) != MCL_OK) {
            fprintf(stderr, "metacl %s: --feature-stats: %s has %s\n", cmd_name, e->path, err);
            return 1;
        }
    }
    for (int k = 0; k < r->n_models; k++) /* NaN parameters evaluate to chance: say so */
        if (r->me[k].path) mcl_cli_warn_nonfinite(cmd_name, r->me[k].path, mcl_acl_params(r->me[k].m));
    return 0;
}

/* Phase 4: the protocol's settings: the task positions' class pools, the seq and Split-X
 * configs every model is evaluated with. */
static void setup_protocol(acl_eval_run *r)
{
    const eval_opts *o = &r->o;
    for (int i = 0; i < r->tasks; i++) {
        const data_entry *d = &r->de[i < r->n_data ? i : r->n_data - 1];
        r->pools[i].ds = d->ds;
        r->pools[i].classes = d->n_classes ? d->classes : NULL;
        r->pools[i].n_classes = d->n_classes;
        snprintf(r->tn[i], sizeof r->tn[i], "%c", 'A' + i);
        r->task_names[i] = r->tn[i];
    }
    mcl_seq_eval_cfg *sc = &r->sc;
    memset(sc, 0, sizeof *sc);
    sc->n_way = o->n_way;
    sc->k_shot = o->k_shot;
    sc->n_query = 1;
    sc->n_tasks = r->tasks;
    sc->n_runs = r->runs;
    sc->n_episodes = o->episodes;
    sc->normalize = 1;
    sc->seed = (uint64_t)o->seed;
    mcl_splitx_eval_cfg *xc = &r->xc;
    memset(xc, 0, sizeof *xc);
    xc->split.n_tasks = r->tasks;
    xc->split.classes_per_task = 2;
    xc->split.k_shot = o->k_shot;
    xc->split.mode = r->split_mode == MCL_SPLITX_CLASS ? MCL_SPLITX_CLASS : MCL_SPLITX_DOMAIN;
    xc->split.classes = r->de[0].n_classes ? r->de[0].classes : NULL;
    xc->split.shuffle_seed = (uint64_t)o->seed;
    /* a set split by classes (load_data): each run draws its own classes */
    xc->split.draw_classes = !r->seq && r->de[0].train == r->de[0].ds && !r->de[0].n_classes;
    xc->n_runs = r->runs;
    xc->final_only = o->final_only;
    xc->normalize = 1;
}

/* The validation data of --select: the same protocol over the meta-validation classes (seq),
 * or the same Split-X with contexts from the train split and queries from its held-out val
 * split (fmnist-val: 55 000 images; only the final accuracies, the score ACC, are measured).
 * vds[] (the loaded sets, freed by the caller), vpools and xv are filled for vd; vwhere
 * says where, for the log. */
static int select_data(acl_eval_run *r, mcl_dataset **vds, mcl_class_pool *vpools, mcl_splitx_eval_cfg *xv,
                       mcl_eval_data *vd, char *vwhere, size_t vlen)
{
    char err[1024];
    memset(vd, 0, sizeof *vd);
    if (r->seq) {
        for (int d = 0; d < r->n_data; d++) {
            const data_entry *de = &r->de[d];
            if (is_user_spec(de->spec) || de->n_classes) {
                fprintf(stderr, "metacl %s: --select: '%s%s' has no meta-validation split\n", cmd_name, de->spec,
                        de->n_classes ? "@classes" : "");
                return 1;
            }
            if (mcl_dataset_load(de->spec, r->data_dir, MCL_SPLIT_VAL, &vds[d], err, sizeof err) != MCL_OK) {
                fprintf(stderr, "metacl %s: --select: '%s' has no meta-validation split: %s\n", cmd_name, de->spec,
                        err);
                return 1;
            }
        }
        for (int i = 0; i < r->tasks; i++) {
            vpools[i].ds = vds[i < r->n_data ? i : r->n_data - 1];
            vpools[i].classes = NULL;
            vpools[i].n_classes = 0;
        }
        vd->kind = MCL_EVAL_SEQ;
        vd->pools = vpools;
        vd->seq = &r->sc;
        snprintf(vwhere, vlen, "the meta-validation classes");
        return 0;
    }
    if (mcl_dataset_load(r->de[0].spec, r->data_dir, MCL_SPLIT_VAL, &vds[0], err, sizeof err) != MCL_OK) {
        fprintf(stderr, "metacl %s: --select: data '%s' (val split): %s\n", cmd_name, r->de[0].spec, err);
        return 1;
    }
    *xv = r->xc;
    xv->final_only = 1;
    if (r->split_mode == MCL_SPLITX_CLASS) xv->n_outputs = 2 * r->tasks; /* as the evaluation */
    vd->kind = MCL_EVAL_SPLITX;
    vd->splitx = xv;
    vd->test = vds[0];
    vd->train = r->de[0].train;
    snprintf(vwhere, vlen, "%s: contexts from its %lld training images, queries its %lld held-out 'val' images",
             r->de[0].spec, (long long)r->de[0].train->n, (long long)vds[0]->n);
    return 0;
}

/* --select for one baseline: its grid search on vd, the grid on stderr, the best point kept
 * as the baseline to evaluate (and its name). */
static int select_one(acl_eval_run *r, model_entry *e, const mcl_eval_data *vd, const char *vwhere)
{
    e->base.seed = (uint64_t)r->o.seed;
    const float lr = e->base.lr, hp = mcl_baseline_get_hp(&e->base);
    const int ep = e->base.epochs;
    /* "lr, epochs, lambda": what the grid searches; "; fixed: epochs 1": what it keeps */
    char what[96] = "", fixed[128] = "";
    if (!e->fix_lr) snprintf(what + strlen(what), sizeof what - strlen(what), "%slr", what[0] ? ", " : "");
    if (!e->fix_epochs) snprintf(what + strlen(what), sizeof what - strlen(what), "%sepochs", what[0] ? ", " : "");
    if (e->hp_name && !e->fix_hp)
        snprintf(what + strlen(what), sizeof what - strlen(what), "%s%s", what[0] ? ", " : "", e->hp_name);
    if (e->fix_lr) snprintf(fixed + strlen(fixed), sizeof fixed - strlen(fixed), " lr %g", (double)lr);
    if (e->fix_epochs) snprintf(fixed + strlen(fixed), sizeof fixed - strlen(fixed), " epochs %d", ep);
    if (e->fix_hp) snprintf(fixed + strlen(fixed), sizeof fixed - strlen(fixed), " %s %g", e->hp_name, (double)hp);
    fprintf(stderr, "selecting %s of %s by %s on %s%s%s...\n", what[0] ? what : "nothing (every value is given)",
            mcl_baseline_method_name(e->base.method, e->base.optim), r->protocol, vwhere, fixed[0] ? "; fixed:" : "",
            fixed);
    mcl_baseline_config best;
    if (mcl_baseline_select_hp(r->ctx, &e->base, vd, e->fix_lr ? &lr : NULL, 1, e->fix_epochs ? &ep : NULL, 1,
                               e->fix_hp ? &hp : NULL, 1, &best, &e->sel) != MCL_OK) {
        fprintf(stderr, "metacl %s: --select: %s\n", cmd_name, mcl_ctx_error(r->ctx));
        return 1;
    }
    for (int g = 0; g < e->sel.n; g++) {
        const mcl_baseline_grid_point *p = &e->sel.point[g];
        char hps[48] = "";
        if (e->hp_name) snprintf(hps, sizeof hps, " %s %-7g", e->hp_name, (double)p->hp);
        fprintf(stderr, "  lr %-7g epochs %-3d%s ACC %.4f ± %.4f%s%s\n", (double)p->lr, p->epochs, hps, p->score,
                p->score_std, g >= e->sel.n_grid ? "   (grown past the edge)" : "",
                g == e->sel.best ? "   <- best" : "");
    }
    e->selected = 1;
    e->base = best;
    mcl_baseline_describe(&best, e->name, sizeof e->name);
    fprintf(stderr, "selected: %s (validation ACC %.4f ± %.4f, point %d of %d)\n", e->name,
            e->sel.point[e->sel.best].score, e->sel.point[e->sel.best].score_std, e->sel.best + 1, e->sel.n);
    return 0;
}

/* Phase 5: --select: each baseline's hyperparameters chosen on validation data. */
static int select_baselines(acl_eval_run *r)
{
    int any_baseline = 0;
    for (int k = 0; k < r->n_models; k++) any_baseline |= !r->me[k].path;
    if (!r->o.select || !any_baseline) return 0;
    mcl_dataset *vds[MAX_DATA] = {NULL};
    mcl_class_pool vpools[MCL_ACL_MAX_TASKS];
    mcl_splitx_eval_cfg xv;
    mcl_eval_data vd;
    char vwhere[1200] = "";
    int rc = select_data(r, vds, vpools, &xv, &vd, vwhere, sizeof vwhere);
    for (int k = 0; k < r->n_models && rc == 0; k++)
        if (!r->me[k].path) rc = select_one(r, &r->me[k], &vd, vwhere);
    for (int d = 0; d < MAX_DATA; d++) mcl_dataset_free(vds[d]);
    return rc;
}

/* Phase 6: every model and baseline on the protocol; a progress line counts the runs of all
 * models (the protocols report each finished run). */
static int evaluate(acl_eval_run *r)
{
    int64_t runs_done = 0;
    const int runs = r->runs;
    for (int k = 0; k < r->n_models; k++) {
        model_entry *e = &r->me[k];
        mcl_status st;
        char label[200];
        mcl_progress_note("evaluating %s (%s, %d run%s)...", e->name, r->protocol, runs, runs == 1 ? "" : "s");
        snprintf(label, sizeof label, "model %d/%d %.150s, runs", k + 1, r->n_models, e->name);
        if (k == 0)
            mcl_progress_start(label, (int64_t)r->n_models * runs);
        else
            mcl_progress_label(label);
        run_progress rp = {runs_done};
        mcl_seq_eval_cfg sk = r->sc;
        sk.on_run = on_run;
        sk.on_run_arg = &rp;
        mcl_splitx_eval_cfg xk = r->xc;
        xk.on_run = on_run;
        xk.on_run_arg = &rp;
        const data_entry *d0 = &r->de[0];
        if (e->path)
            st = r->seq ? mcl_acl_eval_seq(e->m, r->ctx, r->pools, &sk, &e->res)
                        : mcl_acl_eval_splitx(e->m, r->ctx, d0->train, d0->ds, &xk, &e->res);
        else {
            e->base.seed = (uint64_t)r->o.seed;
            if (!r->seq && r->split_mode == MCL_SPLITX_CLASS) xk.n_outputs = 2 * r->tasks;
            st = r->seq ? mcl_baseline_eval_seq(r->ctx, &e->base, r->pools, &sk, &e->res)
                        : mcl_baseline_eval_splitx(r->ctx, &e->base, d0->train, d0->ds, &xk, &e->res);
        }
        runs_done = (int64_t)(k + 1) * runs;
        mcl_progress_update(runs_done);
        if (st != MCL_OK) {
            mcl_progress_finish();
            fprintf(stderr, "metacl %s: %s: %s\n", cmd_name, e->name, mcl_ctx_error(r->ctx));
            return 1;
        }
    }
    mcl_progress_finish();
    return 0;
}

/* Phase 7: the table (or --json) on stdout, --json-out's file. */
static int report(acl_eval_run *r)
{
    const eval_opts *o = &r->o;
    eval_facts facts = {r->protocol, r->data_dir, r->tasks, r->runs, o->n_way, o->k_shot, o->episodes, o->seed,
                        o->final_only, o->select, o->val_classes, r->de, r->n_data, r->seq};
    if (r->json_out && write_json_file(r->json_out, r->me, r->n_models, &facts, r->ctx)) return 1;
    if (o->json) {
        print_json(stdout, r->me, r->n_models, &facts, r->ctx);
        return 0;
    }
    printf("\n%s, %d task%s, ", r->protocol, r->tasks, r->tasks == 1 ? "" : "s");
    if (r->seq)
        printf("%d-way %d-shot, data:", o->n_way, o->k_shot);
    else
        printf("%d training images per class, data:", o->k_shot);
    for (int d = 0; d < r->n_data; d++) printf(" %s", r->de[d].arg); /* with its classes: fmnist@0-4 */
    if (o->val_classes) printf(" (meta-validation classes)");
    if (r->runs > 1)
        printf("; accuracy %% (mean ± 95 %% CI half-width over %d runs, Student's t; run r: the same episodes for "
               "every model), backend %s\n\n",
               r->runs, mcl_ctx_backend_name(r->ctx));
    else
        printf("; accuracy %% (1 run: means without an interval), backend %s\n\n", mcl_ctx_backend_name(r->ctx));
    if (r->seq)
        print_seq_table(r->me, r->n_models, r->tasks, r->task_names);
    else
        print_split_table(r->me, r->n_models, r->tasks);
    return 0;
}

/* The SRWM heat-maps of model e on a demo sequence: run 0's Split-X context (its first two
 * tasks), or one episode's first task. */
static int demo_figure(acl_eval_run *r, const model_entry *e, const char *safe)
{
    char e2[512];
    int rc = 0;
    if (!r->seq) {
        mcl_splitx *sx = NULL;
        mcl_splitx_cfg c = r->xc.split;
        c.run = 0;
        if (mcl_splitx_create(r->de[0].train, r->de[0].ds, &c, &sx, e2, sizeof e2) == MCL_OK) {
            int64_t n = sx->task_ctx_start[r->tasks < 2 ? r->tasks : 2]; /* first two tasks */
            rc = write_srwm_png(r->figures, safe, e->name, e->m, r->ctx, r->de[0].train, sx->ctx_index, sx->ctx_label,
                                n, 1);
            mcl_splitx_free(sx);
        }
        return rc;
    }
    mcl_episode_cfg ec;
    memset(&ec, 0, sizeof ec);
    ec.n_way = r->o.n_way;
    ec.k_shot = r->o.k_shot;
    ec.n_query = 1;
    ec.n_tasks = 1;
    mcl_episode *ep = NULL;
    mcl_rng rng;
    mcl_rng_init(&rng, (uint64_t)r->o.seed, 999);
    if (mcl_episode_create(&ec, &ep) == MCL_OK && mcl_episode_sample(ep, r->pools, &rng, e2, sizeof e2) == MCL_OK)
        rc = write_srwm_png(r->figures, safe, e->name, e->m, r->ctx, r->pools[0].ds, ep->task[0].ctx_index,
                            ep->task[0].ctx_label, (int64_t)r->o.n_way * r->o.k_shot, 1);
    mcl_episode_free(ep);
    return rc;
}

/* Phase 8: --figures: the accuracy matrices (all models side by side, then each), and the
 * first checkpoint's SRWM heat-maps. */
static int figures(acl_eval_run *r)
{
    char e2[512];
    if (mcl_mkdir_p(r->figures, e2, sizeof e2) != MCL_OK) {
        fprintf(stderr, "metacl %s: --figures: %s\n", cmd_name, e2);
        return 1;
    }
    char dtxt[256] = ""; /* the data of the sequence as given, "hanzi -> hershey", "fmnist@0-4 ->
                            fmnist@5-9" (the classes are what tells the tasks apart), for the titles */
    for (int d = 0; d < r->n_data; d++) {
        const size_t u = strlen(dtxt);
        snprintf(dtxt + u, sizeof dtxt - u, "%s%s", d ? " -> " : "", r->de[d].arg);
    }
    int rc = 0;
    if (r->n_models > 1) { /* all models side by side, one colour bar */
        char path[4400];
        snprintf(path, sizeof path, "%s/%s-accuracy.png", r->figures, r->protocol);
        rc = write_matrices(path, r->me, 0, r->n_models, r->protocol, r->tasks, dtxt, r->runs);
    }
    for (int k = 0; k < r->n_models && rc == 0; k++) {
        char safe[128], path[4400];
        figure_slug(r->me[k].name, safe, sizeof safe);
        snprintf(path, sizeof path, "%s/%s-%s-accuracy.png", r->figures, safe, r->protocol);
        rc = write_matrices(path, r->me, k, k + 1, r->protocol, r->tasks, dtxt, r->runs);
        if (rc == 0 && k == 0 && r->me[k].path) rc = demo_figure(r, &r->me[k], safe);
    }
    return rc;
}

static void run_free(acl_eval_run *r)
{
    for (int k = 0; k < r->n_models; k++) {
        mcl_cl_result_free(&r->me[k].res);
        mcl_acl_free(r->me[k].m);
    }
    for (int d = 0; d < r->n_data; d++) {
        if (r->de[d].train != r->de[d].ds) mcl_dataset_free(r->de[d].train);
        mcl_dataset_free(r->de[d].ds);
    }
    mcl_ctx_free(r->ctx);
    free(r);
}

/* `metacl eval acl`: argv[0] is the family word. The phases in order: check arguments ->
 * load data -> load models -> the protocol's settings -> --select -> evaluate -> report ->
 * figures; the first that fails ends the run with its exit code. */
static int eval_acl(const mcl_family *fam, int argc, char **argv)
{
    snprintf(cmd_name, sizeof cmd_name, "eval %s", fam->kind);
    acl_eval_run *r = calloc(1, sizeof *r);
    if (!r) {
        fprintf(stderr, "metacl %s: out of memory\n", cmd_name);
        return 1;
    }
    int done = 0, rc = check_args(r, argc, argv, &done);
    if (done || rc) {
        free(r);
        return rc;
    }
    rc = mcl_cli_open_ctx(r->o.backend, r->o.device, &r->ctx);
    if (rc == 0) rc = load_data(r);
    if (rc == 0) rc = load_models(r);
    if (rc == 0) setup_protocol(r);
    if (rc == 0) rc = select_baselines(r);
    if (rc == 0) rc = evaluate(r);
    if (rc == 0) rc = report(r);
    if (rc == 0 && r->figures) rc = figures(r);
    run_free(r);
    return rc;
}
