/* acl.c — the ACL model (doc/acl-model.md §2). See acl.h. */
#include <assert.h>
#include "acl.h"
#include "keys.h"
#include "tensor_impl.h"
#include "util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ACL_NORM_EPS 1e-5f

void mcl_acl_config_default(mcl_acl_config *cfg)
{
    if (!cfg) return;
    memset(cfg, 0, sizeof *cfg);
    /* the defaults live in the key table (acl_io.c); a broken table is a programming error */
    mcl_status st = mcl_keys_defaults(mcl_acl_config_key_table, MCL_ACL_CONFIG_N_KEYS, cfg, NULL, 0);
    assert(st == MCL_OK);
    (void)st;
}

/* Register a parameter and fill it: kind 0 = N(0, std²), 1 = constant `std`. The Philox stream
 * is the registration index, so init is stable under config changes that only append. */
static mcl_tensor *add_param(mcl_acl *m, uint64_t *stream, const char *name, int ndim,
                             const int64_t *shape, int kind, float v)
{
    mcl_tensor *t = mcl_params_add(m->params, name, ndim, shape);
    uint64_t s = (*stream)++;
    if (!t) return NULL;
    mcl_status st = kind == 0 ? mcl_tensor_randn(t, m->cfg.seed, s, 0.0f, v)
                              : mcl_tensor_fill(t, v);
    return st == MCL_OK ? t : NULL;
}


int mcl_acl_feature_stats_ok(int feature_norm, int feature_stats)
{
    if (feature_stats < MCL_ACL_FEATSTATS_RUNNING || feature_stats > MCL_ACL_FEATSTATS_CONTEXT) return 0;
    return feature_stats == MCL_ACL_FEATSTATS_RUNNING || feature_norm == MCL_ACL_FEATNORM_BATCH;
}

mcl_status mcl_acl_set_feature_stats(mcl_acl *m, int fs, char *err, size_t err_len)
{
    if (!mcl_acl_feature_stats_ok(m->cfg.feature_norm, fs)) {
        char norm[32];
        mcl_key_choice_name(MCL_ACL_FEATNORM_CHOICES, m->cfg.feature_norm, norm, sizeof norm);
        return mcl_errbuf(err, err_len, MCL_ERR_INVALID,
                          "model.feature_norm %s; call and context need feature_norm batch", norm);
    }
    m->cfg.feature_stats = fs;
    return MCL_OK;
}
/* Sums in double: every config key is bounded, so this is exact far beyond any budget. */
static uint64_t to_u64(double x) { return x >= 1.8e19 ? UINT64_MAX : (uint64_t)x; }

static double param_count(const mcl_acl_config *c)
{
    const double C = c->conv_channels, Cin = c->in_channels, Hd = c->hidden, H = c->heads;
    const double D = c->heads > 0 ? (double)c->hidden / c->heads : 0.0, N = c->n_way;
    const double FF = (double)c->ff_mult * c->hidden, sp = mcl_conv4_out_side(c->image_size);
    const double F = C * sp * sp;
    double n = C * Cin * 9 + 3 * C + 3 * (C * C * 9 + 3 * C); /* Conv-4 */
    n += (F + N + 1) * Hd + Hd;                                 /* input */
    double layer = 3 * H * D * D + H * D * 4 + 2 * Hd + Hd * Hd + 2 * Hd + Hd * FF + FF + FF * Hd + Hd;
    n += (c->layers > 0 ? c->layers : 0) * layer;
    n += Hd * N + N;                                            /* head */
    if (c->feature_norm == MCL_ACL_FEATNORM_BATCH) n += 2 * F;
    return n;
}

uint64_t mcl_acl_param_count(const mcl_acl_config *cfg) { return cfg ? to_u64(param_count(cfg)) : 0; }

uint64_t mcl_acl_param_bytes(const mcl_acl_config *cfg)
{
    return cfg ? to_u64(param_count(cfg) * (double)sizeof(float)) : 0;
}

uint64_t mcl_acl_train_bytes(const mcl_acl_config *cfg, int64_t batch, int64_t rows)
{
    if (!cfg) return 0;
    const mcl_acl_config *c = cfg;
    const double S = c->image_size, C = c->conv_channels, Hd = c->hidden, H = c->heads;
    const double D = c->heads > 0 ? (double)c->hidden / c->heads : 0.0;
    const double FF = (double)c->ff_mult * c->hidden, L = c->layers > 0 ? c->layers : 0;
    const double R = (double)(batch > 0 ? batch : 1) * (double)(rows > 0 ? rows : 1);
    /* values, gradients, Adam m and v */
    double floats = 4 * param_count(c);
    /* per image: conv output, norm, ReLU at each block's resolution, then the pooled map */
    double conv = 0, side = S; /* each block's input side: S, then floor halvings */
    for (int i = 0; i < 4; i++) {
        conv += C * side * side * 3.25 + c->in_channels * (i == 0) * side * side;
        side = floor(side / 2);
    }
    /* per row and layer: norms, q/k/v/y, the output and the feed-forward block */
    double row = conv + 2 * Hd + L * (10 * Hd + 3 * FF) + 4 * c->n_way;
    /* per sequence and layer: the fast weights and their gradients */
    double seq = L * 2 * H * (3 * D * D + 4 * D);
    /* the backward pass holds a gradient next to each kept activation: twice */
    floats += 2 * (R * row + (double)(batch > 0 ? batch : 1) * seq);
    return to_u64(floats * (double)sizeof(float));
}

