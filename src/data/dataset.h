/* dataset.h — image datasets in memory (public API).
 *
 * Every image set metacl uses becomes the same thing: N grayscale images of 32×32 uint8
 * (0 = background, 255 = ink/bright), an int32 class label per image, the number of classes,
 * normalization statistics, and a split. On disk a prepared set is a directory in the data
 * dir (mcl_data_dir_default below; override --data-dir or $METACL_DATA) holding IDX files
 * (images ubyte N×32×32, labels int32 N) that other tools can read, plus meta.txt.
 *
 * Splits. Stroke sets (hanzi, kanji, hershey) split CLASSES into meta-train / meta-val /
 * meta-test (disjoint, fixed by a hash of the character, documented in doc/data.md);
 * fmnist splits EXAMPLES (train file / test file) and is a meta-test domain.
 * mcl_dataset_load(..., split) returns only the images of that split; labels keep the
 * set's global class ids, and class_ids[] lists the classes present.
 */
#ifndef MCL_DATASET_H
#define MCL_DATASET_H

#include <stddef.h>
#include <stdint.h>

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MCL_IMG 32 /* side of every image */
#define MCL_FMNIST_SIDE 28 /* Fashion-MNIST's own side, centred in the 32×32 canvas */

/* fmnist-val (doc/data.md): 5 000 Fashion-MNIST TRAINING images held out for
 * meta-validation, the last MCL_FMNIST_VAL_PER_CLASS of each class in the order of the
 * training file (balanced, no randomness). The data set "fmnist-val" is fmnist with this
 * split: VAL = the 5 000, TRAIN = the other 55 000 of the training file, TEST = the test
 * file (never part of the validation split), ALL = everything. */
#define MCL_FMNIST_VAL_NAME "fmnist-val"
#define MCL_FMNIST_VAL_PER_CLASS 500

typedef enum mcl_split {
    MCL_SPLIT_ALL = 0,
    MCL_SPLIT_TRAIN, /* meta-train classes (stroke sets) / train file (fmnist) */
    MCL_SPLIT_VAL,   /* meta-validation classes                               */
    MCL_SPLIT_TEST   /* meta-test classes / test file                          */
} mcl_split;

typedef struct mcl_dataset {
    char name[64];
    int64_t n;          /* images                                         */
    uint8_t *images;    /* n × 32 × 32, row-major                          */
    int32_t *labels;    /* n, global class id in [0, n_classes_total)      */
    int n_classes_total;/* classes of the whole set                        */
    int n_classes;      /* classes present in this dataset (this split)    */
    int32_t *class_ids; /* n_classes global ids, ascending                 */
    float mean, std;    /* pixel statistics of the set's train split, in [0,1] units */
    int content_side;   /* side of the centred box of the canvas holding the set's own
                           pixels: 28 for fmnist (mcl_image_to_side), else 32        */
    /* per class present: the indices of its images (ascending) */
    int64_t *class_start; /* n_classes + 1 offsets into class_index      */
    int64_t *class_index; /* n image indices grouped by class            */
} mcl_dataset;

/* Load a prepared set ("fmnist", "fmnist-val", "hanzi", "kanji", "hershey") from data_dir (NULL = default),
 * or user data given as "idx:IMAGES,LABELS" or "pngdir:DIR" (split ignored for user data
 * except that it must be ALL or TRAIN). On error returns a status and writes a message
 * (naming the file and the problem, or the command that prepares the set) into err. */
mcl_status mcl_dataset_load(const char *spec, const char *data_dir, mcl_split split,
                            mcl_dataset **out, char *err, size_t err_len);
void mcl_dataset_free(mcl_dataset *ds);

/* Build a dataset from arrays (copied); computes the class index. For tests and user code. */
mcl_status mcl_dataset_from_arrays(const char *name, const uint8_t *images, const int32_t *labels,
                                   int64_t n, mcl_dataset **out, char *err, size_t err_len);

/* The image of side `side` (1..MCL_IMG) that a model of that input size sees, from a
 * 32×32 canvas whose own pixels fill the centred content×content box:
 *   side 32             the canvas itself (as always);
 *   content <= side     the box, centred on a side×side background (fmnist at 28: its
 *                       native pixels exactly);
 *   side < content      the box area-resized to side×side (each output pixel the exact
 *                       area-weighted mean of the source pixels it covers, rounded once;
 *                       stroke sets at 28: 32 → 28).
 * out holds side² bytes. */
void mcl_image_to_side(const uint8_t *canvas, int content, int side, uint8_t *out);

/* The prepared set that a data-set name reads: "fmnist" for "fmnist-val", else name. */
const char *mcl_dataset_prepared_name(const char *name);

/* The example split of a view (fmnist-val: the held-out images become MCL_SPLIT_VAL) applied
 * in place to split[n] (the per-example split of the prepared set, labels[n] its labels);
 * no-op for other names. MCL_ERR_FORMAT (message in err) when a class has too few training
 * images to hold MCL_FMNIST_VAL_PER_CLASS out and keep one. */
mcl_status mcl_dataset_view_splits(const char *name, const int32_t *labels, uint8_t *split,
                                   int64_t n, int n_classes, char *err, size_t err_len);

/* Index (0..n_classes-1) of global class id c in this dataset, or -1. */
int mcl_dataset_class_pos(const mcl_dataset *ds, int32_t c);

/* The default data directory: $METACL_DATA; else "data/cache" when that directory exists
 * (relative to the working directory: a source tree); else $XDG_DATA_HOME/metacl (default
 * $HOME/.local/share/metacl). NULL when there is none (HOME unset or empty, XDG_DATA_HOME not
 * an absolute path): data never goes silently to a data/cache of the working directory; the
 * message for it is MCL_NO_DATA_DIR. The string may live in a static buffer overwritten by
 * the next call. */
#define MCL_NO_DATA_DIR                                                                       \
    "no data directory: $HOME is not set and $XDG_DATA_HOME is not an absolute path (set "     \
    "METACL_DATA or pass --data-dir DIR)"
const char *mcl_data_dir_default(void);

#ifdef __cplusplus
}
#endif
#endif
