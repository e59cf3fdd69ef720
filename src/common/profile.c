/* profile.c — METACL_PROFILE's per-op time table (see profile.h). */
#define _POSIX_C_SOURCE 200809L
#include "profile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct mcl_profile {
    double last_ms;                /* when the previous op finished (0: none yet) */
    double ms[MCL_OP_COUNT][2];    /* per op, forward / backward                  */
    long calls[MCL_OP_COUNT][2];
};

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return 1e3 * (double)ts.tv_sec + 1e-6 * (double)ts.tv_nsec;
}

mcl_profile *mcl_profile_create_from_env(void)
{
    const char *e = getenv("METACL_PROFILE");
    if (!e || !*e || strcmp(e, "0") == 0) return NULL;
    return calloc(1, sizeof(mcl_profile));
}

mcl_status mcl_profile_tick(mcl_profile *p, mcl_backend *be, mcl_op op, int backward)
{
    mcl_status s = be->finish ? be->finish(be) : MCL_OK;
    const double t = now_ms();
    if (p->last_ms > 0 && (unsigned)op < MCL_OP_COUNT) {
        p->ms[op][backward != 0] += t - p->last_ms;
        p->calls[op][backward != 0]++;
    }
    p->last_ms = t;
    return s;
}

void mcl_profile_print(const mcl_profile *p, const char *where)
{
    if (!p) return;
    double total = 0;
    for (int op = 0; op < MCL_OP_COUNT; op++) total += p->ms[op][0] + p->ms[op][1];
    if (total <= 0) return;
    fprintf(stderr, "METACL_PROFILE (%s): time per op, queue finished after each op\n", where);
    fprintf(stderr, "  %-16s %-8s %8s %12s %10s %6s\n", "op", "pass", "calls", "total ms",
            "ms/call", "share");
    for (int op = 0; op < MCL_OP_COUNT; op++)
        for (int d = 0; d < 2; d++)
            if (p->calls[op][d])
                fprintf(stderr, "  %-16s %-8s %8ld %12.3f %10.4f %5.1f%%\n", mcl_op_table[op].name,
                        d ? "backward" : "forward", p->calls[op][d], p->ms[op][d],
                        p->ms[op][d] / (double)p->calls[op][d], 100 * p->ms[op][d] / total);
    fprintf(stderr, "  %-16s %-8s %8s %12.3f\n", "all", "", "", total);
}

void mcl_profile_free(mcl_profile *p) { free(p); }
