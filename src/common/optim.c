/* optim.c — optimizers over a parameter registry, schedules, global-norm clipping.
 * The arithmetic of each update lives in the backend ops sgd_step / adam_step / clip_scale. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "ops.h"
#include "optim.h"
#include "tape.h"

/* ---- schedules ---- */

mcl_status mcl_schedule_check(const mcl_schedule *s, char *errbuf, size_t len)
{
    const char *msg = NULL;
    if (!s)
        msg = "schedule is NULL";
    else if (!(s->base_lr >= 0.0f) || !isfinite(s->base_lr))
        msg = "base learning rate must be a finite number >= 0";
    else if (s->warmup < 0)
        msg = "warm-up steps must be >= 0";
    else if (s->kind == MCL_SCHED_NOAM && s->warmup < 1)
        msg = "Noam schedule needs warm-up >= 1";
    else if (s->kind == MCL_SCHED_NOAM && !(s->d_model > 0.0f))
        msg = "Noam schedule needs d_model > 0";
    else if (s->kind == MCL_SCHED_COSINE && s->total_steps <= s->warmup)
        msg = "cosine schedule needs total_steps > warm-up";
    else if (s->kind == MCL_SCHED_COSINE && !(s->min_lr >= 0.0f && s->min_lr <= s->base_lr))
        msg = "cosine schedule needs 0 <= min_lr <= base_lr";
    else if (s->kind != MCL_SCHED_CONSTANT && s->kind != MCL_SCHED_NOAM && s->kind != MCL_SCHED_COSINE)
        msg = "unknown schedule kind";
    if (!msg) return MCL_OK;
    if (errbuf && len) snprintf(errbuf, len, "%s", msg);
    return MCL_ERR_INVALID;
}

float mcl_schedule_lr(const mcl_schedule *s, int64_t step)
{
    if (mcl_schedule_check(s, NULL, 0) != MCL_OK || step < 1) return NAN;
    double st = (double)step, w = (double)s->warmup, base = s->base_lr;
    switch (s->kind) {
    case MCL_SCHED_CONSTANT:
        return s->base_lr;
    case MCL_SCHED_NOAM: /* base · d^-0.5 · min(s^-0.5, s · w^-1.5) */
        return (float)(base / sqrt((double)s->d_model) * fmin(1.0 / sqrt(st), st * pow(w, -1.5)));
    case MCL_SCHED_COSINE: {
        if (st <= w) return (float)(base * st / w);
        double prog = (st - w) / ((double)s->total_steps - w);
        if (prog > 1.0) prog = 1.0;
        double lo = s->min_lr;
        return (float)(lo + 0.5 * (base - lo) * (1.0 + cos(3.141592653589793 * prog)));
    }
    }
    return NAN;
}

/* ---- clipping ---- */

mcl_status mcl_clip_grad_norm(mcl_ctx *ctx, mcl_tensor *const *grads, int n, float max_norm,
                              float *norm_out)
{
    if (!ctx) return MCL_ERR_NULL;
    if (!grads && n > 0) return mcl_ctx_set_error(ctx, MCL_ERR_NULL, "clip_grad_norm: grads is NULL");
    if (!(max_norm > 0.0f))
        return mcl_ctx_set_error(ctx, MCL_ERR_INVALID, "clip_grad_norm: max_norm %g must be > 0",
                                 (double)max_norm);
    mcl_status s = MCL_OK;
    mcl_no_grad_begin(ctx);
    mcl_tensor *total = NULL;
    for (int i = 0; i < n && s == MCL_OK; i++) {
        if (!grads[i]) continue;
        mcl_tensor *sq = mcl_sumsq(ctx, grads[i]);
        total = sq && total ? mcl_add(ctx, total, sq) : sq;
        if (!total) s = mcl_ctx_status(ctx);
    }
    if (s == MCL_OK && total) {
        if (norm_out) *norm_out = sqrtf(mcl_tensor_item(total, 0));
        for (int i = 0; i < n && s == MCL_OK; i++) {
            if (!grads[i]) continue;
            mcl_op_args a;
            memset(&a, 0, sizeof a);
            a.op = MCL_OP_CLIP_SCALE;
            a.in[0] = grads[i];
            a.in[1] = total;
            a.p.f[0] = max_norm;
            s = mcl_op_run(ctx, &a);
        }
    } else if (s == MCL_OK && norm_out) {
        *norm_out = 0.0f;
    }
    mcl_no_grad_end(ctx);
    return s;
}

/* ---- optimizers ---- */

struct mcl_optim {
    mcl_ctx *ctx;
    mcl_optim_config cfg;
    mcl_params *params;
    int n;              /* parameters covered (registry size at creation) */
    mcl_tensor **state; /* [n][2]: momentum | (m, v); views into flat[] for packed parameters */
    mcl_tensor *flat[2]; /* the packed parameters' state, back to back as their values (tape.h) */
    unsigned char *had;  /* [n]: a gradient reached parameter i at some step (or state was loaded) */
    int64_t steps;
    float last_lr;
};

