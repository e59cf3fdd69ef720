/* episodes.c — N-way K-shot ACL tasks and multi-task sequences (doc/acl-model.md §3), shared sampling
 * utilities, and the batching of example rows into tensors (see sampler.h).
 *
 * A task (doc/acl-model.md §3): N classes drawn at random from a class pool; labels 0..N-1 assigned
 * at random per task (label j goes to the j-th class drawn, and the draw order is uniformly
 * random); per class DISJOINT examples: 1 first-shot example, K context examples, n_query
 * queries (the paper: 1). Context = the N*K examples shuffled. The first-shot examples and the
 * queries are shuffled too, so no role list reveals the label order.
 *
 * Draw order from the rng, for reproducibility: per task in sequence order: the N classes
 * (mcl_sample_distinct over the usable classes), then per label j the n_first + K + n_query
 * image positions of class j (mcl_sample_distinct over the class's images; the first
 * n_first are first-shot, the next K context, the rest queries), then the permutation of the
 * first-shot list, of the context list, of the query list (mcl_rng_shuffle_int).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sampler.h"
#include "tensor_impl.h"

#define IMG_PIXELS (MCL_IMG * MCL_IMG)

/* ======================================================================= utilities */

mcl_status mcl_class_pool_positions(const mcl_class_pool *pool, int *pos, int cap, int *n,
                                    char *err, size_t err_len)
{
    if (err && err_len) err[0] = '\0';
    if (!pool || !pool->ds || !pos || !n) return mcl_errbuf(err, err_len, MCL_ERR_NULL, "class pool: NULL argument");
    const mcl_dataset *ds = pool->ds;
    *n = 0;
    if (!pool->classes) {
        if (cap < ds->n_classes)
            return mcl_errbuf(err, err_len, MCL_ERR_INVALID, "class pool: capacity %d < %d classes", cap,
                        ds->n_classes);
        for (int i = 0; i < ds->n_classes; i++) pos[i] = i;
        *n = ds->n_classes;
        return MCL_OK;
    }
    if (pool->n_classes < 0 || pool->n_classes > cap)
        return mcl_errbuf(err, err_len, MCL_ERR_INVALID, "class pool: %d classes (capacity %d)",
                    pool->n_classes, cap);
    unsigned char *seen = calloc((size_t)ds->n_classes + 1, 1);
    if (!seen) return mcl_errbuf(err, err_len, MCL_ERR_OOM, "class pool: out of memory");
    for (int i = 0; i < pool->n_classes; i++) {
        int p = mcl_dataset_class_pos(ds, pool->classes[i]);
        if (p < 0) {
            free(seen);
            return mcl_errbuf(err, err_len, MCL_ERR_INVALID, "class pool: class %d is not in dataset '%s'",
                        (int)pool->classes[i], ds->name);
        }
        if (seen[p]) {
            free(seen);
            return mcl_errbuf(err, err_len, MCL_ERR_INVALID, "class pool: class %d listed twice",
                        (int)pool->classes[i]);
        }
        seen[p] = 1;
        pos[i] = p;
    }
    free(seen);
    *n = pool->n_classes;
    return MCL_OK;
}

/* Rejection for few draws from a big range, partial Fisher–Yates otherwise. Both produce a
 * uniformly random ordered k-subset; the choice depends only on (m, k). */
mcl_status mcl_sample_distinct(mcl_rng *rng, int64_t m, int64_t k, int64_t *out, int64_t *scratch)
{
    if (!rng || (k > 0 && !out)) return MCL_ERR_NULL;
    if (k < 0 || m < 0 || k > m || m > (int64_t)UINT32_MAX) return MCL_ERR_INVALID;
    if (k == 0) return MCL_OK;
    if (k <= 32 && 2 * k <= m) {
        for (int64_t i = 0; i < k;) {
            int64_t v = (int64_t)mcl_rng_next_below(rng, (uint32_t)m);
            int dup = 0;
            for (int64_t j = 0; j < i; j++)
                if (out[j] == v) {
                    dup = 1;
                    break;
                }
            if (!dup) out[i++] = v;
        }
        return MCL_OK;
    }
    int64_t *a = scratch;
    if (!a) {
        a = malloc((size_t)m * sizeof *a);
        if (!a) return MCL_ERR_OOM;
    }
    for (int64_t i = 0; i < m; i++) a[i] = i;
    for (int64_t i = 0; i < k; i++) {
        int64_t j = i + (int64_t)mcl_rng_next_below(rng, (uint32_t)(m - i));
        int64_t t = a[i];
        a[i] = a[j];
        a[j] = t;
        out[i] = a[i];
    }
    if (!scratch) free(a);
    return MCL_OK;
}

