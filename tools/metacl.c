/* metacl.c — the command-line tool: `metacl <command> [options]`.
 * Exit codes: 0 ok, 1 runtime error, 2 usage error. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "cli.h"
#include "config.h"
#include "metacl.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: metacl <command> [options]\n"
            "commands:\n"
            "  devices [--json]               list the backends and OpenCL devices\n"
            "  selftest [--seed N] [--steps N] [--backend ref|opencl] [--device N|NAME]\n"
            "                                 train a small MLP on a synthetic task and check it learns\n"
            "  bench gemm [--json]            GFLOP/s of the reference GEMM\n"
            "  bench ops [--backend opencl] [--device N|NAME] [-o OP] [--json]\n"
            "                                 per-op times on a backend next to the reference\n"
            "  bench data [--json]            images/s of the stroke renderer\n"
            "  bench acl [--backend ref|opencl] [--only NAME,..] [--reps N] [--json]\n"
            "                                 srwm, Conv-4 and ACL meta-training step times\n"
            "  data prepare NAME [--data-dir DIR] [--instances N] [--seed N]\n"
            "                                 build a prepared image set (fmnist, hanzi, kanji, hershey)\n"
            "  data info NAME [--data-dir DIR] [--json]\n"
            "                                 classes, split sizes, mean/std, SHA-256 (verified)\n"
            "  data show NAME --out FILE.png [--classes N] [--samples M] [--seed N]\n"
            "                                 contact sheet of a set (NAME may be idx:IMG,LAB or pngdir:DIR)\n"
            "  train acl --config FILE [--set k=v].. [--out DIR] | --resume DIR\n"
            "                                 meta-train an ACL model (run directory: metrics, checkpoints)\n"
            "  eval acl --ckpt F.. --protocol seq|two-task|split-dil|split-cil --data SPEC..\n"
            "                                 evaluate checkpoints and baselines (tables, --json, --figures)\n"
            "  ckpt info FILE | ckpt export IN OUT\n"
            "                                 show a checkpoint; copy its model without optimizer state\n"
            "  plot RUN_DIR.. --out F.png [--y COLUMN] [--chance P]\n"
            "                                 learning curves from run directories\n"
            "  version                        print the version\n"
            "  help                           this text\n"
            "environment:\n"
            "  METACL_BACKEND=ref|opencl      default backend (--backend wins)\n"
            "  METACL_DEVICE=N|NAME           default OpenCL device (--device wins)\n"
            "  METACL_DATA=DIR                data directory of prepared sets (default data/cache)\n"
            "  METACL_KERNEL_DIR=DIR          load kernels/<family>.cl from DIR instead of the embedded copy\n"
            "  METACL_NO_CACHE=1              do not use the on-disk OpenCL program cache\n"
            "  OMP_NUM_THREADS=N              threads of the reference backend\n");
}

static int cmd_devices(int argc, char **argv)
{
    int json = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            json = 1;
        } else {
            fprintf(stderr, "metacl devices: unknown option '%s'\n", argv[i]);
            return 2;
        }
    }
    if (mcl_backends_print(stdout, json) != MCL_OK) {
        fprintf(stderr, "metacl devices: out of memory\n");
        return 1;
    }
    return 0;
}

/* Parse a non-negative integer option value; -1 on error. */
static long long parse_count(const char *s)
{
    if (!s || !*s) return -1;
    char *end = NULL;
    long long v = strtoll(s, &end, 10);
    if (*end || v < 0) return -1;
    return v;
}

