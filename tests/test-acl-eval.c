/* test-acl-eval.c — the evaluation layer of `metacl eval acl` (acl_eval.h, baseline.h) on a
 * synthetic, easily separable dataset (class c = a bright 7×7 square at a class-specific
 * position of a noisy 32×32 image) and a tiny ACL model (hidden 16, 2 heads, 1 layer, 4 conv
 * channels, dropout 0.1 so that a forgotten eval mode would show):
 *   - argmax counting over the first n_outputs logits;
 *   - task sequences: shapes, ranges, NaN above the diagonal, alone[0] = R00, same seed ->
 *     identical results, independence of the batch and the query chunk, and equality with an
 *     independent composition of mcl_acl_forward / mcl_acl_query calls;
 *   - a known answer: with a zeroed head and a chosen bias, every prediction is known, so the
 *     accuracies are exact (0.5 / 0) and the "first n_outputs logits" rule is visible;
 *   - Split-X (domain and class): NaN above the diagonal, last row = per-task final accuracy,
 *     final-only mode, context/query chunking;
 *   - evaluation leaves the training flag, the parameters, the random stream, the grad mode
 *     and the temporaries of the context as they were;
 *   - fast-weight traces against direct model calls;
 *   - baselines: Adam learns each task (> 90% right after it), SGD and Adam forget task 0 in
 *     class-incremental 2-task Split, determinism, the task-sequence protocol, the grid search;
 *   - bad inputs give clear errors;
 *   - the same evaluations on OpenCL agree with the reference (skipped without a device). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acl.h"
#include "acl_eval.h"
#include "baseline.h"
#include "metrics.h"
#include "testutil.h"

#define SEED 20260217ULL
#define NCLASS 10

/* ------------------------------------------------------------------ synthetic data */

/* NCLASS classes, per_class images each (classes interleaved). Class c: a 7×7 square of
 * value 200..255 at row 1 + 10·(c / 4), column 8·(c % 4) on a background of 0..40. */
static mcl_dataset *make_ds(const char *name, int per_class, uint32_t salt)
{
    const tu_blocks b = {NCLASS, 12345u + salt, 1664525u, 1013904223u, 8, 40, 200, 56, 1, 10, 0, 8, 7, 7};
    return tu_blocks_dataset(name, per_class, &b);
}

static mcl_acl *tiny_model(mcl_ctx *ctx, int n_way)
{
    mcl_acl_config c;
    mcl_acl_config_default(&c);
    c.n_way = n_way;
    c.hidden = 16;
    c.heads = 2;
    c.layers = 1;
    c.ff_mult = 2;
    c.dropout = 0.1f;
    c.conv_channels = 4;
    c.seed = SEED;
    mcl_acl *m = mcl_acl_create(ctx, &c);
    CHECK(m != NULL, "tiny model: %s", mcl_ctx_error(ctx));
    return m;
}

/* An untrained model's argmax hardly depends on the query image (the state dominates), which
 * would make comparisons of results weak. Shift head bias 1 so that, from W0, half of the
 * images of ds fall on each side (midpoint of the two central logit differences: no ties). */
static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}
static void calibrate_head(mcl_acl *m, mcl_ctx *ctx, const mcl_dataset *ds)
{
    const int64_t n = ds->n, nw = m->cfg.n_way;
    int64_t *idx = malloc((size_t)n * sizeof *idx);
    for (int64_t i = 0; i < n; i++) idx[i] = i;
    mcl_acl_set_training(m, 0);
    mcl_no_grad_begin(ctx);
    mcl_tensor *img = mcl_tensor_new(ctx, n, 1, 32, 32), *lg = NULL;
    mcl_batch_rows(img, NULL, ds, idx, NULL, n, 1);
    mcl_acl_query(m, ctx, NULL, img, 1, n, &lg);
    float *l = tu_read(lg), *d = malloc((size_t)n * sizeof *d);
    for (int64_t i = 0; i < n; i++) d[i] = l[i * nw + 1] - l[i * nw];
    qsort(d, (size_t)n, sizeof *d, cmp_float);
    float *b = tu_read(m->head_b);
    b[1] -= 0.5f * (d[n / 2 - 1] + d[n / 2]);
    mcl_tensor_write(m->head_b, b, nw);
    mcl_no_grad_end(ctx);
    mcl_tensor_free(img);
    mcl_ctx_reset(ctx);
    mcl_acl_set_training(m, 1);
    free(idx);
    free(l);
    free(d);
    free(b);
}

static int same_double(double a, double b) { return (isnan(a) && isnan(b)) || a == b; }

static int same_array(const double *a, const double *b, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        if (!same_double(a[i], b[i])) return 0;
    return 1;
}

static int same_result(const mcl_cl_result *a, const mcl_cl_result *b)
{
    const int64_t T = a->n_tasks, R = a->n_runs;
    return a->n_tasks == b->n_tasks && a->n_runs == b->n_runs &&
           same_array(a->acc, b->acc, R * T * T) && same_array(a->alone, b->alone, R * T) &&
           same_double(a->mean.acc, b->mean.acc) && same_double(a->std.bwt, b->std.bwt);
}

/* acc in [0,1] for j <= i (rows measured), NaN above the diagonal. */
static void check_shape(const char *what, const mcl_cl_result *r, int T, int R, int final_only)
{
    CHECK(r->n_tasks == T && r->n_runs == R && r->acc, "%s: T %d R %d", what, r->n_tasks,
          r->n_runs);
    if (!r->acc) return;
    int ok_range = 1, ok_nan = 1, ok_final = 1;
    for (int k = 0; k < R; k++)
        for (int i = 0; i < T; i++)
            for (int j = 0; j < T; j++) {
                double v = r->acc[((int64_t)k * T + i) * T + j];
                int measured = j <= i && (!final_only || i == T - 1);
                if (measured) ok_range &= v >= 0.0 && v <= 1.0;
                else ok_nan &= isnan(v) ? 1 : 0;
                if (i == T - 1) ok_final &= same_double(v, r->final_acc[(int64_t)k * T + j]);
            }
    CHECK(ok_range, "%s: measured accuracies in [0,1]", what);
    CHECK(ok_nan, "%s: unmeasured cells (j > i%s) NaN", what, final_only ? ", rows < T-1" : "");
    CHECK(ok_final, "%s: last row == per-task final accuracy", what);
    CHECK(r->mean.acc >= 0.0 && r->mean.acc <= 1.0, "%s: mean ACC %g", what, r->mean.acc);
}

/* ------------------------------------------------------------------ tests */

