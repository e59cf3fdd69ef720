/* srwm.c — the self-referential weight matrix over a sequence, written as its equations read
 * (the definition behind src/ref/srwm.c, which pads, vectorizes, fixes its summation order,
 * has a private exp and one inlined copy per head size).
 *
 * Per sequence (b, h) there are four matrices, stored M[e][m] (e = input index, m = output
 * index; reading a vector v gives (v·M)[m] = sum_e v[e] M[e][m]):
 *   i = 0: W_y [D,D]    i = 1: W_q [D,D]    i = 2: W_k [D,D]    i = 3: w_b [D,4]
 * For t = 0 .. L-1, with M_i the weights after step t-1 (M_i = W0_i at t = 0):
 *   1. r_i = x_t·M_i                              (y_t = r_0)
 *   2. q = softmax(r_1), k = softmax(r_2)          (over the D entries)
 *      beta_j = sigmoid(r_3[j]), j = 0..3           (one learning rate per matrix)
 *   3. v_i = q·M_i,  vbar_i = k·M_i,  Δ_i = v_i − vbar_i   (reads with the weights NOT yet updated)
 *   4. M_i[e][m] += k[e] · beta_i · Δ_i[m]          (rank-1 update, every step incl. the last)
 * y_t is the value of step 1, before the update. The final M_i is the final state.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "naive.h"

/* Number of columns of matrix i: D for W_y, W_q, W_k; 4 for w_b. */
static int64_t ncol(int i, int64_t D) { return i == 3 ? 4 : D; }

/* Length of a scratch vector that holds a row of any of the four matrices. */
static size_t vlen(int64_t D) { return (size_t)(D > 4 ? D : 4); }

static void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size);
    if (!p) abort(); /* an oracle has no error path: out of memory is fatal */
    return p;
}

/* One step of one sequence, steps 1-4 above, in double. M[i] is updated in place.
 *   x     [D]               the step's input
 *   M[i]  [D,ncol(i)]       the weights after the previous step (updated)
 *   y     [D]               r_0
 *   q, k  [D]               softmax(r_1), softmax(r_2)
 *   beta  [4]               sigmoid(r_3)
 *   dl[i] [ncol(i)]         Δ_i */
static void srwm_step(int64_t D, const double *x, double *const M[4], double *y, double *q,
                      double *k, double *beta, double *const dl[4])
{
    double *r[4];
    for (int i = 0; i < 4; i++) r[i] = xcalloc(vlen(D), sizeof(double));
    /* 1. r_i[m] = sum_e x[e] M_i[e][m] */
    for (int i = 0; i < 4; i++)
        for (int64_t m = 0; m < ncol(i, D); m++) {
            double a = 0.0;
            for (int64_t e = 0; e < D; e++) a += x[e] * M[i][e * ncol(i, D) + m];
            r[i][m] = a;
        }
    /* 2. softmax (max-shifted), sigmoid */
    double mq = r[1][0], mk = r[2][0], sq = 0.0, sk = 0.0;
    for (int64_t m = 1; m < D; m++) {
        if (r[1][m] > mq) mq = r[1][m];
        if (r[2][m] > mk) mk = r[2][m];
    }
    for (int64_t m = 0; m < D; m++) {
        sq += exp(r[1][m] - mq);
        sk += exp(r[2][m] - mk);
    }
    for (int64_t m = 0; m < D; m++) {
        y[m] = r[0][m];
        q[m] = exp(r[1][m] - mq) / sq;
        k[m] = exp(r[2][m] - mk) / sk;
    }
    for (int j = 0; j < 4; j++) beta[j] = 1.0 / (1.0 + exp(-r[3][j]));
    /* 3. Δ_i[m] = sum_e q[e] M_i[e][m] - sum_e k[e] M_i[e][m] */
    for (int i = 0; i < 4; i++)
        for (int64_t m = 0; m < ncol(i, D); m++) {
            double v = 0.0, vbar = 0.0;
            for (int64_t e = 0; e < D; e++) {
                v += q[e] * M[i][e * ncol(i, D) + m];
                vbar += k[e] * M[i][e * ncol(i, D) + m];
            }
            dl[i][m] = v - vbar;
        }
    /* 4. M_i[e][m] += k[e] beta_i Δ_i[m] */
    for (int i = 0; i < 4; i++)
        for (int64_t e = 0; e < D; e++)
            for (int64_t m = 0; m < ncol(i, D); m++) M[i][e * ncol(i, D) + m] += k[e] * beta[i] * dl[i][m];
    for (int i = 0; i < 4; i++) free(r[i]);
}

/* See naive.h for the arguments:
 *   x [B,H,L,D];  W0[i], Wf[i] [B,H,D,ncol(i)];  y, q, k [B,H,L,D];  beta [B,H,L,4];
 *   dl[i] [B,H,L,ncol(i)] */
