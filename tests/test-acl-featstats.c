/* test-acl-featstats.c — feature_norm batch with feature_stats = context (doc/acl-model.md §2,
 * "Feature statistics"): every sequence's features are normalized with the statistics of its
 * own context examples, carried in the state, with gradients through them.
 *   - the statistics in the state are those of the sequence's own Conv-4 features (host
 *     two-pass mean and sum of squared deviations), also when the context comes in two calls
 *     (the pairwise update);
 *   - sequences do not influence each other: changing sequence 1's images leaves sequence 0's
 *     outputs (context call and queries) unchanged, and the same check catches an
 *     implementation that mixes the sequences of a call (feature_stats = call);
 *   - central differences through the context statistics against the backward pass, and the
 *     same check catches a backward that treats the statistics as constants;
 *   - OpenCL vs reference: loss and every parameter gradient;
 *   - the 2-task objective runs, every trainable tensor gets a gradient, the running
 *     estimates stay as they are;
 *   - feature_stats call / context without feature_norm batch is refused. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acl.h"
#include "tensor_impl.h"
#include "testutil.h"

#define SEED 20261125ULL
#define NWAY 3
#define B 2
#define L1 3 /* first context call, steps per sequence */
#define L2 2 /* second context call                   */
#define Q 2  /* queries per sequence                   */

/* Same ops on the same rows, GEMMs over different row counts: float32 rounding only. */
#define SAME_ATOL 1e-5
#define SAME_RTOL 1e-4
/* Statistics from the graph vs the host's double two-pass sums of the same float features. */
#define STAT_ATOL 1e-5
#define STAT_RTOL 1e-4
/* Central differences of a float32 forward (loss O(1), h 1e-3: rounding ~1e-4 in the
 * quotient) through ReLU/max-pool kinks: as in test-acl-model's check. */
#define GC_EPS 1e-3
#define GC_ATOL 1e-3
#define GC_RTOL 5e-2
/* OpenCL vs reference: float32 with other summation orders through ~20 layers and three
 * chained calls; as test-acl-objective allows. */
#define OCL_ATOL 2e-4
#define OCL_RTOL 2e-3

static void tiny_cfg(mcl_acl_config *c, int stats)
{
    tu_acl_tiny_config(c, NWAY, SEED);
    c->feature_norm = MCL_ACL_FEATNORM_BATCH;
    c->feature_stats = stats;
}

/* Images (N(0,1) from a fixed stream) and labels 0..NWAY-1 for B sequences of n steps. */
static void make_part(mcl_ctx *ctx, mcl_tensor **img, mcl_tensor **lab, int64_t n, uint64_t stream)
{
    tu_images_labels(ctx, B * n, 32, SEED, stream, 5, NWAY, img, lab);
}

typedef struct inputs {
    mcl_tensor *i1, *l1, *i2, *l2, *q, *tg; /* two context parts, queries, query targets */
} inputs;

static void make_inputs(mcl_ctx *ctx, inputs *in)
{
    make_part(ctx, &in->i1, &in->l1, L1, 1);
    make_part(ctx, &in->i2, &in->l2, L2, 2);
    make_part(ctx, &in->q, &in->tg, Q, 3);
}

static void free_inputs(inputs *in)
{
    mcl_tensor_free(in->i1); mcl_tensor_free(in->l1); mcl_tensor_free(in->i2);
    mcl_tensor_free(in->l2); mcl_tensor_free(in->q); mcl_tensor_free(in->tg);
}

/* The loss of the gradient checks: context L1 steps from W0, L2 more from that state (the
 * statistics combine), Q queries per sequence from the final state; mean CE of the queries.
 * detach_stats: the queries read constant copies of the statistics (a deliberately wrong
 * backward). *logits (may be NULL) gets the query logits. */
