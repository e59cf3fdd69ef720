/* optim.h — optimizers, learning-rate schedules and gradient clipping (public API).
 *
 * The updates themselves are ops (sgd_step, adam_step, clip_scale in ops.def), so a training
 * step stays on the backend's device: nothing here reads parameters back to the host.
 */
#ifndef MCL_OPTIM_H
#define MCL_OPTIM_H

#include "params.h"
#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum mcl_sched_kind {
    MCL_SCHED_CONSTANT = 0, /* lr = base_lr                                                    */
    MCL_SCHED_NOAM,         /* lr = base_lr · d^-0.5 · min(s^-0.5, s · w^-1.5)  (Vaswani et al.) */
    MCL_SCHED_COSINE        /* linear warm-up over w steps to base_lr, then cosine decay to
                               min_lr at total_steps (constant min_lr afterwards)               */
} mcl_sched_kind;

typedef struct mcl_schedule {
    mcl_sched_kind kind;
    float base_lr;
    int64_t warmup;      /* w (NOAM: must be >= 1; COSINE: may be 0) */
    int64_t total_steps; /* COSINE only, > warmup                    */
    float d_model;       /* NOAM only, > 0                           */
    float min_lr;        /* COSINE only                              */
} mcl_schedule;

/* Learning rate at step s (s >= 1, the step about to be taken). Returns NaN on a bad config. */
float mcl_schedule_lr(const mcl_schedule *s, int64_t step);
/* MCL_OK or MCL_ERR_INVALID (message in errbuf) for a schedule that makes no sense. */
mcl_status mcl_schedule_check(const mcl_schedule *s, char *errbuf, size_t len);

/* RMSPROP: v = a·v + (1 − a)·g², param −= lr·g / (sqrt(v) + eps), a = beta2 (default 0.99),
 * no bias correction, L2 weight decay in the gradient (PyTorch's RMSprop without momentum). */
typedef enum mcl_optim_kind { MCL_OPTIM_SGD = 0, MCL_OPTIM_ADAM, MCL_OPTIM_ADAMW, MCL_OPTIM_RMSPROP } mcl_optim_kind;

typedef struct mcl_optim_config {
    mcl_optim_kind kind;
    mcl_schedule sched;   /* the learning rate comes from here (use CONSTANT for a fixed lr) */
    float momentum;       /* SGD                                                              */
    float beta1, beta2;   /* Adam/AdamW (defaults when both 0: 0.9, 0.999)                    */
    float eps;            /* Adam/AdamW (default when 0: 1e-8)                                */
    float weight_decay;   /* SGD/Adam: L2 added to the gradient; AdamW: decoupled             */
    float clip_norm;      /* > 0: clip the global gradient norm to this before each step      */
} mcl_optim_config;

typedef struct mcl_optim mcl_optim;

/* Optimizer over all tensors of `params` (which must outlive it). */
mcl_status mcl_optim_create(mcl_ctx *ctx, const mcl_optim_config *cfg, mcl_params *params,
                            mcl_optim **out);
void mcl_optim_free(mcl_optim *opt);
/* One update of every parameter that has a gradient (optionally clipped first). Increments
 * the step counter. Does not zero gradients. */
mcl_status mcl_optim_step(mcl_optim *opt);
void mcl_optim_zero_grad(mcl_optim *opt);
int64_t mcl_optim_steps(const mcl_optim *opt);      /* updates taken so far      */
float mcl_optim_last_lr(const mcl_optim *opt);      /* lr used by the last step  */
/* Per-parameter state (for checkpoints): slot 0 = momentum or Adam m, slot 1 = Adam v.
 * NULL if that slot does not exist for this optimizer. */
mcl_tensor *mcl_optim_state(const mcl_optim *opt, int param_index, int slot);
void mcl_optim_set_steps(mcl_optim *opt, int64_t steps);

/* Global-norm clipping of n gradients on the device: g *= min(1, max_norm / (||g||_2 + 1e-6)),
 * ||g|| over all n tensors together. If norm_out is not NULL the norm before clipping is read
 * back to the host and stored there. NULL entries in grads are skipped. */
mcl_status mcl_clip_grad_norm(mcl_ctx *ctx, mcl_tensor *const *grads, int n, float max_norm,
                              float *norm_out);

#ifdef __cplusplus
}
#endif
#endif
