/* conv_block.c — conv_inorm_pool_relu: a convolution and the Conv-4 block's tail in one pass per
 * image (ops.def; the conv family, kept out of conv.c and conv_tail.c by purpose).
 *
 * With c = conv2d(x, w, bias) (stride 1, zero padding pd = p.i[1]) and everything else as
 * inorm_pool_relu(c, gamma, beta) with its dropout (conv_tail.c's equations):
 *   forward   y, mean, rstd, arg = inorm_pool_relu(c)          (dropout: mask at y's flat index)
 *   backward  gc = the gradient inorm_pool_relu's backward gives c (stored: c has no other reader)
 *             gx, gw, gbias = conv2d's backward with gout = gc;  ggamma, gbeta = inorm_pool_relu's
 *   in[0] x [B,C,H,W], in[1] w [O,C,k,k], in[2] bias [O], in[3] gamma [O], in[4] beta [O]
 *   out[0] y [B,O,Ho/2,Wo/2], out[1] mean [B·O], out[2] rstd [B·O], out[3] arg [B,O,Ho/2,Wo/2]
 * The readable form is conv2d then inorm_pool_relu (src/ref/naive/conv.c and norm.c).
 *
 * Why one op. In Conv-4's first layer the convolution has one input channel: 9 multiply-adds
 * per output value, so conv2d and inorm_pool_relu are both bound by memory, and most of their
 * traffic is c itself (32 planes per image, 4x the pooled output): conv2d writes it,
 * inorm_pool_relu reads it, and backward the gradient of c is written and read once more. Here
 * c exists one image at a time in a thread's scratch (O·Ho·Wo floats, 128 KiB for 32 x 32 x
 * 32: in L2), and its gradient too. The backward computes c again from x (cheap at 9
 * multiply-adds per value; for a layer with many input channels the op would cost a second
 * forward convolution, so the models use it for first layers only: src/nn/conv4.c).
 *
 * The same bits as the two ops. Each image's c comes from conv2d's own per-image code
 * (conv_s1.h: the plan, the tiles, the order of every sum); each plane's statistics, windows,
 * dropout mask and gradients from inorm_pool_relu's per-plane code (mcl_ref_ipr_*_plane);
 * the backward walks the same fixed chunks of images as both ops' backwards
 * (mcl_ref_conv_chunks), images in order within a chunk, so that the double sums of the
 * parameter gradients (conv2d's per chunk, inorm_pool_relu's per chunk and channel) add the
 * same terms in the same order, and are rounded once at the end, chunks in order. So every
 * result is the same for any thread count, and equal to conv2d then inorm_pool_relu's.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(__AVX512F__)
#include <immintrin.h>
#endif

#include "conv_s1.h"
#include "ref.h"

/* Below this many values of c the image loop runs on the calling thread (as conv.c). */
#define PAR_MIN 32768

/* The convolution's shapes from the op's inputs (stride 1, padding p.i[1]). */
static void block_dims(const mcl_op_args *a, mcl_ref_conv_dims *d)
{
    const mcl_tensor *x = a->in[0], *w = a->in[1];
    d->B = x->shape[0];
    d->C = x->shape[1];
    d->H = x->shape[2];
    d->W = x->shape[3];
    d->O = w->shape[0];
    d->k = w->shape[2];
    d->s = 1;
    d->pd = a->p.i[1];
    d->Ho = d->H + 2 * d->pd - d->k + 1;
    d->Wo = d->W + 2 * d->pd - d->k + 1;
    d->P = d->Ho * d->Wo;
    d->KK = d->C * d->k * d->k;
}

/* n floats at a 64-byte boundary, freed with free(); NULL if out of memory */
static float *alloc_floats64(int64_t n)
{
    const size_t bytes = ((size_t)n * sizeof(float) + 63) & ~(size_t)63;
    return aligned_alloc(64, bytes ? bytes : 64);
}