static mcl_tensor *chained_loss(mcl_acl *m, mcl_ctx *ctx, const inputs *in, int detach_stats,
                                mcl_tensor **logits)
{
    mcl_acl_state *s1 = NULL, *s2 = NULL;
    mcl_tensor *lg = NULL, *ql = NULL, *loss = NULL;
    if (mcl_acl_forward(m, ctx, in->i1, in->l1, B, L1, NULL, &lg, &s1) == MCL_OK &&
        mcl_acl_forward(m, ctx, in->i2, in->l2, B, L2, s1, &lg, &s2) == MCL_OK) {
        if (detach_stats) {
            mcl_tensor *a = mcl_detach(s2->feat_mean), *b = mcl_detach(s2->feat_m2);
            mcl_tensor_free(s2->feat_mean);
            mcl_tensor_free(s2->feat_m2);
            s2->feat_mean = a;
            s2->feat_m2 = b;
        }
        if (mcl_acl_query(m, ctx, s2, in->q, B, Q, &ql) == MCL_OK)
            loss = mcl_cross_entropy(ctx, ql, in->tg);
    }
    mcl_acl_state_free(s1);
    mcl_acl_state_free(s2);
    if (logits) *logits = ql;
    return loss;
}

static double eval_loss(mcl_acl *m, mcl_ctx *ctx, const inputs *in)
{
    mcl_no_grad_begin(ctx);
    mcl_tensor *loss = chained_loss(m, ctx, in, 0, NULL);
    float v = NAN;
    if (!loss || mcl_tensor_read(loss, &v, 1) != MCL_OK) v = NAN;
    mcl_no_grad_end(ctx);
    mcl_ctx_reset(ctx);
    return v;
}

/* Every parameter gradient after backward of chained_loss (NULL where none). */
static float **grads_of(mcl_acl *m, mcl_ctx *ctx, const inputs *in, int detach_stats, float *loss_out)
{
    const int np = mcl_params_count(m->params);
    float **g = calloc((size_t)np, sizeof *g);
    mcl_params_zero_grad(m->params);
    mcl_tensor *loss = chained_loss(m, ctx, in, detach_stats, NULL);
    CHECK(loss && mcl_backward(ctx, loss) == MCL_OK, "backward (detach %d): %s", detach_stats, mcl_ctx_error(ctx));
    if (loss_out) mcl_tensor_read(loss, loss_out, 1);
    for (int i = 0; i < np; i++) {
        mcl_tensor *gr = mcl_tensor_grad(mcl_params_get(m->params, i));
        g[i] = gr ? tu_read(gr) : NULL;
    }
    mcl_ctx_reset(ctx);
    return g;
}

static void grads_free(float **g, int np)
{
    for (int i = 0; i < np; i++) free(g[i]);
    free(g);
}

