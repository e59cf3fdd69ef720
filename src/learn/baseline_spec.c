/* baseline_spec.c — the baseline spec strings "NAME[:KEY=VALUE,...]" (mcl_baseline_parse) and
 * readable names of baseline configs. See baseline.h. */
#include "baseline.h"

#include <math.h>
#include <stdio.h>
#include <stddef.h>
#include <string.h>

static const char *const method_names[MCL_BASELINE_METHOD_COUNT] = {
    "sgd", "ewc", "ewc-online", "si", "lwf", "replay"};

const char *mcl_baseline_method_name(mcl_baseline_method m, mcl_optim_kind optim)
{
    if (m == MCL_BASELINE_PLAIN) return optim == MCL_OPTIM_ADAM ? "adam" : "sgd";
    return (unsigned)m < MCL_BASELINE_METHOD_COUNT ? method_names[m] : "?";
}

/* The keys of a spec: which methods take them (bit m = method m), the field and its range. */
#define M(x) (1u << (x))
#define ALL_M 0xffffu
typedef enum { K_FLOAT, K_INT, K_OPTIM, K_REGIME } key_kind;
typedef struct spec_key {
    const char *name;
    unsigned methods;
    key_kind kind;
    size_t off;
    double lo, hi;
    const char *range; /* for messages */
} spec_key;

static const spec_key spec_keys[] = {
    {"lr", ALL_M, K_FLOAT, offsetof(mcl_baseline_config, lr), 1e-12, 1e3, "a float in (0, 1000]"},
    {"epochs", ALL_M, K_INT, offsetof(mcl_baseline_config, epochs), 1, 10000, "1..10000"},
    {"batch", ALL_M, K_INT, offsetof(mcl_baseline_config, batch_size), 1, MCL_BASELINE_MAX_BATCH, "1..32"},
    {"optim", ALL_M & ~M(MCL_BASELINE_PLAIN), K_OPTIM, offsetof(mcl_baseline_config, optim), 0, 0, "sgd or adam"},
    {"regime", ALL_M, K_REGIME, offsetof(mcl_baseline_config, regime), 0, 0, "shots or full"},
    {"lambda", M(MCL_BASELINE_EWC) | M(MCL_BASELINE_EWC_ONLINE), K_FLOAT,
     offsetof(mcl_baseline_config, ewc_lambda), 0, 1e12, "a float in [0, 1e12]"},
    {"lambda", M(MCL_BASELINE_LWF), K_FLOAT, offsetof(mcl_baseline_config, lwf_lambda), 0, 1e6,
     "a float in [0, 1e6]"},
    {"gamma", M(MCL_BASELINE_EWC_ONLINE), K_FLOAT, offsetof(mcl_baseline_config, ewc_gamma), 0, 1,
     "a float in [0, 1]"},
    {"fisher", M(MCL_BASELINE_EWC) | M(MCL_BASELINE_EWC_ONLINE), K_INT,
     offsetof(mcl_baseline_config, fisher_max), 0, 100000000, "0 (all) .. 1e8"},
    {"c", M(MCL_BASELINE_SI), K_FLOAT, offsetof(mcl_baseline_config, si_c), 0, 1e12, "a float in [0, 1e12]"},
    {"xi", M(MCL_BASELINE_SI), K_FLOAT, offsetof(mcl_baseline_config, si_xi), 1e-12, 1e6,
     "a float in (0, 1e6]"},
    {"T", M(MCL_BASELINE_LWF), K_FLOAT, offsetof(mcl_baseline_config, lwf_t), 1e-3, 1000,
     "a float in [0.001, 1000]"},
    {"buffer", M(MCL_BASELINE_REPLAY), K_INT, offsetof(mcl_baseline_config, buffer), 1,
     MCL_BASELINE_MAX_BUFFER, "1..1000000"},
    {"replay-batch", M(MCL_BASELINE_REPLAY), K_INT, offsetof(mcl_baseline_config, replay_batch), 1,
     MCL_BASELINE_MAX_BATCH, "1..32"},
};
#define N_SPEC_KEYS ((int)(sizeof spec_keys / sizeof spec_keys[0]))

/* "lr, epochs, ..." the keys method m takes, into buf. */
static void keys_of(unsigned m, char *buf, size_t len)
{
    size_t o = 0;
    buf[0] = 0;
    for (int i = 0; i < N_SPEC_KEYS && o < len; i++)
        if (spec_keys[i].methods & M(m)) {
            int r = snprintf(buf + o, len - o, "%s%s", o ? ", " : "", spec_keys[i].name);
            if (r < 0) break;
            o += (size_t)r;
        }
}

