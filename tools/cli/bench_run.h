/* bench_run.h — the timing loop shared by `metacl bench acl`, `metacl bench oct`, `metacl
 * bench smn` and `metacl bench lm`: a table of workloads (setup, one timed iteration,
 * teardown, optionally a note), --only / --reps / --threads / --backend / --json, one warm-up
 * iteration, best and median milliseconds. */
#ifndef MCL_TOOLS_BENCH_RUN_H
#define MCL_TOOLS_BENCH_RUN_H

#include "metacl.h"

#define MCL_BENCH_MAX_WORKLOADS 16
#define MCL_BENCH_MAX_EXTRAS 8

/* What a workload measured besides time (a memory figure, a throughput), filled after its
 * timed iterations: a line of text and up to MCL_BENCH_MAX_EXTRAS named numbers. ms_best and
 * ms_median are inputs: the workload's timings, set before the call (bytes/s from them, say). */
typedef struct mcl_bench_note {
    double ms_best, ms_median;             /* in: this workload's timings                */
    char text[256];                        /* "" = none                                  */
    int n;                                 /* named numbers in key[] / value[]           */
    const char *key[MCL_BENCH_MAX_EXTRAS]; /* JSON field names (static strings)          */
    double value[MCL_BENCH_MAX_EXTRAS];
} mcl_bench_note;

typedef struct mcl_bench_workload {
    const char *name, *desc;
    int default_reps;
    /* setup returns state (NULL on error); iter runs one timed iteration (0 = ok) */
    void *(*setup)(mcl_ctx *ctx);
    int (*iter)(mcl_ctx *ctx, void *st);
    void (*teardown)(void *st);
    /* optional (NULL: no note): called once after the timed iterations, note zeroed but for
     * the timings */
    void (*note)(void *st, mcl_bench_note *note);
} mcl_bench_workload;

/* `metacl bench <bench>` over the n workloads (about: the --help line; epilog: below the
 * options). JSON: {"bench":..., "impl":"metacl", "backend", "device", "device_index",
 * "device_platform", "device_driver", "device_type" (null on ref), "threads", "workloads":[{"name",
 * "desc", "reps", "ms_best", "ms_median", and the backend counters per timed iteration, the
 * finish that ends it excluded (backend.h, mcl_backend_stats): "op_calls", "enqueues",
 * "clblast_calls", "blocking", "blocking_reads", "blocking_writes", "finishes", "maps",
 * "nonblocking", "bytes_h2d", "bytes_d2h"}]}; a workload with a note adds "note" (its text,
 * when not empty) and its named numbers as fields of its entry. On the reference backend the
 * record also has the roofs, "peak_gflops" and "triad_gbs" (roofs.h, measured once before the
 * workloads), and each entry the roofline bound of one timed iteration (opcost.h, the average
 * over the timed iterations): "bound_ms" (the sum over its op calls of max(flops / peak,
 * bytes / triad)), "flops", "bytes", "bound_fraction" (bound_ms / ms_median),
 * "bound_compute_share" (the part of bound_ms from calls under the compute roof), "flops_ms"
 * (flops / peak alone: the floor of any implementation doing these flops) and "bound_ops"
 * (per op and pass: calls, flops, bytes, bound_ms). --bound prints the same as a table under
 * the notes (an error on another backend). The text output lists the
 * notes under the table ("<name>: <text>"). Returns the exit status. */
int mcl_bench_main(const char *bench, const char *about, const char *epilog,
                   const mcl_bench_workload *wl, int n, uint64_t seed, int argc, char **argv);

/* The `train_step` workload of each family's bench (bench_train.c): the harness's own
 * training step (mcl_train_session_step) on a family's config ("key = value" lines, where
 * @IMAGES@ stands for an idx: domain of generated images and @TEXT@ for the directory of a
 * generated two-domain text corpus, both in a temporary directory removed by free). open
 * prints why it failed to stderr and returns NULL; step returns 0 when the step ran. */
typedef struct mcl_bench_train mcl_bench_train;
mcl_bench_train *mcl_bench_train_open(mcl_ctx *ctx, const char *family, const char *config);
int mcl_bench_train_step(mcl_bench_train *b, double *loss);
void mcl_bench_train_free(mcl_bench_train *b);
/* A workload's iter and teardown over an mcl_bench_train (st). */
int mcl_bench_train_iter(mcl_ctx *ctx, void *st);
void mcl_bench_train_teardown(void *st);

/* Sort n timings in place, ascending (best first, median in the middle). */
void mcl_bench_sort(double *t, int n);

/* A tensor ~ N(0, std²) from Philox (seed, stream); a parameter (requires grad) when asked. */
mcl_tensor *mcl_bench_rand(mcl_ctx *ctx, int ndim, const int64_t *shape, uint64_t seed,
                           uint64_t stream, float std, int requires_grad);

#endif
