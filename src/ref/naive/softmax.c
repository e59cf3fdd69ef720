/* softmax.c — naive softmax, log-softmax and cross-entropy (src/ref/softmax.c, loss.c). */
#include <math.h>

#include "naive.h"

/* out[r][j] = exp(x[r][j] - m_r) / sum_c exp(x[r][c] - m_r),   m_r = max_c x[r][c]
 * (subtracting the row maximum changes nothing mathematically and keeps exp from overflowing)
 *   x    [R,N]
 *   out  [R,N] */
void mcl_naive_softmax(int64_t R, int64_t N, const float *x, double *out)
{
    for (int64_t r = 0; r < R; r++) {
        const float *xr = x + r * N;
        double m = xr[0], s = 0.0;
        for (int64_t c = 1; c < N; c++)
            if (xr[c] > m) m = xr[c];
        for (int64_t c = 0; c < N; c++) s += exp(xr[c] - m);
        for (int64_t c = 0; c < N; c++) out[r * N + c] = exp(xr[c] - m) / s;
    }
}

/* out[r][j] = x[r][j] - m_r - log sum_c exp(x[r][c] - m_r),   m_r = max_c x[r][c]
 *   x    [R,N]
 *   out  [R,N] */
void mcl_naive_log_softmax(int64_t R, int64_t N, const float *x, double *out)
{
    for (int64_t r = 0; r < R; r++) {
        const float *xr = x + r * N;
        double m = xr[0], s = 0.0;
        for (int64_t c = 1; c < N; c++)
            if (xr[c] > m) m = xr[c];
        for (int64_t c = 0; c < N; c++) s += exp(xr[c] - m);
        for (int64_t c = 0; c < N; c++) out[r * N + c] = xr[c] - m - log(s);
    }
}

/* loss = (1 / |S|) sum_{r in S} -log p[r][t_r],   p = softmax(logits),  S = {r : t_r >= 0}
 *   logits   [R,C]
 *   targets  [R]     class index stored as a float; negative = row not counted
 *   probs    [R,C]   receives p
 *   returns  loss    (0 / 0 = NaN when no row counts) */
double mcl_naive_cross_entropy(int64_t R, int64_t C, const float *logits, const float *targets,
                               double *probs)
{
    double loss = 0.0;
    int64_t counted = 0;
    mcl_naive_softmax(R, C, logits, probs);
    for (int64_t r = 0; r < R; r++) {
        if (targets[r] < 0) continue;
        loss -= log(probs[r * C + (int64_t)targets[r]]);
        counted++;
    }
    return loss / (double)counted;
}