mcl_acl *mcl_acl_create(mcl_ctx *ctx, const mcl_acl_config *cfg)
{
    if (!ctx) return NULL;
    if (!cfg) {
        mcl_ctx_set_error(ctx, MCL_ERR_NULL, "mcl_acl_create: cfg is NULL");
        return NULL;
    }
    const mcl_acl_config *c = cfg;
    if (c->n_way < 1 || c->hidden < 1 || c->heads < 1 || c->hidden % c->heads != 0 ||
        c->layers < 0 || c->ff_mult < 1 || c->dropout < 0.0f || c->dropout >= 1.0f ||
        c->conv_channels < 1 || c->in_channels < 1 || c->image_size < MCL_CONV4_MIN_IMAGE ||
        c->image_size > MCL_CONV4_MAX_IMAGE || c->layers > 1024 ||
        (c->feature_norm != MCL_ACL_FEATNORM_NONE && c->feature_norm != MCL_ACL_FEATNORM_BATCH &&
         c->feature_norm != MCL_ACL_FEATNORM_IMAGE)) {
        mcl_ctx_set_error(ctx, MCL_ERR_INVALID,
                          "mcl_acl_create: bad config (n_way %d, hidden %d, heads %d, layers %d, "
                          "ff_mult %d, dropout %g, conv_channels %d, in_channels %d, image %d, "
                          "feature_norm %d)",
                          c->n_way, c->hidden, c->heads, c->layers, c->ff_mult,
                          (double)c->dropout, c->conv_channels, c->in_channels, c->image_size,
                          c->feature_norm);
        return NULL;
    }
    if (!mcl_acl_feature_stats_ok(c->feature_norm, c->feature_stats)) {
        mcl_ctx_set_error(ctx, MCL_ERR_INVALID,
                          "mcl_acl_create: feature_stats %d needs feature_norm batch (have %d); "
                          "call and context choose the statistics of batch normalization",
                          c->feature_stats, c->feature_norm);
        return NULL;
    }
    char budget[512];
    if (mcl_check_budget(mcl_acl_param_bytes(c), "the model's parameters", budget,
                         sizeof budget) != MCL_OK) {
        mcl_ctx_set_error(ctx, MCL_ERR_OOM,
                          "model (hidden %d, heads %d, layers %d, ff_mult %d, conv_channels %d, "
                          "image_size %d): %s",
                          c->hidden, c->heads, c->layers, c->ff_mult, c->conv_channels,
                          c->image_size, budget);
        return NULL;
    }
    mcl_acl *m = calloc(1, sizeof *m);
    if (!m) {
        mcl_ctx_set_error(ctx, MCL_ERR_OOM, "mcl_acl_create: out of memory");
        return NULL;
    }
    m->cfg = *c;
    m->ctx = ctx;
    m->training = 1;
    m->head_dim = c->hidden / c->heads;
    const int sp = mcl_conv4_out_side(c->image_size); /* 32 → 2, 28 → 1 (floor pooling) */
    m->n_features = c->conv_channels * sp * sp;
    m->params = mcl_params_create(ctx);
    m->layer = calloc((size_t)(c->layers > 0 ? c->layers : 1), sizeof *m->layer);
    if (!m->params || !m->layer) {
        if (mcl_ctx_status(ctx) == MCL_OK)
            mcl_ctx_set_error(ctx, MCL_ERR_OOM, "mcl_acl_create: out of memory");
        mcl_acl_free(m);
        return NULL;
    }

    uint64_t stream = 0;
    char name[48];
    int ok = 1;
    const int64_t C = c->conv_channels, Hd = c->hidden, H = c->heads, D = m->head_dim;
    const int64_t N = c->n_way, FF = (int64_t)c->ff_mult * c->hidden;
#define P(field, nm, nd, kind, v, ...)                                                        \
    do {                                                                                      \
        const int64_t sh_[] = {__VA_ARGS__};                                                  \
        (field) = add_param(m, &stream, (nm), (nd), sh_, (kind), (v));                        \
        if (!(field)) ok = 0;                                                                 \
    } while (0)

    /* Conv-4 (src/nn/conv4.h): Philox streams 0..15 */
    ok = mcl_conv4_create(&m->conv, ctx, m->params, c->in_channels, (int)C, c->image_size,
                          c->seed, stream) == MCL_OK;
    stream += 16;
    int64_t fin = m->n_features + N + 1;
    if (ok) P(m->in_w, "input.w", 2, 0, 1.0f / sqrtf((float)fin), fin, Hd);
    if (ok) P(m->in_b, "input.b", 1, 1, 0.0f, Hd);
    for (int l = 0; l < c->layers && ok; l++) {
        mcl_acl_layer *ly = &m->layer[l];
        float sd = 1.0f / sqrtf((float)D);
        snprintf(name, sizeof name, "layer%d.srwm.Wy", l);
        P(ly->Wy, name, 3, 0, sd, H, D, D);
        snprintf(name, sizeof name, "layer%d.srwm.Wq", l);
        P(ly->Wq, name, 3, 0, 0.01f * sd, H, D, D);
        snprintf(name, sizeof name, "layer%d.srwm.Wk", l);
        P(ly->Wk, name, 3, 0, sd, H, D, D);
        snprintf(name, sizeof name, "layer%d.srwm.wb", l);
        P(ly->wb, name, 3, 0, sd, H, D, 4);
        snprintf(name, sizeof name, "layer%d.srwm.ln.g", l);
        P(ly->ln_g, name, 1, 1, 1.0f, Hd);
        snprintf(name, sizeof name, "layer%d.srwm.ln.b", l);
        P(ly->ln_b, name, 1, 1, 0.0f, Hd);
        snprintf(name, sizeof name, "layer%d.srwm.out.w", l);
        P(ly->Wo, name, 2, 0, 1.0f / sqrtf((float)Hd), Hd, Hd);
        snprintf(name, sizeof name, "layer%d.ff.ln.g", l);
        P(ly->ff_ln_g, name, 1, 1, 1.0f, Hd);
        snprintf(name, sizeof name, "layer%d.ff.ln.b", l);
        P(ly->ff_ln_b, name, 1, 1, 0.0f, Hd);
        snprintf(name, sizeof name, "layer%d.ff.w1", l);
        P(ly->W1, name, 2, 0, 1.0f / sqrtf((float)Hd), Hd, FF);
        snprintf(name, sizeof name, "layer%d.ff.b1", l);
        P(ly->b1, name, 1, 1, 0.0f, FF);
        snprintf(name, sizeof name, "layer%d.ff.w2", l);
        P(ly->W2, name, 2, 0, 1.0f / sqrtf((float)FF), FF, Hd);
        snprintf(name, sizeof name, "layer%d.ff.b2", l);
        P(ly->b2, name, 1, 1, 0.0f, Hd);
    }
    if (ok) P(m->head_w, "head.w", 2, 0, 1.0f / sqrtf((float)Hd), Hd, N);
    if (ok) P(m->head_b, "head.b", 1, 1, 0.0f, N);
    if (ok && c->feature_norm == MCL_ACL_FEATNORM_BATCH) { /* appended: init streams above unchanged */
        const int64_t F = m->n_features;
        P(m->run_mean, "featnorm.running_mean", 1, 1, 0.0f, F);
        P(m->run_var, "featnorm.running_var", 1, 1, 1.0f, F);
    }
#undef P
    if (!ok) {
        mcl_acl_free(m);
        return NULL;
    }
    return m;
}

