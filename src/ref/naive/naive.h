/* naive.h — readable oracles: the definition of what the ops compute.
 *
 * The reference backend (src/ref/<family>.c) is built for speed: a packed GEMM, convolutions without
 * im2col, an SRWM loop with one inlined copy per head size. The functions here are the same
 * mathematics written the plainest way: the equation in a comment above each function, one
 * loop per index of the equation, sums in double, libm's exp/log, no OpenMP, no blocking.
 * They are slow on purpose and exist to be read and to test the fast code against
 * (tests/test-ops "ref fwd", tests/test-naive).
 *
 * Conventions: tensors are row-major arrays; inputs are float (what the backends store),
 * results are double (so an oracle adds no float32 rounding of its own). Shapes are given
 * in a comment per argument, [B,C,H,W] style. Results are OVERWRITTEN (not accumulated).
 * Internal to the library (not an installed header); names mcl_naive_*.
 */
#ifndef MCL_NAIVE_H
#define MCL_NAIVE_H

#include <stdint.h>

/* ---- gemm.c ---------------------------------------------------------------------- */

/* Batched matrix product: out[z] = op(a[z]) op(b[z]) for z < batch; op = transpose if t. */
void mcl_naive_matmul(int64_t batch, int64_t M, int64_t K, int64_t N, int ta, int tb,
                      const float *a, const float *b, double *out);

/* ---- activation.c ---------------------------------------------------------------- */

/* GELU (erf form) of x [n] into y [n], and its backward gx [n] = g [n] * GELU'(x). */
void mcl_naive_gelu_fwd(int64_t n, const float *x, double *y);
void mcl_naive_gelu_bwd(int64_t n, const float *x, const float *g, double *gx);

/* ---- dropout.c ------------------------------------------------------------------- */

/* A dropout's drop probability p in (0, 1) and mask key (ops.def's dropout row): seed, stream,
 * counter; seg elements per segment (0: one segment), whose streams step by step. */
typedef struct mcl_naive_drop {
    uint64_t seed, stream, counter, step;
    int64_t seg;
    double p;
} mcl_naive_drop;

/* Whether element i is kept (1) or dropped (0). */
int mcl_naive_dropout_keep(const mcl_naive_drop *d, int64_t i);
/* y [n] = keep ? x [n] / (1 - p) : 0, and its backward gx [n] = keep ? g [n] / (1 - p) : 0. */
void mcl_naive_dropout_fwd(const mcl_naive_drop *d, int64_t n, const float *x, double *y);
void mcl_naive_dropout_bwd(const mcl_naive_drop *d, int64_t n, const float *g, double *gx);

/* ---- softmax.c ------------------------------------------------------------------- */

/* Row-wise softmax / log-softmax of x [R,N] into out [R,N]. */
void mcl_naive_softmax(int64_t R, int64_t N, const float *x, double *out);
void mcl_naive_log_softmax(int64_t R, int64_t N, const float *x, double *out);
/* Mean cross-entropy of logits [R,C] against targets [R] (class index as float; < 0 =
 * row ignored); probs [R,C] receives the softmax. Returns the loss. */
double mcl_naive_cross_entropy(int64_t R, int64_t C, const float *logits, const float *targets,
                               double *probs);

/* ---- norm.c ---------------------------------------------------------------------- */

/* Layer norm over the last dim of x [R,N] with gamma, beta [N]. */
void mcl_naive_layer_norm(int64_t R, int64_t N, const float *x, const float *gamma,
                          const float *beta, double eps, double *y, double *mean, double *rstd);
/* Its gradients for the output gradient g [R,N]: gx [R,N], ggamma and gbeta [N]. */
void mcl_naive_layer_norm_bwd(int64_t R, int64_t N, const float *x, const float *gamma,
                              double eps, const float *g, double *gx, double *ggamma,
                              double *gbeta);
/* Instance norm of x [B,C,H,W] per (image, channel) plane, gamma, beta [C]. */
void mcl_naive_instance_norm(int64_t B, int64_t C, int64_t H, int64_t W, const float *x,
                             const float *gamma, const float *beta, double eps, double *y,
                             double *mean, double *rstd);
