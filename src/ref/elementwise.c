/* elementwise.c — reference elementwise ops: add, sub, mul, scale, bias_add, copy; bias_add2
 * (two bias_adds of one x as one op).
 *
 * Every op here maps each output element to the input element(s) at the same index
 * (bias_add broadcasts a [N] vector over the rows of [..,N]). Tensors are contiguous
 * float32, so every op is one flat loop over n = numel elements. Backward ACCUMULATES into
 * the non-NULL gin[k].
 *
 * Aliasing: the inputs may be the same tensor (mul(a, a)) and gin[0] may be the same tensor
 * as gin[1]. Every loop therefore reads only inputs and gout, and updates each gin element
 * with its own `+=` statement, so both contributions land even when gin[0] == gin[1].
 *
 * Threads: loops run under OpenMP only when they are large (more than PAR_MIN elements), so
 * small calls pay no thread start-up. Nothing here reduces across elements except the bias
 * gradient, whose per-column sums run over the rows in a fixed order (deterministic).
 */
#include "ref.h"

/* Below this many elements a loop runs on the calling thread. */
#define PAR_MIN 32768

/* Number of elements of a contiguous tensor. */
static int64_t numel(const mcl_tensor *t)
{
    return mcl_ref_rows(t) * mcl_ref_cols(t);
}

/* ------------------------------------------------------------------------------------ */
/* add: out = a + b
 *   a [n], b [n] (same shape) -> out [n]
 * backward: ga += gout, gb += gout */

mcl_status mcl_ref_add_fwd(mcl_backend *be, const mcl_op_args *a)
{
    (void)be;
    const float *x = mcl_ref_ptr(a->in[0]);
    const float *y = mcl_ref_ptr(a->in[1]);
    float *out = mcl_ref_ptr(a->out[0]);
    int64_t n = numel(a->out[0]);
#pragma omp parallel for simd schedule(static) if (n > PAR_MIN)
    for (int64_t i = 0; i < n; i++) out[i] = x[i] + y[i];
    return MCL_OK;
}

mcl_status mcl_ref_add_bwd(mcl_backend *be, const mcl_op_args *a)
{
    (void)be;
    const float *g = mcl_ref_ptr(a->gout[0]);
    int64_t n = numel(a->gout[0]);
    for (int k = 0; k < 2; k++) {
        if (!a->gin[k]) continue;
        float *gx = mcl_ref_ptr(a->gin[k]);
        if (mcl_ref_grad_fresh(a->gin[k])) { /* logically zero: 0 + g (a + a: then the second adds) */
#pragma omp parallel for simd schedule(static) if (n > PAR_MIN)
            for (int64_t i = 0; i < n; i++) gx[i] = 0.0f + g[i];
            continue;
        }
#pragma omp parallel for simd schedule(static) if (n > PAR_MIN)
        for (int64_t i = 0; i < n; i++) gx[i] += g[i];
    }
    return MCL_OK;
}

/* ------------------------------------------------------------------------------------ */
/* sub: out = a - b
 *   a [n], b [n] (same shape) -> out [n]
 * backward: ga += gout, gb -= gout */

mcl_status mcl_ref_sub_fwd(mcl_backend *be, const mcl_op_args *a)
{
    (void)be;
    const float *x = mcl_ref_ptr(a->in[0]);
    const float *y = mcl_ref_ptr(a->in[1]);
    float *out = mcl_ref_ptr(a->out[0]);
    int64_t n = numel(a->out[0]);
#pragma omp parallel for simd schedule(static) if (n > PAR_MIN)
    for (int64_t i = 0; i < n; i++) out[i] = x[i] - y[i];
    return MCL_OK;
}

mcl_status mcl_ref_sub_bwd(mcl_backend *be, const mcl_op_args *a)
{
    (void)be;
    const float *g = mcl_ref_ptr(a->gout[0]);
    int64_t n = numel(a->gout[0]);
    if (a->gin[0]) {
        float *ga = mcl_ref_ptr(a->gin[0]);
#pragma omp parallel for simd schedule(static) if (n > PAR_MIN)
        for (int64_t i = 0; i < n; i++) ga[i] += g[i];
    }
    if (a->gin[1]) {
        float *gb = mcl_ref_ptr(a->gin[1]);
#pragma omp parallel for simd schedule(static) if (n > PAR_MIN)
        for (int64_t i = 0; i < n; i++) gb[i] -= g[i];
    }
    return MCL_OK;
}

/* ------------------------------------------------------------------------------------ */
/* mul: out = a * b (elementwise)
 *   a [n], b [n] (same shape) -> out [n]
 * backward: ga += gout * b, gb += gout * a
 * (mul(a, a) with gin[0] == gin[1] gives ga += 2 * gout * a, as it should) */

