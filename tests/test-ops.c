/* test-ops.c — the op test runner: every op of ops.def, forward and backward.
 *
 *   tests/test-ops [--list] [-o OP] [--family F] [--seed N] [--backend ref|opencl] [--small N] [-v]
 *               (--small N: only the cases with at most N input elements and no big case:
 *               the set `make check-oclgrind` runs under the oclgrind simulator)
 *   tests/test-ops --families              (one line per family: its name, then its ops)
 *   tests/test-ops --check-families F...   (exit 0 iff F... are exactly the families)
 *
 * Families are the family column of ops.def (the src/ref/<family>.c file of the op), so
 * every op is in exactly one. `make check` runs one test per family (tests/ops/<family>.sh,
 * in parallel); tests/test-ops-families.sh checks with --check-families that those scripts
 * name every family and nothing else, so an op whose family has no script fails the suite.
 *
 * For every op of src/common/ops.def (the loop runs over mcl_op_table, so an op added there
 * without test cases here is a FAILURE "no test cases") and every case of its table below:
 *
 *   ref fwd     the reference forward (mcl_op_run in a no-grad scope) against a naive host
 *               computation in double (the readable oracles of src/ref/naive/ where the op
 *               does real arithmetic, a one-line formula below otherwise); the inputs must come out
 *               of the call unchanged (in-place ops: the mutated inputs are what is compared);
 *   ref bwd     mcl_op_backward runs, gives finite values, and ACCUMULATES (gin pre-filled
 *               with a known base gives base + the gradient of a zero-filled gin);
 *   gradcheck   the analytic gradient against central finite differences (Richardson-
 *               extrapolated from steps h and 2h) of L = sum_k sum_i gout_k[i] * out_k[i]
 *               (accumulated in double), perturbing every input element, or, for big
 *               inputs, a fixed sample (half the largest analytic gradients, half random);
 *   (EXTRAS)    some ops also have a gradient oracle in double, checked against the reference
 *               backward in "ref bwd", and/or checks the table cannot express, run after their
 *               cases and reported in the columns they concern (smn_write: the written set on
 *               both backends, bad indices refused by the reference and skipped by OpenCL, the
 *               public wrapper; rel_attn: the same bits with 1 and 3 OpenMP threads, the
 *               public wrappers);
 *   opencl fwd / opencl bwd / diff
 *               the same forward on the OpenCL backend, its backward against the reference
 *               one, and the reference and OpenCL outputs on identical inputs against each
 *               other (normalized MSE). They run only with --backend opencl in a build with
 *               OpenCL; otherwise they print "-".
 *
 * Fresh buffers. The runner's own tensors are views inside guarded buffers, which the
 * backends' lazy zeroing never sees as fresh (src/common/bufpool.h). So each forward is run
 * once more with outputs allocated by the front end, and each backward once more into newly
 * created gradient tensors: both backends then skip the zero-fill where the op says it
 * stores every element, and the results must equal the guarded ones exactly. The runner
 * sets METACL_DEBUG_POISON=1, so those skipped buffers start as NaN: an op that claims to
 * store everything but leaves an element unwritten shows NaN there and FAILs (in ref/opencl
 * fwd or bwd).
 *
 * Every failing check prints one line (op, case shapes and params, column, error and tolerance).
 * The last line is "N passed, N failed" (N counts op x column checks); exit 0 when nothing
 * failed, 1 otherwise, 2 on a usage error, 77 (automake SKIP) for --backend opencl without
 * OpenCL (not built, or no OpenCL device). When OpenCL is wanted (--backend opencl, or the
 * default mode) and the backend exists but fails to open for another reason (a kernel build
 * error, say), the run FAILS (exit 1): only a missing device is a reason to skip.
 *
 * The runner can fail, and proves it: METACL_TEST_BREAK=<op> (a build with --enable-test-hooks)
 * adds 1e-2 to one element of that
 * op's reference forward output after the backend call (so its "ref fwd" must FAIL), and at
 * start the checker is shown a deliberately wrong array and must call it a mismatch.
 *
 * Cases cover odd sizes (1, 5, 7, 13), 1 to 4 dims, every axis / transpose / permutation the
 * op allows, and one big case per op (68k elements, above the reference backend's OpenMP
 * thresholds). Inputs come from Philox (rng.h) keyed by (--seed, a hash of the op name + the
 * case number), so a case draws the same numbers whatever other ops exist, on either backend.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metacl.h"
#include "backend.h"
#include "tape.h" /* the context's backend table: is every op implemented? */
#include "naive.h" /* the readable oracles, src/ref/naive/ */

#define DEFAULT_SEED 1234u
/* results of a forward: outputs, or the inputs of an in-place op */
#define MAX_IO (MCL_MAX_OUT > MCL_MAX_IN ? MCL_MAX_OUT : MCL_MAX_IN)
#define MAX_CASES 16   /* cases per op (the generators stop earlier) */
#define GC_SAMPLES 64  /* finite differences on at most this many elements per input */
/* gradcheck error = max|num - ana| / (max|ana| + GRAD_FLOOR * gscale), per input: gout has
 * |g| in [0.5, 1.5], so gradients are O(gscale) (1 but for means) unless f' itself is small;
 * the floor keeps a one-element case with f'(x) ~ 0 from turning the float32 forward's
 * absolute noise into a large ratio */
#define GRAD_FLOOR 1e-2
#define FWD_FLOOR 1.0 /* forward error = max|got - want| / (max|want| + FWD_FLOOR); inputs are O(1) */

/* ================================================================================== */
/* Tolerances, each with the reason for its size (eps = 2^-24 = 6e-8, float32). The     */
/* numeric gradient is Richardson-extrapolated central differences, (4 D(h) - D(2h)) / 3: */
/* the h^2 truncation terms cancel, what is left is O(h^4) plus the float32 forward's    */
/* rounding noise amplified by ~1/h. Observed maxima over 5000 seeds: see each comment.   */

/* forward: the op only moves or selects float32 values; nothing is rounded */
#define FT_EXACT 0.0
/* forward: one or two correctly rounded float32 operations per element (<= 2 ulp = 1.2e-7;
 * observed 5e-8), with room for OpenCL's looser division (2.5 ulp) */
#define FT_ROUND 1e-6
/* forward: float32 math functions: C libm <= 1-2 ulp (observed 6e-8); OpenCL allows up to
 * 16 ulp (erf) = 1e-6 relative */
#define FT_LIBM 2e-6
/* forward: float32 sums of <= 210 terms (reductions, K <= 13 dot products, row sums): a
 * random walk of n roundings, ~sqrt(n) * eps * sum|x| / (max|out| + 1); observed 2.5e-7 */
#define FT_SUM 2e-6
/* in-place updates (sgd/adam/clip): two steps of a few float32 ops each, Adam's
 * m / (sqrt(v) + eps) adds sqrt's rounding: ~10 ulp; observed 1.3e-7 */
#define FT_OPTIM 2e-6
/* gradcheck, linear (or, per input, linear) op with h = 1: central differences are exact,
 * only the float32 rounding of the outputs remains, eps * |out| * sqrt(n) / 2h; observed
 * 2.5e-5 (bias_add: a column sum over up to 42 rows) */
#define GT_LIN 1e-4
/* gradcheck, smooth op, h = 2e-2 on O(1) inputs: truncation O(h^4) ~ 1e-7, noise a few ulp of
 * |L| / h ~ 1e-5 absolute, relative to max|ana| (softmax of N(0, 9) rows: small, ~0.05);
 * observed 2.7e-4 (softmax), 3.5e-5 (gelu). A 1% error in one term of f' is > 2e-3 */
#define GT_SMOOTH 1e-3
/* gradcheck, relu-like op, h = 5e-3 with |x| >= 2e-2 (x +- 2h never crosses the kink):
 * piecewise linear, only the noise eps * |f| / h remains; observed 9e-5 (elu's exp side) */
#define GT_KINK 5e-4
/* gradcheck, layer_norm, h = 1e-2: rows of 5 values can have a std of ~0.3, so the
 * curvature scales by 1/std^2 and the noise by sqrt(N) * rstd; observed 1.8e-4 */
#define GT_NORM 1e-3
/* gradcheck, smn_write: piecewise linear with its kinks kept 20h away (gen_smn_write), so only
 * the float32 rounding of the m outputs a phi element moves is left, ~eps·|out|·sqrt(2m) / 2h
 * absolute, measured against the floor 0.01·sqrt(m) where a sum such as b3's gradient cancels;
 * observed 5.7e-4 over 300 seeds (h = 1e-2, m <= 40; h = 2e-3, m ~ 1843) */
#define GT_SMN 2e-3
/* backward against a gradient oracle in double (opextra.naive_bwd), for ops whose gradients
 * are sums over many terms: the reference's float32 activations move each term by ~1e-7 and
 * the sums cancel (gradients far below their terms); observed 1.7e-6 over 300 seeds */
#define BT_SUM 1e-5
/* backward accumulation check: (base + g) is one float32 rounding away from base + g */
#define ACC_TOL 1e-6
/* Differential mode: root of the normalized MSE, sqrt(sum (ocl-ref)^2 / sum ref^2), of the
 * OpenCL outputs (forward) and input gradients (backward) against the reference's, on
 * identical inputs. One limit per op, chosen by what the op computes: */
/* moves/selects float32 values or applies the same correctly rounded ops: identical bits */
#define DT_EXACT 0.0
/* one or two rounded float32 ops per element; OpenCL 1.2 may round division 2.5 ulp where
 * the device lacks correctly rounded division: a few ulp in rms ~ 1e-7, limit 10x that */
#define DT_ROUND 1e-6
/* math builtins (exp, log, tanh, erf): OpenCL allows 3-16 ulp where C libm has <= 1-2:
 * rms of a few ulp over an array ~ 5e-7; backward formulas compose several of them */
#define DT_LIBM 1e-5
/* sums: the device sums in another order (work-group trees vs the reference's double
 * accumulation): sqrt(n) eps-scale differences for n <= 68k terms ~ 1e-6 */
#define DT_SUM 1e-5
/* GEMM through CLBlast: its own K blocking and FMA use; K up to 521 here: ~sqrt(K) eps
 * relative per element plus cancellation in the backward sums; looser than elementwise */
#define DT_GEMM 1e-4

/* Guard regions: every tensor the runner creates (inputs, outputs, gradients) is a view into
 * a larger buffer with GUARD sentinel elements on each side; any write outside the view by a
 * kernel is caught when the sentinels are checked after the op. */
#define GUARD 37
#define GUARD_VAL (-1.2345e30f)

/* ================================================================================== */
/* Host random numbers: Philox (inline in rng.h), stateless, one stream per case.       */

typedef struct trng {
    uint64_t seed, stream, index;
} trng;

static double trng_unit(trng *r) /* [0, 1) */
{
    return (double)mcl_rng_uniform(r->seed, r->stream, r->index++);
}

static double trng_normal(trng *r) /* Box-Muller, N(0, 1) */
{
    double u1 = 1.0 - trng_unit(r); /* (0, 1] */
    double u2 = trng_unit(r);
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

static int64_t trng_int(trng *r, int64_t lo, int64_t hi) /* integer in [lo, hi] */
{
    int64_t v = lo + (int64_t)(trng_unit(r) * (double)(hi - lo + 1));
    return v > hi ? hi : v;
}

static uint64_t fnv1a(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

/* ================================================================================== */
/* Small helpers.                                                                       */

static void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size);
    if (!p) {
        fprintf(stderr, "test-ops: out of host memory\n");
        exit(1);
    }
    return p;
}

static int64_t shape_numel(int ndim, const int64_t *shape)
{
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) n *= shape[d];
    return n;
}

static void shape_str(char *buf, size_t len, int ndim, const int64_t *shape)
{
    size_t pos = 0;
    buf[0] = '\0';
    pos += (size_t)snprintf(buf + pos, len - pos, "[");
    for (int d = 0; d < ndim && pos < len; d++)
        pos += (size_t)snprintf(buf + pos, len - pos, "%s%" PRId64, d ? "," : "", shape[d]);
    if (pos < len) snprintf(buf + pos, len - pos, "]");
}

/* A host copy of one tensor: shape and values, float (from a backend) or double (naive). */
typedef struct harr {
    int ndim;
    int64_t shape[MCL_MAX_DIMS];
    int64_t n;
    float *f;
    double *d;
} harr;

static void harr_free(harr *h)
{
    free(h->f);
    free(h->d);
    memset(h, 0, sizeof *h);
}

static void harr_set_shape(harr *h, int ndim, const int64_t *shape)
{
    h->ndim = ndim;
    for (int d = 0; d < MCL_MAX_DIMS; d++) h->shape[d] = d < ndim ? shape[d] : 1;
    h->n = shape_numel(ndim, shape);
}

/* Allocate the naive ("want") values of a result of the given shape. */
static double *want_new(harr *w, int ndim, const int64_t *shape)
{
    harr_set_shape(w, ndim, shape);
    w->d = xcalloc((size_t)w->n, sizeof(double));
    return w->d;
}

static int all_finite(const float *v, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        if (!isfinite(v[i])) return 0;
    return 1;
}

/* The checker: max |got - want| / (max |want| + floor). A non-finite got gives +inf, a NaN
 * difference gives NaN: both fail the test "err <= tol" below. */
static double cmp_err(const float *got, const double *want, int64_t n, double floor_)
{
    double maxd = 0.0, maxw = 0.0;
    for (int64_t i = 0; i < n; i++) {
        if (!isfinite(got[i])) return INFINITY;
        double d = fabs((double)got[i] - want[i]);
        if (!(d <= maxd)) maxd = d;
        if (fabs(want[i]) > maxw) maxw = fabs(want[i]);
    }
    return maxd / (maxw + floor_);
}

static int within(double err, double tol)
{
    return err <= tol; /* false for NaN */
}

/* Normalized MSE of two float arrays (differential mode), as a root: sqrt(sum d^2 / sum b^2).
 * NaN/Inf must be at the same places in both (parity), else +inf. */
static double nmse_err(const float *a, const float *b, int64_t n)
{
    double num = 0.0, den = 0.0;
    for (int64_t i = 0; i < n; i++) {
        int fa = isfinite(a[i]) != 0, fb = isfinite(b[i]) != 0;
        if (fa != fb) return INFINITY;
        if (!fa) {
            if (!isnan(a[i]) != !isnan(b[i]) || (!isnan(a[i]) && a[i] != b[i])) return INFINITY;
            continue;
        }
        double d = (double)a[i] - (double)b[i];
        num += d * d;
        den += (double)b[i] * (double)b[i];
    }
    return sqrt(num / (den + 1e-30));
}

/* ================================================================================== */
/* Test cases.                                                                          */

typedef struct tcase {
    int n_in;
    int ndim[MCL_MAX_IN];
    int64_t shape[MCL_MAX_IN][MCL_MAX_DIMS];
    float *x[MCL_MAX_IN];     /* host inputs                                           */
    int no_grad[MCL_MAX_IN];  /* 1: the input gets no gradient (gin left NULL)           */
    mcl_op_params p;
    int calls;                /* in-place ops: successive calls (default 1)            */
    int step_i;               /* >= 0: p.i[step_i] = 1, 2, ... on successive calls      */
    int gc_samples;           /* finite differences on at most this many elements/input */
    double fwd_tol_scale;     /* multiplies the forward tolerance (reason where it is set) */
    double h_scale;           /* multiplies the op's finite-difference step (idem)       */
    double gscale;            /* natural size of the gradients: GRAD_FLOOR is relative to it
                                 (mean: 1/n, so a mean's tiny gradients are still checked) */
    trng rng;
    char desc[200];
} tcase;

static void tc_init(tcase *tc, uint64_t seed, uint64_t stream)
{
    memset(tc, 0, sizeof *tc);
    tc->calls = 1;
    tc->step_i = -1;
    tc->gc_samples = GC_SAMPLES;
    tc->fwd_tol_scale = 1.0;
    tc->h_scale = 1.0;
    tc->gscale = 1.0;
    tc->rng.seed = seed;
    tc->rng.stream = stream;
}

static void tc_free(tcase *tc)
{
    for (int k = 0; k < MCL_MAX_IN; k++) free(tc->x[k]);
    memset(tc->x, 0, sizeof tc->x);
}

static int64_t tc_n(const tcase *tc, int j)
{
    return shape_numel(tc->ndim[j], tc->shape[j]);
}

/* Append an input of shape s = {ndim, d0, d1, d2, d3} (zero-filled); returns its index. */
static int add_in(tcase *tc, const int64_t *s)
{
    int j = tc->n_in++;
    tc->ndim[j] = (int)s[0];
    for (int d = 0; d < MCL_MAX_DIMS; d++) tc->shape[j][d] = d < s[0] ? s[1 + d] : 1;
    tc->x[j] = xcalloc((size_t)tc_n(tc, j), sizeof(float));
    return j;
}

static int fill_normal(tcase *tc, int j, double mean, double std)
{
    for (int64_t i = 0; i < tc_n(tc, j); i++)
        tc->x[j][i] = (float)(mean + std * trng_normal(&tc->rng));
    return j;
}

static int fill_uniform(tcase *tc, int j, double lo, double hi)
{
    for (int64_t i = 0; i < tc_n(tc, j); i++)
        tc->x[j][i] = (float)(lo + (hi - lo) * trng_unit(&tc->rng));
    return j;
}

/* N(0, 1) pushed away from 0: |x| >= 2e-2 (relu-like kinks stay out of reach of h = 5e-3). */
static int fill_away0(tcase *tc, int j)
{
    for (int64_t i = 0; i < tc_n(tc, j); i++) {
        double v = trng_normal(&tc->rng);
        if (fabs(v) < 2e-2) v = v < 0 ? -2e-2 - fabs(v) : 2e-2 + fabs(v);
        tc->x[j][i] = (float)v;
    }
    return j;
}

static int fill_int(tcase *tc, int j, int64_t lo, int64_t hi)
{
    for (int64_t i = 0; i < tc_n(tc, j); i++) tc->x[j][i] = (float)trng_int(&tc->rng, lo, hi);
    return j;
}

/* "[7,13] [13] f=(0.5) i=(1,0)": input shapes and the non-zero leading params. */
static void tc_describe(tcase *tc)
{
    size_t pos = 0, len = sizeof tc->desc;
    char sh[64];
    for (int j = 0; j < tc->n_in && pos < len; j++) {
        shape_str(sh, sizeof sh, tc->ndim[j], tc->shape[j]);
        pos += (size_t)snprintf(tc->desc + pos, len - pos, "%s%s", j ? " " : "", sh);
    }
    int nf = 0, ni = 0, nu = 0;
    for (int k = 0; k < 8; k++) {
        if (tc->p.f[k] != 0.0f) nf = k + 1;
        if (tc->p.i[k] != 0) ni = k + 1;
    }
    for (int k = 0; k < 4; k++)
        if (tc->p.u[k] != 0) nu = k + 1;
    for (int k = 0; k < nf && pos < len; k++)
        pos += (size_t)snprintf(tc->desc + pos, len - pos, "%s%g%s", k ? "," : " f=(",
                                (double)tc->p.f[k], k == nf - 1 ? ")" : "");
    for (int k = 0; k < ni && pos < len; k++)
        pos += (size_t)snprintf(tc->desc + pos, len - pos, "%s%" PRId64 "%s", k ? "," : " i=(",
                                tc->p.i[k], k == ni - 1 ? ")" : "");
    for (int k = 0; k < nu && pos < len; k++)
        pos += (size_t)snprintf(tc->desc + pos, len - pos, "%s%" PRIu64 "%s", k ? "," : " u=(",
                                tc->p.u[k], k == nu - 1 ? ")" : "");
    if (tc->calls > 1 && pos < len)
        snprintf(tc->desc + pos, len - pos, " x%d calls", tc->calls);
}

/* ---- case generators: gen_X(k, tc) builds case k of op X; returns 0 past the last case ---- */

#define S1(a) ((const int64_t[5]){1, a, 1, 1, 1})
#define S2(a, b) ((const int64_t[5]){2, a, b, 1, 1})
#define S3(a, b, c) ((const int64_t[5]){3, a, b, c, 1})
#define S4(a, b, c, d) ((const int64_t[5]){4, a, b, c, d})

/* Shapes shared by the elementwise ops: odd sizes, 1 to 4 dims. */
static const int64_t EW_SH[][5] = {{1, 1}, {1, 5}, {2, 7, 13}, {3, 2, 3, 5}, {4, 2, 1, 3, 7}};
#define N_EW ((int)(sizeof EW_SH / sizeof EW_SH[0]))

/* One "big" case per op: BIG_R x BIG_C = 68251 elements, above every OpenMP threshold of the
 * reference backend (the largest is 65536), so its parallel loops are checked too. Finite
 * differences on big inputs use only BIG_SAMPLES elements (each one costs 4 full op runs). */
#define BIG_R 521
#define BIG_C 131
#define BIG_SAMPLES 16
static const int64_t BIG_SH[5] = {2, BIG_R, BIG_C};

static void mark_big(tcase *tc)
{
    tc->gc_samples = BIG_SAMPLES;
}

/* Case k of the shared elementwise list (k == N_EW: the big case); 0 past the end. */
static const int64_t *ew_shape(int k, tcase *tc)
{
    if (k > N_EW) return NULL;
    if (k < N_EW) return EW_SH[k];
    mark_big(tc);
    return BIG_SH;
}

static int gen_binary(int k, tcase *tc)
{
    const int64_t *s = ew_shape(k, tc);
    if (!s) return 0;
    fill_normal(tc, add_in(tc, s), 0.0, 1.0);
    fill_normal(tc, add_in(tc, s), 0.0, 1.0);
    return 1;
}

static int gen_unary(int k, tcase *tc) /* N(0, 1) */
{
    const int64_t *s = ew_shape(k, tc);
    if (!s) return 0;
    fill_normal(tc, add_in(tc, s), 0.0, 1.0);
    return 1;
}

static int gen_scale(int k, tcase *tc)
{
    static const float f[N_EW + 1] = {0.5f, -1.75f, 3.0f, 1.0f, -0.25f, 0.3f};
    if (!gen_unary(k, tc)) return 0;
    tc->p.f[0] = f[k];
    return 1;
}

static int gen_bias_add(int k, tcase *tc)
{
    static const int64_t xs[][5] = {{1, 1},          {1, 5},     {2, 7, 13}, {3, 2, 3, 5},
                                    {4, 2, 2, 3, 7}, {2, 13, 1}, {2, BIG_R, BIG_C}};
    const int nx = (int)(sizeof xs / sizeof xs[0]);
    if (k >= nx) return 0;
    if (k == nx - 1) mark_big(tc);
    int nd = (int)xs[k][0];
    fill_normal(tc, add_in(tc, xs[k]), 0.0, 1.0);
    fill_normal(tc, add_in(tc, S1(xs[k][nd])), 0.0, 1.0);
    return 1;
}

/* bias_add's cases, then two where one input gets no gradient (the backward's other paths:
 * x alone, as the LM's fast steps ask, and the bias alone) */
static int gen_bias_gelu(int k, tcase *tc)
{
    if (gen_bias_add(k, tc)) return 1;
    static const int64_t xs[][3] = {{2, 9, 6}, {2, 70, 5}};
    const int j = k - 7;
    if (j < 0 || j > 1) return 0;
    fill_normal(tc, add_in(tc, xs[j]), 0.0, 1.0);
    fill_normal(tc, add_in(tc, S1(xs[j][2])), 0.0, 1.0);
    tc->no_grad[1 - j] = 1; /* case 7: x's gradient only; case 8: the bias's only */
    return 1;
}

/* bias_add's shapes with two biases (N(0, 1)); then x's gradient alone (the LM's fast
 * steps) and the biases' alone */
static int gen_bias_add2(int k, tcase *tc)
{
    static const int64_t xs[][5] = {{1, 1},          {1, 5},     {2, 7, 13}, {3, 2, 3, 5},
                                    {4, 2, 2, 3, 7}, {2, 13, 1}, {2, BIG_R, BIG_C},
                                    {2, 9, 6},       {2, 70, 5}};
    const int nx = (int)(sizeof xs / sizeof xs[0]);
    if (k >= nx) return 0;
    if (k == 6) mark_big(tc);
    int nd = (int)xs[k][0];
    fill_normal(tc, add_in(tc, xs[k]), 0.0, 1.0);
    fill_normal(tc, add_in(tc, S1(xs[k][nd])), 0.0, 1.0);
    fill_normal(tc, add_in(tc, S1(xs[k][nd])), 0.0, 1.0);
    if (k == 7) tc->no_grad[1] = tc->no_grad[2] = 1;
    if (k == 8) tc->no_grad[0] = 1;
    return 1;
}

static int gen_kink(int k, tcase *tc) /* relu-like: |x| >= 2e-2 */
{
    const int64_t *s = ew_shape(k, tc);
    if (!s) return 0;
    fill_away0(tc, add_in(tc, s));
    return 1;
}

static int gen_leaky_relu(int k, tcase *tc)
{
    static const float f[N_EW + 1] = {0.1f, 0.01f, 0.2f, 0.5f, -0.3f, 0.1f};
    if (!gen_kink(k, tc)) return 0;
    tc->p.f[0] = f[k];
    return 1;
}

static int gen_elu(int k, tcase *tc)
{
    static const float f[N_EW + 1] = {1.0f, 0.5f, 1.5f, 1.0f, 0.1f, 1.0f};
    if (!gen_kink(k, tc)) return 0;
    tc->p.f[0] = f[k];
    return 1;
}

static int gen_log(int k, tcase *tc) /* positive inputs in [0.5, 2] */
{
    const int64_t *s = ew_shape(k, tc);
    if (!s) return 0;
    fill_uniform(tc, add_in(tc, s), 0.5, 2.0);
    return 1;
}

/* matmul: M, K, N, transposes, batch dims (0, 1 or 2 of them). The last case is big enough
 * (2 x 2*67*131*129 = 4.5 MFLOP) for the reference GEMM's threaded path (>= 4 MFLOP). */
static int gen_matmul(int k, tcase *tc)
{
    static const struct {
        int ta, tb;
        int64_t M, K, N;
        int nb;
        int64_t b0, b1;
    } c[] = {
        {0, 0, 1, 1, 1, 0, 0, 0},   {0, 0, 5, 7, 13, 0, 0, 0},  {1, 0, 5, 7, 13, 0, 0, 0},
        {0, 1, 5, 7, 13, 0, 0, 0},  {1, 1, 5, 7, 13, 0, 0, 0},  {0, 0, 13, 5, 1, 1, 2, 0},
        {1, 1, 7, 1, 5, 1, 3, 0},   {0, 1, 3, 7, 5, 2, 2, 3},   {1, 0, 5, 13, 3, 2, 2, 1},
        {0, 0, 1, 13, 7, 2, 1, 2},  {1, 0, 67, 129, 131, 1, 2, 0},
    };
    if (k >= (int)(sizeof c / sizeof c[0])) return 0;
    if (c[k].K > 13) {
        mark_big(tc);
        /* float32 dot products: the random-walk rounding grows like sqrt(K); FT_SUM is for
         * K <= 13 */
        tc->fwd_tol_scale = sqrt((double)c[k].K / 13.0);
    }
    int64_t sa[5] = {2 + c[k].nb, 0, 0, 0, 0}, sb[5] = {2 + c[k].nb, 0, 0, 0, 0};
    int d = 1;
    if (c[k].nb >= 1) sa[d] = sb[d] = c[k].b0, d++;
    if (c[k].nb >= 2) sa[d] = sb[d] = c[k].b1, d++;
    sa[d] = c[k].ta ? c[k].K : c[k].M;
    sa[d + 1] = c[k].ta ? c[k].M : c[k].K;
    sb[d] = c[k].tb ? c[k].N : c[k].K;
    sb[d + 1] = c[k].tb ? c[k].K : c[k].N;
    fill_normal(tc, add_in(tc, sa), 0.0, 1.0);
    fill_normal(tc, add_in(tc, sb), 0.0, 1.0);
    tc->p.i[0] = c[k].ta;
    tc->p.i[1] = c[k].tb;
    return 1;
}

/* sum, mean, sumsq. For mean the gradient is gout / n, so gscale = 1 / n. */
static int gen_reduce_any(int k, tcase *tc, int mean)
{
    static const int64_t s[][5] = {{1, 1}, {1, 7}, {2, 5, 13}, {3, 2, 3, 7}, {4, 2, 3, 5, 7},
                                   {2, BIG_R, BIG_C}};
    const int ns = (int)(sizeof s / sizeof s[0]);
    if (k >= ns) return 0;
    int j = fill_normal(tc, add_in(tc, s[k]), 0.0, 1.0);
    if (k == ns - 1) {
        mark_big(tc);
        /* a float32 sum's random-walk rounding grows like sqrt(n); FT_SUM is for n <= 210
         * (the reference sums in double and does not need it; a device reduction may) */
        tc->fwd_tol_scale = sqrt((double)tc_n(tc, j) / 210.0);
        /* sum and sumsq are exact under central differences for any h (linear, quadratic);
         * their float32 [1] output rounds by ~eps * n, so h must grow with n: 64 keeps
         * sumsq's noise (eps * 68251 * |g| / 2h, over 2|x|) at ~3e-5 */
        tc->h_scale = 64.0;
    }
    if (mean) tc->gscale = 1.0 / (double)tc_n(tc, j);
    return 1;
}
static int gen_reduce(int k, tcase *tc) { return gen_reduce_any(k, tc, 0); }
static int gen_reduce_mean(int k, tcase *tc) { return gen_reduce_any(k, tc, 1); }

/* sum_last, mean_last (mean: gscale = 1 / N). */
static int gen_reduce_last_any(int k, tcase *tc, int mean)
{
    static const int64_t s[][5] = {{1, 1}, {1, 13}, {2, 5, 7}, {3, 2, 3, 13}, {4, 2, 1, 3, 5},
                                   {2, BIG_R, BIG_C}};
    const int ns = (int)(sizeof s / sizeof s[0]);
    if (k >= ns) return 0;
    if (k == ns - 1) mark_big(tc);
    fill_normal(tc, add_in(tc, s[k]), 0.0, 1.0);
    if (mean) tc->gscale = 1.0 / (double)s[k][s[k][0]];
    return 1;
}
static int gen_reduce_last(int k, tcase *tc) { return gen_reduce_last_any(k, tc, 0); }
static int gen_reduce_mean_last(int k, tcase *tc) { return gen_reduce_last_any(k, tc, 1); }

static int gen_softmax(int k, tcase *tc) /* N(0, 3^2): peaky rows */
{
    static const int64_t s[][5] = {{1, 1},          {1, 7}, {2, 5, 13}, {3, 2, 3, 5},
                                   {4, 2, 2, 3, 7}, {2, BIG_R, BIG_C}};
    const int ns = (int)(sizeof s / sizeof s[0]);
    if (k >= ns) return 0;
    if (k == ns - 1) mark_big(tc);
    fill_normal(tc, add_in(tc, s[k]), 0.0, 3.0);
    return 1;
}