/* ---- 1. the statistics are the sequence's own (host two-pass) ---- */
static void test_statistics(void)
{
    printf("-- the context statistics in the state --\n");
    mcl_ctx *ctx = tu_ctx_ref();
    mcl_acl_config c;
    tiny_cfg(&c, MCL_ACL_FEATSTATS_CONTEXT);
    mcl_acl *m = mcl_acl_create(ctx, &c);
    if (!CHECK(m != NULL, "model: %s", mcl_ctx_error(ctx))) { mcl_ctx_free(ctx); return; }
    mcl_acl_set_training(m, 0);
    inputs in;
    make_inputs(ctx, &in);
    mcl_no_grad_begin(ctx);
    const int64_t F = m->n_features;
    /* the Conv-4 features of both parts, on the host */
    mcl_tensor *f1 = mcl_conv4_forward(ctx, &m->conv, in.i1, B * L1, 0.0f, 0);
    mcl_tensor *f2 = mcl_conv4_forward(ctx, &m->conv, in.i2, B * L2, 0.0f, 0);
    float *h1 = f1 ? tu_read(f1) : NULL, *h2 = f2 ? tu_read(f2) : NULL;
    mcl_acl_state *s1 = NULL, *s2 = NULL;
    mcl_tensor *lg = NULL;
    mcl_status st = mcl_acl_forward(m, ctx, in.i1, in.l1, B, L1, NULL, &lg, &s1);
    if (st == MCL_OK) st = mcl_acl_forward(m, ctx, in.i2, in.l2, B, L2, s1, &lg, &s2);
    CHECK(st == MCL_OK && s1 && s2 && h1 && h2, "two context calls: %s", mcl_ctx_error(ctx));
    if (st == MCL_OK && s1 && s2 && h1 && h2) {
        CHECK(s1->feat_n == L1 && s2->feat_n == L1 + L2, "counts %lld, %lld", (long long)s1->feat_n,
              (long long)s2->feat_n);
        float *mu1 = tu_read(s1->feat_mean), *M1 = tu_read(s1->feat_m2);
        float *mu2 = tu_read(s2->feat_mean), *M2 = tu_read(s2->feat_m2);
        double *want = malloc((size_t)(4 * B * F) * sizeof *want);
        for (int b = 0; b < B; b++)
            for (int64_t i = 0; i < F; i++) {
                double a = 0, all = 0;
                for (int t = 0; t < L1; t++) a += h1[(b * L1 + t) * F + i];
                all = a;
                for (int t = 0; t < L2; t++) all += h2[(b * L2 + t) * F + i];
                a /= L1;
                all /= L1 + L2;
                double da = 0, dall = 0;
                for (int t = 0; t < L1; t++) {
                    double x = h1[(b * L1 + t) * F + i];
                    da += (x - a) * (x - a);
                    dall += (x - all) * (x - all);
                }
                for (int t = 0; t < L2; t++) {
                    double x = h2[(b * L2 + t) * F + i];
                    dall += (x - all) * (x - all);
                }
                want[(0 * B + b) * F + i] = a;
                want[(1 * B + b) * F + i] = da;
                want[(2 * B + b) * F + i] = all;
                want[(3 * B + b) * F + i] = dall;
            }
        const float *got[4] = {mu1, M1, mu2, M2};
        const char *what[4] = {"mean after call 1", "M2 after call 1", "mean after both calls",
                               "M2 after both calls (pairwise update)"};
        int wrong_caught = 0;
        for (int k = 0; k < 4; k++) {
            int bad = -1;
            for (int64_t j = 0; j < B * F && bad < 0; j++)
                if (!tu_near(got[k][j], want[k * B * F + j], STAT_ATOL, STAT_RTOL)) bad = (int)j;
            CHECK(bad < 0, "%s == the host's two-pass value of the sequence's own features%s", what[k],
                  bad < 0 ? "" : " (first mismatch below)");
            if (bad >= 0) printf("  [%d]: %.9g vs %.9g\n", bad, (double)got[k][bad], want[k * B * F + bad]);
            /* sequence 1's statistics are not sequence 0's: the comparison tells them apart */
            if (!tu_near(got[k][0], want[k * B * F + F], STAT_ATOL, STAT_RTOL)) wrong_caught++;
        }
        CHECK(wrong_caught == 4, "the other sequence's statistics are detected as wrong (%d of 4)", wrong_caught);
        free(mu1); free(M1); free(mu2); free(M2); free(want);
        /* a detached state keeps the statistics */
        mcl_acl_state *d = mcl_acl_state_detach(s2);
        CHECK(d && d->feat_n == s2->feat_n && d->feat_mean && d->feat_m2, "mcl_acl_state_detach keeps them");
        mcl_acl_state_free(d);
    }
    free(h1); free(h2);
    mcl_acl_state_free(s1);
    mcl_acl_state_free(s2);
    mcl_no_grad_end(ctx);
    mcl_ctx_reset(ctx);
    free_inputs(&in);
    mcl_acl_free(m);
    mcl_ctx_free(ctx);
}

/* ---- 2. sequences of one call do not influence each other ---- */

/* Context logits [B, N] and query logits [B·Q, N] of the chained calls (eval or training). */
static int outputs(mcl_acl *m, mcl_ctx *ctx, const inputs *in, float *ctx_lg, float *q_lg)
{
    mcl_no_grad_begin(ctx);
    mcl_acl_state *s1 = NULL, *s2 = NULL;
    mcl_tensor *lg = NULL, *ql = NULL;
    int ok = mcl_acl_forward(m, ctx, in->i1, in->l1, B, L1, NULL, &lg, &s1) == MCL_OK &&
             mcl_acl_forward(m, ctx, in->i2, in->l2, B, L2, s1, &lg, &s2) == MCL_OK &&
             mcl_tensor_read(lg, ctx_lg, B * NWAY) == MCL_OK &&
             mcl_acl_query(m, ctx, s2, in->q, B, Q, &ql) == MCL_OK &&
             mcl_tensor_read(ql, q_lg, B * Q * NWAY) == MCL_OK;
    mcl_acl_state_free(s1);
    mcl_acl_state_free(s2);
    mcl_no_grad_end(ctx);
    mcl_ctx_reset(ctx);
    return ok;
}

