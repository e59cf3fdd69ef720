/* attention.cl — attn_kv (causal attention of a chunk against a KV ring buffer, forward and
 * backward), kv_push (the ring's write) and rel_attn (Transformer-XL's relative-position
 * attention, at the end). Equations, shapes and parameters: src/ref/attention.c.
 *
 * Layout (tiled, FlashAttention-like; doc/opencl-backend.md "Attention kernels"). A
 * work-group of NT items (64, or the largest power of two the kernel allows) owns a BLOCK of
 * BQ rows of one side (query rows for the forward and dq; key rows for dk, dv; distance rows
 * for dr) and walks the other side in TILES of BK rows. The block's rows and each tile's rows
 * are staged in __local memory (one coalesced copy per tile: consecutive items copy
 * consecutive floats of a row), so every key and value read from global memory serves BQ
 * queries, and every score of the BQ x BK tile is computed exactly once per pass, from
 * __local memory, by one item. The forward keeps a running maximum m and sum z per row
 * (online softmax): a new tile with a larger maximum rescales z and the row's output by
 * exp(m_old − m_new); the result is o = acc / z, lse = m + log z. The backward recomputes
 * p = exp(s − lse) from the saved lse (one pass per kernel, each score once).
 *
 * Accumulators: item l owns the elements e = l, l + NT, ... of the block's [BQ, D] output
 * (row e / D, column e mod D, computed once before the loops), at most ATTN_MAXC of them
 * (BQ·D <= ATTN_MAXC·NT: the host picks BQ, and refuses heads wider than ATTN_MAXC·NT).
 * Consecutive items own consecutive columns, so the final writes are coalesced.
 * BQ and BK are powers of two (the score index s of the tile splits by shift and mask);
 * __local rows are padded by one float (row stride D + 1, tile stride BK + 1) so the items of
 * a wavefront reading a column of a tile hit different banks.
 *
 * Indices are 32-bit (int): the host refuses tensors of 2^31 floats or more (each tensor's
 * element offset is added to its pointer first, in 64 bits). The ring index of a buffered key
 * wraps by compare-and-subtract (start + j < 2C), never by a modulo.
 *
 * Sums are (hi, lo) float pairs (common.cl), in a fixed order that depends only on the
 * shapes and the tile sizes: deterministic, close to the reference's double sums. Backward
 * kernels ACCUMULATE (g += ...).
 */
#pragma OPENCL FP_CONTRACT OFF

#define ATTN_MAXC 8

float attn_slope(float alibi, int h, int Hq)
{
    return alibi == 0.0f ? 0.0f : alibi * exp2(-8.0f * (float)(h + 1) / (float)Hq);
}

/* acc · a for a (hi, lo) pair (the rescaling of the online softmax) */
float2 attn_acc_scale(float2 acc, float a)
{
    return (float2)(acc.x * a, acc.y * a);
}

/* Σ_c a[c]·b[c], c < n, over two __local rows, as a pair */
float2 attn_ldot(float2 acc, __local const float *a, __local const float *b, int n)
{
    for (int c = 0; c < n; c++) acc = mcl_acc_add_prod(acc, a[c], b[c]);
    return acc;
}

/* Copy `rows` rows of D floats into the __local tile dst [rows][ld]: tile row r is row idx[r]
 * of a (idx[r] >= 0), row −2 − idx[r] of b (idx[r] <= −2: the ring of attn_kv), or zeros
 * (idx[r] == −1). Item l copies the elements l, l + NT, ... of the tile in row-major order
 * (coalesced); (r, c) advance by compare-and-subtract, no division in the loop.
 * Every item must call it; the caller puts a barrier before the tile is read. */
void attn_tile_load(__local float *dst, int ld, __global const float *a, __global const float *b,
                    __local const int *idx, int rows, int D)
{
    const int NT = get_local_size(0), l = get_local_id(0);
    const int dr = NT / D, dc = NT - dr * D;
    int r = l / D, c = l - r * D;
    while (r < rows) {
        const int ri = idx[r];
        float x = 0.0f;
        if (ri >= 0) x = a[ri * D + c];
        else if (ri <= -2) x = b[(-2 - ri) * D + c];
        dst[r * ld + c] = x;
        r += dr;
        c += dc;
        if (c >= D) {
            c -= D;
            r++;
        }
    }
}

/* The elements e = l + i·NT (i < ATTN_MAXC) of a [rows, D] block that item l owns: row and
 * column, or row −1 past the end. */
void attn_own(int rows, int D, int *orow, int *ocol)
{
    const int NT = get_local_size(0), l = get_local_id(0);
    for (int i = 0; i < ATTN_MAXC; i++) {
        const int e = l + i * NT;
        orow[i] = e < rows * D ? e / D : -1;
        ocol[i] = e < rows * D ? e - (e / D) * D : 0;
    }
}

/* Online softmax of one tile, by item l < BQ for its row: the scores s_j (−inf where not
 * allowed) in P[0..nt) become p_j = exp(s_j − m'), m' = max(m, max_j s_j); z becomes
 * z·exp(m − m') + Σ_j p_j and *alpha = exp(m − m') (1 while the row has seen no key).
 * Returns m'. */
float attn_online(__local float *P, int nt, float m, float2 *z, float *alpha)
{
    float mt = m;
    for (int j = 0; j < nt; j++) mt = fmax(mt, P[j]);
    if (mt == -INFINITY) { /* no allowed key yet: nothing changes */
        for (int j = 0; j < nt; j++) P[j] = 0.0f;
        *alpha = 1.0f;
        return mt;
    }
    *alpha = exp(m - mt); /* 0 when m = −inf (z and the output are still 0) */
    float2 zz = attn_acc_scale(*z, *alpha);
    for (int j = 0; j < nt; j++) {
        const float p = exp(P[j] - mt);
        P[j] = p;
        zz = mcl_acc_add(zz, p);
    }
    *z = zz;
    return mt;
}

/* D_r = go_r · o_r of every row r < rows (one item per row), for the backward kernels. */
__kernel void attn_row_dot(__global const float *go, long go_off, __global const float *o,
                           long o_off, __global float *Dr, int rows, int Dv)
{
    go += go_off;
    o += o_off;
    const int r = get_global_id(0);
    if (r >= rows) return;
    float2 acc = (float2)(0.0f, 0.0f);
    for (int c = 0; c < Dv; c++) acc = mcl_acc_add_prod(acc, go[r * Dv + c], o[r * Dv + c]);
    Dr[r] = mcl_acc_value(acc);
}

