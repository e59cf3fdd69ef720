/* online_groups.c — `metacl online --report NAME=DIR[,DIR...] ...`: runs reported in groups
 * (e.g. the seeds of one method), a row per group.
 *
 * Each column of the one-run table (cum_nll, online accuracy, early / late per-task accuracy,
 * within-task accuracy at examples 3..7) becomes, over the n runs of a group, Student's 95 %
 * interval (src/learn/metrics.h, mcl_ci95):
 *     mean = (1/n) Σ_r x_r,   half = t_{0.975, n-1} · s / sqrt(n),   s² = Σ_r (x_r − mean)² / (n − 1)
 * (no half-width with one run). Every later group g is paired with the first group f on the
 * runs that read the same stream (equal stream.seed, the same data.source and task layout):
 *     d_r = x_f,r − x_g,r,   the interval of the d_r (mcl_paired_verdict)
 * for cum_nll (lower is better) and the online accuracy (higher is better); the first group is
 * "better" or "worse" when the interval excludes 0 on that side, "tie" when it holds 0, and
 * "inconclusive" with fewer than 2 pairs. Groups whose stream seeds differ cannot be paired and
 * are refused (exit 1). Figures (--figures DIR): per-task.png and within-task.png (last tasks)
 * with each group's mean curve and its interval as a band clipped to [0, 1].
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_out.h"
#include "metrics.h"
#include "online_report.h"
#include "plot.h"

#define MAX_GROUP_RUNS 64
#define NAME_MAX_LEN 48

typedef struct group {
    char name[NAME_MAX_LEN + 1];
    char *text;          /* the spec's copy, cut at the commas: dirs point into it */
    const char *dirs[MAX_GROUP_RUNS];
    int n;
    mcl_online_run *runs; /* [n] */
    int loaded;
} group;

/* The columns of the table: the per-run value, its header, scale and format. */
enum { C_NLL, C_ACC, C_EARLY, C_LATE, C_EARLY5, C_LATE5, C_EARLY_WIN, C_LATE_WIN, N_COLS };
static const struct {
    const char *key;    /* the JSON key (the one-run summary.json's)       */
    const char *head;   /* the table header; NULL: in the JSON only        */
    int percent;        /* shown in percent                                 */
} COLS[N_COLS] = {
    {"cum_nll", "cum_nll", 0},
    {"online_acc", "online", 1},
    {"early_task_acc", "early", 1},
    {"late_task_acc", "late", 1},
    {"early_acc_at_5th", NULL, 1},
    {"late_acc_at_5th", NULL, 1},
    {"early_acc_at_3to7", "5th@early", 1},
    {"late_acc_at_3to7", "5th@late", 1},
};

static double col_value(const mcl_online_run *r, int c)
{
    switch (c) {
    case C_NLL: return r->rep.cum_nll;
    case C_ACC: return r->rep.online_acc;
    case C_EARLY: return r->early_acc;
    case C_LATE: return r->late_acc;
    case C_EARLY5: return r->early_at5;
    case C_LATE5: return r->late_at5;
    case C_EARLY_WIN: return r->early_win;
    default: return r->late_win;
    }
}

/* mean and half of column c over group g's runs (metrics.h: NaN half for one run) */
static void group_ci(const group *g, int c, double *mean, double *half)
{
    double v[MAX_GROUP_RUNS];
    for (int r = 0; r < g->n; r++) v[r] = col_value(&g->runs[r], c);
    mcl_ci95(v, g->n, 1, mean, half, NULL);
}

/* ---------------------------------------------------------------- parsing and loading */

/* "NAME=DIR[,DIR...]" into g; 2 (message on stderr) for an empty name, a name too long, an
 * empty group or an empty entry, too many runs. */
