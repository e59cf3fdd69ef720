/* oct.c — the online transformers' model: parameters, the forward of one chunk against the
 * blocks' KV rings, and the ring's update (doc/oct-model.md walks through every equation).
 *
 * pi-transformer (paper App. B), one token per example, blocks in parallel form:
 *   h^0_t   = W_in f(x_t) + b_in                              f: the feature extractor
 *   h̄       = LN(h^l)
 *   q_t     = W^q h̄_t                     [Hq heads of dk]
 *   k_t     = W^k h̄_t + W^k̄ y_t,  v_t = W^v h̄_t + W^v̄ y_t   [Hk heads of dk]  (y_t one-hot)
 *   a_t     = Σ_t' M_t,t' softmax_t'(q_t·k_t' / √dk) v_t'    M: causal, diagonal 0 (attn_kv)
 *   h^{l+1} = h^l + W^o a + W_down GELU(W_up h̄ + b_up) + b_down
 *   logits  = W_head LN(h^L) + b_head
 * 2-token: the tokens x_1, y_1, x_2, y_2, ... (x: W_in f(x_t) + b_in; y: E[y_t]), the same
 * blocks without W^k̄, W^v̄, a plain causal mask (with ALiBi for the token order), the logits
 * read at the x tokens. cnn (baseline): logits = W_head f(x_t) + b_head.
 */
#define _POSIX_C_SOURCE 200809L
#include "oct.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dataset.h"
#include "tape.h"
#include "tensor_impl.h"
#include "util.h"

#define LN_EPS 1e-5f
#define STREAM_INIT 7000 /* + parameter index: the Philox stream of each weight's init */

mcl_status mcl_oct_config_check(const mcl_oct_config *c, char *err, size_t len)
{
    if (c->arch != MCL_OCT_CNN) {
        if (c->blocks < 1 || c->blocks > MCL_OCT_MAX_BLOCKS)
            return mcl_errbuf(err, len, MCL_ERR_INVALID, "model.blocks = %d (1..%d)", c->blocks,
                              MCL_OCT_MAX_BLOCKS);
        if (c->heads % c->kv_heads != 0)
            return mcl_errbuf(err, len, MCL_ERR_INVALID,
                              "model.kv_heads = %d must divide model.heads = %d", c->kv_heads,
                              c->heads);
    }
    if (c->no_image && c->arch == MCL_OCT_CNN)
        return mcl_errbuf(err, len, MCL_ERR_INVALID,
                          "model.no_image = 1 needs a transformer (the cnn baseline has only the image)");
    return MCL_OK;
}

int64_t mcl_oct_ring_rows(const mcl_oct_config *c) { return c->window > 0 ? c->window : 1; }

/* A parameter registered as `name`: [rows, cols] (rows 0: [cols]); std > 0: ~ N(0, std²)
 * from the next init stream, else every element = fill. */
static mcl_tensor *weight(mcl_oct *m, const char *name, int64_t rows, int64_t cols, float std,
                          float fill, int *stream)
{
    const int64_t s2[2] = {rows, cols}, s1[1] = {cols};
    mcl_tensor *t = rows > 0 ? mcl_params_add(m->params, name, 2, s2) : mcl_params_add(m->params, name, 1, s1);
    if (!t) return NULL;
    mcl_status st = std > 0 ? mcl_tensor_randn(t, m->cfg.seed, STREAM_INIT + (uint64_t)(*stream)++, 0.0f, std)
                            : mcl_tensor_fill(t, fill);
    return st == MCL_OK ? t : NULL;
}

