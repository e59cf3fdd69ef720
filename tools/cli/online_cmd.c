/* online_cmd.c — `metacl online`: an online-transformer run (the family "oct" on the harness:
 * src/models/oct/oct_train.h) followed by its report; `metacl online --report DIR...` reports
 * finished or stopped runs again, one or several side by side.
 *
 *   metacl online --config FILE [--set key=value]... [--out RUN_DIR] [--backend ...] [--quiet]
 *   metacl online --resume RUN_DIR [--set key=value]...
 *   metacl online --report RUN_DIR [--report RUN_DIR]... [--figures DIR] [--json]
 *   metacl online --report NAME=DIR[,DIR...] [--report NAME=DIR[,DIR...]]... [--figures DIR] [--json]
 *
 * The report of a run (doc/oct.md): the cumulative log-loss (prequential description length,
 * nats per example) and the online accuracy of the predictions made before training on each
 * example; per-task accuracy; within-task accuracy (the i-th example of a task) early and
 * late in the stream. One run: RUN_DIR/summary.json and RUN_DIR/figures/{per-task,
 * within-task}.png. Several: a table with a row per run, and the same figures with a curve
 * per run under --figures DIR. Groups of runs (--report NAME=DIR[,DIR...], online_groups.c):
 * a row per group, mean and 95 % interval over its runs, paired tests against the first group.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "oct_train.h"
#include "plot.h"
#include "util.h"

#include "online_report.h"

#define MAX_RUNS 8  /* side by side, one row each; groups (online_groups.c) take more */
#define MAX_GROUPS 8
#define EARLY_TASKS MCL_ONLINE_EARLY_TASKS
#define LATE_TASKS MCL_ONLINE_LATE_TASKS
#define AT_EXAMPLE MCL_ONLINE_AT_EXAMPLE
#define WINDOW_HALF MCL_ONLINE_WINDOW_HALF

typedef mcl_online_run run_summary;

static double mean_range(const double *v, int a, int b)
{
    double s = 0.0;
    int n = 0;
    for (int i = a; i < b; i++)
        if (isfinite(v[i])) s += v[i], n++;
    return n ? s / n : NAN;
}

void mcl_online_summarize(mcl_online_run *r)
{
    const mcl_oct_report *p = &r->rep;
    int reached = 0;
    for (int t = 0; t < p->n_tasks; t++)
        if (isfinite(p->task_acc[t])) reached = t + 1;
    const int early = reached < EARLY_TASKS ? reached : EARLY_TASKS;
    r->late_from = reached - LATE_TASKS > early ? reached - LATE_TASKS : early;
    r->early_acc = mean_range(p->task_acc, 0, early);
    r->late_acc = mean_range(p->task_acc, r->late_from, reached);
    r->early_at5 = mcl_oct_within_acc(p, 0, early, AT_EXAMPLE - 1, 0);
    r->late_at5 = mcl_oct_within_acc(p, r->late_from, reached, AT_EXAMPLE - 1, 0);
    r->early_win = mcl_oct_within_acc(p, 0, early, AT_EXAMPLE - 1, WINDOW_HALF);
    r->late_win = mcl_oct_within_acc(p, r->late_from, reached, AT_EXAMPLE - 1, WINDOW_HALF);
}

static void json_num(FILE *f, const char *key, double v, int comma)
{
    if (isfinite(v))
        fprintf(f, "\"%s\": %.6g%s", key, v, comma ? ", " : "");
    else
        fprintf(f, "\"%s\": null%s", key, comma ? ", " : "");
}

static void print_json(FILE *f, const run_summary *r)
{
    const mcl_oct_report *p = &r->rep;
    fprintf(f, "{\"run\": \"%s\", \"examples\": %lld, ", r->dir, (long long)p->n);
    json_num(f, "cum_nll", p->cum_nll, 1);
    json_num(f, "online_acc", p->online_acc, 1);
    json_num(f, "early_task_acc", r->early_acc, 1);
    json_num(f, "late_task_acc", r->late_acc, 1);
    json_num(f, "early_acc_at_5th", r->early_at5, 1);
    json_num(f, "late_acc_at_5th", r->late_at5, 1);
    json_num(f, "early_acc_at_3to7", r->early_win, 1);
    json_num(f, "late_acc_at_3to7", r->late_win, 1);
    fprintf(f, "\"late_from_task\": %d, \"task_acc\": [", r->late_from + 1);
    for (int t = 0; t < p->n_tasks; t++) {
        if (isfinite(p->task_acc[t]))
            fprintf(f, "%s%.4f", t ? ", " : "", p->task_acc[t]);
        else
            fprintf(f, "%snull", t ? ", " : "");
    }
    fprintf(f, "]}");
}