static void test_count_hits(void)
{
    /* rows: argmax over first 2 of 4 logits: row0 {1,3 | 9,0} -> 1; row1 {2,2 | 0,0} -> 0
     * (tie: lowest); row2 {-1,-2 | 5,5} -> 0. labels {1, 0, 1}: hits 2. Over all 4 outputs:
     * row0 -> 2, row1 -> 0, row2 -> 2: hits with labels {2, 0, 2} = 3, with {1, 0, 1} = 1. */
    const float lg[12] = {1, 3, 9, 0, 2, 2, 0, 0, -1, -2, 5, 5};
    const int32_t lab[3] = {1, 0, 1}, lab4[3] = {2, 0, 2};
    CHECK(mcl_eval_count_hits(lg, 3, 4, 2, lab) == 2, "count_hits over 2 outputs");
    CHECK(mcl_eval_count_hits(lg, 3, 4, 4, lab4) == 3, "count_hits over 4 outputs");
    CHECK(mcl_eval_count_hits(lg, 3, 4, 4, lab) == 1, "count_hits over 4 outputs, labels {1,0,1}");
    CHECK(mcl_eval_count_hits(lg, 3, 4, 5, lab) == 0, "n_outputs > n_logits: 0");
}

static mcl_seq_eval_cfg seq_cfg(void)
{
    mcl_seq_eval_cfg c;
    memset(&c, 0, sizeof c);
    c.n_way = 2;
    c.k_shot = 3;
    c.n_tasks = 3;
    c.n_runs = 2;
    c.n_episodes = 5;
    c.batch = 2;
    c.normalize = 1;
    c.seed = SEED;
    return c;
}

static void test_seq(mcl_ctx *ctx, const mcl_dataset *ds)
{
    mcl_acl *m = tiny_model(ctx, 2);
    if (!m) return;
    calibrate_head(m, ctx, ds);
    mcl_class_pool pools[3] = {{ds, NULL, 0}, {ds, NULL, 0}, {ds, NULL, 0}};
    mcl_seq_eval_cfg c = seq_cfg();
    mcl_cl_result r1, r2, r3;
    mcl_status st = mcl_acl_eval_seq(m, ctx, pools, &c, &r1);
    CHECK(st == MCL_OK, "eval_seq: %s", mcl_ctx_error(ctx));
    if (st != MCL_OK) {
        mcl_acl_free(m);
        return;
    }
    check_shape("seq", &r1, 3, 2, 0);
    int alone_ok = 1;
    for (int k = 0; k < 2; k++) {
        alone_ok &= r1.alone[k * 3] == r1.acc[k * 9];
        for (int i = 0; i < 3; i++) alone_ok &= r1.alone[k * 3 + i] >= 0 && r1.alone[k * 3 + i] <= 1;
    }
    CHECK(alone_ok, "alone in [0,1], alone[0] == R00");
    /* 5 episodes × 2 queries per cell: accuracies are multiples of 1/10 */
    double v = r1.acc[3] * 10.0;
    CHECK(fabs(v - round(v)) < 1e-9, "R10 = %g is a multiple of 1/10", r1.acc[3]);

    /* the same seed gives identical results; batch and query chunk do not matter */
    st = mcl_acl_eval_seq(m, ctx, pools, &c, &r2);
    CHECK(st == MCL_OK && same_result(&r1, &r2), "same seed -> identical results");
    mcl_seq_eval_cfg c3 = c;
    c3.batch = 5;
    c3.query_chunk = 3; /* 5 sequences × 2 queries = 10 rows: calls of 1 sequence */
    st = mcl_acl_eval_seq(m, ctx, pools, &c3, &r3);
    CHECK(st == MCL_OK && same_result(&r1, &r3), "batch 5 / query chunk 3 -> same results");
    mcl_cl_result_free(&r3);
    c3.batch = 1;
    c3.query_chunk = 1; /* one query per call: row views of the state, query slices */
    st = mcl_acl_eval_seq(m, ctx, pools, &c3, &r3);
    CHECK(st == MCL_OK && same_result(&r1, &r3), "batch 1 / query chunk 1 -> same results");
    mcl_cl_result_free(&r3);
    /* another seed draws other episodes (some cell differs) */
    c3 = c;
    c3.seed = SEED + 1;
    st = mcl_acl_eval_seq(m, ctx, pools, &c3, &r3);
    CHECK(st == MCL_OK && !same_result(&r1, &r3), "another seed -> other results");
    mcl_cl_result_free(&r3);
    /* skip_alone leaves alone NaN */
    c3 = c;
    c3.skip_alone = 1;
    st = mcl_acl_eval_seq(m, ctx, pools, &c3, &r3);
    CHECK(st == MCL_OK && isnan(r3.alone[0]) && isnan(r3.alone_mean[2]) &&
              same_array(r1.acc, r3.acc, 18),
          "skip_alone: alone NaN, R unchanged");
    mcl_cl_result_free(&r3);

    mcl_cl_result_free(&r1);
    mcl_cl_result_free(&r2);
    mcl_acl_free(m);
}

/* argmax hits of logits [rows, nw] (first n_out) against float labels */
static int64_t hits_of(mcl_tensor *logits, mcl_tensor *labels, int n_out)
{
    float *lg = tu_read(logits), *lb = tu_read(labels);
    int64_t rows = mcl_tensor_numel(labels), nw = mcl_tensor_numel(logits) / rows, h = 0;
    int32_t *li = malloc((size_t)rows * sizeof *li);
    for (int64_t r = 0; r < rows; r++) li[r] = (int32_t)lb[r];
    h = mcl_eval_count_hits(lg, rows, nw, n_out, li);
    free(lg);
    free(lb);
    free(li);
    return h;
}

/* The eval result equals an independent composition of model calls: 3 episodes in ONE batch,
 * context calls from the carried (never detached) state, mcl_acl_query on the whole batch. */
