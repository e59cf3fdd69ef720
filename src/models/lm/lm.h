/* lm.h — the adaptive character language model (doc/lm-model.md): a byte-level
 * Transformer-XL (Dai et al. 2019) — segment-level recurrence and relative positions — whose
 * attention projections and byte embedding can carry sparse fast weights (Sparse Meta
 * Networks, Munkhdalai 2019, Sec. 4.2; metanet.h).
 *
 * Shapes (B lanes side by side, S bytes per segment, M memory rows, D = model width,
 * H heads of width Dh, F = feed-forward width, L layers):
 *   x_0 = E[byte]                                   E [256, D] (fast weights optional)
 *   layer l (pre-LN), input h [B,S,D], memory m_l [B,M',D] (M' = rows in use, detached):
 *     c = LN_a([m_l ‖ h])                           [B, M'+S, D]
 *     q = c[-S:] W_qᵀ, k = c W_kᵀ, v = c W_vᵀ       [B,S,H,Dh], [B,T,H,Dh], T = M'+S
 *     r = R_T W_rᵀ                                  R_T: sinusoids of distances 0..T-1 [T,D]
 *     a = rel_attn(q + u, q + v_b, k, v, r)         s_ij = (q_i+u)·k_j + (q_i+v_b)·r_{dist}
 *     h = h + a W_oᵀ                                (W_q, W_k, W_v, W_o fast weights optional)
 *     h = h + W_2 gelu(W_1 LN_f(h) + b_1) + b_2
 *     new m_l = the last M rows of [m_l ‖ h_in]     (the layer's input: Transformer-XL's memory)
 *   logits = LN_out(h) W_outᵀ + b_out               [B·S, 256]
 */
#ifndef MCL_MODELS_LM_H
#define MCL_MODELS_LM_H

#include <stdint.h>

#include "metacl.h"
#include "metanet.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MCL_LM_CKPT_KIND "lm"
#define MCL_LM_MAX_LAYERS 12
#define MCL_LM_VOCAB 256

typedef struct mcl_lm_config {
    int layers;       /* L                                                                */
    int width;        /* D                                                                */
    int heads;        /* H                                                                */
    int head_dim;     /* Dh                                                               */
    int ffw;          /* F                                                                */
    int mem_len;      /* M: memory rows per layer                                         */
    int fast;         /* sparse fast weights on q, k, v, o (and what the next two say)    */
    int fast_embed;   /* ... on the byte embedding                                        */
    int fast_ffw;     /* ... on the first feed-forward weight                             */
    int meta_hidden;  /* H of each meta-learner g_phi (paper: 20)                          */
    int reset;        /* M := 0 at every truncation (the paper's LM setting)               */
    uint64_t seed;    /* initialization and write masks                                   */
} mcl_lm_config;

void mcl_lm_config_default(mcl_lm_config *c);
mcl_status mcl_lm_config_check(const mcl_lm_config *c, char *err, size_t len);

typedef struct mcl_lm_layer {
    mcl_tensor *ln_a_g, *ln_a_b, *wq, *wk, *wv, *wo, *wr, *u, *vb;
    mcl_tensor *ln_f_g, *ln_f_b, *w1, *b1, *w2, *b2;
    int aug_q, aug_k, aug_v, aug_o, aug_1; /* metanet indices, -1 = slow only              */
} mcl_lm_layer;

typedef struct mcl_lm {
    mcl_ctx *ctx;
    mcl_lm_config cfg;
    mcl_params *params;
    mcl_metanet *mn;   /* NULL without fast weights */
    mcl_tensor *emb;   /* [256, D] */
    int aug_emb;
    mcl_lm_layer layer[MCL_LM_MAX_LAYERS];
    mcl_tensor *ln_o_g, *ln_o_b, *w_out, *b_out;
    mcl_tensor *pos;   /* [M+Smax, D] sinusoids of distances 0.., grown on demand (not a param) */
    int64_t pos_rows;
} mcl_lm;

