/* train.h — the model-family harness: one training loop, run directory and resume for every
 * family (ACL, Sparse Meta Networks, the online transformers, the language model: the list is
 * src/models/families.c).
 *
 * A family is a table of functions (mcl_family below): its config keys, how to build its model
 * and data, the loss of one step, validation and its checkpoint. The harness owns everything
 * else and is the same for all families:
 *
 *   config        the family's key groups (e.g. model.*, task.*, data.*) plus the harness's
 *                 train.* keys (mcl_train_keys), parsed from "key = value" text, all or
 *                 nothing; config.txt in the run directory is the full resolved config
 *   the loop      for step s = 1..train.steps: zero the gradients, the family's loss for
 *                 step s, a NaN/Inf loss stops the run (the last good checkpoint is kept),
 *                 backward, optimizer step (Adam family settings, schedule, clipping); a step
 *                 the family declares frozen (mcl_family.frozen) has neither
 *   metrics.csv   "step,loss,<the family's metric names>,lr,steps_per_s,train_s,val_score"
 *                 and the family's validation columns (mcl_family.val_columns), one row
 *                 every train.log_every steps, at validation steps and at the end; on resume
 *                 the rows after the checkpoint are dropped and the header is the current
 *                 one (atomic rewrite)
 *   validation    every train.val_every steps and at the end: the family's score (higher is
 *                 better); best.ckpt holds the best
 *   checkpoints   last.ckpt every train.ckpt_every steps and at the end (atomic writes);
 *                 counters step, train_ms, best_val_ppm, chance_step
 *   progress      a \r-updated line on stderr (step, loss, first metric, steps/s, ETA)
 *   "left chance" the first step at which the mean of the family's first metric over the
 *                 last 100 steps exceeds the family's chance level + 0.10 (logged, counted)
 *   resume        config.txt + last.ckpt: every later step is bit-identical to an
 *                 uninterrupted run (the family draws the data of step s from (seed, s),
 *                 dropout continues from the saved stream counter, the optimizer's state is
 *                 in the checkpoint); a run directory with config.txt but no last.ckpt yet
 *                 (stopped before its first checkpoint) starts again from step 0
 *   failed start  a run that fails before its first step (bad data, bad model size, ...)
 *                 removes what it created (config.txt, metrics.csv, log.txt, the directory
 *                 when it made it), so the same command can simply be run again
 *   stop          opts->stop: the step in progress ends, last.ckpt is written
 *   no stalls     in one process with one part, a step waits for the device once: its loss
 *                 and metrics are queued for reading (non-blocking) while the step is queued,
 *                 the queue is finished after the optimizer step, then the loss is checked and
 *                 the family's step_metrics computes the metrics. So a NaN/Inf loss is seen
 *                 after its optimizer step; the run stops there all the same and the
 *                 parameters it leaves are never saved (the last good checkpoint is kept).
 *                 With several parts each part's loss is read after its backward, as before.
 */
#ifndef MCL_LEARN_TRAIN_H
#define MCL_LEARN_TRAIN_H

#include <signal.h>
#include <stdint.h>
#include <stdio.h>

#include "checkpoint.h"
#include "keys.h"
#include "learner.h"
#include "metacl.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MCL_TRAIN_PATH_MAX 1024
#define MCL_TRAIN_MAX_METRICS 8
#define MCL_TRAIN_MAX_VAL_COLUMNS 16

/* The harness's own settings: the train.* keys. */
typedef struct mcl_train_cfg {
    int64_t steps;        /* total training steps                                     */
    int batch;            /* examples (ACL: sequences) per step                       */
    int schedule;         /* 0 constant, 1 noam                                       */
    float lr;             /* constant: the lr; noam: the factor                       */
    int64_t warmup;       /* noam warm-up steps                                       */
    float clip;           /* > 0: clip the global gradient norm                       */
    uint64_t seed;        /* data draws and dropout (the model's init has its own seed) */
    int64_t log_every, val_every, val_batches, ckpt_every;
    char init[MCL_TRAIN_PATH_MAX]; /* "" or a checkpoint to start from               */
    int parts;            /* the batch is computed in this many parts whose gradients are
                             added in part order (0 = one part per MPI rank); see below    */
    int64_t dist_check;   /* > 0: every n steps, compare a hash of the parameters of all
                             ranks (a debugging aid; they must be identical)              */
} mcl_train_cfg;

/* The train.* rows (names include the "train." prefix). */
const mcl_key *mcl_train_keys(int *n);

/* A block of keys stored at `off` inside a family's config struct; a key's full name is
 * prefix + row name ("model." + "hidden"). */
