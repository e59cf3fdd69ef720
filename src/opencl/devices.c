/* devices.c — enumerate OpenCL platforms and devices through the ICD loader. */
#define _XOPEN_SOURCE 700 /* nftw, mkdtemp, setenv */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <ctype.h>
#include <errno.h>
#include <ftw.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "devices.h"
#include "ocl.h"

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
    case MCL_CL_NV_ILLEGAL_ACCESS: return "NVIDIA's illegal memory access (a kernel faulted)";
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

/* ---- the listing: platforms in the ICD loader's order, devices in each platform's ---- */

const char *mcl_ocl_type_str(cl_device_type t, char *buf, size_t len)
{
    static const struct { cl_device_type bit; const char *name; } names[] = {
        {CL_DEVICE_TYPE_GPU, "GPU"}, {CL_DEVICE_TYPE_ACCELERATOR, "accelerator"},
        {CL_DEVICE_TYPE_CPU, "CPU"}, {CL_DEVICE_TYPE_CUSTOM, "custom"}};
    size_t n = 0;
    if (len) buf[0] = '\0';
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if ((t & names[i].bit) && n < len)
            n += (size_t)snprintf(buf + n, len - n, "%s%s", n ? "+" : "", names[i].name);
    if (n == 0) snprintf(buf, len, "other");
    return buf;
}

mcl_status mcl_ocl_list(mcl_ocl_listing *L)
{
    memset(L, 0, sizeof *L);
    L->default_idx = -1;
    cl_uint np = 0;
    L->err = clGetPlatformIDs(0, NULL, &np);
    if (L->err != CL_SUCCESS || np == 0) return MCL_OK;
    cl_platform_id *plats = calloc(np, sizeof *plats);
    if (!plats) return MCL_ERR_OOM;
    L->err = clGetPlatformIDs(np, plats, NULL);
    if (L->err != CL_SUCCESS) {
        free(plats);
        return MCL_OK;
    }
    if (np > MCL_OCL_MAX_PLATFORMS) np = MCL_OCL_MAX_PLATFORMS;
    for (cl_uint p = 0; p < np; p++) {
        int pi = L->n_platforms++;
        L->plat[pi].id = plats[p];
        if (clGetPlatformInfo(plats[p], CL_PLATFORM_NAME, sizeof L->plat[pi].name,
                              L->plat[pi].name, NULL) != CL_SUCCESS)
            snprintf(L->plat[pi].name, sizeof L->plat[pi].name, "(unnamed platform %u)", p);
        cl_uint nd = 0;
        cl_int e = clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 0, NULL, &nd);
        if (e == CL_SUCCESS && nd == 0) e = CL_DEVICE_NOT_FOUND;
        cl_device_id *devs = e == CL_SUCCESS ? calloc(nd, sizeof *devs) : NULL;
        if (e == CL_SUCCESS && !devs) e = CL_OUT_OF_HOST_MEMORY;
        if (e == CL_SUCCESS) e = clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, nd, devs, NULL);
        L->plat[pi].err = e;
        for (cl_uint d = 0; e == CL_SUCCESS && d < nd && L->n_devices < MCL_OCL_MAX_DEVICES; d++) {
            int di = L->n_devices++;
            L->dev[di].platform = plats[p];
            L->dev[di].plat = pi;
            L->dev[di].id = devs[d];
            if (clGetDeviceInfo(devs[d], CL_DEVICE_TYPE, sizeof L->dev[di].type, &L->dev[di].type,
                                NULL) != CL_SUCCESS)
                L->dev[di].type = 0;
            clGetDeviceInfo(devs[d], CL_DEVICE_NAME, sizeof L->dev[di].name, L->dev[di].name, NULL);
            L->plat[pi].n_devices++;
        }
        free(devs);
    }
    free(plats);
    cl_device_type types[MCL_OCL_MAX_DEVICES];
    for (int i = 0; i < L->n_devices; i++) types[i] = L->dev[i].type;
    L->default_idx = mcl_ocl_pick_default(types, L->n_devices);
    return MCL_OK;
}

int mcl_ocl_pick_default(const cl_device_type *types, int n)
{
    static const cl_device_type order[] = {CL_DEVICE_TYPE_GPU, CL_DEVICE_TYPE_ACCELERATOR,
                                           CL_DEVICE_TYPE_CPU};
    for (size_t k = 0; k < sizeof order / sizeof order[0]; k++)
        for (int i = 0; i < n; i++)
            if (types[i] & order[k]) return i;
    return n > 0 ? 0 : -1;
}

static int ci_contains(const char *hay, const char *needle)
{
    size_t n = strlen(needle);
    for (; *hay; hay++) {
        size_t i = 0;
        while (i < n && hay[i] && tolower((unsigned char)hay[i]) == tolower((unsigned char)needle[i])) i++;
        if (i == n) return 1;
    }
    return n == 0;
}

int mcl_ocl_listing_find(const mcl_ocl_listing *L, const char *want)
{
    if (!want || !*want) return L->default_idx;
    char *end = NULL;
    errno = 0;
    long idx = strtol(want, &end, 10);
    if (end != want && !*end && !errno) return idx >= 0 && idx < L->n_devices ? (int)idx : -1;
    for (int i = 0; i < L->n_devices; i++) {
        char full[400];
        snprintf(full, sizeof full, "%s %s", L->plat[L->dev[i].plat].name, L->dev[i].name);
        if (ci_contains(full, want)) return i;
    }
    return -1;
}

