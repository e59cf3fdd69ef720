/* conv8.h — the 8-convolution feature extractor of the online-transformer experiments (the
 * network Blier & Ollivier used for MNIST description lengths, as the online-transformer
 * paper uses it with doubled channels; here the channel base is a parameter so it fits a
 * small CPU — doc/oct-model.md §1 gives the sizes we use):
 *
 *   4 × [ conv 3×3 (pad 1) → ReLU → conv 3×3 (pad 1) → ReLU → max-pool 2×2 ]
 *       channels c, c | 2c, 2c | 4c, 4c | 8c, 8c   (the paper: c = 32)
 *   → flatten [R, 8c·(S/16)²] → linear F → ReLU → linear F → ReLU    (the paper: F = 256)
 *
 * x [R, C_in, S, S] (S a multiple of 16) → features [R, F].
 * Parameters (registered in the caller's mcl_params): conv<i>.w [c_i, c_{i-1}, 3, 3],
 * conv<i>.b (i = 0..7), fc<j>.w [in, F], fc<j>.b (j = 0, 1); He-normal weights from Philox
 * streams stream0 + i (convs) and stream0 + 8 + j (linear layers); biases 0.
 */
#ifndef MCL_NN_CONV8_H
#define MCL_NN_CONV8_H

#include <stdint.h>

#include "metacl.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mcl_conv8 {
    int in_channels, base, image_size, n_features;
    mcl_tensor *w[8], *b[8], *fw[2], *fb[2];
} mcl_conv8;

mcl_status mcl_conv8_create(mcl_conv8 *net, mcl_ctx *ctx, mcl_params *params, int in_channels,
                            int base, int image_size, int n_features, uint64_t seed,
                            uint64_t stream0);

/* x [rows, C_in, S, S] → [rows, F]. NULL on error (message in ctx). */
mcl_tensor *mcl_conv8_forward(mcl_ctx *ctx, const mcl_conv8 *net, mcl_tensor *x, int64_t rows);

#ifdef __cplusplus
}
#endif
#endif
