/* test-naive.c — the fast reference backend against the readable oracles of src/ref/naive/,
 * where tests/test-ops does not already compare them:
 *
 *   srwm     forward (y, final state, saved q, k, beta, Δ) and backward (the gradients of x
 *            and of the initial state) on head sizes the test-ops cases do not use, odd ones
 *            included (D = 1, 3, 5, 7, 17: the generic copy of the fast loop; 16, 32, 64: the
 *            specialized copies). test-ops checks the forward for D = 4, 8, 16 and the
 *            backward only by finite differences.
 *   conv2d   the two backward gradients (input, weight + bias) against the direct
 *            convolution's (test-ops checks the backward only by finite differences).
 *   matmul   one shape through the packed GEMM's blocked path.
 *   layer_norm  forward (y, mean, rstd) and backward (x, gamma, beta gradients) on row counts
 *            that are and are not multiples of the fast path's row block (8 rows whose sums
 *            run side by side), one above the OpenMP threshold; the gradients also with 1
 *            and 3 threads (same bits). test-ops checks the backward only by finite differences.
 *   inorm_pool_relu  forward (y, mean, rstd, argmax) and backward (x, gamma, beta gradients) on planes whose pooled rows are shorter
 *            than, as long as and longer than the fast path's block of 16 windows, odd sizes
 *            included, one above the OpenMP threshold, two whose fresh input gradient (above
 *            8 MiB) the backward streams (test-ops checks it on other shapes); and with the
 *            output's dropout in the op (against the naive op then the naive dropout, and
 *            back): one segment, segments, runs of many small planes, a streamed gradient.
 *   inorm_relu, inorm_add_pool_relu  forward (y, mean, rstd, argmax) and backward (x, gamma,
 *            beta, skip gradients) against their naive oracles, and against the ops they
 *            replace on the fast path (instance_norm, relu; instance_norm, add, relu,
 *            maxpool2d): the same bits, forward and backward; odd sides, the ResNet's shapes.
 *   smn_write  forward and backward (the nine gradients, into accumulators that held random
 *            values) against mcl_naive_smn_write/_bwd on one entry, short and whole blocks of
 *            the fast path's 16 lanes, odd H, shuffled entries, every element written, and
 *            700 to 5000 entries in 11 to 64 parts above the OpenMP threshold (gradients with
 *            1 and 3 threads: the same bits); then smn_write_add (i0 = 0, 1), smn_write_eff and
 *            smn_avg_write on the same inputs (test-ops checks them on its own cases with
 *            FT_SUM; here to one or two float roundings).
 *   dropout  forward and backward against mcl_naive_dropout_fwd/bwd: a counter off the Philox
 *            block boundary, segments of 257 (a head and a tail each), 5 elements.
 *   gelu     forward and backward over the whole float range (every GELU_STRIDE-th bit pattern
 *            of the finite floats, both signs, plus a dense sweep of [-14, 14]) against the
 *            double-precision erfc form, in ulps of the exact result rounded to float (the
 *            backward: of its larger term; the fast GELU is float with its own erfc,
 *            src/ref/activation.c).
 *   exp_nonpos  mcl_exp_nonpos (src/ref/exp_nonpos.h: the softmax exponentials of attn_kv,
 *            rel_attn and srwm) against libm's double exp on every EXP_STRIDE-th float of
 *            [-87, 0] and a dense sweep of small positive arguments, in ulps of the exact
 *            result rounded to float; its special values (below -87, -inf, NaN, 0).
 *
 * Error measure (as in test-ops): max |fast - naive| / (max |naive| + 1), per result array.
 * Each comparison is also shown a deliberately wrong fast result (one element moved by 1e-3
 * of the largest value) and must call it a mismatch.
 *
 *   tests/test-naive [--seed N] [-v]     -v also prints a hash of the fast results' bits
 *
 * Inputs come from Philox keyed by the seed (printed first) and a case number.
 */
#define _POSIX_C_SOURCE 200809L
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "metacl.h"
#include "backend.h"
#include "exp_nonpos.h"
#include "naive.h"
#include "rng.h"
#include "testutil.h"

#define DEFAULT_SEED 20240607u

/* Tolerances (max |fast - naive| / (max |naive| + 1); float32 eps = 6e-8). "Observed":
 * the largest error over seeds 1..60 on this machine. */
/* srwm forward: float32 sums of D <= 64 terms per read, carried through L <= 12 steps of
 * state updates (observed 2.7e-7; test-ops' FT_SUM for D <= 16 is 2e-6) */
#define TOL_SRWM_FWD 2e-6
/* srwm backward: the fast backward recovers each step's weights by undoing the float32
 * update, and sums in float32; the naive one keeps every step's weights in double
 * (observed 3.7e-7) */
#define TOL_SRWM_BWD 4e-6
/* conv2d: float32 sums of up to C*k*k = 288 (forward), O*k*k = 297 (input gradient) or
 * B*Ho*Wo = 252 (weight) products in a fixed but different order (observed 8.7e-7 over
 * seeds 1..30) */
#define TOL_CONV 2e-6
/* matmul: float32 fmaf dot products of K = 129 terms; sqrt(K) eps-scale (observed 5.3e-7) */
#define TOL_MATMUL 4e-6
/* layer_norm forward: y is formed in double like the oracle's and rounded once; mean and
 * rstd are the double statistics rounded to float (observed 7.5e-8 over seeds 1..10) */
#define TOL_LN_FWD 4e-7
/* layer_norm backward: the fast one recomputes xhat in float from the float mean and rstd
 * (a few float roundings per term; observed 7.6e-8 over seeds 1..10) */
#define TOL_LN_BWD 1e-6
/* inorm_pool_relu forward (float, src/ref/conv_tail.c): n = fmaf(x, s, t) with s = rstd*gamma
 * and t = beta - mean*s rounded to float, 3 roundings of u = 6e-8 of |x s|, |t|, |n|; mean and
 * var from float lanes of <= 16 terms (random-walk error ~ sqrt(16) u = 4u of their terms'
 * magnitudes, rstd half of var's): ~10u = 6e-7 of max |n| for planes with |mean| <~ std (as
 * here; observed 8.0e-8 over seeds 1..60); the argmax is exact unless two values of a window
 * round to the same float */
#define TOL_IPR_FWD 6e-7
/* inorm_pool_relu backward: gx = fmaf(gn, cg, fmaf(x - m, ca, cb)) (5 roundings of its
 * coefficients and terms, ~5u) from sums of gn and gn (x - m) in float lanes of <= 16 terms
 * (terms of random sign: a lane's error ~ 16/sqrt(2) u of the terms' rms, the total sum
 * ~ 4 sqrt(lanes) rms, so ~3u of |sum|, more where a channel's sum cancels): a few 1e-7
 * (observed 5.0e-7 for beta, 3.2e-7 gamma, 1.2e-7 x over seeds 1..60) */
#define TOL_IPR_BWD 2e-6
/* smn_write (src/ref/smn.c): the same double sums in the same order as the oracle's, the
 * activations rounded to float in both, the value rounded once (observed 3.7e-8 over seeds
 * 1..30) */
#define TOL_SMN_FWD 2e-7
/* smn_write backward: the sums over the entries in the fast path's parts and lanes (double:
 * ~1e-15 apart), rounded once and added to a float accumulator: 2 roundings (observed 9.1e-8) */
#define TOL_SMN_BWD 4e-7
/* smn_write_add, smn_write_eff: the value rounded, then W + v rounded: 2 roundings (observed
 * 5.5e-8) */
#define TOL_SMN_ADD 4e-7
/* smn_avg_write's I = (gamma I) + (beta1 G): three float roundings of values below ~4e-3 (I ~
 * N(0, 1e-6), G ~ N(0, 1e-8) here), so at most ~3 x 6e-8 x 4e-3 = 7e-10 (observed 3.0e-10;
 * the error measure's "+ 1" would hide an error of 1e-4 % of I behind a tolerance of 4e-7) */
#define TOL_SMN_AVG 1e-9
/* smn_avg_write's zs: z = I' + (beta2 G) in float (two more roundings, the sum cancelling at
 * most ~80-fold where |z| >= e^-P), then logf(|z|) / P or e^P z in float (observed 2.2e-7) */
#define TOL_SMN_Z 2e-6
/* gelu: ulps of the exact result (double erfc) rounded to float, where that is a normal float
 * (below FLT_MIN: absolute error in units of FLT_MIN). Forward: the erfc fit (5e-9), the
 * roundings of t, the exp and the final products (observed 5.9 ulp, near a = 0.008, where
 * 1 - T rounds). Backward: the derivative Phi(a) + a phi(a) is a difference for a < 0 that
 * crosses zero at a = -0.75, so its error is counted in ulps of the larger of |Phi(a)|,
 * |a phi(a)| and the result (observed 3.5) */
#define GELU_ULP_FWD 8.0
#define GELU_ULP_BWD 8.0
/* every GELU_STRIDE-th float bit pattern (a prime, so the mantissas vary) */
#define GELU_STRIDE 1021u

/* exp_nonpos: its header's bound, 1 ulp (a Cody-Waite reduction exact in float, the degree-7
 * Taylor polynomial's truncation below 5e-9 relative, and the roundings of eight fmaf and one
 * product; observed 0.91 on every 7th float of [-87, 0]) */
#define EXP_ULP 1.0
/* every EXP_STRIDE-th float bit pattern of [-87, 0] (a prime: 11.5 million arguments) */
#define EXP_STRIDE 97u

static uint64_t g_seed = DEFAULT_SEED;
static int g_verbose;

/* ---- helpers ------------------------------------------------------------------------- */

static void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size);
    if (!p) {
        fprintf(stderr, "test-naive: out of memory\n");
        exit(1);
    }
    return p;
}

/* n values ~ N(mean, std^2) from Philox (seed, stream), Box-Muller. */
static float *randn(int64_t n, uint64_t stream, double std)
{
    float *v = xcalloc((size_t)n, sizeof(float));
    for (int64_t i = 0; i < n; i++) {
        double u1 = 1.0 - mcl_rng_uniform(g_seed, stream, 2 * (uint64_t)i);
        double u2 = mcl_rng_uniform(g_seed, stream, 2 * (uint64_t)i + 1);
        v[i] = (float)(std * sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
    }
    return v;
}

static double err_of(const float *got, const double *want, int64_t n)
{
    double maxd = 0.0, maxw = 0.0;
    for (int64_t i = 0; i < n; i++) {
        if (!isfinite(got[i])) return INFINITY;
        double d = fabs((double)got[i] - want[i]);
        if (d > maxd) maxd = d;
        if (fabs(want[i]) > maxw) maxw = fabs(want[i]);
    }
    return maxd / (maxw + 1.0);
}

/* FNV-1a over the bits of the fast results: one hash for all (printed at the end), one per
 * result array (-v). Builds that should give identical bits can compare them. */
static uint64_t g_hash = 1469598103934665603ull;
static uint64_t hash_floats(const float *v, int64_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (int64_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &v[i], sizeof u);
        for (int b = 0; b < 4; b++) {
            g_hash = (g_hash ^ ((u >> (8 * b)) & 0xffu)) * 1099511628211ull;
            h = (h ^ ((u >> (8 * b)) & 0xffu)) * 1099511628211ull;
        }
    }
    return h;
}

