/* params.c — parameter registry. */
#include <stdlib.h>
#include <string.h>

#include "params.h"
#include "tape.h"

struct mcl_params {
    mcl_ctx *ctx;
    mcl_tensor **t;
    int n, cap;
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
    for (int i = 0; p && i < p->n; i++) mcl_tensor_zero_grad(p->t[i]);
}
