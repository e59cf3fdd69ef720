/* tensor.c — contexts, tensors, views, host copies, errors. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rng.h"
#include "tape.h"

/* ------------------------------------------------------------------ errors */

/* The last error wins: every call replaces the status and the message (tensor.h). */
static mcl_status set_error_v(mcl_ctx *ctx, mcl_status s, const char *fmt, va_list ap)
{
    ctx->status = s;
    ctx->err_seq++;
    vsnprintf(ctx->err, sizeof ctx->err, fmt, ap);
    return s;
}

mcl_status mcl_ctx_set_error(mcl_ctx *ctx, mcl_status s, const char *fmt, ...)
{
    if (!ctx || s == MCL_OK) return s;
    va_list ap;
    va_start(ap, fmt);
    set_error_v(ctx, s, fmt, ap);
    va_end(ap);
    return s;
}

uint64_t mcl_ctx_error_seq(const mcl_ctx *ctx) { return ctx ? ctx->err_seq : 0; }

mcl_status mcl_ctx_set_error_since(mcl_ctx *ctx, uint64_t seq, mcl_status s, const char *fmt, ...)
{
    if (!ctx || s == MCL_OK || ctx->err_seq != seq) return s; /* the callee's message stays */
    va_list ap;
    va_start(ap, fmt);
    set_error_v(ctx, s, fmt, ap);
    va_end(ap);
    return s;
}

mcl_status mcl_ctx_status(const mcl_ctx *ctx) { return ctx ? ctx->status : MCL_ERR_NULL; }
const char *mcl_ctx_error(const mcl_ctx *ctx) { return ctx ? ctx->err : "no context"; }
void mcl_ctx_clear_error(mcl_ctx *ctx)
{
    if (!ctx) return;
    ctx->status = MCL_OK;
    ctx->err[0] = '\0';
}

/* ------------------------------------------------------------------ context */

mcl_status mcl_ctx_create(mcl_ctx **out, mcl_backend_kind kind, const char *device, char *errbuf,
                          size_t errbuf_len)
{
    if (errbuf && errbuf_len) errbuf[0] = '\0';
    if (!out) return MCL_ERR_NULL;
    *out = NULL;
    mcl_ctx *ctx = calloc(1, sizeof *ctx);
    if (!ctx) {
        if (errbuf) snprintf(errbuf, errbuf_len, "out of memory creating a context");
        return MCL_ERR_OOM;
    }
    ctx->seed = 0;
    ctx->next_stream = 1;
    mcl_status s = mcl_backend_open(ctx, kind, device, &ctx->be);
    if (s != MCL_OK) {
        if (errbuf) snprintf(errbuf, errbuf_len, "%s", ctx->err[0] ? ctx->err : mcl_status_str(s));
        if (ctx->be && ctx->be->destroy) ctx->be->destroy(ctx->be);
        free(ctx);
        return s;
    }
    ctx->profile = mcl_profile_create_from_env();
    *out = ctx;
    return MCL_OK;
}

void mcl_ctx_reset(mcl_ctx *ctx)
{
    if (!ctx) return;
    mcl_tape_clear(ctx);
    /* Drop the context's reference on every temporary (kept ones survive). */
    size_t n = ctx->n_temps;
    ctx->n_temps = 0;
    for (size_t i = 0; i < n; i++) {
        ctx->temps[i]->flags &= ~(unsigned)MCL_TF_TEMP;
        mcl_tensor_free(ctx->temps[i]);
    }
}

void mcl_ctx_free(mcl_ctx *ctx)
{
    if (!ctx) return;
    mcl_ctx_reset(ctx);
    free(ctx->temps);
    free(ctx->nodes);
    if (ctx->profile) {
        char where[320];
        mcl_backend_describe(ctx->be, where, sizeof where);
        mcl_profile_print(ctx->profile, where, &ctx->be->stats);
        mcl_profile_free(ctx->profile);
    }
    if (ctx->be && ctx->be->destroy) ctx->be->destroy(ctx->be);
    free(ctx);
}

