/* backend.h — the backend vtable and the uniform op-call record (internal, not installed;
 * includes tensor_impl.h, the tensor fields).
 *
 * Every backend fills one `mcl_op_impl` per op of ops.def (forward + backward), plus the
 * buffer functions below. The front end (ops.c) checks shapes, allocates outputs, builds an
 * `mcl_op_args` and calls `be->ops[op].fwd(be, &args)`; the tape later calls `.bwd` with the
 * same record (plus gout/gin filled in). Kernels never allocate tensors themselves.
 */
#ifndef MCL_BACKEND_H
#define MCL_BACKEND_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "tensor_impl.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Op enum generated from ops.def. */
typedef enum mcl_op {
#define MCL_OP(ID, name, n_in, n_out, n_diff_out, family, overwrites, has_bwd) MCL_OP_##ID,
#include "ops.def"
#undef MCL_OP
    MCL_OP_COUNT
} mcl_op;

#define MCL_MAX_IN 13
#define MCL_MAX_OUT 12

/* Static facts about an op, generated from ops.def. */
typedef struct mcl_op_info {
    const char *name;
    const char *family;
    int n_in, n_out, n_diff_out;
    int overwrites; /* the forward stores every element of every output (ops.def) */
    int has_bwd;    /* the op has a backward (ops.def)                            */
} mcl_op_info;

/* Helpers for the backends' code generated from ops.def's literal 0/1 columns:
 *   MCL_IF_##has_bwd(text)              text when has_bwd is 1, nothing when 0
 *   MCL_BWD_OR_NULL_##has_bwd(fn)       fn when has_bwd is 1, NULL when 0
 * so an op without a backward gets a NULL table entry and no declared _bwd function. */
#define MCL_IF_1(...) __VA_ARGS__
#define MCL_IF_0(...)
#define MCL_BWD_OR_NULL_1(fn) fn
#define MCL_BWD_OR_NULL_0(fn) NULL

extern const mcl_op_info mcl_op_table[MCL_OP_COUNT];
/* Lookup by name; returns MCL_OP_COUNT if unknown. */
mcl_op mcl_op_by_name(const char *name);

/* Scalar parameters of one call. Meaning per op: see ops.def. */
typedef struct mcl_op_params {
    float f[8];
    int64_t i[8];
    uint64_t u[4];
} mcl_op_params;

/* One call of an op: what forward gets, and what backward gets (plus gout/gin). */
typedef struct mcl_op_args {
    mcl_op op;
    mcl_tensor *in[MCL_MAX_IN];
    mcl_tensor *out[MCL_MAX_OUT];
    mcl_tensor *gout[MCL_MAX_OUT]; /* backward: dL/dout[k] for k < n_diff_out (never NULL)  */
    mcl_tensor *gin[MCL_MAX_IN];   /* backward: accumulate dL/din[k] here; NULL = not needed */
    mcl_op_params p;
    /* mcl_op_run: when nonzero, out[] are caller-provided tensors (checked against the
     * inferred shapes) instead of new temporaries — e.g. views with guard regions around
     * them in the differential tests. */
    int out_given;
} mcl_op_args;

/* Dimensions of one matmul call, derived from the (already checked) shapes; shared by the
 * backends' matmul glue.
 *   a   stored [.., M, K]  (ta = 0)   or [.., K, M]  (ta = 1);  lda = its row length
 *   b   stored [.., K, N]  (tb = 0)   or [.., N, K]  (tb = 1);  ldb = its row length
 *   out        [.., M, N]
 *   batch = product of the leading dims (1 for 2-D tensors) */
typedef struct mcl_mm_dims {
    int ta, tb;
    int64_t batch, M, N, K;
    int64_t lda, ldb;
} mcl_mm_dims;

static inline void mcl_mm_dims_get(const mcl_op_args *a, mcl_mm_dims *d)
{
    const mcl_tensor *A = a->in[0], *C = a->out[0];
    int nd = C->ndim;
    d->ta = a->p.i[0] != 0;
    d->tb = a->p.i[1] != 0;
    d->M = C->shape[nd - 2];
    d->N = C->shape[nd - 1];
    d->K = d->ta ? A->shape[A->ndim - 2] : A->shape[A->ndim - 1];
    d->batch = 1;
    for (int i = 0; i < nd - 2; i++) d->batch *= C->shape[i];
    d->lda = d->ta ? d->M : d->K;
    d->ldb = d->tb ? d->K : d->N;
}

