/* test-acl-io.c — ACL config text and model checkpoints:
 *   - config text round trip is exact; every kind of bad line is rejected with a message;
 *   - save → open gives the same parameters and the same outputs;
 *   - save after one Adam step → load into a fresh model and optimizer → the next training
 *     step (dropout 0.1) has bit-identical loss and parameters to the uninterrupted run;
 *   - wrong config, wrong model kind, truncated and corrupted files are rejected, and a
 *     failed load leaves the model untouched; a failed save leaves the old file intact. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "acl.h"
#include "testutil.h"

#define SEED 20261124ULL
#define NWAY 3
#define B 2

static char dir[256];

static void tiny_cfg(mcl_acl_config *c)
{
    mcl_acl_config_default(c);
    c->n_way = NWAY;
    c->hidden = 16;
    c->heads = 2;
    c->layers = 1;
    c->conv_channels = 4;
    c->dropout = 0.1f;
    c->seed = SEED;
}

static void test_config_text(void)
{
    mcl_acl_config a, b;
    mcl_acl_config_default(&a);
    a.dropout = 0.123456789f;
    a.seed = 18446744073709551615ULL;
    a.feature_norm = MCL_ACL_FEATNORM_BATCH;
    a.feature_stats = MCL_ACL_FEATSTATS_CONTEXT;
    char *t = mcl_acl_config_to_text(&a);
    CHECK(t != NULL, "config to text");
    if (!t) return;
    printf("config text:\n%s", t);
    memset(&b, 0x5a, sizeof b);
    char err[256];
    CHECK(mcl_acl_config_parse(&b, t, err, sizeof err) == MCL_OK, "parse back: %s", err);
    /* every field up to feature_stats, then seed (the struct pads between them) */
    const size_t head = offsetof(mcl_acl_config, feature_stats) + sizeof a.feature_stats;
    CHECK(memcmp(&a, &b, head) == 0 && a.seed == b.seed, "round trip is exact (all fields, float bits)");
    free(t);

    static const struct { const char *text, *needle; } bad[] = {
        {"hidden = 12\nwidth = 3\n", "config:2: unknown ACL model key 'width'"},
        {"hidden = twelve\n", "hidden = 'twelve'"},
        {"hidden = 12x\n", "hidden = '12x'"},
        {"heads = 0\n", "heads = '0'"},
        {"layers = 99999999999999999999\n", "layers"},
        {"dropout = 1\n", "dropout = '1'"},
        {"dropout = nan\n", "dropout = 'nan'"},
        {"seed = -1\n", "seed = '-1'"},
        {"feature_norm = layer\n", "want none, batch or image"},
        {"# comment\n\nhidden 12\n", "config:3: 'hidden 12' is not key = value"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        mcl_acl_config c;
        mcl_acl_config_default(&c);
        mcl_acl_config before = c;
        err[0] = 0;
        mcl_status st = mcl_acl_config_parse(&c, bad[i].text, err, sizeof err);
        CHECK(st == MCL_ERR_INVALID && strstr(err, bad[i].needle) != NULL,
              "bad config %zu rejected with '%s' (got status %d, '%s')", i, bad[i].needle, (int)st, err);
        CHECK(memcmp(&c, &before, sizeof c) == 0, "bad config %zu leaves the config unchanged", i);
    }
    mcl_acl_config c;
    mcl_acl_config_default(&c);
    CHECK(mcl_acl_config_parse(&c, "  # comment\n\n hidden =  64 \r\nfeature_norm=batch", err, sizeof err) == MCL_OK &&
              c.hidden == 64 && c.feature_norm == MCL_ACL_FEATNORM_BATCH,
          "spaces, CR, comments and a last line without newline are accepted");
}

static float *read_all(mcl_acl *m, int *n_out)
{
    int np = mcl_params_count(m->params);
    int64_t total = 0;
    for (int i = 0; i < np; i++) total += mcl_tensor_numel(mcl_params_get(m->params, i));
    float *v = malloc((size_t)total * sizeof *v), *p = v;
    for (int i = 0; i < np; i++) {
        mcl_tensor *t = mcl_params_get(m->params, i);
        mcl_tensor_read(t, p, mcl_tensor_numel(t));
        p += mcl_tensor_numel(t);
    }
    *n_out = (int)total;
    return v;
}

static void make_tasks(mcl_ctx *ctx, mcl_acl_task_data td[2], uint64_t stream)
{
    for (int i = 0; i < 2; i++) {
        memset(&td[i], 0, sizeof td[i]);
        td[i].n_first = NWAY;
        td[i].n_ctx = 2 * NWAY;
        td[i].n_query = NWAY;
        mcl_tensor **parts[3][2] = {{&td[i].first_img, &td[i].first_lab},
                                    {&td[i].ctx_img, &td[i].ctx_lab},
                                    {&td[i].query_img, &td[i].query_lab}};
        const int64_t rows[3] = {B * td[i].n_first, B * td[i].n_ctx, B * td[i].n_query};
        for (int k = 0; k < 3; k++) {
            *parts[k][0] = mcl_tensor_new(ctx, rows[k], 1, 32, 32);
            *parts[k][1] = mcl_tensor_new(ctx, rows[k], 0, 0, 0);
            mcl_tensor_randn(*parts[k][0], SEED, stream + (uint64_t)(3 * i + k), 0.0f, 1.0f);
            float lv[64];
            for (int64_t r = 0; r < rows[k]; r++) lv[r] = (float)((r * 7 + k + i) % NWAY);
            mcl_tensor_write(*parts[k][1], lv, rows[k]);
        }
    }
}

