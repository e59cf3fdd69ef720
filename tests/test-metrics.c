/* test-metrics.c — continual-learning metrics (metrics.h) on hand-computed accuracy matrices:
 * average accuracy, backward transfer, forgetting (Chaudhry et al. 2018), T = 1, NaN
 * propagation, mean and sample std over runs, the per-run result summary; and that a
 * deliberately wrong value is detected. Every expected value's arithmetic is in a comment. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "metrics.h"
#include "testutil.h"

#define SEED 0ULL /* nothing random here */
#define TOL 1e-12

/* Above-diagonal entries hold garbage (123): the formulas must not read them. */
static const double G = 123.0;

static void test_t3_forgetting_differs_from_bwt(void)
{
    /* R = | 0.5   .    .  |
     *     | 0.7  0.9   .  |
     *     | 0.6  0.8  0.4 |
     * ACC = (0.6 + 0.8 + 0.4) / 3 = 1.8 / 3 = 0.6
     * BWT = ((0.6 − 0.5) + (0.8 − 0.9)) / 2 = (0.1 − 0.1) / 2 = 0
     * F   = j=0: max(R00, R10) = max(0.5, 0.7) = 0.7, − R20 0.6 = 0.1
     *       j=1: max(R11)      = 0.9,                − R21 0.8 = 0.1
     *       (0.1 + 0.1) / 2 = 0.1
     * (task 0 improved after task 1 — positive transfer — then dropped: BWT says 0, F 0.1) */
    const double R[9] = {0.5, G, G, 0.7, 0.9, G, 0.6, 0.8, 0.4};
    mcl_cl_metrics m;
    CHECK(mcl_cl_metrics_compute(R, 3, &m) == MCL_OK, "compute T=3");
    CHECK_NEAR("T3 ACC", m.acc, 0.6, TOL, 0);
    CHECK_NEAR("T3 BWT", m.bwt, 0.0, TOL, 0);
    CHECK_NEAR("T3 F", m.forgetting, 0.1, TOL, 0);
    CHECK_NEAR("T3 ACC (single)", mcl_cl_average_accuracy(R, 3), 0.6, TOL, 0);
    CHECK_NEAR("T3 BWT (single)", mcl_cl_backward_transfer(R, 3), 0.0, TOL, 0);
    CHECK_NEAR("T3 F (single)", mcl_cl_forgetting(R, 3), 0.1, TOL, 0);
    /* deliberately wrong values are detected: F computed from R[j][j] instead of the max
     * would be 0 (= −BWT); an ACC over the diagonal would be (0.5+0.9+0.4)/3 = 0.6 too, so
     * check against the row-1 mean (0.7+0.9)/2 = 0.8 instead */
    CHECK(!tu_near(m.forgetting, 0.0, 1e-6, 0), "wrong F (diagonal instead of max) detected");
    CHECK(!tu_near(m.acc, 0.8, 1e-6, 0), "wrong ACC (row 1) detected");
    CHECK(!tu_near(m.acc, 0.6 + 1e-3, 1e-6, 0), "ACC off by 1e-3 detected");
}

static void test_t3_forgetting(void)
{
    /* R = | 0.9   .    .   |
     *     | 0.6  0.8   .   |
     *     | 0.5  0.7  0.95 |
     * ACC = (0.5 + 0.7 + 0.95) / 3 = 2.15 / 3 = 0.71666...
     * BWT = ((0.5 − 0.9) + (0.7 − 0.8)) / 2 = (−0.4 − 0.1) / 2 = −0.25
     * F   = j=0: max(0.9, 0.6) − 0.5 = 0.4;  j=1: 0.8 − 0.7 = 0.1;  (0.4 + 0.1) / 2 = 0.25 */
    const double R[9] = {0.9, G, G, 0.6, 0.8, G, 0.5, 0.7, 0.95};
    mcl_cl_metrics m;
    mcl_cl_metrics_compute(R, 3, &m);
    CHECK_NEAR("T3b ACC", m.acc, 2.15 / 3.0, TOL, 0);
    CHECK_NEAR("T3b BWT", m.bwt, -0.25, TOL, 0);
    CHECK_NEAR("T3b F", m.forgetting, 0.25, TOL, 0);
    CHECK(!tu_near(m.bwt, 0.25, 1e-6, 0), "BWT sign error detected");
}

