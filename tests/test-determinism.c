/* test-determinism.c — the reference backend is bit-reproducible.
 *
 * A small training job (MLP 2 -> 64 -> 64 -> 4 with dropout p = 0.2 after each hidden layer,
 * cross-entropy, Adam, 12 full-batch steps on 512 points) runs in a fresh context each time.
 * Same seed -> identical loss sequence and identical parameter and optimizer-state bits
 * (memcmp); a different context seed (only the dropout masks change) or a different data/init
 * seed -> different bits. The batch is large enough for the GEMMs to take the multi-threaded
 * path, so the check covers the OpenMP code too: the same bits at 1 and at 3 threads and with
 * the team following the load (src/common/threads.h; the team may change between ops), as the
 * thread policy of the command line assumes.
 * Then conv2d's backward alone (its weight and bias sums are kept per fixed chunk of images and
 * added in chunk order; thread 0 keeps its chunks' as one running sum, the other threads one
 * slot a chunk): the gradients of x, w and the bias of shapes whose chunks hold one image or
 * several, first layers (dot products) among them, stored into fresh gradients and added into
 * existing ones, bit for bit the same at 1, 2, 3, 5 and 16 threads; another seed gives other
 * bits.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metacl.h"
#include "testutil.h"
#include "threads.h"
#ifdef _OPENMP
#include <omp.h>
#endif

#define SEED 8675309u
#define NPTS 512
#define HID 64
#define NCLS 4
#define STEPS 12

static const double PI = 3.14159265358979323846;

typedef struct run_result {
    float loss[STEPS];
    float *bits;   /* all parameters, then Adam m and v of every parameter */
    int64_t nbits; /* floats in bits */
    int ok;
} run_result;

static void make_data(uint64_t seed, float *x, float *y)
{
    mcl_rng r;
    mcl_rng_init(&r, seed, 1);
    for (int i = 0; i < NPTS; i++) {
        int blob = (int)mcl_rng_next_below(&r, 8);
        double ang = blob * PI / 4;
        x[2 * i] = (float)(2.0 * cos(ang) + 0.5 * mcl_rng_next_normal(&r));
        x[2 * i + 1] = (float)(2.0 * sin(ang) + 0.5 * mcl_rng_next_normal(&r));
        y[i] = (float)(blob % NCLS);
    }
}

/* One training job; data and init from data_seed, dropout from the context seed ctx_seed. */
static run_result train(uint64_t data_seed, uint64_t ctx_seed)
{
    run_result res;
    memset(&res, 0, sizeof res);
    mcl_ctx *ctx = tu_ctx_ref();
    mcl_ctx_set_seed(ctx, ctx_seed);
    mcl_params *P = mcl_params_create(ctx);
    mcl_optim *opt = NULL;
    mcl_tensor *X = NULL, *Y = NULL;
    float *x = malloc(sizeof(float) * 2 * NPTS), *y = malloc(sizeof(float) * NPTS);
    mcl_tensor *W[3] = {NULL, NULL, NULL}, *b[3] = {NULL, NULL, NULL};
    if (!P || !x || !y) goto done;
    make_data(data_seed, x, y);
    int64_t xs[2] = {NPTS, 2}, ys[1] = {NPTS};
    X = tu_tensor_from(ctx, 2, xs, x);
    Y = tu_tensor_from(ctx, 1, ys, y);
    if (!X || !Y) goto done;
    const int64_t dims[4] = {2, HID, HID, NCLS};
    for (int l = 0; l < 3; l++) {
        char name[16];
        int64_t ws[2] = {dims[l], dims[l + 1]}, bs[1] = {dims[l + 1]};
        snprintf(name, sizeof name, "l%d.W", l);
        W[l] = mcl_params_add(P, name, 2, ws);
        snprintf(name, sizeof name, "l%d.b", l);
        b[l] = mcl_params_add(P, name, 1, bs);
        if (!W[l] || !b[l]) goto done;
        if (mcl_tensor_randn(W[l], data_seed, 100 + (uint64_t)l, 0.0f,
                             (float)(1.0 / sqrt((double)dims[l]))) != MCL_OK)
            goto done;
    }
    mcl_optim_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.kind = MCL_OPTIM_ADAM;
    cfg.sched.kind = MCL_SCHED_CONSTANT;
    cfg.sched.base_lr = 0.01f;
    if (mcl_optim_create(ctx, &cfg, P, &opt) != MCL_OK) goto done;

    for (int step = 0; step < STEPS; step++) {
        mcl_tensor *h = X;
        for (int l = 0; l < 3; l++) {
            h = mcl_bias_add(ctx, mcl_matmul(ctx, h, W[l], 0, 0), b[l]);
            if (l < 2) h = mcl_dropout(ctx, mcl_relu(ctx, h), 0.2f, 1);
        }
        mcl_tensor *loss = mcl_cross_entropy(ctx, h, Y);
        if (!loss || mcl_backward(ctx, loss) != MCL_OK || mcl_optim_step(opt) != MCL_OK) goto done;
        res.loss[step] = mcl_tensor_item(loss, 0);
        mcl_optim_zero_grad(opt);
        mcl_ctx_reset(ctx);
    }

    /* parameters, then m and v of every parameter */
    int np = mcl_params_count(P);
    int64_t per = mcl_params_numel(P);
    res.nbits = 3 * per;
    res.bits = malloc(sizeof(float) * (size_t)res.nbits);
    if (!res.bits) goto done;
    int64_t off = 0;
    int ok = 1;
    for (int slot = -1; slot < 2 && ok; slot++)
        for (int i = 0; i < np && ok; i++) {
            mcl_tensor *t = slot < 0 ? mcl_params_get(P, i) : mcl_optim_state(opt, i, slot);
            int64_t n = t ? mcl_tensor_numel(t) : 0;
            ok = t && off + n <= res.nbits && mcl_tensor_read(t, res.bits + off, n) == MCL_OK;
            off += n;
        }
    res.ok = ok && off == res.nbits;
done:
    if (!res.ok) fprintf(stderr, "training run failed: %s\n", mcl_ctx_error(ctx));
    mcl_ctx_reset(ctx);
    mcl_optim_free(opt);
    mcl_params_free(P);
    mcl_tensor_free(X);
    mcl_tensor_free(Y);
    free(x);
    free(y);
    mcl_ctx_free(ctx);
    return res;
}

