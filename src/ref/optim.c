/* optim.c — reference optimizer updates: sgd_step, adam_step, clip_scale, dyn_step.
 *
 * These ops update their inputs IN PLACE and have no outputs and no backward (ops.def:
 * n_out = 0). They are the ground truth the other backends are compared with, so the exact
 * float expressions are spelled out above each function, in evaluation order: every line is
 * float32 arithmetic rounded after each operation (the reference is built with
 * -ffp-contract=off, so no fused multiply-add), except where "double" is written.
 * Every element is updated independently: the loops split across threads without changing
 * any bit.
 *
 * The optimizer front end (src/common/optim.c) picks the learning rate from the schedule,
 * counts steps and calls one op per parameter tensor.
 */
#include <math.h>

#include "ref.h"

/* Work (in elements) below which a loop stays serial. */
#define OPTIM_PAR_MIN ((int64_t)1 << 15)

/* The Adam update runs as a vector loop: a function over a block of elements at -O3
 * (MCL_HOT) with restrict pointers, called from the parallel loop over blocks. Written as a
 * plain parallel loop it stayed scalar: GCC must assume the parameter, gradient and moment
 * arrays may overlap, and sqrtf vectorizes only because the library is built with
 * -fno-math-errno (configure.ac; without it GCC wraps each call in an errno branch; the
 * vector square root rounds exactly as libm's). Every element is independent: the blocks
 * change no bit. */
#define OPTIM_HOT MCL_HOT
#define OPTIM_BLOCK ((int64_t)4096)

typedef struct adam_coef {
    float lr, b1, b2, eps, omb1, omb2, c1, c2, lrwd, l2;
} adam_coef;

/* Elements [i0, i1) of the step below (decoupled: AdamW's decay; else Adam's L2 term). */
OPTIM_HOT static void adam_block(float *restrict P, const float *restrict Gr, float *restrict M, float *restrict Vv,
                                 int64_t i0, int64_t i1, const adam_coef *k, int decoupled)
{
    const float lr = k->lr, b1 = k->b1, b2 = k->b2, eps = k->eps, omb1 = k->omb1, omb2 = k->omb2, c1 = k->c1,
                c2 = k->c2, lrwd = k->lrwd, l2 = k->l2;
    if (decoupled) {
        MCL_SIMD
        for (int64_t i = i0; i < i1; i++) {
            const float p = P[i] - lrwd * P[i];
            const float g = Gr[i];
            const float m = b1 * M[i] + omb1 * g;
            const float v = b2 * Vv[i] + omb2 * (g * g);
            M[i] = m;
            Vv[i] = v;
            P[i] = p - (lr * (m * c1)) / (sqrtf(v * c2) + eps);
        }
    } else {
        MCL_SIMD
        for (int64_t i = i0; i < i1; i++) {
            const float p = P[i];
            const float g = Gr[i] + l2 * p;
            const float m = b1 * M[i] + omb1 * g;
            const float v = b2 * Vv[i] + omb2 * (g * g);
            M[i] = m;
            Vv[i] = v;
            P[i] = p - (lr * (m * c1)) / (sqrtf(v * c2) + eps);
        }
    }
}

/* SGD with momentum and L2 weight decay (the "heavy ball" form, as in PyTorch's SGD with
 * dampening 0). lr = f0, momentum mu = f1, weight decay wd = f2. Per element:
 *   g     = grad + wd * param
 *   mom   = mu * mom + g
 *   param = param - lr * mom
 * With mu = 0 this is plain SGD (mom then just holds the last g). If the state tensor mom is
 * NULL (no momentum slot allocated), the step is param = param - lr * g and nothing else is
 * written.
 * param [any]        updated in place
 * grad  [as param]   read only
 * mom   [as param]   updated in place (or NULL) */