/* The two constants of grad_preproc (ops.def) from P = p.f[0]: the threshold thr = e^-P and the
 * scale ep = e^P, computed once per call on the host in float by both backends' host code, so
 * the reference loop and the OpenCL kernels use the very same two floats. */
static inline void mcl_grad_preproc_consts(float P, float *thr, float *ep)
{
    *thr = expf(-P);
    *ep = expf(P);
}

/* add_dropout's call (out = a + dropout(x), ops.def) as the dropout op's arguments for its input
 * x: in[1] x and gin[1] gx moved to slot 0, the seed words p.u[0..2] and p.f[0] = p kept, one
 * segment (p.i[0] = 0, p.u[3] = 0), no relu (p.i[1] = 0). Shared by both backends' host code. */
static inline mcl_op_args mcl_add_dropout_as_dropout(const mcl_op_args *a)
{
    mcl_op_args d = *a;
    d.op = MCL_OP_DROPOUT;
    d.in[0] = a->in[1];
    d.in[1] = NULL;
    d.gin[0] = a->gin[1];
    d.gin[1] = NULL;
    d.p.i[0] = 0;
    d.p.i[1] = 0;
    d.p.u[3] = 0;
    return d;
}

/* Run one op by id on the context backend (the front end of ops.c; used by the test runner).
 * `args` holds inputs and params; outputs are allocated with the shapes the op infers and
 * returned as temporaries in args->out. Recorded on the tape like any op. */
mcl_status mcl_op_run(mcl_ctx *ctx, mcl_op_args *args);
/* Run the backward of one op call directly (no tape). args->in/out/p as after mcl_op_run;
 * args->gout[k] (k < n_diff_out) must be set; args->gin[k] are caller-provided tensors of the
 * inputs' shapes (or NULL) into which the gradients are ACCUMULATED. */
mcl_status mcl_op_backward(mcl_ctx *ctx, mcl_op_args *args);

typedef mcl_status (*mcl_op_fn)(mcl_backend *be, const mcl_op_args *a);

typedef struct mcl_op_impl {
    mcl_op_fn fwd;
    mcl_op_fn bwd; /* NULL when n_diff_out == 0 */
} mcl_op_impl;

struct mcl_buffer {
    mcl_backend *be;
    void *handle;  /* ref: float*; OpenCL: cl_mem */
    size_t nbytes;
    int refcnt;
    /* What the host knows of the contents, so that an index check need not read them back
     * (ops.c check_indices): floats [known_off, known_off + known_n) hold integers in
     * [known_min, known_max]. Set by mcl_tensor_write / mcl_tensor_fill of integer values;
     * dropped (known_n = 0) by any other write: a copy into the buffer, an op that has it as
     * an output or may update it in place (every input but the index inputs of the ops that
     * check them), a backward accumulating into it. */
    int64_t known_off, known_n;
    float known_min, known_max;
    /* Bumped by every write the front end sees (the same places: a host write or fill, a
     * copy, an op or backward that may write the buffer): host-side caches of values derived
     * from the contents compare it (ACL's evaluation normalization, acl.c). */
    uint64_t gen;
};

/* Drop what the host knows of b's contents (see struct mcl_buffer). */
static inline void mcl_buffer_forget(mcl_buffer *b)
{
    if (b) b->known_n = 0, b->gen++;
}
/* Before an op call runs (ops.c, tape.c): drop it for every buffer the call may write. */
void mcl_op_forget_written(const mcl_op_args *a, int backward);

/* What a context's backend did, counted since the context was made or the counters were last
 * reset (mcl_ctx_stats, profile.h). op_calls is counted by the front end on every backend
 * (forward and backward calls, the tape's included); the rest by the OpenCL backend only
 * (0 on the reference backend):
 *   enqueues       commands that run on the device: every clEnqueueNDRangeKernel, every
 *                  clEnqueueCopyBuffer, and every CLBlast routine call (counted once, though
 *                  CLBlast may launch several kernels inside it)
 *   clblast_calls  the CLBlast routine calls among them
 *   blocking       host calls that wait for the device: the sum of the four below
 *   blocking_reads, blocking_writes, finishes (clFinish), maps (blocking clEnqueueMap*)
 *   nonblocking    transfers queued without waiting (non-blocking writes and reads)
 *   bytes_h2d, bytes_d2h   bytes moved host -> device and device -> host (both kinds) */
