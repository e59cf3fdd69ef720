/* metanet.c — MetaNet fast-weight layers with sparse gradient-driven writes (see metanet.h;
 * doc/smn-model.md §2-3 gives the equations next to the paper's words). */
#include "metanet.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "ops.h"
#include "params.h"
#include "rng.h"
#include "tape.h"

/* One augmented weight. */
typedef struct fastw {
    char name[64];
    mcl_tensor *w;      /* slow weight (the model's parameter)                      */
    mcl_tensor *m;      /* state: fast weight M_t, w's shape                         */
    mcl_tensor *avg;    /* state: gradient average I_t, w's shape                    */
    mcl_tensor *phi[6]; /* g_φ: w1 [H,2], b1 [H], w2 [H,H], b2 [H], w3 [1,H], b3 [1] */
    mcl_tensor *m0;     /* M at the window's start (ours), NULL outside a window     */
    mcl_tensor *eff;    /* the effective weight of the current forward (a temporary, or e) */
    mcl_tensor *e;      /* E = W + M kept for the fast steps (ours; a leaf that requires grad,
                         * so that a fast step's G_t is taken with respect to it)          */
    int e_ok;           /* E is W + M: computed in this window (or since a clear) and M's
                         * buffer not written since (its generation e_gen), but by our writes
                         * (smn_avg_write, which keeps E along)                            */
    uint64_t e_gen;
    int m_zero;         /* M was filled with zeros (window_end with reset, clear) and its
                         * buffer not written since (its generation zero_gen)          */
    uint64_t zero_gen;
    int m0_zero;        /* M_0 is all zeros (M was, at window_begin): the rebuild does not
                         * read it (smn_write_add's i0 = 1)                             */
    int64_t n;          /* elements                                                  */
    /* the window's writes, in step order */
    int n_log;
    int64_t *log_idx[MCL_METANET_MAX_K];
    int64_t log_m[MCL_METANET_MAX_K];
    mcl_tensor *log_zs[MCL_METANET_MAX_K]; /* [m, 2] (references we hold): views of log_buf */
    mcl_tensor *log_buf; /* [log_cap, 2]: the window's zs rows one after the other, so that
                          * the rebuild reads them all as one view (no concat)             */
    int64_t log_cap, log_rows;
    int64_t last_writes;
} fastw;

struct mcl_metanet {
    mcl_ctx *ctx;
    mcl_params *params;
    mcl_metanet_cfg cfg;
    int n;
    fastw f[MCL_METANET_MAX_LAYERS];
    uint64_t steps;   /* fast steps taken (the masks' counter) */
    int64_t *idx;     /* scratch [largest n]: a mask's indices  */
    int64_t *row;     /* scratch [largest n]: survivor rows, -1 */
    float *fbuf;      /* scratch [2 · largest n]                */
    int64_t cap;
    mcl_tensor *idx0; /* [1] = {0}: window_end's average update through smn_avg_z (lazily) */
};

void mcl_metanet_cfg_default(mcl_metanet_cfg *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->meta_hidden = 20;
    cfg->slope = 0.01f;
    cfg->preproc_p = 10.0f;
    cfg->reset = 0;
    cfg->mask_seed = 1;
    cfg->init_seed = 1;
}

void mcl_metanet_cfg_model(mcl_metanet_cfg *cfg, int meta_hidden, int reset, uint64_t seed)
{
    mcl_metanet_cfg_default(cfg);
    cfg->meta_hidden = meta_hidden;
    cfg->reset = reset;
    cfg->mask_seed = seed;
    cfg->init_seed = seed;
}

mcl_status mcl_metanet_create(mcl_ctx *ctx, mcl_params *params, const mcl_metanet_cfg *cfg,
                              mcl_metanet **out)
{
    if (!out) return MCL_ERR_NULL;
    *out = NULL;
    if (!ctx || !params || !cfg) return MCL_ERR_NULL;
    if (cfg->meta_hidden < 1 || cfg->meta_hidden > 4096 || !(cfg->preproc_p > 0.0f) ||
        !isfinite(cfg->slope))
        return mcl_ctx_set_error(ctx, MCL_ERR_INVALID,
                                 "metanet: meta_hidden %d (1..4096), preprocessing P %g (> 0), slope %g",
                                 cfg->meta_hidden, (double)cfg->preproc_p, (double)cfg->slope);
    mcl_metanet *mn = calloc(1, sizeof *mn);
    if (!mn) return mcl_ctx_set_error(ctx, MCL_ERR_OOM, "metanet: out of memory");
    mn->ctx = ctx;
    mn->params = params;
    mn->cfg = *cfg;
    *out = mn;
    return MCL_OK;
}

