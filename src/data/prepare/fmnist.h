/* fmnist.h — prepare Fashion-MNIST from the Debian package dataset-fashion-mnist. */
#ifndef MCL_FMNIST_H
#define MCL_FMNIST_H

#include <stddef.h>

#include "status.h"

/* Where Debian's dataset-fashion-mnist installs the four IDX files. */
#ifndef MCL_FMNIST_DIR
#define MCL_FMNIST_DIR "/usr/share/datasets/fashion-mnist"
#endif

/* Pixel statistics in [0,1] units of the train split: of the original 28×28 images and of
 * the prepared (padded) 32×32 ones. */
typedef struct mcl_fmnist_stats {
    double mean28, std28, mean32, std32;
    long long n_train, n_test;
} mcl_fmnist_stats;

/* Read {train,t10k}-{images-idx3,labels-idx1}-ubyte.gz from src_dir (NULL = MCL_FMNIST_DIR),
 * pad each 28×28 image centred to 32×32, and write the prepared set "fmnist" into data_dir
 * (NULL = default): 70 000 images split by example (train 1, test 3), 10 named classes.
 * A missing package gives MCL_ERR_IO with the apt-get command in err. stats may be NULL. */
mcl_status mcl_fmnist_prepare(const char *data_dir, const char *src_dir, mcl_fmnist_stats *stats,
                              char *err, size_t len);

#endif
