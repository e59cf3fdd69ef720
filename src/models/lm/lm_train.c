/* lm_train.c — the adaptive character language model on the training harness (lm_train.h):
 * config keys, the lanes' reading positions, the window of Algorithm 1 over segments,
 * validation, checkpoints. */
#define _POSIX_C_SOURCE 200809L
#include "lm_train.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint.h"
#include "lm_data.h"
#include "ops.h"
#include "params.h"
#include "rng.h"
#include "tensor_impl.h"
#include "util.h"

#define fail mcl_errbuf

#define STREAM_LANE 0x4c4d4c414e450000ULL /* "LMLANE": a lane's episodes */

/* ====================================================================== config */

#define C mcl_lm_config
static const mcl_key model_keys[] = {
    MCL_KEY_INT("layers", C, layers, 1, MCL_LM_MAX_LAYERS, "4", "transformer layers L"),
    MCL_KEY_INT("width", C, width, 2, 4096, "256", "model width D (even)"),
    MCL_KEY_INT("heads", C, heads, 1, 64, "4", "attention heads H"),
    MCL_KEY_INT("head_dim", C, head_dim, 1, 1024, "64", "width of a head Dh"),
    MCL_KEY_INT("ffw", C, ffw, 1, 65536, "1024", "feed-forward width F"),
    MCL_KEY_INT("mem_len", C, mem_len, 0, 65536, "128", "memory rows M per layer (Transformer-XL recurrence)"),
    MCL_KEY_BOOL("fast", C, fast, "1", "sparse fast weights on the attention projections (0: a plain Transformer-XL)"),
    MCL_KEY_BOOL("fast_embed", C, fast_embed, "1", "... and on the byte embedding"),
    MCL_KEY_BOOL("fast_ffw", C, fast_ffw, "0", "... and on the first feed-forward weight"),
    MCL_KEY_INT("meta_hidden", C, meta_hidden, 1, 4096, "20", "hidden units of each meta-learner g_phi"),
    MCL_KEY_BOOL("reset", C, reset, "1", "fast weights to 0 at every truncation (the paper's LM setting)"),
    MCL_KEY_U64("seed", C, seed, "1", "initialization and write masks"),
};
#undef C
#define N_MODEL_KEYS ((int)(sizeof model_keys / sizeof model_keys[0]))

#define R mcl_lm_run
static const mcl_key run_keys[] = {
    MCL_KEY_INT("smn.k", R, k, 1, MCL_METANET_MAX_K, "5", "truncation length k (>= 2 with fast weights)"),
    MCL_KEY_INT("smn.fast_len", R, fast_len, 1, 65536, "64", "bytes per lane of a fast step"),
    MCL_KEY_INT("smn.seg_len", R, seg_len, 1, 65536, "128", "bytes per lane of a gradient step (the segment)"),
    MCL_KEY_FLOAT_LO_OPEN("smn.p", R, train_h.p, 0, 1, "0.05", "training: write probability of an element"),
    MCL_KEY_FLOAT_OPEN("smn.gamma", R, train_h.gamma, 0, 1, "0", "training: decay of the gradient average"),
    MCL_KEY_FLOAT("smn.beta1", R, train_h.beta1, -100, 100, "0", "training: weight of G in the average"),
    MCL_KEY_FLOAT("smn.beta2", R, train_h.beta2, -100, 100, "1", "training: weight of G beside the average"),
    MCL_KEY_FLOAT_LO_OPEN("smn.eval_p", R, eval_h.p, 0, 1, "0.5", "evaluation: write probability"),
    MCL_KEY_FLOAT_OPEN("smn.eval_gamma", R, eval_h.gamma, 0, 1, "0.999", "evaluation: decay of the gradient average"),
    MCL_KEY_FLOAT("smn.eval_beta1", R, eval_h.beta1, -100, 100, "0.5", "evaluation: weight of G in the average"),
    MCL_KEY_FLOAT("smn.eval_beta2", R, eval_h.beta2, -100, 100, "0.5", "evaluation: weight of G beside the average"),
    MCL_KEY_STR("data.dir", R, data_dir, "", "the text corpus (\"\" = <data dir>/text, metacl data prepare text)"),
    MCL_KEY_STR("data.domains", R, domains, "", "comma-separated domains to train on (\"\" = all)"),
    MCL_KEY_I64("data.block", R, block, 1, (int64_t)1 << 40, "20000", "bytes a lane reads from one domain before it jumps"),
    MCL_KEY_I64("data.val_chars", R, val_chars, 1, (int64_t)1 << 40, "20000",
                "validation: static bpc over this many bytes of the valid stream, every domain in turn"),
    MCL_KEY_I64("data.eval_block", R, eval_block, 1, (int64_t)1 << 40, "20000", "evaluation streams: bytes per domain visit"),
    MCL_KEY_U64("data.seed", R, data_seed, "1", "the lanes' positions and the streams' domain order"),
};
#undef R
#define N_RUN_KEYS ((int)(sizeof run_keys / sizeof run_keys[0]))

