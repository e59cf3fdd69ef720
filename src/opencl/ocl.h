/* ocl.h — the OpenCL backend's internal interface (host side).
 *
 * One op family = one kernel file kernels/<family>.cl + its host glue src/opencl/<family>.c,
 * which defines mcl_ocl_<op>_fwd / _bwd with the same contract as the reference backend
 * (src/ref/ref.h): the front end has validated shapes and allocated outputs; backward
 * ACCUMULATES into the non-NULL a->gin[k].
 *
 * All kernel files are concatenated (rng.cl first, then common.cl with the shared device
 * helpers) into one program, built once per device and cached on disk (see backend.c).
 * Kernels address tensors as (buffer, element offset): every tensor argument is passed as two
 * kernel arguments, `__global float *p, long off`.
 */
#ifndef MCL_OCL_H
#define MCL_OCL_H

#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

#include "backend.h"
#include "bufpool.h"

typedef struct mcl_ocl_kernel_entry {
    char name[64];
    cl_kernel k;
    size_t wg_max; /* CL_KERNEL_WORK_GROUP_SIZE for this device */
} mcl_ocl_kernel_entry;

/* A buffer handle of this backend (buffers.c): one pooled cl_mem of pb.cap bytes. */
typedef struct mcl_ocl_block {
    mcl_pool_block pb; /* first: the pool's bookkeeping (bufpool.h) */
    cl_mem mem;
} mcl_ocl_block;

typedef struct mcl_ocl {
    cl_platform_id platform;
    cl_device_id device;
    cl_context context;
    cl_command_queue queue;
    cl_program program;
    char platform_name[128];
    char device_name[256];
    char driver_version[128];
    size_t max_wg;           /* CL_DEVICE_MAX_WORK_GROUP_SIZE                  */
    size_t local_mem;        /* CL_DEVICE_LOCAL_MEM_SIZE (bytes)               */
    size_t max_alloc;        /* CL_DEVICE_MAX_MEM_ALLOC_SIZE (bytes)           */
    int break_op;            /* METACL_TEST_BREAK op id, or -1 (test hooks)    */
    double build_seconds;    /* time spent obtaining the program (build/cache) */
    int from_cache;          /* 1 when the program came from the disk cache    */
    mcl_ocl_kernel_entry *kernels;
    int n_kernels, cap_kernels;
    cl_mem scratch;          /* grow-only scratch buffer for multi-pass kernels */
    size_t scratch_bytes;
    mcl_pool pool;           /* buffer pool (buffers.c)                                */
    int poison;              /* METACL_DEBUG_POISON (bufpool.h)                        */
    mcl_op_impl ops[MCL_OP_COUNT]; /* be->ops: every op through ocl_fwd / ocl_bwd      */
} mcl_ocl;

static inline mcl_ocl *mcl_ocl_of(mcl_backend *be) { return (mcl_ocl *)be->impl; }
static inline cl_mem mcl_ocl_mem(const mcl_tensor *t)
{
    return ((const mcl_ocl_block *)t->buf->handle)->mem;
}

/* Buffers (buffers.c): install the pooled buffer functions into be (buf_alloc .. buf_copy);
 * release the pool's blocks (before the context goes). */
void mcl_ocl_buffers_install(mcl_backend *be);
void mcl_ocl_buffers_release(mcl_ocl *o);
/* Lazy zeroing around an op: called before its forward / backward. gin_fresh_aware: the op's
 * backward calls mcl_ocl_grad_fresh on each gin itself. */
mcl_status mcl_ocl_prepare_fwd(mcl_backend *be, const mcl_op_args *a);
mcl_status mcl_ocl_prepare_bwd(mcl_backend *be, const mcl_op_args *a, int gin_fresh_aware);
/* For a backward that can store instead of accumulate: 1 when the gradient buffer t is fresh
 * (all zeros, not yet written) and t covers it, and marks it written -- the caller must then
 * store every element of t; else 0 (t materialized if needed; *s = status of that). */
int mcl_ocl_grad_fresh(mcl_backend *be, const mcl_tensor *t, mcl_status *s);

/* The last dim of a [..,N] tensor ("cols", N) and the product of the others ("rows"). */
static inline int64_t mcl_ocl_cols(const mcl_tensor *t) { return t->shape[t->ndim - 1]; }
static inline int64_t mcl_ocl_rows(const mcl_tensor *t)
{
    return mcl_tensor_numel(t) / mcl_ocl_cols(t);
}

/* Record a readable error for an OpenCL status (`what` names the op/call and shapes). */
mcl_status mcl_ocl_fail(mcl_backend *be, cl_int err, const char *what);

/* The kernel called `name` (created on first use and cached). NULL + error on failure. */
cl_kernel mcl_ocl_kernel(mcl_backend *be, const char *name, size_t *wg_max);

/* The status to return after a failed kernel lookup, argument setter or scratch request,
 * whose error is already recorded in the context (MCL_ERR_BACKEND if none is). */
mcl_status mcl_ocl_recorded(mcl_backend *be);

/* Kernel argument setters; each returns the next argument index, or -1 after recording an
 * error, and does nothing when given idx < 0, so calls chain (start with idx = k ? 0 : -1)
 * and one check at the end covers them all. mcl_ocl_arg_tensor sets two arguments: the buffer
 * and the element offset (long). */
