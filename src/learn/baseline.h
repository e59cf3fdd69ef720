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
 * context examples of the task; Split-X: the task's C·K examples), `epochs` passes per task,
 * each pass over a fresh shuffle (Philox) in mini-batches of at most batch_size (32) rows,
 * loss = mean cross-entropy over the n_outputs logits, one optimizer for the whole sequence
 * (Adam moments are kept across tasks: plain sequential fine-tuning). Plain SGD (no momentum,
 * no weight decay) or Adam (β 0.9/0.999, eps 1e-8), constant learning rate.
 *
 * Evaluation: the protocols of acl_eval.h, with the same configs and the same episode draws
 * for the same seed: after training on task i, the accuracy on every task j <= i gives
 * R[i][j] (no gradients; prediction = argmax over the n_outputs logits).
 *   - task sequences: a fresh learner per EPISODE (each episode is its own learning problem);
 *     R[i][j] is the mean over episodes; alone[i]: a fresh learner (the same initialization)
 *     trained on task i only. The `batch` field of the config is not used.
 *   - Split-X: a fresh learner per RUN; n_outputs = 0 -> C (domain) or T·C (class).
 *     ctx_chunk is not used.
 * The calls reset the context (mcl_ctx_reset) between steps, like acl_eval.h, and need
 * gradients enabled (not inside an mcl_no_grad scope).
 *
 * Selection (mcl_baseline_select): a grid search on validation data, scored by the mean over
 * runs of the final average accuracy ACC (metrics.h). Default grid:
 *     SGD  lr ∈ {1e-3, 3e-3, 1e-2, 3e-2, 1e-1}
 *     Adam lr ∈ {1e-4, 3e-4, 1e-3, 3e-3}
 *     epochs ∈ {1, 5, 10, 25}
 * visited lr-major (each lr with every epoch count, ascending); ties keep the earlier point
 * (the smaller lr, then the fewer epochs).
 */
#ifndef MCL_MODELS_BASELINE_H
#define MCL_MODELS_BASELINE_H

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

typedef struct mcl_baseline_config {
    mcl_optim_kind optim; /* MCL_OPTIM_SGD or MCL_OPTIM_ADAM                        */
    float lr;             /* > 0                                                    */
    int epochs;           /* >= 1 passes over each task's training examples         */
    int batch_size;       /* 1..32 (0 -> 32)                                        */
    int conv_channels;    /* 0 -> 32 (the paper's Conv-4)                           */
    int image_size;       /* 0 -> 32; 16..32 (28: the paper's Omniglot side; images
                             via mcl_image_to_side, features C · s², conv4.h)       */
    uint64_t seed;        /* initialization and shuffling                           */
} mcl_baseline_config;

/* SGD, lr 1e-2, 5 epochs, batch 32, 32 channels, seed 1. */
void mcl_baseline_config_default(mcl_baseline_config *cfg);

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

#define MCL_BASELINE_GRID_MAX 64

typedef struct mcl_baseline_grid_point {
    float lr;
    int epochs;
    double score;     /* mean over runs of the final average accuracy ACC */
    double score_std; /* its std over runs                                 */
} mcl_baseline_grid_point;

typedef struct mcl_baseline_selection {
    int n;    /* points visited */
    int best; /* index of the best point */
    mcl_baseline_grid_point point[MCL_BASELINE_GRID_MAX];
} mcl_baseline_selection;

/* The default grid of an optimizer (pointers to static arrays; counts in *n_lr, *n_epochs).
 * MCL_ERR_INVALID for an optimizer other than SGD and Adam. */
mcl_status mcl_baseline_default_grid(mcl_optim_kind kind, const float **lrs, int *n_lr,
                                     const int **epochs, int *n_epochs);

/* Grid search: every (lr, epochs) of the grid with the other fields of *base (optim kind,
 * batch size, channels, seed) on `val`. lrs/epochs NULL = the default grid of base->optim
 * (n_lr · n_epochs <= MCL_BASELINE_GRID_MAX). On success *best = *base with the best lr and
 * epochs, and sel (may be NULL) lists every point. */
mcl_status mcl_baseline_select(mcl_ctx *ctx, const mcl_baseline_config *base,
                               const mcl_eval_data *val, const float *lrs, int n_lr,
                               const int *epochs, int n_epochs, mcl_baseline_config *best,
                               mcl_baseline_selection *sel);

#ifdef __cplusplus
}
#endif
#endif
