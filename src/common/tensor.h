/* tensor.h — contexts and tensors (public API).
 *
 * A context (mcl_ctx) binds one backend (reference or OpenCL), the autograd tape, the last
 * error message and the list of temporaries. A tensor is a float32, row-major, contiguous
 * descriptor of up to 4 dims that points into a backend buffer at an element offset; several
 * descriptors (views) may share one buffer. Buffers are reference counted and owned by the
 * backend; a descriptor never owns memory itself. Both types are opaque: shapes are read with
 * mcl_tensor_ndim / mcl_tensor_dim / mcl_tensor_shape / mcl_tensor_numel (the structs are in
 * the internal header tensor_impl.h, which is not installed).
 *
 * Ownership in one paragraph:
 *   - mcl_tensor_create()/mcl_param_create() return a tensor the CALLER owns: free it with
 *     mcl_tensor_free().
 *   - tensors returned by ops (mcl_add, ...) are TEMPORARIES owned by the context; they live
 *     until mcl_ctx_reset() (end of a training step) unless you take a reference with
 *     mcl_tensor_keep(), which you then release with mcl_tensor_free().
 *
 * Errors: functions return mcl_status, or NULL for functions returning tensors; in both cases
 * the context records a message (mcl_ctx_error()). The context keeps the LAST error recorded.
 * Op functions given a NULL input return NULL without recording anything when an error is
 * already recorded (the NULL is an earlier op's failed result: its cause stays the message),
 * else they record MCL_ERR_NULL — so a chain of ops can be checked once, at the end.
 */
#ifndef MCL_TENSOR_H
#define MCL_TENSOR_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MCL_MAX_DIMS 4
/* Largest element count of one tensor we accept (2^34 floats = 64 GiB): larger is "absurd". */
#define MCL_MAX_ELEMS ((int64_t)1 << 34)

/* Opaque handles: use the functions below (their fields are internal, tensor_impl.h). */
typedef struct mcl_ctx mcl_ctx;
typedef struct mcl_tensor mcl_tensor;

typedef enum mcl_backend_kind {
    MCL_BACKEND_REF = 0,  /* pure C reference (ground truth) */
    MCL_BACKEND_OPENCL,   /* OpenCL + CLBlast                */
    MCL_BACKEND_KIND_COUNT
} mcl_backend_kind;

/* Print the backends of this build, every OpenCL device (the default marked) and every
 * OpenCL platform (`metacl devices`): text, or one JSON object when json != 0 ("ref",
 * "opencl": the devices, "opencl_platforms"). MCL_ERR_OOM on failure. */
mcl_status mcl_backends_print(FILE *f, int json);

/* ---- context ---- */

/* Create a context on a backend. `device` selects the OpenCL device ("N", an index in the
 * listing of mcl_backends_print, or a name substring; NULL = the METACL_DEVICE environment
 * variable, else the default: the first GPU of any platform, else the first accelerator, else
 * the first CPU device); ignored by the reference backend.
 * On failure *out is NULL and, if errbuf is given, a message is written there. */
mcl_status mcl_ctx_create(mcl_ctx **out, mcl_backend_kind kind, const char *device,
                          char *errbuf, size_t errbuf_len);
void mcl_ctx_free(mcl_ctx *ctx);
mcl_backend_kind mcl_ctx_backend_kind(const mcl_ctx *ctx);
const char *mcl_ctx_backend_name(const mcl_ctx *ctx);

/* The last error: status and message (MCL_OK and "" when none). Every recorded error
 * replaces the one before (last wins), except that an op given a NULL input (an earlier op's
 * failed result) records nothing when an error is already held, so after a failed chain of
 * ops the message is the first failing op's cause. The error stays until the next one, or
 * until mcl_ctx_clear_error(); a later successful call does not clear it. */
mcl_status mcl_ctx_status(const mcl_ctx *ctx);
const char *mcl_ctx_error(const mcl_ctx *ctx);
void mcl_ctx_clear_error(mcl_ctx *ctx);
/* Record an error: status s (ignored when MCL_OK) and a printf-style message, replacing any
 * error held (the last error wins); returns s. */
