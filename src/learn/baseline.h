/* baseline.h — hand-crafted continual-learning baselines for the ACL evaluation (public API).
 *
 * The learner: the ACL model's Conv-4 feature extractor — 4 × [conv 3×3 (pad 1, bias,
 * conv_channels channels) → instance norm (affine, eps 1e-5) → max-pool 2×2 → ReLU], dropout
 * off — on a 1×32×32 image gives conv_channels·2·2 features (128 for 32 channels; at
 * image_size 28, conv_channels·1·1: pooling floors 28 → 14 → 7 → 3 → 1), then a
 * linear head to n_outputs logits. Initialization, fresh for every learning problem: conv
 * weights He-normal N(0, 2/(9·c_in)), conv biases 0, instance-norm gain 1 and shift 0, head
 * weights N(0, 1/features), head bias 0 (Philox, keyed by the config's seed, the run and the
 * episode).
 *
 * Training: SEQUENTIALLY on each task's training examples (task-sequence protocol: the N·K
 * context examples of the task; Split-X: the task's C·K examples — the "same shots" regime —
 * or, with regime = MCL_BASELINE_FULL, every training image of the task's classes: the "full
 * data" regime, Split-X only), `epochs` passes per task, each pass over a fresh shuffle
 * (Philox) in mini-batches of at most batch_size (32) rows, loss = mean cross-entropy over the
 * n_outputs logits, one optimizer for the whole sequence (Adam moments are kept across tasks).
 * Plain SGD (no momentum, no weight decay) or Adam (β 0.9/0.999, eps 1e-8), constant learning
 * rate. The method (cl_methods.h has the formulas):
 *   - PLAIN       sequential fine-tuning;
 *   - EWC         after each task t, the diagonal empirical Fisher F_t (true labels, mean over
 *                 the task's training examples, or fisher_max of them) and the anchor θ*_t;
 *                 penalty (λ/2) Σ_t Σ_i F_t,i (θ_i − θ*_t,i)²;
 *   - EWC_ONLINE  one running Fisher F ← γ F + F_t and the latest anchor; (λ/2) Σ F (θ − θ*)²;
 *   - SI          path integral ω += −g·Δθ over the task's steps (g: the task loss's gradient),
 *                 Ω += ω / (Δθ_task² + ξ) at its end; penalty c Σ Ω (θ − θ*)²;
 *   - LWF         before task t ≥ 1, the network's logits on the task's training inputs are
 *                 recorded; loss += λ T² · mean KL(softmax(z_old/T) ‖ softmax(z/T)) over the
 *                 units 0..U-1, U = 1 + the largest label of the earlier tasks (all units in
 *                 domain-incremental settings);
 *   - REPLAY      a reservoir buffer of `buffer` examples in all (the examples of a task are
 *                 offered to it after the task); from task 1 on, each mini-batch is
 *                 concatenated with replay_batch examples drawn from it without replacement.
 * The penalty gradients are added to the gradients on the host before each optimizer step
 * (exact: the penalties are quadratic), so both backends run them the same way.
 *
 * Evaluation: the protocols of acl_eval.h, with the same configs and the same episode draws
 * for the same seed: after training on task i, the accuracy on every task j <= i gives
 * R[i][j] (no gradients; prediction = argmax over the n_outputs logits).
 *   - task sequences: a fresh learner per EPISODE (each episode is its own learning problem);
 *     R[i][j] is the mean over episodes; alone[i]: a fresh learner (the same initialization)
 *     trained on task i only. The `batch` field of the config is not used. Same shots only.
 *   - Split-X: a fresh learner per RUN; n_outputs = 0 -> C (domain) or T·C (class).
 *     ctx_chunk is not used.
 * The calls reset the context (mcl_ctx_reset) between steps, like acl_eval.h, and need
 * gradients enabled (not inside an mcl_no_grad scope).
 *
 * Selection (mcl_baseline_select): a grid search on validation data, scored by the mean over
 * runs of the final average accuracy ACC (metrics.h). Default grid:
 *     SGD  lr ∈ {1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 1e-1}
 *     Adam lr ∈ {1e-6, 3e-6, 1e-5, 3e-5, 1e-4, 3e-4, 1e-3, 3e-3}
 *     (the small rates are for the full-data regime: hundreds of steps per task)
 *     epochs ∈ {1, 5, 10, 25}
 *     the method's own hyperparameter (mcl_baseline_method_grid):
 *         EWC, online EWC  λ ∈ {1, 10, 100, 1000, 10000}   (γ fixed)
 *         SI               c ∈ {0.01, 0.1, 1, 10, 100}       (ξ fixed)
 *         LwF              λ ∈ {0.1, 0.3, 1, 3, 10}          (T fixed)
 *         plain, replay    none (the buffer size is fixed)
 * visited lr-major (each lr with every epoch count, ascending, each with every value of the
 * method's hyperparameter, ascending); ties keep the earlier point.
 */
#ifndef MCL_MODELS_BASELINE_H
#define MCL_MODELS_BASELINE_H

#include <stddef.h>
#include <stdint.h>