static void log_clear(fastw *f)
{
    for (int j = 0; j < f->n_log; j++) {
        free(f->log_idx[j]);
        mcl_tensor_free(f->log_zs[j]);
        f->log_idx[j] = NULL;
        f->log_zs[j] = NULL;
    }
    f->n_log = 0;
    f->log_rows = 0;
}

void mcl_metanet_free(mcl_metanet *mn)
{
    if (!mn) return;
    for (int i = 0; i < mn->n; i++) {
        log_clear(&mn->f[i]);
        mcl_tensor_free(mn->f[i].m0);
        mcl_tensor_free(mn->f[i].log_buf);
        mcl_tensor_free(mn->f[i].e);
    }
    mcl_tensor_free(mn->idx0);
    free(mn->idx);
    free(mn->row);
    free(mn->fbuf);
    free(mn);
}

/* A registered tensor that is saved but never trained. */
static mcl_tensor *state_tensor(mcl_metanet *mn, const char *name, const mcl_tensor *like)
{
    mcl_tensor *x = mcl_params_add(mn->params, name, mcl_tensor_ndim(like), mcl_tensor_shape(like));
    if (x) mcl_tensor_requires_grad(x, 0);
    return x;
}

double mcl_metanet_aug_floats(double n, int meta_hidden)
{
    const double H = meta_hidden;
    return 2 * n + (H * 2 + H) + (H * H + H) + (H + 1); /* .fast, .avg; w1 b1, w2 b2, w3 b3 */
}

int mcl_metanet_add(mcl_metanet *mn, mcl_tensor *w, const char *name)
{
    if (!mn || !w || !name) return -1;
    mcl_ctx *ctx = mn->ctx;
    const int64_t n = mcl_tensor_numel(w);
    if (mn->n >= MCL_METANET_MAX_LAYERS) {
        mcl_ctx_set_error(ctx, MCL_ERR_INVALID, "metanet: more than %d augmented weights", MCL_METANET_MAX_LAYERS);
        return -1;
    }
    if (n >= ((int64_t)1 << 24)) {
        mcl_ctx_set_error(ctx, MCL_ERR_INVALID,
                          "metanet: weight '%s' has %lld elements; fast weights need < 2^24 (indices are exact floats)",
                          name, (long long)n);
        return -1;
    }
    if (strlen(name) + 16 > sizeof mn->f[0].name) {
        mcl_ctx_set_error(ctx, MCL_ERR_INVALID, "metanet: name '%s' too long", name);
        return -1;
    }
    const int i = mn->n;
    fastw *f = &mn->f[i];
    memset(f, 0, sizeof *f);
    snprintf(f->name, sizeof f->name, "%s", name);
    f->w = w;
    f->n = n;
    char nm[96];
    snprintf(nm, sizeof nm, "%s.fast", name);
    f->m = state_tensor(mn, nm, w);
    snprintf(nm, sizeof nm, "%s.avg", name);
    f->avg = state_tensor(mn, nm, w);
    if (!f->m || !f->avg) return -1;
    /* g_φ: 2 → H → H → 1. Normal init with variance 1/fan_in for the hidden layers; the output
     * layer and every bias 0, so that g_φ ≡ 0 at first: the network starts as its plain
     * self (random fast weights as large as W's entries drowned the signal: a WCST agent with
     * a 10x smaller random output layer learned nothing in 3000 episodes) and the gradient
     * of the output layer, Σ g·h2, moves it from there. */
    const int64_t H = mn->cfg.meta_hidden;
    static const char *const pn[6] = {"w1", "b1", "w2", "b2", "w3", "b3"};
    const int64_t sh[6][2] = {{H, 2}, {H, 0}, {H, H}, {H, 0}, {1, H}, {1, 0}};
    const float sd[6] = {sqrtf(1.0f / 2.0f), 0.0f, sqrtf(1.0f / (float)H), 0.0f, 0.0f, 0.0f};
    for (int j = 0; j < 6; j++) {
        snprintf(nm, sizeof nm, "%s.meta.%s", name, pn[j]);
        f->phi[j] = mcl_params_add(mn->params, nm, sh[j][1] ? 2 : 1, sh[j]);
        if (!f->phi[j]) return -1;
        mcl_status st = sd[j] > 0.0f ? mcl_tensor_randn(f->phi[j], mn->cfg.init_seed,
                                                        0x4d455441ULL * 64u + (uint64_t)(8 * i + j), 0.0f, sd[j])
                                     : mcl_tensor_fill(f->phi[j], 0.0f);
        if (st != MCL_OK) return -1;
    }
    if (n > mn->cap) {
        int64_t *a = realloc(mn->idx, (size_t)n * sizeof *a);
        if (a) mn->idx = a;
        int64_t *b = a ? realloc(mn->row, (size_t)n * sizeof *b) : NULL;
        if (b) mn->row = b;
        float *c = b ? realloc(mn->fbuf, (size_t)(2 * n) * sizeof *c) : NULL;
        if (c) mn->fbuf = c;
        if (!c) {
            mcl_ctx_set_error(ctx, MCL_ERR_OOM, "metanet: out of memory");
            return -1;
        }
        for (int64_t e = mn->cap; e < n; e++) mn->row[e] = -1;
        mn->cap = n;
    }
    mn->n++;
    return i;
}

