/* test-lm.c — the adaptive character language model (src/models/lm/) on tiny sizes:
 *   - segment recurrence: a sequence read as two segments with a memory that holds the first
 *     equals the same sequence read at once (the second half of its logits); with a memory
 *     too short to hold it the result differs, so the check can fail;
 *   - finite differences of a second segment's loss (the memory fixed, as Transformer-XL
 *     detaches it) against the backward: the relative-position biases u and v_b, W_r, W_k
 *     (whose gradient also comes through the memory rows), the embedding;
 *   - reference vs OpenCL: logits and every gradient over two segments (skipped only without
 *     an OpenCL device);
 *   - the three evaluations on a hand-made two-domain stream: the bookkeeping (per domain and
 *     per switch bin add up to the total), dynamic evaluation with lr 0 equals static, its
 *     weights are put back bit for bit, the Sparse-MetaNet mode changes the predictions and
 *     leaves no fast weights behind.
 * Seed printed first; tolerances next to each check. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lm.h"
#include "lm_train.h"
#include "ops.h"
#include "params.h"
#include "rng.h"
#include "testutil.h"

#define SEED 20261124ULL
#define S 8 /* bytes per segment */
/* The same sums over other shapes (one segment of 2S rows vs two of S): float round-off. */
#define SEG_ATOL 2e-5
/* OpenCL vs reference: float32 sums in other orders through two layers. */
#define OCL_ATOL 1e-4
#define OCL_RTOL 1e-3

static void tiny_cfg(mcl_lm_config *c)
{
    mcl_lm_config_default(c);
    c->layers = 2;
    c->width = 16;
    c->heads = 2;
    c->head_dim = 8;
    c->ffw = 32;
    c->mem_len = 2 * S;
    c->meta_hidden = 4;
    c->seed = 5;
}

/* Weights of a trained-looking scale (the init's 0.02 gives near-zero gradients, and g_φ's
 * zero output layer writes zeros): every trainable tensor ~ N(0, 0.3²) but the norms' gains. */
static void scramble(mcl_lm *m)
{
    for (int i = 0; i < mcl_params_count(m->params); i++) {
        mcl_tensor *t = mcl_params_get(m->params, i);
        const char *n = mcl_tensor_name(t);
        if (!strncmp(n, "state.", 6) || strstr(n, ".fast") || strstr(n, ".avg")) continue;
        if (strstr(n, "ln_") && strstr(n, ".g")) continue;
        mcl_tensor_randn(t, SEED, 100 + (uint64_t)i, 0.0f, 0.3f);
    }
}

static mcl_tensor *tokens(mcl_ctx *ctx, const uint8_t *b, int64_t n)
{
    float v[64];
    for (int64_t i = 0; i < n; i++) v[i] = (float)b[i];
    const int64_t sh[2] = {1, n};
    return tu_tensor_from(ctx, 2, sh, v);
}

static const uint8_t text[] = "the cat sat on the mat; def f(x): return x + 1 #";

/* Logits of the second segment [S,256] read after a first one with a memory of `rows`. */
static float *second_segment(mcl_lm *m, int64_t rows)
{
    mcl_ctx *ctx = m->ctx;
    mcl_lm_memory mem;
    if (!CHECK(mcl_lm_memory_create(m, 1, rows, &mem) == MCL_OK, "memory")) return NULL;
    mcl_lm_pending p;
    mcl_tensor *x1 = tokens(ctx, text, S), *x2 = tokens(ctx, text + S, S), *lg = NULL;
    float *out = NULL;
    if (mcl_lm_forward(m, MCL_FAST_STEP, &mem, x1, &lg, &p) == MCL_OK && mcl_lm_memory_commit(&mem, &p) == MCL_OK &&
        mcl_lm_forward(m, MCL_FAST_STEP, &mem, x2, &lg, &p) == MCL_OK)
        out = tu_read(lg);
    mcl_tensor_free(x1);
    mcl_tensor_free(x2);
    mcl_lm_memory_free(&mem);
    mcl_ctx_reset(ctx);
    return out;
}

