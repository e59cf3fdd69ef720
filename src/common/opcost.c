/* opcost.c — each op's flops and compulsory bytes per call, and the roofline tally (opcost.h).
 *
 * One function per op, cost_<name>(a, bwd, c), with its formula as text above it (form_<name>);
 * the table at the bottom is generated from ops.def, so an op added there without a cost here
 * does not compile. Notation: F = 4 bytes per float; |t| = numel(t); "io" = every input and
 * every output once, F·(Σ|in| + Σ|out|); "grads" = backward's gradients, F·(Σ|gout| +
 * 2·Σ|gin|) over the gin that are asked for (an accumulated gradient is read and written).
 * A backward's bytes are grads plus what it reads besides (named per op).
 */
#include "opcost.h"
#include "tape.h"

#include <string.h>

#define F 4.0 /* bytes per float */

static double nel(const mcl_tensor *t) { return t ? (double)mcl_tensor_numel(t) : 0.0; }

/* Σ|in[k]| over the op's inputs, Σ|out[k]| over its outputs. */
static double ins(const mcl_op_args *a)
{
    double n = 0;
    for (int k = 0; k < mcl_op_table[a->op].n_in; k++) n += nel(a->in[k]);
    return n;
}

static double outs(const mcl_op_args *a)
{
    double n = 0;
    for (int k = 0; k < mcl_op_table[a->op].n_out; k++) n += nel(a->out[k]);
    return n;
}

/* Σ|gout[k]| + 2·Σ|gin[k]| (elements, not bytes). */
static double grads(const mcl_op_args *a)
{
    const mcl_op_info *info = &mcl_op_table[a->op];
    double n = 0;
    for (int k = 0; k < info->n_diff_out; k++) n += nel(a->gout[k]);
    for (int k = 0; k < info->n_in; k++) n += 2 * nel(a->gin[k]);
    return n;
}

/* io forward; grads plus `reads` elements backward; no flops. */
static void io_or_grads(const mcl_op_args *a, int bwd, double reads, mcl_op_cost *c)
{
    c->flops = 0;
    c->bytes = F * (bwd ? grads(a) + reads : ins(a) + outs(a));
}

/* ---- pointwise, shape and reduction ops: no flops counted ---- */

/* io; backward grads, nothing else read */
static const char form_add[] = "0 flops; fwd io, bwd grads";
static void cost_add(const mcl_op_args *a, int bwd, mcl_op_cost *c) { io_or_grads(a, bwd, 0, c); }
#define cost_sub cost_add
#define form_sub form_add
#define cost_scale cost_add
#define form_scale form_add
#define cost_bias_add cost_add
#define form_bias_add form_add
#define cost_copy cost_add
#define form_copy form_add
#define cost_sum cost_add
#define form_sum form_add
#define cost_mean cost_add
#define form_mean form_add
#define cost_sum_last cost_add
#define form_sum_last form_add
#define cost_mean_last cost_add
#define form_mean_last form_add
#define cost_concat cost_add
#define form_concat form_add
#define cost_reshape cost_add
#define form_reshape form_add
#define cost_transpose cost_add
#define form_transpose form_add
#define cost_permute cost_add
#define form_permute form_add
#define cost_repeat_batch cost_add
#define form_repeat_batch form_add
#define cost_bias_add2 cost_add
#define form_bias_add2 form_add
#define cost_add_dropout cost_add
#define form_add_dropout form_add
#define cost_repeat_batch4 cost_add
#define form_repeat_batch4 form_add
#define cost_bias_add_dropout cost_add
#define form_bias_add_dropout form_add
#define cost_one_hot cost_add /* no backward */
#define form_one_hot form_add
#define cost_smn_avg_z cost_add
#define form_smn_avg_z form_add

