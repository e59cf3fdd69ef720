/* lm_eval.c — the three evaluations of a trained language model on a stream (lm_train.h):
 * static, dynamic (Krause et al. 2018) and Sparse-MetaNet (fast weights only). Every mode
 * predicts a segment BEFORE it learns from it, so each byte is scored by a model that has
 * not seen it (prequential). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend.h"
#include "lm_train.h"
#include "ops.h"
#include "params.h"
#include "tensor_impl.h"
#include "util.h"

#define fail mcl_errbuf

void mcl_lm_eval_opts_default(mcl_lm_eval_opts *o)
{
    memset(o, 0, sizeof *o);
    o->mode = MCL_LM_STATIC;
    o->seg_len = 128;
    o->lr = 1e-4f;
    o->decay = 0.0f;
    o->h.p = 0.5f;
    o->h.gamma = 0.999f;
    o->h.beta1 = 0.5f;
    o->h.beta2 = 0.5f;
}

void mcl_lm_eval_result_free(mcl_lm_eval_result *r)
{
    if (!r) return;
    free(r->dom_bits);
    free(r->dom_chars);
    r->dom_bits = NULL;
    r->dom_chars = NULL;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The slow weights dynamic evaluation moves: every trainable tensor but the meta-learners
 * (which a frozen-M forward never reaches). */
typedef struct dyn_state {
    int n;
    mcl_tensor **w, **w0;
} dyn_state;

static void dyn_free(dyn_state *d)
{
    for (int i = 0; i < d->n; i++) mcl_tensor_free(d->w0[i]);
    free(d->w);
    free(d->w0);
    memset(d, 0, sizeof *d);
}

static mcl_status dyn_init(mcl_lm *m, dyn_state *d)
{
    memset(d, 0, sizeof *d);
    const int np = mcl_params_count(m->params);
    d->w = calloc((size_t)np, sizeof *d->w);
    d->w0 = calloc((size_t)np, sizeof *d->w0);
    if (!d->w || !d->w0) return MCL_ERR_OOM;
    for (int i = 0; i < np; i++) {
        mcl_tensor *t = mcl_params_get(m->params, i);
        if (!(t->flags & MCL_TF_REQUIRES_GRAD) || strstr(mcl_tensor_name(t), ".meta.")) continue;
        mcl_tensor *c = mcl_tensor_create(m->ctx, mcl_tensor_ndim(t), mcl_tensor_shape(t));
        if (!c || mcl_tensor_copy_into(c, t) != MCL_OK) {
            mcl_tensor_free(c);
            return mcl_ctx_status(m->ctx) != MCL_OK ? mcl_ctx_status(m->ctx) : MCL_ERR_OOM;
        }
        d->w[d->n] = t;
        d->w0[d->n++] = c;
    }
    return MCL_OK;
}

/* θ ← (θ − lr·g) + decay·(θ0 − θ) for every weight the loss reached (no tape): one dyn_step op
 * per weight, in place (ops.def; the floats of the chain scale, sub, sub, scale, add and a copy
 * back that it replaced: five ops, five temporaries and a copy per weight, 325 of the 509 op calls
 * of the bench's lm_eval_dynamic iteration). */
mcl_status mcl_lm_dyn_step(mcl_ctx *ctx, mcl_tensor *const *w, mcl_tensor *const *w0, int n, float lr,
                           float decay)
{
    mcl_no_grad_begin(ctx);
    mcl_status st = MCL_OK;
    for (int i = 0; i < n && st == MCL_OK; i++) {
        mcl_tensor *g = mcl_tensor_grad(w[i]);
        if (!g) continue;
        mcl_op_args a;
        memset(&a, 0, sizeof a);
        a.op = MCL_OP_DYN_STEP;
        a.in[0] = w[i];
        a.in[1] = g;
        a.in[2] = w0[i];
        a.p.f[0] = lr;
        a.p.f[1] = decay > 0 ? decay : 0.0f;
        st = mcl_op_run(ctx, &a);
    }
    mcl_no_grad_end(ctx);
    return st;
}

static mcl_status dyn_step(mcl_ctx *ctx, dyn_state *d, float lr, float decay)
{
    return mcl_lm_dyn_step(ctx, d->w, d->w0, d->n, lr, decay);
}

static mcl_status dyn_restore(dyn_state *d)
{
    mcl_status st = MCL_OK;
    for (int i = 0; i < d->n && st == MCL_OK; i++) st = mcl_tensor_copy_into(d->w[i], d->w0[i]);
    return st;
}

