/* test-fresh.c — the reference backend's lazy zeroing of views into a fresh buffer
 * (src/ref/ref_backend.c, src/ref/fresh_spans.c).
 *
 *   - the span list against a byte-per-byte model, over random operations (seed printed):
 *     its ranges stay sorted, disjoint and apart; disjoint / covers agree with the model; the
 *     zeros written by mcl_spans_zero_gaps land exactly on the unwritten bytes; a deliberately
 *     wrong zero-fill (one byte short) is caught by the same comparison
 *   - a fresh buffer whose pooled block still holds an earlier tensor's values (7.0): a view
 *     stored by its op, the same view again (now accumulated), an overlapping view (only its
 *     unwritten part zero-filled), a view written by a fill; the bytes outside every view stay
 *     unwritten until the whole buffer is read (which gives zeros there); a whole fill with +0
 *     makes it fresh again
 *   - a small network whose parameters are packed into a flat gradient of 2.6 MB (views that
 *     matmul's backward stores and bias_add's zero-fills by range): gradients equal bit for bit
 *     to those of the same network with its parameters unpacked, over two steps (the second
 *     after a zero_grad, the flat gradient fresh again over the old step's values) */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fresh_spans.h"
#include "metacl.h"
#include "params.h"
#include "ref.h"
#include "tape.h"
#include "tensor_impl.h"
#include "testutil.h"

#define SEED 20261130u

/* ---- the span list against a model ------------------------------------------------------ */

#define NB 4096 /* bytes of the modelled buffer */

static uint64_t rng_state = SEED;
static uint32_t next_u32(void)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(rng_state >> 33);
}

static void zero_exact(char *p, size_t n) { memset(p, 0, n); }
static void zero_short(char *p, size_t n) { memset(p, 0, n > 1 ? n - 1 : 0); } /* planted */

/* 1 when the list is well formed and says what the model says */
static int spans_agree(const mcl_spans *s, const unsigned char *written)
{
    for (size_t i = 0; i < s->n; i++) {
        if (s->lo[i] >= s->hi[i] || s->hi[i] > NB) return 0;
        if (i > 0 && s->lo[i] <= s->hi[i - 1]) return 0; /* sorted, apart (touching merged) */
    }
    size_t k = 0;
    for (size_t b = 0; b < NB; b++) {
        while (k < s->n && s->hi[k] <= b) k++;
        const int in = k < s->n && s->lo[k] <= b;
        if (in != written[b]) return 0;
    }
    return 1;
}

static void test_spans(void)
{
    printf("test-fresh: span list, 3000 random operations, seed %u\n", SEED);
    mcl_spans *s = mcl_spans_create();
    unsigned char written[NB], want[NB];
    char buf[NB];
    memset(written, 0, sizeof written);
    memset(buf, 0xAB, sizeof buf);
    memcpy(want, buf, sizeof want);
    int ok = s != NULL;
    for (int it = 0; it < 3000 && ok; it++) {
        size_t lo = next_u32() % NB, len = 1 + next_u32() % 300;
        size_t hi = lo + len > NB ? NB : lo + len;
        int model_disjoint = 1;
        for (size_t b = lo; b < hi; b++) model_disjoint &= !written[b];
        ok &= mcl_spans_disjoint(s, lo, hi) == model_disjoint;
        if (it % 97 == 0) { /* a whole fill with +0: the caller drops the list */
            mcl_spans_free(s);
            s = mcl_spans_create();
            memset(written, 0, sizeof written);
            ok &= s != NULL;
            continue;
        }
        if (next_u32() % 2) { /* an op stores the range */
            ok &= mcl_spans_add(s, lo, hi);
            memset(buf + lo, 0x5C, hi - lo);
            memset(want + lo, 0x5C, hi - lo);
        } else { /* any other use: its unwritten bytes get their zeros */
            ok &= mcl_spans_zero_gaps(s, buf, lo, hi, zero_exact);
            for (size_t b = lo; b < hi; b++)
                if (!written[b]) want[b] = 0;
        }
        for (size_t b = lo; b < hi; b++) written[b] = 1;
        ok &= spans_agree(s, written) && memcmp(buf, want, NB) == 0;
        int all = 1;
        for (size_t b = 0; b < NB; b++) all &= written[b];
        ok &= mcl_spans_covers(s, NB) == all;
    }
    CHECK(ok, "span list agrees with the byte model over every operation");
    mcl_spans_free(s);

    /* the comparison catches a zero-fill one byte short */
    s = mcl_spans_create();
    memset(buf, 0xAB, sizeof buf);
    if (s) {
        mcl_spans_add(s, 100, 200);
        mcl_spans_zero_gaps(s, buf, 50, 300, zero_short);
        int caught = 0;
        for (size_t b = 50; b < 300; b++)
            if ((b < 100 || b >= 200) && buf[b] != 0) caught = 1;
        CHECK(caught, "a zero-fill one byte short leaves a nonzero byte the check sees");
    }
    mcl_spans_free(s);

    /* merging: touching ranges become one, a range bridging two merges all three */
    s = mcl_spans_create();
    if (s) {
        mcl_spans_add(s, 10, 20);
        mcl_spans_add(s, 30, 40);
        mcl_spans_add(s, 20, 25);
        CHECK(s->n == 2 && s->lo[0] == 10 && s->hi[0] == 25, "touching ranges merge (%zu ranges)", s->n);
        mcl_spans_add(s, 24, 31);
        CHECK(s->n == 1 && s->lo[0] == 10 && s->hi[0] == 40, "a bridging range merges three (%zu ranges)", s->n);
        CHECK(!mcl_spans_disjoint(s, 39, 50) && mcl_spans_disjoint(s, 40, 50) && mcl_spans_disjoint(s, 0, 10),
              "half-open ends");
    }
    mcl_spans_free(s);
}

