/* backend.c — the OpenCL backend: device choice, buffers, the program (built once, cached on
 * disk), kernel lookup and launch helpers, error mapping, and the op table.
 *
 * Program cache. The concatenated kernel source is built with fixed options (no relaxed-math
 * flags). The binary is cached under $XDG_CACHE_HOME/metacl (or ~/.cache/metacl) in a file
 * named by a hash of (source, options, platform, device, driver version). The file holds
 *   "MCLPROG1" | u32 key length | key text | u64 binary length | binary | u32 CRC-32
 * where the key text spells out everything hashed (the source as its own hash), so a hash
 * collision or a stale file is detected by comparing the key, and corruption by the CRC.
 * Any mismatch means: rebuild from source and rewrite the entry (temp file + rename).
 * METACL_NO_CACHE=1 disables the cache; METACL_KERNEL_DIR=dir reads kernels/<family>.cl from dir.
 */
#define _POSIX_C_SOURCE 200809L
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "devices.h"
#include "ocl.h"
#include "tape.h"
#include "util.h"

#define BUILD_OPTIONS_BASE "-cl-std=CL1.2"

/* ------------------------------------------------------------------ errors */

mcl_status mcl_ocl_fail(mcl_backend *be, cl_int err, const char *what)
{
    mcl_status s = (err == CL_MEM_OBJECT_ALLOCATION_FAILURE || err == CL_OUT_OF_RESOURCES ||
                    err == CL_OUT_OF_HOST_MEMORY)
                       ? MCL_ERR_OOM
                       : MCL_ERR_BACKEND;
    mcl_ocl *o = mcl_ocl_of(be);
    return mcl_ctx_set_error(be->ctx, s, "OpenCL: %s failed: %s (%d) on %s", what,
                             mcl_cl_status_str(err), (int)err, o ? o->device_name : "?");
}

mcl_status mcl_ocl_recorded(mcl_backend *be)
{
    mcl_status s = mcl_ctx_status(be->ctx);
    return s != MCL_OK ? s : MCL_ERR_BACKEND;
}

/* ------------------------------------------------------------------ queue */

static mcl_status ocl_finish(mcl_backend *be)
{
    cl_int err = clFinish(mcl_ocl_of(be)->queue);
    return err == CL_SUCCESS ? MCL_OK : mcl_ocl_fail(be, err, "clFinish");
}

/* ------------------------------------------------------------------ kernels */

cl_kernel mcl_ocl_kernel(mcl_backend *be, const char *name, size_t *wg_max)
{
    mcl_ocl *o = mcl_ocl_of(be);
    for (int i = 0; i < o->n_kernels; i++)
        if (strcmp(o->kernels[i].name, name) == 0) {
            if (wg_max) *wg_max = o->kernels[i].wg_max;
            return o->kernels[i].k;
        }
    if (o->n_kernels == o->cap_kernels) {
        int cap = o->cap_kernels ? 2 * o->cap_kernels : 64;
        mcl_ocl_kernel_entry *p = realloc(o->kernels, (size_t)cap * sizeof *p);
        if (!p) {
            mcl_ctx_set_error(be->ctx, MCL_ERR_OOM, "OpenCL: out of memory (kernel table)");
            return NULL;
        }
        o->kernels = p;
        o->cap_kernels = cap;
    }
    cl_int err;
    cl_kernel k = clCreateKernel(o->program, name, &err);
    if (err != CL_SUCCESS) {
        char what[128];
        snprintf(what, sizeof what, "clCreateKernel(%s)", name);
        mcl_ocl_fail(be, err, what);
        return NULL;
    }
    size_t wg = o->max_wg;
    if (clGetKernelWorkGroupInfo(k, o->device, CL_KERNEL_WORK_GROUP_SIZE, sizeof wg, &wg, NULL) !=
            CL_SUCCESS || wg == 0)
        wg = o->max_wg;
    mcl_ocl_kernel_entry *e = &o->kernels[o->n_kernels++];
    snprintf(e->name, sizeof e->name, "%s", name);
    e->k = k;
    e->wg_max = wg;
    if (wg_max) *wg_max = wg;
    return k;
}

