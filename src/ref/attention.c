/* attention.c — reference causal attention of a chunk against a KV ring buffer, and the
 * ring buffer's write (doc/oct-model.md §2; paper 003_* Sec. 2 and App. B); Transformer-XL's
 * relative-position attention over [memory ‖ segment] (rel_attn, at the end of this file).
 *
 * attn_kv. A chunk of S tokens attends to [the C-row ring buffer's n filled rows ‖ its own
 * keys and values], causally. Heads: Hq query heads share Hk key/value heads (Hk = 1:
 * multi-query; Hk = Hq: multi-head; any divisor of Hq works), query head h reads key head
 * kh = h / (Hq / Hk).
 *   in[0] q [S,Hq,Dk]   in[1] k [S,Hk,Dk]   in[2] v [S,Hk,Dv]      (the chunk's)
 *   in[3] kbuf [C,Hk,Dk]   in[4] vbuf [C,Hk,Dv]                    (the ring; no gradient)
 *   p.i[0] n      buffer rows in use, 0..C (the oldest at ring index start)
 *   p.i[1] start  ring index of the oldest row, 0..C-1 (0 when n = 0)
 *   p.i[2] mask   0: causal (t' <= t); 1: the pi-transformer's causal mask whose diagonal is
 *                 zero, applied AFTER the softmax, as the paper writes it (the diagonal stays
 *                 in the normalizer and its weight is then dropped: v_t is never read, but
 *                 the weights of the other keys still depend on k_t); 2: strictly causal
 *                 (t' < t: the diagonal is left out BEFORE the softmax, so nothing of token
 *                 t's own key or value reaches its output; a row with no key gives o = 0)
 *   p.f[0] scale  of the scores (usually 1/sqrt(Dk))
 *   p.f[1] alibi  0 = no positional bias; else head h adds -alibi·2^(-8(h+1)/Hq)·distance
 *   out[0] o [S,Hq,Dv]                                              (differentiable)
 *   out[1] lse [S,Hq]: log sum_j exp(s_j) of each row, saved for the backward
 *
 * Keys in time order: buffer row j (j = 0..n-1, ring index (start + j) mod C) is at position
 * j, chunk token t' at n + t'; query t is at n + t and may read positions <= n + t (mask 2:
 * < n + t).
 *
 *   s_j = scale · q_t,h · k_j − slope_h · (n + t − pos_j)
 *   p_j = exp(s_j − lse_t,h),   lse_t,h = log Σ_j exp(s_j)
 *   (the exponentials of arguments <= 0 in float by mcl_exp_nonpos, within 1 ulp, vectorized;
 *   their sums in double, in order)
 *   o_t,h = Σ_j m_j p_j v_j          (m_j = 0 for j = t under mask 1, else 1)
 *
 * Backward (gradients to q, k, v of the chunk; none to the buffer), from the saved lse:
 *   D_t,h = go_t,h · o_t,h   (= Σ_j m_j p_j dp_j, computed so from the same dp)
 *   dp_j = go_t,h · v_j,   ds_j = p_j (m_j dp_j − D_t,h)
 *   dq_t,h += scale Σ_j ds_j k_j
 *   dk_t' += scale Σ_{t, h in the group} ds_{t,h,t'} q_t,h
 *   dv_t' += Σ_{t, h in the group} m p_{t,h,t'} go_t,h
 * How. Per key head, the R = S·G query rows of its group against its T = n + S keys: the
 * scores are one GEMM (mcl_ref_sgemm, whose summation order depends only on the sizes), the
 * row softmax runs over the allowed keys (exponentials in float, their sums in double), and
 * the weighted sums are GEMMs again (O = P·V; dP = dO·Vᵀ, dQ = dS·K, dK = dSᵀ·Q, dV = Pᵀ·dO
 * over the chunk's columns). Memory: nothing is kept between forward and backward but lse
 * [S,Hq]; during a call the work space of one key head is the [R,T] block of scores (and,
 * in the backward, of dP) plus copies of the keys, values and queries — freed when the call
 * ends, never one block per layer or per step. No value depends on the thread count.
 *
 * kv_push. in[0] buf [C,H,D] (updated in place), in[1] x [S,H,D]; p.i[0] = pos: the last
 * m = min(S, C) rows of x go to ring rows (pos + r) mod C, r = 0..m-1. The caller keeps
 * (start, n) and moves them (oct/kvcache.c). No backward: the buffer is detached state.
 */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "exp_nonpos.h" /* mcl_exp_nonpos (attn_kv, rel_attn) */
#include "ref.h"
#include "transpose8.h" /* tr8x8 (row_sums, row_dots) */

/* Slope of head h (0 when alibi = 0). */
static double alibi_slope(float alibi, int64_t h, int64_t Hq)
{
    return alibi == 0.0f ? 0.0 : (double)alibi * exp2(-8.0 * (double)(h + 1) / (double)Hq);
}

typedef struct attn_dims {
    int64_t S, Hq, Hk, Dk, Dv, C, n, start, G, T, R;
    int mask;
    float scale, alibi;
} attn_dims;

static attn_dims dims_of(const mcl_op_args *a)
{
    attn_dims d;
    d.S = a->in[0]->shape[0];
    d.Hq = a->in[0]->shape[1];
    d.Dk = a->in[0]->shape[2];
    d.Hk = a->in[1]->shape[1];
    d.Dv = a->in[2]->shape[2];
    d.C = a->in[3]->shape[0];
    d.n = a->p.i[0];
    d.start = a->p.i[1];
    d.mask = (int)a->p.i[2];
    d.scale = a->p.f[0];
    d.alibi = a->p.f[1];
    d.G = d.Hq / d.Hk;
    d.T = d.n + d.S; /* keys in time order: the ring's n, then the chunk's S */
    d.R = d.S * d.G; /* query rows of one key head: u = t·G + g, head h = kh·G + g */
    return d;
}

/* Keys of query row t: positions 0..n+t, or 0..n+t-1 under the strict mask 2. */
static int64_t n_keys(const attn_dims *d, int64_t t) { return d->n + t + (d->mask == 2 ? 0 : 1); }

/* The work space of one key head: keys Ka [T,Dk] and values Va [T,Dv] in time order, the
 * group's queries Qg [R,Dk], the scores / probabilities P [R,T], the output O [R,Dv]
 * (forward) or dO, the exponentials E [R,T] (forward; the softmax's sums), the product dP
 * [R,T], dQ, the chunk's dK [S,Dk], dV [S,Dv] and the row values D [R] (backward).
 * Allocated once per call. */
