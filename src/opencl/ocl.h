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

#include <stdint.h>

#include "backend.h"
#include "bufpool.h"

#define MCL_OCL_MAX_LOCAL_ARGS 8
typedef struct mcl_ocl_kernel_entry {
    char name[64];
    cl_kernel k;
    size_t wg_max;       /* CL_KERNEL_WORK_GROUP_SIZE for this device, capped at the device's
                          * CL_DEVICE_MAX_WORK_GROUP_SIZE and CL_DEVICE_MAX_WORK_ITEM_SIZES[0] */
    size_t local_static; /* CL_KERNEL_LOCAL_MEM_SIZE before any argument: its __local arrays */
    /* the __local arguments set by mcl_ocl_arg_local: index and bytes (checked at launch) */
    int n_local;
    int local_idx[MCL_OCL_MAX_LOCAL_ARGS];
    size_t local_bytes[MCL_OCL_MAX_LOCAL_ARGS];
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
    char platform_version[128];
    cl_device_type type;     /* CL_DEVICE_TYPE                                 */
    int index;               /* the device's place in the listing (devices.c)  */
    size_t max_wg;           /* CL_DEVICE_MAX_WORK_GROUP_SIZE                  */
    size_t max_item[3];      /* CL_DEVICE_MAX_WORK_ITEM_SIZES                  */
    size_t local_mem;        /* CL_DEVICE_LOCAL_MEM_SIZE (bytes)               */
    size_t max_alloc;        /* CL_DEVICE_MAX_MEM_ALLOC_SIZE (bytes)           */
    size_t base_align;       /* CL_DEVICE_MEM_BASE_ADDR_ALIGN (bits)           */
    int break_op;            /* METACL_TEST_BREAK op id, or -1 (test hooks)    */
    int fault_op, fault_bwd; /* METACL_TEST_FAULT op id (-1) and direction     */
    int fault_pending;       /* a planted fault the next blocking call reports */
    int fault_code;          /* the code it reports (CL_OUT_OF_RESOURCES, or @CODE) */
    int cur_op, cur_bwd;     /* the op running now (-1 between ops)            */
    int sync;                /* METACL_SYNC=1: finish the queue after every op */
    int bias_one_chunks;     /* bias gradients in one launch up to this many chunks  */
    double build_seconds;    /* time spent obtaining the program (build/cache) */
    int from_cache;          /* 1 when the program came from the disk cache    */
    mcl_ocl_kernel_entry *kernels;
    int n_kernels, cap_kernels;
    int last_entry;          /* index of the kernel entry found last (a lookup cache) */
    cl_mem scratch;          /* grow-only scratch buffer for multi-pass kernels */
    size_t scratch_bytes;
    cl_mem gemm_temp;        /* CLBlast's temporary buffer, grow-only (matmul.c) */
    size_t gemm_temp_bytes;
    mcl_pool pool;           /* buffer pool (buffers.c)                                */
    /* staging memory of the non-blocking writes (buffers.c): chunks of host memory holding
     * the bytes of writes still queued; recycled at the next point the queue is known drained */
    char **stage;
    size_t *stage_cap;
    int n_stage, cap_stage;
    size_t stage_used;       /* bytes used in the last chunk                            */
    size_t stage_pending;    /* bytes of all writes queued since the queue was drained */
    int poison;              /* METACL_DEBUG_POISON (bufpool.h)                        */
    mcl_op_impl ops[MCL_OP_COUNT]; /* be->ops: every op through ocl_fwd / ocl_bwd      */
} mcl_ocl;

static inline mcl_ocl *mcl_ocl_of(mcl_backend *be) { return (mcl_ocl *)be->impl; }

/* METACL_DEBUG_POISON: the backward running on this thread is not in backend.c's
 * bwd_fresh_aware; set when it asks mcl_ocl_grad_fresh (ocl_bwd then fails the call, naming
 * the op). Thread-local, as the reference backend's (ref_backend.c says why). */