/* Replace sequence 1's rows of img [B·n, 1, 32, 32] by other values (scaled and shifted). */
static void change_seq1(mcl_tensor *img, int64_t n)
{
    float *v = tu_read(img);
    const int64_t per = n * 1024;
    for (int64_t j = per; j < 2 * per; j++) v[j] = 3.0f * v[j] + 1.0f;
    mcl_tensor_write(img, v, 2 * per);
    free(v);
}

static void test_isolation(void)
{
    printf("-- sequences of one call do not influence each other --\n");
    mcl_ctx *ctx = tu_ctx_ref();
    const int stats[2] = {MCL_ACL_FEATSTATS_CONTEXT, MCL_ACL_FEATSTATS_CALL};
    for (int k = 0; k < 2; k++)
        for (int tr = 0; tr < 2; tr++) {
            if (stats[k] == MCL_ACL_FEATSTATS_CALL && tr) continue; /* call trains as running */
            mcl_acl_config c;
            tiny_cfg(&c, stats[k]);
            mcl_acl *m = mcl_acl_create(ctx, &c);
            if (!CHECK(m != NULL, "model")) continue;
            mcl_acl_set_training(m, tr);
            inputs in;
            make_inputs(ctx, &in);
            float c0[B * NWAY], q0[B * Q * NWAY], c1[B * NWAY], q1[B * Q * NWAY];
            int ok = outputs(m, ctx, &in, c0, q0);
            change_seq1(in.i1, L1); /* sequence 1's context images (both calls) and queries */
            change_seq1(in.i2, L2);
            change_seq1(in.q, Q);
            ok = ok && outputs(m, ctx, &in, c1, q1);
            CHECK(ok, "forward passes: %s", mcl_ctx_error(ctx));
            int seq0_same = tu_first_mismatch_f(c1, c0, NWAY, SAME_ATOL, SAME_RTOL) < 0 &&
                            tu_first_mismatch_f(q1, q0, Q * NWAY, SAME_ATOL, SAME_RTOL) < 0;
            int seq1_same = tu_first_mismatch_f(c1 + NWAY, c0 + NWAY, NWAY, SAME_ATOL, SAME_RTOL) < 0;
            if (stats[k] == MCL_ACL_FEATSTATS_CONTEXT) {
                CHECK(ok && seq0_same, "context (%s): sequence 0's context and query logits unchanged "
                      "when sequence 1's images change", tr ? "training" : "evaluation");
                CHECK(ok && !seq1_same, "context (%s): sequence 1's logits do change", tr ? "training" : "evaluation");
            } else {
                CHECK(ok && !seq0_same, "a mixing implementation (feature_stats call, evaluation) is "
                      "caught: sequence 0's logits change with sequence 1's images");
            }
            free_inputs(&in);
            mcl_acl_free(m);
        }
    mcl_ctx_free(ctx);
}