int mcl_metanet_count(const mcl_metanet *mn) { return mn ? mn->n : 0; }
mcl_tensor *mcl_metanet_slow(const mcl_metanet *mn, int i) { return mn && i >= 0 && i < mn->n ? mn->f[i].w : NULL; }
mcl_tensor *mcl_metanet_fast(const mcl_metanet *mn, int i) { return mn && i >= 0 && i < mn->n ? mn->f[i].m : NULL; }
mcl_tensor *mcl_metanet_effective(const mcl_metanet *mn, int i) { return mn && i >= 0 && i < mn->n ? mn->f[i].eff : NULL; }
mcl_tensor *const *mcl_metanet_phi(const mcl_metanet *mn, int i) { return mn && i >= 0 && i < mn->n ? mn->f[i].phi : NULL; }
mcl_tensor *mcl_metanet_avg(const mcl_metanet *mn, int i) { return mn && i >= 0 && i < mn->n ? mn->f[i].avg : NULL; }
const mcl_metanet_cfg *mcl_metanet_config(const mcl_metanet *mn) { return mn ? &mn->cfg : NULL; }
uint64_t mcl_metanet_steps(const mcl_metanet *mn) { return mn ? mn->steps : 0; }
void mcl_metanet_set_steps(mcl_metanet *mn, uint64_t steps)
{
    if (mn) mn->steps = steps;
}

int64_t mcl_metanet_last_writes(const mcl_metanet *mn)
{
    int64_t s = 0;
    for (int i = 0; mn && i < mn->n; i++) s += mn->f[i].last_writes;
    return s;
}

/* A [n] float tensor holding integer values (indices or rows). */
static mcl_tensor *index_tensor(mcl_metanet *mn, const int64_t *v, int64_t n)
{
    const int64_t sh[1] = {n};
    mcl_tensor *t = mcl_tensor_create(mn->ctx, 1, sh);
    if (!t) return NULL;
    float *buf = mn->fbuf;
    for (int64_t e = 0; e < n; e++) buf[e] = (float)v[e];
    if (mcl_tensor_write(t, buf, n) != MCL_OK) {
        mcl_tensor_free(t);
        return NULL;
    }
    return t;
}

/* W + M_{k-1} on the tape, M_{k-1} = smn_write(M_0, surviving writes of the window, φ): one
 * smn_write_add (the floats of smn_write then add; M_0 not read when it is all zeros). The
 * survivor of element e is the last logged write to e; its row in the concatenated log is
 * row[e]. */