/* RUN_DIR/summary.json, atomically. */
static int write_summary(const run_summary *r)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    if (!m) return 1;
    print_json(m, r);
    fputc('\n', m);
    fclose(m);
    char path[2048], err[512];
    snprintf(path, sizeof path, "%s/summary.json", r->dir);
    mcl_status st = mcl_write_file_atomic(path, buf, len, err, sizeof err);
    free(buf);
    if (st != MCL_OK) {
        fprintf(stderr, "metacl online: %s\n", err);
        return 1;
    }
    return 0;
}

const char *mcl_online_run_name(const char *dir)
{
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/') n--;
    const char *b = dir + n;
    while (b > dir && b[-1] != '/') b--;
    return b;
}

int mcl_online_fig_dir(const char *dir)
{
    struct stat sb;
    if (strlen(dir) > 2000 ||
        (mkdir(dir, 0777) != 0 && (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode)))) {
        fprintf(stderr, "metacl online: cannot create %s\n", dir);
        return 1;
    }
    return 0;
}

/* per-task.png and within-task.png in fig_dir, a curve per run (one run: early and late
 * within-task curves). */
static int write_figures(run_summary *rs, int n, const char *fig_dir)
{
    if (mcl_online_fig_dir(fig_dir)) return 1;
    char path[2100], err[512];
    mcl_series se[2 * MAX_RUNS];
    double *buf[2 * MAX_RUNS + 2]; /* task numbers, positions, within-task curves */
    int nb = 0, rc = 0;
    char names[2 * MAX_RUNS][160];
    int T = 0, same_way = 1;
    for (int i = 0; i < n; i++) {
        if (rs[i].rep.n_tasks > T) T = rs[i].rep.n_tasks;
        same_way &= rs[i].rep.n_way == rs[0].rep.n_way;
    }
    double *tx = malloc((size_t)(T > 0 ? T : 1) * sizeof *tx); /* task numbers, shared */
    if (!tx) return 1;
    buf[nb++] = tx;
    for (int t = 0; t < T; t++) tx[t] = t + 1;
    for (int i = 0; i < n; i++) { /* per-task accuracy */
        snprintf(names[i], sizeof names[i], "%s", mcl_online_run_name(rs[i].dir));
        se[i] = (mcl_series){names[i], tx, rs[i].rep.task_acc, rs[i].rep.n_tasks, NULL};
    }
    char chance_label[64];
    snprintf(chance_label, sizeof chance_label, "chance (%d-way)", rs[0].rep.n_way);
    const double chance = same_way && rs[0].rep.n_way > 0 ? 1.0 / rs[0].rep.n_way : NAN;
    mcl_lines_spec ls;
    memset(&ls, 0, sizeof ls);
    ls.title = "Online accuracy per task (predictions before training on each example)";
    ls.xlabel = "task";
    ls.ylabel = "accuracy";
    ls.ref_y = chance;
    ls.ref_label = chance_label;
    ls.smooth = rs[0].rep.n_tasks >= 20 ? 5 : 0;
    snprintf(path, sizeof path, "%s/per-task.png", fig_dir);
    if (mcl_plot_lines_ex(path, &ls, n, se, NULL, err, sizeof err) != MCL_OK) {
        fprintf(stderr, "metacl online: %s\n", err);
        rc = 1;
    }
    /* within-task accuracy: position i, early and late tasks */
    int ns = 0, P = 0;
    for (int i = 0; i < n; i++)
        if (rs[i].rep.per_task_max > P) P = rs[i].rep.per_task_max;
    if (P > 2000) P = 2000;
    double *px = malloc((size_t)(P > 0 ? P : 1) * sizeof *px);
    if (!px) rc = 1;
    else buf[nb++] = px;
    for (int i = 0; px && i < P; i++) px[i] = i + 1;
    for (int i = 0; px && i < n && ns + 2 <= 2 * MAX_RUNS; i++) {
        const int early = EARLY_TASKS < rs[i].late_from ? EARLY_TASKS : rs[i].late_from;
        for (int g = 0; g < 2; g++) {
            if (g == 0 && n > 1) continue; /* several runs: the late curves only */
            double *y = malloc((size_t)(P > 0 ? P : 1) * sizeof *y);
            if (!y) break;
            buf[nb++] = y;
            for (int k = 0; k < P; k++)
                y[k] = g == 0 ? mcl_oct_within_acc(&rs[i].rep, 0, early, k, 0)
                              : mcl_oct_within_acc(&rs[i].rep, rs[i].late_from, rs[i].rep.n_tasks, k, 0);
            if (n == 1)
                snprintf(names[ns], sizeof names[ns], g == 0 ? "tasks 1-%d" : "tasks %d-%d",
                         g == 0 ? early : rs[i].late_from + 1, rs[i].rep.n_tasks);
            else
                snprintf(names[ns], sizeof names[ns], "%s (last tasks)", mcl_online_run_name(rs[i].dir));
            se[ns] = (mcl_series){names[ns], px, y, P, NULL};
            ns++;
        }
    }
    memset(&ls, 0, sizeof ls);
    ls.title = "Within-task accuracy: the i-th example of a task";
    ls.xlabel = "example within the task";
    ls.ylabel = "accuracy";
    ls.ref_y = chance;
    ls.ref_label = chance_label;
    ls.smooth = P / 40 > 5 ? P / 40 : 5; /* one point per task and position: noisy */
    snprintf(path, sizeof path, "%s/within-task.png", fig_dir);
    if (ns > 0 && mcl_plot_lines_ex(path, &ls, ns, se, NULL, err, sizeof err) != MCL_OK) {
        fprintf(stderr, "metacl online: %s\n", err);
        rc = 1;
    }
    for (int i = 0; i < nb; i++) free(buf[i]);
    return rc;
}

