/* test-threads.c — the OpenMP team that follows the load (src/common/threads.c), without a
 * loaded machine:
 *   1. mcl_threads_competitors on a fake /proc tree: runnable tasks of other processes count
 *      min(1, 1.25^(our nice - theirs)), every thread of a process separately, sleeping tasks,
 *      our own process, non-numeric entries and a process that ended (no task/) not at all, a
 *      command name with spaces and ')' parsed from the last ')'; a missing root gives -1;
 *   2. mcl_threads_team: processors minus the rounded load, at least 1, at most the ceiling;
 *      mcl_threads_wait_spin: spin only when nothing competes after that rounding, passive
 *      when others compete or the load is unknown (-1: /proc unreadable);
 *   3. mcl_threads_op_team: the full team when nothing competes; else the full team only for
 *      an op seen before that cost at least the threshold, at its boundary; the keys of the
 *      op table tell op, pass and size apart, are never 0 and spread over the slots;
 *   4. the policy is off unless turned on: the op hooks leave the team alone.
 * No randomness (the seed printed is the harness's convention). Every expected value is exact,
 * so a wrong weight, rounding or boundary fails.
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

static void test_wait_spin(void)
{
    static const struct {
        int ncpu;
        double load;
        int want;
    } c[] = {
        {2, 0.0, 1},  {2, 0.49, 1}, {2, 0.5, 0}, {2, 0.51, 0}, {2, 2.0, 0}, {8, 0.3, 1},
        {8, 1.0, 0},  {2, -1.0, 0}, {16, -1.0, 0},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        const int got = mcl_threads_wait_spin(c[i].ncpu, c[i].load);
        CHECK(got == c[i].want, "wait_spin(%d cpus, load %.2f) = %d, want %d", c[i].ncpu,
              c[i].load, got, c[i].want);
    }
}

static void test_op_team(void)
{
    /* nothing competes: the full team, whatever the op cost */
    CHECK(mcl_threads_op_team(2, 2, 0, 0.0, 3.0) == 2, "no competitors, unseen: full");
    CHECK(mcl_threads_op_team(4, 4, 1, 0.1, 3.0) == 4, "no competitors, small: full");
    /* competitors: unseen or cheap ops the reduced team, costly ones the full team */
    CHECK(mcl_threads_op_team(1, 2, 0, 100.0, 3.0) == 1, "unseen op: reduced");
    CHECK(mcl_threads_op_team(1, 2, 1, 2.99, 3.0) == 1, "2.99 thread-ms: reduced");
    CHECK(mcl_threads_op_team(1, 2, 1, 3.0, 3.0) == 2, "3 thread-ms: full");
    CHECK(mcl_threads_op_team(3, 8, 1, 50.0, 3.0) == 8, "costly op on 8: full");
    CHECK(mcl_threads_op_team(3, 8, 1, 0.5, 3.0) == 3, "cheap op on 8: reduced 3");
    /* keys: equal calls equal, op, pass and work each tell calls apart, never 0 */
    const uint64_t k = mcl_threads_op_key(14, 0, 65536.0);
    CHECK(k == mcl_threads_op_key(14, 0, 65536.0), "the same call, the same key");
    CHECK(k != mcl_threads_op_key(15, 0, 65536.0), "another op, another key");
    CHECK(k != mcl_threads_op_key(14, 1, 65536.0), "another pass, another key");
    CHECK(k != mcl_threads_op_key(14, 0, 65537.0), "another size, another key");
    int zero = 0, same_slot = 0;
    for (int op = 0; op < 64; op++)
        for (int w = 1; w <= 64; w++) {
            const uint64_t a = mcl_threads_op_key(op, 0, (double)w * 1000.0);
            zero += a == 0;
            same_slot += (a & 511) == (k & 511);
        }
    CHECK(zero == 0, "no key is 0");
    /* 4096 keys over 512 slots: about 8 in k's slot if they spread */
    CHECK(same_slot < 40, "keys spread over the slots (%d of 4096 in one slot)", same_slot);
}

static void test_off(void)
{
#ifdef _OPENMP
    CHECK(!mcl_threads_follow_load_on(), "the policy is off by default");
    omp_set_num_threads(3);
    for (int k = 0; k < 10; k++) {
        mcl_threads_op_begin(14, 0, 1e6);
        mcl_threads_op_end();
    }
    CHECK(omp_get_max_threads() == 3, "off: ticks leave the team at 3, got %d",
          omp_get_max_threads());
#endif
}

int main(void)
{
    tu_begin("test-threads", SEED);
    test_competitors();
    test_team();
    test_wait_spin();
    test_op_team();
    test_off();
    return tu_summary();
}
