/* sampler.h — episodes and streams drawn from image datasets (public API).
 *
 * Everything here returns HOST arrays of example indices (into an mcl_dataset), labels and
 * tags; the batching functions at the end turn rows of those arrays into tensors on any
 * backend. All randomness comes from an mcl_rng (Philox keyed by (seed, stream), rng.h) that
 * the caller owns, so a draw is reproducible from (seed, stream) and independent of the
 * backend. Functions that can fail on data (too few classes or examples) return a status and
 * write a message into err (err may be NULL); nothing here calls exit().
 *
 *   episodes.c   N-way K-shot ACL tasks and multi-task sequences (doc/acl-model.md §3)
 *   streams.c    Split-X (doc/acl.md, Evaluation), piecewise-stationary streams (online-transformer
 *                paper §4), Online-X (Sparse-MetaNet §4.1.2 and App. D)
 *
 * Labels are int32 on the host; batches carry them as float class indices.
 */
#ifndef MCL_SAMPLER_H
#define MCL_SAMPLER_H

#include <stddef.h>
#include <stdint.h>

#include "augment.h"
#include "dataset.h"
#include "rng.h"
#include "status.h"
#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ======================================================================= utilities */

/* A class pool: a dataset and optionally a subset of its classes (global class ids, each
 * present in ds). classes == NULL means every class present in ds (n_classes ignored). */
typedef struct mcl_class_pool {
    const mcl_dataset *ds;
    const int32_t *classes;
    int n_classes;
} mcl_class_pool;

/* The pool's classes as positions 0..ds->n_classes-1 (see dataset.h class_ids/class_start),
 * written to pos (capacity cap). Returns the count via *n. Errors: a class not in ds, a
 * duplicate class, cap too small. */
mcl_status mcl_class_pool_positions(const mcl_class_pool *pool, int *pos, int cap, int *n,
                                    char *err, size_t err_len);

/* k distinct integers drawn uniformly from [0, m), in uniformly random order (every ordered
 * k-subset equally likely). 0 <= k <= m < 2^32. scratch: NULL, or m int64 of workspace
 * (used when k is a large fraction of m; without it such a draw allocates). */
mcl_status mcl_sample_distinct(mcl_rng *rng, int64_t m, int64_t k, int64_t *out, int64_t *scratch);

/* ======================================================================= episodes (doc/acl-model.md §3) */

/* One sequence of tasks A -> B -> ... Zero-initialise, then set:                             */
typedef struct mcl_episode_cfg {
    int n_way;     /* N >= 1 classes per task                                              */
    int k_shot;    /* K >= 1 context examples per class                                    */
    int n_query;   /* queries per class >= 1 (doc/acl-model.md §3: 1)                              */
    int first_shot;/* first-shot examples per class: 0 or 1 (doc/acl-model.md §3: 1)              */
    int n_tasks;   /* tasks per sequence >= 1                                              */
    /* 0 (default): tasks of one sequence that draw from the same DATASET use disjoint classes
     * (the paper, App. A.7: "in principle ... no underlying class overlap"); 1: every task is
     * drawn independently (what the authors' code does). Tasks drawn from different datasets
     * never interact. */
    int share_classes;
    /* 1: class-incremental labels, task i's labels shifted by N*i (doc/acl-model.md §3, T tasks). */
    int class_incremental;
} mcl_episode_cfg;

/* One task. All examples of one task are distinct images: per class, 1 first-shot example,
 * K context examples and n_query queries, disjoint. Labels are label_offset + 0..N-1, assigned
 * to classes at random per task. Each role's list is shuffled (random class order). */
typedef struct mcl_task {
    const mcl_dataset *ds; /* where the indices point                                     */
    int n_way, k_shot, n_query, n_first;
    int label_offset;      /* 0, or N*i for task i of a class-incremental sequence         */
    int32_t *class_of_label; /* [N]: global class id of label label_offset + j            */
    int64_t *first_index;  /* [N*n_first] first-shot examples (one per class), shuffled    */
    int32_t *first_label;
    int64_t *ctx_index;    /* [N*K] context: all N*K examples shuffled                      */
    int32_t *ctx_label;
    int64_t *query_index;  /* [N*n_query] queries, shuffled                                 */
    int32_t *query_label;
    mcl_aug aug;           /* the task's image randomization (training only; zero = none):
                            * mcl_episode_augment; mcl_episode_sample resets it            */
} mcl_task;

typedef struct mcl_episode {
    mcl_episode_cfg cfg;
    int n_tasks;
    mcl_task *task; /* [n_tasks] */
    void *mem;      /* internal: one block holding every array */
} mcl_episode;

/* Allocate a sequence for cfg (arrays sized once; sample into it as often as needed). */
mcl_status mcl_episode_create(const mcl_episode_cfg *cfg, mcl_episode **out);
void mcl_episode_free(mcl_episode *ep);

/* Draw all tasks of ep: task i from pools[i] (n_tasks pools; the same pool may repeat).
 * Uses rng only (the draw is a function of the rng's (seed, stream, index)). Errors (ep left
 * unspecified): a pool with fewer than N usable classes, a class with fewer than
 * n_first + K + n_query images. */
