/* testutil.h — small helpers shared by the metacl test programs.
 *
 * Every test program is a standalone main that
 *   - prints its name and fixed seed first (tu_begin),
 *   - counts checks with CHECK / CHECK_NEAR / CHECK_ARRAY / CHECK_TENSOR / CHECK_ERR,
 *     printing file:line and a message for each failure,
 *   - ends with tu_summary(), which prints "N passed, N failed" alone on a line and returns
 *     the exit code (0 all passed, 1 something failed).
 * Exit code 77 (automake SKIP) is TU_SKIP.
 *
 * The pure predicates (tu_near, tu_first_mismatch*) count nothing, so a test can assert
 * that a deliberately wrong value IS detected: CHECK(!tu_near(x, wrong, ...), "...").
 */
#ifndef METACL_TESTUTIL_H
#define METACL_TESTUTIL_H

#include <stddef.h>
#include <stdint.h>

#include "metacl.h"

#define TU_SKIP 77

#if defined(__GNUC__)
#define TU_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define TU_PRINTF(f, a)
#endif

/* Print "<name>: seed = <seed>" (always the first line of a test's output). */
void tu_begin(const char *name, uint64_t seed);

/* Count one check; on failure print "file:line: FAIL: message". Returns cond (0/1). */
int tu_check(int cond, const char *file, int line, const char *fmt, ...) TU_PRINTF(4, 5);
#define CHECK(cond, ...) tu_check((cond) ? 1 : 0, __FILE__, __LINE__, __VA_ARGS__)

/* |got - want| <= atol + rtol * |want|; NaN/Inf in either is never close unless both are
 * the same infinity. Pure (counts nothing). */
int tu_near(double got, double want, double atol, double rtol);
/* Index of the first element not tu_near, or -1 when all are close. Pure. */
int64_t tu_first_mismatch(const float *got, const double *want, int64_t n, double atol,
                          double rtol);
int64_t tu_first_mismatch_f(const float *got, const float *want, int64_t n, double atol,
                            double rtol);

/* Counting versions: print what/got/want/index on failure. */
int tu_check_near(const char *file, int line, const char *what, double got, double want,
                  double atol, double rtol);
int tu_check_array(const char *file, int line, const char *what, const float *got,
                   const double *want, int64_t n, double atol, double rtol);
/* Reads t (numel must equal n) and compares with want. */
int tu_check_tensor(const char *file, int line, const char *what, const mcl_tensor *t,
                    const double *want, int64_t n, double atol, double rtol);
#define CHECK_NEAR(what, got, want, atol, rtol)                                               \
    tu_check_near(__FILE__, __LINE__, (what), (got), (want), (atol), (rtol))
#define CHECK_ARRAY(what, got, want, n, atol, rtol)                                           \
    tu_check_array(__FILE__, __LINE__, (what), (got), (want), (n), (atol), (rtol))
#define CHECK_TENSOR(what, t, want, n, atol, rtol)                                            \
    tu_check_tensor(__FILE__, __LINE__, (what), (t), (want), (n), (atol), (rtol))

/* Error-status check: the context's status is one of the codes in `allowed` (a bit mask of
 * TU_ST(code)), the message is not empty and, when `needle` is not NULL, contains it.
 * Prints the actual status and message on failure. Does NOT clear the error. */
#define TU_ST(code) (1u << (unsigned)(code))
/* Pure predicate behind CHECK_ERR (counts nothing). */
int tu_err_matches(const mcl_ctx *ctx, unsigned allowed, const char *needle);
int tu_check_err(const char *file, int line, const char *what, const mcl_ctx *ctx,
                 unsigned allowed, const char *needle);
#define CHECK_ERR(what, ctx, allowed, needle)                                                 \
    tu_check_err(__FILE__, __LINE__, (what), (ctx), (allowed), (needle))

/* A reference-backend context. On failure prints the reason and exits with status 1
 * (after the summary line), so callers may rely on a non-NULL result. */
mcl_ctx *tu_ctx_ref(void);

/* New caller-owned tensor of the given shape filled with values (numel floats); NULL (and a
 * counted failure) on error. Free with mcl_tensor_free. */
mcl_tensor *tu_tensor_from(mcl_ctx *ctx, int ndim, const int64_t *shape, const float *values);
/* Same for a 1-D tensor of n values. */
mcl_tensor *tu_vec(mcl_ctx *ctx, int64_t n, const float *values);

/* The contents of t in a malloc'd array (numel floats); NULL (and a counted failure) on
 * error. free() it. */
float *tu_read(const mcl_tensor *t);

/* Is t NULL or all zeros? (for "gradient zeroed or dropped") */
int tu_is_zero_or_null(const mcl_tensor *t);

/* Remove path, a file or a directory with everything in it; 0 when it is gone. */
int tu_rm_rf(const char *path);
/* Entries of directory dir whose name contains substr ("" = all but . and ..); -1 when dir
 * cannot be read. */
int tu_count_entries(const char *dir, const char *substr);

/* Print "N passed, N failed" alone on a line; return 0 if nothing failed, else 1. */
int tu_summary(void);

int tu_passed(void);
int tu_failed(void);

/* ---- synthetic data shared by the model tests ---- */

/* Random images and labels, as the ACL model tests feed the model: img [rows, 1, side, side]
 * ~ N(0, 1) from Philox (seed, stream), lab [rows] = (i·mul + stream) mod n_labels. */
void tu_images_labels(mcl_ctx *ctx, int64_t rows, int64_t side, uint64_t seed, uint64_t stream, int64_t mul,
                      int64_t n_labels, mcl_tensor **img, mcl_tensor **lab);

/* An easily separable image set of bright blocks (the evaluation and baseline tests):
 * n_class classes of per_class 32×32 images, interleaved (image i is class i % n_class).
 * Every pixel of the background is uniform in [0, bg]; class c's block (h rows × w columns at
 * row y0 + dy·(c / 4), column x0 + dx·(c % 4)) is uniform in [fg, fg + fg_span). The values
 * come from the LCG s = s·mul + add (value s >> shift), s starting at seed. */
typedef struct tu_blocks {
    int n_class;
    uint32_t seed, mul, add;
    int shift, bg, fg, fg_span;
    int y0, dy, x0, dx, h, w;
} tu_blocks;
struct mcl_dataset;
/* The set as a named in-memory data set (mcl_dataset_from_arrays); NULL (and a failed CHECK)
 * on error. */
struct mcl_dataset *tu_blocks_dataset(const char *name, int per_class, const tu_blocks *b);

/* The tiny ACL model of the model tests (test-acl-objective, test-acl-featstats): defaults with
 * hidden 16, 2 heads, 2 layers, feed-forward x2, 4 conv channels, no dropout, n_way classes and
 * the given seed; a test changes what it studies afterwards. */
struct mcl_acl_config;
void tu_acl_tiny_config(struct mcl_acl_config *c, int n_way, uint64_t seed);

#endif
