/* metacl.c — the command-line tool: `metacl <command> [options]`.
 * Exit codes: 0 ok, 1 runtime error, 2 usage error. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "cli.h"
#include "dist.h"
#include "progress.h"
#include "config.h"
#include "metacl.h"
#include "util.h"

/* The commands: dispatch and the listing of `metacl --help`. Groups (bench, data, ckpt)
 * list their own subcommand tables. */
typedef struct command {
    const char *name;
    const char *synopsis;    /* arguments after the name ("" = none) */
    const char *summary;     /* one line */
    mcl_cli_fn fn;           /* gets argv[0] = the command word */
    const mcl_cli_sub *subs; /* a group: its subcommands (listed instead of synopsis/summary) */
    const int *n_subs;
} command;

static int cmd_devices(int argc, char **argv);
static int cmd_selftest(int argc, char **argv);
static int cmd_bench(int argc, char **argv);
static int cmd_version(int argc, char **argv);
static int cmd_help(int argc, char **argv);
static int cmd_sample(int argc, char **argv);

static const command commands[] = {
    {"devices", "[--json]", "list the backends and OpenCL devices", cmd_devices, NULL, NULL},
    {"selftest", "[--seed N] [--steps N] [--backend ref|opencl] [--device N|NAME]",
     "train a small MLP on a synthetic task and check it learns", cmd_selftest, NULL, NULL},
    {"bench", "", "benchmarks", cmd_bench, mcl_cli_bench_subs, &mcl_cli_n_bench_subs},
    {"data", "", "prepared image sets", mcl_cli_data, mcl_cli_data_subs, &mcl_cli_n_data_subs},
    {"train", "FAMILY --config FILE [--set k=v].. [--out DIR] | FAMILY --resume DIR",
     "meta-train a model (run directory: metrics, checkpoints; families: metacl train --help)",
     mcl_cli_train, NULL, NULL},
    {"online", "--config FILE [--set k=v].. [--out DIR] | --resume DIR | --report DIR..",
     "train a transformer online on a stream (replay streams) and report it (doc/oct.md)",
     mcl_cli_online, NULL, NULL},
    {"eval", "FAMILY --ckpt F.. --protocol seq|two-task|split-dil|split-cil --data SPEC..",
     "evaluate checkpoints and baselines (tables, --json, --figures)", mcl_cli_eval, NULL, NULL},
    {"sample", "lm --ckpt FILE [--prompt TEXT] [-n N] [-t T]", "text from a language model (doc/lm.md)", cmd_sample,
     NULL, NULL},
    {"ckpt", "", "checkpoints", mcl_cli_ckpt, mcl_cli_ckpt_subs, &mcl_cli_n_ckpt_subs},
    {"plot", "RUN_DIR.. --out F.png [--y COLUMN] [--chance P]", "learning curves from run directories",
     mcl_cli_plot, NULL, NULL},
    {"stats", "ci|target|paired ...", "95 % intervals over runs, met / not met / inconclusive, paired tie (doc/architecture.md)",
     mcl_cli_stats, NULL, NULL},
    {"version", "", "print the version and build facts (also --version)", cmd_version, NULL, NULL},
    {"help", "", "this text (also -h, --help); `metacl <command> --help`: a command's options",
     cmd_help, NULL, NULL},
};
#define N_COMMANDS ((int)(sizeof commands / sizeof commands[0]))

static void usage(FILE *f)
{
    fprintf(f, "usage: metacl <command> [options]   (metacl <command> --help for its options)\n"
               "commands:\n");
    for (int i = 0; i < N_COMMANDS; i++) {
        const command *c = &commands[i];
        if (c->subs) {
            mcl_cli_list(f, c->name, c->subs, *c->n_subs);
        } else {
            mcl_cli_sub row = {c->name, c->synopsis, c->summary, c->fn};
            mcl_cli_list(f, NULL, &row, 1);
        }
    }
    fprintf(f,
            "environment:\n"
            "  METACL_BACKEND=ref|opencl       default backend (--backend wins)\n"
            "  METACL_DEVICE=N|NAME            default OpenCL device (--device wins; else the first GPU,\n"
            "                                  accelerator or CPU device of `metacl devices`)\n"
            "  METACL_SYNC=1                   OpenCL: finish the queue after every op and name the op that\n"
            "                                  fails (the first thing to try when a GPU run fails)\n"
            "  METACL_DATA=DIR                 data directory of prepared sets (default ./data/cache if it exists, else $XDG_DATA_HOME/metacl)\n"
            "  METACL_KERNEL_DIR=DIR           load kernels/<family>.cl from DIR instead of the embedded copy\n"
            "  METACL_NO_CACHE=1               do not use the on-disk OpenCL program cache\n"
            "  OMP_NUM_THREADS=N               threads of the reference backend\n"
            "exit status: 0 ok, 1 runtime error, 2 usage error\n");
}

