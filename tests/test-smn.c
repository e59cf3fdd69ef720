/* test-smn.c — Sparse Meta Networks (src/nn/metanet.c, src/models/smn/) on tiny sizes:
 *   - the write of a fast step against a host oracle in double (I, z, the Philox mask, the
 *     preprocessing, g_φ); the same oracle with β2 dropped or with another mask differs, so
 *     the check can fail;
 *   - the window's rebuild of M_{k-1} from its logged sparse writes equals the incrementally
 *     written M bit for bit (the loss through either is the same float);
 *   - finite differences through φ (and W) across a whole k = 3 window against the backward;
 *   - reference vs OpenCL over one k = 3 window, the mlp agent and the resnet: the loss, every
 *     gradient, and the written set of the fast weights (skipped only without an OpenCL
 *     device);
 *   - the window log is sparse: its bytes against a dense version's;
 *   - online runs of every agent kind on a short WCST stream.
 * Seed printed first; tolerances next to each check.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metanet.h"
#include "ops.h"
#include "params.h"
#include "rng.h"
#include "smn.h"
#include "smn_train.h"
#include "testutil.h"

#define SEED 20261124ULL
#define ROWS 4
/* OpenCL vs reference: float32 sums in other orders through a few layers. */
#define OCL_ATOL 1e-4
#define OCL_RTOL 1e-3

static void mlp_cfg(mcl_smn_config *c)
{
    mcl_smn_config_default(c);
    c->arch = MCL_SMN_MLP;
    c->in_dim = 6;
    c->hidden = 8;
    c->layers = 1;
    c->n_out = 3;
    c->value_head = 0;
    c->k = 3;
    const mcl_metanet_hyper h = {0.5f, 0.9f, 0.5f, 0.5f};
    c->train_h = c->eval_h = h;
    c->meta_hidden = 5;
    c->seed = 7;
}

static void resnet_cfg(mcl_smn_config *c)
{
    mlp_cfg(c);
    c->arch = MCL_SMN_RESNET;
    c->width = 2;
}

/* g_φ starts at 0 (its output layer is zero-initialized): give every output layer random
 * values so that the writes are not trivial. */
static mcl_smn *tiny_model(mcl_ctx *ctx, const mcl_smn_config *c)
{
    mcl_smn *m = mcl_smn_create(ctx, c);
    for (int l = 0; m && l < mcl_metanet_count(m->mn); l++) {
        mcl_tensor *const *phi = mcl_metanet_phi(m->mn, l);
        mcl_tensor_randn(phi[4], SEED, 200 + 2 * (uint64_t)l, 0.0f, 0.3f);
        mcl_tensor_randn(phi[5], SEED, 201 + 2 * (uint64_t)l, 0.0f, 0.1f);
    }
    return m;
}

/* Inputs of step j: N(0, 1) from stream 100 + j; labels (r + j) mod n_out. */
static void step_data(mcl_ctx *ctx, const mcl_smn_config *c, int j, mcl_tensor **x, mcl_tensor **y)
{
    const int64_t xs4[4] = {ROWS, 1, 32, 32}, xs2[2] = {ROWS, c->in_dim}, ys[1] = {ROWS};
    *x = c->arch == MCL_SMN_MLP ? mcl_tensor_create(ctx, 2, xs2) : mcl_tensor_create(ctx, 4, xs4);
    *y = mcl_tensor_create(ctx, 1, ys);
    mcl_tensor_randn(*x, SEED, 100 + (uint64_t)j, 0.0f, 1.0f);
    float lab[ROWS];
    for (int r = 0; r < ROWS; r++) lab[r] = (float)((r + j) % c->n_out);
    mcl_tensor_write(*y, lab, ROWS);
}

static mcl_tensor *step_loss(mcl_smn *m, mcl_smn_mode mode, int j)
{
    mcl_tensor *x, *y, *lg = NULL;
    step_data(m->ctx, &m->cfg, j, &x, &y);
    mcl_tensor *loss = mcl_smn_forward(m, mode, x, ROWS, &lg, NULL) == MCL_OK ? mcl_cross_entropy(m->ctx, lg, y) : NULL;
    mcl_tensor_free(x);
    mcl_tensor_free(y);
    return loss;
}

/* The k - 1 fast steps of a window (logged). */
static int fast_steps(mcl_smn *m)
{
    if (mcl_metanet_window_begin(m->mn) != MCL_OK) return 0;
    for (int j = 0; j < m->cfg.k - 1; j++) {
        const size_t mark = mcl_tape_mark(m->ctx);
        mcl_tensor *l = step_loss(m, MCL_SMN_FAST_STEP, j);
        if (!l || mcl_metanet_write(m->mn, l, mark, &m->cfg.train_h, 1) != MCL_OK) return 0;
    }
    return 1;
}

