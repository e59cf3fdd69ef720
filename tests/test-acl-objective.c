/* test-acl-objective.c — one full ACL meta-training step (doc/acl-model.md §3: 2 tasks, all seven
 * calls, first-shot and ACL terms):
 *   - the objective equals an independent composition of the same calls in which every query
 *     is run as its own length-1 call (no state repetition), term by term and in total;
 *   - the weights and the no-ACL baseline follow the formula;
 *   - the reference is bit-reproducible (loss and every gradient, dropout 0.1);
 *   - OpenCL vs reference: loss and every parameter gradient (dropout 0.1: both backends draw
 *     the same Philox masks);
 *   - a wrong composition (ACL query read from W_A instead of W_AB) is detected;
 *   - the objective's batched Conv-4 (one Conv-4 over several calls' images, segmented
 *     dropout) gives every term the bits of the nine calls made one by one, in training with
 *     dropout 0.1 (the same masks), on both backends, and takes as many streams; the calls
 *     one by one from a stream one off do not;
 *   - bad task data gives clear errors. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acl.h"
#include "tensor_impl.h"
#include "testutil.h"

#define SEED 20261123ULL
#define NWAY 3
#define KSHOT 2
#define B 2
#define NQ NWAY /* one query per class */

/* Objective vs the per-query composition: the same ops on the same rows, but GEMMs over
 * different row counts and a different order of the CE mean; float32 rounding only. */
#define COMP_ATOL 1e-5
#define COMP_RTOL 1e-4
/* OpenCL vs reference: float32 with different summation orders (CLBlast GEMM, parallel
 * reductions) through 7 chained calls of ~15 layers; measured differences ~1e-6, allow ~100×. */
#define OCL_ATOL 2e-4
#define OCL_RTOL 2e-3

static void tiny_cfg(mcl_acl_config *c, float dropout)
{
    tu_acl_tiny_config(c, NWAY, SEED);
    c->dropout = dropout;
}

/* Random images and labels 0..NWAY-1 for rows = B·n, written from a fixed stream. */
static void make_part(mcl_ctx *ctx, mcl_tensor **img, mcl_tensor **lab, int64_t n,
                      uint64_t stream)
{
    tu_images_labels(ctx, B * n, 32, SEED, stream, 5, NWAY, img, lab);
}

static void make_tasks(mcl_ctx *ctx, mcl_acl_task_data td[2])
{
    for (int i = 0; i < 2; i++) {
        memset(&td[i], 0, sizeof td[i]);
        td[i].n_first = NWAY;
        td[i].n_ctx = NWAY * KSHOT;
        td[i].n_query = NQ;
        make_part(ctx, &td[i].first_img, &td[i].first_lab, td[i].n_first, 10 + 3 * i);
        make_part(ctx, &td[i].ctx_img, &td[i].ctx_lab, td[i].n_ctx, 11 + 3 * i);
        make_part(ctx, &td[i].query_img, &td[i].query_lab, td[i].n_query, 12 + 3 * i);
    }
}

/* ---- the independent composition: each query j of every sequence is its own call ---- */

/* Rows {b·NQ + j : b} of t (images [B·NQ,1,32,32] or labels [B·NQ]) as a new tensor. */
static mcl_tensor *query_j(mcl_ctx *ctx, mcl_tensor *t, int j)
{
    int64_t per = mcl_tensor_numel(t) / (B * NQ);
    float *v = tu_read(t), *o = malloc((size_t)(B * per) * sizeof *o);
    for (int b = 0; b < B; b++) memcpy(o + b * per, v + (b * NQ + j) * per, (size_t)per * sizeof *o);
    mcl_tensor *r = per == 1 ? mcl_tensor_new(ctx, B, 0, 0, 0) : mcl_tensor_new(ctx, B, 1, 32, 32);
    mcl_tensor_write(r, o, B * per);
    free(v); free(o);
    return r;
}