static int parse_spec(const char *spec, group *g)
{
    const char *eq = strchr(spec, '=');
    const size_t nl = eq ? (size_t)(eq - spec) : 0;
    if (!eq || nl == 0) {
        fprintf(stderr, "metacl online: --report '%s': a group is NAME=DIR[,DIR...] with a name\n", spec);
        return 2;
    }
    if (nl > NAME_MAX_LEN) {
        fprintf(stderr, "metacl online: --report '%s': a group name has at most %d characters\n", spec,
                NAME_MAX_LEN);
        return 2;
    }
    memcpy(g->name, spec, nl);
    g->name[nl] = '\0';
    g->text = strdup(eq + 1);
    if (!g->text) return 1;
    if (!g->text[0]) {
        fprintf(stderr, "metacl online: group '%s' holds no run (NAME=DIR[,DIR...])\n", g->name);
        return 2;
    }
    char *p = g->text;
    for (;;) {
        char *comma = strchr(p, ',');
        if (comma) *comma = '\0';
        if (!*p) {
            fprintf(stderr, "metacl online: group '%s': an empty run directory in '%s'\n", g->name, eq + 1);
            return 2;
        }
        if (g->n == MAX_GROUP_RUNS) {
            fprintf(stderr, "metacl online: group '%s': at most %d runs\n", g->name, MAX_GROUP_RUNS);
            return 2;
        }
        g->dirs[g->n++] = p;
        if (!comma) break;
        p = comma + 1;
    }
    return 0;
}

static int load_group(group *g)
{
    g->runs = calloc((size_t)g->n, sizeof *g->runs);
    if (!g->runs) {
        fprintf(stderr, "metacl online: out of memory\n");
        return 1;
    }
    char err[1024];
    for (int r = 0; r < g->n; r++) {
        g->runs[r].dir = g->dirs[r];
        if (mcl_oct_report_load(g->dirs[r], &g->runs[r].rep, err, sizeof err) != MCL_OK) {
            fprintf(stderr, "metacl online: group '%s': %s: %s\n", g->name, g->dirs[r], err);
            return 1;
        }
        g->loaded++;
        mcl_online_summarize(&g->runs[r]);
    }
    return 0;
}

/* pair[r] = the run of f that read run r of g's stream; 1 (message) when the stream seeds of
 * the two groups are not the same set or a paired stream differs in source or layout. */
static int pair_runs(const group *f, const group *g, int *pair)
{
    for (int r = 0; r < g->n; r++) {
        pair[r] = -1;
        for (int q = 0; q < f->n; q++)
            if (f->runs[q].rep.stream_seed == g->runs[r].rep.stream_seed) pair[r] = q;
    }
    int ok = f->n == g->n;
    for (int r = 0; r < g->n; r++) ok &= pair[r] >= 0;
    if (!ok) {
        fprintf(stderr, "metacl online: groups '%s' and '%s' do not hold the same stream seeds (", f->name, g->name);
        for (int k = 0; k < 2; k++) {
            const group *h = k ? g : f;
            fprintf(stderr, "%s%s:", k ? "; " : "", h->name);
            for (int r = 0; r < h->n; r++)
                fprintf(stderr, " %llu", (unsigned long long)h->runs[r].rep.stream_seed);
        }
        fprintf(stderr, "): the paired test needs each stream in both groups\n");
        return 1;
    }
    for (int r = 0; r < g->n; r++) {
        const mcl_oct_report *a = &f->runs[pair[r]].rep, *b = &g->runs[r].rep;
        if (strcmp(a->source, b->source) != 0 || a->n_tasks != b->n_tasks || a->per_task_max != b->per_task_max ||
            a->n != b->n) {
            fprintf(stderr,
                    "metacl online: %s and %s have stream seed %llu but not the same stream (%s, %d tasks of "
                    "%d, %lld scored vs %s, %d tasks of %d, %lld scored): they cannot be paired\n",
                    f->runs[pair[r]].dir, g->runs[r].dir, (unsigned long long)a->stream_seed, a->source, a->n_tasks,
                    a->per_task_max, (long long)a->n, b->source, b->n_tasks, b->per_task_max, (long long)b->n);
            return 1;
        }
    }
    return 0;
}

/* ---------------------------------------------------------------- paired results */

typedef struct paired {
    int n;                 /* pairs */
    double diff[2], half[2];
    const char *verdict[2]; /* of the first group: better / worse / tie / inconclusive */
    double *d[2];          /* [n] per-stream differences first − g, in g's run order */
} paired;

static const int PAIRED_COLS[2] = {C_NLL, C_ACC};

static const char *verdict_word(mcl_verdict v, int lower_better)
{
    if (v == MCL_VERDICT_TIE) return "tie";
    if (v == MCL_VERDICT_FIRST) return lower_better ? "worse" : "better";
    if (v == MCL_VERDICT_SECOND) return lower_better ? "better" : "worse";
    return "inconclusive";
}