static void test_segments(void)
{
    printf("-- two segments with a memory = one segment\n");
    mcl_ctx *ctx = tu_ctx_ref();
    mcl_lm_config c;
    tiny_cfg(&c);
    mcl_lm *m = mcl_lm_create(ctx, &c);
    if (!CHECK(m != NULL, "create: %s", mcl_ctx_error(ctx))) return;
    scramble(m);
    mcl_lm_memory mem;
    CHECK(mcl_lm_memory_create(m, 1, 2 * S, &mem) == MCL_OK, "memory");
    mcl_tensor *x = tokens(ctx, text, 2 * S), *lg = NULL;
    CHECK(mcl_lm_forward(m, MCL_FAST_STEP, &mem, x, &lg, NULL) == MCL_OK, "one segment: %s", mcl_ctx_error(ctx));
    float *whole = lg ? tu_read(lg) : NULL;
    mcl_tensor_free(x);
    mcl_lm_memory_free(&mem);
    mcl_ctx_reset(ctx);
    float *two = second_segment(m, 2 * S), *short_mem = second_segment(m, S / 2);
    if (whole && two && short_mem) {
        double *want = malloc((size_t)S * MCL_LM_VOCAB * sizeof *want);
        for (int64_t i = 0; i < S * MCL_LM_VOCAB; i++) want[i] = whole[S * MCL_LM_VOCAB + i];
        CHECK_ARRAY("second segment's logits vs the whole sequence's", two, want, S * MCL_LM_VOCAB, SEG_ATOL, 0);
        CHECK(tu_first_mismatch(short_mem, want, S * MCL_LM_VOCAB, 1e-3, 0) >= 0,
              "a memory of %d rows (the first segment cut) gives other logits", S / 2);
        free(want);
    }
    free(whole);
    free(two);
    free(short_mem);
    mcl_lm_free(m);
    mcl_ctx_free(ctx);
}

/* Loss of the second segment, the memory holding the first (computed once). */
typedef struct seg2 {
    mcl_lm *m;
    mcl_lm_memory mem;
    mcl_tensor *x2, *y2;
} seg2;

static int seg2_setup(mcl_ctx *ctx, const mcl_lm_config *c, seg2 *s)
{
    memset(s, 0, sizeof *s);
    s->m = mcl_lm_create(ctx, c);
    if (!s->m) return -1;
    scramble(s->m);
    if (mcl_lm_memory_create(s->m, 1, 2 * S, &s->mem) != MCL_OK) return -1;
    mcl_lm_pending p;
    mcl_tensor *x1 = tokens(ctx, text, S), *lg = NULL;
    mcl_no_grad_begin(ctx);
    mcl_status st = mcl_lm_forward(s->m, MCL_FAST_STEP, &s->mem, x1, &lg, &p);
    if (st == MCL_OK) st = mcl_lm_memory_commit(&s->mem, &p);
    mcl_no_grad_end(ctx);
    mcl_tensor_free(x1);
    mcl_ctx_reset(ctx);
    float y[S];
    for (int i = 0; i < S; i++) y[i] = (float)text[S + 1 + i];
    s->x2 = tokens(ctx, text + S, S);
    s->y2 = tu_vec(ctx, S, y);
    return st == MCL_OK ? 0 : -1;
}

static void seg2_free(seg2 *s)
{
    mcl_tensor_free(s->x2);
    mcl_tensor_free(s->y2);
    mcl_lm_memory_free(&s->mem);
    mcl_lm_free(s->m);
}

static double seg2_loss(seg2 *s, int backward)
{
    mcl_ctx *ctx = s->m->ctx;
    mcl_tensor *lg = NULL;
    if (!backward) mcl_no_grad_begin(ctx);
    double v = NAN;
    if (mcl_lm_forward(s->m, MCL_FAST_STEP, &s->mem, s->x2, &lg, NULL) == MCL_OK) {
        mcl_tensor *l = mcl_cross_entropy(ctx, lg, s->y2);
        if (l) {
            v = mcl_tensor_item(l, 0);
            if (backward && mcl_backward(ctx, l) != MCL_OK) v = NAN;
        }
    }
    if (!backward) mcl_no_grad_end(ctx);
    mcl_ctx_reset(ctx);
    return v;
}

