/* test-oct.c — the online transformers' model (src/models/oct/oct.c) on tiny sizes:
 *   - streaming: a chunk read after another through the KV ring gives the logits that the
 *     two chunks read as one sequence give (pi and 2-token; a ring that holds everything);
 *     with one block (keys depend on the token alone), a ring that evicted and wrapped (C = 7
 *     not a multiple of S = 5; C = 3 < S) gives the logits of the one-sequence forward over
 *     exactly the kept tokens; C = 0;
 *   - no label leak: with the strict mask the prediction of example t does not move when
 *     y_t changes; with the paper's mask (diagonal zeroed after the softmax) it does — the
 *     leak that doc/oct-model.md describes, and proof that the check can fail;
 *   - reference vs OpenCL: the loss and the gradient of every parameter of one chunk read
 *     against a filled ring, over Conv-4 and over Conv-8 (skipped only when there is no
 *     OpenCL device);
 *   - a frozen extractor gets no gradient;
 *   - the stream of recurring classes (stream.pool): every class of the stream is one of P
 *     pool classes, the pool is a function of stream.seed, every example's image belongs to
 *     its task's class, and stream.pool = 0 is the draw it always was (the tasks of a stream
 *     without a pool use far more than P classes, so the pool check can fail).
 * Seed printed first; tolerances next to each check.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oct.h"
#include "oct_stream.h"
#include "ops.h"
#include "params.h"
#include "rng.h"
#include "testutil.h"

#define SEED 20261124ULL
#define NWAY 5
/* Same backend, the same keys in the same order, but GEMMs of other row counts: float32
 * round-off of O(1) logits. */
#define STREAM_TOL 2e-5
/* OpenCL vs reference: float32 sums in other orders through 2 blocks and Conv-4. */
#define OCL_ATOL 1e-4
#define OCL_RTOL 1e-3

static void tiny_cfg(mcl_oct_config *c, int arch, int blocks, int window, int pi_mask)
{
    memset(c, 0, sizeof *c);
    c->arch = arch;
    c->extractor = MCL_OCT_CONV4;
    c->channels = 4;
    c->width = 16;
    c->blocks = blocks;
    c->heads = 2;
    c->kv_heads = 1;
    c->head_dim = 8;
    c->ffw_mult = 2;
    c->window = window;
    c->alibi = arch == MCL_OCT_TWO_TOKEN ? 1.0f : 0.0f;
    c->pi_mask = pi_mask;
    c->n_way = NWAY;
    c->seed = 3;
}

/* n examples: images ~ N(0, 1) from stream `stream`, labels (j * 3 + stream) mod NWAY. */
static void make_data(mcl_ctx *ctx, int64_t n, uint64_t stream, mcl_tensor **img, mcl_tensor **lab)
{
    const int64_t is[4] = {n, 1, 32, 32}, ls[1] = {n};
    *img = mcl_tensor_create(ctx, 4, is);
    *lab = mcl_tensor_create(ctx, 1, ls);
    mcl_tensor_randn(*img, SEED, stream, 0.0f, 1.0f);
    float *l = malloc((size_t)n * sizeof *l);
    for (int64_t j = 0; j < n; j++) l[j] = (float)((j * 3 + (int64_t)stream) % NWAY);
    mcl_tensor_write(*lab, l, n);
    free(l);
}

/* rows [lo, hi) of x [n, ...] as a new tensor */
static mcl_tensor *rows_of(mcl_ctx *ctx, mcl_tensor *x, int64_t lo, int64_t hi)
{
    return mcl_slice(ctx, x, 0, lo, hi - lo);
}

static void ring_init(mcl_ctx *ctx, const mcl_oct *m, mcl_oct_ring *r)
{
    memset(r, 0, sizeof *r);
    const int64_t s[3] = {mcl_oct_ring_rows(&m->cfg), m->cfg.kv_heads, m->cfg.head_dim};
    for (int l = 0; l < m->cfg.blocks; l++) {
        r->k[l] = mcl_tensor_create(ctx, 3, s);
        r->v[l] = mcl_tensor_create(ctx, 3, s);
    }
}

