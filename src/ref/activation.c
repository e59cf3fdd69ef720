/* activation.c — reference pointwise activations: relu, leaky_relu, elu, sigmoid, tanh,
 * gelu, exp, log; and bias_gelu (a bias add and gelu as one pass, its backward with the
 * bias gradient's column sums).
 *
 * Each op is out[i] = f(a[i]) over the n = numel elements of a contiguous float32 tensor;
 * its backward is ga[i] += gout[i] * f'(a[i]) (accumulated, skipped when gin[0] == NULL).
 * Where f' is cheapest in terms of the saved output y = out[0] (sigmoid, tanh, exp) the
 * backward reads y; otherwise it reads the input a = in[0].
 *
 * Math is float32 with the C library's float functions (expf, expm1f, tanhf, logf; results
 * within a couple of ulp), except gelu, which has its own vectorizable float erfc and exp
 * (within a few ulp, stated at gelu). The forms used avoid cancellation (sigmoid never forms
 * exp of a large positive number, elu uses expm1, gelu uses erfc instead of 1 + erf). Loops
 * run under OpenMP only above PAR_MIN elements.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "ref.h"

/* Below this many elements a loop runs on the calling thread. */
#define PAR_MIN 32768


static int64_t numel(const mcl_tensor *t)
{
    return mcl_ref_rows(t) * mcl_ref_cols(t);
}

/* ------------------------------------------------------------------------------------ */
/* relu: y = max(a, 0)
 *   a [n] -> y [n]
 * backward: ga += gout * (a > 0 ? 1 : 0)   (derivative at a == 0 taken as 0; a fresh ga,
 * see ref.h, is stored, not accumulated) */

mcl_status mcl_ref_relu_fwd(mcl_backend *be, const mcl_op_args *a)
{
    (void)be;
    const float *x = mcl_ref_ptr(a->in[0]);
    float *y = mcl_ref_ptr(a->out[0]);
    const int64_t n = numel(a->in[0]);
#pragma omp parallel for simd schedule(static) if (n > PAR_MIN)
    for (int64_t i = 0; i < n; i++) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
    return MCL_OK;
}

mcl_status mcl_ref_relu_bwd(mcl_backend *be, const mcl_op_args *a)
{
    (void)be;
    if (!a->gin[0]) return MCL_OK;
    const float *x = mcl_ref_ptr(a->in[0]);
    const float *g = mcl_ref_ptr(a->gout[0]);
    float *gx = mcl_ref_ptr(a->gin[0]);
    const int64_t n = numel(a->in[0]);
    /* selects, not branches (the signs of x are random: a branch mispredicts half the time);
     * simd: so that -O2 vectorizes the selects */
    if (mcl_ref_grad_fresh(a->gin[0])) { /* gx is logically zero: store 0 + the term */
#pragma omp parallel for simd schedule(static) if (n > PAR_MIN)
        for (int64_t i = 0; i < n; i++) gx[i] = 0.0f + (x[i] > 0.0f ? g[i] : 0.0f);
        return MCL_OK;
    }
#pragma omp parallel for simd schedule(static) if (n > PAR_MIN)
    for (int64_t i = 0; i < n; i++) gx[i] = x[i] > 0.0f ? gx[i] + g[i] : gx[i];
    return MCL_OK;
}

/* ------------------------------------------------------------------------------------ */
/* leaky_relu: y = a > 0 ? a : f0 * a       (p.f[0] = negative slope)
 *   a [n] -> y [n]
 * backward: ga += gout * (a > 0 ? 1 : f0) */

mcl_status mcl_ref_leaky_relu_fwd(mcl_backend *be, const mcl_op_args *a)
{
    (void)be;
    const float slope = a->p.f[0];
    const float *x = mcl_ref_ptr(a->in[0]);
    float *y = mcl_ref_ptr(a->out[0]);
    const int64_t n = numel(a->in[0]);
#pragma omp parallel for simd schedule(static) if (n > PAR_MIN)
    for (int64_t i = 0; i < n; i++) y[i] = x[i] > 0.0f ? x[i] : slope * x[i];
    return MCL_OK;
}

