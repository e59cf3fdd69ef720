/* acl_io.c — ACL model config as text, and checkpoints of the model (see acl.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acl.h"
#include "keys.h"
#include "util.h"

#define fail mcl_errbuf

/* ------------------------------------------------------------------ config text */

/* The model config's keys (also `model.*` of the training config). The defaults are those of
 * mcl_acl_config_default (the paper's sizes). */
#define C mcl_acl_config
const mcl_key mcl_acl_config_key_table[MCL_ACL_CONFIG_N_KEYS] = {
    MCL_KEY_INT("n_way", C, n_way, 1, 1 << 20, "5", "output classes; the label input has n_way + 1 entries"),
    MCL_KEY_INT("hidden", C, hidden, 1, 1 << 20, "256", "model width"),
    MCL_KEY_INT("heads", C, heads, 1, 1 << 16, "16", "SRWM heads (hidden % heads == 0)"),
    MCL_KEY_INT("layers", C, layers, 0, 1024, "2", "[SRWM layer, feed-forward block] pairs"),
    MCL_KEY_INT("ff_mult", C, ff_mult, 1, 64, "2", "feed-forward inner width = ff_mult * hidden"),
    MCL_KEY_FLOAT_OPEN("dropout", C, dropout, 0.0, 1.0, "0.1", "drop probability everywhere"),
    MCL_KEY_INT("conv_channels", C, conv_channels, 1, 4096, "32", "Conv-4 channels"),
    MCL_KEY_INT("image_size", C, image_size, 16, 4096, "32", "image side S (>= 16; any, e.g. 28: pooling floors)"),
    MCL_KEY_INT("in_channels", C, in_channels, 1, 64, "1", "image channels"),
    MCL_KEY_ENUM("feature_norm", C, feature_norm, MCL_ACL_FEATNORM_CHOICES, "none",
                 "normalization of the Conv-4 features (none = the paper)"),
    MCL_KEY_ENUM("feature_stats", C, feature_stats, MCL_ACL_FEATSTATS_CHOICES, "running",
                 "feature_norm batch statistics: running (evaluation: running estimates), call "
                 "(the call's images) or context (each sequence's own context examples)"),
    MCL_KEY_U64("seed", C, seed, "1", "initialization seed (one Philox stream per tensor)"),
};
#undef C
#define keys mcl_acl_config_key_table
#define N_KEYS MCL_ACL_CONFIG_N_KEYS
_Static_assert(sizeof mcl_acl_config_key_table / sizeof mcl_acl_config_key_table[0] == MCL_ACL_CONFIG_N_KEYS,
               "MCL_ACL_CONFIG_N_KEYS");

char *mcl_acl_config_to_text(const mcl_acl_config *cfg)
{
    return cfg ? mcl_keys_to_text(keys, N_KEYS, cfg, NULL) : NULL;
}

mcl_status mcl_acl_config_set(mcl_acl_config *cfg, const char *key, const char *value,
                              char *err, size_t err_len)
{
    if (!cfg || !key || !value) return fail(err, err_len, MCL_ERR_NULL, "NULL argument");
    if (!mcl_keys_find(keys, N_KEYS, key)) {
        char known[512] = "";
        for (int i = 0; i < N_KEYS; i++) {
            strncat(known, keys[i].name, sizeof known - strlen(known) - 1);
            if (i + 1 < N_KEYS) strncat(known, ", ", sizeof known - strlen(known) - 1);
        }
        return fail(err, err_len, MCL_ERR_INVALID, "unknown ACL model key '%s' (known: %s)", key,
                    known);
    }
    return mcl_keys_set(keys, N_KEYS, cfg, key, value, err, err_len);
}

static mcl_status set_key(void *cfg, const char *key, const char *value, char *msg, size_t n)
{
    return mcl_acl_config_set(cfg, key, value, msg, n);
}

mcl_status mcl_acl_config_parse(mcl_acl_config *cfg, const char *text, char *err,
                                size_t err_len)
{
    if (!cfg || !text) return fail(err, err_len, MCL_ERR_NULL, "NULL argument");
    mcl_acl_config c = *cfg; /* all or nothing */
    mcl_status st = mcl_kv_parse(text, "config", set_key, &c, err, err_len);
    if (st == MCL_OK) *cfg = c;
    return st;
}

/* The first key whose value differs, or NULL. */
static const char *config_diff(const mcl_acl_config *a, const mcl_acl_config *b)
{
    for (int i = 0; i < N_KEYS; i++)
        if (mcl_key_differs(&keys[i], a, b)) return keys[i].name;
    return NULL;
}

/* ------------------------------------------------------------------ checkpoints */

