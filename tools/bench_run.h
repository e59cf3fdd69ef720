/* bench_run.h — the timing loop shared by `metacl bench acl` and `metacl bench oct`: a table
 * of workloads (setup, one timed iteration, teardown), --only / --reps / --threads /
 * --backend / --json, one warm-up iteration, best and median milliseconds. */
#ifndef MCL_TOOLS_BENCH_RUN_H
#define MCL_TOOLS_BENCH_RUN_H

#include "metacl.h"

#define MCL_BENCH_MAX_WORKLOADS 16

typedef struct mcl_bench_workload {
    const char *name, *desc;
    int default_reps;
    /* setup returns state (NULL on error); iter runs one timed iteration (0 = ok) */
    void *(*setup)(mcl_ctx *ctx);
    int (*iter)(mcl_ctx *ctx, void *st);
    void (*teardown)(void *st);
} mcl_bench_workload;

/* `metacl bench <bench>` over the n workloads (about: the --help line; epilog: below the
 * options). JSON: {"bench":..., "impl":"metacl", "backend", "threads", "workloads":[{"name",
 * "desc", "reps", "ms_best", "ms_median"}]}. Returns the exit status. */
int mcl_bench_main(const char *bench, const char *about, const char *epilog,
                   const mcl_bench_workload *wl, int n, uint64_t seed, int argc, char **argv);

/* Sort n timings in place, ascending (best first, median in the middle). */
void mcl_bench_sort(double *t, int n);

/* A tensor ~ N(0, std²) from Philox (seed, stream); a parameter (requires grad) when asked. */
mcl_tensor *mcl_bench_rand(mcl_ctx *ctx, int ndim, const int64_t *shape, uint64_t seed,
                           uint64_t stream, float std, int requires_grad);

#endif
