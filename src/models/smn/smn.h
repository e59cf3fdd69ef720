/* smn.h — Sparse Meta Networks models (Munkhdalai 2019; doc/smn-model.md): the WCST agent
 * (an MLP with an action and a value head) and the Online-X classifier (a small residual
 * CNN), every chosen layer augmented with sparse fast weights (metanet.h).
 *
 * mlp:     x [R, in_dim] → hidden layers of `hidden` units with ReLU → action logits
 *          [R, n_out] and, with value_head, a value [R, 1] (two linear heads on the last
 *          hidden layer). Paper: 2 × 256, 4 actions.
 * resnet:  x [R, 1, 32, 32] → 4 residual blocks of widths w, 1.5w, 2w, 4w (the paper's 64,
 *          96, 128, 256 with w = 64); block: conv3×3 → instance norm → ReLU → conv3×3 →
 *          instance norm, plus a 1×1 conv of the block's input, → ReLU → max-pool 2×2;
 *          → flatten [R, 4w·2·2] → linear head [R, n_out]. 12 convolutions + the head.
 * Fast weights: on every linear / conv weight (fast = 1), the heads too unless fast_head = 0;
 * biases and norm parameters are slow only.
 */
#ifndef MCL_MODELS_SMN_H
#define MCL_MODELS_SMN_H

#include <stdint.h>

#include "metacl.h"
#include "metanet.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MCL_SMN_CKPT_KIND "smn"
#define MCL_SMN_MAX_WEIGHTS 32

enum { MCL_SMN_MLP = 0, MCL_SMN_RESNET = 1 };

typedef struct mcl_smn_config {
    int arch;         /* MCL_SMN_MLP | MCL_SMN_RESNET                                  */
    int in_dim;       /* mlp input width (WCST: 12)                                    */
    int hidden;       /* mlp hidden width (256)                                        */
    int layers;       /* mlp hidden layers (2)                                         */
    int width;        /* resnet base width w                                           */
    int n_out;        /* actions or classes                                            */
    int value_head;   /* mlp: a value head (A2C)                                       */
    int fast;         /* augment with fast weights (0: a plain network, the baselines)  */
    int fast_head;    /* the heads too                                                 */
    int k;            /* truncation length (1 = every step a gradient step)            */
    mcl_metanet_hyper train_h, eval_h;
    int reset;        /* M := 0 at each truncation                                     */
    int meta_hidden;  /* H of g_φ (20)                                                 */
    uint64_t seed;    /* initialization                                                */
} mcl_smn_config;

void mcl_smn_config_default(mcl_smn_config *c);
/* Range and consistency checks; a message naming the key. */
mcl_status mcl_smn_config_check(const mcl_smn_config *c, char *err, size_t len);

typedef struct mcl_smn {
    mcl_ctx *ctx;
    mcl_smn_config cfg;
    mcl_params *params;
    mcl_metanet *mn;  /* NULL when cfg.fast == 0 */
    int n_w;          /* weights (linear / conv), in forward order */
    mcl_tensor *w[MCL_SMN_MAX_WEIGHTS], *b[MCL_SMN_MAX_WEIGHTS];
    mcl_tensor *ng[MCL_SMN_MAX_WEIGHTS], *nb[MCL_SMN_MAX_WEIGHTS]; /* resnet norms (or NULL) */
    int aug[MCL_SMN_MAX_WEIGHTS]; /* metanet index of weight i, -1 = slow only */
} mcl_smn;

mcl_smn *mcl_smn_create(mcl_ctx *ctx, const mcl_smn_config *cfg);
void mcl_smn_free(mcl_smn *m);

/* How a forward uses the fast weights. */
typedef enum mcl_smn_mode {
    MCL_SMN_FAST_STEP = 0,  /* W + M                                              */
    MCL_SMN_WINDOW_END = 1  /* W + M_{k-1} rebuilt from the window's writes       */
} mcl_smn_mode;

/* x [R, in_dim] (mlp) or [R, 1, 32, 32] (resnet) → logits [R, n_out]; value [R, 1] when the
 * model has a value head and value is not NULL. Temporaries; NULL status = ok. */
mcl_status mcl_smn_forward(mcl_smn *m, mcl_smn_mode mode, mcl_tensor *x, int64_t rows,
                           mcl_tensor **logits, mcl_tensor **value);

/* Trainable scalars (slow weights, biases, norms, meta-learners). */
int64_t mcl_smn_trainable(const mcl_smn *m);
/* Floats of every tensor mcl_smn_create registers (exact, from the config alone); *fast
 * (may be NULL): of those, the fast-weight state (not trained). mcl_smn_create refuses a model
 * whose parameters exceed the memory budget before allocating. */
double mcl_smn_param_floats(const mcl_smn_config *c, double *fast);

#ifdef __cplusplus
}
#endif
#endif