static float item(mcl_tensor *t) { return t ? mcl_tensor_item(t, 0) : NAN; }

static float *read_all(const mcl_tensor *t)
{
    const int64_t n = mcl_tensor_numel(t);
    float *v = malloc((size_t)n * sizeof *v);
    if (v && mcl_tensor_read(t, v, n) != MCL_OK) {
        free(v);
        return NULL;
    }
    return v;
}

/* ---------------------------------------------------------------- the write's oracle */

static double lrelu(double a, double s) { return a > 0 ? a : s * a; }

/* The expected fast weight after one write (metanet.h), in double. */
static void oracle_write(const float *mprev, const float *iprev, const float *g, int64_t n, const mcl_metanet_hyper *h,
                         float *const phi[6], int H, float slope, float P, uint64_t seed, uint64_t stream,
                         uint64_t counter, double *out, int drop_beta2)
{
    int64_t *idx = malloc((size_t)n * sizeof *idx);
    const int64_t m = mcl_rng_bernoulli_indices(seed, stream, counter, n, h->p, idx);
    for (int64_t e = 0; e < n; e++) out[e] = mprev[e];
    for (int64_t q = 0; q < m; q++) {
        const int64_t e = idx[q];
        const double I = (double)h->gamma * iprev[e] + (double)h->beta1 * g[e];
        const double z = I + (drop_beta2 ? 0.0 : (double)h->beta2 * g[e]);
        const double thr = exp(-(double)P);
        const double x0 = fabs(z) >= thr ? log(fabs(z)) / P : -1.0;
        const double x1 = fabs(z) >= thr ? (z > 0 ? 1.0 : -1.0) : exp((double)P) * z;
        double h1[64], h2[64], o = phi[5][0];
        for (int a = 0; a < H; a++) h1[a] = lrelu(phi[0][a * 2] * x0 + phi[0][a * 2 + 1] * x1 + phi[1][a], slope);
        for (int a = 0; a < H; a++) {
            double s = phi[3][a];
            for (int b = 0; b < H; b++) s += phi[2][a * H + b] * h1[b];
            h2[a] = lrelu(s, slope);
        }
        for (int a = 0; a < H; a++) o += phi[4][a] * h2[a];
        out[e] = o;
    }
    free(idx);
}

static void test_write_oracle(void)
{
    printf("-- the write of a fast step against the oracle\n");
    char err[256];
    mcl_ctx *ctx = NULL;
    if (!CHECK(mcl_ctx_create(&ctx, MCL_BACKEND_REF, NULL, err, sizeof err) == MCL_OK, "ref context: %s", err)) return;
    mcl_smn_config c;
    mlp_cfg(&c);
    mcl_smn *m = tiny_model(ctx, &c);
    if (!CHECK(m != NULL, "model: %s", mcl_ctx_error(ctx))) return;
    /* one step first, so that I and M are not zero */
    const size_t mark0 = mcl_tape_mark(ctx);
    mcl_tensor *l0 = step_loss(m, MCL_SMN_FAST_STEP, 5);
    CHECK(l0 && mcl_metanet_write(m->mn, l0, mark0, &c.train_h, 0) == MCL_OK, "first write: %s", mcl_ctx_error(ctx));
    mcl_ctx_reset(ctx);
    for (int layer = 0; layer < mcl_metanet_count(m->mn); layer++) {
        mcl_tensor *M = mcl_metanet_fast(m->mn, layer), *I = mcl_metanet_avg(m->mn, layer);
        const int64_t n = mcl_tensor_numel(M);
        float *mprev = read_all(M), *iprev = read_all(I);
        const uint64_t steps = mcl_metanet_steps(m->mn);
        const size_t mark = mcl_tape_mark(ctx);
        mcl_tensor *l = step_loss(m, MCL_SMN_FAST_STEP, 6);
        mcl_tensor *eff = mcl_metanet_effective(m->mn, layer), *g = NULL;
        CHECK(l && mcl_grad_partial(ctx, l, mark, 1, &eff, &g) == MCL_OK, "G by a partial backward");
        float *gh = g ? read_all(g) : NULL;
        CHECK(mcl_metanet_write(m->mn, l, mark, &c.train_h, 0) == MCL_OK, "write: %s", mcl_ctx_error(ctx));
        float *mnew = read_all(M), *ph[6];
        for (int j = 0; j < 6; j++) ph[j] = read_all(mcl_metanet_phi(m->mn, layer)[j]);
        double *want = malloc((size_t)n * sizeof *want), *bad = malloc((size_t)n * sizeof *bad);
        const mcl_metanet_cfg *mc = mcl_metanet_config(m->mn);
        const uint64_t stream = MCL_METANET_MASK_STREAM + (uint64_t)layer;
        oracle_write(mprev, iprev, gh, n, &c.train_h, ph, c.meta_hidden, mc->slope, mc->preproc_p, mc->mask_seed, stream,
                     steps * (uint64_t)n, want, 0);
        int64_t written = 0;
        for (int64_t e = 0; e < n; e++) written += mnew[e] != mprev[e];
        /* g_φ in float against double: a few ulps of O(0.1) outputs */
        CHECK_ARRAY("fast weights after the write", mnew, want, n, 1e-5, 1e-4);
        CHECK(written > n / 4 && written < 3 * n / 4, "layer %d: %lld of %lld elements written (p = 0.5)", layer,
              (long long)written, (long long)n);
        oracle_write(mprev, iprev, gh, n, &c.train_h, ph, c.meta_hidden, mc->slope, mc->preproc_p, mc->mask_seed, stream,
                     steps * (uint64_t)n, bad, 1);
        CHECK(tu_first_mismatch(mnew, bad, n, 1e-5, 1e-4) >= 0, "layer %d: a write without the beta2 term is detected",
              layer);
        oracle_write(mprev, iprev, gh, n, &c.train_h, ph, c.meta_hidden, mc->slope, mc->preproc_p, mc->mask_seed, stream,
                     (steps + 1) * (uint64_t)n, bad, 0);
        CHECK(tu_first_mismatch(mnew, bad, n, 1e-5, 1e-4) >= 0, "layer %d: a write with another mask is detected", layer);
        free(want);
        free(bad);
        for (int j = 0; j < 6; j++) free(ph[j]);
        free(mprev);
        free(iprev);
        free(mnew);
        free(gh);
        mcl_tensor_free(g);
        mcl_ctx_reset(ctx);
    }
    mcl_smn_free(m);
    mcl_ctx_free(ctx);
}