static void test_gradcheck(void)
{
    printf("-- finite differences of the second segment's loss\n");
    mcl_ctx *ctx = tu_ctx_ref();
    mcl_lm_config c;
    tiny_cfg(&c);
    seg2 s;
    if (!CHECK(seg2_setup(ctx, &c, &s) == 0, "setup: %s", mcl_ctx_error(ctx))) return;
    mcl_params_zero_grad(s.m->params);
    CHECK(isfinite(seg2_loss(&s, 1)), "loss and backward");
    static const char *const names[] = {"layer0.attn.u", "layer1.attn.vbias", "layer1.attn.r", "layer1.attn.k",
                                        "layer0.attn.q", "embed"};
    const float eps = 1e-2f;
    for (int t = 0; t < (int)(sizeof names / sizeof names[0]); t++) {
        mcl_tensor *w = mcl_params_find(s.m->params, names[t]);
        if (!CHECK(w && mcl_tensor_grad(w), "%s has a gradient", names[t])) continue;
        float *g = tu_read(mcl_tensor_grad(w)), *v = tu_read(w);
        const int64_t n = mcl_tensor_numel(w);
        int bad = 0;
        double gmax = 0;
        for (int k = 0; k < 4; k++) {
            /* the embedding: rows of bytes the segment reads */
            const int64_t e = !strcmp(names[t], "embed") ? (int64_t)text[S + k] * c.width + k : (k * 7919) % n;
            const float keep = v[e];
            v[e] = keep + eps;
            mcl_tensor_write(w, v, n);
            const double lp = seg2_loss(&s, 0);
            v[e] = keep - eps;
            mcl_tensor_write(w, v, n);
            const double lm = seg2_loss(&s, 0);
            v[e] = keep;
            mcl_tensor_write(w, v, n);
            const double fd = (lp - lm) / (2.0 * eps);
            gmax = fmax(gmax, fabs(fd));
            /* central differences in float32 with eps 1e-2: O(eps²) curvature and ~1e-5 of
             * round-off in the loss */
            if (!tu_near(g[e], fd, 2e-3, 5e-2)) {
                printf("  %s[%lld]: backward %.6g, finite difference %.6g\n", names[t], (long long)e, (double)g[e], fd);
                bad++;
            }
        }
        CHECK(bad == 0 && gmax > 1e-4, "%s: backward = finite differences at 4 elements (largest |fd| %.3g)", names[t],
              gmax);
        free(g);
        free(v);
    }
    seg2_free(&s);
    mcl_ctx_free(ctx);
}

/* Logits and gradients of the second segment on a backend (weights copied from `from`). */
static int run_backend(mcl_backend_kind kind, const mcl_lm *from, float **logits, float ***grads, int *n_grads)
{
    mcl_ctx *ctx = NULL;
    char e[256];
    if (mcl_ctx_create(&ctx, kind, NULL, e, sizeof e) != MCL_OK) return -1;
    mcl_lm_config c;
    tiny_cfg(&c);
    seg2 s;
    int rc = seg2_setup(ctx, &c, &s);
    for (int i = 0; rc == 0 && i < mcl_params_count(from->params); i++) {
        float *v = tu_read(mcl_params_get(from->params, i));
        mcl_tensor *d = mcl_params_get(s.m->params, i);
        if (v) mcl_tensor_write(d, v, mcl_tensor_numel(d));
        free(v);
    }
    if (rc == 0) { /* the memory again, from the copied weights */
        mcl_lm_memory_clear(&s.mem);
        mcl_lm_pending p;
        mcl_tensor *x1 = tokens(ctx, text, S), *lg = NULL;
        mcl_no_grad_begin(ctx);
        if (mcl_lm_forward(s.m, MCL_FAST_STEP, &s.mem, x1, &lg, &p) != MCL_OK ||
            mcl_lm_memory_commit(&s.mem, &p) != MCL_OK)
            rc = 1;
        mcl_no_grad_end(ctx);
        mcl_tensor_free(x1);
        mcl_ctx_reset(ctx);
    }
    mcl_tensor *lg = NULL;
    if (rc == 0) rc = mcl_lm_forward(s.m, MCL_FAST_STEP, &s.mem, s.x2, &lg, NULL) == MCL_OK ? 0 : 1;
    if (rc == 0) {
        *logits = tu_read(lg);
        mcl_tensor *l = mcl_cross_entropy(ctx, lg, s.y2);
        rc = l && mcl_backward(ctx, l) == MCL_OK ? 0 : 1;
    }
    *n_grads = 0;
    *grads = calloc((size_t)mcl_params_count(s.m->params), sizeof **grads);
    for (int i = 0; rc == 0 && i < mcl_params_count(s.m->params); i++) {
        mcl_tensor *g = mcl_tensor_grad(mcl_params_get(s.m->params, i));
        (*grads)[(*n_grads)++] = g ? tu_read(g) : NULL;
    }
    if (rc) printf("  backend error: %s\n", mcl_ctx_error(ctx));
    mcl_ctx_reset(ctx);
    seg2_free(&s);
    mcl_ctx_free(ctx);
    return rc;
}

