/* activation.c — reference pointwise activations: relu, leaky_relu, elu, sigmoid, tanh,
 * gelu, exp, log.
 *
 * Each op is out[i] = f(a[i]) over the n = numel elements of a contiguous float32 tensor;
 * its backward is ga[i] += gout[i] * f'(a[i]) (accumulated, skipped when gin[0] == NULL).
 * Where f' is cheapest in terms of the saved output y = out[0] (sigmoid, tanh, exp) the
 * backward reads y; otherwise it reads the input a = in[0].
 *
 * Math is float32 with the C library's float functions (expf, expm1f, tanhf, logf; results
 * within a couple of ulp), except gelu, which is evaluated in double. The forms used avoid
 * cancellation (sigmoid never forms exp of a large positive number, elu uses expm1, gelu
 * uses erfc instead of 1 + erf). Loops run under OpenMP only above PAR_MIN elements.
 */
#include <math.h>

#include "ref.h"

/* Below this many elements a loop runs on the calling thread. */
#define PAR_MIN 32768

/* 1/sqrt(2) and 1/sqrt(2*pi) (M_SQRT1_2 is not in strict C11). */
#define INV_SQRT2 0.70710678118654752440
#define INV_SQRT_2PI 0.39894228040143267794

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
#pragma omp parallel for schedule(static) if (n > PAR_MIN)
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
#pragma omp parallel for schedule(static) if (n > PAR_MIN)
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
#pragma omp parallel for schedule(static) if (n > PAR_MIN)
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
#pragma omp parallel for schedule(static) if (n > PAR_MIN)
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
#pragma omp parallel for schedule(static) if (n > PAR_MIN)
    for (int64_t i = 0; i < n; i++) gx[i] += g[i] * (1.0f - y[i] * y[i]);
    return MCL_OK;
}

/* ------------------------------------------------------------------------------------ */
/* gelu (exact): y = a * Phi(a) = 0.5 * a * (1 + erf(a / sqrt(2)))
 *   a [n] -> y [n]
 * computed in double as 0.5 * a * erfc(-a / sqrt(2)) — the same function, without the
 * cancellation of 1 + erf(.) for negative a (erf is sensitive to rounding of its argument, so
 * float would lose a few bits here)
 * backward: ga += gout * (Phi(a) + a * phi(a)),  phi(a) = exp(-a^2 / 2) / sqrt(2 pi) */

mcl_status mcl_ref_gelu_fwd(mcl_backend *be, const mcl_op_args *a)
{
    (void)be;
    const float *x = mcl_ref_ptr(a->in[0]);
    float *y = mcl_ref_ptr(a->out[0]);
    const int64_t n = numel(a->in[0]);
#pragma omp parallel for schedule(static) if (n > PAR_MIN)
    for (int64_t i = 0; i < n; i++) {
        const double v = (double)x[i];
        y[i] = (float)(0.5 * v * erfc(-v * INV_SQRT2));
    }
    return MCL_OK;
}

mcl_status mcl_ref_gelu_bwd(mcl_backend *be, const mcl_op_args *a)
{
    (void)be;
    if (!a->gin[0]) return MCL_OK;
    const float *x = mcl_ref_ptr(a->in[0]);
    const float *g = mcl_ref_ptr(a->gout[0]);
    float *gx = mcl_ref_ptr(a->gin[0]);
    const int64_t n = numel(a->in[0]);
#pragma omp parallel for schedule(static) if (n > PAR_MIN)
    for (int64_t i = 0; i < n; i++) {
        const double v = (double)x[i];
        const double cdf = 0.5 * erfc(-v * INV_SQRT2);
        const double pdf = INV_SQRT_2PI * exp(-0.5 * v * v);
        gx[i] += (float)((double)g[i] * (cdf + v * pdf));
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
#pragma omp parallel for schedule(static) if (n > PAR_MIN)
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
#pragma omp parallel for schedule(static) if (n > PAR_MIN)
    for (int64_t i = 0; i < n; i++) gx[i] += g[i] / x[i];
    return MCL_OK;
}