/* The optimizer's selected defaults (doc/acl.md): SGD lr 0.1 / 25 epochs, Adam 3e-3 / 5. */
static void optim_defaults(mcl_baseline_config *c)
{
    c->lr = c->optim == MCL_OPTIM_ADAM ? 3e-3f : 0.1f;
    c->epochs = c->optim == MCL_OPTIM_ADAM ? 5 : 25;
}

mcl_status mcl_baseline_parse(const char *spec, mcl_baseline_config *out, char *err,
                              size_t errlen)
{
    if (err && errlen) err[0] = 0;
    if (!spec || !out) return mcl_errbuf(err, errlen, MCL_ERR_NULL, "baseline spec: NULL argument");
    mcl_baseline_config c;
    mcl_baseline_config_default(&c);
    const char *colon = strchr(spec, ':');
    const size_t nlen = colon ? (size_t)(colon - spec) : strlen(spec);
    char name[32];
    if (nlen == 0 || nlen >= sizeof name)
        return mcl_errbuf(err, errlen, MCL_ERR_INVALID,
                          "baseline '%.100s': want NAME[:KEY=VALUE,...], NAME one of sgd, adam, "
                          "ewc, ewc-online, si, lwf, replay",
                          spec);
    memcpy(name, spec, nlen);
    name[nlen] = 0;
    int method = -1;
    if (!strcmp(name, "sgd") || !strcmp(name, "adam")) {
        method = MCL_BASELINE_PLAIN;
        c.optim = name[0] == 'a' ? MCL_OPTIM_ADAM : MCL_OPTIM_SGD;
    } else {
        for (int m = 1; m < MCL_BASELINE_METHOD_COUNT; m++)
            if (!strcmp(name, method_names[m])) method = m;
    }
    if (method < 0)
        return mcl_errbuf(err, errlen, MCL_ERR_INVALID,
                          "baseline '%.100s': unknown method '%s' (sgd, adam, ewc, ewc-online, si, "
                          "lwf, replay)",
                          spec, name);
    c.method = (mcl_baseline_method)method;
    const char *p = colon ? colon + 1 : NULL;
    if (p && !*p)
        return mcl_errbuf(err, errlen, MCL_ERR_INVALID, "baseline '%.100s': nothing after ':'", spec);
    /* the old form sgd|adam:LR:EPOCHS */
    if (p && method == MCL_BASELINE_PLAIN && !strchr(p, '=')) {
        char lr_s[64];
        const char *c2 = strchr(p, ':');
        const size_t l = c2 ? (size_t)(c2 - p) : 0;
        int64_t ep = 0;
        if (!c2 || l == 0 || l >= sizeof lr_s)
            return mcl_errbuf(err, errlen, MCL_ERR_INVALID,
                              "baseline '%.100s': want %s:LR:EPOCHS or %s:lr=LR,epochs=E", spec,
                              name, name);
        memcpy(lr_s, p, l);
        lr_s[l] = 0;
        if (mcl_parse_f32(lr_s, 1e-12f, 1e3f, &c.lr) || mcl_parse_i64(c2 + 1, 1, 10000, &ep))
            return mcl_errbuf(err, errlen, MCL_ERR_INVALID,
                              "baseline '%.100s': LR must be a float in (0, 1000] and EPOCHS an "
                              "integer in 1..10000",
                              spec);
        c.epochs = (int)ep;
        *out = c;
        return MCL_OK;
    }
    int given_lr = 0, given_epochs = 0;
    float lr = 0.0f;
    int epochs = 0;
    uint32_t seen = 0; /* keys given, by table row */
    while (p && *p) {
        const char *end = strchr(p, ',');
        const size_t l = end ? (size_t)(end - p) : strlen(p);
        char item[128];
        if (l == 0 || l >= sizeof item)
            return mcl_errbuf(err, errlen, MCL_ERR_INVALID, "baseline '%.100s': empty or too long item",
                              spec);
        memcpy(item, p, l);
        item[l] = 0;
        char *eq = strchr(item, '=');
        if (!eq || eq == item || !eq[1])
            return mcl_errbuf(err, errlen, MCL_ERR_INVALID,
                              "baseline '%.100s': '%s' is not KEY=VALUE", spec, item);
        *eq = 0;
        const char *key = item, *val = eq + 1;
        int row = -1, known = 0;
        for (int i = 0; i < N_SPEC_KEYS; i++)
            if (!strcmp(spec_keys[i].name, key)) {
                known = 1;
                if (spec_keys[i].methods & M((unsigned)method)) row = i;
            }
        if (row < 0) {
            char ks[256];
            keys_of((unsigned)method, ks, sizeof ks);
            return mcl_errbuf(err, errlen, MCL_ERR_INVALID, "baseline '%.100s': %s key '%s' for %s (keys: %s)",
                              spec, known ? "no" : "unknown", key, name, ks);
        }
        if (seen & (1u << row))
            return mcl_errbuf(err, errlen, MCL_ERR_INVALID, "baseline '%.100s': key '%s' given twice",
                              spec, key);
        seen |= 1u << row;
        const spec_key *k = &spec_keys[row];
        char *field = (char *)&c + k->off;
        int bad = 0;
        if (k->kind == K_FLOAT) {
            float v = 0.0f;
            bad = mcl_parse_f32(val, (float)k->lo, (float)k->hi, &v);
            if (!bad) memcpy(field, &v, sizeof v);
            if (!bad && !strcmp(key, "lr")) given_lr = 1, lr = v;
        } else if (k->kind == K_INT) {
            int64_t v = 0;
            bad = mcl_parse_i64(val, (int64_t)k->lo, (int64_t)k->hi, &v);
            int iv = (int)v;
            if (!bad) memcpy(field, &iv, sizeof iv);
            if (!bad && !strcmp(key, "epochs")) given_epochs = 1, epochs = iv;
        } else if (k->kind == K_OPTIM) {
            bad = strcmp(val, "sgd") && strcmp(val, "adam");
            if (!bad) c.optim = val[0] == 'a' ? MCL_OPTIM_ADAM : MCL_OPTIM_SGD;
        } else {
            bad = strcmp(val, "shots") && strcmp(val, "full");
            if (!bad) c.regime = val[0] == 'f' ? MCL_BASELINE_FULL : MCL_BASELINE_SHOTS;
        }
        if (bad)
            return mcl_errbuf(err, errlen, MCL_ERR_INVALID, "baseline '%.100s': %s=%s: want %s", spec,
                              key, val, k->range);
        p = end ? end + 1 : NULL;
        if (end && !*p)
            return mcl_errbuf(err, errlen, MCL_ERR_INVALID, "baseline '%.100s': trailing ','", spec);
    }
    optim_defaults(&c);
    if (given_lr) c.lr = lr;
    if (given_epochs) c.epochs = epochs;
    *out = c;
    return MCL_OK;
}

