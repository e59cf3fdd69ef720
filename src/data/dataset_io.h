/* dataset_io.h — helpers of the data code behind dataset.h and prepared.h (internal):
 * reading the parts of a prepared set, verifying its SHA256SUMS, and the 32×32 fitting rule
 * used for user data.
 */
#ifndef MCL_DATASET_IO_H
#define MCL_DATASET_IO_H

#include <stddef.h>
#include <stdint.h>

#include "dataset.h"
#include "prepared.h"
#include "tensor_impl.h"

/* mkdir -p: every missing directory of path (mode 0755); an existing non-directory is an
 * error. */
mcl_status mcl_mkdir_p(const char *path, char *err, size_t len);
/* Write n bytes to path atomically: a temporary file next to it (O_EXCL), fsync, rename; on
 * any failure the temporary is removed and an existing file at path is left as it was. */
mcl_status mcl_write_file_atomic(const char *path, const void *data, size_t n, char *err,
                                 size_t len);

/* meta.txt of a prepared set. */
typedef struct mcl_prepared_meta {
    int format;
    char name[64];
    char source[256];
    char licence[128];
    char split[16]; /* "example" or "class" */
    int64_t n;
    int classes;
    float mean, std;
    uint64_t seed;
    int instances;
} mcl_prepared_meta;

/* "<data_dir>/<name>" after checking that name is a plain file name ([A-Za-z0-9._-], not
 * starting with '.', at most 63 bytes); data_dir NULL = mcl_data_dir_default(). */
mcl_status mcl_prepared_dir(const char *data_dir, const char *name, char *dir, size_t dlen,
                            char *err, size_t len);

/* Is <dir>/meta.txt present (the set complete)? */
int mcl_prepared_exists(const char *dir);

mcl_status mcl_prepared_read_meta(const char *dir, mcl_prepared_meta *m, char *err, size_t len);

/* classes.txt: n_classes entries in a malloc'd array (free()). */
mcl_status mcl_prepared_read_classes(const char *dir, int n_classes, mcl_class_info **out,
                                     char *err, size_t len);

/* split.idx: n bytes (1 train, 2 val, 3 test) in a malloc'd array, or *out = NULL when the
 * set has no per-example split. */
mcl_status mcl_prepared_read_split(const char *dir, int64_t n, uint8_t **out, char *err,
                                   size_t len);

/* One line of SHA256SUMS and what the file hashes to now. */
typedef struct mcl_sum_entry {
    char file[64];
    char want[65];
    char got[65]; /* empty when the file could not be read */
    int ok;       /* 1 matches, 0 differs or unreadable */
} mcl_sum_entry;

/* Check every file listed in <dir>/SHA256SUMS. *entries (malloc'd, free()) and *n_entries
 * are filled whenever SHA256SUMS could be parsed. Returns MCL_OK when all match and the
 * listing covers images.idx, labels.idx, classes.txt and meta.txt; MCL_ERR_FORMAT with the
 * first problem in err otherwise (MCL_ERR_IO when SHA256SUMS cannot be read). */
mcl_status mcl_prepared_verify(const char *dir, mcl_sum_entry **entries, int *n_entries,
                               char *err, size_t len);

/* Fit an h×w 8-bit image into 32×32 (out, 1024 bytes): an image no larger than 32 on both
 * sides is centred on a 0 background (offsets floor((32-h)/2), floor((32-w)/2)); a larger
 * one is area-averaged down (exact box filter, rounded) so that its longer side becomes 32
 * and the shorter round(side·32/longer) (at least 1), then centred the same way. */
void mcl_image_fit32(const uint8_t *src, int h, int w, uint8_t *out);

/* Pixel statistics in [0,1] units (population std) over n images of `pixels` bytes each,
 * taking image i only when keep == NULL or keep[i]. Returns the number of images used. */
int64_t mcl_pixel_stats(const uint8_t *images, int64_t n, int64_t pixels, const uint8_t *keep,
                        double *mean, double *std);

#endif
