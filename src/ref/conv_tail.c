/* conv_tail.c — inorm_pool_relu, the Conv-4 block's tail (instance_norm -> maxpool2d -> relu
 * in one pass per plane; the conv family of ops.def, kept out of conv.c by purpose), in float.
 *
 * Per plane r = b*C + c of N = H*W values (Ho = H/2, Wo = W/2, floor):
 *   mean[r]      = (1/N) sum_j x[r, j]
 *   var[r]       = (1/N) sum_j (x[r, j] - mean[r])^2                      (biased)
 *   rstd[r]      = 1 / sqrt(var[r] + eps)
 *   n[r, u, v]   = (x[r, u, v] - mean[r]) * rstd[r] * gamma[c] + beta[c]
 *   arg[r, i, j] = dy*2 + dx of the first maximum of n[r, 2i + dy, 2j + dx]
 *   y[r, i, j]   = max(n[r, 2i + arg/2, 2j + arg%2], 0)
 *   in[0] x [B,C,H,W], in[1] gamma [C], in[2] beta [C]; p.f[0] = eps
 *   out[0] y [B,C,Ho,Wo], out[1] mean [B*C], out[2] rstd [B*C], out[3] arg [B,C,Ho,Wo]
 * with the output's dropout (p.f[1] = p > 0; key and segments as the dropout op's, ops.def):
 *   y[i]         = keep_i ? max(...) * scale : 0    (scale = 1 / (1 - p), i the flat index of y)
 * the values of inorm_pool_relu then dropout. No mask is kept: in the backward a window's
 * gradient passes where y > 0, which is exactly where the relu passed and the mask kept
 * (scale > 0), and it is then gout * scale, the dropout's term: gn = 0 + (y > 0 ? gout *
 * scale : 0), the floats of the two ops' backwards (dropout's 0 + gout * scale, into a
 * zero gradient, then the relu's 0 + that). Without dropout scale = 1 (gout * 1 = gout).
 * backward, with gn the gradient of n (gout of a window at its argmax where y > 0, else 0),
 * xhat = (x - mean) * rstd (saved float statistics), dxhat = gn * gamma[c]:
 *   gx[r, e]  += rstd[r] * (dxhat_e - (1/N) sum_k dxhat_k - xhat_e * (1/N) sum_k dxhat_k xhat_k)
 *   ggamma[c] += sum_b sum_e gn[r, e] * xhat[r, e]
 *   gbeta[c]  += sum_b sum_e gn[r, e]
 * The readable form is mcl_naive_inorm_pool_relu(_bwd) (src/ref/naive/norm.c, double),
 * checked against this by tests/test-naive.
 *
 * The arithmetic is float on blocks of TL = 16 lanes (one 512-bit vector):
 *   - statistics: two passes (the mean, then the squared deviations from the float mean with
 *     their plain sum, var = (sum d^2 - (sum d)^2 / N) / N, which removes the float mean's
 *     rounding), element j in float lane j % TL, each lane adding at most TL_RUN values before
 *     it is added to its double lane; the double lanes are added pairwise. So a float sum
 *     has at most TL_RUN terms (error <= (TL_RUN - 1) eps of its magnitudes) and the order
 *     depends on the shape only;
 *   - the normalization is one fmaf per value, n = x * s + t with s = rstd * gamma and
 *     t = beta - mean * s formed per plane in double and rounded to float, straight into the
 *     pooling of a block of TL windows (a row's partial block loads and stores only its valid
 *     elements: nothing is read or written outside the plane, and no scratch is needed);
 *   - backward: gn rebuilt as a plane in the thread's scratch (tail_grad), the sums of gn and
 *     of gn * (x - mean) over the plane (float lanes as above), then per value
 *     gx = gn * (rstd gamma) + (x - mean) * (-rstd^2 mean_dx) + (-rstd mean_d), two fmaf.
 * (In double, three passes with two conversions per value and pass made the forward bound by
 * its arithmetic, at about 10 GB/s on one core: doc/reference-backend.md.) Each thread asks
 * for its next plane while it computes on the current one (a line per block of a pass over
 * the plane: tail_sum_n's pf, tail_bwd_sums' nx; or all at once, tail_prefetch).
 * Forward: planes in parallel, each by one thread; the dropout's mask is applied to a thread's
 * finished planes of y in runs of at least TAIL_DROP_RUN values (mcl_ref_dropout_range, while
 * they are in L1). Backward: the images cut into BWD_CHUNKS fixed chunks, one thread each,
 * with double sums of the gamma/beta gradients added in chunk order at the end. So every
 * result is the same for any thread count.
 */