extern _Thread_local int mcl_ocl_unlisted_bwd, mcl_ocl_unlisted_asked;

/* The counters (backend.h, mcl_backend_stats) of the calls that wait for the device. */
static inline void mcl_ocl_count_finish(mcl_backend *be)
{
    be->stats.blocking++, be->stats.finishes++;
}
/* One CLBlast routine call: one enqueue in the counters (CLBlast may launch several kernels). */
static inline void mcl_ocl_count_clblast(mcl_backend *be)
{
    be->stats.enqueues++, be->stats.clblast_calls++;
}
static inline void mcl_ocl_count_read(mcl_backend *be, size_t n, int blocking)
{
    be->stats.bytes_d2h += n;
    if (blocking) be->stats.blocking++, be->stats.blocking_reads++;
    else be->stats.nonblocking++;
}
static inline void mcl_ocl_count_write(mcl_backend *be, size_t n, int blocking)
{
    be->stats.bytes_h2d += n;
    if (blocking) be->stats.blocking++, be->stats.blocking_writes++;
    else be->stats.nonblocking++;
}
static inline cl_mem mcl_ocl_mem(const mcl_tensor *t)
{
    return ((const mcl_ocl_block *)t->buf->handle)->mem;
}

/* Buffers (buffers.c): install the pooled buffer functions into be (buf_alloc .. buf_copy);
 * release the pool's blocks (before the context goes). */
void mcl_ocl_buffers_install(mcl_backend *be);
void mcl_ocl_buffers_release(mcl_ocl *o);
/* The queue is drained (after a finish or a blocking read): the staging memory of the
 * non-blocking writes can be reused. Frees it all with free_all (tear-down). */
void mcl_ocl_stage_drained(mcl_ocl *o, int free_all);
/* Lazy zeroing around an op: called before its forward / backward. gin_fresh_aware: the op's
 * backward calls mcl_ocl_grad_fresh on each gin itself. */
mcl_status mcl_ocl_prepare_fwd(mcl_backend *be, const mcl_op_args *a);
mcl_status mcl_ocl_prepare_bwd(mcl_backend *be, const mcl_op_args *a, int gin_fresh_aware);
/* For a backward that can store instead of accumulate: 1 when the gradient buffer t is fresh
 * (all zeros, not yet written) and t covers it, and marks it written -- the caller must then
 * store every element of t; else 0 (t materialized if needed; *s = status of that). */
int mcl_ocl_grad_fresh(mcl_backend *be, const mcl_tensor *t, mcl_status *s);
/* t's buffer holds its values (the zeros a fresh one stands for written): for a fresh-aware
 * backward's gradient that its kernel adds to. t NULL: nothing. */
mcl_status mcl_ocl_materialize(mcl_backend *be, const mcl_tensor *t);

/* Rows of a [.., N] tensor per chunk in pass 1 of a bias gradient (bias_add, bias_gelu). A
 * fixed constant (not a device property), so the summation order depends only on the shapes,
 * and both ops sum in the same order. */
#define MCL_OCL_BIAS_ROWS 64
/* A launch of `name` over (chunk of rows, column) items, item c * N + j (bias_add_fwd and its
 * kin): the kernel gets the nt tensors t[], acc when acc >= 0, R, N, rows, the item count
 * (elementwise.c).  t[0] [R, N] (as rows) */
mcl_status mcl_ocl_launch_row_chunks(mcl_backend *be, const char *name,
                                     const mcl_tensor *const *t, int nt, int acc, int64_t rows);
/* Arguments a pass-1 kernel takes after its input tensors (dropout's mask, say): set from
 * index i, returning the next index (-1 on failure, as the mcl_ocl_arg_* setters do). */
