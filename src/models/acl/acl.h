/* acl.h — the ACL model (doc/acl-model.md §2): Conv-4 feature extractor, label input, L layers of
 * [SRWM layer, feed-forward block] and a linear head on the last step.
 *
 * Sequences: images [B·L, C_in, S, S] and labels [B·L] with row b·L + t = step t of sequence b
 * (the layout of mcl_task_batch). Label value n_way is the "unknown" token (queries).
 *
 * State: per layer the four SRWM fast-weight tensors {W_y, W_q, W_k [B,H,D,D], w_b [B,H,D,4]};
 * with feature_stats = context also the per-sequence statistics of the context features.
 * A NULL state_in starts every sequence from the shared parameters (mcl_repeat_batch). The
 * returned state holds references to the graph tensors (never detached), so a later call in the
 * same step backpropagates into the earlier one; free it with mcl_acl_state_free.
 */
#ifndef MCL_MODELS_ACL_H
#define MCL_MODELS_ACL_H

#include <stdint.h>

#include "conv4.h"
#include "keys.h"
#include "metacl.h"
#include "sampler.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum mcl_acl_feature_norm {
    MCL_ACL_FEATNORM_NONE = 0, /* paper-exact                                                  */
    MCL_ACL_FEATNORM_BATCH,    /* per feature over the B·L images of the call (mean 0, var 1) in
                                  training; running estimates (momentum 0.1) in evaluation  */
    MCL_ACL_FEATNORM_IMAGE     /* per image over its F features (mean 0, var 1): never mixes
                                  examples, same in training and evaluation                  */
} mcl_acl_feature_norm;
/* Their names, in enum order: the key row model.feature_norm and the CLI use this string. */
#define MCL_ACL_FEATNORM_CHOICES "none|batch|image"

/* With feature_norm = batch: whose statistics normalize the features (doc/acl-model.md §2,
 * "Feature statistics"). */
typedef enum mcl_acl_feature_stats {
    MCL_ACL_FEATSTATS_RUNNING = 0, /* training: the call's B·L images (and the running
                                      estimates move); evaluation: the running estimates   */
    MCL_ACL_FEATSTATS_CALL,        /* training as running; evaluation: the call's own images
                                      (mixes the sequences of a call; a diagnostic)         */
    MCL_ACL_FEATSTATS_CONTEXT      /* per sequence: the context examples it has been given
                                      so far (never mixes sequences), the same in training
                                      (gradient through the statistics) and evaluation;
                                      queries read them from the state                      */
} mcl_acl_feature_stats;
/* Their names, in enum order: the key row model.feature_stats, `eval acl --feature-stats` and
 * the JSON use this string. */
#define MCL_ACL_FEATSTATS_CHOICES "running|call|context"

typedef struct mcl_acl_config {
    int n_way;          /* N output classes; label input has N+1 entries          */
    int hidden;         /* model width                                            */
    int heads;          /* SRWM heads (hidden % heads == 0)                       */
    int layers;         /* number of [SRWM layer, FF block]                       */
    int ff_mult;        /* FF inner width = ff_mult · hidden                      */
    float dropout;      /* drop probability everywhere (0.1 in the paper)         */
    int conv_channels;  /* Conv-4 channels (32)                                   */
    int image_size;     /* S (32; 28 = the paper's Omniglot size); >= 16, any     */
    int in_channels;    /* image channels (1 for our grayscale data; paper 3)     */
    int feature_norm;   /* mcl_acl_feature_norm                                   */
    int feature_stats;  /* mcl_acl_feature_stats (feature_norm batch only)        */
    uint64_t seed;      /* init seed (Philox; one stream per parameter tensor)    */
} mcl_acl_config;

/* Paper sizes (hidden 256, 16 heads, 2 layers, FF ×2, dropout 0.1, 32 channels, 32×32) with
 * n_way 5, in_channels 1, feature_norm none, seed 1. */