static void test_t4(void)
{
    /* R = | 0.8   .    .    .  |
     *     | 0.5  0.9   .    .  |
     *     | 0.7  0.4  1.0   .  |
     *     | 0.6  0.6  0.5  0.9 |
     * ACC = (0.6 + 0.6 + 0.5 + 0.9) / 4 = 2.6 / 4 = 0.65
     * BWT = ((0.6−0.8) + (0.6−0.9) + (0.5−1.0)) / 3 = (−0.2 − 0.3 − 0.5) / 3 = −1/3
     * F   = j=0: max(0.8, 0.5, 0.7) = 0.8 − 0.6 = 0.2
     *       j=1: max(0.9, 0.4)      = 0.9 − 0.6 = 0.3
     *       j=2: max(1.0)           = 1.0 − 0.5 = 0.5
     *       (0.2 + 0.3 + 0.5) / 3 = 1/3 */
    const double R[16] = {0.8, G, G, G, 0.5, 0.9, G, G, 0.7, 0.4, 1.0, G, 0.6, 0.6, 0.5, 0.9};
    mcl_cl_metrics m;
    mcl_cl_metrics_compute(R, 4, &m);
    CHECK_NEAR("T4 ACC", m.acc, 0.65, TOL, 0);
    CHECK_NEAR("T4 BWT", m.bwt, -1.0 / 3.0, TOL, 0);
    CHECK_NEAR("T4 F", m.forgetting, 1.0 / 3.0, TOL, 0);

    /* improvement only, T = 2: R = | 0.5 . ; 0.9 0.7 | (task 0 got better while learning 1)
     * BWT = 0.9 − 0.5 = 0.4; F = max over i in [0, 0] of R[i][0] − R10 = 0.5 − 0.9 = −0.4
     * (the max excludes the last row, so forgetting can be negative) */
    const double P[4] = {0.5, G, 0.9, 0.7};
    mcl_cl_metrics_compute(P, 2, &m);
    CHECK_NEAR("T2 positive BWT", m.bwt, 0.4, TOL, 0);
    CHECK_NEAR("T2 negative F", m.forgetting, -0.4, TOL, 0);
    CHECK_NEAR("T2 ACC", m.acc, 0.8, TOL, 0); /* (0.9 + 0.7) / 2 */
}

static void test_t1_and_nan(void)
{
    /* T = 1: ACC = R00 = 0.7; BWT = F = 0 by the documented convention (empty sums) */
    const double R1[1] = {0.7};
    mcl_cl_metrics m;
    CHECK(mcl_cl_metrics_compute(R1, 1, &m) == MCL_OK, "compute T=1");
    CHECK_NEAR("T1 ACC", m.acc, 0.7, TOL, 0);
    CHECK(m.bwt == 0.0 && m.forgetting == 0.0, "T1: BWT %g, F %g (want 0, 0)", m.bwt,
          m.forgetting);
    CHECK(!isnan(m.bwt) && !isnan(m.forgetting), "T1 metrics are not NaN");

    /* final row only: R = | nan . ; 0.3 0.9 |: ACC = (0.3 + 0.9)/2 = 0.6; BWT, F need R00: NaN */
    const double F2[4] = {NAN, NAN, 0.3, 0.9};
    mcl_cl_metrics_compute(F2, 2, &m);
    CHECK_NEAR("final-only ACC", m.acc, 0.6, TOL, 0);
    CHECK(isnan(m.bwt) && isnan(m.forgetting), "final-only BWT %g, F %g are NaN", m.bwt,
          m.forgetting);
    /* a NaN inside the max range of F (R10 of T=3) makes F NaN but not BWT */
    const double R3[9] = {0.5, G, G, NAN, 0.9, G, 0.6, 0.8, 0.4};
    mcl_cl_metrics_compute(R3, 3, &m);
    CHECK(isnan(m.forgetting), "NaN in the max range propagates (F %g)", m.forgetting);
    CHECK_NEAR("BWT ignores R10", m.bwt, 0.0, TOL, 0);

    /* bad input */
    CHECK(mcl_cl_metrics_compute(NULL, 3, &m) == MCL_ERR_NULL && isnan(m.acc), "NULL R");
    CHECK(mcl_cl_metrics_compute(R1, 0, &m) == MCL_ERR_INVALID && isnan(m.acc), "T = 0");
    CHECK(mcl_cl_metrics_compute(R1, 1, NULL) == MCL_ERR_NULL, "NULL out");
}

