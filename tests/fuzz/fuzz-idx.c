/* fuzz-idx.c — libFuzzer harness for the IDX reader (src/data/idx.c), from memory,
 * plain or gzip. Whatever it accepts is checked for consistency and, when it is a ubyte
 * N×H×W array, its first images go through the 32×32 fitting rule (dataset.c).
 *
 * Built by `configure --enable-fuzzing` (clang) as tests/fuzz/fuzz-idx, or by hand:
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
 *     -Isrc/common -Isrc/data -Isrc/data/prepare tests/fuzz/fuzz-idx.c src/data/{idx,dataset,png_io,sha256}.c \
 *     src/common/status.c -lpng -lz -lm -o fuzz-idx
 *   ./fuzz-idx -max_total_time=60 CORPUS_DIR    (e.g. a copy of data/fixtures/ *.gz)
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dataset_io.h"
#include "idx.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[512];
    mcl_idx x;
    /* a 16 MiB limit keeps gzip bombs and huge headers cheap */
    mcl_status st = mcl_idx_read_mem(data, size, "fuzz", (size_t)1 << 24, &x, err, sizeof err);
    if (st != MCL_OK) {
        if (x.data || x.count || !err[0]) abort(); /* errors leave nothing behind, and say why */
        return 0;
    }
    int64_t count = 1;
    for (int d = 0; d < x.ndim; d++) count *= x.dims[d];
    if (count != x.count || !x.data) abort();
    /* touch every element (ASan checks the allocation size) */
    size_t bytes = (size_t)count * (x.type == MCL_IDX_INT32 ? 4 : 1);
    volatile uint8_t sum = 0;
    for (size_t i = 0; i < bytes; i++) sum ^= ((const uint8_t *)x.data)[i];
    (void)sum;
    if (x.type == MCL_IDX_UBYTE && x.ndim == 3 && x.dims[1] * x.dims[2] <= (1 << 22)) {
        uint8_t out[32 * 32];
        int64_t n = x.dims[0] < 4 ? x.dims[0] : 4;
        for (int64_t i = 0; i < n; i++)
            mcl_image_fit32((const uint8_t *)x.data + (size_t)i * (size_t)(x.dims[1] * x.dims[2]),
                            (int)x.dims[1], (int)x.dims[2], out);
    }
    mcl_idx_expect(&x, "fuzz", "labels", MCL_IDX_INT32, 1, 10, err, sizeof err);
    mcl_idx_free(&x);
    return 0;
}