mcl_status mcl_opencl_print_devices(FILE *f, int json, int *n_devices, char *errbuf, size_t len)
{
    *n_devices = 0;
    if (errbuf && len) errbuf[0] = '\0';
    const char *cache = mcl_opencl_cache_check();
    mcl_ocl_listing *L = malloc(sizeof *L);
    if (!L || mcl_ocl_list(L) != MCL_OK) {
        free(L);
        return MCL_ERR_OOM;
    }
    if (L->err != CL_SUCCESS || L->n_platforms == 0) {
        const char *why = L->err == CL_SUCCESS ? "0 platforms" : mcl_cl_status_str(L->err);
        if (errbuf && cache && !pocl_tmp[0])
            snprintf(errbuf, len, "no OpenCL platform found (%s): %s", why, cache);
        else if (errbuf)
            snprintf(errbuf, len, "no OpenCL platform found (%s); install an OpenCL driver, e.g. "
                     "the Debian package pocl-opencl-icd for the CPU", why);
        if (json) fprintf(f, "[],\"opencl_platforms\":[]");
        free(L);
        return MCL_OK;
    }
    /* the device a context opens without --device: $METACL_DEVICE's, else the default */
    const char *env = getenv("METACL_DEVICE");
    const int from_env = env && *env;
    const int def = from_env ? mcl_ocl_listing_find(L, env) : L->default_idx;
    if (json) fprintf(f, "[");
    for (int i = 0; i < L->n_devices; i++) {
        cl_device_id dev = L->dev[i].id;
        const char *pname = L->plat[L->dev[i].plat].name, *name = L->dev[i].name;
        char drv[128] = "", ver[128] = "", type[64];
        cl_uint cu = 0;
        cl_ulong gmem = 0, lmem = 0;
        size_t wg = 0;
        clGetDeviceInfo(dev, CL_DRIVER_VERSION, sizeof drv, drv, NULL);
        clGetDeviceInfo(dev, CL_DEVICE_VERSION, sizeof ver, ver, NULL);
        clGetDeviceInfo(dev, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof cu, &cu, NULL);
        clGetDeviceInfo(dev, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof gmem, &gmem, NULL);
        clGetDeviceInfo(dev, CL_DEVICE_LOCAL_MEM_SIZE, sizeof lmem, &lmem, NULL);
        clGetDeviceInfo(dev, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof wg, &wg, NULL);
        mcl_ocl_type_str(L->dev[i].type, type, sizeof type);
        if (json) {
            fprintf(f, "%s{\"index\":%d,\"platform\":", i ? "," : "", i);
            json_str(f, pname);
            fprintf(f, ",\"device\":");
            json_str(f, name);
            fprintf(f, ",\"type\":");
            json_str(f, type);
            fprintf(f, ",\"driver\":");
            json_str(f, drv);
            fprintf(f, ",\"version\":");
            json_str(f, ver);
            fprintf(f, ",\"compute_units\":%u,\"global_mem_bytes\":%llu,\"local_mem_bytes\":%llu,"
                    "\"max_work_group_size\":%zu,\"default\":%s}", cu, (unsigned long long)gmem,
                    (unsigned long long)lmem, wg, i == def ? "true" : "false");
        } else {
            fprintf(f, "  opencl %d%s  %s | %s | %s | driver %s | %s | %u CUs | %.1f GiB global | "
                    "%llu KiB local | work-groups <= %zu\n",
                    i, i == def ? (from_env ? " (default: METACL_DEVICE)" : " (default)") : "",
                    type, pname, name, drv, ver, cu, (double)gmem / (1024.0 * 1024.0 * 1024.0),
                    (unsigned long long)(lmem / 1024), wg);
        }
    }
    if (json) fprintf(f, "],\"opencl_platforms\":[");
    else fprintf(f, "OpenCL platforms (in the ICD loader's order):\n");
    for (int p = 0; p < L->n_platforms; p++) {
        const cl_int e = L->plat[p].err;
        if (json) {
            fprintf(f, "%s{\"index\":%d,\"name\":", p ? "," : "", p);
            json_str(f, L->plat[p].name);
            fprintf(f, ",\"devices\":%d,\"error\":", L->plat[p].n_devices);
            if (e == CL_SUCCESS || e == CL_DEVICE_NOT_FOUND)
                fprintf(f, "null}");
            else {
                json_str(f, mcl_cl_status_str(e));
                fprintf(f, "}");
            }
        } else if (e == CL_SUCCESS) {
            fprintf(f, "  platform %d  %s: %d device%s\n", p, L->plat[p].name, L->plat[p].n_devices,
                    L->plat[p].n_devices == 1 ? "" : "s");
        } else if (e == CL_DEVICE_NOT_FOUND) {
            fprintf(f, "  platform %d  %s: no devices\n", p, L->plat[p].name);
        } else {
            fprintf(f, "  platform %d  %s: clGetDeviceIDs failed: %s (%d); its devices are not "
                    "usable\n", p, L->plat[p].name, mcl_cl_status_str(e), (int)e);
        }
    }
    if (json) fprintf(f, "]");
    if (!json && from_env && def < 0)
        fprintf(f, "  (METACL_DEVICE=%s matches no device)\n", env);
    if (L->n_devices == 0 && errbuf)
        snprintf(errbuf, len, "%d platform%s but no device%s%s", L->n_platforms,
                 L->n_platforms == 1 ? "" : "s",
                 cache ? "; " : " (install a driver, e.g. the Debian package pocl-opencl-icd)",
                 cache ? cache : "");
    *n_devices = L->n_devices;
    free(L);
    return MCL_OK;
}
