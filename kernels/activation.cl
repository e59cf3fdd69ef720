/* activation.cl — relu, leaky_relu, elu, sigmoid, tanh, gelu, exp, log (forward, backward);
 * bias_gelu (bias_add then gelu in one kernel; its bias gradient in bias_add's two passes).
 *
 * Same equations as src/ref/activation.c: out[i] = f(a[i]); backward ga[i] += gout[i] * f'(.)
 * evaluated from the input a or from the saved output y, as the reference does.
 *
 * Index layout: 1-D launch over the n elements; work-item i computes element i (flat index,
 * tensors contiguous); ids >= n return at once.
 *
 * Uniform signatures, so the host glue is one function per direction:
 *   <op>_fwd(a, y, f0, n)          y = f(a)                 (f0 = slope/alpha, else unused)
 *   <op>_bwd(a, y, gout, ga, f0, acc, n)
 *                                  ga += gout * f'(a)       (reads a or y, as needed)
 * each tensor being (__global float *p, long off). acc = 0 when the host found ga fresh
 * (all zeros, never written: mcl_ocl_grad_fresh): then ga = gout * f'(a) is stored instead,
 * which saves zero-filling it first.
 *
 * Accuracy: exp, expm1, tanh, log, erfc are OpenCL built-ins (a few ulp, not correctly
 * rounded, so results may differ from the C library's by that much). The reference evaluates
 * gelu in double; here it is float with the two rounding-sensitive spots repaired (see gelu).
 * FP_CONTRACT is off so that products and sums round as in the reference.
 */
#pragma OPENCL FP_CONTRACT OFF

/* dst += v, or dst = v when the gradient buffer is fresh (acc == 0) */
#define ACT_GRAD_PUT(dst, v)   \
    do {                       \
        if (acc)               \
            (dst) += (v);      \
        else                   \
            (dst) = (v);       \
    } while (0)

/* ---- relu: y = max(a, 0); ga += gout * (a > 0 ? 1 : 0)  (derivative 0 at a == 0) ---- */
__kernel void relu_fwd(__global const float *a, long a_off, __global float *y, long y_off,
                       float f0, long n)
{
    long i = get_global_id(0);
    if (i >= n) return;
    float x = a[a_off + i];
    y[y_off + i] = x > 0.0f ? x : 0.0f;
}

__kernel void relu_bwd(__global const float *a, long a_off, __global const float *y, long y_off,
                       __global const float *g, long g_off, __global float *ga, long ga_off,
                       float f0, int acc, long n)
{
    long i = get_global_id(0);
    if (i >= n) return;
    if (acc) {
        if (a[a_off + i] > 0.0f) ga[ga_off + i] += g[g_off + i];
    } else {
        ga[ga_off + i] = a[a_off + i] > 0.0f ? g[g_off + i] : 0.0f;
    }
}

/* ---- leaky_relu: y = a > 0 ? a : f0 * a;  ga += a > 0 ? gout : f0 * gout ---- */
__kernel void leaky_relu_fwd(__global const float *a, long a_off, __global float *y, long y_off,
                             float f0, long n)
{
    long i = get_global_id(0);
    if (i >= n) return;
    float x = a[a_off + i];
    y[y_off + i] = x > 0.0f ? x : f0 * x;
}

__kernel void leaky_relu_bwd(__global const float *a, long a_off, __global const float *y,
                             long y_off, __global const float *g, long g_off, __global float *ga,
                             long ga_off, float f0, int acc, long n)
{
    long i = get_global_id(0);
    if (i >= n) return;
    float gi = g[g_off + i];
    ACT_GRAD_PUT(ga[ga_off + i], a[a_off + i] > 0.0f ? gi : f0 * gi);
}

/* ---- elu: y = a > 0 ? a : f0 * expm1(a);  ga += a > 0 ? gout : gout * (f0 * exp(a)) ---- */
__kernel void elu_fwd(__global const float *a, long a_off, __global float *y, long y_off,
                      float f0, long n)
{
    long i = get_global_id(0);
    if (i >= n) return;
    float x = a[a_off + i];
    y[y_off + i] = x > 0.0f ? x : f0 * expm1(x);
}

__kernel void elu_bwd(__global const float *a, long a_off, __global const float *y, long y_off,
                      __global const float *g, long g_off, __global float *ga, long ga_off,
                      float f0, int acc, long n)
{
    long i = get_global_id(0);
    if (i >= n) return;
    float x = a[a_off + i], gi = g[g_off + i];
    ACT_GRAD_PUT(ga[ga_off + i], x > 0.0f ? gi : gi * (f0 * exp(x)));
}

/* ---- sigmoid: y = 1 / (1 + exp(-a)) for a >= 0, exp(a) / (1 + exp(a)) for a < 0
 *      (never forms exp of a large positive number);  ga += gout * (y * (1 - y)) ---- */
