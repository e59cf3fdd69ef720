/* attention.cl — attn_kv (causal attention of a chunk against a KV ring buffer, forward and
 * backward) and kv_push (the ring's write). Equations, shapes and parameters: src/ref/attention.c.
 *
 * Layout: one work-group per row, W = get_local_size(0) items (a power of two, 32..64, chosen
 * by the host). Keys (forward, dq) or queries (dk, dv) are walked in tiles of W: item l
 * computes the weight of element base + l into __local memory, then every item accumulates
 * its own output columns c = l, l + W, ... (at most ATTN_MAXC of them: D <= ATTN_MAXC·W,
 * checked by the host) over the tile in order. Row maxima and sums use a fixed tree over the
 * items. No value depends on anything but the shapes: the results are deterministic.
 * Dot products and sums are (hi, lo) float pairs (common.cl), so they stay close to the
 * reference's double sums. Backward kernels ACCUMULATE (g += ...).
 */
#pragma OPENCL FP_CONTRACT OFF

#define ATTN_MAXC 8

typedef struct attn_geom {
    long S, Hq, Hk, Dk, Dv, C, n, start, G;
    int mask;
    float scale, alibi;
} attn_geom;

float attn_slope(float alibi, long h, long Hq)
{
    return alibi == 0.0f ? 0.0f : alibi * exp2(-8.0f * (float)(h + 1) / (float)Hq);
}

/* Offset (in floats) of row (token j in time order, key head kh) of a [.,Hk,D] tensor: the
 * ring's row (start + j) mod C for j < n (buf = 1), else the chunk's token j - n (buf = 0). */
long attn_key_row(const attn_geom *g, long j, long kh, long D, int *buf)
{
    if (j < g->n) {
        *buf = 1;
        return (((g->start + j) % g->C) * g->Hk + kh) * D;
    }
    *buf = 0;
    return ((j - g->n) * g->Hk + kh) * D;
}

float attn_dot(__global const float *a, __global const float *b, long n)
{
    float2 acc = (float2)(0.0f, 0.0f);
    for (long i = 0; i < n; i++) acc = mcl_acc_add_prod(acc, a[i], b[i]);
    return mcl_acc_value(acc);
}

/* s_j of query row (t, h) against key j */
float attn_score(const attn_geom *g, __global const float *qr, __global const float *kj, long t,
                 long j, float slope)
{
    return g->scale * attn_dot(qr, kj, g->Dk) - slope * (float)(g->n + t - j);
}

