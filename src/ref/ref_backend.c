/* ref_backend.c — the reference backend: host buffers and the op table.
 *
 * Buffers are 64-byte aligned float arrays on the host. The op table maps every op of
 * ops.def to mcl_ref_<name>_fwd / _bwd, implemented in src/ref/<family>.c.
 */
#include <stdlib.h>
#include <string.h>

#include "ref.h"

static const mcl_op_impl ref_ops[MCL_OP_COUNT] = {
#define MCL_OP(ID, name, n_in, n_out, n_diff_out, family) \
    [MCL_OP_##ID] = {mcl_ref_##name##_fwd, mcl_ref_##name##_bwd},
#include "ops.def"
#undef MCL_OP
};

static mcl_status ref_alloc(mcl_backend *be, size_t nbytes, void **handle)
{
    (void)be;
    size_t n = (nbytes + 63) / 64 * 64;
    void *p = aligned_alloc(64, n ? n : 64);
    if (!p) return MCL_ERR_OOM;
    memset(p, 0, n ? n : 64);
    *handle = p;
    return MCL_OK;
}

static void ref_free(mcl_backend *be, void *handle)
{
    (void)be;
    free(handle);
}

static mcl_status ref_write(mcl_backend *be, void *handle, size_t off, const void *src, size_t n)
{
    (void)be;
    memcpy((char *)handle + off, src, n);
    return MCL_OK;
}

static mcl_status ref_read(mcl_backend *be, void *handle, size_t off, void *dst, size_t n)
{
    (void)be;
    memcpy(dst, (const char *)handle + off, n);
    return MCL_OK;
}

static mcl_status ref_fill(mcl_backend *be, void *handle, size_t off, float v, size_t count)
{
    (void)be;
    float *p = (float *)(void *)((char *)handle + off);
    for (size_t i = 0; i < count; i++) p[i] = v;
    return MCL_OK;
}

static mcl_status ref_copy(mcl_backend *be, void *dst, size_t doff, void *src, size_t soff, size_t n)
{
    (void)be;
    memmove((char *)dst + doff, (const char *)src + soff, n);
    return MCL_OK;
}

static mcl_status ref_finish(mcl_backend *be)
{
    (void)be;
    return MCL_OK;
}

static void ref_destroy(mcl_backend *be) { free(be); }

mcl_status mcl_ref_backend_create(mcl_ctx *ctx, mcl_backend **out)
{
    mcl_backend *be = calloc(1, sizeof *be);
    if (!be) return MCL_ERR_OOM;
    be->kind = MCL_BACKEND_REF;
    be->name = "ref";
    be->ctx = ctx;
    be->buf_alloc = ref_alloc;
    be->buf_free = ref_free;
    be->buf_write = ref_write;
    be->buf_read = ref_read;
    be->buf_fill = ref_fill;
    be->buf_copy = ref_copy;
    be->finish = ref_finish;
    be->destroy = ref_destroy;
    be->ops = ref_ops;
    *out = be;
    return MCL_OK;
}
