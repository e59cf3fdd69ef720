/* fuzz-jhf.c — libFuzzer harness for the Hershey .jhf parser (src/data/prepare/strokes.c),
 * and the renderer on whatever glyphs it accepts.
 *
 * Built by `configure --enable-fuzzing` (clang) as tests/fuzz/fuzz-jhf, or by hand:
 *   clang -std=c11 -g -O1 -ffp-contract=off -fsanitize=fuzzer,address,undefined \
 *     -fno-sanitize-recover=all -Isrc/common -Isrc/data -Isrc/data/prepare tests/fuzz/fuzz-jhf.c \
 *     src/data/{dataset,idx,png_io,sha256}.c src/data/prepare/{strokes,render}.c src/common/status.c \
 *     src/common/rng.c -lcjson -lpng -lz -lm -o fuzz-jhf
 *   ./fuzz-jhf -max_total_time=60 [CORPUS_DIR]   (e.g. a copy of /usr/share/hershey-fonts)
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "strokes.h"

mcl_status mcl_jhf_parse_buffer(const char *buf, size_t n, const char *fname, mcl_strokeset **out,
                                char *err, size_t len);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[256];
    mcl_strokeset *s = NULL;
    mcl_status st = mcl_jhf_parse_buffer((const char *)data, size, "fuzz.jhf", &s, err, sizeof err);
    if (st == MCL_OK) {
        uint8_t img[MCL_IMG * MCL_IMG];
        for (int i = 0; i < s->n && i < 4; i++) {
            mcl_render_glyph(&s->glyphs[i], 1, i, 0, 1, img);
            mcl_render_glyph(&s->glyphs[i], 1, i, 1, 0, img);
        }
        mcl_strokeset_free(s);
    } else if (s != NULL || err[0] == '\0') {
        __builtin_trap(); /* an error must come with a message and no output */
    }
    return 0;
}
