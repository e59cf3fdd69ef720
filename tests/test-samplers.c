/* test-samplers.c — episodes (doc/acl-model.md §3), Split-X (doc/acl.md, Evaluation), piecewise-stationary and
 * Online-X streams, and batching into tensors on the reference backend.
 *
 * Synthetic datasets: image i stores its own index in pixels 0-1 (little endian) and its class
 * in pixel 2, so every row of a batch can be traced back to the example it came from.
 * Statistical checks use a fixed seed; each bound is loose (a correct sampler fails it with
 * probability far below 1e-6), and the arithmetic behind each is in a comment.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dataset.h"
#include "metacl.h"
#include "sampler.h"
#include "testutil.h"

#define SEED 0x5a3b1e5ULL

/* ------------------------------------------------------------------ synthetic data */

/* n_classes classes with ids id0, id0+step, ...; class k has per_class + k % extra_mod
 * images; images of different classes interleaved (so class_index is not contiguous); pixel
 * pattern salted. */
static mcl_dataset *make_ds(const char *name, int n_classes, int id0, int step, int per_class,
                            int extra_mod, int salt)
{
    int64_t n = 0;
    for (int k = 0; k < n_classes; k++) n += per_class + (extra_mod ? k % extra_mod : 0);
    uint8_t *img = calloc((size_t)n, 1024);
    int32_t *lab = malloc((size_t)n * sizeof *lab);
    int *left = malloc((size_t)n_classes * sizeof *left);
    for (int k = 0; k < n_classes; k++) left[k] = per_class + (extra_mod ? k % extra_mod : 0);
    int64_t i = 0;
    while (i < n) /* round robin over classes that still have images */
        for (int k = 0; k < n_classes && i < n; k++) {
            if (!left[k]) continue;
            left[k]--;
            lab[i] = id0 + step * k;
            uint8_t *p = img + i * 1024;
            p[0] = (uint8_t)(i & 255);
            p[1] = (uint8_t)(i >> 8);
            p[2] = (uint8_t)lab[i];
            for (int q = 3; q < 1024; q++) /* odd salt: a darker set (other mean/std) */
                p[q] = (uint8_t)(((i * 31 + q * 7 + salt) & 255) >> (salt & 1));
            i++;
        }
    mcl_dataset *ds = NULL;
    char err[256] = "";
    mcl_status s = mcl_dataset_from_arrays(name, img, lab, n, &ds, err, sizeof err);
    CHECK(s == MCL_OK && ds, "mcl_dataset_from_arrays(%s): %s", name, err);
    free(img);
    free(lab);
    free(left);
    return ds;
}

