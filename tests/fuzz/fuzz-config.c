/* fuzz-config.c — libFuzzer harness for the config parsers: mcl_run_cfg_parse with the ACL
 * family (the training config: family keys, task.*, data.*, train.*; src/learn/train.c and
 * src/common/keys.c) and mcl_acl_config_parse (the model config in checkpoints;
 * src/models/acl/acl_io.c). The input is text (NUL-terminated copy). Checks:
 *   - a failed parse leaves a message and changes nothing (all or nothing);
 *   - an accepted config prints (mcl_run_cfg_to_text) to text that parses back to the same
 *     text (lists included: data.domains = idx:A,B keeps its two files);
 *   - mcl_run_cfg_check may refuse it but must say why.
 *
 * Built by `configure CC=clang --enable-fuzzing` (`make fuzz`) as tests/fuzz/fuzz-config,
 * linked with the whole library compiled for fuzzing (tests/fuzz/libmetacl-fuzz.a).
 *   tests/fuzz/fuzz-config -max_total_time=60 CORPUS_DIR   (seeds: data/configs/ *.conf)
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "acl.h"
#include "train.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > (1u << 16)) return 0;
    char *text = malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = 0;
    char err[2048];

    /* the model config of a checkpoint */
    mcl_acl_config a, a0;
    mcl_acl_config_default(&a);
    a0 = a;
    err[0] = 0;
    if (mcl_acl_config_parse(&a, text, err, sizeof err) != MCL_OK) {
        if (!err[0] || memcmp(&a, &a0, sizeof a)) abort();
    }

    /* the training config of the ACL family */
    const mcl_family *fam = mcl_family_find("acl");
    if (!fam) abort();
    mcl_run_cfg c;
    if (mcl_run_cfg_init(&c, fam, err, sizeof err) != MCL_OK) abort();
    char *before = mcl_run_cfg_to_text(&c);
    err[0] = 0;
    if (mcl_run_cfg_parse(&c, text, "fuzz", err, sizeof err) != MCL_OK) {
        char *after = mcl_run_cfg_to_text(&c);
        if (!err[0] || !before || !after || strcmp(before, after)) abort(); /* all or nothing */
        free(after);
    } else {
        err[0] = 0;
        if (mcl_run_cfg_check(&c, err, sizeof err) != MCL_OK && !err[0]) abort();
        char *t1 = mcl_run_cfg_to_text(&c);
        mcl_run_cfg d;
        if (!t1 || mcl_run_cfg_init(&d, fam, err, sizeof err) != MCL_OK) abort();
        if (mcl_run_cfg_parse(&d, t1, "round trip", err, sizeof err) != MCL_OK) abort();
        char *t2 = mcl_run_cfg_to_text(&d);
        if (!t2 || strcmp(t1, t2)) abort(); /* printed text reads back the same */
        free(t1);
        free(t2);
        mcl_run_cfg_free(&d);
    }
    free(before);
    mcl_run_cfg_free(&c);
    free(text);
    return 0;
}
