/* cli_common.c — option helpers shared by the metacl subcommands. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

int mcl_cli_parse_backend(const char *name, mcl_backend_kind *kind)
{
    if (!name || !*name) name = getenv("METACL_BACKEND");
    if (!name || !*name || strcmp(name, "ref") == 0) {
        *kind = MCL_BACKEND_REF;
        return 0;
    }
    if (strcmp(name, "opencl") == 0) {
        *kind = MCL_BACKEND_OPENCL;
        return 0;
    }
    fprintf(stderr, "metacl: unknown backend '%s' (expected ref or opencl)\n", name);
    return 2;
}

int mcl_cli_open_ctx(const char *backend, const char *device, mcl_ctx **ctx)
{
    mcl_backend_kind kind;
    int rc = mcl_cli_parse_backend(backend, &kind);
    if (rc) return rc;
    char err[512];
    if (mcl_ctx_create(ctx, kind, device, err, sizeof err) != MCL_OK) {
        fprintf(stderr, "metacl: cannot open the %s backend: %s\n",
                kind == MCL_BACKEND_REF ? "ref" : "opencl", err);
        return 1;
    }
    return 0;
}

int mcl_cli_take_value(int argc, char **argv, int *i, const char *flag, const char **value)
{
    if (strcmp(argv[*i], flag) != 0) return 0;
    if (*i + 1 >= argc) {
        fprintf(stderr, "metacl: option %s needs a value\n", flag);
        return -1;
    }
    *value = argv[++*i];
    return 1;
}

int mcl_cli_parse_int(const char *s, long lo, long hi, int *out)
{
    int64_t v;
    if (mcl_parse_i64(s, lo, hi, &v)) return 1;
    *out = (int)v;
    return 0;
}
