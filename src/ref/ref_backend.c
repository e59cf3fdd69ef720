/* ref_backend.c — the reference backend: host buffers and the op table.
 *
 * Buffers are 64-byte aligned float arrays on the host. The op table maps every op of
 * ops.def to mcl_ref_<name>_fwd / _bwd, implemented in src/ref/<family>.c, through two small
 * wrappers that keep the buffer bookkeeping below out of the kernels.
 *
 * Buffer pool. A training step allocates the same tensors (op results, then their
 * gradients) again and again, hundreds of MiB of them for a convolutional net; a fresh
 * aligned_alloc of a large block is a new mmap whose every page faults in the kernel when
 * first written (measured: about 1 GB/s, slower than the ops themselves). So freed buffers
 * are kept on free lists, one per size class (four classes per power of two, so a block is
 * at most 25% larger than asked for), and handed out again; the pool keeps at most twice as
 * many bytes as were ever live at once (REF_POOL_PEAKS), and ref_destroy returns everything to
 * the C library. Once was not enough: a training step's sizes are live at different moments,
 * so the pool, full of some classes, released blocks of others that the next step allocated
 * again (measured on the LM's training window: about 17 600 page faults, 70 MiB of fresh pages,
 * per step with one peak; none with two, and the same maximal resident size).
 *
 * Lazy zeroing. The backend contract (backend.h) is that a new buffer reads as zeros, and
 * the engine relies on it (gradient buffers are accumulated into, mcl_tensor_create promises
 * zeros). Writing those zeros costs a full pass over memory, yet most new buffers are op
 * results that the op overwrites entirely anyway. So a new buffer is only marked "fresh":
 * logically all zeros, its memory not yet written. It is zero-filled (materialized) the
 * first time anything might read it or write only a part of it:
 *   - buf_read of a fresh buffer returns zeros, buf_write/fill/copy materialize it unless
 *     they cover it whole;
 *   - before a forward op: fresh inputs are materialized; a fresh output that the op covers
 *     whole is just marked written when the op is known to write every element of it
 *     (mcl_op_fwd_overwrites, bufpool.h), else it is materialized;
 *   - before a backward op: inputs, outputs and gout are materialized; a fresh gin is left to
 *     the op when the op asks for itself (bwd_fresh_aware below, mcl_ref_grad_fresh in ref.h:
 *     it then stores 0 + value instead of accumulating), else it is materialized.
 * Views. A view into a fresh buffer (a parameter's slot of the optimizer's flat gradient, a
 * gradient that is a view of another's) does not materialize the whole buffer: a block of at
 * least SPANS_MIN bytes keeps the byte ranges written so far (fresh_spans.h) and stays fresh
 * outside them. A view that meets no written range may be stored whole by its op
 * (mcl_ref_grad_fresh); any other use of a view zero-fills just the view's unwritten parts;
 * a use of the whole buffer zero-fills all of them.
 * No result changes: a fresh buffer behaves exactly like a zero-filled one.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bufpool.h"
#include "fresh_spans.h"
#include "ref.h"
#include "threads.h"

/* ---- the buffer pool -------------------------------------------------------------------- */

/* Every block is [header | data]; the handle is the data, 64-byte aligned. */
#define HDR 64
/* The pool keeps at most this many times the bytes ever live at once (see the top). */
#define REF_POOL_PEAKS 2
/* Fresh buffers of at least this many bytes are zero-filled by all threads. */
#define ZERO_PAR_MIN ((size_t)1 << 20)

/* Blocks of at least this many bytes keep the ranges their views wrote while fresh. */
#define SPANS_MIN ((size_t)64 << 10)

/* A block's header: the pool's bookkeeping (bufpool.h: next, cap, size, cls, fresh) and, while
 * it is fresh but some views of it were written, those views' byte ranges (else NULL). */
typedef struct ref_block {
    mcl_pool_block pb;
    mcl_spans *written;
} ref_block;

_Static_assert(sizeof(ref_block) <= HDR, "block header must fit in HDR bytes");