#if defined(__AVX512F__)
#include <immintrin.h>
#endif
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "ref.h"

/* Below this many elements a loop runs on the calling thread (as conv.c). */
#define PAR_MIN 32768
/* Backward: fixed chunks of images whose gamma/beta sums are kept apart (as conv.c). */
#define BWD_CHUNKS 16
/* Float lanes (and windows of a block); values a float lane adds before going into double. */
#define TL 16
#define TL_RUN 16
/* The forward's dropout: the mask is applied to runs of at least this many values of y. */
#define TAIL_DROP_RUN 1024

/* the TL = 16 double lanes added pairwise */
static double lanes_total(const double *a)
{
    const double s0 = ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));
    const double s1 = ((a[8] + a[9]) + (a[10] + a[11])) + ((a[12] + a[13]) + (a[14] + a[15]));
    return s0 + s1;
}

/* Planes side by side in the statistics passes. A plane's float lanes are one vector, so its
 * sum is a chain of dependent vector adds, each waiting out the add's latency; the sums of
 * TAIL_GROUP planes are independent chains that the core runs together (a plane at a time, the
 * forward's two passes were 2-4 % of the ACL step). Each plane's sums are the same sequence
 * whatever the group (the lanes of the top of this file: element j in float lane j % TL, a
 * float lane's run of at most TL_RUN values added to its double lane, the double lanes
 * pairwise), so a plane's bits do not depend on the planes beside it. */
#define TAIL_GROUP MCL_REF_IPR_GROUP

/* sum[k] = sum_j x[k][j], j < n, for k < NP; pf (or NULL): npf <= TAIL_GROUP planes of n floats
 * to prefetch (the next ones: spread over this pass, a line of each per block of x read, so the
 * prefetches never queue up behind each other, as a loop of them did) */
MCL_HOT_INLINE void tail_sum_n(int NP, const float *const *x, int64_t n, const float *pf, int npf,
                            double *sum)
{
    double acc[TAIL_GROUP][TL] = {{0.0}};
    for (int64_t j = 0; j < n;) {
        float f[TAIL_GROUP][TL] = {{0.0f}};
        const int64_t e = n - j < TL * TL_RUN ? n : j + TL * TL_RUN;
        for (; j + TL <= e; j += TL) {
            for (int k = 0; pf && k < npf; k++) __builtin_prefetch(pf + k * n + j, 0, 3);
            for (int k = 0; k < NP; k++) {
                const float *xk = x[k];
                MCL_SIMD for (int l = 0; l < TL; l++) f[k][l] += xk[j + l];
            }
        }
        if (j < e) {
            const int c = (int)(e - j);
            for (int k = 0; k < NP; k++) {
                const float *xk = x[k];
                MCL_SIMD for (int l = 0; l < TL; l++) f[k][l] += l < c ? xk[j + l] : 0.0f;
            }
            j = e;
        }
        for (int k = 0; k < NP; k++)
            for (int l = 0; l < TL; l++) acc[k][l] += (double)f[k][l];
    }
    for (int k = 0; k < NP; k++) sum[k] = lanes_total(acc[k]);
}

/* s1[k] = sum_j d_j, s2[k] = sum_j d_j^2 with d_j = x[k][j] - c[k] (float), j < n, k < NP */
MCL_HOT_INLINE void tail_sqdev_n(int NP, const float *const *x, int64_t n, const float *c, double *s1,
                              double *s2)
{
    double a1[TAIL_GROUP][TL] = {{0.0}}, a2[TAIL_GROUP][TL] = {{0.0}};
    for (int64_t j = 0; j < n;) {
        float f1[TAIL_GROUP][TL] = {{0.0f}}, f2[TAIL_GROUP][TL] = {{0.0f}};
        const int64_t e = n - j < TL * TL_RUN ? n : j + TL * TL_RUN;
        for (; j + TL <= e; j += TL)
            for (int k = 0; k < NP; k++) {
                const float *xk = x[k], ck = c[k];
                MCL_SIMD for (int l = 0; l < TL; l++) {
                    const float d = xk[j + l] - ck;
                    f1[k][l] += d;
                    f2[k][l] = fmaf(d, d, f2[k][l]);
                }
            }
        if (j < e) {
            const int m = (int)(e - j);
            for (int k = 0; k < NP; k++) {
                const float *xk = x[k], ck = c[k];
                MCL_SIMD for (int l = 0; l < TL; l++) {
                    const float d = l < m ? xk[j + l] - ck : 0.0f;
                    f1[k][l] += d;
                    f2[k][l] = fmaf(d, d, f2[k][l]);
                }
            }
            j = e;
        }
        for (int k = 0; k < NP; k++)
            for (int l = 0; l < TL; l++) {
                a1[k][l] += (double)f1[k][l];
                a2[k][l] += (double)f2[k][l];
            }
    }
    for (int k = 0; k < NP; k++) {
        s1[k] = lanes_total(a1[k]);
        s2[k] = lanes_total(a2[k]);
    }
}

