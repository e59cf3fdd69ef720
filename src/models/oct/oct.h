/* oct.h — transformers trained online on a stream (paper 003_*, doc/oct-model.md): the
 * pi-transformer (labels as privileged information in the keys and values) and the 2-token
 * transformer (x and y as two tokens), over a feature extractor (Conv-4 or Conv-8), each
 * block keeping a KV ring buffer of the C most recent tokens; and, for the baselines, the
 * same extractor with a linear head and no transformer ("cnn").
 *
 * A stream of E readers (replay streams) keeps one ring per reader and block: mcl_oct_ring.
 */
#ifndef MCL_MODELS_OCT_H
#define MCL_MODELS_OCT_H

#include <stdint.h>

#include "conv4.h"
#include "conv8.h"
#include "metacl.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MCL_OCT_MAX_BLOCKS 16

enum { MCL_OCT_PI = 0, MCL_OCT_TWO_TOKEN = 1, MCL_OCT_CNN = 2 };
enum { MCL_OCT_CONV4 = 0, MCL_OCT_CONV8 = 1 };

typedef struct mcl_oct_config {
    int arch;          /* MCL_OCT_PI | MCL_OCT_TWO_TOKEN | MCL_OCT_CNN                       */
    int extractor;     /* MCL_OCT_CONV4 | MCL_OCT_CONV8                                      */
    int channels;      /* Conv-4 channels, or Conv-8's channel base c                         */
    int features;      /* Conv-8's fully connected width F                                    */
    int width;         /* D: the transformer's backbone width                                 */
    int blocks;        /* L                                                                   */
    int heads;         /* query heads Hq                                                      */
    int kv_heads;      /* key/value heads Hk (1 = multi-query; Hq = multi-head)               */
    int head_dim;      /* key, value and query width per head                                 */
    int ffw_mult;      /* FFW hidden width = ffw_mult · D                                     */
    int window;        /* C: tokens in each block's ring (0 = no attention to the past)       */
    float alibi;       /* ALiBi slope factor (0 = no positional information)                  */
    int pi_mask;       /* pi: 2 strictly causal (default); 1 the paper's diagonal zeroed after
                          the softmax (leaks y_t through the normalizer: doc/oct-model.md)   */
    int n_way;         /* label classes                                                       */
    int no_image;      /* 1: the ablation without the image (labels only)                     */
    int freeze_extractor; /* 1: the extractor keeps its initial weights                        */
    uint64_t seed;     /* initialization                                                      */
} mcl_oct_config;

typedef struct mcl_oct_block {
    mcl_tensor *ln_g, *ln_b, *wq, *wk, *wv, *wo, *up_w, *up_b, *down_w, *down_b;
    mcl_tensor *wk_bar, *wv_bar; /* pi: label projections [n_way, Hk·dk]                       */
} mcl_oct_block;

typedef struct mcl_oct {
    mcl_oct_config cfg;
    mcl_ctx *ctx;
    mcl_params *params;
    mcl_conv4 conv4;
    mcl_conv8 conv8;
    int64_t n_feat;              /* extractor output width                                     */
    mcl_tensor *in_w, *in_b;     /* x-token projection [F, D], [D]                              */
    mcl_tensor *y_emb;           /* 2-token: label embeddings [n_way, D]                        */
    mcl_oct_block blk[MCL_OCT_MAX_BLOCKS];
    mcl_tensor *lnf_g, *lnf_b, *head_w, *head_b;
    int64_t tok_per_ex;          /* tokens per example: 1 (pi, cnn) or 2 (2-token)              */
} mcl_oct;

/* One reader's KV rings, one per block: keys [max(C,1), Hk, dk], values likewise; `n` rows
 * in use, the oldest at `start`. Tensors are owned by the caller (a family's state registry). */
typedef struct mcl_oct_ring {
    mcl_tensor *k[MCL_OCT_MAX_BLOCKS], *v[MCL_OCT_MAX_BLOCKS];
    int64_t n, start;
} mcl_oct_ring;

/* What one chunk's forward left for after the optimizer step: its keys and values. */
typedef struct mcl_oct_chunk {
    mcl_tensor *k[MCL_OCT_MAX_BLOCKS], *v[MCL_OCT_MAX_BLOCKS];
    int64_t tokens;
} mcl_oct_chunk;

mcl_status mcl_oct_config_check(const mcl_oct_config *c, char *err, size_t len);
mcl_oct *mcl_oct_create(mcl_ctx *ctx, const mcl_oct_config *cfg);
void mcl_oct_free(mcl_oct *m);
/* Ring rows of a block (max(C, 1): a ring of 0 rows is a 1-row tensor never used). */
int64_t mcl_oct_ring_rows(const mcl_oct_config *c);
/* Floats of every parameter mcl_oct_create registers (exact, from the config alone);
 * *extractor (may be NULL): of those, the feature extractor's. mcl_oct_create refuses a model
 * whose parameters exceed the memory budget before allocating. */
double mcl_oct_param_floats(const mcl_oct_config *c, double *extractor);

/* Forward of one chunk: img [S,1,H,W] (unused with no_image), lab [S] (labels as floats) →
 * logits [S, n_way] (the prediction of y_t before it is seen) and the mean cross-entropy;
 * ck receives the keys and values to push. The ring is read, not changed. */
mcl_status mcl_oct_forward(mcl_oct *m, mcl_tensor *img, mcl_tensor *lab, int64_t S,
                           const mcl_oct_ring *ring, mcl_tensor **logits, mcl_tensor **loss,
                           mcl_oct_chunk *ck);
/* Push a chunk's keys and values into the ring (after the step). */
mcl_status mcl_oct_push(mcl_oct *m, mcl_oct_ring *ring, const mcl_oct_chunk *ck);

#ifdef __cplusplus
}
#endif
#endif
