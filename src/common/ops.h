/* ops.h — the differentiable operations (public API).
 *
 * Every function runs the op immediately on the context's backend and, when gradients are
 * enabled and an input needs a gradient, records it on the tape. Results are temporaries
 * owned by the context (see tensor.h). On error the function returns NULL (or a status) and
 * the context holds the message. Shapes: see src/common/ops.def. (Running an op by its id,
 * mcl_op_run / mcl_op_backward, is internal: backend.h.)
 */
#ifndef MCL_OPS_H
#define MCL_OPS_H

#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* elementwise (same shapes) */
mcl_tensor *mcl_add(mcl_ctx *ctx, mcl_tensor *a, mcl_tensor *b);
mcl_tensor *mcl_sub(mcl_ctx *ctx, mcl_tensor *a, mcl_tensor *b);
mcl_tensor *mcl_mul(mcl_ctx *ctx, mcl_tensor *a, mcl_tensor *b);
mcl_tensor *mcl_scale(mcl_ctx *ctx, mcl_tensor *a, float alpha);
mcl_tensor *mcl_bias_add(mcl_ctx *ctx, mcl_tensor *x, mcl_tensor *bias);
/* out[0] = x + b0 and out[1] = x + b1 (two mcl_bias_add of one x as one op): x [..,N], b0, b1
 * [N]. Returns the status; on failure out[0] = out[1] = NULL. */
mcl_status mcl_bias_add2(mcl_ctx *ctx, mcl_tensor *x, mcl_tensor *b0, mcl_tensor *b1, mcl_tensor *out[2]);
mcl_tensor *mcl_copy(mcl_ctx *ctx, mcl_tensor *a);

/* activations */
mcl_tensor *mcl_relu(mcl_ctx *ctx, mcl_tensor *a);
mcl_tensor *mcl_leaky_relu(mcl_ctx *ctx, mcl_tensor *a, float slope);
mcl_tensor *mcl_elu(mcl_ctx *ctx, mcl_tensor *a, float alpha);
mcl_tensor *mcl_sigmoid(mcl_ctx *ctx, mcl_tensor *a);
mcl_tensor *mcl_tanh(mcl_ctx *ctx, mcl_tensor *a);
mcl_tensor *mcl_gelu(mcl_ctx *ctx, mcl_tensor *a);
mcl_tensor *mcl_exp(mcl_ctx *ctx, mcl_tensor *a);
mcl_tensor *mcl_log(mcl_ctx *ctx, mcl_tensor *a);
/* gelu(x + bias): x [..,N], bias [N] (mcl_bias_add then mcl_gelu as one op, the same floats) */
mcl_tensor *mcl_bias_gelu(mcl_ctx *ctx, mcl_tensor *x, mcl_tensor *bias);

/* matrix product: [..,M,K] x [..,K,N] -> [..,M,N]; trans_a / trans_b read an operand
 * transposed ([..,K,M] / [..,N,K]). Leading (batch) dims must be equal. */
mcl_tensor *mcl_matmul(mcl_ctx *ctx, mcl_tensor *a, mcl_tensor *b, int trans_a, int trans_b);

/* reductions */
mcl_tensor *mcl_sum(mcl_ctx *ctx, mcl_tensor *a);       /* -> [1] */
mcl_tensor *mcl_mean(mcl_ctx *ctx, mcl_tensor *a);      /* -> [1] */
mcl_tensor *mcl_sumsq(mcl_ctx *ctx, mcl_tensor *a);     /* -> [1] */
mcl_tensor *mcl_sum_last(mcl_ctx *ctx, mcl_tensor *a);  /* [..,N] -> [..] ([N] -> [1]) */
mcl_tensor *mcl_mean_last(mcl_ctx *ctx, mcl_tensor *a); /* [..,N] -> [..] ([N] -> [1]) */

