/* test-baselines-cl.c — the classic continual-learning baselines (baseline.h, cl_methods.h):
 *   - EWC's empirical Fisher and penalty on a 2-parameter model, values worked out by hand;
 *     the two-sum form of multi-task EWC equals the sum of the per-task penalties;
 *   - online EWC's decay F ← γF + F_new;
 *   - SI's path integral under SGD on a quadratic loss against its closed form (a geometric
 *     series), and the importance Ω at the task's end;
 *   - LwF's distillation loss and its gradient on a 2-row case;
 *   - the replay reservoir: bounded, deterministic for a seed, uniform inclusion;
 *   - the spec parser (valid specs, every kind of error) and the readable names;
 *   - every method end to end on a tiny Split (finite accuracies, determinism), EWC with a huge
 *     λ and replay keep task A better than plain Adam in a class-incremental split, the
 *     full-data regime, the grid search over the method's hyperparameter;
 *   - each check of a hand value is paired with a deliberately wrong value that must fail;
 *   - the same runs on OpenCL agree with the reference (skipped without a device). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "baseline.h"
#include "cl_methods.h"
#include "metrics.h"
#include "testutil.h"

#define SEED 20260301ULL
#define NCLASS 8

/* ------------------------------------------------------------------ synthetic data */

/* NCLASS classes, per_class images each. Class c: an 8×6 bright block (8 rows, 6 columns) at
 * row 2 + 14·(c / 4), column 1 + 8·(c % 4) on a noisy background (0..50). */
static mcl_dataset *make_ds(const char *name, int per_class, uint32_t salt)
{
    const tu_blocks b = {NCLASS, 777u + salt, 1103515245u, 12345u, 9, 50, 190, 66, 2, 14, 1, 8, 8, 6};
    return tu_blocks_dataset(name, per_class, &b);
}

/* ------------------------------------------------------------------ EWC by hand */

/* The 2-parameter model: logits z = (θ0·x, θ1·x) for a scalar input x (w [1,2], x [1,1]). */
typedef struct two_param {
    mcl_ctx *ctx;
    mcl_tensor *w;
    const float *x;
    const float *y;
    mcl_tensor *xt, *yt;
} two_param;

static mcl_tensor *two_param_loss(void *arg, int64_t k)
{
    two_param *a = arg;
    mcl_tensor_free(a->xt);
    mcl_tensor_free(a->yt);
    a->xt = tu_vec(a->ctx, 1, &a->x[k]);
    a->yt = tu_vec(a->ctx, 1, &a->y[k]);
    const int64_t sh[2] = {1, 1};
    mcl_tensor *x2 = mcl_reshape(a->ctx, a->xt, 2, sh);
    return mcl_cross_entropy(a->ctx, mcl_matmul(a->ctx, x2, a->w, 0, 0), a->yt);
}

static void test_ewc_by_hand(mcl_ctx *ctx)
{
    mcl_params *p = mcl_params_create(ctx);
    const int64_t sh[2] = {1, 2};
    mcl_tensor *w = mcl_params_add(p, "w", 2, sh);
    const float th[2] = {logf(3.0f), 0.0f};
    mcl_tensor_write(w, th, 2);
    /* Two examples, θ = (ln 3, 0); ∂ log p_y / ∂z_k = 1[k=y] − p_k and ∂z_k/∂θ_k = x:
     *   A: x = 1, y = 0: z = (ln 3, 0), p = (3/4, 1/4), g_A = (1/4, −1/4)
     *   B: x = 2, y = 1: z = (ln 9, 0), p = (9/10, 1/10), g_B = 2·(−9/10, 9/10) = (−1.8, 1.8)
     *   F = ((1/4)² + 1.8²)/2 = (0.0625 + 3.24)/2 = 1.65125 for both parameters. */
    const float xs[2] = {1.0f, 2.0f}, ys[2] = {0.0f, 1.0f};
    two_param a = {ctx, w, xs, ys, NULL, NULL};
    float F[2] = {0, 0};
    mcl_status st = mcl_cl_fisher(ctx, p, two_param_loss, &a, 2, F);
    CHECK(st == MCL_OK, "fisher: %s", mcl_ctx_error(ctx));
    /* float32 softmax and squares: a few ulps */
    CHECK_NEAR("F[0] (hand: 1.65125)", F[0], 1.65125, 1e-5, 1e-5);
    CHECK_NEAR("F[1] (hand: 1.65125)", F[1], 1.65125, 1e-5, 1e-5);
    /* the sampled-label / wrong-label Fisher is a different number: flipped labels give
     * g_A = (−3/4, 3/4), g_B = 2·(1/10, −1/10): F = (0.5625 + 0.04)/2 = 0.30125 */
    const float yflip[2] = {1.0f, 0.0f};
    a.y = yflip;
    float Fw[2] = {0, 0};
    st = mcl_cl_fisher(ctx, p, two_param_loss, &a, 2, Fw);
    CHECK(st == MCL_OK && tu_near(Fw[0], 0.30125, 1e-5, 1e-5), "flipped labels: F %g (hand 0.30125)", (double)Fw[0]);
    CHECK(!tu_near(Fw[0], 1.65125, 1e-5, 1e-5), "a wrong Fisher is caught");
    mcl_tensor_free(a.xt);
    mcl_tensor_free(a.yt);

    /* penalty: λ = 2, θ* = (ln 3, 0), θ = θ* + (1, 0.5):
     *   value = λ/2 Σ F (θ − θ*)² = 1 · 1.65125 · (1 + 0.25) = 2.0640625
     *   grad  = λ F (θ − θ*) = 2 · 1.65125 · (1, 0.5) = (3.3025, 1.65125) */
    const float anchor[2] = {th[0], th[1]}, theta[2] = {th[0] + 1.0f, th[1] + 0.5f};
    float g[2] = {0, 0};
    double v = mcl_cl_quad_penalty(theta, anchor, F, 2, 1.0, g);
    CHECK_NEAR("EWC penalty value (hand 2.0640625)", v, 2.0640625, 1e-5, 1e-5);
    CHECK_NEAR("EWC penalty grad[0] (hand 3.3025)", g[0], 3.3025, 1e-5, 1e-5);
    CHECK_NEAR("EWC penalty grad[1] (hand 1.65125)", g[1], 1.65125, 1e-5, 1e-5);
    CHECK(!tu_near(v, 2.0 * 2.0640625, 1e-5, 1e-5), "a penalty without the 1/2 is caught");

    /* two tasks as two sums: λ (A θ − B) = Σ_t λ F_t (θ − θ*_t) */
    const float F2[2] = {0.5f, 4.0f}, anchor2[2] = {-1.0f, 2.0f};
    double A[2] = {0, 0}, B[2] = {0, 0};
    mcl_cl_ewc_add_task(A, B, F, anchor, 2);
    mcl_cl_ewc_add_task(A, B, F2, anchor2, 2);
    float gs[2] = {0, 0}, gt[2] = {0, 0};
    mcl_cl_ewc_grad(A, B, theta, 2, 2.0, gs);
    mcl_cl_quad_penalty(theta, anchor, F, 2, 1.0, gt);
    mcl_cl_quad_penalty(theta, anchor2, F2, 2, 1.0, gt);
    /* (1.0986 + 1 + 1)·0.5·2 + ... : float vs double sums, 1e-5 */
    CHECK(tu_first_mismatch_f(gs, gt, 2, 1e-5, 1e-5) < 0, "two-sum EWC gradient = sum over tasks (%g %g vs %g %g)",
          (double)gs[0], (double)gs[1], (double)gt[0], (double)gt[1]);
    mcl_params_free(p);
    mcl_ctx_reset(ctx);
}