static mcl_status build(mcl_oct *m)
{
    const mcl_oct_config *c = &m->cfg;
    mcl_status st = MCL_OK;
    if (!c->no_image) {
        if (c->extractor == MCL_OCT_CONV8) {
            st = mcl_conv8_create(&m->conv8, m->ctx, m->params, 1, c->channels, MCL_IMG,
                                  c->features, c->seed, 100);
            m->n_feat = c->features;
        } else {
            st = mcl_conv4_create(&m->conv4, m->ctx, m->params, 1, c->channels, MCL_IMG, c->seed, 100);
            m->n_feat = m->conv4.n_features;
        }
        if (st != MCL_OK) return st;
    }
    int sid = 0;
    const int64_t D = c->width, F = m->n_feat, N = c->n_way;
    char nm[64];
/* W: a random [r, cols] weight (r 0: a vector); V: a constant vector */
#define W(field, name, r, cols, std)                                                             \
    do {                                                                                         \
        if (!((field) = weight(m, (name), (r), (cols), (std), 0.0f, &sid))) return mcl_ctx_status(m->ctx); \
    } while (0)
#define V(field, name, cols, value)                                                              \
    do {                                                                                         \
        if (!((field) = weight(m, (name), 0, (cols), 0.0f, (value), &sid))) return mcl_ctx_status(m->ctx); \
    } while (0)
    if (c->arch == MCL_OCT_CNN) {
        W(m->head_w, "head.w", F, N, sqrtf(1.0f / (float)F));
        V(m->head_b, "head.b", N, 0.0f);
        return MCL_OK;
    }
    if (!c->no_image) W(m->in_w, "in.w", F, D, sqrtf(1.0f / (float)F));
    if (c->no_image) /* the constant token must differ from zero to pass LayerNorm */
        W(m->in_b, "in.b", 0, D, 0.02f);
    else
        V(m->in_b, "in.b", D, 0.0f);
    if (c->arch == MCL_OCT_TWO_TOKEN) W(m->y_emb, "y_emb", N, D, 1.0f);
    const int64_t Q = (int64_t)c->heads * c->head_dim, K = (int64_t)c->kv_heads * c->head_dim;
    const int64_t Hf = (int64_t)c->ffw_mult * D;
    const float sD = sqrtf(1.0f / (float)D), sout = sqrtf(1.0f / (float)(2 * c->blocks)) * sD;
    for (int l = 0; l < c->blocks; l++) {
        mcl_oct_block *b = &m->blk[l];
#define BW(field, suffix, r, cols, std)                                                          \
    do {                                                                                         \
        snprintf(nm, sizeof nm, "block%d.%s", l, (suffix));                                      \
        W(b->field, nm, (r), (cols), (std));                                                     \
    } while (0)
#define BV(field, suffix, cols, value)                                                           \
    do {                                                                                         \
        snprintf(nm, sizeof nm, "block%d.%s", l, (suffix));                                      \
        V(b->field, nm, (cols), (value));                                                        \
    } while (0)
        BV(ln_g, "ln.g", D, 1.0f);
        BV(ln_b, "ln.b", D, 0.0f);
        BW(wq, "wq", D, Q, sD);
        BW(wk, "wk", D, K, sD);
        BW(wv, "wv", D, K, sD);
        if (c->arch == MCL_OCT_PI) {
            BW(wk_bar, "wk_bar", N, K, 1.0f);
            BW(wv_bar, "wv_bar", N, K, 1.0f);
        }
        BW(wo, "wo", Q, D, sout);
        BW(up_w, "up.w", D, Hf, sD);
        BV(up_b, "up.b", Hf, 0.0f);
        BW(down_w, "down.w", Hf, D, sqrtf(1.0f / (float)(2 * c->blocks * Hf)));
        BV(down_b, "down.b", D, 0.0f);
#undef BW
#undef BV
    }
    V(m->lnf_g, "lnf.g", D, 1.0f);
    V(m->lnf_b, "lnf.b", D, 0.0f);
    W(m->head_w, "head.w", D, N, sD);
    V(m->head_b, "head.b", N, 0.0f);
#undef W
#undef V
    return MCL_OK;
}

/* The tensors of build(): the extractor (Conv-4: 4 x (w, b, norm g, b); Conv-8: 8 convs and
 * 2 linear layers), then the cnn head or in, y_emb, the blocks, lnf and the head. */
double mcl_oct_param_floats(const mcl_oct_config *c, double *extractor)
{
    double x = 0, F = 0;
    const double D = c->width, N = c->n_way;
    if (!c->no_image) {
        if (c->extractor == MCL_OCT_CONV8) {
            double cin = 1;
            for (int i = 0; i < 8; i++) {
                const double co = (double)c->channels * (double)(1 << (i / 2));
                x += co * cin * 9 + co;
                cin = co;
            }
            const double sp = MCL_IMG / 16;
            F = c->features;
            x += cin * sp * sp * F + F + F * F + F;
        } else {
            const double C = c->channels, sp = mcl_conv4_out_side(MCL_IMG);
            x = C * 9 + 3 * C + 3 * (C * C * 9 + 3 * C);
            F = C * sp * sp;
        }
    }
    if (extractor) *extractor = x;
    if (c->arch == MCL_OCT_CNN) return x + F * N + N;
    const double Q = (double)c->heads * c->head_dim, K = (double)c->kv_heads * c->head_dim;
    const double Hf = (double)c->ffw_mult * D;
    double n = x + (c->no_image ? 0 : F * D) + D;
    if (c->arch == MCL_OCT_TWO_TOKEN) n += N * D;
    const double block = 2 * D + D * Q + 2 * D * K + (c->arch == MCL_OCT_PI ? 2 * N * K : 0) + Q * D +
                         D * Hf + Hf + Hf * D + D;
    return n + c->blocks * block + 2 * D + D * N + N;
}

