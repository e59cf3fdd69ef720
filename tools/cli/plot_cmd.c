/* plot_cmd.c — `metacl plot`: learning curves from run directories.
 *
 *   metacl plot RUN_DIR... --out FILE.png|.svg|.pdf [--y COLUMN] [--chance P]... [--title TEXT]
 *               [--smooth N] [--label NAME]... [--cumulative]
 *
 * Reads RUN_DIR/metrics.csv (written by `metacl train`), plots COLUMN (default acc_main;
 * any column of the header: loss, acc_main, acc_acl, acc_first_shot, lr, val_score, ...)
 * against the step, one line per run (empty cells and -1 accuracies are skipped), with an
 * optional dashed chance level (with --cumulative one per stage) and an optional moving
 * average over N points. Legend labels
 * are the run directories' names, or the --label values in order. --cumulative treats the
 * runs as the stages of a curriculum, in the order given: each stage's steps continue where the
 * previous stage ended (unless its own step numbers already do), and dotted lines mark where
 * each stage starts. The format follows the file name (.png, .svg, .pdf; anything else is a
 * usage error). Exit: 0 ok, 1 a bad file, 2 usage.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "plot.h"

#define MAX_RUNS 16

typedef struct plot_opts {
    char out[4096], y[256], title[256];
    int smooth, cumulative, n_labels, n_chance;
    mcl_cli_arg labels[MAX_RUNS];
    mcl_cli_arg chance[MAX_RUNS];
} plot_opts;

static const mcl_key plot_keys[] = {
    MCL_OPT_STR("out", 'o', plot_opts, out, NULL, "FILE", "the figure to write (required): .png, .svg or .pdf"),
    MCL_OPT_STR("y", 0, plot_opts, y, "acc_main", "COLUMN",
                "column of metrics.csv: loss, acc_main, acc_acl, acc_first_shot, lr, val_score, ..."),
    MCL_OPT_APPEND("chance", 0, plot_opts, chance, n_chance, "P",
                   "a dashed chance level at P (a probability in [0, 1]); with --cumulative one\n"
                   "per stage in order (each drawn over its stage), or one for all"),
    MCL_OPT_STR("title", 0, plot_opts, title, NULL, "TEXT", "the title (default: the column)"),
    MCL_OPT_INT("smooth", 0, plot_opts, smooth, 0, 100000, "0", "N",
                "also draw the moving average over N points (the raw curve stays, faint)"),
    MCL_OPT_APPEND("label", 0, plot_opts, labels, n_labels, "NAME",
                   "legend label of the next run (default: the run directory's name)"),
    MCL_OPT_FLAG("cumulative", 0, plot_opts, cumulative,
                 "the runs are curriculum stages in order: one step axis across them"),
};
static const mcl_cli_cmd plot_cmd = {
    .name = "plot",
    .synopsis = "RUN_DIR... --out FILE.png|.svg|.pdf [--y COLUMN] [--chance P] [--title TEXT] [--smooth N]\n"
                "            [--label NAME]... [--cumulative]",
    .about = "Learning curves: COLUMN of RUN_DIR/metrics.csv (written by `metacl train`) against the\n"
             "step, one line per run (at most 16; empty cells and -1 accuracies are skipped). With\n"
             "--cumulative the runs are the stages of a curriculum, in order, on one step axis.",
    .opts = plot_keys, .n_opts = (int)(sizeof plot_keys / sizeof plot_keys[0]), .max_pos = MAX_RUNS};

/* One run's (step, value) points of `col`; returns 0 or 1 (message printed). */
static int read_curve(const char *dir, const char *col, double **xs, double **ys, int *n)
{
    char path[2048], line[4096];
    snprintf(path, sizeof path, "%s/metrics.csv", dir);
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "metacl plot: %s: %s\n", path, strerror(errno));
        return 1;
    }
    int which = -1, cap = 0;
    *n = 0;
    *xs = *ys = NULL;
    if (fgets(line, sizeof line, f)) {
        int k = 0;
        for (char *tok = strtok(line, ",\n"); tok; tok = strtok(NULL, ",\n"), k++)
            if (!strcmp(tok, col)) which = k;
    }
    if (which < 0) {
        fprintf(stderr, "metacl plot: %s has no column '%s'\n", path, col);
        fclose(f);
        return 1;
    }
    while (fgets(line, sizeof line, f)) {
        double v[32];
        int k = 0, have[32] = {0};
        char *p = line;
        while (k < 32) {
            char *end = NULL;
            v[k] = strtod(p, &end);
            have[k] = end != p;
            p = end;
            while (*p && *p != ',' && *p != '\n') p++;
            k++;
            if (*p != ',') break;
            p++;
        }
        if (which >= k || !have[0] || !have[which] || v[which] == -1.0) continue;
        if (*n == cap) {
            cap = cap ? 2 * cap : 256;
            double *nx = realloc(*xs, (size_t)cap * sizeof *nx), *ny = realloc(*ys, (size_t)cap * sizeof *ny);
            if (!nx || !ny) {
                free(nx ? nx : *xs);
                free(ny ? ny : *ys);
                *xs = *ys = NULL;
                fclose(f);
                fprintf(stderr, "metacl plot: out of memory\n");
                return 1;
            }
            *xs = nx;
            *ys = ny;
        }
        (*xs)[*n] = v[0];
        (*ys)[*n] = v[which];
        (*n)++;
    }
    fclose(f);
    if (*n == 0) {
        fprintf(stderr, "metacl plot: %s: no values in column '%s'\n", path, col);
        return 1;
    }
    return 0;
}