static mcl_tensor *rebuild_eff(mcl_metanet *mn, fastw *f)
{
    mcl_ctx *ctx = mn->ctx;
    mcl_tensor *m0 = f->m0 ? f->m0 : f->m;
    if (f->n_log == 0) return mcl_add(ctx, f->w, m0);
    int64_t base = 0, ms = 0;
    for (int j = 0; j < f->n_log; j++) { /* later writes override earlier ones */
        for (int64_t e = 0; e < f->log_m[j]; e++) mn->row[f->log_idx[j][e]] = base + e;
        base += f->log_m[j];
    }
    if (base >= ((int64_t)1 << 24)) { /* rows are gathered by float indices: exact below 2^24 */
        for (int64_t el = 0; el < f->n; el++) mn->row[el] = -1;
        mcl_ctx_set_error(ctx, MCL_ERR_INVALID,
                          "metanet: weight '%s' logged %lld writes in one window; at most 2^24 (a smaller k or p)",
                          f->name, (long long)base);
        return NULL;
    }
    int64_t *rows = malloc((size_t)(base + 1) * sizeof *rows); /* + 1: the loop below writes one ahead */
    if (!rows) {
        for (int64_t el = 0; el < f->n; el++) mn->row[el] = -1;
        mcl_ctx_set_error(ctx, MCL_ERR_OOM, "metanet: out of memory");
        return NULL;
    }
    /* survivors in increasing element order; every element is written at slot ms and kept
     * (ms moves on) when it survives: no branch (about a quarter of the elements do not
     * survive, at random, a branch on it was mispredicted as often). Slot ms <= el < n of idx,
     * <= base of rows. */
    for (int64_t el = 0; el < f->n; el++) {
        const int64_t r = mn->row[el];
        mn->idx[ms] = el;
        rows[ms] = r;
        ms += r >= 0;
        mn->row[el] = -1;
    }
    mcl_tensor *sidx = index_tensor(mn, mn->idx, ms);
    mcl_tensor *srow = sidx ? index_tensor(mn, rows, ms) : NULL;
    free(rows);
    /* the logged rows, in step order, are the first `base` rows of log_buf */
    const int64_t all[2] = {base, 2};
    mcl_tensor *zs_all = base == f->log_rows ? mcl_tensor_view(f->log_buf, 0, 2, all) : NULL;
    if (!zs_all && mcl_ctx_status(ctx) == MCL_OK)
        mcl_ctx_set_error(ctx, MCL_ERR_STATE, "metanet: the log of '%s' holds %lld rows, not %lld", f->name,
                          (long long)f->log_rows, (long long)base);
    mcl_tensor *zs = srow && zs_all ? mcl_embedding(ctx, zs_all, srow) : NULL; /* [ms, 2] */
    mcl_tensor_free(zs_all);
    /* survivors in increasing element order: smn_write_add's index contract */
    mcl_tensor *mw = NULL;
    if (zs) {
        mcl_op_args a;
        memset(&a, 0, sizeof a);
        a.op = MCL_OP_SMN_WRITE_ADD;
        a.in[0] = f->m0 && f->m0_zero ? f->m : m0; /* i0 = 1: M_0 = 0, not read (M stands in) */
        a.in[1] = sidx;
        a.in[2] = zs;
        for (int j = 0; j < 6; j++) a.in[3 + j] = f->phi[j];
        a.in[9] = f->w;
        a.p.f[0] = mn->cfg.slope;
        a.p.i[0] = f->m0 && f->m0_zero;
        if (mcl_op_run(ctx, &a) == MCL_OK) mw = a.out[0];
    }
    mcl_tensor_free(sidx);
    mcl_tensor_free(srow);
    return mw;
}

/* Whether f's E is W + M: made since the last window boundary or clear (W changes only
 * between a window's end and the next one's begin, by the optimizer, or before a clear) and
 * M's buffer untouched since, but by smn_avg_write. */
static int eff_valid(const fastw *f) { return f->e && f->e_ok && mcl_tensor_buffer_gen(f->m) == f->e_gen; }

