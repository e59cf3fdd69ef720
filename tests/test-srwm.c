/* test-srwm.c — the fused self-referential weight matrix op (doc/acl-model.md §1), beyond what the
 * generic op runner (test-ops -o srwm: naive forward, finite differences, differential) checks:
 *
 *   1. the fused op equals a naive per-step loop built from basic ops of the library on the
 *      tape (slice, matmul, softmax, sigmoid, sub, add, concat), forward and every gradient
 *      through mcl_backward (reference backend); the authors' double-counted final-state
 *      gradient (doc/acl-model.md §1, "We compute the exact gradient") would be detected;
 *   2. chunk invariance: L steps in one call == L1 + L2 steps in two calls with the state
 *      carried, forward (bit-identical) and backward, on the reference and on OpenCL;
 *   3. batch independence: changing the input and initial state of sequence b changes no
 *      other sequence's outputs or gradients (bit-identical), on both backends;
 *   4. OpenCL against the reference for L = 1 and L = 1000, D = 8, 16, 32: all 12 outputs
 *      (incl. the saved q, k, β, Δ) and all 5 input gradients;
 *   5. a head size whose state does not fit the device's __local memory is a clear error
 *      (MCL_ERR_UNSUPPORTED naming D), in the forward, and in the backward alone where the
 *      forward still fits — not a crash; and the comparison used here sees a wrong value.
 *
 * The OpenCL parts print a message and are skipped when no OpenCL device exists. Inputs come
 * from Philox with the seed printed first; the last line is "N passed, N failed".
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "backend.h"
#include "tape.h" /* ctx->be: the OpenCL device's local memory size (part 5) */
#ifdef MCL_HAVE_OPENCL
#include "ocl.h"
#endif

#define SEED 20240611u

/* ================================================================================== */
/* Problems: host inputs and output gradients.                                          */

typedef struct prob {
    int64_t B, H, L, D;
    float *x;     /* [B,H,L,D]                                   */
    float *w[4];  /* initial state W_y, W_q, W_k [B,H,D,D], w_b [B,H,D,4] */
    float *gy;    /* gradient of y [B,H,L,D]                     */
    float *gw[4]; /* gradient of the final state                 */
} prob;

static int64_t n_seq(const prob *p) { return p->B * p->H * p->L * p->D; }
static int64_t n_state(const prob *p, int i) { return p->B * p->H * p->D * (i == 3 ? 4 : p->D); }

static void shape_seq(const prob *p, int64_t *s)
{
    s[0] = p->B, s[1] = p->H, s[2] = p->L, s[3] = p->D;
}
static void shape_state(const prob *p, int i, int64_t *s)
{
    s[0] = p->B, s[1] = p->H, s[2] = p->D, s[3] = i == 3 ? 4 : p->D;
}

static float *randn(int64_t n, uint64_t stream, double std)
{
    float *v = malloc((size_t)n * sizeof(float));
    if (!v) {
        fprintf(stderr, "test-srwm: out of memory\n");
        exit(1);
    }
    for (int64_t i = 0; i < n; i++) v[i] = (float)(std * mcl_rng_normal(SEED, stream, (uint64_t)i));
    return v;
}

/* x ~ N(0, 1), the state ~ N(0, 1/D) (the paper's scale), output gradients ~ N(0, 1);
 * `stream` makes problems of the same shape differ. */
static void prob_init(prob *p, int64_t B, int64_t H, int64_t L, int64_t D, uint64_t stream)
{
    p->B = B, p->H = H, p->L = L, p->D = D;
    const double ws = 1.0 / sqrt((double)D);
    p->x = randn(n_seq(p), stream * 16 + 0, 1.0);
    p->gy = randn(n_seq(p), stream * 16 + 1, 1.0);
    for (int i = 0; i < 4; i++) {
        p->w[i] = randn(n_state(p, i), stream * 16 + 2 + (uint64_t)i, ws);
        p->gw[i] = randn(n_state(p, i), stream * 16 + 6 + (uint64_t)i, 1.0);
    }
}

