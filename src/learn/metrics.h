/* metrics.h — continual-learning metrics from an accuracy matrix (public API).
 *
 * The accuracy matrix of one run of T tasks is R[i][j], 0 <= i, j < T: the accuracy on task j
 * after learning tasks 0..i (row i = "after task i"). It is stored row-major as T·T doubles
 * (R[i][j] at i·T + j). Entries that were not measured are NaN — normally every j > i (task j
 * not learned yet), and, in "final row only" evaluations, whole rows i < T-1.
 *
 * Formulas (T >= 1; all means are plain arithmetic means):
 *
 *   average accuracy   ACC = (1/T) · Σ_{j=0}^{T-1} R[T-1][j]
 *
 *   backward transfer  BWT = (1/(T-1)) · Σ_{j=0}^{T-2} ( R[T-1][j] − R[j][j] )
 *                      (Lopez-Paz & Ranzato 2017; negative = forgetting)
 *
 *   forgetting         F   = (1/(T-1)) · Σ_{j=0}^{T-2} ( max_{i ∈ [j, T-2]} R[i][j] − R[T-1][j] )
 *                      (Chaudhry et al. 2018, "Riemannian Walk", the forgetting of task j at
 *                      the end is the drop from the best accuracy it ever had while later
 *                      tasks were learned; the max runs over the rows in which task j had been
 *                      learned, i >= j, excluding the last row)
 *
 *   T = 1: there is no earlier task, the sums over j < T-1 are empty. By convention
 *          BWT = F = 0 (not NaN), so tables of one-task runs stay finite and means over runs
 *          stay defined. ACC = R[0][0].
 *
 * NaN propagates: if an entry a formula needs is NaN, the result is NaN (e.g. BWT/F of a
 * "final row only" matrix with T > 1). Entries a formula does not read (j > i) may hold
 * anything.
 *
 * Over runs: mean and SAMPLE standard deviation (denominator n−1; std = 0 for n = 1; NaN
 * mean and std for n = 0). A NaN value makes both NaN.
 */
#ifndef MCL_METRICS_H
#define MCL_METRICS_H

#include <stdint.h>

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mcl_cl_metrics {
    double acc;        /* average accuracy after the last task */
    double bwt;        /* backward transfer                    */
    double forgetting; /* forgetting F                         */
} mcl_cl_metrics;

/* The three metrics of one T×T matrix (formulas above). R == NULL or T < 1: all NaN. */
double mcl_cl_average_accuracy(const double *R, int T);
double mcl_cl_backward_transfer(const double *R, int T);
double mcl_cl_forgetting(const double *R, int T);
/* All three; returns MCL_ERR_NULL / MCL_ERR_INVALID (and NaNs in *out) on R == NULL or T < 1. */
mcl_status mcl_cl_metrics_compute(const double *R, int T, mcl_cl_metrics *out);

/* Mean and sample std (n−1) of x[0], x[stride], ..., x[(n-1)·stride]. mean or std may be NULL. */
void mcl_mean_std(const double *x, int n, int64_t stride, double *mean, double *std);

/* ======================================================================= results of runs
 *
 * What every evaluation protocol (acl_eval.h, baseline.h) returns: per run an accuracy matrix
 * and its metrics, then the mean ± std over runs of every cell and metric. */
typedef struct mcl_cl_result {
    int n_tasks;           /* T                                                                 */
    int n_runs;            /* R                                                                 */
    double *acc;           /* [R·T·T] run r's R[i][j] at (r·T + i)·T + j; NaN = not measured     */
    double *alone;         /* [R·T] run r, task i learned ALONE from scratch, accuracy on task i;
                              all NaN when the protocol did not measure it (Split-X)             */
    double *final_acc;     /* [R·T] run r, accuracy on task j after the last task
                              (= the last row of acc; doc/acl.md, Evaluation's per-task accuracy)           */
    mcl_cl_metrics *run;   /* [R] ACC, BWT, F of each run's matrix                               */
    double *acc_mean, *acc_std;     /* [T·T] over runs, per cell (NaN where not measured) */
    double *alone_mean, *alone_std; /* [T]                                                */
    double *final_mean, *final_std; /* [T]                                                */
    mcl_cl_metrics mean, std;       /* over runs                                          */
} mcl_cl_result;