static const mcl_key_group model_group = {"model.", model_keys, N_MODEL_KEYS, offsetof(mcl_lm_run, model)};
static const mcl_key_group run_group = {"", run_keys, N_RUN_KEYS, 0};
static const mcl_key_group *const lm_groups[] = {&model_group, &run_group};

static void lm_cfg_default(void *fcfg, mcl_train_cfg *t)
{
    (void)fcfg;
    t->steps = 1000;
    t->batch = 8;
    t->lr = 5e-4f;
    t->clip = 0.25f;
    t->log_every = 10;
    t->val_every = 200;
    t->ckpt_every = 100;
}

static int window_len(const mcl_lm_run *c) { return c->model.fast ? c->k : 1; }

/* Bytes a lane reads in one window (its segments and one more for the last target). */
static int64_t window_bytes(const mcl_lm_run *c)
{
    return (int64_t)(window_len(c) - 1) * c->fast_len + c->seg_len;
}

static mcl_status lm_cfg_check(const void *fcfg, const mcl_train_cfg *t, char *err, size_t len)
{
    const mcl_lm_run *c = fcfg;
    mcl_status st = mcl_lm_config_check(&c->model, err, len);
    if (st != MCL_OK) return st;
    if (t->parts > 1)
        return fail(err, len, MCL_ERR_INVALID,
                    "train.parts = %d: the lanes share the fast weights of one sequence of windows (use 1)", t->parts);
    if (c->model.fast && c->k < 2)
        return fail(err, len, MCL_ERR_INVALID, "smn.k = 1 with model.fast = 1: a window needs a fast step (k >= 2)");
    if (c->block < window_bytes(c))
        return fail(err, len, MCL_ERR_INVALID, "data.block = %lld is shorter than one window (%lld bytes)",
                    (long long)c->block, (long long)window_bytes(c));
    return MCL_OK;
}

/* ====================================================================== the family state */

typedef struct lm_fs {
    mcl_lm_run cfg;
    mcl_ctx *ctx;
    mcl_lm *m;
    mcl_lm_memory mem;  /* the lanes' memory (registered: checkpoints keep it) */
    mcl_lm_pending pend;
    int has_pend;
    int B;
    lm_corpus corpus;
    lm_stream valid;
    float *tok;         /* [2, B, Smax] host staging: inputs, targets */
    int in_window;
    double fast_bits, fast_n;
    /* the window's losses, queued for reading and summed once the step is done
     * (lm_step_metrics): the fast steps' and the gradient step's */
    float fast_lv[MCL_METANET_MAX_K], step_lv;
    int n_fast_lv;
    mcl_status end_status;
    char end_err[256];
} lm_fs;

static void lm_free_fs(void *p)
{
    lm_fs *t = p;
    if (!t) return;
    lm_stream_free(&t->valid);
    lm_corpus_close(&t->corpus);
    mcl_lm_free(t->m); /* the registered memory goes with the model's registry */
    free(t->tok);
    free(t);
}

static mcl_status make_model(mcl_ctx *ctx, const mcl_lm_run *cfg, int lanes, mcl_lm **out, mcl_lm_memory *mem)
{
    *out = mcl_lm_create(ctx, &cfg->model);
    if (!*out) return mcl_ctx_status(ctx) != MCL_OK ? mcl_ctx_status(ctx) : MCL_ERR_OOM;
    mcl_status st = mcl_lm_memory_register(*out, (*out)->params, lanes, mem);
    if (st != MCL_OK) {
        mcl_lm_free(*out);
        *out = NULL;
    }
    return st;
}

