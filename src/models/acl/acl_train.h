/* acl_train.h — ACL meta-training runs (SPEC-ACL §4): configuration, the training loop,
 * run directories, exact resume. Used by `metacl train acl`; see doc/acl.md.
 *
 * A training config is text, one "key = value" per line ('#' comments). Keys:
 *   model.*              every key of the model config (acl.h), e.g. model.hidden = 128
 *   task.n_way           N classes per task (the model's n_way must be N, or N·T when
 *                        task.class_incremental)                                   [5]
 *   task.k_shot          K context examples per class                              [5]
 *   task.n_tasks         T tasks per sequence (1..16)                              [2]
 *   task.first_shot      1: first-shot terms (auxiliary loss)                      [1]
 *   task.acl             1: ACL (backward-transfer) terms; 0: the no-ACL baseline  [1]
 *   task.objective       two_task (c·[Σ s_d(fs+main) + acl]) | mean (mean of terms) [two_task]
 *   task.scale           c of the two_task form                                    [0.2]
 *   task.class_incremental  1: labels of task i shifted by N·i                     [0]
 *   data.domains         comma list of data sets (prepared names or user specs, see
 *                        dataset.h); task i of step s draws from domain (i + s) mod D when
 *                        data.alternate = 1, else from domain i mod D              [hanzi,hershey]
 *   data.domain_scale    comma list, the loss scale s_d of each domain's fs and main terms
 *                        (one value = all domains)                                 [1]
 *   data.alternate       1: the domain order alternates every step                  [1]
 *   data.dir             prepared-data directory ("" = $METACL_DATA or data/cache)  [""]
 *   data.normalize       1: images standardized with the set's mean/std             [1]
 *   train.steps          total meta-training steps                                  [1000]
 *   train.batch          sequences per step                                         [16]
 *   train.schedule       constant | noam                                            [constant]
 *   train.lr             constant: the lr; noam: the factor (lr = f·hidden^-0.5·min(..)) [1e-3]
 *   train.warmup         noam warm-up steps                                         [5000]
 *   train.clip           > 0: clip the global gradient norm                         [0]
 *   train.seed           episodes, dropout; the model init is model.seed            [1]
 *   train.log_every      metrics.csv row (and progress line) every n steps          [10]
 *   train.val_every      meta-validation every n steps (0 = never)                  [200]
 *   train.val_batches    validation batches (of train.batch sequences)              [8]
 *   train.ckpt_every     checkpoint every n steps (and always at the end)           [200]
 *   train.init           "" or a checkpoint to start from (meta-finetuning): tensors with
 *                        the same name and shape are copied; the label-input rows and
 *                        the head columns are copied for the classes both have, and the
 *                        "unknown" label row goes to the new unknown row          [""]
 * Validation uses the VAL split (held-out classes) of the domains that have one (prepared
 * stroke sets); user data sets are validated on their training data (noted in the log).
 *
 * A run directory holds: config.txt (the full resolved config), metrics.csv, log.txt,
 * last.ckpt and best.ckpt (best validation score). Checkpoints carry the counters step,
 * train_ms (total training wall time, across resumes), best_val_ppm and chance_step.
 * Resume (mcl_acl_train with resume = 1) reloads config.txt and last.ckpt and continues so
 * that every later step is bit-identical to an uninterrupted run: the episodes of step s are
 * drawn from Philox stream (train.seed, 1000000 + s), dropout continues from the saved stream
 * counter, Adam's moments and step count come from the checkpoint, and metrics.csv rows after
 * the checkpoint are dropped.
 */
#ifndef MCL_MODELS_ACL_TRAIN_H
#define MCL_MODELS_ACL_TRAIN_H

#include <stdint.h>
#include <stdio.h>

#include "acl.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MCL_TRAIN_MAX_DOMAINS 8
#define MCL_TRAIN_PATH_MAX 1024

typedef struct mcl_acl_train_cfg {
    mcl_acl_config model;
    int n_way, k_shot, n_tasks, first_shot, acl, objective_mean, class_incremental;
    float scale;
    int n_domains;
    char domains[MCL_TRAIN_MAX_DOMAINS][MCL_TRAIN_PATH_MAX];
    int n_domain_scale;
    float domain_scale[MCL_TRAIN_MAX_DOMAINS];
    int alternate, normalize;
    char data_dir[MCL_TRAIN_PATH_MAX];
    int64_t steps;
    int batch;
    int schedule_noam;
    float lr;
    int64_t warmup;
    float clip;
    uint64_t seed;
    int64_t log_every, val_every, val_batches, ckpt_every;
    char init[MCL_TRAIN_PATH_MAX];
} mcl_acl_train_cfg;

void mcl_acl_train_cfg_default(mcl_acl_train_cfg *c);
/* One key (model.*, task.*, data.*, train.*). Unknown keys and bad values: MCL_ERR_INVALID
 * with a message naming them. */
mcl_status mcl_acl_train_cfg_set(mcl_acl_train_cfg *c, const char *key, const char *value,
                                 char *err, size_t err_len);
/* "key = value" lines onto *c (all or nothing). `what` names the source in messages. */
mcl_status mcl_acl_train_cfg_parse(mcl_acl_train_cfg *c, const char *text, const char *what,
                                   char *err, size_t err_len);
/* Read a config file (at most 1 MiB) and parse it onto *c. */
mcl_status mcl_acl_train_cfg_load(mcl_acl_train_cfg *c, const char *path, char *err,
                                  size_t err_len);
/* Cross-key checks (n_way vs model, scales, counts). */
mcl_status mcl_acl_train_cfg_check(const mcl_acl_train_cfg *c, char *err, size_t err_len);
/* The full config as text (every key). malloc'd. */
char *mcl_acl_train_cfg_to_text(const mcl_acl_train_cfg *c);

/* What a run reports (also written to the run directory). */
typedef struct mcl_acl_train_result {
    int64_t steps_done;      /* total steps in the run directory's last checkpoint          */
    double last_loss;        /* loss of the last step                                       */
    double best_val;         /* best validation score (mean query accuracy), NAN if none    */
    int64_t chance_step;     /* first step whose running query accuracy left chance, or 0  */
    double train_seconds;    /* total training wall time, across resumes                   */
} mcl_acl_train_result;

typedef struct mcl_acl_train_opts {
    const char *run_dir;  /* required; created if missing                                  */
    int resume;           /* 1: continue the run in run_dir (cfg is then read from it)    */
    int progress;         /* 1: a progress line on stderr (\r-updated)                    */
    FILE *log;            /* extra copy of the log lines (e.g. stdout), may be NULL        */
    /* Overrides applied after config.txt on resume ("key=value" strings). */
    const char *const *overrides;
    int n_overrides;
} mcl_acl_train_opts;

/* Run (or resume) meta-training on ctx's backend. cfg is ignored when resuming. Returns
 * MCL_OK when train.steps were reached; MCL_ERR_NUMERIC-like failures (a NaN/Inf loss) stop
 * the run with MCL_ERR_INVALID and a message, keeping the last good checkpoint. */
mcl_status mcl_acl_train(mcl_ctx *ctx, const mcl_acl_train_cfg *cfg,
                         const mcl_acl_train_opts *opts, mcl_acl_train_result *res, char *err,
                         size_t err_len);

/* Copy the parameters of checkpoint `path` into m where they fit (see train.init). Writes a
 * one-line summary into note (may be NULL). */
mcl_status mcl_acl_init_from(mcl_acl *m, const char *path, char *note, size_t note_len,
                             char *err, size_t err_len);

#ifdef __cplusplus
}
#endif
#endif
