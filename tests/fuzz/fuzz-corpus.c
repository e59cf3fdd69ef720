/* fuzz-corpus.c — libFuzzer harness for the reader of a prepared text corpus (src/data/text.c:
 * what `data prepare text` and `data prepare txt:FILE,...` write, and `train lm`, `eval lm`,
 * `sample lm` and `data info` read). The input is a corpus directory:
 *   bytes up to the first NUL   meta.txt ("kind = text", "format = 1", "domains = a,b",
 *                               "a.train = N", ...: every key of the format)
 *   the rest                    cut into 6 equal pieces: a.train a.valid a.test b.train
 *                               b.valid b.test (so a meta.txt naming domains a and b with the
 *                               right sizes opens)
 * mcl_text_open must refuse with a message or give a consistent corpus: every domain's three
 * parts add up to its bytes, each valid UTF-8; then a stream of the valid parts is built and
 * its blocks checked (starts increasing, inside the stream, domain indices in range).
 * The rest is also the one file of `data prepare txt:FILE` (mcl_text_prepare_user: UTF-8 check
 * with line and column, cap, split, write into <tmp>/u): the corpus it writes must open with
 * its SHA-256 sums verified, or it is refused with a message.
 *
 * Built by `configure --enable-fuzzing` (clang) as tests/fuzz/fuzz-corpus (the rule of the
 * harnesses that link FUZZ_LIBSRC). Seed: a two-domain corpus, written by the fuzz-run rule.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "text.h"
#include "textprep.h"
#include "utf8.h"
#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[64];
static void prepare_user(const uint8_t *p, size_t n);

static int put(const char *name, const uint8_t *p, size_t n)
{
    char path[128];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb"); /* a private temporary directory of the harness */
    if (!f) return -1;
    size_t w = n ? fwrite(p, 1, n, f) : 0;
    return fclose(f) == 0 && w == n ? 0 : -1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const files[6] = {"a.train", "a.valid", "a.test", "b.train", "b.valid", "b.test"};
    if (!dir[0]) {
        snprintf(dir, sizeof dir, "/tmp/fuzz-corpus-XXXXXX");
        if (!mkdtemp(dir)) abort();
    }
    const uint8_t *nul = memchr(data, 0, size);
    const size_t mlen = nul ? (size_t)(nul - data) : size;
    const uint8_t *rest = nul ? nul + 1 : data + size;
    const size_t rlen = nul ? size - mlen - 1 : 0;
    if (put("meta.txt", data, mlen) != 0) abort();
    for (int i = 0; i < 6; i++)
        if (put(files[i], rest + rlen * (size_t)i / 6, rlen * (size_t)(i + 1) / 6 - rlen * (size_t)i / 6) != 0) abort();

    prepare_user(rest, rlen);
    char err[1024] = "";
    mcl_text_corpus *c = NULL;
    mcl_status st = mcl_text_open(dir, 0, &c, err, sizeof err);
    if (st != MCL_OK) {
        if (c || !err[0]) __builtin_trap(); /* a refusal leaves nothing and says why */
        return 0;
    }
    const int nd = mcl_text_domains(c);
    if (nd < 1 || nd > MCL_TEXT_MAX_DOMAINS) __builtin_trap();
    static const char *const parts[3] = {"train", "valid", "test"};
    for (int d = 0; d < nd; d++) {
        if (!mcl_text_domain_name(c, d) || mcl_text_domain_index(c, mcl_text_domain_name(c, d)) != d)
            __builtin_trap();
        for (int p = 0; p < 3; p++) {
            const uint8_t *b = NULL;
            int64_t n = -1;
            if (mcl_text_split(c, d, parts[p], &b, &n) != MCL_OK || n < 0 || (n && !b)) __builtin_trap();
            if (!mcl_utf8_valid(b, (size_t)n, NULL)) __builtin_trap();
        }
    }
    mcl_text_stream *s = NULL;
    if (mcl_text_stream_new(c, "valid", NULL, 0, 16, 1, 1 << 16, &s, err, sizeof err) == MCL_OK) {
        const int64_t n = mcl_text_stream_len(s);
        int64_t last = -1;
        for (int i = 0; i < mcl_text_stream_blocks(s); i++) {
            const int64_t at = mcl_text_stream_block_start(s, i);
            const int dom = mcl_text_stream_block_domain(s, i);
            if (at <= last || at < 0 || at > n || dom < 0 || dom >= nd) __builtin_trap();
            last = at;
        }
        mcl_text_stream_free(s);
    } else if (!err[0]) {
        __builtin_trap();
    }
    mcl_text_close(c);
    return 0;
}

/* txt:FILE: the rest as a user file, prepared (mcl_text_prepare_user: UTF-8 check, cap,
 * split, write) into a corpus that must then open and verify, or be refused with a message. */
static void prepare_user(const uint8_t *p, size_t n)
{
    char path[128], err[1024] = "";
    snprintf(path, sizeof path, "%s/u.txt", dir);
    FILE *f = fopen(path, "wb");
    if (!f || (n && fwrite(p, 1, n, f) != n) || fclose(f) != 0) abort();
    const char *files[1] = {path};
    mcl_text_prepare_opts o;
    memset(&o, 0, sizeof o);
    o.data_dir = dir;
    o.name = "u";
    o.cap_bytes = 4096;
    if (mcl_text_prepare_user(&o, files, 1, err, sizeof err) != MCL_OK) {
        if (!err[0]) __builtin_trap();
        return;
    }
    char cdir[128];
    snprintf(cdir, sizeof cdir, "%s/u", dir);
    mcl_text_corpus *c = NULL;
    if (mcl_text_open(cdir, MCL_TEXT_VERIFY, &c, err, sizeof err) != MCL_OK) __builtin_trap(); /* it wrote it */
    if (mcl_text_domains(c) != 1) __builtin_trap();
    mcl_text_close(c);
}