/* Compare fast (a tensor) with naive; also check that a wrong copy is caught. */
static void compare(const char *what, const char *desc, const mcl_tensor *t, const double *want,
                    int64_t n, double tol)
{
    float *got = xcalloc((size_t)n, sizeof(float));
    int rd = mcl_tensor_numel(t) == n && mcl_tensor_read(t, got, n) == MCL_OK;
    CHECK(rd, "%s %s: cannot read the result (%lld values)", what, desc, (long long)n);
    if (!rd) {
        free(got);
        return;
    }
    const uint64_t h = hash_floats(got, n);
    double e = err_of(got, want, n);
    CHECK(e <= tol, "%s %s: error %.3g > tol %.3g", what, desc, e, tol);
    if (g_verbose)
        printf("  %-28s %-24s err %.3g (tol %.3g) bits %016llx\n", what, desc, e, tol,
               (unsigned long long)h);
    /* the deliberately wrong result: the largest element moved by 1e-3 of its size + 1e-3 */
    int64_t im = 0;
    for (int64_t i = 1; i < n; i++)
        if (fabs(want[i]) > fabs(want[im])) im = i;
    got[im] += (float)(1e-3 * (fabs(want[im]) + 1.0));
    CHECK(!(err_of(got, want, n) <= tol), "%s %s: a wrong result is not caught", what, desc);
    free(got);
}

static mcl_tensor *tensor4(mcl_ctx *ctx, int64_t a, int64_t b, int64_t c, int64_t d,
                           const float *v)
{
    const int64_t s[4] = {a, b, c, d};
    return tu_tensor_from(ctx, 4, s, v);
}

/* ---- srwm ------------------------------------------------------------------------------ */

static void test_srwm(mcl_ctx *ctx, int cs, int64_t B, int64_t H, int64_t L, int64_t D)
{
    char desc[64];
    snprintf(desc, sizeof desc, "B%lld H%lld L%lld D%lld", (long long)B, (long long)H,
             (long long)L, (long long)D);
    const int64_t nx = B * H * L * D, ncol[4] = {D, D, D, 4};
    const double ws = 1.0 / sqrt((double)D); /* the paper's init scale N(0, 1/D) */
    float *x = randn(nx, 100 * (uint64_t)cs, 1.0), *gy = randn(nx, 100 * (uint64_t)cs + 1, 1.0);
    float *w0[4], *gwf[4];
    mcl_op_args a;
    memset(&a, 0, sizeof a);
    a.op = MCL_OP_SRWM;
    a.in[0] = tensor4(ctx, B, H, L, D, x);
    for (int i = 0; i < 4; i++) {
        w0[i] = randn(B * H * D * ncol[i], 100 * (uint64_t)cs + 2 + (uint64_t)i, ws);
        gwf[i] = randn(B * H * D * ncol[i], 100 * (uint64_t)cs + 6 + (uint64_t)i, 1.0);
        a.in[1 + i] = tensor4(ctx, B, H, D, ncol[i], w0[i]);
    }
    mcl_no_grad_begin(ctx);
    mcl_status st = mcl_op_run(ctx, &a);
    mcl_no_grad_end(ctx);
    if (!CHECK(st == MCL_OK, "srwm %s: forward failed: %s", desc, mcl_ctx_error(ctx))) goto out;

    /* forward: y, final state, q, k, beta, Δ */
    double *y = xcalloc((size_t)nx, sizeof(double)), *q = xcalloc((size_t)nx, sizeof(double));
    double *k = xcalloc((size_t)nx, sizeof(double));
    double *beta = xcalloc((size_t)(B * H * L * 4), sizeof(double)), *wf[4], *dl[4];
    for (int i = 0; i < 4; i++) {
        wf[i] = xcalloc((size_t)(B * H * D * ncol[i]), sizeof(double));
        dl[i] = xcalloc((size_t)(B * H * L * ncol[i]), sizeof(double));
    }
    mcl_naive_srwm_fwd(B, H, L, D, x, (const float *const *)w0, y, wf, q, k, beta, dl);
    compare("srwm fwd y", desc, a.out[0], y, nx, TOL_SRWM_FWD);
    static const char *const sname[4] = {"srwm fwd final W_y", "srwm fwd final W_q",
                                         "srwm fwd final W_k", "srwm fwd final w_b"};
    static const char *const dname[4] = {"srwm fwd saved Δ_y", "srwm fwd saved Δ_q",
                                         "srwm fwd saved Δ_k", "srwm fwd saved Δ_b"};
    for (int i = 0; i < 4; i++) compare(sname[i], desc, a.out[1 + i], wf[i], B * H * D * ncol[i], TOL_SRWM_FWD);
    compare("srwm fwd saved q", desc, a.out[5], q, nx, TOL_SRWM_FWD);
    compare("srwm fwd saved k", desc, a.out[6], k, nx, TOL_SRWM_FWD);
    compare("srwm fwd saved beta", desc, a.out[7], beta, B * H * L * 4, TOL_SRWM_FWD);
    for (int i = 0; i < 4; i++) compare(dname[i], desc, a.out[8 + i], dl[i], B * H * L * ncol[i], TOL_SRWM_FWD);

    /* backward: gradients of x and of the initial state for random gy and final-state grads */
    a.gout[0] = tensor4(ctx, B, H, L, D, gy);
    a.gin[0] = mcl_tensor_new(ctx, B, H, L, D);
    for (int i = 0; i < 4; i++) {
        a.gout[1 + i] = tensor4(ctx, B, H, D, ncol[i], gwf[i]);
        a.gin[1 + i] = mcl_tensor_new(ctx, B, H, D, ncol[i]);
    }
    st = mcl_op_backward(ctx, &a);
    if (CHECK(st == MCL_OK, "srwm %s: backward failed: %s", desc, mcl_ctx_error(ctx))) {
        double *gx = xcalloc((size_t)nx, sizeof(double)), *gw0[4];
        for (int i = 0; i < 4; i++) gw0[i] = xcalloc((size_t)(B * H * D * ncol[i]), sizeof(double));
        mcl_naive_srwm_bwd(B, H, L, D, x, (const float *const *)w0, gy, (const float *const *)gwf,
                           gx, gw0);
        compare("srwm bwd dL/dx", desc, a.gin[0], gx, nx, TOL_SRWM_BWD);
        static const char *const gname[4] = {"srwm bwd dL/dW_y", "srwm bwd dL/dW_q",
                                             "srwm bwd dL/dW_k", "srwm bwd dL/dw_b"};
        for (int i = 0; i < 4; i++)
            compare(gname[i], desc, a.gin[1 + i], gw0[i], B * H * D * ncol[i], TOL_SRWM_BWD);
        free(gx);
        for (int i = 0; i < 4; i++) free(gw0[i]);
    }
    free(y);
    free(q);
    free(k);
    free(beta);
    for (int i = 0; i < 4; i++) {
        free(wf[i]);
        free(dl[i]);
    }
out:
    for (int i = 0; i < 5; i++) {
        mcl_tensor_free(a.in[i]);
        mcl_tensor_free(a.gout[i]);
        mcl_tensor_free(a.gin[i]);
    }
    free(x);
    free(gy);
    for (int i = 0; i < 4; i++) {
        free(w0[i]);
        free(gwf[i]);
    }
    mcl_ctx_reset(ctx);
}

/* ---- conv2d ---------------------------------------------------------------------------- */

/* The backward of a (run once) with 1 and with 3 OpenMP threads into fresh gradients gin[k],
 * k in ks: the same bits (conv2d: the weight and bias gradients are sums over the images in
 * fixed chunks, added in chunk order; smn_write: the sums over the entries are split into parts
 * that are a function of m alone). (Without OpenMP: nothing to do.) */
static void bwd_threads(mcl_ctx *ctx, mcl_op_args *a, const int *ks, int nk, const char *what, const char *desc)
{
#ifdef _OPENMP
    const int saved = omp_get_max_threads();
    float *got[2][16] = {{NULL}};
    for (int t = 0; t < 2; t++) {
        omp_set_num_threads(t == 0 ? 1 : 3);
        for (int i = 0; i < nk; i++) {
            mcl_tensor_free(a->gin[ks[i]]);
            a->gin[ks[i]] = mcl_tensor_create(ctx, a->in[ks[i]]->ndim, a->in[ks[i]]->shape);
        }
        const mcl_status st = mcl_op_backward(ctx, a);
        CHECK(st == MCL_OK, "%s %s: backward with %d threads failed: %s", what, desc, t ? 3 : 1, mcl_ctx_error(ctx));
        for (int i = 0; i < nk && st == MCL_OK; i++) got[t][i] = tu_read(a->gin[ks[i]]);
    }
    omp_set_num_threads(saved);
    for (int i = 0; i < nk; i++) {
        if (got[0][i] && got[1][i])
            CHECK(memcmp(got[0][i], got[1][i], (size_t)mcl_tensor_numel(a->gin[ks[i]]) * sizeof(float)) == 0,
                  "%s %s: gradient %d differs between 1 and 3 threads", what, desc, ks[i]);
        free(got[0][i]);
        free(got[1][i]);
    }
#else
    (void)ctx;
    (void)a;
    (void)ks;
    (void)nk;
    (void)what;
    (void)desc;
#endif
}

static void test_conv(mcl_ctx *ctx, int cs, const int64_t c[8])
{
    mcl_naive_conv cv;
    mcl_naive_conv_init(&cv, c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]);
    char desc[80];
    snprintf(desc, sizeof desc, "x[%lld,%lld,%lld,%lld] k%lld O%lld s%lld p%lld", (long long)cv.B,
             (long long)cv.C, (long long)cv.H, (long long)cv.W, (long long)cv.k, (long long)cv.O,
             (long long)cv.stride, (long long)cv.pad);
    const int64_t nx = cv.B * cv.C * cv.H * cv.W, nw = cv.O * cv.C * cv.k * cv.k;
    const int64_t no = cv.B * cv.O * cv.Ho * cv.Wo;
    float *x = randn(nx, 5000 + 10 * (uint64_t)cs, 1.0), *w = randn(nw, 5001 + 10 * (uint64_t)cs, 0.5);
    float *b = randn(cv.O, 5002 + 10 * (uint64_t)cs, 1.0), *g = randn(no, 5003 + 10 * (uint64_t)cs, 1.0);
    mcl_op_args a;
    memset(&a, 0, sizeof a);
    a.op = MCL_OP_CONV2D;
    a.in[0] = tensor4(ctx, cv.B, cv.C, cv.H, cv.W, x);
    a.in[1] = tensor4(ctx, cv.O, cv.C, cv.k, cv.k, w);
    a.in[2] = tu_vec(ctx, cv.O, b);
    a.p.i[0] = cv.stride;
    a.p.i[1] = cv.pad;
    mcl_no_grad_begin(ctx);
    mcl_status st = mcl_op_run(ctx, &a);
    mcl_no_grad_end(ctx);
    if (CHECK(st == MCL_OK, "conv2d %s: forward failed: %s", desc, mcl_ctx_error(ctx))) {
        double *out = xcalloc((size_t)no, sizeof(double)), *gx = xcalloc((size_t)nx, sizeof(double));
        double *gw = xcalloc((size_t)nw, sizeof(double)), *gb = xcalloc((size_t)cv.O, sizeof(double));
        mcl_naive_conv2d_fwd(&cv, x, w, b, out);
        compare("conv2d fwd", desc, a.out[0], out, no, TOL_CONV);
        a.gout[0] = tensor4(ctx, cv.B, cv.O, cv.Ho, cv.Wo, g);
        a.gin[0] = mcl_tensor_new(ctx, cv.B, cv.C, cv.H, cv.W);
        a.gin[1] = mcl_tensor_new(ctx, cv.O, cv.C, cv.k, cv.k);
        a.gin[2] = mcl_tensor_new(ctx, cv.O, 0, 0, 0);
        st = mcl_op_backward(ctx, &a);
        if (CHECK(st == MCL_OK, "conv2d %s: backward failed: %s", desc, mcl_ctx_error(ctx))) {
            mcl_naive_conv2d_bwd_input(&cv, g, w, gx);
            mcl_naive_conv2d_bwd_weight(&cv, g, x, gw, gb);
            compare("conv2d bwd dL/dx", desc, a.gin[0], gx, nx, TOL_CONV);
            compare("conv2d bwd dL/dw", desc, a.gin[1], gw, nw, TOL_CONV);
            compare("conv2d bwd dL/dbias", desc, a.gin[2], gb, cv.O, TOL_CONV);
            static const int ks[3] = {0, 1, 2};
            bwd_threads(ctx, &a, ks, 3, "conv2d", desc);
        }
        free(out);
        free(gx);
        free(gw);
        free(gb);
    }
    for (int i = 0; i < 3; i++) {
        mcl_tensor_free(a.in[i]);
        mcl_tensor_free(a.gin[i]);
    }
    mcl_tensor_free(a.gout[0]);
    free(x);
    free(w);
    free(b);
    free(g);
    mcl_ctx_reset(ctx);
}

