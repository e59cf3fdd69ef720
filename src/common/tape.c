/* tape.c — eager reverse-mode autograd.
 *
 * Forward: every differentiable op call whose inputs need a gradient appends a node.
 * Backward from a scalar loss L: gtmp(L) = 1, then for each node from the newest down to a
 * mark, if any of its differentiable outputs has a gradient, the backend's backward of that
 * op accumulates d L/d input into the inputs' gtmp (chain rule, summed over every use of a
 * tensor, so branching needs nothing special). See tape.h for how results leave the walk.
 */
#include <stdlib.h>

#include "ops.h"
#include "tape.h"

void mcl_no_grad_begin(mcl_ctx *ctx)
{
    if (ctx) ctx->no_grad++;
}
void mcl_no_grad_end(mcl_ctx *ctx)
{
    if (ctx && ctx->no_grad > 0) ctx->no_grad--;
}
int mcl_grad_enabled(const mcl_ctx *ctx) { return ctx && ctx->no_grad == 0; }

void mcl_tensor_requires_grad(mcl_tensor *t, int on)
{
    if (!t) return;
    if (on)
        t->flags |= MCL_TF_REQUIRES_GRAD | MCL_TF_NEEDS_GRAD;
    else
        t->flags &= ~(unsigned)(MCL_TF_REQUIRES_GRAD | MCL_TF_NEEDS_GRAD);
}

size_t mcl_tape_mark(const mcl_ctx *ctx) { return ctx ? ctx->n_nodes : 0; }
size_t mcl_tape_size(const mcl_ctx *ctx) { return ctx ? ctx->n_nodes : 0; }

static void node_free(mcl_node *n)
{
    const mcl_op_info *info = &mcl_op_table[n->args.op];
    for (int k = 0; k < info->n_in; k++) mcl_tensor_free(n->args.in[k]);
    for (int k = 0; k < info->n_out; k++) {
        mcl_tensor *t = n->args.out[k];
        if (t && t->node == n) {
            /* A result that outlives its tape (kept by the caller) becomes a constant. */
            t->node = NULL;
            if (!(t->flags & MCL_TF_REQUIRES_GRAD)) t->flags &= ~(unsigned)MCL_TF_NEEDS_GRAD;
        }
        mcl_tensor_free(t);
    }
    free(n);
}

mcl_status mcl_tape_record(mcl_ctx *ctx, const mcl_op_args *args)
{
    if (ctx->n_nodes == ctx->cap_nodes) {
        size_t cap = ctx->cap_nodes ? 2 * ctx->cap_nodes : 64;
        mcl_node **p = realloc(ctx->nodes, cap * sizeof *p);
        if (!p) return mcl_ctx_set_error(ctx, MCL_ERR_OOM, "out of memory (tape)");
        ctx->nodes = p;
        ctx->cap_nodes = cap;
    }
    mcl_node *n = calloc(1, sizeof *n);
    if (!n) return mcl_ctx_set_error(ctx, MCL_ERR_OOM, "out of memory (tape node)");
    n->args = *args;
    n->index = ctx->n_nodes;
    const mcl_op_info *info = &mcl_op_table[args->op];
    for (int k = 0; k < info->n_in; k++) mcl_tensor_keep(n->args.in[k]);
    for (int k = 0; k < info->n_out; k++) {
        mcl_tensor_keep(n->args.out[k]);
        n->args.out[k]->node = n;
    }
    for (int k = 0; k < MCL_MAX_OUT; k++) n->args.gout[k] = NULL;
    for (int k = 0; k < MCL_MAX_IN; k++) n->args.gin[k] = NULL;
    ctx->nodes[ctx->n_nodes++] = n;
    return MCL_OK;
}

void mcl_tape_clear(mcl_ctx *ctx)
{
    for (size_t i = ctx->n_nodes; i-- > 0;) node_free(ctx->nodes[i]);
    ctx->n_nodes = 0;
}