static void test_seq_manual(mcl_ctx *ctx, const mcl_dataset *ds)
{
    mcl_acl *m = tiny_model(ctx, 2);
    if (!m) return;
    calibrate_head(m, ctx, ds);
    mcl_class_pool pools[2] = {{ds, NULL, 0}, {ds, NULL, 0}};
    mcl_seq_eval_cfg c = seq_cfg();
    c.n_tasks = 2;
    c.n_runs = 1;
    c.n_episodes = 3;
    c.batch = 2;       /* eval: batches of 2 + 1 */
    c.query_chunk = 3; /* and chunked queries */
    mcl_cl_result r;
    mcl_status st = mcl_acl_eval_seq(m, ctx, pools, &c, &r);
    CHECK(st == MCL_OK, "eval_seq: %s", mcl_ctx_error(ctx));
    if (st != MCL_OK) {
        mcl_acl_free(m);
        return;
    }

    mcl_episode_cfg ec;
    memset(&ec, 0, sizeof ec);
    ec.n_way = 2, ec.k_shot = 3, ec.n_query = 1, ec.n_tasks = 2;
    mcl_episode *eps[3];
    mcl_rng rng;
    mcl_rng_init(&rng, SEED, 0); /* run 0 */
    for (int k = 0; k < 3; k++) {
        mcl_episode_create(&ec, &eps[k]);
        mcl_episode_sample(eps[k], pools, &rng, NULL, 0);
    }
    mcl_acl_set_training(m, 0);
    mcl_no_grad_begin(ctx);
    mcl_acl_task_data td[2];
    mcl_acl_task_data_from_episodes(ctx, (const mcl_episode *const *)eps, 3, 0, 1, MCL_IMG, &td[0]);
    mcl_acl_task_data_from_episodes(ctx, (const mcl_episode *const *)eps, 3, 1, 1, MCL_IMG, &td[1]);
    mcl_tensor *lg = NULL;
    mcl_acl_state *sa = NULL, *sb = NULL;
    int64_t h00 = -1, h10 = -1, h11 = -1, alone1 = -1;
    st = mcl_acl_forward(m, ctx, td[0].ctx_img, td[0].ctx_lab, 3, 6, NULL, &lg, &sa);
    if (st == MCL_OK && mcl_acl_query(m, ctx, sa, td[0].query_img, 3, 2, &lg) == MCL_OK)
        h00 = hits_of(lg, td[0].query_lab, 2);
    if (st == MCL_OK)
        st = mcl_acl_forward(m, ctx, td[1].ctx_img, td[1].ctx_lab, 3, 6, sa, &lg, &sb);
    if (st == MCL_OK && mcl_acl_query(m, ctx, sb, td[1].query_img, 3, 2, &lg) == MCL_OK)
        h11 = hits_of(lg, td[1].query_lab, 2);
    if (st == MCL_OK && mcl_acl_query(m, ctx, sb, td[0].query_img, 3, 2, &lg) == MCL_OK)
        h10 = hits_of(lg, td[0].query_lab, 2);
    mcl_acl_state_free(sb);
    sb = NULL;
    if (st == MCL_OK)
        st = mcl_acl_forward(m, ctx, td[1].ctx_img, td[1].ctx_lab, 3, 6, NULL, &lg, &sb);
    if (st == MCL_OK && mcl_acl_query(m, ctx, sb, td[1].query_img, 3, 2, &lg) == MCL_OK)
        alone1 = hits_of(lg, td[1].query_lab, 2);
    CHECK(st == MCL_OK, "manual composition: %s", mcl_ctx_error(ctx));
    mcl_acl_state_free(sa);
    mcl_acl_state_free(sb);
    mcl_no_grad_end(ctx);
    mcl_acl_task_data_free(&td[0]);
    mcl_acl_task_data_free(&td[1]);
    mcl_ctx_reset(ctx);
    /* 3 episodes × 2 queries = 6 per cell */
    CHECK(r.acc[0] == (double)h00 / 6.0 && r.acc[2] == (double)h10 / 6.0 &&
              r.acc[3] == (double)h11 / 6.0 && r.alone[1] == (double)alone1 / 6.0,
          "eval == manual composition: R00 %g/%g R10 %g/%g R11 %g/%g alone1 %g/%g", r.acc[0],
          (double)h00 / 6.0, r.acc[2], (double)h10 / 6.0, r.acc[3], (double)h11 / 6.0,
          r.alone[1], (double)alone1 / 6.0);
    for (int k = 0; k < 3; k++) mcl_episode_free(eps[k]);
    mcl_cl_result_free(&r);
    mcl_acl_free(m);
}

/* Zero head weights and a chosen head bias: every prediction is known in advance. */
static void set_head(mcl_acl *m, const float *bias)
{
    mcl_tensor_fill(m->head_w, 0.0f);
    mcl_tensor_write(m->head_b, bias, m->cfg.n_way);
}

static void test_known_answer(mcl_ctx *ctx, const mcl_dataset *train, const mcl_dataset *test)
{
    mcl_acl *m = tiny_model(ctx, 5);
    if (!m) return;
    /* bias {1, 2, -5, 9, -5}: argmax over outputs 0..1 = 1, over all 5 = 3 */
    const float bias[5] = {1, 2, -5, 9, -5};
    set_head(m, bias);

    /* 2-way tasks, one query per class: label 1 is right for exactly half the queries */
    mcl_class_pool pools[2] = {{train, NULL, 0}, {train, NULL, 0}};
    mcl_seq_eval_cfg c = seq_cfg();
    c.n_tasks = 2;
    c.n_runs = 1;
    c.n_episodes = 3;
    mcl_cl_result r;
    mcl_status st = mcl_acl_eval_seq(m, ctx, pools, &c, &r);
    CHECK(st == MCL_OK && r.acc[0] == 0.5 && r.acc[2] == 0.5 && r.acc[3] == 0.5 &&
              r.alone[1] == 0.5,
          "known answer, seq (2 of 5 outputs): R00 %g R10 %g R11 %g (want 0.5) %s",
          st == MCL_OK ? r.acc[0] : -1, st == MCL_OK ? r.acc[2] : -1,
          st == MCL_OK ? r.acc[3] : -1, mcl_ctx_error(ctx));
    mcl_cl_result_free(&r);
    /* n_outputs = 5: every prediction is 3, never a 2-way label */
    c.n_outputs = 5;
    st = mcl_acl_eval_seq(m, ctx, pools, &c, &r);
    CHECK(st == MCL_OK && r.acc[0] == 0.0 && r.mean.acc == 0.0, "known answer, all 5 outputs: 0");
    mcl_cl_result_free(&r);

    /* Split-X domain, 2 tasks: test sets balanced (10 per class) -> every cell 0.5 */
    mcl_splitx_eval_cfg sc;
    memset(&sc, 0, sizeof sc);
    sc.split.n_tasks = 2;
    sc.split.classes_per_task = 2;
    sc.split.k_shot = 3;
    sc.split.mode = MCL_SPLITX_DOMAIN;
    sc.n_runs = 1;
    sc.normalize = 1;
    st = mcl_acl_eval_splitx(m, ctx, train, test, &sc, &r);
    CHECK(st == MCL_OK && r.acc[0] == 0.5 && r.acc[2] == 0.5 && r.acc[3] == 0.5,
          "known answer, Split-X domain: %s", mcl_ctx_error(ctx));
    mcl_cl_result_free(&r);
    /* class-incremental, 2 tasks × 2 classes (labels 0..3), default = all 5 outputs: always 3
     * -> task 0 (labels 0, 1): 0; task 1 (labels 2, 3): half of its test images: 0.5 */
    sc.split.mode = MCL_SPLITX_CLASS;
    st = mcl_acl_eval_splitx(m, ctx, train, test, &sc, &r);
    CHECK(st == MCL_OK && r.acc[0] == 0.0 && r.acc[2] == 0.0 && r.acc[3] == 0.5,
          "known answer, Split-X class: R00 %g R10 %g R11 %g",
          st == MCL_OK ? r.acc[0] : -1, st == MCL_OK ? r.acc[2] : -1,
          st == MCL_OK ? r.acc[3] : -1);
    /* ACC (0 + 0.5)/2 = 0.25, BWT 0 − 0 = 0, F 0 */
    CHECK(st == MCL_OK && r.mean.acc == 0.25 && r.mean.bwt == 0.0, "known answer metrics");
    mcl_cl_result_free(&r);
    mcl_acl_free(m);
}