/* The mean and 1/sqrt(var + eps) of NP planes: var = (s2 - s1^2 / n) / n from the deviations from
 * the float mean (the top of this file), 0 when rounding makes it negative */
MCL_HOT_INLINE void tail_stats_n(int NP, const float *const *x, int64_t n, const float *pf, int npf,
                              double eps, double *mu, double *rs)
{
    double sum[TAIL_GROUP], s1[TAIL_GROUP], s2[TAIL_GROUP];
    float c[TAIL_GROUP];
    tail_sum_n(NP, x, n, pf, npf, sum);
    for (int k = 0; k < NP; k++) {
        mu[k] = sum[k] / (double)n;
        c[k] = (float)mu[k];
    }
    tail_sqdev_n(NP, x, n, c, s1, s2);
    for (int k = 0; k < NP; k++) {
        double var = (s2[k] - s1[k] * s1[k] / (double)n) / (double)n;
        var = var < 0.0 ? 0.0 : var; /* rounding, for a constant plane (a NaN stays) */
        rs[k] = 1.0 / sqrt(var + eps);
    }
}

/* tail_stats_n for np in 1..TAIL_GROUP (an instance per count: the accumulators stay in
 * registers) */
MCL_HOT static void tail_stats(int np, const float *const *x, int64_t n, const float *pf, int npf,
                               double eps, double *mu, double *rs)
{
    switch (np) {
    case 4: tail_stats_n(4, x, n, pf, npf, eps, mu, rs); return;
    case 3: tail_stats_n(3, x, n, pf, npf, eps, mu, rs); return;
    case 2: tail_stats_n(2, x, n, pf, npf, eps, mu, rs); return;
    default: tail_stats_n(1, x, n, pf, npf, eps, mu, rs); return;
    }
}

/* The four values of TL windows (k <= TL of them valid) over the rows r0 (dy = 0) and r1
 * (dy = 1): w[t][j] = row (t/2)'s column 2j + t%2, 0 for the windows j >= k (not read). */
static inline void tail_window_load(const float *restrict r0, const float *restrict r1, int k,
                                    float w[4][TL])
{
    float a[2 * TL], b[2 * TL];
    for (int u = 0; u < 2 * TL; u++) {
        a[u] = u < 2 * k ? r0[u] : 0.0f;
        b[u] = u < 2 * k ? r1[u] : 0.0f;
    }
    for (int j = 0; j < TL; j++) {
        w[0][j] = a[2 * j];
        w[1][j] = a[2 * j + 1];
        w[2][j] = b[2 * j];
        w[3][j] = b[2 * j + 1];
    }
}

/* Forward of k <= TL windows over the rows r0, r1: n_t = fmaf(x_t, s, t); the first maximum
 * (strict >, selects), its relu into y[j] and its index into ag[j], j < k. */
MCL_HOT static void tail_fwd_block(const float *restrict r0, const float *restrict r1, int k,
                                   float s, float t, float *restrict y, float *restrict ag)
{
    float w[4][TL];
    tail_window_load(r0, r1, k, w);
    for (int j = 0; j < TL; j++) {
        const float v1 = fmaf(w[1][j], s, t), v2 = fmaf(w[2][j], s, t), v3 = fmaf(w[3][j], s, t);
        float m = fmaf(w[0][j], s, t), idx = 0.0f;
        idx = v1 > m ? 1.0f : idx;
        m = v1 > m ? v1 : m;
        idx = v2 > m ? 2.0f : idx;
        m = v2 > m ? v2 : m;
        idx = v3 > m ? 3.0f : idx;
        m = v3 > m ? v3 : m;
        if (j < k) {
            y[j] = m > 0.0f ? m : 0.0f;
            ag[j] = idx;
        }
    }
}