mcl_status mcl_ref_mul_fwd(mcl_backend *be, const mcl_op_args *a)
{
    (void)be;
    const float *x = mcl_ref_ptr(a->in[0]);
    const float *y = mcl_ref_ptr(a->in[1]);
    float *out = mcl_ref_ptr(a->out[0]);
    int64_t n = numel(a->out[0]);
#pragma omp parallel for simd schedule(static) if (n > PAR_MIN)
    for (int64_t i = 0; i < n; i++) out[i] = x[i] * y[i];
    return MCL_OK;
}

mcl_status mcl_ref_mul_bwd(mcl_backend *be, const mcl_op_args *a)
{
    (void)be;
    const float *x = mcl_ref_ptr(a->in[0]);
    const float *y = mcl_ref_ptr(a->in[1]);
    const float *g = mcl_ref_ptr(a->gout[0]);
    int64_t n = numel(a->gout[0]);
    if (a->gin[0]) {
        float *ga = mcl_ref_ptr(a->gin[0]);
#pragma omp parallel for simd schedule(static) if (n > PAR_MIN)
        for (int64_t i = 0; i < n; i++) ga[i] += g[i] * y[i];
    }
    if (a->gin[1]) {
        float *gb = mcl_ref_ptr(a->gin[1]);
#pragma omp parallel for simd schedule(static) if (n > PAR_MIN)
        for (int64_t i = 0; i < n; i++) gb[i] += g[i] * x[i];
    }
    return MCL_OK;
}

/* ------------------------------------------------------------------------------------ */
/* scale: out = f0 * a
 *   a [n] -> out [n]; p.f[0] = the factor
 * backward: ga += f0 * gout */

mcl_status mcl_ref_scale_fwd(mcl_backend *be, const mcl_op_args *a)
{
    (void)be;
    const float s = a->p.f[0];
    const float *x = mcl_ref_ptr(a->in[0]);
    float *out = mcl_ref_ptr(a->out[0]);
    int64_t n = numel(a->out[0]);
#pragma omp parallel for simd schedule(static) if (n > PAR_MIN)
    for (int64_t i = 0; i < n; i++) out[i] = s * x[i];
    return MCL_OK;
}

mcl_status mcl_ref_scale_bwd(mcl_backend *be, const mcl_op_args *a)
{
    (void)be;
    if (!a->gin[0]) return MCL_OK;
    const float s = a->p.f[0];
    const float *g = mcl_ref_ptr(a->gout[0]);
    float *ga = mcl_ref_ptr(a->gin[0]);
    int64_t n = numel(a->gout[0]);
#pragma omp parallel for simd schedule(static) if (n > PAR_MIN)
    for (int64_t i = 0; i < n; i++) ga[i] += s * g[i];
    return MCL_OK;
}

/* ------------------------------------------------------------------------------------ */
/* bias_add: out[r, j] = x[r, j] + b[j]   (b broadcast over the R rows)
 *   x [..,N] (R rows of N), b [N] -> out [..,N]
 * backward: gx[r, j] += gout[r, j]
 *           gb[j]    += sum_r gout[r, j]   (summed in double, rows in increasing order) */

mcl_status mcl_ref_bias_add_fwd(mcl_backend *be, const mcl_op_args *a)
{
    (void)be;
    const float *x = mcl_ref_ptr(a->in[0]);
    const float *b = mcl_ref_ptr(a->in[1]);
    float *out = mcl_ref_ptr(a->out[0]);
    const int64_t R = mcl_ref_rows(a->in[0]), N = mcl_ref_cols(a->in[0]);
#pragma omp parallel for schedule(static) if (R * N > PAR_MIN)
    for (int64_t r = 0; r < R; r++) {
        const float *xr = x + r * N;
        float *outr = out + r * N;
        MCL_SIMD
        for (int64_t j = 0; j < N; j++) outr[j] = xr[j] + b[j];
    }
    return MCL_OK;
}

/* Columns per block of the bias gradient: one thread owns a block of columns and sums every
 * row of it into a small stack array of doubles, so each column's sum has a fixed order. */
#define BIAS_COLS 256

/* gb[j] += sum_r g[r, j] (double, rows in increasing order; a thread per block of columns;
 * shared with dropout.c's bias_dropout_relu) */
void mcl_ref_bias_colsum(const float *g, int64_t R, int64_t N, float *gb)
{
    const int64_t nblocks = (N + BIAS_COLS - 1) / BIAS_COLS;
#pragma omp parallel for schedule(static) if (R * N > PAR_MIN)
    for (int64_t blk = 0; blk < nblocks; blk++) {
        const int64_t j0 = blk * BIAS_COLS;
        const int64_t nj = (N - j0 < BIAS_COLS) ? N - j0 : BIAS_COLS;
        double acc[BIAS_COLS];
        for (int64_t j = 0; j < nj; j++) acc[j] = 0.0;
        for (int64_t r = 0; r < R; r++) {
            const float *gr = g + r * N + j0;
            MCL_SIMD /* a lane per column: each column's sum still adds its rows in order */
            for (int64_t j = 0; j < nj; j++) acc[j] += gr[j];
        }
        for (int64_t j = 0; j < nj; j++) gb[j0 + j] += (float)acc[j];
    }
}

