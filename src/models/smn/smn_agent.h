/* smn_agent.h — a trained Sparse-MetaNet model as an agent a caller can drive step by step or
 * run through the evaluation protocol (`metacl eval smn`), for callers that hold only a handle
 * (the Python package's metacl.load of an smn checkpoint).
 */
#ifndef MCL_MODELS_SMN_AGENT_H
#define MCL_MODELS_SMN_AGENT_H

#include <stdint.h>

#include "smn.h"
#include "smn_train.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mcl_smn_model mcl_smn_model;

/* The model of an smn checkpoint (mcl_smn_open) with its run config; its fast weights start
 * at zero. */
mcl_status mcl_smn_model_open(mcl_ctx *ctx, const char *path, mcl_smn_model **out, char *err, size_t len);
void mcl_smn_model_free(mcl_smn_model *s);
/* The run's task (MCL_SMN_TASK_WCST, _ONLINEX, _CLASSES), the floats of one observation (the
 * mlp's in_dim, 12 for WCST; 32·32 for the resnet's images) and the actions / classes. */
int mcl_smn_model_task(const mcl_smn_model *s);
int64_t mcl_smn_model_obs_size(const mcl_smn_model *s);
int mcl_smn_model_n_out(const mcl_smn_model *s);
/* The policy of rows observations obs[rows·obs_size] with the current weights (slow + fast,
 * mode MCL_SMN_FAST_STEP): logits[rows·n_out]. Nothing is learned or recorded. */
mcl_status mcl_smn_model_act(mcl_smn_model *s, const float *obs, int64_t rows, float *logits, char *err,
                             size_t len);
/* Fast weights back to zero (a fresh learner on top of the trained slow weights). */
mcl_status mcl_smn_model_reset(mcl_smn_model *s, char *err, size_t len);
/* One run of `metacl eval smn --protocol wcst` for this checkpoint: a fresh environment of the
 * run's config seeded with `seed`, the agent going on from the checkpoint (agent
 * MCL_SMN_AGENT_ALG1: Algorithm 1 with its slow-weight optimizer at lr; FAST_ONLY: the fast
 * weights only), until max_tasks rules are solved or max_steps episodes. The per-task records
 * go to recs[cap] (*n of them). The model handle itself is not changed. */
mcl_status mcl_smn_model_run(mcl_smn_model *s, mcl_smn_agent agent, uint64_t seed, int max_tasks, int64_t max_steps,
                             float lr, mcl_smn_task_rec *recs, int cap, int *n, int64_t *updates, char *err,
                             size_t len);

#ifdef __cplusplus
}
#endif
#endif