mcl_status mcl_acl_save(mcl_acl *m, const char *path, const mcl_optim *optim,
                        const mcl_ckpt_counter *counters, int n_counters, char *err,
                        size_t err_len)
{
    if (!m || !path) return fail(err, err_len, MCL_ERR_NULL, "mcl_acl_save: NULL argument");
    char *text = mcl_acl_config_to_text(&m->cfg);
    if (!text) return fail(err, err_len, MCL_ERR_OOM, "mcl_acl_save: out of memory");
    mcl_ckpt_save_desc d;
    memset(&d, 0, sizeof d);
    d.model_kind = MCL_ACL_CKPT_KIND;
    d.config = text;
    d.params = m->params;
    d.optim = optim;
    d.rng.seed = mcl_ctx_seed(m->ctx);
    d.rng.counter = mcl_ctx_stream(m->ctx);
    d.counters = counters;
    d.n_counters = n_counters;
    mcl_status st = mcl_ckpt_save(m->ctx, path, &d, err, err_len);
    free(text);
    return st;
}

/* The config a checkpoint was written with (header and config sections only). */
static mcl_status file_config(const char *path, mcl_acl_config *cfg, uint64_t *params_len,
                              char *err, size_t err_len)
{
    mcl_ckpt_info info;
    mcl_status st = mcl_ckpt_read_info(path, &info, err, err_len);
    if (st == MCL_OK && strcmp(info.model_kind, MCL_ACL_CKPT_KIND) != 0)
        st = fail(err, err_len, MCL_ERR_INVALID, "checkpoint '%s': model kind '%s' (expected '%s')",
                  path, info.model_kind, MCL_ACL_CKPT_KIND);
    if (st == MCL_OK) {
        char e2[256];
        mcl_acl_config_default(cfg);
        st = mcl_acl_config_parse(cfg, info.config, e2, sizeof e2);
        if (st != MCL_OK) fail(err, err_len, st, "checkpoint '%s': config: %s", path, e2);
    }
    if (params_len) *params_len = info.params_len;
    mcl_ckpt_info_free(&info);
    return st;
}

mcl_status mcl_acl_load(mcl_acl *m, const char *path, mcl_optim *optim, int restore_rng,
                        mcl_ckpt_info *info, char *err, size_t err_len)
{
    if (info) memset(info, 0, sizeof *info);
    if (!m || !path) return fail(err, err_len, MCL_ERR_NULL, "mcl_acl_load: NULL argument");
    mcl_acl_config fc;
    mcl_status st = file_config(path, &fc, NULL, err, err_len);
    if (st != MCL_OK) return st;
    const char *diff = config_diff(&fc, &m->cfg);
    if (diff)
        return fail(err, err_len, MCL_ERR_INVALID,
                    "checkpoint '%s': config key '%s' differs from the model's", path, diff);
    mcl_ckpt_info local;
    mcl_ckpt_info *in = info ? info : &local;
    st = mcl_ckpt_load(m->ctx, path, MCL_ACL_CKPT_KIND, m->params, optim, in, err, err_len);
    if (st == MCL_OK && restore_rng) {
        mcl_ctx_set_seed(m->ctx, in->rng.seed);
        mcl_ctx_set_stream(m->ctx, in->rng.counter);
    }
    if (!info) mcl_ckpt_info_free(&local);
    return st;
}

mcl_status mcl_acl_open(mcl_ctx *ctx, const char *path, mcl_acl **out, char *err,
                        size_t err_len)
{
    if (out) *out = NULL;
    if (!ctx || !path || !out) return fail(err, err_len, MCL_ERR_NULL, "mcl_acl_open: NULL argument");
    mcl_acl_config cfg;
    uint64_t params_len = 0;
    mcl_status st = file_config(path, &cfg, &params_len, err, err_len);
    if (st != MCL_OK) return st;
    /* The file's own config is untrusted: the parameters it asks for must be in the file
     * (each float takes 4 bytes of the params section) and fit the memory budget, both
     * checked before the model is built. */
    const uint64_t need = mcl_acl_param_bytes(&cfg);
    if (params_len < need)
        return fail(err, err_len, MCL_ERR_FORMAT,
                    "checkpoint '%s': its config needs %" PRIu64 " parameters (%" PRIu64
                    " bytes) but its params section holds %" PRIu64 " bytes: corrupt file",
                    path, mcl_acl_param_count(&cfg), need, params_len);
    char e2[512];
    if (mcl_check_budget(need, "its model's parameters", e2, sizeof e2) != MCL_OK)
        return fail(err, err_len, MCL_ERR_OOM, "checkpoint '%s': %s", path, e2);
    mcl_acl *m = mcl_acl_create(ctx, &cfg);
    if (!m) {
        st = mcl_ctx_status(ctx) != MCL_OK ? mcl_ctx_status(ctx) : MCL_ERR_INVALID;
        return fail(err, err_len, st, "checkpoint '%s': %s", path, mcl_ctx_error(ctx));
    }
    st = mcl_ckpt_load(ctx, path, MCL_ACL_CKPT_KIND, m->params, NULL, NULL, err, err_len);
    if (st != MCL_OK) {
        mcl_acl_free(m);
        return st;
    }
    *out = m;
    return MCL_OK;
}