static void test_online_decay(void)
{
    /* γ = 0.9: (1, 2)·0.9 + (0.5, 0.25) = (1.4, 2.05); once more with (0, 1): (1.26, 2.845) */
    float F[2] = {1.0f, 2.0f};
    const float n1[2] = {0.5f, 0.25f}, n2[2] = {0.0f, 1.0f};
    mcl_cl_fisher_decay(F, n1, 2, 0.9f);
    CHECK(tu_near(F[0], 1.4, 1e-6, 1e-6) && tu_near(F[1], 2.05, 1e-6, 1e-6), "decay 1: %g %g", (double)F[0], (double)F[1]);
    mcl_cl_fisher_decay(F, n2, 2, 0.9f);
    CHECK(tu_near(F[0], 1.26, 1e-6, 1e-6) && tu_near(F[1], 2.845, 1e-6, 1e-6), "decay 2: %g %g", (double)F[0], (double)F[1]);
    CHECK(!tu_near(F[1], 2.05 + 1.0, 1e-6, 1e-6), "no decay (plain EWC's sum) is caught");
    mcl_cl_fisher_decay(F, n1, 2, 0.0f);
    CHECK(F[0] == 0.5f && F[1] == 0.25f, "gamma 0 keeps only the new Fisher");
}

/* ------------------------------------------------------------------ SI closed form */

