/* conv.c — OpenCL host glue of the convolution family, NCHW: conv2d, maxpool2d,
 * instance_norm, inorm_relu, inorm_pool_relu, inorm_add_pool_relu, conv_inorm_pool_relu.
 * Kernels: kernels/conv.cl; equations and semantics: src/ref/conv.c (instance_norm, inorm_relu,
 * inorm_add_pool_relu: src/ref/inorm.c).
 *
 * conv2d = im2col kernel + CLBlast SGEMM, on chunks of nb images at a time (nb as large as
 * the scratch budget allows, so one GEMM covers many images). In the chunk's "wide" layout a
 * matrix row holds the P = Ho*Wo pixels of each image of the chunk in turn (row length nb*P):
 *   forward   col [KK, nb*P] = im2col(x);  outw [O, nb*P] = w [O, KK] · col;
 *             out[b, o, p] = outw[o, b*P + p] + bias[o]
 *   backward  gbias[o] += sum_{b, p} g[b, o, p]                     (one launch, all images)
 *             gw_ [O, nb*P] = g in the wide layout;
 *             gx:  colg [KK, nb*P] = wᵀ · gw_;  gx += col2im(colg)   (a gather kernel)
 *             gw:  col = im2col(x);  gw += gw_ · colᵀ               (chunks in order; a long
 *                  product is split along nb*P into slices summed in order: gw_split_k)
 * Both matrices of a chunk live in the backend's scratch buffer (mcl_ocl_scratch), at
 * element offsets that CLBlast takes directly. The chunk size depends only on the shapes and
 * the device, so results are deterministic; no atomics anywhere.
 *
 * maxpool2d: one work-item per output (forward) or per input gradient element (backward,
 * a gather from its window). instance_norm: the layer_norm scheme of norm.c with rows =
 * (image, channel) planes and gamma/beta per channel; the gamma/beta gradients run one
 * work-group per channel. inorm_relu: instance_norm's scheme and kernels' code with the relu.
 * inorm_pool_relu, inorm_add_pool_relu: instance_norm's scheme, the windows pooled (and
 * their gradients gathered) in the same kernels. Backward ACCUMULATES into the non-NULL gin[k]
 * (inorm_relu's and inorm_add_pool_relu's store into a fresh one: fused_grad_mode).
 */
#include "ocl.h" /* first: fixes CL_TARGET_OPENCL_VERSION before clblast_c.h includes CL/ */

#include <clblast_c.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

/* Largest scratch (in floats) one conv2d chunk may use: 256 MiB, or less on a device whose
 * largest allocation is smaller. At least one image is always taken. (64 MiB cut the ACL
 * step's batched Conv-4 runs into 2-7 chunks of 3 launches forward and up to 7 backward; 256
 * MiB takes each run's images in one or two.) */
#define CONV_SCRATCH_FLOATS ((size_t)1 << 26)

/* Shapes of one conv2d call (validated by the front end, ops.c). */
typedef struct conv_dims {
    int64_t B, C, H, W; /* x [B,C,H,W]                   */
    int64_t O, k;       /* w [O,C,k,k]                   */
    int64_t s, pd;      /* stride, zero padding          */
    int64_t Ho, Wo, P;  /* out [B,O,Ho,Wo], P = Ho*Wo    */
    int64_t KK;         /* C*k*k                         */
    int64_t nb;         /* images per chunk              */
} conv_dims;

static int conv_chunk_fits_int(const conv_dims *d, int64_t nb);

static void conv_dims_get(mcl_backend *be, const mcl_op_args *a, conv_dims *d)
{
    const mcl_tensor *x = a->in[0], *w = a->in[1], *o = a->out[0];
    d->B = x->shape[0];
    d->C = x->shape[1];
    d->H = x->shape[2];
    d->W = x->shape[3];
    d->O = w->shape[0];
    d->k = w->shape[2];
    d->s = a->p.i[0];
    d->pd = a->p.i[1];
    d->Ho = o->shape[2];
    d->Wo = o->shape[3];
    d->P = d->Ho * d->Wo;
    d->KK = d->C * d->k * d->k;
    size_t cap = mcl_ocl_of(be)->max_alloc / sizeof(float);
    if (cap == 0 || cap > CONV_SCRATCH_FLOATS) cap = CONV_SCRATCH_FLOATS;
    const int64_t per = (d->KK + d->O) * d->P; /* scratch floats per image */
    d->nb = (int64_t)cap / per;
    if (d->nb < 1) d->nb = 1;
    if (d->nb > d->B) d->nb = d->B;
    while (d->nb > 1 && !conv_chunk_fits_int(d, d->nb)) d->nb--;
}

/* The im2col, col2im and layout kernels index a chunk with 32-bit ints: 1 when the chunk's
 * matrices [KK + O, nb*P] and its images [nb,C,H,W] have fewer than 2^31 elements. */
static int conv_chunk_fits_int(const conv_dims *d, int64_t nb)
{
    return (d->KK + d->O) * nb * d->P <= INT_MAX && nb * d->C * d->H * d->W <= INT_MAX &&
           nb * d->O * d->P <= INT_MAX;
}

/* MCL_OK, or an error when even one image is too large for the 32-bit kernels. */
static mcl_status conv_check_int(mcl_backend *be, const conv_dims *d, const mcl_tensor *x,
                                 int bwd)
{
    if (conv_chunk_fits_int(d, 1)) return MCL_OK;
    char sb[64];
    return mcl_ctx_set_error(be->ctx, MCL_ERR_UNSUPPORTED,
                             "OpenCL: conv2d %s (x %s): one image's im2col matrix or image has "
                             "2^31 elements or more, beyond the 32-bit indices of the conv2d "
                             "kernels; use the reference backend",
                             bwd ? "backward" : "forward", mcl_shape_str(x, sb, sizeof sb));
}

/* "conv2d forward (kernel conv2d_im2col, x [2,3,7,5])" */
static const char *what(char *buf, size_t len, const char *op, int bwd, const char *kname,
                        const mcl_tensor *x)
{
    return mcl_ocl_what_op(buf, len, op, bwd ? "backward" : "forward", kname, "x", x);
}

/* Record the failure of a CLBlast call (OpenCL codes as such) and return its status. */
static mcl_status clblast_fail(mcl_backend *be, const char *whatc, const char *fn, int ta, int tb,
                               int64_t m, int64_t n, int64_t k, CLBlastStatusCode st)
{
    char full[320];
    snprintf(full, sizeof full, "%s: %s(%s, %s, M=%lld N=%lld K=%lld)", whatc, fn,
             ta ? "A^T" : "A", tb ? "B^T" : "B", (long long)m, (long long)n, (long long)k);
    if (((int)st < 0 && (int)st >= -63) || (int)st == MCL_CL_NV_ILLEGAL_ACCESS) /* OpenCL's */
        return mcl_ocl_fail(be, (cl_int)st, full);
    return mcl_ctx_set_error(be->ctx, MCL_ERR_BACKEND, "CLBlast: %s failed with status %d on %s",
                             full, (int)st, mcl_ocl_of(be)->device_name);
}

/* C = alpha * op(A) · op(B) + beta * C, row-major, every matrix a (buffer, element offset,
 * row length) triple; `what` names the call in an error message. */