static void print_table(FILE *f, run_summary *rs, int n)
{
    fprintf(f, "%-28s %9s %8s %8s %8s %9s %9s %9s\n", "run", "examples", "cum_nll", "online", "early", "late",
            "5th@early", "5th@late");
    for (int i = 0; i < n; i++) {
        const run_summary *r = &rs[i];
        fprintf(f, "%-28s %9lld %8.4f %7.1f%% %7.1f%% %8.1f%% %8.1f%% %8.1f%%\n", mcl_online_run_name(r->dir),
                (long long)r->rep.n, r->rep.cum_nll, 100 * r->rep.online_acc, 100 * r->early_acc,
                100 * r->late_acc, 100 * r->early_win, 100 * r->late_win);
    }
    fprintf(f, "(cum_nll: mean -log p(y_t | x_t, past), nats; online: accuracy of every prediction;\n"
               " early/late: mean per-task accuracy of the first %d / last %d tasks; 5th@: within-task\n"
               " accuracy at examples 3..7 of a task, early / late tasks)\n",
            EARLY_TASKS, LATE_TASKS);
}

static int report(const char *const *dirs, int n, const char *fig_dir, int quiet, int json)
{
    run_summary rs[MAX_RUNS];
    memset(rs, 0, sizeof rs);
    int rc = 0, loaded = 0;
    char err[1024];
    for (int i = 0; i < n && rc == 0; i++) {
        rs[i].dir = dirs[i];
        if (mcl_oct_report_load(dirs[i], &rs[i].rep, err, sizeof err) != MCL_OK) {
            fprintf(stderr, "metacl online: %s: %s\n", dirs[i], err);
            rc = 1;
            break;
        }
        loaded++;
        mcl_online_summarize(&rs[i]);
    }
    if (rc == 0 && n == 1) rc = write_summary(&rs[0]);
    char fd[2000];
    if (rc == 0) {
        if (fig_dir)
            snprintf(fd, sizeof fd, "%.1900s", fig_dir);
        else
            snprintf(fd, sizeof fd, "%.1900s/figures", dirs[0]);
        if (n == 1 || fig_dir) rc = write_figures(rs, n, fd);
    }
    if (rc == 0 && json) {
        printf("[");
        for (int i = 0; i < n; i++) {
            if (i) printf(",\n ");
            print_json(stdout, &rs[i]);
        }
        printf("]\n");
    } else if (rc == 0 && !quiet) {
        print_table(stdout, rs, n);
        if (n == 1 || fig_dir) printf("figures: %s/per-task.png, %s/within-task.png\n", fd, fd);
    }
    for (int i = 0; i < loaded; i++) mcl_oct_report_free(&rs[i].rep);
    return rc;
}

static const char online_about[] =
    "Train a transformer online on a stream (the family oct: every prediction is scored before the "
    "model trains on it; replay streams), then report the run.";