/* ---- 3. central differences through the statistics ---- */
static void test_gradcheck(void)
{
    printf("-- central differences through the context statistics --\n");
    mcl_ctx *ctx = tu_ctx_ref();
    mcl_acl_config c;
    tiny_cfg(&c, MCL_ACL_FEATSTATS_CONTEXT);
    mcl_acl *m = mcl_acl_create(ctx, &c);
    if (!CHECK(m != NULL, "model")) { mcl_ctx_free(ctx); return; }
    /* make the small-init SRWM query matter, as in test-acl-model */
    mcl_tensor_randn(m->layer[0].Wq, SEED, 99, 0.0f, 0.3f);
    mcl_tensor_randn(m->layer[1].Wq, SEED, 98, 0.0f, 0.3f);
    inputs in;
    make_inputs(ctx, &in);
    const int np = mcl_params_count(m->params);
    float **g = grads_of(m, ctx, &in, 0, NULL);
    float **gd = grads_of(m, ctx, &in, 1, NULL); /* statistics as constants in the queries */
    /* the parameters before the normalization (through the statistics) and some after it */
    static const char *names[] = {"conv0.w", "conv2.w", "conv3.w", "conv3.b", "conv3.norm.g",
                                  "conv3.norm.b", "input.w", "layer0.srwm.Wy", "head.w"};
    const int nn = (int)(sizeof names / sizeof names[0]);
    int bad = 0, checked = 0, caught = 0, differs = 0;
    for (int k = 0; k < nn; k++) {
        mcl_tensor *p = mcl_params_find(m->params, names[k]);
        if (!CHECK(p != NULL, "param %s exists", names[k])) continue;
        int pi = -1;
        for (int i = 0; i < np; i++)
            if (mcl_params_get(m->params, i) == p) pi = i;
        const int64_t n = mcl_tensor_numel(p);
        float *pv = tu_read(p);
        if (!pv || pi < 0 || !g[pi] || !gd[pi]) {
            CHECK(0, "no gradient for %s", names[k]);
            free(pv);
            continue;
        }
        for (int r = 0; r < 3; r++) {
            /* input.w: rows < F read the normalized features */
            int64_t i = (int64_t)((k * 37 + r * 101) % (!strcmp(names[k], "input.w") ? m->n_features * c.hidden : n));
            float orig = pv[i];
            pv[i] = orig + (float)GC_EPS; mcl_tensor_write(p, pv, n);
            double lp = eval_loss(m, ctx, &in);
            pv[i] = orig - (float)GC_EPS; mcl_tensor_write(p, pv, n);
            double lm = eval_loss(m, ctx, &in);
            pv[i] = orig; mcl_tensor_write(p, pv, n);
            double num = (lp - lm) / (2.0 * GC_EPS);
            checked++;
            if (!tu_near(g[pi][i], num, GC_ATOL, GC_RTOL)) {
                bad++;
                printf("  grad %s[%lld]: analytic %.6g numeric %.6g\n", names[k], (long long)i, (double)g[pi][i], num);
            }
            if (g[pi][i] != gd[pi][i]) differs++;
            if (!tu_near(gd[pi][i], num, GC_ATOL, GC_RTOL)) caught++;
        }
        free(pv);
    }
    printf("%d sampled elements: %d off; with the statistics as constants %d differ, %d off\n", checked, bad,
           differs, caught);
    CHECK(bad == 0, "gradient check through the context statistics: %d of %d sampled elements off", bad, checked);
    CHECK(differs > 0, "the path through the statistics changes %d of %d sampled gradients", differs, checked);
    CHECK(caught > 0, "a backward without the path through the statistics is caught (%d of %d elements off)",
          caught, checked);
    grads_free(g, np);
    grads_free(gd, np);
    free_inputs(&in);
    mcl_acl_free(m);
    mcl_ctx_free(ctx);
}

