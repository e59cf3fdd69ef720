/* eval_cmd.c — `metacl eval acl`: the evaluation protocols of SPEC-ACL §5 on trained ACL
 * checkpoints, next to the hand-crafted SGD/Adam baselines on the same data.
 *
 *   metacl eval acl --ckpt [NAME=]FILE... --protocol seq|two-task|split-dil|split-cil
 *                   --data SPEC... [--tasks T] [--n-way N] [--k-shot K] [--runs R]
 *                   [--episodes E] [--seed S] [--baseline sgd|adam[:LR:EPOCHS]]...
 *                   [--figures DIR] [--json] [--backend ref|opencl] [--device N|NAME]
 *
 * SPEC is a data set ("hanzi", "fmnist", "idx:IMG,LAB", "pngdir:DIR") optionally followed by
 * "@" and a class list ("fmnist@0-4", "hershey@1,5,9"). seq / two-task: one SPEC per task
 * position (the last one repeats); the TEST split (held-out classes of stroke sets, the test
 * file of fmnist). split-dil / split-cil: one SPEC whose train split gives the context
 * examples and whose test split the queries (SPEC-ACL §5).
 * Output: a Markdown table on stdout (mean ± std over runs, in %), or JSON with --json;
 * --figures DIR writes the accuracy matrices and, for the first checkpoint, heat-maps of one
 * SRWM head's four sub-matrices while a demo sequence is consumed.
 * Exit: 0 ok, 1 runtime error, 2 usage.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acl_eval.h"
#include "baseline.h"
#include "cli.h"
#include "dataset_io.h"
#include "plot.h"

#define MAX_MODELS 8
#define MAX_DATA 16
#define MAX_CLASSES 4096

typedef struct model_entry {
    char name[64];
    const char *path;     /* checkpoint, or NULL for a baseline */
    mcl_baseline_config base;
    mcl_acl *m;
    mcl_cl_result res;
} model_entry;

typedef struct data_entry {
    char spec[1024];
    int32_t classes[MAX_CLASSES];
    int n_classes; /* 0 = all */
    mcl_dataset *ds, *train;
} data_entry;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: metacl eval acl --ckpt [NAME=]FILE... --protocol seq|two-task|split-dil|split-cil\n"
            "                       --data SPEC... [--tasks T] [--n-way N] [--k-shot K] [--runs R]\n"
            "                       [--episodes E] [--seed S] [--baseline sgd|adam[:LR:EPOCHS]]...\n"
            "                       [--figures DIR] [--data-dir DIR] [--json] [--backend ref|opencl]\n"
            "  --ckpt [NAME=]FILE  a trained ACL checkpoint (repeatable: the table compares them)\n"
            "  --protocol P        seq / two-task: N-way K-shot task sequences, A alone, B alone,\n"
            "                      A and B after A->B (paper Tables 1, 2, 9);\n"
            "                      split-dil / split-cil: Split-X, domain / class incremental (SPEC-ACL 5)\n"
            "  --data SPEC         data set [@classes], e.g. hanzi, fmnist@0-4 (seq: one per task)\n"
            "  --tasks T           tasks per sequence (seq: default = number of --data, two-task: 2;\n"
            "                      split-dil: 5; split-cil: 5, or 2 for the 2-task version)\n"
            "  --n-way N --k-shot K  seq: classes per task and examples per class (5, 5);\n"
            "                      split: K training images per class (5)\n"
            "  --runs R            runs (seq: 5 sets of test episodes; split: 10 runs)\n"
            "  --episodes E        seq: episodes per run (default 64)\n"
            "  --baseline B        also run the Conv-4 + linear baseline trained with SGD or Adam on\n"
            "                      each task in turn (lr and epochs: defaults of doc/acl.md)\n"
            "  --final-only        split: query only after the last task (the paper's protocol; no\n"
            "                      backward transfer / forgetting, 5x faster for 5 tasks)\n"
            "  --select            seq/two-task: choose each baseline's lr and epochs by a grid search\n"
            "                      on the same protocol over the meta-validation classes\n"
            "  --figures DIR       write PNG figures (accuracy matrices, SRWM heat-maps)\n"
            "  --data-dir DIR      prepared data sets (default $METACL_DATA or data/cache)\n");
}


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
        long a = strtol(p, &end, 10), b = a;
        if (end == p || a < 0) return 1;
        p = end;
        if (*p == '-') {
            b = strtol(p + 1, &end, 10);
            if (end == p + 1 || b < a) return 1;
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

/* ------------------------------------------------------------------ output */

/* One table cell " mean ± std |" in percent ("–" for NaN), in bold when asked. */
static void cell(double m, double s, int bold)
{
    const char *b = bold ? "**" : "";
    if (isnan(m))
        printf(" %s–%s |", b, b);
    else
        printf(" %s%.1f ± %.1f%s |", b, 100.0 * m, isnan(s) ? 0.0 : 100.0 * s, b);
}

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
        printf("| %s |", me[k].name);
        for (int j = 0; j < T; j++) cell(r->alone_mean[j], r->alone_std[j], 0);
        for (int j = 0; j < T; j++) cell(r->final_mean[j], r->final_std[j], 0);
        cell(r->mean.acc, r->std.acc, 0);
        cell(r->mean.bwt, r->std.bwt, 0);
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
        printf("| %s |", me[k].name);
        for (int j = 0; j < T; j++) cell(r->final_mean[j], r->final_std[j], 0);
        cell(r->mean.acc, r->std.acc, 1);
        cell(r->mean.bwt, r->std.bwt, 0);
        cell(r->mean.forgetting, r->std.forgetting, 0);
        printf("\n");
    }
}