static int set_arg(mcl_backend *be, cl_kernel k, int idx, size_t size, const void *v)
{
    if (idx < 0) return -1;
    cl_int err = clSetKernelArg(k, (cl_uint)idx, size, v);
    if (err != CL_SUCCESS) {
        char what[64];
        snprintf(what, sizeof what, "clSetKernelArg(%d)", idx);
        mcl_ocl_fail(be, err, what);
        return -1;
    }
    return idx + 1;
}

int mcl_ocl_arg_tensor(mcl_backend *be, cl_kernel k, int idx, const mcl_tensor *t)
{
    cl_mem m = mcl_ocl_mem(t);
    cl_long off = (cl_long)t->offset;
    idx = set_arg(be, k, idx, sizeof m, &m);
    return set_arg(be, k, idx, sizeof off, &off);
}

int mcl_ocl_arg_long(mcl_backend *be, cl_kernel k, int idx, int64_t v)
{
    cl_long x = (cl_long)v;
    return set_arg(be, k, idx, sizeof x, &x);
}

int mcl_ocl_arg_ulong(mcl_backend *be, cl_kernel k, int idx, uint64_t v)
{
    cl_ulong x = (cl_ulong)v;
    return set_arg(be, k, idx, sizeof x, &x);
}

int mcl_ocl_arg_float(mcl_backend *be, cl_kernel k, int idx, float v)
{
    cl_float x = v;
    return set_arg(be, k, idx, sizeof x, &x);
}

int mcl_ocl_arg_int(mcl_backend *be, cl_kernel k, int idx, int v)
{
    cl_int x = (cl_int)v;
    return set_arg(be, k, idx, sizeof x, &x);
}

int mcl_ocl_arg_local(mcl_backend *be, cl_kernel k, int idx, size_t bytes)
{
    return set_arg(be, k, idx, bytes, NULL);
}

int mcl_ocl_arg_mem(mcl_backend *be, cl_kernel k, int idx, cl_mem m)
{
    return set_arg(be, k, idx, sizeof m, &m);
}

cl_mem mcl_ocl_scratch(mcl_backend *be, size_t bytes)
{
    mcl_ocl *o = mcl_ocl_of(be);
    if (bytes == 0) bytes = sizeof(float);
    if (o->scratch && o->scratch_bytes >= bytes) return o->scratch;
    if (o->scratch) clReleaseMemObject(o->scratch); /* freed once queued work is done */
    o->scratch = NULL;
    o->scratch_bytes = 0;
    size_t want = bytes < 4096 ? 4096 : bytes;
    cl_int err;
    o->scratch = clCreateBuffer(o->context, CL_MEM_READ_WRITE, want, NULL, &err);
    if (err != CL_SUCCESS) {
        o->scratch = NULL;
        mcl_ocl_fail(be, err, "clCreateBuffer (scratch)");
        return NULL;
    }
    o->scratch_bytes = want;
    return o->scratch;
}

size_t mcl_ocl_reduce_wg(size_t wg_max)
{
    size_t w = 1;
    while (w * 2 <= wg_max && w * 2 <= 256) w *= 2;
    return w;
}

size_t mcl_ocl_row_wg(size_t wg_max, int64_t N)
{
    size_t w = mcl_ocl_reduce_wg(wg_max);
    while (w > 32 && (int64_t)(w / 2) >= N) w /= 2;
    return w;
}

static mcl_status enqueue(mcl_backend *be, cl_kernel k, size_t global, size_t local, const char *what)
{
    if (global == 0) return MCL_OK;
    cl_int err = clEnqueueNDRangeKernel(mcl_ocl_of(be)->queue, k, 1, NULL, &global, &local, 0, NULL,
                                        NULL);
    return err == CL_SUCCESS ? MCL_OK : mcl_ocl_fail(be, err, what);
}

mcl_status mcl_ocl_run1d(mcl_backend *be, cl_kernel k, size_t n, size_t local, const char *what)
{
    if (n == 0) return MCL_OK;
    mcl_ocl *o = mcl_ocl_of(be);
    size_t wg = o->max_wg;
    for (int i = 0; i < o->n_kernels; i++)
        if (o->kernels[i].k == k) wg = o->kernels[i].wg_max;
    /* default 256 items (or the kernel's limit): a common size on GPUs, and on PoCL fewer,
     * larger work-groups (MLP step 2% faster than with 64, 4% slower with 1024) */
    if (local == 0 || local > wg) local = wg < 256 ? wg : 256;
    if (local == 0) local = 1;
    size_t global = (n + local - 1) / local * local;
    return enqueue(be, k, global, local, what);
}