/* mul: backward reads b for ga and a for gb */
static const char form_mul[] = "0 flops; fwd io, bwd grads + F(|b| if ga + |a| if gb)";
static void cost_mul(const mcl_op_args *a, int bwd, mcl_op_cost *c)
{
    io_or_grads(a, bwd, (a->gin[0] ? nel(a->in[1]) : 0) + (a->gin[1] ? nel(a->in[0]) : 0), c);
}

/* activations and other pointwise ops whose backward reads one tensor of the input's size (x,
 * or y = out[0]); the exp, erf, log, tanh are not counted */
static const char form_relu[] = "0 flops (transcendentals not counted); fwd io, bwd grads + F|x|";
static void cost_relu(const mcl_op_args *a, int bwd, mcl_op_cost *c) { io_or_grads(a, bwd, nel(a->in[0]), c); }
#define cost_leaky_relu cost_relu
#define form_leaky_relu form_relu
#define cost_elu cost_relu
#define form_elu form_relu
#define cost_sigmoid cost_relu
#define form_sigmoid form_relu
#define cost_tanh cost_relu
#define form_tanh form_relu
#define cost_gelu cost_relu
#define form_gelu form_relu
#define cost_exp cost_relu
#define form_exp form_relu
#define cost_log cost_relu
#define form_log form_relu
#define cost_sumsq cost_relu
#define form_sumsq form_relu
#define cost_softmax cost_relu /* backward reads y, the size of x */
#define form_softmax form_relu
#define cost_log_softmax cost_relu
#define form_log_softmax form_relu
#define cost_grad_preproc cost_relu
#define form_grad_preproc form_relu

/* bias_gelu, bias_dropout_relu: backward recomputes t = x + b (reads x and b) */
static const char form_bias_gelu[] = "0 flops; fwd io, bwd grads + F(|x| + |b|)";
static void cost_bias_gelu(const mcl_op_args *a, int bwd, mcl_op_cost *c)
{
    io_or_grads(a, bwd, nel(a->in[0]) + nel(a->in[1]), c);
}
#define cost_bias_dropout_relu cost_bias_gelu
#define form_bias_dropout_relu form_bias_gelu

/* dropout: the mask is drawn, not read; with relu first (i1 = 1) backward reads x */
static const char form_dropout[] = "0 flops (mask drawn, not read); fwd io, bwd grads (+ F|x| with relu, i1 = 1)";
static void cost_dropout(const mcl_op_args *a, int bwd, mcl_op_cost *c)
{
    io_or_grads(a, bwd, a->p.i[1] ? nel(a->in[0]) : 0, c);
}

/* slice: forward reads only the slice; backward adds gout into those rows of ga */
static const char form_slice[] = "0 flops; fwd F·2|out|, bwd F(|gout| + 2|gout| if ga)";
static void cost_slice(const mcl_op_args *a, int bwd, mcl_op_cost *c)
{
    const double n = nel(a->out[0]);
    c->flops = 0;
    c->bytes = bwd ? F * (n + (a->gin[0] ? 2 * n : 0)) : F * 2 * n;
}

/* maxpool2d: backward reads the argmax */
static const char form_maxpool2d[] = "0 flops; fwd io, bwd grads + F|argmax|";
static void cost_maxpool2d(const mcl_op_args *a, int bwd, mcl_op_cost *c) { io_or_grads(a, bwd, nel(a->out[1]), c); }

/* cross_entropy: backward reads the saved probabilities and the targets */
static const char form_cross_entropy[] = "0 flops (exp, log not counted); fwd io, bwd grads + F(|probs| + |targets|)";
static void cost_cross_entropy(const mcl_op_args *a, int bwd, mcl_op_cost *c)
{
    io_or_grads(a, bwd, nel(a->out[1]) + nel(a->in[1]), c);
}

