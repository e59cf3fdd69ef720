/* profile.h — METACL_PROFILE: where the time of a program goes, per op, on either backend.
 *
 * With METACL_PROFILE set (not "" or "0") when a context is created, the front end finishes
 * the backend's queue before and after every op (forward or backward) and charges the wall
 * time between the two to that op (its own call: the backend's work, buffer materialization
 * inside it); the time from one op's end to the next op's begin -- host code, the tape's
 * bookkeeping, output allocation, copies and fills outside the op table -- goes to one row of
 * its own, `between_ops` (pass `host`). When the context is freed, a table (calls, total and
 * per-call milliseconds, share of the whole, per op and pass, and the device enqueues the op
 * made) goes to stderr. Finishing around every op serializes host and device, so the table is
 * for finding hot spots, not for speed figures (`metacl bench` reports those).
 * Under the table come the backend's counters over the context's life (mcl_ctx_stats below:
 * op calls, device enqueues, blocking host calls, bytes moved each way).
 */
#ifndef MCL_PROFILE_H
#define MCL_PROFILE_H

#include <stdio.h>

#include "backend.h"

typedef struct mcl_profile mcl_profile;

/* A profile when METACL_PROFILE asks for one, else NULL (also when out of memory). */
mcl_profile *mcl_profile_create_from_env(void);
/* Before an op's backend call: the enqueues from here to mcl_profile_tick are the op's (the
 * table's enqueues column), those since the previous tick are counted as between ops. */
void mcl_profile_begin(mcl_profile *p, mcl_backend *be);
/* After op `op` ran (backward: 0 forward, 1 backward): finish be's queue, charge the time. */
mcl_status mcl_profile_tick(mcl_profile *p, mcl_backend *be, mcl_op op, int backward);
/* Print the table to stderr (nothing when no op was timed); `where` names the backend; st
 * (may be NULL): the backend's counters, printed under the table. */
void mcl_profile_print(const mcl_profile *p, const char *where, const mcl_backend_stats *st);
void mcl_profile_free(mcl_profile *p);

/* The backend counters of ctx (backend.h, mcl_backend_stats): what its backend did since the
 * context was made or mcl_ctx_stats_reset. The queue finishes METACL_PROFILE adds after every
 * op are not counted. mcl_backend_stats_sub: *d = a - b, field by field (a taken after b). */
void mcl_ctx_stats(const mcl_ctx *ctx, mcl_backend_stats *out);
void mcl_ctx_stats_reset(mcl_ctx *ctx);
void mcl_backend_stats_sub(mcl_backend_stats *d, const mcl_backend_stats *a,
                           const mcl_backend_stats *b);
/* The counters as two lines on f, each starting with `indent`. */
void mcl_backend_stats_print(FILE *f, const char *indent, const mcl_backend_stats *s);

#endif
