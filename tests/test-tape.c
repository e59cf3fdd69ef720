/* test-tape.c — autograd tape semantics on the reference backend.
 *
 * Small hand-checkable shapes; every expected gradient is written as its formula (computed in
 * double here) next to the graph it belongs to:
 *   - branching: y = sum(a*b + a*a + relu(a))      dy/da = b + 2a + [a > 0], dy/db = a
 *   - accumulation over two mcl_backward calls, zeroing (tensor and registry)
 *   - mcl_detach: values equal, no gradient through it
 *   - no-grad scopes (nesting), ops on constants record nothing
 *   - partial backward from a mark (mcl_grad_partial)
 *   - gradients handed over as views (reshape, add: tape.c WALK_ALIAS) where the input is
 *     used again, used twice by the same add, or requested by a partial walk
 *   - gradients made as views into the input's (reshape before a repeat, disjoint row
 *     slices: tape.c WALK_INTO), the same bits as without, their backward calls skipped
 *   - a partial walk runs only the backward ops on a path from the loss to a wrt tensor
 *   - mcl_ctx_reset frees temporaries; kept tensors survive
 *   - backward of a non-scalar loss, backward after reset: errors, no crash
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metacl.h"
#include "profile.h"
#include "tape.h"
#include "tensor_impl.h"
#include "testutil.h"

#define SEED 20240611u
#define N 4

static const double ATOL = 1e-6, RTOL = 1e-6;

/* Compare the accumulated .grad of a leaf with want[n]. */
#define CHECK_GRAD(what, leaf, want)                                                          \
    CHECK_TENSOR((what), mcl_tensor_grad(leaf), (want), N, ATOL, RTOL)

static mcl_tensor *leaf(mcl_ctx *ctx, const char *name, const float *v)
{
    int64_t shape[1] = {N};
    mcl_tensor *t = mcl_param_create(ctx, name, 1, shape);
    CHECK(t != NULL, "mcl_param_create(%s): %s", name, mcl_ctx_error(ctx));
    if (t) CHECK(mcl_tensor_write(t, v, N) == MCL_OK, "write %s", name);
    return t;
}

static int needs_grad(const mcl_tensor *t)
{
    return t && (t->flags & MCL_TF_NEEDS_GRAD) != 0;
}