mcl_backend_kind mcl_ctx_backend_kind(const mcl_ctx *ctx) { return ctx->be->kind; }
const char *mcl_ctx_backend_name(const mcl_ctx *ctx) { return ctx->be->name; }
mcl_status mcl_ctx_finish(mcl_ctx *ctx)
{
    if (!ctx) return MCL_ERR_NULL;
    const uint64_t seq = mcl_ctx_error_seq(ctx);
    mcl_status s = ctx->be->finish(ctx->be);
    return s == MCL_OK ? s : mcl_ctx_set_error_since(ctx, seq, s, "%s: finish failed", ctx->be->name);
}

size_t mcl_ctx_num_temps(const mcl_ctx *ctx) { return ctx ? ctx->n_temps : 0; }
void mcl_ctx_set_seed(mcl_ctx *ctx, uint64_t seed)
{
    if (!ctx) return;
    ctx->seed = seed;
    ctx->next_stream = 1;
}
uint64_t mcl_ctx_seed(const mcl_ctx *ctx) { return ctx ? ctx->seed : 0; }
uint64_t mcl_ctx_next_stream(mcl_ctx *ctx) { return ctx ? ctx->next_stream++ : 0; }
uint64_t mcl_ctx_stream(const mcl_ctx *ctx) { return ctx ? ctx->next_stream : 0; }
void mcl_ctx_set_stream(mcl_ctx *ctx, uint64_t next)
{
    if (ctx) ctx->next_stream = next;
}

/* ------------------------------------------------------------------ buffers */

static mcl_buffer *buffer_create(mcl_ctx *ctx, size_t nbytes)
{
    mcl_buffer *b = calloc(1, sizeof *b);
    if (!b) {
        mcl_ctx_set_error(ctx, MCL_ERR_OOM, "out of host memory for a buffer descriptor");
        return NULL;
    }
    const uint64_t seq = mcl_ctx_error_seq(ctx);
    mcl_status s = ctx->be->buf_alloc(ctx->be, nbytes, &b->handle);
    if (s != MCL_OK) {
        mcl_ctx_set_error_since(ctx, seq, s, "%s backend: cannot allocate %zu bytes", ctx->be->name, nbytes);
        free(b);
        return NULL;
    }
    b->be = ctx->be;
    b->nbytes = nbytes;
    b->refcnt = 1;
    return b;
}

static void buffer_release(mcl_buffer *b)
{
    if (!b || --b->refcnt > 0) return;
    b->be->buf_free(b->be, b->handle);
    free(b);
}

/* ------------------------------------------------------------------ tensors */

mcl_status mcl_shape_check(mcl_ctx *ctx, const char *what, int ndim, const int64_t *shape)
{
    if (!shape) return mcl_ctx_set_error(ctx, MCL_ERR_NULL, "%s: shape is NULL", what);
    if (ndim < 1 || ndim > MCL_MAX_DIMS)
        return mcl_ctx_set_error(ctx, MCL_ERR_SHAPE, "%s: %d dims (must be 1..%d)", what, ndim,
                                 MCL_MAX_DIMS);
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) {
        if (shape[d] < 1)
            return mcl_ctx_set_error(ctx, MCL_ERR_SHAPE, "%s: dim %d is %lld (must be >= 1)",
                                     what, d, (long long)shape[d]);
        if (shape[d] > MCL_MAX_ELEMS || n > MCL_MAX_ELEMS / shape[d])
            return mcl_ctx_set_error(ctx, MCL_ERR_SHAPE,
                                     "%s: more than %lld elements (absurd size)", what,
                                     (long long)MCL_MAX_ELEMS);
        n *= shape[d];
    }
    return MCL_OK;
}

static mcl_status temps_push(mcl_ctx *ctx, mcl_tensor *t)
{
    if (ctx->n_temps == ctx->cap_temps) {
        size_t cap = ctx->cap_temps ? 2 * ctx->cap_temps : 64;
        mcl_tensor **p = realloc(ctx->temps, cap * sizeof *p);
        if (!p) return mcl_ctx_set_error(ctx, MCL_ERR_OOM, "out of memory (temporaries list)");
        ctx->temps = p;
        ctx->cap_temps = cap;
    }
    ctx->temps[ctx->n_temps++] = t;
    t->flags |= MCL_TF_TEMP;
    return MCL_OK;
}

