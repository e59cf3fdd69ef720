/* params.h — the parameter registry of a model (public API).
 *
 * A model registers each trainable tensor once, under a unique name ("layer0.srwm.W_y").
 * Optimizers iterate the registry; checkpoints save and restore tensors by name.
 * The registry owns its tensors (they are freed by mcl_params_free).
 */
#ifndef MCL_PARAMS_H
#define MCL_PARAMS_H

#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mcl_params mcl_params;

mcl_params *mcl_params_create(mcl_ctx *ctx);
void mcl_params_free(mcl_params *p);

/* Create a zero-filled trainable tensor (requires grad) and register it under `name`.
 * Returns NULL (error in the context) on a duplicate or empty name or a bad shape. */
mcl_tensor *mcl_params_add(mcl_params *p, const char *name, int ndim, const int64_t *shape);

int mcl_params_count(const mcl_params *p);
mcl_tensor *mcl_params_get(const mcl_params *p, int i);
/* NULL if no parameter has that name. */
mcl_tensor *mcl_params_find(const mcl_params *p, const char *name);
/* Total number of scalar parameters. */
int64_t mcl_params_numel(const mcl_params *p);
/* Of those, the ones that require grad (trained; state tensors registered beside them not). */
int64_t mcl_params_numel_trainable(const mcl_params *p);
/* Copy into dst every tensor of src with the same name and shape (a warm start from another
 * model), skipping names that begin with one of skip[0..n_skip). *copied = how many. */
mcl_status mcl_params_copy_matching(mcl_params *dst, const mcl_params *src, const char *const *skip, int n_skip,
                                    int *copied);
/* Zero (or drop) every parameter's gradient. */
void mcl_params_zero_grad(mcl_params *p);

#ifdef __cplusplus
}
#endif
#endif
