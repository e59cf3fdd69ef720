/* threads.c — the OpenMP team size follows the load (threads.h).
 *
 * Why not OpenMP's own dynamic adjustment (OMP_DYNAMIC=true)? libgomp sizes a team as the
 * processors minus the 15-minute load average (config/linux/proc.c, gomp_dynamic_max_threads):
 * it reacts in minutes, not in the fraction of a second a benchmark or an evaluation lasts, and
 * it counts every runnable task whatever its priority, so niced background jobs (this
 * project's machine always runs some) take metacl down to one thread on an otherwise idle
 * machine. Here the load is counted directly and by priority:
 *
 *   load = sum over runnable tasks t of other processes of min(1, 1.25^(nice_us - nice_t))
 *
 * (the kernel's CFS weight of a nice level is about 1024 / 1.25^nice, so a task of weight w
 * against ours of weight w_us takes that share of a shared core; nice 19 against nice 0 counts
 * 0.014), smoothed as an average of this count and the previous estimate, and the team is
 * max(1, min(ceiling, processors - round(load))). The first count decides at once (a bench run
 * beside busy processes starts at the right size); later ones come at most every
 * MCL_THREADS_PERIOD_MS, or every 100 times the count's own cost if that is longer (a node with
 * thousands of tasks: the count stays under 1 % of the time; on this project's machine, about
 * 150 tasks, a count costs 0.5 ms, 0.25 % of the 200 ms period).
 *
 * That is how many cores are free, not whether using them pays: beside two busy processes on 2
 * cores the LM's dynamic evaluation ran 2.4x slower at 2 threads than at 1 (its ~500 small
 * parallel regions each wait for a descheduled thread), beside about 3.5 competitors 1.6x
 * faster (two threads get twice the share of the cores). So when others compete, the team is
 * timed: after one untimed window at the reduced team, two windows at the reduced and two at
 * the full team, alternating (one window of each differed up to 1.7x between windows at the
 * same team on the busy machine), the faster held for MCL_THREADS_HOLD windows
 * (mcl_threads_trial_step, threads.h), and again.
 *
 * The state is per calling thread (_Thread_local), like OpenMP's nthreads-var that
 * omp_set_num_threads sets: two application threads each running a context adjust their own
 * teams. The ceiling is the calling thread's omp_get_max_threads() whenever it differs from
 * what this file set last (the user called omp_set_num_threads, or the first tick).
 */
#define _POSIX_C_SOURCE 200809L
#include <ctype.h>
#include <stdatomic.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "threads.h"

static atomic_int g_on; /* the policy (mcl_threads_follow_load); set once by the CLI's main */
static int g_trace;      /* METACL_THREADS_TRACE: each decision on stderr */

typedef struct tl_state {
    double next_ms; /* monotonic time of the next count; 0: never counted */
    double load;    /* smoothed competing load */
    int set;        /* team size this file set last, 0: none */
    int ceiling;    /* the user's team size */
    /* the trial while others compete (mcl_threads_trial) */
    mcl_threads_trial trial;
    double t0, work; /* the current window: its start, the work of its ops */
} tl_state;
static _Thread_local tl_state tl;

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static int all_digits(const char *s)
{
    if (!*s) return 0;
    for (; *s; s++)
        if (!isdigit((unsigned char)*s)) return 0;
    return 1;
}

/* One task's stat line "tid (comm) S ppid ... nice ...": *state and *nice (field 19); 0 when
 * it could not be read (the task ended meanwhile). comm may hold spaces and ')'. */
static int read_task(const char *path, char *state, int *nice)
{
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    char line[1024];
    const int ok = fgets(line, sizeof line, f) != NULL;
    fclose(f);
    if (!ok) return 0;
    const char *p = strrchr(line, ')');
    if (!p || p[1] != ' ') return 0;
    p += 2;
    *state = *p;
    /* fields 3 (state) .. 19 (nice): skip 16 spaces */
    for (int k = 0; k < 16; k++) {
        p = strchr(p, ' ');
        if (!p) return 0;
        p++;
    }
    char *end;
    const long v = strtol(p, &end, 10);
    if (end == p) return 0;
    *nice = (int)v;
    return 1;
}

double mcl_threads_competitors(const char *proc_root, long self_pid, int our_nice)
{
    DIR *d = opendir(proc_root);
    if (!d) return -1.0;
    double load = 0.0;
    char path[512];
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (!all_digits(e->d_name) || strtol(e->d_name, NULL, 10) == self_pid) continue;
        if (snprintf(path, sizeof path, "%s/%s/task", proc_root, e->d_name) >= (int)sizeof path)
            continue;
        DIR *t = opendir(path);
        if (!t) continue; /* the process ended meanwhile */
        struct dirent *te;
        while ((te = readdir(t)) != NULL) {
            if (!all_digits(te->d_name)) continue;
            if (snprintf(path, sizeof path, "%s/%s/task/%s/stat", proc_root, e->d_name,
                         te->d_name) >= (int)sizeof path)
                continue;
            char state;
            int nice;
            if (!read_task(path, &state, &nice) || state != 'R') continue;
            const double w = pow(1.25, (double)(our_nice - nice));
            load += w < 1.0 ? w : 1.0;
        }
        closedir(t);
    }
    closedir(d);
    return load;
}