mcl_status mcl_episode_sample(mcl_episode *ep, const mcl_class_pool *pools, mcl_rng *rng,
                              char *err, size_t err_len);

/* Give every task of a sampled sequence its own image randomization drawn from cfg with rng
 * (augment.h; cfg NULL = none). mcl_task_batch applies it to all of the task's images. */
void mcl_episode_augment(mcl_episode *ep, const mcl_aug_cfg *cfg, mcl_rng *rng);

/* ======================================================================= streams (streams.c) */

/* ---- Split-X (doc/acl.md, Evaluation) ---- */
typedef enum mcl_splitx_mode {
    MCL_SPLITX_DOMAIN = 0, /* labels 0..C-1 within each task, C outputs          */
    MCL_SPLITX_CLASS = 1   /* "true" labels 0..T*C-1 over the whole split, T*C outputs */
} mcl_splitx_mode;

typedef struct mcl_splitx_cfg {
    int n_tasks;          /* T: 5 (or 2 for the 2-task class-incremental version) */
    int classes_per_task; /* C: 2                                                  */
    int k_shot;           /* K training images per class                          */
    int run;              /* r >= 0: run r uses images r*K .. r*K+K-1 of each class (mod its size) */
    mcl_splitx_mode mode;
    /* T*C global class ids in split order (task t = classes [t*C, t*C+C)); NULL = the first
     * T*C classes of the training set in ascending id order (Split-MNIST: {0,1},...,{8,9}). */
    const int32_t *classes;
    /* 0: a class's training images in dataset order; else: in the order of a permutation keyed
     * by (shuffle_seed, class), the same for every run, so runs stay disjoint. */
    uint64_t shuffle_seed;
    /* 1 (with classes NULL): run r draws its T*C classes from the training set's classes
     * without replacement, in the order of a permutation keyed by (shuffle_seed, run) — for a
     * set with many classes (the stroke sets' held-out classes: Split-Omniglot's protocol),
     * where the first T*C classes every run would make the runs share their classes. */
    int draw_classes;
} mcl_splitx_cfg;
/* Context and queries from one set (train == test, e.g. the test split of a set split by
 * classes): each class's queries are its images other than the run's K context images, so a
 * class needs more than K images. Otherwise the queries are all of the test set's images of
 * the class. */

typedef struct mcl_splitx {
    mcl_splitx_cfg cfg;   /* cfg.classes is NULLed (see task_class)                   */
    int n_outputs;        /* C (domain) or T*C (class)                                */
    const mcl_dataset *train, *test;
    int32_t *task_class;  /* [T*C] global class id of task t, position j              */
    /* context: task 0's C*K examples, then task 1's, ...; within a task round robin
     * c0, c1, ..., c0, c1, ... (example i of every class before example i+1)          */
    int64_t n_ctx;
    int64_t *ctx_index;   /* into train */
    int32_t *ctx_label;
    int32_t *ctx_task;
    int64_t *task_ctx_start; /* [T+1] */
    /* queries: every test image of every task class, task by task, class by class, in test
     * dataset order. doc/acl.md, Evaluation queries them all after the last task; for the accuracy
     * matrix R[i][j] query task j's range [task_query_start[j], task_query_start[j+1]) from
     * the state after task i's context. Queries never update the state. */
    int64_t n_query;
    int64_t *query_index; /* into test */
    int32_t *query_label;
    int32_t *query_task;
    int64_t *task_query_start; /* [T+1] */
} mcl_splitx;

mcl_status mcl_splitx_create(const mcl_dataset *train, const mcl_dataset *test,
                             const mcl_splitx_cfg *cfg, mcl_splitx **out, char *err,
                             size_t err_len);
void mcl_splitx_free(mcl_splitx *sx);

/* ---- streams of labelled examples with hidden task structure ---- */

/* Role of a class in its task (Online-X; every class of a piecewise stream is NEW). */
enum {
    MCL_ROLE_NEW = 0,   /* a class not in the previous task (every class of task 0)             */
    MCL_ROLE_KEPT = 1,  /* same class, same label as in the previous task (interference)        */
    MCL_ROLE_PERSEV = 2 /* a class of the previous task under a new label (perseveration)       */
};

/* A stream: what the learner sees is (index[i], label[i]) in order; everything else is a tag
 * for evaluation only (task boundaries are not given to the learner). */
typedef struct mcl_stream {
    const mcl_dataset *ds;
    int n_way, n_tasks;
    int64_t n;            /* examples                                                        */
    int64_t *index;       /* [n] image index into ds                                         */
    int32_t *label;       /* [n] 0..n_way-1                                                  */
    int32_t *task;        /* [n] tag: task id                                                */
    int8_t *role;         /* [n] tag: MCL_ROLE_* of the example's class                      */
    int32_t *prev_label;  /* [n] tag: PERSEV: the label this class had in the previous task; else -1 */
    int64_t *task_start;  /* [n_tasks+1]                                                     */
    int32_t *task_len;    /* [n_tasks] rounds (Online-X) or examples (piecewise) of task t    */
    int32_t *task_class;  /* [n_tasks*n_way] global class id with label j in task t          */
    int8_t *task_role;    /* [n_tasks*n_way] role of label j in task t                        */
    int32_t *task_prev_label; /* [n_tasks*n_way] previous-task label of label j's class, or -1 */
} mcl_stream;