/* ---- branching, accumulation, zeroing ---- */
static void test_branching(mcl_ctx *ctx)
{
    const float av[N] = {-1.5f, 0.5f, 2.0f, -0.25f};
    const float bv[N] = {0.5f, -2.0f, 1.5f, 3.0f};
    mcl_tensor *a = leaf(ctx, "a", av), *b = leaf(ctx, "b", bv);
    if (!a || !b) goto done;
    CHECK((a->flags & MCL_TF_REQUIRES_GRAD) != 0, "param a requires grad");
    CHECK(mcl_tensor_grad(a) == NULL, "fresh leaf has no grad yet");

    size_t size0 = mcl_tape_size(ctx);
    /* a is used by three ops (mul twice as both inputs, relu): the tape must sum all paths */
    mcl_tensor *ab = mcl_mul(ctx, a, b);
    mcl_tensor *aa = mcl_mul(ctx, a, a);
    mcl_tensor *ra = mcl_relu(ctx, a);
    mcl_tensor *s1 = mcl_add(ctx, ab, aa);
    mcl_tensor *s2 = mcl_add(ctx, s1, ra);
    mcl_tensor *y = mcl_sum(ctx, s2);
    CHECK(y != NULL, "forward of the branching graph: %s", mcl_ctx_error(ctx));
    if (!y) goto done;
    CHECK(mcl_tape_size(ctx) == size0 + 6, "6 recorded ops: tape size %zu, was %zu",
          mcl_tape_size(ctx), size0);
    CHECK(needs_grad(y), "loss needs grad");

    double yv = 0, ga[N], gb[N], a_d[N];
    for (int i = 0; i < N; i++) {
        double x = av[i], w = bv[i];
        yv += x * w + x * x + (x > 0 ? x : 0);
        ga[i] = w + 2 * x + (x > 0 ? 1 : 0);
        gb[i] = x;
        a_d[i] = x;
    }
    CHECK_NEAR("y = sum(a*b + a*a + relu(a))", mcl_tensor_item(y, 0), yv, ATOL, RTOL);
    CHECK_NEAR("y by hand", yv, 9.5625, 0, 0); /* 0.5 + 6.5625 + 2.5 */

    CHECK(mcl_backward(ctx, y) == MCL_OK, "backward: %s", mcl_ctx_error(ctx));
    CHECK_GRAD("dy/da = b + 2a + [a>0]", a, ga);
    CHECK_GRAD("dy/db = a", b, gb);
    CHECK(mcl_tape_size(ctx) == size0 + 6, "backward keeps the tape");

    /* the comparison must be able to fail: a wrong gradient (missing the relu path) */
    {
        double wrong[N];
        for (int i = 0; i < N; i++) wrong[i] = bv[i] + 2.0 * av[i];
        float *g = tu_read(mcl_tensor_grad(a));
        CHECK(g && tu_first_mismatch(g, wrong, N, ATOL, RTOL) >= 0,
              "helper detects a gradient missing the relu branch");
        free(g);
    }

    /* second backward over the same tape accumulates: grads double */
    CHECK(mcl_backward(ctx, y) == MCL_OK, "second backward: %s", mcl_ctx_error(ctx));
    double ga2[N], gb2[N], gb3[N];
    for (int i = 0; i < N; i++) {
        ga2[i] = 2 * ga[i];
        gb2[i] = 2 * gb[i];
        gb3[i] = 3 * gb[i];
    }
    CHECK_GRAD("accumulated dy/da (x2)", a, ga2);
    CHECK_GRAD("accumulated dy/db (x2)", b, gb2);

    /* zeroing one leaf leaves the other alone */
    mcl_tensor_zero_grad(a);
    CHECK(tu_is_zero_or_null(mcl_tensor_grad(a)), "zero_grad(a) zeroes (or drops) a.grad");
    CHECK_GRAD("b.grad untouched by zero_grad(a)", b, gb2);
    CHECK(mcl_backward(ctx, y) == MCL_OK, "third backward: %s", mcl_ctx_error(ctx));
    CHECK_GRAD("after zero_grad, one backward: dy/da", a, ga);
    CHECK_GRAD("b accumulated three times", b, gb3);

    /* detach: values equal, no gradient flows through it */
    mcl_ctx_reset(ctx);
    mcl_tensor_zero_grad(a);
    mcl_tensor_zero_grad(b);
    mcl_tensor *d = mcl_detach(a);
    CHECK(d != NULL, "mcl_detach: %s", mcl_ctx_error(ctx));
    if (d) {
        CHECK_TENSOR("detach(a) has a's values", d, a_d, N, 0, 0);
        CHECK(!needs_grad(d) && !(d->flags & MCL_TF_REQUIRES_GRAD),
              "detached tensor needs no grad (flags 0x%x)", d->flags);
        /* y = sum(detach(a) * a): dy/da = a (one path), not 2a */
        mcl_tensor *yd = mcl_sum(ctx, mcl_mul(ctx, d, a));
        CHECK(yd && mcl_backward(ctx, yd) == MCL_OK, "backward through detach: %s",
              mcl_ctx_error(ctx));
        CHECK_GRAD("dy/da with y = sum(detach(a)*a) is a", a, a_d);

        /* detach of an intermediate: h = a*a; y = sum(detach(h) * a): dy/da = a^2, not 3a^2 */
        mcl_tensor_zero_grad(a);
        mcl_tensor *h = mcl_mul(ctx, a, a);
        mcl_tensor *hd = mcl_detach(h);
        CHECK(hd && !needs_grad(hd), "detach of an intermediate needs no grad");
        mcl_tensor *yh = mcl_sum(ctx, mcl_mul(ctx, hd, a));
        CHECK(yh && mcl_backward(ctx, yh) == MCL_OK, "backward (detached h): %s",
              mcl_ctx_error(ctx));
        double a2[N];
        for (int i = 0; i < N; i++) a2[i] = (double)av[i] * av[i];
        CHECK_GRAD("dy/da with y = sum(detach(a*a)*a) is a^2", a, a2);
        mcl_tensor_free(hd);
        mcl_tensor_free(d);
    }

    /* registry zeroing */
    mcl_ctx_reset(ctx);
    {
        mcl_params *P = mcl_params_create(ctx);
        CHECK(P != NULL, "mcl_params_create");
        if (P) {
            int64_t shape[1] = {N};
            mcl_tensor *w = mcl_params_add(P, "w", 1, shape);
            CHECK(w != NULL && (w->flags & MCL_TF_REQUIRES_GRAD), "params_add gives a trainable leaf");
            if (w) {
                const float wv[N] = {1, -2, 3, 0.5f};
                double g2w[N];
                for (int i = 0; i < N; i++) g2w[i] = 2.0 * wv[i];
                mcl_tensor_write(w, wv, N);
                mcl_tensor *l = mcl_sum(ctx, mcl_mul(ctx, w, w));
                CHECK(l && mcl_backward(ctx, l) == MCL_OK, "backward sum(w*w)");
                CHECK_GRAD("d sum(w^2)/dw = 2w", w, g2w);
                mcl_params_zero_grad(P);
                CHECK(tu_is_zero_or_null(mcl_tensor_grad(w)), "params_zero_grad zeroes w.grad");
                CHECK(mcl_backward(ctx, l) == MCL_OK, "backward after params_zero_grad");
                CHECK_GRAD("after params_zero_grad: 2w, not 4w", w, g2w);
            }
            mcl_ctx_reset(ctx);
            mcl_params_free(P);
        }
    }
done:
    mcl_ctx_reset(ctx);
    mcl_tensor_free(a);
    mcl_tensor_free(b);
}

