/* buffers.c — the OpenCL backend's buffers: a pool of device buffers with lazy zeroing.
 *
 * Same policy as the reference backend's pool (src/ref/ref_backend.c), for the same reason
 * measured on PoCL: a training step allocates the same op results and gradients every time,
 * and a new cl_mem costs a host allocation, page faults on first touch and a zero fill
 * (the fill_f32 kernel) — on PoCL that was 2.4–5 ms of a 9 ms MLP step.
 *
 * Pool. A buffer handle is an mcl_ocl_block (ocl.h) owning one cl_mem of `cap` bytes, the
 * capacity of its size class (mcl_pool_size_class, bufpool.h). Freed blocks go on the free
 * list of their class and are handed out again; the pool keeps at most as many bytes as were
 * ever live at once; the rest is released, and all of them are when the device refuses a new
 * allocation (then it is tried once more). Reuse is safe while queued kernels still use the
 * old contents: the queue is in order, so the new owner's commands run after them.
 *
 * Lazy zeroing. A new buffer must read as zeros (backend.h). It is only marked fresh and
 * zero-filled on the device (materialized) the first time anything could read it or write
 * part of it:
 *   - buf_read of a fresh buffer returns zeros without touching the device; buf_write, fill
 *     and copy covering the whole buffer just clear the mark (a fill with +0.0 or a copy of
 *     a fresh buffer sets it), partial ones materialize first;
 *   - before a forward op (mcl_ocl_prepare_fwd): fresh inputs are materialized; a fresh
 *     output the op stores whole (mcl_op_fwd_overwrites) is left unfilled;
 *   - before a backward op (mcl_ocl_prepare_bwd): inputs, outputs and gout are
 *     materialized; so are the gin, unless the op's host code asks mcl_ocl_grad_fresh
 *     itself (then it stores instead of accumulating).
 * A fresh buffer behaves exactly like a zero-filled one; no result changes.
 * METACL_DEBUG_POISON=1 fills an output left unfilled with NaN first (bufpool.h).
 *
 * Writes do not wait. The host's bytes are copied into staging memory (chunks of host
 * memory owned by the backend) and the write is queued non-blocking from there, so the
 * caller's array may go at once and the host runs ahead of the device (an upload of an
 * episode's images no longer stalls the step). The staging memory of queued writes is
 * recycled when the queue is next known drained: after a finish or a blocking read (the
 * queue is in order: when one returns, every write queued before it is done); when more
 * than STAGE_MAX bytes are pending, the write finishes the queue first. A write of more than
 * STAGE_BIG bytes (a data set, not a step's batch) is not copied: it waits instead. Reads block, except
 * buf_read_async (the harness's metrics: several reads queued, then one finish).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bufpool.h"
#include "ocl.h"

/* Handles are blocks. */
static mcl_ocl_block *block_of(void *handle) { return (mcl_ocl_block *)handle; }

/* Fill nbytes at byte offset off of mem (both whole floats) with v: the fill_f32 kernel
 * (kernels/elementwise.cl says why not clEnqueueFillBuffer). */
static mcl_status fill_mem(mcl_backend *be, cl_mem mem, size_t off, size_t nbytes, float v,
                           const char *what)
{
    const int64_t n = (int64_t)(nbytes / sizeof(float));
    if (n == 0) return MCL_OK;
    cl_kernel k = mcl_ocl_kernel(be, "fill_f32", NULL);
    int i = k ? mcl_ocl_arg_mem(be, k, 0, mem) : -1;
    i = mcl_ocl_arg_long(be, k, i, (int64_t)(off / sizeof(float)));
    i = mcl_ocl_arg_float(be, k, i, v);
    i = mcl_ocl_arg_long(be, k, i, n);
    return mcl_ocl_launch(be, k, i, n, what);
}

/* Fill [0, b->pb.size) of the block with the float v (rounded down to whole floats). */
static mcl_status fill_device(mcl_backend *be, mcl_ocl_block *b, float v, const char *what)
{
    return fill_mem(be, b->mem, 0, b->pb.size, v, what);
}

/* Write the zeros a fresh block stands for. */
static mcl_status materialize(mcl_backend *be, mcl_ocl_block *b)
{
    if (!b->pb.fresh) return MCL_OK;
    b->pb.fresh = 0;
    return fill_device(be, b, 0.0f, "zero-filling a new buffer");
}

