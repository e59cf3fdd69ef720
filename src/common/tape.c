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
    if (s == MCL_OK && ctx->bound) mcl_bound_tally_add(ctx->bound, &a, 0);
    if (s != MCL_OK)
        return mcl_ctx_set_error_since(ctx, seq, s, "backward: gradient accumulation failed");
    return MCL_OK;
}

/* ---- one backward walk ----
 *
 * A walk is planned before it runs: a first reverse pass over the nodes finds every tensor
 * that will receive a gradient (the same reachability as the walk itself), then the
 * gradients are created at once, so that a walk costs few allocations and few zero fills:
 *   WALK_ARENA  most gradients are views into a few large zero-filled chunks (one zero fill
 *               per chunk instead of one per tensor); they end with the walk. On a backend
 *               whose new buffers cost no fill until used (be->own_grad_buffers: the
 *               reference backend's lazy zeroing) each is a buffer of its own instead, so
 *               that the op that first writes it whole can store rather than add into a
 *               filled chunk (the ACL step's 55 MB chunk was filled every step);
 *   WALK_OWN    a leaf's gradient that is handed over to t->grad (it outlives the walk),
 *               and any tensor too large for a chunk: a buffer of its own, as before;
 *   WALK_GRAD   a leaf that already has t->grad (full walks only): the walk accumulates
 *               straight into it, no separate buffer and no final addition;
 *   WALK_SLOT   a packed parameter without t->grad (full walks only): its gradient is made
 *               in its slot of the registry's gradient arena (zeros until then, params.c) and
 *               handed over as t->grad, so an optimizer sees one flat gradient;
 *   WALK_ALIAS  an input whose gradient the op's backward would just add gout into (reshape,
 *               copy, add, sub's, bias_add's, add_dropout's and bias_add_dropout's first
 *               input: pass_through) and that nothing else has given a gradient yet: its
 *               gradient IS the output's gradient (same elements in the same order), a
 *               view of it, and the backward's copy for it is skipped (the whole call when
 *               no other input needs a gradient). The output's gradient is complete by
 *               then (its consumers come later on the tape), and nothing reads it
 *               afterwards, except a partial walk's requested tensors: those keep their own;
 *   WALK_INTO   the other way round, when the input already has a gradient of its own: the
 *               output's gradient of a reshape or an axis-0 slice is a view into its input's
 *               (a slice: at its rows), so its consumers' backwards accumulate straight into
 *               the input's gradient and the reshape's or slice's backward is skipped. Only
 *               where every bit stays: a slice whose input only slices of axis 0 with
 *               disjoint rows read (its rows of the input's gradient start at zero and get
 *               exactly the output's terms, in their order); a reshape whose output only the
 *               next node reads as its first input, a repeat_batch, permute or srwm (their
 *               backwards add one finished term per element of that input: x += (0 + s)
 *               and x += s are the same float). */

enum { WALK_ARENA, WALK_OWN, WALK_GRAD, WALK_SLOT, WALK_ALIAS, WALK_INTO };

/* Elements per chunk of the walk's arena; a gradient larger than a quarter of it gets its own
 * buffer (so chunks stay below what any device allocates in one piece). */
#define WALK_CHUNK ((int64_t)1 << 24)

typedef struct walk {
    mcl_tensor **touched; /* tensors given a gtmp during the walk (one ref each)  */
    unsigned char *kind;  /* per touched tensor: WALK_*                            */
    mcl_tensor **src;     /* per touched tensor: WALK_ALIAS's reshape output,
                             WALK_INTO's input                                    */
    int64_t *off;         /* per touched tensor: WALK_INTO's element offset in src's */
    size_t n, cap;
    unsigned char *skip;  /* per node from the mark: k + 1 = input k's gradient is a view */
    size_t mark;
} walk;

/* The mark a planned tensor's gtmp holds until the plan is carried out (never dereferenced). */
static mcl_tensor planned;