/* ---- matmul ---------------------------------------------------------------------------- */

static void test_matmul(mcl_ctx *ctx, int64_t M, int64_t K, int64_t N)
{
    char desc[64];
    snprintf(desc, sizeof desc, "%lldx%lldx%lld", (long long)M, (long long)K, (long long)N);
    float *av = randn(M * K, 9000, 1.0), *bv = randn(K * N, 9001, 1.0);
    mcl_tensor *A = mcl_tensor_new(ctx, M, K, 0, 0), *B = mcl_tensor_new(ctx, K, N, 0, 0);
    if (A && B && mcl_tensor_write(A, av, M * K) == MCL_OK && mcl_tensor_write(B, bv, K * N) == MCL_OK) {
        mcl_tensor *C = mcl_matmul(ctx, A, B, 0, 0);
        if (CHECK(C != NULL, "matmul %s: %s", desc, mcl_ctx_error(ctx))) {
            double *want = xcalloc((size_t)(M * N), sizeof(double));
            mcl_naive_matmul(1, M, K, N, 0, 0, av, bv, want);
            compare("matmul", desc, C, want, M * N, TOL_MATMUL);
            free(want);
        }
    } else {
        CHECK(0, "matmul %s: cannot create the inputs", desc);
    }
    mcl_tensor_free(A);
    mcl_tensor_free(B);
    free(av);
    free(bv);
    mcl_ctx_reset(ctx);
}

/* ---- layer_norm ------------------------------------------------------------------------ */

static void test_layer_norm(mcl_ctx *ctx, int cs, int64_t R, int64_t N)
{
    char desc[64];
    snprintf(desc, sizeof desc, "x[%lld,%lld]", (long long)R, (long long)N);
    const double eps = 1e-5;
    float *x = randn(R * N, 7000 + 10 * (uint64_t)cs, 2.0), *g = randn(R * N, 7001 + 10 * (uint64_t)cs, 1.0);
    float *gm = randn(N, 7002 + 10 * (uint64_t)cs, 1.0), *bt = randn(N, 7003 + 10 * (uint64_t)cs, 1.0);
    for (int64_t i = 0; i < R * N; i++) x[i] += (float)(i % N) * 0.25f; /* rows with a mean */
    mcl_op_args a;
    memset(&a, 0, sizeof a);
    a.op = MCL_OP_LAYER_NORM;
    a.p.f[0] = (float)eps;
    const int64_t sx[2] = {R, N}, sv[1] = {N};
    a.in[0] = tu_tensor_from(ctx, 2, sx, x);
    a.in[1] = tu_tensor_from(ctx, 1, sv, gm);
    a.in[2] = tu_tensor_from(ctx, 1, sv, bt);
    mcl_no_grad_begin(ctx);
    mcl_status st = mcl_op_run(ctx, &a);
    mcl_no_grad_end(ctx);
    if (!CHECK(st == MCL_OK, "layer_norm %s: forward failed: %s", desc, mcl_ctx_error(ctx))) goto out;
    double *y = xcalloc((size_t)(R * N), sizeof(double)), *mu = xcalloc((size_t)R, sizeof(double));
    double *rs = xcalloc((size_t)R, sizeof(double));
    mcl_naive_layer_norm(R, N, x, gm, bt, eps, y, mu, rs);
    compare("layer_norm fwd y", desc, a.out[0], y, R * N, TOL_LN_FWD);
    compare("layer_norm fwd mean", desc, a.out[1], mu, R, TOL_LN_FWD);
    compare("layer_norm fwd rstd", desc, a.out[2], rs, R, TOL_LN_FWD);
    free(y);
    free(mu);
    free(rs);

    double *gx = xcalloc((size_t)(R * N), sizeof(double)), *gg = xcalloc((size_t)N, sizeof(double));
    double *gb = xcalloc((size_t)N, sizeof(double));
    mcl_naive_layer_norm_bwd(R, N, x, gm, eps, g, gx, gg, gb);
    a.gout[0] = tu_tensor_from(ctx, 2, sx, g);
    float *bits[2][3] = {{NULL}};
    const int64_t n[3] = {R * N, N, N};
    for (int t = 0; t < 2; t++) { /* 1 thread, then 3: the same bits */
#ifdef _OPENMP
        const int saved = omp_get_max_threads();
        omp_set_num_threads(t == 0 ? 1 : 3);
#endif
        for (int i = 0; i < 3; i++) {
            mcl_tensor_free(a.gin[i]);
            a.gin[i] = i == 0 ? mcl_tensor_new(ctx, R, N, 0, 0) : mcl_tensor_new(ctx, N, 0, 0, 0);
        }
        st = mcl_op_backward(ctx, &a);
#ifdef _OPENMP
        omp_set_num_threads(saved);
#endif
        if (!CHECK(st == MCL_OK, "layer_norm %s: backward failed: %s", desc, mcl_ctx_error(ctx))) break;
        for (int i = 0; i < 3; i++) {
            bits[t][i] = xcalloc((size_t)n[i], sizeof(float));
            CHECK(mcl_tensor_read(a.gin[i], bits[t][i], n[i]) == MCL_OK, "layer_norm %s: read", desc);
        }
        if (t == 0) {
            compare("layer_norm bwd dL/dx", desc, a.gin[0], gx, R * N, TOL_LN_BWD);
            compare("layer_norm bwd dL/dgamma", desc, a.gin[1], gg, N, TOL_LN_BWD);
            compare("layer_norm bwd dL/dbeta", desc, a.gin[2], gb, N, TOL_LN_BWD);
        }
    }
    for (int i = 0; i < 3; i++) {
        if (bits[0][i] && bits[1][i])
            CHECK(memcmp(bits[0][i], bits[1][i], (size_t)n[i] * sizeof(float)) == 0,
                  "layer_norm %s: gradient %d differs between 1 and 3 threads", desc, i);
        free(bits[0][i]);
        free(bits[1][i]);
    }
    free(gx);
    free(gg);
    free(gb);
out:
    for (int i = 0; i < 3; i++) {
        mcl_tensor_free(a.in[i]);
        mcl_tensor_free(a.gin[i]);
    }
    mcl_tensor_free(a.gout[0]);
    free(x);
    free(g);
    free(gm);
    free(bt);
    mcl_ctx_reset(ctx);
}

/* ---- dropout -------------------------------------------------------------------------- */

/* An op's dropout parameters from a naive key (ops.def's dropout row): p.f[fi] = p (dropout:
 * f0, inorm_pool_relu: f1), p.u[0..3] = seed, stream, counter, step, p.i[0] = seg */
static void set_drop(mcl_op_params *p, int fi, const mcl_naive_drop *d)
{
    p->f[fi] = (float)d->p;
    p->u[0] = d->seed;
    p->u[1] = d->stream;
    p->u[2] = d->counter;
    p->u[3] = d->step;
    p->i[0] = d->seg;
}

/* The dropout op (src/ref/dropout.c: the mask in chunks of Philox blocks, a head and a tail
 * from one more chunk each) against mcl_naive_dropout_fwd/bwd. The only rounding is the kept values'
 * product with the float scale 1/(1-p) (the oracle divides by 1 - p in double): 2 u, and a
 * dropped element is exactly 0 on both sides, so a wrong mask is an error of ~1. */
#define TOL_DROPOUT 2.5e-7
static void test_dropout(mcl_ctx *ctx)
{
    /* n elements; one segment with a counter 3 past a block boundary; segments of 257 (not a
     * multiple of 4: every segment has a head and a tail) stepping by 5; counters at the top of
     * the index range: a tail whose chunk would pass 2^64 (drawn one by one, 2^64 - 124 ..
     * 2^64 - 21), and a run that wraps past 2^64 (all of it one by one) */
    static const struct {
        int64_t n;
        mcl_naive_drop d;
    } c[] = {{1000, {21, 2, 3, 0, 0, 0.3}},
             {3 * 257, {22, 7, 0, 5, 257, 0.5}},
             {5, {23, 1, 1, 0, 0, 0.3}},
             {1000, {24, 3, UINT64_MAX - 1019, 0, 0, 0.3}},
             {1000, {25, 4, UINT64_MAX - 499, 0, 0, 0.3}}};
    for (int k = 0; k < (int)(sizeof c / sizeof c[0]); k++) {
        const int64_t n = c[k].n;
        const mcl_naive_drop *d = &c[k].d;
        char desc[64];
        snprintf(desc, sizeof desc, "n %lld seg %lld", (long long)n, (long long)d->seg);
        float *x = randn(n, 900 + (uint64_t)k, 1.0), *go = randn(n, 950 + (uint64_t)k, 1.0);
        double *y = xcalloc((size_t)n, sizeof(double)), *gx = xcalloc((size_t)n, sizeof(double));
        mcl_op_args a;
        memset(&a, 0, sizeof a);
        a.op = MCL_OP_DROPOUT;
        a.in[0] = tu_tensor_from(ctx, 1, &n, x);
        set_drop(&a.p, 0, d);
        mcl_no_grad_begin(ctx);
        mcl_status st = mcl_op_run(ctx, &a);
        mcl_no_grad_end(ctx);
        if (CHECK(st == MCL_OK, "dropout %s: forward failed: %s", desc, mcl_ctx_error(ctx))) {
            mcl_naive_dropout_fwd(d, n, x, y);
            compare("dropout fwd", desc, a.out[0], y, n, TOL_DROPOUT);
            a.gout[0] = tu_tensor_from(ctx, 1, &n, go);
            a.gin[0] = mcl_tensor_create(ctx, 1, &n);
            st = mcl_op_backward(ctx, &a);
            if (CHECK(st == MCL_OK, "dropout %s: backward failed: %s", desc, mcl_ctx_error(ctx))) {
                mcl_naive_dropout_bwd(d, n, go, gx);
                compare("dropout bwd", desc, a.gin[0], gx, n, TOL_DROPOUT);
            }
            mcl_tensor_free(a.gin[0]);
            mcl_tensor_free(a.gout[0]);
        }
        mcl_tensor_free(a.in[0]);
        free(x);
        free(go);
        free(y);
        free(gx);
        mcl_ctx_reset(ctx);
    }
}

/* ---- inorm_pool_relu -------------------------------------------------------------------- */

/* Whether a float tensor holds the same bits as another (n elements each) */
static int tensors_same_bits(const mcl_tensor *s, const mcl_tensor *t)
{
    const int64_t n = mcl_tensor_numel(s);
    if (mcl_tensor_numel(t) != n) return 0;
    float *u = xcalloc((size_t)n, sizeof(float)), *v = xcalloc((size_t)n, sizeof(float));
    const int same = mcl_tensor_read(s, u, n) == MCL_OK && mcl_tensor_read(t, v, n) == MCL_OK &&
                     memcmp(u, v, (size_t)n * sizeof(float)) == 0;
    free(u);
    free(v);
    return same;
}

/* inorm_pool_relu with its dropout (f, run forward and backward) against the two ops in a row
 * on the fast path, inorm_pool_relu then dropout with the same key (forward), dropout's
 * backward into a fresh gradient then inorm_pool_relu's (backward): the same bits. */