mcl_status mcl_ctx_set_error(mcl_ctx *ctx, mcl_status s, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* End of a step: clears the tape and frees every temporary not kept by the caller. */
void mcl_ctx_reset(mcl_ctx *ctx);
/* Wait until all work queued on the backend has finished (for timing; no-op on ref). */
mcl_status mcl_ctx_finish(mcl_ctx *ctx);
/* Number of live temporaries (for tests of memory discipline). */
size_t mcl_ctx_num_temps(const mcl_ctx *ctx);

/* Random seed of the context (used by ops that draw: dropout, init helpers). */
void mcl_ctx_set_seed(mcl_ctx *ctx, uint64_t seed);
uint64_t mcl_ctx_seed(const mcl_ctx *ctx);
/* Returns a fresh stream id for the next random op (monotone counter). */
uint64_t mcl_ctx_next_stream(mcl_ctx *ctx);
/* The stream id the next random op will get, and setting it (with the seed, the whole random
 * state of a context: checkpoints save it so a resumed run draws the same masks). */
uint64_t mcl_ctx_stream(const mcl_ctx *ctx);
void mcl_ctx_set_stream(mcl_ctx *ctx, uint64_t next);

/* ---- tensors ---- */

/* New zero-filled tensor, owned by the caller. shape has ndim (1..4) positive entries. */
mcl_tensor *mcl_tensor_create(mcl_ctx *ctx, int ndim, const int64_t *shape);
/* Convenience: up to 4 dims given as arguments, trailing zeros mean "no such dim". */
mcl_tensor *mcl_tensor_new(mcl_ctx *ctx, int64_t d0, int64_t d1, int64_t d2, int64_t d3);
/* New caller-owned tensor that requires grad (a trainable leaf). */
mcl_tensor *mcl_param_create(mcl_ctx *ctx, const char *name, int ndim, const int64_t *shape);
/* Drop one reference; frees the descriptor (and the buffer when unused). NULL is ignored. */
void mcl_tensor_free(mcl_tensor *t);
/* Take a reference (e.g. to keep a temporary past mcl_ctx_reset). Returns t. */
mcl_tensor *mcl_tensor_keep(mcl_tensor *t);

/* Shape accessors: number of dims (1..4), size of dim d (0 <= d < ndim; 1 for d >= ndim, 0 for
 * a negative d), the ndim sizes as an array owned by t, and the element count. */
int mcl_tensor_ndim(const mcl_tensor *t);
int64_t mcl_tensor_dim(const mcl_tensor *t, int d);
const int64_t *mcl_tensor_shape(const mcl_tensor *t);
int64_t mcl_tensor_numel(const mcl_tensor *t);
int mcl_tensor_same_shape(const mcl_tensor *a, const mcl_tensor *b);
/* "[2,3,4]" into buf; returns buf. */
const char *mcl_shape_str(const mcl_tensor *t, char *buf, size_t len);
void mcl_tensor_set_name(mcl_tensor *t, const char *name);
/* The name given by mcl_tensor_set_name / mcl_param_create ("" when none). */
const char *mcl_tensor_name(const mcl_tensor *t);

/* Host <-> tensor copies of n floats (n must equal numel). */
mcl_status mcl_tensor_write(mcl_tensor *t, const float *src, int64_t n);
mcl_status mcl_tensor_read(const mcl_tensor *t, float *dst, int64_t n);
mcl_status mcl_tensor_fill(mcl_tensor *t, float value);
/* Copy contents (same numel) without recording on the tape. */
mcl_status mcl_tensor_copy_into(mcl_tensor *dst, const mcl_tensor *src);
/* Read one element (slow; tests and scalars like the loss). */
float mcl_tensor_item(const mcl_tensor *t, int64_t i);

/* View: `ndim`/`shape` descriptor into t's buffer starting `offset` elements after t's start.
 * Caller-owned, not recorded on the tape (no gradient flows through a view). */
mcl_tensor *mcl_tensor_view(mcl_tensor *t, int64_t offset, int ndim, const int64_t *shape);
/* A caller-owned descriptor sharing t's data, cut from the graph (no gradient flows back). */
mcl_tensor *mcl_detach(mcl_tensor *t);

/* Gradient of a REQUIRES_GRAD leaf (NULL until a backward reached it). */
mcl_tensor *mcl_tensor_grad(mcl_tensor *t);
void mcl_tensor_zero_grad(mcl_tensor *t);
/* Give a tensor that requires grad and has none a gradient of zeros (what it holds after
 * mcl_tensor_zero_grad once a backward has reached it); a no-op otherwise. A resumed run
 * uses it to restore which parameters the optimizer updates (those a gradient had reached). */
mcl_status mcl_tensor_grad_zeros(mcl_tensor *t);

/* Fill with random numbers from Philox (seed, stream): N(mean, std^2) or U[lo, hi). */
mcl_status mcl_tensor_randn(mcl_tensor *t, uint64_t seed, uint64_t stream, float mean, float std);
mcl_status mcl_tensor_rand_uniform(mcl_tensor *t, uint64_t seed, uint64_t stream, float lo, float hi);

#ifdef __cplusplus
}
#endif
#endif
