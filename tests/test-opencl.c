/* test-opencl.c — the OpenCL backend's infrastructure (not the ops: see test-ops --backend):
 *   - Philox4x32-10 known answers computed ON THE DEVICE (kernels/rng.cl == src/common/rng.h);
 *   - the on-disk program cache: first build writes an entry, the second start loads it,
 *     a corrupt / truncated / foreign entry is detected and rebuilt, METACL_NO_CACHE=1 skips it;
 *   - device choice: by index, by name substring, a bad choice is a clear error;
 *   - an absurd allocation is an out-of-memory status, not a crash;
 *   - METACL_KERNEL_DIR pointing nowhere is a clear error.
 * Exit 77 (SKIP) only when no OpenCL device exists (or the build has no OpenCL).
 */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"

#ifndef MCL_HAVE_OPENCL
int main(void)
{
    printf("test-opencl: built without OpenCL: SKIP\n");
    return TU_SKIP;
}
#else
#include "devices.h"
#include "ocl.h"
#include "tape.h"

static char cache_root[512];

/* Path of the (single) program cache entry under cache_root/metacl, or "" if none. */
static void find_entry(char *out, size_t len)
{
    char dir[600];
    snprintf(dir, sizeof dir, "%s/metacl", cache_root);
    out[0] = '\0';
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (strncmp(e->d_name, "program-", 8) == 0 && !strstr(e->d_name, ".tmp"))
            snprintf(out, len, "%s/%s", dir, e->d_name);
    closedir(d);
}

static void clear_cache(void)
{
    char p[1200];
    for (;;) {
        find_entry(p, sizeof p);
        if (!p[0]) break;
        remove(p);
    }
}

static mcl_status g_open_status; /* status of the last open_ocl */

static mcl_ctx *open_ocl(const char *device, char *err, size_t len)
{
    mcl_ctx *c = NULL;
    g_open_status = mcl_ctx_create(&c, MCL_BACKEND_OPENCL, device, err, len);
    if (g_open_status != MCL_OK) return NULL;
    return c;
}

/* Open a context and report whether its program came from the cache (-1: open failed). */
static int open_and_cached(void)
{
    char err[512];
    mcl_ctx *c = open_ocl(NULL, err, sizeof err);
    if (!c) {
        printf("  open failed: %s\n", err);
        return -1;
    }
    int from_cache = 0;
    double secs = mcl_opencl_build_seconds(c, &from_cache);
    printf("  program %s in %.3f s\n", from_cache ? "loaded from the cache" : "built from source", secs);
    mcl_ctx_free(c);
    return from_cache;
}

static void corrupt_entry(const char *path, int mode)
{
    FILE *f = fopen(path, "r+b");
    if (!f) return;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    if (mode == 0) { /* flip a byte in the middle (binary payload) */
        fseek(f, n / 2, SEEK_SET);
        int c = fgetc(f);
        fseek(f, n / 2, SEEK_SET);
        fputc(c ^ 0x5a, f);
        fclose(f);
    } else if (mode == 1) { /* truncate */
        fclose(f);
        if (truncate(path, n / 3) != 0) perror("truncate");
    } else { /* foreign file: garbage header */
        fseek(f, 0, SEEK_SET);
        fputs("NOTMCLPR", f);
        fclose(f);
    }
}