/* normalization and losses (over the last dim) */
mcl_tensor *mcl_softmax(mcl_ctx *ctx, mcl_tensor *a);
mcl_tensor *mcl_log_softmax(mcl_ctx *ctx, mcl_tensor *a);
mcl_tensor *mcl_layer_norm(mcl_ctx *ctx, mcl_tensor *x, mcl_tensor *gamma, mcl_tensor *beta,
                           float eps);
/* logits [R,C], targets [R] holding class indices as floats (negative = ignore the row).
 * Returns the mean loss [1] over the rows not ignored. */
mcl_tensor *mcl_cross_entropy(mcl_ctx *ctx, mcl_tensor *logits, mcl_tensor *targets);

/* shape */
mcl_tensor *mcl_concat(mcl_ctx *ctx, mcl_tensor *a, mcl_tensor *b, int axis);
/* Rows [start, start+len) along axis; the whole axis is a reshape (a view, no kernel). */
mcl_tensor *mcl_slice(mcl_ctx *ctx, mcl_tensor *a, int axis, int64_t start, int64_t len);
/* The same elements in a new shape: a view of a's buffer (no copy; doc/engine.md). */
mcl_tensor *mcl_reshape(mcl_ctx *ctx, mcl_tensor *a, int ndim, const int64_t *shape);
mcl_tensor *mcl_transpose(mcl_ctx *ctx, mcl_tensor *a);
/* 4-D permutation: out.shape[d] = a.shape[perm[d]] (e.g. {0,2,1,3} splits heads). One that
 * only moves dims of size 1 is a reshape (a view, no kernel). */
mcl_tensor *mcl_permute(mcl_ctx *ctx, mcl_tensor *a, const int perm[4]);

/* x [..] -> [n, ..]: n copies along a new leading dim (gradient: the sum over it) */
mcl_tensor *mcl_repeat_batch(mcl_ctx *ctx, mcl_tensor *x, int64_t n);
/* x[0..3] -> out[0..3]: repeat_batch of each in one op (ops.def repeat_batch4): axis 0,
 * x_k [..] -> [n, ..]; axis 1, x_k [B, ..] -> [B·n, ..] (each row's n copies next to it, the
 * same B for all four). One launch each way instead of four. */
mcl_status mcl_repeat_batch4(mcl_ctx *ctx, mcl_tensor *const x[4], int64_t n, int axis,
                             mcl_tensor *out[4]);
/* x [B, ..] -> [B, n, ..]: n copies of each row next to it (repeat_batch with axis 1; the
 * gradient: the sum over the copies). Replaces repeat_batch + permute: one kernel. */
mcl_tensor *mcl_repeat_rows(mcl_ctx *ctx, mcl_tensor *x, int64_t n);

/* convolution and pooling, NCHW: x [B,C,H,W], w [O,C,k,k], b [O] */
mcl_tensor *mcl_conv2d(mcl_ctx *ctx, mcl_tensor *x, mcl_tensor *w, mcl_tensor *b, int stride,
                       int padding);
mcl_tensor *mcl_maxpool2d(mcl_ctx *ctx, mcl_tensor *x); /* 2x2, stride 2 */
mcl_tensor *mcl_instance_norm(mcl_ctx *ctx, mcl_tensor *x, mcl_tensor *gamma, mcl_tensor *beta,
                              float eps);
/* relu(instance_norm(x, gamma, beta, eps)) in one op, the same numbers (ops.def inorm_relu) */
mcl_tensor *mcl_inorm_relu(mcl_ctx *ctx, mcl_tensor *x, mcl_tensor *gamma, mcl_tensor *beta, float eps);
/* maxpool2d(relu(add(instance_norm(x, gamma, beta, eps), skip))) in one op, the same numbers (a
 * residual block's tail, ops.def inorm_add_pool_relu): x, skip [B,C,H,W] with H, W >= 2 ->
 * [B,C,H/2,W/2] (floor); statistics over all H*W */
