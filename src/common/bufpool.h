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

/* 1 when the forward of op stores every element of every output on every backend (so the
 * outputs need no zeros first), else 0. */
int mcl_op_fwd_overwrites(mcl_op op);

/* 1 when METACL_DEBUG_POISON is set to a value other than "" or "0". */
int mcl_pool_poison_requested(void);

#endif
