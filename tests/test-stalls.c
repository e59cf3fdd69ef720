/* test-stalls.c — the OpenCL backend's counters over the harness's real training step:
 * at most ONE blocking host call per training step (the step's metrics, read once after its
 * optimizer step), for every family, so a stall cannot creep back unnoticed.
 *
 * For each family (acl, oct, smn on its supervised Online-X task, lm) a tiny config is
 * trained through mcl_train_session_step (src/learn/train.c: the family's step_loss with the
 * metrics it logs, backward, the optimizer step) on generated data (tools/cli/bench_train.c, the
 * benches' own helper): one warm-up step, then STEPS steps whose counters (mcl_ctx_stats) are
 * checked: blocking calls per step <= 1, the metrics were read (d->h bytes > 0), and the
 * enqueues per step are at most the family's ceiling (max_enqueues). The
 * enqueues, blocking calls and bytes per step are printed (the numbers of
 * doc/opencl-backend.md come from `metacl bench B --only train_step`, the benches' shapes).
 *
 * Can fail: with METACL_TEST_STALL=1 (a test-hook build) the harness reads the loss before
 * backward as it used to; the same check must then see 2 blocking calls per step. Without test
 * hooks, an extra read of a parameter inside the measured step stands in for it.
 *
 * The pieces first: a staged (non-blocking) write keeps the host's values when the array is
 * overwritten at once; cross_entropy checks labels the host wrote without a blocking call,
 * and refuses them after a copy put an out-of-range value in (the host's knowledge dropped).
 *
 * SMN runs twice: on its supervised Online-X task and as the WCST agent, whose episodes act
 * and score on the device (ops.def wcst_act: no read per card; doc/opencl-backend.md).
 *
 * Exit 77 (SKIP) only when no OpenCL device exists (or the build has no OpenCL).
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_run.h"
#include "metacl.h"
#include "profile.h"
#include "testutil.h"

#define SEED 20261128u
#define STEPS 2

/* max_enqueues: the launch ceiling per step, the count measured on PoCL when it was last
 * lowered (doc/opencl-backend.md) plus ENQ_SLACK for devices that split a launch differently;
 * a change that adds launches to a family's step fails here (lower it when launches go). */
typedef struct family_case {
    const char *name, *family, *config;
    uint64_t max_enqueues;
} family_case;
#define ENQ_SLACK(n) ((n) + (n) * 3 / 100) /* 3 %: chunking of huge launches, device limits */

static const family_case cases[] = {
    {"acl", "acl", "model.n_way = 3\nmodel.hidden = 16\nmodel.heads = 2\nmodel.layers = 1\n"
            "model.conv_channels = 4\nmodel.image_size = 16\nmodel.feature_norm = batch\ntask.n_way = 3\ntask.k_shot = 2\n"
            "task.n_tasks = 2\ndata.domains = @IMAGES@\ntrain.batch = 2\ntrain.steps = 100\n"
            "train.clip = 1\n", ENQ_SLACK(644)},
    {"oct", "oct", "model.arch = pi\nmodel.channels = 4\nmodel.width = 16\nmodel.blocks = 1\n"
            "model.heads = 2\nmodel.kv_heads = 1\nmodel.head_dim = 8\nmodel.ffw_mult = 2\n"
            "model.window = 16\nmodel.n_way = 3\ndata.source = @IMAGES@\ndata.split = all\n"
            "stream.tasks = 4\nstream.per_task = 20\nonline.streams = 2\ntrain.batch = 5\ntrain.steps = 0\n",
     ENQ_SLACK(107)},
    {"smn", "smn", "task = onlinex\nmodel.arch = resnet\nmodel.value_head = 0\nmodel.width = 4\nmodel.n_out = 5\n"
            "model.k = 2\ndata.source = @IMAGES@\ndata.split = all\nstream.tasks = 200\n"
            "stream.len_min = 2\nstream.len_max = 3\ntrain.batch = 4\ntrain.steps = 100\n",
     ENQ_SLACK(452)},
    /* the WCST agent: its 3 episodes act and score on the device (ops.def wcst_act) */
    {"wcst", "smn", "task = wcst\nmodel.hidden = 16\nmodel.layers = 1\nmodel.meta_hidden = 4\nmodel.k = 3\n"
                    "train.steps = 100\n", ENQ_SLACK(214)},
    {"lm", "lm", "model.layers = 1\nmodel.width = 16\nmodel.heads = 2\nmodel.head_dim = 8\n"
           "model.ffw = 32\nmodel.mem_len = 8\nsmn.k = 2\nsmn.fast_len = 8\nsmn.seg_len = 8\n"
           "data.dir = @TEXT@\ndata.block = 500\ndata.val_chars = 500\ndata.eval_block = 500\n"
           "train.batch = 2\ntrain.steps = 100\ntrain.clip = 0.5\n", ENQ_SLACK(164)},
};
#define N_CASES ((int)(sizeof cases / sizeof cases[0]))

