/* threads.h — an OpenMP team size that follows the machine's load (internal; the command line
 * turns it on, src/common/threads.c has the why and the measurements).
 *
 * With other CPU-bound work on the cores, a parallel region waits for its slowest thread, and
 * a thread that shares its core with a competitor is descheduled for whole time slices: the
 * LM's dynamic evaluation ran 2.4x slower at 2 threads than at 1 beside two busy processes on
 * 2 cores, while the training steps, whose ops run for tens of milliseconds, were faster at 2.
 * When the policy is on, the reference backend calls mcl_threads_op_begin / _end around every
 * op; at most every MCL_THREADS_PERIOD_MS the first counts the runnable tasks of other
 * processes (weighted by their nice value against ours: a nice-19 background job hardly takes
 * a core from a nice-0 one). Nothing competing: every op gets the full team the user chose
 * (--threads, OMP_NUM_THREADS, omp_set_num_threads). Others competing: each op call is timed,
 * and an op (per signature: op, pass, tensor sizes) runs at whichever of the full team and the
 * team the free cores allow (at least 1) was faster in its recent calls, the other tried now
 * and then (mcl_threads_slot_team). Results do not change: every op of the
 * reference backend gives the same bits at any thread count (fixed-order sums,
 * doc/reference-backend.md "Determinism").
 */
#ifndef MCL_THREADS_H
#define MCL_THREADS_H

#include <stdint.h>

/* Shortest interval between two counts of the load (a count costs a pass over /proc). */
#define MCL_THREADS_PERIOD_MS 200
/* An op runs at the full team only when its moving average there is below this fraction of
 * the reduced team's (ties go to the smaller team, which waits less). */
#define MCL_THREADS_MARGIN 0.95f
/* Every this many calls of a signature, the team not chosen runs once more (the load, and so
 * the answer, may have changed; a wrong try costs one call in 32). */
#define MCL_THREADS_EXPLORE 32

/* Turn the policy on (on != 0) or off for the whole process; off restores the ceiling in the
 * calling thread. mcl_threads_follow_load_on: whether it is on. */
void mcl_threads_follow_load(int on);
int mcl_threads_follow_load_on(void);

/* The reference backend's hooks around an op (op id, pass 0 forward / 1 backward, `work`: the
 * elements of its tensors, which tell its calls apart): outside a parallel region and when
 * the policy is on, count the load when the period has passed and set the calling thread's
 * team for this op; _end remembers what the call cost. Cheap otherwise (two clock reads). With
 * METACL_THREADS_TRACE=1 in the environment when the policy is turned on, each count goes to
 * stderr. */
void mcl_threads_op_begin(int op, int pass, double work);
void mcl_threads_op_end(void);

/* The competing load under proc_root ("/proc", or a fake tree in tests): the sum over the
 * runnable tasks (state R) of every process but self_pid of min(1, 1.25^(our_nice - nice)),
 * the CPU share the kernel's weights give such a task against one of ours. -1 when proc_root
 * cannot be read. */
double mcl_threads_competitors(const char *proc_root, long self_pid, int our_nice);

/* The team the competitors leave for `ncpu` processors, `load` competitors
 * (mcl_threads_competitors, rounded to the nearest whole task) and the user's ceiling:
 * max(1, min(ceiling, ncpu - round(load))). */
int mcl_threads_team(int ncpu, double load, int ceiling);

/* What one call signature cost: moving averages (weight 1/4 for the newest call) of its wall
 * time at the reduced [0] and the full [1] team, and how many calls made each. */
typedef struct mcl_threads_slot {
    uint64_t key;      /* the signature (mcl_threads_op_key), 0: empty */
    float ms[2];       /* milliseconds, reduced / full */
    uint16_t n[2];     /* timed calls, reduced / full (saturating) */
    uint16_t calls;    /* calls seen, the first untimed one included */
} mcl_threads_slot;

/* The team for the next call with signature `key` from its slot: full when nothing competes
 * (reduced >= full); a new signature (or a slot holding another): reduced, the call untimed;
 * then until each team has two timed calls, the one with fewer (reduced first); then the one
 * with the lower average (full only below MCL_THREADS_MARGIN times reduced's), except every
 * MCL_THREADS_EXPLORE-th call, which takes the other. */
int mcl_threads_slot_team(const mcl_threads_slot *s, uint64_t key, int reduced, int full);
/* Record a call of `key` that took `ms` at the full team (at_full) or the reduced one: a slot
 * holding another signature starts afresh with this call untimed. */
void mcl_threads_slot_record(mcl_threads_slot *s, uint64_t key, int at_full, double ms);

/* The key of an op call in the table of mcl_threads_op_begin: a hash of op, pass and work,
 * never 0 (an empty slot). */
uint64_t mcl_threads_op_key(int op, int pass, double work);

#endif
