/* conv4.h — the Conv-4 feature extractor shared by every image model (the ACL model, the
 * baselines, later the online transformers' frozen or joint extractor).
 *
 *   4 × [ conv 3×3 (pad 1, stride 1, bias) → instance norm (affine, eps 1e-5) → max-pool 2×2
 *         → dropout(p) → ReLU ]
 *
 * computed as conv2d → inorm_pool_relu (the norm, pool, ReLU and dropout in one op, ops.def):
 * the ReLU commutes with dropout's positive scaling, so the numbers are the same. On the reference
 * backend, a layer whose convolution has few input channels (C_in · 9 < MCL_CONV4_FUSED_KK: the
 * first, on grey or colour images) is one op, conv_inorm_pool_relu: the same numbers again, the
 * convolution's output never stored.
 *
 * x [R, C_in, S, S] → features [R, C · s²] in (channel, row, column) order, s = the side
 * after four 2×2 max-pools with floor (mcl_conv4_out_side: S = 32 → 2, S = 28 → 1; an odd
 * row/column is dropped, as PyTorch's MaxPool2d(2)). Any S >= 16 works.
 *
 * Parameters (registered in the caller's mcl_params in this order, names conv<i>.w,
 * conv<i>.b, conv<i>.norm.g, conv<i>.norm.b for i = 0..3):
 *   conv<i>.w  [C, C_in (i = 0) or C, 3, 3]   He-normal N(0, 2 / (9·c_in)) from Philox stream
 *                                            stream0 + 4·i (key: the caller's seed)
 *   conv<i>.b  [C]  0      conv<i>.norm.g [C]  1      conv<i>.norm.b [C]  0
 * so the 16 tensors take the streams stream0 .. stream0 + 15 (the b/g/β slots are unused).
 */
#ifndef MCL_NN_CONV4_H
#define MCL_NN_CONV4_H

#include <stdint.h>

#include "metacl.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MCL_CONV4_NORM_EPS 1e-5f
#define MCL_CONV4_MIN_IMAGE 16   /* 2^4: the smallest side that leaves s >= 1       */
#define MCL_CONV4_MAX_IMAGE 4096 /* the largest side accepted (the model's key bound) */
#define MCL_CONV4_FUSED_KK 32    /* a layer with C_in·9 below this is conv_inorm_pool_relu */

typedef struct mcl_conv4 {
    int in_channels, channels, image_size;
    int64_t n_features; /* channels · s², s = mcl_conv4_out_side(image_size) */
    mcl_tensor *w[4], *b[4], *norm_g[4], *norm_b[4];
} mcl_conv4;

/* s = floor(S / 16) computed as four floor halvings (the side of the last block's map). */
int mcl_conv4_out_side(int image_size);

/* Register and initialize the 16 tensors (see above) in params. image_size in
 * MCL_CONV4_MIN_IMAGE..MCL_CONV4_MAX_IMAGE (any, odd sides too). Errors in params' context. */
mcl_status mcl_conv4_create(mcl_conv4 *net, mcl_ctx *ctx, mcl_params *params, int in_channels,
                            int channels, int image_size, uint64_t seed, uint64_t stream0);

/* x [rows, C_in, S, S] → [rows, n_features]; dropout p when training (p = 0 or not
 * training: no dropout op at all). NULL on error (message in ctx). */
mcl_tensor *mcl_conv4_forward(mcl_ctx *ctx, const mcl_conv4 *net, mcl_tensor *x, int64_t rows,
                              float p, int training);

/* The same over n_seg equal segments of x (rows / n_seg images each, e.g. the images of
 * several calls in one launch per op): block i's dropout gives segment s the mask that
 * mcl_conv4_forward would draw on that segment alone with block i's stream
 * stream0 + i + s·step (mcl_dropout_segments). Takes no stream from ctx. Each image's
 * features are the same as alone (every op but the weights' gradient works image by image;
 * the weights' gradient sums over all the segments' images at once). */
mcl_tensor *mcl_conv4_forward_segments(mcl_ctx *ctx, const mcl_conv4 *net, mcl_tensor *x,
                                       int64_t rows, float p, int training, int64_t n_seg,
                                       uint64_t stream0, uint64_t step);

#ifdef __cplusplus
}
#endif
#endif
