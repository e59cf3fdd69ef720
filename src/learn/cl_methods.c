/* cl_methods.c — Fisher, quadratic penalties, SI, LwF and the replay buffer of the classic
 * continual-learning baselines. See cl_methods.h. */
#include "cl_methods.h"
#include "ops.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ======================================================================= flat views */

mcl_status mcl_cl_params_read(const mcl_params *p, int grad, float *out)
{
    int64_t off = 0;
    for (int i = 0; i < mcl_params_count(p); i++) {
        mcl_tensor *t = mcl_params_get(p, i);
        const int64_t n = mcl_tensor_numel(t);
        mcl_tensor *src = grad ? mcl_tensor_grad(t) : t;
        if (!src) {
            memset(out + off, 0, (size_t)n * sizeof *out);
        } else {
            mcl_status st = mcl_tensor_read(src, out + off, n);
            if (st != MCL_OK) return st;
        }
        off += n;
    }
    return MCL_OK;
}

mcl_status mcl_cl_params_write(mcl_params *p, int grad, const float *in)
{
    int64_t off = 0;
    for (int i = 0; i < mcl_params_count(p); i++) {
        mcl_tensor *t = mcl_params_get(p, i);
        const int64_t n = mcl_tensor_numel(t);
        mcl_tensor *dst = grad ? mcl_tensor_grad(t) : t;
        if (dst) {
            mcl_status st = mcl_tensor_write(dst, in + off, n);
            if (st != MCL_OK) return st;
        }
        off += n;
    }
    return MCL_OK;
}

/* ======================================================================= EWC */

/* F_i = 1/n Σ_k (∂ log p(y_k|x_k)/∂θ_i)²  — one backward per example (true labels). */
mcl_status mcl_cl_fisher(mcl_ctx *ctx, mcl_params *params, mcl_cl_example_loss loss_k, void *arg,
                         int64_t n, float *F)
{
    const int64_t P = mcl_params_numel(params);
    if (n < 1 || P < 1)
        return mcl_ctx_set_error(ctx, MCL_ERR_INVALID, "fisher: %lld examples, %lld parameters",
                                 (long long)n, (long long)P);
    float *g = malloc((size_t)P * sizeof *g);
    double *acc = calloc((size_t)P, sizeof *acc);
    if (!g || !acc) {
        free(g);
        free(acc);
        return mcl_ctx_set_error(ctx, MCL_ERR_OOM, "fisher: out of memory");
    }
    mcl_status st = MCL_OK;
    for (int64_t k = 0; k < n && st == MCL_OK; k++) {
        mcl_params_zero_grad(params);
        mcl_tensor *loss = loss_k(arg, k);
        if (!loss) st = mcl_ctx_status(ctx) != MCL_OK ? mcl_ctx_status(ctx)
                                                      : mcl_ctx_set_error(ctx, MCL_ERR_BACKEND,
                                                                          "fisher: example loss failed");
        if (st == MCL_OK) st = mcl_backward(ctx, loss);
        if (st == MCL_OK) st = mcl_cl_params_read(params, 1, g);
        /* the gradient of −log p is minus the one of log p: the square is the same */
        for (int64_t i = 0; i < P && st == MCL_OK; i++) acc[i] += (double)g[i] * g[i];
        mcl_ctx_reset(ctx);
    }
    mcl_params_zero_grad(params);
    for (int64_t i = 0; i < P && st == MCL_OK; i++) F[i] = (float)(acc[i] / (double)n);
    free(g);
    free(acc);
    return st;
}

/* F ← γ F + F_new */
void mcl_cl_fisher_decay(float *F, const float *F_new, int64_t n, float gamma)
{
    for (int64_t i = 0; i < n; i++) F[i] = gamma * F[i] + F_new[i];
}

/* A += F, B += F θ* */
void mcl_cl_ewc_add_task(double *A, double *B, const float *F, const float *anchor, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        A[i] += (double)F[i];
        B[i] += (double)F[i] * (double)anchor[i];
    }
}