static void test_si_quadratic(mcl_ctx *ctx)
{
    /* L(θ) = ½ Σ a_i (θ_i − m_i)², a = (1, 4), m = (1, −1), θ_0 = 0, SGD lr η = 0.1, n = 10.
     * θ_t − m = r^t d0 with r = 1 − η a, d0 = θ_0 − m; g_t = a r^t d0; Δθ_t = −η g_t, so
     *     ω = −Σ g_t Δθ_t = η a² d0² Σ_{t<n} r^{2t} = η a² d0² (1 − r^{2n}) / (1 − r²)
     * and the task's move Δ = d0 (r^n − 1), Ω = ω / (Δ² + ξ). */
    const float a[2] = {1.0f, 4.0f}, m[2] = {1.0f, -1.0f};
    const float eta = 0.1f, xi = 0.1f;
    const int n = 10;
    mcl_params *p = mcl_params_create(ctx);
    const int64_t sh[1] = {2};
    mcl_tensor *th = mcl_params_add(p, "theta", 1, sh);
    mcl_optim_config oc;
    memset(&oc, 0, sizeof oc);
    oc.kind = MCL_OPTIM_SGD;
    oc.sched.kind = MCL_SCHED_CONSTANT;
    oc.sched.base_lr = eta;
    mcl_optim *opt = NULL;
    CHECK(mcl_optim_create(ctx, &oc, p, &opt) == MCL_OK, "optim: %s", mcl_ctx_error(ctx));
    mcl_tensor *at = tu_vec(ctx, 2, a), *mt = tu_vec(ctx, 2, m);
    float t0[2] = {0, 0}, before[2], after[2], g[2];
    mcl_cl_si si;
    CHECK(mcl_cl_si_init(&si, 2, xi, t0) == MCL_OK, "si init");
    for (int s = 0; s < n; s++) {
        mcl_optim_zero_grad(opt);
        mcl_tensor *d = mcl_sub(ctx, th, mt);
        mcl_tensor *loss = mcl_scale(ctx, mcl_sum(ctx, mcl_mul(ctx, mcl_mul(ctx, d, d), at)), 0.5f);
        mcl_backward(ctx, loss);
        mcl_cl_params_read(p, 1, g);
        mcl_cl_params_read(p, 0, before);
        mcl_optim_step(opt);
        mcl_cl_params_read(p, 0, after);
        mcl_cl_si_step(&si, g, before, after);
        mcl_ctx_reset(ctx);
    }
    double want[2], Om[2], lcont[2];
    for (int i = 0; i < 2; i++) {
        const double r = 1.0 - (double)eta * a[i], d0 = -(double)m[i];
        want[i] = eta * a[i] * a[i] * d0 * d0 * (1.0 - pow(r, 2 * n)) / (1.0 - r * r);
        const double D = d0 * (pow(r, n) - 1.0);
        Om[i] = want[i] / (D * D + xi);
        /* the gradient-flow answer, L(start) − L(end): not what discrete steps give */
        lcont[i] = 0.5 * a[i] * d0 * d0 * (1.0 - pow(r, 2 * n));
    }
    printf("  SI: omega %.6f %.6f (closed form %.6f %.6f)\n", (double)si.omega[0], (double)si.omega[1], want[0], want[1]);
    /* float32 products summed over 10 steps: 1e-5 relative */
    CHECK_ARRAY("SI path integral", si.omega, want, 2, 1e-6, 1e-5);
    CHECK(!tu_near(si.omega[1], lcont[1], 1e-6, 1e-5), "the continuous-time value is a wrong answer and is caught");
    float end[2];
    mcl_cl_params_read(p, 0, end);
    mcl_cl_si_task_end(&si, end);
    CHECK_ARRAY("SI importance Omega", si.Omega, Om, 2, 1e-6, 1e-5);
    CHECK(si.omega[0] == 0.0f && si.start[1] == end[1], "task end resets omega and moves the anchor");
    /* penalty c Σ Ω (θ − θ*)² at θ = θ* + 1, c = 0.5: 0.5 (Ω0 + Ω1) */
    const float one[2] = {end[0] + 1.0f, end[1] + 1.0f};
    double v = mcl_cl_quad_penalty(one, si.start, si.Omega, 2, 0.5, NULL);
    CHECK_NEAR("SI penalty", v, 0.5 * (Om[0] + Om[1]), 1e-6, 1e-5);
    mcl_cl_si_free(&si);
    mcl_tensor_free(at);
    mcl_tensor_free(mt);
    mcl_optim_free(opt);
    mcl_params_free(p);
}

/* ------------------------------------------------------------------ LwF */

static void test_lwf(mcl_ctx *ctx)
{
    /* 2 rows, 3 logits, distillation on units 0..1, T = 2, λ = 1.5:
     *   row 0: z_old = (0, 0) -> p = (1/2, 1/2); z/T = (ln 3, 0) -> q = (3/4, 1/4)
     *          KL = ½ ln(½ / ¾) + ½ ln(½ / ¼) = ½ ln(4/3)
     *   row 1: z_old/T = (ln 3, 0) -> p = (3/4, 1/4); z = (0, 0) -> q = (1/2, 1/2)
     *          KL = ¾ ln(3/2) + ¼ ln(1/2)
     *   loss = λ T² / 2 · (KL0 + KL1) = 3 (KL0 + KL1)
     *   ∂loss/∂z_u = λ T / n (q_u − p_u): row 0 (0.375, −0.375, 0), row 1 (−0.375, 0.375, 0) */
    const float l3 = logf(3.0f);
    const float z[6] = {2.0f * l3, 0.0f, 5.0f, 0.0f, 0.0f, -7.0f};
    const float old[6] = {0.0f, 0.0f, 9.0f, 2.0f * l3, 0.0f, 9.0f};
    const int64_t sh[2] = {2, 3};
    mcl_tensor *zt = mcl_param_create(ctx, "z", 2, sh);
    mcl_tensor_write(zt, z, 6);
    mcl_tensor *loss = mcl_cl_lwf_loss(ctx, zt, old, 3, 2, 2.0f, 1.5f);
    CHECK(loss != NULL, "lwf loss: %s", mcl_ctx_error(ctx));
    if (loss) {
        const double kl = 0.5 * log(4.0 / 3.0) + 0.75 * log(1.5) + 0.25 * log(0.5);
        const double v = mcl_tensor_item(loss, 0);
        CHECK_NEAR("LwF loss (hand)", v, 3.0 * kl, 1e-6, 1e-5);
        CHECK(!tu_near(v, 3.0 * kl / 4.0, 1e-6, 1e-5), "a loss without T^2 is caught");
        CHECK(mcl_backward(ctx, loss) == MCL_OK, "lwf backward");
        const double gw[6] = {0.375, -0.375, 0.0, -0.375, 0.375, 0.0};
        CHECK_TENSOR("LwF gradient (hand)", mcl_tensor_grad(zt), gw, 6, 1e-6, 1e-5);
    }
    /* bad arguments */
    mcl_tensor *bad = mcl_cl_lwf_loss(ctx, zt, old, 3, 4, 2.0f, 1.0f);
    CHECK(!bad, "4 units of 3 logits refused");
    CHECK_ERR("lwf units", ctx, TU_ST(MCL_ERR_INVALID), "units");
    mcl_ctx_clear_error(ctx);
    mcl_tensor_free(zt);
    mcl_ctx_reset(ctx);
}

