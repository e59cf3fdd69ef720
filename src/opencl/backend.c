/* backend.c — the OpenCL backend: device choice, buffers, the program (built once, cached on
 * disk), kernel lookup and launch helpers, error mapping, and the op table.
 *
 * Program cache. The concatenated kernel source is built with fixed options (no relaxed-math
 * flags). The binary is cached under $XDG_CACHE_HOME/metacl (or ~/.cache/metacl) in a file
 * named by a hash of (source, options, platform, device, driver version). The file holds
 *   "MCLPROG1" | u32 key length | key text | u64 binary length | binary | u32 CRC-32
 * where the key text spells out everything hashed (the source as its own hash), so a hash
 * collision or a stale file is detected by comparing the key, and corruption by the CRC.
 * Any mismatch means: rebuild from source and rewrite the entry (temp file + rename).
 * METACL_NO_CACHE=1 disables the cache; METACL_KERNEL_DIR=dir reads kernels/<family>.cl from dir.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "devices.h"
#include "ocl.h"
#include "tape.h"
#include "util.h"

#define BUILD_OPTIONS_BASE "-cl-std=CL1.2"

/* ------------------------------------------------------------------ errors */

/* Kernel faults on a GPU surface late: a kernel that reads out of bounds or misaligned, or
 * needs more registers or resources than the device has, makes the NEXT blocking call (a read,
 * a finish, a program build, sometimes an enqueue) fail, long after the op that queued it
 * returned: with CL_OUT_OF_RESOURCES, or on NVIDIA with CL_INVALID_COMMAND_QUEUE or its own
 * -9999 (mcl_ocl_is_fault). So CL_OUT_OF_RESOURCES is an allocation failure (MCL_ERR_OOM) only
 * where memory is being allocated (mcl_ocl_fail_alloc); anywhere else these are
 * MCL_ERR_BACKEND with this hint. */
#define FAULT_HINT                                                                              \
    "; a kernel queued earlier probably faulted (an out-of-bounds or misaligned access, or more " \
    "registers or resources than the device has), which OpenCL reports at the next blocking "   \
    "call; rerun with METACL_SYNC=1 to find which op"

static mcl_status fail_as(mcl_backend *be, mcl_status s, cl_int err, const char *what,
                          const char *hint)
{
    mcl_ocl *o = mcl_ocl_of(be);
    return mcl_ctx_set_error(be->ctx, s, "OpenCL: %s failed: %s (%d) on %s%s", what,
                             mcl_cl_status_str(err), (int)err, o ? o->device_name : "?", hint);
}

int mcl_ocl_is_fault(cl_int err)
{
    return err == CL_OUT_OF_RESOURCES || err == CL_INVALID_COMMAND_QUEUE ||
           err == MCL_CL_NV_ILLEGAL_ACCESS;
}

mcl_status mcl_ocl_fail(mcl_backend *be, cl_int err, const char *what)
{
    if (err == CL_MEM_OBJECT_ALLOCATION_FAILURE || err == CL_OUT_OF_HOST_MEMORY)
        return fail_as(be, MCL_ERR_OOM, err, what, "");
    if (mcl_ocl_is_fault(err)) {
        const mcl_ocl *o = mcl_ocl_of(be);
        return fail_as(be, MCL_ERR_BACKEND, err, what,
                       o && o->sync ? "; a kernel of this op or of the one before it faulted "
                                      "(an out-of-bounds or misaligned access, or more registers "
                                      "or resources than the device has)"
                                    : FAULT_HINT);
    }
    return fail_as(be, MCL_ERR_BACKEND, err, what, "");
}

mcl_status mcl_ocl_fail_alloc(mcl_backend *be, cl_int err, const char *what)
{
    if (err == CL_MEM_OBJECT_ALLOCATION_FAILURE || err == CL_OUT_OF_RESOURCES ||
        err == CL_OUT_OF_HOST_MEMORY || err == CL_INVALID_BUFFER_SIZE)
        return fail_as(be, MCL_ERR_OOM, err, what, " (out of device memory)");
    return fail_as(be, MCL_ERR_BACKEND, err, what, "");
}

mcl_status mcl_ocl_recorded(mcl_backend *be)
{
    mcl_status s = mcl_ctx_status(be->ctx);
    return s != MCL_OK ? s : MCL_ERR_BACKEND;
}

/* ------------------------------------------------------------------ queue */

#ifdef MCL_TEST_HOOKS
/* METACL_TEST_FAULT (test hooks only): a fault planted by an op's launch is reported by the
 * next blocking call, as a GPU reports a faulting kernel. */
static cl_int planted_fault(mcl_ocl *o, cl_int err)
{
    if (err == CL_SUCCESS && o->fault_pending) {
        o->fault_pending = 0;
        return o->fault_code;
    }
    return err;
}
#else
#define planted_fault(o, err) (err)
#endif

static mcl_status ocl_finish(mcl_backend *be)
{
    mcl_ocl *o = mcl_ocl_of(be);
    mcl_ocl_count_finish(be);
    cl_int err = planted_fault(o, clFinish(o->queue));
    if (err == CL_SUCCESS) mcl_ocl_stage_drained(o, 0);
    return err == CL_SUCCESS ? MCL_OK : mcl_ocl_fail(be, err, "clFinish (waiting for queued kernels)");
}

/* ------------------------------------------------------------------ kernels */

/* The table entry of k (the last one found is tried first: a launch sets its arguments and
 * launches one kernel at a time). */
static mcl_ocl_kernel_entry *entry_of(mcl_ocl *o, cl_kernel k)
{
    if (o->last_entry >= 0 && o->last_entry < o->n_kernels && o->kernels[o->last_entry].k == k)
        return &o->kernels[o->last_entry];
    for (int i = 0; i < o->n_kernels; i++)
        if (o->kernels[i].k == k) {
            o->last_entry = i;
            return &o->kernels[i];
        }
    return NULL;
}

