/* conv_s1.h — conv2d's stride-1 path one image at a time (conv.c), for an op that runs the
 * convolution of an image inside a larger pass over that image (conv_block.c's
 * conv_inorm_pool_relu: the convolution's output planes never leave the core's caches).
 * Internal to the reference backend.
 *
 * conv2d's own forward and backward are these same functions in a loop over the images, so an
 * image computed here has the bits conv2d gives it: every sum keeps its order (conv.c's top). */
#ifndef MCL_REF_CONV_S1_H
#define MCL_REF_CONV_S1_H

#include <stdint.h>

#include "ref.h"

/* Shapes of one convolution (validated by the front end, ops.c). */
typedef struct mcl_ref_conv_dims {
    int64_t B, C, H, W; /* x [B,C,H,W]                  */
    int64_t O, k;       /* w [O,C,k,k]                  */
    int64_t s, pd;      /* stride, zero padding         */
    int64_t Ho, Wo, P;  /* out [B,O,Ho,Wo], P = Ho*Wo   */
    int64_t KK;         /* C*k*k: rows of col, K of GEMM */
} mcl_ref_conv_dims;

/* The stride-1 shapes of one call: planes, grids, offsets. */
typedef struct mcl_ref_s1_dims {
    int64_t Hp, Wp, J, Jr;       /* x planes, forward/gw grid J = Ho*Wp, Jr = round_up(J, S1_NR) */
    int64_t pg, Hg, Wg, Jx, Jxr; /* g planes (border pg = k-1-pd), gx grid Jx = H*Wg         */
    int64_t xpn, gpn;            /* floats of one image's x planes / g planes, with the slack */
} mcl_ref_s1_dims;

/* What the forward of one call shares between its images: shapes, the chosen path, offsets,
 * the weights (transposed for the pixel-major product). */
typedef struct mcl_ref_s1_fwd {
    mcl_ref_conv_dims d;
    mcl_ref_s1_dims e;
    const float *w, *bias;
    int swap, flat;        /* pixel-major product; the flat layout of a first layer      */
    int stream, stream_img; /* out_b streamed (flat tiles; through the scratch img)       */
    int64_t vs, nxp, nband; /* flat version size; per-thread floats of xp and band        */
    int64_t off_img;        /* where the work space's img starts (after xp and band)      */
    int64_t *roff;
    float *zeros, *wt;
} mcl_ref_s1_fwd;

/* Plan the forward of the convolution d (stride 1) of weights w [O,C,k,k] and bias [O]. out:
 * the output tensor's first element, whose alignment decides whether large outputs are
 * streamed; NULL: the images go to scratch the caller reads next (never streamed).
 * MCL_ERR_OOM when its small shared arrays cannot be allocated (nothing to free then). */
mcl_status mcl_ref_s1_fwd_init(mcl_ref_s1_fwd *pl, const mcl_ref_conv_dims *d, const float *w,
                               const float *bias, const float *out);
void mcl_ref_s1_fwd_free(mcl_ref_s1_fwd *pl);
/* One thread's work space (free with free()), or NULL when out of memory. */
float *mcl_ref_s1_fwd_ws(const mcl_ref_s1_fwd *pl);
/* out_b [O, P] = w · x_b + bias, x_b [C,H,W]; xnext: the thread's next image (fetched
 * meanwhile) or NULL. A streamed plan leaves its stores to be fenced (_mm_sfence) before
 * another thread reads them. */
void mcl_ref_s1_fwd_image(const mcl_ref_s1_fwd *pl, float *ws, const float *xb, const float *xnext,
                          float *ob);

/* The backward's shared part: shapes, paths, offsets, the flipped weights for gx. */
typedef struct mcl_ref_s1_bwd {
    mcl_ref_conv_dims d;
    mcl_ref_s1_dims e;
    int want_x, want_w, want_b;
    int dot, swap, fresh_x, stream_gx;
    int64_t KKx, Cr, KKr, On, Cn, Od, Jd, nf; /* nf: the work space's floats but img's (16n) */
    int64_t off_gp, off_band, off_gT, off_prod; /* the work space: xp, gp, band, gT (gg), prod */
    float *wt, *wtt, *zeros;
    int64_t *off, *roff, *roffx, *koff;
} mcl_ref_s1_bwd;

/* Plan the backward of convolution d with weights w: gx the gradient of x (NULL: not wanted),
 * asked whether it is fresh (mcl_ref_grad_fresh: then stored, and streamed when large and
 * aligned) once the plan's arrays exist; want_w, want_b: the other two wanted. MCL_ERR_OOM as
 * the forward's. */
mcl_status mcl_ref_s1_bwd_init(mcl_ref_s1_bwd *pl, const mcl_ref_conv_dims *d, const float *w,
                               const mcl_tensor *gx, int want_w, int want_b);
void mcl_ref_s1_bwd_free(mcl_ref_s1_bwd *pl);
/* One thread's work space (free with free()), or NULL when out of memory. */
float *mcl_ref_s1_bwd_ws(const mcl_ref_s1_bwd *pl);
/* Where the output gradient of an image may be written directly for mcl_ref_s1_bwd_image
 * (then called with gb NULL): plane o's row oy at grid + o *ldp + oy *ld, floats Wo each (the
 * other columns of the grid stay 0; the weight gradient's dot products read it there, so the
 * copy of gb onto the grid is saved). NULL when this plan cannot take it (gx wanted, no
 * weight gradient, a weight gradient that is not dot products, or rows that are not a whole
 * number of the bias sums' lanes): then pass gb. ws: the thread's work space. */
float *mcl_ref_s1_bwd_grid(const mcl_ref_s1_bwd *pl, float *ws, int64_t *ld, int64_t *ldp);
/* Doubles of one chunk's sums: pw [O, KK], then pb [O]. */
int64_t mcl_ref_s1_bwd_part(const mcl_ref_s1_bwd *pl);
/* Image b of a chunk (first: the chunk's first image), g_b [O, P] its output gradient:
 *   pb[o] += sum_p g_b[o, p] (double);  gx_b (=, +=) the gradient of x_b;
 *   pw (through the chunk's product in ws, or directly) the weight gradient.
 * xnext, gnext: the next image's x and g, fetched meanwhile (NULL: none). gb NULL: g is on
 * the plan's grid already (mcl_ref_s1_bwd_grid). */
void mcl_ref_s1_bwd_image(const mcl_ref_s1_bwd *pl, float *ws, int first, const float *xb,
                          const float *gb, const float *xnext, const float *gnext, float *gxb,
                          double *pw, double *pb);
/* After a chunk's last image: its weight-gradient product into pw. */
void mcl_ref_s1_bwd_chunk_end(const mcl_ref_s1_bwd *pl, const float *ws, double *pw);
/* gw (+)= the chunk sums of pw, gbias (+)= those of pb, chunks in order (part: nchunks blocks
 * of mcl_ref_s1_bwd_part doubles); gw, gbias NULL when not wanted, each asked whether it is
 * fresh (then stored) just before it is written. */
void mcl_ref_s1_bwd_store(const mcl_ref_s1_bwd *pl, const double *part, int64_t nchunks, const mcl_tensor *gw,
                          const mcl_tensor *gbias);

/* Fixed chunks of images of a backward (conv2d's, inorm_pool_relu's): min(B, 16); chunk c
 * holds the images [B c / n, B (c + 1) / n). */
int64_t mcl_ref_conv_chunks(int64_t B);

#endif