static mcl_status sgemm(mcl_backend *be, const char *whatc, int ta, int tb, int64_t m, int64_t n,
                        int64_t k, float alpha, cl_mem A, int64_t aoff, int64_t lda, cl_mem B,
                        int64_t boff, int64_t ldb, float beta, cl_mem C, int64_t coff,
                        int64_t ldc)
{
    mcl_ocl *o = mcl_ocl_of(be);
    const CLBlastTranspose tA = ta ? CLBlastTransposeYes : CLBlastTransposeNo;
    const CLBlastTranspose tB = tb ? CLBlastTransposeYes : CLBlastTransposeNo;
    size_t temp = 0; /* CLBlast's copies on its indirect path: the context's temp buffer */
    CLBlastStatusCode st = CLBlastSGemmTempBufferSize(
        CLBlastLayoutRowMajor, tA, tB, (size_t)m, (size_t)n, (size_t)k, (size_t)aoff,
        (size_t)lda, (size_t)boff, (size_t)ldb, (size_t)coff, (size_t)ldc, &o->queue, &temp);
    cl_mem tb_mem = st == CLBlastSuccess ? mcl_ocl_gemm_temp(be, temp) : NULL;
    if (st == CLBlastSuccess && !tb_mem) return mcl_ocl_recorded(be);
    mcl_ocl_count_clblast(be);
    if (tb_mem)
        st = CLBlastSgemmWithTempBuffer(CLBlastLayoutRowMajor, tA, tB, (size_t)m, (size_t)n,
                                        (size_t)k, alpha, A, (size_t)aoff, (size_t)lda, B,
                                        (size_t)boff, (size_t)ldb, beta, C, (size_t)coff,
                                        (size_t)ldc, &o->queue, NULL, tb_mem);
    else /* the size query failed: CLBlastSgemm reports the problem */
        st = CLBlastSgemm(CLBlastLayoutRowMajor, tA, tB, (size_t)m, (size_t)n, (size_t)k, alpha, A,
                          (size_t)aoff, (size_t)lda, B, (size_t)boff, (size_t)ldb, beta, C,
                          (size_t)coff, (size_t)ldc, &o->queue, NULL);
    if (st == CLBlastSuccess) return MCL_OK;
    return clblast_fail(be, whatc, "CLBlastSgemm", ta, tb, m, n, k, st);
}

/* The weight gradient gw [O, KK] += gwide [O, ld] · colᵀ has a long inner dimension (ld =
 * images x pixels, 52k for Conv-4's middle layers) and a small output: as one GEMM it is a
 * handful of work-groups each running the whole of ld (13 GFLOP/s on PoCL; a GPU would idle
 * most of its compute units). So ld is cut into S slices of L columns: a strided batched GEMM
 * writes the S partial products part[s] = gwide[:, sL:(s+1)L] · col[:, sL:(s+1)L]ᵀ (plus one
 * more GEMM for the ld - S*L columns left over), and conv2d_sum_parts adds them to gw in
 * order. S depends only on ld, so results are deterministic. */
#define SPLITK_COLS 4096 /* columns per slice, about */
#define SPLITK_MAX 32    /* slices at most */

static mcl_status gw_split_k(mcl_backend *be, const char *whatc, int64_t O, int64_t KK,
                             int64_t ld, cl_mem scr, int64_t gwide_off, const mcl_tensor *gw)
{
    mcl_ocl *o = mcl_ocl_of(be);
    int64_t S = ld / SPLITK_COLS;
    if (S > SPLITK_MAX) S = SPLITK_MAX;
    if (S < 2) /* short enough: one GEMM, accumulating */
        return sgemm(be, whatc, 0, 1, O, KK, ld, 1.0f, scr, gwide_off, ld, scr, 0, ld, 1.0f,
                     mcl_ocl_mem(gw), gw->offset, KK);
    const int64_t L = ld / S, rest = ld - S * L, n = O * KK, parts = S + (rest > 0);
    void *h = NULL;
    mcl_status st = be->buf_alloc(be, (size_t)(parts * n) * sizeof(float), &h);
    if (st != MCL_OK) return st;
    cl_mem part = ((mcl_ocl_block *)h)->mem;
    mcl_ocl_count_clblast(be);
    CLBlastStatusCode cs = CLBlastSgemmStridedBatched(
        CLBlastLayoutRowMajor, CLBlastTransposeNo, CLBlastTransposeYes, (size_t)O, (size_t)KK,
        (size_t)L, 1.0f, scr, (size_t)gwide_off, (size_t)ld, (size_t)L, scr, 0, (size_t)ld,
        (size_t)L, 0.0f, part, 0, (size_t)KK, (size_t)n, (size_t)S, &o->queue, NULL);
    if (cs != CLBlastSuccess) {
        be->buf_free(be, h);
        return clblast_fail(be, whatc, "CLBlastSgemmStridedBatched", 0, 1, O, KK, L, cs);
    }
    if (rest > 0)
        st = sgemm(be, whatc, 0, 1, O, KK, rest, 1.0f, scr, gwide_off + S * L, ld, scr, S * L, ld,
                   0.0f, part, S * n, KK);
    if (st == MCL_OK) {
        cl_kernel k = mcl_ocl_kernel(be, "conv2d_sum_parts", NULL);
        int i = k ? 0 : -1;
        i = mcl_ocl_arg_mem(be, k, i, part);
        i = mcl_ocl_arg_long(be, k, i, parts);
        i = mcl_ocl_arg_tensor(be, k, i, gw);
        i = mcl_ocl_arg_long(be, k, i, n);
        st = mcl_ocl_launch(be, k, i, n, whatc);
    }
    be->buf_free(be, h); /* back to the pool; the in-order queue finishes with it first */
    return st;
}

/* im2col of images b0 .. b0+nb-1 of x into col (scratch, from element 0), wide layout. */
static mcl_status im2col(mcl_backend *be, const conv_dims *d, const mcl_tensor *x, int64_t b0,
                         int64_t nb, cl_mem col, int bwd)
{
    char wb[160];
    const int64_t n = d->KK * nb * d->P; /* one work-item per element of col */
    cl_kernel k = mcl_ocl_kernel(be, "conv2d_im2col", NULL);
    int i = k ? 0 : -1;
    i = mcl_ocl_arg_mem(be, k, i, mcl_ocl_mem(x));
    i = mcl_ocl_arg_long(be, k, i, x->offset + b0 * d->C * d->H * d->W);
    i = mcl_ocl_arg_mem(be, k, i, col);
    i = mcl_ocl_arg_long(be, k, i, 0);
    i = mcl_ocl_arg_int(be, k, i, (int)d->C);
    i = mcl_ocl_arg_int(be, k, i, (int)d->H);
    i = mcl_ocl_arg_int(be, k, i, (int)d->W);
    i = mcl_ocl_arg_int(be, k, i, (int)d->k);
    i = mcl_ocl_arg_int(be, k, i, (int)d->s);
    i = mcl_ocl_arg_int(be, k, i, (int)d->pd);
    i = mcl_ocl_arg_int(be, k, i, (int)d->Wo);
    i = mcl_ocl_arg_int(be, k, i, (int)d->P);
    i = mcl_ocl_arg_int(be, k, i, (int)nb);
    i = mcl_ocl_arg_int(be, k, i, (int)n);
    return mcl_ocl_launch(be, k, i, n, what(wb, sizeof wb, "conv2d", bwd, "conv2d_im2col", x));
}

/* ------------------------------------------------------------------------------------ */
/* conv2d (stride s = p.i[0], zero padding pd = p.i[1]):
 *   out[b, o, oy, ox] = bias[o] + sum_{c, ky, kx} w[o, c, ky, kx] * x[b, c, iy, ix],
 *   iy = oy*s - pd + ky, ix = ox*s - pd + kx   (x = 0 outside the image)
 *   in[0] x [B,C,H,W], in[1] w [O,C,k,k], in[2] bias [O] -> out[0] [B,O,Ho,Wo] */