static mcl_splitx_eval_cfg splitx_cfg(mcl_splitx_mode mode, int T)
{
    mcl_splitx_eval_cfg sc;
    memset(&sc, 0, sizeof sc);
    sc.split.n_tasks = T;
    sc.split.classes_per_task = 2;
    sc.split.k_shot = 4;
    sc.split.mode = mode;
    sc.n_runs = 2;
    sc.normalize = 1;
    return sc;
}

static void test_splitx(mcl_ctx *ctx, const mcl_dataset *train, const mcl_dataset *test)
{
    mcl_acl *m = tiny_model(ctx, 2);
    if (!m) return;
    calibrate_head(m, ctx, test);
    mcl_splitx_eval_cfg sc = splitx_cfg(MCL_SPLITX_DOMAIN, 3);
    mcl_cl_result r, r2;
    mcl_status st = mcl_acl_eval_splitx(m, ctx, train, test, &sc, &r);
    CHECK(st == MCL_OK, "eval_splitx domain: %s", mcl_ctx_error(ctx));
    if (st != MCL_OK) {
        mcl_acl_free(m);
        return;
    }
    check_shape("splitx domain", &r, 3, 2, 0);
    CHECK(isnan(r.alone[0]) && isnan(r.alone_mean[0]), "Split-X: alone not measured");
    CHECK(!isnan(r.mean.bwt) && !isnan(r.mean.forgetting), "full matrix: BWT, F defined");
    /* 20 test images per task: multiples of 1/20 */
    double v = r.acc[8] * 20.0;
    CHECK(fabs(v - round(v)) < 1e-9, "R22 %g is a multiple of 1/20", r.acc[8]);
    /* repeatable; chunked context (3 steps per call) and queries (7 per call) agree */
    mcl_splitx_eval_cfg s2 = sc;
    s2.ctx_chunk = 3;
    s2.query_chunk = 7;
    st = mcl_acl_eval_splitx(m, ctx, train, test, &s2, &r2);
    CHECK(st == MCL_OK && same_result(&r, &r2), "ctx chunk 3 / query chunk 7 -> same results");
    mcl_cl_result_free(&r2);
    /* final_only: the same last row, other rows NaN, BWT and F NaN */
    s2 = sc;
    s2.final_only = 1;
    st = mcl_acl_eval_splitx(m, ctx, train, test, &s2, &r2);
    if (st == MCL_OK) check_shape("splitx final only", &r2, 3, 2, 1);
    CHECK(st == MCL_OK && same_array(r.final_acc, r2.final_acc, 6) &&
              r.mean.acc == r2.mean.acc && isnan(r2.mean.bwt) && isnan(r2.run[0].forgetting),
          "final_only: same last row and ACC, BWT/F NaN");
    mcl_cl_result_free(&r2);
    /* other runs use other training images */
    s2 = sc;
    s2.first_run = 2;
    st = mcl_acl_eval_splitx(m, ctx, train, test, &s2, &r2);
    CHECK(st == MCL_OK && !same_result(&r, &r2), "first_run 2 -> other results");
    mcl_cl_result_free(&r2);
    mcl_cl_result_free(&r);
    mcl_acl_free(m);

    /* class-incremental: a 10-way model, 5 tasks (paper) */
    m = tiny_model(ctx, 10);
    if (!m) return;
    sc = splitx_cfg(MCL_SPLITX_CLASS, 5);
    sc.n_runs = 1;
    sc.split.k_shot = 2;
    st = mcl_acl_eval_splitx(m, ctx, train, test, &sc, &r);
    CHECK(st == MCL_OK, "eval_splitx class: %s", mcl_ctx_error(ctx));
    if (st == MCL_OK) check_shape("splitx class", &r, 5, 1, 0);
    mcl_cl_result_free(&r);
    mcl_acl_free(m);
}

/* Evaluation changes nothing in the model or the context. */
static void test_unchanged(mcl_ctx *ctx, const mcl_dataset *train, const mcl_dataset *test)
{
    mcl_acl *m = tiny_model(ctx, 2);
    if (!m) return;
    mcl_params *P = mcl_acl_params(m);
    const int np = mcl_params_count(P);
    const int64_t total = mcl_params_numel(P);
    float *before = malloc((size_t)total * sizeof *before), *after = malloc((size_t)total * sizeof *after);
    int64_t o = 0;
    for (int i = 0; i < np; i++) {
        mcl_tensor *t = mcl_params_get(P, i);
        mcl_tensor_read(t, before + o, mcl_tensor_numel(t));
        o += mcl_tensor_numel(t);
    }
    mcl_class_pool pools[3] = {{train, NULL, 0}, {train, NULL, 0}, {train, NULL, 0}};
    mcl_seq_eval_cfg c = seq_cfg();
    c.n_runs = 1;
    c.n_episodes = 2;
    mcl_splitx_eval_cfg sc = splitx_cfg(MCL_SPLITX_DOMAIN, 2);
    sc.n_runs = 1;
    const uint64_t stream0 = mcl_ctx_stream(ctx);
    for (int flag = 1; flag >= 0; flag--) {
        mcl_acl_set_training(m, flag);
        mcl_cl_result r1, r2;
        mcl_status s1 = mcl_acl_eval_seq(m, ctx, pools, &c, &r1);
        CHECK(s1 == MCL_OK && m->training == flag, "seq eval restores training flag %d", flag);
        mcl_status s2 = mcl_acl_eval_splitx(m, ctx, train, test, &sc, &r2);
        CHECK(s2 == MCL_OK && m->training == flag, "splitx eval restores training flag %d", flag);
        mcl_cl_result_free(&r1);
        mcl_cl_result_free(&r2);
    }
    mcl_acl_set_training(m, 1);
    const int64_t at[2] = {0, 5};
    mcl_acl_fw_trace tr;
    int64_t idx[5] = {0, 1, 2, 3, 4};
    int32_t lab[5] = {0, 1, 0, 1, 0};
    mcl_status s3 = mcl_acl_record_fast_weights(m, ctx, train, idx, lab, 5, at, 2, 0, 1, 1, &tr);
    CHECK(s3 == MCL_OK && m->training == 1, "fast weights restore the training flag");
    mcl_acl_fw_trace_free(&tr);
    o = 0;
    for (int i = 0; i < np; i++) {
        mcl_tensor *t = mcl_params_get(P, i);
        mcl_tensor_read(t, after + o, mcl_tensor_numel(t));
        o += mcl_tensor_numel(t);
    }
    CHECK(memcmp(before, after, (size_t)total * sizeof *before) == 0,
          "parameters unchanged (%lld values)", (long long)total);
    CHECK(mcl_ctx_stream(ctx) == stream0, "no random stream consumed (no dropout in eval)");
    CHECK(mcl_grad_enabled(ctx), "gradients enabled again");
    CHECK(mcl_ctx_num_temps(ctx) == 0, "no temporaries left (%zu)", mcl_ctx_num_temps(ctx));
    CHECK(mcl_tape_size(ctx) == 0, "nothing on the tape");
    free(before);
    free(after);
    mcl_acl_free(m);
}