static void json_array(const double *v, int n)
{
    printf("[");
    for (int i = 0; i < n; i++) {
        if (isnan(v[i]))
            printf("%snull", i ? "," : "");
        else
            printf("%s%.6f", i ? "," : "", v[i]);
    }
    printf("]");
}

static void json_num(const char *key, double v, int comma)
{
    if (isnan(v))
        printf("\"%s\":null%s", key, comma ? "," : "");
    else
        printf("\"%s\":%.6f%s", key, v, comma ? "," : "");
}

static void print_json(model_entry *me, int n, int T, const char *protocol, int runs)
{
    printf("{\"protocol\":\"%s\",\"tasks\":%d,\"runs\":%d,\"models\":[", protocol, T, runs);
    for (int k = 0; k < n; k++) {
        mcl_cl_result *r = &me[k].res;
        printf("%s{\"name\":\"%s\",\"kind\":\"%s\",", k ? "," : "", me[k].name,
               me[k].path ? "acl" : me[k].base.optim == MCL_OPTIM_SGD ? "sgd" : "adam");
        printf("\"acc_mean\":");
        json_array(r->acc_mean, T * T);
        printf(",\"acc_std\":");
        json_array(r->acc_std, T * T);
        printf(",\"alone_mean\":");
        json_array(r->alone_mean, T);
        printf(",\"alone_std\":");
        json_array(r->alone_std, T);
        printf(",\"final_mean\":");
        json_array(r->final_mean, T);
        printf(",\"final_std\":");
        json_array(r->final_std, T);
        printf(",");
        json_num("acc", r->mean.acc, 1);
        json_num("acc_std", r->std.acc, 1);
        json_num("bwt", r->mean.bwt, 1);
        json_num("bwt_std", r->std.bwt, 1);
        json_num("forgetting", r->mean.forgetting, 1);
        json_num("forgetting_std", r->std.forgetting, 0);
        printf("}");
    }
    printf("]}\n");
}

/* ------------------------------------------------------------------ figures */

static int write_matrix_png(const char *dir, const char *model, const char *protocol,
                            const mcl_cl_result *r, int T)
{
    char path[1400], title[256], err[512];
    snprintf(path, sizeof path, "%s/%s-%s-accuracy.png", dir, model, protocol);
    snprintf(title, sizeof title, "%s, %s: accuracy on task j after task i", model, protocol);
    float *v = malloc((size_t)(T * T) * sizeof *v);
    char rl[16][24], cl[16][24];
    const char *rows[16], *cols[16];
    if (!v) return 1;
    for (int i = 0; i < T * T; i++) v[i] = (float)r->acc_mean[i];
    for (int i = 0; i < T && i < 16; i++) {
        snprintf(rl[i], sizeof rl[i], "after %d", i + 1);
        snprintf(cl[i], sizeof cl[i], "task %d", i + 1);
        rows[i] = rl[i];
        cols[i] = cl[i];
    }
    mcl_status st = mcl_plot_heatmap(path, title, v, T, T, rows, cols, 0.0f, 1.0f, 1, err, sizeof err);
    free(v);
    if (st != MCL_OK) {
        fprintf(stderr, "metacl eval acl: figure: %s\n", err);
        return 1;
    }
    fprintf(stderr, "wrote %s\n", path);
    return 0;
}

