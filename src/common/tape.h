/* tape.h — engine internals: the context structure and the autograd tape (internal).
 *
 * The tape is an array of nodes in execution order. A node is one op call: its mcl_op_args
 * (inputs, outputs, params) with one reference held on every tensor it names, so everything
 * backward needs stays alive until mcl_ctx_reset().
 *
 * Backward (full or partial) walks the nodes in reverse. During one walk every tensor that
 * receives a gradient carries it in t->gtmp; at the end of a full walk, leaves that require
 * grad get gtmp added into t->grad; a partial walk instead hands the gtmp of the requested
 * tensors to the caller. Either way no gradient state survives the walk, so walks can be
 * repeated and mixed freely.
 */
#ifndef MCL_TAPE_H
#define MCL_TAPE_H

#include "backend.h"
#include "params.h"
#include "opcost.h"
#include "profile.h"

struct mcl_node {
    mcl_op_args args;
    size_t index; /* position on the tape */
};

struct mcl_ctx {
    mcl_backend *be;
    mcl_status status;
    char err[768];
    uint64_t err_seq;       /* number of errors recorded so far (mcl_ctx_error_seq) */
    uint64_t seed;
    uint64_t next_stream;
    int no_grad;            /* depth of no-grad scopes */
    mcl_node **nodes;       /* the tape                */
    size_t n_nodes, cap_nodes;
    mcl_tensor **temps;     /* op results owned by the context */
    size_t n_temps, cap_temps;
    struct mcl_profile *profile; /* METACL_PROFILE (profile.h), or NULL */
    struct mcl_bound_tally *bound; /* the roofline tally of mcl_ctx_bound_begin (opcost.h), or NULL */
};

/* Wrapping an error a callee may already have explained. The context keeps the LAST error;
 * a function that adds its own message after a failed call (a backend call, say) would then
 * hide the callee's more precise one. So: seq = mcl_ctx_error_seq(ctx) before the call, and
 * after it fails mcl_ctx_set_error_since(ctx, seq, s, ...), which records the message only
 * when nothing was recorded since seq (the callee said nothing) and returns s either way. */
uint64_t mcl_ctx_error_seq(const mcl_ctx *ctx);
mcl_status mcl_ctx_set_error_since(mcl_ctx *ctx, uint64_t seq, mcl_status s, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

/* Allocate a zero-filled tensor on ctx's backend; temp != 0 registers it as a temporary. */
mcl_tensor *mcl_tensor_alloc(mcl_ctx *ctx, int ndim, const int64_t *shape, int temp);
/* A temporary tensor of the given shape over t's elements (same buffer and offset, no copy;
 * the element count must equal t's): what a reshape returns. */
mcl_tensor *mcl_tensor_alias(mcl_ctx *ctx, mcl_tensor *t, int ndim, const int64_t *shape);
/* The same over the n = prod(shape) elements [offset, offset + n) of t (within t). */
mcl_tensor *mcl_tensor_alias_at(mcl_ctx *ctx, mcl_tensor *t, int64_t offset, int ndim,
                                const int64_t *shape);
/* mcl_slice(ctx, a, 0, start, len) whose result is a view of a's rows start .. start+len-1
 * (they are contiguous): no kernel forward; backward the slice's (ga rows += gout). The
 * caller must not write into the result (it is a's memory). */
mcl_tensor *mcl_slice_rows(mcl_ctx *ctx, mcl_tensor *a, int64_t start, int64_t len);
/* Validate a shape; on error record a message mentioning `what` and return the status. */
mcl_status mcl_shape_check(mcl_ctx *ctx, const char *what, int ndim, const int64_t *shape);

/* Give t the elements of `place` (same numel, a view into another buffer): its values are
 * copied there and t refers to place's buffer and offset from now on (params.c packing). */
mcl_status mcl_tensor_move_into(mcl_tensor *t, mcl_tensor *place);

/* Packed parameters (params.c). mcl_params_pack moves every parameter of the registry that
 * requires grad, and whose buffer nothing else shares, into one buffer, back to back in
 * registry order, and gives each a gradient slot (t->gslot) at the same offset in a second
 * buffer, so that optimizers and clipping update all of them with one launch. Idempotent.
 * mcl_params_arena: the packed values (grads = 0) or gradients (grads = 1) as a flat [N]
 * tensor, NULL when nothing is packed; *offset of parameter i in it (-1: not packed).
 * mcl_params_flat_ready: 1 when every parameter that has a .grad is packed and its .grad is
 * its slot (then the flat gradient is the registry's, zeros for the packed parameters that no
 * gradient reached). */
mcl_status mcl_params_pack(mcl_params *p);
mcl_tensor *mcl_params_arena(const mcl_params *p, int grads);
int64_t mcl_params_offset(const mcl_params *p, int i);
int mcl_params_flat_ready(const mcl_params *p);

/* Append a node for a finished op call (takes references). */
mcl_status mcl_tape_record(mcl_ctx *ctx, const mcl_op_args *args);
/* Drop every node (and its references). */
void mcl_tape_clear(mcl_ctx *ctx);

/* Accumulate src into dst (same numel) on the backend: dst += src. */
mcl_status mcl_accumulate(mcl_ctx *ctx, mcl_tensor *dst, mcl_tensor *src);

#endif