mcl_status mcl_ref_leaky_relu_bwd(mcl_backend *be, const mcl_op_args *a)
{
    (void)be;
    if (!a->gin[0]) return MCL_OK;
    const float slope = a->p.f[0];
    const float *x = mcl_ref_ptr(a->in[0]);
    const float *g = mcl_ref_ptr(a->gout[0]);
    float *gx = mcl_ref_ptr(a->gin[0]);
    const int64_t n = numel(a->in[0]);
#pragma omp parallel for simd schedule(static) if (n > PAR_MIN)
    for (int64_t i = 0; i < n; i++) gx[i] += x[i] > 0.0f ? g[i] : slope * g[i];
    return MCL_OK;
}

/* ------------------------------------------------------------------------------------ */
/* elu: y = a > 0 ? a : f0 * (exp(a) - 1)   (p.f[0] = alpha)
 *   a [n] -> y [n]
 * backward: ga += gout * (a > 0 ? 1 : f0 * exp(a))
 * (exp(a) - 1 is computed with expm1f: accurate for small |a|) */

mcl_status mcl_ref_elu_fwd(mcl_backend *be, const mcl_op_args *a)
{
    (void)be;
    const float alpha = a->p.f[0];
    const float *x = mcl_ref_ptr(a->in[0]);
    float *y = mcl_ref_ptr(a->out[0]);
    const int64_t n = numel(a->in[0]);
#pragma omp parallel for schedule(static) if (n > PAR_MIN)
    for (int64_t i = 0; i < n; i++) y[i] = x[i] > 0.0f ? x[i] : alpha * expm1f(x[i]);
    return MCL_OK;
}

mcl_status mcl_ref_elu_bwd(mcl_backend *be, const mcl_op_args *a)
{
    (void)be;
    if (!a->gin[0]) return MCL_OK;
    const float alpha = a->p.f[0];
    const float *x = mcl_ref_ptr(a->in[0]);
    const float *g = mcl_ref_ptr(a->gout[0]);
    float *gx = mcl_ref_ptr(a->gin[0]);
    const int64_t n = numel(a->in[0]);
#pragma omp parallel for schedule(static) if (n > PAR_MIN)
    for (int64_t i = 0; i < n; i++) gx[i] += x[i] > 0.0f ? g[i] : g[i] * (alpha * expf(x[i]));
    return MCL_OK;
}

/* ------------------------------------------------------------------------------------ */
/* sigmoid: y = 1 / (1 + exp(-a))
 *   a [n] -> y [n]
 * computed as 1/(1+exp(-a)) for a >= 0 and exp(a)/(1+exp(a)) for a < 0 (no overflow)
 * backward: ga += gout * y * (1 - y) */

mcl_status mcl_ref_sigmoid_fwd(mcl_backend *be, const mcl_op_args *a)
{
    (void)be;
    const float *x = mcl_ref_ptr(a->in[0]);
    float *y = mcl_ref_ptr(a->out[0]);
    const int64_t n = numel(a->in[0]);
#pragma omp parallel for schedule(static) if (n > PAR_MIN)
    for (int64_t i = 0; i < n; i++) {
        if (x[i] >= 0.0f) {
            y[i] = 1.0f / (1.0f + expf(-x[i]));
        } else {
            float e = expf(x[i]);
            y[i] = e / (1.0f + e);
        }
    }
    return MCL_OK;
}

mcl_status mcl_ref_sigmoid_bwd(mcl_backend *be, const mcl_op_args *a)
{
    (void)be;
    if (!a->gin[0]) return MCL_OK;
    const float *y = mcl_ref_ptr(a->out[0]);
    const float *g = mcl_ref_ptr(a->gout[0]);
    float *gx = mcl_ref_ptr(a->gin[0]);
    const int64_t n = numel(a->in[0]);
#pragma omp parallel for simd schedule(static) if (n > PAR_MIN)
    for (int64_t i = 0; i < n; i++) gx[i] += g[i] * (y[i] * (1.0f - y[i]));
    return MCL_OK;
}

/* ------------------------------------------------------------------------------------ */
/* tanh: y = tanh(a)
 *   a [n] -> y [n]
 * backward: ga += gout * (1 - y^2) */

mcl_status mcl_ref_tanh_fwd(mcl_backend *be, const mcl_op_args *a)
{
    (void)be;
    const float *x = mcl_ref_ptr(a->in[0]);
    float *y = mcl_ref_ptr(a->out[0]);
    const int64_t n = numel(a->in[0]);
#pragma omp parallel for schedule(static) if (n > PAR_MIN)
    for (int64_t i = 0; i < n; i++) y[i] = tanhf(x[i]);
    return MCL_OK;
}

