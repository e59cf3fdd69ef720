/* Classify images in context with a shipped ACL checkpoint (doc/acl.md): the model sees a
 * few labelled examples of three classes it never saw in training (ring, cross, bar: drawn
 * here, so no prepared data is needed), then labels new images of those classes.
 *
 *   ./acl-classify [CKPT]     (default: acl-2task.ckpt in the installed data directory,
 *                              compiled in as METACL_PKGDATADIR "/checkpoints/acl-2task.ckpt")
 *
 * Installed: cc acl-classify.c $(pkg-config --cflags --libs metacl) \
 *   -DMETACL_PKGDATADIR="\"$(pkg-config --variable=pkgdatadir metacl)\""
 * Built and run by `make check` (with the source tree's data/ as METACL_PKGDATADIR).
 *
 * Checks (exit 1 if any fails): every logit is finite; the prediction of each query through
 * mcl_acl_query (a length-1 call from the state after the context) equals the one through
 * mcl_acl_forward on the whole sequence context + query (query label "unknown"), with
 * logits equal to 1e-3; and the accuracy is well above chance (1/3). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <metacl/metacl.h>
#include <metacl/acl.h>
#include <metacl/dataset.h>
#include <metacl/sampler.h>

enum { N_WAY = 3, K_SHOT = 5, PER_CLASS = 16, N_IMG = N_WAY * PER_CLASS, Q_PER = PER_CLASS - K_SHOT };
enum { N_CTX = N_WAY * K_SHOT, N_Q = N_WAY * Q_PER, S = MCL_IMG };

static uint32_t rnd(uint32_t *s) /* xorshift32: the jitter of the drawings */
{
    *s ^= *s << 13, *s ^= *s >> 17, *s ^= *s << 5;
    return *s;
}

/* class 0 ring, 1 cross, 2 bar; position, size and brightness jittered */
static void draw(uint8_t *img, int cls, uint32_t *s)
{
    memset(img, 0, S * S);
    int cx = 13 + (int)(rnd(s) % 6), cy = 13 + (int)(rnd(s) % 6), r = 7 + (int)(rnd(s) % 4);
    uint8_t ink = (uint8_t)(180 + rnd(s) % 76);
    for (int y = 0; y < S; y++)
        for (int x = 0; x < S; x++) {
            int dx = x - cx, dy = y - cy, on;
            if (cls == 0) on = abs(dx * dx + dy * dy - r * r) <= 2 * r;
            else if (cls == 1) on = (abs(dx) <= 1 && abs(dy) <= r) || (abs(dy) <= 1 && abs(dx) <= r);
            else on = abs(dy) <= 2 && abs(dx) <= r + 2;
            if (on) img[y * S + x] = ink;
        }
}

static int argmax(const float *v, int n)
{
    int best = 0;
    for (int i = 1; i < n; i++)
        if (v[i] > v[best]) best = i;
    return best;
}