/* relu(2x2 max pooling (stride 2, floor) of that instance norm): y and argmax [B,C,H/2,W/2],
 * mean and rstd [B*C] over the full H*W planes. */
void mcl_naive_inorm_pool_relu(int64_t B, int64_t C, int64_t H, int64_t W, const float *x,
                               const float *gamma, const float *beta, double eps, double *y,
                               double *mean, double *rstd, double *arg);
/* Its gradients for the output gradient gout [B,C,H/2,W/2], from that forward's y, mean,
 * rstd and arg: gx [B,C,H,W], ggamma and gbeta [C]. */
void mcl_naive_inorm_pool_relu_bwd(int64_t B, int64_t C, int64_t H, int64_t W, const float *x,
                                   const float *gamma, const double *y, const double *mean,
                                   const double *rstd, const double *arg, const float *gout,
                                   double *gx, double *ggamma, double *gbeta);
/* relu of the instance norm: y [B,C,H,W], mean, rstd [B*C]. */
void mcl_naive_inorm_relu(int64_t B, int64_t C, int64_t H, int64_t W, const float *x, const float *gamma,
                          const float *beta, double eps, double *y, double *mean, double *rstd);
/* Its gradients for gout [B,C,H,W] from that forward's y, mean, rstd: gx [B,C,H,W], ggamma,
 * gbeta [C]. */
void mcl_naive_inorm_relu_bwd(int64_t B, int64_t C, int64_t H, int64_t W, const float *x, const float *gamma,
                              const double *y, const double *mean, const double *rstd, const float *gout,
                              double *gx, double *ggamma, double *gbeta);
/* relu(2x2 max pooling of (the instance norm of x) + s): y and argmax [B,C,H/2,W/2], mean
 * and rstd [B*C] over the full H*W planes; s [B,C,H,W]. */
void mcl_naive_inorm_add_pool_relu(int64_t B, int64_t C, int64_t H, int64_t W, const float *x,
                                   const float *gamma, const float *beta, const float *s, double eps,
                                   double *y, double *mean, double *rstd, double *arg);
/* Its gradients for gout [B,C,H/2,W/2] from that forward's y, mean, rstd, arg: gx and gs
 * [B,C,H,W], ggamma and gbeta [C]. */
void mcl_naive_inorm_add_pool_relu_bwd(int64_t B, int64_t C, int64_t H, int64_t W, const float *x,
                                       const float *gamma, const double *y, const double *mean,
                                       const double *rstd, const double *arg, const float *gout, double *gx,
                                       double *ggamma, double *gbeta, double *gs);

/* ---- conv.c ---------------------------------------------------------------------- */

/* The sizes of one 2-D convolution: x [B,C,H,W], w [O,C,k,k], out [B,O,Ho,Wo]. */
typedef struct mcl_naive_conv {
    int64_t B, C, H, W; /* input                                            */
    int64_t O, k;       /* output channels, kernel size                     */
    int64_t stride, pad;
    int64_t Ho, Wo;     /* set by mcl_naive_conv_init                       */
} mcl_naive_conv;
void mcl_naive_conv_init(mcl_naive_conv *cv, int64_t B, int64_t C, int64_t H, int64_t W,
                         int64_t O, int64_t k, int64_t stride, int64_t pad);
void mcl_naive_conv2d_fwd(const mcl_naive_conv *cv, const float *x, const float *w,
                          const float *bias, double *out);
/* dL/dx [B,C,H,W] from gout = dL/dout [B,O,Ho,Wo]. */
void mcl_naive_conv2d_bwd_input(const mcl_naive_conv *cv, const float *gout, const float *w,
                                double *gx);
/* dL/dw [O,C,k,k] and dL/dbias [O] (gb may be NULL) from gout [B,O,Ho,Wo]. */
void mcl_naive_conv2d_bwd_weight(const mcl_naive_conv *cv, const float *gout, const float *x,
                                 double *gw, double *gb);