static void ipr_dropout_same_bits(mcl_ctx *ctx, const mcl_op_args *f, const char *desc)
{
    mcl_op_args t, d;
    memset(&t, 0, sizeof t);
    memset(&d, 0, sizeof d);
    t.op = MCL_OP_INORM_POOL_RELU;
    for (int i = 0; i < 3; i++) t.in[i] = f->in[i];
    t.p.f[0] = f->p.f[0];
    d.op = MCL_OP_DROPOUT;
    d.p.f[0] = f->p.f[1];
    for (int i = 0; i < 4; i++) d.p.u[i] = f->p.u[i];
    d.p.i[0] = f->p.i[0];
    mcl_no_grad_begin(ctx);
    mcl_status st = mcl_op_run(ctx, &t);
    d.in[0] = st == MCL_OK ? t.out[0] : NULL;
    if (st == MCL_OK) st = mcl_op_run(ctx, &d);
    mcl_no_grad_end(ctx);
    if (CHECK(st == MCL_OK, "inorm_pool_relu %s: the two ops failed: %s", desc, mcl_ctx_error(ctx))) {
        CHECK(tensors_same_bits(f->out[0], d.out[0]), "inorm_pool_relu %s: y differs from inorm_pool_relu then dropout", desc);
        d.gout[0] = f->gout[0];
        d.gin[0] = mcl_tensor_create(ctx, d.out[0]->ndim, d.out[0]->shape);
        t.gout[0] = d.gin[0];
        for (int i = 0; i < 3; i++) t.gin[i] = mcl_tensor_create(ctx, t.in[i]->ndim, t.in[i]->shape);
        st = mcl_op_backward(ctx, &d);
        if (st == MCL_OK) st = mcl_op_backward(ctx, &t);
        if (CHECK(st == MCL_OK, "inorm_pool_relu %s: the two backwards failed: %s", desc, mcl_ctx_error(ctx)))
            for (int i = 0; i < 3; i++)
                CHECK(tensors_same_bits(f->gin[i], t.gin[i]),
                      "inorm_pool_relu %s: gradient %d differs from dropout's then inorm_pool_relu's backward", desc, i);
        for (int i = 0; i < 3; i++) mcl_tensor_free(t.gin[i]);
        mcl_tensor_free(d.gin[0]);
    }
}

/* drop: the output's dropout in the op (NULL: none); its oracle is the naive inorm_pool_relu
 * then the naive dropout (forward), the naive dropout's backward then the naive
 * inorm_pool_relu's (backward, its gout the dropout's gradient rounded to float) */
static void test_inorm_pool_relu(mcl_ctx *ctx, int cs, const int64_t c[4], const mcl_naive_drop *drop)
{
    const int64_t B = c[0], C = c[1], H = c[2], W = c[3], R = B * C, P = R * (H / 2) * (W / 2);
    char desc[96];
    snprintf(desc, sizeof desc, "%lldx%lldx%lldx%lld", (long long)B, (long long)C, (long long)H,
             (long long)W);
    if (drop)
        snprintf(desc + strlen(desc), sizeof desc - strlen(desc), " dropout %g seg %lld",
                 drop->p, (long long)drop->seg);
    float *x = randn(R * H * W, 700 + 10 * (uint64_t)cs, 1.0);
    float *gm = randn(C, 701 + 10 * (uint64_t)cs, 1.0), *bt = randn(C, 702 + 10 * (uint64_t)cs, 0.5);
    mcl_op_args a;
    memset(&a, 0, sizeof a);
    a.op = MCL_OP_INORM_POOL_RELU;
    a.in[0] = tensor4(ctx, B, C, H, W, x);
    a.in[1] = tu_tensor_from(ctx, 1, &C, gm);
    a.in[2] = tu_tensor_from(ctx, 1, &C, bt);
    a.p.f[0] = 1e-5f;
    if (drop) set_drop(&a.p, 1, drop);
    mcl_no_grad_begin(ctx);
    mcl_status st = mcl_op_run(ctx, &a);
    mcl_no_grad_end(ctx);
    if (CHECK(st == MCL_OK, "inorm_pool_relu %s: forward failed: %s", desc, mcl_ctx_error(ctx))) {
        double *y = xcalloc((size_t)P, sizeof(double)), *arg = xcalloc((size_t)P, sizeof(double));
        double *mu = xcalloc((size_t)R, sizeof(double)), *rs = xcalloc((size_t)R, sizeof(double));
        double *yd = xcalloc((size_t)P, sizeof(double));
        mcl_naive_inorm_pool_relu(B, C, H, W, x, gm, bt, 1e-5, y, mu, rs, arg);
        for (int64_t i = 0; i < P; i++) /* the dropout of y (double, as mcl_naive_dropout_fwd) */
            yd[i] = !drop ? y[i] : mcl_naive_dropout_keep(drop, i) ? y[i] / (1.0 - drop->p) : 0.0;
        compare("inorm_pool_relu fwd y", desc, a.out[0], yd, P, TOL_IPR_FWD);
        compare("inorm_pool_relu fwd mean", desc, a.out[1], mu, R, TOL_IPR_FWD);
        compare("inorm_pool_relu fwd rstd", desc, a.out[2], rs, R, TOL_IPR_FWD);
        compare("inorm_pool_relu fwd argmax", desc, a.out[3], arg, P, 0.0);
        /* backward: gout ~ N(0, 1), fresh gradients */
        float *go = randn(P, 703 + 10 * (uint64_t)cs, 1.0), *gy = xcalloc((size_t)P, sizeof(float));
        double *gd = xcalloc((size_t)P, sizeof(double));
        if (drop) mcl_naive_dropout_bwd(drop, P, go, gd);
        for (int64_t i = 0; i < P; i++) gy[i] = drop ? (float)gd[i] : go[i]; /* relu's gout */
        double *gx = xcalloc((size_t)(R * H * W), sizeof(double));
        double *gg = xcalloc((size_t)C, sizeof(double)), *gb = xcalloc((size_t)C, sizeof(double));
        const int64_t so[4] = {B, C, H / 2, W / 2};
        a.gout[0] = tu_tensor_from(ctx, 4, so, go);
        for (int i = 0; i < 3; i++) a.gin[i] = mcl_tensor_create(ctx, a.in[i]->ndim, a.in[i]->shape);
        st = mcl_op_backward(ctx, &a);
        if (CHECK(st == MCL_OK, "inorm_pool_relu %s: backward failed: %s", desc, mcl_ctx_error(ctx))) {
            mcl_naive_inorm_pool_relu_bwd(B, C, H, W, x, gm, y, mu, rs, arg, gy, gx, gg, gb);
            compare("inorm_pool_relu bwd dL/dx", desc, a.gin[0], gx, R * H * W, TOL_IPR_BWD);
            compare("inorm_pool_relu bwd dL/dgamma", desc, a.gin[1], gg, C, TOL_IPR_BWD);
            compare("inorm_pool_relu bwd dL/dbeta", desc, a.gin[2], gb, C, TOL_IPR_BWD);
            if (drop) ipr_dropout_same_bits(ctx, &a, desc);
        }
        for (int i = 0; i < 3; i++) mcl_tensor_free(a.gin[i]);
        mcl_tensor_free(a.gout[0]);
        free(go);
        free(gy);
        free(gd);
        free(gx);
        free(gg);
        free(gb);
        free(y);
        free(yd);
        free(arg);
        free(mu);
        free(rs);
    }
    for (int i = 0; i < 3; i++) mcl_tensor_free(a.in[i]);
    free(x);
    free(gm);
    free(bt);
    mcl_ctx_reset(ctx);
}

/* ---- inorm_relu, inorm_add_pool_relu --------------------------------------------------- */

/* One op on the fast path: in[0..nin) -> its outputs (no tape) */
static mcl_status run_op(mcl_ctx *ctx, mcl_op_args *a)
{
    mcl_no_grad_begin(ctx);
    const mcl_status st = mcl_op_run(ctx, a);
    mcl_no_grad_end(ctx);
    return st;
}

/* Fresh gradients of the op's n inputs */
static void fresh_gins(mcl_ctx *ctx, mcl_op_args *a, int n)
{
    for (int i = 0; i < n; i++) a->gin[i] = mcl_tensor_create(ctx, a->in[i]->ndim, a->in[i]->shape);
}

/* The fused norm of the residual block (pool = 0: inorm_relu of x; 1: inorm_add_pool_relu of
 * x and the skip s) against
 *   - its naive oracle (forward y, mean, rstd, and the argmax exactly; backward the x, gamma,
 *     beta and skip gradients), with layer_norm's tolerances: the same double statistics and
 *     values rounded once (src/ref/inorm.c), the add and the selects exact;
 *   - the ops it replaces on the fast path (instance_norm, relu; instance_norm, add, relu,
 *     maxpool2d), forward y, mean, rstd and every gradient into fresh tensors: the same bits.
 * c: B, C, H, W. */
