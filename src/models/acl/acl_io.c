/* acl_io.c — ACL model config as text, and checkpoints of the model (see acl.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acl.h"

#define fail mcl_errbuf

/* ------------------------------------------------------------------ config text */

typedef enum { K_INT, K_FLOAT, K_U64, K_NORM } key_type;
typedef struct key_desc {
    const char *name;
    key_type type;
    size_t off;
    double lo, hi; /* inclusive range for K_INT (K_FLOAT: [lo, hi)) */
} key_desc;

#define OFF(f) offsetof(mcl_acl_config, f)
static const key_desc keys[] = {
    {"n_way", K_INT, OFF(n_way), 1, 1 << 20},
    {"hidden", K_INT, OFF(hidden), 1, 1 << 20},
    {"heads", K_INT, OFF(heads), 1, 1 << 16},
    {"layers", K_INT, OFF(layers), 0, 1024},
    {"ff_mult", K_INT, OFF(ff_mult), 1, 64},
    {"dropout", K_FLOAT, OFF(dropout), 0.0, 1.0},
    {"conv_channels", K_INT, OFF(conv_channels), 1, 4096},
    {"image_size", K_INT, OFF(image_size), 16, 4096},
    {"in_channels", K_INT, OFF(in_channels), 1, 64},
    {"feature_norm", K_NORM, OFF(feature_norm), 0, 0},
    {"seed", K_U64, OFF(seed), 0, 0},
};
#undef OFF
#define N_KEYS ((int)(sizeof keys / sizeof keys[0]))

static const char *norm_name(int v)
{
    return v == MCL_ACL_FEATNORM_BATCH   ? "batch"
           : v == MCL_ACL_FEATNORM_IMAGE ? "image"
           : v == MCL_ACL_FEATNORM_NONE  ? "none"
                                         : "?";
}

char *mcl_acl_config_to_text(const mcl_acl_config *cfg)
{
    if (!cfg) return NULL;
    size_t cap = 1024, len = 0;
    char *s = malloc(cap);
    if (!s) return NULL;
    for (int i = 0; i < N_KEYS; i++) {
        const key_desc *k = &keys[i];
        const char *base = (const char *)cfg + k->off;
        int w;
        switch (k->type) {
        case K_INT: w = snprintf(s + len, cap - len, "%s = %d\n", k->name, *(const int *)(const void *)base); break;
        case K_FLOAT: w = snprintf(s + len, cap - len, "%s = %.9g\n", k->name, (double)*(const float *)(const void *)base); break;
        case K_U64: w = snprintf(s + len, cap - len, "%s = %" PRIu64 "\n", k->name, *(const uint64_t *)(const void *)base); break;
        default: w = snprintf(s + len, cap - len, "%s = %s\n", k->name, norm_name(*(const int *)(const void *)base)); break;
        }
        if (w < 0 || (size_t)w >= cap - len) { /* cannot happen with 1 KiB; be safe */
            free(s);
            return NULL;
        }
        len += (size_t)w;
    }
    return s;
}

mcl_status mcl_acl_config_set(mcl_acl_config *cfg, const char *key, const char *value,
                              char *err, size_t err_len)
{
    if (!cfg || !key || !value) return fail(err, err_len, MCL_ERR_NULL, "NULL argument");
    const key_desc *k = NULL;
    for (int i = 0; i < N_KEYS; i++)
        if (strcmp(keys[i].name, key) == 0) k = &keys[i];
    if (!k) {
        char known[512] = "";
        for (int i = 0; i < N_KEYS; i++) {
            strncat(known, keys[i].name, sizeof known - strlen(known) - 1);
            if (i + 1 < N_KEYS) strncat(known, ", ", sizeof known - strlen(known) - 1);
        }
        return fail(err, err_len, MCL_ERR_INVALID, "unknown ACL model key '%s' (known: %s)", key,
                    known);
    }
    void *base = (char *)cfg + k->off;
    char *end = NULL;
    errno = 0;
    switch (k->type) {
    case K_INT: {
        int64_t v;
        if (mcl_parse_i64(value, (int64_t)k->lo, (int64_t)k->hi, &v))
            return fail(err, err_len, MCL_ERR_INVALID,
                        "%s = '%s': want an integer in [%.0f, %.0f]", key, value, k->lo, k->hi);
        *(int *)base = (int)v;
        break;
    }
    case K_FLOAT: {
        float v = strtof(value, &end);
        if (end == value || *end || errno || !(v >= k->lo && v < k->hi))
            return fail(err, err_len, MCL_ERR_INVALID, "%s = '%s': want a number in [%g, %g)",
                        key, value, k->lo, k->hi);
        *(float *)base = v;
        break;
    }
    case K_U64: {
        if (value[0] == '-')
            return fail(err, err_len, MCL_ERR_INVALID, "%s = '%s': want an unsigned integer",
                        key, value);
        unsigned long long v = strtoull(value, &end, 10);
        if (end == value || *end || errno)
            return fail(err, err_len, MCL_ERR_INVALID, "%s = '%s': want an unsigned integer",
                        key, value);
        *(uint64_t *)base = (uint64_t)v;
        break;
    }
    default:
        if (strcmp(value, "none") == 0)
            *(int *)base = MCL_ACL_FEATNORM_NONE;
        else if (strcmp(value, "batch") == 0)
            *(int *)base = MCL_ACL_FEATNORM_BATCH;
        else if (strcmp(value, "image") == 0)
            *(int *)base = MCL_ACL_FEATNORM_IMAGE;
        else
            return fail(err, err_len, MCL_ERR_INVALID, "%s = '%s': want none, batch or image",
                        key, value);
    }
    return MCL_OK;
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
    for (int i = 0; i < N_KEYS; i++) {
        const key_desc *k = &keys[i];
        size_t sz = k->type == K_U64 ? sizeof(uint64_t) : k->type == K_FLOAT ? sizeof(float) : sizeof(int);
        if (memcmp((const char *)a + k->off, (const char *)b + k->off, sz) != 0) return k->name;
    }
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
static mcl_status file_config(const char *path, mcl_acl_config *cfg, char *err, size_t err_len)
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
    mcl_ckpt_info_free(&info);
    return st;
}

mcl_status mcl_acl_load(mcl_acl *m, const char *path, mcl_optim *optim, int restore_rng,
                        mcl_ckpt_info *info, char *err, size_t err_len)
{
    if (info) memset(info, 0, sizeof *info);
    if (!m || !path) return fail(err, err_len, MCL_ERR_NULL, "mcl_acl_load: NULL argument");
    mcl_acl_config fc;
    mcl_status st = file_config(path, &fc, err, err_len);
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
    mcl_status st = file_config(path, &cfg, err, err_len);
    if (st != MCL_OK) return st;
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