/* embedding table [V,D], idx [n]: the rows of the table read are at most min(V, n) */
static const char form_embedding[] = "0 flops; fwd F(n + min(V,n)·D + n·D), bwd F(n·D + n + 2·min(V,n)·D if gtable)";
static void cost_embedding(const mcl_op_args *a, int bwd, mcl_op_cost *c)
{
    const double V = (double)a->in[0]->shape[0], D = nel(a->in[0]) / V, n = nel(a->in[1]);
    const double rows = (V < n ? V : n) * D;
    c->flops = 0;
    c->bytes = bwd ? F * (n * D + n + (a->gin[0] ? 2 * rows : 0)) : F * (n + rows + n * D);
}

/* kv_push buf [C,H,D], x [S,H,D]: min(S, C) rows read and written */
static const char form_kv_push[] = "0 flops; F·2·min(S,C)·H·D";
static void cost_kv_push(const mcl_op_args *a, int bwd, mcl_op_cost *c)
{
    (void)bwd;
    const double C = (double)a->in[0]->shape[0], S = (double)a->in[1]->shape[0];
    c->flops = 0;
    c->bytes = S > 0 ? F * 2 * (S < C ? S : C) * nel(a->in[1]) / S : 0;
}

/* ---- in-place updates (no outputs): the updated inputs read and written ---- */

/* wcst_act: the state read and written, act and reward written, logits and cards read */
static const char form_wcst_act[] = "0 flops; F(Σ|in| + |state|)";
static void cost_wcst_act(const mcl_op_args *a, int bwd, mcl_op_cost *c)
{
    (void)bwd;
    c->flops = 0;
    c->bytes = F * (ins(a) + nel(a->in[0]));
}

static const char form_sgd_step[] = "0 flops; F(|param| r+w + |grad| + |mom| r+w)";
static void cost_sgd_step(const mcl_op_args *a, int bwd, mcl_op_cost *c)
{
    (void)bwd;
    c->flops = 0;
    c->bytes = F * (ins(a) + nel(a->in[0]) + nel(a->in[2]));
}

static const char form_adam_step[] = "0 flops; F(|param| r+w + |grad| + |m| r+w + |v| r+w)";
static void cost_adam_step(const mcl_op_args *a, int bwd, mcl_op_cost *c)
{
    (void)bwd;
    c->flops = 0;
    c->bytes = F * (ins(a) + nel(a->in[0]) + nel(a->in[2]) + nel(a->in[3]));
}

/* dyn_step reads w0 only when the decay f1 is on */
static const char form_dyn_step[] = "0 flops; F(|param| r+w + |grad| + |w0| if f1 > 0)";
static void cost_dyn_step(const mcl_op_args *a, int bwd, mcl_op_cost *c)
{
    (void)bwd;
    c->flops = 0;
    c->bytes = F * (2 * nel(a->in[0]) + nel(a->in[1]) + (a->p.f[1] > 0 ? nel(a->in[2]) : 0));
}

static const char form_clip_scale[] = "0 flops; F(|grad| r+w + 1)";
static void cost_clip_scale(const mcl_op_args *a, int bwd, mcl_op_cost *c)
{
    (void)bwd;
    c->flops = 0;
    c->bytes = F * (ins(a) + nel(a->in[0]));
}

/* ---- the heavy ops ---- */

/* matmul [..,M,K]·[..,K,N] (batch b): fwd 2bMNK; bwd 2bMNK per gradient asked for */
static const char form_matmul[] = "fwd 2bMNK flops, io; bwd 2bMNK per gradient, grads + F(|b| if ga + |a| if gb)";
static void cost_matmul(const mcl_op_args *a, int bwd, mcl_op_cost *c)
{
    mcl_mm_dims d;
    mcl_mm_dims_get(a, &d);
    const double mnk = 2.0 * (double)d.batch * (double)d.M * (double)d.N * (double)d.K;
    cost_mul(a, bwd, c); /* the same bytes as mul's */
    c->flops = bwd ? mnk * ((a->gin[0] != NULL) + (a->gin[1] != NULL)) : mnk;
}