static void test_opencl(void)
{
    printf("-- reference vs OpenCL over two segments\n");
    mcl_ctx *ctx = tu_ctx_ref();
    mcl_lm_config c;
    tiny_cfg(&c);
    mcl_lm *m = mcl_lm_create(ctx, &c);
    if (!CHECK(m != NULL, "create")) return;
    scramble(m);
    float *lr = NULL, *lo = NULL, **gr = NULL, **go = NULL;
    int nr = 0, no = 0;
    const int rr = run_backend(MCL_BACKEND_REF, m, &lr, &gr, &nr);
    const int ro = run_backend(MCL_BACKEND_OPENCL, m, &lo, &go, &no);
    CHECK(rr == 0, "reference run");
    if (ro < 0) {
        printf("SKIP: no OpenCL device\n");
    } else if (CHECK(ro == 0 && rr == 0 && nr == no, "OpenCL run")) {
        double *want = malloc((size_t)S * MCL_LM_VOCAB * sizeof *want);
        for (int64_t i = 0; i < S * MCL_LM_VOCAB; i++) want[i] = lr[i];
        CHECK_ARRAY("logits", lo, want, S * MCL_LM_VOCAB, OCL_ATOL, OCL_RTOL);
        free(want);
        int compared = 0;
        for (int i = 0; i < nr; i++) {
            if (!gr[i] || !go[i]) {
                CHECK(!gr[i] == !go[i], "gradient %d on one backend only", i);
                continue;
            }
            const mcl_tensor *t = mcl_params_get(m->params, i);
            const int64_t n = mcl_tensor_numel(t);
            double *w = malloc((size_t)n * sizeof *w);
            for (int64_t e = 0; e < n; e++) w[e] = gr[i][e];
            char what[96];
            snprintf(what, sizeof what, "gradient of %s", mcl_tensor_name(t));
            CHECK_ARRAY(what, go[i], w, n, OCL_ATOL, OCL_RTOL);
            free(w);
            compared++;
        }
        CHECK(compared >= 10, "%d gradients compared", compared);
    }
    for (int i = 0; i < nr; i++) free(gr ? gr[i] : NULL);
    for (int i = 0; i < no; i++) free(go ? go[i] : NULL);
    free(gr);
    free(go);
    free(lr);
    free(lo);
    mcl_lm_free(m);
    mcl_ctx_free(ctx);
}

