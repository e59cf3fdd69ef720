/* cl_methods.h — the building blocks of the classic continual-learning baselines (internal):
 * a flat host view of a parameter registry, the diagonal empirical Fisher (EWC, online EWC),
 * a quadratic anchor penalty, the synaptic-intelligence path integral (SI), the distillation
 * loss of Learning without Forgetting (LwF) and a reservoir replay buffer. baseline.c puts
 * them together; the tests check each one by hand (tests/test-baselines-cl.c).
 *
 * Every penalty here is applied to the gradient on the HOST: after the backward pass of the
 * task loss, the gradients are read into one flat vector g, the penalty's exact gradient is
 * added, and g is written back before the optimizer step. The penalties are quadratic, so
 * their gradients are closed-form; no op of the tape is needed and both backends (the ref and
 * the OpenCL one) see the same arithmetic. LwF's loss depends on the network's outputs, so it
 * is built from tape ops (slice, scale, log_softmax, mul, sum) and reaches the parameters
 * through the backward pass.
 *
 * Flat layout: the tensors of the registry in registration order, each row-major; P = their
 * total element count (mcl_params_numel).
 */
#ifndef MCL_LEARN_CL_METHODS_H
#define MCL_LEARN_CL_METHODS_H

#include <stdint.h>

#include "params.h"
#include "rng.h"
#include "tensor.h"

/* ======================================================================= flat views */

/* Read every parameter (grad = 0) or every gradient (grad = 1; a tensor without a gradient
 * reads as zeros) into out[P]. */
mcl_status mcl_cl_params_read(const mcl_params *p, int grad, float *out);
/* Write in[P] into the gradients (tensors that have one) or into the parameters (grad = 0). */
mcl_status mcl_cl_params_write(mcl_params *p, int grad, const float *in);

/* ======================================================================= EWC and online EWC
 * Empirical Fisher (Kirkpatrick et al. 2017, the diagonal of the Fisher information with the
 * TRUE label of each training example instead of a label sampled from the model):
 *     F_i = 1/n Σ_k ( ∂ log p(y_k | x_k; θ) / ∂θ_i )²
 * `loss_k(arg, k)` returns −log p(y_k|x_k) of example k as a [1] tape tensor (a mean
 * cross-entropy over one row); one backward per example gives its gradient.
 *   params: the registry (P scalars); n >= 1 examples; F[P] receives the Fisher (overwritten). */
typedef mcl_tensor *(*mcl_cl_example_loss)(void *arg, int64_t k);
mcl_status mcl_cl_fisher(mcl_ctx *ctx, mcl_params *params, mcl_cl_example_loss loss_k, void *arg,
                         int64_t n, float *F);

/* Online EWC (Schwarz et al. 2018): F[n] ← γ·F + F_new (one running Fisher). */
void mcl_cl_fisher_decay(float *F, const float *F_new, int64_t n, float gamma);

/* EWC over several tasks without keeping each task's Fisher: since
 *     ∂/∂θ (λ/2) Σ_t Σ_i F_t,i (θ_i − θ*_t,i)² = λ (A_i θ_i − B_i),  A = Σ_t F_t, B = Σ_t F_t θ*_t
 * two sums (double) hold every earlier task; memory does not grow with the tasks. */
void mcl_cl_ewc_add_task(double *A, double *B, const float *F, const float *anchor, int64_t n);
/* grad[n] += λ (A θ − B) */
void mcl_cl_ewc_grad(const double *A, const double *B, const float *theta, int64_t n,
                     double lambda, float *grad);

/* Quadratic anchor penalty and its gradient:
 *     value = scale · Σ_i w_i (θ_i − a_i)²,     grad_i += 2 · scale · w_i (θ_i − a_i)
 * EWC uses scale = λ/2 per previous task (w = F_t, a = θ*_t); online EWC scale = λ/2 with the
 * running F and the latest anchor; SI scale = c with w = Ω. theta, anchor, w: [n]; grad: [n]
 * or NULL (value only). Returns the value (double sum). */
