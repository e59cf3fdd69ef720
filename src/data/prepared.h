/* prepared.h — the on-disk format of a prepared image set (internal to the data code).
 *
 * <data_dir>/<name>/
 *   images.idx     IDX3 ubyte  N×32×32   (0 = background)
 *   labels.idx     IDX1 int32  N         global class id
 *   split.idx      IDX1 ubyte  N         per-example split (1 train, 3 test), only for sets
 *                                        split by example (fmnist); absent otherwise
 *   classes.txt    one line per class id 0..C-1: "<id>\t<train|val|test|all>\t<text>"
 *                  (text: the character as UTF-8, or a description; no tabs/newlines)
 *   meta.txt       "key=value" lines: name, source, licence, n, classes, mean, std, seed,
 *                  instances (stroke sets), format=1
 *   SHA256SUMS     "<hex>  <file>" for the files above (sha256sum -c compatible)
 * Every file is written to a temporary name and renamed; the directory is complete when
 * meta.txt exists (written last).
 */
#ifndef MCL_PREPARED_H
#define MCL_PREPARED_H

#include <stddef.h>
#include <stdint.h>

#include "dataset.h"

typedef struct mcl_class_info {
    mcl_split split; /* MCL_SPLIT_ALL for sets split by example */
    char text[64];
} mcl_class_info;

typedef struct mcl_prepared {
    const char *name, *source, *licence;
    int64_t n;
    const uint8_t *images;        /* n × 32 × 32 */
    const int32_t *labels;        /* n           */
    const uint8_t *example_split; /* n (1 train, 3 test) or NULL */
    int n_classes;
    const mcl_class_info *classes; /* n_classes   */
    uint64_t seed;                 /* 0 if not applicable */
    int instances;                 /* rendered instances per class, 0 if not applicable */
} mcl_prepared;

/* Write a prepared set into <data_dir>/<p->name>/ (creating directories). Computes mean/std
 * over the train split (or everything), writes SHA256SUMS. */
mcl_status mcl_prepared_write(const char *data_dir, const mcl_prepared *p, char *err, size_t len);

/* SHA-256 of a file as 64 hex chars + NUL. */
mcl_status mcl_sha256_file(const char *path, char hex[65], char *err, size_t len);

#endif