mcl_tensor *mcl_inorm_add_pool_relu(mcl_ctx *ctx, mcl_tensor *x, mcl_tensor *gamma, mcl_tensor *beta,
                                    mcl_tensor *skip, float eps);
/* relu(maxpool2d(instance_norm(x, gamma, beta, eps))) in one op, the same numbers (the Conv-4
 * block's tail): x [B,C,H,W] with H, W >= 2 -> [B,C,H/2,W/2] (floor); statistics over all H*W */
mcl_tensor *mcl_inorm_pool_relu(mcl_ctx *ctx, mcl_tensor *x, mcl_tensor *gamma, mcl_tensor *beta,
                                float eps);
/* mcl_dropout(mcl_inorm_pool_relu(x, gamma, beta, eps), p, training) in one op (the same values,
 * gradients and stream; no mask is stored: the backward's relu gate y > 0 holds it) */
mcl_tensor *mcl_inorm_pool_relu_dropout(mcl_ctx *ctx, mcl_tensor *x, mcl_tensor *gamma,
                                        mcl_tensor *beta, float eps, float p, int training);
/* mcl_dropout_segments(mcl_inorm_pool_relu(x, gamma, beta, eps), p, seed, stream, step,
 * numel(out) / n_seg) in one op (p > 0; n_seg segments of the output) */
mcl_tensor *mcl_inorm_pool_relu_dropout_segments(mcl_ctx *ctx, mcl_tensor *x, mcl_tensor *gamma,
                                                 mcl_tensor *beta, float eps, float p,
                                                 uint64_t seed, uint64_t stream, uint64_t step,
                                                 int64_t n_seg);

/* The self-referential weight matrix over a sequence (doc/acl-model.md §1): x [B,H,L,D], state
 * {W_y, W_q, W_k [B,H,D,D], w_b [B,H,D,4]} -> y [B,H,L,D] and the final state. */
/* Causal attention of a chunk against a KV ring buffer (ops.def attn_kv; doc/oct-model.md):
 * q [S,Hq,Dk], k [S,Hk,Dk], v [S,Hk,Dv], kbuf [C,Hk,Dk], vbuf [C,Hk,Dv] -> out [S,Hq,Dv].
 * Gradients reach q, k and v, never the buffer. */
typedef struct mcl_attn_opts {
    int64_t n;         /* ring rows in use (0..C)                                          */
    int64_t start;     /* ring index of the oldest row                                     */
    int mask;          /* 0 causal; 1 the diagonal dropped after the softmax (the paper's  
                          pi mask); 2 strictly causal (dropped before the softmax)         */
    float scale;       /* of the scores, usually 1/sqrt(Dk)                                */
    float alibi;       /* 0: no positional bias; else the ALiBi slope factor                */
} mcl_attn_opts;
/* mcl_inorm_pool_relu(mcl_conv2d(x, w, b, 1, padding), gamma, beta, eps) in one op (ops.def
 * conv_inorm_pool_relu): the same values and gradients, the convolution's output never stored
 * (the op is for a first layer, whose convolution is memory-bound). */
mcl_tensor *mcl_conv_inorm_pool_relu(mcl_ctx *ctx, mcl_tensor *x, mcl_tensor *w, mcl_tensor *b, int padding,
                                     mcl_tensor *gamma, mcl_tensor *beta, float eps);
/* mcl_inorm_pool_relu_dropout(mcl_conv2d(x, w, b, 1, padding), gamma, beta, eps, p, training)
 * in one op, as above. */
mcl_tensor *mcl_conv_inorm_pool_relu_dropout(mcl_ctx *ctx, mcl_tensor *x, mcl_tensor *w, mcl_tensor *b,
                                             int padding, mcl_tensor *gamma, mcl_tensor *beta, float eps,
                                             float p, int training);
