/* conv.c — reference convolution family, NCHW: conv2d, maxpool2d (the family's
 * inorm_pool_relu, the three of Conv-4's block tail in one pass, in float, is conv_tail.c;
 * instance_norm and the residual block's fused norms are inorm.c).
 *
 * conv2d has two paths, both products on a GEMM register tile (gemm.c's scheme):
 *   - stride 1 (the common case): products over zero-bordered copies of the image planes,
 *     without im2col (see "Stride 1" below): forward out_b = w · x_r, backward gx_b as the
 *     convolution of g with the flipped weights, gw = sum_b x_r · g_bᵀ. A forward with few
 *     im2col rows (C*k*k < S1_FWD_MIN_KK) writes its register tiles straight into out: along
 *     the flat pixel index of the output planes where Ho = H and Wo = W (s1_tile_flat, with
 *     streaming stores for a large output), else row segment by row segment (s1_tile_row); a
 *     weight gradient with few rows is a set of dot products (dot_tile), one with many rows
 *     runs over the valid pixels only (gw_tile).
 *   - other strides: im2col + the packed GEMM of gemm.c (mcl_ref_sgemm): im2col lays the
 *     k x k patches of an image out as the columns of col [C*k*k, Ho*Wo], so the convolution
 *     of one image is out_b [O, Ho*Wo] = W [O, C*k*k] · col_b; images with few output pixels
 *     (Ho*Wo < CONV_NMIN) are grouped, their columns side by side in one "wide" col, one GEMM
 *     per group. Backward: gx is col2im of Wᵀ · g (every col entry goes back to the pixel it
 *     was copied from), gw = sum_b col_b · g_bᵀ (with g transposed, gT, pixel-major).
 * Forward: images (or groups) run in parallel, each thread with its own buffers (a GEMM
 * inside the parallel loop runs on its thread); every output element is computed by one
 * fixed sequence of fmaf, whatever the thread. Backward: one pass over the images computes
 * gbias, gx and gw together (g is read from memory once); the images are cut into
 * BWD_CHUNKS fixed chunks, one thread per chunk, each with its own double sums of gw and
 * gbias, added in chunk order at the end. So every result is the same for any thread count.
 *
 * maxpool2d: 2 x 2 windows, stride 2, floor; the argmax (dy*2 + dx, first maximum) is saved
 * as a float output and backward routes the gradient there.
 *
 * Sums of the reference accumulate in double in a fixed order (bias and weight gradients
 * over the images, col2im; long sums in SUM_LANES interleaved lanes added pairwise at the
 * end, an order that depends on the length only). Backward ACCUMULATES into the non-NULL
 * gin[k], or stores into a fresh one (ref.h: mcl_ref_grad_fresh). Scratch buffers (conv2d's)
 * are the only allocations: on failure the op returns MCL_ERR_OOM.
 */
#if defined(__AVX__)
#include <immintrin.h>
#endif
#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "conv_s1.h"
#include "ref.h"
#include "transpose8.h"

/* Below this many elements (or multiply-adds for conv2d) a loop runs on the calling thread. */
#define PAR_MIN 32768
/* conv2d groups images until a GEMM has at least this many columns (output pixels). */
#define CONV_NMIN 256
/* conv2d and instance_norm backward: the number of chunks of images whose parameter
 * gradient sums are kept apart (one thread each), and, on conv2d's im2col path, images per
 * group chosen so that a group has about BWD_COLS pixels (the K of the weight-gradient
 * GEMM; its im2col, KK x BWD_COLS floats, stays in L2). */
#define BWD_CHUNKS 16
#define BWD_COLS 256

int64_t mcl_ref_conv_chunks(int64_t B) { return B < BWD_CHUNKS ? B : BWD_CHUNKS; }
/* Lanes of the fixed-order double sums below. */
#define SUM_LANES MCL_REF_SUM_LANES

/* Compiler help for the inner loops, with no effect on the results (as in gemm.c): MCL_HOT
 * compiles a helper at -O3, where GCC vectorizes the float/double conversions that -O2
 * leaves scalar; MCL_COPY is MCL_HOT that keeps short copy loops as loops (not calls of
 * memcpy/memset, which cost more than a 16-float row); MCL_SIMD marks loops over
 * independent lanes. Without -ffast-math nothing is reassociated: every element sees the
 * same operations in the same order (measured: identical bits with and without). */
#if defined(__GNUC__) && !defined(__clang__)
#define MCL_COPY __attribute__((optimize("O3", "no-tree-loop-distribute-patterns")))
#else
#define MCL_COPY
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
MCL_HOT double mcl_ref_dsum(const float *x, int64_t n)
{
    double acc[SUM_LANES] = {0.0};
    int64_t j = 0;
    for (; j + SUM_LANES <= n; j += SUM_LANES)
        MCL_SIMD for (int l = 0; l < SUM_LANES; l++) acc[l] += (double)x[j + l];
    for (int l = 0; j < n; j++, l++) acc[l] += (double)x[j];
    return lanes_total(acc);
}

/* Plane sums side by side. tot[k] = dsum of plane k < np (np <= DSUM_NP) stored as rows ld
 * floats apart, the planes ps floats apart: the rows x[k*ps + i*ld .. + cols), i < rows, one
 * after the other, as one array of rows*cols floats: element (i, c) goes to lane
 * (i*cols + c) % SUM_LANES, each lane in increasing (i, c), the lanes added pairwise — the bits
 * of mcl_ref_dsum of the rows copied together. Rows of any width let a first layer's gradient
 * stay on the weight gradient's grid (mcl_ref_s1_bwd_grid) at 28 x 28 too. One plane's sum is
 * a chain of dependent adds and the np planes' chains are independent (measured on Conv-4's
 * first layer: no faster than a plane at a time there, where the sums wait on reads from L2). */
#define DSUM_NP 4
#if defined(__AVX512F__)
/* acc += the lanes of 8 floats at p (m of them: the rest +0.0, which leaves a sum as it is: a
 * sum from +0.0 is never -0.0), lane l taking element (l - s) mod 8 (idx) */
#define DSUM_ADD8(acc, p, m, idx)                                                                   \
    acc = _mm512_add_pd(acc, _mm512_permutexvar_pd(                                                  \
                                 idx, _mm512_cvtps_pd(_mm512_castps512_ps256(_mm512_maskz_loadu_ps(m, p)))))
MCL_HOT static void dsum_planes(int np, const float *x, int64_t ps, int64_t rows, int64_t cols,
                                int64_t ld, double *tot)
{
    /* four named accumulators (an array indexed by a loop variable lived on the stack) */
    __m512d a0 = _mm512_setzero_pd(), a1 = a0, a2 = a0, a3 = a0;
    const __m512i lane = _mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0);
    const float *x1 = x + (np > 1 ? ps : 0), *x2 = x + (np > 2 ? 2 * ps : 0), *x3 = x + (np > 3 ? 3 * ps : 0);
    int64_t s = 0; /* the lane of the row's first element */
    for (int64_t i = 0; i < rows; i++, s = (s + cols) % SUM_LANES) {
        /* lane l takes the row's element c = l - s (mod 8) of each 8: a lane permutation */
        const __m512i idx = _mm512_and_epi64(_mm512_sub_epi64(lane, _mm512_set1_epi64(s)), _mm512_set1_epi64(7));
        const int64_t r = i * ld;
        for (int64_t c = 0; c < cols; c += SUM_LANES) {
            const __mmask16 m = cols - c >= SUM_LANES ? (__mmask16)0xFF : (__mmask16)((1u << (cols - c)) - 1);
            DSUM_ADD8(a0, x + r + c, m, idx);
            DSUM_ADD8(a1, x1 + r + c, m, idx); /* (planes past np: plane 0 again, not kept) */
            DSUM_ADD8(a2, x2 + r + c, m, idx);
            DSUM_ADD8(a3, x3 + r + c, m, idx);
        }
    }
    double a[DSUM_NP][SUM_LANES];
    _mm512_storeu_pd(a[0], a0);
    _mm512_storeu_pd(a[1], a1);
    _mm512_storeu_pd(a[2], a2);
    _mm512_storeu_pd(a[3], a3);
    for (int k = 0; k < np; k++) tot[k] = lanes_total(a[k]);
}
#undef DSUM_ADD8
#else
static void dsum_planes(int np, const float *x, int64_t ps, int64_t rows, int64_t cols, int64_t ld,
                        double *tot)
{
    for (int k = 0; k < np; k++) {
        double acc[SUM_LANES] = {0.0};
        for (int64_t i = 0, j = 0; i < rows; i++)
            for (int64_t c = 0; c < cols; c++, j++) acc[j % SUM_LANES] += (double)x[k * ps + i * ld + c];
        tot[k] = lanes_total(acc);
    }
}
#endif

/* pb[o] += the dsum of plane o < O (rows, cols, ld as dsum_planes; planes ps floats apart) */
static void dsum_add_planes(const float *x, int64_t O, int64_t ps, int64_t rows, int64_t cols, int64_t ld,
                            double *pb)
{
    for (int64_t o = 0; o < O; o += DSUM_NP) {
        const int np = O - o < DSUM_NP ? (int)(O - o) : DSUM_NP;
        double t[DSUM_NP];
        dsum_planes(np, x + o * ps, ps, rows, cols, ld, t);
        for (int k = 0; k < np; k++) pb[o + k] += t[k];
    }
}

/* n zeroed floats at a 64-byte boundary (a cache line), freed with free(); NULL if out of
 * memory */
static float *calloc_floats64(size_t n)
{
    const size_t bytes = (n * sizeof(float) + 63) & ~(size_t)63; /* aligned_alloc's rule */
    float *p = aligned_alloc(64, bytes ? bytes : 64);
    if (p) memset(p, 0, bytes);
    return p;
}

/* Shapes of one conv2d call (conv_s1.h). */
typedef mcl_ref_conv_dims conv_dims;

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

/* dst[o][p] = src[o][p] + bias[o] for o < O, p < P (rows lds and ldd floats apart; dst
 * may be src, with lds = ldd) */
MCL_HOT static void add_bias(const float *src, int64_t lds, float *dst, int64_t O, int64_t P,
                             const float *bias, int64_t ldd)
{
    for (int64_t o = 0; o < O; o++) {
        const float *sr = src + o * lds;
        float *dr = dst + o * ldd;
        const float bo = bias[o];
        for (int64_t p = 0; p < P; p++) dr[p] = sr[p] + bo;
    }
}

/* y[j] += (float)v[j], j < n */
MCL_HOT static void add_rounded(float *restrict y, const double *restrict v, int64_t n)
{
    for (int64_t j = 0; j < n; j++) y[j] += (float)v[j];
}

/* y[j] = 0 + (float)v[j], j < n: add_rounded into a fresh (logically zero) y */
MCL_HOT static void store_rounded(float *restrict y, const double *restrict v, int64_t n)
{
    for (int64_t j = 0; j < n; j++) y[j] = 0.0f + (float)v[j];
}

/* t[k*ldt + o] = m[o*ldm + k] for o < O, k < n: m [O, n] (rows ldm apart) transposed, in
 * 8 x 8 blocks (each row of m read 32 bytes at a time), the ragged edges element by element */
MCL_HOT static void transpose(const float *restrict m, int64_t ldm, int64_t O, int64_t n,
                              float *restrict t, int64_t ldt)
{
    const int64_t O8 = O / 8 * 8, n8 = n / 8 * 8;
    for (int64_t k0 = 0; k0 < n8; k0 += 8)
        for (int64_t o0 = 0; o0 < O8; o0 += 8)
            transpose8(m + o0 * ldm + k0, ldm, t + k0 * ldt + o0, ldt);
    for (int64_t k = 0; k < n; k++)
        for (int64_t o = k < n8 ? O8 : 0; o < O; o++) t[k * ldt + o] = m[o * ldm + k];
}

/* acc[o*R + r] += (double)prod[r*ldp + o] for r < R, o < O (prod [R, O], rows ldp apart,
 * added transposed); store: acc = 0 + (double)prod (acc not read) */
MCL_HOT static void add_transposed(double *restrict acc, const float *restrict prod, int64_t ldp,
                                   int64_t R, int64_t O, int store)
{
    int64_t R8 = 0, O8 = 0;
#if defined(__AVX__)
    /* 8 x 8 blocks through tr8x8: v[i] = prod's column o0 + i over rows r0 .. r0 + 7, each
     * element converted and added as in the loop below (the same additions) */
    R8 = R / 8 * 8, O8 = O / 8 * 8;
    for (int64_t o0 = 0; o0 < O8; o0 += 8)
        for (int64_t r0 = 0; r0 < R8; r0 += 8) {
            __m256 v[8];
            tr8x8(prod + r0 * ldp + o0, ldp, v);
            for (int i = 0; i < 8; i++) {
                double *a = acc + (o0 + i) * R + r0;
                const __m128 lo = _mm256_castps256_ps128(v[i]), hi = _mm256_extractf128_ps(v[i], 1);
                const __m256d a0 = store ? _mm256_setzero_pd() : _mm256_loadu_pd(a);
                const __m256d a1 = store ? _mm256_setzero_pd() : _mm256_loadu_pd(a + 4);
                _mm256_storeu_pd(a, _mm256_add_pd(a0, _mm256_cvtps_pd(lo)));
                _mm256_storeu_pd(a + 4, _mm256_add_pd(a1, _mm256_cvtps_pd(hi)));
            }
        }
#endif
    for (int64_t o = 0; o < O; o++)
        for (int64_t r = o < O8 ? R8 : 0; r < R; r++)
            acc[o * R + r] = (store ? 0.0 : acc[o * R + r]) + (double)prod[r * ldp + o];
}