static const char online_epilog[] =
    "A run directory gets config.txt, metrics.csv, log.txt, last.ckpt, summary.json and figures/.\n"
    "Report runs again, one or several side by side:\n"
    "  metacl online --report RUN_DIR [--report RUN_DIR]... [--figures DIR] [--json] [--quiet]\n"
    "Report groups of runs (e.g. seeds): a row per group, the mean +- 95 % CI half-width of each\n"
    "column over its runs (n in the table), the runs' model / stream seeds; every group paired\n"
    "with the first on the runs of equal stream.seed (cum_nll, online accuracy: the first group\n"
    "better / worse / tie, the difference and its interval); --figures: mean curves, CI bands:\n"
    "  metacl online --report NAME=DIR[,DIR...] [--report NAME=DIR[,DIR...]]... [--figures DIR] [--json]\n"
    "Exit: 0 done, 1 runtime error, 2 usage, 130 / 143 stopped by SIGINT / SIGTERM (last.ckpt written).";

static int after_run(const char *run_dir, int quiet, int json)
{
    return report(&run_dir, 1, NULL, quiet, json);
}

/* A --report argument names a group, NAME=DIR[,DIR...], when it holds a '=' with no '/'
 * before it and is not itself a directory (a run directory called "a=b" stays a run). */
static int is_group(const char *arg)
{
    const char *eq = strchr(arg, '=');
    if (!eq) return 0;
    for (const char *c = arg; c < eq; c++)
        if (*c == '/') return 0;
    struct stat sb;
    return !(stat(arg, &sb) == 0 && S_ISDIR(sb.st_mode));
}

int mcl_cli_online(int argc, char **argv)
{
    int want_report = 0;
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--report")) want_report = 1;
    if (!want_report) { /* a run: `metacl train oct` with the report after it */
        char **av = calloc((size_t)argc + 2, sizeof *av);
        if (!av) return 1;
        av[0] = argv[0];
        av[1] = "oct";
        for (int i = 1; i < argc; i++) av[i + 1] = argv[i];
        int rc = (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")))
                     ? mcl_cli_train_with(argc + 1, av, "online", online_about, online_epilog, NULL)
                     : argc < 2 ? (fprintf(stderr, "usage: metacl online --config FILE [--set key=value]... "
                                                   "[--out DIR] | --resume DIR | --report DIR... | --report NAME=DIR,...\n"),
                                   2)
                                : mcl_cli_train_with(argc + 1, av, "online", online_about, online_epilog, after_run);
        free(av);
        return rc;
    }
    const char *dirs[MAX_RUNS], *groups[MAX_GROUPS], *fig = NULL;
    int n = 0, ng = 0, json = 0, quiet = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--report") || !strcmp(argv[i], "--figures")) {
            if (i + 1 >= argc) {
                fprintf(stderr, "metacl online: %s needs a directory\n", argv[i]);
                return 2;
            }
            if (!strcmp(argv[i], "--figures")) {
                fig = argv[++i];
            } else if (is_group(argv[i + 1])) {
                if (ng == MAX_GROUPS) {
                    fprintf(stderr, "metacl online: at most %d --report groups\n", MAX_GROUPS);
                    return 2;
                }
                groups[ng++] = argv[++i];
            } else if (n == MAX_RUNS) {
                fprintf(stderr, "metacl online: at most %d --report runs\n", MAX_RUNS);
                return 2;
            } else {
                dirs[n++] = argv[++i];
            }
        } else if (!strcmp(argv[i], "--json")) {
            json = 1;
        } else if (!strcmp(argv[i], "--quiet")) {
            quiet = 1;
        } else if (!strcmp(argv[i], "--memory-limit")) {
            uint64_t bytes = 0;
            if (i + 1 >= argc || mcl_parse_size(argv[i + 1], &bytes) != 0 || bytes == 0) {
                fprintf(stderr, "metacl online: --memory-limit needs a size (e.g. 512M, 64G)\n");
                return 2;
            }
            mcl_set_memory_limit(bytes);
            i++;
        } else {
            fprintf(stderr, "metacl online: unknown option '%s' with --report (--report DIR, "
                            "--report NAME=DIR,..., --figures DIR, --json, --quiet, --memory-limit SIZE)\n",
                    argv[i]);
            return 2;
        }
    }
    if (n > 0 && ng > 0) {
        fprintf(stderr, "metacl online: --report NAME=DIR,... (groups) and --report DIR (runs) do not mix: "
                        "name every group, or give runs alone\n");
        return 2;
    }
    if (ng > 0) return mcl_online_group_report(groups, ng, fig, quiet, json);
    return report(dirs, n, fig, quiet, json);
}