/* Fast-weight trace vs direct calls: at 0 the parameters, at t the state after t steps. */
static void test_fast_weights(mcl_ctx *ctx, const mcl_dataset *ds)
{
    mcl_acl *m = tiny_model(ctx, 2);
    if (!m) return;
    const int L = 9, D = m->head_dim, H = m->cfg.heads, head = 1;
    int64_t idx[9];
    int32_t lab[9];
    for (int t = 0; t < L; t++) idx[t] = t * 3, lab[t] = ds->labels[t * 3] % 2;
    const int64_t at[3] = {0, 4, 9};
    mcl_acl_fw_trace tr;
    mcl_status st = mcl_acl_record_fast_weights(m, ctx, ds, idx, lab, L, at, 3, 0, head, 1, &tr);
    CHECK(st == MCL_OK && tr.n == 3 && tr.D == D && tr.step[1] == 4,
          "record_fast_weights: %s", mcl_ctx_error(ctx));
    if (st != MCL_OK) {
        mcl_acl_free(m);
        return;
    }
    /* recording 0 = the parameters of head 1 */
    float *wq = tu_read(m->layer[0].Wq), *wb = tu_read(m->layer[0].wb);
    CHECK(memcmp(tr.Wq, wq + head * D * D, (size_t)(D * D) * sizeof(float)) == 0 &&
              memcmp(tr.wb, wb + head * D * 4, (size_t)(D * 4) * sizeof(float)) == 0,
          "step 0 = W0");
    free(wq);
    free(wb);
    /* recordings 1 and 2 = the state after 4 and 9 steps of single calls */
    mcl_acl_set_training(m, 0);
    mcl_no_grad_begin(ctx);
    for (int k = 1; k <= 2; k++) {
        const int64_t n = at[k];
        mcl_tensor *img = mcl_tensor_new(ctx, n, 1, 32, 32), *lt = mcl_tensor_new(ctx, n, 0, 0, 0);
        mcl_batch_rows(img, lt, ds, idx, lab, n, 1);
        mcl_tensor *lg = NULL;
        mcl_acl_state *s = NULL;
        st = mcl_acl_forward(m, ctx, img, lt, 1, n, NULL, &lg, &s);
        if (st == MCL_OK) {
            float *wy = tu_read(s->t[0]), *wk = tu_read(s->t[2]);
            int64_t bad = tu_first_mismatch_f(tr.Wy + k * D * D, wy + head * D * D, D * D, 1e-6, 1e-5);
            int64_t bad2 = tu_first_mismatch_f(tr.Wk + k * D * D, wk + head * D * D, D * D, 1e-6, 1e-5);
            CHECK(bad < 0 && bad2 < 0, "recording %d (step %lld) = state of one call (Wy %lld Wk %lld)",
                  k, (long long)n, (long long)bad, (long long)bad2);
            /* and it moved away from W0 */
            CHECK(memcmp(tr.Wy + k * D * D, tr.Wy, (size_t)(D * D) * sizeof(float)) != 0,
                  "recording %d differs from W0", k);
            free(wy);
            free(wk);
        }
        mcl_acl_state_free(s);
        mcl_tensor_free(img);
        mcl_tensor_free(lt);
        mcl_ctx_reset(ctx);
    }
    mcl_no_grad_end(ctx);
    (void)H;
    mcl_acl_fw_trace_free(&tr);
    CHECK(tr.Wy == NULL && tr.n == 0, "trace freed");

    /* bad input */
    const int64_t bad_at[2] = {4, 4};
    st = mcl_acl_record_fast_weights(m, ctx, ds, idx, lab, L, bad_at, 2, 0, 0, 1, &tr);
    CHECK(st == MCL_ERR_INVALID && tr.Wy == NULL, "non-increasing steps refused");
    CHECK_ERR("steps", ctx, TU_ST(MCL_ERR_INVALID), "increase strictly");
    mcl_ctx_clear_error(ctx);
    st = mcl_acl_record_fast_weights(m, ctx, ds, idx, lab, L, at, 3, 1, 0, 1, &tr);
    CHECK_ERR("layer out of range", ctx, TU_ST(MCL_ERR_INVALID), "1 layers");
    mcl_ctx_clear_error(ctx);
    mcl_acl_free(m);
}

