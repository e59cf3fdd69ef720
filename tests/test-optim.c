/* test-optim.c — optimizers, schedules and clipping through the public mcl_optim API.
 *
 * Each optimizer case runs 3 steps on a registry of three parameters (w1 [3], w2 [2] get
 * gradients; w3 [2] never does and must not move) and compares every parameter and state
 * slot with a model written here in double (the hyper-parameters are the float values the
 * library gets, widened). The formulas, per element, with g the gradient at step t:
 *
 *   clipping (clip_norm c > 0):  n = ||all grads||_2,  g *= min(1, c / (n + 1e-6))
 *   SGD:    d = g + wd·p;  mom = mu·mom + d;  p -= lr·mom
 *   Adam:   d = g + wd·p;  m = b1·m + (1-b1)·d;  v = b2·v + (1-b2)·d²
 *           p -= lr · (m / (1-b1^t)) / (sqrt(v / (1-b2^t)) + eps)
 *   AdamW:  as Adam with d = g, and the decoupled decay p -= lr·wd·p (old p) in the same step
 *   (Kingma & Ba 2015 Alg. 1; Loshchilov & Hutter 2019 Alg. 2 with the PyTorch lr·wd form.)
 *
 * Tolerance for parameters: 2e-6 absolute + 2e-6 relative. The library works in float32; one
 * step of each update is a handful of roundings (relative 6e-8 each) on values of order 1, so
 * three steps stay below 1e-6. A wrong formula (missing bias correction, coupled instead of
 * decoupled decay, eps inside the sqrt, ...) moves values by >= 1e-4.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metacl.h"
#include "testutil.h"

#define SEED 977u
#define NP 5     /* scalars with gradients: w1 (3) then w2 (2) */
#define NSTEPS 3

static const double ATOL = 2e-6, RTOL = 2e-6;
static const double TU_PI = 3.14159265358979323846;

/* ---- hand model ---- */

static double hand_lr(const mcl_schedule *s, int64_t step)
{
    double st = (double)step, w = (double)s->warmup, base = (double)s->base_lr;
    switch (s->kind) {
    case MCL_SCHED_CONSTANT:
        return base;
    case MCL_SCHED_NOAM: {
        double a = 1.0 / sqrt(st), b = st * pow(w, -1.5);
        return base / sqrt((double)s->d_model) * (a < b ? a : b);
    }
    case MCL_SCHED_COSINE: {
        if (st <= w) return base * st / w;
        double prog = (st - w) / ((double)s->total_steps - w);
        if (prog > 1) prog = 1;
        double lo = (double)s->min_lr;
        return lo + 0.5 * (base - lo) * (1 + cos(TU_PI * prog));
    }
    }
    return NAN;
}

typedef struct hand_state {
    double p[NP], mom[NP], m[NP], v[NP];
} hand_state;

static void hand_step(const mcl_optim_config *cfg, hand_state *h, const double *g_in, int t)
{
    double g[NP];
    memcpy(g, g_in, sizeof g);
    if (cfg->clip_norm > 0) {
        double n2 = 0;
        for (int i = 0; i < NP; i++) n2 += g[i] * g[i];
        double s = (double)cfg->clip_norm / (sqrt(n2) + 1e-6);
        if (s < 1)
            for (int i = 0; i < NP; i++) g[i] *= s;
    }
    double lr = hand_lr(&cfg->sched, t), wd = (double)cfg->weight_decay;
    double b1 = (double)cfg->beta1, b2 = (double)cfg->beta2, eps = (double)cfg->eps;
    const int rms = cfg->kind == MCL_OPTIM_RMSPROP;
    if (rms) { /* RMSProp: no first moment, alpha = beta2 (default 0.99), no bias correction */
        b1 = 0.0;
        if (cfg->beta2 == 0) b2 = (double)0.99f;
    } else if (cfg->beta1 == 0 && cfg->beta2 == 0) { /* documented defaults */
        b1 = (double)0.9f;
        b2 = (double)0.999f;
    }
    if (cfg->eps == 0) eps = (double)1e-8f;
    for (int i = 0; i < NP; i++) {
        if (cfg->kind == MCL_OPTIM_SGD) {
            double d = g[i] + wd * h->p[i];
            h->mom[i] = (double)cfg->momentum * h->mom[i] + d;
            h->p[i] -= lr * h->mom[i];
        } else {
            int decoupled = cfg->kind == MCL_OPTIM_ADAMW;
            double d = decoupled ? g[i] : g[i] + wd * h->p[i];
            h->m[i] = b1 * h->m[i] + (1 - b1) * d;
            h->v[i] = b2 * h->v[i] + (1 - b2) * d * d;
            double mh = rms ? h->m[i] : h->m[i] / (1 - pow(b1, t));
            double vh = rms ? h->v[i] : h->v[i] / (1 - pow(b2, t));
            double p_old = h->p[i];
            h->p[i] = p_old - lr * mh / (sqrt(vh) + eps) - (decoupled ? lr * wd * p_old : 0.0);
        }
    }
}