/* ---- no-grad scopes ---- */
static void test_no_grad(mcl_ctx *ctx)
{
    const float av[N] = {1, -2, 3, -4};
    const float cv[N] = {0.5f, 0.25f, -1, 2};
    mcl_tensor *a = leaf(ctx, "a", av);
    mcl_tensor *c = tu_vec(ctx, N, cv);
    if (!a || !c) goto done;
    double prod[N];
    for (int i = 0; i < N; i++) prod[i] = (double)av[i] * cv[i];

    size_t s0 = mcl_tape_size(ctx);
    CHECK(mcl_grad_enabled(ctx), "gradients are on by default");

    /* an op whose inputs need no grad records nothing even with gradients on */
    mcl_tensor *cc = mcl_mul(ctx, c, c);
    CHECK(cc && !needs_grad(cc), "constant * constant needs no grad");
    CHECK(mcl_tape_size(ctx) == s0, "op on constants not recorded (tape %zu -> %zu)", s0,
          mcl_tape_size(ctx));

    mcl_no_grad_begin(ctx);
    CHECK(!mcl_grad_enabled(ctx), "no-grad scope disables gradients");
    mcl_tensor *r1 = mcl_mul(ctx, a, c);
    CHECK(r1 && !needs_grad(r1), "result inside no-grad needs no grad");
    CHECK_TENSOR("no-grad op still computes a*c", r1, prod, N, ATOL, RTOL);
    CHECK(mcl_tape_size(ctx) == s0, "no-grad: nothing recorded");

    mcl_no_grad_begin(ctx); /* nested */
    mcl_tensor *r2 = mcl_add(ctx, a, a);
    CHECK(r2 && !needs_grad(r2), "nested no-grad: result needs no grad");
    mcl_no_grad_end(ctx);
    CHECK(!mcl_grad_enabled(ctx), "after the inner end, still inside the outer scope");
    mcl_tensor *r3 = mcl_relu(ctx, a);
    CHECK(r3 && !needs_grad(r3), "outer scope: result needs no grad");
    CHECK(mcl_tape_size(ctx) == s0, "nested no-grad: nothing recorded (tape %zu)",
          mcl_tape_size(ctx));
    mcl_no_grad_end(ctx);

    CHECK(mcl_grad_enabled(ctx), "gradients back on after the outer end");
    mcl_tensor *r4 = mcl_mul(ctx, a, c);
    CHECK(r4 && needs_grad(r4), "with gradients on, a*c needs grad");
    CHECK(mcl_tape_size(ctx) == s0 + 1, "with gradients on, one op recorded (tape %zu)",
          mcl_tape_size(ctx));
    /* the result computed under no-grad acts as a constant: d sum(r1 * a)/da = r1 = a*c */
    mcl_tensor *l = mcl_sum(ctx, mcl_mul(ctx, r1, a));
    CHECK(l && mcl_backward(ctx, l) == MCL_OK, "backward using a no-grad result: %s",
          mcl_ctx_error(ctx));
    CHECK_GRAD("no-grad result is a constant for backward", a, prod);
done:
    mcl_ctx_reset(ctx);
    mcl_tensor_free(a);
    mcl_tensor_free(c);
}

/* ---- reshape returns a view (no copy) and still carries the gradient ---- */
static void test_reshape_view(mcl_ctx *ctx)
{
    const float av[N] = {1, -2, 3, -4};
    mcl_tensor *a = leaf(ctx, "a", av);
    if (!a) return;
    const int64_t s22[2] = {2, 2}, s21[2] = {2, 1};
    mcl_tensor *y = mcl_reshape(ctx, a, 2, s22);
    CHECK(y && y->buf == a->buf && y->offset == a->offset && y->ndim == 2 && y->shape[0] == 2,
          "reshape [4] -> [2,2] is a view of a's buffer");
    double want[N], twice[N];
    for (int i = 0; i < N; i++) want[i] = av[i], twice[i] = 2.0 * av[i];
    CHECK_TENSOR("the view reads a's values", y, want, N, 0.0, 0.0);
    /* d sum(y * y)/da = 2a through the view */
    mcl_tensor *l = y ? mcl_sum(ctx, mcl_mul(ctx, y, y)) : NULL;
    CHECK(l && mcl_backward(ctx, l) == MCL_OK, "backward through a reshape view: %s", mcl_ctx_error(ctx));
    CHECK_GRAD("gradient through the reshape view is 2a", a, twice);
    /* a view of a view keeps its offset: elements 2..3 of a as [2,1] */
    const int64_t s2[1] = {2};
    mcl_tensor *tail = mcl_tensor_view(a, 2, 1, s2);
    mcl_tensor *t2 = tail ? mcl_reshape(ctx, tail, 2, s21) : NULL;
    CHECK(t2 && t2->buf == a->buf && t2->offset == a->offset + 2, "reshape keeps a view's offset");
    CHECK_TENSOR("the reshaped tail reads a[2..3]", t2, want + 2, 2, 0.0, 0.0);
    /* a wrong element count is still refused, and nothing is aliased */
    mcl_tensor *bad = mcl_reshape(ctx, a, 2, s21);
    CHECK(!bad && mcl_ctx_status(ctx) == MCL_ERR_SHAPE, "reshape [4] -> [2,1] refused");
    mcl_ctx_clear_error(ctx);
    mcl_ctx_reset(ctx); /* frees the views, not a's buffer */
    CHECK_TENSOR("a intact after the views are freed", a, want, N, 0.0, 0.0);
    mcl_tensor_free(tail);
    mcl_tensor_free(a);
}

