/* metrics.c — continual-learning metrics (see metrics.h for the formulas). */
#include "metrics.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

double mcl_cl_average_accuracy(const double *R, int T)
{
    if (!R || T < 1) return NAN;
    double s = 0.0;
    for (int j = 0; j < T; j++) s += R[(int64_t)(T - 1) * T + j];
    return s / T;
}

double mcl_cl_backward_transfer(const double *R, int T)
{
    if (!R || T < 1) return NAN;
    if (T == 1) return 0.0; /* no earlier task (documented convention) */
    double s = 0.0;
    for (int j = 0; j < T - 1; j++) s += R[(int64_t)(T - 1) * T + j] - R[(int64_t)j * T + j];
    return s / (T - 1);
}

double mcl_cl_forgetting(const double *R, int T)
{
    if (!R || T < 1) return NAN;
    if (T == 1) return 0.0;
    double s = 0.0;
    for (int j = 0; j < T - 1; j++) {
        double best = R[(int64_t)j * T + j];
        for (int i = j + 1; i <= T - 2; i++) {
            double v = R[(int64_t)i * T + j];
            if (isnan(v) || isnan(best))
                best = NAN; /* an unmeasured entry the formula needs: NaN propagates */
            else if (v > best)
                best = v;
        }
        s += best - R[(int64_t)(T - 1) * T + j];
    }
    return s / (T - 1);
}

mcl_status mcl_cl_metrics_compute(const double *R, int T, mcl_cl_metrics *out)
{
    if (!out) return MCL_ERR_NULL;
    out->acc = mcl_cl_average_accuracy(R, T);
    out->bwt = mcl_cl_backward_transfer(R, T);
    out->forgetting = mcl_cl_forgetting(R, T);
    if (!R) return MCL_ERR_NULL;
    return T < 1 ? MCL_ERR_INVALID : MCL_OK;
}

void mcl_mean_std(const double *x, int n, int64_t stride, double *mean, double *std)
{
    double m = NAN, s = NAN;
    if (x && n >= 1) {
        double sum = 0.0;
        for (int i = 0; i < n; i++) sum += x[(int64_t)i * stride];
        m = sum / n;
        if (n == 1) {
            s = isnan(m) ? NAN : 0.0;
        } else {
            double ss = 0.0;
            for (int i = 0; i < n; i++) {
                double d = x[(int64_t)i * stride] - m;
                ss += d * d;
            }
            s = sqrt(ss / (n - 1));
        }
    }
    if (mean) *mean = m;
    if (std) *std = s;
}

/* ======================================================================= results */

void mcl_cl_result_free(mcl_cl_result *r)
{
    if (!r) return;
    free(r->acc);
    free(r->alone);
    free(r->final_acc);
    free(r->run);
    free(r->acc_mean);
    free(r->acc_std);
    free(r->alone_mean);
    free(r->alone_std);
    free(r->final_mean);
    free(r->final_std);
    memset(r, 0, sizeof *r);
}

static double *nan_array(size_t n)
{
    double *a = malloc(n * sizeof *a);
    if (a)
        for (size_t i = 0; i < n; i++) a[i] = NAN;
    return a;
}

mcl_status mcl_cl_result_init(mcl_cl_result *r, int T, int R)
{
    if (!r) return MCL_ERR_NULL;
    memset(r, 0, sizeof *r);
    if (T < 1 || T > 1024 || R < 1 || R > 1000000) return MCL_ERR_INVALID;
    size_t tt = (size_t)T * (size_t)T, rt = (size_t)R * (size_t)T;
    r->n_tasks = T;
    r->n_runs = R;
    r->acc = nan_array((size_t)R * tt);
    r->alone = nan_array(rt);
    r->final_acc = nan_array(rt);
    r->run = malloc((size_t)R * sizeof *r->run);
    r->acc_mean = nan_array(tt);
    r->acc_std = nan_array(tt);
    r->alone_mean = nan_array((size_t)T);
    r->alone_std = nan_array((size_t)T);
    r->final_mean = nan_array((size_t)T);
    r->final_std = nan_array((size_t)T);
    if (!r->acc || !r->alone || !r->final_acc || !r->run || !r->acc_mean || !r->acc_std ||
        !r->alone_mean || !r->alone_std || !r->final_mean || !r->final_std) {
        mcl_cl_result_free(r);
        return MCL_ERR_OOM;
    }
    for (int i = 0; i < R; i++) r->run[i].acc = r->run[i].bwt = r->run[i].forgetting = NAN;
    r->mean.acc = r->mean.bwt = r->mean.forgetting = NAN;
    r->std = r->mean;
    return MCL_OK;
}

void mcl_cl_result_summarize(mcl_cl_result *r)
{
    if (!r || !r->acc) return;
    const int T = r->n_tasks, R = r->n_runs;
    const int64_t tt = (int64_t)T * T;
    for (int k = 0; k < R; k++) {
        const double *m = r->acc + k * tt;
        for (int j = 0; j < T; j++) r->final_acc[(int64_t)k * T + j] = m[(int64_t)(T - 1) * T + j];
        mcl_cl_metrics_compute(m, T, &r->run[k]);
    }
    for (int64_t c = 0; c < tt; c++) mcl_mean_std(r->acc + c, R, tt, &r->acc_mean[c], &r->acc_std[c]);
    for (int j = 0; j < T; j++) {
        mcl_mean_std(r->alone + j, R, T, &r->alone_mean[j], &r->alone_std[j]);
        mcl_mean_std(r->final_acc + j, R, T, &r->final_mean[j], &r->final_std[j]);
    }
    double *v = malloc((size_t)R * 3 * sizeof *v); /* [3][R]: acc, bwt, forgetting */
    if (!v) return; /* the means stay NaN */
    for (int k = 0; k < R; k++) {
        v[k] = r->run[k].acc;
        v[R + k] = r->run[k].bwt;
        v[2 * R + k] = r->run[k].forgetting;
    }
    mcl_mean_std(v, R, 1, &r->mean.acc, &r->std.acc);
    mcl_mean_std(v + R, R, 1, &r->mean.bwt, &r->std.bwt);
    mcl_mean_std(v + 2 * R, R, 1, &r->mean.forgetting, &r->std.forgetting);
    free(v);
}

