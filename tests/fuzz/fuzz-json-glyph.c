/* fuzz-json-glyph.c — libFuzzer harness for the JSON glyph parsers (src/data/prepare/strokes.c):
 * the first byte picks hanzi-writer medians (0), a kanjidraw stroke array (1) or a whole
 * kanjidraw data.json (2); accepted glyphs are rendered.
 *
 * Built by `configure --enable-fuzzing` (clang) as tests/fuzz/fuzz-json-glyph, or by hand:
 *   clang -std=c11 -g -O1 -ffp-contract=off -fsanitize=fuzzer,address,undefined \
 *     -fno-sanitize-recover=all -Isrc/common -Isrc/data -Isrc/data/prepare tests/fuzz/fuzz-json-glyph.c \
 *     src/data/{dataset,idx,png_io,sha256}.c src/data/prepare/{strokes,render}.c src/common/status.c \
 *     src/common/rng.c -lcjson -lpng -lz -lm -o fuzz-json-glyph
 *   ./fuzz-json-glyph -max_total_time=60 [CORPUS_DIR]
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "strokes.h"

mcl_status mcl_glyph_from_json(const char *json, size_t n, const char *format, mcl_glyph *g,
                               char *err, size_t len);
void mcl_glyph_clear(mcl_glyph *g);
mcl_status mcl_kanji_parse_buffer(const char *buf, size_t n, int max_strokes, mcl_strokeset **out,
                                  char *err, size_t len);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    int mode = data[0] % 3;
    const char *json = (const char *)data + 1;
    size_t n = size - 1;
    char err[256] = "";
    uint8_t img[MCL_IMG * MCL_IMG];
    if (mode < 2) {
        mcl_glyph g;
        mcl_status st =
            mcl_glyph_from_json(json, n, mode == 0 ? "hanzi" : "kanji", &g, err, sizeof err);
        if (st == MCL_OK) {
            mcl_render_glyph(&g, 7, 1, 0, 1, img);
            mcl_render_glyph(&g, 7, 1, 3, 0, img);
            mcl_glyph_clear(&g);
        } else if (g.pts || g.stroke_start || !err[0]) {
            __builtin_trap();
        }
    } else {
        mcl_strokeset *s = NULL;
        mcl_status st = mcl_kanji_parse_buffer(json, n, 0, &s, err, sizeof err);
        if (st == MCL_OK) {
            for (int i = 0; i < s->n && i < 4; i++)
                mcl_render_glyph(&s->glyphs[i], 7, i, 2, 0, img);
            mcl_strokeset_free(s);
        } else if (s || !err[0]) {
            __builtin_trap();
        }
    }
    return 0;
}