/* One 2-task training step (Adam); returns the loss. */
static float train_step(mcl_acl *m, mcl_optim *opt, uint64_t data_stream)
{
    mcl_acl_task_data td[2];
    make_tasks(m->ctx, td, data_stream);
    mcl_acl_objective o;
    mcl_acl_objective_two_task(&o, 0.2f, 1.0f, 0.1f);
    mcl_tensor *loss = NULL;
    float v = NAN;
    mcl_optim_zero_grad(opt);
    if (mcl_acl_objective_loss(m, m->ctx, &o, td, B, &loss, NULL) != MCL_OK ||
        mcl_backward(m->ctx, loss) != MCL_OK || mcl_tensor_read(loss, &v, 1) != MCL_OK ||
        mcl_optim_step(opt) != MCL_OK)
        printf("train step failed: %s\n", mcl_ctx_error(m->ctx));
    mcl_ctx_reset(m->ctx);
    for (int i = 0; i < 2; i++) mcl_acl_task_data_free(&td[i]);
    return v;
}

static mcl_optim *adam(mcl_acl *m)
{
    mcl_optim_config oc;
    memset(&oc, 0, sizeof oc);
    oc.kind = MCL_OPTIM_ADAM;
    oc.sched.kind = MCL_SCHED_CONSTANT;
    oc.sched.base_lr = 1e-3f;
    oc.beta1 = 0.9f;
    oc.beta2 = 0.995f;
    oc.eps = 1e-9f;
    mcl_optim *o = NULL;
    if (mcl_optim_create(m->ctx, &oc, m->params, &o) != MCL_OK) printf("optim: %s\n", mcl_ctx_error(m->ctx));
    return o;
}

static int file_copy_prefix(const char *from, const char *to, long keep, long flip)
{
    FILE *f = fopen(from, "rb");
    if (!f) return -1;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc((size_t)n);
    size_t got = fread(b, 1, (size_t)n, f);
    fclose(f);
    if ((long)got != n) { free(b); return -1; }
    if (keep < 0 || keep > n) keep = n;
    if (flip >= 0 && flip < keep) b[flip] ^= 0x10;
    FILE *g = fopen(to, "wb");
    if (!g) { free(b); return -1; }
    fwrite(b, 1, (size_t)keep, g);
    fclose(g);
    free(b);
    return (int)n;
}