/* smn_write's result at an index set given in another order: idx increasing (the models' sets,
 * mcl_rng_bernoulli_indices; the reference then needs no map of the written elements) and the
 * same set reversed, with zs's rows reversed with it (the map's path). Each entry's value is
 * computed alone (src/ref/smn.c: an entry's values do not depend on its block or lane), so M, gM0
 * and gzs (its rows reversed back) must be the same floats; the phi gradients are sums over the
 * entries in another order: within 1e-5 of each other (float sums of ~100 terms of O(1)). A
 * reversed set whose zs rows are not reversed writes other values there: caught. */
static int run_write(mcl_ctx *ctx, const float *idx, const float *zs, int64_t n, int64_t m, mcl_tensor *const phi[6],
                     const float *m0v, const float *rv, float **out, float **gm0, float **gzs, float **gphi)
{
    const int64_t sm[1] = {n}, sz[2] = {m, 2}, si[1] = {m};
    mcl_params *p = mcl_params_create(ctx);
    mcl_tensor *m0 = mcl_params_add(p, "m0", 1, sm), *z = mcl_params_add(p, "zs", 2, sz);
    mcl_tensor *ix = mcl_tensor_create(ctx, 1, si), *r = mcl_tensor_create(ctx, 1, sm);
    int ok = m0 && z && ix && r && mcl_tensor_write(m0, m0v, n) == MCL_OK && mcl_tensor_write(z, zs, 2 * m) == MCL_OK &&
             mcl_tensor_write(ix, idx, m) == MCL_OK && mcl_tensor_write(r, rv, n) == MCL_OK;
    for (int j = 0; j < 6; j++) mcl_tensor_zero_grad(phi[j]);
    mcl_tensor *y = ok ? mcl_smn_write(ctx, m0, ix, z, phi, 0.01f) : NULL;
    ok = y && mcl_backward(ctx, mcl_sum(ctx, mcl_mul(ctx, y, r))) == MCL_OK;
    if (ok) {
        *out = tu_read(y);
        *gm0 = tu_read(mcl_tensor_grad(m0));
        *gzs = tu_read(mcl_tensor_grad(z));
        float *g = *gphi;
        for (int j = 0; j < 6; j++) {
            float *gj = tu_read(mcl_tensor_grad(phi[j]));
            const int64_t nj = mcl_tensor_numel(phi[j]);
            memcpy(g, gj, (size_t)nj * sizeof *g);
            g += nj;
            free(gj);
        }
    }
    mcl_tensor_free(ix);
    mcl_tensor_free(r);
    mcl_ctx_reset(ctx);
    mcl_params_free(p);
    return ok;
}