/* conv2d x [B,C,H,W], w [O,C,kh,kw], y [B,O,Ho,Wo]: one multiply-add per weight per output:
 * 2|y|·C·kh·kw per pass (forward, data gradient, weight gradient; the bias's sums not counted) */
static const char form_conv2d[] =
    "2|y|C·kh·kw flops per pass (fwd; bwd: one per gradient of x, w); fwd io, bwd grads + F(|w| if gx + |x| if gw)";
static void cost_conv2d(const mcl_op_args *a, int bwd, mcl_op_cost *c)
{
    const double pass = 2 * nel(a->out[0]) * (double)a->in[0]->shape[1] * (double)a->in[1]->shape[2] *
                        (double)a->in[1]->shape[3];
    io_or_grads(a, bwd, (a->gin[0] ? nel(a->in[1]) : 0) + (a->gin[1] ? nel(a->in[0]) : 0), c);
    c->flops = bwd ? pass * ((a->gin[0] != NULL) + (a->gin[1] != NULL)) : pass;
}

/* layer_norm [R,N]: fwd 7RN (mean, variance, normalize, scale, shift), bwd 9RN; backward
 * reads x, mean, rstd, gamma */
static const char form_layer_norm[] = "fwd 7RN flops, io; bwd 9RN, grads + F(|x| + 2R + N)";
static void cost_layer_norm(const mcl_op_args *a, int bwd, mcl_op_cost *c)
{
    const double RN = nel(a->in[0]);
    io_or_grads(a, bwd, RN + nel(a->out[1]) + nel(a->out[2]) + nel(a->in[1]), c);
    c->flops = (bwd ? 9 : 7) * RN;
}

/* instance_norm, inorm_pool_relu x [B,C,H,W], N = |x|: 5N flops each way (sum, sum of squares,
 * normalize, scale and shift; the max and relu not counted); backward reads x, mean, rstd,
 * gamma (and inorm_pool_relu the argmax) */
static const char form_instance_norm[] = "5N flops each way; fwd io, bwd grads + F(|x| + |mean| + |rstd| + |gamma|)";
static void cost_instance_norm(const mcl_op_args *a, int bwd, mcl_op_cost *c)
{
    io_or_grads(a, bwd, nel(a->in[0]) + nel(a->out[1]) + nel(a->out[2]) + nel(a->in[1]), c);
    c->flops = 5 * nel(a->in[0]);
}

static const char form_inorm_pool_relu[] =
    "5N flops each way; fwd io, bwd grads + F(|x| + |mean| + |rstd| + |argmax| + |gamma|)";
static void cost_inorm_pool_relu(const mcl_op_args *a, int bwd, mcl_op_cost *c)
{
    cost_instance_norm(a, bwd, c);
    if (bwd) c->bytes += F * nel(a->out[3]);
}

/* inorm_relu: instance_norm's, its backward also reads y (the relu's gate) */
static const char form_inorm_relu[] = "5N flops each way; fwd io, bwd grads + F(|x| + |y| + |mean| + |rstd| + |gamma|)";
static void cost_inorm_relu(const mcl_op_args *a, int bwd, mcl_op_cost *c)
{
    cost_instance_norm(a, bwd, c);
    if (bwd) c->bytes += F * nel(a->out[0]);
}

/* inorm_add_pool_relu: instance_norm's and the skip's add (N flops each way); backward also
 * reads y and the argmax (the gate and the windows) */
static const char form_inorm_add_pool_relu[] =
    "6N flops each way; fwd io, bwd grads + F(|x| + |y| + |mean| + |rstd| + |argmax| + |gamma|)";
static void cost_inorm_add_pool_relu(const mcl_op_args *a, int bwd, mcl_op_cost *c)
{
    cost_instance_norm(a, bwd, c);
    c->flops += nel(a->in[0]);
    if (bwd) c->bytes += F * (nel(a->out[0]) + nel(a->out[3]));
}

