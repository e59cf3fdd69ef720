/* test-mlp.c — end-to-end learning on the reference backend.
 *
 * Task: 2-D points in 4 classes. Eight Gaussian blobs (std 0.3) sit on a circle of radius 2
 * at angles k·45°; blob k belongs to class k mod 4, so every class is two OPPOSITE blobs and
 * the classes are not linearly separable (a linear model cannot beat ~0.5). Neighbouring blobs
 * are 1.53 apart (2.55 std to the midpoint), so the Bayes accuracy is about 0.99.
 * Chance level: 0.25.
 *
 * Model: MLP 2 -> 64 -> 64 -> 4 (matmul + bias_add + relu), weights N(0, 1/fan_in), biases 0,
 * all in a parameter registry; mcl_cross_entropy; mcl_backward; Adam (lr 0.01) via mcl_optim;
 * mcl_ctx_reset every step. 512 training points in mini-batches of 128 (mcl_slice of the
 * data, in order), 512 held-out points.
 *
 * Pass: after 300 steps the loss over the whole training set (evaluated under no-grad before
 * and after training) has fallen by a factor >= 10 (from ~ln 4 = 1.39) and held-out accuracy
 * (argmax of the logits, computed here in C) is > 0.9.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metacl.h"
#include "testutil.h"

#define SEED 4242u
#define NPTS 512
#define NCLS 4
#define HID 64
#define STEPS 300
#define BATCH 128

static const double PI = 3.14159265358979323846;

/* points and labels from Philox stream `stream` */
static void make_data(uint64_t seed, uint64_t stream, float *x, float *y, int n)
{
    mcl_rng r;
    mcl_rng_init(&r, seed, stream);
    for (int i = 0; i < n; i++) {
        int blob = (int)mcl_rng_next_below(&r, 8);
        double ang = blob * PI / 4;
        x[2 * i] = (float)(2.0 * cos(ang) + 0.3 * mcl_rng_next_normal(&r));
        x[2 * i + 1] = (float)(2.0 * sin(ang) + 0.3 * mcl_rng_next_normal(&r));
        y[i] = (float)(blob % NCLS);
    }
}

typedef struct mlp {
    mcl_params *P;
    mcl_tensor *W[3], *b[3];
} mlp;

static int mlp_init(mcl_ctx *ctx, mlp *m, uint64_t seed)
{
    const int64_t dims[4] = {2, HID, HID, NCLS};
    m->P = mcl_params_create(ctx);
    if (!m->P) return 0;
    for (int l = 0; l < 3; l++) {
        char name[16];
        int64_t ws[2] = {dims[l], dims[l + 1]}, bs[1] = {dims[l + 1]};
        snprintf(name, sizeof name, "l%d.W", l);
        m->W[l] = mcl_params_add(m->P, name, 2, ws);
        snprintf(name, sizeof name, "l%d.b", l);
        m->b[l] = mcl_params_add(m->P, name, 1, bs);
        if (!m->W[l] || !m->b[l]) return 0;
        if (mcl_tensor_randn(m->W[l], seed, 100 + (uint64_t)l, 0.0f,
                             (float)(1.0 / sqrt((double)dims[l]))) != MCL_OK)
            return 0;
    }
    return 1;
}

static mcl_tensor *mlp_forward(mcl_ctx *ctx, const mlp *m, mcl_tensor *x)
{
    mcl_tensor *h = x;
    for (int l = 0; l < 3; l++) {
        h = mcl_bias_add(ctx, mcl_matmul(ctx, h, m->W[l], 0, 0), m->b[l]);
        if (l < 2) h = mcl_relu(ctx, h);
    }
    return h; /* [n, 4] logits */
}

/* Mean cross-entropy of the model over (x, y), under no-grad; NaN on error. */
static float full_loss(mcl_ctx *ctx, const mlp *m, mcl_tensor *x, mcl_tensor *y)
{
    mcl_no_grad_begin(ctx);
    mcl_tensor *l = mcl_cross_entropy(ctx, mlp_forward(ctx, m, x), y);
    mcl_no_grad_end(ctx);
    float v = l ? mcl_tensor_item(l, 0) : NAN;
    mcl_ctx_reset(ctx);
    return v;
}

/* Accuracy of argmax(logits) against labels, in C. */
static double accuracy(const float *logits, const float *y, int n, int shift)
{
    int ok = 0;
    for (int i = 0; i < n; i++) {
        int best = 0;
        for (int c = 1; c < NCLS; c++)
            if (logits[i * NCLS + c] > logits[i * NCLS + best]) best = c;
        ok += best == ((int)y[i] + shift) % NCLS;
    }
    return (double)ok / n;
}