__kernel void sigmoid_fwd(__global const float *a, long a_off, __global float *y, long y_off,
                          float f0, long n)
{
    long i = get_global_id(0);
    if (i >= n) return;
    float x = a[a_off + i];
    float r;
    if (x >= 0.0f) {
        r = 1.0f / (1.0f + exp(-x));
    } else {
        float e = exp(x);
        r = e / (1.0f + e);
    }
    y[y_off + i] = r;
}

__kernel void sigmoid_bwd(__global const float *a, long a_off, __global const float *y,
                          long y_off, __global const float *g, long g_off, __global float *ga,
                          long ga_off, float f0, int acc, long n)
{
    long i = get_global_id(0);
    if (i >= n) return;
    float s = y[y_off + i];
    ACT_GRAD_PUT(ga[ga_off + i], g[g_off + i] * (s * (1.0f - s)));
}

/* ---- tanh: y = tanh(a);  ga += gout * (1 - y^2) ---- */
__kernel void tanh_fwd(__global const float *a, long a_off, __global float *y, long y_off,
                       float f0, long n)
{
    long i = get_global_id(0);
    if (i >= n) return;
    y[y_off + i] = tanh(a[a_off + i]);
}

__kernel void tanh_bwd(__global const float *a, long a_off, __global const float *y, long y_off,
                       __global const float *g, long g_off, __global float *ga, long ga_off,
                       float f0, int acc, long n)
{
    long i = get_global_id(0);
    if (i >= n) return;
    float t = y[y_off + i];
    ACT_GRAD_PUT(ga[ga_off + i], g[g_off + i] * (1.0f - t * t));
}

/* ---- gelu (exact): y = a * Phi(a) = 0.5 * a * erfc(-a / sqrt(2))
 *      ga += gout * (Phi(a) + a * phi(a)),  phi(a) = exp(-a^2 / 2) / sqrt(2 pi)
 *
 * In float, two roundings are amplified where the tails are steep: the argument
 * z = -a / sqrt(2) (erfc(z) changes by a relative 2 z^2 per relative change of z), and
 * a^2 inside exp (relative error a^2 / 2 per relative change). Both are repaired to first
 * order with error-free transformations (fma gives the exact rounding error of a product):
 *   z  = fl(-a * c) with c = fl(1/sqrt 2); the rest dz = (-a * c - z) + (-a) * (1/sqrt 2 - c)
 *        erfc(z + dz) ~= erfc(z) - dz * (2/sqrt pi) * exp(-z^2)
 *   a^2 = sq + sq_lo exactly;  exp(-(sq + sq_lo)/2) ~= exp(-sq/2) * (1 - sq_lo/2)
 * (exp(-z^2) = exp(-a^2/2) is the same number, computed once). */
#define GELU_C_HI 0x1.6a09e6p-1f       /* fl(1/sqrt 2)             */
#define GELU_C_LO 1.2101617104e-8f     /* 1/sqrt 2 - GELU_C_HI     */
#define GELU_2_SQRTPI 1.1283791671f    /* 2/sqrt pi                */
#define GELU_1_SQRT2PI 0.3989422804f   /* 1/sqrt(2 pi)             */

/* exp(-x^2 / 2) with x^2 = sq + sq_lo carried exactly. Where the exp is 0 (|x| > ~14, Inf)
 * no correction is applied, so no Inf * 0 can appear. */
float gelu_gauss(float x)
{
    float sq = x * x;
    float e = exp(-0.5f * sq);
    if (e > 0.0f) e *= 1.0f - 0.5f * fma(x, x, -sq);
    return e;
}

/* Phi(x) = 0.5 * erfc(-x / sqrt 2), argument rounding repaired; e = gelu_gauss(x). The
 * correction is skipped where e == 0 (it is 0 there, and dz may be NaN for x = +-Inf). */
float gelu_cdf(float x, float e)
{
    float z = -x * GELU_C_HI;
    float dz = fma(-x, GELU_C_HI, -z) + (-x) * GELU_C_LO;
    float corr = e > 0.0f ? dz * (GELU_2_SQRTPI * e) : 0.0f;
    return 0.5f * (erfc(z) - corr);
}

__kernel void gelu_fwd(__global const float *a, long a_off, __global float *y, long y_off,
                       float f0, long n)
{
    long i = get_global_id(0);
    if (i >= n) return;
    float x = a[a_off + i];
    y[y_off + i] = x * gelu_cdf(x, gelu_gauss(x));
}

__kernel void gelu_bwd(__global const float *a, long a_off, __global const float *y, long y_off,
                       __global const float *g, long g_off, __global float *ga, long ga_off,
                       float f0, int acc, long n)
{
    long i = get_global_id(0);
    if (i >= n) return;
    float x = a[a_off + i];
    float e = gelu_gauss(x);
    float d = fma(x, GELU_1_SQRT2PI * e, gelu_cdf(x, e)); /* Phi + x phi, one rounding */
    ACT_GRAD_PUT(ga[ga_off + i], g[g_off + i] * d);
}