/* conv_inorm_pool_relu x [B,C,H,W], w [O,C,k,k], its convolution's output c [B,O,Ho,Wo]
 * (never stored): the conv2d pass (2|c|C·k·k) and inorm_pool_relu's 5|c| forward; backward the
 * convolution again, inorm_pool_relu's 5|c| and one conv2d pass per gradient of x, w. Bytes:
 * what the op reads and writes, no |c| (the point of the op) */
static const char form_conv_inorm_pool_relu[] =
    "fwd 2|c|C·k·k + 5|c| flops (c: the convolution's output, not stored), io; bwd (1 + gx + gw)·2|c|C·k·k + "
    "5|c|, grads + F(|x| + |w| + |y| + |mean| + |rstd| + |argmax| + |gamma|)";
static void cost_conv_inorm_pool_relu(const mcl_op_args *a, int bwd, mcl_op_cost *c)
{
    const mcl_tensor *x = a->in[0], *w = a->in[1];
    const double k = (double)w->shape[2], pd = (double)a->p.i[1];
    const double Ho = (double)x->shape[2] + 2 * pd - k + 1, Wo = (double)x->shape[3] + 2 * pd - k + 1;
    const double nc = (double)x->shape[0] * (double)w->shape[0] * Ho * Wo;
    const double pass = 2 * nc * (double)x->shape[1] * k * k;
    io_or_grads(a, bwd,
                nel(x) + nel(w) + nel(a->out[0]) + nel(a->out[1]) + nel(a->out[2]) + nel(a->out[3]) +
                    nel(a->in[3]),
                c);
    c->flops = 5 * nc + (bwd ? pass * (1 + (a->gin[0] != NULL) + (a->gin[1] != NULL)) : pass);
}

/* srwm x [B,H,L,D], n = 3D + 4 columns of the fast weights; per sequence, head and step: the
 * read x·W (2Dn), the retrieval with q and k (2·2Dn), the rank-1 update (2Dn): fwd 8Dn;
 * backward the gradients of the three products and of the update plus the reversal of the
 * update: 18Dn (approximate). Backward reads the final states and everything saved */
static const char form_srwm[] = "fwd 8BHLDn flops (n = 3D + 4), io; bwd 18BHLDn, grads + F·Σ|out[1..11]|";
static void cost_srwm(const mcl_op_args *a, int bwd, mcl_op_cost *c)
{
    const double D = (double)a->in[0]->shape[3], n = 3 * D + 4;
    double saved = 0;
    for (int k = 1; k < 12; k++) saved += nel(a->out[k]);
    io_or_grads(a, bwd, saved, c);
    c->flops = (bwd ? 18 : 8) * nel(a->in[0]) * n;
}

/* attn_kv q [S,Hq,Dk], v [S,Hk,Dv], the ring [C,..] with u = i0 rows in use: V = S·u + the
 * chunk's pairs (S(S+1)/2, or S(S-1)/2 strictly causal, i2 = 2) visible (query, key) pairs per
 * query head; fwd 2Hq(Dk + Dv)V (score, value), bwd 2Hq(3Dk + 2Dv)V (recomputed score, dP,
 * dq, dk, dv); softmax's exps not counted. Bytes: the ring's rows in use only */
static const char form_attn_kv[] =
    "fwd 2Hq(Dk+Dv)V flops, F(q+k+v + ring rows in use + o + lse); bwd 2Hq(3Dk+2Dv)V, grads + the same reads";
