/* loss.cl — cross_entropy (softmax + negative log-likelihood, fused), forward and backward.
 * Same equations as src/ref/loss.c:
 *   m_r        = max_c logits[r, c]
 *   lse_r      = m_r + log sum_c exp(logits[r, c] - m_r)
 *   probs[r,c] = exp(logits[r, c] - m_r) / sum_c' exp(logits[r, c'] - m_r)   (every row)
 *   loss       = (1/count) sum_{r counted} (lse_r - logits[r, target_r])     (0 if count == 0)
 * A row is counted when its target (a class index stored as a float) is in [0, C); negative
 * (and, defensively, NaN or >= C) targets mark ignored rows.
 *
 * Index layout (deterministic: fixed shapes, no atomics; W = work-group size, a power of two
 * chosen by the host):
 *   cross_entropy_rows       one group per row r: max and sum of exponentials by a tree in
 *                            local memory (item l handles columns l, l+W, ...), writes
 *                            probs[r, :] and the row loss pair (hi, lo) to part[r] ((0, 0) for
 *                            an ignored row);
 *   cross_entropy_rows_short the same for short rows (C <= 32, the host's choice): one
 *                            work-item per row, max and sum in column order;
 *   cross_entropy_loss       one group: item l adds part[l], part[l+W], ... and counts the
 *                            counted rows, tree, item 0 writes loss[0] = total / count;
 *   cross_entropy_bwd_scale  one group: counts the rows, item 0 writes
 *                            scale[0] = gout[0] / count (0 when count == 0);
 *   cross_entropy_bwd        one work-item per logit (flat index i = r*C + c):
 *                            glogits[r, c] += scale * (probs[r, c] - [c == target_r]) for
 *                            counted rows only (ACCUMULATES).
 *
 * Accuracy without fp64: sums are (hi, lo) float pairs, with the row maximum, the tree sums
 * and the pair arithmetic from common.cl (mcl_group_*, mcl_acc_*).
 */
#pragma OPENCL FP_CONTRACT OFF

/* Class index of a target, or -1 if the row is ignored (negative, NaN, >= C). */
long loss_target_class(float t, long C)
{
    if (!(t >= 0.0f) || !(t < (float)C)) return -1;
    const long c = (long)t;
    return c < C ? c : -1;
}

/* Number of counted rows among targets[0..R), returned to every item (mcl_group_count). */
long loss_group_count(__global const float *targets, long R, long C, __local long *cnt)
{
    const uint l = get_local_id(0), W = get_local_size(0);
    long n = 0;
    for (long r = l; r < R; r += W) n += loss_target_class(targets[r], C) >= 0;
    return mcl_group_count(n, cnt);
}

/* ------------------------------------------------------------------------------------ */
/* The loss term of row r as a pair: lse_r - logits[r, t] for a counted row (t = its target),
 * (0, 0) for an ignored one. m = the row maximum, s = sum_c exp(logits[r, c] - m). */
float2 cross_entropy_row_term(__global const float *x, float target, long C, float m, float2 s)
{
    const long t = loss_target_class(target, C);
    if (t < 0) return (float2)(0.0f, 0.0f);
    /* lse - x[t] = (m - x[t]) + log(hi + lo), with log(hi + lo) ~ log(hi) + lo / hi */
    const float lsum = mcl_acc_log(s);
    const float2 d = mcl_two_sum(m, -x[t]);
    if (isfinite(d.x) && isfinite(lsum)) {
        const float2 u = mcl_two_sum(d.x, lsum);
        return (float2)(u.x, u.y + d.y);
    }
    return (float2)(d.x + lsum, 0.0f);
}

/* Pass 1, one group per row r: probs[r, :] = softmax(logits[r, :]) and
 * part[r] = lse_r - logits[r, target_r] as a pair ((0, 0) for an ignored row). */