static void test_checkpoints(void)
{
    mcl_ctx *ctx = tu_ctx_ref();
    mcl_ctx_set_seed(ctx, SEED);
    mcl_acl_config c;
    tiny_cfg(&c);
    mcl_acl *m = mcl_acl_create(ctx, &c);
    mcl_optim *opt = m ? adam(m) : NULL;
    CHECK(m && opt, "model and optimizer");
    if (!m || !opt) { mcl_ctx_free(ctx); return; }

    char path[512], bad[512], err[512];
    snprintf(path, sizeof path, "%s/acl.ckpt", dir);
    snprintf(bad, sizeof bad, "%s/bad.ckpt", dir);
    float l1 = train_step(m, opt, 100);
    mcl_ckpt_counter cnt = {"step", 1};
    CHECK(mcl_acl_save(m, path, opt, &cnt, 1, err, sizeof err) == MCL_OK, "save: %s", err);
    uint64_t stream_at_save = mcl_ctx_stream(ctx);
    float l2 = train_step(m, opt, 200); /* the uninterrupted run's second step */
    int n_params = 0;
    float *after2 = read_all(m, &n_params);
    printf("uninterrupted: step 1 loss %.7f, step 2 loss %.7f\n", (double)l1, (double)l2);

    /* resume in a fresh context, model and optimizer */
    mcl_ctx *ctx2 = tu_ctx_ref();
    mcl_ctx_set_seed(ctx2, 999); /* wrong seed: the checkpoint must restore it */
    mcl_acl_config c2 = c;
    mcl_acl *m2 = mcl_acl_create(ctx2, &c2);
    mcl_optim *opt2 = m2 ? adam(m2) : NULL;
    mcl_ckpt_info info;
    CHECK(m2 && opt2 && mcl_acl_load(m2, path, opt2, 1, &info, err, sizeof err) == MCL_OK,
          "load into a fresh model: %s", err);
    uint64_t step = 0;
    CHECK(mcl_ckpt_info_counter(&info, "step", &step) && step == 1, "counter 'step' = 1");
    CHECK(mcl_optim_steps(opt2) == 1, "optimizer step count restored");
    CHECK(mcl_ctx_seed(ctx2) == SEED && mcl_ctx_stream(ctx2) == stream_at_save,
          "random state restored (seed and stream)");
    mcl_ckpt_info_free(&info);
    float r2 = m2 && opt2 ? train_step(m2, opt2, 200) : NAN;
    int n2 = 0;
    float *res2 = m2 ? read_all(m2, &n2) : NULL;
    printf("resumed: step 2 loss %.7f\n", (double)r2);
    CHECK(memcmp(&r2, &l2, sizeof r2) == 0, "resumed step loss bit-identical to the uninterrupted run");
    CHECK(res2 && n2 == n_params && memcmp(res2, after2, (size_t)n_params * sizeof(float)) == 0,
          "resumed parameters bit-identical after the step (%d values)", n_params);
    free(res2);

    /* open: model from the file alone, same outputs as the model it was saved from */
    mcl_acl *m3 = NULL;
    CHECK(mcl_acl_open(ctx2, path, &m3, err, sizeof err) == MCL_OK && m3, "open: %s", err);
    if (m3) {
        CHECK(memcmp(&m3->cfg, &c, sizeof c) == 0, "opened model has the saved config");
        CHECK(mcl_params_count(m3->params) == mcl_params_count(m->params), "same parameter count");
        mcl_acl_free(m3);
    }

    /* a failed load leaves the model untouched */
    int nb = 0;
    float *before = m2 ? read_all(m2, &nb) : NULL;
    int size = file_copy_prefix(path, bad, -1, -1);
    CHECK(size > 100, "checkpoint size %d bytes", size);
    struct { long keep, flip; const char *needle; } cases[] = {
        {size / 2, -1, "truncated"},
        {-1, size / 2, "CRC mismatch"},
        {-1, 0, "bad magic"},
        {7, -1, ""},
        {0, -1, ""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        file_copy_prefix(path, bad, cases[i].keep, cases[i].flip);
        err[0] = 0;
        mcl_status st = mcl_acl_load(m2, bad, opt2, 1, NULL, err, sizeof err);
        CHECK(st != MCL_OK && err[0] && strstr(err, cases[i].needle), "corrupt case %zu rejected: %s", i, err);
        mcl_acl *mo = NULL;
        CHECK(mcl_acl_open(ctx2, bad, &mo, err, sizeof err) != MCL_OK && mo == NULL,
              "corrupt case %zu: open fails: %s", i, err);
    }
    int na = 0;
    float *unchanged = read_all(m2, &na);
    CHECK(before && unchanged && na == nb && memcmp(before, unchanged, (size_t)na * sizeof(float)) == 0,
          "failed loads left the parameters untouched");
    free(before); free(unchanged);

    /* a model with another config */
    mcl_acl_config c4 = c;
    c4.dropout = 0.2f;
    mcl_acl *m4 = mcl_acl_create(ctx2, &c4);
    CHECK(m4 && mcl_acl_load(m4, path, NULL, 0, NULL, err, sizeof err) == MCL_ERR_INVALID &&
              strstr(err, "config key 'dropout' differs"),
          "different config named: %s", err);
    mcl_acl_free(m4);

    /* a checkpoint of another model kind */
    mcl_ckpt_save_desc d;
    memset(&d, 0, sizeof d);
    d.model_kind = "smn";
    d.params = m->params;
    CHECK(mcl_ckpt_save(NULL, bad, &d, err, sizeof err) == MCL_OK, "save a foreign checkpoint");
    mcl_acl *mo = NULL;
    CHECK(mcl_acl_open(ctx2, bad, &mo, err, sizeof err) == MCL_ERR_INVALID && strstr(err, "model kind 'smn'"),
          "foreign model kind named: %s", err);

    /* a save that cannot be written leaves the existing file as it was */
    char nodir[600];
    snprintf(nodir, sizeof nodir, "%s/no/such/dir/x.ckpt", dir);
    CHECK(mcl_acl_save(m, nodir, opt, NULL, 0, err, sizeof err) == MCL_ERR_IO, "unwritable path: %s", err);
    CHECK(mcl_acl_load(m2, path, opt2, 0, NULL, err, sizeof err) == MCL_OK, "original file still loads");

    free(after2);
    mcl_optim_free(opt2);
    mcl_acl_free(m2);
    mcl_ctx_free(ctx2);
    mcl_optim_free(opt);
    mcl_acl_free(m);
    mcl_ctx_free(ctx);
}

int main(void)
{
    tu_begin("test-acl-io", SEED);
    snprintf(dir, sizeof dir, "/tmp/test-acl-io.%ld", (long)getpid());
    const char *tmp = getenv("TMPDIR");
    if (tmp && *tmp) snprintf(dir, sizeof dir, "%s/test-acl-io.%ld", tmp, (long)getpid());
    if (!mkdtemp(strcat(dir, ".XXXXXX"))) {
        printf("cannot create a temporary directory\n");
        return 99;
    }
    test_config_text();
    test_checkpoints();
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) printf("note: could not remove %s\n", dir);
    return tu_summary();
}