static int gen_layer_norm(int k, tcase *tc)
{
    static const int64_t s[][5] = {{1, 1},          {1, 5},    {2, 7, 13},       {3, 2, 3, 5},
                                   {4, 2, 1, 3, 7}, {2, 3, 1}, {2, BIG_R, BIG_C}};
    const int ns = (int)(sizeof s / sizeof s[0]);
    if (k >= ns) return 0;
    if (k == ns - 1) mark_big(tc);
    int64_t n = s[k][s[k][0]];
    fill_normal(tc, add_in(tc, s[k]), 0.5, 1.0);
    fill_normal(tc, add_in(tc, S1(n)), 1.0, 0.5); /* gamma */
    fill_normal(tc, add_in(tc, S1(n)), 0.0, 1.0); /* beta  */
    tc->p.f[0] = 1e-5f;
    return 1;
}

/* cross_entropy: R rows, C classes, `ign` rows with a negative target (ignored). The loss is
 * a mean over the counted rows, so gradients scale like 1 / counted (= gscale). The big case
 * counts only every 100th row: the loss is one float32 number, and finite differences of it
 * resolve gradients of ~1e-3 (ulp(loss) / 2h), not the 1 / 521 of a mean over all rows. */
static int gen_cross_entropy(int k, tcase *tc)
{
    static const int64_t c[][3] = {{1, 1, 0},  {5, 7, 1},  {13, 5, 3},
                                   {7, 13, 2}, {1, 13, 0}, {BIG_R, BIG_C, BIG_R}};
    const int nc = (int)(sizeof c / sizeof c[0]);
    if (k >= nc) return 0;
    int64_t R = c[k][0], C = c[k][1], ign = c[k][2], n = 0;
    fill_normal(tc, add_in(tc, S2(R, C)), 0.0, 2.0);
    int t = fill_int(tc, add_in(tc, S1(R)), 0, C - 1);
    if (k == nc - 1) {
        mark_big(tc);
        for (int64_t r = 0; r < R; r++)
            if (r % 100 != 0) tc->x[t][r] = n++ % 2 ? -2.0f : -1.0f;
    } else {
        for (int64_t r = 1; r < R && n < ign; r += 4, n++) /* rows 1, 5, 9, ... */
            tc->x[t][r] = n % 2 ? -2.0f : -1.0f;
    }
    tc->no_grad[1] = 1;
    tc->gscale = 1.0 / (double)(R - n);
    return 1;
}

static int gen_concat(int k, tcase *tc)
{
    static const struct {
        int axis;
        int64_t a[5], b[5]; /* {ndim, dims}: equal but on the axis */
    } c[] = {
        {0, {1, 5}, {1, 7}},                   {0, {2, 2, 3}, {2, 5, 3}},
        {1, {2, 3, 2}, {2, 3, 5}},             {1, {3, 2, 3, 4}, {3, 2, 1, 4}},
        {0, {4, 2, 3, 4, 5}, {4, 1, 3, 4, 5}}, {1, {4, 2, 3, 4, 5}, {4, 2, 2, 4, 5}},
        {2, {4, 2, 3, 4, 5}, {4, 2, 3, 1, 5}}, {3, {4, 2, 3, 4, 5}, {4, 2, 3, 4, 7}},
        {1, {3, 2, 130, 263}, {3, 2, 131, 263}},
    };
    const int nc = (int)(sizeof c / sizeof c[0]);
    if (k >= nc) return 0;
    if (k == nc - 1) mark_big(tc);
    fill_normal(tc, add_in(tc, c[k].a), 0.0, 1.0);
    fill_normal(tc, add_in(tc, c[k].b), 0.0, 1.0);
    tc->p.i[0] = c[k].axis;
    return 1;
}

static int gen_slice(int k, tcase *tc)
{
    static const int64_t c[][8] = {
        /* axis, start, len, a {ndim, dims} */
        {0, 3, 5, 1, 13, 0, 0, 0}, {0, 2, 5, 2, 7, 5, 0, 0}, {1, 0, 1, 2, 7, 5, 0, 0},
        {2, 6, 1, 3, 3, 5, 7, 0},  {1, 1, 3, 3, 3, 5, 7, 0}, {0, 1, 1, 4, 2, 3, 5, 7},
        {1, 0, 2, 4, 2, 3, 5, 7},  {2, 1, 3, 4, 2, 3, 5, 7}, {3, 2, 5, 4, 2, 3, 5, 7},
        {1, 3, 257, 2, 263, 260, 0, 0},
    };
    const int nc = (int)(sizeof c / sizeof c[0]);
    if (k >= nc) return 0;
    if (k == nc - 1) mark_big(tc);
    fill_normal(tc, add_in(tc, &c[k][3]), 0.0, 1.0);
    tc->p.i[0] = c[k][0];
    tc->p.i[1] = c[k][1];
    tc->p.i[2] = c[k][2];
    return 1;
}

/* reshape: p.i[0] = the new ndim, p.i[1..ndim] = the new shape (as mcl_reshape sends them).
 * These two functions are the only place that knows the convention. */
static void reshape_set(tcase *tc, int ndim, const int64_t *shape)
{
    tc->p.i[0] = ndim;
    for (int d = 0; d < ndim; d++) tc->p.i[1 + d] = shape[d];
}

static int reshape_get(const tcase *tc, int64_t *shape)
{
    int nd = (int)tc->p.i[0];
    for (int d = 0; d < nd; d++) shape[d] = tc->p.i[1 + d];
    return nd;
}

static int gen_reshape(int k, tcase *tc)
{
    static const int64_t c[][10] = {
        /* from {ndim, dims}, to {ndim, dims} */
        {3, 2, 3, 5, 0, 2, 6, 5, 0, 0},   {2, 7, 13, 0, 0, 1, 91, 0, 0, 0},
        {1, 13, 0, 0, 0, 2, 1, 13, 0, 0}, {4, 2, 3, 4, 5, 4, 5, 4, 3, 2},
        {1, 1, 0, 0, 0, 4, 1, 1, 1, 1},   {2, 5, 7, 0, 0, 3, 7, 1, 5, 0},
        {2, BIG_R, BIG_C, 0, 0, 3, BIG_C, 1, BIG_R, 0},
    };
    const int nc = (int)(sizeof c / sizeof c[0]);
    if (k >= nc) return 0;
    if (k == nc - 1) mark_big(tc);
    fill_normal(tc, add_in(tc, c[k]), 0.0, 1.0);
    reshape_set(tc, (int)c[k][5], &c[k][6]);
    return 1;
}

static int gen_transpose(int k, tcase *tc)
{
    /* [40, 33]: 2 x 2 partial tiles of the OpenCL kernel's 32 x 32 __local tiles */
    static const int64_t s[][5] = {{2, 5, 7},       {2, 1, 13}, {3, 2, 3, 5}, {2, 40, 33},
                                   {4, 2, 3, 1, 7}, {2, 13, 1}, {3, 2, 257, 133}};
    const int ns = (int)(sizeof s / sizeof s[0]);
    if (k >= ns) return 0;
    if (k == ns - 1) mark_big(tc);
    fill_normal(tc, add_in(tc, s[k]), 0.0, 1.0);
    return 1;
}

static int gen_permute(int k, tcase *tc)
{
    /* case k: perm[k] of shape shp[sk[k]]; [1,33,1,40] with (0,3,2,1): the OpenCL kernel's
     * 32 x 32 __local tiles, 2 x 2 of them, partial */
    static const int perm[][4] = {{0, 2, 1, 3}, {3, 2, 1, 0}, {1, 0, 3, 2}, {0, 1, 2, 3},
                                  {2, 3, 0, 1}, {0, 3, 1, 2}, {0, 3, 2, 1}, {0, 2, 1, 3},
                                  {0, 2, 1, 3}};
    static const int sk[] = {0, 0, 0, 0, 0, 0, 3, 1, 2};
    const int np = (int)(sizeof perm / sizeof perm[0]);
    if (k >= np) return 0;
    static const int64_t shp[4][5] = {
        {4, 2, 3, 5, 7}, {4, 1, 5, 1, 3}, {4, 8, 33, 17, 16}, {4, 1, 33, 1, 40}};
    const int s = sk[k];
    if (s == 2) mark_big(tc); /* the attention head split above the thread threshold */
    fill_normal(tc, add_in(tc, shp[s]), 0.0, 1.0);
    for (int d = 0; d < 4; d++) tc->p.i[d] = perm[k][d];
    return 1;
}

/* one_hot: indices mostly in [0, depth), some out of range (-2, -1, depth, depth + 1). */
static int gen_one_hot(int k, tcase *tc)
{
    static const int64_t s[][5] = {{1, 1}, {1, 7}, {2, 3, 5}, {3, 2, 3, 4}, {1, 13}, {1, 5003}};
    static const int64_t depth[] = {1, 5, 13, 7, 3, 14};
    if (k >= (int)(sizeof s / sizeof s[0])) return 0;
    int j = fill_int(tc, add_in(tc, s[k]), 0, depth[k] - 1);
    for (int64_t i = 0; i < tc_n(tc, j); i++) {
        if (trng_unit(&tc->rng) < 0.25) {
            static const int64_t bad[4] = {-2, -1, 0, 1};
            int64_t b = bad[trng_int(&tc->rng, 0, 3)];
            tc->x[j][i] = (float)(b < 0 ? b : depth[k] + b);
        }
    }
    tc->p.i[0] = depth[k];
    return 1;
}

/* embedding: table [V, D], indices in [0, V) with repeats (their gradients add up). */
static int gen_embedding(int k, tcase *tc)
{
    static const int64_t c[][7] = {
        /* V, D, idx {ndim, dims} */
        {1, 1, 1, 1, 0, 0, 0},    {7, 5, 1, 13, 0, 0, 0}, {13, 7, 2, 3, 5, 0, 0},
        {5, 3, 3, 2, 2, 3, 0},    {97, 17, 1, 4099, 0, 0, 0},
    };
    const int nc = (int)(sizeof c / sizeof c[0]);
    if (k >= nc) return 0;
    if (k == nc - 1) mark_big(tc);
    fill_normal(tc, add_in(tc, S2(c[k][0], c[k][1])), 0.0, 1.0);
    int64_t si[5] = {c[k][2], c[k][3], c[k][4], c[k][5], c[k][6]};
    fill_int(tc, add_in(tc, si), 0, c[k][0] - 1);
    tc->no_grad[1] = 1;
    return 1;
}

/* add_dropout: a + dropout(x), a and x N(0, 1) of the same shape; p = 0, 0.3, 0.5 with explicit
 * (seed u0, stream u1, counter u2), one counter just below 2^32 (the index crosses into the
 * counter's high word), and a big case (many work-groups). */
static int gen_add_dropout(int k, tcase *tc)
{
    static const struct {
        int64_t s[5];
        float p;
        uint64_t seed, stream, counter;
    } c[] = {
        {{1, 1}, 0.0f, 1, 0, 0},
        {{1, 13}, 0.3f, 42, 1, 0},
        {{2, 5, 7}, 0.5f, 7, 3, 1000},
        {{3, 2, 3, 5}, 0.0f, 99, 2, 17},
        {{2, 7, 13}, 0.5f, 0x0123456789abcdefull, 7, 0xfffffffdull},
        {{4, 2, 3, 5, 7}, 0.3f, 1234, 9, 5},
        {{2, BIG_R, BIG_C}, 0.3f, 5, 11, 3},
    };
    const int nc = (int)(sizeof c / sizeof c[0]);
    if (k >= nc) return 0;
    if (k == nc - 1) mark_big(tc);
    fill_normal(tc, add_in(tc, c[k].s), 0.0, 1.0);
    fill_normal(tc, add_in(tc, c[k].s), 0.0, 1.0);
    tc->p.f[0] = c[k].p;
    tc->p.u[0] = c[k].seed;
    tc->p.u[1] = c[k].stream;
    tc->p.u[2] = c[k].counter;
    return 1;
}

/* bias_dropout_relu: x [..,N], b [N] N(0, 1), x then moved so that |x + b| >= 2.5 (the finite
 * differences' h = 1 never cross relu's kink); p = 0, 0.3, 0.5 with explicit (seed u0, stream
 * u1, counter u2), a counter just below 2^32, rows in 2 and in 9 chunks of the OpenCL bias sums
 * (70 rows; the big case, 521), x's gradient alone and the bias's alone, and x's alone in 9
 * chunks (521 rows: pass 1 of the two passes without pass 2, on any device). */
static int gen_bias_dropout_relu(int k, tcase *tc)
{
    static const struct {
        int64_t s[5];
        float p;
        uint64_t seed, stream, counter;
        int no_grad; /* 1: no x gradient, 2: no bias gradient */
    } c[] = {
        {{1, 13}, 0.3f, 42, 1, 0, 0},
        {{2, 5, 7}, 0.5f, 7, 3, 1000, 0},
        {{3, 2, 3, 5}, 0.0f, 99, 2, 17, 0},
        {{2, 70, 5}, 0.5f, 0x0123456789abcdefull, 7, 0xfffffffdull, 0},
        {{4, 2, 2, 3, 7}, 0.3f, 1234, 9, 5, 0},
        {{2, 9, 6}, 0.3f, 5, 4, 0, 1},
        {{2, 9, 6}, 0.3f, 5, 4, 0, 2},
        {{2, 521, 6}, 0.3f, 5, 4, 0, 2},
        {{2, BIG_R, BIG_C}, 0.3f, 5, 11, 3, 0},
    };
    const int nc = (int)(sizeof c / sizeof c[0]);
    if (k >= nc) return 0;
    if (k == nc - 1) mark_big(tc);
    const int nd = (int)c[k].s[0], N = (int)c[k].s[nd];
    const int jx = add_in(tc, c[k].s), jb = add_in(tc, S1(N));
    fill_normal(tc, jx, 0.0, 1.0);
    fill_normal(tc, jb, 0.0, 1.0);
    for (int64_t i = 0; i < tc_n(tc, jx); i++) /* |x + b| >= 2.5: away from the kink */
        tc->x[jx][i] += tc->x[jx][i] + tc->x[jb][i % N] < 0.0f ? -2.5f : 2.5f;
    tc->p.f[0] = c[k].p;
    tc->p.u[0] = c[k].seed;
    tc->p.u[1] = c[k].stream;
    tc->p.u[2] = c[k].counter;
    if (c[k].no_grad) tc->no_grad[c[k].no_grad - 1] = 1;
    return 1;
}

/* bias_add_dropout: a, x [..,N], b [N], all N(0, 1); p = 0, 0.3, 0.5 with explicit (seed u0,
 * stream u1, counter u2), a counter just below 2^32, rows in 2 and in 9 chunks of the OpenCL
 * bias sums (70 rows; the big case, 521), x's gradient alone, the bias's alone, a's alone, and
 * x's alone in 9 chunks (521 rows: pass 1 of the two passes without pass 2, on any device). */
static int gen_bias_add_dropout(int k, tcase *tc)
{
    static const struct {
        int64_t s[5];
        float p;
        uint64_t seed, stream, counter;
        int grad_only; /* 1..3: only input grad_only - 1 gets a gradient */
    } c[] = {
        {{1, 13}, 0.3f, 42, 1, 0, 0},
        {{2, 5, 7}, 0.5f, 7, 3, 1000, 0},
        {{3, 2, 3, 5}, 0.0f, 99, 2, 17, 0},
        {{2, 70, 5}, 0.5f, 0x0123456789abcdefull, 7, 0xfffffffdull, 0},
        {{4, 2, 2, 3, 7}, 0.3f, 1234, 9, 5, 0},
        {{2, 9, 6}, 0.3f, 5, 4, 0, 2},
        {{2, 9, 6}, 0.3f, 5, 4, 0, 3},
        {{2, 9, 6}, 0.3f, 5, 4, 0, 1},
        {{2, 521, 6}, 0.3f, 5, 4, 0, 2},
        {{2, BIG_R, BIG_C}, 0.3f, 5, 11, 3, 0},
    };
    const int nc = (int)(sizeof c / sizeof c[0]);
    if (k >= nc) return 0;
    if (k == nc - 1) mark_big(tc);
    const int nd = (int)c[k].s[0];
    fill_normal(tc, add_in(tc, c[k].s), 0.0, 1.0);
    fill_normal(tc, add_in(tc, c[k].s), 0.0, 1.0);
    fill_normal(tc, add_in(tc, S1(c[k].s[nd])), 0.0, 1.0);
    tc->p.f[0] = c[k].p;
    tc->p.u[0] = c[k].seed;
    tc->p.u[1] = c[k].stream;
    tc->p.u[2] = c[k].counter;
    for (int q = 0; c[k].grad_only && q < 3; q++) tc->no_grad[q] = q != c[k].grad_only - 1;
    return 1;
}

/* A dropout's parameters in a test case (ops.def's dropout row): p, the Philox key and the
 * segments (seg elements each, their streams step apart; seg = 0: one segment) */
typedef struct tdrop {
    float p;
    uint64_t seed, stream, counter;
    int64_t seg;
    uint64_t step;
} tdrop;

/* p.f[fi] = p (dropout: f0, inorm_pool_relu: f1), p.u[0..3] = seed, stream, counter, step,
 * p.i[0] = seg */
static void set_drop(tcase *tc, int fi, const tdrop *d)
{
    tc->p.f[fi] = d->p;
    tc->p.u[0] = d->seed;
    tc->p.u[1] = d->stream;
    tc->p.u[2] = d->counter;
    tc->p.u[3] = d->step;
    tc->p.i[0] = d->seg;
}

/* dropout: p = 0, 0.3, 0.5 with explicit (seed u0, stream u1, counter u2); one case starts its
 * counter just below 2^32, so the index crosses into the counter's high word. Segmented cases
 * (i0 = seg, u3 = stream step; counter 0, as mcl_dropout_segments): segments shorter than a
 * Philox block (3), not a multiple of it (35, 7·13), a step of 0 and of 7, one segment. relu
 * first (i1 = 1): inputs at least 2.5 away from 0 (the finite differences' h = 1 never cross
 * relu's kink), with p = 0 and with segments. */
static int gen_dropout(int k, tcase *tc)
{
    static const struct {
        int64_t s[5];
        tdrop d;
        int relu;
    } c[] = {
        {{1, 1}, {0.0f, 1, 0, 0, 0, 0}, 0},
        {{1, 13}, {0.3f, 42, 1, 0, 0, 0}, 0},
        {{2, 5, 7}, {0.5f, 7, 3, 1000, 0, 0}, 0},
        {{4, 2, 3, 5, 7}, {0.3f, 1234, 9, 5, 0, 0}, 0},
        {{2, 7, 13}, {0.5f, 0x0123456789abcdefull, 7, 0xfffffffdull, 0, 0}, 0},
        {{3, 2, 3, 5}, {0.0f, 99, 2, 17, 0, 0}, 0},
        {{2, 4, 9}, {0.3f, 21, 5, 0, 3, 7}, 0},
        {{3, 3, 5, 7}, {0.5f, 8, 4, 0, 35, 0}, 0},
        {{3, 6, 7, 13}, {0.3f, 77, 12, 0, 91, 11}, 0},
        {{2, 7, 13}, {0.3f, 77, 12, 0, 91, 11}, 0},
        {{4, 4, 2, 2, 2}, {0.3f, 3, 30, 0, 4, 1}, 0},
        {{2, 5, 7}, {0.3f, 7, 3, 1000, 0, 0}, 1},
        {{2, 3, 5}, {0.0f, 9, 1, 0, 0, 0}, 1},
        {{3, 6, 7, 13}, {0.5f, 77, 12, 0, 91, 11}, 1},
        {{2, BIG_R, BIG_C}, {0.3f, 5, 11, 3, 0, 0}, 0},
    };
    const int nc = (int)(sizeof c / sizeof c[0]);
    if (k >= nc) return 0;
    if (k == nc - 1) mark_big(tc);
    const int j = add_in(tc, c[k].s);
    fill_normal(tc, j, 0.0, 1.0);
    for (int64_t i = 0; c[k].relu && i < tc_n(tc, j); i++) /* |x| >= 2.5: away from the kink */
        tc->x[j][i] += tc->x[j][i] < 0.0f ? -2.5f : 2.5f;
    set_drop(tc, 0, &c[k].d);
    tc->p.i[1] = c[k].relu;
    return 1;
}

/* wcst_act: state [S], logits [L,A], cards [L,3] (three distinct values in 0..min(A,4)-1),
 * act, reward [L] (written). Cases: one card of one action; perfect episodes (the target of
 * the rule boosted by 40, so the draw takes it) that solve with a switch at once (d = 0), that
 * only extend the streak, that count down a pending switch, that switch with offset 1; random
 * logits (errors reset the streak); a solve past the draw list (a missing draw counts as 0);
 * two calls (the second episode starts from the first's state); A = 7, counters near 2^32. */
static int gen_wcst_act(int k, tcase *tc)
{
    static const struct {
        int64_t L, A, S;
        float st[5], draws[4];
        int boost, solve, calls;
        uint64_t counter;
    } c[] = {
        {1, 1, 5, {0, 0, 0, 0, 0}, {0}, 0, 1, 1, 0},
        {16, 4, 9, {1, 2, 0, 0, 0}, {0, 1, 3, 0}, 1, 3, 1, 5},
        {16, 4, 9, {2, 0, 0, 0, 0}, {4, 1, 3, 0}, 1, 3, 1, 0},
        {13, 4, 7, {0, 5, 1, 3, 1}, {7, 0}, 1, 3, 1, 77},
        {16, 4, 7, {0, 5, 1, 1, 1}, {7, 1}, 1, 3, 1, 1000},
        {16, 4, 9, {1, 2, 0, 0, 0}, {0, 1, 3, 0}, 0, 3, 1, 2},
        {5, 4, 5, {2, 0, 0, 0, 0}, {0}, 1, 1, 1, 9},
        {16, 4, 9, {1, 1, 0, 0, 0}, {0, 1, 3, 0}, 1, 2, 2, 16},
        {9, 7, 9, {0, 0, 0, 0, 0}, {2, 0, 1, 1}, 0, 1, 2, 0xfffffffbull},
    };
    const int nc = (int)(sizeof c / sizeof c[0]);
    if (k >= nc) return 0;
    const int64_t L = c[k].L, A = c[k].A, S = c[k].S, V = A < 4 ? A : 4;
    int js = add_in(tc, S1(S));
    for (int64_t i = 0; i < S; i++) tc->x[js][i] = i < 5 ? c[k].st[i] : c[k].draws[i - 5];
    int jl = fill_normal(tc, add_in(tc, S2(L, A)), 0.0, 1.0);
    int jc = add_in(tc, S2(L, 3));
    for (int64_t r = 0; r < L; r++) {
        int v[4] = {0, 1, 2, 3};
        for (int at = 0; at < 3; at++) { /* a partial Fisher-Yates draw (A = 1: all 0) */
            const int64_t j = V == 4 ? at + trng_int(&tc->rng, 0, 3 - at) : at;
            const int t = v[at];
            v[at] = v[j];
            v[j] = t;
            tc->x[jc][r * 3 + at] = V == 4 ? (float)v[at] : 0.0f;
        }
        if (c[k].boost) tc->x[jl][r * A + (int64_t)tc->x[jc][r * 3 + (int)c[k].st[0]]] += 40.0f;
    }
    fill_normal(tc, add_in(tc, S1(L)), 0.0, 1.0);
    fill_normal(tc, add_in(tc, S1(L)), 0.0, 1.0);
    for (int j = 0; j < 5; j++) tc->no_grad[j] = 1;
    tc->p.u[0] = 20261128u + (uint64_t)k;
    tc->p.u[1] = 0x534d4e4143540000ull;
    tc->p.u[2] = c[k].counter;
    tc->p.i[0] = c[k].solve;
    tc->p.f[0] = 1.0f;
    tc->p.f[1] = -0.5f;
    tc->calls = c[k].calls;
    return 1;
}

/* sgd_step: param, grad, mom (random start); two calls so the momentum carries over. */
static int gen_sgd_step(int k, tcase *tc)
{
    static const int64_t s[][5] = {{1, 1}, {1, 7}, {2, 5, 13}, {2, BIG_R, BIG_C}};
    static const float hp[][3] = {
        {0.1f, 0.9f, 0.01f}, {0.05f, 0.0f, 0.0f}, {0.2f, 0.5f, 0.1f}, {0.1f, 0.9f, 0.01f}};
    if (k >= (int)(sizeof s / sizeof s[0])) return 0;
    fill_normal(tc, add_in(tc, s[k]), 0.0, 1.0);
    fill_normal(tc, add_in(tc, s[k]), 0.0, 1.0);
    fill_normal(tc, add_in(tc, s[k]), 0.0, 0.5);
    for (int j = 0; j < 3; j++) tc->p.f[j] = hp[k][j];
    tc->calls = 2;
    return 1;
}

/* dyn_step: param, grad, w0 (random); lr and decay (decay 0: plain SGD, the branch without w0);
 * two calls with the same gradient, so the second decays from a moved param. */
static int gen_dyn_step(int k, tcase *tc)
{
    static const int64_t s[][5] = {{1, 1}, {1, 7}, {2, 5, 13}, {2, BIG_R, BIG_C}, {3, 2, 3, 5}};
    static const float hp[][2] = {{0.1f, 0.02f}, {0.05f, 0.0f}, {0.2f, 0.5f}, {0.1f, 0.02f}, {1e-4f, 1e-3f}};
    if (k >= (int)(sizeof s / sizeof s[0])) return 0;
    fill_normal(tc, add_in(tc, s[k]), 0.0, 1.0);
    fill_normal(tc, add_in(tc, s[k]), 0.0, 1.0);
    fill_normal(tc, add_in(tc, s[k]), 0.0, 1.0);
    tc->p.f[0] = hp[k][0];
    tc->p.f[1] = hp[k][1];
    tc->calls = 2;
    return 1;
}

/* adam_step: param, grad, m, v; Adam (i0 = 0), AdamW (i0 = 1) and RMSProp (i0 = 2), from zero
 * state and from a random one; two calls with step i1 = 1, 2 (bias corrections differ). */
static int gen_adam_step(int k, tcase *tc)
{
    static const int64_t s[][5] = {{1, 1}, {1, 7}, {2, 5, 13}, {3, 2, 3, 5}, {2, BIG_R, BIG_C}, {1, 7}, {2, 5, 13}};
    static const int mode[] = {0, 1, 0, 1, 1, 2, 2};
    static const int fresh[] = {1, 1, 0, 0, 0, 1, 0};
    static const float wd[] = {0.0f, 0.01f, 0.1f, 0.1f, 0.01f, 0.0f, 0.1f};
    if (k >= (int)(sizeof s / sizeof s[0])) return 0;
    fill_normal(tc, add_in(tc, s[k]), 0.0, 1.0);
    fill_normal(tc, add_in(tc, s[k]), 0.0, 1.0);
    int m = add_in(tc, s[k]), v = add_in(tc, s[k]);
    if (!fresh[k]) {
        fill_normal(tc, m, 0.0, 0.1);
        fill_uniform(tc, v, 0.01, 0.5);
    }
    tc->p.f[0] = 1e-2f;
    tc->p.f[1] = mode[k] == 2 ? 0.0f : 0.9f; /* RMSProp: no first moment */
    tc->p.f[2] = mode[k] == 2 ? 0.99f : 0.999f;
    tc->p.f[3] = 1e-8f;
    tc->p.f[4] = wd[k];
    tc->p.i[0] = mode[k];
    tc->calls = 2;
    tc->step_i = 1;
    return 1;
}

/* clip_scale: grad, sq = its sum of squares; max norm below (clipped) or above (unchanged). */
static int gen_clip_scale(int k, tcase *tc)
{
    static const int64_t s[][5] = {{1, 1}, {1, 13}, {2, 5, 7}, {1, 5}, {2, BIG_R, BIG_C}};
    static const double ratio[] = {0.5, 2.0, 0.25, 1.0, 0.5};
    if (k >= (int)(sizeof s / sizeof s[0])) return 0;
    int g = add_in(tc, s[k]);
    if (k != 3) fill_normal(tc, g, 0.0, 1.0); /* case 3: all-zero gradient, sq = 0 */
    int q = add_in(tc, S1(1));
    double sq = 0.0;
    for (int64_t i = 0; i < tc_n(tc, g); i++) sq += (double)tc->x[g][i] * tc->x[g][i];
    tc->x[q][0] = (float)sq;
    tc->p.f[0] = (float)(ratio[k] * (sq > 0 ? sqrt(sq) : 1.0));
    return 1;
}

/* repeat_batch: x [..] (1 to 3 dims), n = i0 copies along axis i1: 0 (a new leading dim)
 * for the first 7 cases, 1 (each row's copies next to it, mcl_repeat_rows) for the rest:
 * one row, a 1-D x, a single copy, the ACL query's state shape (4 sequences, 5 queries,
 * rows of 2·4·4) and a big one. */
static int gen_repeat_batch(int k, tcase *tc)
{
    static const int64_t s[][5] = {{1, 1},       {1, 5},    {2, 7, 13},     {3, 2, 3, 5},
                                   {1, 1},       {3, 2, 3, 1}, {3, 2, 131, 131},
                                   {2, 1, 6},    {1, 7},    {2, 3, 4},      {2, 4, 32},
                                   {3, 2, 3, 5}, {3, 3, 131, 131}};
    static const int64_t n[] = {1, 3, 2, 5, 7, 4, 4, 3, 2, 1, 5, 4, 3};
    const int ns = (int)(sizeof s / sizeof s[0]);
    if (k >= ns) return 0;
    if (k == 6 || k == ns - 1) mark_big(tc); /* out [4,2,131,131] / [3,3,131,131]: >137k elements */
    fill_normal(tc, add_in(tc, s[k]), 0.0, 1.0);
    tc->p.i[0] = n[k];
    tc->p.i[1] = k >= 7;
    return 1;
}

/* repeat_batch4: four tensors, n = i0 copies, axis i1. Axis 0: 1- to 3-dim tensors of
 * different shapes (one of a single element), n 1, 3; axis 1: the same first dim B,
 * different rests up to 4 dims: the ACL query state of a layer (B = 2 sequences, 2 heads,
 * D = 4: four [2,2,4,4]), B = 1, n = 1 with one input wanting no gradient, and a big one. */
static int gen_repeat_batch4(int k, tcase *tc)
{
    static const int64_t s[][4][5] = {
        {{1, 1}, {1, 5}, {2, 7, 3}, {3, 2, 3, 5}},                 /* axis 0 */
        {{2, 2, 3}, {1, 4}, {3, 2, 4, 4}, {3, 2, 4, 4}},
        {{4, 2, 2, 4, 4}, {4, 2, 2, 4, 4}, {4, 2, 2, 4, 4}, {4, 2, 2, 4, 4}}, /* axis 1 */
        {{2, 1, 6}, {1, 1}, {3, 1, 2, 3}, {4, 1, 2, 3, 2}},
        {{2, 3, 5}, {1, 3}, {3, 3, 2, 2}, {2, 3, 1}},
        {{4, 3, 2, 131, 131}, {2, 3, 7}, {1, 3}, {3, 3, 2, 5}},
    };
    static const int64_t n[] = {1, 3, 5, 4, 1, 3};
    static const int ax[] = {0, 0, 1, 1, 1, 1};
    const int ns = (int)(sizeof n / sizeof n[0]);
    if (k >= ns) return 0;
    if (k == ns - 1) mark_big(tc); /* out [9,2,131,131]: > 137k elements */
    for (int t = 0; t < 4; t++) fill_normal(tc, add_in(tc, s[k][t]), 0.0, 1.0);
    tc->p.i[0] = n[k];
    tc->p.i[1] = ax[k];
    if (k == 4) tc->no_grad[2] = 1; /* one input wanting no gradient (OpenCL: per tensor) */
    return 1;
}