typedef int (*mcl_ocl_more_args)(mcl_backend *be, cl_kernel k, int i, const void *ctx);
/* gb[j] += sum_r gout[r, j] in those chunks (then gb: bias_add_bwd_sum, chunks in order), and
 * gx += gout (store when fresh) in the same pass 1 when gx is not NULL; gb NULL: pass 1 alone,
 * for gx. The pass-1 kernel part_name (bias_add_bwd_part's argument list, see elementwise.cl)
 * gets the nin tensors in[] first, then what more(ctx) sets (when more is not NULL), and
 * computes gout from them; R, N are in[0]'s, "on" names it in messages (elementwise.c).
 *   in[0] [R, N] (as rows), gb [N] or NULL, gx [R, N] or NULL */
mcl_status mcl_ocl_bias_grad(mcl_backend *be, const char *part_name,
                             const mcl_tensor *const *in, int nin, mcl_ocl_more_args more,
                             const void *ctx, const char *on, const mcl_tensor *gb,
                             const mcl_tensor *gx);
/* Chunks up to which a bias gradient is summed in one launch on a CPU device (the kernels
 * bias_add_bwd_one, bias_dropout_relu_bwd: ceil(N / 4) items walking every chunk in turn; the
 * same bits as the two passes). */
#define MCL_OCL_BIAS_ONE_CHUNKS 8
/* 1 when a bias gradient over R rows is summed in one launch: on a CPU device up to
 * MCL_OCL_BIAS_ONE_CHUNKS chunks (one launch fewer, PoCL), elsewhere for a single chunk only:
 * on a GPU the one launch's ceil(N / 4) items leave the chip idle while each walks every row
 * (NVIDIA H200, 2026-11-30: bias_add_dropout backward 0.60 ms a call on the LM's 1024 x 192,
 * doc/gpu.md). METACL_OCL_BIAS_ONE_CHUNKS=C (a whole number >= 1) sets the limit to C chunks
 * on any device: either way gives the same bits, so this changes speed only. */
int mcl_ocl_bias_one_launch(mcl_backend *be, int64_t R);

/* The last dim of a [..,N] tensor ("cols", N) and the product of the others ("rows"). */
static inline int64_t mcl_ocl_cols(const mcl_tensor *t) { return t->shape[t->ndim - 1]; }
static inline int64_t mcl_ocl_rows(const mcl_tensor *t)
{
    return mcl_tensor_numel(t) / mcl_ocl_cols(t);
}

/* Record a readable error for an OpenCL status (`what` names the op/call and shapes).
 * CL_MEM_OBJECT_ALLOCATION_FAILURE and CL_OUT_OF_HOST_MEMORY are MCL_ERR_OOM; CL_OUT_OF_RESOURCES
 * is MCL_ERR_BACKEND with a hint: outside an allocation it is how GPUs report a kernel that
 * faulted earlier (at the next blocking call), and METACL_SYNC=1 finds the op. */
mcl_status mcl_ocl_fail(mcl_backend *be, cl_int err, const char *what);
/* NVIDIA's own status for an illegal memory access by a kernel (not in the OpenCL headers);
 * clBuildProgram, reads and CLBlast calls return it after a kernel queued earlier faulted. */
#define MCL_CL_NV_ILLEGAL_ACCESS (-9999)
/* Whether err is how a device reports a kernel that faulted earlier: CL_OUT_OF_RESOURCES (the
 * specification's), CL_INVALID_COMMAND_QUEUE (NVIDIA's clFinish after a fault: seen on the
 * H200) or MCL_CL_NV_ILLEGAL_ACCESS. */
int mcl_ocl_is_fault(cl_int err);
/* The same for a failed allocation (clCreateBuffer ...): CL_OUT_OF_RESOURCES,
 * CL_MEM_OBJECT_ALLOCATION_FAILURE, CL_OUT_OF_HOST_MEMORY and CL_INVALID_BUFFER_SIZE are
 * MCL_ERR_OOM. */
mcl_status mcl_ocl_fail_alloc(mcl_backend *be, cl_int err, const char *what);

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
/* __local scratch of `bytes` bytes. Recorded for the launch check (the kernel's static
 * __local arrays plus every __local argument must fit CL_DEVICE_LOCAL_MEM_SIZE); more than
 * the device has is refused here already. */