/* ======================================================================= episodes */

static int64_t align8(int64_t b) { return (b + 7) & ~(int64_t)7; }

mcl_status mcl_episode_create(const mcl_episode_cfg *cfg, mcl_episode **out)
{
    if (!out) return MCL_ERR_NULL;
    *out = NULL;
    if (!cfg) return MCL_ERR_NULL;
    if (cfg->n_way < 1 || cfg->k_shot < 1 || cfg->n_query < 1 || cfg->first_shot < 0 ||
        cfg->first_shot > 1 || cfg->n_tasks < 1 || cfg->n_way > 1000000 || cfg->k_shot > 1000000 ||
        cfg->n_query > 1000000 || cfg->n_tasks > 100000)
        return MCL_ERR_INVALID;
    int64_t N = cfg->n_way, K = cfg->k_shot, Q = cfg->n_query, F = cfg->first_shot;
    int64_t T = cfg->n_tasks;
    if ((int64_t)cfg->n_way * cfg->n_tasks > 0x7fffffff) return MCL_ERR_INVALID;
    /* per task: int64 arrays then int32 arrays, each 8-byte aligned */
    int64_t per = align8(8 * N * F) + align8(8 * N * K) + align8(8 * N * Q) + align8(4 * N) +
                  align8(4 * N * F) + align8(4 * N * K) + align8(4 * N * Q);
    mcl_episode *ep = calloc(1, sizeof *ep);
    if (!ep) return MCL_ERR_OOM;
    ep->task = calloc((size_t)T, sizeof *ep->task);
    ep->mem = malloc((size_t)(per * T));
    if (!ep->task || !ep->mem) {
        mcl_episode_free(ep);
        return MCL_ERR_OOM;
    }
    ep->cfg = *cfg;
    ep->n_tasks = cfg->n_tasks;
    char *p = ep->mem;
    for (int64_t i = 0; i < T; i++) {
        mcl_task *t = &ep->task[i];
        t->n_way = cfg->n_way;
        t->k_shot = cfg->k_shot;
        t->n_query = cfg->n_query;
        t->n_first = cfg->first_shot;
        t->label_offset = cfg->class_incremental ? (int)(N * i) : 0;
        t->first_index = (int64_t *)(void *)p, p += align8(8 * N * F);
        t->ctx_index = (int64_t *)(void *)p, p += align8(8 * N * K);
        t->query_index = (int64_t *)(void *)p, p += align8(8 * N * Q);
        t->class_of_label = (int32_t *)(void *)p, p += align8(4 * N);
        t->first_label = (int32_t *)(void *)p, p += align8(4 * N * F);
        t->ctx_label = (int32_t *)(void *)p, p += align8(4 * N * K);
        t->query_label = (int32_t *)(void *)p, p += align8(4 * N * Q);
    }
    *out = ep;
    return MCL_OK;
}

void mcl_episode_free(mcl_episode *ep)
{
    if (!ep) return;
    free(ep->mem);
    free(ep->task);
    free(ep);
}

/* Shuffle the parallel arrays (idx, lab) of length n with one random permutation. */
static void shuffle_pair(mcl_rng *rng, int64_t *idx, int32_t *lab, int64_t n, int *perm,
                         int64_t *tmp_i, int32_t *tmp_l)
{
    for (int64_t i = 0; i < n; i++) perm[i] = (int)i;
    mcl_rng_shuffle_int(rng, perm, n);
    for (int64_t i = 0; i < n; i++) {
        tmp_i[i] = idx[perm[i]];
        tmp_l[i] = lab[perm[i]];
    }
    memcpy(idx, tmp_i, (size_t)n * sizeof *idx);
    memcpy(lab, tmp_l, (size_t)n * sizeof *lab);
}