void mcl_acl_config_default(mcl_acl_config *cfg);

/* The model config's keys (name, type, range, default, help; keys.h): the defaults above,
 * the text form of mcl_acl_config_to_text, and `model.*` of the training config. */
#define MCL_ACL_CONFIG_N_KEYS 12
extern const mcl_key mcl_acl_config_key_table[MCL_ACL_CONFIG_N_KEYS];

/* ----------------------------------------------------------------------- parameter tensors
 *
 * Every parameter, in registration order (= its Philox init stream index), with its name
 * in our checkpoints (and in mcl_acl_params) and its shape. Sizes: C conv_channels,
 * C_in in_channels, F = C·(S/16)² Conv-4 features, N n_way, Hd hidden, H heads,
 * D = Hd/H, FF = ff_mult·Hd; i = 0..3 (conv block), l = 0..layers-1.
 *
 * Orientation. Every weight of a linear map is stored row-major [in, out] and applied as
 * y = x·W (+ b). A PyTorch nn.Linear stores weight [out, in] and computes x·weightᵀ + bias,
 * so its weight is OUR TENSOR TRANSPOSED; biases and norm gains/shifts are plain vectors and
 * copy as they are. Conv weights are [out, in, kh, kw], the same as nn.Conv2d (no transpose).
 * The SRWM matrices are [H, D, D] (W_y, W_q, W_k) and [H, D, 4] (w_b), indexed [h][e][m] with
 * e the input and m the output index (y_m = Σ_e x_e·W[h][e][m]); the paper writes
 * W ∈ R^{out×in}, y = W·x, i.e. the transpose of each head's matrix.
 *
 *   name                      shape         what                                   official
 *   conv{i}.w                 [C,Cin,3,3]   conv 3×3, pad 1; Cin = C_in at i = 0,  conv_layers.{i}.0.weight
 *                                           else C
 *   conv{i}.b                 [C]           conv bias                              conv_layers.{i}.0.bias
 *   conv{i}.norm.g            [C]           instance-norm gain (affine)            conv_layers.{i}.1.weight
 *   conv{i}.norm.b            [C]           instance-norm shift                    conv_layers.{i}.1.bias
 *   input.w                   [F+N+1,Hd]    features ++ one-hot label (N+1: the    input_proj.weight (ᵀ)
 *                                           last is "unknown") -> hidden
 *   input.b                   [Hd]                                                 input_proj.bias
 *   layer{l}.srwm.Wy          [H,D,D]       SRWM output matrix W_y (initial        layers.{2l}.W_y
 *   layer{l}.srwm.Wq          [H,D,D]       fast weights; per-sequence copies      layers.{2l}.W_q
 *   layer{l}.srwm.Wk          [H,D,D]       form the state)                        layers.{2l}.W_k
 *   layer{l}.srwm.wb          [H,D,4]       the four learning-rate logits          layers.{2l}.w_b
 *   layer{l}.srwm.ln.g        [Hd]          skip-path LayerNorm gain               layers.{2l}.layer_norm.weight
 *   layer{l}.srwm.ln.b        [Hd]          skip-path LayerNorm shift              layers.{2l}.layer_norm.bias
 *   layer{l}.srwm.out.w       [Hd,Hd]       heads -> hidden, no bias               layers.{2l}.out_linear.weight (ᵀ)
 *   layer{l}.ff.ln.g          [Hd]          feed-forward pre-LayerNorm gain        layers.{2l+1}.layer_norm.weight
 *   layer{l}.ff.ln.b          [Hd]          feed-forward pre-LayerNorm shift       layers.{2l+1}.layer_norm.bias
 *   layer{l}.ff.w1            [Hd,FF]       first FF linear                        layers.{2l+1}.ff_layers.0.weight (ᵀ)
 *   layer{l}.ff.b1            [FF]                                                 layers.{2l+1}.ff_layers.0.bias
 *   layer{l}.ff.w2            [FF,Hd]       second FF linear                       layers.{2l+1}.ff_layers.3.weight (ᵀ)
 *   layer{l}.ff.b2            [Hd]                                                 layers.{2l+1}.ff_layers.3.bias
 *   head.w                    [Hd,N]        output layer on the last step          out_layer.weight (ᵀ)
 *   head.b                    [N]                                                  out_layer.bias
 *   featnorm.running_mean     [F]           only with feature_norm = batch: the    none (our addition)
 *   featnorm.running_var      [F]           running statistics of the F features,  none
 *                                           no gradient
 *
 * The "official" column names the parameter in the authors' public PyTorch code: its stateful
 * Conv-4 + SRWM few-shot model (CompatStatefulConvSRWMModel) built with use_instance_norm
 * (affine InstanceNorm2d in the conv blocks) and extra_label (N+1 label inputs, the last one
 * "unknown"). There a ModuleList `layers` alternates SRWM layers (even indices) and
 * feed-forward blocks (odd); Sequential indices: conv block = [0 Conv2d, 1 InstanceNorm2d,
 * 2 MaxPool, 3 Dropout, 4 ReLU], FF block = [0 Linear, 1 ReLU, 2 Dropout, 3 Linear,
 * 4 Dropout]. "(ᵀ)" = transpose when copying. acl_interop.h moves the parameters both ways as
 * safetensors files (`metacl ckpt export --format safetensors`, `metacl ckpt import`; every name
 * in doc/interop.md). Points to note about its state dict:
 *   - its SRWM tensors carry a leading axis of 1 ([1,H,D,D], [1,H,D,4]): drop it. Their last
 *     two axes are [in, out] like ours: the authors' CUDA kernel accumulates
 *     y[m] += W[n][h][e][m]·x[e];
 *   - its carried state is an offset from the live parameters (state − W0); ours holds the
 *     fast weights themselves (add W0 when importing a state, not when importing parameters);
 *   - it applies out_layer at every step; we apply head.* to the last step only (same
 *     parameters).
 * Parameter counts: test-acl-model checks 750,309 for the paper sizes at C_in 3; doc/acl.md
 * gives 224,674 / 225,445 for the shipped 2-way / 5-way models. */

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
    mcl_conv4 conv;            /* the Conv-4 feature extractor (conv4.h) */
    mcl_tensor *in_w, *in_b;   /* [F + N + 1, hidden], [hidden] */
    mcl_acl_layer *layer;      /* [layers] */
    mcl_tensor *head_w, *head_b; /* [hidden, N], [N] */
    /* feature_norm batch: running mean and variance of the F features (registered as
     * parameters "featnorm.running_mean/var" so checkpoints carry them; they never get a
     * gradient, so the optimizer leaves them alone); NULL otherwise */
    mcl_tensor *run_mean, *run_var;
    int hold_running; /* 1: training forward passes leave run_mean/var as they are (the
                         parts after the first of a data-parallel step, train.h) */
    /* evaluation: −running mean [F] and diag(1/sqrt(running var + eps)) [F, F] on the device,
     * built from run_mean/run_var's contents of generation bn_gen[0..1] (struct mcl_buffer) */
    mcl_tensor *bn_neg, *bn_diag;
    const void *bn_buf[2];
    uint64_t bn_gen[2];
    /* The objective's batched Conv-4 (acl_objective.c): the next forward call takes feat_next
     * [rows, F] (a slice of one Conv-4 run over several calls' images, the same features and
     * dropout masks) instead of running Conv-4 on its images, and clears it. In training with
     * dropout, that Conv-4's dropouts took streams feat_stream .. + 3 for this call: the call
     * checks that the context's next stream is feat_stream and skips those four. */
    mcl_tensor *feat_next;
    uint64_t feat_stream;
    /* The objective's queries (acl_objective.c): the next forward call takes oh_next
     * [rows, n_way + 1] as the one-hot of its labels (every label the unknown n_way: one
     * one_hot shared by the step's queries instead of one per call), and clears it. */
    mcl_tensor *oh_next;
} mcl_acl;

