/* smn.c — naive Sparse Meta Networks write: the meta-learner g_phi evaluated one entry at a time
 * (src/ref/smn.c runs it on blocks of 16 entries, one per vector lane, and splits the backward's
 * sums over the entries into parts that threads run side by side).
 *
 * g_phi is a coordinate-wise MLP 2 -> H -> H -> 1 with LeakyReLU (negative slope s):
 *   a1 = W1 z + b1,   h1 = lrelu(a1),   a2 = W2 h1 + b2,   h2 = lrelu(a2),   v = W3 h2 + b3
 *   lrelu(a) = a > 0 ? a : s·a,   lrelu'(a) = a > 0 ? 1 : s
 * One exception to naive.h's "no float rounding of its own": a1 and a2 are rounded to float, as
 * the op stores its activations (ops.def). Without it, an activation within a rounding of zero
 * could fall on the other side of lrelu's kink here than in the op, and a gradient would then
 * differ by (1 - s) times a full term — a disagreement about the input, not about the op. */
#include <math.h>

#include "backend.h" /* mcl_grad_preproc_consts */
#include "naive.h"

static double lrelu(double a, double s) { return a > 0.0 ? a : s * a; }
static double lrelu_d(double a, double s) { return a > 0.0 ? 1.0 : s; }

/* g_phi of one entry: v = W3 h2 + b3 for z [2]; act [4H] receives a1, h1, a2, h2 [H] in a row. */
double mcl_naive_smn_phi(const mcl_naive_phi *f, const float *z, double *act)
{
    const int64_t H = f->H;
    double *a1 = act, *h1 = act + H, *a2 = act + 2 * H, *h2 = act + 3 * H;
    for (int64_t k = 0; k < H; k++) {
        a1[k] = (float)((double)f->W1[2 * k] * z[0] + (double)f->W1[2 * k + 1] * z[1] + f->b1[k]);
        h1[k] = lrelu(a1[k], f->slope);
    }
    for (int64_t j = 0; j < H; j++) {
        double s = 0.0;
        for (int64_t k = 0; k < H; k++) s += (double)f->W2[j * H + k] * h1[k];
        a2[j] = (float)(s + f->b2[j]);
        h2[j] = lrelu(a2[j], f->slope);
    }
    double v = 0.0;
    for (int64_t j = 0; j < H; j++) v += (double)f->W3[j] * h2[j];
    return v + f->b3[0];
}

/* Forward: M = M0 (zeros when M0 is NULL), then M[idx_e] = g_phi(zs_e) for e = 0..m-1
 *   M0  [n] or NULL
 *   idx [m]    flat indices of M as floats, distinct integers in [0, n)
 *   zs  [m,2]
 *   M   [n]    (overwritten)
 * The four scratch rows [H] come from the caller (a1, h1, a2, h2 in a row: tmp [4H]). */
void mcl_naive_smn_write(const mcl_naive_phi *f, int64_t n, int64_t m, const float *M0,
                         const float *idx, const float *zs, double *tmp, double *M)
{
    for (int64_t i = 0; i < n; i++) M[i] = M0 ? M0[i] : 0.0;
    for (int64_t e = 0; e < m; e++)
        M[(int64_t)idx[e]] = mcl_naive_smn_phi(f, zs + 2 * e, tmp);
}

/* Backward, for the output gradient gM [n]; with g = gM[idx_e] for entry e:
 *   dv/db3 = 1, dv/dW3[j] = h2[j]                  ->  gb3 = Σ_e g,  gW3[j] = Σ_e g h2[j]
 *   d2[j] = g W3[j] lrelu'(a2[j])                   ->  gb2[j] = Σ_e d2[j],  gW2[j,k] = Σ_e d2[j] h1[k]
 *   d1[k] = (Σ_j W2[j,k] d2[j]) lrelu'(a1[k])       ->  gb1[k] = Σ_e d1[k],  gW1[k,c] = Σ_e d1[k] zs_e[c]
 *   gzs_e[c] = Σ_k W1[k,c] d1[k]
 *   gM0[i] = gM[i] where no entry wrote, 0 where one did (the write replaced M0[i])
 *   gM [n] -> gM0 [n], gzs [m,2], gW1 [H,2], gb1 [H], gW2 [H,H], gb2 [H], gW3 [H], gb3 [1]
 *   (all overwritten); tmp [6H] scratch. */
