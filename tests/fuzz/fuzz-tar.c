/* fuzz-tar.c — libFuzzer harness for the ustar reader (src/data/prepare/strokes.c); members
 * named *.json go on to the hanzi glyph parser, as in the real loader.
 *
 * Built by `configure --enable-fuzzing` (clang) as tests/fuzz/fuzz-tar, or by hand:
 *   clang -std=c11 -g -O1 -ffp-contract=off -fsanitize=fuzzer,address,undefined \
 *     -fno-sanitize-recover=all -Isrc/common -Isrc/data -Isrc/data/prepare tests/fuzz/fuzz-tar.c \
 *     src/data/{dataset,idx,png_io,sha256}.c src/data/prepare/{strokes,render}.c src/common/status.c \
 *     src/common/rng.c -lcjson -lpng -lz -lm -o fuzz-tar
 *   ./fuzz-tar -max_total_time=60 [CORPUS_DIR]   (e.g. a few small .tar files)
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "strokes.h"

typedef mcl_status (*mcl_tar_file_fn)(void *user, const char *name, const uint8_t *data,
                                      size_t size, char *err, size_t len);
mcl_status mcl_tar_parse_buffer(const uint8_t *buf, size_t n, mcl_tar_file_fn fn, void *user,
                                char *err, size_t len);
mcl_status mcl_glyph_from_json(const char *json, size_t n, const char *format, mcl_glyph *g,
                               char *err, size_t len);
void mcl_glyph_clear(mcl_glyph *g);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static mcl_status member(void *user, const char *name, const uint8_t *data, size_t size, char *err,
                         size_t len)
{
    size_t *count = user;
    (*count)++;
    if (data[size] != 0) __builtin_trap(); /* the reader NUL-terminates member data */
    size_t nl = strlen(name);
    if (nl > 5 && strcmp(name + nl - 5, ".json") == 0) {
        mcl_glyph g;
        if (mcl_glyph_from_json((const char *)data, size, "hanzi", &g, err, len) == MCL_OK)
            mcl_glyph_clear(&g);
    }
    return MCL_OK;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[256] = "";
    size_t count = 0;
    mcl_status st = mcl_tar_parse_buffer(data, size, member, &count, err, sizeof err);
    if (st != MCL_OK && !err[0]) __builtin_trap();
    return 0;
}