typedef struct mcl_acl_state {
    int layers;
    int64_t batch;
    mcl_tensor **t; /* layers·4 tensors: layer l's {W_y, W_q, W_k, w_b} at 4l..4l+3 */
    /* feature_stats context: every sequence has been given feat_n context examples (the same
     * count for all); feat_mean [batch, F] their mean feature vector and feat_m2 [batch, F]
     * the sum of squared deviations from it. feat_n 0 and both NULL before any context
     * (W0) and for the other feature settings. */
    int64_t feat_n;
    mcl_tensor *feat_mean, *feat_m2;
} mcl_acl_state;

/* Memory estimates, computed from the config alone (nothing allocated), saturating at
 * UINT64_MAX. mcl_acl_param_count: the number of float parameters the config registers;
 * mcl_acl_param_bytes: their bytes (what loading or exporting a model needs);
 * mcl_acl_train_bytes: a training step with `batch` sequences of `rows` examples each:
 * parameters, gradients and Adam's two state slots, plus the activations one step keeps for
 * its backward pass (a lower estimate: the Conv-4 maps, the per-row layer outputs, the
 * per-sequence fast weights). */
uint64_t mcl_acl_param_count(const mcl_acl_config *cfg);
uint64_t mcl_acl_param_bytes(const mcl_acl_config *cfg);
uint64_t mcl_acl_train_bytes(const mcl_acl_config *cfg, int64_t batch, int64_t rows);

