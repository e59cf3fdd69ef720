/* fuzz-png.c — libFuzzer harness for the PNG reader (src/data/png_io.c), from memory.
 * Whatever it accepts is checked for consistency and goes through the 32×32 fitting rule.
 *
 * Built by `configure --enable-fuzzing` (clang) as tests/fuzz/fuzz-png, or by hand:
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
 *     -Isrc/common -Isrc/data -Isrc/data/prepare tests/fuzz/fuzz-png.c src/data/{idx,dataset,png_io,sha256}.c \
 *     src/common/status.c -lpng -lz -lm -o fuzz-png
 *   ./fuzz-png -max_total_time=60 CORPUS_DIR    (e.g. a copy of data/fixtures/tiny-pngdir/ * / *.png)
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dataset_io.h"
#include "png_io.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[512];
    uint8_t *g = (uint8_t *)err;
    int w = -1, h = -1;
    /* at most 2^20 pixels per image: keeps each input fast */
    mcl_status st = mcl_png_read_mem(data, size, "fuzz", (size_t)1 << 20, &g, &w, &h, err,
                                     sizeof err);
    if (st != MCL_OK) {
        if (g || w || h || !err[0]) abort(); /* errors leave nothing behind, and say why */
        return 0;
    }
    if (!g || w < 1 || h < 1 || (size_t)w * (size_t)h > ((size_t)1 << 20)) abort();
    volatile uint8_t sum = 0;
    for (size_t i = 0; i < (size_t)w * (size_t)h; i++) sum ^= g[i];
    (void)sum;
    uint8_t out[32 * 32];
    mcl_image_fit32(g, h, w, out);
    free(g);
    return 0;
}