/* ---- bias_gelu: y[r, j] = gelu(x[r, j] + b[j]);  x, y [R, N], b [N]
 * backward: gt = gout * gelu'(x + b) (x + b recomputed); gx += gt; gb[j] += sum_r gt[r, j].
 * The floats of bias_add then gelu: t = x + b rounded, then gelu_fwd's / gelu_bwd's
 * expressions; the bias gradient is bias_add's two passes (elementwise.cl, same chunks of
 * rows chosen by the host, same float-float sums), pass 1 computing gt on the fly. Items are
 * (row chunk, column) as in bias_add_fwd: neighbouring items touch neighbouring columns. */

/* gt = g * gelu'(x + b), the product gelu_bwd stores */
float bias_gelu_gt(float x, float b, float g)
{
    const float t = x + b;
    const float e = gelu_gauss(t);
    return g * fma(t, GELU_1_SQRT2PI * e, gelu_cdf(t, e));
}

/* forward: item i = c * N + j does column j of the rows [c*rows, (c+1)*rows) (n = chunks*N) */
__kernel void bias_gelu_fwd(__global const float *x, long x_off, __global const float *b,
                            long b_off, __global float *y, long y_off, long R, long N,
                            long rows, long n)
{
    long i = get_global_id(0);
    if (i >= n) return;
    long r0, r1;
    const long j = row_chunk_item(i, N, rows, R, &r0, &r1);
    const float bj = b[b_off + j];
    for (long r = r0; r < r1; r++) {
        const float t = x[x_off + r * N + j] + bj;
        y[y_off + r * N + j] = t * gelu_cdf(t, gelu_gauss(t));
    }
}

/* backward without the bias gradient: gx += gt (gx = gt when acc == 0: gx fresh); items as
 * the forward's */
__kernel void bias_gelu_bwd_x(__global const float *x, long x_off, __global const float *b,
                              long b_off, __global const float *g, long g_off,
                              __global float *ga, long ga_off, int acc, long R, long N,
                              long rows, long n)
{
    long i = get_global_id(0);
    if (i >= n) return;
    long r0, r1;
    const long j = row_chunk_item(i, N, rows, R, &r0, &r1);
    const float bj = b[b_off + j];
    for (long r = r0; r < r1; r++) {
        const long e = r * N + j;
        ACT_GRAD_PUT(ga[ga_off + e], bias_gelu_gt(x[x_off + e], bj, g[g_off + e]));
    }
}

/* gt of one element for BIAS_XBG_ROWS4/1 (the element's index unused) */
#define GELU_GT_OF(x, b, g, e) bias_gelu_gt(x, b, g)

/* backward with the bias gradient, pass 1 (bias_add_bwd_part's layout and sums, on gt):
 * part[c, j] = float-float sum of gt[r, j] over the rows of chunk c, four columns per item
 * (i = c * Q + q, Q = ceil(N / 4)); gx_mode 1: gx = gt, 2: gx += gt, 0: no gx. Pass 2 is
 * elementwise.cl's bias_add_bwd_sum. */
__kernel void bias_gelu_bwd_part(__global const float *x, long x_off, __global const float *b,
                                 long b_off, __global const float *g, long g_off,
                                 __global float *part, __global float *gx, long gx_off,
                                 int gx_mode, long R, long N, long rows, long n)
{
    BIAS_XBG_PART(GELU_GT_OF);
}

/* ---- exp: y = exp(a);  ga += gout * y ---- */
__kernel void exp_fwd(__global const float *a, long a_off, __global float *y, long y_off,
                      float f0, long n)
{
    long i = get_global_id(0);
    if (i >= n) return;
    y[y_off + i] = exp(a[a_off + i]);
}

__kernel void exp_bwd(__global const float *a, long a_off, __global const float *y, long y_off,
                      __global const float *g, long g_off, __global float *ga, long ga_off,
                      float f0, int acc, long n)
{
    long i = get_global_id(0);
    if (i >= n) return;
    ACT_GRAD_PUT(ga[ga_off + i], g[g_off + i] * y[y_off + i]);
}

/* ---- log: y = log(a) (a <= 0 gives -inf / NaN, as in C);  ga += gout / a ---- */
__kernel void log_fwd(__global const float *a, long a_off, __global float *y, long y_off,
                      float f0, long n)
{
    long i = get_global_id(0);
    if (i >= n) return;
    y[y_off + i] = log(a[a_off + i]);
}

__kernel void log_bwd(__global const float *a, long a_off, __global const float *y, long y_off,
                      __global const float *g, long g_off, __global float *ga, long ga_off,
                      float f0, int acc, long n)
{
    long i = get_global_id(0);
    if (i >= n) return;
    ACT_GRAD_PUT(ga[ga_off + i], g[g_off + i] / a[a_off + i]);
}
