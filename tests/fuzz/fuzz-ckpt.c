/* fuzz-ckpt.c — libFuzzer harness for the checkpoint reader (src/common/checkpoint.c) and the
 * ACL model loader on top of it (src/models/acl/acl_io.c). The input is written to a temporary
 * file (the reader takes a path) with the CRC32 of every section made right (fix_crcs), then:
 *   mcl_ckpt_read_info: header, header section and config section; on success the info must
 *     be consistent (config NUL-terminated, config_len == strlen(config)); on failure empty
 *     and the message non-empty;
 *   when the file is an "acl" checkpoint whose config parses into a small model: mcl_acl_open
 *     (builds the model from the config, loads every section) and mcl_acl_load on that model
 *     on a reference context; errors must leave *out NULL and say why.
 * Small: hidden <= 64, layers <= 2, ff_mult <= 4, conv_channels <= 8, image_size <= 32,
 * in_channels <= 3, n_way <= 10 (a big config would only measure allocation).
 *   any other kind the family table knows (lm, smn, oct): the family's ckpt_open (what `ckpt
 *     info` and `ckpt export` run: the config parsed and checked, its tensors against the
 *     params section and the budget, the model and its state built, every section read) under a
 *     memory budget of 8 MiB (mcl_set_memory_limit), so a big config is refused, not
 *     allocated; a failure must leave no model and say why. Seeds: tests/fuzz/seed-{lm,smn,oct}.ckpt.
 *
 * Built by `configure CC=clang --enable-fuzzing` (`make fuzz`) as tests/fuzz/fuzz-ckpt, linked
 * with the whole library compiled for fuzzing (tests/fuzz/libmetacl-fuzz.a).
 *   tests/fuzz/fuzz-ckpt -max_total_time=60 CORPUS_DIR   (seed: tests/fuzz/seed-tiny.ckpt)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "acl.h"
#include "checkpoint.h"
#include "tensor.h"
#include "train.h"
#include "util.h"

#include <zlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char path[64];
static mcl_ctx *ctx;

static void cleanup(void)
{
    if (path[0]) remove(path);
    mcl_ctx_free(ctx);
}

static int small(const mcl_acl_config *c)
{
    return c->hidden >= 1 && c->hidden <= 64 && c->layers >= 1 && c->layers <= 2 && c->ff_mult >= 1 &&
           c->ff_mult <= 4 && c->conv_channels >= 1 && c->conv_channels <= 8 && c->image_size >= 1 &&
           c->image_size <= 32 && c->in_channels >= 1 && c->in_channels <= 3 && c->n_way >= 1 &&
           c->n_way <= 10;
}

static uint32_t rd32(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }

/* Sections after the 12-byte file header: tag u32, length u64, payload, crc u32 of the 12 +
 * length bytes before it (checkpoint.h); each whole section gets its right CRC. */
static void fix_crcs(uint8_t *b, size_t n)
{
    for (size_t at = 12; at + 12 <= n;) {
        const uint64_t len = (uint64_t)rd32(b + at + 4) | (uint64_t)rd32(b + at + 8) << 32;
        if (len > n - at - 12 || n - at - 12 - len < 4) return;
        const uint32_t c = (uint32_t)crc32(0, b + at, (uInt)(12 + len));
        for (int j = 0; j < 4; j++) b[at + 12 + len + (size_t)j] = (uint8_t)(c >> (8 * j));
        at += 12 + (size_t)len + 4;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!path[0]) {
        const char *t = getenv("TMPDIR");
        snprintf(path, sizeof path, "%.40s/fuzz-ckpt.%ld", t && *t && strlen(t) < 40 ? t : "/tmp", (long)getpid());
        char e[256];
        if (mcl_ctx_create(&ctx, MCL_BACKEND_REF, NULL, e, sizeof e) != MCL_OK) abort();
        mcl_set_memory_limit((uint64_t)8 << 20);
        atexit(cleanup);
    }
    /* The CRC32 of every section is made right before the file is written: a mutation then
     * reaches the section parsers (config, tensors, optimizer, RNG, counters, and each
     * family's sections), not only the CRC check, which test-checkpoint.c covers. */
    uint8_t *fixed = malloc(size ? size : 1);
    if (!fixed) abort();
    memcpy(fixed, data, size);
    fix_crcs(fixed, size);
    FILE *f = fopen(path, "wb");
    if (!f) abort();
    if (size && fwrite(fixed, 1, size, f) != size) abort();
    if (fclose(f) != 0) abort();
    free(fixed);

    char err[1024] = "";
    mcl_ckpt_info info;
    mcl_status st = mcl_ckpt_read_info(path, &info, err, sizeof err);
    if (st != MCL_OK) {
        if (!err[0] || info.config || info.counters || info.n_counters) abort();
        mcl_ckpt_info_free(&info);
        return 0;
    }
    if (!info.config || strlen(info.config) != info.config_len) abort();
    int acl = !strcmp(info.model_kind, MCL_ACL_CKPT_KIND);
    const mcl_family *fam = mcl_family_find(info.model_kind);
    if (!acl && fam && fam->ckpt_open) { /* the other families, through the table */
        mcl_ckpt_info_free(&info);
        void *model = NULL;
        mcl_params *params = NULL;
        mcl_ckpt_info info3;
        memset(&info3, 0, sizeof info3);
        err[0] = 0;
        st = fam->ckpt_open(ctx, path, &model, &params, &info3, err, sizeof err);
        if (st != MCL_OK && (model || !err[0])) abort();
        if (st == MCL_OK && (!model || !params)) abort();
        if (model) fam->ckpt_close(model);
        mcl_ckpt_info_free(&info3);
        mcl_ctx_reset(ctx);
        mcl_ctx_clear_error(ctx);
        return 0;
    }
    mcl_acl_config cfg;
    mcl_acl_config_default(&cfg);
    char e2[512];
    int ok = acl && mcl_acl_config_parse(&cfg, info.config, e2, sizeof e2) == MCL_OK && small(&cfg);
    mcl_ckpt_info_free(&info);
    if (!ok) return 0;
    mcl_acl *m = NULL;
    err[0] = 0;
    st = mcl_acl_open(ctx, path, &m, err, sizeof err);
    if (st != MCL_OK) {
        if (m || !err[0]) abort();
        mcl_ctx_reset(ctx);
        return 0;
    }
    if (!m) abort();
    mcl_ckpt_info info2;
    memset(&info2, 0, sizeof info2);
    if (mcl_acl_load(m, path, NULL, 1, &info2, err, sizeof err) != MCL_OK) abort(); /* opened = loadable */
    mcl_ckpt_info_free(&info2);
    mcl_acl_free(m);
    mcl_ctx_reset(ctx);
    return 0;
}