mcl_status mcl_accumulate(mcl_ctx *ctx, mcl_tensor *dst, mcl_tensor *src)
{
    mcl_op_args a = {0};
    a.op = MCL_OP_ADD;
    a.in[0] = dst;
    a.in[1] = src;
    a.out[0] = dst; /* elementwise: out may alias an input */
    const uint64_t seq = mcl_ctx_error_seq(ctx);
    mcl_status s = ctx->be->ops[MCL_OP_ADD].fwd(ctx->be, &a);
    if (s != MCL_OK)
        return mcl_ctx_set_error_since(ctx, seq, s, "backward: gradient accumulation failed");
    return MCL_OK;
}

/* ---- one backward walk ---- */

typedef struct walk {
    mcl_tensor **touched; /* tensors whose gtmp was created during the walk (one ref each) */
    size_t n, cap;
} walk;

static mcl_status ensure_gtmp(mcl_ctx *ctx, walk *w, mcl_tensor *t)
{
    if (t->gtmp) return MCL_OK;
    if (w->n == w->cap) {
        size_t cap = w->cap ? 2 * w->cap : 64;
        mcl_tensor **p = realloc(w->touched, cap * sizeof *p);
        if (!p) return mcl_ctx_set_error(ctx, MCL_ERR_OOM, "backward: out of memory");
        w->touched = p;
        w->cap = cap;
    }
    t->gtmp = mcl_tensor_alloc(ctx, t->ndim, t->shape, 0);
    if (!t->gtmp) return mcl_ctx_status(ctx);
    w->touched[w->n++] = mcl_tensor_keep(t);
    return MCL_OK;
}

static void walk_end(walk *w)
{
    for (size_t i = 0; i < w->n; i++) {
        mcl_tensor_free(w->touched[i]->gtmp);
        w->touched[i]->gtmp = NULL;
        mcl_tensor_free(w->touched[i]);
    }
    free(w->touched);
    w->touched = NULL;
    w->n = w->cap = 0;
}

static mcl_status check_loss(mcl_ctx *ctx, mcl_tensor *loss, const char *what)
{
    if (!ctx) return MCL_ERR_NULL;
    if (!loss) return mcl_ctx_set_error(ctx, MCL_ERR_NULL, "%s: loss is NULL", what);
    if (loss->ctx != ctx)
        return mcl_ctx_set_error(ctx, MCL_ERR_INVALID, "%s: loss belongs to another context", what);
    if (mcl_tensor_numel(loss) != 1) {
        char sb[64];
        return mcl_ctx_set_error(ctx, MCL_ERR_SHAPE, "%s: loss must be a scalar, got %s", what,
                                 mcl_shape_str(loss, sb, sizeof sb));
    }
    if (!(loss->flags & MCL_TF_NEEDS_GRAD) || (!loss->node && !(loss->flags & MCL_TF_REQUIRES_GRAD)))
        return mcl_ctx_set_error(ctx, MCL_ERR_STATE,
                                 "%s: the loss does not depend on any tensor that requires grad "
                                 "(or the tape was cleared by mcl_ctx_reset)", what);
    return MCL_OK;
}

