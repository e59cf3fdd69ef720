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
 * That is how many cores are free, not whether using them pays for a given op. Beside two busy
 * processes on 2 cores the LM's dynamic evaluation ran 2.4x slower at 2 threads than at 1: its
 * ~500 ops of 0.02-2 ms each open a parallel region or more, and each waits for a thread that
 * shares its core with a competitor; the training steps of the same benches, whose ops run for
 * tens of milliseconds, were 1.1-1.4x faster at 2 threads (two threads get twice the share of
 * the cores). So while others compete the team is chosen per op: an op whose last call with
 * the same tensor sizes cost at least MCL_THREADS_BIG_MS thread-milliseconds (wall time times
 * the team it ran with) gets the full team, any other op (small, or not seen yet) the reduced
 * one. The calls are remembered in a small table per thread (op, pass and the elements of its
 * tensors, hashed; a collision only costs one call at the reduced team).
 *
 * The command line's default (tools/cli/omp_wait.c; METACL_THREADS_FOLLOW_LOAD=0 or OMP_DYNAMIC
 * turns it off). With one CPU-bound competitor pinned to each of 2 cores, the fixed passive team
 * of 2 was slower than 1 thread on the smallest workloads (attention on a 0-token context:
 * 0.46x), this policy tied with or beat 1 thread on all of them (doc/reference-backend.md, "On
 * a shared machine", has the tables, and the earlier, busier day on which the fixed team won).
 *
 * The state is per calling thread (_Thread_local), like OpenMP's nthreads-var that
 * omp_set_num_threads sets: two application threads each running a context adjust their own
 * teams. The ceiling is the calling thread's omp_get_max_threads() whenever it differs from
 * what this file set last (the user called omp_set_num_threads, or the first op).
 */
#define _POSIX_C_SOURCE 200809L
#include <ctype.h>
#include <stdatomic.h>
#include <stdint.h>
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

#define SLOTS 512 /* remembered op calls per thread (a power of two) */

typedef struct tl_state {
    double next_ms;  /* monotonic time of the next count; 0: never counted */
    double load;     /* smoothed competing load */
    int set;         /* team size this file set last, 0: none */
    int ceiling;     /* the user's team size */
    int reduced;     /* the team the competitors leave (== ceiling: none compete) */
    double op_t0;    /* the current op: its start, its slot, its key */
    int op_slot;     /* -1: not timed (nothing competes) */
    uint64_t op_key;
    uint64_t key[SLOTS]; /* remembered calls: key, and thread-ms of the last call */
    float tms[SLOTS];
} tl_state;
static _Thread_local tl_state tl;
static double g_big_ms = MCL_THREADS_BIG_MS; /* METACL_THREADS_BIG_MS overrides it */

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

/* spin = load >= 0 and ncpu - round(load) >= ncpu (the rounding of mcl_threads_team) */
int mcl_threads_wait_spin(int ncpu, double load)
{
    if (load < 0.0 || ncpu < 1) return 0; /* unknown load: passive, the safe side */
    return mcl_threads_team(ncpu, load, ncpu) >= ncpu;
}

int mcl_threads_op_team(int reduced, int full, int seen, double thread_ms, double big_ms)
{
    if (reduced >= full) return full;
    return seen && thread_ms >= big_ms ? full : reduced;
}

uint64_t mcl_threads_op_key(int op, int pass, double work)
{
    /* splitmix64 of the three: equal calls give equal keys; 0 is never a key (empty slot) */
    uint64_t z = ((uint64_t)(unsigned)op << 1 | (uint64_t)(pass & 1)) * 0x9e3779b97f4a7c15ull;
    z ^= (uint64_t)work + 0x632be59bd9b4e019ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return z ? z : 1;
}

void mcl_threads_follow_load(int on)
{
    const char *tr = getenv("METACL_THREADS_TRACE");
    g_trace = tr && *tr && strcmp(tr, "0") != 0;
    const char *big = getenv("METACL_THREADS_BIG_MS");
    if (big && *big) {
        char *end;
        const double v = strtod(big, &end);
        if (end != big && *end == '\0' && v >= 0.0) g_big_ms = v;
    }
    g_on = on != 0;
#ifdef _OPENMP
    if (!g_on && tl.set > 0 && omp_get_max_threads() == tl.set) omp_set_num_threads(tl.ceiling);
#endif
    memset(&tl, 0, sizeof tl);
    tl.op_slot = -1;
}

int mcl_threads_follow_load_on(void) { return g_on; }

/* Count the load (at most every period) and update tl.reduced; t: now. */
static void rescan(double t)
{
    const double c = mcl_threads_competitors("/proc", (long)getpid(), getpriority(PRIO_PROCESS, 0));
    const double t1 = now_ms();
    if (c < 0.0) { /* no /proc: the user's team, and stop looking */
        tl.reduced = tl.ceiling;
        g_on = 0;
        return;
    }
    tl.load = tl.next_ms == 0.0 ? c : 0.5 * (tl.load + c);
    const double wait = 100.0 * (t1 - t);
    tl.next_ms = t1 + (wait > MCL_THREADS_PERIOD_MS ? wait : MCL_THREADS_PERIOD_MS);
    tl.reduced = mcl_threads_team(omp_get_num_procs(), tl.load, tl.ceiling);
    if (g_trace)
        fprintf(stderr, "metacl threads: load %.2f, team %d for small ops, %d for big (%g thread-ms)\n",
                tl.load, tl.reduced, tl.ceiling, g_big_ms);
}

void mcl_threads_op_begin(int op, int pass, double work)
{
#ifdef _OPENMP
    if (!g_on || omp_in_parallel()) return;
    const int cur = omp_get_max_threads();
    if (tl.set == 0 || cur != tl.set) { /* first op, or the user chose: a new ceiling */
        tl.ceiling = cur;
        tl.next_ms = 0.0;
    }
    const double t = now_ms();
    if (tl.next_ms == 0.0 || t >= tl.next_ms) rescan(t);
    int team = tl.ceiling;
    tl.op_slot = -1;
    if (tl.reduced < tl.ceiling) {
        const uint64_t key = mcl_threads_op_key(op, pass, work);
        const int s = (int)(key & (SLOTS - 1));
        team = mcl_threads_op_team(tl.reduced, tl.ceiling, tl.key[s] == key, tl.tms[s], g_big_ms);
        tl.op_slot = s;
        tl.op_key = key;
    }
    if (team != cur) omp_set_num_threads(team);
    tl.set = team;
    tl.op_t0 = now_ms();
#else
    (void)op;
    (void)pass;
    (void)work;
#endif
}

void mcl_threads_op_end(void)
{
    if (!g_on || tl.op_slot < 0) return;
    const int s = tl.op_slot;
    tl.key[s] = tl.op_key;
    tl.tms[s] = (float)((now_ms() - tl.op_t0) * (double)tl.set);
    tl.op_slot = -1;
}
