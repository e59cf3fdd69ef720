/* learner.h — the learner interface of the evaluation protocols (protocols.h).
 *
 * A learner is anything that can be handed labelled examples and asked for predictions: the
 * ACL model learning in context (src/models/acl/acl_learner.c), the hand-crafted baselines
 * trained by gradient descent (baseline.c), and, later, Sparse Meta Networks and the online
 * transformers. The protocols (task sequences, Split-X) drive every learner through the same
 * loops and count hits the same way, so their tables are comparable by construction.
 *
 * A learner solves `lanes` independent learning problems side by side (the ACL model runs B
 * task sequences in one batch; the baselines one problem at a time, lanes = 1). Host row
 * arrays are lane-major: row b·n + t is example t of lane b.
 *
 *   begin(scope)   once before a protocol (ACL: gradients and dropout off; baselines: none)
 *   reset          start `lanes` fresh problems from the learner's initial state; (run,
 *                  episode) name the first problem (lane b is episode + b), so learners
 *                  with randomness (initialization, shuffles) key it on them
 *   observe        learn task `task` from n labelled examples per lane
 *   predict        logits [lanes·n, n_logits] for n query images per lane (host floats)
 *   end            once after the protocol
 */
#ifndef MCL_LEARN_LEARNER_H
#define MCL_LEARN_LEARNER_H

#include <stdint.h>

#include "dataset.h"
#include "metacl.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How a protocol presents its data (the same for every learner of one evaluation). */
typedef struct mcl_learn_opts {
    int normalize;       /* pixels standardized with the dataset's mean/std (mcl_batch_rows) */
    int64_t query_chunk; /* most rows of one prediction call                                */
    int64_t ctx_chunk;   /* most steps of one observation call (0 = a whole task at once)    */
} mcl_learn_opts;

typedef struct mcl_learner mcl_learner;

typedef struct mcl_learner_ops {
    const char *kind; /* "acl", "sgd", "adam", ... */
    mcl_status (*begin)(mcl_learner *L);
    void (*end)(mcl_learner *L);
    /* n_outputs: the outputs the protocol competes (the learner's logits may be more). */
    mcl_status (*reset)(mcl_learner *L, int lanes, int n_outputs, int64_t run, int64_t episode);
    mcl_status (*observe)(mcl_learner *L, int task, const mcl_dataset *ds, const int64_t *idx,
                          const int32_t *lab, int64_t n, const mcl_learn_opts *o);
    mcl_status (*predict)(mcl_learner *L, const mcl_dataset *ds, const int64_t *idx, int64_t n,
                          const mcl_learn_opts *o, float *logits);
    void (*destroy)(mcl_learner *L);
} mcl_learner_ops;

struct mcl_learner {
    const mcl_learner_ops *ops;
    mcl_ctx *ctx;
    int max_lanes;   /* most problems side by side (>= 1)                              */
    int max_outputs; /* most outputs it can give (0 = any: its head is sized by reset) */
    int n_logits;    /* logits per row of predict (after reset)                        */
    int lanes;       /* lanes of the current problems (after reset)                    */
    void *impl;
};

/* Free a learner (NULL is fine). */
void mcl_learner_free(mcl_learner *L);

/* For learners: the status to return after a call that failed — the context's when it holds
 * an error (the root cause), else MCL_ERR_BACKEND with "<who>: <what> failed". */
mcl_status mcl_learner_fail(mcl_ctx *ctx, const char *who, const char *what);

/* For learners: images [rows,1,32,32] (+ labels [rows] when lab_out) from host index/label
 * arrays (mcl_batch_rows); `who` names the caller in messages. */
mcl_status mcl_learner_rows(mcl_ctx *ctx, const char *who, const mcl_dataset *ds,
                            const int64_t *idx, const int32_t *lab, int64_t rows, int normalize,
                            mcl_tensor **img, mcl_tensor **lab_out);
/* The same at the model's image side S (1..32): images [rows,1,S,S] (mcl_image_to_side). */
mcl_status mcl_learner_rows_side(mcl_ctx *ctx, const char *who, const mcl_dataset *ds,
                                 const int64_t *idx, const int32_t *lab, int64_t rows,
                                 int side, int normalize, mcl_tensor **img, mcl_tensor **lab_out);

#ifdef __cplusplus
}
#endif
#endif
