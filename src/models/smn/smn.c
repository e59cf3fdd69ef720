/* smn.c — the Sparse Meta Networks models: the WCST agent (mlp) and the Online-X residual
 * CNN (resnet), with fast weights on their linear and conv weights (see smn.h, metanet.h). */
#include "smn.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "params.h"
#include "tensor_impl.h"
#include "util.h"

#define fail mcl_errbuf

void mcl_smn_config_default(mcl_smn_config *c)
{
    memset(c, 0, sizeof *c);
    c->arch = MCL_SMN_MLP;
    c->in_dim = 12;
    c->hidden = 256;
    c->layers = 2;
    c->width = 16;
    c->n_out = 4;
    c->value_head = 1;
    c->fast = 1;
    c->fast_head = 1;
    c->k = 3;
    const mcl_metanet_hyper h = {0.3f, 0.9f, 0.5f, 0.5f}; /* paper App. A, WCST */
    c->train_h = c->eval_h = h;
    c->meta_hidden = 20;
    c->seed = 1;
}

static mcl_status check_h(const mcl_metanet_hyper *h, const char *pre, char *err, size_t len)
{
    if (!(h->p > 0.0f && h->p <= 1.0f))
        return fail(err, len, MCL_ERR_INVALID, "model.%sp = %g: the write probability must be in (0, 1]", pre,
                    (double)h->p);
    if (!(h->gamma >= 0.0f && h->gamma < 1.0f))
        return fail(err, len, MCL_ERR_INVALID, "model.%sgamma = %g: the gradient average's decay must be in [0, 1)",
                    pre, (double)h->gamma);
    return MCL_OK;
}

mcl_status mcl_smn_config_check(const mcl_smn_config *c, char *err, size_t len)
{
    if (c->k < 1 || c->k > MCL_METANET_MAX_K)
        return fail(err, len, MCL_ERR_INVALID, "model.k = %d: the truncation length must be in 1..%d", c->k,
                    MCL_METANET_MAX_K);
    mcl_status st = check_h(&c->train_h, "", err, len);
    if (st == MCL_OK) st = check_h(&c->eval_h, "eval_", err, len);
    if (st != MCL_OK) return st;
    if (c->arch == MCL_SMN_MLP && (c->layers < 1 || c->layers > MCL_SMN_MAX_WEIGHTS - 4))
        return fail(err, len, MCL_ERR_INVALID, "model.layers = %d: 1..%d", c->layers, MCL_SMN_MAX_WEIGHTS - 4);
    if (c->arch == MCL_SMN_RESNET && c->value_head)
        return fail(err, len, MCL_ERR_INVALID, "model.value_head = 1: only the mlp (the WCST agent) has one");
    if (c->fast && c->k == 1)
        return fail(err, len, MCL_ERR_INVALID,
                    "model.k = 1 with model.fast = 1: a window of one step has no fast-weight step (k >= 2)");
    return MCL_OK;
}

/* Register weight i: w [shape], bias [out], optional norm; He-normal init. */
static mcl_status add_weight(mcl_smn *m, const char *name, int nd, const int64_t *shape, int64_t fan_in,
                             int norm, float gain)
{
    const int i = m->n_w;
    if (i >= MCL_SMN_MAX_WEIGHTS) return mcl_ctx_set_error(m->ctx, MCL_ERR_INVALID, "smn: too many layers");
    char nm[64];
    const int64_t ob[1] = {shape[0]};
    snprintf(nm, sizeof nm, "%s.w", name);
    m->w[i] = mcl_params_add(m->params, nm, nd, shape);
    snprintf(nm, sizeof nm, "%s.b", name);
    m->b[i] = mcl_params_add(m->params, nm, 1, ob);
    if (!m->w[i] || !m->b[i]) return mcl_ctx_status(m->ctx);
    mcl_status st = mcl_tensor_randn(m->w[i], m->cfg.seed, 0x534d4e00ULL + (uint64_t)i, 0.0f,
                                     gain * sqrtf(2.0f / (float)fan_in));
    if (st != MCL_OK) return st;
    if (norm) {
        snprintf(nm, sizeof nm, "%s.norm.g", name);
        m->ng[i] = mcl_params_add(m->params, nm, 1, ob);
        snprintf(nm, sizeof nm, "%s.norm.b", name);
        m->nb[i] = mcl_params_add(m->params, nm, 1, ob);
        if (!m->ng[i] || !m->nb[i]) return mcl_ctx_status(m->ctx);
        st = mcl_tensor_fill(m->ng[i], 1.0f);
        if (st != MCL_OK) return st;
    }
    m->aug[i] = -1;
    m->n_w++;
    return MCL_OK;
}

/* Augment weight i with fast weights. */
static mcl_status augment(mcl_smn *m, int i, const char *name)
{
    m->aug[i] = mcl_metanet_add(m->mn, m->w[i], name);
    return m->aug[i] < 0 ? mcl_ctx_status(m->ctx) : MCL_OK;
}