/* ---- gradients made as views into the input's (tape.c WALK_INTO) ----
 * x = a*b, p = sum(x*d), z = repeat_batch(reshape(x, [2,2]), 3) (x's gradient started by p,
 * the reshape's output read by the repeat alone), t = a*a, T = reshape(t, [2,2]) read by two
 * disjoint row slices s0 = T[0:1], s1 = T[1:2];
 *   L = p + sum(z) + sum(s0·s0) + sum(s1)
 *   dL/dx = d + 3,  dL/dT = [2 s0; 1],  dL/da = b·(d + 3) + 2a·(i < 2 ? 2a² : 1).
 * The full walk makes the reshape's and the slices' output gradients views into x's and T's,
 * skipping their 3 backward calls; a partial walk that requests those outputs (so they keep
 * their own) runs them, and gives a's gradient with the same bits. */
static void test_into(mcl_ctx *ctx)
{
    const float av[N] = {1.5f, -0.75f, 2.0f, -1.25f}, bv[N] = {0.5f, 2, -1, 1.5f};
    const float dv[N] = {0.25f, -1.5f, 1, 3};
    mcl_tensor *a = leaf(ctx, "a", av), *b = leaf(ctx, "b", bv), *d = leaf(ctx, "d", dv);
    mcl_tensor *g[4] = {NULL, NULL, NULL, NULL};
    float full[N], part[N];
    if (!a || !b || !d) goto done;
    const int64_t s22[2] = {2, 2};
    uint64_t calls[2] = {0, 0};
    for (int pass = 0; pass < 2; pass++) {
        const size_t mark = mcl_tape_mark(ctx);
        mcl_tensor *x = mcl_mul(ctx, a, b);
        mcl_tensor *p = mcl_sum(ctx, mcl_mul(ctx, x, d));
        mcl_tensor *r = mcl_reshape(ctx, x, 2, s22);
        mcl_tensor *z = mcl_repeat_batch(ctx, r, 3);
        mcl_tensor *T = mcl_reshape(ctx, mcl_mul(ctx, a, a), 2, s22);
        mcl_tensor *y0 = mcl_slice_rows(ctx, T, 0, 1), *y1 = mcl_slice_rows(ctx, T, 1, 1);
        mcl_tensor *L = mcl_add(ctx, mcl_add(ctx, p, mcl_sum(ctx, z)),
                                mcl_add(ctx, mcl_sum(ctx, mcl_mul(ctx, y0, y0)), mcl_sum(ctx, y1)));
        if (!L) break;
        mcl_backend_stats before, after;
        mcl_ctx_stats(ctx, &before);
        if (pass == 0) {
            CHECK(mcl_backward(ctx, L) == MCL_OK, "backward: %s", mcl_ctx_error(ctx));
            mcl_ctx_stats(ctx, &after);
            CHECK(mcl_tensor_read(mcl_tensor_grad(a), full, N) == MCL_OK, "read a's gradient");
        } else {
            mcl_tensor *wrt[4] = {a, r, y0, y1};
            CHECK(mcl_grad_partial(ctx, L, mark, 4, wrt, g) == MCL_OK, "partial: %s", mcl_ctx_error(ctx));
            mcl_ctx_stats(ctx, &after);
            CHECK(g[0] && mcl_tensor_read(g[0], part, N) == MCL_OK, "read the partial gradient");
        }
        calls[pass] = after.op_calls - before.op_calls;
        mcl_ctx_reset(ctx);
    }
    double want[N];
    for (int i = 0; i < N; i++)
        want[i] = (double)bv[i] * (dv[i] + 3.0) + 2.0 * av[i] * (i < 2 ? 2.0 * av[i] * av[i] : 1.0);
    CHECK_GRAD("dL/da = b(d + 3) + 2a(i < 2 ? 2a^2 : 1) with gradients as views into inputs'", a, want);
    CHECK(memcmp(full, part, sizeof full) == 0,
          "a's gradient has the same bits as the partial walk's, which keeps the views off "
          "(%.9g vs %.9g)", (double)full[0], (double)part[0]);
    CHECK(calls[1] == calls[0] + 3,
          "the full walk skips the reshape's and both slices' backward: %llu calls, partial %llu",
          (unsigned long long)calls[0], (unsigned long long)calls[1]);
done:
    for (int k = 0; k < 4; k++) mcl_tensor_free(g[k]);
    mcl_ctx_reset(ctx);
    mcl_tensor_free(a);
    mcl_tensor_free(b);
    mcl_tensor_free(d);
}