static int compute_paired(const group *f, const group *g, const int *pair, paired *p)
{
    memset(p, 0, sizeof *p);
    p->n = g->n;
    for (int k = 0; k < 2; k++) {
        double x[MAX_GROUP_RUNS], y[MAX_GROUP_RUNS];
        p->d[k] = malloc(sizeof *p->d[k] * (size_t)g->n);
        if (!p->d[k]) return 1;
        for (int r = 0; r < g->n; r++) {
            x[r] = col_value(&f->runs[pair[r]], PAIRED_COLS[k]);
            y[r] = col_value(&g->runs[r], PAIRED_COLS[k]);
            p->d[k][r] = x[r] - y[r];
        }
        mcl_verdict v = mcl_paired_verdict(x, y, g->n, 0.0, &p->diff[k], &p->half[k]);
        p->verdict[k] = verdict_word(v, PAIRED_COLS[k] == C_NLL);
    }
    return 0;
}

/* ---------------------------------------------------------------- output */

/* "m +- h" of a column (sign: with its sign, a difference), h left out with one run; percent
 * columns in points */
static void cell(char *out, size_t len, double m, double h, int percent, int sign)
{
    const double s = percent ? 100.0 : 1.0;
    const int dig = percent ? 1 : 3;
    if (isnan(m)) {
        snprintf(out, len, "-");
        return;
    }
    int k = sign ? snprintf(out, len, "%+.*f", dig, s * m) : snprintf(out, len, "%.*f", dig, s * m);
    if (k > 0 && (size_t)k < len && !isnan(h)) k += snprintf(out + k, len - (size_t)k, " +- %.*f", dig, s * h);
    if (k > 0 && (size_t)k < len && percent && !sign) snprintf(out + k, len - (size_t)k, "%%");
}

static void print_table(FILE *o, const group *gs, int ng, const paired *ps)
{
    fprintf(o, "mean +- 95 %% CI half-width over each group's n runs (Student's t; no interval with one run)\n");
    fprintf(o, "%-20s %3s", "group", "n");
    for (int c = 0; c < N_COLS; c++)
        if (COLS[c].head) fprintf(o, c == C_LATE_WIN ? " %s" : " %-16s", COLS[c].head);
    fprintf(o, "\n");
    for (int g = 0; g < ng; g++) {
        fprintf(o, "%-20s %3d", gs[g].name, gs[g].n);
        for (int c = 0; c < N_COLS; c++) {
            if (!COLS[c].head) continue;
            double m, h;
            char b[64];
            group_ci(&gs[g], c, &m, &h);
            cell(b, sizeof b, m, h, COLS[c].percent, 0);
            fprintf(o, c == C_LATE_WIN ? " %s" : " %-16s", b);
        }
        fprintf(o, "\n");
    }
    fprintf(o, "(cum_nll: mean -log p(y_t | x_t, past), nats; online: accuracy of every prediction;\n"
               " early/late: mean per-task accuracy of the first %d / last %d tasks; 5th@: within-task\n"
               " accuracy at examples 3..7 of a task, early / late tasks)\n",
            MCL_ONLINE_EARLY_TASKS, MCL_ONLINE_LATE_TASKS);
    fprintf(o, "runs (model.seed/stream.seed):");
    for (int g = 0; g < ng; g++) {
        fprintf(o, "%s %s", g ? ";" : "", gs[g].name);
        for (int r = 0; r < gs[g].n; r++)
            fprintf(o, " %llu/%llu", (unsigned long long)gs[g].runs[r].rep.model_seed,
                    (unsigned long long)gs[g].runs[r].rep.stream_seed);
    }
    fprintf(o, "\n");
    if (ng < 2) return;
    fprintf(o, "\npaired on the same streams (equal stream.seed): %s minus each group, mean +- 95 %% CI of\n"
               "the per-stream differences; the verdict is %s's (better / worse / tie: the interval holds 0)\n",
            gs[0].name, gs[0].name);
    fprintf(o, "%-20s %3s %-18s %-13s %-18s %s\n", "against", "n", "d cum_nll (nats)", "verdict",
            "d online (points)", "verdict");
    for (int g = 1; g < ng; g++) {
        char a[64], b[64];
        cell(a, sizeof a, ps[g].diff[0], ps[g].half[0], 0, 1);
        cell(b, sizeof b, ps[g].diff[1], ps[g].half[1], 1, 1);
        fprintf(o, "%-20s %3d %-18s %-13s %-18s %s\n", gs[g].name, ps[g].n, a, ps[g].verdict[0], b,
                ps[g].verdict[1]);
    }
}