/* conv2d: x [B,C,H,W], w [O,C,k,k], bias [O]; stride i0, padding i1. Covers k 1/3/5,
 * stride 1/2, padding 0/1/2, batch 1/2, a 1-row input, one image with Ho*Wo >= 256 (the
 * reference's one-image GEMM path) and a big case: 27 images in groups of 4 (the last one
 * short) with Ho*Wo = 81, above the OpenMP thresholds. */
static int gen_conv2d(int k, tcase *tc)
{
    static const int64_t c[][8] = {
        /* B, C, H, W, O, k, stride, pad */
        {1, 1, 5, 5, 1, 1, 1, 0},   {2, 3, 7, 5, 4, 3, 1, 1},  {1, 3, 13, 7, 2, 3, 2, 1},
        {2, 1, 7, 13, 3, 3, 2, 0},  {2, 3, 5, 5, 5, 1, 2, 0},  {1, 3, 13, 13, 3, 3, 1, 0},
        {2, 1, 5, 7, 3, 3, 2, 1},   {1, 2, 1, 5, 2, 3, 1, 1},  {2, 2, 7, 5, 3, 5, 1, 2},
        {2, 1, 17, 16, 2, 3, 1, 1},
        /* rows longer than 64 pixels (the old OpenCL col2im's second run of a row) */
        {1, 1, 3, 70, 2, 3, 1, 1},  {1, 2, 2, 67, 1, 3, 2, 1},
        /* a 5 x 5 kernel at stride 2 (each pixel hits 1 to 9 taps); a 2 x 2 kernel at
         * stride 3 (pixels no tap reaches: the OpenCL col2im's walk over the stride's grid) */
        {1, 2, 11, 9, 2, 5, 2, 2},  {1, 1, 8, 10, 2, 2, 3, 1},
        /* big: B*P = 8325 pixel columns, so the OpenCL weight gradient is split in two slices
         * plus one left-over column (gw_split_k in src/opencl/conv.c) */
        {37, 3, 15, 15, 5, 3, 1, 1},
    };
    const int nc = (int)(sizeof c / sizeof c[0]);
    if (k >= nc) return 0;
    if (k == nc - 1) mark_big(tc);
    fill_normal(tc, add_in(tc, S4(c[k][0], c[k][1], c[k][2], c[k][3])), 0.0, 1.0);
    fill_normal(tc, add_in(tc, S4(c[k][4], c[k][1], c[k][5], c[k][5])), 0.0, 0.5);
    fill_normal(tc, add_in(tc, S1(c[k][4])), 0.0, 1.0);
    tc->p.i[0] = c[k][6];
    tc->p.i[1] = c[k][7];
    return 1;
}

/* maxpool2d: x [B,C,H,W] (odd H/W drop their last row/column). Every 2 x 2 window holds
 * base + 0.05 * (a random permutation of 0..3): its values are distinct by 0.05 >= 4h
 * (h = 5e-3: finite differences move one value by at most 2h, never past another, so the
 * argmax does not flip); the dropped elements are N(0, 1). */
static int gen_maxpool2d(int k, tcase *tc)
{
    static const int64_t s[][5] = {{4, 1, 1, 2, 2}, {4, 2, 3, 5, 7}, {4, 1, 3, 13, 13},
                                   {4, 2, 1, 7, 5}, {4, 1, 2, 4, 6}, {4, 1, 1, 3, 2},
                                   {4, 4, 8, 33, 65}};
    const int ns = (int)(sizeof s / sizeof s[0]);
    if (k >= ns) return 0;
    if (k == ns - 1) mark_big(tc);
    int j = fill_normal(tc, add_in(tc, s[k]), 0.0, 1.0);
    const int64_t Q = s[k][1] * s[k][2], H = s[k][3], W = s[k][4];
    float *x = tc->x[j];
    for (int64_t q = 0; q < Q; q++)
        for (int64_t i = 0; i < H / 2; i++)
            for (int64_t jj = 0; jj < W / 2; jj++) {
                int perm[4] = {0, 1, 2, 3};
                for (int t = 3; t > 0; t--) { /* Fisher-Yates */
                    int u = (int)trng_int(&tc->rng, 0, t), v = perm[t];
                    perm[t] = perm[u];
                    perm[u] = v;
                }
                const double base = trng_normal(&tc->rng);
                for (int t = 0; t < 4; t++)
                    x[(q * H + 2 * i + t / 2) * W + 2 * jj + t % 2] = (float)(base + 0.05 * perm[t]);
            }
    return 1;
}

/* instance_norm: x [B,C,H,W], gamma [C], beta [C], eps 1e-5; planes of 1 (variance 0),
 * 5, 35, 169 values and a big case (32 planes of 2145). */
static int gen_instance_norm(int k, tcase *tc)
{
    static const int64_t s[][5] = {{4, 1, 1, 1, 5}, {4, 2, 3, 5, 7}, {4, 1, 3, 13, 13},
                                   {4, 2, 1, 7, 5}, {4, 2, 3, 1, 1}, {4, 1, 2, 5, 1},
                                   {4, 4, 8, 33, 65}};
    const int ns = (int)(sizeof s / sizeof s[0]);
    if (k >= ns) return 0;
    if (k == ns - 1) mark_big(tc);
    const int64_t C = s[k][2];
    fill_normal(tc, add_in(tc, s[k]), 0.5, 1.0);
    fill_normal(tc, add_in(tc, S1(C)), 1.0, 0.5); /* gamma */
    fill_normal(tc, add_in(tc, S1(C)), 0.0, 1.0); /* beta  */
    tc->p.f[0] = 1e-5f;
    /* a channel's gamma gradient sums B*H*W terms g * xhat that can cancel to ~1e-3, while
     * the float32 noise of L grows like sqrt(B*H*W) / h: with planes of >= 35 values (std
     * ~1, mild curvature in x; gamma and beta are linear) a 4x larger h keeps it below 1e-5 */
    if (s[k][3] * s[k][4] >= 35) tc->h_scale = 4.0;
    return 1;
}

/* inorm_pool_relu: x [B,C,H,W], gamma [C], beta [C], eps 1e-5. Odd H/W (the 7 -> 3 and 3 -> 1
 * of Conv-4 on 28 x 28 images: the last row/column is in the statistics but in no window),
 * planes of 4 to 2145 values, gamma of both signs (a negative gamma turns the window's
 * maximum into the minimum of x). Every 2 x 2 window holds base + IPR_SEP * (a permutation of
 * 0..3), the rest of x is N(0, 1): a finite difference moves one x by at most 2h = 2e-2
 * << IPR_SEP, so no argmax flips. The relu's kink: a window whose maximum n lies within
 * IPR_MARGIN (in units of x: n / (rstd |gamma|)) of 0 gets a new base (ipr_redraw), until
 * none does; where that cannot help (a plane of one window: its normalized values do not
 * depend on the base), the channel's beta is drawn again. A step moves a maximum by at most
 * ~2h (its own x) plus the statistics' shift, far less than the margin. */
#define IPR_SEP 0.2
#define IPR_MARGIN 0.1

/* Window (i, j) of the plane xq (rows W long): base + IPR_SEP * (a random permutation). */
static void ipr_window(tcase *tc, float *xq, int64_t W, int64_t i, int64_t j)
{
    int perm[4] = {0, 1, 2, 3};
    for (int t = 3; t > 0; t--) { /* Fisher-Yates */
        int u = (int)trng_int(&tc->rng, 0, t), tmp = perm[t];
        perm[t] = perm[u];
        perm[u] = tmp;
    }
    const double base = trng_normal(&tc->rng);
    for (int t = 0; t < 4; t++) xq[(2 * i + t / 2) * W + 2 * j + t % 2] = (float)(base + IPR_SEP * perm[t]);
}

/* Redraw the windows of plane xq [H,W] whose maximum of n = (x - mean) rstd gm + bt is
 * within IPR_MARGIN rstd |gm| of 0 (statistics in double, as the oracle); returns how many. */
static int ipr_redraw(tcase *tc, float *xq, int64_t H, int64_t W, double gm, double bt)
{
    const int64_t N = H * W;
    double m = 0.0, v = 0.0;
    for (int64_t e = 0; e < N; e++) m += xq[e];
    m /= (double)N;
    for (int64_t e = 0; e < N; e++) v += (xq[e] - m) * (xq[e] - m);
    const double rs = 1.0 / sqrt(v / (double)N + 1e-5);
    int bad = 0;
    for (int64_t i = 0; i < H / 2; i++)
        for (int64_t j = 0; j < W / 2; j++) {
            double best = -INFINITY;
            for (int t = 0; t < 4; t++) {
                const double n = (xq[(2 * i + t / 2) * W + 2 * j + t % 2] - m) * rs * gm + bt;
                if (n > best) best = n;
            }
            if (fabs(best) < IPR_MARGIN * rs * fabs(gm)) {
                ipr_window(tc, xq, W, i, j);
                bad++;
            }
        }
    return bad;
}

/* The cases of inorm_pool_relu: x's shape and the output's dropout (p = 0: none; the key as
 * gen_dropout's). With dropout: one segment with a counter off the Philox block boundary,
 * segments of one image each (C·Ho·Wo) whose streams step, Conv-4's first layer, the big case
 * (segments of one image, many work-groups). */
#define NO_DROP {0.0f, 0, 0, 0, 0, 0}
static const struct {
    int64_t s[5];
    tdrop d;
} IPR_CASES[] = {{{4, 1, 1, 2, 2}, NO_DROP},  {{4, 2, 3, 5, 7}, NO_DROP}, {{4, 1, 2, 7, 7}, NO_DROP},
                 {{4, 2, 2, 3, 3}, NO_DROP},  {{4, 2, 2, 3, 2}, NO_DROP}, {{4, 1, 3, 13, 13}, NO_DROP},
                 {{4, 2, 2, 6, 4}, NO_DROP},  {{4, 1, 2, 28, 28}, NO_DROP},
                 {{4, 2, 3, 5, 7}, {0.3f, 42, 1, 5, 0, 0}},    {{4, 3, 2, 6, 6}, {0.5f, 7, 3, 0, 18, 4}},
                 {{4, 2, 2, 28, 28}, {0.3f, 9, 2, 0, 0, 0}},   {{4, 4, 8, 33, 65}, {0.3f, 11, 5, 0, 4096, 11}}};

static int gen_inorm_pool_relu(int k, tcase *tc)
{
    const int ns = (int)(sizeof IPR_CASES / sizeof IPR_CASES[0]);
    if (k >= ns) return 0;
    if (k == ns - 1) mark_big(tc);
    const int64_t *s = IPR_CASES[k].s;
    const int64_t B = s[1], C = s[2], H = s[3], W = s[4], N = H * W;
    float *x = tc->x[fill_normal(tc, add_in(tc, s), 0.0, 1.0)];
    float *gamma = tc->x[add_in(tc, S1(C))], *beta = tc->x[fill_normal(tc, add_in(tc, S1(C)), 0.0, 0.5)];
    for (int64_t c = 0; c < C; c++) /* |gamma| in [0.5, 1.5], either sign */
        gamma[c] = (float)((trng_unit(&tc->rng) < 0.5 ? -1.0 : 1.0) * (0.5 + trng_unit(&tc->rng)));
    for (int64_t q = 0; q < B * C; q++)
        for (int64_t i = 0; i < H / 2; i++)
            for (int64_t j = 0; j < W / 2; j++) ipr_window(tc, x + q * N, W, i, j);
    for (int64_t c = 0; c < C; c++)
        for (int round = 0, bad = 1; bad && round < 1000; round++) {
            if (round % 50 == 49) beta[c] = (float)(0.5 * trng_normal(&tc->rng));
            bad = 0;
            for (int64_t b = 0; b < B; b++)
                bad += ipr_redraw(tc, x + (b * C + c) * N, H, W, gamma[c], beta[c]);
        }
    tc->p.f[0] = 1e-5f;
    set_drop(tc, 1, &IPR_CASES[k].d);
    return 1;
}

/* conv_inorm_pool_relu: x [B,C,H,W], w [O,C,k,k], bias [O], gamma [O], beta [O]; stride 1,
 * padding i1; eps 1e-5 and the dropout as inorm_pool_relu's (f1, u0..u3, i0). Shapes: one
 * input channel (the first layer the op is for; 28 x 28 with Conv-4's 32 channels), several
 * channels, a 5 x 5 kernel with padding 2, no padding (the output smaller than x), odd sides;
 * dropout with one segment and with a segment per image; a big case (the OpenMP thresholds).
 * The finite differences need inorm_pool_relu's conditions on the convolution's output c
 * (gen_inorm_pool_relu): the four values of every window apart, no window's maximum near the
 * relu's kink. x and w are random (w's centre tap of the first input channel in [0.5, 1.5]
 * with either sign, the rest N(0, 0.05)); c is computed in double (the naive oracle) and the
 * x values under every window that breaks a condition, in any output channel, are drawn
 * again until none does (every 50 rounds the betas too, as gen_inorm_pool_relu's). A step
 * h = 1e-2 of one x moves c by h|w| <= 2e-2, of one w by h|x| <= 5e-2: far less than the
 * gaps CIPR_SEP and the margin CIPR_MARGIN asked of c. With many output channels (Conv-4's
 * 32) or a 5 x 5 kernel, no x keeps every window clear of the others and of the kink at once
 * (each redraw moves the neighbours' values through the other taps; observed: no
 * convergence in 2 000 rounds), so those cases (fd = 0) have no finite differences: their
 * forward is checked against the oracle and the two backends against each other, forward
 * and backward. Checked over seeds 1..40 and 1234: every case passes.
 * The bias gets no gradient check: its gradient is 0 (each plane's instance norm removes a
 * constant shift of the plane), so both backends give rounding noise of ~1e-7 there, which
 * no relative comparison can judge; test-naive checks the op's bias gradient against
 * conv2d then inorm_pool_relu's, bit for bit. */
#define CIPR_SEP 0.15
#define CIPR_MARGIN 0.15

static const struct {
    int64_t c[7]; /* B, C, H, W, O, k, pad */
    tdrop d;
    int fd; /* 1: finite differences (x redrawn until c meets the conditions), 0: none */
} CIPR_CASES[] = {
    {{2, 1, 6, 8, 2, 3, 1}, NO_DROP, 1},
    {{2, 2, 7, 5, 3, 3, 1}, NO_DROP, 1},
    {{1, 1, 9, 9, 2, 5, 2}, NO_DROP, 0},
    {{1, 3, 9, 9, 2, 5, 2}, NO_DROP, 0},
    {{2, 2, 8, 7, 2, 3, 0}, NO_DROP, 1},
    {{2, 1, 6, 6, 2, 3, 1}, {0.3f, 42, 1, 5, 0, 0}, 1},
    {{3, 1, 8, 6, 2, 3, 1}, {0.5f, 7, 3, 0, 24, 4}, 1},
    {{2, 1, 28, 28, 32, 3, 1}, {0.2f, 9, 2, 0, 6272, 5}, 0},
    {{9, 2, 20, 20, 6, 3, 1}, {0.3f, 11, 5, 0, 600, 11}, 0},
};

/* The windows of c = conv(x) (double, plane by plane) that break gen_conv_inorm_pool_relu's
 * conditions: the x values under each one (all input channels) are drawn again; returns how
 * many windows were bad. */
static int cipr_redraw(tcase *tc, const mcl_naive_conv *cv, double *c)
{
    const float *gamma = tc->x[3], *beta = tc->x[4];
    float *x = tc->x[0];
    mcl_naive_conv2d_fwd(cv, x, tc->x[1], tc->x[2], c);
    const int64_t N = cv->Ho * cv->Wo;
    int bad = 0;
    for (int64_t b = 0; b < cv->B; b++)
        for (int64_t o = 0; o < cv->O; o++) {
            const double *cq = c + (b * cv->O + o) * N;
            double m = 0.0, v = 0.0;
            for (int64_t e = 0; e < N; e++) m += cq[e];
            m /= (double)N;
            for (int64_t e = 0; e < N; e++) v += (cq[e] - m) * (cq[e] - m);
            const double rs = 1.0 / sqrt(v / (double)N + 1e-5), gm = gamma[o], bt = beta[o];
            for (int64_t i = 0; i < cv->Ho / 2; i++)
                for (int64_t j = 0; j < cv->Wo / 2; j++) {
                    double val[4], best = -INFINITY, gap = INFINITY;
                    for (int t = 0; t < 4; t++) {
                        val[t] = cq[(2 * i + t / 2) * cv->Wo + 2 * j + t % 2];
                        const double n = (val[t] - m) * rs * gm + bt;
                        if (n > best) best = n;
                    }
                    for (int t = 0; t < 4; t++)
                        for (int u = t + 1; u < 4; u++) gap = fmin(gap, fabs(val[t] - val[u]));
                    if (gap >= CIPR_SEP && fabs(best) >= CIPR_MARGIN * rs * fabs(gm)) continue;
                    bad++;
                    for (int64_t ci = 0; ci < cv->C; ci++) /* the window's pixels in x, if inside */
                        for (int t = 0; t < 4; t++) {
                            const int64_t iy = 2 * i + t / 2 - cv->pad + cv->k / 2, ix = 2 * j + t % 2 - cv->pad + cv->k / 2;
                            if (iy >= 0 && iy < cv->H && ix >= 0 && ix < cv->W)
                                x[((b * cv->C + ci) * cv->H + iy) * cv->W + ix] = (float)trng_normal(&tc->rng);
                        }
                }
        }
    return bad;
}

static int gen_conv_inorm_pool_relu(int k, tcase *tc)
{
    const int nc = (int)(sizeof CIPR_CASES / sizeof CIPR_CASES[0]);
    if (k >= nc) return 0;
    if (k == nc - 1) mark_big(tc);
    const int64_t *c = CIPR_CASES[k].c, B = c[0], C = c[1], O = c[4], K = c[5];
    fill_normal(tc, add_in(tc, S4(B, C, c[2], c[3])), 0.0, 1.0);
    float *w = tc->x[fill_normal(tc, add_in(tc, S4(O, C, K, K)), 0.0, 0.05)];
    fill_normal(tc, add_in(tc, S1(O)), 0.0, 0.5);
    float *gamma = tc->x[add_in(tc, S1(O))];
    fill_normal(tc, add_in(tc, S1(O)), 0.0, 0.5);
    for (int64_t o = 0; o < O; o++) { /* |gamma|, the first channel's centre tap in [0.5, 1.5] */
        gamma[o] = (float)((trng_unit(&tc->rng) < 0.5 ? -1.0 : 1.0) * (0.5 + trng_unit(&tc->rng)));
        w[((o * C) * K + K / 2) * K + K / 2] =
            (float)((trng_unit(&tc->rng) < 0.5 ? -1.0 : 1.0) * (0.5 + trng_unit(&tc->rng)));
    }
    mcl_naive_conv cv;
    mcl_naive_conv_init(&cv, B, C, c[2], c[3], O, K, 1, c[6]);
    double *cbuf = malloc((size_t)(B * O * cv.Ho * cv.Wo) * sizeof(double));
    if (!cbuf) return 0;
    int round = 0;
    while (CIPR_CASES[k].fd && cipr_redraw(tc, &cv, cbuf) > 0 && ++round < 2000)
        if (round % 50 == 49)
            for (int64_t o = 0; o < O; o++) tc->x[4][o] = (float)(0.5 * trng_normal(&tc->rng));
    free(cbuf);
    if (round >= 2000) fprintf(stderr, "gen_conv_inorm_pool_relu: case %d: windows still too close\n", k);
    if (!CIPR_CASES[k].fd) tc->gc_samples = 0;
    tc->p.f[0] = 1e-5f;
    set_drop(tc, 1, &CIPR_CASES[k].d);
    tc->p.i[1] = c[6];
    tc->no_grad[2] = 1;
    return 1;
}

/* inorm_relu: instance_norm's shapes, x ~ N(0.5, 1), gamma of both signs (|gamma| in
 * [0.5, 1.5]), beta ~ N(0, 0.5). The relu's kink: every value whose n = (x - mean) rstd gamma
 * + beta lies within INR_MARGIN of 0 in units of x (|n| / (rstd |gamma|)) or INR_MARGIN_N in
 * units of n is drawn again (statistics in double, as the oracle), until none does; a plane
 * of one value (n = beta exactly, whatever x) gets a new beta instead, until |beta| clears
 * INR_MARGIN_N. A step h (4e-2 at most: the
 * h_scale below) moves n by at most ~2h in x's units for a step of x (its own value plus the
 * statistics' shift), by h for one of beta and h |xhat| for one of gamma: less than the
 * margins (|xhat| > 5 does not occur in these planes). */
#define INR_MARGIN 0.1
#define INR_MARGIN_N 0.2

/* The values of plane xq [N] too close to the relu's kink, drawn again; returns how many. */
static int inr_redraw(tcase *tc, float *xq, int64_t N, double gm, double bt)
{
    double m = 0.0, v = 0.0;
    for (int64_t e = 0; e < N; e++) m += xq[e];
    m /= (double)N;
    for (int64_t e = 0; e < N; e++) v += (xq[e] - m) * (xq[e] - m);
    const double rs = 1.0 / sqrt(v / (double)N + 1e-5);
    const double margin = N == 1 ? INR_MARGIN_N : fmax(INR_MARGIN * rs * fabs(gm), INR_MARGIN_N);
    int bad = 0;
    for (int64_t e = 0; e < N; e++)
        if (fabs((xq[e] - m) * rs * gm + bt) < margin) {
            xq[e] = (float)(0.5 + trng_normal(&tc->rng));
            bad++;
        }
    return bad;
}

/* gamma [C]: |gamma| in [0.5, 1.5], either sign */
static void fill_signed_gamma(tcase *tc, float *gamma, int64_t C)
{
    for (int64_t c = 0; c < C; c++)
        gamma[c] = (float)((trng_unit(&tc->rng) < 0.5 ? -1.0 : 1.0) * (0.5 + trng_unit(&tc->rng)));
}

static int gen_inorm_relu(int k, tcase *tc)
{
    static const int64_t s[][5] = {{4, 1, 1, 1, 5}, {4, 2, 3, 5, 7}, {4, 1, 3, 13, 13}, {4, 2, 1, 7, 5},
                                   {4, 2, 3, 1, 1}, {4, 1, 2, 5, 1}, {4, 2, 2, 16, 16}, {4, 4, 8, 33, 65}};
    const int ns = (int)(sizeof s / sizeof s[0]);
    if (k >= ns) return 0;
    if (k == ns - 1) mark_big(tc);
    const int64_t B = s[k][1], C = s[k][2], N = s[k][3] * s[k][4];
    float *x = tc->x[fill_normal(tc, add_in(tc, s[k]), 0.5, 1.0)];
    float *gamma = tc->x[add_in(tc, S1(C))], *beta = tc->x[fill_normal(tc, add_in(tc, S1(C)), 0.0, 0.5)];
    fill_signed_gamma(tc, gamma, C);
    for (int64_t c = 0; c < C; c++)
        for (int round = 0, bad = 1; bad && round < 1000; round++) {
            if (N == 1 || round % 50 == 49) beta[c] = (float)(0.5 * trng_normal(&tc->rng));
            bad = 0;
            for (int64_t b = 0; b < B; b++) bad += inr_redraw(tc, x + (b * C + c) * N, N, gamma[c], beta[c]);
        }
    tc->p.f[0] = 1e-5f;
    if (N >= 35) tc->h_scale = 4.0; /* instance_norm's reason (gen_instance_norm) */
    return 1;
}

/* inorm_add_pool_relu: x [B,C,H,W], gamma [C] (both signs), beta [C], s [B,C,H,W], eps 1e-5.
 * Odd sides (the last row/column in the statistics, in no window), planes of 4 to 2145 values,
 * one of a ResNet block's shapes. x's windows as gen_inorm_pool_relu's, s ~ N(0, 0.5). The
 * finite differences need, in every window, z = n + s's maximum apart from the other three
 * values and off the relu's kink by IAPR_GAP (1 + rstd |gamma|): a step h = 1e-2 of one x
 * moves its z by h rstd |gamma| (plus the statistics' shift), of one s by h, far less. A
 * window that breaks this gets new x and s values (statistics in double, as the oracle), until
 * none does. */
#define IAPR_GAP 0.06

/* The windows of plane (xq, sq) [H,W] that break the conditions, drawn again; how many. */
static int iapr_redraw(tcase *tc, float *xq, float *sq, int64_t H, int64_t W, double gm, double bt)
{
    const int64_t N = H * W;
    double m = 0.0, v = 0.0;
    for (int64_t e = 0; e < N; e++) m += xq[e];
    m /= (double)N;
    for (int64_t e = 0; e < N; e++) v += (xq[e] - m) * (xq[e] - m);
    const double rs = 1.0 / sqrt(v / (double)N + 1e-5), need = IAPR_GAP * (1.0 + rs * fabs(gm));
    int bad = 0;
    for (int64_t i = 0; i < H / 2; i++)
        for (int64_t j = 0; j < W / 2; j++) {
            double z[4], best = -INFINITY, second = -INFINITY;
            for (int t = 0; t < 4; t++) {
                const int64_t e = (2 * i + t / 2) * W + 2 * j + t % 2;
                z[t] = (xq[e] - m) * rs * gm + bt + sq[e];
                if (z[t] > best) second = best, best = z[t];
                else if (z[t] > second) second = z[t];
            }
            if (best - second >= need && fabs(best) >= need) continue;
            bad++;
            ipr_window(tc, xq, W, i, j);
            for (int t = 0; t < 4; t++) sq[(2 * i + t / 2) * W + 2 * j + t % 2] = (float)(0.5 * trng_normal(&tc->rng));
        }
    return bad;
}

static int gen_inorm_add_pool_relu(int k, tcase *tc)
{
    static const int64_t s[][5] = {{4, 1, 1, 2, 2},  {4, 2, 3, 5, 7},   {4, 1, 2, 7, 7},  {4, 2, 2, 3, 2},
                                   {4, 1, 3, 13, 13}, {4, 2, 2, 16, 16}, {4, 4, 8, 33, 65}};
    const int ns = (int)(sizeof s / sizeof s[0]);
    if (k >= ns) return 0;
    if (k == ns - 1) mark_big(tc);
    const int64_t B = s[k][1], C = s[k][2], H = s[k][3], W = s[k][4], N = H * W;
    float *x = tc->x[fill_normal(tc, add_in(tc, s[k]), 0.0, 1.0)];
    float *gamma = tc->x[add_in(tc, S1(C))], *beta = tc->x[fill_normal(tc, add_in(tc, S1(C)), 0.0, 0.5)];
    float *sk = tc->x[fill_normal(tc, add_in(tc, s[k]), 0.0, 0.5)];
    fill_signed_gamma(tc, gamma, C);
    for (int64_t q = 0; q < B * C; q++)
        for (int64_t i = 0; i < H / 2; i++)
            for (int64_t j = 0; j < W / 2; j++) ipr_window(tc, x + q * N, W, i, j);
    for (int64_t c = 0; c < C; c++) {
        int bad = 1;
        for (int round = 0; bad && round < 2000; round++) {
            bad = 0;
            for (int64_t b = 0; b < B; b++)
                bad += iapr_redraw(tc, x + (b * C + c) * N, sk + (b * C + c) * N, H, W, gamma[c], beta[c]);
        }
        if (bad) fprintf(stderr, "gen_inorm_add_pool_relu: case %d: windows still too close\n", k);
    }
    tc->p.f[0] = 1e-5f;
    return 1;
}

/* srwm: x [B,H,L,D] ~ N(0, 1); initial state W_y, W_q, W_k [B,H,D,D], w_b [B,H,D,4] ~
 * N(0, 1/D) (the paper's scale; W_q as large as the others, so q is far from uniform and
 * every term of the backward matters). L = 1 (one step: read, then update), 5, 13; D = 4, 8;
 * the big case (B*H*L*D*D = 61440, above the reference's OpenMP threshold) is 40 steps of
 * D = 16. */
static int gen_srwm(int k, tcase *tc)
{
    /* {17, 1, 2, 4}: 17 sequences of D = 4, which the OpenCL kernels pack 16 (or, under a
     * work-group limit of 32, 8) to a work-group: a last group with one real sequence */
    static const int64_t c[][4] = {{1, 1, 1, 4},  {1, 1, 5, 4},  {2, 1, 13, 8}, {1, 2, 5, 8},
                                   {2, 2, 13, 4}, {2, 2, 1, 8},  {1, 2, 13, 8}, {17, 1, 2, 4},
                                   {2, 3, 40, 16}};
    const int nc = (int)(sizeof c / sizeof c[0]);
    if (k >= nc) return 0;
    if (k == nc - 1) mark_big(tc);
    const int64_t B = c[k][0], H = c[k][1], L = c[k][2], D = c[k][3];
    const double ws = 1.0 / sqrt((double)D);
    fill_normal(tc, add_in(tc, S4(B, H, L, D)), 0.0, 1.0);
    for (int i = 0; i < 3; i++) fill_normal(tc, add_in(tc, S4(B, H, D, D)), 0.0, ws);
    fill_normal(tc, add_in(tc, S4(B, H, D, 4)), 0.0, ws);
    return 1;
}


/* attn_kv: q [S,Hq,Dk], k [S,Hk,Dk], v [S,Hk,Dv] ~ N(0, 1); the ring kbuf, vbuf [C,..] ~ N(0, 1)
 * (no gradient). Covers: one token and an empty ring; multi-query (Hk = 1), grouped (Hk = 2
 * of 4) and multi-head (Hk = Hq); rings partly filled, full, wrapped (start + n > C), C = 1,
 * C < S and C > S; the three masks (the pi mask with t = 0 and an empty ring: a zero row;
 * the strict mask with an empty ring: a first row with no key at all);
 * ALiBi on and off; Dk != Dv; wide heads (Dk = 40, Dv = 72: the OpenCL kernels fall back to
 * blocks and tiles of 4 rows, so a group's 12 query rows and their 9 keys span several);
 * a big case (50 tokens after a full ring of 64). */