static void ring_free(mcl_oct_ring *r)
{
    for (int l = 0; l < MCL_OCT_MAX_BLOCKS; l++) {
        mcl_tensor_free(r->k[l]);
        mcl_tensor_free(r->v[l]);
    }
}

/* logits of img/lab read as one chunk against ring r, then pushed (host copy, malloc'd) */
static float *chunk_logits(mcl_oct *m, mcl_tensor *img, mcl_tensor *lab, int64_t S, mcl_oct_ring *r)
{
    mcl_tensor *lg = NULL, *loss = NULL;
    mcl_oct_chunk ck;
    if (mcl_oct_forward(m, img, lab, S, r, &lg, &loss, &ck) != MCL_OK) {
        printf("forward failed: %s\n", mcl_ctx_error(m->ctx));
        return NULL;
    }
    float *v = tu_read(lg);
    if (mcl_oct_push(m, r, &ck) != MCL_OK) printf("push failed: %s\n", mcl_ctx_error(m->ctx));
    return v;
}

static int64_t max_diff_index(const float *a, const float *b, int64_t n, double tol)
{
    return tu_first_mismatch_f(a, b, n, tol, tol);
}

/* Chunks A (5) then B (6) through the ring == A‖B as one chunk (rows of B). */
static void test_streaming(int arch, int pi_mask)
{
    mcl_ctx *ctx = tu_ctx_ref();
    mcl_oct_config c;
    tiny_cfg(&c, arch, 2, arch == MCL_OCT_TWO_TOKEN ? 22 : 11, pi_mask);
    mcl_oct *m = mcl_oct_create(ctx, &c);
    CHECK(m != NULL, "create (arch %d)", arch);
    if (!m) return;
    mcl_tensor *img, *lab;
    make_data(ctx, 11, 1, &img, &lab);
    mcl_oct_ring r1, r2;
    ring_init(ctx, m, &r1);
    ring_init(ctx, m, &r2);
    float *a = chunk_logits(m, rows_of(ctx, img, 0, 5), rows_of(ctx, lab, 0, 5), 5, &r1);
    float *b = chunk_logits(m, rows_of(ctx, img, 5, 11), rows_of(ctx, lab, 5, 11), 6, &r1);
    float *all = chunk_logits(m, img, lab, 11, &r2);
    CHECK(a && b && all, "forwards ran");
    if (a && b && all) {
        CHECK(max_diff_index(a, all, 5 * NWAY, STREAM_TOL) < 0, "arch %d mask %d: chunk A alone == rows 0..4 of A||B", arch, pi_mask);
        CHECK(max_diff_index(b, all + 5 * NWAY, 6 * NWAY, STREAM_TOL) < 0,
              "arch %d mask %d: chunk B after A through the ring == rows 5..10 of A||B", arch, pi_mask);
        CHECK(r1.n == 11 * m->tok_per_ex && r1.start == 0, "ring holds %lld tokens from row 0",
              (long long)r1.n);
    }
    free(a);
    free(b);
    free(all);
    ring_free(&r1);
    ring_free(&r2);
    mcl_tensor_free(img);
    mcl_tensor_free(lab);
    mcl_oct_free(m);
    mcl_ctx_free(ctx);
}

/* One block, C = 7, chunks of 5: after two chunks the ring wrapped (n 7, start 3); the third
 * chunk's logits == the one-sequence forward over tokens 3..14 (rows 7..11). */
