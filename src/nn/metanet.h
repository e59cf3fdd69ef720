/* metanet.h — MetaNet fast-weight layers with sparse, gradient-driven writes (Sparse Meta
 * Networks, Munkhdalai 2019, §2; doc/smn-model.md walks through every equation).
 *
 * An augmented layer computes with W + M instead of W (Eq. 1): W is the slow weight (a
 * parameter the optimizer trains), M the fast weight (state of W's shape, starts at 0). After
 * each prediction the loss gradient G_t = dL_t/d(W + M) — plain data, no gradient through it —
 * drives the write (Eq. 3-6):
 *
 *   I_t = γ I_{t-1} + β1 G_t                      gradient average (state)
 *   z   = I_t + β2 G_t                            per element
 *   A_t ~ Bernoulli(p) per element                Philox(seed, stream of the layer, counter)
 *   M_t = (1 − A_t) ⊙ M_{t-1} + A_t ⊙ g_φ(pre(z)) g_φ: 2 → H → H → 1 MLP (LeakyReLU), one per layer;
 *                                                 pre: Andrychowicz et al.'s (log|z|/P, sign z)
 *
 * Truncated BPTT (Algorithm 1). A window is k steps: k − 1 fast steps (predict, loss, G, write)
 * then one gradient step whose loss trains θ = {W, b} and φ. The loss of step k reaches φ
 * through M_{k-1}; since G is data, M_{k-1} depends on φ only through the writes of the window,
 * and only the LAST write to an element survives to M_{k-1}. So the window keeps only its
 * writes (indices + meta-learner inputs: O(p·|W|·k)) and, at step k, rebuilds M_{k-1} on the
 * tape from the window's start M_0 with one smn_write over the surviving writes (ops.h). The
 * rebuilt M_{k-1} equals the incrementally written one bit for bit (same inputs, same op).
 *
 * Use (one model, any number of augmented weights; a harness step = one window):
 *   mcl_metanet_window_begin(mn)              M_0 := M, the log emptied
 *   k − 1 times:
 *     mark = mcl_tape_mark(ctx); mcl_metanet_weights(mn, MCL_FAST_STEP, eff); forward with eff;
 *     (or MCL_FAST_STEP_KEPT: E = W + M kept across the window's fast steps, below)
 *     loss; mcl_metanet_write(mn, loss, mark, &hyper, keep_log = 1)
 *   mcl_metanet_weights(mn, MCL_FAST_WINDOW_END, eff); forward; loss; backward; then
 *   mcl_metanet_window_end(mn, &hyper)        I from W's gradient (= G_k); M_k = M_{k-1}
 *                                             (or 0 with cfg.reset); then the optimizer step
 * Evaluation (slow weights frozen): every step is a fast step with keep_log = 0.
 */
#ifndef MCL_NN_METANET_H
#define MCL_NN_METANET_H

#include <stdint.h>

#include "metacl.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MCL_METANET_MAX_LAYERS 32
#define MCL_METANET_MAX_K 64
#define MCL_METANET_MASK_STREAM 0x534d4e4d41534b00ULL /* "SMNMASK\0" + layer index */

/* The write's hyperparameters (training and evaluation have their own, paper App. A). */
typedef struct mcl_metanet_hyper {
    float p;     /* write probability of an element, (0, 1]        */
    float gamma; /* decay of the gradient average, [0, 1)           */
    float beta1; /* weight of G_t in the average                    */
    float beta2; /* weight of G_t beside the average in z           */
} mcl_metanet_hyper;

typedef struct mcl_metanet_cfg {
    int meta_hidden;   /* H: the meta-learner's hidden width (paper: 20)              */
    float slope;       /* LeakyReLU negative slope of g_φ (0.01)                       */
    float preproc_p;   /* P of the gradient preprocessing (paper: 10)                  */
    int reset;         /* 1: M := 0 at every truncation (the paper's LM); 0: accumulate */
    uint64_t mask_seed; /* key of the write masks                                      */
    uint64_t init_seed; /* key of φ's initialization                                   */
} mcl_metanet_cfg;

void mcl_metanet_cfg_default(mcl_metanet_cfg *cfg);
/* The defaults with a model's choices: g_φ's width, reset at truncation, one seed for the
 * masks and φ's initialization. */
void mcl_metanet_cfg_model(mcl_metanet_cfg *cfg, int meta_hidden, int reset, uint64_t seed);

