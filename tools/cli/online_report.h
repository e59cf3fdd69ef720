/* online_report.h — what `metacl online --report` makes of one run (online_cmd.c) and the
 * grouped report built on it (online_groups.c: `--report NAME=DIR[,DIR...]`, a row per group
 * with the mean and 95 % interval over its runs, the groups paired with the first one).
 */
#ifndef MCL_CLI_ONLINE_REPORT_H
#define MCL_CLI_ONLINE_REPORT_H

#include "oct_train.h"

#define MCL_ONLINE_EARLY_TASKS 10 /* the first tasks: before any in-context learner can have emerged */
#define MCL_ONLINE_LATE_TASKS 20  /* the last tasks                                                   */
#define MCL_ONLINE_AT_EXAMPLE 5   /* the emergence figure: accuracy at the 5th example of a task       */
#define MCL_ONLINE_WINDOW_HALF 2  /* ... averaged over examples 3..7 (5 ± 2) for a less noisy estimate */

typedef struct mcl_online_run {
    const char *dir;
    mcl_oct_report rep;
    double early_acc, late_acc;     /* mean per-task accuracy, first / last tasks      */
    double early_at5, late_at5;     /* within-task accuracy at the 5th example         */
    double early_win, late_win;     /* ... over examples 3..7                          */
    int late_from;                  /* first of the late tasks                          */
} mcl_online_run;

/* The early / late numbers of r from r->rep. */
void mcl_online_summarize(mcl_online_run *r);
/* The last component of a run directory's path (its name in tables and legends). */
const char *mcl_online_run_name(const char *dir);
/* Creates the figure directory dir if missing; 1 (message on stderr) when it cannot. */
int mcl_online_fig_dir(const char *dir);

/* The grouped report: specs[g] = "NAME=DIR[,DIR...]" (n_specs groups), figures under fig_dir
 * (NULL: none), the table on stdout unless quiet, the JSON instead with json. Returns the
 * exit status: 0, 1 (a run cannot be read; the groups' streams cannot be paired), 2 (usage:
 * an empty name or group, a name twice, too many groups or runs). */
int mcl_online_group_report(const char *const *specs, int n_specs, const char *fig_dir, int quiet, int json);

#endif