/* Asks for the n floats at p to be brought into the cache (a hint: no effect on results).
 * The backward that accumulates into gx asks for all of its next plane at once (spread over
 * its pass of sums, with gx prefetched for writing, it was 8-10 % slower on Conv-4's first
 * layer); with a fresh or no gx, the pass of sums spreads x, g, y and ag's next lines over
 * its blocks (tail_bwd_sums' nx: the ACL step 1 % faster). */
static void tail_prefetch(const float *p, int64_t n, int write)
{
#if defined(__GNUC__)
    for (int64_t j = 0; j < n; j += 16)
        if (write)
            __builtin_prefetch(p + j, 1, 3);
        else
            __builtin_prefetch(p + j, 0, 3);
#else
    (void)p, (void)n, (void)write;
#endif
}

/* np <= TAIL_GROUP planes x + k H W [H,W], k < np: their statistics into mean[k], rstd[k],
 * their windows into y + k P, ag + k P [Ho,Wo] (P = Ho Wo); gm[k], bt[k] their channels' gamma
 * and beta. next: the next planes of this thread (NULL: none), nnext <= TAIL_GROUP of them,
 * fetched while these are computed on. */
void mcl_ref_ipr_fwd_planes(int np, const float *x, const float *next, int nnext, int64_t H, int64_t W,
                            const double *gm, const double *bt, double eps, float *mean, float *rstd,
                            float *y, float *ag)
{
    const int64_t N = H * W, Ho = H / 2, Wo = W / 2, P = Ho * Wo;
    const float *xs[TAIL_GROUP];
    double mu[TAIL_GROUP], rs[TAIL_GROUP];
    for (int k = 0; k < TAIL_GROUP; k++) xs[k] = x + (k < np ? k : 0) * N; /* (all set: no maybe-uninitialized) */
    tail_stats(np, xs, N, next, next ? nnext : 0, eps, mu, rs);
    for (int k = 0; k < np; k++) {
        const double sc = rs[k] * gm[k];
        mean[k] = (float)mu[k];
        rstd[k] = (float)rs[k];
        const float s = (float)sc, t = (float)(bt[k] - mu[k] * sc);
        const float *xr = xs[k];
        float *yk = y + k * P, *agk = ag + k * P;
        for (int64_t i = 0; i < Ho; i++)
            for (int64_t j0 = 0; j0 < Wo; j0 += TL)
                tail_fwd_block(xr + 2 * i * W + 2 * j0, xr + (2 * i + 1) * W + 2 * j0,
                               (int)(Wo - j0 < TL ? Wo - j0 : TL), s, t, yk + i * Wo + j0,
                               agk + i * Wo + j0);
    }
}

mcl_status mcl_ref_inorm_pool_relu_fwd(mcl_backend *be, const mcl_op_args *a)
{
    (void)be;
    const mcl_tensor *X = a->in[0];
    const int64_t C = X->shape[1], R = X->shape[0] * C, H = X->shape[2], W = X->shape[3];
    const int64_t N = H * W, P = (H / 2) * (W / 2);
    const float *x = mcl_ref_ptr(X), *gamma = mcl_ref_ptr(a->in[1]), *beta = mcl_ref_ptr(a->in[2]);
    float *y = mcl_ref_ptr(a->out[0]), *mean = mcl_ref_ptr(a->out[1]);
    float *rstd = mcl_ref_ptr(a->out[2]), *arg = mcl_ref_ptr(a->out[3]);
    const double eps = (double)a->p.f[0];
    const mcl_ref_drop_key dk = {a->p.u[0], a->p.u[1], a->p.u[2], a->p.u[3], a->p.i[0], a->p.f[1]};
#pragma omp parallel if (R * N > PAR_MIN)
    {
        int64_t r0 = 0, r1 = R; /* this thread's planes: omp for's static split */
#ifdef _OPENMP
        const int64_t T = omp_get_num_threads(), t = omp_get_thread_num(), q = R / T, e = R % T;
        r0 = t * q + (t < e ? t : e);
        r1 = r0 + q + (t < e);
#endif
        int64_t rd = r0; /* the first plane whose y the dropout has not masked yet */
        for (int64_t r = r0; r < r1;) {
            const int np = (int)(r1 - r < TAIL_GROUP ? r1 - r : TAIL_GROUP);
            const int64_t rn = r + np; /* the next group */
            double gm[TAIL_GROUP], bt[TAIL_GROUP];
            for (int k = 0; k < np; k++) {
                gm[k] = (double)gamma[(r + k) % C];
                bt[k] = (double)beta[(r + k) % C];
            }
            mcl_ref_ipr_fwd_planes(np, x + r * N, rn < r1 ? x + rn * N : NULL,
                                   (int)(r1 - rn < TAIL_GROUP ? r1 - rn : TAIL_GROUP), H, W, gm, bt, eps,
                                   &mean[r], &rstd[r], y + r * P, arg + r * P);
            if (dk.p > 0.0f && ((rn - rd) * P >= TAIL_DROP_RUN || rn == r1)) {
                mcl_ref_dropout_range(&dk, rd * P, (rn - rd) * P, y + rd * P);
                rd = rn;
            }
            r = rn;
        }
    }
    return MCL_OK;
}

