/* idx.h — IDX files (the MNIST format) read and written (internal to the data code).
 *
 * An IDX file is a 4-byte magic 0x00 0x00 TYPE NDIM, NDIM big-endian uint32 sizes, then the
 * elements in row-major order (multi-byte elements big-endian). Supported: TYPE 0x08 (ubyte)
 * and 0x0C (int32), NDIM 1..3 (e.g. 0x00000803 images, 0x00000801 / 0x00000C01 labels).
 * Files may be gzip-compressed (read transparently). Reading is strict: a wrong magic,
 * unsupported type, zero or oversized dimensions, truncated data or trailing bytes after
 * the data are errors whose message names the file and the problem.
 */
#ifndef MCL_IDX_H
#define MCL_IDX_H

#include <stddef.h>
#include <stdint.h>

#include "status.h"
#include "util.h"

#define MCL_IDX_UBYTE 0x08
#define MCL_IDX_INT32 0x0C
#define MCL_IDX_MAX_NDIM 3
/* Default limit on the data size of one file (elements × element size), in bytes. */
#define MCL_IDX_MAX_BYTES ((size_t)1 << 31)

typedef struct mcl_idx {
    int type;                       /* MCL_IDX_UBYTE or MCL_IDX_INT32               */
    int ndim;                       /* 1..3                                          */
    int64_t dims[MCL_IDX_MAX_NDIM]; /* sizes, each >= 1; unused ones 1              */
    int64_t count;                  /* product of dims                               */
    void *data;                     /* count uint8_t, or count int32_t in host order */
} mcl_idx;

/* Read an IDX file (plain or gzip). max_bytes limits the data size (0 = MCL_IDX_MAX_BYTES).
 * On success *out owns data (mcl_idx_free); on error *out is empty and err says why. */
mcl_status mcl_idx_read(const char *path, size_t max_bytes, mcl_idx *out, char *err, size_t len);

/* The same from memory (plain or gzip); `name` is used in messages (NULL = "<memory>"). */
mcl_status mcl_idx_read_mem(const void *buf, size_t n, const char *name, size_t max_bytes,
                            mcl_idx *out, char *err, size_t len);

void mcl_idx_free(mcl_idx *x);

/* Check what was read: type (0 = any), ndim (0 = any) and first dimension (< 0 = any).
 * `what` names the contents in the message ("labels"), name the file. */
mcl_status mcl_idx_expect(const mcl_idx *x, const char *name, const char *what, int type,
                          int ndim, int64_t dim0, char *err, size_t len);

/* Write an IDX file atomically (temporary file in the same directory, then rename).
 * data: count uint8_t or int32_t (host order). gzip != 0 compresses (deterministic bytes:
 * no time stamp in the gzip header). */
mcl_status mcl_idx_write(const char *path, int type, int ndim, const int64_t *dims,
                         const void *data, int gzip, char *err, size_t len);

/* mcl_tmp_name: util.h */

#endif