/* mcl_inorm_pool_relu_dropout_segments(mcl_conv2d(x, w, b, 1, padding), gamma, beta, eps, p,
 * seed, stream, step, n_seg) in one op, as above. */
mcl_tensor *mcl_conv_inorm_pool_relu_dropout_segments(mcl_ctx *ctx, mcl_tensor *x, mcl_tensor *w,
                                                      mcl_tensor *b, int padding, mcl_tensor *gamma,
                                                      mcl_tensor *beta, float eps, float p, uint64_t seed,
                                                      uint64_t stream, uint64_t step, int64_t n_seg);
mcl_status mcl_attn_kv(mcl_ctx *ctx, mcl_tensor *q, mcl_tensor *k, mcl_tensor *v,
                       mcl_tensor *kbuf, mcl_tensor *vbuf, const mcl_attn_opts *opt,
                       mcl_tensor **out);
/* Transformer-XL relative-position causal attention over [memory ‖ segment] (ops.def rel_attn;
 * Dai et al. 2019, Sec. 3.3): qc = query + u [B,S,H,D], qp = query + v [B,S,H,D], k [B,T,H,D],
 * v [B,T,H,Dv] (T = M + S: M memory rows, then the segment), r [T,H,D] (relative encodings,
 * row d = distance d) -> out [B,S,H,Dv]. Query i attends to keys j <= M + i with the scores
 * scale·(qc_i·k_j + qp_i·r_{M+i-j}). Gradients reach all five inputs (the memory rows of k
 * and v included: build them from detached memory to stop the gradient there). */
mcl_status mcl_rel_attn(mcl_ctx *ctx, mcl_tensor *qc, mcl_tensor *qp, mcl_tensor *k, mcl_tensor *v,
                        mcl_tensor *r, float scale, mcl_tensor **out);
/* The same with a window: key j only if the distance M + i - j <= window (0 = unlimited). */
mcl_status mcl_rel_attn_window(mcl_ctx *ctx, mcl_tensor *qc, mcl_tensor *qp, mcl_tensor *k,
                               mcl_tensor *v, mcl_tensor *r, float scale, int64_t window,
                               mcl_tensor **out);
/* Write the last min(S, C) rows of x [S,H,D] into the ring buf [C,H,D] at rows pos, pos+1, ...
 * (mod C), in place (no gradient). */
mcl_status mcl_kv_push(mcl_ctx *ctx, mcl_tensor *buf, mcl_tensor *x, int64_t pos);
mcl_status mcl_srwm(mcl_ctx *ctx, mcl_tensor *x, mcl_tensor *const state_in[4], mcl_tensor **y,
                    mcl_tensor *state_out[4]);

/* embeddings: idx holds integer values stored as floats */
mcl_tensor *mcl_one_hot(mcl_ctx *ctx, mcl_tensor *idx, int64_t depth);
mcl_tensor *mcl_embedding(mcl_ctx *ctx, mcl_tensor *table, mcl_tensor *idx);

/* Inverted dropout with drop probability p, mask from Philox (seed = the context seed,
 * stream = a fresh stream id). Identity (a view of a, as a reshape: no kernel, no stream
 * drawn) when `training` is 0 or p == 0. */
mcl_tensor *mcl_dropout(mcl_ctx *ctx, mcl_tensor *a, float p, int training);
/* Same with an explicit (seed, stream, counter) — what the op records. */
mcl_tensor *mcl_dropout_keyed(mcl_ctx *ctx, mcl_tensor *a, float p, uint64_t seed,
                              uint64_t stream, uint64_t counter);
/* a [any], numel a multiple of seg > 0: segment s (elements s·seg .. s·seg + seg − 1) gets the
 * mask of mcl_dropout_keyed(segment, p, seed, stream + s·step, 0), so one launch over the
 * concatenation of several tensors draws the masks of separate calls on each. */
/* mcl_dropout(mcl_relu(a), p, training) in one op (dropout with i1 = 1; the same values,
 * gradients and stream): relu alone when `training` is 0 or p == 0. */