static void prob_free(prob *p)
{
    free(p->x);
    free(p->gy);
    for (int i = 0; i < 4; i++) {
        free(p->w[i]);
        free(p->gw[i]);
    }
}

/* What a run gives back: y and the final state (out[0..4]; out[5..11] only from run_op),
 * and the gradients of x and the initial state (g[0..4]). Host arrays, NULL when absent. */
typedef struct result {
    float *out[12];
    float *g[5];
} result;

static void result_free(result *r)
{
    for (int k = 0; k < 12; k++) free(r->out[k]);
    for (int k = 0; k < 5; k++) free(r->g[k]);
    memset(r, 0, sizeof *r);
}

/* Number of elements of output k / input gradient k. */
static int64_t out_n(const prob *p, int k)
{
    if (k == 0 || (k >= 5 && k != 7 && k != 11)) return n_seq(p);
    if (k >= 1 && k <= 4) return n_state(p, k - 1);
    return p->B * p->H * p->L * 4; /* beta, Δ_b */
}
static int64_t in_n(const prob *p, int k) { return k == 0 ? n_seq(p) : n_state(p, k - 1); }

/* ================================================================================== */
/* Comparisons.                                                                         */

/* sqrt(sum (a - b)^2 / sum b^2): the normalized rms difference (inf on NaN/Inf). */
static double nrms(const float *a, const float *b, int64_t n)
{
    double num = 0.0, den = 0.0;
    for (int64_t i = 0; i < n; i++) {
        if (!isfinite(a[i]) || !isfinite(b[i])) return INFINITY;
        const double d = (double)a[i] - (double)b[i];
        num += d * d;
        den += (double)b[i] * (double)b[i];
    }
    return sqrt(num / (den + 1e-30));
}

/* Elementwise: |a - b| <= tol * (max |b| + 1e-3) everywhere (the arrays' own scale);
 * a NaN or Inf in either array fails (err = inf). */
static int close_scaled(const float *a, const float *b, int64_t n, double tol, double *err)
{
    double mx = 0.0, md = 0.0;
    for (int64_t i = 0; i < n; i++) {
        if (!isfinite(a[i]) || !isfinite(b[i])) {
            *err = INFINITY;
            return 0;
        }
        mx = fmax(mx, fabs((double)b[i]));
        md = fmax(md, fabs((double)a[i] - (double)b[i]));
    }
    *err = md / (mx + 1e-3);
    return *err <= tol;
}

static int check_close(const char *what, const float *a, const float *b, int64_t n, double tol)
{
    double e = 0.0;
    if (!a || !b) return CHECK(0, "%s: missing data", what);
    const int ok = close_scaled(a, b, n, tol, &e);
    return CHECK(ok, "%s: scaled max difference %.3g > %.3g", what, e, tol);
}

static int check_same(const char *what, const float *a, const float *b, int64_t n)
{
    if (!a || !b) return CHECK(0, "%s: missing data", what);
    for (int64_t i = 0; i < n; i++)
        if (memcmp(&a[i], &b[i], sizeof(float)) != 0)
            return CHECK(0, "%s: element %lld differs: %.9g vs %.9g", what, (long long)i,
                         (double)a[i], (double)b[i]);
    return CHECK(1, "%s", what);
}

/* ================================================================================== */
/* Runs.                                                                                */

static mcl_tensor *new_tensor(mcl_ctx *ctx, const int64_t *shape, const float *v, int leaf)
{
    mcl_tensor *t = tu_tensor_from(ctx, 4, shape, v);
    if (t && leaf) mcl_tensor_requires_grad(t, 1);
    return t;
}

/* loss = sum(y * gy) + sum_i sum(S_i * gw_i), on the tape */
static mcl_tensor *make_loss(mcl_ctx *ctx, const prob *p, mcl_tensor *y, mcl_tensor *const S[4],
                             mcl_tensor *keep[5])
{
    int64_t sh[4];
    shape_seq(p, sh);
    keep[0] = new_tensor(ctx, sh, p->gy, 0);
    mcl_tensor *loss = mcl_sum(ctx, mcl_mul(ctx, y, keep[0]));
    for (int i = 0; i < 4; i++) {
        shape_state(p, i, sh);
        keep[1 + i] = new_tensor(ctx, sh, p->gw[i], 0);
        loss = mcl_add(ctx, loss, mcl_sum(ctx, mcl_mul(ctx, S[i], keep[1 + i])));
    }
    return loss;
}