int mcl_threads_team(int ncpu, double load, int ceiling)
{
    const int busy = load > 0.0 ? (int)floor(load + 0.5) : 0;
    int team = ncpu - busy;
    if (team > ceiling) team = ceiling;
    return team < 1 ? 1 : team;
}

void mcl_threads_follow_load(int on)
{
    const char *tr = getenv("METACL_THREADS_TRACE");
    g_trace = tr && *tr && strcmp(tr, "0") != 0;
    g_on = on != 0;
#ifdef _OPENMP
    if (!g_on && tl.set > 0 && omp_get_max_threads() == tl.set) omp_set_num_threads(tl.ceiling);
#endif
    tl.next_ms = 0.0;
    tl.set = 0;
    memset(&tl.trial, 0, sizeof tl.trial);
}

int mcl_threads_follow_load_on(void) { return g_on; }

int mcl_threads_trial_step(mcl_threads_trial *tr, int reduced, int full, double work, double ms)
{
    if (reduced >= full) { /* nothing competes: the full team, and a new trial when it starts */
        tr->phase = 0;
        tr->hold = 1; /* the first window at the reduced team warms up, untimed */
        tr->reduced = 0;
        return full;
    }
    if (tr->phase > 0) { /* the window that ended was timed: phases 1, 3 reduced, 2, 4 full */
        tr->work[(tr->phase - 1) & 1] += work;
        tr->ms[(tr->phase - 1) & 1] += ms;
        if (tr->phase < MCL_THREADS_TRIAL) return ++tr->phase & 1 ? reduced : full;
        /* the reduced team unless the full one was clearly faster */
        const double r = tr->ms[0] > 0.0 ? tr->work[0] / tr->ms[0] : 0.0;
        const double f = tr->ms[1] > 0.0 ? tr->work[1] / tr->ms[1] : 0.0;
        tr->choice = f > MCL_THREADS_MARGIN * r ? full : reduced;
        tr->reduced = reduced;
        tr->phase = 0;
        tr->hold = MCL_THREADS_HOLD - 1; /* this window and HOLD - 1 more */
        return tr->choice;
    }
    if (tr->reduced == 0) { /* others began to compete: one untimed window at the reduced team */
        tr->reduced = reduced;
        tr->choice = reduced;
        tr->hold = 1;
    }
    if (tr->hold > 0 && reduced == tr->reduced) { /* holding */
        tr->hold--;
        return tr->choice;
    }
    tr->phase = 1; /* a trial: reduced, full, reduced, full */
    tr->work[0] = tr->work[1] = tr->ms[0] = tr->ms[1] = 0.0;
    return reduced;
}

void mcl_threads_tick(double work)
{
#ifdef _OPENMP
    if (!g_on) return;
    tl.work += work;
    const double t = now_ms();
    if (tl.next_ms != 0.0 && t < tl.next_ms) return;
    if (omp_in_parallel()) return;
    const int cur = omp_get_max_threads();
    if (tl.set == 0 || cur != tl.set) { /* first tick, or the user chose: a new ceiling */
        tl.ceiling = cur;
        memset(&tl.trial, 0, sizeof tl.trial);
    }
    const double c = mcl_threads_competitors("/proc", (long)getpid(),
                                             getpriority(PRIO_PROCESS, 0));
    const double t1 = now_ms();
    if (c < 0.0) { /* no /proc: leave the team alone, and stop looking */
        g_on = 0;
        return;
    }
    const int first = tl.next_ms == 0.0;
    tl.load = first ? c : 0.5 * (tl.load + c);
    const double wait = 100.0 * (t1 - t);
    tl.next_ms = t1 + (wait > MCL_THREADS_PERIOD_MS ? wait : MCL_THREADS_PERIOD_MS);
    const double ms = first ? 0.0 : t - tl.t0;
    const int reduced = mcl_threads_team(omp_get_num_procs(), tl.load, tl.ceiling);
    const int team = mcl_threads_trial_step(&tl.trial, reduced, tl.ceiling, tl.work, ms);
    if (g_trace)
        fprintf(stderr, "metacl threads: load %.2f, %.3g work/ms at %d, team %d of %d (phase %d)\n",
                tl.load, ms > 0.0 ? tl.work / ms : 0.0, cur, team, tl.ceiling, tl.trial.phase);
    if (team != cur) omp_set_num_threads(team);
    tl.set = team;
    tl.t0 = t1;
    tl.work = 0.0;
#else
    (void)work;
#endif
}