/* selftest: the RNG known answer, then a 2-64-64-4 MLP learns 4 Gaussian blobs (chance 0.25). */
static int cmd_selftest(int argc, char **argv)
{
    long long seed = 1, steps = 200;
    const char *backend = NULL, *device = NULL;
    for (int i = 1; i < argc; i++) {
        long long *dst = NULL;
        int t = mcl_cli_take_value(argc, argv, &i, "--backend", &backend);
        if (t == 0) t = mcl_cli_take_value(argc, argv, &i, "--device", &device);
        if (t < 0) return 2;
        if (t > 0) continue;
        if (strcmp(argv[i], "--seed") == 0) dst = &seed;
        else if (strcmp(argv[i], "--steps") == 0) dst = &steps;
        if (!dst || i + 1 >= argc || (*dst = parse_count(argv[i + 1])) < 0) {
            fprintf(stderr, "metacl selftest: bad option '%s' (expected --seed N | --steps N | "
                    "--backend ref|opencl | --device N|NAME)\n", argv[i]);
            return 2;
        }
        i++;
    }
    if (steps < 1 || steps > 100000) {
        fprintf(stderr, "metacl selftest: --steps must be in 1..100000\n");
        return 2;
    }
    printf("selftest: seed %lld, %lld steps\n", seed, steps);
    /* Philox4x32-10 known answer (Random123 kat_vectors, counter = key = 0). */
    uint32_t ctr[4] = {0, 0, 0, 0}, key[2] = {0, 0}, out[4];
    mcl_philox4x32_10(ctr, key, out);
    if (out[0] != 0x6627e8d5u || out[3] != 0x9b00dbd8u) {
        fprintf(stderr, "selftest: Philox known-answer test FAILED\n");
        return 1;
    }
    printf("selftest: Philox4x32-10 known answer ok\n");

    mcl_ctx *ctx = NULL;
    int orc = mcl_cli_open_ctx(backend, device, &ctx);
    if (orc) return orc;
    printf("selftest: backend %s\n", mcl_ctx_backend_name(ctx));
    mcl_ctx_set_seed(ctx, (uint64_t)seed);
    enum { NPTS = 512, NCLS = 4, HID = 64 };
    static float xs[NPTS * 2], ys[NPTS];
    mcl_rng r;
    mcl_rng_init(&r, (uint64_t)seed, 100);
    for (int i = 0; i < NPTS; i++) {
        int c = i % NCLS;
        xs[2 * i] = (c & 1 ? 1.5f : -1.5f) + 0.5f * mcl_rng_next_normal(&r);
        xs[2 * i + 1] = (c & 2 ? 1.5f : -1.5f) + 0.5f * mcl_rng_next_normal(&r);
        ys[i] = (float)c;
    }
    int rc = 1;
    mcl_params *P = mcl_params_create(ctx);
    mcl_optim *opt = NULL;
    mcl_tensor *x = mcl_tensor_new(ctx, NPTS, 2, 0, 0), *y = mcl_tensor_new(ctx, NPTS, 0, 0, 0);
    int64_t s1[2] = {2, HID}, s2[2] = {HID, HID}, s3[2] = {HID, NCLS}, b1[1] = {HID}, b3[1] = {NCLS};
    mcl_tensor *W1 = mcl_params_add(P, "W1", 2, s1), *B1 = mcl_params_add(P, "b1", 1, b1);
    mcl_tensor *W2 = mcl_params_add(P, "W2", 2, s2), *B2 = mcl_params_add(P, "b2", 1, b1);
    mcl_tensor *W3 = mcl_params_add(P, "W3", 2, s3), *B3 = mcl_params_add(P, "b3", 1, b3);
    if (!x || !y || !W1 || !B1 || !W2 || !B2 || !W3 || !B3) goto done;
    mcl_tensor_write(x, xs, NPTS * 2);
    mcl_tensor_write(y, ys, NPTS);
    mcl_tensor_randn(W1, (uint64_t)seed, 1, 0.0f, 0.7f);
    mcl_tensor_randn(W2, (uint64_t)seed, 2, 0.0f, 0.125f);
    mcl_tensor_randn(W3, (uint64_t)seed, 3, 0.0f, 0.125f);
    mcl_optim_config oc = {0};
    oc.kind = MCL_OPTIM_ADAM;
    oc.sched.kind = MCL_SCHED_CONSTANT;
    oc.sched.base_lr = 1e-2f;
    if (mcl_optim_create(ctx, &oc, P, &opt) != MCL_OK) goto done;
    float first = 0, last = 0;
    for (long long st = 1; st <= steps; st++) {
        mcl_tensor *h = mcl_relu(ctx, mcl_bias_add(ctx, mcl_matmul(ctx, x, W1, 0, 0), B1));
        h = mcl_relu(ctx, mcl_bias_add(ctx, mcl_matmul(ctx, h, W2, 0, 0), B2));
        mcl_tensor *logits = mcl_bias_add(ctx, mcl_matmul(ctx, h, W3, 0, 0), B3);
        mcl_tensor *loss = mcl_cross_entropy(ctx, logits, y);
        if (!loss || mcl_backward(ctx, loss) != MCL_OK || mcl_optim_step(opt) != MCL_OK) goto done;
        last = mcl_tensor_item(loss, 0);
        if (st == 1) first = last;
        if (st == 1 || st % 50 == 0) printf("selftest: step %4lld  loss %.4f\n", st, (double)last);
        mcl_optim_zero_grad(opt);
        mcl_ctx_reset(ctx);
    }
    /* accuracy */
    mcl_no_grad_begin(ctx);
    mcl_tensor *h = mcl_relu(ctx, mcl_bias_add(ctx, mcl_matmul(ctx, x, W1, 0, 0), B1));
    h = mcl_relu(ctx, mcl_bias_add(ctx, mcl_matmul(ctx, h, W2, 0, 0), B2));
    mcl_tensor *logits = mcl_bias_add(ctx, mcl_matmul(ctx, h, W3, 0, 0), B3);
    mcl_no_grad_end(ctx);
    static float lg[NPTS * NCLS];
    if (!logits || mcl_tensor_read(logits, lg, NPTS * NCLS) != MCL_OK) goto done;
    int correct = 0;
    for (int i = 0; i < NPTS; i++) {
        int best = 0;
        for (int c = 1; c < NCLS; c++)
            if (lg[i * NCLS + c] > lg[i * NCLS + best]) best = c;
        correct += best == (int)ys[i];
    }
    double acc = (double)correct / NPTS;
    printf("selftest: loss %.4f -> %.4f, training accuracy %.3f (chance 0.25)\n", (double)first,
           (double)last, acc);
    rc = acc > 0.9 && last < first ? 0 : 1;
    printf("selftest: %s\n", rc == 0 ? "ok" : "FAILED (did not learn)");
done:
    if (mcl_ctx_status(ctx) != MCL_OK) fprintf(stderr, "selftest: %s\n", mcl_ctx_error(ctx));
    mcl_optim_free(opt);
    mcl_params_free(P);
    mcl_tensor_free(x);
    mcl_tensor_free(y);
    mcl_ctx_free(ctx);
    return rc;
}