mcl_status mcl_ocl_conv2d_fwd(mcl_backend *be, const mcl_op_args *a)
{
    conv_dims d;
    conv_dims_get(be, a, &d);
    const mcl_tensor *x = a->in[0], *w = a->in[1], *out = a->out[0];
    char wb[160];
    if (conv_check_int(be, &d, x, 0) != MCL_OK) return mcl_ocl_recorded(be);
    cl_mem scr = mcl_ocl_scratch(be, (size_t)((d.KK + d.O) * d.nb * d.P) * sizeof(float));
    if (!scr) return mcl_ocl_recorded(be);
    for (int64_t b0 = 0; b0 < d.B; b0 += d.nb) {
        const int64_t nb = d.B - b0 < d.nb ? d.B - b0 : d.nb, ld = nb * d.P;
        const int64_t ow_off = d.KK * ld; /* outw after col */
        mcl_status s = im2col(be, &d, x, b0, nb, scr, 0);
        if (s != MCL_OK) return s;
        s = sgemm(be, what(wb, sizeof wb, "conv2d", 0, "CLBlast", x), 0, 0, d.O, ld, d.KK, 1.0f,
                  mcl_ocl_mem(w), w->offset, d.KK, scr, 0, ld, 0.0f, scr, ow_off, ld);
        if (s != MCL_OK) return s;
        const int64_t n = nb * d.O * d.P;
        cl_kernel k = mcl_ocl_kernel(be, "conv2d_out", NULL);
        int i = k ? 0 : -1;
        i = mcl_ocl_arg_mem(be, k, i, scr);
        i = mcl_ocl_arg_long(be, k, i, ow_off);
        i = mcl_ocl_arg_tensor(be, k, i, a->in[2]);
        i = mcl_ocl_arg_mem(be, k, i, mcl_ocl_mem(out));
        i = mcl_ocl_arg_long(be, k, i, out->offset + b0 * d.O * d.P);
        i = mcl_ocl_arg_int(be, k, i, (int)d.O);
        i = mcl_ocl_arg_int(be, k, i, (int)d.P);
        i = mcl_ocl_arg_int(be, k, i, (int)nb);
        i = mcl_ocl_arg_int(be, k, i, (int)n);
        s = mcl_ocl_launch(be, k, i, n, what(wb, sizeof wb, "conv2d", 0, "conv2d_out", x));
        if (s != MCL_OK) return s;
    }
    return MCL_OK;
}

/* backward, with g = gout[0] [B,O,Ho,Wo] (g_b = g[b] as [O, P]):
 *   gbias[o] += sum_{b, p} g[b, o, p]
 *   gx_b     += col2im(wᵀ · g_b)
 *   gw       += sum_b g_b · col_bᵀ
 *   gin[0] like x, gin[1] like w, gin[2] like bias (each may be NULL) */
mcl_status mcl_ocl_conv2d_bwd(mcl_backend *be, const mcl_op_args *a)
{
    conv_dims d;
    conv_dims_get(be, a, &d);
    const mcl_tensor *x = a->in[0], *w = a->in[1], *g = a->gout[0];
    const mcl_tensor *gx = a->gin[0], *gw = a->gin[1];
    char wb[160];
    mcl_status s;

    if (a->gin[2]) { /* one work-group per output channel */
        size_t wg;
        cl_kernel k = mcl_ocl_kernel(be, "conv2d_bias_bwd", &wg);
        if (!k) return mcl_ocl_recorded(be);
        const size_t W = mcl_ocl_row_wg(wg, d.B * d.P);
        int i = mcl_ocl_arg_tensor(be, k, 0, g);
        i = mcl_ocl_arg_tensor(be, k, i, a->gin[2]);
        i = mcl_ocl_arg_int(be, k, i, (int)d.B);
        i = mcl_ocl_arg_int(be, k, i, (int)d.O);
        i = mcl_ocl_arg_int(be, k, i, (int)d.P);
        /* __local: W float2 = 8·W bytes (2 KiB at W = 256) */
        i = mcl_ocl_arg_local(be, k, i, W * 2 * sizeof(float));
        s = mcl_ocl_launch_groups(be, k, i, (size_t)d.O, W,
                                  what(wb, sizeof wb, "conv2d", 1, "conv2d_bias_bwd", x));
        if (s != MCL_OK) return s;
    }
    if (!gx && !gw) return MCL_OK;
    if (conv_check_int(be, &d, x, 1) != MCL_OK) return mcl_ocl_recorded(be);

    cl_mem scr = mcl_ocl_scratch(be, (size_t)((d.KK + d.O) * d.nb * d.P) * sizeof(float));
    if (!scr) return mcl_ocl_recorded(be);
    for (int64_t b0 = 0; b0 < d.B; b0 += d.nb) {
        const int64_t nb = d.B - b0 < d.nb ? d.B - b0 : d.nb, ld = nb * d.P;
        const int64_t gw_off = d.KK * ld; /* gout in the wide layout, after col / colg */

        /* gout of the chunk -> [O, nb*P] */
        int64_t n = d.O * ld;
        cl_kernel k = mcl_ocl_kernel(be, "conv2d_to_wide", NULL);
        int i = k ? 0 : -1;
        i = mcl_ocl_arg_mem(be, k, i, mcl_ocl_mem(g));
        i = mcl_ocl_arg_long(be, k, i, g->offset + b0 * d.O * d.P);
        i = mcl_ocl_arg_mem(be, k, i, scr);
        i = mcl_ocl_arg_long(be, k, i, gw_off);
        i = mcl_ocl_arg_int(be, k, i, (int)d.O);
        i = mcl_ocl_arg_int(be, k, i, (int)d.P);
        i = mcl_ocl_arg_int(be, k, i, (int)nb);
        i = mcl_ocl_arg_int(be, k, i, (int)n);
        s = mcl_ocl_launch(be, k, i, n, what(wb, sizeof wb, "conv2d", 1, "conv2d_to_wide", x));
        if (s != MCL_OK) return s;

        if (gx) { /* colg = wᵀ [KK, O] · gwide [O, nb*P], then the gather into gx */
            s = sgemm(be, what(wb, sizeof wb, "conv2d", 1, "CLBlast, gradient of x", x), 1, 0,
                      d.KK, ld, d.O, 1.0f, mcl_ocl_mem(w), w->offset, d.KK, scr, gw_off, ld, 0.0f,
                      scr, 0, ld);
            if (s != MCL_OK) return s;
            n = nb * d.C * d.H * d.W; /* one work-item per pixel of gx */
            k = mcl_ocl_kernel(be, "conv2d_col2im", NULL);
            i = k ? 0 : -1;
            i = mcl_ocl_arg_mem(be, k, i, scr);
            i = mcl_ocl_arg_long(be, k, i, 0);
            i = mcl_ocl_arg_mem(be, k, i, mcl_ocl_mem(gx));
            i = mcl_ocl_arg_long(be, k, i, gx->offset + b0 * d.C * d.H * d.W);
            i = mcl_ocl_arg_int(be, k, i, (int)d.C);
            i = mcl_ocl_arg_int(be, k, i, (int)d.H);
            i = mcl_ocl_arg_int(be, k, i, (int)d.W);
            i = mcl_ocl_arg_int(be, k, i, (int)d.k);
            i = mcl_ocl_arg_int(be, k, i, (int)d.s);
            i = mcl_ocl_arg_int(be, k, i, (int)d.pd);
            i = mcl_ocl_arg_int(be, k, i, (int)d.Ho);
            i = mcl_ocl_arg_int(be, k, i, (int)d.Wo);
            i = mcl_ocl_arg_int(be, k, i, (int)nb);
            i = mcl_ocl_arg_int(be, k, i, (int)n);
            s = mcl_ocl_launch(be, k, i, n, what(wb, sizeof wb, "conv2d", 1, "conv2d_col2im", x));
            if (s != MCL_OK) return s;
        }
        if (gw) { /* col = im2col(x) (over colg: the queue is in order), gw += gwide · colᵀ */
            s = im2col(be, &d, x, b0, nb, scr, 1);
            if (s != MCL_OK) return s;
            s = gw_split_k(be, what(wb, sizeof wb, "conv2d", 1, "CLBlast, gradient of w", x),
                           d.O, d.KK, ld, scr, gw_off, gw);
            if (s != MCL_OK) return s;
        }
    }
    return MCL_OK;
}