cl_kernel mcl_ocl_kernel(mcl_backend *be, const char *name, size_t *wg_max)
{
    mcl_ocl *o = mcl_ocl_of(be);
    for (int i = 0; i < o->n_kernels; i++)
        if (strcmp(o->kernels[i].name, name) == 0) {
            if (wg_max) *wg_max = o->kernels[i].wg_max;
            return o->kernels[i].k;
        }
    if (o->n_kernels == o->cap_kernels) {
        int cap = o->cap_kernels ? 2 * o->cap_kernels : 64;
        mcl_ocl_kernel_entry *p = realloc(o->kernels, (size_t)cap * sizeof *p);
        if (!p) {
            mcl_ctx_set_error(be->ctx, MCL_ERR_OOM, "OpenCL: out of memory (kernel table)");
            return NULL;
        }
        o->kernels = p;
        o->cap_kernels = cap;
    }
    cl_int err;
    cl_kernel k = clCreateKernel(o->program, name, &err);
    if (err != CL_SUCCESS) {
        char what[128];
        snprintf(what, sizeof what, "clCreateKernel(%s)", name);
        mcl_ocl_fail(be, err, what);
        return NULL;
    }
    /* the kernel's own limits: CL_KERNEL_WORK_GROUP_SIZE (registers, barriers: below the
     * device's limit on GPUs) and its static __local arrays (no argument set yet) */
    size_t wg = o->max_wg;
    if (clGetKernelWorkGroupInfo(k, o->device, CL_KERNEL_WORK_GROUP_SIZE, sizeof wg, &wg, NULL) !=
            CL_SUCCESS || wg == 0)
        wg = o->max_wg;
    if (wg > o->max_wg) wg = o->max_wg;
    if (wg > o->max_item[0]) wg = o->max_item[0];
    cl_ulong lm = 0;
    if (clGetKernelWorkGroupInfo(k, o->device, CL_KERNEL_LOCAL_MEM_SIZE, sizeof lm, &lm, NULL) !=
        CL_SUCCESS)
        lm = 0;
    mcl_ocl_kernel_entry *e = &o->kernels[o->n_kernels++];
    memset(e, 0, sizeof *e);
    snprintf(e->name, sizeof e->name, "%s", name);
    e->k = k;
    e->wg_max = wg;
    e->local_static = (size_t)lm;
    if (wg_max) *wg_max = wg;
    return k;
}

static int set_arg(mcl_backend *be, cl_kernel k, int idx, size_t size, const void *v)
{
    if (idx < 0) return -1;
    cl_int err = clSetKernelArg(k, (cl_uint)idx, size, v);
    if (err != CL_SUCCESS) {
        char what[64];
        snprintf(what, sizeof what, "clSetKernelArg(%d)", idx);
        mcl_ocl_fail(be, err, what);
        return -1;
    }
    return idx + 1;
}

/* Record that argument idx of k now is (local != 0) or is not (a plain argument: its old
 * size is forgotten) a __local buffer of `bytes`. */
static mcl_status note_local_arg(mcl_backend *be, cl_kernel k, int idx, int local, size_t bytes)
{
    mcl_ocl_kernel_entry *e = entry_of(mcl_ocl_of(be), k);
    if (!e || (!local && e->n_local == 0)) return MCL_OK;
    for (int j = 0; j < e->n_local; j++)
        if (e->local_idx[j] == idx) {
            e->local_bytes[j] = local ? bytes : 0;
            return MCL_OK;
        }
    if (!local) return MCL_OK;
    if (e->n_local == MCL_OCL_MAX_LOCAL_ARGS)
        return mcl_ctx_set_error(be->ctx, MCL_ERR_BACKEND,
                                 "OpenCL: kernel %s has more than %d __local arguments (raise "
                                 "MCL_OCL_MAX_LOCAL_ARGS in ocl.h)", e->name, MCL_OCL_MAX_LOCAL_ARGS);
    e->local_idx[e->n_local] = idx;
    e->local_bytes[e->n_local++] = bytes;
    return MCL_OK;
}

/* A non-__local argument: forget a __local size recorded at that index earlier. */
static int set_plain(mcl_backend *be, cl_kernel k, int idx, size_t size, const void *v)
{
    int next = set_arg(be, k, idx, size, v);
    if (next >= 0) note_local_arg(be, k, idx, 0, 0);
    return next;
}

int mcl_ocl_arg_tensor(mcl_backend *be, cl_kernel k, int idx, const mcl_tensor *t)
{
    cl_mem m = mcl_ocl_mem(t);
    cl_long off = (cl_long)t->offset;
    idx = set_plain(be, k, idx, sizeof m, &m);
    return set_plain(be, k, idx, sizeof off, &off);
}

int mcl_ocl_arg_long(mcl_backend *be, cl_kernel k, int idx, int64_t v)
{
    cl_long x = (cl_long)v;
    return set_plain(be, k, idx, sizeof x, &x);
}

int mcl_ocl_arg_ulong(mcl_backend *be, cl_kernel k, int idx, uint64_t v)
{
    cl_ulong x = (cl_ulong)v;
    return set_plain(be, k, idx, sizeof x, &x);
}

int mcl_ocl_arg_float(mcl_backend *be, cl_kernel k, int idx, float v)
{
    cl_float x = v;
    return set_plain(be, k, idx, sizeof x, &x);
}

int mcl_ocl_arg_int(mcl_backend *be, cl_kernel k, int idx, int v)
{
    cl_int x = (cl_int)v;
    return set_plain(be, k, idx, sizeof x, &x);
}

int mcl_ocl_arg_local(mcl_backend *be, cl_kernel k, int idx, size_t bytes)
{
    if (idx < 0) return -1;
    mcl_ocl *o = mcl_ocl_of(be);
    if (bytes > o->local_mem) {
        /* refused here already: some drivers fail clSetKernelArg itself with a bare code */
        mcl_ocl_kernel_entry *e = entry_of(o, k);
        mcl_ctx_set_error(be->ctx, MCL_ERR_UNSUPPORTED,
                          "OpenCL: kernel %s: a __local buffer of %zu bytes (argument %d) exceeds "
                          "the %zu bytes of __local memory (CL_DEVICE_LOCAL_MEM_SIZE) of %s",
                          e ? e->name : "?", bytes, idx, o->local_mem, o->device_name);
        return -1;
    }
    int next = set_arg(be, k, idx, bytes ? bytes : 1, NULL);
    if (next >= 0 && note_local_arg(be, k, idx, 1, bytes) != MCL_OK) return -1;
    return next;
}

int mcl_ocl_arg_mem(mcl_backend *be, cl_kernel k, int idx, cl_mem m)
{
    return set_plain(be, k, idx, sizeof m, &m);
}

cl_mem mcl_ocl_scratch(mcl_backend *be, size_t bytes)
{
    mcl_ocl *o = mcl_ocl_of(be);
    if (bytes == 0) bytes = sizeof(float);
    if (o->scratch && o->scratch_bytes >= bytes) return o->scratch;
    if (bytes > o->max_alloc) {
        mcl_ctx_set_error(be->ctx, MCL_ERR_OOM,
                          "OpenCL: a scratch buffer of %zu bytes exceeds the device's largest "
                          "allocation (CL_DEVICE_MAX_MEM_ALLOC_SIZE, %zu bytes) on %s",
                          bytes, o->max_alloc, o->device_name);
        return NULL;
    }
    if (o->scratch) clReleaseMemObject(o->scratch); /* freed once queued work is done */
    o->scratch = NULL;
    o->scratch_bytes = 0;
    size_t want = bytes < 4096 ? 4096 : bytes;
    if (want > o->max_alloc) want = bytes;
    cl_int err;
    o->scratch = clCreateBuffer(o->context, CL_MEM_READ_WRITE, want, NULL, &err);
    if (err != CL_SUCCESS) {
        o->scratch = NULL;
        mcl_ocl_fail_alloc(be, err, "clCreateBuffer (scratch)");
        return NULL;
    }
    o->scratch_bytes = want;
    return o->scratch;
}

