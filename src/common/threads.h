/* threads.h — an OpenMP team size that follows the machine's load (internal; the command line
 * turns it on, src/common/threads.c has the why and the measurements).
 *
 * With other CPU-bound work on the cores, a parallel region waits for its slowest thread, and
 * a thread that shares its core with a competitor is descheduled for whole time slices: the
 * LM's dynamic evaluation ran 2.4x slower at 2 threads than at 1 beside two busy processes on
 * 2 cores; yet beside more competitors the same 2 threads were 1.6x faster than 1 (two threads
 * get twice the share of the cores). So the team is measured, not guessed. When the policy is
 * on, the reference backend calls mcl_threads_tick before every op; at most every
 * MCL_THREADS_PERIOD_MS it counts the runnable tasks of other processes (weighted by their nice
 * value against ours: a nice-19 background job hardly takes a core from a nice-0 one). Nothing
 * competing: the full team the user chose (--threads, OMP_NUM_THREADS, omp_set_num_threads).
 * Others competing: periods at the team the free cores allow (at least 1) and at the full team,
 * alternating, timed by the op work they got done (the elements of the ops' tensors per ms),
 * then MCL_THREADS_HOLD periods at the faster (mcl_threads_trial_step), and again. Results do not
 * change: every
 * op of the reference backend gives the same bits at any thread count (fixed-order sums,
 * doc/reference-backend.md "Determinism").
 */
#ifndef MCL_THREADS_H
#define MCL_THREADS_H

/* Shortest interval between two counts of the load (the count costs a pass over /proc); each
 * interval is one window of the trial. */
#define MCL_THREADS_PERIOD_MS 200
/* Timed windows of a trial: reduced, full, reduced, full. */
#define MCL_THREADS_TRIAL 4
/* Windows the trial's choice is held before the next trial (the full team's windows of the
 * trial, when it is the slower, cost their slowness over TRIAL + HOLD windows: 2.4x slower for
 * two windows in 44, 2.7 %). */
#define MCL_THREADS_HOLD 40
/* The full team is held only when its window's rate exceeds the reduced team's by this factor
 * (window rates are noisy: ties go to the smaller team, which waits less). */
#define MCL_THREADS_MARGIN 1.05

/* Turn the policy on (on != 0) or off for the whole process; off restores the ceiling in the
 * calling thread. mcl_threads_follow_load_on: whether it is on. */
void mcl_threads_follow_load(int on);
int mcl_threads_follow_load_on(void);

/* The reference backend's hook before an op of `work` elements (the sizes of its tensors):
 * outside a parallel region, when the policy is on and the period has passed, count the load
 * and set the calling thread's team size. Cheap otherwise (one clock read). With
 * METACL_THREADS_TRACE=1 in the environment when the policy is turned on, each decision goes
 * to stderr. */
void mcl_threads_tick(double work);

/* The competing load under proc_root ("/proc", or a fake tree in tests): the sum over the
 * runnable tasks (state R) of every process but self_pid of min(1, 1.25^(our_nice - nice)),
 * the CPU share the kernel's weights give such a task against one of ours. -1 when proc_root
 * cannot be read. */
double mcl_threads_competitors(const char *proc_root, long self_pid, int our_nice);

/* The team the competitors leave for `ncpu` processors, `load` competitors
 * (mcl_threads_competitors, rounded to the nearest whole task) and the user's ceiling:
 * max(1, min(ceiling, ncpu - round(load))). */
int mcl_threads_team(int ncpu, double load, int ceiling);

/* The trial between the reduced and the full team, one step per window. */
typedef struct mcl_threads_trial {
    int phase;     /* 0 holding (or not started), 1..MCL_THREADS_TRIAL: the window being timed */
    int hold;      /* windows left to hold the choice */
    int reduced;   /* the reduced team when the choice was made, 0: no competitors yet */
    int choice;    /* the team held */
    double work[2], ms[2]; /* the trial's work and time at the reduced [0] and full [1] team */
} mcl_threads_trial;

/* At the end of a window that did `work` in `ms` (at the team the previous step returned): the
 * team for the next window. reduced >= full: full, no trial. When others start to compete: one
 * untimed window at reduced, then a trial (reduced, full, reduced, full), then
 * MCL_THREADS_HOLD windows at full if its work per ms exceeded MCL_THREADS_MARGIN times
 * reduced's, else at reduced; a new trial when the hold ends or the reduced team changes. */
int mcl_threads_trial_step(mcl_threads_trial *tr, int reduced, int full, double work, double ms);

#endif