/* ---- backward ------------------------------------------------------------------------- */

/* The gradient of the normalized plane n from the tail's output
 * gradient: what relu's and maxpool2d's backward store into fresh buffers,
 *   gn[2i + arg/2, 2j + arg%2] = 0 + (y[i, j] > 0 ? gout[i, j] : 0)   for every window (i, j)
 * and 0 elsewhere (the three other values of each window, an odd last row/column).
 * Rows are done in blocks of TL windows, as maxpool2d's backward (conv.c). */

/* One block: 2 TL floats of the row dy (0 or 1) of gn from the gated gout gp and the
 * argmax ag of TL windows, of which the first n are the row's (n may be <= 0 or more
 * than TL): r[2j + dx] = j < n && ag[j] == dy*2 + dx ? gp[j] : 0 (the windows past n
 * get the argmax -1, which no column has) */
MCL_HOT static void tail_grad_block(const float *restrict gp, const float *restrict ag, int64_t n,
                                    int dy, float *restrict r)
{
    float t[2 * TL], gv[2 * TL]; /* arg and gated gout of the window of column u */
    const int m = n <= 0 ? 0 : n >= TL ? TL : (int)n; /* windows of the row */
    for (int j = 0; j < TL; j++) {
        t[2 * j] = t[2 * j + 1] = j < m ? ag[j] : -1.0f; /* -1: no column's argmax */
        gv[2 * j] = gv[2 * j + 1] = gp[j];
    }
    const float d2 = 2.0f * (float)dy;
    for (int u = 0; u < 2 * TL; u++) r[u] = t[u] == (float)(u % 2) + d2 ? gv[u] : 0.0f;
}

/* gp[j] = 0 + (y[j] > 0 ? g[j] * gs : 0) (relu's backward, and the dropout's with gs its
 * scale; gs = 1 without), ap[j] = arg[j], j < n */
MCL_HOT static void tail_gate(const float *restrict g, const float *restrict y,
                              const float *restrict arg, int64_t n, float gs, float *restrict gp,
                              float *restrict ap)
{
    for (int64_t j = 0; j < n; j++) {
        gp[j] = 0.0f + (y[j] > 0.0f ? g[j] * gs : 0.0f);
        ap[j] = arg[j];
    }
}

/* g, y, arg [Ho,Wo] of one plane -> gn [H,W], which has 2 TL floats of room past its
 * end. First the gated gout and the argmax of the whole plane go into gp, ap [Ho, Wo] (one
 * pass over the plane: with Wo = 14 a pass per row was shorter than a vector and ran as
 * scalar code with branches; each has TL floats of room past its end, which stay
 * zero), then the rows of gn in order, each in blocks of windows: a row's last block stores
 * zeros past the row's 2 Wo values (its lanes past Wo are masked), over an odd last column
 * and the start of the next row, which that row's own blocks store later. An odd last row
 * is set to 0. (maxpool2d's fresh 0 + v is v: v = 0 + .. is never -0.) */
static void tail_grad(const float *g, const float *y, const float *arg, int64_t H, int64_t W,
                      float gs, float *gn, float *gp, float *ap)
{
    const int64_t Ho = H / 2, Wo = W / 2;
    tail_gate(g, y, arg, Ho * Wo, gs, gp, ap);
    for (int64_t u = 0; u < 2 * Ho; u++) {
        const float *gi = gp + (u / 2) * Wo, *ai = ap + (u / 2) * Wo;
        for (int64_t j0 = 0; j0 < Wo || (W % 2 && j0 == Wo); j0 += TL)
            tail_grad_block(gi + j0, ai + j0, Wo - j0, (int)(u % 2), gn + u * W + 2 * j0);
    }
    if (H % 2) memset(gn + (H - 1) * W, 0, (size_t)W * sizeof(float));
}