/* ------------------------------------------------------------------------------------ */
/* maxpool2d, 2 x 2 windows, stride 2, floor:
 *   out[b, c, i, j] = max_{dy, dx} x[b, c, 2i + dy, 2j + dx]
 *   arg[b, c, i, j] = dy*2 + dx of the first maximum (as float)
 *   in[0] x [B,C,H,W] -> out[0], out[1] [B,C,H/2,W/2]
 * backward: gx[b, c, 2i + dy, 2j + dx] += gout[b, c, i, j] where dy*2 + dx = arg[b, c, i, j] */

/* The maxpool2d kernels index with 32-bit ints: they run over chunks of whole planes of
 * fewer than 2^31 elements (usually one chunk), the offsets moved to the chunk's first plane. */
static mcl_status maxpool_launch(mcl_backend *be, int bwd, const mcl_op_args *a)
{
    const mcl_tensor *x = a->in[0];
    const int64_t Q = x->shape[0] * x->shape[1], H = x->shape[2], W = x->shape[3];
    const int64_t Ho = H / 2, Wo = W / 2, per = bwd ? H * W : Ho * Wo; /* items per plane */
    const char *kname = bwd ? "maxpool2d_bwd" : "maxpool2d_fwd";
    char wb[160];
    what(wb, sizeof wb, "maxpool2d", bwd, kname, x);
    if (per > INT_MAX)
        return mcl_ctx_set_error(be->ctx, MCL_ERR_UNSUPPORTED,
                                 "OpenCL: %s: one plane has 2^31 elements or more, beyond the "
                                 "32-bit indices of the kernel; use the reference backend", wb);
    const int64_t chunk = per > 0 ? (int64_t)INT_MAX / per : Q; /* planes per launch */
    cl_kernel k = mcl_ocl_kernel(be, kname, NULL);
    if (!k) return mcl_ocl_recorded(be);
    for (int64_t q0 = 0; q0 < Q; q0 += chunk) {
        const int64_t nq = Q - q0 < chunk ? Q - q0 : chunk, n = nq * per;
        /* forward: x -> out, arg;  backward: gout, arg -> gx */
        const mcl_tensor *t0 = bwd ? a->gout[0] : x, *t1 = bwd ? a->out[1] : a->out[0];
        const mcl_tensor *t2 = bwd ? a->gin[0] : a->out[1];
        const int64_t s0 = bwd ? Ho * Wo : H * W, s1 = Ho * Wo, s2 = bwd ? H * W : Ho * Wo;
        int i = mcl_ocl_arg_mem(be, k, 0, mcl_ocl_mem(t0));
        i = mcl_ocl_arg_long(be, k, i, t0->offset + q0 * s0);
        i = mcl_ocl_arg_mem(be, k, i, mcl_ocl_mem(t1));
        i = mcl_ocl_arg_long(be, k, i, t1->offset + q0 * s1);
        i = mcl_ocl_arg_mem(be, k, i, mcl_ocl_mem(t2));
        i = mcl_ocl_arg_long(be, k, i, t2->offset + q0 * s2);
        i = mcl_ocl_arg_int(be, k, i, (int)H);
        i = mcl_ocl_arg_int(be, k, i, (int)W);
        i = mcl_ocl_arg_int(be, k, i, (int)Ho);
        i = mcl_ocl_arg_int(be, k, i, (int)Wo);
        i = mcl_ocl_arg_int(be, k, i, (int)n);
        mcl_status st = mcl_ocl_launch(be, k, i, n, wb);
        if (st != MCL_OK) return st;
    }
    return MCL_OK;
}

mcl_status mcl_ocl_maxpool2d_fwd(mcl_backend *be, const mcl_op_args *a)
{
    return maxpool_launch(be, 0, a);
}

mcl_status mcl_ocl_maxpool2d_bwd(mcl_backend *be, const mcl_op_args *a)
{
    if (!a->gin[0]) return MCL_OK;
    return maxpool_launch(be, 1, a);
}

/* The instance_norm and inorm_pool_relu kernels index a plane, and the planes of a channel,
 * with 32-bit ints: MCL_OK when a plane and the plane count fit, else an error. */
static mcl_status planes_check(mcl_backend *be, const char *op, const mcl_tensor *x)
{
    const int64_t planes = x->shape[0] * x->shape[1], N = x->shape[2] * x->shape[3];
    if (planes <= INT_MAX && N <= INT_MAX / 2) return MCL_OK; /* a walk's c + dc < 2N */
    char sb[64];
    return mcl_ctx_set_error(be->ctx, MCL_ERR_UNSUPPORTED,
                             "OpenCL: %s (x %s): planes or plane counts of 2^31 or more are "
                             "beyond the 32-bit indices of its kernels; use the reference backend",
                             op, mcl_shape_str(x, sb, sizeof sb));
}

/* ------------------------------------------------------------------------------------ */
/* instance_norm, per plane r = b*C + c of N = H*W values:
 *   mean[r] = (1/N) sum_j x[r, j];  var[r] = (1/N) sum_j (x[r, j] - mean[r])^2  (biased)
 *   rstd[r] = 1 / sqrt(var[r] + eps);  y[r, j] = (x[r, j] - mean[r]) * rstd[r] * gamma[c] + beta[c]
 *   in[0] x [B,C,H,W], in[1] gamma [C], in[2] beta [C]; p.f[0] = eps
 *   out[0] y [B,C,H,W], out[1] mean [B*C], out[2] rstd [B*C] */

/* The forward launch of instance_norm and inorm_relu (op), one work-group per plane, with the
 * kernel kname (instance_norm_fwd or inorm_relu_fwd: the same arguments) */
static mcl_status in_fwd(mcl_backend *be, const mcl_op_args *a, const char *op, const char *kname)
{
    const mcl_tensor *x = a->in[0];
    const int64_t C = x->shape[1], R = x->shape[0] * C, N = x->shape[2] * x->shape[3];
    size_t wg;
    char wb[160];
    cl_kernel k = mcl_ocl_kernel(be, kname, &wg);
    if (!k) return mcl_ocl_recorded(be);
    const size_t W = mcl_ocl_row_wg(wg, N);
    int i = mcl_ocl_arg_tensor(be, k, 0, x);
    i = mcl_ocl_arg_tensor(be, k, i, a->in[1]);
    i = mcl_ocl_arg_tensor(be, k, i, a->in[2]);
    i = mcl_ocl_arg_tensor(be, k, i, a->out[0]);
    i = mcl_ocl_arg_tensor(be, k, i, a->out[1]);
    i = mcl_ocl_arg_tensor(be, k, i, a->out[2]);
    i = mcl_ocl_arg_long(be, k, i, C);
    i = mcl_ocl_arg_long(be, k, i, N);
    i = mcl_ocl_arg_float(be, k, i, a->p.f[0]);
    /* __local: W float4 = 16·W bytes (4 KiB at W = 256) */
    i = mcl_ocl_arg_local(be, k, i, W * 4 * sizeof(float));
    return mcl_ocl_launch_groups(be, k, i, (size_t)R, W, what(wb, sizeof wb, op, 0, kname, x));
}

