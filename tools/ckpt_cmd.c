/* ckpt_cmd.c — `metacl ckpt info FILE` and `metacl ckpt export IN OUT`.
 *
 *   info    what a checkpoint holds: model kind, format version, writer, config, optimizer
 *           state, random state and counters (the whole file is verified)
 *   export  the model alone (config + parameters, no optimizer state): what data/checkpoints/
 *           ships; written atomically
 * Exit: 0 ok, 1 a bad file, 2 usage.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "acl.h"
#include "cli.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: metacl ckpt info FILE\n"
               "       metacl ckpt export IN OUT     (model only: config and parameters)\n");
}

/* Reads the whole checkpoint at path into the model it describes (a full load checks every
 * section) on a reference context; restore_rng: also its random state, which export keeps.
 * 0 on success; 1 after printing the error. Either way *ctx, *m and *info are to be freed. */
static int load_ckpt(const char *path, int restore_rng, mcl_ctx **ctx, mcl_acl **m,
                     mcl_ckpt_info *info, char *err, size_t len)
{
    *ctx = NULL;
    *m = NULL;
    memset(info, 0, sizeof *info);
    if (mcl_ctx_create(ctx, MCL_BACKEND_REF, NULL, err, len) != MCL_OK ||
        mcl_acl_open(*ctx, path, m, err, len) != MCL_OK ||
        mcl_acl_load(*m, path, NULL, restore_rng, info, err, len) != MCL_OK) {
        fprintf(stderr, "metacl ckpt: %s\n", err);
        return 1;
    }
    return 0;
}

int mcl_cli_ckpt(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    const int info_cmd = !strcmp(argv[1], "info"), export_cmd = !strcmp(argv[1], "export");
    if (!info_cmd && !export_cmd) {
        fprintf(stderr, "metacl ckpt: unknown subcommand '%s' (info, export)\n", argv[1]);
        return 2;
    }
    if (argc != (info_cmd ? 3 : 4)) {
        usage(stderr);
        return 2;
    }
    char err[1024];
    mcl_ctx *ctx;
    mcl_acl *m;
    mcl_ckpt_info info;
    int rc = load_ckpt(argv[2], export_cmd, &ctx, &m, &info, err, sizeof err);
    if (rc == 0 && info_cmd) {
        printf("%s: model %s, format %u, written by %s\n", argv[2], info.model_kind, info.version,
               info.created_by);
        printf("parameters: %lld in %d tensors\n", (long long)mcl_params_numel(mcl_acl_params(m)),
               mcl_params_count(mcl_acl_params(m)));
        printf("optimizer state: %s", info.has_optim ? "yes" : "no");
        if (info.has_optim) printf(" (%" PRId64 " steps)", info.optim_steps);
        printf("\nrandom state: seed %" PRIu64 ", next stream %" PRIu64 "\n", info.rng.seed,
               info.rng.counter);
        for (int i = 0; i < info.n_counters; i++)
            printf("counter %s = %" PRIu64 "\n", info.counters[i].name, info.counters[i].value);
        printf("config:\n%s", info.config);
    } else if (rc == 0) {
        if (mcl_acl_save(m, argv[3], NULL, info.counters, info.n_counters, err, sizeof err) !=
            MCL_OK) {
            fprintf(stderr, "metacl ckpt: %s\n", err);
            rc = 1;
        } else {
            printf("wrote %s (model only, counters kept)\n", argv[3]);
        }
    }
    mcl_ckpt_info_free(&info);
    mcl_acl_free(m);
    mcl_ctx_free(ctx);
    return rc;
}