/* ------------------------------------------------------------------ replay buffer */

static void test_replay(void)
{
    mcl_cl_replay b, b2;
    mcl_rng r, r2;
    float img[MCL_CL_IMG];
    CHECK(mcl_cl_replay_init(&b, 5) == MCL_OK && mcl_cl_replay_init(&b2, 5) == MCL_OK, "replay init");
    mcl_rng_init(&r, SEED, 1);
    mcl_rng_init(&r2, SEED, 1);
    for (int k = 0; k < 40; k++) {
        for (int q = 0; q < MCL_CL_IMG; q++) img[q] = (float)k;
        int s = mcl_cl_replay_offer(&b, &r), s2 = mcl_cl_replay_offer(&b2, &r2);
        CHECK(s == s2 && s < 5 && (k >= 5 || s == k), "offer %d: slot %d / %d", k, s, s2);
        if (s >= 0) mcl_cl_replay_put(&b, s, img, k);
        if (s2 >= 0) mcl_cl_replay_put(&b2, s2, img, k);
    }
    int ok = b.n == 5 && b.seen == 40;
    for (int i = 0; i < b.n; i++) {
        ok &= b.lab[i] == b2.lab[i] && b.lab[i] >= 0 && b.lab[i] < 40 && b.img[i * MCL_CL_IMG + 7] == (float)b.lab[i];
        for (int j = 0; j < i; j++) ok &= b.lab[i] != b.lab[j];
    }
    printf("  replay buffer after 40 offers: %d %d %d %d %d\n", b.lab[0], b.lab[1], b.lab[2], b.lab[3], b.lab[4]);
    CHECK(ok, "reservoir: bounded (5), distinct, deterministic for the seed, image matches label");
    int sl[5];
    CHECK(mcl_cl_replay_sample(&b, &r, 5, sl) == MCL_OK, "sample all");
    int distinct = 1;
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < i; j++) distinct &= sl[i] != sl[j];
    CHECK(distinct, "replay mini-batch slots distinct");
    CHECK(mcl_cl_replay_sample(&b, &r, 6, sl) == MCL_ERR_INVALID, "6 of 5 refused");
    mcl_cl_replay_free(&b);
    mcl_cl_replay_free(&b2);
    CHECK(mcl_cl_replay_init(&b, 0) == MCL_ERR_INVALID, "capacity 0 refused");

    /* uniform inclusion: 100 offers into 10 slots, 2000 streams; each example's frequency
     * 0.1, binomial std sqrt(0.1·0.9/2000) = 0.0067: 0.1 ± 0.035 (> 5 std) for every k */
    int count[100] = {0};
    mcl_cl_replay u;
    mcl_cl_replay_init(&u, 10);
    for (int t = 0; t < 2000; t++) {
        u.n = 0;
        u.seen = 0;
        mcl_rng_init(&r, SEED, 100 + (uint64_t)t);
        for (int k = 0; k < 100; k++) {
            int s = mcl_cl_replay_offer(&u, &r);
            if (s >= 0) u.lab[s] = k;
        }
        for (int i = 0; i < 10; i++) count[u.lab[i]]++;
    }
    int worst = 0;
    for (int k = 0; k < 100; k++)
        if (abs(count[k] - 200) > abs(count[worst] - 200)) worst = k;
    CHECK(fabs(count[worst] / 2000.0 - 0.1) < 0.035, "reservoir uniform: worst example %d kept %.3f of runs", worst,
          count[worst] / 2000.0);
    mcl_cl_replay_free(&u);
}

/* ------------------------------------------------------------------ spec parsing */