/* Floats of the backward's scratch per chunk: the plane gn (with 2 TL floats of room past its
 * end) and tail_grad's gp and ap (TL floats of room each). */
static int64_t tail_bwd_scratch(int64_t H, int64_t W, int64_t *ldg)
{
    *ldg = (H / 2) * (W / 2) + TL;
    return H * W + 2 * TL + 2 * *ldg;
}

int64_t mcl_ref_ipr_bwd_scratch(int64_t H, int64_t W)
{
    int64_t ldg;
    return tail_bwd_scratch(H, W, &ldg);
}

/* *s1 = sum_j gn[j], *s2 = sum_j gn[j] * (x[j] - m) (fmaf), j < n (lanes as tail_sum_n); nx
 * (or NULL): the next plane's x [n] and g, y, ag [n/4], a line of x per block and a line of
 * each of the others every 4 blocks prefetched */
MCL_HOT static void tail_bwd_sums(const float *restrict x, const float *restrict gn, int64_t n,
                                  float m, const float *const *nx, double *s1, double *s2)
{
    double a1[TL] = {0.0}, a2[TL] = {0.0};
    for (int64_t j = 0; j < n;) {
        float f1[TL] = {0.0f}, f2[TL] = {0.0f};
        const int64_t e = n - j < TL * TL_RUN ? n : j + TL * TL_RUN;
        for (; j + TL <= e; j += TL) {
            if (nx) {
                __builtin_prefetch(nx[0] + j, 0, 3);
                if (j % (4 * TL) == 0) {
                    __builtin_prefetch(nx[1] + j / 4, 0, 3);
                    __builtin_prefetch(nx[2] + j / 4, 0, 3);
                    __builtin_prefetch(nx[3] + j / 4, 0, 3);
                }
            }
            MCL_SIMD for (int l = 0; l < TL; l++) {
                f1[l] += gn[j + l];
                f2[l] = fmaf(gn[j + l], x[j + l] - m, f2[l]);
            }
        }
        if (j < e) {
            const int k = (int)(e - j);
            MCL_SIMD for (int l = 0; l < TL; l++) {
                const float gv = l < k ? gn[j + l] : 0.0f, d = l < k ? x[j + l] - m : 0.0f;
                f1[l] += gv;
                f2[l] = fmaf(gv, d, f2[l]);
            }
            j = e;
        }
        for (int l = 0; l < TL; l++) {
            a1[l] += (double)f1[l];
            a2[l] += (double)f2[l];
        }
    }
    *s1 = lanes_total(a1);
    *s2 = lanes_total(a2);
}

/* gx[j] (+)= fmaf(gn[j], cg, fmaf(x[j] - m, ca, cb)), j < n (fresh: 0 + the term) */
MCL_HOT static void tail_bwd_dx(const float *restrict x, const float *restrict gn, int64_t n,
                                float m, float cg, float ca, float cb, float *restrict gx,
                                int fresh)
{
    if (fresh)
        MCL_SIMD for (int64_t j = 0; j < n; j++)
            gx[j] = 0.0f + fmaf(gn[j], cg, fmaf(x[j] - m, ca, cb));
    else
        MCL_SIMD for (int64_t j = 0; j < n; j++)
            gx[j] += fmaf(gn[j], cg, fmaf(x[j] - m, ca, cb));
}

/* tail_bwd_dx row by row: x, gn [H, W], gx's rows ldx floats apart. With AVX-512 each row in
 * 16-float vectors, its last one masked (a vector fmadd rounds once, as fmaf: the same bits),
 * where the loop per row left a 28-float row's last 12 to scalar code. */
static void tail_bwd_dx_rows(const float *restrict x, const float *restrict gn, int64_t H, int64_t W,
                             float m, float cg, float ca, float cb, float *restrict gx, int64_t ldx,
                             int fresh)
{
#if defined(__AVX512F__) && defined(FP_FAST_FMAF)
    const __m512 mv = _mm512_set1_ps(m), gv = _mm512_set1_ps(cg), av = _mm512_set1_ps(ca),
                 bv = _mm512_set1_ps(cb), zero = _mm512_setzero_ps();
    for (int64_t i = 0; i < H; i++) {
        const float *xi = x + i * W, *gi = gn + i * W;
        float *oi = gx + i * ldx;
        for (int64_t j = 0; j < W; j += 16) {
            const __mmask16 k = W - j >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (W - j)) - 1);
            const __m512 d = _mm512_sub_ps(_mm512_maskz_loadu_ps(k, xi + j), mv);
            const __m512 v = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(k, gi + j), gv, _mm512_fmadd_ps(d, av, bv));
            const __m512 old = fresh ? zero : _mm512_maskz_loadu_ps(k, oi + j);
            _mm512_mask_storeu_ps(oi + j, k, _mm512_add_ps(old, v));
        }
    }