/* ---- views into a fresh buffer, on the reference backend -------------------------------- */

#define NF 65536 /* floats: 256 KiB, a block that keeps spans */

static void test_views(mcl_ctx *ctx)
{
    const int64_t shape[1] = {NF};
    /* a block that held 7.0 everywhere goes back to the pool and comes out fresh */
    mcl_tensor *old = mcl_tensor_create(ctx, 1, shape);
    CHECK(old && mcl_tensor_fill(old, 7.0f) == MCL_OK, "old tensor");
    const void *old_handle = old ? old->buf->handle : NULL;
    mcl_tensor_free(old);
    mcl_tensor *t = mcl_tensor_create(ctx, 1, shape);
    if (!t) {
        CHECK(0, "create: %s", mcl_ctx_error(ctx));
        return;
    }
    CHECK(t->buf->handle == old_handle, "the pool hands the same block back (so its 7.0s stand for zeros)");
    float *raw = mcl_ref_ptr(t);
    const int64_t n1 = 1000;
    mcl_tensor *va = mcl_tensor_view(t, 1000, 1, &n1);
    mcl_tensor *vb = mcl_tensor_view(t, 1500, 1, &n1);
    const int64_t n2 = 100;
    mcl_tensor *vc = mcl_tensor_view(t, 60000, 1, &n2);
    CHECK(va && vb && vc, "views");
    if (!va || !vb || !vc) goto done;

    CHECK(mcl_ref_grad_fresh(va) == 1, "a view into a fresh buffer, nothing written: stored by its op");
    for (int i = 1000; i < 2000; i++) raw[i] = 1.0f; /* what the op stores */
    CHECK(mcl_ref_grad_fresh(va) == 0, "the same view again: accumulated into");
    CHECK(raw[1000] == 1.0f && raw[1999] == 1.0f, "its values kept");
    CHECK(mcl_ref_grad_fresh(vb) == 0, "an overlapping view: accumulated into");
    int ok = 1;
    for (int i = 1500; i < 2000; i++) ok &= raw[i] == 1.0f;
    for (int i = 2000; i < 2500; i++) ok &= raw[i] == 0.0f;
    CHECK(ok, "the overlapping view: written part kept, the rest zero-filled");
    CHECK(mcl_tensor_fill(vc, 3.0f) == MCL_OK, "fill a view");
    CHECK(raw[30000] == 7.0f && raw[999] == 7.0f && raw[2500] == 7.0f && raw[60100] == 7.0f,
          "bytes outside every view not written yet (%g %g %g %g)", raw[30000], raw[999], raw[2500], raw[60100]);

    float *all = tu_read(t);
    if (all) {
        ok = 1;
        for (int i = 0; i < NF; i++) {
            const float want = i >= 1000 && i < 2000 ? 1.0f : i >= 60000 && i < 60100 ? 3.0f : 0.0f;
            ok &= all[i] == want;
        }
        CHECK(ok, "the whole buffer reads: the views' values, zeros elsewhere");
        free(all);
    }
    CHECK(raw[30000] == 0.0f, "after a read of the whole buffer its zeros are written");

    CHECK(mcl_tensor_fill(t, 0.0f) == MCL_OK && mcl_ref_grad_fresh(va) == 1,
          "a whole fill with +0: fresh again, the view stored");
done:
    mcl_tensor_free(va);
    mcl_tensor_free(vb);
    mcl_tensor_free(vc);
    mcl_tensor_free(t);
}