static void test_bad_inputs(mcl_ctx *ctx, const mcl_dataset *train, const mcl_dataset *test)
{
    mcl_acl *m = tiny_model(ctx, 2);
    if (!m) return;
    mcl_class_pool pools[3] = {{train, NULL, 0}, {train, NULL, 0}, {train, NULL, 0}};
    mcl_seq_eval_cfg c = seq_cfg();
    mcl_cl_result r;

    c.n_way = 3; /* 3-way tasks on a 2-way model */
    mcl_status st = mcl_acl_eval_seq(m, ctx, pools, &c, &r);
    CHECK(st == MCL_ERR_INVALID && r.acc == NULL, "model n_way < n_outputs refused");
    CHECK_ERR("n_way < n_outputs", ctx, TU_ST(MCL_ERR_INVALID), "n_way");
    mcl_ctx_clear_error(ctx);

    c = seq_cfg();
    const int32_t one[1] = {4};
    mcl_class_pool small[3] = {{train, NULL, 0}, {train, one, 1}, {train, NULL, 0}};
    st = mcl_acl_eval_seq(m, ctx, small, &c, &r);
    CHECK(st == MCL_ERR_INVALID && r.acc == NULL, "pool with too few classes refused");
    CHECK_ERR("small pool", ctx, TU_ST(MCL_ERR_INVALID), "pool of task 1 has 1 classes");
    mcl_ctx_clear_error(ctx);

    const int32_t missing[2] = {4, 77};
    small[1].classes = missing;
    small[1].n_classes = 2;
    st = mcl_acl_eval_seq(m, ctx, small, &c, &r);
    CHECK_ERR("class not in dataset", ctx, TU_ST(MCL_ERR_INVALID), "77");
    mcl_ctx_clear_error(ctx);

    c.k_shot = 30; /* classes have 20 images */
    st = mcl_acl_eval_seq(m, ctx, pools, &c, &r);
    CHECK(st != MCL_OK && r.acc == NULL, "K too large refused");
    CHECK_ERR("K too large", ctx, TU_ST(MCL_ERR_INVALID), "episode 0");
    mcl_ctx_clear_error(ctx);

    c = seq_cfg();
    c.n_tasks = 0;
    st = mcl_acl_eval_seq(m, ctx, pools, &c, &r);
    CHECK_ERR("0 tasks", ctx, TU_ST(MCL_ERR_INVALID), "bad config");
    mcl_ctx_clear_error(ctx);
    c = seq_cfg();
    c.n_outputs = 1; /* fewer outputs than 2-way labels */
    st = mcl_acl_eval_seq(m, ctx, pools, &c, &r);
    CHECK_ERR("1 output", ctx, TU_ST(MCL_ERR_INVALID), "cannot hold");
    mcl_ctx_clear_error(ctx);
    st = mcl_acl_eval_seq(m, ctx, NULL, &c, &r);
    CHECK(st == MCL_ERR_NULL, "NULL pools");
    mcl_ctx_clear_error(ctx);

    /* Split-X class-incremental 5 tasks × 2 classes on a 2-way model */
    mcl_splitx_eval_cfg sc = splitx_cfg(MCL_SPLITX_CLASS, 5);
    st = mcl_acl_eval_splitx(m, ctx, train, test, &sc, &r);
    CHECK(st == MCL_ERR_INVALID && r.acc == NULL, "class-incremental on a small model refused");
    CHECK_ERR("splitx class", ctx, TU_ST(MCL_ERR_INVALID), "need 10 outputs");
    mcl_ctx_clear_error(ctx);
    /* domain with n_outputs 3 > model n_way 2 */
    sc = splitx_cfg(MCL_SPLITX_DOMAIN, 2);
    sc.n_outputs = 3;
    st = mcl_acl_eval_splitx(m, ctx, train, test, &sc, &r);
    CHECK_ERR("splitx n_outputs > n_way", ctx, TU_ST(MCL_ERR_INVALID), "n_way");
    mcl_ctx_clear_error(ctx);
    /* too many tasks for the dataset (6 × 2 classes > 10) */
    sc = splitx_cfg(MCL_SPLITX_DOMAIN, 6);
    st = mcl_acl_eval_splitx(m, ctx, train, test, &sc, &r);
    CHECK(st != MCL_OK && r.acc == NULL, "split needing 12 classes refused");
    CHECK_ERR("splitx too many tasks", ctx, TU_ST(MCL_ERR_INVALID), "need 12 classes");
    mcl_ctx_clear_error(ctx);
    CHECK(m->training == 1 && mcl_grad_enabled(ctx), "errors leave the model and ctx as they were");
    mcl_acl_free(m);
}

/* ------------------------------------------------------------------ baselines */

static mcl_baseline_config bl_cfg(mcl_optim_kind k, float lr, int epochs)
{
    mcl_baseline_config b;
    mcl_baseline_config_default(&b);
    b.optim = k;
    b.lr = lr;
    b.epochs = epochs;
    b.batch_size = 8;
    b.conv_channels = 8;
    b.seed = SEED;
    return b;
}

static void test_baseline_splitx(mcl_ctx *ctx, const mcl_dataset *train, const mcl_dataset *test)
{
    /* class-incremental 2-task split (classes 0-3), 10 outputs as in the paper */
    mcl_splitx_eval_cfg sc = splitx_cfg(MCL_SPLITX_CLASS, 2);
    sc.split.k_shot = 10;
    sc.n_runs = 1;
    sc.n_outputs = 10;
    mcl_baseline_config ba = bl_cfg(MCL_OPTIM_ADAM, 3e-3f, 25);
    mcl_cl_result r, r2;
    mcl_status st = mcl_baseline_eval_splitx(ctx, &ba, train, test, &sc, &r);
    CHECK(st == MCL_OK, "baseline Adam splitx: %s", mcl_ctx_error(ctx));
    if (st != MCL_OK) return;
    check_shape("baseline class", &r, 2, 1, 0);
    printf("  Adam class-incremental: R00 %.3f R10 %.3f R11 %.3f  F %.3f\n", r.acc[0], r.acc[2],
           r.acc[3], r.mean.forgetting);
    CHECK(r.acc[0] > 0.9 && r.acc[3] > 0.9, "Adam learns each task: R00 %g, R11 %g > 0.9",
          r.acc[0], r.acc[3]);
    CHECK(r.acc[2] < 0.5 && r.mean.forgetting > 0.4,
          "Adam forgets task 0 (class-incremental): R10 %g < 0.5, F %g > 0.4", r.acc[2],
          r.mean.forgetting);
    mcl_cl_result_free(&r);

    mcl_baseline_config bs = bl_cfg(MCL_OPTIM_SGD, 0.1f, 10);
    st = mcl_baseline_eval_splitx(ctx, &bs, train, test, &sc, &r);
    CHECK(st == MCL_OK, "baseline SGD splitx: %s", mcl_ctx_error(ctx));
    if (st == MCL_OK) {
        printf("  SGD  class-incremental: R00 %.3f R10 %.3f R11 %.3f  F %.3f\n", r.acc[0],
               r.acc[2], r.acc[3], r.mean.forgetting);
        CHECK(r.acc[0] > 0.8 && r.acc[2] < 0.5 && r.mean.forgetting > 0.3,
              "SGD learns task 0 (R00 %g > 0.8) and forgets it (R10 %g < 0.5, F %g > 0.3)",
              r.acc[0], r.acc[2], r.mean.forgetting);
    }
    mcl_cl_result_free(&r);

    /* domain-incremental, 3 tasks, Adam: every task learned right after it */
    sc = splitx_cfg(MCL_SPLITX_DOMAIN, 3);
    sc.split.k_shot = 10;
    sc.n_runs = 2;
    ba.epochs = 8;
    st = mcl_baseline_eval_splitx(ctx, &ba, train, test, &sc, &r);
    CHECK(st == MCL_OK, "baseline domain: %s", mcl_ctx_error(ctx));
    if (st != MCL_OK) return;
    check_shape("baseline domain", &r, 3, 2, 0);
    int ok = 1;
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < 3; i++) ok &= r.acc[k * 9 + i * 4] > 0.9;
    CHECK(ok, "domain: R[i][i] > 0.9 for every task and run");
    /* the same seed again, 1 run: identical to run 0 of the 2-run result */
    sc.n_runs = 1;
    st = mcl_baseline_eval_splitx(ctx, &ba, train, test, &sc, &r2);
    CHECK(st == MCL_OK && same_array(r.acc, r2.acc, 9),
          "baseline: same seed -> identical run 0 (independent of the number of runs)");
    mcl_cl_result_free(&r2);
    mcl_cl_result_free(&r);
}