/* ---- one optimizer case ---- */

static void read_into(const mcl_tensor *t, float *dst, int64_t n)
{
    if (!t || mcl_tensor_read(t, dst, n) != MCL_OK)
        for (int64_t i = 0; i < n; i++) dst[i] = NAN;
}

/* frozen = 1: w3 does not require grad, so every trained parameter gets a gradient and the
 * optimizer takes its packed path (one launch over the registry's flat arena, tape.h);
 * frozen = 0: w3 is trained but never reached, so the per-parameter path runs. */
static void run_case1(mcl_ctx *ctx, const char *name, const mcl_optim_config *cfg,
                      const float init[NP], const float grads[NSTEPS][NP], int frozen)
{
    printf("case %s%s\n", name, frozen ? " (w3 frozen: packed path)" : "");
    const float w3_init[2] = {0.75f, -1.25f};
    mcl_params *P = mcl_params_create(ctx);
    mcl_optim *opt = NULL;
    mcl_tensor *c1 = NULL, *c2 = NULL;
    if (!CHECK(P != NULL, "%s: params_create", name)) return;
    int64_t s3[1] = {3}, s2[1] = {2};
    mcl_tensor *w1 = mcl_params_add(P, "w1", 1, s3);
    mcl_tensor *w2 = mcl_params_add(P, "w2", 1, s2);
    mcl_tensor *w3 = mcl_params_add(P, "w3", 1, s2);
    if (!CHECK(w1 && w2 && w3, "%s: params_add: %s", name, mcl_ctx_error(ctx))) goto done;
    mcl_tensor_write(w1, init, 3);
    mcl_tensor_write(w2, init + 3, 2);
    mcl_tensor_write(w3, w3_init, 2);
    if (frozen) mcl_tensor_requires_grad(w3, 0);

    mcl_status st = mcl_optim_create(ctx, cfg, P, &opt);
    if (!CHECK(st == MCL_OK && opt, "%s: optim_create: %s", name, mcl_ctx_error(ctx))) goto done;
    CHECK(mcl_optim_steps(opt) == 0, "%s: no steps yet", name);

    hand_state h;
    memset(&h, 0, sizeof h);
    for (int i = 0; i < NP; i++) h.p[i] = init[i];

    for (int t = 1; t <= NSTEPS; t++) {
        double g[NP];
        for (int i = 0; i < NP; i++) g[i] = grads[t - 1][i];
        if (t == 1) {
            /* obtain the gradients from a backward: L = sum(w1*c1) + sum(w2*c2) -> grad = c */
            c1 = tu_vec(ctx, 3, grads[0]);
            c2 = tu_vec(ctx, 2, grads[0] + 3);
            mcl_tensor *L = mcl_add(ctx, mcl_sum(ctx, mcl_mul(ctx, w1, c1)),
                                    mcl_sum(ctx, mcl_mul(ctx, w2, c2)));
            CHECK(L && mcl_backward(ctx, L) == MCL_OK, "%s: backward: %s", name,
                  mcl_ctx_error(ctx));
            CHECK_TENSOR("grad of sum(w1*c1) is c1", mcl_tensor_grad(w1), g, 3, 0, 0);
            CHECK_TENSOR("grad of sum(w2*c2) is c2", mcl_tensor_grad(w2), g + 3, 2, 0, 0);
            CHECK(mcl_tensor_grad(w3) == NULL, "%s: unused w3 has no grad", name);
            mcl_ctx_reset(ctx);
        } else {
            /* later steps: write the gradient by hand */
            CHECK(mcl_tensor_write(mcl_tensor_grad(w1), grads[t - 1], 3) == MCL_OK &&
                      mcl_tensor_write(mcl_tensor_grad(w2), grads[t - 1] + 3, 2) == MCL_OK,
                  "%s: write grads: %s", name, mcl_ctx_error(ctx));
        }
        st = mcl_optim_step(opt);
        CHECK(st == MCL_OK, "%s: step %d: %s", name, t, mcl_ctx_error(ctx));
        mcl_ctx_reset(ctx);
        hand_step(cfg, &h, g, t);

        float got[NP];
        read_into(w1, got, 3);
        read_into(w2, got + 3, 2);
        char what[96];
        snprintf(what, sizeof what, "%s: params after step %d", name, t);
        CHECK_ARRAY(what, got, h.p, NP, ATOL, RTOL);
        CHECK_NEAR("last lr = schedule(step)", mcl_optim_last_lr(opt), hand_lr(&cfg->sched, t),
                   0, 1e-6);
        if (cfg->clip_norm <= 0) {
            float gg[NP];
            read_into(mcl_tensor_grad(w1), gg, 3);
            read_into(mcl_tensor_grad(w2), gg + 3, 2);
            CHECK(tu_first_mismatch(gg, g, NP, 0, 0) < 0, "%s: the step leaves grads as they are",
                  name);
        }
    }
    CHECK(mcl_optim_steps(opt) == NSTEPS, "%s: steps = %lld", name,
          (long long)mcl_optim_steps(opt));
    {
        double w3_d[2] = {w3_init[0], w3_init[1]};
        CHECK_TENSOR("w3 (no gradient) does not move", w3, w3_d, 2, 0, 0);
    }

    /* state slots */
    {
        float got[NP];
        if (cfg->kind == MCL_OPTIM_SGD) {
            if (cfg->momentum > 0) {
                read_into(mcl_optim_state(opt, 0, 0), got, 3);
                read_into(mcl_optim_state(opt, 1, 0), got + 3, 2);
                CHECK_ARRAY("SGD momentum state", got, h.mom, NP, ATOL, RTOL);
            }
            CHECK(mcl_optim_state(opt, 0, 1) == NULL, "SGD has no slot 1");
        } else {
            read_into(mcl_optim_state(opt, 0, 0), got, 3);
            read_into(mcl_optim_state(opt, 1, 0), got + 3, 2);
            CHECK_ARRAY("Adam m state", got, h.m, NP, ATOL, RTOL);
            read_into(mcl_optim_state(opt, 0, 1), got, 3);
            read_into(mcl_optim_state(opt, 1, 1), got + 3, 2);
            CHECK_ARRAY("Adam v state", got, h.v, NP, 1e-9, RTOL);
        }
    }

    /* the comparison can fail: the parameters differ from the values before the last step */
    {
        float got[NP];
        double before[NP];
        hand_state h2;
        memset(&h2, 0, sizeof h2);
        for (int i = 0; i < NP; i++) h2.p[i] = init[i];
        for (int t = 1; t < NSTEPS; t++) {
            double g[NP];
            for (int i = 0; i < NP; i++) g[i] = grads[t - 1][i];
            hand_step(cfg, &h2, g, t);
        }
        memcpy(before, h2.p, sizeof before);
        read_into(w1, got, 3);
        read_into(w2, got + 3, 2);
        CHECK(tu_first_mismatch(got, before, NP, ATOL, RTOL) >= 0,
              "%s: helper detects the parameters of one step too few", name);
    }

    mcl_optim_zero_grad(opt);
    CHECK(tu_is_zero_or_null(mcl_tensor_grad(w1)) && tu_is_zero_or_null(mcl_tensor_grad(w2)),
          "%s: mcl_optim_zero_grad zeroes the gradients", name);
done:
    mcl_ctx_reset(ctx);
    mcl_optim_free(opt);
    mcl_tensor_free(c1);
    mcl_tensor_free(c2);
    mcl_params_free(P);
}