/* Create and initialize a model on ctx. Returns NULL (error in ctx) on a bad config, or when
 * mcl_acl_param_bytes(cfg) exceeds the memory budget (mcl_memory_budget, src/common/util.h:
 * MCL_ERR_OOM, refused before any tensor is allocated). */
mcl_acl *mcl_acl_create(mcl_ctx *ctx, const mcl_acl_config *cfg);
void mcl_acl_free(mcl_acl *m);
void mcl_acl_set_training(mcl_acl *m, int training);
mcl_params *mcl_acl_params(mcl_acl *m);

/* One stateful call (doc/acl-model.md §3). images [B·L, C_in, S, S]; labels_in [B·L] (class index as
 * float, n_way = unknown); state_in NULL = fresh from the parameters. On success *logits is a
 * temporary [B, N] (the last step of each sequence) and, if state_out is not NULL, *state_out a
 * new state (free with mcl_acl_state_free). ctx must be the model's context. */
mcl_status mcl_acl_forward(mcl_acl *m, mcl_ctx *ctx, mcl_tensor *images, mcl_tensor *labels_in,
                           int64_t B, int64_t L, const mcl_acl_state *state_in,
                           mcl_tensor **logits, mcl_acl_state **state_out);

/* mcl_acl_forward for the new state only (*state_out; no logits): the last layer's output
 * block and the head are not run (nothing reads them), so a call makes fewer launches; every
 * result, the dropout masks of later calls included, is the same as mcl_acl_forward's. */
mcl_status mcl_acl_forward_state(mcl_acl *m, mcl_ctx *ctx, mcl_tensor *images,
                                 mcl_tensor *labels_in, int64_t B, int64_t L,
                                 const mcl_acl_state *state_in, mcl_acl_state **state_out);

/* mcl_acl_forward for length-L queries whose state update is discarded (mcl_acl_query
 * builds on it): with feature_stats = context the rows are normalized with state_in's
 * context statistics and not added to them (mcl_acl_forward adds every row of a call to
 * its sequence's statistics). For the other feature settings it is mcl_acl_forward. */