void mcl_acl_free(mcl_acl *m)
{
    if (!m) return;
    mcl_tensor_free(m->bn_neg);
    mcl_tensor_free(m->bn_diag);
    mcl_params_free(m->params); /* owns every parameter tensor */
    free(m->layer);
    free(m);
}

void mcl_acl_set_training(mcl_acl *m, int training)
{
    if (m) m->training = training ? 1 : 0;
}

mcl_params *mcl_acl_params(mcl_acl *m)
{
    return m ? m->params : NULL;
}

static mcl_acl_state *state_new(int layers, int64_t batch)
{
    mcl_acl_state *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->layers = layers;
    s->batch = batch;
    s->t = calloc((size_t)(layers > 0 ? layers : 1) * 4, sizeof *s->t);
    if (!s->t) {
        free(s);
        return NULL;
    }
    return s;
}

void mcl_acl_state_free(mcl_acl_state *s)
{
    if (!s) return;
    if (s->t)
        for (int i = 0; i < s->layers * 4; i++) mcl_tensor_free(s->t[i]);
    mcl_tensor_free(s->feat_mean);
    mcl_tensor_free(s->feat_m2);
    free(s->t);
    free(s);
}

mcl_acl_state *mcl_acl_state_detach(const mcl_acl_state *s)
{
    if (!s) return NULL;
    mcl_acl_state *d = state_new(s->layers, s->batch);
    if (!d) return NULL;
    for (int i = 0; i < s->layers * 4; i++) {
        d->t[i] = s->t[i] ? mcl_detach(s->t[i]) : NULL;
        if (!d->t[i]) {
            mcl_acl_state_free(d);
            return NULL;
        }
    }
    d->feat_n = s->feat_n;
    if (s->feat_n > 0) {
        d->feat_mean = s->feat_mean ? mcl_detach(s->feat_mean) : NULL;
        d->feat_m2 = s->feat_m2 ? mcl_detach(s->feat_m2) : NULL;
        if (!d->feat_mean || !d->feat_m2) {
            mcl_acl_state_free(d);
            return NULL;
        }
    }
    return d;
}