static void run_case(mcl_ctx *ctx, const char *name, const mcl_optim_config *cfg,
                     const float init[NP], const float grads[NSTEPS][NP])
{
    run_case1(ctx, name, cfg, init, grads, 0);
    run_case1(ctx, name, cfg, init, grads, 1);
}

static mcl_schedule constant_lr(float lr)
{
    mcl_schedule s;
    memset(&s, 0, sizeof s);
    s.kind = MCL_SCHED_CONSTANT;
    s.base_lr = lr;
    return s;
}

static void test_optimizers(mcl_ctx *ctx)
{
    const float init[NP] = {1.0f, -0.5f, 2.0f, 0.25f, -1.5f};
    const float grads[NSTEPS][NP] = {
        {0.5f, -1.0f, 2.0f, -0.25f, 3.0f},
        {0.25f, 1.5f, -1.0f, 0.75f, -2.0f},
        {-0.5f, 0.5f, 1.0f, 1.25f, 0.5f},
    };
    mcl_optim_config c;

    memset(&c, 0, sizeof c);
    c.kind = MCL_OPTIM_SGD;
    c.sched = constant_lr(0.1f);
    run_case(ctx, "sgd", &c, init, grads);

    memset(&c, 0, sizeof c);
    c.kind = MCL_OPTIM_SGD;
    c.sched = constant_lr(0.05f);
    c.momentum = 0.9f;
    c.weight_decay = 0.01f;
    run_case(ctx, "sgd+momentum+wd", &c, init, grads);

    /* Adam with the documented defaults (betas 0 -> 0.9/0.999, eps 0 -> 1e-8). One gradient
     * element is 1e-8 on every step so that eps matters: its update is lr·1e-8/(1e-8+1e-8). */
    {
        float g2[NSTEPS][NP];
        memcpy(g2, grads, sizeof g2);
        for (int t = 0; t < NSTEPS; t++) g2[t][1] = 1e-8f;
        memset(&c, 0, sizeof c);
        c.kind = MCL_OPTIM_ADAM;
        c.sched = constant_lr(0.01f);
        run_case(ctx, "adam(defaults)", &c, init, g2);
    }

    memset(&c, 0, sizeof c);
    c.kind = MCL_OPTIM_ADAM;
    c.sched = constant_lr(0.02f);
    c.beta1 = 0.8f;
    c.beta2 = 0.95f;
    c.eps = 1e-6f;
    c.weight_decay = 0.1f;
    run_case(ctx, "adam+l2", &c, init, grads);

    memset(&c, 0, sizeof c);
    c.kind = MCL_OPTIM_ADAMW;
    c.sched = constant_lr(0.1f);
    c.beta1 = 0.9f;
    c.beta2 = 0.99f;
    c.eps = 1e-8f;
    c.weight_decay = 0.5f;
    run_case(ctx, "adamw", &c, init, grads);

    /* RMSProp (PyTorch's, no momentum): default alpha 0.99, then alpha 0.9 with L2 */
    memset(&c, 0, sizeof c);
    c.kind = MCL_OPTIM_RMSPROP;
    c.sched = constant_lr(0.01f);
    run_case(ctx, "rmsprop(defaults)", &c, init, grads);
    memset(&c, 0, sizeof c);
    c.kind = MCL_OPTIM_RMSPROP;
    c.sched = constant_lr(0.003f);
    c.beta2 = 0.9f;
    c.eps = 1e-6f;
    c.weight_decay = 0.1f;
    run_case(ctx, "rmsprop+l2", &c, init, grads);

    /* SGD driven by a Noam schedule: each step uses lr(t) */
    memset(&c, 0, sizeof c);
    c.kind = MCL_OPTIM_SGD;
    c.sched.kind = MCL_SCHED_NOAM;
    c.sched.base_lr = 1.0f;
    c.sched.d_model = 16.0f;
    c.sched.warmup = 2;
    run_case(ctx, "sgd+noam", &c, init, grads);

    /* clipping inside the optimizer: step 1 gradients have global norm 13 (3-4-12) and are
     * clipped to 6.5 before the update; step 2's norm 1.3 is below and left alone. */
    {
        const float gc[NSTEPS][NP] = {
            {3.0f, 0.0f, 4.0f, 12.0f, 0.0f},
            {0.3f, 0.0f, 0.4f, 1.2f, 0.0f},
            {-6.0f, 8.0f, 0.0f, 0.0f, 24.0f},
        };
        memset(&c, 0, sizeof c);
        c.kind = MCL_OPTIM_SGD;
        c.sched = constant_lr(0.1f);
        c.clip_norm = 6.5f;
        run_case(ctx, "sgd+clip", &c, init, gc);
        /* a hand model that forgets to clip gives different values */
        hand_state a, b;
        memset(&a, 0, sizeof a);
        memset(&b, 0, sizeof b);
        double g[NP];
        for (int i = 0; i < NP; i++) {
            a.p[i] = b.p[i] = init[i];
            g[i] = gc[0][i];
        }
        hand_step(&c, &a, g, 1);
        mcl_optim_config noclip = c;
        noclip.clip_norm = 0;
        hand_step(&noclip, &b, g, 1);
        CHECK(fabs(a.p[3] - b.p[3]) > 0.5, "clipping changes the first step (%g vs %g)", a.p[3],
              b.p[3]);
    }
}