/* Train `c` for one warm-up and STEPS measured steps; *per = the counters per measured step
 * (means; blocking as the largest of any step). extra_read: one more blocking read inside
 * every measured step. Returns 0 when the steps ran. */
static int measure(mcl_ctx *ctx, const family_case *c, int extra_read, mcl_backend_stats *per,
                   uint64_t *max_blocking)
{
    mcl_bench_train *b = mcl_bench_train_open(ctx, c->family, c->config);
    if (!b) return 1;
    int rc = mcl_bench_train_step(b, NULL); /* warm-up: first-use allocations, program builds */
    mcl_tensor *probe = extra_read ? mcl_tensor_create(ctx, 1, (const int64_t[]){4}) : NULL;
    if (probe) mcl_tensor_fill(probe, 1.0f);
    memset(per, 0, sizeof *per);
    *max_blocking = 0;
    for (int s = 0; s < STEPS && rc == 0; s++) {
        mcl_backend_stats a, z, d;
        mcl_ctx_stats(ctx, &a);
        rc = mcl_bench_train_step(b, NULL);
        float v[4];
        if (rc == 0 && probe) rc = mcl_tensor_read(probe, v, 4) != MCL_OK;
        mcl_ctx_stats(ctx, &z);
        mcl_backend_stats_sub(&d, &z, &a);
        if (d.blocking > *max_blocking) *max_blocking = d.blocking;
        per->enqueues += d.enqueues / STEPS;
        per->op_calls += d.op_calls / STEPS;
        per->blocking += d.blocking;
        per->bytes_h2d += d.bytes_h2d / STEPS;
        per->bytes_d2h += d.bytes_d2h / STEPS;
        per->nonblocking += d.nonblocking / STEPS;
    }
    mcl_tensor_free(probe);
    mcl_bench_train_free(b);
    return rc;
}

/* The pieces under the harness: a staged write keeps the host's values even when the array
 * changes at once; labels the host wrote are checked without a read, and checked again (and
 * refused) once a copy has put an out-of-range value into them. */
static void check_pieces(mcl_ctx *ctx)
{
    const int64_t ls[2] = {3, 4}, ts[1] = {3};
    mcl_tensor *logits = mcl_tensor_create(ctx, 2, ls), *lab = mcl_tensor_create(ctx, 1, ts);
    mcl_tensor *bad = mcl_tensor_create(ctx, 1, ts);
    if (!CHECK(logits && lab && bad, "tensors")) return;
    float h[3] = {0, 1, 3}, back[3] = {-1, -1, -1};
    CHECK(mcl_tensor_fill(logits, 0.5f) == MCL_OK && mcl_tensor_write(lab, h, 3) == MCL_OK, "write");
    h[0] = h[1] = h[2] = 99; /* the write was staged: the device must get 0, 1, 3 */
    mcl_backend_stats a, z, d;
    mcl_ctx_stats(ctx, &a);
    mcl_tensor *ce = mcl_cross_entropy(ctx, logits, lab);
    mcl_ctx_stats(ctx, &z);
    mcl_backend_stats_sub(&d, &z, &a);
    CHECK(ce != NULL, "cross_entropy on labels the host wrote: %s", mcl_ctx_error(ctx));
    CHECK(d.blocking == 0, "cross_entropy's label check made %llu blocking calls (host-known labels)",
          (unsigned long long)d.blocking);
    CHECK(mcl_tensor_read(lab, back, 3) == MCL_OK && back[0] == 0 && back[1] == 1 && back[2] == 3,
          "staged write: read back %g %g %g, want 0 1 3", back[0], back[1], back[2]);
    CHECK(mcl_tensor_fill(bad, 7.0f) == MCL_OK && mcl_tensor_copy_into(lab, bad) == MCL_OK, "copy");
    CHECK(mcl_cross_entropy(ctx, logits, lab) == NULL && mcl_ctx_status(ctx) == MCL_ERR_INVALID,
          "a label copied out of range (7 of 4 classes) must be refused");
    mcl_ctx_clear_error(ctx);
    mcl_tensor_free(logits);
    mcl_tensor_free(lab);
    mcl_tensor_free(bad);
    mcl_ctx_reset(ctx);
}

