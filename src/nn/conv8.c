/* conv8.c — the 8-convolution feature extractor (see conv8.h). */
#include "conv8.h"

#include <math.h>
#include <stdio.h>

static mcl_tensor *add_param(mcl_params *p, const char *name, int nd, const int64_t *shape)
{
    return mcl_params_add(p, name, nd, shape);
}

mcl_status mcl_conv8_create(mcl_conv8 *net, mcl_ctx *ctx, mcl_params *params, int in_channels,
                            int base, int image_size, int n_features, uint64_t seed,
                            uint64_t stream0)
{
    if (in_channels < 1 || base < 1 || image_size < 16 || image_size % 16 != 0 || n_features < 1)
        return mcl_ctx_set_error(ctx, MCL_ERR_INVALID,
                                 "Conv-8: %d input channels, channel base %d, image %d (a "
                                 "multiple of 16), %d features",
                                 in_channels, base, image_size, n_features);
    net->in_channels = in_channels;
    net->base = base;
    net->image_size = image_size;
    net->n_features = n_features;
    char name[48];
    mcl_status st = MCL_OK;
    int64_t cin = in_channels;
    for (int i = 0; i < 8 && st == MCL_OK; i++) {
        const int64_t c = (int64_t)base << (i / 2);
        const int64_t sw[4] = {c, cin, 3, 3}, sb[1] = {c};
        snprintf(name, sizeof name, "conv%d.w", i);
        net->w[i] = add_param(params, name, 4, sw);
        snprintf(name, sizeof name, "conv%d.b", i);
        net->b[i] = add_param(params, name, 1, sb);
        if (!net->w[i] || !net->b[i]) return mcl_ctx_status(ctx);
        st = mcl_tensor_randn(net->w[i], seed, stream0 + (uint64_t)i, 0.0f,
                              sqrtf(2.0f / (float)(cin * 9)));
        if (st == MCL_OK) st = mcl_tensor_fill(net->b[i], 0.0f);
        cin = c;
    }
    const int64_t sp = image_size / 16;
    int64_t fin = cin * sp * sp;
    for (int j = 0; j < 2 && st == MCL_OK; j++) {
        const int64_t sw[2] = {fin, n_features}, sb[1] = {n_features};
        snprintf(name, sizeof name, "fc%d.w", j);
        net->fw[j] = add_param(params, name, 2, sw);
        snprintf(name, sizeof name, "fc%d.b", j);
        net->fb[j] = add_param(params, name, 1, sb);
        if (!net->fw[j] || !net->fb[j]) return mcl_ctx_status(ctx);
        st = mcl_tensor_randn(net->fw[j], seed, stream0 + 8 + (uint64_t)j, 0.0f,
                              sqrtf(2.0f / (float)fin));
        if (st == MCL_OK) st = mcl_tensor_fill(net->fb[j], 0.0f);
        fin = n_features;
    }
    return st;
}

mcl_tensor *mcl_conv8_forward(mcl_ctx *ctx, const mcl_conv8 *net, mcl_tensor *x, int64_t rows)
{
    for (int i = 0; i < 8; i++) {
        x = mcl_relu(ctx, mcl_conv2d(ctx, x, net->w[i], net->b[i], 1, 1));
        if (i % 2 == 1) x = mcl_maxpool2d(ctx, x);
    }
    const int64_t sp = net->image_size / 16;
    const int64_t fs[2] = {rows, ((int64_t)net->base << 3) * sp * sp};
    x = mcl_reshape(ctx, x, 2, fs);
    for (int j = 0; j < 2; j++)
        x = mcl_relu(ctx, mcl_bias_add(ctx, mcl_matmul(ctx, x, net->fw[j], 0, 0), net->fb[j]));
    return x;
}