typedef struct attn_ws {
    float *Ka, *Va, *Qg, *P, *Og, *dOg, *E, *dP, *dQg, *dKh, *dVh;
    double *D;
    float *block;
} attn_ws;

static int ws_alloc(attn_ws *w, const attn_dims *d, int bwd)
{
    const int64_t n = d->T * (d->Dk + d->Dv) + d->R * (d->Dk + 2 * d->T + d->Dv) +
                      (bwd ? d->R * d->Dk + d->S * (d->Dk + d->Dv) : 0);
    memset(w, 0, sizeof *w);
    w->block = malloc((size_t)(n > 0 ? n : 1) * sizeof *w->block);
    w->D = bwd ? malloc((size_t)(d->R > 0 ? d->R : 1) * sizeof *w->D) : NULL;
    if (!w->block || (bwd && !w->D)) {
        free(w->block);
        free(w->D);
        return 0;
    }
    float *p = w->block;
    w->Ka = p, p += d->T * d->Dk;
    w->Va = p, p += d->T * d->Dv;
    w->Qg = p, p += d->R * d->Dk;
    w->P = p, p += d->R * d->T;
    w->Og = w->dOg = p, p += d->R * d->Dv; /* O in the forward, dO in the backward */
    w->E = w->dP = p, p += d->R * d->T;     /* E in the forward, dP in the backward */
    if (bwd) {
        w->dQg = p, p += d->R * d->Dk;
        w->dKh = p, p += d->S * d->Dk;
        w->dVh = p;
    }
    return 1;
}

static void ws_free(attn_ws *w)
{
    free(w->block);
    free(w->D);
}

/* Rows of key head kh's query group from a [S,Hq,D] tensor: out [R,D], row u = t·G + g. */
static void gather_rows(const attn_dims *d, int64_t kh, const float *x, int64_t D, float *out)
{
    for (int64_t u = 0; u < d->R; u++) {
        const int64_t t = u / d->G, h = kh * d->G + u % d->G;
        memcpy(out + u * D, x + (t * d->Hq + h) * D, (size_t)D * sizeof(float));
    }
}

/* Gather key head kh: the ring's rows in time order (ring row (start + j) mod C), then the
 * chunk's; and the group's query rows. */
static void gather(const attn_dims *d, int64_t kh, const float *q, const float *k, const float *v,
                   const float *kb, const float *vb, attn_ws *w)
{
    for (int64_t j = 0; j < d->T; j++) {
        const int64_t r = j < d->n ? (d->start + j) % d->C : j - d->n;
        const float *ks = (j < d->n ? kb : k) + (r * d->Hk + kh) * d->Dk;
        const float *vs = (j < d->n ? vb : v) + (r * d->Hk + kh) * d->Dv;
        memcpy(w->Ka + j * d->Dk, ks, (size_t)d->Dk * sizeof(float));
        memcpy(w->Va + j * d->Dv, vs, (size_t)d->Dv * sizeof(float));
    }
    gather_rows(d, kh, q, d->Dk, w->Qg);
}

/* Query rows whose softmax sums run side by side (row_sums, ds_rows). */
#define ATTN_RB 8

/* The columns [j, L) shared by ATTN_RB = 8 rows (x, and y when not NULL: rows T apart), eight
 * at a time: the 8 x 8 block of each transposed in registers (tr8x8), so that one vector
 * holds column j of the eight rows and one vector add (or fused multiply-add) does the next
 * term of all eight sums: s[q] += (double)x[q·T + j] (· (double)y[q·T + j]), j in order. The
 * same sequence of double operations per row as the scalar loop (a float times a float is
 * exact in double, so the fused multiply-add rounds once, as the add after an exact product
 * does); the columns past the last whole block are left to it. Returns the next column. */
#if defined(__AVX512F__)
#define ATTN_VEC 1
MCL_HOT static int64_t rows8_terms(const float *x, const float *y, int64_t T, int64_t j, int64_t L,
                                   double *s)
{
    __m512d acc = _mm512_loadu_pd(s);
    for (; j + 8 <= L; j += 8) {
        __m256 xv[8], yv[8];
        tr8x8(x + j, T, xv);
        if (y) {
            tr8x8(y + j, T, yv);
            for (int k = 0; k < 8; k++)
                acc = _mm512_fmadd_pd(_mm512_cvtps_pd(xv[k]), _mm512_cvtps_pd(yv[k]), acc);
        } else {
            for (int k = 0; k < 8; k++) acc = _mm512_add_pd(acc, _mm512_cvtps_pd(xv[k]));
        }
    }
    _mm512_storeu_pd(s, acc);
    return j;
}
#else
#define ATTN_VEC 0
#endif

/* sum[q] = Σ_{j < len[q]} (double)x[q·T + j] in the order of j, for nr <= ATTN_RB rows: over
 * the columns every row has, the rows run side by side (ATTN_RB independent chains of double
 * adds instead of one add waiting for the last; with AVX-512 one vector chain, rows8_terms);
 * each row's own sum is the same sequence. */
MCL_HOT static void row_sums(const float *x, int64_t T, int nr, const int64_t *len, double *sum)
{
    double s[ATTN_RB] = {0};
    int64_t L = 0; /* columns shared by all ATTN_RB rows (a short group: none) */
    if (nr == ATTN_RB) {
        L = len[0];
        for (int q = 1; q < nr; q++) L = len[q] < L ? len[q] : L;
        int64_t j = 0;
#if ATTN_VEC
        j = rows8_terms(x, NULL, T, j, L, s);
#endif
        for (; j < L; j++)
            for (int q = 0; q < ATTN_RB; q++) s[q] += (double)x[q * T + j];
    }
    for (int q = 0; q < nr; q++)
        for (int64_t j = L; j < len[q]; j++) s[q] += (double)x[q * T + j];
    for (int q = 0; q < nr; q++) sum[q] = s[q];
}

/* P = scores Qg·Kaᵀ·scale (GEMM), then per row u the probabilities in place: the bias
 * −slope·distance, p = exp(s − lse) over the allowed keys, 0 elsewhere. lse_out: computed
 * (lse = max + log Σ exp(s − max), the exponentials into E, their sums by row_sums) and
 * stored (forward); else the saved lse is used (backward). Blocks of ATTN_RB rows are
 * independent (OpenMP over blocks); a row's values do not depend on its block. */