static void test_parse(void)
{
    mcl_baseline_config c;
    char err[512];
    CHECK(mcl_baseline_parse("ewc:lambda=100,lr=0.01,epochs=5,optim=sgd", &c, err, sizeof err) == MCL_OK &&
              c.method == MCL_BASELINE_EWC && c.ewc_lambda == 100.0f && c.lr == 0.01f && c.epochs == 5 &&
              c.optim == MCL_OPTIM_SGD,
          "ewc spec: %s", err);
    CHECK(mcl_baseline_parse("ewc-online:gamma=0.5,optim=adam", &c, err, sizeof err) == MCL_OK &&
              c.method == MCL_BASELINE_EWC_ONLINE && c.ewc_gamma == 0.5f && c.optim == MCL_OPTIM_ADAM &&
              c.lr == 3e-3f && c.epochs == 5,
          "ewc-online spec, Adam's defaults: %s", err);
    CHECK(mcl_baseline_parse("si:c=0.1,xi=0.01", &c, err, sizeof err) == MCL_OK && c.method == MCL_BASELINE_SI &&
              c.si_c == 0.1f && c.si_xi == 0.01f && c.lr == 0.1f && c.epochs == 25,
          "si spec, SGD's defaults: %s", err);
    CHECK(mcl_baseline_parse("lwf:T=4,lambda=3", &c, err, sizeof err) == MCL_OK && c.method == MCL_BASELINE_LWF &&
              c.lwf_t == 4.0f && c.lwf_lambda == 3.0f && c.ewc_lambda == 100.0f,
          "lwf spec: %s", err);
    CHECK(mcl_baseline_parse("replay:buffer=20,replay-batch=4,regime=full", &c, err, sizeof err) == MCL_OK &&
              c.method == MCL_BASELINE_REPLAY && c.buffer == 20 && c.replay_batch == 4 &&
              c.regime == MCL_BASELINE_FULL,
          "replay spec: %s", err);
    CHECK(mcl_baseline_parse("adam", &c, err, sizeof err) == MCL_OK && c.method == MCL_BASELINE_PLAIN &&
              c.optim == MCL_OPTIM_ADAM && c.lr == 3e-3f && c.epochs == 5,
          "adam");
    CHECK(mcl_baseline_parse("sgd:0.05:3", &c, err, sizeof err) == MCL_OK && c.optim == MCL_OPTIM_SGD &&
              c.lr == 0.05f && c.epochs == 3,
          "old form sgd:LR:EPOCHS");
    CHECK(mcl_baseline_parse("sgd:lr=0.2", &c, err, sizeof err) == MCL_OK && c.lr == 0.2f && c.epochs == 25,
          "sgd with keys");
    char name[128];
    mcl_baseline_parse("ewc:lambda=1000,optim=adam,lr=0.001,epochs=3", &c, err, sizeof err);
    mcl_baseline_describe(&c, name, sizeof name);
    CHECK(!strcmp(name, "EWC (lambda 1000, Adam lr 0.001, 3 epochs)"), "describe: '%s'", name);
    mcl_baseline_parse("sgd:0.1:25", &c, err, sizeof err);
    mcl_baseline_describe(&c, name, sizeof name);
    CHECK(!strcmp(name, "SGD (lr 0.1, 25 epochs)"), "describe plain: '%s'", name);
    CHECK(!strcmp(mcl_baseline_method_name(MCL_BASELINE_EWC_ONLINE, MCL_OPTIM_SGD), "ewc-online") &&
              !strcmp(mcl_baseline_method_name(MCL_BASELINE_PLAIN, MCL_OPTIM_ADAM), "adam"),
          "method names");
    /* the keys a spec gives (eval --select keeps them fixed); "c" must not match "c" inside
     * another key's value or "lr" inside "lr2" */
    CHECK(mcl_baseline_spec_gives("si:c=10,lr=0.01", "c") && mcl_baseline_spec_gives("si:c=10,lr=0.01", "lr") &&
              !mcl_baseline_spec_gives("si:c=10,lr=0.01", "epochs") && !mcl_baseline_spec_gives("si:xi=0.1", "c") &&
              !mcl_baseline_spec_gives("ewc:optim=sgd", "c") && !mcl_baseline_spec_gives("sgd", "lr") &&
              mcl_baseline_spec_gives("sgd:0.1:25", "lr") && mcl_baseline_spec_gives("sgd:0.1:25", "epochs") &&
              !mcl_baseline_spec_gives("sgd:0.1:25", "lambda") && mcl_baseline_spec_gives("ewc:epochs=1", "epochs") &&
              !mcl_baseline_spec_gives("replay:replay-batch=4", "batch"),
          "mcl_baseline_spec_gives");

    static const struct {
        const char *spec, *needle;
    } bad[] = {
        {"ewcx", "unknown method"},          {"", "want NAME"},
        {"ewc:lambd=1", "unknown key"},      {"si:lambda=1", "no key 'lambda' for si"},
        {"ewc:gamma=0.5", "no key 'gamma'"}, {"ewc:lambda=-1", "lambda=-1"},
        {"ewc:lambda=abc", "want a float"},  {"ewc:lr=0", "lr=0"},
        {"ewc:epochs=0", "1..10000"},        {"lwf:T=0", "T=0"},
        {"replay:buffer=0", "buffer=0"},     {"ewc:optim=rmsprop", "sgd or adam"},
        {"sgd:optim=adam", "no key 'optim'"}, {"ewc:lambda", "not KEY=VALUE"},
        {"ewc:lambda=1,", "trailing"},       {"ewc:lambda=1,lambda=2", "twice"},
        {"sgd:", "nothing after"},           {"sgd:0.1", "LR:EPOCHS"},
        {"sgd:0.1:x", "EPOCHS"},             {"ewc:regime=most", "shots or full"},
        {"ewc-online:gamma=1.5", "gamma=1.5"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = 0;
        mcl_status st = mcl_baseline_parse(bad[i].spec, &c, err, sizeof err);
        CHECK(st == MCL_ERR_INVALID && strstr(err, bad[i].needle), "spec '%s' refused with '%s': got %d '%s'",
              bad[i].spec, bad[i].needle, (int)st, err);
    }
    CHECK(mcl_baseline_parse(NULL, &c, err, sizeof err) == MCL_ERR_NULL, "NULL spec");
}

/* ------------------------------------------------------------------ end to end */

static mcl_baseline_config cfg_of(const char *spec)
{
    mcl_baseline_config c;
    char err[512] = "";
    CHECK(mcl_baseline_parse(spec, &c, err, sizeof err) == MCL_OK, "spec %s: %s", spec, err);
    c.batch_size = 8;
    c.conv_channels = 8;
    c.seed = SEED;
    return c;
}

static mcl_splitx_eval_cfg split_cfg(mcl_splitx_mode mode, int T, int K, int runs)
{
    mcl_splitx_eval_cfg sc;
    memset(&sc, 0, sizeof sc);
    sc.split.n_tasks = T;
    sc.split.classes_per_task = 2;
    sc.split.k_shot = K;
    sc.split.mode = mode;
    sc.n_runs = runs;
    sc.normalize = 1;
    return sc;
}

static int all_finite(const mcl_cl_result *r)
{
    const int T = r->n_tasks;
    int ok = 1;
    for (int64_t k = 0; k < (int64_t)r->n_runs * T * T; k++) {
        const int i = (int)(k % (T * T)) / T, j = (int)(k % T);
        if (j <= i) ok &= isfinite(r->acc[k]) && r->acc[k] >= 0.0 && r->acc[k] <= 1.0;
    }
    return ok && isfinite(r->mean.acc);
}

static void test_end_to_end(mcl_ctx *ctx, const mcl_dataset *train, const mcl_dataset *test)
{
    /* class-incremental 2-task split, Adam for all: R[1][0] (task A after B) */
    const char *specs[] = {"adam:lr=0.003,epochs=15",
                           "ewc:optim=adam,lr=0.003,epochs=15,lambda=100000",
                           "ewc-online:optim=adam,lr=0.003,epochs=15,lambda=100000,gamma=0.9",
                           "si:optim=adam,lr=0.003,epochs=15,c=100",
                           "lwf:optim=adam,lr=0.003,epochs=15,lambda=1,T=2",
                           "replay:optim=adam,lr=0.003,epochs=15,buffer=40,replay-batch=8"};
    const int n = (int)(sizeof specs / sizeof specs[0]);
    double a_after_b[8] = {0}, b_after_b[8] = {0};
    mcl_splitx_eval_cfg sc = split_cfg(MCL_SPLITX_CLASS, 2, 10, 1);
    sc.n_outputs = 4;
    for (int k = 0; k < n; k++) {
        mcl_baseline_config c = cfg_of(specs[k]);
        mcl_cl_result r, r2;
        mcl_status st = mcl_baseline_eval_splitx(ctx, &c, train, test, &sc, &r);
        CHECK(st == MCL_OK, "%s: %s", specs[k], mcl_ctx_error(ctx));
        if (st != MCL_OK) continue;
        CHECK(all_finite(&r), "%s: finite accuracies", specs[k]);
        a_after_b[k] = r.acc[2];
        b_after_b[k] = r.acc[3];
        printf("  %-66s R00 %.3f R10 %.3f R11 %.3f\n", specs[k], r.acc[0], r.acc[2], r.acc[3]);
        st = mcl_baseline_eval_splitx(ctx, &c, train, test, &sc, &r2);
        CHECK(st == MCL_OK && r2.acc[0] == r.acc[0] && r2.acc[2] == r.acc[2] && r2.acc[3] == r.acc[3],
              "%s: the same seed gives the same result", specs[k]);
        mcl_cl_result_free(&r);
        mcl_cl_result_free(&r2);
    }
    /* plain Adam forgets task A in class-incremental learning; a huge EWC λ pins the weights
     * learned on A, and a buffer that holds all of A's 20 examples replays it */
    CHECK(a_after_b[1] >= a_after_b[0], "EWC lambda 1e5 keeps task A at least as well as Adam (%.3f vs %.3f)",
          a_after_b[1], a_after_b[0]);
    CHECK(a_after_b[2] >= a_after_b[0], "online EWC lambda 1e5 keeps task A at least as well as Adam (%.3f vs %.3f)",
          a_after_b[2], a_after_b[0]);
    CHECK(a_after_b[5] > a_after_b[0], "replay keeps task A better than Adam (%.3f vs %.3f)", a_after_b[5],
          a_after_b[0]);
    CHECK(b_after_b[0] > 0.9, "Adam learns task B (%.3f)", b_after_b[0]);

    /* SI with c = 0 and EWC with λ = 0 are plain Adam, bit for bit (the penalty path adds 0) */
    mcl_baseline_config c0 = cfg_of("ewc:optim=adam,lr=0.003,epochs=15,lambda=0");
    mcl_cl_result r0;
    if (mcl_baseline_eval_splitx(ctx, &c0, train, test, &sc, &r0) == MCL_OK) {
        CHECK(r0.acc[2] == a_after_b[0] && r0.acc[3] == b_after_b[0], "EWC lambda 0 = Adam");
        mcl_cl_result_free(&r0);
    }

    /* full-data regime: every training image of the task's classes (20 per class here) */
    mcl_baseline_config cf = cfg_of("sgd:lr=0.05,epochs=3,regime=full");
    mcl_splitx_eval_cfg sd = split_cfg(MCL_SPLITX_DOMAIN, 2, 2, 1);
    mcl_cl_result rf;
    mcl_status st = mcl_baseline_eval_splitx(ctx, &cf, train, test, &sd, &rf);
    CHECK(st == MCL_OK && all_finite(&rf), "regime full: %s", mcl_ctx_error(ctx));
    if (st == MCL_OK) printf("  regime full, domain 2 tasks: R00 %.3f R11 %.3f\n", rf.acc[0], rf.acc[3]);
    mcl_cl_result_free(&rf);
    st = mcl_baseline_eval_splitx(ctx, &cf, train, train, &sd, &rf);
    CHECK_ERR("regime full queried on its training set", ctx, TU_ST(MCL_ERR_INVALID), "cannot be queried");
    mcl_ctx_clear_error(ctx);
    mcl_class_pool pools[2] = {{test, NULL, 0}, {test, NULL, 0}};
    mcl_seq_eval_cfg q;
    memset(&q, 0, sizeof q);
    q.n_way = 2;
    q.k_shot = 2;
    q.n_tasks = 2;
    q.n_runs = 1;
    q.n_episodes = 1;
    q.normalize = 1;
    st = mcl_baseline_eval_seq(ctx, &cf, pools, &q, &rf);
    CHECK_ERR("regime full on task sequences", ctx, TU_ST(MCL_ERR_INVALID), "Split-X");
    mcl_ctx_clear_error(ctx);
    /* every method on task sequences (same shots) */
    q.n_episodes = 2;
    for (int k = 1; k < n; k++) {
        mcl_baseline_config c = cfg_of(specs[k]);
        c.epochs = 3;
        mcl_cl_result r;
        st = mcl_baseline_eval_seq(ctx, &c, pools, &q, &r);
        CHECK(st == MCL_OK && all_finite(&r), "%s on task sequences: %s", specs[k], mcl_ctx_error(ctx));
        mcl_cl_result_free(&r);
    }
    /* a bad config */
    mcl_baseline_config cb = cfg_of("replay");
    cb.buffer = 0;
    st = mcl_baseline_eval_splitx(ctx, &cb, train, test, &sd, &rf);
    CHECK_ERR("replay buffer 0", ctx, TU_ST(MCL_ERR_INVALID), "replay buffer");
    mcl_ctx_clear_error(ctx);
}

/* The grown search's promise on axis ax (1 epochs, 2 the method's value): the best point has a
 * visited point on each side along that axis (the others equal), or the ladder ends there. */
static int grown_inside(const mcl_baseline_selection *s, int ax)
{
    const mcl_baseline_grid_point *b = &s->point[s->best];
    const double v = ax == 1 ? (double)b->epochs : (double)b->hp;
    for (int dir = -1; dir <= 1; dir += 2) {
        double next;
        if (!mcl_baseline_grid_next(ax, v, dir, &next)) continue;
        int side = 0;
        for (int g = 0; g < s->n; g++) {
            const mcl_baseline_grid_point *p = &s->point[g];
            const double w = ax == 1 ? (double)p->epochs : (double)p->hp;
            const int same = p->lr == b->lr && (ax == 1 ? (p->hp == b->hp || (isnan(p->hp) && isnan(b->hp)))
                                                        : p->epochs == b->epochs);
            if (same && (dir > 0 ? w > v : w < v)) side = 1;
        }
        if (!side) return 0;
    }
    return 1;
}

/* The grid's ladders: the 1-3 steps of lr and the method's value, epochs doubling, the ends. */
static void test_grid_next(void)
{
    static const struct { int axis; double v; int dir; int ok; double next; } T[] = {
        {0, 1e-3, 1, 1, 3e-3}, {0, 3e-3, 1, 1, 1e-2}, {0, 1e-2, -1, 1, 3e-3}, {0, 3e-3, -1, 1, 1e-3},
        {0, 1.0, 1, 0, 0},     {0, 1e-7, -1, 0, 0},   {2, 1e4, 1, 1, 3e4},    {2, 0.0, -1, 0, 0},
        {2, 0.1, -1, 1, 0.03}, {1, 25, 1, 1, 50},     {1, 1, -1, 0, 0},       {1, 5, -1, 1, 2},
        {1, 200, 1, 0, 0},     {3, 1, 1, 0, 0},
        /* float grid values, slightly off their decimal (0.01f is 0.00999999978) */
        {0, (double)0.01f, 1, 1, 3e-2}, {0, (double)0.1f, 1, 1, 0.3}, {0, (double)3e-3f, 1, 1, 1e-2},
        {0, (double)1e-4f, -1, 1, 3e-5}, {2, (double)1000.0f, 1, 1, 3000},
    };
    for (size_t i = 0; i < sizeof T / sizeof T[0]; i++) {
        double n = -1;
        const int ok = mcl_baseline_grid_next(T[i].axis, T[i].v, T[i].dir, &n);
        CHECK(ok == T[i].ok && (!ok || fabs(n - T[i].next) <= 1e-6 * T[i].next), /* the ladder's values, to float's input error */
              "grid_next(axis %d, %g, %+d) = %d, %g (want %d, %g)", T[i].axis, T[i].v, T[i].dir, ok, n, T[i].ok,
              T[i].next);
    }
}

static void test_select(mcl_ctx *ctx, const mcl_dataset *train, const mcl_dataset *test)
{
    const float *v = NULL;
    int nv = 0;
    const char *name = NULL;
    CHECK(mcl_baseline_method_grid(MCL_BASELINE_EWC, &v, &nv, &name) == MCL_OK && nv == 5 && v[0] == 1.0f &&
              v[4] == 10000.0f && !strcmp(name, "lambda"),
          "EWC lambda grid");
    CHECK(mcl_baseline_method_grid(MCL_BASELINE_SI, &v, &nv, &name) == MCL_OK && nv == 5 && !strcmp(name, "c"),
          "SI c grid");
    CHECK(mcl_baseline_method_grid(MCL_BASELINE_REPLAY, &v, &nv, &name) == MCL_OK && nv == 0 && !name,
          "replay: no own hyperparameter");
    mcl_splitx_eval_cfg sc = split_cfg(MCL_SPLITX_DOMAIN, 2, 4, 1);
    mcl_eval_data val;
    memset(&val, 0, sizeof val);
    val.kind = MCL_EVAL_SPLITX;
    val.train = train;
    val.test = test;
    val.splitx = &sc;
    const float lr[1] = {3e-3f}, hp[2] = {0.0f, 1000.0f};
    const int ep[2] = {1, 3};
    mcl_baseline_config base = cfg_of("si:optim=adam"), best;
    mcl_baseline_selection sel;
    mcl_status st = mcl_baseline_select_hp(ctx, &base, &val, lr, 1, ep, 2, hp, 2, &best, &sel);
    CHECK(st == MCL_OK && sel.n_grid == 4 && sel.n >= 4, "select SI: %s", mcl_ctx_error(ctx));
    if (st == MCL_OK) {
        for (int i = 0; i < sel.n; i++)
            printf("  grid lr %g epochs %d c %g: ACC %.3f%s\n", (double)sel.point[i].lr, sel.point[i].epochs,
                   (double)sel.point[i].hp, sel.point[i].score, i >= sel.n_grid ? " (grown)" : "");
        CHECK(sel.point[0].hp == 0.0f && sel.point[1].hp == 1000.0f && sel.point[2].epochs == 3,
              "grid order: epochs, then the method's value");
        CHECK(best.si_c == sel.point[sel.best].hp && best.epochs == sel.point[sel.best].epochs &&
                  best.method == MCL_BASELINE_SI,
              "best config carries the chosen c");
        CHECK(grown_inside(&sel, 1) && grown_inside(&sel, 2), "the chosen point is not on a grown axis' edge");
        /* the property check fails on a selection whose best sits on an edge nothing probed */
        mcl_baseline_selection bad = sel;
        bad.n = bad.n_grid = 2; /* c 0 and 1000 at epochs 1 only */
        bad.best = 1;
        bad.point[1].score = 2.0;
        CHECK(!grown_inside(&bad, 2), "an unprobed edge best is caught");
    }
    base = cfg_of("replay:optim=adam");
    st = mcl_baseline_select_hp(ctx, &base, &val, lr, 1, ep, 1, NULL, 0, &best, &sel);
    CHECK(st == MCL_OK && sel.n == 1 && isnan(sel.point[0].hp), "replay: one point per (lr, epochs)");
    base = cfg_of("ewc");
    float many[60];
    for (int i = 0; i < 60; i++) many[i] = 1e-3f * (float)(i + 1);
    st = mcl_baseline_select_hp(ctx, &base, &val, many, 60, ep, 2, hp, 3, &best, &sel);
    CHECK_ERR("grid over 256 points", ctx, TU_ST(MCL_ERR_INVALID), "grid");
    mcl_ctx_clear_error(ctx);
}

/* ------------------------------------------------------------------ OpenCL */

static void test_opencl(mcl_ctx *ref, const mcl_dataset *train, const mcl_dataset *test)
{
    mcl_ctx *ocl = NULL;
    char err[256] = "";
    mcl_status st = mcl_ctx_create(&ocl, MCL_BACKEND_OPENCL, NULL, err, sizeof err);
    if (st == MCL_ERR_UNSUPPORTED) {
        printf("OpenCL not available (%s): OpenCL comparison skipped\n", err);
        return;
    }
    if (!CHECK(st == MCL_OK, "the OpenCL backend does not open: %s", err)) return;
    const char *specs[] = {"ewc:optim=adam,lr=0.003,epochs=3,lambda=100", "si:optim=adam,lr=0.003,epochs=3",
                           "lwf:optim=adam,lr=0.003,epochs=3", "replay:optim=adam,lr=0.003,epochs=3,buffer=6"};
    mcl_splitx_eval_cfg sc = split_cfg(MCL_SPLITX_DOMAIN, 2, 6, 1);
    for (int k = 0; k < 4; k++) {
        mcl_baseline_config c = cfg_of(specs[k]);
        mcl_cl_result r1, r2;
        mcl_status s1 = mcl_baseline_eval_splitx(ref, &c, train, test, &sc, &r1);
        mcl_status s2 = mcl_baseline_eval_splitx(ocl, &c, train, test, &sc, &r2);
        int close = s1 == MCL_OK && s2 == MCL_OK;
        /* float rounding in another summation order may flip a near-tie argmax: at most 2 of
         * the 20 test images of a task differ */
        for (int i = 0; close && i < 4; i++)
            close = (isnan(r1.acc[i]) && isnan(r2.acc[i])) || fabs(r1.acc[i] - r2.acc[i]) <= 2.0 / 20.0 + 1e-12;
        CHECK(close, "OpenCL == reference: %s (%s)", specs[k], mcl_ctx_error(ocl));
        mcl_cl_result_free(&r1);
        mcl_cl_result_free(&r2);
    }
    mcl_ctx_free(ocl);
}

int main(void)
{
    tu_begin("test-baselines-cl", SEED);
    mcl_ctx *ctx = tu_ctx_ref();
    test_ewc_by_hand(ctx);
    test_online_decay();
    test_si_quadratic(ctx);
    test_lwf(ctx);
    test_replay();
    test_parse();
    test_grid_next();
    mcl_dataset *train = make_ds("synth-train", 20, 1);
    mcl_dataset *test = make_ds("synth-test", 10, 2);
    if (train && test) {
        test_end_to_end(ctx, train, test);
        test_select(ctx, train, test);
        test_opencl(ctx, train, test);
    }
    mcl_dataset_free(train);
    mcl_dataset_free(test);
    mcl_ctx_free(ctx);
    return tu_summary();
}
