/* protocols.h — the evaluation protocols of continual learning over any learner
 * (learner.h): task sequences (in-context / few-shot continual learning, paper Tables 1, 2, 9)
 * and Split-X (Split-MNIST / Split-FashionMNIST, domain- or class-incremental, Tables 3, 7).
 *
 * Common rules:
 *   - the learner decides the scope (ACL: gradients and dropout off; the baselines train with
 *     gradients) and resets the context (mcl_ctx_reset) between its calls: do not call these
 *     inside a training step;
 *   - memory is bounded: a prediction call holds at most query_chunk rows;
 *   - images are the 32×32 grayscale rows of mcl_batch_rows;
 *   - errors return a status with the message in the learner's context (mcl_ctx_error).
 *
 * Prediction = argmax over logits 0..n_outputs-1 (ties: the lowest index). n_outputs may be
 * smaller than the learner's logits: e.g. a 5-way meta-trained model evaluated on 2-way
 * domain-incremental Split-X only competes its first 2 outputs.
 */
#ifndef MCL_LEARN_PROTOCOLS_H
#define MCL_LEARN_PROTOCOLS_H

#include <stdint.h>

#include "learner.h"
#include "metrics.h"
#include "sampler.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MCL_EVAL_MAX_TASKS 16 /* tasks of one sequence (= MCL_ACL_MAX_TASKS) */
#define MCL_EVAL_QUERY_CHUNK 256 /* default max rows of one query call   */
#define MCL_EVAL_BATCH 16        /* default episodes per call (task sequences) */

/* ======================================================================= task sequences
 * (paper Tables 1, 2, 9; doc/acl.md, Evaluation first item)
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
    int n_query;           /* queries per class and task (0 -> 1, doc/acl-model.md §3)              */
    int n_tasks;           /* T, 1..MCL_EVAL_MAX_TASKS (the tables: 1..4)                    */
    int n_runs;            /* runs (>= 1; doc/acl.md, Evaluation: 5 sets of test episodes)             */
    int n_episodes;        /* episodes per run (>= 1)                                       */
    int batch;             /* problems side by side (0 -> MCL_EVAL_BATCH; at most the learner's lanes) */
    int share_classes;     /* as mcl_episode_cfg (0: tasks of one dataset use disjoint classes) */
    int class_incremental; /* as mcl_episode_cfg: task i's labels shifted by N·i            */
    int n_outputs;         /* 0 -> N (N·T when class_incremental)                            */
    int skip_alone;        /* 1: do not measure the alone column (left NaN)                 */
    int normalize;         /* pixels normalized with the dataset mean/std (mcl_batch_rows)  */
    int query_chunk;       /* 0 -> MCL_EVAL_QUERY_CHUNK                                     */
    uint64_t seed;         /* episode draws                                                 */
    /* Optional: called after each run with the runs done so far (progress lines). */
    void (*on_run)(void *arg, int runs_done, int n_runs);
    void *on_run_arg;
} mcl_seq_eval_cfg;

/* Evaluate learner L on task sequences drawn from pools[0..n_tasks-1]. Problems run
 * min(batch, L->max_lanes) at a time. On success *res is initialized (n_tasks, n_runs;
 * acc[j > i] NaN; alone filled unless skip_alone) and summarized; free it with
 * mcl_cl_result_free. On error *res is zeroed. */
mcl_status mcl_eval_seq(mcl_learner *L, const mcl_class_pool *pools, const mcl_seq_eval_cfg *cfg,
                        mcl_cl_result *res);

/* ======================================================================= Split-X
 * (doc/acl.md, Evaluation, paper Tables 3, 7; mcl_splitx in sampler.h)
 *
 * Run r uses mcl_splitx_create(train, test, split with .run = first_run + r). The context is
 * ONE sequence (B = 1): the training examples of task 0, then task 1, ... in the round-robin
 * order mcl_splitx gives, with their ctx_label labels (domain: 0..C-1; class: t·C + j). It is
 * fed task by task (each task one call, or calls of at most ctx_chunk steps) with the state
 * carried; after task i every test image of every task j <= i is a query from that state:
 * R[i][j] = correct / (test images of task j). The last row is the paper's protocol
 * (final_only = 1 measures only it: faster, rows < T-1 stay NaN, so BWT and F are NaN).
 * Outputs: n_outputs = 0 -> domain-incremental: C (the first C logits of the model);
 * class-incremental: all of the model's n_way outputs (doc/acl.md, Evaluation: "argmax over all
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
    int ctx_chunk;        /* max context steps per observe call; 0 = a whole task per call  */
    void (*on_run)(void *arg, int runs_done, int n_runs); /* optional, as in mcl_seq_eval_cfg */
    void *on_run_arg;
} mcl_splitx_eval_cfg;

/* Evaluate learner L on Split-X (one problem per run: reset with (run, 0)). *res as for
 * mcl_eval_seq (alone stays NaN). n_outputs = 0: C (domain) or, class-incremental, all the
 * learner's outputs (T·C for a learner sized by reset). */
mcl_status mcl_eval_splitx(mcl_learner *L, const mcl_dataset *train, const mcl_dataset *test,
                           const mcl_splitx_eval_cfg *cfg, mcl_cl_result *res);

/* ======================================================================= shared helpers
 *  */

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