/* acc[r*O + o] += (double)prod[r*ldp + o] for r < R, o < O (prod [R, O], rows ldp apart, in
 * prod's own layout); store: acc = 0 + (double)prod (acc not read). The stride-1 weight
 * gradient's chunk sums keep this layout ([KK, O]) and are transposed once, when the chunks
 * are summed (mcl_ref_s1_bwd_store): the same additions as add_transposed's, without its
 * shuffles at every chunk (half of the weight gradient's time on 4 x 4 images, one image a
 * chunk). */
MCL_HOT static void add_rows(double *restrict acc, const float *restrict prod, int64_t ldp, int64_t R, int64_t O,
                             int store)
{
    for (int64_t r = 0; r < R; r++) {
        double *a = acc + r * O;
        const float *p = prod + r * ldp;
        if (store) {
            MCL_SIMD
            for (int64_t o = 0; o < O; o++) a[o] = 0.0 + (double)p[o];
        } else {
            MCL_SIMD
            for (int64_t o = 0; o < O; o++) a[o] += (double)p[o];
        }
    }
}

/* y[o*R + r] (+)= (float)(sum_c part[c*stride + r*O + o]), chunks in order: sum_chunks for sums
 * kept in [R, O] (add_rows), written to y [O, R] */
MCL_HOT static void sum_chunks_t(const double *part, int64_t nchunks, int64_t stride, int64_t R, int64_t O,
                                 int fresh, float *y)
{
    enum { SUM_BLOCK = 16 };
    for (int64_t r = 0; r < R; r++)
        for (int64_t o0 = 0; o0 < O; o0 += SUM_BLOCK) {
            const int nl = O - o0 < SUM_BLOCK ? (int)(O - o0) : SUM_BLOCK;
            double s[SUM_BLOCK] = {0.0};
            for (int64_t c = 0; c < nchunks; c++) {
                const double *pc = part + c * stride + r * O + o0;
                for (int l = 0; l < nl; l++) s[l] += pc[l];
            }
            for (int l = 0; l < nl; l++) {
                float *ye = y + (o0 + l) * R + r;
                *ye = (fresh ? 0.0f : *ye) + (float)s[l];
            }
        }
}

/* y[e] (+)= (float)(sum_c part[c*stride + off + e]), chunks in order, for e < n (stored as
 * 0 + the sum when y is fresh) */
MCL_HOT static void sum_chunks(const double *part, int64_t nchunks, int64_t stride, int64_t off,
                       int64_t n, int fresh, float *y)
{
    /* SUM_BLOCK elements at a time, so that their sums over the chunks (each in chunk order)
     * are independent vector lanes instead of one latency-bound chain per element */
    enum { SUM_BLOCK = 16 };
    int64_t e0 = 0;
    for (; e0 + SUM_BLOCK <= n; e0 += SUM_BLOCK) {
        double s[SUM_BLOCK] = {0.0};
        for (int64_t c = 0; c < nchunks; c++) {
            const double *pc = part + c * stride + off + e0;
            MCL_SIMD for (int l = 0; l < SUM_BLOCK; l++) s[l] += pc[l];
        }
        for (int l = 0; l < SUM_BLOCK; l++) y[e0 + l] = (fresh ? 0.0f : y[e0 + l]) + (float)s[l];
    }
    for (int64_t e = e0; e < n; e++) {
        double s = 0.0;
        for (int64_t c = 0; c < nchunks; c++) s += part[c * stride + off + e];
        y[e] = (fresh ? 0.0f : y[e]) + (float)s;
    }
}

/* Row length of a backward group's matrices holding K columns: K rounded up to 16
 * floats, plus 16 more when that is a multiple of 1 KiB. The GEMM packs them by reading
 * several rows at a time; rows a power of two apart would all fall into the same few L1
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
/* Stride 1: products over shifted planes, without im2col.
 *
 * With stride 1, the im2col row r = (c, ky, kx) of an image is its channel c shifted by
 * (ky - pd, kx - pd). Copy the image into zero-bordered planes xp (to_padded: rows of
 * Wp = W + pd floats, the last pd of them zeros, which serve as the right border of a row
 * and the left border of the next; pd zero rows above and below, Hp = H + 2 pd rows) and
 * number the outputs along those rows, j = oy*Wp + ox (the "grid", J = Ho*Wp columns): then
 * row r is xp read from a fixed offset,
 *   x_r[j] = xp[roff[r] + j],  roff[r] = (c*Hp + ky)*Wp + kx,
 * a contiguous stretch of memory. The grid columns ox in [Wo, Wp) are computed too, from
 * border zeros and values of the next row, and dropped when the result is written out:
 * (Wp - Wo)/Wp of the work is wasted (6% for W = 16), and the im2col matrix, k*k times the
 * image, is never written. Per image:
 *   forward  grid [O, J]  = w [O, KK] · x_r             then out = grid (valid columns) + bias
 *   gx       gridx [C, Jx] = wt [C, O*k*k] · g_r'        g in its own planes gp (border
 *            pg = k-1-pd, Wg = Wo + pg, Hg = Ho + 2 pg) and wt the weights flipped and
 *            transposed, wt[c][(o*k + ky)*k + kx] = w[o][c][k-1-ky][k-1-kx]: the transposed
 *            convolution is a convolution of gp (Hg - k + 1 = H), on the grid jx = iy*Wg + ix
 *   gw       prod [KK, O] += x_r · gT                    gT [P, O] = g transposed; the sum
 *            runs over the valid pixels only, x_r read through their grid offsets (gw_tile)
 * These run on the GEMM's register tile (gemm.c): an S1_MR x S1_NR block of accumulators,
 * fmaf in increasing k, A read by rows, B's row k at b + boff[k]. The planes have S1_NR + k
 * zero floats of slack after them, so a tile may run past the last grid column (those
 * columns are dropped too). Forward bits equal those of the im2col path (the same fmaf
 * sequence; KK <= 512, the GEMM's KC). */
#if defined(__AVX512F__)
#define S1_MR 8
#define S1_NR 32
#elif defined(__AVX__) || defined(__aarch64__)
#define S1_MR 6
#define S1_NR 16
#else
#define S1_MR 4
#define S1_NR 8
#endif

/* from this many rows of im2col (C*k*k) on, the forward runs on the band of s1_product /
 * s1_product_t and the weight gradient on gw_tile; below, s1_tile_row and dot_tile */
#define S1_FWD_MIN_KK 32

#ifdef FP_FAST_FMAF /* one rounding where the CPU has FMA, as in gemm.c */
#define MADD(a, b, c) fmaf(a, b, c)
#else
#define MADD(a, b, c) ((a) * (b) + (c))
#endif

static int64_t round_up(int64_t n, int64_t m) { return (n + m - 1) / m * m; }

/* The backward's next image, fetched towards the core while this one computes. Its first
 * reader (the bias gradient's sum) otherwise waited on memory for each image's g: 5 % of the
 * ACL step in that one load (perf annotate). A cursor walks a region's 64-byte lines, `per`
 * lines a step (pf_step), the steps being the tiles, strips or dot-product steps of the
 * current image, so a few lines are in flight at a time. A hint only: no result depends on
 * it. */
typedef struct pf_cursor {
    const char *p;     /* NULL: nothing to fetch */
    int64_t next, end; /* bytes */
    int per;           /* lines a step */
} pf_cursor;

/* a cursor over the bytes [p, p + bytes), spread over `steps` steps */
static pf_cursor pf_over(const void *p, int64_t bytes, int64_t steps)
{
    const int64_t lines = (bytes + 63) / 64;
    pf_cursor c = {(const char *)p, 0, p ? bytes : 0, 1};
    if (steps > 0) c.per = (int)((lines + steps - 1) / steps);
    return c;
}

static inline void pf_step(pf_cursor *c)
{
    if (!c) return;
    for (int k = 0; k < c->per && c->next < c->end; k++, c->next += 64)
        __builtin_prefetch(c->p + c->next, 0, 2);
}

/* A register tile's body written once for several fixed sizes: a helper inlined into one
 * function per size, where the size is a constant (so its accumulators stay in registers) */
#define S1_INLINE MCL_HOT_INLINE

/* c[i*ldc + j] (+)= sum_{k < K} a[i][k] * b[boff[k] + j]  for i < S1_MR, j < S1_NR
 * (stored, or added when add != 0), each sum by fmaf in increasing k from 0. A is read
 * through its S1_MR row pointers (rows past the matrix point to zeros): every a[i][k] is
 * broadcast to a vector, from wherever it is, so A needs no packing. */
MCL_HOT static void s1_tile(int64_t K, const float *const *a, const float *restrict b,
                            const int64_t *restrict boff, float *restrict c, int64_t ldc, int add)
{
    const float *ar[S1_MR];
    for (int i = 0; i < S1_MR; i++) ar[i] = a[i];
    float acc[S1_MR][S1_NR];
    for (int i = 0; i < S1_MR; i++)
        MCL_SIMD for (int j = 0; j < S1_NR; j++) acc[i][j] = 0.0f;
    for (int64_t k = 0; k < K; k++) {
        const float *bk = b + boff[k];
        for (int i = 0; i < S1_MR; i++) {
            const float ai = ar[i][k];
            MCL_SIMD for (int j = 0; j < S1_NR; j++) acc[i][j] = MADD(ai, bk[j], acc[i][j]);
        }
    }
    if (add)
        for (int i = 0; i < S1_MR; i++)
            MCL_SIMD for (int j = 0; j < S1_NR; j++) c[i * ldc + j] += acc[i][j];
    else
        for (int i = 0; i < S1_MR; i++)
            MCL_SIMD for (int j = 0; j < S1_NR; j++) c[i * ldc + j] = acc[i][j];
}

/* The S1_MR row pointers of rows [r0, r0 + S1_MR) of a matrix with M rows, row r at
 * src + (roff ? roff[r] : r*ld); rows >= M point to zeros. */
static void s1_rows(const float *src, const int64_t *roff, int64_t ld, int64_t r0, int64_t M,
                    const float *zeros, const float **rows)
{
    for (int i = 0; i < S1_MR; i++) {
        const int64_t r = r0 + i;
        rows[i] = r >= M ? zeros : src + (roff ? roff[r] : r * ld);
    }
}

/* How s1_product writes the valid grid columns out (see there). */
enum { OUT_BIAS, OUT_STORE, OUT_ADD };

/* dst[m][oy*wo + ox] (=, +=) band[m][j - j0] for the grid columns j in [j0, j0 + nj) with
 * ox = j % wp < wo (oy = j / wp), m < M: OUT_BIAS stores band + bias[m], OUT_STORE stores
 * 0 + band (a fresh dst), OUT_ADD adds band. band rows are S1_NR floats, dst rows ldd. */
MCL_HOT static void band_out(const float *restrict band, int64_t M, int64_t j0, int64_t nj,
                             int64_t wp, int64_t wo, float *restrict dst, int64_t ldd,
                             const float *bias, int mode)
{
    for (int64_t j = j0; j < j0 + nj;) {
        const int64_t oy = j / wp, ox = j % wp;
        int64_t run = wp - ox; /* the rest of grid row oy, within the band */
        if (run > j0 + nj - j) run = j0 + nj - j;
        const int64_t nv = wo - ox < run ? wo - ox : run; /* its valid columns */
        for (int64_t m = 0; m < M && nv > 0; m++) {
            const float *restrict src = band + m * S1_NR + (j - j0);
            float *restrict d = dst + m * ldd + oy * wo + ox;
            if (mode == OUT_BIAS)
                for (int64_t t = 0; t < nv; t++) d[t] = src[t] + bias[m];
            else if (mode == OUT_STORE)
                for (int64_t t = 0; t < nv; t++) d[t] = 0.0f + src[t];
            else
                for (int64_t t = 0; t < nv; t++) d[t] += src[t];
        }
        j += run;
    }
}

/* The product A [M, K] · B over the grid columns [0, J) (grid width wp, of which wo valid),
 * written out with band_out into dst (rows ldd apart). A's row r at a + r*K (rows >= M read
 * as zeros), B's row k at b + boff[k]. One band of S1_NR grid columns at a time: its B strip
 * stays in L1 across the A strips, and the band [round_up(M, S1_MR), S1_NR] is written out
 * while it is in L1. */
