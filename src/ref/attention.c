/* attention.c — reference causal attention of a chunk against a KV ring buffer, and the
 * ring buffer's write (doc/oct-model.md §2; paper 003_* Sec. 2 and App. B).
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
 *   o_t,h = Σ_j m_j p_j v_j          (m_j = 0 for j = t under mask 1, else 1)
 *
 * Backward (gradients to q, k, v of the chunk; none to the buffer), from the saved lse, with
 * no [S,Hq,n+S] probability tensor kept anywhere (memory O(S·Hq) beyond the inputs):
 *   D_t,h = go_t,h · o_t,h   (= Σ_j p_j dp_j)
 *   dp_j = m_j (go_t,h · v_j),   ds_j = p_j (dp_j − D_t,h)
 *   dq_t,h += scale Σ_j ds_j k_j
 *   dk_t' += scale Σ_{t >= t', h in the group} ds_{t,h,t'} q_t,h
 *   dv_t' += Σ_{t >= t', h in the group} m p_{t,h,t'} go_t,h
 * Determinism: rows (t, h) are independent in the forward and in dq; dk and dv are computed
 * per key row (t', kh), looping over t = t'..S-1 and the group's heads in order. Every sum
 * runs in double, in index order, so no value depends on the thread count.
 *
 * kv_push. in[0] buf [C,H,D] (updated in place), in[1] x [S,H,D]; p.i[0] = pos: the last
 * m = min(S, C) rows of x go to ring rows (pos + r) mod C, r = 0..m-1. The caller keeps
 * (start, n) and moves them (oct/kvcache.c). No backward: the buffer is detached state.
 */
#include <math.h>
#include <stdlib.h>

#include "ref.h"

#define PAR_MIN 16384

/* Slope of head h (0 when alibi = 0). */
static double alibi_slope(float alibi, int64_t h, int64_t Hq)
{
    return alibi == 0.0f ? 0.0 : (double)alibi * exp2(-8.0 * (double)(h + 1) / (double)Hq);
}

typedef struct attn_dims {
    int64_t S, Hq, Hk, Dk, Dv, C, n, start, G;
    int mask;
    double scale;
    float alibi;
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
    d.scale = (double)a->p.f[0];
    d.alibi = a->p.f[1];
    d.G = d.Hq / d.Hk;
    return d;
}

/* Keys of query row t: positions 0..n+t, or 0..n+t-1 under the strict mask 2. */
static int64_t n_keys(const attn_dims *d, int64_t t) { return d->n + t + (d->mask == 2 ? 0 : 1); }

/* Key j (0..n+t) of query row t, key head kh: pointers to its key and value. */
static void key_at(const attn_dims *d, const float *k, const float *v, const float *kb,
                   const float *vb, int64_t j, int64_t kh, const float **kj, const float **vj)
{
    if (j < d->n) {
        const int64_t r = (d->start + j) % d->C;
        *kj = kb + (r * d->Hk + kh) * d->Dk;
        *vj = vb + (r * d->Hk + kh) * d->Dv;
    } else {
        const int64_t tp = j - d->n;
        *kj = k + (tp * d->Hk + kh) * d->Dk;
        *vj = v + (tp * d->Hk + kh) * d->Dv;
    }
}

/* a · b: 16 float lanes (lane l sums the products l, l+16, ..., in order), the lanes added
 * in double in lane order — a fixed order whatever the vector width, so the result does not
 * depend on the compiler's vectorization; the float lanes hold at most n/16 products. */
#define LANES 16
static double dot_f(const float *a, const float *b, int64_t n)
{
    float lane[LANES] = {0};
    int64_t i = 0;
    for (; i + LANES <= n; i += LANES)
        for (int l = 0; l < LANES; l++) lane[l] += a[i + l] * b[i + l];
    double s = 0.0;
    for (int l = 0; l < LANES; l++) s += (double)lane[l];
    for (; i < n; i++) s += (double)a[i] * (double)b[i];
    return s;
}

/* s_j of row (t, h) against key j. */
static double score(const attn_dims *d, const float *qr, const float *kj, int64_t t, int64_t j,
                    double slope)
{
    return d->scale * dot_f(qr, kj, d->Dk) - slope * (double)(d->n + t - j);
}