#else
    for (int64_t i = 0; i < H; i++) tail_bwd_dx(x + i * W, gn + i * W, W, m, cg, ca, cb, gx + i * ldx, fresh);
#endif
}

/* Streamed gx: a fresh gx larger than this is written with streaming stores (whole 64-byte
 * lines go to memory without being read first: the read for ownership of a normal store was
 * a third of the backward's traffic on Conv-4's first layer, and the gradient, 80 MB there,
 * does not stay in the caches for its reader anyway). */
#define TAIL_STREAM_MIN ((int64_t)8 << 20)
#if defined(__AVX512F__) && defined(FP_FAST_FMAF)
#define TAIL_CAN_STREAM 1
/* tail_bwd_dx's fresh store, the aligned 16-float blocks streamed: the same fmaf sequence
 * per element (a vector fmadd rounds once, as fmaf), so the same bits. The lines a plane
 * shares with its neighbours (planes need not start on a line) get normal stores. */
MCL_HOT static void tail_bwd_dx_stream(const float *restrict x, const float *restrict gn, int64_t n,
                                       float m, float cg, float ca, float cb, float *restrict gx)
{
    int64_t j = 0; /* the partial lines at both ends: tail_bwd_dx's fresh store */
    while (j < n && ((uintptr_t)(gx + j) & 63)) j++;
    tail_bwd_dx(x, gn, j, m, cg, ca, cb, gx, 1);
    const __m512 mv = _mm512_set1_ps(m), gv = _mm512_set1_ps(cg), av = _mm512_set1_ps(ca),
                 bv = _mm512_set1_ps(cb), zero = _mm512_setzero_ps();
    for (; j + 16 <= n; j += 16) {
        const __m512 d = _mm512_sub_ps(_mm512_loadu_ps(x + j), mv);
        const __m512 v = _mm512_fmadd_ps(_mm512_loadu_ps(gn + j), gv, _mm512_fmadd_ps(d, av, bv));
        _mm512_stream_ps(gx + j, _mm512_add_ps(zero, v));
    }
    tail_bwd_dx(x + j, gn + j, n - j, m, cg, ca, cb, gx + j, 1);
}
#else
#define TAIL_CAN_STREAM 0
#endif

/* The backward of one plane (x, gx [H,W]; g, y, ag [Ho,Wo]; m, rs its saved statistics, gm
 * its gamma, gs the dropout's scale (1 without); s the chunk's scratch, tail_bwd_scratch
 * floats; next: the next plane in memory is this thread's too, fetched while this one is
 * computed on): gn (tail_grad), then
 * *sg = sum gn, *sgx = sum gn * xhat, and gx when not NULL (rows ldx floats apart: W, or the
 * rows of a grid, conv_block.c's, then stored row by row):
 *   gx = gn * (rs gm) + (x - m) * (-rs^2 mean_dx) + (-rs mean_d),
 *   mean_d = gm sg / N, mean_dx = gm sgx / N. */
void mcl_ref_ipr_bwd_plane(const float *x, const float *g, const float *y, const float *ag, int64_t H,
                           int64_t W, float m, float rs, double gm, float gs, float *s, float *gx,
                           int64_t ldx, int fresh, int next, double *sg, double *sgx)
{
    const int64_t N = H * W, P = (H / 2) * (W / 2);
    int64_t ldg;
    (void)tail_bwd_scratch(H, W, &ldg);
    float *gp = s + N + 2 * TL;
    tail_grad(g, y, ag, H, W, gs, s, gp, gp + ldg);
    const float *nx[4] = {x + N, g + P, y + P, ag + P};
    if (next && gx && fresh < 2) {
        tail_prefetch(g + P, P, 0);
        tail_prefetch(y + P, P, 0);
        tail_prefetch(ag + P, P, 0);
        tail_prefetch(x + N, N, 0);
        if (ldx == W) tail_prefetch(gx + N, N, 1); /* (a grid is the caller's, in its cache) */
    }
    double s2;
    tail_bwd_sums(x, s, N, m, next && !(gx && fresh < 2) ? nx : NULL, sg, &s2);
    *sgx = (double)rs * s2;
    if (!gx) return;
    const double r = (double)rs, mean_d = gm * *sg / (double)N, mean_dx = gm * *sgx / (double)N;
    const float cg = (float)(r * gm), ca = (float)(-r * r * mean_dx), cb = (float)(-r * mean_d);
    if (ldx != W) { /* rows of a grid: each row as a plane's, the same floats */
        tail_bwd_dx_rows(x, s, H, W, m, cg, ca, cb, gx, ldx, fresh);
        return;
    }
#if TAIL_CAN_STREAM
    if (fresh == 2) {
        tail_bwd_dx_stream(x, s, N, m, cg, ca, cb, gx);
        return;
    }
#endif
    tail_bwd_dx(x, s, N, m, cg, ca, cb, gx, fresh);
}