mcl_status mcl_optim_create(mcl_ctx *ctx, const mcl_optim_config *cfg, mcl_params *params,
                            mcl_optim **out)
{
    if (out) *out = NULL;
    if (!ctx) return MCL_ERR_NULL;
    if (!cfg || !params || !out) return mcl_ctx_set_error(ctx, MCL_ERR_NULL, "optim_create: NULL argument");
    char eb[128];
    if (mcl_schedule_check(&cfg->sched, eb, sizeof eb) != MCL_OK)
        return mcl_ctx_set_error(ctx, MCL_ERR_INVALID, "optim_create: %s", eb);
    if (cfg->kind != MCL_OPTIM_SGD && cfg->kind != MCL_OPTIM_ADAM && cfg->kind != MCL_OPTIM_ADAMW &&
        cfg->kind != MCL_OPTIM_RMSPROP)
        return mcl_ctx_set_error(ctx, MCL_ERR_INVALID, "optim_create: unknown optimizer %d", (int)cfg->kind);
    if (!(cfg->momentum >= 0.0f && cfg->momentum < 1.0f) || !(cfg->weight_decay >= 0.0f) ||
        !(cfg->clip_norm >= 0.0f))
        return mcl_ctx_set_error(ctx, MCL_ERR_INVALID,
                                 "optim_create: need 0 <= momentum < 1, weight_decay >= 0, clip_norm >= 0");
    mcl_optim *o = calloc(1, sizeof *o);
    if (!o) return mcl_ctx_set_error(ctx, MCL_ERR_OOM, "optim_create: out of memory");
    o->ctx = ctx;
    o->cfg = *cfg;
    if (o->cfg.kind == MCL_OPTIM_RMSPROP) { /* no first moment; the squares' decay alpha */
        o->cfg.beta1 = 0.0f;
        if (o->cfg.beta2 == 0.0f) o->cfg.beta2 = 0.99f;
    } else if (o->cfg.beta1 == 0.0f && o->cfg.beta2 == 0.0f) {
        o->cfg.beta1 = 0.9f;
        o->cfg.beta2 = 0.999f;
    }
    if (o->cfg.eps == 0.0f) o->cfg.eps = 1e-8f;
    if (cfg->kind != MCL_OPTIM_SGD &&
        !(o->cfg.beta1 >= 0 && o->cfg.beta1 < 1 && o->cfg.beta2 >= 0 && o->cfg.beta2 < 1 && o->cfg.eps > 0)) {
        free(o);
        return mcl_ctx_set_error(ctx, MCL_ERR_INVALID, "optim_create: need 0 <= beta < 1 and eps > 0");
    }
    o->params = params;
    o->n = mcl_params_count(params);
    o->state = calloc((size_t)(o->n > 0 ? o->n : 1) * 2, sizeof *o->state);
    o->had = calloc((size_t)(o->n > 0 ? o->n : 1), 1);
    if (!o->state || !o->had) {
        free(o->state);
        free(o->had);
        free(o);
        return mcl_ctx_set_error(ctx, MCL_ERR_OOM, "optim_create: out of memory");
    }
    int slots = cfg->kind == MCL_OPTIM_SGD ? 1 : 2;
    /* pack the registry (one launch per update over all parameters); the state of the packed
     * parameters lives in buffers of the same layout */
    mcl_status ps = mcl_params_pack(params);
    mcl_tensor *arena = ps == MCL_OK ? mcl_params_arena(params, 0) : NULL;
    if (ps != MCL_OK) {
        mcl_optim_free(o);
        return ps;
    }
    for (int k = 0; arena && k < slots; k++) {
        o->flat[k] = mcl_tensor_create(ctx, arena->ndim, arena->shape);
        if (!o->flat[k]) {
            mcl_optim_free(o);
            return mcl_ctx_status(ctx);
        }
    }
    for (int i = 0; i < o->n; i++) {
        mcl_tensor *p = mcl_params_get(params, i);
        const int64_t at = mcl_params_offset(params, i);
        for (int k = 0; k < slots; k++) {
            o->state[2 * i + k] = at >= 0 ? mcl_tensor_view(o->flat[k], at, p->ndim, p->shape)
                                          : mcl_tensor_create(ctx, p->ndim, p->shape);
            if (!o->state[2 * i + k]) {
                mcl_optim_free(o);
                return mcl_ctx_status(ctx);
            }
        }
    }
    *out = o;
    return MCL_OK;
}

void mcl_optim_free(mcl_optim *o)
{
    if (!o) return;
    for (int i = 0; i < 2 * o->n; i++) mcl_tensor_free(o->state[i]);
    mcl_tensor_free(o->flat[0]);
    mcl_tensor_free(o->flat[1]);
    free(o->had);
    free(o->state);
    free(o);
}