/* Row (t, h): the probabilities p_j = exp(s_j - lse) of its nk = n + t + 1 keys into pr[]
 * (lse_out: when not NULL, lse is computed here and stored; else the saved *lse is used). */
static void row_probs(const attn_dims *d, const float *q, const float *k, const float *v,
                      const float *kb, const float *vb, int64_t r, double *pr, float *lse_out,
                      double lse_in)
{
    const int64_t t = r / d->Hq, h = r % d->Hq, kh = h / d->G, nk = n_keys(d, t);
    const double slope = alibi_slope(d->alibi, h, d->Hq);
    const float *qr = q + r * d->Dk;
    double mx = -INFINITY;
    for (int64_t j = 0; j < nk; j++) {
        const float *kj, *vj;
        key_at(d, k, v, kb, vb, j, kh, &kj, &vj);
        pr[j] = score(d, qr, kj, t, j, slope);
        if (pr[j] > mx) mx = pr[j];
    }
    double l = lse_in;
    if (lse_out && nk == 0) { /* no key (mask 2, first token, empty ring): o = 0 */
        *lse_out = 0.0f;
        return;
    }
    if (lse_out) {
        double sum = 0.0;
        for (int64_t j = 0; j < nk; j++) sum += exp(pr[j] - mx);
        l = mx + log(sum);
        *lse_out = (float)l;
    }
    for (int64_t j = 0; j < nk; j++) pr[j] = exp(pr[j] - l);
}

/* ------------------------------------------------------------------------------------ */
/* forward: o_t,h = Σ_j m_j softmax_j(s) v_j, lse_t,h = log Σ_j exp(s_j)
 *   q [S,Hq,Dk], k [S,Hk,Dk], v [S,Hk,Dv], kbuf [C,Hk,Dk], vbuf [C,Hk,Dv] -> o [S,Hq,Dv], lse [S,Hq] */
mcl_status mcl_ref_attn_kv_fwd(mcl_backend *be, const mcl_op_args *a)
{
    (void)be;
    const attn_dims d = dims_of(a);
    const float *q = mcl_ref_ptr(a->in[0]), *k = mcl_ref_ptr(a->in[1]), *v = mcl_ref_ptr(a->in[2]);
    const float *kb = mcl_ref_ptr(a->in[3]), *vb = mcl_ref_ptr(a->in[4]);
    float *o = mcl_ref_ptr(a->out[0]), *lse = mcl_ref_ptr(a->out[1]);
    const int64_t rows = d.S * d.Hq, nkmax = d.n + d.S;
    double *scratch = malloc((size_t)(rows * (nkmax + d.Dv)) * sizeof *scratch);
    if (!scratch) return MCL_ERR_OOM;
#pragma omp parallel for schedule(static) if (rows * nkmax * d.Dk > PAR_MIN)
    for (int64_t r = 0; r < rows; r++) {
        const int64_t t = r / d.Hq, kh = (r % d.Hq) / d.G, nk = n_keys(&d, t);
        double *pr = scratch + r * (nkmax + d.Dv), *ac = pr + nkmax;
        row_probs(&d, q, k, v, kb, vb, r, pr, &lse[r], 0.0);
        for (int64_t c = 0; c < d.Dv; c++) ac[c] = 0.0;
        for (int64_t j = 0; j < nk; j++) {
            if (d.mask == 1 && j == d.n + t) continue;
            const float *kj, *vj;
            key_at(&d, k, v, kb, vb, j, kh, &kj, &vj);
            for (int64_t c = 0; c < d.Dv; c++) ac[c] += pr[j] * (double)vj[c];
        }
        for (int64_t c = 0; c < d.Dv; c++) o[r * d.Dv + c] = (float)ac[c];
    }
    free(scratch);
    return MCL_OK;
}

