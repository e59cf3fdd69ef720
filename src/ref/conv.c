/* conv.c — reference convolution family, NCHW: conv2d, maxpool2d, instance_norm.
 *
 * conv2d is im2col + the packed GEMM of gemm.c (mcl_ref_sgemm):
 *   - im2col lays the k x k patches of an image out as the columns of a matrix
 *     col [C*k*k, Ho*Wo], so that the convolution of one image is one product
 *     out_b [O, Ho*Wo] = W [O, C*k*k] · col_b;
 *   - images with few output pixels (Ho*Wo < CONV_NMIN) are grouped: the columns of G images
 *     sit side by side in one "wide" col [C*k*k, G*Ho*Wo], so one GEMM serves the group;
 *   - backward: gx is col2im of Wᵀ · g (every col entry goes back to the pixel it was copied
 *     from), gw = Σ_b g_b · col_bᵀ (one GEMM per chunk of images, K = the chunk's pixels),
 *     gb = the sum of g over images and pixels.
 * GEMM results depend only on the row of op(A), the column of op(B) and K (gemm.c), so
 * grouping images changes no bits. Groups run in parallel (OpenMP), each thread with its own
 * buffers; a GEMM inside the parallel loop runs on its thread. gw is summed over image
 * chunks in order (chunk sizes depend on the shapes only), with the GEMM's own threads.
 * So every result is the same for any thread count.
 *
 * maxpool2d: 2 x 2 windows, stride 2, floor; the argmax (dy*2 + dx, first maximum) is saved
 * as a float output and backward routes the gradient there.
 * instance_norm: layer normalization (norm.c) of every (image, channel) plane over its H*W
 * values, with a per-channel affine gamma, beta.
 *
 * Sums of the reference accumulate in double in a fixed order (bias gradient, col2im, norm
 * statistics; long sums in SUM_LANES interleaved lanes added pairwise at the end, an order
 * that depends on the length only). Backward ACCUMULATES into the non-NULL gin[k]. The
 * conv2d scratch buffers (im2col) are the only allocations: on failure the op returns
 * MCL_ERR_OOM.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ref.h"

/* Below this many elements (or multiply-adds for conv2d) a loop runs on the calling thread. */
#define PAR_MIN 32768
/* conv2d groups images until a GEMM has at least this many columns (output pixels). */
#define CONV_NMIN 256
/* conv2d weight gradient: images per chunk chosen so that a chunk has about this many
 * pixels (the K of one GEMM); its im2col is KK x GW_COLS floats. */
#define GW_COLS 4096
/* Lanes of the fixed-order double sums below. */
#define SUM_LANES 8

/* Compiler help for the inner loops, with no effect on the results (as in gemm.c): MCL_HOT
 * compiles a helper at -O3, where GCC vectorizes the float/double conversions that -O2
 * leaves scalar; MCL_COPY is MCL_HOT that keeps short copy loops as loops (not calls of
 * memcpy/memset, which cost more than a 16-float row); MCL_SIMD marks loops over
 * independent lanes. Without -ffast-math nothing is reassociated: every element sees the
 * same operations in the same order (measured: identical bits with and without). */
#if defined(__GNUC__) && !defined(__clang__)
#define MCL_HOT __attribute__((optimize("O3")))
#define MCL_COPY __attribute__((optimize("O3", "no-tree-loop-distribute-patterns")))
#else
#define MCL_HOT
#define MCL_COPY
#endif
#ifdef _OPENMP
#define MCL_SIMD _Pragma("omp simd")
#else
#define MCL_SIMD
#endif

/* ---- fixed-order double sums ---------------------------------------------------------
 * Element j goes to lane j % SUM_LANES; the lanes are added pairwise at the end. The order
 * depends on n only (never on threads), and independent lanes keep the adders busy where a
 * single chain would wait a full add latency per element. */