mcl_oct *mcl_oct_create(mcl_ctx *ctx, const mcl_oct_config *cfg)
{
    char e[512];
    if (mcl_oct_config_check(cfg, e, sizeof e) != MCL_OK) {
        mcl_ctx_set_error(ctx, MCL_ERR_INVALID, "%s", e);
        return NULL;
    }
    if (mcl_check_budget(mcl_budget_bytes(mcl_oct_param_floats(cfg, NULL) * 4), "the model's parameters", e,
                         sizeof e) != MCL_OK) {
        mcl_ctx_set_error(ctx, MCL_ERR_OOM, "%s", e);
        return NULL;
    }
    mcl_oct *m = calloc(1, sizeof *m);
    if (!m) {
        mcl_ctx_set_error(ctx, MCL_ERR_OOM, "out of memory");
        return NULL;
    }
    m->cfg = *cfg;
    m->ctx = ctx;
    m->tok_per_ex = cfg->arch == MCL_OCT_TWO_TOKEN ? 2 : 1;
    m->params = mcl_params_create(ctx);
    if (!m->params || build(m) != MCL_OK) {
        mcl_oct_free(m);
        return NULL;
    }
    if (cfg->freeze_extractor) /* the extractor's tensors are the first ones registered */
        for (int i = 0; i < mcl_params_count(m->params); i++) {
            mcl_tensor *t = mcl_params_get(m->params, i);
            if (!strncmp(t->name, "conv", 4) || !strncmp(t->name, "fc", 2)) t->flags &= ~MCL_TF_REQUIRES_GRAD;
        }
    return m;
}

void mcl_oct_free(mcl_oct *m)
{
    if (!m) return;
    mcl_params_free(m->params);
    free(m);
}

static mcl_tensor *linear(mcl_ctx *ctx, mcl_tensor *x, mcl_tensor *w, mcl_tensor *b)
{
    mcl_tensor *y = mcl_matmul(ctx, x, w, 0, 0);
    return b ? mcl_bias_add(ctx, y, b) : y;
}

static mcl_tensor *reshape3(mcl_ctx *ctx, mcl_tensor *x, int64_t a, int64_t b, int64_t c)
{
    const int64_t s[3] = {a, b, c};
    return mcl_reshape(ctx, x, 3, s);
}

static mcl_tensor *reshape2(mcl_ctx *ctx, mcl_tensor *x, int64_t a, int64_t b)
{
    const int64_t s[2] = {a, b};
    return mcl_reshape(ctx, x, 2, s);
}

/* One block on T tokens h [T, D]; lab [T] (pi) for the label terms; returns h^{l+1}. */
static mcl_tensor *block_fwd(mcl_oct *m, int l, mcl_tensor *h, mcl_tensor *lab, int64_t T,
                             const mcl_oct_ring *ring, mcl_oct_chunk *ck)
{
    mcl_ctx *ctx = m->ctx;
    const mcl_oct_config *c = &m->cfg;
    const mcl_oct_block *b = &m->blk[l];
    mcl_tensor *hb = mcl_layer_norm(ctx, h, b->ln_g, b->ln_b, LN_EPS);
    mcl_tensor *q = linear(ctx, hb, b->wq, NULL), *k = linear(ctx, hb, b->wk, NULL);
    mcl_tensor *v = linear(ctx, hb, b->wv, NULL);
    if (c->arch == MCL_OCT_PI) { /* + W^k̄ y_t, W^v̄ y_t: rows of the tables (y one-hot) */
        k = mcl_add(ctx, k, mcl_embedding(ctx, b->wk_bar, lab));
        v = mcl_add(ctx, v, mcl_embedding(ctx, b->wv_bar, lab));
    }
    q = reshape3(ctx, q, T, c->heads, c->head_dim);
    k = reshape3(ctx, k, T, c->kv_heads, c->head_dim);
    v = reshape3(ctx, v, T, c->kv_heads, c->head_dim);
    if (!q || !k || !v) return NULL;
    ck->k[l] = k;
    ck->v[l] = v;
    mcl_attn_opts ao;
    memset(&ao, 0, sizeof ao);
    ao.n = c->window > 0 ? ring->n : 0;
    ao.start = c->window > 0 ? ring->start : 0;
    ao.mask = c->arch == MCL_OCT_PI ? c->pi_mask : 0;
    ao.scale = 1.0f / sqrtf((float)c->head_dim);
    ao.alibi = c->alibi;
    mcl_tensor *a = NULL;
    if (mcl_attn_kv(ctx, q, k, v, ring->k[l], ring->v[l], &ao, &a) != MCL_OK) return NULL;
    a = reshape2(ctx, a, T, (int64_t)c->heads * c->head_dim);
    mcl_tensor *att = linear(ctx, a, b->wo, NULL);
    mcl_tensor *ffw = linear(ctx, mcl_gelu(ctx, linear(ctx, hb, b->up_w, b->up_b)), b->down_w, b->down_b);
    return mcl_add(ctx, h, mcl_add(ctx, att, ffw));
}