/* E := W + M (add's floats, into our E, off the tape) unless it is already. */
static mcl_tensor *eff_sync(mcl_metanet *mn, fastw *f)
{
    mcl_ctx *ctx = mn->ctx;
    if (eff_valid(f)) return f->e;
    if (!f->e) {
        f->e = mcl_tensor_create(ctx, mcl_tensor_ndim(f->w), mcl_tensor_shape(f->w));
        if (!f->e) return NULL;
        mcl_tensor_requires_grad(f->e, 1);
    }
    mcl_op_args a;
    memset(&a, 0, sizeof a);
    a.op = MCL_OP_ADD;
    a.in[0] = f->w;
    a.in[1] = f->m;
    a.out[0] = f->e;
    a.out_given = 1;
    mcl_no_grad_begin(ctx);
    const mcl_status st = mcl_op_run(ctx, &a);
    mcl_no_grad_end(ctx);
    if (st != MCL_OK) return NULL;
    f->e_ok = 1;
    f->e_gen = mcl_tensor_buffer_gen(f->m);
    return f->e;
}

/* W + M is made again at the next fast step (W may change before it). */
static void eff_forget(mcl_metanet *mn)
{
    for (int i = 0; i < mn->n; i++) mn->f[i].e_ok = 0;
}

/* MCL_FAST_STEP_KEPT: the kept E = W + M (no add when the window's writes kept it);
 * MCL_FAST_STEP: W + M on the tape; MCL_FAST_WINDOW_END: W + M_{k-1} on the tape. */
mcl_status mcl_metanet_weights(mcl_metanet *mn, mcl_fast_mode mode, mcl_tensor **eff)
{
    if (!mn || !eff) return MCL_ERR_NULL;
    for (int i = 0; i < mn->n; i++) {
        fastw *f = &mn->f[i];
        if (mode == MCL_FAST_STEP_KEPT) {
            f->eff = eff_sync(mn, f);
            if (!f->eff) return mcl_ctx_status(mn->ctx) != MCL_OK ? mcl_ctx_status(mn->ctx) : MCL_ERR_BACKEND;
            eff[i] = f->eff;
            continue;
        }
        f->eff = mode == MCL_FAST_WINDOW_END ? rebuild_eff(mn, f) : mcl_add(mn->ctx, f->w, f->m);
        if (!f->eff) return mcl_ctx_status(mn->ctx) != MCL_OK ? mcl_ctx_status(mn->ctx) : MCL_ERR_BACKEND;
        eff[i] = f->eff;
    }
    return MCL_OK;
}

static mcl_status check_hyper(mcl_metanet *mn, const mcl_metanet_hyper *h)
{
    if (!(h->p > 0.0f && h->p <= 1.0f) || !(h->gamma >= 0.0f && h->gamma < 1.0f) || !isfinite(h->beta1) ||
        !isfinite(h->beta2))
        return mcl_ctx_set_error(mn->ctx, MCL_ERR_INVALID,
                                 "metanet: p = %g must be in (0, 1], gamma = %g in [0, 1), betas finite",
                                 (double)h->p, (double)h->gamma);
    return MCL_OK;
}

/* I := γ I + β1 G (no gradient). */
static mcl_status update_avg(mcl_metanet *mn, fastw *f, mcl_tensor *g, const mcl_metanet_hyper *h,
                             mcl_tensor **inew)
{
    mcl_ctx *ctx = mn->ctx;
    mcl_tensor *a = mcl_scale(ctx, f->avg, h->gamma);
    mcl_tensor *b = g ? mcl_scale(ctx, g, h->beta1) : NULL;
    mcl_tensor *s = a && b ? mcl_add(ctx, a, b) : a;
    if (!s || (g && !b)) return mcl_ctx_status(ctx) != MCL_OK ? mcl_ctx_status(ctx) : MCL_ERR_BACKEND;
    mcl_status st = mcl_tensor_copy_into(f->avg, s);
    if (inew) *inew = s;
    return st;
}

/* I := γ I + β1 G in place and *zs [m, 2] = grad_preproc(I[idx_e] + β2 G[idx_e]) (into
 * the caller's *zs, or a new temporary when *zs is NULL): smn_avg_z with I as its own output
 * (ops.def). */

/* The next m rows of f's window log as a [m, 2] view (caller-owned): log_buf grows (doubling,
 * the rows so far copied over) when they do not fit. */