static void probs(const attn_dims *d, int64_t kh, attn_ws *w, float *lse_out, const float *lse_in)
{
    mcl_ref_sgemm(0, 1, d->R, d->T, d->Dk, d->scale, w->Qg, d->Dk, w->Ka, d->Dk, 0.0f, w->P, d->T);
    const int64_t T = d->T, nblk = (d->R + ATTN_RB - 1) / ATTN_RB;
#pragma omp parallel for schedule(static) if (d->R * d->T > 32768)
    for (int64_t b = 0; b < nblk; b++) {
        const int64_t u0 = b * ATTN_RB;
        const int nr = (int)(d->R - u0 < ATTN_RB ? d->R - u0 : ATTN_RB);
        int64_t nk[ATTN_RB];
        float mx[ATTN_RB];
        double l[ATTN_RB];
        for (int q = 0; q < nr; q++) {
            const int64_t u = u0 + q, t = u / d->G, h = kh * d->G + u % d->G;
            const double slope = alibi_slope(d->alibi, h, d->Hq);
            float *pr = w->P + u * T;
            nk[q] = n_keys(d, t);
            if (slope != 0.0) {
                const double pos = (double)(d->n + t);
                MCL_SIMD
                for (int64_t j = 0; j < nk[q]; j++) pr[j] = (float)((double)pr[j] - slope * (pos - (double)j));
            }
            if (!lse_out) continue;
            float m = -INFINITY; /* the max does not depend on the order (±0 aside: same sums) */
#pragma omp simd reduction(max : m)
            for (int64_t j = 0; j < nk[q]; j++) m = pr[j] > m ? pr[j] : m;
            mx[q] = m;
            float *e = w->E + u * T;
            MCL_SIMD
            for (int64_t j = 0; j < nk[q]; j++) e[j] = mcl_exp_nonpos(pr[j] - m);
        }
        if (lse_out) {
            double sum[ATTN_RB];
            row_sums(w->E + u0 * T, T, nr, nk, sum);
            for (int q = 0; q < nr; q++) {
                const int64_t u = u0 + q, r = (u / d->G) * d->Hq + kh * d->G + u % d->G;
                l[q] = nk[q] > 0 ? (double)mx[q] + log(sum[q]) : 0.0; /* no key (mask 2, first token): o = 0 */
                lse_out[r] = (float)l[q];
            }
        } else {
            for (int q = 0; q < nr; q++) {
                const int64_t u = u0 + q;
                l[q] = (double)lse_in[(u / d->G) * d->Hq + kh * d->G + u % d->G];
            }
        }
        for (int q = 0; q < nr; q++) {
            float *pr = w->P + (u0 + q) * T;
            const double lq = l[q];
            MCL_SIMD
            for (int64_t j = 0; j < nk[q]; j++) pr[j] = mcl_exp_nonpos((float)((double)pr[j] - lq));
            for (int64_t j = nk[q]; j < T; j++) pr[j] = 0.0f;
        }
    }
}

/* dot[q] = Σ_{j < len[q]} (double)x[q·T + j]·(double)y[q·T + j] in the order of j (each product
 * exact in double), nr <= ATTN_RB rows side by side as in row_sums. */
MCL_HOT static void row_dots(const float *x, const float *y, int64_t T, int nr, const int64_t *len,
                             double *dot)
{
    double s[ATTN_RB] = {0};
    int64_t L = 0;
    if (nr == ATTN_RB) {
        L = len[0];
        for (int q = 1; q < nr; q++) L = len[q] < L ? len[q] : L;
        int64_t j = 0;
#if ATTN_VEC
        j = rows8_terms(x, y, T, j, L, s);
#endif
        for (; j < L; j++)
            for (int q = 0; q < ATTN_RB; q++) s[q] += (double)x[q * T + j] * (double)y[q * T + j];
    }
    for (int q = 0; q < nr; q++)
        for (int64_t j = L; j < len[q]; j++) s[q] += (double)x[q * T + j] * (double)y[q * T + j];
    for (int q = 0; q < nr; q++) dot[q] = s[q];
}

/* The backward's rows, ATTN_RB at a time, from P and dP [R,T]: D_u = Σ_j m_j p_j dP_j in the
 * order of j (under mask 1 the diagonal, m_j = 0, is the row's last key: the sum stops before
 * it), then dP becomes dS = p ⊙ (m·dP − D_u) and P becomes m ⊙ P (the weights that reached
 * O); dS is 0 past the keys. D [R] keeps D_u. */
static void ds_rows(const attn_dims *d, attn_ws *w)
{
    const int64_t T = d->T, nblk = (d->R + ATTN_RB - 1) / ATTN_RB;
#pragma omp parallel for schedule(static) if (d->R * d->T > 32768)
    for (int64_t b = 0; b < nblk; b++) {
        const int64_t u0 = b * ATTN_RB;
        const int nr = (int)(d->R - u0 < ATTN_RB ? d->R - u0 : ATTN_RB);
        int64_t nk[ATTN_RB], len[ATTN_RB]; /* keys; keys that reached O */
        for (int q = 0; q < nr; q++) {
            nk[q] = n_keys(d, (u0 + q) / d->G);
            len[q] = d->mask == 1 ? nk[q] - 1 : nk[q]; /* mask 1: nk >= 1 */
        }
        row_dots(w->P + u0 * T, w->dP + u0 * T, T, nr, len, w->D + u0);
        for (int q = 0; q < nr; q++) {
            float *pr = w->P + (u0 + q) * T, *dp = w->dP + (u0 + q) * T;
            const double Du = w->D[u0 + q];
            MCL_SIMD
            for (int64_t j = 0; j < len[q]; j++) dp[j] = (float)((double)pr[j] * ((double)dp[j] - Du));
            if (len[q] < nk[q]) { /* the diagonal (mask 1) */
                dp[len[q]] = (float)((double)pr[len[q]] * (0.0 - Du));
                pr[len[q]] = 0.0f;
            }
            for (int64_t j = nk[q]; j < T; j++) dp[j] = 0.0f;
        }
    }
}

/* ------------------------------------------------------------------------------------ */
/* forward: o_t,h = Σ_j m_j softmax_j(s) v_j, lse_t,h = log Σ_j exp(s_j)
 *   q [S,Hq,Dk], k [S,Hk,Dk], v [S,Hk,Dv], kbuf [C,Hk,Dk], vbuf [C,Hk,Dv] -> o [S,Hq,Dv], lse [S,Hq]
 * Per key head: the scores of its R = S·G query rows against its T = n + S keys as one GEMM,
 * the row softmax, then O = P·V as a second GEMM. */