void mcl_naive_srwm_fwd(int64_t B, int64_t H, int64_t L, int64_t D, const float *x,
                        const float *const W0[4], double *y, double *const Wf[4], double *q,
                        double *k, double *beta, double *const dl[4])
{
    double *xt = xcalloc((size_t)D, sizeof(double)), *qt = xcalloc((size_t)D, sizeof(double));
    double *kt = xcalloc((size_t)D, sizeof(double)), bt[4], *dt[4];
    for (int i = 0; i < 4; i++) dt[i] = xcalloc(vlen(D), sizeof(double));
    for (int64_t s = 0; s < B * H; s++) { /* sequence s = b*H + h */
        double *M[4];
        for (int i = 0; i < 4; i++) { /* the state is updated in place in Wf */
            const int64_t n = D * ncol(i, D);
            M[i] = Wf[i] + s * n;
            for (int64_t j = 0; j < n; j++) M[i][j] = W0[i][s * n + j];
        }
        for (int64_t t = 0; t < L; t++) {
            const int64_t o = (s * L + t) * D, o4 = (s * L + t) * 4;
            for (int64_t e = 0; e < D; e++) xt[e] = x[o + e];
            srwm_step(D, xt, M, y + o, qt, kt, bt, dt);
            for (int64_t m = 0; m < D; m++) {
                if (q) q[o + m] = qt[m];
                if (k) k[o + m] = kt[m];
            }
            for (int j = 0; j < 4; j++)
                if (beta) beta[o4 + j] = bt[j];
            for (int i = 0; dl && i < 4; i++)
                for (int64_t m = 0; m < ncol(i, D); m++) dl[i][(i == 3 ? o4 : o) + m] = dt[i][m];
        }
    }
    free(xt);
    free(qt);
    free(kt);
    for (int i = 0; i < 4; i++) free(dt[i]);
}

/* Backpropagation through time. G_i = dL/d(M_i after step t), starting from gWf. For
 * t = L-1 .. 0, with M_i, q, k, beta, Δ_i of step t (M_i before its update; the forward is
 * rerun and every step's weights are kept — the memory-light reversal of src/ref/srwm.c is
 * an optimization of exactly this):
 *   from 4 (M'_i = M_i + beta_i k⊗Δ_i):
 *      gM_i = G_i
 *      gbeta_i  = sum_{e,m} G_i[e][m] k[e] Δ_i[m]
 *      gk[e]    = sum_i beta_i sum_m G_i[e][m] Δ_i[m]
 *      gΔ_i[m]  = beta_i sum_e k[e] G_i[e][m]
 *   from 3 (Δ_i = q·M_i − k·M_i):
 *      gq[e] += sum_m M_i[e][m] gΔ_i[m];  gk[e] −= sum_m M_i[e][m] gΔ_i[m]
 *      gM_i[e][m] += (q[e] − k[e]) gΔ_i[m]
 *   from 2: gr_0 = gy_t;  gr_1[m] = q[m] (gq[m] − sum_j q[j] gq[j]);  same for gr_2 with k;
 *      gr_3[j] = gbeta_j beta_j (1 − beta_j)
 *   from 1 (r_i = x·M_i): gx_t[e] = sum_i sum_m M_i[e][m] gr_i[m];  gM_i[e][m] += x[e] gr_i[m]
 *   G_i = gM_i.
 * At t = 0 done, G_i = dL/dW0_i.
 *   x [B,H,L,D];  W0[i], gWf[i], gW0[i] [B,H,D,ncol(i)];  gy, gx [B,H,L,D] */