static void json_run(mcl_json *j, const mcl_online_run *r)
{
    const mcl_oct_report *p = &r->rep;
    mcl_json_begin_obj(j, NULL);
    mcl_json_str(j, "run", r->dir);
    mcl_json_u64(j, "model_seed", p->model_seed);
    mcl_json_u64(j, "stream_seed", p->stream_seed);
    mcl_json_u64(j, "train_seed", p->train_seed);
    mcl_json_int(j, "examples", (long long)p->n);
    for (int c = 0; c < N_COLS; c++) mcl_json_num(j, COLS[c].key, col_value(r, c), 6);
    mcl_json_int(j, "late_from_task", r->late_from + 1);
    mcl_json_num_array(j, "task_acc", p->task_acc, p->n_tasks, 4);
    mcl_json_end_obj(j);
}

static void print_json(const group *gs, int ng, const paired *ps)
{
    mcl_json j;
    mcl_json_init(&j, stdout);
    mcl_json_begin_obj(&j, NULL);
    mcl_json_str(&j, "interval", "95 % Student t over the runs of a group: mean +- half");
    mcl_json_begin_arr(&j, "groups");
    for (int g = 0; g < ng; g++) {
        mcl_json_begin_obj(&j, NULL);
        mcl_json_str(&j, "name", gs[g].name);
        mcl_json_int(&j, "n", gs[g].n);
        static const char *const seed_keys[3] = {"model_seeds", "stream_seeds", "train_seeds"};
        for (int k = 0; k < 3; k++) {
            mcl_json_begin_arr(&j, seed_keys[k]);
            for (int r = 0; r < gs[g].n; r++) {
                const mcl_oct_report *p = &gs[g].runs[r].rep;
                mcl_json_u64(&j, NULL, k == 0 ? p->model_seed : k == 1 ? p->stream_seed : p->train_seed);
            }
            mcl_json_end_arr(&j);
        }
        for (int k = 0; k < 2; k++) {
            mcl_json_begin_obj(&j, k ? "half" : "mean");
            for (int c = 0; c < N_COLS; c++) {
                double m, h;
                group_ci(&gs[g], c, &m, &h);
                mcl_json_num(&j, COLS[c].key, k ? h : m, 6);
            }
            mcl_json_end_obj(&j);
        }
        mcl_json_begin_arr(&j, "runs");
        for (int r = 0; r < gs[g].n; r++) json_run(&j, &gs[g].runs[r]);
        mcl_json_end_arr(&j);
        mcl_json_end_obj(&j);
    }
    mcl_json_end_arr(&j);
    mcl_json_begin_arr(&j, "paired");
    for (int g = 1; g < ng; g++) {
        mcl_json_begin_obj(&j, NULL);
        mcl_json_str(&j, "first", gs[0].name);
        mcl_json_str(&j, "second", gs[g].name);
        mcl_json_int(&j, "n", ps[g].n);
        mcl_json_begin_arr(&j, "stream_seeds");
        for (int r = 0; r < gs[g].n; r++) mcl_json_u64(&j, NULL, gs[g].runs[r].rep.stream_seed);
        mcl_json_end_arr(&j);
        for (int k = 0; k < 2; k++) {
            mcl_json_begin_obj(&j, COLS[PAIRED_COLS[k]].key);
            mcl_json_num(&j, "diff", ps[g].diff[k], 6);
            mcl_json_num(&j, "half", ps[g].half[k], 6);
            mcl_json_str(&j, "verdict", ps[g].verdict[k]);
            mcl_json_num_array(&j, "diffs", ps[g].d[k], ps[g].n, 6);
            mcl_json_end_obj(&j);
        }
        mcl_json_end_obj(&j);
    }
    mcl_json_end_arr(&j);
    mcl_json_end_obj(&j);
    mcl_json_finish(&j);
}