static mcl_status build_mlp(mcl_smn *m)
{
    const mcl_smn_config *c = &m->cfg;
    char nm[32];
    mcl_status st = MCL_OK;
    for (int l = 0; l < c->layers && st == MCL_OK; l++) {
        const int64_t in = l == 0 ? c->in_dim : c->hidden, sh[2] = {c->hidden, in};
        snprintf(nm, sizeof nm, "fc%d", l);
        st = add_weight(m, nm, 2, sh, in, 0, 1.0f);
        if (st == MCL_OK && c->fast) st = augment(m, m->n_w - 1, nm);
    }
    const int64_t sp[2] = {c->n_out, c->hidden}, sv[2] = {1, c->hidden};
    /* heads start small (gain 0.1): a near-uniform first policy, a near-zero value */
    if (st == MCL_OK) st = add_weight(m, "policy", 2, sp, c->hidden, 0, 0.1f);
    if (st == MCL_OK && c->fast && c->fast_head) st = augment(m, m->n_w - 1, "policy");
    if (st == MCL_OK && c->value_head) {
        st = add_weight(m, "value", 2, sv, c->hidden, 0, 0.1f);
        if (st == MCL_OK && c->fast && c->fast_head) st = augment(m, m->n_w - 1, "value");
    }
    return st;
}

/* Widths of the four blocks: w, 1.5w, 2w, 4w (the paper's 64, 96, 128, 256 for w = 64). */
static int64_t block_width(int w, int b)
{
    static const int num[4] = {2, 3, 4, 8};
    return (int64_t)w * num[b] / 2;
}

static mcl_status build_resnet(mcl_smn *m)
{
    const mcl_smn_config *c = &m->cfg;
    char nm[32];
    mcl_status st = MCL_OK;
    int64_t cin = 1;
    for (int b = 0; b < 4 && st == MCL_OK; b++) {
        const int64_t co = block_width(c->width, b);
        const int64_t s1[4] = {co, cin, 3, 3}, s2[4] = {co, co, 3, 3}, s3[4] = {co, cin, 1, 1};
        snprintf(nm, sizeof nm, "block%d.conv1", b);
        st = add_weight(m, nm, 4, s1, cin * 9, 1, 1.0f);
        if (st == MCL_OK && c->fast) st = augment(m, m->n_w - 1, nm);
        snprintf(nm, sizeof nm, "block%d.conv2", b);
        if (st == MCL_OK) st = add_weight(m, nm, 4, s2, co * 9, 1, 1.0f);
        if (st == MCL_OK && c->fast) st = augment(m, m->n_w - 1, nm);
        snprintf(nm, sizeof nm, "block%d.skip", b);
        if (st == MCL_OK) st = add_weight(m, nm, 4, s3, cin, 0, 1.0f);
        if (st == MCL_OK && c->fast) st = augment(m, m->n_w - 1, nm);
        cin = co;
    }
    const int64_t feat = cin * 2 * 2, sh[2] = {c->n_out, feat};
    if (st == MCL_OK) st = add_weight(m, "head", 2, sh, feat, 0, 0.5f);
    if (st == MCL_OK && c->fast && c->fast_head) st = augment(m, m->n_w - 1, "head");
    return st;
}

/* The weights of build_mlp / build_resnet: w + b (+ norm g, b), each augmented weight's state
 * and g_phi (metanet). */
double mcl_smn_param_floats(const mcl_smn_config *c, double *fast)
{
    double n = 0, aug = 0, st = 0;
    const int H = c->meta_hidden;
#define ADD(wn, out, norm, on)                                                                     \
    do {                                                                                           \
        n += (wn) + (out) + ((norm) ? 2 * (out) : 0);                                              \
        if (c->fast && (on)) {                                                                     \
            aug += mcl_metanet_aug_floats((wn), H);                                                \
            st += 2 * (wn);                                                                        \
        }                                                                                          \
    } while (0)
    if (c->arch == MCL_SMN_MLP) {
        for (int l = 0; l < c->layers; l++) {
            const double in = l == 0 ? c->in_dim : c->hidden;
            ADD((double)c->hidden * in, c->hidden, 0, 1);
        }
        ADD((double)c->n_out * c->hidden, c->n_out, 0, c->fast_head);
        if (c->value_head) ADD((double)c->hidden, 1, 0, c->fast_head);
    } else {
        double cin = 1;
        for (int b = 0; b < 4; b++) {
            const double co = (double)block_width(c->width, b);
            ADD(co * cin * 9, co, 1, 1);
            ADD(co * co * 9, co, 1, 1);
            ADD(co * cin, co, 0, 1);
            cin = co;
        }
        ADD((double)c->n_out * cin * 4, c->n_out, 0, c->fast_head);
    }
#undef ADD
    if (fast) *fast = st;
    return n + aug;
}