/* mean over j of CE(query_j | state): the same value as the term (mean over B·NQ rows). */
static double composed_term(mcl_acl *m, mcl_ctx *ctx, const mcl_acl_state *s,
                            const mcl_acl_task_data *td)
{
    double sum = 0.0;
    mcl_tensor *unk = mcl_tensor_new(ctx, B, 0, 0, 0);
    mcl_tensor_fill(unk, (float)NWAY);
    for (int j = 0; j < NQ; j++) {
        mcl_tensor *qi = query_j(ctx, td->query_img, j), *ql = query_j(ctx, td->query_lab, j);
        mcl_tensor *lg = NULL;
        float v = NAN;
        if (mcl_acl_forward(m, ctx, qi, unk, B, 1, s, &lg, NULL) == MCL_OK)
            mcl_tensor_read(mcl_cross_entropy(ctx, lg, ql), &v, 1);
        sum += v;
        mcl_tensor_free(qi); mcl_tensor_free(ql);
    }
    mcl_tensor_free(unk);
    return sum / NQ;
}

/* The seven calls of the doc/acl-model.md §3 table; wrong = 1 reads the ACL query from W_A. */
static void composed(mcl_acl *m, mcl_ctx *ctx, const mcl_acl_task_data *td, int wrong,
                     double out[5] /* fsA mainA fsB mainB aclA */)
{
    mcl_acl_state *fsA = NULL, *WA = NULL, *fsB = NULL, *WAB = NULL;
    mcl_tensor *ig = NULL;
    mcl_acl_forward(m, ctx, td[0].first_img, td[0].first_lab, B, td[0].n_first, NULL, &ig, &fsA);
    out[0] = composed_term(m, ctx, fsA, &td[0]);
    mcl_acl_forward(m, ctx, td[0].ctx_img, td[0].ctx_lab, B, td[0].n_ctx, NULL, &ig, &WA);
    out[1] = composed_term(m, ctx, WA, &td[0]);
    mcl_acl_forward(m, ctx, td[1].first_img, td[1].first_lab, B, td[1].n_first, WA, &ig, &fsB);
    out[2] = composed_term(m, ctx, fsB, &td[1]);
    mcl_acl_forward(m, ctx, td[1].ctx_img, td[1].ctx_lab, B, td[1].n_ctx, WA, &ig, &WAB);
    out[3] = composed_term(m, ctx, WAB, &td[1]);
    out[4] = composed_term(m, ctx, wrong ? WA : WAB, &td[0]);
    mcl_acl_state_free(fsA); mcl_acl_state_free(WA);
    mcl_acl_state_free(fsB); mcl_acl_state_free(WAB);
}

