/* params.c — parameter registry, and its packing (tape.h): the trainable parameters' values
 * back to back in one buffer, their gradients likewise in another, so that an optimizer
 * step or a clipping pass over all of them is one launch on a flat view. */
#include <stdlib.h>
#include <string.h>

#include "params.h"
#include "tape.h"

struct mcl_params {
    mcl_ctx *ctx;
    mcl_tensor **t;
    int n, cap;
    mcl_tensor *arena, *garena; /* packed values and gradients [N] (NULL: not packed)  */
    int64_t *off;               /* per parameter: offset in them, -1 = not packed       */
    int n_packed_of;            /* the registry size when packed                        */
};

mcl_params *mcl_params_create(mcl_ctx *ctx)
{
    if (!ctx) return NULL;
    mcl_params *p = calloc(1, sizeof *p);
    if (!p) {
        mcl_ctx_set_error(ctx, MCL_ERR_OOM, "params_create: out of memory");
        return NULL;
    }
    p->ctx = ctx;
    return p;
}

void mcl_params_free(mcl_params *p)
{
    if (!p) return;
    for (int i = 0; i < p->n; i++) mcl_tensor_free(p->t[i]);
    mcl_tensor_free(p->arena);
    mcl_tensor_free(p->garena);
    free(p->off);
    free(p->t);
    free(p);
}

mcl_tensor *mcl_params_add(mcl_params *p, const char *name, int ndim, const int64_t *shape)
{
    if (!p) return NULL;
    mcl_ctx *ctx = p->ctx;
    if (!name || !name[0] || strlen(name) >= sizeof(((mcl_tensor *)0)->name)) {
        mcl_ctx_set_error(ctx, MCL_ERR_INVALID, "params_add: name '%s' is empty or too long",
                          name ? name : "(null)");
        return NULL;
    }
    if (mcl_params_find(p, name)) {
        mcl_ctx_set_error(ctx, MCL_ERR_INVALID, "params_add: duplicate parameter name '%s'", name);
        return NULL;
    }
    if (p->n == p->cap) {
        int cap = p->cap ? 2 * p->cap : 16;
        mcl_tensor **t = realloc(p->t, (size_t)cap * sizeof *t);
        if (!t) {
            mcl_ctx_set_error(ctx, MCL_ERR_OOM, "params_add: out of memory");
            return NULL;
        }
        p->t = t;
        p->cap = cap;
    }
    mcl_tensor *t = mcl_param_create(ctx, name, ndim, shape);
    if (!t) return NULL;
    p->t[p->n++] = t;
    return t;
}

int mcl_params_count(const mcl_params *p) { return p ? p->n : 0; }

mcl_tensor *mcl_params_get(const mcl_params *p, int i)
{
    return (p && i >= 0 && i < p->n) ? p->t[i] : NULL;
}

mcl_tensor *mcl_params_find(const mcl_params *p, const char *name)
{
    if (!p || !name) return NULL;
    for (int i = 0; i < p->n; i++)
        if (strcmp(p->t[i]->name, name) == 0) return p->t[i];
    return NULL;
}

mcl_status mcl_params_copy_matching(mcl_params *dst, const mcl_params *src, const char *const *skip, int n_skip,
                                    int *copied)
{
    if (copied) *copied = 0;
    if (!dst || !src) return MCL_ERR_NULL;
    for (int i = 0; i < dst->n; i++) {
        mcl_tensor *d = dst->t[i];
        int skipped = 0;
        for (int k = 0; k < n_skip && !skipped; k++) skipped = !strncmp(d->name, skip[k], strlen(skip[k]));
        mcl_tensor *s = skipped ? NULL : mcl_params_find(src, d->name);
        if (!s || !mcl_tensor_same_shape(d, s)) continue;
        mcl_status st = mcl_tensor_copy_into(d, s);
        if (st != MCL_OK) return st;
        if (copied) (*copied)++;
    }
    return MCL_OK;
}

int64_t mcl_params_numel_trainable(const mcl_params *p)
{
    int64_t n = 0;
    for (int i = 0; p && i < p->n; i++)
        if (p->t[i]->flags & MCL_TF_REQUIRES_GRAD) n += mcl_tensor_numel(p->t[i]);
    return n;
}