static int gen_attn_kv(int k, tcase *tc)
{
    static const int64_t c[][10] = {
        /* S, Hq, Hk, Dk, Dv, C, n, start, mask, alibi·100 */
        {1, 1, 1, 4, 4, 1, 0, 0, 0, 0},    {5, 2, 1, 4, 3, 7, 3, 5, 1, 0},
        {7, 4, 2, 5, 6, 4, 4, 2, 0, 50},   {3, 2, 2, 8, 8, 1, 1, 0, 1, 0},
        {13, 3, 1, 7, 5, 20, 0, 0, 1, 0},  {1, 2, 1, 4, 4, 5, 5, 3, 1, 0},
        {1, 1, 1, 3, 3, 1, 0, 0, 1, 0},    {6, 2, 1, 4, 4, 3, 2, 2, 1, 25},
        {7, 2, 1, 4, 3, 5, 0, 0, 2, 0},    {5, 4, 2, 5, 4, 6, 6, 4, 2, 50},
        {1, 1, 1, 3, 3, 2, 0, 0, 2, 0},     {6, 2, 1, 40, 72, 4, 3, 2, 1, 25},
        {50, 4, 1, 16, 16, 64, 64, 10, 1, 0}};
    const int nc = (int)(sizeof c / sizeof c[0]);
    if (k >= nc) return 0;
    if (k == nc - 1) mark_big(tc);
    const int64_t S = c[k][0], Hq = c[k][1], Hk = c[k][2], Dk = c[k][3], Dv = c[k][4], C = c[k][5];
    fill_normal(tc, add_in(tc, S3(S, Hq, Dk)), 0.0, 1.0);
    fill_normal(tc, add_in(tc, S3(S, Hk, Dk)), 0.0, 1.0);
    fill_normal(tc, add_in(tc, S3(S, Hk, Dv)), 0.0, 1.0);
    fill_normal(tc, add_in(tc, S3(C, Hk, Dk)), 0.0, 1.0);
    fill_normal(tc, add_in(tc, S3(C, Hk, Dv)), 0.0, 1.0);
    tc->no_grad[3] = tc->no_grad[4] = 1;
    tc->p.i[0] = c[k][6];
    tc->p.i[1] = c[k][7];
    tc->p.i[2] = c[k][8];
    tc->p.f[0] = (float)(1.0 / sqrt((double)Dk));
    tc->p.f[1] = (float)c[k][9] / 100.0f;
    return 1;
}

/* kv_push: buf [C,H,D], x [S,H,D]; C < S, C = S, C > S, C = 1, writes that wrap, two calls
 * (the second writes over the first). */
static int gen_kv_push(int k, tcase *tc)
{
    static const int64_t c[][5] = {/* C, S, H, D, pos */
                                   {4, 7, 1, 3, 1}, {5, 5, 2, 2, 0}, {9, 4, 1, 5, 7},
                                   {1, 3, 1, 4, 0}, {6, 2, 3, 1, 5}};
    const int nc = (int)(sizeof c / sizeof c[0]);
    if (k >= nc) return 0;
    fill_normal(tc, add_in(tc, S3(c[k][0], c[k][2], c[k][3])), 0.0, 1.0);
    fill_normal(tc, add_in(tc, S3(c[k][1], c[k][2], c[k][3])), 0.0, 1.0);
    tc->p.i[0] = c[k][4];
    tc->calls = k == 2 ? 2 : 1;
    return 1;
}

/* rel_attn: qc, qp [B,S,H,D], k [B,T,H,D], v [B,T,H,Dv], r [T,H,D] ~ N(0, 1), T = M + S,
 * scale 1/sqrt(D) (scores ~ N(0, 2)). Covers: a single key (S = 1, M = 0); no memory (M = 0:
 * plain causal self-attention with relative positions); M = S (Transformer-XL's usual
 * memory of one segment) and M > S; Dv != D; windows of 1 and 3 keys back, and one wider than
 * T (then it changes nothing); inputs without a gradient (qp and r: the backward skips the
 * position GEMMs; qc, k and v: only the position gradients); S >= 20, where the reference
 * cuts rows, keys and distances into blocks of 16 (M = 0; a window; a window so short that
 * the first key blocks reach no query); wide heads (D = 36, Dv = 70: the OpenCL kernels fall
 * back to tiles of 4 rows); a mid-sized windowed case and a big one, the last two,
 * both above the reference's REL_PAR_MIN (the (b, h) loop runs in parallel). */
static const int64_t REL_CASES[][8] = {
    /* B, S, H, D, Dv, M, window, inputs without a gradient (bit j: input j) */
    {1, 1, 1, 4, 4, 0, 0, 0},     {2, 5, 2, 4, 3, 3, 0, 0},     {1, 7, 3, 5, 6, 0, 0, 0},
    {2, 13, 1, 7, 5, 13, 0, 0},   {1, 5, 2, 3, 3, 20, 0, 0},    {2, 7, 2, 4, 4, 5, 3, 0},
    {1, 5, 1, 4, 4, 0, 1, 0},     {1, 4, 2, 4, 4, 2, 100, 0},   {2, 5, 2, 4, 4, 6, 0, 0x12},
    {1, 6, 2, 5, 3, 4, 2, 0x0d},  {1, 40, 2, 4, 3, 0, 0, 0},    {1, 37, 1, 5, 4, 9, 6, 0},
    {1, 20, 2, 4, 4, 30, 3, 0},   {1, 5, 1, 36, 70, 3, 2, 0},   {2, 16, 4, 8, 8, 24, 10, 0},
    {2, 24, 4, 16, 8, 40, 0, 0}};
#define N_REL_CASES ((int)(sizeof REL_CASES / sizeof REL_CASES[0]))

static int gen_rel_attn(int k, tcase *tc)
{
    const int64_t(*c)[8] = REL_CASES;
    const int nc = N_REL_CASES;
    if (k >= nc) return 0;
    if (k == nc - 1) mark_big(tc);
    const int64_t B = c[k][0], S = c[k][1], H = c[k][2], D = c[k][3], Dv = c[k][4], T = c[k][5] + S;
    fill_normal(tc, add_in(tc, S4(B, S, H, D)), 0.0, 1.0);
    fill_normal(tc, add_in(tc, S4(B, S, H, D)), 0.0, 1.0);
    fill_normal(tc, add_in(tc, S4(B, T, H, D)), 0.0, 1.0);
    fill_normal(tc, add_in(tc, S4(B, T, H, Dv)), 0.0, 1.0);
    fill_normal(tc, add_in(tc, S3(T, H, D)), 0.0, 1.0);
    for (int j = 0; j < 5; j++) tc->no_grad[j] = (int)((c[k][7] >> j) & 1);
    tc->p.f[0] = (float)(1.0 / sqrt((double)D));
    tc->p.i[0] = c[k][6];
    return 1;
}

/* grad_preproc: z on both branches of thr = e^-P. Finite differences must not cross the
 * threshold (a jump) and, on the log branch, must stay far from 0 (log|z| has a pole there,
 * its derivatives grow like 1/z^k): small-branch values have |z| <= thr/2, log-branch values
 * |z| >= max(4 thr, 40 h) (the step h is at most thr/10 in the cases with both branches, so
 * z ± 2h never reaches thr, and (h/|z|)^4, the Richardson truncation, is < 1e-5). One exact 0
 * (the linear branch is smooth through it). The finite-difference step is the absolute h of
 * each case, tc->h_scale (the table's h is 1). */
static int gen_grad_preproc(int k, tcase *tc)
{
    static const struct {
        int64_t s[5];
        float P;
        int mode; /* 0: both branches, 1: small branch only, 2: log branch only */
        double h; /* absolute finite-difference step; 0: thr / 10 */
    } c[] = {
        {{1, 1}, 10.0f, 1, 0.0},       {{1, 1}, 10.0f, 2, 2e-3},       {{1, 7}, 3.0f, 0, 0.0},
        {{2, 13, 5}, 3.0f, 0, 0.0},    {{1, 7}, 10.0f, 0, 0.0},        {{2, 13, 5}, 10.0f, 2, 2e-3},
        {{3, 2, 3, 5}, 1.0f, 0, 0.0},  {{2, BIG_R, BIG_C}, 10.0f, 0, 0.0},
    };
    const int nc = (int)(sizeof c / sizeof c[0]);
    if (k >= nc) return 0;
    if (k == nc - 1) mark_big(tc);
    const int j = add_in(tc, c[k].s);
    const double thr = (double)expf(-c[k].P);
    const double h = c[k].h > 0.0 ? c[k].h : thr / 10.0;
    const double lo = fmax(4.0 * thr, 40.0 * h), hi = 10.0;
    /* off the threshold (a jump) and, on the log branch, off 0 (log's pole): each finite
     * difference stays on one smooth piece */
    for (int64_t i = 0; i < tc_n(tc, j); i++) {
        const int small = c[k].mode == 1 || (c[k].mode == 0 && (i == 0 || (i != 1 && trng_unit(&tc->rng) < 0.5)));
        const double sign = trng_unit(&tc->rng) < 0.5 ? -1.0 : 1.0;
        double v = small ? thr * (0.05 + 0.45 * trng_unit(&tc->rng))
                         : exp(log(lo) + (log(hi) - log(lo)) * trng_unit(&tc->rng));
        if (c[k].mode == 0 && i == 2) v = 0.0;
        tc->x[j][i] = (float)(sign * v);
    }
    tc->p.f[0] = c[k].P;
    tc->h_scale = h;
    return 1;
}

/* smn_avg_z: I, G [shape] and m indices into them (distinct, shuffled; one case with repeats;
 * three cases sorted and marked so, i0 = 1: OpenCL's one-launch kernel, one with repeats);
 * (gamma, beta1, beta2) as in training (0, 0, 1), evaluation (0.999, 0.5, 0.5) and between.
 * Per element I and G share a sign and the coefficients are >= 0, so z never cancels (the log
 * keeps float's relative error); an element is on grad_preproc's small branch (|I|, |G| <=
 * thr / 8, so |z| <= 3 thr / 8) or on the log branch (|I|, |G| in [1e-2, 10]). */
static int gen_smn_avg_z(int k, tcase *tc)
{
    static const struct {
        int64_t s[5];
        int64_t m;
        int repeats, sorted;
        float gamma, beta1, beta2, P;
    } c[] = {
        {{1, 1}, 1, 0, 0, 0.0f, 0.0f, 1.0f, 10.0f},      {{1, 7}, 3, 0, 0, 0.999f, 0.5f, 0.5f, 10.0f},
        {{2, 13, 5}, 65, 0, 0, 0.9f, 1.0f, 0.25f, 3.0f}, {{3, 4, 3, 5}, 17, 1, 0, 0.5f, 0.75f, 2.0f, 10.0f},
        {{1, 7}, 3, 0, 1, 0.999f, 0.5f, 0.5f, 10.0f},    {{2, 13, 5}, 65, 0, 1, 0.0f, 0.0f, 1.0f, 3.0f},
        {{3, 4, 3, 5}, 17, 1, 1, 0.5f, 0.75f, 2.0f, 10.0f},
        {{2, BIG_R, BIG_C}, 3000, 0, 0, 0.999f, 0.5f, 0.5f, 10.0f},
    };
    const int nc = (int)(sizeof c / sizeof c[0]);
    if (k >= nc) return 0;
    if (k == nc - 1) mark_big(tc);
    const int jI = add_in(tc, c[k].s), jG = add_in(tc, c[k].s);
    const int64_t n = tc_n(tc, jI), m = c[k].m, si[5] = {1, m};
    const int ji = add_in(tc, si);
    const double thr = (double)expf(-c[k].P);
    for (int64_t i = 0; i < n; i++) {
        const int small = trng_unit(&tc->rng) < 0.3;
        const double sign = trng_unit(&tc->rng) < 0.5 ? -1.0 : 1.0;
        for (int t = 0; t < 2; t++) {
            const double v = small ? thr * (0.02 + 0.105 * trng_unit(&tc->rng))
                                   : exp(log(1e-2) + (log(10.0) - log(1e-2)) * trng_unit(&tc->rng));
            tc->x[t ? jG : jI][i] = (float)(sign * v);
        }
    }
    int64_t *perm = xcalloc((size_t)n, sizeof *perm);
    for (int64_t i = 0; i < n; i++) perm[i] = i;
    for (int64_t e = 0; e < m; e++) { /* a partial shuffle: m distinct elements */
        const int64_t r = trng_int(&tc->rng, e, n - 1), t = perm[e];
        perm[e] = perm[r];
        perm[r] = t;
        tc->x[ji][e] = (float)perm[e];
    }
    if (c[k].sorted) /* insertion sort: m is small */
        for (int64_t e = 1; e < m; e++)
            for (int64_t d = e; d > 0 && tc->x[ji][d] < tc->x[ji][d - 1]; d--) {
                const float t = tc->x[ji][d];
                tc->x[ji][d] = tc->x[ji][d - 1];
                tc->x[ji][d - 1] = t;
            }
    if (c[k].repeats)
        for (int64_t e = 1; e < m; e += 3) tc->x[ji][e] = tc->x[ji][e - 1];
    free(perm);
    tc->p.i[0] = c[k].sorted;
    tc->no_grad[jI] = tc->no_grad[jG] = tc->no_grad[ji] = 1;
    tc->p.f[0] = c[k].gamma;
    tc->p.f[1] = c[k].beta1;
    tc->p.f[2] = c[k].beta2;
    tc->p.f[3] = c[k].P;
    snprintf(tc->desc, sizeof tc->desc, "m %" PRId64 "%s%s, gamma %g, beta1 %g, beta2 %g, P %g", m,
             c[k].repeats ? " (repeats)" : "", c[k].sorted ? " (sorted, i0 = 1)" : "", (double)c[k].gamma, (double)c[k].beta1, (double)c[k].beta2,
             (double)c[k].P);
    return 1;
}

/* smn_write. The write set idx is drawn with mcl_rng_bernoulli_indices keyed by the case's
 * (seed, stream) (the runner prints the seed): for a case that wants exactly `want` entries,
 * counter = t·n for t = 0, 1, ... until a draw has that many; want = 0 takes the first
 * non-empty draw. Some cases shuffle the entries (nothing may depend on their order).
 * phi: W1 ~ U(-1, 1), W2 and W3 ~ U(-a, a) with a = sqrt(3/H) (variance 1/H), biases U(-1/2, 1/2).
 * The op is piecewise linear in zs and phi, with kinks where a pre-activation a1 or a2 is 0; a
 * finite difference across a kink is wrong by the change of slope. So each entry's zs (N(0, 1)
 * values with |z| <= 2) is drawn again until every |a1_k| and |a2_j| (computed in double) is
 * at least SMN_MARGIN·h, h the case's finite-difference step (tc->h_scale, absolute; the
 * table's h is 1). A finite difference moves one input by at most 2h, hence a pre-activation
 * by at most 2h times max(2|zs|, |h1|, a·|zs|·2, Σ_k |W2_jk| |W1_kc|) <= 2h · max(4, 4.5, 7,
 * sqrt(3H)) <= 15.5h for H <= 20 (|zs| <= 2, |W1| <= 1, |b1| <= 1/2, |slope| <= 1): less than
 * the margin, so no kink is crossed. The step is as large as the margin lets the draws succeed
 * (1e-2; 2e-3 for H = 20): the float32 noise of the outputs, eps·|out| / 2h, then stays small
 * next to gradients scaled down by a slope of 0.01. */
#define SMN_MARGIN 20.0
#define SMN_HMAX 32

/* The meta-learner of a smn_write case (in[3..8], slope p.f[0]), for the naive oracles
 * (src/ref/naive/smn.c) */
static mcl_naive_phi smn_phi_of(const tcase *tc)
{
    const mcl_naive_phi f = {tc->x[3], tc->x[4], tc->x[5], tc->x[6], tc->x[7], tc->x[8], tc->shape[3][0],
                             tc->p.f[0]};
    return f;
}

static int gen_smn_write(int k, tcase *tc)
{
    static const struct {
        int64_t s[5]; /* M0 */
        int64_t H, want;
        float p, slope;
        int shuffle;
        double h;
    } c[] = {
        {{1, 1}, 1, 1, 1.0f, 0.01f, 0, 1e-2},
        {{1, 7}, 3, 3, 3.0f / 7.0f, 0.1f, 1, 1e-2},
        {{2, 13, 9}, 5, 40, 40.0f / 117.0f, 0.01f, 1, 1e-2},
        {{3, 2, 3, 5}, 4, 0, 0.2f, 0.0f, 0, 1e-2},        /* slope 0: ReLU */
        {{4, 2, 1, 3, 4}, 2, 24, 1.0f, 0.2f, 1, 1e-2},   /* every element written: gM0 = 0 */
        {{2, 64, 96}, 20, 0, 0.3f, 0.01f, 0, 2e-3},      /* big: ~1843 entries of H = 20 */
        {{2, BIG_R, BIG_C}, 3, 0, 0.01f, 0.01f, 1, 1e-2}, /* big M0 (the elementwise loops'
                                                            threads), ~683 entries */
    };
    const int nc = (int)(sizeof c / sizeof c[0]);
    if (k >= nc) return 0;
    const int64_t n = shape_numel((int)c[k].s[0], c[k].s + 1), H = c[k].H;
    if (n > 1000) mark_big(tc);
    int64_t *buf = xcalloc((size_t)n, sizeof *buf), m = 0;
    for (uint64_t t = 0; t < 100000 && (c[k].want ? m != c[k].want : m == 0); t++)
        m = mcl_rng_bernoulli_indices(tc->rng.seed, tc->rng.stream, t * (uint64_t)n, n, c[k].p, buf);
    if (c[k].want ? m != c[k].want : m == 0) {
        fprintf(stderr, "test-ops: gen_smn_write: no draw of %" PRId64 " entries\n", c[k].want);
        exit(1);
    }
    if (c[k].shuffle)
        for (int64_t i = m - 1; i > 0; i--) { /* Fisher-Yates */
            int64_t j = trng_int(&tc->rng, 0, i), t = buf[i];
            buf[i] = buf[j];
            buf[j] = t;
        }
    const int jm = fill_normal(tc, add_in(tc, c[k].s), 0.0, 1.0);
    const int ji = add_in(tc, S1(m)), jz = add_in(tc, S2(m, 2));
    const double a = sqrt(3.0 / (double)H);
    int jphi[6];
    jphi[0] = add_in(tc, S2(H, 2)); /* W1 */
    jphi[1] = add_in(tc, S1(H));    /* b1 */
    jphi[2] = add_in(tc, S2(H, H)); /* W2 */
    jphi[3] = add_in(tc, S1(H));    /* b2 */
    jphi[4] = add_in(tc, S2(1, H)); /* W3 */
    jphi[5] = add_in(tc, S1(1));    /* b3 */
    tc->p.f[0] = c[k].slope;
    /* Some phi draws leave a hidden unit whose pre-activation stays near its kink for every z
     * (tiny weights and bias): then no zs can be placed away from the kinks, and phi is drawn
     * again (up to 100 times) rather than giving up on the seed. */
    int placed = 0;
    for (int phi_try = 0; phi_try < 100 && !placed; phi_try++) {
        fill_uniform(tc, jphi[0], -1.0, 1.0);
        fill_uniform(tc, jphi[1], -0.5, 0.5);
        fill_uniform(tc, jphi[2], -a, a);
        fill_uniform(tc, jphi[3], -0.5, 0.5);
        fill_uniform(tc, jphi[4], -a, a);
        fill_uniform(tc, jphi[5], -0.5, 0.5);
        placed = 1;
        for (int64_t e = 0; e < m && placed; e++) {
            tc->x[ji][e] = (float)buf[e];
            for (int tries = 0;; tries++) {
                for (int cc = 0; cc < 2; cc++) {
                    double v;
                    do v = trng_normal(&tc->rng);
                    while (fabs(v) > 2.0);
                    tc->x[jz][2 * e + cc] = (float)v;
                }
                double act[4 * SMN_HMAX], mn = INFINITY; /* a1, h1, a2, h2 */
                const mcl_naive_phi f = smn_phi_of(tc);
                mcl_naive_smn_phi(&f, tc->x[jz] + 2 * e, act);
                for (int64_t q = 0; q < H; q++) mn = fmin(mn, fmin(fabs(act[q]), fabs(act[2 * H + q])));
                if (mn >= SMN_MARGIN * c[k].h) break;
                if (tries == 1000) {
                    placed = 0;
                    break;
                }
            }
        }
    }
    if (!placed) {
        fprintf(stderr, "test-ops: gen_smn_write: no phi and zs away from the kinks\n");
        exit(1);
    }
    (void)jm;
    tc->h_scale = c[k].h;
    /* phi's gradients are sums over the m entries, and a finite difference of one phi element
     * moves all m outputs: both their size and the float32 noise of L grow like sqrt(m) */
    tc->gscale = sqrt((double)m);
    tc->no_grad[1] = 1; /* idx: integer-valued, no gradient */
    free(buf);
    return 1;
}

/* smn_write_eff: smn_write's cases (M, idx, zs, phi) with W and E [shape of M] ~ N(0, 1)
 * after them (E is any state: only the written elements change). */
static int gen_smn_write_eff(int k, tcase *tc)
{
    if (!gen_smn_write(k, tc)) return 0;
    int64_t sm[5] = {tc->ndim[0], 1, 1, 1, 1};
    for (int d = 0; d < tc->ndim[0]; d++) sm[1 + d] = tc->shape[0][d];
    fill_normal(tc, add_in(tc, sm), 0.0, 1.0); /* W */
    fill_normal(tc, add_in(tc, sm), 0.0, 1.0); /* E */
    for (int j = 0; j < tc->n_in; j++) tc->no_grad[j] = 1;
    return 1;
}

/* smn_avg_write: smn_write's cases (M, idx, zs, phi; idx sorted: the op wants it increasing,
 * and zs is overwritten) with W, E ~ N(0, 1) and I, G [shape of M] drawn as smn_avg_z's (per
 * element a shared sign, grad_preproc's small branch or its log branch, so z never cancels);
 * (gamma, beta1, beta2, P) as in training, evaluation and between, by case. */
static int gen_smn_avg_write(int k, tcase *tc)
{
    static const float hp[3][4] = {{0.0f, 0.0f, 1.0f, 10.0f}, {0.999f, 0.5f, 0.5f, 10.0f}, {0.9f, 1.0f, 0.25f, 3.0f}};
    if (!gen_smn_write(k, tc)) return 0;
    const int64_t m = tc->shape[1][0];
    float *idx = tc->x[1];
    for (int64_t e = 1; e < m; e++) /* insertion sort (m <= ~2000) */
        for (int64_t d = e; d > 0 && idx[d] < idx[d - 1]; d--) {
            const float t = idx[d];
            idx[d] = idx[d - 1];
            idx[d - 1] = t;
        }
    int64_t sm[5] = {tc->ndim[0], 1, 1, 1, 1};
    for (int d = 0; d < tc->ndim[0]; d++) sm[1 + d] = tc->shape[0][d];
    fill_normal(tc, add_in(tc, sm), 0.0, 1.0); /* W */
    fill_normal(tc, add_in(tc, sm), 0.0, 1.0); /* E */
    const int jI = add_in(tc, sm), jG = add_in(tc, sm);
    const float *c = hp[k % 3];
    const double thr = (double)expf(-c[3]);
    for (int64_t i = 0; i < tc_n(tc, jI); i++) {
        const int small = trng_unit(&tc->rng) < 0.3;
        const double sign = trng_unit(&tc->rng) < 0.5 ? -1.0 : 1.0;
        for (int t = 0; t < 2; t++) {
            const double v = small ? thr * (0.02 + 0.105 * trng_unit(&tc->rng))
                                   : exp(log(1e-2) + (log(10.0) - log(1e-2)) * trng_unit(&tc->rng));
            tc->x[t ? jG : jI][i] = (float)(sign * v);
        }
    }
    for (int j = 1; j < 5; j++) tc->p.f[j] = c[j - 1];
    for (int j = 0; j < tc->n_in; j++) tc->no_grad[j] = 1;
    snprintf(tc->desc, sizeof tc->desc, "m %" PRId64 ", H %" PRId64 ", gamma %g, beta1 %g, beta2 %g, P %g", m,
             tc->shape[3][0], (double)c[0], (double)c[1], (double)c[2], (double)c[3]);
    return 1;
}

/* smn_write_add: smn_write's cases (M0, idx, zs, phi; the entries sorted by index, each
 * keeping its zs row, so the kink margins hold) with W ~ N(0, 1) after them; odd cases take
 * M0 as zeros (i0 = 1: M0 not read, its gradient zero). */
static int gen_smn_write_add(int k, tcase *tc)
{
    if (!gen_smn_write(k, tc)) return 0;
    const int64_t m = tc->shape[1][0];
    float *idx = tc->x[1], *zs = tc->x[2];
    for (int64_t e = 1; e < m; e++) /* insertion sort of the entries (m <= ~2000) */
        for (int64_t d = e; d > 0 && idx[d] < idx[d - 1]; d--) {
            float t = idx[d];
            idx[d] = idx[d - 1];
            idx[d - 1] = t;
            for (int c = 0; c < 2; c++) {
                t = zs[2 * d + c];
                zs[2 * d + c] = zs[2 * (d - 1) + c];
                zs[2 * (d - 1) + c] = t;
            }
        }
    int64_t sm[5] = {tc->ndim[0], 1, 1, 1, 1};
    for (int d = 0; d < tc->ndim[0]; d++) sm[1 + d] = tc->shape[0][d];
    fill_normal(tc, add_in(tc, sm), 0.0, 1.0); /* W */
    tc->p.i[0] = k % 2;
    snprintf(tc->desc, sizeof tc->desc, "m %" PRId64 ", H %" PRId64 "%s", m, tc->shape[3][0],
             k % 2 ? ", M0 as zeros (i0 = 1)" : "");
    return 1;
}

/* ================================================================================== */
/* Naive host computations, in double: nv_X(tc, want) fills want[k] for each output k    */
/* (in-place ops: want[k] = input k after the call(s)). The ops with real arithmetic      */
/* (matmul, softmax, norms, loss, conv, pooling, srwm) call the readable oracles of       */
/* src/ref/naive/; the one-line formulas of elementwise, shape and optimizer ops stay here.*/

#define UNARY(NAME, EXPR)                                                                    \
    static void nv_##NAME(const tcase *tc, harr *w)                                          \
    {                                                                                        \
        double *o = want_new(&w[0], tc->ndim[0], tc->shape[0]);                              \
        for (int64_t i = 0; i < w[0].n; i++) {                                               \
            double x = tc->x[0][i];                                                          \
            o[i] = (EXPR);                                                                   \
        }                                                                                    \
    }
#define BINARY(NAME, EXPR)                                                                   \
    static void nv_##NAME(const tcase *tc, harr *w)                                          \
    {                                                                                        \
        double *o = want_new(&w[0], tc->ndim[0], tc->shape[0]);                              \
        for (int64_t i = 0; i < w[0].n; i++) {                                               \
            double x = tc->x[0][i], y = tc->x[1][i];                                         \
            o[i] = (EXPR);                                                                   \
        }                                                                                    \
    }

BINARY(add, x + y)
BINARY(sub, x - y)
BINARY(mul, x * y)
UNARY(scale, (double)tc->p.f[0] * x)
UNARY(copy, x)
UNARY(relu, x > 0 ? x : 0.0)
UNARY(leaky_relu, x > 0 ? x : (double)tc->p.f[0] * x)
UNARY(elu, x > 0 ? x : (double)tc->p.f[0] * (exp(x) - 1.0))
UNARY(sigmoid, 1.0 / (1.0 + exp(-x)))
UNARY(tanh, tanh(x))
UNARY(gelu, 0.5 * x * (1.0 + erf(x / sqrt(2.0))))
UNARY(exp, exp(x))
UNARY(log, log(x))

static void nv_bias_add(const tcase *tc, harr *w)
{
    double *o = want_new(&w[0], tc->ndim[0], tc->shape[0]);
    int64_t N = tc_n(tc, 1);
    for (int64_t i = 0; i < w[0].n; i++) o[i] = (double)tc->x[0][i] + tc->x[1][i % N];
}

static void nv_bias_add2(const tcase *tc, harr *w)
{
    double *o0 = want_new(&w[0], tc->ndim[0], tc->shape[0]);
    double *o1 = want_new(&w[1], tc->ndim[0], tc->shape[0]);
    int64_t N = tc_n(tc, 1);
    for (int64_t i = 0; i < w[0].n; i++) {
        o0[i] = (double)tc->x[0][i] + tc->x[1][i % N];
        o1[i] = (double)tc->x[0][i] + tc->x[2][i % N];
    }
}

/* gelu(t) of the float sum t = fl(x + b) (the op's contract: the sum is rounded first) */
static void nv_bias_gelu(const tcase *tc, harr *w)
{
    double *o = want_new(&w[0], tc->ndim[0], tc->shape[0]);
    int64_t N = tc_n(tc, 1);
    for (int64_t i = 0; i < w[0].n; i++) {
        const double t = (double)(float)((double)tc->x[0][i] + tc->x[1][i % N]);
        o[i] = 0.5 * t * (1.0 + erf(t / sqrt(2.0)));
    }
}

/* src/ref/naive/gemm.c */
static void nv_matmul(const tcase *tc, harr *w)
{
    int nd = tc->ndim[0], ta = tc->p.i[0] != 0, tb = tc->p.i[1] != 0;
    const int64_t *sa = tc->shape[0], *sb = tc->shape[1];
    int64_t M = ta ? sa[nd - 1] : sa[nd - 2], K = ta ? sa[nd - 2] : sa[nd - 1];
    int64_t N = tb ? sb[nd - 2] : sb[nd - 1];
    int64_t so[4] = {sa[0], sa[1], sa[2], sa[3]}, batch = 1;
    for (int d = 0; d < nd - 2; d++) batch *= sa[d];
    so[nd - 2] = M;
    so[nd - 1] = N;
    mcl_naive_matmul(batch, M, K, N, ta, tb, tc->x[0], tc->x[1], want_new(&w[0], nd, so));
}

static void nv_reduce_all(const tcase *tc, harr *w, int mode) /* 0 sum, 1 mean, 2 sumsq */
{
    double s = 0.0;
    int64_t n = tc_n(tc, 0);
    for (int64_t i = 0; i < n; i++) s += mode == 2 ? (double)tc->x[0][i] * tc->x[0][i] : tc->x[0][i];
    want_new(&w[0], 1, (const int64_t[1]){1})[0] = mode == 1 ? s / (double)n : s;
}
static void nv_sum(const tcase *tc, harr *w) { nv_reduce_all(tc, w, 0); }
static void nv_mean(const tcase *tc, harr *w) { nv_reduce_all(tc, w, 1); }
static void nv_sumsq(const tcase *tc, harr *w) { nv_reduce_all(tc, w, 2); }

/* Rows R and last dim N of input j. */
static void rows_cols(const tcase *tc, int j, int64_t *R, int64_t *N)
{
    *N = tc->shape[j][tc->ndim[j] - 1];
    *R = tc_n(tc, j) / *N;
}

static void nv_reduce_last(const tcase *tc, harr *w, int mean)
{
    int64_t R, N, one = 1;
    rows_cols(tc, 0, &R, &N);
    double *o = tc->ndim[0] == 1 ? want_new(&w[0], 1, &one)
                                 : want_new(&w[0], tc->ndim[0] - 1, tc->shape[0]);
    for (int64_t r = 0; r < R; r++) {
        double s = 0.0;
        for (int64_t c = 0; c < N; c++) s += tc->x[0][r * N + c];
        o[r] = mean ? s / (double)N : s;
    }
}
static void nv_sum_last(const tcase *tc, harr *w) { nv_reduce_last(tc, w, 0); }
static void nv_mean_last(const tcase *tc, harr *w) { nv_reduce_last(tc, w, 1); }