static mcl_tensor *descriptor_new(mcl_ctx *ctx, mcl_buffer *buf, int64_t offset, int ndim,
                                  const int64_t *shape)
{
    mcl_tensor *t = calloc(1, sizeof *t);
    if (!t) {
        mcl_ctx_set_error(ctx, MCL_ERR_OOM, "out of memory (tensor descriptor)");
        return NULL;
    }
    t->ctx = ctx;
    t->buf = buf;
    t->offset = offset;
    t->ndim = ndim;
    for (int d = 0; d < MCL_MAX_DIMS; d++) t->shape[d] = d < ndim ? shape[d] : 1;
    t->refcnt = 1;
    return t;
}

mcl_tensor *mcl_tensor_alloc(mcl_ctx *ctx, int ndim, const int64_t *shape, int temp)
{
    if (!ctx) return NULL;
    if (mcl_shape_check(ctx, "tensor_create", ndim, shape) != MCL_OK) return NULL;
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) n *= shape[d];
    mcl_buffer *b = buffer_create(ctx, (size_t)n * sizeof(float));
    if (!b) return NULL;
    mcl_tensor *t = descriptor_new(ctx, b, 0, ndim, shape);
    if (!t) {
        buffer_release(b);
        return NULL;
    }
    if (temp && temps_push(ctx, t) != MCL_OK) {
        mcl_tensor_free(t);
        return NULL;
    }
    return t;
}

mcl_tensor *mcl_tensor_alias(mcl_ctx *ctx, mcl_tensor *t, int ndim, const int64_t *shape)
{
    if (!ctx || !t) return NULL;
    if (mcl_shape_check(ctx, "tensor_alias", ndim, shape) != MCL_OK) return NULL;
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) n *= shape[d];
    if (n != mcl_tensor_numel(t)) {
        mcl_ctx_set_error(ctx, MCL_ERR_SHAPE, "tensor_alias: %lld elements for a tensor of %lld",
                          (long long)n, (long long)mcl_tensor_numel(t));
        return NULL;
    }
    return mcl_tensor_alias_at(ctx, t, 0, ndim, shape);
}

mcl_tensor *mcl_tensor_alias_at(mcl_ctx *ctx, mcl_tensor *t, int64_t offset, int ndim,
                                const int64_t *shape)
{
    if (!ctx || !t) return NULL;
    if (mcl_shape_check(ctx, "tensor_alias", ndim, shape) != MCL_OK) return NULL;
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) n *= shape[d];
    if (offset < 0 || offset + n > mcl_tensor_numel(t)) {
        mcl_ctx_set_error(ctx, MCL_ERR_SHAPE,
                          "tensor_alias: elements [%lld, %lld) of a tensor of %lld",
                          (long long)offset, (long long)(offset + n), (long long)mcl_tensor_numel(t));
        return NULL;
    }
    mcl_tensor *v = descriptor_new(ctx, t->buf, t->offset + offset, ndim, shape);
    if (!v) return NULL;
    t->buf->refcnt++;
    if (temps_push(ctx, v) != MCL_OK) {
        mcl_tensor_free(v);
        return NULL;
    }
    return v;
}

mcl_tensor *mcl_tensor_create(mcl_ctx *ctx, int ndim, const int64_t *shape)
{
    return mcl_tensor_alloc(ctx, ndim, shape, 0);
}

mcl_tensor *mcl_tensor_new(mcl_ctx *ctx, int64_t d0, int64_t d1, int64_t d2, int64_t d3)
{
    int64_t s[4] = {d0, d1, d2, d3};
    int nd = 1;
    while (nd < 4 && s[nd] != 0) nd++;
    return mcl_tensor_alloc(ctx, nd, s, 0);
}

mcl_tensor *mcl_param_create(mcl_ctx *ctx, const char *name, int ndim, const int64_t *shape)
{
    mcl_tensor *t = mcl_tensor_alloc(ctx, ndim, shape, 0);
    if (!t) return NULL;
    t->flags |= MCL_TF_REQUIRES_GRAD | MCL_TF_NEEDS_GRAD;
    if (name) mcl_tensor_set_name(t, name);
    return t;
}