mcl_status mcl_ocl_run_groups(mcl_backend *be, cl_kernel k, size_t n_groups, size_t local,
                              const char *what)
{
    return enqueue(be, k, n_groups * local, local, what);
}

mcl_status mcl_ocl_launch(mcl_backend *be, cl_kernel k, int idx, int64_t n, const char *what)
{
    if (idx < 0) return mcl_ocl_recorded(be);
    return mcl_ocl_run1d(be, k, (size_t)n, 0, what);
}

mcl_status mcl_ocl_launch_groups(mcl_backend *be, cl_kernel k, int idx, size_t n_groups,
                                 size_t local, const char *what)
{
    if (idx < 0) return mcl_ocl_recorded(be);
    return mcl_ocl_run_groups(be, k, n_groups, local, what);
}

/* kname(t[0], .., t[nt-1], [*f,] n) over n = numel(t[nt-1]) work-items (f NULL: no float). */
static mcl_status launch_map(mcl_backend *be, const char *kname, const mcl_tensor *const *t,
                             int nt, const float *f, const char *what)
{
    char wb[160];
    const int64_t n = mcl_tensor_numel(t[nt - 1]);
    cl_kernel k = mcl_ocl_kernel(be, kname, NULL);
    int i = k ? 0 : -1;
    for (int j = 0; j < nt; j++) i = mcl_ocl_arg_tensor(be, k, i, t[j]);
    if (f) i = mcl_ocl_arg_float(be, k, i, *f);
    i = mcl_ocl_arg_long(be, k, i, n);
    if (!what) what = mcl_ocl_what_on(wb, sizeof wb, kname, t[nt - 1]);
    return mcl_ocl_launch(be, k, i, n, what);
}

mcl_status mcl_ocl_launch_unary(mcl_backend *be, const char *kname, const mcl_tensor *x,
                                const mcl_tensor *y, const char *what)
{
    const mcl_tensor *t[] = {x, y};
    return launch_map(be, kname, t, 2, NULL, what);
}

mcl_status mcl_ocl_launch_unary_f(mcl_backend *be, const char *kname, const mcl_tensor *x,
                                  const mcl_tensor *y, float f, const char *what)
{
    const mcl_tensor *t[] = {x, y};
    return launch_map(be, kname, t, 2, &f, what);
}

mcl_status mcl_ocl_launch_binary(mcl_backend *be, const char *kname, const mcl_tensor *x,
                                 const mcl_tensor *y, const mcl_tensor *z, const char *what)
{
    const mcl_tensor *t[] = {x, y, z};
    return launch_map(be, kname, t, 3, NULL, what);
}

const char *mcl_ocl_what_on(char *buf, size_t len, const char *kname, const mcl_tensor *t)
{
    char sb[64];
    snprintf(buf, len, "%s on %s", kname, mcl_shape_str(t, sb, sizeof sb));
    return buf;
}

const char *mcl_ocl_what_op(char *buf, size_t len, const char *op, const char *dir,
                            const char *kname, const char *tname, const mcl_tensor *t)
{
    char sb[64];
    snprintf(buf, len, "%s%s%s (kernel %s, %s %s)", op, dir ? " " : "", dir ? dir : "", kname,
             tname, mcl_shape_str(t, sb, sizeof sb));
    return buf;
}

/* ------------------------------------------------------------------ program */