static void test_inorm_fused(mcl_ctx *ctx, int cs, const int64_t c[4], int pool)
{
    const int64_t B = c[0], C = c[1], H = c[2], W = c[3], R = B * C, N = R * H * W;
    const int64_t P = pool ? R * (H / 2) * (W / 2) : N;
    const char *name = pool ? "inorm_add_pool_relu" : "inorm_relu";
    char desc[64], what[96];
    snprintf(desc, sizeof desc, "%lldx%lldx%lldx%lld", (long long)B, (long long)C, (long long)H, (long long)W);
    const uint64_t st0 = 900 + 10 * (uint64_t)cs;
    float *x = randn(N, st0, 1.0), *sk = randn(N, st0 + 1, 0.7);
    float *gm = randn(C, st0 + 2, 1.0), *bt = randn(C, st0 + 3, 0.5), *go = randn(P, st0 + 4, 1.0);
    const int64_t so[4] = {B, C, pool ? H / 2 : H, pool ? W / 2 : W};
    const int nin = pool ? 4 : 3;
    mcl_op_args f;
    memset(&f, 0, sizeof f);
    f.op = pool ? MCL_OP_INORM_ADD_POOL_RELU : MCL_OP_INORM_RELU;
    f.in[0] = tensor4(ctx, B, C, H, W, x);
    f.in[1] = tu_tensor_from(ctx, 1, &C, gm);
    f.in[2] = tu_tensor_from(ctx, 1, &C, bt);
    if (pool) f.in[3] = tensor4(ctx, B, C, H, W, sk);
    f.p.f[0] = 1e-5f;
    mcl_status st = run_op(ctx, &f);
    if (!CHECK(st == MCL_OK, "%s %s: forward failed: %s", name, desc, mcl_ctx_error(ctx))) goto done;
    double *y = xcalloc((size_t)P, sizeof(double)), *arg = xcalloc((size_t)P, sizeof(double));
    double *mu = xcalloc((size_t)R, sizeof(double)), *rs = xcalloc((size_t)R, sizeof(double));
    double *gx = xcalloc((size_t)N, sizeof(double)), *gs = xcalloc((size_t)N, sizeof(double));
    double *gg = xcalloc((size_t)C, sizeof(double)), *gb = xcalloc((size_t)C, sizeof(double));
    if (pool)
        mcl_naive_inorm_add_pool_relu(B, C, H, W, x, gm, bt, sk, 1e-5, y, mu, rs, arg);
    else
        mcl_naive_inorm_relu(B, C, H, W, x, gm, bt, 1e-5, y, mu, rs);
    snprintf(what, sizeof what, "%s fwd y", name);
    compare(what, desc, f.out[0], y, P, TOL_LN_FWD);
    snprintf(what, sizeof what, "%s fwd mean", name);
    compare(what, desc, f.out[1], mu, R, TOL_LN_FWD);
    snprintf(what, sizeof what, "%s fwd rstd", name);
    compare(what, desc, f.out[2], rs, R, TOL_LN_FWD);
    if (pool) compare("inorm_add_pool_relu fwd argmax", desc, f.out[3], arg, P, 0.0);
    f.gout[0] = tu_tensor_from(ctx, 4, so, go);
    fresh_gins(ctx, &f, nin);
    st = mcl_op_backward(ctx, &f);
    if (CHECK(st == MCL_OK, "%s %s: backward failed: %s", name, desc, mcl_ctx_error(ctx))) {
        if (pool)
            mcl_naive_inorm_add_pool_relu_bwd(B, C, H, W, x, gm, y, mu, rs, arg, go, gx, gg, gb, gs);
        else
            mcl_naive_inorm_relu_bwd(B, C, H, W, x, gm, y, mu, rs, go, gx, gg, gb);
        snprintf(what, sizeof what, "%s bwd dL/dx", name);
        compare(what, desc, f.gin[0], gx, N, TOL_LN_BWD);
        snprintf(what, sizeof what, "%s bwd dL/dgamma", name);
        compare(what, desc, f.gin[1], gg, C, TOL_LN_BWD);
        snprintf(what, sizeof what, "%s bwd dL/dbeta", name);
        compare(what, desc, f.gin[2], gb, C, TOL_LN_BWD);
        if (pool) compare("inorm_add_pool_relu bwd dL/dskip", desc, f.gin[3], gs, N, TOL_LN_BWD);
    }
    /* the ops it replaces, forward then backward in reverse, every gradient fresh */
    mcl_op_args in, ad, re, mp;
    memset(&in, 0, sizeof in);
    memset(&ad, 0, sizeof ad);
    memset(&re, 0, sizeof re);
    memset(&mp, 0, sizeof mp);
    in.op = MCL_OP_INSTANCE_NORM;
    for (int i = 0; i < 3; i++) in.in[i] = f.in[i];
    in.p.f[0] = 1e-5f;
    ad.op = MCL_OP_ADD;
    re.op = MCL_OP_RELU;
    mp.op = MCL_OP_MAXPOOL2D;
    st = run_op(ctx, &in);
    ad.in[0] = in.out[0];
    ad.in[1] = f.in[3];
    if (st == MCL_OK && pool) st = run_op(ctx, &ad);
    re.in[0] = pool ? ad.out[0] : in.out[0];
    if (st == MCL_OK) st = run_op(ctx, &re);
    mp.in[0] = re.out[0];
    if (st == MCL_OK && pool) st = run_op(ctx, &mp);
    mcl_op_args *last = pool ? &mp : &re;
    if (CHECK(st == MCL_OK, "%s %s: the ops it replaces failed: %s", name, desc, mcl_ctx_error(ctx))) {
        CHECK(tensors_same_bits(f.out[0], last->out[0]), "%s %s: y differs from the ops it replaces", name, desc);
        CHECK(tensors_same_bits(f.out[1], in.out[1]) && tensors_same_bits(f.out[2], in.out[2]),
              "%s %s: mean or rstd differs from instance_norm's", name, desc);
        last->gout[0] = f.gout[0];
        if (pool) {
            fresh_gins(ctx, &mp, 1);
            re.gout[0] = mp.gin[0];
            st = mcl_op_backward(ctx, &mp);
        }
        fresh_gins(ctx, &re, 1);
        if (st == MCL_OK) st = mcl_op_backward(ctx, &re);
        if (pool) {
            ad.gout[0] = re.gin[0];
            fresh_gins(ctx, &ad, 2);
            if (st == MCL_OK) st = mcl_op_backward(ctx, &ad);
        }
        in.gout[0] = pool ? ad.gin[0] : re.gin[0];
        fresh_gins(ctx, &in, 3);
        if (st == MCL_OK) st = mcl_op_backward(ctx, &in);
        if (CHECK(st == MCL_OK, "%s %s: the backwards it replaces failed: %s", name, desc, mcl_ctx_error(ctx))) {
            for (int i = 0; i < 3; i++)
                CHECK(tensors_same_bits(f.gin[i], in.gin[i]), "%s %s: gradient %d differs from the ops it replaces",
                      name, desc, i);
            if (pool)
                CHECK(tensors_same_bits(f.gin[3], ad.gin[1]), "%s %s: the skip's gradient differs from add's", name,
                      desc);
        }
        for (int i = 0; i < 3; i++) mcl_tensor_free(in.gin[i]);
        for (int i = 0; i < 2; i++) mcl_tensor_free(ad.gin[i]);
        mcl_tensor_free(re.gin[0]);
        mcl_tensor_free(mp.gin[0]);
    }
    free(y);
    free(arg);
    free(mu);
    free(rs);
    free(gx);
    free(gs);
    free(gg);
    free(gb);
done:
    for (int i = 0; i < nin; i++) {
        mcl_tensor_free(f.in[i]);
        mcl_tensor_free(f.gin[i]);
    }
    mcl_tensor_free(f.gout[0]);
    free(x);
    free(sk);
    free(gm);
    free(bt);
    free(go);
    mcl_ctx_reset(ctx);
}

/* ---- conv_inorm_pool_relu ---------------------------------------------------------------- */

/* The op against conv2d then inorm_pool_relu on the fast path (both checked against their
 * naive oracles above): forward (y, mean, rstd, argmax) and the five gradients into fresh
 * tensors, bit for bit. c: B, C, H, W, O, k, padding; drop: the dropout (NULL: none). A
 * planted change (METACL_TEST_BREAK=conv_inorm_pool_relu: the bias gradient of the two ops
 * moved by one float step) must fail here. */
static void test_conv_inorm_pool_relu(mcl_ctx *ctx, int cs, const int64_t c[7], const mcl_naive_drop *drop)
{
    const int64_t B = c[0], C = c[1], H = c[2], W = c[3], O = c[4], K = c[5];
    char desc[96];
    snprintf(desc, sizeof desc, "%lldx%lldx%lldx%lld by %lldx%lldx%lld pad %lld%s", (long long)B, (long long)C,
             (long long)H, (long long)W, (long long)O, (long long)K, (long long)K, (long long)c[6],
             drop ? " dropout" : "");
    float *x = randn(B * C * H * W, 900 + 10 * (uint64_t)cs, 1.0), *w = randn(O * C * K * K, 901 + 10 * (uint64_t)cs, 0.5);
    float *bias = randn(O, 902 + 10 * (uint64_t)cs, 0.5), *gm = randn(O, 903 + 10 * (uint64_t)cs, 1.0);
    float *bt = randn(O, 904 + 10 * (uint64_t)cs, 0.5);
    mcl_op_args f, cv, t;
    memset(&f, 0, sizeof f);
    memset(&cv, 0, sizeof cv);
    memset(&t, 0, sizeof t);
    f.op = MCL_OP_CONV_INORM_POOL_RELU;
    f.in[0] = tensor4(ctx, B, C, H, W, x);
    f.in[1] = tensor4(ctx, O, C, K, K, w);
    f.in[2] = tu_tensor_from(ctx, 1, &O, bias);
    f.in[3] = tu_tensor_from(ctx, 1, &O, gm);
    f.in[4] = tu_tensor_from(ctx, 1, &O, bt);
    f.p.f[0] = 1e-5f;
    if (drop) set_drop(&f.p, 1, drop);
    f.p.i[1] = c[6];
    cv.op = MCL_OP_CONV2D;
    for (int i = 0; i < 3; i++) cv.in[i] = f.in[i];
    cv.p.i[0] = 1;
    cv.p.i[1] = c[6];
    t.op = MCL_OP_INORM_POOL_RELU;
    t.in[1] = f.in[3];
    t.in[2] = f.in[4];
    t.p = f.p;
    t.p.i[1] = 0;
    mcl_no_grad_begin(ctx);
    mcl_status st = mcl_op_run(ctx, &f);
    if (st == MCL_OK) st = mcl_op_run(ctx, &cv);
    t.in[0] = st == MCL_OK ? cv.out[0] : NULL;
    if (st == MCL_OK) st = mcl_op_run(ctx, &t);
    mcl_no_grad_end(ctx);
    if (CHECK(st == MCL_OK, "conv_inorm_pool_relu %s: forward failed: %s", desc, mcl_ctx_error(ctx))) {
        static const char *const outs[4] = {"y", "mean", "rstd", "argmax"};
        for (int k = 0; k < 4; k++)
            CHECK(tensors_same_bits(f.out[k], t.out[k]), "conv_inorm_pool_relu %s: %s differs from conv2d then inorm_pool_relu's",
                  desc, outs[k]);
        const int64_t P = mcl_tensor_numel(f.out[0]);
        float *go = randn(P, 905 + 10 * (uint64_t)cs, 1.0);
        f.gout[0] = tu_tensor_from(ctx, 4, mcl_tensor_shape(f.out[0]), go);
        t.gout[0] = f.gout[0];
        for (int i = 0; i < 5; i++) f.gin[i] = mcl_tensor_create(ctx, f.in[i]->ndim, f.in[i]->shape);
        cv.gout[0] = t.gin[0] = mcl_tensor_create(ctx, 4, mcl_tensor_shape(cv.out[0]));
        for (int i = 0; i < 3; i++) cv.gin[i] = mcl_tensor_create(ctx, cv.in[i]->ndim, cv.in[i]->shape);
        t.gin[1] = mcl_tensor_create(ctx, 1, &O);
        t.gin[2] = mcl_tensor_create(ctx, 1, &O);
        st = mcl_op_backward(ctx, &f);
        if (st == MCL_OK) st = mcl_op_backward(ctx, &t);
        if (st == MCL_OK) st = mcl_op_backward(ctx, &cv);
        if (CHECK(st == MCL_OK, "conv_inorm_pool_relu %s: backward failed: %s", desc, mcl_ctx_error(ctx))) {
            const char *break_op = getenv("METACL_TEST_BREAK");
            if (break_op && strcmp(break_op, "conv_inorm_pool_relu") == 0) { /* planted: one float step */
                float *gb = xcalloc((size_t)O, sizeof(float));
                if (mcl_tensor_read(cv.gin[2], gb, O) == MCL_OK) {
                    gb[0] = nextafterf(gb[0], INFINITY);
                    CHECK(mcl_tensor_write(cv.gin[2], gb, O) == MCL_OK, "the planted change was not written");
                }
                free(gb);
            }
            static const char *const gins[5] = {"x", "w", "bias", "gamma", "beta"};
            const mcl_tensor *two[5] = {cv.gin[0], cv.gin[1], cv.gin[2], t.gin[1], t.gin[2]};
            for (int i = 0; i < 5; i++)
                CHECK(tensors_same_bits(f.gin[i], two[i]),
                      "conv_inorm_pool_relu %s: the gradient of %s differs from conv2d then inorm_pool_relu's", desc, gins[i]);
            /* again without the input gradient, as a first layer trains: the convolution's
             * gradient then goes straight onto the weight gradient's grid where the plan has one
             * (mcl_ref_s1_bwd_grid), and the bias sums read the grid's rows */
            mcl_tensor *gx = f.gin[0];
            f.gin[0] = NULL;
            for (int i = 1; i < 5; i++) mcl_tensor_free(f.gin[i]);
            for (int i = 1; i < 5; i++) f.gin[i] = mcl_tensor_create(ctx, f.in[i]->ndim, f.in[i]->shape);
            st = mcl_op_backward(ctx, &f);
            f.gin[0] = gx;
            if (CHECK(st == MCL_OK, "conv_inorm_pool_relu %s: backward without gx failed: %s", desc, mcl_ctx_error(ctx)))
                for (int i = 1; i < 5; i++)
                    CHECK(tensors_same_bits(f.gin[i], two[i]),
                          "conv_inorm_pool_relu %s, no gx: the gradient of %s differs from conv2d then inorm_pool_relu's",
                          desc, gins[i]);
        }
        for (int i = 0; i < 5; i++) mcl_tensor_free(f.gin[i]);
        for (int i = 0; i < 3; i++) mcl_tensor_free(cv.gin[i]);
        for (int i = 0; i < 3; i++) mcl_tensor_free(t.gin[i]);
        mcl_tensor_free(f.gout[0]);
        free(go);
    }
    for (int i = 0; i < 5; i++) mcl_tensor_free(f.in[i]);
    free(x);
    free(w);
    free(bias);
    free(gm);
    free(bt);
    mcl_ctx_reset(ctx);
}