mcl_acl_state *mcl_acl_param_state(mcl_acl *m, mcl_ctx *ctx, int64_t B)
{
    if (!m || !ctx || B < 1) {
        if (ctx) mcl_ctx_set_error(ctx, MCL_ERR_INVALID, "mcl_acl_param_state: bad argument");
        return NULL;
    }
    mcl_acl_state *s = state_new(m->cfg.layers, B);
    if (!s) {
        mcl_ctx_set_error(ctx, MCL_ERR_OOM, "mcl_acl_param_state: out of memory");
        return NULL;
    }
    for (int l = 0; l < m->cfg.layers; l++) {
        mcl_acl_layer *ly = &m->layer[l];
        mcl_tensor *params4[4] = {ly->Wy, ly->Wq, ly->Wk, ly->wb};
        if (mcl_repeat_batch4(ctx, params4, B, 0, s->t + 4 * l) != MCL_OK) { /* one op */
            mcl_acl_state_free(s);
            if (mcl_ctx_status(ctx) == MCL_OK)
                mcl_ctx_set_error(ctx, MCL_ERR_NULL, "mcl_acl_param_state: repeat failed");
            return NULL;
        }
        for (int k = 0; k < 4; k++) mcl_tensor_keep(s->t[4 * l + k]);
    }
    return s;
}

/* x [R,K] · W [K,N] (+ b [N]) */
static mcl_tensor *linear(mcl_ctx *ctx, mcl_tensor *x, mcl_tensor *w, mcl_tensor *b)
{
    mcl_tensor *y = mcl_matmul(ctx, x, w, 0, 0);
    return b ? mcl_bias_add(ctx, y, b) : y;
}

/* A [n] tensor of constant v (caller frees; the tape keeps what it uses). */
static mcl_tensor *constant(mcl_ctx *ctx, int64_t n, float v)
{
    mcl_tensor *t = mcl_tensor_new(ctx, n, 0, 0, 0);
    if (t && mcl_tensor_fill(t, v) != MCL_OK) {
        mcl_tensor_free(t);
        return NULL;
    }
    return t;
}

/* LayerNorm over the last dim of x [R,n] with gain 1 and shift 0 (parameter-free). */
static mcl_tensor *plain_norm(mcl_ctx *ctx, mcl_tensor *x, int64_t n)
{
    mcl_tensor *one = constant(ctx, n, 1.0f), *zero = constant(ctx, n, 0.0f);
    mcl_tensor *y = one && zero ? mcl_layer_norm(ctx, x, one, zero, ACL_NORM_EPS) : NULL;
    mcl_tensor_free(one);
    mcl_tensor_free(zero);
    return y;
}

#define RUN_MOMENTUM 0.1f

/* Per feature over the R rows of f [R,F] (LayerNorm of fᵀ, gain 1, shift 0):
 *   y[r][i] = (f[r][i] − μ_i) / sqrt(σ²_i + eps),  μ_i = mean_r f[r][i],  σ²_i = mean_r (f[r][i] − μ_i)².
 * The rows of every sequence of the call share the statistics (feature_stats call). */
static mcl_tensor *call_norm(mcl_ctx *ctx, mcl_tensor *f, int64_t rows)
{
    mcl_tensor *ft = mcl_transpose(ctx, f); /* [F,R] */
    return mcl_transpose(ctx, plain_norm(ctx, ft, rows));
}

/* feature_norm batch, training (feature_stats running or call): call_norm, and the running
 * estimates move towards this call's mean and (biased) variance:
 * run = (1 - 0.1)·run + 0.1·batch, without gradient. */
static mcl_tensor *batch_norm_train(mcl_acl *m, mcl_ctx *ctx, mcl_tensor *f, int64_t rows)
{
    mcl_tensor *y = call_norm(ctx, f, rows);
    if (m->hold_running) return y;
    mcl_tensor *ft = mcl_transpose(ctx, f); /* [F,R] */
    mcl_no_grad_begin(ctx);
    mcl_tensor *mean = mcl_mean_last(ctx, ft);                   /* [F] */
    mcl_tensor *var = mcl_sub(ctx, mcl_mean_last(ctx, mcl_mul(ctx, ft, ft)), mcl_mul(ctx, mean, mean));
    var = mcl_relu(ctx, var); /* E[x²] − E[x]² can round below 0 */
    mcl_tensor *nm = mcl_add(ctx, mcl_scale(ctx, m->run_mean, 1.0f - RUN_MOMENTUM), mcl_scale(ctx, mean, RUN_MOMENTUM));
    mcl_tensor *nv = mcl_add(ctx, mcl_scale(ctx, m->run_var, 1.0f - RUN_MOMENTUM), mcl_scale(ctx, var, RUN_MOMENTUM));
    int ok = nm && nv && mcl_tensor_copy_into(m->run_mean, nm) == MCL_OK &&
             mcl_tensor_copy_into(m->run_var, nv) == MCL_OK;
    mcl_no_grad_end(ctx);
    return ok ? y : NULL;
}

/* feature_norm batch, evaluation: (f − running mean)·diag(1/sqrt(running var + eps)). The
 * F-sized statistics go through the host to build −mean and the diagonal, kept on the device
 * (m->bn_neg, m->bn_diag) until the running estimates change (their buffers' generation), so
 * an evaluation reads them once, not at every call. */
