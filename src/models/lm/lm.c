/* lm.c — the byte-level Transformer-XL with optional sparse fast weights (lm.h,
 * doc/lm-model.md). */
#define _POSIX_C_SOURCE 200809L
#include "lm.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "ops.h"
#include "params.h"
#include "tape.h"
#include "tensor_impl.h"
#include "util.h"

#define LN_EPS 1e-5f
#define INIT_STD 0.02f
#define INIT_STREAM 0x4c4d494e495400ULL /* "LMINIT" + tensor number */

void mcl_lm_config_default(mcl_lm_config *c)
{
    memset(c, 0, sizeof *c);
    c->layers = 4;
    c->width = 256;
    c->heads = 4;
    c->head_dim = 64;
    c->ffw = 1024;
    c->mem_len = 128;
    c->fast = 1;
    c->fast_embed = 1;
    c->fast_ffw = 0;
    c->meta_hidden = 20;
    c->reset = 1;
    c->seed = 1;
}

mcl_status mcl_lm_config_check(const mcl_lm_config *c, char *err, size_t len)
{
    if (c->layers < 1 || c->layers > MCL_LM_MAX_LAYERS)
        return mcl_errbuf(err, len, MCL_ERR_INVALID, "model.layers = %d: must be 1..%d", c->layers, MCL_LM_MAX_LAYERS);
    if (c->width < 2 || c->width % 2)
        return mcl_errbuf(err, len, MCL_ERR_INVALID, "model.width = %d: must be even and >= 2 (sinusoids come in pairs)",
                          c->width);
    if (c->heads < 1 || c->head_dim < 1 || c->ffw < 1 || c->mem_len < 0)
        return mcl_errbuf(err, len, MCL_ERR_INVALID, "model.heads, head_dim, ffw must be >= 1 and mem_len >= 0");
    const int64_t big = (int64_t)c->width * c->heads * c->head_dim;
    if (big >= (1 << 24) || (int64_t)c->width * c->ffw >= (1 << 24))
        return mcl_errbuf(err, len, MCL_ERR_INVALID,
                          "model: a weight of %lld elements is too big (fast-weight layers hold < 2^24 elements)",
                          (long long)(big > (int64_t)c->width * c->ffw ? big : (int64_t)c->width * c->ffw));
    const int n_aug = c->fast ? c->layers * (4 + (c->fast_ffw ? 1 : 0)) + (c->fast_embed ? 1 : 0) : 0;
    if (n_aug > MCL_METANET_MAX_LAYERS)
        return mcl_errbuf(err, len, MCL_ERR_INVALID, "model: %d fast-weight tensors (at most %d): fewer layers or "
                          "model.fast_ffw = 0", n_aug, MCL_METANET_MAX_LAYERS);
    if (c->fast && c->meta_hidden < 1)
        return mcl_errbuf(err, len, MCL_ERR_INVALID, "model.meta_hidden = %d: must be >= 1", c->meta_hidden);
    return MCL_OK;
}

/* A parameter of `nd` dims, N(0, std²) (std 0: zeros, std < 0: ones). */
static mcl_tensor *param(mcl_lm *m, const char *name, int nd, int64_t d0, int64_t d1, float std)
{
    const int64_t sh[2] = {d0, d1};
    mcl_tensor *t = mcl_params_add(m->params, name, nd, sh);
    if (!t) return NULL;
    mcl_status st = MCL_OK;
    if (std > 0) st = mcl_tensor_randn(t, m->cfg.seed, INIT_STREAM + (uint64_t)mcl_params_count(m->params), 0.0f, std);
    else if (std < 0) st = mcl_tensor_fill(t, 1.0f);
    return st == MCL_OK ? t : NULL;
}

static int augment(mcl_lm *m, mcl_tensor *w, const char *name, int on)
{
    if (!m->mn || !on) return -1;
    return mcl_metanet_add(m->mn, w, name);
}

