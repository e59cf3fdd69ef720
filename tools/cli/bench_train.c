/* bench_train.c — the `train_step` workload of `metacl bench acl|oct|smn|lm` (bench_run.h):
 * the harness's own training step (mcl_train_session_step, src/learn/train.c) -- the family's
 * step_loss, backward, the optimizer step and the metrics a run logs -- on the family's small
 * bench config, one step per iteration.
 *
 * Data: a temporary directory (removed at teardown) holds what the family reads, made from a
 * fixed seed, so the bench needs no prepared data set:
 *   images  IDX files of 40 classes x 20 images of 28x28 (each class a random template plus
 *           noise), read as the domain "idx:IMAGES,LABELS" (ACL, OCT)
 *   text    a corpus of two domains (`metacl data prepare txt:` of two files of ~96 KB of
 *           pseudo-words) for the LM
 * The SMN family's WCST task draws its own cards. The counters per iteration (bench_run.c)
 * are then the counters of one training step.
 */
#define _XOPEN_SOURCE 700
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_run.h"
#include "idx.h"
#include "textprep.h"
#include "train.h"
#include "util.h"

#define IMG_CLASSES 40
#define IMG_PER_CLASS 20
#define IMG_SIDE 28
#define TEXT_BYTES 98304

struct mcl_bench_train {
    char dir[512];
    mcl_train_session *ts;
    mcl_run_cfg cfg;
    int have_cfg;
};

/* A tiny xorshift generator: the bench's data need only be fixed, not good. */
static uint32_t next_u32(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return (uint32_t)(*s >> 11);
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    return remove(path);
}

/* The IDX pair under dir: images.idx, labels.idx. */
static int write_images(const char *dir, char *err, size_t len)
{
    const int64_t n = (int64_t)IMG_CLASSES * IMG_PER_CLASS, px = IMG_SIDE * IMG_SIDE;
    unsigned char *img = malloc((size_t)(n * px)), *lab = malloc((size_t)n);
    unsigned char tmpl[IMG_SIDE * IMG_SIDE];
    uint64_t s = 0x9e3779b97f4a7c15ULL;
    int ok = img && lab;
    for (int c = 0; ok && c < IMG_CLASSES; c++) {
        for (int64_t p = 0; p < px; p++) tmpl[p] = (unsigned char)(next_u32(&s) & 0xff);
        for (int i = 0; i < IMG_PER_CLASS; i++) {
            const int64_t k = (int64_t)c * IMG_PER_CLASS + i;
            lab[k] = (unsigned char)c;
            for (int64_t p = 0; p < px; p++)
                img[k * px + p] = (unsigned char)((tmpl[p] * 3u + (next_u32(&s) & 0xff)) / 4u);
        }
    }
    char path[640];
    const int64_t d3[3] = {n, IMG_SIDE, IMG_SIDE}, d1[1] = {n};
    snprintf(path, sizeof path, "%s/images.idx", dir);
    ok = ok && mcl_idx_write(path, MCL_IDX_UBYTE, 3, d3, img, 0, err, len) == MCL_OK;
    snprintf(path, sizeof path, "%s/labels.idx", dir);
    ok = ok && mcl_idx_write(path, MCL_IDX_UBYTE, 1, d1, lab, 0, err, len) == MCL_OK;
    free(img);
    free(lab);
    return ok;
}

/* Two text files of pseudo-words (a different alphabet each) prepared as the corpus dir/text. */
static int write_text(const char *dir, char *err, size_t len)
{
    static const char *const alpha[2] = {"etaoinshrdlu", "zyxwvqkjbpgf"};
    char path[2][640];
    uint64_t s = 0x2545f4914f6cdd1dULL;
    int ok = 1;
    char *buf = malloc((size_t)TEXT_BYTES + 16);
    ok = buf != NULL;
    for (int f = 0; f < 2 && ok; f++) {
        snprintf(path[f], sizeof path[f], "%s/dom%c.txt", dir, 'a' + f);
        size_t n = 0;
        for (int64_t at = 0; at < TEXT_BYTES;) {
            const int w = 1 + (int)(next_u32(&s) % 8);
            for (int i = 0; i < w; i++) buf[n++] = alpha[f][next_u32(&s) % 12];
            const int end = next_u32(&s) % 10 == 0;
            buf[n++] = end ? '\n' : ' ';
            at += w + 1;
        }
        char werr[256];
        ok = mcl_write_file_atomic(path[f], buf, n, werr, sizeof werr) == MCL_OK;
    }
    free(buf);
    if (!ok) {
        snprintf(err, len, "cannot write the bench's text files under %s", dir);
        return 0;
    }
    mcl_text_prepare_opts o;
    memset(&o, 0, sizeof o);
    o.data_dir = dir;
    o.name = "text";
    o.per_file = 1;
    const char *files[2] = {path[0], path[1]};
    return mcl_text_prepare_user(&o, files, 2, err, len) == MCL_OK;
}