/* The four SRWM sub-matrices of layer 0, head 0 at 5 points of a demo context sequence. */
static int write_srwm_png(const char *dir, const char *model, mcl_acl *m, mcl_ctx *ctx,
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
    mcl_acl_fw_trace tr;
    memset(&tr, 0, sizeof tr);
    if (mcl_acl_record_fast_weights(m, ctx, ds, index, label, n, at, NAT, 0, 0, normalize, &tr) != MCL_OK) {
        fprintf(stderr, "metacl eval acl: fast-weight trace: %s\n", mcl_ctx_error(ctx));
        mcl_ctx_clear_error(ctx);
        return 1;
    }
    const float *panels[4 * MAX_AT];
    int rows[4 * MAX_AT], cols[4 * MAX_AT];
    char names[4 * MAX_AT][40];
    const char *titles[4 * MAX_AT];
    const char *part[4] = {"W_y", "W_q", "W_k", "w_b"};
    float vmax = 0.0f;
    const int D = tr.D;
    for (int p = 0; p < 4; p++)
        for (int k = 0; k < NAT; k++) {
            int idx = p * NAT + k;
            const float *base = p == 0 ? tr.Wy : p == 1 ? tr.Wq : p == 2 ? tr.Wk : tr.wb;
            int w = p == 3 ? 4 : D;
            panels[idx] = base + (size_t)k * (size_t)(D * w);
            rows[idx] = D;
            cols[idx] = w;
            snprintf(names[idx], sizeof names[idx], "%s step %lld", part[p], (long long)at[k]);
            titles[idx] = names[idx];
            for (int e = 0; e < D * w; e++) vmax = fmaxf(vmax, fabsf(panels[idx][e]));
        }
    char path[1400], title[256], err[512];
    snprintf(path, sizeof path, "%s/%s-srwm-layer0-head0.png", dir, model);
    snprintf(title, sizeof title, "%s: SRWM layer 0, head 0 while a demo sequence of %lld examples is consumed",
             model, (long long)n);
    mcl_status st = mcl_plot_heatmap_grid(path, title, 4 * NAT, panels, rows, cols, titles, NAT,
                                          -vmax, vmax, err, sizeof err);
    mcl_acl_fw_trace_free(&tr);
    if (st != MCL_OK) {
        fprintf(stderr, "metacl eval acl: figure: %s\n", err);
        return 1;
    }
    fprintf(stderr, "wrote %s\n", path);
    return 0;
}

/* ------------------------------------------------------------------ main */

static int parse_baseline(const char *arg, model_entry *e)
{
    memset(e, 0, sizeof *e);
    mcl_baseline_config_default(&e->base);
    char kind[16];
    const char *c = strchr(arg, ':');
    size_t n = c ? (size_t)(c - arg) : strlen(arg);
    if (n >= sizeof kind) return 1;
    memcpy(kind, arg, n);
    kind[n] = 0;
    if (!strcmp(kind, "sgd")) {
        e->base.optim = MCL_OPTIM_SGD;
        e->base.lr = 0.1f; /* doc/acl.md: chosen by --select on the meta-validation classes */
        e->base.epochs = 25;
    } else if (!strcmp(kind, "adam")) {
        e->base.optim = MCL_OPTIM_ADAM;
        e->base.lr = 3e-3f;
        e->base.epochs = 5;
    } else
        return 1;
    if (c) {
        char *end = NULL;
        float lr = strtof(c + 1, &end);
        if (end == c + 1 || *end != ':' || !(lr > 0.0f)) return 1;
        int ep = 0;
        if (mcl_cli_parse_int(end + 1, 1, 10000, &ep)) return 1;
        e->base.lr = lr;
        e->base.epochs = ep;
    }
    snprintf(e->name, sizeof e->name, "%s (lr %g, %d epochs)", kind[0] == 's' ? "SGD" : "Adam",
             (double)e->base.lr, e->base.epochs);
    return 0;
}