/* ------------------------------------------------------------------------------------ */
/* backward: see the header. go [S,Hq,Dv] -> gq [S,Hq,Dk], gk [S,Hk,Dk], gv [S,Hk,Dv] (accumulated) */
mcl_status mcl_ref_attn_kv_bwd(mcl_backend *be, const mcl_op_args *a)
{
    (void)be;
    const attn_dims d = dims_of(a);
    const float *q = mcl_ref_ptr(a->in[0]), *k = mcl_ref_ptr(a->in[1]), *v = mcl_ref_ptr(a->in[2]);
    const float *kb = mcl_ref_ptr(a->in[3]), *vb = mcl_ref_ptr(a->in[4]);
    const float *o = mcl_ref_ptr(a->out[0]), *lse = mcl_ref_ptr(a->out[1]);
    const float *go = mcl_ref_ptr(a->gout[0]);
    float *gq = a->gin[0] ? mcl_ref_ptr(a->gin[0]) : NULL;
    float *gk = a->gin[1] ? mcl_ref_ptr(a->gin[1]) : NULL;
    float *gv = a->gin[2] ? mcl_ref_ptr(a->gin[2]) : NULL;
    const int64_t rows = d.S * d.Hq, nkmax = d.n + d.S, krows = d.S * d.Hk;
    const int64_t width = nkmax + d.Dk + d.Dv;
    double *D = malloc((size_t)(rows + (rows > krows ? rows : krows) * width) * sizeof *D);
    if (!D) return MCL_ERR_OOM;
    double *scratch = D + rows;
    for (int64_t r = 0; r < rows; r++) D[r] = dot_f(go + r * d.Dv, o + r * d.Dv, d.Dv);
    const int par = rows * nkmax * d.Dk > PAR_MIN;
    /* dq: per row, over its keys in order: dq = scale Σ_j p_j (dp_j - D) k_j */
    if (gq) {
#pragma omp parallel for schedule(static) if (par)
        for (int64_t r = 0; r < rows; r++) {
            const int64_t t = r / d.Hq, kh = (r % d.Hq) / d.G, nk = n_keys(&d, t);
            double *pr = scratch + r * width, *ac = pr + nkmax;
            row_probs(&d, q, k, v, kb, vb, r, pr, NULL, (double)lse[r]);
            for (int64_t c = 0; c < d.Dk; c++) ac[c] = 0.0;
            for (int64_t j = 0; j < nk; j++) {
                const float *kj, *vj;
                key_at(&d, k, v, kb, vb, j, kh, &kj, &vj);
                const double dp = (d.mask == 1 && j == d.n + t) ? 0.0 : dot_f(go + r * d.Dv, vj, d.Dv);
                const double ds = pr[j] * (dp - D[r]);
                for (int64_t c = 0; c < d.Dk; c++) ac[c] += ds * (double)kj[c];
            }
            for (int64_t c = 0; c < d.Dk; c++) gq[r * d.Dk + c] += (float)(d.scale * ac[c]);
        }
    }
    /* dk, dv: per chunk key row (t', kh), over the queries t >= t' and the group's heads */
    if (gk || gv) {
#pragma omp parallel for schedule(static) if (par)
        for (int64_t kr = 0; kr < krows; kr++) {
            const int64_t tp = kr / d.Hk, kh = kr % d.Hk, j = d.n + tp;
            const float *kj = k + kr * d.Dk, *vj = v + kr * d.Dv;
            double *ak = scratch + kr * width, *av = ak + d.Dk;
            for (int64_t c = 0; c < d.Dk; c++) ak[c] = 0.0;
            for (int64_t c = 0; c < d.Dv; c++) av[c] = 0.0;
            for (int64_t t = tp + (d.mask == 2); t < d.S; t++)
                for (int64_t h = kh * d.G; h < (kh + 1) * d.G; h++) {
                    const int64_t r = t * d.Hq + h;
                    const float *qr = q + r * d.Dk, *gr = go + r * d.Dv;
                    const double slope = alibi_slope(d.alibi, h, d.Hq);
                    const double p = exp(score(&d, qr, kj, t, j, slope) - (double)lse[r]);
                    const int keep = !(d.mask == 1 && t == tp);
                    const double dp = keep ? dot_f(gr, vj, d.Dv) : 0.0;
                    const double ds = p * (dp - D[r]);
                    for (int64_t c = 0; c < d.Dk; c++) ak[c] += ds * (double)qr[c];
                    if (keep)
                        for (int64_t c = 0; c < d.Dv; c++) av[c] += p * (double)gr[c];
                }
            if (gk)
                for (int64_t c = 0; c < d.Dk; c++) gk[kr * d.Dk + c] += (float)(d.scale * ak[c]);
            if (gv)
                for (int64_t c = 0; c < d.Dv; c++) gv[kr * d.Dv + c] += (float)av[c];
        }
    }
    free(D);
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