mcl_status mcl_ref_conv_inorm_pool_relu_fwd(mcl_backend *be, const mcl_op_args *a)
{
    (void)be;
    mcl_ref_conv_dims d;
    block_dims(a, &d);
    const float *x = mcl_ref_ptr(a->in[0]), *gamma = mcl_ref_ptr(a->in[3]), *beta = mcl_ref_ptr(a->in[4]);
    float *y = mcl_ref_ptr(a->out[0]), *mean = mcl_ref_ptr(a->out[1]);
    float *rstd = mcl_ref_ptr(a->out[2]), *arg = mcl_ref_ptr(a->out[3]);
    const int64_t CHW = d.C * d.H * d.W, OP = d.O * d.P, Pp = (d.Ho / 2) * (d.Wo / 2);
    const double eps = (double)a->p.f[0];
    const mcl_ref_drop_key dk = {a->p.u[0], a->p.u[1], a->p.u[2], a->p.u[3], a->p.i[0], a->p.f[1]};
    mcl_ref_s1_fwd pl;
    if (mcl_ref_s1_fwd_init(&pl, &d, mcl_ref_ptr(a->in[1]), mcl_ref_ptr(a->in[2]), NULL) != MCL_OK)
        return MCL_ERR_OOM;
    int oom = 0;
#pragma omp parallel if (d.B > 1 && d.B * OP > PAR_MIN)
    {
        float *ws = mcl_ref_s1_fwd_ws(&pl), *c = alloc_floats64(OP); /* c: this image's planes */
        if (!ws || !c) {
#pragma omp atomic write
            oom = 1;
        }
#pragma omp for schedule(static)
        for (int64_t b = 0; b < d.B; b++) {
            if (!ws || !c) continue;
            mcl_ref_s1_fwd_image(&pl, ws, x + b * CHW, b + 1 < d.B ? x + (b + 1) * CHW : NULL, c);
            for (int64_t o = 0; o < d.O; o += MCL_REF_IPR_GROUP) {
                const int np = (int)(d.O - o < MCL_REF_IPR_GROUP ? d.O - o : MCL_REF_IPR_GROUP);
                const int64_t r = b * d.O + o;
                double gm[MCL_REF_IPR_GROUP], bt[MCL_REF_IPR_GROUP];
                for (int k = 0; k < np; k++) {
                    gm[k] = (double)gamma[o + k];
                    bt[k] = (double)beta[o + k];
                }
                mcl_ref_ipr_fwd_planes(np, c + o * d.P, NULL, 0, d.Ho, d.Wo, gm, bt, eps, &mean[r], &rstd[r],
                                       y + r * Pp, arg + r * Pp);
            }
            if (dk.p > 0.0f) mcl_ref_dropout_range(&dk, b * d.O * Pp, d.O * Pp, y + b * d.O * Pp);
        }
        free(c);
        free(ws);
    }
    mcl_ref_s1_fwd_free(&pl);
    return oom ? MCL_ERR_OOM : MCL_OK;
}

/* One thread's scratch of the backward: conv2d's forward and backward work spaces, the image's
 * c and its gradient gc [O, P], inorm_pool_relu's per-plane scratch. */
typedef struct block_ws {
    float *fws, *bws, *c, *gc, *isc;
} block_ws;

static int block_ws_alloc(block_ws *t, const mcl_ref_s1_fwd *pf, const mcl_ref_s1_bwd *pb,
                          const mcl_ref_conv_dims *d)
{
    t->fws = mcl_ref_s1_fwd_ws(pf);
    t->bws = mcl_ref_s1_bwd_ws(pb);
    t->c = alloc_floats64(d->O * d->P);
    t->gc = alloc_floats64(d->O * d->P);
    const int64_t ns = mcl_ref_ipr_bwd_scratch(d->Ho, d->Wo);
    t->isc = alloc_floats64(ns);
    if (t->isc) memset(t->isc, 0, (size_t)ns * sizeof(float)); /* its room past the rows stays 0 */
    return t->fws && t->bws && t->c && t->gc && t->isc;
}

static void block_ws_free(block_ws *t)
{
    free(t->fws);
    free(t->bws);
    free(t->c);
    free(t->gc);
    free(t->isc);
}