mcl_status mcl_ref_tanh_bwd(mcl_backend *be, const mcl_op_args *a)
{
    (void)be;
    if (!a->gin[0]) return MCL_OK;
    const float *y = mcl_ref_ptr(a->out[0]);
    const float *g = mcl_ref_ptr(a->gout[0]);
    float *gx = mcl_ref_ptr(a->gin[0]);
    const int64_t n = numel(a->in[0]);
#pragma omp parallel for simd schedule(static) if (n > PAR_MIN)
    for (int64_t i = 0; i < n; i++) gx[i] += g[i] * (1.0f - y[i] * y[i]);
    return MCL_OK;
}

/* ------------------------------------------------------------------------------------ */
/* gelu (exact): y = a * Phi(a) = 0.5 * a * (1 + erf(a / sqrt(2))),  Phi the normal CDF
 *   a [n] -> y [n]
 * backward: ga += gout * (Phi(a) + a * phi(a)),  phi(a) = exp(-a^2 / 2) / sqrt(2 pi)
 *
 * Evaluated in float, branch-free so that the loops vectorize (the readable double version,
 * 0.5 * a * erfc(-a / sqrt(2)) with libm, is mcl_naive_gelu_fwd/bwd in src/ref/naive/). With
 * z = |a| / sqrt(2) and t = 1 / (1 + z/2):
 *
 *   T(a) = Phi(-|a|) = 0.5 erfc(z) = 0.5 t exp(-a^2/2 + P(t)),   P a degree-10 polynomial in
 *   t - 1/2 fitted here (iteratively reweighted least squares, |error| < 5e-9 for z <= 9.6)
 *   to log(erfc(z) / t) + z^2;   Phi(a) = a < 0 ? T : 1 - T   (no cancellation either side)
 *
 * The float rounding of z would cost a relative 2 z^2 eps in exp(-z^2) (1e-5 at z = 9), so
 * the exponent is taken from a itself: a = ah + al with ah = a's top 12 significant bits,
 * a^2 = ah^2 (exact in float) + al (a + ah) (small), and exp(-ah^2/2 + rest) is reduced
 * against ln 2 with ah^2/2 kept exact (exp_split). The rounding of t only enters through the
 * smooth factor t exp(P(t)). Bounds, checked over the whole float range by tests/test-naive
 * (every 1021st float bit pattern and 2^19 points on [-14, 14]): y within 8 ulp of the exact
 * result rounded to float (observed 5.9, near a = 0.008), the derivative within 8 ulp of the
 * larger of its terms Phi(a) and a phi(a) (observed 5.7; for a < 0 the derivative is their
 * difference, which crosses zero at a = -0.75); below FLT_MIN the same in units of FLT_MIN. |a| > 13.4 gives y = 0 (a < 0; the exact |y| < FLT_MIN) or y = a, derivative 0 or 1.
 * The backend's results changed bits with this (doc/reference-backend.md). */

/* P(t) coefficients, in powers of u = t - 1/2 */
static const float GELU_P[11] = {
    -6.717940569e-01f, 1.345286489e+00f,  1.893712282e-01f,  -3.751617968e-01f,
    -1.578342170e-01f, 2.821629643e-01f,  1.096827686e-01f,  -2.934869826e-01f,
    -1.240230538e-02f, 2.644311190e-01f,  -1.419443935e-01f};
/* Beyond |a| = 13.4 both y (a < 0) and the derivative are below FLT_MIN in magnitude (or y = a,
 * derivative 1 in float for a > 0) */
#define GELU_CLAMP 13.4f

/* The element functions below are forced inline into the MCL_HOT loops: as plain `static
 * inline` functions (compiled without the loops' optimize("O3") attribute) GCC kept
 * gelu_tail64 out of line, and a call per element kept bias_gelu's backward loop scalar
 * (~10 % of the LM's training step). Same operations, same bits. */
#define GELU_INLINE MCL_HOT_INLINE

#ifdef FP_FAST_FMAF
#define GMADD(a, b, c) fmaf(a, b, c)
#else
#define GMADD(a, b, c) ((a) * (b) + (c))
#endif