/* ---- schedules ---- */

static void test_schedules(void)
{
    mcl_schedule s;
    char eb[128];

    s = constant_lr(0.003f);
    CHECK(mcl_schedule_check(&s, eb, sizeof eb) == MCL_OK, "constant schedule is valid");
    CHECK_NEAR("constant lr(1)", mcl_schedule_lr(&s, 1), (double)0.003f, 0, 0);
    CHECK_NEAR("constant lr(1000)", mcl_schedule_lr(&s, 1000), (double)0.003f, 0, 0);

    /* Noam: base 2, d 64, w 100: lr = 2/8 · min(s^-0.5, s/1000)
     *   s = 1:   0.25 · 0.001 = 2.5e-4;  s = w = 100: 0.25 · 0.1 = 0.025;
     *   s = 4w:  0.25 · 400^-0.5 = 0.25/20 = 0.0125 */
    memset(&s, 0, sizeof s);
    s.kind = MCL_SCHED_NOAM;
    s.base_lr = 2.0f;
    s.d_model = 64.0f;
    s.warmup = 100;
    CHECK(mcl_schedule_check(&s, eb, sizeof eb) == MCL_OK, "Noam schedule is valid: %s", eb);
    CHECK_NEAR("Noam lr(1)", mcl_schedule_lr(&s, 1), 2.5e-4, 0, 1e-6);
    CHECK_NEAR("Noam lr(w)", mcl_schedule_lr(&s, 100), 0.025, 0, 1e-6);
    CHECK_NEAR("Noam lr(4w)", mcl_schedule_lr(&s, 400), 0.0125, 0, 1e-6);
    CHECK_NEAR("Noam lr(50) (warm-up, linear)", mcl_schedule_lr(&s, 50), 0.0125, 0, 1e-6);
    CHECK(!tu_near(mcl_schedule_lr(&s, 400), 0.025, 0, 1e-6),
          "helper detects a wrong Noam value");
    {
        int64_t argmax = 0;
        float best = -1;
        for (int64_t t = 1; t <= 1000; t++) {
            float lr = mcl_schedule_lr(&s, t);
            if (lr > best) {
                best = lr;
                argmax = t;
            }
        }
        CHECK(argmax == 100, "Noam peaks at s = w = 100 (argmax %lld)", (long long)argmax);
    }

    /* cosine: base 1, min 0.1, warm-up 10, total 110.
     *   s <= 10: lr = s/10;   s in (10, 110]: 0.1 + 0.45·(1 + cos(pi·(s-10)/100));  s > 110: 0.1 */
    memset(&s, 0, sizeof s);
    s.kind = MCL_SCHED_COSINE;
    s.base_lr = 1.0f;
    s.min_lr = 0.1f;
    s.warmup = 10;
    s.total_steps = 110;
    CHECK(mcl_schedule_check(&s, eb, sizeof eb) == MCL_OK, "cosine schedule is valid: %s", eb);
    CHECK_NEAR("cosine lr(1) (warm-up)", mcl_schedule_lr(&s, 1), 0.1, 0, 1e-6);
    CHECK_NEAR("cosine lr(5) (warm-up)", mcl_schedule_lr(&s, 5), 0.5, 0, 1e-6);
    CHECK_NEAR("cosine lr(w) = base", mcl_schedule_lr(&s, 10), 1.0, 0, 1e-6);
    {
        float d1 = mcl_schedule_lr(&s, 3) - mcl_schedule_lr(&s, 2);
        float d2 = mcl_schedule_lr(&s, 8) - mcl_schedule_lr(&s, 7);
        CHECK_NEAR("cosine warm-up is linear (equal increments)", d1, d2, 1e-6, 0);
    }
    CHECK_NEAR("cosine half-way = (base+min)/2", mcl_schedule_lr(&s, 60), 0.55, 0, 1e-6);
    CHECK_NEAR("cosine quarter", mcl_schedule_lr(&s, 35),
               0.1 + 0.45 * (1 + cos(TU_PI * 0.25)), 0, 1e-6);
    CHECK_NEAR("cosine end = min_lr", mcl_schedule_lr(&s, 110), (double)0.1f, 0, 1e-6);
    CHECK_NEAR("cosine after the end = min_lr", mcl_schedule_lr(&s, 500), (double)0.1f, 0, 1e-6);
    {
        int mono = 1;
        for (int64_t t = 11; t <= 110; t++)
            if (mcl_schedule_lr(&s, t) > mcl_schedule_lr(&s, t - 1)) mono = 0;
        CHECK(mono, "cosine decays monotonically after the warm-up");
    }
    /* cosine without warm-up */
    s.warmup = 0;
    s.total_steps = 100;
    CHECK(mcl_schedule_check(&s, eb, sizeof eb) == MCL_OK, "cosine with warm-up 0 is valid: %s", eb);
    CHECK_NEAR("cosine(w=0) half-way", mcl_schedule_lr(&s, 50), 0.55, 0, 1e-6);
    CHECK_NEAR("cosine(w=0) end", mcl_schedule_lr(&s, 100), (double)0.1f, 0, 1e-6);
    CHECK(mcl_schedule_lr(&s, 1) <= 1.0f && mcl_schedule_lr(&s, 1) > 0.99f,
          "cosine(w=0) starts near base (%g)", (double)mcl_schedule_lr(&s, 1));

    /* nonsense is rejected with a message, and lr() gives NaN */
    struct {
        const char *what;
        mcl_sched_kind kind;
        int64_t warmup, total;
        float d_model;
    } bad[] = {
        {"cosine with negative warm-up", MCL_SCHED_COSINE, -1, 100, 0},
        {"Noam with negative warm-up", MCL_SCHED_NOAM, -5, 0, 64},
        {"Noam with warm-up 0", MCL_SCHED_NOAM, 0, 0, 64},
        {"Noam with d_model 0", MCL_SCHED_NOAM, 10, 0, 0},
        {"Noam with d_model < 0", MCL_SCHED_NOAM, 10, 0, -4},
        {"cosine with total = warm-up", MCL_SCHED_COSINE, 10, 10, 0},
        {"cosine with total < warm-up", MCL_SCHED_COSINE, 10, 5, 0},
        {"unknown schedule kind", (mcl_sched_kind)42, 1, 10, 1},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        memset(&s, 0, sizeof s);
        s.kind = bad[k].kind;
        s.base_lr = 1.0f;
        s.warmup = bad[k].warmup;
        s.total_steps = bad[k].total;
        s.d_model = bad[k].d_model;
        eb[0] = '\0';
        mcl_status st = mcl_schedule_check(&s, eb, sizeof eb);
        CHECK(st == MCL_ERR_INVALID && eb[0] != '\0', "schedule_check rejects %s (status %d, \"%s\")",
              bad[k].what, (int)st, eb);
        CHECK(isnan(mcl_schedule_lr(&s, 5)), "lr of %s is NaN", bad[k].what);
    }
}