static void test_composition(void)
{
    mcl_ctx *ctx = tu_ctx_ref();
    mcl_acl_config c;
    tiny_cfg(&c, 0.1f);
    mcl_acl *m = mcl_acl_create(ctx, &c);
    CHECK(m != NULL, "tiny model");
    if (!m) { mcl_ctx_free(ctx); return; }
    mcl_acl_set_training(m, 0); /* dropout off: both sides see the same network */
    mcl_acl_task_data td[2];
    make_tasks(ctx, td);

    mcl_acl_objective o;
    mcl_acl_objective_two_task(&o, 0.2f, 1.0f, 0.1f);
    mcl_acl_terms terms;
    mcl_tensor *loss = NULL;
    mcl_no_grad_begin(ctx);
    CHECK(mcl_acl_objective_loss(m, ctx, &o, td, B, &loss, &terms) == MCL_OK && loss,
          "2-task objective: %s", mcl_ctx_error(ctx));
    float lv = NAN;
    if (loss) mcl_tensor_read(loss, &lv, 1);
    printf("2-task loss %.7f, %d terms\n", (double)lv, terms.n);
    CHECK(terms.n == 5, "5 terms (fsA mainA fsB mainB aclA), got %d", terms.n);

    double want[5], wrong[5];
    composed(m, ctx, td, 0, want);
    composed(m, ctx, td, 1, wrong);
    /* objective order: fsA, mainA, fsB, mainB, aclA */
    const int kind[5] = {MCL_ACL_TERM_FIRST_SHOT, MCL_ACL_TERM_MAIN, MCL_ACL_TERM_FIRST_SHOT,
                         MCL_ACL_TERM_MAIN, MCL_ACL_TERM_ACL};
    const int task[5] = {0, 0, 1, 1, 0}, after[5] = {0, 0, 1, 1, 1};
    const double w[5] = {0.2, 0.2, 0.02, 0.02, 0.2};
    double total = 0.0;
    for (int k = 0; k < 5 && k < terms.n; k++) {
        const mcl_acl_term *t = &terms.term[k];
        printf("  term %d: kind %d task %d after %d weight %.3f loss %.7f (composed %.7f) acc %.3f\n",
               k, t->kind, t->task, t->after, (double)t->weight, t->loss, want[k], t->accuracy);
        CHECK(t->kind == kind[k] && t->task == task[k] && t->after == after[k], "term %d identity", k);
        CHECK(fabs(t->weight - w[k]) < 1e-7, "term %d weight %g, want %g", k, (double)t->weight, w[k]);
        CHECK(tu_near(t->loss, want[k], COMP_ATOL, COMP_RTOL), "term %d == composed calls", k);
        CHECK(t->accuracy >= 0.0 && t->accuracy <= 1.0, "term %d accuracy in [0,1]", k);
        total += w[k] * want[k];
    }
    CHECK(tu_near(lv, total, COMP_ATOL, COMP_RTOL), "loss %.7f == Σ weight·term %.7f", (double)lv, total);
    /* the wrong composition (ACL query from W_A) must not pass the same check */
    CHECK(!tu_near(terms.term[4].loss, wrong[4], COMP_ATOL, COMP_RTOL),
          "ACL term read from W_A (%.7f) is told apart from W_AB (%.7f)", wrong[4], terms.term[4].loss);

    /* no-ACL baseline: the same four other terms, no aclA */
    mcl_acl_objective nacl = o;
    nacl.acl = 0;
    mcl_tensor *l2 = NULL;
    CHECK(mcl_acl_objective_loss(m, ctx, &nacl, td, B, &l2, &terms) == MCL_OK && l2, "no-ACL objective");
    float lv2 = NAN;
    if (l2) mcl_tensor_read(l2, &lv2, 1);
    CHECK(terms.n == 4, "no-ACL: 4 terms, got %d", terms.n);
    CHECK(tu_near(lv2, total - 0.2 * want[4], COMP_ATOL, COMP_RTOL), "no-ACL loss %.7f", (double)lv2);

    /* the T-task mean form, T = 2, no first-shot: mean of mainA, mainB, aclA */
    mcl_acl_objective mean;
    mcl_acl_objective_mean(&mean, 2, 0);
    mcl_acl_task_data nofs[2] = {td[0], td[1]};
    nofs[0].first_img = nofs[0].first_lab = nofs[1].first_img = nofs[1].first_lab = NULL;
    mcl_tensor *l3 = NULL;
    CHECK(mcl_acl_objective_loss(m, ctx, &mean, nofs, B, &l3, &terms) == MCL_OK && l3,
          "mean objective without first-shot data");
    float lv3 = NAN;
    if (l3) mcl_tensor_read(l3, &lv3, 1);
    CHECK(tu_near(lv3, (want[1] + want[3] + want[4]) / 3.0, COMP_ATOL, COMP_RTOL),
          "mean-form loss %.7f", (double)lv3);
    mcl_no_grad_end(ctx);

    /* bad input */
    mcl_acl_objective bad = o;
    bad.n_tasks = 0;
    CHECK(mcl_acl_objective_loss(m, ctx, &bad, td, B, &l2, NULL) == MCL_ERR_INVALID &&
          tu_err_matches(ctx, 1u << MCL_ERR_INVALID, "0 tasks"), "0 tasks rejected: %s", mcl_ctx_error(ctx));
    mcl_ctx_clear_error(ctx);
    CHECK(mcl_acl_objective_loss(m, ctx, &o, nofs, B, &l2, NULL) == MCL_ERR_NULL &&
          tu_err_matches(ctx, 1u << MCL_ERR_NULL, "first-shot"), "missing first-shot data: %s", mcl_ctx_error(ctx));
    mcl_acl_task_data short_q[2] = {td[0], td[1]};
    short_q[1].n_query = NQ + 1;
    mcl_ctx_clear_error(ctx);
    CHECK(mcl_acl_objective_loss(m, ctx, &o, short_q, B, &l2, NULL) == MCL_ERR_SHAPE &&
          tu_err_matches(ctx, 1u << MCL_ERR_SHAPE, "task 1: query images"), "mis-shaped queries: %s", mcl_ctx_error(ctx));
    bad = o;
    bad.scale = NAN;
    mcl_ctx_clear_error(ctx);
    CHECK(mcl_acl_objective_loss(m, ctx, &bad, td, B, &l2, NULL) == MCL_ERR_INVALID, "NaN scale rejected");

    mcl_ctx_clear_error(ctx);
    mcl_ctx_reset(ctx);
    for (int i = 0; i < 2; i++) mcl_acl_task_data_free(&td[i]);
    mcl_acl_free(m);
    mcl_ctx_free(ctx);
}

