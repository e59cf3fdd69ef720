/* stats_cmd.c — `metacl stats`: the statistics of the tables and targets (metrics.h) on numbers
 * given on the command line, so that scripts (tools/scripts/acl-targets.sh) judge results with the
 * same rule as the C code instead of a copy of it.
 *
 *   metacl stats ci X1 X2 ...                      mean, 95 % half-width, n
 *   metacl stats target --min|--max THR X1 ...     met | not met | inconclusive, mean, half, n
 *   metacl stats paired [--margin M] X1 .. -- Y1 ..  first | second | tie | inconclusive,
 *                                                  mean and half-width of X − Y, n
 * One line on stdout, fields separated by tabs. A value "nan" (or "-") is a run that measured
 * nothing and is left out. Exit 0, 2 on a usage error (a word that is not a number, a pair of
 * lists of different lengths). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "metrics.h"

#define MAX_VALUES 100000

static int usage(const char *msg)
{
    fprintf(stderr,
            "metacl stats: %s\n"
            "usage: metacl stats ci X1 X2 ...\n"
            "       metacl stats target --min THR | --max THR X1 X2 ...\n"
            "       metacl stats paired [--margin M] X1 X2 ... -- Y1 Y2 ...\n",
            msg);
    return 2;
}

/* Parse one number ("nan" and "-" are NaN); 0 ok. */
static int parse_num(const char *s, double *out)
{
    if (!strcmp(s, "-") || !strcmp(s, "nan") || !strcmp(s, "NaN")) {
        *out = NAN;
        return 0;
    }
    char *end = NULL;
    double v = strtod(s, &end);
    if (!*s || !end || *end || isinf(v) || isnan(v)) return 1;
    *out = v;
    return 0;
}

/* argv[0..argc-1] into x (malloc'd), stopping at "--" (its index into *stop, argc when none). */
static int parse_list(int argc, char **argv, double **x, int *n, int *stop)
{
    *x = malloc(sizeof **x * (size_t)(argc > 0 ? argc : 1));
    *n = 0;
    *stop = argc;
    if (!*x) return 1;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--")) {
            *stop = i;
            return 0;
        }
        if (*n >= MAX_VALUES || parse_num(argv[i], &(*x)[(*n)++])) {
            fprintf(stderr, "metacl stats: '%s' is not a number\n", argv[i]);
            return 2;
        }
    }
    return 0;
}

/* Print a number for the tab-separated line ("nan" when there is none). */
static void put(double v, const char *sep)
{
    if (isnan(v))
        printf("nan%s", sep);
    else
        printf("%.6g%s", v, sep);
}

int mcl_cli_stats(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        if (argc >= 2) {
            printf("usage: metacl stats ci X1 X2 ...\n"
                   "       metacl stats target --min THR | --max THR X1 X2 ...\n"
                   "       metacl stats paired [--margin M] X1 X2 ... -- Y1 Y2 ...\n"
                   "The 95 %% interval over runs (Student's t), the three-word target rule and the paired\n"
                   "comparison of doc/architecture.md; one tab-separated line on stdout.\n");
            return 0;
        }
        return usage("which statistic? (ci, target, paired)");
    }
    const char *what = argv[1];
    int a = 2, rc = 0, stop = 0, n = 0, m = 0;
    double thr = NAN, margin = 0.0, *x = NULL, *y = NULL;
    int higher = 1;
    if (!strcmp(what, "target")) {
        if (a + 1 >= argc || (strcmp(argv[a], "--min") && strcmp(argv[a], "--max")))
            return usage("target needs --min THR or --max THR before the values");
        higher = !strcmp(argv[a], "--min");
        if (parse_num(argv[a + 1], &thr) || isnan(thr)) return usage("the threshold is not a number");
        a += 2;
    } else if (!strcmp(what, "paired")) {
        if (a + 1 < argc && !strcmp(argv[a], "--margin")) {
            if (parse_num(argv[a + 1], &margin) || isnan(margin)) return usage("the margin is not a number");
            a += 2;
        }
    } else if (strcmp(what, "ci") != 0) {
        return usage("unknown statistic (ci, target, paired)");
    }
    rc = parse_list(argc - a, argv + a, &x, &n, &stop);
    if (rc == 0 && !strcmp(what, "paired")) {
        if (stop == argc - a) rc = usage("paired needs X1 .. -- Y1 ..");
        else rc = parse_list(argc - a - stop - 1, argv + a + stop + 1, &y, &m, &stop);
        if (rc == 0 && m != n) {
            fprintf(stderr, "metacl stats: paired: %d values against %d (one per run on each side)\n", n, m);
            rc = 2;
        }
    } else if (rc == 0 && stop != argc - a) {
        rc = usage("'--' only separates the two lists of paired");
    }
    if (rc == 0 && n == 0) rc = usage("no values");
    if (rc == 0) {
        double mean, half;
        int used;
        if (!strcmp(what, "paired")) {
            mcl_verdict v = mcl_paired_verdict(x, y, n, margin, &mean, &half);
            used = 0;
            for (int i = 0; i < n; i++) used += !isnan(x[i]) && !isnan(y[i]);
            printf("%s\t", mcl_verdict_name(v));
        } else {
            mcl_ci95(x, n, 1, &mean, &half, &used);
            if (!strcmp(what, "target")) printf("%s\t", mcl_verdict_name(mcl_target_verdict(mean, half, thr, higher)));
        }
        put(mean, "\t");
        put(half, "\t");
        printf("%d\n", used);
    }
    free(x);
    free(y);
    return rc;
}