/* Leaves x, W0 on ctx; mode 0: the fused op in one call, mode L1 > 0: two calls of L1 and
 * L - L1 steps with the state carried, mode -1: the naive per-step loop of basic ops.
 * Fills r->out[0..4] and r->g[0..4]. Returns 1 on success. */
static int run_tape(mcl_ctx *ctx, const prob *p, int64_t mode, result *r)
{
    int64_t sh[4];
    mcl_tensor *x, *w0[4], *keep[5] = {0}, *y = NULL, *S[4] = {0};
    int ok = 0;
    memset(r, 0, sizeof *r);
    shape_seq(p, sh);
    x = new_tensor(ctx, sh, p->x, 1);
    for (int i = 0; i < 4; i++) {
        shape_state(p, i, sh);
        w0[i] = new_tensor(ctx, sh, p->w[i], 1);
    }
    if (mode == 0) {
        mcl_srwm(ctx, x, w0, &y, S);
    } else if (mode > 0) {
        mcl_tensor *y1 = NULL, *y2 = NULL, *S1[4] = {0};
        mcl_tensor *x1 = mcl_slice(ctx, x, 2, 0, mode), *x2 = mcl_slice(ctx, x, 2, mode, p->L - mode);
        if (mcl_srwm(ctx, x1, w0, &y1, S1) == MCL_OK && mcl_srwm(ctx, x2, S1, &y2, S) == MCL_OK)
            y = mcl_concat(ctx, y1, y2, 2);
    } else {
        /* doc/acl-model.md §1 written with basic ops, one step at a time */
        mcl_tensor *M[4] = {w0[0], w0[1], w0[2], w0[3]};
        for (int64_t t = 0; t < p->L; t++) {
            mcl_tensor *xt = mcl_slice(ctx, x, 2, t, 1); /* [B,H,1,D] */
            mcl_tensor *yt = mcl_matmul(ctx, xt, M[0], 0, 0);
            mcl_tensor *q = mcl_softmax(ctx, mcl_matmul(ctx, xt, M[1], 0, 0));
            mcl_tensor *k = mcl_softmax(ctx, mcl_matmul(ctx, xt, M[2], 0, 0));
            mcl_tensor *beta = mcl_sigmoid(ctx, mcl_matmul(ctx, xt, M[3], 0, 0)); /* [B,H,1,4] */
            for (int i = 0; i < 4; i++) {
                /* v = q M_i, v̄ = k M_i (not yet updated), Δ = v - v̄; M_i += (k β_i) ⊗ Δ */
                mcl_tensor *dl = mcl_sub(ctx, mcl_matmul(ctx, q, M[i], 0, 0),
                                         mcl_matmul(ctx, k, M[i], 0, 0));
                mcl_tensor *kb = mcl_matmul(ctx, k, mcl_slice(ctx, beta, 3, i, 1), 1, 0); /* [B,H,D,1] */
                M[i] = mcl_add(ctx, M[i], mcl_matmul(ctx, kb, dl, 0, 0));
            }
            y = y ? mcl_concat(ctx, y, yt, 2) : yt;
        }
        for (int i = 0; i < 4; i++) S[i] = M[i];
    }
    mcl_tensor *loss = y && S[0] && S[1] && S[2] && S[3] ? make_loss(ctx, p, y, S, keep) : NULL;
    if (!loss || mcl_backward(ctx, loss) != MCL_OK) {
        CHECK(0, "run (mode %lld): %s", (long long)mode, mcl_ctx_error(ctx));
        goto done;
    }
    r->out[0] = tu_read(y);
    for (int i = 0; i < 4; i++) r->out[1 + i] = tu_read(S[i]);
    r->g[0] = tu_read(mcl_tensor_grad(x));
    for (int i = 0; i < 4; i++) r->g[1 + i] = tu_read(mcl_tensor_grad(w0[i]));
    ok = r->out[0] && r->g[0];
    for (int i = 0; i < 4; i++) ok = ok && r->out[1 + i] && r->g[1 + i];
done:
    mcl_ctx_reset(ctx);
    mcl_tensor_free(x);
    for (int i = 0; i < 4; i++) mcl_tensor_free(w0[i]);
    for (int k = 0; k < 5; k++) mcl_tensor_free(keep[k]);
    return ok;
}