mcl_status mcl_ocl_instance_norm_fwd(mcl_backend *be, const mcl_op_args *a)
{
    return in_fwd(be, a, "instance_norm", "instance_norm_fwd");
}

/* backward, with dxhat_j = gout[r, j] * gamma[c] and xhat from the saved mean and rstd:
 *   gx[r, j]  += rstd[r] * (dxhat_j - (1/N) sum_k dxhat_k - xhat_j * (1/N) sum_k dxhat_k xhat_k)
 *   ggamma[c] += sum_b sum_j gout[r, j] * xhat[r, j]
 *   gbeta[c]  += sum_b sum_j gout[r, j] */
mcl_status mcl_ocl_instance_norm_bwd(mcl_backend *be, const mcl_op_args *a)
{
    const mcl_tensor *x = a->in[0];
    const int64_t B = x->shape[0], C = x->shape[1], N = x->shape[2] * x->shape[3];
    char wb[160];
    mcl_status s;
    if (planes_check(be, "instance_norm backward", x) != MCL_OK) return mcl_ocl_recorded(be);
    if (a->gin[0]) {
        size_t wg;
        cl_kernel k = mcl_ocl_kernel(be, "instance_norm_bwd_dx", &wg);
        if (!k) return mcl_ocl_recorded(be);
        const size_t W = mcl_ocl_row_wg(wg, N);
        int i = mcl_ocl_arg_norm_dx(be, k, 0, a);
        i = mcl_ocl_arg_long(be, k, i, C);
        i = mcl_ocl_arg_long(be, k, i, N);
        /* __local: W float4 = 16·W bytes (4 KiB at W = 256) */
        i = mcl_ocl_arg_local(be, k, i, W * 4 * sizeof(float));
        what(wb, sizeof wb, "instance_norm", 1, "instance_norm_bwd_dx", x);
        s = mcl_ocl_launch_groups(be, k, i, (size_t)(B * C), W, wb);
        if (s != MCL_OK) return s;
    }
    if (a->gin[1] || a->gin[2]) {
        /* a NULL gradient is passed as the other one, with its want flag 0 (never written) */
        const mcl_tensor *gg = a->gin[1] ? a->gin[1] : a->gin[2];
        const mcl_tensor *gb = a->gin[2] ? a->gin[2] : a->gin[1];
        size_t wg;
        cl_kernel k = mcl_ocl_kernel(be, "instance_norm_bwd_gb", &wg);
        if (!k) return mcl_ocl_recorded(be);
        const size_t W = mcl_ocl_row_wg(wg, B * N);
        int i = mcl_ocl_arg_tensor(be, k, 0, x);
        i = mcl_ocl_arg_tensor(be, k, i, a->out[1]);
        i = mcl_ocl_arg_tensor(be, k, i, a->out[2]);
        i = mcl_ocl_arg_tensor(be, k, i, a->gout[0]);
        i = mcl_ocl_arg_tensor(be, k, i, gg);
        i = mcl_ocl_arg_tensor(be, k, i, gb);
        i = mcl_ocl_arg_int(be, k, i, (int)B);
        i = mcl_ocl_arg_int(be, k, i, (int)C);
        i = mcl_ocl_arg_int(be, k, i, (int)N);
        i = mcl_ocl_arg_long(be, k, i, a->gin[1] != NULL);
        i = mcl_ocl_arg_long(be, k, i, a->gin[2] != NULL);
        /* __local: W float4 = 16·W bytes (4 KiB at W = 256) */
        i = mcl_ocl_arg_local(be, k, i, W * 4 * sizeof(float));
        what(wb, sizeof wb, "instance_norm", 1, "instance_norm_bwd_gb", x);
        s = mcl_ocl_launch_groups(be, k, i, (size_t)C, W, wb);
        if (s != MCL_OK) return s;
    }
    return MCL_OK;
}

/* ------------------------------------------------------------------------------------ */
/* inorm_relu: instance_norm then relu in one op (equations: src/ref/inorm.c)
 *   in[0] x [B,C,H,W], in[1] gamma [C], in[2] beta [C]; p.f[0] = eps
 *   out[0] y [B,C,H,W] = relu(instance_norm's y), out[1] mean [B*C], out[2] rstd [B*C]
 * Forward: instance_norm's launch, its kernel's code with the relu (inorm_relu_fwd).
 * Backward: instance_norm's sums with gout gated by the relu (gn = 0 + (y > 0 ? gout : 0)),
 * the planes (gx) and the channels (ggamma, gbeta) in one kernel, inorm_relu_bwd
 * (fused_bwd_launch); a fresh gin is stored, not added to (fused_grad_mode). */

/* in_put's mode (conv.cl) of a gradient of the fused backwards: 0 not wanted (NULL), 2 fresh
 * (mcl_ocl_grad_fresh: stored, not read; these ops are fresh-aware in backend.c), 1 added to.
 * Asked in the order the kernels write the gradients. *s: an error (of the zero fill a fresh
 * view needs); once set, the later calls ask nothing. */
static int64_t fused_grad_mode(mcl_backend *be, const mcl_tensor *g, mcl_status *s)
{
    if (!g || *s != MCL_OK) return 0;
    return mcl_ocl_grad_fresh(be, g, s) ? 2 : 1;
}

/* gin[k], or a stand-in for a NULL one: the first non-NULL gin (passed with its mode or want
 * flag 0: never written) */
static const mcl_tensor *gin_or_any(const mcl_op_args *a, int k)
{
    if (a->gin[k]) return a->gin[k];
    for (int j = 0; j < mcl_op_table[a->op].n_in; j++)
        if (a->gin[j]) return a->gin[j];
    return a->in[0]; /* no gradient wanted: nothing is launched */
}

/* The launches of inorm_relu_bwd and inorm_add_pool_relu_bwd, whose work-groups first,
 * first + 1, .. are the planes' input gradients (0 .. planes-1, Wp items each) then the
 * channels' gamma/beta gradients (planes .. planes+C-1, Wc items); k's arguments before
 * `first` are set, i the next index. Both parts in one launch when Wp == Wc, else each wanted
 * part alone: each part sums as it would alone, so the same bits either way. */
static mcl_status fused_bwd_launch(mcl_backend *be, cl_kernel k, int i, int64_t planes, int64_t C,
                                   size_t Wp, size_t Wc, int want_p, int want_c, const char *wb)
{
    struct {
        int on;
        int64_t first, n;
        size_t W;
    } part[2] = {{want_p, 0, planes, Wp}, {want_c, planes, C, Wc}};
    if (want_p && want_c && Wp == Wc) {
        part[0].n = planes + C;
        part[1].on = 0;
    }
    for (int p = 0; p < 2; p++) {
        if (!part[p].on) continue;
        int j = mcl_ocl_arg_long(be, k, i, part[p].first);
        /* __local: W float4 = 16·W bytes (4 KiB at W = 256) */
        j = mcl_ocl_arg_local(be, k, j, part[p].W * 4 * sizeof(float));
        mcl_status s = mcl_ocl_launch_groups(be, k, j, (size_t)part[p].n, part[p].W, wb);
        if (s != MCL_OK) return s;
    }
    return MCL_OK;
}

mcl_status mcl_ocl_inorm_relu_fwd(mcl_backend *be, const mcl_op_args *a)
{
    return in_fwd(be, a, "inorm_relu", "inorm_relu_fwd");
}

/* backward, with gn = 0 + (y > 0 ? gout : 0), dxhat_j = gn_j * gamma[c] and xhat from the
 * saved mean and rstd:
 *   gx[r, j]  += rstd[r] * (dxhat_j - (1/N) sum_k dxhat_k - xhat_j * (1/N) sum_k dxhat_k xhat_k)
 *   ggamma[c] += sum_b sum_j gn[r, j] * xhat[r, j]
 *   gbeta[c]  += sum_b sum_j gn[r, j] */