static void test_write_orders(void)
{
    printf("-- smn_write with the index set increasing and reversed\n");
    char err[256];
    mcl_ctx *ctx = NULL;
    if (!CHECK(mcl_ctx_create(&ctx, MCL_BACKEND_REF, NULL, err, sizeof err) == MCL_OK, "ref context: %s", err)) return;
    enum { H = 7, N = 300 };
    int64_t *sel = malloc(N * sizeof *sel);
    const int64_t m = mcl_rng_bernoulli_indices(SEED, 41, 0, N, 0.4f, sel);
    float *up = malloc((size_t)m * sizeof *up), *down = malloc((size_t)m * sizeof *down);
    float *zs = malloc((size_t)(2 * m) * sizeof *zs), *zr = malloc((size_t)(2 * m) * sizeof *zr);
    float m0v[N], rv[N];
    mcl_rng rng;
    mcl_rng_init(&rng, SEED, 42);
    for (int64_t e = 0; e < m; e++) {
        up[e] = (float)sel[e];
        down[m - 1 - e] = (float)sel[e];
        for (int c = 0; c < 2; c++) zs[2 * e + c] = mcl_rng_next_normal(&rng);
    }
    for (int64_t e = 0; e < m; e++)
        for (int c = 0; c < 2; c++) zr[2 * (m - 1 - e) + c] = zs[2 * e + c];
    for (int i = 0; i < N; i++) {
        m0v[i] = mcl_rng_next_normal(&rng);
        rv[i] = mcl_rng_next_normal(&rng);
    }
    const int64_t shp[6][2] = {{H, 2}, {H, 0}, {H, H}, {H, 0}, {1, H}, {1, 0}}; /* W1 b1 W2 b2 W3 b3 */
    mcl_tensor *phi[6];
    int64_t nphi = 0;
    for (int j = 0; j < 6; j++) {
        phi[j] = mcl_param_create(ctx, "phi", shp[j][1] ? 2 : 1, shp[j]);
        mcl_tensor_randn(phi[j], SEED, 50 + (uint64_t)j, 0.0f, 0.7f);
        nphi += mcl_tensor_numel(phi[j]);
    }
    float *o[3] = {0}, *g0[3] = {0}, *gz[3] = {0}, *gp[3];
    for (int k = 0; k < 3; k++) gp[k] = malloc((size_t)nphi * sizeof(float));
    printf("   %lld of %d elements written, H = %d\n", (long long)m, N, H);
    const int ok = CHECK(run_write(ctx, up, zs, N, m, phi, m0v, rv, &o[0], &g0[0], &gz[0], &gp[0]) &&
                             run_write(ctx, down, zr, N, m, phi, m0v, rv, &o[1], &g0[1], &gz[1], &gp[1]) &&
                             run_write(ctx, down, zs, N, m, phi, m0v, rv, &o[2], &g0[2], &gz[2], &gp[2]),
                         "three writes: %s", mcl_ctx_error(ctx));
    if (ok) {
        CHECK(memcmp(o[0], o[1], N * sizeof(float)) == 0, "M: the same floats in either order");
        CHECK(memcmp(g0[0], g0[1], N * sizeof(float)) == 0, "gM0: the same floats in either order");
        int same_gzs = 1;
        for (int64_t e = 0; e < m; e++)
            for (int c = 0; c < 2; c++) same_gzs &= gz[0][2 * e + c] == gz[1][2 * (m - 1 - e) + c];
        CHECK(same_gzs, "gzs: the same floats, row for row");
        int64_t bad = tu_first_mismatch_f(gp[1], gp[0], nphi, 1e-5, 1e-5);
        CHECK(bad < 0, "phi gradients within 1e-5 in either order (first mismatch %lld)", (long long)bad);
        CHECK(memcmp(o[0], o[2], N * sizeof(float)) != 0, "zs rows left in the old order: other values, caught");
    }
    for (int k = 0; k < 3; k++) {
        free(o[k]);
        free(g0[k]);
        free(gz[k]);
        free(gp[k]);
    }
    for (int j = 0; j < 6; j++) mcl_tensor_free(phi[j]);
    free(sel);
    free(up);
    free(down);
    free(zs);
    free(zr);
    mcl_ctx_free(ctx);
}

/* ---------------------------------------------------------------- the window */