/* src/ref/naive/softmax.c */
static void nv_softmax(const tcase *tc, harr *w)
{
    int64_t R, N;
    rows_cols(tc, 0, &R, &N);
    mcl_naive_softmax(R, N, tc->x[0], want_new(&w[0], tc->ndim[0], tc->shape[0]));
}
static void nv_log_softmax(const tcase *tc, harr *w)
{
    int64_t R, N;
    rows_cols(tc, 0, &R, &N);
    mcl_naive_log_softmax(R, N, tc->x[0], want_new(&w[0], tc->ndim[0], tc->shape[0]));
}

/* src/ref/naive/norm.c: y, mean [R], rstd [R] */
static void nv_layer_norm(const tcase *tc, harr *w)
{
    int64_t R, N;
    rows_cols(tc, 0, &R, &N);
    double *y = want_new(&w[0], tc->ndim[0], tc->shape[0]);
    double *mu = want_new(&w[1], 1, &R), *rs = want_new(&w[2], 1, &R);
    mcl_naive_layer_norm(R, N, tc->x[0], tc->x[1], tc->x[2], (double)tc->p.f[0], y, mu, rs);
}

/* src/ref/naive/softmax.c: loss [1], probs [R,C] */
static void nv_cross_entropy(const tcase *tc, harr *w)
{
    int64_t R, C, one = 1;
    rows_cols(tc, 0, &R, &C);
    double *loss = want_new(&w[0], 1, &one);
    *loss = mcl_naive_cross_entropy(R, C, tc->x[0], tc->x[1], want_new(&w[1], 2, tc->shape[0]));
}

/* outer = product of the dims before `axis`, inner = product of the dims after it. */
static void outer_inner(int ndim, const int64_t *shape, int axis, int64_t *outer, int64_t *inner)
{
    *outer = shape_numel(axis, shape);
    *inner = shape_numel(ndim - axis - 1, shape + axis + 1);
}

static void nv_concat(const tcase *tc, harr *w)
{
    int nd = tc->ndim[0], ax = (int)tc->p.i[0];
    int64_t so[4] = {tc->shape[0][0], tc->shape[0][1], tc->shape[0][2], tc->shape[0][3]};
    int64_t na = tc->shape[0][ax], nb = tc->shape[1][ax], outer, inner;
    so[ax] = na + nb;
    double *o = want_new(&w[0], nd, so);
    outer_inner(nd, so, ax, &outer, &inner);
    for (int64_t q = 0; q < outer; q++) {
        for (int64_t i = 0; i < na * inner; i++) o[(q * (na + nb)) * inner + i] = tc->x[0][q * na * inner + i];
        for (int64_t i = 0; i < nb * inner; i++)
            o[(q * (na + nb) + na) * inner + i] = tc->x[1][q * nb * inner + i];
    }
}

static void nv_slice(const tcase *tc, harr *w)
{
    int nd = tc->ndim[0], ax = (int)tc->p.i[0];
    int64_t start = tc->p.i[1], len = tc->p.i[2], na = tc->shape[0][ax], outer, inner;
    int64_t so[4] = {tc->shape[0][0], tc->shape[0][1], tc->shape[0][2], tc->shape[0][3]};
    so[ax] = len;
    double *o = want_new(&w[0], nd, so);
    outer_inner(nd, so, ax, &outer, &inner);
    for (int64_t q = 0; q < outer; q++)
        for (int64_t i = 0; i < len * inner; i++)
            o[q * len * inner + i] = tc->x[0][(q * na + start) * inner + i];
}

static void nv_reshape(const tcase *tc, harr *w)
{
    int64_t s[4];
    int nd = reshape_get(tc, s);
    double *o = want_new(&w[0], nd, s);
    for (int64_t i = 0; i < w[0].n; i++) o[i] = tc->x[0][i];
}

static void nv_transpose(const tcase *tc, harr *w)
{
    int nd = tc->ndim[0];
    int64_t M = tc->shape[0][nd - 2], N = tc->shape[0][nd - 1];
    int64_t so[4] = {tc->shape[0][0], tc->shape[0][1], tc->shape[0][2], tc->shape[0][3]};
    so[nd - 2] = N;
    so[nd - 1] = M;
    double *o = want_new(&w[0], nd, so);
    for (int64_t z = 0; z < tc_n(tc, 0) / (M * N); z++)
        for (int64_t m = 0; m < M; m++)
            for (int64_t n = 0; n < N; n++) o[z * M * N + n * M + m] = tc->x[0][z * M * N + m * N + n];
}

/* out[o0,o1,o2,o3] = a[j] with a's coordinate along dim perm[d] equal to o_d */
static void nv_permute(const tcase *tc, harr *w)
{
    const int64_t *sa = tc->shape[0];
    int64_t so[4], o4[4], ai[4];
    for (int d = 0; d < 4; d++) so[d] = sa[tc->p.i[d]];
    double *o = want_new(&w[0], 4, so);
    for (int64_t i = 0; i < w[0].n; i++) {
        int64_t r = i;
        for (int d = 3; d >= 0; d--) o4[d] = r % so[d], r /= so[d];
        for (int d = 0; d < 4; d++) ai[tc->p.i[d]] = o4[d];
        o[i] = tc->x[0][((ai[0] * sa[1] + ai[1]) * sa[2] + ai[2]) * sa[3] + ai[3]];
    }
}

static void nv_one_hot(const tcase *tc, harr *w)
{
    int nd = tc->ndim[0];
    int64_t D = tc->p.i[0], so[4] = {tc->shape[0][0], tc->shape[0][1], tc->shape[0][2], 1};
    so[nd] = D;
    double *o = want_new(&w[0], nd + 1, so);
    for (int64_t i = 0; i < tc_n(tc, 0); i++) {
        float v = tc->x[0][i];
        if (v >= 0 && v < (float)D) o[i * D + (int64_t)v] = 1.0;
    }
}

static void nv_embedding(const tcase *tc, harr *w)
{
    int nd = tc->ndim[1];
    int64_t D = tc->shape[0][1], so[4] = {tc->shape[1][0], tc->shape[1][1], tc->shape[1][2], 1};
    so[nd] = D;
    double *o = want_new(&w[0], nd + 1, so);
    for (int64_t i = 0; i < tc_n(tc, 1); i++)
        for (int64_t d = 0; d < D; d++) o[i * D + d] = tc->x[0][(int64_t)tc->x[1][i] * D + d];
}

/* out = a * mask / (1 - p), mask = (uniform(seed, stream, counter + i) >= p); with segments
 * of seg elements, element i of segment s = i / seg: (stream + s·step, counter + i − s·seg) */
static void nv_dropout(const tcase *tc, harr *w)
{
    double *o = want_new(&w[0], tc->ndim[0], tc->shape[0]);
    float p = tc->p.f[0];
    const int64_t seg = tc->p.i[0] > 0 ? tc->p.i[0] : w[0].n;
    for (int64_t i = 0; i < w[0].n; i++) {
        const uint64_t s = (uint64_t)(i / seg), j = (uint64_t)(i % seg);
        int keep = mcl_rng_uniform(tc->p.u[0], tc->p.u[1] + s * tc->p.u[3], tc->p.u[2] + j) >= p;
        const double x = tc->p.i[1] && tc->x[0][i] <= 0.0f ? 0.0 : (double)tc->x[0][i]; /* relu first */
        o[i] = keep ? x / (1.0 - (double)p) : 0.0;
    }
}

/* add_dropout: out = a + x · mask / (1 − p), dropout's mask of x (one segment) */
static void nv_add_dropout(const tcase *tc, harr *w)
{
    double *o = want_new(&w[0], tc->ndim[0], tc->shape[0]);
    const float p = tc->p.f[0];
    for (int64_t i = 0; i < w[0].n; i++) {
        const int keep = mcl_rng_uniform(tc->p.u[0], tc->p.u[1], tc->p.u[2] + (uint64_t)i) >= p;
        o[i] = (double)tc->x[0][i] + (keep ? (double)tc->x[1][i] / (1.0 - (double)p) : 0.0);
    }
}

/* bias_dropout_relu: out = relu(x + b) · mask / (1 − p), dropout's mask (one segment) */
static void nv_bias_dropout_relu(const tcase *tc, harr *w)
{
    double *o = want_new(&w[0], tc->ndim[0], tc->shape[0]);
    const float p = tc->p.f[0];
    const int64_t N = tc_n(tc, 1);
    for (int64_t i = 0; i < w[0].n; i++) {
        const int keep = mcl_rng_uniform(tc->p.u[0], tc->p.u[1], tc->p.u[2] + (uint64_t)i) >= p;
        const double t = (double)tc->x[0][i] + tc->x[1][i % N];
        o[i] = keep && t > 0.0 ? t / (1.0 - (double)p) : 0.0;
    }
}

/* bias_add_dropout: out = a + (x + b) · mask / (1 − p), dropout's mask (one segment) */
static void nv_bias_add_dropout(const tcase *tc, harr *w)
{
    double *o = want_new(&w[0], tc->ndim[0], tc->shape[0]);
    const float p = tc->p.f[0];
    const int64_t N = tc_n(tc, 2);
    for (int64_t i = 0; i < w[0].n; i++) {
        const int keep = mcl_rng_uniform(tc->p.u[0], tc->p.u[1], tc->p.u[2] + (uint64_t)i) >= p;
        const double t = (double)tc->x[1][i] + tc->x[2][i % N];
        o[i] = (double)tc->x[0][i] + (keep ? t / (1.0 - (double)p) : 0.0);
    }
}

/* Copies of the inputs as the in-place ops' wanted results. */
static void want_inputs(const tcase *tc, harr *w)
{
    for (int k = 0; k < tc->n_in; k++) {
        double *o = want_new(&w[k], tc->ndim[k], tc->shape[k]);
        for (int64_t i = 0; i < w[k].n; i++) o[i] = tc->x[k][i];
    }
}

/* mom = f1*mom + (grad + f2*param); param -= f0*mom, `calls` times */
static void nv_sgd_step(const tcase *tc, harr *w)
{
    want_inputs(tc, w);
    double *pa = w[0].d, *g = w[1].d, *mo = w[2].d, lr = tc->p.f[0], mu = tc->p.f[1], wd = tc->p.f[2];
    for (int c = 0; c < tc->calls; c++)
        for (int64_t i = 0; i < w[0].n; i++) {
            mo[i] = mu * mo[i] + (g[i] + wd * pa[i]);
            pa[i] -= lr * mo[i];
        }
}

/* param = (param - f0*grad) + f1*(w0 - param) (f1 > 0; else param - f0*grad), `calls` times */
static void nv_dyn_step(const tcase *tc, harr *w)
{
    want_inputs(tc, w);
    double *pa = w[0].d, *g = w[1].d, *w0 = w[2].d, lr = tc->p.f[0], decay = tc->p.f[1];
    for (int c = 0; c < tc->calls; c++)
        for (int64_t i = 0; i < w[0].n; i++) pa[i] = (pa[i] - lr * g[i]) + decay * (w0[i] - pa[i]);
}

/* Adam (i0 = 0: g += wd*param) / AdamW (i0 = 1: param -= lr*wd*param) / RMSProp (i0 = 2: as
 * Adam with b1 = 0 and no bias correction), step t = 1, 2, ...:
 * m = b1 m + (1-b1) g;  v = b2 v + (1-b2) g^2;  param -= lr (m/(1-b1^t)) / (sqrt(v/(1-b2^t)) + eps) */
static void nv_adam_step(const tcase *tc, harr *w)
{
    want_inputs(tc, w);
    double *pa = w[0].d, *gr = w[1].d, *m = w[2].d, *v = w[3].d;
    double lr = tc->p.f[0], b1 = tc->p.f[1], b2 = tc->p.f[2], eps = tc->p.f[3], wd = tc->p.f[4];
    for (int c = 0; c < tc->calls; c++) {
        double t = tc->step_i >= 0 ? c + 1 : (double)tc->p.i[1];
        for (int64_t i = 0; i < w[0].n; i++) {
            double g = gr[i] + (tc->p.i[0] != 1 ? wd * pa[i] : 0.0); /* L2 for Adam and RMSProp */
            m[i] = b1 * m[i] + (1 - b1) * g;
            v[i] = b2 * v[i] + (1 - b2) * g * g;
            const int rms = tc->p.i[0] == 2; /* RMSProp: no bias correction */
            double upd = (m[i] / (rms ? 1.0 : 1 - pow(b1, t))) / (sqrt(v[i] / (rms ? 1.0 : 1 - pow(b2, t))) + eps);
            pa[i] -= lr * (upd + (tc->p.i[0] == 1 ? wd * pa[i] : 0.0));
        }
    }
}

/* grad *= min(1, f0 / (sqrt(sq) + 1e-6)) */
static void nv_clip_scale(const tcase *tc, harr *w)
{
    want_inputs(tc, w);
    double s = (double)tc->p.f[0] / (sqrt((double)tc->x[1][0]) + 1e-6);
    if (s > 1.0) s = 1.0;
    for (int64_t i = 0; i < w[0].n; i++) w[0].d[i] *= s;
}

/* axis 0: out[i, ..] = x[..] for i < n;  axis 1: out[b, i, ..] = x[b, ..] for i < n */
static void nv_repeat_batch(const tcase *tc, harr *w)
{
    const int nd = tc->ndim[0], ax = (int)tc->p.i[1];
    const int64_t n = tc->p.i[0];
    int64_t so[4] = {1, 1, 1, 1};
    for (int d = 0, o = 0; d <= nd; d++) so[d] = d == ax ? n : tc->shape[0][o++];
    double *o = want_new(&w[0], nd + 1, so);
    const int64_t N = tc_n(tc, 0), outer = ax == 1 ? tc->shape[0][0] : 1, inner = N / outer;
    for (int64_t q = 0; q < w[0].n; q++) /* q = (b * n + i) * inner + j */
        o[q] = tc->x[0][(q / (n * inner)) * inner + q % inner];
}

/* repeat_batch4: per tensor k, axis 0: out[i, ..] = x_k[..]; axis 1: out[b·n + i, ..] = x_k[b, ..] */
static void nv_repeat_batch4(const tcase *tc, harr *w)
{
    const int64_t n = tc->p.i[0];
    const int ax = (int)tc->p.i[1];
    for (int t = 0; t < 4; t++) {
        const int nd = tc->ndim[t];
        int64_t so[4] = {1, 1, 1, 1};
        const int ndo = ax == 0 ? nd + 1 : nd;
        for (int d = 0; d < ndo; d++)
            so[d] = ax == 0 ? (d == 0 ? n : tc->shape[t][d - 1]) : (d == 0 ? tc->shape[t][0] * n : tc->shape[t][d]);
        double *o = want_new(&w[t], ndo, so);
        const int64_t N = tc_n(tc, t), outer = ax == 1 ? tc->shape[t][0] : 1, inner = N / outer;
        for (int64_t q = 0; q < w[t].n; q++) /* q = (b * n + i) * inner + j */
            o[q] = tc->x[t][(q / (n * inner)) * inner + q % inner];
    }
}

/* src/ref/naive/conv.c */
static void nv_conv2d(const tcase *tc, harr *w)
{
    const int64_t *xs = tc->shape[0];
    mcl_naive_conv cv;
    mcl_naive_conv_init(&cv, xs[0], xs[1], xs[2], xs[3], tc->shape[1][0], tc->shape[1][2],
                        tc->p.i[0], tc->p.i[1]);
    const int64_t so[4] = {cv.B, cv.O, cv.Ho, cv.Wo};
    mcl_naive_conv2d_fwd(&cv, tc->x[0], tc->x[1], tc->x[2], want_new(&w[0], 4, so));
}

/* src/ref/naive/conv.c: out, argmax */
static void nv_maxpool2d(const tcase *tc, harr *w)
{
    const int64_t *xs = tc->shape[0];
    const int64_t so[4] = {xs[0], xs[1], xs[2] / 2, xs[3] / 2};
    double *out = want_new(&w[0], 4, so), *arg = want_new(&w[1], 4, so);
    mcl_naive_maxpool2d(xs[0] * xs[1], xs[2], xs[3], tc->x[0], out, arg);
}

/* src/ref/naive/norm.c: y, mean [B*C], rstd [B*C] */
static void nv_instance_norm(const tcase *tc, harr *w)
{
    const int64_t *xs = tc->shape[0], R = xs[0] * xs[1];
    double *y = want_new(&w[0], 4, xs);
    double *mu = want_new(&w[1], 1, &R), *rs = want_new(&w[2], 1, &R);
    mcl_naive_instance_norm(xs[0], xs[1], xs[2], xs[3], tc->x[0], tc->x[1], tc->x[2],
                            (double)tc->p.f[0], y, mu, rs);
}

/* The output's dropout of the inorm_pool_relu cases (src/ref/naive/dropout.c's mask) on y */
static void nv_tail_dropout(const tcase *tc, harr *y)
{
    if (!(tc->p.f[1] > 0.0f)) return;
    const mcl_naive_drop d = {tc->p.u[0], tc->p.u[1], tc->p.u[2], tc->p.u[3], tc->p.i[0], (double)tc->p.f[1]};
    for (int64_t i = 0; i < y->n; i++) y->d[i] = mcl_naive_dropout_keep(&d, i) ? y->d[i] / (1.0 - d.p) : 0.0;
}

/* src/ref/naive/norm.c: y, mean [B*C], rstd [B*C], argmax */
static void nv_inorm_pool_relu(const tcase *tc, harr *w)
{
    const int64_t *xs = tc->shape[0], R = xs[0] * xs[1];
    const int64_t so[4] = {xs[0], xs[1], xs[2] / 2, xs[3] / 2};
    double *y = want_new(&w[0], 4, so), *arg = want_new(&w[3], 4, so);
    double *mu = want_new(&w[1], 1, &R), *rs = want_new(&w[2], 1, &R);
    mcl_naive_inorm_pool_relu(xs[0], xs[1], xs[2], xs[3], tc->x[0], tc->x[1], tc->x[2],
                              (double)tc->p.f[0], y, mu, rs, arg);
    nv_tail_dropout(tc, &w[0]);
}

/* src/ref/naive/norm.c: y, mean [B*C], rstd [B*C] */
static void nv_inorm_relu(const tcase *tc, harr *w)
{
    const int64_t *xs = tc->shape[0], R = xs[0] * xs[1];
    double *y = want_new(&w[0], 4, xs);
    double *mu = want_new(&w[1], 1, &R), *rs = want_new(&w[2], 1, &R);
    mcl_naive_inorm_relu(xs[0], xs[1], xs[2], xs[3], tc->x[0], tc->x[1], tc->x[2], (double)tc->p.f[0], y, mu, rs);
}

/* src/ref/naive/norm.c: y, mean [B*C], rstd [B*C], argmax */
static void nv_inorm_add_pool_relu(const tcase *tc, harr *w)
{
    const int64_t *xs = tc->shape[0], R = xs[0] * xs[1];
    const int64_t so[4] = {xs[0], xs[1], xs[2] / 2, xs[3] / 2};
    double *y = want_new(&w[0], 4, so), *arg = want_new(&w[3], 4, so);
    double *mu = want_new(&w[1], 1, &R), *rs = want_new(&w[2], 1, &R);
    mcl_naive_inorm_add_pool_relu(xs[0], xs[1], xs[2], xs[3], tc->x[0], tc->x[1], tc->x[2], tc->x[3],
                                  (double)tc->p.f[0], y, mu, rs, arg);
}

/* src/ref/naive/conv.c then norm.c: the convolution c (double, rounded to float as conv2d's
 * output is), then inorm_pool_relu of c and its dropout: y, mean [B*O], rstd [B*O], argmax */
static void nv_conv_inorm_pool_relu(const tcase *tc, harr *w)
{
    const int64_t *xs = tc->shape[0], O = tc->shape[1][0];
    mcl_naive_conv cv;
    mcl_naive_conv_init(&cv, xs[0], xs[1], xs[2], xs[3], O, tc->shape[1][2], 1, tc->p.i[1]);
    const int64_t nc = cv.B * O * cv.Ho * cv.Wo, R = cv.B * O;
    double *c = malloc((size_t)nc * sizeof(double));
    float *cf = malloc((size_t)nc * sizeof(float));
    if (c && cf) {
        mcl_naive_conv2d_fwd(&cv, tc->x[0], tc->x[1], tc->x[2], c);
        for (int64_t i = 0; i < nc; i++) cf[i] = (float)c[i];
        const int64_t so[4] = {cv.B, O, cv.Ho / 2, cv.Wo / 2};
        double *y = want_new(&w[0], 4, so), *arg = want_new(&w[3], 4, so);
        double *mu = want_new(&w[1], 1, &R), *rs = want_new(&w[2], 1, &R);
        mcl_naive_inorm_pool_relu(cv.B, O, cv.Ho, cv.Wo, cf, tc->x[3], tc->x[4], (double)tc->p.f[0], y, mu, rs, arg);
        nv_tail_dropout(tc, &w[0]);
    }
    free(c);
    free(cf);
}

/* src/ref/naive/srwm.c: y, the final state, and the saved q, k, beta, Δ_i of every step */
static void nv_srwm(const tcase *tc, harr *w)
{
    const int64_t B = tc->shape[0][0], H = tc->shape[0][1], L = tc->shape[0][2];
    const int64_t D = tc->shape[0][3], seq[4] = {B, H, L, D}, seq4[4] = {B, H, L, 4};
    double *y = want_new(&w[0], 4, seq), *st[4], *dl[4];
    const float *w0[4];
    for (int i = 0; i < 4; i++) {
        st[i] = want_new(&w[1 + i], 4, tc->shape[1 + i]);
        w0[i] = tc->x[1 + i];
    }
    double *q = want_new(&w[5], 4, seq), *k = want_new(&w[6], 4, seq);
    double *beta = want_new(&w[7], 4, seq4);
    for (int i = 0; i < 4; i++) dl[i] = want_new(&w[8 + i], 4, i == 3 ? seq4 : seq);
    mcl_naive_srwm_fwd(B, H, L, D, tc->x[0], w0, y, st, q, k, beta, dl);
}


/* attn_kv, densely: the scores of every query row against all n + S keys in time order,
 * masked to -inf above the diagonal, a softmax, then the diagonal weight dropped (mask 1) */
static void nv_attn_kv(const tcase *tc, harr *w)
{
    const int64_t S = tc->shape[0][0], Hq = tc->shape[0][1], Dk = tc->shape[0][2];
    const int64_t Hk = tc->shape[1][1], Dv = tc->shape[2][2], C = tc->shape[3][0];
    const int64_t n = tc->p.i[0], start = tc->p.i[1], T = n + S;
    const double scale = tc->p.f[0], alibi = tc->p.f[1];
    const int64_t os[3] = {S, Hq, Dv}, ls[2] = {S, Hq};
    double *o = want_new(&w[0], 3, os), *lse = want_new(&w[1], 2, ls);
    double *K = malloc((size_t)(T * Hk * Dk) * sizeof *K), *V = malloc((size_t)(T * Hk * Dv) * sizeof *V);
    double *sc = malloc((size_t)T * sizeof *sc);
    if (!K || !V || !sc) abort();
    for (int64_t j = 0; j < T; j++) /* keys and values in time order */
        for (int64_t kh = 0; kh < Hk; kh++) {
            for (int64_t c = 0; c < Dk; c++)
                K[(j * Hk + kh) * Dk + c] = j < n ? tc->x[3][(((start + j) % C) * Hk + kh) * Dk + c]
                                                  : tc->x[1][((j - n) * Hk + kh) * Dk + c];
            for (int64_t c = 0; c < Dv; c++)
                V[(j * Hk + kh) * Dv + c] = j < n ? tc->x[4][(((start + j) % C) * Hk + kh) * Dv + c]
                                                  : tc->x[2][((j - n) * Hk + kh) * Dv + c];
        }
    for (int64_t t = 0; t < S; t++)
        for (int64_t h = 0; h < Hq; h++) {
            const int64_t kh = h / (Hq / Hk), qt = n + t;
            const double slope = alibi == 0 ? 0.0 : alibi * pow(2.0, -8.0 * (double)(h + 1) / (double)Hq);
            double mx = -INFINITY;
            for (int64_t j = 0; j < T; j++) {
                double d = 0.0;
                for (int64_t c = 0; c < Dk; c++)
                    d += (double)tc->x[0][(t * Hq + h) * Dk + c] * K[(j * Hk + kh) * Dk + c];
                const int ok = tc->p.i[2] == 2 ? j < qt : j <= qt;
                sc[j] = ok ? scale * d - slope * (double)(qt - j) : -INFINITY;
                if (sc[j] > mx) mx = sc[j];
            }
            double z = 0.0;
            for (int64_t j = 0; j < T; j++) z += exp(sc[j] - mx);
            if (!isfinite(mx)) { /* no key at all (mask 2, first token, empty ring): o = 0 */
                lse[t * Hq + h] = 0.0;
                for (int64_t c = 0; c < Dv; c++) o[(t * Hq + h) * Dv + c] = 0.0;
                continue;
            }
            lse[t * Hq + h] = mx + log(z);
            for (int64_t c = 0; c < Dv; c++) {
                double acc = 0.0;
                for (int64_t j = 0; j < T; j++) {
                    const double p = exp(sc[j] - mx) / z * (tc->p.i[2] == 1 && j == qt ? 0.0 : 1.0);
                    acc += p * V[(j * Hk + kh) * Dv + c];
                }
                o[(t * Hq + h) * Dv + c] = acc;
            }
        }
    free(K);
    free(V);
    free(sc);
}

/* kv_push: ring rows (pos + r) mod C <- x rows S - m + r, per call */
static void nv_kv_push(const tcase *tc, harr *w)
{
    want_inputs(tc, w);
    const int64_t C = tc->shape[0][0], S = tc->shape[1][0], row = tc->shape[0][1] * tc->shape[0][2];
    const int64_t m = S < C ? S : C;
    for (int call = 0; call < tc->calls; call++)
        for (int64_t r = 0; r < m; r++)
            for (int64_t e = 0; e < row; e++)
                w[0].d[((tc->p.i[0] + r) % C) * row + e] = w[1].d[(S - m + r) * row + e];
}

/* wcst_act, from ops.def's contract in double: p_a = softmax, act = the first a with
 * u < p_0 + .. + p_a, reward, then the rule's schedule; `calls` times on the evolving state. */
static void nv_wcst_act(const tcase *tc, harr *w)
{
    want_inputs(tc, w);
    double *st = w[0].d, *act = w[3].d, *rew = w[4].d;
    const double *lg = w[1].d, *cards = w[2].d;
    const int64_t S = tc->shape[0][0], L = tc->shape[1][0], A = tc->shape[1][1];
    for (int call = 0; call < tc->calls; call++) {
        const int rule = (int)st[0];
        int perfect = 1;
        for (int64_t c = 0; c < L; c++) {
            double m = lg[c * A], z = 0.0, acc = 0.0;
            for (int64_t a = 1; a < A; a++) m = lg[c * A + a] > m ? lg[c * A + a] : m;
            for (int64_t a = 0; a < A; a++) z += exp(lg[c * A + a] - m);
            const double u = mcl_rng_uniform(tc->p.u[0], tc->p.u[1], tc->p.u[2] + (uint64_t)c);
            int64_t pick = A - 1;
            for (int64_t a = 0; a < A; a++) {
                acc += exp(lg[c * A + a] - m) / z;
                if (u < acc) {
                    pick = a;
                    break;
                }
            }
            const int ok = cards[c * 3 + rule] == (double)pick;
            act[c] = (double)pick;
            rew[c] = ok ? tc->p.f[0] : tc->p.f[1];
            perfect &= ok;
        }
        double streak = perfect ? st[1] + 1 : 0, solved = st[2], count = st[3], next = st[4], r = st[0];
        if (solved == 0 && streak >= (double)tc->p.i[0]) {
            const int64_t j = 5 + (int64_t)next;
            solved = 1;
            count = 1 + (j < S ? st[j] : 0);
            next += 1;
        }
        if (solved != 0 && --count <= 0) {
            const int64_t j = 5 + (int64_t)next;
            r = (double)(((int)r + 1 + (j < S ? (int)st[j] : 0)) % 3);
            next += 1;
            streak = solved = count = 0;
        }
        st[0] = r, st[1] = streak, st[2] = solved, st[3] = count, st[4] = next;
    }
}

/* rel_attn, straight from the equations (no GEMM, no relative shift): per (b, h, i), the
 * scores of the allowed keys j (lo_i <= j <= M + i) as two dot products in double with the
 * distance's row of r, the softmax, o = Σ p v. probs: the row's lo and p_j (j = lo..M+i) in
 * double, for the gradient oracle below. */
typedef struct rel_case {
    int64_t B, S, H, D, Dv, T, M, win;
    double scale;
} rel_case;

static rel_case rel_case_of(const tcase *tc)
{
    rel_case c;
    c.B = tc->shape[0][0];
    c.S = tc->shape[0][1];
    c.H = tc->shape[0][2];
    c.D = tc->shape[0][3];
    c.T = tc->shape[2][1];
    c.Dv = tc->shape[3][3];
    c.M = c.T - c.S;
    c.win = tc->p.i[0];
    c.scale = tc->p.f[0];
    return c;
}

/* Row (b, i, h): lo, and p[j - lo] for j = lo..M+i; returns lse. */
static double rel_row_probs(const tcase *tc, const rel_case *c, int64_t b, int64_t i, int64_t h,
                            int64_t *lo_out, double *p)
{
    const int64_t hi = c->M + i, lo = c->win > 0 && hi - c->win > 0 ? hi - c->win : 0;
    const float *qc = tc->x[0] + ((b * c->S + i) * c->H + h) * c->D;
    const float *qp = tc->x[1] + ((b * c->S + i) * c->H + h) * c->D;
    double mx = -INFINITY, z = 0.0;
    for (int64_t j = lo; j <= hi; j++) {
        const float *kj = tc->x[2] + ((b * c->T + j) * c->H + h) * c->D;
        const float *rd = tc->x[4] + ((hi - j) * c->H + h) * c->D;
        double ac = 0.0, bd = 0.0;
        for (int64_t e = 0; e < c->D; e++) {
            ac += (double)qc[e] * kj[e];
            bd += (double)qp[e] * rd[e];
        }
        p[j - lo] = c->scale * (ac + bd);
        if (p[j - lo] > mx) mx = p[j - lo];
    }
    for (int64_t j = lo; j <= hi; j++) z += exp(p[j - lo] - mx);
    for (int64_t j = lo; j <= hi; j++) p[j - lo] = exp(p[j - lo] - mx) / z;
    *lo_out = lo;
    return mx + log(z);
}

static void nv_rel_attn(const tcase *tc, harr *w)
{
    const rel_case c = rel_case_of(tc);
    const int64_t os[4] = {c.B, c.S, c.H, c.Dv}, ls[3] = {c.B, c.S, c.H};
    double *o = want_new(&w[0], 4, os), *lse = want_new(&w[1], 3, ls);
    double *p = xcalloc((size_t)c.T, sizeof *p);
    for (int64_t b = 0; b < c.B; b++)
        for (int64_t i = 0; i < c.S; i++)
            for (int64_t h = 0; h < c.H; h++) {
                const int64_t row = (b * c.S + i) * c.H + h;
                int64_t lo;
                lse[row] = rel_row_probs(tc, &c, b, i, h, &lo, p);
                for (int64_t j = lo; j <= c.M + i; j++)
                    for (int64_t e = 0; e < c.Dv; e++)
                        o[row * c.Dv + e] += p[j - lo] * tc->x[3][((b * c.T + j) * c.H + h) * c.Dv + e];
            }
    free(p);
}