static mcl_status plan_add(mcl_ctx *ctx, walk *w, mcl_tensor *t, int kind, mcl_tensor *src)
{
    if (w->n == w->cap) {
        size_t cap = w->cap ? 2 * w->cap : 64;
        mcl_tensor **p = realloc(w->touched, cap * sizeof *p);
        if (p) w->touched = p;
        unsigned char *k = p ? realloc(w->kind, cap) : NULL;
        if (k) w->kind = k;
        mcl_tensor **sp = k ? realloc(w->src, cap * sizeof *sp) : NULL;
        if (sp) w->src = sp;
        int64_t *op = sp ? realloc(w->off, cap * sizeof *op) : NULL;
        if (!op) return mcl_ctx_set_error(ctx, MCL_ERR_OOM, "backward: out of memory");
        w->off = op;
        w->cap = cap;
    }
    t->gtmp = &planned;
    w->touched[w->n] = mcl_tensor_keep(t);
    w->kind[w->n] = (unsigned char)kind;
    w->src[w->n] = src;
    w->off[w->n] = 0;
    w->n++;
    return MCL_OK;
}

/* A tensor about to receive a gradient: its kind in a full (full = 1) or partial walk. */
static int kind_of(const mcl_tensor *t, int full)
{
    if (full && (t->flags & MCL_TF_REQUIRES_GRAD))
        return t->grad ? WALK_GRAD : t->gslot ? WALK_SLOT : WALK_OWN;
    return mcl_tensor_numel(t) > WALK_CHUNK / 4 ? WALK_OWN : WALK_ARENA;
}

static int is_wanted(mcl_tensor *const *wrt, int n_wrt, const mcl_tensor *t)
{
    for (int k = 0; k < n_wrt; k++)
        if (wrt[k] == t) return 1;
    return 0;
}

/* A partial walk wants d loss / d wrt only: a gradient is needed only on tensors that depend on
 * some wrt tensor (the wrt tensors and, node by node from the mark, the outputs of a node with
 * such an input). on = 1 marks them (MCL_TF_ON_PATH), on = 0 clears the marks. The gradients
 * of the wrt tensors receive the same terms in the same order either way. */
static void mark_path(mcl_ctx *ctx, size_t mark, mcl_tensor *const *wrt, int n_wrt, int on)
{
    for (int k = 0; k < n_wrt; k++) {
        if (on) wrt[k]->flags |= MCL_TF_ON_PATH;
        else wrt[k]->flags &= ~MCL_TF_ON_PATH;
    }
    for (size_t i = mark; i < ctx->n_nodes; i++) {
        mcl_node *n = ctx->nodes[i];
        const mcl_op_info *info = &mcl_op_table[n->args.op];
        int dep = !on;
        for (int k = 0; k < info->n_in && !dep; k++) dep = (n->args.in[k]->flags & MCL_TF_ON_PATH) != 0;
        for (int k = 0; k < info->n_out && dep; k++) {
            if (on) n->args.out[k]->flags |= MCL_TF_ON_PATH;
            else n->args.out[k]->flags &= ~MCL_TF_ON_PATH;
        }
    }
}

/* Whether input t of a node gets a gradient: it needs one, and in a partial walk it depends
 * on a wrt tensor (mark_path). */
static int wants_grad(const mcl_tensor *t, int full)
{
    return (t->flags & MCL_TF_NEEDS_GRAD) && (full || (t->flags & MCL_TF_ON_PATH));
}

/* The input of node n whose gradient may be a view of the output's (WALK_ALIAS), or -1: an
 * op whose backward adds gout unchanged into that input (reshape, copy: input 0; add: 0, else
 * 1; sub, bias_add, add_dropout, bias_add_dropout: 0), the input not given a gradient yet,
 * not a leaf, not also another input of the node, and the output not requested by a partial walk. */
static int pass_through(const mcl_node *n, mcl_tensor *const *wrt, int n_wrt, int full)
{
    const mcl_op op = n->args.op;
    int last;
    if (op == MCL_OP_RESHAPE || op == MCL_OP_COPY || op == MCL_OP_SUB || op == MCL_OP_BIAS_ADD ||
        op == MCL_OP_ADD_DROPOUT || op == MCL_OP_BIAS_ADD_DROPOUT)
        last = 0;
    else if (op == MCL_OP_ADD)
        last = 1;
    else
        return -1;
    if (is_wanted(wrt, n_wrt, n->args.out[0])) return -1;
    const int n_in = mcl_op_table[op].n_in;
    for (int k = 0; k <= last; k++) {
        const mcl_tensor *x = n->args.in[k];
        int shared = 0;
        for (int j = 0; j < n_in; j++) shared |= j != k && n->args.in[j] == x;
        if (wants_grad(x, full) && !x->gtmp && !(x->flags & MCL_TF_REQUIRES_GRAD) && !shared)
            return k;
    }
    return -1;
}