static mcl_status build(mcl_lm *m)
{
    const mcl_lm_config *c = &m->cfg;
    const int64_t D = c->width, HD = (int64_t)c->heads * c->head_dim, F = c->ffw;
    const float res_std = INIT_STD / sqrtf(2.0f * (float)c->layers); /* residual projections */
    char nm[64];
    m->aug_emb = -1;
    m->emb = param(m, "embed", 2, MCL_LM_VOCAB, D, INIT_STD);
    if (!m->emb) return mcl_ctx_status(m->ctx);
    if (c->fast && c->fast_embed && (m->aug_emb = augment(m, m->emb, "embed", 1)) < 0) return mcl_ctx_status(m->ctx);
    for (int l = 0; l < c->layers; l++) {
        mcl_lm_layer *y = &m->layer[l];
#define P(field, suffix, nd, a, b, std)                                                                      \
    do {                                                                                                     \
        snprintf(nm, sizeof nm, "layer%d.%s", l, suffix);                                                    \
        if (!(y->field = param(m, nm, nd, a, b, std))) return mcl_ctx_status(m->ctx);                        \
    } while (0)
        P(ln_a_g, "ln_attn.g", 1, D, 0, -1);
        P(ln_a_b, "ln_attn.b", 1, D, 0, 0);
        P(wq, "attn.q", 2, HD, D, INIT_STD);
        P(wk, "attn.k", 2, HD, D, INIT_STD);
        P(wv, "attn.v", 2, HD, D, INIT_STD);
        P(wr, "attn.r", 2, HD, D, INIT_STD);
        P(u, "attn.u", 1, HD, 0, 0);
        P(vb, "attn.vbias", 1, HD, 0, 0);
        P(wo, "attn.o", 2, D, HD, res_std);
        P(ln_f_g, "ln_ffw.g", 1, D, 0, -1);
        P(ln_f_b, "ln_ffw.b", 1, D, 0, 0);
        P(w1, "ffw.w1", 2, F, D, INIT_STD);
        P(b1, "ffw.b1", 1, F, 0, 0);
        P(w2, "ffw.w2", 2, D, F, res_std);
        P(b2, "ffw.b2", 1, D, 0, 0);
#undef P
        y->aug_q = y->aug_k = y->aug_v = y->aug_o = y->aug_1 = -1;
        if (c->fast) {
            struct {
                int *slot;
                mcl_tensor *w;
                const char *s;
                int on;
            } a[5] = {{&y->aug_q, y->wq, "attn.q", 1}, {&y->aug_k, y->wk, "attn.k", 1}, {&y->aug_v, y->wv, "attn.v", 1},
                      {&y->aug_o, y->wo, "attn.o", 1}, {&y->aug_1, y->w1, "ffw.w1", c->fast_ffw}};
            for (int i = 0; i < 5; i++) {
                if (!a[i].on) continue;
                snprintf(nm, sizeof nm, "layer%d.%s", l, a[i].s);
                if ((*a[i].slot = augment(m, a[i].w, nm, 1)) < 0) return mcl_ctx_status(m->ctx);
            }
        }
    }
    if (!(m->ln_o_g = param(m, "ln_out.g", 1, D, 0, -1)) || !(m->ln_o_b = param(m, "ln_out.b", 1, D, 0, 0)) ||
        !(m->w_out = param(m, "out.w", 2, MCL_LM_VOCAB, D, INIT_STD)) ||
        !(m->b_out = param(m, "out.b", 1, MCL_LM_VOCAB, 0, 0)))
        return mcl_ctx_status(m->ctx);
    return MCL_OK;
}

/* n = V·D (embedding) + L · (2D + 4·HD·D + 2·HD + D·HD + 2D + F·D + F + D·F + D)
 *     + 2D + V·D + V (output), plus each augmented weight's state and g_phi (metanet). */