/* Allocate for T tasks and R runs (1 <= T <= 1024, 1 <= R <= 1000000) with every value NaN.
 * Returns MCL_ERR_INVALID or MCL_ERR_OOM (nothing allocated) on failure. */
mcl_status mcl_cl_result_init(mcl_cl_result *res, int n_tasks, int n_runs);
void mcl_cl_result_free(mcl_cl_result *res);
/* From res->acc and res->alone: fill final_acc, run[], and every mean/std. */
void mcl_cl_result_summarize(mcl_cl_result *res);
/* The end of an evaluation that filled res with status st: summarize on MCL_OK, free res
 * otherwise; returns st. */
mcl_status mcl_cl_result_finish(mcl_cl_result *res, mcl_status st);
/* Run r of a sequential evaluation from hit counts: hits[i*T + j] (task j's queries after
 * learning tasks 0..i, j <= i) and, when with_alone, hits[T*T + i] (task i learnt alone; task 0
 * alone is the first row's cell), each over `count` queries. */
void mcl_cl_result_set_run_hits(mcl_cl_result *res, int r, const int64_t *hits, double count,
                                int with_alone);

/* ======================================================================= intervals and verdicts
 *
 * What the tables and the targets say about runs (doc/architecture.md's statistics rule):
 * a mean with a 95 % confidence interval over n independent runs, Student's t:
 *     half = t_{0.975, n-1} · s / sqrt(n),   s = the sample std (n − 1)
 * (no interval, half = NaN, for n < 2). A target "x >= thr" is
 *     met           when the interval clears it:          mean − half >= thr
 *     not met       when it clears it the other way:      mean + half <  thr
 *     inconclusive  otherwise, and always without an interval (one run).
 * Two models measured on the same runs (the same episodes or streams) are compared by the
 * paired t-test: the interval of the per-run differences d_r = x_r − y_r; "tie" when it
 * holds 0 (the test cannot separate them at the 5 % level), else the better of the two. */

/* t_{0.975, df}: the two-sided 95 % quantile of Student's t with df >= 1 degrees of freedom
 * (a table for df <= 30, interpolated in 1/df beyond, 1.959964 as df -> infinity); NaN for
 * df < 1. */
double mcl_t975(int df);
/* Mean and 95 % half-width of x[0], x[stride], ... (n values; NaN values are skipped and not
 * counted). *half is NaN when fewer than 2 values remain; *mean NaN when none. *used (may be
 * NULL) gets the number of values used. */
void mcl_ci95(const double *x, int n, int64_t stride, double *mean, double *half, int *used);

typedef enum mcl_verdict {
    MCL_VERDICT_INCONCLUSIVE = 0,
    MCL_VERDICT_MET,
    MCL_VERDICT_NOT_MET,
    MCL_VERDICT_TIE,    /* a paired comparison that cannot separate the two */
    MCL_VERDICT_FIRST,  /* ... that finds the first one larger */
    MCL_VERDICT_SECOND  /* ... that finds the second one larger */
} mcl_verdict;

/* "met", "not met", "inconclusive", "tie", "first", "second". */
const char *mcl_verdict_name(mcl_verdict v);
/* A target "value >= thr" (higher = 1) or "value <= thr" (higher = 0) judged on the interval
 * mean ± half (half NaN: inconclusive). */
mcl_verdict mcl_target_verdict(double mean, double half, double thr, int higher);
/* The paired comparison of x and y over n runs (run r: x[r], y[r]; a run where either is NaN
 * is left out): *diff and *half the mean and 95 % half-width of x − y (may be NULL).
 * Returns MCL_VERDICT_FIRST / _SECOND when the interval excludes 0 on that side, _TIE when it
 * holds 0, _INCONCLUSIVE when fewer than 2 runs remain. margin shifts the question to
 * "x − y >= margin" (first) vs "< margin" (second); 0 for a plain comparison. */
mcl_verdict mcl_paired_verdict(const double *x, const double *y, int n, double margin,
                               double *diff, double *half);

#ifdef __cplusplus
}
#endif
#endif