static void s1_product(int64_t M, int64_t J, int64_t K, const float *a, const float *zeros,
                       const float *b, const int64_t *boff, int64_t wp, int64_t wo, float *band,
                       float *dst, int64_t ldd, const float *bias, int mode, pf_cursor *pf)
{
    for (int64_t j0 = 0; j0 < J; j0 += S1_NR) {
        for (int64_t i0 = 0; i0 < M; i0 += S1_MR) {
            pf_step(pf);
            const float *rows[S1_MR];
            s1_rows(a, NULL, K, i0, M, zeros, rows);
            s1_tile(K, rows, b + j0, boff, band + i0 * S1_NR, S1_NR, 0);
        }
        band_out(band, M, j0, J - j0 < S1_NR ? J - j0 : S1_NR, wp, wo, dst, ldd, bias, mode);
    }
}

/* The same product with the roles of the register tile swapped, for small grids: the tile
 * is S1_MR output pixels x S1_NR rows of A, so the pixels are rounded up to S1_MR rather than
 * the grid to S1_NR columns (a 4 x 4 image: 16 pixels instead of 32 grid columns), at the
 * price of writing the tile out transposed. Each of the tile's pixels is read through its own
 * pointer into B, so only the valid pixels are computed: pixel p = oy*wo + ox is grid column
 * oy*wp + ox, and the grid's dropped columns (ox >= wo) are skipped. A is given transposed and
 * padded, at [K, round_up(M, S1_NR)]:
 *   tile[i][m] = sum_{k < K} bp[i][boff[k]] * at[k][m]
 * Each output element is the same fmaf sequence as in s1_product (the same bits). */
S1_INLINE void s1_tile_tn(int np, int64_t K, const float *const *bp,
                          const int64_t *restrict boff, const float *restrict at, int64_t lda,
                          float *restrict c, int64_t ldc)
{
    const float *br[S1_MR];
    for (int i = 0; i < np; i++) br[i] = bp[i];
    float acc[S1_MR][S1_NR];
    for (int i = 0; i < np; i++)
        MCL_SIMD for (int m = 0; m < S1_NR; m++) acc[i][m] = 0.0f;
    for (int64_t k = 0; k < K; k++) {
        const int64_t off = boff[k];
        const float *ak = at + k * lda;
        for (int i = 0; i < np; i++) {
            const float bi = br[i][off];
            MCL_SIMD for (int m = 0; m < S1_NR; m++) acc[i][m] = MADD(bi, ak[m], acc[i][m]);
        }
    }
    for (int i = 0; i < np; i++)
        MCL_SIMD for (int m = 0; m < S1_NR; m++) c[i * ldc + m] = acc[i][m];
}

/* The tile of np pixels, np in [S1_MR - 3, S1_MR] (see s1_tile_pixels) */
MCL_HOT static void s1_tile_t(int np, int64_t K, const float *const *bp, const int64_t *boff,
                              const float *at, int64_t lda, float *c, int64_t ldc)
{
    switch (S1_MR - np) {
    case 1: s1_tile_tn(S1_MR - 1, K, bp, boff, at, lda, c, ldc); return;
    case 2: s1_tile_tn(S1_MR - 2, K, bp, boff, at, lda, c, ldc); return;
    case 3: s1_tile_tn(S1_MR - 3, K, bp, boff, at, lda, c, ldc); return;
    default: s1_tile_tn(S1_MR, K, bp, boff, at, lda, c, ldc); return;
    }
}

/* Pixels per s1_tile_t tile for P pixels: the np in [S1_MR - 3, S1_MR] (and >= 1) that
 * computes the fewest padded pixels, round_up(P, np), the largest np on a tie. A 7 x 7 image
 * (49 pixels) runs 7 tiles of 7 (49) instead of 7 of 8 (56); 14 x 14 runs 28 of 7 (196). */
static int s1_tile_pixels(int64_t P)
{
    int best = S1_MR;
    for (int np = S1_MR - 1; np >= S1_MR - 3 && np >= 1; np--)
        if (round_up(P, np) < round_up(P, best)) best = np;
    return best;
}

/* Tiles of s1_product_t whose results are kept in its band before they are written out:
 * S1_TGROUP * S1_MR pixels (a run of 56 for 7-pixel tiles) per channel row of dst. */
#define S1_TGROUP 8

/* dst[m*ldd + i] (=, +=) band[i*ldb + m] for i < n, m < M (OUT_BIAS stores band + bias[m],
 * OUT_STORE 0 + band, OUT_ADD adds band): the band of s1_product_t written out transposed,
 * in 8 x 8 blocks (each a vector load per band row and a vector store per dst row), the
 * ragged edges element by element. The same operation per element as an element-wise loop. */
MCL_HOT static void band_out_t(const float *restrict band, int64_t ldb, int64_t n, int64_t M,
                               float *restrict dst, int64_t ldd, const float *bias, int mode)
{
    const int64_t n8 = n / 8 * 8, M8 = M / 8 * 8;
    for (int64_t i0 = 0; i0 < n8; i0 += 8)
        for (int64_t m0 = 0; m0 < M8; m0 += 8) {
#if defined(__AVX__)
            __m256 v[8]; /* v[m]: the 8 pixels of channel m0 + m */
            tr8x8(band + i0 * ldb + m0, ldb, v);
            for (int m = 0; m < 8; m++) {
                float *d = dst + (m0 + m) * ldd + i0;
                if (mode == OUT_BIAS)
                    _mm256_storeu_ps(d, _mm256_add_ps(v[m], _mm256_set1_ps(bias[m0 + m])));
                else if (mode == OUT_STORE)
                    _mm256_storeu_ps(d, _mm256_add_ps(_mm256_setzero_ps(), v[m]));
                else
                    _mm256_storeu_ps(d, _mm256_add_ps(_mm256_loadu_ps(d), v[m]));
            }
#else
            float blk[8][8]; /* blk[m][i] */
            for (int i = 0; i < 8; i++)
                for (int m = 0; m < 8; m++) blk[m][i] = band[(i0 + i) * ldb + m0 + m];
            for (int m = 0; m < 8; m++) {
                float *restrict d = dst + (m0 + m) * ldd + i0;
                if (mode == OUT_BIAS) {
                    const float bm = bias[m0 + m];
                    for (int i = 0; i < 8; i++) d[i] = blk[m][i] + bm;
                } else if (mode == OUT_STORE)
                    for (int i = 0; i < 8; i++) d[i] = 0.0f + blk[m][i];
                else
                    for (int i = 0; i < 8; i++) d[i] += blk[m][i];
            }
#endif
        }
    for (int64_t m = 0; m < M; m++)
        for (int64_t i = m < M8 ? n8 : 0; i < n; i++) {
            const float v = band[i * ldb + m];
            float *d = dst + m * ldd + i;
            if (mode == OUT_BIAS)
                *d = v + bias[m];
            else if (mode == OUT_STORE)
                *d = 0.0f + v;
            else
                *d += v;
        }
}

/* With AVX-512 (32 vector registers), s1_product_t runs a larger tile where the image rows
 * split into runs of R pixels, R in [S1_RUN_MIN, S1_RUN_MAX] (14 x 14 and 7 x 7: R = 7): two
 * runs of R consecutive pixels x S1_NR rows of A, 4R accumulators (28 zmm for R = 7), each
 * run read through one pointer (pixel i at b1 + i), so the tile needs two pointers where
 * s1_tile_tn needs one per pixel. Each row of A then serves 2R pixels instead of S1_MR - 1
 * or S1_MR: half the traffic of A (at, [K, 32], 36 KiB for K = 288, read from L2 once per
 * tile). Each output element is the same fmaf sequence as in s1_tile_tn (the same bits). */
#if defined(__AVX512F__)
#define S1_RUN_MIN 5
#define S1_RUN_MAX 7
#else
#define S1_RUN_MAX 0
#endif

#if S1_RUN_MAX
/* tile[i][m] = sum_{k < K} x_i[boff[k]] * at[k*lda + m] for i < 2R, m < S1_NR, with x_i =
 * b1 + i for i < R and b2 + i - R after; stored at c[i*ldc + m] */
S1_INLINE void s1_tile_runn(int R, int64_t K, const float *b1, const float *b2,
                            const int64_t *restrict boff, const float *restrict at, int64_t lda,
                            float *restrict c, int64_t ldc)
{
    float acc[2 * S1_RUN_MAX][S1_NR];
    for (int i = 0; i < 2 * R; i++)
        MCL_SIMD for (int m = 0; m < S1_NR; m++) acc[i][m] = 0.0f;
    for (int64_t k = 0; k < K; k++) {
        const float *x1 = b1 + boff[k], *x2 = b2 + boff[k], *ak = at + k * lda;
        for (int i = 0; i < R; i++) {
            const float bi = x1[i];
            MCL_SIMD for (int m = 0; m < S1_NR; m++) acc[i][m] = MADD(bi, ak[m], acc[i][m]);
        }
        for (int i = 0; i < R; i++) {
            const float bi = x2[i];
            MCL_SIMD for (int m = 0; m < S1_NR; m++)
                acc[R + i][m] = MADD(bi, ak[m], acc[R + i][m]);
        }
    }
    for (int i = 0; i < 2 * R; i++)
        MCL_SIMD for (int m = 0; m < S1_NR; m++) c[i * ldc + m] = acc[i][m];
}

/* s1_tile_runn for R in [S1_RUN_MIN, S1_RUN_MAX] */
MCL_HOT static void s1_tile_run(int R, int64_t K, const float *b1, const float *b2,
                                const int64_t *boff, const float *at, int64_t lda, float *c,
                                int64_t ldc)
{
    switch (R) {
    case 5: s1_tile_runn(5, K, b1, b2, boff, at, lda, c, ldc); return;
    case 6: s1_tile_runn(6, K, b1, b2, boff, at, lda, c, ldc); return;
    default: s1_tile_runn(7, K, b1, b2, boff, at, lda, c, ldc); return;
    }
}

/* The run length R for rows of wo pixels: the largest divisor of wo in [S1_RUN_MIN,
 * S1_RUN_MAX], 0 if none */
static int s1_run_pixels(int64_t wo)
{
    for (int R = S1_RUN_MAX; R >= S1_RUN_MIN; R--)
        if (wo % R == 0) return R;
    return 0;
}
#endif

/* s1_product with s1_tile_t over the P = ho*wo valid pixels (grid rows of wp columns, wo of
 * them valid): at [K, round_up(M, S1_NR)] is A transposed (zero past M), band [S1_TGROUP *
 * S1_MR, round_up(M, S1_NR)] holds S1_TGROUP tiles, written out together with band_out_t;
 * dst[m][p] (=, +=) as in band_out. A last tile with fewer than S1_MR pixels points its spare
 * lanes at the last pixel and drops them. */
static void s1_product_t(int64_t M, int64_t P, int64_t K, const float *at, const float *b,
                         const int64_t *boff, int64_t wp, int64_t wo, float *band, float *dst,
                         int64_t ldd, const float *bias, int mode, pf_cursor *pf)
{
    const int64_t Mn = round_up(M, S1_NR);
#if S1_RUN_MAX
    const int R = s1_run_pixels(wo);
    if (R) { /* tiles of two runs of R pixels, groups of S1_TGROUP runs */
        for (int64_t g0 = 0; g0 < P; g0 += S1_TGROUP * R) {
            const int64_t gn = P - g0 < S1_TGROUP * R ? P - g0 : S1_TGROUP * R;
            for (int64_t p0 = g0; p0 < g0 + gn; p0 += 2 * R) {
                const int64_t p1 = p0 + R < P ? p0 + R : p0; /* a last single run: twice */
                const float *b1 = b + p0 / wo * wp + p0 % wo, *b2 = b + p1 / wo * wp + p1 % wo;
                for (int64_t m0 = 0; m0 < Mn; m0 += S1_NR) {
                    pf_step(pf);
                    s1_tile_run(R, K, b1, b2, boff, at + m0, Mn, band + (p0 - g0) * Mn + m0, Mn);
                }
            }
            band_out_t(band, Mn, gn, M, dst + g0, ldd, bias, mode);
        }
        return;
    }
#endif
    const int np = s1_tile_pixels(P);
    for (int64_t g0 = 0; g0 < P; g0 += S1_TGROUP * np) {
        const int64_t gn = P - g0 < S1_TGROUP * np ? P - g0 : S1_TGROUP * np;
        for (int64_t p0 = g0; p0 < g0 + gn; p0 += np) {
            const float *bp[S1_MR];
            for (int i = 0; i < np; i++) {
                const int64_t p = p0 + i < P ? p0 + i : P - 1;
                bp[i] = b + p / wo * wp + p % wo;
            }
            for (int64_t m0 = 0; m0 < Mn; m0 += S1_NR) {
                pf_step(pf);
                s1_tile_t(np, K, bp, boff, at + m0, Mn, band + (p0 - g0) * Mn + m0, Mn);
            }
        }
        band_out_t(band, Mn, gn, M, dst + g0, ldd, bias, mode);
    }
}