static void cost_attn_kv(const mcl_op_args *a, int bwd, mcl_op_cost *c)
{
    const double S = (double)a->in[0]->shape[0], Hq = (double)a->in[0]->shape[1];
    const double Dk = (double)a->in[0]->shape[2], Dv = (double)a->in[2]->shape[2];
    const double C = (double)a->in[3]->shape[0];
    double u = (double)a->p.i[0];
    u = u < 0 ? 0 : u > C ? C : u;
    const double V = S * u + (a->p.i[2] == 2 ? S * (S - 1) / 2 : S * (S + 1) / 2);
    const double ring = C > 0 ? (nel(a->in[3]) + nel(a->in[4])) * u / C : 0; /* the rows in use */
    const double reads = nel(a->in[0]) + nel(a->in[1]) + nel(a->in[2]) + ring + nel(a->out[0]) + nel(a->out[1]);
    c->flops = 2 * Hq * (bwd ? 3 * Dk + 2 * Dv : Dk + Dv) * V;
    c->bytes = F * (bwd ? grads(a) + reads : reads);
}

/* rel_attn qc [B,S,H,D], k [B,T,H,D], v [B,T,H,Dv], M = T − S: query i sees keys j <= M + i
 * (and M + i − j <= W for a window W = i0 > 0): V = B·H·Σ_i keys(i); fwd 2(2D + Dv)V (content
 * and position scores, values), bwd 2(6D + 2Dv)V; backward reads the five inputs, o and lse */
static const char form_rel_attn[] = "fwd 2(2D+Dv)V flops, io; bwd 2(6D+2Dv)V, grads + F(Σ|in| + |o| + |lse|)";
static void cost_rel_attn(const mcl_op_args *a, int bwd, mcl_op_cost *c)
{
    const int64_t S = a->in[0]->shape[1], T = a->in[2]->shape[1], M = T - S, W = a->p.i[0];
    const double BH = (double)a->in[0]->shape[0] * (double)a->in[0]->shape[2];
    const double D = (double)a->in[0]->shape[3], Dv = (double)a->in[3]->shape[3];
    double keys = 0;
    for (int64_t i = 0; i < S; i++) keys += (double)((W > 0 && M + i > W ? W : M + i) + 1);
    const double V = BH * keys;
    io_or_grads(a, bwd, ins(a) + outs(a), c);
    c->flops = 2 * (bwd ? 6 * D + 2 * Dv : 2 * D + Dv) * V;
}

/* The smn writes: m entries through g_phi (2 → H → H → 1): 2H² + 6H flops each (the biases and
 * LeakyReLUs not counted), backward 3× that (recomputed forward, backpropagation). */
static double gphi_flops(const mcl_op_args *a)
{
    const double H = (double)a->in[3]->shape[0];
    return (2 * H * H + 6 * H) * nel(a->in[1]);
}

static double phi_size(const mcl_op_args *a)
{
    double n = 0;
    for (int k = 3; k < 9; k++) n += nel(a->in[k]);
    return n;
}

/* smn_write M0 [n], idx [m], zs [m,2], phi: fwd io (in place, out[0] = M0: F(3m + |phi| + m),
 * the copy skipped); bwd grads + F(3m + |phi|) (idx, zs, phi read) */
static const char form_smn_write[] =
    "fwd (2H²+6H)m flops, io (in place: F(4m + |phi|)); bwd 3(2H²+6H)m, grads + F(3m + |phi|)";
static void cost_smn_write(const mcl_op_args *a, int bwd, mcl_op_cost *c)
{
    const double m = nel(a->in[1]);
    const int in_place = !bwd && a->out[0] && a->out[0]->buf == a->in[0]->buf && a->out[0]->offset == a->in[0]->offset;
    io_or_grads(a, bwd, 3 * m + phi_size(a), c);
    if (in_place) c->bytes = F * (4 * m + phi_size(a));
    c->flops = (bwd ? 3 : 1) * gphi_flops(a);
}

/* smn_write_eff (in place): idx, zs, phi and W[idx] read, M[idx] and E[idx] written */
static const char form_smn_write_eff[] = "(2H²+6H)m flops; F(6m + |phi|)";
static void cost_smn_write_eff(const mcl_op_args *a, int bwd, mcl_op_cost *c)
{
    (void)bwd;
    c->flops = gphi_flops(a);
    c->bytes = F * (6 * nel(a->in[1]) + phi_size(a));
}