mcl_status mcl_ref_sgd_step_fwd(mcl_backend *be, const mcl_op_args *a)
{
    (void)be;
    float *P = mcl_ref_ptr(a->in[0]);
    const float *Gr = mcl_ref_ptr(a->in[1]);
    float *Mo = a->in[2] ? mcl_ref_ptr(a->in[2]) : NULL;
    int64_t n = mcl_ref_rows(a->in[0]) * mcl_ref_cols(a->in[0]);
    const float lr = a->p.f[0], mu = a->p.f[1], wd = a->p.f[2];
    if (Mo) { /* simd: the tensors never overlap, so the loops vectorize */
#pragma omp parallel for simd schedule(static) if (n >= OPTIM_PAR_MIN)
        for (int64_t i = 0; i < n; i++) {
            float g = Gr[i] + wd * P[i];
            float m = mu * Mo[i] + g;
            Mo[i] = m;
            P[i] = P[i] - lr * m;
        }
    } else {
#pragma omp parallel for simd schedule(static) if (n >= OPTIM_PAR_MIN)
        for (int64_t i = 0; i < n; i++) {
            float g = Gr[i] + wd * P[i];
            P[i] = P[i] - lr * g;
        }
    }
    return MCL_OK;
}

/* Adam (Kingma & Ba 2015, "Adam: A Method for Stochastic Optimization", Algorithm 1) with L2
 * weight decay folded into the gradient (i0 = 0), or AdamW (Loshchilov & Hutter 2019,
 * "Decoupled Weight Decay Regularization", Algorithm 2) with the decay applied to the
 * parameter directly (i0 = 1). lr = f0, b1 = f1, b2 = f2, eps = f3, wd = f4, step t = i1 >= 1.
 *
 * Once per call, in double, then rounded to float:
 *   c1 = (float)(1 / (1 - b1^t))        c2 = (float)(1 / (1 - b2^t))
 *   (b1, b2 are the float parameters widened to double; b^t = pow(b, t))
 * Per element, float:
 *   AdamW only:  lrwd  = lr * wd                        (once per call)
 *                param = param - lrwd * param           (decoupled decay, uses θ_{t-1})
 *   Adam only:   g     = grad + wd * param              (L2 in the gradient)
 *   AdamW:       g     = grad
 *   m     = b1 * m + (1 - b1) * g
 *   v     = b2 * v + (1 - b2) * (g * g)
 *   mhat  = m * c1                                      (= m / (1 - b1^t), bias correction)
 *   vhat  = v * c2                                      (= v / (1 - b2^t))
 *   param = param - (lr * mhat) / (sqrt(vhat) + eps)
 * The decoupled decay reads the parameter before the Adam step, as in the paper's
 * θ_t = θ_{t-1} - η(α m̂/(√v̂ + ε) + λ θ_{t-1}) with the schedule multiplier η folded into lr
 * (so the decay is lr * wd, the PyTorch convention).
 * param [any]        updated in place
 * grad  [as param]   read only
 * m     [as param]   first-moment estimate, updated in place
 * v     [as param]   second-moment estimate, updated in place
 * Returns MCL_ERR_INVALID if t < 1 (the bias correction would divide by zero). */