mcl_status mcl_episode_sample(mcl_episode *ep, const mcl_class_pool *pools, mcl_rng *rng,
                              char *err, size_t err_len)
{
    if (err && err_len) err[0] = '\0';
    if (!ep || !pools || !rng) return mcl_errbuf(err, err_len, MCL_ERR_NULL, "episode_sample: NULL argument");
    const mcl_episode_cfg *cfg = &ep->cfg;
    int64_t N = cfg->n_way, K = cfg->k_shot, Q = cfg->n_query, F = cfg->first_shot;
    int64_t per_class = F + K + Q;
    int64_t maxlist = N * (K > Q ? K : Q);
    int max_classes = 0;
    for (int i = 0; i < ep->n_tasks; i++) {
        if (!pools[i].ds) return mcl_errbuf(err, err_len, MCL_ERR_NULL, "episode_sample: task %d has no dataset", i);
        if (pools[i].ds->n_classes > max_classes) max_classes = pools[i].ds->n_classes;
    }
    /* workspace */
    int *pos = malloc(((size_t)max_classes + 1) * sizeof *pos);
    int *avail = malloc(((size_t)max_classes + 1) * sizeof *avail);
    unsigned char *used = malloc((size_t)max_classes + 1);
    int64_t *pick = malloc((size_t)(N > per_class ? N : per_class) * sizeof *pick);
    int *cpos = malloc((size_t)N * sizeof *cpos);
    int *perm = malloc((size_t)maxlist * sizeof *perm);
    int64_t *tmp_i = malloc((size_t)maxlist * sizeof *tmp_i);
    int32_t *tmp_l = malloc((size_t)maxlist * sizeof *tmp_l);
    mcl_status s = MCL_OK;
    if (!pos || !avail || !used || !pick || !cpos || !perm || !tmp_i || !tmp_l) {
        s = mcl_errbuf(err, err_len, MCL_ERR_OOM, "episode_sample: out of memory");
        goto done;
    }
    for (int ti = 0; ti < ep->n_tasks && s == MCL_OK; ti++) {
        mcl_task *t = &ep->task[ti];
        const mcl_class_pool *pool = &pools[ti];
        const mcl_dataset *ds = pool->ds;
        t->ds = ds;
        memset(&t->aug, 0, sizeof t->aug);
        int np = 0;
        s = mcl_class_pool_positions(pool, pos, max_classes, &np, err, err_len);
        if (s != MCL_OK) break;
        /* classes used by earlier tasks of this sequence on the same dataset */
        memset(used, 0, (size_t)ds->n_classes);
        if (!cfg->share_classes)
            for (int tj = 0; tj < ti; tj++) {
                if (ep->task[tj].ds != ds) continue;
                for (int j = 0; j < N; j++) {
                    int p = mcl_dataset_class_pos(ds, ep->task[tj].class_of_label[j]);
                    if (p >= 0) used[p] = 1;
                }
            }
        int na = 0;
        for (int i = 0; i < np; i++) {
            int p = pos[i];
            int64_t m = ds->class_start[p + 1] - ds->class_start[p];
            if (m < per_class) {
                s = mcl_errbuf(err, err_len, MCL_ERR_INVALID,
                         "episode_sample: class %d of '%s' has %lld images; a task needs %lld per "
                         "class (first-shot %lld + K %lld + queries %lld, disjoint)",
                         (int)ds->class_ids[p], ds->name, (long long)m, (long long)per_class,
                         (long long)F, (long long)K, (long long)Q);
                goto done;
            }
            if (!used[p]) avail[na++] = p;
        }
        if (na < N) {
            s = mcl_errbuf(err, err_len, MCL_ERR_INVALID,
                     "episode_sample: task %d needs %lld classes but only %d of the pool's %d "
                     "classes of '%s' are usable%s",
                     ti, (long long)N, na, np, ds->name,
                     cfg->share_classes ? "" : " (earlier tasks of the sequence use the others)");
            goto done;
        }
        /* N classes in random order: label j <-> j-th drawn class */
        s = mcl_sample_distinct(rng, na, N, pick, NULL);
        if (s != MCL_OK) {
            mcl_errbuf(err, err_len, s, "episode_sample: class draw failed");
            goto done;
        }
        for (int64_t j = 0; j < N; j++) cpos[j] = avail[pick[j]];
        for (int64_t j = 0; j < N; j++) t->class_of_label[j] = ds->class_ids[cpos[j]];
        int32_t lab_base = t->label_offset;
        int64_t nf = 0, nc = 0, nq = 0;
        for (int64_t j = 0; j < N; j++) {
            int p = cpos[j];
            int64_t start = ds->class_start[p];
            int64_t m = ds->class_start[p + 1] - start;
            s = mcl_sample_distinct(rng, m, per_class, pick, NULL);
            if (s != MCL_OK) {
                mcl_errbuf(err, err_len, s, "episode_sample: example draw failed");
                goto done;
            }
            int32_t lab = lab_base + (int32_t)j;
            int64_t r = 0;
            for (int64_t u = 0; u < F; u++, r++) {
                t->first_index[nf] = ds->class_index[start + pick[r]];
                t->first_label[nf++] = lab;
            }
            for (int64_t u = 0; u < K; u++, r++) {
                t->ctx_index[nc] = ds->class_index[start + pick[r]];
                t->ctx_label[nc++] = lab;
            }
            for (int64_t u = 0; u < Q; u++, r++) {
                t->query_index[nq] = ds->class_index[start + pick[r]];
                t->query_label[nq++] = lab;
            }
        }
        shuffle_pair(rng, t->first_index, t->first_label, nf, perm, tmp_i, tmp_l);
        shuffle_pair(rng, t->ctx_index, t->ctx_label, nc, perm, tmp_i, tmp_l);
        shuffle_pair(rng, t->query_index, t->query_label, nq, perm, tmp_i, tmp_l);
    }
done:
    free(pos);
    free(avail);
    free(used);
    free(pick);
    free(cpos);
    free(perm);
    free(tmp_i);
    free(tmp_l);
    return s;
}