/* smn_avg_write (in place): I read and written, G read (n each), then smn_write_eff's entries
 * with zs written */
static const char form_smn_avg_write[] = "(2H²+6H)m flops; F(3n + 6m + |phi|)";
static void cost_smn_avg_write(const mcl_op_args *a, int bwd, mcl_op_cost *c)
{
    cost_smn_write_eff(a, bwd, c);
    c->bytes += F * 3 * nel(a->in[0]);
}

/* smn_write_add: out = W + smn_write(M0): fwd W, M0 (not with i0 = 1), idx, zs, phi read, out
 * written; bwd grads + F(3m + |phi|) */
static const char form_smn_write_add[] =
    "fwd (2H²+6H)m flops, F(|W| + |M0| unless i0 + 3m + |phi| + |out|); bwd 3(2H²+6H)m, grads + F(3m + |phi|)";
static void cost_smn_write_add(const mcl_op_args *a, int bwd, mcl_op_cost *c)
{
    const double m = nel(a->in[1]), n = nel(a->in[0]);
    io_or_grads(a, bwd, 3 * m + phi_size(a), c);
    if (!bwd && a->p.i[0]) c->bytes -= F * n;
    c->flops = (bwd ? 3 : 1) * gphi_flops(a);
}

/* ---- the table, generated from ops.def ---- */

typedef struct cost_rule {
    void (*fn)(const mcl_op_args *a, int bwd, mcl_op_cost *c);
    const char *formula;
} cost_rule;

static const cost_rule rules[MCL_OP_COUNT] = {
#define MCL_OP(ID, name, n_in, n_out, n_diff_out, family, overwrites, has_bwd) \
    [MCL_OP_##ID] = {cost_##name, form_##name},
#include "ops.def"
#undef MCL_OP
};

void mcl_op_cost_of(const mcl_op_args *a, int backward, mcl_op_cost *c)
{
    c->flops = c->bytes = 0;
    if (!a || (unsigned)a->op >= MCL_OP_COUNT || !rules[a->op].fn) return;
    rules[a->op].fn(a, backward != 0, c);
}

const char *mcl_op_cost_formula(mcl_op op)
{
    return (unsigned)op < MCL_OP_COUNT ? rules[op].formula : NULL;
}

/* ---- the tally ---- */

double mcl_bound_of(const mcl_bound_tally *t, const mcl_op_cost *c, int *compute)
{
    const double tc = t->gflops > 0 ? c->flops / (t->gflops * 1e9) : 0;
    const double tm = t->gbs > 0 ? c->bytes / (t->gbs * 1e9) : 0;
    if (compute) *compute = tc > tm;
    return tc > tm ? tc : tm;
}

void mcl_bound_tally_add(mcl_bound_tally *t, const mcl_op_args *a, int backward)
{
    if (!t || !a || (unsigned)a->op >= MCL_OP_COUNT) return;
    mcl_op_cost c;
    mcl_op_cost_of(a, backward, &c);
    int compute;
    const double b = mcl_bound_of(t, &c, &compute);
    const int d = backward != 0;
    t->flops += c.flops;
    t->bytes += c.bytes;
    t->bound_s += b;
    if (compute) t->compute_s += b;
    t->calls++;
    t->op_bound_s[a->op][d] += b;
    t->op_flops[a->op][d] += c.flops;
    t->op_bytes[a->op][d] += c.bytes;
    t->op_calls[a->op][d]++;
}

void mcl_ctx_bound_begin(mcl_ctx *ctx, mcl_bound_tally *t)
{
    if (ctx) ctx->bound = t;
}

void mcl_ctx_bound_end(mcl_ctx *ctx) { mcl_ctx_bound_begin(ctx, NULL); }