void mcl_tensor_free(mcl_tensor *t)
{
    if (!t || --t->refcnt > 0) return;
    mcl_tensor_free(t->grad);
    mcl_tensor_free(t->gtmp);
    mcl_tensor_free(t->gslot);
    buffer_release(t->buf);
    free(t);
}

mcl_tensor *mcl_tensor_keep(mcl_tensor *t)
{
    if (t) t->refcnt++;
    return t;
}

int mcl_tensor_ndim(const mcl_tensor *t) { return t ? t->ndim : 0; }

int64_t mcl_tensor_dim(const mcl_tensor *t, int d)
{
    if (!t || d < 0) return 0;
    return d < t->ndim ? t->shape[d] : 1;
}

const int64_t *mcl_tensor_shape(const mcl_tensor *t) { return t ? t->shape : NULL; }

int64_t mcl_tensor_numel(const mcl_tensor *t)
{
    if (!t) return 0;
    int64_t n = 1;
    for (int d = 0; d < t->ndim; d++) n *= t->shape[d];
    return n;
}

int mcl_tensor_same_shape(const mcl_tensor *a, const mcl_tensor *b)
{
    if (!a || !b || a->ndim != b->ndim) return 0;
    for (int d = 0; d < a->ndim; d++)
        if (a->shape[d] != b->shape[d]) return 0;
    return 1;
}

const char *mcl_shape_str(const mcl_tensor *t, char *buf, size_t len)
{
    if (!buf || !len) return "";
    if (!t) {
        snprintf(buf, len, "(null)");
        return buf;
    }
    size_t k = 0;
    k += (size_t)snprintf(buf + k, len - k, "[");
    for (int d = 0; d < t->ndim && k < len; d++)
        k += (size_t)snprintf(buf + k, len - k, d ? ",%lld" : "%lld", (long long)t->shape[d]);
    if (k < len) snprintf(buf + k, len - k, "]");
    return buf;
}

void mcl_tensor_set_name(mcl_tensor *t, const char *name)
{
    if (!t) return;
    snprintf(t->name, sizeof t->name, "%s", name ? name : "");
}

const char *mcl_tensor_name(const mcl_tensor *t) { return t ? t->name : ""; }

static mcl_status check_io(const mcl_tensor *t, const void *p, int64_t n, const char *what)
{
    if (!t) return MCL_ERR_NULL;
    if (!p) return mcl_ctx_set_error(t->ctx, MCL_ERR_NULL, "%s: host pointer is NULL", what);
    if (n != mcl_tensor_numel(t)) {
        char sb[64];
        return mcl_ctx_set_error(t->ctx, MCL_ERR_SHAPE, "%s: %lld values for a tensor %s", what,
                                 (long long)n, mcl_shape_str(t, sb, sizeof sb));
    }
    return MCL_OK;
}

/* After the host wrote [t->offset, + n) of t's buffer with values lo..hi (ints: all integers):
 * what the host knows of the buffer (struct mcl_buffer). */
static void set_known(mcl_tensor *t, int64_t n, int ints, float lo, float hi)
{
    mcl_buffer *b = t->buf;
    mcl_buffer_forget(b);
    if (!ints || n < 1) return;
    b->known_off = t->offset;
    b->known_n = n;
    b->known_min = lo;
    b->known_max = hi;
}

mcl_status mcl_tensor_write(mcl_tensor *t, const float *src, int64_t n)
{
    mcl_status s = check_io(t, src, n, "tensor_write");
    if (s != MCL_OK) return s;
    mcl_backend *be = t->ctx->be;
    const uint64_t seq = mcl_ctx_error_seq(be->ctx);
    s = be->buf_write(be, t->buf->handle, (size_t)t->offset * sizeof(float), src,
                      (size_t)n * sizeof(float));
    if (s != MCL_OK) {
        mcl_buffer_forget(t->buf);
        return mcl_ctx_set_error_since(t->ctx, seq, s, "tensor_write: backend write failed");
    }
    int ints = 1;
    float lo = n > 0 ? src[0] : 0.0f, hi = lo;
    for (int64_t i = 0; i < n && ints; i++) {
        const float v = src[i];
        ints = v == floorf(v) && fabsf(v) <= 16777216.0f;
        lo = v < lo ? v : lo;
        hi = v > hi ? v : hi;
    }
    set_known(t, n, ints, lo, hi);
    return MCL_OK;
}