int64_t mcl_params_numel(const mcl_params *p)
{
    int64_t n = 0;
    for (int i = 0; p && i < p->n; i++) n += mcl_tensor_numel(p->t[i]);
    return n;
}

void mcl_params_zero_grad(mcl_params *p)
{
    if (!p) return;
    const int flat = mcl_params_flat_ready(p);
    /* one fill of the gradient arena (whole: the backends just mark it zero, no kernel) */
    if (flat) mcl_tensor_fill(p->garena, 0.0f);
    for (int i = 0; i < p->n; i++)
        if (!flat || p->off[i] < 0) mcl_tensor_zero_grad(p->t[i]);
}

/* ---- packing (tape.h) ---- */

static int packable(const mcl_tensor *t)
{
    return (t->flags & MCL_TF_REQUIRES_GRAD) && t->buf->refcnt == 1 && !t->gslot &&
           (!t->grad || t->grad->refcnt == 1);
}

mcl_status mcl_params_pack(mcl_params *p)
{
    if (!p) return MCL_ERR_NULL;
    if (p->arena || p->n == 0) return MCL_OK;
    mcl_ctx *ctx = p->ctx;
    int64_t N = 0;
    for (int i = 0; i < p->n; i++)
        if (packable(p->t[i])) N += mcl_tensor_numel(p->t[i]);
    if (N == 0) return MCL_OK;
    p->off = malloc((size_t)p->n * sizeof *p->off);
    if (!p->off) return mcl_ctx_set_error(ctx, MCL_ERR_OOM, "params_pack: out of memory");
    mcl_tensor *arena = mcl_tensor_alloc(ctx, 1, &N, 0), *garena = mcl_tensor_alloc(ctx, 1, &N, 0);
    mcl_status s = arena && garena ? MCL_OK : mcl_ctx_status(ctx);
    int64_t at = 0;
    for (int i = 0; i < p->n && s == MCL_OK; i++) {
        mcl_tensor *t = p->t[i];
        p->off[i] = -1;
        if (!packable(t)) continue;
        mcl_tensor *v = mcl_tensor_view(arena, at, t->ndim, t->shape);
        mcl_tensor *g = v ? mcl_tensor_view(garena, at, t->ndim, t->shape) : NULL;
        s = v && g ? mcl_tensor_move_into(t, v) : mcl_ctx_status(ctx);
        if (s == MCL_OK && t->grad) { /* a gradient already there moves into its slot */
            s = mcl_tensor_copy_into(g, t->grad);
            if (s == MCL_OK) {
                mcl_tensor_free(t->grad);
                t->grad = mcl_tensor_keep(g);
            }
        }
        mcl_tensor_free(v);
        if (s == MCL_OK) {
            t->gslot = g;
            p->off[i] = at;
            at += mcl_tensor_numel(t);
        } else {
            mcl_tensor_free(g);
        }
    }
    /* on a failure part way, the parameters moved so far keep working from the arena (their
     * buffer references hold it); the registry just stays unpacked */
    if (s == MCL_OK) {
        p->arena = arena;
        p->garena = garena;
        p->n_packed_of = p->n;
    } else {
        mcl_tensor_free(arena);
        mcl_tensor_free(garena);
        for (int i = 0; i < p->n; i++) p->off[i] = -1;
    }
    return s;
}

mcl_tensor *mcl_params_arena(const mcl_params *p, int grads)
{
    return p ? (grads ? p->garena : p->arena) : NULL;
}

int64_t mcl_params_offset(const mcl_params *p, int i)
{
    return p && p->arena && i >= 0 && i < p->n_packed_of ? p->off[i] : -1;
}

int mcl_params_flat_ready(const mcl_params *p)
{
    if (!p || !p->arena || p->n != p->n_packed_of) return 0;
    for (int i = 0; i < p->n; i++) {
        const mcl_tensor *t = p->t[i];
        if (t->grad && (p->off[i] < 0 || t->grad != t->gslot)) return 0;
    }
    return 1;
}