/* 64-bit FNV-1a, continued from h. */
static uint64_t fnv1a(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

/* A kernel source or a program-cache entry: a regular file (a FIFO would block, a device
 * read without end) of at most MAX_READ bytes, else NULL. */
#define MAX_READ ((uint64_t)256 << 20)
static char *read_file(const char *path, size_t *len)
{
    FILE *f = NULL;
    uint64_t size = 0;
    if (mcl_fopen_regular(path, &f, &size, NULL, 0) != MCL_OK) return NULL;
    if (size > MAX_READ) {
        fclose(f);
        return NULL;
    }
    char *buf = malloc((size_t)size + 1);
    size_t n = buf ? fread(buf, 1, (size_t)size + 1, f) : 0;
    int bad = !buf || ferror(f) || n != (size_t)size; /* it changed while being read */
    fclose(f);
    if (bad) {
        free(buf);
        return NULL;
    }
    buf[n] = '\0';
    if (len) *len = n;
    return buf;
}

/* The program source: every kernel file in order, embedded or from METACL_KERNEL_DIR. */
static char *program_source(mcl_backend *be)
{
    const char *dir = getenv("METACL_KERNEL_DIR");
    size_t total = 1;
    char **parts = calloc((size_t)mcl_kernel_count, sizeof *parts);
    if (!parts) return NULL;
    for (int i = 0; i < mcl_kernel_count; i++) {
        if (dir && *dir) {
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", dir, mcl_kernel_names[i]);
            parts[i] = read_file(path, NULL);
            if (!parts[i]) {
                mcl_ctx_set_error(be->ctx, MCL_ERR_IO, "OpenCL: cannot read kernel file %s (%s)", path,
                                  strerror(errno));
                for (int j = 0; j < i; j++) free(parts[j]);
                free(parts);
                return NULL;
            }
        } else {
            parts[i] = strdup(mcl_kernel_sources[i]);
        }
        total += (parts[i] ? strlen(parts[i]) : 0) + 128;
    }
    static const char prefix[] =
        "/* metacl: no FP contraction, like the reference built with -ffp-contract=off */\n"
        "#pragma OPENCL FP_CONTRACT OFF\n";
    total += sizeof prefix;
    char *src = malloc(total);
    size_t n = 0;
    if (src) n += (size_t)snprintf(src, total, "%s", prefix);
    for (int i = 0; i < mcl_kernel_count; i++) {
        if (src && parts[i])
            n += (size_t)snprintf(src + n, total - n, "\n/* ---- %s ---- */\n%s\n", mcl_kernel_names[i],
                                  parts[i]);
        free(parts[i]);
    }
    free(parts);
    if (!src) mcl_ctx_set_error(be->ctx, MCL_ERR_OOM, "OpenCL: out of memory (program source)");
    return src;
}

static int cache_dir(char *out, size_t len)
{
    const char *x = getenv("XDG_CACHE_HOME");
    const char *home = getenv("HOME");
    if (x && *x)
        snprintf(out, len, "%s/metacl", x);
    else if (home && *home)
        snprintf(out, len, "%s/.cache/metacl", home);
    else
        return -1;
    /* mkdir -p of the last two components */
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s", out);
    for (char *p = tmp + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            mkdir(tmp, 0755);
            *p = '/';
        }
    if (mkdir(tmp, 0755) != 0 && errno != EEXIST) return -1;
    return 0;
}

static void put_u32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static uint32_t get_u32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Parse a cache file; returns a malloc'd binary when the key and CRC match. */
static unsigned char *cache_load(const char *path, const char *key, size_t *bin_len)
{
    size_t n;
    char *buf = read_file(path, &n);
    if (!buf) return NULL;
    const unsigned char *b = (const unsigned char *)buf;
    size_t klen = strlen(key);
    unsigned char *bin = NULL;
    if (n >= 8 + 4 + 8 + 4 && memcmp(b, "MCLPROG1", 8) == 0 && get_u32(b + 8) == klen &&
        n >= 12 + klen + 8 + 4 && memcmp(b + 12, key, klen) == 0) {
        const unsigned char *q = b + 12 + klen;
        uint64_t bl = (uint64_t)get_u32(q) | (uint64_t)get_u32(q + 4) << 32;
        if (bl > 0 && bl == n - (12 + klen + 8 + 4)) {
            uint32_t crc = (uint32_t)crc32(0L, b, (uInt)(n - 4));
            if (crc == get_u32(b + n - 4) && (bin = malloc(bl)) != NULL) {
                memcpy(bin, q + 8, bl);
                *bin_len = bl;
            }
        }
    }
    free(buf);
    return bin;
}

static void cache_store(const char *path, const char *key, const unsigned char *bin, size_t bin_len)
{
    size_t klen = strlen(key), n = 12 + klen + 8 + bin_len + 4;
    unsigned char *b = malloc(n);
    if (!b) return;
    memcpy(b, "MCLPROG1", 8);
    put_u32(b + 8, (uint32_t)klen);
    memcpy(b + 12, key, klen);
    put_u32(b + 12 + klen, (uint32_t)bin_len);
    put_u32(b + 16 + klen, (uint32_t)((uint64_t)bin_len >> 32));
    memcpy(b + 20 + klen, bin, bin_len);
    put_u32(b + n - 4, (uint32_t)crc32(0L, b, (uInt)(n - 4)));
    char tmp[4400];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "wb");
    int ok = f && fwrite(b, 1, n, f) == n;
    if (f && fclose(f) != 0) ok = 0;
    if (ok && rename(tmp, path) == 0) {
        free(b);
        return;
    }
    remove(tmp); /* the cache is an optimization: failing to write it is not an error */
    free(b);
}

