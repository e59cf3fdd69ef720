/* cli_common.c — option helpers shared by the metacl subcommands. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "config.h"
#include "dataset_io.h"
#include "progress.h"
#include "train.h"
#ifdef MCL_HAVE_OPENCL
#include "devices.h"
#include "dist.h"
#endif

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

/* Library notices (e.g. "compiling the OpenCL kernels ..." before a long build) on stderr,
 * unless --quiet. */
static void notice_to_stderr(void *arg, const char *msg)
{
    (void)arg;
    if (mcl_progress_quiet()) return;
    fprintf(stderr, "%s\n", msg);
    fflush(stderr);
}

int mcl_cli_open_ctx(const char *backend, const char *device, mcl_ctx **ctx)
{
    mcl_set_notice_sink(notice_to_stderr, NULL);
    mcl_backend_kind kind;
    int rc = mcl_cli_parse_backend(backend, &kind);
    if (rc) return rc;
    char err[512];
    if (device && !*device) device = NULL; /* an option not given: "" */
#ifdef MCL_HAVE_OPENCL
    /* MPI: without --device or METACL_DEVICE, the ranks of a host take its devices in turn
     * (local rank mod the number of devices) */
    char by_rank[16];
    const char *env_dev = getenv("METACL_DEVICE");
    if (kind == MCL_BACKEND_OPENCL && !device && !(env_dev && *env_dev) && mcl_dist_size() > 1) {
        FILE *nul = fopen("/dev/null", "w");
        int n = 0;
        if (nul && mcl_opencl_print_devices(nul, 0, &n, err, sizeof err) == MCL_OK && n > 0) {
            snprintf(by_rank, sizeof by_rank, "%d", mcl_dist_local_rank() % n);
            device = by_rank;
        }
        if (nul) fclose(nul);
    }
#endif
    if (mcl_ctx_create(ctx, kind, device, err, sizeof err) != MCL_OK) {
        fprintf(stderr, "metacl: cannot open the %s backend: %s\n",
                kind == MCL_BACKEND_REF ? "ref" : "opencl", err);
        return 1;
    }
#ifdef MCL_HAVE_OPENCL
    /* Which device the run uses (the default is the first GPU, which may not be the first
     * device listed), before anything else is said about it. */
    mcl_opencl_info di;
    if (mcl_opencl_device_info(*ctx, &di) == 0 && !mcl_progress_quiet())
        mcl_progress_note("OpenCL device %d: %s (%s; platform %s; driver %s)%s", di.index, di.device,
                          di.type, di.platform, di.driver,
                          di.sync ? "; METACL_SYNC=1: the queue is finished after every op" : "");
    /* The library stays quiet; the CLI says once when the kernels were compiled (a cache
     * miss: the first run on a device or after a kernel change), and where they are kept. */
    int from_cache = 1;
    double secs = mcl_opencl_build_seconds(*ctx, &from_cache);
    if (secs >= 0.0 && !from_cache && !mcl_progress_quiet()) {
        const char *nc = getenv("METACL_NO_CACHE"), *x = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
        char dir[4200];
        if (nc && *nc && strcmp(nc, "0") != 0)
            snprintf(dir, sizeof dir, "not cached: METACL_NO_CACHE is set");
        else if (x && *x)
            snprintf(dir, sizeof dir, "cached in %s/metacl", x);
        else if (home && *home)
            snprintf(dir, sizeof dir, "cached in %s/.cache/metacl", home);
        else
            snprintf(dir, sizeof dir, "not cached: no $HOME");
        fprintf(stderr, "compiled the OpenCL kernels in %.1f s (%s)\n", secs, dir);
    }
#endif
    return 0;
}

const char *mcl_cli_device_name(const mcl_ctx *ctx)
{
#ifdef MCL_HAVE_OPENCL
    return mcl_opencl_device_name(ctx);
#else
    (void)ctx;
    return NULL;
#endif
}