mcl_status mcl_ref_bias_add_bwd(mcl_backend *be, const mcl_op_args *a)
{
    (void)be;
    const float *g = mcl_ref_ptr(a->gout[0]);
    const int64_t R = mcl_ref_rows(a->gout[0]), N = mcl_ref_cols(a->gout[0]);
    if (a->gin[0]) {
        float *gx = mcl_ref_ptr(a->gin[0]);
        const int64_t n = R * N;
#pragma omp parallel for simd schedule(static) if (n > PAR_MIN)
        for (int64_t i = 0; i < n; i++) gx[i] += g[i];
    }
    if (a->gin[1]) mcl_ref_bias_colsum(g, R, N, mcl_ref_ptr(a->gin[1]));
    return MCL_OK;
}

/* ------------------------------------------------------------------------------------ */
/* bias_add2: out0[r, j] = x[r, j] + b0[j],  out1[r, j] = x[r, j] + b1[j]
 *   x [..,N] (R rows of N), b0 [N], b1 [N] -> out0 [..,N], out1 [..,N]
 * backward: gx[r, j] += gout0[r, j] + gout1[r, j]   (the sum rounded, then added)
 *           gb0[j]   += sum_r gout0[r, j],  gb1[j] += sum_r gout1[r, j]   (as bias_add's:
 *                       in double, rows in increasing order, rounded once) */

mcl_status mcl_ref_bias_add2_fwd(mcl_backend *be, const mcl_op_args *a)
{
    (void)be;
    const float *x = mcl_ref_ptr(a->in[0]);
    const float *b0 = mcl_ref_ptr(a->in[1]), *b1 = mcl_ref_ptr(a->in[2]);
    float *o0 = mcl_ref_ptr(a->out[0]), *o1 = mcl_ref_ptr(a->out[1]);
    const int64_t R = mcl_ref_rows(a->in[0]), N = mcl_ref_cols(a->in[0]);
#pragma omp parallel for schedule(static) if (R * N > PAR_MIN)
    for (int64_t r = 0; r < R; r++) {
        const float *xr = x + r * N;
        float *o0r = o0 + r * N, *o1r = o1 + r * N;
        MCL_SIMD
        for (int64_t j = 0; j < N; j++) {
            o0r[j] = xr[j] + b0[j];
            o1r[j] = xr[j] + b1[j];
        }
    }
    return MCL_OK;
}

mcl_status mcl_ref_bias_add2_bwd(mcl_backend *be, const mcl_op_args *a)
{
    (void)be;
    const float *g0 = mcl_ref_ptr(a->gout[0]), *g1 = mcl_ref_ptr(a->gout[1]);
    const int64_t R = mcl_ref_rows(a->gout[0]), N = mcl_ref_cols(a->gout[0]);
    if (a->gin[0]) {
        float *gx = mcl_ref_ptr(a->gin[0]);
        const int64_t n = R * N;
#pragma omp parallel for simd schedule(static) if (n > PAR_MIN)
        for (int64_t i = 0; i < n; i++) gx[i] += g0[i] + g1[i];
    }
    if (a->gin[1]) mcl_ref_bias_colsum(g0, R, N, mcl_ref_ptr(a->gin[1]));
    if (a->gin[2]) mcl_ref_bias_colsum(g1, R, N, mcl_ref_ptr(a->gin[2]));
    return MCL_OK;
}

/* ------------------------------------------------------------------------------------ */
/* copy: out = a
 *   a [n] -> out [n]
 * backward: ga += gout */

mcl_status mcl_ref_copy_fwd(mcl_backend *be, const mcl_op_args *a)
{
    (void)be;
    const float *x = mcl_ref_ptr(a->in[0]);
    float *out = mcl_ref_ptr(a->out[0]);
    int64_t n = numel(a->out[0]);
#pragma omp parallel for simd schedule(static) if (n > PAR_MIN)
    for (int64_t i = 0; i < n; i++) out[i] = x[i];
    return MCL_OK;
}

mcl_status mcl_ref_copy_bwd(mcl_backend *be, const mcl_op_args *a)
{
    (void)be;
    if (!a->gin[0]) return MCL_OK;
    const float *g = mcl_ref_ptr(a->gout[0]);
    float *ga = mcl_ref_ptr(a->gin[0]);
    int64_t n = numel(a->gout[0]);
#pragma omp parallel for simd schedule(static) if (n > PAR_MIN)
    for (int64_t i = 0; i < n; i++) ga[i] += g[i];
    return MCL_OK;
}