int mcl_ocl_arg_tensor(mcl_backend *be, cl_kernel k, int idx, const mcl_tensor *t);
int mcl_ocl_arg_long(mcl_backend *be, cl_kernel k, int idx, int64_t v);
int mcl_ocl_arg_float(mcl_backend *be, cl_kernel k, int idx, float v);
int mcl_ocl_arg_int(mcl_backend *be, cl_kernel k, int idx, int v);
int mcl_ocl_arg_ulong(mcl_backend *be, cl_kernel k, int idx, uint64_t v);
/* __local scratch of `bytes` bytes. */
int mcl_ocl_arg_local(mcl_backend *be, cl_kernel k, int idx, size_t bytes);
/* A plain buffer (no offset argument), e.g. the scratch buffer of a multi-pass kernel. */
int mcl_ocl_arg_mem(mcl_backend *be, cl_kernel k, int idx, cl_mem m);

/* Launch a 1-D kernel over n work-items (the global size is rounded up to a multiple of
 * the local size; kernels must ignore ids >= n). local == 0 lets the backend choose. */
mcl_status mcl_ocl_run1d(mcl_backend *be, cl_kernel k, size_t n, size_t local, const char *what);
/* Launch with n_groups work-groups of exactly `local` items each (reductions). */
mcl_status mcl_ocl_run_groups(mcl_backend *be, cl_kernel k, size_t n_groups, size_t local,
                              const char *what);

/* mcl_ocl_run1d / mcl_ocl_run_groups after the argument setters: idx is the last setter's
 * result; idx < 0 returns the recorded error (mcl_ocl_recorded) without launching. */
mcl_status mcl_ocl_launch(mcl_backend *be, cl_kernel k, int idx, int64_t n, const char *what);
mcl_status mcl_ocl_launch_groups(mcl_backend *be, cl_kernel k, int idx, size_t n_groups,
                                 size_t local, const char *what);

/* Whole launches of the one-work-item-per-element kernels of the common signatures
 *   kname(x, y, n)  kname(x, y, f, n)  kname(x, y, z, n)
 * (every tensor as buffer + offset) over n = numel of the last tensor. `what` names the call
 * in an error message; NULL gives "kname on <shape of the last tensor>". */
mcl_status mcl_ocl_launch_unary(mcl_backend *be, const char *kname, const mcl_tensor *x,
                                const mcl_tensor *y, const char *what);
mcl_status mcl_ocl_launch_unary_f(mcl_backend *be, const char *kname, const mcl_tensor *x,
                                  const mcl_tensor *y, float f, const char *what);
mcl_status mcl_ocl_launch_binary(mcl_backend *be, const char *kname, const mcl_tensor *x,
                                 const mcl_tensor *y, const mcl_tensor *z, const char *what);

/* Error-message context ("what") strings, written into buf (returned):
 *   mcl_ocl_what_on:  "<kname> on <shape of t>"
 *   mcl_ocl_what_op:  "<op> <dir> (kernel <kname>, <tname> <shape of t>)", e.g.
 *                     "softmax backward (kernel softmax_bwd, x [13,7])"; dir NULL omits it. */
const char *mcl_ocl_what_on(char *buf, size_t len, const char *kname, const mcl_tensor *t);
const char *mcl_ocl_what_op(char *buf, size_t len, const char *op, const char *dir,
                            const char *kname, const char *tname, const mcl_tensor *t);

/* A device scratch buffer of at least `bytes` bytes, owned by the backend and reused by the
 * next op (the queue is in order, so one op's passes may share it; do not keep it). */
cl_mem mcl_ocl_scratch(mcl_backend *be, size_t bytes);

/* On a CPU device, replace CLBlast's generic GEMM parameters with ones measured there
 * (matmul.c); other devices keep CLBlast's database. Called once when the backend is created. */
void mcl_ocl_clblast_setup(mcl_ocl *o);
/* Before the context goes: empty CLBlast's caches of compiled programs (they hold programs of
 * this context, which CLBlast would otherwise release at process exit, after the context). */
void mcl_ocl_clblast_teardown(mcl_ocl *o);

/* Work-group size for reduction kernels: the largest power of two <= min(256, wg_max). */
size_t mcl_ocl_reduce_wg(size_t wg_max);
/* Work-group size of a one-group-per-row kernel over rows of N: mcl_ocl_reduce_wg(wg_max),
 * halved while it is at least twice N (short rows), but not below 32 (or that size). */
size_t mcl_ocl_row_wg(size_t wg_max, int64_t N);

/* Embedded kernel sources (generated at build time from kernels/<family>.cl by tools/embed-kernels). */
extern const int mcl_kernel_count;
extern const char *const mcl_kernel_names[];   /* "rng.cl", "common.cl", ... */
extern const char *const mcl_kernel_sources[];

/* mcl_ocl_<name>_fwd for every op, mcl_ocl_<name>_bwd for the ops with has_bwd = 1 (ops.def) */
#define MCL_OP(ID, name, n_in, n_out, n_diff_out, family, overwrites, has_bwd)              \
    mcl_status mcl_ocl_##name##_fwd(mcl_backend *be, const mcl_op_args *a);                  \
    MCL_IF_##has_bwd(mcl_status mcl_ocl_##name##_bwd(mcl_backend *be, const mcl_op_args *a);)
#include "ops.def"
#undef MCL_OP

#endif