mcl_tensor *mcl_dropout_relu(mcl_ctx *ctx, mcl_tensor *a, float p, int training);
mcl_tensor *mcl_dropout_segments(mcl_ctx *ctx, mcl_tensor *a, float p, uint64_t seed,
                                 uint64_t stream, uint64_t step, int64_t seg);
/* a + mcl_dropout(x, p, training) in one op (add_dropout; the same values, gradients and
 * stream): the add alone when `training` is 0 or p == 0. a, x the same shape. */
mcl_tensor *mcl_add_dropout(mcl_ctx *ctx, mcl_tensor *a, mcl_tensor *x, float p, int training);
/* Same with an explicit (seed, stream, counter) — what the op records. */
mcl_tensor *mcl_add_dropout_keyed(mcl_ctx *ctx, mcl_tensor *a, mcl_tensor *x, float p,
                                  uint64_t seed, uint64_t stream, uint64_t counter);
/* mcl_dropout_relu(mcl_bias_add(x, b), p, training) in one op (bias_dropout_relu; the same
 * values, gradients and stream): bias_add then relu when `training` is 0 or p == 0.
 * x [..,N], b [N]. */
mcl_tensor *mcl_bias_dropout_relu(mcl_ctx *ctx, mcl_tensor *x, mcl_tensor *b, float p,
                                  int training);
/* Same with an explicit (seed, stream, counter) — what the op records. */
mcl_tensor *mcl_bias_dropout_relu_keyed(mcl_ctx *ctx, mcl_tensor *x, mcl_tensor *b, float p,
                                        uint64_t seed, uint64_t stream, uint64_t counter);
/* mcl_add_dropout(a, mcl_bias_add(x, b), p, training) in one op (bias_add_dropout; the same
 * values, gradients and stream); when `training` is 0 or p == 0 the op at p = 0, a + (x + b)
 * (the floats of bias_add then add; no stream drawn). a, x [..,N] (the same shape), b [N]. */
mcl_tensor *mcl_bias_add_dropout(mcl_ctx *ctx, mcl_tensor *a, mcl_tensor *x, mcl_tensor *b,
                                 float p, int training);
/* Same with an explicit (seed, stream, counter) — what the op records. */
mcl_tensor *mcl_bias_add_dropout_keyed(mcl_ctx *ctx, mcl_tensor *a, mcl_tensor *x, mcl_tensor *b,
                                       float p, uint64_t seed, uint64_t stream, uint64_t counter);

/* ---- Sparse Meta Networks (Munkhdalai 2019; the ops of family smn in ops.def) ---- */

/* The gradient preprocessing of Andrychowicz et al. 2016, 0 < p <= 87 (the paper uses 10):
 * z [..] (at most 3 dims) -> [.., 2], (log|z| / p, sign z) where |z| >= e^-p, else (-1, e^p z).
 * p <= 0, p > 87 or not finite: an error (NULL). */
mcl_tensor *mcl_grad_preproc(mcl_ctx *ctx, mcl_tensor *z, float p);

/* Sparse-MetaNet's fast-weight write: M = m0, then M[idx_e] = g_phi(zs_e) for every entry e,
 * g_phi the coordinate-wise MLP 2 -> H -> H -> 1 with LeakyReLU of negative slope `slope`,
 * phi = {W1 [H,2], b1 [H], W2 [H,H], b2 [H], W3 [1,H], b3 [1]} (H >= 1).
 *   m0 [any] with fewer than 2^24 elements; idx [m], m <= numel(m0): flat element indices into
 *   m0 stored as floats; zs [m,2]: the meta-learner's input at those elements.
 * Caller's contract: the indices are integers in [0, numel(m0)), all distinct (as
 * mcl_rng_bernoulli_indices, rng.h, gives them). Their values live on the device, so they are
 * not checked here: the reference backend refuses a bad index (MCL_ERR_INVALID, with a message);
 * the OpenCL backend skips an entry whose index is not in range (it never writes out of bounds)
 * and leaves duplicates undefined. idx == NULL and zs == NULL mean "no write" (m = 0: a tensor
 * has no empty dims) and give a copy of m0; with an error already held such NULLs propagate it.
 * Gradients reach m0 (zero at the written elements), zs and phi; idx gets none. */