/* ---- smn_write, smn_write_add, smn_write_eff, smn_avg_write ---------------------------- */

/* n values ~ U(lo, hi) from Philox (seed, stream) */
static float *runif(int64_t n, uint64_t stream, double lo, double hi)
{
    float *v = xcalloc((size_t)n, sizeof(float));
    for (int64_t i = 0; i < n; i++) v[i] = (float)(lo + (hi - lo) * mcl_rng_uniform(g_seed, stream, (uint64_t)i));
    return v;
}

/* m distinct flat indices of [0, n) as floats (a partial Fisher-Yates shuffle keyed by the
 * seed and stream), in increasing order unless shuffled */
static int cmp_float(const void *a, const void *b)
{
    const float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}
static float *draw_indices(int64_t n, int64_t m, uint64_t stream, int shuffled)
{
    int64_t *p = xcalloc((size_t)n, sizeof *p);
    for (int64_t i = 0; i < n; i++) p[i] = i;
    float *idx = xcalloc((size_t)m, sizeof(float));
    for (int64_t e = 0; e < m; e++) {
        const int64_t j = e + (int64_t)(mcl_rng_uniform(g_seed, stream, (uint64_t)e) * (double)(n - e));
        const int64_t t = p[e];
        p[e] = p[j < n ? j : n - 1];
        p[j < n ? j : n - 1] = t;
        idx[e] = (float)p[e];
    }
    if (!shuffled) qsort(idx, (size_t)m, sizeof(float), cmp_float);
    free(p);
    return idx;
}

/* want[i] = init[i] + g[i] (a gradient the op adds to an accumulator that held init) */
static double *plus_init(const float *init, const double *g, int64_t n)
{
    double *w = xcalloc((size_t)n, sizeof(double));
    for (int64_t i = 0; i < n; i++) w[i] = (double)init[i] + g[i];
    return w;
}

/* One case: M0 [n], m entries, g_phi of H hidden units with negative slope `slope`, indices
 * shuffled or increasing (smn_write_add and smn_avg_write take increasing ones only). */
typedef struct smn_case {
    int64_t n, m, H;
    float slope;
    int shuffled;
} smn_case;

/* What smn_write_eff and smn_avg_write leave in E [n]: E as it was, W + M at the m written
 * elements idx (M [n] the naive write's values) */
static double *eff_want(int64_t n, int64_t m, const float *idx, const float *E, const float *W, const double *M)
{
    double *w = xcalloc((size_t)n, sizeof(double));
    for (int64_t i = 0; i < n; i++) w[i] = E[i];
    for (int64_t e = 0; e < m; e++) {
        const int64_t i = (int64_t)idx[e];
        w[i] = (double)W[i] + M[i];
    }
    return w;
}

/* The names of smn_write's differentiable inputs' gradients, by input */
static const char *const smn_gname[9] = {"dL/dM0", "", "dL/dzs", "dL/dW1", "dL/db1",
                                         "dL/dW2", "dL/db2", "dL/dW3", "dL/db3"};

/* smn_write against the naive write: the forward M; the backward's nine gradients added to
 * accumulators that held random values; then smn_write_add (i0 = 0 and 1) and smn_write_eff,
 * smn_avg_write on the same inputs. */
static void test_smn_write(mcl_ctx *ctx, int cs, const smn_case *c)
{
    const int64_t n = c->n, m = c->m, H = c->H, m2[2] = {m, 2}, h2[2] = {H, 2}, hh[2] = {H, H},
                  h1[2] = {1, H}, one = 1;
    char desc[80], what[96];
    snprintf(desc, sizeof desc, "n%lld m%lld H%lld slope %g%s", (long long)n, (long long)m, (long long)H,
             (double)c->slope, c->shuffled ? " shuffled" : "");
    const uint64_t s0 = 1200 + 40 * (uint64_t)cs;
    const double wa = sqrt(3.0 / (double)H); /* W2, W3 ~ U(-wa, wa): variance 1/H */
    float *M0 = randn(n, s0, 1.0), *idx = draw_indices(n, m, s0 + 1, c->shuffled), *zs = randn(2 * m, s0 + 2, 1.0);
    float *phi[6] = {runif(2 * H, s0 + 3, -1, 1), runif(H, s0 + 4, -0.5, 0.5), runif(H * H, s0 + 5, -wa, wa),
                     runif(H, s0 + 6, -0.5, 0.5), runif(H, s0 + 7, -wa, wa), runif(1, s0 + 8, -0.5, 0.5)};
    const int64_t np[9] = {n, m, 2 * m, 2 * H, H, H * H, H, H, 1};
    float *gM = randn(n, s0 + 9, 1.0), *init[9];
    for (int k = 0; k < 9; k++) init[k] = randn(np[k], s0 + 10 + (uint64_t)k, 1.0);
    float *W = randn(n, s0 + 20, 1.0), *E = randn(n, s0 + 21, 1.0);
    const mcl_naive_phi f = {phi[0], phi[1], phi[2], phi[3], phi[4], phi[5], H, c->slope};
    double *tmp = xcalloc((size_t)(6 * H), sizeof(double)), *M = xcalloc((size_t)n, sizeof(double));
    double *g[9] = {NULL};
    for (int k = 0; k < 9; k++) g[k] = xcalloc((size_t)np[k], sizeof(double));
    const mcl_naive_phi_grad gp = {g[3], g[4], g[5], g[6], g[7], g[8]};
    mcl_naive_smn_write(&f, n, m, M0, idx, zs, tmp, M);
    mcl_naive_smn_write_bwd(&f, n, m, idx, zs, gM, tmp, g[0], g[2], &gp);

    mcl_op_args a;
    memset(&a, 0, sizeof a);
    a.op = MCL_OP_SMN_WRITE;
    a.in[0] = tu_vec(ctx, n, M0);
    a.in[1] = tu_vec(ctx, m, idx);
    a.in[2] = tu_tensor_from(ctx, 2, m2, zs);
    a.in[3] = tu_tensor_from(ctx, 2, h2, phi[0]);
    a.in[4] = tu_vec(ctx, H, phi[1]);
    a.in[5] = tu_tensor_from(ctx, 2, hh, phi[2]);
    a.in[6] = tu_vec(ctx, H, phi[3]);
    a.in[7] = tu_tensor_from(ctx, 2, h1, phi[4]);
    a.in[8] = tu_tensor_from(ctx, 1, &one, phi[5]);
    a.p.f[0] = c->slope;
    mcl_status st = run_op(ctx, &a);
    if (CHECK(st == MCL_OK, "smn_write %s: forward failed: %s", desc, mcl_ctx_error(ctx))) {
        compare("smn_write fwd M", desc, a.out[0], M, n, TOL_SMN_FWD);
        a.gout[0] = tu_vec(ctx, n, gM);
        for (int k = 0; k < 9; k++)
            if (k != 1) a.gin[k] = tu_tensor_from(ctx, a.in[k]->ndim, a.in[k]->shape, init[k]);
        st = mcl_op_backward(ctx, &a);
        if (CHECK(st == MCL_OK, "smn_write %s: backward failed: %s", desc, mcl_ctx_error(ctx))) {
            for (int k = 0; k < 9; k++) {
                if (k == 1) continue;
                double *want = plus_init(init[k], g[k], np[k]);
                snprintf(what, sizeof what, "smn_write bwd %s", smn_gname[k]);
                compare(what, desc, a.gin[k], want, np[k], TOL_SMN_BWD);
                free(want);
            }
        }
        if (m * H * H >= (1 << 17)) { /* above smn.c's threshold for OpenMP */
            static const int ks[8] = {0, 2, 3, 4, 5, 6, 7, 8};
            bwd_threads(ctx, &a, ks, 8, "smn_write", desc);
        }
    }

    /* smn_write_add: out = W + smn_write(M0 or zeros); backward gW += gout, the rest smn_write's
     * (M0's only for i0 = 0: for i0 = 1 its accumulator keeps what it held) */
    for (int i0 = 0; i0 < 2 && !c->shuffled; i0++) {
        mcl_op_args w;
        memset(&w, 0, sizeof w);
        w.op = MCL_OP_SMN_WRITE_ADD;
        for (int k = 0; k < 9; k++) w.in[k] = a.in[k];
        w.in[9] = tu_vec(ctx, n, W);
        w.p.f[0] = c->slope;
        w.p.i[0] = i0;
        double *want = xcalloc((size_t)n, sizeof(double));
        mcl_naive_smn_write(&f, n, m, i0 ? NULL : M0, idx, zs, tmp, want);
        for (int64_t i = 0; i < n; i++) want[i] += (double)W[i];
        st = run_op(ctx, &w);
        if (CHECK(st == MCL_OK, "smn_write_add i0=%d %s: forward failed: %s", i0, desc, mcl_ctx_error(ctx))) {
            snprintf(what, sizeof what, "smn_write_add i0=%d fwd W+M", i0);
            compare(what, desc, w.out[0], want, n, TOL_SMN_ADD);
            w.gout[0] = tu_vec(ctx, n, gM);
            for (int k = 0; k < 9; k++)
                if (k != 1) w.gin[k] = tu_tensor_from(ctx, w.in[k]->ndim, w.in[k]->shape, init[k]);
            w.gin[9] = tu_vec(ctx, n, E); /* E's values as gW's accumulator */
            st = mcl_op_backward(ctx, &w);
            if (CHECK(st == MCL_OK, "smn_write_add i0=%d %s: backward failed: %s", i0, desc, mcl_ctx_error(ctx))) {
                for (int k = 0; k < 10; k++) {
                    if (k == 1) continue;
                    double *wg = xcalloc((size_t)(k == 9 ? n : np[k]), sizeof(double));
                    if (k == 9)
                        for (int64_t i = 0; i < n; i++) wg[i] = (double)E[i] + gM[i];
                    else
                        for (int64_t i = 0; i < np[k]; i++) wg[i] = (double)init[k][i] + (k == 0 && i0 ? 0.0 : g[k][i]);
                    snprintf(what, sizeof what, "smn_write_add i0=%d bwd %s", i0, k == 9 ? "dL/dW" : smn_gname[k]);
                    compare(what, desc, w.gin[k], wg, k == 9 ? n : np[k], TOL_SMN_BWD);
                    free(wg);
                }
            }
        }
        free(want);
        mcl_tensor_free(w.in[9]);
        mcl_tensor_free(w.gout[0]);
        for (int k = 0; k < 10; k++) mcl_tensor_free(w.gin[k]);
    }

    /* smn_write_eff, in place: M[idx_e] = v_e, E[idx_e] = W[idx_e] + v_e, nothing else moves */
    {
        mcl_op_args w;
        memset(&w, 0, sizeof w);
        w.op = MCL_OP_SMN_WRITE_EFF;
        for (int k = 1; k < 9; k++) w.in[k] = a.in[k];
        w.in[0] = tu_vec(ctx, n, M0);
        w.in[9] = tu_vec(ctx, n, W);
        w.in[10] = tu_vec(ctx, n, E);
        w.p.f[0] = c->slope;
        st = run_op(ctx, &w);
        if (CHECK(st == MCL_OK, "smn_write_eff %s: failed: %s", desc, mcl_ctx_error(ctx))) {
            double *wE = eff_want(n, m, idx, E, W, M);
            compare("smn_write_eff M", desc, w.in[0], M, n, TOL_SMN_FWD);
            compare("smn_write_eff E", desc, w.in[10], wE, n, TOL_SMN_ADD);
            free(wE);
        }
        mcl_tensor_free(w.in[0]);
        mcl_tensor_free(w.in[9]);
        mcl_tensor_free(w.in[10]);
    }

    /* smn_avg_write, in place (increasing indices): I = gamma I + beta1 G; zs_e =
     * grad_preproc(I[idx_e] + beta2 G[idx_e], P); then smn_write_eff's writes from those zs.
     * I and zs against the naive chain; M and E against the naive write of the zs the op wrote
     * (float, as it stores them), so each half is held to its own tolerance. G ~ N(0, 1e-4^2),
     * I ~ N(0, 1e-3^2): many |z| on either side of grad_preproc's threshold e^-P (P = 10:
     * 4.5e-5). */
    if (!c->shuffled) {
        const double gam = 0.9, b1 = 0.1, b2 = 0.5, P = 10.0;
        float *I = randn(n, s0 + 22, 1e-3), *G = randn(n, s0 + 23, 1e-4);
        mcl_op_args w;
        memset(&w, 0, sizeof w);
        w.op = MCL_OP_SMN_AVG_WRITE;
        for (int k = 3; k < 9; k++) w.in[k] = a.in[k];
        w.in[0] = tu_vec(ctx, n, M0);
        w.in[1] = a.in[1];
        w.in[2] = tu_tensor_from(ctx, 2, m2, zs);
        w.in[9] = tu_vec(ctx, n, W);
        w.in[10] = tu_vec(ctx, n, E);
        w.in[11] = tu_vec(ctx, n, I);
        w.in[12] = tu_vec(ctx, n, G);
        w.p.f[0] = c->slope;
        w.p.f[1] = (float)gam;
        w.p.f[2] = (float)b1;
        w.p.f[3] = (float)b2;
        w.p.f[4] = (float)P;
        st = run_op(ctx, &w);
        float *zf = st == MCL_OK ? tu_read(w.in[2]) : NULL;
        if (CHECK(st == MCL_OK && zf, "smn_avg_write %s: failed: %s", desc, mcl_ctx_error(ctx))) {
            double *I2 = xcalloc((size_t)n, sizeof(double)), *zw = xcalloc((size_t)(2 * m), sizeof(double));
            double *Mw = xcalloc((size_t)n, sizeof(double));
            mcl_naive_smn_avg_z(n, m, I, G, idx, gam, b1, b2, P, I2, zw);
            compare("smn_avg_write I", desc, w.in[11], I2, n, TOL_SMN_AVG);
            compare("smn_avg_write zs", desc, w.in[2], zw, 2 * m, TOL_SMN_Z);
            mcl_naive_smn_write(&f, n, m, M0, idx, zf, tmp, Mw);
            double *Ew = eff_want(n, m, idx, E, W, Mw);
            compare("smn_avg_write M", desc, w.in[0], Mw, n, TOL_SMN_FWD);
            compare("smn_avg_write E", desc, w.in[10], Ew, n, TOL_SMN_ADD);
            free(I2);
            free(zw);
            free(Mw);
            free(Ew);
        }
        free(zf);
        free(I);
        free(G);
        for (int k = 0; k < 13; k++)
            if (k == 0 || k == 2 || k >= 9) mcl_tensor_free(w.in[k]);
    }

    for (int k = 0; k < 9; k++) {
        mcl_tensor_free(a.in[k]);
        mcl_tensor_free(a.gin[k]);
        free(init[k]);
        free(g[k]);
    }
    mcl_tensor_free(a.gout[0]);
    for (int k = 0; k < 6; k++) free(phi[k]);
    free(M0);
    free(idx);
    free(zs);
    free(gM);
    free(W);
    free(E);
    free(tmp);
    free(M);
    mcl_ctx_reset(ctx);
}