static mcl_status lm_create(mcl_ctx *ctx, const void *fcfg, const mcl_train_cfg *tc, mcl_train_log *log, void **out,
                            char *err, size_t len)
{
    lm_fs *t = calloc(1, sizeof *t);
    *out = t;
    if (!t) return fail(err, len, MCL_ERR_OOM, "out of memory");
    t->cfg = *(const mcl_lm_run *)fcfg;
    t->ctx = ctx;
    t->B = tc->batch;
    const mcl_lm_run *c = &t->cfg;
    mcl_status st = make_model(ctx, c, t->B, &t->m, &t->mem);
    t->mem.write_ahead = 1; /* read only by the window's forwards, each committed before the next */
    if (st != MCL_OK) return fail(err, len, st, "model: %s", mcl_ctx_error(ctx));
    const int64_t smax = c->seg_len > c->fast_len ? c->seg_len : c->fast_len;
    t->tok = malloc((size_t)(2 * t->B * smax) * sizeof *t->tok);
    if (!t->tok) return fail(err, len, MCL_ERR_OOM, "out of memory");
    st = lm_corpus_open(c->data_dir, c->domains, &t->corpus, err, len);
    if (st != MCL_OK) return st;
    for (int d = 0; d < t->corpus.n; d++)
        if (t->corpus.train_n[d] < c->block + 1)
            return fail(err, len, MCL_ERR_INVALID, "domain %s: its train split (%lld bytes) is shorter than data.block",
                        t->corpus.name[d], (long long)t->corpus.train_n[d]);
    /* validation reads every domain: val_chars bytes in blocks of val_chars / domains */
    int64_t vb = c->val_chars / t->corpus.n;
    st = lm_corpus_stream(&t->corpus, "valid", vb > 64 ? vb : 64, c->data_seed, &t->valid, err, len);
    if (st != MCL_OK) return st;
    int64_t tot = 0;
    for (int d = 0; d < t->corpus.n; d++) tot += t->corpus.train_n[d];
    mcl_train_logf(log, "corpus %s: %d domains, %lld train bytes; valid stream %lld bytes in %d blocks",
                   t->corpus.dir, t->corpus.n, (long long)tot, (long long)t->valid.s.n, t->valid.s.n_blocks);
    const mcl_lm_config *mc = &c->model;
    mcl_train_logf(log, "model: Transformer-XL %d x %d (%d heads of %d, ffw %d, memory %d)%s, %lld trainable parameters",
                   mc->layers, mc->width, mc->heads, mc->head_dim, mc->ffw, mc->mem_len,
                   mc->fast ? " with sparse fast weights" : "", (long long)mcl_lm_trainable(t->m));
    if (mc->fast)
        mcl_train_logf(log, "Algorithm 1: k = %d (%d fast steps of %d bytes, a gradient step of %d), p = %g, gamma = %g, "
                            "beta1 = %g, beta2 = %g, %s",
                       c->k, c->k - 1, c->fast_len, c->seg_len, (double)c->train_h.p, (double)c->train_h.gamma,
                       (double)c->train_h.beta1, (double)c->train_h.beta2,
                       mc->reset ? "M reset at each truncation" : "M accumulates");
    return MCL_OK;
}

static mcl_params *lm_params(void *fs) { return ((lm_fs *)fs)->m->params; }

static void lm_optim_config(void *fs, mcl_optim_config *oc)
{
    (void)fs;
    oc->kind = MCL_OPTIM_ADAM;
}

static const char *const lm_metric_names[] = {"bpc", "fast_bpc"};

static double lm_chance(void *fs)
{
    (void)fs;
    return 0.0; /* bits per byte fall; "left chance" is not tracked */
}

/* Where lane b reads in window w (0-based): episode e = w / E of E windows, a domain and an
 * offset drawn from (seed, b, e); the window's bytes follow the episode's start. */
static void lane_position(const lm_fs *t, int b, int64_t w, int *dom, int64_t *start)
{
    const mcl_lm_run *c = &t->cfg;
    const int64_t wb = window_bytes(c), E = c->block / wb, e = w / E, j = w % E;
    const uint64_t stream = STREAM_LANE + (uint64_t)b;
    const int d = (int)(mcl_rng_u32(c->data_seed, stream, 2 * (uint64_t)e) % (uint32_t)t->corpus.n);
    const int64_t room = t->corpus.train_n[d] - E * wb - 1;
    const uint64_t r = ((uint64_t)mcl_rng_u32(c->data_seed, stream, 2 * (uint64_t)e + 1) << 32) ^
                       mcl_rng_u32(c->data_seed, stream + 0x100000000ULL, (uint64_t)e);
    *dom = d;
    *start = (room > 0 ? (int64_t)(r % (uint64_t)(room + 1)) : 0) + j * wb;
}