static mcl_tensor *batch_norm_eval(mcl_acl *m, mcl_ctx *ctx, mcl_tensor *f)
{
    const int64_t F = m->n_features;
    const void *bm = m->run_mean->buf, *bv = m->run_var->buf;
    const uint64_t gm = mcl_tensor_buffer_gen(m->run_mean), gv = mcl_tensor_buffer_gen(m->run_var);
    if (m->bn_neg && m->bn_neg->ctx == ctx && m->bn_buf[0] == bm && m->bn_buf[1] == bv &&
        m->bn_gen[0] == gm && m->bn_gen[1] == gv)
        return mcl_matmul(ctx, mcl_bias_add(ctx, f, m->bn_neg), m->bn_diag, 0, 0);
    mcl_tensor_free(m->bn_neg);
    mcl_tensor_free(m->bn_diag);
    m->bn_neg = m->bn_diag = NULL;
    float *mv = malloc((size_t)F * sizeof *mv), *vv = malloc((size_t)F * sizeof *vv);
    float *dg = calloc((size_t)(F * F), sizeof *dg);
    mcl_tensor *neg = mcl_tensor_new(ctx, F, 0, 0, 0), *diag = mcl_tensor_new(ctx, F, F, 0, 0);
    mcl_tensor *y = NULL;
    if (mv && vv && dg && neg && diag && mcl_tensor_read(m->run_mean, mv, F) == MCL_OK &&
        mcl_tensor_read(m->run_var, vv, F) == MCL_OK) {
        for (int64_t i = 0; i < F; i++) {
            dg[i * F + i] = 1.0f / sqrtf(vv[i] + ACL_NORM_EPS);
            mv[i] = -mv[i];
        }
        if (mcl_tensor_write(neg, mv, F) == MCL_OK && mcl_tensor_write(diag, dg, F * F) == MCL_OK) {
            m->bn_neg = neg;
            m->bn_diag = diag;
            neg = diag = NULL;
            m->bn_buf[0] = bm;
            m->bn_buf[1] = bv;
            m->bn_gen[0] = gm;
            m->bn_gen[1] = gv;
            y = mcl_matmul(ctx, mcl_bias_add(ctx, f, m->bn_neg), m->bn_diag, 0, 0);
        }
    } else if (mcl_ctx_status(ctx) == MCL_OK) {
        mcl_ctx_set_error(ctx, MCL_ERR_OOM, "mcl_acl_forward: out of memory");
    }
    free(mv);
    free(vv);
    free(dg);
    mcl_tensor_free(neg);
    mcl_tensor_free(diag);
    return y;
}

/* x [B·L, F] (row b·L + t = step t of sequence b) -> [B, F]: each sequence's sum over its rows.
 *   [B·L,F] -reshape-> [B,L,F,1] -permute-> [B,F,L,1] -reshape-> [B,F,L] -sum_last-> [B,F] */
static mcl_tensor *seq_sum(mcl_ctx *ctx, mcl_tensor *x, int64_t B, int64_t L, int64_t F)
{
    const int64_t s4[4] = {B, L, F, 1}, s3[3] = {B, F, L};
    const int perm[4] = {0, 2, 1, 3};
    if (L == 1) return x;
    return mcl_sum_last(ctx, mcl_reshape(ctx, mcl_permute(ctx, mcl_reshape(ctx, x, 4, s4), perm), 3, s3));
}

/* s [B, F] -> [B·L, F]: sequence b's row at rows b·L .. b·L+L-1 (gradient: the sum over them).
 *   [B,F] -repeat_rows-> [B,L,F] -reshape-> [B·L,F] */
static mcl_tensor *seq_rows(mcl_ctx *ctx, mcl_tensor *s, int64_t B, int64_t L, int64_t F)
{
    const int64_t s2[2] = {B * L, F};
    if (L == 1) return s;
    return mcl_reshape(ctx, mcl_repeat_rows(ctx, s, L), 2, s2);
}

/* 1 / sqrt(m2 / n + eps), elementwise on m2 [B,F], as exp(−½·log(m2/n + eps)) (existing ops,
 * so the gradient reaches m2). */
static mcl_tensor *inv_std(mcl_ctx *ctx, mcl_tensor *m2, int64_t n, int64_t F)
{
    mcl_tensor *eps = constant(ctx, F, ACL_NORM_EPS);
    mcl_tensor *v = mcl_bias_add(ctx, mcl_scale(ctx, m2, 1.0f / (float)n), eps);
    mcl_tensor_free(eps);
    return mcl_exp(ctx, mcl_scale(ctx, mcl_log(ctx, v), -0.5f));
}

/* feature_stats context (training and evaluation alike, gradients through every statistic).
 * Sequence b has been given n₀ context examples with mean feature vector μ₀ and sum of
 * squared deviations M₀ (state_in; n₀ = 0 at W0); this call brings L more, x_1..x_L [F]:
 *   μ₁ = (1/L)·Σ_t x_t,   M₁ = Σ_t (x_t − μ₁)²,   n = n₀ + L,   δ = μ₁ − μ₀,
 *   μ  = μ₀ + δ·L/n,      M  = M₀ + M₁ + δ²·n₀·L/n          (the pairwise update of Chan et
 *   al.; with n₀ = 0 simply μ₁ and M₁),
 *   y_t = (x_t − μ) / sqrt(M/n + eps)                            (elementwise over the F features)
 * and (n, μ, M) go to the new state. A query (mcl_acl_forward_query) instead reads
 *   y = (x − μ₀) / sqrt(M₀/n₀ + eps),
 * and with no context yet (n₀ = 0) the features pass unnormalized. All rows of a call are
 * normalized with the statistics that include the whole call (the context is a set); no
 * statistic ever mixes two sequences.
 * f [B·L, F]; st_in NULL or with feat_n; *st_out (when not NULL) receives (n, μ, M). */