/* ---- gradients handed over as views ----
 * x = a*b, p = sum(x*d), y = reshape(x); three graphs, each gradient by hand:
 *   1. l = sum(add(y, x)·c) + p:    dl/dx = c (through y) + c (direct) + d,  dl/da = (2c + d)·b
 *   2. l = sum(add(x, x)·c):        dl/dx = 2c (one add, both inputs the same tensor)
 *   3. partial walk of l = sum(y·c) + p for {y, x}: dl/dy = c (y is requested, so x's later
 *      gradient d must not reach it), dl/dx = c + d */
static void test_handover(mcl_ctx *ctx)
{
    const float av[N] = {1, -2, 3, -4}, bv[N] = {0.5f, 2, -1, 1.5f};
    const float cv[N] = {1, 2, 3, 4}, dv[N] = {-1, 0.5f, 2, -3};
    mcl_tensor *a = leaf(ctx, "a", av), *b = leaf(ctx, "b", bv);
    mcl_tensor *c = leaf(ctx, "c", cv), *d = leaf(ctx, "d", dv);
    if (!a || !b || !c || !d) goto done;
    mcl_tensor_requires_grad(c, 0);
    mcl_tensor_requires_grad(d, 0);
    const int64_t s4[1] = {N};
    double want[N], wrong[N];
    /* 1 */
    mcl_tensor *x = mcl_mul(ctx, a, b);
    mcl_tensor *p = mcl_sum(ctx, mcl_mul(ctx, x, d));
    mcl_tensor *y = mcl_reshape(ctx, x, 1, s4);
    mcl_tensor *l = mcl_add(ctx, mcl_sum(ctx, mcl_mul(ctx, mcl_add(ctx, y, x), c)), p);
    CHECK(l && mcl_backward(ctx, l) == MCL_OK, "backward 1: %s", mcl_ctx_error(ctx));
    for (int i = 0; i < N; i++) want[i] = (2.0 * cv[i] + dv[i]) * bv[i];
    CHECK_GRAD("dl/da = (2c + d)·b through a handed-over reshape and add", a, want);
    for (int i = 0; i < N; i++) wrong[i] = (cv[i] + dv[i]) * bv[i];
    float ga[N];
    CHECK(mcl_tensor_grad(a) && mcl_tensor_read(mcl_tensor_grad(a), ga, N) == MCL_OK &&
              tu_first_mismatch(ga, wrong, N, ATOL, RTOL) >= 0,
          "a gradient that lost the direct use is detected");
    mcl_ctx_reset(ctx);
    mcl_tensor_zero_grad(a);
    /* 2 */
    x = mcl_mul(ctx, a, b);
    l = mcl_sum(ctx, mcl_mul(ctx, mcl_add(ctx, x, x), c));
    CHECK(l && mcl_backward(ctx, l) == MCL_OK, "backward 2: %s", mcl_ctx_error(ctx));
    for (int i = 0; i < N; i++) want[i] = 2.0 * cv[i] * bv[i];
    CHECK_GRAD("dl/da = 2c·b for add(x, x)", a, want);
    mcl_ctx_reset(ctx);
    /* 3 */
    size_t mark = mcl_tape_mark(ctx);
    x = mcl_mul(ctx, a, b);
    p = mcl_sum(ctx, mcl_mul(ctx, x, d));
    y = mcl_reshape(ctx, x, 1, s4);
    l = mcl_add(ctx, mcl_sum(ctx, mcl_mul(ctx, y, c)), p);
    mcl_tensor *wrt[2] = {y, x}, *g[2] = {NULL, NULL};
    CHECK(l && mcl_grad_partial(ctx, l, mark, 2, wrt, g) == MCL_OK, "partial 3: %s", mcl_ctx_error(ctx));
    for (int i = 0; i < N; i++) want[i] = cv[i];
    CHECK_TENSOR("dl/dy = c for a requested reshape output", g[0], want, N, ATOL, RTOL);
    for (int i = 0; i < N; i++) want[i] = (double)cv[i] + dv[i];
    CHECK_TENSOR("dl/dx = c + d", g[1], want, N, ATOL, RTOL);
    mcl_tensor_free(g[0]);
    mcl_tensor_free(g[1]);
done:
    mcl_ctx_reset(ctx);
    mcl_tensor_free(a);
    mcl_tensor_free(b);
    mcl_tensor_free(c);
    mcl_tensor_free(d);
}

/* ---- a partial walk prunes what no wrt tensor needs ----
 * After the mark: u = p*w (p, w leaves), L = sum(u*q), wrt = {q}: dL/dq = p w. The backward of
 * u = p*w reaches no wrt tensor (its inputs are leaves the caller did not ask for), so the
 * walk runs sum's and the outer mul's backward only: 2 op calls, not 3. */