int mcl_ocl_arg_local(mcl_backend *be, cl_kernel k, int idx, size_t bytes);
/* The __local bytes one work-group of k needs with the arguments set so far. */
size_t mcl_ocl_local_bytes(mcl_backend *be, cl_kernel k);
/* A plain buffer (no offset argument), e.g. the scratch buffer of a multi-pass kernel. */
int mcl_ocl_arg_mem(mcl_backend *be, cl_kernel k, int idx, cl_mem m);
/* The first arguments of the normalization input-gradient kernels (layer_norm_bwd_dx/_all,
 * instance_norm_bwd_dx): in[0] x, in[1] gamma, out[1] mean, out[2] rstd,
 * gout[0] gy, gin[0] gx, each a tensor (buffer and offset); returns the next index. */
static inline int mcl_ocl_arg_norm_dx(mcl_backend *be, cl_kernel k, int idx, const mcl_op_args *a)
{
    idx = mcl_ocl_arg_tensor(be, k, idx, a->in[0]);
    idx = mcl_ocl_arg_tensor(be, k, idx, a->in[1]);
    idx = mcl_ocl_arg_tensor(be, k, idx, a->out[1]);
    idx = mcl_ocl_arg_tensor(be, k, idx, a->out[2]);
    idx = mcl_ocl_arg_tensor(be, k, idx, a->gout[0]);
    return mcl_ocl_arg_tensor(be, k, idx, a->gin[0]);
}

/* Every launch is checked against the device's and the kernel's limits first (work-group
 * size against CL_KERNEL_WORK_GROUP_SIZE, CL_DEVICE_MAX_WORK_GROUP_SIZE and
 * CL_DEVICE_MAX_WORK_ITEM_SIZES[0]; __local bytes against CL_DEVICE_LOCAL_MEM_SIZE); what
 * does not fit is refused with MCL_ERR_UNSUPPORTED and a message naming `what` (the op and
 * shape), the kernel and the limit -- never a bare driver code.
 *
 * Launch a 1-D kernel over n work-items (the global size is rounded up to a multiple of
 * the local size; kernels must ignore ids >= n and not depend on the group size). local == 0
 * lets the backend choose; a local size above the kernel's limit is lowered to it. */
mcl_status mcl_ocl_run1d(mcl_backend *be, cl_kernel k, size_t n, size_t local, const char *what);
/* Launch with n_groups work-groups of exactly `local` items each (reductions): a size above
 * the limits is refused, not lowered (the caller sized its __local buffers for it). */
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

/* On a CPU device, replace CLBlast's generic GEMM parameters with ones measured there, where
 * they fit the device's limits; on a device whose limits are below CLBlast's generic defaults,
 * install small values that fit (matmul.c); other devices keep CLBlast's database. Called once
 * when the backend is created; says once (mcl_notice) what did not fit. */
void mcl_ocl_clblast_setup(mcl_ocl *o);

/* The plan behind mcl_ocl_clblast_setup, for a device with the limits `lim`: one entry per
 * CLBlast kernel it may override (Xgemm, XgemmDirect, Copy, Pad, Transpose, Padtranspose,
 * GemmRoutine), saying where its values come from and what they need. Returns the count
 * (MCL_CLBLAST_KERNELS); `why` gets the tuned kernels that did not fit ("" if none). */
typedef struct mcl_ocl_limits {
    size_t max_wg;      /* CL_DEVICE_MAX_WORK_GROUP_SIZE                */
    size_t max_item[2]; /* CL_DEVICE_MAX_WORK_ITEM_SIZES[0], [1]        */
    size_t local_mem;   /* CL_DEVICE_LOCAL_MEM_SIZE                     */
    int is_cpu;         /* CL_DEVICE_TYPE_CPU: the tuned values apply   */
} mcl_ocl_limits;
enum { MCL_CLBLAST_DEFAULT, MCL_CLBLAST_TUNED, MCL_CLBLAST_FITTED };
#define MCL_CLBLAST_KERNELS 7
typedef struct mcl_ocl_clblast_choice {
    const char *kernel;
    int source;         /* MCL_CLBLAST_DEFAULT (nothing installed), _TUNED, _FITTED (small) */
    size_t wg;          /* work-items of one group with the installed values (0: default)  */
    size_t local_bytes; /* __local bytes of one group with them                             */
} mcl_ocl_clblast_choice;
int mcl_ocl_clblast_plan(const mcl_ocl_limits *lim, mcl_ocl_clblast_choice *out, char *why,
                         size_t why_len);
