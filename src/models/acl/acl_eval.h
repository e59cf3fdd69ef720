/* acl_eval.h — evaluation of a (meta-trained) ACL model: the protocols of SPEC-ACL §5
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
 *   - images are the 32×32 grayscale rows of mcl_batch_rows: the model must have
 *     image_size 32 and in_channels 1;
 *   - errors return a status with the message in ctx (mcl_ctx_error; the context keeps the
 *     last error, tensor.h); a stale error still held is taken as this call's failure, so
 *     clear stale errors before calling.
 *
 * Prediction = argmax over logits 0..n_outputs-1 (ties: the lowest index). n_outputs may be
 * smaller than the model's n_way: e.g. a 5-way meta-trained model evaluated on 2-way
 * domain-incremental Split-X only competes its first 2 outputs. The model's n_way must be
 * >= n_outputs (else MCL_ERR_INVALID naming both).
 *
 * feature_norm = batch models normalize features over the rows of each call, so their results
 * depend on how rows are grouped into calls: here a context call is one task of B sequences
 * (as in training) and a query call is one chunk. feature_norm = none (paper) does not
 * depend on the grouping (up to float rounding).
 */
#ifndef MCL_MODELS_ACL_EVAL_H
#define MCL_MODELS_ACL_EVAL_H

#include <stdint.h>

#include "acl.h"
#include "metrics.h"
#include "sampler.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MCL_EVAL_QUERY_CHUNK 256 /* default max rows of one query call   */
#define MCL_EVAL_BATCH 16        /* default episodes per call (task sequences) */

/* ======================================================================= task sequences
 * (paper Tables 1, 2, 9; SPEC-ACL §5 first item)
 *
 * Run r (0..n_runs-1) draws n_episodes episodes from Philox (seed, stream r) with
 * mcl_episode_sample (pools[i] for task i; no first-shot examples). The draw does not depend
 * on `batch`, and the baselines (baseline.h) draw the same episodes for the same seed. For
 * each episode (B at a time, one batch of sequences per model call):
 *     S = W0 (the parameters)
 *     for i = 0..T-1:  S = run(context of task i | S)        (N·K labelled examples)
 *                      for j = 0..i: queries of task j from S -> hits for R[i][j]
 * ("A after A" = R[0][0], "B after A→B" = R[1][1], "A after A→B" = R[1][0]). A query is a
 * length-1 call with the unknown label (mcl_acl_query; its own update is discarded).
 * Alone ("B" column of the tables): for i >= 1, S = run(context of task i | W0), queries of
 * task i; alone[0] = R[0][0] (the same computation).
 * Accuracy of a cell = correct queries / (n_episodes · N · n_query): the mean over episodes. */
typedef struct mcl_seq_eval_cfg {
    int n_way;             /* N >= 1                                                        */
    int k_shot;            /* K >= 1 context examples per class                             */
    int n_query;           /* queries per class and task (0 -> 1, SPEC-ACL §4)              */
    int n_tasks;           /* T, 1..MCL_ACL_MAX_TASKS (the tables: 1..4)                    */
    int n_runs;            /* runs (>= 1; SPEC-ACL §5: 5 sets of test episodes)             */
    int n_episodes;        /* episodes per run (>= 1)                                       */
    int batch;             /* episodes per model call (0 -> MCL_EVAL_BATCH); ACL only        */
    int share_classes;     /* as mcl_episode_cfg (0: tasks of one dataset use disjoint classes) */
    int class_incremental; /* as mcl_episode_cfg: task i's labels shifted by N·i            */
    int n_outputs;         /* 0 -> N (N·T when class_incremental)                            */
    int skip_alone;        /* 1: do not measure the alone column (left NaN)                 */
    int normalize;         /* pixels normalized with the dataset mean/std (mcl_batch_rows)  */
    int query_chunk;       /* 0 -> MCL_EVAL_QUERY_CHUNK                                     */
    uint64_t seed;         /* episode draws                                                 */
} mcl_seq_eval_cfg;

/* Evaluate m on task sequences drawn from pools[0..n_tasks-1]. On success *res is initialized
 * (n_tasks, n_runs; acc[j > i] NaN; alone filled unless skip_alone) and summarized; free it
 * with mcl_cl_result_free. On error *res is zeroed. Errors: bad config, model n_way <
 * n_outputs, a pool with too few classes or a class with too few images (the sampler's
 * message), model/backend errors. */
mcl_status mcl_acl_eval_seq(mcl_acl *m, mcl_ctx *ctx, const mcl_class_pool *pools,
                            const mcl_seq_eval_cfg *cfg, mcl_cl_result *res);

/* ======================================================================= Split-X
 * (SPEC-ACL §5, paper Tables 3, 7; mcl_splitx in sampler.h)
 *
 * Run r uses mcl_splitx_create(train, test, split with .run = first_run + r). The context is
 * ONE sequence (B = 1): the training examples of task 0, then task 1, ... in the round-robin
 * order mcl_splitx gives, with their ctx_label labels (domain: 0..C-1; class: t·C + j). It is
 * fed task by task (each task one call, or calls of at most ctx_chunk steps) with the state
 * carried; after task i every test image of every task j <= i is a query from that state:
 * R[i][j] = correct / (test images of task j). The last row is the paper's protocol
 * (final_only = 1 measures only it: faster, rows < T-1 stay NaN, so BWT and F are NaN).
 * Outputs: n_outputs = 0 -> domain-incremental: C (the first C logits of the model);
 * class-incremental: all of the model's n_way outputs (SPEC-ACL §5: "argmax over all
 * outputs"; the model needs n_way >= T·C). Given explicitly, n_outputs must be >= the number
 * of labels (C or T·C) and <= the model's n_way. */
typedef struct mcl_splitx_eval_cfg {
    mcl_splitx_cfg split; /* tasks, classes per task, K, mode, class list, shuffle; .run ignored */
    int first_run;        /* >= 0                                                             */
    int n_runs;           /* >= 1 (the paper: 10)                                             */
    int n_outputs;        /* see above                                                        */
    int final_only;       /* 1: only R[T-1][*]                                                */
    int normalize;        /* pixels normalized with the dataset mean/std                      */
    int query_chunk;      /* 0 -> MCL_EVAL_QUERY_CHUNK                                        */
    int ctx_chunk;        /* max context steps per call; 0 = a whole task per call (ACL only) */
} mcl_splitx_eval_cfg;

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

/* ======================================================================= shared helpers
 * (also used by baseline.c) */

/* Number of rows r with argmax over logits[r·n_logits + 0 .. n_outputs-1] == labels[r]
 * (ties: the lowest index). 1 <= n_outputs <= n_logits. */
int64_t mcl_eval_count_hits(const float *logits, int64_t rows, int64_t n_logits, int n_outputs,
                            const int32_t *labels);

/* Check a task-sequence config against its pools and resolve its defaults into *out
 * (n_query, batch, n_outputs, query_chunk). Errors in ctx. */
mcl_status mcl_seq_eval_resolve(mcl_ctx *ctx, const mcl_class_pool *pools,
                                const mcl_seq_eval_cfg *cfg, mcl_seq_eval_cfg *out);
/* Check a Split-X config (not yet the data: mcl_splitx_create does that per run) and resolve
 * query_chunk. n_outputs is left as given (its default depends on the model). */
mcl_status mcl_splitx_eval_resolve(mcl_ctx *ctx, const mcl_dataset *train,
                                   const mcl_dataset *test, const mcl_splitx_eval_cfg *cfg,
                                   mcl_splitx_eval_cfg *out);

#ifdef __cplusplus
}
#endif
#endif