/* ---------------------------------------------------------------- figures */

/* per-task.png (the mean per-task accuracy of each group, its interval as a band) and
 * within-task.png (the last tasks' within-task accuracy: each run's curve a moving average,
 * then the mean and interval over the group's runs); bands clipped to [0, 1]. */
static int write_figures(const group *gs, int ng, const char *dir)
{
    if (mcl_online_fig_dir(dir)) return 1;
    int T = 0, P = 0, same_way = 1, rc = 0;
    for (int g = 0; g < ng; g++)
        for (int r = 0; r < gs[g].n; r++) {
            const mcl_oct_report *p = &gs[g].runs[r].rep;
            T = p->n_tasks > T ? p->n_tasks : T;
            P = p->per_task_max > P ? p->per_task_max : P;
            same_way &= p->n_way == gs[0].runs[0].rep.n_way;
        }
    int late0 = gs[0].runs[0].late_from, late1 = gs[0].runs[0].rep.n_tasks; /* shared by all runs? */
    for (int g = 0; g < ng; g++)
        for (int r = 0; r < gs[g].n; r++)
            if (gs[g].runs[r].late_from != late0 || gs[g].runs[r].rep.n_tasks != late1) late0 = -1;
    /* the stream in the titles, when every run read the same kind (data set, tasks x examples) */
    const mcl_oct_report *r0 = &gs[0].runs[0].rep;
    int same_stream = 1;
    for (int g = 0; g < ng; g++)
        for (int r = 0; r < gs[g].n; r++) {
            const mcl_oct_report *p = &gs[g].runs[r].rep;
            same_stream &= !strcmp(p->source, r0->source) && p->n_tasks == r0->n_tasks &&
                           p->per_task_max == r0->per_task_max;
        }
    char stream_words[320] = "";
    if (same_stream && r0->source[0])
        snprintf(stream_words, sizeof stream_words, "Split-%.200s %d x %d: ", r0->source, r0->n_tasks,
                 r0->per_task_max);
    char late_words[64] = "last tasks";
    if (late0 >= 0 && late1 > late0) snprintf(late_words, sizeof late_words, "tasks %d-%d", late0 + 1, late1);
    if (P > 2000) P = 2000;
    if (T < 1) T = 1;
    if (P < 1) P = 1;
    const int W = P / 40 > 5 ? P / 40 : 5; /* one point per task and position: noisy */
    const size_t L = (size_t)(T > P ? T : P);
    double *x = malloc(L * sizeof *x), *v = malloc(L * MAX_GROUP_RUNS * sizeof *v), *tmp = malloc(L * sizeof *tmp),
           *y = malloc(L * (size_t)ng * sizeof *y), *b = malloc(L * (size_t)ng * sizeof *b);
    if (!x || !v || !tmp || !y || !b) {
        fprintf(stderr, "metacl online: out of memory\n");
        rc = 1;
    }
    char names[MCL_PLOT_MAX_SERIES][NAME_MAX_LEN + 32], path[2100], err[512], chance_label[64], title[512];
    mcl_series se[MCL_PLOT_MAX_SERIES];
    const int ns = ng < MCL_PLOT_MAX_SERIES ? ng : MCL_PLOT_MAX_SERIES;
    snprintf(chance_label, sizeof chance_label, "chance (%d-way)", gs[0].runs[0].rep.n_way);
    for (int fig = 0; rc == 0 && fig < 2; fig++) {
        const int n = fig == 0 ? T : P;
        for (int i = 0; i < n; i++) x[i] = i + 1;
        for (int g = 0; g < ns; g++) {
            for (int r = 0; r < gs[g].n; r++) {
                const mcl_online_run *run = &gs[g].runs[r];
                double *vr = v + (size_t)r * n;
                if (fig == 0) {
                    for (int t = 0; t < n; t++) vr[t] = t < run->rep.n_tasks ? run->rep.task_acc[t] : NAN;
                } else {
                    for (int k = 0; k < n; k++)
                        tmp[k] = mcl_oct_within_acc(&run->rep, run->late_from, run->rep.n_tasks, k, 0);
                    mcl_moving_average(tmp, n, W, vr);
                }
            }
            for (int i = 0; i < n; i++) mcl_ci95(v + i, gs[g].n, n, &y[(size_t)g * n + i], &b[(size_t)g * n + i], NULL);
            snprintf(names[g], sizeof names[g], "%s (n = %d)", gs[g].name, gs[g].n);
            se[g] = (mcl_series){names[g], x, y + (size_t)g * n, n, b + (size_t)g * n};
        }
        mcl_lines_spec ls;
        memset(&ls, 0, sizeof ls);
        if (fig == 0)
            snprintf(title, sizeof title, "%sonline accuracy per task, mean over runs, 95 %% CI band (in [0, 1])",
                     stream_words);
        else
            snprintf(title, sizeof title, "%swithin-task accuracy, %s (moving avg. over %d), mean, 95 %% CI band",
                     stream_words, late_words, W);
        ls.title = title;
        ls.xlabel = fig == 0 ? "task" : "example within the task";
        ls.ylabel = "accuracy";
        ls.ref_y = same_way && gs[0].runs[0].rep.n_way > 0 ? 1.0 / gs[0].runs[0].rep.n_way : NAN;
        ls.ref_label = chance_label;
        ls.band_floor0 = 1;
        ls.band_ceil_on = 1;
        ls.band_ceil = 1.0;
        snprintf(path, sizeof path, "%s/%s", dir, fig == 0 ? "per-task.png" : "within-task.png");
        if (mcl_plot_lines_ex(path, &ls, ns, se, NULL, err, sizeof err) != MCL_OK) {
            fprintf(stderr, "metacl online: %s\n", err);
            rc = 1;
        }
    }
    free(x);
    free(v);
    free(tmp);
    free(y);
    free(b);
    return rc;
}

