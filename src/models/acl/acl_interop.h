/* acl_interop.h — ACL parameters as safetensors files with the names and layouts of the
 * authors' PyTorch code (public API). The table of every name is in doc/interop.md.
 *
 * The official model is the "compat_stateful_srwm" model of the authors' code
 * (CompatStatefulConvSRWMModel) built with use_instance_norm (affine InstanceNorm2d in the
 * Conv-4 blocks, as ours) and extra_label (N + 1 label inputs, the last one "unknown", as
 * ours). Its state_dict names, e.g. conv_layers.0.0.weight, input_proj.weight,
 * layers.0.W_y, layers.1.ff_layers.0.weight, out_layer.bias, are the tensor names of the
 * file; its layouts are the tensors' shapes:
 *   - linear weights (input_proj, out_linear, ff_layers.0/.3, out_layer) are PyTorch's
 *     nn.Linear [out, in]: OUR [in, out] TENSOR TRANSPOSED;
 *   - conv weights are [out, in, kh, kw] in both;
 *   - the SRWM matrices carry a leading axis of 1: [1, H, D, D] and [1, H, D, 4], indexed
 *     [0][h][in][out] like ours [h][in][out] (no transpose);
 *   - vectors (biases, norm gains and shifts) copy as they are.
 * With feature_norm = batch our two running-statistics vectors have no counterpart there;
 * they travel as feature_norm.running_mean / feature_norm.running_var (the names of an
 * nn.BatchNorm1d(F, affine=False) module called feature_norm; a PyTorch model without such
 * a module loads the file with strict=False, or drops the two).
 *
 * Export also writes the metadata "format" = "pt", MCL_ACL_ST_META_MODEL = "acl" and
 * MCL_ACL_ST_META_CONFIG = our config text (acl.h), so that import can rebuild the model from
 * the file alone; a file written by PyTorch has no such entry and import then needs the
 * config from elsewhere.
 */
#ifndef MCL_MODELS_ACL_INTEROP_H
#define MCL_MODELS_ACL_INTEROP_H

#include <stddef.h>

#include "acl.h"
#include "safetensors.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MCL_ACL_ST_META_MODEL "metacl.model"
#define MCL_ACL_ST_META_CONFIG "metacl.config"

/* The official name of our parameter `ours` (a name acl.h lists) for a model of config cfg,
 * and how its values move: *transpose = 1 for the linear weights ([in, out] <-> [out, in]),
 * *lead1 = 1 for the SRWM tensors (a leading axis of 1). MCL_ERR_INVALID for a name the model
 * does not have. */
mcl_status mcl_acl_official_name(const mcl_acl_config *cfg, const char *ours, char *official,
                                 size_t official_len, int *transpose, int *lead1);

/* Every parameter of m under its official name and layout, plus the metadata above.
 * *out: free with mcl_st_free. */
mcl_status mcl_acl_to_safetensors(mcl_acl *m, mcl_safetensors **out, char *err, size_t len);

/* Write m's parameters into the set's tensors: the set must hold exactly the official names
 * of m's config (a missing or an extra name is MCL_ERR_INVALID, naming it), each with the
 * official shape (else MCL_ERR_SHAPE, giving both shapes). Nothing is written to m unless
 * every tensor checks out. */
mcl_status mcl_acl_from_safetensors(mcl_acl *m, const mcl_safetensors *st, char *err, size_t len);

/* The config export stored in the set's metadata (MCL_ERR_INVALID when there is none, or when
 * the set is marked as another model; a bad config text is MCL_ERR_FORMAT). */
mcl_status mcl_acl_config_from_safetensors(const mcl_safetensors *st, mcl_acl_config *cfg, char *err,
                                           size_t len);

/* File forms. Export writes atomically. Import reads `path`, takes the config from cfg (NULL:
 * the file's metadata), checks that the file holds as many values as that config needs before
 * building anything, then builds the model on ctx (*out; free with mcl_acl_free) and loads it. */
mcl_status mcl_acl_export_safetensors(mcl_acl *m, const char *path, char *err, size_t len);
mcl_status mcl_acl_import_safetensors(mcl_ctx *ctx, const char *path, const mcl_acl_config *cfg,
                                      mcl_acl **out, char *err, size_t len);

#ifdef __cplusplus
}
#endif
#endif