/* Its gradients in double, pair by pair: dp_j = go_i·v_j, D_i = Σ_j p_j dp_j,
 * ds_j = p_j (dp_j − D_i); gqc_i += scale ds k_j, gqp_i += scale ds r_d, gk_j += scale ds qc_i,
 * gv_j += p_j go_i, gr_d += scale ds qp_i (d = M + i − j). */
static void nvb_rel_attn(const tcase *tc, const harr *gout, harr *w)
{
    const rel_case c = rel_case_of(tc);
    double *g[5];
    for (int k = 0; k < 5; k++) g[k] = want_new(&w[k], tc->ndim[k], tc->shape[k]);
    double *p = xcalloc((size_t)c.T, sizeof *p), *dp = xcalloc((size_t)c.T, sizeof *dp);
    for (int64_t b = 0; b < c.B; b++)
        for (int64_t i = 0; i < c.S; i++)
            for (int64_t h = 0; h < c.H; h++) {
                const int64_t row = (b * c.S + i) * c.H + h, hi = c.M + i;
                const float *go = gout[0].f + row * c.Dv;
                int64_t lo;
                (void)rel_row_probs(tc, &c, b, i, h, &lo, p);
                double Di = 0.0;
                for (int64_t j = lo; j <= hi; j++) {
                    const float *vj = tc->x[3] + ((b * c.T + j) * c.H + h) * c.Dv;
                    dp[j - lo] = 0.0;
                    for (int64_t e = 0; e < c.Dv; e++) dp[j - lo] += (double)go[e] * vj[e];
                    Di += p[j - lo] * dp[j - lo];
                }
                for (int64_t j = lo; j <= hi; j++) {
                    const double pj = p[j - lo], ds = pj * (dp[j - lo] - Di) * c.scale;
                    const int64_t ko = ((b * c.T + j) * c.H + h), ro = ((hi - j) * c.H + h) * c.D;
                    for (int64_t e = 0; e < c.D; e++) {
                        g[0][row * c.D + e] += ds * tc->x[2][ko * c.D + e];
                        g[1][row * c.D + e] += ds * tc->x[4][ro + e];
                        g[2][ko * c.D + e] += ds * tc->x[0][row * c.D + e];
                        g[4][ro + e] += ds * tc->x[1][row * c.D + e];
                    }
                    for (int64_t e = 0; e < c.Dv; e++) g[3][ko * c.Dv + e] += pj * go[e];
                }
            }
    free(p);
    free(dp);
}

/* grad_preproc, elementwise (mcl_naive_grad_preproc: thr = e^-P, ep = e^P as the floats the
 * backends use, the rest in double) */
static void nv_grad_preproc(const tcase *tc, harr *w)
{
    const int nd = tc->ndim[0];
    int64_t so[4] = {tc->shape[0][0], tc->shape[0][1], tc->shape[0][2], 1};
    so[nd] = 2;
    double *o = want_new(&w[0], nd + 1, so);
    for (int64_t i = 0; i < tc_n(tc, 0); i++) mcl_naive_grad_preproc(tc->x[0][i], tc->p.f[0], o + 2 * i);
}

/* smn_avg_z in double: I' = gamma I + beta1 G; zs_e = preproc(I'[idx_e] + beta2 G[idx_e])
 * (mcl_naive_smn_avg_z) */
static void nv_smn_avg_z(const tcase *tc, harr *w)
{
    double *o = want_new(&w[0], tc->ndim[0], tc->shape[0]);
    const int64_t n = tc_n(tc, 0), m = tc_n(tc, 2), sz[2] = {m, 2};
    double *zs = want_new(&w[1], 2, sz);
    mcl_naive_smn_avg_z(n, m, tc->x[0], tc->x[1], tc->x[2], tc->p.f[0], tc->p.f[1], tc->p.f[2], tc->p.f[3], o, zs);
}

/* gz = |z| >= thr ? g0 / (P z) : g1 ep */
static void nvb_grad_preproc(const tcase *tc, const harr *gout, harr *w)
{
    double *gz = want_new(&w[0], tc->ndim[0], tc->shape[0]);
    const double P = tc->p.f[0];
    float thr, ep;
    mcl_grad_preproc_consts(tc->p.f[0], &thr, &ep);
    for (int64_t i = 0; i < w[0].n; i++) {
        const double z = tc->x[0][i];
        gz[i] = fabs(z) >= (double)thr ? gout[0].f[2 * i] / (P * z) : gout[0].f[2 * i + 1] * (double)ep;
    }
}

/* The entry of a smn_write case that writes element i (the last, if several), or -1 */
static int64_t smn_entry_of(const tcase *tc, int64_t i)
{
    int64_t e = -1;
    for (int64_t t = 0; t < tc->shape[1][0]; t++)
        if (tc->x[1][t] == (float)i) e = t;
    return e;
}

/* smn_write_eff in place: M[idx_e] = g_phi(zs_e), E[idx_e] = W[idx_e] + g_phi(zs_e), the
 * rest of every input as it was (mcl_naive_smn_phi) */
static void nv_smn_write_eff(const tcase *tc, harr *w)
{
    want_inputs(tc, w);
    const mcl_naive_phi f = smn_phi_of(tc);
    double act[4 * SMN_HMAX];
    for (int64_t e = 0; e < tc->shape[1][0]; e++) {
        const int64_t i = (int64_t)tc->x[1][e];
        const double v = mcl_naive_smn_phi(&f, tc->x[2] + 2 * e, act);
        w[0].d[i] = v;
        w[10].d[i] = (double)tc->x[9][i] + v;
    }
}

/* smn_avg_write in place, in double: I' = gamma I + beta1 G everywhere; for each entry e,
 * zs_e = preproc(I'[idx_e] + beta2 G[idx_e]) (mcl_naive_smn_avg_z) and v = g_phi(zs_e) on zs_e
 * rounded to float (that rounding, ~6e-8, is far below the tolerance), M[idx_e] = v,
 * E[idx_e] = W[idx_e] + v; the rest as it was */
static void nv_smn_avg_write(const tcase *tc, harr *w)
{
    want_inputs(tc, w);
    const int64_t n = tc_n(tc, 0), m = tc->shape[1][0];
    double *zs = w[2].d, act[4 * SMN_HMAX];
    mcl_naive_smn_avg_z(n, m, tc->x[11], tc->x[12], tc->x[1], tc->p.f[1], tc->p.f[2], tc->p.f[3], tc->p.f[4],
                        w[11].d, zs);
    const mcl_naive_phi f = smn_phi_of(tc);
    for (int64_t e = 0; e < m; e++) {
        const int64_t i = (int64_t)tc->x[1][e];
        const float z[2] = {(float)zs[2 * e], (float)zs[2 * e + 1]};
        const double v = mcl_naive_smn_phi(&f, z, act);
        w[0].d[i] = v;
        w[10].d[i] = (double)tc->x[9][i] + v;
    }
}

/* smn_write_add: W + smn_write's M (M0 read as zeros when i0 = 1) */
static void nv_smn_write_add(const tcase *tc, harr *w)
{
    double *o = want_new(&w[0], tc->ndim[0], tc->shape[0]), tmp[4 * SMN_HMAX];
    const mcl_naive_phi f = smn_phi_of(tc);
    mcl_naive_smn_write(&f, w[0].n, tc->shape[1][0], tc->p.i[0] ? NULL : tc->x[0], tc->x[1], tc->x[2], tmp, o);
    for (int64_t i = 0; i < w[0].n; i++) o[i] += (double)tc->x[9][i];
}

static void nv_smn_write(const tcase *tc, harr *w)
{
    double *o = want_new(&w[0], tc->ndim[0], tc->shape[0]), tmp[4 * SMN_HMAX];
    const mcl_naive_phi f = smn_phi_of(tc);
    mcl_naive_smn_write(&f, w[0].n, tc->shape[1][0], tc->x[0], tc->x[1], tc->x[2], tmp, o);
}

/* Its gradients by plain backpropagation through g_phi, one entry at a time
 * (mcl_naive_smn_write_bwd): gM0 = gM where nothing is written, 0 where written; gzs and the
 * six phi gradients. idx: no gradient. */
static void nvb_smn_write(const tcase *tc, const harr *gout, harr *w)
{
    double *g[9] = {0}, tmp[6 * SMN_HMAX];
    for (int k = 0; k < 9; k++)
        if (k != 1) g[k] = want_new(&w[k], tc->ndim[k], tc->shape[k]);
    const mcl_naive_phi f = smn_phi_of(tc);
    const mcl_naive_phi_grad gp = {g[3], g[4], g[5], g[6], g[7], g[8]};
    mcl_naive_smn_write_bwd(&f, w[0].n, tc->shape[1][0], tc->x[1], tc->x[2], gout[0].f, tmp, g[0], g[2], &gp);
}

/* ================================================================================== */
/* The per-op table.                                                                    */

struct runner;
typedef struct opspec {
    const char *name;
    int (*gen)(int k, tcase *tc);
    void (*naive)(const tcase *tc, harr *want);
    double fwd_tol; /* forward (and in-place result) tolerance, see FT_* */
    double h;       /* finite-difference step (absolute; inputs are O(1)) */
    double grad_tol;/* gradcheck tolerance, see GT_*; unused for ops without backward */
    double diff_tol;/* differential limit (OpenCL vs reference), see DT_* */
} opspec;

/* Optional checks of some ops (EXTRAS[] below the op table, looked up by name).
 * naive_bwd: the input gradients in double for the case's gout (want[k] for every input that
 * gets one), checked against the reference backward in column "ref bwd" with tolerance bwd_tol
 * (normalized like gradcheck). extra: checks the table cannot express, run once after the op's
 * cases; they report in the columns they concern. Either may be NULL. */
typedef struct opextra {
    const char *name;
    void (*naive_bwd)(const tcase *tc, const harr *gout, harr *want);
    double bwd_tol;
    void (*extra)(struct runner *r, mcl_op op);
} opextra;

static void smn_write_extra(struct runner *r, mcl_op op);
static void smn_write_add_extra(struct runner *r, mcl_op op);
static void rel_attn_extra(struct runner *r, mcl_op op);

/* One row per op: name, case generator, naive forward, forward tolerance, finite-difference
 * step h (absolute; inputs are O(1)), gradcheck tolerance. The tolerances are the named
 * constants at the top of this file, each with its reason. */
static const opspec SPECS[] = {
    {"add", gen_binary, nv_add, FT_ROUND, 1.0, GT_LIN, DT_ROUND},
    {"sub", gen_binary, nv_sub, FT_ROUND, 1.0, GT_LIN, DT_ROUND},
    {"mul", gen_binary, nv_mul, FT_ROUND, 1.0, GT_LIN, DT_ROUND}, /* bilinear: linear in each input */
    {"scale", gen_scale, nv_scale, FT_ROUND, 1.0, GT_LIN, DT_ROUND},
    {"bias_add", gen_bias_add, nv_bias_add, FT_ROUND, 1.0, GT_LIN, DT_ROUND},
    {"copy", gen_unary, nv_copy, FT_EXACT, 1.0, GT_LIN, DT_EXACT},
    {"relu", gen_kink, nv_relu, FT_EXACT, 5e-3, GT_KINK, DT_EXACT},
    {"leaky_relu", gen_leaky_relu, nv_leaky_relu, FT_ROUND, 5e-3, GT_KINK, DT_ROUND},
    {"elu", gen_elu, nv_elu, FT_LIBM, 5e-3, GT_KINK, DT_LIBM},
    {"sigmoid", gen_unary, nv_sigmoid, FT_LIBM, 2e-2, GT_SMOOTH, DT_LIBM},
    {"tanh", gen_unary, nv_tanh, FT_LIBM, 2e-2, GT_SMOOTH, DT_LIBM},
    {"gelu", gen_unary, nv_gelu, FT_LIBM, 2e-2, GT_SMOOTH, DT_LIBM},
    {"exp", gen_unary, nv_exp, FT_LIBM, 2e-2, GT_SMOOTH, DT_LIBM},
    {"log", gen_log, nv_log, FT_LIBM, 2e-2, GT_SMOOTH, DT_LIBM},
    {"matmul", gen_matmul, nv_matmul, FT_SUM, 1.0, GT_LIN, DT_GEMM}, /* bilinear */
    {"sum", gen_reduce, nv_sum, FT_SUM, 1.0, GT_LIN, DT_SUM},
    {"mean", gen_reduce_mean, nv_mean, FT_SUM, 1.0, GT_LIN, DT_SUM},
    {"sumsq", gen_reduce, nv_sumsq, FT_SUM, 1.0, GT_LIN, DT_SUM}, /* quadratic: exact for any h */
    {"sum_last", gen_reduce_last, nv_sum_last, FT_SUM, 1.0, GT_LIN, DT_SUM},
    {"mean_last", gen_reduce_mean_last, nv_mean_last, FT_SUM, 1.0, GT_LIN, DT_SUM},
    {"softmax", gen_softmax, nv_softmax, FT_LIBM, 2e-2, GT_SMOOTH, DT_LIBM},
    {"log_softmax", gen_softmax, nv_log_softmax, FT_LIBM, 2e-2, GT_SMOOTH, DT_LIBM},
    {"layer_norm", gen_layer_norm, nv_layer_norm, FT_LIBM, 1e-2, GT_NORM, DT_LIBM},
    {"cross_entropy", gen_cross_entropy, nv_cross_entropy, FT_LIBM, 2e-2, GT_SMOOTH, DT_LIBM},
    {"concat", gen_concat, nv_concat, FT_EXACT, 1.0, GT_LIN, DT_EXACT},
    {"slice", gen_slice, nv_slice, FT_EXACT, 1.0, GT_LIN, DT_EXACT},
    {"reshape", gen_reshape, nv_reshape, FT_EXACT, 1.0, GT_LIN, DT_EXACT},
    {"transpose", gen_transpose, nv_transpose, FT_EXACT, 1.0, GT_LIN, DT_EXACT},
    {"permute", gen_permute, nv_permute, FT_EXACT, 1.0, GT_LIN, DT_EXACT},
    {"one_hot", gen_one_hot, nv_one_hot, FT_EXACT, 0.0, 0.0, DT_EXACT},
    {"embedding", gen_embedding, nv_embedding, FT_EXACT, 1.0, GT_LIN, DT_EXACT}, /* linear in the table */
    {"dropout", gen_dropout, nv_dropout, FT_ROUND, 1.0, GT_LIN, DT_ROUND}, /* fixed mask: linear */
    {"sgd_step", gen_sgd_step, nv_sgd_step, FT_OPTIM, 0.0, 0.0, DT_ROUND},
    {"dyn_step", gen_dyn_step, nv_dyn_step, FT_OPTIM, 0.0, 0.0, DT_ROUND},
    {"adam_step", gen_adam_step, nv_adam_step, FT_OPTIM, 0.0, 0.0, DT_ROUND},
    {"clip_scale", gen_clip_scale, nv_clip_scale, FT_OPTIM, 0.0, 0.0, DT_ROUND},
    /* copies forward (exact); linear; backward sums the n copies (device order vs double) */
    {"repeat_batch", gen_repeat_batch, nv_repeat_batch, FT_EXACT, 1.0, GT_LIN, DT_SUM},
    /* float32 GEMM sums of C*k*k <= 50 terms + bias; bilinear in (x, w), linear in bias */
    {"conv2d", gen_conv2d, nv_conv2d, FT_SUM, 1.0, GT_LIN, DT_GEMM},
    /* selects values; piecewise linear, windows distinct by >= 4h (gen_maxpool2d) */
    {"maxpool2d", gen_maxpool2d, nv_maxpool2d, FT_EXACT, 5e-3, GT_KINK, DT_EXACT},
    /* the layer_norm equations per (image, channel) plane: same steps and reasons */
    {"instance_norm", gen_instance_norm, nv_instance_norm, FT_LIBM, 1e-2, GT_NORM, DT_LIBM},
    /* instance_norm's statistics and values, then selects (maxpool2d, relu): instance_norm's
     * tolerances; windows distinct by >> 2h and maxima kept off the kink (gen_inorm_pool_relu).
     * Observed over 200 seeds: fwd 4.6e-8, gradcheck 1.7e-4, diff 4.9e-7 */
    {"inorm_pool_relu", gen_inorm_pool_relu, nv_inorm_pool_relu, FT_LIBM, 1e-2, GT_NORM, DT_LIBM},
    /* instance_norm's statistics and values, then relu's select: instance_norm's tolerances;
     * values kept off the kink (gen_inorm_relu) */
    {"inorm_relu", gen_inorm_relu, nv_inorm_relu, FT_LIBM, 1e-2, GT_NORM, DT_LIBM},
    /* instance_norm's, then one float add and selects (add, relu, maxpool2d): instance_norm's
     * tolerances; window maxima of z apart and off the kink (gen_inorm_add_pool_relu) */
    {"inorm_add_pool_relu", gen_inorm_add_pool_relu, nv_inorm_add_pool_relu, FT_LIBM, 1e-2, GT_NORM, DT_LIBM},
    /* conv2d's float sums (C·k·k <= 75 terms) then inorm_pool_relu: the latter's tolerances
     * (its statistics dominate); windows of c apart and off the kink (gen_conv_inorm_pool_relu) */
    {"conv_inorm_pool_relu", gen_conv_inorm_pool_relu, nv_conv_inorm_pool_relu, FT_LIBM, 1e-2, GT_NORM, DT_LIBM},
    /* SRWM (doc/acl-model.md §1): float32 sums of D <= 16 terms per step carried through L <= 40
     * steps of state (observed 2.6e-7 over 200 seeds: FT_SUM); smooth (softmax, sigmoid,
     * bilinear rank-1 updates), h = 2e-2: the float32 forward's noise / h dominates
     * (observed 1.9e-4; 1e-2 doubles it, 5e-2 halves it: GT_SMOOTH); the device sums over D
     * in other orders, carried over L steps by the state and the backward's weight recovery
     * (observed 1e-6: DT_SUM) */
    {"srwm", gen_srwm, nv_srwm, FT_SUM, 2e-2, GT_SMOOTH, DT_SUM},
    /* attention: double sums of Dk, Dv <= 16 terms and of n + S <= 114 exponentials (FT_SUM);
     * smooth (softmax, bilinear), h = 2e-2 as for softmax (GT_SMOOTH); the device sums in
     * (hi, lo) float pairs in other orders (DT_SUM) */
    {"attn_kv", gen_attn_kv, nv_attn_kv, FT_SUM, 2e-2, GT_SMOOTH, DT_SUM},
    /* copies rows (exact); in place, no backward */
    {"kv_push", gen_kv_push, nv_kv_push, FT_EXACT, 0.0, 0.0, DT_EXACT},
    /* rel_attn: float32 GEMM dot products of 2 x D <= 32 terms, the probabilities in float (an
     * exp within 1 ulp), O a float32 GEMM over T <= 64 keys, against the all-double oracle
     * (FT_SUM, as attn_kv;
     * observed 4e-7 over 200 seeds); smooth (softmax, bilinear), h = 2e-2 as for softmax
     * (GT_SMOOTH; observed 1.8e-4); the device sums in (hi, lo) float pairs in other orders
     * (DT_SUM; observed 7e-7 over 40 seeds). (EXTRAS: its gradients against a double oracle,
     * the same bits with 1 and 3 threads, the public wrappers.) */
    {"rel_attn", gen_rel_attn, nv_rel_attn, FT_SUM, 2e-2, GT_SMOOTH, DT_SUM},
    /* grad_preproc: logf and one division (FT_LIBM); piecewise smooth, every case kept off the
     * threshold and off 0 on the log branch with its own absolute step h = tc->h_scale
     * (gen_grad_preproc; the table's h is 1): GT_SMOOTH; OpenCL's log (3 ulp) and division
     * (DT_LIBM). (EXTRAS: its backward against the formula.) */
    {"grad_preproc", gen_grad_preproc, nv_grad_preproc, FT_LIBM, 1.0, GT_SMOOTH, DT_LIBM},
    /* smn_write: the written values are float32 activations of dot products of <= 20 terms
     * summed in double (FT_SUM; the naive oracle, src/ref/naive/smn.c, rounds the activations
     * too but not the value). Piecewise linear, its kinks kept 20h away from every finite
     * difference (gen_smn_write; h per case, the table's is 1): what is left is the float32 rounding of the m written outputs (GT_SMN). The
     * device's (hi, lo) float sums and deltas against the reference's double ones: DT_SUM
     * (observed 8e-10 over 40 seeds; the forward's bits agree). (EXTRAS: its gradient oracle
     * and the checks beyond the table.) */
    {"smn_write", gen_smn_write, nv_smn_write, FT_SUM, 1.0, GT_SMN, DT_SUM},
    /* wcst_act: integer results (actions, rewards, the schedule), exact on both backends (the
     * same float exp and draw); no gradient. The double oracle's softmax could flip a draw
     * within a few ulps of a boundary: none of the fixed cases is that close. */
    {"wcst_act", gen_wcst_act, nv_wcst_act, FT_EXACT, 0.0, 0.0, DT_EXACT},
    /* smn_avg_z: two float32 products and a sum per element (the double oracle: FT_ROUND would
     * do for I'), then logf and a division of grad_preproc (FT_LIBM); no backward; OpenCL's log
     * (3 ulp) and division (DT_LIBM; the products and sums are the same floats) */
    {"smn_avg_z", gen_smn_avg_z, nv_smn_avg_z, FT_LIBM, 0.0, 0.0, DT_LIBM},
    /* smn_write_eff: smn_write's written values (FT_SUM, DT_SUM: the same sums as smn_write's
     * forward) and one float sum W + v per written element, in place; no backward */
    {"smn_write_eff", gen_smn_write_eff, nv_smn_write_eff, FT_SUM, 0.0, 0.0, DT_SUM},
    /* smn_avg_write: smn_avg_z's I' and zs (FT_LIBM: logf and a division), then smn_write_eff's
     * sums on those zs (FT_SUM): the two limits added; no backward. Differential: OpenCL's log
     * (DT_LIBM) moves zs, and g_phi's sums run in float pairs against the reference's double
     * (DT_SUM): the two added */
    {"smn_avg_write", gen_smn_avg_write, nv_smn_avg_write, FT_LIBM + FT_SUM, 0.0, 0.0, DT_LIBM + DT_SUM},
    /* smn_write_add: smn_write's written values (FT_SUM, DT_SUM) and one float sum W + M per
     * element; its gradients are smn_write's (GT_SMN: its kinks kept away, as gen_smn_write
     * places them) and W's, gout itself */
    {"smn_write_add", gen_smn_write_add, nv_smn_write_add, FT_SUM, 1.0, GT_SMN, DT_SUM},
    /* bias_gelu: bias_add's shapes (N(0, 1) inputs, so x + b spans the steep negative tail too);
     * one rounded sum, then gelu's float erfc/exp (FT_LIBM against erf in double of the rounded
     * sum, as gelu); smooth (GT_SMOOTH, h as gelu's); OpenCL's erfc/exp vs the reference's
     * polynomial (DT_LIBM, as gelu; the bias gradient's column sums are in both the same
     * double-accurate order, bias_add's) */
    {"bias_gelu", gen_bias_gelu, nv_bias_gelu, FT_LIBM, 2e-2, GT_SMOOTH, DT_LIBM},
    /* bias_add2: bias_add's twice (one rounded sum per element and output; linear; x's
     * gradient one rounded sum of the two gouts, the biases' the same column sums) */
    {"bias_add2", gen_bias_add2, nv_bias_add2, FT_ROUND, 1.0, GT_LIN, DT_ROUND},
    /* add_dropout: one float product and one sum per element (FT_ROUND), as dropout's; a fixed
     * mask: linear in a and x (GT_LIN); both backends round the same two operations (DT_ROUND) */
    {"add_dropout", gen_add_dropout, nv_add_dropout, FT_ROUND, 1.0, GT_LIN, DT_ROUND},
    /* repeat_batch4: repeat_batch's four times in one op: copies forward (exact); linear;
     * backward sums the n copies (device order vs double), as repeat_batch */
    {"repeat_batch4", gen_repeat_batch4, nv_repeat_batch4, FT_EXACT, 1.0, GT_LIN, DT_SUM},
    /* bias_dropout_relu: bias_add's rounded sum, then dropout's product (FT_ROUND); a fixed mask
     * and |x + b| >= 2.5: linear in x and b near the inputs (GT_LIN); both backends round the
     * same operations, the bias gradient's column sums in bias_add's double-accurate order
     * (DT_ROUND, as bias_add) */
    {"bias_dropout_relu", gen_bias_dropout_relu, nv_bias_dropout_relu, FT_ROUND, 1.0, GT_LIN, DT_ROUND},
    /* bias_add_dropout: bias_add's sum, dropout's product, the add (FT_ROUND, as add_dropout's);
     * a fixed mask: linear in a, x and b (GT_LIN); both backends round the same operations,
     * the bias gradient's column sums in bias_add's order (DT_ROUND, as bias_add) */
    {"bias_add_dropout", gen_bias_add_dropout, nv_bias_add_dropout, FT_ROUND, 1.0, GT_LIN, DT_ROUND},
};
#define N_SPECS ((int)(sizeof SPECS / sizeof SPECS[0]))

static const opextra EXTRAS[] = {
    /* the formula in double: two float32 roundings (g0 / (P·z)) */
    {"grad_preproc", nvb_grad_preproc, FT_ROUND, NULL},
    /* the dense oracle in double: float32 activations, sums of m terms that cancel (BT_SUM);
     * the written set on both backends, refused and skipped bad indices, the public wrapper */
    {"smn_write", nvb_smn_write, BT_SUM, smn_write_extra},
    /* its index contract (smn_write's, strictly increasing) refused as smn_write's is */
    {"smn_write_add", NULL, 0.0, smn_write_add_extra},
    /* the pairs' gradients in double: float32 GEMMs and probabilities, sums whose terms cancel
     * (BT_SUM; observed 3.8e-6 over 200 seeds, in the window-1 case: two keys per row, so
     * ds = ±p1·p2·(dp1 − dp2) keeps the probabilities' float rounding); the same bits with 1
     * and 3 OpenMP threads; the public wrappers mcl_rel_attn and mcl_rel_attn_window */
    {"rel_attn", nvb_rel_attn, BT_SUM, rel_attn_extra},
};
#define N_EXTRAS ((int)(sizeof EXTRAS / sizeof EXTRAS[0]))

static const opextra *extra_find(const char *name)
{
    for (int s = 0; s < N_EXTRAS; s++)
        if (strcmp(EXTRAS[s].name, name) == 0) return &EXTRAS[s];
    return NULL;
}

static const opspec *spec_find(const char *name)
{
    for (int s = 0; s < N_SPECS; s++)
        if (strcmp(SPECS[s].name, name) == 0) return &SPECS[s];
    return NULL;
}

/* The differential limit of an op (DT_*). */
static double diff_tol(const opspec *sp) { return sp->diff_tol; }

/* ================================================================================== */
/* Running a case on a context (any backend).                                           */

static const char *g_break_op; /* METACL_TEST_BREAK */
static int g_verbose;

static void tensors_free(mcl_tensor **t, int n)
{
    for (int k = 0; k < n; k++) {
        mcl_tensor_free(t[k]);
        t[k] = NULL;
    }
}

static void ctx_msg(mcl_ctx *ctx, mcl_status st, const char *what, char *msg, size_t len)
{
    snprintf(msg, len, "%s: %s: %s", what, mcl_status_str(st), mcl_ctx_error(ctx));
    mcl_ctx_clear_error(ctx);
}

/* The guard registry: buffers (base) holding a guarded view; own_view = the registry also
 * frees the view (outputs), otherwise the caller frees it (tensor_from). */
typedef struct guarded {
    mcl_tensor *base, *view;
    int own_view;
    const char *what;
} guarded;
static guarded *g_guards;
static int g_nguards, g_capguards;

/* Zero-filled view of the given shape inside a guarded buffer (registered). */
static mcl_tensor *guarded_new(mcl_ctx *ctx, int ndim, const int64_t *shape, int own_view,
                               const char *what)
{
    int64_t n = shape_numel(ndim, shape), bs[1] = {n + 2 * GUARD};
    mcl_tensor *base = mcl_tensor_create(ctx, 1, bs);
    if (!base) return NULL;
    mcl_tensor *view = NULL;
    if (mcl_tensor_fill(base, GUARD_VAL) == MCL_OK) view = mcl_tensor_view(base, GUARD, ndim, shape);
    if (!view || mcl_tensor_fill(view, 0.0f) != MCL_OK) {
        mcl_tensor_free(view);
        mcl_tensor_free(base);
        return NULL;
    }
    if (g_nguards == g_capguards) {
        g_capguards = g_capguards ? 2 * g_capguards : 64;
        guarded *p = realloc(g_guards, (size_t)g_capguards * sizeof *p);
        if (!p) {
            fprintf(stderr, "test-ops: out of memory\n");
            exit(1);
        }
        g_guards = p;
    }
    g_guards[g_nguards++] = (guarded){base, view, own_view, what};
    return view;
}

/* Every sentinel still in place? */
static int guards_check(mcl_ctx *ctx, char *msg, size_t len)
{
    for (int g = 0; g < g_nguards; g++) {
        if (g_guards[g].base->ctx != ctx) continue;
        int64_t n = mcl_tensor_numel(g_guards[g].base);
        float *h = xcalloc((size_t)n, sizeof(float));
        int ok = mcl_tensor_read(g_guards[g].base, h, n) == MCL_OK;
        int64_t bad = -1;
        for (int64_t i = 0; ok && i < GUARD; i++) {
            if (h[i] != GUARD_VAL) bad = i - GUARD;
            if (h[n - 1 - i] != GUARD_VAL) bad = n - 1 - i - GUARD;
        }
        free(h);
        if (!ok || bad != -1) {
            if (!ok)
                ctx_msg(ctx, mcl_ctx_status(ctx), "reading a guarded buffer", msg, len);
            else
                snprintf(msg, len, "%s: write outside the tensor at element %" PRId64
                         " (guard region overwritten)", g_guards[g].what, bad);
            return 0;
        }
    }
    return 1;
}

static void guards_release(void)
{
    for (int g = 0; g < g_nguards; g++) {
        if (g_guards[g].own_view) mcl_tensor_free(g_guards[g].view);
        mcl_tensor_free(g_guards[g].base);
    }
    g_nguards = 0;
}