static mcl_tensor *context_norm(mcl_acl *m, mcl_ctx *ctx, mcl_tensor *f, int64_t B, int64_t L,
                                const mcl_acl_state *st_in, int query, mcl_acl_state *st_out)
{
    const int64_t F = m->n_features, n0 = st_in ? st_in->feat_n : 0;
    mcl_tensor *m0 = n0 > 0 ? st_in->feat_mean : NULL, *M0 = n0 > 0 ? st_in->feat_m2 : NULL;
    if (query) {
        if (n0 == 0) return f;
        mcl_tensor *d = mcl_sub(ctx, f, seq_rows(ctx, m0, B, L, F));
        return mcl_mul(ctx, d, seq_rows(ctx, inv_std(ctx, M0, n0, F), B, L, F));
    }
    const int64_t n = n0 + L;
    mcl_tensor *mu1 = mcl_scale(ctx, seq_sum(ctx, f, B, L, F), 1.0f / (float)L); /* [B,F] */
    mcl_tensor *d1 = mcl_sub(ctx, f, seq_rows(ctx, mu1, B, L, F));              /* [B·L,F] */
    mcl_tensor *M1 = seq_sum(ctx, mcl_mul(ctx, d1, d1), B, L, F);
    mcl_tensor *mu = mu1, *M = M1, *d = d1;
    if (n0 > 0) {
        mcl_tensor *delta = mcl_sub(ctx, mu1, m0);
        mu = mcl_add(ctx, m0, mcl_scale(ctx, delta, (float)((double)L / (double)n)));
        M = mcl_add(ctx, mcl_add(ctx, M0, M1),
                    mcl_scale(ctx, mcl_mul(ctx, delta, delta), (float)((double)n0 * (double)L / (double)n)));
        d = mcl_sub(ctx, f, seq_rows(ctx, mu, B, L, F));
    }
    mcl_tensor *y = mcl_mul(ctx, d, seq_rows(ctx, inv_std(ctx, M, n, F), B, L, F));
    if (!y) return NULL;
    if (st_out) {
        st_out->feat_n = n;
        st_out->feat_mean = mcl_tensor_keep(mu);
        st_out->feat_m2 = mcl_tensor_keep(M);
    }
    return y;
}

static mcl_status fail_from_ctx(mcl_ctx *ctx, const char *what)
{
    if (mcl_ctx_status(ctx) != MCL_OK) return mcl_ctx_status(ctx);
    return mcl_ctx_set_error(ctx, MCL_ERR_NULL, "mcl_acl_forward: %s failed", what);
}

/* logits NULL: the state only (state_out not NULL). The state is complete after the last
 * layer's srwm, so that layer's output block and the head, whose values nothing would read,
 * are not run; their dropouts' Philox streams are still taken, so every later dropout mask
 * (and every result) is the same as with the logits computed. */