mcl_status mcl_optim_step(mcl_optim *o)
{
    if (!o) return MCL_ERR_NULL;
    mcl_ctx *ctx = o->ctx;
    if (mcl_params_count(o->params) != o->n)
        return mcl_ctx_set_error(ctx, MCL_ERR_STATE,
                                 "optim_step: the registry changed after the optimizer was created");
    mcl_status s = MCL_OK;
    /* every gradient in the registry's flat arena: one launch for all parameters (the
     * updates are elementwise, so the same numbers as one launch per parameter). A packed
     * parameter no gradient reached then sees a zero gradient: exactly no change when its
     * state is still zero (never reached, none loaded) and there is no weight decay, as
     * skipping it would give (ACL's running statistics); otherwise the per-parameter loop. */
    int flat = o->flat[0] && mcl_params_flat_ready(o->params);
    for (int i = 0; i < o->n; i++) {
        const mcl_tensor *p = mcl_params_get(o->params, i);
        if (p->grad) o->had[i] = 1;
        else if (mcl_params_offset(o->params, i) >= 0 && (o->had[i] || o->cfg.weight_decay != 0.0f))
            flat = 0;
    }
    mcl_tensor *garena = flat ? mcl_params_arena(o->params, 1) : NULL;
    if (o->cfg.clip_norm > 0.0f) {
        mcl_tensor **g = malloc((size_t)(o->n > 0 ? o->n : 1) * sizeof *g);
        if (!g) return mcl_ctx_set_error(ctx, MCL_ERR_OOM, "optim_step: out of memory");
        for (int i = 0; i < o->n; i++) g[i] = mcl_tensor_grad(mcl_params_get(o->params, i));
        s = flat ? mcl_clip_grad_norm(ctx, &garena, 1, o->cfg.clip_norm, NULL)
                 : mcl_clip_grad_norm(ctx, g, o->n, o->cfg.clip_norm, NULL);
        free(g);
        if (s != MCL_OK) return s;
    }
    int64_t t = o->steps + 1;
    float lr = mcl_schedule_lr(&o->cfg.sched, t);
    mcl_no_grad_begin(ctx);
    for (int i = 0; i < (flat ? 1 : o->n) && s == MCL_OK; i++) {
        mcl_tensor *p = flat ? mcl_params_arena(o->params, 0) : mcl_params_get(o->params, i);
        mcl_tensor *grad = flat ? garena : p->grad;
        if (!grad) continue; /* no gradient reached it: leave it as is */
        mcl_op_args a;
        memset(&a, 0, sizeof a);
        a.in[0] = p;
        a.in[1] = grad;
        a.in[2] = flat ? o->flat[0] : o->state[2 * i];
        if (o->cfg.kind == MCL_OPTIM_SGD) {
            a.op = MCL_OP_SGD_STEP;
            a.p.f[0] = lr;
            a.p.f[1] = o->cfg.momentum;
            a.p.f[2] = o->cfg.weight_decay;
        } else {
            a.op = MCL_OP_ADAM_STEP;
            a.in[3] = flat ? o->flat[1] : o->state[2 * i + 1];
            a.p.i[0] = o->cfg.kind == MCL_OPTIM_ADAMW ? 1 : o->cfg.kind == MCL_OPTIM_RMSPROP ? 2 : 0;
            a.p.i[1] = t;
            a.p.f[0] = lr;
            a.p.f[1] = o->cfg.beta1;
            a.p.f[2] = o->cfg.beta2;
            a.p.f[3] = o->cfg.eps;
            a.p.f[4] = o->cfg.weight_decay;
        }
        s = mcl_op_run(ctx, &a);
    }
    mcl_no_grad_end(ctx);
    if (s == MCL_OK) {
        o->steps = t;
        o->last_lr = lr;
    }
    return s;
}

void mcl_optim_zero_grad(mcl_optim *o)
{
    if (o) mcl_params_zero_grad(o->params);
}
int64_t mcl_optim_steps(const mcl_optim *o) { return o ? o->steps : 0; }
float mcl_optim_last_lr(const mcl_optim *o) { return o ? o->last_lr : 0.0f; }
void mcl_optim_set_steps(mcl_optim *o, int64_t steps)
{
    if (o && steps >= 0) o->steps = steps;
    /* resumed: the loaded state may be nonzero for any parameter */
    for (int i = 0; o && steps > 0 && i < o->n; i++) o->had[i] = 1;
}
mcl_tensor *mcl_optim_state(const mcl_optim *o, int i, int slot)
{
    if (!o || i < 0 || i >= o->n || slot < 0 || slot > 1) return NULL;
    return o->state[2 * i + slot];
}