mcl_lm *mcl_lm_create(mcl_ctx *ctx, const mcl_lm_config *cfg);
void mcl_lm_free(mcl_lm *m);
int64_t mcl_lm_trainable(const mcl_lm *m);
/* Floats of every tensor mcl_lm_create registers (exact, from the config alone); *fast
 * (may be NULL): of those, the fast-weight state, which is not trained. mcl_lm_create refuses
 * a model whose parameters exceed the memory budget (mcl_check_budget) before allocating. */
double mcl_lm_param_floats(const mcl_lm_config *c, double *fast);

/* The recurrent state of B lanes: per layer a memory [B, M, D] of which `rows` (the same for
 * every lane) are in use. Caller-owned tensors: either registered in a params registry (so a
 * checkpoint keeps them: mcl_lm_memory_register) or free-standing (mcl_lm_memory_create). */
typedef struct mcl_lm_memory {
    int64_t lanes, rows, capacity; /* rows in use <= capacity (the tensors' middle dim)    */
    int layers;
    mcl_tensor *mem[MCL_LM_MAX_LAYERS];
    int owned;
    int write_ahead; /* 1: a forward on the full memory (rows == capacity) writes the new
                      * rows into mem itself, right after its layer has read them (the
                      * pending then holds views of mem, and commit copies nothing). Only for
                      * a caller that reads mem through nothing but mcl_lm_forward and commits
                      * each forward before the next (training, lm_train.c); 0 by default. */
} mcl_lm_memory;

/* capacity `rows` (evaluation may hold a longer memory than training's model.mem_len: the
 * positions are sinusoids of the distance, defined for any distance). */
mcl_status mcl_lm_memory_create(mcl_lm *m, int64_t lanes, int64_t rows, mcl_lm_memory *mem);
/* Capacity model.mem_len, the tensors registered in `params` as untrained state
 * "state.mem<l>" (a training run's checkpoint keeps them). */
mcl_status mcl_lm_memory_register(mcl_lm *m, mcl_params *params, int64_t lanes, mcl_lm_memory *mem);
void mcl_lm_memory_free(mcl_lm_memory *mem);
/* Forget everything (rows = 0). */
void mcl_lm_memory_clear(mcl_lm_memory *mem);

/* What a forward leaves for mcl_lm_memory_commit: the new memories (temporaries). */
typedef struct mcl_lm_pending {
    mcl_tensor *mem[MCL_LM_MAX_LAYERS];
    int64_t rows;
    int written; /* the forward wrote them into the memory already (write_ahead) */
} mcl_lm_pending;

/* tokens [B, S] (bytes as floats) → logits [B·S, 256] on the tape. mode: the fast weights'
 * use (MCL_FAST_STEP: W + M; MCL_FAST_STEP_KEPT: W + M kept by the fast-weight state, for
 * fast steps and evaluation; MCL_FAST_WINDOW_END: W + M rebuilt from the window's writes;
 * ignored without fast weights). The memory is read, not changed (but with mem->write_ahead):
 * commit `pend` after the step's backward (or right away in evaluation). */
mcl_status mcl_lm_forward(mcl_lm *m, mcl_fast_mode mode, const mcl_lm_memory *mem, mcl_tensor *tokens,
                          mcl_tensor **logits, mcl_lm_pending *pend);
mcl_status mcl_lm_memory_commit(mcl_lm_memory *mem, const mcl_lm_pending *pend);

/* Dynamic evaluation's step on n slow weights w[i] (each with w0[i], its trained value, of its
 * shape): w ← (w − lr·g) + decay·(w0 − w) for every w that has a gradient g (no tape; decay
 * <= 0: w − lr·g), one in-place dyn_step op per weight (ops.def), the floats of the chain
 * scale, sub, sub, scale, add it replaced (lm_eval.c, the bench's lm_eval_dynamic). */
mcl_status mcl_lm_dyn_step(mcl_ctx *ctx, mcl_tensor *const *w, mcl_tensor *const *w0, int n, float lr,
                           float decay);

#ifdef __cplusplus
}
#endif
#endif
