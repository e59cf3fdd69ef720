/* attention.cl — attn_kv (causal attention of a chunk against a KV ring buffer, forward and
 * backward), kv_push (the ring's write) and rel_attn (Transformer-XL's relative-position
 * attention, at the end). Equations, shapes and parameters: src/ref/attention.c.
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

/* ==================================================================================== */
/* rel_attn: Transformer-XL relative-position attention over [memory ‖ segment]. Equations,
 * shapes and parameters: src/ref/attention.c (rel_attn). Same layout as attn_kv: one
 * work-group per row (query row (b, i, h) for the forward and for dqc, dqp; key row (b, j, h)
 * for dk, dv; distance row (d, h) for dr), the other side walked in tiles of the group size W
 * through __local memory, every item owning the output columns l, l + W, ... (D, Dv <=
 * ATTN_MAXC·W, checked by the host). Each output element is summed by one item in a fixed
 * order, in (hi, lo) float pairs: deterministic, close to the reference. Backward kernels
 * ACCUMULATE. Scores are recomputed wherever they are needed (s_ij as one paired sum of the
 * 2·D products qc_i·k_j and qp_i·r_d); nothing but lse is saved by the forward. */

typedef struct rel_geom {
    long B, S, H, D, Dv, T, M, win;
    float scale;
} rel_geom;

#define REL_GEOM_ARGS long B, long S, long H, long D, long Dv, long T, long win, float scale
#define REL_GEOM_INIT                                                                           \
    rel_geom g;                                                                                 \
    g.B = B; g.S = S; g.H = H; g.D = D; g.Dv = Dv; g.T = T; g.M = T - S; g.win = win;           \
    g.scale = scale;

/* First allowed key of query i (the last is M + i). */
long rel_lo(const rel_geom *g, long i)
{
    const long lo = g->win > 0 ? g->M + i - g->win : 0;
    return lo > 0 ? lo : 0;
}

/* s_ij = scale·(qc_i·k_j + qp_i·r_{M+i−j}) of query row (b, i, h) against key j */
float rel_score(const rel_geom *g, __global const float *qc, __global const float *qp,
                __global const float *k, __global const float *r, long b, long i, long h, long j)
{
    const long qo = ((b * g->S + i) * g->H + h) * g->D;
    __global const float *kj = k + ((b * g->T + j) * g->H + h) * g->D;
    __global const float *rd = r + ((g->M + i - j) * g->H + h) * g->D;
    float2 acc = (float2)(0.0f, 0.0f);
    for (long c = 0; c < g->D; c++) acc = mcl_acc_add_prod(acc, qc[qo + c], kj[c]);
    for (long c = 0; c < g->D; c++) acc = mcl_acc_add_prod(acc, qp[qo + c], rd[c]);
    return g->scale * mcl_acc_value(acc);
}

#define REL_IN_ARGS                                                                             \
    __global const float *qc, long qc_off, __global const float *qp, long qp_off,               \
        __global const float *k, long k_off, __global const float *v, long v_off,               \
        __global const float *r, long r_off
#define REL_IN_INIT qc += qc_off; qp += qp_off; k += k_off; v += v_off; r += r_off;