/* grad += λ (A θ − B) */
void mcl_cl_ewc_grad(const double *A, const double *B, const float *theta, int64_t n,
                     double lambda, float *grad)
{
    for (int64_t i = 0; i < n; i++) grad[i] += (float)(lambda * (A[i] * (double)theta[i] - B[i]));
}

/* value = scale Σ w (θ − a)²,  grad += 2 scale w (θ − a) */
double mcl_cl_quad_penalty(const float *theta, const float *anchor, const float *w, int64_t n,
                           double scale, float *grad)
{
    double v = 0.0;
    for (int64_t i = 0; i < n; i++) {
        const double d = (double)theta[i] - (double)anchor[i];
        v += (double)w[i] * d * d;
        if (grad) grad[i] += (float)(2.0 * scale * (double)w[i] * d);
    }
    return scale * v;
}

/* ======================================================================= SI */

mcl_status mcl_cl_si_init(mcl_cl_si *s, int64_t n, float xi, const float *theta0)
{
    memset(s, 0, sizeof *s);
    s->n = n;
    s->xi = xi;
    s->omega = calloc((size_t)n, sizeof *s->omega);
    s->Omega = calloc((size_t)n, sizeof *s->Omega);
    s->start = malloc((size_t)n * sizeof *s->start);
    if (!s->omega || !s->Omega || !s->start) {
        mcl_cl_si_free(s);
        return MCL_ERR_OOM;
    }
    memcpy(s->start, theta0, (size_t)n * sizeof *theta0);
    return MCL_OK;
}

void mcl_cl_si_free(mcl_cl_si *s)
{
    free(s->omega);
    free(s->Omega);
    free(s->start);
    memset(s, 0, sizeof *s);
}

/* ω_i += −g_i (θ_i^after − θ_i^before) */
void mcl_cl_si_step(mcl_cl_si *s, const float *g, const float *before, const float *after)
{
    for (int64_t i = 0; i < s->n; i++) s->omega[i] -= g[i] * (after[i] - before[i]);
}

/* Ω_i += ω_i / (Δ_i² + ξ), Δ = θ^end − θ^start; ω ← 0; θ^start ← θ^end (the new anchor) */
void mcl_cl_si_task_end(mcl_cl_si *s, const float *theta_end)
{
    for (int64_t i = 0; i < s->n; i++) {
        const double d = (double)theta_end[i] - (double)s->start[i];
        s->Omega[i] += (float)((double)s->omega[i] / (d * d + (double)s->xi));
        s->omega[i] = 0.0f;
        s->start[i] = theta_end[i];
    }
}

/* ======================================================================= LwF */

/* A temporary of the context holding host values (a caller-owned tensor copied, then freed). */
static mcl_tensor *host_temp(mcl_ctx *ctx, const float *v, int64_t d0, int64_t d1)
{
    mcl_tensor *t = mcl_tensor_new(ctx, d0, d1, 0, 0);
    if (!t) return NULL;
    mcl_tensor *c = mcl_tensor_write(t, v, d0 * (d1 ? d1 : 1)) == MCL_OK ? mcl_copy(ctx, t) : NULL;
    mcl_tensor_free(t);
    return c;
}