int mcl_cli_eval(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (strcmp(argv[1], "acl") != 0) {
        fprintf(stderr, "metacl eval: unknown model '%s' (available: acl)\n", argv[1]);
        return 2;
    }
    static model_entry me[MAX_MODELS];
    static data_entry de[MAX_DATA];
    int n_models = 0, n_data = 0, json = 0, tasks = 0, n_way = 5, k_shot = 5, runs = 0, select = 0;
    int episodes = 64, seed = 1, rc = 0, final_only = 0;
    const char *protocol = NULL, *figures = NULL, *backend = NULL, *device = NULL, *data_dir = NULL;
    memset(me, 0, sizeof me);
    for (int i = 2; i < argc && rc == 0; i++) {
        const char *v = NULL;
        int r;
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--json")) {
            json = 1;
        } else if (!strcmp(argv[i], "--select")) {
            select = 1;
        } else if (!strcmp(argv[i], "--final-only")) {
            final_only = 1;
        } else if ((r = mcl_cli_take_value(argc, argv, &i, "--protocol", &protocol)) != 0 ||
                   (r = mcl_cli_take_value(argc, argv, &i, "--figures", &figures)) != 0 ||
                   (r = mcl_cli_take_value(argc, argv, &i, "--data-dir", &data_dir)) != 0 ||
                   (r = mcl_cli_take_value(argc, argv, &i, "--backend", &backend)) != 0 ||
                   (r = mcl_cli_take_value(argc, argv, &i, "--device", &device)) != 0) {
            if (r < 0) rc = 2;
        } else if ((r = mcl_cli_take_value(argc, argv, &i, "--ckpt", &v)) != 0) {
            if (r < 0 || n_models == MAX_MODELS) {
                if (r > 0) fprintf(stderr, "metacl eval acl: at most %d models\n", MAX_MODELS);
                rc = 2;
                break;
            }
            model_entry *e = &me[n_models++];
            const char *eq = strchr(v, '=');
            if (eq && eq != v && (size_t)(eq - v) < sizeof e->name) {
                memcpy(e->name, v, (size_t)(eq - v));
                e->path = eq + 1;
            } else {
                const char *b = strrchr(v, '/');
                snprintf(e->name, sizeof e->name, "%s", b ? b + 1 : v);
                e->path = v;
            }
        } else if ((r = mcl_cli_take_value(argc, argv, &i, "--baseline", &v)) != 0) {
            if (r < 0) { rc = 2; break; }
            if (n_models == MAX_MODELS || parse_baseline(v, &me[n_models])) {
                fprintf(stderr, "metacl eval acl: --baseline '%s': want sgd or adam, optionally :LR:EPOCHS\n", v);
                rc = 2;
                break;
            }
            n_models++;
        } else if ((r = mcl_cli_take_value(argc, argv, &i, "--data", &v)) != 0) {
            if (r < 0) { rc = 2; break; }
            if (n_data == MAX_DATA || parse_data(v, &de[n_data])) {
                fprintf(stderr, "metacl eval acl: --data '%s': want SPEC or SPEC@CLASSES (e.g. fmnist@0-4)\n", v);
                rc = 2;
                break;
            }
            n_data++;
        } else {
            static const struct { const char *flag; int lo, hi; int *dst; } ints[] = {
                {"--tasks", 1, MCL_ACL_MAX_TASKS, NULL}, {"--n-way", 1, 1000, NULL},
                {"--k-shot", 1, 10000, NULL},           {"--runs", 1, 1000, NULL},
                {"--episodes", 1, 1000000, NULL},       {"--seed", 0, 2000000000, NULL}};
            int *dst[6] = {&tasks, &n_way, &k_shot, &runs, &episodes, &seed};
            int hit = 0;
            for (int f = 0; f < 6 && !hit; f++) {
                if ((r = mcl_cli_take_value(argc, argv, &i, ints[f].flag, &v)) == 0) continue;
                hit = 1;
                if (r < 0 || mcl_cli_parse_int(v, ints[f].lo, ints[f].hi, dst[f])) {
                    if (r > 0) fprintf(stderr, "metacl eval acl: %s '%s': want an integer in [%d, %d]\n", ints[f].flag, v, ints[f].lo, ints[f].hi);
                    rc = 2;
                }
            }
            if (!hit) {
                fprintf(stderr, "metacl eval acl: unknown option '%s'\n", argv[i]);
                usage(stderr);
                rc = 2;
            }
        }
    }
    if (rc) return rc;
    int seq = 0, split_mode = -1;
    if (!protocol) {
        fprintf(stderr, "metacl eval acl: --protocol is required (seq, two-task, split-dil, split-cil)\n");
        return 2;
    } else if (!strcmp(protocol, "seq") || !strcmp(protocol, "two-task")) {
        seq = 1;
        if (!tasks) tasks = !strcmp(protocol, "two-task") ? 2 : (n_data > 1 ? n_data : 2);
        if (!runs) runs = 5;
    } else if (!strcmp(protocol, "split-dil") || !strcmp(protocol, "split-cil")) {
        split_mode = !strcmp(protocol, "split-dil") ? MCL_SPLITX_DOMAIN : MCL_SPLITX_CLASS;
        if (!tasks) tasks = 5;
        if (!runs) runs = 10;
    } else {
        fprintf(stderr, "metacl eval acl: unknown protocol '%s' (seq, two-task, split-dil, split-cil)\n", protocol);
        return 2;
    }
    if (n_models == 0 || n_data == 0) {
        fprintf(stderr, "metacl eval acl: give at least one --ckpt (or --baseline) and one --data\n");
        return 2;
    }
    if (select && !seq) {
        fprintf(stderr, "metacl eval acl: --select works with the seq / two-task protocols (it uses the\n"
                        "  meta-validation classes of the --data sets); pass the chosen values as sgd:LR:EPOCHS\n");
        return 2;
    }
    if (!seq && n_data != 1) {
        fprintf(stderr, "metacl eval acl: %s takes exactly one --data\n", protocol);
        return 2;
    }

    mcl_ctx *ctx = NULL;
    rc = mcl_cli_open_ctx(backend, device, &ctx);
    if (rc) return rc;
    char err[1024];
    /* data */
    for (int d = 0; d < n_data && rc == 0; d++) {
        int user = is_user_spec(de[d].spec);
        mcl_split sp = user ? MCL_SPLIT_ALL : MCL_SPLIT_TEST;
        if (mcl_dataset_load(de[d].spec, data_dir, sp, &de[d].ds, err, sizeof err) != MCL_OK) {
            fprintf(stderr, "metacl eval acl: data '%s': %s\n", de[d].spec, err);
            rc = 1;
        } else if (!seq && mcl_dataset_load(de[d].spec, data_dir, user ? MCL_SPLIT_ALL : MCL_SPLIT_TRAIN,
                                            &de[d].train, err, sizeof err) != MCL_OK) {
            fprintf(stderr, "metacl eval acl: data '%s' (train split): %s\n", de[d].spec, err);
            rc = 1;
        }
    }
    /* models */
    for (int k = 0; k < n_models && rc == 0; k++)
        if (me[k].path && mcl_acl_open(ctx, me[k].path, &me[k].m, err, sizeof err) != MCL_OK) {
            fprintf(stderr, "metacl eval acl: %s\n", err);
            rc = 1;
        }
    mcl_class_pool pools[MCL_ACL_MAX_TASKS];
    const char *task_names[MCL_ACL_MAX_TASKS];
    char tn[MCL_ACL_MAX_TASKS][48];
    for (int i = 0; i < tasks; i++) {
        const data_entry *d = &de[i < n_data ? i : n_data - 1];
        pools[i].ds = d->ds;
        pools[i].classes = d->n_classes ? d->classes : NULL;
        pools[i].n_classes = d->n_classes;
        snprintf(tn[i], sizeof tn[i], "%c", 'A' + i);
        task_names[i] = tn[i];
    }
    mcl_seq_eval_cfg sc;
    memset(&sc, 0, sizeof sc);
    sc.n_way = n_way;
    sc.k_shot = k_shot;
    sc.n_query = 1;
    sc.n_tasks = tasks;
    sc.n_runs = runs;
    sc.n_episodes = episodes;
    sc.normalize = 1;
    sc.seed = (uint64_t)seed;
    mcl_splitx_eval_cfg xc;
    memset(&xc, 0, sizeof xc);
    xc.split.n_tasks = tasks;
    xc.split.classes_per_task = 2;
    xc.split.k_shot = k_shot;
    xc.split.mode = split_mode == MCL_SPLITX_CLASS ? MCL_SPLITX_CLASS : MCL_SPLITX_DOMAIN;
    xc.split.classes = de[0].n_classes ? de[0].classes : NULL;
    xc.split.shuffle_seed = (uint64_t)seed;
    xc.n_runs = runs;
    xc.final_only = final_only;
    xc.normalize = 1;
    for (int k = 0; k < n_models && rc == 0 && select; k++) {
        if (me[k].path) continue;
        /* grid search on the same protocol over the meta-validation classes */
        mcl_dataset *vds[MAX_DATA] = {NULL};
        mcl_class_pool vpools[MCL_ACL_MAX_TASKS];
        for (int d = 0; d < n_data && rc == 0; d++)
            if (is_user_spec(de[d].spec) || de[d].n_classes ||
                mcl_dataset_load(de[d].spec, data_dir, MCL_SPLIT_VAL, &vds[d], err, sizeof err) != MCL_OK) {
                fprintf(stderr, "metacl eval acl: --select: '%s' has no meta-validation split%s%s\n", de[d].spec,
                        vds[d] || is_user_spec(de[d].spec) || de[d].n_classes ? "" : ": ", vds[d] || is_user_spec(de[d].spec) || de[d].n_classes ? "" : err);
                rc = 1;
            }
        for (int i = 0; i < tasks && rc == 0; i++) {
            vpools[i].ds = vds[i < n_data ? i : n_data - 1];
            vpools[i].classes = NULL;
            vpools[i].n_classes = 0;
        }
        mcl_eval_data vd;
        memset(&vd, 0, sizeof vd);
        vd.kind = MCL_EVAL_SEQ;
        vd.pools = vpools;
        vd.seq = &sc;
        mcl_baseline_selection sel;
        mcl_baseline_config best;
        me[k].base.seed = (uint64_t)seed;
        if (rc == 0) {
            fprintf(stderr, "selecting lr and epochs of %s on meta-validation classes...\n",
                    me[k].base.optim == MCL_OPTIM_SGD ? "SGD" : "Adam");
            if (mcl_baseline_select(ctx, &me[k].base, &vd, NULL, 0, NULL, 0, &best, &sel) != MCL_OK) {
                fprintf(stderr, "metacl eval acl: --select: %s\n", mcl_ctx_error(ctx));
                rc = 1;
            } else {
                for (int g = 0; g < sel.n; g++)
                    fprintf(stderr, "  lr %-7g epochs %-3d ACC %.4f ± %.4f%s\n", (double)sel.point[g].lr,
                            sel.point[g].epochs, sel.point[g].score, sel.point[g].score_std,
                            g == sel.best ? "   <- best" : "");
                me[k].base = best;
                snprintf(me[k].name, sizeof me[k].name, "%s (lr %g, %d epochs)",
                         best.optim == MCL_OPTIM_SGD ? "SGD" : "Adam", (double)best.lr, best.epochs);
            }
        }
        for (int d = 0; d < n_data; d++) mcl_dataset_free(vds[d]);
    }
    for (int k = 0; k < n_models && rc == 0; k++) {
        mcl_status st;
        fprintf(stderr, "evaluating %s (%s, %d run%s)...\n", me[k].name, protocol, runs, runs == 1 ? "" : "s");
        if (me[k].path)
            st = seq ? mcl_acl_eval_seq(me[k].m, ctx, pools, &sc, &me[k].res)
                     : mcl_acl_eval_splitx(me[k].m, ctx, de[0].train, de[0].ds, &xc, &me[k].res);
        else {
            me[k].base.seed = (uint64_t)seed;
            mcl_splitx_eval_cfg bx = xc;
            if (!seq && split_mode == MCL_SPLITX_CLASS) bx.n_outputs = 2 * tasks;
            st = seq ? mcl_baseline_eval_seq(ctx, &me[k].base, pools, &sc, &me[k].res)
                     : mcl_baseline_eval_splitx(ctx, &me[k].base, de[0].train, de[0].ds, &bx, &me[k].res);
        }
        if (st != MCL_OK) {
            fprintf(stderr, "metacl eval acl: %s: %s\n", me[k].name, mcl_ctx_error(ctx));
            rc = 1;
        }
    }
    if (rc == 0) {
        if (json)
            print_json(me, n_models, tasks, protocol, runs);
        else {
            printf("\n%s, %d task%s, ", protocol, tasks, tasks == 1 ? "" : "s");
            if (seq)
                printf("%d-way %d-shot, data:", n_way, k_shot);
            else
                printf("%d training images per class, data:", k_shot);
            for (int d = 0; d < n_data; d++) printf(" %s%s", de[d].spec, de[d].n_classes ? "@subset" : "");
            printf("; accuracy %% (mean ± std over %d runs), backend %s\n\n", runs, mcl_ctx_backend_name(ctx));
            if (seq)
                print_seq_table(me, n_models, tasks, task_names);
            else
                print_split_table(me, n_models, tasks);
        }
    }
    if (rc == 0 && figures) {
        char e2[512];
        if (mcl_mkdir_p(figures, e2, sizeof e2) != MCL_OK) {
            fprintf(stderr, "metacl eval acl: --figures: %s\n", e2);
            rc = 1;
        }
        for (int k = 0; k < n_models && rc == 0; k++) {
            char safe[64];
            memcpy(safe, me[k].name, sizeof safe);
            safe[sizeof safe - 1] = 0;
            for (char *p = safe; *p; p++)
                if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '-' || *p == '_')) *p = '_';
            rc = write_matrix_png(figures, safe, protocol, &me[k].res, tasks);
            if (rc == 0 && k == 0 && me[k].path) {
                /* demo sequence: run 0's Split-X context, or one episode's first task */
                if (!seq) {
                    mcl_splitx *sx = NULL;
                    mcl_splitx_cfg c = xc.split;
                    c.run = 0;
                    if (mcl_splitx_create(de[0].train, de[0].ds, &c, &sx, e2, sizeof e2) == MCL_OK) {
                        int64_t n = sx->task_ctx_start[tasks < 2 ? tasks : 2]; /* first two tasks */
                        rc = write_srwm_png(figures, safe, me[k].m, ctx, de[0].train, sx->ctx_index,
                                            sx->ctx_label, n, 1);
                        mcl_splitx_free(sx);
                    }
                } else {
                    mcl_episode_cfg ec;
                    memset(&ec, 0, sizeof ec);
                    ec.n_way = n_way;
                    ec.k_shot = k_shot;
                    ec.n_query = 1;
                    ec.n_tasks = 1;
                    mcl_episode *ep = NULL;
                    mcl_rng rng;
                    mcl_rng_init(&rng, (uint64_t)seed, 999);
                    if (mcl_episode_create(&ec, &ep) == MCL_OK &&
                        mcl_episode_sample(ep, pools, &rng, e2, sizeof e2) == MCL_OK)
                        rc = write_srwm_png(figures, safe, me[k].m, ctx, pools[0].ds, ep->task[0].ctx_index,
                                            ep->task[0].ctx_label, (int64_t)n_way * k_shot, 1);
                    mcl_episode_free(ep);
                }
            }
        }
    }
    for (int k = 0; k < n_models; k++) {
        mcl_cl_result_free(&me[k].res);
        mcl_acl_free(me[k].m);
    }
    for (int d = 0; d < n_data; d++) {
        mcl_dataset_free(de[d].ds);
        mcl_dataset_free(de[d].train);
    }
    mcl_ctx_free(ctx);
    return rc;
}