void mcl_naive_smn_write_bwd(const mcl_naive_phi *f, int64_t n, int64_t m, const float *idx,
                             const float *zs, const float *gM, double *tmp, double *gM0,
                             double *gzs, const mcl_naive_phi_grad *g)
{
    const int64_t H = f->H;
    double *a1 = tmp, *h1 = tmp + H, *a2 = tmp + 2 * H, *h2 = tmp + 3 * H, *d1 = tmp + 4 * H,
           *d2 = tmp + 5 * H;
    for (int64_t i = 0; i < n; i++) gM0[i] = gM[i];
    for (int64_t e = 0; e < m; e++) gM0[(int64_t)idx[e]] = 0.0;
    for (int64_t k = 0; k < 2 * H; k++) g->W1[k] = 0.0;
    for (int64_t k = 0; k < H * H; k++) g->W2[k] = 0.0;
    for (int64_t k = 0; k < H; k++) g->b1[k] = g->b2[k] = g->W3[k] = 0.0;
    g->b3[0] = 0.0;
    for (int64_t e = 0; e < m; e++) {
        const float *z = zs + 2 * e;
        const double ge = gM[(int64_t)idx[e]];
        mcl_naive_smn_phi(f, z, tmp); /* a1, h1, a2, h2 */
        g->b3[0] += ge;
        for (int64_t j = 0; j < H; j++) {
            g->W3[j] += ge * h2[j];
            d2[j] = ge * f->W3[j] * lrelu_d(a2[j], f->slope);
            g->b2[j] += d2[j];
            for (int64_t k = 0; k < H; k++) g->W2[j * H + k] += d2[j] * h1[k];
        }
        for (int64_t k = 0; k < H; k++) {
            double s = 0.0;
            for (int64_t j = 0; j < H; j++) s += (double)f->W2[j * H + k] * d2[j];
            d1[k] = s * lrelu_d(a1[k], f->slope);
            g->b1[k] += d1[k];
            g->W1[2 * k] += d1[k] * z[0];
            g->W1[2 * k + 1] += d1[k] * z[1];
        }
        for (int c = 0; c < 2; c++) {
            double s = 0.0;
            for (int64_t k = 0; k < H; k++) s += (double)f->W1[2 * k + c] * d1[k];
            gzs[2 * e + c] = s;
        }
    }
}

/* grad_preproc of one value (Andrychowicz et al. 2016; ops.def), P in (0, 87]:
 *   |z| >= thr:  (log|z| / P, sign z)        else:  (-1, ep z)
 * with thr = e^-P and ep = e^P the op's two floats (mcl_grad_preproc_consts: the definition
 * places the branch at the float threshold, which both backends share) */
void mcl_naive_grad_preproc(double z, float P, double out[2])
{
    float thr, ep;
    mcl_grad_preproc_consts(P, &thr, &ep);
    if (fabs(z) >= (double)thr) {
        out[0] = log(fabs(z)) / P;
        out[1] = z > 0.0 ? 1.0 : -1.0;
    } else {
        out[0] = -1.0;
        out[1] = (double)ep * z;
    }
}

/* The fast-step write's inputs (smn_avg_z): I' = gamma I + beta1 G over all n elements, and for
 * each entry zs_e = grad_preproc(I'[idx_e] + beta2 G[idx_e], P).
 *   I, G [n], idx [m] -> I2 [n], zs [m,2]   (overwritten) */
void mcl_naive_smn_avg_z(int64_t n, int64_t m, const float *I, const float *G, const float *idx,
                         double gamma, double beta1, double beta2, float P, double *I2, double *zs)
{
    for (int64_t i = 0; i < n; i++) I2[i] = gamma * I[i] + beta1 * G[i];
    for (int64_t e = 0; e < m; e++) {
        const int64_t i = (int64_t)idx[e];
        mcl_naive_grad_preproc(I2[i] + beta2 * G[i], P, zs + 2 * e);
    }
}