static void test_eviction(void)
{
    mcl_ctx *ctx = tu_ctx_ref();
    mcl_oct_config c;
    tiny_cfg(&c, MCL_OCT_PI, 1, 7, 2);
    mcl_oct *m = mcl_oct_create(ctx, &c);
    mcl_tensor *img, *lab;
    make_data(ctx, 15, 2, &img, &lab);
    mcl_oct_ring r, r2;
    ring_init(ctx, m, &r);
    ring_init(ctx, m, &r2);
    float *x[3];
    for (int k = 0; k < 3; k++)
        x[k] = chunk_logits(m, rows_of(ctx, img, 5 * k, 5 * k + 5), rows_of(ctx, lab, 5 * k, 5 * k + 5), 5, &r);
    CHECK(r.n == 7 && r.start == 1, "after 15 tokens the ring of 7 holds tokens 8..14 from row 1 (n %lld, start %lld)",
          (long long)r.n, (long long)r.start);
    float *ref = chunk_logits(m, rows_of(ctx, img, 3, 15), rows_of(ctx, lab, 3, 15), 12, &r2);
    CHECK(x[2] && ref && max_diff_index(x[2], ref + 7 * NWAY, 5 * NWAY, STREAM_TOL) < 0,
          "third chunk against a wrapped ring == tokens 3..14 read at once");
    for (int k = 0; k < 3; k++) free(x[k]);
    free(ref);
    ring_free(&r);
    ring_free(&r2);
    /* C = 3 < S = 5: the ring keeps the last 3 tokens of a chunk */
    mcl_oct_free(m);
    tiny_cfg(&c, MCL_OCT_PI, 1, 3, 2);
    m = mcl_oct_create(ctx, &c);
    ring_init(ctx, m, &r);
    ring_init(ctx, m, &r2);
    float *y1 = chunk_logits(m, rows_of(ctx, img, 0, 5), rows_of(ctx, lab, 0, 5), 5, &r);
    float *y2 = chunk_logits(m, rows_of(ctx, img, 5, 10), rows_of(ctx, lab, 5, 10), 5, &r);
    float *yr = chunk_logits(m, rows_of(ctx, img, 2, 10), rows_of(ctx, lab, 2, 10), 8, &r2);
    CHECK(r.n == 3 && r.start == 0, "C = 3 after two chunks of 5 (all 3 rows rewritten): n %lld start %lld", (long long)r.n,
          (long long)r.start);
    CHECK(y2 && yr && max_diff_index(y2, yr + 3 * NWAY, 5 * NWAY, STREAM_TOL) < 0,
          "C < S: the second chunk against the last 3 tokens == tokens 2..9 read at once");
    free(y1);
    free(y2);
    free(yr);
    ring_free(&r);
    ring_free(&r2);
    /* C = 0: each chunk alone, the ring never moves */
    mcl_oct_free(m);
    tiny_cfg(&c, MCL_OCT_PI, 1, 0, 2);
    m = mcl_oct_create(ctx, &c);
    ring_init(ctx, m, &r);
    float *p = chunk_logits(m, rows_of(ctx, img, 0, 5), rows_of(ctx, lab, 0, 5), 5, &r);
    float *q = chunk_logits(m, rows_of(ctx, img, 5, 10), rows_of(ctx, lab, 5, 10), 5, &r);
    CHECK(p && q && r.n == 0, "C = 0: the ring stays empty");
    free(p);
    free(q);
    ring_free(&r);
    mcl_tensor_free(img);
    mcl_tensor_free(lab);
    mcl_oct_free(m);
    mcl_ctx_free(ctx);
}

/* Does the prediction of example 3 move when y_3 changes? */
static int leaks(int pi_mask)
{
    mcl_ctx *ctx = tu_ctx_ref();
    mcl_oct_config c;
    tiny_cfg(&c, MCL_OCT_PI, 2, 8, pi_mask);
    mcl_oct *m = mcl_oct_create(ctx, &c);
    mcl_tensor *img, *lab;
    make_data(ctx, 6, 3, &img, &lab);
    mcl_oct_ring r;
    ring_init(ctx, m, &r);
    float *a = chunk_logits(m, img, lab, 6, &r);
    r.n = r.start = 0;
    float *l = tu_read(lab);
    l[3] = (float)(((int)l[3] + 2) % NWAY);
    mcl_tensor_write(lab, l, 6);
    float *b = chunk_logits(m, img, lab, 6, &r);
    int moved = -1;
    if (a && b) {
        moved = 0;
        for (int j = 0; j < NWAY; j++) moved |= a[3 * NWAY + j] != b[3 * NWAY + j];
        int before = 0;
        for (int j = 0; j < 3 * NWAY; j++) before |= a[j] != b[j];
        CHECK(!before, "mask %d: the predictions of examples 0..2 do not depend on y_3", pi_mask);
    }
    free(a);
    free(b);
    free(l);
    ring_free(&r);
    mcl_tensor_free(img);
    mcl_tensor_free(lab);
    mcl_oct_free(m);
    mcl_ctx_free(ctx);
    return moved;
}