static mcl_status forward(mcl_acl *m, mcl_ctx *ctx, mcl_tensor *images, mcl_tensor *labels_in,
                          int64_t B, int64_t L, const mcl_acl_state *state_in, int query,
                          mcl_tensor **logits, mcl_acl_state **state_out)
{
    if (!ctx) return MCL_ERR_NULL;
    if (logits) *logits = NULL;
    if (state_out) *state_out = NULL;
    mcl_tensor *pre = m ? m->feat_next : NULL; /* the objective's batched Conv-4 (acl.h) */
    mcl_tensor *pre_oh = m ? m->oh_next : NULL;  /* the objective's queries' one-hot (acl.h) */
    if (m) m->feat_next = m->oh_next = NULL;
    if (!m || !images || !labels_in || (!logits && !state_out))
        return mcl_ctx_set_error(ctx, MCL_ERR_NULL, "mcl_acl_forward: NULL argument");
    if (ctx != m->ctx)
        return mcl_ctx_set_error(ctx, MCL_ERR_INVALID,
                                 "mcl_acl_forward: ctx is not the model's context");
    const mcl_acl_config *c = &m->cfg;
    const int64_t S = c->image_size, R = B * L, Hd = c->hidden, H = c->heads, D = m->head_dim;
    char sb[64], sb2[64];
    if (B < 1 || L < 1)
        return mcl_ctx_set_error(ctx, MCL_ERR_INVALID, "mcl_acl_forward: B %lld, L %lld",
                                 (long long)B, (long long)L);
    if (images->ndim != 4 || images->shape[0] != R || images->shape[1] != c->in_channels ||
        images->shape[2] != S || images->shape[3] != S)
        return mcl_ctx_set_error(ctx, MCL_ERR_SHAPE,
                                 "mcl_acl_forward: images %s, want [%lld,%d,%lld,%lld]",
                                 mcl_shape_str(images, sb, sizeof sb), (long long)R,
                                 c->in_channels, (long long)S, (long long)S);
    if (mcl_tensor_numel(labels_in) != R)
        return mcl_ctx_set_error(ctx, MCL_ERR_SHAPE, "mcl_acl_forward: labels %s, want [%lld]",
                                 mcl_shape_str(labels_in, sb, sizeof sb), (long long)R);
    if (state_in) {
        if (state_in->layers != c->layers || state_in->batch != B)
            return mcl_ctx_set_error(ctx, MCL_ERR_SHAPE,
                                     "mcl_acl_forward: state for %d layers, batch %lld; model "
                                     "has %d layers, call batch %lld",
                                     state_in->layers, (long long)state_in->batch, c->layers,
                                     (long long)B);
        for (int i = 0; i < 4 * c->layers; i++) {
            mcl_tensor *t = state_in->t[i];
            int64_t last = (i % 4) == 3 ? 4 : D;
            if (!t || t->ndim != 4 || t->shape[0] != B || t->shape[1] != H ||
                t->shape[2] != D || t->shape[3] != last)
                return mcl_ctx_set_error(ctx, MCL_ERR_SHAPE,
                                         "mcl_acl_forward: state tensor %d is %s, want "
                                         "[%lld,%lld,%lld,%lld]",
                                         i, t ? mcl_shape_str(t, sb2, sizeof sb2) : "NULL",
                                         (long long)B, (long long)H, (long long)D,
                                         (long long)last);
        }
        if (state_in->feat_n < 0 ||
            (state_in->feat_n > 0 &&
             (!state_in->feat_mean || !state_in->feat_m2 ||
              mcl_tensor_numel(state_in->feat_mean) != B * m->n_features ||
              mcl_tensor_numel(state_in->feat_m2) != B * m->n_features)))
            return mcl_ctx_set_error(ctx, MCL_ERR_SHAPE,
                                     "mcl_acl_forward: state feature statistics (count %lld) "
                                     "missing or not [%lld,%lld]",
                                     (long long)state_in->feat_n, (long long)B,
                                     (long long)m->n_features);
    }
    const float p = c->dropout;
    const int tr = m->training;

    /* 1. Conv-4 (or its features from the objective's batched run, the same values) */
    mcl_tensor *feat = NULL;
    if (pre) {
        if (pre->ndim != 2 || pre->shape[0] != R || pre->shape[1] != m->n_features)
            return mcl_ctx_set_error(ctx, MCL_ERR_SHAPE, "mcl_acl_forward: features %s, want [%lld,%d]",
                                     mcl_shape_str(pre, sb, sizeof sb), (long long)R, m->n_features);
        if (tr && p != 0.0f) {
            if (mcl_ctx_stream(ctx) != m->feat_stream)
                return mcl_ctx_set_error(ctx, MCL_ERR_INVALID,
                                         "mcl_acl_forward: batched Conv-4 drew streams from %llu, "
                                         "the call's are from %llu",
                                         (unsigned long long)m->feat_stream,
                                         (unsigned long long)mcl_ctx_stream(ctx));
            for (int k = 0; k < 4; k++) (void)mcl_ctx_next_stream(ctx); /* its 4 dropouts */
        }
        feat = pre;
    } else {
        feat = mcl_conv4_forward(ctx, &m->conv, images, R, p, tr); /* (C,H,W) order */
    }
    if (!feat) return fail_from_ctx(ctx, "conv stack");
    mcl_acl_state *so = state_new(c->layers, B);
    if (!so) return mcl_ctx_set_error(ctx, MCL_ERR_OOM, "mcl_acl_forward: out of memory");
    if (c->feature_norm == MCL_ACL_FEATNORM_BATCH && c->feature_stats == MCL_ACL_FEATSTATS_CONTEXT)
        feat = context_norm(m, ctx, feat, B, L, state_in, query, so);
    else if (c->feature_norm == MCL_ACL_FEATNORM_BATCH && !tr && c->feature_stats == MCL_ACL_FEATSTATS_CALL)
        feat = call_norm(ctx, feat, R);
    else if (c->feature_norm == MCL_ACL_FEATNORM_BATCH)
        feat = tr ? batch_norm_train(m, ctx, feat, R) : batch_norm_eval(m, ctx, feat);
    else if (c->feature_norm == MCL_ACL_FEATNORM_IMAGE)
        feat = plain_norm(ctx, feat, m->n_features);

    /* 2. label input */
    const int64_t lshape[1] = {R};
    mcl_tensor *lab = labels_in->ndim == 1 ? labels_in : mcl_reshape(ctx, labels_in, 1, lshape);
    if (pre_oh && (pre_oh->ndim != 2 || pre_oh->shape[0] != R || pre_oh->shape[1] != c->n_way + 1)) {
        mcl_acl_state_free(so);
        return mcl_ctx_set_error(ctx, MCL_ERR_SHAPE, "mcl_acl_forward: one-hot labels %s, want [%lld,%d]",
                                 mcl_shape_str(pre_oh, sb, sizeof sb), (long long)R, c->n_way + 1);
    }
    mcl_tensor *oh = pre_oh ? pre_oh : mcl_one_hot(ctx, lab, c->n_way + 1);
    mcl_tensor *h = linear(ctx, mcl_concat(ctx, feat, oh, 1), m->in_w, m->in_b);
    if (!h) {
        mcl_acl_state_free(so);
        return fail_from_ctx(ctx, "input layer");
    }

    /* 3. layers */
    const int perm[4] = {0, 2, 1, 3};
    const int64_t s4[4] = {B, L, H, D}, s2[2] = {R, Hd}, sq[4] = {B, H, 1, D};
    for (int l = 0; l < c->layers; l++) {
        mcl_acl_layer *ly = &m->layer[l];
        /* [B,H,L,D]; with L = 1 the permute only moves a dim of size 1: one reshape (a view,
         * whose gradient the tape makes a view into h's) */
        mcl_tensor *xs = L == 1 ? mcl_reshape(ctx, h, 4, sq)
                                : mcl_permute(ctx, mcl_reshape(ctx, h, 4, s4), perm);
        mcl_tensor *st[4];
        mcl_tensor *params4[4] = {ly->Wy, ly->Wq, ly->Wk, ly->wb};
        if (state_in)
            for (int k = 0; k < 4; k++) st[k] = state_in->t[4 * l + k];
        else if (mcl_repeat_batch4(ctx, params4, B, 0, st) != MCL_OK) /* one op */
            st[0] = NULL;
        mcl_tensor *y = NULL, *sout[4] = {NULL, NULL, NULL, NULL};
        if (!xs || !st[0] || mcl_srwm(ctx, xs, st, &y, sout) != MCL_OK || !y) {
            mcl_acl_state_free(so);
            return fail_from_ctx(ctx, "srwm");
        }
        for (int k = 0; k < 4; k++) so->t[4 * l + k] = mcl_tensor_keep(sout[k]);
        if (!logits && l == c->layers - 1) { /* state only: the rest is never read */
            if (tr && p != 0.0f)
                for (int k = 0; k < 3; k++) (void)mcl_ctx_next_stream(ctx); /* the 3 dropouts below */
            break;
        }
        y = mcl_reshape(ctx, mcl_permute(ctx, y, perm), 2, s2); /* concat heads */
        /* the residual adds take their branch's dropout: h + dropout(y) as one op */
        y = linear(ctx, y, ly->Wo, NULL);
        h = mcl_add_dropout(ctx, mcl_layer_norm(ctx, h, ly->ln_g, ly->ln_b, ACL_NORM_EPS), y, p, tr);
        /* feed-forward block */
        mcl_tensor *f = mcl_layer_norm(ctx, h, ly->ff_ln_g, ly->ff_ln_b, ACL_NORM_EPS);
        /* W1's bias, relu and dropout as one op */
        f = mcl_bias_dropout_relu(ctx, linear(ctx, f, ly->W1, NULL), ly->b1, p, tr);
        h = mcl_bias_add_dropout(ctx, h, linear(ctx, f, ly->W2, NULL), ly->b2, p, tr); /* W2's bias too */
        if (!h) {
            mcl_acl_state_free(so);
            return fail_from_ctx(ctx, "layer");
        }
    }

    if (!logits) { /* state only */
        *state_out = so;
        return MCL_OK;
    }

    /* 4. head on the last step */
    const int64_t s3[3] = {B, L, Hd}, sl[2] = {B, Hd};
    mcl_tensor *last = mcl_reshape(ctx, mcl_slice(ctx, mcl_reshape(ctx, h, 3, s3), 1, L - 1, 1),
                                   2, sl);
    mcl_tensor *out = linear(ctx, last, m->head_w, m->head_b);
    if (!out) {
        mcl_acl_state_free(so);
        return fail_from_ctx(ctx, "head");
    }
    *logits = out;
    if (state_out)
        *state_out = so;
    else
        mcl_acl_state_free(so);
    return MCL_OK;
}