/* Whether the product of M rows over P valid pixels (J grid columns) wastes less work with
 * s1_product_t (tiles of S1_MR pixels x S1_NR rows) than with s1_product (S1_MR rows x S1_NR
 * grid columns). */
static int s1_swap(int64_t M, int64_t J, int64_t P)
{
    return round_up(P, s1_tile_pixels(P)) * round_up(M, S1_NR) <
           round_up(J, S1_NR) * round_up(M, S1_MR);
}

/* The register tiles of one product (the steps of its pf_cursor): s1_product_t (swap) of M
 * rows over P pixels in rows of wo, or s1_product over the grid of J columns */
static int64_t s1_tiles(int swap, int64_t M, int64_t P, int64_t J, int64_t wo)
{
    if (!swap) return (J + S1_NR - 1) / S1_NR * ((M + S1_MR - 1) / S1_MR);
    const int64_t strips = round_up(M, S1_NR) / S1_NR;
#if S1_RUN_MAX
    const int R = s1_run_pixels(wo);
    if (R) return (P + 2 * R - 1) / (2 * R) * strips;
#else
    (void)wo;
#endif
    const int np = s1_tile_pixels(P);
    return (P + np - 1) / np * strips;
}

/* at[k][m] = a[m*K + k] for m < M, 0 for m in [M, round_up(M, S1_NR)): A [M, K] transposed */
static void s1_transpose_a(const float *a, int64_t M, int64_t K, float *at)
{
    const int64_t Mn = round_up(M, S1_NR);
    for (int64_t k = 0; k < K; k++)
        for (int64_t m = 0; m < Mn; m++) at[k * Mn + m] = m < M ? a[m * K + k] : 0.0f;
}

/* The weight gradient of a convolution with few rows of im2col (KK < S1_FWD_MIN_KK, e.g. a
 * first layer on one-channel images) as dot products: gw[o][r] = sum_j g[o][j] * x_r[j]
 * runs along the grid in both operands (g copied onto the grid, zero on dropped columns),
 * so neither needs transposing, which would cost more than the few products per element.
 * A DOT_TO x DOT_TR tile of (o, r) sums is kept in DOT_L interleaved float lanes (grid column
 * j in lane j % DOT_L, fmaf in increasing j), the lanes added pairwise at the end (l and
 * l + h for h = DOT_L/2, .., 1), the result added in double to the chunk's sums. */
#if defined(__AVX512F__)
#define DOT_L 16
#define DOT_TO 8 /* 8 x 3 accumulators: 24 of the 32 vector registers; per step 8 + 3 loads */
#define DOT_TR 3 /* for 24 fmaf (4 x 3 was 7 for 12, 2 x 9 11 for 18: both slower) */
#else
#define DOT_L 8
#define DOT_TO 4
#define DOT_TR 3
#endif

/* red[i][t][0] <- the DOT_L lanes of red[i][t] added pairwise (l and l + h for h = DOT_L/2,
 * .., 1); out[i*ldo + t] += red[i][t][0] for i < ni, t < nt */
static void dot_lanes_out(float red[DOT_TO][DOT_TR][DOT_L], int ni, int nt, double *out,
                          int64_t ldo)
{
    for (int h = DOT_L / 2; h >= 1; h /= 2)
        for (int i = 0; i < DOT_TO; i++)
            for (int t = 0; t < DOT_TR; t++)
                for (int l = 0; l < h; l++) red[i][t][l] += red[i][t][l + h];
    for (int i = 0; i < ni; i++)
        for (int t = 0; t < nt; t++) out[i * ldo + t] += (double)red[i][t][0];
}

/* out[i*ldo + t] += sum_{j < n} a[i*lda + j] * b[t][j]  for i < ni, t < nt (the tile's other
 * rows exist, zero or not; n % DOT_L == 0). With AVX-512 the accumulators are vector
 * variables: written as float arrays, GCC kept them on the stack (a load and a store around
 * every fmaf, the tile at a fifth of the FMA peak). The same fmaf in the same order. */
#if defined(__AVX512F__) && defined(FP_FAST_FMAF)
MCL_HOT static void dot_tile(const float *restrict a, int64_t lda, const float *const *b,
                             int64_t n, int ni, int nt, double *restrict out, int64_t ldo,
                             pf_cursor *pf1, pf_cursor *pf2)
{
    const float *br[DOT_TR];
    for (int t = 0; t < DOT_TR; t++) br[t] = b[t];
    __m512 acc[DOT_TO][DOT_TR];
    for (int i = 0; i < DOT_TO; i++)
        for (int t = 0; t < DOT_TR; t++) acc[i][t] = _mm512_setzero_ps();
    for (int64_t j = 0; j < n; j += DOT_L) {
        pf_step(pf1);
        pf_step(pf2);
        __m512 va[DOT_TO], vb[DOT_TR]; /* one load per row and step */
        for (int i = 0; i < DOT_TO; i++) va[i] = _mm512_loadu_ps(a + i * lda + j);
        for (int t = 0; t < DOT_TR; t++) vb[t] = _mm512_loadu_ps(br[t] + j);
        for (int i = 0; i < DOT_TO; i++)
            for (int t = 0; t < DOT_TR; t++) acc[i][t] = _mm512_fmadd_ps(va[i], vb[t], acc[i][t]);
    }
    float red[DOT_TO][DOT_TR][DOT_L];
    for (int i = 0; i < DOT_TO; i++)
        for (int t = 0; t < DOT_TR; t++) _mm512_storeu_ps(red[i][t], acc[i][t]);
    dot_lanes_out(red, ni, nt, out, ldo);
}
#else
MCL_HOT static void dot_tile(const float *restrict a, int64_t lda, const float *const *b,
                             int64_t n, int ni, int nt, double *restrict out, int64_t ldo,
                             pf_cursor *pf1, pf_cursor *pf2)
{
    const float *br[DOT_TR];
    for (int t = 0; t < DOT_TR; t++) br[t] = b[t];
    float acc[DOT_TO][DOT_TR][DOT_L];
    for (int i = 0; i < DOT_TO; i++)
        for (int t = 0; t < DOT_TR; t++)
            MCL_SIMD for (int l = 0; l < DOT_L; l++) acc[i][t][l] = 0.0f;
    for (int64_t j = 0; j < n; j += DOT_L) {
        pf_step(pf1);
        pf_step(pf2);
        float va[DOT_TO][DOT_L], vb[DOT_TR][DOT_L]; /* one load per row and step */
        for (int i = 0; i < DOT_TO; i++)
            MCL_SIMD for (int l = 0; l < DOT_L; l++) va[i][l] = a[i * lda + j + l];
        for (int t = 0; t < DOT_TR; t++)
            MCL_SIMD for (int l = 0; l < DOT_L; l++) vb[t][l] = br[t][j + l];
        for (int i = 0; i < DOT_TO; i++)
            for (int t = 0; t < DOT_TR; t++)
                MCL_SIMD for (int l = 0; l < DOT_L; l++)
                    acc[i][t][l] = MADD(va[i][l], vb[t][l], acc[i][t][l]);
    }
    dot_lanes_out(acc, ni, nt, out, ldo);
}
#endif

/* The weight gradient of a convolution with many rows of im2col (KK >= S1_FWD_MIN_KK), one
 * image at a time, over its valid output pixels only:
 *   prod[r][o] (+)= sum_{p < P} x_r[koff[p]] * gT[p][o],   koff[p] = (p / Wo)*Wp + p % Wo
 * x_r is row r of im2col read in place from the padded planes (xp + roff[r]); koff puts
 * pixel p on the grid, so the grid columns that are dropped elsewhere (ox >= Wo) are not
 * visited at all (they would add x * 0). gT [P, ldb] is g transposed, pixel-major. The
 * register tile is S1_MR rows of x_r by NW channels o, NW a multiple of 8 up to S1_NR, so
 * that a layer with 24 channels runs a 24-wide tile instead of a 32-wide one a quarter of
 * which is zeros. Each sum is fmaf in increasing p from 0, whatever NW: on finite inputs the
 * bits equal those of the full-grid product (adding x * +0 to a sum changes no bit unless the
 * sum is -0; an x that is Inf or NaN in a dropped column no longer leaks into gw). */
#define GW_STEP 8 /* tile widths: multiples of 8 floats (a 256-bit vector) */

/* c[i*ldc + o] (+)= sum_{p < P} a[i][koff[p]] * b[p*ldb + o]  for i < S1_MR, o < nw
 * (a compile-time constant at every call: the accumulators stay in registers) */
S1_INLINE void gw_tile(int nw, int64_t P, const float *const *a, const int64_t *restrict koff,
                       const float *restrict b, int64_t ldb, float *restrict c, int64_t ldc,
                       int add)
{
    const float *ar[S1_MR];
    for (int i = 0; i < S1_MR; i++) ar[i] = a[i];
    float acc[S1_MR][S1_NR];
    for (int i = 0; i < S1_MR; i++)
        MCL_SIMD for (int o = 0; o < nw; o++) acc[i][o] = 0.0f;
    for (int64_t p = 0; p < P; p++) {
        const int64_t kp = koff[p];
        const float *restrict bp = b + p * ldb;
        for (int i = 0; i < S1_MR; i++) {
            const float ai = ar[i][kp];
            MCL_SIMD for (int o = 0; o < nw; o++) acc[i][o] = MADD(ai, bp[o], acc[i][o]);
        }
    }
    if (add)
        for (int i = 0; i < S1_MR; i++)
            MCL_SIMD for (int o = 0; o < nw; o++) c[i * ldc + o] += acc[i][o];
    else
        for (int i = 0; i < S1_MR; i++)
            MCL_SIMD for (int o = 0; o < nw; o++) c[i * ldc + o] = acc[i][o];
}

/* gw_tile with nw = the rest of the channels, rounded up to GW_STEP, at most S1_NR (one
 * instance per width, each with its register tile) */
MCL_HOT static void gw_tile_any(int64_t nw, int64_t P, const float *const *a,
                                const int64_t *koff, const float *b, int64_t ldb, float *c,
                                int64_t ldc, int add)
{
    if (nw >= S1_NR) nw = S1_NR;
    switch ((nw + GW_STEP - 1) / GW_STEP) {
#if S1_NR >= 32
    case 3: gw_tile(24, P, a, koff, b, ldb, c, ldc, add); return;
#endif
#if S1_NR >= 16
    case 2: gw_tile(16, P, a, koff, b, ldb, c, ldc, add); return;
#endif
    case 1: gw_tile(8, P, a, koff, b, ldb, c, ldc, add); return;
    default: gw_tile(S1_NR, P, a, koff, b, ldb, c, ldc, add); return;
    }
}

/* Copy the planes src [n, h, w] into a zero-bordered layout dst (border and slack stay
 * zero): pb zero floats, then per plane pb zero rows, h rows of [w values, pb zeros], pb zero
 * rows; rows are w + pb floats. One run of pb zeros between two rows is both the right
 * border of the first and the left border of the second, so element (q, y, x) for x in
 * [-pb, w + pb) reads a value or a border zero at dst + pb + (q*(h + 2 pb) + pb + y)*(w + pb)
 * + x. */
MCL_COPY static void to_padded(const float *src, int64_t n, int64_t h, int64_t w, int64_t pb,
                               float *dst)
{
    const int64_t wp = w + pb, hp = h + 2 * pb;
    for (int64_t q = 0; q < n; q++)
        for (int64_t y = 0; y < h; y++) {
            const float *restrict s = src + (q * h + y) * w;
            float *restrict d = dst + pb + (q * hp + pb + y) * wp;
            for (int64_t x = 0; x < w; x++) d[x] = s[x];
        }
}

/* The stride-1 shapes of one call (conv_s1.h). */
typedef mcl_ref_s1_dims s1_dims;

static void s1_dims_get(const conv_dims *d, s1_dims *e)
{
    e->Hp = d->H + 2 * d->pd;
    e->Wp = d->W + d->pd;
    e->J = d->Ho * e->Wp;
    e->Jr = round_up(e->J, S1_NR);
    e->pg = d->k - 1 - d->pd;
    e->Hg = d->Ho + 2 * e->pg;
    e->Wg = d->Wo + e->pg;
    e->Jx = d->H * e->Wg;
    e->Jxr = round_up(e->Jx, S1_NR);
    e->xpn = d->pd + d->C * e->Hp * e->Wp + S1_NR + d->k;
    e->gpn = e->pg + d->O * e->Hg * e->Wg + S1_NR + d->k;
}

/* roff[(c*k + ky)*k + kx] = (c*hp + ky)*wp + kx for c < n: where row (c, ky, kx) starts in
 * a padded plane [n, hp, wp] */