typedef struct grads {
    float loss;
    float **g;
    int n;
} grads;

/* One chunk of 6 against a ring filled by a chunk of 5, loss and parameter gradients. */
static int g_extractor = MCL_OCT_CONV4; /* of run_grads */

static int run_grads(mcl_backend_kind kind, const mcl_oct *copy_from, grads *o, mcl_oct **m_out, mcl_ctx **ctx_out)
{
    char err[256];
    mcl_ctx *ctx = NULL;
    memset(o, 0, sizeof *o);
    mcl_status st = mcl_ctx_create(&ctx, kind, NULL, err, sizeof err);
    if (st != MCL_OK) {
        printf("cannot open backend %d: %s\n", (int)kind, err);
        return kind == MCL_BACKEND_OPENCL && st == MCL_ERR_UNSUPPORTED ? -1 : 1;
    }
    mcl_oct_config c;
    tiny_cfg(&c, MCL_OCT_PI, 2, 8, 2);
    c.extractor = g_extractor;
    c.features = 12;
    mcl_oct *m = mcl_oct_create(ctx, &c);
    if (!m) return 1;
    if (copy_from)
        for (int i = 0; i < mcl_params_count(copy_from->params); i++) {
            mcl_tensor *src = mcl_params_get(copy_from->params, i);
            float *v = tu_read(src);
            mcl_tensor_write(mcl_params_get(m->params, i), v, mcl_tensor_numel(src));
            free(v);
        }
    mcl_tensor *img, *lab;
    make_data(ctx, 11, 4, &img, &lab);
    mcl_oct_ring r;
    ring_init(ctx, m, &r);
    free(chunk_logits(m, rows_of(ctx, img, 0, 5), rows_of(ctx, lab, 0, 5), 5, &r));
    mcl_ctx_reset(ctx);
    mcl_params_zero_grad(m->params);
    mcl_tensor *lg, *loss;
    mcl_oct_chunk ck;
    int rc = 1;
    if (mcl_oct_forward(m, rows_of(ctx, img, 5, 11), rows_of(ctx, lab, 5, 11), 6, &r, &lg, &loss, &ck) == MCL_OK &&
        mcl_backward(ctx, loss) == MCL_OK) {
        rc = 0;
        mcl_tensor_read(loss, &o->loss, 1);
        o->n = mcl_params_count(m->params);
        o->g = calloc((size_t)o->n, sizeof *o->g);
        for (int i = 0; i < o->n; i++) o->g[i] = tu_read(mcl_tensor_grad(mcl_params_get(m->params, i)));
    } else {
        printf("backward failed: %s\n", mcl_ctx_error(ctx));
    }
    mcl_ctx_reset(ctx);
    ring_free(&r);
    mcl_tensor_free(img);
    mcl_tensor_free(lab);
    *m_out = m;
    *ctx_out = ctx;
    return rc;
}

static void grads_free(grads *o, mcl_oct *m, mcl_ctx *ctx)
{
    for (int i = 0; i < o->n; i++) free(o->g[i]);
    free(o->g);
    mcl_oct_free(m);
    mcl_ctx_free(ctx);
}