/* 2x2 max pooling, stride 2, of x [B,C,H,W] (Q = B*C planes): out and argmax [Q,H/2,W/2]. */
void mcl_naive_maxpool2d(int64_t Q, int64_t H, int64_t W, const float *x, double *out,
                         double *arg);

/* ---- srwm.c ---------------------------------------------------------------------- */

/* The self-referential weight matrix over a sequence, forward. Matrices i = 0..3 are
 * W_y, W_q, W_k (D x D) and w_b (D x 4); ncol(i) = D, D, D, 4.
 *   x      [B,H,L,D]         input
 *   W0[i]  [B,H,D,ncol(i)]   initial state
 *   y      [B,H,L,D]         output
 *   Wf[i]  [B,H,D,ncol(i)]   final state
 *   q, k   [B,H,L,D]         saved query / key (after softmax)    (may be NULL)
 *   beta   [B,H,L,4]         saved learning rates (after sigmoid) (may be NULL)
 *   dl[i]  [B,H,L,ncol(i)]   saved Δ_i = q·M_i − k·M_i            (dl may be NULL) */
void mcl_naive_srwm_fwd(int64_t B, int64_t H, int64_t L, int64_t D, const float *x,
                        const float *const W0[4], double *y, double *const Wf[4], double *q,
                        double *k, double *beta, double *const dl[4]);
/* Backward by plain backpropagation through time (every step's weights kept).
 *   gy     [B,H,L,D]         dL/dy
 *   gWf[i] [B,H,D,ncol(i)]   dL/d(final state)
 *   gx     [B,H,L,D]         dL/dx                 (result)
 *   gW0[i] [B,H,D,ncol(i)]   dL/d(initial state)   (result) */
void mcl_naive_srwm_bwd(int64_t B, int64_t H, int64_t L, int64_t D, const float *x,
                        const float *const W0[4], const float *gy, const float *const gWf[4],
                        double *gx, double *const gW0[4]);


/* ---- smn.c ----------------------------------------------------------------------- */

/* The meta-learner g_phi of smn_write (an MLP 2 -> H -> H -> 1, LeakyReLU of negative slope
 * `slope`): W1 [H,2], b1 [H], W2 [H,H], b2 [H], W3 [1,H], b3 [1]. */
typedef struct mcl_naive_phi {
    const float *W1, *b1, *W2, *b2, *W3, *b3;
    int64_t H;
    double slope;
} mcl_naive_phi;
/* Its gradients, laid out the same way (overwritten). */
typedef struct mcl_naive_phi_grad {
    double *W1, *b1, *W2, *b2, *W3, *b3;
} mcl_naive_phi_grad;
/* g_phi of one entry z [2] (a1 and a2 rounded to float, as the op stores them); act [4H]
 * receives a1, h1, a2, h2 [H]. */
double mcl_naive_smn_phi(const mcl_naive_phi *f, const float *z, double *act);
/* M [n] = M0 [n] (zeros if NULL) with M[idx_e] = g_phi(zs_e) for the m entries (idx [m]
 * distinct integers in [0, n) as floats, zs [m,2]); tmp [4H] scratch. */
void mcl_naive_smn_write(const mcl_naive_phi *f, int64_t n, int64_t m, const float *M0,
                         const float *idx, const float *zs, double *tmp, double *M);
/* Its gradients for gM [n]: gM0 [n], gzs [m,2] and g_phi's (g); tmp [6H] scratch. */
void mcl_naive_smn_write_bwd(const mcl_naive_phi *f, int64_t n, int64_t m, const float *idx,
                             const float *zs, const float *gM, double *tmp, double *gM0,
                             double *gzs, const mcl_naive_phi_grad *g);
/* grad_preproc of one value with P in (0, 87] (its threshold and scale the op's floats): out [2]. */
void mcl_naive_grad_preproc(double z, float P, double out[2]);
/* smn_avg_z: I2 [n] = gamma I + beta1 G; zs [m,2] = grad_preproc(I2[idx_e] + beta2 G[idx_e]). */
void mcl_naive_smn_avg_z(int64_t n, int64_t m, const float *I, const float *G, const float *idx,
                         double gamma, double beta1, double beta2, float P, double *I2, double *zs);

#endif