static mcl_status build_log_error(mcl_backend *be, cl_int err)
{
    mcl_ocl *o = mcl_ocl_of(be);
    size_t n = 0;
    clGetProgramBuildInfo(o->program, o->device, CL_PROGRAM_BUILD_LOG, 0, NULL, &n);
    char *log = malloc(n + 1);
    if (log) {
        log[0] = '\0';
        clGetProgramBuildInfo(o->program, o->device, CL_PROGRAM_BUILD_LOG, n, log, NULL);
        log[n] = '\0';
        fprintf(stderr, "metacl: OpenCL program build log (%s):\n%s\n", o->device_name, log);
    }
    mcl_ctx_set_error(be->ctx, MCL_ERR_BACKEND,
                      "OpenCL: building the kernels failed: %s on %s; build log: %.400s",
                      mcl_cl_status_str(err), o->device_name, log ? log : "(unavailable)");
    free(log);
    return MCL_ERR_BACKEND;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}


static mcl_status build_program(mcl_backend *be)
{
    mcl_ocl *o = mcl_ocl_of(be);
    double t0 = now_s();
    char *src = program_source(be);
    if (!src) return mcl_ctx_status(be->ctx);
    /* Correctly rounded float division and sqrt where the device offers them (the reference's
     * are IEEE-exact); no relaxed-math options ever. */
    cl_device_fp_config fp = 0;
    clGetDeviceInfo(o->device, CL_DEVICE_SINGLE_FP_CONFIG, sizeof fp, &fp, NULL);
    const char *build_options = (fp & CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT)
                                    ? BUILD_OPTIONS_BASE " -cl-fp32-correctly-rounded-divide-sqrt"
                                    : BUILD_OPTIONS_BASE;
    char pver[128] = "";
    clGetPlatformInfo(o->platform, CL_PLATFORM_VERSION, sizeof pver, pver, NULL);
    uint64_t sh = fnv1a(0xcbf29ce484222325ull, src, strlen(src));
    char key[1024];
    snprintf(key, sizeof key,
             "source-fnv1a=%016llx;options=%s;platform=%s;platform-version=%s;device=%s;driver=%s",
             (unsigned long long)sh, build_options, o->platform_name, pver, o->device_name,
             o->driver_version);
    uint64_t kh = fnv1a(0xcbf29ce484222325ull, key, strlen(key));
    char dir[4000], path[4100];
    const char *nc = getenv("METACL_NO_CACHE");
    int use_cache = !(nc && *nc && strcmp(nc, "0") != 0) && cache_dir(dir, sizeof dir) == 0;
    cl_int err = CL_SUCCESS;
    o->from_cache = 0;
    if (use_cache) {
        snprintf(path, sizeof path, "%s/program-%016llx.bin", dir, (unsigned long long)kh);
        size_t bl = 0;
        unsigned char *bin = cache_load(path, key, &bl);
        if (bin) {
            const unsigned char *bp = bin;
            cl_int bstat;
            o->program = clCreateProgramWithBinary(o->context, 1, &o->device, &bl, &bp, &bstat, &err);
            if (err == CL_SUCCESS && bstat == CL_SUCCESS &&
                clBuildProgram(o->program, 1, &o->device, build_options, NULL, NULL) == CL_SUCCESS) {
                o->from_cache = 1;
            } else if (o->program) {
                clReleaseProgram(o->program); /* stale or unusable: rebuild below */
                o->program = NULL;
            }
            free(bin);
        }
    }
    if (!o->from_cache) {
        if (use_cache)
            mcl_notice("compiling the OpenCL kernels for %s (once: the program is then cached in %s)",
                       o->device_name, dir);
        else
            mcl_notice("compiling the OpenCL kernels for %s (not cached)", o->device_name);
        const char *sp = src;
        o->program = clCreateProgramWithSource(o->context, 1, &sp, NULL, &err);
        if (err != CL_SUCCESS) {
            free(src);
            return mcl_ocl_fail(be, err, "clCreateProgramWithSource");
        }
        err = clBuildProgram(o->program, 1, &o->device, build_options, NULL, NULL);
        if (err != CL_SUCCESS) {
            free(src);
            return build_log_error(be, err);
        }
        if (use_cache) {
            size_t bl = 0;
            if (clGetProgramInfo(o->program, CL_PROGRAM_BINARY_SIZES, sizeof bl, &bl, NULL) == CL_SUCCESS &&
                bl > 0) {
                unsigned char *bin = malloc(bl);
                if (bin && clGetProgramInfo(o->program, CL_PROGRAM_BINARIES, sizeof bin, &bin, NULL) ==
                               CL_SUCCESS)
                    cache_store(path, key, bin, bl);
                free(bin);
            }
        }
    }
    free(src);
    o->build_seconds = now_s() - t0;
    return MCL_OK;
}