void mcl_bench_train_free(mcl_bench_train *b)
{
    if (!b) return;
    mcl_train_session_free(b->ts);
    if (b->have_cfg) mcl_run_cfg_free(&b->cfg);
    if (b->dir[0]) nftw(b->dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    free(b);
}

mcl_bench_train *mcl_bench_train_open(mcl_ctx *ctx, const char *family, const char *config)
{
    char err[2048] = "";
    mcl_bench_train *b = calloc(1, sizeof *b);
    const mcl_family *fam = mcl_family_find(family);
    if (!b || !fam) {
        fprintf(stderr, "metacl bench: train_step: %s\n", b ? "unknown family" : "out of memory");
        free(b);
        return NULL;
    }
    const char *tmp = getenv("TMPDIR");
    snprintf(b->dir, sizeof b->dir, "%s/metacl-bench-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(b->dir)) {
        fprintf(stderr, "metacl bench: train_step: cannot create %s\n", b->dir);
        b->dir[0] = 0;
        mcl_bench_train_free(b);
        return NULL;
    }
    int ok = 1;
    if (strstr(config, "@IMAGES@")) ok = write_images(b->dir, err, sizeof err);
    if (ok && strstr(config, "@TEXT@")) ok = write_text(b->dir, err, sizeof err);
    /* the config with @IMAGES@ / @TEXT@ replaced by the data's paths */
    char text[4096], rep[1200];
    size_t at = 0;
    for (const char *p = config; ok && *p && at < sizeof text - 1;) {
        const char *what = !strncmp(p, "@IMAGES@", 8) ? "img" : !strncmp(p, "@TEXT@", 6) ? "txt" : NULL;
        if (!what) {
            text[at++] = *p++;
            continue;
        }
        if (what[0] == 'i')
            snprintf(rep, sizeof rep, "idx:%s/images.idx,%s/labels.idx", b->dir, b->dir);
        else
            snprintf(rep, sizeof rep, "%s/text", b->dir);
        p += what[0] == 'i' ? 8 : 6;
        at += (size_t)snprintf(text + at, sizeof text - at, "%s", rep);
    }
    text[at < sizeof text ? at : sizeof text - 1] = 0;
    if (ok) ok = (b->have_cfg = mcl_run_cfg_init(&b->cfg, fam, err, sizeof err) == MCL_OK);
    if (ok) ok = mcl_run_cfg_parse(&b->cfg, text, "the bench config", err, sizeof err) == MCL_OK;
    if (ok) ok = mcl_train_session_open(ctx, &b->cfg, &b->ts, err, sizeof err) == MCL_OK;
    if (!ok) {
        fprintf(stderr, "metacl bench: train_step (%s): %s\n", family, err);
        mcl_bench_train_free(b);
        return NULL;
    }
    return b;
}

int mcl_bench_train_step(mcl_bench_train *b, double *loss)
{
    double l = 0.0, m[MCL_TRAIN_MAX_METRICS];
    if (mcl_train_session_step(b->ts, &l, m) != MCL_OK) {
        fprintf(stderr, "metacl bench: train_step: %s\n", mcl_train_session_error(b->ts));
        return 1;
    }
    if (loss) *loss = l;
    return 0;
}

int mcl_bench_train_iter(mcl_ctx *ctx, void *st)
{
    (void)ctx;
    return mcl_bench_train_step(st, NULL);
}

void mcl_bench_train_teardown(void *st) { mcl_bench_train_free(st); }