/* 2^64 exp(hi + lo) for hi exact with -90 <= hi <= 0, |lo| <= 2 (scaled by 2^64 so that it
 * stays a normal float; the caller scales its final result back, which then rounds correctly
 * into the subnormals): k = round((hi + lo) / ln 2), r = (hi - k ln2_hi) + lo - k ln2_lo
 * (ln2_hi has 9 bits, so k ln2_hi and the first difference are exact), e^r = 1 + r + r^2 Q(r)
 * on |r| <= 0.36 (Q fitted like P, relative error 4e-9), times 2^(k+64) built from its bits. */
GELU_INLINE float exp_split64(float hi, float lo)
{
    const float kf = ((hi + lo) * 1.44269504f + 12582912.0f) - 12582912.0f; /* round to int */
    const float r = ((hi - kf * 0.693359375f) + lo) - kf * -2.12194440e-4f;
    float q = 1.381021342e-03f;
    q = GMADD(q, r, 8.371507749e-03f);
    q = GMADD(q, r, 4.166863859e-02f);
    q = GMADD(q, r, 1.666649729e-01f);
    q = GMADD(q, r, 4.999999106e-01f);
    const float p = GMADD(r * r, q, r) + 1.0f;
    const uint32_t bits = (uint32_t)((int32_t)kf + 127 + 64) << 23;
    float s;
    memcpy(&s, &bits, sizeof s);
    return p * s;
}

/* 2^64 T, T = Phi(-|a|), and, when e_a is not NULL, *e_a = 2^64 exp(-a^2/2), for
 * |a| <= GELU_CLAMP. */
GELU_INLINE float gelu_tail64(float ax, float *e_a)
{
    const float t = 1.0f / GMADD(ax, 0.35355339f, 1.0f); /* 1 / (1 + (|a|/sqrt 2)/2) */
    const float u = t - 0.5f;
    float P = GMADD(GELU_P[10], u, GELU_P[9]); /* Horner, written out so that it vectorizes */
    P = GMADD(P, u, GELU_P[8]);
    P = GMADD(P, u, GELU_P[7]);
    P = GMADD(P, u, GELU_P[6]);
    P = GMADD(P, u, GELU_P[5]);
    P = GMADD(P, u, GELU_P[4]);
    P = GMADD(P, u, GELU_P[3]);
    P = GMADD(P, u, GELU_P[2]);
    P = GMADD(P, u, GELU_P[1]);
    P = GMADD(P, u, GELU_P[0]);
    uint32_t bits;
    memcpy(&bits, &ax, sizeof bits);
    bits &= 0xfffff000u; /* the top 12 significant bits */
    float ah;
    memcpy(&ah, &bits, sizeof ah);
    const float al = ax - ah;
    const float e_hi = -0.5f * (ah * ah), e_lo = -0.5f * (al * (ax + ah));
    if (e_a) *e_a = exp_split64(e_hi, e_lo);
    return 0.5f * t * exp_split64(e_hi, e_lo + P);
}

/* gelu(v) for one float (the forward's element) */
GELU_INLINE float gelu_y(float v)
{
    const float ax = fabsf(v);
    const float T64 = gelu_tail64(ax < GELU_CLAMP ? ax : GELU_CLAMP, NULL);
    /* a < 0: a T (scaled back last); a >= 0: a (1 - T) */
    const float yv = v < 0.0f ? (v * T64) * 0x1p-64f : v * (1.0f - T64 * 0x1p-64f);
    return v < -GELU_CLAMP ? 0.0f : yv; /* a NaN stays NaN */
}

/* gelu'(v) = Phi(v) + v phi(v) for one float (the backward's factor) */
GELU_INLINE float gelu_d(float v)
{
    const float ax = fabsf(v), axc = ax < GELU_CLAMP ? ax : GELU_CLAMP;
    float e64;
    const float T64 = gelu_tail64(axc, &e64);
    const float a_phi64 = axc * e64 * 0.39894228f; /* 2^64 |a| phi(a) */
    /* a < 0: T - |a| phi; a >= 0: 1 - T + |a| phi */
    const float d = v < 0.0f ? (T64 - a_phi64) * 0x1p-64f : (1.0f - T64 * 0x1p-64f) + a_phi64 * 0x1p-64f;
    return v < -GELU_CLAMP ? 0.0f : v > GELU_CLAMP ? 1.0f : d;
}

MCL_HOT mcl_status mcl_ref_gelu_fwd(mcl_backend *be, const mcl_op_args *a)
{
    (void)be;
    const float *x = mcl_ref_ptr(a->in[0]);
    float *y = mcl_ref_ptr(a->out[0]);
    const int64_t n = numel(a->in[0]);
#pragma omp parallel for simd schedule(static) if (n > PAR_MIN)
    for (int64_t i = 0; i < n; i++) y[i] = gelu_y(x[i]);
    return MCL_OK;
}