#include "learner.h"
#include "protocols.h"
#include "metrics.h"
#include "optim.h"
#include "sampler.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MCL_BASELINE_MAX_BATCH 32
#define MCL_BASELINE_MAX_BUFFER 1000000 /* replay examples (4 KiB each) */

typedef enum mcl_baseline_method {
    MCL_BASELINE_PLAIN = 0, /* sequential fine-tuning ("sgd", "adam") */
    MCL_BASELINE_EWC,       /* "ewc"        */
    MCL_BASELINE_EWC_ONLINE,/* "ewc-online" */
    MCL_BASELINE_SI,        /* "si"         */
    MCL_BASELINE_LWF,       /* "lwf"        */
    MCL_BASELINE_REPLAY,    /* "replay"     */
    MCL_BASELINE_METHOD_COUNT
} mcl_baseline_method;

typedef enum mcl_baseline_regime {
    MCL_BASELINE_SHOTS = 0, /* exactly the examples the in-context learner sees       */
    MCL_BASELINE_FULL = 1   /* every training image of each task's classes (Split-X)  */
} mcl_baseline_regime;

typedef struct mcl_baseline_config {
    mcl_optim_kind optim; /* MCL_OPTIM_SGD or MCL_OPTIM_ADAM                        */
    float lr;             /* > 0                                                    */
    int epochs;           /* >= 1 passes over each task's training examples         */
    int batch_size;       /* 1..32 (0 -> 32)                                        */
    int conv_channels;    /* 0 -> 32 (the paper's Conv-4)                           */
    int image_size;       /* 0 -> 32; 16..32 (28: the paper's Omniglot side; images
                             via mcl_image_to_side, features C · s², conv4.h)       */
    uint64_t seed;        /* initialization, shuffling, replay draws                */
    /* the continual-learning method (fields of other methods are ignored) */
    mcl_baseline_method method;
    mcl_baseline_regime regime;
    float ewc_lambda;  /* EWC, online EWC: λ >= 0                                   */
    float ewc_gamma;   /* online EWC: γ in [0, 1]                                   */
    int fisher_max;    /* EWC, online EWC: examples of the Fisher (0 = all)         */
    float si_c;        /* SI: c >= 0                                                */
    float si_xi;       /* SI: ξ > 0                                                 */
    float lwf_lambda;  /* LwF: λ >= 0                                               */
    float lwf_t;       /* LwF: temperature T > 0                                    */
    int buffer;        /* replay: examples held, 1..MCL_BASELINE_MAX_BUFFER         */
    int replay_batch;  /* replay: rows added to each mini-batch, 0..32 (0 -> batch) */
} mcl_baseline_config;

/* SGD, lr 1e-2, 5 epochs, batch 32, 32 channels, seed 1, method PLAIN, same shots; the other
 * methods' defaults: EWC λ 100, online EWC γ 0.9, Fisher over all examples, SI c 1 and ξ 0.1,
 * LwF λ 1 and T 2, replay buffer 100 with replay batch = batch. */
void mcl_baseline_config_default(mcl_baseline_config *cfg);

/* "sgd", "adam" (PLAIN: by the optimizer), "ewc", "ewc-online", "si", "lwf", "replay". */
const char *mcl_baseline_method_name(mcl_baseline_method m, mcl_optim_kind optim);

/* Parse a spec "NAME[:KEY=VALUE,...]" (doc/acl.md, Baselines) into *out, which is first set to
 * the defaults of mcl_baseline_config_default with, for every method, lr 0.1 / 25 epochs under
 * SGD and lr 3e-3 / 5 epochs under Adam (the values selected on meta-validation data) unless
 * lr / epochs are given. NAME: sgd, adam, ewc, ewc-online, si, lwf, replay. Keys: lr, epochs,
 * batch, optim (sgd|adam; not for sgd/adam), regime (shots|full), and per method: lambda
 * (ewc, ewc-online, lwf), gamma (ewc-online), fisher (ewc, ewc-online), c, xi (si), T (lwf),
 * buffer, replay-batch (replay). The old form sgd|adam:LR:EPOCHS is accepted too.
 * MCL_ERR_INVALID with a message in err for an unknown name or key, a key of another method,
 * a malformed or out-of-range value; MCL_ERR_NULL for NULL arguments. */
mcl_status mcl_baseline_parse(const char *spec, mcl_baseline_config *out, char *err,
                              size_t errlen);

/* 1 when the spec names KEY explicitly ("lr", "epochs", "lambda", "c", ...; the old form
 * NAME:LR:EPOCHS names lr and epochs), else 0. For a spec mcl_baseline_parse accepted: `eval
 * --select` keeps the given values fixed and searches the others. */
int mcl_baseline_spec_gives(const char *spec, const char *key);

/* A readable name of a config, e.g. "EWC (lambda 100, SGD lr 0.1, 25 epochs)", into buf. */
void mcl_baseline_describe(const mcl_baseline_config *cfg, char *buf, size_t len);

/* The baseline as a learner of the protocols (learner.h): lanes 1, the head sized by the
 * protocol's outputs. Free with mcl_learner_free. */
