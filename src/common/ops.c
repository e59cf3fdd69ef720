/* ops.c — the front end of every op: validate, infer output shapes, dispatch to the context's
 * backend, record on the tape. Backends never see an invalid call. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops.h"
#include "tape.h"

/* ---- op table generated from ops.def ---- */

const mcl_op_info mcl_op_table[MCL_OP_COUNT] = {
#define MCL_OP(ID, name, n_in, n_out, n_diff_out, family, overwrites, has_bwd) \
    {#name, #family, n_in, n_out, n_diff_out, overwrites, has_bwd},
#include "ops.def"
#undef MCL_OP
};

/* Compile-time checks of the table's limits. */
#define MCL_OP(ID, name, n_in, n_out, n_diff_out, family, overwrites, has_bwd)                    \
    _Static_assert((n_in) >= 1 && (n_in) <= MCL_MAX_IN, #name ": bad n_in");                      \
    _Static_assert((n_out) >= 0 && (n_out) <= MCL_MAX_OUT, #name ": bad n_out");                  \
    _Static_assert((n_diff_out) >= 0 && (n_diff_out) <= (n_out), #name ": bad n_diff_out");       \
    _Static_assert((overwrites) == 0 || ((overwrites) == 1 && (n_out) > 0),                       \
                   #name ": overwrites must be 0, or 1 for an op with outputs");                  \
    _Static_assert((has_bwd) == ((n_diff_out) > 0), #name ": has_bwd must be (n_diff_out > 0)");
#include "ops.def"
#undef MCL_OP

mcl_op mcl_op_by_name(const char *name)
{
    if (!name) return MCL_OP_COUNT;
    for (int i = 0; i < MCL_OP_COUNT; i++)
        if (strcmp(mcl_op_table[i].name, name) == 0) return (mcl_op)i;
    return MCL_OP_COUNT;
}

/* ---- shape inference ---- */

typedef struct out_shapes {
    int ndim[MCL_MAX_OUT];
    int64_t shape[MCL_MAX_OUT][MCL_MAX_DIMS];
} out_shapes;

static void set_out(out_shapes *o, int k, int ndim, const int64_t *shape)
{
    o->ndim[k] = ndim;
    for (int d = 0; d < MCL_MAX_DIMS; d++) o->shape[k][d] = d < ndim ? shape[d] : 1;
}

static void set_out1(out_shapes *o, int k, int64_t n)
{
    int64_t s[1] = {n};
    set_out(o, k, 1, s);
}

static int64_t rows_of(const mcl_tensor *t)
{
    int64_t r = 1;
    for (int d = 0; d < t->ndim - 1; d++) r *= t->shape[d];
    return r;
}

#define SHAPE_ERR(...) mcl_ctx_set_error(ctx, MCL_ERR_SHAPE, __VA_ARGS__)
#define INVALID(...) mcl_ctx_set_error(ctx, MCL_ERR_INVALID, __VA_ARGS__)

static mcl_status need_same(mcl_ctx *ctx, const char *op, const mcl_tensor *a, const mcl_tensor *b,
                            const char *an, const char *bn)
{
    if (mcl_tensor_same_shape(a, b)) return MCL_OK;
    char s1[64], s2[64];
    return SHAPE_ERR("%s: %s %s and %s %s must have the same shape", op, an,
                     mcl_shape_str(a, s1, sizeof s1), bn, mcl_shape_str(b, s2, sizeof s2));
}

/* Normalize an axis (negative counts from the end). */
static mcl_status norm_axis(mcl_ctx *ctx, const char *op, int64_t *axis, int ndim)
{
    int64_t ax = *axis < 0 ? *axis + ndim : *axis;
    if (ax < 0 || ax >= ndim)
        return INVALID("%s: axis %lld out of range for %d dims", op, (long long)*axis, ndim);
    *axis = ax;
    return MCL_OK;
}

/* Integer-valued index tensor check. When the host wrote the indices itself (struct
 * mcl_buffer: known_*) and they are in range, nothing is read back; otherwise (a result of
 * an op, or a value out of range: the message names it) the indices are read (small). */
static mcl_status check_indices(mcl_ctx *ctx, const char *op, const mcl_tensor *idx, int64_t lo,
                                int64_t hi, int allow_negative)
{
    int64_t n = mcl_tensor_numel(idx);
    const mcl_buffer *b = idx->buf;
    if (b->known_n > 0 && idx->offset >= b->known_off &&
        idx->offset + n <= b->known_off + b->known_n && b->known_max < (float)hi &&
        (b->known_min >= (float)lo || (allow_negative && lo == 0)))
        return MCL_OK; /* integers (a negative one skipped when allowed) in [lo, hi) */
    float *h = malloc((size_t)n * sizeof *h);
    if (!h) return mcl_ctx_set_error(ctx, MCL_ERR_OOM, "%s: out of host memory", op);
    mcl_status s = mcl_tensor_read(idx, h, n);
    for (int64_t i = 0; s == MCL_OK && i < n; i++) {
        float v = h[i];
        if (!(v == floorf(v)) || fabsf(v) > 16777216.0f) {
            s = INVALID("%s: index %lld is %g, not an integer", op, (long long)i, (double)v);
        } else if (v < 0 && allow_negative) {
            continue;
        } else if (v < (float)lo || v >= (float)hi) {
            s = INVALID("%s: index %lld is %g, outside [%lld, %lld)", op, (long long)i, (double)v,
                        (long long)lo, (long long)hi);
        }
    }
    free(h);
    return s;
}

void mcl_op_forget_written(const mcl_op_args *a, int backward)
{
    const mcl_op_info *info = &mcl_op_table[a->op];
    if (backward) {
        for (int k = 0; k < info->n_in; k++)
            if (a->gin[k]) mcl_buffer_forget(a->gin[k]->buf);
        return;
    }
    for (int k = 0; k < info->n_out; k++)
        if (a->out[k]) mcl_buffer_forget(a->out[k]->buf);
    for (int k = 0; k < info->n_in; k++) {
        const int index_in = k == 1 && (a->op == MCL_OP_CROSS_ENTROPY || a->op == MCL_OP_EMBEDDING);
        if (a->in[k] && !index_in) mcl_buffer_forget(a->in[k]->buf);
    }
}

/* smn_write (ops.def): M0 has fewer than 2^24 elements (every index is exact as a float). */
#define SMN_MAX_N ((int64_t)1 << 24)

/* smn_write's meta-learner phi = {W1 [H,2], b1 [H], W2 [H,H], b2 [H], W3 [1,H], b3 [1]}, H >= 1
 * (a tensor's dims are >= 1 already); *H = its width. */
static mcl_status smn_phi_check(mcl_ctx *ctx, mcl_tensor *const *phi, int64_t *H)
{
    const mcl_tensor *W1 = phi[0], *b1 = phi[1], *W2 = phi[2], *b2 = phi[3], *W3 = phi[4];
    const mcl_tensor *b3 = phi[5];
    const int64_t h = W1->shape[0];
    *H = h;
    if (W1->ndim == 2 && W1->shape[1] == 2 && b1->ndim == 1 && b1->shape[0] == h &&
        W2->ndim == 2 && W2->shape[0] == h && W2->shape[1] == h && b2->ndim == 1 &&
        b2->shape[0] == h && W3->ndim == 2 && W3->shape[0] == 1 && W3->shape[1] == h &&
        b3->ndim == 1 && b3->shape[0] == 1)
        return MCL_OK;
    char s[6][64];
    for (int k = 0; k < 6; k++) mcl_shape_str(phi[k], s[k], sizeof s[k]);
    return SHAPE_ERR("smn_write: phi must be W1 [H,2], b1 [H], W2 [H,H], b2 [H], W3 [1,H], b3 [1]; "
                     "got W1 %s, b1 %s, W2 %s, b2 %s, W3 %s, b3 %s",
                     s[0], s[1], s[2], s[3], s[4], s[5]);
}

/* smn_write's M0 and slope, the checks that do not involve idx and zs. */
static mcl_status smn_m0_check(mcl_ctx *ctx, const mcl_tensor *m0, float slope)
{
    char s1[64];
    if (mcl_tensor_numel(m0) >= SMN_MAX_N)
        return SHAPE_ERR("smn_write: M0 %s has %lld elements; at most 2^24 - 1 (indices are "
                         "stored as floats, exact below 2^24)",
                         mcl_shape_str(m0, s1, sizeof s1), (long long)mcl_tensor_numel(m0));
    if (!isfinite(slope))
        return INVALID("smn_write: LeakyReLU slope %g must be finite", (double)slope);
    return MCL_OK;
}

/* The Conv-4 block tail's checks and outputs (inorm_pool_relu's, and conv_inorm_pool_relu's on
 * its convolution's output): x [B,C,H,W] (H, W >= 2, checked by the caller), gamma and beta
 * a->in[gi], a->in[gi + 1] of [C], eps f0 > 0, the dropout p = f1 in [0, 1) and its segments
 * i0 dividing the output; out[0] y and out[3] argmax [B,C,H/2,W/2], out[1] mean and out[2]
 * rstd [B·C]. */
static mcl_status tail_shapes(mcl_ctx *ctx, const mcl_op_args *a, const char *op, int gi, const int64_t x[4],
                              out_shapes *o)
{
    const mcl_tensor *g = a->in[gi], *b = a->in[gi + 1];
    char s1[64], s2[64];
    mcl_status s;
    if (g->ndim != 1 || g->shape[0] != x[1] || b->ndim != 1 || b->shape[0] != x[1])
        return SHAPE_ERR("%s: gamma %s and beta %s must be [%lld]", op, mcl_shape_str(g, s1, sizeof s1),
                         mcl_shape_str(b, s2, sizeof s2), (long long)x[1]);
    if (!(a->p.f[0] > 0.0f)) return INVALID("%s: eps = %g must be > 0", op, (double)a->p.f[0]);
    if (!(a->p.f[1] >= 0.0f && a->p.f[1] < 1.0f))
        return INVALID("%s: dropout p = %g must be in [0, 1)", op, (double)a->p.f[1]);
    const int64_t sh[4] = {x[0], x[1], x[2] / 2, x[3] / 2};
    if ((s = mcl_shape_check(ctx, op, 4, sh)) != MCL_OK) return s;
    const int64_t ny = sh[0] * sh[1] * sh[2] * sh[3];
    if (a->p.i[0] < 0 || (a->p.i[0] > 0 && ny % a->p.i[0] != 0))
        return INVALID("%s: dropout segments of %lld elements do not divide %lld", op, (long long)a->p.i[0],
                       (long long)ny);
    set_out(o, 0, 4, sh);
    set_out1(o, 1, x[0] * x[1]);
    set_out1(o, 2, x[0] * x[1]);
    set_out(o, 3, 4, sh);
    return MCL_OK;
}

static mcl_status infer(mcl_ctx *ctx, mcl_op_args *a, out_shapes *o)
{
    const char *op = mcl_op_table[a->op].name;
    mcl_tensor *x = a->in[0], *y = a->in[1];
    mcl_status s;
    char s1[64], s2[64];
    switch (a->op) {
    case MCL_OP_ADD:
    case MCL_OP_SUB:
    case MCL_OP_MUL:
        if ((s = need_same(ctx, op, x, y, "a", "b")) != MCL_OK) return s;
        set_out(o, 0, x->ndim, x->shape);
        return MCL_OK;
    case MCL_OP_SCALE:
    case MCL_OP_COPY:
    case MCL_OP_RELU:
    case MCL_OP_LEAKY_RELU:
    case MCL_OP_ELU:
    case MCL_OP_SIGMOID:
    case MCL_OP_TANH:
    case MCL_OP_GELU:
    case MCL_OP_EXP:
    case MCL_OP_LOG:
    case MCL_OP_SOFTMAX:
    case MCL_OP_LOG_SOFTMAX:
        set_out(o, 0, x->ndim, x->shape);
        return MCL_OK;
    case MCL_OP_DROPOUT:
        if (!(a->p.f[0] >= 0.0f && a->p.f[0] < 1.0f))
            return INVALID("dropout: p = %g must be in [0, 1)", (double)a->p.f[0]);
        if (a->p.i[1] != 0 && a->p.i[1] != 1)
            return INVALID("dropout: relu flag %lld (0 or 1)", (long long)a->p.i[1]);
        if (a->p.i[0] < 0 || (a->p.i[0] > 0 && mcl_tensor_numel(x) % a->p.i[0] != 0))
            return INVALID("dropout: segments of %lld elements do not divide %lld",
                           (long long)a->p.i[0], (long long)mcl_tensor_numel(x));
        set_out(o, 0, x->ndim, x->shape);
        return MCL_OK;
    case MCL_OP_ADD_DROPOUT:
        if ((s = need_same(ctx, op, x, y, "a", "x")) != MCL_OK) return s;
        if (!(a->p.f[0] >= 0.0f && a->p.f[0] < 1.0f))
            return INVALID("add_dropout: p = %g must be in [0, 1)", (double)a->p.f[0]);
        if (a->p.i[0] != 0 || a->p.i[1] != 0)
            return INVALID("add_dropout: no segments or relu (i0 %lld, i1 %lld)",
                           (long long)a->p.i[0], (long long)a->p.i[1]);
        set_out(o, 0, x->ndim, x->shape);
        return MCL_OK;
    case MCL_OP_BIAS_ADD_DROPOUT:
        if ((s = need_same(ctx, op, x, y, "a", "x")) != MCL_OK) return s;
        if (!(a->p.f[0] >= 0.0f && a->p.f[0] < 1.0f))
            return INVALID("bias_add_dropout: p = %g must be in [0, 1)", (double)a->p.f[0]);
        if (a->p.i[0] != 0 || a->p.i[1] != 0)
            return INVALID("bias_add_dropout: no segments or flags (i0 %lld, i1 %lld)",
                           (long long)a->p.i[0], (long long)a->p.i[1]);
        if (a->in[2]->ndim != 1 || a->in[2]->shape[0] != x->shape[x->ndim - 1])
            return SHAPE_ERR("bias_add_dropout: bias %s must be [%lld] for x %s",
                             mcl_shape_str(a->in[2], s1, sizeof s1),
                             (long long)x->shape[x->ndim - 1], mcl_shape_str(x, s2, sizeof s2));
        set_out(o, 0, x->ndim, x->shape);
        return MCL_OK;
    case MCL_OP_BIAS_DROPOUT_RELU:
        if (!(a->p.f[0] >= 0.0f && a->p.f[0] < 1.0f))
            return INVALID("bias_dropout_relu: p = %g must be in [0, 1)", (double)a->p.f[0]);
        if (a->p.i[0] != 0 || a->p.i[1] != 0)
            return INVALID("bias_dropout_relu: no segments or flags (i0 %lld, i1 %lld)",
                           (long long)a->p.i[0], (long long)a->p.i[1]);
        /* the bias's shape as bias_add's */
        /* fall through */
    case MCL_OP_BIAS_ADD:
    case MCL_OP_BIAS_GELU:
    case MCL_OP_BIAS_ADD2:
        for (int k = 1; k < (a->op == MCL_OP_BIAS_ADD2 ? 3 : 2); k++) {
            y = a->in[k];
            if (y->ndim != 1 || y->shape[0] != x->shape[x->ndim - 1])
                return SHAPE_ERR("%s: bias %s must be [%lld] for x %s", op,
                                 mcl_shape_str(y, s1, sizeof s1), (long long)x->shape[x->ndim - 1],
                                 mcl_shape_str(x, s2, sizeof s2));
        }
        set_out(o, 0, x->ndim, x->shape);
        if (a->op == MCL_OP_BIAS_ADD2) set_out(o, 1, x->ndim, x->shape);
        return MCL_OK;
    case MCL_OP_MATMUL: {
        if (x->ndim < 2 || x->ndim != y->ndim)
            return SHAPE_ERR("matmul: a %s and b %s must both have 2..4 dims, the same number",
                             mcl_shape_str(x, s1, sizeof s1), mcl_shape_str(y, s2, sizeof s2));
        int nd = x->ndim;
        for (int d = 0; d < nd - 2; d++)
            if (x->shape[d] != y->shape[d])
                return SHAPE_ERR("matmul: batch dims of a %s and b %s differ",
                                 mcl_shape_str(x, s1, sizeof s1), mcl_shape_str(y, s2, sizeof s2));
        int ta = a->p.i[0] != 0, tb = a->p.i[1] != 0;
        int64_t M = ta ? x->shape[nd - 1] : x->shape[nd - 2];
        int64_t K = ta ? x->shape[nd - 2] : x->shape[nd - 1];
        int64_t K2 = tb ? y->shape[nd - 1] : y->shape[nd - 2];
        int64_t N = tb ? y->shape[nd - 2] : y->shape[nd - 1];
        if (K != K2)
            return SHAPE_ERR("matmul: inner dims differ: a %s%s, b %s%s (K %lld vs %lld)",
                             mcl_shape_str(x, s1, sizeof s1), ta ? "^T" : "",
                             mcl_shape_str(y, s2, sizeof s2), tb ? "^T" : "", (long long)K,
                             (long long)K2);
        int64_t sh[4];
        for (int d = 0; d < nd - 2; d++) sh[d] = x->shape[d];
        sh[nd - 2] = M;
        sh[nd - 1] = N;
        set_out(o, 0, nd, sh);
        return MCL_OK;
    }
    case MCL_OP_SUM:
    case MCL_OP_MEAN:
    case MCL_OP_SUMSQ:
        set_out1(o, 0, 1);
        return MCL_OK;
    case MCL_OP_SUM_LAST:
    case MCL_OP_MEAN_LAST:
        if (x->ndim == 1)
            set_out1(o, 0, 1);
        else
            set_out(o, 0, x->ndim - 1, x->shape);
        return MCL_OK;
    case MCL_OP_LAYER_NORM: {
        int64_t n = x->shape[x->ndim - 1];
        mcl_tensor *g = a->in[1], *b = a->in[2];
        if (g->ndim != 1 || g->shape[0] != n || b->ndim != 1 || b->shape[0] != n) {
            char s3[64];
            return SHAPE_ERR("layer_norm: gamma %s and beta %s must be [%lld] for x %s",
                             mcl_shape_str(g, s1, sizeof s1), mcl_shape_str(b, s2, sizeof s2),
                             (long long)n, mcl_shape_str(x, s3, sizeof s3));
        }
        if (!(a->p.f[0] > 0.0f)) return INVALID("layer_norm: eps = %g must be > 0", (double)a->p.f[0]);
        set_out(o, 0, x->ndim, x->shape);
        set_out1(o, 1, rows_of(x));
        set_out1(o, 2, rows_of(x));
        return MCL_OK;
    }
    case MCL_OP_CROSS_ENTROPY:
        if (x->ndim != 2)
            return SHAPE_ERR("cross_entropy: logits %s must be [R,C]", mcl_shape_str(x, s1, sizeof s1));
        if (y->ndim != 1 || y->shape[0] != x->shape[0])
            return SHAPE_ERR("cross_entropy: targets %s must be [%lld] for logits %s",
                             mcl_shape_str(y, s1, sizeof s1), (long long)x->shape[0],
                             mcl_shape_str(x, s2, sizeof s2));
        if ((s = check_indices(ctx, op, y, 0, x->shape[1], 1)) != MCL_OK) return s;
        set_out1(o, 0, 1);
        set_out(o, 1, 2, x->shape);
        return MCL_OK;
    case MCL_OP_CONCAT: {
        if ((s = norm_axis(ctx, op, &a->p.i[0], x->ndim)) != MCL_OK) return s;
        int ax = (int)a->p.i[0];
        int ok = x->ndim == y->ndim;
        for (int d = 0; ok && d < x->ndim; d++)
            if (d != ax && x->shape[d] != y->shape[d]) ok = 0;
        if (!ok)
            return SHAPE_ERR("concat: a %s and b %s differ outside axis %d",
                             mcl_shape_str(x, s1, sizeof s1), mcl_shape_str(y, s2, sizeof s2), ax);
        int64_t sh[4];
        memcpy(sh, x->shape, sizeof sh);
        sh[ax] = x->shape[ax] + y->shape[ax];
        set_out(o, 0, x->ndim, sh);
        return MCL_OK;
    }
    case MCL_OP_SLICE: {
        if ((s = norm_axis(ctx, op, &a->p.i[0], x->ndim)) != MCL_OK) return s;
        int ax = (int)a->p.i[0];
        int64_t st = a->p.i[1], len = a->p.i[2];
        if (st < 0 || len < 1 || st > x->shape[ax] || len > x->shape[ax] - st)
            return SHAPE_ERR("slice: [%lld, %lld+%lld) outside axis %d of %s", (long long)st,
                             (long long)st, (long long)len, ax, mcl_shape_str(x, s1, sizeof s1));
        int64_t sh[4];
        memcpy(sh, x->shape, sizeof sh);
        sh[ax] = len;
        set_out(o, 0, x->ndim, sh);
        return MCL_OK;
    }
    case MCL_OP_RESHAPE: {
        int nd = (int)a->p.i[0];
        if (nd < 1 || nd > MCL_MAX_DIMS) return INVALID("reshape: %d dims (must be 1..4)", nd);
        int64_t sh[4] = {1, 1, 1, 1};
        for (int d = 0; d < nd; d++) sh[d] = a->p.i[1 + d];
        if ((s = mcl_shape_check(ctx, "reshape", nd, sh)) != MCL_OK) return s;
        int64_t n = 1;
        for (int d = 0; d < nd; d++) n *= sh[d];
        if (n != mcl_tensor_numel(x))
            return SHAPE_ERR("reshape: %s has %lld elements, the new shape %lld",
                             mcl_shape_str(x, s1, sizeof s1), (long long)mcl_tensor_numel(x),
                             (long long)n);
        set_out(o, 0, nd, sh);
        return MCL_OK;
    }
    case MCL_OP_TRANSPOSE: {
        if (x->ndim < 2)
            return SHAPE_ERR("transpose: %s needs at least 2 dims", mcl_shape_str(x, s1, sizeof s1));
        int64_t sh[4];
        memcpy(sh, x->shape, sizeof sh);
        sh[x->ndim - 1] = x->shape[x->ndim - 2];
        sh[x->ndim - 2] = x->shape[x->ndim - 1];
        set_out(o, 0, x->ndim, sh);
        return MCL_OK;
    }
    case MCL_OP_PERMUTE: {
        if (x->ndim != 4)
            return SHAPE_ERR("permute: %s must have 4 dims", mcl_shape_str(x, s1, sizeof s1));
        int seen[4] = {0, 0, 0, 0};
        int64_t sh[4];
        for (int d = 0; d < 4; d++) {
            int64_t p = a->p.i[d];
            if (p < 0 || p > 3 || seen[p])
                return INVALID("permute: (%lld,%lld,%lld,%lld) is not a permutation of 0..3",
                               (long long)a->p.i[0], (long long)a->p.i[1], (long long)a->p.i[2],
                               (long long)a->p.i[3]);
            seen[p] = 1;
            sh[d] = x->shape[p];
        }
        set_out(o, 0, 4, sh);
        return MCL_OK;
    }
    case MCL_OP_ONE_HOT:
    case MCL_OP_EMBEDDING: {
        mcl_tensor *idx = a->op == MCL_OP_ONE_HOT ? x : y;
        int64_t width;
        if (a->op == MCL_OP_ONE_HOT) {
            width = a->p.i[0];
            if (width < 1 || width > (1 << 24))
                return INVALID("one_hot: depth %lld must be in 1..2^24", (long long)width);
        } else {
            if (x->ndim != 2)
                return SHAPE_ERR("embedding: table %s must be [V,D]", mcl_shape_str(x, s1, sizeof s1));
            width = x->shape[1];
            if ((s = check_indices(ctx, op, idx, 0, x->shape[0], 0)) != MCL_OK) return s;
        }
        if (idx->ndim > 3)
            return SHAPE_ERR("%s: indices %s have more than 3 dims", op,
                             mcl_shape_str(idx, s1, sizeof s1));
        int64_t sh[4];
        memcpy(sh, idx->shape, sizeof sh);
        sh[idx->ndim] = width;
        int nd = idx->ndim + 1;
        if ((s = mcl_shape_check(ctx, op, nd, sh)) != MCL_OK) return s;
        set_out(o, 0, nd, sh);
        return MCL_OK;
    }
    case MCL_OP_REPEAT_BATCH: {
        int64_t nb = a->p.i[0], ax = a->p.i[1];
        if (x->ndim > 3)
            return SHAPE_ERR("repeat_batch: %s has 4 dims already", mcl_shape_str(x, s1, sizeof s1));
        if (nb < 1) return INVALID("repeat_batch: count %lld must be >= 1", (long long)nb);
        if (ax != 0 && ax != 1) return INVALID("repeat_batch: axis %lld must be 0 or 1", (long long)ax);
        int64_t sh[4];
        for (int d = 0, k = 0; d <= x->ndim; d++) sh[d] = d == ax ? nb : x->shape[k++];
        if ((s = mcl_shape_check(ctx, op, x->ndim + 1, sh)) != MCL_OK) return s;
        set_out(o, 0, x->ndim + 1, sh);
        return MCL_OK;
    }
    case MCL_OP_REPEAT_BATCH4: {
        int64_t nb = a->p.i[0], ax = a->p.i[1];
        if (nb < 1) return INVALID("repeat_batch4: count %lld must be >= 1", (long long)nb);
        if (ax != 0 && ax != 1) return INVALID("repeat_batch4: axis %lld must be 0 or 1", (long long)ax);
        for (int k = 0; k < 4; k++) {
            const mcl_tensor *t = a->in[k];
            if (ax == 0 && t->ndim > 3)
                return SHAPE_ERR("repeat_batch4: input %d %s has 4 dims already", k,
                                 mcl_shape_str(t, s1, sizeof s1));
            if (ax == 1 && t->shape[0] != x->shape[0])
                return SHAPE_ERR("repeat_batch4: input %d %s and input 0 %s differ in the first dim",
                                 k, mcl_shape_str(t, s1, sizeof s1), mcl_shape_str(x, s2, sizeof s2));
            int64_t sh[4];
            int nd = ax == 0 ? t->ndim + 1 : t->ndim;
            for (int d = 0; d < nd; d++)
                sh[d] = ax == 0 ? (d == 0 ? nb : t->shape[d - 1]) : (d == 0 ? t->shape[0] * nb : t->shape[d]);
            if (ax == 1 && t->shape[0] > INT64_MAX / nb)
                return SHAPE_ERR("repeat_batch4: %lld x %lld rows overflow", (long long)t->shape[0], (long long)nb);
            if ((s = mcl_shape_check(ctx, op, nd, sh)) != MCL_OK) return s;
            set_out(o, k, nd, sh);
        }
        return MCL_OK;
    }
    case MCL_OP_CONV2D: {
        mcl_tensor *w = y, *b = a->in[2];
        int64_t st = a->p.i[0], pad = a->p.i[1];
        if (x->ndim != 4 || w->ndim != 4 || w->shape[1] != x->shape[1] || w->shape[2] != w->shape[3])
            return SHAPE_ERR("conv2d: x %s must be [B,C,H,W] and w %s [O,C,k,k]",
                             mcl_shape_str(x, s1, sizeof s1), mcl_shape_str(w, s2, sizeof s2));
        if (b->ndim != 1 || b->shape[0] != w->shape[0])
            return SHAPE_ERR("conv2d: bias %s must be [%lld]", mcl_shape_str(b, s1, sizeof s1),
                             (long long)w->shape[0]);
        if (st < 1 || pad < 0 || pad >= w->shape[2])
            return INVALID("conv2d: stride %lld must be >= 1 and padding %lld in [0, k)", (long long)st,
                           (long long)pad);
        int64_t k = w->shape[2], hp = x->shape[2] + 2 * pad, wp = x->shape[3] + 2 * pad;
        if (hp < k || wp < k)
            return SHAPE_ERR("conv2d: kernel %lld larger than the padded input %s",
                             (long long)k, mcl_shape_str(x, s1, sizeof s1));
        int64_t sh[4] = {x->shape[0], w->shape[0], (hp - k) / st + 1, (wp - k) / st + 1};
        set_out(o, 0, 4, sh);
        return MCL_OK;
    }
    case MCL_OP_MAXPOOL2D: {
        if (x->ndim != 4 || x->shape[2] < 2 || x->shape[3] < 2)
            return SHAPE_ERR("maxpool2d: x %s must be [B,C,H,W] with H, W >= 2",
                             mcl_shape_str(x, s1, sizeof s1));
        int64_t sh[4] = {x->shape[0], x->shape[1], x->shape[2] / 2, x->shape[3] / 2};
        set_out(o, 0, 4, sh);
        set_out(o, 1, 4, sh);
        return MCL_OK;
    }
    case MCL_OP_INSTANCE_NORM: {
        mcl_tensor *g = y, *b = a->in[2];
        if (x->ndim != 4)
            return SHAPE_ERR("instance_norm: x %s must be [B,C,H,W]", mcl_shape_str(x, s1, sizeof s1));
        if (g->ndim != 1 || g->shape[0] != x->shape[1] || b->ndim != 1 || b->shape[0] != x->shape[1])
            return SHAPE_ERR("instance_norm: gamma %s and beta %s must be [%lld]",
                             mcl_shape_str(g, s1, sizeof s1), mcl_shape_str(b, s2, sizeof s2),
                             (long long)x->shape[1]);
        if (!(a->p.f[0] > 0.0f))
            return INVALID("instance_norm: eps = %g must be > 0", (double)a->p.f[0]);
        set_out(o, 0, 4, x->shape);
        set_out1(o, 1, x->shape[0] * x->shape[1]);
        set_out1(o, 2, x->shape[0] * x->shape[1]);
        return MCL_OK;
    }
    case MCL_OP_INORM_RELU: {
        mcl_tensor *g = y, *b = a->in[2];
        if (x->ndim != 4)
            return SHAPE_ERR("inorm_relu: x %s must be [B,C,H,W]", mcl_shape_str(x, s1, sizeof s1));
        if (g->ndim != 1 || g->shape[0] != x->shape[1] || b->ndim != 1 || b->shape[0] != x->shape[1])
            return SHAPE_ERR("inorm_relu: gamma %s and beta %s must be [%lld]", mcl_shape_str(g, s1, sizeof s1),
                             mcl_shape_str(b, s2, sizeof s2), (long long)x->shape[1]);
        if (!(a->p.f[0] > 0.0f)) return INVALID("inorm_relu: eps = %g must be > 0", (double)a->p.f[0]);
        set_out(o, 0, 4, x->shape);
        set_out1(o, 1, x->shape[0] * x->shape[1]);
        set_out1(o, 2, x->shape[0] * x->shape[1]);
        return MCL_OK;
    }
    case MCL_OP_INORM_ADD_POOL_RELU: {
        const mcl_tensor *sk = a->in[3];
        if (x->ndim != 4 || x->shape[2] < 2 || x->shape[3] < 2)
            return SHAPE_ERR("inorm_add_pool_relu: x %s must be [B,C,H,W] with H, W >= 2",
                             mcl_shape_str(x, s1, sizeof s1));
        if (!mcl_tensor_same_shape(sk, x))
            return SHAPE_ERR("inorm_add_pool_relu: the skip %s must have x's shape %s", mcl_shape_str(sk, s1, sizeof s1),
                             mcl_shape_str(x, s2, sizeof s2));
        if (a->p.f[1] != 0.0f || a->p.i[0] != 0)
            return INVALID("inorm_add_pool_relu: no dropout (f1 = %g, i0 = %lld must be 0)", (double)a->p.f[1],
                           (long long)a->p.i[0]);
        return tail_shapes(ctx, a, "inorm_add_pool_relu", 1, x->shape, o);
    }
    case MCL_OP_INORM_POOL_RELU: {
        if (x->ndim != 4 || x->shape[2] < 2 || x->shape[3] < 2)
            return SHAPE_ERR("inorm_pool_relu: x %s must be [B,C,H,W] with H, W >= 2",
                             mcl_shape_str(x, s1, sizeof s1));
        return tail_shapes(ctx, a, "inorm_pool_relu", 1, x->shape, o);
    }
    case MCL_OP_CONV_INORM_POOL_RELU: {
        mcl_tensor *w = y, *b = a->in[2];
        const int64_t pad = a->p.i[1];
        if (x->ndim != 4 || w->ndim != 4 || w->shape[1] != x->shape[1] || w->shape[2] != w->shape[3])
            return SHAPE_ERR("conv_inorm_pool_relu: x %s must be [B,C,H,W] and w %s [O,C,k,k]",
                             mcl_shape_str(x, s1, sizeof s1), mcl_shape_str(w, s2, sizeof s2));
        const int64_t O = w->shape[0], k = w->shape[2];
        if (b->ndim != 1 || b->shape[0] != O)
            return SHAPE_ERR("conv_inorm_pool_relu: bias %s must be [%lld]", mcl_shape_str(b, s1, sizeof s1),
                             (long long)O);
        if (pad < 0 || pad >= k)
            return INVALID("conv_inorm_pool_relu: padding %lld must be in [0, k = %lld)", (long long)pad,
                           (long long)k);
        const int64_t Ho = x->shape[2] + 2 * pad - k + 1, Wo = x->shape[3] + 2 * pad - k + 1;
        if (Ho < 2 || Wo < 2)
            return SHAPE_ERR("conv_inorm_pool_relu: the convolution of x %s by a %lldx%lld kernel with "
                             "padding %lld is %lldx%lld, less than 2x2",
                             mcl_shape_str(x, s1, sizeof s1), (long long)k, (long long)k, (long long)pad,
                             (long long)Ho, (long long)Wo);
        const int64_t cs[4] = {x->shape[0], O, Ho, Wo}; /* the convolution's output */
        return tail_shapes(ctx, a, "conv_inorm_pool_relu", 3, cs, o);
    }
    case MCL_OP_SRWM: {
        if (x->ndim != 4)
            return SHAPE_ERR("srwm: x %s must be [B,H,L,D]", mcl_shape_str(x, s1, sizeof s1));
        int64_t B = x->shape[0], H = x->shape[1], L = x->shape[2], D = x->shape[3];
        for (int k = 1; k <= 4; k++) {
            const mcl_tensor *w = a->in[k];
            int64_t cols = k == 4 ? 4 : D;
            if (w->ndim != 4 || w->shape[0] != B || w->shape[1] != H || w->shape[2] != D ||
                w->shape[3] != cols)
                return SHAPE_ERR("srwm: state %d %s must be [%lld,%lld,%lld,%lld]", k,
                                 mcl_shape_str(w, s1, sizeof s1), (long long)B, (long long)H,
                                 (long long)D, (long long)cols);
        }
        int64_t seq[4] = {B, H, L, D}, seq4[4] = {B, H, L, 4};
        set_out(o, 0, 4, seq);
        for (int k = 1; k <= 4; k++) set_out(o, k, 4, a->in[k]->shape);
        set_out(o, 5, 4, seq);  /* q  */
        set_out(o, 6, 4, seq);  /* k  */
        set_out(o, 7, 4, seq4); /* beta */
        set_out(o, 8, 4, seq);  /* dy */
        set_out(o, 9, 4, seq);  /* dq */
        set_out(o, 10, 4, seq); /* dk */
        set_out(o, 11, 4, seq4);/* db */
        return MCL_OK;
    }
    case MCL_OP_ATTN_KV: {
        const mcl_tensor *k = a->in[1], *v = a->in[2], *kb = a->in[3], *vb = a->in[4];
        char s3[64], s4[64], s5[64];
        if (x->ndim != 3 || k->ndim != 3 || v->ndim != 3 || kb->ndim != 3 || vb->ndim != 3)
            return SHAPE_ERR("attn_kv: q %s, k %s, v %s, kbuf %s, vbuf %s must all be 3-D "
                             "([S,H,D], [C,H,D])",
                             mcl_shape_str(x, s1, sizeof s1), mcl_shape_str(k, s2, sizeof s2),
                             mcl_shape_str(v, s3, sizeof s3), mcl_shape_str(kb, s4, sizeof s4),
                             mcl_shape_str(vb, s5, sizeof s5));
        const int64_t S = x->shape[0], Hq = x->shape[1], Dk = x->shape[2], Hk = k->shape[1];
        const int64_t Dv = v->shape[2], C = kb->shape[0];
        if (k->shape[0] != S || k->shape[2] != Dk || v->shape[0] != S || v->shape[1] != Hk ||
            Hq % Hk != 0)
            return SHAPE_ERR("attn_kv: q %s, k %s, v %s must be [S,Hq,Dk], [S,Hk,Dk], [S,Hk,Dv] "
                             "with Hk dividing Hq",
                             mcl_shape_str(x, s1, sizeof s1), mcl_shape_str(k, s2, sizeof s2),
                             mcl_shape_str(v, s3, sizeof s3));
        if (kb->shape[1] != Hk || kb->shape[2] != Dk || vb->shape[0] != C || vb->shape[1] != Hk ||
            vb->shape[2] != Dv)
            return SHAPE_ERR("attn_kv: kbuf %s and vbuf %s must be [C,%lld,%lld] and [C,%lld,%lld]",
                             mcl_shape_str(kb, s1, sizeof s1), mcl_shape_str(vb, s2, sizeof s2),
                             (long long)Hk, (long long)Dk, (long long)Hk, (long long)Dv);
        if (a->p.i[0] < 0 || a->p.i[0] > C || a->p.i[1] < 0 || a->p.i[1] >= C)
            return INVALID("attn_kv: ring state n = %lld, start = %lld outside 0 <= n <= C = %lld, "
                           "0 <= start < C",
                           (long long)a->p.i[0], (long long)a->p.i[1], (long long)C);
        if (a->p.i[2] < 0 || a->p.i[2] > 2)
            return INVALID("attn_kv: mask %lld must be 0 (causal), 1 (zero diagonal after the "
                           "softmax) or 2 (strictly causal)",
                           (long long)a->p.i[2]);
        if (!isfinite(a->p.f[0]) || !isfinite(a->p.f[1]) || a->p.f[1] < 0)
            return INVALID("attn_kv: scale %g and alibi %g must be finite, alibi >= 0",
                           (double)a->p.f[0], (double)a->p.f[1]);
        int64_t os[3] = {S, Hq, Dv}, ls[2] = {S, Hq};
        set_out(o, 0, 3, os);
        set_out(o, 1, 2, ls);
        return MCL_OK;
    }
    case MCL_OP_REL_ATTN: {
        const mcl_tensor *qp = a->in[1], *k = a->in[2], *v = a->in[3], *r = a->in[4];
        char s3[64], s4[64], s5[64];
        if (x->ndim != 4 || qp->ndim != 4 || k->ndim != 4 || v->ndim != 4 || r->ndim != 3)
            return SHAPE_ERR("rel_attn: qc %s, qp %s, k %s, v %s must be 4-D ([B,S,H,D], "
                             "[B,T,H,D], [B,T,H,Dv]) and r %s 3-D ([T,H,D])",
                             mcl_shape_str(x, s1, sizeof s1), mcl_shape_str(qp, s2, sizeof s2),
                             mcl_shape_str(k, s3, sizeof s3), mcl_shape_str(v, s4, sizeof s4),
                             mcl_shape_str(r, s5, sizeof s5));
        const int64_t B = x->shape[0], S = x->shape[1], H = x->shape[2], D = x->shape[3];
        const int64_t T = k->shape[1], Dv = v->shape[3];
        if (!mcl_tensor_same_shape(x, qp))
            return SHAPE_ERR("rel_attn: qc %s and qp %s must have the same shape [B,S,H,D]",
                             mcl_shape_str(x, s1, sizeof s1), mcl_shape_str(qp, s2, sizeof s2));
        if (k->shape[0] != B || k->shape[2] != H || k->shape[3] != D)
            return SHAPE_ERR("rel_attn: k %s must be [B,T,H,D] = [%lld,T,%lld,%lld] (qc %s)",
                             mcl_shape_str(k, s1, sizeof s1), (long long)B, (long long)H,
                             (long long)D, mcl_shape_str(x, s2, sizeof s2));
        if (v->shape[0] != B || v->shape[1] != T || v->shape[2] != H)
            return SHAPE_ERR("rel_attn: v %s must be [B,T,H,Dv] = [%lld,%lld,%lld,Dv] (k %s)",
                             mcl_shape_str(v, s1, sizeof s1), (long long)B, (long long)T,
                             (long long)H, mcl_shape_str(k, s2, sizeof s2));
        if (T < S)
            return SHAPE_ERR("rel_attn: k %s has T = %lld rows, fewer than the S = %lld queries "
                             "of qc %s (T = M + S with M >= 0 memory rows)",
                             mcl_shape_str(k, s1, sizeof s1), (long long)T, (long long)S,
                             mcl_shape_str(x, s2, sizeof s2));
        if (r->shape[0] != T || r->shape[1] != H || r->shape[2] != D)
            return SHAPE_ERR("rel_attn: r %s must be [T,H,D] = [%lld,%lld,%lld], one row per "
                             "distance 0..T-1",
                             mcl_shape_str(r, s1, sizeof s1), (long long)T, (long long)H,
                             (long long)D);
        if (!isfinite(a->p.f[0]))
            return INVALID("rel_attn: scale %g must be finite", (double)a->p.f[0]);
        if (a->p.i[0] < 0)
            return INVALID("rel_attn: window %lld must be >= 0 (0 = unlimited)",
                           (long long)a->p.i[0]);
        int64_t os[4] = {B, S, H, Dv}, ls[3] = {B, S, H};
        set_out(o, 0, 4, os);
        set_out(o, 1, 3, ls);
        return MCL_OK;
    }
    case MCL_OP_KV_PUSH: {
        if (x->ndim != 3 || y->ndim != 3 || x->shape[1] != y->shape[1] || x->shape[2] != y->shape[2])
            return SHAPE_ERR("kv_push: buf %s and x %s must be [C,H,D] and [S,H,D]",
                             mcl_shape_str(x, s1, sizeof s1), mcl_shape_str(y, s2, sizeof s2));
        if (a->p.i[0] < 0 || a->p.i[0] >= x->shape[0])
            return INVALID("kv_push: position %lld outside the ring's %lld rows",
                           (long long)a->p.i[0], (long long)x->shape[0]);
        return MCL_OK;
    }
    case MCL_OP_GRAD_PREPROC: {
        const float P = a->p.f[0];
        if (!(P > 0.0f && P <= 87.0f))
            return INVALID("grad_preproc: P = %g must be in (0, 87] (finite and > 0; at most 87 so "
                           "that e^P and e^-P are normal floats)",
                           (double)P);
        if (x->ndim >= MCL_MAX_DIMS)
            return SHAPE_ERR("grad_preproc: z %s has %d dims already; the output appends a dim "
                             "of 2 and tensors have at most %d dims",
                             mcl_shape_str(x, s1, sizeof s1), x->ndim, MCL_MAX_DIMS);
        int64_t sh[4];
        memcpy(sh, x->shape, sizeof sh);
        sh[x->ndim] = 2;
        if ((s = mcl_shape_check(ctx, op, x->ndim + 1, sh)) != MCL_OK) return s;
        set_out(o, 0, x->ndim + 1, sh);
        return MCL_OK;
    }
    case MCL_OP_SMN_AVG_Z: {
        const mcl_tensor *idx = a->in[2];
        const float P = a->p.f[3];
        if ((s = need_same(ctx, op, x, y, "I", "G")) != MCL_OK) return s;
        if (mcl_tensor_numel(x) >= SMN_MAX_N)
            return SHAPE_ERR("smn_avg_z: I %s has %lld elements; at most 2^24 - 1 (indices are "
                             "stored as floats, exact below 2^24)",
                             mcl_shape_str(x, s1, sizeof s1), (long long)mcl_tensor_numel(x));
        if (idx->ndim != 1)
            return SHAPE_ERR("smn_avg_z: idx %s must be [m] (a list of flat indices into I)",
                             mcl_shape_str(idx, s1, sizeof s1));
        if (!(P > 0.0f && P <= 87.0f))
            return INVALID("smn_avg_z: P = %g must be in (0, 87]", (double)P);
        if (!isfinite(a->p.f[0]) || !isfinite(a->p.f[1]) || !isfinite(a->p.f[2]))
            return INVALID("smn_avg_z: gamma, beta1, beta2 must be finite");
        if (a->p.i[0] != 0 && a->p.i[0] != 1)
            return INVALID("smn_avg_z: i0 = %lld must be 0 or 1 (1: idx is non-decreasing)", (long long)a->p.i[0]);
        const int64_t zs[2] = {idx->shape[0], 2};
        set_out(o, 0, x->ndim, x->shape);
        set_out(o, 1, 2, zs);
        return MCL_OK;
    }
    case MCL_OP_SMN_WRITE: {
        const mcl_tensor *idx = y, *zs = a->in[2];
        int64_t H;
        if ((s = smn_m0_check(ctx, x, a->p.f[0])) != MCL_OK) return s;
        if ((s = smn_phi_check(ctx, a->in + 3, &H)) != MCL_OK) return s;
        if (idx->ndim != 1)
            return SHAPE_ERR("smn_write: idx %s must be [m] (a list of flat indices into M0)",
                             mcl_shape_str(idx, s1, sizeof s1));
        const int64_t m = idx->shape[0];
        if (zs->ndim != 2 || zs->shape[0] != m || zs->shape[1] != 2)
            return SHAPE_ERR("smn_write: zs %s must be [%lld,2] for idx %s",
                             mcl_shape_str(zs, s1, sizeof s1), (long long)m,
                             mcl_shape_str(idx, s2, sizeof s2));
        if (m > mcl_tensor_numel(x))
            return SHAPE_ERR("smn_write: idx %s has more entries than M0 %s has elements (the "
                             "indices must be distinct)",
                             mcl_shape_str(idx, s1, sizeof s1), mcl_shape_str(x, s2, sizeof s2));
        set_out(o, 0, x->ndim, x->shape);
        return MCL_OK;
    }
    case MCL_OP_SMN_WRITE_EFF: {
        const mcl_tensor *idx = y, *zs = a->in[2];
        int64_t H;
        if ((s = smn_m0_check(ctx, x, a->p.f[0])) != MCL_OK) return s;
        if ((s = smn_phi_check(ctx, a->in + 3, &H)) != MCL_OK) return s;
        if ((s = need_same(ctx, op, x, a->in[9], "M", "W")) != MCL_OK) return s;
        if ((s = need_same(ctx, op, x, a->in[10], "M", "E")) != MCL_OK) return s;
        if (idx->ndim != 1)
            return SHAPE_ERR("smn_write_eff: idx %s must be [m] (a list of flat indices into M)",
                             mcl_shape_str(idx, s1, sizeof s1));
        const int64_t m = idx->shape[0];
        if (zs->ndim != 2 || zs->shape[0] != m || zs->shape[1] != 2)
            return SHAPE_ERR("smn_write_eff: zs %s must be [%lld,2] for idx %s",
                             mcl_shape_str(zs, s1, sizeof s1), (long long)m,
                             mcl_shape_str(idx, s2, sizeof s2));
        if (m > mcl_tensor_numel(x))
            return SHAPE_ERR("smn_write_eff: idx %s has more entries than M %s has elements (the "
                             "indices must be distinct)",
                             mcl_shape_str(idx, s1, sizeof s1), mcl_shape_str(x, s2, sizeof s2));
        return MCL_OK;
    }
    case MCL_OP_SMN_AVG_WRITE: {
        const mcl_tensor *idx = y, *zs = a->in[2];
        const float P = a->p.f[4];
        int64_t H;
        if ((s = smn_m0_check(ctx, x, a->p.f[0])) != MCL_OK) return s;
        if ((s = smn_phi_check(ctx, a->in + 3, &H)) != MCL_OK) return s;
        if ((s = need_same(ctx, op, x, a->in[9], "M", "W")) != MCL_OK) return s;
        if ((s = need_same(ctx, op, x, a->in[10], "M", "E")) != MCL_OK) return s;
        if ((s = need_same(ctx, op, x, a->in[11], "M", "I")) != MCL_OK) return s;
        if ((s = need_same(ctx, op, x, a->in[12], "M", "G")) != MCL_OK) return s;
        if (idx->ndim != 1)
            return SHAPE_ERR("smn_avg_write: idx %s must be [m] (a list of flat indices into M)",
                             mcl_shape_str(idx, s1, sizeof s1));
        const int64_t m = idx->shape[0];
        if (zs->ndim != 2 || zs->shape[0] != m || zs->shape[1] != 2)
            return SHAPE_ERR("smn_avg_write: zs %s must be [%lld,2] for idx %s",
                             mcl_shape_str(zs, s1, sizeof s1), (long long)m,
                             mcl_shape_str(idx, s2, sizeof s2));
        if (m > mcl_tensor_numel(x))
            return SHAPE_ERR("smn_avg_write: idx %s has more entries than M %s has elements (the "
                             "indices must be distinct)",
                             mcl_shape_str(idx, s1, sizeof s1), mcl_shape_str(x, s2, sizeof s2));
        if (!(P > 0.0f && P <= 87.0f))
            return INVALID("smn_avg_write: P = %g must be in (0, 87]", (double)P);
        if (!isfinite(a->p.f[1]) || !isfinite(a->p.f[2]) || !isfinite(a->p.f[3]))
            return INVALID("smn_avg_write: gamma, beta1, beta2 must be finite");
        return MCL_OK;
    }
    case MCL_OP_SMN_WRITE_ADD: {
        const mcl_tensor *idx = y, *zs = a->in[2];
        int64_t H;
        if ((s = smn_m0_check(ctx, x, a->p.f[0])) != MCL_OK) return s;
        if ((s = smn_phi_check(ctx, a->in + 3, &H)) != MCL_OK) return s;
        if ((s = need_same(ctx, op, x, a->in[9], "M0", "W")) != MCL_OK) return s;
        if (idx->ndim != 1)
            return SHAPE_ERR("smn_write_add: idx %s must be [m] (a list of flat indices into M0)",
                             mcl_shape_str(idx, s1, sizeof s1));
        const int64_t m = idx->shape[0];
        if (zs->ndim != 2 || zs->shape[0] != m || zs->shape[1] != 2)
            return SHAPE_ERR("smn_write_add: zs %s must be [%lld,2] for idx %s",
                             mcl_shape_str(zs, s1, sizeof s1), (long long)m,
                             mcl_shape_str(idx, s2, sizeof s2));
        if (m > mcl_tensor_numel(x))
            return SHAPE_ERR("smn_write_add: idx %s has more entries than M0 %s has elements (the "
                             "indices must be distinct)",
                             mcl_shape_str(idx, s1, sizeof s1), mcl_shape_str(x, s2, sizeof s2));
        if (a->p.i[0] != 0 && a->p.i[0] != 1)
            return INVALID("smn_write_add: i0 = %lld must be 0 or 1 (1: M0 taken as zeros)", (long long)a->p.i[0]);
        set_out(o, 0, x->ndim, x->shape);
        return MCL_OK;
    }
    case MCL_OP_WCST_ACT: {
        const mcl_tensor *lg = y, *cards = a->in[2], *act = a->in[3], *rew = a->in[4];
        if (x->ndim != 1 || x->shape[0] < 5)
            return SHAPE_ERR("wcst_act: state %s must be [S], S >= 5", mcl_shape_str(x, s1, sizeof s1));
        if (lg->ndim != 2 || lg->shape[1] > 64)
            return SHAPE_ERR("wcst_act: logits %s must be [L,A], A <= 64", mcl_shape_str(lg, s1, sizeof s1));
        const int64_t L = lg->shape[0];
        if (cards->ndim != 2 || cards->shape[0] != L || cards->shape[1] != 3)
            return SHAPE_ERR("wcst_act: cards %s must be [%lld,3]", mcl_shape_str(cards, s1, sizeof s1),
                             (long long)L);
        if (act->ndim != 1 || act->shape[0] != L || rew->ndim != 1 || rew->shape[0] != L)
            return SHAPE_ERR("wcst_act: act %s and reward %s must be [%lld]", mcl_shape_str(act, s1, sizeof s1),
                             mcl_shape_str(rew, s2, sizeof s2), (long long)L);
        if (x->shape[0] >= (1 << 24) || L >= (1 << 24))
            return SHAPE_ERR("wcst_act: state %s or %lld cards beyond 2^24", mcl_shape_str(x, s1, sizeof s1),
                             (long long)L);
        if (a->p.i[0] < 1 || a->p.i[0] >= (1 << 24))
            return INVALID("wcst_act: solve episodes %lld must be in 1..2^24", (long long)a->p.i[0]);
        if (!isfinite(a->p.f[0]) || !isfinite(a->p.f[1]))
            return INVALID("wcst_act: rewards %g, %g must be finite", (double)a->p.f[0], (double)a->p.f[1]);
        return MCL_OK;
    }
    case MCL_OP_SGD_STEP:
        if ((s = need_same(ctx, op, x, y, "param", "grad")) != MCL_OK) return s;
        return need_same(ctx, op, x, a->in[2], "param", "momentum");
    case MCL_OP_ADAM_STEP:
        if ((s = need_same(ctx, op, x, y, "param", "grad")) != MCL_OK) return s;
        if ((s = need_same(ctx, op, x, a->in[2], "param", "m")) != MCL_OK) return s;
        if ((s = need_same(ctx, op, x, a->in[3], "param", "v")) != MCL_OK) return s;
        if (a->p.i[1] < 1) return INVALID("adam_step: step %lld must be >= 1", (long long)a->p.i[1]);
        if (!(a->p.f[1] >= 0 && a->p.f[1] < 1 && a->p.f[2] >= 0 && a->p.f[2] < 1 && a->p.f[3] > 0))
            return INVALID("adam_step: need 0 <= beta1, beta2 < 1 and eps > 0");
        return MCL_OK;
    case MCL_OP_DYN_STEP:
        if ((s = need_same(ctx, op, x, y, "param", "grad")) != MCL_OK) return s;
        if ((s = need_same(ctx, op, x, a->in[2], "param", "w0")) != MCL_OK) return s;
        if (!isfinite(a->p.f[0]) || !(a->p.f[1] >= 0) || !isfinite(a->p.f[1]))
            return INVALID("dyn_step: lr %g must be finite and decay %g finite and >= 0",
                           (double)a->p.f[0], (double)a->p.f[1]);
        return MCL_OK;
    case MCL_OP_CLIP_SCALE:
        if (mcl_tensor_numel(y) != 1)
            return SHAPE_ERR("clip_scale: sum of squares %s must have one element",
                             mcl_shape_str(y, s1, sizeof s1));
        if (!(a->p.f[0] > 0)) return INVALID("clip_scale: max_norm %g must be > 0", (double)a->p.f[0]);
        return MCL_OK;
    case MCL_OP_COUNT:
        break;
    }
    return INVALID("unknown op %d", (int)a->op);
}

/* ---- dispatch ---- */

mcl_status mcl_op_run(mcl_ctx *ctx, mcl_op_args *a)
{
    if (!ctx) return MCL_ERR_NULL;
    if (!a) return mcl_ctx_set_error(ctx, MCL_ERR_NULL, "op_run: args is NULL");
    if ((unsigned)a->op >= MCL_OP_COUNT)
        return mcl_ctx_set_error(ctx, MCL_ERR_INVALID, "op_run: unknown op %d", (int)a->op);
    const mcl_op_info *info = &mcl_op_table[a->op];
    if (!a->out_given)
        for (int k = 0; k < MCL_MAX_OUT; k++) a->out[k] = NULL;
    int needs = 0;
    for (int k = 0; k < info->n_in; k++) {
        if (!a->in[k]) {
            /* With an error held, the NULL is an earlier op's failed result: propagate it and
             * keep that op's message (the root cause) rather than replace it (tensor.h). */
            if (ctx->status == MCL_OK)
                mcl_ctx_set_error(ctx, MCL_ERR_NULL, "%s: input %d is NULL", info->name, k);
            return MCL_ERR_NULL;
        }
        if (a->in[k]->ctx != ctx)
            return mcl_ctx_set_error(ctx, MCL_ERR_INVALID,
                                     "%s: input %d belongs to another context", info->name, k);
        if (a->in[k]->flags & MCL_TF_NEEDS_GRAD) needs = 1;
    }
    out_shapes os;
    memset(&os, 0, sizeof os);
    mcl_status s = infer(ctx, a, &os);
    if (s != MCL_OK) return s;
    if (a->op == MCL_OP_SLICE && a->p.i[3] == 1 && a->p.i[0] == 0 && !a->out_given) {
        /* mcl_slice_rows: whole rows of axis 0 are one contiguous block, so the result is a
         * view of the input's buffer (no backend call); backward is the slice's */
        const int64_t row = mcl_tensor_numel(a->in[0]) / a->in[0]->shape[0];
        a->out[0] = mcl_tensor_alias_at(ctx, a->in[0], a->p.i[1] * row, os.ndim[0], os.shape[0]);
        if (!a->out[0]) return mcl_ctx_status(ctx);
        goto record;
    }
    if (a->op == MCL_OP_RESHAPE && !a->out_given) {
        /* reshape keeps the row-major order, so its result is a view of the input's buffer:
         * no copy, no backend call (the backends' reshape forward serves caller-given
         * outputs). Backward still adds gout into the input's gradient (ops.def). */
        a->out[0] = mcl_tensor_alias(ctx, a->in[0], os.ndim[0], os.shape[0]);
        if (!a->out[0]) return mcl_ctx_status(ctx);
        goto record;
    }
    for (int k = 0; k < info->n_out; k++) {
        if (a->out_given) {
            mcl_tensor *t = a->out[k];
            int ok = t && t->ctx == ctx && t->ndim == os.ndim[k];
            for (int d = 0; ok && d < t->ndim; d++) ok = t->shape[d] == os.shape[k][d];
            if (!ok)
                return mcl_ctx_set_error(ctx, MCL_ERR_SHAPE,
                                         "%s: caller-provided output %d is missing or has the wrong "
                                         "shape or context", info->name, k);
            continue;
        }
        a->out[k] = mcl_tensor_alloc(ctx, os.ndim[k], os.shape[k], 1);
        if (!a->out[k]) return mcl_ctx_status(ctx);
    }
    const uint64_t seq = mcl_ctx_error_seq(ctx);
    ctx->be->stats.op_calls++;
    mcl_op_forget_written(a, 0);
    if (ctx->profile) mcl_profile_begin(ctx->profile, ctx->be);
    s = ctx->be->ops[a->op].fwd(ctx->be, a);
    if (s == MCL_OK && ctx->be->post_op) s = ctx->be->post_op(ctx->be, a, 0);
    if (s == MCL_OK && ctx->profile) s = mcl_profile_tick(ctx->profile, ctx->be, a->op, 0);
    if (s == MCL_OK && ctx->bound) mcl_bound_tally_add(ctx->bound, a, 0);
    if (s != MCL_OK) {
        char sb[64];
        return mcl_ctx_set_error_since(ctx, seq, s, "%s forward on %s failed (input 0 %s)", info->name,
                                 ctx->be->name, mcl_shape_str(a->in[0], sb, sizeof sb));
    }
record:
    if (needs && info->n_diff_out > 0 && ctx->no_grad == 0) {
        for (int k = 0; k < info->n_diff_out; k++) a->out[k]->flags |= MCL_TF_NEEDS_GRAD;
        if ((s = mcl_tape_record(ctx, a)) != MCL_OK) return s;
    }
    return MCL_OK;
}

mcl_status mcl_op_backward(mcl_ctx *ctx, mcl_op_args *a)
{
    if (!ctx) return MCL_ERR_NULL;
    if (!a || (unsigned)a->op >= MCL_OP_COUNT)
        return mcl_ctx_set_error(ctx, MCL_ERR_INVALID, "op_backward: bad args");
    const mcl_op_info *info = &mcl_op_table[a->op];
    if (info->n_diff_out == 0)
        return mcl_ctx_set_error(ctx, MCL_ERR_INVALID, "op_backward: %s has no backward", info->name);
    for (int k = 0; k < info->n_diff_out; k++) {
        if (!a->gout[k] || !mcl_tensor_same_shape(a->gout[k], a->out[k]))
            return mcl_ctx_set_error(ctx, MCL_ERR_SHAPE,
                                     "op_backward: %s gout[%d] missing or wrong shape", info->name, k);
    }
    for (int k = 0; k < info->n_in; k++)
        if (a->gin[k] && !mcl_tensor_same_shape(a->gin[k], a->in[k]))
            return mcl_ctx_set_error(ctx, MCL_ERR_SHAPE, "op_backward: %s gin[%d] has the wrong shape",
                                     info->name, k);
    const uint64_t seq = mcl_ctx_error_seq(ctx);
    ctx->be->stats.op_calls++;
    mcl_op_forget_written(a, 1);
    if (ctx->profile) mcl_profile_begin(ctx->profile, ctx->be);
    mcl_status s = ctx->be->ops[a->op].bwd(ctx->be, a);
    if (s == MCL_OK && ctx->be->post_op) s = ctx->be->post_op(ctx->be, a, 1);
    if (s == MCL_OK && ctx->profile) s = mcl_profile_tick(ctx->profile, ctx->be, a->op, 1);
    if (s == MCL_OK && ctx->bound) mcl_bound_tally_add(ctx->bound, a, 1);
    if (s != MCL_OK) return mcl_ctx_set_error_since(ctx, seq, s, "%s backward failed", info->name);
    return MCL_OK;
}

/* ---- named wrappers ---- */

static mcl_tensor *run1(mcl_ctx *ctx, mcl_op_args *a)
{
    return mcl_op_run(ctx, a) == MCL_OK ? a->out[0] : NULL;
}

static mcl_tensor *unary(mcl_ctx *ctx, mcl_op op, mcl_tensor *x, float f0)
{
    mcl_op_args a;
    memset(&a, 0, sizeof a);
    a.op = op;
    a.in[0] = x;
    a.p.f[0] = f0;
    return run1(ctx, &a);
}

static mcl_tensor *binary(mcl_ctx *ctx, mcl_op op, mcl_tensor *x, mcl_tensor *y)
{
    mcl_op_args a;
    memset(&a, 0, sizeof a);
    a.op = op;
    a.in[0] = x;
    a.in[1] = y;
    return run1(ctx, &a);
}

mcl_tensor *mcl_add(mcl_ctx *ctx, mcl_tensor *a, mcl_tensor *b) { return binary(ctx, MCL_OP_ADD, a, b); }
mcl_tensor *mcl_sub(mcl_ctx *ctx, mcl_tensor *a, mcl_tensor *b) { return binary(ctx, MCL_OP_SUB, a, b); }
mcl_tensor *mcl_mul(mcl_ctx *ctx, mcl_tensor *a, mcl_tensor *b) { return binary(ctx, MCL_OP_MUL, a, b); }
mcl_tensor *mcl_scale(mcl_ctx *ctx, mcl_tensor *a, float alpha) { return unary(ctx, MCL_OP_SCALE, a, alpha); }
mcl_tensor *mcl_bias_add(mcl_ctx *ctx, mcl_tensor *x, mcl_tensor *bias)
{
    return binary(ctx, MCL_OP_BIAS_ADD, x, bias);
}
mcl_tensor *mcl_copy(mcl_ctx *ctx, mcl_tensor *a) { return unary(ctx, MCL_OP_COPY, a, 0); }
mcl_tensor *mcl_relu(mcl_ctx *ctx, mcl_tensor *a) { return unary(ctx, MCL_OP_RELU, a, 0); }
mcl_tensor *mcl_leaky_relu(mcl_ctx *ctx, mcl_tensor *a, float slope)
{
    return unary(ctx, MCL_OP_LEAKY_RELU, a, slope);
}
mcl_tensor *mcl_elu(mcl_ctx *ctx, mcl_tensor *a, float alpha) { return unary(ctx, MCL_OP_ELU, a, alpha); }
mcl_tensor *mcl_sigmoid(mcl_ctx *ctx, mcl_tensor *a) { return unary(ctx, MCL_OP_SIGMOID, a, 0); }
mcl_tensor *mcl_tanh(mcl_ctx *ctx, mcl_tensor *a) { return unary(ctx, MCL_OP_TANH, a, 0); }
mcl_tensor *mcl_gelu(mcl_ctx *ctx, mcl_tensor *a) { return unary(ctx, MCL_OP_GELU, a, 0); }
mcl_tensor *mcl_exp(mcl_ctx *ctx, mcl_tensor *a) { return unary(ctx, MCL_OP_EXP, a, 0); }
mcl_tensor *mcl_log(mcl_ctx *ctx, mcl_tensor *a) { return unary(ctx, MCL_OP_LOG, a, 0); }
mcl_tensor *mcl_bias_gelu(mcl_ctx *ctx, mcl_tensor *x, mcl_tensor *bias)
{
    return binary(ctx, MCL_OP_BIAS_GELU, x, bias);
}
mcl_status mcl_bias_add2(mcl_ctx *ctx, mcl_tensor *x, mcl_tensor *b0, mcl_tensor *b1, mcl_tensor *out[2])
{
    if (!ctx) return MCL_ERR_NULL;
    if (!out) return mcl_ctx_set_error(ctx, MCL_ERR_NULL, "bias_add2: out is NULL");
    out[0] = out[1] = NULL;
    mcl_op_args a;
    memset(&a, 0, sizeof a);
    a.op = MCL_OP_BIAS_ADD2;
    a.in[0] = x;
    a.in[1] = b0;
    a.in[2] = b1;
    mcl_status s = mcl_op_run(ctx, &a);
    if (s != MCL_OK) return s;
    out[0] = a.out[0];
    out[1] = a.out[1];
    return MCL_OK;
}

mcl_tensor *mcl_matmul(mcl_ctx *ctx, mcl_tensor *a, mcl_tensor *b, int trans_a, int trans_b)
{
    mcl_op_args r;
    memset(&r, 0, sizeof r);
    r.op = MCL_OP_MATMUL;
    r.in[0] = a;
    r.in[1] = b;
    r.p.i[0] = trans_a != 0;
    r.p.i[1] = trans_b != 0;
    return run1(ctx, &r);
}

mcl_tensor *mcl_sum(mcl_ctx *ctx, mcl_tensor *a) { return unary(ctx, MCL_OP_SUM, a, 0); }
mcl_tensor *mcl_mean(mcl_ctx *ctx, mcl_tensor *a) { return unary(ctx, MCL_OP_MEAN, a, 0); }
mcl_tensor *mcl_sumsq(mcl_ctx *ctx, mcl_tensor *a) { return unary(ctx, MCL_OP_SUMSQ, a, 0); }
mcl_tensor *mcl_sum_last(mcl_ctx *ctx, mcl_tensor *a) { return unary(ctx, MCL_OP_SUM_LAST, a, 0); }
mcl_tensor *mcl_mean_last(mcl_ctx *ctx, mcl_tensor *a) { return unary(ctx, MCL_OP_MEAN_LAST, a, 0); }
mcl_tensor *mcl_softmax(mcl_ctx *ctx, mcl_tensor *a) { return unary(ctx, MCL_OP_SOFTMAX, a, 0); }
mcl_tensor *mcl_log_softmax(mcl_ctx *ctx, mcl_tensor *a) { return unary(ctx, MCL_OP_LOG_SOFTMAX, a, 0); }

/* A norm op of x, gamma, beta (and skip, when not NULL: in[3]) with f0 = eps: layer_norm,
 * instance_norm, inorm_relu, inorm_add_pool_relu */
static mcl_tensor *norm_op(mcl_ctx *ctx, mcl_op op, mcl_tensor *x, mcl_tensor *gamma, mcl_tensor *beta,
                           mcl_tensor *skip, float eps)
{
    mcl_op_args a;
    memset(&a, 0, sizeof a);
    a.op = op;
    a.in[0] = x;
    a.in[1] = gamma;
    a.in[2] = beta;
    a.in[3] = skip;
    a.p.f[0] = eps;
    return run1(ctx, &a);
}

mcl_tensor *mcl_layer_norm(mcl_ctx *ctx, mcl_tensor *x, mcl_tensor *gamma, mcl_tensor *beta, float eps)
{
    return norm_op(ctx, MCL_OP_LAYER_NORM, x, gamma, beta, NULL, eps);
}

mcl_tensor *mcl_cross_entropy(mcl_ctx *ctx, mcl_tensor *logits, mcl_tensor *targets)
{
    return binary(ctx, MCL_OP_CROSS_ENTROPY, logits, targets);
}

mcl_tensor *mcl_concat(mcl_ctx *ctx, mcl_tensor *a, mcl_tensor *b, int axis)
{
    mcl_op_args r;
    memset(&r, 0, sizeof r);
    r.op = MCL_OP_CONCAT;
    r.in[0] = a;
    r.in[1] = b;
    r.p.i[0] = axis;
    return run1(ctx, &r);
}

mcl_tensor *mcl_slice(mcl_ctx *ctx, mcl_tensor *a, int axis, int64_t start, int64_t len)
{
    mcl_op_args r;
    memset(&r, 0, sizeof r);
    r.op = MCL_OP_SLICE;
    r.in[0] = a;
    r.p.i[0] = axis;
    r.p.i[1] = start;
    r.p.i[2] = len;
    if (a && ctx && a->ctx == ctx && ctx->status == MCL_OK && axis >= -a->ndim && axis < a->ndim &&
        start == 0 && len == a->shape[axis < 0 ? axis + a->ndim : axis])
        return mcl_reshape(ctx, a, a->ndim, a->shape); /* the whole axis: a view, no kernel */
    return run1(ctx, &r);
}

mcl_tensor *mcl_slice_rows(mcl_ctx *ctx, mcl_tensor *a, int64_t start, int64_t len)
{
    mcl_op_args r;
    memset(&r, 0, sizeof r);
    r.op = MCL_OP_SLICE;
    r.in[0] = a;
    r.p.i[0] = 0;
    r.p.i[1] = start;
    r.p.i[2] = len;
    r.p.i[3] = 1; /* the view (mcl_op_run); the backends ignore it */
    return run1(ctx, &r);
}

mcl_tensor *mcl_reshape(mcl_ctx *ctx, mcl_tensor *a, int ndim, const int64_t *shape)
{
    if (!shape || ndim < 1 || ndim > MCL_MAX_DIMS) {
        mcl_ctx_set_error(ctx, MCL_ERR_INVALID, "reshape: %d dims or NULL shape", ndim);
        return NULL;
    }
    mcl_op_args r;
    memset(&r, 0, sizeof r);
    r.op = MCL_OP_RESHAPE;
    r.in[0] = a;
    r.p.i[0] = ndim;
    for (int d = 0; d < ndim; d++) r.p.i[1 + d] = shape[d];
    return run1(ctx, &r);
}

mcl_tensor *mcl_transpose(mcl_ctx *ctx, mcl_tensor *a) { return unary(ctx, MCL_OP_TRANSPOSE, a, 0); }

mcl_tensor *mcl_permute(mcl_ctx *ctx, mcl_tensor *a, const int perm[4])
{
    if (!perm) {
        mcl_ctx_set_error(ctx, MCL_ERR_NULL, "permute: perm is NULL");
        return NULL;
    }
    if (a && a->ctx == ctx && ctx && ctx->status == MCL_OK && a->ndim == 4) {
        /* A permutation that only moves dims of size 1 keeps the row-major order of the
         * elements: the result is a reshape, a view (no kernel, and its gradient is handed
         * over as a view too: tape.c). */
        int seen = 0, ordered = 1, last = -1;
        int64_t sh[4];
        for (int d = 0; d < 4; d++) {
            const int p = perm[d];
            if (p < 0 || p > 3 || (seen & (1 << p))) {
                ordered = 0;
                break;
            }
            seen |= 1 << p;
            sh[d] = a->shape[p];
            if (a->shape[p] == 1) continue;
            if (p < last) ordered = 0;
            last = p;
        }
        if (ordered) return mcl_reshape(ctx, a, 4, sh);
    }
    mcl_op_args r;
    memset(&r, 0, sizeof r);
    r.op = MCL_OP_PERMUTE;
    r.in[0] = a;
    for (int d = 0; d < 4; d++) r.p.i[d] = perm[d];
    return run1(ctx, &r);
}

mcl_tensor *mcl_one_hot(mcl_ctx *ctx, mcl_tensor *idx, int64_t depth)
{
    mcl_op_args r;
    memset(&r, 0, sizeof r);
    r.op = MCL_OP_ONE_HOT;
    r.in[0] = idx;
    r.p.i[0] = depth;
    return run1(ctx, &r);
}

mcl_tensor *mcl_embedding(mcl_ctx *ctx, mcl_tensor *table, mcl_tensor *idx)
{
    return binary(ctx, MCL_OP_EMBEDDING, table, idx);
}

/* The one dropout op every entry point below runs (its parameters: ref/dropout.c):
 * p.f[0] = p, p.u[0] = seed, p.u[1] = stream, p.u[2] = counter, p.u[3] = stream step between
 * segments of seg elements (p.i[0]; 0: one segment), p.i[1] = 1: relu first. */
static mcl_tensor *dropout_op(mcl_ctx *ctx, mcl_tensor *a, float p, uint64_t seed, uint64_t stream,
                              uint64_t counter, uint64_t step, int64_t seg, int relu_first)
{
    mcl_op_args r;
    memset(&r, 0, sizeof r);
    r.op = MCL_OP_DROPOUT;
    r.in[0] = a;
    r.p.f[0] = p;
    r.p.u[0] = seed;
    r.p.u[1] = stream;
    r.p.u[2] = counter;
    r.p.u[3] = step;
    r.p.i[0] = seg;
    r.p.i[1] = relu_first;
    return run1(ctx, &r);
}

/* Outside training or at p = 0 no mask is drawn; p must still be in [0, 1). 0 when valid. */
static int dropout_p_invalid(mcl_ctx *ctx, float p)
{
    if (p >= 0.0f && p < 1.0f) return 0;
    mcl_ctx_set_error(ctx, MCL_ERR_INVALID, "dropout: p = %g must be in [0, 1)", (double)p);
    return 1;
}

mcl_tensor *mcl_dropout_keyed(mcl_ctx *ctx, mcl_tensor *a, float p, uint64_t seed, uint64_t stream,
                              uint64_t counter)
{
    return dropout_op(ctx, a, p, seed, stream, counter, 0, 0, 0);
}

mcl_tensor *mcl_dropout_segments(mcl_ctx *ctx, mcl_tensor *a, float p, uint64_t seed,
                                 uint64_t stream, uint64_t step, int64_t seg)
{
    return dropout_op(ctx, a, p, seed, stream, 0, step, seg, 0);
}

mcl_tensor *mcl_dropout_relu(mcl_ctx *ctx, mcl_tensor *a, float p, int training)
{
    if (!ctx) return NULL;
    if (!training || p == 0.0f) /* no dropout: relu alone, no stream drawn */
        return dropout_p_invalid(ctx, p) ? NULL : mcl_relu(ctx, a);
    return dropout_op(ctx, a, p, ctx->seed, mcl_ctx_next_stream(ctx), 0, 0, 0, 1);
}

mcl_tensor *mcl_dropout(mcl_ctx *ctx, mcl_tensor *a, float p, int training)
{
    if (!ctx) return NULL;
    if (!training || p == 0.0f) { /* the identity: a view (a reshape to the same shape), no kernel */
        if (dropout_p_invalid(ctx, p)) return NULL;
        return a ? mcl_reshape(ctx, a, a->ndim, a->shape) : NULL;
    }
    return dropout_op(ctx, a, p, ctx->seed, mcl_ctx_next_stream(ctx), 0, 0, 0, 0);
}

/* out = a + dropout(x): the add_dropout op with an explicit key (what the op records) */
mcl_tensor *mcl_add_dropout_keyed(mcl_ctx *ctx, mcl_tensor *a, mcl_tensor *x, float p,
                                  uint64_t seed, uint64_t stream, uint64_t counter)
{
    mcl_op_args r;
    memset(&r, 0, sizeof r);
    r.op = MCL_OP_ADD_DROPOUT;
    r.in[0] = a;
    r.in[1] = x;
    r.p.f[0] = p;
    r.p.u[0] = seed;
    r.p.u[1] = stream;
    r.p.u[2] = counter;
    return run1(ctx, &r);
}

mcl_tensor *mcl_add_dropout(mcl_ctx *ctx, mcl_tensor *a, mcl_tensor *x, float p, int training)
{
    if (!ctx) return NULL;
    if (!training || p == 0.0f) /* no dropout: the add alone, no stream drawn */
        return dropout_p_invalid(ctx, p) ? NULL : mcl_add(ctx, a, x);
    return mcl_add_dropout_keyed(ctx, a, x, p, ctx->seed, mcl_ctx_next_stream(ctx), 0);
}

/* out = dropout(relu(x + b)): the bias_dropout_relu op with an explicit key */
mcl_tensor *mcl_bias_dropout_relu_keyed(mcl_ctx *ctx, mcl_tensor *x, mcl_tensor *b, float p,
                                        uint64_t seed, uint64_t stream, uint64_t counter)
{
    mcl_op_args r;
    memset(&r, 0, sizeof r);
    r.op = MCL_OP_BIAS_DROPOUT_RELU;
    r.in[0] = x;
    r.in[1] = b;
    r.p.f[0] = p;
    r.p.u[0] = seed;
    r.p.u[1] = stream;
    r.p.u[2] = counter;
    return run1(ctx, &r);
}

mcl_tensor *mcl_bias_dropout_relu(mcl_ctx *ctx, mcl_tensor *x, mcl_tensor *b, float p,
                                  int training)
{
    if (!ctx) return NULL;
    if (!training || p == 0.0f) /* no dropout: bias_add then relu, no stream drawn */
        return dropout_p_invalid(ctx, p) ? NULL : mcl_relu(ctx, mcl_bias_add(ctx, x, b));
    return mcl_bias_dropout_relu_keyed(ctx, x, b, p, ctx->seed, mcl_ctx_next_stream(ctx), 0);
}

/* out = a + dropout(x + b): the bias_add_dropout op with an explicit key */
mcl_tensor *mcl_bias_add_dropout_keyed(mcl_ctx *ctx, mcl_tensor *a, mcl_tensor *x, mcl_tensor *b,
                                       float p, uint64_t seed, uint64_t stream, uint64_t counter)
{
    mcl_op_args r;
    memset(&r, 0, sizeof r);
    r.op = MCL_OP_BIAS_ADD_DROPOUT;
    r.in[0] = a;
    r.in[1] = x;
    r.in[2] = b;
    r.p.f[0] = p;
    r.p.u[0] = seed;
    r.p.u[1] = stream;
    r.p.u[2] = counter;
    return run1(ctx, &r);
}

mcl_tensor *mcl_bias_add_dropout(mcl_ctx *ctx, mcl_tensor *a, mcl_tensor *x, mcl_tensor *b,
                                 float p, int training)
{
    if (!ctx) return NULL;
    if (!training || p == 0.0f) /* no dropout: the op at p = 0, a + (x + b), one launch and no
                                 * stream drawn (the same floats as bias_add then add) */
        return dropout_p_invalid(ctx, p) ? NULL : mcl_bias_add_dropout_keyed(ctx, a, x, b, 0.0f, 0, 0, 0);
    return mcl_bias_add_dropout_keyed(ctx, a, x, b, p, ctx->seed, mcl_ctx_next_stream(ctx), 0);
}

mcl_tensor *mcl_grad_preproc(mcl_ctx *ctx, mcl_tensor *z, float p)
{
    return unary(ctx, MCL_OP_GRAD_PREPROC, z, p);
}

mcl_tensor *mcl_smn_write(mcl_ctx *ctx, mcl_tensor *m0, mcl_tensor *idx, mcl_tensor *zs,
                          mcl_tensor *const phi[6], float slope)
{
    if (!ctx) return NULL;
    if (!phi) {
        mcl_ctx_set_error(ctx, MCL_ERR_NULL, "smn_write: phi is NULL");
        return NULL;
    }
    if (!idx && !zs) {
        /* No write (a tensor has no zero-size dims, so m = 0 has no idx): a copy of M0, after
         * the same checks of M0, phi and slope. With an error held, the NULLs are taken as an
         * earlier op's failed results and propagate (tensor.h). */
        if (ctx->status != MCL_OK) return NULL;
        static const char *const names[7] = {"M0", "W1", "b1", "W2", "b2", "W3", "b3"};
        for (int k = 0; k < 7; k++) {
            const mcl_tensor *t = k == 0 ? m0 : phi[k - 1];
            if (!t) {
                mcl_ctx_set_error(ctx, MCL_ERR_NULL, "smn_write: %s is NULL", names[k]);
                return NULL;
            }
            if (t->ctx != ctx) {
                mcl_ctx_set_error(ctx, MCL_ERR_INVALID, "smn_write: %s belongs to another context",
                                  names[k]);
                return NULL;
            }
        }
        int64_t H;
        if (smn_m0_check(ctx, m0, slope) != MCL_OK || smn_phi_check(ctx, phi, &H) != MCL_OK)
            return NULL;
        return mcl_copy(ctx, m0);
    }
    mcl_op_args a;
    memset(&a, 0, sizeof a);
    a.op = MCL_OP_SMN_WRITE;
    a.in[0] = m0;
    a.in[1] = idx;
    a.in[2] = zs;
    for (int k = 0; k < 6; k++) a.in[3 + k] = phi[k];
    a.p.f[0] = slope;
    return run1(ctx, &a);
}

mcl_status mcl_smn_avg_z(mcl_ctx *ctx, mcl_tensor *avg, mcl_tensor *g, mcl_tensor *idx, float gamma, float beta1,
                         float beta2, float p, mcl_tensor *out[2])
{
    if (!ctx) return MCL_ERR_NULL;
    if (!out) return mcl_ctx_set_error(ctx, MCL_ERR_NULL, "smn_avg_z: out is NULL");
    out[0] = out[1] = NULL;
    mcl_op_args a;
    memset(&a, 0, sizeof a);
    a.op = MCL_OP_SMN_AVG_Z;
    a.in[0] = avg;
    a.in[1] = g;
    a.in[2] = idx;
    a.p.f[0] = gamma;
    a.p.f[1] = beta1;
    a.p.f[2] = beta2;
    a.p.f[3] = p;
    mcl_status s = mcl_op_run(ctx, &a);
    if (s != MCL_OK) return s;
    out[0] = a.out[0];
    out[1] = a.out[1];
    return MCL_OK;
}

mcl_tensor *mcl_repeat_batch(mcl_ctx *ctx, mcl_tensor *x, int64_t n)
{
    mcl_op_args r;
    memset(&r, 0, sizeof r);
    r.op = MCL_OP_REPEAT_BATCH;
    r.in[0] = x;
    r.p.i[0] = n;
    return run1(ctx, &r);
}

mcl_status mcl_repeat_batch4(mcl_ctx *ctx, mcl_tensor *const x[4], int64_t n, int axis,
                             mcl_tensor *out[4])
{
    if (!ctx) return MCL_ERR_NULL;
    if (!out) return mcl_ctx_set_error(ctx, MCL_ERR_NULL, "repeat_batch4: out is NULL");
    for (int k = 0; k < 4; k++) out[k] = NULL;
    if (!x) return mcl_ctx_set_error(ctx, MCL_ERR_NULL, "repeat_batch4: x is NULL");
    mcl_op_args a;
    memset(&a, 0, sizeof a);
    a.op = MCL_OP_REPEAT_BATCH4;
    for (int k = 0; k < 4; k++) a.in[k] = x[k];
    a.p.i[0] = n;
    a.p.i[1] = axis;
    mcl_status s = mcl_op_run(ctx, &a);
    if (s != MCL_OK) return s;
    for (int k = 0; k < 4; k++) out[k] = a.out[k];
    return MCL_OK;
}

mcl_tensor *mcl_repeat_rows(mcl_ctx *ctx, mcl_tensor *x, int64_t n)
{
    mcl_op_args r;
    memset(&r, 0, sizeof r);
    r.op = MCL_OP_REPEAT_BATCH;
    r.in[0] = x;
    r.p.i[0] = n;
    r.p.i[1] = 1;
    return run1(ctx, &r);
}

mcl_tensor *mcl_conv2d(mcl_ctx *ctx, mcl_tensor *x, mcl_tensor *w, mcl_tensor *b, int stride,
                       int padding)
{
    mcl_op_args r;
    memset(&r, 0, sizeof r);
    r.op = MCL_OP_CONV2D;
    r.in[0] = x;
    r.in[1] = w;
    r.in[2] = b;
    r.p.i[0] = stride;
    r.p.i[1] = padding;
    return run1(ctx, &r);
}

mcl_tensor *mcl_maxpool2d(mcl_ctx *ctx, mcl_tensor *x) { return unary(ctx, MCL_OP_MAXPOOL2D, x, 0); }

mcl_tensor *mcl_instance_norm(mcl_ctx *ctx, mcl_tensor *x, mcl_tensor *gamma, mcl_tensor *beta,
                              float eps)
{
    return norm_op(ctx, MCL_OP_INSTANCE_NORM, x, gamma, beta, NULL, eps);
}

mcl_tensor *mcl_inorm_relu(mcl_ctx *ctx, mcl_tensor *x, mcl_tensor *gamma, mcl_tensor *beta, float eps)
{
    return norm_op(ctx, MCL_OP_INORM_RELU, x, gamma, beta, NULL, eps);
}

mcl_tensor *mcl_inorm_add_pool_relu(mcl_ctx *ctx, mcl_tensor *x, mcl_tensor *gamma, mcl_tensor *beta,
                                    mcl_tensor *skip, float eps)
{
    return norm_op(ctx, MCL_OP_INORM_ADD_POOL_RELU, x, gamma, beta, skip, eps);
}

/* The Conv-4 block tail's parameters, shared by inorm_pool_relu and conv_inorm_pool_relu
 * (ops.def): f0 = eps, the output's dropout p = f1 (0: none) with dropout_op's key, and the
 * segments' length i0 and stream step u3 */
typedef struct tail_key {
    float eps, p;
    uint64_t seed, stream, step;
    int64_t seg;
} tail_key;

static void set_tail(mcl_op_args *a, const tail_key *k)
{
    a->p.f[0] = k->eps;
    a->p.f[1] = k->p;
    a->p.u[0] = k->seed;
    a->p.u[1] = k->stream;
    a->p.u[3] = k->step;
    a->p.i[0] = k->seg;
}

/* The tail's key for the context's next stream when training with p > 0, else none (no
 * stream drawn, as mcl_dropout); 0, or -1 after setting the error of an invalid p */
static int tail_train_key(mcl_ctx *ctx, float eps, float p, int training, tail_key *k)
{
    const tail_key none = {eps, 0.0f, 0, 0, 0, 0};
    *k = none;
    if (!training || p == 0.0f) return dropout_p_invalid(ctx, p) ? -1 : 0;
    k->p = p;
    k->seed = ctx->seed;
    k->stream = mcl_ctx_next_stream(ctx);
    return 0;
}

/* *seg = the elements of each of n_seg segments of an output of ny elements (ny < 0: unknown
 * yet, the op's shape check reports it): 0, or -1 after setting the error */
static int tail_segments(mcl_ctx *ctx, const char *op, int64_t ny, int64_t n_seg, int64_t *seg)
{
    *seg = 0;
    if (n_seg < 1) {
        mcl_ctx_set_error(ctx, MCL_ERR_INVALID, "%s: %lld dropout segments (1 or more)", op, (long long)n_seg);
        return -1;
    }
    if (ny < 0) return 0;
    if (ny % n_seg != 0) {
        mcl_ctx_set_error(ctx, MCL_ERR_INVALID, "%s: %lld output elements in %lld dropout segments", op,
                          (long long)ny, (long long)n_seg);
        return -1;
    }
    *seg = ny / n_seg;
    return 0;
}

/* inorm_pool_relu with its output's dropout */
static mcl_tensor *ipr_op(mcl_ctx *ctx, mcl_tensor *x, mcl_tensor *gamma, mcl_tensor *beta, const tail_key *k)
{
    mcl_op_args a;
    memset(&a, 0, sizeof a);
    a.op = MCL_OP_INORM_POOL_RELU;
    a.in[0] = x;
    a.in[1] = gamma;
    a.in[2] = beta;
    set_tail(&a, k);
    return run1(ctx, &a);
}

mcl_tensor *mcl_inorm_pool_relu(mcl_ctx *ctx, mcl_tensor *x, mcl_tensor *gamma, mcl_tensor *beta,
                                float eps)
{
    const tail_key k = {eps, 0.0f, 0, 0, 0, 0};
    return ipr_op(ctx, x, gamma, beta, &k);
}

mcl_tensor *mcl_inorm_pool_relu_dropout(mcl_ctx *ctx, mcl_tensor *x, mcl_tensor *gamma,
                                        mcl_tensor *beta, float eps, float p, int training)
{
    tail_key k;
    if (!ctx || tail_train_key(ctx, eps, p, training, &k) != 0) return NULL;
    return ipr_op(ctx, x, gamma, beta, &k);
}

mcl_tensor *mcl_inorm_pool_relu_dropout_segments(mcl_ctx *ctx, mcl_tensor *x, mcl_tensor *gamma,
                                                 mcl_tensor *beta, float eps, float p,
                                                 uint64_t seed, uint64_t stream, uint64_t step,
                                                 int64_t n_seg)
{
    if (!ctx) return NULL;
    /* the output [B,C,H/2,W/2] */
    const int64_t ny = x && x->ndim == 4 ? x->shape[0] * x->shape[1] * (x->shape[2] / 2) * (x->shape[3] / 2) : -1;
    tail_key k = {eps, p, seed, stream, step, 0};
    if (tail_segments(ctx, "inorm_pool_relu", ny, n_seg, &k.seg) != 0) return NULL;
    return ipr_op(ctx, x, gamma, beta, &k);
}

/* conv_inorm_pool_relu: conv2d (stride 1, padding) then inorm_pool_relu with its dropout */
static mcl_tensor *cipr_op(mcl_ctx *ctx, mcl_tensor *x, mcl_tensor *w, mcl_tensor *b, int padding,
                           mcl_tensor *gamma, mcl_tensor *beta, const tail_key *k)
{
    mcl_op_args a;
    memset(&a, 0, sizeof a);
    a.op = MCL_OP_CONV_INORM_POOL_RELU;
    a.in[0] = x;
    a.in[1] = w;
    a.in[2] = b;
    a.in[3] = gamma;
    a.in[4] = beta;
    set_tail(&a, k);
    a.p.i[1] = padding;
    return run1(ctx, &a);
}

mcl_tensor *mcl_conv_inorm_pool_relu(mcl_ctx *ctx, mcl_tensor *x, mcl_tensor *w, mcl_tensor *b, int padding,
                                     mcl_tensor *gamma, mcl_tensor *beta, float eps)
{
    const tail_key k = {eps, 0.0f, 0, 0, 0, 0};
    return cipr_op(ctx, x, w, b, padding, gamma, beta, &k);
}

mcl_tensor *mcl_conv_inorm_pool_relu_dropout(mcl_ctx *ctx, mcl_tensor *x, mcl_tensor *w, mcl_tensor *b,
                                             int padding, mcl_tensor *gamma, mcl_tensor *beta, float eps,
                                             float p, int training)
{
    tail_key k;
    if (!ctx || tail_train_key(ctx, eps, p, training, &k) != 0) return NULL;
    return cipr_op(ctx, x, w, b, padding, gamma, beta, &k);
}

mcl_tensor *mcl_conv_inorm_pool_relu_dropout_segments(mcl_ctx *ctx, mcl_tensor *x, mcl_tensor *w,
                                                      mcl_tensor *b, int padding, mcl_tensor *gamma,
                                                      mcl_tensor *beta, float eps, float p, uint64_t seed,
                                                      uint64_t stream, uint64_t step, int64_t n_seg)
{
    if (!ctx) return NULL;
    int64_t ny = -1; /* the output [B,O,Ho/2,Wo/2] (an invalid shape: the op's check says why) */
    if (x && w && x->ndim == 4 && w->ndim == 4) {
        const int64_t k = w->shape[2], ho = x->shape[2] + 2 * padding - k + 1, wo = x->shape[3] + 2 * padding - k + 1;
        if (ho >= 2 && wo >= 2) ny = x->shape[0] * w->shape[0] * (ho / 2) * (wo / 2);
    }
    tail_key k = {eps, p, seed, stream, step, 0};
    if (tail_segments(ctx, "conv_inorm_pool_relu", ny, n_seg, &k.seg) != 0) return NULL;
    return cipr_op(ctx, x, w, b, padding, gamma, beta, &k);
}

mcl_status mcl_attn_kv(mcl_ctx *ctx, mcl_tensor *q, mcl_tensor *k, mcl_tensor *v,
                       mcl_tensor *kbuf, mcl_tensor *vbuf, const mcl_attn_opts *opt,
                       mcl_tensor **out)
{
    if (!ctx) return MCL_ERR_NULL;
    if (!opt || !out) return mcl_ctx_set_error(ctx, MCL_ERR_NULL, "attn_kv: NULL options or output");
    mcl_op_args a;
    memset(&a, 0, sizeof a);
    a.op = MCL_OP_ATTN_KV;
    a.in[0] = q;
    a.in[1] = k;
    a.in[2] = v;
    a.in[3] = kbuf;
    a.in[4] = vbuf;
    a.p.i[0] = opt->n;
    a.p.i[1] = opt->start;
    a.p.i[2] = opt->mask;
    a.p.f[0] = opt->scale;
    a.p.f[1] = opt->alibi;
    mcl_status s = mcl_op_run(ctx, &a);
    *out = s == MCL_OK ? a.out[0] : NULL;
    return s;
}

mcl_status mcl_rel_attn_window(mcl_ctx *ctx, mcl_tensor *qc, mcl_tensor *qp, mcl_tensor *k,
                               mcl_tensor *v, mcl_tensor *r, float scale, int64_t window,
                               mcl_tensor **out)
{
    if (!ctx) return MCL_ERR_NULL;
    if (!out) return mcl_ctx_set_error(ctx, MCL_ERR_NULL, "rel_attn: NULL output");
    mcl_op_args a;
    memset(&a, 0, sizeof a);
    a.op = MCL_OP_REL_ATTN;
    a.in[0] = qc;
    a.in[1] = qp;
    a.in[2] = k;
    a.in[3] = v;
    a.in[4] = r;
    a.p.f[0] = scale;
    a.p.i[0] = window;
    mcl_status s = mcl_op_run(ctx, &a);
    *out = s == MCL_OK ? a.out[0] : NULL;
    return s;
}

mcl_status mcl_rel_attn(mcl_ctx *ctx, mcl_tensor *qc, mcl_tensor *qp, mcl_tensor *k, mcl_tensor *v,
                        mcl_tensor *r, float scale, mcl_tensor **out)
{
    return mcl_rel_attn_window(ctx, qc, qp, k, v, r, scale, 0, out);
}

mcl_status mcl_kv_push(mcl_ctx *ctx, mcl_tensor *buf, mcl_tensor *x, int64_t pos)
{
    if (!ctx) return MCL_ERR_NULL;
    mcl_op_args a;
    memset(&a, 0, sizeof a);
    a.op = MCL_OP_KV_PUSH;
    a.in[0] = buf;
    a.in[1] = x;
    a.p.i[0] = pos;
    return mcl_op_run(ctx, &a);
}

mcl_status mcl_wcst_act(mcl_ctx *ctx, mcl_tensor *state, mcl_tensor *logits, mcl_tensor *cards, mcl_tensor *act,
                        mcl_tensor *reward, uint64_t seed, uint64_t stream, uint64_t counter,
                        int64_t solve_episodes, float reward_correct, float reward_wrong)
{
    if (!ctx) return MCL_ERR_NULL;
    mcl_op_args a;
    memset(&a, 0, sizeof a);
    a.op = MCL_OP_WCST_ACT;
    a.in[0] = state;
    a.in[1] = logits;
    a.in[2] = cards;
    a.in[3] = act;
    a.in[4] = reward;
    a.p.u[0] = seed;
    a.p.u[1] = stream;
    a.p.u[2] = counter;
    a.p.i[0] = solve_episodes;
    a.p.f[0] = reward_correct;
    a.p.f[1] = reward_wrong;
    return mcl_op_run(ctx, &a);
}

mcl_status mcl_srwm(mcl_ctx *ctx, mcl_tensor *x, mcl_tensor *const state_in[4], mcl_tensor **y,
                    mcl_tensor *state_out[4])
{
    if (!ctx) return MCL_ERR_NULL;
    if (!state_in || !y || !state_out)
        return mcl_ctx_set_error(ctx, MCL_ERR_NULL, "srwm: NULL state or output array");
    mcl_op_args a;
    memset(&a, 0, sizeof a);
    a.op = MCL_OP_SRWM;
    a.in[0] = x;
    for (int k = 0; k < 4; k++) a.in[1 + k] = state_in[k];
    mcl_status s = mcl_op_run(ctx, &a);
    *y = s == MCL_OK ? a.out[0] : NULL;
    for (int k = 0; k < 4; k++) state_out[k] = s == MCL_OK ? a.out[1 + k] : NULL;
    return s;
}
