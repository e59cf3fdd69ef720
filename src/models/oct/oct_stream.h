/* oct_stream.h — the online transformers' stream, shared by the training adapter
 * (oct_train.c) and the report (oct_report.c), which draws it again (internal, not
 * installed).
 */
#ifndef MCL_MODELS_OCT_STREAM_H
#define MCL_MODELS_OCT_STREAM_H

#include "dataset.h"
#include "oct_train.h"
#include "sampler.h"

#define MCL_OCT_STREAM_DATA 3000000ULL /* Philox stream of the stream's draw */
#define MCL_OCT_STREAM_POOL 3000001ULL /* ... and of its class pool (stream.pool > 0) */

/* Examples in the run's stream: n_tasks × per_task. */
static inline int64_t mcl_oct_stream_len(const mcl_oct_run *c) { return (int64_t)c->n_tasks * c->per_task; }

/* The run's piecewise stream over the classes of ds (seed data_seed): the same draw for the
 * run and for its report. With stream.pool = P > 0 the tasks draw their classes from P
 * classes of ds drawn once (Philox stream MCL_OCT_STREAM_POOL), so classes recur across tasks
 * (under new labels each time); P = 0 draws from every class and is the draw it always was.
 * Errors are written to err without a prefix. */
mcl_status mcl_oct_stream_draw(const mcl_oct_run *c, mcl_dataset *ds, mcl_stream **out, char *err, size_t len);

#endif