/* ------------------------------------------------------------------------------------ */
/* forward: lse = log Σ_j exp(s_ij);  o = Σ_j exp(s_ij − lse) v_j  (one group per query row) */
__kernel void rel_attn_fwd(REL_IN_ARGS, __global float *o, long o_off, __global float *lse,
                           long lse_off, REL_GEOM_ARGS, __local float2 *red, __local float *pt)
{
    REL_GEOM_INIT
    REL_IN_INIT
    o += o_off; lse += lse_off;
    const long W = get_local_size(0), l = get_local_id(0), row = get_group_id(0);
    const long b = row / (S * H), i = (row / H) % S, h = row % H;
    const long lo = rel_lo(&g, i), nk = g.M + i - lo + 1;
    float m = -INFINITY;
    for (long j = lo + l; j < lo + nk; j += W) m = fmax(m, rel_score(&g, qc, qp, k, r, b, i, h, j));
    m = attn_group_max(m, red);
    float2 acc = (float2)(0.0f, 0.0f);
    for (long j = lo + l; j < lo + nk; j += W)
        acc = mcl_acc_add(acc, exp(rel_score(&g, qc, qp, k, r, b, i, h, j) - m));
    const float lr = m + mcl_acc_log(mcl_group_sum(acc, red));
    if (l == 0) lse[row] = lr;
    float2 oc[ATTN_MAXC];
    for (int c2 = 0; c2 < ATTN_MAXC; c2++) oc[c2] = (float2)(0.0f, 0.0f);
    for (long base = 0; base < nk; base += W) {
        const long j = lo + base + l;
        pt[l] = base + l < nk ? exp(rel_score(&g, qc, qp, k, r, b, i, h, j) - lr) : 0.0f;
        barrier(CLK_LOCAL_MEM_FENCE);
        const long top = nk - base < W ? nk - base : W;
        for (long jj = 0; jj < top; jj++) {
            __global const float *vj = v + ((b * T + lo + base + jj) * H + h) * Dv;
            for (int c2 = 0; c2 < ATTN_MAXC; c2++) {
                const long c = l + c2 * W;
                if (c < Dv) oc[c2] = mcl_acc_add_prod(oc[c2], pt[jj], vj[c]);
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    for (int c2 = 0; c2 < ATTN_MAXC; c2++) {
        const long c = l + c2 * W;
        if (c < Dv) o[row * Dv + c] = mcl_acc_value(oc[c2]);
    }
}

/* ds_ij of query row `row` = (b, i, h) against key j: p (go_i·v_j − Dr), Dr = go_i·o_i;
 * *p_out = p_ij */
float rel_ds(const rel_geom *g, __global const float *qc, __global const float *qp,
             __global const float *k, __global const float *v, __global const float *r,
             __global const float *lse, __global const float *go, long b, long i, long h, long j,
             float Dr, float *p_out)
{
    const long row = (b * g->S + i) * g->H + h;
    const float p = exp(rel_score(g, qc, qp, k, r, b, i, h, j) - lse[row]);
    const float dp = attn_dot(go + row * g->Dv, v + ((b * g->T + j) * g->H + h) * g->Dv, g->Dv);
    *p_out = p;
    return p * (dp - Dr);
}

/* ------------------------------------------------------------------------------------ */
/* backward, queries (one group per query row (b, i, h)), over its keys j = lo..M+i in order:
 *   gqc += scale Σ_j ds_ij k_j,   gqp += scale Σ_j ds_ij r_{M+i−j}
 * want_qc / want_qp: 0 when that gradient is not needed (the pointer is then any tensor). */
__kernel void rel_attn_bwd_q(REL_IN_ARGS, __global const float *o, long o_off,
                             __global const float *lse, long lse_off, __global const float *go,
                             long go_off, __global float *gqc, long gqc_off, __global float *gqp,
                             long gqp_off, int want_qc, int want_qp, REL_GEOM_ARGS,
                             __local float2 *red, __local float *pt)
{
    REL_GEOM_INIT
    REL_IN_INIT
    o += o_off; lse += lse_off; go += go_off; gqc += gqc_off; gqp += gqp_off;
    const long W = get_local_size(0), l = get_local_id(0), row = get_group_id(0);
    const long b = row / (S * H), i = (row / H) % S, h = row % H;
    const long lo = rel_lo(&g, i), nk = g.M + i - lo + 1;
    const float Dr = attn_row_D(go, o, row, Dv, red);
    float2 ac[ATTN_MAXC], ap[ATTN_MAXC];
    for (int c2 = 0; c2 < ATTN_MAXC; c2++) ac[c2] = ap[c2] = (float2)(0.0f, 0.0f);
    for (long base = 0; base < nk; base += W) {
        float p;
        pt[l] = base + l < nk ? rel_ds(&g, qc, qp, k, v, r, lse, go, b, i, h, lo + base + l, Dr, &p) : 0.0f;
        barrier(CLK_LOCAL_MEM_FENCE);
        const long top = nk - base < W ? nk - base : W;
        for (long jj = 0; jj < top; jj++) {
            const long j = lo + base + jj;
            __global const float *kj = k + ((b * T + j) * H + h) * D;
            __global const float *rd = r + ((g.M + i - j) * H + h) * D;
            for (int c2 = 0; c2 < ATTN_MAXC; c2++) {
                const long c = l + c2 * W;
                if (c < D) {
                    ac[c2] = mcl_acc_add_prod(ac[c2], pt[jj], kj[c]);
                    ap[c2] = mcl_acc_add_prod(ap[c2], pt[jj], rd[c]);
                }
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    for (int c2 = 0; c2 < ATTN_MAXC; c2++) {
        const long c = l + c2 * W;
        if (want_qc && c < D) gqc[row * D + c] += scale * mcl_acc_value(ac[c2]);
        if (want_qp && c < D) gqp[row * D + c] += scale * mcl_acc_value(ap[c2]);
    }
}

/* ------------------------------------------------------------------------------------ */
/* backward, keys and values (one group per key row (b, j, h)), over the queries that see key
 * j, i = max(0, j − M) .. S-1 (with a window: up to j − M + W), in order:
 *   gk += scale Σ_i ds_ij qc_i,   gv += Σ_i p_ij go_i */
__kernel void rel_attn_bwd_kv(REL_IN_ARGS, __global const float *o, long o_off,
                              __global const float *lse, long lse_off, __global const float *go,
                              long go_off, __global float *gk, long gk_off, __global float *gv,
                              long gv_off, int want_k, int want_v, REL_GEOM_ARGS,
                              __local float2 *red, __local float *pt)
{
    REL_GEOM_INIT
    REL_IN_INIT
    o += o_off; lse += lse_off; go += go_off; gk += gk_off; gv += gv_off;
    (void)red;
    const long W = get_local_size(0), l = get_local_id(0), kr = get_group_id(0);
    const long b = kr / (T * H), j = (kr / H) % T, h = kr % H;
    const long i0 = j - g.M > 0 ? j - g.M : 0;
    const long i1 = win > 0 && j - g.M + win < S - 1 ? j - g.M + win : S - 1;
    const long U = i1 - i0 + 1; /* may be <= 0: no query sees this key */
    __local float *ps = pt, *pd = pt + W;
    float2 ak[ATTN_MAXC], av[ATTN_MAXC];
    for (int c2 = 0; c2 < ATTN_MAXC; c2++) ak[c2] = av[c2] = (float2)(0.0f, 0.0f);
    for (long base = 0; base < U; base += W) {
        float p = 0.0f, ds = 0.0f;
        if (base + l < U) {
            const long i = i0 + base + l, row = (b * S + i) * H + h;
            ds = rel_ds(&g, qc, qp, k, v, r, lse, go, b, i, h, j, attn_dot(go + row * Dv, o + row * Dv, Dv), &p);
        }
        ps[l] = p;
        pd[l] = ds;
        barrier(CLK_LOCAL_MEM_FENCE);
        const long top = U - base < W ? U - base : W;
        for (long uu = 0; uu < top; uu++) {
            const long row = (b * S + i0 + base + uu) * H + h;
            for (int c2 = 0; c2 < ATTN_MAXC; c2++) {
                const long c = l + c2 * W;
                if (c < D) ak[c2] = mcl_acc_add_prod(ak[c2], pd[uu], qc[row * D + c]);
                if (c < Dv) av[c2] = mcl_acc_add_prod(av[c2], ps[uu], go[row * Dv + c]);
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    for (int c2 = 0; c2 < ATTN_MAXC; c2++) {
        const long c = l + c2 * W;
        if (want_k && c < D) gk[kr * D + c] += scale * mcl_acc_value(ak[c2]);
        if (want_v && c < Dv) gv[kr * Dv + c] += mcl_acc_value(av[c2]);
    }
}

/* ------------------------------------------------------------------------------------ */
/* backward, relative encodings (one group per distance row (d, h)), over the pairs at
 * distance d: b = 0..B-1, then i = max(0, d − M) .. S-1 (key j = M + i − d); none when
 * d > W under a window:
 *   gr_d += scale Σ_b Σ_i ds_{i, M+i−d} qp_i */
__kernel void rel_attn_bwd_r(REL_IN_ARGS, __global const float *o, long o_off,
                             __global const float *lse, long lse_off, __global const float *go,
                             long go_off, __global float *gr, long gr_off, REL_GEOM_ARGS,
                             __local float2 *red, __local float *pt)
{
    REL_GEOM_INIT
    REL_IN_INIT
    o += o_off; lse += lse_off; go += go_off; gr += gr_off;
    (void)red;
    const long W = get_local_size(0), l = get_local_id(0), dr = get_group_id(0);
    const long d = dr / H, h = dr % H;
    const long i0 = d - g.M > 0 ? d - g.M : 0, ni = S - i0;
    const long U = (win > 0 && d > win) ? 0 : B * ni;
    float2 ar[ATTN_MAXC];
    for (int c2 = 0; c2 < ATTN_MAXC; c2++) ar[c2] = (float2)(0.0f, 0.0f);
    for (long base = 0; base < U; base += W) {
        float ds = 0.0f, p;
        if (base + l < U) {
            const long b = (base + l) / ni, i = i0 + (base + l) % ni, row = (b * S + i) * H + h;
            ds = rel_ds(&g, qc, qp, k, v, r, lse, go, b, i, h, g.M + i - d,
                        attn_dot(go + row * Dv, o + row * Dv, Dv), &p);
        }
        pt[l] = ds;
        barrier(CLK_LOCAL_MEM_FENCE);
        const long top = U - base < W ? U - base : W;
        for (long uu = 0; uu < top; uu++) {
            const long u = base + uu, row = ((u / ni) * S + i0 + u % ni) * H + h;
            for (int c2 = 0; c2 < ATTN_MAXC; c2++) {
                const long c = l + c2 * W;
                if (c < D) ar[c2] = mcl_acc_add_prod(ar[c2], pt[uu], qp[row * D + c]);
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    for (int c2 = 0; c2 < ATTN_MAXC; c2++) {
        const long c = l + c2 * W;
        if (c < D) gr[dr * D + c] += scale * mcl_acc_value(ar[c2]);
    }
}
