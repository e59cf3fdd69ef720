/* smn_train.h — Sparse Meta Networks as a family on the training harness (train.h):
 * `metacl train smn`, and the online runs of the evaluation protocols (`metacl eval smn`).
 *
 * Tasks (run key `task`):
 *   wcst     the WCST agent (mlp), A2C; an environment step is one episode of 16 cards
 *   onlinex  an Online-X stream of 5-way tasks (resnet); a step is one round (train.batch
 *            images) scored before the update (prequential)
 *   classes  pretraining for the Online-X baselines: batches of the split's images with
 *            their class as label (model.n_out = the number of classes)
 * One harness step is one window of Algorithm 1: with fast weights, k − 1 fast steps (a
 * prediction, its loss, the sparse write) then the gradient step whose loss the harness
 * backpropagates into θ and φ; without fast weights (the online baselines), one step.
 * "Updates" count both kinds, as the paper does.
 */
#ifndef MCL_MODELS_SMN_TRAIN_H
#define MCL_MODELS_SMN_TRAIN_H

#include "checkpoint.h"
#include "smn.h"
#include "train.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { MCL_SMN_TASK_WCST = 0, MCL_SMN_TASK_ONLINEX = 1, MCL_SMN_TASK_CLASSES = 2 };
enum { MCL_SMN_OPT_ADAM = 0, MCL_SMN_OPT_RMSPROP = 1, MCL_SMN_OPT_SGD = 2 };

typedef struct mcl_smn_run {
    mcl_smn_config model;
    int task;            /* MCL_SMN_TASK_*                                               */
    int optimizer;       /* MCL_SMN_OPT_*                                                */
    /* wcst */
    uint64_t env_seed;
    int episode_len, solve_episodes, switch_within;
    float reward_correct, reward_wrong;
    float value_coef, entropy_coef; /* A2C                                              */
    /* onlinex / classes */
    char source[256];
    char data_dir[1024];
    int split;           /* MCL_SPLIT_*                                                  */
    int normalize;
    int n_tasks, len_min, len_max, n_kept, n_persev;
    uint64_t data_seed;
} mcl_smn_run;

extern const mcl_family mcl_smn_family;

/* ---- online runs for the evaluation protocols (smn_eval.c) ---- */

/* What one agent does on a stream (run: a fresh environment / stream each). */
typedef enum mcl_smn_agent {
    MCL_SMN_AGENT_ALG1 = 0,    /* Algorithm 1 (fast steps + a gradient step every k)          */
    MCL_SMN_AGENT_FAST_ONLY,   /* fast steps only, slow weights frozen (eval_* hyperparameters)*/
    MCL_SMN_AGENT_ONLINE,      /* a gradient step per environment step, never reset            */
    MCL_SMN_AGENT_OFFLINE,     /* the same, weights and optimizer reset at each task's start   */
    MCL_SMN_AGENT_FROZEN       /* no update at all (a check)                                   */
} mcl_smn_agent;

/* Per task of one run. */
typedef struct mcl_smn_task_rec {
    int64_t steps;            /* environment steps (episodes or rounds) in the task           */
    int64_t updates_to_solve; /* wcst: updates from the task's start to its solve (-1)       */
    int64_t persev_errors;    /* wcst: perseveration errors; onlinex: count                   */
    int64_t persev_n;         /* onlinex: perseveration-class examples                        */
    int64_t kept_err, kept_n; /* onlinex: interference errors / kept-class examples           */
    int64_t hits, n;          /* examples (cards) right / seen                                */
} mcl_smn_task_rec;

typedef struct mcl_smn_online_opts {
    mcl_smn_agent agent;
    float lr;                 /* slow-weight optimizer (ALG1, ONLINE, OFFLINE)                */
    int optimizer;            /* MCL_SMN_OPT_*                                                */
    uint64_t seed;            /* the run's environment / stream seed                          */
    int max_tasks;            /* stop after this many tasks (wcst: solved; onlinex: seen)     */
    int64_t max_steps;        /* and after this many environment steps                         */
    const char *init;         /* checkpoint to start from (NULL: the config's initialization) */
    int new_head;             /* with init: keep the head's random init (a pretrained backbone)*/
    int round_size;           /* onlinex: images per round (0: 32)                            */
} mcl_smn_online_opts;

typedef struct mcl_smn_online_result {
    int n_tasks;
    mcl_smn_task_rec *task;   /* [n_tasks]                                                     */
    int64_t steps, updates;
    double seconds;
} mcl_smn_online_result;

void mcl_smn_online_result_free(mcl_smn_online_result *r);

/* Run one agent on a fresh environment or stream described by cfg (with opts->seed). */
mcl_status mcl_smn_online_run(mcl_ctx *ctx, const mcl_smn_run *cfg, const mcl_smn_online_opts *opts,
                              mcl_smn_online_result *out, char *err, size_t len);

/* The model of a checkpoint on ctx, every tensor loaded (the whole file is verified); info
 * (may be NULL) receives what the file says about itself (free with mcl_ckpt_info_free). */
mcl_status mcl_smn_open(mcl_ctx *ctx, const char *path, mcl_smn **out, mcl_ckpt_info *info, char *err,
                        size_t len);
/* Write m with the config text, random state and counters of info, without optimizer state
 * (what data/checkpoints/ ships); atomically. */
mcl_status mcl_smn_export(mcl_smn *m, const char *path, const mcl_ckpt_info *info, char *err, size_t len);

/* A run config from a checkpoint's config text. */
mcl_status mcl_smn_run_from_ckpt(const char *path, mcl_smn_run *cfg, char *err, size_t len);

#ifdef __cplusplus
}
#endif
#endif
