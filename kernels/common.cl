/* common.cl — shared device helpers: float-float (hi, lo) accumulators and work-group
 * reductions, used by the reduction-style kernel files (reduce, softmax, norm, loss, and the
 * TwoSum of elementwise). Placed right after rng.cl in the program, before every user.
 *
 * Accuracy without fp64: the reference sums in double; here a sum is an unevaluated pair
 * acc = (hi, lo) of floats (hi the plain float sum, lo the exact rounding errors collected
 * with Knuth's TwoSum; products add their exact error fma(a, b, -a*b)), about as accurate as a
 * double sum rounded to float. Inf/NaN propagate through hi as in a plain float sum; the value
 * of a pair is hi + lo when hi is finite, else hi.
 *
 * Work-group reductions combine one value per item by a tree in local memory with the fixed
 * shape W/2, W/4, ..., 1 (W = local size, a power of two chosen by the host), so results are
 * deterministic. Each returns the total to every item and ends with a barrier, so the local
 * buffer may be reused right away. Every item of the group must call them.
 *
 * No FP contraction anywhere (the program prefix sets it too): every rounding is explicit.
 */
#pragma OPENCL FP_CONTRACT OFF

/* ---- error-free transformations and (hi, lo) accumulators ----------------------------- */

/* (s, e) with s = fl(a + b) and s + e == a + b exactly (Knuth's TwoSum, no branches). */
float2 mcl_two_sum(float a, float b)
{
    float s = a + b;
    float bv = s - a;
    float av = s - bv;
    return (float2)(s, (a - av) + (b - bv));
}

/* (p, e) with p = fl(a * b) and p + e == a * b exactly (e = 0 if p is not finite). */
float2 mcl_two_prod(float a, float b)
{
    float p = a * b;
    return (float2)(p, isfinite(p) ? fma(a, b, -p) : 0.0f);
}

/* acc + x */
float2 mcl_acc_add(float2 acc, float x)
{
    float2 t = mcl_two_sum(acc.x, x);
    return (float2)(t.x, acc.y + t.y);
}

/* acc + a * b, with the exact error of the product (unguarded: a NaN error is harmless, hi
 * is already not finite then) */
float2 mcl_acc_add_prod(float2 acc, float a, float b)
{
    float p = a * b;
    float pe = fma(a, b, -p);
    float2 t = mcl_two_sum(acc.x, p);
    return (float2)(t.x, acc.y + (t.y + pe));
}

/* acc + (x.hi + x.lo) for an exact pair x (a product from mcl_two_prod, or (v, 0)) */
float2 mcl_acc_add_pair(float2 acc, float2 x)
{
    float2 t = mcl_two_sum(acc.x, x.x);
    return (float2)(t.x, acc.y + (t.y + x.y));
}

/* a + b for two accumulator pairs (a float x is the pair (x, 0)) */
float2 mcl_acc_merge(float2 a, float2 b)
{
    float2 t = mcl_two_sum(a.x, b.x);
    return (float2)(t.x, (a.y + b.y) + t.y);
}

/* The value of an accumulator: hi + lo, or hi when it is not finite. */
float mcl_acc_value(float2 acc)
{
    return isfinite(acc.x) ? acc.x + acc.y : acc.x;
}

/* (hi + lo) / d as a pair (q, q_lo): q is the quotient rounded about once (hi / d corrected
 * by the remainder (hi - q*d + lo) / d, the fma giving hi - q*d exactly), q_lo the rest.
 * A non-finite hi gives (hi / d, 0). */
float2 mcl_acc_div(float2 acc, float d)
{
    if (!isfinite(acc.x)) return (float2)(acc.x / d, 0.0f);
    float q = acc.x / d;
    float c = (fma(-q, d, acc.x) + acc.y) / d; /* remainder / d */
    float qc = q + c;
    return (float2)(qc, c - (qc - q));
}

/* e / (hi + lo) rounded about once: q = e / hi corrected by the remainder e - q*(hi + lo). */
float mcl_div_acc(float e, float2 s)
{
    if (!isfinite(s.x)) return e / s.x;
    float q = e / s.x;
    float r = fma(-q, s.x, e) - q * s.y;
    return q + r / s.x;
}

/* log(hi + lo) ~ log(hi) + lo / hi (log(hi) when hi is not finite). */
float mcl_acc_log(float2 s)
{
    return isfinite(s.x) ? log(s.x) + s.y / s.x : log(s.x);
}

/* ---- work-group reductions ------------------------------------------------------------ */

/* Group sum of one accumulator pair per item. */
float2 mcl_group_sum(float2 acc, __local float2 *buf)
{
    const uint l = get_local_id(0);
    buf[l] = acc;
    for (uint s = get_local_size(0) / 2; s > 0; s >>= 1) {
        barrier(CLK_LOCAL_MEM_FENCE);
        if (l < s) buf[l] = mcl_acc_merge(buf[l], buf[l + s]);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    float2 total = buf[0];
    barrier(CLK_LOCAL_MEM_FENCE);
    return total;
}

/* Group sums of two accumulator pairs per item at once (.xy and .zw). */
float4 mcl_group_sum2(float4 acc, __local float4 *buf)
{
    const uint l = get_local_id(0);
    buf[l] = acc;
    for (uint s = get_local_size(0) / 2; s > 0; s >>= 1) {
        barrier(CLK_LOCAL_MEM_FENCE);
        if (l < s) {
            const float4 a = buf[l], b = buf[l + s];
            buf[l] = (float4)(mcl_acc_merge(a.xy, b.xy), mcl_acc_merge(a.zw, b.zw));
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    float4 total = buf[0];
    barrier(CLK_LOCAL_MEM_FENCE);
    return total;
}

/* Group sum of one count per item (exact). */
long mcl_group_count(long n, __local long *buf)
{
    const uint l = get_local_id(0);
    buf[l] = n;
    for (uint s = get_local_size(0) / 2; s > 0; s >>= 1) {
        barrier(CLK_LOCAL_MEM_FENCE);
        if (l < s) buf[l] += buf[l + s];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    n = buf[0];
    barrier(CLK_LOCAL_MEM_FENCE);
    return n;
}

/* Row maximum m = max_j x[j], j < N, for every item (item l reads x[l], x[l+W], ...; -inf for
 * an all -inf row). A NaN is skipped by the comparisons, as in the reference's row maximum,
 * and still makes the row NaN through a later sum of exponentials. buf holds W pairs (only
 * .x is used), so it can be the same buffer as a later mcl_group_sum's. */
float mcl_group_max(__global const float *x, long N, __local float2 *buf)
{
    const uint l = get_local_id(0), W = get_local_size(0);
    float m = -INFINITY;
    for (long j = l; j < N; j += W) {
        const float v = x[j];
        m = v > m ? v : m;
    }
    buf[l].x = m;
    for (uint s = W / 2; s > 0; s >>= 1) {
        barrier(CLK_LOCAL_MEM_FENCE);
        if (l < s && buf[l + s].x > buf[l].x) buf[l].x = buf[l + s].x;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    m = buf[0].x;
    barrier(CLK_LOCAL_MEM_FENCE);
    return m;
}
