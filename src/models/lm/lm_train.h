/* lm_train.h — the adaptive character language model on the training harness (train.h):
 * `metacl train lm`, and its three evaluations on a shifting stream (`metacl eval lm`).
 *
 * Training data. train.batch lanes read the corpus's train splits (text.h). A lane reads one
 * domain contiguously for data.block bytes (an "episode", rounded to whole windows), then
 * jumps to a random domain and offset: its memory then holds the old domain, as after a
 * switch of the evaluation stream. Where lane b reads at step s is a function of
 * (data.seed, b, s) alone, so a resumed run reads the same bytes.
 *
 * One harness step is one window of Algorithm 1 (Sparse Meta Networks): with fast weights,
 * k − 1 fast steps of smn.fast_len bytes per lane (predict, loss, the sparse write from the
 * loss gradient) then one gradient step of smn.seg_len bytes whose loss trains the slow
 * weights and the meta-learners; without fast weights, one segment of smn.seg_len bytes.
 * The memory advances with every segment (fast or not). The fast weights are shared by the
 * lanes (the paper shares them over the examples of a GPU) and, with model.reset, are zeroed
 * at every truncation (the paper's LM setting).
 */
#ifndef MCL_MODELS_LM_TRAIN_H
#define MCL_MODELS_LM_TRAIN_H

#include "checkpoint.h"
#include "lm.h"
#include "train.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mcl_lm_run {
    mcl_lm_config model;
    int k;                     /* truncation length (window of Algorithm 1)                */
    int fast_len;              /* bytes per lane of a fast step                            */
    int seg_len;               /* bytes per lane of a gradient step                        */
    mcl_metanet_hyper train_h; /* the write's hyperparameters in training                  */
    mcl_metanet_hyper eval_h;  /* ... in evaluation (mode smn)                             */
    char data_dir[1024];       /* the corpus directory ("" = <data dir>/text)              */
    char domains[512];         /* comma-separated subset of the corpus's domains ("" = all)*/
    int64_t block;             /* bytes a lane reads from one domain before it jumps       */
    int64_t val_chars;         /* validation: static bpc over this many bytes of the valid
                                  stream in blocks of val_chars / domains, so that every
                                  domain takes part (score = −bpc)                          */
    int64_t eval_block;        /* the evaluation streams' block (bytes per domain visit)   */
    uint64_t data_seed;        /* lanes' reading positions, the streams' domain order      */
} mcl_lm_run;

extern const mcl_family mcl_lm_family;

/* The run's config from a checkpoint's saved text (defaults for keys it lacks). */
mcl_status mcl_lm_run_from_ckpt(const char *path, mcl_lm_run *cfg, char *err, size_t len);
/* A trained model from a checkpoint (any lm checkpoint: a run's or an exported one); info
 * (may be NULL) receives what the file says (free with mcl_ckpt_info_free). */
mcl_status mcl_lm_open(mcl_ctx *ctx, const char *path, mcl_lm **out, mcl_lm_run *cfg, mcl_ckpt_info *info, char *err,
                       size_t len);
/* The model alone (config, parameters and the lanes' memory; no optimizer state) to path,
 * atomically: what `metacl ckpt export` writes and data/checkpoints/ ships. */
mcl_status mcl_lm_export(mcl_lm *m, const char *path, const mcl_ckpt_info *info, char *err, size_t len);

/* ---- evaluation on a stream (lm_eval.c) ---- */

typedef enum mcl_lm_mode {
    MCL_LM_STATIC = 0,  /* weights frozen: predict only                                     */
    MCL_LM_DYNAMIC = 1, /* Krause et al. 2018: after each segment's prediction, one SGD step on
                           the slow weights, pulled back toward the trained ones by `decay` */
    MCL_LM_SMN = 2      /* slow weights frozen; the fast weights written after each segment  */
} mcl_lm_mode;

#define MCL_LM_CURVE_BINS 14

typedef struct mcl_lm_eval_opts {
    mcl_lm_mode mode;
    int64_t seg_len;        /* bytes per segment (prediction, then the update)              */
    int64_t mem_rows;       /* memory capacity (0 = the model's mem_len)                    */
    float lr, decay;        /* dynamic                                                      */
    mcl_metanet_hyper h;    /* smn                                                          */
    int reset_every;        /* smn: fast weights (M and I) to 0 every this many segments, as
                               training's truncation does (0 = never: they accumulate)      */
    int64_t max_chars;      /* stop after this many predicted bytes (0 = the whole stream)  */
    void (*progress)(void *arg, int64_t done, int64_t total);
    void *progress_arg;
} mcl_lm_eval_opts;

/* A stream: bytes with blocks [start_i, start_{i+1}) of domain domain_i. */
typedef struct mcl_lm_stream {
    const uint8_t *bytes;
    int64_t n;
    int n_blocks;
    const int64_t *block_start; /* [n_blocks] (block_start[0] = 0)                         */
    const int *block_domain;    /* [n_blocks]                                               */
    int n_domains;
} mcl_lm_stream;

typedef struct mcl_lm_eval_result {
    int64_t chars;               /* bytes predicted                                           */
    double bits;                 /* their total −log2 p                                       */
    double seconds;              /* wall time of the evaluation                               */
    int n_domains;
    double *dom_bits;            /* [n_domains]                                               */
    int64_t *dom_chars;          /* [n_domains]                                               */
    /* bytes since the last domain switch (the first block counts from the stream's start):
     * bin i holds [edge_i, edge_{i+1}) */
    int64_t curve_edge[MCL_LM_CURVE_BINS + 1];
    double curve_bits[MCL_LM_CURVE_BINS];
    int64_t curve_chars[MCL_LM_CURVE_BINS];
} mcl_lm_eval_result;

void mcl_lm_eval_opts_default(mcl_lm_eval_opts *o);
/* Run one evaluation of m over the stream (m's weights are put back afterwards: dynamic
 * evaluation restores the slow weights, smn clears the fast ones). One lane. */
mcl_status mcl_lm_evaluate(mcl_lm *m, const mcl_lm_stream *s, const mcl_lm_eval_opts *o, mcl_lm_eval_result *r,
                           char *err, size_t len);
void mcl_lm_eval_result_free(mcl_lm_eval_result *r);

#ifdef __cplusplus
}
#endif
#endif