static mcl_status ocl_alloc(mcl_backend *be, size_t nbytes, void **handle)
{
    mcl_ocl *o = mcl_ocl_of(be);
    size_t cap;
    int cls;
    mcl_ocl_block *b = (mcl_ocl_block *)mcl_pool_take(&o->pool, nbytes ? nbytes : sizeof(float),
                                                      &cls, &cap);
    if (!b) {
        if (cap > o->max_alloc && nbytes <= o->max_alloc) { /* fits only unrounded: not pooled */
            cap = (nbytes ? nbytes : sizeof(float));
            cls = MCL_POOL_CLASSES;
        }
        if (cap > o->max_alloc)
            return mcl_ctx_set_error(be->ctx, MCL_ERR_OOM,
                                     "OpenCL: %zu bytes exceed the device's largest allocation (%zu) on %s",
                                     nbytes, o->max_alloc, o->device_name);
        b = calloc(1, sizeof *b);
        if (!b) return mcl_ctx_set_error(be->ctx, MCL_ERR_OOM, "OpenCL: out of host memory");
        cl_int err;
        b->mem = clCreateBuffer(o->context, CL_MEM_READ_WRITE, cap, NULL, &err);
        if ((err == CL_MEM_OBJECT_ALLOCATION_FAILURE || err == CL_OUT_OF_RESOURCES) &&
            o->pool.pooled) {
            /* the device may be full of pooled blocks of other sizes: give them back, retry */
            mcl_ocl_count_finish(be);
            if (clFinish(o->queue) == CL_SUCCESS) mcl_ocl_stage_drained(o, 0);
            mcl_ocl_buffers_release(o);
            b->mem = clCreateBuffer(o->context, CL_MEM_READ_WRITE, cap, NULL, &err);
        }
        if (err != CL_SUCCESS) {
            free(b);
            return mcl_ocl_fail_alloc(be, err, "clCreateBuffer");
        }
        b->pb.cap = cap;
        b->pb.cls = cls;
    }
    mcl_pool_hand_out(&o->pool, &b->pb, nbytes);
    *handle = b;
    return MCL_OK;
}

static void release_block(mcl_ocl_block *b)
{
    clReleaseMemObject(b->mem); /* freed by OpenCL once queued work is done */
    free(b);
}

static void ocl_free(mcl_backend *be, void *handle)
{
    if (!handle) return;
    mcl_ocl_block *b = block_of(handle);
    if (!mcl_pool_give_back(&mcl_ocl_of(be)->pool, &b->pb)) release_block(b);
}

/* [off, off + n) is the whole of the buffer. */
static int covers(const mcl_ocl_block *b, size_t off, size_t n) { return off == 0 && n >= b->pb.size; }

/* Before writing [off, off + n): a whole write clears the mark, a partial one materializes. */
static mcl_status before_write(mcl_backend *be, mcl_ocl_block *b, size_t off, size_t n)
{
    if (covers(b, off, n)) {
        b->pb.fresh = 0;
        return MCL_OK;
    }
    return materialize(be, b);
}

/* Oclgrind 21.10's uninitialised-value checker mistracks host commands that store into a
 * buffer (clEnqueueWriteBuffer, clEnqueueCopyBuffer, clEnqueueFillBuffer): a store that is not
 * the whole buffer leaves the buffer's other bytes, and a store at a non-zero offset even its
 * own bytes, "uninitialised" for later kernels (tests/oclgrind/host-stores.c reproduces each
 * with one buffer and one kernel). On that platform only, such stores go through the copy_fwd
 * kernel, which it tracks; every other device gets the plain commands. */
static int kernel_stores(const mcl_ocl *o) { return strcmp(o->platform_name, "Oclgrind") == 0; }

/* copy_fwd: n bytes (whole floats) from src at soff to dst at doff, as one kernel. */
static mcl_status copy_kernel(mcl_backend *be, cl_mem src, size_t soff, cl_mem dst, size_t doff,
                              size_t n)
{
    const int64_t count = (int64_t)(n / sizeof(float));
    cl_kernel k = mcl_ocl_kernel(be, "copy_fwd", NULL);
    int i = k ? mcl_ocl_arg_mem(be, k, 0, src) : -1;
    i = mcl_ocl_arg_long(be, k, i, (int64_t)(soff / sizeof(float)));
    i = mcl_ocl_arg_mem(be, k, i, dst);
    i = mcl_ocl_arg_long(be, k, i, (int64_t)(doff / sizeof(float)));
    i = mcl_ocl_arg_long(be, k, i, count);
    return mcl_ocl_launch(be, k, i, count, "copying a buffer");
}