mcl_status mcl_ref_attn_kv_fwd(mcl_backend *be, const mcl_op_args *a)
{
    (void)be;
    const attn_dims d = dims_of(a);
    const float *q = mcl_ref_ptr(a->in[0]), *k = mcl_ref_ptr(a->in[1]), *v = mcl_ref_ptr(a->in[2]);
    const float *kb = mcl_ref_ptr(a->in[3]), *vb = mcl_ref_ptr(a->in[4]);
    float *o = mcl_ref_ptr(a->out[0]), *lse = mcl_ref_ptr(a->out[1]);
    attn_ws w;
    if (!ws_alloc(&w, &d, 0)) return MCL_ERR_OOM;
    for (int64_t kh = 0; kh < d.Hk; kh++) {
        gather(&d, kh, q, k, v, kb, vb, &w);
        probs(&d, kh, &w, lse, NULL);
        if (d.mask == 1) /* the diagonal's weight is dropped after the softmax */
            for (int64_t u = 0; u < d.R; u++) w.P[u * d.T + d.n + u / d.G] = 0.0f;
        mcl_ref_sgemm(0, 0, d.R, d.Dv, d.T, 1.0f, w.P, d.T, w.Va, d.Dv, 0.0f, w.Og, d.Dv);
        for (int64_t u = 0; u < d.R; u++) {
            const int64_t t = u / d.G, h = kh * d.G + u % d.G;
            memcpy(o + (t * d.Hq + h) * d.Dv, w.Og + u * d.Dv, (size_t)d.Dv * sizeof(float));
        }
    }
    ws_free(&w);
    return MCL_OK;
}

/* ------------------------------------------------------------------------------------ */
/* backward: see the header. go [S,Hq,Dv] -> gq [S,Hq,Dk], gk [S,Hk,Dk], gv [S,Hk,Dv] (accumulated)
 * Per key head, from the saved lse: P again (GEMM + exp), dP = dO·Vᵀ (GEMM), then
 *   dS = P ⊙ (m·dP − D)   (row-wise; D_u = dO_u · O_u)
 *   dQ = scale·dS·K,  dK_chunk = scale·dS[:, n:]ᵀ·Q,  dV_chunk = (m ⊙ P)[:, n:]ᵀ·dO   (GEMMs) */
mcl_status mcl_ref_attn_kv_bwd(mcl_backend *be, const mcl_op_args *a)
{
    (void)be;
    const attn_dims d = dims_of(a);
    const float *q = mcl_ref_ptr(a->in[0]), *k = mcl_ref_ptr(a->in[1]), *v = mcl_ref_ptr(a->in[2]);
    const float *kb = mcl_ref_ptr(a->in[3]), *vb = mcl_ref_ptr(a->in[4]);
    const float *lse = mcl_ref_ptr(a->out[1]);
    const float *go = mcl_ref_ptr(a->gout[0]);
    float *gq = a->gin[0] ? mcl_ref_ptr(a->gin[0]) : NULL;
    float *gk = a->gin[1] ? mcl_ref_ptr(a->gin[1]) : NULL;
    float *gv = a->gin[2] ? mcl_ref_ptr(a->gin[2]) : NULL;
    attn_ws w;
    if (!ws_alloc(&w, &d, 1)) return MCL_ERR_OOM;
    for (int64_t kh = 0; kh < d.Hk; kh++) {
        gather(&d, kh, q, k, v, kb, vb, &w);
        gather_rows(&d, kh, go, d.Dv, w.dOg);
        probs(&d, kh, &w, NULL, lse);
        mcl_ref_sgemm(0, 1, d.R, d.T, d.Dv, 1.0f, w.dOg, d.Dv, w.Va, d.Dv, 0.0f, w.dP, d.T);
        /* D_u = dO_u·O_u = Σ_j m_j p_j dP_j (the same identity, from the same float dP, so a
         * row's dS sums to zero as the softmax's Jacobian says); then dP becomes dS and P
         * becomes m ⊙ P */
        ds_rows(&d, &w);
        if (gq) {
            mcl_ref_sgemm(0, 0, d.R, d.Dk, d.T, d.scale, w.dP, d.T, w.Ka, d.Dk, 0.0f, w.dQg, d.Dk);
            for (int64_t u = 0; u < d.R; u++) {
                const int64_t t = u / d.G, h = kh * d.G + u % d.G;
                float *dst = gq + (t * d.Hq + h) * d.Dk;
                for (int64_t c = 0; c < d.Dk; c++) dst[c] += w.dQg[u * d.Dk + c];
            }
        }
        if (gk) { /* rows of the chunk: columns n.. of dS, summed over the group's rows in order */
            mcl_ref_sgemm(1, 0, d.S, d.Dk, d.R, d.scale, w.dP + d.n, d.T, w.Qg, d.Dk, 0.0f, w.dKh, d.Dk);
            for (int64_t tp = 0; tp < d.S; tp++)
                for (int64_t c = 0; c < d.Dk; c++) gk[(tp * d.Hk + kh) * d.Dk + c] += w.dKh[tp * d.Dk + c];
        }
        if (gv) {
            mcl_ref_sgemm(1, 0, d.S, d.Dv, d.R, 1.0f, w.P + d.n, d.T, w.dOg, d.Dv, 0.0f, w.dVh, d.Dv);
            for (int64_t tp = 0; tp < d.S; tp++)
                for (int64_t c = 0; c < d.Dv; c++) gv[(tp * d.Hk + kh) * d.Dv + c] += w.dVh[tp * d.Dv + c];
        }
    }
    ws_free(&w);
    return MCL_OK;
}

/* ------------------------------------------------------------------------------------ */
/* kv_push: buf[(pos + r) mod C] = x[S - m + r], r = 0..m-1, m = min(S, C)
 *   buf [C,H,D] (in place), x [S,H,D] */
mcl_status mcl_ref_kv_push_fwd(mcl_backend *be, const mcl_op_args *a)
{
    (void)be;
    float *buf = mcl_ref_ptr(a->in[0]);
    const float *x = mcl_ref_ptr(a->in[1]);
    const int64_t C = a->in[0]->shape[0], S = a->in[1]->shape[0];
    const int64_t row = a->in[0]->shape[1] * a->in[0]->shape[2];
    const int64_t m = S < C ? S : C, pos = a->p.i[0];
    for (int64_t r = 0; r < m; r++) {
        float *dst = buf + ((pos + r) % C) * row;
        const float *src = x + (S - m + r) * row;
        for (int64_t i = 0; i < row; i++) dst[i] = src[i];
    }
    return MCL_OK;
}