typedef struct mcl_backend_stats {
    uint64_t op_calls;
    uint64_t enqueues, clblast_calls;
    uint64_t blocking, blocking_reads, blocking_writes, finishes, maps;
    uint64_t nonblocking;
    uint64_t bytes_h2d, bytes_d2h;
} mcl_backend_stats;

struct mcl_backend {
    mcl_backend_kind kind;
    const char *name;
    mcl_ctx *ctx;  /* for error messages */
    void *impl;    /* backend private state */
    /* Buffers: alloc returns zero-filled memory. */
    mcl_status (*buf_alloc)(mcl_backend *be, size_t nbytes, void **handle);
    void (*buf_free)(mcl_backend *be, void *handle);
    mcl_status (*buf_write)(mcl_backend *be, void *handle, size_t off_bytes, const void *src,
                            size_t nbytes);
    mcl_status (*buf_read)(mcl_backend *be, void *handle, size_t off_bytes, void *dst,
                           size_t nbytes);
    mcl_status (*buf_fill)(mcl_backend *be, void *handle, size_t off_bytes, float value,
                           size_t count);
    mcl_status (*buf_copy)(mcl_backend *be, void *dst, size_t dst_off_bytes, void *src,
                           size_t src_off_bytes, size_t nbytes);
    /* Optional (NULL = buf_read): queue a read without waiting for it; dst is filled once
     * the queue is finished (finish, or any blocking read), and must stay valid until then. */
    mcl_status (*buf_read_async)(mcl_backend *be, void *handle, size_t off_bytes, void *dst,
                                 size_t nbytes);
    mcl_status (*finish)(mcl_backend *be); /* wait for queued work (no-op on ref) */
    void (*destroy)(mcl_backend *be);
    const mcl_op_impl *ops; /* [MCL_OP_COUNT] */
    /* Optional hook run by the front end after every forward (backward = 0) or backward
     * (backward = 1) of an op; used by the METACL_TEST_BREAK self-test. NULL = none. */
    mcl_status (*post_op)(mcl_backend *be, const mcl_op_args *a, int backward);
    /* Optional: the device's name (profile titles, logs). NULL = the backend's name says it. */
    const char *(*device_name)(const mcl_backend *be);
    /* The counters (see mcl_backend_stats): the front end and the backend add to them. */
    mcl_backend_stats stats;
    /* 1: a new buffer costs no zero fill until something reads it or writes part of it, and
     * an op that stores a whole fresh gradient skips the fill (the reference backend's lazy
     * zeroing): a backward walk then gives each gradient a buffer of its own instead of a
     * view into a shared zero-filled chunk (tape.c, WALK_ARENA), so every first writer of a
     * whole gradient can store it. 0: the chunks (one fill per chunk, not per tensor). */
    int own_grad_buffers;
};

/* The reference backend's constructor (src/ref/). */
mcl_status mcl_ref_backend_create(mcl_ctx *ctx, mcl_backend **out);

/* src/common/backends.c, the only file that names the backends: open a backend by kind
 * (device: NULL = default; MCL_ERR_UNSUPPORTED when the kind is not built in), and
 * "name" or "name: device" of a backend for titles and logs. */
mcl_status mcl_backend_open(mcl_ctx *ctx, mcl_backend_kind kind, const char *device,
                            mcl_backend **out);
void mcl_backend_describe(const mcl_backend *be, char *out, size_t n);

/* Test hook (only in a build configured with --enable-test-hooks, which defines
 * MCL_TEST_HOOKS): when the environment variable METACL_TEST_BREAK names an op, the OpenCL
 * backend installs post_op to perturb that op's output (proves the differential runner can
 * fail). Without the hooks the variable does nothing. */

#ifdef __cplusplus
}
#endif
#endif