/* Can [soff, soff + n) -> [doff, doff + n) go through copy_kernel? */
static int whole_floats(size_t soff, size_t doff, size_t n)
{
    return soff % sizeof(float) == 0 && doff % sizeof(float) == 0 && n % sizeof(float) == 0;
}

#define STAGE_CHUNK ((size_t)1 << 20)   /* the smallest staging chunk             */
#define STAGE_MAX ((size_t)256 << 20)    /* pending bytes that force a finish first */
#define STAGE_BIG ((size_t)64 << 20)     /* larger writes are not staged: they wait */

/* Host memory for n bytes of a queued write: the rest of the last chunk, or a new chunk.
 * NULL when out of host memory (the caller then writes blocking). */
static void *stage_take(mcl_ocl *o, size_t n)
{
    n = (n + 63) & ~(size_t)63; /* each write's bytes 64-byte aligned */
    if (o->n_stage > 0 && o->stage_used + n <= o->stage_cap[o->n_stage - 1]) {
        void *p = o->stage[o->n_stage - 1] + o->stage_used;
        o->stage_used += n;
        o->stage_pending += n;
        return p;
    }
    if (o->n_stage == o->cap_stage) {
        int cap = o->cap_stage ? 2 * o->cap_stage : 8;
        char **s = realloc(o->stage, (size_t)cap * sizeof *s);
        if (!s) return NULL;
        o->stage = s;
        size_t *c = realloc(o->stage_cap, (size_t)cap * sizeof *c);
        if (!c) return NULL;
        o->stage_cap = c;
        o->cap_stage = cap;
    }
    const size_t cap = n > STAGE_CHUNK ? n : STAGE_CHUNK;
    char *p = malloc(cap);
    if (!p) return NULL;
    o->stage[o->n_stage] = p;
    o->stage_cap[o->n_stage++] = cap;
    o->stage_used = n;
    o->stage_pending += n;
    return p;
}

void mcl_ocl_stage_drained(mcl_ocl *o, int free_all)
{
    size_t total = 0;
    for (int i = 0; i < o->n_stage; i++) total += o->stage_cap[i];
    if (free_all || o->n_stage > 1) { /* one chunk of the size the last interval needed */
        for (int i = 0; i < o->n_stage; i++) free(o->stage[i]);
        o->n_stage = 0;
        char *p = free_all ? NULL : malloc(total);
        if (p) {
            o->stage[0] = p;
            o->stage_cap[0] = total;
            o->n_stage = 1;
        }
    }
    if (free_all) {
        free(o->stage);
        free(o->stage_cap);
        o->stage = NULL;
        o->stage_cap = NULL;
        o->cap_stage = 0;
    }
    o->stage_used = 0;
    o->stage_pending = 0;
}

static mcl_status ocl_write(mcl_backend *be, void *handle, size_t off, const void *src, size_t n)
{
    if (n == 0) return MCL_OK;
    mcl_ocl *o = mcl_ocl_of(be);
    mcl_ocl_block *b = block_of(handle);
    mcl_status s = before_write(be, b, off, n);
    if (s != MCL_OK) return s;
    if (kernel_stores(o) && !(off == 0 && n == b->pb.cap) && whole_floats(0, off, n)) {
        cl_int err;
        cl_mem t = clCreateBuffer(o->context, CL_MEM_READ_WRITE, n, NULL, &err);
        if (err != CL_SUCCESS) return mcl_ocl_fail_alloc(be, err, "clCreateBuffer (staging a write)");
        mcl_ocl_count_write(be, n, 1);
        err = clEnqueueWriteBuffer(o->queue, t, CL_TRUE, 0, n, src, 0, NULL, NULL);
        s = err == CL_SUCCESS ? copy_kernel(be, t, 0, b->mem, off, n)
                              : mcl_ocl_fail(be, err, "clEnqueueWriteBuffer");
        /* Oclgrind frees a released buffer at once, even with a queued kernel reading it */
        mcl_ocl_count_finish(be);
        cl_int ferr = clFinish(o->queue);
        clReleaseMemObject(t);
        return s == MCL_OK && ferr != CL_SUCCESS ? mcl_ocl_fail(be, ferr, "clFinish (staging a write)") : s;
    }
    if (o->stage_pending + n > STAGE_MAX && o->stage_pending > 0) {
        mcl_ocl_count_finish(be);
        cl_int err = clFinish(o->queue);
        if (err != CL_SUCCESS) return mcl_ocl_fail(be, err, "clFinish (before staging a write)");
        mcl_ocl_stage_drained(o, 0);
    }
    void *p = n <= STAGE_BIG ? stage_take(o, n) : NULL; /* a big write: no second copy */
    if (p) memcpy(p, src, n);
    mcl_ocl_count_write(be, n, p == NULL);
    cl_int err = clEnqueueWriteBuffer(o->queue, b->mem, p ? CL_FALSE : CL_TRUE, off, n,
                                      p ? p : src, 0, NULL, NULL);
    return err == CL_SUCCESS ? MCL_OK : mcl_ocl_fail(be, err, "clEnqueueWriteBuffer");
}