uint64_t mcl_tensor_buffer_gen(const mcl_tensor *t) { return t && t->buf ? t->buf->gen : 0; }

mcl_status mcl_tensor_read_async(const mcl_tensor *t, float *dst, int64_t n)
{
    mcl_status s = check_io(t, dst, n, "tensor_read_async");
    if (s != MCL_OK) return s;
    mcl_backend *be = t->ctx->be;
    const uint64_t seq = mcl_ctx_error_seq(be->ctx);
    s = (be->buf_read_async ? be->buf_read_async : be->buf_read)(
        be, t->buf->handle, (size_t)t->offset * sizeof(float), dst, (size_t)n * sizeof(float));
    if (s != MCL_OK) return mcl_ctx_set_error_since(t->ctx, seq, s, "tensor_read_async: backend read failed");
    return MCL_OK;
}

mcl_status mcl_tensor_read(const mcl_tensor *t, float *dst, int64_t n)
{
    mcl_status s = check_io(t, dst, n, "tensor_read");
    if (s != MCL_OK) return s;
    mcl_backend *be = t->ctx->be;
    const uint64_t seq = mcl_ctx_error_seq(be->ctx);
    s = be->buf_read(be, t->buf->handle, (size_t)t->offset * sizeof(float), dst,
                     (size_t)n * sizeof(float));
    if (s != MCL_OK) return mcl_ctx_set_error_since(t->ctx, seq, s, "tensor_read: backend read failed");
    return MCL_OK;
}

mcl_status mcl_tensor_fill(mcl_tensor *t, float value)
{
    if (!t) return MCL_ERR_NULL;
    mcl_backend *be = t->ctx->be;
    const uint64_t seq = mcl_ctx_error_seq(be->ctx);
    mcl_status s = be->buf_fill(be, t->buf->handle, (size_t)t->offset * sizeof(float), value,
                                (size_t)mcl_tensor_numel(t));
    if (s != MCL_OK) {
        mcl_buffer_forget(t->buf);
        return mcl_ctx_set_error_since(t->ctx, seq, s, "tensor_fill: backend fill failed");
    }
    set_known(t, mcl_tensor_numel(t), value == floorf(value) && fabsf(value) <= 16777216.0f, value,
              value);
    return MCL_OK;
}

mcl_status mcl_tensor_copy_into(mcl_tensor *dst, const mcl_tensor *src)
{
    if (!dst || !src) return dst ? mcl_ctx_set_error(dst->ctx, MCL_ERR_NULL, "copy_into: NULL") : MCL_ERR_NULL;
    if (dst->ctx != src->ctx)
        return mcl_ctx_set_error(dst->ctx, MCL_ERR_INVALID,
                                 "copy_into: tensors belong to different contexts");
    if (mcl_tensor_numel(dst) != mcl_tensor_numel(src))
        return mcl_ctx_set_error(dst->ctx, MCL_ERR_SHAPE, "copy_into: %lld vs %lld elements",
                                 (long long)mcl_tensor_numel(dst),
                                 (long long)mcl_tensor_numel(src));
    mcl_backend *be = dst->ctx->be;
    const uint64_t seq = mcl_ctx_error_seq(be->ctx);
    mcl_buffer_forget(dst->buf);
    mcl_status s = be->buf_copy(be, dst->buf->handle, (size_t)dst->offset * sizeof(float),
                                src->buf->handle, (size_t)src->offset * sizeof(float),
                                (size_t)mcl_tensor_numel(src) * sizeof(float));
    if (s != MCL_OK) return mcl_ctx_set_error_since(dst->ctx, seq, s, "copy_into: backend copy failed");
    return MCL_OK;
}

float mcl_tensor_item(const mcl_tensor *t, int64_t i)
{
    float v = NAN;
    if (!t) return v;
    if (i < 0 || i >= mcl_tensor_numel(t)) {
        mcl_ctx_set_error(t->ctx, MCL_ERR_INVALID, "tensor_item: index %lld out of range",
                          (long long)i);
        return v;
    }
    mcl_backend *be = t->ctx->be;
    if (be->buf_read(be, t->buf->handle, (size_t)(t->offset + i) * sizeof(float), &v,
                     sizeof v) != MCL_OK)
        mcl_ctx_set_error(t->ctx, MCL_ERR_BACKEND, "tensor_item: backend read failed");
    return v;
}