float attn_group_max(float m, __local float2 *red)
{
    const uint l = get_local_id(0);
    red[l].x = m;
    for (uint s = get_local_size(0) / 2; s > 0; s >>= 1) {
        barrier(CLK_LOCAL_MEM_FENCE);
        if (l < s) red[l].x = fmax(red[l].x, red[l + s].x);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    const float r = red[0].x;
    barrier(CLK_LOCAL_MEM_FENCE);
    return r;
}

#define ATTN_GEOM_ARGS                                                                          \
    long S, long Hq, long Hk, long Dk, long Dv, long C, long n, long start, int mask, float scale, \
        float alibi
#define ATTN_GEOM_INIT                                                                          \
    attn_geom g;                                                                                \
    g.S = S; g.Hq = Hq; g.Hk = Hk; g.Dk = Dk; g.Dv = Dv; g.C = C; g.n = n; g.start = start;    \
    g.G = Hq / Hk; g.mask = mask; g.scale = scale; g.alibi = alibi;

/* ------------------------------------------------------------------------------------ */
/* forward: lse = log Σ_j exp(s_j);  o = Σ_j m_j exp(s_j - lse) v_j  (one group per row) */
__kernel void attn_kv_fwd(__global const float *q, long q_off, __global const float *k, long k_off,
                          __global const float *v, long v_off, __global const float *kb, long kb_off,
                          __global const float *vb, long vb_off, __global float *o, long o_off,
                          __global float *lse, long lse_off, ATTN_GEOM_ARGS,
                          __local float2 *red, __local float *pt)
{
    ATTN_GEOM_INIT
    q += q_off; k += k_off; v += v_off; kb += kb_off; vb += vb_off; o += o_off; lse += lse_off;
    const long W = get_local_size(0), l = get_local_id(0), r = get_group_id(0);
    const long t = r / Hq, h = r % Hq, kh = h / g.G, nk = n + t + (mask == 2 ? 0 : 1);
    const float slope = attn_slope(alibi, h, Hq);
    __global const float *qr = q + r * Dk;
    int isb;
    float m = -INFINITY;
    for (long j = l; j < nk; j += W) {
        const long ko = attn_key_row(&g, j, kh, Dk, &isb);
        m = fmax(m, attn_score(&g, qr, (isb ? kb : k) + ko, t, j, slope));
    }
    m = attn_group_max(m, red);
    float2 acc = (float2)(0.0f, 0.0f);
    for (long j = l; j < nk; j += W) {
        const long ko = attn_key_row(&g, j, kh, Dk, &isb);
        acc = mcl_acc_add(acc, exp(attn_score(&g, qr, (isb ? kb : k) + ko, t, j, slope) - m));
    }
    const float2 z = mcl_group_sum(acc, red);
    const float lr = nk > 0 ? m + mcl_acc_log(z) : 0.0f; /* no key: o = 0 (mask 2) */
    if (l == 0) lse[r] = lr;
    float2 oc[ATTN_MAXC];
    for (int i = 0; i < ATTN_MAXC; i++) oc[i] = (float2)(0.0f, 0.0f);
    for (long base = 0; base < nk; base += W) {
        const long j = base + l;
        float p = 0.0f;
        if (j < nk && !(mask == 1 && j == n + t)) {
            const long ko = attn_key_row(&g, j, kh, Dk, &isb);
            p = exp(attn_score(&g, qr, (isb ? kb : k) + ko, t, j, slope) - lr);
        }
        pt[l] = p;
        barrier(CLK_LOCAL_MEM_FENCE);
        const long top = nk - base < W ? nk - base : W;
        for (long jj = 0; jj < top; jj++) {
            const long vo = attn_key_row(&g, base + jj, kh, Dv, &isb);
            __global const float *vj = (isb ? vb : v) + vo;
            for (int i = 0; i < ATTN_MAXC; i++) {
                const long c = l + i * W;
                if (c < Dv) oc[i] = mcl_acc_add_prod(oc[i], pt[jj], vj[c]);
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    for (int i = 0; i < ATTN_MAXC; i++) {
        const long c = l + i * W;
        if (c < Dv) o[r * Dv + c] = mcl_acc_value(oc[i]);
    }
}

/* D = go · o of row r (every item gets it) */
float attn_row_D(__global const float *go, __global const float *o, long r, long Dv,
                 __local float2 *red)
{
    const long W = get_local_size(0), l = get_local_id(0);
    float2 acc = (float2)(0.0f, 0.0f);
    for (long c = l; c < Dv; c += W) acc = mcl_acc_add_prod(acc, go[r * Dv + c], o[r * Dv + c]);
    return mcl_acc_value(mcl_group_sum(acc, red));
}

/* ------------------------------------------------------------------------------------ */
/* backward, queries: gq_r += scale Σ_j p_j (dp_j - D_r) k_j, dp_j = m_j go_r·v_j
 * (one group per query row) */
__kernel void attn_kv_bwd_q(__global const float *q, long q_off, __global const float *k, long k_off,
                            __global const float *v, long v_off, __global const float *kb, long kb_off,
                            __global const float *vb, long vb_off, __global const float *o, long o_off,
                            __global const float *lse, long lse_off, __global const float *go,
                            long go_off, __global float *gq, long gq_off, ATTN_GEOM_ARGS,
                            __local float2 *red, __local float *pt)
{
    ATTN_GEOM_INIT
    q += q_off; k += k_off; v += v_off; kb += kb_off; vb += vb_off; o += o_off; lse += lse_off;
    go += go_off; gq += gq_off;
    const long W = get_local_size(0), l = get_local_id(0), r = get_group_id(0);
    const long t = r / Hq, h = r % Hq, kh = h / g.G, nk = n + t + (mask == 2 ? 0 : 1);
    const float slope = attn_slope(alibi, h, Hq);
    __global const float *qr = q + r * Dk, *gr = go + r * Dv;
    const float Dr = attn_row_D(go, o, r, Dv, red), lr = lse[r];
    int isb;
    float2 ac[ATTN_MAXC];
    for (int i = 0; i < ATTN_MAXC; i++) ac[i] = (float2)(0.0f, 0.0f);
    for (long base = 0; base < nk; base += W) {
        const long j = base + l;
        float ds = 0.0f;
        if (j < nk) {
            const long ko = attn_key_row(&g, j, kh, Dk, &isb);
            const float p = exp(attn_score(&g, qr, (isb ? kb : k) + ko, t, j, slope) - lr);
            float dp = 0.0f;
            if (!(mask == 1 && j == n + t)) {
                const long vo = attn_key_row(&g, j, kh, Dv, &isb);
                dp = attn_dot(gr, (isb ? vb : v) + vo, Dv);
            }
            ds = p * (dp - Dr);
        }
        pt[l] = ds;
        barrier(CLK_LOCAL_MEM_FENCE);
        const long top = nk - base < W ? nk - base : W;
        for (long jj = 0; jj < top; jj++) {
            const long ko = attn_key_row(&g, base + jj, kh, Dk, &isb);
            __global const float *kj = (isb ? kb : k) + ko;
            for (int i = 0; i < ATTN_MAXC; i++) {
                const long c = l + i * W;
                if (c < Dk) ac[i] = mcl_acc_add_prod(ac[i], pt[jj], kj[c]);
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    for (int i = 0; i < ATTN_MAXC; i++) {
        const long c = l + i * W;
        if (c < Dk) gq[r * Dk + c] += scale * mcl_acc_value(ac[i]);
    }
}

/* ------------------------------------------------------------------------------------ */
/* backward, chunk keys and values (one group per key row (t', kh)), over the queries
 * u = (t - t0)·G + g, t = t0..S-1 (t0 = t', or t' + 1 under mask 2), g = 0..G-1 (head
 * kh·G + g), in that order:
 *   gk += scale Σ_u ds_u q_u,   gv += Σ_u m_u p_u go_u
 * want_k / want_v: 0 when that gradient is not needed (gk / gv then point at any tensor). */
__kernel void attn_kv_bwd_kv(__global const float *q, long q_off, __global const float *k, long k_off,
                             __global const float *v, long v_off, __global const float *o, long o_off,
                             __global const float *lse, long lse_off, __global const float *go,
                             long go_off, __global float *gk, long gk_off, __global float *gv,
                             long gv_off, int want_k, int want_v, ATTN_GEOM_ARGS,
                             __local float2 *red, __local float *pt)
{
    ATTN_GEOM_INIT
    q += q_off; k += k_off; v += v_off; o += o_off; lse += lse_off; go += go_off;
    gk += gk_off; gv += gv_off;
    const long W = get_local_size(0), l = get_local_id(0), kr = get_group_id(0);
    const long t0 = kr / Hk + (mask == 2), tp = kr / Hk, kh = kr % Hk, j = n + tp;
    const long U = (S - t0) * g.G; /* queries t >= t0 (mask 2: t > t') */
    __global const float *kj = k + kr * Dk, *vj = v + kr * Dv;
    __local float *ps = pt, *pd = pt + W;
    float2 ak[ATTN_MAXC], av[ATTN_MAXC];
    for (int i = 0; i < ATTN_MAXC; i++) ak[i] = av[i] = (float2)(0.0f, 0.0f);
    (void)red;
    for (long base = 0; base < U; base += W) {
        const long u = base + l;
        float p = 0.0f, ds = 0.0f;
        if (u < U) {
            const long t = t0 + u / g.G, h = kh * g.G + u % g.G, r = t * Hq + h;
            __global const float *qr = q + r * Dk, *gr = go + r * Dv;
            const float pr = exp(attn_score(&g, qr, kj, t, j, attn_slope(alibi, h, Hq)) - lse[r]);
            const int keep = !(mask == 1 && t == tp);
            const float dp = keep ? attn_dot(gr, vj, Dv) : 0.0f;
            ds = pr * (dp - attn_dot(gr, o + r * Dv, Dv));
            p = keep ? pr : 0.0f;
        }
        ps[l] = p;
        pd[l] = ds;
        barrier(CLK_LOCAL_MEM_FENCE);
        const long top = U - base < W ? U - base : W;
        for (long uu = 0; uu < top; uu++) {
            const long u2 = base + uu;
            const long r = (t0 + u2 / g.G) * Hq + kh * g.G + u2 % g.G;
            for (int i = 0; i < ATTN_MAXC; i++) {
                const long c = l + i * W;
                if (c < Dk) ak[i] = mcl_acc_add_prod(ak[i], pd[uu], q[r * Dk + c]);
                if (c < Dv) av[i] = mcl_acc_add_prod(av[i], ps[uu], go[r * Dv + c]);
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    for (int i = 0; i < ATTN_MAXC; i++) {
        const long c = l + i * W;
        if (want_k && c < Dk) gk[kr * Dk + c] += scale * mcl_acc_value(ak[i]);
        if (want_v && c < Dv) gv[kr * Dv + c] += mcl_acc_value(av[i]);
    }
}

/* ------------------------------------------------------------------------------------ */
/* kv_push: buf[(pos + r) mod C] = x[S - m + r], r < m = min(S, C); one item per float */
__kernel void kv_push(__global float *buf, long buf_off, __global const float *x, long x_off,
                      long C, long S, long row, long pos, long total)
{
    const long i = get_global_id(0);
    if (i >= total) return;
    const long m = S < C ? S : C, r = i / row, e = i % row;
    buf[buf_off + ((pos + r) % C) * row + e] = x[x_off + (S - m + r) * row + e];
}