static mcl_tensor *log_rows(mcl_metanet *mn, fastw *f, int64_t m)
{
    mcl_ctx *ctx = mn->ctx;
    if (f->log_rows + m > f->log_cap) {
        int64_t cap = f->log_cap ? 2 * f->log_cap : f->n;
        if (cap < f->log_rows + m) cap = f->log_rows + m;
        const int64_t sh[2] = {cap, 2};
        mcl_tensor *b = mcl_tensor_alloc(ctx, 2, sh, 0);
        if (!b) return NULL;
        if (f->log_rows > 0) {
            const int64_t used[2] = {f->log_rows, 2};
            mcl_tensor *dst = mcl_tensor_view(b, 0, 2, used), *src = mcl_tensor_view(f->log_buf, 0, 2, used);
            mcl_status st = dst && src ? mcl_tensor_copy_into(dst, src) : mcl_ctx_status(ctx);
            mcl_tensor_free(dst);
            mcl_tensor_free(src);
            if (st != MCL_OK) {
                mcl_tensor_free(b);
                return NULL;
            }
        }
        mcl_tensor_free(f->log_buf); /* the earlier rows' views keep the old buffer */
        f->log_buf = b;
        f->log_cap = cap;
    }
    const int64_t sh[2] = {m, 2};
    mcl_tensor *v = mcl_tensor_view(f->log_buf, 2 * f->log_rows, 2, sh);
    if (v) f->log_rows += m;
    return v;
}
static mcl_status avg_z_in_place(mcl_metanet *mn, fastw *f, mcl_tensor *g, mcl_tensor *idx,
                                 const mcl_metanet_hyper *h, mcl_tensor **zs)
{
    mcl_ctx *ctx = mn->ctx;
    const int64_t zsh[2] = {mcl_tensor_dim(idx, 0), 2};
    if (!*zs) *zs = mcl_tensor_alloc(ctx, 2, zsh, 1); /* else the caller's [m, 2] */
    if (!*zs) return mcl_ctx_status(ctx);
    mcl_op_args a;
    memset(&a, 0, sizeof a);
    a.op = MCL_OP_SMN_AVG_Z;
    a.in[0] = f->avg;
    a.in[1] = g;
    a.in[2] = idx;
    a.p.f[0] = h->gamma;
    a.p.f[1] = h->beta1;
    a.p.f[2] = h->beta2;
    a.p.f[3] = mn->cfg.preproc_p;
    a.p.i[0] = 1; /* idx is increasing (mcl_rng_bernoulli_indices; idx0 has one entry): one launch */
    a.out[0] = f->avg;
    a.out[1] = *zs;
    a.out_given = 1;
    return mcl_op_run(ctx, &a);
}

/* The write of one layer from its gradient g: I and the meta-learner's inputs zs at the
 * drawn elements in one op (smn_avg_z: the floats of update_avg, z = I_t + β2 G_t, a gather
 * and grad_preproc), then the sparse write; both in place, under the no-grad scope of
 * mcl_metanet_write (nothing is recorded). */
