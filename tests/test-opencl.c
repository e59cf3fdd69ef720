/* test-opencl.c — the OpenCL backend's infrastructure (not the ops: see test-ops --backend):
 *   - Philox4x32-10 known answers computed ON THE DEVICE (kernels/rng.cl == src/common/rng.h);
 *   - the on-disk program cache: first build writes an entry, the second start loads it,
 *     a corrupt / truncated / foreign entry is detected and rebuilt, METACL_NO_CACHE=1 skips it;
 *   - device choice: by index, by name substring, a bad choice is a clear error;
 *   - an absurd allocation is an out-of-memory status, not a crash;
 *   - METACL_KERNEL_DIR pointing nowhere is a clear error;
 *   - the default device rule (first GPU, else accelerator, else CPU) on made-up listings;
 *   - error mapping: CL_OUT_OF_RESOURCES is OOM only for an allocation, else a backend error
 *     that points at METACL_SYNC=1;
 *   - launch limits: a work-group above the kernel's limit and __local memory beyond the
 *     device's are refused before the driver sees them, naming what was launched and the limit;
 *   - CLBlast's parameters: the plan fits every limit (32 .. 4096 items, 32/48/64 KiB), says
 *     what does not fit, and products through CLBlast's indirect path (Xgemm with its copy,
 *     pad and transpose kernels) match a host product under the current device's limits
 *     (run with POCL_MAX_WORK_GROUP_SIZE=32/64 by make check-small-wg);
 *   - srwm's __local formula gives the largest head sizes of doc/opencl-backend.md;
 *   - METACL_SYNC=1: a forward/backward gives the same bits; with the test hook
 *     METACL_TEST_FAULT a planted kernel fault is reported at the next blocking read as a
 *     backend error (not OOM) pointing at METACL_SYNC=1, and under METACL_SYNC=1 at the op
 *     itself, named with its direction and shapes;
 *   - the program cache key: an entry whose stored key differs only in the driver version or
 *     only in the build options is not loaded but rebuilt and rewritten.
 * Exit 77 (SKIP) only when no OpenCL device exists (or the build has no OpenCL).
 */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <math.h>
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
#include "profile.h"
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

/* CRC-32 (zlib's polynomial), for crafting cache entries. */
static uint32_t crc32_of(const unsigned char *p, size_t n)
{
    uint32_t c = 0xffffffffu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1u)));
    }
    return ~c;
}

static unsigned char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = len > 0 ? malloc((size_t)len) : NULL;
    if (b && fread(b, 1, (size_t)len, f) != (size_t)len) {
        free(b);
        b = NULL;
    }
    fclose(f);
    if (b) *n = (size_t)len;
    return b;
}

static void put32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}

/* The key text stored in a cache entry ("" if unreadable). */
static void entry_key(const char *path, char *key, size_t len)
{
    size_t n = 0;
    unsigned char *b = slurp(path, &n);
    key[0] = '\0';
    if (b && n > 12) {
        uint32_t kl = (uint32_t)b[8] | (uint32_t)b[9] << 8 | (uint32_t)b[10] << 16 | (uint32_t)b[11] << 24;
        if (12 + (size_t)kl <= n && kl < len) {
            memcpy(key, b + 12, kl);
            key[kl] = '\0';
        }
    }
    free(b);
}

/* Rewrite the entry at path with the key text's `field=value` replaced by `field=value+add`
 * (field "driver" or "options"), a consistent key length and a valid CRC: a well-formed entry
 * of another driver or other build options, under the same file name. 1 on success. */