static void test_partial_prune(mcl_ctx *ctx)
{
    const float pv[N] = {0.5f, -1.0f, 2.0f, 1.5f};
    const float wv[N] = {3.0f, 0.25f, -1.0f, 2.0f};
    const float qv[N] = {1.0f, 0.5f, -0.5f, 2.0f};
    mcl_tensor *p = leaf(ctx, "p", pv), *w = leaf(ctx, "w", wv), *q = leaf(ctx, "q", qv);
    mcl_tensor *g = NULL;
    if (!p || !w || !q) goto done;
    const size_t mark = mcl_tape_mark(ctx);
    mcl_tensor *L = mcl_sum(ctx, mcl_mul(ctx, mcl_mul(ctx, p, w), q));
    mcl_backend_stats s0, s1;
    mcl_ctx_stats(ctx, &s0);
    mcl_tensor *wrt[1] = {q};
    CHECK(L && mcl_grad_partial(ctx, L, mark, 1, wrt, &g) == MCL_OK, "partial: %s", mcl_ctx_error(ctx));
    mcl_ctx_stats(ctx, &s1);
    CHECK(s1.op_calls - s0.op_calls == 2, "the partial walk ran %llu backward ops (want 2: sum, the outer mul)",
          (unsigned long long)(s1.op_calls - s0.op_calls));
    double want[N];
    for (int i = 0; i < N; i++) want[i] = (double)pv[i] * wv[i];
    CHECK_TENSOR("dL/dq = p w", g, want, N, ATOL, RTOL);
done:
    mcl_tensor_free(g);
    mcl_ctx_reset(ctx);
    mcl_tensor_free(p);
    mcl_tensor_free(w);
    mcl_tensor_free(q);
}

/* The partial walk hands its gradients over (no copy): the same tensor asked for twice gets
 * two tensors with the same values (the second is a copy, not an emptied slot), and two
 * tensors asked for get their own elements though they may share one buffer.
 * L = sum(p*q): dL/dp = q, dL/dq = p; wrt = {p, q, p}. */
static void test_partial_handover(mcl_ctx *ctx)
{
    const float pv[N] = {0.5f, -1.0f, 2.0f, 1.5f};
    const float qv[N] = {1.0f, 0.5f, -0.5f, 2.0f};
    mcl_tensor *p = leaf(ctx, "p", pv), *q = leaf(ctx, "q", qv);
    mcl_tensor *g[3] = {NULL, NULL, NULL};
    if (!p || !q) goto done;
    const size_t mark = mcl_tape_mark(ctx);
    mcl_tensor *pp = mcl_scale(ctx, p, 1.0f), *qq = mcl_scale(ctx, q, 1.0f); /* not leaves */
    mcl_tensor *L = mcl_sum(ctx, mcl_mul(ctx, pp, qq));
    mcl_tensor *wrt[3] = {pp, qq, pp};
    CHECK(L && mcl_grad_partial(ctx, L, mark, 3, wrt, g) == MCL_OK, "partial: %s", mcl_ctx_error(ctx));
    double wp[N], wq[N];
    for (int i = 0; i < N; i++) wp[i] = qv[i], wq[i] = pv[i];
    CHECK_TENSOR("dL/dp (first)", g[0], wp, N, ATOL, RTOL);
    CHECK_TENSOR("dL/dq", g[1], wq, N, ATOL, RTOL);
    CHECK_TENSOR("dL/dp (asked again)", g[2], wp, N, ATOL, RTOL);
    CHECK(g[0] != g[2], "the same tensor asked twice got one result tensor");
done:
    for (int i = 0; i < 3; i++) mcl_tensor_free(g[i]);
    mcl_ctx_reset(ctx);
    mcl_tensor_free(p);
    mcl_tensor_free(q);
}

