/* plot_cmd.c — `metacl plot`: learning curves from run directories.
 *
 *   metacl plot RUN_DIR... --out FILE.png [--y COLUMN] [--chance P] [--title TEXT]
 *
 * Reads RUN_DIR/metrics.csv (written by `metacl train`), plots COLUMN (default acc_main;
 * any column of the header: loss, acc_main, acc_acl, acc_first_shot, lr, val_score, ...)
 * against the step, one line per run (empty cells and -1 accuracies are skipped), with an
 * optional dashed chance level. Exit: 0 ok, 1 a bad file, 2 usage.
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
    float chance;
} plot_opts;

static const mcl_key plot_keys[] = {
    MCL_OPT_STR("out", 'o', plot_opts, out, NULL, "FILE.png", "the figure to write (required)"),
    MCL_OPT_STR("y", 0, plot_opts, y, "acc_main", "COLUMN",
                "column of metrics.csv: loss, acc_main, acc_acl, acc_first_shot, lr, val_score, ..."),
    MCL_OPT_FLOAT("chance", 0, plot_opts, chance, 0, 1, NULL, "P", "a dashed chance level at P (a probability in [0, 1])"),
    MCL_OPT_STR("title", 0, plot_opts, title, NULL, "TEXT", "the title (default: the column)"),
};
static const mcl_cli_cmd plot_cmd = {
    .name = "plot", .synopsis = "RUN_DIR... --out FILE.png [--y COLUMN] [--chance P] [--title TEXT]",
    .about = "Learning curves: COLUMN of RUN_DIR/metrics.csv (written by `metacl train`) against the\n"
             "step, one line per run (at most 16; empty cells and -1 accuracies are skipped).",
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
    o.chance = NAN;
    mcl_cli_parsed p;
    int prc = mcl_cli_parse(&plot_cmd, argc, argv, &o, &p);
    if (prc != MCL_CLI_GO) return prc;
    if (!o.out[0] || p.n_pos == 0)
        return mcl_cli_usage_error(&plot_cmd, "want RUN_DIR... --out FILE.png");
    const char *out = o.out, *col = o.y, *title = o.title[0] ? o.title : NULL;
    const char *const *dirs = p.pos;
    const double chance = o.chance;
    const int n_dirs = p.n_pos;
    mcl_series s[MAX_RUNS];
    int rc = 0;
    memset(s, 0, sizeof s);
    for (int k = 0; k < n_dirs && rc == 0; k++) {
        double *x = NULL, *y = NULL;
        rc = read_curve(dirs[k], col, &x, &y, &s[k].n);
        s[k].x = x;
        s[k].y = y;
        const char *b = strrchr(dirs[k], '/');
        s[k].name = b && b[1] ? b + 1 : dirs[k];
    }
    if (rc == 0) {
        char err[512], t[256];
        snprintf(t, sizeof t, "%s", title ? title : col);
        if (mcl_plot_lines_ref(out, t, "step", col, n_dirs, s, chance, "chance", NULL, err, sizeof err) != MCL_OK) {
            fprintf(stderr, "metacl plot: %s\n", err);
            rc = 1;
        } else {
            printf("wrote %s\n", out);
        }
    }
    for (int k = 0; k < n_dirs; k++) {
        free((void *)s[k].x);
        free((void *)s[k].y);
    }
    return rc;
}
