/* inorm.c — reference instance_norm and the residual block's norms that take the pointwise ops
 * after them into the same pass (the conv family of ops.def, kept out of conv.c by purpose):
 *   instance_norm        y = n
 *   inorm_relu           y = relu(n)                                    (models/smn res_block)
 *   inorm_add_pool_relu  y = relu(maxpool2d(n + s))                     (the block's tail)
 * with n = instance_norm(x), per image b and channel c over the N = H*W values of the plane
 * r = b*C + c:
 *   mean[r]  = (1/N) sum_j x[r, j]
 *   var[r]   = (1/N) sum_j (x[r, j] - mean[r])^2                 (biased)
 *   rstd[r]  = 1 / sqrt(var[r] + eps)
 *   n[r, j]  = (x[r, j] - mean[r]) * rstd[r] * gamma[c] + beta[c]   (in double, rounded once)
 *
 *   in[0] x [B,C,H,W], in[1] gamma [C], in[2] beta [C] (inorm_add_pool_relu: in[3] s, x's shape);
 *   p.f[0] = eps; out[0] y, out[1] mean [B*C], out[2] rstd [B*C] (only y is differentiable);
 *   inorm_add_pool_relu: y [B,C,Ho,Wo] (Ho = H/2, Wo = W/2, floor) and out[3] arg [B,C,Ho,Wo],
 *   z = n + s (float), arg = dy*2 + dx of the first maximum of z[2i + dy, 2j + dx],
 *   y[i, j] = max(z at arg, 0).
 *
 * Backward. With gn the gradient reaching n,
 *   instance_norm        gn = gout
 *   inorm_relu           gn = 0 + (y > 0 ? gout : 0)               (relu's, into a fresh buffer)
 *   inorm_add_pool_relu  gn = 0 + (y > 0 ? gout : 0) at each window's arg, 0 elsewhere
 *                        (maxpool2d's then relu's: y > 0 exactly where the window's z > 0),
 *                        and gs += gn (add's)
 * and xhat = (x - mean) * rstd (float, from the saved values), dxhat_j = gn[r, j] * gamma[c]:
 *   gx[r, j]  += rstd[r] * (dxhat_j - (1/N) sum_k dxhat_k - xhat_j * (1/N) sum_k dxhat_k xhat_k)
 *   ggamma[c] += sum_b sum_j gn[r, j] * xhat[r, j]
 *   gbeta[c]  += sum_b sum_j gn[r, j]
 * The fused ops compute n, gn and every sum with the operations of instance_norm, relu, add and
 * maxpool2d in a row, in the same order: the same floats as the ops one after the other (checked
 * by tests/test-naive), without the passes over the full-size tensors between them (the
 * pointwise ops of the Online-X ResNet window were a third of its time: doc/reference-backend.md).
 * The readable forms: src/ref/naive/norm.c.
 *
 * Statistics as in norm.c (double, two passes), summed in MCL_REF_SUM_LANES fixed lanes added
 * pairwise. Forward: planes in parallel. Backward: the images cut into BWD_CHUNKS fixed chunks,
 * one thread each, walked plane by plane in memory order: the plane sums feed gx of that plane
 * and the chunk's double sums of the channel's gamma/beta gradients, which are added over the
 * chunks in order at the end. So every result is the same for any thread count. Backward
 * ACCUMULATES into the non-NULL gin[k], or stores into a fresh one (ref.h: mcl_ref_grad_fresh).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ref.h"

/* Below this many elements a loop runs on the calling thread (as conv.c). */
#define PAR_MIN 32768
/* Backward: fixed chunks of images whose gamma/beta sums are kept apart (as conv.c). */
#define BWD_CHUNKS 16
#define SUM_LANES MCL_REF_SUM_LANES