size_t mcl_ocl_reduce_wg(size_t wg_max)
{
    size_t w = 1;
    while (w * 2 <= wg_max && w * 2 <= 256) w *= 2;
    return w;
}

size_t mcl_ocl_row_wg(size_t wg_max, int64_t N)
{
    size_t w = mcl_ocl_reduce_wg(wg_max);
    while (w > 32 && (int64_t)(w / 2) >= N) w /= 2;
    return w;
}

size_t mcl_ocl_local_bytes(mcl_backend *be, cl_kernel k)
{
    const mcl_ocl_kernel_entry *e = entry_of(mcl_ocl_of(be), k);
    if (!e) return 0;
    size_t total = e->local_static;
    for (int j = 0; j < e->n_local; j++) total += e->local_bytes[j];
    return total;
}

/* The limits of one launch of k with work-groups of `local` items, checked before the
 * driver sees it: the group against CL_KERNEL_WORK_GROUP_SIZE (e->wg_max, already capped at
 * CL_DEVICE_MAX_WORK_GROUP_SIZE and CL_DEVICE_MAX_WORK_ITEM_SIZES[0]), the __local memory
 * (the kernel's static arrays, CL_KERNEL_LOCAL_MEM_SIZE, plus the __local arguments set by
 * mcl_ocl_arg_local) against CL_DEVICE_LOCAL_MEM_SIZE. A launch beyond them is refused with
 * MCL_ERR_UNSUPPORTED and a message naming the op and shape (`what`) and the limit. */
static mcl_status check_launch(mcl_backend *be, cl_kernel k, size_t local, const char *what)
{
    mcl_ocl *o = mcl_ocl_of(be);
    const mcl_ocl_kernel_entry *e = entry_of(o, k);
    const char *kname = e ? e->name : "?";
    const size_t wg = e ? e->wg_max : o->max_wg;
    if (local == 0 || local > wg)
        return mcl_ctx_set_error(
            be->ctx, MCL_ERR_UNSUPPORTED,
            "OpenCL: %s: work-groups of %zu items exceed the limit of kernel %s on %s (%zu "
            "items: the smallest of its CL_KERNEL_WORK_GROUP_SIZE, CL_DEVICE_MAX_WORK_GROUP_SIZE "
            "%zu and CL_DEVICE_MAX_WORK_ITEM_SIZES[0] %zu)",
            what, local, kname, o->device_name, wg, o->max_wg, o->max_item[0]);
    const size_t lb = mcl_ocl_local_bytes(be, k);
    if (lb > o->local_mem)
        return mcl_ctx_set_error(
            be->ctx, MCL_ERR_UNSUPPORTED,
            "OpenCL: %s: kernel %s needs %zu bytes of __local memory per work-group of %zu "
            "items (%zu static + %zu in arguments), more than the %zu bytes "
            "(CL_DEVICE_LOCAL_MEM_SIZE) of %s",
            what, kname, lb, local, e ? e->local_static : 0, lb - (e ? e->local_static : 0),
            o->local_mem, o->device_name);
    return MCL_OK;
}

static mcl_status enqueue(mcl_backend *be, cl_kernel k, size_t global, size_t local, const char *what)
{
    if (global == 0) return MCL_OK;
    mcl_ocl *o = mcl_ocl_of(be);
    mcl_status s = check_launch(be, k, local, what);
    if (s != MCL_OK) return s;
    cl_int err = CL_SUCCESS;
#ifdef MCL_TEST_HOOKS
    if (o->fault_op >= 0 && o->fault_op == o->cur_op && o->cur_bwd == o->fault_bwd)
        o->fault_pending = 1; /* METACL_TEST_FAULT: each launch of that op "faults" */
#endif
    be->stats.enqueues++;
    err = clEnqueueNDRangeKernel(o->queue, k, 1, NULL, &global, &local, 0, NULL, NULL);
    if (err == CL_SUCCESS) return MCL_OK;
    if (err == CL_INVALID_WORK_GROUP_SIZE || err == CL_OUT_OF_RESOURCES) {
        /* the driver refused what the checks above let through: say what was asked */
        char full[400];
        const mcl_ocl_kernel_entry *e = entry_of(o, k);
        snprintf(full, sizeof full, "%s (kernel %s, %zu items in groups of %zu, %zu B __local; "
                 "kernel limit %zu items)", what, e ? e->name : "?", global, local,
                 mcl_ocl_local_bytes(be, k), e ? e->wg_max : 0);
        return mcl_ocl_fail(be, err, full);
    }
    return mcl_ocl_fail(be, err, what);
}

mcl_status mcl_ocl_run1d(mcl_backend *be, cl_kernel k, size_t n, size_t local, const char *what)
{
    if (n == 0) return MCL_OK;
    mcl_ocl *o = mcl_ocl_of(be);
    const mcl_ocl_kernel_entry *e = entry_of(o, k);
    size_t wg = e ? e->wg_max : o->max_wg;
    if (wg > o->max_item[0]) wg = o->max_item[0];
    /* default 256 items (or the kernel's limit): a common size on GPUs, and on PoCL fewer,
     * larger work-groups (MLP step 2% faster than with 64, 4% slower with 1024). One-item-
     * per-element kernels do not depend on the group size: a size above the limit adapts. */
    if (local == 0 || local > wg) local = wg < 256 ? wg : 256;
    if (local == 0) local = 1;
    if (n > SIZE_MAX - local)
        return mcl_ctx_set_error(be->ctx, MCL_ERR_UNSUPPORTED, "OpenCL: %s: %zu work-items is too many",
                                 what, n);
    size_t global = (n + local - 1) / local * local;
    return enqueue(be, k, global, local, what);
}

mcl_status mcl_ocl_run_groups(mcl_backend *be, cl_kernel k, size_t n_groups, size_t local,
                              const char *what)
{
    if (local && n_groups > SIZE_MAX / local)
        return mcl_ctx_set_error(be->ctx, MCL_ERR_UNSUPPORTED,
                                 "OpenCL: %s: %zu work-groups of %zu items is too many", what,
                                 n_groups, local);
    return enqueue(be, k, n_groups * local, local, what);
}

mcl_status mcl_ocl_launch(mcl_backend *be, cl_kernel k, int idx, int64_t n, const char *what)
{
    if (idx < 0) return mcl_ocl_recorded(be);
    return mcl_ocl_run1d(be, k, (size_t)n, 0, what);
}

mcl_status mcl_ocl_launch_groups(mcl_backend *be, cl_kernel k, int idx, size_t n_groups,
                                 size_t local, const char *what)
{
    if (idx < 0) return mcl_ocl_recorded(be);
    return mcl_ocl_run_groups(be, k, n_groups, local, what);
}