static int cmd_bench(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
        fprintf(argc < 2 ? stderr : stdout, "usage: metacl bench gemm|ops|data|acl [options] (--help for each)\n");
        return argc < 2 ? 2 : 0;
    }
    if (strcmp(argv[1], "gemm") == 0) return mcl_cli_bench_gemm(argc - 1, argv + 1);
    if (strcmp(argv[1], "ops") == 0) return mcl_cli_bench_ops(argc - 1, argv + 1);
    if (strcmp(argv[1], "data") == 0) return mcl_cli_bench_data(argc - 1, argv + 1);
    if (strcmp(argv[1], "acl") == 0) return mcl_cli_bench_acl(argc - 1, argv + 1);
    fprintf(stderr, "metacl bench: unknown benchmark '%s' (available: gemm, ops, data, acl)\n", argv[1]);
    return 2;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(cmd, "version") == 0 || strcmp(cmd, "--version") == 0) {
        printf("metacl %s\n", PACKAGE_VERSION);
        return 0;
    }
    if (strcmp(cmd, "devices") == 0) return cmd_devices(argc - 1, argv + 1);
    if (strcmp(cmd, "selftest") == 0) return cmd_selftest(argc - 1, argv + 1);
    if (strcmp(cmd, "bench") == 0) return cmd_bench(argc - 1, argv + 1);
    if (strcmp(cmd, "train") == 0) return mcl_cli_train(argc - 1, argv + 1);
    if (strcmp(cmd, "eval") == 0) return mcl_cli_eval(argc - 1, argv + 1);
    if (strcmp(cmd, "ckpt") == 0) return mcl_cli_ckpt(argc - 1, argv + 1);
    if (strcmp(cmd, "plot") == 0) return mcl_cli_plot(argc - 1, argv + 1);
    if (strcmp(cmd, "data") == 0) return mcl_cli_data(argc - 1, argv + 1);
    fprintf(stderr, "metacl: unknown command '%s'\n", cmd);
    usage(stderr);
    return 2;
}
