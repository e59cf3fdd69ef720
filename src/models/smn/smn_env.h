/* smn_env.h — the Sparse-MetaNet family state shared by its two drivers (internal, not
 * installed): the training adapter (smn_train.c, one harness step = one window of
 * Algorithm 1) and the online runs of the evaluation protocols (smn_online.c). Both drive
 * the same environment steps (a WCST episode, an Online-X round, a class batch) and the same
 * window; this header is the seam between them.
 */
#ifndef MCL_MODELS_SMN_ENV_H
#define MCL_MODELS_SMN_ENV_H

#include "sampler.h"
#include "smn_train.h"
#include "wcst.h"

/* The family state: the run's config, the model, the environment or the data stream, the
 * counters and the per-task record. */
typedef struct smn_fs {
    mcl_smn_run cfg;
    mcl_ctx *ctx;
    mcl_smn *m;
    uint64_t seed;    /* train.seed: actions, batches */
    int B;            /* train.batch: round / batch size */
    /* wcst */
    mcl_wcst *env;
    float obs[MCL_WCST_CARD_DIM];
    /* wcst: the window's episodes act and score on the device (ops.def wcst_act, no read
     * between them); their actions and rewards are read once the step is done and replayed
     * on the host environment, the ground truth of every statistic (mcl_smn_score_pending) */
    mcl_tensor *wc_state;                       /* [5 + 2·MAX_K]: the rule's state and draws */
    mcl_tensor *wc_act[MCL_METANET_MAX_K];      /* [L] each: an episode's actions           */
    mcl_tensor *wc_rew[MCL_METANET_MAX_K];      /* [L] each: its rewards                     */
    float *wc_host;                             /* [MAX_K · 2L]: the reads of both          */
    int wc_n;                                   /* episodes queued since the last replay    */
    /* onlinex, classes */
    mcl_dataset *ds;
    mcl_stream *stream;
    int32_t *class_pos; /* classes: [ds->n] class position of each image */
    int64_t round;      /* onlinex: next round                           */
    int64_t n_rounds;
    /* counters */
    int64_t env_steps, updates;
    /* onlinex per-task record */
    mcl_smn_task_rec *rec;
    int n_rec;
    mcl_tensor *rec_t;  /* state: the record [n_tasks, REC_FIELDS] (checkpoints) */
    /* the window in flight */
    double win_hits, win_n;
    /* onlinex, classes: the predictions of the window's rounds/batches, queued for reading
     * and scored once the step is done (smn_step_metrics): n_pend slots of B x n_out logits */
    float *pend;
    int64_t pend_lo[MCL_METANET_MAX_K]; /* onlinex: the round's first example            */
    int32_t *pend_lab;                  /* classes: the batch's labels [MAX_K * B]        */
    int n_pend;
    int in_window;
    mcl_status end_status; /* of the last step_end, reported by the next step */
    char end_err[256];
} smn_fs;

/* Environment steps per window: k with fast weights (k − 1 fast steps, then the gradient
 * step), else 1. */
static inline int mcl_smn_window_len(const mcl_smn_config *m) { return m->fast ? m->k : 1; }

/* The state for cfg: the model, then the WCST environment or the data and its stream
 * (logged to log when not NULL). batch: rounds / class batches of that many images. */
mcl_status mcl_smn_fs_create(mcl_ctx *ctx, const mcl_smn_run *cfg, int batch, uint64_t seed, mcl_train_log *log,
                             smn_fs **out, char *err, size_t len);
void mcl_smn_fs_free(void *t);

/* Copy the tensors of another smn checkpoint with the same name and shape (skip_head: not
 * the heads); *copied: how many. */
mcl_status mcl_smn_fs_copy_matching(smn_fs *t, const char *path, int skip_head, int *copied, char *err,
                                    size_t len);

/* One environment step (an episode, a round or a batch): its loss on the tape. */
mcl_status mcl_smn_env_step(smn_fs *t, mcl_smn_mode mode, mcl_tensor **loss);

/* The window of Algorithm 1 up to its gradient step's loss (on the tape), and what follows
 * that step's backward (before the optimizer step). */
mcl_status mcl_smn_window_loss(smn_fs *t, mcl_tensor **loss);
mcl_status mcl_smn_window_end(smn_fs *t);

/* Tasks solved so far (wcst) or reached (onlinex). */
int mcl_smn_fs_tasks_done(const smn_fs *t);
/* Score the predictions the last step queued (t->n_pend slots; WCST: replay the queued
 * episodes' actions on the host environment) and empty the queue, once the context's queue is
 * finished. MCL_ERR_BACKEND (with the context's message) when the device's rewards disagree
 * with the environment's. */
mcl_status mcl_smn_score_pending(smn_fs *t);

/* The optimizer of the run key `optimizer` (MCL_SMN_OPT_*). */
mcl_optim_kind mcl_smn_optim_kind(int o);

/* A read of a device tensor's first n floats into a fresh host array (NULL on failure). */
float *mcl_smn_read_host(mcl_tensor *x, int64_t n);

#endif