/* the SUM_LANES double lanes added pairwise */
static double lanes_total(const double *acc)
{
    return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

/* sum_j (x[j] - mu)^2, j < n */
MCL_HOT static double dsum_sqdev(const float *x, int64_t n, double mu)
{
    double acc[SUM_LANES] = {0.0};
    int64_t j = 0;
    for (; j + SUM_LANES <= n; j += SUM_LANES)
        MCL_SIMD for (int l = 0; l < SUM_LANES; l++) {
            const double d = (double)x[j + l] - mu;
            acc[l] += d * d;
        }
    for (int l = 0; j < n; j++, l++) {
        const double d = (double)x[j] - mu;
        acc[l] += d * d;
    }
    return lanes_total(acc);
}

/* *sg = sum_j g[j],  *sgx = sum_j g[j] * xhat_j  with xhat_j = (x[j] - m) * rs (float), j < n */
MCL_HOT static void dsum_g_gxhat(const float *x, const float *g, int64_t n, float m, float rs,
                                 double *sg, double *sgx)
{
    double a[SUM_LANES] = {0.0}, b[SUM_LANES] = {0.0};
    int64_t j = 0;
    for (; j + SUM_LANES <= n; j += SUM_LANES)
        MCL_SIMD for (int l = 0; l < SUM_LANES; l++) {
            const float xhat = (x[j + l] - m) * rs;
            a[l] += (double)g[j + l];
            b[l] += (double)g[j + l] * (double)xhat;
        }
    for (int l = 0; j < n; j++, l++) {
        const float xhat = (x[j] - m) * rs;
        a[l] += (double)g[j];
        b[l] += (double)g[j] * (double)xhat;
    }
    *sg = lanes_total(a);
    *sgx = lanes_total(b);
}

/* The mean and 1/sqrt(var + eps) of one plane x [n] */
static void plane_stats(const float *x, int64_t n, double eps, double *mu, double *rs)
{
    *mu = mcl_ref_dsum(x, n) / (double)n;
    *rs = 1.0 / sqrt(dsum_sqdev(x, n, *mu) / (double)n + eps);
}

/* n = (x - mu) * rs * gm + bt in double, rounded once */
static inline float norm_value(float x, double mu, double rs, double gm, double bt)
{
    return (float)(((double)x - mu) * rs * gm + bt);
}

/* y[j] = n_j (relu = 0) or relu(n_j) = n_j > 0 ? n_j : 0 (relu = 1, relu's select), j < n */
MCL_HOT static void norm_affine(const float *restrict x, int64_t n, double mu, double rs, double gm,
                                double bt, int relu, float *restrict y)
{
    if (relu)
        for (int64_t j = 0; j < n; j++) {
            const float v = norm_value(x[j], mu, rs, gm, bt);
            y[j] = v > 0.0f ? v : 0.0f;
        }
    else
        for (int64_t j = 0; j < n; j++) y[j] = norm_value(x[j], mu, rs, gm, bt);
}

/* Windows a pooling block takes (one 512-bit vector of floats), for rows shorter than POOL_ROW
 * windows: a row of 8 windows or more runs a vector loop along the row instead (padded to 16,
 * it was slower); a row of POOL_FEW windows or fewer takes them one by one (padding them to a
 * block cost more on 4 x 4 planes) */
#define POOL_TL 16
#define POOL_ROW 8
#define POOL_FEW 2
/* norm_add_pool's z on the stack for the short rows: POOL_Z floats (4 KiB), whole row pairs */
#define POOL_Z 1024

/* One window: its values z00, z01 (row 0), z10, z11 (row 1) -> *y = relu of the first maximum
 * (maxpool2d's strict > in the order dy*2 + dx), *ag = its index */
static inline void pool_window(float z00, float z01, float z10, float z11, float *y, float *ag)
{
    float m = z00, idx = 0.0f;
    idx = z01 > m ? 1.0f : idx;
    m = z01 > m ? z01 : m;
    idx = z10 > m ? 2.0f : idx;
    m = z10 > m ? z10 : m;
    idx = z11 > m ? 3.0f : idx;
    m = z11 > m ? z11 : m;
    *y = m > 0.0f ? m : 0.0f;
    *ag = idx;
}

/* The windows of the row pairs of rows [0, 2 np) of z (rows W long, W / 2 < POOL_ROW windows)
 * into y, ag (rows W / 2 long): pool_window of each, a row pair's windows as one block of
 * POOL_TL of a fixed length (padded copies, the results past the row not stored), so that
 * the selects are vector blends: a loop over 4 windows ran as scalar code whose selects were
 * branches, mispredicted on random data. */
MCL_HOT static void pool_rows(const float *z, int64_t np, int64_t W, float *restrict y, float *restrict ag)
{
    const int64_t Wo = W / 2;
    for (int64_t p = 0; p < np; p++) {
        const float *z0 = z + 2 * p * W, *z1 = z0 + W;
        float *yp = y + p * Wo, *ap = ag + p * Wo;
        if (Wo <= POOL_FEW) {
            for (int64_t j = 0; j < Wo; j++)
                pool_window(z0[2 * j], z0[2 * j + 1], z1[2 * j], z1[2 * j + 1], &yp[j], &ap[j]);
            continue;
        }
        float pa[2 * POOL_TL], pb[2 * POOL_TL], ym[POOL_TL], im[POOL_TL];
        for (int u = 0; u < 2 * POOL_TL; u++) {
            pa[u] = u < 2 * Wo ? z0[u] : 0.0f;
            pb[u] = u < 2 * Wo ? z1[u] : 0.0f;
        }
        for (int j = 0; j < POOL_TL; j++)
            pool_window(pa[2 * j], pa[2 * j + 1], pb[2 * j], pb[2 * j + 1], &ym[j], &im[j]);
        for (int64_t j = 0; j < Wo; j++) {
            yp[j] = ym[j];
            ap[j] = im[j];
        }
    }
}

/* z[u] = n + s (add's float) of the n values x[u], s[u] */
MCL_HOT static void norm_add(const float *restrict x, const float *restrict s, int64_t n, double mu,
                             double rs, double gm, double bt, float *restrict z)
{
    for (int64_t u = 0; u < n; u++) z[u] = norm_value(x[u], mu, rs, gm, bt) + s[u];
}

/* One plane's windows: x, s [H,W] -> y, ag [H/2, W/2], pool_window of z = n + s. Rows of
 * POOL_ROW windows or more: a vector loop along each row pair, z formed window by window.
 * Shorter rows (the ResNet's 8 x 8 and 4 x 4 planes): z of as many whole row pairs as POOL_Z
 * floats hold in one contiguous pass (vectorized; a pass per row ran at scalar speed, a vector
 * being longer than the row), then pool_rows. */
MCL_HOT static void norm_add_pool(const float *restrict x, const float *restrict s, int64_t H, int64_t W,
                                  double mu, double rs, double gm, double bt, float *restrict y,
                                  float *restrict ag)
{
    const int64_t Ho = H / 2, Wo = W / 2;
    if (Wo >= POOL_ROW) {
        for (int64_t i = 0; i < Ho; i++) {
            const float *x0 = x + 2 * i * W, *x1 = x0 + W, *s0 = s + 2 * i * W, *s1 = s0 + W;
            float *yi = y + i * Wo, *ai = ag + i * Wo;
            MCL_SIMD for (int64_t j = 0; j < Wo; j++) {
                const float z00 = norm_value(x0[2 * j], mu, rs, gm, bt) + s0[2 * j];
                const float z01 = norm_value(x0[2 * j + 1], mu, rs, gm, bt) + s0[2 * j + 1];
                const float z10 = norm_value(x1[2 * j], mu, rs, gm, bt) + s1[2 * j];
                const float z11 = norm_value(x1[2 * j + 1], mu, rs, gm, bt) + s1[2 * j + 1];
                pool_window(z00, z01, z10, z11, &yi[j], &ai[j]);
            }
        }
        return;
    }
    float z[POOL_Z];
    const int64_t per = POOL_Z / (2 * W); /* row pairs a pass (W < 2 POOL_ROW: at least 32) */
    for (int64_t i = 0; i < Ho; i += per) {
        const int64_t np = Ho - i < per ? Ho - i : per;
        norm_add(x + 2 * i * W, s + 2 * i * W, 2 * np * W, mu, rs, gm, bt, z);
        pool_rows(z, np, W, y + i * Wo, ag + i * Wo);
    }
}

/* The forwards. kind: what follows the norm (the top of this file). */
enum { IN_PLAIN, IN_RELU, IN_ADD_POOL_RELU };

static mcl_status inorm_fwd(const mcl_op_args *a, int kind)
{
    const mcl_tensor *X = a->in[0];
    const int64_t C = X->shape[1], R = X->shape[0] * C, H = X->shape[2], W = X->shape[3];
    const int64_t N = H * W, P = (H / 2) * (W / 2);
    const float *x = mcl_ref_ptr(X), *gamma = mcl_ref_ptr(a->in[1]), *beta = mcl_ref_ptr(a->in[2]);
    const float *s = kind == IN_ADD_POOL_RELU ? mcl_ref_ptr(a->in[3]) : NULL;
    float *y = mcl_ref_ptr(a->out[0]), *mean = mcl_ref_ptr(a->out[1]), *rstd = mcl_ref_ptr(a->out[2]);
    float *ag = kind == IN_ADD_POOL_RELU ? mcl_ref_ptr(a->out[3]) : NULL;
    const double eps = (double)a->p.f[0];
#pragma omp parallel for schedule(static) if (R * N > PAR_MIN)
    for (int64_t r = 0; r < R; r++) {
        const float *xr = x + r * N;
        double mu, rs;
        plane_stats(xr, N, eps, &mu, &rs);
        mean[r] = (float)mu;
        rstd[r] = (float)rs;
        const double gm = (double)gamma[r % C], bt = (double)beta[r % C];
        if (kind == IN_ADD_POOL_RELU)
            norm_add_pool(xr, s + r * N, H, W, mu, rs, gm, bt, y + r * P, ag + r * P);
        else
            norm_affine(xr, N, mu, rs, gm, bt, kind == IN_RELU, y + r * N);
    }
    return MCL_OK;
}

/* ---- backward ------------------------------------------------------------------------- */

/* ggamma[c] (+)= sum over chunks of part[ch, 0, c], gbeta[c] (+)= of part[ch, 1, c] (ref.h) */
void mcl_ref_norm_affine_grads(const double *part, int64_t nchunks, int64_t C, float *ggamma,
                               int fresh_g, float *gbeta, int fresh_b)
{
    for (int64_t c = 0; c < C; c++) {
        double sgx = 0.0, sg = 0.0;
        for (int64_t ch = 0; ch < nchunks; ch++) {
            sgx += part[ch * 2 * C + c];
            sg += part[ch * 2 * C + C + c];
        }
        if (ggamma) ggamma[c] = (fresh_g ? 0.0f : ggamma[c]) + (float)sgx;
        if (gbeta) gbeta[c] = (fresh_b ? 0.0f : gbeta[c]) + (float)sg;
    }
}

/* gx[j] += rs * (dxhat_j - mean_d - xhat_j * mean_dx), dxhat_j = g[j] * gm,
 * xhat_j = (x[j] - m) * rs (float), j < n (fresh: gx[j] = 0 + the term) */
MCL_HOT static void norm_dx(const float *restrict x, const float *restrict g, int64_t n, float m,
                            float rs, double gm, double mean_d, double mean_dx,
                            float *restrict gx, int fresh)
{
    if (fresh)
        for (int64_t j = 0; j < n; j++) {
            const float xhat = (x[j] - m) * rs;
            const double dxhat = (double)g[j] * gm;
            gx[j] = 0.0f + (float)((double)rs * (dxhat - mean_d - (double)xhat * mean_dx));
        }
    else
        for (int64_t j = 0; j < n; j++) {
            const float xhat = (x[j] - m) * rs;
            const double dxhat = (double)g[j] * gm;
            gx[j] += (float)((double)rs * (dxhat - mean_d - (double)xhat * mean_dx));
        }
}

/* inorm_relu's gn of one plane: gn[j] = 0 + (y[j] > 0 ? g[j] : 0), j < n */
MCL_HOT static void relu_gate(const float *restrict g, const float *restrict y, int64_t n,
                              float *restrict gn)
{
    for (int64_t j = 0; j < n; j++) gn[j] = 0.0f + (y[j] > 0.0f ? g[j] : 0.0f);
}

/* One window's part of gn: its gated gradient v = 0 + (y > 0 ? g : 0) at its arg t (r0[0],
 * r0[1], r1[0], r1[1] for t = 0, 1, 2, 3), 0 at the three others */
static inline void gate_window(float g, float y, float t, float *r0, float *r1)
{
    const float v = 0.0f + (y > 0.0f ? g : 0.0f);
    r0[0] = t == 0.0f ? v : 0.0f;
    r0[1] = t == 1.0f ? v : 0.0f;
    r1[0] = t == 2.0f ? v : 0.0f;
    r1[1] = t == 3.0f ? v : 0.0f;
}

/* POOL_TL windows' part of gn (gate_window; window j at r0 + 2j, r1 + 2j) */
static inline void gate_block(const float *restrict g, const float *restrict y, const float *restrict ag,
                              float *restrict r0, float *restrict r1)
{
    for (int j = 0; j < POOL_TL; j++) gate_window(g[j], y[j], ag[j], r0 + 2 * j, r1 + 2 * j);
}

/* inorm_add_pool_relu's gn of one plane [H,W] from g, y, ag [H/2, W/2]: the window's gated
 * gradient at its arg, 0 at the three others and on an odd last row/column; gs (or NULL) +=
 * gn (fresh_s: gs = 0 + gn). A row shorter than POOL_ROW windows as one block of POOL_TL
 * windows of a fixed length, as pool_rows (padded copies: y = 0 past the row, so v = 0, not
 * stored). */
MCL_HOT static void pool_gate(const float *restrict g, const float *restrict y, const float *restrict ag,
                              int64_t H, int64_t W, float *restrict gn, float *restrict gs, int fresh_s)
{
    const int64_t Ho = H / 2, Wo = W / 2;
    if (H % 2 || W % 2) memset(gn, 0, (size_t)(H * W) * sizeof(float));
    if (Wo >= POOL_ROW) { /* rows of 8 windows or more: a vector loop along the row */
        for (int64_t i = 0; i < Ho; i++) {
            float *r0 = gn + 2 * i * W, *r1 = r0 + W;
            MCL_SIMD for (int64_t j = 0; j < Wo; j++)
                gate_window(g[i * Wo + j], y[i * Wo + j], ag[i * Wo + j], r0 + 2 * j, r1 + 2 * j);
        }
    } else { /* shorter rows: a window or two one by one, else one block of POOL_TL, padded */
        for (int64_t i = 0; i < Ho; i++) {
            const int64_t q = i * Wo;
            float *r0 = gn + 2 * i * W, *r1 = r0 + W;
            if (Wo <= POOL_FEW) {
                for (int64_t j = 0; j < Wo; j++) gate_window(g[q + j], y[q + j], ag[q + j], r0 + 2 * j, r1 + 2 * j);
                continue;
            }
            float gp[POOL_TL], yp[POOL_TL], ap[POOL_TL], ra[2 * POOL_TL], rb[2 * POOL_TL];
            for (int j = 0; j < POOL_TL; j++) {
                gp[j] = j < Wo ? g[q + j] : 0.0f;
                yp[j] = j < Wo ? y[q + j] : 0.0f;
                ap[j] = j < Wo ? ag[q + j] : 0.0f;
            }
            gate_block(gp, yp, ap, ra, rb);
            for (int64_t u = 0; u < 2 * Wo; u++) {
                r0[u] = ra[u];
                r1[u] = rb[u];
            }
        }
    }
    if (!gs) return;
    const int64_t N = H * W;
    if (fresh_s)
        for (int64_t j = 0; j < N; j++) gs[j] = 0.0f + gn[j];
    else
        for (int64_t j = 0; j < N; j++) gs[j] += gn[j];
}

static mcl_status inorm_bwd(const mcl_op_args *a, int kind)
{
    const mcl_tensor *X = a->in[0];
    const int64_t B = X->shape[0], C = X->shape[1], H = X->shape[2], W = X->shape[3];
    const int64_t N = H * W, P = (H / 2) * (W / 2);
    const float *x = mcl_ref_ptr(X), *gamma = mcl_ref_ptr(a->in[1]);
    const float *y = mcl_ref_ptr(a->out[0]), *mean = mcl_ref_ptr(a->out[1]);
    const float *rstd = mcl_ref_ptr(a->out[2]), *g = mcl_ref_ptr(a->gout[0]);
    const float *ag = kind == IN_ADD_POOL_RELU ? mcl_ref_ptr(a->out[3]) : NULL;
    float *gx = a->gin[0] ? mcl_ref_ptr(a->gin[0]) : NULL;
    float *ggamma = a->gin[1] ? mcl_ref_ptr(a->gin[1]) : NULL;
    float *gbeta = a->gin[2] ? mcl_ref_ptr(a->gin[2]) : NULL;
    float *gs = kind == IN_ADD_POOL_RELU && a->gin[3] ? mcl_ref_ptr(a->gin[3]) : NULL;
    if (!gx && !ggamma && !gbeta && !gs) return MCL_OK;
    const int64_t nchunks = B < BWD_CHUNKS ? B : BWD_CHUNKS;
    /* per chunk and channel: sum gn * xhat, then sum gn; the fused ops' gn planes, one a chunk */
    double *part = calloc((size_t)(nchunks * 2 * C), sizeof(double));
    float *gnb = kind != IN_PLAIN ? malloc((size_t)(nchunks * N) * sizeof(float)) : NULL;
    if (!part || (kind != IN_PLAIN && !gnb)) {
        free(part);
        free(gnb);
        return MCL_ERR_OOM;
    }
    /* fresh gin (ref.h), asked in the order they are written below: the skip's (add's
     * backward) before x's, then gamma's and beta's */
    const int fresh_s = gs ? mcl_ref_grad_fresh(a->gin[3]) : 0;
    const int fresh_x = gx ? mcl_ref_grad_fresh(a->gin[0]) : 0;
    const int fresh_g = ggamma ? mcl_ref_grad_fresh(a->gin[1]) : 0;
    const int fresh_b = gbeta ? mcl_ref_grad_fresh(a->gin[2]) : 0;
#pragma omp parallel for schedule(static) if (B * C * N > PAR_MIN)
    for (int64_t ch = 0; ch < nchunks; ch++) {
        double *acc_g = part + ch * 2 * C, *acc_b = acc_g + C;
        float *gn = gnb ? gnb + ch * N : NULL;
        for (int64_t b = B * ch / nchunks; b < B * (ch + 1) / nchunks; b++)
            for (int64_t c = 0; c < C; c++) {
                const int64_t r = b * C + c;
                const float *xr = x + r * N, *gr = g + r * N;
                if (kind == IN_RELU) {
                    relu_gate(gr, y + r * N, N, gn);
                    gr = gn;
                } else if (kind == IN_ADD_POOL_RELU) {
                    pool_gate(g + r * P, y + r * P, ag + r * P, H, W, gn, gs ? gs + r * N : NULL, fresh_s);
                    gr = gn;
                }
                const float m = mean[r], rs = rstd[r];
                const double gm = (double)gamma[c];
                double sg, sgx;
                dsum_g_gxhat(xr, gr, N, m, rs, &sg, &sgx);
                acc_g[c] += sgx;
                acc_b[c] += sg;
                if (gx)
                    norm_dx(xr, gr, N, m, rs, gm, gm * sg / (double)N, gm * sgx / (double)N,
                            gx + r * N, fresh_x);
            }
    }
    mcl_ref_norm_affine_grads(part, nchunks, C, ggamma, fresh_g, gbeta, fresh_b);
    free(gnb);
    free(part);
    return MCL_OK;
}

/* The ops' entry points (ref.h, from ops.def): inorm_fwd / inorm_bwd of their kind */
#define INORM_OP(name, kind)                                                                    \
    mcl_status mcl_ref_##name##_fwd(mcl_backend *be, const mcl_op_args *a)                      \
    {                                                                                           \
        (void)be;                                                                               \
        return inorm_fwd(a, kind);                                                              \
    }                                                                                           \
    mcl_status mcl_ref_##name##_bwd(mcl_backend *be, const mcl_op_args *a)                      \
    {                                                                                           \
        (void)be;                                                                               \
        return inorm_bwd(a, kind);                                                              \
    }
INORM_OP(instance_norm, IN_PLAIN)
INORM_OP(inorm_relu, IN_RELU)
INORM_OP(inorm_add_pool_relu, IN_ADD_POOL_RELU)