static void test_baseline_seq(mcl_ctx *ctx, const mcl_dataset *ds)
{
    mcl_class_pool pools[2] = {{ds, NULL, 0}, {ds, NULL, 0}};
    mcl_seq_eval_cfg c = seq_cfg();
    c.n_tasks = 2;
    c.n_runs = 2;
    c.n_episodes = 2;
    c.k_shot = 5;
    mcl_baseline_config ba = bl_cfg(MCL_OPTIM_ADAM, 3e-3f, 5);
    mcl_cl_result r, r2;
    mcl_status st = mcl_baseline_eval_seq(ctx, &ba, pools, &c, &r);
    CHECK(st == MCL_OK, "baseline seq: %s", mcl_ctx_error(ctx));
    if (st != MCL_OK) return;
    check_shape("baseline seq", &r, 2, 2, 0);
    CHECK(r.alone[0] == r.acc[0] && r.alone[1] >= 0 && r.alone[1] <= 1 && r.alone[3] >= 0,
          "baseline alone column");
    /* 2-way tasks of separable classes: learned after 5 epochs of Adam */
    CHECK(r.acc_mean[0] >= 0.75 && r.acc_mean[3] >= 0.75, "baseline seq learns: R00 %g R11 %g",
          r.acc_mean[0], r.acc_mean[3]);
    st = mcl_baseline_eval_seq(ctx, &ba, pools, &c, &r2);
    CHECK(st == MCL_OK && same_result(&r, &r2), "baseline seq: same seed -> identical");
    mcl_cl_result_free(&r2);
    mcl_cl_result_free(&r);
}

static void test_baseline_select(mcl_ctx *ctx, const mcl_dataset *train, const mcl_dataset *test)
{
    const float *lrs = NULL;
    const int *ep = NULL;
    int nl = 0, ne = 0;
    CHECK(mcl_baseline_default_grid(MCL_OPTIM_SGD, &lrs, &nl, &ep, &ne) == MCL_OK && nl == 7 &&
              lrs[0] == 1e-4f && lrs[6] == 1e-1f && ne == 4 && ep[0] == 1 && ep[3] == 25,
          "SGD default grid {1e-4..1e-1} × {1,5,10,25}");
    CHECK(mcl_baseline_default_grid(MCL_OPTIM_ADAM, &lrs, &nl, &ep, &ne) == MCL_OK && nl == 8 &&
              lrs[0] == 1e-6f && lrs[7] == 3e-3f,
          "Adam default grid {1e-6..3e-3}");
    CHECK(mcl_baseline_default_grid(MCL_OPTIM_ADAMW, &lrs, &nl, &ep, &ne) == MCL_ERR_INVALID,
          "no AdamW grid");

    /* a tiny grid on a validation Split-X: a useless lr (1e-6) vs a good one (3e-3) */
    mcl_splitx_eval_cfg sc = splitx_cfg(MCL_SPLITX_DOMAIN, 2);
    sc.split.k_shot = 6;
    sc.n_runs = 1;
    mcl_eval_data val;
    memset(&val, 0, sizeof val);
    val.kind = MCL_EVAL_SPLITX;
    val.train = train;
    val.test = test;
    val.splitx = &sc;
    const float glr[2] = {1e-6f, 3e-3f};
    const int gep[2] = {1, 6};
    mcl_baseline_config base = bl_cfg(MCL_OPTIM_ADAM, 1.0f, 1), best;
    mcl_baseline_selection sel;
    mcl_status st = mcl_baseline_select(ctx, &base, &val, glr, 2, gep, 2, &best, &sel);
    /* the grid's 4 points, then the points that grew it past the edge the best sits on */
    CHECK(st == MCL_OK && sel.n_grid == 4 && sel.n >= 4, "select: %s", mcl_ctx_error(ctx));
    if (st != MCL_OK) return;
    int top = 1;
    for (int i = 0; i < sel.n; i++) {
        printf("  grid lr %g epochs %d: ACC %.3f\n", (double)sel.point[i].lr, sel.point[i].epochs,
               sel.point[i].score);
        top &= sel.point[sel.best].score >= sel.point[i].score;
    }
    CHECK(top, "the best point has the highest score");
    CHECK(best.lr == sel.point[sel.best].lr && best.epochs == sel.point[sel.best].epochs &&
              best.optim == MCL_OPTIM_ADAM && best.conv_channels == 8,
          "best config = best point + the base's other fields");
    /* 3e-3 beats 1e-6; the search may then grow past it (1e-2, ...) */
    CHECK(best.lr >= 3e-3f, "the useful lr wins (%g)", (double)best.lr);
    CHECK(sel.point[0].lr == 1e-6f && sel.point[0].epochs == 1 && sel.point[1].epochs == 6 &&
              sel.point[2].lr == 3e-3f,
          "grid visited lr-major");

    /* bad inputs */
    st = mcl_baseline_select(ctx, &base, &val, glr, 0, gep, 2, &best, &sel);
    CHECK_ERR("empty grid", ctx, TU_ST(MCL_ERR_INVALID), "grid");
    mcl_ctx_clear_error(ctx);
    val.splitx = NULL;
    st = mcl_baseline_select(ctx, &base, &val, glr, 2, gep, 2, &best, &sel);
    CHECK_ERR("incomplete validation data", ctx, TU_ST(MCL_ERR_INVALID), "incomplete");
    mcl_ctx_clear_error(ctx);
}

static void test_baseline_bad(mcl_ctx *ctx, const mcl_dataset *train, const mcl_dataset *test)
{
    mcl_splitx_eval_cfg sc = splitx_cfg(MCL_SPLITX_DOMAIN, 2);
    mcl_baseline_config b = bl_cfg(MCL_OPTIM_ADAMW, 1e-3f, 1);
    mcl_cl_result r;
    mcl_status st = mcl_baseline_eval_splitx(ctx, &b, train, test, &sc, &r);
    CHECK(st == MCL_ERR_INVALID && r.acc == NULL, "AdamW baseline refused");
    CHECK_ERR("optimizer", ctx, TU_ST(MCL_ERR_INVALID), "SGD or Adam");
    mcl_ctx_clear_error(ctx);
    b = bl_cfg(MCL_OPTIM_SGD, 1e-3f, 1);
    b.batch_size = 64;
    st = mcl_baseline_eval_splitx(ctx, &b, train, test, &sc, &r);
    CHECK_ERR("batch 64", ctx, TU_ST(MCL_ERR_INVALID), "batch");
    mcl_ctx_clear_error(ctx);
    b.batch_size = 8;
    mcl_no_grad_begin(ctx);
    st = mcl_baseline_eval_splitx(ctx, &b, train, test, &sc, &r);
    mcl_no_grad_end(ctx);
    CHECK_ERR("no-grad scope", ctx, TU_ST(MCL_ERR_STATE), "no-grad");
    mcl_ctx_clear_error(ctx);
    sc.n_outputs = 1;
    st = mcl_baseline_eval_splitx(ctx, &b, train, test, &sc, &r);
    CHECK_ERR("1 output for 2 labels", ctx, TU_ST(MCL_ERR_INVALID), "cannot hold");
    mcl_ctx_clear_error(ctx);
}