/* One training step's loss and gradients (dropout 0.1, training) on a backend. */
typedef struct step_out { float loss; float **grads; int np; float *run_var; } step_out;

static int run_step(mcl_backend_kind kind, int feature_norm, const mcl_acl *copy_from, step_out *o,
                    mcl_ctx **ctx_out, mcl_acl **m_out)
{
    char err[256];
    mcl_ctx *ctx = NULL;
    memset(o, 0, sizeof *o); /* a failed step leaves nothing for step_free to free */
    *ctx_out = NULL;
    *m_out = NULL;
    mcl_status st = mcl_ctx_create(&ctx, kind, NULL, err, sizeof err);
    if (st != MCL_OK) {
        printf("cannot open backend %d: %s\n", (int)kind, err);
        /* -1 (skip the comparison) only when there is no OpenCL device; else a failure */
        return kind == MCL_BACKEND_OPENCL && st == MCL_ERR_UNSUPPORTED ? -1 : 1;
    }
    mcl_ctx_set_seed(ctx, SEED);
    mcl_acl_config c;
    tiny_cfg(&c, 0.1f);
    c.feature_norm = feature_norm;
    mcl_acl *m = mcl_acl_create(ctx, &c);
    if (!m) { mcl_ctx_free(ctx); return 1; } /* a model that cannot be built is a failure */
    if (copy_from) /* bit-identical parameters (they are already: same seed; make sure) */
        for (int i = 0; i < mcl_params_count(copy_from->params); i++) {
            mcl_tensor *src = mcl_params_get(copy_from->params, i);
            /* not the running statistics: copy_from's step has already moved them */
            if (!strncmp(src->name, "featnorm.", 9)) continue;
            float *v = tu_read(src);
            mcl_tensor *dst = mcl_params_find(m->params, src->name);
            if (dst && v) mcl_tensor_write(dst, v, mcl_tensor_numel(src));
            free(v);
        }
    mcl_acl_task_data td[2];
    make_tasks(ctx, td);
    mcl_acl_objective obj;
    mcl_acl_objective_two_task(&obj, 0.2f, 1.0f, 0.1f);
    mcl_tensor *loss = NULL;
    int rc = 1;
    o->loss = NAN;
    if (mcl_acl_objective_loss(m, ctx, &obj, td, B, &loss, NULL) == MCL_OK &&
        mcl_backward(ctx, loss) == MCL_OK && mcl_tensor_read(loss, &o->loss, 1) == MCL_OK)
        rc = 0;
    else
        printf("step failed: %s\n", mcl_ctx_error(ctx));
    o->np = mcl_params_count(m->params);
    o->grads = calloc((size_t)o->np, sizeof *o->grads);
    for (int i = 0; i < o->np; i++) { /* buffers (running statistics) have no gradient */
        mcl_tensor *g = mcl_tensor_grad(mcl_params_get(m->params, i));
        o->grads[i] = g ? tu_read(g) : NULL;
    }
    o->run_var = m->run_var ? tu_read(m->run_var) : NULL;
    mcl_ctx_reset(ctx);
    for (int i = 0; i < 2; i++) mcl_acl_task_data_free(&td[i]);
    *ctx_out = ctx;
    *m_out = m;
    return rc;
}

static void step_free(step_out *o, mcl_ctx *ctx, mcl_acl *m)
{
    for (int i = 0; i < o->np; i++) free(o->grads[i]);
    free(o->grads);
    free(o->run_var);
    mcl_acl_free(m);
    mcl_ctx_free(ctx);
}