/* ==================================================================================== */
/* attn_kv. Query rows of key head kh in the reference's order u = t·G + g (head h = kh·G + g,
 * G = Hq / Hk): a block is BQ consecutive u of one kh; its keys in time order j = 0..n+t
 * (ring rows j < n, then the chunk's tokens). */

#define ATTN_GEOM_ARGS                                                                          \
    int S, int Hq, int Hk, int Dk, int Dv, int C, int n, int start, int mask, float scale,      \
        float alibi, int BQ, int BK

/* Row index of key j (time order) of key head kh for attn_tile_load: the ring's row
 * (start + j) wrapped (as −2 − row, from b), the chunk's token j − n (from a), or −1. */
int attn_key_idx(int j, int kh, int S, int Hk, int C, int n, int start)
{
    if (j < n) {
        int rr = start + j;
        if (rr >= C) rr -= C;
        return -2 - (rr * Hk + kh);
    }
    return j < n + S ? (j - n) * Hk + kh : -1;
}

/* Set up the block's query rows (items l < BQ): qrow = r = t·Hq + h (−1 past the end), qt = t,
 * slope of head h. Returns nothing; the caller puts a barrier after it. */
void attn_q_rows(int kh, int u0, int S, int Hq, int Hk, int BQ, float alibi, __local int *qrow,
                 __local int *qt, __local float *slope)
{
    const int l = get_local_id(0), G = Hq / Hk;
    if (l < BQ) {
        const int u = u0 + l;
        if (u < S * G) {
            const int t = u / G, h = kh * G + (u - t * G);
            qrow[l] = t * Hq + h;
            qt[l] = t;
            slope[l] = attn_slope(alibi, h, Hq);
        } else {
            qrow[l] = -1;
            qt[l] = -1;
            slope[l] = 0.0f;
        }
    }
}

/* ------------------------------------------------------------------------------------ */
/* forward: s_j = scale·q·k_j − slope·(n + t − j), m, z online over the key tiles,
 *   o = Σ_j m_j exp(s_j − m) v_j / z,  lse = m + log z   (o = 0, lse = 0 for a row with no key)
 * One group per block of BQ query rows of one key head. __local: lf = zhi, zlo [BQ] (the
 * pair z in two arrays), Qs [BQ][Dk+1], Ks [BK][Dk+1], Vs [BK][Dv+1], Ps [BQ][BK+1], mrow,
 * arow, slope [BQ]; li = qrow, qt [BQ], kidx [BK]. */
