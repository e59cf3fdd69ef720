/* acl.h — the ACL model (SPEC-ACL §2–3): Conv-4 feature extractor, label input, L layers of
 * [SRWM layer, feed-forward block] and a linear head on the last step.
 *
 * Sequences: images [B·L, C_in, S, S] and labels [B·L] with row b·L + t = step t of sequence b
 * (the layout of mcl_task_batch). Label value n_way is the "unknown" token (queries).
 *
 * State: per layer the four SRWM fast-weight tensors {W_y, W_q, W_k [B,H,D,D], w_b [B,H,D,4]}.
 * A NULL state_in starts every sequence from the shared parameters (mcl_repeat_batch). The
 * returned state holds references to the graph tensors (never detached), so a later call in the
 * same step backpropagates into the earlier one; free it with mcl_acl_state_free.
 */
#ifndef MCL_MODELS_ACL_H
#define MCL_MODELS_ACL_H

#include <stdint.h>

#include "metacl.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum mcl_acl_feature_norm {
    MCL_ACL_FEATNORM_NONE = 0, /* paper-exact                                                  */
    MCL_ACL_FEATNORM_BATCH     /* per feature over the B·L images of the call (mean 0, var 1) */
} mcl_acl_feature_norm;

typedef struct mcl_acl_config {
    int n_way;          /* N output classes; label input has N+1 entries          */
    int hidden;         /* model width                                            */
    int heads;          /* SRWM heads (hidden % heads == 0)                       */
    int layers;         /* number of [SRWM layer, FF block]                       */
    int ff_mult;        /* FF inner width = ff_mult · hidden                      */
    float dropout;      /* drop probability everywhere (0.1 in the paper)         */
    int conv_channels;  /* Conv-4 channels (32)                                   */
    int image_size;     /* S (32); must be a multiple of 16                       */
    int in_channels;    /* image channels (1 for our grayscale data; paper 3)     */
    int feature_norm;   /* mcl_acl_feature_norm                                   */
    uint64_t seed;      /* init seed (Philox; one stream per parameter tensor)    */
} mcl_acl_config;

/* Paper sizes (hidden 256, 16 heads, 2 layers, FF ×2, dropout 0.1, 32 channels, 32×32) with
 * n_way 5, in_channels 1, feature_norm none, seed 1. */
void mcl_acl_config_default(mcl_acl_config *cfg);

typedef struct mcl_acl_layer {
    mcl_tensor *Wy, *Wq, *Wk, *wb; /* [H,D,D] ×3, [H,D,4]      */
    mcl_tensor *ln_g, *ln_b;       /* skip-path LayerNorm       */
    mcl_tensor *Wo;                /* [hidden, hidden], no bias */
    mcl_tensor *ff_ln_g, *ff_ln_b;
    mcl_tensor *W1, *b1, *W2, *b2;
} mcl_acl_layer;

typedef struct mcl_acl {
    mcl_acl_config cfg;
    mcl_ctx *ctx;
    mcl_params *params; /* owns every parameter tensor */
    int training;       /* dropout on (1, default) or off (0) */
    int head_dim;       /* D = hidden / heads */
    int n_features;     /* conv_channels · (S/16)² */
    mcl_tensor *conv_w[4], *conv_b[4], *norm_g[4], *norm_b[4];
    mcl_tensor *in_w, *in_b;   /* [F + N + 1, hidden], [hidden] */
    mcl_acl_layer *layer;      /* [layers] */
    mcl_tensor *head_w, *head_b; /* [hidden, N], [N] */
} mcl_acl;

typedef struct mcl_acl_state {
    int layers;
    int64_t batch;
    mcl_tensor **t; /* layers·4 tensors: layer l's {W_y, W_q, W_k, w_b} at 4l..4l+3 */
} mcl_acl_state;

/* Create and initialize a model on ctx. Returns NULL (error in ctx) on a bad config. */
mcl_acl *mcl_acl_create(mcl_ctx *ctx, const mcl_acl_config *cfg);
void mcl_acl_free(mcl_acl *m);
void mcl_acl_set_training(mcl_acl *m, int training);
mcl_params *mcl_acl_params(mcl_acl *m);

/* One stateful call (SPEC-ACL §4). images [B·L, C_in, S, S]; labels_in [B·L] (class index as
 * float, n_way = unknown); state_in NULL = fresh from the parameters. On success *logits is a
 * temporary [B, N] (the last step of each sequence) and, if state_out is not NULL, *state_out a
 * new state (free with mcl_acl_state_free). ctx must be the model's context. */
mcl_status mcl_acl_forward(mcl_acl *m, mcl_ctx *ctx, mcl_tensor *images, mcl_tensor *labels_in,
                           int64_t B, int64_t L, const mcl_acl_state *state_in,
                           mcl_tensor **logits, mcl_acl_state **state_out);

void mcl_acl_state_free(mcl_acl_state *s);
/* A detached copy of s (references to the same data, cut from the graph), e.g. to carry a
 * state across mcl_ctx_reset at evaluation time. NULL on error. */
mcl_acl_state *mcl_acl_state_detach(const mcl_acl_state *s);

#ifdef __cplusplus
}
#endif
#endif