/* ---------------------------------------------------------------- the report */

int mcl_online_group_report(const char *const *specs, int n_specs, const char *fig_dir, int quiet, int json)
{
    group *gs = calloc((size_t)n_specs, sizeof *gs);
    paired *ps = calloc((size_t)n_specs, sizeof *ps);
    int rc = gs && ps ? 0 : 1;
    for (int g = 0; rc == 0 && g < n_specs; g++) {
        rc = parse_spec(specs[g], &gs[g]);
        for (int h = 0; rc == 0 && h < g; h++)
            if (!strcmp(gs[h].name, gs[g].name)) {
                fprintf(stderr, "metacl online: the group name '%s' is given twice\n", gs[g].name);
                rc = 2;
            }
    }
    for (int g = 0; rc == 0 && g < n_specs; g++) rc = load_group(&gs[g]);
    for (int g = 0; rc == 0 && g < n_specs; g++) /* a stream seed twice in a group: no pairing */
        for (int r = 0; rc == 0 && r < gs[g].n; r++)
            for (int q = 0; q < r; q++)
                if (gs[g].runs[q].rep.stream_seed == gs[g].runs[r].rep.stream_seed) {
                    fprintf(stderr, "metacl online: group '%s': %s and %s read the same stream (stream.seed %llu): "
                                    "a group holds independent runs\n",
                            gs[g].name, gs[g].dirs[q], gs[g].dirs[r], (unsigned long long)gs[g].runs[r].rep.stream_seed);
                    rc = 1;
                    break;
                }
    int pair[MAX_GROUP_RUNS];
    for (int g = 1; rc == 0 && g < n_specs; g++) {
        rc = pair_runs(&gs[0], &gs[g], pair);
        if (rc == 0 && compute_paired(&gs[0], &gs[g], pair, &ps[g])) {
            fprintf(stderr, "metacl online: out of memory\n");
            rc = 1;
        }
    }
    if (rc == 0 && fig_dir) rc = write_figures(gs, n_specs, fig_dir);
    if (rc == 0 && json) print_json(gs, n_specs, ps);
    else if (rc == 0 && !quiet) {
        print_table(stdout, gs, n_specs, ps);
        if (fig_dir) printf("figures: %s/per-task.png, %s/within-task.png\n", fig_dir, fig_dir);
    }
    for (int g = 0; gs && g < n_specs; g++) {
        for (int r = 0; r < gs[g].loaded; r++) mcl_oct_report_free(&gs[g].runs[r].rep);
        free(gs[g].runs);
        free(gs[g].text);
        if (ps) free(ps[g].d[0]), free(ps[g].d[1]);
    }
    free(gs);
    free(ps);
    return rc;
}