/* The op through mcl_op_run / mcl_op_backward: all 12 outputs and the 5 input gradients
 * (gout from p). Returns the status of the first failing call (its message stays in ctx). */
static mcl_status run_op(mcl_ctx *ctx, const prob *p, result *r)
{
    int64_t sh[4];
    mcl_op_args a;
    mcl_tensor *in[5] = {0}, *go[5] = {0}, *gi[5] = {0};
    mcl_status s = MCL_OK;
    memset(r, 0, sizeof *r);
    memset(&a, 0, sizeof a);
    a.op = MCL_OP_SRWM;
    shape_seq(p, sh);
    in[0] = tu_tensor_from(ctx, 4, sh, p->x);
    for (int i = 0; i < 4; i++) {
        shape_state(p, i, sh);
        in[1 + i] = tu_tensor_from(ctx, 4, sh, p->w[i]);
    }
    for (int k = 0; k < 5; k++) a.in[k] = in[k];
    mcl_no_grad_begin(ctx);
    s = mcl_op_run(ctx, &a);
    mcl_no_grad_end(ctx);
    if (s != MCL_OK) goto done;
    for (int k = 0; k < 12; k++) r->out[k] = tu_read(a.out[k]);
    shape_seq(p, sh);
    go[0] = tu_tensor_from(ctx, 4, sh, p->gy);
    for (int i = 0; i < 4; i++) {
        shape_state(p, i, sh);
        go[1 + i] = tu_tensor_from(ctx, 4, sh, p->gw[i]);
    }
    for (int k = 0; k < 5; k++) {
        gi[k] = mcl_tensor_create(ctx, in[k]->ndim, in[k]->shape);
        a.gout[k] = go[k];
        a.gin[k] = gi[k];
    }
    s = mcl_op_backward(ctx, &a);
    if (s != MCL_OK) goto done;
    for (int k = 0; k < 5; k++) r->g[k] = tu_read(gi[k]);
done:
    for (int k = 0; k < 5; k++) {
        mcl_tensor_free(in[k]);
        mcl_tensor_free(go[k]);
        mcl_tensor_free(gi[k]);
    }
    mcl_ctx_reset(ctx);
    return s;
}

static const char *const OUT_NAME[12] = {"y", "W_y", "W_q", "W_k", "w_b", "q",
                                         "k", "beta", "dy", "dq", "dk", "db"};
static const char *const IN_NAME[5] = {"x", "W_y0", "W_q0", "W_k0", "w_b0"};

/* ================================================================================== */
/* 1. fused == naive loop of basic ops (reference).                                     */