mcl_status mcl_ref_conv_inorm_pool_relu_bwd(mcl_backend *be, const mcl_op_args *a)
{
    (void)be;
    mcl_ref_conv_dims d;
    block_dims(a, &d);
    const float *x = mcl_ref_ptr(a->in[0]), *w = mcl_ref_ptr(a->in[1]), *gamma = mcl_ref_ptr(a->in[3]);
    const float *y = mcl_ref_ptr(a->out[0]), *mean = mcl_ref_ptr(a->out[1]);
    const float *rstd = mcl_ref_ptr(a->out[2]), *arg = mcl_ref_ptr(a->out[3]);
    const float *g = mcl_ref_ptr(a->gout[0]);
    float *gx = a->gin[0] ? mcl_ref_ptr(a->gin[0]) : NULL;
    float *ggamma = a->gin[3] ? mcl_ref_ptr(a->gin[3]) : NULL;
    float *gbeta = a->gin[4] ? mcl_ref_ptr(a->gin[4]) : NULL;
    const int want_w = a->gin[1] != NULL, want_b = a->gin[2] != NULL;
    const int want_c = gx || want_w || want_b; /* conv2d's backward runs */
    if (!want_c && !ggamma && !gbeta) return MCL_OK;
    const float gs = a->p.f[1] > 0.0f ? 1.0f / (1.0f - a->p.f[1]) : 1.0f; /* dropout's scale */
    const int64_t CHW = d.C * d.H * d.W, OP = d.O * d.P, Pp = (d.Ho / 2) * (d.Wo / 2);
    const int64_t nchunks = mcl_ref_conv_chunks(d.B);
    const int64_t ncp = d.O * d.KK + d.O; /* conv2d's sums per chunk (mcl_ref_s1_bwd_part) */
    /* per chunk: conv2d's pw [O, KK], pb [O]; inorm_pool_relu's sums of gn·xhat, then of gn */
    double *part = calloc((size_t)(nchunks * (ncp + 2 * d.O)), sizeof(double));
    mcl_ref_s1_fwd pf;
    mcl_ref_s1_bwd pb;
    int have_f = 0, have_b = 0;
    if (part) have_f = mcl_ref_s1_fwd_init(&pf, &d, w, mcl_ref_ptr(a->in[2]), NULL) == MCL_OK;
    /* gx asked whether fresh here, once the plan exists (conv2d's order) */
    if (have_f) have_b = mcl_ref_s1_bwd_init(&pb, &d, w, a->gin[0], want_w, want_b) == MCL_OK;
    if (!have_b) {
        if (have_f) mcl_ref_s1_fwd_free(&pf);
        free(part);
        return MCL_ERR_OOM;
    }
    double *npart = part + nchunks * ncp;
    /* gamma and beta fresh: asked before they are written (inorm_pool_relu's order) */
    const int fresh_g = ggamma ? mcl_ref_grad_fresh(a->gin[3]) : 0;
    const int fresh_b = gbeta ? mcl_ref_grad_fresh(a->gin[4]) : 0;
    int oom = 0;
#pragma omp parallel if (nchunks > 1 && d.B * OP > PAR_MIN)
    {
        block_ws t;
        const int ok = block_ws_alloc(&t, &pf, &pb, &d);
        if (!ok) {
#pragma omp atomic write
            oom = 1;
        }
#pragma omp for schedule(static)
        for (int64_t ch = 0; ch < nchunks; ch++) {
            if (!ok) continue;
            double *pw = part + ch * ncp, *pbias = pw + d.O * d.KK;
            double *acc_g = npart + ch * 2 * d.O, *acc_b = acc_g + d.O;
            const int64_t b0 = d.B * ch / nchunks, b1 = d.B * (ch + 1) / nchunks;
            /* gc straight onto the weight gradient's grid where the plan takes it (a first
             * layer: its dot products), else into t.gc for conv2d's backward to copy */
            int64_t ld = d.Wo, ldp = d.P;
            float *grid = want_c ? mcl_ref_s1_bwd_grid(&pb, t.bws, &ld, &ldp) : NULL;
            float *gcb = grid ? grid : t.gc;
            for (int64_t b = b0; b < b1; b++) {
                const int more = b + 1 < b1;
                /* c of image b again, then the tail's backward plane by plane into gc */
                mcl_ref_s1_fwd_image(&pf, t.fws, x + b * CHW, more ? x + (b + 1) * CHW : NULL, t.c);
                for (int64_t o = 0; o < d.O; o++) {
                    const int64_t r = b * d.O + o;
                    double sg, sgx;
                    mcl_ref_ipr_bwd_plane(t.c + o * d.P, g + r * Pp, y + r * Pp, arg + r * Pp, d.Ho, d.Wo,
                                          mean[r], rstd[r], (double)gamma[o], gs, t.isc,
                                          want_c ? gcb + o * ldp : NULL, ld, 1, o + 1 < d.O, &sg, &sgx);
                    acc_g[o] += sgx;
                    acc_b[o] += sg;
                }
                if (want_c)
                    mcl_ref_s1_bwd_image(&pb, t.bws, b == b0, x + b * CHW, grid ? NULL : t.gc,
                                         more ? x + (b + 1) * CHW : NULL,
                                         NULL, gx ? gx + b * CHW : NULL, pw, pbias);
            }
            if (want_c) mcl_ref_s1_bwd_chunk_end(&pb, t.bws, pw);
        }
#if defined(__AVX512F__) && defined(FP_FAST_FMAF)
        if (pb.stream_gx) _mm_sfence(); /* the streamed stores before the others' reads */
#endif
        block_ws_free(&t);
    }
    if (!oom) {
        mcl_ref_norm_affine_grads(npart, nchunks, d.O, ggamma, fresh_g, gbeta, fresh_b);
        mcl_ref_s1_bwd_store(&pb, part, nchunks, a->gin[1], a->gin[2]);
    }
    mcl_ref_s1_bwd_free(&pb);
    mcl_ref_s1_fwd_free(&pf);
    free(part);
    return oom ? MCL_ERR_OOM : MCL_OK;
}