static void test_eval(void)
{
    printf("-- the three evaluations on a two-domain stream\n");
    mcl_ctx *ctx = tu_ctx_ref();
    mcl_lm_config c;
    tiny_cfg(&c);
    mcl_lm *m = mcl_lm_create(ctx, &c);
    if (!CHECK(m != NULL, "create")) return;
    scramble(m);
    /* domain 0: letters, domain 1: digits; blocks of 40 bytes */
    uint8_t bytes[200];
    for (int i = 0; i < 200; i++) bytes[i] = (uint8_t)((i / 40) % 2 ? '0' + (i * 7) % 10 : 'a' + (i * 5) % 26);
    const int64_t starts[5] = {0, 40, 80, 120, 160};
    const int doms[5] = {0, 1, 0, 1, 0};
    mcl_lm_stream s = {bytes, 200, 5, starts, doms, 2};
    mcl_lm_eval_opts o;
    mcl_lm_eval_opts_default(&o);
    o.seg_len = S;
    mcl_lm_eval_result st, dy, sm;
    char err[512];
    CHECK(mcl_lm_evaluate(m, &s, &o, &st, err, sizeof err) == MCL_OK, "static: %s", err);
    CHECK(st.chars == 199, "static: %lld bytes predicted (199)", (long long)st.chars);
    int64_t dn = 0, cn = 0;
    double db = 0;
    for (int d = 0; d < 2; d++) dn += st.dom_chars[d], db += st.dom_bits[d];
    for (int b = 0; b < MCL_LM_CURVE_BINS; b++) cn += st.curve_chars[b];
    CHECK(dn == st.chars && cn == st.chars && tu_near(db, st.bits, 1e-9, 1e-12),
          "per domain and per bin add up (%lld, %lld of %lld)", (long long)dn, (long long)cn, (long long)st.chars);
    CHECK(st.curve_chars[0] == 199, "every byte is < 100 after its switch (blocks of 40): bin 0 has %lld",
          (long long)st.curve_chars[0]);
    float *before = tu_read(mcl_params_find(m->params, "layer1.attn.k"));
    o.mode = MCL_LM_DYNAMIC;
    o.lr = 0;
    CHECK(mcl_lm_evaluate(m, &s, &o, &dy, err, sizeof err) == MCL_OK, "dynamic lr 0: %s", err);
    CHECK(tu_near(dy.bits, st.bits, 1e-6, 1e-9), "dynamic with lr 0 = static (%.9g vs %.9g bits)", dy.bits, st.bits);
    mcl_lm_eval_result_free(&dy);
    o.lr = 0.05f;
    CHECK(mcl_lm_evaluate(m, &s, &o, &dy, err, sizeof err) == MCL_OK, "dynamic: %s", err);
    CHECK(!tu_near(dy.bits, st.bits, 1e-3, 0), "dynamic lr 0.05 learns (%.6g vs static %.6g bits)", dy.bits, st.bits);
    float *after = tu_read(mcl_params_find(m->params, "layer1.attn.k"));
    const int64_t nk = mcl_tensor_numel(mcl_params_find(m->params, "layer1.attn.k"));
    CHECK(before && after && memcmp(before, after, (size_t)nk * sizeof *before) == 0,
          "dynamic evaluation puts the trained weights back bit for bit");
    o.mode = MCL_LM_SMN;
    o.h.p = 1.0f;
    CHECK(mcl_lm_evaluate(m, &s, &o, &sm, err, sizeof err) == MCL_OK, "smn: %s", err);
    CHECK(!tu_near(sm.bits, st.bits, 1e-3, 0), "smn writes change the predictions (%.6g vs %.6g bits)", sm.bits,
          st.bits);
    CHECK(tu_is_zero_or_null(mcl_metanet_fast(m->mn, 0)), "no fast weights left after smn evaluation");
    /* p < 1 draws masks: a second evaluation draws the same ones (the counter restarts per
     * evaluation and the caller's counter comes back) */
    mcl_lm_eval_result s1, s2, s3;
    o.h.p = 0.5f;
    mcl_metanet_set_steps(m->mn, 17);
    CHECK(mcl_lm_evaluate(m, &s, &o, &s1, err, sizeof err) == MCL_OK, "smn p 0.5: %s", err);
    CHECK(mcl_lm_evaluate(m, &s, &o, &s2, err, sizeof err) == MCL_OK, "smn p 0.5 again: %s", err);
    CHECK(s1.bits == s2.bits, "two smn evaluations agree bit for bit (%.9g, %.9g)", s1.bits, s2.bits);
    CHECK(mcl_metanet_steps(m->mn) == 17, "the caller's mask counter is put back (%llu)",
          (unsigned long long)mcl_metanet_steps(m->mn));
    /* reset_every 1: the fast weights go to 0 before every segment but the first, so with
     * segments of the whole stream nothing changes, and with short segments it does */
    o.reset_every = 1;
    CHECK(mcl_lm_evaluate(m, &s, &o, &s3, err, sizeof err) == MCL_OK, "smn reset every segment: %s", err);
    CHECK(!tu_near(s3.bits, s1.bits, 1e-4, 0), "resetting every segment changes the result (%.6g vs %.6g)",
          s3.bits, s1.bits);
    mcl_lm_eval_result_free(&s3);
    o.reset_every = 1000;
    CHECK(mcl_lm_evaluate(m, &s, &o, &s3, err, sizeof err) == MCL_OK, "smn reset every 1000: %s", err);
    CHECK(s3.bits == s1.bits, "a reset period longer than the stream = no reset (%.9g, %.9g)", s3.bits, s1.bits);
    o.reset_every = 0;
    mcl_lm_eval_result_free(&s1);
    mcl_lm_eval_result_free(&s2);
    mcl_lm_eval_result_free(&s3);
    /* bad input (dy is reused: free its result first) */
    mcl_lm_eval_result_free(&dy);
    o.seg_len = 0;
    CHECK(mcl_lm_evaluate(m, &s, &o, &dy, err, sizeof err) == MCL_ERR_INVALID, "segment 0 refused: %s", err);
    free(before);
    free(after);
    mcl_lm_eval_result_free(&st);
    mcl_lm_eval_result_free(&dy);
    mcl_lm_eval_result_free(&sm);
    mcl_lm_free(m);
    /* mode smn on a model without fast weights */
    c.fast = 0;
    m = mcl_lm_create(ctx, &c);
    o.seg_len = S;
    CHECK(m && mcl_lm_evaluate(m, &s, &o, &sm, err, sizeof err) == MCL_ERR_INVALID && strstr(err, "fast"),
          "smn mode without fast weights refused: %s", err);
    mcl_lm_free(m);
    /* a bad config */
    tiny_cfg(&c);
    c.width = 15;
    CHECK(mcl_lm_create(ctx, &c) == NULL && strstr(mcl_ctx_error(ctx), "width"), "odd width refused: %s",
          mcl_ctx_error(ctx));
    mcl_ctx_free(ctx);
}

int main(void)
{
    tu_begin("test-lm", SEED);
    test_segments();
    test_gradcheck();
    test_opencl();
    test_eval();
    return tu_summary();
}
