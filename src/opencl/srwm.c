/* srwm.c — OpenCL host glue of the self-referential weight matrix (doc/acl-model.md §1).
 * Kernels: kernels/srwm.cl; equations, saved values and the exact backward: src/ref/srwm.c.
 *
 *   in[0] x [B,H,L,D];  in[1..4] the initial state W_y, W_q, W_k [B,H,D,D], w_b [B,H,D,4]
 *   out[0] y [B,H,L,D];  out[1..4] the final state          (the differentiable outputs)
 *   out[5] q, out[6] k [B,H,L,D];  out[7] beta [B,H,L,4];  out[8..10] Δ_y, Δ_q, Δ_k [B,H,L,D];
 *   out[11] Δ_b [B,H,L,4]                                    (saved for the backward)
 *
 * ns sequences (b, h) per work-group (ns = 64 / W when that fits: small heads would leave a
 * GPU's wavefront mostly idle), the time loop inside the kernel, the four matrices of each in
 * __local memory (the backward also keeps their gradient there). Items per sequence W =
 * min(D, CL_KERNEL_WORK_GROUP_SIZE of the kernel); items loop over the columns / rows
 * beyond it, so any D runs whose __local state fits CL_DEVICE_LOCAL_MEM_SIZE. A larger D is
 * refused with MCL_ERR_UNSUPPORTED and a message naming D, the bytes needed, the device's
 * limit and the largest D that fits. Backward ACCUMULATES into the non-NULL gin[k].
 */
#include "ocl.h"

/* __local floats of the kernels (keep in step with the layouts in kernels/srwm.cl):
 * forward: 3 D x (D+1) matrices + w_b (D x 5) + 8 vectors of D + 4 logits;
 * backward: that state twice (weights, gradient) + 15 vectors of D + 8. In bytes:
 *   forward   4 (3D^2 + 16D + 4)  = 12D^2 +  64D + 16   (D = 49, 61, 71 at 32, 48, 64 KiB)
 *   backward  4 (6D^2 + 31D + 8)  = 24D^2 + 124D + 32   (D = 34, 42, 49 at 32, 48, 64 KiB)
 * (doc/opencl-backend.md's table; tests/test-opencl checks these largest D). */
static size_t local_floats(int bwd, int64_t D)
{
    const size_t d = (size_t)D, state = 3 * d * (d + 1) + 5 * d;
    return bwd ? 2 * state + 15 * d + 8 : state + 8 * d + 4;
}

size_t mcl_ocl_srwm_local_bytes(int bwd, int64_t D) { return local_floats(bwd, D) * sizeof(float); }

/* "srwm forward (kernel srwm_fwd, x [2,2,13,8])" */
static const char *what(char *buf, size_t len, int bwd, const char *kname, const mcl_tensor *x)
{
    return mcl_ocl_what_op(buf, len, "srwm", bwd ? "backward" : "forward", kname, "x", x);
}

/* The __local bytes and work-group size of a launch, or an error when the state of head size
 * D does not fit the device's __local memory. */
static mcl_status plan(mcl_backend *be, int bwd, const mcl_tensor *x, size_t wg_max,
                       size_t *bytes, size_t *wg)
{
    const mcl_ocl *o = mcl_ocl_of(be);
    const int64_t D = x->shape[3];
    *bytes = mcl_ocl_srwm_local_bytes(bwd, D);
    if (*bytes > o->local_mem) {
        int64_t dmax = 0;
        while (mcl_ocl_srwm_local_bytes(bwd, dmax + 1) <= o->local_mem) dmax++;
        char sb[64];
        return mcl_ctx_set_error(
            be->ctx, MCL_ERR_UNSUPPORTED,
            "OpenCL: srwm %s (x %s): head size D=%lld needs %zu bytes of __local memory (%s), "
            "more than the %zu bytes (CL_DEVICE_LOCAL_MEM_SIZE) of %s; the largest D that fits "
            "is %lld (use the reference backend, or smaller heads)",
            bwd ? "backward" : "forward", mcl_shape_str(x, sb, sizeof sb), (long long)D, *bytes,
            bwd ? "the four weight matrices and their gradient" : "the four weight matrices",
            o->local_mem, o->device_name, (long long)dmax);
    }
    *wg = wg_max < (size_t)D ? wg_max : (size_t)D;
    if (*wg == 0) *wg = 1;
    return MCL_OK;
}

/* Sequences per work-group: as many as make a group of about SRWM_GROUP items, within the
 * kernel's work-group limit, the device's __local memory (bytes per sequence) and S. With a
 * head size D >= SRWM_GROUP this is 1 (one sequence per group, as before). */
#define SRWM_GROUP 64
static size_t seqs_per_group(const mcl_ocl *o, size_t wg, size_t wg_max, size_t bytes, int64_t S)
{
    size_t ns = SRWM_GROUP / wg;
    if (ns < 1) ns = 1;
    while (ns > 1 && (ns * wg > wg_max || ns * bytes > o->local_mem || (int64_t)ns > S)) ns--;
    return ns;
}