/* ---- gelu ------------------------------------------------------------------------------ */

/* The error of got against want in ulps of want rounded to float; an absolute error measured
 * against FLT_MIN (as "ulps" of FLT_MIN) where |want| < FLT_MIN. */
static double ulp_err_of(float got, double want, double scale)
{
    if (isnan(want)) return isnan(got) ? 0.0 : INFINITY;
    if (!isfinite(got)) return INFINITY;
    if (scale < FLT_MIN) return fabs((double)got - want) / FLT_MIN;
    int e;
    frexp((double)(float)scale, &e); /* scale = m 2^e, 0.5 <= m < 1: ulp = 2^(e - 24) */
    return fabs((double)got - want) / ldexp(1.0, e - 24);
}

static double ulp_err(float got, double want)
{
    return ulp_err_of(got, want, fabs(want));
}

/* ---- exp_nonpos ------------------------------------------------------------------------ */

static void test_exp_nonpos(void)
{
    double worst = 0.0;
    float at = 0.0f;
    int64_t n = 0;
    const float lowest = -87.0f;
    uint32_t hi;
    memcpy(&hi, &lowest, sizeof hi); /* negative floats: larger bit patterns, larger magnitudes */
    for (uint64_t u = 0x80000000u; u <= hi; u += EXP_STRIDE, n++) {
        const uint32_t b = (uint32_t)u;
        float x;
        memcpy(&x, &b, sizeof x);
        const double e = ulp_err(mcl_exp_nonpos(x), exp((double)x));
        if (e > worst) worst = e, at = x;
    }
    for (int i = 1; i <= 4096; i++, n++) { /* (0, 2^-10]: a recomputed s - lse a rounding above 0 */
        const float x = ldexpf((float)i, -22);
        const double e = ulp_err(mcl_exp_nonpos(x), exp((double)x));
        if (e > worst) worst = e, at = x;
    }
    CHECK(worst <= EXP_ULP, "exp_nonpos: %.3f ulp at x = %.9g (%lld arguments), above %.1f", worst,
          (double)at, (long long)n, EXP_ULP);
    CHECK(mcl_exp_nonpos(0.0f) == 1.0f && mcl_exp_nonpos(-0.0f) == 1.0f && mcl_exp_nonpos(-87.5f) == 0.0f &&
              mcl_exp_nonpos(-1000.0f) == 0.0f && mcl_exp_nonpos(-INFINITY) == 0.0f &&
              isnan(mcl_exp_nonpos(NAN)),
          "exp_nonpos: a special value is wrong (exp(0) = %g, exp(-87.5) = %g, exp(-inf) = %g, "
          "exp(NaN) = %g)",
          (double)mcl_exp_nonpos(0.0f), (double)mcl_exp_nonpos(-87.5f), (double)mcl_exp_nonpos(-INFINITY),
          (double)mcl_exp_nonpos(NAN));
    /* the measure must see a result two floats off */
    const float off = nextafterf(nextafterf(mcl_exp_nonpos(at), INFINITY), INFINITY);
    CHECK(ulp_err(off, exp((double)at)) > EXP_ULP, "exp_nonpos: a result 2 floats off passed as within %.1f ulp",
          EXP_ULP);
    if (g_verbose) printf("  exp_nonpos: %lld arguments, worst %.3f ulp at x = %.9g\n", (long long)n, worst, (double)at);
}