/* ==================================================================================== */
/* rel_attn — Transformer-XL's relative-position attention (Dai et al. 2019, Sec. 3.3 and
 * App. B) over [memory ‖ segment], causal, with an optional distance window.
 *   in[0] qc [B,S,H,D]   query + u (the content bias, added by the caller)
 *   in[1] qp [B,S,H,D]   query + v (the position bias, added by the caller)
 *   in[2] k  [B,T,H,D]   keys of [memory ‖ segment], T = M + S (M >= 0 memory rows first)
 *   in[3] v  [B,T,H,Dv]  values, same rows
 *   in[4] r  [T,H,D]     projected relative encodings, row d = distance d (shared by the batch)
 *   p.f[0] scale         of the scores (usually 1/sqrt(D))
 *   p.i[0] window W      0: unlimited; else key j only if the distance M + i − j <= W
 *   out[0] o [B,S,H,Dv]  (differentiable);  out[1] lse [B,S,H] (saved for the backward)
 *
 * Query i (0..S-1) is at position M + i, key j (0..T-1) at position j; key j is allowed iff
 * lo_i <= j <= M + i, lo_i = max(0, M + i − W) (W > 0) or 0. Per batch b and head h, with the
 * distance d = M + i − j (0..T-1):
 *   s_ij = scale · (qc_i · k_j + qp_i · r_d)                 (the paper's terms (a)+(c), (b)+(d))
 *   p_ij = exp(s_ij − lse_i),  lse_i = log Σ_j exp(s_ij)      (allowed j only)
 *   o_i  = Σ_j p_ij v_j
 * Backward, from the saved lse (nothing else is kept between the passes):
 *   dp_ij = do_i · v_j,  D_i = Σ_j p_ij dp_ij (= do_i · o_i),  ds_ij = p_ij (dp_ij − D_i)
 *   dqc_i += scale Σ_j ds_ij k_j          dk_j += scale Σ_i ds_ij qc_i     dv_j += Σ_i p_ij do_i
 *   dqp_i += scale Σ_d dB_id r_d          dr_d += scale Σ_b Σ_i dB_id qp_i
 * where dB_id = ds_{i, M+i−d} (0 where that key is not allowed): ds scattered by distance.
 * How. Per (b, h), the [S,T] content scores AC = Qc·Kᵀ and the [S,T] position scores
 * BD = Qp·Rᵀ (BD[i][d] = qp_i · r_d for every distance) are two GEMMs on strided views of the
 * inputs (no copies); the "relative shift" gathers s_ij = scale·(AC[i][j] + BD[i][M+i−j]);
 * the row softmax runs over the allowed keys (exponentials of arguments <= 0 in float by
 * mcl_exp_nonpos, vectorized, within 1 ulp; their sums in double, in order); O = P·V is a
 * GEMM. The backward recomputes P the same way, dP = dO·Vᵀ, and the GEMMs dQc = scale·dS·K,
 * dK = scale·dSᵀ·Qc, dV = Pᵀ·dO; dS is scattered by distance into dB [S,T], then
 * dQp = scale·dB·R and the block's part of dR, scale·dBᵀ·Qp, are GEMMs too. The parts of dR
 * ([B,H,nd,D], nd = the distances in use) are added over the batch at the end, in double and
 * in batch order. Every GEMM runs per block of rows (rel_blk) on the band the block reaches
 * (the allowed pairs leave a triangle of the [S,T] block empty). Threads: the (b, h) blocks in parallel (GEMMs inside a
 * parallel region run on the calling thread), each with its own work space; every value is a
 * GEMM element or a loop in a fixed order, so no result depends on the thread count or the
 * schedule. Work space: two [S,T] floats per thread (three in the backward), plus the parts of
 * dR (B·H·nd·D floats) when r needs a gradient; freed when the call returns.
 */

#define REL_PAR_MIN 65536 /* B·H·S·T·(D + Dv) below this: the (b, h) loop on one thread */

typedef struct rel_dims {
    int64_t B, S, H, D, Dv, T, M, win;
    float scale;
} rel_dims;

static rel_dims rel_dims_of(const mcl_op_args *a)
{
    rel_dims d;
    d.B = a->in[0]->shape[0];
    d.S = a->in[0]->shape[1];
    d.H = a->in[0]->shape[2];
    d.D = a->in[0]->shape[3];
    d.T = a->in[2]->shape[1];
    d.Dv = a->in[3]->shape[3];
    d.M = d.T - d.S;
    d.win = a->p.i[0];
    d.scale = a->p.f[0];
    return d;
}

/* The first allowed key of query i (the last is M + i). */
static int64_t rel_lo(const rel_dims *d, int64_t i)
{
    const int64_t lo = d->win > 0 ? d->M + i - d->win : 0;
    return lo > 0 ? lo : 0;
}

/* Distances any query can use: 0..nd-1 (all T, or W + 1 with a window). */
static int64_t rel_ndist(const rel_dims *d)
{
    return d->win > 0 && d->win + 1 < d->T ? d->win + 1 : d->T;
}

/* Blocks. The allowed (i, j) pairs fill a band of the [S,T] block (a triangle's worth is
 * empty: a quarter of it when M = S), so every GEMM runs per block of rel_blk rows (queries,
 * keys or distances) on the part of the other side that block reaches; what lies outside is
 * exactly zero in P, dS and dB. The blocks depend only on the shapes. */
static int64_t rel_blk(const rel_dims *d)
{
    const int64_t q = (d->S + 3) / 4;
    return q > 16 ? q : 16;
}
static int64_t rel_min(int64_t a, int64_t b) { return a < b ? a : b; }

/* Query rows [i0, i1) reach the keys [rel_lo(i0), M + i1) and the distances
 * [0, min(nd, M + i1)). Keys [j0, j1) are reached by the query rows [*r0, *r1) (empty when
 * *r1 <= *r0): i >= j0 − M, and i <= j1 − 1 − M + W with a window. */
static void rel_rows_of_keys(const rel_dims *d, int64_t j0, int64_t j1, int64_t *r0, int64_t *r1)
{
    *r0 = j0 - d->M > 0 ? j0 - d->M : 0;
    *r1 = d->win > 0 ? rel_min(d->S, j1 - d->M + d->win) : d->S;
}

/* The relative shift of one query row: s[j] = scale·(s[j] + bd[hi − j]) for j in [lo, hi]
 * (bd, the row's scores by distance, read backwards; its own buffer) */
MCL_HOT static void rel_shift_row(float *restrict s, const float *restrict bd, int64_t lo,
                                  int64_t hi, float scale)
{
    MCL_SIMD for (int64_t j = lo; j <= hi; j++) s[j] = scale * (s[j] + bd[hi - j]);
}

/* max_j s[j] over [lo, hi] (NaN never wins; -INFINITY if all are NaN), in REL_MAX_LANES
 * running maxima: the same value as one running maximum (max is exact whatever the order;
 * at most the sign of a zero maximum can differ, and x − (±0) and exp(±0) do not see it) */