static void test_naive_loop(mcl_ctx *ref)
{
    /* D = 8, 4, 64: sized copies of the reference; 5, 24: its generic copy (24: two blocks of
     * 16 columns, the second one half padding) */
    static const int64_t shapes[][4] = {{2, 2, 7, 8}, {1, 3, 5, 5}, {2, 1, 1, 4}, {1, 2, 4, 24},
                                        {1, 1, 3, 64}};
    char what[128];
    for (size_t c = 0; c < sizeof shapes / sizeof shapes[0]; c++) {
        const int64_t *s = shapes[c];
        prob p;
        result fused, naive;
        prob_init(&p, s[0], s[1], s[2], s[3], 10 + c);
        const int ok = run_tape(ref, &p, 0, &fused) & run_tape(ref, &p, -1, &naive);
        printf("1. fused vs basic-op loop, B=%lld H=%lld L=%lld D=%lld\n", (long long)s[0],
               (long long)s[1], (long long)s[2], (long long)s[3]);
        if (ok) {
            /* both float32 with sums in different orders (GEMM vs the fused loops): ~1e-6 */
            for (int k = 0; k < 5; k++) {
                snprintf(what, sizeof what, "fused vs naive: %s", OUT_NAME[k]);
                check_close(what, fused.out[k], naive.out[k], out_n(&p, k), 2e-5);
            }
            for (int k = 0; k < 5; k++) {
                snprintf(what, sizeof what, "fused vs naive: d loss / d %s", IN_NAME[k]);
                check_close(what, fused.g[k], naive.g[k], in_n(&p, k), 5e-5);
            }
            /* the authors' gradient adds the incoming final-state gradient once more: the
             * same comparison must reject it */
            for (int i = 0; i < 4; i++) {
                const int64_t n = n_state(&p, i);
                float *dbl = malloc((size_t)n * sizeof(float));
                double e = 0.0;
                for (int64_t j = 0; j < n; j++) dbl[j] = fused.g[1 + i][j] + p.gw[i][j];
                CHECK(!close_scaled(dbl, naive.g[1 + i], n, 5e-5, &e),
                      "a double-counted final-state gradient of %s is detected (error %.3g)",
                      IN_NAME[1 + i], e);
                free(dbl);
            }
        }
        result_free(&fused);
        result_free(&naive);
        prob_free(&p);
    }
}

/* ================================================================================== */
/* 2. chunk invariance, 3. batch independence (any backend).                            */

static void test_chunks(mcl_ctx *ctx, const char *be)
{
    char what[128];
    prob p;
    result one, two;
    prob_init(&p, 2, 2, 13, 8, 20);
    const int ok = run_tape(ctx, &p, 0, &one) & run_tape(ctx, &p, 5, &two);
    printf("2. chunk invariance on %s: 13 steps = 5 + 8\n", be);
    if (ok) {
        /* forward: the second call starts from the exact state the first one ended with */
        for (int k = 0; k < 5; k++) {
            snprintf(what, sizeof what, "%s: one call vs two calls: %s (bit-identical)", be, OUT_NAME[k]);
            check_same(what, two.out[k], one.out[k], out_n(&p, k));
        }
        /* backward: the first call's walk starts from its own saved final state instead of
         * the one recovered by the second call's subtractions: rounding-level differences */
        for (int k = 0; k < 5; k++) {
            snprintf(what, sizeof what, "%s: one call vs two calls: d loss / d %s", be, IN_NAME[k]);
            check_close(what, two.g[k], one.g[k], in_n(&p, k), 1e-5);
        }
    }
    result_free(&one);
    result_free(&two);
    prob_free(&p);
}

static void test_batch_independence(mcl_ctx *ctx, const char *be)
{
    prob p;
    result a, b;
    prob_init(&p, 3, 2, 6, 8, 30);
    mcl_status s1 = run_op(ctx, &p, &a);
    /* change sequence b = 1 (both heads): its input, initial state and output gradients */
    const int64_t H = p.H, L = p.L, D = p.D;
    for (int64_t i = 1 * H * L * D; i < 2 * H * L * D; i++) {
        p.x[i] = -p.x[i] + 0.5f;
        p.gy[i] *= 2.0f;
    }
    for (int w = 0; w < 4; w++) {
        const int64_t per = n_state(&p, w) / p.B;
        for (int64_t i = per; i < 2 * per; i++) {
            p.w[w][i] *= -1.5f;
            p.gw[w][i] += 1.0f;
        }
    }
    mcl_status s2 = run_op(ctx, &p, &b);
    printf("3. batch independence on %s: sequence 1 of 3 changed\n", be);
    if (CHECK(s1 == MCL_OK && s2 == MCL_OK, "%s: runs: %s", be, mcl_ctx_error(ctx))) {
        int same_others = 1, changed = 0;
        for (int k = 0; k < 17; k++) {
            const int64_t n = k < 12 ? out_n(&p, k) : in_n(&p, k - 12), per = n / p.B;
            const float *u = k < 12 ? a.out[k] : a.g[k - 12], *v = k < 12 ? b.out[k] : b.g[k - 12];
            if (memcmp(u, v, (size_t)per * sizeof(float)) != 0 ||
                memcmp(u + 2 * per, v + 2 * per, (size_t)per * sizeof(float)) != 0) {
                same_others = 0;
                printf("  %s %s: sequences 0 or 2 changed\n", be, k < 12 ? OUT_NAME[k] : IN_NAME[k - 12]);
            }
            if (memcmp(u + per, v + per, (size_t)per * sizeof(float)) != 0) changed++;
        }
        CHECK(same_others, "%s: the other sequences' 12 outputs and 5 gradients are bit-identical", be);
        CHECK(changed == 17, "%s: sequence 1's outputs and gradients did change (%d of 17)", be, changed);
    }
    result_free(&a);
    result_free(&b);
    prob_free(&p);
}

