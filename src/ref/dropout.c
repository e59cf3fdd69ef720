/* dropout.c — reference inverted dropout with a counter-based (Philox) mask.
 *
 * The keep mask is a pure function of (seed, stream, counter, element index), so it is never
 * stored: backward draws it again, and the OpenCL kernel draws the very same one (rng.h).
 *   p      = p.f[0]  drop probability, 0 <= p < 1 (checked by the front end)
 *   seed   = p.u[0], stream = p.u[1], counter = p.u[2]
 *   keep_i = mcl_rng_uniform(seed, stream, counter + i) >= p     (i = flat element index)
 *   scale  = 1 / (1 - p), computed once in float; each kept element is multiplied by it
 *            (x * scale, not x / (1 - p): both backends round the same way).
 * A dropped element is a select, not a multiplication by 0: it gives exactly 0 forward and
 * adds nothing backward, even when the input or gradient there is NaN or Inf.
 * p == 0 keeps everything with scale 1, so the op is an exact copy (no draws are made).
 */
#include <string.h>

#include "ref.h"
#include "rng.h"

/* Work (in elements) below which a loop stays serial. One Philox block per element is not
 * free, so the threshold is lower than for plain copies. */
#define DROPOUT_PAR_MIN ((int64_t)1 << 13)

/* Forward:  out_i = keep_i ? a_i * scale : 0
 * a   [any]
 * out [same as a] */
mcl_status mcl_ref_dropout_fwd(mcl_backend *be, const mcl_op_args *a)
{
    (void)be;
    const float *A = mcl_ref_ptr(a->in[0]);
    float *O = mcl_ref_ptr(a->out[0]);
    int64_t n = mcl_ref_rows(a->in[0]) * mcl_ref_cols(a->in[0]);
    float p = a->p.f[0];
    uint64_t seed = a->p.u[0], stream = a->p.u[1], ctr = a->p.u[2];
    if (p == 0.0f) {
        memcpy(O, A, (size_t)n * sizeof(float));
        return MCL_OK;
    }
    float scale = 1.0f / (1.0f - p);
#pragma omp parallel for schedule(static) if (n >= DROPOUT_PAR_MIN)
    for (int64_t i = 0; i < n; i++) {
        int keep = mcl_rng_uniform(seed, stream, ctr + (uint64_t)i) >= p;
        O[i] = keep ? A[i] * scale : 0.0f;
    }
    return MCL_OK;
}

/* Backward: d out_i / d a_i = keep_i * scale (the same mask, drawn again), so
 *   ga_i += keep_i ? gout_i * scale : 0
 * gout[0] like a;  gin[0] like a (or NULL) */
mcl_status mcl_ref_dropout_bwd(mcl_backend *be, const mcl_op_args *a)
{
    (void)be;
    if (!a->gin[0]) return MCL_OK;
    const float *G = mcl_ref_ptr(a->gout[0]);
    float *GA = mcl_ref_ptr(a->gin[0]);
    int64_t n = mcl_ref_rows(a->in[0]) * mcl_ref_cols(a->in[0]);
    float p = a->p.f[0];
    uint64_t seed = a->p.u[0], stream = a->p.u[1], ctr = a->p.u[2];
    if (p == 0.0f) {
#pragma omp parallel for schedule(static) if (n >= ((int64_t)1 << 16))
        for (int64_t i = 0; i < n; i++) GA[i] += G[i];
        return MCL_OK;
    }
    float scale = 1.0f / (1.0f - p);
#pragma omp parallel for schedule(static) if (n >= DROPOUT_PAR_MIN)
    for (int64_t i = 0; i < n; i++) {
        int keep = mcl_rng_uniform(seed, stream, ctr + (uint64_t)i) >= p;
        if (keep) GA[i] += G[i] * scale;
    }
    return MCL_OK;
}
