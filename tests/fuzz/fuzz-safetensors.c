/* fuzz-safetensors.c — libFuzzer harness for the safetensors reader (src/common/safetensors.c):
 * any input is parsed; an accepted one is written again (all F32) and must parse back to the
 * same names, shapes and value bits.
 *
 * Built by `configure --enable-fuzzing` (clang) as tests/fuzz/fuzz-safetensors, or by hand:
 *   clang -std=c11 -g -O1 -ffp-contract=off -fsanitize=fuzzer,address,undefined \
 *     -fno-sanitize-recover=all -Isrc/common tests/fuzz/fuzz-safetensors.c src/common/safetensors.c \
 *     src/common/util.c src/common/status.c -lcjson -lm -o fuzz-safetensors
 *   ./fuzz-safetensors -max_total_time=60 [CORPUS_DIR]
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    mcl_safetensors *s = NULL, *r = NULL;
    char err[512];
    if (mcl_st_parse(data, size, "fuzz", &s, err, sizeof err) != MCL_OK) return 0;
    unsigned char *buf = NULL;
    size_t n = 0;
    if (mcl_st_serialize(s, &buf, &n, err, sizeof err) == MCL_OK) {
        if (mcl_st_parse(buf, n, "again", &r, err, sizeof err) != MCL_OK || r->n != s->n) abort();
        for (int i = 0; i < s->n; i++) {
            const mcl_st_tensor *a = &s->t[i], *b = mcl_st_find(r, a->name);
            if (!b || b->numel != a->numel || b->ndim != a->ndim ||
                memcmp(a->shape, b->shape, sizeof a->shape) != 0 ||
                (a->numel && memcmp(a->data, b->data, (size_t)a->numel * sizeof(float)) != 0))
                abort();
        }
        mcl_st_free(r);
        free(buf);
    }
    mcl_st_free(s);
    return 0;
}