static void test_gelu(mcl_ctx *ctx)
{
    /* the sample: every GELU_STRIDE-th finite float, then 2^19 points evenly over [-14, 14] */
    const int64_t dense = (int64_t)1 << 19;
    int64_t n = 0, cap = (int64_t)(4294967296.0 / GELU_STRIDE) + dense + 16;
    float *x = xcalloc((size_t)cap, sizeof(float)), *g = xcalloc((size_t)cap, sizeof(float));
    for (uint64_t u = 0; u < 4294967296ull; u += GELU_STRIDE) {
        const uint32_t b = (uint32_t)u;
        if (((b >> 23) & 0xffu) == 0xffu) continue; /* inf, NaN */
        memcpy(&x[n++], &b, sizeof b);
    }
    for (int64_t i = 0; i < dense; i++) x[n++] = (float)(-14.0 + 28.0 * (double)i / (double)dense);
    for (int64_t i = 0; i < n; i++) g[i] = 1.0f;
    mcl_op_args a;
    memset(&a, 0, sizeof a);
    a.op = MCL_OP_GELU;
    a.in[0] = mcl_tensor_new(ctx, n, 0, 0, 0);
    int ok = a.in[0] && mcl_tensor_write(a.in[0], x, n) == MCL_OK;
    mcl_no_grad_begin(ctx);
    ok = ok && mcl_op_run(ctx, &a) == MCL_OK;
    mcl_no_grad_end(ctx);
    if (ok) {
        a.gout[0] = mcl_tensor_new(ctx, n, 0, 0, 0);
        a.gin[0] = mcl_tensor_new(ctx, n, 0, 0, 0);
        ok = a.gout[0] && a.gin[0] && mcl_tensor_write(a.gout[0], g, n) == MCL_OK &&
             mcl_op_backward(ctx, &a) == MCL_OK;
    }
    if (CHECK(ok, "gelu: the op failed: %s", mcl_ctx_error(ctx))) {
        float *y = xcalloc((size_t)n, sizeof(float)), *gx = xcalloc((size_t)n, sizeof(float));
        double *wy = xcalloc((size_t)n, sizeof(double)), *wg = xcalloc((size_t)n, sizeof(double));
        ok = mcl_tensor_read(a.out[0], y, n) == MCL_OK && mcl_tensor_read(a.gin[0], gx, n) == MCL_OK;
        CHECK(ok, "gelu: cannot read the results");
        mcl_naive_gelu_fwd(n, x, wy);
        mcl_naive_gelu_bwd(n, x, g, wg);
        double ef = 0, eb = 0;
        int64_t jf = 0, jb = 0;
        for (int64_t i = 0; ok && i < n; i++) {
            /* |x| > 13.2: y = 0 or x and the derivative 0 or 1 (stated); the exact values
             * differ from those by less than FLT_MIN resp. 1e-37, which ulp_err sees too */
            const double e = ulp_err(y[i], wy[i]);
            if (e > ef) ef = e, jf = i;
            const double xa = x[i], cdf = 0.5 * erfc(-xa / sqrt(2.0));
            const double aphi = fabs(xa) * exp(-0.5 * xa * xa) / sqrt(2.0 * 3.14159265358979323846);
            double scale = fabs(wg[i]) > cdf ? fabs(wg[i]) : cdf;
            scale = scale > aphi ? scale : aphi;
            const double eg = ulp_err_of(gx[i], wg[i], scale);
            if (eg > eb) eb = eg, jb = i;
        }
        printf("test-naive: gelu over %lld floats: forward max %.2f ulp (at %.9g), backward max "
               "%.2f ulp of the larger term (at %.9g)\n", (long long)n, ef, (double)x[jf], eb, (double)x[jb]);
        CHECK(ef <= GELU_ULP_FWD, "gelu fwd: %.2f ulp at x = %.9g (y %.9g, exact %.17g) > %.0f", ef,
              (double)x[jf], (double)y[jf], wy[jf], GELU_ULP_FWD);
        CHECK(eb <= GELU_ULP_BWD, "gelu bwd: %.2f ulp at x = %.9g (%.9g, exact %.17g) > %.0f", eb,
              (double)x[jb], (double)gx[jb], wg[jb], GELU_ULP_BWD);
        /* the measure can fail: a result 1e-6 relative off is > 8 ulp */
        const int64_t k = n / 2 + 12345;
        CHECK(ulp_err(y[k] * (1.0f + 1e-6f), wy[k]) > GELU_ULP_FWD || fabs(wy[k]) < 1e-30,
              "gelu: a result 1e-6 off (x = %.9g) passes the ulp measure", (double)x[k]);
        free(y);
        free(gx);
        free(wy);
        free(wg);
    }
    mcl_tensor_free(a.in[0]);
    mcl_tensor_free(a.gout[0]);
    mcl_tensor_free(a.gin[0]);
    free(x);
    free(g);
    mcl_ctx_reset(ctx);
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-v") == 0) {
            g_verbose = 1;
        } else if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc) {
            char *end = NULL;
            g_seed = strtoull(argv[++i], &end, 10);
            if (!end || *end) {
                fprintf(stderr, "test-naive: bad seed\n");
                return 2;
            }
        } else {
            fprintf(stderr, "usage: test-naive [--seed N] [-v]\n");
            return 2;
        }
    }
    tu_begin("test-naive", g_seed);
    mcl_ctx *ctx = tu_ctx_ref();

    /* B, H, L, D: odd head sizes (generic copy of the fast loop) and the specialized ones */
    static const int64_t sw[][4] = {{1, 1, 1, 1}, {1, 2, 7, 3},  {2, 1, 5, 5},  {1, 1, 9, 7},
                                    {2, 2, 6, 16}, {1, 1, 4, 17}, {1, 2, 3, 32}, {1, 1, 12, 64}};
    for (int c = 0; c < (int)(sizeof sw / sizeof sw[0]); c++)
        test_srwm(ctx, c, sw[c][0], sw[c][1], sw[c][2], sw[c][3]);

    /* B, C, H, W, O, k, stride, pad: stride 1 (the direct path) and 2 (im2col), pad 0-2;
     * from the seventh on C*k*k >= 32 at stride 1 (the weight gradient's register tile,
     * gw_tile in src/ref/conv.c) with O = 40, 19, 12, 5, 19, 32, 33 (tiles 32 + 8, 24, 16, 8,
     * 24, 32, 32 + 8 channels wide); the 11th is above the OpenMP threshold (6 chunks of
     * images); the next four have small images and many channels, so that the forward (all)
     * and the input gradient (not the second) take the pixel-major tile (s1_product_t) with
     * 5, 6, 7 and 8 pixels per tile (20, 12, 49 and 16 pixels), the first two with a last
     * tile of spare lanes; the very last has C*k*k < 32 at stride 1 (the forward's row tile,
     * s1_tile_row) and rows of 37 pixels (a full tile and a short one); then Conv-4's first
     * layer (one input channel, 32 channels out) at 28x28 and 32x32, and C*k*k = 27 with 5
     * channels out (the weight gradient's dot_tile: 3 tiles of taps, a last tile of one
     * channel); last, Conv-4's second layer (14 x 14, 32 channels) and 10 x 10, whose forward
     * and input gradient take the AVX-512 tile of two runs of 7 and 5 pixels (s1_tile_run; the
     * 7 x 7 case above runs it too, with a last tile of one run); the very last, Conv-4's
     * first layer with 88 images and 36 channels out, has an output above 8 MiB, which the
     * forward's flat tile (s1_tile_flat) writes with streaming stores (the first-layer cases
     * before it, with Ho = H and Wo = W, run that tile with ordinary stores), a last block of
     * 4 channels among them; and 1340 images of 4 x 7 x 7 with 32 channels out (C*k*k = 36),
     * whose output, also above 8 MiB, the pixel-major tile (s1_product_t) writes into an
     * image-sized scratch streamed into out; last, 1340 images of 32 x 7 x 7 with 4 channels
     * out, whose fresh input gradient (8.4 MB) takes the same way in the backward */
    static const int64_t sc[][8] = {{2, 3, 7, 5, 4, 3, 1, 1},  {1, 2, 9, 8, 3, 3, 2, 1},
                                    {2, 1, 6, 6, 2, 5, 1, 2},  {3, 4, 8, 8, 5, 1, 1, 0},
                                    {2, 3, 11, 9, 4, 3, 2, 0}, {2, 2, 9, 9, 3, 3, 1, 1},
                                    {1, 32, 4, 5, 40, 1, 1, 0}, {2, 4, 7, 6, 19, 3, 1, 1},
                                    {1, 4, 6, 5, 12, 3, 1, 0}, {2, 4, 5, 5, 5, 3, 1, 2},
                                    {6, 4, 7, 6, 19, 3, 1, 1},  {2, 32, 5, 4, 32, 3, 1, 1},
                                    {1, 32, 6, 5, 33, 3, 1, 0}, {1, 32, 7, 7, 32, 3, 1, 1},
                                    {1, 32, 4, 4, 32, 3, 1, 1}, {2, 2, 3, 37, 3, 3, 1, 1},
                                    {2, 1, 28, 28, 32, 3, 1, 1}, {2, 1, 32, 32, 32, 3, 1, 1},
                                    {1, 3, 9, 10, 5, 3, 1, 1},  {2, 32, 14, 14, 32, 3, 1, 1},
                                    {1, 32, 10, 10, 32, 3, 1, 1}, {88, 1, 28, 28, 36, 3, 1, 1},
                                    {1340, 4, 7, 7, 32, 3, 1, 1}, {1340, 32, 7, 7, 4, 3, 1, 1}};
    for (int c = 0; c < (int)(sizeof sc / sizeof sc[0]); c++) test_conv(ctx, c, sc[c]);

    test_matmul(ctx, 67, 129, 131);
    /* R, N: one row; a short last block (13 = 8 + 5); the LM's width; above the OpenMP
     * threshold (32768 elements) with a last block of 4 rows */
    static const int64_t sl[][2] = {{1, 1}, {13, 7}, {40, 192}, {300, 130}};
    for (int c = 0; c < (int)(sizeof sl / sizeof sl[0]); c++) test_layer_norm(ctx, c, sl[c][0], sl[c][1]);
    /* B, C, H, W: pooled rows of 1, 3 (odd H and W), 14 (Conv-4's first layer), 16 (one whole
     * block), 20 (a whole block and a short one) and 32 windows; the last above the OpenMP
     * threshold (32768 elements) with a plane count that is not a multiple of the threads;
     * then two whose fresh input gradient is above 8 MiB, which the backward streams
     * (tail_bwd_dx_stream): Conv-4's first layer (planes of 784 floats, whole 64-byte lines)
     * and 7 x 7 planes (49 floats: most planes start and end inside a line) */
    static const int64_t si[][4] = {{1, 1, 2, 2}, {2, 3, 7, 7}, {2, 3, 28, 28}, {1, 2, 33, 32},
                                    {2, 2, 9, 40}, {1, 3, 4, 65}, {6, 7, 28, 28},
                                    {90, 32, 28, 28}, {1400, 32, 7, 7}};
    for (int c = 0; c < (int)(sizeof si / sizeof si[0]); c++) test_inorm_pool_relu(ctx, c, si[c], NULL);
    /* with the output's dropout (the Conv-4 block's): one segment, a counter off the Philox
     * block boundary; segments whose streams step (one per image: plane runs that cross a
     * segment's end); 2 x 2 windows of a 4 x 4 plane (runs of many planes); above the OpenMP
     * threshold with a fresh input gradient above 8 MiB */
    static const struct {
        int64_t c[4];
        mcl_naive_drop d;
    } sd[] = {{{2, 3, 28, 28}, {11, 3, 5, 0, 0, 0.3}},
              {{5, 6, 14, 14}, {12, 4, 0, 7, 6 * 49, 0.5}},
              {{40, 32, 4, 4}, {13, 9, 2, 0, 0, 0.3}},
              {{90, 32, 28, 28}, {14, 1, 0, 3, 32 * 196 * 30, 0.3}}};
    for (int c = 0; c < (int)(sizeof sd / sizeof sd[0]); c++)
        test_inorm_pool_relu(ctx, 20 + c, sd[c].c, &sd[c].d);
    /* inorm_relu and inorm_add_pool_relu: B, C, H, W. A plane of one value; odd sides (the
     * last row/column in the statistics, in no window); rows of 2, 4 and 7 windows (the short
     * rows' paths: one by one, one padded block) and of 35 and 2050 (the loop along the row);
     * the Online-X ResNet's four block shapes at its batch of 16 (32 x 32 with 16 channels
     * above the OpenMP threshold) */
    static const int64_t sr[][4] = {{2, 3, 1, 1},    {2, 3, 7, 5},     {1, 2, 9, 9},     {1, 3, 5, 14},
                                    {2, 2, 6, 70},   {1, 2, 3, 4101},  {16, 16, 32, 32}, {16, 24, 16, 16},
                                    {16, 32, 8, 8},  {16, 64, 4, 4}};
    for (int c = 0; c < (int)(sizeof sr / sizeof sr[0]); c++) {
        test_inorm_fused(ctx, c, sr[c], 0);
        if (sr[c][2] >= 2 && sr[c][3] >= 2) test_inorm_fused(ctx, 20 + c, sr[c], 1);
    }
    /* conv_inorm_pool_relu: B, C, H, W, O, k, padding. Conv-4's first layer (28 and 32),
     * several input channels (the convolution's other per-image paths: C*k*k >= 32 takes the
     * pixel-major tile and the weight gradient's gw_tile), a 5 x 5 kernel, no padding (odd
     * output sides), 88 images (above the OpenMP thresholds, more chunks than threads), 5
     * channels out of rows of 13 (the bias sums of a grid whose rows are not whole lanes, and a
     * last group of planes of one); with and without the dropout (segments of one image whose
     * streams step) */
    static const struct {
        int64_t c[7];
        int drop;
    } sf[] = {{{3, 1, 28, 28, 32, 3, 1}, 0}, {{2, 1, 32, 32, 32, 3, 1}, 1}, {{2, 4, 9, 11, 6, 3, 1}, 1},
              {{3, 2, 10, 9, 5, 5, 2}, 0},   {{2, 3, 9, 8, 4, 3, 0}, 1},    {{88, 1, 28, 28, 32, 3, 1}, 1},
              {{3, 2, 7, 13, 5, 3, 1}, 0}};
    for (int c = 0; c < (int)(sizeof sf / sizeof sf[0]); c++) {
        const int64_t *k = sf[c].c, ny = k[0] * k[4] * ((k[2] + 2 * k[6] - k[5] + 1) / 2) * ((k[3] + 2 * k[6] - k[5] + 1) / 2);
        const mcl_naive_drop d = {21, 2, 0, 5, ny / k[0], 0.3};
        test_conv_inorm_pool_relu(ctx, c, k, sf[c].drop ? &d : NULL);
    }
    /* smn_write and the ops built on it: n, m, H, slope, shuffled. One entry; a short block
     * with shuffled entries (the backward's map of written elements); one whole block of
     * H = 10 (mlp_block's blocks of 10 units); a block and one entry of odd H; every element
     * written (gM0 = 0) with slope 0; above the OpenMP threshold (m H^2 >= 2^17): 44 blocks
     * in 11 parts, and 313 blocks in 64 parts (parts of 4 and 5 blocks: a chunk of 4 and a
     * short one), shuffled; H = 32 */
    static const smn_case ss[] = {{1, 1, 1, 0.01f, 0},        {40, 15, 7, 0.1f, 1},
                                  {300, 16, 10, 0.01f, 0},    {517, 17, 23, 0.2f, 1},
                                  {64, 64, 4, 0.0f, 0},       {6000, 700, 20, 0.01f, 0},
                                  {40000, 5000, 20, 0.01f, 1}, {20000, 3000, 32, 0.01f, 0}};
    for (int c = 0; c < (int)(sizeof ss / sizeof ss[0]); c++) test_smn_write(ctx, c, &ss[c]);
    test_dropout(ctx);
    test_gelu(ctx);
    test_exp_nonpos();

    printf("test-naive: hash of the fast results' bits: %016llx\n", (unsigned long long)g_hash);
    mcl_ctx_free(ctx);
    return tu_summary();
}