/* The plan's entry of a planned tensor t (t->gtmp == &planned), or -1. */
static long plan_index(const walk *w, const mcl_tensor *t)
{
    for (size_t i = w->n; i-- > 0;)
        if (w->touched[i] == t) return (long)i;
    return -1;
}

/* Whether node i (a reshape or an axis-0 slice, its output planned as WALK_ARENA) may have
 * its output's gradient as a view into its input's (WALK_INTO; the conditions above). */
static int into_ok(mcl_ctx *ctx, const walk *w, size_t i, mcl_tensor *const *wrt, int n_wrt,
                   int full)
{
    const mcl_node *n = ctx->nodes[i];
    const mcl_op op = n->args.op;
    const mcl_tensor *x = n->args.in[0], *y = n->args.out[0];
    if (op != MCL_OP_RESHAPE && !(op == MCL_OP_SLICE && n->args.p.i[0] == 0)) return 0;
    if (!wants_grad(x, full) || (x->flags & MCL_TF_REQUIRES_GRAD) ||
        mcl_tensor_numel(x) > WALK_CHUNK / 4 || is_wanted(wrt, n_wrt, x) ||
        is_wanted(wrt, n_wrt, y))
        return 0;
    const long iy = plan_index(w, y);
    if (iy < 0 || w->kind[iy] != WALK_ARENA) return 0;
    for (size_t k = 0; k < w->n; k++) /* no chains: y is no WALK_INTO's input */
        if (w->kind[k] == WALK_INTO && w->src[k] == y) return 0;
    if (x->gtmp) {
        const long ix = plan_index(w, x);
        if (ix < 0 || w->kind[ix] != WALK_ARENA) return 0;
    } else if (op == MCL_OP_RESHAPE) {
        return 0; /* pass_through's case */
    }
    if (op == MCL_OP_RESHAPE) {
        if (i + 1 >= ctx->n_nodes) return 0;
        const mcl_node *c = ctx->nodes[i + 1];
        const mcl_op cop = c->args.op;
        if ((cop != MCL_OP_REPEAT_BATCH && cop != MCL_OP_PERMUTE && cop != MCL_OP_SRWM) ||
            c->args.in[0] != y)
            return 0;
        for (int k = 1; k < mcl_op_table[cop].n_in; k++)
            if (c->args.in[k] == y) return 0;
        for (size_t j = i + 2; j < ctx->n_nodes; j++) {
            const mcl_node *o = ctx->nodes[j];
            for (int k = 0; k < mcl_op_table[o->args.op].n_in; k++)
                if (o->args.in[k] == y) return 0;
        }
        return 1;
    }
    const int64_t a0 = n->args.p.i[1], a1 = a0 + n->args.p.i[2];
    for (size_t j = w->mark; j < ctx->n_nodes; j++) {
        const mcl_node *o = ctx->nodes[j];
        if (j == i) continue;
        for (int k = 0; k < mcl_op_table[o->args.op].n_in; k++) {
            if (o->args.in[k] != x) continue;
            if (o->args.op != MCL_OP_SLICE || o->args.p.i[0] != 0) return 0;
            const int64_t b0 = o->args.p.i[1], b1 = b0 + o->args.p.i[2];
            if (b0 < a1 && a0 < b1) return 0; /* overlapping rows */
        }
    }
    return 1;
}