int main(int argc, char **argv)
{
#ifdef METACL_PKGDATADIR
    const char *ckpt = argc > 1 ? argv[1] : METACL_PKGDATADIR "/checkpoints/acl-2task.ckpt";
#else
    if (argc < 2) return fprintf(stderr, "usage: %s CKPT (e.g. acl-2task.ckpt)\n", argv[0]), 2;
    const char *ckpt = argv[1];
#endif
    char err[512];
    mcl_ctx *ctx;
    if (mcl_ctx_create(&ctx, MCL_BACKEND_REF, NULL, err, sizeof err) != MCL_OK)
        return fprintf(stderr, "%s\n", err), 1;
    mcl_acl *m;
    if (mcl_acl_open(ctx, ckpt, &m, err, sizeof err) != MCL_OK) return fprintf(stderr, "%s\n", err), 1;
    const int nw = m->cfg.n_way; /* the model's outputs (5 for acl-2task); label nw = "unknown" */
    if (nw < N_WAY) return fprintf(stderr, "%s: a %d-way model, need >= %d\n", ckpt, nw, N_WAY), 1;

    /* the images: PER_CLASS of each class, as a data set (its pixel statistics normalize them) */
    static uint8_t pix[N_IMG * S * S];
    int32_t cls[N_IMG];
    uint32_t seed = 12345;
    for (int i = 0; i < N_IMG; i++) cls[i] = i % N_WAY, draw(pix + (size_t)i * S * S, cls[i], &seed);
    mcl_dataset *ds;
    if (mcl_dataset_from_arrays("shapes", pix, cls, N_IMG, &ds, err, sizeof err) != MCL_OK)
        return fprintf(stderr, "%s\n", err), 1;
    /* context: the first K_SHOT images of each class, interleaved; queries: the rest. Each
     * forward row is context then one query (label "unknown"), so query j's sequence is
     * rows j*(N_CTX+1) .. j*(N_CTX+1)+N_CTX. */
    int64_t idx[N_Q * (N_CTX + 1)];
    int32_t lab[N_Q * (N_CTX + 1)];
    for (int j = 0; j < N_Q; j++) {
        for (int t = 0; t < N_CTX; t++) idx[j * (N_CTX + 1) + t] = t, lab[j * (N_CTX + 1) + t] = cls[t];
        idx[j * (N_CTX + 1) + N_CTX] = N_CTX + j, lab[j * (N_CTX + 1) + N_CTX] = nw;
    }
    int64_t qidx[N_Q];
    for (int j = 0; j < N_Q; j++) qidx[j] = N_CTX + j;

    mcl_acl_set_training(m, 0); /* evaluation: no dropout, running feature statistics */
    mcl_no_grad_begin(ctx);
    mcl_tensor *cimg = mcl_tensor_new(ctx, N_CTX, 1, S, S), *clab = mcl_tensor_new(ctx, N_CTX, 0, 0, 0);
    mcl_tensor *qimg = mcl_tensor_new(ctx, N_Q, 1, S, S);
    mcl_tensor *simg = mcl_tensor_new(ctx, N_Q * (N_CTX + 1), 1, S, S);
    mcl_tensor *slab = mcl_tensor_new(ctx, N_Q * (N_CTX + 1), 0, 0, 0);
    if (mcl_batch_rows(cimg, clab, ds, idx, lab, N_CTX, 1) != MCL_OK ||
        mcl_batch_rows(qimg, NULL, ds, qidx, NULL, N_Q, 1) != MCL_OK ||
        mcl_batch_rows(simg, slab, ds, idx, lab, N_Q * (N_CTX + 1), 1) != MCL_OK)
        return fprintf(stderr, "%s\n", mcl_ctx_error(ctx)), 1;

    /* path 1: learn the context once (one sequence), then N_Q length-1 queries from its state */
    mcl_tensor *logits;
    mcl_acl_state *state;
    static float q[N_Q * 16], f[N_Q * 16];
    if (nw > 16) return fprintf(stderr, "%s: more than 16 outputs\n", ckpt), 1;
    if (mcl_acl_forward(m, ctx, cimg, clab, 1, N_CTX, NULL, &logits, &state) != MCL_OK ||
        mcl_acl_query(m, ctx, state, qimg, 1, N_Q, &logits) != MCL_OK ||
        mcl_tensor_read(logits, q, (size_t)N_Q * nw) != MCL_OK)
        return fprintf(stderr, "%s\n", mcl_ctx_error(ctx)), 1;
    mcl_acl_state_free(state);
    /* path 2: N_Q sequences "context, query" side by side; the logits of their last step */
    if (mcl_acl_forward(m, ctx, simg, slab, N_Q, N_CTX + 1, NULL, &logits, NULL) != MCL_OK ||
        mcl_tensor_read(logits, f, (size_t)N_Q * nw) != MCL_OK)
        return fprintf(stderr, "%s\n", mcl_ctx_error(ctx)), 1;
    mcl_no_grad_end(ctx);

    int hits = 0, agree = 0, finite = 1;
    float worst = 0;
    for (int j = 0; j < N_Q; j++) {
        for (int c = 0; c < nw; c++) {
            finite &= isfinite(q[j * nw + c]) && isfinite(f[j * nw + c]);
            worst = fmaxf(worst, fabsf(q[j * nw + c] - f[j * nw + c]));
        }
        int p = argmax(q + j * nw, N_WAY); /* only the N_WAY labels of this task compete */
        hits += p == cls[N_CTX + j];
        agree += p == argmax(f + j * nw, N_WAY);
    }
    double acc = (double)hits / N_Q;
    printf("%s: %d-way %d-shot in context, %d queries: accuracy %.3f (chance %.3f); "
           "query vs. whole-sequence logits differ by at most %.2g\n",
           ckpt, N_WAY, K_SHOT, N_Q, acc, 1.0 / N_WAY, worst);
    int bad = 0;
    if (!finite) bad = 1, fprintf(stderr, "FAIL: a logit is not finite\n");
    if (!(worst <= 1e-3f) || agree != N_Q)
        bad = 1, fprintf(stderr, "FAIL: mcl_acl_query and mcl_acl_forward disagree (%d of %d)\n", N_Q - agree, N_Q);
    if (!(acc >= 0.6)) bad = 1, fprintf(stderr, "FAIL: accuracy %.3f, not well above chance\n", acc);
    mcl_ctx_reset(ctx);
    mcl_tensor_free(cimg), mcl_tensor_free(clab), mcl_tensor_free(qimg), mcl_tensor_free(simg), mcl_tensor_free(slab);
    mcl_dataset_free(ds), mcl_acl_free(m), mcl_ctx_free(ctx);
    return bad;
}