mcl_status mcl_ref_inorm_pool_relu_bwd(mcl_backend *be, const mcl_op_args *a)
{
    (void)be;
    const mcl_tensor *X = a->in[0];
    const int64_t B = X->shape[0], C = X->shape[1], H = X->shape[2], W = X->shape[3];
    const int64_t N = H * W, P = (H / 2) * (W / 2);
    const float *x = mcl_ref_ptr(X), *gamma = mcl_ref_ptr(a->in[1]);
    const float *y = mcl_ref_ptr(a->out[0]), *mean = mcl_ref_ptr(a->out[1]);
    const float *rstd = mcl_ref_ptr(a->out[2]), *arg = mcl_ref_ptr(a->out[3]);
    const float *g = mcl_ref_ptr(a->gout[0]);
    float *gx = a->gin[0] ? mcl_ref_ptr(a->gin[0]) : NULL;
    float *ggamma = a->gin[1] ? mcl_ref_ptr(a->gin[1]) : NULL;
    float *gbeta = a->gin[2] ? mcl_ref_ptr(a->gin[2]) : NULL;
    if (!gx && !ggamma && !gbeta) return MCL_OK;
    const float gs = a->p.f[1] > 0.0f ? 1.0f / (1.0f - a->p.f[1]) : 1.0f; /* dropout's scale */
    const int64_t nchunks = B < BWD_CHUNKS ? B : BWD_CHUNKS;
    /* per chunk and channel: sum gn * xhat, then sum gn */
    double *part = calloc((size_t)(nchunks * 2 * C), sizeof(double));
    int64_t ldg;
    const int64_t ns = tail_bwd_scratch(H, W, &ldg);
    float *sc = calloc((size_t)(nchunks * ns), sizeof(float)); /* per chunk */
    if (!part || !sc) {
        free(part);
        free(sc);
        return MCL_ERR_OOM;
    }
    /* fresh gin (ref.h), asked in the order they are written below */
    int fresh_x = gx ? mcl_ref_grad_fresh(a->gin[0]) : 0;
    /* 2: fresh and streamed (tail_bwd_dx_stream) */
    if (fresh_x && TAIL_CAN_STREAM && B * C * N * (int64_t)sizeof(float) > TAIL_STREAM_MIN) fresh_x = 2;
    const int fresh_g = ggamma ? mcl_ref_grad_fresh(a->gin[1]) : 0;
    const int fresh_b = gbeta ? mcl_ref_grad_fresh(a->gin[2]) : 0;
#pragma omp parallel for schedule(static) if (B * C * N > PAR_MIN)
    for (int64_t ch = 0; ch < nchunks; ch++) {
        double *acc_g = part + ch * 2 * C, *acc_b = acc_g + C;
        for (int64_t b = B * ch / nchunks; b < B * (ch + 1) / nchunks; b++)
            for (int64_t c = 0; c < C; c++) {
                const int64_t r = b * C + c;
                double sg, sgx;
                mcl_ref_ipr_bwd_plane(x + r * N, g + r * P, y + r * P, arg + r * P, H, W, mean[r],
                               rstd[r], (double)gamma[c], gs, sc + ch * ns, gx ? gx + r * N : NULL, W,
                               fresh_x, r + 1 < (B * (ch + 1) / nchunks) * C, &sg, &sgx);
                acc_g[c] += sgx;
                acc_b[c] += sg;
            }
#if TAIL_CAN_STREAM
        if (fresh_x == 2) _mm_sfence(); /* the streamed stores before the others' reads */
#endif
    }
    mcl_ref_norm_affine_grads(part, nchunks, C, ggamma, fresh_g, gbeta, fresh_b);
    free(sc);
    free(part);
    return MCL_OK;
}