/* ------------------------------------------------------------------ device choice */

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

static mcl_status pick_device(mcl_backend *be, const char *want)
{
    mcl_ocl *o = mcl_ocl_of(be);
    const char *cache = mcl_opencl_cache_check(); /* before PoCL loads: it needs its cache */
    cl_uint np = 0;
    cl_int err = clGetPlatformIDs(0, NULL, &np);
    if ((err != CL_SUCCESS || np == 0) && cache)
        return mcl_ctx_set_error(be->ctx, MCL_ERR_UNSUPPORTED, "OpenCL: no OpenCL platform found (%s); %s",
                                 err == CL_SUCCESS ? "0 platforms" : mcl_cl_status_str(err), cache);
    if (err != CL_SUCCESS || np == 0)
        return mcl_ctx_set_error(be->ctx, MCL_ERR_UNSUPPORTED,
                                 "OpenCL: no OpenCL platform found (%s); install a driver, e.g. the "
                                 "Debian package pocl-opencl-icd for the CPU",
                                 err == CL_SUCCESS ? "0 platforms" : mcl_cl_status_str(err));
    cl_platform_id plats[32];
    if (np > 32) np = 32;
    clGetPlatformIDs(np, plats, NULL);
    char *endp = NULL;
    long want_idx = -1;
    if (want && *want) {
        want_idx = strtol(want, &endp, 10);
        if (*endp) want_idx = -2; /* a name */
    } else {
        want_idx = 0;
    }
    int idx = 0;
    for (cl_uint p = 0; p < np; p++) {
        cl_uint nd = 0;
        if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 0, NULL, &nd) != CL_SUCCESS || nd == 0) continue;
        cl_device_id devs[64];
        if (nd > 64) nd = 64;
        clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, nd, devs, NULL);
        for (cl_uint d = 0; d < nd; d++, idx++) {
            char pname[128] = "", dname[256] = "", full[400];
            clGetPlatformInfo(plats[p], CL_PLATFORM_NAME, sizeof pname, pname, NULL);
            clGetDeviceInfo(devs[d], CL_DEVICE_NAME, sizeof dname, dname, NULL);
            snprintf(full, sizeof full, "%s %s", pname, dname);
            if ((want_idx >= 0 && idx == want_idx) || (want_idx == -2 && ci_contains(full, want))) {
                o->platform = plats[p];
                o->device = devs[d];
                snprintf(o->platform_name, sizeof o->platform_name, "%s", pname);
                snprintf(o->device_name, sizeof o->device_name, "%s", dname);
                return MCL_OK;
            }
        }
    }
    if (idx == 0 && cache)
        return mcl_ctx_set_error(be->ctx, MCL_ERR_UNSUPPORTED, "OpenCL: the platforms report no devices; %s",
                                 cache);
    if (idx == 0)
        return mcl_ctx_set_error(be->ctx, MCL_ERR_UNSUPPORTED,
                                 "OpenCL: the platforms report no devices; install a driver, e.g. "
                                 "pocl-opencl-icd");
    return mcl_ctx_set_error(be->ctx, MCL_ERR_INVALID,
                             "OpenCL: no device matches '%s' (%d devices; see `metacl devices`)",
                             want, idx);
}