mcl_status mcl_cl_result_finish(mcl_cl_result *res, mcl_status st)
{
    if (st == MCL_OK)
        mcl_cl_result_summarize(res);
    else
        mcl_cl_result_free(res);
    return st;
}

void mcl_cl_result_set_run_hits(mcl_cl_result *res, int r, const int64_t *hits, double count,
                                int with_alone)
{
    const int T = res->n_tasks;
    double *R = res->acc + (int64_t)r * T * T;
    for (int i = 0; i < T; i++)
        for (int j = 0; j <= i; j++) R[i * T + j] = (double)hits[i * T + j] / count;
    if (!with_alone) return;
    res->alone[(int64_t)r * T] = R[0];
    for (int i = 1; i < T; i++) res->alone[(int64_t)r * T + i] = (double)hits[T * T + i] / count;
}

/* ======================================================================= intervals and verdicts */

/* t_{0.975, df} for df = 1..30 (Student's t, two-sided 95 %), then at df = 40, 60, 120 and the
 * normal quantile as df -> infinity; between the anchors beyond 30, linear in 1/df (the error
 * of that is below 1e-4 there). */
static const double t975_table[30] = {
    12.706205, 4.302653, 3.182446, 2.776445, 2.570582, 2.446912, 2.364624, 2.306004,
    2.262157,  2.228139, 2.200985, 2.178813, 2.160369, 2.144787, 2.131450, 2.119905,
    2.109816,  2.100922, 2.093024, 2.085963, 2.079614, 2.073873, 2.068658, 2.063899,
    2.059539,  2.055529, 2.051831, 2.048407, 2.045230, 2.042272};

double mcl_t975(int df)
{
    if (df < 1) return NAN;
    if (df <= 30) return t975_table[df - 1];
    static const double at[5] = {30, 40, 60, 120, INFINITY}, tv[5] = {2.042272, 2.021075, 2.000298, 1.979930, 1.959964};
    const double u = 1.0 / df;
    for (int i = 0; i < 4; i++) {
        const double u0 = 1.0 / at[i], u1 = isinf(at[i + 1]) ? 0.0 : 1.0 / at[i + 1];
        if (u <= u0 && u >= u1) return tv[i + 1] + (tv[i] - tv[i + 1]) * (u - u1) / (u0 - u1);
    }
    return tv[4];
}

/* mean = Σ x / k, half = t_{0.975, k-1} · sqrt(Σ (x − mean)² / (k − 1)) / sqrt(k) over the
 * k non-NaN values */
void mcl_ci95(const double *x, int n, int64_t stride, double *mean, double *half, int *used)
{
    double sum = 0.0, m = NAN, h = NAN;
    int k = 0;
    for (int i = 0; x && i < n; i++) {
        const double v = x[(int64_t)i * stride];
        if (!isnan(v)) {
            sum += v;
            k++;
        }
    }
    if (k > 0) m = sum / k;
    if (k > 1) {
        double ss = 0.0;
        for (int i = 0; i < n; i++) {
            const double v = x[(int64_t)i * stride];
            if (!isnan(v)) ss += (v - m) * (v - m);
        }
        h = mcl_t975(k - 1) * sqrt(ss / (k - 1)) / sqrt((double)k);
    }
    if (mean) *mean = m;
    if (half) *half = h;
    if (used) *used = k;
}

const char *mcl_verdict_name(mcl_verdict v)
{
    switch (v) {
    case MCL_VERDICT_MET: return "met";
    case MCL_VERDICT_NOT_MET: return "not met";
    case MCL_VERDICT_TIE: return "tie";
    case MCL_VERDICT_FIRST: return "first";
    case MCL_VERDICT_SECOND: return "second";
    default: return "inconclusive";
    }
}

mcl_verdict mcl_target_verdict(double mean, double half, double thr, int higher)
{
    if (isnan(mean) || isnan(half) || isnan(thr)) return MCL_VERDICT_INCONCLUSIVE;
    const double lo = mean - half, hi = mean + half;
    if (higher) return lo >= thr ? MCL_VERDICT_MET : hi < thr ? MCL_VERDICT_NOT_MET : MCL_VERDICT_INCONCLUSIVE;
    return hi <= thr ? MCL_VERDICT_MET : lo > thr ? MCL_VERDICT_NOT_MET : MCL_VERDICT_INCONCLUSIVE;
}

/* d_r = x_r − y_r over the runs where both are numbers; its interval against margin */
mcl_verdict mcl_paired_verdict(const double *x, const double *y, int n, double margin,
                               double *diff, double *half)
{
    double m = NAN, h = NAN;
    double *d = n > 0 ? malloc(sizeof *d * (size_t)n) : NULL;
    int k = 0;
    for (int r = 0; d && x && y && r < n; r++)
        if (!isnan(x[r]) && !isnan(y[r])) d[k++] = x[r] - y[r];
    if (d) mcl_ci95(d, k, 1, &m, &h, NULL);
    free(d);
    if (diff) *diff = m;
    if (half) *half = h;
    if (isnan(h)) return MCL_VERDICT_INCONCLUSIVE;
    if (m - h > margin) return MCL_VERDICT_FIRST;
    if (m + h < margin) return MCL_VERDICT_SECOND;
    return MCL_VERDICT_TIE;
}