/* ---- partial backward from a mark ---- */
static void test_partial(mcl_ctx *ctx)
{
    const float pv[N] = {0.5f, -1.0f, 2.0f, 1.5f};
    const float qv[N] = {1.0f, 0.5f, -0.5f, 2.0f};
    const float zv[N] = {7, 7, 7, 7};
    mcl_tensor *p = leaf(ctx, "p", pv), *q = leaf(ctx, "q", qv), *z = leaf(ctx, "z", zv);
    mcl_tensor *grads[4] = {NULL, NULL, NULL, NULL};
    mcl_tensor *gfull = NULL;
    if (!p || !q || !z) goto done;

    /* before the mark: h = p*p.  After: u = h*q, L = sum(u*u) = sum(p^4 q^2).
     *   dL/dh = 2 h q^2        dL/dq = 2 h^2 q
     *   dL/dp after the mark: 0 (p only reaches L through an op before the mark)
     *   dL/dz = 0 (z unused)
     *   full: dL/dp = 4 p^3 q^2, dL/dq = 2 p^4 q */
    mcl_tensor *h = mcl_mul(ctx, p, p);
    size_t mark = mcl_tape_mark(ctx);
    mcl_tensor *u = mcl_mul(ctx, h, q);
    mcl_tensor *L = mcl_sum(ctx, mcl_mul(ctx, u, u));
    CHECK(h && L, "partial: forward: %s", mcl_ctx_error(ctx));
    if (!h || !L) goto done;
    size_t size_before = mcl_tape_size(ctx);
    CHECK(size_before == mark + 3, "3 ops after the mark (mark %zu, size %zu)", mark,
          size_before);

    double dh[N], dq[N], zero[N], dp_full[N], dq_full[N];
    for (int i = 0; i < N; i++) {
        double x = pv[i], w = qv[i], hh = x * x;
        dh[i] = 2 * hh * w * w;
        dq[i] = 2 * hh * hh * w;
        zero[i] = 0;
        dp_full[i] = 4 * x * x * x * w * w;
        dq_full[i] = dq[i];
    }

    mcl_tensor *wrt[4] = {h, q, p, z};
    mcl_status st = mcl_grad_partial(ctx, L, mark, 4, wrt, grads);
    CHECK(st == MCL_OK, "mcl_grad_partial: %s", mcl_ctx_error(ctx));
    if (st == MCL_OK) {
        for (int k = 0; k < 4; k++) {
            CHECK(grads[k] != NULL, "partial grad %d returned", k);
            CHECK(grads[k] == NULL || mcl_tensor_same_shape(grads[k], wrt[k]),
                  "partial grad %d has wrt's shape", k);
            CHECK(!needs_grad(grads[k]), "partial grad %d is plain data (cut from the graph)", k);
            CHECK(grads[k] != mcl_tensor_grad(wrt[k]) || grads[k] == NULL,
                  "partial grad %d is a new tensor, not the leaf's .grad", k);
        }
        CHECK_TENSOR("partial dL/dh = 2 h q^2 (intermediate)", grads[0], dh, N, ATOL, RTOL);
        CHECK_TENSOR("partial dL/dq = 2 h^2 q (leaf)", grads[1], dq, N, ATOL, RTOL);
        CHECK_TENSOR("partial dL/dp = 0 (only reached before the mark)", grads[2], zero, N, 0, 0);
        CHECK_TENSOR("partial dL/dz = 0 (not reached)", grads[3], zero, N, 0, 0);
    }
    CHECK(mcl_tensor_grad(p) == NULL || tu_is_zero_or_null(mcl_tensor_grad(p)),
          "partial backward leaves p.grad untouched");
    CHECK(mcl_tensor_grad(q) == NULL || tu_is_zero_or_null(mcl_tensor_grad(q)),
          "partial backward leaves q.grad untouched");
    CHECK(mcl_tape_size(ctx) == size_before, "partial backward keeps the tape (%zu -> %zu)",
          size_before, mcl_tape_size(ctx));

    /* from mark 0 the whole graph is followed: dL/dp = 4 p^3 q^2 */
    mcl_tensor *wp[1] = {p};
    st = mcl_grad_partial(ctx, L, 0, 1, wp, &gfull);
    CHECK(st == MCL_OK, "mcl_grad_partial from 0: %s", mcl_ctx_error(ctx));
    CHECK_TENSOR("partial from mark 0: dL/dp = 4 p^3 q^2", gfull, dp_full, N, ATOL, RTOL);

    /* the full backward still works on the kept tape */
    CHECK(mcl_backward(ctx, L) == MCL_OK, "full backward after partial: %s", mcl_ctx_error(ctx));
    CHECK_GRAD("full dL/dp = 4 p^3 q^2", p, dp_full);
    CHECK_GRAD("full dL/dq = 2 p^4 q", q, dq_full);
    CHECK(tu_is_zero_or_null(mcl_tensor_grad(z)), "unused leaf z gets no gradient");

    /* partial results are caller-owned: they survive a reset */
    mcl_ctx_reset(ctx);
    CHECK_TENSOR("partial dL/dq survives mcl_ctx_reset", grads[1], dq, N, ATOL, RTOL);
done:
    mcl_ctx_reset(ctx);
    for (int k = 0; k < 4; k++) mcl_tensor_free(grads[k]);
    mcl_tensor_free(gfull);
    mcl_tensor_free(p);
    mcl_tensor_free(q);
    mcl_tensor_free(z);
}