/* Before the context goes: empty CLBlast's caches of compiled programs (they hold programs of
 * this context, which CLBlast would otherwise release at process exit, after the context),
 * and release the GEMM temporary buffer. */
void mcl_ocl_clblast_teardown(mcl_ocl *o);
/* CLBlast's temporary buffer for one GEMM (CLBlastSgemmWithTempBuffer: the padded and
 * transposed copies of its indirect path) of at least `bytes` bytes: one per context, grown
 * as needed and reused, never the scratch buffer (which conv2d's GEMMs read). NULL + error
 * on failure. */
cl_mem mcl_ocl_gemm_temp(mcl_backend *be, size_t bytes);

/* Work-group size for reduction kernels: the largest power of two <= min(256, wg_max). */
size_t mcl_ocl_reduce_wg(size_t wg_max);
/* Work-group size of a one-group-per-row kernel over rows of N: mcl_ocl_reduce_wg(wg_max),
 * halved while it is at least twice N (short rows), but not below 32 (or that size). */
size_t mcl_ocl_row_wg(size_t wg_max, int64_t N);

/* The OpenCL devices in listing order (devices.c): the platforms in the order the ICD
 * loader returns them, each platform's devices in its order; `metacl devices` shows this
 * order and --device N counts in it. A platform whose clGetDeviceIDs fails keeps its error
 * (shown by `metacl devices`) and contributes no device. */
#define MCL_OCL_MAX_PLATFORMS 32
#define MCL_OCL_MAX_DEVICES 256
typedef struct mcl_ocl_listing {
    cl_int err;      /* of clGetPlatformIDs */
    int n_platforms; /* as many as fit        */
    struct {
        cl_platform_id id;
        char name[128];
        cl_int err;  /* of clGetDeviceIDs (CL_DEVICE_NOT_FOUND: none) */
        int n_devices;
    } plat[MCL_OCL_MAX_PLATFORMS];
    int n_devices;
    struct {
        cl_platform_id platform;
        int plat; /* index into plat[] */
        cl_device_id id;
        cl_device_type type;
        char name[256];
    } dev[MCL_OCL_MAX_DEVICES];
    /* the default device: the first GPU (CL_DEVICE_TYPE_GPU) of any platform, else the first
     * accelerator, else the first CPU, else device 0; -1 without devices */
    int default_idx;
} mcl_ocl_listing;
/* The default among n devices of these types, in listing order: the first with the GPU bit,
 * else the first accelerator, else the first CPU, else 0; -1 when n == 0. */
int mcl_ocl_pick_default(const cl_device_type *types, int n);
/* Fill *L (a large struct: allocate it). MCL_OK also without platforms (see L->err). */
mcl_status mcl_ocl_list(mcl_ocl_listing *L);
/* The index of the device `want` names: a number is an index in the listing, anything else
 * a case-insensitive substring of "platform device"; -1 when none matches. */
int mcl_ocl_listing_find(const mcl_ocl_listing *L, const char *want);
/* "GPU", "CPU", "accelerator", ... (several joined with '+'), into buf. */
const char *mcl_ocl_type_str(cl_device_type t, char *buf, size_t len);

/* __local bytes of one srwm work-group for head size D (forward bwd = 0, backward 1). */
size_t mcl_ocl_srwm_local_bytes(int bwd, int64_t D);

/* Embedded kernel sources (generated at build time from kernels/<family>.cl by tools/build/embed-kernels). */
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