/* Sparse-MetaNet evaluation differentiates the loss only against the effective weights of the
 * augmented layers (G = d loss / d (W + M)). Every other trainable tensor (the feed-forward
 * layers, the norms, the output layer, the meta-learners) stops requiring a gradient for the
 * evaluation, so the backward skips their weight gradients; the flags come back afterwards.
 * The result is the same bit for bit: those gradients were computed and never read. */
typedef struct frozen_set {
    int n;
    mcl_tensor **t;
} frozen_set;

static mcl_status freeze_unwritten(mcl_lm *m, frozen_set *f)
{
    memset(f, 0, sizeof *f);
    const int np = mcl_params_count(m->params);
    f->t = calloc((size_t)np, sizeof *f->t);
    if (!f->t) return MCL_ERR_OOM;
    for (int i = 0; i < np; i++) {
        mcl_tensor *t = mcl_params_get(m->params, i);
        if (!(t->flags & MCL_TF_REQUIRES_GRAD)) continue;
        int written = 0;
        for (int k = 0; k < mcl_metanet_count(m->mn) && !written; k++) written = mcl_metanet_slow(m->mn, k) == t;
        if (written) continue;
        mcl_tensor_requires_grad(t, 0);
        f->t[f->n++] = t;
    }
    return MCL_OK;
}

static void thaw(frozen_set *f)
{
    for (int i = 0; i < f->n; i++) mcl_tensor_requires_grad(f->t[i], 1);
    free(f->t);
    memset(f, 0, sizeof *f);
}

static void curve_edges(int64_t *e)
{
    e[0] = 0;
    e[1] = 100;
    for (int i = 2; i < MCL_LM_CURVE_BINS; i++) e[i] = e[i - 1] * 2;
    e[MCL_LM_CURVE_BINS] = INT64_MAX;
}

/* −log2 softmax(row)[target] in double. */
static double row_bits(const float *row, int target)
{
    double mx = row[0];
    for (int j = 1; j < MCL_LM_VOCAB; j++) mx = row[j] > mx ? row[j] : mx;
    double s = 0;
    for (int j = 0; j < MCL_LM_VOCAB; j++) s += exp((double)row[j] - mx);
    return (log(s) + mx - (double)row[target]) / log(2.0);
}

