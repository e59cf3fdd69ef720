/* lm_text.c — sampling and scoring text with a trained language model (lm_text.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lm_text.h"
#include "metanet.h"
#include "rng.h"

/* A byte from logits lg[MCL_LM_VOCAB] at temperature T (T <= 0: the first maximum), given a
 * uniform u in [0, 1): the smallest j with sum_{i <= j} p_i > u·sum p, p_i = exp((lg_i - max)/T). */
static int draw(const float *lg, float T, float u)
{
    int best = 0;
    for (int j = 1; j < MCL_LM_VOCAB; j++)
        if (lg[j] > lg[best]) best = j;
    if (T <= 0) return best;
    double p[MCL_LM_VOCAB], s = 0;
    for (int j = 0; j < MCL_LM_VOCAB; j++) s += p[j] = exp(((double)lg[j] - lg[best]) / T);
    double acc = 0, target = (double)u * s;
    for (int j = 0; j < MCL_LM_VOCAB; j++)
        if ((acc += p[j]) > target) return j;
    return best;
}

/* "LMSAMP": the stream of the sampler's uniform numbers. */
#define LM_SAMPLE_STREAM 0x4c4d53414d50ULL

mcl_status mcl_lm_sample(mcl_lm *m, const uint8_t *prompt, int64_t n_prompt, int64_t n, float temperature,
                         uint64_t seed, uint8_t *out, char *err, size_t len)
{
    if (!m || !prompt || (!out && n > 0)) return mcl_errbuf(err, len, MCL_ERR_NULL, "sample: NULL argument");
    if (n_prompt < 1 || n_prompt > (int64_t)1 << 20 || n < 0 || n > (int64_t)1 << 24)
        return mcl_errbuf(err, len, MCL_ERR_INVALID, "sample: prompt of %lld bytes (1..2^20), %lld bytes to draw (0..2^24)",
                          (long long)n_prompt, (long long)n);
    if (!(temperature >= 0.0f) || !isfinite(temperature))
        return mcl_errbuf(err, len, MCL_ERR_INVALID, "sample: temperature %g must be a finite number >= 0",
                          (double)temperature);
    mcl_ctx *ctx = m->ctx;
    mcl_lm_memory mem;
    memset(&mem, 0, sizeof mem);
    float *lg = malloc((size_t)n_prompt * MCL_LM_VOCAB * sizeof *lg), *tok = malloc((size_t)n_prompt * sizeof *tok);
    mcl_status st = lg && tok ? mcl_lm_memory_create(m, 1, m->cfg.mem_len, &mem) : MCL_ERR_OOM;
    if (st == MCL_OK && m->mn) st = mcl_metanet_clear(m->mn);
    int64_t k = n_prompt;
    for (int64_t i = 0; i < k && st == MCL_OK; i++) tok[i] = (float)prompt[i];
    mcl_no_grad_begin(ctx);
    for (int64_t step = 0; step <= n && st == MCL_OK; step++) {
        mcl_tensor *x = mcl_tensor_new(ctx, 1, k, 0, 0), *logits = NULL;
        mcl_lm_pending pend;
        st = x ? mcl_tensor_write(x, tok, k) : mcl_ctx_status(ctx);
        if (st == MCL_OK) st = mcl_lm_forward(m, MCL_FAST_STEP_KEPT, &mem, x, &logits, &pend);
        if (st == MCL_OK) st = mcl_tensor_read(logits, lg, k * MCL_LM_VOCAB);
        if (st == MCL_OK) st = mcl_lm_memory_commit(&mem, &pend);
        mcl_tensor_free(x);
        mcl_ctx_reset(ctx);
        if (st != MCL_OK || step == n) break;
        const int b = draw(lg + (k - 1) * MCL_LM_VOCAB, temperature,
                           mcl_rng_uniform(seed, LM_SAMPLE_STREAM, (uint64_t)step));
        out[step] = (uint8_t)b;
        tok[0] = (float)b;
        k = 1;
    }
    mcl_no_grad_end(ctx);
    if (st == MCL_ERR_OOM && (!lg || !tok)) mcl_errbuf(err, len, st, "sample: out of host memory");
    else if (st != MCL_OK) mcl_errbuf(err, len, st, "sample: %s", mcl_ctx_error(ctx));
    free(lg);
    free(tok);
    mcl_lm_memory_free(&mem);
    return st;
}

struct mcl_lm_text {
    mcl_lm *m;
    mcl_lm_run cfg;
};

mcl_status mcl_lm_text_open(mcl_ctx *ctx, const char *path, mcl_lm_text **out, char *err, size_t len)
{
    if (out) *out = NULL;
    if (!ctx || !path || !out) return mcl_errbuf(err, len, MCL_ERR_NULL, "lm: NULL argument");
    mcl_lm_text *t = calloc(1, sizeof *t);
    if (!t) return mcl_errbuf(err, len, MCL_ERR_OOM, "lm: out of host memory");
    mcl_status st = mcl_lm_open(ctx, path, &t->m, &t->cfg, NULL, err, len);
    if (st != MCL_OK) {
        free(t);
        return st;
    }
    *out = t;
    return MCL_OK;
}

void mcl_lm_text_free(mcl_lm_text *t)
{
    if (!t) return;
    mcl_lm_free(t->m);
    free(t);
}

int mcl_lm_text_has_fast_weights(const mcl_lm_text *t) { return t && t->m && t->m->mn; }
mcl_lm *mcl_lm_text_model(mcl_lm_text *t) { return t ? t->m : NULL; }

mcl_status mcl_lm_text_score(mcl_lm_text *t, const uint8_t *bytes, int64_t n, mcl_lm_mode mode, float lr,
                             float decay, double *bits, int64_t *chars, char *err, size_t len)
{
    if (!t || !bytes || !bits || !chars) return mcl_errbuf(err, len, MCL_ERR_NULL, "score: NULL argument");
    if (n < 2) return mcl_errbuf(err, len, MCL_ERR_INVALID, "score: a text of %lld bytes (at least 2)", (long long)n);
    if (mode != MCL_LM_STATIC && mode != MCL_LM_DYNAMIC && mode != MCL_LM_SMN)
        return mcl_errbuf(err, len, MCL_ERR_INVALID, "score: unknown mode %d", (int)mode);
    if (mode == MCL_LM_SMN && !t->m->mn)
        return mcl_errbuf(err, len, MCL_ERR_INVALID, "score: this model has no fast weights (mode smn)");
    if (!isfinite(lr) || !isfinite(decay) || decay < 0.0f)
        return mcl_errbuf(err, len, MCL_ERR_INVALID, "score: lr %g, decay %g", (double)lr, (double)decay);
    mcl_lm_eval_opts o;
    mcl_lm_eval_opts_default(&o);
    o.mode = mode;
    o.seg_len = t->cfg.seg_len;
    o.h = t->cfg.eval_h;
    if (lr > 0.0f) {
        o.lr = lr;
        o.decay = decay;
    }
    const int64_t start = 0;
    const int domain = 0;
    const mcl_lm_stream s = {bytes, n, 1, &start, &domain, 1};
    mcl_lm_eval_result r;
    memset(&r, 0, sizeof r);
    mcl_status st = mcl_lm_evaluate(t->m, &s, &o, &r, err, len);
    if (st == MCL_OK) {
        *bits = r.bits;
        *chars = r.chars;
    }
    mcl_lm_eval_result_free(&r);
    return st;
}