/* ------------------------------------------------------------------ test hook */

#ifdef MCL_TEST_HOOKS
/* METACL_TEST_BREAK=<op> (configure --enable-test-hooks only): perturb one element of that
 * op's output after every forward/backward, to prove the differential runner can fail. */
static mcl_status break_hook(mcl_backend *be, const mcl_op_args *a, int backward)
{
    mcl_ocl *o = mcl_ocl_of(be);
    if ((int)a->op != o->break_op) return MCL_OK;
    const mcl_op_info *info = &mcl_op_table[a->op];
    mcl_tensor *t = NULL;
    if (backward) {
        for (int k = 0; k < info->n_in && !t; k++) t = a->gin[k];
    } else {
        t = info->n_out > 0 ? a->out[0] : a->in[0];
    }
    if (!t) return MCL_OK;
    float v;
    size_t off = (size_t)t->offset * sizeof(float);
    mcl_status s = be->buf_read(be, t->buf->handle, off, &v, sizeof v);
    if (s != MCL_OK) return s;
    v += 1e-2f + 1e-2f * (v < 0 ? -v : v);
    return be->buf_write(be, t->buf->handle, off, &v, sizeof v);
}
#endif

/* ------------------------------------------------------------------ life cycle */

static const mcl_op_impl ocl_impl[MCL_OP_COUNT] = {
#define MCL_OP(ID, name, n_in, n_out, n_diff_out, family, overwrites, has_bwd) \
    [MCL_OP_##ID] = {mcl_ocl_##name##_fwd, MCL_BWD_OR_NULL_##has_bwd(mcl_ocl_##name##_bwd)},
#include "ops.def"
#undef MCL_OP
};

/* Backward host code that calls mcl_ocl_grad_fresh on each gin before writing it. */
static const unsigned char bwd_fresh_aware[MCL_OP_COUNT] = {
    [MCL_OP_ADD] = 1,        [MCL_OP_BIAS_ADD] = 1, [MCL_OP_COPY] = 1,    [MCL_OP_RESHAPE] = 1,
    [MCL_OP_MATMUL] = 1,     [MCL_OP_RELU] = 1,     [MCL_OP_LEAKY_RELU] = 1,
    [MCL_OP_ELU] = 1,        [MCL_OP_SIGMOID] = 1,  [MCL_OP_TANH] = 1,    [MCL_OP_GELU] = 1,
    [MCL_OP_EXP] = 1,        [MCL_OP_LOG] = 1,
};

/* Every op goes through these two: the lazy zeroing of buffers.c, then the op. */
static mcl_status ocl_fwd(mcl_backend *be, const mcl_op_args *a)
{
    mcl_status s = mcl_ocl_prepare_fwd(be, a);
    return s != MCL_OK ? s : ocl_impl[a->op].fwd(be, a);
}

static mcl_status ocl_bwd(mcl_backend *be, const mcl_op_args *a)
{
    mcl_status s = mcl_ocl_prepare_bwd(be, a, bwd_fresh_aware[a->op]);
    return s != MCL_OK ? s : ocl_impl[a->op].bwd(be, a);
}

/* Tear down in dependency order, on success and on every error path alike. First the queue is
 * finished: PoCL compiles work-group functions and runs commands on its own threads, and a
 * context released (or a process exiting) under them crashes inside its compiler. Then
 * CLBlast's program cache, which holds programs of this context, is emptied; then kernels,
 * program, buffers, queue and context. */
static void ocl_destroy(mcl_backend *be)
{
    if (!be) return;
    mcl_ocl *o = mcl_ocl_of(be);
    if (o) {
        if (o->queue) clFinish(o->queue);
        if (o->context) mcl_ocl_clblast_teardown(o);
        for (int i = 0; i < o->n_kernels; i++) clReleaseKernel(o->kernels[i].k);
        free(o->kernels);
        o->kernels = NULL;
        o->n_kernels = 0;
        if (o->program) clReleaseProgram(o->program);
        o->program = NULL;
        if (o->scratch) clReleaseMemObject(o->scratch);
        o->scratch = NULL;
        mcl_ocl_buffers_release(o);
        if (o->queue) {
            clFinish(o->queue); /* the releases above may have queued work of their own */
            clReleaseCommandQueue(o->queue);
        }
        if (o->context) clReleaseContext(o->context);
        free(o);
    }
    free(be);
}

static const char *ocl_device_name(const mcl_backend *be)
{
    return mcl_ocl_of((mcl_backend *)be)->device_name;
}

mcl_status mcl_opencl_backend_create(mcl_ctx *ctx, const char *device, mcl_backend **out)
{
    *out = NULL;
    mcl_backend *be = calloc(1, sizeof *be);
    mcl_ocl *o = calloc(1, sizeof *o);
    if (!be || !o) {
        free(be);
        free(o);
        return mcl_ctx_set_error(ctx, MCL_ERR_OOM, "OpenCL: out of memory");
    }
    be->kind = MCL_BACKEND_OPENCL;
    be->name = "opencl";
    be->device_name = ocl_device_name;
    be->ctx = ctx;
    be->impl = o;
    mcl_ocl_buffers_install(be);
    be->finish = ocl_finish;
    be->destroy = ocl_destroy;
    for (int op = 0; op < MCL_OP_COUNT; op++) {
        o->ops[op].fwd = ocl_fwd;
        o->ops[op].bwd = ocl_impl[op].bwd ? ocl_bwd : NULL;
    }
    be->ops = o->ops;
    o->break_op = -1;
    if (!device || !*device) device = getenv("METACL_DEVICE");
    mcl_status s = pick_device(be, device);
    if (s != MCL_OK) goto fail;
    clGetDeviceInfo(o->device, CL_DRIVER_VERSION, sizeof o->driver_version, o->driver_version, NULL);
    clGetDeviceInfo(o->device, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof o->max_wg, &o->max_wg, NULL);
    cl_ulong lm = 0, ma = 0;
    clGetDeviceInfo(o->device, CL_DEVICE_LOCAL_MEM_SIZE, sizeof lm, &lm, NULL);
    clGetDeviceInfo(o->device, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof ma, &ma, NULL);
    o->local_mem = (size_t)lm;
    o->max_alloc = (size_t)ma;
    if (o->max_wg == 0) o->max_wg = 1;
    cl_int err;
    o->context = clCreateContext(NULL, 1, &o->device, NULL, NULL, &err);
    if (err != CL_SUCCESS) {
        s = mcl_ocl_fail(be, err, "clCreateContext");
        goto fail;
    }
    o->queue = clCreateCommandQueue(o->context, o->device, 0, &err);
    if (err != CL_SUCCESS) {
        s = mcl_ocl_fail(be, err, "clCreateCommandQueue");
        goto fail;
    }
    if ((s = build_program(be)) != MCL_OK) goto fail;
    mcl_ocl_clblast_setup(o);
#ifdef MCL_TEST_HOOKS
    const char *brk = getenv("METACL_TEST_BREAK");
    if (brk && *brk) {
        mcl_op op = mcl_op_by_name(brk);
        if (op == MCL_OP_COUNT) {
            s = mcl_ctx_set_error(ctx, MCL_ERR_INVALID, "METACL_TEST_BREAK=%s names no op", brk);
            goto fail;
        }
        o->break_op = (int)op;
        be->post_op = break_hook;
    }
#endif
    *out = be;
    return MCL_OK;
fail:
    ocl_destroy(be);
    return s;
}

/* Facts for `metacl devices`/benchmarks about a context's device. */
const char *mcl_opencl_device_name(const mcl_ctx *ctx)
{
    if (!ctx || ctx->be->kind != MCL_BACKEND_OPENCL) return NULL;
    return mcl_ocl_of(ctx->be)->device_name;
}

double mcl_opencl_build_seconds(const mcl_ctx *ctx, int *from_cache)
{
    if (!ctx || ctx->be->kind != MCL_BACKEND_OPENCL) return -1.0;
    if (from_cache) *from_cache = mcl_ocl_of(ctx->be)->from_cache;
    return mcl_ocl_of(ctx->be)->build_seconds;
}