#define REL_MAX_LANES 16
MCL_HOT static float rel_row_max(const float *s, int64_t lo, int64_t hi)
{
    float m[REL_MAX_LANES];
    for (int l = 0; l < REL_MAX_LANES; l++) m[l] = -INFINITY;
    int64_t j = lo;
    for (; j + REL_MAX_LANES <= hi + 1; j += REL_MAX_LANES)
        MCL_SIMD for (int l = 0; l < REL_MAX_LANES; l++) m[l] = s[j + l] > m[l] ? s[j + l] : m[l];
    float mx = -INFINITY;
    for (; j <= hi; j++) mx = s[j] > mx ? s[j] : mx;
    for (int l = 0; l < REL_MAX_LANES; l++) mx = m[l] > mx ? m[l] : mx;
    return mx;
}

/* Rows whose double sums run side by side (rel_row_sums). */
#define REL_RB 8

/* (double)a[o], or (double)a[o]·(double)b[o] when b is given */
static inline double rel_term(const float *a, const float *b, int64_t o)
{
    return b ? (double)a[o] * (double)b[o] : (double)a[o];
}

/* sum[q] = Σ_{j = lo[q]..hi[q]} rel_term(a_q, b_q, j) in the order of j, for the nr <= REL_RB
 * rows a_q = a + q·T (b_q likewise) of consecutive queries (lo, hi nondecreasing in q). Each
 * sum is that of a loop over its row alone, bit for bit; the columns [lo[nr−1], hi[0]] that all
 * the rows share run side by side: REL_RB independent chains of double adds instead of one
 * chain waiting on the adder's latency. */
MCL_HOT static void rel_row_sums(const float *a, const float *b, int64_t T, int nr,
                                 const int64_t *lo, const int64_t *hi, double *sum)
{
    double s[REL_RB] = {0};
    const int64_t L = lo[nr - 1], H = hi[0];
    if (nr < REL_RB || L > H) { /* a short group, or no shared columns: one row at a time */
        for (int q = 0; q < nr; q++)
            for (int64_t j = lo[q]; j <= hi[q]; j++) s[q] += rel_term(a, b, q * T + j);
    } else {
        for (int q = 0; q < REL_RB; q++) /* each row's columns before the shared ones */
            for (int64_t j = lo[q]; j < L; j++) s[q] += rel_term(a, b, q * T + j);
        for (int64_t j = L; j <= H; j++)
            for (int q = 0; q < REL_RB; q++) s[q] += rel_term(a, b, q * T + j);
        for (int q = 0; q < REL_RB; q++) /* and after them */
            for (int64_t j = H + 1; j <= hi[q]; j++) s[q] += rel_term(a, b, q * T + j);
    }
    for (int q = 0; q < nr; q++) sum[q] = s[q];
}

/* Probabilities of head (b, h) into P [S,T] (0 at keys not allowed), with BD [S,T] as work
 * space; per block of query rows [i0, i1):
 *   P = Qc·Kᵀ (keys rel_lo(i0)..M+i1-1),  BD = Qp·Rᵀ (distances 0..min(nd, M+i1)-1)   (GEMMs)
 * then per row s_ij = scale·(P[i][j] + BD[i][M+i−j]),  p_ij = exp(s_ij − lse_i) (allowed j).
 * lse_out: computed and stored at lse_out[(b·S + i)·H + h] (forward); else lse_in is read. */
static void rel_probs(const rel_dims *d, int64_t b, int64_t h, const float *qc, const float *qp,
                      const float *k, const float *r, float *P, float *BD, float *lse_out,
                      const float *lse_in)
{
    const int64_t S = d->S, T = d->T, M = d->M, ld = d->H * d->D;
    const int64_t nd = rel_ndist(d), QB = rel_blk(d);
    const float *qcb = qc + (b * S * d->H + h) * d->D, *qpb = qp + (b * S * d->H + h) * d->D;
    const float *kb = k + (b * T * d->H + h) * d->D, *rh = r + h * d->D;
    for (int64_t i0 = 0; i0 < S; i0 += QB) {
        const int64_t i1 = rel_min(i0 + QB, S), jlo = rel_lo(d, i0), jhi = M + i1;
        mcl_ref_sgemm(0, 1, i1 - i0, jhi - jlo, d->D, 1.0f, qcb + i0 * ld, ld, kb + jlo * ld, ld,
                      0.0f, P + i0 * T + jlo, T);
        mcl_ref_sgemm(0, 1, i1 - i0, rel_min(nd, M + i1), d->D, 1.0f, qpb + i0 * ld, ld, rh, ld,
                      0.0f, BD + i0 * T, T);
    }
    for (int64_t i0 = 0; i0 < S; i0 += REL_RB) { /* REL_RB rows at a time (rel_row_sums) */
        const int nr = (int)rel_min(REL_RB, S - i0);
        int64_t lo[REL_RB], hi[REL_RB];
        float mx[REL_RB];
        double sum[REL_RB];
        for (int q = 0; q < nr; q++) {
            const int64_t i = i0 + q;
            lo[q] = rel_lo(d, i);
            hi[q] = M + i;
            rel_shift_row(P + i * T, BD + i * T, lo[q], hi[q], d->scale);
            if (!lse_out) continue;
            float *pr = P + i * T, *e = BD + i * T; /* BD's row is read: exponentials go there */
            mx[q] = rel_row_max(pr, lo[q], hi[q]);
            MCL_SIMD
            for (int64_t j = lo[q]; j <= hi[q]; j++) e[j] = mcl_exp_nonpos(pr[j] - mx[q]);
        }
        if (lse_out) rel_row_sums(BD + i0 * T, NULL, T, nr, lo, hi, sum);
        for (int q = 0; q < nr; q++) {
            const int64_t i = i0 + q, row = (b * S + i) * d->H + h;
            float *pr = P + i * T;
            double l;
            if (lse_out) {
                l = (double)mx[q] + log(sum[q]);
                lse_out[row] = (float)l;
            } else {
                l = (double)lse_in[row];
            }
            for (int64_t j = 0; j < lo[q]; j++) pr[j] = 0.0f;
            MCL_SIMD
            for (int64_t j = lo[q]; j <= hi[q]; j++)
                pr[j] = mcl_exp_nonpos((float)((double)pr[j] - l));
            for (int64_t j = hi[q] + 1; j < T; j++) pr[j] = 0.0f;
        }
    }
}

/* One row of dS from dP (in place): sr[j] = p[j]·(sr[j] − Di) on [lo, hi], 0 elsewhere
 * in [0, T) */