/* Inputs [B, n] and targets [B·n] of one segment: lane b's bytes [pos_b + off, + n). */
static mcl_status segment(lm_fs *t, int64_t w, int64_t off, int64_t n, mcl_tensor **x, mcl_tensor **y)
{
    const int B = t->B;
    for (int b = 0; b < B; b++) {
        int d;
        int64_t p;
        lane_position(t, b, w, &d, &p);
        const uint8_t *s = t->corpus.train[d] + p + off;
        for (int64_t i = 0; i < n; i++) {
            t->tok[b * n + i] = (float)s[i];
            t->tok[B * n + b * n + i] = (float)s[i + 1];
        }
    }
    *x = mcl_tensor_new(t->ctx, B, n, 0, 0);
    *y = mcl_tensor_new(t->ctx, (int64_t)B * n, 0, 0, 0);
    if (!*x || !*y) return mcl_ctx_status(t->ctx);
    mcl_status st = mcl_tensor_write(*x, t->tok, (int64_t)B * n);
    return st == MCL_OK ? mcl_tensor_write(*y, t->tok + (int64_t)B * n, (int64_t)B * n) : st;
}

/* Forward + loss of one segment; the tensors x, y are handed to the context's temporaries. */
static mcl_status seg_loss(lm_fs *t, int64_t w, int64_t off, int64_t n, mcl_fast_mode mode, mcl_tensor **loss)
{
    mcl_tensor *x = NULL, *y = NULL, *logits = NULL;
    mcl_status st = segment(t, w, off, n, &x, &y);
    if (st == MCL_OK) st = mcl_lm_forward(t->m, mode, &t->mem, x, &logits, &t->pend);
    if (st == MCL_OK) {
        *loss = mcl_cross_entropy(t->ctx, logits, y);
        if (!*loss) st = mcl_ctx_status(t->ctx);
    }
    mcl_tensor_free(x);
    mcl_tensor_free(y);
    return st;
}

/* The window of step s up to the loss of its gradient step (on the tape). */
static mcl_status window_loss(lm_fs *t, int64_t s, mcl_tensor **loss)
{
    const mcl_lm_run *c = &t->cfg;
    mcl_lm *m = t->m;
    const int64_t w = s - 1;
    const int k = window_len(c);
    mcl_status st = m->mn ? mcl_metanet_window_begin(m->mn) : MCL_OK;
    t->fast_bits = t->fast_n = 0;
    t->n_fast_lv = 0;
    for (int j = 0; j < k - 1 && st == MCL_OK; j++) {
        const size_t mark = mcl_tape_mark(t->ctx);
        mcl_tensor *l = NULL;
        st = seg_loss(t, w, (int64_t)j * c->fast_len, c->fast_len, MCL_FAST_STEP_KEPT, &l);
        if (st == MCL_OK && t->n_fast_lv < MCL_METANET_MAX_K) /* summed by lm_step_metrics */
            st = mcl_tensor_read_async(l, &t->fast_lv[t->n_fast_lv++], 1);
        if (st == MCL_OK) st = mcl_metanet_write(m->mn, l, mark, &c->train_h, 1);
        if (st == MCL_OK) st = mcl_lm_memory_commit(&t->mem, &t->pend);
    }
    if (st == MCL_OK)
        st = seg_loss(t, w, (int64_t)(k - 1) * c->fast_len, c->seg_len, m->mn ? MCL_FAST_WINDOW_END : MCL_FAST_STEP,
                      loss);
    t->in_window = st == MCL_OK;
    t->has_pend = st == MCL_OK;
    return st;
}

static mcl_status lm_step_loss(void *fs, int64_t s, const mcl_train_part *part, mcl_tensor **loss, double *metrics,
                               char *err, size_t len)
{
    lm_fs *t = fs;
    if (t->end_status != MCL_OK)
        return fail(err, len, t->end_status, "step %lld: the update after the step before failed: %s", (long long)s,
                    t->end_err);
    if (part->count > 1) return fail(err, len, MCL_ERR_INVALID, "an lm run cannot be cut into parts (train.parts = 1)");
    mcl_status st = window_loss(t, s, loss);
    if (st == MCL_OK) st = mcl_tensor_read_async(*loss, &t->step_lv, 1);
    if (st != MCL_OK) return fail(err, len, st, "step %lld: %s", (long long)s, mcl_ctx_error(t->ctx));
    (void)metrics; /* lm_step_metrics */
    return MCL_OK;
}

