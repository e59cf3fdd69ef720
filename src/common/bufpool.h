/* bufpool.h — what the backends' buffer pools share.
 *
 * Both backends keep freed buffers on free lists by size class and hand them out again
 * (src/ref/ref_backend.c, src/opencl/buffers.c), and both zero a new buffer lazily: it is
 * "fresh" (logically all zeros) until something could read it. A forward op that stores
 * every element of its outputs (mcl_op_fwd_overwrites) gets a fresh output as it is.
 *
 * Debugging aid: with METACL_DEBUG_POISON=1 in the environment when a backend is created,
 * such an output is first filled with NaN, so an op that wrongly claims to store every
 * element shows NaN in its result (the test suite runs the differential tests this way).
 */
#ifndef MCL_BUFPOOL_H
#define MCL_BUFPOOL_H

#include <stddef.h>

#include "backend.h"

/* Number of pooled size classes; class MCL_POOL_CLASSES means "too large to pool". */
#define MCL_POOL_CLASSES 160

/* Size class of a request of nbytes and the capacity of its blocks (bytes, a multiple of 64,
 * at most 25% more than asked for). Classes 0..3 are 64..256 bytes; above, each power of two
 * is cut into four classes. An unpoolable request gets cap = nbytes rounded up to 64. */
int mcl_pool_size_class(size_t nbytes, size_t *cap);

/* The bookkeeping of one pooled block; a backend's block type starts with one (the reference
 * backend's block is just this, the OpenCL backend's adds its cl_mem). */
typedef struct mcl_pool_block {
    struct mcl_pool_block *next; /* free list                                          */
    size_t cap;                  /* bytes the block holds                              */
    size_t size;                 /* bytes of the current buffer (<= cap)               */
    int cls;                     /* size class, MCL_POOL_CLASSES if not poolable       */
    int fresh;                   /* logically zero, memory not written yet             */
} mcl_pool_block;

/* Free lists by size class. The pool keeps at most `peaks` times as many bytes as were ever
 * live at once (0 counts as 1: a zero-initialized pool keeps one peak). One peak is not always
 * enough for a repeated step to find every size it asks for: the step's sizes are live at
 * different moments, so a class can be empty while the pool is full of other classes, and a
 * block given back then is released (and its pages fault in again the next time). */
typedef struct mcl_pool {
    mcl_pool_block *free[MCL_POOL_CLASSES];
    size_t pooled;  /* bytes (capacities) on the free lists */
    size_t live;    /* bytes (capacities) handed out        */
    size_t peak;    /* largest `live` so far                */
    unsigned peaks; /* the bound on `pooled`, in peaks      */
} mcl_pool;

/* A pooled block for a request of nbytes, or NULL when there is none: the caller then creates
 * one of *cap bytes and sets its cap = *cap and cls = *cls. */
mcl_pool_block *mcl_pool_take(mcl_pool *p, size_t nbytes, int *cls, size_t *cap);
/* Account block b (taken or new) as handed out for nbytes; it is marked fresh. */
void mcl_pool_hand_out(mcl_pool *p, mcl_pool_block *b, size_t nbytes);
/* A handed-out block comes back: 1 when the pool keeps it, 0 when the caller must release it. */
int mcl_pool_give_back(mcl_pool *p, mcl_pool_block *b);
/* Remove and return any pooled block (for the caller to release), NULL when none is left. */
mcl_pool_block *mcl_pool_pop(mcl_pool *p);

/* 1 when the forward of op stores every element of every output on every backend (so the
 * outputs need no zeros first), else 0: the overwrites column of ops.def. */
int mcl_op_fwd_overwrites(mcl_op op);

/* 1 when METACL_DEBUG_POISON is set to a value other than "" or "0". */
int mcl_pool_poison_requested(void);

/* METACL_TEST_UNLIST=<backend>:<op> (configure --enable-test-hooks only): the op that backend
 * ("ref" or "opencl") treats as missing from its bwd_fresh_aware table, so that
 * tests/test-ops-break.sh sees the check of an unlisted backward that asks mcl_*_grad_fresh
 * fail. MCL_OP_COUNT (none) when unset, for another backend, not an op's name, or the hooks
 * are not built. */
mcl_op mcl_pool_test_unlisted(const char *backend);

#endif