void mcl_baseline_describe(const mcl_baseline_config *c, char *buf, size_t len)
{
    if (!buf || !len) return;
    if (!c) {
        snprintf(buf, len, "?");
        return;
    }
    const char *opt = c->optim == MCL_OPTIM_ADAM ? "Adam" : "SGD";
    char what[96] = "";
    switch (c->method) {
    case MCL_BASELINE_EWC: snprintf(what, sizeof what, "EWC (lambda %g, ", (double)c->ewc_lambda); break;
    case MCL_BASELINE_EWC_ONLINE:
        snprintf(what, sizeof what, "online EWC (lambda %g, gamma %g, ", (double)c->ewc_lambda,
                 (double)c->ewc_gamma);
        break;
    case MCL_BASELINE_SI: snprintf(what, sizeof what, "SI (c %g, ", (double)c->si_c); break;
    case MCL_BASELINE_LWF:
        snprintf(what, sizeof what, "LwF (lambda %g, T %g, ", (double)c->lwf_lambda, (double)c->lwf_t);
        break;
    case MCL_BASELINE_REPLAY: snprintf(what, sizeof what, "replay (buffer %d, ", c->buffer); break;
    default: break;
    }
    if (c->method == MCL_BASELINE_PLAIN)
        snprintf(buf, len, "%s (lr %g, %d epochs%s)", opt, (double)c->lr, c->epochs,
                 c->regime == MCL_BASELINE_FULL ? ", full data" : "");
    else
        snprintf(buf, len, "%s%s lr %g, %d epochs%s)", what, opt, (double)c->lr, c->epochs,
                 c->regime == MCL_BASELINE_FULL ? ", full data" : "");
}

int mcl_baseline_spec_gives(const char *spec, const char *key)
{
    if (!spec || !key || !*key) return 0;
    const char *p = strchr(spec, ':');
    if (!p) return 0;
    p++;
    if (!strchr(p, '=')) /* the old form NAME:LR:EPOCHS */
        return !strcmp(key, "lr") || !strcmp(key, "epochs");
    const size_t kl = strlen(key);
    while (*p) {
        if (!strncmp(p, key, kl) && p[kl] == '=') return 1;
        const char *end = strchr(p, ',');
        if (!end) break;
        p = end + 1;
    }
    return 0;
}
