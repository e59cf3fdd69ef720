/* conv4.c — the Conv-4 feature extractor (see conv4.h). */
#include "conv4.h"

#include <math.h>
#include <stdio.h>

/* s = floor(S / 2^4): four 2×2 max-pools with floor, e.g. 32 → 16 → 8 → 4 → 2 and
 * 28 → 14 → 7 → 3 → 1 (an odd last row/column is dropped, as PyTorch's MaxPool2d(2)). */
int mcl_conv4_out_side(int image_size)
{
    int s = image_size;
    for (int i = 0; i < 4; i++) s /= 2;
    return s;
}

mcl_status mcl_conv4_create(mcl_conv4 *net, mcl_ctx *ctx, mcl_params *params, int in_channels,
                            int channels, int image_size, uint64_t seed, uint64_t stream0)
{
    if (in_channels < 1 || channels < 1 || image_size < MCL_CONV4_MIN_IMAGE ||
        image_size > MCL_CONV4_MAX_IMAGE)
        return mcl_ctx_set_error(ctx, MCL_ERR_INVALID,
                                 "Conv-4: %d input channels, %d channels, image %d (need >= 1 "
                                 "channel and a side in %d..%d)",
                                 in_channels, channels, image_size, MCL_CONV4_MIN_IMAGE,
                                 MCL_CONV4_MAX_IMAGE);
    net->in_channels = in_channels;
    net->channels = channels;
    net->image_size = image_size;
    const int64_t sp = mcl_conv4_out_side(image_size), C = channels;
    net->n_features = C * sp * sp;
    char name[48];
    mcl_status st = MCL_OK;
    for (int i = 0; i < 4 && st == MCL_OK; i++) {
        const int64_t cin = i == 0 ? in_channels : C;
        const int64_t sw[4] = {C, cin, 3, 3}, sc[1] = {C};
        snprintf(name, sizeof name, "conv%d.w", i);
        net->w[i] = mcl_params_add(params, name, 4, sw);
        snprintf(name, sizeof name, "conv%d.b", i);
        net->b[i] = mcl_params_add(params, name, 1, sc);
        snprintf(name, sizeof name, "conv%d.norm.g", i);
        net->norm_g[i] = mcl_params_add(params, name, 1, sc);
        snprintf(name, sizeof name, "conv%d.norm.b", i);
        net->norm_b[i] = mcl_params_add(params, name, 1, sc);
        if (!net->w[i] || !net->b[i] || !net->norm_g[i] || !net->norm_b[i])
            return mcl_ctx_status(ctx) != MCL_OK ? mcl_ctx_status(ctx)
                                                 : mcl_ctx_set_error(ctx, MCL_ERR_OOM, "Conv-4: parameters");
        /* He-normal for the conv weights feeding ReLU blocks; bias 0; norm gain 1, shift 0 */
        st = mcl_tensor_randn(net->w[i], seed, stream0 + 4 * (uint64_t)i, 0.0f,
                              sqrtf(2.0f / (float)(cin * 9)));
        if (st == MCL_OK) st = mcl_tensor_fill(net->b[i], 0.0f);
        if (st == MCL_OK) st = mcl_tensor_fill(net->norm_g[i], 1.0f);
        if (st == MCL_OK) st = mcl_tensor_fill(net->norm_b[i], 0.0f);
    }
    return st;
}

/* Layer i as one op, conv_inorm_pool_relu, when its convolution has few input channels (C·3·3
 * < MCL_CONV4_FUSED_KK: a first layer on grey or colour images) and the context is the
 * reference backend's: such a convolution is bound by memory, and that op never stores its
 * output (the same values and gradients as conv2d then inorm_pool_relu, doc/reference-backend.md).
 * The other layers' convolutions are bound by their multiply-adds, which the op would do twice
 * (its backward computes the convolution again). On OpenCL the op runs the two ops' kernels
 * over a device buffer, and its backward's second convolution would only add three launches
 * per step (tests/test-stalls holds the count): there the layer stays two ops. */
static int conv4_fused(mcl_ctx *ctx, const mcl_conv4 *net, int i)
{
    const int cin = i == 0 ? net->in_channels : net->channels;
    return cin * 9 < MCL_CONV4_FUSED_KK && mcl_ctx_backend_kind(ctx) == MCL_BACKEND_REF;
}

mcl_tensor *mcl_conv4_forward(mcl_ctx *ctx, const mcl_conv4 *net, mcl_tensor *x, int64_t rows,
                              float p, int training)
{
    /* norm → pool → relu → dropout in one op (the same numbers as the four in a row):
     * dropout scales kept values by 1/(1 − p) > 0 and zeroes the rest, so it commutes with
     * the ReLU (same values, same gradients), and it draws the same mask either way; a first
     * layer's convolution in that op too (conv4_fused) */
    for (int i = 0; i < 4; i++) {
        if (conv4_fused(ctx, net, i)) {
            x = mcl_conv_inorm_pool_relu_dropout(ctx, x, net->w[i], net->b[i], 1, net->norm_g[i], net->norm_b[i],
                                                 MCL_CONV4_NORM_EPS, p, training);
            continue;
        }
        x = mcl_conv2d(ctx, x, net->w[i], net->b[i], 1, 1);
        x = mcl_inorm_pool_relu_dropout(ctx, x, net->norm_g[i], net->norm_b[i], MCL_CONV4_NORM_EPS,
                                        p, training);
    }
    const int64_t fs[2] = {rows, net->n_features};
    return mcl_reshape(ctx, x, 2, fs);
}

mcl_tensor *mcl_conv4_forward_segments(mcl_ctx *ctx, const mcl_conv4 *net, mcl_tensor *x,
                                       int64_t rows, float p, int training, int64_t n_seg,
                                       uint64_t stream0, uint64_t step)
{
    if (n_seg < 1 || rows % n_seg != 0) {
        mcl_ctx_set_error(ctx, MCL_ERR_INVALID, "Conv-4: %lld rows in %lld segments",
                          (long long)rows, (long long)n_seg);
        return NULL;
    }
    for (int i = 0; i < 4; i++) {
        const int drop = p > 0.0f && training;
        if (conv4_fused(ctx, net, i)) { /* p = 0: no dropout, no draws (the key is then unused) */
            x = mcl_conv_inorm_pool_relu_dropout_segments(ctx, x, net->w[i], net->b[i], 1, net->norm_g[i],
                                                          net->norm_b[i], MCL_CONV4_NORM_EPS, drop ? p : 0.0f,
                                                          mcl_ctx_seed(ctx), stream0 + (uint64_t)i, step,
                                                          drop ? n_seg : 1);
            continue;
        }
        x = mcl_conv2d(ctx, x, net->w[i], net->b[i], 1, 1);
        if (drop)
            x = mcl_inorm_pool_relu_dropout_segments(ctx, x, net->norm_g[i], net->norm_b[i],
                                                     MCL_CONV4_NORM_EPS, p, mcl_ctx_seed(ctx),
                                                     stream0 + (uint64_t)i, step, n_seg);
        else
            x = mcl_inorm_pool_relu(ctx, x, net->norm_g[i], net->norm_b[i], MCL_CONV4_NORM_EPS);
    }
    const int64_t fs[2] = {rows, net->n_features};
    return mcl_reshape(ctx, x, 2, fs);
}