static void test_opencl(void)
{
    grads r, o;
    mcl_oct *mr = NULL, *mo = NULL;
    mcl_ctx *cr = NULL, *co = NULL;
    int rr = run_grads(MCL_BACKEND_REF, NULL, &r, &mr, &cr);
    CHECK(rr == 0, "reference chunk with gradients");
    if (rr != 0) return;
    int ro = run_grads(MCL_BACKEND_OPENCL, mr, &o, &mo, &co);
    if (ro < 0) {
        printf("OpenCL not available: OpenCL comparison skipped\n");
    } else {
        CHECK(ro == 0, "OpenCL chunk with gradients");
        if (ro == 0) {
            CHECK_NEAR("OpenCL loss", o.loss, r.loss, OCL_ATOL, OCL_RTOL);
            int bad = 0;
            for (int i = 0; i < r.n; i++) {
                mcl_tensor *p = mcl_params_get(mr->params, i);
                if ((!r.g[i]) != (!o.g[i]) ||
                    (r.g[i] && tu_first_mismatch_f(o.g[i], r.g[i], mcl_tensor_numel(p), OCL_ATOL, OCL_RTOL) >= 0)) {
                    printf("  OpenCL grad %d differs\n", i);
                    bad++;
                }
            }
            CHECK(bad == 0, "OpenCL gradients of all %d parameters == reference", r.n);
            /* a gradient off by 1% in one element is caught by the same comparison */
            int k = r.n - 1;
            if (r.g[k]) {
                float keep = o.g[k][0];
                o.g[k][0] = r.g[k][0] * 1.01f + 1e-3f;
                CHECK(tu_first_mismatch_f(o.g[k], r.g[k], 1, OCL_ATOL, OCL_RTOL) >= 0,
                      "a wrong gradient is detected");
                o.g[k][0] = keep;
            }
        }
        grads_free(&o, mo, co);
    }
    grads_free(&r, mr, cr);
}

/* The extractor frozen: its tensors get no gradient, the transformer's do. */
static void test_frozen(void)
{
    mcl_ctx *ctx = tu_ctx_ref();
    mcl_oct_config c;
    tiny_cfg(&c, MCL_OCT_PI, 1, 4, 2);
    c.freeze_extractor = 1;
    mcl_oct *m = mcl_oct_create(ctx, &c);
    mcl_tensor *img, *lab, *lg, *loss;
    make_data(ctx, 5, 5, &img, &lab);
    mcl_oct_ring r;
    ring_init(ctx, m, &r);
    mcl_oct_chunk ck;
    int ok = m && mcl_oct_forward(m, img, lab, 5, &r, &lg, &loss, &ck) == MCL_OK && mcl_backward(ctx, loss) == MCL_OK;
    CHECK(ok, "frozen extractor: forward and backward");
    int conv_grads = 0, other_grads = 0;
    for (int i = 0; ok && i < mcl_params_count(m->params); i++) {
        mcl_tensor *p = mcl_params_get(m->params, i);
        float *g = mcl_tensor_grad(p) ? tu_read(mcl_tensor_grad(p)) : NULL; /* NULL: none at all */
        int nonzero = 0;
        for (int64_t j = 0; g && j < mcl_tensor_numel(p); j++) nonzero |= g[j] != 0.0f;
        if (i < 16) conv_grads += nonzero; /* Conv-4's 16 tensors come first */
        else other_grads += nonzero;
        free(g);
    }
    CHECK(ok && conv_grads == 0 && other_grads > 0, "frozen: %d extractor tensors with a gradient (want 0), %d others (want > 0)",
          conv_grads, other_grads);
    mcl_ctx_reset(ctx);
    ring_free(&r);
    mcl_tensor_free(img);
    mcl_tensor_free(lab);
    mcl_oct_free(m);
    mcl_ctx_free(ctx);
}

/* Classes of the stream: the distinct task classes (a bitmap over global ids < cap). */
static int distinct_classes(const mcl_stream *st, int cap)
{
    char *seen = calloc((size_t)cap, 1);
    int n = 0;
    for (int i = 0; seen && i < st->n_tasks * st->n_way; i++) {
        const int32_t c = st->task_class[i];
        if (c >= 0 && c < cap && !seen[c]) seen[c] = 1, n++;
    }
    free(seen);
    return n;
}

/* The stream of recurring classes on a synthetic set of 60 classes × 4 images: pool 8,
 * 5-way tasks, 30 tasks of 12 examples. */
