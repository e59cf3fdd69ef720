/* lm_text.h — a trained language model as a text tool: the bits per byte of a text and text
 * drawn from the model (`metacl sample lm`, the Python package's LM.score / LM.sample).
 *
 * mcl_lm_sample works on an open model (lm.h); mcl_lm_text bundles a model with the run config
 * of its checkpoint for callers that hold only a handle (language bindings).
 */
#ifndef MCL_MODELS_LM_TEXT_H
#define MCL_MODELS_LM_TEXT_H

#include <stdint.h>

#include "lm.h"
#include "lm_train.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Continue prompt[0..n_prompt-1] (n_prompt >= 1) by n bytes into out[n]: the prompt goes
 * through the model as one segment, then one byte at a time, the memory carrying the context
 * (fast weights: written every step, mode MCL_FAST_STEP; cleared first). Byte s is drawn from
 * softmax(logits / temperature) with the uniform number mcl_rng_uniform(seed, "LMSAMP", s);
 * temperature 0 takes the likeliest byte. No gradient is recorded; the model's memory lanes are
 * created and freed here. */
mcl_status mcl_lm_sample(mcl_lm *m, const uint8_t *prompt, int64_t n_prompt, int64_t n, float temperature,
                         uint64_t seed, uint8_t *out, char *err, size_t len);

typedef struct mcl_lm_text mcl_lm_text;

/* Open the model of an lm checkpoint (mcl_lm_open) with its run config. */
mcl_status mcl_lm_text_open(mcl_ctx *ctx, const char *path, mcl_lm_text **out, char *err, size_t len);
void mcl_lm_text_free(mcl_lm_text *t);
/* 1 when the model has fast weights (mode MCL_LM_SMN is possible). */
int mcl_lm_text_has_fast_weights(const mcl_lm_text *t);
/* The model itself (owned by t). */
mcl_lm *mcl_lm_text_model(mcl_lm_text *t);

/* -log2 p of bytes[0..n-1] read as one stream (one block of one domain), predicted a segment
 * at a time with the checkpoint's evaluation settings (its segment length; mode MCL_LM_SMN: its
 * evaluation write): *bits (total) over *chars predicted bytes. mode MCL_LM_DYNAMIC takes lr
 * and decay (lr <= 0: mcl_lm_eval_opts_default's 1e-4 and 0). The model's weights are put back
 * afterwards. n >= 2. */
mcl_status mcl_lm_text_score(mcl_lm_text *t, const uint8_t *bytes, int64_t n, mcl_lm_mode mode, float lr,
                             float decay, double *bits, int64_t *chars, char *err, size_t len);

#ifdef __cplusplus
}
#endif
#endif