mcl_status mcl_lm_evaluate(mcl_lm *m, const mcl_lm_stream *s, const mcl_lm_eval_opts *o, mcl_lm_eval_result *r,
                           char *err, size_t len)
{
    if (!m || !s || !o || !r) return fail(err, len, MCL_ERR_NULL, "lm eval: a NULL argument");
    memset(r, 0, sizeof *r);
    if (o->mode == MCL_LM_SMN && !m->mn)
        return fail(err, len, MCL_ERR_INVALID, "mode smn needs a model with fast weights (model.fast = 1)");
    if (o->seg_len < 1 || o->seg_len > 1 << 16)
        return fail(err, len, MCL_ERR_INVALID, "segment length %lld: must be 1..65536", (long long)o->seg_len);
    if (s->n < 2 || s->n_blocks < 1 || s->block_start[0] != 0)
        return fail(err, len, MCL_ERR_INVALID, "the stream is empty or its blocks are malformed");
    mcl_ctx *ctx = m->ctx;
    const int64_t S = o->seg_len;
    r->n_domains = s->n_domains;
    r->dom_bits = calloc((size_t)s->n_domains, sizeof *r->dom_bits);
    r->dom_chars = calloc((size_t)s->n_domains, sizeof *r->dom_chars);
    float *host = malloc((size_t)S * MCL_LM_VOCAB * sizeof *host), *tok = malloc((size_t)S * 2 * sizeof *tok);
    curve_edges(r->curve_edge);
    mcl_lm_memory mem;
    memset(&mem, 0, sizeof mem);
    dyn_state dyn;
    memset(&dyn, 0, sizeof dyn);
    frozen_set frozen;
    memset(&frozen, 0, sizeof frozen);
    mcl_status st = r->dom_bits && r->dom_chars && host && tok ? MCL_OK : MCL_ERR_OOM;
    if (st == MCL_OK) st = mcl_lm_memory_create(m, 1, o->mem_rows > 0 ? o->mem_rows : m->cfg.mem_len, &mem);
    if (st == MCL_OK && o->mode == MCL_LM_DYNAMIC) st = dyn_init(m, &dyn);
    if (st == MCL_OK && o->mode == MCL_LM_SMN) st = freeze_unwritten(m, &frozen);
    /* the masks of every evaluation start from the same counter (reproducible, whatever ran
     * before); the caller's counter is put back at the end */
    const uint64_t steps0 = m->mn ? mcl_metanet_steps(m->mn) : 0;
    if (m->mn) mcl_metanet_set_steps(m->mn, 0);
    if (st == MCL_OK && m->mn) st = mcl_metanet_clear(m->mn);
    if (st != MCL_OK) {
        fail(err, len, st, "lm eval: %s", mcl_ctx_status(ctx) != MCL_OK ? mcl_ctx_error(ctx) : "out of memory");
        goto done;
    }
    const int64_t total = o->max_chars > 0 && o->max_chars < s->n - 1 ? o->max_chars : s->n - 1;
    const double t0 = now_s();
    int blk = 0;
    for (int64_t pos = 0, seg = 0; pos < total && st == MCL_OK; pos += S, seg++) {
        const int64_t n = total - pos < S ? total - pos : S;
        if (o->mode == MCL_LM_SMN && o->reset_every > 0 && seg > 0 && seg % o->reset_every == 0)
            st = mcl_metanet_clear(m->mn);
        for (int64_t i = 0; i < n; i++) {
            tok[i] = (float)s->bytes[pos + i];
            tok[S + i] = (float)s->bytes[pos + 1 + i];
        }
        mcl_tensor *x = mcl_tensor_new(ctx, 1, n, 0, 0), *y = mcl_tensor_new(ctx, n, 0, 0, 0);
        mcl_tensor *logits = NULL, *loss = NULL;
        mcl_lm_pending pend;
        if (st == MCL_OK) st = x && y ? mcl_tensor_write(x, tok, n) : mcl_ctx_status(ctx);
        if (st == MCL_OK) st = mcl_tensor_write(y, tok + S, n);
        const int learn = o->mode != MCL_LM_STATIC;
        if (!learn) mcl_no_grad_begin(ctx);
        const size_t mark = mcl_tape_mark(ctx);
        if (st == MCL_OK) st = mcl_lm_forward(m, o->mode == MCL_LM_DYNAMIC ? MCL_FAST_STEP : MCL_FAST_STEP_KEPT, &mem, x,
                                                &logits, &pend); /* dynamic: W learns (on the tape) */
        if (!learn) mcl_no_grad_end(ctx);
        if (st == MCL_OK) st = mcl_tensor_read(logits, host, n * MCL_LM_VOCAB);
        if (st == MCL_OK && learn) {
            loss = mcl_cross_entropy(ctx, logits, y);
            if (!loss) st = mcl_ctx_status(ctx);
        }
        if (st == MCL_OK && o->mode == MCL_LM_SMN) st = mcl_metanet_write(m->mn, loss, mark, &o->h, 0);
        if (st == MCL_OK && o->mode == MCL_LM_DYNAMIC) {
            mcl_params_zero_grad(m->params);
            st = mcl_backward(ctx, loss);
            if (st == MCL_OK) st = dyn_step(ctx, &dyn, o->lr, o->decay);
        }
        if (st == MCL_OK) st = mcl_lm_memory_commit(&mem, &pend);
        for (int64_t i = 0; i < n && st == MCL_OK; i++) {
            const int64_t t = pos + 1 + i; /* the predicted byte's position */
            while (blk + 1 < s->n_blocks && s->block_start[blk + 1] <= t) blk++;
            const double b = row_bits(host + i * MCL_LM_VOCAB, s->bytes[t]);
            const int d = s->block_domain[blk];
            if (d >= 0 && d < s->n_domains) r->dom_bits[d] += b, r->dom_chars[d]++;
            const int64_t since = t - s->block_start[blk];
            int bin = 0;
            while (bin + 1 < MCL_LM_CURVE_BINS && since >= r->curve_edge[bin + 1]) bin++;
            r->curve_bits[bin] += b;
            r->curve_chars[bin]++;
            r->bits += b;
            r->chars++;
        }
        mcl_tensor_free(x);
        mcl_tensor_free(y);
        mcl_ctx_reset(ctx);
        if (o->progress) o->progress(o->progress_arg, pos + n, total);
    }
    r->seconds = now_s() - t0;
    if (st != MCL_OK) fail(err, len, st, "lm eval at byte %lld: %s", (long long)r->chars, mcl_ctx_error(ctx));
done:
    if (o->mode == MCL_LM_DYNAMIC && dyn.n) {
        mcl_status s2 = dyn_restore(&dyn);
        if (st == MCL_OK && s2 != MCL_OK) st = fail(err, len, s2, "lm eval: restoring the weights failed");
    }
    if (m->mn) {
        mcl_metanet_clear(m->mn);
        mcl_metanet_set_steps(m->mn, steps0);
    }
    mcl_params_zero_grad(m->params);
    dyn_free(&dyn);
    thaw(&frozen);
    mcl_lm_memory_free(&mem);
    free(host);
    free(tok);
    if (st != MCL_OK) mcl_lm_eval_result_free(r);
    return st;
}
