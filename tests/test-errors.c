/* test-errors.c — bad input returns a status with a message and never crashes.
 *
 * Every case: the call returns NULL (or a non-OK status), the context holds an allowed status
 * and a non-empty message (naming the op where the call is an op), nothing is recorded on the
 * tape; then mcl_ctx_clear_error() and a small op must work again (values checked).
 * Allowed statuses are listed per case; where the contract leaves the choice between "shape"
 * and "invalid argument" open, both are accepted.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metacl.h"
#include "testutil.h"

#define SEED 31337u

static mcl_ctx *g_ctx;
static mcl_tensor *g_one, *g_two; /* [2] tensors for the "still works" check */

#define SHAPE_OR_INVALID (TU_ST(MCL_ERR_SHAPE) | TU_ST(MCL_ERR_INVALID))

/* After an error: clear it and check the context computes again. */
static void still_works(const char *file, int line, const char *what)
{
    mcl_ctx_clear_error(g_ctx);
    tu_check(mcl_ctx_status(g_ctx) == MCL_OK && mcl_ctx_error(g_ctx)[0] == '\0', file, line,
             "%s: error cleared", what);
    mcl_tensor *r = mcl_add(g_ctx, g_one, g_two);
    float v[2] = {NAN, NAN};
    int ok = r && mcl_tensor_read(r, v, 2) == MCL_OK && v[0] == 4.0f && v[1] == -1.0f &&
             mcl_ctx_status(g_ctx) == MCL_OK;
    tu_check(ok, file, line, "%s: the context still works after the error (got %g %g, %s)", what,
             (double)v[0], (double)v[1], mcl_ctx_error(g_ctx));
    mcl_ctx_reset(g_ctx);
}

static void expect_null(const char *file, int line, const char *what, const mcl_tensor *r,
                        size_t tape_before, unsigned allowed, const char *needle)
{
    tu_check(r == NULL, file, line, "%s: returns NULL", what);
    tu_check_err(file, line, what, g_ctx, allowed, needle);
    tu_check(mcl_tape_size(g_ctx) == tape_before, file, line,
             "%s: nothing recorded on the tape (%zu -> %zu)", what, tape_before,
             mcl_tape_size(g_ctx));
    still_works(file, line, what);
}

static void expect_status(const char *file, int line, const char *what, mcl_status st,
                          unsigned allowed, const char *needle)
{
    tu_check(st != MCL_OK && st == mcl_ctx_status(g_ctx), file, line,
             "%s: returns the recorded error status (returned %d, recorded %d)", what, (int)st,
             (int)mcl_ctx_status(g_ctx));
    tu_check_err(file, line, what, g_ctx, allowed, needle);
    still_works(file, line, what);
}

