/* acl_eval.h — evaluation of a (meta-trained) ACL model: the protocols of doc/acl.md, Evaluation
 * (public API; the `metacl eval acl` command is built on it).
 *
 * Common rules of every function here:
 *   - gradients off (an mcl_no_grad_begin/end scope) and the model in eval mode
 *     (mcl_acl_set_training(m, 0): no dropout); the previous training flag is restored on
 *     return, the parameters are never written;
 *   - mcl_ctx_reset(ctx) is called between model calls (every temporary of ctx not kept by
 *     the caller is freed and the tape is cleared — do not call these inside a training step).
 *     States are carried across resets with mcl_acl_state_detach;
 *   - memory is bounded: a query call holds at most query_chunk rows (sequences × queries,
 *     default MCL_EVAL_QUERY_CHUNK); a context call holds B sequences × the task's context;
 *   - any backend (the model's context decides);
 *   - images are the grayscale rows of mcl_batch_rows at the model's image_size (32 = the
 *     stored canvas; smaller, e.g. 28: mcl_image_to_side): image_size <= 32, in_channels 1;
 *   - errors return a status with the message in ctx (mcl_ctx_error; the context keeps the
 *     last error, tensor.h); a stale error still held is taken as this call's failure, so
 *     clear stale errors before calling.
 *
 * Prediction = argmax over logits 0..n_outputs-1 (ties: the lowest index). n_outputs may be
 * smaller than the model's n_way: e.g. a 5-way meta-trained model evaluated on 2-way
 * domain-incremental Split-X only competes its first 2 outputs. The model's n_way must be
 * >= n_outputs (else MCL_ERR_INVALID naming both).
 *
 * feature_norm = batch models with feature_stats = call normalize features over the rows of
 * each call, so their results depend on how rows are grouped into calls: here a context call
 * is one task of B sequences (as in training) and a query call is one chunk. The running
 * estimates (feature_stats = running), per-sequence context statistics (context) and
 * feature_norm = none (paper) do not depend on the grouping (up to float rounding).
 */
#ifndef MCL_MODELS_ACL_EVAL_H
#define MCL_MODELS_ACL_EVAL_H

#include <stdint.h>

#include "acl.h"
#include "metrics.h"
#include "protocols.h"
#include "sampler.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The model as a learner of the protocols (learner.h): in-context learning from W0, up to
 * max_lanes sequences per model call (0 = no limit; the protocols' batch decides). Free with
 * mcl_learner_free; the model must outlive it. */
mcl_status mcl_acl_learner_create(mcl_acl *m, mcl_ctx *ctx, int max_lanes, mcl_learner **out);
/* The same from a checkpoint file; the learner owns the model (freed with it). */
mcl_status mcl_acl_learner_open(mcl_ctx *ctx, const char *path, int max_lanes, mcl_learner **out,
                                char *err, size_t err_len);

/* Evaluate m on task sequences drawn from pools[0..n_tasks-1] (mcl_eval_seq with the model's
 * learner). On success *res is initialized
 * (n_tasks, n_runs; acc[j > i] NaN; alone filled unless skip_alone) and summarized; free it
 * with mcl_cl_result_free. On error *res is zeroed. Errors: bad config, model n_way <
 * n_outputs, a pool with too few classes or a class with too few images (the sampler's
 * message), model/backend errors. */
mcl_status mcl_acl_eval_seq(mcl_acl *m, mcl_ctx *ctx, const mcl_class_pool *pools,
                            const mcl_seq_eval_cfg *cfg, mcl_cl_result *res);

/* Evaluate m on Split-X. *res as for mcl_acl_eval_seq (alone stays NaN). */
mcl_status mcl_acl_eval_splitx(mcl_acl *m, mcl_ctx *ctx, const mcl_dataset *train,
                               const mcl_dataset *test, const mcl_splitx_eval_cfg *cfg,
                               mcl_cl_result *res);

/* ======================================================================= fast weights
 * (heat maps, paper Fig. 3-4)
 *
 * Feed one demo sequence (B = 1) of n_steps labelled examples (index[t] into ds, label[t])
 * from W0 and copy the SRWM fast weights of (layer, head) after each requested step: at[k]
 * examples consumed (0 = W0 itself), strictly increasing, each in [0, n_steps]. The context
 * is run in calls between recording points (at most MCL_EVAL_QUERY_CHUNK steps per call),
 * with the state carried. Matrices are stored as the state holds them, [e][m] row-major
 * (e = input index, m = output index; transpose for the paper's W ∈ R^{out×in}). */
typedef struct mcl_acl_fw_trace {
    int layer, head;
    int D;           /* head size                                       */
    int n;           /* recordings                                      */
    int64_t *step;   /* [n] the at[] values                             */
    float *Wy;       /* [n·D·D]; recording k at k·D·D                   */
    float *Wq;       /* [n·D·D]                                         */
    float *Wk;       /* [n·D·D]                                         */
    float *wb;       /* [n·D·4]; recording k at k·D·4                   */
} mcl_acl_fw_trace;

mcl_status mcl_acl_record_fast_weights(mcl_acl *m, mcl_ctx *ctx, const mcl_dataset *ds,
                                       const int64_t *index, const int32_t *label,
                                       int64_t n_steps, const int64_t *at, int n_at, int layer,
                                       int head, int normalize, mcl_acl_fw_trace *out);
void mcl_acl_fw_trace_free(mcl_acl_fw_trace *t);

#ifdef __cplusplus
}
#endif
#endif