static const mcl_cli_cmd help_cmd = {.name = "help", .synopsis = "", .about = "The commands of metacl."};

static int cmd_help(int argc, char **argv)
{
    mcl_cli_parsed p;
    int rc = mcl_cli_parse(&help_cmd, argc, argv, NULL, &p);
    if (rc != MCL_CLI_GO) return rc;
    usage(stdout);
    return 0;
}

static const mcl_cli_cmd version_cmd = {.name = "version", .synopsis = "",
                                        .about = "The package version and how this binary was built."};

static int cmd_version(int argc, char **argv)
{
    mcl_cli_parsed p;
    int rc = mcl_cli_parse(&version_cmd, argc, argv, NULL, &p);
    if (rc != MCL_CLI_GO) return rc;
    printf("metacl %s\n", PACKAGE_VERSION);
#ifdef MCL_HAVE_OPENCL
    printf("OpenCL backend: yes");
#ifdef MCL_CLBLAST_VERSION
    printf(" (CLBlast %s)", MCL_CLBLAST_VERSION);
#endif
    printf("\n");
#else
    printf("OpenCL backend: no\n");
#endif
    printf("MPI: %s\n", mcl_dist_built_with_mpi() ? "yes (mpirun -np N metacl ...)" : "no");
#ifdef _OPENMP
    printf("OpenMP: yes (%d), wait policy %s\n", (int)_OPENMP, mcl_cli_omp_wait_policy_name());
    printf("OpenMP team: %s\n", mcl_cli_omp_team_policy_name());
#else
    printf("OpenMP: no\n");
#endif
    if (mcl_cli_git_commit())
        printf("commit: %s\n", mcl_cli_git_commit());
#ifdef __VERSION__
    printf("compiler: %s\n", __VERSION__);
#endif
    return 0;
}

typedef struct devices_opts {
    int json;
} devices_opts;

static const mcl_key devices_keys[] = {
    MCL_OPT_FLAG("json", 0, devices_opts, json, "print JSON instead of text"),
};
static const mcl_cli_cmd devices_cmd = {
    .name = "devices", .synopsis = "[--json]",
    .about = "The backends built in, the OpenCL devices found (index for --device, type, platform, "
             "driver, limits; the default marked: the first GPU, else accelerator, else CPU) and "
             "every OpenCL platform, with the error of one whose devices cannot be listed.",
    .opts = devices_keys, .n_opts = 1};

static int cmd_devices(int argc, char **argv)
{
    devices_opts o;
    mcl_cli_parsed p;
    int rc = mcl_cli_parse(&devices_cmd, argc, argv, &o, &p);
    if (rc != MCL_CLI_GO) return rc;
    if (mcl_backends_print(stdout, o.json) != MCL_OK) {
        fprintf(stderr, "metacl devices: out of memory\n");
        return 1;
    }
    return 0;
}

typedef struct selftest_opts {
    uint64_t seed;
    int steps;
    char backend[64], device[256];
} selftest_opts;

static const mcl_key selftest_keys[] = {
    MCL_OPT_U64("seed", 0, selftest_opts, seed, "1", "N", "seed of the data and the initial weights"),
    MCL_OPT_INT("steps", 0, selftest_opts, steps, 1, 100000, "200", "N", "training steps"),
    MCL_OPT_BACKEND(selftest_opts, backend),
    MCL_OPT_DEVICE(selftest_opts, device),
};
static const mcl_cli_cmd selftest_cmd = {
    .name = "selftest", .synopsis = "[--seed N] [--steps N] [--backend ref|opencl] [--device N|NAME]",
    .about = "The Philox known answer, then a 2-64-64-4 MLP learns 4 Gaussian blobs (exit 0 when\n"
             "its training accuracy exceeds 0.9 and its loss fell).",
    .opts = selftest_keys, .n_opts = (int)(sizeof selftest_keys / sizeof selftest_keys[0])};

