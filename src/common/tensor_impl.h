/* tensor_impl.h — the tensor descriptor's fields (internal, not installed).
 *
 * The public API (tensor.h) keeps mcl_tensor opaque; the engine, the backends and the model
 * code that reads shapes or buffers directly include this header (backend.h does). A program
 * using the installed headers reads shapes through mcl_tensor_ndim / mcl_tensor_dim /
 * mcl_tensor_shape / mcl_tensor_numel.
 */
#ifndef MCL_TENSOR_IMPL_H
#define MCL_TENSOR_IMPL_H

#include <stdint.h>

#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mcl_backend mcl_backend;
typedef struct mcl_buffer mcl_buffer;
typedef struct mcl_node mcl_node;

/* Tensor flags. */
enum {
    MCL_TF_REQUIRES_GRAD = 1 << 0, /* leaf (parameter) whose .grad is accumulated by backward */
    MCL_TF_NEEDS_GRAD = 1 << 1,    /* some gradient flows through it (leaf or result)        */
    MCL_TF_TEMP = 1 << 2,          /* owned by the context's temporaries list                */
    MCL_TF_ON_PATH = 1 << 3        /* during a partial backward: depends on a wrt tensor     */
};

struct mcl_tensor {
    mcl_ctx *ctx;
    mcl_buffer *buf;             /* shared, reference-counted backend buffer */
    int64_t offset;              /* element offset into buf                  */
    int ndim;                    /* 1..4                                     */
    int64_t shape[MCL_MAX_DIMS]; /* unused dims are 1                        */
    int refcnt;
    unsigned flags;
    mcl_tensor *grad;  /* accumulated gradient of a REQUIRES_GRAD leaf (created on demand)  */
    mcl_tensor *gtmp;  /* gradient during one backward pass (internal)                      */
    mcl_tensor *gslot; /* a packed parameter's place for .grad in its registry's gradient
                          arena (params.c; zeros while .grad is NULL), else NULL              */
    mcl_node *node;    /* tape node that produced it (NULL for leaves), borrowed            */
    char name[48];     /* optional, for messages and the parameter registry                 */
};

/* Queue a read of t's n floats into dst without waiting for it (the backend's buf_read_async;
 * a plain read where there is none): dst is filled once the context's queue is finished
 * (mcl_ctx_finish, or any blocking read) and must stay valid until then. The harness reads a
 * training step's loss and metrics this way: several reads, one finish (train.h). */
mcl_status mcl_tensor_read_async(const mcl_tensor *t, float *dst, int64_t n);

/* The write generation of t's buffer (struct mcl_buffer, backend.h): it changes whenever
 * anything may have written the buffer, so a host-side value derived from t's contents is
 * still valid while the generation (and t->buf) is the same. */
uint64_t mcl_tensor_buffer_gen(const mcl_tensor *t);

#ifdef __cplusplus
}
#endif
#endif