mcl_smn *mcl_smn_create(mcl_ctx *ctx, const mcl_smn_config *cfg)
{
    if (!ctx || !cfg) return NULL;
    char e[512];
    if (mcl_smn_config_check(cfg, e, sizeof e) != MCL_OK) {
        mcl_ctx_set_error(ctx, MCL_ERR_INVALID, "%s", e);
        return NULL;
    }
    if (mcl_check_budget(mcl_budget_bytes(mcl_smn_param_floats(cfg, NULL) * 4), "the model's parameters", e,
                         sizeof e) != MCL_OK) {
        mcl_ctx_set_error(ctx, MCL_ERR_OOM, "%s", e);
        return NULL;
    }
    mcl_smn *m = calloc(1, sizeof *m);
    if (!m) {
        mcl_ctx_set_error(ctx, MCL_ERR_OOM, "smn: out of memory");
        return NULL;
    }
    m->ctx = ctx;
    m->cfg = *cfg;
    m->params = mcl_params_create(ctx);
    mcl_status st = m->params ? MCL_OK : MCL_ERR_OOM;
    if (st == MCL_OK && cfg->fast) {
        mcl_metanet_cfg mc;
        mcl_metanet_cfg_model(&mc, cfg->meta_hidden, cfg->reset, cfg->seed);
        st = mcl_metanet_create(ctx, m->params, &mc, &m->mn);
    }
    if (st == MCL_OK) st = cfg->arch == MCL_SMN_MLP ? build_mlp(m) : build_resnet(m);
    if (st != MCL_OK) {
        if (mcl_ctx_status(ctx) == MCL_OK) mcl_ctx_set_error(ctx, st, "smn: building the model failed");
        mcl_smn_free(m);
        return NULL;
    }
    return m;
}

void mcl_smn_free(mcl_smn *m)
{
    if (!m) return;
    mcl_metanet_free(m->mn);
    mcl_params_free(m->params);
    free(m);
}

int64_t mcl_smn_trainable(const mcl_smn *m) { return mcl_params_numel_trainable(m->params); }

/* y = x Wᵀ + b: x [R, in], W [out, in], b [out] → [R, out] */
static mcl_tensor *linear(mcl_ctx *ctx, mcl_tensor *x, mcl_tensor *w, mcl_tensor *b)
{
    return mcl_bias_add(ctx, mcl_matmul(ctx, x, w, 0, 1), b);
}

#define NORM_EPS 1e-5f

/* A residual block (smn.h): weights i (conv1), i+1 (conv2), i+2 (skip). x [R, cin, S, S] →
 * [R, co, S/2, S/2]. */
static mcl_tensor *res_block(mcl_smn *m, mcl_tensor *const *W, int i, mcl_tensor *x)
{
    mcl_ctx *ctx = m->ctx;
    mcl_tensor *a = mcl_conv2d(ctx, x, W[i], m->b[i], 1, 1);
    a = mcl_inorm_relu(ctx, a, m->ng[i], m->nb[i], NORM_EPS); /* relu(instance_norm(a)) */
    a = mcl_conv2d(ctx, a, W[i + 1], m->b[i + 1], 1, 1);
    mcl_tensor *s = mcl_conv2d(ctx, x, W[i + 2], m->b[i + 2], 1, 0);
    /* maxpool2d(relu(instance_norm(a) + s)) */
    return mcl_inorm_add_pool_relu(ctx, a, m->ng[i + 1], m->nb[i + 1], s, NORM_EPS);
}

mcl_status mcl_smn_forward(mcl_smn *m, mcl_smn_mode mode, mcl_tensor *x, int64_t rows, mcl_tensor **logits,
                           mcl_tensor **value)
{
    if (!m || !x || !logits) return MCL_ERR_NULL;
    mcl_ctx *ctx = m->ctx;
    *logits = NULL;
    if (value) *value = NULL;
    mcl_tensor *eff[MCL_METANET_MAX_LAYERS], *W[MCL_SMN_MAX_WEIGHTS];
    if (m->mn) {
        mcl_status st = mcl_metanet_weights(m->mn, mode == MCL_SMN_WINDOW_END ? MCL_FAST_WINDOW_END : MCL_FAST_STEP,
                                            eff);
        if (st != MCL_OK) return st;
    }
    for (int i = 0; i < m->n_w; i++) W[i] = m->aug[i] >= 0 ? eff[m->aug[i]] : m->w[i];
    const mcl_smn_config *c = &m->cfg;
    mcl_tensor *h = x;
    if (c->arch == MCL_SMN_MLP) {
        for (int l = 0; l < c->layers; l++) h = mcl_relu(ctx, linear(ctx, h, W[l], m->b[l]));
        *logits = linear(ctx, h, W[c->layers], m->b[c->layers]);
        if (c->value_head && value) *value = linear(ctx, h, W[c->layers + 1], m->b[c->layers + 1]);
    } else {
        for (int b = 0; b < 4; b++) h = res_block(m, W, 3 * b, h);
        const int64_t sh[2] = {rows, block_width(c->width, 3) * 4};
        h = mcl_reshape(ctx, h, 2, sh);
        *logits = linear(ctx, h, W[12], m->b[12]);
    }
    if (!*logits || (value && c->value_head && !*value))
        return mcl_ctx_status(ctx) != MCL_OK ? mcl_ctx_status(ctx) : MCL_ERR_BACKEND;
    return MCL_OK;
}