/* The backend's private state (be->impl). */
typedef struct ref_pool {
    mcl_pool pool; /* free lists (bufpool.h)                  */
    int poison;    /* METACL_DEBUG_POISON: NaN-fill outputs claimed to be overwritten */
    mcl_op_impl ops[MCL_OP_COUNT]; /* be->ops: every op through ref_fwd / ref_bwd */
} ref_pool;

static ref_block *block_of(const void *handle)
{
    return (ref_block *)(void *)((char *)handle - HDR);
}

static ref_pool *pool_of(mcl_backend *be) { return (ref_pool *)be->impl; }

/* METACL_DEBUG_POISON: a backward that is not in bwd_fresh_aware is running on this thread,
 * and it asked mcl_ref_grad_fresh (ref_bwd reports that: its gradients were zero-filled for
 * nothing). Thread-local rather than in ref_pool: growing ref_pool by 8 bytes moved every later
 * heap object by 16 and slowed the WCST window at two threads by a fifth (doc/reference-backend.md,
 * "Fresh gradients"), a layout effect not yet explained. */
static _Thread_local int unlisted_bwd, unlisted_asked;
/* METACL_TEST_UNLIST (bufpool.h): read when a backend is created */
static mcl_op test_unlisted = MCL_OP_COUNT;

/* n zero bytes at p, by all threads when there are many */
static void zero_bytes(char *p, size_t n)
{
    if (n >= ZERO_PAR_MIN) {
        const int64_t nchunks = (int64_t)((n + ZERO_PAR_MIN - 1) / ZERO_PAR_MIN);
#pragma omp parallel for schedule(static)
        for (int64_t c = 0; c < nchunks; c++) {
            const size_t lo = (size_t)c * ZERO_PAR_MIN;
            memset(p + lo, 0, n - lo < ZERO_PAR_MIN ? n - lo : ZERO_PAR_MIN);
        }
    } else {
        memset(p, 0, n);
    }
}

static char *data_of(ref_block *b) { return (char *)b + HDR; }

/* The block now holds its values everywhere (or is fresh as a whole again): no ranges. */
static void set_fresh(ref_block *b, int fresh)
{
    mcl_spans_free(b->written);
    b->written = NULL;
    b->pb.fresh = fresh;
}

/* Write the zeros a fresh buffer stands for (all of them: outside its written ranges). */
static void materialize(ref_block *b)
{
    if (!b->pb.fresh) return;
    if (b->written)
        mcl_spans_zero_gaps(b->written, data_of(b), 0, b->pb.size, zero_bytes);
    else
        zero_bytes(data_of(b), b->pb.size);
    set_fresh(b, 0);
}

/* The block's list of written ranges, made when it has none (NULL when out of memory). */
static mcl_spans *spans_of(ref_block *b)
{
    if (!b->written) b->written = mcl_spans_create();
    return b->written;
}

/* The same for bytes [lo, hi) only, when the block keeps ranges (else all of it). */
static void materialize_range(ref_block *b, size_t lo, size_t hi)
{
    if (!b->pb.fresh) return;
    if (b->pb.size < SPANS_MIN || (lo == 0 && hi >= b->pb.size)) {
        materialize(b);
        return;
    }
    if (!spans_of(b) || !mcl_spans_zero_gaps(b->written, data_of(b), lo, hi, zero_bytes)) {
        materialize(b); /* out of memory for the list: all of it, as without one */
        return;
    }
    if (mcl_spans_covers(b->written, b->pb.size)) set_fresh(b, 0);
}

static mcl_status ref_alloc(mcl_backend *be, size_t nbytes, void **handle)
{
    ref_pool *pl = pool_of(be);
    size_t cap;
    int cls;
    ref_block *b = (ref_block *)mcl_pool_take(&pl->pool, nbytes, &cls, &cap);
    if (!b) {
        if (cap > SIZE_MAX - HDR) return MCL_ERR_OOM;
        b = aligned_alloc(64, HDR + cap);
        if (!b) return MCL_ERR_OOM;
        b->pb.cap = cap;
        b->pb.cls = cls;
        b->written = NULL;
    }
    mcl_pool_hand_out(&pl->pool, &b->pb, nbytes);
    *handle = (char *)b + HDR;
    return MCL_OK;
}