/* Pass 1: which tensors get a gradient, of which kind; which nodes are handed over. */
static mcl_status walk_plan(mcl_ctx *ctx, walk *w, mcl_tensor *loss, int full,
                            mcl_tensor *const *wrt, int n_wrt)
{
    /* the loss's gradient is filled with 1: never the accumulated t->grad itself */
    int lk = kind_of(loss, full);
    mcl_status s = plan_add(ctx, w, loss, lk == WALK_GRAD ? WALK_OWN : lk, NULL);
    for (size_t i = ctx->n_nodes; s == MCL_OK && i-- > w->mark;) {
        mcl_node *n = ctx->nodes[i];
        const mcl_op_info *info = &mcl_op_table[n->args.op];
        int reached = 0;
        for (int k = 0; k < info->n_diff_out; k++)
            if (n->args.out[k]->gtmp) reached = 1;
        if (!reached) continue;
        for (int k = 0; k < info->n_diff_out && s == MCL_OK; k++)
            if (!n->args.out[k]->gtmp) s = plan_add(ctx, w, n->args.out[k], WALK_ARENA, NULL);
        const int pk = s == MCL_OK ? pass_through(n, wrt, n_wrt, full) : -1;
        if (pk >= 0) {
            s = plan_add(ctx, w, n->args.in[pk], WALK_ALIAS, n->args.out[0]);
            w->skip[i - w->mark] = (unsigned char)(pk + 1);
        } else if (s == MCL_OK && into_ok(ctx, w, i, wrt, n_wrt, full)) {
            mcl_tensor *x = n->args.in[0];
            if (!x->gtmp) s = plan_add(ctx, w, x, WALK_ARENA, NULL);
            const long iy = plan_index(w, n->args.out[0]);
            w->kind[iy] = WALK_INTO;
            w->src[iy] = x;
            w->off[iy] = n->args.op == MCL_OP_SLICE
                             ? n->args.p.i[1] * (mcl_tensor_numel(x) / x->shape[0]) : 0;
            w->skip[i - w->mark] = 1;
        }
        for (int k = 0; k < info->n_in && s == MCL_OK; k++) {
            mcl_tensor *t = n->args.in[k];
            if (wants_grad(t, full) && !t->gtmp) s = plan_add(ctx, w, t, kind_of(t, full), NULL);
        }
    }
    return s;
}

/* Pass 2: create the planned gradients (zeros; WALK_GRAD keeps what t->grad holds). */
static mcl_status walk_alloc(mcl_ctx *ctx, walk *w)
{
    mcl_tensor *chunk = NULL;
    int64_t used = 0;
    mcl_status s = MCL_OK;
    for (size_t i = 0; i < w->n && s == MCL_OK; i++) {
        mcl_tensor *t = w->touched[i];
        const int64_t n = mcl_tensor_numel(t);
        mcl_tensor *g = NULL;
        switch (w->kind[i]) {
        case WALK_ARENA:
            if (ctx->be->own_grad_buffers) { /* no fill to share: a buffer of its own */
                g = mcl_tensor_alloc(ctx, t->ndim, t->shape, 0);
                break;
            }
            if (!chunk || used + n > mcl_tensor_numel(chunk)) {
                /* the chunk: what the gradients still to come need, at most WALK_CHUNK */
                int64_t want = 0;
                for (size_t j = i; j < w->n && want < WALK_CHUNK; j++)
                    if (w->kind[j] == WALK_ARENA) want += mcl_tensor_numel(w->touched[j]);
                if (want > WALK_CHUNK) want = WALK_CHUNK;
                if (want < n) want = n;
                mcl_tensor_free(chunk);
                chunk = mcl_tensor_alloc(ctx, 1, &want, 0);
                used = 0;
                if (!chunk) break;
            }
            g = mcl_tensor_view(chunk, used, t->ndim, t->shape);
            used += n;
            break;
        case WALK_OWN:
            g = mcl_tensor_alloc(ctx, t->ndim, t->shape, 0);
            break;
        case WALK_GRAD:
            g = mcl_tensor_keep(t->grad);
            break;
        case WALK_SLOT:
            g = mcl_tensor_keep(t->gslot);
            break;
        case WALK_ALIAS: /* its source was planned before it, so it exists already */
            g = mcl_tensor_view(w->src[i]->gtmp, 0, t->ndim, t->shape);
            break;
        case WALK_INTO: /* its input may be planned after it: below */
            continue;
        }
        if (!g) {
            s = mcl_ctx_status(ctx) != MCL_OK ? mcl_ctx_status(ctx)
                                              : mcl_ctx_set_error(ctx, MCL_ERR_OOM, "backward: out of memory");
            break;
        }
        t->gtmp = g;
    }
    mcl_tensor_free(chunk); /* the views keep its buffer */
    /* WALK_INTO: views into their inputs' gradients (an input is WALK_ARENA, never INTO) */
    for (size_t i = 0; i < w->n && s == MCL_OK; i++) {
        if (w->kind[i] != WALK_INTO) continue;
        mcl_tensor *t = w->touched[i];
        mcl_tensor *g = mcl_tensor_view(w->src[i]->gtmp, w->off[i], t->ndim, t->shape);
        if (!g)
            s = mcl_ctx_status(ctx) != MCL_OK ? mcl_ctx_status(ctx)
                                              : mcl_ctx_set_error(ctx, MCL_ERR_OOM, "backward: out of memory");
        else
            t->gtmp = g;
    }
    return s;
}