/* ================================================================================== */
/* 4. OpenCL vs reference, 5. the local-memory limit.                                   */

#ifdef MCL_HAVE_OPENCL
static void test_ocl_vs_ref(mcl_ctx *ref, mcl_ctx *ocl)
{
    static const int64_t Ls[2] = {1, 1000}, Ds[3] = {8, 16, 32};
    char what[160];
    for (int il = 0; il < 2; il++)
        for (int id = 0; id < 3; id++) {
            prob p;
            result r, o;
            const int64_t L = Ls[il], D = Ds[id];
            prob_init(&p, 2, 1, L, D, 40 + (uint64_t)(il * 3 + id));
            mcl_status sr = run_op(ref, &p, &r), so = run_op(ocl, &p, &o);
            printf("4. OpenCL vs reference, B=2 H=1 L=%lld D=%lld\n", (long long)L, (long long)D);
            if (CHECK(sr == MCL_OK && so == MCL_OK, "L=%lld D=%lld: runs: %s / %s", (long long)L,
                      (long long)D, sr ? mcl_ctx_error(ref) : "ok", so ? mcl_ctx_error(ocl) : "ok")) {
                /* float32 sums in other orders; over 1000 steps the state carries them
                 * along (forward) and the weight recovery adds its own (backward) */
                const double tol = L == 1 ? 1e-5 : 1e-4;
                double worst = 0.0;
                for (int k = 0; k < 17; k++) {
                    const float *u = k < 12 ? o.out[k] : o.g[k - 12];
                    const float *v = k < 12 ? r.out[k] : r.g[k - 12];
                    const int64_t n = k < 12 ? out_n(&p, k) : in_n(&p, k - 12);
                    const double e = nrms(u, v, n);
                    worst = fmax(worst, e);
                    snprintf(what, sizeof what, "L=%lld D=%lld: OpenCL %s%s vs reference: rms %.3g",
                             (long long)L, (long long)D, k < 12 ? "" : "d loss / d ",
                             k < 12 ? OUT_NAME[k] : IN_NAME[k - 12], e);
                    CHECK(e <= tol, "%s > %.3g", what, tol);
                }
                printf("  largest normalized rms difference %.3g (limit %.3g)\n", worst, tol);
            }
            result_free(&r);
            result_free(&o);
            prob_free(&p);
        }
}

/* The kernels' __local floats (the formula of src/opencl/srwm.c, local_floats). */
static size_t local_bytes(int bwd, int64_t D)
{
    const size_t d = (size_t)D, state = 3 * d * (d + 1) + 5 * d;
    return (bwd ? 2 * state + 15 * d + 8 : state + 8 * d + 4) * sizeof(float);
}