static mcl_status write_layer(mcl_metanet *mn, int i, mcl_tensor *g, const mcl_metanet_hyper *h, int keep_log)
{
    mcl_ctx *ctx = mn->ctx;
    fastw *f = &mn->f[i];
    const int64_t m = mcl_rng_bernoulli_indices(mn->cfg.mask_seed, MCL_METANET_MASK_STREAM + (uint64_t)i,
                                                mn->steps * (uint64_t)f->n, f->n, h->p, mn->idx);
    f->last_writes = m;
    if (m == 0) return update_avg(mn, f, g, h, NULL);
    if (!g) return mcl_ctx_set_error(ctx, MCL_ERR_STATE, "metanet: no gradient for weight '%s'", f->name);
    mcl_tensor *idx = index_tensor(mn, mn->idx, m);
    if (!idx) return mcl_ctx_status(ctx);
    /* in place (ops.def: smn_avg_z's out[0] may be I, smn_write's out[0] may be M0): I and M
     * are rewritten without a copy */
    mcl_tensor *zs = NULL, *logged = NULL;
    if (keep_log && f->n_log < MCL_METANET_MAX_K && !(zs = logged = log_rows(mn, f, m))) {
        mcl_tensor_free(idx);
        return mcl_ctx_status(ctx) != MCL_OK ? mcl_ctx_status(ctx) : MCL_ERR_OOM;
    }
    /* with E = W + M kept, smn_avg_write updates I, writes the zs and M and keeps E = W + M in
     * one launch (the floats of smn_avg_z, then smn_write_eff: add's sum); else smn_avg_z,
     * then smn_write, and E is made again when next needed */
    const int keep_e = eff_valid(f);
    mcl_status st = MCL_OK;
    if (keep_e) {
        const int64_t zsh[2] = {m, 2};
        if (!zs && !(zs = mcl_tensor_alloc(ctx, 2, zsh, 1))) st = mcl_ctx_status(ctx);
        mcl_op_args a;
        memset(&a, 0, sizeof a);
        a.op = MCL_OP_SMN_AVG_WRITE;
        a.in[0] = f->m;
        a.in[1] = idx; /* increasing (mcl_rng_bernoulli_indices) */
        a.in[2] = zs;
        for (int j = 0; j < 6; j++) a.in[3 + j] = f->phi[j];
        a.in[9] = f->w;
        a.in[10] = f->e;
        a.in[11] = f->avg;
        a.in[12] = g;
        a.p.f[0] = mn->cfg.slope;
        a.p.f[1] = h->gamma;
        a.p.f[2] = h->beta1;
        a.p.f[3] = h->beta2;
        a.p.f[4] = mn->cfg.preproc_p;
        if (st == MCL_OK) st = mcl_op_run(ctx, &a);
        if (st == MCL_OK) f->e_gen = mcl_tensor_buffer_gen(f->m);
    } else {
        st = avg_z_in_place(mn, f, g, idx, h, &zs);
    }
    if (st == MCL_OK && !keep_e) {
        mcl_op_args a;
        memset(&a, 0, sizeof a);
        a.op = MCL_OP_SMN_WRITE;
        a.in[0] = f->m;
        a.in[1] = idx;
        a.in[2] = zs;
        for (int j = 0; j < 6; j++) a.in[3 + j] = f->phi[j];
        a.p.f[0] = mn->cfg.slope;
        a.out[0] = f->m;
        a.out_given = 1;
        st = mcl_op_run(ctx, &a);
    }
    if (st == MCL_OK && keep_log) {
        if (f->n_log >= MCL_METANET_MAX_K) {
            st = mcl_ctx_set_error(ctx, MCL_ERR_INVALID, "metanet: more than %d fast steps in a window",
                                   MCL_METANET_MAX_K);
        } else {
            int64_t *cp = malloc((size_t)m * sizeof *cp);
            if (!cp) {
                st = mcl_ctx_set_error(ctx, MCL_ERR_OOM, "metanet: out of memory");
            } else {
                memcpy(cp, mn->idx, (size_t)m * sizeof *cp);
                f->log_idx[f->n_log] = cp;
                f->log_m[f->n_log] = m;
                f->log_zs[f->n_log] = logged; /* our reference */
                logged = NULL;
                f->n_log++;
            }
        }
    }
    if (logged) f->log_rows -= m; /* not logged after all (an error): the rows are free again */
    mcl_tensor_free(logged);
    mcl_tensor_free(idx);
    return st;
}

mcl_status mcl_metanet_write(mcl_metanet *mn, mcl_tensor *loss, size_t mark, const mcl_metanet_hyper *h,
                             int keep_log)
{
    if (!mn || !loss || !h) return MCL_ERR_NULL;
    mcl_status st = check_hyper(mn, h);
    if (st != MCL_OK || mn->n == 0) return st;
    mcl_tensor *wrt[MCL_METANET_MAX_LAYERS], *g[MCL_METANET_MAX_LAYERS];
    for (int i = 0; i < mn->n; i++) {
        wrt[i] = mn->f[i].eff;
        if (!wrt[i])
            return mcl_ctx_set_error(mn->ctx, MCL_ERR_STATE, "metanet: write before mcl_metanet_weights");
    }
    st = mcl_grad_partial(mn->ctx, loss, mark, mn->n, wrt, g); /* G_t: data */
    if (st != MCL_OK) return st;
    mcl_no_grad_begin(mn->ctx);
    for (int i = 0; i < mn->n && st == MCL_OK; i++) st = write_layer(mn, i, g[i], h, keep_log);
    mcl_no_grad_end(mn->ctx);
    for (int i = 0; i < mn->n; i++) mcl_tensor_free(g[i]);
    if (st == MCL_OK) mn->steps++;
    return st;
}

