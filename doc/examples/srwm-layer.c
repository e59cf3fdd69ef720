/* One SRWM layer, out = LayerNorm(h) + h_srwm·W_o (the ACL model's layer, doc/acl-model.md; dropout off), on host arrays,
 * on either backend: ./srwm-layer [ref|opencl]. Installed: #include <metacl/metacl.h>,
 * cc srwm-layer.c $(pkg-config --cflags --libs metacl). Built and run by `make check`. */
#include <stdio.h>
#include <string.h>
#include <math.h>
#include <metacl/metacl.h>

enum { B = 2, L = 5, H = 4, D = 8, HID = H * D };

int main(int argc, char **argv)
{
    mcl_backend_kind kind = argc > 1 && !strcmp(argv[1], "opencl") ? MCL_BACKEND_OPENCL : MCL_BACKEND_REF;
    char err[256];
    mcl_ctx *ctx;
    mcl_status s = mcl_ctx_create(&ctx, kind, NULL, err, sizeof err); /* 77: no such device (skip) */
    if (s != MCL_OK) return fprintf(stderr, "%s\n", err), s == MCL_ERR_UNSUPPORTED ? 77 : 1;
    static float h_host[B * L * HID], out_host[B * L * HID];
    for (int i = 0; i < B * L * HID; i++) h_host[i] = (float)((i * 37) % 23) / 11.0f - 1.0f;
    mcl_tensor *h = mcl_tensor_new(ctx, B * L, HID, 0, 0), *st[4], *y, *fin[4];
    mcl_tensor *wo = mcl_tensor_new(ctx, HID, HID, 0, 0), *g = mcl_tensor_new(ctx, HID, 0, 0, 0), *b0 = mcl_tensor_new(ctx, HID, 0, 0, 0);
    mcl_tensor_write(h, h_host, B * L * HID);
    mcl_tensor_randn(wo, 1, 0, 0.0f, 0.18f), mcl_tensor_fill(g, 1.0f);
    for (int k = 0; k < 4; k++) { /* per-sequence fast weights W_y, W_q, W_k [B,H,D,D], w_b [B,H,D,4] */
        st[k] = mcl_tensor_new(ctx, B, H, D, k == 3 ? 4 : D);
        mcl_tensor_randn(st[k], 1, 1 + (uint64_t)k, 0.0f, k == 1 ? 0.0035f : 0.35f);
    }
    const int64_t s4[4] = {B, L, H, D}, s2[2] = {B * L, HID};
    const int split[4] = {0, 2, 1, 3}; /* [B,L,H,D] <-> [B,H,L,D] */
    mcl_tensor *x = mcl_permute(ctx, mcl_reshape(ctx, h, 4, s4), split);
    if (mcl_srwm(ctx, x, st, &y, fin) != MCL_OK) return fprintf(stderr, "%s\n", mcl_ctx_error(ctx)), 1;
    y = mcl_matmul(ctx, mcl_reshape(ctx, mcl_permute(ctx, y, split), 2, s2), wo, 0, 0);
    mcl_tensor *out = mcl_add(ctx, mcl_layer_norm(ctx, h, g, b0, 1e-5f), y);
    if (!out || mcl_tensor_read(out, out_host, B * L * HID) != MCL_OK) return fprintf(stderr, "%s\n", mcl_ctx_error(ctx)), 1;
    printf("%s: out[0][0..3] = %.6f %.6f %.6f %.6f\n", mcl_ctx_backend_name(ctx), out_host[0], out_host[1], out_host[2], out_host[3]);
    /* Check row 0 (sequence 0, step 0) on the host: there the SRWM reads its initial state,
     * y = x·W_y per head (row-major [e][m]: input e, output m), then LayerNorm(h) + y·W_o. */
    static float wy[B * H * D * D], wo_host[HID * HID];
    mcl_tensor_read(st[0], wy, B * H * D * D), mcl_tensor_read(wo, wo_host, HID * HID);
    float mean = 0, var = 0, yrow[HID] = {0}, worst = 0;
    for (int i = 0; i < HID; i++) mean += h_host[i] / HID;
    for (int i = 0; i < HID; i++) var += (h_host[i] - mean) * (h_host[i] - mean) / HID;
    for (int hd = 0; hd < H; hd++)
        for (int m = 0; m < D; m++)
            for (int e = 0; e < D; e++) yrow[hd * D + m] += h_host[hd * D + e] * wy[(hd * D + e) * D + m];
    for (int j = 0; j < HID; j++) {
        float want = (h_host[j] - mean) / sqrtf(var + 1e-5f);
        for (int i = 0; i < HID; i++) want += yrow[i] * wo_host[i * HID + j];
        worst = fmaxf(worst, fabsf(out_host[j] - want));
    }
    if (!(worst <= 1e-4f)) return fprintf(stderr, "row 0 differs from the host computation by %g\n", worst), 1;
    mcl_ctx_reset(ctx);
    for (int k = 0; k < 4; k++) mcl_tensor_free(st[k]);
    mcl_tensor_free(h), mcl_tensor_free(wo), mcl_tensor_free(g), mcl_tensor_free(b0), mcl_ctx_free(ctx);
    return 0;
}