mcl_tensor *mcl_smn_write(mcl_ctx *ctx, mcl_tensor *m0, mcl_tensor *idx, mcl_tensor *zs,
                          mcl_tensor *const phi[6], float slope);

/* The WCST agent's episode, in place on the device (ops.def wcst_act; doc/smn.md): sample an
 * action for each of the L cards from logits [L,A] with the uniforms of (seed, stream,
 * counter + c), score it against the card's value cards [L,3] of the rule in force (state [S],
 * updated: the rule's schedule after the episode), writing act [L] and reward [L]
 * (reward_correct / reward_wrong). No gradient; solve_episodes >= 1. */
mcl_status mcl_wcst_act(mcl_ctx *ctx, mcl_tensor *state, mcl_tensor *logits, mcl_tensor *cards, mcl_tensor *act,
                        mcl_tensor *reward, uint64_t seed, uint64_t stream, uint64_t counter,
                        int64_t solve_episodes, float reward_correct, float reward_wrong);

/* The inputs of Sparse-MetaNet's write in one pass (no gradient: the write is data):
 * out[0] = gamma·avg + beta1·g (the new gradient average, shape of avg) and
 * out[1] [m,2] = mcl_grad_preproc(out[0][idx_e] + beta2·g[idx_e], p) for the m flat indices
 * idx [m] (floats holding integers in [0, numel(avg)), fewer than 2^24 elements). The same
 * floats as mcl_scale, mcl_add, a gather and mcl_grad_preproc in a row. Returns the status; on
 * failure out[0] = out[1] = NULL. */
mcl_status mcl_smn_avg_z(mcl_ctx *ctx, mcl_tensor *avg, mcl_tensor *g, mcl_tensor *idx, float gamma, float beta1,
                         float beta2, float p, mcl_tensor *out[2]);

/* ---- autograd ---- */

/* Gradient recording is on by default; no-grad scopes nest. */
void mcl_no_grad_begin(mcl_ctx *ctx);
void mcl_no_grad_end(mcl_ctx *ctx);
int mcl_grad_enabled(const mcl_ctx *ctx);
/* Mark a caller-owned tensor as a trainable leaf (requires grad). */
void mcl_tensor_requires_grad(mcl_tensor *t, int on);

/* Backward from a scalar loss ([1]): d loss / d leaf is ACCUMULATED into leaf->grad for every
 * REQUIRES_GRAD leaf reached. The tape is kept (call mcl_ctx_reset to clear it), so a second
 * backward over the same graph accumulates again. */
mcl_status mcl_backward(mcl_ctx *ctx, mcl_tensor *loss);

/* Tape position, for partial backward. */
size_t mcl_tape_mark(const mcl_ctx *ctx);
size_t mcl_tape_size(const mcl_ctx *ctx);
/* Partial backward: gradients of `loss` into the `n` tensors wrt[], following only the ops
 * recorded after `mark`. Each grads[k] receives a NEW caller-owned tensor (zeros if loss does
 * not depend on wrt[k] after the mark); leaf .grad fields are not touched; the tape is kept.
 * The results are plain data (cut from the graph): the walk's own gradients handed over, no
 * copy, so several may be views into one buffer (each its own elements). */
mcl_status mcl_grad_partial(mcl_ctx *ctx, mcl_tensor *loss, size_t mark, int n,
                            mcl_tensor *const *wrt, mcl_tensor **grads);

#ifdef __cplusplus
}
#endif
#endif