/* Bits per byte of the window's gradient step and mean of its fast steps, from the losses
 * step_loss queued for reading (the same sums, in the same order, as read at once). */
static void lm_step_metrics(void *fs, double *metrics)
{
    lm_fs *t = fs;
    for (int j = 0; j < t->n_fast_lv; j++) {
        t->fast_bits += (double)t->fast_lv[j] / log(2.0);
        t->fast_n++;
    }
    t->n_fast_lv = 0;
    metrics[0] = (double)t->step_lv / log(2.0);
    metrics[1] = t->fast_n > 0 ? t->fast_bits / t->fast_n : NAN;
}

static void lm_step_end(void *fs)
{
    lm_fs *t = fs;
    mcl_status st = MCL_OK;
    if (t->in_window && t->m->mn) st = mcl_metanet_window_end(t->m->mn, &t->cfg.train_h);
    if (st == MCL_OK && t->has_pend) st = mcl_lm_memory_commit(&t->mem, &t->pend);
    t->in_window = t->has_pend = 0;
    t->end_status = st;
    if (st != MCL_OK) snprintf(t->end_err, sizeof t->end_err, "%s", mcl_ctx_error(t->ctx));
}

/* Copies of the fast-weight state (M, I) around a validation, which clears them. */
static mcl_status fast_state(mcl_lm *m, mcl_tensor **keep, int save)
{
    if (!m->mn) return MCL_OK;
    const int n = mcl_metanet_count(m->mn);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < 2; j++) {
            mcl_tensor *s = j ? mcl_metanet_avg(m->mn, i) : mcl_metanet_fast(m->mn, i);
            mcl_tensor **c = &keep[2 * i + j];
            if (save) {
                *c = mcl_tensor_create(m->ctx, mcl_tensor_ndim(s), mcl_tensor_shape(s));
                if (!*c || mcl_tensor_copy_into(*c, s) != MCL_OK) return MCL_ERR_BACKEND;
            } else if (*c) {
                if (mcl_tensor_copy_into(s, *c) != MCL_OK) return MCL_ERR_BACKEND;
                mcl_tensor_free(*c);
                *c = NULL;
            }
        }
    return MCL_OK;
}

static mcl_status lm_validate(void *fs, int64_t batches, double *score, char *err, size_t len)
{
    lm_fs *t = fs;
    (void)batches;
    mcl_lm_eval_opts o;
    mcl_lm_eval_opts_default(&o);
    o.mode = MCL_LM_STATIC;
    o.seg_len = t->cfg.seg_len;
    o.max_chars = t->cfg.val_chars;
    mcl_tensor *keep[2 * MCL_METANET_MAX_LAYERS] = {0};
    const uint64_t steps = t->m->mn ? mcl_metanet_steps(t->m->mn) : 0;
    mcl_status st = fast_state(t->m, keep, 1);
    mcl_lm_eval_result r;
    memset(&r, 0, sizeof r);
    if (st == MCL_OK) st = mcl_lm_evaluate(t->m, &t->valid.s, &o, &r, err, len);
    mcl_status s2 = fast_state(t->m, keep, 0);
    for (int i = 0; i < 2 * MCL_METANET_MAX_LAYERS; i++) mcl_tensor_free(keep[i]);
    if (t->m->mn) mcl_metanet_set_steps(t->m->mn, steps);
    if (st == MCL_OK && s2 != MCL_OK) st = fail(err, len, s2, "validation: restoring the fast weights failed");
    *score = st == MCL_OK && r.chars ? -r.bits / (double)r.chars : NAN;
    mcl_lm_eval_result_free(&r);
    return st;
}

/* ---------------------------------------------------------------- checkpoints */

/* The family's keys and train.batch (the lanes of the memory the checkpoint holds). */
static char *config_text(const mcl_lm_run *c, int lanes)
{
    char *mt = mcl_keys_to_text(model_keys, N_MODEL_KEYS, &c->model, "model.");
    char *rt = mcl_keys_to_text(run_keys, N_RUN_KEYS, c, "");
    char tail[64];
    snprintf(tail, sizeof tail, "train.batch = %d\n", lanes);
    char *text = mt && rt ? malloc(strlen(mt) + strlen(rt) + strlen(tail) + 1) : NULL;
    if (text) strcat(strcat(strcpy(text, mt), rt), tail);
    free(mt);
    free(rt);
    return text;
}