double mcl_lm_param_floats(const mcl_lm_config *c, double *fast)
{
    const double D = c->width, HD = (double)c->heads * c->head_dim, F = c->ffw, V = MCL_LM_VOCAB;
    const double layer = 2 * D + 4 * HD * D + 2 * HD + D * HD + 2 * D + F * D + F + D * F + D;
    double n = V * D + c->layers * layer + 2 * D + V * D + V, aug = 0;
    if (c->fast) {
        const int H = c->meta_hidden;
        if (c->fast_embed) aug += mcl_metanet_aug_floats(V * D, H);
        aug += c->layers * 4 * mcl_metanet_aug_floats(HD * D, H);
        if (c->fast_ffw) aug += c->layers * mcl_metanet_aug_floats(F * D, H);
    }
    if (fast) { /* the .fast and .avg tensors of each augmented weight */
        *fast = 0;
        if (c->fast) *fast = 2 * ((c->fast_embed ? V * D : 0) + c->layers * (4 * HD * D + (c->fast_ffw ? F * D : 0)));
    }
    return n + aug;
}

mcl_lm *mcl_lm_create(mcl_ctx *ctx, const mcl_lm_config *cfg)
{
    if (!ctx || !cfg) return NULL;
    char e[512];
    if (mcl_lm_config_check(cfg, e, sizeof e) != MCL_OK) {
        mcl_ctx_set_error(ctx, MCL_ERR_INVALID, "%s", e);
        return NULL;
    }
    if (mcl_check_budget(mcl_budget_bytes(mcl_lm_param_floats(cfg, NULL) * 4), "the model's parameters", e,
                         sizeof e) != MCL_OK) {
        mcl_ctx_set_error(ctx, MCL_ERR_OOM, "%s", e);
        return NULL;
    }
    mcl_lm *m = calloc(1, sizeof *m);
    if (!m) {
        mcl_ctx_set_error(ctx, MCL_ERR_OOM, "lm: out of memory");
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
    if (st == MCL_OK) st = build(m);
    if (st != MCL_OK) {
        if (mcl_ctx_status(ctx) == MCL_OK) mcl_ctx_set_error(ctx, st, "lm: building the model failed");
        mcl_lm_free(m);
        return NULL;
    }
    return m;
}

void mcl_lm_free(mcl_lm *m)
{
    if (!m) return;
    mcl_tensor_free(m->pos);
    mcl_metanet_free(m->mn);
    mcl_params_free(m->params);
    free(m);
}

int64_t mcl_lm_trainable(const mcl_lm *m) { return mcl_params_numel_trainable(m->params); }

/* ------------------------------------------------------------------ memory */

static mcl_status memory_make(mcl_lm *m, mcl_params *params, int64_t lanes, int64_t rows, mcl_lm_memory *mem)
{
    memset(mem, 0, sizeof *mem);
    if (lanes < 1) return mcl_ctx_set_error(m->ctx, MCL_ERR_INVALID, "lm: %lld lanes", (long long)lanes);
    mem->lanes = lanes;
    mem->layers = m->cfg.layers;
    mem->owned = params == NULL;
    const int64_t sh[3] = {lanes, rows > 0 ? rows : 1, m->cfg.width};
    for (int l = 0; l < m->cfg.layers; l++) {
        char nm[32];
        snprintf(nm, sizeof nm, "state.mem%d", l);
        if (params) {
            mem->mem[l] = mcl_params_add(params, nm, 3, sh);
            if (mem->mem[l]) mcl_tensor_requires_grad(mem->mem[l], 0);
        } else {
            mem->mem[l] = mcl_tensor_create(m->ctx, 3, sh);
        }
        if (!mem->mem[l]) {
            mcl_lm_memory_free(mem);
            return mcl_ctx_status(m->ctx) != MCL_OK ? mcl_ctx_status(m->ctx) : MCL_ERR_OOM;
        }
    }
    mem->capacity = rows;
    return MCL_OK;
}

mcl_status mcl_lm_memory_create(mcl_lm *m, int64_t lanes, int64_t rows, mcl_lm_memory *mem)
{
    return memory_make(m, NULL, lanes, rows, mem);
}

mcl_status mcl_lm_memory_register(mcl_lm *m, mcl_params *params, int64_t lanes, mcl_lm_memory *mem)
{
    return memory_make(m, params, lanes, m->cfg.mem_len, mem);
}

void mcl_lm_memory_free(mcl_lm_memory *mem)
{
    if (!mem) return;
    if (mem->owned)
        for (int l = 0; l < mem->layers; l++) mcl_tensor_free(mem->mem[l]);
    memset(mem, 0, sizeof *mem);
}

void mcl_lm_memory_clear(mcl_lm_memory *mem) { mem->rows = 0; }

/* dst [B, cap, D] ← src [B, r, D] in its first r rows of every lane (r < cap: through the
 * host; only while a stream's memory fills up). */
static mcl_status copy_rows(mcl_tensor *dst, mcl_tensor *src)
{
    if (mcl_tensor_numel(dst) == mcl_tensor_numel(src)) return mcl_tensor_copy_into(dst, src);
    const int64_t B = mcl_tensor_dim(dst, 0), cap = mcl_tensor_dim(dst, 1), D = mcl_tensor_dim(dst, 2);
    const int64_t r = mcl_tensor_dim(src, 1);
    float *a = malloc((size_t)(B * cap * D) * sizeof *a), *b = malloc((size_t)(B * r * D) * sizeof *b);
    mcl_status st = a && b ? MCL_OK : MCL_ERR_OOM;
    if (st == MCL_OK) st = mcl_tensor_read(dst, a, B * cap * D);
    if (st == MCL_OK) st = mcl_tensor_read(src, b, B * r * D);
    if (st == MCL_OK) {
        for (int64_t i = 0; i < B; i++) memcpy(a + i * cap * D, b + i * r * D, (size_t)(r * D) * sizeof *a);
        st = mcl_tensor_write(dst, a, B * cap * D);
    }
    free(a);
    free(b);
    return st;
}

mcl_status mcl_lm_memory_commit(mcl_lm_memory *mem, const mcl_lm_pending *pend)
{
    if (pend->rows == 0 || mem->capacity == 0) return MCL_OK;
    for (int l = 0; l < mem->layers && !pend->written; l++) {
        mcl_status st = copy_rows(mem->mem[l], pend->mem[l]);
        if (st != MCL_OK) return st;
    }
    mem->rows = pend->rows;
    return MCL_OK;
}

/* ----------------------------------------------------------------- forward */

/* Sinusoids of distances 0..rows-1 [rows, D] (Vaswani et al.'s frequencies 10000^(-2i/D)). */
static mcl_status positions(mcl_lm *m, int64_t rows)
{
    if (m->pos && m->pos_rows >= rows) return MCL_OK;
    const int64_t D = m->cfg.width, half = D / 2;
    float *v = malloc((size_t)(rows * D) * sizeof *v);
    if (!v) return mcl_ctx_set_error(m->ctx, MCL_ERR_OOM, "lm: out of memory");
    for (int64_t d = 0; d < rows; d++)
        for (int64_t i = 0; i < half; i++) {
            const double f = pow(10000.0, -2.0 * (double)i / (double)D), a = (double)d * f;
            v[d * D + i] = (float)sin(a);
            v[d * D + half + i] = (float)cos(a);
        }
    mcl_tensor_free(m->pos);
    m->pos = mcl_tensor_new(m->ctx, rows, D, 0, 0);
    mcl_status st = m->pos ? mcl_tensor_write(m->pos, v, rows * D) : mcl_ctx_status(m->ctx);
    free(v);
    m->pos_rows = m->pos ? rows : 0;
    return st;
}

/* y = x Wᵀ (+ b): x [N, in], W [out, in] → [N, out] */
static mcl_tensor *linear(mcl_ctx *ctx, mcl_tensor *x, mcl_tensor *w, mcl_tensor *b)
{
    mcl_tensor *y = mcl_matmul(ctx, x, w, 0, 1);
    return b ? mcl_bias_add(ctx, y, b) : y;
}

static mcl_tensor *reshape(mcl_ctx *ctx, mcl_tensor *x, int nd, int64_t a, int64_t b, int64_t c, int64_t d)
{
    const int64_t sh[4] = {a, b, c, d};
    return mcl_reshape(ctx, x, nd, sh);
}

/* The weight a forward uses: the effective W + M when augmented. */
static mcl_tensor *weight(mcl_tensor *const *eff, int aug, mcl_tensor *w) { return aug >= 0 ? eff[aug] : w; }

/* One layer (lm.h): h [B·S, D], memory rows mrows → the new h; *keep = the last M rows of
 * [m_l ‖ h_in] (the next segment's memory of this layer; ahead: written into m_l itself, *keep
 * a view of it). */
static mcl_tensor *layer_fwd(mcl_lm *m, int l, mcl_tensor *const *eff, const mcl_lm_memory *mem, mcl_tensor *h,
                             int64_t B, int64_t S, mcl_tensor **keep, int64_t keep_rows, int ahead)
{
    mcl_ctx *ctx = m->ctx;
    const mcl_lm_config *c = &m->cfg;
    const mcl_lm_layer *y = &m->layer[l];
    const int64_t D = c->width, H = c->heads, Dh = c->head_dim, HD = H * Dh;
    const int64_t M = mem ? mem->rows : 0, T = M + S;
    mcl_tensor *h3 = reshape(ctx, h, 3, B, S, D, 0);
    mcl_tensor *cat = h3;
    if (M > 0) {
        mcl_tensor *old = M == mem->capacity ? mem->mem[l] : mcl_slice(ctx, mem->mem[l], 1, 0, M);
        cat = mcl_concat(ctx, old, h3, 1);
    }
    if (ahead) {
        /* the new rows straight into this layer's memory, which the concat above has read
         * (the queue runs in order, and nothing else reads it): a slice whose output is a
         * view of mem (another tensor over its buffer, so that the tape never marks mem
         * itself), and no copy at commit */
        *keep = mcl_tensor_alias(ctx, mem->mem[l], mcl_tensor_ndim(mem->mem[l]), mcl_tensor_shape(mem->mem[l]));
        mcl_op_args a;
        memset(&a, 0, sizeof a);
        a.op = MCL_OP_SLICE;
        a.in[0] = cat;
        a.p.i[0] = 1;
        a.p.i[1] = T - keep_rows;
        a.p.i[2] = keep_rows;
        a.out[0] = *keep;
        a.out_given = 1;
        if (*keep && mcl_op_run(ctx, &a) != MCL_OK) *keep = NULL;
    } else {
        *keep = keep_rows > 0 ? mcl_slice(ctx, cat, 1, T - keep_rows, keep_rows) : NULL;
    }
    mcl_tensor *cn = mcl_layer_norm(ctx, reshape(ctx, cat, 2, B * T, D, 0, 0), y->ln_a_g, y->ln_a_b, LN_EPS);
    mcl_tensor *cq = M > 0 ? reshape(ctx, mcl_slice(ctx, reshape(ctx, cn, 3, B, T, D, 0), 1, M, S), 2, B * S, D, 0, 0)
                           : cn;
    mcl_tensor *q = linear(ctx, cq, weight(eff, y->aug_q, y->wq), NULL), *quv[2] = {NULL, NULL};
    if (mcl_bias_add2(ctx, q, y->u, y->vb, quv) != MCL_OK) return NULL; /* q + u, q + v: one op */
    mcl_tensor *qc = reshape(ctx, quv[0], 4, B, S, H, Dh);
    mcl_tensor *qp = reshape(ctx, quv[1], 4, B, S, H, Dh);
    mcl_tensor *k = reshape(ctx, linear(ctx, cn, weight(eff, y->aug_k, y->wk), NULL), 4, B, T, H, Dh);
    mcl_tensor *v = reshape(ctx, linear(ctx, cn, weight(eff, y->aug_v, y->wv), NULL), 4, B, T, H, Dh);
    mcl_tensor *R = T == m->pos_rows ? m->pos : mcl_slice(ctx, m->pos, 0, 0, T);
    mcl_tensor *r = reshape(ctx, linear(ctx, R, y->wr, NULL), 3, T, H, Dh, 0);
    mcl_tensor *a = NULL;
    if (mcl_rel_attn(ctx, qc, qp, k, v, r, 1.0f / sqrtf((float)Dh), &a) != MCL_OK) return NULL;
    a = linear(ctx, reshape(ctx, a, 2, B * S, HD, 0, 0), weight(eff, y->aug_o, y->wo), NULL);
    h = mcl_add(ctx, h, a);
    mcl_tensor *f = mcl_layer_norm(ctx, h, y->ln_f_g, y->ln_f_b, LN_EPS);
    f = mcl_bias_gelu(ctx, linear(ctx, f, weight(eff, y->aug_1, y->w1), NULL), y->b1); /* one op */
    (void)HD;
    /* h + (f W2ᵀ + b2): b2 and the residual add as one op (bias_add_dropout at p = 0: the
     * floats of bias_add then add) */
    return mcl_bias_add_dropout(ctx, h, linear(ctx, f, y->w2, NULL), y->b2, 0.0f, 0);
}

mcl_status mcl_lm_forward(mcl_lm *m, mcl_fast_mode mode, const mcl_lm_memory *mem, mcl_tensor *tokens,
                          mcl_tensor **logits, mcl_lm_pending *pend)
{
    if (!m || !tokens || !logits) return MCL_ERR_NULL;
    mcl_ctx *ctx = m->ctx;
    *logits = NULL;
    if (mcl_tensor_ndim(tokens) != 2)
        return mcl_ctx_set_error(ctx, MCL_ERR_SHAPE, "lm: tokens must be [lanes, segment]");
    const int64_t B = mcl_tensor_dim(tokens, 0), S = mcl_tensor_dim(tokens, 1);
    if (mem && mem->lanes != B)
        return mcl_ctx_set_error(ctx, MCL_ERR_SHAPE, "lm: %lld lanes of tokens, %lld of memory", (long long)B,
                                 (long long)mem->lanes);
    const int64_t M = mem ? mem->rows : 0, cap = mem ? mem->capacity : 0;
    const int64_t keep = M + S < cap ? M + S : cap;
    /* mem->write_ahead: the full memory's new rows written into it by each layer (lm.h) */
    const int ahead = pend && mem && mem->write_ahead && M > 0 && M == cap && keep == M;
    mcl_status st = positions(m, M + S);
    if (st != MCL_OK) return st;
    mcl_tensor *eff[MCL_METANET_MAX_LAYERS];
    if (m->mn && (st = mcl_metanet_weights(m->mn, mode, eff)) != MCL_OK) return st;
    const int64_t D = m->cfg.width;
    mcl_tensor *h = mcl_embedding(ctx, weight(eff, m->aug_emb, m->emb), reshape(ctx, tokens, 1, B * S, 0, 0, 0));
    if (pend) memset(pend, 0, sizeof *pend);
    for (int l = 0; l < m->cfg.layers && h; l++) {
        mcl_tensor *kp = NULL;
        h = layer_fwd(m, l, eff, mem, h, B, S, &kp, keep, ahead);
        if (pend) pend->mem[l] = kp;
    }
    if (pend) pend->rows = keep;
    if (pend) pend->written = ahead;
    if (h) {
        h = mcl_layer_norm(ctx, reshape(ctx, h, 2, B * S, D, 0, 0), m->ln_o_g, m->ln_o_b, LN_EPS);
        *logits = linear(ctx, h, m->w_out, m->b_out);
    }
    if (!*logits) return mcl_ctx_status(ctx) != MCL_OK ? mcl_ctx_status(ctx) : MCL_ERR_BACKEND;
    return MCL_OK;
}