/* srwm forward, doc/acl-model.md §1: per sequence, t = 0..L-1 (y_t read before the update):
 *   y_t = x·W_y, q = softmax(x·W_q), k = softmax(x·W_k), β = sigmoid(x·w_b);
 *   Δ_i = (q - k)·M_i;  M_i += k ⊗ (β_i Δ_i)   for M_i = W_y, W_q, W_k, w_b */
mcl_status mcl_ocl_srwm_fwd(mcl_backend *be, const mcl_op_args *a)
{
    const mcl_tensor *x = a->in[0];
    const int64_t S = x->shape[0] * x->shape[1], L = x->shape[2], D = x->shape[3];
    char wb[160];
    size_t wg_max, bytes, wg;
    cl_kernel k = mcl_ocl_kernel(be, "srwm_fwd", &wg_max);
    if (!k) return mcl_ocl_recorded(be);
    mcl_status s = plan(be, 0, x, wg_max, &bytes, &wg);
    if (s != MCL_OK) return s;
    int i = 0;
    for (int j = 0; j < 5; j++) i = mcl_ocl_arg_tensor(be, k, i, a->in[j]);
    for (int j = 0; j < 12; j++) i = mcl_ocl_arg_tensor(be, k, i, a->out[j]);
    const size_t ns = seqs_per_group(mcl_ocl_of(be), wg, wg_max, bytes, S);
    i = mcl_ocl_arg_long(be, k, i, L);
    i = mcl_ocl_arg_long(be, k, i, D);
    i = mcl_ocl_arg_long(be, k, i, (int64_t)wg);
    i = mcl_ocl_arg_long(be, k, i, S);
    i = mcl_ocl_arg_long(be, k, i, (int64_t)local_floats(0, D));
    /* ns x (12D^2 + 64D + 16) bytes (local_floats per sequence) */
    i = mcl_ocl_arg_local(be, k, i, ns * bytes);
    return mcl_ocl_launch_groups(be, k, i, (size_t)((S + (int64_t)ns - 1) / (int64_t)ns), ns * wg,
                                 what(wb, sizeof wb, 0, "srwm_fwd", x));
}

/* srwm backward: the exact memory-light BPTT of doc/acl-model.md §1 (src/ref/srwm.c, bwd_seq):
 * G = gout[1..4], W = the final state; for t = L-1..0 recover W by subtracting the update,
 * then g_x, the gradient flowing into G, ...; at the end gin[1..4] += G. */
mcl_status mcl_ocl_srwm_bwd(mcl_backend *be, const mcl_op_args *a)
{
    const mcl_tensor *x = a->in[0];
    const int64_t S = x->shape[0] * x->shape[1], L = x->shape[2], D = x->shape[3];
    long want = 0;
    for (int j = 0; j < 5; j++)
        if (a->gin[j]) want |= 1L << j;
    if (!want) return MCL_OK;
    char wb[160];
    size_t wg_max, bytes, wg;
    cl_kernel k = mcl_ocl_kernel(be, "srwm_bwd", &wg_max);
    if (!k) return mcl_ocl_recorded(be);
    mcl_status s = plan(be, 1, x, wg_max, &bytes, &wg);
    if (s != MCL_OK) return s;
    int i = mcl_ocl_arg_tensor(be, k, 0, x);
    for (int j = 5; j < 12; j++) i = mcl_ocl_arg_tensor(be, k, i, a->out[j]); /* q .. Δ_b */
    for (int j = 1; j < 5; j++) i = mcl_ocl_arg_tensor(be, k, i, a->out[j]);  /* final state */
    for (int j = 0; j < 5; j++) i = mcl_ocl_arg_tensor(be, k, i, a->gout[j]);
    /* a NULL gradient is passed as x, with its want bit 0 (never written) */
    for (int j = 0; j < 5; j++) i = mcl_ocl_arg_tensor(be, k, i, a->gin[j] ? a->gin[j] : x);
    const size_t ns = seqs_per_group(mcl_ocl_of(be), wg, wg_max, bytes, S);
    i = mcl_ocl_arg_long(be, k, i, L);
    i = mcl_ocl_arg_long(be, k, i, D);
    i = mcl_ocl_arg_long(be, k, i, want);
    i = mcl_ocl_arg_long(be, k, i, (int64_t)wg);
    i = mcl_ocl_arg_long(be, k, i, S);
    i = mcl_ocl_arg_long(be, k, i, (int64_t)local_floats(1, D));
    /* ns x (24D^2 + 124D + 32) bytes (local_floats per sequence) */
    i = mcl_ocl_arg_local(be, k, i, ns * bytes);
    return mcl_ocl_launch_groups(be, k, i, (size_t)((S + (int64_t)ns - 1) / (int64_t)ns), ns * wg,
                                 what(wb, sizeof wb, 1, "srwm_bwd", x));
}
