/* shape.c — OpenCL host glue for concat, slice, reshape, transpose, permute, repeat_batch.
 *
 * Kernels: kernels/shape.cl, one work-item per element written (reshape: the flat copies
 * copy_fwd / copy_bwd of kernels/elementwise.cl), except transpose and permute, which go
 * through __local tiles when their reads would be strided (permute_plan). Same contract and equations as
 * src/ref/shape.c: forward moves elements, backward ADDS each gradient element back where its
 * element came from (no collisions: deterministic). Axis arguments were validated and
 * normalized to 0..ndim-1 by the front end (ops.c). repeat_batch backward is the one that
 * sums (the n copies' gradients, in order, one work-item per element).
 *
 * concat and slice use the reference's decomposition: along axis x every tensor is
 * [outer, rows_x * inner] with outer = product of the dims before x, inner = product of the
 * dims after x, so one out "row" is a contiguous run in each operand.
 */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "ocl.h"

/* Product of t->shape[from .. to-1] (1 for an empty range). */
static int64_t dims_prod(const mcl_tensor *t, int from, int to)
{
    int64_t p = 1;
    for (int d = from; d < to; d++) p *= t->shape[d];
    return p;
}

/* "kernel: [shape] -> [shape] (extra)" into buf, for error messages. */
static const char *what2(char *buf, size_t len, const char *kname, const mcl_tensor *from,
                         const mcl_tensor *to, const char *extra)
{
    char s1[64], s2[64];
    snprintf(buf, len, "%s: %s -> %s%s", kname, mcl_shape_str(from, s1, sizeof s1),
             mcl_shape_str(to, s2, sizeof s2), extra);
    return buf;
}

/* Rows of `len` elements per launch of a kernel with 32-bit indices (whole rows, fewer than
 * 2^31 elements per launch), or 0 after recording an error when one row is already too long. */
static int64_t rows_per_launch(mcl_backend *be, int64_t len, const char *what)
{
    if (len <= 0) return INT_MAX;
    if (len > INT_MAX) {
        mcl_ctx_set_error(be->ctx, MCL_ERR_UNSUPPORTED,
                          "OpenCL: %s: a row of %lld elements is beyond the 32-bit indices of the "
                          "kernel; use the reference backend", what, (long long)len);
        return 0;
    }
    return (int64_t)INT_MAX / len;
}

/* ------------------------------------------------------------------------------------------ */
/* concat along axis x = p.i[0]:
 *   out[.., i, ..] = a[.., i, ..]        for i <  a_x
 *   out[.., i, ..] = b[.., i - a_x, ..]  for i >= a_x
 * a [.., a_x, ..], b [.., b_x, ..] (other dims equal) -> out [.., a_x + b_x, ..]
 * backward: ga += gout[.., 0 : a_x, ..],  gb += gout[.., a_x : a_x + b_x, ..] */

mcl_status mcl_ocl_concat_fwd(mcl_backend *be, const mcl_op_args *a)
{
    const mcl_tensor *A = a->in[0], *B = a->in[1];
    int x = (int)a->p.i[0];
    int64_t inner = dims_prod(A, x + 1, A->ndim);
    int64_t ra = A->shape[x] * inner, rb = B->shape[x] * inner;
    const mcl_tensor *out = a->out[0];
    const int64_t rows = dims_prod(A, 0, x), ro = ra + rb;
    char what[200], extra[48];
    snprintf(extra, sizeof extra, " (axis %d)", x);
    what2(what, sizeof what, "concat_fwd", A, out, extra);
    const int64_t chunk = rows_per_launch(be, ro, what);
    cl_kernel k = chunk ? mcl_ocl_kernel(be, "concat_fwd", NULL) : NULL;
    if (!k) return mcl_ocl_recorded(be);
    for (int64_t o0 = 0; o0 < rows; o0 += chunk) { /* rows o0 .. o0 + nr - 1 */
        const int64_t nr = rows - o0 < chunk ? rows - o0 : chunk, n = nr * ro;
        int i = mcl_ocl_arg_mem(be, k, 0, mcl_ocl_mem(A));
        i = mcl_ocl_arg_long(be, k, i, A->offset + o0 * ra);
        i = mcl_ocl_arg_mem(be, k, i, mcl_ocl_mem(B));
        i = mcl_ocl_arg_long(be, k, i, B->offset + o0 * rb);
        i = mcl_ocl_arg_mem(be, k, i, mcl_ocl_mem(out));
        i = mcl_ocl_arg_long(be, k, i, out->offset + o0 * ro);
        i = mcl_ocl_arg_int(be, k, i, (int)ra);
        i = mcl_ocl_arg_int(be, k, i, (int)rb);
        i = mcl_ocl_arg_int(be, k, i, (int)n);
        mcl_status s = mcl_ocl_launch(be, k, i, n, what);
        if (s != MCL_OK) return s;
    }
    return MCL_OK;
}