static void ref_free(mcl_backend *be, void *handle)
{
    if (!handle) return;
    ref_block *b = block_of(handle);
    set_fresh(b, 0);
    if (!mcl_pool_give_back(&pool_of(be)->pool, &b->pb)) free(b);
}

/* [off, off + n) is the whole of the buffer. */
static int covers(const ref_block *b, size_t off, size_t n)
{
    return off == 0 && n >= b->pb.size;
}

static mcl_status ref_write(mcl_backend *be, void *handle, size_t off, const void *src, size_t n)
{
    (void)be;
    ref_block *b = block_of(handle);
    if (covers(b, off, n))
        set_fresh(b, 0);
    else
        materialize_range(b, off, off + n);
    memcpy((char *)handle + off, src, n);
    return MCL_OK;
}

static mcl_status ref_read(mcl_backend *be, void *handle, size_t off, void *dst, size_t n)
{
    (void)be;
    ref_block *b = block_of(handle);
    if (b->written) materialize(b); /* partly written: its values where they are */
    if (b->pb.fresh)
        memset(dst, 0, n);
    else
        memcpy(dst, (const char *)handle + off, n);
    return MCL_OK;
}

static mcl_status ref_fill(mcl_backend *be, void *handle, size_t off, float v, size_t count)
{
    (void)be;
    ref_block *b = block_of(handle);
    if (covers(b, off, count * sizeof(float)) && v == 0.0f && !signbit(v)) {
        set_fresh(b, 1); /* +0.0 everywhere: exactly what a fresh buffer stands for */
        return MCL_OK;
    }
    if (covers(b, off, count * sizeof(float)))
        set_fresh(b, 0);
    else
        materialize_range(b, off, off + count * sizeof(float));
    float *p = (float *)(void *)((char *)handle + off);
    for (size_t i = 0; i < count; i++) p[i] = v;
    return MCL_OK;
}

static mcl_status ref_copy(mcl_backend *be, void *dst, size_t doff, void *src, size_t soff,
                           size_t n)
{
    (void)be;
    ref_block *bd = block_of(dst), *bs = block_of(src);
    if (bs->written) materialize(bs); /* partly written: its values where they are */
    if (bs->pb.fresh) { /* copying zeros */
        if (bd == bs) return MCL_OK;
        if (covers(bd, doff, n)) {
            set_fresh(bd, 1);
            return MCL_OK;
        }
        materialize_range(bd, doff, doff + n);
        memset((char *)dst + doff, 0, n);
        return MCL_OK;
    }
    if (covers(bd, doff, n))
        set_fresh(bd, 0);
    else
        materialize_range(bd, doff, doff + n);
    memmove((char *)dst + doff, (const char *)src + soff, n);
    return MCL_OK;
}

static mcl_status ref_finish(mcl_backend *be)
{
    (void)be;
    return MCL_OK;
}

static void ref_destroy(mcl_backend *be)
{
    if (!be) return;
    ref_pool *pl = pool_of(be);
    for (mcl_pool_block *b; pl && (b = mcl_pool_pop(&pl->pool)) != NULL;) free(b);
    free(pl);
    free(be);
}

/* ---- the op table ----------------------------------------------------------------------- */