mcl_status mcl_baseline_learner_create(mcl_ctx *ctx, const mcl_baseline_config *bcfg,
                                       mcl_learner **out);

/* Task sequences (see mcl_acl_eval_seq): *res as there. */
mcl_status mcl_baseline_eval_seq(mcl_ctx *ctx, const mcl_baseline_config *bcfg,
                                 const mcl_class_pool *pools, const mcl_seq_eval_cfg *cfg,
                                 mcl_cl_result *res);
/* Split-X (see mcl_acl_eval_splitx): *res as there (alone NaN). */
mcl_status mcl_baseline_eval_splitx(mcl_ctx *ctx, const mcl_baseline_config *bcfg,
                                    const mcl_dataset *train, const mcl_dataset *test,
                                    const mcl_splitx_eval_cfg *cfg, mcl_cl_result *res);

/* ======================================================================= selection */

/* Validation data: either task sequences (pools + seq) or a Split-X (train, test + splitx). */
typedef enum mcl_eval_kind { MCL_EVAL_SEQ = 0, MCL_EVAL_SPLITX = 1 } mcl_eval_kind;

typedef struct mcl_eval_data {
    mcl_eval_kind kind;
    const mcl_class_pool *pools;       /* MCL_EVAL_SEQ    */
    const mcl_seq_eval_cfg *seq;       /* MCL_EVAL_SEQ    */
    const mcl_dataset *train, *test;   /* MCL_EVAL_SPLITX */
    const mcl_splitx_eval_cfg *splitx; /* MCL_EVAL_SPLITX */
} mcl_eval_data;

#define MCL_BASELINE_GRID_MAX 256

typedef struct mcl_baseline_grid_point {
    float lr;
    int epochs;
    float hp;         /* the method's own hyperparameter (NaN: the method has none) */
    double score;     /* mean over runs of the final average accuracy ACC */
    double score_std; /* its std over runs                                 */
} mcl_baseline_grid_point;

typedef struct mcl_baseline_selection {
    int n;      /* points visited                                                     */
    int n_grid; /* the first n_grid are the grid's; the rest grew it past an edge     */
    int best;   /* index of the best point                                            */
    mcl_baseline_grid_point point[MCL_BASELINE_GRID_MAX];
} mcl_baseline_selection;

/* The default grid of an optimizer (pointers to static arrays; counts in *n_lr, *n_epochs).
 * MCL_ERR_INVALID for an optimizer other than SGD and Adam. */
mcl_status mcl_baseline_default_grid(mcl_optim_kind kind, const float **lrs, int *n_lr,
                                     const int **epochs, int *n_epochs);

/* The default grid of a method's own hyperparameter (static array, count in *n) and its key
 * name ("lambda", "c"); *n = 0 and *name = NULL for PLAIN and REPLAY. MCL_ERR_INVALID for an
 * unknown method. */
mcl_status mcl_baseline_method_grid(mcl_baseline_method m, const float **vals, int *n,
                                    const char **name);
/* Set / read the method's own hyperparameter (λ of EWC, online EWC and LwF; c of SI). */
void mcl_baseline_set_hp(mcl_baseline_config *c, float v);
float mcl_baseline_get_hp(const mcl_baseline_config *c); /* NaN when the method has none */

/* Grid search: every (lr, epochs, method hyperparameter) of the grid with the other fields of
 * *base (optim kind, method, batch size, channels, seed, ...) on `val`. lrs/epochs NULL = the
 * default grid of base->optim; the method's values = mcl_baseline_method_grid
 * (n_lr · n_epochs · n_hp <= MCL_BASELINE_GRID_MAX). Then the grid grows: while the best point
 * sits at the largest or smallest value visited on an axis the grid gave two or more values
 * for, the best point moved one step further on that axis (mcl_baseline_grid_next) is visited,
 * until the best is inside, the axis' ladder ends or MCL_BASELINE_GRID_MAX points are spent.
 * On success *best = *base with the best values, and sel (may be NULL) lists every point. */
mcl_status mcl_baseline_select(mcl_ctx *ctx, const mcl_baseline_config *base,
                               const mcl_eval_data *val, const float *lrs, int n_lr,
                               const int *epochs, int n_epochs, mcl_baseline_config *best,
                               mcl_baseline_selection *sel);
/* The grid's next value past v (axis 0 lr, 1 epochs, 2 the method's value) in direction dir
 * (+1 / -1) into *next: the 1-3 ladder for lr (1e-7..1) and the method's value (1e-4..1e6, never
 * from 0), doubling / halving for epochs (1..200). Returns 0 where the ladder ends. */
int mcl_baseline_grid_next(int axis, double v, int dir, double *next);
/* The same with an explicit grid of the method's hyperparameter (hps NULL = its default;
 * ignored, one point, for a method without one). */
mcl_status mcl_baseline_select_hp(mcl_ctx *ctx, const mcl_baseline_config *base,
                                  const mcl_eval_data *val, const float *lrs, int n_lr,
                                  const int *epochs, int n_epochs, const float *hps, int n_hp,
                                  mcl_baseline_config *best, mcl_baseline_selection *sel);

#ifdef __cplusplus
}
#endif
#endif
