/* acl_train.h — the ACL family on the training harness (src/learn/train.h): its config keys,
 * the loss of a step, validation and checkpoints. `metacl train acl` runs it; see doc/acl.md.
 *
 * Keys (besides the harness's train.*; `metacl train acl --help` prints them with ranges):
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
 *   data.augment         none | task: one random image transformation per training task
 *                        (augment.h; validation and evaluation never augment)      [none]
 *   data.val             "": validate on the domains' held-out classes (below); fmnist-val:
 *                        the score is Split-FMNIST domain-incremental accuracy on the 5 000
 *                        held-out Fashion-MNIST training images (dataset.h), contexts from
 *                        the other 55 000 (paper Table 7, meta-validation on the test
 *                        domain)                                                   [""]
 * The ACL family sets the optimizer to Adam (β 0.9 / 0.995, eps 1e-9; noam width =
 * model.hidden). train.batch is the number of task sequences per step. model.image_size may
 * be any side 16..32: the 32×32 data sets are given at that side (mcl_image_to_side, e.g.
 * 28: Fashion-MNIST's native pixels, stroke sets area-resized). Every class of a domain must
 * hold first-shot + task.k_shot + 1 images (checked at the start: 15 shots need 17).
 * train.init copies from a checkpoint the tensors with the same name and shape; the
 * label-input rows and the head columns are copied for the classes both have, and the
 * "unknown" label row goes to the new unknown row.
 *
 * Data of step s: the episodes are drawn from Philox stream (train.seed, 1000000 + s), so a
 * resumed run draws what an uninterrupted one would. Validation uses the VAL split
 * (held-out classes) of the domains that have one (prepared stroke sets) with fixed episodes
 * (streams 2000000 + v); user data sets are validated on their training data (noted in the
 * log). The score is the mean query accuracy of the main and ACL terms (the ACL terms are
 * measured even for the no-ACL baseline), dropout off. Per-step metrics (metrics.csv):
 * acc_main, acc_acl, acc_first_shot (the mean accuracy of the terms of each kind, -1 when a
 * kind is absent).
 */
#ifndef MCL_MODELS_ACL_TRAIN_H
#define MCL_MODELS_ACL_TRAIN_H

#include <stdint.h>
#include <stdio.h>

#include "acl.h"
#include "train.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MCL_TRAIN_MAX_DOMAINS 8

/* The ACL family's config (the model.*, task.* and data.* keys). */
typedef struct mcl_acl_task_cfg {
    mcl_acl_config model;
    int n_way, k_shot, n_tasks, first_shot, acl, objective_mean, class_incremental;
    float scale;
    int n_domains;
    char domains[MCL_TRAIN_MAX_DOMAINS][MCL_TRAIN_PATH_MAX];
    int n_domain_scale;
    float domain_scale[MCL_TRAIN_MAX_DOMAINS];
    int alternate, normalize;
    int augment; /* data.augment: 0 none, 1 task (one random image transformation per task) */
    char data_dir[MCL_TRAIN_PATH_MAX];
    char val_data[MCL_TRAIN_PATH_MAX]; /* data.val: "" or fmnist-val */
    int val_tasks;                     /* data.val_tasks: tasks of the fmnist-val Split-FMNIST */
} mcl_acl_task_cfg;

/* The family table (`metacl train acl`). A run config of it: mcl_run_cfg_init(&c,
 * &mcl_acl_family, ...); c.fcfg is an mcl_acl_task_cfg. */
extern const mcl_family mcl_acl_family;

/* Copy the parameters of checkpoint `path` into m where they fit (see train.init). Writes a
 * one-line summary into note (may be NULL). */
mcl_status mcl_acl_init_from(mcl_acl *m, const char *path, char *note, size_t note_len,
                             char *err, size_t err_len);

#ifdef __cplusplus
}
#endif
#endif
