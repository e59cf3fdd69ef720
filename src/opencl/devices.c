/* devices.c — enumerate OpenCL platforms and devices through the ICD loader. */
#define _XOPEN_SOURCE 700 /* nftw, mkdtemp, setenv */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <errno.h>
#include <ftw.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "devices.h"

const char *mcl_cl_status_str(int code)
{
    switch (code) {
#define C(x) case x: return #x;
        C(CL_SUCCESS) C(CL_DEVICE_NOT_FOUND) C(CL_DEVICE_NOT_AVAILABLE) C(CL_COMPILER_NOT_AVAILABLE)
        C(CL_MEM_OBJECT_ALLOCATION_FAILURE) C(CL_OUT_OF_RESOURCES) C(CL_OUT_OF_HOST_MEMORY)
        C(CL_PROFILING_INFO_NOT_AVAILABLE) C(CL_MEM_COPY_OVERLAP) C(CL_IMAGE_FORMAT_MISMATCH)
        C(CL_IMAGE_FORMAT_NOT_SUPPORTED) C(CL_BUILD_PROGRAM_FAILURE) C(CL_MAP_FAILURE)
        C(CL_MISALIGNED_SUB_BUFFER_OFFSET) C(CL_COMPILE_PROGRAM_FAILURE) C(CL_LINKER_NOT_AVAILABLE)
        C(CL_LINK_PROGRAM_FAILURE) C(CL_DEVICE_PARTITION_FAILED) C(CL_INVALID_VALUE)
        C(CL_INVALID_DEVICE_TYPE) C(CL_INVALID_PLATFORM) C(CL_INVALID_DEVICE) C(CL_INVALID_CONTEXT)
        C(CL_INVALID_QUEUE_PROPERTIES) C(CL_INVALID_COMMAND_QUEUE) C(CL_INVALID_HOST_PTR)
        C(CL_INVALID_MEM_OBJECT) C(CL_INVALID_BINARY) C(CL_INVALID_BUILD_OPTIONS)
        C(CL_INVALID_PROGRAM) C(CL_INVALID_PROGRAM_EXECUTABLE) C(CL_INVALID_KERNEL_NAME)
        C(CL_INVALID_KERNEL_DEFINITION) C(CL_INVALID_KERNEL) C(CL_INVALID_ARG_INDEX)
        C(CL_INVALID_ARG_VALUE) C(CL_INVALID_ARG_SIZE) C(CL_INVALID_KERNEL_ARGS)
        C(CL_INVALID_WORK_DIMENSION) C(CL_INVALID_WORK_GROUP_SIZE) C(CL_INVALID_WORK_ITEM_SIZE)
        C(CL_INVALID_GLOBAL_OFFSET) C(CL_INVALID_EVENT_WAIT_LIST) C(CL_INVALID_EVENT)
        C(CL_INVALID_OPERATION) C(CL_INVALID_BUFFER_SIZE) C(CL_INVALID_GLOBAL_WORK_SIZE)
        C(CL_INVALID_PROPERTY)
#undef C
    case -1001: return "CL_PLATFORM_NOT_FOUND_KHR (no OpenCL platform installed)";
    default: return "unknown OpenCL error";
    }
}

static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') fputc('\\', f);
        if ((unsigned char)*s >= 0x20) fputc(*s, f);
    }
    fputc('"', f);
}

/* ---- PoCL's kernel cache: an unwritable one makes PoCL report no device at all ---- */