static void test_window_gradcheck(void)
{
    printf("-- a k = 3 window: rebuild = incremental; finite differences through phi and W\n");
    char err[256];
    mcl_ctx *ctx = NULL;
    if (!CHECK(mcl_ctx_create(&ctx, MCL_BACKEND_REF, NULL, err, sizeof err) == MCL_OK, "ref context: %s", err)) return;
    mcl_smn_config c;
    mlp_cfg(&c);
    mcl_smn *m = tiny_model(ctx, &c);
    if (!CHECK(m && fast_steps(m), "window's fast steps: %s", mcl_ctx_error(ctx))) return;
    mcl_no_grad_begin(ctx);
    const float l_inc = item(step_loss(m, MCL_SMN_FAST_STEP, 2));
    const float l_reb = item(step_loss(m, MCL_SMN_WINDOW_END, 2));
    mcl_no_grad_end(ctx);
    CHECK(l_inc == l_reb && isfinite(l_inc), "loss through the rebuilt M_{k-1} (%.9g) == through the written M (%.9g)",
          (double)l_reb, (double)l_inc);
    uint64_t sp = 0, dn = 0;
    mcl_metanet_log_bytes(m->mn, &sp, &dn);
    CHECK(sp > 0 && sp * 5 < dn, "window log: %llu bytes sparse vs %llu dense (p = 0.5, H = 5)", (unsigned long long)sp,
          (unsigned long long)dn);
    mcl_tensor *loss = step_loss(m, MCL_SMN_WINDOW_END, 2);
    mcl_params_zero_grad(m->params);
    CHECK(loss && mcl_backward(ctx, loss) == MCL_OK, "backward: %s", mcl_ctx_error(ctx));
    /* central differences of the window's last loss, the logged writes held fixed (G is data) */
    const float h = 2e-4f; /* small: with h = 1e-3 a LeakyReLU kink of g_phi fell inside ±h */
    double gmax = 0.0;
    int n_checked = 0, n_bad = 0, caught = 0, n_kink = 0;
    for (int layer = 0; layer < mcl_metanet_count(m->mn); layer++) {
        mcl_tensor *const *phi = mcl_metanet_phi(m->mn, layer);
        mcl_tensor *list[7] = {phi[0], phi[1], phi[2], phi[3], phi[4], phi[5], mcl_metanet_slow(m->mn, layer)};
        for (int q = 0; q < 7; q++) {
            mcl_tensor *p = list[q], *gt = mcl_tensor_grad(p);
            const int64_t n = mcl_tensor_numel(p);
            float *v = read_all(p), *g = gt ? read_all(gt) : calloc((size_t)n, sizeof(float));
            for (int64_t e = 0; e < n; e += (n > 6 ? n / 6 : 1)) {
                const float v0 = v[e];
                mcl_no_grad_begin(ctx);
                const double f0 = item(step_loss(m, MCL_SMN_WINDOW_END, 2));
                v[e] = v0 + h;
                mcl_tensor_write(p, v, n);
                const double fp = item(step_loss(m, MCL_SMN_WINDOW_END, 2));
                v[e] = v0 - h;
                mcl_tensor_write(p, v, n);
                const double fm = item(step_loss(m, MCL_SMN_WINDOW_END, 2));
                mcl_no_grad_end(ctx);
                v[e] = v0;
                mcl_tensor_write(p, v, n);
                const double fd = (fp - fm) / (2.0 * h), fwd = (fp - f0) / h, bwd = (f0 - fm) / h;
                /* float32 losses of O(1): differences of ~1e-7 over 2h = 4e-4, plus O(h^2). Many
                 * entries share one g_phi input (every zero gradient gives z = 0), so a
                 * LeakyReLU kink of g_phi (or a ReLU of the network) can fall inside ±h: then the
                 * one-sided differences disagree, and the backward must match one of them (the
                 * side of the kink it is on); such entries are counted and must stay few. */
                n_checked++;
                const int kink = fabs(fwd - bwd) > 1e-3 + 2e-2 * fmax(fabs(fwd), fabs(bwd));
                n_kink += kink;
                const int ok = kink ? tu_near(g[e], fwd, 1e-3, 5e-2) || tu_near(g[e], bwd, 1e-3, 5e-2)
                                    : tu_near(g[e], fd, 3e-4, 3e-2);
                if (!ok) {
                    n_bad++;
                    printf("  layer %d tensor %d [%lld]: backward %.6g, finite differences %.6g (one-sided %.6g, %.6g)\n",
                           layer, q, (long long)e, (double)g[e], fd, fwd, bwd);
                }
                if (fabs(fd) > 1e-3 && !tu_near(g[(e + 1) % n] * 0.5f, fd, 3e-4, 3e-2)) caught++;
                if (q < 6 && fabs(g[e]) > gmax) gmax = fabs(g[e]);
            }
            free(v);
            free(g);
        }
    }
    CHECK(n_bad == 0, "%d of %d gradient entries (phi and W of every layer) match finite differences", n_checked - n_bad,
          n_checked);
    CHECK(n_kink * 4 <= n_checked, "%d of %d entries had a kink within ±h (checked one-sided)", n_kink, n_checked);
    CHECK(gmax > 1e-3, "the meta-learners get a real gradient through the window (max |d/dphi| = %.3g)", gmax);
    CHECK(caught > 0, "a wrong gradient (another entry's, halved) is told apart from the finite differences (%d)", caught);
    CHECK(mcl_metanet_window_end(m->mn, &c.train_h) == MCL_OK, "window end: %s", mcl_ctx_error(ctx));
    mcl_smn_free(m);
    mcl_ctx_free(ctx);
}

