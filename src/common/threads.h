/* threads.h — an OpenMP team size that follows the machine's load (internal; off in the library
 * until mcl_threads_follow_load(1), which the command line calls unless
 * METACL_THREADS_FOLLOW_LOAD=0 or OMP_DYNAMIC is set; src/common/threads.c has the why and the
 * measurements, doc/reference-backend.md "On a shared machine" the tables).
 *
 * With other CPU-bound work on the cores, a parallel region waits for its slowest thread, and
 * a thread that shares its core with a competitor is descheduled for whole time slices: the
 * LM's dynamic evaluation ran 2.4x slower at 2 threads than at 1 beside two busy processes on
 * 2 cores, while the training steps, whose ops run for tens of milliseconds, were faster at 2.
 * When the policy is on, the reference backend calls mcl_threads_op_begin / _end around every
 * op; at most every MCL_THREADS_PERIOD_MS the first counts the runnable tasks of other
 * processes (weighted by their nice value against ours: a nice-19 background job hardly takes
 * a core from a nice-0 one). Nothing competing: every op gets the full team the user chose
 * (--threads, OMP_NUM_THREADS, omp_set_num_threads). Others competing: an op whose last call of
 * the same sizes cost at least MCL_THREADS_BIG_MS thread-milliseconds gets the full team, every
 * other op the team the free cores allow (at least 1). Results do not change: every op of the
 * reference backend gives the same bits at any thread count (fixed-order sums,
 * doc/reference-backend.md "Determinism").
 */
#ifndef MCL_THREADS_H
#define MCL_THREADS_H

#include <stdint.h>

/* Shortest interval between two counts of the load (a count costs a pass over /proc). */
#define MCL_THREADS_PERIOD_MS 200
/* Under competition, an op call costing at least this many thread-milliseconds (its wall time
 * times its team) gets the full team next time, a cheaper one the reduced team.
 * METACL_THREADS_BIG_MS in the environment (when the policy is on) overrides it. */
#define MCL_THREADS_BIG_MS 3.0

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

/* The OpenMP wait policy chosen once at start (tools/cli/omp_wait.c) for `ncpu` processors and
 * `load` competitors (mcl_threads_competitors): 1, a bounded spin, when the team the others
 * leave is the whole machine (mcl_threads_team(ncpu, load, ncpu) == ncpu); 0, passive, when
 * others compete or the load is unknown (load < 0: /proc unreadable). */
int mcl_threads_wait_spin(int ncpu, double load);

/* The team of one op: full when nothing competes (reduced >= full); else full when a call of
 * the same key was seen and cost thread_ms >= big_ms, otherwise reduced. */
int mcl_threads_op_team(int reduced, int full, int seen, double thread_ms, double big_ms);

/* The key of an op call in the table of mcl_threads_op_begin: a hash of op, pass and work,
 * never 0 (an empty slot). */
uint64_t mcl_threads_op_key(int op, int pass, double work);

#endif