/* ------------------------------------------------------------------ any backend */

/* Every measured cell of a and b differs by at most one query out of n (float rounding in
 * another summation order may flip a near-tie argmax; measured: no cell differs). */
static int close_result(const mcl_cl_result *a, const mcl_cl_result *b, double n)
{
    const int64_t c = (int64_t)a->n_runs * a->n_tasks * a->n_tasks;
    if (a->n_tasks != b->n_tasks || a->n_runs != b->n_runs) return 0;
    for (int64_t i = 0; i < c; i++)
        if (!(same_double(a->acc[i], b->acc[i]) || fabs(a->acc[i] - b->acc[i]) <= 1.0 / n + 1e-12))
            return 0;
    return 1;
}

static void opencl_compare(mcl_ctx *ref, mcl_ctx *ocl, mcl_acl *mr, mcl_acl *mo,
                           const mcl_dataset *train, const mcl_dataset *test)
{
    calibrate_head(mr, ref, test);
    float b[2];
    mcl_tensor_read(mr->head_b, b, 2); /* the same calibrated bias on both */
    mcl_tensor_write(mo->head_b, b, 2);

    mcl_splitx_eval_cfg sc = splitx_cfg(MCL_SPLITX_DOMAIN, 3);
    mcl_cl_result r1, r2;
    mcl_status s1 = mcl_acl_eval_splitx(mr, ref, train, test, &sc, &r1);
    mcl_status s2 = mcl_acl_eval_splitx(mo, ocl, train, test, &sc, &r2);
    CHECK(s1 == MCL_OK && s2 == MCL_OK && close_result(&r1, &r2, 20.0),
          "OpenCL == reference: ACL Split-X (%s)", mcl_ctx_error(ocl));
    mcl_cl_result_free(&r1);
    mcl_cl_result_free(&r2);

    mcl_class_pool pools[2] = {{train, NULL, 0}, {train, NULL, 0}};
    mcl_seq_eval_cfg c = seq_cfg();
    c.n_tasks = 2;
    c.n_runs = 1;
    c.query_chunk = 3;
    s1 = mcl_acl_eval_seq(mr, ref, pools, &c, &r1);
    s2 = mcl_acl_eval_seq(mo, ocl, pools, &c, &r2);
    CHECK(s1 == MCL_OK && s2 == MCL_OK && close_result(&r1, &r2, 10.0),
          "OpenCL == reference: ACL task sequences (%s)", mcl_ctx_error(ocl));
    mcl_cl_result_free(&r1);
    mcl_cl_result_free(&r2);

    int64_t idx[6] = {0, 1, 2, 3, 4, 5};
    int32_t lab[6] = {0, 1, 0, 1, 0, 1};
    const int64_t at[2] = {0, 6};
    mcl_acl_fw_trace f1, f2;
    s1 = mcl_acl_record_fast_weights(mr, ref, train, idx, lab, 6, at, 2, 0, 1, 1, &f1);
    s2 = mcl_acl_record_fast_weights(mo, ocl, train, idx, lab, 6, at, 2, 0, 1, 1, &f2);
    const int64_t nd = 2 * (int64_t)f1.D * f1.D;
    CHECK(s1 == MCL_OK && s2 == MCL_OK && tu_first_mismatch_f(f2.Wy, f1.Wy, nd, 1e-5, 1e-4) < 0 &&
              tu_first_mismatch_f(f2.Wq, f1.Wq, nd, 1e-5, 1e-4) < 0,
          "OpenCL == reference: fast-weight trace");
    mcl_acl_fw_trace_free(&f1);
    mcl_acl_fw_trace_free(&f2);

    mcl_baseline_config ba = bl_cfg(MCL_OPTIM_ADAM, 3e-3f, 3);
    sc.n_runs = 1;
    sc.split.k_shot = 6;
    s1 = mcl_baseline_eval_splitx(ref, &ba, train, test, &sc, &r1);
    s2 = mcl_baseline_eval_splitx(ocl, &ba, train, test, &sc, &r2);
    CHECK(s1 == MCL_OK && s2 == MCL_OK && close_result(&r1, &r2, 20.0),
          "OpenCL == reference: Adam baseline Split-X (%s)", mcl_ctx_error(ocl));
    mcl_cl_result_free(&r1);
    mcl_cl_result_free(&r2);
}

/* The same evaluations on OpenCL (when a device exists) as on the reference. */
static void test_opencl(mcl_ctx *ref, const mcl_dataset *train, const mcl_dataset *test)
{
    mcl_ctx *ocl = NULL;
    char err[256] = "";
    mcl_status st = mcl_ctx_create(&ocl, MCL_BACKEND_OPENCL, NULL, err, sizeof err);
    if (st == MCL_ERR_UNSUPPORTED) { /* no OpenCL platform or device: the only reason to skip */
        printf("OpenCL not available (%s): OpenCL comparison skipped\n", err);
        return;
    }
    if (!CHECK(st == MCL_OK, "the OpenCL backend does not open: %s", err)) return;
    mcl_acl *mr = tiny_model(ref, 2), *mo = tiny_model(ocl, 2);
    if (mr && mo) opencl_compare(ref, ocl, mr, mo, train, test);
    mcl_acl_free(mr);
    mcl_acl_free(mo);
    mcl_ctx_free(ocl);
}

int main(void)
{
    tu_begin("test-acl-eval", SEED);
    mcl_ctx *ctx = tu_ctx_ref();
    mcl_dataset *train = make_ds("synth-train", 20, 1);
    mcl_dataset *test = make_ds("synth-test", 10, 2);
    if (train && test) {
        test_count_hits();
        test_seq(ctx, train);
        test_seq_manual(ctx, train);
        test_known_answer(ctx, train, test);
        test_splitx(ctx, train, test);
        test_unchanged(ctx, train, test);
        test_fast_weights(ctx, train);
        test_bad_inputs(ctx, train, test);
        test_baseline_splitx(ctx, train, test);
        test_baseline_seq(ctx, train);
        test_baseline_select(ctx, train, test);
        test_baseline_bad(ctx, train, test);
        test_opencl(ctx, train, test);
    }
    mcl_dataset_free(train);
    mcl_dataset_free(test);
    mcl_ctx_free(ctx);
    return tu_summary();
}