/* ======================================================================= batching */

/* Convert rows images of ds into dst (rows·side² floats): the side×side image of each
 * (mcl_image_to_side; side 32 = the stored canvas). */
static mcl_status fill_rows(float *dst, const mcl_dataset *ds, const int64_t *index, int64_t rows,
                            int side, int normalize, const mcl_aug *aug, mcl_ctx *ctx)
{
    float mean = 0.0f, std = 1.0f;
    if (normalize) {
        mean = ds->mean;
        std = ds->std;
        if (!(std > 0.0f))
            return mcl_ctx_set_error(ctx, MCL_ERR_INVALID,
                                     "batch: dataset '%s' has std %g; cannot normalize", ds->name,
                                     (double)std);
    }
    const int64_t pix = (int64_t)side * side;
    uint8_t img[IMG_PIXELS];
    for (int64_t r = 0; r < rows; r++) {
        int64_t i = index[r];
        if (i < 0 || i >= ds->n)
            return mcl_ctx_set_error(ctx, MCL_ERR_INVALID,
                                     "batch: row %lld: image index %lld out of range [0, %lld) of '%s'",
                                     (long long)r, (long long)i, (long long)ds->n, ds->name);
        const uint8_t *src = ds->images + i * IMG_PIXELS;
        if (side != MCL_IMG) {
            mcl_image_to_side(src, ds->content_side, side, img);
            src = img;
        }
        if (aug && aug->active) {
            if (src != img) memcpy(img, src, (size_t)pix);
            mcl_aug_apply(aug, img, side, (uint64_t)i);
            src = img;
        }
        float *d = dst + r * pix;
        if (normalize)
            for (int64_t k = 0; k < pix; k++) d[k] = ((float)src[k] / 255.0f - mean) / std;
        else
            for (int64_t k = 0; k < pix; k++) d[k] = (float)src[k] / 255.0f;
    }
    return MCL_OK;
}