/* Walk nodes [mark, n_nodes) in reverse from d loss = 1. */
static mcl_status walk_back(mcl_ctx *ctx, walk *w, mcl_tensor *loss, size_t mark)
{
    mcl_status s = ensure_gtmp(ctx, w, loss);
    if (s != MCL_OK) return s;
    if ((s = mcl_tensor_fill(loss->gtmp, 1.0f)) != MCL_OK) return s;
    for (size_t i = ctx->n_nodes; i-- > mark;) {
        mcl_node *n = ctx->nodes[i];
        const mcl_op_info *info = &mcl_op_table[n->args.op];
        int reached = 0;
        for (int k = 0; k < info->n_diff_out; k++)
            if (n->args.out[k]->gtmp) reached = 1;
        if (!reached) continue;
        mcl_op_args a = n->args;
        for (int k = 0; k < info->n_diff_out; k++) {
            if ((s = ensure_gtmp(ctx, w, a.out[k])) != MCL_OK) return s;
            a.gout[k] = a.out[k]->gtmp;
        }
        for (int k = 0; k < info->n_in; k++) {
            a.gin[k] = NULL;
            if (a.in[k]->flags & MCL_TF_NEEDS_GRAD) {
                if ((s = ensure_gtmp(ctx, w, a.in[k])) != MCL_OK) return s;
                a.gin[k] = a.in[k]->gtmp;
            }
        }
        const uint64_t seq = mcl_ctx_error_seq(ctx);
        ctx->be->stats.op_calls++;
        mcl_op_forget_written(&a, 1);
        s = ctx->be->ops[a.op].bwd(ctx->be, &a);
        if (s == MCL_OK && ctx->be->post_op) s = ctx->be->post_op(ctx->be, &a, 1);
        if (s == MCL_OK && ctx->profile) s = mcl_profile_tick(ctx->profile, ctx->be, a.op, 1);
        if (s != MCL_OK)
            return mcl_ctx_set_error_since(ctx, seq, s, "backward of %s (tape node %zu) failed",
                                           info->name, n->index);
    }
    return MCL_OK;
}

mcl_status mcl_backward(mcl_ctx *ctx, mcl_tensor *loss)
{
    mcl_status s = check_loss(ctx, loss, "backward");
    if (s != MCL_OK) return s;
    walk w = {0};
    s = walk_back(ctx, &w, loss, 0);
    /* Leaves that require grad: grad += gtmp. */
    for (size_t i = 0; s == MCL_OK && i < w.n; i++) {
        mcl_tensor *t = w.touched[i];
        if (!(t->flags & MCL_TF_REQUIRES_GRAD)) continue;
        if (!t->grad) {
            t->grad = t->gtmp; /* hand over */
            t->gtmp = NULL;
        } else {
            s = mcl_accumulate(ctx, t->grad, t->gtmp);
        }
    }
    walk_end(&w);
    return s;
}

mcl_status mcl_grad_partial(mcl_ctx *ctx, mcl_tensor *loss, size_t mark, int n,
                            mcl_tensor *const *wrt, mcl_tensor **grads)
{
    if (!ctx) return MCL_ERR_NULL;
    if (n < 0 || (n > 0 && (!wrt || !grads)))
        return mcl_ctx_set_error(ctx, MCL_ERR_NULL, "grad_partial: wrt/grads missing");
    for (int k = 0; k < n; k++) grads[k] = NULL;
    if (mark > ctx->n_nodes)
        return mcl_ctx_set_error(ctx, MCL_ERR_INVALID, "grad_partial: mark %zu beyond the tape (%zu)",
                                 mark, ctx->n_nodes);
    for (int k = 0; k < n; k++) {
        if (!wrt[k]) return mcl_ctx_set_error(ctx, MCL_ERR_NULL, "grad_partial: wrt[%d] is NULL", k);
        if (wrt[k]->ctx != ctx)
            return mcl_ctx_set_error(ctx, MCL_ERR_INVALID,
                                     "grad_partial: wrt[%d] belongs to another context", k);
    }
    mcl_status s = check_loss(ctx, loss, "grad_partial");
    if (s != MCL_OK) return s;
    walk w = {0};
    s = walk_back(ctx, &w, loss, mark);
    for (int k = 0; s == MCL_OK && k < n; k++) {
        mcl_tensor *t = wrt[k];
        mcl_tensor *g = mcl_tensor_alloc(ctx, t->ndim, t->shape, 0);
        if (!g) {
            s = mcl_ctx_status(ctx);
            break;
        }
        if (t->gtmp) s = mcl_tensor_copy_into(g, t->gtmp);
        grads[k] = g;
    }
    walk_end(&w);
    if (s != MCL_OK)
        for (int k = 0; k < n; k++) {
            mcl_tensor_free(grads[k]);
            grads[k] = NULL;
        }
    return s;
}