/* ---- 4. OpenCL vs reference ---- */
static void test_opencl(void)
{
    printf("-- OpenCL vs reference --\n");
    char err[256];
    mcl_ctx *co = NULL;
    mcl_status st = mcl_ctx_create(&co, MCL_BACKEND_OPENCL, NULL, err, sizeof err);
    if (st == MCL_ERR_UNSUPPORTED) {
        printf("no OpenCL device (%s): OpenCL comparison skipped\n", err);
        return;
    }
    if (!CHECK(st == MCL_OK, "OpenCL context: %s", err)) return;
    mcl_ctx *cr = tu_ctx_ref();
    mcl_acl_config c;
    tiny_cfg(&c, MCL_ACL_FEATSTATS_CONTEXT);
    mcl_acl *mr = mcl_acl_create(cr, &c), *mo = mcl_acl_create(co, &c);
    if (!CHECK(mr && mo, "models")) goto out;
    const int np = mcl_params_count(mr->params);
    for (int i = 0; i < np; i++) { /* bit-identical parameters (same seed; make sure) */
        mcl_tensor *src = mcl_params_get(mr->params, i);
        float *v = tu_read(src);
        mcl_tensor_write(mcl_params_find(mo->params, src->name), v, mcl_tensor_numel(src));
        free(v);
    }
    inputs ir, io;
    make_inputs(cr, &ir);
    make_inputs(co, &io);
    float lr = NAN, lo = NAN;
    float **gr = grads_of(mr, cr, &ir, 0, &lr), **go = grads_of(mo, co, &io, 0, &lo);
    printf("loss: reference %.7f, OpenCL (%s) %.7f\n", (double)lr, mcl_ctx_backend_name(co), (double)lo);
    CHECK(tu_near(lo, lr, OCL_ATOL, OCL_RTOL), "OpenCL loss == reference");
    int bad = 0, caught = 0;
    for (int i = 0; i < np; i++) {
        mcl_tensor *p = mcl_params_get(mr->params, i);
        const int64_t n = mcl_tensor_numel(p);
        if (!gr[i] && !go[i]) continue; /* the running estimates: no gradient on either */
        if (!gr[i] || !go[i] || tu_first_mismatch_f(go[i], gr[i], n, OCL_ATOL, OCL_RTOL) >= 0) {
            bad++;
            printf("  OpenCL grad %s differs\n", p->name);
        } else if (!caught) { /* the comparison catches a 1% error */
            float keep = go[i][0];
            go[i][0] = gr[i][0] * 1.01f + 1e-3f;
            caught = tu_first_mismatch_f(go[i], gr[i], 1, OCL_ATOL, OCL_RTOL) == 0;
            go[i][0] = keep;
        }
    }
    CHECK(bad == 0, "OpenCL gradients of all %d parameter tensors == reference", np);
    CHECK(caught, "a 1%% gradient error is detected by the tolerance");
    grads_free(gr, np);
    grads_free(go, np);
    free_inputs(&ir);
    free_inputs(&io);
out:
    mcl_acl_free(mr);
    mcl_acl_free(mo);
    mcl_ctx_free(cr);
    mcl_ctx_free(co);
}

/* ---- 5. the 2-task objective; bad configs ---- */
static void test_objective_and_config(void)
{
    printf("-- the 2-task objective with context statistics; configs --\n");
    mcl_ctx *ctx = tu_ctx_ref();
    mcl_acl_config c;
    tiny_cfg(&c, MCL_ACL_FEATSTATS_CONTEXT);
    mcl_acl *m = mcl_acl_create(ctx, &c);
    if (CHECK(m != NULL, "model")) {
        mcl_acl_task_data td[2];
        for (int i = 0; i < 2; i++) {
            memset(&td[i], 0, sizeof td[i]);
            td[i].n_first = NWAY;
            td[i].n_ctx = 2 * NWAY;
            td[i].n_query = NWAY;
            make_part(ctx, &td[i].first_img, &td[i].first_lab, td[i].n_first, 10 + 3 * i);
            make_part(ctx, &td[i].ctx_img, &td[i].ctx_lab, td[i].n_ctx, 11 + 3 * i);
            make_part(ctx, &td[i].query_img, &td[i].query_lab, td[i].n_query, 12 + 3 * i);
        }
        mcl_acl_objective o;
        mcl_acl_objective_two_task(&o, 0.2f, 1.0f, 0.1f);
        mcl_tensor *loss = NULL;
        float v = NAN;
        int ok = mcl_acl_objective_loss(m, ctx, &o, td, B, &loss, NULL) == MCL_OK &&
                 mcl_backward(ctx, loss) == MCL_OK && mcl_tensor_read(loss, &v, 1) == MCL_OK;
        CHECK(ok && isfinite(v), "2-task objective loss %.6f: %s", (double)v, mcl_ctx_error(ctx));
        int np = mcl_params_count(m->params), with = 0;
        for (int i = 0; i < np; i++) {
            mcl_tensor *gr = mcl_tensor_grad(mcl_params_get(m->params, i));
            float *gv = gr ? tu_read(gr) : NULL;
            int nz = 0;
            for (int64_t j = 0; gv && j < mcl_tensor_numel(gr) && !nz; j++) nz = gv[j] != 0.0f;
            with += nz;
            free(gv);
        }
        CHECK(with == np - 2, "every trainable tensor gets a gradient (%d of %d; the 2 running estimates none)",
              with, np - 2);
        float *rm = tu_read(m->run_mean), *rv = tu_read(m->run_var);
        int still = rm && rv;
        for (int64_t j = 0; still && j < m->n_features; j++) still = rm[j] == 0.0f && rv[j] == 1.0f;
        CHECK(still, "context statistics leave the running estimates at 0 / 1");
        free(rm); free(rv);
        mcl_ctx_reset(ctx);
        for (int i = 0; i < 2; i++) mcl_acl_task_data_free(&td[i]);
        mcl_acl_free(m);
    }
    /* call / context choose batch statistics: refused with any other feature_norm */
    const int fns[2] = {MCL_ACL_FEATNORM_NONE, MCL_ACL_FEATNORM_IMAGE};
    for (int k = 0; k < 2; k++) {
        tiny_cfg(&c, MCL_ACL_FEATSTATS_CONTEXT);
        c.feature_norm = fns[k];
        mcl_acl *bad = mcl_acl_create(ctx, &c);
        CHECK(!bad && strstr(mcl_ctx_error(ctx), "feature_stats") != NULL,
              "feature_stats context with feature_norm %d refused: %s", fns[k], mcl_ctx_error(ctx));
        mcl_acl_free(bad);
        mcl_ctx_clear_error(ctx);
    }
    char err[256];
    mcl_acl_config_default(&c);
    CHECK(c.feature_stats == MCL_ACL_FEATSTATS_RUNNING, "default feature_stats running");
    CHECK(mcl_acl_config_parse(&c, "feature_norm = batch\nfeature_stats = context\n", err, sizeof err) == MCL_OK &&
              c.feature_stats == MCL_ACL_FEATSTATS_CONTEXT,
          "config text feature_stats = context");
    CHECK(mcl_acl_config_parse(&c, "feature_stats = episode\n", err, sizeof err) != MCL_OK,
          "feature_stats = episode refused: %s", err);
    mcl_ctx_free(ctx);
}