MCL_HOT mcl_status mcl_ref_gelu_bwd(mcl_backend *be, const mcl_op_args *a)
{
    (void)be;
    if (!a->gin[0]) return MCL_OK;
    const float *x = mcl_ref_ptr(a->in[0]);
    const float *g = mcl_ref_ptr(a->gout[0]);
    float *gx = mcl_ref_ptr(a->gin[0]);
    const int64_t n = numel(a->in[0]);
    if (mcl_ref_grad_fresh(a->gin[0])) { /* gx is logically zero: store 0 + the term */
#pragma omp parallel for simd schedule(static) if (n > PAR_MIN)
        for (int64_t i = 0; i < n; i++) gx[i] = 0.0f + g[i] * gelu_d(x[i]);
        return MCL_OK;
    }
#pragma omp parallel for simd schedule(static) if (n > PAR_MIN)
    for (int64_t i = 0; i < n; i++) gx[i] += g[i] * gelu_d(x[i]);
    return MCL_OK;
}

/* ------------------------------------------------------------------------------------ */
/* bias_gelu: out[r, j] = gelu(x[r, j] + b[j])   (bias_add then gelu as one pass)
 *   x [..,N] (R rows of N), b [N] -> out [..,N]
 * backward, with t[r, j] = x[r, j] + b[j] (recomputed: nothing is saved) and
 *           gt[r, j] = gout[r, j] * gelu'(t[r, j]):
 *   gx[r, j] += gt[r, j]
 *   gb[j]    += sum_r gt[r, j]   (summed in double, rows in increasing order, rounded once)
 * The same floats as mcl_bias_add then mcl_gelu: t is the float sum, gt the float product the
 * gelu backward stores, and the column sums run in bias_add's order. */

/* Columns per block of the bias gradient (as bias_add's: one thread owns a block). */
#define BIAS_GELU_COLS 256

MCL_HOT mcl_status mcl_ref_bias_gelu_fwd(mcl_backend *be, const mcl_op_args *a)
{
    (void)be;
    const float *x = mcl_ref_ptr(a->in[0]);
    const float *b = mcl_ref_ptr(a->in[1]);
    float *y = mcl_ref_ptr(a->out[0]);
    const int64_t R = mcl_ref_rows(a->in[0]), N = mcl_ref_cols(a->in[0]);
#pragma omp parallel for schedule(static) if (R * N > PAR_MIN)
    for (int64_t r = 0; r < R; r++) {
        const float *xr = x + r * N;
        float *yr = y + r * N;
#pragma omp simd
        for (int64_t j = 0; j < N; j++) yr[j] = gelu_y(xr[j] + b[j]);
    }
    return MCL_OK;
}