int mcl_cli_plot(int argc, char **argv)
{
    plot_opts o;
    memset(&o, 0, sizeof o);
    mcl_cli_parsed p;
    int prc = mcl_cli_parse(&plot_cmd, argc, argv, &o, &p);
    if (prc != MCL_CLI_GO) return prc;
    if (!o.out[0] || p.n_pos == 0)
        return mcl_cli_usage_error(&plot_cmd, "want RUN_DIR... --out FILE.png|.svg|.pdf");
    char err[512];
    if (mcl_plot_check_path(o.out, err, sizeof err) != MCL_OK) return mcl_cli_usage_error(&plot_cmd, "%s", err);
    if (o.n_labels > p.n_pos) return mcl_cli_usage_error(&plot_cmd, "more --label than run directories");
    double chance[MAX_RUNS];
    for (int i = 0; i < o.n_chance; i++) {
        float v;
        if (mcl_parse_f32(o.chance[i].value, 0.0f, 1.0f, &v))
            return mcl_cli_usage_error(&plot_cmd, "--chance '%s': want a probability in [0, 1]", o.chance[i].value);
        chance[i] = v;
    }
    if (o.n_chance > 1 && (!o.cumulative || o.n_chance != p.n_pos))
        return mcl_cli_usage_error(&plot_cmd, "several --chance values need --cumulative and one per run directory "
                                              "(%d given for %d)", o.n_chance, p.n_pos);
    const char *out = o.out, *col = o.y, *title = o.title[0] ? o.title : NULL;
    const char *const *dirs = p.pos;
    const int n_dirs = p.n_pos;
    mcl_series s[MAX_RUNS];
    memset(s, 0, sizeof s);
    double mark_x[MAX_RUNS];
    char mark_txt[MAX_RUNS][48];
    const char *mark_lab[MAX_RUNS];
    int n_mark = 0, rc = 0;
    double end = 0.0, last_raw = -INFINITY; /* cumulative: where the previous stage ended */
    double seg_x0[MAX_RUNS], seg_x1[MAX_RUNS];
    memset(s, 0, sizeof s);
    for (int k = 0; k < n_dirs && rc == 0; k++) {
        double *x = NULL, *y = NULL;
        rc = read_curve(dirs[k], col, &x, &y, &s[k].n);
        s[k].x = x;
        s[k].y = y;
        if (k < o.n_labels) {
            s[k].name = o.labels[k].value;
        } else {
            size_t L = strlen(dirs[k]);
            while (L > 1 && dirs[k][L - 1] == '/') L--; /* "runs/a/" names "a" */
            const char *b = dirs[k] + L;
            while (b > dirs[k] && b[-1] != '/') b--;
            char *nm = malloc(L - (size_t)(b - dirs[k]) + 1);
            if (nm) {
                memcpy(nm, b, L - (size_t)(b - dirs[k]));
                nm[L - (size_t)(b - dirs[k])] = 0;
            }
            s[k].name = nm ? nm : dirs[k];
        }
        if (rc == 0 && o.cumulative) {
            /* a stage whose steps restart continues the axis where the previous one ended */
            double first = x[0], off = k > 0 && first <= last_raw ? end : end - (k > 0 ? last_raw : 0.0);
            if (k == 0) off = 0.0;
            last_raw = x[s[k].n - 1];
            for (int i = 0; i < s[k].n; i++) x[i] += off;
            if (k > 0) {
                mark_x[n_mark] = fmin(end, x[0]);
                snprintf(mark_txt[n_mark], sizeof mark_txt[n_mark], "stage %d", k + 1);
                mark_lab[n_mark] = mark_txt[n_mark];
                n_mark++;
            }
            seg_x0[k] = k > 0 ? fmin(end, x[0]) : x[0];
            end = x[s[k].n - 1];
            seg_x1[k] = end;
        }
    }
    if (rc == 0) {
        char t[256];
        snprintf(t, sizeof t, "%s", title ? title : col);
        mcl_lines_spec sp;
        memset(&sp, 0, sizeof sp);
        sp.title = t;
        sp.xlabel = o.cumulative ? "step (cumulative over the stages)" : "step";
        sp.ylabel = col;
        sp.ref_y = o.n_chance == 1 ? chance[0] : NAN;
        sp.ref_label = "chance";
        if (o.n_chance > 1) { /* one level per stage, over the stage */
            sp.n_ref_segments = o.n_chance;
            sp.ref_seg_x0 = seg_x0;
            sp.ref_seg_x1 = seg_x1;
            sp.ref_seg_y = chance;
        }
        sp.smooth = o.smooth;
        sp.n_markers = n_mark;
        sp.marker_x = mark_x;
        sp.marker_labels = mark_lab;
        if (mcl_plot_lines_ex(out, &sp, n_dirs, s, NULL, err, sizeof err) != MCL_OK) {
            fprintf(stderr, "metacl plot: %s\n", err);
            rc = 1;
        } else {
            printf("wrote %s\n", out);
        }
    }
    for (int k = 0; k < n_dirs; k++) {
        free((void *)s[k].x);
        free((void *)s[k].y);
        if (k >= o.n_labels && s[k].name != dirs[k]) free((void *)s[k].name);
    }
    return rc;
}