/* How mcl_metanet_weights builds the effective weights. */
typedef enum mcl_fast_mode {
    MCL_FAST_STEP = 0,       /* W + M (M is data): a fast step, or evaluation          */
    MCL_FAST_WINDOW_END = 1, /* W + smn_write(M_0, surviving writes, φ): step k        */
    /* W + M kept as a leaf E that the window's writes update with M (smn_avg_write), so a
     * step adds W + M once per window instead of once per forward: a fast step whose loss
     * only drives a write (G_t is taken with respect to E; W gets NO gradient through it),
     * or evaluation. W must not change while E is kept: it is made again after each window
     * boundary (mcl_metanet_window_begin/_end) and mcl_metanet_clear, and whenever M was
     * written by anything but the writes. */
    MCL_FAST_STEP_KEPT = 2
} mcl_fast_mode;

typedef struct mcl_metanet mcl_metanet;

/* An empty set of augmented weights; the meta-learners' parameters and the state tensors go
 * to `params` (names "<name>.meta.{w1,b1,w2,b2,w3,b3}" trainable; "<name>.fast" and
 * "<name>.avg" state, saved in checkpoints, never trained). */
mcl_status mcl_metanet_create(mcl_ctx *ctx, mcl_params *params, const mcl_metanet_cfg *cfg,
                              mcl_metanet **out);
void mcl_metanet_free(mcl_metanet *mn);

/* Floats that augmenting a weight of n elements registers: its fast weight and gradient
 * average (n each, not trained) and g_phi's 2 -> H -> H -> 1 (H = meta_hidden). */
double mcl_metanet_aug_floats(double n, int meta_hidden);

/* Augment the slow weight w (a parameter of any shape, < 2^24 elements) under `name`.
 * Returns its index (0, 1, ...) or -1 (message in ctx). */
int mcl_metanet_add(mcl_metanet *mn, mcl_tensor *w, const char *name);
int mcl_metanet_count(const mcl_metanet *mn);
/* The slow weight i and its fast weight state (M). */
mcl_tensor *mcl_metanet_slow(const mcl_metanet *mn, int i);
mcl_tensor *mcl_metanet_fast(const mcl_metanet *mn, int i);

/* The effective weight of augmented weight i made by the last mcl_metanet_weights call (a
 * temporary; NULL before any) — what the write differentiates the loss against. */
mcl_tensor *mcl_metanet_effective(const mcl_metanet *mn, int i);
/* The meta-learner g_φ of augmented weight i: w1, b1, w2, b2, w3, b3. */
mcl_tensor *const *mcl_metanet_phi(const mcl_metanet *mn, int i);
/* State tensors: the gradient average I of weight i. */
mcl_tensor *mcl_metanet_avg(const mcl_metanet *mn, int i);
const mcl_metanet_cfg *mcl_metanet_config(const mcl_metanet *mn);

/* eff[i] = the effective weight of augmented weight i for this forward (temporaries). */
mcl_status mcl_metanet_weights(mcl_metanet *mn, mcl_fast_mode mode, mcl_tensor **eff);

/* The write of one fast step: G_i = d loss / d eff_i (a partial backward over the ops after
 * `mark`, which must include the mcl_metanet_weights call of this step), then I, z, the mask
 * and M as above. keep_log: remember the writes for the window's gradient step. */
mcl_status mcl_metanet_write(mcl_metanet *mn, mcl_tensor *loss, size_t mark,
                             const mcl_metanet_hyper *h, int keep_log);

/* Start a window: M_0 := M, no writes logged. */
mcl_status mcl_metanet_window_begin(mcl_metanet *mn);
/* End a window after the backward of step k's loss: I takes W's gradient (G_k); M_k = M_{k-1},
 * or 0 when cfg.reset. The log is emptied. */
mcl_status mcl_metanet_window_end(mcl_metanet *mn, const mcl_metanet_hyper *h);

/* Fresh fast state: M = 0, I = 0, the log emptied (a new stream, or a new run). */
mcl_status mcl_metanet_clear(mcl_metanet *mn);

/* Fast steps taken so far (the mask counter); checkpoints save and restore it. */
uint64_t mcl_metanet_steps(const mcl_metanet *mn);
void mcl_metanet_set_steps(mcl_metanet *mn, uint64_t steps);

/* Memory of the current window's log (bytes of indices and meta-learner inputs), and of the
 * same window kept as a dense version would (g_φ evaluated on every element with its
 * activations saved for backward, a dense M per step). For the bench's memory figure. */
void mcl_metanet_log_bytes(const mcl_metanet *mn, uint64_t *sparse, uint64_t *dense);

/* Elements written by the last fast step, summed over the layers. */
int64_t mcl_metanet_last_writes(const mcl_metanet *mn);

#ifdef __cplusplus
}
#endif
#endif