/* ---------------------------------------------------------------- reference vs OpenCL */

typedef struct window_out {
    float loss;
    int n;
    float *g[64];
    int64_t gn[64];
    float *fast[32];
    int64_t fn[32];
    int nf;
} window_out;

static void window_out_free(window_out *o)
{
    for (int i = 0; i < o->n; i++) free(o->g[i]);
    for (int i = 0; i < o->nf; i++) free(o->fast[i]);
}

/* One window on backend `kind`. init[] holds every parameter and state tensor before the
 * window: filled by the first call (init_in = 0), written into the model by the second. 1 =
 * failed, -1 = no such device. */
static int run_window(mcl_backend_kind kind, const mcl_smn_config *c, float **init, int init_in, window_out *o,
                      mcl_smn **keep, mcl_ctx **ctx_keep)
{
    char err[256];
    mcl_ctx *ctx = NULL;
    memset(o, 0, sizeof *o);
    mcl_status st = mcl_ctx_create(&ctx, kind, NULL, err, sizeof err);
    if (st != MCL_OK) {
        printf("cannot open backend %d: %s\n", (int)kind, err);
        return kind == MCL_BACKEND_OPENCL && st == MCL_ERR_UNSUPPORTED ? -1 : 1;
    }
    mcl_smn *m = tiny_model(ctx, c);
    if (!m) return 1;
    for (int i = 0; i < mcl_params_count(m->params) && i < 256; i++) {
        mcl_tensor *p = mcl_params_get(m->params, i);
        if (init_in) mcl_tensor_write(p, init[i], mcl_tensor_numel(p));
        else init[i] = read_all(p);
    }
    if (!fast_steps(m)) return 1;
    mcl_tensor *loss = step_loss(m, MCL_SMN_WINDOW_END, 2);
    if (!loss || mcl_backward(ctx, loss) != MCL_OK) return 1;
    o->loss = item(loss);
    for (int i = 0; i < mcl_params_count(m->params) && o->n < 64; i++) {
        mcl_tensor *p = mcl_params_get(m->params, i), *g = mcl_tensor_grad(p);
        if (!g) continue;
        o->gn[o->n] = mcl_tensor_numel(p);
        o->g[o->n++] = read_all(g);
    }
    for (int l = 0; l < mcl_metanet_count(m->mn); l++) {
        o->fn[o->nf] = mcl_tensor_numel(mcl_metanet_fast(m->mn, l));
        o->fast[o->nf++] = read_all(mcl_metanet_fast(m->mn, l));
    }
    *keep = m;
    *ctx_keep = ctx;
    return 0;
}

