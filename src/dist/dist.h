/* dist.h — the processes of one job: several MPI ranks (`mpirun -np N metacl ...`), or one
 * process alone. The harness (src/learn/train.c) and the evaluation protocols
 * (src/learn/protocols.c) use it to split work; nothing else in the library knows about MPI.
 *
 * Built without MPI (./configure --with-mpi=no, or no Open MPI found), or run without mpirun,
 * this is a one-process job: rank 0 of 1, and every collective is the identity. MPI is only
 * initialized when the process was started by an MPI launcher (mcl_dist_init looks for the
 * launcher's environment), so a single-process run never touches MPI at all.
 *
 * Determinism. mcl_dist_sum_f32 does not use MPI_Allreduce's sum: the MPI standard fixes
 * neither the order in which an allreduce adds the ranks' values nor that every rank gets
 * the same bits. Instead element e is added in rank order, ((x_0 + x_1) + x_2) + ..., by the
 * one rank that owns e's chunk (a reduce-scatter written as MPI_Alltoallv), and the sums are
 * then gathered (MPI_Allgatherv). Every rank gets the same bits, run after run, and the
 * result equals a single process that adds the same N vectors in the same order. Traffic per
 * rank: 2·(N−1)/N of the vector, the same as a ring allreduce. (Small control values — failure
 * counts, a rank index — do use MPI_Allreduce: sums and minima of integers are exact in any
 * order.)
 *
 * Every function returns MCL_OK or an error with a message in err (MCL_ERR_IO for an MPI
 * failure); an MPI error handler that returns (MPI_ERRORS_RETURN) is installed, so the library
 * never exits on its own. The CLI turns a rank's error into MPI_Abort after printing it.
 */
#ifndef MCL_DIST_H
#define MCL_DIST_H

#include <stddef.h>
#include <stdint.h>

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* 1 when this library was built with MPI. */
int mcl_dist_built_with_mpi(void);

/* Join the job: MPI_Init when started by an MPI launcher (Open MPI, MPICH/Hydra, Slurm's PMI
 * variables), nothing otherwise. Call once, before any other mcl_dist function. A launcher
 * environment in a build without MPI is an error (MCL_ERR_UNSUPPORTED, message says to
 * rebuild with --with-mpi). */
mcl_status mcl_dist_init(int *argc, char ***argv, char *err, size_t len);
/* Leave the job (MPI_Finalize when initialized); safe to call when init was not. */
void mcl_dist_finalize(void);
/* Stop every rank of the job now (MPI_Abort with code; exit(code) for one process). Only
 * for the CLI, after the error was printed. */
void mcl_dist_abort(int code);

int mcl_dist_rank(void);       /* 0..size-1                                         */
int mcl_dist_size(void);       /* ranks in the job, 1 without MPI                   */
int mcl_dist_local_rank(void); /* rank among the job's ranks on this host (devices) */
/* "host:rank" of this process, for messages. */
const char *mcl_dist_where(void);

/* x[0..n) ← the sum over ranks of every rank's x, added in rank order (see above); every
 * rank passes the same n. */
mcl_status mcl_dist_sum_f32(float *x, int64_t n, char *err, size_t len);
/* The same for a few doubles (n <= 64): all ranks' values are gathered and added in rank
 * order. */
mcl_status mcl_dist_sum_f64(double *x, int n, char *err, size_t len);
/* Rank `root`'s n bytes to every rank. */
mcl_status mcl_dist_bcast(void *buf, size_t n, int root, char *err, size_t len);
/* Every rank's v compared with rank 0's: *first_diff ← the lowest rank whose v differs, or
 * -1 when all agree (the same on every rank). */
mcl_status mcl_dist_compare_u64(uint64_t v, int *first_diff, char *err, size_t len);
/* Results computed in pieces: item i (of n_items, each `per_item` doubles at
 * x + i·per_item) was computed by rank i mod size; afterwards every rank holds every item. */
mcl_status mcl_dist_gather_items(double *x, int64_t n_items, int64_t per_item, char *err,
                                 size_t len);

/* After a local piece of work that every rank did: MCL_OK when it succeeded on every rank;
 * this rank's st when it failed here; MCL_ERR_STATE ("another rank failed", in err) when it
 * failed only elsewhere (a failure every rank now knows of: noted, below). *n_failed (may be
 * NULL) ← how many ranks failed. */
mcl_status mcl_dist_agree(mcl_status st, int *n_failed, char *err, size_t len);
/* A failure that every rank knows of (all stopped together, or another rank failed and will
 * stop the job): the CLI then exits normally instead of calling mcl_dist_abort. */
void mcl_dist_note_shared_failure(void);
int mcl_dist_failure_is_shared(void);

/* Seconds spent inside the collectives above since the last call (then reset). */
double mcl_dist_take_comm_seconds(void);

/* 64-bit FNV-1a over n bytes, continuing from h (start with MCL_FNV_START). */
#define MCL_FNV_START UINT64_C(14695981039346656037)
uint64_t mcl_fnv1a(uint64_t h, const void *data, size_t n);

#ifdef __cplusplus
}
#endif
#endif