/* expr is evaluated once; its text is the message */
#define EXPECT_NULL(expr, allowed, needle)                                                    \
    do {                                                                                      \
        size_t tape_ = mcl_tape_size(g_ctx);                                                  \
        const mcl_tensor *r_ = (expr);                                                        \
        expect_null(__FILE__, __LINE__, #expr, r_, tape_, (allowed), (needle));               \
    } while (0)
#define EXPECT_STATUS(expr, allowed, needle)                                                  \
    expect_status(__FILE__, __LINE__, #expr, (expr), (allowed), (needle))

static mcl_tensor *mk(int ndim, int64_t d0, int64_t d1, int64_t d2, int64_t d3, const float *v)
{
    int64_t s[4] = {d0, d1, d2, d3};
    mcl_tensor *t = tu_tensor_from(g_ctx, ndim, s, v);
    if (!t) {
        fprintf(stderr, "cannot create a fixture tensor: %s\n", mcl_ctx_error(g_ctx));
        (void)tu_summary();
        exit(1);
    }
    return t;
}

/* ---- NULL inputs: NULL result, MCL_ERR_NULL, the message names the op ---- */
static void test_null_inputs(mcl_tensor *x23, mcl_tensor *v3)
{
    const unsigned N = TU_ST(MCL_ERR_NULL);
    int perm[4] = {0, 1, 2, 3};
    int64_t rs[1] = {6};
    EXPECT_NULL(mcl_add(g_ctx, NULL, x23), N, "add");
    EXPECT_NULL(mcl_add(g_ctx, x23, NULL), N, "add");
    EXPECT_NULL(mcl_sub(g_ctx, NULL, x23), N, "sub");
    EXPECT_NULL(mcl_mul(g_ctx, x23, NULL), N, "mul");
    EXPECT_NULL(mcl_scale(g_ctx, NULL, 2.0f), N, "scale");
    EXPECT_NULL(mcl_bias_add(g_ctx, x23, NULL), N, "bias_add");
    EXPECT_NULL(mcl_copy(g_ctx, NULL), N, "copy");
    EXPECT_NULL(mcl_relu(g_ctx, NULL), N, "relu");
    EXPECT_NULL(mcl_leaky_relu(g_ctx, NULL, 0.1f), N, "leaky_relu");
    EXPECT_NULL(mcl_elu(g_ctx, NULL, 1.0f), N, "elu");
    EXPECT_NULL(mcl_sigmoid(g_ctx, NULL), N, "sigmoid");
    EXPECT_NULL(mcl_tanh(g_ctx, NULL), N, "tanh");
    EXPECT_NULL(mcl_gelu(g_ctx, NULL), N, "gelu");
    EXPECT_NULL(mcl_exp(g_ctx, NULL), N, "exp");
    EXPECT_NULL(mcl_log(g_ctx, NULL), N, "log");
    EXPECT_NULL(mcl_bias_gelu(g_ctx, NULL, v3), N, "bias_gelu");
    {
        mcl_tensor *b2[2] = {NULL, NULL};
        EXPECT_STATUS(mcl_bias_add2(g_ctx, NULL, v3, v3, b2), N, "bias_add2");
    }
    EXPECT_NULL(mcl_matmul(g_ctx, x23, NULL, 0, 0), N, "matmul");
    EXPECT_NULL(mcl_sum(g_ctx, NULL), N, "sum");
    EXPECT_NULL(mcl_mean(g_ctx, NULL), N, "mean");
    EXPECT_NULL(mcl_sumsq(g_ctx, NULL), N, "sumsq");
    EXPECT_NULL(mcl_sum_last(g_ctx, NULL), N, "sum_last");
    EXPECT_NULL(mcl_mean_last(g_ctx, NULL), N, "mean_last");
    EXPECT_NULL(mcl_softmax(g_ctx, NULL), N, "softmax");
    EXPECT_NULL(mcl_log_softmax(g_ctx, NULL), N, "log_softmax");
    EXPECT_NULL(mcl_layer_norm(g_ctx, x23, NULL, v3, 1e-5f), N, "layer_norm");
    EXPECT_NULL(mcl_cross_entropy(g_ctx, x23, NULL), N, "cross_entropy");
    EXPECT_NULL(mcl_concat(g_ctx, NULL, x23, 0), N, "concat");
    EXPECT_NULL(mcl_slice(g_ctx, NULL, 0, 0, 1), N, "slice");
    EXPECT_NULL(mcl_reshape(g_ctx, NULL, 1, rs), N, "reshape");
    EXPECT_NULL(mcl_transpose(g_ctx, NULL), N, "transpose");
    EXPECT_NULL(mcl_permute(g_ctx, NULL, perm), N, "permute");
    EXPECT_NULL(mcl_one_hot(g_ctx, NULL, 4), N, "one_hot");
    EXPECT_NULL(mcl_embedding(g_ctx, NULL, v3), N, "embedding");
    EXPECT_NULL(mcl_dropout(g_ctx, NULL, 0.5f, 1), N, "dropout");
    EXPECT_NULL(mcl_dropout_keyed(g_ctx, NULL, 0.5f, 1, 2, 3), N, "dropout");
    EXPECT_NULL(mcl_add_dropout(g_ctx, NULL, x23, 0.5f, 1), N, "add_dropout");
    EXPECT_NULL(mcl_bias_dropout_relu(g_ctx, NULL, v3, 0.5f, 1), N, "bias_dropout_relu");
    EXPECT_NULL(mcl_bias_dropout_relu(g_ctx, x23, NULL, 0.5f, 1), N, "bias_dropout_relu");
    EXPECT_NULL(mcl_bias_add_dropout(g_ctx, NULL, x23, v3, 0.5f, 1), N, "bias_add_dropout");
    EXPECT_NULL(mcl_bias_add_dropout(g_ctx, x23, x23, NULL, 0.5f, 1), N, "bias_add_dropout");
    EXPECT_NULL(mcl_repeat_batch(g_ctx, NULL, 2), N, "repeat_batch");
    {
        mcl_tensor *const four[4] = {x23, NULL, x23, x23};
        mcl_tensor *r4[4];
        EXPECT_STATUS(mcl_repeat_batch4(g_ctx, four, 2, 1, r4), N, "repeat_batch4");
    }
    EXPECT_NULL(mcl_conv2d(g_ctx, NULL, x23, v3, 1, 0), N, "conv2d");
    EXPECT_NULL(mcl_maxpool2d(g_ctx, NULL), N, "maxpool2d");
    EXPECT_NULL(mcl_instance_norm(g_ctx, NULL, v3, v3, 1e-5f), N, "instance_norm");
    EXPECT_NULL(mcl_inorm_pool_relu(g_ctx, NULL, v3, v3, 1e-5f), N, "inorm_pool_relu");
    EXPECT_NULL(mcl_inorm_relu(g_ctx, NULL, v3, v3, 1e-5f), N, "inorm_relu");
    EXPECT_NULL(mcl_inorm_add_pool_relu(g_ctx, NULL, v3, v3, x23, 1e-5f), N, "inorm_add_pool_relu");
    EXPECT_NULL(mcl_inorm_add_pool_relu(g_ctx, x23, v3, v3, NULL, 1e-5f), N, "inorm_add_pool_relu");
    EXPECT_NULL(mcl_conv_inorm_pool_relu(g_ctx, NULL, x23, v3, 1, v3, v3, 1e-5f), N, "conv_inorm_pool_relu");
    EXPECT_NULL(mcl_grad_preproc(g_ctx, NULL, 10.0f), N, "grad_preproc");
    {
        mcl_tensor *const phi[6] = {x23, v3, x23, v3, x23, v3};
        EXPECT_NULL(mcl_smn_write(g_ctx, NULL, v3, x23, phi, 0.01f), N, "smn_write");
        mcl_tensor *const st4[4] = {x23, x23, x23, x23};
        mcl_tensor *out = NULL, *so[4] = {NULL, NULL, NULL, NULL};
        const mcl_attn_opts ao = {0, 0, 0, 1.0f, 0.0f};
        EXPECT_STATUS(mcl_attn_kv(g_ctx, NULL, x23, x23, x23, x23, &ao, &out), N, "attn_kv");
        EXPECT_STATUS(mcl_rel_attn(g_ctx, NULL, x23, x23, x23, x23, 1.0f, &out), N, "rel_attn");
        EXPECT_STATUS(mcl_kv_push(g_ctx, NULL, x23, 0), N, "kv_push");
        EXPECT_STATUS(mcl_srwm(g_ctx, NULL, st4, &out, so), N, "srwm");
        EXPECT_STATUS(mcl_wcst_act(g_ctx, NULL, x23, x23, v3, v3, 1, 2, 0, 3, 1.0f, -1.0f), N, "wcst_act");
        mcl_tensor *az[2] = {NULL, NULL};
        EXPECT_STATUS(mcl_smn_avg_z(g_ctx, NULL, x23, v3, 0.5f, 1.0f, 1.0f, 10.0f, az), N, "smn_avg_z");
    }
    /* Ops of ops.def with no NULL-input case above, each with its reason (test-lists.sh holds
     * this list against ops.def: every op has a case or a line here):
     *   no-null-case sgd_step: no public wrapper; run by mcl_optim_step on the optimizer's own tensors
     *   no-null-case adam_step: no public wrapper; run by mcl_optim_step on the optimizer's own tensors
     *   no-null-case clip_scale: no public wrapper; run by mcl_optim_step (gradient clipping)
     *   no-null-case dyn_step: no public wrapper; run by the LM's dynamic evaluation on its own weights
     *   no-null-case smn_write_eff: no public wrapper; run by nn/metanet.c's fast-step write on its own tensors
     *   no-null-case smn_avg_write: no public wrapper; run by nn/metanet.c's fast-step write on its own tensors
     *   no-null-case smn_write_add: no public wrapper; run by nn/metanet.c's window-end rebuild on its own tensors
     */
    EXPECT_NULL(mcl_permute(g_ctx, x23, NULL), N | TU_ST(MCL_ERR_INVALID), "permute");
    EXPECT_NULL(mcl_reshape(g_ctx, x23, 1, NULL), N | TU_ST(MCL_ERR_INVALID), "reshape");
    EXPECT_STATUS(mcl_backward(g_ctx, NULL), N, NULL);

    /* a chain is checked once: the ops after the failing one get NULL inputs and propagate
     * the failure without recording anything, so the first op's cause (here a shape error in
     * add) is the message */
    {
        mcl_tensor *bad = mcl_add(g_ctx, x23, v3);
        mcl_tensor *r = mcl_sum(g_ctx, mcl_relu(g_ctx, mcl_mul(g_ctx, bad, x23)));
        CHECK(bad == NULL && r == NULL, "a chain with a bad first op returns NULL");
        CHECK_ERR("a failed chain reports the first op's cause", g_ctx, TU_ST(MCL_ERR_SHAPE), "add");
        CHECK(strstr(mcl_ctx_error(g_ctx), "NULL") == NULL,
              "no later op's NULL-input message replaced it: %s", mcl_ctx_error(g_ctx));
        still_works(__FILE__, __LINE__, "chain");
    }
    /* the last error wins: a second, independent error replaces the first */
    {
        (void)mcl_matmul(g_ctx, x23, x23, 0, 0);
        CHECK_ERR("the first error is held", g_ctx, TU_ST(MCL_ERR_SHAPE), "matmul");
        CHECK(mcl_slice(g_ctx, x23, 5, 0, 1) == NULL, "slice on axis 5 of a 2-D tensor fails");
        CHECK_ERR("the second error replaced the first", g_ctx, TU_ST(MCL_ERR_INVALID), "slice");
        CHECK(strstr(mcl_ctx_error(g_ctx), "matmul") == NULL, "nothing of the first is left: %s",
              mcl_ctx_error(g_ctx));
        /* a NULL input while an error is held is taken as a failed earlier op: it propagates */
        CHECK(mcl_relu(g_ctx, NULL) == NULL, "relu of NULL returns NULL");
        CHECK_ERR("a NULL input does not replace the held error", g_ctx, TU_ST(MCL_ERR_INVALID),
                  "slice");
        still_works(__FILE__, __LINE__, "last error wins");
    }
}

/* ---- shapes ---- */
static void test_shapes(mcl_tensor *x23, mcl_tensor *x32, mcl_tensor *x24, mcl_tensor *v3,
                        mcl_tensor *v2)
{
    const unsigned S = TU_ST(MCL_ERR_SHAPE);
    /* binary elementwise: same element count but transposed shape, and different sizes */
    EXPECT_NULL(mcl_add(g_ctx, x23, x32), S, "add");
    EXPECT_NULL(mcl_add(g_ctx, x23, x24), S, "add");
    EXPECT_NULL(mcl_sub(g_ctx, x23, x32), S, "sub");
    EXPECT_NULL(mcl_sub(g_ctx, x24, x23), S, "sub");
    EXPECT_NULL(mcl_mul(g_ctx, x23, x32), S, "mul");
    EXPECT_NULL(mcl_mul(g_ctx, v3, x23), S, "mul");
    EXPECT_NULL(mcl_bias_add(g_ctx, x23, v2), S, "bias_add");
    EXPECT_NULL(mcl_bias_add(g_ctx, x23, x23), S, "bias_add");
    EXPECT_NULL(mcl_bias_dropout_relu(g_ctx, x23, v2, 0.5f, 1), S, "bias_dropout_relu");
    EXPECT_NULL(mcl_bias_dropout_relu(g_ctx, x23, x23, 0.5f, 1), S, "bias_dropout_relu");
    /* its p: in [0, 1) in training (the op's check) and outside it (no mask drawn) */
    EXPECT_NULL(mcl_bias_dropout_relu(g_ctx, x23, v3, 1.0f, 1), TU_ST(MCL_ERR_INVALID),
                "bias_dropout_relu");
    EXPECT_NULL(mcl_bias_dropout_relu(g_ctx, x23, v3, -0.5f, 0), TU_ST(MCL_ERR_INVALID), "dropout");
    EXPECT_NULL(mcl_bias_add_dropout(g_ctx, x23, x32, v2, 0.5f, 1), S, "bias_add_dropout");
    EXPECT_NULL(mcl_bias_add_dropout(g_ctx, x23, x23, v2, 0.5f, 1), S, "bias_add_dropout");
    EXPECT_NULL(mcl_bias_add_dropout(g_ctx, x23, x23, v3, 1.0f, 1), TU_ST(MCL_ERR_INVALID),
                "bias_add_dropout");
    EXPECT_NULL(mcl_bias_add_dropout(g_ctx, x23, x23, v3, -0.5f, 0), TU_ST(MCL_ERR_INVALID),
                "dropout");

    /* matmul: inner dims, with and without transposes, and batch dims */
    EXPECT_NULL(mcl_matmul(g_ctx, x23, x23, 0, 0), S, "matmul");  /* K 3 vs 2 */
    EXPECT_NULL(mcl_matmul(g_ctx, x23, x24, 0, 0), S, "matmul");  /* K 3 vs 2 */
    EXPECT_NULL(mcl_matmul(g_ctx, x23, x32, 1, 0), S, "matmul");  /* a^T [3,2] x [3,2] */
    EXPECT_NULL(mcl_matmul(g_ctx, x23, x24, 0, 1), S, "matmul");  /* [2,3] x [4,2] */
    {
        mcl_tensor *b223 = mk(3, 2, 2, 3, 0, NULL), *b332 = mk(3, 3, 3, 2, 0, NULL);
        EXPECT_NULL(mcl_matmul(g_ctx, b223, b332, 0, 0), S, "matmul"); /* batch 2 vs 3 */
        mcl_tensor_free(b223);
        mcl_tensor_free(b332);
    }
    /* a valid product still works: [2,3] x [3,2] */
    {
        mcl_tensor *r = mcl_matmul(g_ctx, x23, x32, 0, 0);
        CHECK(r && mcl_tensor_ndim(r) == 2 && mcl_tensor_dim(r, 0) == 2 && mcl_tensor_dim(r, 1) == 2, "valid matmul works: %s",
              mcl_ctx_error(g_ctx));
        mcl_ctx_reset(g_ctx);
    }

    /* slice */
    EXPECT_NULL(mcl_slice(g_ctx, x23, 1, 2, 2), SHAPE_OR_INVALID, "slice");  /* [2,4) of 3 */
    EXPECT_NULL(mcl_slice(g_ctx, x23, 0, -1, 1), SHAPE_OR_INVALID, "slice");
    EXPECT_NULL(mcl_slice(g_ctx, x23, 0, 0, 0), SHAPE_OR_INVALID, "slice");
    EXPECT_NULL(mcl_slice(g_ctx, x23, 0, 3, 1), SHAPE_OR_INVALID, "slice");
    EXPECT_NULL(mcl_slice(g_ctx, x23, 5, 0, 1), SHAPE_OR_INVALID, "slice");
    EXPECT_NULL(mcl_slice(g_ctx, x23, 1, INT64_MAX, 2), SHAPE_OR_INVALID, "slice");
    EXPECT_NULL(mcl_slice(g_ctx, x23, 1, 1, INT64_MAX), SHAPE_OR_INVALID, "slice");

    /* concat */
    EXPECT_NULL(mcl_concat(g_ctx, x23, x24, 0), SHAPE_OR_INVALID, "concat");
    EXPECT_NULL(mcl_concat(g_ctx, x23, v3, 0), SHAPE_OR_INVALID, "concat");
    EXPECT_NULL(mcl_concat(g_ctx, x23, x23, 2), SHAPE_OR_INVALID, "concat");
    {
        mcl_tensor *r = mcl_concat(g_ctx, x23, x24, 1);
        CHECK(r && mcl_tensor_dim(r, 0) == 2 && mcl_tensor_dim(r, 1) == 7, "valid concat [2,3]+[2,4] -> [2,7]: %s",
              mcl_ctx_error(g_ctx));
        mcl_ctx_reset(g_ctx);
    }

    /* reshape */
    {
        int64_t s42[2] = {4, 2}, neg[2] = {-2, -3}, s5[5] = {1, 1, 1, 2, 3}, z[2] = {0, 6};
        EXPECT_NULL(mcl_reshape(g_ctx, x23, 2, s42), SHAPE_OR_INVALID, "reshape");
        EXPECT_NULL(mcl_reshape(g_ctx, x23, 2, neg), SHAPE_OR_INVALID, "reshape"); /* product 6 */
        EXPECT_NULL(mcl_reshape(g_ctx, x23, 5, s5), SHAPE_OR_INVALID, "reshape");
        EXPECT_NULL(mcl_reshape(g_ctx, x23, 0, s42), SHAPE_OR_INVALID, "reshape");
        EXPECT_NULL(mcl_reshape(g_ctx, x23, 2, z), SHAPE_OR_INVALID, "reshape");
    }

    /* permute */
    {
        mcl_tensor *x4 = mk(4, 1, 2, 3, 4, NULL);
        const int dup[4] = {0, 0, 1, 2}, big[4] = {0, 1, 2, 4}, neg[4] = {-1, 0, 1, 2};
        const int ok[4] = {0, 2, 1, 3};
        EXPECT_NULL(mcl_permute(g_ctx, x4, dup), SHAPE_OR_INVALID, "permute");
        EXPECT_NULL(mcl_permute(g_ctx, x4, big), SHAPE_OR_INVALID, "permute");
        EXPECT_NULL(mcl_permute(g_ctx, x4, neg), SHAPE_OR_INVALID, "permute");
        mcl_tensor *r = mcl_permute(g_ctx, x4, ok);
        CHECK(r && mcl_tensor_dim(r, 1) == 3 && mcl_tensor_dim(r, 2) == 2, "valid permute works: %s",
              mcl_ctx_error(g_ctx));
        mcl_ctx_reset(g_ctx);
        mcl_tensor_free(x4);
    }

    /* inorm_pool_relu with its output's dropout: p in [0, 1) in training and outside it (no
     * mask drawn), segments that divide the output [1,2,1,2] (4 elements: 3 segments do not) */
    {
        mcl_tensor *x4 = mk(4, 1, 2, 3, 4, NULL), *g2 = mk(1, 2, 0, 0, 0, NULL);
        EXPECT_NULL(mcl_inorm_pool_relu_dropout(g_ctx, x4, g2, g2, 1e-5f, 1.0f, 1),
                    TU_ST(MCL_ERR_INVALID), "inorm_pool_relu");
        EXPECT_NULL(mcl_inorm_pool_relu_dropout(g_ctx, x4, g2, g2, 1e-5f, -0.5f, 0),
                    TU_ST(MCL_ERR_INVALID), "dropout");
        EXPECT_NULL(mcl_inorm_pool_relu_dropout_segments(g_ctx, x4, g2, g2, 1e-5f, 0.5f, 1, 2, 3, 3),
                    TU_ST(MCL_ERR_INVALID), "segments");
        EXPECT_NULL(mcl_inorm_pool_relu_dropout_segments(g_ctx, x4, g2, g2, 1e-5f, 0.5f, 1, 2, 3, 0),
                    TU_ST(MCL_ERR_INVALID), "segments");
        mcl_tensor *r = mcl_inorm_pool_relu_dropout_segments(g_ctx, x4, g2, g2, 1e-5f, 0.5f, 1, 2, 3, 2);
        CHECK(r && mcl_tensor_dim(r, 3) == 2, "valid inorm_pool_relu dropout works: %s", mcl_ctx_error(g_ctx));
        mcl_ctx_reset(g_ctx);
        mcl_tensor_free(x4);
        mcl_tensor_free(g2);
    }

    /* the residual block's fused norms: x [1,2,3,4]; inorm_relu with x not 4-D, gamma of the
     * wrong length, eps <= 0; inorm_add_pool_relu with a skip of another shape, planes below
     * 2 x 2, eps <= 0; then valid calls */
    {
        mcl_tensor *x4 = mk(4, 1, 2, 3, 4, NULL), *g2 = mk(1, 2, 0, 0, 0, NULL), *g3 = mk(1, 3, 0, 0, 0, NULL);
        mcl_tensor *s4 = mk(4, 1, 2, 4, 3, NULL), *x1 = mk(4, 1, 2, 1, 4, NULL), *x2 = mk(2, 2, 12, 0, 0, NULL);
        EXPECT_NULL(mcl_inorm_relu(g_ctx, x2, g2, g2, 1e-5f), S, "[B,C,H,W]");
        EXPECT_NULL(mcl_inorm_relu(g_ctx, x4, g3, g2, 1e-5f), S, "gamma");
        EXPECT_NULL(mcl_inorm_relu(g_ctx, x4, g2, g2, 0.0f), TU_ST(MCL_ERR_INVALID), "eps");
        EXPECT_NULL(mcl_inorm_add_pool_relu(g_ctx, x4, g2, g2, s4, 1e-5f), S, "skip");
        EXPECT_NULL(mcl_inorm_add_pool_relu(g_ctx, x1, g2, g2, x1, 1e-5f), S, "H, W >= 2");
        EXPECT_NULL(mcl_inorm_add_pool_relu(g_ctx, x4, g2, g3, x4, 1e-5f), S, "beta");
        EXPECT_NULL(mcl_inorm_add_pool_relu(g_ctx, x4, g2, g2, x4, -1.0f), TU_ST(MCL_ERR_INVALID), "eps");
        mcl_tensor *r = mcl_inorm_relu(g_ctx, x4, g2, g2, 1e-5f);
        CHECK(r && mcl_tensor_dim(r, 3) == 4, "valid inorm_relu works: %s", mcl_ctx_error(g_ctx));
        r = mcl_inorm_add_pool_relu(g_ctx, x4, g2, g2, x4, 1e-5f);
        CHECK(r && mcl_tensor_dim(r, 2) == 1 && mcl_tensor_dim(r, 3) == 2, "valid inorm_add_pool_relu works: %s",
              mcl_ctx_error(g_ctx));
        mcl_ctx_reset(g_ctx);
        mcl_tensor *all[] = {x4, g2, g3, s4, x1, x2};
        for (int i = 0; i < 6; i++) mcl_tensor_free(all[i]);
    }

    /* conv_inorm_pool_relu: x [1,2,5,6], w [3,2,3,3]: shapes that do not match, a padding
     * outside [0, k), a convolution smaller than 2 x 2, eps <= 0, dropout p = 1, segments that
     * do not divide the output [1,3,2,3] (18 elements: 4 segments do not); then a valid call */
    {
        mcl_tensor *x = mk(4, 1, 2, 5, 6, NULL), *w = mk(4, 3, 2, 3, 3, NULL), *w5 = mk(4, 3, 2, 5, 5, NULL);
        mcl_tensor *wc = mk(4, 3, 1, 3, 3, NULL), *b3 = mk(1, 3, 0, 0, 0, NULL), *b2 = mk(1, 2, 0, 0, 0, NULL);
        EXPECT_NULL(mcl_conv_inorm_pool_relu_dropout(g_ctx, x, wc, b3, 1, b3, b3, 1e-5f, 0.0f, 0), S,
                    "[O,C,k,k]");
        EXPECT_NULL(mcl_conv_inorm_pool_relu_dropout(g_ctx, x, w, b2, 1, b3, b3, 1e-5f, 0.0f, 0), S, "bias");
        EXPECT_NULL(mcl_conv_inorm_pool_relu_dropout(g_ctx, x, w, b3, 1, b2, b3, 1e-5f, 0.0f, 0), S, "gamma");
        EXPECT_NULL(mcl_conv_inorm_pool_relu_dropout(g_ctx, x, w, b3, 3, b3, b3, 1e-5f, 0.0f, 0),
                    TU_ST(MCL_ERR_INVALID), "padding");
        EXPECT_NULL(mcl_conv_inorm_pool_relu_dropout(g_ctx, x, w, b3, -1, b3, b3, 1e-5f, 0.0f, 0),
                    TU_ST(MCL_ERR_INVALID), "padding");
        EXPECT_NULL(mcl_conv_inorm_pool_relu_dropout(g_ctx, x, w5, b3, 0, b3, b3, 1e-5f, 0.0f, 0), S,
                    "less than 2x2");
        EXPECT_NULL(mcl_conv_inorm_pool_relu_dropout(g_ctx, x, w, b3, 1, b3, b3, 0.0f, 0.0f, 0),
                    TU_ST(MCL_ERR_INVALID), "eps");
        EXPECT_NULL(mcl_conv_inorm_pool_relu_dropout(g_ctx, x, w, b3, 1, b3, b3, 1e-5f, 1.0f, 1),
                    TU_ST(MCL_ERR_INVALID), "dropout");
        EXPECT_NULL(mcl_conv_inorm_pool_relu_dropout_segments(g_ctx, x, w, b3, 1, b3, b3, 1e-5f, 0.5f, 1, 2, 3, 4),
                    TU_ST(MCL_ERR_INVALID), "segments");
        EXPECT_NULL(mcl_conv_inorm_pool_relu_dropout_segments(g_ctx, x, w, b3, 1, b3, b3, 1e-5f, 0.5f, 1, 2, 3, 0),
                    TU_ST(MCL_ERR_INVALID), "segments");
        mcl_tensor *r = mcl_conv_inorm_pool_relu_dropout_segments(g_ctx, x, w, b3, 1, b3, b3, 1e-5f, 0.5f, 1, 2, 3, 3);
        CHECK(r && mcl_tensor_dim(r, 1) == 3 && mcl_tensor_dim(r, 2) == 2 && mcl_tensor_dim(r, 3) == 3,
              "valid conv_inorm_pool_relu works: %s", mcl_ctx_error(g_ctx));
        mcl_ctx_reset(g_ctx);
        mcl_tensor *const t[6] = {x, w, w5, wc, b3, b2};
        for (int i = 0; i < 6; i++) mcl_tensor_free(t[i]);
    }

    /* layer_norm: gamma / beta of the wrong size */
    {
        mcl_tensor *x = mk(2, 2, 4, 0, 0, NULL), *g4 = mk(1, 4, 0, 0, 0, NULL);
        EXPECT_NULL(mcl_layer_norm(g_ctx, x, v3, g4, 1e-5f), S, "layer_norm");
        EXPECT_NULL(mcl_layer_norm(g_ctx, x, g4, v3, 1e-5f), S, "layer_norm");
        mcl_tensor *r = mcl_layer_norm(g_ctx, x, g4, g4, 1e-5f);
        CHECK(r != NULL, "valid layer_norm works: %s", mcl_ctx_error(g_ctx));
        mcl_ctx_reset(g_ctx);
        mcl_tensor_free(x);
        mcl_tensor_free(g4);
    }
}

/* ---- values: indices, probabilities ---- */
static void test_values(void)
{
    const unsigned I = TU_ST(MCL_ERR_INVALID);
    const float lg[8] = {0, 1, 2, 3, 3, 2, 1, 0};
    mcl_tensor *logits = mk(2, 2, 4, 0, 0, lg);
    const float t_big[2] = {1, 4}, t_frac[2] = {1.5f, 0}, t_nan[2] = {0, NAN}, t_ok[2] = {3, -1};
    mcl_tensor *tb = mk(1, 2, 0, 0, 0, t_big), *tf = mk(1, 2, 0, 0, 0, t_frac);
    mcl_tensor *tn = mk(1, 2, 0, 0, 0, t_nan), *tok = mk(1, 2, 0, 0, 0, t_ok);
    mcl_tensor *t3 = mk(1, 3, 0, 0, 0, NULL);
    EXPECT_NULL(mcl_cross_entropy(g_ctx, logits, tb), I, "cross_entropy");   /* target = C */
    EXPECT_NULL(mcl_cross_entropy(g_ctx, logits, tf), I, "cross_entropy");   /* 1.5 */
    EXPECT_NULL(mcl_cross_entropy(g_ctx, logits, tn), I, "cross_entropy");   /* NaN */
    EXPECT_NULL(mcl_cross_entropy(g_ctx, logits, t3), TU_ST(MCL_ERR_SHAPE), "cross_entropy");
    {
        /* a negative target ignores the row: loss = -log softmax(row 0)[3] */
        mcl_tensor *r = mcl_cross_entropy(g_ctx, logits, tok);
        double lse = log(exp(0.0) + exp(1.0) + exp(2.0) + exp(3.0));
        CHECK(r != NULL, "cross_entropy with an ignored row works: %s", mcl_ctx_error(g_ctx));
        if (r) CHECK_NEAR("cross_entropy ignoring row 1", mcl_tensor_item(r, 0), lse - 3.0, 1e-6, 1e-6);
        mcl_ctx_reset(g_ctx);
    }

    /* embedding: index out of range (V = 4), negative, fractional */
    {
        const float tab[12] = {0, 1, 2, 10, 11, 12, 20, 21, 22, 30, 31, 32};
        const float i_big[2] = {0, 4}, i_neg[1] = {-1}, i_frac[1] = {0.5f}, i_ok[2] = {3, 1};
        mcl_tensor *table = mk(2, 4, 3, 0, 0, tab);
        mcl_tensor *ib = mk(1, 2, 0, 0, 0, i_big), *in = mk(1, 1, 0, 0, 0, i_neg);
        mcl_tensor *ifr = mk(1, 1, 0, 0, 0, i_frac), *iok = mk(1, 2, 0, 0, 0, i_ok);
        EXPECT_NULL(mcl_embedding(g_ctx, table, ib), I, "embedding");
        EXPECT_NULL(mcl_embedding(g_ctx, table, in), I, "embedding");
        EXPECT_NULL(mcl_embedding(g_ctx, table, ifr), I, "embedding");
        mcl_tensor *r = mcl_embedding(g_ctx, table, iok);
        const double want[6] = {30, 31, 32, 10, 11, 12};
        CHECK_TENSOR("valid embedding gathers rows 3 and 1", r, want, 6, 0, 0);
        /* one_hot: out of range is NOT an error, it gives a zero row (ops.def) */
        mcl_tensor *oh = mcl_one_hot(g_ctx, ib, 4);
        const double ohw[8] = {1, 0, 0, 0, 0, 0, 0, 0};
        CHECK(oh != NULL && mcl_ctx_status(g_ctx) == MCL_OK, "one_hot out of range is not an error: %s",
              mcl_ctx_error(g_ctx));
        CHECK_TENSOR("one_hot(4) of {0, 4} = {e0, zero row}", oh, ohw, 8, 0, 0);
        mcl_ctx_reset(g_ctx);
        EXPECT_NULL(mcl_one_hot(g_ctx, iok, 0), SHAPE_OR_INVALID, "one_hot");
        EXPECT_NULL(mcl_one_hot(g_ctx, iok, -3), SHAPE_OR_INVALID, "one_hot");
        EXPECT_NULL(mcl_one_hot(g_ctx, iok, (int64_t)1 << 40), SHAPE_OR_INVALID, "one_hot");
        mcl_tensor_free(table);
        mcl_tensor_free(ib);
        mcl_tensor_free(in);
        mcl_tensor_free(ifr);
        mcl_tensor_free(iok);
    }

    /* dropout probability */
    EXPECT_NULL(mcl_dropout(g_ctx, logits, 1.0f, 1), I, "dropout");
    EXPECT_NULL(mcl_dropout(g_ctx, logits, 1.5f, 1), I, "dropout");
    EXPECT_NULL(mcl_dropout(g_ctx, logits, -0.1f, 1), I, "dropout");
    EXPECT_NULL(mcl_dropout(g_ctx, logits, NAN, 1), I, "dropout");
    EXPECT_NULL(mcl_dropout_keyed(g_ctx, logits, 1.0f, 1, 2, 0), I, "dropout");
    EXPECT_NULL(mcl_dropout_keyed(g_ctx, logits, -0.5f, 1, 2, 0), I, "dropout");
    EXPECT_NULL(mcl_add_dropout(g_ctx, logits, logits, 1.0f, 1), I, "add_dropout");
    EXPECT_NULL(mcl_add_dropout(g_ctx, logits, logits, -0.5f, 0), I, "dropout");
    {
        mcl_tensor *r = mcl_dropout(g_ctx, logits, 0.0f, 1);
        const double same[8] = {0, 1, 2, 3, 3, 2, 1, 0};
        CHECK_TENSOR("dropout p = 0 is the identity", r, same, 8, 0, 0);
        mcl_ctx_reset(g_ctx);
    }
    mcl_tensor_free(logits);
    mcl_tensor_free(tb);
    mcl_tensor_free(tf);
    mcl_tensor_free(tn);
    mcl_tensor_free(tok);
    mcl_tensor_free(t3);
}

/* ---- Sparse Meta Networks: grad_preproc and smn_write ---- */
static void test_smn(mcl_tensor *x23)
{
    const unsigned S = TU_ST(MCL_ERR_SHAPE), I = TU_ST(MCL_ERR_INVALID), N = TU_ST(MCL_ERR_NULL);
    /* grad_preproc: P must be in (0, 87]; z must leave room for the appended dim */
    EXPECT_NULL(mcl_grad_preproc(g_ctx, x23, 0.0f), I, "grad_preproc");
    EXPECT_NULL(mcl_grad_preproc(g_ctx, x23, -10.0f), I, "grad_preproc");
    EXPECT_NULL(mcl_grad_preproc(g_ctx, x23, NAN), I, "grad_preproc");
    EXPECT_NULL(mcl_grad_preproc(g_ctx, x23, INFINITY), I, "grad_preproc");
    EXPECT_NULL(mcl_grad_preproc(g_ctx, x23, 88.0f), I, "grad_preproc");
    EXPECT_NULL(mcl_grad_preproc(g_ctx, NULL, 10.0f), N, "grad_preproc");
    {
        mcl_tensor *z4 = mk(4, 1, 2, 1, 3, NULL);
        EXPECT_NULL(mcl_grad_preproc(g_ctx, z4, 10.0f), S, "at most 4 dims");
        mcl_tensor *r = mcl_grad_preproc(g_ctx, x23, 10.0f);
        CHECK(r && mcl_tensor_ndim(r) == 3 && mcl_tensor_dim(r, 2) == 2,
              "valid grad_preproc [2,3] -> [2,3,2]: %s", mcl_ctx_error(g_ctx));
        mcl_ctx_reset(g_ctx);
        mcl_tensor_free(z4);
    }

    /* smn_write: M0 [2,3] (x23, a trainable leaf), H = 2 */
    const float iv[2] = {4, 1};
    mcl_tensor *idx = mk(1, 2, 0, 0, 0, iv), *zs = mk(2, 2, 2, 0, 0, NULL);
    mcl_tensor *W1 = mk(2, 2, 2, 0, 0, NULL), *b1 = mk(1, 2, 0, 0, 0, NULL);
    mcl_tensor *W2 = mk(2, 2, 2, 0, 0, NULL), *b2 = mk(1, 2, 0, 0, 0, NULL);
    mcl_tensor *W3 = mk(2, 1, 2, 0, 0, NULL), *b3 = mk(1, 1, 0, 0, 0, NULL);
    mcl_tensor *v3 = mk(1, 3, 0, 0, 0, NULL), *m32 = mk(2, 3, 2, 0, 0, NULL);
    mcl_tensor *i2d = mk(2, 2, 1, 0, 0, iv), *i7 = mk(1, 7, 0, 0, 0, NULL), *z72 = mk(2, 7, 2, 0, 0, NULL);
    mcl_tensor *const phi[6] = {W1, b1, W2, b2, W3, b3};
    mcl_tensor *bad[6][6];
    for (int k = 0; k < 6; k++)
        for (int j = 0; j < 6; j++) bad[k][j] = phi[j];
    bad[0][0] = m32; /* W1 [3,2]: H 3 against b1 [2] */
    bad[1][1] = v3;  /* b1 [3] */
    bad[2][2] = m32; /* W2 [3,2] */
    bad[3][3] = v3;  /* b2 [3] */
    bad[4][4] = b2;  /* W3 [2], not [1,2] */
    bad[5][5] = b2;  /* b3 [2] */
    for (int k = 0; k < 6; k++) {
        EXPECT_NULL(mcl_smn_write(g_ctx, x23, idx, zs, bad[k], 0.01f), S, "phi must be");
        EXPECT_NULL(mcl_smn_write(g_ctx, x23, NULL, NULL, bad[k], 0.01f), S, "phi must be");
    }
    EXPECT_NULL(mcl_smn_write(g_ctx, x23, i2d, zs, phi, 0.01f), S, "smn_write");   /* idx [2,1] */
    EXPECT_NULL(mcl_smn_write(g_ctx, x23, idx, m32, phi, 0.01f), S, "smn_write");  /* zs [3,2] */
    EXPECT_NULL(mcl_smn_write(g_ctx, x23, idx, W3, phi, 0.01f), S, "smn_write");   /* zs [1,2] */
    EXPECT_NULL(mcl_smn_write(g_ctx, x23, i7, z72, phi, 0.01f), S, "smn_write");   /* m 7 > n 6 */
    EXPECT_NULL(mcl_smn_write(g_ctx, x23, idx, zs, phi, NAN), I, "smn_write");
    EXPECT_NULL(mcl_smn_write(g_ctx, x23, idx, zs, phi, INFINITY), I, "smn_write");
    EXPECT_NULL(mcl_smn_write(g_ctx, x23, NULL, NULL, phi, NAN), I, "smn_write");
    EXPECT_NULL(mcl_smn_write(g_ctx, x23, idx, zs, NULL, 0.01f), N, "smn_write");
    EXPECT_NULL(mcl_smn_write(g_ctx, x23, idx, NULL, phi, 0.01f), N, "smn_write");
    EXPECT_NULL(mcl_smn_write(g_ctx, x23, NULL, zs, phi, 0.01f), N, "smn_write");
    EXPECT_NULL(mcl_smn_write(g_ctx, NULL, idx, zs, phi, 0.01f), N, "smn_write");
    EXPECT_NULL(mcl_smn_write(g_ctx, NULL, NULL, NULL, phi, 0.01f), N, "smn_write");
    {
        mcl_tensor *const nul[6] = {W1, b1, NULL, b2, W3, b3};
        EXPECT_NULL(mcl_smn_write(g_ctx, x23, NULL, NULL, nul, 0.01f), N, "W2");
        EXPECT_NULL(mcl_smn_write(g_ctx, x23, idx, zs, nul, 0.01f), N, "smn_write");
    }
    {
        /* M0 with 2^24 elements: an index up to n - 1 would not be exact as a float */
        mcl_tensor *big = mk(2, 4096, 4096, 0, 0, NULL);
        EXPECT_NULL(mcl_smn_write(g_ctx, big, idx, zs, phi, 0.01f), S, "2^24");
        EXPECT_NULL(mcl_smn_write(g_ctx, big, NULL, NULL, phi, 0.01f), S, "2^24");
        mcl_tensor_free(big);
    }
    {
        /* with an error held, NULL idx and zs are an earlier op's failed results: they propagate */
        (void)mcl_matmul(g_ctx, x23, x23, 0, 0);
        CHECK(mcl_smn_write(g_ctx, x23, NULL, NULL, phi, 0.01f) == NULL,
              "smn_write with NULL idx/zs and an error held returns NULL");
        CHECK_ERR("the held error stays", g_ctx, S, "matmul");
        still_works(__FILE__, __LINE__, "smn_write propagation");
    }
    {
        /* valid calls work: a write and a copy (no write) */
        mcl_tensor *r = mcl_smn_write(g_ctx, x23, idx, zs, phi, 0.01f);
        mcl_tensor *c = mcl_smn_write(g_ctx, x23, NULL, NULL, phi, 0.01f);
        const double want[6] = {1, 0, 3, 4, 0, 6}, same[6] = {1, 2, 3, 4, 5, 6};
        CHECK(r && c, "valid smn_write calls work: %s", mcl_ctx_error(g_ctx));
        CHECK_TENSOR("smn_write with phi = 0 writes b3 = 0 at elements 4 and 1", r, want, 6, 0, 0);
        CHECK_TENSOR("smn_write with no write copies M0", c, same, 6, 0, 0);
        mcl_ctx_reset(g_ctx);
    }
    mcl_tensor *owned[] = {idx, zs, W1, b1, W2, b2, W3, b3, v3, m32, i2d, i7, z72};
    for (size_t k = 0; k < sizeof owned / sizeof owned[0]; k++) mcl_tensor_free(owned[k]);
}

/* ---- rel_attn (Transformer-XL relative attention): the front end's checks ---- */
static void test_rel_attn(void)
{
    const unsigned S = TU_ST(MCL_ERR_SHAPE), I = TU_ST(MCL_ERR_INVALID), N = TU_ST(MCL_ERR_NULL);
    /* B = 1, S = 2 queries, H = 1, D = Dv = 2, T = 3 keys (M = 1 memory row) */
    const float vv[6] = {1, 2, 3, 4, 5, 6};
    mcl_tensor *qc = mk(4, 1, 2, 1, 2, NULL), *qp = mk(4, 1, 2, 1, 2, NULL);
    mcl_tensor *k = mk(4, 1, 3, 1, 2, NULL), *v = mk(4, 1, 3, 1, 2, vv), *r = mk(3, 3, 1, 2, 0, NULL);
    mcl_tensor *q3 = mk(3, 2, 1, 2, 0, NULL);  /* qc 3-D */
    mcl_tensor *qpD = mk(4, 1, 2, 1, 3, NULL); /* qp [1,2,1,3] != qc */
    mcl_tensor *kD = mk(4, 1, 3, 1, 3, NULL);  /* k's D 3 */
    mcl_tensor *kB = mk(4, 2, 3, 1, 2, NULL);  /* k's B 2 */
    mcl_tensor *kH = mk(4, 1, 3, 2, 2, NULL);  /* k's H 2 */
    mcl_tensor *vT = mk(4, 1, 2, 1, 2, NULL);  /* v's T 2, k's 3 */
    mcl_tensor *k1 = mk(4, 1, 1, 1, 2, NULL), *v1 = mk(4, 1, 1, 1, 2, NULL);
    mcl_tensor *r1 = mk(3, 1, 1, 2, 0, NULL);  /* T 1 < S 2 */
    mcl_tensor *rT = mk(3, 2, 1, 2, 0, NULL);  /* r's T 2 */
    mcl_tensor *rD = mk(3, 3, 1, 3, 0, NULL);  /* r's D 3 */
    mcl_tensor *r4 = mk(4, 1, 3, 1, 2, NULL);  /* r 4-D */
    mcl_tensor *o = NULL;
    EXPECT_STATUS(mcl_rel_attn(g_ctx, q3, qp, k, v, r, 1.0f, &o), S, "rel_attn");
    EXPECT_STATUS(mcl_rel_attn(g_ctx, qc, qpD, k, v, r, 1.0f, &o), S, "same shape");
    EXPECT_STATUS(mcl_rel_attn(g_ctx, qc, qp, kD, v, r, 1.0f, &o), S, "rel_attn: k");
    EXPECT_STATUS(mcl_rel_attn(g_ctx, qc, qp, kB, v, r, 1.0f, &o), S, "rel_attn: k");
    EXPECT_STATUS(mcl_rel_attn(g_ctx, qc, qp, kH, v, r, 1.0f, &o), S, "rel_attn: k");
    EXPECT_STATUS(mcl_rel_attn(g_ctx, qc, qp, k, vT, r, 1.0f, &o), S, "rel_attn: v");
    EXPECT_STATUS(mcl_rel_attn(g_ctx, qc, qp, k1, v1, r1, 1.0f, &o), S, "fewer than");
    EXPECT_STATUS(mcl_rel_attn(g_ctx, qc, qp, k, v, rT, 1.0f, &o), S, "rel_attn: r");
    EXPECT_STATUS(mcl_rel_attn(g_ctx, qc, qp, k, v, rD, 1.0f, &o), S, "rel_attn: r");
    EXPECT_STATUS(mcl_rel_attn(g_ctx, qc, qp, k, v, r4, 1.0f, &o), S, "rel_attn");
    EXPECT_STATUS(mcl_rel_attn(g_ctx, qc, qp, k, v, r, NAN, &o), I, "rel_attn: scale");
    EXPECT_STATUS(mcl_rel_attn(g_ctx, qc, qp, k, v, r, INFINITY, &o), I, "rel_attn: scale");
    EXPECT_STATUS(mcl_rel_attn_window(g_ctx, qc, qp, k, v, r, 1.0f, -1, &o), I, "rel_attn: window");
    EXPECT_STATUS(mcl_rel_attn(g_ctx, NULL, qp, k, v, r, 1.0f, &o), N, "rel_attn");
    EXPECT_STATUS(mcl_rel_attn(g_ctx, qc, qp, k, v, NULL, 1.0f, &o), N, "rel_attn");
    EXPECT_STATUS(mcl_rel_attn(g_ctx, qc, qp, k, v, r, 1.0f, NULL), N, "rel_attn");
    CHECK(o == NULL, "refused rel_attn calls leave *out NULL");
    CHECK(mcl_rel_attn(NULL, qc, qp, k, v, r, 1.0f, &o) == MCL_ERR_NULL, "rel_attn without a context");
    {
        /* valid calls: scale 0 makes every allowed key equally likely, so o_i is the mean of
         * the values of keys 0..M+i (no window) or M+i-1..M+i (window 1) */
        const double all[4] = {2, 3, 3, 4}, win1[4] = {2, 3, 4, 5};
        mcl_tensor *o1 = NULL;
        CHECK(mcl_rel_attn(g_ctx, qc, qp, k, v, r, 0.0f, &o) == MCL_OK &&
                  mcl_rel_attn_window(g_ctx, qc, qp, k, v, r, 0.0f, 1, &o1) == MCL_OK,
              "valid rel_attn calls work: %s", mcl_ctx_error(g_ctx));
        CHECK(o && mcl_tensor_ndim(o) == 4 && mcl_tensor_dim(o, 1) == 2 && mcl_tensor_dim(o, 3) == 2,
              "rel_attn output [1,2,1,2]");
        CHECK_TENSOR("rel_attn, scale 0: the mean of the allowed values", o, all, 4, 1e-6, 0);
        CHECK_TENSOR("rel_attn, scale 0, window 1: the mean of the last two", o1, win1, 4, 1e-6, 0);
        mcl_ctx_reset(g_ctx);
    }
    mcl_tensor *owned[] = {qc, qp, k, v, r, q3, qpD, kD, kB, kH, vT, k1, v1, r1, rT, rD, r4};
    for (size_t i = 0; i < sizeof owned / sizeof owned[0]; i++) mcl_tensor_free(owned[i]);
}

/* ---- tensor creation, views, host copies ---- */
static void test_tensors(mcl_tensor *x23)
{
    const unsigned SI = SHAPE_OR_INVALID;
    int64_t neg[2] = {2, -3}, zero[2] = {0, 3}, ok4[5] = {1, 2, 3, 4, 5};
    int64_t huge[2] = {(int64_t)1 << 20, (int64_t)1 << 20};           /* 2^40 > 2^34 */
    int64_t over1[1] = {MCL_MAX_ELEMS + 1};
    int64_t wrap[4] = {(int64_t)1 << 40, (int64_t)1 << 40, (int64_t)1 << 40, 8}; /* overflows int64 */
    int64_t wrap2[2] = {INT64_MAX, 2};
    EXPECT_NULL(mcl_tensor_create(g_ctx, 2, neg), SI, NULL);
    EXPECT_NULL(mcl_tensor_create(g_ctx, 2, zero), SI, NULL);
    EXPECT_NULL(mcl_tensor_create(g_ctx, 0, ok4), SI, NULL);
    EXPECT_NULL(mcl_tensor_create(g_ctx, 5, ok4), SI, NULL);
    EXPECT_NULL(mcl_tensor_create(g_ctx, -1, ok4), SI, NULL);
    EXPECT_NULL(mcl_tensor_create(g_ctx, 2, huge), SI, NULL);
    EXPECT_NULL(mcl_tensor_create(g_ctx, 1, over1), SI, NULL);
    EXPECT_NULL(mcl_tensor_create(g_ctx, 4, wrap), SI, NULL);
    EXPECT_NULL(mcl_tensor_create(g_ctx, 2, wrap2), SI, NULL);
    EXPECT_NULL(mcl_tensor_create(g_ctx, 2, NULL), SI | TU_ST(MCL_ERR_NULL), NULL);
    EXPECT_NULL(mcl_tensor_new(g_ctx, -2, 0, 0, 0), SI, NULL);
    EXPECT_NULL(mcl_tensor_new(g_ctx, 0, 0, 0, 0), SI, NULL);
    EXPECT_NULL(mcl_tensor_new(g_ctx, (int64_t)1 << 20, (int64_t)1 << 20, 0, 0), SI, NULL);
    EXPECT_NULL(mcl_param_create(g_ctx, "p", 2, neg), SI, NULL);
    EXPECT_NULL(mcl_param_create(g_ctx, "p", 5, ok4), SI, NULL);
    {
        /* the error message says something about the shape: it is not empty and mentions ndim
         * or the offending size */
        (void)mcl_tensor_create(g_ctx, 2, neg);
        const char *m = mcl_ctx_error(g_ctx);
        CHECK(strstr(m, "-3") != NULL, "message for shape [2,-3] shows the bad dim: \"%s\"", m);
        still_works(__FILE__, __LINE__, "negative dim message");
    }

    /* views out of range */
    {
        int64_t s3[1] = {3}, s7[1] = {7};
        EXPECT_NULL(mcl_tensor_view(x23, 4, 1, s3), SI, NULL);  /* [4, 7) of 6 */
        EXPECT_NULL(mcl_tensor_view(x23, -1, 1, s3), SI, NULL);
        EXPECT_NULL(mcl_tensor_view(x23, 0, 1, s7), SI, NULL);
        EXPECT_NULL(mcl_tensor_view(x23, 0, 2, neg), SI, NULL);
        mcl_tensor *v = mcl_tensor_view(x23, 3, 1, s3);
        const double want[3] = {4, 5, 6};
        CHECK_TENSOR("valid view of the second row", v, want, 3, 0, 0);
        mcl_tensor_free(v);
    }

    /* host copies with the wrong count */
    {
        float buf[8] = {0};
        EXPECT_STATUS(mcl_tensor_write(x23, buf, 5), SI, NULL);
        EXPECT_STATUS(mcl_tensor_write(x23, buf, 7), SI, NULL);
        EXPECT_STATUS(mcl_tensor_write(x23, buf, -6), SI, NULL);
        EXPECT_STATUS(mcl_tensor_read(x23, buf, 5), SI, NULL);
        EXPECT_STATUS(mcl_tensor_write(x23, NULL, 6), TU_ST(MCL_ERR_NULL) | SI, NULL);
        EXPECT_STATUS(mcl_tensor_read(x23, NULL, 6), TU_ST(MCL_ERR_NULL) | SI, NULL);
        const double want[6] = {1, 2, 3, 4, 5, 6};
        CHECK_TENSOR("failed writes left the tensor unchanged", x23, want, 6, 0, 0);
        mcl_tensor *t8 = mk(1, 8, 0, 0, 0, NULL);
        EXPECT_STATUS(mcl_tensor_copy_into(t8, x23), SI, NULL);
        mcl_tensor_free(t8);
        mcl_tensor_free(NULL); /* ignored */
    }
}

/* ---- contexts, registry, optimizer, backward ---- */
static void test_misc(mcl_tensor *x23)
{
    /* tensors from two contexts in one op */
    {
        mcl_ctx *other = tu_ctx_ref();
        int64_t s[2] = {2, 3};
        mcl_tensor *y = mcl_tensor_create(other, 2, s);
        const unsigned M = TU_ST(MCL_ERR_INVALID) | TU_ST(MCL_ERR_STATE);
        if (CHECK(y != NULL, "tensor in a second context")) {
            EXPECT_NULL(mcl_add(g_ctx, x23, y), M, "add");
            EXPECT_NULL(mcl_add(g_ctx, y, x23), M, "add");
            EXPECT_NULL(mcl_mul(g_ctx, y, y), M, "mul"); /* both foreign to g_ctx */
            EXPECT_NULL(mcl_relu(g_ctx, y), M, "relu");
            mcl_tensor *r = mcl_add(other, y, y);
            CHECK(r != NULL && mcl_ctx_status(other) == MCL_OK, "the other context still works");
        }
        mcl_tensor_free(y);
        mcl_ctx_free(other);
    }

    /* parameter registry */
    {
        mcl_params *P = mcl_params_create(g_ctx);
        int64_t s[1] = {3}, bad[1] = {-1};
        if (CHECK(P != NULL, "params_create")) {
            mcl_tensor *w = mcl_params_add(P, "w", 1, s);
            CHECK(w != NULL, "first add of \"w\"");
            EXPECT_NULL(mcl_params_add(P, "w", 1, s), SHAPE_OR_INVALID, "w");
            EXPECT_NULL(mcl_params_add(P, "", 1, s), SHAPE_OR_INVALID | TU_ST(MCL_ERR_NULL), NULL);
            EXPECT_NULL(mcl_params_add(P, NULL, 1, s), SHAPE_OR_INVALID | TU_ST(MCL_ERR_NULL), NULL);
            EXPECT_NULL(mcl_params_add(P, "v", 1, bad), SHAPE_OR_INVALID, NULL);
            CHECK(mcl_params_count(P) == 1, "failed adds register nothing (count %d)",
                  mcl_params_count(P));
            CHECK(mcl_params_find(P, "w") == w, "find(\"w\") is the first one");
            CHECK(mcl_params_find(P, "nope") == NULL, "find of an unknown name is NULL");

            /* optimizer: NULL registry, unknown kind, nonsense schedule */
            mcl_optim_config cfg;
            memset(&cfg, 0, sizeof cfg);
            cfg.kind = MCL_OPTIM_SGD;
            cfg.sched.kind = MCL_SCHED_CONSTANT;
            cfg.sched.base_lr = 0.1f;
            mcl_optim *valid = NULL, *opt = NULL;
            CHECK(mcl_optim_create(g_ctx, &cfg, P, &valid) == MCL_OK && valid, "valid optimizer");
            opt = valid; /* a non-NULL value that a failing create must overwrite with NULL */
            EXPECT_STATUS(mcl_optim_create(g_ctx, &cfg, NULL, &opt), TU_ST(MCL_ERR_NULL), NULL);
            cfg.kind = (mcl_optim_kind)17;
            opt = valid;
            EXPECT_STATUS(mcl_optim_create(g_ctx, &cfg, P, &opt), TU_ST(MCL_ERR_INVALID), NULL);
            CHECK(opt == NULL, "no optimizer on failure (unknown kind)");
            cfg.kind = MCL_OPTIM_ADAM;
            cfg.sched.kind = MCL_SCHED_NOAM; /* warmup 0, d_model 0 */
            opt = valid;
            EXPECT_STATUS(mcl_optim_create(g_ctx, &cfg, P, &opt), TU_ST(MCL_ERR_INVALID), NULL);
            CHECK(opt == NULL, "no optimizer on failure (bad schedule)");
            if (opt != valid) mcl_optim_free(opt);
            mcl_optim_free(valid);

            /* clipping with a nonsense max_norm */
            mcl_tensor *gs[1] = {w};
            EXPECT_STATUS(mcl_clip_grad_norm(g_ctx, gs, 1, -1.0f, NULL), TU_ST(MCL_ERR_INVALID), NULL);
        }
        mcl_params_free(P);
    }

    /* partial backward: a mark past the end of the tape, NULL arrays */
    {
        int64_t s[1] = {2};
        mcl_tensor *p = mcl_param_create(g_ctx, "p", 1, s);
        if (CHECK(p != NULL, "param")) {
            mcl_tensor *L = mcl_sum(g_ctx, mcl_mul(g_ctx, p, p));
            mcl_tensor *wrt[1] = {p}, *gr[1] = {NULL};
            size_t n = mcl_tape_size(g_ctx);
            CHECK(L != NULL, "loss");
            EXPECT_STATUS(mcl_grad_partial(g_ctx, L, n + 5, 1, wrt, gr),
                          TU_ST(MCL_ERR_INVALID) | TU_ST(MCL_ERR_STATE), NULL);
            CHECK(gr[0] == NULL, "no gradient returned on error");
            L = mcl_sum(g_ctx, mcl_mul(g_ctx, p, p));
            EXPECT_STATUS(mcl_grad_partial(g_ctx, L, 0, 1, NULL, gr),
                          TU_ST(MCL_ERR_NULL) | TU_ST(MCL_ERR_INVALID), NULL);
            L = mcl_sum(g_ctx, mcl_mul(g_ctx, p, p));
            EXPECT_STATUS(mcl_grad_partial(g_ctx, L, 0, 1, wrt, NULL),
                          TU_ST(MCL_ERR_NULL) | TU_ST(MCL_ERR_INVALID), NULL);
            mcl_tensor_free(gr[0]);
        }
        mcl_ctx_reset(g_ctx);
        mcl_tensor_free(p);
    }

    /* context creation with an invalid backend kind */
    {
        const int kinds[3] = {7, (int)MCL_BACKEND_KIND_COUNT, -1};
        for (int k = 0; k < 3; k++) {
            char eb[256];
            strcpy(eb, "untouched");
            mcl_ctx *c = g_ctx; /* a non-NULL value: must become NULL */
            mcl_status st = mcl_ctx_create(&c, (mcl_backend_kind)kinds[k], NULL, eb, sizeof eb);
            CHECK(st == MCL_ERR_INVALID || st == MCL_ERR_UNSUPPORTED,
                  "ctx_create(kind %d) fails with invalid/unsupported (status %d)", kinds[k], (int)st);
            CHECK(c == NULL, "ctx_create(kind %d) sets *out to NULL", kinds[k]);
            CHECK(eb[0] != '\0' && strcmp(eb, "untouched") != 0,
                  "ctx_create(kind %d) writes a message: \"%s\"", kinds[k], eb);
            if (st == MCL_OK) mcl_ctx_free(c);
        }
        mcl_ctx *c = NULL;
        mcl_status st = mcl_ctx_create(&c, (mcl_backend_kind)9, NULL, NULL, 0);
        CHECK(st != MCL_OK && c == NULL, "ctx_create without an error buffer fails cleanly");
        char eb[4];
        st = mcl_ctx_create(&c, (mcl_backend_kind)9, NULL, eb, sizeof eb);
        CHECK(st != MCL_OK && c == NULL && strlen(eb) < sizeof eb,
              "ctx_create with a tiny error buffer truncates the message");
        CHECK(mcl_ctx_create(NULL, MCL_BACKEND_REF, NULL, NULL, 0) != MCL_OK,
              "ctx_create with out == NULL fails");
    }

    /* set_error / status strings */
    {
        mcl_status st = mcl_ctx_set_error(g_ctx, MCL_ERR_IO, "custom %d", 42);
        CHECK(st == MCL_ERR_IO, "set_error returns its status");
        CHECK_ERR("set_error records the formatted message", g_ctx, TU_ST(MCL_ERR_IO), "custom 42");
        still_works(__FILE__, __LINE__, "set_error");
        int distinct = 1;
        for (int a = 0; a < MCL_STATUS_COUNT; a++) {
            const char *sa = mcl_status_str((mcl_status)a);
            CHECK(sa != NULL && sa[0] != '\0', "status_str(%d) is a text", a);
            for (int b = 0; b < a && sa; b++) {
                const char *sb = mcl_status_str((mcl_status)b);
                if (sb && strcmp(sa, sb) == 0) distinct = 0;
            }
        }
        CHECK(distinct, "status strings are distinct");
        const char *unk = mcl_status_str((mcl_status)(MCL_STATUS_COUNT + 5));
        CHECK(unk != NULL, "status_str of an unknown code is not NULL");
    }
}

int main(void)
{
    tu_begin("test-errors", SEED);
    g_ctx = tu_ctx_ref();
    mcl_ctx_set_seed(g_ctx, SEED);
    const float one[2] = {1, 2}, two[2] = {3, -3};
    const float v23[6] = {1, 2, 3, 4, 5, 6};
    g_one = mk(1, 2, 0, 0, 0, one);
    g_two = mk(1, 2, 0, 0, 0, two);
    /* x23 is a trainable leaf, so a failing op that recorded anyway would show on the tape */
    int64_t s23[2] = {2, 3};
    mcl_tensor *x23 = mcl_param_create(g_ctx, "x23", 2, s23);
    if (!x23 || mcl_tensor_write(x23, v23, 6) != MCL_OK) {
        fprintf(stderr, "fixture: %s\n", mcl_ctx_error(g_ctx));
        return 1;
    }
    mcl_tensor *x32 = mk(2, 3, 2, 0, 0, v23), *x24 = mk(2, 2, 4, 0, 0, NULL);
    mcl_tensor *v3 = mk(1, 3, 0, 0, 0, NULL), *v2 = mk(1, 2, 0, 0, 0, NULL);

    /* the helpers can fail: no error recorded, the wrong status, the wrong op name */
    CHECK(mcl_ctx_status(g_ctx) == MCL_OK, "fixture created without error");
    CHECK(!tu_err_matches(g_ctx, TU_ST(MCL_ERR_SHAPE), NULL), "CHECK_ERR detects a missing error");
    (void)mcl_add(g_ctx, x23, x32);
    CHECK(tu_err_matches(g_ctx, TU_ST(MCL_ERR_SHAPE), "add"), "add [2,3]+[3,2]: shape error naming add: %s",
          mcl_ctx_error(g_ctx));
    CHECK(!tu_err_matches(g_ctx, TU_ST(MCL_ERR_NULL), "add"), "CHECK_ERR detects a wrong status");
    CHECK(!tu_err_matches(g_ctx, TU_ST(MCL_ERR_SHAPE), "matmul"), "CHECK_ERR detects a wrong op name");
    still_works(__FILE__, __LINE__, "helper self-test");

    test_null_inputs(x23, v3);
    test_shapes(x23, x32, x24, v3, v2);
    test_values();
    test_smn(x23);
    test_rel_attn();
    test_tensors(x23);
    test_misc(x23);

    mcl_ctx_reset(g_ctx);
    mcl_tensor_free(x23);
    mcl_tensor_free(x32);
    mcl_tensor_free(x24);
    mcl_tensor_free(v3);
    mcl_tensor_free(v2);
    mcl_tensor_free(g_one);
    mcl_tensor_free(g_two);
    mcl_ctx_free(g_ctx);
    return tu_summary();
}