mcl_tensor *mcl_tensor_view(mcl_tensor *t, int64_t offset, int ndim, const int64_t *shape)
{
    if (!t) return NULL;
    mcl_ctx *ctx = t->ctx;
    if (mcl_shape_check(ctx, "tensor_view", ndim, shape) != MCL_OK) return NULL;
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) n *= shape[d];
    int64_t cap = (int64_t)(t->buf->nbytes / sizeof(float));
    if (offset < 0 || t->offset + offset + n > cap) {
        mcl_ctx_set_error(ctx, MCL_ERR_SHAPE,
                          "tensor_view: elements [%lld, %lld) exceed the buffer of %lld",
                          (long long)(t->offset + offset), (long long)(t->offset + offset + n),
                          (long long)cap);
        return NULL;
    }
    mcl_tensor *v = descriptor_new(ctx, t->buf, t->offset + offset, ndim, shape);
    if (v) t->buf->refcnt++;
    return v;
}

mcl_status mcl_tensor_move_into(mcl_tensor *t, mcl_tensor *place)
{
    mcl_status s = mcl_tensor_copy_into(place, t);
    if (s != MCL_OK) return s;
    buffer_release(t->buf);
    t->buf = place->buf;
    t->buf->refcnt++;
    t->offset = place->offset;
    return MCL_OK;
}

mcl_tensor *mcl_detach(mcl_tensor *t)
{
    if (!t) return NULL;
    return mcl_tensor_view(t, 0, t->ndim, t->shape);
}

mcl_tensor *mcl_tensor_grad(mcl_tensor *t) { return t ? t->grad : NULL; }

void mcl_tensor_zero_grad(mcl_tensor *t)
{
    if (t && t->grad) mcl_tensor_fill(t->grad, 0.0f);
}

mcl_status mcl_tensor_grad_zeros(mcl_tensor *t)
{
    if (!t) return MCL_ERR_NULL;
    if (t->grad || !(t->flags & MCL_TF_REQUIRES_GRAD)) return MCL_OK;
    if (t->gslot) { /* a packed parameter: its slot, zeros while it has no gradient (tape.h) */
        t->grad = mcl_tensor_keep(t->gslot);
        return MCL_OK;
    }
    mcl_tensor *g = mcl_tensor_create(t->ctx, t->ndim, t->shape);
    if (!g) return mcl_ctx_status(t->ctx) != MCL_OK ? mcl_ctx_status(t->ctx) : MCL_ERR_OOM;
    mcl_status st = mcl_tensor_fill(g, 0.0f);
    if (st != MCL_OK) {
        mcl_tensor_free(g);
        return st;
    }
    t->grad = g;
    return MCL_OK;
}

/* Random fills are drawn on the host (element i = draw i of the stream) and uploaded, so every
 * backend gets the same values. */
static mcl_status fill_random(mcl_tensor *t, uint64_t seed, uint64_t stream, int normal, float a,
                              float b)
{
    if (!t) return MCL_ERR_NULL;
    int64_t n = mcl_tensor_numel(t);
    float *h = malloc((size_t)n * sizeof *h);
    if (!h) return mcl_ctx_set_error(t->ctx, MCL_ERR_OOM, "random fill: out of host memory");
    for (int64_t i = 0; i < n; i++)
        h[i] = normal ? a + b * mcl_rng_normal(seed, stream, (uint64_t)i)
                      : a + (b - a) * mcl_rng_uniform(seed, stream, (uint64_t)i);
    mcl_status s = mcl_tensor_write(t, h, n);
    free(h);
    return s;
}

mcl_status mcl_tensor_randn(mcl_tensor *t, uint64_t seed, uint64_t stream, float mean, float std)
{
    return fill_random(t, seed, stream, 1, mean, std);
}

mcl_status mcl_tensor_rand_uniform(mcl_tensor *t, uint64_t seed, uint64_t stream, float lo, float hi)
{
    return fill_random(t, seed, stream, 0, lo, hi);
}