MCL_HOT static void rel_ds_row(const float *restrict pr, float *restrict sr, int64_t T, int64_t lo,
                               int64_t hi, double Di)
{
    for (int64_t j = 0; j < lo; j++) sr[j] = 0.0f;
    MCL_SIMD for (int64_t j = lo; j <= hi; j++)
        sr[j] = (float)((double)pr[j] * ((double)sr[j] - Di));
    for (int64_t j = hi + 1; j < T; j++) sr[j] = 0.0f;
}

/* One row of dB from dS: br[hi − j] = sr[j] on [lo, hi], then 0 up to the nd distances */
MCL_HOT static void rel_unshift_row(const float *restrict sr, float *restrict br, int64_t lo,
                                    int64_t hi, int64_t nd)
{
    MCL_SIMD for (int64_t j = lo; j <= hi; j++) br[hi - j] = sr[j];
    for (int64_t dd = hi - lo + 1; dd < nd; dd++) br[dd] = 0.0f;
}

/* Per-thread work space: nblk [S,T] blocks per thread (P, BD / dP, and dB in the backward). */
static float *rel_ws(const rel_dims *d, int nblk)
{
    const int64_t n = (int64_t)omp_get_max_threads() * nblk * d->S * d->T;
    return malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
}

static int rel_par(const rel_dims *d)
{
    return d->B * d->H > 1 && d->B * d->H * d->S * d->T * (d->D + d->Dv) > REL_PAR_MIN;
}

/* ------------------------------------------------------------------------------------ */
/* forward: s_ij = scale·(qc_i·k_j + qp_i·r_{M+i−j}), o_i = Σ_j softmax_j(s_i) v_j
 *   qc [B,S,H,D], qp [B,S,H,D], k [B,T,H,D], v [B,T,H,Dv], r [T,H,D] -> o [B,S,H,Dv], lse [B,S,H]
 * Per (b, h): P by rel_probs, then O = P·V (GEMM, written in place into o's strided rows). */
mcl_status mcl_ref_rel_attn_fwd(mcl_backend *be, const mcl_op_args *a)
{
    (void)be;
    const rel_dims d = rel_dims_of(a);
    const float *qc = mcl_ref_ptr(a->in[0]), *qp = mcl_ref_ptr(a->in[1]);
    const float *k = mcl_ref_ptr(a->in[2]), *v = mcl_ref_ptr(a->in[3]), *r = mcl_ref_ptr(a->in[4]);
    float *o = mcl_ref_ptr(a->out[0]), *lse = mcl_ref_ptr(a->out[1]);
    float *ws = rel_ws(&d, 2);
    if (!ws) return MCL_ERR_OOM;
    const int64_t BH = d.B * d.H, ldv = d.H * d.Dv, QB = rel_blk(&d);
#pragma omp parallel for schedule(dynamic) if (rel_par(&d))
    for (int64_t bh = 0; bh < BH; bh++) {
        const int64_t b = bh / d.H, h = bh % d.H;
        float *P = ws + (int64_t)omp_get_thread_num() * 2 * d.S * d.T, *BD = P + d.S * d.T;
        const float *vb = v + (b * d.T * d.H + h) * d.Dv;
        float *ob = o + (b * d.S * d.H + h) * d.Dv;
        rel_probs(&d, b, h, qc, qp, k, r, P, BD, lse, NULL);
        for (int64_t i0 = 0; i0 < d.S; i0 += QB) { /* O = P·V over the keys the rows reach */
            const int64_t i1 = rel_min(i0 + QB, d.S), jlo = rel_lo(&d, i0), jhi = d.M + i1;
            mcl_ref_sgemm(0, 0, i1 - i0, d.Dv, jhi - jlo, 1.0f, P + i0 * d.T + jlo, d.T,
                          vb + jlo * ldv, ldv, 0.0f, ob + i0 * ldv, ldv);
        }
    }
    free(ws);
    return MCL_OK;
}

/* ------------------------------------------------------------------------------------ */
/* backward: see the section's header.
 *   go [B,S,H,Dv] -> gqc [B,S,H,D], gqp [B,S,H,D], gk [B,T,H,D], gv [B,T,H,Dv], gr [T,H,D]
 *   (accumulated; any may be NULL)
 * Per (b, h), from the saved lse: P again, dP = dO·Vᵀ, dS = P ⊙ (dP − D) (row-wise,
 * D_i = Σ_j p_ij dP_ij from the same float dP, so each row of dS sums to ~0 as the softmax's
 * Jacobian says), then the GEMMs gqc += scale·dS·K, gk += scale·dSᵀ·Qc, gv += Pᵀ·dO; dB (dS by
 * distance), gqp += scale·dB·R and the part scale·dBᵀ·Qp of gr. Then gr += Σ_b parts (double).
 * A fresh gradient (mcl_ref_grad_fresh) is stored instead (each of its blocks is one GEMM's:
 * mcl_ref_sgemm_fresh), and the keys no query reaches get their zeros. */

/* rows [j0, j1) of a gradient (n floats each, rows ld apart) set to zero: keys no query
 * reaches, in a fresh gk or gv */
static void rel_zero_rows(float *g, int64_t j0, int64_t j1, int64_t n, int64_t ld)
{
    for (int64_t j = j0; j < j1; j++) memset(g + j * ld, 0, (size_t)n * sizeof(float));
}

