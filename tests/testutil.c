/* testutil.c — see testutil.h. */
#define _POSIX_C_SOURCE 200809L
#include "testutil.h"
#include "tensor_impl.h"
#include "dataset.h"
#include "acl.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int g_passed;
static int g_failed;

void tu_begin(const char *name, uint64_t seed)
{
    printf("%s: seed = %llu\n", name, (unsigned long long)seed);
    fflush(stdout);
}

int tu_check(int cond, const char *file, int line, const char *fmt, ...)
{
    if (cond) {
        g_passed++;
        return 1;
    }
    g_failed++;
    fflush(stdout);
    fprintf(stderr, "%s:%d: FAIL: ", file, line);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fflush(stderr);
    return 0;
}

int tu_near(double got, double want, double atol, double rtol)
{
    if (isnan(got) || isnan(want)) return 0;
    if (isinf(got) || isinf(want)) return got == want;
    return fabs(got - want) <= atol + rtol * fabs(want);
}

int64_t tu_first_mismatch(const float *got, const double *want, int64_t n, double atol,
                          double rtol)
{
    for (int64_t i = 0; i < n; i++)
        if (!tu_near((double)got[i], want[i], atol, rtol)) return i;
    return -1;
}

int64_t tu_first_mismatch_f(const float *got, const float *want, int64_t n, double atol,
                            double rtol)
{
    for (int64_t i = 0; i < n; i++)
        if (!tu_near((double)got[i], (double)want[i], atol, rtol)) return i;
    return -1;
}

int tu_check_near(const char *file, int line, const char *what, double got, double want,
                  double atol, double rtol)
{
    int ok = tu_near(got, want, atol, rtol);
    return tu_check(ok, file, line, "%s: got %.9g, want %.9g (atol %g, rtol %g)", what, got,
                    want, atol, rtol);
}

int tu_check_array(const char *file, int line, const char *what, const float *got,
                   const double *want, int64_t n, double atol, double rtol)
{
    if (!got) return tu_check(0, file, line, "%s: no data", what);
    int64_t i = tu_first_mismatch(got, want, n, atol, rtol);
    if (i < 0) return tu_check(1, file, line, "%s", what);
    int64_t bad = 0;
    for (int64_t k = 0; k < n; k++)
        if (!tu_near((double)got[k], want[k], atol, rtol)) bad++;
    return tu_check(0, file, line,
                    "%s: element %lld got %.9g, want %.9g (atol %g, rtol %g; %lld of %lld differ)",
                    what, (long long)i, (double)got[i], want[i], atol, rtol, (long long)bad,
                    (long long)n);
}

int tu_check_tensor(const char *file, int line, const char *what, const mcl_tensor *t,
                    const double *want, int64_t n, double atol, double rtol)
{
    if (!t) return tu_check(0, file, line, "%s: tensor is NULL", what);
    int64_t numel = mcl_tensor_numel(t);
    if (numel != n)
        return tu_check(0, file, line, "%s: numel %lld, want %lld", what, (long long)numel,
                        (long long)n);
    float *got = tu_read(t);
    if (!got) return tu_check(0, file, line, "%s: could not read the tensor", what);
    int ok = tu_check_array(file, line, what, got, want, n, atol, rtol);
    free(got);
    return ok;
}

int tu_err_matches(const mcl_ctx *ctx, unsigned allowed, const char *needle)
{
    mcl_status st = mcl_ctx_status(ctx);
    const char *msg = mcl_ctx_error(ctx);
    if (!msg) return 0;
    int ok = st != MCL_OK && (unsigned)st < 32u && (allowed & TU_ST(st)) != 0;
    ok = ok && msg[0] != '\0';
    if (ok && needle) ok = strstr(msg, needle) != NULL;
    return ok;
}

int tu_check_err(const char *file, int line, const char *what, const mcl_ctx *ctx,
                 unsigned allowed, const char *needle)
{
    mcl_status st = mcl_ctx_status(ctx);
    const char *msg = mcl_ctx_error(ctx);
    if (!msg) msg = "(null message)";
    int ok = tu_err_matches(ctx, allowed, needle);
    return tu_check(ok, file, line, "%s: status %d (%s), message \"%s\"%s%s%s", what, (int)st,
                    mcl_status_str(st) ? mcl_status_str(st) : "?", msg,
                    needle ? " (expected to mention \"" : "", needle ? needle : "",
                    needle ? "\")" : "");
}

static void ctx_failed_exit(const char *why)
{
    fflush(stdout);
    fprintf(stderr, "FAIL: cannot create a reference-backend context: %s\n", why);
    g_failed++;
    (void)tu_summary();
    exit(1);
}

mcl_ctx *tu_ctx_ref(void)
{
    char err[256];
    err[0] = '\0';
    mcl_ctx *ctx = NULL;
    mcl_status st = mcl_ctx_create(&ctx, MCL_BACKEND_REF, NULL, err, sizeof err);
    if (st != MCL_OK || !ctx) {
        char why[400];
        snprintf(why, sizeof why, "status %d (%s): %s", (int)st,
                 mcl_status_str(st) ? mcl_status_str(st) : "?", err[0] ? err : "(no message)");
        if (ctx) mcl_ctx_free(ctx);
        ctx_failed_exit(why);
    }
    return ctx;
}