mcl_status mcl_oct_forward(mcl_oct *m, mcl_tensor *img, mcl_tensor *lab, int64_t S,
                           const mcl_oct_ring *ring, mcl_tensor **logits, mcl_tensor **loss,
                           mcl_oct_chunk *ck)
{
    mcl_ctx *ctx = m->ctx;
    const mcl_oct_config *c = &m->cfg;
    memset(ck, 0, sizeof *ck);
    *logits = *loss = NULL;
    mcl_tensor *f = NULL;
    if (!c->no_image)
        f = c->extractor == MCL_OCT_CONV8 ? mcl_conv8_forward(ctx, &m->conv8, img, S)
                                          : mcl_conv4_forward(ctx, &m->conv4, img, S, 0.0f, 1);
    mcl_tensor *out;
    if (c->arch == MCL_OCT_CNN) {
        out = linear(ctx, f, m->head_w, m->head_b);
    } else {
        mcl_tensor *h;
        if (c->no_image) { /* a constant token: in.b on every row */
            mcl_tensor *z = mcl_tensor_alloc(ctx, 2, (const int64_t[2]){S, c->width}, 1);
            h = z ? mcl_bias_add(ctx, z, m->in_b) : NULL;
        } else {
            h = linear(ctx, f, m->in_w, m->in_b);
        }
        int64_t T = S;
        if (c->arch == MCL_OCT_TWO_TOKEN) { /* rows x_1, y_1, x_2, y_2, ... */
            mcl_tensor *y = mcl_embedding(ctx, m->y_emb, lab);
            h = reshape2(ctx, mcl_concat(ctx, h, y, 1), 2 * S, c->width);
            T = 2 * S;
        }
        for (int l = 0; l < c->blocks && h; l++) h = block_fwd(m, l, h, lab, T, ring, ck);
        if (!h) return mcl_ctx_status(ctx) != MCL_OK ? mcl_ctx_status(ctx) : MCL_ERR_BACKEND;
        h = mcl_layer_norm(ctx, h, m->lnf_g, m->lnf_b, LN_EPS);
        if (c->arch == MCL_OCT_TWO_TOKEN) /* the x tokens' rows */
            h = mcl_slice(ctx, reshape2(ctx, h, S, 2 * (int64_t)c->width), 1, 0, c->width);
        out = linear(ctx, h, m->head_w, m->head_b);
        ck->tokens = T;
    }
    if (!out) return mcl_ctx_status(ctx) != MCL_OK ? mcl_ctx_status(ctx) : MCL_ERR_BACKEND;
    *logits = out;
    *loss = mcl_cross_entropy(ctx, out, lab);
    return *loss ? MCL_OK : mcl_ctx_status(ctx);
}

mcl_status mcl_oct_push(mcl_oct *m, mcl_oct_ring *ring, const mcl_oct_chunk *ck)
{
    const int64_t C = m->cfg.window, T = ck->tokens;
    if (C == 0 || m->cfg.arch == MCL_OCT_CNN || T == 0) return MCL_OK;
    const int64_t pos = (ring->start + ring->n) % C; /* the next free row, or the oldest */
    mcl_no_grad_begin(m->ctx);
    mcl_status st = MCL_OK;
    for (int l = 0; l < m->cfg.blocks && st == MCL_OK; l++) {
        st = mcl_kv_push(m->ctx, ring->k[l], ck->k[l], pos);
        if (st == MCL_OK) st = mcl_kv_push(m->ctx, ring->v[l], ck->v[l], pos);
    }
    mcl_no_grad_end(m->ctx);
    if (st != MCL_OK) return st;
    const int64_t w = T < C ? T : C, total = ring->n + w;
    if (total <= C) {
        ring->n = total;
    } else { /* the ring was full or overflows: the oldest rows were written over */
        ring->start = (ring->start + (total - C)) % C;
        ring->n = C;
    }
    return MCL_OK;
}
