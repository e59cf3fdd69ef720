/* test-threads.c — the OpenMP team that follows the load (src/common/threads.c), without a
 * loaded machine:
 *   1. mcl_threads_competitors on a fake /proc tree: runnable tasks of other processes count
 *      min(1, 1.25^(our nice - theirs)), every thread of a process separately, sleeping tasks,
 *      our own process, non-numeric entries and a process that ended (no task/) not at all, a
 *      command name with spaces and ')' parsed from the last ')'; a missing root gives -1;
 *   2. mcl_threads_team: processors minus the rounded load, at least 1, at most the ceiling;
 *   3. mcl_threads_trial_step, driven by windows whose work rate depends on the team: the
 *      sequence warm-up, reduced, full, reduced, full, then the faster held MCL_THREADS_HOLD
 *      windows and a new trial; a full team faster by less than the margin loses; a change of
 *      the reduced team starts a trial at once; nothing competing gives the full team;
 *   4. the policy is off unless turned on: ticks leave the team alone.
 * No randomness (the seed printed is the harness's convention). Every expected value is exact
 * or an exact sequence, so a wrong weight, rounding or state transition fails.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "testutil.h"
#include "threads.h"

#define SEED 0u

static char root[256];

static void mk(const char *rel)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", root, rel);
    mkdir(p, 0755);
}

/* task <pid>/<tid> with state st and nice ni; comm as given */
static void task(const char *pid, const char *tid, const char *comm, char st, int ni)
{
    char p[512];
    snprintf(p, sizeof p, "%s", pid);
    mk(p);
    snprintf(p, sizeof p, "%s/task", pid);
    mk(p);
    snprintf(p, sizeof p, "%s/task/%s", pid, tid);
    mk(p);
    char f[600];
    snprintf(f, sizeof f, "%s/%s/task/%s/stat", root, pid, tid);
    FILE *o = fopen(f, "w");
    if (!o) return;
    /* fields 3..: state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime
     * stime cutime cstime priority nice num_threads ... */
    fprintf(o, "%s (%s) %c 1 1 1 0 -1 4194560 10 0 0 0 500 20 0 0 %d %d 1 0 123 0\n", tid, comm,
            st, 20 + ni, ni);
    fclose(o);
}

static void test_competitors(void)
{
    snprintf(root, sizeof root, "test-threads.tmp.%ld", (long)getpid());
    mkdir(root, 0755);
    task("100", "100", "self", 'R', 0);                 /* our process: not counted */
    task("200", "200", "busy", 'R', 0);                 /* 1 */
    task("200", "201", "busy", 'S', 0);                 /* asleep: 0 */
    task("200", "202", "busy", 'R', 0);                 /* a second runnable thread: 1 */
    task("300", "300", "science", 'R', 19);             /* 1.25^-19 */
    task("400", "400", "a) b R", 'R', 2);               /* 1.25^-2, comm with ") " and R */
    task("500", "500", "urgent", 'R', -5);              /* min(1, 1.25^5) = 1 */
    task("700", "700", "zombie", 'Z', 0);               /* 0 */
    mk("600");                                          /* ended: no task/ */
    mk("sys");                                          /* not a process */
    const double want = 1.0 + 1.0 + pow(1.25, -19.0) + pow(1.25, -2.0) + 1.0;
    const double got = mcl_threads_competitors(root, 100, 0);
    CHECK(fabs(got - want) < 1e-12, "competitors: %.15g, want %.15g", got, want);
    /* at nice 19 ourselves every runnable task counts fully (all at most as nice as we) */
    const double got19 = mcl_threads_competitors(root, 100, 19);
    CHECK(fabs(got19 - 5.0) < 1e-12, "competitors at nice 19: %.15g, want 5", got19);
    /* seen from pid 200: our own two threads drop out, the fake pid 100 counts */
    const double got200 = mcl_threads_competitors(root, 200, 0);
    CHECK(fabs(got200 - (want - 2.0 + 1.0)) < 1e-12, "competitors of 200: %.15g", got200);
    CHECK(mcl_threads_competitors("test-threads.no-such-dir", 1, 0) == -1.0,
          "missing root gives -1");
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    if (system(cmd) != 0) fprintf(stderr, "test-threads: could not remove %s\n", root);
}