/* selftest: the RNG known answer, then a 2-64-64-4 MLP learns 4 Gaussian blobs (chance 0.25). */
static int cmd_selftest(int argc, char **argv)
{
    selftest_opts o;
    mcl_cli_parsed p;
    int prc = mcl_cli_parse(&selftest_cmd, argc, argv, &o, &p);
    if (prc != MCL_CLI_GO) return prc;
    const long long seed = (long long)o.seed, steps = o.steps;
    const char *backend = o.backend, *device = o.device;
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

const mcl_cli_sub mcl_cli_bench_subs[] = {
    {"gemm", "[--json] [--reps N] [--threads N]", "GFLOP/s of the reference GEMM", mcl_cli_bench_gemm},
    {"ops", "[--backend opencl] [--device N|NAME] [-o OP] [--json]",
     "per-op times on a backend next to the reference", mcl_cli_bench_ops},
    {"roofline", "[--threads N] [-o OP] [--json]",
     "FMA peak, memory bandwidth and each heavy op's fraction of its roof", mcl_cli_bench_roofline},
    {"data", "[--json] [--data-dir DIR] [--min-time S]", "images/s of the stroke renderer", mcl_cli_bench_data},
    {"acl", "[--backend ref|opencl] [--only NAME,..] [--reps N] [--json]",
     "srwm, Conv-4 and ACL meta-training step times", mcl_cli_bench_acl},
    {"oct", "[--backend ref|opencl] [--only NAME,..] [--reps N] [--json]",
     "online-transformer step and attention times", mcl_cli_bench_oct},
    {"smn", "[--backend ref|opencl] [--only NAME,..] [--reps N] [--json]",
     "Sparse-MetaNet window and plain-step times, window memory", mcl_cli_bench_smn},
    {"lm", "[--backend ref|opencl] [--only NAME,..] [--reps N] [--json]",
     "language-model training window, plain step and evaluation times, bytes/s", mcl_cli_bench_lm},
};
const int mcl_cli_n_bench_subs = (int)(sizeof mcl_cli_bench_subs / sizeof mcl_cli_bench_subs[0]);

static int cmd_bench(int argc, char **argv)
{
    return mcl_cli_dispatch("bench", mcl_cli_bench_subs, mcl_cli_n_bench_subs, argc, argv);
}

/* A command in an MPI job (`mpirun -np N metacl ...`, doc/distributed.md): every rank runs
 * it; rank 0 alone prints to stdout (the others' stdout goes to /dev/null) and writes files.
 * A rank that fails on its own stops the whole job (MPI_Abort) after its message; a failure
 * every rank knows of ends each rank normally. One process: just the command. */
static int run_command(const command *c, int argc, char **argv)
{
    char err[512];
    if (mcl_dist_init(&argc, &argv, err, sizeof err) != MCL_OK) {
        fprintf(stderr, "metacl: %s\n", err);
        return 1;
    }
    if (mcl_dist_size() > 1 && mcl_dist_rank() != 0) {
        mcl_progress_set_silent(1);
        if (!freopen("/dev/null", "w", stdout)) {
            fprintf(stderr, "metacl: %s: cannot silence stdout\n", mcl_dist_where());
            mcl_dist_abort(1);
        }
    }
    int rc = c->fn(argc, argv);
    if (rc != 0 && mcl_dist_size() > 1 && !mcl_dist_failure_is_shared()) {
        fprintf(stderr, "metacl: %s failed (exit %d): stopping every rank of the job\n",
                mcl_dist_where(), rc);
        mcl_dist_abort(rc);
    }
    mcl_dist_finalize();
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    mcl_cli_omp_wait_policy(argv); /* may execute metacl again (tools/cli/omp_wait.c) */
    mcl_cli_omp_team_policy();     /* the team follows the load (METACL_THREADS_FOLLOW_LOAD=0: fixed) */
    const char *cmd = argv[1];
    const char *limit = getenv("METACL_MEMORY_LIMIT");
    uint64_t lv = 0;
    if (limit && *limit && (mcl_parse_size(limit, &lv) != 0 || lv == 0)) {
        fprintf(stderr, "metacl: METACL_MEMORY_LIMIT='%s': want a size such as 512M or 64G\n", limit);
        return 2;
    }
    if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0) cmd = "help";
    if (strcmp(cmd, "--version") == 0) cmd = "version";
    for (int i = 0; i < N_COMMANDS; i++)
        if (strcmp(cmd, commands[i].name) == 0) return run_command(&commands[i], argc - 1, argv + 1);
    fprintf(stderr, "metacl: unknown command '%s'\n", cmd);
    usage(stderr);
    return 2;
}

/* `metacl sample lm ...` (the language models are the one family that generates). */
static int cmd_sample(int argc, char **argv)
{
    if (argc >= 2 && !strcmp(argv[1], "lm")) return mcl_cli_sample_lm(argc - 1, argv + 1);
    if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        printf("usage: metacl sample lm --ckpt FILE [--prompt TEXT] [-n N] [-t T] [--seed S]\n"
               "  (metacl sample lm --help for the options)\n");
        return 0;
    }
    fprintf(stderr, "metacl sample: which family? (lm: metacl sample lm --ckpt FILE)\n");
    return 2;
}
