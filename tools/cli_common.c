/* cli_common.c — option helpers shared by the metacl subcommands. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "train.h"

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
    if (device && !*device) device = NULL; /* an option not given: "" */
    if (mcl_ctx_create(ctx, kind, device, err, sizeof err) != MCL_OK) {
        fprintf(stderr, "metacl: cannot open the %s backend: %s\n",
                kind == MCL_BACKEND_REF ? "ref" : "opencl", err);
        return 1;
    }
    return 0;
}

void mcl_cli_print_families(FILE *f)
{
    int i = 0;
    for (const mcl_family *const *fam = mcl_families(); *fam; fam++, i++)
        fprintf(f, "%s%s", i ? ", " : "", (*fam)->kind);
}

static int is_regular_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

const char *mcl_cli_installed_file(const char *given, const char *sub, const char *ext, char *buf,
                                   size_t len)
{
    struct stat st;
    if (!given || !*given || strchr(given, '/') || stat(given, &st) == 0 || !*MCL_PKGDATADIR)
        return given;
    for (int with_ext = 0; with_ext < 2; with_ext++) {
        int n = snprintf(buf, len, "%s/%s/%s%s", MCL_PKGDATADIR, sub, given, with_ext ? ext : "");
        if (n > 0 && (size_t)n < len && is_regular_file(buf)) return buf;
    }
    return given;
}