/* λ T²/n Σ_rows Σ_u p_u (log p_u − log q_u),  p = softmax(z_old/T), q = softmax(z/T) */
mcl_tensor *mcl_cl_lwf_loss(mcl_ctx *ctx, mcl_tensor *logits, const float *old, int64_t old_stride,
                            int units, float T, float lambda)
{
    if (!logits) return NULL;
    const int64_t n = mcl_tensor_dim(logits, 0), K = mcl_tensor_dim(logits, 1);
    if (mcl_tensor_ndim(logits) != 2 || units < 1 || units > K || old_stride < units ||
        !(T > 0.0f) || !(lambda >= 0.0f) || !old) {
        mcl_ctx_set_error(ctx, MCL_ERR_INVALID,
                          "lwf: bad arguments (logits %lld-D, %d units of %lld, stride %lld, T %g, "
                          "lambda %g)",
                          (long long)mcl_tensor_ndim(logits), units, (long long)K,
                          (long long)old_stride, (double)T, (double)lambda);
        return NULL;
    }
    float *p = malloc((size_t)(n * units) * sizeof *p);
    if (!p) {
        mcl_ctx_set_error(ctx, MCL_ERR_OOM, "lwf: out of memory");
        return NULL;
    }
    double plogp = 0.0; /* Σ p log p: the constant that makes the cross-entropy a KL */
    for (int64_t r = 0; r < n; r++) {
        const float *z = old + r * old_stride;
        double mx = z[0], s = 0.0;
        for (int u = 1; u < units; u++) mx = z[u] > mx ? z[u] : mx;
        for (int u = 0; u < units; u++) s += exp(((double)z[u] - mx) / T);
        for (int u = 0; u < units; u++) {
            const double lp = ((double)z[u] - mx) / T - log(s);
            p[r * units + u] = (float)exp(lp);
            plogp += exp(lp) * lp;
        }
    }
    const float k = lambda * T * T / (float)n;
    mcl_tensor *z = units < K ? mcl_slice(ctx, logits, 1, 0, units) : logits;
    mcl_tensor *lq = mcl_log_softmax(ctx, mcl_scale(ctx, z, 1.0f / T));
    mcl_tensor *pt = lq ? host_temp(ctx, p, n, units) : NULL;
    const float c = (float)((double)k * plogp);
    mcl_tensor *ct = pt ? host_temp(ctx, &c, 1, 0) : NULL;
    free(p);
    mcl_tensor *ce = ct ? mcl_scale(ctx, mcl_sum(ctx, mcl_mul(ctx, pt, lq)), -k) : NULL;
    return ce ? mcl_add(ctx, ce, ct) : NULL;
}

/* ======================================================================= replay */

mcl_status mcl_cl_replay_init(mcl_cl_replay *b, int cap)
{
    memset(b, 0, sizeof *b);
    if (cap < 1) return MCL_ERR_INVALID;
    b->cap = cap;
    b->img = malloc((size_t)cap * MCL_CL_IMG * sizeof *b->img);
    b->lab = malloc((size_t)cap * sizeof *b->lab);
    if (!b->img || !b->lab) {
        mcl_cl_replay_free(b);
        return MCL_ERR_OOM;
    }
    return MCL_OK;
}

void mcl_cl_replay_free(mcl_cl_replay *b)
{
    free(b->img);
    free(b->lab);
    memset(b, 0, sizeof *b);
}

int mcl_cl_replay_offer(mcl_cl_replay *b, mcl_rng *rng)
{
    const int64_t k = b->seen++;
    if (k < b->cap) return b->n++;
    /* j uniform in 0..k (k < 2^32 - 1 for any buffer we fill) */
    const uint32_t j = mcl_rng_next_below(rng, (uint32_t)(k + 1 > UINT32_MAX ? UINT32_MAX : k + 1));
    return j < (uint32_t)b->cap ? (int)j : -1;
}

void mcl_cl_replay_put(mcl_cl_replay *b, int slot, const float *img, int32_t lab)
{
    memcpy(b->img + (int64_t)slot * MCL_CL_IMG, img, MCL_CL_IMG * sizeof *img);
    b->lab[slot] = lab;
}

mcl_status mcl_cl_replay_sample(const mcl_cl_replay *b, mcl_rng *rng, int m, int *out)
{
    /* partial Fisher–Yates over 0..n-1: the first m positions */
    if (m < 0 || m > b->n) return MCL_ERR_INVALID;
    int stack[256];
    int *perm = b->n <= 256 ? stack : malloc((size_t)b->n * sizeof *perm);
    if (!perm) return MCL_ERR_OOM;
    for (int i = 0; i < b->n; i++) perm[i] = i;
    for (int i = 0; i < m; i++) {
        const int j = i + (int)mcl_rng_next_below(rng, (uint32_t)(b->n - i));
        const int t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
        out[i] = perm[i];
    }
    if (perm != stack) free(perm);
    return MCL_OK;
}