mcl_status mcl_ocl_concat_bwd(mcl_backend *be, const mcl_op_args *a)
{
    const mcl_tensor *A = a->in[0], *B = a->in[1];
    int x = (int)a->p.i[0];
    int64_t inner = dims_prod(A, x + 1, A->ndim);
    int64_t ra = A->shape[x] * inner, rb = B->shape[x] * inner;
    char what[200], extra[48];
    snprintf(extra, sizeof extra, " (axis %d)", x);
    /* one launch per input, in turn (gin[0] == gin[1] for concat(a, a) still adds both) */
    for (int s_k = 0; s_k < 2; s_k++) {
        const mcl_tensor *gx = a->gin[s_k];
        if (!gx) continue;
        const mcl_tensor *g = a->gout[0];
        const int64_t rk = s_k == 0 ? ra : rb, koff = s_k == 0 ? 0 : ra, ro = ra + rb;
        const int64_t rows = dims_prod(A, 0, x);
        what2(what, sizeof what, "concat_bwd", g, gx, extra);
        const int64_t chunk = rows_per_launch(be, ro, what);
        cl_kernel k = chunk ? mcl_ocl_kernel(be, "concat_bwd", NULL) : NULL;
        if (!k) return mcl_ocl_recorded(be);
        for (int64_t o0 = 0; o0 < rows; o0 += chunk) {
            const int64_t nr = rows - o0 < chunk ? rows - o0 : chunk, n = nr * rk;
            int i = mcl_ocl_arg_mem(be, k, 0, mcl_ocl_mem(g));
            i = mcl_ocl_arg_long(be, k, i, g->offset + o0 * ro);
            i = mcl_ocl_arg_mem(be, k, i, mcl_ocl_mem(gx));
            i = mcl_ocl_arg_long(be, k, i, gx->offset + o0 * rk);
            i = mcl_ocl_arg_int(be, k, i, (int)rk);
            i = mcl_ocl_arg_int(be, k, i, (int)ro);
            i = mcl_ocl_arg_int(be, k, i, (int)koff);
            i = mcl_ocl_arg_int(be, k, i, (int)n);
            mcl_status s = mcl_ocl_launch(be, k, i, n, what);
            if (s != MCL_OK) return s;
        }
    }
    return MCL_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* slice along axis x = p.i[0], start s = p.i[1], length len = p.i[2]:
 *   out[.., i, ..] = a[.., s + i, ..]   for 0 <= i < len
 * a [.., a_x, ..] -> out [.., len, ..]
 * backward: ga[.., s + i, ..] += gout[.., i, ..]  (the rest of ga unchanged) */

/* The launch shared by forward and backward: kname(src, dst, ri, ro, s * inner, n) over the
 * n = numel(out) elements (rows of ri elements in a, ro in out). */
static mcl_status slice_launch(mcl_backend *be, const mcl_op_args *a, const char *kname,
                               const mcl_tensor *src, const mcl_tensor *dst)
{
    const mcl_tensor *A = a->in[0];
    int x = (int)a->p.i[0];
    int64_t start = a->p.i[1], len = a->p.i[2];
    int64_t inner = dims_prod(A, x + 1, A->ndim);
    const int64_t ri = A->shape[x] * inner, ro = len * inner, rows = dims_prod(A, 0, x);
    const int fwd = src == A; /* forward: a -> out (rows ri -> ro); backward: gout -> ga */
    char what[200], extra[96];
    snprintf(extra, sizeof extra, " (axis %d, [%lld, %lld))", x, (long long)start,
             (long long)(start + len));
    what2(what, sizeof what, kname, src, dst, extra);
    const int64_t chunk = rows_per_launch(be, ri, what); /* ri >= ro */
    cl_kernel k = chunk ? mcl_ocl_kernel(be, kname, NULL) : NULL;
    if (!k) return mcl_ocl_recorded(be);
    for (int64_t o0 = 0; o0 < rows; o0 += chunk) {
        const int64_t nr = rows - o0 < chunk ? rows - o0 : chunk, n = nr * ro;
        int i = mcl_ocl_arg_mem(be, k, 0, mcl_ocl_mem(src));
        i = mcl_ocl_arg_long(be, k, i, src->offset + o0 * (fwd ? ri : ro));
        i = mcl_ocl_arg_mem(be, k, i, mcl_ocl_mem(dst));
        i = mcl_ocl_arg_long(be, k, i, dst->offset + o0 * (fwd ? ro : ri));
        i = mcl_ocl_arg_int(be, k, i, (int)ri);
        i = mcl_ocl_arg_int(be, k, i, (int)ro);
        i = mcl_ocl_arg_int(be, k, i, (int)(start * inner));
        i = mcl_ocl_arg_int(be, k, i, (int)n);
        mcl_status s = mcl_ocl_launch(be, k, i, n, what);
        if (s != MCL_OK) return s;
    }
    return MCL_OK;
}

mcl_status mcl_ocl_slice_fwd(mcl_backend *be, const mcl_op_args *a)
{
    return slice_launch(be, a, "slice_fwd", a->in[0], a->out[0]);
}

mcl_status mcl_ocl_slice_bwd(mcl_backend *be, const mcl_op_args *a)
{
    if (!a->gin[0]) return MCL_OK;
    return slice_launch(be, a, "slice_bwd", a->gout[0], a->gin[0]);
}

/* ------------------------------------------------------------------------------------------ */
/* reshape: row-major order is unchanged, so out_flat[i] = a_flat[i]
 * a [any] -> out [any, same element count]
 * backward: ga_flat[i] += gout_flat[i] */

/* The flat copies of elementwise.cl: kname(src, dst, n) over the n = numel(a) elements. */
static mcl_status reshape_launch(mcl_backend *be, const char *kname, const mcl_tensor *src,
                                 const mcl_tensor *dst)
{
    char what[200], extra[48];
    snprintf(extra, sizeof extra, " (kernel %s)", kname);
    return mcl_ocl_launch_unary(be, kname, src, dst,
                                what2(what, sizeof what, "reshape", src, dst, extra));
}

mcl_status mcl_ocl_reshape_fwd(mcl_backend *be, const mcl_op_args *a)
{
    return reshape_launch(be, "copy_fwd", a->in[0], a->out[0]);
}

mcl_status mcl_ocl_reshape_bwd(mcl_backend *be, const mcl_op_args *a)
{
    if (!a->gin[0]) return MCL_OK;
    mcl_status s;
    const int fresh = mcl_ocl_grad_fresh(be, a->gin[0], &s); /* then store: copy_fwd */
    if (s != MCL_OK) return s;
    return reshape_launch(be, fresh ? "copy_fwd" : "copy_bwd", a->gout[0], a->gin[0]);
}

/* ------------------------------------------------------------------------------------------ */
/* transpose and permute share one planner (permute_plan): dst = src read through a 4-D
 * permutation, dst contiguous. Kernels (kernels/shape.cl):
 *   permute_tiled   src's innermost dim (of size > 1) is not dst's: T x T tiles through
 *                   __local memory, reads and writes coalesced (one group per tile)
 *   permute_rows    both innermost dims agree: one item per element, already coalesced
 *   permute_fwd/bwd tensors of 2^31 elements or more (64-bit indices)
 * The first two index with 32-bit ints. acc: 0 stores (forward), 1 adds (backward). */

#define PERM_TILE 32

/* dst[o] (=, +=) src[Σ_d o_d·st_d] for dst of shape ds[4] (src strides st[4] per dst dim) */
static mcl_status permute_plan(mcl_backend *be, const mcl_tensor *src, const mcl_tensor *dst,
                               const int64_t ds[4], const int64_t st[4], int acc,
                               const char *what)
{
    const int64_t n = mcl_tensor_numel(src);
    if (n == 0) return MCL_OK;
    if (n > INT_MAX) { /* the 64-bit kernels */
        cl_kernel k = mcl_ocl_kernel(be, acc ? "permute_bwd" : "permute_fwd", NULL);
        int i = k ? 0 : -1;
        i = mcl_ocl_arg_tensor(be, k, i, src);
        i = mcl_ocl_arg_tensor(be, k, i, dst);
        for (int d = 1; d < 4; d++) i = mcl_ocl_arg_long(be, k, i, ds[d]);
        for (int d = 0; d < 4; d++) i = mcl_ocl_arg_long(be, k, i, st[d]);
        i = mcl_ocl_arg_long(be, k, i, n);
        return mcl_ocl_launch(be, k, i, n, what);
    }
    /* q: the dst dim holding src's innermost dim of size > 1 (smallest stride); p: dst's
     * innermost dim of size > 1 */
    int q = 3, p = 3;
    for (int d = 0; d < 4; d++)
        if (ds[d] > 1 && (ds[q] <= 1 || st[d] < st[q])) q = d;
    while (p > 0 && ds[p] <= 1) p--;
    const int64_t dstr[4] = {ds[1] * ds[2] * ds[3], ds[2] * ds[3], ds[3], 1};
    if (q == p || ds[q] <= 1) { /* rows already contiguous on both sides */
        cl_kernel k = mcl_ocl_kernel(be, "permute_rows", NULL);
        int i = k ? 0 : -1;
        i = mcl_ocl_arg_tensor(be, k, i, src);
        i = mcl_ocl_arg_tensor(be, k, i, dst);
        for (int d = 1; d < 4; d++) i = mcl_ocl_arg_int(be, k, i, (int)ds[d]);
        for (int d = 0; d < 4; d++) i = mcl_ocl_arg_int(be, k, i, (int)st[d]);
        i = mcl_ocl_arg_int(be, k, i, acc);
        i = mcl_ocl_arg_int(be, k, i, (int)n);
        return mcl_ocl_launch(be, k, i, n, what);
    }
    int oth[2], no = 0;
    for (int d = 0; d < 4; d++)
        if (d != q && d != p) oth[no++] = d;
    size_t wg_max;
    cl_kernel k = mcl_ocl_kernel(be, "permute_tiled", &wg_max);
    if (!k) return mcl_ocl_recorded(be);
    const size_t NT = mcl_ocl_reduce_wg(wg_max); /* power of two, <= 256 */
    const size_t T = NT < PERM_TILE ? NT : PERM_TILE;
    const int64_t groups = ds[oth[0]] * ds[oth[1]] * ((ds[q] + (int64_t)T - 1) / (int64_t)T) *
                           ((ds[p] + (int64_t)T - 1) / (int64_t)T);
    int i = mcl_ocl_arg_tensor(be, k, 0, src);
    i = mcl_ocl_arg_tensor(be, k, i, dst);
    i = mcl_ocl_arg_int(be, k, i, (int)ds[q]);
    i = mcl_ocl_arg_int(be, k, i, (int)ds[p]);
    i = mcl_ocl_arg_int(be, k, i, (int)ds[oth[1]]);
    i = mcl_ocl_arg_int(be, k, i, (int)st[q]);
    i = mcl_ocl_arg_int(be, k, i, (int)st[p]);
    i = mcl_ocl_arg_int(be, k, i, (int)st[oth[0]]);
    i = mcl_ocl_arg_int(be, k, i, (int)st[oth[1]]);
    i = mcl_ocl_arg_int(be, k, i, (int)dstr[q]);
    i = mcl_ocl_arg_int(be, k, i, (int)dstr[p]);
    i = mcl_ocl_arg_int(be, k, i, (int)dstr[oth[0]]);
    i = mcl_ocl_arg_int(be, k, i, (int)dstr[oth[1]]);
    i = mcl_ocl_arg_int(be, k, i, (int)T);
    i = mcl_ocl_arg_int(be, k, i, acc);
    /* __local: T rows of T + 1 floats = 4·T·(T + 1) bytes (4.1 KiB at T = 32) */
    i = mcl_ocl_arg_local(be, k, i, T * (T + 1) * sizeof(float));
    return mcl_ocl_launch_groups(be, k, i, (size_t)groups, NT, what);
}

/* ------------------------------------------------------------------------------------------ */
/* transpose: swap the last two dims, batched over the leading dims:
 *   out[.., j, i] = a[.., i, j]
 * a [.., M, N] -> out [.., N, M]   (ndim >= 2, checked by the front end)
 * backward: ga[.., i, j] += gout[.., j, i]
 * As a permutation (0, 1, 3, 2) of src [1, batch, R, C]: dst [1, batch, C, R]. */

static mcl_status transpose_launch(mcl_backend *be, const char *kname, const mcl_tensor *src,
                                   const mcl_tensor *dst, int acc)
{
    const int nd = src->ndim;
    const int64_t R = nd >= 2 ? src->shape[nd - 2] : 1, C = src->shape[nd - 1];
    const int64_t batch = mcl_tensor_numel(src) / (R * C > 0 ? R * C : 1);
    const int64_t ds[4] = {1, batch, C, R}, st[4] = {0, R * C, 1, C};
    char what[200];
    return permute_plan(be, src, dst, ds, st, acc, what2(what, sizeof what, kname, src, dst, ""));
}

mcl_status mcl_ocl_transpose_fwd(mcl_backend *be, const mcl_op_args *a)
{
    return transpose_launch(be, "transpose forward", a->in[0], a->out[0], 0);
}

mcl_status mcl_ocl_transpose_bwd(mcl_backend *be, const mcl_op_args *a)
{
    if (!a->gin[0]) return MCL_OK;
    return transpose_launch(be, "transpose backward", a->gout[0], a->gin[0], 1);
}

/* ------------------------------------------------------------------------------------------ */
/* permute (4-D): out.shape[d] = a.shape[perm[d]], perm[d] = p.i[d]
 *   out[o0, o1, o2, o3] = a[x0, x1, x2, x3]  with x[perm[d]] = o[d]
 * a [s0, s1, s2, s3] -> out [s_perm[0], s_perm[1], s_perm[2], s_perm[3]]
 * backward: the inverse permutation inv (inv[perm[d]] = d) applied to gout, accumulated:
 *   ga[x0, x1, x2, x3] += gout[o0, o1, o2, o3]  with o[inv[e]] = x[e]
 * (A tensor with fewer than 4 dims reads as 4-D with trailing dims 1, as in tensor.h.) */

/* perm[] from p.i[0..3], or MCL_ERR_INVALID (with a message) unless it is a permutation of
 * 0..3 (the front end checked already: this only guards against a bad call record). */
static mcl_status permute_get(mcl_backend *be, const mcl_op_args *a, int perm[4])
{
    unsigned seen = 0;
    for (int d = 0; d < 4; d++) {
        int64_t v = a->p.i[d];
        if (v < 0 || v > 3 || (seen & (1u << v)))
            return mcl_ctx_set_error(be->ctx, MCL_ERR_INVALID,
                                     "permute: (%lld,%lld,%lld,%lld) is not a permutation of 0..3",
                                     (long long)a->p.i[0], (long long)a->p.i[1],
                                     (long long)a->p.i[2], (long long)a->p.i[3]);
        seen |= 1u << v;
        perm[d] = (int)v;
    }
    return MCL_OK;
}

/* dst (= or +=) src read through perm, where dst has shape d[k] = src.shape[perm[k]] and
 * st[k] = src stride of dim perm[k]. */
static mcl_status permute_launch(mcl_backend *be, const char *kname, const mcl_tensor *src,
                                 const int perm[4], const mcl_tensor *dst, int acc)
{
    const int64_t *ss = src->shape; /* unused trailing dims are 1 */
    int64_t sstride[4] = {ss[1] * ss[2] * ss[3], ss[2] * ss[3], ss[3], 1};
    int64_t ds[4], st[4];
    for (int d = 0; d < 4; d++) {
        ds[d] = ss[perm[d]];
        st[d] = sstride[perm[d]];
    }
    char what[200], extra[48];
    snprintf(extra, sizeof extra, " (perm %d,%d,%d,%d)", perm[0], perm[1], perm[2], perm[3]);
    return permute_plan(be, src, dst, ds, st, acc, what2(what, sizeof what, kname, src, dst, extra));
}

mcl_status mcl_ocl_permute_fwd(mcl_backend *be, const mcl_op_args *a)
{
    int perm[4];
    mcl_status s = permute_get(be, a, perm);
    if (s != MCL_OK) return s;
    return permute_launch(be, "permute forward", a->in[0], perm, a->out[0], 0);
}

mcl_status mcl_ocl_permute_bwd(mcl_backend *be, const mcl_op_args *a)
{
    if (!a->gin[0]) return MCL_OK;
    int perm[4], inv[4];
    mcl_status s = permute_get(be, a, perm);
    if (s != MCL_OK) return s;
    for (int d = 0; d < 4; d++) inv[perm[d]] = d;
    return permute_launch(be, "permute backward", a->gout[0], inv, a->gin[0], 1);
}

/* ------------------------------------------------------------------------------------------ */
/* repeat_batch: n = p.i[0] copies along a new leading dim (axis p.i[1] = 0; axis 1 is
 * repeat_rows_launch above):
 *   out[i, ..] = a[..]   for 0 <= i < n
 * a [..] (N elements) -> out [n, ..]
 * backward: ga[j] += sum_{i < n} gout[i, j]  (one work-item per ga element, i in order) */

/* repeat_batch with axis 1: a [outer, inner] -> out [outer, n, inner] (see shape.cl),
 * forward (bwd 0) or backward (bwd 1), over chunks of whole rows o. */
static mcl_status repeat_rows_launch(mcl_backend *be, const mcl_op_args *a, int bwd)
{
    const mcl_tensor *A = a->in[0];
    const int64_t outer = A->shape[0], inner = mcl_tensor_numel(A) / (outer > 0 ? outer : 1);
    const int64_t n = a->p.i[0];
    const mcl_tensor *src = bwd ? a->gout[0] : A, *dst = bwd ? a->gin[0] : a->out[0];
    char what[200];
    what2(what, sizeof what, bwd ? "repeat_rows_bwd" : "repeat_rows_fwd", src, dst, "");
    const int64_t chunk = rows_per_launch(be, n * inner, what); /* rows o per launch */
    cl_kernel k = chunk ? mcl_ocl_kernel(be, bwd ? "repeat_rows_bwd" : "repeat_rows_fwd", NULL) : NULL;
    if (!k) return mcl_ocl_recorded(be);
    for (int64_t o0 = 0; o0 < outer; o0 += chunk) {
        const int64_t no = outer - o0 < chunk ? outer - o0 : chunk;
        const int64_t items = bwd ? no * inner : no * n * inner;
        const int64_t s_at = bwd ? o0 * n * inner : o0 * inner, d_at = bwd ? o0 * inner : o0 * n * inner;
        int i = mcl_ocl_arg_mem(be, k, 0, mcl_ocl_mem(src));
        i = mcl_ocl_arg_long(be, k, i, src->offset + s_at);
        i = mcl_ocl_arg_mem(be, k, i, mcl_ocl_mem(dst));
        i = mcl_ocl_arg_long(be, k, i, dst->offset + d_at);
        i = mcl_ocl_arg_int(be, k, i, (int)inner);
        i = mcl_ocl_arg_int(be, k, i, (int)n);
        i = mcl_ocl_arg_int(be, k, i, (int)items);
        mcl_status s = mcl_ocl_launch(be, k, i, items, what);
        if (s != MCL_OK) return s;
    }
    return MCL_OK;
}

mcl_status mcl_ocl_repeat_batch_fwd(mcl_backend *be, const mcl_op_args *a)
{
    if (a->p.i[1] == 1) return repeat_rows_launch(be, a, 0);
    const mcl_tensor *A = a->in[0], *out = a->out[0];
    const int64_t N = mcl_tensor_numel(A), copies = a->p.i[0];
    char what[200];
    what2(what, sizeof what, "repeat_batch_fwd", A, out, "");
    const int64_t chunk = rows_per_launch(be, N, what); /* copies per launch */
    cl_kernel k = chunk ? mcl_ocl_kernel(be, "repeat_batch_fwd", NULL) : NULL;
    if (!k) return mcl_ocl_recorded(be);
    for (int64_t c0 = 0; c0 < copies; c0 += chunk) {
        const int64_t nc = copies - c0 < chunk ? copies - c0 : chunk, n = nc * N;
        int i = mcl_ocl_arg_tensor(be, k, 0, A);
        i = mcl_ocl_arg_mem(be, k, i, mcl_ocl_mem(out));
        i = mcl_ocl_arg_long(be, k, i, out->offset + c0 * N);
        i = mcl_ocl_arg_int(be, k, i, (int)N);
        i = mcl_ocl_arg_int(be, k, i, (int)n);
        mcl_status s = mcl_ocl_launch(be, k, i, n, what);
        if (s != MCL_OK) return s;
    }
    return MCL_OK;
}

mcl_status mcl_ocl_repeat_batch_bwd(mcl_backend *be, const mcl_op_args *a)
{
    if (!a->gin[0]) return MCL_OK;
    if (a->p.i[1] == 1) return repeat_rows_launch(be, a, 1);
    int64_t N = mcl_tensor_numel(a->in[0]), n = a->p.i[0];
    char what[200];
    cl_kernel k = mcl_ocl_kernel(be, "repeat_batch_bwd", NULL);
    int i = k ? 0 : -1;
    i = mcl_ocl_arg_tensor(be, k, i, a->gout[0]);
    i = mcl_ocl_arg_tensor(be, k, i, a->gin[0]);
    i = mcl_ocl_arg_long(be, k, i, N);
    i = mcl_ocl_arg_long(be, k, i, n);
    return mcl_ocl_launch(be, k, i, N,
                          what2(what, sizeof what, "repeat_batch_bwd", a->gout[0], a->gin[0], ""));
}

/* ------------------------------------------------------------------------------------------ */
/* repeat_batch4: repeat_batch of in[k] into out[k], k = 0..3 (p as repeat_batch's; axis 1's
 * out[k] [B·n, ..] holds repeat_batch's [B, n, ..] elements in order), in one launch of
 * repeat4_fwd / repeat4_bwd (shape.cl); per tensor with repeat_batch's kernels when a total
 * reaches 2^31 items or, backward, when some input wants no gradient. The same floats either
 * way (the same moves; the same pair sums in the same order). */
static mcl_status repeat4_each(mcl_backend *be, const mcl_op_args *a, int bwd)
{
    for (int k = 0; k < 4; k++) {
        mcl_op_args one;
        memset(&one, 0, sizeof one);
        one.op = MCL_OP_REPEAT_BATCH;
        one.p = a->p;
        one.in[0] = a->in[k];
        one.out[0] = a->out[k];
        one.gout[0] = a->gout[k];
        one.gin[0] = a->gin[k];
        mcl_status s = bwd ? mcl_ocl_repeat_batch_bwd(be, &one) : mcl_ocl_repeat_batch_fwd(be, &one);
        if (s != MCL_OK) return s;
    }
    return MCL_OK;
}

static mcl_status repeat4_launch(mcl_backend *be, const mcl_op_args *a, int bwd)
{
    const int64_t n = a->p.i[0];
    int64_t inner[4], end[4], total = 0, outs = 0;
    for (int k = 0; k < 4; k++) {
        const mcl_tensor *x = a->in[k];
        const int64_t outer = a->p.i[1] == 1 ? x->shape[0] : 1;
        inner[k] = mcl_tensor_numel(x) / (outer > 0 ? outer : 1);
        outs += mcl_tensor_numel(bwd ? a->gout[k] : a->out[k]);
        total += bwd ? outer * inner[k] : outer * n * inner[k];
        end[k] = total;
        if (bwd && !a->gin[k]) return repeat4_each(be, a, bwd);
    }
    /* every index of the kernel (into an output, or a gradient of one: < outs) fits an int */
    if (outs >= INT_MAX) return repeat4_each(be, a, bwd);
    char what[200];
    what2(what, sizeof what, bwd ? "repeat4_bwd" : "repeat4_fwd", bwd ? a->gout[0] : a->in[0],
          bwd ? a->gin[0] : a->out[0], "");
    cl_kernel k = mcl_ocl_kernel(be, bwd ? "repeat4_bwd" : "repeat4_fwd", NULL);
    int i = k ? 0 : -1;
    for (int t = 0; t < 4; t++) i = mcl_ocl_arg_tensor(be, k, i, bwd ? a->gout[t] : a->in[t]);
    for (int t = 0; t < 4; t++) i = mcl_ocl_arg_tensor(be, k, i, bwd ? a->gin[t] : a->out[t]);
    for (int t = 0; t < 4; t++) i = mcl_ocl_arg_int(be, k, i, (int)inner[t]);
    i = mcl_ocl_arg_int(be, k, i, (int)n);
    for (int t = 0; t < 4; t++) i = mcl_ocl_arg_int(be, k, i, (int)end[t]);
    return mcl_ocl_launch(be, k, i, total, what);
}

mcl_status mcl_ocl_repeat_batch4_fwd(mcl_backend *be, const mcl_op_args *a)
{
    return repeat4_launch(be, a, 0);
}

mcl_status mcl_ocl_repeat_batch4_bwd(mcl_backend *be, const mcl_op_args *a)
{
    if (!a->gin[0] && !a->gin[1] && !a->gin[2] && !a->gin[3]) return MCL_OK;
    return repeat4_launch(be, a, 1);
}