static mcl_status ocl_read(mcl_backend *be, void *handle, size_t off, void *dst, size_t n)
{
    if (n == 0) return MCL_OK;
    mcl_ocl_block *b = block_of(handle);
    if (b->pb.fresh) {
        memset(dst, 0, n);
        return MCL_OK;
    }
    mcl_ocl_count_read(be, n, 1);
    cl_int err = clEnqueueReadBuffer(mcl_ocl_of(be)->queue, b->mem, CL_TRUE, off, n, dst, 0, NULL,
                                     NULL);
    if (err != CL_SUCCESS) return mcl_ocl_fail(be, err, "clEnqueueReadBuffer");
    mcl_ocl_stage_drained(mcl_ocl_of(be), 0); /* in order: every earlier write is done */
    return MCL_OK;
}

static mcl_status ocl_read_async(mcl_backend *be, void *handle, size_t off, void *dst, size_t n)
{
    if (n == 0) return MCL_OK;
    mcl_ocl_block *b = block_of(handle);
    if (b->pb.fresh) {
        memset(dst, 0, n);
        return MCL_OK;
    }
    mcl_ocl_count_read(be, n, 0);
    cl_int err = clEnqueueReadBuffer(mcl_ocl_of(be)->queue, b->mem, CL_FALSE, off, n, dst, 0,
                                     NULL, NULL);
    return err == CL_SUCCESS ? MCL_OK : mcl_ocl_fail(be, err, "clEnqueueReadBuffer (non-blocking)");
}

static mcl_status ocl_fill(mcl_backend *be, void *handle, size_t off, float v, size_t count)
{
    if (count == 0) return MCL_OK;
    mcl_ocl_block *b = block_of(handle);
    const size_t n = count * sizeof(float);
    if (covers(b, off, n) && v == 0.0f && !signbit(v)) {
        b->pb.fresh = 1; /* +0.0 everywhere: exactly what a fresh buffer stands for */
        return MCL_OK;
    }
    mcl_status s = before_write(be, b, off, n);
    if (s != MCL_OK) return s;
    return fill_mem(be, b->mem, off, n, v, "filling a buffer");
}

static mcl_status ocl_copy(mcl_backend *be, void *dst, size_t doff, void *src, size_t soff, size_t n)
{
    if (n == 0) return MCL_OK;
    mcl_ocl_block *bd = block_of(dst), *bs = block_of(src);
    if (bd == bs && doff == soff) return MCL_OK;
    mcl_ocl *o = mcl_ocl_of(be);
    mcl_status s;
    if (bs->pb.fresh) { /* copying zeros */
        if (bd == bs) return MCL_OK;
        if (covers(bd, doff, n)) {
            bd->pb.fresh = 1;
            return MCL_OK;
        }
        if ((s = materialize(be, bd)) != MCL_OK) return s;
        return fill_mem(be, bd->mem, doff, n, 0.0f, "zero-filling a copy of a fresh buffer");
    }
    if ((s = before_write(be, bd, doff, n)) != MCL_OK) return s;
    const int by_kernel = kernel_stores(o) && whole_floats(soff, doff, n);
    cl_int err;
    if (bd == bs && (doff < soff + n && soff < doff + n)) {
        /* overlapping regions of one buffer: go through a temporary buffer */
        cl_mem t = clCreateBuffer(o->context, CL_MEM_READ_WRITE, n, NULL, &err);
        if (err != CL_SUCCESS) return mcl_ocl_fail_alloc(be, err, "clCreateBuffer (copy)");
        if (by_kernel) {
            s = copy_kernel(be, bs->mem, soff, t, 0, n);
            if (s == MCL_OK) s = copy_kernel(be, t, 0, bd->mem, doff, n);
            mcl_ocl_count_finish(be);
            clFinish(o->queue); /* see ocl_write */
            clReleaseMemObject(t);
            return s;
        }
        be->stats.enqueues += 2;
        err = clEnqueueCopyBuffer(o->queue, bs->mem, t, soff, 0, n, 0, NULL, NULL);
        if (err == CL_SUCCESS) err = clEnqueueCopyBuffer(o->queue, t, bd->mem, 0, doff, n, 0, NULL, NULL);
        clReleaseMemObject(t);
    } else {
        if (by_kernel) return copy_kernel(be, bs->mem, soff, bd->mem, doff, n);
        be->stats.enqueues++;
        err = clEnqueueCopyBuffer(o->queue, bs->mem, bd->mem, soff, doff, n, 0, NULL, NULL);
    }
    return err == CL_SUCCESS ? MCL_OK : mcl_ocl_fail(be, err, "clEnqueueCopyBuffer");
}