mcl_tensor *tu_tensor_from(mcl_ctx *ctx, int ndim, const int64_t *shape, const float *values)
{
    mcl_tensor *t = mcl_tensor_create(ctx, ndim, shape);
    if (!t) {
        tu_check(0, __FILE__, __LINE__, "tu_tensor_from: mcl_tensor_create failed: %s",
                 mcl_ctx_error(ctx));
        return NULL;
    }
    if (values) {
        mcl_status st = mcl_tensor_write(t, values, mcl_tensor_numel(t));
        if (st != MCL_OK) {
            tu_check(0, __FILE__, __LINE__, "tu_tensor_from: mcl_tensor_write failed: %s",
                     mcl_ctx_error(ctx));
            mcl_tensor_free(t);
            return NULL;
        }
    }
    return t;
}

mcl_tensor *tu_vec(mcl_ctx *ctx, int64_t n, const float *values)
{
    int64_t shape[1] = {n};
    return tu_tensor_from(ctx, 1, shape, values);
}

float *tu_read(const mcl_tensor *t)
{
    if (!t) {
        tu_check(0, __FILE__, __LINE__, "tu_read: NULL tensor");
        return NULL;
    }
    int64_t n = mcl_tensor_numel(t);
    if (n <= 0) {
        tu_check(0, __FILE__, __LINE__, "tu_read: numel %lld", (long long)n);
        return NULL;
    }
    float *v = malloc((size_t)n * sizeof *v);
    if (!v) {
        tu_check(0, __FILE__, __LINE__, "tu_read: out of memory");
        return NULL;
    }
    if (mcl_tensor_read(t, v, n) != MCL_OK) {
        tu_check(0, __FILE__, __LINE__, "tu_read: mcl_tensor_read failed: %s",
                 mcl_ctx_error(t->ctx));
        free(v);
        return NULL;
    }
    return v;
}

int tu_is_zero_or_null(const mcl_tensor *t)
{
    if (!t) return 1;
    float *v = tu_read(t);
    if (!v) return 0;
    int64_t n = mcl_tensor_numel(t);
    int zero = 1;
    for (int64_t i = 0; i < n; i++)
        if (v[i] != 0.0f) zero = 0;
    free(v);
    return zero;
}

int tu_summary(void)
{
    fflush(stderr);
    printf("%d passed, %d failed\n", g_passed, g_failed);
    fflush(stdout);
    return g_failed ? 1 : 0;
}

int tu_passed(void)
{
    return g_passed;
}

int tu_failed(void)
{
    return g_failed;
}

int tu_rm_rf(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0) return 0;
    if (S_ISDIR(st.st_mode)) {
        DIR *d = opendir(path);
        if (d) {
            struct dirent *e;
            while ((e = readdir(d)) != NULL) {
                if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
                char sub[4096];
                snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
                tu_rm_rf(sub);
            }
            closedir(d);
        }
        return rmdir(path);
    }
    return unlink(path);
}

int tu_count_entries(const char *dir, const char *substr)
{
    DIR *d = opendir(dir);
    if (!d) return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && strstr(e->d_name, substr)) n++;
    closedir(d);
    return n;
}

void tu_images_labels(mcl_ctx *ctx, int64_t rows, int64_t side, uint64_t seed, uint64_t stream, int64_t mul,
                      int64_t n_labels, mcl_tensor **img, mcl_tensor **lab)
{
    *img = mcl_tensor_new(ctx, rows, 1, side, side);
    *lab = mcl_tensor_new(ctx, rows, 0, 0, 0);
    mcl_tensor_randn(*img, seed, stream, 0.0f, 1.0f);
    float *lv = malloc((size_t)rows * sizeof *lv);
    for (int64_t i = 0; lv && i < rows; i++) lv[i] = (float)((i * mul + (int64_t)stream) % n_labels);
    if (lv) mcl_tensor_write(*lab, lv, rows);
    free(lv);
}

static uint32_t blocks_next(uint32_t *s, const tu_blocks *b)
{
    *s = *s * b->mul + b->add;
    return *s >> b->shift;
}

mcl_dataset *tu_blocks_dataset(const char *name, int per_class, const tu_blocks *b)
{
    const int64_t n = (int64_t)b->n_class * per_class;
    uint8_t *img = malloc((size_t)n * 1024);
    int32_t *lab = malloc((size_t)n * sizeof *lab);
    mcl_dataset *ds = NULL;
    char err[256] = "out of memory";
    if (img && lab) {
        uint32_t s = b->seed;
        for (int64_t i = 0; i < n; i++) {
            const int c = (int)(i % b->n_class);
            lab[i] = c;
            uint8_t *p = img + i * 1024;
            for (int q = 0; q < 1024; q++) p[q] = (uint8_t)(blocks_next(&s, b) % (uint32_t)(b->bg + 1));
            const int y0 = b->y0 + b->dy * (c / 4), x0 = b->x0 + b->dx * (c % 4);
            for (int y = y0; y < y0 + b->h; y++)
                for (int x = x0; x < x0 + b->w; x++)
                    p[y * 32 + x] = (uint8_t)(b->fg + (int)(blocks_next(&s, b) % (uint32_t)b->fg_span));
        }
        mcl_status st = mcl_dataset_from_arrays(name, img, lab, n, &ds, err, sizeof err);
        if (st != MCL_OK) ds = NULL;
    }
    CHECK(ds != NULL, "dataset %s: %s", name, err);
    free(img);
    free(lab);
    return ds;
}

void tu_acl_tiny_config(mcl_acl_config *c, int n_way, uint64_t seed)
{
    mcl_acl_config_default(c);
    c->n_way = n_way;
    c->hidden = 16;
    c->heads = 2;
    c->layers = 2;
    c->ff_mult = 2;
    c->dropout = 0.0f;
    c->conv_channels = 4;
    c->seed = seed;
}