mcl_status mcl_metanet_window_begin(mcl_metanet *mn)
{
    if (!mn) return MCL_ERR_NULL;
    eff_forget(mn);
    for (int i = 0; i < mn->n; i++) {
        fastw *f = &mn->f[i];
        log_clear(f);
        if (!f->m0) {
            f->m0 = mcl_tensor_create(mn->ctx, mcl_tensor_ndim(f->m), mcl_tensor_shape(f->m));
            if (!f->m0) return mcl_ctx_status(mn->ctx);
        }
        f->m0_zero = f->m_zero && mcl_tensor_buffer_gen(f->m) == f->zero_gen;
        mcl_status st = mcl_tensor_copy_into(f->m0, f->m);
        if (st != MCL_OK) return st;
    }
    return MCL_OK;
}

mcl_status mcl_metanet_window_end(mcl_metanet *mn, const mcl_metanet_hyper *h)
{
    if (!mn || !h) return MCL_ERR_NULL;
    mcl_status st = check_hyper(mn, h);
    eff_forget(mn);
    mcl_no_grad_begin(mn->ctx);
    for (int i = 0; i < mn->n && st == MCL_OK; i++) {
        fastw *f = &mn->f[i];
        /* I_k from G_k: smn_avg_z in place, its one entry's zs unused (one launch instead of
         * scale, scale, add and a copy; the same floats) */
        mcl_tensor *gk = mcl_tensor_grad(f->w), *zs = NULL;
        if (gk && !mn->idx0) {
            const int64_t one[1] = {1};
            const float zero = 0.0f;
            mn->idx0 = mcl_tensor_create(mn->ctx, 1, one);
            if (!mn->idx0 || mcl_tensor_write(mn->idx0, &zero, 1) != MCL_OK) st = mcl_ctx_status(mn->ctx);
        }
        if (st == MCL_OK) st = gk ? avg_z_in_place(mn, f, gk, mn->idx0, h, &zs) : update_avg(mn, f, NULL, h, NULL);
        if (st == MCL_OK && mn->cfg.reset && (st = mcl_tensor_fill(f->m, 0.0f)) == MCL_OK) {
            f->m_zero = 1;
            f->zero_gen = mcl_tensor_buffer_gen(f->m);
        }
        log_clear(f);
    }
    mcl_no_grad_end(mn->ctx);
    return st;
}

mcl_status mcl_metanet_clear(mcl_metanet *mn)
{
    if (!mn) return MCL_ERR_NULL;
    mcl_status st = MCL_OK;
    eff_forget(mn);
    for (int i = 0; i < mn->n && st == MCL_OK; i++) {
        log_clear(&mn->f[i]);
        st = mcl_tensor_fill(mn->f[i].m, 0.0f);
        mn->f[i].m_zero = st == MCL_OK;
        mn->f[i].zero_gen = mcl_tensor_buffer_gen(mn->f[i].m);
        if (st == MCL_OK) st = mcl_tensor_fill(mn->f[i].avg, 0.0f);
    }
    return st;
}

void mcl_metanet_log_bytes(const mcl_metanet *mn, uint64_t *sparse, uint64_t *dense)
{
    uint64_t s = 0, d = 0;
    const uint64_t H = mn ? (uint64_t)mn->cfg.meta_hidden : 0;
    for (int i = 0; mn && i < mn->n; i++) {
        const fastw *f = &mn->f[i];
        for (int j = 0; j < f->n_log; j++) s += (uint64_t)f->log_m[j] * (8u + 2u * 4u);
        s += (uint64_t)f->n * 4u; /* M_0 */
        /* dense: per step M_t, z (2 floats), the mask, and g_φ's saved activations (2H + 2H + 1
         * pre- and post-activations) on every element */
        d += (uint64_t)f->n_log * (uint64_t)f->n * 4u * (1u + 2u + 1u + 4u * H + 1u) + (uint64_t)f->n * 4u;
    }
    if (sparse) *sparse = s;
    if (dense) *dense = d;
}