/* kname(t[0], .., t[nt-1], [*f,] n) over n = numel(t[nt-1]) work-items (f NULL: no float). */
static mcl_status launch_map(mcl_backend *be, const char *kname, const mcl_tensor *const *t,
                             int nt, const float *f, const char *what)
{
    char wb[160];
    const int64_t n = mcl_tensor_numel(t[nt - 1]);
    cl_kernel k = mcl_ocl_kernel(be, kname, NULL);
    int i = k ? 0 : -1;
    for (int j = 0; j < nt; j++) i = mcl_ocl_arg_tensor(be, k, i, t[j]);
    if (f) i = mcl_ocl_arg_float(be, k, i, *f);
    i = mcl_ocl_arg_long(be, k, i, n);
    if (!what) what = mcl_ocl_what_on(wb, sizeof wb, kname, t[nt - 1]);
    return mcl_ocl_launch(be, k, i, n, what);
}

mcl_status mcl_ocl_launch_unary(mcl_backend *be, const char *kname, const mcl_tensor *x,
                                const mcl_tensor *y, const char *what)
{
    const mcl_tensor *t[] = {x, y};
    return launch_map(be, kname, t, 2, NULL, what);
}

mcl_status mcl_ocl_launch_unary_f(mcl_backend *be, const char *kname, const mcl_tensor *x,
                                  const mcl_tensor *y, float f, const char *what)
{
    const mcl_tensor *t[] = {x, y};
    return launch_map(be, kname, t, 2, &f, what);
}

mcl_status mcl_ocl_launch_binary(mcl_backend *be, const char *kname, const mcl_tensor *x,
                                 const mcl_tensor *y, const mcl_tensor *z, const char *what)
{
    const mcl_tensor *t[] = {x, y, z};
    return launch_map(be, kname, t, 3, NULL, what);
}

const char *mcl_ocl_what_on(char *buf, size_t len, const char *kname, const mcl_tensor *t)
{
    char sb[64];
    snprintf(buf, len, "%s on %s", kname, mcl_shape_str(t, sb, sizeof sb));
    return buf;
}

const char *mcl_ocl_what_op(char *buf, size_t len, const char *op, const char *dir,
                            const char *kname, const char *tname, const mcl_tensor *t)
{
    char sb[64];
    snprintf(buf, len, "%s%s%s (kernel %s, %s %s)", op, dir ? " " : "", dir ? dir : "", kname,
             tname, mcl_shape_str(t, sb, sizeof sb));
    return buf;
}

/* ------------------------------------------------------------------ program */