static void test_team(void)
{
    static const struct {
        int ncpu;
        double load;
        int ceiling, want;
    } c[] = {
        {2, 0.0, 2, 2}, {2, 0.49, 2, 2}, {2, 0.51, 2, 1}, {2, 1.0, 2, 1}, {2, 3.5, 2, 1},
        {2, 0.0, 1, 1}, {8, 2.0, 4, 4}, {8, 5.2, 8, 3}, {8, 5.5, 8, 2}, {4, 0.0, 16, 4},
        {1, 0.0, 4, 1},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        const int got = mcl_threads_team(c[i].ncpu, c[i].load, c[i].ceiling);
        CHECK(got == c[i].want, "team(%d cpus, load %.2f, ceiling %d) = %d, want %d", c[i].ncpu,
              c[i].load, c[i].ceiling, got, c[i].want);
    }
}

/* Drive n windows of 200 ms; the work rate is rate_r at the reduced team, rate_f at any other;
 * teams[k]: the team step k returned. */
static void drive(mcl_threads_trial *tr, int reduced, int full, double rate_r, double rate_f,
                  int *prev, int *teams, int n)
{
    for (int k = 0; k < n; k++) {
        const double ms = 200.0;
        const double work = (*prev == reduced ? rate_r : rate_f) * ms;
        teams[k] = mcl_threads_trial_step(tr, reduced, full, work, ms);
        *prev = teams[k];
    }
}

static void check_seq(const char *what, const int *got, const int *want, int n)
{
    for (int k = 0; k < n; k++)
        if (!CHECK(got[k] == want[k], "%s: window %d team %d, want %d", what, k, got[k], want[k]))
            return;
}

static void test_trial(void)
{
    enum { N = 1 + MCL_THREADS_TRIAL + MCL_THREADS_HOLD + 2 };
    int got[N], want[N];
    /* the full team slower: warm-up 1, trial 1 2 1 2, hold 1, then a new trial 1 2 */
    want[0] = 1;
    for (int k = 1; k <= MCL_THREADS_TRIAL; k++) want[k] = k & 1 ? 1 : 2;
    for (int k = 1 + MCL_THREADS_TRIAL; k < N - 2; k++) want[k] = 1;
    want[N - 2] = 1;
    want[N - 1] = 2;
    mcl_threads_trial tr;
    memset(&tr, 0, sizeof tr);
    int prev = 2;
    drive(&tr, 1, 2, 100.0, 40.0, &prev, got, N);
    check_seq("full slower", got, want, N);

    /* the full team faster: the same trial, then the full team held */
    for (int k = 1 + MCL_THREADS_TRIAL; k < N - 2; k++) want[k] = 2;
    memset(&tr, 0, sizeof tr);
    prev = 2;
    drive(&tr, 1, 2, 100.0, 160.0, &prev, got, N);
    check_seq("full faster", got, want, N);

    /* faster by less than the margin: the reduced team */
    for (int k = 1 + MCL_THREADS_TRIAL; k < N - 2; k++) want[k] = 1;
    memset(&tr, 0, sizeof tr);
    prev = 2;
    drive(&tr, 1, 2, 100.0, 100.0 * (1.0 + 0.5 * (MCL_THREADS_MARGIN - 1.0)), &prev, got, N);
    check_seq("full faster within the margin", got, want, N);

    /* while holding, the reduced team changes (4 cpus: 1 -> 2): a trial at once */
    memset(&tr, 0, sizeof tr);
    prev = 4;
    drive(&tr, 1, 4, 100.0, 40.0, &prev, got, 1 + MCL_THREADS_TRIAL + 3);
    CHECK(got[MCL_THREADS_TRIAL + 3] == 1, "holding the reduced team 1");
    int g2[3];
    drive(&tr, 2, 4, 100.0, 40.0, &prev, g2, 3);
    CHECK(g2[0] == 2 && g2[1] == 4 && g2[2] == 2, "new reduced team: trial 2 4 2, got %d %d %d",
          g2[0], g2[1], g2[2]);

    /* nothing competing: the full team, always */
    memset(&tr, 0, sizeof tr);
    prev = 2;
    drive(&tr, 2, 2, 100.0, 100.0, &prev, got, 5);
    CHECK(got[0] == 2 && got[1] == 2 && got[4] == 2, "no competitors: the full team");
}

static void test_off(void)
{
#ifdef _OPENMP
    CHECK(!mcl_threads_follow_load_on(), "the policy is off by default");
    omp_set_num_threads(3);
    for (int k = 0; k < 10; k++) mcl_threads_tick(1e6);
    CHECK(omp_get_max_threads() == 3, "off: ticks leave the team at 3, got %d",
          omp_get_max_threads());
#endif
}

int main(void)
{
    tu_begin("test-threads", SEED);
    test_competitors();
    test_team();
    test_trial();
    test_off();
    return tu_summary();
}
