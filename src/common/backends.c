/* backends.c — the one file of the engine that names the backends.
 *
 * The engine (tensor.c, ops.c, tape.c, ...) only sees the vtable of backend.h. Opening a
 * backend by kind, describing the device a context runs on and listing the available
 * devices go through the table below, so adding a backend means one row here plus its own
 * directory under src/ — no other engine file changes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "backend.h"

#ifdef MCL_HAVE_OPENCL
/* src/opencl/: the backend's constructor and its device listing (declared here, not in a
 * shared header, so no engine header depends on the OpenCL backend's). */
mcl_status mcl_opencl_backend_create(mcl_ctx *ctx, const char *device, mcl_backend **out);
mcl_status mcl_opencl_print_devices(FILE *f, int json, int *n_devices, char *errbuf, size_t len);
#endif

typedef struct backend_row {
    mcl_backend_kind kind;
    const char *name;
    const char *label; /* for messages */
    mcl_status (*create)(mcl_ctx *ctx, const char *device, mcl_backend **out);
} backend_row;

static mcl_status ref_create(mcl_ctx *ctx, const char *device, mcl_backend **out)
{
    (void)device; /* one device: the host */
    return mcl_ref_backend_create(ctx, out);
}

static const backend_row backends[] = {
    {MCL_BACKEND_REF, "ref", "reference", ref_create},
#ifdef MCL_HAVE_OPENCL
    {MCL_BACKEND_OPENCL, "opencl", "OpenCL", mcl_opencl_backend_create},
#else
    {MCL_BACKEND_OPENCL, "opencl", "OpenCL", NULL},
#endif
};

mcl_status mcl_backend_open(mcl_ctx *ctx, mcl_backend_kind kind, const char *device,
                            mcl_backend **out)
{
    for (size_t i = 0; i < sizeof backends / sizeof backends[0]; i++) {
        if (backends[i].kind != kind) continue;
        if (!backends[i].create)
            return mcl_ctx_set_error(ctx, MCL_ERR_UNSUPPORTED,
                                     "the %s backend is not available in this build of metacl",
                                     backends[i].label);
        return backends[i].create(ctx, device, out);
    }
    return mcl_ctx_set_error(ctx, MCL_ERR_INVALID, "unknown backend kind %d", (int)kind);
}

void mcl_backend_describe(const mcl_backend *be, char *out, size_t n)
{
    if (!n) return;
    const char *dev = be && be->device_name ? be->device_name(be) : NULL;
    if (dev)
        snprintf(out, n, "%s: %s", be->name, dev);
    else
        snprintf(out, n, "%s", be ? be->name : "?");
}

mcl_status mcl_backends_print(FILE *f, int json)
{
    int threads = 1;
#ifdef _OPENMP
    threads = omp_get_max_threads();
#endif
    const char *env = getenv("METACL_BACKEND");
    if (!json)
        fprintf(f, "backends:\n  ref  reference (C + OpenMP, %d threads)%s\n", threads,
                (!env || strcmp(env, "ref") == 0) ? " (default)" : "");
    else
        fprintf(f, "{\"ref\":{\"threads\":%d},\"opencl\":", threads);
#ifdef MCL_HAVE_OPENCL
    int n = 0;
    char err[256];
    if (!json) fprintf(f, "OpenCL devices:\n");
    fflush(f);
    if (mcl_opencl_print_devices(f, json, &n, err, sizeof err) != MCL_OK) return MCL_ERR_OOM;
    if (!json && n == 0) fprintf(f, "  none: %s\n", err);
#else
    if (json)
        fprintf(f, "null");
    else
        fprintf(f, "OpenCL: not enabled in this build (configure --enable-opencl)\n");
#endif
    if (json) fprintf(f, "}\n");
    return MCL_OK;
}