static void s1_offsets(int64_t n, int64_t k, int64_t hp, int64_t wp, int64_t *roff)
{
    for (int64_t c = 0; c < n; c++)
        for (int64_t ky = 0; ky < k; ky++)
            for (int64_t kx = 0; kx < k; kx++)
                roff[(c * k + ky) * k + kx] = (c * hp + ky) * wp + kx;
}

/* The forward of a convolution with few rows of im2col (KK < S1_FWD_MIN_KK, e.g. a first
 * layer on one-channel images), straight into out: a tile of S1_MR channels x S1_NR pixels of
 * one output row,
 *   c[i*ldc + j] = sum_{k < K} a[i][k] * b[boff[k] + j] + bias[i]   for i < mr, j < nv
 * (b: the row's first pixel on the padded planes; a: S1_MR rows of w, those past O reading
 * zeros). With so short a sum the band of s1_product and its copy into out would cost as
 * much as the products; here the tile is stored once, masked to the row's nv pixels. The sum
 * is fmaf in increasing k from 0, then + bias: the same bits as the im2col path's GEMM and
 * bias. */
MCL_HOT static void s1_tile_row(int64_t K, const float *const *a, const float *restrict b,
                                const int64_t *restrict boff, const float *restrict bias, int mr,
                                int64_t nv, float *restrict c, int64_t ldc)
{
    const float *ar[S1_MR];
    for (int i = 0; i < S1_MR; i++) ar[i] = a[i];
    float acc[S1_MR][S1_NR];
    for (int i = 0; i < S1_MR; i++)
        MCL_SIMD for (int j = 0; j < S1_NR; j++) acc[i][j] = 0.0f;
    for (int64_t k = 0; k < K; k++) {
        const float *bk = b + boff[k];
        for (int i = 0; i < S1_MR; i++) {
            const float ai = ar[i][k];
            MCL_SIMD for (int j = 0; j < S1_NR; j++) acc[i][j] = MADD(ai, bk[j], acc[i][j]);
        }
    }
    for (int i = 0; i < S1_MR; i++) {
        if (i >= mr) break;
        const float bi = bias[i];
        MCL_SIMD for (int j = 0; j < S1_NR; j++)
            if (j < nv) c[i * ldc + j] = acc[i][j] + bi;
    }
}

/* out_b [O, P] = w · x_r + bias with s1_tile_row, row segment by row segment (xp: the image's
 * padded planes, roff: the rows of im2col on them) */
static void s1_rows_out(const conv_dims *d, const s1_dims *e, const float *w, const float *zeros,
                        const float *xp, const int64_t *roff, const float *bias, float *ob)
{
    for (int64_t o0 = 0; o0 < d->O; o0 += S1_MR) {
        const float *rows[S1_MR];
        s1_rows(w, NULL, d->KK, o0, d->O, zeros, rows);
        const int mr = d->O - o0 < S1_MR ? (int)(d->O - o0) : S1_MR;
        for (int64_t oy = 0; oy < d->Ho; oy++)
            for (int64_t ox = 0; ox < d->Wo; ox += S1_NR)
                s1_tile_row(d->KK, rows, xp + oy * e->Wp + ox, roff, bias + o0, mr,
                            d->Wo - ox < S1_NR ? d->Wo - ox : S1_NR,
                            ob + o0 * d->P + oy * d->Wo + ox, d->P);
    }
}

/* ---- the forward of a first layer whose output planes have the input's shape ----------
 * With stride 1 and 2 pd = k - 1 (Ho = H, Wo = W) and few rows of im2col (KK <
 * S1_FWD_MIN_KK), a tile runs along the flat pixel index p = oy*W + ox of the output plane
 * instead of along one output row: it covers whole 16-float vectors of out_b, so it can be
 * written with full-line (streaming) stores, and no pixel of a padded grid is computed.
 * Tap (c, ky, kx) of pixel p reads x[c, oy + ky - pd, ox + dx] (dx = kx - pd), that is the
 * flat index p + ky*W + dx of plane c with pd zero rows above and below, except where ox + dx
 * leaves the row (it then reads the neighbouring row's other end, which must count as 0).
 * So the image is laid out k times, once per kx ("version" kx), each plane with the columns
 * that a wrap would reach zeroed (dx < 0: columns >= W + dx; dx > 0: columns < dx): every
 * tap is one contiguous load, and every product the padded planes would form with a border
 * zero is formed here with the same zero, in the same order (same bits). */

/* Streaming stores for an output larger than this many bytes (it leaves the caches before
 * the next op reads it anyway; a smaller one is left in L2 for that op); also used by the
 * pixel-major forward (s1_product_t) through an image-sized scratch, see conv_fwd_s1. */
#define FLAT_STREAM_MIN ((int64_t)8 << 20)

/* The flat layout of one call: version size, and the tap offsets foff[(c*k + ky)*k + kx] */
static int64_t flat_version(const conv_dims *d)
{
    return round_up(d->pd + d->C * (d->H + 2 * d->pd) * d->W + S1_NR + d->k, 16);
}

static void flat_offsets(const conv_dims *d, int64_t vs, int64_t *foff)
{
    const int64_t k = d->k, HpW = (d->H + 2 * d->pd) * d->W;
    for (int64_t c = 0; c < d->C; c++)
        for (int64_t ky = 0; ky < k; ky++)
            for (int64_t kx = 0; kx < k; kx++)
                foff[(c * k + ky) * k + kx] = kx * vs + d->pd + c * HpW + ky * d->W + kx - d->pd;
}

/* The k versions of x_b [C, H, W] in xf [k, vs] (zeros elsewhere, written once by calloc):
 * version kx, plane c, row y at pd + c*Hp*W + (pd + y)*W, columns [lo, hi) of the row
 * (dx = kx - pd: lo = max(dx, 0), hi = W + min(dx, 0)) */
MCL_COPY static void to_flat(const conv_dims *d, int64_t vs, const float *xb, float *xf)
{
    const int64_t HpW = (d->H + 2 * d->pd) * d->W;
    for (int64_t kx = 0; kx < d->k; kx++) {
        const int64_t dx = kx - d->pd, lo = dx > 0 ? dx : 0, hi = dx < 0 ? d->W + dx : d->W;
        for (int64_t c = 0; c < d->C; c++)
            for (int64_t y = 0; y < d->H; y++) {
                const float *restrict s = xb + (c * d->H + y) * d->W;
                float *restrict t = xf + kx * vs + d->pd + c * HpW + (d->pd + y) * d->W;
                for (int64_t x = lo; x < hi; x++) t[x] = s[x];
            }
    }
}

/* s1_tile_row's sums on the flat layout, stored with full-vector streaming stores where
 * stream != 0 (c + i*ldc 64-byte aligned): c[i*ldc + j] = sum_{k < K} a[i][k] * b[boff[k] +
 * j] + bias[i] for i < mr, j < nv; fmaf in increasing k from 0, then + bias (the bits of
 * s1_tile_row). With AVX-512 the accumulators are vector variables (see dot_tile). */
#if defined(__AVX512F__) && defined(FP_FAST_FMAF)
MCL_HOT static void s1_tile_flat(int64_t K, const float *const *a, const float *restrict b,
                                 const int64_t *restrict boff, const float *restrict bias, int mr,
                                 int64_t nv, float *restrict c, int64_t ldc, int stream)
{
    const float *ar[S1_MR];
    for (int i = 0; i < S1_MR; i++) ar[i] = a[i];
    __m512 acc[S1_MR][2];
    for (int i = 0; i < S1_MR; i++) acc[i][0] = acc[i][1] = _mm512_setzero_ps();
    for (int64_t k = 0; k < K; k++) {
        const float *bk = b + boff[k];
        const __m512 v0 = _mm512_loadu_ps(bk), v1 = _mm512_loadu_ps(bk + 16);
        for (int i = 0; i < S1_MR; i++) {
            const __m512 ai = _mm512_set1_ps(ar[i][k]);
            acc[i][0] = _mm512_fmadd_ps(ai, v0, acc[i][0]);
            acc[i][1] = _mm512_fmadd_ps(ai, v1, acc[i][1]);
        }
    }
    const int64_t n0 = nv < 16 ? nv : 16, n1 = nv - n0;
    const __mmask16 m0 = (__mmask16)((1u << n0) - 1), m1 = (__mmask16)((1u << n1) - 1);
    for (int i = 0; i < S1_MR && i < mr; i++) {
        const __m512 bi = _mm512_set1_ps(bias[i]);
        const __m512 r0 = _mm512_add_ps(acc[i][0], bi), r1 = _mm512_add_ps(acc[i][1], bi);
        float *ci = c + i * ldc;
        if (stream && n0 == 16)
            _mm512_stream_ps(ci, r0);
        else
            _mm512_mask_storeu_ps(ci, m0, r0);
        if (stream && n1 == 16)
            _mm512_stream_ps(ci + 16, r1);
        else if (n1 > 0)
            _mm512_mask_storeu_ps(ci + 16, m1, r1);
    }
}
#else
static void s1_tile_flat(int64_t K, const float *const *a, const float *restrict b,
                         const int64_t *restrict boff, const float *restrict bias, int mr,
                         int64_t nv, float *restrict c, int64_t ldc, int stream)
{
    (void)stream;
    s1_tile_row(K, a, b, boff, bias, mr, nv, c, ldc);
}
#endif

/* dst[j] = src[j] for j < n, dst 64-byte aligned, n % 16 == 0: streaming stores */
static void stream_copy(float *restrict dst, const float *restrict src, int64_t n)
{
#if defined(__AVX512F__) && defined(FP_FAST_FMAF)
    for (int64_t j = 0; j < n; j += 16) _mm512_stream_ps(dst + j, _mm512_load_ps(src + j));
#else
    memcpy(dst, src, (size_t)n * sizeof(float));
#endif
}

/* out_b [O, P] = w · x_r + bias with s1_tile_flat, S1_NR pixels of S1_MR planes at a time
 * (xf: the image's versions, foff: the taps on them); stream: out_b's planes start 64-byte
 * aligned and are streamed */
static void flat_out(const conv_dims *d, const float *w, const float *zeros, const float *xf,
                     const int64_t *foff, const float *bias, float *ob, int stream)
{
    for (int64_t o0 = 0; o0 < d->O; o0 += S1_MR) {
        const float *rows[S1_MR];
        s1_rows(w, NULL, d->KK, o0, d->O, zeros, rows);
        const int mr = d->O - o0 < S1_MR ? (int)(d->O - o0) : S1_MR;
        for (int64_t p0 = 0; p0 < d->P; p0 += S1_NR)
            s1_tile_flat(d->KK, rows, xf + p0, foff, bias + o0, mr,
                         d->P - p0 < S1_NR ? d->P - p0 : S1_NR, ob + o0 * d->P + p0, d->P,
                         stream);
    }
}

/* forward, stride 1: per image, xp <- x_b; grid = w · x_r; out_b = grid (valid) + bias. The
 * shared part of a call (conv_s1.h): the row offsets (flat: the tap offsets), a row of zeros,
 * w transposed if swap. */
mcl_status mcl_ref_s1_fwd_init(mcl_ref_s1_fwd *pl, const conv_dims *d, const float *w,
                               const float *bias, const float *out)
{
    memset(pl, 0, sizeof *pl);
    pl->d = *d;
    pl->w = w;
    pl->bias = bias;
    s1_dims_get(d, &pl->e);
    const int64_t OP = d->O * d->P, On = round_up(d->O, S1_NR);
    pl->swap = s1_swap(d->O, pl->e.J, d->P);
    /* the flat layout (see above) for a first layer with Ho = H, Wo = W; streamed when the
     * output is large and its planes are 64-byte aligned */
    pl->flat = d->KK < S1_FWD_MIN_KK && d->Ho == d->H && d->Wo == d->W;
    pl->vs = pl->flat ? flat_version(d) : 0;
    pl->stream = out && pl->flat && d->B * OP * (int64_t)sizeof(float) > FLAT_STREAM_MIN &&
                 d->P % 16 == 0 && ((uintptr_t)out & 63) == 0;
    /* s1_product_t into an image-sized scratch img [O, P] (L2), then streamed into out_b
     * whole (same condition as the flat tile's streaming: out_b's 64-byte lines are written
     * whole, no read-for-ownership) */
    pl->stream_img = out && !pl->flat && pl->swap && d->B * OP * (int64_t)sizeof(float) > FLAT_STREAM_MIN &&
                     OP % 16 == 0 && ((uintptr_t)out & 63) == 0;
    /* per thread: xp (zero border and slack, written once), band [Or, S1_NR] or, if swap,
     * [S1_TGROUP * S1_MR, On]; flat: the k versions, no band */
    pl->nband = pl->swap ? S1_TGROUP * S1_MR * On : round_up(d->O, S1_MR) * S1_NR;
    pl->nxp = pl->flat ? d->k * pl->vs : pl->e.xpn;
    pl->off_img = round_up(pl->nxp + pl->nband, 16);
    pl->roff = malloc((size_t)d->KK * sizeof(int64_t));
    pl->zeros = calloc((size_t)d->KK, sizeof(float));
    pl->wt = pl->swap ? calloc_floats64((size_t)(d->KK * On)) : NULL; /* rows of On: aligned */
    if (!pl->roff || !pl->zeros || (pl->swap && !pl->wt)) {
        mcl_ref_s1_fwd_free(pl);
        return MCL_ERR_OOM;
    }
    if (pl->flat)
        flat_offsets(d, pl->vs, pl->roff);
    else
        s1_offsets(d->C, d->k, pl->e.Hp, pl->e.Wp, pl->roff);
    if (pl->swap) s1_transpose_a(w, d->O, d->KK, pl->wt);
    return MCL_OK;
}