/* ---- a packed network against an unpacked one ------------------------------------------- */

#define B 8
#define DI 64
#define DH 5120

typedef struct net {
    mcl_params *p;
    mcl_tensor *w1, *b1, *w2, *b2;
} net;

static void net_init(mcl_ctx *ctx, net *n, int pack)
{
    const int64_t s1[2] = {DI, DH}, sb1[1] = {DH}, s2[2] = {DH, DI}, sb2[1] = {DI};
    n->p = mcl_params_create(ctx);
    n->w1 = mcl_params_add(n->p, "w1", 2, s1);
    n->b1 = mcl_params_add(n->p, "b1", 1, sb1);
    n->w2 = mcl_params_add(n->p, "w2", 2, s2);
    n->b2 = mcl_params_add(n->p, "b2", 1, sb2);
    mcl_tensor *ts[4] = {n->w1, n->b1, n->w2, n->b2};
    for (int k = 0; k < 4; k++) {
        const int64_t m = ts[k] ? mcl_tensor_numel(ts[k]) : 0;
        float *v = malloc((size_t)m * sizeof *v);
        for (int64_t i = 0; v && i < m; i++) v[i] = (float)((i * 7919 + k * 104729) % 2001 - 1000) * 1e-3f;
        CHECK(v && ts[k] && mcl_tensor_write(ts[k], v, m) == MCL_OK, "param %d", k);
        free(v);
    }
    if (pack) CHECK(mcl_params_pack(n->p) == MCL_OK, "pack: %s", mcl_ctx_error(ctx));
}

/* loss = sum(relu(x·w1 + b1)·w2 + b2), backward; the four gradients, read */
static void net_step(mcl_ctx *ctx, net *n, int step, float **g)
{
    const int64_t xs[2] = {B, DI};
    float xv[B * DI];
    for (int i = 0; i < B * DI; i++) xv[i] = (float)((i * 31 + step * 17) % 101 - 50) * 0.02f;
    mcl_params_zero_grad(n->p);
    mcl_tensor *x = tu_tensor_from(ctx, 2, xs, xv);
    mcl_tensor *h = mcl_relu(ctx, mcl_bias_add(ctx, mcl_matmul(ctx, x, n->w1, 0, 0), n->b1));
    mcl_tensor *y = mcl_bias_add(ctx, mcl_matmul(ctx, h, n->w2, 0, 0), n->b2);
    mcl_tensor *l = mcl_sum(ctx, y);
    CHECK(l && mcl_backward(ctx, l) == MCL_OK, "backward: %s", mcl_ctx_error(ctx));
    mcl_tensor *ts[4] = {n->w1, n->b1, n->w2, n->b2};
    for (int k = 0; k < 4; k++) g[k] = mcl_tensor_grad(ts[k]) ? tu_read(mcl_tensor_grad(ts[k])) : NULL;
    mcl_tensor_free(x);
    mcl_ctx_reset(ctx);
}

static void test_packed(mcl_ctx *ctx)
{
    net a, b;
    net_init(ctx, &a, 1);
    net_init(ctx, &b, 0);
    mcl_tensor *arena = mcl_params_arena(a.p, 1);
    CHECK(arena && mcl_tensor_numel(arena) * 4 > (64 << 10), "a flat gradient of %lld floats",
          arena ? (long long)mcl_tensor_numel(arena) : 0LL);
    const char *names[4] = {"w1", "b1", "w2", "b2"};
    for (int step = 0; step < 2; step++) {
        float *ga[4], *gb[4];
        net_step(ctx, &a, step, ga);
        net_step(ctx, &b, step, gb);
        mcl_tensor *ts[4] = {a.w1, a.b1, a.w2, a.b2};
        for (int k = 0; k < 4; k++) {
            const int64_t m = mcl_tensor_numel(ts[k]);
            CHECK(ga[k] && gb[k] && memcmp(ga[k], gb[k], (size_t)m * sizeof(float)) == 0,
                  "step %d: gradient of %s packed = unpacked, bit for bit", step, names[k]);
            free(ga[k]);
            free(gb[k]);
        }
    }
    mcl_params_free(a.p);
    mcl_params_free(b.p);
}

int main(void)
{
    tu_begin("test-fresh", SEED);
    test_spans();
    mcl_ctx *ctx = tu_ctx_ref();
    test_views(ctx);
    test_packed(ctx);
    CHECK(mcl_ctx_status(ctx) == MCL_OK, "no stray error left: %s", mcl_ctx_error(ctx));
    mcl_ctx_free(ctx);
    return tu_summary();
}