mcl_status mcl_acl_forward_query(mcl_acl *m, mcl_ctx *ctx, mcl_tensor *images,
                                 mcl_tensor *labels_in, int64_t B, int64_t L,
                                 const mcl_acl_state *state_in, mcl_tensor **logits);

/* The parameters as the state of B sequences (what a NULL state_in starts from): every
 * tensor [B, ..] the layer's fast-weight parameters repeated (repeat_batch), no context
 * statistics (feat_n 0). Several calls from the parameters can share it: one repeat, and
 * its gradient summed over the calls before the repeat's backward sums the copies. Free
 * with mcl_acl_state_free; NULL on error (in ctx). */
mcl_acl_state *mcl_acl_param_state(mcl_acl *m, mcl_ctx *ctx, int64_t B);

void mcl_acl_state_free(mcl_acl_state *s);
/* A detached copy of s (references to the same data, cut from the graph), e.g. to carry a
 * state across mcl_ctx_reset at evaluation time. NULL on error. */
mcl_acl_state *mcl_acl_state_detach(const mcl_acl_state *s);

/* ======================================================================= the ACL objective
 * (doc/acl-model.md §3, acl_objective.c)
 *
 * A sequence of T tasks, each given as three parts per sequence of the batch: n_first
 * first-shot examples (labelled), n_ctx context examples (labelled) and n_query queries
 * (their labels are the targets). For task i, with S_{i-1} the state after the previous
 * task's context (S_0 = the parameters W0):
 *   first-shot  run the first-shot examples from S_{i-1}; every query of task i is then a
 *               length-1 call with the "unknown" label from that state        -> fs_i
 *   context     run the context examples from S_{i-1}                         -> S_i
 *   main        every query of task i from S_i                                 -> main_i
 *   ACL         for j < i, every query of task j from S_i (backward transfer) -> acl_{j,i}
 * A query is a separate length-1 call whose own update is discarded: the state is repeated
 * n_query times (sequence b's copies are rows b·n_query .. b·n_query+n_query-1), so all
 * queries of a sequence read the same state. Each term is the mean cross-entropy over its
 * B·n_query queries. States are never detached. The loss is
 *   loss = scale · [ Σ_i task_scale[i]·(fs_i + main_i) + acl_scale · Σ_{j<i} acl_{j,i} ].
 * 2-task (doc/acl-model.md §3 table): scale c = 0.2, task_scale {s_A, s_B}, acl_scale 1.
 * T-task mean form: scale = 1 / (number of terms), task_scale 1, acl_scale 1.
 * No ACL (the baseline that forgets in context): acl = 0. */

#define MCL_ACL_MAX_TASKS 16
#define MCL_ACL_MAX_TERMS (2 * MCL_ACL_MAX_TASKS + MCL_ACL_MAX_TASKS * (MCL_ACL_MAX_TASKS - 1) / 2)

/* One task's data for a batch of B sequences; row b·n + j = example j of sequence b.
 * Images [B·n, C_in, S, S]; labels [B·n] (class index as float, < n_way). */
typedef struct mcl_acl_task_data {
    mcl_tensor *first_img, *first_lab; /* NULL when the objective has no first-shot terms */
    mcl_tensor *ctx_img, *ctx_lab;
    mcl_tensor *query_img, *query_lab; /* query_lab = targets */
    int64_t n_first, n_ctx, n_query;   /* rows per sequence */
} mcl_acl_task_data;

typedef struct mcl_acl_objective {
    int n_tasks;      /* 1..MCL_ACL_MAX_TASKS                                       */
    int acl;          /* 1: backward-transfer terms acl_{j,i}; 0: the no-ACL baseline */
    int first_shot;   /* 1: first-shot terms fs_i                                    */
    float scale;      /* c                                                           */
    float task_scale[MCL_ACL_MAX_TASKS]; /* s_i on fs_i and main_i                   */
    float acl_scale;  /* weight of each acl_{j,i}                                    */
} mcl_acl_objective;