static void test_pool(void)
{
    enum { NC = 60, PER = 4, POOL = 8 };
    uint8_t *img = calloc((size_t)NC * PER * 1024, 1);
    int32_t lab[NC * PER];
    for (int i = 0; i < NC * PER; i++) lab[i] = i % NC, img[(size_t)i * 1024] = (uint8_t)i;
    mcl_dataset *ds = NULL;
    char err[512];
    CHECK(img && mcl_dataset_from_arrays("pool", img, lab, NC * PER, &ds, err, sizeof err) == MCL_OK,
          "synthetic set: %s", err);
    free(img);
    if (!ds) return;
    mcl_oct_run c;
    memset(&c, 0, sizeof c);
    c.model.n_way = 5;
    c.n_tasks = 30;
    c.per_task = 12;
    c.data_seed = 7;
    c.pool = POOL;
    mcl_stream *a = NULL, *b = NULL, *o = NULL, *d = NULL, *w = NULL;
    CHECK(mcl_oct_stream_draw(&c, ds, &a, err, sizeof err) == MCL_OK, "pool %d: %s", POOL, err);
    CHECK(mcl_oct_stream_draw(&c, ds, &b, err, sizeof err) == MCL_OK, "pool again: %s", err);
    c.data_seed = 8;
    CHECK(mcl_oct_stream_draw(&c, ds, &d, err, sizeof err) == MCL_OK, "pool, other seed: %s", err);
    c.data_seed = 7;
    c.pool = 0;
    CHECK(mcl_oct_stream_draw(&c, ds, &o, err, sizeof err) == MCL_OK, "no pool: %s", err);
    if (a && b && o && d) {
        /* 30 tasks × 5 of 8 classes: all 8 appear (a missing one has probability < 1e-6) */
        CHECK(distinct_classes(a, NC) == POOL, "pool: the stream uses exactly the %d pool classes (%d)", POOL,
              distinct_classes(a, NC));
        CHECK(distinct_classes(o, NC) > 3 * POOL, "no pool: the stream uses far more classes (%d; the pool "
              "check above would fail on it)", distinct_classes(o, NC));
        int same = a->n == b->n, other = 0, owned = 1;
        for (int64_t i = 0; same && i < a->n; i++) same = a->index[i] == b->index[i] && a->label[i] == b->label[i];
        for (int i = 0; i < a->n_tasks * a->n_way; i++) other |= a->task_class[i] != d->task_class[i];
        for (int64_t i = 0; i < a->n; i++) /* the image's class is its task's class with that label */
            owned &= ds->labels[a->index[i]] == a->task_class[a->task[i] * a->n_way + a->label[i]];
        CHECK(same, "the same stream.seed draws the same pool and stream");
        CHECK(other, "another stream.seed draws another stream");
        CHECK(owned, "every example's image belongs to its task's class for its label");
        /* stream.pool = 0 is the draw of mcl_stream_piecewise over every class, as before */
        mcl_class_pool all = {ds, NULL, 0};
        mcl_pwstream_cfg pc = {c.n_tasks, c.model.n_way, c.per_task};
        mcl_rng rng;
        mcl_rng_init(&rng, 7, MCL_OCT_STREAM_DATA);
        CHECK(mcl_stream_piecewise(&all, &pc, &rng, &w, err, sizeof err) == MCL_OK, "%s", err);
        int eq = w && w->n == o->n;
        for (int64_t i = 0; eq && i < o->n; i++) eq = w->index[i] == o->index[i] && w->label[i] == o->label[i];
        CHECK(eq, "stream.pool = 0 leaves the draw unchanged");
    }
    mcl_stream_free(w);
    w = NULL;
    c.pool = NC + 1;
    CHECK(mcl_oct_stream_draw(&c, ds, &w, err, sizeof err) == MCL_ERR_INVALID && strstr(err, "only 60 classes"),
          "a pool larger than the set is refused: %s", err);
    mcl_stream_free(a);
    mcl_stream_free(b);
    mcl_stream_free(o);
    mcl_stream_free(d);
    mcl_stream_free(w);
    mcl_dataset_free(ds);
}

int main(void)
{
    tu_begin("test-oct", SEED);
    test_streaming(MCL_OCT_PI, 2);
    test_streaming(MCL_OCT_PI, 1);
    test_streaming(MCL_OCT_TWO_TOKEN, 2);
    test_eviction();
    CHECK(leaks(2) == 0, "strict mask: the prediction of example 3 does not depend on y_3");
    CHECK(leaks(1) == 1, "the paper's mask (zeroed after the softmax): it does (the leak is real "
                         "and the check can see it)");
    test_opencl();
    g_extractor = MCL_OCT_CONV8; /* the same comparison over the Conv-8 extractor */
    test_opencl();
    test_frozen();
    test_pool();
    return tu_summary();
}