static void test_mean_std(void)
{
    double mean, sd;
    /* {0.5, 0.7, 0.9}: mean 0.7; squared deviations 0.04, 0, 0.04 sum 0.08; sample variance
     * 0.08 / (3−1) = 0.04, std 0.2 (the population std sqrt(0.08/3) = 0.1633 is wrong) */
    const double x[3] = {0.5, 0.7, 0.9};
    mcl_mean_std(x, 3, 1, &mean, &sd);
    CHECK_NEAR("mean", mean, 0.7, TOL, 0);
    CHECK_NEAR("sample std", sd, 0.2, 1e-12, 0);
    CHECK(!tu_near(sd, sqrt(0.08 / 3.0), 1e-6, 0), "population std would be detected");
    /* one run: std 0 */
    mcl_mean_std(x + 1, 1, 1, &mean, &sd);
    CHECK(mean == 0.7 && sd == 0.0, "one value: mean %g std %g", mean, sd);
    /* strided: {1, 99, 3, 99} stride 2, n 2 -> {1, 3}: mean 2, std sqrt((1 + 1) / 1) = sqrt 2 */
    const double y[4] = {1, 99, 3, 99};
    mcl_mean_std(y, 2, 2, &mean, &sd);
    CHECK_NEAR("strided mean", mean, 2.0, TOL, 0);
    CHECK_NEAR("strided std", sd, sqrt(2.0), TOL, 0);
    /* n = 0: NaN; a NaN value: NaN */
    mcl_mean_std(x, 0, 1, &mean, &sd);
    CHECK(isnan(mean) && isnan(sd), "n = 0 gives NaN");
    const double z[2] = {0.5, NAN};
    mcl_mean_std(z, 2, 1, &mean, &sd);
    CHECK(isnan(mean) && isnan(sd), "a NaN value gives NaN");
    mcl_mean_std(x, 3, 1, NULL, NULL); /* NULL outputs are allowed */
}

static void test_result(void)
{
    mcl_cl_result r;
    CHECK(mcl_cl_result_init(&r, 0, 1) == MCL_ERR_INVALID && !r.acc, "init T = 0 refused");
    CHECK(mcl_cl_result_init(&r, 2, 0) == MCL_ERR_INVALID && !r.acc, "init R = 0 refused");
    CHECK(mcl_cl_result_init(&r, 2, 2) == MCL_OK, "init");
    int all_nan = 1;
    for (int i = 0; i < 8; i++) all_nan &= isnan(r.acc[i]);
    CHECK(all_nan && isnan(r.alone[0]) && isnan(r.mean.acc), "init fills NaN");
    /* run 0: | 0.8 . ; 0.3 0.9 |  ACC (0.3+0.9)/2 = 0.6, BWT 0.3−0.8 = −0.5, F 0.8−0.3 = 0.5
     * run 1: | 0.6 . ; 0.5 0.7 |  ACC (0.5+0.7)/2 = 0.6, BWT 0.5−0.6 = −0.1, F 0.6−0.5 = 0.1
     * over runs: ACC 0.6 ± 0; BWT mean −0.3, deviations ±0.2, sample var 0.08/1, std √0.08;
     * F 0.3 ± √0.08. Cell R00: {0.8, 0.6} mean 0.7 std √(0.02) ; R01 NaN (not measured);
     * final: run 0 {0.3, 0.9}, run 1 {0.5, 0.7}: mean {0.4, 0.8} std {√0.02, √0.02} */
    const double a[8] = {0.8, NAN, 0.3, 0.9, 0.6, NAN, 0.5, 0.7};
    memcpy(r.acc, a, sizeof a);
    mcl_cl_result_summarize(&r);
    CHECK_NEAR("run0 ACC", r.run[0].acc, 0.6, TOL, 0);
    CHECK_NEAR("run0 BWT", r.run[0].bwt, -0.5, TOL, 0);
    CHECK_NEAR("run1 F", r.run[1].forgetting, 0.1, TOL, 0);
    CHECK_NEAR("mean ACC", r.mean.acc, 0.6, TOL, 0);
    CHECK_NEAR("std ACC", r.std.acc, 0.0, TOL, 0);
    CHECK_NEAR("mean BWT", r.mean.bwt, -0.3, TOL, 0);
    CHECK_NEAR("std BWT", r.std.bwt, sqrt(0.08), 1e-12, 0);
    CHECK_NEAR("mean F", r.mean.forgetting, 0.3, TOL, 0);
    CHECK_NEAR("std F", r.std.forgetting, sqrt(0.08), 1e-12, 0);
    CHECK_NEAR("R00 mean", r.acc_mean[0], 0.7, TOL, 0);
    CHECK_NEAR("R00 std", r.acc_std[0], sqrt(0.02), 1e-12, 0);
    CHECK(isnan(r.acc_mean[1]) && isnan(r.acc_std[1]), "R01 not measured: NaN");
    CHECK(r.final_acc[0] == 0.3 && r.final_acc[1] == 0.9 && r.final_acc[2] == 0.5 &&
              r.final_acc[3] == 0.7,
          "final_acc = last rows");
    CHECK_NEAR("final mean 0", r.final_mean[0], 0.4, TOL, 0);
    CHECK_NEAR("final mean 1", r.final_mean[1], 0.8, TOL, 0);
    CHECK_NEAR("final std 1", r.final_std[1], sqrt(0.02), 1e-12, 0);
    CHECK(isnan(r.alone_mean[0]), "alone not measured: NaN mean");
    CHECK(!tu_near(r.mean.bwt, -0.25, 1e-6, 0), "a wrong BWT mean would be detected");
    mcl_cl_result_free(&r);
    CHECK(r.acc == NULL && r.n_tasks == 0, "free zeroes");
    mcl_cl_result_free(&r); /* twice is fine */
    mcl_cl_result_free(NULL);
}