/* ---- the lazy zeroing around ops ---------------------------------------------------------- */

/* t is all of its buffer. */
static int whole(const mcl_tensor *t)
{
    return t->offset == 0 &&
           (size_t)mcl_tensor_numel(t) * sizeof(float) >= block_of(t->buf->handle)->pb.size;
}

static mcl_status materialize_t(mcl_backend *be, const mcl_tensor *t)
{
    return t ? materialize(be, block_of(t->buf->handle)) : MCL_OK;
}

mcl_status mcl_ocl_materialize(mcl_backend *be, const mcl_tensor *t)
{
    return materialize_t(be, t);
}

int mcl_ocl_grad_fresh(mcl_backend *be, const mcl_tensor *t, mcl_status *s)
{
    if (mcl_ocl_unlisted_bwd) mcl_ocl_unlisted_asked = 1;
    mcl_ocl_block *b = block_of(t->buf->handle);
    *s = MCL_OK;
    if (!b->pb.fresh) return 0;
    if (!whole(t)) {
        *s = materialize(be, b);
        return 0;
    }
    b->pb.fresh = 0; /* the caller now stores every element */
    if (mcl_ocl_of(be)->poison) {
        *s = fill_device(be, b, NAN, "poisoning a gradient");
        if (*s != MCL_OK) return 0;
    }
    return 1;
}

mcl_status mcl_ocl_prepare_fwd(mcl_backend *be, const mcl_op_args *a)
{
    const mcl_op_info *info = &mcl_op_table[a->op];
    mcl_status s = MCL_OK;
    for (int k = 0; k < info->n_in && s == MCL_OK; k++) s = materialize_t(be, a->in[k]);
    for (int k = 0; k < info->n_out && s == MCL_OK; k++) {
        mcl_ocl_block *b = block_of(a->out[k]->buf->handle);
        if (!b->pb.fresh) continue;
        if (mcl_op_fwd_overwrites(a->op) && whole(a->out[k])) {
            b->pb.fresh = 0;
            if (mcl_ocl_of(be)->poison) s = fill_device(be, b, NAN, "poisoning an output");
        } else {
            s = materialize(be, b);
        }
    }
    return s;
}

mcl_status mcl_ocl_prepare_bwd(mcl_backend *be, const mcl_op_args *a, int gin_fresh_aware)
{
    const mcl_op_info *info = &mcl_op_table[a->op];
    mcl_status s = MCL_OK;
    for (int k = 0; k < info->n_in && s == MCL_OK; k++) s = materialize_t(be, a->in[k]);
    for (int k = 0; k < info->n_out && s == MCL_OK; k++) s = materialize_t(be, a->out[k]);
    for (int k = 0; k < info->n_diff_out && s == MCL_OK; k++) s = materialize_t(be, a->gout[k]);
    if (!gin_fresh_aware)
        for (int k = 0; k < info->n_in && s == MCL_OK; k++) s = materialize_t(be, a->gin[k]);
    return s;
}

/* ---- set-up and tear-down ----------------------------------------------------------------- */

void mcl_ocl_buffers_install(mcl_backend *be)
{
    be->buf_alloc = ocl_alloc;
    be->buf_free = ocl_free;
    be->buf_write = ocl_write;
    be->buf_read = ocl_read;
    be->buf_read_async = ocl_read_async;
    be->buf_fill = ocl_fill;
    be->buf_copy = ocl_copy;
    mcl_ocl_of(be)->poison = mcl_pool_poison_requested();
}

void mcl_ocl_buffers_release(mcl_ocl *o)
{
    for (mcl_pool_block *b; (b = mcl_pool_pop(&o->pool)) != NULL;)
        release_block((mcl_ocl_block *)b);
}
