/* learner_api.h — the learner interface (learner.h) as plain functions, for callers that
 * cannot reach into its struct of function pointers: language bindings (python/metacl uses
 * these through ctypes) and programs that only hold an mcl_learner *.
 *
 * Each function checks its arguments, then calls the learner's own operation; the semantics
 * are those of learner.h (lane-major rows, logits [lanes·n, n_logits] on the host).
 */
#ifndef MCL_LEARN_LEARNER_API_H
#define MCL_LEARN_LEARNER_API_H

#include "learner.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Open the learner of the checkpoint at `path`, whatever its family (the model kind written in
 * the file picks the family of the family table): the same learner `metacl eval FAMILY`
 * builds. kind (may be NULL) receives the model kind. MCL_ERR_UNSUPPORTED when the family has
 * no learner (it is not evaluated by the protocols); the checkpoint's errors otherwise. */
mcl_status mcl_learner_open_ckpt(mcl_ctx *ctx, const char *path, int max_lanes, mcl_learner **out,
                                 char *kind, size_t kind_len, char *err, size_t err_len);

/* The model kind a checkpoint says it holds ("acl", "lm", ...) into kind[len], from its header
 * alone (mcl_ckpt_read_info). */
mcl_status mcl_ckpt_model_kind(const char *path, char *kind, size_t len, char *err, size_t err_len);

/* A hand-crafted baseline (baseline.h) as a learner, from the spec `metacl eval acl --baseline`
 * takes ("adam", "ewc:lambda=100,lr=0.01", ...; mcl_baseline_parse) and the seed of its
 * initialization, shuffles and replay draws (the CLI's --seed). */
mcl_status mcl_learner_open_baseline(mcl_ctx *ctx, const char *spec, uint64_t seed, mcl_learner **out,
                                     char *err, size_t err_len);

/* learner.h's operations. begin/end bracket a protocol (for the ACL model: gradients and
 * dropout off inside); reset starts `lanes` fresh problems; observe learns task `task` from n
 * labelled rows per lane (idx, lab: lanes·n entries into ds); predict writes lanes·n rows of
 * n_logits floats. normalize: standardize pixels with the set's statistics (what every
 * protocol of the CLI does); 0 for query_chunk and ctx_chunk = the protocols' defaults. */
mcl_status mcl_learner_begin(mcl_learner *L);
void mcl_learner_end(mcl_learner *L);
mcl_status mcl_learner_reset(mcl_learner *L, int lanes, int n_outputs, int64_t run, int64_t episode);
mcl_status mcl_learner_observe(mcl_learner *L, int task, const mcl_dataset *ds, const int64_t *idx,
                               const int32_t *lab, int64_t n, int normalize, int64_t ctx_chunk);
mcl_status mcl_learner_predict(mcl_learner *L, const mcl_dataset *ds, const int64_t *idx, int64_t n,
                               int normalize, int64_t query_chunk, float *logits);
/* The learner's kind ("acl", "sgd", ...), its lanes and logits per row after reset, its
 * largest number of lanes and of outputs (0 = any). */
const char *mcl_learner_kind(const mcl_learner *L);
int mcl_learner_lanes(const mcl_learner *L);
int mcl_learner_n_logits(const mcl_learner *L);
int mcl_learner_max_lanes(const mcl_learner *L);
int mcl_learner_max_outputs(const mcl_learner *L);

#ifdef __cplusplus
}
#endif
#endif