mcl_status mcl_ocl_inorm_relu_bwd(mcl_backend *be, const mcl_op_args *a)
{
    const mcl_tensor *x = a->in[0];
    const int64_t B = x->shape[0], C = x->shape[1], N = x->shape[2] * x->shape[3];
    const int want_p = a->gin[0] != NULL, want_c = a->gin[1] || a->gin[2];
    char wb[160];
    size_t wg;
    if (!want_p && !want_c) return MCL_OK;
    if (planes_check(be, "inorm_relu backward", x) != MCL_OK) return mcl_ocl_recorded(be);
    cl_kernel k = mcl_ocl_kernel(be, "inorm_relu_bwd", &wg);
    if (!k) return mcl_ocl_recorded(be);
    mcl_status s = MCL_OK;
    const int64_t mx = fused_grad_mode(be, a->gin[0], &s);
    const int64_t mg = fused_grad_mode(be, a->gin[1], &s);
    const int64_t mb = fused_grad_mode(be, a->gin[2], &s);
    if (s != MCL_OK) return s;
    int i = mcl_ocl_arg_tensor(be, k, 0, x);
    i = mcl_ocl_arg_tensor(be, k, i, a->in[1]);
    i = mcl_ocl_arg_tensor(be, k, i, a->out[1]);
    i = mcl_ocl_arg_tensor(be, k, i, a->out[2]);
    i = mcl_ocl_arg_tensor(be, k, i, a->gout[0]);
    i = mcl_ocl_arg_tensor(be, k, i, a->out[0]);
    i = mcl_ocl_arg_tensor(be, k, i, gin_or_any(a, 0));
    i = mcl_ocl_arg_long(be, k, i, mx);
    i = mcl_ocl_arg_tensor(be, k, i, gin_or_any(a, 1));
    i = mcl_ocl_arg_tensor(be, k, i, gin_or_any(a, 2));
    i = mcl_ocl_arg_int(be, k, i, (int)B);
    i = mcl_ocl_arg_int(be, k, i, (int)C);
    i = mcl_ocl_arg_int(be, k, i, (int)N);
    i = mcl_ocl_arg_long(be, k, i, mg);
    i = mcl_ocl_arg_long(be, k, i, mb);
    what(wb, sizeof wb, "inorm_relu", 1, "inorm_relu_bwd", x);
    return fused_bwd_launch(be, k, i, B * C, C, mcl_ocl_row_wg(wg, N), mcl_ocl_row_wg(wg, B * N),
                            want_p, want_c, wb);
}

/* ------------------------------------------------------------------------------------ */
/* inorm_pool_relu: instance_norm -> maxpool2d -> relu in one op (equations: src/ref/conv.c)
 *   in[0] x [B,C,H,W], in[1] gamma [C], in[2] beta [C]; p.f[0] = eps
 *   out[0] y [B,C,H/2,W/2], out[1] mean [B*C], out[2] rstd [B*C], out[3] arg [B,C,H/2,W/2]
 * One work-group per plane (statistics over all H*W values, then the windows); backward:
 * the input gradient per plane, gamma/beta per channel, as instance_norm's, with the
 * gradient of the normalized plane taken from gout at the argmax where y > 0. */
/* The output's dropout scale 1 / (1 - p) in float (src/ref/dropout.c's), 1 without dropout */
static float ipr_drop_scale(const mcl_op_args *a)
{
    return a->p.f[1] > 0.0f ? 1.0f / (1.0f - a->p.f[1]) : 1.0f;
}

/* The forward launch of inorm_pool_relu (add = 0: with the output's dropout) and
 * inorm_add_pool_relu (add = 1: in[3] the skip, no dropout), one work-group per plane */
static mcl_status ipr_fwd(mcl_backend *be, const mcl_op_args *a, int add)
{
    const char *op = add ? "inorm_add_pool_relu" : "inorm_pool_relu";
    const char *kname = add ? "inorm_add_pool_relu_fwd" : "inorm_pool_relu_fwd";
    const mcl_tensor *x = a->in[0];
    const int64_t C = x->shape[1], R = x->shape[0] * C, H = x->shape[2], W = x->shape[3];
    size_t wg;
    char wb[160];
    const char *opdir = add ? "inorm_add_pool_relu forward" : "inorm_pool_relu forward";
    if (planes_check(be, opdir, x) != MCL_OK) return mcl_ocl_recorded(be);
    cl_kernel k = mcl_ocl_kernel(be, kname, &wg);
    if (!k) return mcl_ocl_recorded(be);
    const size_t WG = mcl_ocl_row_wg(wg, H * W);
    int i = mcl_ocl_arg_tensor(be, k, 0, x);
    for (int t = 1; t < 3 + add; t++) i = mcl_ocl_arg_tensor(be, k, i, a->in[t]); /* gamma .. */
    for (int t = 0; t < 4; t++) i = mcl_ocl_arg_tensor(be, k, i, a->out[t]);      /* y .. arg */
    i = mcl_ocl_arg_int(be, k, i, (int)C);
    i = mcl_ocl_arg_int(be, k, i, (int)H);
    i = mcl_ocl_arg_int(be, k, i, (int)W);
    i = mcl_ocl_arg_float(be, k, i, a->p.f[0]);
    if (!add) { /* the output's dropout (dropout.c's mask arguments; seg = 0 passed as the
                 * element count) */
        const int64_t ny = R * (H / 2) * (W / 2);
        i = mcl_ocl_arg_float(be, k, i, a->p.f[1]);
        i = mcl_ocl_arg_float(be, k, i, ipr_drop_scale(a));
        i = mcl_ocl_arg_ulong(be, k, i, a->p.u[0]);
        i = mcl_ocl_arg_ulong(be, k, i, a->p.u[1]);
        i = mcl_ocl_arg_ulong(be, k, i, a->p.u[2]);
        i = mcl_ocl_arg_long(be, k, i, a->p.i[0] > 0 ? a->p.i[0] : (ny > 0 ? ny : 1));
        i = mcl_ocl_arg_ulong(be, k, i, a->p.u[3]);
    }
    /* __local: WG float4 = 16·WG bytes (4 KiB at 256) */
    i = mcl_ocl_arg_local(be, k, i, WG * 4 * sizeof(float));
    return mcl_ocl_launch_groups(be, k, i, (size_t)R, WG, what(wb, sizeof wb, op, 0, kname, x));
}

mcl_status mcl_ocl_inorm_pool_relu_fwd(mcl_backend *be, const mcl_op_args *a)
{
    return ipr_fwd(be, a, 0);
}

/* The arguments the inorm_pool_relu backward kernels share, from the saved forward outputs:
 *   out[1] mean [B*C], out[2] rstd [B*C], out[0] y [B,C,H/2,W/2], out[3] arg [B,C,H/2,W/2],
 *   gout[0] gy [B,C,H/2,W/2], the dropout's scale; returns the next argument index */
static int ipr_saved_args(mcl_backend *be, cl_kernel k, int i, const mcl_op_args *a)
{
    i = mcl_ocl_arg_tensor(be, k, i, a->out[1]);
    i = mcl_ocl_arg_tensor(be, k, i, a->out[2]);
    i = mcl_ocl_arg_tensor(be, k, i, a->out[0]);
    i = mcl_ocl_arg_tensor(be, k, i, a->out[3]);
    i = mcl_ocl_arg_tensor(be, k, i, a->gout[0]);
    return mcl_ocl_arg_float(be, k, i, ipr_drop_scale(a));
}

