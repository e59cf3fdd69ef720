/* dropout.c — naive inverted dropout (src/ref/dropout.c draws the same mask in chunks of Philox
 * blocks and applies it to vectors of floats). */
#include "naive.h"
#include "rng.h"

/* keep_i: the mask of element i of a tensor (ops.def's dropout row). Segment s = i / seg
 * (seg = 0: one segment, s = 0) draws from stream + s·step, at counter + (i − s·seg):
 *   keep_i = U(seed, stream + s·step, counter + i − s·seg) >= p
 * with U the uniform float of Philox's word (src/common/rng.h, mcl_rng_uniform). */
int mcl_naive_dropout_keep(const mcl_naive_drop *d, int64_t i)
{
    const int64_t s = d->seg > 0 ? i / d->seg : 0, j = i - s * d->seg;
    return mcl_rng_uniform(d->seed, d->stream + (uint64_t)s * d->step, d->counter + (uint64_t)j) >= d->p;
}

/* Forward: y[i] = keep_i ? x[i] / (1 − p) : 0
 *   x [n]
 *   y [n] */
void mcl_naive_dropout_fwd(const mcl_naive_drop *d, int64_t n, const float *x, double *y)
{
    for (int64_t i = 0; i < n; i++) y[i] = mcl_naive_dropout_keep(d, i) ? x[i] / (1.0 - d->p) : 0.0;
}

/* Backward: dy[i]/dx[i] = keep_i / (1 − p), so gx[i] = keep_i ? g[i] / (1 − p) : 0
 *   g  [n]
 *   gx [n] */
void mcl_naive_dropout_bwd(const mcl_naive_drop *d, int64_t n, const float *g, double *gx)
{
    for (int64_t i = 0; i < n; i++) gx[i] = mcl_naive_dropout_keep(d, i) ? g[i] / (1.0 - d->p) : 0.0;
}