typedef struct mcl_key_group {
    const char *prefix;
    const mcl_key *keys;
    int n;
    size_t off;
} mcl_key_group;

/* Parts of a step (data parallelism, doc/distributed.md). The global batch of step s (B =
 * train.batch sequences, drawn from (train.seed, s) alone) is cut into P contiguous parts,
 * part p = sequences [p·B/P, (p+1)·B/P). Each part's loss is the family's mean over its
 * sequences, weighted by its share (hi − lo)/B, so the parts' gradients add up to the
 * gradient of the batch mean. An MPI job of N ranks computes parts [r·P/N, (r+1)·P/N) on
 * rank r; the gradients are added in part order (dist.h), so a job of N ranks and one
 * process with train.parts = N compute the same bits (same backend, device and threads).
 * With P > 1 the context's random stream (dropout) of part p is set to a function of
 * (s, p), so it does not depend on which rank computes it either. */
typedef struct mcl_train_part {
    int64_t lo, hi; /* sequences [lo, hi) of the batch                                    */
    int index;      /* p, 0..count-1                                                       */
    int count;      /* P (1: the whole batch in one piece, the single-process default)     */
} mcl_train_part;

/* Log sink handed to the family (the run's log.txt and the caller's stream). */
typedef struct mcl_train_log mcl_train_log;
void mcl_train_logf(mcl_train_log *log, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* A model family. Every function gets the family's state `fs` made by create. */
typedef struct mcl_family {
    const char *kind;        /* "acl": `metacl train acl`, checkpoints' model kind        */
    const char *summary;     /* one line for --help                                       */
    size_t cfg_size;         /* bytes of the family's config struct                       */
    const mcl_key_group *const *groups;
    int n_groups;
    /* Defaults beyond the key rows' (may be NULL). */
    void (*cfg_default)(void *fcfg, mcl_train_cfg *t);
    /* Cross-key checks (may be NULL). */
    mcl_status (*cfg_check)(const void *fcfg, const mcl_train_cfg *t, char *err, size_t len);
    /* The number of steps of a run whose train.steps is 0 (may be NULL: then 0 is an error
     * of the config): e.g. the online family's whole stream. */
    int64_t (*total_steps)(const void *fcfg, const mcl_train_cfg *t);
    /* Build the model and load the data (log what was loaded). */
    mcl_status (*create)(mcl_ctx *ctx, const void *fcfg, const mcl_train_cfg *t,
                         mcl_train_log *log, void **fs, char *err, size_t len);
    void (*free)(void *fs);
    mcl_params *(*params)(void *fs);
    /* The optimizer: the harness fills kind, clipping and the schedule from train.*; the
     * family may adjust (betas, eps, the noam width). */
    void (*optim_config)(void *fs, mcl_optim_config *oc);
    /* Names of the per-step metrics (metrics.csv columns) and the chance level of the
     * first one (for "left chance"; 0 = not tracked). */
    int n_metrics;
    const char *const *metric_names;
    double (*chance)(void *fs);
    /* The loss of part `part` of step s (1-based) on the tape: the mean over the part's
     * sequences of the batch drawn for step s; metrics[n_metrics] filled (means over the
     * part). State that a forward pass changes outside the optimizer (see buffers) changes
     * only for part->index == 0. */
    mcl_status (*step_loss)(void *fs, int64_t step, const mcl_train_part *part,
                            mcl_tensor **loss, double *metrics, char *err, size_t len);
    /* Tensors that the forward pass changes outside the optimizer (running estimates of a
     * normalization; may be NULL): with several ranks, part 0's rank computes them and the
     * harness copies them to every other rank after each step. */
    int (*buffers)(void *fs, mcl_tensor **out, int max);
    /* After the backward of the step's loss and BEFORE its optimizer step: the gradients are
     * readable (Sparse Meta Networks read the last weight gradient there); free the step's
     * data (may be NULL). */
    void (*step_end)(void *fs);
    /* Validation score (higher is better; NaN if none) over `batches` fixed batches; must put
     * back any random state it draws from. */
    mcl_status (*validate)(void *fs, int64_t batches, double *score, char *err, size_t len);
    /* Checkpoints: write the model (+ optimizer, counters); read them back (restore_rng: the
     * context's random stream too), filling *info (counters). */
    mcl_status (*save)(void *fs, const char *path, const mcl_optim *opt,
                       const mcl_ckpt_counter *cn, int n_cn, char *err, size_t len);
    mcl_status (*load)(void *fs, const char *path, mcl_optim *opt, mcl_ckpt_info *info,
                       char *err, size_t len);
    /* train.init: copy what fits from another checkpoint; a one-line note. */
    mcl_status (*init_from)(void *fs, const char *path, char *note, size_t note_len, char *err,
                            size_t len);
    /* Evaluation (`metacl eval FAMILY`): a learner (learner.h) from a checkpoint, owning its
     * model; at most max_lanes problems side by side (0 = no limit). NULL = not evaluable by
     * the protocols. */
    mcl_status (*learner_open)(mcl_ctx *ctx, const char *ckpt, int max_lanes,
                               mcl_learner **out, char *err, size_t len);
    /* Optional: the step's metrics from what its step_loss queued for reading (with
     * mcl_tensor_read_async into the family's own memory), called once the queue is
     * finished: after the optimizer step (one part), or after the part's backward (several
     * parts). Fills the metrics[] entries step_loss left NaN (it may fill the ones the host
     * knows itself). NULL: step_loss fills them all. See "no stalls" below. */
    void (*step_metrics)(void *fs, double *metrics);
    /* Optional: 1 when step s takes no gradient step (an ablation that freezes the weights
     * from some point of a run on; a function of the config and s alone, so every rank and a
     * resumed run agree): step_loss then runs with gradient recording off and the harness
     * does no backward and no optimizer step (the optimizer's state and step count stay as
     * they were). NULL: every step updates. */
    int (*frozen)(void *fs, int64_t step);
    /* Optional: more validation columns of metrics.csv, after val_score. val_columns names
     * them (at most max; the strings are the family state's, fixed from create on);
     * val_values gives their values from the last validate (NaN = an empty cell). Rows
     * without validation leave them empty. NULL: none. */
    int (*val_columns)(void *fs, const char **names, int max);
    void (*val_values)(void *fs, double *values);
    /* Memory, from the config alone (may be NULL: the family checks its own budget):
     * ckpt_floats: the floats of every tensor the family registers with its parameters
     * (model, fast-weight and family state: what a checkpoint's params section holds), exact;
     * train_bytes: a training run's bytes: those, the gradients and both Adam moments of the
     * trained ones, and an estimate of one step's activations with their gradients. The
     * harness refuses a run beyond the memory budget before `create`, and a checkpoint whose
     * config asks for more floats than its params section holds, or more than the budget,
     * before anything is built (mcl_family_cfg_from_ckpt). Sums in double: exact far beyond
     * any budget. */
    double (*ckpt_floats)(const void *fcfg, const mcl_train_cfg *t);
    double (*train_bytes)(const void *fcfg, const mcl_train_cfg *t);
    /* A checkpoint of this family's kind without its data (`ckpt info`, `ckpt export`): the
     * model built from the file's config with every tensor the family registers (state
     * included), the whole file read and verified into it (its random state into ctx); info
     * filled; *params: the model's registry. ckpt_export writes the model alone (config,
     * parameters and state, info's counters and random state) to path, atomically;
     * ckpt_close frees the model. */
    mcl_status (*ckpt_open)(mcl_ctx *ctx, const char *path, void **model, mcl_params **params,
                            mcl_ckpt_info *info, char *err, size_t len);
    mcl_status (*ckpt_export)(void *model, const char *path, const mcl_ckpt_info *info, char *err,
                              size_t len);
    void (*ckpt_close)(void *model);
} mcl_family;

/* The families built into this library (NULL-terminated) and a lookup by kind. */
const mcl_family *const *mcl_families(void);
const mcl_family *mcl_family_find(const char *kind);

/* A run's config: the family's config + train.*. */
typedef struct mcl_run_cfg {
    const mcl_family *family;
    mcl_train_cfg train;
    void *fcfg; /* family->cfg_size bytes */
} mcl_run_cfg;

/* Defaults of every key. MCL_ERR_OOM / MCL_ERR_INVALID (message in err). Free with
 * mcl_run_cfg_free. */
mcl_status mcl_run_cfg_init(mcl_run_cfg *c, const mcl_family *fam, char *err, size_t len);
void mcl_run_cfg_free(mcl_run_cfg *c);
mcl_status mcl_run_cfg_copy(mcl_run_cfg *dst, const mcl_run_cfg *src);
/* One key; "key = value" lines (all or nothing; `what` names the source in messages); a file
 * (at most 1 MiB). */
mcl_status mcl_run_cfg_set(mcl_run_cfg *c, const char *key, const char *value, char *err,
                           size_t len);
mcl_status mcl_run_cfg_parse(mcl_run_cfg *c, const char *text, const char *what, char *err,
                             size_t len);
mcl_status mcl_run_cfg_load(mcl_run_cfg *c, const char *path, char *err, size_t len);
mcl_status mcl_run_cfg_check(const mcl_run_cfg *c, char *err, size_t len);
/* The config a checkpoint of family fam was saved with (its config text parsed over the
 * defaults): the family's struct into fcfg (fam->cfg_size bytes) and, when t is not NULL, the
 * train.* keys. MCL_ERR_FORMAT when the file holds another kind of model. */
mcl_status mcl_family_cfg_from_ckpt(const mcl_family *fam, const char *path, void *fcfg, mcl_train_cfg *t, char *err,
                                    size_t len);
/* Every key as "key = value" lines (malloc'd), family groups first, then train.*. */
char *mcl_run_cfg_to_text(const mcl_run_cfg *c);
/* Every key with its default, range and help (`metacl train FAMILY --help`). */
void mcl_run_cfg_print_help(FILE *f, const mcl_family *fam);

typedef struct mcl_train_result {
    int64_t steps_done;      /* total steps in the run directory's last checkpoint          */
    double last_loss;        /* loss of the last step (NaN when no step ran)                */
    double best_val;         /* best validation score, NaN if none                          */
    int64_t chance_step;     /* first step whose running first metric left chance, or 0    */
    double train_seconds;    /* total training wall time, across resumes                   */
    /* With several MPI ranks, whose error a failed run returns: */
    int error_scope;         /* MCL_TRAIN_ERR_LOCAL, _ALL or _OTHER                          */
    double comm_seconds;     /* time in collectives in this process (gradient exchange, ...) */
    int64_t grad_floats;     /* floats exchanged per step (the gradient)                      */
} mcl_train_result;

/* error_scope: LOCAL = this rank's own error (the CLI prints it naming the rank and stops the
 * job with MPI_Abort); ALL = every rank stopped with this same error (a NaN loss, an
 * interrupt, a config mismatch: rank 0 prints it, every rank exits normally); OTHER = another
 * rank failed (print nothing: its rank prints and aborts the job). One process: LOCAL. */
enum { MCL_TRAIN_ERR_LOCAL = 0, MCL_TRAIN_ERR_ALL = 1, MCL_TRAIN_ERR_OTHER = 2 };

typedef struct mcl_train_opts {
    const char *run_dir;  /* required; created if missing                                  */
    int resume;           /* 1: continue the run in run_dir (cfg is then read from it)    */
    int progress;         /* 1: a progress line on stderr (\r-updated)                    */
    FILE *log;            /* extra copy of the log lines (e.g. stdout), may be NULL        */
    const char *const *overrides; /* "key=value" applied after config.txt on resume       */
    int n_overrides;
    /* When *stop becomes non-zero (a signal handler of the caller sets it), the run finishes
     * the step in progress, writes last.ckpt and returns MCL_ERR_STATE with a message saying
     * how to resume. NULL = never. */
    volatile const sig_atomic_t *stop;
} mcl_train_opts;

/* Run (or resume) training on ctx's backend. Under MPI (dist.h) every rank calls this with
 * the same config; rank 0 alone writes the run directory (config.txt, log.txt, metrics.csv,
 * checkpoints) and prints; every rank reads the run directory on --resume and train.init
 * (so it must be on a file system all ranks see). cfg is ignored when resuming (then `family`
 * names the family whose config.txt is read; otherwise cfg->family is used). A NaN/Inf loss
 * stops the run with MCL_ERR_INVALID, keeping the last good checkpoint. */
mcl_status mcl_train_run(mcl_ctx *ctx, const mcl_family *family, const mcl_run_cfg *cfg,
                         const mcl_train_opts *opts, mcl_train_result *res, char *err,
                         size_t len);

/* A training session without a run directory (`metacl bench FAMILY`, the tests of the
 * OpenCL backend's counters): the family's model, data and optimizer built from cfg (checked
 * like a run's), then the harness's own training step -- the family's step_loss, backward,
 * the optimizer step and the metrics a run logs -- one step per call, exactly as
 * mcl_train_run takes it (no validation, no checkpoints, no files written). One process
 * (train.parts = 0 means one part). */
typedef struct mcl_train_session mcl_train_session;
mcl_status mcl_train_session_open(mcl_ctx *ctx, const mcl_run_cfg *cfg, mcl_train_session **out,
                                  char *err, size_t len);
/* Step s + 1: *loss its loss, metrics[family->n_metrics] its metrics (either may be NULL). */
mcl_status mcl_train_session_step(mcl_train_session *ts, double *loss, double *metrics);
/* The message of the last failure of open/step. */
const char *mcl_train_session_error(const mcl_train_session *ts);
void mcl_train_session_free(mcl_train_session *ts);

#ifdef __cplusplus
}
#endif
#endif