static int craft_entry(const char *path, const char *field, const char *add)
{
    size_t n = 0;
    unsigned char *b = slurp(path, &n);
    if (!b || n < 12 + 8 + 4) {
        free(b);
        return 0;
    }
    const uint32_t kl = (uint32_t)b[8] | (uint32_t)b[9] << 8 | (uint32_t)b[10] << 16 | (uint32_t)b[11] << 24;
    char key[2048], nkey[2200], pat[32];
    if (kl >= sizeof key || 12 + (size_t)kl > n) {
        free(b);
        return 0;
    }
    memcpy(key, b + 12, kl);
    key[kl] = '\0';
    snprintf(pat, sizeof pat, "%s=", field);
    char *at = strstr(key, pat);
    if (!at) {
        free(b);
        return 0;
    }
    char *end = strchr(at, ';');
    size_t head = (size_t)((end ? end : key + kl) - key);
    snprintf(nkey, sizeof nkey, "%.*s%s%s", (int)head, key, add, end ? end : "");
    const size_t nkl = strlen(nkey), rest = n - 12 - kl - 4; /* binary length + binary */
    const size_t m = 12 + nkl + rest + 4;
    unsigned char *o = malloc(m);
    if (!o) {
        free(b);
        return 0;
    }
    memcpy(o, b, 8);
    put32(o + 8, (uint32_t)nkl);
    memcpy(o + 12, nkey, nkl);
    memcpy(o + 12 + nkl, b + 12 + kl, rest);
    put32(o + m - 4, crc32_of(o, m - 4));
    FILE *f = fopen(path, "wb");
    int ok = f && fwrite(o, 1, m, f) == m;
    if (f && fclose(f) != 0) ok = 0;
    free(o);
    free(b);
    return ok;
}

/* Host product C[m,n] = op(A) op(B) in double (A stored [m,k] or [k,m], B [k,n] or [n,k]). */
static void host_gemm(int ta, int tb, int64_t m, int64_t n, int64_t k, const float *A,
                      const float *B, double *C)
{
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double acc = 0;
            for (int64_t p = 0; p < k; p++)
                acc += (double)(ta ? A[p * m + i] : A[i * k + p]) * (double)(tb ? B[j * k + p] : B[p * n + j]);
            C[i * n + j] = acc;
        }
}

/* One product through mcl_matmul on ctx against the host; returns the largest error relative
 * to max(1, |want|), or -1 when the op failed. `perturb` adds a deliberate error to the result
 * first (the comparison must be able to fail). */
static double gemm_error(mcl_ctx *ctx, int64_t batch, int64_t m, int64_t n, int64_t k, int ta,
                         int tb, int perturb)
{
    int64_t sa[3] = {batch, ta ? k : m, ta ? m : k}, sb[3] = {batch, tb ? n : k, tb ? k : n};
    mcl_tensor *A = mcl_tensor_create(ctx, 3, sa), *B = mcl_tensor_create(ctx, 3, sb);
    double worst = -1;
    if (A && B && mcl_tensor_randn(A, 7, 1, 0.0f, 1.0f) == MCL_OK &&
        mcl_tensor_randn(B, 7, 2, 0.0f, 1.0f) == MCL_OK) {
        mcl_tensor *C = mcl_matmul(ctx, A, B, ta, tb);
        float *ha = malloc((size_t)(batch * m * k) * sizeof *ha);
        float *hb = malloc((size_t)(batch * k * n) * sizeof *hb);
        float *hc = malloc((size_t)(batch * m * n) * sizeof *hc);
        double *want = malloc((size_t)(m * n) * sizeof *want);
        if (C && ha && hb && hc && want && mcl_tensor_read(A, ha, batch * m * k) == MCL_OK &&
            mcl_tensor_read(B, hb, batch * k * n) == MCL_OK &&
            mcl_tensor_read(C, hc, batch * m * n) == MCL_OK) {
            if (perturb) hc[(batch * m * n) / 2] += 0.05f;
            worst = 0;
            for (int64_t z = 0; z < batch; z++) {
                host_gemm(ta, tb, m, n, k, ha + z * m * k, hb + z * k * n, want);
                for (int64_t i = 0; i < m * n; i++) {
                    const double w = want[i], d = fabs((double)hc[z * m * n + i] - w) / (fabs(w) > 1 ? fabs(w) : 1);
                    if (d > worst) worst = d;
                }
            }
        }
        free(ha), free(hb), free(hc), free(want);
    }
    mcl_tensor_free(A);
    mcl_tensor_free(B);
    mcl_ctx_reset(ctx);
    return worst;
}

/* Library notices (mcl_notice) seen so far that mention CLBlast. */
static int n_clblast_notices;
static char last_notice[1024];
static void count_notice(void *arg, const char *msg)
{
    (void)arg;
    if (strstr(msg, "CLBlast")) {
        n_clblast_notices++;
        snprintf(last_notice, sizeof last_notice, "%s", msg);
    }
}

/* y = sum(relu(a . b)) forward and backward on ctx; the loss and a's gradient into out (1 + m*k
 * floats). MCL_OK or the failing status (the context's message says why). */