/* The batch's image side S: the last dimension of a 4-D images tensor [rows, 1, S, S] (S in
 * 1..32), else 32 (a [rows, 1024] or [B, L, 1024] tensor); then numel must be rows·S². */
static mcl_status check_batch_tensors(mcl_tensor *images, mcl_tensor *labels, int64_t rows,
                                      const char *fn, int *side)
{
    if (!images) return MCL_ERR_NULL;
    mcl_ctx *ctx = images->ctx;
    if (rows < 1)
        return mcl_ctx_set_error(ctx, MCL_ERR_INVALID, "%s: %lld rows (need >= 1)", fn, (long long)rows);
    char sh[64];
    int64_t S = MCL_IMG;
    if (images->ndim == 4 && images->shape[2] == images->shape[3] && images->shape[3] != MCL_IMG) {
        S = images->shape[3];
        if (S < 1 || S > MCL_IMG)
            return mcl_ctx_set_error(ctx, MCL_ERR_SHAPE,
                                     "%s: images tensor %s: the data sets give sides 1..%d", fn,
                                     mcl_shape_str(images, sh, sizeof sh), MCL_IMG);
    }
    if (mcl_tensor_numel(images) != rows * S * S)
        return mcl_ctx_set_error(ctx, MCL_ERR_SHAPE,
                                 "%s: images tensor %s has %lld elements, the batch needs %lld "
                                 "(%lld rows x %lld)",
                                 fn, mcl_shape_str(images, sh, sizeof sh),
                                 (long long)mcl_tensor_numel(images),
                                 (long long)(rows * S * S), (long long)rows, (long long)(S * S));
    if (labels && mcl_tensor_numel(labels) != rows)
        return mcl_ctx_set_error(ctx, MCL_ERR_SHAPE,
                                 "%s: labels tensor %s has %lld elements, the batch needs %lld", fn,
                                 mcl_shape_str(labels, sh, sizeof sh),
                                 (long long)mcl_tensor_numel(labels), (long long)rows);
    *side = (int)S;
    return MCL_OK;
}

mcl_status mcl_batch_rows(mcl_tensor *images, mcl_tensor *labels, const mcl_dataset *ds,
                          const int64_t *index, const int32_t *label, int64_t rows, int normalize)
{
    if (!images) return MCL_ERR_NULL;
    mcl_ctx *ctx = images->ctx;
    if (!ds || !index || (labels && !label))
        return mcl_ctx_set_error(ctx, MCL_ERR_NULL, "batch_rows: NULL dataset, index or label");
    int side = MCL_IMG;
    mcl_status s = check_batch_tensors(images, labels, rows, "batch_rows", &side);
    if (s != MCL_OK) return s;
    const int64_t pix = (int64_t)side * side;
    float *h = malloc((size_t)(rows * pix) * sizeof *h);
    if (!h) return mcl_ctx_set_error(ctx, MCL_ERR_OOM, "batch_rows: out of memory");
    s = fill_rows(h, ds, index, rows, side, normalize, NULL, ctx);
    if (s == MCL_OK) s = mcl_tensor_write(images, h, rows * pix);
    if (s == MCL_OK && labels) {
        for (int64_t r = 0; r < rows; r++) h[r] = (float)label[r];
        s = mcl_tensor_write(labels, h, rows);
    }
    free(h);
    return s;
}

int64_t mcl_task_part_len(const mcl_task *t, mcl_task_part part)
{
    if (!t) return 0;
    switch (part) {
    case MCL_PART_FIRST: return (int64_t)t->n_way * t->n_first;
    case MCL_PART_CONTEXT: return (int64_t)t->n_way * t->k_shot;
    case MCL_PART_QUERY: return (int64_t)t->n_way * t->n_query;
    }
    return 0;
}