MCL_HOT mcl_status mcl_ref_bias_gelu_bwd(mcl_backend *be, const mcl_op_args *a)
{
    (void)be;
    const float *x = mcl_ref_ptr(a->in[0]);
    const float *b = mcl_ref_ptr(a->in[1]);
    const float *g = mcl_ref_ptr(a->gout[0]);
    float *gx = a->gin[0] ? mcl_ref_ptr(a->gin[0]) : NULL;
    const int64_t R = mcl_ref_rows(a->in[0]), N = mcl_ref_cols(a->in[0]);
    /* a fresh gx (mcl_ref_grad_fresh) gets 0 + gt, not read */
    const int fresh_x = gx && mcl_ref_grad_fresh(a->gin[0]);
    if (!a->gin[1]) { /* only gx: row by row */
        if (!gx) return MCL_OK;
#pragma omp parallel for schedule(static) if (R * N > PAR_MIN)
        for (int64_t r = 0; r < R; r++) {
            const float *xr = x + r * N, *gr = g + r * N;
            float *gxr = gx + r * N;
            if (fresh_x) {
#pragma omp simd
                for (int64_t j = 0; j < N; j++) gxr[j] = 0.0f + gr[j] * gelu_d(xr[j] + b[j]);
            } else {
#pragma omp simd
                for (int64_t j = 0; j < N; j++) gxr[j] += gr[j] * gelu_d(xr[j] + b[j]);
            }
        }
        return MCL_OK;
    }
    /* gb (and gx): a thread owns a block of columns and walks every row of it once */
    float *gb = mcl_ref_ptr(a->gin[1]);
    const int fresh_b = mcl_ref_grad_fresh(a->gin[1]);
    const int64_t nblocks = (N + BIAS_GELU_COLS - 1) / BIAS_GELU_COLS;
#pragma omp parallel for schedule(static) if (R * N > PAR_MIN)
    for (int64_t blk = 0; blk < nblocks; blk++) {
        const int64_t j0 = blk * BIAS_GELU_COLS;
        const int64_t nj = (N - j0 < BIAS_GELU_COLS) ? N - j0 : BIAS_GELU_COLS;
        double acc[BIAS_GELU_COLS];
        float gt[BIAS_GELU_COLS];
        for (int64_t j = 0; j < nj; j++) acc[j] = 0.0;
        for (int64_t r = 0; r < R; r++) {
            const float *xr = x + r * N + j0, *gr = g + r * N + j0, *br = b + j0;
#pragma omp simd
            for (int64_t j = 0; j < nj; j++) gt[j] = gr[j] * gelu_d(xr[j] + br[j]);
            if (gx) {
                float *gxr = gx + r * N + j0;
                if (fresh_x)
                    for (int64_t j = 0; j < nj; j++) gxr[j] = 0.0f + gt[j];
                else
                    for (int64_t j = 0; j < nj; j++) gxr[j] += gt[j];
            }
            for (int64_t j = 0; j < nj; j++) acc[j] += gt[j];
        }
        if (fresh_b)
            for (int64_t j = 0; j < nj; j++) gb[j0 + j] = 0.0f + (float)acc[j];
        else
            for (int64_t j = 0; j < nj; j++) gb[j0 + j] += (float)acc[j];
    }
    return MCL_OK;
}

/* ------------------------------------------------------------------------------------ */
/* exp: y = exp(a)
 *   a [n] -> y [n]
 * backward: ga += gout * y */

mcl_status mcl_ref_exp_fwd(mcl_backend *be, const mcl_op_args *a)
{
    (void)be;
    const float *x = mcl_ref_ptr(a->in[0]);
    float *y = mcl_ref_ptr(a->out[0]);
    const int64_t n = numel(a->in[0]);
#pragma omp parallel for schedule(static) if (n > PAR_MIN)
    for (int64_t i = 0; i < n; i++) y[i] = expf(x[i]);
    return MCL_OK;
}

mcl_status mcl_ref_exp_bwd(mcl_backend *be, const mcl_op_args *a)
{
    (void)be;
    if (!a->gin[0]) return MCL_OK;
    const float *y = mcl_ref_ptr(a->out[0]);
    const float *g = mcl_ref_ptr(a->gout[0]);
    float *gx = mcl_ref_ptr(a->gin[0]);
    const int64_t n = numel(a->in[0]);
#pragma omp parallel for simd schedule(static) if (n > PAR_MIN)
    for (int64_t i = 0; i < n; i++) gx[i] += g[i] * y[i];
    return MCL_OK;
}

/* ------------------------------------------------------------------------------------ */
/* log: y = log(a)   (natural log; a <= 0 gives -inf / NaN, as in C)
 *   a [n] -> y [n]
 * backward: ga += gout / a */

mcl_status mcl_ref_log_fwd(mcl_backend *be, const mcl_op_args *a)
{
    (void)be;
    const float *x = mcl_ref_ptr(a->in[0]);
    float *y = mcl_ref_ptr(a->out[0]);
    const int64_t n = numel(a->in[0]);
#pragma omp parallel for schedule(static) if (n > PAR_MIN)
    for (int64_t i = 0; i < n; i++) y[i] = logf(x[i]);
    return MCL_OK;
}

mcl_status mcl_ref_log_bwd(mcl_backend *be, const mcl_op_args *a)
{
    (void)be;
    if (!a->gin[0]) return MCL_OK;
    const float *x = mcl_ref_ptr(a->in[0]);
    const float *g = mcl_ref_ptr(a->gout[0]);
    float *gx = mcl_ref_ptr(a->gin[0]);
    const int64_t n = numel(a->in[0]);
#pragma omp parallel for simd schedule(static) if (n > PAR_MIN)
    for (int64_t i = 0; i < n; i++) gx[i] += g[i] / x[i];
    return MCL_OK;
}
