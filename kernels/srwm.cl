/* srwm.cl — the self-referential weight matrix over a sequence (doc/acl-model.md §1), forward and the
 * memory-light exact backward. Same equations, same saved values and the same rank-1 update
 * and its exact undoing as src/ref/srwm.c, which documents them (the sums run in this file's
 * own fixed orders: over e or m in increasing order, one fma each); per sequence, t = 0..L-1:
 *   y_t = x·W_y,  q = softmax(x·W_q),  k = softmax(x·W_k),  β = sigmoid(x·w_b)     (Eq. 1)
 *   Δ_i = (q - k)·M_i,   M_i[e][m] += k[e]·(β_i·Δ_i[m])   for M_i = W_y, W_q, W_k, w_b
 * (y_t read before the update; the update at every step).
 *
 * Index layout: NS sequences per work-group (NS >= 1; s = group id * NS + the item's slot
 * sl = local id / W), W items per sequence (W <= D, from the host: min(D, the kernel's
 * work-group limit)); slot sl uses its own part of the __local buffer (`per` floats from
 * sl * per). With a small D one sequence would leave most of a GPU's wavefront idle
 * (D = 16: a group of 16 items), so the host packs NS = 64 / W of them (as many as fit the
 * work-group limit, __local memory and S); every sequence's arithmetic is the same as with
 * NS = 1, bit for bit. Slots past the last sequence (a partial last group) compute a copy of
 * sequence S - 1 to keep the barriers uniform and write nothing (act = 0). The four matrices live in __local memory for
 * the whole sequence, the time loop runs inside the kernel. D x D matrices are stored with row
 * stride D + 1 and w_b with row stride 5 (odd strides: a column walk and a row walk both hit
 * distinct banks). Item l owns
 *   the columns m = l, l + W, ...  (and w_b's columns j = l, l + W, ... < 4), and
 *   the rows    e = l, l + W, ...
 * Column work (the reads x·W, the retrievals (q-k)·W, the rank-1 updates, k^T G and the
 * gradient's rank-2 update) touches only the item's own columns, row work (the backward's
 * M g and G bd sums) only reads. Vectors shared between items go through __local memory
 * between barriers; the small sums every item needs (softmax normalizers, <g, q>, the β
 * gradients) are computed by every item, in the same order, from __local vectors, so all
 * items hold identical values. No atomics: deterministic.
 *
 * Barriers per step: 4 (forward), 5 (backward); each is reached by every item (the t loop and
 * the barriers are uniform). The host checks that the __local state fits the device.
 */
#pragma OPENCL FP_CONTRACT OFF

#define SRWM_WBS 5 /* row stride of w_b in __local memory */

/* doc/acl-model.md §1 step 2: sigmoid without exp of a large positive number */
float srwm_sigmoid(float z)
{
    if (z >= 0.0f) return 1.0f / (1.0f + exp(-z));
    const float e = exp(z);
    return e / (1.0f + e);
}

/* max_j v[j], j < D (every item computes it, with the same result) */
float srwm_max(__local const float *v, long D)
{
    float mx = v[0];
    for (long j = 1; j < D; j++) mx = v[j] > mx ? v[j] : mx;
    return mx;
}

/* sum_j v[j], j < D, as a (hi, lo) pair (about as accurate as the reference's double sum;
 * every item computes it, in the same order) */
float2 srwm_sum(__local const float *v, long D)
{
    float2 s = (float2)(0.0f, 0.0f);
    for (long j = 0; j < D; j++) s = mcl_acc_add(s, v[j]);
    return s;
}

/* ------------------------------------------------------------------------------------ */
/* Forward, one work-group per sequence (doc/acl-model.md §1 steps 1-5).
 *   x [S,L,D], initial state wy0, wq0, wk0 [S,D,D], wb0 [S,D,4] -> y [S,L,D], final state
 *   wy1, wq1, wk1, wb1, saved q, k [S,L,D], beta [S,L,4], dy, dq, dk [S,L,D], db [S,L,4]
 *   lm: __local, 3*D*(D+1) + 5*D + 8*D + 4 floats                                        */