void mcl_ref_s1_fwd_free(mcl_ref_s1_fwd *pl)
{
    free(pl->roff);
    free(pl->zeros);
    free(pl->wt);
    pl->roff = NULL;
    pl->zeros = pl->wt = NULL;
}

/* xp and band, then (optional, for stream_img) img [O, P] 64-byte aligned after them */
float *mcl_ref_s1_fwd_ws(const mcl_ref_s1_fwd *pl)
{
    return calloc_floats64((size_t)(pl->off_img + (pl->stream_img ? pl->d.O * pl->d.P : 0)));
}

void mcl_ref_s1_fwd_image(const mcl_ref_s1_fwd *pl, float *ws, const float *xb, const float *xnext,
                          float *ob)
{
    const conv_dims *d = &pl->d;
    const s1_dims *e = &pl->e;
    float *xp = ws, *band = ws + pl->nxp;
    float *img = pl->stream_img ? ws + pl->off_img : NULL;
    if (pl->flat) {
        to_flat(d, pl->vs, xb, xp);
        flat_out(d, pl->w, pl->zeros, xp, pl->roff, pl->bias, ob, pl->stream);
        return;
    }
    to_padded(xb, d->C, d->H, d->W, d->pd, xp);
    /* the next image's x, during this one's product (its to_padded waited on memory) */
    pf_cursor pf = pf_over(xnext, d->C * d->H * d->W * (int64_t)sizeof(float),
                           s1_tiles(pl->swap, d->O, d->P, e->J, d->Wo));
    if (d->KK < S1_FWD_MIN_KK)
        s1_rows_out(d, e, pl->w, pl->zeros, xp, pl->roff, pl->bias, ob);
    else if (pl->swap && img) {
        s1_product_t(d->O, d->P, d->KK, pl->wt, xp, pl->roff, e->Wp, d->Wo, band, img, d->P,
                     pl->bias, OUT_BIAS, &pf);
        stream_copy(ob, img, d->O * d->P);
    } else if (pl->swap)
        s1_product_t(d->O, d->P, d->KK, pl->wt, xp, pl->roff, e->Wp, d->Wo, band, ob, d->P,
                     pl->bias, OUT_BIAS, &pf);
    else
        s1_product(d->O, e->J, d->KK, pl->w, pl->zeros, xp, pl->roff, e->Wp, d->Wo, band, ob,
                   d->P, pl->bias, OUT_BIAS, &pf);
}

static mcl_status conv_fwd_s1(const mcl_op_args *a, const conv_dims *d)
{
    const float *x = mcl_ref_ptr(a->in[0]);
    float *out = mcl_ref_ptr(a->out[0]);
    const int64_t CHW = d->C * d->H * d->W, OP = d->O * d->P;
    mcl_ref_s1_fwd pl;
    if (mcl_ref_s1_fwd_init(&pl, d, mcl_ref_ptr(a->in[1]), mcl_ref_ptr(a->in[2]), out) != MCL_OK)
        return MCL_ERR_OOM;
    int oom = 0;
#pragma omp parallel if (d->B > 1 && d->B * OP * d->KK > PAR_MIN)
    {
        float *ws = mcl_ref_s1_fwd_ws(&pl);
        if (!ws) {
#pragma omp atomic write
            oom = 1;
        }
#pragma omp for schedule(static)
        for (int64_t b = 0; b < d->B; b++)
            if (ws)
                mcl_ref_s1_fwd_image(&pl, ws, x + b * CHW, b + 1 < d->B ? x + (b + 1) * CHW : NULL,
                                     out + b * OP);
#if defined(__AVX512F__) && defined(FP_FAST_FMAF)
        if (pl.stream || pl.stream_img) _mm_sfence(); /* the streamed stores before the others' reads */
#endif
        free(ws);
    }
    mcl_ref_s1_fwd_free(&pl);
    return oom ? MCL_ERR_OOM : MCL_OK;
}

/* backward, stride 1 (the equations of mcl_ref_conv2d_bwd), image by image:
 *   gbias: pb[o] += sum_p g_b[o, p]                            (double)
 *   gx_b  = gridx (valid columns), gridx = wt · g_r'           (stored or added)
 *   gw:    prod [KK, O] += x_r · gT, images in order within a chunk; then pw += prodᵀ
 * Images are cut into fixed chunks (mcl_ref_conv_chunks), one thread each; pb and pw (double)
 * are summed over the chunks in order at the end. The shared part of a call (conv_s1.h): wt
 * (and wtt), the row offsets of xp and gp, gT's row offsets, zeros. */
mcl_status mcl_ref_s1_bwd_init(mcl_ref_s1_bwd *pl, const conv_dims *d, const float *w,
                               const mcl_tensor *gx, int want_w, int want_b)
{
    const int want_x = gx != NULL;
    memset(pl, 0, sizeof *pl);
    pl->d = *d;
    s1_dims_get(d, &pl->e);
    const s1_dims *e = &pl->e;
    const int64_t k = d->k, CHW = d->C * d->H * d->W;
    pl->want_x = want_x;
    pl->want_w = want_w;
    pl->want_b = want_b;
    pl->KKx = d->O * k * k; /* K of the gx product */
    pl->Cr = round_up(d->C, S1_MR);
    pl->KKr = round_up(d->KK, S1_MR);
    pl->On = round_up(d->O, S1_NR); /* gT row length */
    /* gw as dot products (few rows of im2col): g on the grid, gg [Od, Jd] */
    pl->dot = d->KK < S1_FWD_MIN_KK;
    pl->Od = round_up(d->O, DOT_TO);
    pl->Jd = round_up(e->J, DOT_L);
    /* gx with s1_product_t (small grids): wt transposed, wtt [KKx, Cn] */
    pl->swap = want_x && s1_swap(d->C, e->Jx, d->H * d->W);
    pl->Cn = round_up(d->C, S1_NR);
    /* per thread, each part 64-byte aligned (so that the rows of 16 floats that gw_tile and
     * s1_tile_t load never straddle two cache lines): xp, gp (borders and slack zero), band
     * [Cr, S1_NR] (swap: [S1_TGROUP * S1_MR, Cn]), gT [P, On] (columns past O zero), prod
     * [KKr, On]; or, for dot, gg [Od, Jd] (dropped columns, rows past O and columns past J
     * zero); then img [C, H*W] when streaming gx */
    const int64_t nband = pl->swap ? S1_TGROUP * S1_MR * pl->Cn : pl->Cr * S1_NR;
    pl->off_gp = round_up(e->xpn, 16);
    pl->off_band = pl->off_gp + round_up(e->gpn, 16);
    pl->off_gT = pl->off_band + round_up(nband, 16);
    pl->off_prod = pl->off_gT + round_up(e->J * pl->On, 16);
    pl->nf = round_up(pl->dot ? pl->off_gT + pl->Od * pl->Jd : pl->off_prod + pl->KKr * pl->On, 16);
    const int64_t nwt = round_up(d->C * pl->KKx, 16); /* wtt's rows of Cn floats: aligned */
    (void)CHW;
    pl->wt = want_x ? calloc_floats64((size_t)(nwt + (pl->swap ? pl->KKx * pl->Cn : 0))) : NULL;
    pl->wtt = pl->swap && pl->wt ? pl->wt + nwt : NULL;
    pl->off = malloc((size_t)(d->KK + pl->KKx + e->J) * sizeof(int64_t));
    const int64_t nz = pl->KKx > e->Jr ? pl->KKx : e->Jr;
    pl->zeros = calloc((size_t)nz, sizeof(float));
    if ((want_x && !pl->wt) || !pl->off || !pl->zeros) {
        mcl_ref_s1_bwd_free(pl);
        return MCL_ERR_OOM;
    }
    pl->roff = pl->off;
    pl->roffx = pl->off + d->KK;
    pl->koff = pl->roffx + pl->KKx;
    s1_offsets(d->C, k, e->Hp, e->Wp, pl->roff);
    s1_offsets(d->O, k, e->Hg, e->Wg, pl->roffx);
    for (int64_t p = 0; p < d->P; p++) pl->koff[p] = p / d->Wo * e->Wp + p % d->Wo;
    if (want_x) /* wt[c][(o*k + ky)*k + kx] = w[o][c][k-1-ky][k-1-kx] */
        for (int64_t c = 0; c < d->C; c++)
            for (int64_t o = 0; o < d->O; o++)
                for (int64_t ky = 0; ky < k; ky++)
                    for (int64_t kx = 0; kx < k; kx++)
                        pl->wt[c * pl->KKx + (o * k + ky) * k + kx] =
                            w[((o * d->C + c) * k + (k - 1 - ky)) * k + (k - 1 - kx)];
    if (pl->swap) s1_transpose_a(pl->wt, d->C, pl->KKx, pl->wtt);
    /* asked once everything shared exists (a fresh gx is then written); a fresh gx above
     * FLAT_STREAM_MIN through s1_product_t: each image into a scratch img [C, H*W], then
     * streamed into gx_b (as in the forward) */
    pl->fresh_x = want_x ? mcl_ref_grad_fresh(gx) : 0;
    pl->stream_gx = pl->fresh_x && pl->swap && d->B * CHW * (int64_t)sizeof(float) > FLAT_STREAM_MIN &&
                    CHW % 16 == 0 && ((uintptr_t)mcl_ref_ptr(gx) & 63) == 0;
    return MCL_OK;
}

void mcl_ref_s1_bwd_free(mcl_ref_s1_bwd *pl)
{
    free(pl->wt);
    free(pl->off);
    free(pl->zeros);
    pl->wt = pl->wtt = pl->zeros = NULL;
    pl->off = pl->roff = pl->roffx = pl->koff = NULL;
}

float *mcl_ref_s1_bwd_ws(const mcl_ref_s1_bwd *pl)
{
    const int64_t CHW = pl->d.C * pl->d.H * pl->d.W;
    return calloc_floats64((size_t)(pl->nf + (pl->stream_gx ? CHW : 0)));
}

int64_t mcl_ref_s1_bwd_part(const mcl_ref_s1_bwd *pl) { return pl->d.O * pl->d.KK + pl->d.O; }

float *mcl_ref_s1_bwd_grid(const mcl_ref_s1_bwd *pl, float *ws, int64_t *ld, int64_t *ldp)
{
    /* the weight gradient's dot products read g on the grid; without gx (whose product reads
     * g from the padded planes) nothing else does, and the bias's sums read the grid's rows in
     * dsum's lanes (dsum_planes) */
    if (!pl->dot || pl->want_x || !pl->want_w) return NULL;
    *ld = pl->e.Wp;
    *ldp = pl->Jd;
    return ws + pl->off_gT;
}