static void test_step_backends(int fn)
{
    printf("-- one 2-task step, feature_norm %d --\n", fn);
    step_out a, b, o;
    mcl_ctx *ca, *cb, *co;
    mcl_acl *ma, *mb, *mo;
    int ra = run_step(MCL_BACKEND_REF, fn, NULL, &a, &ca, &ma);
    int rb = run_step(MCL_BACKEND_REF, fn, NULL, &b, &cb, &mb);
    CHECK(ra == 0 && rb == 0, "two reference steps");
    if (ra != 0 || rb != 0) goto out;
    printf("reference step: loss %.7f over %d parameter tensors\n", (double)a.loss, a.np);
    int same = memcmp(&a.loss, &b.loss, sizeof a.loss) == 0, nz = 0;
    for (int i = 0; i < a.np; i++) {
        int64_t n = mcl_tensor_numel(mcl_params_get(ma->params, i));
        same = same && ((!a.grads[i] && !b.grads[i]) ||
                        (a.grads[i] && b.grads[i] &&
                         memcmp(a.grads[i], b.grads[i], (size_t)n * sizeof(float)) == 0));
        for (int64_t j = 0; a.grads[i] && j < n; j++)
            if (a.grads[i][j] != 0.0f) { nz++; break; }
    }
    CHECK(same, "reference step bit-reproducible (loss and all gradients, dropout 0.1)");
    /* the running statistics of feature_norm batch are buffers: no gradient */
    int buffers = fn == MCL_ACL_FEATNORM_BATCH ? 2 : 0;
    CHECK(nz == a.np - buffers, "every trainable parameter tensor gets a gradient (%d of %d non-zero)", nz, a.np - buffers);
    b.grads[0][0] = nextafterf(b.grads[0][0], INFINITY);
    CHECK(memcmp(a.grads[0], b.grads[0], sizeof(float)) != 0, "a one-ulp change is detected");

    int ro = run_step(MCL_BACKEND_OPENCL, fn, ma, &o, &co, &mo);
    if (ro < 0) {
        printf("OpenCL not available: OpenCL comparison skipped\n");
    } else {
        CHECK(ro == 0, "OpenCL step");
        if (ro == 0) {
            printf("OpenCL backend %s: loss %.7f (reference %.7f)\n", mcl_ctx_backend_name(co),
                   (double)o.loss, (double)a.loss);
            CHECK(tu_near(o.loss, a.loss, OCL_ATOL, OCL_RTOL), "OpenCL loss == reference");
            int bad = 0;
            double worst = 0.0;
            for (int i = 0; i < a.np; i++) {
                mcl_tensor *p = mcl_params_get(ma->params, i);
                int64_t n = mcl_tensor_numel(p);
                for (int64_t j = 0; o.grads[i] && a.grads[i] && j < n; j++) {
                    double d = fabs((double)o.grads[i][j] - a.grads[i][j]) /
                               (fabs((double)a.grads[i][j]) + 1e-3);
                    if (d > worst) worst = d;
                }
                if (!o.grads[i] && !a.grads[i]) continue; /* a buffer on both */
                if (!o.grads[i] || !a.grads[i] ||
                    tu_first_mismatch_f(o.grads[i], a.grads[i], n, OCL_ATOL, OCL_RTOL) >= 0) {
                    bad++;
                    printf("  OpenCL grad %s differs\n", p->name);
                }
            }
            printf("largest |OpenCL - ref| / (|ref| + 1e-3) over all gradients: %.3g\n", worst);
            if (a.run_var) {
                int64_t nv = mcl_tensor_numel(ma->run_var), j = o.run_var ? tu_first_mismatch_f(o.run_var, a.run_var, nv, OCL_ATOL, OCL_RTOL) : 0;
                if (j >= 0) printf("  running var[%lld]: OpenCL %.9g reference %.9g\n", (long long)j, o.run_var ? (double)o.run_var[j] : NAN, (double)a.run_var[j]);
            }
            if (a.run_var)
                CHECK(o.run_var && tu_first_mismatch_f(o.run_var, a.run_var, mcl_tensor_numel(ma->run_var),
                                                       OCL_ATOL, OCL_RTOL) < 0,
                      "OpenCL running variance after the step == reference");
            CHECK(bad == 0, "OpenCL gradients of all %d parameter tensors == reference", a.np);
            /* the comparison catches a gradient that is 1% off */
            o.grads[0][0] = a.grads[0][0] * 1.01f + 1e-3f;
            CHECK(tu_first_mismatch_f(o.grads[0], a.grads[0], 1, OCL_ATOL, OCL_RTOL) == 0,
                  "a 1%% gradient error is detected by the tolerance");
        }
        step_free(&o, co, mo);
    }
out:
    if (ra >= 0) step_free(&a, ca, ma);
    if (rb >= 0) step_free(&b, cb, mb);
}

/* Logits of B sequences run together vs each sequence alone: feature_norm image and batch in
 * evaluation never mix examples (equal up to GEMM rounding); batch in training does. */