/* ---- clipping ---- */

static void test_clip(mcl_ctx *ctx)
{
    const float v1[2] = {3, 4}, v2[1] = {12}; /* global norm sqrt(9+16+144) = 13 */
    mcl_tensor *g1 = tu_vec(ctx, 2, v1), *g2 = tu_vec(ctx, 1, v2);
    if (!g1 || !g2) goto done;
    mcl_tensor *gs[3] = {g1, NULL, g2}; /* NULL entries are skipped */
    float norm = -1;
    mcl_status st = mcl_clip_grad_norm(ctx, gs, 3, 6.5f, &norm);
    CHECK(st == MCL_OK, "clip_grad_norm: %s", mcl_ctx_error(ctx));
    CHECK_NEAR("pre-clip norm returned", norm, 13.0, 0, 1e-6);
    /* scale = 6.5 / (13 + 1e-6) */
    const double sc = 6.5 / (13.0 + 1e-6);
    double e1[2] = {3 * sc, 4 * sc}, e2[1] = {12 * sc};
    CHECK_TENSOR("g1 clipped", g1, e1, 2, 0, 1e-6);
    CHECK_TENSOR("g2 clipped", g2, e2, 1, 0, 1e-6);
    {
        float *a = tu_read(g1), *b = tu_read(g2);
        if (a && b) {
            double n = sqrt((double)a[0] * a[0] + (double)a[1] * a[1] + (double)b[0] * b[0]);
            CHECK_NEAR("global norm after clipping = max_norm", n, 6.5, 0, 1e-6);
            /* per-tensor clipping would have left g1 (norm 5 < 6.5) alone: detected */
            double unclipped[2] = {3, 4};
            CHECK(tu_first_mismatch(a, unclipped, 2, 0, 1e-6) >= 0,
                  "helper detects per-tensor instead of global clipping");
        }
        free(a);
        free(b);
    }

    /* norm below max: unchanged, bit for bit */
    norm = -1;
    st = mcl_clip_grad_norm(ctx, gs, 3, 20.0f, &norm);
    CHECK(st == MCL_OK, "clip below max: %s", mcl_ctx_error(ctx));
    CHECK_NEAR("norm below max returned", norm, 6.5, 0, 1e-6);
    CHECK_TENSOR("g1 unchanged below max", g1, e1, 2, 0, 1e-6);
    CHECK_TENSOR("g2 unchanged below max", g2, e2, 1, 0, 1e-6);
    {
        float before[3], after[3];
        read_into(g1, before, 2);
        read_into(g2, before + 2, 1);
        st = mcl_clip_grad_norm(ctx, gs, 3, 100.0f, NULL); /* norm_out may be NULL */
        read_into(g1, after, 2);
        read_into(g2, after + 2, 1);
        CHECK(st == MCL_OK && memcmp(before, after, sizeof before) == 0,
              "below max_norm the gradients keep their exact bits");
    }

    /* all-zero gradients: norm 0, no NaN */
    mcl_tensor_fill(g1, 0);
    mcl_tensor_fill(g2, 0);
    norm = -1;
    st = mcl_clip_grad_norm(ctx, gs, 3, 1.0f, &norm);
    double z2[2] = {0, 0};
    CHECK(st == MCL_OK && norm == 0.0f, "zero gradients: norm 0 (%g)", (double)norm);
    CHECK_TENSOR("zero gradients stay zero (no NaN)", g1, z2, 2, 0, 0);
done:
    mcl_ctx_reset(ctx);
    mcl_tensor_free(g1);
    mcl_tensor_free(g2);
}

int main(void)
{
    tu_begin("test-optim", SEED);
    mcl_ctx *ctx = tu_ctx_ref();
    mcl_ctx_set_seed(ctx, SEED);

    test_schedules();
    test_clip(ctx);
    test_optimizers(ctx);

    CHECK(mcl_ctx_status(ctx) == MCL_OK, "no stray error: %s", mcl_ctx_error(ctx));
    mcl_ctx_free(ctx);
    return tu_summary();
}