static void test_local_limit(mcl_ctx *ocl)
{
    const size_t lm = mcl_ocl_of(ocl->be)->local_mem;
    char needle[64];
    prob p;
    result r;
    /* the smallest multiple of 8 whose forward state does not fit */
    int64_t Df = 8;
    while (local_bytes(0, Df) <= lm) Df += 8;
    printf("5. local memory %zu bytes: forward refuses D=%lld\n", lm, (long long)Df);
    prob_init(&p, 1, 1, 1, Df, 50);
    mcl_status s = run_op(ocl, &p, &r);
    snprintf(needle, sizeof needle, "D=%lld", (long long)Df);
    CHECK(s == MCL_ERR_UNSUPPORTED, "forward with D=%lld: status %s (want unsupported)",
          (long long)Df, mcl_status_str(s));
    CHECK_ERR("forward, D too large", ocl, TU_ST(MCL_ERR_UNSUPPORTED), needle);
    CHECK_ERR("forward, D too large: names the limit", ocl, TU_ST(MCL_ERR_UNSUPPORTED),
              "CL_DEVICE_LOCAL_MEM_SIZE");
    printf("  message: %s\n", mcl_ctx_error(ocl));
    mcl_ctx_clear_error(ocl);
    result_free(&r);
    prob_free(&p);

    /* a D whose forward fits but whose backward (weights + gradient) does not */
    int64_t Db = 8;
    while (local_bytes(1, Db) <= lm) Db += 8;
    if (local_bytes(0, Db) <= lm) {
        printf("5. backward alone (its forward fits) refuses D=%lld\n", (long long)Db);
        prob_init(&p, 1, 1, 2, Db, 51);
        s = run_op(ocl, &p, &r);
        snprintf(needle, sizeof needle, "D=%lld", (long long)Db);
        CHECK(s == MCL_ERR_UNSUPPORTED && r.out[0] != NULL,
              "backward with D=%lld: forward ran, backward status %s (want unsupported)",
              (long long)Db, mcl_status_str(s));
        CHECK_ERR("backward, D too large", ocl, TU_ST(MCL_ERR_UNSUPPORTED), needle);
        printf("  message: %s\n", mcl_ctx_error(ocl));
        mcl_ctx_clear_error(ocl);
        result_free(&r);
        prob_free(&p);
    }
    /* the context is still usable */
    prob_init(&p, 1, 1, 3, 8, 52);
    CHECK(run_op(ocl, &p, &r) == MCL_OK, "a fitting D runs after the errors: %s", mcl_ctx_error(ocl));
    result_free(&r);
    prob_free(&p);
}
#endif

/* ================================================================================== */

/* The comparisons must see a wrong value (and none where there is none). */
static void test_checker(void)
{
    const float a[4] = {1.0f, -2.0f, 3.0f, 0.5f};
    float b[4] = {1.0f, -2.0f, 3.0f, 0.5f};
    double e = 0.0;
    CHECK(close_scaled(a, b, 4, 0.0, &e) && nrms(a, b, 4) == 0.0, "equal arrays compare equal");
    b[2] = 3.001f;
    CHECK(!close_scaled(a, b, 4, 1e-4, &e), "a wrong element is detected (error %.3g)", e);
    CHECK(nrms(a, b, 4) > 1e-5, "a wrong element shows in the rms difference");
    b[2] = NAN;
    CHECK(!close_scaled(a, b, 4, 1e30, &e) && !(nrms(a, b, 4) <= 1e30), "a NaN is detected");
}

int main(void)
{
    tu_begin("test-srwm", SEED);
    test_checker();
    mcl_ctx *ref = tu_ctx_ref();
    test_naive_loop(ref);
    test_chunks(ref, "reference");
    test_batch_independence(ref, "reference");
#ifdef MCL_HAVE_OPENCL
    char err[512];
    mcl_ctx *ocl = NULL;
    mcl_status st = mcl_ctx_create(&ocl, MCL_BACKEND_OPENCL, NULL, err, sizeof err);
    if (st == MCL_ERR_UNSUPPORTED) { /* no OpenCL platform or device: the only reason to skip */
        printf("no OpenCL device (%s): the OpenCL parts are skipped\n", err);
    } else if (st != MCL_OK || !ocl) {
        CHECK(0, "the OpenCL backend does not open: %s", err);
    } else {
        test_chunks(ocl, "OpenCL");
        test_batch_independence(ocl, "OpenCL");
        test_ocl_vs_ref(ref, ocl);
        test_local_limit(ocl);
        mcl_ctx_free(ocl);
    }
#else
    printf("built without OpenCL: the OpenCL parts are skipped\n");
#endif
    mcl_ctx_free(ref);
    return tu_summary();
}