static void test_feature_norm(void)
{
    mcl_ctx *ctx = tu_ctx_ref();
    const int fns[3] = {MCL_ACL_FEATNORM_IMAGE, MCL_ACL_FEATNORM_BATCH, MCL_ACL_FEATNORM_BATCH};
    const int train[3] = {1, 0, 1};
    for (int k = 0; k < 3; k++) {
        mcl_acl_config c;
        tiny_cfg(&c, 0.0f);
        c.feature_norm = fns[k];
        mcl_acl *m = mcl_acl_create(ctx, &c);
        if (!m) { CHECK(0, "model"); continue; }
        mcl_tensor *img, *lab;
        make_part(ctx, &img, &lab, 4, 77); /* B = 2 sequences of 4 steps */
        if (fns[k] == MCL_ACL_FEATNORM_BATCH) { /* move the running estimates off 0/1 first */
            mcl_tensor *lg0 = NULL;
            mcl_acl_forward(m, ctx, img, lab, B, 4, NULL, &lg0, NULL);
            mcl_ctx_reset(ctx);
            float rm[4];
            mcl_tensor_read(mcl_slice(ctx, m->run_mean, 0, 0, 4), rm, 4);
            CHECK(rm[0] != 0.0f || rm[1] != 0.0f, "a training call moves the running mean (%g %g)", (double)rm[0], (double)rm[1]);
        }
        mcl_acl_set_training(m, train[k]);
        mcl_no_grad_begin(ctx);
        mcl_tensor *both = NULL, *one = NULL;
        mcl_acl_forward(m, ctx, img, lab, B, 4, NULL, &both, NULL);
        float *vb = both ? tu_read(both) : NULL;
        /* sequence 0 alone: its 4 rows */
        mcl_tensor *i0 = mcl_slice(ctx, img, 0, 0, 4), *l0 = mcl_slice(ctx, lab, 0, 0, 4);
        mcl_acl_forward(m, ctx, i0, l0, 1, 4, NULL, &one, NULL);
        float *vo = one ? tu_read(one) : NULL;
        int same = vb && vo && tu_first_mismatch_f(vo, vb, NWAY, COMP_ATOL, COMP_RTOL) < 0;
        if (fns[k] == MCL_ACL_FEATNORM_BATCH && train[k])
            CHECK(vb && vo && !same, "feature_norm batch in training mixes the examples of a call (detected)");
        else
            CHECK(same, "feature_norm %s (%s): a sequence gives the same logits alone as in a batch",
                  fns[k] == MCL_ACL_FEATNORM_IMAGE ? "image" : "batch", train[k] ? "training" : "evaluation");
        free(vb); free(vo);
        mcl_no_grad_end(ctx);
        mcl_ctx_reset(ctx);
        mcl_tensor_free(img); mcl_tensor_free(lab);
        mcl_acl_free(m);
    }
    mcl_ctx_free(ctx);
}

/* The nine calls of the 2-task objective one by one (each running its own Conv-4 and taking
 * its streams from ctx, as before the batching), from stream s0: the five term values. */
static void calls_one_by_one(mcl_acl *m, mcl_ctx *ctx, const mcl_acl_task_data *td,
                             uint64_t s0, float out[5])
{
    mcl_ctx_set_stream(ctx, s0);
    mcl_acl_state *fsA = NULL, *WA = NULL, *fsB = NULL, *WAB = NULL;
    mcl_tensor *lg[5] = {NULL, NULL, NULL, NULL, NULL};
    const int qt[5] = {0, 0, 1, 1, 0};
    mcl_acl_forward_state(m, ctx, td[0].first_img, td[0].first_lab, B, td[0].n_first, NULL, &fsA);
    mcl_acl_query(m, ctx, fsA, td[0].query_img, B, NQ, &lg[0]);
    mcl_acl_forward_state(m, ctx, td[0].ctx_img, td[0].ctx_lab, B, td[0].n_ctx, NULL, &WA);
    mcl_acl_query(m, ctx, WA, td[0].query_img, B, NQ, &lg[1]);
    mcl_acl_forward_state(m, ctx, td[1].first_img, td[1].first_lab, B, td[1].n_first, WA, &fsB);
    mcl_acl_query(m, ctx, fsB, td[1].query_img, B, NQ, &lg[2]);
    mcl_acl_forward_state(m, ctx, td[1].ctx_img, td[1].ctx_lab, B, td[1].n_ctx, WA, &WAB);
    mcl_acl_query(m, ctx, WAB, td[1].query_img, B, NQ, &lg[3]);
    mcl_acl_query(m, ctx, WAB, td[0].query_img, B, NQ, &lg[4]);
    for (int k = 0; k < 5; k++) {
        out[k] = NAN;
        if (lg[k]) mcl_tensor_read(mcl_cross_entropy(ctx, lg[k], td[qt[k]].query_lab), &out[k], 1);
    }
    mcl_acl_state_free(fsA); mcl_acl_state_free(WA);
    mcl_acl_state_free(fsB); mcl_acl_state_free(WAB);
}

