/* safetensors.h — reading and writing the safetensors tensor file format (public API).
 *
 * The format (as PyTorch's `safetensors` package writes it; all integers little-endian):
 *
 *   N        u64       length of the header in bytes
 *   header   N bytes   one JSON object, UTF-8, possibly padded at its end with spaces:
 *                        { "NAME": {"dtype": "F32", "shape": [d0, d1, ...],
 *                                   "data_offsets": [begin, end]},
 *                          ...,
 *                          "__metadata__": {"key": "value", ...} }      (optional)
 *   buffer   the rest  the tensors' bytes, row-major (C order), little-endian; tensor NAME
 *                      occupies bytes [begin, end) of the buffer
 *
 * What this reader accepts (anything else is refused with MCL_ERR_FORMAT and a message that
 * names the file, the tensor and what is wrong; nothing is allocated before the sizes it
 * depends on have been checked against the file and the memory budget):
 *   - N ≥ 2, N ≤ MCL_ST_HEADER_MAX and N ≤ the bytes after the length;
 *   - the header is one JSON object (trailing spaces allowed, nothing else after it);
 *   - every entry other than "__metadata__" is an object with exactly the three keys
 *     "dtype", "shape" and "data_offsets"; the metadata is an object of string values;
 *   - names are unique, non-empty and at most MCL_ST_NAME_MAX bytes;
 *   - dtype "F32", "F16" or "BF16" (converted to float32 on reading; other dtypes are
 *     MCL_ERR_UNSUPPORTED); at most MCL_ST_MAX_DIMS dims, each a non-negative integer;
 *   - data_offsets [begin, end] integers with begin ≤ end ≤ buffer length and
 *     end − begin = numel · (bytes per element);
 *   - the tensors tile the buffer exactly: sorted by offset, each starts where the previous
 *     one ended, the first at 0 and the last ends at the end of the file (no gap, no
 *     overlap, no trailing bytes).
 *
 * What the writer produces: the metadata first (when there is any), then the tensors in the
 * order they were added, their data in that order without gaps, all F32; the header padded
 * with spaces to a multiple of 8 bytes (so the buffer starts 8-byte aligned). The same
 * content always gives the same bytes. Files are written atomically (temp + fsync + rename,
 * src/common/util.h).
 */
#ifndef MCL_SAFETENSORS_H
#define MCL_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MCL_ST_MAX_DIMS 8
#define MCL_ST_NAME_MAX 255
#define MCL_ST_HEADER_MAX (100u * 1024u * 1024u) /* the limit the reference reader uses too */

typedef enum mcl_st_dtype {
    MCL_ST_F32 = 0,
    MCL_ST_F16,
    MCL_ST_BF16
} mcl_st_dtype;

/* One tensor: its values as float32 whatever the file's dtype. */
typedef struct mcl_st_tensor {
    char *name;
    int dtype;                        /* mcl_st_dtype: what the file held     */
    int ndim;                         /* 0 (a scalar) .. MCL_ST_MAX_DIMS      */
    int64_t shape[MCL_ST_MAX_DIMS];
    int64_t numel;                    /* product of the shape (1 for ndim 0)  */
    float *data;                      /* numel values, row-major (owned)      */
} mcl_st_tensor;

/* A set of tensors and string metadata, as read from a file or built for writing. */
typedef struct mcl_safetensors {
    int n;                            /* tensors, in file order (reading: by data offset)  */
    mcl_st_tensor *t;
    int n_meta;
    char **meta_key, **meta_val;      /* n_meta pairs, in file/insertion order             */
    int cap, cap_meta;
} mcl_safetensors;

/* An empty set (NULL on out of memory). Free with mcl_st_free. */
mcl_safetensors *mcl_st_create(void);
void mcl_st_free(mcl_safetensors *s);

/* Add a tensor (its values copied). A name already there, an empty or too long name, a bad
 * shape (ndim > MCL_ST_MAX_DIMS, a negative dim) are MCL_ERR_INVALID. shape may be NULL when
 * ndim is 0; data may be NULL when numel is 0. */
mcl_status mcl_st_add(mcl_safetensors *s, const char *name, int ndim, const int64_t *shape,
                      const float *data, char *err, size_t len);
/* Set a metadata key to a string (replacing an earlier value of the key). */
mcl_status mcl_st_set_meta(mcl_safetensors *s, const char *key, const char *value, char *err,
                           size_t len);

/* Lookups: NULL when absent. */
const mcl_st_tensor *mcl_st_find(const mcl_safetensors *s, const char *name);
const char *mcl_st_meta(const mcl_safetensors *s, const char *key);

/* Parse a whole file held in memory (buf, n bytes). `what` names it in messages (NULL:
 * "safetensors"). *out = the set (free with mcl_st_free) or NULL on error. */
mcl_status mcl_st_parse(const void *buf, size_t n, const char *what, mcl_safetensors **out,
                        char *err, size_t len);
/* Read and parse a file (a regular file whose size fits the memory budget, util.h). */
mcl_status mcl_st_read(const char *path, mcl_safetensors **out, char *err, size_t len);

/* The file's bytes (malloc'd into *buf, *n bytes). */
mcl_status mcl_st_serialize(const mcl_safetensors *s, unsigned char **buf, size_t *n, char *err,
                            size_t len);
/* Write the file atomically. */
mcl_status mcl_st_write(const mcl_safetensors *s, const char *path, char *err, size_t len);

#ifdef __cplusplus
}
#endif
#endif
