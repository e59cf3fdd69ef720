/* opcost.h — the arithmetic and the compulsory memory traffic of one op call, and the roofline
 * bound of a sequence of calls (issue 30: how fast could a workload possibly be).
 *
 * mcl_op_cost gives, from a call's arguments alone (the shapes of its tensors and its
 * parameters, never their values):
 *   flops  the floating-point arithmetic, multiply-adds counting 2. Exact for the heavy ops
 *          (matmul, conv2d, srwm, attn_kv, rel_attn, the smn writes, the norms); 0 for
 *          pointwise, shape, index and optimizer ops, whose transcendental and integer work
 *          is not counted either (opcost.c states each op's count);
 *   bytes  the compulsory memory traffic, 4 bytes per float: every tensor the call reads read
 *          once, every tensor it writes written once, an accumulated gradient (backward's gin)
 *          read and written, a tensor updated in place read and written; nothing re-read.
 * Every op of ops.def has its formula (the table in opcost.c is generated from ops.def: an op
 * without one does not compile) and tests/test-opcost checks them on known shapes. Whatever is
 * not counted makes a call's cost smaller, so the bound below stays a lower limit of the time,
 * except that the bytes are priced at DRAM's bandwidth: data that stays in the caches can move
 * faster (a fraction of the bound above 1).
 *
 * The bound: with the roofs gflops (FMA peak, GFLOP/s) and gbs (STREAM triad, GB/s),
 *   bound(call) = max(flops / gflops, bytes / gbs),   bound(workload) = Σ over its calls.
 * mcl_ctx_bound_begin makes the front end add every backend op call (forward, backward,
 * gradient accumulation: the calls METACL_PROFILE times) to a tally until mcl_ctx_bound_end.
 */
#ifndef MCL_OPCOST_H
#define MCL_OPCOST_H

#include "backend.h"

typedef struct mcl_op_cost {
    double flops, bytes;
} mcl_op_cost;

/* The cost of one call: a its arguments (forward: in, out, p; backward: also gout and gin,
 * gin[k] NULL = that gradient not computed); backward 0 forward, 1 backward. An op id out of
 * range, or a NULL a, costs 0. */
void mcl_op_cost_of(const mcl_op_args *a, int backward, mcl_op_cost *c);
/* The formula of op as a line of text (the flops and bytes counted); NULL for an id out of
 * range. Never NULL for an op of ops.def (tests/test-opcost checks it). */
const char *mcl_op_cost_formula(mcl_op op);

/* A tally of op calls against the two roofs (set gflops and gbs, zero the rest, before use). */
typedef struct mcl_bound_tally {
    double gflops, gbs;                 /* in: the roofs                                  */
    double flops, bytes;                /* sums over the calls                            */
    double bound_s, compute_s;          /* Σ bound(call), and its part from compute-bound calls */
    long calls;
    double op_bound_s[MCL_OP_COUNT][2]; /* per op, forward / backward                     */
    double op_flops[MCL_OP_COUNT][2], op_bytes[MCL_OP_COUNT][2];
    long op_calls[MCL_OP_COUNT][2];
} mcl_bound_tally;

/* Add one call (mcl_op_cost_of's arguments) to t. */
void mcl_bound_tally_add(mcl_bound_tally *t, const mcl_op_args *a, int backward);
/* The bound of one call of cost c under t's roofs, seconds; *compute (may be NULL): 1 when the
 * compute term is the larger. */
double mcl_bound_of(const mcl_bound_tally *t, const mcl_op_cost *c, int *compute);

/* From now on every backend op call of ctx is added to t (NULL: stop); t stays the caller's.
 * mcl_ctx_bound_end(ctx) = mcl_ctx_bound_begin(ctx, NULL). */
void mcl_ctx_bound_begin(mcl_ctx *ctx, mcl_bound_tally *t);
void mcl_ctx_bound_end(mcl_ctx *ctx);

#endif