static void test_batched_conv4(mcl_ctx *ctx, const char *name)
{
    mcl_acl_config c;
    tiny_cfg(&c, 0.1f);
    mcl_acl *m = mcl_acl_create(ctx, &c);
    CHECK(m != NULL, "%s: tiny model", name);
    if (!m) return;
    mcl_acl_set_training(m, 1);
    mcl_acl_task_data td[2];
    make_tasks(ctx, td);
    mcl_acl_objective o;
    mcl_acl_objective_two_task(&o, 0.2f, 1.0f, 0.1f);
    mcl_acl_terms terms;
    memset(&terms, 0, sizeof terms);
    mcl_tensor *loss = NULL;
    const uint64_t s0 = 77;
    mcl_no_grad_begin(ctx);
    mcl_ctx_set_stream(ctx, s0);
    CHECK(mcl_acl_objective_loss(m, ctx, &o, td, B, &loss, &terms) == MCL_OK && terms.n == 5,
          "%s: objective: %s", name, mcl_ctx_error(ctx));
    const uint64_t s_end = mcl_ctx_stream(ctx);
    float one[5], off[5];
    calls_one_by_one(m, ctx, td, s0, one);
    CHECK(mcl_ctx_stream(ctx) == s_end, "%s: the objective took %llu streams, the calls %llu", name,
          (unsigned long long)(s_end - s0), (unsigned long long)(mcl_ctx_stream(ctx) - s0));
    calls_one_by_one(m, ctx, td, s0 + 1, off);
    int same = terms.n == 5, off_same = 1;
    for (int k = 0; k < 5 && k < terms.n; k++) {
        const float v = (float)terms.term[k].loss;
        same = same && memcmp(&v, &one[k], sizeof v) == 0;
        off_same = off_same && memcmp(&v, &off[k], sizeof v) == 0;
    }
    CHECK(same, "%s: batched Conv-4 terms are the calls' bits (term 0: %.9g vs %.9g)", name,
          terms.n > 0 ? terms.term[0].loss : NAN, (double)one[0]);
    CHECK(!off_same, "%s: the calls from a stream one off differ (the check can fail)", name);
    printf("%s: batched Conv-4: 5 terms %s the 9 calls' one by one (%llu streams)\n", name,
           same ? "bit-identical to" : "DIFFERENT from", (unsigned long long)(s_end - s0));
    mcl_no_grad_end(ctx);
    mcl_acl_terms_free(&terms);
    for (int i = 0; i < 2; i++) mcl_acl_task_data_free(&td[i]);
    mcl_acl_free(m);
}

static void test_batched_conv4_backends(void)
{
    mcl_ctx *ctx = tu_ctx_ref();
    test_batched_conv4(ctx, "reference");
    mcl_ctx_free(ctx);
    mcl_ctx *oc = NULL;
    char err[256];
    mcl_status st = mcl_ctx_create(&oc, MCL_BACKEND_OPENCL, NULL, err, sizeof err);
    if (st != MCL_OK) {
        /* a skip only when there is no OpenCL device; else a failure */
        CHECK(st == MCL_ERR_UNSUPPORTED, "cannot open OpenCL: %s", err);
        printf("no OpenCL device: the batched Conv-4 check on OpenCL skipped\n");
        return;
    }
    mcl_ctx_set_seed(oc, SEED);
    test_batched_conv4(oc, "OpenCL");
    mcl_ctx_free(oc);
}

int main(void)
{
    tu_begin("test-acl-objective", SEED);
    test_batched_conv4_backends();
    test_composition();
    test_feature_norm();
    test_step_backends(MCL_ACL_FEATNORM_NONE);
    test_step_backends(MCL_ACL_FEATNORM_BATCH);
    return tu_summary();
}