/* 2-task form: c, s_A, s_B (authors: 0.2, and 0.1 on one domain's terms), ACL and first-shot
 * terms on. */
void mcl_acl_objective_two_task(mcl_acl_objective *o, float c, float s_a, float s_b);
/* T-task mean form: loss = mean of the T main + T(T−1)/2 ACL terms (+ T first-shot terms when
 * first_shot), ACL on. */
void mcl_acl_objective_mean(mcl_acl_objective *o, int n_tasks, int first_shot);

typedef enum mcl_acl_term_kind {
    MCL_ACL_TERM_FIRST_SHOT = 0,
    MCL_ACL_TERM_MAIN,
    MCL_ACL_TERM_ACL
} mcl_acl_term_kind;

/* A term's value and query accuracy (read back to the host; only filled on request). */
typedef struct mcl_acl_term {
    int kind;        /* mcl_acl_term_kind                                  */
    int task;        /* whose queries                                      */
    int after;       /* the state: after task `after`'s context (fs: after the first-shot
                        examples of task `after` == task)                  */
    float weight;    /* its weight in the loss (scale included)            */
    double loss;     /* mean cross-entropy                                 */
    double accuracy; /* fraction of queries with argmax == target          */
} mcl_acl_term;

typedef struct mcl_acl_terms {
    int n;
    mcl_acl_term term[MCL_ACL_MAX_TERMS]; /* in the order they were computed */
    /* deferred = 1 (mcl_acl_objective_loss_deferred; the struct zeroed once, then reused, and
     * freed with mcl_acl_terms_free): the
     * terms' values, logits and targets are queued for reading (mcl_tensor_read_async) into
     * host[] instead of read at once, so the step does not wait for the device; once the
     * caller has finished the context's queue, mcl_acl_terms_finish fills loss and accuracy
     * (the same arithmetic as the immediate read). */
    int deferred;
    float *host[MCL_ACL_MAX_TERMS]; /* per term: value, logits [rows, n_out], targets [rows] */
    size_t cap[MCL_ACL_MAX_TERMS];  /* floats allocated in host[i]                          */
    int64_t rows[MCL_ACL_MAX_TERMS], n_out;
} mcl_acl_terms;

/* The same with terms->deferred = 1 (terms: zeroed once, then reused). */
mcl_status mcl_acl_objective_loss_deferred(mcl_acl *m, mcl_ctx *ctx,
                                           const mcl_acl_objective *obj,
                                           const mcl_acl_task_data *tasks, int64_t B,
                                           mcl_tensor **loss, mcl_acl_terms *terms);
/* Deferred terms: fill loss and accuracy of every term from host[] (the queue finished). */
void mcl_acl_terms_finish(mcl_acl_terms *t);
void mcl_acl_terms_free(mcl_acl_terms *t);

/* Build the loss of one meta-training step for B sequences (ctx = the model's context; the
 * loss is a temporary [1] on the tape: call mcl_backward on it). terms may be NULL; when
 * given, every term's value and accuracy are read back to the host (terms->deferred: queued
 * for reading, see mcl_acl_terms). Errors (clear message in
 * ctx): a bad objective, missing or mis-shaped task data, a label out of range. */
mcl_status mcl_acl_objective_loss(mcl_acl *m, mcl_ctx *ctx, const mcl_acl_objective *obj,
                                  const mcl_acl_task_data *tasks, int64_t B, mcl_tensor **loss,
                                  mcl_acl_terms *terms);

/* Length-1 queries from a carried state: images [B·Q, C_in, S, S] with the unknown label,
 * each reading the state of its sequence (row b·Q + j reads sequence b). state NULL = the
 * parameters. *logits is a temporary [B·Q, N]. */
mcl_status mcl_acl_query(mcl_acl *m, mcl_ctx *ctx, const mcl_acl_state *state,
                         mcl_tensor *images, int64_t B, int64_t Q, mcl_tensor **logits);