void mcl_stream_free(mcl_stream *s);

/* Piecewise-stationary stream (online-transformer paper §4): T tasks; task t draws N distinct
 * classes from the pool (independently of other tasks), maps them to labels 0..N-1 at random,
 * and draws M examples uniformly from the union of those classes' images without replacement
 * (starting a fresh random pass when the union is used up). */
typedef struct mcl_pwstream_cfg {
    int n_tasks;      /* T (paper: 100)  */
    int n_way;        /* N (paper: 10)   */
    int64_t per_task; /* M (paper: 1000) */
} mcl_pwstream_cfg;

mcl_status mcl_stream_piecewise(const mcl_class_pool *pool, const mcl_pwstream_cfg *cfg,
                                mcl_rng *rng, mcl_stream **out, char *err, size_t err_len);

/* Online-X stream (Sparse-MetaNet App. D generator; see streams.c for the reading). Task 0:
 * N random classes with random labels. Task t > 0: n_kept classes of task t-1 keep class and
 * label; n_persev other classes of task t-1 get labels drawn from the labels not kept; the
 * remaining labels go to new classes. Task length: rounds drawn uniformly in
 * [len_min, len_max], each round round_size examples drawn from the union of the task's class
 * images without replacement (a fresh random pass when it is used up). */
typedef struct mcl_onlinex_cfg {
    int n_tasks;        /* tasks in the stream                                     */
    int n_way;          /* 5                                                       */
    int n_kept;         /* 1                                                       */
    int n_persev;       /* 2                                                       */
    int len_min, len_max; /* rounds per task (paper: train 15-30; test 1-15, 20-35, ...) */
    int round_size;     /* examples per round (paper: 32)                          */
    int64_t max_per_class; /* 0: all images of a class; else a random subset this big per task */
    /* 0 (default): the paper's TEXT: a perseveration class always changes its label and new
     * classes are never classes of the previous task. 1: the appendix CODE as printed, where a
     * perseveration class may draw its old label again and a class dropped from the previous
     * task may come back as a "new" class. */
    int code_exact;
} mcl_onlinex_cfg;

mcl_status mcl_stream_onlinex(const mcl_class_pool *pool, const mcl_onlinex_cfg *cfg,
                              mcl_rng *rng, mcl_stream **out, char *err, size_t err_len);

/* ======================================================================= batching */

/* Layout of every batch (documented contract):
 *   images: numel rows*1024 floats, row r = pixels of one 32×32 image in row-major order —
 *           i.e. [rows, 1024], or equivalently [rows, 1, 32, 32] or [B, L, 1024]; or a
 *           4-D [rows, 1, S, S] with S < 32 (a model's image_size, e.g. 28): each row is
 *           the S×S image of mcl_image_to_side (dataset.h);
 *           value (p/255 - mean)/std with the image's dataset mean/std when normalize != 0,
 *           else p/255.
 *   labels: numel rows floats, the class index as a float (NULL tensor = not wanted).
 * For B sequences of L steps, row r = b*L + t (batch-major, like [B, L, ...]).
 * Each tensor is filled with exactly one mcl_tensor_write. */

mcl_status mcl_batch_rows(mcl_tensor *images, mcl_tensor *labels, const mcl_dataset *ds,
                          const int64_t *index, const int32_t *label, int64_t rows,
                          int normalize);

typedef enum mcl_task_part {
    MCL_PART_FIRST = 0, /* the N first-shot examples */
    MCL_PART_CONTEXT,   /* the N*K context examples   */
    MCL_PART_QUERY      /* the N*n_query queries      */
} mcl_task_part;

/* Rows in one part of a task. */
int64_t mcl_task_part_len(const mcl_task *t, mcl_task_part part);
/* The rows of one part of task `task` of a sampled sequence, without reaching into the structs
 * (for bindings): *idx / *lab point into ep (valid until its next sample or free), *n rows.
 * MCL_ERR_NULL / MCL_ERR_INVALID for a NULL pointer, a task or part out of range. */
mcl_status mcl_episode_rows(const mcl_episode *ep, int task, mcl_task_part part, const int64_t **idx,
                            const int32_t **lab, int64_t *n);

/* B tasks (e.g. task i of B sequences; they may come from different datasets, must have the
 * same part length L): images [B*L*1024], labels [B*L], row b*L + j = example j of the part
 * of tasks[b]. */
mcl_status mcl_task_batch(mcl_tensor *images, mcl_tensor *labels, const mcl_task *const *tasks,
                          int B, mcl_task_part part, int normalize);

#ifdef __cplusplus
}
#endif
#endif