/* The gamma/beta gradient arguments: ggamma [C], gbeta [C], B, C, H, W, the two want flags
 * (in_put's modes: mg, mb). A NULL gradient is passed as another one, with its mode 0 (never
 * written). */
static int ipr_gb_args(mcl_backend *be, cl_kernel k, int i, const mcl_op_args *a,
                       int64_t B, int64_t C, int64_t H, int64_t W, int64_t mg, int64_t mb)
{
    i = mcl_ocl_arg_tensor(be, k, i, gin_or_any(a, 1));
    i = mcl_ocl_arg_tensor(be, k, i, gin_or_any(a, 2));
    i = mcl_ocl_arg_int(be, k, i, (int)B);
    i = mcl_ocl_arg_int(be, k, i, (int)C);
    i = mcl_ocl_arg_int(be, k, i, (int)H);
    i = mcl_ocl_arg_int(be, k, i, (int)W);
    i = mcl_ocl_arg_long(be, k, i, mg);
    return mcl_ocl_arg_long(be, k, i, mb);
}

mcl_status mcl_ocl_inorm_pool_relu_bwd(mcl_backend *be, const mcl_op_args *a)
{
    const mcl_tensor *x = a->in[0];
    const int64_t B = x->shape[0], C = x->shape[1], H = x->shape[2], W = x->shape[3];
    char wb[160];
    mcl_status s;
    if (planes_check(be, "inorm_pool_relu backward", x) != MCL_OK) return mcl_ocl_recorded(be);
    if (a->gin[0] && (a->gin[1] || a->gin[2])) {
        /* one launch (inorm_pool_relu_bwd_all) when the planes and the channels take the same
         * group size, so that each part sums exactly as its own kernel would */
        size_t wg;
        cl_kernel k = mcl_ocl_kernel(be, "inorm_pool_relu_bwd_all", &wg);
        if (!k) return mcl_ocl_recorded(be);
        const size_t WG = mcl_ocl_row_wg(wg, H * W);
        if (WG == mcl_ocl_row_wg(wg, B * (H / 2) * (W / 2))) {
            int i = mcl_ocl_arg_tensor(be, k, 0, x);
            i = mcl_ocl_arg_tensor(be, k, i, a->in[1]);
            i = ipr_saved_args(be, k, i, a);
            i = mcl_ocl_arg_tensor(be, k, i, a->gin[0]);
            i = ipr_gb_args(be, k, i, a, B, C, H, W, a->gin[1] != NULL, a->gin[2] != NULL);
            /* __local: WG float4 = 16·WG bytes (4 KiB at 256) */
            i = mcl_ocl_arg_local(be, k, i, WG * 4 * sizeof(float));
            what(wb, sizeof wb, "inorm_pool_relu", 1, "inorm_pool_relu_bwd_all", x);
            return mcl_ocl_launch_groups(be, k, i, (size_t)(B * C + C), WG, wb);
        }
    }
    if (a->gin[0]) {
        size_t wg;
        cl_kernel k = mcl_ocl_kernel(be, "inorm_pool_relu_bwd_dx", &wg);
        if (!k) return mcl_ocl_recorded(be);
        const size_t WG = mcl_ocl_row_wg(wg, H * W);
        int i = mcl_ocl_arg_tensor(be, k, 0, x);
        i = mcl_ocl_arg_tensor(be, k, i, a->in[1]);
        i = ipr_saved_args(be, k, i, a);
        i = mcl_ocl_arg_tensor(be, k, i, a->gin[0]);
        i = mcl_ocl_arg_int(be, k, i, (int)C);
        i = mcl_ocl_arg_int(be, k, i, (int)H);
        i = mcl_ocl_arg_int(be, k, i, (int)W);
        /* __local: WG float4 = 16·WG bytes (4 KiB at 256) */
        i = mcl_ocl_arg_local(be, k, i, WG * 4 * sizeof(float));
        what(wb, sizeof wb, "inorm_pool_relu", 1, "inorm_pool_relu_bwd_dx", x);
        s = mcl_ocl_launch_groups(be, k, i, (size_t)(B * C), WG, wb);
        if (s != MCL_OK) return s;
    }
    if (a->gin[1] || a->gin[2]) {
        size_t wg;
        cl_kernel k = mcl_ocl_kernel(be, "inorm_pool_relu_bwd_gb", &wg);
        if (!k) return mcl_ocl_recorded(be);
        const size_t WG = mcl_ocl_row_wg(wg, B * (H / 2) * (W / 2));
        int i = mcl_ocl_arg_tensor(be, k, 0, x);
        i = ipr_saved_args(be, k, i, a);
        i = ipr_gb_args(be, k, i, a, B, C, H, W, a->gin[1] != NULL, a->gin[2] != NULL);
        /* __local: WG float4 = 16·WG bytes (4 KiB at 256) */
        i = mcl_ocl_arg_local(be, k, i, WG * 4 * sizeof(float));
        what(wb, sizeof wb, "inorm_pool_relu", 1, "inorm_pool_relu_bwd_gb", x);
        s = mcl_ocl_launch_groups(be, k, i, (size_t)C, WG, wb);
        if (s != MCL_OK) return s;
    }
    return MCL_OK;
}

/* ------------------------------------------------------------------------------------ */
/* inorm_add_pool_relu: instance_norm -> + skip -> relu -> maxpool2d in one op (equations:
 * src/ref/inorm.c)
 *   in[0] x [B,C,H,W], in[1] gamma [C], in[2] beta [C], in[3] s [B,C,H,W] (the skip);
 *   p.f[0] = eps (no dropout: p.f[1] = 0)
 *   out[0] y [B,C,H/2,W/2], out[1] mean [B*C], out[2] rstd [B*C], out[3] arg [B,C,H/2,W/2]
 * inorm_pool_relu's scheme and kernels' code with z = n + s in place of n: forward one
 * work-group per plane; backward the planes (gx, and gs: the window's gradient at its argmax,
 * 0 elsewhere) and the channels (ggamma, gbeta) in one kernel, inorm_add_pool_relu_bwd
 * (fused_bwd_launch); a fresh gin is stored, not added to (fused_grad_mode). */
mcl_status mcl_ocl_inorm_add_pool_relu_fwd(mcl_backend *be, const mcl_op_args *a)
{
    return ipr_fwd(be, a, 1);
}

/* backward, with gz = 0 + (y > 0 ? gout : 0) at each window's argmax pixel, 0 at every other
 * pixel (the odd last row/column too):
 *   gs[r, j]  += gz[r, j]
 *   gx, ggamma, gbeta: instance_norm's backward with gout = gz (inorm_pool_relu's sums) */