/* conv2d shapes: images, channels in, channels out, image side, whether x gets a gradient */
static const int CONV_SHAPES[][5] = {
    {16, 64, 64, 4, 1}, {16, 32, 32, 8, 1}, {16, 24, 24, 16, 1}, {16, 1, 16, 32, 1}, {17, 12, 8, 7, 1},
    {40, 4, 8, 6, 1},   {5, 1, 8, 9, 1},    {33, 2, 4, 5, 1},    {3, 8, 16, 5, 0},   {20, 3, 40, 6, 0},
};
#define N_CONV ((int)(sizeof CONV_SHAPES / sizeof CONV_SHAPES[0]))

/* The gradients of x (when asked), w and the bias of every shape, twice each: stored into
 * fresh gradients (one backward), then added into them (a second one), all into out (NULL on
 * failure; *n its length). Inputs and the loss weights r from seed. */
static float *conv_grads(uint64_t seed, int64_t *n)
{
    mcl_ctx *ctx = tu_ctx_ref();
    float *out = NULL;
    int64_t len = 0, cap = 0;
    int ok = ctx != NULL;
    for (int s = 0; s < N_CONV && ok; s++) {
        const int *c = CONV_SHAPES[s];
        const int64_t xs[4] = {c[0], c[1], c[3], c[3]}, ws[4] = {c[2], c[1], 3, 3}, bs[1] = {c[2]};
        const int64_t rs[4] = {c[0], c[2], c[3], c[3]};
        mcl_params *P = mcl_params_create(ctx);
        mcl_tensor *x = P && c[4] ? mcl_params_add(P, "x", 4, xs) : mcl_tensor_new(ctx, xs[0], xs[1], xs[2], xs[3]);
        mcl_tensor *w = P ? mcl_params_add(P, "w", 4, ws) : NULL, *b = P ? mcl_params_add(P, "b", 1, bs) : NULL;
        mcl_tensor *r = mcl_tensor_new(ctx, rs[0], rs[1], rs[2], rs[3]);
        ok = P && x && w && b && r && mcl_tensor_randn(x, seed, 1 + 4 * (uint64_t)s, 0.0f, 1.0f) == MCL_OK &&
             mcl_tensor_randn(w, seed, 2 + 4 * (uint64_t)s, 0.0f, 0.1f) == MCL_OK &&
             mcl_tensor_randn(b, seed, 3 + 4 * (uint64_t)s, 0.0f, 0.1f) == MCL_OK &&
             mcl_tensor_randn(r, seed, 4 + 4 * (uint64_t)s, 0.0f, 1.0f) == MCL_OK;
        for (int pass = 0; pass < 2 && ok; pass++) {
            mcl_tensor *loss = mcl_sum(ctx, mcl_mul(ctx, mcl_conv2d(ctx, x, w, b, 1, 1), r));
            ok = loss && mcl_backward(ctx, loss) == MCL_OK;
            mcl_tensor *g[3] = {c[4] ? mcl_tensor_grad(x) : NULL, mcl_tensor_grad(w), mcl_tensor_grad(b)};
            for (int k = 0; k < 3 && ok; k++) {
                if (!g[k]) continue;
                const int64_t m = mcl_tensor_numel(g[k]);
                if (len + m > cap) {
                    cap = 2 * (len + m);
                    float *grown = realloc(out, sizeof(float) * (size_t)cap);
                    if (!grown) ok = 0;
                    else out = grown;
                }
                ok = ok && mcl_tensor_read(g[k], out + len, m) == MCL_OK;
                len += m;
            }
        }
        mcl_ctx_reset(ctx);
        mcl_params_free(P);
        if (!c[4]) mcl_tensor_free(x);
        mcl_tensor_free(r);
    }
    if (!ok) fprintf(stderr, "conv2d gradients failed: %s\n", ctx ? mcl_ctx_error(ctx) : "no context");
    mcl_ctx_free(ctx);
    if (!ok) {
        free(out);
        return NULL;
    }
    *n = len;
    return out;
}