static void test_opencl(int arch)
{
    printf("-- reference vs OpenCL over one k = 3 window (%s)\n", arch == MCL_SMN_MLP ? "mlp" : "resnet");
    mcl_smn_config c;
    if (arch == MCL_SMN_MLP) mlp_cfg(&c);
    else resnet_cfg(&c);
    window_out r, o;
    mcl_smn *mr = NULL, *mo = NULL;
    mcl_ctx *cr = NULL, *co = NULL;
    float *init[256] = {0};
    if (!CHECK(run_window(MCL_BACKEND_REF, &c, init, 0, &r, &mr, &cr) == 0, "reference window")) return;
    const int ro = run_window(MCL_BACKEND_OPENCL, &c, init, 1, &o, &mo, &co);
    for (int i = 0; i < 256; i++) free(init[i]);
    if (ro < 0) {
        printf("SKIP: no OpenCL device\n");
    } else if (CHECK(ro == 0, "OpenCL window: %s", co ? mcl_ctx_error(co) : "")) {
        CHECK(tu_near(o.loss, r.loss, OCL_ATOL, OCL_RTOL), "loss: OpenCL %.7g, reference %.7g", (double)o.loss,
              (double)r.loss);
        CHECK(o.n == r.n && r.n > 0, "gradients of %d tensors on both", r.n);
        for (int i = 0; i < r.n && i < o.n; i++) {
            double *want = malloc((size_t)r.gn[i] * sizeof *want);
            for (int64_t e = 0; e < r.gn[i]; e++) want[e] = r.g[i][e];
            char what[96];
            snprintf(what, sizeof what, "gradient of %s", mcl_tensor_name(mcl_params_get(mr->params, i)));
            CHECK_ARRAY(what, o.g[i], want, r.gn[i], OCL_ATOL, OCL_RTOL);
            free(want);
        }
        for (int l = 0; l < r.nf && l < o.nf; l++) {
            int64_t diff = 0;
            for (int64_t e = 0; e < r.fn[l]; e++) diff += (r.fast[l][e] != 0.0f) != (o.fast[l][e] != 0.0f);
            CHECK(diff == 0, "fast weight %d: the same elements written on both backends (%lld differ)", l,
                  (long long)diff);
            double *want = malloc((size_t)r.fn[l] * sizeof *want);
            for (int64_t e = 0; e < r.fn[l]; e++) want[e] = r.fast[l][e];
            char what[64];
            snprintf(what, sizeof what, "fast weight %d after the window", l);
            CHECK_ARRAY(what, o.fast[l], want, r.fn[l], OCL_ATOL, OCL_RTOL);
            free(want);
        }
        window_out_free(&o);
    }
    window_out_free(&r);
    mcl_smn_free(mo);
    mcl_smn_free(mr);
    mcl_ctx_free(co);
    mcl_ctx_free(cr);
}

/* ---------------------------------------------------------------- online runs */

static void test_online_runs(void)
{
    printf("-- online runs of every agent on a short WCST stream\n");
    char err[512];
    mcl_ctx *ctx = NULL;
    if (!CHECK(mcl_ctx_create(&ctx, MCL_BACKEND_REF, NULL, err, sizeof err) == MCL_OK, "ref context: %s", err)) return;
    mcl_run_cfg rc;
    if (!CHECK(mcl_run_cfg_init(&rc, &mcl_smn_family, err, sizeof err) == MCL_OK, "defaults: %s", err)) return;
    mcl_smn_run cfg = *(const mcl_smn_run *)rc.fcfg;
    mcl_run_cfg_free(&rc);
    cfg.model.hidden = 16;
    static const mcl_smn_agent agents[4] = {MCL_SMN_AGENT_ALG1, MCL_SMN_AGENT_FAST_ONLY, MCL_SMN_AGENT_ONLINE,
                                            MCL_SMN_AGENT_OFFLINE};
    for (int a = 0; a < 4; a++) {
        mcl_smn_online_opts o;
        memset(&o, 0, sizeof o);
        o.agent = agents[a];
        o.lr = 1e-3f;
        o.seed = 3;
        o.max_tasks = 2;
        o.max_steps = 9;
        mcl_smn_online_result res;
        mcl_status st = mcl_smn_online_run(ctx, &cfg, &o, &res, err, sizeof err);
        CHECK(st == MCL_OK, "agent %d: %s", a, err);
        if (st != MCL_OK) continue;
        CHECK(res.steps == 9 && res.n_tasks >= 1, "agent %d: 9 episodes (%lld), %d rule(s) seen", a, (long long)res.steps,
              res.n_tasks);
        int64_t cards = 0;
        for (int i = 0; i < res.n_tasks; i++) cards += res.task[i].n;
        CHECK(cards == 9 * 16, "agent %d: every card counted once (%lld)", a, (long long)cards);
        CHECK(res.updates == 9,
              "agent %d: one update per episode (%lld)", a, (long long)res.updates);
        mcl_smn_online_result_free(&res);
    }
    /* a fast-weight agent on a model without fast weights is refused */
    cfg.model.fast = 0;
    mcl_smn_online_opts o;
    memset(&o, 0, sizeof o);
    o.agent = MCL_SMN_AGENT_FAST_ONLY;
    o.max_tasks = 1;
    mcl_smn_online_result res;
    CHECK(mcl_smn_online_run(ctx, &cfg, &o, &res, err, sizeof err) == MCL_ERR_INVALID && strstr(err, "fast"),
          "fast-only agent without fast weights refused: %s", err);
    mcl_ctx_free(ctx);
}

/* ---------------------------------------------------------------- WCST on both backends */