static const char *const counter_names[2] = {"lm.fast_steps", "lm.mem_rows"};

static mcl_status lm_save(void *fs, const char *path, const mcl_optim *opt, const mcl_ckpt_counter *cn, int n_cn,
                          char *err, size_t len)
{
    lm_fs *t = fs;
    mcl_ckpt_counter *all = calloc((size_t)n_cn + 2, sizeof *all);
    char *text = config_text(&t->cfg, t->B);
    mcl_status st = all && text ? MCL_OK : fail(err, len, MCL_ERR_OOM, "out of memory");
    if (st == MCL_OK) {
        memcpy(all, cn, (size_t)n_cn * sizeof *all);
        const uint64_t v[2] = {t->m->mn ? mcl_metanet_steps(t->m->mn) : 0, (uint64_t)t->mem.rows};
        for (int i = 0; i < 2; i++) {
            snprintf(all[n_cn + i].name, sizeof all[n_cn + i].name, "%s", counter_names[i]);
            all[n_cn + i].value = v[i];
        }
        mcl_ckpt_save_desc d;
        memset(&d, 0, sizeof d);
        d.model_kind = MCL_LM_CKPT_KIND;
        d.config = text;
        d.params = t->m->params;
        d.optim = opt;
        d.rng.seed = mcl_ctx_seed(t->ctx);
        d.rng.counter = mcl_ctx_stream(t->ctx);
        d.counters = all;
        d.n_counters = n_cn + 2;
        st = mcl_ckpt_save(t->ctx, path, &d, err, len);
    }
    free(all);
    free(text);
    return st;
}

static mcl_status lm_load(void *fs, const char *path, mcl_optim *opt, mcl_ckpt_info *info, char *err, size_t len)
{
    lm_fs *t = fs;
    mcl_status st = mcl_ckpt_load(t->ctx, path, MCL_LM_CKPT_KIND, t->m->params, opt, info, err, len);
    if (st != MCL_OK) return st;
    uint64_t v[2];
    for (int i = 0; i < 2; i++)
        if (!mcl_ckpt_info_counter(info, counter_names[i], &v[i]))
            return fail(err, len, MCL_ERR_FORMAT, "checkpoint '%s': counter %s missing", path, counter_names[i]);
    if (v[1] > (uint64_t)t->mem.capacity)
        return fail(err, len, MCL_ERR_FORMAT, "checkpoint '%s': %llu memory rows, more than model.mem_len", path,
                    (unsigned long long)v[1]);
    if (t->m->mn) mcl_metanet_set_steps(t->m->mn, v[0]);
    t->mem.rows = (int64_t)v[1];
    return MCL_OK;
}

mcl_status mcl_lm_run_from_ckpt(const char *path, mcl_lm_run *cfg, char *err, size_t len)
{
    return mcl_family_cfg_from_ckpt(&mcl_lm_family, path, cfg, NULL, err, len);
}

mcl_status mcl_lm_open(mcl_ctx *ctx, const char *path, mcl_lm **out, mcl_lm_run *cfg, mcl_ckpt_info *info, char *err,
                       size_t len)
{
    *out = NULL;
    mcl_train_cfg t; /* train.batch: the lanes of the memory the checkpoint holds */
    mcl_status st = mcl_family_cfg_from_ckpt(&mcl_lm_family, path, cfg, &t, err, len);
    if (st != MCL_OK) return st;
    const int lanes = t.batch;
    mcl_lm *m = NULL;
    mcl_lm_memory mem;
    st = make_model(ctx, cfg, lanes, &m, &mem);
    if (st != MCL_OK) return fail(err, len, MCL_ERR_FORMAT, "checkpoint '%s': %s", path, mcl_ctx_error(ctx));
    st = mcl_ckpt_load(ctx, path, MCL_LM_CKPT_KIND, m->params, NULL, info, err, len);
    if (st != MCL_OK) {
        mcl_lm_free(m);
        return st;
    }
    *out = m;
    return MCL_OK;
}

mcl_status mcl_lm_export(mcl_lm *m, const char *path, const mcl_ckpt_info *info, char *err, size_t len)
{
    return mcl_ckpt_export(m->ctx, path, MCL_LM_CKPT_KIND, m->params, info, err, len);
}