static int same_bits(const run_result *a, const run_result *b)
{
    return a->ok && b->ok && a->nbits == b->nbits &&
           memcmp(a->bits, b->bits, sizeof(float) * (size_t)a->nbits) == 0;
}

static int same_losses(const run_result *a, const run_result *b)
{
    return memcmp(a->loss, b->loss, sizeof a->loss) == 0;
}

int main(void)
{
    tu_begin("test-determinism", SEED);
    run_result r1 = train(SEED, SEED);
    run_result r2 = train(SEED, SEED);
    run_result r3 = train(SEED, SEED + 1);     /* other dropout masks only */
    run_result r4 = train(SEED + 1, SEED + 1); /* other data, init and masks */
    CHECK(r1.ok && r2.ok && r3.ok && r4.ok, "all four training runs completed");

    printf("run 1 losses:");
    for (int s = 0; s < STEPS; s += 4) printf(" %.6f", (double)r1.loss[s]);
    printf(" ... %.6f\n", (double)r1.loss[STEPS - 1]);
    int finite = 1;
    for (int s = 0; s < STEPS; s++) finite &= isfinite(r1.loss[s]);
    CHECK(finite, "losses are finite");
    CHECK(r1.loss[STEPS - 1] < r1.loss[0], "the job trains (loss %.4f -> %.4f)",
          (double)r1.loss[0], (double)r1.loss[STEPS - 1]);

    CHECK(same_losses(&r1, &r2), "same seed: identical loss sequence");
    CHECK(same_bits(&r1, &r2), "same seed: identical parameter and optimizer-state bits (%lld floats)",
          (long long)r1.nbits);
    CHECK(!same_losses(&r1, &r3), "other context seed (dropout masks): other losses");
    CHECK(!same_bits(&r1, &r3), "other context seed (dropout masks): other bits");
    CHECK(r1.loss[0] != r3.loss[0], "dropout masks already differ at step 1");
    CHECK(!same_bits(&r1, &r4), "other seed: other bits");
    CHECK(!same_losses(&r1, &r4), "other seed: other losses");

#ifdef _OPENMP
    /* other thread counts, and a team that follows the load: the same bits */
    const int nt = omp_get_max_threads();
    omp_set_num_threads(1);
    run_result t1 = train(SEED, SEED);
    omp_set_num_threads(3);
    run_result t3 = train(SEED, SEED);
    omp_set_num_threads(nt > 1 ? nt : 2);
    mcl_threads_follow_load(1);
    run_result tl = train(SEED, SEED);
    mcl_threads_follow_load(0);
    omp_set_num_threads(nt);
    CHECK(t1.ok && t3.ok && tl.ok, "the runs at 1 and 3 threads and following the load completed");
    CHECK(same_losses(&r1, &t1) && same_bits(&r1, &t1), "1 thread: the bits of %d threads", nt);
    CHECK(same_losses(&r1, &t3) && same_bits(&r1, &t3), "3 threads: the bits of %d threads", nt);
    CHECK(same_losses(&r1, &tl) && same_bits(&r1, &tl), "team following the load: the same bits");
    free(t1.bits);
    free(t3.bits);
    free(tl.bits);
#endif

    /* the comparison detects a single flipped bit */
    if (r2.ok && r2.nbits > 0) {
        unsigned char *p = (unsigned char *)r2.bits + (size_t)(r2.nbits / 2) * sizeof(float);
        *p ^= 1u;
        CHECK(!same_bits(&r1, &r2), "memcmp detects one flipped bit");
        *p ^= 1u;
        CHECK(same_bits(&r1, &r2), "and the flip undone compares equal again");
    }

    free(r1.bits);
    free(r2.bits);
    free(r3.bits);
    free(r4.bits);

    /* conv2d's backward at several thread counts */
    int64_t n1 = 0, nk = 0, no = 0;
#ifdef _OPENMP
    omp_set_num_threads(1);
#endif
    float *g1 = conv_grads(SEED, &n1), *go = conv_grads(SEED + 1, &no);
    CHECK(g1 && go && n1 == no && n1 > 0, "conv2d gradients of %d shapes at 1 thread (%lld floats)", N_CONV,
          (long long)n1);
    CHECK(g1 && go && n1 == no && memcmp(g1, go, sizeof(float) * (size_t)n1) != 0,
          "conv2d: another seed gives other bits (the comparison can fail)");
#ifdef _OPENMP
    const int teams[4] = {2, 3, 5, 16};
    for (int i = 0; i < 4; i++) {
        omp_set_num_threads(teams[i]);
        float *gk = conv_grads(SEED, &nk);
        CHECK(g1 && gk && nk == n1 && memcmp(g1, gk, sizeof(float) * (size_t)n1) == 0,
              "conv2d gradients at %d threads: the bits of 1 thread", teams[i]);
        free(gk);
    }
    omp_set_num_threads(nt);
#endif
    free(g1);
    free(go);
    return tu_summary();
}
