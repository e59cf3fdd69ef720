/* fmnist.c — Fashion-MNIST (Xiao, Rasul & Vollgraf 2017; MIT licence) from Debian's
 * dataset-fashion-mnist package into a prepared set. See fmnist.h. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include "fmnist.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dataset.h"
#include "dataset_io.h"
#include "idx.h"
#include "prepared.h"
#include "strokes.h" /* mcl_prepare_progress */

#define SIDE MCL_FMNIST_SIDE

/* The label names of the Fashion-MNIST README, in label order. */
static const char *const fmnist_classes[10] = {"T-shirt/top", "Trouser", "Pullover", "Dress",
                                               "Coat",        "Sandal",  "Shirt",    "Sneaker",
                                               "Bag",         "Ankle boot"};

/* a message into the caller's error buffer (status.h) */
#define set_err(err, len, ...) ((void)mcl_errbuf((err), (len), MCL_OK, __VA_ARGS__))

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static int fmt_path(char *out, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int r = vsnprintf(out, cap, fmt, ap);
    va_end(ap);
    return r < 0 || (size_t)r >= cap ? -1 : 0;
}

/* Read one images/labels pair and check it: images N×28×28 ubyte, labels N ubyte in 0..9. */
static mcl_status read_part(const char *dir, const char *part, int64_t want_n, mcl_idx *im,
                            mcl_idx *lb, char *err, size_t len)
{
    char ip[4096], lp[4096];
    if (fmt_path(ip, sizeof ip, "%s/%s-images-idx3-ubyte.gz", dir, part) != 0 ||
        fmt_path(lp, sizeof lp, "%s/%s-labels-idx1-ubyte.gz", dir, part) != 0) {
        set_err(err, len, "%s: path too long", dir);
        return MCL_ERR_INVALID;
    }
    mcl_status st = mcl_idx_read(ip, 0, im, err, len);
    if (st != MCL_OK) return st;
    st = mcl_idx_expect(im, ip, "images", MCL_IDX_UBYTE, 3, want_n, err, len);
    if (st == MCL_OK && (im->dims[1] != SIDE || im->dims[2] != SIDE)) {
        set_err(err, len, "%s: images are %lldx%lld, Fashion-MNIST has 28x28", ip,
                (long long)im->dims[1], (long long)im->dims[2]);
        st = MCL_ERR_FORMAT;
    }
    if (st == MCL_OK) st = mcl_idx_read(lp, 0, lb, err, len);
    if (st == MCL_OK) st = mcl_idx_expect(lb, lp, "labels", MCL_IDX_UBYTE, 1, want_n, err, len);
    if (st == MCL_OK) {
        const uint8_t *l = lb->data;
        for (int64_t i = 0; i < want_n; i++)
            if (l[i] > 9) {
                set_err(err, len, "%s: label %lld is %d (Fashion-MNIST has classes 0..9)", lp,
                        (long long)i, l[i]);
                st = MCL_ERR_FORMAT;
                break;
            }
    }
    return st;
}

mcl_status mcl_fmnist_prepare(const char *data_dir, const char *src_dir, mcl_fmnist_stats *stats,
                              char *err, size_t len)
{
    if (!src_dir) src_dir = MCL_FMNIST_DIR;
    static const char *const names[4] = {"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
                                         "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"};
    for (int i = 0; i < 4; i++) {
        char p[4096];
        if (fmt_path(p, sizeof p, "%s/%s", src_dir, names[i]) != 0) {
            set_err(err, len, "%s: path too long", src_dir);
            return MCL_ERR_INVALID;
        }
        if (access(p, R_OK) != 0) {
            set_err(err, len,
                    "Fashion-MNIST not found: %s is missing; install the Debian package: "
                    "apt-get install dataset-fashion-mnist",
                    p);
            return MCL_ERR_IO;
        }
    }
    enum { NTRAIN = 60000, NTEST = 10000, N = NTRAIN + NTEST };
    mcl_idx tri, trl, tei, tel;
    memset(&tri, 0, sizeof tri);
    memset(&trl, 0, sizeof trl);
    memset(&tei, 0, sizeof tei);
    memset(&tel, 0, sizeof tel);
    uint8_t *images = NULL, *split = NULL;
    int32_t *labels = NULL;
    mcl_status st = read_part(src_dir, "train", NTRAIN, &tri, &trl, err, len);
    if (st == MCL_OK) st = read_part(src_dir, "t10k", NTEST, &tei, &tel, err, len);
    if (st == MCL_OK) {
        images = malloc((size_t)N * MCL_IMG * MCL_IMG);
        labels = malloc(sizeof *labels * N);
        split = malloc(N);
        if (!images || !labels || !split) {
            set_err(err, len, "fmnist: out of memory");
            st = MCL_ERR_OOM;
        }
    }
    if (st == MCL_OK) {
        const uint8_t *src[2] = {tri.data, tei.data}, *lab[2] = {trl.data, tel.data};
        const int64_t cnt[2] = {NTRAIN, NTEST};
        int64_t j = 0;
        for (int part = 0; part < 2; part++)
            for (int64_t i = 0; i < cnt[part]; i++, j++) {
                /* 28 -> 32: 2 pixels of background on every side */
                mcl_image_fit32(src[part] + (size_t)i * SIDE * SIDE, SIDE, SIDE,
                                images + (size_t)j * MCL_IMG * MCL_IMG);
                labels[j] = lab[part][i];
                split[j] = part == 0 ? 1 : 3;
                if ((j + 1) % 5000 == 0 || j + 1 == N) mcl_prepare_progress(j + 1, N);
            }
        if (stats) {
            memset(stats, 0, sizeof *stats);
            mcl_pixel_stats(tri.data, NTRAIN, SIDE * SIDE, NULL, &stats->mean28, &stats->std28);
            mcl_pixel_stats(images, NTRAIN, MCL_IMG * MCL_IMG, NULL, &stats->mean32,
                            &stats->std32);
            stats->n_train = NTRAIN;
            stats->n_test = NTEST;
        }
        mcl_class_info classes[10];
        for (int c = 0; c < 10; c++) {
            classes[c].split = MCL_SPLIT_ALL;
            snprintf(classes[c].text, sizeof classes[c].text, "%s", fmnist_classes[c]);
        }
        char source[512];
        if (fmt_path(source, sizeof source,
                     "Debian package dataset-fashion-mnist (%s); Xiao, Rasul & Vollgraf 2017",
                     src_dir) != 0)
            snprintf(source, sizeof source, "Debian package dataset-fashion-mnist");
        mcl_prepared p = {0};
        p.name = "fmnist";
        p.source = source;
        p.licence = "MIT";
        p.n = N;
        p.images = images;
        p.labels = labels;
        p.example_split = split;
        p.n_classes = 10;
        p.classes = classes;
        st = mcl_prepared_write(data_dir, &p, err, len);
    }
    mcl_idx_free(&tri);
    mcl_idx_free(&trl);
    mcl_idx_free(&tei);
    mcl_idx_free(&tel);
    free(images);
    free(labels);
    free(split);
    return st;
}