__kernel void cross_entropy_rows(__global const float *logits, long logits_off,
                                 __global const float *targets, long targets_off,
                                 __global float *probs, long probs_off, long C,
                                 __global float2 *part, __local float2 *buf)
{
    const long W = get_local_size(0), l = get_local_id(0), r = get_group_id(0);
    __global const float *x = logits + logits_off + r * C;
    __global float *p = probs + probs_off + r * C;
    const float m = mcl_group_max(x, C, buf);
    float2 acc = (float2)(0.0f, 0.0f);
    for (long j = l; j < C; j += W) {
        const float e = exp(x[j] - m);
        p[j] = e;
        acc = mcl_acc_merge(acc, (float2)(e, 0.0f));
    }
    const float2 s = mcl_group_sum(acc, buf);
    for (long j = l; j < C; j += W) p[j] = mcl_div_acc(p[j], s); /* e / s, rounded once */
    if (l == 0) part[r] = cross_entropy_row_term(x, targets[targets_off + r], C, m, s);
}

/* Pass 1 for short rows (the host's choice, C <= a few dozen): one work-item per row r, the
 * same quantities as cross_entropy_rows with the row's max and sum taken in order -- a
 * work-group per row of ten classes spent its time in barriers. */
__kernel void cross_entropy_rows_short(__global const float *logits, long logits_off,
                                       __global const float *targets, long targets_off,
                                       __global float *probs, long probs_off, long R, long C,
                                       __global float2 *part)
{
    const long r = get_global_id(0);
    if (r >= R) return;
    __global const float *x = logits + logits_off + r * C;
    __global float *p = probs + probs_off + r * C;
    float m = -INFINITY;
    for (long j = 0; j < C; j++) m = x[j] > m ? x[j] : m;
    float2 s = (float2)(0.0f, 0.0f);
    for (long j = 0; j < C; j++) {
        const float e = exp(x[j] - m);
        p[j] = e;
        s = mcl_acc_merge(s, (float2)(e, 0.0f));
    }
    for (long j = 0; j < C; j++) p[j] = mcl_div_acc(p[j], s);
    part[r] = cross_entropy_row_term(x, targets[targets_off + r], C, m, s);
}

/* Pass 2, one group: loss[0] = (sum_r part[r]) / count, or 0 when no row is counted. */
__kernel void cross_entropy_loss(__global const float *targets, long targets_off, long R, long C,
                                 __global const float2 *part, __global float *loss, long loss_off,
                                 __local float2 *buf, __local long *cnt)
{
    const long W = get_local_size(0), l = get_local_id(0);
    targets += targets_off;
    const long count = loss_group_count(targets, R, C, cnt);
    float2 acc = (float2)(0.0f, 0.0f);
    for (long r = l; r < R; r += W) acc = mcl_acc_merge(acc, part[r]);
    acc = mcl_group_sum(acc, buf);
    if (l != 0) return;
    /* (hi + lo) / count, rounded about once */
    loss[loss_off] = count == 0 ? 0.0f : mcl_acc_div(acc, (float)count).x;
}

/* Backward pass 1, one group: scale[0] = gout[0] / count (0 when no row is counted). */
__kernel void cross_entropy_bwd_scale(__global const float *targets, long targets_off, long R,
                                      long C, __global const float *g, long g_off,
                                      __global float *scale, __local long *cnt)
{
    const long count = loss_group_count(targets + targets_off, R, C, cnt);
    if (get_local_id(0) == 0) scale[0] = count > 0 ? g[g_off] / (float)count : 0.0f;
}

/* Backward pass 2, one work-item per logit i = r*C + c (n = R*C):
 *   glogits[r, c] += scale * (probs[r, c] - [c == target_r])     for counted rows r */
__kernel void cross_entropy_bwd(__global const float *targets, long targets_off,
                                __global const float *probs, long probs_off,
                                __global const float *scale, __global float *gx, long gx_off,
                                long C, long n)
{
    const long i = get_global_id(0);
    if (i >= n) return;
    const long r = i / C, c = i - r * C;
    const long t = loss_target_class(targets[targets_off + r], C);
    if (t < 0) return;
    const float d = probs[probs_off + i] - (c == t ? 1.0f : 0.0f);
    const float v = scale[0] * d;
    gx[gx_off + i] += v;
}