__kernel void srwm_fwd(__global const float *x, long x_off,
                       __global const float *wy0, long wy0_off, __global const float *wq0, long wq0_off,
                       __global const float *wk0, long wk0_off, __global const float *wb0, long wb0_off,
                       __global float *y, long y_off,
                       __global float *wy1, long wy1_off, __global float *wq1, long wq1_off,
                       __global float *wk1, long wk1_off, __global float *wb1, long wb1_off,
                       __global float *q, long q_off, __global float *k, long k_off,
                       __global float *beta, long beta_off,
                       __global float *dy, long dy_off, __global float *dq, long dq_off,
                       __global float *dk, long dk_off, __global float *db, long db_off,
                       long L, long D, long W, long S, long per, __local float *lm)
{
    const long sl = get_local_id(0) / W, l = get_local_id(0) - sl * W;
    const long sraw = get_group_id(0) * (get_local_size(0) / W) + sl;
    const int act = sraw < S; /* a real sequence (else a copy of S - 1 that writes nothing) */
    const long s = act ? sraw : S - 1;
    const long S1 = D + 1;
    lm += sl * per;
    __local float *My = lm, *Mq = My + D * S1, *Mk = Mq + D * S1, *Mb = Mk + D * S1;
    __local float *vx = Mb + D * SRWM_WBS, *vqt = vx + D, *vkt = vqt + D, *vq = vkt + D;
    __local float *vk = vq + D, *va = vk + D, *veq = va + D, *vek = veq + D;
    __local float *vb = vek + D; /* vb: the 4 logits b̃ */

    const long sL = s * L * D, s4 = s * L * 4, sdd = s * D * D, sd4 = s * D * 4;
    x += x_off + sL;
    y += y_off + sL;
    q += q_off + sL;
    k += k_off + sL;
    dy += dy_off + sL;
    dq += dq_off + sL;
    dk += dk_off + sL;
    beta += beta_off + s4;
    db += db_off + s4;

    for (long i = l; i < D * D; i += W) {
        const long e = i / D, m = i - e * D;
        My[e * S1 + m] = wy0[wy0_off + sdd + i];
        Mq[e * S1 + m] = wq0[wq0_off + sdd + i];
        Mk[e * S1 + m] = wk0[wk0_off + sdd + i];
    }
    for (long i = l; i < 4 * D; i += W) Mb[(i / 4) * SRWM_WBS + i % 4] = wb0[wb0_off + sd4 + i];
    barrier(CLK_LOCAL_MEM_FENCE);

    for (long t = 0; t < L; t++) {
        for (long e = l; e < D; e += W) vx[e] = x[t * D + e];
        barrier(CLK_LOCAL_MEM_FENCE);

        /* 1. the reads, own columns, rows in order */
        for (long m = l; m < D; m += W) {
            float ay = 0.0f, aq = 0.0f, ak = 0.0f;
            for (long e = 0; e < D; e++) {
                const float xe = vx[e];
                ay = fma(xe, My[e * S1 + m], ay);
                aq = fma(xe, Mq[e * S1 + m], aq);
                ak = fma(xe, Mk[e * S1 + m], ak);
            }
            if (act) y[t * D + m] = ay;
            vqt[m] = aq;
            vkt[m] = ak;
        }
        for (long j = l; j < 4; j += W) {
            float ab = 0.0f;
            for (long e = 0; e < D; e++) ab = fma(vx[e], Mb[e * SRWM_WBS + j], ab);
            vb[j] = ab;
        }
        barrier(CLK_LOCAL_MEM_FENCE);

        /* 2. q, k: the exponentials of the own entries (max-shifted), then, after a barrier,
         *    their sums (every item) and the own quotients; β (every item) */
        {
            const float mq = srwm_max(vqt, D), mk = srwm_max(vkt, D);
            for (long m = l; m < D; m += W) {
                veq[m] = exp(vqt[m] - mq);
                vek[m] = exp(vkt[m] - mk);
            }
        }
        float b[4];
        for (int j = 0; j < 4; j++) b[j] = srwm_sigmoid(vb[j]);
        if (l == 0 && act)
            for (int j = 0; j < 4; j++) beta[t * 4 + j] = b[j];
        barrier(CLK_LOCAL_MEM_FENCE);
        {
            const float2 sq = srwm_sum(veq, D), sk = srwm_sum(vek, D);
            for (long m = l; m < D; m += W) {
                const float qm = mcl_div_acc(veq[m], sq), km = mcl_div_acc(vek[m], sk);
                vq[m] = qm;
                vk[m] = km;
                va[m] = qm - km;
                if (act) {
                    q[t * D + m] = qm;
                    k[t * D + m] = km;
                }
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);

        /* 3.-4. Δ_i = (q - k)·M_i for the own columns, then their rank-1 update */
        for (long m = l; m < D; m += W) {
            float d0 = 0.0f, d1 = 0.0f, d2 = 0.0f;
            for (long e = 0; e < D; e++) {
                const float ae = va[e];
                d0 = fma(ae, My[e * S1 + m], d0);
                d1 = fma(ae, Mq[e * S1 + m], d1);
                d2 = fma(ae, Mk[e * S1 + m], d2);
            }
            if (act) {
                dy[t * D + m] = d0;
                dq[t * D + m] = d1;
                dk[t * D + m] = d2;
            }
            const float b0 = b[0] * d0, b1 = b[1] * d1, b2 = b[2] * d2;
            for (long e = 0; e < D; e++) {
                const float ke = vk[e];
                My[e * S1 + m] = fma(ke, b0, My[e * S1 + m]);
                Mq[e * S1 + m] = fma(ke, b1, Mq[e * S1 + m]);
                Mk[e * S1 + m] = fma(ke, b2, Mk[e * S1 + m]);
            }
        }
        for (long j = l; j < 4; j += W) {
            float d = 0.0f;
            for (long e = 0; e < D; e++) d = fma(va[e], Mb[e * SRWM_WBS + j], d);
            if (act) db[t * 4 + j] = d;
            const float bd = b[3] * d;
            for (long e = 0; e < D; e++)
                Mb[e * SRWM_WBS + j] = fma(vk[e], bd, Mb[e * SRWM_WBS + j]);
        }
        /* no barrier needed here: the next step's first writes (vx) are not read after the
         * last barrier, and its next ones come after a barrier */
    }
    barrier(CLK_LOCAL_MEM_FENCE);

    if (!act) return;
    for (long i = l; i < D * D; i += W) {
        const long e = i / D, m = i - e * D;
        wy1[wy1_off + sdd + i] = My[e * S1 + m];
        wq1[wq1_off + sdd + i] = Mq[e * S1 + m];
        wk1[wk1_off + sdd + i] = Mk[e * S1 + m];
    }
    for (long i = l; i < 4 * D; i += W) wb1[wb1_off + sd4 + i] = Mb[(i / 4) * SRWM_WBS + i % 4];
}

/* ------------------------------------------------------------------------------------ */
/* Backward, one work-group per sequence: doc/acl-model.md §1 "Backward" (see bwd_seq in
 * src/ref/srwm.c for the equations). G (the gradient of the weights after step t) starts as
 * gout[1..4], the weights as the saved final state; walking t = L-1 .. 0 the weights are
 * recovered by subtracting the rank-1 update, so no per-step matrix is stored.
 *   saved: x, q, k [S,L,D], beta [S,L,4], dy, dq, dk [S,L,D], db [S,L,4], the final state
 *   wy1, wq1, wk1 [S,D,D], wb1 [S,D,4]; gout: gy [S,L,D], gwy, gwq, gwk [S,D,D], gwb [S,D,4]
 *   gin (ACCUMULATED when the want flag is set, never touched otherwise): gx [S,L,D],
 *   gy0, gq0, gk0 [S,D,D], gb0 [S,D,4]; want = bit 0: gx, bits 1-4: the state
 *   lm: __local, 2*(3*D*(D+1) + 5*D) + 15*D + 8 floats                                    */
__kernel void srwm_bwd(__global const float *x, long x_off, __global const float *q, long q_off,
                       __global const float *k, long k_off, __global const float *beta, long beta_off,
                       __global const float *dy, long dy_off, __global const float *dq, long dq_off,
                       __global const float *dk, long dk_off, __global const float *db, long db_off,
                       __global const float *wy1, long wy1_off, __global const float *wq1, long wq1_off,
                       __global const float *wk1, long wk1_off, __global const float *wb1, long wb1_off,
                       __global const float *gy, long gy_off,
                       __global const float *gwy, long gwy_off, __global const float *gwq, long gwq_off,
                       __global const float *gwk, long gwk_off, __global const float *gwb, long gwb_off,
                       __global float *gx, long gx_off,
                       __global float *gy0, long gy0_off, __global float *gq0, long gq0_off,
                       __global float *gk0, long gk0_off, __global float *gb0, long gb0_off,
                       long L, long D, long want, long W, long S, long per, __local float *lm)
{
    const long sl = get_local_id(0) / W, l = get_local_id(0) - sl * W;
    const long sraw = get_group_id(0) * (get_local_size(0) / W) + sl;
    const int act = sraw < S; /* a real sequence (else a copy of S - 1 that writes nothing) */
    const long s = act ? sraw : S - 1;
    const long S1 = D + 1, DS = D * S1;
    lm += sl * per;
    __local float *My = lm, *Mq = My + DS, *Mk = Mq + DS, *Mb = Mk + DS;
    __local float *Gy = Mb + D * SRWM_WBS, *Gq = Gy + DS, *Gk = Gq + DS, *Gb = Gk + DS;
    __local float *vx = Gb + D * SRWM_WBS, *vq = vx + D, *vk = vq + D, *va = vk + D;
    __local float *vgy = va + D, *d0 = vgy + D, *d1 = d0 + D, *d2 = d1 + D;
    __local float *s0 = d2 + D, *s1 = s0 + D, *s2 = s1 + D;
    __local float *vgq = s2 + D, *vgk = vgq + D, *vgqt = vgk + D, *vgkt = vgqt + D;
    __local float *vdb = vgkt + D, *vsb = vdb + 4; /* Δ_b and s_b (4 each) */

    const long sL = s * L * D, s4 = s * L * 4, sdd = s * D * D, sd4 = s * D * 4;
    x += x_off + sL;
    q += q_off + sL;
    k += k_off + sL;
    dy += dy_off + sL;
    dq += dq_off + sL;
    dk += dk_off + sL;
    gy += gy_off + sL;
    gx += gx_off + sL;
    beta += beta_off + s4;
    db += db_off + s4;

    for (long i = l; i < D * D; i += W) {
        const long e = i / D, m = i - e * D;
        My[e * S1 + m] = wy1[wy1_off + sdd + i];
        Mq[e * S1 + m] = wq1[wq1_off + sdd + i];
        Mk[e * S1 + m] = wk1[wk1_off + sdd + i];
        Gy[e * S1 + m] = gwy[gwy_off + sdd + i];
        Gq[e * S1 + m] = gwq[gwq_off + sdd + i];
        Gk[e * S1 + m] = gwk[gwk_off + sdd + i];
    }
    for (long i = l; i < 4 * D; i += W) {
        Mb[(i / 4) * SRWM_WBS + i % 4] = wb1[wb1_off + sd4 + i];
        Gb[(i / 4) * SRWM_WBS + i % 4] = gwb[gwb_off + sd4 + i];
    }
    barrier(CLK_LOCAL_MEM_FENCE);

    for (long t = L - 1; t >= 0; t--) {
        /* every item's copy of β_t (read after the barrier: the loads below are its partner) */
        float b[4];
        for (int j = 0; j < 4; j++) b[j] = beta[t * 4 + j];
        for (long e = l; e < D; e += W) {
            const float qe = q[t * D + e], ke = k[t * D + e];
            vx[e] = x[t * D + e];
            vq[e] = qe;
            vk[e] = ke;
            va[e] = qe - ke;
            vgy[e] = gy[t * D + e];
            d0[e] = dy[t * D + e];
            d1[e] = dq[t * D + e];
            d2[e] = dk[t * D + e];
        }
        for (long j = l; j < 4; j += W) vdb[j] = db[t * 4 + j];
        barrier(CLK_LOCAL_MEM_FENCE);

        /* A. own columns: recover the weights before step t, s_i = k^T G_i (G after step t) */
        for (long m = l; m < D; m += W) {
            const float b0 = b[0] * d0[m], b1 = b[1] * d1[m], b2 = b[2] * d2[m];
            float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f;
            for (long e = 0; e < D; e++) {
                const float ke = vk[e];
                const long o = e * S1 + m;
                My[o] = fma(-ke, b0, My[o]);
                Mq[o] = fma(-ke, b1, Mq[o]);
                Mk[o] = fma(-ke, b2, Mk[o]);
                a0 = fma(ke, Gy[o], a0);
                a1 = fma(ke, Gq[o], a1);
                a2 = fma(ke, Gk[o], a2);
            }
            s0[m] = a0;
            s1[m] = a1;
            s2[m] = a2;
        }
        for (long j = l; j < 4; j += W) {
            const float bj = b[3] * vdb[j];
            float a = 0.0f;
            for (long e = 0; e < D; e++) {
                const float ke = vk[e];
                const long o = e * SRWM_WBS + j;
                Mb[o] = fma(-ke, bj, Mb[o]);
                a = fma(ke, Gb[o], a);
            }
            vsb[j] = a;
        }
        barrier(CLK_LOCAL_MEM_FENCE);

        /* B. own rows: r = sum_i G_i (β_i Δ_i) (G after step t), u = sum_i M_i gΔ_i (M before),
         *    g_q = u, g_k = r - u */
        for (long e = l; e < D; e += W) {
            float r = 0.0f, u = 0.0f;
            for (long m = 0; m < D; m++) {
                const long o = e * S1 + m;
                r = fma(Gy[o], b[0] * d0[m], r);
                r = fma(Gq[o], b[1] * d1[m], r);
                r = fma(Gk[o], b[2] * d2[m], r);
                u = fma(My[o], b[0] * s0[m], u);
                u = fma(Mq[o], b[1] * s1[m], u);
                u = fma(Mk[o], b[2] * s2[m], u);
            }
            for (int j = 0; j < 4; j++) {
                r = fma(Gb[e * SRWM_WBS + j], b[3] * vdb[j], r);
                u = fma(Mb[e * SRWM_WBS + j], b[3] * vsb[j], u);
            }
            vgq[e] = u;
            vgk[e] = r - u;
        }
        /* every item: g_b̃_i = (s_i·Δ_i) β_i (1 - β_i) */
        float gbt[4];
        {
            float2 a0 = (float2)(0.0f, 0.0f), a1 = a0, a2 = a0, a3 = a0;
            for (long m = 0; m < D; m++) {
                a0 = mcl_acc_add_prod(a0, s0[m], d0[m]);
                a1 = mcl_acc_add_prod(a1, s1[m], d1[m]);
                a2 = mcl_acc_add_prod(a2, s2[m], d2[m]);
            }
            for (int j = 0; j < 4; j++) a3 = mcl_acc_add_prod(a3, vsb[j], vdb[j]);
            gbt[0] = mcl_acc_value(a0) * (b[0] * (1.0f - b[0]));
            gbt[1] = mcl_acc_value(a1) * (b[1] * (1.0f - b[1]));
            gbt[2] = mcl_acc_value(a2) * (b[2] * (1.0f - b[2]));
            gbt[3] = mcl_acc_value(a3) * (b[3] * (1.0f - b[3]));
        }
        barrier(CLK_LOCAL_MEM_FENCE);

        /* softmax backward (every item the dots, own rows the results) */
        {
            float2 aq = (float2)(0.0f, 0.0f), ak = aq;
            for (long e = 0; e < D; e++) {
                aq = mcl_acc_add_prod(aq, vgq[e], vq[e]);
                ak = mcl_acc_add_prod(ak, vgk[e], vk[e]);
            }
            const float fq = mcl_acc_value(aq), fk = mcl_acc_value(ak);
            for (long e = l; e < D; e += W) {
                vgqt[e] = vq[e] * (vgq[e] - fq);
                vgkt[e] = vk[e] * (vgk[e] - fk);
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);

        /* C. own rows: g_x += W_y g_y + W_q g_q̃ + W_k g_k̃ + w_b g_b̃ (weights before step t) */
        if ((want & 1) && act) {
            for (long e = l; e < D; e += W) {
                float g = 0.0f;
                for (long m = 0; m < D; m++) {
                    const long o = e * S1 + m;
                    g = fma(My[o], vgy[m], g);
                    g = fma(Mq[o], vgqt[m], g);
                    g = fma(Mk[o], vgkt[m], g);
                }
                for (int j = 0; j < 4; j++) g = fma(Mb[e * SRWM_WBS + j], gbt[j], g);
                gx[t * D + e] += g;
            }
        }
        /*    own columns: G_i += (q - k) ⊗ gΔ_i + x ⊗ g_read_i */
        for (long m = l; m < D; m += W) {
            const float g0 = b[0] * s0[m], g1 = b[1] * s1[m], g2 = b[2] * s2[m];
            const float r0 = vgy[m], r1 = vgqt[m], r2 = vgkt[m];
            for (long e = 0; e < D; e++) {
                const float ae = va[e], xe = vx[e];
                const long o = e * S1 + m;
                Gy[o] = fma(xe, r0, fma(ae, g0, Gy[o]));
                Gq[o] = fma(xe, r1, fma(ae, g1, Gq[o]));
                Gk[o] = fma(xe, r2, fma(ae, g2, Gk[o]));
            }
        }
        for (long j = l; j < 4; j += W) {
            const float gj = b[3] * vsb[j], rj = gbt[j];
            for (long e = 0; e < D; e++) {
                const long o = e * SRWM_WBS + j;
                Gb[o] = fma(vx[e], rj, fma(va[e], gj, Gb[o]));
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }

    if (!act) return;
    for (long i = l; i < D * D; i += W) {
        const long e = i / D, m = i - e * D;
        if (want & 2) gy0[gy0_off + sdd + i] += Gy[e * S1 + m];
        if (want & 4) gq0[gq0_off + sdd + i] += Gq[e * S1 + m];
        if (want & 8) gk0[gk0_off + sdd + i] += Gk[e * S1 + m];
    }
    if (want & 16)
        for (long i = l; i < 4 * D; i += W) gb0[gb0_off + sd4 + i] += Gb[(i / 4) * SRWM_WBS + i % 4];
}