/* The WCST agent acts on the device (ops.def wcst_act): with the same seeds the reference and
 * OpenCL backends draw the same actions (the same uniforms, the same float exp in the draw;
 * the logits agree to the differential tests' limits, so only a uniform within ~1e-6 of a
 * boundary could split them: none does on this fixed seed), so an Algorithm 1 run of 40
 * episodes of 2 cards (rules solved by one perfect episode and switched 1 or 2 later) gives the same per-rule records (cards, hits, perseveration errors) on both. Can
 * fail: another seed's run differs from them. */
static int wcst_run(mcl_backend_kind kind, const mcl_smn_run *cfg, uint64_t seed, mcl_smn_online_result *res)
{
    char err[512];
    mcl_ctx *ctx = NULL;
    mcl_status st = mcl_ctx_create(&ctx, kind, NULL, err, sizeof err);
    if (st == MCL_ERR_UNSUPPORTED) return 77;
    if (!CHECK(st == MCL_OK, "context: %s", err)) return 1;
    mcl_ctx_set_seed(ctx, SEED);
    mcl_smn_online_opts o;
    memset(&o, 0, sizeof o);
    o.agent = MCL_SMN_AGENT_ALG1;
    o.lr = 1e-3f;
    o.seed = seed;
    o.max_tasks = 100;
    o.max_steps = 40;
    st = mcl_smn_online_run(ctx, cfg, &o, res, err, sizeof err);
    CHECK(st == MCL_OK, "%s run: %s", kind == MCL_BACKEND_REF ? "reference" : "OpenCL", err);
    mcl_ctx_free(ctx);
    return st == MCL_OK ? 0 : 1;
}

static int same_records(const mcl_smn_online_result *a, const mcl_smn_online_result *b)
{
    if (a->n_tasks != b->n_tasks || a->steps != b->steps || a->updates != b->updates) return 0;
    for (int i = 0; i < a->n_tasks; i++) {
        const mcl_smn_task_rec *x = &a->task[i], *y = &b->task[i];
        if (x->n != y->n || x->hits != y->hits || x->persev_errors != y->persev_errors || x->steps != y->steps)
            return 0;
    }
    return 1;
}

static void test_wcst_backends(void)
{
    printf("-- WCST: the same actions on the reference and OpenCL backends\n");
    char err[512];
    mcl_run_cfg rc;
    if (!CHECK(mcl_run_cfg_init(&rc, &mcl_smn_family, err, sizeof err) == MCL_OK, "defaults: %s", err)) return;
    mcl_smn_run cfg = *(const mcl_smn_run *)rc.fcfg;
    mcl_run_cfg_free(&rc);
    cfg.model.hidden = 16;
    cfg.episode_len = 2; /* short perfect episodes: rules solved and switched within the run */
    cfg.solve_episodes = 1;
    cfg.switch_within = 2;
    mcl_smn_online_result r, o, o2;
    memset(&r, 0, sizeof r);
    memset(&o, 0, sizeof o);
    memset(&o2, 0, sizeof o2);
    if (wcst_run(MCL_BACKEND_REF, &cfg, 5, &r) != 0) return;
    int s = wcst_run(MCL_BACKEND_OPENCL, &cfg, 5, &o);
    if (s == 77) {
        printf("  no OpenCL device: SKIP\n");
        mcl_smn_online_result_free(&r);
        return;
    }
    if (s == 0 && wcst_run(MCL_BACKEND_OPENCL, &cfg, 6, &o2) == 0) {
        int64_t hits = 0, n = 0;
        for (int i = 0; i < r.n_tasks; i++) hits += r.task[i].hits, n += r.task[i].n;
        printf("  reference: %d rule(s), %lld of %lld cards right; OpenCL: %d rule(s)\n", r.n_tasks,
               (long long)hits, (long long)n, o.n_tasks);
        CHECK(n == 2 * r.steps && r.steps >= 40 && r.n_tasks >= 3, "%lld episodes of 2 cards (%lld), switches seen (%d rules)",
              (long long)r.steps, (long long)n, r.n_tasks);
        CHECK(same_records(&r, &o), "the same per-rule records on both backends (seed 5)");
        CHECK(!same_records(&r, &o2), "another seed's run (6) must differ from them");
    }
    mcl_smn_online_result_free(&r);
    mcl_smn_online_result_free(&o);
    mcl_smn_online_result_free(&o2);
}

int main(void)
{
    tu_begin("test-smn", SEED);
    test_write_oracle();
    test_write_orders();
    test_window_gradcheck();
    test_opencl(MCL_SMN_MLP);
    test_opencl(MCL_SMN_RESNET);
    test_online_runs();
    test_wcst_backends();
    return tu_summary();
}
