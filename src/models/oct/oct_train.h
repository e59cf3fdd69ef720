/* oct_train.h — the online transformers as a family on the training harness (train.h):
 * `metacl online` / `metacl train oct`. One harness step is one gradient step of one reader
 * (replay stream): step s is reader e = (s-1) mod E of turn (s-1) / E. Reader 0 reads the
 * stream's next chunk of S = train.batch examples, is scored on it before training on it
 * (prequential), and its losses are the reported ones; readers 1..E-1 read their own next
 * chunk of the past, and after each turn each restarts from the beginning (an empty ring)
 * with probability S / t (t = examples seen), drawn from (train.seed, turn) alone.
 * Every reader's position and rings, and reader 0's per-example log-loss and hits, are in
 * the checkpoint, so a resumed run continues bit for bit.
 * online.freeze_at = P (the paper's Fig. 5 ablation, "stop gradient updates at position P"):
 * from the first chunk of reader 0 that starts at or after example P on, no step updates the
 * weights; reader 0 is still scored and its ring still takes every chunk (the predictions
 * then come from in-context conditioning alone), and the replay readers stop (a frozen
 * replay step computes nothing and reports loss 0).
 */
#ifndef MCL_MODELS_OCT_TRAIN_H
#define MCL_MODELS_OCT_TRAIN_H

#include "oct.h"
#include "train.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MCL_OCT_CKPT_KIND "oct"
#define MCL_OCT_MAX_STREAMS 32

typedef struct mcl_oct_run {
    mcl_oct_config model;
    char source[256];   /* data set spec of the stream                                     */
    char data_dir[1024];
    int split;          /* 0 all, 1 train, 2 val, 3 test (MCL_SPLIT_*)                      */
    int normalize;
    int n_tasks;        /* T tasks                                                         */
    int64_t per_task;   /* M examples per task                                             */
    int pool;           /* > 0: the tasks' classes come from a fixed pool of this many
                           classes, so they recur across tasks (0 = every class)           */
    uint64_t data_seed; /* the stream's draw                                               */
    int streams;        /* E readers (1 = no replay)                                       */
    int optimizer;      /* 0 adamw, 1 adam, 2 sgd                                          */
    float weight_decay;
    float momentum;     /* sgd                                                             */
    int64_t freeze_at;  /* > 0: no gradient step from the chunk that starts at example
                           freeze_at on (the paper's Fig. 5 ablation; 0 = never)           */
} mcl_oct_run;

extern const mcl_family mcl_oct_family;

/* The summary of an online run (from its run directory): the stream is drawn again from
 * config.txt and the per-example record read from last.ckpt. */
typedef struct mcl_oct_report {
    int64_t n;            /* examples scored                                                */
    int n_tasks, per_task_max;
    int n_way;            /* labels: chance is 1/n_way                                      */
    uint64_t model_seed;  /* the run's model.seed, stream.seed and train.seed (config.txt):  */
    uint64_t stream_seed; /* grouped reports list them and pair runs on the stream seed     */
    uint64_t train_seed;
    char source[256];     /* data.source: with stream.seed, which stream the run read        */
    double cum_nll;       /* mean −log p(y_t | x_t, past) over the examples (nats)          */
    double online_acc;    /* mean accuracy                                                   */
    double *task_acc;     /* [n_tasks] (NaN for tasks not reached)                           */
    double *task_nll;     /* [n_tasks]                                                       */
    double *hit;          /* [n] 0/1 per example                                             */
    double *nll;          /* [n]                                                             */
    int32_t *task;        /* [n] task of each example                                        */
    int64_t *pos;         /* [n] position of each example within its task                   */
} mcl_oct_report;

mcl_status mcl_oct_report_load(const char *run_dir, mcl_oct_report *rep, char *err, size_t len);
void mcl_oct_report_free(mcl_oct_report *rep);
/* Within-task accuracy at position i (0-based) over tasks [t0, t1): the mean hit of the
 * examples at positions [i - half, i + half] (a window, half >= 0), NaN when none. */
double mcl_oct_within_acc(const mcl_oct_report *rep, int t0, int t1, int64_t i, int64_t half);

#ifdef __cplusplus
}
#endif
#endif