/* New caller-owned tensor holding v (or zeros if v is NULL), guarded. */
static mcl_tensor *tensor_from(mcl_ctx *ctx, int ndim, const int64_t *shape, const float *v,
                               char *msg, size_t len)
{
    mcl_tensor *t = guarded_new(ctx, ndim, shape, 0, "a tensor of the runner");
    if (!t) {
        ctx_msg(ctx, mcl_ctx_status(ctx), "mcl_tensor_create", msg, len);
        return NULL;
    }
    if (v) {
        mcl_status st = mcl_tensor_write(t, v, shape_numel(ndim, shape));
        if (st != MCL_OK) {
            ctx_msg(ctx, st, "mcl_tensor_write", msg, len);
            mcl_tensor_free(t);
            return NULL;
        }
    }
    return t;
}

static int inputs_create(mcl_ctx *ctx, const tcase *tc, float *const *x, mcl_tensor **in,
                         char *msg, size_t len)
{
    for (int k = 0; k < tc->n_in; k++) {
        in[k] = tensor_from(ctx, tc->ndim[k], tc->shape[k], x[k], msg, len);
        if (!in[k]) return 0;
    }
    return 1;
}

/* Read tensor t into h (float values, t's shape). */
static int harr_read(mcl_ctx *ctx, harr *h, const mcl_tensor *t, char *msg, size_t len)
{
    harr_set_shape(h, t->ndim, t->shape);
    h->f = xcalloc((size_t)h->n, sizeof(float));
    mcl_status st = mcl_tensor_read(t, h->f, h->n);
    if (st != MCL_OK) {
        ctx_msg(ctx, st, "mcl_tensor_read", msg, len);
        return 0;
    }
    return 1;
}

/* Run the op (tc->calls times) in a no-grad scope; a->out[] are temporaries of ctx, or, with
 * guard_out, guarded views (the op runs once to learn the output shapes, then again into
 * the guarded outputs; only ops with outputs, which do not modify their inputs). */
static int op_call(mcl_ctx *ctx, mcl_op op, const tcase *tc, mcl_tensor **in, mcl_op_args *a,
                   int guard_out, char *msg, size_t len)
{
    const mcl_op_info *info = &mcl_op_table[op];
    int passes = (guard_out && info->n_out > 0) ? 2 : 1;
    for (int c = 0; c < tc->calls * passes; c++) {
        mcl_tensor *given[MCL_MAX_OUT] = {0};
        if (passes == 2 && c % 2 == 1)
            for (int k = 0; k < info->n_out; k++) {
                given[k] = guarded_new(ctx, a->out[k]->ndim, a->out[k]->shape, 1, "an output");
                if (!given[k]) {
                    ctx_msg(ctx, mcl_ctx_status(ctx), "guarded output", msg, len);
                    return 0;
                }
            }
        memset(a, 0, sizeof *a);
        a->op = op;
        a->p = tc->p;
        if (tc->step_i >= 0) a->p.i[tc->step_i] = c / passes + 1;
        for (int k = 0; k < tc->n_in; k++) a->in[k] = in[k];
        if (given[0]) {
            a->out_given = 1;
            for (int k = 0; k < info->n_out; k++) a->out[k] = given[k];
        }
        mcl_no_grad_begin(ctx);
        mcl_status st = mcl_op_run(ctx, a);
        mcl_no_grad_end(ctx);
        if (st != MCL_OK) {
            ctx_msg(ctx, st, "mcl_op_run", msg, len);
            return 0;
        }
        for (int k = 0; k < info->n_out; k++)
            if (!a->out[k]) {
                snprintf(msg, len, "mcl_op_run: output %d is NULL", k);
                return 0;
            }
    }
    return 1;
}

/* Tensors t[0..n) equal the host arrays h[0..n) element by element (== for numbers, so
 * -0 == +0, and NaN where h has NaN): the fresh-buffer checks (see the top of the file). */
static int same_as(mcl_ctx *ctx, mcl_tensor *const *t, const harr *h, int n, const char *what,
                   char *msg, size_t len)
{
    for (int k = 0; k < n; k++) {
        if (!t[k]) continue;
        harr f = {0};
        if (!harr_read(ctx, &f, t[k], msg, len)) return 0;
        int64_t bad = -1;
        for (int64_t i = 0; i < f.n && bad < 0; i++)
            if (!(f.f[i] == h[k].f[i] || (isnan(f.f[i]) && isnan(h[k].f[i])))) bad = i;
        if (bad >= 0)
            snprintf(msg, len, "%s %d with fresh buffers differs at element %" PRId64 ": %.9g, "
                     "guarded %.9g", what, k, bad, (double)f.f[bad], (double)h[k].f[bad]);
        harr_free(&f);
        if (bad >= 0) return 0;
    }
    return 1;
}

/* Forward of one case on ctx. got[k] = output k (in-place ops: input k after the calls).
 * Checks that a forward with outputs leaves its inputs untouched. */
static int run_fwd(mcl_ctx *ctx, mcl_op op, const tcase *tc, int apply_break, harr *got,
                   char *msg, size_t len)
{
    const mcl_op_info *info = &mcl_op_table[op];
    mcl_tensor *in[MCL_MAX_IN] = {0};
    mcl_op_args a;
    int ok = 0;
    if (!inputs_create(ctx, tc, tc->x, in, msg, len) || !op_call(ctx, op, tc, in, &a, 1, msg, len))
        goto done;
    if (info->n_out > 0) {
        for (int k = 0; k < info->n_out; k++)
            if (!harr_read(ctx, &got[k], a.out[k], msg, len)) goto done;
        for (int k = 0; k < tc->n_in; k++) {
            harr h = {0};
            int same = harr_read(ctx, &h, in[k], msg, len) &&
                       memcmp(h.f, tc->x[k], (size_t)h.n * sizeof(float)) == 0;
            harr_free(&h);
            if (!same) {
                snprintf(msg, len, "the forward modified input %d", k);
                goto done;
            }
        }
        /* again into outputs the front end allocates (fresh buffers) */
        mcl_op_args fa;
        if (!op_call(ctx, op, tc, in, &fa, 0, msg, len) ||
            !same_as(ctx, fa.out, got, info->n_out, "output", msg, len))
            goto done;
    } else {
        for (int k = 0; k < tc->n_in; k++)
            if (!harr_read(ctx, &got[k], in[k], msg, len)) goto done;
    }
    /* METACL_TEST_BREAK: perturb this op's output after the backend call */
    if (apply_break && g_break_op && strcmp(g_break_op, info->name) == 0 && got[0].n > 0)
        got[0].f[got[0].n / 2] += 1e-2f;
    ok = guards_check(ctx, msg, len);
done:
    tensors_free(in, tc->n_in);
    guards_release();
    mcl_ctx_reset(ctx);
    return ok;
}

/* Compare got against the naive want (shapes, then values); err = the normalized error. */
static int check_fwd(int n, const harr *got, const harr *want, double tol, double *err,
                     char *msg, size_t len)
{
    *err = 0.0;
    for (int k = 0; k < n; k++) {
        int same = got[k].ndim == want[k].ndim;
        for (int d = 0; same && d < want[k].ndim; d++) same = got[k].shape[d] == want[k].shape[d];
        if (!same) {
            char g[64], w[64];
            shape_str(g, sizeof g, got[k].ndim, got[k].shape);
            shape_str(w, sizeof w, want[k].ndim, want[k].shape);
            snprintf(msg, len, "result %d has shape %s, want %s", k, g, w);
            *err = INFINITY;
            return 0;
        }
        double e = cmp_err(got[k].f, want[k].d, want[k].n, FWD_FLOOR);
        if (!within(e, *err)) *err = e;
    }
    if (!within(*err, tol)) {
        snprintf(msg, len, "error %.3g > tol %.3g", *err, tol);
        return 0;
    }
    return 1;
}

/* Backward of one case on ctx with gout drawn from grng: gout[k] (k < n_diff_out) and the
 * analytic gradients gin[k] (inputs with no_grad: n = 0) come back as host arrays. Checks
 * that the values are finite and that backward accumulates. */
static int run_bwd(mcl_ctx *ctx, mcl_op op, const tcase *tc, trng grng, harr *gout, harr *gin,
                   char *msg, size_t len)
{
    const mcl_op_info *info = &mcl_op_table[op];
    mcl_tensor *in[MCL_MAX_IN] = {0}, *tgo[MCL_MAX_OUT] = {0}, *tgi[MCL_MAX_IN] = {0};
    mcl_op_args a;
    int ok = 0;
    if (!inputs_create(ctx, tc, tc->x, in, msg, len) || !op_call(ctx, op, tc, in, &a, 1, msg, len))
        goto done;
    for (int k = 0; k < info->n_diff_out; k++) {
        harr_set_shape(&gout[k], a.out[k]->ndim, a.out[k]->shape);
        gout[k].f = xcalloc((size_t)gout[k].n, sizeof(float));
        for (int64_t i = 0; i < gout[k].n; i++) { /* |g| in [0.5, 1.5], random sign */
            double g = 0.5 + trng_unit(&grng);
            gout[k].f[i] = (float)(trng_unit(&grng) < 0.5 ? -g : g);
        }
        tgo[k] = tensor_from(ctx, gout[k].ndim, gout[k].shape, gout[k].f, msg, len);
        if (!tgo[k]) goto done;
        a.gout[k] = tgo[k];
    }
    for (int k = 0; k < tc->n_in; k++) {
        if (tc->no_grad[k]) continue;
        tgi[k] = tensor_from(ctx, tc->ndim[k], tc->shape[k], NULL, msg, len);
        if (!tgi[k]) goto done;
        a.gin[k] = tgi[k];
    }
    mcl_status st = mcl_op_backward(ctx, &a);
    if (st != MCL_OK) {
        ctx_msg(ctx, st, "mcl_op_backward", msg, len);
        goto done;
    }
    for (int k = 0; k < tc->n_in; k++) {
        if (!tgi[k]) continue;
        if (!harr_read(ctx, &gin[k], tgi[k], msg, len)) goto done;
        if (!all_finite(gin[k].f, gin[k].n)) {
            snprintf(msg, len, "gradient of input %d is not finite", k);
            goto done;
        }
    }
    /* again into newly created gradient tensors (fresh buffers) */
    {
        mcl_op_args fa = a;
        mcl_tensor *fg[MCL_MAX_IN] = {0};
        int fok = 1;
        for (int k = 0; k < tc->n_in && fok; k++) {
            if (!tgi[k]) continue;
            fg[k] = mcl_tensor_create(ctx, tc->ndim[k], tc->shape[k]);
            if (!fg[k]) {
                ctx_msg(ctx, mcl_ctx_status(ctx), "mcl_tensor_create", msg, len);
                fok = 0;
            }
            fa.gin[k] = fg[k];
        }
        if (fok) {
            st = mcl_op_backward(ctx, &fa);
            if (st != MCL_OK) ctx_msg(ctx, st, "mcl_op_backward (fresh gradients)", msg, len);
            fok = st == MCL_OK && same_as(ctx, fg, gin, tc->n_in, "gradient of input", msg, len);
        }
        tensors_free(fg, MCL_MAX_IN);
        if (!fok) goto done;
    }
    /* accumulation: gin pre-filled with base must come out as base + gradient */
    for (int k = 0; k < tc->n_in; k++) {
        if (!tgi[k]) continue;
        float *base = xcalloc((size_t)gin[k].n, sizeof(float));
        for (int64_t i = 0; i < gin[k].n; i++) base[i] = 0.25f * (float)(i % 7 - 3);
        st = mcl_tensor_write(tgi[k], base, gin[k].n);
        free(base);
        if (st != MCL_OK) {
            ctx_msg(ctx, st, "mcl_tensor_write", msg, len);
            goto done;
        }
    }
    st = mcl_op_backward(ctx, &a);
    if (st != MCL_OK) {
        ctx_msg(ctx, st, "mcl_op_backward (second call)", msg, len);
        goto done;
    }
    for (int k = 0; k < tc->n_in; k++) {
        if (!tgi[k]) continue;
        harr h = {0};
        if (!harr_read(ctx, &h, tgi[k], msg, len)) {
            harr_free(&h);
            goto done;
        }
        double *want = xcalloc((size_t)h.n, sizeof(double));
        for (int64_t i = 0; i < h.n; i++) want[i] = (double)gin[k].f[i] + 0.25 * (double)(i % 7 - 3);
        double e = cmp_err(h.f, want, h.n, 1.0);
        free(want);
        harr_free(&h);
        if (!within(e, ACC_TOL)) {
            snprintf(msg, len, "backward does not accumulate into gin[%d]: error %.3g > tol %.3g", k,
                     e, ACC_TOL);
            goto done;
        }
    }
    ok = guards_check(ctx, msg, len);
done:
    tensors_free(tgo, MCL_MAX_OUT);
    tensors_free(tgi, MCL_MAX_IN);
    tensors_free(in, tc->n_in);
    guards_release();
    mcl_ctx_reset(ctx);
    return ok;
}

/* L = sum_k sum_i gout_k[i] * out_k[i] for the current contents of in[]. */
static int eval_loss(mcl_ctx *ctx, mcl_op op, const tcase *tc, mcl_tensor **in, const harr *gout,
                     double *L, char *msg, size_t len)
{
    mcl_op_args a;
    int ok = op_call(ctx, op, tc, in, &a, 0, msg, len);
    *L = 0.0;
    for (int k = 0; ok && k < mcl_op_table[op].n_diff_out; k++) {
        harr h = {0};
        ok = harr_read(ctx, &h, a.out[k], msg, len);
        for (int64_t i = 0; ok && i < h.n; i++) *L += (double)gout[k].f[i] * (double)h.f[i];
        harr_free(&h);
    }
    mcl_ctx_reset(ctx);
    return ok;
}

/* Elements to perturb: all of them when there are at most ns; otherwise ns distinct ones,
 * half the elements with the largest |analytic gradient| (where a wrong gradient shows) and
 * half drawn at random from the rest (where it should be small). Returns idx[0..ns). */
static const float *g_sort_key; /* qsort has no context argument */
static int by_abs_desc(const void *a, const void *b)
{
    float x = fabsf(g_sort_key[*(const int64_t *)a]), y = fabsf(g_sort_key[*(const int64_t *)b]);
    if (x != y) return x < y ? 1 : -1;
    int64_t i = *(const int64_t *)a, j = *(const int64_t *)b; /* stable: by index */
    return (i > j) - (i < j);
}

static int64_t *sample_indices(const harr *ana, int64_t ns, trng *r)
{
    int64_t n = ana->n, *idx = xcalloc((size_t)n, sizeof(int64_t));
    for (int64_t i = 0; i < n; i++) idx[i] = i;
    if (ns >= n) return idx;
    g_sort_key = ana->f;
    qsort(idx, (size_t)n, sizeof *idx, by_abs_desc);
    for (int64_t i = ns / 2; i < ns; i++) { /* partial Fisher-Yates over the rest */
        int64_t j = trng_int(r, i, n - 1), t = idx[i];
        idx[i] = idx[j];
        idx[j] = t;
    }
    return idx;
}

/* dL/dx for element i of input k by central differences with step h: (L(x+h) - L(x-h)) divided
 * by the difference of the float32 arguments actually used. Leaves xs[k][i] as it was. */
static int central_diff(mcl_ctx *ctx, mcl_op op, const tcase *tc, mcl_tensor **in, float **xs,
                        int k, int64_t i, double h, const harr *gout, double *D, char *msg,
                        size_t len)
{
    int64_t n = tc_n(tc, k);
    float x0 = xs[k][i], xv[2] = {(float)(x0 + h), (float)(x0 - h)};
    double L[2];
    for (int s = 0; s < 2; s++) {
        xs[k][i] = xv[s];
        mcl_status st = mcl_tensor_write(in[k], xs[k], n);
        xs[k][i] = x0;
        if (st != MCL_OK) {
            ctx_msg(ctx, st, "mcl_tensor_write", msg, len);
            return 0;
        }
        if (!eval_loss(ctx, op, tc, in, gout, &L[s], msg, len)) return 0;
    }
    *D = (L[0] - L[1]) / ((double)xv[0] - (double)xv[1]);
    return 1;
}

/* Central differences against the analytic gin; *err = max over inputs of the normalized
 * error, at most GC_SAMPLES fixed random elements per input. */
static int gradcheck(mcl_ctx *ctx, mcl_op op, const opspec *sp, const tcase *tc, const harr *gout,
                     const harr *gin, double *err, char *msg, size_t len)
{
    mcl_tensor *in[MCL_MAX_IN] = {0};
    float *xs[MCL_MAX_IN] = {0};
    int64_t *idx = NULL;
    int ok = 0;
    trng srng = {tc->rng.seed, tc->rng.stream ^ 0x5a5a5a5a00000000ull, 0};
    *err = 0.0;
    for (int k = 0; k < tc->n_in; k++) {
        xs[k] = xcalloc((size_t)tc_n(tc, k), sizeof(float));
        memcpy(xs[k], tc->x[k], (size_t)tc_n(tc, k) * sizeof(float));
    }
    if (!inputs_create(ctx, tc, xs, in, msg, len)) goto done;
    for (int k = 0; k < tc->n_in; k++) {
        if (tc->no_grad[k]) continue;
        int64_t n = tc_n(tc, k), ns = n < tc->gc_samples ? n : tc->gc_samples;
        free(idx);
        idx = sample_indices(&gin[k], ns, &srng);
        double maxa = 0.0, maxd = 0.0;
        for (int64_t s = 0; s < ns; s++) {
            int64_t i = idx[s];
            double d1, d2;
            const double h = sp->h * tc->h_scale;
            if (!central_diff(ctx, op, tc, in, xs, k, i, h, gout, &d1, msg, len) ||
                !central_diff(ctx, op, tc, in, xs, k, i, 2.0 * h, gout, &d2, msg, len))
                goto done;
            double num = (4.0 * d1 - d2) / 3.0; /* Richardson: the h^2 terms cancel */
            double ana = gin[k].f[i], d = fabs(num - ana);
            if (fabs(ana) > maxa) maxa = fabs(ana);
            if (!(d <= maxd)) maxd = d;
            if (g_verbose > 1)
                printf("      in%d[%" PRId64 "]: analytic %.6g numeric %.6g\n", k, i, ana, num);
        }
        if (mcl_tensor_write(in[k], xs[k], n) != MCL_OK) {
            snprintf(msg, len, "mcl_tensor_write failed");
            goto done;
        }
        double e = maxd / (maxa + GRAD_FLOOR * tc->gscale);
        if (!within(e, *err)) *err = e;
    }
    if (!within(*err, sp->grad_tol)) {
        snprintf(msg, len, "error %.3g > tol %.3g", *err, sp->grad_tol);
        goto done;
    }
    ok = 1;
done:
    free(idx);
    tensors_free(in, tc->n_in);
    guards_release();
    for (int k = 0; k < tc->n_in; k++) free(xs[k]);
    mcl_ctx_reset(ctx);
    return ok;
}

/* ================================================================================== */
/* The runner.                                                                          */

enum { COL_REF_FWD, COL_REF_BWD, COL_GRADCHECK, COL_OCL_FWD, COL_OCL_BWD, COL_DIFF, NCOL };
static const char *const COL_NAME[NCOL] = {"ref fwd",    "ref bwd",    "gradcheck",
                                           "opencl fwd", "opencl bwd", "diff"};
enum { RES_NONE, RES_NA, RES_PASS, RES_FAIL }; /* "-", "n/a", "pass", "FAIL" */
static const char *const RES_NAME[] = {"-", "n/a", "pass", "FAIL"};

typedef struct runner {
    mcl_ctx *ref;  /* reference context                          */
    mcl_ctx *ocl;  /* OpenCL context (NULL: columns print "-")   */
    uint64_t seed;
    int64_t small; /* --small N: only cases with at most N input elements, no big case (0: all) */
    int res[MCL_OP_COUNT][NCOL];
    int ocl_missing[MCL_OP_COUNT]; /* the OpenCL backend has no forward/backward for it */
    double diff_max[MCL_OP_COUNT]; /* largest differential error seen */
} runner;

static void set_res(int *r, int ok)
{
    if (!ok) *r = RES_FAIL;
    else if (*r != RES_FAIL) *r = RES_PASS;
}

static void fail_line(const char *op, const tcase *tc, int col, const char *msg)
{
    printf("FAIL %s %s [%s]: %s\n", op, tc ? tc->desc : "-", COL_NAME[col], msg);
}

/* ================================================================================== */
/* smn_write: the checks its table row cannot express (opspec.extra).                   */

#define SMN_SENTINEL 1e30f

/* Output 0 of op on ctx for case tc with the host inputs xs, into guarded outputs (the guards
 * are checked); got: the values. */
static int smn_run(mcl_ctx *ctx, mcl_op op, const tcase *tc, float *const *xs, harr *got,
                   char *msg, size_t len)
{
    mcl_tensor *in[MCL_MAX_IN] = {0};
    mcl_op_args a;
    int ok = inputs_create(ctx, tc, xs, in, msg, len) && op_call(ctx, op, tc, in, &a, 1, msg, len) &&
             harr_read(ctx, got, a.out[0], msg, len) && guards_check(ctx, msg, len);
    tensors_free(in, tc->n_in);
    guards_release();
    mcl_ctx_reset(ctx);
    return ok;
}

/* Copies of the case's inputs (free with xs_free). */
static void xs_copy(const tcase *tc, float **xs)
{
    for (int k = 0; k < tc->n_in; k++) {
        xs[k] = xcalloc((size_t)tc_n(tc, k), sizeof(float));
        memcpy(xs[k], tc->x[k], (size_t)tc_n(tc, k) * sizeof(float));
    }
}
static void xs_free(const tcase *tc, float **xs)
{
    for (int k = 0; k < tc->n_in; k++) free(xs[k]);
}

/* The written set is the index set, the same on both backends: M0 filled with SMN_SENTINEL,
 * the elements that changed must be exactly those of idx (reference: "ref fwd"), and the
 * OpenCL backend must change exactly the same elements (position by position: "diff"). */
static void smn_written_set(runner *r, mcl_op op, const tcase *tc)
{
    const char *name = mcl_op_table[op].name;
    int *res = r->res[op];
    char msg[512];
    float *xs[MCL_MAX_IN] = {0};
    harr gr = {0}, go = {0};
    xs_copy(tc, xs);
    const int64_t n = tc_n(tc, 0);
    for (int64_t i = 0; i < n; i++) xs[0][i] = SMN_SENTINEL;
    unsigned char *want = xcalloc((size_t)n, 1);
    for (int64_t e = 0; e < tc->shape[1][0]; e++) want[(int64_t)tc->x[1][e]] = 1;
    int ok = smn_run(r->ref, op, tc, xs, &gr, msg, sizeof msg);
    for (int64_t i = 0; ok && i < n; i++)
        if ((gr.f[i] != SMN_SENTINEL) != want[i]) {
            ok = 0;
            snprintf(msg, sizeof msg, "written set: element %" PRId64 " %s on the reference", i,
                     want[i] ? "is in idx but was not written" : "was written but is not in idx");
        }
    if (!ok) fail_line(name, tc, COL_REF_FWD, msg);
    set_res(&res[COL_REF_FWD], ok);
    if (r->ocl && !r->ocl_missing[op]) {
        int ook = ok && smn_run(r->ocl, op, tc, xs, &go, msg, sizeof msg);
        if (!ok) snprintf(msg, sizeof msg, "written set: no reference result to compare with");
        for (int64_t i = 0; ook && i < n; i++)
            if ((go.f[i] != SMN_SENTINEL) != (gr.f[i] != SMN_SENTINEL)) {
                ook = 0;
                snprintf(msg, sizeof msg, "written set: element %" PRId64 " changed on %s only", i,
                         go.f[i] != SMN_SENTINEL ? "OpenCL" : "the reference");
            }
        if (!ook) fail_line(name, tc, COL_DIFF, msg);
        set_res(&res[COL_DIFF], ook);
    }
    if (g_verbose)
        printf("  %-13s %-40s written set (sentinel %g): %s\n", name, tc->desc,
               (double)SMN_SENTINEL, ok ? "as idx" : "WRONG");
    harr_free(&gr);
    harr_free(&go);
    free(want);
    xs_free(tc, xs);
}

/* A bad index (a repeat, out of range either way, not an integer, NaN) is refused by the
 * reference backend with MCL_ERR_INVALID and a message naming smn_write and idx: in the forward,
 * and in the backward when idx has changed since ("ref fwd"). */
static void smn_refusals(runner *r, mcl_op op, const tcase *tc)
{
    const char *name = mcl_op_table[op].name;
    mcl_ctx *ctx = r->ref;
    const int64_t n = tc_n(tc, 0);
    const float first = tc->x[1][0];
    static const char *const what[5] = {"a repeated index", "index n", "index -1",
                                        "a fractional index", "a NaN index"};
    const float bad[5] = {tc->x[1][1], (float)n, -1.0f, first + 0.5f, NAN};
    int ok = 1;
    char msg[512];
    for (int v = 0; v < 5 && ok; v++)
        for (int pass = 0; pass < 2 && ok; pass++) { /* 0: forward, 1: backward */
            float *xs[MCL_MAX_IN] = {0};
            mcl_tensor *in[MCL_MAX_IN] = {0}, *go = NULL, *gi = NULL;
            xs_copy(tc, xs);
            if (pass == 0) xs[1][0] = bad[v];
            mcl_op_args a;
            mcl_status st = MCL_ERR_INVALID;
            ok = inputs_create(ctx, tc, xs, in, msg, sizeof msg);
            if (ok) {
                memset(&a, 0, sizeof a);
                a.op = op;
                a.p = tc->p;
                for (int k = 0; k < tc->n_in; k++) a.in[k] = in[k];
                mcl_no_grad_begin(ctx);
                st = mcl_op_run(ctx, &a);
                mcl_no_grad_end(ctx);
            }
            if (ok && pass == 1) { /* a good forward, then idx changed under the backward */
                xs[1][0] = bad[v];
                go = tensor_from(ctx, tc->ndim[0], tc->shape[0], NULL, msg, sizeof msg);
                gi = tensor_from(ctx, tc->ndim[0], tc->shape[0], NULL, msg, sizeof msg);
                ok = st == MCL_OK && go && gi && mcl_tensor_write(in[1], xs[1], tc_n(tc, 1)) == MCL_OK;
                if (!ok) snprintf(msg, sizeof msg, "the good forward before the backward failed: %s",
                                  mcl_ctx_error(ctx));
                if (ok) {
                    a.gout[0] = go;
                    a.gin[0] = gi;
                    st = mcl_op_backward(ctx, &a);
                }
            }
            const char *err = mcl_ctx_error(ctx);
            if (ok && !(st == MCL_ERR_INVALID && mcl_ctx_status(ctx) == MCL_ERR_INVALID &&
                        strstr(err, "smn_write") && strstr(err, "idx"))) {
                ok = 0;
                snprintf(msg, sizeof msg, "%s in the %s: status %s, message '%s' (want %s naming "
                         "smn_write and idx)", what[v], pass ? "backward" : "forward",
                         mcl_status_str(st), err, mcl_status_str(MCL_ERR_INVALID));
            } else if (ok && g_verbose) {
                printf("  %-13s %-40s %s refused in the %s: %s\n", name, tc->desc, what[v],
                       pass ? "backward" : "forward", err);
            }
            mcl_ctx_clear_error(ctx);
            mcl_tensor_free(go);
            mcl_tensor_free(gi);
            tensors_free(in, tc->n_in);
            guards_release();
            mcl_ctx_reset(ctx);
            xs_free(tc, xs);
        }
    if (!ok) fail_line(name, tc, COL_REF_FWD, msg);
    set_res(&r->res[op][COL_REF_FWD], ok);
}

/* The OpenCL kernels skip an entry whose index is out of range or not an integer: nothing is
 * written outside the tensors (guard regions), the other entries are written as usual (the
 * same bits as with a good idx), every other element keeps M0's value; the backward runs, stays
 * inside its tensors and gives finite gradients ("opencl fwd"). */
static void smn_ocl_bad_index(runner *r, mcl_op op, const tcase *tc)
{
    const char *name = mcl_op_table[op].name;
    mcl_ctx *ctx = r->ocl;
    const int64_t n = tc_n(tc, 0), m = tc->shape[1][0];
    float *xs[MCL_MAX_IN] = {0};
    harr good = {0}, got = {0};
    char msg[512];
    xs_copy(tc, xs);
    xs[1][0] = (float)(n + 3);
    xs[1][1] = -1.0f;
    xs[1][2] += 0.5f;
    int ok = smn_run(ctx, op, tc, tc->x, &good, msg, sizeof msg) &&
             smn_run(ctx, op, tc, xs, &got, msg, sizeof msg);
    for (int64_t i = 0; ok && i < n; i++) {
        int64_t e = smn_entry_of(tc, i);
        float want = e >= 3 ? good.f[i] : tc->x[0][i]; /* entries 0..2 are skipped */
        if (!(got.f[i] == want)) {
            ok = 0;
            snprintf(msg, sizeof msg, "bad indices: element %" PRId64 " is %.9g, want %.9g (%s)", i,
                     (double)got.f[i], (double)want, e >= 3 ? "written" : "M0's value");
        }
    }
    if (ok) { /* the backward, into guarded gradients */
        mcl_tensor *in[MCL_MAX_IN] = {0}, *go = NULL, *gi[MCL_MAX_IN] = {0};
        mcl_op_args a;
        ok = inputs_create(ctx, tc, xs, in, msg, sizeof msg) &&
             op_call(ctx, op, tc, in, &a, 1, msg, sizeof msg);
        float *ones = xcalloc((size_t)n, sizeof(float));
        for (int64_t i = 0; i < n; i++) ones[i] = 1.0f;
        if (ok) ok = (go = tensor_from(ctx, tc->ndim[0], tc->shape[0], ones, msg, sizeof msg)) != NULL;
        for (int k = 0; ok && k < tc->n_in; k++) {
            if (k == 1) continue;
            ok = (gi[k] = tensor_from(ctx, tc->ndim[k], tc->shape[k], NULL, msg, sizeof msg)) != NULL;
        }
        if (ok) {
            a.gout[0] = go;
            for (int k = 0; k < tc->n_in; k++) a.gin[k] = gi[k];
            mcl_status st = mcl_op_backward(ctx, &a);
            if (st != MCL_OK) {
                ok = 0;
                ctx_msg(ctx, st, "bad indices: mcl_op_backward", msg, sizeof msg);
            }
        }
        for (int k = 0; ok && k < tc->n_in; k++) {
            if (!gi[k]) continue;
            harr h = {0};
            ok = harr_read(ctx, &h, gi[k], msg, sizeof msg);
            if (ok && !all_finite(h.f, h.n)) {
                ok = 0;
                snprintf(msg, sizeof msg, "bad indices: gradient of input %d is not finite", k);
            }
            harr_free(&h);
        }
        if (ok) ok = guards_check(ctx, msg, sizeof msg);
        free(ones);
        mcl_tensor_free(go);
        tensors_free(gi, MCL_MAX_IN);
        tensors_free(in, tc->n_in);
        guards_release();
        mcl_ctx_reset(ctx);
    }
    (void)m;
    if (!ok) fail_line(name, tc, COL_OCL_FWD, msg);
    else if (g_verbose)
        printf("  %-13s %-40s OpenCL skips indices n+3, -1, x.5: nothing outside, the rest written\n",
               name, tc->desc);
    set_res(&r->res[op][COL_OCL_FWD], ok);
    harr_free(&good);
    harr_free(&got);
    xs_free(tc, xs);
}