static const mcl_op_impl ref_impl[MCL_OP_COUNT] = {
#define MCL_OP(ID, name, n_in, n_out, n_diff_out, family, overwrites, has_bwd) \
    [MCL_OP_##ID] = {mcl_ref_##name##_fwd, MCL_BWD_OR_NULL_##has_bwd(mcl_ref_##name##_bwd)},
#include "ops.def"
#undef MCL_OP
};

/* Backward ops that call mcl_ref_grad_fresh on each gin before writing it. An op whose
 * backward asks but is missing here gets every gradient zero-filled before it runs (the
 * answer is then always "not fresh"): correct but slower, so with METACL_DEBUG_POISON (every
 * test) ref_bwd fails such a call with a message naming the op. */
static const unsigned char bwd_fresh_aware[MCL_OP_COUNT] = {
    [MCL_OP_RELU] = 1,      [MCL_OP_DROPOUT] = 1,       [MCL_OP_CONV2D] = 1,
    [MCL_OP_ADD_DROPOUT] = 1,
    [MCL_OP_MAXPOOL2D] = 1, [MCL_OP_INSTANCE_NORM] = 1, [MCL_OP_INORM_POOL_RELU] = 1,
    [MCL_OP_CONV_INORM_POOL_RELU] = 1, [MCL_OP_INORM_RELU] = 1, [MCL_OP_INORM_ADD_POOL_RELU] = 1,
    [MCL_OP_CROSS_ENTROPY] = 1,
    [MCL_OP_ADD] = 1,       [MCL_OP_GELU] = 1,          [MCL_OP_BIAS_GELU] = 1,
    [MCL_OP_MATMUL] = 1,    [MCL_OP_LAYER_NORM] = 1,
    [MCL_OP_CONCAT] = 1,    [MCL_OP_SLICE] = 1,         [MCL_OP_RESHAPE] = 1,
    [MCL_OP_TRANSPOSE] = 1, [MCL_OP_PERMUTE] = 1,       [MCL_OP_REPEAT_BATCH] = 1,
    [MCL_OP_REPEAT_BATCH4] = 1, [MCL_OP_REL_ATTN] = 1,  [MCL_OP_SRWM] = 1,
};

static int64_t numel(const mcl_tensor *t)
{
    return mcl_ref_rows(t) * mcl_ref_cols(t);
}

/* t's bytes in its buffer: [*lo, *hi) */
static void byte_range(const mcl_tensor *t, size_t *lo, size_t *hi)
{
    *lo = (size_t)t->offset * sizeof(float);
    *hi = *lo + (size_t)numel(t) * sizeof(float);
}

/* t is all of its buffer. */
static int whole(const mcl_tensor *t)
{
    return t->offset == 0 && (size_t)numel(t) * sizeof(float) >= block_of(t->buf->handle)->pb.size;
}

/* t's elements hold their values (a view: only its own range of the buffer) */
static void materialize_t(const mcl_tensor *t)
{
    if (!t) return;
    size_t lo, hi;
    byte_range(t, &lo, &hi);
    materialize_range(block_of(t->buf->handle), lo, hi);
}

/* METACL_DEBUG_POISON: NaN in bytes [lo, hi) of a block that an op claims to store whole */
static void poison_range(const mcl_tensor *t, ref_block *b, size_t lo, size_t hi)
{
    if (!pool_of(t->buf->be)->poison) return;
    float *p = (float *)(void *)data_of(b);
    for (size_t i = lo / sizeof(float); i < hi / sizeof(float); i++) p[i] = NAN;
}

int mcl_ref_grad_fresh(const mcl_tensor *t)
{
    if (unlisted_bwd) unlisted_asked = 1;
    ref_block *b = block_of(t->buf->handle);
    if (!b->pb.fresh) return 0;
    size_t lo, hi;
    byte_range(t, &lo, &hi);
    if (whole(t) && !b->written) {
        set_fresh(b, 0); /* the caller now stores every element */
        poison_range(t, b, lo, hi);
        return 1;
    }
    /* a view that meets nothing written yet: the caller stores it, the rest stays fresh */
    if (b->pb.size >= SPANS_MIN && lo < hi && (!b->written || mcl_spans_disjoint(b->written, lo, hi))) {
        if (spans_of(b) && mcl_spans_add(b->written, lo, hi)) {
            if (mcl_spans_covers(b->written, b->pb.size)) set_fresh(b, 0);
            poison_range(t, b, lo, hi);
            return 1;
        }
    }
    materialize_range(b, lo, hi);
    return 0;
}

/* The elements of an op's tensors: tells its calls apart for the thread policy (threads.h). */
static double op_work(const mcl_op_args *a)
{
    const mcl_op_info *info = &mcl_op_table[a->op];
    double w = 0.0;
    for (int k = 0; k < info->n_in; k++)
        if (a->in[k]) w += (double)numel(a->in[k]);
    for (int k = 0; k < info->n_out; k++)
        if (a->out[k]) w += (double)numel(a->out[k]);
    return w;
}

static mcl_status ref_fwd(mcl_backend *be, const mcl_op_args *a)
{
    const mcl_op_info *info = &mcl_op_table[a->op];
    if (mcl_threads_follow_load_on()) /* the team follows the load when asked (threads.h) */
        mcl_threads_op_begin(a->op, 0, op_work(a));
    for (int k = 0; k < info->n_in; k++) materialize_t(a->in[k]);
    for (int k = 0; k < info->n_out; k++) {
        ref_block *b = block_of(a->out[k]->buf->handle);
        if (!b->pb.fresh) continue;
        if (mcl_op_fwd_overwrites(a->op) && whole(a->out[k])) {
            set_fresh(b, 0);
            poison_range(a->out[k], b, 0, b->pb.size);
        } else {
            materialize_t(a->out[k]);
        }
    }
    const mcl_status st = ref_impl[a->op].fwd(be, a);
    mcl_threads_op_end();
    return st;
}

static mcl_status ref_bwd(mcl_backend *be, const mcl_op_args *a)
{
    const mcl_op_info *info = &mcl_op_table[a->op];
    if (mcl_threads_follow_load_on()) mcl_threads_op_begin(a->op, 1, op_work(a));
    for (int k = 0; k < info->n_in; k++) materialize_t(a->in[k]);
    for (int k = 0; k < info->n_out; k++) materialize_t(a->out[k]);
    for (int k = 0; k < info->n_diff_out; k++) materialize_t(a->gout[k]);
    const int unlisted = !bwd_fresh_aware[a->op] || a->op == test_unlisted;
    if (unlisted)
        for (int k = 0; k < info->n_in; k++) materialize_t(a->gin[k]);
    unlisted_bwd = unlisted && pool_of(be)->poison;
    unlisted_asked = 0;
    mcl_status st = ref_impl[a->op].bwd(be, a);
    mcl_threads_op_end();
    if (st == MCL_OK && unlisted_bwd && unlisted_asked)
        st = mcl_ctx_set_error(be->ctx, MCL_ERR_STATE,
                               "ref backend: %s's backward asks whether its gradients are fresh "
                               "but is not in bwd_fresh_aware (src/ref/ref_backend.c)",
                               info->name);
    unlisted_bwd = 0;
    return st;
}

mcl_status mcl_ref_backend_create(mcl_ctx *ctx, mcl_backend **out)
{
    mcl_backend *be = calloc(1, sizeof *be);
    ref_pool *pl = calloc(1, sizeof *pl);
    if (!be || !pl) {
        free(be);
        free(pl);
        return MCL_ERR_OOM;
    }
    for (int op = 0; op < MCL_OP_COUNT; op++) {
        pl->ops[op].fwd = ref_fwd;
        pl->ops[op].bwd = ref_impl[op].bwd ? ref_bwd : NULL;
    }
    pl->poison = mcl_pool_poison_requested();
    test_unlisted = mcl_pool_test_unlisted("ref");
    pl->pool.peaks = REF_POOL_PEAKS;
    be->kind = MCL_BACKEND_REF;
    be->name = "ref";
    be->ctx = ctx;
    be->impl = pl;
    be->buf_alloc = ref_alloc;
    be->buf_free = ref_free;
    be->buf_write = ref_write;
    be->buf_read = ref_read;
    be->buf_fill = ref_fill;
    be->buf_copy = ref_copy;
    be->finish = ref_finish;
    be->destroy = ref_destroy;
    be->ops = pl->ops;
    be->own_grad_buffers = 1; /* lazy zeroing (the top): a walk's gradients as whole buffers */
    *out = be;
    return MCL_OK;
}
