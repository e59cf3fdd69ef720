/* fuzz-text.c — libFuzzer harness for the text corpus's extractors (src/data/prepare/text_*.c):
 * the first byte picks one, the rest is its input:
 *   0  an R serialization (mcl_rserial_strings)      1  an R lazy-load database (mcl_rdb_strings)
 *   2  SWORD blocks: the next byte k, then 12·k bytes of block index, then the zlib data
 *      (mcl_sword_blocks), whose output goes through mcl_sword_strip
 *   3  markup (mcl_sword_strip)                       4  UTF-8 repair, cap and split points
 * Every output is checked: what the extractors append is valid UTF-8 where they promise it.
 *
 * Built by `configure --enable-fuzzing` (clang) as tests/fuzz/fuzz-text, or by hand:
 *   clang -std=c11 -g -O1 -ffp-contract=off -fsanitize=fuzzer,address,undefined \
 *     -fno-sanitize-recover=all -Isrc/common -Isrc/data -Isrc/data/prepare tests/fuzz/fuzz-text.c \
 *     src/data/utf8.c src/data/prepare/{text_buf,text_sword,text_rdata}.c src/common/{status,util}.c \
 *     -lz -o fuzz-text
 *   ./fuzz-text -max_total_time=60 [CORPUS_DIR]
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "textprep.h"
#include "utf8.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    char err[512];
    mcl_buf out = {0}, out2 = {0};
    const uint8_t *p = data + 1;
    size_t n = size - 1;
    switch (data[0] % 5) {
    case 0: mcl_rserial_strings(p, n, "fuzz", &out, NULL, err, sizeof err); break;
    case 1: mcl_rdb_strings(p, n, "fuzz", &out, NULL, err, sizeof err); break;
    case 2: {
        if (n < 1) break;
        size_t k = (size_t)p[0] * 12;
        if (k > n - 1) k = n - 1;
        k -= k % 12;
        if (mcl_sword_blocks(p + 1, k, p + 1 + k, n - 1 - k, "fuzz", &out, err, sizeof err) == MCL_OK) {
            mcl_sword_strip(out.p, out.n, &out2);
        }
        break;
    }
    case 3:
        mcl_sword_strip(p, n, &out);
        break;
    case 4: {
        int64_t rep = 0;
        if (mcl_text_clean(p, n, &out, &rep) != MCL_OK) break;
        if (!mcl_utf8_valid(out.p, out.n, NULL)) __builtin_trap();
        size_t cap = out.n / 3 + 1, cut[2];
        if (mcl_text_cap(out.p, out.n, cap, 4, &out2) != MCL_OK) break;
        if (out2.n > cap || !mcl_utf8_valid(out2.p, out2.n, NULL)) __builtin_trap();
        mcl_text_split_points(out2.p, out2.n, cut);
        if (cut[0] > cut[1] || cut[1] > out2.n) __builtin_trap();
        break;
    }
    }
    mcl_buf_free(&out);
    mcl_buf_free(&out2);
    return 0;
}