void mcl_naive_srwm_bwd(int64_t B, int64_t H, int64_t L, int64_t D, const float *x,
                        const float *const W0[4], const float *gy, const float *const gWf[4],
                        double *gx, double *const gW0[4])
{
    int64_t n[4], nall = 0;
    for (int i = 0; i < 4; i++) nall += n[i] = D * ncol(i, D);
    /* per step of one sequence: the weights before the step, q, k, beta, Δ_i */
    double *Ms = xcalloc((size_t)(L * nall), sizeof(double));
    double *qs = xcalloc((size_t)(L * D), sizeof(double)), *ks = xcalloc((size_t)(L * D), sizeof(double));
    double *bs = xcalloc((size_t)(L * 4), sizeof(double));
    double *ds = xcalloc((size_t)(L * (3 * D + 4)), sizeof(double));
    double *xt = xcalloc((size_t)D, sizeof(double)), *yt = xcalloc((size_t)D, sizeof(double));
    double *Mcur[4], *G[4], *gM[4], *gr[4], *gD[4];
    for (int i = 0; i < 4; i++) {
        Mcur[i] = xcalloc((size_t)n[i], sizeof(double));
        G[i] = xcalloc((size_t)n[i], sizeof(double));
        gM[i] = xcalloc((size_t)n[i], sizeof(double));
        gr[i] = xcalloc(vlen(D), sizeof(double));
        gD[i] = xcalloc(vlen(D), sizeof(double));
    }
    double *gq = xcalloc((size_t)D, sizeof(double)), *gk = xcalloc((size_t)D, sizeof(double));

    for (int64_t s = 0; s < B * H; s++) {
        /* forward, keeping every step */
        for (int i = 0; i < 4; i++)
            for (int64_t j = 0; j < n[i]; j++) Mcur[i][j] = W0[i][s * n[i] + j];
        for (int64_t t = 0; t < L; t++) {
            double *Mt = Ms + t * nall, *dt[4];
            for (int i = 0, off = 0; i < 4; off += (int)n[i], i++)
                memcpy(Mt + off, Mcur[i], (size_t)n[i] * sizeof(double));
            for (int i = 0; i < 4; i++) dt[i] = ds + t * (3 * D + 4) + i * D;
            for (int64_t e = 0; e < D; e++) xt[e] = x[(s * L + t) * D + e];
            srwm_step(D, xt, Mcur, yt, qs + t * D, ks + t * D, bs + t * 4, dt);
        }
        /* backward */
        for (int i = 0; i < 4; i++)
            for (int64_t j = 0; j < n[i]; j++) G[i][j] = gWf[i][s * n[i] + j];
        for (int64_t t = L - 1; t >= 0; t--) {
            const double *q = qs + t * D, *k = ks + t * D, *beta = bs + t * 4;
            const double *M[4], *dl[4];
            for (int i = 0, off = 0; i < 4; off += (int)n[i], i++) {
                M[i] = Ms + t * nall + off;
                dl[i] = ds + t * (3 * D + 4) + i * D;
            }
            double gbeta[4];
            for (int64_t e = 0; e < D; e++) gq[e] = gk[e] = 0.0;
            /* from the update (4) */
            for (int i = 0; i < 4; i++) {
                const int64_t nc = ncol(i, D);
                gbeta[i] = 0.0;
                for (int64_t m = 0; m < nc; m++) gD[i][m] = 0.0;
                for (int64_t e = 0; e < D; e++)
                    for (int64_t m = 0; m < nc; m++) {
                        const double g = G[i][e * nc + m];
                        gM[i][e * nc + m] = g;
                        gbeta[i] += g * k[e] * dl[i][m];
                        gk[e] += beta[i] * g * dl[i][m];
                        gD[i][m] += beta[i] * k[e] * g;
                    }
            }
            /* from the retrievals (3) */
            for (int i = 0; i < 4; i++) {
                const int64_t nc = ncol(i, D);
                for (int64_t e = 0; e < D; e++)
                    for (int64_t m = 0; m < nc; m++) {
                        gq[e] += M[i][e * nc + m] * gD[i][m];
                        gk[e] -= M[i][e * nc + m] * gD[i][m];
                        gM[i][e * nc + m] += (q[e] - k[e]) * gD[i][m];
                    }
            }
            /* through softmax and sigmoid (2) */
            double sq = 0.0, sk = 0.0;
            for (int64_t j = 0; j < D; j++) {
                sq += q[j] * gq[j];
                sk += k[j] * gk[j];
            }
            for (int64_t m = 0; m < D; m++) {
                gr[0][m] = gy[(s * L + t) * D + m];
                gr[1][m] = q[m] * (gq[m] - sq);
                gr[2][m] = k[m] * (gk[m] - sk);
            }
            for (int j = 0; j < 4; j++) gr[3][j] = gbeta[j] * beta[j] * (1.0 - beta[j]);
            /* through the reads r_i = x·M_i (1) */
            for (int64_t e = 0; e < D; e++) {
                const double xe = x[(s * L + t) * D + e];
                double g = 0.0;
                for (int i = 0; i < 4; i++)
                    for (int64_t m = 0; m < ncol(i, D); m++) {
                        g += M[i][e * ncol(i, D) + m] * gr[i][m];
                        gM[i][e * ncol(i, D) + m] += xe * gr[i][m];
                    }
                gx[(s * L + t) * D + e] = g;
            }
            for (int i = 0; i < 4; i++) memcpy(G[i], gM[i], (size_t)n[i] * sizeof(double));
        }
        for (int i = 0; i < 4; i++)
            for (int64_t j = 0; j < n[i]; j++) gW0[i][s * n[i] + j] = G[i][j];
    }
    free(Ms);
    free(qs);
    free(ks);
    free(bs);
    free(ds);
    free(xt);
    free(yt);
    free(gq);
    free(gk);
    for (int i = 0; i < 4; i++) {
        free(Mcur[i]);
        free(G[i]);
        free(gM[i]);
        free(gr[i]);
        free(gD[i]);
    }
}
