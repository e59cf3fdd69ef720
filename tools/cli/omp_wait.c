/* omp_wait.c — the OpenMP wait policy and team size of the command line: a policy chosen from
 * the load at start, and a team that follows the load, unless the user chose.
 *
 * An OpenMP thread that reaches a barrier first waits for the others. libgomp's default is to
 * spin (about 300 000 iterations) before sleeping. On a dedicated machine that saves the
 * microseconds of a wake-up per parallel region; on a shared one (CI runners, cluster nodes,
 * laptops, this project's 2-core machine with other work on both cores) the thread it waits
 * for is often descheduled, and the spinning thread burns the time slice that thread needed:
 * the language model's static evaluation ran at 3 252 bytes/s with 2 threads against 7 596
 * with 1 (load 9 on 2 cores), and at 9 786 with 2 threads under OMP_WAIT_POLICY=passive.
 * Passive waiting costs on a quiet machine, though: at 2 threads, time spinning / passive was
 * 0.33 to 0.91 (attention 0.33, LM static evaluation 0.54, oct 0.63-0.68, smn 0.67-0.78, LM
 * training 0.84-0.91, acl 0.89), and a bounded spin, GOMP_SPINCOUNT=10000, did as well as
 * unbounded spinning there; beside two competitors passive was faster than it on 11 of 21
 * workloads, by up to 2.3x (doc/reference-backend.md, "The wait policy chosen at start").
 *
 * libgomp reads its environment once, when it is loaded, before main(), so the policy cannot
 * be changed from inside the process: when neither OMP_WAIT_POLICY nor GOMP_SPINCOUNT is set
 * and the machine has more than one processor, metacl counts once the runnable tasks of other
 * processes (mcl_threads_competitors, weighted by nice: niced background jobs hardly count).
 * When they would leave fewer cores than the processors (the rounding of mcl_threads_team) or
 * the count fails it sets OMP_WAIT_POLICY=passive, otherwise GOMP_SPINCOUNT=10000
 * (mcl_threads_wait_spin), records which in METACL_WAIT_CHOSEN (`metacl version` says why),
 * and executes itself again (same process id, arguments and open files); not when it was
 * started through the dynamic loader (the bundle's run: the loader's options cannot be
 * recovered, so the runtime's default stays). The choice is not revisited: a load that
 * arrives later keeps the policy of the start. OMP_WAIT_POLICY or GOMP_SPINCOUNT set by the
 * user is kept as it is.
 *
 * Passive waiting was not enough: a thread that shares its core with a competitor still waits
 * whole time slices at every barrier, and the LM's dynamic evaluation (about 500 ops, most of
 * them parallel regions, in 47 ms) ran 2.4x slower at 2 threads than at 1 beside two busy
 * processes on a quiet 2-core machine. So the team size follows the load
 * (src/common/threads.c): while other processes compete, ops that cost less than a few
 * thread-milliseconds run on the cores the others leave free (at least one), costlier ones on
 * the full team; at most the user's --threads / OMP_NUM_THREADS always; the user's OMP_DYNAMIC,
 * whatever its value, or METACL_THREADS_FOLLOW_LOAD=0 keeps it off (the fixed team). With one
 * competitor pinned to each core the fixed passive team was slower than 1 thread on the
 * smallest workloads (attn_C0 0.46x) and the policy tied or won on all 21
 * (doc/reference-backend.md, "On a shared machine").
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "cli.h"
#include "threads.h"

/* The bounded spin chosen on an idle machine (iterations before a waiting thread sleeps). */
#define MCL_CLI_SPINCOUNT "10000"

void mcl_cli_omp_wait_policy(char **argv)
{
#ifdef _OPENMP
    if (getenv("OMP_WAIT_POLICY") || getenv("GOMP_SPINCOUNT") || omp_get_num_procs() < 2) return;
    char self[4096];
    const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0 || n >= (ssize_t)sizeof self - 1) return; /* no /proc: keep the default */
    self[n] = '\0';
    /* started through the dynamic loader (ld-linux-x86-64.so.2 bin/metacl ..., as the bundle's
     * run does): /proc/self/exe is the loader, whose own options are gone from argv */
    const char *base = strrchr(self, '/');
    base = base ? base + 1 : self;
    if (strncmp(base, "ld-", 3) == 0 || strncmp(base, "ld.so", 5) == 0) return;
    const double load =
        mcl_threads_competitors("/proc", (long)getpid(), getpriority(PRIO_PROCESS, 0));
    const int spin = mcl_threads_wait_spin(omp_get_num_procs(), load);
    const char *var = spin ? "GOMP_SPINCOUNT" : "OMP_WAIT_POLICY";
    if (setenv(var, spin ? MCL_CLI_SPINCOUNT : "passive", 1) != 0) return;
    if (setenv("METACL_WAIT_CHOSEN", spin ? "idle" : "busy", 1) != 0) {
        unsetenv(var);
        return;
    }
    execv(self, argv);
    unsetenv(var); /* the exec failed: go on with the default policy */
    unsetenv("METACL_WAIT_CHOSEN");
#else
    (void)argv;
#endif
}

const char *mcl_cli_omp_wait_policy_name(void)
{
    static char buf[160];
    const char *w = getenv("OMP_WAIT_POLICY"), *g = getenv("GOMP_SPINCOUNT");
    const char *chosen = getenv("METACL_WAIT_CHOSEN");
    if (chosen && strcmp(chosen, "busy") == 0 && w && strcmp(w, "passive") == 0 && !g)
        return "passive (other processes were running at start)";
    if (chosen && strcmp(chosen, "idle") == 0 && !w && g && strcmp(g, MCL_CLI_SPINCOUNT) == 0)
        return "GOMP_SPINCOUNT=" MCL_CLI_SPINCOUNT " (idle at start)";
    if (w && g) snprintf(buf, sizeof buf, "%.60s, GOMP_SPINCOUNT=%.40s (the user's)", w, g);
    else if (w) snprintf(buf, sizeof buf, "%.60s (the user's)", w);
    else if (g) snprintf(buf, sizeof buf, "GOMP_SPINCOUNT=%.40s (the user's)", g);
    else return "the runtime's default (tools/cli/omp_wait.c)";
    return buf;
}

void mcl_cli_omp_team_policy(void)
{
#ifdef _OPENMP
    const char *on = getenv("METACL_THREADS_FOLLOW_LOAD"); /* "0": the fixed team */
    if (!(on && strcmp(on, "0") == 0) && !getenv("OMP_DYNAMIC")) mcl_threads_follow_load(1);
#endif
}

const char *mcl_cli_omp_team_policy_name(void)
{
#ifdef _OPENMP
    if (mcl_threads_follow_load_on())
        return "follows the load (at most --threads / OMP_NUM_THREADS; METACL_THREADS_FOLLOW_LOAD=0: fixed)";
    const char *d = getenv("OMP_DYNAMIC");
    if (d) return d[0] == 't' || d[0] == 'T' || d[0] == '1' ? "the runtime's (OMP_DYNAMIC=true)"
                                                             : "fixed (OMP_DYNAMIC set)";
#endif
    return "fixed (METACL_THREADS_FOLLOW_LOAD=0)";
}