/* train.init: the tensors of another lm checkpoint with the same name and shape. */
static mcl_status lm_init_from(void *fs, const char *path, char *note, size_t note_len, char *err, size_t len)
{
    lm_fs *t = fs;
    mcl_lm_run src_cfg;
    mcl_lm *src = NULL;
    mcl_status st = mcl_lm_open(t->ctx, path, &src, &src_cfg, NULL, err, len);
    if (st != MCL_OK) return st;
    int copied = 0;
    static const char *const skip[] = {"state."};
    st = mcl_params_copy_matching(t->m->params, src->params, skip, 1, &copied);
    if (st != MCL_OK) fail(err, len, st, "%s", mcl_ctx_error(t->ctx));
    mcl_lm_free(src);
    if (st == MCL_OK && t->m->mn) st = mcl_metanet_clear(t->m->mn);
    if (st == MCL_OK) snprintf(note, note_len, "%d tensors of the same name and shape copied from %s", copied, path);
    return st;
}

/* Memory from the config: the model (mcl_lm_param_floats, exact) and the lanes' memory
 * [L, B, M, D] in the checkpoint; in training also the gradients and Adam moments of the
 * trained floats and, per byte of a segment and layer, the activations of the norms, q/k/v/r,
 * the attention over segment + memory, the feed-forward block and the logits, each with its
 * gradient, plus a copy of the fast-weight state per fast step of the window. */
static double lm_ckpt_floats(const void *fcfg, const mcl_train_cfg *t)
{
    const mcl_lm_run *c = fcfg;
    const double M = c->model.mem_len > 0 ? c->model.mem_len : 1;
    return mcl_lm_param_floats(&c->model, NULL) + (double)c->model.layers * t->batch * M * c->model.width;
}

static double lm_train_bytes(const void *fcfg, const mcl_train_cfg *t)
{
    const mcl_lm_run *c = fcfg;
    const mcl_lm_config *m = &c->model;
    double fast = 0;
    const double P = mcl_lm_param_floats(m, &fast), all = lm_ckpt_floats(fcfg, t);
    const double D = m->width, HD = (double)m->heads * m->head_dim, F = m->ffw;
    const double T = c->seg_len > c->fast_len ? c->seg_len : c->fast_len, B = t->batch;
    const double tok = B * T * (m->layers * (14 * D + 5 * HD + 2 * F + m->heads * (T + m->mem_len)) + 3 * 256.0);
    return 4 * (all + 3 * (P - fast) + 2 * tok + (c->k > 1 ? c->k : 1) * fast);
}

static mcl_status lm_ckpt_open(mcl_ctx *ctx, const char *path, void **model, mcl_params **params,
                               mcl_ckpt_info *info, char *err, size_t len)
{
    mcl_lm *m = NULL;
    mcl_lm_run cfg;
    mcl_status st = mcl_lm_open(ctx, path, &m, &cfg, info, err, len);
    *model = m;
    if (m) *params = m->params;
    return st;
}

static mcl_status lm_ckpt_export(void *model, const char *path, const mcl_ckpt_info *info, char *err, size_t len)
{
    return mcl_lm_export(model, path, info, err, len);
}

static void lm_ckpt_close(void *model) { mcl_lm_free(model); }

const mcl_family mcl_lm_family = {
    .kind = "lm",
    .summary = "adaptive character language model: Transformer-XL with sparse fast weights (Sparse Meta Networks)",
    .cfg_size = sizeof(mcl_lm_run),
    .groups = lm_groups,
    .n_groups = 2,
    .cfg_default = lm_cfg_default,
    .cfg_check = lm_cfg_check,
    .create = lm_create,
    .free = lm_free_fs,
    .params = lm_params,
    .optim_config = lm_optim_config,
    .n_metrics = 2,
    .metric_names = lm_metric_names,
    .chance = lm_chance,
    .step_loss = lm_step_loss,
    .step_metrics = lm_step_metrics,
    .step_end = lm_step_end,
    .validate = lm_validate,
    .save = lm_save,
    .load = lm_load,
    .init_from = lm_init_from,
    .ckpt_floats = lm_ckpt_floats,
    .train_bytes = lm_train_bytes,
    .ckpt_open = lm_ckpt_open,
    .ckpt_export = lm_ckpt_export,
    .ckpt_close = lm_ckpt_close,
};