static double lanes_total(const double *acc)
{
    return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

/* sum_j x[j], j < n */
MCL_HOT static double dsum(const float *x, int64_t n)
{
    double acc[SUM_LANES] = {0.0};
    int64_t j = 0;
    for (; j + SUM_LANES <= n; j += SUM_LANES)
        MCL_SIMD for (int l = 0; l < SUM_LANES; l++) acc[l] += (double)x[j + l];
    for (int l = 0; j < n; j++, l++) acc[l] += (double)x[j];
    return lanes_total(acc);
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

/* Shapes of one conv2d call (validated by the front end, ops.c). */
typedef struct conv_dims {
    int64_t B, C, H, W; /* x [B,C,H,W]                  */
    int64_t O, k;       /* w [O,C,k,k]                  */
    int64_t s, pd;      /* stride, zero padding         */
    int64_t Ho, Wo, P;  /* out [B,O,Ho,Wo], P = Ho*Wo   */
    int64_t KK;         /* C*k*k: rows of col, K of GEMM */
} conv_dims;

static void conv_dims_get(const mcl_op_args *a, conv_dims *d)
{
    const mcl_tensor *x = a->in[0], *w = a->in[1], *o = a->out[0];
    d->B = x->shape[0];
    d->C = x->shape[1];
    d->H = x->shape[2];
    d->W = x->shape[3];
    d->O = w->shape[0];
    d->k = w->shape[2];
    d->s = a->p.i[0];
    d->pd = a->p.i[1];
    d->Ho = o->shape[2];
    d->Wo = o->shape[3];
    d->P = d->Ho * d->Wo;
    d->KK = d->C * d->k * d->k;
}

/* Images per conv2d group: enough for CONV_NMIN GEMM columns, at most B. */
static int64_t conv_group(const conv_dims *d)
{
    int64_t g = (CONV_NMIN + d->P - 1) / d->P;
    return g < d->B ? g : d->B;
}

/* dst[o][p] = src[o][p] + bias[o] for o < O, p < P (rows lds and P floats apart; dst may
 * be src, with lds = P) */
MCL_HOT static void add_bias(const float *src, int64_t lds, float *dst, int64_t O, int64_t P,
                             const float *bias)
{
    for (int64_t o = 0; o < O; o++) {
        const float *sr = src + o * lds;
        float *dr = dst + o * P;
        const float bo = bias[o];
        for (int64_t p = 0; p < P; p++) dr[p] = sr[p] + bo;
    }
}

/* y[j] += (float)v[j], j < n */
MCL_HOT static void add_rounded(float *restrict y, const double *restrict v, int64_t n)
{
    for (int64_t j = 0; j < n; j++) y[j] += (float)v[j];
}

/* Row length of a weight-gradient chunk's matrices holding K columns: K rounded up to 16
 * floats, plus 16 more when that is a multiple of 1 KiB. The GEMM packs their transposes by
 * reading 32 rows at a time; rows a power of two apart would all fall into the same few L1
 * sets and evict each other (measured: 2.7x slower for K = 4096). */
static int64_t padded_ld(int64_t K)
{
    int64_t ld = (K + 15) / 16 * 16;
    return ld % 256 == 0 ? ld + 16 : ld;
}

/* The output columns ox whose input column ix = ox*s - pd + kx lies in [0, W):
 * [*lo, *hi), possibly empty. Same for rows with (oy, ky, H, Ho). */
static void valid_range(int64_t kx, int64_t s, int64_t pd, int64_t W, int64_t Wo, int64_t *lo,
                        int64_t *hi)
{
    const int64_t first = pd - kx, last = W - 1 + pd - kx; /* need first <= ox*s <= last */
    int64_t l = first > 0 ? (first + s - 1) / s : 0;
    int64_t h = last >= 0 ? last / s + 1 : 0;
    if (h > Wo) h = Wo;
    if (l > h) l = h;
    *lo = l;
    *hi = h;
}

/* "Same" convolution: stride 1 and output size = input size (2 pd = k - 1). im2col rows
 * are then shifted copies of whole planes (flat index p -> p + dy*W + dx). */
static int same_size(const conv_dims *d)
{
    return d->s == 1 && d->Ho == d->H && d->Wo == d->W;
}

/* For a same-size row (ky, kx), with (dy, dx) = (ky - pd, kx - pd): the flat output indices
 * [*p0, *p1) whose shifted index p + dy*W + dx lies inside the plane, and the columns
 * [*c0, *c1) (possibly empty) whose input column ox + dx lies outside [0, W) (wrapped). */
static void shift_range(const conv_dims *d, int64_t ky, int64_t kx, int64_t *p0, int64_t *p1,
                        int64_t *c0, int64_t *c1)
{
    const int64_t dy = ky - d->pd, dx = kx - d->pd, sh = dy * d->W + dx, P = d->P;
    int64_t lo = sh < 0 ? -sh : 0, hi = sh > 0 ? P - sh : P;
    if (lo > P) lo = P;
    if (hi < lo) hi = lo;
    *p0 = lo;
    *p1 = hi;
    *c0 = dx > 0 ? d->W - dx : 0;
    *c1 = dx > 0 ? d->W : -dx;
    if (*c0 < 0) *c0 = 0;
    if (*c1 > d->W) *c1 = d->W;
}

/* im2col of one image:
 *   col[(c*k + ky)*k + kx][oy*Wo + ox] = x[c][oy*s - pd + ky][ox*s - pd + kx]  (0 outside x)
 *   x [C,H,W]; col: KK rows of ld floats, this image's P columns start at col.
 * The row pieces are short (Wo floats): plain loops, not memcpy/memset calls (MCL_COPY). */
MCL_COPY static void im2col(const conv_dims *d, const float *x, float *col, int64_t ld)
{
    const int64_t k = d->k, s = d->s, pd = d->pd, W = d->W, Wo = d->Wo;
    if (same_size(d)) {
        /* row (c, ky, kx) is the plane shifted by dy*W + dx, (dy, dx) = (ky - pd, kx - pd):
         * one contiguous copy clipped to the plane, then the |dx| columns that wrapped
         * around a row edge are zeroed */
        const int64_t P = d->P;
        for (int64_t c = 0; c < d->C; c++) {
            const float *xc = x + c * P;
            for (int64_t ky = 0; ky < k; ky++)
                for (int64_t kx = 0; kx < k; kx++) {
                    float *restrict row = col + ((c * k + ky) * k + kx) * ld;
                    int64_t p0, p1, c0, c1;
                    shift_range(d, ky, kx, &p0, &p1, &c0, &c1);
                    const int64_t sh = (ky - pd) * W + (kx - pd);
                    for (int64_t p = 0; p < p0; p++) row[p] = 0.0f;
                    for (int64_t p = p0; p < p1; p++) row[p] = xc[p + sh];
                    for (int64_t p = p1; p < P; p++) row[p] = 0.0f;
                    for (int64_t oy = 0; c0 < c1 && oy < d->Ho; oy++)
                        for (int64_t ox = c0; ox < c1; ox++) row[oy * W + ox] = 0.0f;
                }
        }
        return;
    }
    for (int64_t c = 0; c < d->C; c++) {
        const float *xc = x + c * d->H * W;
        for (int64_t ky = 0; ky < k; ky++) {
            for (int64_t kx = 0; kx < k; kx++) {
                float *row = col + ((c * k + ky) * k + kx) * ld;
                int64_t lo, hi;
                valid_range(kx, s, pd, W, Wo, &lo, &hi);
                for (int64_t oy = 0; oy < d->Ho; oy++) {
                    float *restrict r = row + oy * Wo;
                    const int64_t iy = oy * s - pd + ky;
                    if (iy < 0 || iy >= d->H) {
                        for (int64_t ox = 0; ox < Wo; ox++) r[ox] = 0.0f;
                        continue;
                    }
                    /* x[c][iy][ix] = xr[ox*s] with xr = xc + iy*W - pd + kx (as an offset:
                     * ox >= lo keeps it inside the row) */
                    const int64_t base = iy * W - pd + kx;
                    for (int64_t ox = 0; ox < lo; ox++) r[ox] = 0.0f;
                    if (s == 1)
                        for (int64_t ox = lo; ox < hi; ox++) r[ox] = xc[base + ox];
                    else
                        for (int64_t ox = lo; ox < hi; ox++) r[ox] = xc[base + ox * s];
                    for (int64_t ox = hi; ox < Wo; ox++) r[ox] = 0.0f;
                }
            }
        }
    }
}

/* col2im of one image, the adjoint of im2col, into a zeroed double image:
 *   img[c][oy*s - pd + ky][ox*s - pd + kx] += col[(c*k + ky)*k + kx][oy*Wo + ox]
 * (entries that im2col filled with padding zeros go nowhere). An img element receives at
 * most one term per (ky, kx), in increasing (ky, kx): a fixed order.
 *   col: KK rows of ld floats (this image's P columns; scratch: entries that belong to no
 *   pixel may be overwritten); img [C,H,W] in double. */
MCL_HOT static void col2im(const conv_dims *d, float *col, int64_t ld, double *img)
{
    const int64_t k = d->k, s = d->s, pd = d->pd, W = d->W, Wo = d->Wo;
    if (same_size(d)) {
        /* the adjoint of im2col's shifted copy: the wrapped columns of the row are set to 0
         * (they belong to no pixel; col is scratch), then one contiguous add. Adding +0.0
         * changes nothing: img starts at +0.0 and never becomes -0.0. */
        const int64_t P = d->P;
        for (int64_t c = 0; c < d->C; c++) {
            double *restrict ic = img + c * P;
            for (int64_t ky = 0; ky < k; ky++)
                for (int64_t kx = 0; kx < k; kx++) {
                    float *restrict row = col + ((c * k + ky) * k + kx) * ld;
                    int64_t p0, p1, c0, c1;
                    shift_range(d, ky, kx, &p0, &p1, &c0, &c1);
                    const int64_t sh = (ky - pd) * W + (kx - pd);
                    for (int64_t oy = 0; c0 < c1 && oy < d->Ho; oy++)
                        for (int64_t ox = c0; ox < c1; ox++) row[oy * W + ox] = 0.0f;
                    for (int64_t p = p0; p < p1; p++) ic[p + sh] += (double)row[p];
                }
        }
        return;
    }
    for (int64_t c = 0; c < d->C; c++) {
        double *ic = img + c * d->H * W;
        for (int64_t ky = 0; ky < k; ky++) {
            for (int64_t kx = 0; kx < k; kx++) {
                const float *row = col + ((c * k + ky) * k + kx) * ld;
                int64_t lo, hi;
                valid_range(kx, s, pd, W, Wo, &lo, &hi);
                for (int64_t oy = 0; oy < d->Ho; oy++) {
                    const int64_t iy = oy * s - pd + ky;
                    if (iy < 0 || iy >= d->H) continue;
                    const float *restrict r = row + oy * Wo;
                    const int64_t base = iy * W - pd + kx; /* img[c][iy][ix] = ic[base + ox*s] */
                    if (s == 1)
                        for (int64_t ox = lo; ox < hi; ox++) ic[base + ox] += (double)r[ox];
                    else
                        for (int64_t ox = lo; ox < hi; ox++) ic[base + ox * s] += (double)r[ox];
                }
            }
        }
    }
}

/* ------------------------------------------------------------------------------------ */
/* conv2d (stride s = p.i[0], zero padding pd = p.i[1]):
 *   out[b, o, oy, ox] = bias[o] + sum_{c, ky, kx} w[o, c, ky, kx] * x[b, c, iy, ix],
 *   iy = oy*s - pd + ky, ix = ox*s - pd + kx   (x = 0 outside the image)
 *   in[0] x [B,C,H,W], in[1] w [O,C,k,k], in[2] bias [O]
 *   out[0] [B,O,Ho,Wo], Ho = (H + 2 pd - k)/s + 1 (floor), Wo likewise
 * per group of images:  outw [O, G*P] = w [O, KK] · col [KK, G*P],  out = outw + bias */
mcl_status mcl_ref_conv2d_fwd(mcl_backend *be, const mcl_op_args *a)
{
    (void)be;
    conv_dims d;
    conv_dims_get(a, &d);
    const float *x = mcl_ref_ptr(a->in[0]), *w = mcl_ref_ptr(a->in[1]);
    const float *bias = mcl_ref_ptr(a->in[2]);
    float *out = mcl_ref_ptr(a->out[0]);
    const int64_t G = conv_group(&d), ngroups = (d.B + G - 1) / G;
    const int64_t CHW = d.C * d.H * d.W, OP = d.O * d.P;
    /* per thread: col [KK, G*P], and outw [O, G*P] when a group holds several images */
    const size_t nbuf = (size_t)(d.KK * G * d.P + (G > 1 ? OP * G : 0));
    int oom = 0;
#pragma omp parallel if (ngroups > 1 && d.B * OP * d.KK > PAR_MIN)
    {
        float *col = malloc(nbuf * sizeof(float));
        float *outw = col ? col + d.KK * G * d.P : NULL;
        if (!col) {
#pragma omp atomic write
            oom = 1;
        }
#pragma omp for schedule(static)
        for (int64_t gi = 0; gi < ngroups; gi++) {
            if (!col) continue;
            const int64_t b0 = gi * G, gn = d.B - b0 < G ? d.B - b0 : G, ld = gn * d.P;
            for (int64_t i = 0; i < gn; i++) im2col(&d, x + (b0 + i) * CHW, col + i * d.P, ld);
            if (gn == 1) { /* straight into out_b [O, P] */
                float *ob = out + b0 * OP;
                mcl_ref_sgemm(0, 0, d.O, d.P, d.KK, 1.0f, w, d.KK, col, d.P, 0.0f, ob, d.P);
                add_bias(ob, d.P, ob, d.O, d.P, bias);
            } else {
                mcl_ref_sgemm(0, 0, d.O, ld, d.KK, 1.0f, w, d.KK, col, ld, 0.0f, outw, ld);
                for (int64_t i = 0; i < gn; i++)
                    add_bias(outw + i * d.P, ld, out + (b0 + i) * OP, d.O, d.P, bias);
            }
        }
        free(col);
    }
    return oom ? MCL_ERR_OOM : MCL_OK;
}

/* backward, with g = gout[0] [B,O,Ho,Wo] (g_b = g[b] as [O, P]):
 *   gbias[o] += sum_{b, p} g[b, o, p]                  (double, in order)
 *   gx_b     += col2im(wᵀ [KK, O] · g_b [O, P])        (per group of images)
 *   gw       += sum_b g_b [O, P] · col_bᵀ [P, KK]      (per chunk of images, in order)
 *   gin[0] like x, gin[1] like w, gin[2] like bias (each may be NULL) */
mcl_status mcl_ref_conv2d_bwd(mcl_backend *be, const mcl_op_args *a)
{
    (void)be;
    conv_dims d;
    conv_dims_get(a, &d);
    const float *x = mcl_ref_ptr(a->in[0]), *w = mcl_ref_ptr(a->in[1]);
    const float *g = mcl_ref_ptr(a->gout[0]);
    const int64_t CHW = d.C * d.H * d.W, OP = d.O * d.P;
    const int big = d.B * OP * d.KK > PAR_MIN;
    int oom = 0;

    /* gbias: one output channel per thread, summed over images and pixels in order */
    if (a->gin[2]) {
        float *gb = mcl_ref_ptr(a->gin[2]);
#pragma omp parallel for schedule(static) if (d.B * OP > PAR_MIN)
        for (int64_t o = 0; o < d.O; o++) {
            double acc = 0.0;
            for (int64_t b = 0; b < d.B; b++) acc += dsum(g + b * OP + o * d.P, d.P);
            gb[o] += (float)acc;
        }
    }

    /* gx: per group of images, colg = wᵀ · g (wide), then col2im image by image */
    if (a->gin[0]) {
        float *gx = mcl_ref_ptr(a->gin[0]);
        const int64_t G = conv_group(&d), ngroups = (d.B + G - 1) / G;
        /* per thread: colg [KK, G*P], gwide [O, G*P] if G > 1, img [C,H,W] doubles */
        const size_t nf = (size_t)(d.KK * G * d.P + (G > 1 ? OP * G : 0));
#pragma omp parallel if (ngroups > 1 && big)
        {
            float *colg = malloc(nf * sizeof(float));
            double *img = malloc((size_t)CHW * sizeof(double));
            float *gwide = colg ? colg + d.KK * G * d.P : NULL;
            if (!colg || !img) {
#pragma omp atomic write
                oom = 1;
            }
#pragma omp for schedule(static)
            for (int64_t gi = 0; gi < ngroups; gi++) {
                if (!colg || !img) continue;
                const int64_t b0 = gi * G, gn = d.B - b0 < G ? d.B - b0 : G, ld = gn * d.P;
                const float *gm = g + b0 * OP; /* [O, P] for one image */
                if (gn > 1) {                  /* gwide[o, i*P + p] = g[b0 + i, o, p] */
                    for (int64_t o = 0; o < d.O; o++)
                        for (int64_t i = 0; i < gn; i++)
                            memcpy(gwide + o * ld + i * d.P, g + (b0 + i) * OP + o * d.P,
                                   (size_t)d.P * sizeof(float));
                    gm = gwide;
                }
                mcl_ref_sgemm(1, 0, d.KK, ld, d.O, 1.0f, w, d.KK, gm, ld, 0.0f, colg, ld);
                for (int64_t i = 0; i < gn; i++) {
                    float *gxb = gx + (b0 + i) * CHW;
                    memset(img, 0, (size_t)CHW * sizeof(double));
                    col2im(&d, colg + i * d.P, ld, img);
                    add_rounded(gxb, img, CHW);
                }
            }
            free(colg);
            free(img);
        }
    }

    /* gw: chunks of images in order; per chunk the im2col and the gradient columns side by
     * side (images in parallel), then one GEMM with K = the chunk's pixels (GEMM threads) */
    if (a->gin[1] && !oom) {
        float *gw = mcl_ref_ptr(a->gin[1]);
        int64_t nc = GW_COLS / d.P;
        if (nc < 1) nc = 1;
        if (nc > d.B) nc = d.B;
        const int64_t ldmax = padded_ld(nc * d.P);
        /* col [KK, ld], gwide [O, ld], and the sum over the chunks, acc [O, KK] or, when
         * KK < O, its transpose [KK, O] (the GEMM then wastes less of its register tile on a
         * narrow N: measured 3.6x faster for KK = 9, O = 32) */
        const int tr = d.KK < d.O;
        float *col = malloc(((size_t)(d.KK + d.O) * (size_t)ldmax + (size_t)(d.O * d.KK)) *
                            sizeof(float));
        if (!col) return MCL_ERR_OOM;
        float *gwide = col + d.KK * ldmax, *acc = gwide + d.O * ldmax;
        memset(acc, 0, (size_t)(d.O * d.KK) * sizeof(float));
        for (int64_t b0 = 0; b0 < d.B; b0 += nc) {
            const int64_t n = d.B - b0 < nc ? d.B - b0 : nc, K = n * d.P, ld = padded_ld(K);
#pragma omp parallel for schedule(static) if (n > 1 && big)
            for (int64_t i = 0; i < n; i++) {
                im2col(&d, x + (b0 + i) * CHW, col + i * d.P, ld);
                for (int64_t o = 0; o < d.O; o++)
                    memcpy(gwide + o * ld + i * d.P, g + (b0 + i) * OP + o * d.P,
                           (size_t)d.P * sizeof(float));
            }
            if (tr) /* accᵀ [KK, O] += col [KK, K] · gwideᵀ [K, O] */
                mcl_ref_sgemm(0, 1, d.KK, d.O, K, 1.0f, col, ld, gwide, ld, 1.0f, acc, d.O);
            else    /* acc [O, KK] += gwide [O, K] · colᵀ [K, KK] */
                mcl_ref_sgemm(0, 1, d.O, d.KK, K, 1.0f, gwide, ld, col, ld, 1.0f, acc, d.KK);
        }
        for (int64_t o = 0; o < d.O; o++)
            for (int64_t r = 0; r < d.KK; r++)
                gw[o * d.KK + r] += tr ? acc[r * d.O + o] : acc[o * d.KK + r];
        free(col);
    }
    return oom ? MCL_ERR_OOM : MCL_OK;
}

/* ------------------------------------------------------------------------------------ */
/* maxpool2d, 2 x 2 windows, stride 2, floor (a last odd row/column is dropped):
 *   out[b, c, i, j]  = max_{dy, dx in {0,1}} x[b, c, 2i + dy, 2j + dx]
 *   arg[b, c, i, j]  = dy*2 + dx of the first maximum in the order (0,0), (0,1), (1,0), (1,1)
 *   in[0] x [B,C,H,W];  out[0] [B,C,H/2,W/2], out[1] arg [B,C,H/2,W/2] (index as float)
 * backward: gx[b, c, 2i + dy, 2j + dx] += gout[b, c, i, j] for dy*2 + dx = arg[b, c, i, j]
 * (windows do not overlap: every x element gets at most one term) */

/* One output row: windows j < Wo over the input rows r0 (dy = 0) and r1 (dy = 1). */
MCL_HOT static void maxpool_row(const float *restrict r0, const float *restrict r1, int64_t Wo,
                                float *restrict o, float *restrict ag)
{
    for (int64_t j = 0; j < Wo; j++) {
        /* strict >: the first maximum wins ties (selects, no branches) */
        const float v1 = r0[2 * j + 1], v2 = r1[2 * j], v3 = r1[2 * j + 1];
        float m = r0[2 * j], idx = 0.0f;
        idx = v1 > m ? 1.0f : idx;
        m = v1 > m ? v1 : m;
        idx = v2 > m ? 2.0f : idx;
        m = v2 > m ? v2 : m;
        idx = v3 > m ? 3.0f : idx;
        m = v3 > m ? v3 : m;
        o[j] = m;
        ag[j] = idx;
    }
}

mcl_status mcl_ref_maxpool2d_fwd(mcl_backend *be, const mcl_op_args *a)
{
    (void)be;
    const mcl_tensor *X = a->in[0];
    const int64_t BC = X->shape[0] * X->shape[1], H = X->shape[2], W = X->shape[3];
    const int64_t Ho = H / 2, Wo = W / 2;
    const float *x = mcl_ref_ptr(X);
    float *out = mcl_ref_ptr(a->out[0]), *arg = mcl_ref_ptr(a->out[1]);
#pragma omp parallel for schedule(static) if (BC * H * W > PAR_MIN)
    for (int64_t q = 0; q < BC; q++)
        for (int64_t i = 0; i < Ho; i++) {
            const float *r0 = x + (q * H + 2 * i) * W;
            maxpool_row(r0, r0 + W, Wo, out + (q * Ho + i) * Wo, arg + (q * Ho + i) * Wo);
        }
    return MCL_OK;
}

mcl_status mcl_ref_maxpool2d_bwd(mcl_backend *be, const mcl_op_args *a)
{
    (void)be;
    if (!a->gin[0]) return MCL_OK;
    const mcl_tensor *X = a->in[0];
    const int64_t BC = X->shape[0] * X->shape[1], H = X->shape[2], W = X->shape[3];
    const int64_t Ho = H / 2, Wo = W / 2;
    const float *arg = mcl_ref_ptr(a->out[1]), *g = mcl_ref_ptr(a->gout[0]);
    float *gx = mcl_ref_ptr(a->gin[0]);
#pragma omp parallel for schedule(static) if (BC * H * W > PAR_MIN)
    for (int64_t q = 0; q < BC; q++) {
        for (int64_t i = 0; i < Ho; i++) {
            const float *gr = g + (q * Ho + i) * Wo, *ag = arg + (q * Ho + i) * Wo;
            for (int64_t j = 0; j < Wo; j++) {
                const int t = (int)ag[j]; /* 0..3 */
                gx[(q * H + 2 * i + t / 2) * W + 2 * j + t % 2] += gr[j];
            }
        }
    }
    return MCL_OK;
}

/* ------------------------------------------------------------------------------------ */
/* instance_norm, per image b and channel c over the N = H*W values of the plane r = b*C + c:
 *   mean[r]  = (1/N) sum_j x[r, j]
 *   var[r]   = (1/N) sum_j (x[r, j] - mean[r])^2                 (biased)
 *   rstd[r]  = 1 / sqrt(var[r] + eps)
 *   y[r, j]  = (x[r, j] - mean[r]) * rstd[r] * gamma[c] + beta[c]
 *
 *   in[0] x [B,C,H,W], in[1] gamma [C], in[2] beta [C]; p.f[0] = eps
 *   out[0] y [B,C,H,W], out[1] mean [B*C], out[2] rstd [B*C]   (only y is differentiable)
 *
 * backward, with xhat = (x - mean) * rstd (float, from the saved values) and
 * dxhat_j = gout[r, j] * gamma[c]:
 *   gx[r, j]  += rstd[r] * (dxhat_j - (1/N) sum_k dxhat_k - xhat_j * (1/N) sum_k dxhat_k xhat_k)
 *   ggamma[c] += sum_b sum_j gout[r, j] * xhat[r, j]
 *   gbeta[c]  += sum_b sum_j gout[r, j]
 * Statistics as in norm.c (double, two passes), summed in SUM_LANES fixed lanes. */

/* y[j] = (x[j] - mu) * rs * gm + bt, j < n, in double, rounded once */
MCL_HOT static void norm_affine(const float *restrict x, int64_t n, double mu, double rs,
                                double gm, double bt, float *restrict y)
{
    for (int64_t j = 0; j < n; j++) y[j] = (float)(((double)x[j] - mu) * rs * gm + bt);
}

/* gx[j] += rs * (dxhat_j - mean_d - xhat_j * mean_dx), dxhat_j = g[j] * gm,
 * xhat_j = (x[j] - m) * rs (float), j < n */
MCL_HOT static void norm_dx(const float *restrict x, const float *restrict g, int64_t n, float m,
                            float rs, double gm, double mean_d, double mean_dx,
                            float *restrict gx)
{
    for (int64_t j = 0; j < n; j++) {
        const float xhat = (x[j] - m) * rs;
        const double dxhat = (double)g[j] * gm;
        gx[j] += (float)((double)rs * (dxhat - mean_d - (double)xhat * mean_dx));
    }
}

mcl_status mcl_ref_instance_norm_fwd(mcl_backend *be, const mcl_op_args *a)
{
    (void)be;
    const mcl_tensor *X = a->in[0];
    const int64_t C = X->shape[1], R = X->shape[0] * C, N = X->shape[2] * X->shape[3];
    const float *x = mcl_ref_ptr(X), *gamma = mcl_ref_ptr(a->in[1]), *beta = mcl_ref_ptr(a->in[2]);
    float *y = mcl_ref_ptr(a->out[0]), *mean = mcl_ref_ptr(a->out[1]);
    float *rstd = mcl_ref_ptr(a->out[2]);
    const double eps = (double)a->p.f[0];
#pragma omp parallel for schedule(static) if (R * N > PAR_MIN)
    for (int64_t r = 0; r < R; r++) {
        const float *xr = x + r * N;
        float *yr = y + r * N;
        const double mu = dsum(xr, N) / (double)N;
        const double rs = 1.0 / sqrt(dsum_sqdev(xr, N, mu) / (double)N + eps);
        mean[r] = (float)mu;
        rstd[r] = (float)rs;
        norm_affine(xr, N, mu, rs, (double)gamma[r % C], (double)beta[r % C], yr);
    }
    return MCL_OK;
}

/* One thread per channel c, looping over the images b in order: the plane sums feed both gx
 * (of that plane) and the channel's gamma/beta sums, in a fixed order. */
mcl_status mcl_ref_instance_norm_bwd(mcl_backend *be, const mcl_op_args *a)
{
    (void)be;
    const mcl_tensor *X = a->in[0];
    const int64_t B = X->shape[0], C = X->shape[1], N = X->shape[2] * X->shape[3];
    const float *x = mcl_ref_ptr(X), *gamma = mcl_ref_ptr(a->in[1]);
    const float *mean = mcl_ref_ptr(a->out[1]), *rstd = mcl_ref_ptr(a->out[2]);
    const float *g = mcl_ref_ptr(a->gout[0]);
    float *gx = a->gin[0] ? mcl_ref_ptr(a->gin[0]) : NULL;
    float *ggamma = a->gin[1] ? mcl_ref_ptr(a->gin[1]) : NULL;
    float *gbeta = a->gin[2] ? mcl_ref_ptr(a->gin[2]) : NULL;
    if (!gx && !ggamma && !gbeta) return MCL_OK;
#pragma omp parallel for schedule(static) if (B * C * N > PAR_MIN)
    for (int64_t c = 0; c < C; c++) {
        const double gm = (double)gamma[c];
        double acc_g = 0.0, acc_b = 0.0; /* sum g * xhat, sum g over the channel */
        for (int64_t b = 0; b < B; b++) {
            const int64_t r = b * C + c;
            const float *xr = x + r * N, *gr = g + r * N;
            const float m = mean[r], rs = rstd[r];
            double sg, sgx;
            dsum_g_gxhat(xr, gr, N, m, rs, &sg, &sgx);
            acc_g += sgx;
            acc_b += sg;
            if (!gx) continue;
            norm_dx(xr, gr, N, m, rs, gm, gm * sg / (double)N, gm * sgx / (double)N, gx + r * N);
        }
        /* separate statements: correct even if gin[1] and gin[2] are one tensor */
        if (ggamma) ggamma[c] += (float)acc_g;
        if (gbeta) gbeta[c] += (float)acc_b;
    }
    return MCL_OK;
}