mcl_status mcl_ref_adam_step_fwd(mcl_backend *be, const mcl_op_args *a)
{
    (void)be;
    float *P = mcl_ref_ptr(a->in[0]);
    const float *Gr = mcl_ref_ptr(a->in[1]);
    float *M = mcl_ref_ptr(a->in[2]);
    float *Vv = mcl_ref_ptr(a->in[3]);
    int64_t n = mcl_ref_rows(a->in[0]) * mcl_ref_cols(a->in[0]);
    const int decoupled = a->p.i[0] == 1, rmsprop = a->p.i[0] == 2;
    const int64_t t = a->p.i[1];
    const float lr = a->p.f[0], b1 = a->p.f[1], b2 = a->p.f[2], eps = a->p.f[3];
    const float wd = a->p.f[4];
    if (t < 1) return MCL_ERR_INVALID;

    /* RMSProp (i0 = 2): no bias correction, c1 = c2 = 1 (with b1 = 0, m = g and the step is
     * lr g / (sqrt(v) + eps), Tieleman & Hinton; PyTorch's RMSprop with eps outside the root) */
    const float c1 = rmsprop ? 1.0f : (float)(1.0 / (1.0 - pow((double)b1, (double)t)));
    const float c2 = rmsprop ? 1.0f : (float)(1.0 / (1.0 - pow((double)b2, (double)t)));
    const float omb1 = 1.0f - b1, omb2 = 1.0f - b2;
    const float lrwd = lr * wd;             /* AdamW: decoupled decay factor */
    const float l2 = decoupled ? 0.0f : wd; /* Adam: L2 term in the gradient */
    const adam_coef k = {lr, b1, b2, eps, omb1, omb2, c1, c2, lrwd, l2};
    const int64_t nblk = (n + OPTIM_BLOCK - 1) / OPTIM_BLOCK;
#pragma omp parallel for schedule(static) if (n >= OPTIM_PAR_MIN)
    for (int64_t blk = 0; blk < nblk; blk++)
        adam_block(P, Gr, M, Vv, blk * OPTIM_BLOCK, blk * OPTIM_BLOCK + OPTIM_BLOCK < n ? blk * OPTIM_BLOCK + OPTIM_BLOCK : n,
                   &k, decoupled);
    return MCL_OK;
}

/* Gradient clipping by a global norm, on the device. f0 = max_norm; sq = sum of the squares
 * of ALL gradients being clipped together (computed beforehand with sumsq ops). In float:
 *   s    = max_norm / (sqrt(sq) + 1e-6)
 *   grad = grad * s        only if s < 1     (i.e. grad *= min(1, s))
 * A NaN sq gives a NaN s, which is not < 1: the gradients are left as they are (they already
 * hold the NaN that made sq NaN).
 * grad [any]   updated in place
 * sq   [1]     read only */
mcl_status mcl_ref_clip_scale_fwd(mcl_backend *be, const mcl_op_args *a)
{
    (void)be;
    float *Gr = mcl_ref_ptr(a->in[0]);
    const float sq = mcl_ref_ptr(a->in[1])[0];
    int64_t n = mcl_ref_rows(a->in[0]) * mcl_ref_cols(a->in[0]);
    const float s = a->p.f[0] / (sqrtf(sq) + 1e-6f);
    if (!(s < 1.0f)) return MCL_OK;
#pragma omp parallel for simd schedule(static) if (n >= OPTIM_PAR_MIN)
    for (int64_t i = 0; i < n; i++) Gr[i] = Gr[i] * s;
    return MCL_OK;
}

/* Dynamic evaluation's step (Krause et al. 2018, src/models/lm/lm_eval.c): SGD on the
 * evaluation's own loss with decay toward the trained weights w0. lr = f0, decay = f1 >= 0.
 * Per element, the floats of the op chain scale, sub, sub, scale, add it replaces:
 *   a     = lr * grad
 *   b     = param - a
 *   param = b + decay * (w0 - param)      (f1 > 0; else param = b)
 * param [any]        updated in place
 * grad  [as param]   read only
 * w0    [as param]   read only */
mcl_status mcl_ref_dyn_step_fwd(mcl_backend *be, const mcl_op_args *a)
{
    (void)be;
    float *P = mcl_ref_ptr(a->in[0]);
    const float *Gr = mcl_ref_ptr(a->in[1]);
    const float *W0 = mcl_ref_ptr(a->in[2]);
    const int64_t n = mcl_ref_rows(a->in[0]) * mcl_ref_cols(a->in[0]);
    const float lr = a->p.f[0], decay = a->p.f[1];
    if (decay > 0.0f) {
#pragma omp parallel for simd schedule(static) if (n >= OPTIM_PAR_MIN)
        for (int64_t i = 0; i < n; i++) {
            const float p = P[i];
            const float b = p - lr * Gr[i];
            P[i] = b + decay * (W0[i] - p);
        }
    } else {
#pragma omp parallel for simd schedule(static) if (n >= OPTIM_PAR_MIN)
        for (int64_t i = 0; i < n; i++) P[i] = P[i] - lr * Gr[i];
    }
    return MCL_OK;
}