/* Task data for task `task` of B episodes drawn by mcl_episode_sample (grayscale datasets;
 * see mcl_task_batch) at image side image_size (the model's; 32 = the stored canvas, smaller
 * e.g. 28: mcl_image_to_side): allocates the six tensors on ctx (first-shot ones only if
 * the episodes have first-shot examples). Free with mcl_acl_task_data_free. */
mcl_status mcl_acl_task_data_from_episodes(mcl_ctx *ctx, const mcl_episode *const *episodes,
                                           int B, int task, int normalize, int image_size,
                                           mcl_acl_task_data *out);
void mcl_acl_task_data_free(mcl_acl_task_data *d);

/* ======================================================================= config text and
 * checkpoints (acl_io.c)
 *
 * Config text: one "key = value" per line; blank lines and lines starting with '#' are
 * ignored. Keys (all optional when parsing; missing keys keep their value):
 *   n_way hidden heads layers ff_mult conv_channels image_size in_channels   (integers)
 *   dropout (float in [0,1)), feature_norm (none | batch | image), feature_stats
 *   (running | call | context), seed (unsigned 64-bit).
 * Unknown keys, malformed numbers and out-of-range values are errors naming the line. */

/* The full config as text, every key in a fixed order (floats with 9 significant digits, so
 * parsing gives back the same bits). malloc'd; NULL on out of memory. */
char *mcl_acl_config_to_text(const mcl_acl_config *cfg);
/* Set one key from its text value. */
mcl_status mcl_acl_config_set(mcl_acl_config *cfg, const char *key, const char *value,
                              char *err, size_t err_len);
/* Apply config text onto *cfg (start from mcl_acl_config_default for a complete config). */
mcl_status mcl_acl_config_parse(mcl_acl_config *cfg, const char *text, char *err,
                                size_t err_len);

#define MCL_ACL_CKPT_KIND "acl"

/* Save the model (model kind "acl", its config text, every parameter), optionally the
 * optimizer, the context's random state (seed and next stream) and named counters, as one
 * atomically written checkpoint (see checkpoint.h). */
mcl_status mcl_acl_save(mcl_acl *m, const char *path, const mcl_optim *optim,
                        const mcl_ckpt_counter *counters, int n_counters, char *err,
                        size_t err_len);
/* May a model with this feature_norm use these feature statistics? running always; call and
 * context only with feature_norm batch (they choose the statistics of batch normalization).
 * The one check: mcl_acl_create and mcl_acl_set_feature_stats ask it. */
int mcl_acl_feature_stats_ok(int feature_norm, int feature_stats);
/* Evaluate m with the feature statistics fs (mcl_acl_feature_stats) instead of its own
 * model.feature_stats (`eval acl --feature-stats`). MCL_ERR_INVALID, m unchanged and
 * "model.feature_norm NAME; call and context need feature_norm batch" in err, when
 * mcl_acl_feature_stats_ok says no. */
mcl_status mcl_acl_set_feature_stats(mcl_acl *m, int fs, char *err, size_t err_len);
/* Build a model from a checkpoint alone: its config, then its parameters. *out is NULL on
 * error (wrong model kind, bad config text, or any checkpoint error). */
mcl_status mcl_acl_open(mcl_ctx *ctx, const char *path, mcl_acl **out, char *err,
                        size_t err_len);
/* Load a checkpoint into an existing model whose config must equal the file's (else an
 * error naming the first differing key); optim (may be NULL) gets the optimizer state; the
 * context's seed and stream are restored when restore_rng is set; info (may be NULL) as in
 * mcl_ckpt_load. Nothing is changed unless the whole file checks out. */
mcl_status mcl_acl_load(mcl_acl *m, const char *path, mcl_optim *optim, int restore_rng,
                        mcl_ckpt_info *info, char *err, size_t err_len);

#ifdef __cplusplus
}
#endif
#endif