/* The public front end mcl_smn_write: the op's result bit for bit, and with idx = zs = NULL
 * ("no write") a copy of M0 (column "ref fwd" or "opencl fwd"). */
static void smn_public_api(runner *r, mcl_op op, const tcase *tc, mcl_ctx *ctx, int col)
{
    const char *name = mcl_op_table[op].name;
    mcl_tensor *in[MCL_MAX_IN] = {0};
    harr want = {0}, h1 = {0}, h2 = {0};
    char msg[512];
    int ok = smn_run(ctx, op, tc, tc->x, &want, msg, sizeof msg) &&
             inputs_create(ctx, tc, tc->x, in, msg, sizeof msg);
    if (ok) {
        mcl_tensor *const phi[6] = {in[3], in[4], in[5], in[6], in[7], in[8]};
        mcl_tensor *w = mcl_smn_write(ctx, in[0], in[1], in[2], phi, tc->p.f[0]);
        mcl_tensor *c = mcl_smn_write(ctx, in[0], NULL, NULL, phi, tc->p.f[0]);
        ok = w && c && harr_read(ctx, &h1, w, msg, sizeof msg) && harr_read(ctx, &h2, c, msg, sizeof msg);
        if (!w || !c) ctx_msg(ctx, mcl_ctx_status(ctx), "mcl_smn_write", msg, sizeof msg);
        for (int64_t i = 0; ok && i < want.n; i++)
            if (!(h1.f[i] == want.f[i] && h2.f[i] == tc->x[0][i])) {
                ok = 0;
                snprintf(msg, sizeof msg, "mcl_smn_write: element %" PRId64 " is %.9g / %.9g (no "
                         "write), want %.9g / %.9g", i, (double)h1.f[i], (double)h2.f[i],
                         (double)want.f[i], (double)tc->x[0][i]);
            }
    }
    tensors_free(in, tc->n_in);
    guards_release();
    mcl_ctx_reset(ctx);
    if (!ok) fail_line(name, tc, col, msg);
    set_res(&r->res[op][col], ok);
    harr_free(&want);
    harr_free(&h1);
    harr_free(&h2);
}

static void smn_write_extra(runner *r, mcl_op op)
{
    const char *name = mcl_op_table[op].name;
    for (int k = 0; k < MAX_CASES; k++) {
        tcase tc;
        tc_init(&tc, r->seed, fnv1a(name) + (uint64_t)k);
        if (!gen_smn_write(k, &tc)) {
            tc_free(&tc);
            break;
        }
        tc_describe(&tc);
        smn_written_set(r, op, &tc);
        if (k == 2) { /* [13,9], 40 entries */
            smn_refusals(r, op, &tc);
            smn_public_api(r, op, &tc, r->ref, COL_REF_FWD);
            if (r->ocl && !r->ocl_missing[op]) {
                smn_ocl_bad_index(r, op, &tc);
                smn_public_api(r, op, &tc, r->ocl, COL_OCL_FWD);
            }
        }
        tc_free(&tc);
    }
}

/* smn_write_add refuses a bad index as smn_write does (smn_refusals: a repeat, which also breaks
 * the increasing order the op requires, out of range either way, not an integer, NaN; in the
 * forward, and in the backward after idx changed), on one case of its own generator. */
static void smn_write_add_extra(runner *r, mcl_op op)
{
    tcase tc;
    tc_init(&tc, r->seed, fnv1a(mcl_op_table[op].name) + 2u);
    if (gen_smn_write_add(2, &tc)) {
        tc_describe(&tc);
        smn_refusals(r, op, &tc);
    }
    tc_free(&tc);
}

/* ================================================================================== */
/* rel_attn: the checks its table row cannot express (opextra.extra).                   */

/* The reference forward and backward give the same bits with 1 and with 3 OpenMP threads
 * (columns "ref fwd" and "ref bwd"); run on the cases above REL_PAR_MIN, where the (b, h)
 * loop is parallel. */
static void rel_attn_threads(runner *r, mcl_op op, const tcase *tc)
{
    const char *name = mcl_op_table[op].name;
    const int saved = omp_get_max_threads();
    harr got[2][MAX_IO] = {{{0}}}, gout[2][MCL_MAX_OUT] = {{{0}}}, gin[2][MCL_MAX_IN] = {{{0}}};
    char msg[512];
    const trng grng = {r->seed, tc->rng.stream ^ 0x5a5a5a5a00000000ull, 0};
    int fok = 1, bok = 1;
    for (int t = 0; t < 2 && fok && bok; t++) {
        omp_set_num_threads(t == 0 ? 1 : 3);
        fok = run_fwd(r->ref, op, tc, 0, got[t], msg, sizeof msg);
        bok = fok && run_bwd(r->ref, op, tc, grng, gout[t], gin[t], msg, sizeof msg);
    }
    omp_set_num_threads(saved);
    for (int k = 0; fok && bok && k < 2; k++)
        if (got[0][k].n != got[1][k].n ||
            memcmp(got[0][k].f, got[1][k].f, (size_t)got[0][k].n * sizeof(float)) != 0) {
            fok = 0;
            snprintf(msg, sizeof msg, "output %d differs between 1 and 3 threads", k);
        }
    for (int k = 0; fok && bok && k < tc->n_in; k++)
        if (gin[0][k].f && (gin[0][k].n != gin[1][k].n ||
                            memcmp(gin[0][k].f, gin[1][k].f, (size_t)gin[0][k].n * sizeof(float)) != 0)) {
            bok = 0;
            snprintf(msg, sizeof msg, "the gradient of input %d differs between 1 and 3 threads", k);
        }
    if (!fok) fail_line(name, tc, COL_REF_FWD, msg);
    else if (!bok) fail_line(name, tc, COL_REF_BWD, msg);
    set_res(&r->res[op][COL_REF_FWD], fok);
    set_res(&r->res[op][COL_REF_BWD], bok);
    if (g_verbose && fok && bok)
        printf("  %-13s %-40s 1 and 3 threads: the same bits (forward and backward)\n", name, tc->desc);
    for (int t = 0; t < 2; t++) {
        for (int k = 0; k < MAX_IO; k++) harr_free(&got[t][k]);
        for (int k = 0; k < MCL_MAX_OUT; k++) harr_free(&gout[t][k]);
        for (int k = 0; k < MCL_MAX_IN; k++) harr_free(&gin[t][k]);
    }
}

/* The public front end: mcl_rel_attn (window 0) or mcl_rel_attn_window gives the op's output
 * bit for bit (column "ref fwd" or "opencl fwd"). */
static void rel_attn_public_api(runner *r, mcl_op op, const tcase *tc, mcl_ctx *ctx, int col)
{
    const char *name = mcl_op_table[op].name;
    mcl_tensor *in[MCL_MAX_IN] = {0};
    harr want = {0}, h = {0};
    char msg[512];
    int ok = smn_run(ctx, op, tc, tc->x, &want, msg, sizeof msg) &&
             inputs_create(ctx, tc, tc->x, in, msg, sizeof msg);
    if (ok) {
        mcl_tensor *o = NULL;
        const char *fn = tc->p.i[0] == 0 ? "mcl_rel_attn" : "mcl_rel_attn_window";
        mcl_status st = tc->p.i[0] == 0
                            ? mcl_rel_attn(ctx, in[0], in[1], in[2], in[3], in[4], tc->p.f[0], &o)
                            : mcl_rel_attn_window(ctx, in[0], in[1], in[2], in[3], in[4], tc->p.f[0],
                                                  tc->p.i[0], &o);
        if (st != MCL_OK || !o) {
            ok = 0;
            ctx_msg(ctx, st, fn, msg, sizeof msg);
        }
        ok = ok && harr_read(ctx, &h, o, msg, sizeof msg);
        for (int64_t i = 0; ok && i < want.n; i++)
            if (!(h.f[i] == want.f[i])) {
                ok = 0;
                snprintf(msg, sizeof msg, "%s: element %" PRId64 " is %.9g, the op gives %.9g", fn, i,
                         (double)h.f[i], (double)want.f[i]);
            }
        if (ok && g_verbose)
            printf("  %-13s %-40s %s: the op's bits (%s)\n", name, tc->desc, fn, COL_NAME[col]);
    }
    tensors_free(in, tc->n_in);
    guards_release();
    mcl_ctx_reset(ctx);
    if (!ok) fail_line(name, tc, col, msg);
    set_res(&r->res[op][col], ok);
    harr_free(&want);
    harr_free(&h);
}

static void rel_attn_extra(runner *r, mcl_op op)
{
    const char *name = mcl_op_table[op].name;
    for (int k = 0; k < MAX_CASES; k++) {
        tcase tc;
        tc_init(&tc, r->seed, fnv1a(name) + (uint64_t)k);
        if (!gen_rel_attn(k, &tc)) {
            tc_free(&tc);
            break;
        }
        tc_describe(&tc);
        if (k >= N_REL_CASES - 2) rel_attn_threads(r, op, &tc); /* the two above REL_PAR_MIN */
        if (k == 2 || k == 5) { /* window 0 and 3 */
            rel_attn_public_api(r, op, &tc, r->ref, COL_REF_FWD);
            if (r->ocl && !r->ocl_missing[op]) rel_attn_public_api(r, op, &tc, r->ocl, COL_OCL_FWD);
        }
        tc_free(&tc);
    }
}

/* Run every case of one op; fill r->res[op][]. */
static void run_op(runner *r, mcl_op op)
{
    const mcl_op_info *info = &mcl_op_table[op];
    const opspec *sp = spec_find(info->name);
    const opextra *ex = extra_find(info->name);
    int *res = r->res[op];
    int has_bwd = info->n_diff_out > 0;
    char msg[512];
    for (int c = 0; c < NCOL; c++) res[c] = RES_NONE;
    if (!has_bwd) res[COL_REF_BWD] = res[COL_GRADCHECK] = RES_NA;
    if (r->ocl && !has_bwd) res[COL_OCL_BWD] = RES_NA;
    if (r->ocl) {
        const mcl_op_impl *impl = &r->ocl->be->ops[op];
        r->ocl_missing[op] = !impl->fwd || (has_bwd && !impl->bwd);
        if (r->ocl_missing[op]) {
            fail_line(info->name, NULL, COL_OCL_FWD, "the OpenCL backend has no implementation");
            res[COL_OCL_FWD] = res[COL_DIFF] = RES_FAIL;
            if (has_bwd) res[COL_OCL_BWD] = RES_FAIL;
        }
    }

    int ncases = 0;
    for (int k = 0; sp && k < MAX_CASES; k++) {
        tcase tc;
        harr want[MAX_IO] = {{0}}, got[MAX_IO] = {{0}}, ogot[MAX_IO] = {{0}};
        harr gout[MCL_MAX_OUT] = {{0}}, gin[MCL_MAX_IN] = {{0}};
        harr ogout[MCL_MAX_OUT] = {{0}}, ogin[MCL_MAX_IN] = {{0}};
        tc_init(&tc, r->seed, fnv1a(info->name) + (uint64_t)k);
        if (!sp->gen(k, &tc)) {
            tc_free(&tc);
            break;
        }
        if (r->small > 0) { /* the simulator's case set: small and ragged shapes only */
            int64_t total = 0;
            for (int j = 0; j < tc.n_in; j++) total += tc_n(&tc, j);
            if (tc.gc_samples == BIG_SAMPLES || total > r->small) {
                tc_free(&tc);
                continue;
            }
        }
        ncases++;
        tc_describe(&tc);
        if (tc.n_in != info->n_in) {
            snprintf(msg, sizeof msg, "test case has %d inputs, ops.def says %d", tc.n_in,
                     info->n_in);
            fail_line(info->name, &tc, COL_REF_FWD, msg);
            set_res(&res[COL_REF_FWD], 0);
            tc_free(&tc);
            continue;
        }
        int nres = info->n_out > 0 ? info->n_out : info->n_in;
        trng grng = {r->seed, tc.rng.stream ^ 0xa5a5a5a500000000ull, 0};
        double err = 0.0;
        const double ftol = sp->fwd_tol * tc.fwd_tol_scale, gtol = sp->grad_tol;
        sp->naive(&tc, want);

        /* ref fwd (METACL_TEST_BREAK perturbs it here only when no OpenCL backend runs: with
         * one, the backend itself perturbs its own output) */
        int fwd_ran = run_fwd(r->ref, op, &tc, r->ocl == NULL, got, msg, sizeof msg);
        int fwd_ok = fwd_ran && check_fwd(nres, got, want, ftol, &err, msg, sizeof msg);
        if (!fwd_ok) fail_line(info->name, &tc, COL_REF_FWD, msg);
        set_res(&res[COL_REF_FWD], fwd_ok);
        if (g_verbose)
            printf("  %-13s %-40s fwd err %.3g (tol %.3g)\n", info->name, tc.desc, err, ftol);

        /* ref bwd + gradcheck */
        int bwd_ok = 0;
        if (has_bwd) {
            bwd_ok = run_bwd(r->ref, op, &tc, grng, gout, gin, msg, sizeof msg);
            if (!bwd_ok) fail_line(info->name, &tc, COL_REF_BWD, msg);
            set_res(&res[COL_REF_BWD], bwd_ok);
            if (bwd_ok && ex && ex->naive_bwd) { /* against the op's gradient oracle in double */
                harr wg[MCL_MAX_IN] = {{0}};
                double e = 0.0;
                int bad = -1;
                ex->naive_bwd(&tc, gout, wg);
                for (int j = 0; j < tc.n_in; j++) {
                    if (!gin[j].f) continue;
                    double ej = wg[j].n != gin[j].n ? INFINITY
                                                    : cmp_err(gin[j].f, wg[j].d, gin[j].n, GRAD_FLOOR * tc.gscale);
                    if (!within(ej, e)) e = ej, bad = j;
                }
                for (int j = 0; j < MCL_MAX_IN; j++) harr_free(&wg[j]);
                if (g_verbose)
                    printf("  %-13s %-40s bwd vs oracle err %.3g (tol %.3g)\n", info->name, tc.desc, e,
                           ex->bwd_tol);
                if (!within(e, ex->bwd_tol)) {
                    snprintf(msg, sizeof msg, "gradients against the double oracle: gin[%d] error %.3g > tol %.3g",
                             bad, e, ex->bwd_tol);
                    fail_line(info->name, &tc, COL_REF_BWD, msg);
                    set_res(&res[COL_REF_BWD], 0);
                }
            }
            int gc_ok = bwd_ok && gradcheck(r->ref, op, sp, &tc, gout, gin, &err, msg, sizeof msg);
            if (!bwd_ok) snprintf(msg, sizeof msg, "no analytic gradient (ref bwd failed)");
            if (!gc_ok) fail_line(info->name, &tc, COL_GRADCHECK, msg);
            set_res(&res[COL_GRADCHECK], gc_ok);
            if (g_verbose && gc_ok)
                printf("  %-13s %-40s gradcheck err %.3g (tol %.3g)\n", info->name, tc.desc, err,
                       gtol);
        }

        /* OpenCL: forward against the naive values, against the reference (diff), backward
         * against the reference backward */
        if (r->ocl && !r->ocl_missing[op]) {
            const double dtol = diff_tol(sp);
            int ran = run_fwd(r->ocl, op, &tc, 0, ogot, msg, sizeof msg);
            int ok = ran && check_fwd(nres, ogot, want, ftol, &err, msg, sizeof msg);
            if (!ok) fail_line(info->name, &tc, COL_OCL_FWD, msg);
            set_res(&res[COL_OCL_FWD], ok);
            if (ran && fwd_ran) {
                double e = 0.0;
                for (int j = 0; j < nres; j++) {
                    double ej = ogot[j].n != got[j].n ? INFINITY
                                                      : nmse_err(ogot[j].f, got[j].f, got[j].n);
                    if (!within(ej, e)) e = ej;
                }
                ok = within(e, dtol);
                if (!within(e, r->diff_max[op])) r->diff_max[op] = e;
                snprintf(msg, sizeof msg, "forward: normalized rms difference %.3g > tol %.3g%s", e,
                         dtol, isinf(e) ? " (NaN/Inf parity or size differs)" : "");
                if (g_verbose)
                    printf("  %-13s %-40s diff fwd %.3g (tol %.3g)\n", info->name, tc.desc, e, dtol);
            } else {
                ok = 0;
                snprintf(msg, sizeof msg, "a forward failed: nothing to compare");
            }
            if (!ok) fail_line(info->name, &tc, COL_DIFF, msg);
            set_res(&res[COL_DIFF], ok);
            if (has_bwd) {
                ok = bwd_ok && run_bwd(r->ocl, op, &tc, grng, ogout, ogin, msg, sizeof msg);
                if (!bwd_ok) snprintf(msg, sizeof msg, "no reference gradient (ref bwd failed)");
                for (int j = 0; ok && j < tc.n_in; j++) {
                    if (!gin[j].f) continue;
                    double *w = xcalloc((size_t)gin[j].n, sizeof(double));
                    for (int64_t i = 0; i < gin[j].n; i++) w[i] = gin[j].f[i];
                    double e = cmp_err(ogin[j].f, w, gin[j].n, GRAD_FLOOR * tc.gscale);
                    free(w);
                    ok = within(e, gtol);
                    if (!ok)
                        snprintf(msg, sizeof msg, "gin[%d]: error %.3g > tol %.3g", j, e, gtol);
                }
                if (!ok) fail_line(info->name, &tc, COL_OCL_BWD, msg);
                set_res(&res[COL_OCL_BWD], ok);
                /* differential, backward: the input gradients on identical gout */
                if (ok) {
                    double e = 0.0;
                    for (int j = 0; j < tc.n_in; j++) {
                        if (!gin[j].f) continue;
                        double ej = nmse_err(ogin[j].f, gin[j].f, gin[j].n);
                        if (!within(ej, e)) e = ej;
                    }
                    if (!within(e, r->diff_max[op])) r->diff_max[op] = e;
                    if (g_verbose)
                        printf("  %-13s %-40s diff bwd %.3g (tol %.3g)\n", info->name, tc.desc, e, dtol);
                    if (!within(e, dtol)) {
                        snprintf(msg, sizeof msg, "backward: normalized rms difference %.3g > tol %.3g%s",
                                 e, dtol, isinf(e) ? " (NaN/Inf parity differs)" : "");
                        fail_line(info->name, &tc, COL_DIFF, msg);
                        set_res(&res[COL_DIFF], 0);
                    }
                }
            }
        }

        for (int j = 0; j < MAX_IO; j++) {
            harr_free(&want[j]);
            harr_free(&got[j]);
            harr_free(&ogot[j]);
        }
        for (int j = 0; j < MCL_MAX_IN; j++) {
            harr_free(&gin[j]);
            harr_free(&ogin[j]);
        }
        for (int j = 0; j < MCL_MAX_OUT; j++) {
            harr_free(&gout[j]);
            harr_free(&ogout[j]);
        }
        tc_free(&tc);
    }
    if (ex && ex->extra && ncases > 0) ex->extra(r, op);
    if (ncases == 0) {
        fail_line(info->name, NULL, COL_REF_FWD, "no test cases");
        res[COL_REF_FWD] = RES_FAIL;
        if (has_bwd) res[COL_REF_BWD] = res[COL_GRADCHECK] = RES_FAIL;
    }
}

/* The checker must see a mismatch where there is one (and none where there is none). */
static int self_check(void)
{
    const double want[5] = {1.0, -2.0, 3.0, 0.5, 0.0};
    const float right[5] = {1.0f, -2.0f, 3.0f, 0.5f, 0.0f};
    const float wrong[5] = {1.0f, -2.0f, 3.01f, 0.5f, 0.0f};
    const float nan_[5] = {1.0f, -2.0f, NAN, 0.5f, 0.0f};
    return within(cmp_err(right, want, 5, FWD_FLOOR), FT_EXACT) &&
           !within(cmp_err(wrong, want, 5, FWD_FLOOR), FT_LIBM) &&
           !within(cmp_err(nan_, want, 5, FWD_FLOOR), 1e30) &&
           !within(nmse_err(wrong, right, 5), DT_GEMM) && within(nmse_err(right, right, 5), 0.0) &&
           !within(nmse_err(nan_, right, 5), 1e30); /* NaN/Inf parity */
}

/* ================================================================================== */
/* Op families (the family column of ops.def): one test per family in `make check`.    */

/* Is `name` the family of some op? */
static int family_exists(const char *name)
{
    for (int op = 0; op < MCL_OP_COUNT; op++)
        if (strcmp(mcl_op_table[op].family, name) == 0) return 1;
    return 0;
}

/* Is op the first op of its family (the families in ops.def order)? */
static int family_first(int op)
{
    for (int o = 0; o < op; o++)
        if (strcmp(mcl_op_table[o].family, mcl_op_table[op].family) == 0) return 0;
    return 1;
}

static void print_families(void)
{
    for (int op = 0; op < MCL_OP_COUNT; op++) {
        if (!family_first(op)) continue;
        printf("%s", mcl_op_table[op].family);
        for (int o = op; o < MCL_OP_COUNT; o++)
            if (strcmp(mcl_op_table[o].family, mcl_op_table[op].family) == 0)
                printf(" %s", mcl_op_table[o].name);
        printf("\n");
    }
}

/* names[0..n) must be exactly the families, each once: an op whose family is not among
 * them would be run by no per-family test. Prints every problem; returns 1 when all is well. */
static int check_families(char **names, int n)
{
    int ok = 1;
    for (int i = 0; i < n; i++) {
        if (!family_exists(names[i])) {
            printf("test-ops: '%s' is not a family of ops.def (no op would run)\n", names[i]);
            ok = 0;
        }
        for (int j = 0; j < i; j++)
            if (strcmp(names[i], names[j]) == 0) {
                printf("test-ops: family '%s' named twice (its ops would run twice)\n", names[i]);
                ok = 0;
            }
    }
    for (int op = 0; op < MCL_OP_COUNT; op++) {
        int found = 0;
        for (int i = 0; i < n; i++) found += strcmp(mcl_op_table[op].family, names[i]) == 0;
        if (!found) {
            printf("test-ops: op '%s' (family '%s') is in no tested family\n", mcl_op_table[op].name,
                   mcl_op_table[op].family);
            ok = 0;
        }
    }
    printf("test-ops: %d families checked: %s\n", n, ok ? "every op in exactly one" : "FAIL");
    return ok;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: test-ops [--list] [-o OP] [--family F] [--seed N] [--backend ref|opencl]\n"
               "                [--small N] [-v]\n"
               "       test-ops --families | --check-families F...\n"
               "  --list         run everything and print a coverage table\n"
               "  -o OP          run only op OP (a name from ops.def)\n"
               "  --family F     run only the ops of family F (ops.def's family column)\n"
               "  --families     print each family and its ops, run nothing\n"
               "  --check-families F...  exit 0 when F... are exactly the families of ops.def\n"
               "                 (each once), 1 otherwise; run nothing\n"
               "  --seed N       seed of the random inputs (default %u)\n"
               "  --small N      only cases with at most N input elements, no big case (the\n"
               "                 simulator's set; an op left with no case FAILS)\n"
               "  --backend B    ref (reference only) or opencl (reference + OpenCL + differential;\n"
               "                 SKIP without a device); default: OpenCL when a device exists\n"
               "  -v             print every case (-v -v: every finite difference)\n"
               "environment: METACL_TEST_BREAK=OP perturbs OP's OpenCL output (reference forward\n"
               "             output when no OpenCL backend runs): the run must fail\n",
            DEFAULT_SEED);
}

/* Does the run include op (-o and --family both restrict)? */
static int op_selected(int op, mcl_op only_op, const char *family)
{
    if (only_op != MCL_OP_COUNT && op != (int)only_op) return 0;
    return !family || strcmp(mcl_op_table[op].family, family) == 0;
}

int main(int argc, char **argv)
{
    int list = 0, want_ocl = -1; /* -1: OpenCL when a device exists, 0: ref only, 1: required */
    const char *only = NULL, *family = NULL;
    runner r;
    memset(&r, 0, sizeof r);
    r.seed = DEFAULT_SEED;
    /* outputs left unfilled by the lazy zeroing start as NaN (fresh-buffer checks) */
    setenv("METACL_DEBUG_POISON", "1", 0);

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--list") == 0) {
            list = 1;
        } else if (strcmp(a, "--families") == 0) {
            print_families();
            return 0;
        } else if (strcmp(a, "--check-families") == 0) {
            return check_families(argv + i + 1, argc - i - 1) ? 0 : 1;
        } else if (strcmp(a, "--family") == 0 && i + 1 < argc) {
            family = argv[++i];
            if (!family_exists(family)) {
                fprintf(stderr, "test-ops: unknown family '%s' (see --families)\n", family);
                return 2;
            }
        } else if (strcmp(a, "-v") == 0) {
            g_verbose++;
        } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(a, "--small") == 0 && i + 1 < argc) {
            char *end = NULL;
            errno = 0;
            long long n = strtoll(argv[++i], &end, 10);
            if (errno || !end || *end || n <= 0) {
                fprintf(stderr, "test-ops: bad --small '%s' (a positive element count)\n", argv[i]);
                usage(stderr);
                return 2;
            }
            r.small = (int64_t)n;
        } else if ((strcmp(a, "-o") == 0 || strcmp(a, "--seed") == 0 ||
                    strcmp(a, "--backend") == 0) && i + 1 < argc) {
            const char *v = argv[++i];
            if (strcmp(a, "-o") == 0) {
                only = v;
            } else if (strcmp(a, "--backend") == 0) {
                if (strcmp(v, "opencl") == 0) want_ocl = 1;
                else if (strcmp(v, "ref") == 0) want_ocl = 0;
                else {
                    fprintf(stderr, "test-ops: unknown backend '%s'\n", v);
                    usage(stderr);
                    return 2;
                }
            } else {
                char *end = NULL;
                errno = 0;
                unsigned long long s = strtoull(v, &end, 10);
                if (errno || !end || *end || !*v || v[0] == '-') {
                    fprintf(stderr, "test-ops: bad seed '%s'\n", v);
                    usage(stderr);
                    return 2;
                }
                r.seed = (uint64_t)s;
            }
        } else {
            fprintf(stderr, "test-ops: unknown option or missing value: '%s'\n", a);
            usage(stderr);
            return 2;
        }
    }
    mcl_op only_op = MCL_OP_COUNT;
    if (only) {
        only_op = mcl_op_by_name(only);
        if (only_op == MCL_OP_COUNT) {
            fprintf(stderr, "test-ops: unknown op '%s'\n", only);
            return 2;
        }
        if (family && strcmp(mcl_op_table[only_op].family, family) != 0) {
            fprintf(stderr, "test-ops: op '%s' is in family '%s', not '%s'\n", only,
                    mcl_op_table[only_op].family, family);
            return 2;
        }
    }
#ifndef MCL_HAVE_OPENCL
    if (want_ocl < 0) want_ocl = 0;
    if (want_ocl) {
        fprintf(stderr, "test-ops: no OpenCL backend in this build (SKIP)\n");
        return 77;
    }
#endif

    printf("test-ops: seed %" PRIu64 "\n", r.seed);
    fflush(stdout);
    if (!self_check()) {
        printf("test-ops: internal check failed: the checker does not see a mismatch\n");
        return 1;
    }
#ifdef MCL_TEST_HOOKS
    g_break_op = getenv("METACL_TEST_BREAK");
#endif
    if (g_break_op && !*g_break_op) g_break_op = NULL;
    if (g_break_op)
        printf("test-ops: METACL_TEST_BREAK=%s: that op's %s output is perturbed\n", g_break_op,
               want_ocl ? "OpenCL (if a device exists; else reference forward)" : "reference forward");
    for (int s = 0; s < N_SPECS; s++)
        if (mcl_op_by_name(SPECS[s].name) == MCL_OP_COUNT)
            printf("test-ops: note: test cases for '%s', which is not in ops.def\n", SPECS[s].name);

    char err[512];
    if (mcl_ctx_create(&r.ref, MCL_BACKEND_REF, NULL, err, sizeof err) != MCL_OK || !r.ref) {
        printf("test-ops: cannot create the reference context: %s\n", err);
        return 1;
    }
    if (want_ocl) {
        /* MCL_ERR_UNSUPPORTED: OpenCL not built, or no platform / no device (pick_device in
         * src/opencl/backend.c). Any other failure (a kernel that does not build, a context
         * that cannot be created on an existing device) is a FAILURE, not a skip. */
        mcl_status st = mcl_ctx_create(&r.ocl, MCL_BACKEND_OPENCL, NULL, err, sizeof err);
        if (st != MCL_OK || !r.ocl) {
            r.ocl = NULL;
            if (st != MCL_ERR_UNSUPPORTED) {
                printf("test-ops: FAIL: the OpenCL backend does not open (%s): %s\n",
                       mcl_status_str(st), err);
                mcl_ctx_free(r.ref);
                return 1;
            }
            if (want_ocl > 0) {
                fprintf(stderr, "test-ops: no OpenCL device (SKIP): %s\n", err);
                mcl_ctx_free(r.ref);
                return 77;
            }
            printf("test-ops: no OpenCL device (%s): reference only\n", err);
        } else {
            printf("test-ops: differential mode: reference vs OpenCL\n");
        }
    }

    if (family) printf("test-ops: family %s\n", family);
    for (int op = 0; op < MCL_OP_COUNT; op++)
        if (op_selected(op, only_op, family)) run_op(&r, (mcl_op)op);

    int passed = 0, failed = 0;
    if (list) {
        printf("\n%-14s| %-12s| %-8s| %-8s| %-10s| %-11s| %-11s| %-5s| %s\n", "op", "family",
               "ref fwd", "ref bwd", "gradcheck", "opencl fwd", "opencl bwd", "diff",
               "max diff (limit)");
        printf("--------------+-------------+---------+---------+-----------+------------+------------+"
               "------+-----------------\n");
    }
    for (int op = 0; op < MCL_OP_COUNT; op++) {
        if (!op_selected(op, only_op, family)) continue;
        const int *res = r.res[op];
        for (int c = 0; c < NCOL; c++) {
            passed += res[c] == RES_PASS;
            failed += res[c] == RES_FAIL;
        }
        if (list) {
            const opspec *sp = spec_find(mcl_op_table[op].name);
            char md[48] = "-";
            if (r.ocl && sp) snprintf(md, sizeof md, "%.2g (%.0g)", r.diff_max[op], diff_tol(sp));
            printf("%-14s| %-12s| %-8s| %-8s| %-10s| %-11s| %-11s| %-5s| %s\n", mcl_op_table[op].name,
                   mcl_op_table[op].family, RES_NAME[res[0]], RES_NAME[res[1]], RES_NAME[res[2]], RES_NAME[res[3]],
                   RES_NAME[res[4]], RES_NAME[res[5]], md);
        }
    }
    if (list && !r.ocl) {
#ifdef MCL_HAVE_OPENCL
        printf("(opencl columns: not run; use --backend opencl)\n");
#else
        printf("(opencl columns: no OpenCL backend in this build)\n");
#endif
    }
    mcl_ctx_free(r.ocl);
    mcl_ctx_free(r.ref);
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