double mcl_cl_quad_penalty(const float *theta, const float *anchor, const float *w, int64_t n,
                           double scale, float *grad);

/* ======================================================================= SI
 * Synaptic intelligence (Zenke et al. 2017). During a task, after each optimizer step:
 *     ω_i += −g_i · (θ_i^after − θ_i^before)
 * with g the gradient of the TASK loss only (not the penalty). At the end of the task, with
 * Δ_i = θ_i^end − θ_i^start (the task's total move):
 *     Ω_i += ω_i / (Δ_i² + ξ),   ω ← 0,   θ* ← θ^end,   θ^start ← θ^end
 * and the penalty for the next tasks is c Σ Ω_i (θ_i − θ*_i)². */
typedef struct mcl_cl_si {
    int64_t n;
    float xi;     /* ξ > 0: damping of small moves                        */
    float *omega; /* [n] running path integral of the current task        */
    float *Omega; /* [n] accumulated importance                           */
    float *start; /* [n] θ at the start of the current task (= the anchor) */
} mcl_cl_si;

/* theta0[n]: the parameters at the start of the first task. */
mcl_status mcl_cl_si_init(mcl_cl_si *s, int64_t n, float xi, const float *theta0);
void mcl_cl_si_free(mcl_cl_si *s);
void mcl_cl_si_step(mcl_cl_si *s, const float *g, const float *before, const float *after);
void mcl_cl_si_task_end(mcl_cl_si *s, const float *theta_end);

/* ======================================================================= LwF
 * Learning without Forgetting (Li & Hoiem 2016), its distillation term on the units
 * 0..units-1 of the OLD model's outputs (recorded before the new task):
 *     p = softmax(z_old / T),   q = softmax(z / T)   (over the units, per row)
 *     loss = λ · T² · 1/n Σ_rows KL(p ‖ q) = λ T²/n Σ_rows Σ_u p_u (log p_u − log q_u)
 * (the T² keeps the gradient's scale independent of T). The gradient is the one of the
 * soft-target cross-entropy −Σ p log q (they differ by a constant).
 *   logits: [n, K] tape tensor (K >= units); old: host [n · old_stride] (row r's units at
 *   old + r·old_stride); T > 0; λ >= 0. Returns the [1] loss tensor (NULL on error). */
mcl_tensor *mcl_cl_lwf_loss(mcl_ctx *ctx, mcl_tensor *logits, const float *old, int64_t old_stride,
                            int units, float T, float lambda);

/* ======================================================================= replay
 * A reservoir buffer (Vitter's algorithm R) of at most cap images (1×32×32 host floats, as the
 * network saw them) with their labels: the k-th example offered (k = 0, 1, ...) is kept when
 * k < cap, else it replaces slot j = uniform{0..k} when j < cap. Every example offered so far
 * has the same chance cap/k of being in the buffer. Draws from rng (deterministic). */
#define MCL_CL_IMG 1024
typedef struct mcl_cl_replay {
    int cap, n;    /* capacity, examples held */
    int64_t seen;  /* examples offered        */
    float *img;    /* [cap · 1024]            */
    int32_t *lab;  /* [cap]                   */
} mcl_cl_replay;

mcl_status mcl_cl_replay_init(mcl_cl_replay *b, int cap);
void mcl_cl_replay_free(mcl_cl_replay *b);
/* The slot the next example goes to (-1: not kept), counting it as offered. Then the caller
 * writes its image and label there (mcl_cl_replay_put). */
int mcl_cl_replay_offer(mcl_cl_replay *b, mcl_rng *rng);
void mcl_cl_replay_put(mcl_cl_replay *b, int slot, const float *img, int32_t lab);
/* m distinct slots (0 <= m <= n) drawn uniformly (a partial Fisher–Yates over 0..n-1) into
 * out[m]. MCL_ERR_INVALID for m out of range, MCL_ERR_OOM. */
mcl_status mcl_cl_replay_sample(const mcl_cl_replay *b, mcl_rng *rng, int m, int *out);

#endif