int main(void)
{
    tu_begin("test-stalls", SEED);
    /* The counters of the real step: `make check` sets METACL_DEBUG_POISON=1, whose NaN
     * fills of fresh outputs are launches a run does not make. */
    unsetenv("METACL_DEBUG_POISON");
    mcl_ctx *ctx = NULL;
    char err[512];
    mcl_status s = mcl_ctx_create(&ctx, MCL_BACKEND_OPENCL, NULL, err, sizeof err);
    if (s == MCL_ERR_UNSUPPORTED) {
        printf("test-stalls: no OpenCL device (%s): SKIP\n", err);
        return TU_SKIP;
    }
    if (!CHECK(s == MCL_OK, "cannot open the default OpenCL device: %s", err)) return tu_summary();
    mcl_ctx_set_seed(ctx, SEED);
    check_pieces(ctx);
    const char *only = getenv("TEST_STALLS_ONLY"); /* debugging: one family */
    for (int i = 0; i < N_CASES; i++) {
        const family_case *c = &cases[i];
        if (only && *only && strcmp(only, c->name) != 0) continue;
        mcl_backend_stats per;
        uint64_t maxb = 0;
        int rc = measure(ctx, c, 0, &per, &maxb);
        if (!CHECK(rc == 0, "%s: the training steps failed", c->name)) continue;
        printf("  %-4s per step: %llu op calls, %llu enqueues, %llu blocking (at most %llu in one "
               "step), %llu non-blocking transfers, %llu bytes h->d, %llu bytes d->h\n",
               c->name, (unsigned long long)per.op_calls, (unsigned long long)per.enqueues,
               (unsigned long long)per.blocking / STEPS, (unsigned long long)maxb,
               (unsigned long long)per.nonblocking, (unsigned long long)per.bytes_h2d,
               (unsigned long long)per.bytes_d2h);
        CHECK(maxb <= 1, "%s: %llu blocking host calls in one training step (at most 1: the "
              "metrics after the optimizer step)", c->name, (unsigned long long)maxb);
        CHECK(per.bytes_d2h > 0, "%s: the step's metrics were never read", c->name);
        CHECK(per.enqueues <= c->max_enqueues,
              "%s: %llu enqueues per training step, more than the ceiling %llu (launches crept "
              "back in)", c->name, (unsigned long long)per.enqueues,
              (unsigned long long)c->max_enqueues);
    }

    /* Can fail: the same ACL step with one more layer (~a tenth more launches) is over the
     * ACL ceiling. */
    {
        family_case more = cases[0];
        size_t n = strlen(more.config) + 1;
        char *cfg = malloc(n);
        if (CHECK(cfg != NULL, "out of memory")) {
            memcpy(cfg, more.config, n);
            char *at = strstr(cfg, "model.layers = 1");
            if (CHECK(at != NULL, "the ACL case has no 'model.layers = 1'")) at[15] = '2';
            more.config = cfg;
            mcl_backend_stats per;
            uint64_t maxb = 0;
            if (CHECK(measure(ctx, &more, 0, &per, &maxb) == 0, "acl with 2 layers: the steps failed"))
                CHECK(per.enqueues > more.max_enqueues,
                      "acl with 2 layers: %llu enqueues per step, the ceiling %llu must catch it",
                      (unsigned long long)per.enqueues, (unsigned long long)more.max_enqueues);
            printf("  acl with 2 layers: %llu enqueues per step (caught: > %llu)\n",
                   (unsigned long long)per.enqueues, (unsigned long long)more.max_enqueues);
            free(cfg);
        }
    }

    /* Can fail: an extra blocking read in the step is caught by the same check. */
    const family_case *c = &cases[0];
    mcl_backend_stats per;
    uint64_t maxb = 0;
#ifdef MCL_TEST_HOOKS
    setenv("METACL_TEST_STALL", "1", 1); /* the harness reads the loss before backward */
    int rc = measure(ctx, c, 0, &per, &maxb);
    unsetenv("METACL_TEST_STALL");
    const char *how = "METACL_TEST_STALL=1 (the loss read before backward)";
#else
    int rc = measure(ctx, c, 1, &per, &maxb);
    const char *how = "an extra read in the step";
#endif
    if (CHECK(rc == 0, "%s with %s: the training steps failed", c->family, how))
        CHECK(maxb > 1, "%s with %s: %llu blocking calls per step, the check must catch it",
              c->family, how, (unsigned long long)maxb);
    else
        (void)per;
    printf("  %s with %s: at most %llu blocking calls in one step (caught: > 1)\n", c->family,
           how, (unsigned long long)maxb);
    mcl_ctx_free(ctx);
    return tu_summary();
}