static void walk_end(walk *w)
{
    for (size_t i = 0; i < w->n; i++) {
        mcl_tensor *t = w->touched[i];
        if (t->gtmp != &planned) mcl_tensor_free(t->gtmp);
        t->gtmp = NULL;
        mcl_tensor_free(t);
    }
    free(w->touched);
    free(w->kind);
    free(w->src);
    free(w->off);
    free(w->skip);
    w->touched = w->src = NULL;
    w->off = NULL;
    w->kind = w->skip = NULL;
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

/* Walk nodes [mark, n_nodes) in reverse from d loss = 1 (full = 1: a full walk, whose leaves
 * accumulate into t->grad; else a partial one for wrt[0..n_wrt), which computes only the
 * gradients on a path from the loss to a wrt tensor: mark_path). */
static mcl_status walk_back(mcl_ctx *ctx, walk *w, mcl_tensor *loss, size_t mark, int full,
                            mcl_tensor *const *wrt, int n_wrt)
{
    w->mark = mark;
    w->skip = calloc(ctx->n_nodes - mark + 1, 1);
    if (!w->skip) return mcl_ctx_set_error(ctx, MCL_ERR_OOM, "backward: out of memory");
    if (!full) mark_path(ctx, mark, wrt, n_wrt, 1);
    mcl_status s = walk_plan(ctx, w, loss, full, wrt, n_wrt);
    if (!full) mark_path(ctx, mark, wrt, n_wrt, 0); /* the plan is all that reads the marks */
    if (s == MCL_OK) s = walk_alloc(ctx, w);
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
        for (int k = 0; k < info->n_diff_out; k++) a.gout[k] = a.out[k]->gtmp;
        int any = 0;
        for (int k = 0; k < info->n_in; k++) {
            a.gin[k] = (a.in[k]->flags & MCL_TF_NEEDS_GRAD) && w->skip[i - mark] != k + 1 ? a.in[k]->gtmp : NULL;
            any |= a.gin[k] != NULL;
        }
        if (!any) continue; /* every gradient was handed over as a view */
        const uint64_t seq = mcl_ctx_error_seq(ctx);
        ctx->be->stats.op_calls++;
        mcl_op_forget_written(&a, 1);
        if (ctx->profile) mcl_profile_begin(ctx->profile, ctx->be);
        s = ctx->be->ops[a.op].bwd(ctx->be, &a);
        if (s == MCL_OK && ctx->be->post_op) s = ctx->be->post_op(ctx->be, &a, 1);
        if (s == MCL_OK && ctx->profile) s = mcl_profile_tick(ctx->profile, ctx->be, a.op, 1);
        if (s == MCL_OK && ctx->bound) mcl_bound_tally_add(ctx->bound, &a, 1);
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
    s = walk_back(ctx, &w, loss, 0, 1, NULL, 0);
    /* Leaves that require grad: grad += gtmp (WALK_GRAD: accumulated into grad already).
     * A packed parameter's slot is handed over even after a failure (it may hold part of a
     * gradient; as .grad it is zeroed with the others, as a free slot it would have to be 0). */
    for (size_t i = 0; i < w.n; i++) {
        mcl_tensor *t = w.touched[i];
        if (w.kind[i] == WALK_SLOT && !t->grad && t->gtmp == t->gslot) {
            t->grad = t->gtmp;
            t->gtmp = NULL;
        }
        if (s != MCL_OK || !(t->flags & MCL_TF_REQUIRES_GRAD) || w.kind[i] == WALK_GRAD ||
            !t->gtmp)
            continue;
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
    s = walk_back(ctx, &w, loss, mark, 0, wrt, n);
    for (int k = 0; s == MCL_OK && k < n; k++) {
        mcl_tensor *t = wrt[k];
        int repeated = 0; /* the same tensor asked for twice: each gets a copy */
        for (int j = 0; j < n; j++) repeated |= j != k && wrt[j] == t;
        if (t->gtmp && t->gtmp != &planned && !repeated) {
            /* handed over: the walk's gradient (a view into its arena, or a buffer of its
             * own; nothing writes it after the walk) becomes the caller's tensor, no copy */
            grads[k] = t->gtmp;
            t->gtmp = NULL;
            continue;
        }
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