mcl_status mcl_ref_rel_attn_bwd(mcl_backend *be, const mcl_op_args *a)
{
    (void)be;
    const rel_dims d = rel_dims_of(a);
    const float *qc = mcl_ref_ptr(a->in[0]), *qp = mcl_ref_ptr(a->in[1]);
    const float *k = mcl_ref_ptr(a->in[2]), *v = mcl_ref_ptr(a->in[3]), *r = mcl_ref_ptr(a->in[4]);
    const float *lse = mcl_ref_ptr(a->out[1]), *go = mcl_ref_ptr(a->gout[0]);
    float *gqc = a->gin[0] ? mcl_ref_ptr(a->gin[0]) : NULL;
    float *gqp = a->gin[1] ? mcl_ref_ptr(a->gin[1]) : NULL;
    float *gk = a->gin[2] ? mcl_ref_ptr(a->gin[2]) : NULL;
    float *gv = a->gin[3] ? mcl_ref_ptr(a->gin[3]) : NULL;
    float *gr = a->gin[4] ? mcl_ref_ptr(a->gin[4]) : NULL;
    /* one after the other (ref.h): two of them may be one tensor (then the later ones add) */
    const int fqc = gqc && mcl_ref_grad_fresh(a->gin[0]), fqp = gqp && mcl_ref_grad_fresh(a->gin[1]);
    const int fk = gk && mcl_ref_grad_fresh(a->gin[2]), fv = gv && mcl_ref_grad_fresh(a->gin[3]);
    const int fr = gr && mcl_ref_grad_fresh(a->gin[4]);
    const int64_t S = d.S, T = d.T, M = d.M, BH = d.B * d.H, ld = d.H * d.D, ldv = d.H * d.Dv;
    const int64_t nd = rel_ndist(&d), QB = rel_blk(&d);
    float *ws = rel_ws(&d, 3);
    float *dRp = gr ? malloc((size_t)(BH * nd * d.D) * sizeof *dRp) : NULL; /* [B,H,nd,D] */
    if (!ws || (gr && !dRp)) {
        free(ws);
        free(dRp);
        return MCL_ERR_OOM;
    }
#pragma omp parallel for schedule(dynamic) if (rel_par(&d))
    for (int64_t bh = 0; bh < BH; bh++) {
        const int64_t b = bh / d.H, h = bh % d.H;
        const int64_t qo = (b * S * d.H + h) * d.D, ko = (b * T * d.H + h) * d.D;
        const int64_t gvo = (b * S * d.H + h) * d.Dv, vo = (b * T * d.H + h) * d.Dv;
        float *P = ws + (int64_t)omp_get_thread_num() * 3 * S * T, *dS = P + S * T, *dB = dS + S * T;
        rel_probs(&d, b, h, qc, qp, k, r, P, dS, NULL, lse);
        for (int64_t i0 = 0; i0 < S; i0 += QB) { /* dP = dO·Vᵀ over the keys the rows reach */
            const int64_t i1 = rel_min(i0 + QB, S), jlo = rel_lo(&d, i0), jhi = M + i1;
            mcl_ref_sgemm(0, 1, i1 - i0, jhi - jlo, d.Dv, 1.0f, go + gvo + i0 * ldv, ldv,
                          v + vo + jlo * ldv, ldv, 0.0f, dS + i0 * T + jlo, T);
        }
        for (int64_t i0 = 0; i0 < S; i0 += REL_RB) { /* dS = P ⊙ (dP − D), by REL_RB rows */
            const int nr = (int)rel_min(REL_RB, S - i0);
            int64_t lo[REL_RB], hi[REL_RB];
            double Di[REL_RB];
            for (int q = 0; q < nr; q++) {
                lo[q] = rel_lo(&d, i0 + q);
                hi[q] = M + i0 + q;
            }
            rel_row_sums(P + i0 * T, dS + i0 * T, T, nr, lo, hi, Di);
            for (int q = 0; q < nr; q++)
                rel_ds_row(P + (i0 + q) * T, dS + (i0 + q) * T, T, lo[q], hi[q], Di[q]);
        }
        for (int64_t i0 = 0; gqc && i0 < S; i0 += QB) { /* dQc = scale·dS·K, per row block */
            const int64_t i1 = rel_min(i0 + QB, S), jlo = rel_lo(&d, i0), jhi = M + i1;
            mcl_ref_sgemm_acc(fqc, 0, 0, i1 - i0, d.D, jhi - jlo, d.scale, dS + i0 * T + jlo, T,
                         k + ko + jlo * ld, ld, gqc + qo + i0 * ld, ld);
        }
        for (int64_t j0 = 0; (gk || gv) && j0 < T; j0 += QB) { /* dK, dV per key block */
            const int64_t j1 = rel_min(j0 + QB, T);
            int64_t r0, r1;
            rel_rows_of_keys(&d, j0, j1, &r0, &r1);
            if (r1 <= r0) { /* no query reaches these keys (a window): no terms */
                if (fk) rel_zero_rows(gk + ko, j0, j1, d.D, ld);
                if (fv) rel_zero_rows(gv + vo, j0, j1, d.Dv, ldv);
                continue;
            }
            if (gk)
                mcl_ref_sgemm_acc(fk, 1, 0, j1 - j0, d.D, r1 - r0, d.scale, dS + r0 * T + j0, T,
                             qc + qo + r0 * ld, ld, gk + ko + j0 * ld, ld);
            if (gv)
                mcl_ref_sgemm_acc(fv, 1, 0, j1 - j0, d.Dv, r1 - r0, 1.0f, P + r0 * T + j0, T,
                             go + gvo + r0 * ldv, ldv, gv + vo + j0 * ldv, ldv);
        }
        if (!gqp && !gr) continue;
        for (int64_t i = 0; i < S; i++) /* dB[i][dd] = dS[i][M+i−dd]: the shift, backwards */
            rel_unshift_row(dS + i * T, dB + i * T, rel_lo(&d, i), M + i, nd);
        for (int64_t i0 = 0; gqp && i0 < S; i0 += QB) { /* dQp = scale·dB·R, per row block */
            const int64_t i1 = rel_min(i0 + QB, S);
            mcl_ref_sgemm_acc(fqp, 0, 0, i1 - i0, d.D, rel_min(nd, M + i1), d.scale, dB + i0 * T, T,
                         r + h * d.D, ld, gqp + qo + i0 * ld, ld);
        }
        for (int64_t d0 = 0; gr && d0 < nd; d0 += QB) { /* the part scale·dBᵀ·Qp of dR, per
                                                         * distance block: rows i >= d0 − M */
            const int64_t d1 = rel_min(d0 + QB, nd), r0 = d0 - M > 0 ? d0 - M : 0;
            mcl_ref_sgemm(1, 0, d1 - d0, d.D, S - r0, d.scale, dB + r0 * T + d0, T,
                          qp + qo + r0 * ld, ld, 0.0f, dRp + (bh * nd + d0) * d.D, d.D);
        }
    }
    if (gr) { /* gr[dd,h] += Σ_b part[b,h,dd] in double, in batch order */
#pragma omp parallel for schedule(static) if (nd * d.H * d.D * d.B > REL_PAR_MIN)
        for (int64_t row = 0; row < nd * d.H; row++) {
            const int64_t dd = row / d.H, h = row % d.H;
            for (int64_t c = 0; c < d.D; c++) {
                double acc = 0.0;
                for (int64_t b = 0; b < d.B; b++) acc += (double)dRp[((b * d.H + h) * nd + dd) * d.D + c];
                gr[row * d.D + c] = (fr ? 0.0f : gr[row * d.D + c]) + (float)acc;
            }
        }
        if (fr) /* distances past a window's: no terms */
            memset(gr + nd * d.H * d.D, 0, (size_t)((d.T - nd) * d.H * d.D) * sizeof(float));
    }
    free(ws);
    free(dRp);
    return MCL_OK;
}