static void part_arrays(const mcl_task *t, mcl_task_part part, const int64_t **idx,
                        const int32_t **lab)
{
    switch (part) {
    case MCL_PART_FIRST: *idx = t->first_index, *lab = t->first_label; return;
    case MCL_PART_CONTEXT: *idx = t->ctx_index, *lab = t->ctx_label; return;
    case MCL_PART_QUERY: *idx = t->query_index, *lab = t->query_label; return;
    }
    *idx = NULL, *lab = NULL;
}

mcl_status mcl_episode_rows(const mcl_episode *ep, int task, mcl_task_part part, const int64_t **idx,
                            const int32_t **lab, int64_t *n)
{
    if (!ep || !idx || !lab || !n) return MCL_ERR_NULL;
    if (task < 0 || task >= ep->n_tasks || (part != MCL_PART_FIRST && part != MCL_PART_CONTEXT && part != MCL_PART_QUERY))
        return MCL_ERR_INVALID;
    part_arrays(&ep->task[task], part, idx, lab);
    *n = mcl_task_part_len(&ep->task[task], part);
    return MCL_OK;
}

mcl_status mcl_task_batch(mcl_tensor *images, mcl_tensor *labels, const mcl_task *const *tasks,
                          int B, mcl_task_part part, int normalize)
{
    if (!images) return MCL_ERR_NULL;
    mcl_ctx *ctx = images->ctx;
    if (!tasks || B < 1)
        return mcl_ctx_set_error(ctx, tasks ? MCL_ERR_INVALID : MCL_ERR_NULL,
                                 "task_batch: need B >= 1 tasks (B = %d)", B);
    if (part != MCL_PART_FIRST && part != MCL_PART_CONTEXT && part != MCL_PART_QUERY)
        return mcl_ctx_set_error(ctx, MCL_ERR_INVALID, "task_batch: unknown part %d", (int)part);
    int64_t L = -1;
    for (int b = 0; b < B; b++) {
        if (!tasks[b] || !tasks[b]->ds)
            return mcl_ctx_set_error(ctx, MCL_ERR_NULL, "task_batch: task %d is NULL or unsampled", b);
        int64_t l = mcl_task_part_len(tasks[b], part);
        if (L < 0) L = l;
        if (l != L)
            return mcl_ctx_set_error(ctx, MCL_ERR_SHAPE,
                                     "task_batch: task %d has %lld rows in this part, task 0 has %lld",
                                     b, (long long)l, (long long)L);
    }
    int64_t rows = L * B;
    int side = MCL_IMG;
    mcl_status s = check_batch_tensors(images, labels, rows, "task_batch", &side);
    if (s != MCL_OK) return s;
    const int64_t pix = (int64_t)side * side;
    float *h = malloc((size_t)(rows * pix) * sizeof *h);
    if (!h) return mcl_ctx_set_error(ctx, MCL_ERR_OOM, "task_batch: out of memory");
    for (int b = 0; b < B && s == MCL_OK; b++) {
        const int64_t *idx;
        const int32_t *lab;
        part_arrays(tasks[b], part, &idx, &lab);
        s = fill_rows(h + (int64_t)b * L * pix, tasks[b]->ds, idx, L, side, normalize,
                      &tasks[b]->aug, ctx);
    }
    if (s == MCL_OK) s = mcl_tensor_write(images, h, rows * pix);
    if (s == MCL_OK && labels) {
        for (int b = 0; b < B; b++) {
            const int64_t *idx;
            const int32_t *lab;
            part_arrays(tasks[b], part, &idx, &lab);
            for (int64_t j = 0; j < L; j++) h[(int64_t)b * L + j] = (float)lab[j];
        }
        s = mcl_tensor_write(labels, h, rows);
    }
    free(h);
    return s;
}

void mcl_episode_augment(mcl_episode *ep, const mcl_aug_cfg *cfg, mcl_rng *rng)
{
    if (!ep || !rng) return;
    for (int i = 0; i < ep->n_tasks; i++) {
        if (cfg)
            mcl_aug_draw(cfg, rng, &ep->task[i].aug);
        else
            memset(&ep->task[i].aug, 0, sizeof ep->task[i].aug);
    }
}