/* 64-bit FNV-1a, continued from h. */
static uint64_t fnv1a(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

/* A kernel source or a program-cache entry: a regular file (a FIFO would block, a device
 * read without end) of at most MAX_READ bytes, else NULL. */
#define MAX_READ ((uint64_t)256 << 20)
static char *read_file(const char *path, size_t *len)
{
    FILE *f = NULL;
    uint64_t size = 0;
    if (mcl_fopen_regular(path, &f, &size, NULL, 0) != MCL_OK) return NULL;
    if (size > MAX_READ) {
        fclose(f);
        return NULL;
    }
    char *buf = malloc((size_t)size + 1);
    size_t n = buf ? fread(buf, 1, (size_t)size + 1, f) : 0;
    int bad = !buf || ferror(f) || n != (size_t)size; /* it changed while being read */
    fclose(f);
    if (bad) {
        free(buf);
        return NULL;
    }
    buf[n] = '\0';
    if (len) *len = n;
    return buf;
}

/* The program source: every kernel file in order, embedded or from METACL_KERNEL_DIR. */
static char *program_source(mcl_backend *be)
{
    const char *dir = getenv("METACL_KERNEL_DIR");
    size_t total = 1;
    char **parts = calloc((size_t)mcl_kernel_count, sizeof *parts);
    if (!parts) return NULL;
    for (int i = 0; i < mcl_kernel_count; i++) {
        if (dir && *dir) {
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", dir, mcl_kernel_names[i]);
            parts[i] = read_file(path, NULL);
            if (!parts[i]) {
                mcl_ctx_set_error(be->ctx, MCL_ERR_IO, "OpenCL: cannot read kernel file %s (%s)", path,
                                  strerror(errno));
                for (int j = 0; j < i; j++) free(parts[j]);
                free(parts);
                return NULL;
            }
        } else {
            parts[i] = strdup(mcl_kernel_sources[i]);
        }
        total += (parts[i] ? strlen(parts[i]) : 0) + 128;
    }
    static const char prefix[] =
        "/* metacl: no FP contraction, like the reference built with -ffp-contract=off */\n"
        "#pragma OPENCL FP_CONTRACT OFF\n";
    total += sizeof prefix;
    char *src = malloc(total);
    size_t n = 0;
    if (src) n += (size_t)snprintf(src, total, "%s", prefix);
    for (int i = 0; i < mcl_kernel_count; i++) {
        if (src && parts[i])
            n += (size_t)snprintf(src + n, total - n, "\n/* ---- %s ---- */\n%s\n", mcl_kernel_names[i],
                                  parts[i]);
        free(parts[i]);
    }
    free(parts);
    if (!src) mcl_ctx_set_error(be->ctx, MCL_ERR_OOM, "OpenCL: out of memory (program source)");
    return src;
}

static int cache_dir(char *out, size_t len)
{
    const char *x = getenv("XDG_CACHE_HOME");
    const char *home = getenv("HOME");
    if (x && *x)
        snprintf(out, len, "%s/metacl", x);
    else if (home && *home)
        snprintf(out, len, "%s/.cache/metacl", home);
    else
        return -1;
    /* mkdir -p of the last two components */
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s", out);
    for (char *p = tmp + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            mkdir(tmp, 0755);
            *p = '/';
        }
    if (mkdir(tmp, 0755) != 0 && errno != EEXIST) return -1;
    return 0;
}

static void put_u32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static uint32_t get_u32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Parse a cache file; returns a malloc'd binary when the key and CRC match. */
static unsigned char *cache_load(const char *path, const char *key, size_t *bin_len)
{
    size_t n;
    char *buf = read_file(path, &n);
    if (!buf) return NULL;
    const unsigned char *b = (const unsigned char *)buf;
    size_t klen = strlen(key);
    unsigned char *bin = NULL;
    if (n >= 8 + 4 + 8 + 4 && memcmp(b, "MCLPROG1", 8) == 0 && get_u32(b + 8) == klen &&
        n >= 12 + klen + 8 + 4 && memcmp(b + 12, key, klen) == 0) {
        const unsigned char *q = b + 12 + klen;
        uint64_t bl = (uint64_t)get_u32(q) | (uint64_t)get_u32(q + 4) << 32;
        if (bl > 0 && bl == n - (12 + klen + 8 + 4)) {
            uint32_t crc = (uint32_t)crc32(0L, b, (uInt)(n - 4));
            if (crc == get_u32(b + n - 4) && (bin = malloc(bl)) != NULL) {
                memcpy(bin, q + 8, bl);
                *bin_len = bl;
            }
        }
    }
    free(buf);
    return bin;
}

static void cache_store(const char *path, const char *key, const unsigned char *bin, size_t bin_len)
{
    size_t klen = strlen(key), n = 12 + klen + 8 + bin_len + 4;
    unsigned char *b = malloc(n);
    if (!b) return;
    memcpy(b, "MCLPROG1", 8);
    put_u32(b + 8, (uint32_t)klen);
    memcpy(b + 12, key, klen);
    put_u32(b + 12 + klen, (uint32_t)bin_len);
    put_u32(b + 16 + klen, (uint32_t)((uint64_t)bin_len >> 32));
    memcpy(b + 20 + klen, bin, bin_len);
    put_u32(b + n - 4, (uint32_t)crc32(0L, b, (uInt)(n - 4)));
    /* the cache is an optimization: failing to write it is not an error */
    (void)mcl_write_file_atomic(path, b, n, NULL, 0);
    free(b);
}

static mcl_status build_log_error(mcl_backend *be, cl_int err)
{
    mcl_ocl *o = mcl_ocl_of(be);
    size_t n = 0;
    clGetProgramBuildInfo(o->program, o->device, CL_PROGRAM_BUILD_LOG, 0, NULL, &n);
    char *log = malloc(n + 1);
    if (log) {
        log[0] = '\0';
        clGetProgramBuildInfo(o->program, o->device, CL_PROGRAM_BUILD_LOG, n, log, NULL);
        log[n] = '\0';
        fprintf(stderr, "metacl: OpenCL program build log (%s):\n%s\n", o->device_name, log);
    }
    mcl_ctx_set_error(be->ctx, MCL_ERR_BACKEND,
                      "OpenCL: building the kernels failed: %s on %s; build log: %.400s",
                      mcl_cl_status_str(err), o->device_name, log ? log : "(unavailable)");
    free(log);
    return MCL_ERR_BACKEND;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}


static mcl_status build_program(mcl_backend *be)
{
    mcl_ocl *o = mcl_ocl_of(be);
    double t0 = now_s();
    char *src = program_source(be);
    if (!src) return mcl_ctx_status(be->ctx);
    /* Correctly rounded float division and sqrt where the device offers them (the reference's
     * are IEEE-exact); no relaxed-math options ever. */
    cl_device_fp_config fp = 0;
    clGetDeviceInfo(o->device, CL_DEVICE_SINGLE_FP_CONFIG, sizeof fp, &fp, NULL);
    const char *build_options = (fp & CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT)
                                    ? BUILD_OPTIONS_BASE " -cl-fp32-correctly-rounded-divide-sqrt"
                                    : BUILD_OPTIONS_BASE;
    uint64_t sh = fnv1a(0xcbf29ce484222325ull, src, strlen(src));
    char key[1024];
    snprintf(key, sizeof key,
             "source-fnv1a=%016llx;options=%s;platform=%s;platform-version=%s;device=%s;driver=%s",
             (unsigned long long)sh, build_options, o->platform_name, o->platform_version, o->device_name,
             o->driver_version);
    uint64_t kh = fnv1a(0xcbf29ce484222325ull, key, strlen(key));
    char dir[4000], path[4100];
    const char *nc = getenv("METACL_NO_CACHE");
    int use_cache = !(nc && *nc && strcmp(nc, "0") != 0) && cache_dir(dir, sizeof dir) == 0;
    cl_int err = CL_SUCCESS;
    o->from_cache = 0;
    if (use_cache) {
        snprintf(path, sizeof path, "%s/program-%016llx.bin", dir, (unsigned long long)kh);
        size_t bl = 0;
        unsigned char *bin = cache_load(path, key, &bl);
        if (bin) {
            const unsigned char *bp = bin;
            cl_int bstat;
            o->program = clCreateProgramWithBinary(o->context, 1, &o->device, &bl, &bp, &bstat, &err);
            if (err == CL_SUCCESS && bstat == CL_SUCCESS &&
                clBuildProgram(o->program, 1, &o->device, build_options, NULL, NULL) == CL_SUCCESS) {
                o->from_cache = 1;
            } else if (o->program) {
                clReleaseProgram(o->program); /* stale or unusable: rebuild below */
                o->program = NULL;
            }
            free(bin);
        }
    }
    if (!o->from_cache) {
        if (use_cache)
            mcl_notice("compiling the OpenCL kernels for %s (once: the program is then cached in %s)",
                       o->device_name, dir);
        else
            mcl_notice("compiling the OpenCL kernels for %s (not cached)", o->device_name);
        const char *sp = src;
        o->program = clCreateProgramWithSource(o->context, 1, &sp, NULL, &err);
        if (err != CL_SUCCESS) {
            free(src);
            return mcl_ocl_fail(be, err, "clCreateProgramWithSource");
        }
        err = clBuildProgram(o->program, 1, &o->device, build_options, NULL, NULL);
        if (err != CL_SUCCESS) {
            free(src);
            return build_log_error(be, err);
        }
        if (use_cache) {
            size_t bl = 0;
            if (clGetProgramInfo(o->program, CL_PROGRAM_BINARY_SIZES, sizeof bl, &bl, NULL) == CL_SUCCESS &&
                bl > 0) {
                unsigned char *bin = malloc(bl);
                if (bin && clGetProgramInfo(o->program, CL_PROGRAM_BINARIES, sizeof bin, &bin, NULL) ==
                               CL_SUCCESS)
                    cache_store(path, key, bin, bl);
                free(bin);
            }
        }
    }
    free(src);
    o->build_seconds = now_s() - t0;
    return MCL_OK;
}

/* ------------------------------------------------------------------ device choice */

/* want: an index into the listing (devices.c), a name substring, or NULL/"" for the default:
 * the first GPU of any platform, else the first accelerator, else the first CPU device. */
static mcl_status pick_device(mcl_backend *be, const char *want)
{
    mcl_ocl *o = mcl_ocl_of(be);
    const char *cache = mcl_opencl_cache_check(); /* before PoCL loads: it needs its cache */
    mcl_ocl_listing *L = malloc(sizeof *L);
    if (!L || mcl_ocl_list(L) != MCL_OK) {
        free(L);
        return mcl_ctx_set_error(be->ctx, MCL_ERR_OOM, "OpenCL: out of memory (device listing)");
    }
    mcl_status s = MCL_OK;
    const char *none = L->err == CL_SUCCESS ? "0 platforms" : mcl_cl_status_str(L->err);
    /* the platforms whose clGetDeviceIDs failed, for the messages below */
    char broken[600] = "";
    size_t bw = 0;
    for (int p = 0; p < L->n_platforms && bw < sizeof broken; p++)
        if (L->plat[p].err != CL_SUCCESS && L->plat[p].err != CL_DEVICE_NOT_FOUND)
            bw += (size_t)snprintf(broken + bw, sizeof broken - bw, "%s platform '%s': clGetDeviceIDs "
                                   "failed with %s", bw ? ";" : "; ignored", L->plat[p].name,
                                   mcl_cl_status_str(L->plat[p].err));
    if ((L->err != CL_SUCCESS || L->n_platforms == 0) && cache)
        s = mcl_ctx_set_error(be->ctx, MCL_ERR_UNSUPPORTED, "OpenCL: no OpenCL platform found (%s); %s",
                              none, cache);
    else if (L->err != CL_SUCCESS || L->n_platforms == 0)
        s = mcl_ctx_set_error(be->ctx, MCL_ERR_UNSUPPORTED,
                              "OpenCL: no OpenCL platform found (%s); install a driver, e.g. the "
                              "Debian package pocl-opencl-icd for the CPU", none);
    else if (L->n_devices == 0 && cache)
        s = mcl_ctx_set_error(be->ctx, MCL_ERR_UNSUPPORTED,
                              "OpenCL: the platforms report no devices%s; %s", broken, cache);
    else if (L->n_devices == 0)
        s = mcl_ctx_set_error(be->ctx, MCL_ERR_UNSUPPORTED,
                              "OpenCL: the platforms report no devices%s; install a driver, e.g. "
                              "pocl-opencl-icd", broken);
    if (s != MCL_OK) {
        free(L);
        return s;
    }
    const int idx = mcl_ocl_listing_find(L, want);
    if (idx < 0) {
        s = mcl_ctx_set_error(be->ctx, MCL_ERR_INVALID,
                              "OpenCL: no device matches '%s' (%d devices; see `metacl devices`)",
                              want, L->n_devices);
        free(L);
        return s;
    }
    o->index = idx;
    o->platform = L->dev[idx].platform;
    o->device = L->dev[idx].id;
    o->type = L->dev[idx].type;
    snprintf(o->platform_name, sizeof o->platform_name, "%s", L->plat[L->dev[idx].plat].name);
    snprintf(o->device_name, sizeof o->device_name, "%s", L->dev[idx].name);
    free(L);
    return MCL_OK;
}

/* ------------------------------------------------------------------ test hook */

#ifdef MCL_TEST_HOOKS
/* METACL_TEST_BREAK=<op> (configure --enable-test-hooks only): perturb one element of that
 * op's output after every forward/backward, to prove the differential runner can fail. */
static mcl_status break_hook(mcl_backend *be, const mcl_op_args *a, int backward)
{
    mcl_ocl *o = mcl_ocl_of(be);
    if ((int)a->op != o->break_op) return MCL_OK;
    const mcl_op_info *info = &mcl_op_table[a->op];
    mcl_tensor *t = NULL;
    if (backward) {
        for (int k = 0; k < info->n_in && !t; k++) t = a->gin[k];
    } else {
        t = info->n_out > 0 ? a->out[0] : a->in[0];
    }
    if (!t) return MCL_OK;
    float v;
    size_t off = (size_t)t->offset * sizeof(float);
    mcl_status s = be->buf_read(be, t->buf->handle, off, &v, sizeof v);
    if (s != MCL_OK) return s;
    v += 1e-2f + 1e-2f * (v < 0 ? -v : v);
    return be->buf_write(be, t->buf->handle, off, &v, sizeof v);
}
#endif

/* ------------------------------------------------------------------ life cycle */

static const mcl_op_impl ocl_impl[MCL_OP_COUNT] = {
#define MCL_OP(ID, name, n_in, n_out, n_diff_out, family, overwrites, has_bwd) \
    [MCL_OP_##ID] = {mcl_ocl_##name##_fwd, MCL_BWD_OR_NULL_##has_bwd(mcl_ocl_##name##_bwd)},
#include "ops.def"
#undef MCL_OP
};

/* Backward host code that calls mcl_ocl_grad_fresh on each gin before writing it. An op whose
 * host code asks but is missing here has every gradient zero-filled first (the answer is then
 * "not fresh"): correct but slower, so with METACL_DEBUG_POISON (every test) ocl_bwd fails
 * such a call with a message naming the op. */
static const unsigned char bwd_fresh_aware[MCL_OP_COUNT] = {
    [MCL_OP_ADD] = 1,        [MCL_OP_BIAS_ADD] = 1, [MCL_OP_COPY] = 1,    [MCL_OP_RESHAPE] = 1,
    [MCL_OP_MATMUL] = 1,     [MCL_OP_RELU] = 1,     [MCL_OP_LEAKY_RELU] = 1,
    [MCL_OP_ELU] = 1,        [MCL_OP_SIGMOID] = 1,  [MCL_OP_TANH] = 1,    [MCL_OP_GELU] = 1,
    [MCL_OP_EXP] = 1,        [MCL_OP_LOG] = 1,      [MCL_OP_BIAS_GELU] = 1,
    [MCL_OP_BIAS_ADD2] = 1,  [MCL_OP_BIAS_DROPOUT_RELU] = 1,
    [MCL_OP_BIAS_ADD_DROPOUT] = 1, [MCL_OP_INORM_RELU] = 1, [MCL_OP_INORM_ADD_POOL_RELU] = 1,
    [MCL_OP_ADD_DROPOUT] = 1,
};

_Thread_local int mcl_ocl_unlisted_bwd, mcl_ocl_unlisted_asked; /* ocl.h */
/* METACL_TEST_UNLIST (bufpool.h): read when a backend is created */
static mcl_op test_unlisted = MCL_OP_COUNT;

/* "softmax backward (inputs [13,7])": an op call for messages. */
static const char *describe_op(char *buf, size_t len, const mcl_op_args *a, int backward)
{
    const mcl_op_info *info = &mcl_op_table[a->op];
    size_t n = (size_t)snprintf(buf, len, "%s %s (input%s", info->name,
                                backward ? "backward" : "forward", info->n_in == 1 ? "" : "s");
    for (int k = 0; k < info->n_in && n < len; k++) {
        char sb[64];
        n += (size_t)snprintf(buf + n, len - n, " %s", a->in[k] ? mcl_shape_str(a->in[k], sb, sizeof sb)
                                                             : "-");
    }
    if (n < len) snprintf(buf + n, len - n, ")");
    return buf;
}

/* After an op under METACL_SYNC=1: finish the queue, so a kernel fault surfaces here, at the
 * op that queued it, instead of at some later read. Any failure of the op or of the finish
 * is reported naming the op, its direction and its input shapes. */
static mcl_status sync_after(mcl_backend *be, const mcl_op_args *a, int backward, mcl_status s,
                             uint64_t seq)
{
    mcl_ocl *o = mcl_ocl_of(be);
    char op[300], prev[768];
    if (s == MCL_OK) {
        mcl_ocl_count_finish(be);
        cl_int err = planted_fault(o, clFinish(o->queue));
        if (err == CL_SUCCESS) mcl_ocl_stage_drained(o, 0);
        if (err == CL_SUCCESS) return MCL_OK;
        describe_op(op, sizeof op, a, backward);
        return mcl_ctx_set_error(
            be->ctx, err == CL_MEM_OBJECT_ALLOCATION_FAILURE ? MCL_ERR_OOM : MCL_ERR_BACKEND,
            "OpenCL: %s failed: METACL_SYNC=1 finished the queue after it and clFinish returned "
            "%s (%d) on %s%s", op, mcl_cl_status_str(err), (int)err, o->device_name,
            mcl_ocl_is_fault(err) ? ": a kernel of this op faulted (an out-of-bounds or misaligned "
                                    "access, or more registers or resources than the device has)"
                                  : "");
    }
    describe_op(op, sizeof op, a, backward);
    if (mcl_ctx_error_seq(be->ctx) == seq) /* the op said nothing */
        return mcl_ctx_set_error(be->ctx, s, "OpenCL: %s failed (METACL_SYNC=1)", op);
    snprintf(prev, sizeof prev, "%s", mcl_ctx_error(be->ctx));
    if (strstr(prev, op)) return s; /* already named */
    return mcl_ctx_set_error(be->ctx, s, "%s (in %s, METACL_SYNC=1)", prev, op);
}

/* Every op goes through these two: the lazy zeroing of buffers.c, then the op; with
 * METACL_SYNC=1 the queue is finished after it (sync_after). */
static mcl_status ocl_fwd(mcl_backend *be, const mcl_op_args *a)
{
    mcl_ocl *o = mcl_ocl_of(be);
    const uint64_t seq = mcl_ctx_error_seq(be->ctx);
    o->cur_op = (int)a->op, o->cur_bwd = 0;
    mcl_status s = mcl_ocl_prepare_fwd(be, a);
    if (s == MCL_OK) s = ocl_impl[a->op].fwd(be, a);
    o->cur_op = -1;
    return o->sync ? sync_after(be, a, 0, s, seq) : s;
}

static mcl_status ocl_bwd(mcl_backend *be, const mcl_op_args *a)
{
    mcl_ocl *o = mcl_ocl_of(be);
    const uint64_t seq = mcl_ctx_error_seq(be->ctx);
    o->cur_op = (int)a->op, o->cur_bwd = 1;
    const int listed = bwd_fresh_aware[a->op] && a->op != test_unlisted;
    mcl_ocl_unlisted_bwd = o->poison && !listed;
    mcl_ocl_unlisted_asked = 0;
    mcl_status s = mcl_ocl_prepare_bwd(be, a, listed);
    if (s == MCL_OK) s = ocl_impl[a->op].bwd(be, a);
    if (s == MCL_OK && mcl_ocl_unlisted_bwd && mcl_ocl_unlisted_asked)
        s = mcl_ctx_set_error(be->ctx, MCL_ERR_STATE,
                              "opencl backend: %s's backward asks whether its gradients are "
                              "fresh but is not in bwd_fresh_aware (src/opencl/backend.c)",
                              mcl_op_table[a->op].name);
    mcl_ocl_unlisted_bwd = 0;
    o->cur_op = -1;
    return o->sync ? sync_after(be, a, 1, s, seq) : s;
}

#ifdef MCL_TEST_HOOKS
/* METACL_TEST_FAULT: a blocking read reports a planted fault as a GPU reports a kernel
 * fault (buffers.c's read, wrapped). */
static mcl_status (*plain_read)(mcl_backend *, void *, size_t, void *, size_t);
static mcl_status faulting_read(mcl_backend *be, void *handle, size_t off, void *dst, size_t n)
{
    mcl_ocl *o = mcl_ocl_of(be);
    if (o->fault_pending) {
        o->fault_pending = 0;
        be->stats.blocking++, be->stats.blocking_reads++; /* the read that reports it */
        return mcl_ocl_fail(be, o->fault_code, "clEnqueueReadBuffer (a blocking read)");
    }
    return plain_read(be, handle, off, dst, n);
}
#endif

/* Tear down in dependency order, on success and on every error path alike. First the queue is
 * finished: PoCL compiles work-group functions and runs commands on its own threads, and a
 * context released (or a process exiting) under them crashes inside its compiler. Then
 * CLBlast's program cache, which holds programs of this context, is emptied; then kernels,
 * program, buffers, queue and context. */
static void ocl_destroy(mcl_backend *be)
{
    if (!be) return;
    mcl_ocl *o = mcl_ocl_of(be);
    if (o) {
        if (o->queue) clFinish(o->queue);
        mcl_ocl_stage_drained(o, 1); /* every queued write is done */
        if (o->context) mcl_ocl_clblast_teardown(o);
        for (int i = 0; i < o->n_kernels; i++) clReleaseKernel(o->kernels[i].k);
        free(o->kernels);
        o->kernels = NULL;
        o->n_kernels = 0;
        if (o->program) clReleaseProgram(o->program);
        o->program = NULL;
        if (o->scratch) clReleaseMemObject(o->scratch);
        o->scratch = NULL;
        mcl_ocl_buffers_release(o);
        if (o->queue) {
            clFinish(o->queue); /* the releases above may have queued work of their own */
            clReleaseCommandQueue(o->queue);
        }
        if (o->context) clReleaseContext(o->context);
        free(o);
    }
    free(be);
}

static const char *ocl_device_name(const mcl_backend *be)
{
    return mcl_ocl_of((mcl_backend *)be)->device_name;
}

mcl_status mcl_opencl_backend_create(mcl_ctx *ctx, const char *device, mcl_backend **out)
{
    *out = NULL;
    mcl_backend *be = calloc(1, sizeof *be);
    mcl_ocl *o = calloc(1, sizeof *o);
    if (!be || !o) {
        free(be);
        free(o);
        return mcl_ctx_set_error(ctx, MCL_ERR_OOM, "OpenCL: out of memory");
    }
    be->kind = MCL_BACKEND_OPENCL;
    be->name = "opencl";
    be->device_name = ocl_device_name;
    be->ctx = ctx;
    be->impl = o;
    mcl_ocl_buffers_install(be);
    be->finish = ocl_finish;
    be->destroy = ocl_destroy;
    for (int op = 0; op < MCL_OP_COUNT; op++) {
        o->ops[op].fwd = ocl_fwd;
        o->ops[op].bwd = ocl_impl[op].bwd ? ocl_bwd : NULL;
    }
    be->ops = o->ops;
    o->break_op = -1;
    o->last_entry = -1;
    o->fault_op = -1;
    o->cur_op = -1;
    const char *sy = getenv("METACL_SYNC");
    o->sync = sy && *sy && strcmp(sy, "0") != 0;
    if (!device || !*device) device = getenv("METACL_DEVICE");
    mcl_status s = pick_device(be, device);
    if (s != MCL_OK) goto fail;
    clGetDeviceInfo(o->device, CL_DRIVER_VERSION, sizeof o->driver_version, o->driver_version, NULL);
    clGetPlatformInfo(o->platform, CL_PLATFORM_VERSION, sizeof o->platform_version,
                      o->platform_version, NULL);
    clGetDeviceInfo(o->device, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof o->max_wg, &o->max_wg, NULL);
    if (o->max_wg == 0) o->max_wg = 1;
    cl_uint dims = 0;
    clGetDeviceInfo(o->device, CL_DEVICE_MAX_WORK_ITEM_DIMENSIONS, sizeof dims, &dims, NULL);
    size_t items[16] = {0};
    if (dims < 1 || dims > 16 ||
        clGetDeviceInfo(o->device, CL_DEVICE_MAX_WORK_ITEM_SIZES, dims * sizeof(size_t), items,
                        NULL) != CL_SUCCESS)
        items[0] = items[1] = items[2] = o->max_wg;
    for (int d = 0; d < 3; d++) o->max_item[d] = items[d] ? items[d] : 1;
    cl_ulong lm = 0, ma = 0;
    cl_uint align = 0;
    clGetDeviceInfo(o->device, CL_DEVICE_LOCAL_MEM_SIZE, sizeof lm, &lm, NULL);
    clGetDeviceInfo(o->device, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof ma, &ma, NULL);
    clGetDeviceInfo(o->device, CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof align, &align, NULL);
    o->local_mem = (size_t)lm;
    o->max_alloc = (size_t)ma;
    o->base_align = align;
    /* the bias gradients' one-launch limit (mcl_ocl_bias_one_launch, ocl.h) */
    o->bias_one_chunks = (o->type & CL_DEVICE_TYPE_CPU) ? MCL_OCL_BIAS_ONE_CHUNKS : 1;
    const char *boc = getenv("METACL_OCL_BIAS_ONE_CHUNKS");
    if (boc && *boc) {
        char *end;
        const long v = strtol(boc, &end, 10);
        if (end == boc || *end != '\0' || v < 1 || v > 1000000) {
            s = mcl_ctx_set_error(ctx, MCL_ERR_INVALID,
                                  "METACL_OCL_BIAS_ONE_CHUNKS must be a whole number from 1 to "
                                  "1000000 (chunks of %d rows), not '%s'", MCL_OCL_BIAS_ROWS, boc);
            goto fail;
        }
        o->bias_one_chunks = (int)v;
    }
    /* Kernels read buffers as float2/float4/long vectors from their start (the scratch
     * buffer's pairs, the vector loads of bias_add): buffers must start 16-byte aligned. The
     * spec's minimum (long16, 1024 bits) is far above; a device below it is refused. Views
     * are (buffer, element offset) pairs, never sub-buffers, so no offset alignment applies. */
    if (align != 0 && align < 128) {
        s = mcl_ctx_set_error(ctx, MCL_ERR_UNSUPPORTED,
                              "OpenCL: %s aligns buffers to %u bits (CL_DEVICE_MEM_BASE_ADDR_ALIGN); "
                              "the kernels need 128 (float4)", o->device_name, align);
        goto fail;
    }
    cl_int err;
    o->context = clCreateContext(NULL, 1, &o->device, NULL, NULL, &err);
    if (err != CL_SUCCESS) {
        s = mcl_ocl_fail(be, err, "clCreateContext");
        goto fail;
    }
    o->queue = clCreateCommandQueue(o->context, o->device, 0, &err);
    if (err != CL_SUCCESS) {
        s = mcl_ocl_fail(be, err, "clCreateCommandQueue");
        goto fail;
    }
    if ((s = build_program(be)) != MCL_OK) goto fail;
    mcl_ocl_clblast_setup(o);
    test_unlisted = mcl_pool_test_unlisted("opencl");
#ifdef MCL_TEST_HOOKS
    const char *brk = getenv("METACL_TEST_BREAK");
    if (brk && *brk) {
        mcl_op op = mcl_op_by_name(brk);
        if (op == MCL_OP_COUNT) {
            s = mcl_ctx_set_error(ctx, MCL_ERR_INVALID, "METACL_TEST_BREAK=%s names no op", brk);
            goto fail;
        }
        o->break_op = (int)op;
        be->post_op = break_hook;
    }
    /* METACL_TEST_FAULT=<op>[:backward][@CODE]: the kernels that op launches (in that
     * direction) "fault": the next blocking call (a finish or a read) reports
     * CL_OUT_OF_RESOURCES, or the OpenCL status CODE (NVIDIA: -36 at a finish, -9999), as a GPU
     * reports a kernel that read out of bounds. */
    const char *flt = getenv("METACL_TEST_FAULT");
    if (flt && *flt) {
        char name[64];
        snprintf(name, sizeof name, "%s", flt);
        o->fault_code = CL_OUT_OF_RESOURCES;
        char *at = strchr(name, '@');
        if (at) {
            char *end;
            long code = strtol(at + 1, &end, 10);
            if (end == at + 1 || *end || !mcl_ocl_is_fault((cl_int)code)) {
                s = mcl_ctx_set_error(ctx, MCL_ERR_INVALID,
                                      "METACL_TEST_FAULT=%s: @CODE must be a fault status (-5, -36, "
                                      "-9999)", flt);
                goto fail;
            }
            o->fault_code = (cl_int)code;
            *at = '\0';
        }
        char *colon = strchr(name, ':');
        o->fault_bwd = colon && strcmp(colon + 1, "backward") == 0;
        if (colon) *colon = '\0';
        mcl_op op = mcl_op_by_name(name);
        if (op == MCL_OP_COUNT || (colon && !o->fault_bwd && strcmp(colon + 1, "forward") != 0)) {
            s = mcl_ctx_set_error(ctx, MCL_ERR_INVALID,
                                  "METACL_TEST_FAULT=%s: expected <op>, <op>:forward or <op>:backward",
                                  flt);
            goto fail;
        }
        o->fault_op = (int)op;
        plain_read = be->buf_read;
        be->buf_read = faulting_read;
    }
#endif
    *out = be;
    return MCL_OK;
fail:
    ocl_destroy(be);
    return s;
}

/* Facts for `metacl devices`/benchmarks about a context's device. */
const char *mcl_opencl_device_name(const mcl_ctx *ctx)
{
    if (!ctx || ctx->be->kind != MCL_BACKEND_OPENCL) return NULL;
    return mcl_ocl_of(ctx->be)->device_name;
}

int mcl_opencl_device_info(const mcl_ctx *ctx, mcl_opencl_info *info)
{
    memset(info, 0, sizeof *info);
    if (!ctx || ctx->be->kind != MCL_BACKEND_OPENCL) return -1;
    const mcl_ocl *o = mcl_ocl_of(ctx->be);
    info->index = o->index;
    info->device = o->device_name;
    info->platform = o->platform_name;
    info->driver = o->driver_version;
    mcl_ocl_type_str(o->type, info->type, sizeof info->type);
    info->max_work_group = o->max_wg;
    info->local_mem = o->local_mem;
    info->sync = o->sync;
    return 0;
}

double mcl_opencl_build_seconds(const mcl_ctx *ctx, int *from_cache)
{
    if (!ctx || ctx->be->kind != MCL_BACKEND_OPENCL) return -1.0;
    if (from_cache) *from_cache = mcl_ocl_of(ctx->be)->from_cache;
    return mcl_ocl_of(ctx->be)->build_seconds;
}