/* ---- reset, keep, and errors from backward ---- */
static void test_reset_and_errors(mcl_ctx *ctx)
{
    const float pv[N] = {1.0f, -0.5f, 2.0f, 3.0f};
    const float qv[N] = {2.0f, 4.0f, -1.0f, 0.25f};
    mcl_tensor *p = leaf(ctx, "p", pv), *q = leaf(ctx, "q", qv);
    mcl_tensor *kept = NULL, *lkept = NULL;
    if (!p || !q) goto done;
    double p2[N], qd[N];
    for (int i = 0; i < N; i++) {
        p2[i] = (double)pv[i] * pv[i];
        qd[i] = qv[i];
    }

    mcl_ctx_reset(ctx);
    CHECK(mcl_ctx_num_temps(ctx) == 0, "no temporaries after reset");
    mcl_tensor *h = mcl_mul(ctx, p, p);
    mcl_tensor *s = mcl_add(ctx, h, q);
    mcl_tensor *r = mcl_relu(ctx, s);
    CHECK(h && s && r, "forward: %s", mcl_ctx_error(ctx));
    CHECK(mcl_ctx_num_temps(ctx) >= 3, "three results are live temporaries (%zu)",
          mcl_ctx_num_temps(ctx));
    CHECK(mcl_tape_size(ctx) == 3, "tape holds 3 nodes (%zu)", mcl_tape_size(ctx));
    kept = mcl_tensor_keep(h);
    CHECK(kept == h, "mcl_tensor_keep returns its argument");
    mcl_ctx_reset(ctx);
    CHECK(mcl_ctx_num_temps(ctx) == 0, "reset frees every temporary (%zu left)",
          mcl_ctx_num_temps(ctx));
    CHECK(mcl_tape_size(ctx) == 0, "reset clears the tape (%zu)", mcl_tape_size(ctx));
    if (kept) {
        CHECK_TENSOR("kept temporary survives reset", kept, p2, N, 0, 0);
        CHECK(kept->node == NULL, "kept tensor does not point at a freed tape node");
        /* the tape that connected it to p is gone: it is a constant now, so an op on it alone
         * records nothing and its result needs no grad */
        mcl_tensor *only = mcl_scale(ctx, kept, 2.0f);
        CHECK(only && !needs_grad(only) && mcl_tape_size(ctx) == 0,
              "after reset a kept tensor is a constant (kept flags 0x%x, tape %zu)", kept->flags,
              mcl_tape_size(ctx));
        /* usable in a new step as a constant: d sum(kept * q)/dq = kept = p^2 */
        mcl_tensor *l = mcl_sum(ctx, mcl_mul(ctx, kept, q));
        CHECK(l && mcl_backward(ctx, l) == MCL_OK, "backward with a kept tensor: %s",
              mcl_ctx_error(ctx));
        CHECK_GRAD("d sum(kept*q)/dq = p^2", q, p2);
        CHECK(tu_is_zero_or_null(mcl_tensor_grad(p)), "no gradient into p through the old step");
    }
    mcl_ctx_reset(ctx);
    mcl_tensor_zero_grad(p);
    mcl_tensor_zero_grad(q);

    /* backward of a non-scalar loss: error with a message, nothing accumulated */
    mcl_tensor *v = mcl_mul(ctx, p, q);
    CHECK(v != NULL, "mul");
    mcl_status st = mcl_backward(ctx, v);
    CHECK(st != MCL_OK, "backward of a [4] loss fails (status %d)", (int)st);
    CHECK_ERR("backward of a non-scalar loss", ctx,
              TU_ST(MCL_ERR_SHAPE) | TU_ST(MCL_ERR_INVALID), NULL);
    CHECK(tu_is_zero_or_null(mcl_tensor_grad(p)), "failed backward accumulates nothing");
    mcl_ctx_clear_error(ctx);
    CHECK(mcl_ctx_status(ctx) == MCL_OK && mcl_ctx_error(ctx)[0] == '\0', "error cleared");

    /* after the error the same tape still works */
    mcl_tensor *l = mcl_sum(ctx, v);
    lkept = mcl_tensor_keep(l);
    CHECK(l && mcl_backward(ctx, l) == MCL_OK, "backward after an error: %s", mcl_ctx_error(ctx));
    CHECK_GRAD("d sum(p*q)/dp = q", p, qd);

    /* backward again after reset: no tape -> error, not a crash; grads unchanged */
    mcl_ctx_reset(ctx);
    if (lkept) {
        st = mcl_backward(ctx, lkept);
        CHECK(st != MCL_OK, "backward after reset fails (status %d)", (int)st);
        CHECK_ERR("backward after reset (no tape)", ctx, TU_ST(MCL_ERR_STATE), NULL);
        mcl_ctx_clear_error(ctx);
        CHECK_GRAD("grads unchanged by the failed backward", p, qd);
    }
done:
    mcl_ctx_reset(ctx);
    mcl_tensor_free(kept);
    mcl_tensor_free(lkept);
    mcl_tensor_free(p);
    mcl_tensor_free(q);
}

int main(void)
{
    tu_begin("test-tape", SEED);
    mcl_ctx *ctx = tu_ctx_ref();
    mcl_ctx_set_seed(ctx, SEED);

    test_branching(ctx);
    test_no_grad(ctx);
    test_reshape_view(ctx);
    test_partial(ctx);
    test_partial_prune(ctx);
    test_partial_handover(ctx);
    test_handover(ctx);
    test_into(ctx);
    test_reset_and_errors(ctx);

    CHECK(mcl_ctx_status(ctx) == MCL_OK, "no stray error left: %s", mcl_ctx_error(ctx));
    mcl_ctx_free(ctx);
    return tu_summary();
}