void mcl_ref_s1_bwd_image(const mcl_ref_s1_bwd *pl, float *ws, int first, const float *xb,
                          const float *gb, const float *xnext, const float *gnext, float *gxb,
                          double *pw, double *pb)
{
    const conv_dims *d = &pl->d;
    const s1_dims *e = &pl->e;
    float *xp = ws, *gp = ws + pl->off_gp, *band = ws + pl->off_band, *gT = ws + pl->off_gT;
    float *prod = ws + pl->off_prod;
    float *img = pl->stream_gx ? ws + pl->nf : NULL; /* after the rest, 64-byte aligned */
    const int64_t OP = d->O * d->P, CHW = d->C * d->H * d->W;
    /* the next image's g and x: g during the gx product (without gx, during the weight
     * gradient), x during the weight gradient */
    const int64_t wsteps = pl->dot ? (d->KK + DOT_TR - 1) / DOT_TR * ((d->O + DOT_TO - 1) / DOT_TO) *
                                         ((pl->Jd + DOT_L - 1) / DOT_L)
                                   : pl->KKr / S1_MR * ((d->O + S1_NR - 1) / S1_NR);
    pf_cursor pfg = pf_over(gnext, OP * (int64_t)sizeof(float),
                            pl->want_x ? s1_tiles(pl->swap, d->C, d->H * d->W, e->Jx, d->W) : wsteps);
    pf_cursor pfx = pf_over(pl->want_w ? xnext : NULL, CHW * (int64_t)sizeof(float), wsteps);
    const float *gg0 = ws + pl->off_gT; /* g on the grid: gb NULL (mcl_ref_s1_bwd_grid) */
    if (pl->want_b) {
        if (gb)
            dsum_add_planes(gb, d->O, d->P, 1, d->P, d->P, pb);
        else
            dsum_add_planes(gg0, d->O, pl->Jd, d->Ho, d->Wo, e->Wp, pb);
    }
    if (pl->want_x) { /* gx_b (=, +=) wt · g_r' (valid columns of the grid) */
        to_padded(gb, d->O, d->Ho, d->Wo, e->pg, gp);
        const int mode = pl->fresh_x ? OUT_STORE : OUT_ADD;
        if (pl->swap && img) { /* a fresh gx: stored, through img */
            s1_product_t(d->C, d->H * d->W, pl->KKx, pl->wtt, gp, pl->roffx, e->Wg, d->W, band, img,
                         d->H * d->W, NULL, OUT_STORE, &pfg);
            stream_copy(gxb, img, CHW);
        } else if (pl->swap)
            s1_product_t(d->C, d->H * d->W, pl->KKx, pl->wtt, gp, pl->roffx, e->Wg, d->W, band, gxb,
                         d->H * d->W, NULL, mode, &pfg);
        else
            s1_product(d->C, e->Jx, pl->KKx, pl->wt, pl->zeros, gp, pl->roffx, e->Wg, d->W, band, gxb,
                       d->H * d->W, NULL, mode, &pfg);
    }
    if (pl->want_w && pl->dot) { /* pw[o][r] += sum_j gg[o][j] * x_r[j] */
        to_padded(xb, d->C, d->H, d->W, d->pd, xp);
        float *gg = gT;
        for (int64_t o = 0; gb && o < d->O; o++)
            for (int64_t oy = 0; oy < d->Ho; oy++)
                memcpy(gg + o * pl->Jd + oy * e->Wp, gb + o * d->P + oy * d->Wo, (size_t)d->Wo * sizeof(float));
        for (int64_t r0 = 0; r0 < d->KK; r0 += DOT_TR) {
            const float *rows[DOT_TR]; /* x_r: rows of xp */
            for (int t = 0; t < DOT_TR; t++) rows[t] = r0 + t < d->KK ? xp + pl->roff[r0 + t] : pl->zeros;
            const int nt = d->KK - r0 < DOT_TR ? (int)(d->KK - r0) : DOT_TR;
            for (int64_t o0 = 0; o0 < d->O; o0 += DOT_TO) {
                const int ni = d->O - o0 < DOT_TO ? (int)(d->O - o0) : DOT_TO;
                dot_tile(gg + o0 * pl->Jd, pl->Jd, rows, pl->Jd, ni, nt, pw + o0 * d->KK + r0, d->KK, &pfx,
                         pl->want_x ? NULL : &pfg);
            }
        }
    } else if (pl->want_w) { /* prod [KK, O] (+)= x_r · gT, strip by strip of x_r rows */
        to_padded(xb, d->C, d->H, d->W, d->pd, xp);
        transpose(gb, d->P, d->O, d->P, gT, pl->On);
        for (int64_t r0 = 0; r0 < pl->KKr; r0 += S1_MR) {
            const float *rows[S1_MR]; /* x_r: rows of xp */
            s1_rows(xp, pl->roff, 0, r0, d->KK, pl->zeros, rows);
            for (int64_t o0 = 0; o0 < d->O; o0 += S1_NR) {
                pf_step(&pfx);
                if (!pl->want_x) pf_step(&pfg);
                gw_tile_any(d->O - o0, d->P, rows, pl->koff, gT + o0, pl->On, prod + r0 * pl->On + o0, pl->On,
                            !first);
            }
        }
    }
}

void mcl_ref_s1_bwd_chunk_end(const mcl_ref_s1_bwd *pl, const float *ws, double *pw)
{
    if (!pl->want_w || pl->dot) return;
    add_rows(pw, ws + pl->off_prod, pl->On, pl->d.KK, pl->d.O, 0); /* [KK, O]: mcl_ref_s1_bwd_store */
}

void mcl_ref_s1_bwd_store(const mcl_ref_s1_bwd *pl, const double *part, int64_t nchunks, const mcl_tensor *gw,
                          const mcl_tensor *gbias)
{
    const int64_t OK = pl->d.O * pl->d.KK, npart = mcl_ref_s1_bwd_part(pl);
    if (gw) { /* asked whether fresh just before it is written (ref.h) */
        const int fresh = mcl_ref_grad_fresh(gw);
        if (pl->dot) /* dot products: the sums are [O, KK] */
            sum_chunks(part, nchunks, npart, 0, OK, fresh, mcl_ref_ptr(gw));
        else /* add_rows: [KK, O] */
            sum_chunks_t(part, nchunks, npart, pl->d.KK, pl->d.O, fresh, mcl_ref_ptr(gw));
    }
    if (gbias) {
        const int fresh = mcl_ref_grad_fresh(gbias);
        sum_chunks(part, nchunks, npart, OK, pl->d.O, fresh, mcl_ref_ptr(gbias));
    }
}

/* conv_bwd_s1's chunk sums, without zeroing or re-reading them. The result is
 *   gw = (float)(((0 + S_0) + S_1) + ... + S_{n-1})
 * with S_c chunk c's double sums (pw, pb), as mcl_ref_s1_bwd_store adds them. Thread t walks
 * chunks [c_t, c_{t+1}), c_t = n t / T (contiguous, in thread order), and thread 0's chunks come
 * first in that order: it adds each of its S_c straight into slot 0, which then holds the
 * running sum the store would have formed by then (the same additions in the same order);
 * every later chunk c has a slot of its own, 1 + c - c_1. A slot is written, not zeroed and
 * added to: its first chunk stores 0 + S_c (the value the old zeroed slot held after the
 * first addition). So the store sums 1 + n - c_1 slots instead of n, and no slot is ever
 * cleared. A chunk's own sums collect in the thread's cw (dot products: pw [O, KK]) and cb
 * (pb [O]), zeroed at the chunk's start, as the slot was. */
static int64_t chunk_slot(int64_t c, int64_t c1) { return c < c1 ? 0 : c - c1 + (c1 > 0); }

/* dst[e] (+)= src[e], e < n (store: dst = 0 + src, dst not read) */
static void fold_sums(double *dst, const double *src, int64_t n, int store)
{
    for (int64_t e = 0; e < n; e++) dst[e] = (store ? 0.0 : dst[e]) + src[e];
}

static void fold_chunk(const mcl_ref_s1_bwd *pl, const float *ws, const double *cw, const double *cb,
                       double *slot, int store)
{
    const int64_t OK = pl->d.O * pl->d.KK;
    if (pl->want_w && !pl->dot) /* [KK, O], as mcl_ref_s1_bwd_chunk_end */
        add_rows(slot, ws + pl->off_prod, pl->On, pl->d.KK, pl->d.O, store);
    else if (pl->want_w)
        fold_sums(slot, cw, OK, store);
    if (pl->want_b) fold_sums(slot + OK, cb, pl->d.O, store);
}

static mcl_status conv_bwd_s1(const mcl_op_args *a, const conv_dims *d)
{
    const float *x = mcl_ref_ptr(a->in[0]), *w = mcl_ref_ptr(a->in[1]);
    const float *g = mcl_ref_ptr(a->gout[0]);
    float *gx = a->gin[0] ? mcl_ref_ptr(a->gin[0]) : NULL;
    const int want_w = a->gin[1] != NULL, want_b = a->gin[2] != NULL;
    const int64_t CHW = d->C * d->H * d->W, OP = d->O * d->P;
    const int64_t nchunks = mcl_ref_conv_chunks(d->B);
    double *part = malloc((size_t)(nchunks * (d->O * d->KK + d->O)) * sizeof(double));
    mcl_ref_s1_bwd pl;
    if (!part || mcl_ref_s1_bwd_init(&pl, d, w, a->gin[0], want_w, want_b) != MCL_OK) {
        free(part);
        return MCL_ERR_OOM;
    }
    const int64_t npart = mcl_ref_s1_bwd_part(&pl), OK = d->O * d->KK;
    int oom = 0;
    int64_t c1 = nchunks; /* the end of thread 0's chunks */
#pragma omp parallel if (nchunks > 1 && d->B * OP * d->KK > PAR_MIN)
    {
        int64_t T = 1, t = 0;
#ifdef _OPENMP
        T = omp_get_num_threads(), t = omp_get_thread_num();
#endif
        const int64_t cbeg = nchunks * t / T, cend = nchunks * (t + 1) / T, c1t = nchunks / T;
        if (t == 0) c1 = cend; /* the same as c1t; read after the region */
        float *ws = mcl_ref_s1_bwd_ws(&pl);
        double *cs = malloc((size_t)((pl.dot && want_w ? OK : 0) + d->O) * sizeof(double));
        double *cw = cs, *cb = cs ? cs + (pl.dot && want_w ? OK : 0) : NULL;
        if (!ws || !cs) {
#pragma omp atomic write
            oom = 1;
        }
        for (int64_t c = cbeg; c < cend && ws && cs; c++) {
            if (pl.dot && want_w) memset(cw, 0, (size_t)OK * sizeof(double));
            memset(cb, 0, (size_t)d->O * sizeof(double));
            const int64_t b0 = d->B * c / nchunks, b1 = d->B * (c + 1) / nchunks;
            for (int64_t b = b0; b < b1; b++) {
                const int more = b + 1 < b1;
                mcl_ref_s1_bwd_image(&pl, ws, b == b0, x + b * CHW, g + b * OP,
                                     more ? x + (b + 1) * CHW : NULL, more ? g + (b + 1) * OP : NULL,
                                     gx ? gx + b * CHW : NULL, cw, cb);
            }
            fold_chunk(&pl, ws, cw, cb, part + chunk_slot(c, c1t) * npart, t != 0 || c == 0);
        }
#if defined(__AVX512F__) && defined(FP_FAST_FMAF)
        if (pl.stream_gx) _mm_sfence(); /* the streamed stores before the others' reads */
#endif
        free(cs);
        free(ws);
    }
    if (!oom) mcl_ref_s1_bwd_store(&pl, part, chunk_slot(nchunks - 1, c1) + 1, a->gin[1], a->gin[2]);
    mcl_ref_s1_bwd_free(&pl);
    free(part);
    return oom ? MCL_ERR_OOM : MCL_OK;
}

/* ------------------------------------------------------------------------------------ */
/* conv2d (stride s = p.i[0], zero padding pd = p.i[1]):
 *   out[b, o, oy, ox] = bias[o] + sum_{c, ky, kx} w[o, c, ky, kx] * x[b, c, iy, ix],
 *   iy = oy*s - pd + ky, ix = ox*s - pd + kx   (x = 0 outside the image)
 *   in[0] x [B,C,H,W], in[1] w [O,C,k,k], in[2] bias [O]
 *   out[0] [B,O,Ho,Wo], Ho = (H + 2 pd - k)/s + 1 (floor), Wo likewise
 * per group of images:  outw [O, G*P] = w [O, KK] · col [KK, G*P],  out = outw + bias */
static mcl_status conv_fwd_im2col(const mcl_op_args *a, const conv_dims *dp)
{
    const conv_dims d = *dp;
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
                add_bias(ob, d.P, ob, d.O, d.P, bias, d.P);
            } else {
                mcl_ref_sgemm(0, 0, d.O, ld, d.KK, 1.0f, w, d.KK, col, ld, 0.0f, outw, ld);
                for (int64_t i = 0; i < gn; i++)
                    add_bias(outw + i * d.P, ld, out + (b0 + i) * OP, d.O, d.P, bias, d.P);
            }
        }
        free(col);
    }
    return oom ? MCL_ERR_OOM : MCL_OK;
}

/* backward, with g = gout[0] [B,O,Ho,Wo] (g_b = g[b] as [O, P]):
 *   gbias[o] += sum_{b, p} g[b, o, p]
 *   gx_b     += col2im(wᵀ [KK, O] · g_b [O, P])
 *   gw       += sum_b (col_b [KK, P] · g_bᵀ [P, O])ᵀ
 *   gin[0] like x, gin[1] like w, gin[2] like bias (each may be NULL; a fresh one, see ref.h,
 *   is stored instead of accumulated)
 * One pass over the images, in groups of about BWD_COLS pixels, so that g is read from
 * memory once for all three:
 *   - gx: colg = wᵀ · g_group (wide, one GEMM), then col2im image by image into a double
 *     image, rounded once;
 *   - gw: the group's im2col col [KK, K] and its g transposed, gT [K, O] (pixel-major, what
 *     the GEMM reads without a transposing pack), then one GEMM prod [KK, O] = col · gT,
 *     added (transposed, in double) to the sums of the group's chunk;
 *   - gbias: the group's sum of g over pixels, in double, into the same chunk sums.
 * The groups are cut into BWD_CHUNKS fixed chunks (consecutive groups), one thread per chunk;
 * the chunk sums are added in chunk order at the end. Every order depends on the shapes only,
 * never on the threads. */