/* The 95 % interval and the three-word rule (metrics.h): t quantiles against published values,
 * one interval by hand, the verdicts on both sides of a threshold, no verdict from one run,
 * and a paired comparison that separates two models whose unpaired intervals overlap. */
static void test_intervals_and_verdicts(void)
{
    /* t_{0.975}: df 1 12.7062, df 4 2.7764, df 9 2.2622, df 40 2.0211 (anchor), df 35 2.0301
     * (tables: 2.030108; the 1/df interpolation is within 1e-4), df 1e6 -> 1.96 */
    CHECK_NEAR("t975 df1", mcl_t975(1), 12.706205, 1e-6, 0);
    CHECK_NEAR("t975 df4", mcl_t975(4), 2.776445, 1e-6, 0);
    CHECK_NEAR("t975 df9", mcl_t975(9), 2.262157, 1e-6, 0);
    CHECK_NEAR("t975 df40", mcl_t975(40), 2.021075, 1e-6, 0);
    CHECK_NEAR("t975 df35", mcl_t975(35), 2.030108, 1e-4, 0);
    CHECK_NEAR("t975 df1e6", mcl_t975(1000000), 1.959964, 1e-4, 0);
    CHECK(isnan(mcl_t975(0)), "t975 df 0 is NaN");
    /* x = 1..5: mean 3, s = sqrt(10/4) = 1.581139, half = 2.776445 · 1.581139 / sqrt(5)
     * = 2.776445 · 0.707107 = 1.963243 */
    const double x[5] = {1, 2, 3, 4, 5};
    double m, h;
    int k;
    mcl_ci95(x, 5, 1, &m, &h, &k);
    CHECK_NEAR("ci mean", m, 3.0, TOL, 0);
    CHECK_NEAR("ci half", h, 1.963243, 1e-6, 0);
    CHECK(k == 5, "ci used 5 values");
    /* the interval [1.036757, 4.963243]: 1.0 met, 1.1 and 4.9 inconclusive, 5.0 not met */
    CHECK(mcl_target_verdict(m, h, 1.0, 1) == MCL_VERDICT_MET, ">= 1.0 met");
    CHECK(mcl_target_verdict(m, h, 1.1, 1) == MCL_VERDICT_INCONCLUSIVE, ">= 1.1 inconclusive");
    CHECK(mcl_target_verdict(m, h, 4.9, 1) == MCL_VERDICT_INCONCLUSIVE, ">= 4.9 inconclusive");
    CHECK(mcl_target_verdict(m, h, 5.0, 1) == MCL_VERDICT_NOT_MET, ">= 5.0 not met");
    CHECK(mcl_target_verdict(m, h, 5.0, 0) == MCL_VERDICT_MET, "<= 5.0 met");
    CHECK(mcl_target_verdict(m, h, 1.0, 0) == MCL_VERDICT_NOT_MET, "<= 1.0 not met");
    /* deliberately wrong: a normal quantile (1.96 · 0.707107 = 1.385929) would call ">= 1.5"
     * met (lower end 1.614); Student's t must leave it inconclusive */
    CHECK(mcl_target_verdict(m, h, 1.5, 1) == MCL_VERDICT_INCONCLUSIVE, "t, not the normal quantile");
    CHECK(mcl_target_verdict(m, 1.385929, 1.5, 1) == MCL_VERDICT_MET, "the normal interval would say met");
    /* one run: no interval, never met (the "+- 0.0 / met" of a single run) */
    mcl_ci95(x, 1, 1, &m, &h, &k);
    CHECK(m == 1.0 && isnan(h) && k == 1, "one value: mean, no interval");
    CHECK(mcl_target_verdict(m, h, 0.5, 1) == MCL_VERDICT_INCONCLUSIVE, "one run is inconclusive");
    /* NaN values are left out: {1, NaN, 3} -> mean 2, s = sqrt(2), half = 12.706205 · 1 */
    const double xn[3] = {1, NAN, 3};
    mcl_ci95(xn, 3, 1, &m, &h, &k);
    CHECK(k == 2, "NaN skipped");
    CHECK_NEAR("NaN-skipping half", h, 12.706205, 1e-6, 0);
    /* paired: y = x − (0.010, 0.012, 0.009, 0.011, 0.010) per run; the runs vary by ±0.035,
     * so the unpaired intervals overlap, but the differences are 0.0104 ± 0.0015:
     * d mean = 0.052 / 5 = 0.0104, s = sqrt(((-.0004)²+.0016²+(-.0014)²+.0006²+(-.0004)²)/4)
     *       = sqrt(5.2e-6 / 4) = 0.0011402, half = 2.776445 · 0.0011402 / 2.236068 = 0.0014157 */
    const double px[5] = {0.80, 0.82, 0.78, 0.85, 0.81};
    const double py[5] = {0.79, 0.808, 0.771, 0.839, 0.80};
    double d, dh, mx, hx, my, hy;
    mcl_ci95(px, 5, 1, &mx, &hx, NULL);
    mcl_ci95(py, 5, 1, &my, &hy, NULL);
    CHECK(mx - hx < my + hy, "the unpaired intervals overlap");
    CHECK(mcl_paired_verdict(px, py, 5, 0.0, &d, &dh) == MCL_VERDICT_FIRST, "paired: x larger");
    CHECK_NEAR("paired diff", d, 0.0104, 1e-9, 0);
    CHECK_NEAR("paired half", dh, 0.0014157, 1e-6, 0);
    CHECK(mcl_paired_verdict(py, px, 5, 0.0, NULL, NULL) == MCL_VERDICT_SECOND, "paired: swapped");
    /* with a margin: "x beats y by >= 0.02" is clearly not the case (upper end 0.0118) */
    CHECK(mcl_paired_verdict(px, py, 5, 0.02, NULL, NULL) == MCL_VERDICT_SECOND, "margin not reached");
    /* a tie: differences 0.02, -0.01, 0.015, -0.02, 0 (mean 0.001) */
    const double ty[5] = {0.78, 0.83, 0.765, 0.87, 0.81};
    CHECK(mcl_paired_verdict(px, ty, 5, 0.0, &d, &dh) == MCL_VERDICT_TIE, "paired tie");
    CHECK(d - dh < 0 && d + dh > 0, "the tie's interval holds 0");
    CHECK(mcl_paired_verdict(px, ty, 1, 0.0, NULL, NULL) == MCL_VERDICT_INCONCLUSIVE, "one run: no paired verdict");
    CHECK(strcmp(mcl_verdict_name(MCL_VERDICT_INCONCLUSIVE), "inconclusive") == 0 &&
              strcmp(mcl_verdict_name(MCL_VERDICT_NOT_MET), "not met") == 0 &&
              strcmp(mcl_verdict_name(MCL_VERDICT_TIE), "tie") == 0,
          "verdict names");
}

int main(void)
{
    tu_begin("test-metrics", SEED);
    test_t3_forgetting_differs_from_bwt();
    test_t3_forgetting();
    test_t4();
    test_t1_and_nan();
    test_mean_std();
    test_result();
    test_intervals_and_verdicts();
    return tu_summary();
}