mcl_status mcl_acl_forward(mcl_acl *m, mcl_ctx *ctx, mcl_tensor *images, mcl_tensor *labels_in,
                           int64_t B, int64_t L, const mcl_acl_state *state_in,
                           mcl_tensor **logits, mcl_acl_state **state_out)
{
    if (!logits) return ctx ? mcl_ctx_set_error(ctx, MCL_ERR_NULL, "mcl_acl_forward: NULL argument") : MCL_ERR_NULL;
    return forward(m, ctx, images, labels_in, B, L, state_in, 0, logits, state_out);
}

mcl_status mcl_acl_forward_state(mcl_acl *m, mcl_ctx *ctx, mcl_tensor *images,
                                 mcl_tensor *labels_in, int64_t B, int64_t L,
                                 const mcl_acl_state *state_in, mcl_acl_state **state_out)
{
    if (!state_out) return ctx ? mcl_ctx_set_error(ctx, MCL_ERR_NULL, "mcl_acl_forward_state: NULL state_out") : MCL_ERR_NULL;
    return forward(m, ctx, images, labels_in, B, L, state_in, 0, NULL, state_out);
}

mcl_status mcl_acl_forward_query(mcl_acl *m, mcl_ctx *ctx, mcl_tensor *images,
                                 mcl_tensor *labels_in, int64_t B, int64_t L,
                                 const mcl_acl_state *state_in, mcl_tensor **logits)
{
    return forward(m, ctx, images, labels_in, B, L, state_in, 1, logits, NULL);
}