mcl_status mcl_ocl_inorm_add_pool_relu_bwd(mcl_backend *be, const mcl_op_args *a)
{
    const mcl_tensor *x = a->in[0];
    const int64_t B = x->shape[0], C = x->shape[1], H = x->shape[2], W = x->shape[3];
    const int want_p = a->gin[0] || a->gin[3], want_c = a->gin[1] || a->gin[2];
    char wb[160];
    size_t wg;
    if (!want_p && !want_c) return MCL_OK;
    if (planes_check(be, "inorm_add_pool_relu backward", x) != MCL_OK) return mcl_ocl_recorded(be);
    cl_kernel k = mcl_ocl_kernel(be, "inorm_add_pool_relu_bwd", &wg);
    if (!k) return mcl_ocl_recorded(be);
    /* in the order the kernel writes: gx before gs (so the two may be one tensor), then
     * ggamma before gbeta */
    mcl_status s = MCL_OK;
    const int64_t mx = fused_grad_mode(be, a->gin[0], &s);
    const int64_t ms = fused_grad_mode(be, a->gin[3], &s);
    const int64_t mg = fused_grad_mode(be, a->gin[1], &s);
    const int64_t mb = fused_grad_mode(be, a->gin[2], &s);
    if (s != MCL_OK) return s;
    int i = mcl_ocl_arg_tensor(be, k, 0, x);
    i = mcl_ocl_arg_tensor(be, k, i, a->in[1]);
    i = ipr_saved_args(be, k, i, a);
    i = mcl_ocl_arg_tensor(be, k, i, gin_or_any(a, 0));
    i = mcl_ocl_arg_long(be, k, i, mx);
    i = mcl_ocl_arg_tensor(be, k, i, gin_or_any(a, 3));
    i = mcl_ocl_arg_long(be, k, i, ms);
    i = ipr_gb_args(be, k, i, a, B, C, H, W, mg, mb);
    what(wb, sizeof wb, "inorm_add_pool_relu", 1, "inorm_add_pool_relu_bwd", x);
    return fused_bwd_launch(be, k, i, B * C, C, mcl_ocl_row_wg(wg, H * W),
                            mcl_ocl_row_wg(wg, B * (H / 2) * (W / 2)), want_p, want_c, wb);
}

/* ------------------------------------------------------------------------------------ */
/* conv_inorm_pool_relu: conv2d (stride 1, padding p.i[1]) then inorm_pool_relu with its
 * dropout (equations: src/ref/conv_block.c). Here the two ops' own host code and kernels run
 * on a device buffer holding the convolution's output c (and, backward, c again and its
 * gradient), taken from the pool and given back at the end of the call: the same kernels in
 * the same order as conv2d then inorm_pool_relu, so the same bits as the two ops on this
 * device. On a device c still makes its round trip through memory, and the backward's second
 * convolution adds three launches, so the models run the two ops here (src/nn/conv4.c); the
 * op is complete on this backend for what the op table promises (tests, any caller). */

/* A tensor of this backend over a pool block of n floats: *mb is its buffer, the block is
 * h (freed by the caller with be->buf_free). Zero-filled, as every new buffer. */
static mcl_status cipr_temp(mcl_backend *be, const mcl_tensor *like, int64_t n, const int64_t sh[4],
                            mcl_buffer *mb, mcl_tensor *t, void **h)
{
    *h = NULL;
    mcl_status s = be->buf_alloc(be, (size_t)n * sizeof(float), h);
    if (s != MCL_OK) return s;
    memset(mb, 0, sizeof *mb);
    mb->be = be;
    mb->handle = *h;
    mb->nbytes = (size_t)n * sizeof(float);
    mb->refcnt = 1;
    memset(t, 0, sizeof *t);
    t->ctx = like->ctx;
    t->buf = mb;
    t->ndim = 4;
    for (int d = 0; d < 4; d++) t->shape[d] = sh[d];
    t->refcnt = 1;
    return MCL_OK;
}

/* The call records of the two ops: conv2d (x, w, bias -> c) and inorm_pool_relu (c, gamma,
 * beta -> the op's outputs), with the op's parameters split between them. */
static void cipr_split(const mcl_op_args *a, mcl_tensor *c, mcl_op_args *conv, mcl_op_args *tail)
{
    memset(conv, 0, sizeof *conv);
    conv->op = MCL_OP_CONV2D;
    conv->in[0] = a->in[0];
    conv->in[1] = a->in[1];
    conv->in[2] = a->in[2];
    conv->out[0] = c;
    conv->p.i[0] = 1;
    conv->p.i[1] = a->p.i[1];
    memset(tail, 0, sizeof *tail);
    tail->op = MCL_OP_INORM_POOL_RELU;
    tail->in[0] = c;
    tail->in[1] = a->in[3];
    tail->in[2] = a->in[4];
    for (int k = 0; k < 4; k++) tail->out[k] = a->out[k];
    tail->p = a->p;
    tail->p.i[1] = 0;
}

/* c's shape [B, O, Ho, Wo] and its number of floats */
static int64_t cipr_shape(const mcl_op_args *a, int64_t sh[4])
{
    const mcl_tensor *x = a->in[0], *w = a->in[1];
    const int64_t k = w->shape[2], pd = a->p.i[1];
    sh[0] = x->shape[0];
    sh[1] = w->shape[0];
    sh[2] = x->shape[2] + 2 * pd - k + 1;
    sh[3] = x->shape[3] + 2 * pd - k + 1;
    return sh[0] * sh[1] * sh[2] * sh[3];
}

mcl_status mcl_ocl_conv_inorm_pool_relu_fwd(mcl_backend *be, const mcl_op_args *a)
{
    int64_t sh[4];
    const int64_t n = cipr_shape(a, sh);
    mcl_buffer mb;
    mcl_tensor c;
    void *h;
    mcl_status s = cipr_temp(be, a->in[0], n, sh, &mb, &c, &h);
    if (s != MCL_OK) return s;
    mcl_op_args conv, tail;
    cipr_split(a, &c, &conv, &tail);
    /* each op's lazy zeroing first, as the dispatcher does for an op (buffers.c) */
    s = mcl_ocl_prepare_fwd(be, &conv);
    if (s == MCL_OK) s = mcl_ocl_conv2d_fwd(be, &conv);
    if (s == MCL_OK) s = mcl_ocl_prepare_fwd(be, &tail);
    if (s == MCL_OK) s = mcl_ocl_inorm_pool_relu_fwd(be, &tail);
    be->buf_free(be, h); /* back to the pool; the in-order queue finishes with it first */
    return s;
}

/* backward: c again (conv2d's forward), gc = the tail's gradient of c (into a zero buffer, as
 * into a fresh gradient), then conv2d's backward from gc */
mcl_status mcl_ocl_conv_inorm_pool_relu_bwd(mcl_backend *be, const mcl_op_args *a)
{
    const int want_c = a->gin[0] || a->gin[1] || a->gin[2];
    if (!want_c && !a->gin[3] && !a->gin[4]) return MCL_OK;
    int64_t sh[4];
    const int64_t n = cipr_shape(a, sh);
    mcl_buffer mb, gmb;
    mcl_tensor c, gc;
    void *h, *gh = NULL;
    mcl_status s = cipr_temp(be, a->in[0], n, sh, &mb, &c, &h);
    if (s != MCL_OK) return s;
    if (want_c) s = cipr_temp(be, a->in[0], n, sh, &gmb, &gc, &gh);
    mcl_op_args conv, tail;
    cipr_split(a, &c, &conv, &tail);
    /* each op's lazy zeroing first, as the dispatcher does for an op (buffers.c): gc, a
     * fresh block, is zero-filled before the tail adds into it */
    if (s == MCL_OK) s = mcl_ocl_prepare_fwd(be, &conv);
    if (s == MCL_OK) s = mcl_ocl_conv2d_fwd(be, &conv);
    if (s == MCL_OK) {
        tail.gout[0] = a->gout[0];
        tail.gin[0] = want_c ? &gc : NULL;
        tail.gin[1] = a->gin[3];
        tail.gin[2] = a->gin[4];
        s = mcl_ocl_prepare_bwd(be, &tail, 0);
        if (s == MCL_OK) s = mcl_ocl_inorm_pool_relu_bwd(be, &tail);
    }
    if (s == MCL_OK && want_c) {
        conv.gout[0] = &gc;
        conv.gin[0] = a->gin[0];
        conv.gin[1] = a->gin[1];
        conv.gin[2] = a->gin[2];
        s = mcl_ocl_prepare_bwd(be, &conv, 0);
        if (s == MCL_OK) s = mcl_ocl_conv2d_bwd(be, &conv);
    }
    if (gh) be->buf_free(be, gh);
    be->buf_free(be, h);
    return s;
}
