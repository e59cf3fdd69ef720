/* loss.c — reference losses: cross_entropy (softmax + negative log-likelihood, fused).
 *
 * logits [R,C] are R rows of C class scores; targets [R] holds one class index per row,
 * stored as a float; a negative target marks a row to ignore (padding, unlabeled steps).
 * The loss is the mean of -log softmax(logits[r])[target[r]] over the counted rows, computed
 * with the max shift and log-sum-exp in double. The softmax of every row (ignored rows too)
 * is saved as out[1] for the backward.
 *
 * Determinism: the rows are cut into NCHUNK chunks whose bounds depend only on R; each chunk
 * is handled by one thread, rows in order, and its loss sum (double) and count go to its own
 * slot of small stack arrays; the chunk sums are then added in chunk order. So the loss is
 * bit-identical for any number of threads. Loops run under OpenMP only above PAR_MIN elements.
 */
#include <math.h>
#include <string.h>

#include "ref.h"

/* Below this many elements a loop runs on the calling thread. */
#define PAR_MIN 32768
/* Fixed number of row chunks of the loss sum (stack arrays of this many entries). */
#define NCHUNK 256

/* Class index of row r, or -1 if the row is ignored. The front end guarantees targets are
 * integers < C; anything else (negative, NaN, >= C) is treated as "ignored" here so that a
 * bad value can never index outside the row. */
static int64_t target_class(float t, int64_t C)
{
    if (!(t >= 0.0f) || !((double)t < (double)C)) return -1;
    return (int64_t)t;
}

/* ------------------------------------------------------------------------------------ */
/* cross_entropy:
 *   m_r       = max_c logits[r, c]
 *   lse_r     = m_r + log sum_c exp(logits[r, c] - m_r)
 *   probs[r,c] = exp(logits[r, c] - lse_r)
 *   loss      = (1/count) sum_{r counted} (lse_r - logits[r, target_r])    (0 if count == 0)
 *
 *   in[0] logits [R,C], in[1] targets [R] (class index as float, < 0 = ignored)
 *   out[0] loss [1], out[1] probs [R,C]     (only the loss is differentiable)
 *
 * backward (only logits get a gradient):
 *   glogits[r, c] += gout[0] * (probs[r, c] - [c == target_r]) / count   for counted rows r
 *   (ignored rows, and every row when count == 0, get nothing; a fresh glogits, ref.h, is
 *   stored instead: 0 + that, and 0 where nothing is added, so it needs no zeros first)
 */

mcl_status mcl_ref_cross_entropy_fwd(mcl_backend *be, const mcl_op_args *a)
{
    (void)be;
    const float *logits = mcl_ref_ptr(a->in[0]);
    const float *targets = mcl_ref_ptr(a->in[1]);
    float *loss = mcl_ref_ptr(a->out[0]);
    float *probs = mcl_ref_ptr(a->out[1]);
    const int64_t R = mcl_ref_rows(a->in[0]), C = mcl_ref_cols(a->in[0]);

    double part_loss[NCHUNK];
    int64_t part_count[NCHUNK];
#pragma omp parallel for schedule(static) if (R * C > PAR_MIN)
    for (int ch = 0; ch < NCHUNK; ch++) {
        const int64_t r0 = R * ch / NCHUNK, r1 = R * (ch + 1) / NCHUNK;
        double lsum = 0.0;
        int64_t count = 0;
        for (int64_t r = r0; r < r1; r++) {
            const float *xr = logits + r * C;
            float *pr = probs + r * C;
            float m = xr[0];
            for (int64_t c = 1; c < C; c++)
                if (xr[c] > m) m = xr[c];
            double s = 0.0;
            for (int64_t c = 0; c < C; c++) {
                pr[c] = expf(xr[c] - m);
                s += (double)pr[c];
            }
            for (int64_t c = 0; c < C; c++) pr[c] = (float)((double)pr[c] / s);
            const int64_t t = target_class(targets[r], C);
            if (t >= 0) {
                const double lse = (double)m + log(s);
                lsum += lse - (double)xr[t];
                count++;
            }
        }
        part_loss[ch] = lsum;
        part_count[ch] = count;
    }

    double total = 0.0;
    int64_t count = 0;
    for (int ch = 0; ch < NCHUNK; ch++) {
        total += part_loss[ch];
        count += part_count[ch];
    }
    loss[0] = count > 0 ? (float)(total / (double)count) : 0.0f;
    return MCL_OK;
}

mcl_status mcl_ref_cross_entropy_bwd(mcl_backend *be, const mcl_op_args *a)
{
    (void)be;
    if (!a->gin[0]) return MCL_OK;
    const float *targets = mcl_ref_ptr(a->in[1]);
    const float *probs = mcl_ref_ptr(a->out[1]);
    float *glogits = mcl_ref_ptr(a->gin[0]);
    const int64_t R = mcl_ref_rows(a->in[0]), C = mcl_ref_cols(a->in[0]);

    /* a fresh gin (ref.h) is stored, not added to: 0 + value, and 0 where nothing is added */
    const int fresh = mcl_ref_grad_fresh(a->gin[0]);
    int64_t count = 0;
    for (int64_t r = 0; r < R; r++)
        if (target_class(targets[r], C) >= 0) count++;
    if (count == 0) {
        if (fresh) memset(glogits, 0, (size_t)(R * C) * sizeof(float));
        return MCL_OK;
    }
    const float scale = (float)((double)mcl_ref_ptr(a->gout[0])[0] / (double)count);

#pragma omp parallel for schedule(static) if (R * C > PAR_MIN)
    for (int64_t r = 0; r < R; r++) {
        const int64_t t = target_class(targets[r], C);
        float *gr = glogits + r * C;
        if (t < 0) {
            if (fresh) memset(gr, 0, (size_t)C * sizeof(float));
            continue;
        }
        const float *pr = probs + r * C;
        if (fresh)
            for (int64_t c = 0; c < C; c++) gr[c] = 0.0f + scale * (pr[c] - (c == t ? 1.0f : 0.0f));
        else
            for (int64_t c = 0; c < C; c++) gr[c] += scale * (pr[c] - (c == t ? 1.0f : 0.0f));
    }
    return MCL_OK;
}