void mcl_cli_json_provenance_begin(mcl_json *j, const mcl_ctx *ctx)
{
    mcl_json_begin_obj(j, "provenance");
    mcl_json_str(j, "metacl_version", PACKAGE_VERSION);
    mcl_json_str(j, "git_commit", mcl_cli_git_commit()); /* null outside git */
    mcl_json_str(j, "backend", ctx ? mcl_ctx_backend_name(ctx) : NULL);
    mcl_json_str(j, "device", ctx ? mcl_cli_device_name(ctx) : NULL);
    /* the OpenCL device in full: where it sits in `metacl devices`, platform, driver, type */
#ifdef MCL_HAVE_OPENCL
    mcl_opencl_info di;
    if (ctx && mcl_opencl_device_info(ctx, &di) == 0) {
        mcl_json_int(j, "device_index", di.index);
        mcl_json_str(j, "device_platform", di.platform);
        mcl_json_str(j, "device_driver", di.driver);
        mcl_json_str(j, "device_type", di.type);
        return;
    }
#endif
    mcl_json_null(j, "device_index");
    mcl_json_null(j, "device_platform");
    mcl_json_null(j, "device_driver");
    mcl_json_null(j, "device_type");
}

void mcl_cli_json_device_fields(FILE *f, const mcl_ctx *ctx)
{
    const char *name = ctx ? mcl_cli_device_name(ctx) : NULL;
    fputs(",\"device\":", f);
    if (name) mcl_json_write_string(f, name); else fputs("null", f);
#ifdef MCL_HAVE_OPENCL
    mcl_opencl_info di;
    if (ctx && mcl_opencl_device_info(ctx, &di) == 0) {
        fprintf(f, ",\"device_index\":%d,\"device_platform\":", di.index);
        mcl_json_write_string(f, di.platform);
        fputs(",\"device_driver\":", f);
        mcl_json_write_string(f, di.driver);
        fputs(",\"device_type\":", f);
        mcl_json_write_string(f, di.type);
        return;
    }
#endif
    fputs(",\"device_index\":null,\"device_platform\":null,\"device_driver\":null,"
          "\"device_type\":null", f);
}

void mcl_cli_json_dataset(mcl_json *j, const char *spec, const char *data_dir)
{
    mcl_json_begin_obj(j, NULL);
    mcl_json_str(j, "spec", spec);
    char name[256], dir[4096], err[512];
    size_t n = strcspn(spec, "@");
    snprintf(name, sizeof name, "%.*s", (int)(n < sizeof name ? n : sizeof name - 1), spec);
    if (!strncmp(name, "idx:", 4) || !strncmp(name, "pngdir:", 7) ||
        mcl_prepared_dir(data_dir, name, dir, sizeof dir, err, sizeof err) != MCL_OK) {
        mcl_json_end_obj(j);
        return;
    }
    mcl_json_str(j, "dir", dir);
    /* the SHA-256 of the prepared files as SHA256SUMS records them (cheap: no hashing here;
     * `metacl data info NAME` checks the files against it) */
    char path[4200], line[1024];
    snprintf(path, sizeof path, "%s/SHA256SUMS", dir);
    FILE *f = fopen(path, "r");
    mcl_json_begin_obj(j, "sha256");
    while (f && fgets(line, sizeof line, f)) {
        char *sp = strchr(line, ' ');
        if (!sp || sp - line != 64) continue;
        *sp = 0;
        char *file = sp + 1;
        while (*file == ' ' || *file == '*') file++;
        file[strcspn(file, "\r\n")] = 0;
        if (*file) mcl_json_str(j, file, line);
    }
    mcl_json_end_obj(j);
    if (f) fclose(f);
    mcl_json_end_obj(j);
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

int64_t mcl_cli_warn_nonfinite(const char *cmd, const char *what, mcl_params *ps)
{
    int64_t bad = 0, total = 0, cap = 0;
    const char *first = NULL;
    float *h = NULL;
    for (int i = 0; ps && i < mcl_params_count(ps); i++) {
        mcl_tensor *t = mcl_params_get(ps, i);
        const int64_t n = mcl_tensor_numel(t);
        if (n > cap) {
            float *p = realloc(h, (size_t)n * sizeof *h);
            if (!p) break;
            h = p;
            cap = n;
        }
        if (n == 0 || mcl_tensor_read(t, h, n) != MCL_OK) continue;
        total += n;
        for (int64_t k = 0; k < n; k++)
            if (!isfinite(h[k])) {
                if (!first) first = mcl_tensor_name(t);
                bad++;
            }
    }
    free(h);
    if (bad)
        fprintf(stderr, "metacl %s: warning: %s: %lld of %lld parameter values are not finite (first in '%s'); "
                        "the model's predictions are meaningless\n",
                cmd, what, (long long)bad, (long long)total, first ? first : "?");
    return bad;
}