/* mcl_acl_set_feature_stats (`eval acl --feature-stats`): call and context only with
 * feature_norm batch; a refusal leaves the model as it was and names its feature_norm. */
static void test_set_feature_stats(void)
{
    mcl_ctx *ctx = tu_ctx_ref();
    if (!ctx) return;
    for (int norm = MCL_ACL_FEATNORM_NONE; norm <= MCL_ACL_FEATNORM_IMAGE; norm++) {
        mcl_acl_config c;
        tiny_cfg(&c, MCL_ACL_FEATSTATS_RUNNING);
        c.feature_norm = norm;
        mcl_acl *m = mcl_acl_create(ctx, &c);
        if (!CHECK(m != NULL, "model (feature_norm %d): %s", norm, mcl_ctx_error(ctx))) continue;
        for (int fs = MCL_ACL_FEATSTATS_RUNNING; fs <= MCL_ACL_FEATSTATS_CONTEXT; fs++) {
            char err[256] = "";
            const int want_ok = fs == MCL_ACL_FEATSTATS_RUNNING || norm == MCL_ACL_FEATNORM_BATCH;
            const int before = m->cfg.feature_stats;
            mcl_status st = mcl_acl_set_feature_stats(m, fs, err, sizeof err);
            if (want_ok)
                CHECK(st == MCL_OK && m->cfg.feature_stats == fs, "feature_norm %d, stats %d: accepted (%s)", norm, fs, err);
            else
                CHECK(st == MCL_ERR_INVALID && m->cfg.feature_stats == before &&
                          strstr(err, norm == MCL_ACL_FEATNORM_NONE ? "feature_norm none" : "feature_norm image"),
                      "feature_norm %d, stats %d: refused, model unchanged, the message names the norm: %s", norm, fs, err);
        }
        CHECK(mcl_acl_set_feature_stats(m, 7, NULL, 0) == MCL_ERR_INVALID, "a value out of the enum is refused");
        mcl_acl_free(m);
    }
    mcl_ctx_free(ctx);
}

int main(void)
{
    tu_begin("test-acl-featstats", SEED);
    test_statistics();
    test_isolation();
    test_gradcheck();
    test_opencl();
    test_objective_and_config();
    test_set_feature_stats();
    return tu_summary();
}