int main(void)
{
    tu_begin("test-mlp", SEED);
    mcl_ctx *ctx = tu_ctx_ref();
    mcl_ctx_set_seed(ctx, SEED);

    float *xtr = malloc(sizeof(float) * 2 * NPTS), *ytr = malloc(sizeof(float) * NPTS);
    float *xte = malloc(sizeof(float) * 2 * NPTS), *yte = malloc(sizeof(float) * NPTS);
    mcl_tensor *Xtr = NULL, *Ytr = NULL, *Xte = NULL;
    mcl_optim *opt = NULL;
    float *logits = NULL;
    mlp m;
    memset(&m, 0, sizeof m);
    if (!CHECK(xtr && ytr && xte && yte, "out of memory")) goto done;
    make_data(SEED, 1, xtr, ytr, NPTS);
    make_data(SEED, 2, xte, yte, NPTS);
    {
        int cnt[NCLS] = {0};
        for (int i = 0; i < NPTS; i++) cnt[(int)ytr[i]]++;
        CHECK(cnt[0] > 80 && cnt[1] > 80 && cnt[2] > 80 && cnt[3] > 80,
              "every class present in the training set (%d %d %d %d)", cnt[0], cnt[1], cnt[2],
              cnt[3]);
    }
    int64_t xs[2] = {NPTS, 2}, ys[1] = {NPTS};
    Xtr = tu_tensor_from(ctx, 2, xs, xtr);
    Ytr = tu_tensor_from(ctx, 1, ys, ytr);
    Xte = tu_tensor_from(ctx, 2, xs, xte);
    if (!Xtr || !Ytr || !Xte) goto done;
    if (!CHECK(mlp_init(ctx, &m, SEED), "MLP init: %s", mcl_ctx_error(ctx))) goto done;
    CHECK(mcl_params_count(m.P) == 6, "6 parameter tensors");
    CHECK(mcl_params_numel(m.P) == 2 * 64 + 64 + 64 * 64 + 64 + 64 * 4 + 4,
          "parameter count %lld", (long long)mcl_params_numel(m.P));

    mcl_optim_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.kind = MCL_OPTIM_ADAM;
    cfg.sched.kind = MCL_SCHED_CONSTANT;
    cfg.sched.base_lr = 0.01f;
    if (!CHECK(mcl_optim_create(ctx, &cfg, m.P, &opt) == MCL_OK, "optim_create: %s",
               mcl_ctx_error(ctx)))
        goto done;

    float first = full_loss(ctx, &m, Xtr, Ytr);
    printf("initial training-set loss %.5f\n", (double)first);
    int failed_step = 0;
    for (int step = 1; step <= STEPS; step++) {
        int64_t start = (int64_t)((step - 1) % (NPTS / BATCH)) * BATCH;
        mcl_tensor *xb = mcl_slice(ctx, Xtr, 0, start, BATCH);
        mcl_tensor *yb = mcl_slice(ctx, Ytr, 0, start, BATCH);
        mcl_tensor *loss = mcl_cross_entropy(ctx, mlp_forward(ctx, &m, xb), yb);
        if (!loss || mcl_backward(ctx, loss) != MCL_OK || mcl_optim_step(opt) != MCL_OK) {
            failed_step = step;
            break;
        }
        if (step == 1 || step % 50 == 0)
            printf("step %3d  batch loss %.5f\n", step, (double)mcl_tensor_item(loss, 0));
        mcl_optim_zero_grad(opt);
        mcl_ctx_reset(ctx);
        CHECK(step != STEPS || mcl_ctx_num_temps(ctx) == 0, "no temporaries left after reset");
    }
    if (!CHECK(failed_step == 0, "training step %d failed: %s", failed_step, mcl_ctx_error(ctx)))
        goto done;
    float last = full_loss(ctx, &m, Xtr, Ytr);
    printf("final training-set loss %.5f\n", (double)last);
    CHECK(fabs(first - log(4.0)) < 0.5, "initial loss %.4f is near ln 4 = 1.386", (double)first);
    CHECK(isfinite(last) && last < first / 10, "loss fell by >= 10x: %.5f -> %.5f (factor %.1f)",
          (double)first, (double)last, (double)(first / last));
    CHECK(mcl_optim_steps(opt) == STEPS, "optimizer counted %lld steps",
          (long long)mcl_optim_steps(opt));

    /* held-out accuracy under no-grad */
    mcl_no_grad_begin(ctx);
    size_t tape0 = mcl_tape_size(ctx);
    mcl_tensor *lte = mlp_forward(ctx, &m, Xte);
    CHECK(mcl_tape_size(ctx) == tape0, "evaluation under no-grad records nothing");
    mcl_no_grad_end(ctx);
    logits = lte ? tu_read(lte) : NULL;
    if (!CHECK(logits != NULL, "evaluation forward: %s", mcl_ctx_error(ctx))) goto done;
    double acc = accuracy(logits, yte, NPTS, 0);
    double acc_wrong = accuracy(logits, yte, NPTS, 1);
    printf("held-out accuracy %.4f (chance 0.25)\n", acc);
    CHECK(acc > 0.9, "held-out accuracy %.4f > 0.9 (chance 0.25)", acc);
    /* the accuracy measure can fail: against shifted labels it is far below chance */
    CHECK(acc_wrong < 0.2, "accuracy against wrong labels is low (%.4f)", acc_wrong);
    CHECK(!tu_near(acc_wrong, acc, 0.05, 0), "helper detects a wrong accuracy");
done:
    mcl_ctx_reset(ctx);
    free(logits);
    mcl_optim_free(opt);
    mcl_params_free(m.P);
    mcl_tensor_free(Xtr);
    mcl_tensor_free(Ytr);
    mcl_tensor_free(Xte);
    free(xtr);
    free(ytr);
    free(xte);
    free(yte);
    CHECK(mcl_ctx_status(ctx) == MCL_OK, "no stray error: %s", mcl_ctx_error(ctx));
    mcl_ctx_free(ctx);
    return tu_summary();
}