static int64_t img_id(const mcl_dataset *ds, int64_t i)
{
    const uint8_t *p = ds->images + i * 1024;
    return (int64_t)p[0] | ((int64_t)p[1] << 8);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Are the n values distinct? */
static int all_distinct(const int64_t *v, int64_t n)
{
    int64_t *c = malloc((size_t)(n ? n : 1) * sizeof *c);
    memcpy(c, v, (size_t)n * sizeof *c);
    qsort(c, (size_t)n, sizeof *c, cmp_i64);
    int ok = 1;
    for (int64_t i = 1; i < n; i++)
        if (c[i] == c[i - 1]) ok = 0;
    free(c);
    return ok;
}

/* ------------------------------------------------------------------ tasks: structure */

/* Every structural promise of one task; returns 1 when all hold (no counting). */
static int task_ok(const mcl_task *t, const char **why)
{
    int N = t->n_way, K = t->k_shot, Q = t->n_query, F = t->n_first;
    const mcl_dataset *ds = t->ds;
    int cnt_f[64] = {0}, cnt_c[64] = {0}, cnt_q[64] = {0};
    for (int j = 0; j < N; j++) {
        if (mcl_dataset_class_pos(ds, t->class_of_label[j]) < 0) return *why = "class not in set", 0;
        for (int u = 0; u < j; u++)
            if (t->class_of_label[u] == t->class_of_label[j]) return *why = "class twice", 0;
    }
    int64_t all[4096];
    int64_t na = 0;
    struct {
        const int64_t *idx;
        const int32_t *lab;
        int n;
        int *cnt;
    } parts[3] = {{t->first_index, t->first_label, N * F, cnt_f},
                  {t->ctx_index, t->ctx_label, N * K, cnt_c},
                  {t->query_index, t->query_label, N * Q, cnt_q}};
    for (int p = 0; p < 3; p++)
        for (int i = 0; i < parts[p].n; i++) {
            int l = parts[p].lab[i] - t->label_offset;
            if (l < 0 || l >= N) return *why = "label out of range", 0;
            parts[p].cnt[l]++;
            int64_t ix = parts[p].idx[i];
            if (ix < 0 || ix >= ds->n) return *why = "index out of range", 0;
            if (ds->labels[ix] != t->class_of_label[l]) return *why = "example of the wrong class", 0;
            all[na++] = ix;
        }
    for (int j = 0; j < N; j++)
        if (cnt_f[j] != F || cnt_c[j] != K || cnt_q[j] != Q) return *why = "role counts per label", 0;
    if (!all_distinct(all, na)) return *why = "an example in two roles (or twice)", 0;
    return 1;
}

static void test_sample_distinct(void)
{
    mcl_rng r;
    mcl_rng_init(&r, SEED, 1);
    /* both branches (rejection for k <= 32 with 2k <= m; Fisher–Yates otherwise) */
    int64_t ms[4] = {1000, 40, 7, 100000}, ks[4] = {20, 40, 4, 50};
    for (int c = 0; c < 4; c++) {
        int64_t out[64];
        int ok = 1;
        for (int rep = 0; rep < 200; rep++) {
            if (mcl_sample_distinct(&r, ms[c], ks[c], out, NULL) != MCL_OK) ok = 0;
            for (int64_t i = 0; i < ks[c]; i++)
                if (out[i] < 0 || out[i] >= ms[c]) ok = 0;
            if (!all_distinct(out, ks[c])) ok = 0;
        }
        CHECK(ok, "mcl_sample_distinct(m %lld, k %lld): in range and distinct", (long long)ms[c],
              (long long)ks[c]);
    }
    /* uniform first element: m = 10, k = 3, 20000 draws, each value ~2000 (sd ~42): +-300 */
    int cnt[10] = {0}, cnt_fy[10] = {0};
    for (int rep = 0; rep < 20000; rep++) {
        int64_t o[10];
        mcl_sample_distinct(&r, 10, 3, o, NULL);
        cnt[o[2]]++;
        mcl_sample_distinct(&r, 10, 8, o, NULL); /* Fisher–Yates branch */
        cnt_fy[o[7]]++;
    }
    int ok = 1;
    for (int v = 0; v < 10; v++) ok &= abs(cnt[v] - 2000) < 300 && abs(cnt_fy[v] - 2000) < 300;
    CHECK(ok, "mcl_sample_distinct: every position uniform over the range");
    int64_t six[6];
    CHECK(mcl_sample_distinct(&r, 5, 6, six, NULL) == MCL_ERR_INVALID, "k > m is rejected");
}

static void test_single_task(mcl_dataset *ds)
{
    mcl_episode_cfg cfg = {.n_way = 5, .k_shot = 3, .n_query = 2, .first_shot = 1, .n_tasks = 1};
    mcl_episode *ep = NULL;
    CHECK(mcl_episode_create(&cfg, &ep) == MCL_OK && ep, "episode_create");
    if (!ep) return;
    mcl_class_pool pool = {ds, NULL, 0};
    mcl_rng r;
    mcl_rng_init(&r, SEED, 2);
    char err[256];
    enum { TASKS = 4000 };
    int bad = 0;
    const char *why = "";
    int label_of_class[32][5];   /* times class c got label j */
    int class_count[32];
    int ctx_first_label[5] = {0}, first_first_label[5] = {0}, query_first_label[5] = {0};
    int grouped = 0;             /* context grouped by class (all K of a label adjacent) */
    int sorted_first = 0;        /* first-shot list in label order */
    memset(label_of_class, 0, sizeof label_of_class);
    memset(class_count, 0, sizeof class_count);
    for (int it = 0; it < TASKS; it++) {
        mcl_status s = mcl_episode_sample(ep, &pool, &r, err, sizeof err);
        if (s != MCL_OK) {
            CHECK(0, "episode_sample: %s", err);
            break;
        }
        const mcl_task *t = &ep->task[0];
        if (!task_ok(t, &why)) bad++;
        for (int j = 0; j < 5; j++) {
            int p = mcl_dataset_class_pos(ds, t->class_of_label[j]);
            label_of_class[p][j]++;
            class_count[p]++;
        }
        ctx_first_label[t->ctx_label[0]]++;
        first_first_label[t->first_label[0]]++;
        query_first_label[t->query_label[0]]++;
        int g = 1;
        for (int i = 0; i < 15; i += 3)
            if (t->ctx_label[i] != t->ctx_label[i + 1] || t->ctx_label[i] != t->ctx_label[i + 2]) g = 0;
        grouped += g;
        int srt = 1;
        for (int i = 0; i < 5; i++) srt &= t->first_label[i] == i;
        sorted_first += srt;
    }
    CHECK(bad == 0, "%d of %d tasks break a structural rule (%s)", bad, TASKS, why);
    /* every class used ~ 4000*5/20 = 1000 times (sd ~ 27): +-200 */
    int ok = 1;
    for (int c = 0; c < ds->n_classes; c++) ok &= abs(class_count[c] - 1000) < 200;
    CHECK(ok, "classes drawn uniformly from the pool");
    /* each class gets each label ~ 200 times (sd ~ 13): +-90; so every label is used and the
     * class -> label map varies across tasks */
    ok = 1;
    for (int c = 0; c < ds->n_classes; c++)
        for (int j = 0; j < 5; j++) ok &= abs(label_of_class[c][j] - 200) < 90;
    CHECK(ok, "label assignment uniform per class (maps vary across tasks)");
    /* first element of each shuffled list: each label ~ 800 (sd ~ 25): +-150 */
    ok = 1;
    for (int j = 0; j < 5; j++)
        ok &= abs(ctx_first_label[j] - 800) < 150 && abs(first_first_label[j] - 800) < 150 &&
              abs(query_first_label[j] - 800) < 150;
    CHECK(ok, "context, first-shot and query lists are shuffled (first label uniform)");
    /* P(grouped) = 5! (3!)^5 / 15! ~ 7e-7; P(first-shot sorted) = 1/120 -> ~33 of 4000 */
    CHECK(grouped == 0, "context not grouped by class (%d of %d tasks)", grouped, TASKS);
    CHECK(sorted_first < 80, "first-shot order random (%d of %d in label order)", sorted_first, TASKS);

    /* the structural check itself detects a deliberately broken task */
    mcl_episode_sample(ep, &pool, &r, err, sizeof err);
    mcl_task *t = &ep->task[0];
    CHECK(task_ok(t, &why), "fresh task passes");
    int64_t keep = t->query_index[0];
    t->query_index[0] = t->ctx_index[0]; /* the same example in two roles */
    t->query_label[0] = t->ctx_label[0];
    CHECK(!task_ok(t, &why), "an example in two roles is detected");
    t->query_index[0] = keep;
    int32_t kl = t->ctx_label[1];
    t->ctx_label[1] = (kl + 1) % 5;
    CHECK(!task_ok(t, &why), "a wrong label is detected");
    mcl_episode_free(ep);
}

static void test_determinism(mcl_dataset *ds)
{
    mcl_episode_cfg cfg = {.n_way = 4, .k_shot = 5, .n_query = 1, .first_shot = 1, .n_tasks = 2};
    mcl_episode *a = NULL, *b = NULL;
    mcl_episode_create(&cfg, &a);
    mcl_episode_create(&cfg, &b);
    mcl_class_pool pools[2] = {{ds, NULL, 0}, {ds, NULL, 0}};
    mcl_rng ra, rb;
    int same = 1;
    for (int rep = 0; rep < 20; rep++) {
        mcl_rng_init(&ra, SEED, 100 + (uint64_t)rep);
        mcl_rng_init(&rb, SEED, 100 + (uint64_t)rep);
        mcl_episode_sample(a, pools, &ra, NULL, 0);
        mcl_episode_sample(b, pools, &rb, NULL, 0);
        for (int t = 0; t < 2; t++) {
            same &= !memcmp(a->task[t].ctx_index, b->task[t].ctx_index, 20 * sizeof(int64_t));
            same &= !memcmp(a->task[t].ctx_label, b->task[t].ctx_label, 20 * sizeof(int32_t));
            same &= !memcmp(a->task[t].first_index, b->task[t].first_index, 4 * sizeof(int64_t));
            same &= !memcmp(a->task[t].query_index, b->task[t].query_index, 4 * sizeof(int64_t));
            same &= !memcmp(a->task[t].class_of_label, b->task[t].class_of_label, 4 * sizeof(int32_t));
        }
    }
    CHECK(same, "same (seed, stream) -> same sequence");
    mcl_rng_init(&ra, SEED, 7);
    mcl_rng_init(&rb, SEED + 1, 7);
    mcl_episode_sample(a, pools, &ra, NULL, 0);
    mcl_episode_sample(b, pools, &rb, NULL, 0);
    CHECK(memcmp(a->task[0].ctx_index, b->task[0].ctx_index, 20 * sizeof(int64_t)) != 0,
          "different seeds -> different tasks");
    mcl_rng_init(&rb, SEED, 8);
    mcl_episode_sample(b, pools, &rb, NULL, 0);
    CHECK(memcmp(a->task[0].ctx_index, b->task[0].ctx_index, 20 * sizeof(int64_t)) != 0,
          "different streams -> different tasks");
    mcl_episode_free(a);
    mcl_episode_free(b);
}

static void test_pools_and_errors(mcl_dataset *ds, mcl_dataset *small)
{
    char err[256];
    mcl_episode_cfg cfg = {.n_way = 3, .k_shot = 2, .n_query = 1, .first_shot = 1, .n_tasks = 1};
    mcl_episode *ep = NULL;
    mcl_episode_create(&cfg, &ep);
    mcl_rng r;
    mcl_rng_init(&r, SEED, 3);
    int32_t sub[6] = {3, 5, 7, 9, 11, 13};
    mcl_class_pool pool = {ds, sub, 6};
    int ok = 1, seen[20] = {0};
    for (int it = 0; it < 300; it++) {
        if (mcl_episode_sample(ep, &pool, &r, err, sizeof err) != MCL_OK) ok = 0;
        for (int j = 0; j < 3; j++) {
            int c = ep->task[0].class_of_label[j], in = 0;
            for (int u = 0; u < 6; u++) in |= sub[u] == c;
            ok &= in;
            if (c >= 0 && c < 20) seen[c] = 1;
        }
    }
    int nseen = 0;
    for (int c = 0; c < 20; c++) nseen += seen[c];
    CHECK(ok && nseen == 6, "subset pool: only (and all of) its 6 classes are drawn (%d seen)", nseen);

    int32_t bad[2] = {3, 99};
    mcl_class_pool pbad = {ds, bad, 2};
    mcl_status s = mcl_episode_sample(ep, &pbad, &r, err, sizeof err);
    CHECK(s == MCL_ERR_INVALID && strstr(err, "99"), "class not in the set -> INVALID (%s)", err);
    int32_t two[2] = {3, 5};
    mcl_class_pool ptwo = {ds, two, 2};
    s = mcl_episode_sample(ep, &ptwo, &r, err, sizeof err);
    CHECK(s == MCL_ERR_INVALID && err[0], "pool smaller than N -> INVALID (%s)", err);
    int32_t dup[3] = {3, 5, 3};
    mcl_class_pool pdup = {ds, dup, 3};
    s = mcl_episode_sample(ep, &pdup, &r, err, sizeof err);
    CHECK(s == MCL_ERR_INVALID && strstr(err, "twice"), "duplicate class in pool -> INVALID (%s)", err);
    /* small: 4 images per class; 1 + K + 1 = 5 needed with K = 3 */
    mcl_episode_cfg c3 = cfg;
    c3.k_shot = 3;
    mcl_episode *e3 = NULL;
    mcl_episode_create(&c3, &e3);
    mcl_class_pool psmall = {small, NULL, 0};
    s = mcl_episode_sample(e3, &psmall, &r, err, sizeof err);
    CHECK(s == MCL_ERR_INVALID && strstr(err, "images"), "class with too few images -> INVALID (%s)", err);
    c3.k_shot = 2; /* exactly 4 = 1 + 2 + 1: every image used */
    mcl_episode_free(e3);
    e3 = NULL;
    mcl_episode_create(&c3, &e3);
    s = mcl_episode_sample(e3, &psmall, &r, err, sizeof err);
    const char *why = "";
    CHECK(s == MCL_OK && task_ok(&e3->task[0], &why), "a class with exactly enough images works");
    mcl_episode_free(e3);
    mcl_episode_free(ep);

    mcl_episode_cfg bc = cfg;
    mcl_episode dummy;
    mcl_episode *none = &dummy;
    bc.n_way = 0;
    CHECK(mcl_episode_create(&bc, &none) == MCL_ERR_INVALID && none == NULL, "N = 0 rejected");
    bc.n_way = 3;
    bc.first_shot = 2;
    CHECK(mcl_episode_create(&bc, &none) == MCL_ERR_INVALID, "first_shot = 2 rejected");
    mcl_episode_free(NULL);
}

static void test_sequences(mcl_dataset *ds, mcl_dataset *other)
{
    char err[256];
    mcl_rng r;
    mcl_rng_init(&r, SEED, 4);
    const char *why = "";
    /* 4 tasks x 5 classes from the 20-class set: disjoint by default, so all 20 are used */
    mcl_episode_cfg cfg = {.n_way = 5, .k_shot = 2, .n_query = 1, .first_shot = 1, .n_tasks = 4};
    mcl_episode *ep = NULL;
    mcl_episode_create(&cfg, &ep);
    mcl_class_pool p4[5] = {{ds, NULL, 0}, {ds, NULL, 0}, {ds, NULL, 0}, {ds, NULL, 0}, {ds, NULL, 0}};
    int ok = 1;
    for (int it = 0; it < 200; it++) {
        if (mcl_episode_sample(ep, p4, &r, err, sizeof err) != MCL_OK) ok = 0;
        int used[20] = {0};
        for (int t = 0; t < 4; t++) {
            ok &= task_ok(&ep->task[t], &why);
            for (int j = 0; j < 5; j++) used[mcl_dataset_class_pos(ds, ep->task[t].class_of_label[j])]++;
        }
        for (int c = 0; c < 20; c++) ok &= used[c] == 1;
    }
    CHECK(ok, "multi-task sequence: valid tasks, no class shared between tasks");
    mcl_episode_free(ep);
    cfg.n_tasks = 5; /* 25 classes needed */
    mcl_episode_create(&cfg, &ep);
    mcl_status s = mcl_episode_sample(ep, p4, &r, err, sizeof err);
    CHECK(s == MCL_ERR_INVALID && strstr(err, "earlier tasks"), "5 disjoint 5-way tasks from 20 classes -> INVALID (%s)", err);
    mcl_episode_free(ep);
    /* share_classes = 1: independent draws, overlap happens (P(no overlap, 2 tasks) = C(15,5)/C(20,5) ~ 0.19) */
    cfg.n_tasks = 2;
    cfg.share_classes = 1;
    mcl_episode_create(&cfg, &ep);
    int overlaps = 0;
    for (int it = 0; it < 200; it++) {
        mcl_episode_sample(ep, p4, &r, err, sizeof err);
        int o = 0;
        for (int j = 0; j < 5; j++)
            for (int u = 0; u < 5; u++) o |= ep->task[0].class_of_label[j] == ep->task[1].class_of_label[u];
        overlaps += o;
    }
    CHECK(overlaps > 100 && overlaps < 200, "share_classes = 1: tasks drawn independently (%d of 200 overlap)", overlaps);
    mcl_episode_free(ep);
    /* class-incremental offsets, and tasks from two datasets (A -> B) */
    mcl_episode_cfg ci = {.n_way = 3, .k_shot = 2, .n_query = 1, .first_shot = 1, .n_tasks = 3,
                          .class_incremental = 1};
    mcl_episode_create(&ci, &ep);
    mcl_class_pool pab[3] = {{ds, NULL, 0}, {other, NULL, 0}, {ds, NULL, 0}};
    ok = 1;
    for (int it = 0; it < 100; it++) {
        ok &= mcl_episode_sample(ep, pab, &r, err, sizeof err) == MCL_OK;
        for (int t = 0; t < 3; t++) {
            ok &= ep->task[t].label_offset == 3 * t;
            ok &= ep->task[t].ds == pab[t].ds;
            ok &= task_ok(&ep->task[t], &why);
            for (int i = 0; i < 6; i++) ok &= ep->task[t].ctx_label[i] >= 3 * t && ep->task[t].ctx_label[i] < 3 * t + 3;
        }
        for (int j = 0; j < 3; j++)
            for (int u = 0; u < 3; u++) ok &= ep->task[0].class_of_label[j] != ep->task[2].class_of_label[u];
    }
    CHECK(ok, "class-incremental labels shifted by N*i; task i indexes its own dataset; disjoint on shared set (%s)", why);
    mcl_episode_free(ep);
}

/* ------------------------------------------------------------------ batching */

static void expect_rows(float *want, const mcl_dataset *ds, const int64_t *idx, int64_t rows, int norm)
{
    for (int64_t r = 0; r < rows; r++)
        for (int k = 0; k < 1024; k++) {
            float p = (float)ds->images[idx[r] * 1024 + k] / 255.0f;
            want[r * 1024 + k] = norm ? (p - ds->mean) / ds->std : p;
        }
}

static void test_batching(mcl_dataset *ds, mcl_dataset *other)
{
    mcl_ctx *ctx = tu_ctx_ref();
    mcl_rng r;
    mcl_rng_init(&r, SEED, 5);
    mcl_episode_cfg cfg = {.n_way = 3, .k_shot = 4, .n_query = 1, .first_shot = 1, .n_tasks = 1};
    enum { B = 3 };
    mcl_episode *eps[B];
    const mcl_task *tasks[B];
    for (int b = 0; b < B; b++) {
        eps[b] = NULL;
        mcl_episode_create(&cfg, &eps[b]);
        mcl_class_pool p = {b == 1 ? other : ds, NULL, 0};
        mcl_episode_sample(eps[b], &p, &r, NULL, 0);
        tasks[b] = &eps[b]->task[0];
    }
    CHECK(fabsf(ds->mean - other->mean) > 1e-3f || fabsf(ds->std - other->std) > 1e-3f,
          "the two synthetic sets have different statistics");
    int64_t L = mcl_task_part_len(tasks[0], MCL_PART_CONTEXT);
    CHECK(L == 12 && mcl_task_part_len(tasks[0], MCL_PART_FIRST) == 3 &&
              mcl_task_part_len(tasks[0], MCL_PART_QUERY) == 3,
          "part lengths N*K, N, N*Q");
    mcl_tensor *img = mcl_tensor_new(ctx, B * L, 1024, 0, 0);
    mcl_tensor *lab = mcl_tensor_new(ctx, B * L, 0, 0, 0);
    float *want = malloc((size_t)(B * L * 1024) * sizeof *want);
    float wl[B * 12];
    for (int norm = 0; norm <= 1; norm++) {
        mcl_status s = mcl_task_batch(img, lab, tasks, B, MCL_PART_CONTEXT, norm);
        CHECK(s == MCL_OK, "task_batch (normalize %d): %s", norm, mcl_ctx_error(ctx));
        for (int b = 0; b < B; b++) {
            expect_rows(want + b * L * 1024, tasks[b]->ds, tasks[b]->ctx_index, L, norm);
            for (int64_t j = 0; j < L; j++) wl[b * L + j] = (float)tasks[b]->ctx_label[j];
        }
        float *got = tu_read(img), *gl = tu_read(lab);
        if (got && gl) {
            CHECK(tu_first_mismatch_f(got, want, B * L * 1024, 0, 0) < 0,
                  "images [B*L, 1024], row b*L+t, exact values (normalize %d)", norm);
            CHECK(tu_first_mismatch_f(gl, wl, B * L, 0, 0) < 0, "labels as float class indices");
            /* the rows trace back to the sampled examples */
            int ok = 1;
            for (int b = 0; b < B; b++)
                for (int64_t j = 0; j < L; j++) {
                    const float *row = got + (b * L + j) * 1024;
                    float p0 = norm ? row[0] * tasks[b]->ds->std + tasks[b]->ds->mean : row[0];
                    float p1 = norm ? row[1] * tasks[b]->ds->std + tasks[b]->ds->mean : row[1];
                    int64_t id = (int64_t)lroundf(p0 * 255.0f) | ((int64_t)lroundf(p1 * 255.0f) << 8);
                    ok &= id == tasks[b]->ctx_index[j];
                }
            CHECK(ok, "every row decodes to its example index (normalize %d)", norm);
            /* a deliberately wrong expectation (rows of sequences 0 and 2 swapped; and the
             * other set's statistics) is detected */
            float *wrong = malloc((size_t)(B * L * 1024) * sizeof *wrong);
            memcpy(wrong, want, (size_t)(B * L * 1024) * sizeof *wrong);
            expect_rows(wrong, tasks[2]->ds, tasks[2]->ctx_index, L, norm);
            CHECK(tu_first_mismatch_f(got, wrong, B * L * 1024, 0, 0) >= 0, "swapped rows are detected");
            if (norm) {
                expect_rows(wrong + L * 1024, ds, tasks[1]->ctx_index, L, 1); /* wrong mean/std */
                memcpy(wrong, want, (size_t)(L * 1024) * sizeof *wrong);
                memcpy(wrong + 2 * L * 1024, want + 2 * L * 1024, (size_t)(L * 1024) * sizeof *wrong);
                CHECK(tu_first_mismatch_f(got, wrong, B * L * 1024, 0, 0) >= 0,
                      "normalizing with another set's mean/std is detected");
            }
            free(wrong);
        }
        free(got);
        free(gl);
    }
    /* queries: [B*N] and a 4-D shape with the same numel [B*N, 1, 32, 32] */
    mcl_tensor *qimg = mcl_tensor_new(ctx, B * 3, 1, 32, 32);
    mcl_tensor *qlab = mcl_tensor_new(ctx, B * 3, 0, 0, 0);
    CHECK(mcl_task_batch(qimg, qlab, tasks, B, MCL_PART_QUERY, 0) == MCL_OK, "query batch");
    float *gq = tu_read(qimg), *gql = tu_read(qlab);
    if (gq && gql) {
        for (int b = 0; b < B; b++) expect_rows(want + b * 3 * 1024, tasks[b]->ds, tasks[b]->query_index, 3, 0);
        for (int b = 0; b < B; b++)
            for (int j = 0; j < 3; j++) wl[b * 3 + j] = (float)tasks[b]->query_label[j];
        CHECK(tu_first_mismatch_f(gq, want, B * 3 * 1024, 0, 0) < 0 &&
                  tu_first_mismatch_f(gql, wl, B * 3, 0, 0) < 0,
              "query batch values and labels");
    }
    free(gq);
    free(gql);
    /* labels optional */
    CHECK(mcl_task_batch(qimg, NULL, tasks, B, MCL_PART_FIRST, 0) == MCL_OK, "batch without labels");
    /* errors: wrong sizes, mixed part lengths, bad index */
    mcl_status s = mcl_task_batch(qimg, qlab, tasks, B, MCL_PART_CONTEXT, 0);
    CHECK(s == MCL_ERR_SHAPE, "images tensor of the wrong size -> SHAPE");
    CHECK_ERR("wrong size message", ctx, TU_ST(MCL_ERR_SHAPE), "images tensor");
    mcl_ctx_clear_error(ctx);
    s = mcl_task_batch(img, qlab, tasks, B, MCL_PART_CONTEXT, 0);
    CHECK(s == MCL_ERR_SHAPE, "labels tensor of the wrong size -> SHAPE");
    mcl_ctx_clear_error(ctx);
    int64_t badidx[2] = {0, ds->n};
    int32_t badlab[2] = {0, 1};
    mcl_tensor *i2 = mcl_tensor_new(ctx, 2, 1024, 0, 0);
    s = mcl_batch_rows(i2, NULL, ds, badidx, badlab, 2, 0);
    CHECK(s == MCL_ERR_INVALID, "image index out of range -> INVALID");
    CHECK_ERR("index message", ctx, TU_ST(MCL_ERR_INVALID), "out of range");
    mcl_ctx_clear_error(ctx);
    /* mcl_batch_rows values */
    int64_t idx2[2] = {5, 17};
    CHECK(mcl_batch_rows(i2, NULL, ds, idx2, NULL, 2, 1) == MCL_OK, "batch_rows");
    float *g2 = tu_read(i2);
    if (g2) {
        expect_rows(want, ds, idx2, 2, 1);
        CHECK(tu_first_mismatch_f(g2, want, 2048, 0, 0) < 0, "batch_rows values");
    }
    free(g2);
    mcl_tensor_free(i2);
    mcl_tensor_free(qimg);
    mcl_tensor_free(qlab);
    mcl_tensor_free(img);
    mcl_tensor_free(lab);
    free(want);
    for (int b = 0; b < B; b++) mcl_episode_free(eps[b]);
    mcl_ctx_free(ctx);
}

/* ------------------------------------------------------------------ Split-X */

/* Split-X with context and queries from one set (a set split by classes): each class's
 * queries are its images other than the run's K context images; draw_classes gives each run
 * its own classes, the same for the same run. */
static void test_splitx_same_set(mcl_dataset *ds)
{
    char err[256];
    mcl_splitx_cfg c = {.n_tasks = 2, .classes_per_task = 2, .k_shot = 4, .run = 3,
                        .mode = MCL_SPLITX_DOMAIN, .shuffle_seed = 5, .draw_classes = 1};
    mcl_splitx *a = NULL, *b = NULL, *a2 = NULL, *cp = NULL;
    mcl_splitx_create(ds, ds, &c, &a, err, sizeof err);
    CHECK(a != NULL, "same-set splitx: %s", err);
    mcl_splitx_create(ds, ds, &c, &a2, err, sizeof err);
    c.run = 4;
    mcl_splitx_create(ds, ds, &c, &b, err, sizeof err);
    /* a shallow copy of the set: another set for splitx, so its queries keep the context images
     * (shows that the overlap check below can fail) */
    mcl_dataset other = *ds;
    c.run = 3;
    mcl_splitx_create(ds, &other, &c, &cp, err, sizeof err);
    if (a && a2 && b && cp) {
        int64_t want = 0;
        int distinct = 1, same = 1, differ = 0;
        for (int i = 0; i < 4; i++) {
            int p = mcl_dataset_class_pos(ds, a->task_class[i]);
            want += ds->class_start[p + 1] - ds->class_start[p] - 4;
            for (int j = 0; j < i; j++) distinct &= a->task_class[i] != a->task_class[j];
            same &= a->task_class[i] == a2->task_class[i];
            differ |= a->task_class[i] != b->task_class[i];
        }
        CHECK(a->n_query == want, "queries: each class's images but its K = 4 context ones (%lld, want %lld)",
              (long long)a->n_query, (long long)want);
        CHECK(distinct && same && differ, "draw_classes: 4 distinct classes, the same for run 3 twice, others for run 4 "
              "(run 3: %d %d %d %d; run 4: %d %d %d %d)", a->task_class[0], a->task_class[1], a->task_class[2],
              a->task_class[3], b->task_class[0], b->task_class[1], b->task_class[2], b->task_class[3]);
        int overlap_a = 0, overlap_cp = 0;
        for (int64_t q = 0; q < a->n_query; q++)
            for (int64_t k = 0; k < a->n_ctx; k++) overlap_a += a->query_index[q] == a->ctx_index[k];
        for (int64_t q = 0; q < cp->n_query; q++)
            for (int64_t k = 0; k < cp->n_ctx; k++) overlap_cp += cp->query_index[q] == cp->ctx_index[k];
        CHECK(overlap_a == 0 && overlap_cp == cp->n_ctx,
              "no query is a context image (%d); with two sets every context image is also queried (%d of %lld)",
              overlap_a, overlap_cp, (long long)cp->n_ctx);
        int lab = 1;
        for (int64_t q = 0; q < a->n_query; q++)
            lab &= ds->labels[a->query_index[q]] == a->task_class[a->query_task[q] * 2 + a->query_label[q]];
        CHECK(lab, "every query's label is its task's class");
    }
    mcl_splitx_free(a);
    mcl_splitx_free(a2);
    mcl_splitx_free(b);
    mcl_splitx_free(cp);
    /* K = a class's size leaves nothing to query */
    int p0 = mcl_dataset_class_pos(ds, ds->class_ids[0]);
    c.k_shot = (int)(ds->class_start[p0 + 1] - ds->class_start[p0]);
    c.draw_classes = 0;
    c.n_tasks = 1;
    c.classes_per_task = 1;
    a = NULL;
    mcl_status s = mcl_splitx_create(ds, ds, &c, &a, err, sizeof err);
    CHECK(s == MCL_ERR_INVALID && !a && strstr(err, "none to query"), "K = class size, one set -> INVALID (%s)", err);
}

static void test_splitx(mcl_dataset *train, mcl_dataset *test)
{
    char err[256];
    mcl_splitx_cfg cfg = {.n_tasks = 5, .classes_per_task = 2, .k_shot = 4, .run = 2,
                          .mode = MCL_SPLITX_DOMAIN};
    mcl_splitx *sx = NULL;
    mcl_status s = mcl_splitx_create(train, test, &cfg, &sx, err, sizeof err);
    CHECK(s == MCL_OK && sx, "splitx_create: %s", err);
    if (!sx) return;
    int ok = 1;
    for (int i = 0; i < 10; i++) ok &= sx->task_class[i] == i;
    CHECK(ok, "tasks {0,1},{2,3},...,{8,9}");
    CHECK(sx->n_ctx == 40 && sx->n_outputs == 2, "5 tasks x 2 classes x K=4 = 40 context steps, 2 outputs");
    /* order: task t, example e, class j at position t*8 + e*2 + j; the run's offset r*K + e */
    ok = 1;
    for (int t = 0; t < 5; t++) {
        ok &= sx->task_ctx_start[t] == t * 8;
        for (int e = 0; e < 4; e++)
            for (int j = 0; j < 2; j++) {
                int64_t n = t * 8 + e * 2 + j;
                int c = 2 * t + j;
                int p = mcl_dataset_class_pos(train, c);
                ok &= sx->ctx_index[n] == train->class_index[train->class_start[p] + 2 * 4 + e];
                ok &= sx->ctx_label[n] == j && sx->ctx_task[n] == t;
                ok &= train->labels[sx->ctx_index[n]] == c;
            }
    }
    CHECK(ok, "round-robin c0,c1,c0,c1 per task; run 2 uses each class's images 8..11; labels 0/1");
    /* a deliberately wrong expectation: class-major order (c0,c0,...,c1,c1) is detected */
    int class_major = 1;
    for (int e = 0; e < 4; e++) class_major &= train->labels[sx->ctx_index[e]] == 0;
    CHECK(!class_major, "class-major order would be detected");
    /* queries: every test image of the 10 classes, once, with task and label */
    int64_t nq = 0;
    for (int c = 0; c < 10; c++) {
        int p = mcl_dataset_class_pos(test, c);
        nq += test->class_start[p + 1] - test->class_start[p];
    }
    CHECK(sx->n_query == nq && all_distinct(sx->query_index, sx->n_query), "every test image is a query, once");
    ok = 1;
    for (int64_t q = 0; q < sx->n_query; q++) {
        int c = test->labels[sx->query_index[q]];
        ok &= sx->query_task[q] == c / 2 && sx->query_label[q] == c % 2;
        ok &= q >= sx->task_query_start[c / 2] && q < sx->task_query_start[c / 2 + 1];
    }
    CHECK(ok, "query tags: task = class/2, domain label = class%%2");
    /* runs use different images; run 0 and run 10 wrap to the same (40 images per class) */
    mcl_splitx *s0 = NULL, *s1 = NULL, *s10 = NULL;
    cfg.run = 0;
    mcl_splitx_create(train, test, &cfg, &s0, NULL, 0);
    cfg.run = 1;
    mcl_splitx_create(train, test, &cfg, &s1, NULL, 0);
    cfg.run = 10;
    mcl_splitx_create(train, test, &cfg, &s10, NULL, 0);
    if (s0 && s1 && s10) {
        int64_t both[80];
        memcpy(both, s0->ctx_index, 40 * sizeof *both);
        memcpy(both + 40, s1->ctx_index, 40 * sizeof *both);
        CHECK(all_distinct(both, 80), "runs 0 and 1 use disjoint images");
        CHECK(!memcmp(s0->ctx_index, s10->ctx_index, 40 * sizeof(int64_t)), "offsets wrap modulo the class size");
    }
    mcl_splitx_free(s0);
    mcl_splitx_free(s1);
    mcl_splitx_free(s10);
    mcl_splitx_free(sx);

    /* class-incremental, 5 tasks and 2 tasks */
    cfg.run = 0;
    cfg.mode = MCL_SPLITX_CLASS;
    sx = NULL;
    mcl_splitx_create(train, test, &cfg, &sx, err, sizeof err);
    if (sx) {
        ok = sx->n_outputs == 10;
        for (int64_t n = 0; n < sx->n_ctx; n++) ok &= sx->ctx_label[n] == train->labels[sx->ctx_index[n]];
        for (int64_t q = 0; q < sx->n_query; q++) ok &= sx->query_label[q] == test->labels[sx->query_index[q]];
        CHECK(ok, "class-incremental: true labels, 10 outputs");
    }
    mcl_splitx_free(sx);
    cfg.n_tasks = 2;
    sx = NULL;
    mcl_splitx_create(train, test, &cfg, &sx, err, sizeof err);
    if (sx) {
        ok = sx->n_outputs == 4 && sx->n_ctx == 16;
        for (int64_t q = 0; q < sx->n_query; q++) ok &= test->labels[sx->query_index[q]] < 4;
        CHECK(ok, "2-task class-incremental: classes 0-3, 4 outputs");
    }
    mcl_splitx_free(sx);
    /* custom class order and a shuffled image order */
    int32_t order[4] = {9, 8, 1, 0};
    mcl_splitx_cfg c2 = {.n_tasks = 2, .classes_per_task = 2, .k_shot = 5, .run = 1,
                         .mode = MCL_SPLITX_DOMAIN, .classes = order, .shuffle_seed = 77};
    sx = NULL;
    mcl_splitx_create(train, test, &c2, &sx, err, sizeof err);
    mcl_splitx *sy = NULL;
    c2.run = 0;
    mcl_splitx_create(train, test, &c2, &sy, err, sizeof err);
    if (sx && sy) {
        ok = train->labels[sx->ctx_index[0]] == 9 && train->labels[sx->ctx_index[1]] == 8 &&
             train->labels[sx->ctx_index[10]] == 1 && sx->ctx_label[0] == 0 && sx->ctx_label[1] == 1;
        CHECK(ok, "explicit class order: task 0 = {9, 8}");
        int64_t both[40];
        memcpy(both, sx->ctx_index, 20 * sizeof *both);
        memcpy(both + 20, sy->ctx_index, 20 * sizeof *both);
        CHECK(all_distinct(both, 40), "shuffled order: runs still disjoint");
        int p9 = mcl_dataset_class_pos(train, 9);
        int in_order = 1; /* run 1 would be images 5..9 in dataset order */
        for (int e = 0; e < 5; e++)
            in_order &= sx->ctx_index[2 * e] == train->class_index[train->class_start[p9] + 5 + e];
        CHECK(!in_order, "shuffle_seed changes which images a run uses");
    }
    mcl_splitx_free(sx);
    mcl_splitx_free(sy);
    /* errors */
    mcl_splitx_cfg bad = {.n_tasks = 5, .classes_per_task = 2, .k_shot = 41};
    sx = NULL;
    s = mcl_splitx_create(train, test, &bad, &sx, err, sizeof err);
    CHECK(s == MCL_ERR_INVALID && !sx && strstr(err, "K = 41"), "K above the class size -> INVALID (%s)", err);
    bad.k_shot = 2;
    bad.n_tasks = 6;
    s = mcl_splitx_create(train, test, &bad, &sx, err, sizeof err);
    CHECK(s == MCL_ERR_INVALID && strstr(err, "12 classes"), "too few classes -> INVALID (%s)", err);
    int32_t missing[2] = {0, 55};
    bad.n_tasks = 1;
    bad.classes = missing;
    s = mcl_splitx_create(train, test, &bad, &sx, err, sizeof err);
    CHECK(s == MCL_ERR_INVALID && strstr(err, "55"), "class not in the set -> INVALID (%s)", err);
    test_splitx_same_set(train);
}

/* ------------------------------------------------------------------ streams */

/* Tags and tables agree; every example belongs to its task's class for its label. */
static int stream_consistent(const mcl_stream *st)
{
    int ok = st->task_start[0] == 0 && st->task_start[st->n_tasks] == st->n;
    for (int t = 0; t < st->n_tasks; t++)
        for (int64_t i = st->task_start[t]; i < st->task_start[t + 1]; i++) {
            int l = st->label[i];
            int64_t k = (int64_t)t * st->n_way + l;
            ok &= st->task[i] == t && l >= 0 && l < st->n_way;
            ok &= st->ds->labels[st->index[i]] == st->task_class[k];
            ok &= st->role[i] == st->task_role[k] && st->prev_label[i] == st->task_prev_label[k];
        }
    return ok;
}

static void test_piecewise(mcl_dataset *ds)
{
    char err[256];
    mcl_class_pool pool = {ds, NULL, 0};
    mcl_pwstream_cfg cfg = {.n_tasks = 50, .n_way = 5, .per_task = 100};
    mcl_rng r;
    mcl_rng_init(&r, SEED, 6);
    mcl_stream *st = NULL;
    mcl_status s = mcl_stream_piecewise(&pool, &cfg, &r, &st, err, sizeof err);
    CHECK(s == MCL_OK && st, "stream_piecewise: %s", err);
    if (!st) return;
    CHECK(st->n == 5000 && st->n_tasks == 50, "T*M examples");
    CHECK(stream_consistent(st), "piecewise: tags consistent, example classes follow the task map");
    int ok = 1, changed = 0, labels_all = 1;
    for (int t = 0; t < 50; t++) {
        ok &= st->task_start[t] == (int64_t)t * 100 && st->task_len[t] == 100;
        ok &= all_distinct(st->index + t * 100, 100);
        int cnt[5] = {0};
        for (int i = 0; i < 100; i++) cnt[st->label[t * 100 + i]]++;
        for (int j = 0; j < 5; j++) labels_all &= cnt[j] > 0; /* P(miss) ~ 5*0.8^100 ~ 1e-9 */
        for (int j = 0; j < 5; j++) {
            ok &= st->task_role[t * 5 + j] == MCL_ROLE_NEW && st->task_prev_label[t * 5 + j] == -1;
            for (int u = 0; u < j; u++) ok &= st->task_class[t * 5 + u] != st->task_class[t * 5 + j];
        }
        if (t && memcmp(st->task_class + t * 5, st->task_class + (t - 1) * 5, 5 * sizeof(int32_t))) changed++;
    }
    CHECK(ok, "piecewise: task starts, distinct classes per task, no repeated example within a task");
    CHECK(labels_all, "piecewise: every label used in every task");
    CHECK(changed == 49, "piecewise: the class->label map changes at every boundary (%d of 49)", changed);
    mcl_stream_free(st);
    /* M larger than the union (5 x 30 = 150): 400 = 2 full passes + 100 */
    cfg.n_tasks = 3;
    cfg.per_task = 400;
    st = NULL;
    mcl_stream_piecewise(&pool, &cfg, &r, &st, err, sizeof err);
    if (st) {
        ok = 1;
        for (int t = 0; t < 3; t++) {
            int64_t v[400];
            memcpy(v, st->index + t * 400, sizeof v);
            qsort(v, 400, sizeof *v, cmp_i64);
            int n2 = 0, n3 = 0, other = 0;
            for (int i = 0; i < 400;) {
                int j = i;
                while (j < 400 && v[j] == v[i]) j++;
                if (j - i == 2) n2++;
                else if (j - i == 3) n3++;
                else other++;
                i = j;
            }
            ok &= n2 == 50 && n3 == 100 && other == 0;
            ok &= all_distinct(st->index + t * 400, 150); /* the first pass is a permutation */
        }
        CHECK(ok, "piecewise: passes over the union without replacement (2 or 3 uses per image)");
    }
    mcl_stream_free(st);
    /* determinism */
    mcl_stream *a = NULL, *b = NULL;
    cfg.n_tasks = 4;
    cfg.per_task = 20;
    mcl_rng_init(&r, SEED, 9);
    mcl_stream_piecewise(&pool, &cfg, &r, &a, NULL, 0);
    mcl_rng_init(&r, SEED, 9);
    mcl_stream_piecewise(&pool, &cfg, &r, &b, NULL, 0);
    CHECK(a && b && !memcmp(a->index, b->index, 80 * sizeof(int64_t)) && !memcmp(a->label, b->label, 80 * sizeof(int32_t)),
          "piecewise: reproducible from (seed, stream)");
    mcl_stream_free(b);
    b = NULL;
    mcl_rng_init(&r, SEED + 5, 9);
    mcl_stream_piecewise(&pool, &cfg, &r, &b, NULL, 0);
    CHECK(a && b && memcmp(a->index, b->index, 80 * sizeof(int64_t)), "piecewise: another seed differs");
    mcl_stream_free(a);
    mcl_stream_free(b);
    cfg.n_way = 21;
    st = NULL;
    s = mcl_stream_piecewise(&pool, &cfg, &r, &st, err, sizeof err);
    CHECK(s == MCL_ERR_INVALID && !st && err[0], "piecewise: N above the pool size -> INVALID (%s)", err);
}

/* Online-X relations between consecutive tasks; text = the paper's text criteria. */
static int onlinex_ok(const mcl_stream *st, const mcl_onlinex_cfg *cfg, int text, const char **why)
{
    int N = st->n_way;
    for (int t = 0; t < st->n_tasks; t++) {
        const int32_t *c = st->task_class + t * N, *pc = c - N;
        const int8_t *ro = st->task_role + t * N;
        const int32_t *pl = st->task_prev_label + t * N;
        int nk = 0, np = 0, nn = 0;
        for (int j = 0; j < N; j++) {
            for (int u = 0; u < j; u++)
                if (c[u] == c[j]) return *why = "class twice in a task", 0;
            if (t == 0) {
                if (ro[j] != MCL_ROLE_NEW || pl[j] != -1) return *why = "task 0 not all new", 0;
                continue;
            }
            int in_prev = -1;
            for (int u = 0; u < N; u++)
                if (pc[u] == c[j]) in_prev = u;
            if (ro[j] == MCL_ROLE_KEPT) {
                nk++;
                if (pc[j] != c[j] || pl[j] != -1) return *why = "kept class changed label", 0;
            } else if (ro[j] == MCL_ROLE_PERSEV) {
                np++;
                if (in_prev < 0 || pl[j] != in_prev) return *why = "persev class not the previous one at prev_label", 0;
                if (text && pl[j] == j) return *why = "persev class kept its label", 0;
                for (int u = 0; u < N; u++)
                    if (ro[u] == MCL_ROLE_KEPT && u == pl[j]) return *why = "persev old label is the kept label", 0;
            } else {
                nn++;
                if (pl[j] != -1) return *why = "new class with prev label", 0;
                if (text && in_prev >= 0) return *why = "new class was in the previous task", 0;
                if (!text && in_prev >= 0) {
                    /* code: allowed only for a class dropped from the previous task */
                    for (int u = 0; u < N; u++)
                        if (ro[u] != MCL_ROLE_NEW && c[u] == c[j]) return *why = "new class duplicates", 0;
                }
            }
        }
        if (t > 0 && (nk != cfg->n_kept || np != cfg->n_persev || nn != N - cfg->n_kept - cfg->n_persev))
            return *why = "role counts", 0;
        if (st->task_len[t] < cfg->len_min || st->task_len[t] > cfg->len_max) return *why = "length out of range", 0;
        if (st->task_start[t + 1] - st->task_start[t] != (int64_t)st->task_len[t] * cfg->round_size)
            return *why = "examples != rounds x round size", 0;
    }
    return 1;
}

static void test_onlinex(mcl_dataset *ds)
{
    char err[256];
    const char *why = "";
    mcl_class_pool pool = {ds, NULL, 0};
    mcl_onlinex_cfg cfg = {.n_tasks = 300, .n_way = 5, .n_kept = 1, .n_persev = 2, .len_min = 3,
                           .len_max = 6, .round_size = 8};
    mcl_rng r;
    mcl_rng_init(&r, SEED, 10);
    mcl_stream *st = NULL;
    mcl_status s = mcl_stream_onlinex(&pool, &cfg, &r, &st, err, sizeof err);
    CHECK(s == MCL_OK && st, "stream_onlinex: %s", err);
    if (!st) return;
    int good = onlinex_ok(st, &cfg, 1, &why);
    CHECK(good, "online-x (text): 1 kept / 2 persev / 2 new, label relations, lengths (%s)", why);
    CHECK(stream_consistent(st), "online-x: per-example tags agree with the task tables");
    int lens[7] = {0}, ok = 1;
    for (int t = 0; t < 300; t++) lens[st->task_len[t]]++;
    for (int l = 3; l <= 6; l++) ok &= lens[l] > 40; /* ~75 each, sd ~7.5 */
    CHECK(ok, "online-x: lengths cover [3, 6] uniformly (%d %d %d %d)", lens[3], lens[4], lens[5], lens[6]);
    /* per-example: a perseveration example's prev_label is the label its class had before */
    ok = 1;
    int64_t npers = 0;
    for (int64_t i = 0; i < st->n; i++)
        if (st->role[i] == MCL_ROLE_PERSEV) {
            int t = st->task[i];
            npers++;
            ok &= st->task_class[(t - 1) * 5 + st->prev_label[i]] == st->ds->labels[st->index[i]];
            ok &= st->prev_label[i] != st->label[i];
        }
    CHECK(ok && npers > 0, "online-x: perseveration tags give the previous-task label (%lld examples)", (long long)npers);
    /* deliberately wrong expectation: swapping two roles breaks the relation check */
    int8_t keep = st->task_role[5 + 0];
    int8_t other = st->task_role[5 + 1];
    int j2 = 1;
    for (int j = 1; j < 5 && other == keep; j++) other = st->task_role[5 + j], j2 = j;
    st->task_role[5 + 0] = other;
    st->task_role[5 + j2] = keep;
    good = onlinex_ok(st, &cfg, 1, &why);
    CHECK(!good, "a swapped role is detected (%s)", why);
    st->task_role[5 + 0] = keep;
    st->task_role[5 + j2] = other;
    /* prefix property: the first 10 tasks do not depend on n_tasks */
    mcl_onlinex_cfg c10 = cfg;
    c10.n_tasks = 10;
    mcl_stream *p = NULL;
    mcl_rng_init(&r, SEED, 10);
    mcl_stream_onlinex(&pool, &c10, &r, &p, NULL, 0);
    CHECK(p && p->n == st->task_start[10] && !memcmp(p->index, st->index, (size_t)p->n * sizeof(int64_t)) &&
              !memcmp(p->task_class, st->task_class, 50 * sizeof(int32_t)),
          "online-x: a shorter stream is a prefix of a longer one (same seed)");
    mcl_stream_free(p);
    mcl_stream_free(st);

    /* code_exact: the appendix code's freedoms occur */
    cfg.code_exact = 1;
    st = NULL;
    mcl_stream_onlinex(&pool, &cfg, &r, &st, err, sizeof err);
    if (st) {
        good = onlinex_ok(st, &cfg, 0, &why);
        CHECK(good, "online-x (code): structure (%s)", why);
        int same_label = 0, returned = 0;
        for (int t = 1; t < 300; t++)
            for (int j = 0; j < 5; j++) {
                if (st->task_role[t * 5 + j] == MCL_ROLE_PERSEV && st->task_prev_label[t * 5 + j] == j) same_label++;
                if (st->task_role[t * 5 + j] == MCL_ROLE_NEW)
                    for (int u = 0; u < 5; u++) returned += st->task_class[(t - 1) * 5 + u] == st->task_class[t * 5 + j];
            }
        /* expected ~ 299*(1/4+1/4) = 150 and ~ 299*0.24 = 70 */
        CHECK(same_label > 50 && returned > 20,
              "online-x (code): persev classes sometimes keep their label (%d), dropped classes return (%d)",
              same_label, returned);
        CHECK(!onlinex_ok(st, &cfg, 1, &why), "the text criteria detect the code's freedoms");
    }
    mcl_stream_free(st);

    /* per-class cap: at most 4 distinct images per class per task */
    cfg.code_exact = 0;
    cfg.n_tasks = 20;
    cfg.max_per_class = 4;
    cfg.len_min = cfg.len_max = 5; /* 40 examples from a 20-image union: 2 passes */
    st = NULL;
    mcl_stream_onlinex(&pool, &cfg, &r, &st, err, sizeof err);
    if (st) {
        ok = 1;
        for (int t = 0; t < 20; t++) {
            int64_t v[40];
            memcpy(v, st->index + st->task_start[t], sizeof v);
            qsort(v, 40, sizeof *v, cmp_i64);
            int distinct = 1;
            for (int i = 1; i < 40; i++) distinct += v[i] != v[i - 1];
            ok &= distinct == 20;
        }
        CHECK(ok, "online-x: max_per_class = 4 -> 20 distinct images per 5-way task");
    }
    mcl_stream_free(st);
    /* pool of 6 classes: text mode needs 7, code mode 5 */
    int32_t six[6] = {0, 1, 2, 3, 4, 5};
    mcl_class_pool p6 = {ds, six, 6};
    cfg.max_per_class = 0;
    st = NULL;
    s = mcl_stream_onlinex(&p6, &cfg, &r, &st, err, sizeof err);
    CHECK(s == MCL_ERR_INVALID && !st && strstr(err, "7 are needed"), "online-x: pool too small -> INVALID (%s)", err);
    cfg.code_exact = 1;
    s = mcl_stream_onlinex(&p6, &cfg, &r, &st, err, sizeof err);
    good = s == MCL_OK && st && onlinex_ok(st, &cfg, 0, &why);
    CHECK(good, "online-x (code) works with 6 classes (%s)", why);
    mcl_stream_free(st);
    cfg.len_min = 0;
    st = NULL;
    s = mcl_stream_onlinex(&pool, &cfg, &r, &st, err, sizeof err);
    CHECK(s == MCL_ERR_INVALID && !st, "online-x: len_min 0 -> INVALID");
}

int main(void)
{
    tu_begin("test-samplers", SEED);
    /* 20 classes (ids 0..19) x 30 images; a second set with other ids/statistics; a tiny set */
    mcl_dataset *ds = make_ds("synth-a", 20, 0, 1, 30, 0, 0);
    mcl_dataset *other = make_ds("synth-b", 8, 100, 3, 12, 0, 91);
    mcl_dataset *small = make_ds("synth-small", 5, 0, 1, 4, 0, 17);
    /* Split-X stand-ins: 10 classes, 40 train images each; 5-7 test images per class */
    mcl_dataset *sx_train = make_ds("splitx-train", 10, 0, 1, 40, 0, 3);
    mcl_dataset *sx_test = make_ds("splitx-test", 10, 0, 1, 5, 3, 5);
    if (ds && other && small && sx_train && sx_test) {
        int ok = 1;
        for (int64_t i = 0; i < ds->n; i++) ok &= img_id(ds, i) == i;
        CHECK(ok, "synthetic images carry their index");
        test_sample_distinct();
        test_single_task(ds);
        test_determinism(ds);
        test_pools_and_errors(ds, small);
        test_sequences(ds, other);
        test_batching(ds, other);
        test_splitx(sx_train, sx_test);
        test_piecewise(ds);
        test_onlinex(ds);
    }
    mcl_dataset_free(ds);
    mcl_dataset_free(other);
    mcl_dataset_free(small);
    mcl_dataset_free(sx_train);
    mcl_dataset_free(sx_test);
    return tu_summary();
}