static mcl_status conv_bwd_im2col(const mcl_op_args *a, const conv_dims *dp)
{
    const conv_dims d = *dp;
    const float *x = mcl_ref_ptr(a->in[0]), *w = mcl_ref_ptr(a->in[1]);
    const float *g = mcl_ref_ptr(a->gout[0]);
    float *gx = a->gin[0] ? mcl_ref_ptr(a->gin[0]) : NULL;
    const int want_w = a->gin[1] != NULL, want_b = a->gin[2] != NULL;
    const int64_t CHW = d.C * d.H * d.W, OP = d.O * d.P, OK = d.O * d.KK;
    int64_t ng = BWD_COLS / d.P; /* images per group */
    if (ng < 1) ng = 1;
    if (ng > d.B) ng = d.B;
    const int64_t ngroups = (d.B + ng - 1) / ng;
    const int64_t nchunks = ngroups < BWD_CHUNKS ? ngroups : BWD_CHUNKS;
    const int64_t ld = padded_ld(ng * d.P);
    /* per chunk: gw sums [O, KK] then gbias sums [O], double */
    const int64_t npart = OK + d.O;
    double *part = (want_w || want_b) ? calloc((size_t)(nchunks * npart), sizeof(double)) : NULL;
    if ((want_w || want_b) && !part) return MCL_ERR_OOM;
    const int fresh_x = gx ? mcl_ref_grad_fresh(a->gin[0]) : 0;
    int oom = 0;

#pragma omp parallel if (nchunks > 1 && d.B * OP * d.KK > PAR_MIN)
    {
        /* per thread: col (im2col or colg) [KK, ld], gwide [O, ld], gT [ng*P, O],
         * prod [KK, O], img [C,H,W] doubles */
        const size_t nf = (size_t)((d.KK + d.O) * ld + ng * d.P * d.O + OK);
        float *col = malloc(nf * sizeof(float));
        double *img = gx ? malloc((size_t)CHW * sizeof(double)) : NULL;
        float *gwide = col ? col + d.KK * ld : NULL;
        float *gT = col ? gwide + d.O * ld : NULL;
        float *prod = col ? gT + ng * d.P * d.O : NULL;
        const int ok = col && (img || !gx);
        if (!ok) {
#pragma omp atomic write
            oom = 1;
        }
#pragma omp for schedule(static)
        for (int64_t c = 0; c < nchunks; c++) {
            if (!ok) continue;
            double *pw = part ? part + c * npart : NULL, *pb = pw ? pw + OK : NULL;
            for (int64_t gi = ngroups * c / nchunks; gi < ngroups * (c + 1) / nchunks; gi++) {
                const int64_t b0 = gi * ng, n = d.B - b0 < ng ? d.B - b0 : ng, K = n * d.P;
                /* the group's g as [O, K]: g_b itself, or its images side by side */
                const float *gm = g + b0 * OP;
                int64_t ldg = d.P;
                if (n > 1) {
                    for (int64_t o = 0; o < d.O; o++)
                        for (int64_t i = 0; i < n; i++)
                            memcpy(gwide + o * ld + i * d.P, g + (b0 + i) * OP + o * d.P,
                                   (size_t)d.P * sizeof(float));
                    gm = gwide;
                    ldg = ld;
                }
                if (want_b) /* pb[o] += sum_p g[b, o, p], images in order */
                    dsum_add_planes(gm, d.O, ldg, 1, K, K, pb);
                if (gx) { /* colg [KK, K] = wᵀ · gm, then col2im image by image */
                    mcl_ref_sgemm(1, 0, d.KK, K, d.O, 1.0f, w, d.KK, gm, ldg, 0.0f, col, ld);
                    for (int64_t i = 0; i < n; i++) {
                        float *gxb = gx + (b0 + i) * CHW;
                        memset(img, 0, (size_t)CHW * sizeof(double));
                        col2im(&d, col + i * d.P, ld, img);
                        if (fresh_x)
                            store_rounded(gxb, img, CHW);
                        else
                            add_rounded(gxb, img, CHW);
                    }
                }
                if (want_w) { /* prod [KK, O] = col [KK, K] · gT [K, O]; pw[o, r] += prod[r, o] */
                    for (int64_t i = 0; i < n; i++)
                        im2col(&d, x + (b0 + i) * CHW, col + i * d.P, ld);
                    transpose(gm, ldg, d.O, K, gT, d.O);
                    mcl_ref_sgemm(0, 0, d.KK, d.O, K, 1.0f, col, ld, gT, d.O, 0.0f, prod, d.O);
                    add_transposed(pw, prod, d.O, d.KK, d.O, 0);
                }
            }
        }
        free(col);
        free(img);
    }
    if (!oom && want_w) {
        float *gw = mcl_ref_ptr(a->gin[1]);
        const int fresh = mcl_ref_grad_fresh(a->gin[1]);
        sum_chunks(part, nchunks, npart, 0, OK, fresh, gw);
    }
    if (!oom && want_b) {
        float *gb = mcl_ref_ptr(a->gin[2]);
        const int fresh = mcl_ref_grad_fresh(a->gin[2]);
        sum_chunks(part, nchunks, npart, OK, d.O, fresh, gb);
    }
    free(part);
    return oom ? MCL_ERR_OOM : MCL_OK;
}

mcl_status mcl_ref_conv2d_fwd(mcl_backend *be, const mcl_op_args *a)
{
    (void)be;
    conv_dims d;
    conv_dims_get(a, &d);
    /* stride 1 on shifted planes, except for few input channels: then the im2col matrix is
     * small and its GEMM writes straight into out (measured 1.3x faster for KK = 9) */
    return d.s == 1 ? conv_fwd_s1(a, &d) : conv_fwd_im2col(a, &d);
}

mcl_status mcl_ref_conv2d_bwd(mcl_backend *be, const mcl_op_args *a)
{
    (void)be;
    conv_dims d;
    conv_dims_get(a, &d);
    return d.s == 1 ? conv_bwd_s1(a, &d) : conv_bwd_im2col(a, &d);
}

/* ------------------------------------------------------------------------------------ */
/* maxpool2d, 2 x 2 windows, stride 2, floor (a last odd row/column is dropped):
 *   out[b, c, i, j]  = max_{dy, dx in {0,1}} x[b, c, 2i + dy, 2j + dx]
 *   arg[b, c, i, j]  = dy*2 + dx of the first maximum in the order (0,0), (0,1), (1,0), (1,1)
 *   in[0] x [B,C,H,W];  out[0] [B,C,H/2,W/2], out[1] arg [B,C,H/2,W/2] (index as float)
 * backward: gx[b, c, 2i + dy, 2j + dx] += gout[b, c, i, j] for dy*2 + dx = arg[b, c, i, j]
 * (windows do not overlap: every x element gets at most one term) */

/* Rows are done in blocks of MP_BLOCK windows, a fixed trip count that the compiler
 * vectorizes; the last, partial block of a row goes through local arrays. (With Wo = 14 or
 * 7 the row loop was shorter than one vector and ran as scalar code with mispredicted
 * branches: measured 1.6x slower.) */
#define MP_BLOCK 16

/* MP_BLOCK windows over the rows a (dy = 0) and b (dy = 1), 2 MP_BLOCK floats each */
MCL_HOT static void maxpool_block(const float *restrict a, const float *restrict b,
                                  float *restrict o, float *restrict ag)
{
    for (int j = 0; j < MP_BLOCK; j++) {
        /* strict >: the first maximum wins ties (selects, no branches) */
        const float v1 = a[2 * j + 1], v2 = b[2 * j], v3 = b[2 * j + 1];
        float m = a[2 * j], idx = 0.0f;
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

/* One output row: windows j < Wo over the input rows r0 (dy = 0) and r1 (dy = 1). */
static void maxpool_row(const float *r0, const float *r1, int64_t Wo, float *o, float *ag)
{
    int64_t j0 = 0;
    for (; j0 + MP_BLOCK <= Wo; j0 += MP_BLOCK)
        maxpool_block(r0 + 2 * j0, r1 + 2 * j0, o + j0, ag + j0);
    if (j0 < Wo) {
        const int64_t n = Wo - j0;
        float a[2 * MP_BLOCK] = {0}, b[2 * MP_BLOCK] = {0}, m[MP_BLOCK], idx[MP_BLOCK];
        memcpy(a, r0 + 2 * j0, (size_t)(2 * n) * sizeof(float));
        memcpy(b, r1 + 2 * j0, (size_t)(2 * n) * sizeof(float));
        maxpool_block(a, b, m, idx);
        memcpy(o + j0, m, (size_t)n * sizeof(float));
        memcpy(ag + j0, idx, (size_t)n * sizeof(float));
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

/* Backward of MP_BLOCK windows: the two input rows a (dy = 0) and b (dy = 1) of gx get gout
 * where arg points, as selects (no data-dependent branches or addresses):
 *   fresh: a[2j + dx] = 0 + (arg == dx ? g[j] : 0)        (every element stored; b alike)
 *   else:  a[2j + dx] = arg == dx ? a[2j + dx] + g[j] : a[2j + dx] */
MCL_HOT static void maxpool_bwd_block(const float *restrict g, const float *restrict ag,
                                      float *restrict a, float *restrict b, int fresh)
{
    float t[2 * MP_BLOCK], gv[2 * MP_BLOCK]; /* arg and gout of the window of column u */
    for (int j = 0; j < MP_BLOCK; j++) {
        t[2 * j] = t[2 * j + 1] = ag[j];
        gv[2 * j] = gv[2 * j + 1] = g[j];
    }
    if (fresh)
        for (int u = 0; u < 2 * MP_BLOCK; u++) { /* column u = 2j + dx */
            const float dx = (float)(u % 2);
            a[u] = 0.0f + (t[u] == dx ? gv[u] : 0.0f);
            b[u] = 0.0f + (t[u] == dx + 2.0f ? gv[u] : 0.0f);
        }
    else
        for (int u = 0; u < 2 * MP_BLOCK; u++) {
            const float dx = (float)(u % 2);
            a[u] = t[u] == dx ? a[u] + gv[u] : a[u];
            b[u] = t[u] == dx + 2.0f ? b[u] + gv[u] : b[u];
        }
}

/* Backward of one output row (windows j < Wo): input rows r0 (dy = 0) and r1 (dy = 1). */
static void maxpool_bwd_row(const float *g, const float *ag, int64_t Wo, float *r0, float *r1,
                            int fresh)
{
    int64_t j0 = 0;
    for (; j0 + MP_BLOCK <= Wo; j0 += MP_BLOCK)
        maxpool_bwd_block(g + j0, ag + j0, r0 + 2 * j0, r1 + 2 * j0, fresh);
    if (j0 < Wo) {
        const int64_t n = Wo - j0;
        float gv[MP_BLOCK] = {0}, t[MP_BLOCK] = {0}, a[2 * MP_BLOCK] = {0}, b[2 * MP_BLOCK] = {0};
        memcpy(gv, g + j0, (size_t)n * sizeof(float));
        memcpy(t, ag + j0, (size_t)n * sizeof(float));
        if (!fresh) {
            memcpy(a, r0 + 2 * j0, (size_t)(2 * n) * sizeof(float));
            memcpy(b, r1 + 2 * j0, (size_t)(2 * n) * sizeof(float));
        }
        maxpool_bwd_block(gv, t, a, b, fresh);
        memcpy(r0 + 2 * j0, a, (size_t)(2 * n) * sizeof(float));
        memcpy(r1 + 2 * j0, b, (size_t)(2 * n) * sizeof(float));
    }
}

/* (a fresh gx, see ref.h, is stored whole: the dropped last row/column of odd H/W get 0) */
mcl_status mcl_ref_maxpool2d_bwd(mcl_backend *be, const mcl_op_args *a)
{
    (void)be;
    if (!a->gin[0]) return MCL_OK;
    const mcl_tensor *X = a->in[0];
    const int64_t BC = X->shape[0] * X->shape[1], H = X->shape[2], W = X->shape[3];
    const int64_t Ho = H / 2, Wo = W / 2;
    const float *arg = mcl_ref_ptr(a->out[1]), *g = mcl_ref_ptr(a->gout[0]);
    float *gx = mcl_ref_ptr(a->gin[0]);
    const int fresh = mcl_ref_grad_fresh(a->gin[0]);
#pragma omp parallel for schedule(static) if (BC * H * W > PAR_MIN)
    for (int64_t q = 0; q < BC; q++) {
        float *gq = gx + q * H * W;
        for (int64_t i = 0; i < Ho; i++) {
            float *r0 = gq + 2 * i * W;
            maxpool_bwd_row(g + (q * Ho + i) * Wo, arg + (q * Ho + i) * Wo, Wo, r0, r0 + W, fresh);
            if (fresh && W % 2) r0[W - 1] = r0[2 * W - 1] = 0.0f;
        }
        if (fresh && H % 2)
            for (int64_t x = 0; x < W; x++) gq[(H - 1) * W + x] = 0.0f;
    }
    return MCL_OK;
}