static mcl_status small_step(mcl_ctx *ctx, float *out)
{
    int64_t sa[2] = {6, 5}, sb[2] = {5, 7};
    mcl_tensor *a = mcl_param_create(ctx, "a", 2, sa), *b = mcl_tensor_create(ctx, 2, sb);
    mcl_status s = a && b ? MCL_OK : mcl_ctx_status(ctx);
    if (s == MCL_OK) s = mcl_tensor_randn(a, 3, 1, 0.0f, 1.0f);
    if (s == MCL_OK) s = mcl_tensor_randn(b, 3, 2, 0.0f, 1.0f);
    mcl_tensor *y = s == MCL_OK ? mcl_sum(ctx, mcl_relu(ctx, mcl_matmul(ctx, a, b, 0, 0))) : NULL;
    if (s == MCL_OK && !y) s = mcl_ctx_status(ctx);
    if (s == MCL_OK) s = mcl_tensor_read(y, out, 1);
    if (s == MCL_OK) s = mcl_backward(ctx, y);
    if (s == MCL_OK) s = mcl_tensor_read(mcl_tensor_grad(a), out + 1, 30);
    mcl_tensor_free(a);
    mcl_tensor_free(b);
    mcl_ctx_reset(ctx);
    return s;
}

int main(void)
{
    tu_begin("test-opencl", 0);
    mcl_set_notice_sink(count_notice, NULL);
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

    /* 1b. Every CLBlast call is counted: conv2d's GEMMs (conv.c) as well as matmul's (an
     * uncounted path made the launch counts of issue 28 too low by 113 per ACL step). */
    {
        mcl_ctx *c = open_ocl(NULL, err, sizeof err);
        CHECK(c != NULL, "open for the counter check: %s", c ? "" : err);
        if (c) {
            mcl_tensor *x = mcl_tensor_new(c, 2, 3, 9, 9);
            mcl_tensor *w = mcl_tensor_new(c, 4, 3, 3, 3);
            mcl_tensor *bias = mcl_tensor_new(c, 4, 0, 0, 0);
            mcl_tensor_randn(x, 1, 1, 0.0f, 1.0f);
            mcl_tensor_randn(w, 1, 2, 0.0f, 1.0f);
            mcl_tensor_randn(bias, 1, 3, 0.0f, 1.0f);
            mcl_backend_stats a, z, d;
            mcl_ctx_stats(c, &a);
            mcl_tensor *y = mcl_conv2d(c, x, w, bias, 1, 1);
            mcl_ctx_stats(c, &z);
            mcl_backend_stats_sub(&d, &z, &a);
            CHECK(y != NULL && d.clblast_calls >= 1 && d.enqueues >= d.clblast_calls + 1,
                  "conv2d forward counts its CLBlast call and its im2col: %llu CLBlast calls, "
                  "%llu enqueues (%s)", (unsigned long long)d.clblast_calls,
                  (unsigned long long)d.enqueues, y ? "" : mcl_ctx_error(c));
            mcl_tensor_free(bias); /* y is the context's (op results are freed with it) */
            mcl_tensor_free(w);
            mcl_tensor_free(x);
        }
        mcl_ctx_free(c);
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

    /* 3b. The default device: first GPU, else first accelerator, else first CPU, whatever
     * the listing order; none: -1. */
    {
        const cl_device_type cpu = CL_DEVICE_TYPE_CPU, gpu = CL_DEVICE_TYPE_GPU,
                             acc = CL_DEVICE_TYPE_ACCELERATOR;
        const cl_device_type l1[] = {cpu, gpu}, l2[] = {cpu, acc, cpu}, l3[] = {acc, cpu, gpu},
                             l4[] = {cpu, cpu}, l5[] = {CL_DEVICE_TYPE_CUSTOM, cpu},
                             l6[] = {cpu, acc | gpu | cpu}; /* oclgrind's type bits */
        CHECK(mcl_ocl_pick_default(l1, 2) == 1, "CPU, GPU: the GPU");
        CHECK(mcl_ocl_pick_default(l2, 3) == 1, "CPU, accelerator, CPU: the accelerator");
        CHECK(mcl_ocl_pick_default(l3, 3) == 2, "accelerator, CPU, GPU: the GPU");
        CHECK(mcl_ocl_pick_default(l4, 2) == 0, "CPU, CPU: the first");
        CHECK(mcl_ocl_pick_default(l5, 2) == 1, "custom, CPU: the CPU");
        CHECK(mcl_ocl_pick_default(l6, 2) == 1, "CPU, GPU+accelerator+CPU: the GPU one");
        CHECK(mcl_ocl_pick_default(NULL, 0) == -1, "no devices: -1");
        CHECK(mcl_ocl_pick_default(l1, 2) != 0, "the first device is not taken blindly");
    }

    /* 3c. Error mapping: CL_OUT_OF_RESOURCES means out of memory only where memory is
     * allocated; elsewhere it is a fault of a kernel queued earlier. */
    {
        mcl_backend *be = probe->be;
        mcl_status st = mcl_ocl_fail_alloc(be, CL_OUT_OF_RESOURCES, "clCreateBuffer (test)");
        CHECK(st == MCL_ERR_OOM, "an allocation with CL_OUT_OF_RESOURCES is MCL_ERR_OOM: %s",
              mcl_status_str(st));
        st = mcl_ocl_fail_alloc(be, CL_MEM_OBJECT_ALLOCATION_FAILURE, "clCreateBuffer (test)");
        CHECK(st == MCL_ERR_OOM, "an allocation with CL_MEM_OBJECT_ALLOCATION_FAILURE is OOM");
        st = mcl_ocl_fail(be, CL_OUT_OF_RESOURCES, "clEnqueueReadBuffer (test)");
        CHECK(st == MCL_ERR_BACKEND && strstr(mcl_ctx_error(probe), "METACL_SYNC=1") &&
                  strstr(mcl_ctx_error(probe), "faulted") && strstr(mcl_ctx_error(probe), "CL_OUT_OF_RESOURCES"),
              "CL_OUT_OF_RESOURCES at a read is a backend error pointing at METACL_SYNC=1: %s '%s'",
              mcl_status_str(st), mcl_ctx_error(probe));
        CHECK(st != MCL_ERR_OOM, "... and not out of memory");
        st = mcl_ocl_fail(be, CL_MEM_OBJECT_ALLOCATION_FAILURE, "clEnqueueNDRangeKernel (test)");
        CHECK(st == MCL_ERR_OOM, "CL_MEM_OBJECT_ALLOCATION_FAILURE anywhere is OOM");
        st = mcl_ocl_fail(be, CL_INVALID_KERNEL_ARGS, "clEnqueueNDRangeKernel (test)");
        CHECK(st == MCL_ERR_BACKEND && !strstr(mcl_ctx_error(probe), "METACL_SYNC"),
              "another code is a plain backend error: '%s'", mcl_ctx_error(probe));
        mcl_ctx_clear_error(probe);
    }

    /* 3d. Launch limits, refused before the driver sees them. */
    {
        mcl_backend *be = probe->be;
        mcl_ocl *o = mcl_ocl_of(be);
        size_t wg = 0;
        cl_kernel k = mcl_ocl_kernel(be, "softmax_fwd", &wg);
        CHECK(k != NULL && wg >= 1 && wg <= o->max_wg, "softmax_fwd's limit %zu <= device %zu", wg,
              o->max_wg);
        /* a work-group above the kernel's limit */
        int i = k ? mcl_ocl_arg_local(be, k, 5, 8 * sizeof(float)) : -1;
        mcl_status st = mcl_ocl_launch_groups(be, k, i, 1, 2 * wg, "softmax forward (test, x [3,7])");
        CHECK(st == MCL_ERR_UNSUPPORTED && strstr(mcl_ctx_error(probe), "softmax forward (test, x [3,7])") &&
                  strstr(mcl_ctx_error(probe), "CL_KERNEL_WORK_GROUP_SIZE"),
              "a group of 2 x the kernel's limit is refused naming the launch and the limit: %s '%s'",
              mcl_status_str(st), mcl_ctx_error(probe));
        mcl_ctx_clear_error(probe);
        /* a __local argument beyond the device */
        i = mcl_ocl_arg_local(be, k, 5, o->local_mem + 1);
        CHECK(i < 0 && strstr(mcl_ctx_error(probe), "CL_DEVICE_LOCAL_MEM_SIZE"),
              "a __local buffer above the device's memory is refused: '%s'", mcl_ctx_error(probe));
        mcl_ctx_clear_error(probe);
        /* two __local arguments that fit alone but not together */
        cl_kernel ka = mcl_ocl_kernel(be, "attn_kv_fwd", NULL);
        cl_uint na = 0;
        if (ka) clGetKernelInfo(ka, CL_KERNEL_NUM_ARGS, sizeof na, &na, NULL);
        const size_t part = o->local_mem / 5 * 3;
        i = na >= 2 ? mcl_ocl_arg_local(be, ka, (int)na - 2, part) : -1;
        i = mcl_ocl_arg_local(be, ka, i, part);
        CHECK(i == (int)na, "each of two __local buffers of 3/5 of the device's memory is accepted");
        CHECK(mcl_ocl_local_bytes(be, ka) >= 2 * part, "their sum is counted: %zu",
              mcl_ocl_local_bytes(be, ka));
        st = mcl_ocl_launch_groups(be, ka, i, 1, 1, "attn_kv forward (test, q [1,1,4])");
        CHECK(st == MCL_ERR_UNSUPPORTED && strstr(mcl_ctx_error(probe), "attn_kv forward (test, q [1,1,4])") &&
                  strstr(mcl_ctx_error(probe), "__local memory"),
              "the launch is refused, naming it and the __local limit: %s '%s'", mcl_status_str(st),
              mcl_ctx_error(probe));
        mcl_ctx_clear_error(probe);
        if (na >= 2) { /* back to sizes the op itself would set */
            mcl_ocl_arg_local(be, ka, (int)na - 2, 64);
            mcl_ocl_arg_local(be, ka, (int)na - 1, 64);
        }
        CHECK(mcl_ocl_local_bytes(be, ka) < o->local_mem, "resetting the arguments forgets the old sizes");
    }

    /* 3e. CLBlast's parameters fitted to the device's limits. */
    {
        static const size_t wgs[] = {16, 32, 64, 128, 256, 1024, 4096};
        static const size_t lms[] = {32 << 10, 48 << 10, 64 << 10, 1 << 20};
        int all_fit = 1, uncovered = 0;
        for (size_t a = 0; a < sizeof wgs / sizeof wgs[0]; a++)
            for (size_t b = 0; b < sizeof lms / sizeof lms[0]; b++)
                for (int cpu = 0; cpu < 2; cpu++) {
                    mcl_ocl_limits lim = {wgs[a], {wgs[a], wgs[a]}, lms[b], cpu};
                    mcl_ocl_clblast_choice plan[MCL_CLBLAST_KERNELS];
                    char why[512];
                    int n = mcl_ocl_clblast_plan(&lim, plan, why, sizeof why);
                    for (int j = 0; j < n; j++) {
                        if (plan[j].source != MCL_CLBLAST_DEFAULT &&
                            (plan[j].wg > lim.max_wg || plan[j].local_bytes > lim.local_mem))
                            all_fit = 0;
                        /* CLBlast's generic defaults need 64..256 items: below that, ours */
                        if (plan[j].source == MCL_CLBLAST_DEFAULT && lim.max_wg < 64 &&
                            strcmp(plan[j].kernel, "GemmRoutine") != 0)
                            uncovered = 1;
                    }
                }
        CHECK(all_fit, "every installed CLBlast kernel fits its work-group and __local limits");
        CHECK(!uncovered, "below 64 items, no GEMM kernel is left to CLBlast's defaults");
        mcl_ocl_limits small = {32, {32, 32}, 1 << 20, 1};
        mcl_ocl_clblast_choice plan[MCL_CLBLAST_KERNELS];
        char why[512];
        mcl_ocl_clblast_plan(&small, plan, why, sizeof why);
        CHECK(strstr(why, "Xgemm (64 work-items") != NULL && plan[0].source == MCL_CLBLAST_FITTED,
              "at 32 items the tuned Xgemm (8x8) is reported as not fitting and replaced: '%s'", why);
        CHECK(plan[1].source == MCL_CLBLAST_TUNED, "... the tuned XgemmDirect (4x4) still fits");
        mcl_ocl_limits big = {4096, {4096, 4096}, 1 << 20, 1};
        mcl_ocl_clblast_plan(&big, plan, why, sizeof why);
        int tuned = 1;
        for (int j = 0; j < MCL_CLBLAST_KERNELS; j++) tuned &= plan[j].source == MCL_CLBLAST_TUNED;
        CHECK(tuned && !why[0], "PoCL's own limits take every tuned value ('%s')", why);
        mcl_ocl_limits gpu = {1024, {1024, 1024}, 48 << 10, 0};
        mcl_ocl_clblast_plan(&gpu, plan, why, sizeof why);
        int dflt = 1;
        for (int j = 0; j < MCL_CLBLAST_KERNELS; j++) dflt &= plan[j].source == MCL_CLBLAST_DEFAULT;
        CHECK(dflt, "a GPU keeps CLBlast's database");

        /* products large enough for CLBlast's indirect path, under this device's limits */
        mcl_ocl *o = mcl_ocl_of(probe->be);
        printf("  device limits: work-groups <= %zu, %zu B __local\n", o->max_wg, o->local_mem);
        static const int tr[4][2] = {{0, 0}, {1, 0}, {0, 1}, {1, 1}};
        for (int t = 0; t < 4; t++) {
            const double e = gemm_error(probe, 1, 200, 176, 190, tr[t][0], tr[t][1], 0);
            CHECK(e >= 0 && e < 1e-4, "200x176x190 product (ta %d, tb %d) matches the host: error %.3g %s",
                  tr[t][0], tr[t][1], e, e < 0 ? mcl_ctx_error(probe) : "");
        }
        double e = gemm_error(probe, 2, 170, 160, 180, 0, 1, 0);
        CHECK(e >= 0 && e < 1e-4, "batched 2 x 170x160x180 product matches the host: error %.3g %s", e,
              e < 0 ? mcl_ctx_error(probe) : "");
        e = gemm_error(probe, 1, 200, 176, 190, 0, 0, 1);
        CHECK(e > 1e-3, "a perturbed product is detected (error %.3g)", e);
        /* the notice: once, and only when something did not fit */
        mcl_ctx *again = open_ocl(NULL, err, sizeof err);
        mcl_ctx_free(again);
        cl_device_type type = 0;
        clGetDeviceInfo(o->device, CL_DEVICE_TYPE, sizeof type, &type, NULL);
        mcl_ocl_limits mine = {o->max_wg, {o->max_item[0], o->max_item[1]}, o->local_mem,
                               (type & CL_DEVICE_TYPE_CPU) != 0};
        mcl_ocl_clblast_plan(&mine, plan, why, sizeof why);
        int fitted = 0;
        for (int j = 0; j < MCL_CLBLAST_KERNELS; j++) fitted |= plan[j].source == MCL_CLBLAST_FITTED;
        const int expect = (why[0] || fitted) ? 1 : 0;
        CHECK(n_clblast_notices == expect, "CLBlast notices: %d, expected %d (said once) %s",
              n_clblast_notices, expect, last_notice);
        if (n_clblast_notices) printf("  notice: %s\n", last_notice);
    }

    /* 3f. srwm's __local memory: the largest head sizes of doc/opencl-backend.md's table. */
    {
        static const size_t kib[3] = {32, 48, 64};
        static const int64_t want[2][3] = {{49, 61, 71}, {34, 42, 49}};
        for (int bwd = 0; bwd < 2; bwd++)
            for (int j = 0; j < 3; j++) {
                int64_t d = 0;
                while (mcl_ocl_srwm_local_bytes(bwd, d + 1) <= kib[j] << 10) d++;
                CHECK(d == want[bwd][j], "srwm %s at %zu KiB: largest D %lld (doc: %lld)",
                      bwd ? "backward" : "forward", kib[j], (long long)d, (long long)want[bwd][j]);
            }
        CHECK(mcl_ocl_srwm_local_bytes(0, 16) == 12 * 256 + 64 * 16 + 16 &&
                  mcl_ocl_srwm_local_bytes(1, 16) == 24 * 256 + 124 * 16 + 32,
              "srwm __local bytes follow the documented formulas at D = 16");
    }
    mcl_ctx_free(probe);

    /* 3g. METACL_SYNC=1 gives the same bits; a planted kernel fault (test hook) is reported
     * late without it and at the op with it. */
    {
        float plain[31], synced[31];
        mcl_ctx *c = open_ocl(NULL, err, sizeof err);
        mcl_status st = c ? small_step(c, plain) : MCL_ERR_BACKEND;
        CHECK(st == MCL_OK, "a small step runs: %s", c ? mcl_ctx_error(c) : err);
        mcl_ctx_free(c);
        setenv("METACL_SYNC", "1", 1);
        c = open_ocl(NULL, err, sizeof err);
        st = c ? small_step(c, synced) : MCL_ERR_BACKEND;
        CHECK(st == MCL_OK, "with METACL_SYNC=1 it runs too: %s", c ? mcl_ctx_error(c) : err);
        CHECK(st == MCL_OK && memcmp(plain, synced, sizeof plain) == 0,
              "with METACL_SYNC=1: the same loss and gradient, bit for bit");
        mcl_ctx_free(c);
        unsetenv("METACL_SYNC");
#ifdef MCL_TEST_HOOKS
        /* without METACL_SYNC: relu's launch "faults"; the forward returns, a later read fails */
        setenv("METACL_TEST_FAULT", "relu", 1);
        c = open_ocl(NULL, err, sizeof err);
        CHECK(c != NULL, "open with METACL_TEST_FAULT=relu: %s", c ? "" : err);
        if (c) {
            mcl_tensor *x = mcl_tensor_new(c, 3, 5, 0, 0);
            mcl_tensor_randn(x, 1, 1, 0.0f, 1.0f);
            mcl_tensor *y = mcl_relu(c, x);
            CHECK(y != NULL, "without METACL_SYNC the faulting op itself returns: %s", mcl_ctx_error(c));
            float v[15];
            st = y ? mcl_tensor_read(y, v, 15) : MCL_ERR_NULL;
            CHECK(st == MCL_ERR_BACKEND && strstr(mcl_ctx_error(c), "METACL_SYNC=1") &&
                      strstr(mcl_ctx_error(c), "CL_OUT_OF_RESOURCES"),
                  "the next read fails as a backend error pointing at METACL_SYNC=1: %s '%s'",
                  mcl_status_str(st), mcl_ctx_error(c));
            CHECK(!strstr(mcl_ctx_error(c), "relu"), "... which cannot name the op");
            mcl_tensor_free(x);
        }
        mcl_ctx_free(c);
        /* with METACL_SYNC=1 the same fault is reported by relu forward, with its shape */
        setenv("METACL_SYNC", "1", 1);
        c = open_ocl(NULL, err, sizeof err);
        if (c) {
            mcl_tensor *x = mcl_tensor_new(c, 3, 5, 0, 0);
            mcl_tensor_randn(x, 1, 1, 0.0f, 1.0f);
            mcl_tensor *y = mcl_relu(c, x);
            st = mcl_ctx_status(c);
            CHECK(y == NULL && st == MCL_ERR_BACKEND && strstr(mcl_ctx_error(c), "relu forward") &&
                      strstr(mcl_ctx_error(c), "[3,5]") && strstr(mcl_ctx_error(c), "METACL_SYNC=1"),
                  "METACL_SYNC=1 names the faulting op, direction and shape: %s '%s'",
                  mcl_status_str(st), mcl_ctx_error(c));
            mcl_tensor_free(x);
        }
        mcl_ctx_free(c);
        /* a fault in a backward */
        setenv("METACL_TEST_FAULT", "relu:backward", 1);
        c = open_ocl(NULL, err, sizeof err);
        if (c) {
            float out[31];
            st = small_step(c, out);
            CHECK(st == MCL_ERR_BACKEND && strstr(mcl_ctx_error(c), "relu backward") &&
                      strstr(mcl_ctx_error(c), "[6,7]"),
                  "METACL_SYNC=1 names a faulting backward: %s '%s'", mcl_status_str(st),
                  mcl_ctx_error(c));
        }
        mcl_ctx_free(c);
        /* a planted fault in another op leaves relu alone: the check is about that op */
        setenv("METACL_TEST_FAULT", "softmax", 1);
        c = open_ocl(NULL, err, sizeof err);
        if (c) {
            float out[31];
            st = small_step(c, out);
            CHECK(st == MCL_OK, "a fault planted in softmax does not touch a run without softmax: %s",
                  mcl_ctx_error(c));
        }
        mcl_ctx_free(c);
        /* NVIDIA's ways of saying so (seen on the H200: clFinish returned
         * CL_INVALID_COMMAND_QUEUE after attn_kv's misaligned access; -9999 from CLBlast):
         * reported as a fault of the op, not as a queue or an unknown error */
        const char *nv[] = {"relu@-36", "relu@-9999"};
        for (int i = 0; i < 2; i++) {
            setenv("METACL_TEST_FAULT", nv[i], 1);
            c = open_ocl(NULL, err, sizeof err);
            CHECK(c != NULL, "open with METACL_TEST_FAULT=%s: %s", nv[i], c ? "" : err);
            if (c) {
                mcl_tensor *x = mcl_tensor_new(c, 3, 5, 0, 0);
                mcl_tensor_randn(x, 1, 1, 0.0f, 1.0f);
                mcl_tensor *y = mcl_relu(c, x);
                CHECK(y == NULL && strstr(mcl_ctx_error(c), "relu forward") &&
                          strstr(mcl_ctx_error(c), "a kernel of this op faulted"),
                      "METACL_TEST_FAULT=%s with METACL_SYNC=1: reported as relu's fault: '%s'", nv[i],
                      mcl_ctx_error(c));
                mcl_tensor_free(x);
            }
            mcl_ctx_free(c);
        }
        unsetenv("METACL_SYNC");
        setenv("METACL_TEST_FAULT", "relu@-9999", 1);
        c = open_ocl(NULL, err, sizeof err);
        CHECK(c != NULL, "open with METACL_TEST_FAULT=relu@-9999: %s", c ? "" : err);
        if (c) {
            mcl_tensor *x = mcl_tensor_new(c, 3, 5, 0, 0);
            mcl_tensor_randn(x, 1, 1, 0.0f, 1.0f);
            mcl_tensor *y = mcl_relu(c, x);
            float v[15];
            st = y ? mcl_tensor_read(y, v, 15) : MCL_ERR_NULL;
            CHECK(st == MCL_ERR_BACKEND && strstr(mcl_ctx_error(c), "illegal memory access") &&
                      strstr(mcl_ctx_error(c), "METACL_SYNC=1"),
                  "NVIDIA's -9999 at a read: a fault, pointing at METACL_SYNC=1: '%s'",
                  mcl_ctx_error(c));
            mcl_tensor_free(x);
        }
        mcl_ctx_free(c);
        setenv("METACL_SYNC", "1", 1);
        setenv("METACL_TEST_FAULT", "relu@-30", 1);
        c = open_ocl(NULL, err, sizeof err);
        CHECK(c == NULL && strstr(err, "@CODE"), "METACL_TEST_FAULT with a non-fault code is refused: '%s'", err);
        mcl_ctx_free(c);
        setenv("METACL_TEST_FAULT", "nosuchop", 1);
        c = open_ocl(NULL, err, sizeof err);
        CHECK(c == NULL && strstr(err, "METACL_TEST_FAULT"), "a bad METACL_TEST_FAULT is refused: '%s'", err);
        mcl_ctx_free(c);
        unsetenv("METACL_SYNC");
        unsetenv("METACL_TEST_FAULT");
#else
        printf("  (built without --enable-test-hooks: the planted-fault checks are skipped)\n");
#endif
    }

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
        /* an entry that differs only in the driver version, or only in the build options:
         * well formed (key length and CRC right), same file name -- not loaded, rebuilt and
         * rewritten with this device's key */
        static const char *field[2] = {"driver", "options"}, *add[2] = {"-other", " -DMCL_OTHER"};
        for (int f = 0; f < 2 && entry[0]; f++) {
            char key0[2048], key1[2048];
            entry_key(entry, key0, sizeof key0);
            CHECK(craft_entry(entry, field[f], add[f]), "crafted an entry with another %s", field[f]);
            entry_key(entry, key1, sizeof key1);
            CHECK(strcmp(key0, key1) != 0 && strstr(key1, add[f]), "the crafted key differs in %s only",
                  field[f]);
            CHECK(open_and_cached() == 0, "an entry of another %s is not loaded but rebuilt", field[f]);
            entry_key(entry, key1, sizeof key1);
            CHECK(strcmp(key0, key1) == 0, "the rebuilt entry is rewritten with this %s", field[f]);
            CHECK(open_and_cached() == 1, "the rewritten entry (%s) loads again", field[f]);
        }
        /* the check must be able to fail: an unchanged key still loads */
        if (entry[0]) {
            CHECK(craft_entry(entry, "driver", ""), "rewrote the entry with the same key");
            CHECK(open_and_cached() == 1, "an entry rewritten with the same key still loads");
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