__kernel void attn_kv_fwd(__global const float *q, long q_off, __global const float *k, long k_off,
                          __global const float *v, long v_off, __global const float *kb, long kb_off,
                          __global const float *vb, long vb_off, __global float *o, long o_off,
                          __global float *lse, long lse_off, ATTN_GEOM_ARGS,
                          __local float *lf, __local int *li)
{
    q += q_off; k += k_off; v += v_off; kb += kb_off; vb += vb_off; o += o_off; lse += lse_off;
    const int NT = get_local_size(0), l = get_local_id(0), G = Hq / Hk, R = S * G;
    const int nqb = (R + BQ - 1) / BQ, kh = get_group_id(0) / nqb;
    const int u0 = (get_group_id(0) - kh * nqb) * BQ, bk_sh = 31 - clz(BK);
    const int ldk = Dk + 1, ldv = Dv + 1, ldp = BK + 1;
    /* z per row as a (hi, lo) pair in two float arrays: a float2 view of lf would need 8-byte
     * alignment that a __local float * argument does not promise (NVIDIA faulted on it) */
    __local float *zhi = lf, *zlo = lf + BQ;
    __local float *Qs = lf + 2 * BQ, *Ks = Qs + BQ * ldk, *Vs = Ks + BK * ldk, *Ps = Vs + BK * ldv;
    __local float *mrow = Ps + BQ * ldp, *arow = mrow + BQ, *slope = arow + BQ;
    __local int *qrow = li, *qt = qrow + BQ, *kidx = qt + BQ;
    attn_q_rows(kh, u0, S, Hq, Hk, BQ, alibi, qrow, qt, slope);
    if (l < BQ) {
        mrow[l] = -INFINITY;
        zhi[l] = 0.0f;
        zlo[l] = 0.0f;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    attn_tile_load(Qs, ldk, q, q, qrow, BQ, Dk);
    const int ulast = (u0 + BQ < R ? u0 + BQ : R) - 1;
    const int nkmax = n + ulast / G + (mask == 2 ? 0 : 1); /* keys of the block's last row */
    int orow[ATTN_MAXC], ocol[ATTN_MAXC];
    attn_own(BQ, Dv, orow, ocol);
    float2 acc[ATTN_MAXC];
    for (int i = 0; i < ATTN_MAXC; i++) acc[i] = (float2)(0.0f, 0.0f);
    for (int j0 = 0; j0 < nkmax; j0 += BK) {
        const int nt = nkmax - j0 < BK ? nkmax - j0 : BK;
        barrier(CLK_LOCAL_MEM_FENCE); /* the previous tile is consumed */
        if (l < BK) kidx[l] = attn_key_idx(j0 + l, kh, S, Hk, C, n, start);
        barrier(CLK_LOCAL_MEM_FENCE);
        attn_tile_load(Ks, ldk, k, kb, kidx, BK, Dk);
        attn_tile_load(Vs, ldv, v, vb, kidx, BK, Dv);
        barrier(CLK_LOCAL_MEM_FENCE);
        /* scores: item l computes s = l, l + NT, ... of the BQ x BK tile */
        for (int s = l; s < BQ * BK; s += NT) {
            const int row = s >> bk_sh, col = s & (BK - 1), t = qt[row], j = j0 + col;
            const int nk = t < 0 ? 0 : n + t + (mask == 2 ? 0 : 1);
            float x = -INFINITY;
            if (j < nk) {
                const float2 d = attn_ldot((float2)(0.0f, 0.0f), Qs + row * ldk, Ks + col * ldk, Dk);
                x = scale * mcl_acc_value(d) - slope[row] * (float)(n + t - j);
            }
            Ps[row * ldp + col] = x;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        if (l < BQ) {
            float2 z = (float2)(zhi[l], zlo[l]);
            float a;
            mrow[l] = attn_online(Ps + l * ldp, nt, mrow[l], &z, &a);
            zhi[l] = z.x;
            zlo[l] = z.y;
            arow[l] = a;
            const int jd = n + qt[l] - j0; /* mask 1: the diagonal counts in z, not in o */
            if (mask == 1 && qt[l] >= 0 && jd >= 0 && jd < nt) Ps[l * ldp + jd] = 0.0f;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int i = 0; i < ATTN_MAXC; i++) {
            if (orow[i] < 0) continue;
            float2 a = attn_acc_scale(acc[i], arow[orow[i]]);
            __local const float *pr = Ps + orow[i] * ldp;
            for (int jj = 0; jj < nt; jj++) a = mcl_acc_add_prod(a, pr[jj], Vs[jj * ldv + ocol[i]]);
            acc[i] = a;
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (l < BQ && qrow[l] >= 0)
        lse[qrow[l]] = mrow[l] == -INFINITY ? 0.0f : mrow[l] + mcl_acc_log((float2)(zhi[l], zlo[l]));
    for (int i = 0; i < ATTN_MAXC; i++) {
        if (orow[i] < 0 || qrow[orow[i]] < 0) continue;
        const float2 z = (float2)(zhi[orow[i]], zlo[orow[i]]);
        o[qrow[orow[i]] * Dv + ocol[i]] = z.x > 0.0f ? mcl_div_acc(mcl_acc_value(acc[i]), z) : 0.0f;
    }
}

/* ------------------------------------------------------------------------------------ */
/* backward, queries: p_j = exp(s_j − lse), dp_j = m_j go·v_j, ds_j = p_j (dp_j − D),
 *   gq += scale Σ_j ds_j k_j       (D = go·o from attn_row_dot, in Dr)
 * Blocks as the forward. __local: lf = Qs [BQ][Dk+1], Gs [BQ][Dv+1], Ks [BK][Dk+1],
 * Vs [BK][Dv+1], Ps [BQ][BK+1], lrow, drow, slope [BQ]; li = qrow, qt [BQ], kidx [BK]. */
__kernel void attn_kv_bwd_q(__global const float *q, long q_off, __global const float *k, long k_off,
                            __global const float *v, long v_off, __global const float *kb, long kb_off,
                            __global const float *vb, long vb_off, __global const float *lse,
                            long lse_off, __global const float *go, long go_off,
                            __global const float *Dr, __global float *gq, long gq_off,
                            ATTN_GEOM_ARGS, __local float *lf, __local int *li)
{
    q += q_off; k += k_off; v += v_off; kb += kb_off; vb += vb_off; lse += lse_off;
    go += go_off; gq += gq_off;
    const int NT = get_local_size(0), l = get_local_id(0), G = Hq / Hk, R = S * G;
    const int nqb = (R + BQ - 1) / BQ, kh = get_group_id(0) / nqb;
    const int u0 = (get_group_id(0) - kh * nqb) * BQ, bk_sh = 31 - clz(BK);
    const int ldk = Dk + 1, ldv = Dv + 1, ldp = BK + 1;
    __local float *Qs = lf, *Gs = Qs + BQ * ldk, *Ks = Gs + BQ * ldv, *Vs = Ks + BK * ldk;
    __local float *Ps = Vs + BK * ldv, *lrow = Ps + BQ * ldp, *drow = lrow + BQ, *slope = drow + BQ;
    __local int *qrow = li, *qt = qrow + BQ, *kidx = qt + BQ;
    attn_q_rows(kh, u0, S, Hq, Hk, BQ, alibi, qrow, qt, slope);
    barrier(CLK_LOCAL_MEM_FENCE);
    if (l < BQ) {
        lrow[l] = qrow[l] >= 0 ? lse[qrow[l]] : 0.0f;
        drow[l] = qrow[l] >= 0 ? Dr[qrow[l]] : 0.0f;
    }
    attn_tile_load(Qs, ldk, q, q, qrow, BQ, Dk);
    attn_tile_load(Gs, ldv, go, go, qrow, BQ, Dv);
    const int ulast = (u0 + BQ < R ? u0 + BQ : R) - 1;
    const int nkmax = n + ulast / G + (mask == 2 ? 0 : 1);
    int orow[ATTN_MAXC], ocol[ATTN_MAXC];
    attn_own(BQ, Dk, orow, ocol);
    float2 acc[ATTN_MAXC];
    for (int i = 0; i < ATTN_MAXC; i++) acc[i] = (float2)(0.0f, 0.0f);
    for (int j0 = 0; j0 < nkmax; j0 += BK) {
        const int nt = nkmax - j0 < BK ? nkmax - j0 : BK;
        barrier(CLK_LOCAL_MEM_FENCE);
        if (l < BK) kidx[l] = attn_key_idx(j0 + l, kh, S, Hk, C, n, start);
        barrier(CLK_LOCAL_MEM_FENCE);
        attn_tile_load(Ks, ldk, k, kb, kidx, BK, Dk);
        attn_tile_load(Vs, ldv, v, vb, kidx, BK, Dv);
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int s = l; s < BQ * BK; s += NT) {
            const int row = s >> bk_sh, col = s & (BK - 1), t = qt[row], j = j0 + col;
            const int nk = t < 0 ? 0 : n + t + (mask == 2 ? 0 : 1);
            float ds = 0.0f;
            if (j < nk) {
                const float2 d = attn_ldot((float2)(0.0f, 0.0f), Qs + row * ldk, Ks + col * ldk, Dk);
                const float x = scale * mcl_acc_value(d) - slope[row] * (float)(n + t - j);
                const float p = exp(x - lrow[row]);
                float dp = 0.0f;
                if (!(mask == 1 && j == n + t))
                    dp = mcl_acc_value(attn_ldot((float2)(0.0f, 0.0f), Gs + row * ldv, Vs + col * ldv, Dv));
                ds = p * (dp - drow[row]);
            }
            Ps[row * ldp + col] = ds;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int i = 0; i < ATTN_MAXC; i++) {
            if (orow[i] < 0) continue;
            float2 a = acc[i];
            __local const float *pr = Ps + orow[i] * ldp;
            for (int jj = 0; jj < nt; jj++) a = mcl_acc_add_prod(a, pr[jj], Ks[jj * ldk + ocol[i]]);
            acc[i] = a;
        }
    }
    for (int i = 0; i < ATTN_MAXC; i++) {
        if (orow[i] < 0 || qrow[orow[i]] < 0) continue;
        gq[qrow[orow[i]] * Dk + ocol[i]] += scale * mcl_acc_value(acc[i]);
    }
}

/* ------------------------------------------------------------------------------------ */
/* backward, chunk keys and values: one group per block of BK chunk tokens t' of key head kh,
 * over the tiles of BQ query rows u = t·G + g (t from the block's first t', +1 under mask 2),
 * in that order:
 *   gk_t' += scale Σ_u ds_u q_u,   gv_t' += Σ_u m_u p_u go_u
 * want_k / want_v: 0 when that gradient is not needed (gk / gv then point at any tensor).
 * __local: lf = Ks [BK][Dk+1], Vs [BK][Dv+1], Qs [BQ][Dk+1], Gs [BQ][Dv+1], Pm, Pd [BK][BQ+1],
 * lrow, drow, slope [BQ]; li = qrow, qt [BQ], kidx [BK]. */
__kernel void attn_kv_bwd_kv(__global const float *q, long q_off, __global const float *k, long k_off,
                             __global const float *v, long v_off, __global const float *lse,
                             long lse_off, __global const float *go, long go_off,
                             __global const float *Dr, __global float *gk, long gk_off,
                             __global float *gv, long gv_off, int want_k, int want_v,
                             ATTN_GEOM_ARGS, __local float *lf, __local int *li)
{
    q += q_off; k += k_off; v += v_off; lse += lse_off; go += go_off; gk += gk_off; gv += gv_off;
    const int NT = get_local_size(0), l = get_local_id(0), G = Hq / Hk, R = S * G;
    const int nkb = (S + BK - 1) / BK, kh = get_group_id(0) / nkb;
    const int tb0 = (get_group_id(0) - kh * nkb) * BK, bq_sh = 31 - clz(BQ);
    const int ldk = Dk + 1, ldv = Dv + 1, ldq = BQ + 1;
    __local float *Ks = lf, *Vs = Ks + BK * ldk, *Qs = Vs + BK * ldv, *Gs = Qs + BQ * ldk;
    __local float *Pm = Gs + BQ * ldv, *Pd = Pm + BK * ldq, *lrow = Pd + BK * ldq;
    __local float *drow = lrow + BQ, *slope = drow + BQ;
    __local int *qrow = li, *qt = qrow + BQ, *kidx = qt + BQ;
    if (l < BK) kidx[l] = tb0 + l < S ? (tb0 + l) * Hk + kh : -1;
    barrier(CLK_LOCAL_MEM_FENCE);
    attn_tile_load(Ks, ldk, k, k, kidx, BK, Dk);
    attn_tile_load(Vs, ldv, v, v, kidx, BK, Dv);
    int orow[ATTN_MAXC], ocol[ATTN_MAXC], vrow[ATTN_MAXC], vcol[ATTN_MAXC];
    attn_own(BK, Dk, orow, ocol);
    attn_own(BK, Dv, vrow, vcol);
    float2 ak[ATTN_MAXC], av[ATTN_MAXC];
    for (int i = 0; i < ATTN_MAXC; i++) ak[i] = av[i] = (float2)(0.0f, 0.0f);
    for (int u0 = (tb0 + (mask == 2)) * G; u0 < R; u0 += BQ) {
        const int nq = R - u0 < BQ ? R - u0 : BQ;
        barrier(CLK_LOCAL_MEM_FENCE);
        attn_q_rows(kh, u0, S, Hq, Hk, BQ, alibi, qrow, qt, slope);
        if (l < BQ) {
            const int r = u0 + l < R ? qrow[l] : -1; /* this item wrote qrow[l] */
            lrow[l] = r >= 0 ? lse[r] : 0.0f;
            drow[l] = r >= 0 ? Dr[r] : 0.0f;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        attn_tile_load(Qs, ldk, q, q, qrow, BQ, Dk);
        attn_tile_load(Gs, ldv, go, go, qrow, BQ, Dv);
        barrier(CLK_LOCAL_MEM_FENCE);
        /* item l: pairs s = l, l + NT, ... of the BK x BQ tile (key kk, query uu) */
        for (int s = l; s < BK * BQ; s += NT) {
            const int kk = s >> bq_sh, uu = s & (BQ - 1), t = qt[uu], tp = tb0 + kk;
            float pm = 0.0f, ds = 0.0f;
            if (t >= 0 && tp < S && (mask == 2 ? tp < t : tp <= t)) {
                const float2 d = attn_ldot((float2)(0.0f, 0.0f), Qs + uu * ldk, Ks + kk * ldk, Dk);
                const float x = scale * mcl_acc_value(d) - slope[uu] * (float)(t - tp);
                const float p = exp(x - lrow[uu]);
                const int keep = !(mask == 1 && t == tp);
                const float dp = keep ? mcl_acc_value(attn_ldot((float2)(0.0f, 0.0f), Gs + uu * ldv,
                                                                Vs + kk * ldv, Dv))
                                      : 0.0f;
                ds = p * (dp - drow[uu]);
                pm = keep ? p : 0.0f;
            }
            Pm[kk * ldq + uu] = pm;
            Pd[kk * ldq + uu] = ds;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int i = 0; i < ATTN_MAXC; i++) {
            if (want_k && orow[i] >= 0) {
                float2 a = ak[i];
                __local const float *pr = Pd + orow[i] * ldq;
                for (int uu = 0; uu < nq; uu++) a = mcl_acc_add_prod(a, pr[uu], Qs[uu * ldk + ocol[i]]);
                ak[i] = a;
            }
            if (want_v && vrow[i] >= 0) {
                float2 a = av[i];
                __local const float *pr = Pm + vrow[i] * ldq;
                for (int uu = 0; uu < nq; uu++) a = mcl_acc_add_prod(a, pr[uu], Gs[uu * ldv + vcol[i]]);
                av[i] = a;
            }
        }
    }
    for (int i = 0; i < ATTN_MAXC; i++) {
        if (want_k && orow[i] >= 0 && tb0 + orow[i] < S)
            gk[((tb0 + orow[i]) * Hk + kh) * Dk + ocol[i]] += scale * mcl_acc_value(ak[i]);
        if (want_v && vrow[i] >= 0 && tb0 + vrow[i] < S)
            gv[((tb0 + vrow[i]) * Hk + kh) * Dv + vcol[i]] += mcl_acc_value(av[i]);
    }
}

/* ------------------------------------------------------------------------------------ */
/* kv_push: buf[(pos + r) mod C] = x[S - m + r], r < m = min(S, C); one item per float.
 * The host passes pos already reduced mod C, so pos + r < 2C wraps by compare-and-subtract;
 * 32-bit indices (the host refuses a ring of 2^31 floats or more). */
__kernel void kv_push(__global float *buf, long buf_off, __global const float *x, long x_off,
                      int C, int S, int row, int pos, int total)
{
    const int i = get_global_id(0);
    if (i >= total) return;
    const int m = S < C ? S : C, r = i / row, e = i - r * row;
    int rr = pos + r;
    if (rr >= C) rr -= C;
    buf[buf_off + rr * row + e] = x[x_off + (S - m + r) * row + e];
}

/* ==================================================================================== */
/* rel_attn: Transformer-XL relative-position attention over [memory ‖ segment]. Equations,
 * shapes and parameters: src/ref/attention.c (rel_attn). Same tiling as attn_kv: a block of
 * BQ query rows i of one (b, h) (forward; dqc, dqp), of BK key rows j (dk, dv) or of BK
 * distance rows d (dr), the other side in tiles. A block of BQ query rows against a tile of
 * BK keys needs the BQ + BK − 1 distances d = M + i − j of the pairs: they are staged as a
 * third tile Rs (tile row (i − i0) − (j − j0) + BK − 1). Scores are one paired sum of the
 * 2·D products qc_i·k_j and qp_i·r_d. Nothing but lse is saved by the forward. */

#define REL_GEOM_ARGS int B, int S, int H, int D, int Dv, int T, int win, float scale, int BQ, int BK

/* First allowed key of query i (the last is M + i). */
int rel_lo(int M, int win, int i)
{
    const int lo = win > 0 ? M + i - win : 0;
    return lo > 0 ? lo : 0;
}

/* Query rows i0 + l (items l < BQ) of batch b, head h: qrow = (b·S + i)·H + h (−1 past S),
 * qi = i (−1). The caller puts a barrier after it. */
void rel_q_rows(int b, int h, int i0, int S, int H, int BQ, __local int *qrow, __local int *qi)
{
    const int l = get_local_id(0);
    if (l < BQ) {
        const int i = i0 + l;
        qrow[l] = i < S ? (b * S + i) * H + h : -1;
        qi[l] = i < S ? i : -1;
    }
}

/* Rows of a [B,T,H,.] tensor for keys j0 + l, l < nrows (−1 outside 0..T-1), and of r [T,H,.]
 * for distances d0 + l (items stride over l). */
void rel_rows(__local int *idx, int nrows, int b, int h, int first, int T, int H, int batch)
{
    for (int l = get_local_id(0); l < nrows; l += get_local_size(0)) {
        const int j = first + l;
        idx[l] = j >= 0 && j < T ? ((batch ? b * T : 0) + j) * H + h : -1;
    }
}

/* s of the pair (query tile row a, key tile row kk, distance tile row dd):
 * scale·(qc·k + qp·r) as one paired sum */
float rel_lscore(__local const float *qc, __local const float *qp, __local const float *kr,
                 __local const float *rr, int D, float scale)
{
    float2 acc = attn_ldot((float2)(0.0f, 0.0f), qc, kr, D);
    acc = attn_ldot(acc, qp, rr, D);
    return scale * mcl_acc_value(acc);
}

#define REL_IN_ARGS                                                                             \
    __global const float *qc, long qc_off, __global const float *qp, long qp_off,               \
        __global const float *k, long k_off, __global const float *v, long v_off,               \
        __global const float *r, long r_off
#define REL_IN_INIT qc += qc_off; qp += qp_off; k += k_off; v += v_off; r += r_off;

/* ------------------------------------------------------------------------------------ */
/* forward: s_ij = scale·(qc_i·k_j + qp_i·r_{M+i−j}), m, z online over the key tiles,
 *   o_i = Σ_j exp(s_ij − m) v_j / z,  lse = m + log z
 * One group per block of BQ query rows of one (b, h); keys lo(i0) .. M + i_last in tiles.
 * __local: lf = zhi, zlo [BQ], Qc, Qp [BQ][D+1], Ks [BK][D+1], Vs [BK][Dv+1],
 * Rs [BQ+BK−1][D+1], Ps [BQ][BK+1], mrow, arow [BQ]; li = qrow, qi [BQ], kidx [BK],
 * ridx [BQ+BK−1]. */
__kernel void rel_attn_fwd(REL_IN_ARGS, __global float *o, long o_off, __global float *lse,
                           long lse_off, REL_GEOM_ARGS, __local float *lf, __local int *li)
{
    REL_IN_INIT
    o += o_off; lse += lse_off;
    const int NT = get_local_size(0), l = get_local_id(0), M = T - S, NR = BQ + BK - 1;
    const int nqb = (S + BQ - 1) / BQ, bh = get_group_id(0) / nqb;
    const int b = bh / H, h = bh - b * H, i0 = (get_group_id(0) - bh * nqb) * BQ;
    const int ld = D + 1, ldv = Dv + 1, ldp = BK + 1, bk_sh = 31 - clz(BK);
    /* z per row as a (hi, lo) pair in two float arrays: a float2 view of lf would need 8-byte
     * alignment that a __local float * argument does not promise (NVIDIA faulted on it) */
    __local float *zhi = lf, *zlo = lf + BQ;
    __local float *Qc = lf + 2 * BQ, *Qp = Qc + BQ * ld, *Ks = Qp + BQ * ld, *Vs = Ks + BK * ld;
    __local float *Rs = Vs + BK * ldv, *Ps = Rs + NR * ld, *mrow = Ps + BQ * ldp, *arow = mrow + BQ;
    __local int *qrow = li, *qi = qrow + BQ, *kidx = qi + BQ, *ridx = kidx + BK;
    rel_q_rows(b, h, i0, S, H, BQ, qrow, qi);
    if (l < BQ) {
        mrow[l] = -INFINITY;
        zhi[l] = 0.0f;
        zlo[l] = 0.0f;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    attn_tile_load(Qc, ld, qc, qc, qrow, BQ, D);
    attn_tile_load(Qp, ld, qp, qp, qrow, BQ, D);
    const int jend = M + (i0 + BQ < S ? i0 + BQ : S); /* one past the block's last key */
    int orow[ATTN_MAXC], ocol[ATTN_MAXC];
    attn_own(BQ, Dv, orow, ocol);
    float2 acc[ATTN_MAXC];
    for (int i = 0; i < ATTN_MAXC; i++) acc[i] = (float2)(0.0f, 0.0f);
    for (int j0 = rel_lo(M, win, i0); j0 < jend; j0 += BK) {
        const int nt = jend - j0 < BK ? jend - j0 : BK;
        barrier(CLK_LOCAL_MEM_FENCE);
        rel_rows(kidx, BK, b, h, j0, T, H, 1);
        rel_rows(ridx, NR, b, h, M + i0 - (j0 + BK - 1), T, H, 0);
        barrier(CLK_LOCAL_MEM_FENCE);
        attn_tile_load(Ks, ld, k, k, kidx, BK, D);
        attn_tile_load(Vs, ldv, v, v, kidx, BK, Dv);
        attn_tile_load(Rs, ld, r, r, ridx, NR, D);
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int s = l; s < BQ * BK; s += NT) {
            const int row = s >> bk_sh, col = s & (BK - 1), i = qi[row], j = j0 + col;
            float x = -INFINITY;
            if (i >= 0 && j >= rel_lo(M, win, i) && j <= M + i)
                x = rel_lscore(Qc + row * ld, Qp + row * ld, Ks + col * ld, Rs + (row - col + BK - 1) * ld,
                               D, scale);
            Ps[row * ldp + col] = x;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        if (l < BQ) {
            float2 z = (float2)(zhi[l], zlo[l]);
            float a;
            mrow[l] = attn_online(Ps + l * ldp, nt, mrow[l], &z, &a);
            zhi[l] = z.x;
            zlo[l] = z.y;
            arow[l] = a;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int i = 0; i < ATTN_MAXC; i++) {
            if (orow[i] < 0) continue;
            float2 a = attn_acc_scale(acc[i], arow[orow[i]]);
            __local const float *pr = Ps + orow[i] * ldp;
            for (int jj = 0; jj < nt; jj++) a = mcl_acc_add_prod(a, pr[jj], Vs[jj * ldv + ocol[i]]);
            acc[i] = a;
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (l < BQ && qrow[l] >= 0) lse[qrow[l]] = mrow[l] + mcl_acc_log((float2)(zhi[l], zlo[l]));
    for (int i = 0; i < ATTN_MAXC; i++) {
        if (orow[i] < 0 || qrow[orow[i]] < 0) continue;
        o[qrow[orow[i]] * Dv + ocol[i]] = mcl_div_acc(mcl_acc_value(acc[i]), (float2)(zhi[orow[i]], zlo[orow[i]]));
    }
}

/* ------------------------------------------------------------------------------------ */
/* backward, queries: p_ij = exp(s_ij − lse_i), ds_ij = p_ij (go_i·v_j − D_i),
 *   gqc_i += scale Σ_j ds_ij k_j,   gqp_i += scale Σ_j ds_ij r_{M+i−j}
 * Blocks as the forward; want_qc / want_qp: 0 when that gradient is not needed.
 * __local: lf = Qc, Qp [BQ][D+1], Gs [BQ][Dv+1], Ks [BK][D+1], Vs [BK][Dv+1],
 * Rs [BQ+BK−1][D+1], Ps [BQ][BK+1], lrow, drow [BQ]; li as the forward's. */
__kernel void rel_attn_bwd_q(REL_IN_ARGS, __global const float *lse, long lse_off,
                             __global const float *go, long go_off, __global const float *Dr,
                             __global float *gqc, long gqc_off, __global float *gqp, long gqp_off,
                             int want_qc, int want_qp, REL_GEOM_ARGS, __local float *lf,
                             __local int *li)
{
    REL_IN_INIT
    lse += lse_off; go += go_off; gqc += gqc_off; gqp += gqp_off;
    const int NT = get_local_size(0), l = get_local_id(0), M = T - S, NR = BQ + BK - 1;
    const int nqb = (S + BQ - 1) / BQ, bh = get_group_id(0) / nqb;
    const int b = bh / H, h = bh - b * H, i0 = (get_group_id(0) - bh * nqb) * BQ;
    const int ld = D + 1, ldv = Dv + 1, ldp = BK + 1, bk_sh = 31 - clz(BK);
    __local float *Qc = lf, *Qp = Qc + BQ * ld, *Gs = Qp + BQ * ld, *Ks = Gs + BQ * ldv;
    __local float *Vs = Ks + BK * ld, *Rs = Vs + BK * ldv, *Ps = Rs + NR * ld;
    __local float *lrow = Ps + BQ * ldp, *drow = lrow + BQ;
    __local int *qrow = li, *qi = qrow + BQ, *kidx = qi + BQ, *ridx = kidx + BK;
    rel_q_rows(b, h, i0, S, H, BQ, qrow, qi);
    barrier(CLK_LOCAL_MEM_FENCE);
    if (l < BQ) {
        lrow[l] = qrow[l] >= 0 ? lse[qrow[l]] : 0.0f;
        drow[l] = qrow[l] >= 0 ? Dr[qrow[l]] : 0.0f;
    }
    attn_tile_load(Qc, ld, qc, qc, qrow, BQ, D);
    attn_tile_load(Qp, ld, qp, qp, qrow, BQ, D);
    attn_tile_load(Gs, ldv, go, go, qrow, BQ, Dv);
    const int jend = M + (i0 + BQ < S ? i0 + BQ : S);
    int orow[ATTN_MAXC], ocol[ATTN_MAXC];
    attn_own(BQ, D, orow, ocol);
    float2 ac[ATTN_MAXC], ap[ATTN_MAXC];
    for (int i = 0; i < ATTN_MAXC; i++) ac[i] = ap[i] = (float2)(0.0f, 0.0f);
    for (int j0 = rel_lo(M, win, i0); j0 < jend; j0 += BK) {
        const int nt = jend - j0 < BK ? jend - j0 : BK;
        barrier(CLK_LOCAL_MEM_FENCE);
        rel_rows(kidx, BK, b, h, j0, T, H, 1);
        rel_rows(ridx, NR, b, h, M + i0 - (j0 + BK - 1), T, H, 0);
        barrier(CLK_LOCAL_MEM_FENCE);
        attn_tile_load(Ks, ld, k, k, kidx, BK, D);
        attn_tile_load(Vs, ldv, v, v, kidx, BK, Dv);
        attn_tile_load(Rs, ld, r, r, ridx, NR, D);
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int s = l; s < BQ * BK; s += NT) {
            const int row = s >> bk_sh, col = s & (BK - 1), i = qi[row], j = j0 + col;
            float ds = 0.0f;
            if (i >= 0 && j >= rel_lo(M, win, i) && j <= M + i) {
                const float x = rel_lscore(Qc + row * ld, Qp + row * ld, Ks + col * ld,
                                           Rs + (row - col + BK - 1) * ld, D, scale);
                const float p = exp(x - lrow[row]);
                const float dp = mcl_acc_value(attn_ldot((float2)(0.0f, 0.0f), Gs + row * ldv, Vs + col * ldv, Dv));
                ds = p * (dp - drow[row]);
            }
            Ps[row * ldp + col] = ds;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int i = 0; i < ATTN_MAXC; i++) {
            if (orow[i] < 0) continue;
            float2 a = ac[i], c2 = ap[i];
            __local const float *pr = Ps + orow[i] * ldp;
            for (int jj = 0; jj < nt; jj++) {
                a = mcl_acc_add_prod(a, pr[jj], Ks[jj * ld + ocol[i]]);
                c2 = mcl_acc_add_prod(c2, pr[jj], Rs[(orow[i] - jj + BK - 1) * ld + ocol[i]]);
            }
            ac[i] = a;
            ap[i] = c2;
        }
    }
    for (int i = 0; i < ATTN_MAXC; i++) {
        if (orow[i] < 0 || qrow[orow[i]] < 0) continue;
        const int e = qrow[orow[i]] * D + ocol[i];
        if (want_qc) gqc[e] += scale * mcl_acc_value(ac[i]);
        if (want_qp) gqp[e] += scale * mcl_acc_value(ap[i]);
    }
}

/* ------------------------------------------------------------------------------------ */
/* backward, keys and values: one group per block of BK keys j of one (b, h), over the tiles of
 * BQ queries that see them, i = max(0, j0 − M) .. S−1 (with a window: up to j_last − M + W),
 * in order:
 *   gk_j += scale Σ_i ds_ij qc_i,   gv_j += Σ_i p_ij go_i
 * __local: lf = Ks [BK][D+1], Vs [BK][Dv+1], Qc, Qp [BQ][D+1], Gs [BQ][Dv+1],
 * Rs [BQ+BK−1][D+1], Pm, Pd [BK][BQ+1], lrow, drow [BQ]; li = qrow, qi [BQ], kidx [BK],
 * ridx [BQ+BK−1]. */
__kernel void rel_attn_bwd_kv(REL_IN_ARGS, __global const float *lse, long lse_off,
                              __global const float *go, long go_off, __global const float *Dr,
                              __global float *gk, long gk_off, __global float *gv, long gv_off,
                              int want_k, int want_v, REL_GEOM_ARGS, __local float *lf,
                              __local int *li)
{
    REL_IN_INIT
    lse += lse_off; go += go_off; gk += gk_off; gv += gv_off;
    const int NT = get_local_size(0), l = get_local_id(0), M = T - S, NR = BQ + BK - 1;
    const int nkb = (T + BK - 1) / BK, bh = get_group_id(0) / nkb;
    const int b = bh / H, h = bh - b * H, j0 = (get_group_id(0) - bh * nkb) * BK;
    const int ld = D + 1, ldv = Dv + 1, ldq = BQ + 1, bq_sh = 31 - clz(BQ);
    __local float *Ks = lf, *Vs = Ks + BK * ld, *Qc = Vs + BK * ldv, *Qp = Qc + BQ * ld;
    __local float *Gs = Qp + BQ * ld, *Rs = Gs + BQ * ldv, *Pm = Rs + NR * ld, *Pd = Pm + BK * ldq;
    __local float *lrow = Pd + BK * ldq, *drow = lrow + BQ;
    __local int *qrow = li, *qi = qrow + BQ, *kidx = qi + BQ, *ridx = kidx + BK;
    rel_rows(kidx, BK, b, h, j0, T, H, 1);
    barrier(CLK_LOCAL_MEM_FENCE);
    attn_tile_load(Ks, ld, k, k, kidx, BK, D);
    attn_tile_load(Vs, ldv, v, v, kidx, BK, Dv);
    const int jl = (j0 + BK < T ? j0 + BK : T) - 1; /* the block's last key */
    const int ibeg = j0 - M > 0 ? j0 - M : 0;
    const int iend = win > 0 && jl - M + win + 1 < S ? jl - M + win + 1 : S;
    int orow[ATTN_MAXC], ocol[ATTN_MAXC], vrow[ATTN_MAXC], vcol[ATTN_MAXC];
    attn_own(BK, D, orow, ocol);
    attn_own(BK, Dv, vrow, vcol);
    float2 ak[ATTN_MAXC], av[ATTN_MAXC];
    for (int i = 0; i < ATTN_MAXC; i++) ak[i] = av[i] = (float2)(0.0f, 0.0f);
    for (int it0 = ibeg; it0 < iend; it0 += BQ) {
        const int nq = iend - it0 < BQ ? iend - it0 : BQ;
        barrier(CLK_LOCAL_MEM_FENCE);
        rel_q_rows(b, h, it0, S, H, BQ, qrow, qi);
        rel_rows(ridx, NR, b, h, M + it0 - (j0 + BK - 1), T, H, 0);
        if (l < BQ) {
            const int i = it0 + l, rw = i < S ? (b * S + i) * H + h : -1; /* = qrow[l] */
            lrow[l] = rw >= 0 ? lse[rw] : 0.0f;
            drow[l] = rw >= 0 ? Dr[rw] : 0.0f;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        attn_tile_load(Qc, ld, qc, qc, qrow, BQ, D);
        attn_tile_load(Qp, ld, qp, qp, qrow, BQ, D);
        attn_tile_load(Gs, ldv, go, go, qrow, BQ, Dv);
        attn_tile_load(Rs, ld, r, r, ridx, NR, D);
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int s = l; s < BK * BQ; s += NT) {
            const int kk = s >> bq_sh, uu = s & (BQ - 1), i = qi[uu], j = j0 + kk;
            float p = 0.0f, ds = 0.0f;
            if (i >= 0 && j < T && j >= rel_lo(M, win, i) && j <= M + i) {
                const float x = rel_lscore(Qc + uu * ld, Qp + uu * ld, Ks + kk * ld,
                                           Rs + (uu - kk + BK - 1) * ld, D, scale);
                p = exp(x - lrow[uu]);
                const float dp = mcl_acc_value(attn_ldot((float2)(0.0f, 0.0f), Gs + uu * ldv, Vs + kk * ldv, Dv));
                ds = p * (dp - drow[uu]);
            }
            Pm[kk * ldq + uu] = p;
            Pd[kk * ldq + uu] = ds;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int i = 0; i < ATTN_MAXC; i++) {
            if (want_k && orow[i] >= 0) {
                float2 a = ak[i];
                __local const float *pr = Pd + orow[i] * ldq;
                for (int uu = 0; uu < nq; uu++) a = mcl_acc_add_prod(a, pr[uu], Qc[uu * ld + ocol[i]]);
                ak[i] = a;
            }
            if (want_v && vrow[i] >= 0) {
                float2 a = av[i];
                __local const float *pr = Pm + vrow[i] * ldq;
                for (int uu = 0; uu < nq; uu++) a = mcl_acc_add_prod(a, pr[uu], Gs[uu * ldv + vcol[i]]);
                av[i] = a;
            }
        }
    }
    for (int i = 0; i < ATTN_MAXC; i++) {
        if (want_k && orow[i] >= 0 && kidx[orow[i]] >= 0)
            gk[kidx[orow[i]] * D + ocol[i]] += scale * mcl_acc_value(ak[i]);
        if (want_v && vrow[i] >= 0 && kidx[vrow[i]] >= 0)
            gv[kidx[vrow[i]] * Dv + vcol[i]] += mcl_acc_value(av[i]);
    }
}

/* ------------------------------------------------------------------------------------ */
/* backward, relative encodings: one group per block of BK distances d of head h, over
 * b = 0..B−1, then the tiles of BQ queries i = max(0, d0 − M) .. S−1 (key j = M + i − d;
 * none when d > W under a window), in that order:
 *   gr_d += scale Σ_b Σ_i ds_{i, M+i−d} qp_i
 * The keys of a query tile against the block's distances are the BQ + BK − 1 rows
 * j = M + i − d, staged as tiles Ks, Vs (tile row (i − i0) − (d − d0) + BK − 1).
 * __local: lf = Rs [BK][D+1], Qc, Qp [BQ][D+1], Gs [BQ][Dv+1], Ks [BQ+BK−1][D+1],
 * Vs [BQ+BK−1][Dv+1], Pd [BK][BQ+1], lrow, drow [BQ]; li = qrow, qi [BQ], ridx [BK],
 * kidx [BQ+BK−1]. */
__kernel void rel_attn_bwd_r(REL_IN_ARGS, __global const float *lse, long lse_off,
                             __global const float *go, long go_off, __global const float *Dr,
                             __global float *gr, long gr_off, REL_GEOM_ARGS, __local float *lf,
                             __local int *li)
{
    REL_IN_INIT
    lse += lse_off; go += go_off; gr += gr_off;
    const int NT = get_local_size(0), l = get_local_id(0), M = T - S, NR = BQ + BK - 1;
    const int ndb = (T + BK - 1) / BK, h = get_group_id(0) / ndb;
    const int d0 = (get_group_id(0) - h * ndb) * BK;
    const int ld = D + 1, ldv = Dv + 1, ldq = BQ + 1, bq_sh = 31 - clz(BQ);
    __local float *Rs = lf, *Qc = Rs + BK * ld, *Qp = Qc + BQ * ld, *Gs = Qp + BQ * ld;
    __local float *Ks = Gs + BQ * ldv, *Vs = Ks + NR * ld, *Pd = Vs + NR * ldv;
    __local float *lrow = Pd + BK * ldq, *drow = lrow + BQ;
    __local int *qrow = li, *qi = qrow + BQ, *ridx = qi + BQ, *kidx = ridx + BK;
    rel_rows(ridx, BK, 0, h, d0, T, H, 0);
    barrier(CLK_LOCAL_MEM_FENCE);
    attn_tile_load(Rs, ld, r, r, ridx, BK, D);
    int orow[ATTN_MAXC], ocol[ATTN_MAXC];
    attn_own(BK, D, orow, ocol);
    float2 ar[ATTN_MAXC];
    for (int i = 0; i < ATTN_MAXC; i++) ar[i] = (float2)(0.0f, 0.0f);
    const int ibeg = d0 - M > 0 ? d0 - M : 0;
    const int none = win > 0 && d0 > win; /* every distance of the block is outside the window */
    for (int b = 0; b < B && !none; b++) {
        for (int it0 = ibeg; it0 < S; it0 += BQ) {
            const int nq = S - it0 < BQ ? S - it0 : BQ;
            barrier(CLK_LOCAL_MEM_FENCE);
            rel_q_rows(b, h, it0, S, H, BQ, qrow, qi);
            rel_rows(kidx, NR, b, h, M + it0 - (d0 + BK - 1), T, H, 1);
            if (l < BQ) {
                const int i = it0 + l, rw = i < S ? (b * S + i) * H + h : -1;
                lrow[l] = rw >= 0 ? lse[rw] : 0.0f;
                drow[l] = rw >= 0 ? Dr[rw] : 0.0f;
            }
            barrier(CLK_LOCAL_MEM_FENCE);
            attn_tile_load(Qc, ld, qc, qc, qrow, BQ, D);
            attn_tile_load(Qp, ld, qp, qp, qrow, BQ, D);
            attn_tile_load(Gs, ldv, go, go, qrow, BQ, Dv);
            attn_tile_load(Ks, ld, k, k, kidx, NR, D);
            attn_tile_load(Vs, ldv, v, v, kidx, NR, Dv);
            barrier(CLK_LOCAL_MEM_FENCE);
            for (int s = l; s < BK * BQ; s += NT) {
                const int dd = s >> bq_sh, uu = s & (BQ - 1), i = qi[uu], d = d0 + dd;
                float ds = 0.0f;
                if (i >= 0 && d < T && d <= M + i && (win == 0 || d <= win)) {
                    const int kt = uu - dd + BK - 1;
                    const float x = rel_lscore(Qc + uu * ld, Qp + uu * ld, Ks + kt * ld, Rs + dd * ld,
                                               D, scale);
                    const float p = exp(x - lrow[uu]);
                    const float dp = mcl_acc_value(attn_ldot((float2)(0.0f, 0.0f), Gs + uu * ldv, Vs + kt * ldv, Dv));
                    ds = p * (dp - drow[uu]);
                }
                Pd[dd * ldq + uu] = ds;
            }
            barrier(CLK_LOCAL_MEM_FENCE);
            for (int i = 0; i < ATTN_MAXC; i++) {
                if (orow[i] < 0) continue;
                float2 a = ar[i];
                __local const float *pr = Pd + orow[i] * ldq;
                for (int uu = 0; uu < nq; uu++) a = mcl_acc_add_prod(a, pr[uu], Qp[uu * ld + ocol[i]]);
                ar[i] = a;
            }
        }
    }
    for (int i = 0; i < ATTN_MAXC; i++)
        if (orow[i] >= 0 && ridx[orow[i]] >= 0)
            gr[ridx[orow[i]] * D + ocol[i]] += scale * mcl_acc_value(ar[i]);
}
