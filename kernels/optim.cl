/* optim.cl — optimizer updates, in place: sgd_step, adam_step, clip_scale, dyn_step.
 * Same float expressions, in the same evaluation order, as src/ref/optim.c (see the equations
 * there); with FP_CONTRACT off every operation is rounded separately, as in the reference
 * (built with -ffp-contract=off), so the updates are bit-identical to it wherever the
 * device's division and sqrt are correctly rounded (PoCL on the CPU, most GPUs).
 *
 * Index layout: 1-D launch, work-item i updates element i of the flat tensors (ids >= n
 * return at once). Elements are independent: no ordering questions.
 */
#pragma OPENCL FP_CONTRACT OFF

/* SGD with momentum and L2 weight decay (lr, mu = momentum, wd = weight decay):
 *   g     = grad + wd * param
 *   mom   = mu * mom + g                (only when has_mom; else mom is not touched)
 *   param = param - lr * mom            (param - lr * g without momentum state) */
__kernel void sgd_step(__global float *param, long param_off, __global const float *grad,
                       long grad_off, __global float *mom, long mom_off, long n, float lr,
                       float mu, float wd, long has_mom)
{
    const long i = get_global_id(0);
    if (i >= n) return;
    const float p = param[param_off + i];
    const float decay = wd * p;
    const float g = grad[grad_off + i] + decay;
    float step;
    if (has_mom) {
        const float keep = mu * mom[mom_off + i];
        const float m = keep + g;
        mom[mom_off + i] = m;
        step = lr * m;
    } else {
        step = lr * g;
    }
    param[param_off + i] = p - step;
}

/* Adam (decoupled = 0, L2 weight decay in the gradient) or AdamW (decoupled = 1); RMSProp is
 * Adam with b1 = 0 and c1 = c2 = 1 (no bias correction), chosen by the host. The host
 * computes, once per call and exactly as the reference:
 *   c1 = (float)(1 / (1 - b1^t)), c2 = (float)(1 / (1 - b2^t))   (in double, on the host)
 *   omb1 = 1 - b1, omb2 = 1 - b2, lrwd = lr * wd, l2 = decoupled ? 0 : wd   (float)
 * Per element:
 *   AdamW: p = param - lrwd * param;  g = grad
 *   Adam:  p = param;                 g = grad + l2 * param
 *   m = b1 * m + omb1 * g;  v = b2 * v + omb2 * (g * g)
 *   param = p - (lr * (m * c1)) / (sqrt(v * c2) + eps) */
__kernel void adam_step(__global float *param, long param_off, __global const float *grad,
                        long grad_off, __global float *m_state, long m_off,
                        __global float *v_state, long v_off, long n, float lr, float b1,
                        float b2, float eps, float omb1, float omb2, float lrwd, float l2,
                        float c1, float c2, long decoupled)
{
    const long i = get_global_id(0);
    if (i >= n) return;
    float p = param[param_off + i];
    float g;
    if (decoupled) {
        const float decay = lrwd * p;
        p = p - decay;
        g = grad[grad_off + i];
    } else {
        const float decay = l2 * p;
        g = grad[grad_off + i] + decay;
    }
    const float m1 = b1 * m_state[m_off + i];
    const float m2 = omb1 * g;
    const float m = m1 + m2;
    const float gg = g * g;
    const float v1 = b2 * v_state[v_off + i];
    const float v2 = omb2 * gg;
    const float v = v1 + v2;
    m_state[m_off + i] = m;
    v_state[v_off + i] = v;
    const float mhat = m * c1;
    const float vhat = v * c2;
    const float num = lr * mhat;
    const float den = sqrt(vhat) + eps;
    param[param_off + i] = p - num / den;
}

/* Clipping by a global norm (sq = sum of squares of all gradients clipped together):
 *   s = max_norm / (sqrt(sq) + 1e-6);  grad = grad * s  only if s < 1
 * (a NaN sq gives a NaN s, which is not < 1: the gradients are left as they are) */
__kernel void clip_scale(__global float *grad, long grad_off, __global const float *sq,
                         long sq_off, long n, float max_norm)
{
    const long i = get_global_id(0);
    if (i >= n) return;
    const float root = sqrt(sq[sq_off]) + 1e-6f;
    const float s = max_norm / root;
    if (!(s < 1.0f)) return;
    grad[grad_off + i] = grad[grad_off + i] * s;
}

/* Dynamic evaluation's step (lr, decay >= 0):
 *   a = lr * grad;  param = (param - a) + decay * (w0 - param)   (decay > 0; else param - a) */
__kernel void dyn_step(__global float *param, long param_off, __global const float *grad,
                       long grad_off, __global const float *w0, long w0_off, long n, float lr,
                       float decay)
{
    const long i = get_global_id(0);
    if (i >= n) return;
    const float p = param[param_off + i];
    const float b = p - lr * grad[grad_off + i];
    param[param_off + i] = decay > 0.0f ? b + decay * (w0[w0_off + i] - p) : b;
}
