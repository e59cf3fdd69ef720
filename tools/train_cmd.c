/* train_cmd.c — `metacl train FAMILY`: train a model of any family on the harness
 * (src/learn/train.h; the families: src/models/families.c).
 *
 *   metacl train FAMILY --config FILE [--set key=value]... [--out RUN_DIR]
 *                       [--backend ref|opencl] [--device N|NAME] [--quiet]
 *   metacl train FAMILY --resume RUN_DIR [--set key=value]... [--backend ...]
 *
 * Exit: 0 done, 1 runtime error (data, config file content, NaN loss, I/O), 2 usage.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "train.h"
#include "cli.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: metacl train acl --config FILE [--set key=value]... [--out RUN_DIR]\n"
            "                        [--backend ref|opencl] [--device N|NAME] [--quiet]\n"
            "       metacl train acl --resume RUN_DIR [--set key=value]... [--backend ...]\n"
            "  --config FILE   training config (data/configs/*.conf; keys: doc/acl.md)\n"
            "  --set k=v       override one key (repeatable; applied after the file)\n"
            "  --out DIR       run directory (default runs/<config name>); must not hold a run\n"
            "  --resume DIR    continue the run in DIR exactly where its last checkpoint is\n"
            "  --quiet         no progress line and no log lines on stdout\n"
            "A run directory gets config.txt, metrics.csv, log.txt, last.ckpt, best.ckpt.\n");
}

int mcl_cli_train(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    const mcl_family *fam = mcl_family_find(argv[1]);
    if (!fam) {
        fprintf(stderr, "metacl train: unknown model family '%s' (available:", argv[1]);
        for (const mcl_family *const *f = mcl_families(); *f; f++) fprintf(stderr, " %s", (*f)->kind);
        fprintf(stderr, ")\n");
        return 2;
    }
    const char *config = NULL, *out = NULL, *resume = NULL, *backend = NULL, *device = NULL;
    int quiet = 0, n_set = 0;
    const char **sets = calloc((size_t)argc, sizeof *sets);
    if (!sets) return 1;
    int rc = 0;
    for (int i = 2; i < argc && rc == 0; i++) {
        const char *v = NULL;
        int r;
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            printf("\nkeys of `metacl train %s` (config files and --set; default, meaning, range):\n", fam->kind);
            mcl_run_cfg_print_help(stdout, fam);
            free(sets);
            return 0;
        } else if (!strcmp(argv[i], "--quiet")) {
            quiet = 1;
        } else if ((r = mcl_cli_take_value(argc, argv, &i, "--config", &config)) != 0 ||
                   (r = mcl_cli_take_value(argc, argv, &i, "--out", &out)) != 0 ||
                   (r = mcl_cli_take_value(argc, argv, &i, "--resume", &resume)) != 0 ||
                   (r = mcl_cli_take_value(argc, argv, &i, "--backend", &backend)) != 0 ||
                   (r = mcl_cli_take_value(argc, argv, &i, "--device", &device)) != 0) {
            if (r < 0) rc = 2;
        } else if ((r = mcl_cli_take_value(argc, argv, &i, "--set", &v)) != 0) {
            if (r < 0) rc = 2;
            else if (!strchr(v, '=')) {
                fprintf(stderr, "metacl train %s: --set '%s': want key=value\n", fam->kind, v);
                rc = 2;
            } else
                sets[n_set++] = v;
        } else {
            fprintf(stderr, "metacl train %s: unknown option '%s'\n", fam->kind, argv[i]);
            usage(stderr);
            rc = 2;
        }
    }
    if (rc == 0 && !config == !resume) {
        fprintf(stderr, "metacl train %s: give exactly one of --config FILE or --resume RUN_DIR\n", fam->kind);
        rc = 2;
    }
    if (rc == 0 && resume && out) {
        fprintf(stderr, "metacl train %s: --out does not go with --resume (the run stays in its directory)\n", fam->kind);
        rc = 2;
    }
    mcl_run_cfg cfg;
    char err[2048], dir[1024];
    if (mcl_run_cfg_init(&cfg, fam, err, sizeof err) != MCL_OK) {
        fprintf(stderr, "metacl train %s: %s\n", fam->kind, err);
        free(sets);
        return 1;
    }
    if (rc == 0 && config) {
        if (mcl_run_cfg_load(&cfg, config, err, sizeof err) != MCL_OK) {
            fprintf(stderr, "metacl train %s: %s\n", fam->kind, err);
            rc = 1;
        }
        for (int i = 0; rc == 0 && i < n_set; i++)
            if (mcl_run_cfg_parse(&cfg, sets[i], "--set", err, sizeof err) != MCL_OK) {
                fprintf(stderr, "metacl train %s: %s\n", fam->kind, err);
                rc = 2;
            }
        if (rc == 0 && mcl_run_cfg_check(&cfg, err, sizeof err) != MCL_OK) {
            fprintf(stderr, "metacl train %s: %s\n", fam->kind, err);
            rc = 1;
        }
        if (rc == 0 && !out) { /* runs/<config file name without directory and .conf> */
            const char *base = strrchr(config, '/');
            base = base ? base + 1 : config;
            size_t n = strlen(base);
            if (n > 5 && !strcmp(base + n - 5, ".conf")) n -= 5;
            snprintf(dir, sizeof dir, "runs/%.*s", (int)n, base);
            out = dir;
        }
    }
    mcl_ctx *ctx = NULL;
    if (rc == 0) rc = mcl_cli_open_ctx(backend, device, &ctx);
    if (rc == 0) {
        mcl_train_opts o;
        memset(&o, 0, sizeof o);
        o.run_dir = resume ? resume : out;
        o.resume = resume != NULL;
        o.progress = !quiet && isatty(STDERR_FILENO);
        o.log = quiet ? NULL : stdout;
        o.overrides = sets;
        o.n_overrides = resume ? n_set : 0;
        mcl_train_result res;
        if (mcl_train_run(ctx, fam, config ? &cfg : NULL, &o, &res, err, sizeof err) != MCL_OK) {
            fprintf(stderr, "metacl train %s: %s\n", fam->kind, err);
            rc = 1;
        } else if (!quiet) {
            printf("run %s: %lld steps, last loss %.4f, best validation %.4f, left chance at step "
                   "%lld, %.1f s of training\n",
                   o.run_dir, (long long)res.steps_done, res.last_loss, res.best_val,
                   (long long)res.chance_step, res.train_seconds);
        }
        mcl_ctx_free(ctx);
    }
    mcl_run_cfg_free(&cfg);
    free(sets);
    return rc;
}
