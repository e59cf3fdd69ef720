/* profile.c — METACL_PROFILE's per-op time table (see profile.h). */
#define _POSIX_C_SOURCE 200809L
#include "profile.h"
#include "tape.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct mcl_profile {
    double last_ms;                /* when the previous op finished (0: none yet) */
    double begin_ms;               /* when the current op began (its queue empty)  */
    double between_ms;             /* from an op's end to the next op's begin:    */
    long between_n;                /* host work, copies, fills, the optimizer     */
    double ms[MCL_OP_COUNT][2];    /* per op, forward / backward                  */
    long calls[MCL_OP_COUNT][2];
    uint64_t enq[MCL_OP_COUNT][2]; /* device enqueues made inside the op                   */
    uint64_t enq_begin, enq_last;  /* counter when the current op began / the last ended   */
    uint64_t enq_between;          /* enqueues between ops (copies, fills, the optimizer's) */
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

/* The queue is finished before and after each op, so an op is charged its own work only;
 * what runs between two ops (host code, the tape's bookkeeping, copies and fills outside the
 * op table, the device work they queued) goes to the "between_ops" row. */
static void finish_uncounted(mcl_backend *be, mcl_status *s)
{
    const mcl_backend_stats keep = be->stats; /* the profile's own finish is not counted */
    mcl_status f = be->finish ? be->finish(be) : MCL_OK;
    be->stats = keep;
    if (s && *s == MCL_OK) *s = f;
}

void mcl_profile_begin(mcl_profile *p, mcl_backend *be)
{
    p->enq_begin = be->stats.enqueues;
    p->enq_between += p->enq_begin - p->enq_last;
    finish_uncounted(be, NULL); /* a failure shows again at the op's own finish */
    p->begin_ms = now_ms();
    if (p->last_ms > 0) {
        p->between_ms += p->begin_ms - p->last_ms;
        p->between_n++;
    }
}

mcl_status mcl_profile_tick(mcl_profile *p, mcl_backend *be, mcl_op op, int backward)
{
    const uint64_t enq_end = be->stats.enqueues;
    mcl_status s = MCL_OK;
    finish_uncounted(be, &s);
    const double t = now_ms();
    if (p->begin_ms > 0 && (unsigned)op < MCL_OP_COUNT) {
        p->ms[op][backward != 0] += t - p->begin_ms;
        p->calls[op][backward != 0]++;
        p->enq[op][backward != 0] += enq_end - p->enq_begin;
    }
    p->enq_last = enq_end;
    p->last_ms = t;
    return s;
}

void mcl_profile_print(const mcl_profile *p, const char *where, const mcl_backend_stats *st)
{
    if (!p) return;
    double total = p->between_ms;
    for (int op = 0; op < MCL_OP_COUNT; op++) total += p->ms[op][0] + p->ms[op][1];
    if (total <= 0) return;
    fprintf(stderr, "METACL_PROFILE (%s): time per op, queue finished before and after each op\n", where);
    fprintf(stderr, "  %-16s %-8s %8s %12s %10s %6s %9s\n", "op", "pass", "calls", "total ms",
            "ms/call", "share", "enqueues");
    for (int op = 0; op < MCL_OP_COUNT; op++)
        for (int d = 0; d < 2; d++)
            if (p->calls[op][d])
                fprintf(stderr, "  %-16s %-8s %8ld %12.3f %10.4f %5.1f%% %9llu\n", mcl_op_table[op].name,
                        d ? "backward" : "forward", p->calls[op][d], p->ms[op][d],
                        p->ms[op][d] / (double)p->calls[op][d], 100 * p->ms[op][d] / total,
                        (unsigned long long)p->enq[op][d]);
    if (p->between_n)
        fprintf(stderr, "  %-16s %-8s %8ld %12.3f %10.4f %5.1f%% %9llu\n", "between_ops", "host",
                p->between_n, p->between_ms, p->between_ms / (double)p->between_n,
                100 * p->between_ms / total, (unsigned long long)p->enq_between);
    fprintf(stderr, "  %-16s %-8s %8s %12.3f\n", "all", "", "", total);
    fprintf(stderr, "  enqueues between ops (copies, fills, optimizer): %llu\n",
            (unsigned long long)p->enq_between);
    if (st) {
        fprintf(stderr, "METACL_PROFILE (%s): backend counters over the context's life\n", where);
        mcl_backend_stats_print(stderr, "  ", st);
    }
}

void mcl_profile_free(mcl_profile *p) { free(p); }

void mcl_ctx_stats(const mcl_ctx *ctx, mcl_backend_stats *out)
{
    if (!out) return;
    if (ctx && ctx->be) *out = ctx->be->stats;
    else memset(out, 0, sizeof *out);
}

void mcl_ctx_stats_reset(mcl_ctx *ctx)
{
    if (ctx && ctx->be) memset(&ctx->be->stats, 0, sizeof ctx->be->stats);
}

void mcl_backend_stats_sub(mcl_backend_stats *d, const mcl_backend_stats *a,
                           const mcl_backend_stats *b)
{
    d->op_calls = a->op_calls - b->op_calls;
    d->enqueues = a->enqueues - b->enqueues;
    d->clblast_calls = a->clblast_calls - b->clblast_calls;
    d->blocking = a->blocking - b->blocking;
    d->blocking_reads = a->blocking_reads - b->blocking_reads;
    d->blocking_writes = a->blocking_writes - b->blocking_writes;
    d->finishes = a->finishes - b->finishes;
    d->maps = a->maps - b->maps;
    d->nonblocking = a->nonblocking - b->nonblocking;
    d->bytes_h2d = a->bytes_h2d - b->bytes_h2d;
    d->bytes_d2h = a->bytes_d2h - b->bytes_d2h;
}

void mcl_backend_stats_print(FILE *f, const char *indent, const mcl_backend_stats *s)
{
    fprintf(f, "%sop calls %llu, device enqueues %llu (CLBlast calls %llu), non-blocking transfers %llu\n",
            indent, (unsigned long long)s->op_calls, (unsigned long long)s->enqueues,
            (unsigned long long)s->clblast_calls, (unsigned long long)s->nonblocking);
    fprintf(f, "%sblocking host calls %llu (reads %llu, writes %llu, finishes %llu, maps %llu), "
            "bytes host->device %llu, device->host %llu\n",
            indent, (unsigned long long)s->blocking, (unsigned long long)s->blocking_reads,
            (unsigned long long)s->blocking_writes, (unsigned long long)s->finishes,
            (unsigned long long)s->maps, (unsigned long long)s->bytes_h2d,
            (unsigned long long)s->bytes_d2h);
}