int main(void)
{
    tu_begin("test-opencl", 0);
    char err[512];
    mcl_ctx *probe = open_ocl(NULL, err, sizeof err);
    if (!probe) {
        /* MCL_ERR_UNSUPPORTED: no platform or no device (src/opencl/backend.c); any other
         * failure (a kernel build error, ...) fails the test */
        if (g_open_status == MCL_ERR_UNSUPPORTED) {
            printf("test-opencl: no OpenCL device (%s): SKIP\n", err);
            return TU_SKIP;
        }
        CHECK(0, "cannot open the default OpenCL device: %s", err);
        return tu_summary();
    }
    printf("device: %s\n", mcl_opencl_device_name(probe));

    /* 1. Philox known answers on the device (Random123 kat_vectors, philox4x32_10). */
    {
        static const uint32_t kat[3][10] = {
            {0, 0, 0, 0, 0, 0, 0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u},
            {~0u, ~0u, ~0u, ~0u, ~0u, ~0u, 0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu},
            {0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u, 0xa4093822u, 0x299f31d0u,
             0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}};
        mcl_backend *be = probe->be;
        mcl_ocl *o = mcl_ocl_of(be);
        cl_int e;
        cl_mem out = clCreateBuffer(o->context, CL_MEM_READ_WRITE, 16, NULL, &e);
        cl_kernel k = mcl_ocl_kernel(be, "rng_philox_block", NULL);
        CHECK(e == CL_SUCCESS && k != NULL, "philox probe kernel and buffer");
        for (int v = 0; v < 3 && k && e == CL_SUCCESS; v++) {
            clSetKernelArg(k, 0, sizeof out, &out);
            for (int j = 0; j < 6; j++) clSetKernelArg(k, (cl_uint)(1 + j), sizeof(cl_uint), &kat[v][j]);
            uint32_t got[4] = {0, 0, 0, 0};
            CHECK(mcl_ocl_run1d(be, k, 1, 1, "philox probe") == MCL_OK, "philox probe launch");
            clEnqueueReadBuffer(o->queue, out, CL_TRUE, 0, sizeof got, got, 0, NULL, NULL);
            CHECK(memcmp(got, kat[v] + 6, sizeof got) == 0,
                  "device Philox vector %d: got %08x %08x %08x %08x", v, got[0], got[1], got[2], got[3]);
            /* the comparison must be able to fail */
            uint32_t wrong[4];
            memcpy(wrong, kat[v] + 6, sizeof wrong);
            wrong[2] ^= 1u;
            CHECK(memcmp(got, wrong, sizeof got) != 0, "a wrong known answer is detected");
        }
        if (e == CL_SUCCESS) clReleaseMemObject(out);
    }

    /* 2. Device choice. */
    {
        mcl_ctx *c = open_ocl("0", err, sizeof err);
        CHECK(c != NULL, "device by index 0: %s", c ? "" : err);
        mcl_ctx_free(c);
        char sub[64];
        snprintf(sub, sizeof sub, "%.6s", mcl_opencl_device_name(probe));
        c = open_ocl(sub, err, sizeof err);
        CHECK(c != NULL, "device by name substring '%s': %s", sub, c ? "" : err);
        mcl_ctx_free(c);
        c = open_ocl("no-such-device-xyz", err, sizeof err);
        CHECK(c == NULL && strstr(err, "no-such-device-xyz") != NULL,
              "a bad device name is a clear error naming it: '%s'", err);
        mcl_ctx_free(c);
        c = open_ocl("999", err, sizeof err);
        CHECK(c == NULL && strstr(err, "999") != NULL, "a bad device index is a clear error: '%s'", err);
        mcl_ctx_free(c);
    }

    /* 3. Absurd allocation: an error status, never a crash. */
    {
        int64_t shape[2] = {(int64_t)1 << 17, (int64_t)1 << 17}; /* 64 GiB of floats */
        mcl_tensor *t = mcl_tensor_create(probe, 2, shape);
        CHECK(t == NULL && mcl_ctx_status(probe) == MCL_ERR_OOM,
              "64 GiB tensor: status %s, message '%s'", mcl_status_str(mcl_ctx_status(probe)),
              mcl_ctx_error(probe));
        mcl_tensor_free(t);
        mcl_ctx_clear_error(probe);
        mcl_tensor *ok = mcl_tensor_new(probe, 4, 0, 0, 0);
        CHECK(ok != NULL, "the context still works after an allocation failure");
        mcl_tensor_free(ok);
    }
    mcl_ctx_free(probe);

    /* 4. The program cache, in a private cache directory under the build directory. */
    {
        char cwd[256];
        if (!getcwd(cwd, sizeof cwd)) strcpy(cwd, ".");
        snprintf(cache_root, sizeof cache_root, "%s/test-opencl-cache", cwd);
        mkdir(cache_root, 0755);
        setenv("XDG_CACHE_HOME", cache_root, 1);
        unsetenv("METACL_NO_CACHE");
        clear_cache();
        char entry[1200];
        CHECK(open_and_cached() == 0, "first start builds from source");
        find_entry(entry, sizeof entry);
        CHECK(entry[0] != '\0', "the first start wrote a cache entry");
        CHECK(open_and_cached() == 1, "second start loads the cached program");
        static const char *what[3] = {"a flipped byte", "a truncated file", "a foreign header"};
        for (int mode = 0; mode < 3 && entry[0]; mode++) {
            corrupt_entry(entry, mode);
            CHECK(open_and_cached() == 0, "an entry with %s is detected and rebuilt", what[mode]);
            CHECK(open_and_cached() == 1, "after the rebuild with %s, the entry is valid again", what[mode]);
        }
        setenv("METACL_NO_CACHE", "1", 1);
        clear_cache();
        CHECK(open_and_cached() == 0, "METACL_NO_CACHE=1 builds from source");
        find_entry(entry, sizeof entry);
        CHECK(entry[0] == '\0', "METACL_NO_CACHE=1 writes no entry");
        unsetenv("METACL_NO_CACHE");
        clear_cache();
        char dir[600];
        snprintf(dir, sizeof dir, "%s/metacl", cache_root);
        rmdir(dir);
        rmdir(cache_root);
    }

    /* 5. METACL_KERNEL_DIR pointing nowhere. */
    {
        setenv("METACL_KERNEL_DIR", "/nonexistent-metacl-kernels", 1);
        mcl_ctx *c = open_ocl(NULL, err, sizeof err);
        CHECK(c == NULL && strstr(err, "/nonexistent-metacl-kernels") != NULL,
              "a missing kernel directory is a clear error: '%s'", err);
        mcl_ctx_free(c);
        unsetenv("METACL_KERNEL_DIR");
    }
    return tu_summary();
}
#endif