static char pocl_tmp[4096]; /* the temporary cache of the fallback, removed at exit */
static char cache_note[4300];

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}
static void rm_pocl_tmp(void)
{
    if (pocl_tmp[0]) nftw(pocl_tmp, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* mkdir -p DIR and check that a file can be created in it; 0 ok, else errno. */
static int writable_dir(const char *dir)
{
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s", dir) >= (int)sizeof tmp) return ENAMETOOLONG;
    for (char *p = tmp + 1;; p++) {
        if (*p == '/' || !*p) {
            char c = *p;
            *p = '\0';
            if (mkdir(tmp, 0755) != 0 && errno != EEXIST) return errno;
            *p = c;
            if (!c) break;
        }
    }
    char probe[4200];
    snprintf(probe, sizeof probe, "%s/.metacl-probe.%ld", dir, (long)getpid());
    FILE *f = fopen(probe, "wb");
    if (!f) return errno;
    fclose(f);
    remove(probe);
    return 0;
}

const char *mcl_opencl_cache_check(void)
{
    static int done;
    if (done) return cache_note[0] ? cache_note : NULL;
    done = 1;
    /* PoCL's cache directory, as PoCL chooses it (pocl_cache.c) */
    const char *env = getenv("POCL_CACHE_DIR"), *x = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    char dir[4096];
    if (env && *env)
        snprintf(dir, sizeof dir, "%s", env);
    else if (x && *x)
        snprintf(dir, sizeof dir, "%s/pocl/kcache", x);
    else if (home && *home)
        snprintf(dir, sizeof dir, "%s/.cache/pocl/kcache", home);
    else
        snprintf(dir, sizeof dir, "/tmp/pocl/kcache");
    int e = writable_dir(dir);
    if (e == 0) return NULL;
    /* fall back to no cache: a private temporary directory, removed at exit */
    const char *t = getenv("TMPDIR");
    snprintf(pocl_tmp, sizeof pocl_tmp, "%s/metacl-pocl-XXXXXX", t && *t ? t : "/tmp");
    if (!mkdtemp(pocl_tmp)) {
        snprintf(cache_note, sizeof cache_note,
                 "the OpenCL kernel cache directory %s is not writable (%s), and no temporary one "
                 "could be made in %s (%s); set POCL_CACHE_DIR or XDG_CACHE_HOME to a writable "
                 "directory", dir, strerror(e), t && *t ? t : "/tmp", strerror(errno));
        pocl_tmp[0] = '\0';
        return cache_note;
    }
    setenv("POCL_CACHE_DIR", pocl_tmp, 1);
    setenv("POCL_KERNEL_CACHE", "0", 1);
    atexit(rm_pocl_tmp);
    snprintf(cache_note, sizeof cache_note,
             "the OpenCL kernel cache directory %s is not writable (%s); running without a kernel "
             "cache (set POCL_CACHE_DIR or XDG_CACHE_HOME to a writable directory to keep one)",
             dir, strerror(e));
    fprintf(stderr, "metacl: warning: %s\n", cache_note);
    return cache_note;
}

mcl_status mcl_opencl_print_devices(FILE *f, int json, int *n_devices, char *errbuf, size_t len)
{
    *n_devices = 0;
    if (errbuf && len) errbuf[0] = '\0';
    const char *cache = mcl_opencl_cache_check();
    cl_uint np = 0;
    cl_int err = clGetPlatformIDs(0, NULL, &np);
    if (err != CL_SUCCESS || np == 0) {
        if (errbuf && cache && !pocl_tmp[0])
            snprintf(errbuf, len, "no OpenCL platform found (%s): %s",
                     err == CL_SUCCESS ? "0 platforms" : mcl_cl_status_str(err), cache);
        else if (errbuf)
            snprintf(errbuf, len, "no OpenCL platform found (%s); install an OpenCL driver, e.g. "
                     "the Debian package pocl-opencl-icd for the CPU", err == CL_SUCCESS ? "0 platforms" : mcl_cl_status_str(err));
        if (json) fprintf(f, "[]\n");
        return MCL_OK;
    }
    cl_platform_id *plats = calloc(np, sizeof *plats);
    if (!plats) return MCL_ERR_OOM;
    clGetPlatformIDs(np, plats, NULL);
    int idx = 0;
    if (json) fprintf(f, "[");
    for (cl_uint p = 0; p < np; p++) {
        char pname[256] = "";
        clGetPlatformInfo(plats[p], CL_PLATFORM_NAME, sizeof pname, pname, NULL);
        cl_uint nd = 0;
        if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 0, NULL, &nd) != CL_SUCCESS || nd == 0) continue;
        cl_device_id *devs = calloc(nd, sizeof *devs);
        if (!devs) break;
        clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, nd, devs, NULL);
        for (cl_uint d = 0; d < nd; d++, idx++) {
            char name[256] = "", drv[128] = "", ver[128] = "";
            cl_uint cu = 0;
            cl_ulong gmem = 0, lmem = 0;
            clGetDeviceInfo(devs[d], CL_DEVICE_NAME, sizeof name, name, NULL);
            clGetDeviceInfo(devs[d], CL_DRIVER_VERSION, sizeof drv, drv, NULL);
            clGetDeviceInfo(devs[d], CL_DEVICE_VERSION, sizeof ver, ver, NULL);
            clGetDeviceInfo(devs[d], CL_DEVICE_MAX_COMPUTE_UNITS, sizeof cu, &cu, NULL);
            clGetDeviceInfo(devs[d], CL_DEVICE_GLOBAL_MEM_SIZE, sizeof gmem, &gmem, NULL);
            clGetDeviceInfo(devs[d], CL_DEVICE_LOCAL_MEM_SIZE, sizeof lmem, &lmem, NULL);
            if (json) {
                fprintf(f, "%s{\"index\":%d,\"platform\":", idx ? "," : "", idx);
                json_str(f, pname);
                fprintf(f, ",\"device\":");
                json_str(f, name);
                fprintf(f, ",\"driver\":");
                json_str(f, drv);
                fprintf(f, ",\"version\":");
                json_str(f, ver);
                fprintf(f, ",\"compute_units\":%u,\"global_mem_bytes\":%llu,\"local_mem_bytes\":%llu,"
                        "\"default\":%s}", cu, (unsigned long long)gmem, (unsigned long long)lmem,
                        idx == 0 ? "true" : "false");
            } else {
                fprintf(f, "  opencl %d%s  %s | %s | driver %s | %s | %u CUs | %.1f GiB global | %llu KiB local\n",
                        idx, idx == 0 ? " (default)" : "", pname, name, drv, ver, cu,
                        (double)gmem / (1024.0 * 1024.0 * 1024.0), (unsigned long long)(lmem / 1024));
            }
        }
        free(devs);
    }
    if (json) fprintf(f, "]\n");
    free(plats);
    if (idx == 0 && errbuf)
        snprintf(errbuf, len, "%u platform%s but no device%s%s", np, np == 1 ? "" : "s",
                 cache ? "; " : " (install a driver, e.g. the Debian package pocl-opencl-icd)",
                 cache ? cache : "");
    *n_devices = idx;
    return MCL_OK;
}
