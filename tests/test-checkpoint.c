/* test-checkpoint.c — checkpoints (src/common/checkpoint.c).
 *
 *   1. Exact round trip on the reference backend: parameters, Adam state after a few steps,
 *      the step count, the RNG state, named counters and the config text come back bitwise;
 *      and training continued from the loaded copy stays bitwise equal to the original.
 *      An SGD (1 slot) round trip and a parameters-only load as well.
 *   2. When an OpenCL device exists: save from OpenCL and load into reference, and the other
 *      way round, bitwise.
 *   3. The file layout: magic, version, sections with CRC-32 recomputed here independently.
 *   4. A table of corrupt files (truncations at every section boundary, inside section
 *      headers, payloads and checksums, a flipped byte in every section, bad magic, wrong
 *      version, wrong model kind, a missing / extra / mis-shaped tensor, length fields past
 *      the end of the file, absurd counts, unknown and duplicate sections, trailing data, an
 *      empty file, a nonexistent file, optimizer mismatches): each is rejected with the
 *      right status and a message naming the file and the problem, and leaves the model it
 *      was loaded into untouched. Then every prefix of a file and every single-byte change
 *      of it must be rejected.
 *   5. Atomic saves: a failed save (into a missing directory, onto a directory, or cut short
 *      by the file-size limit) leaves an existing file byte-identical and no temporary file.
 *
 * Files are made in the current directory (names start with "tckpt-<pid>-") and removed.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checkpoint.h"
#include "metacl.h"
#include "tensor_impl.h"
#include "testutil.h"

#define SEED 20240611u
#define KIND "acl"
#define CONFIG_TEXT "model=acl\nlayers=2\nd_model=16\nlr=0.001\nname=a b=c # not a comment\n"

static char g_prefix[64];

static void fname(char *out, size_t cap, const char *suffix)
{
    snprintf(out, cap, "%s-%s", g_prefix, suffix);
}

/* ------------------------------------------------------------------ files and bytes */

static int write_bytes(const char *path, const unsigned char *b, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    size_t w = n ? fwrite(b, 1, n, f) : 0;
    return fclose(f) == 0 && w == n ? 0 : -1;
}

static unsigned char *read_bytes(const char *path, size_t *n)
{
    *n = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 4096, len = 0;
    unsigned char *b = malloc(cap);
    while (b) {
        if (len == cap) {
            unsigned char *nb = realloc(b, cap * 2);
            if (!nb) {
                free(b);
                b = NULL;
                break;
            }
            b = nb;
            cap *= 2;
        }
        size_t r = fread(b + len, 1, cap - len, f);
        len += r;
        if (r == 0) break;
    }
    fclose(f);
    *n = len;
    return b;
}

static int same_file_bytes(const char *path, const unsigned char *b, size_t n)
{
    size_t m;
    unsigned char *got = read_bytes(path, &m);
    int same = got && m == n && memcmp(got, b, n) == 0;
    free(got);
    return same;
}

/* Names in the current directory starting with "<base>.tmp." (leftover temp files). */
static int count_temp_files(const char *base)
{
    char pre[256];
    snprintf(pre, sizeof pre, "%s.tmp.", base);
    DIR *d = opendir(".");
    if (!d) return -1;
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL)
        if (strncmp(de->d_name, pre, strlen(pre)) == 0) n++;
    closedir(d);
    return n;
}

static uint32_t rd32(const unsigned char *b)
{
    return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}
static uint64_t rd64(const unsigned char *b)
{
    return (uint64_t)rd32(b) | (uint64_t)rd32(b + 4) << 32;
}
static void wr32(unsigned char *b, uint32_t v)
{
    for (int i = 0; i < 4; i++) b[i] = (unsigned char)(v >> (8 * i));
}
static void wr64(unsigned char *b, uint64_t v)
{
    for (int i = 0; i < 8; i++) b[i] = (unsigned char)(v >> (8 * i));
}

/* CRC-32 (IEEE 802.3, reflected, as zlib's crc32), written out bit by bit so the test checks
 * the format independently of the library. */
static uint32_t tcrc32(const unsigned char *p, size_t n)
{
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
    }
    return c ^ 0xFFFFFFFFu;
}

/* ------------------------------------------------------------------ section layout */

#define MAXSEC 16
typedef struct layout {
    int n;
    size_t off[MAXSEC]; /* start of the section (its tag) */
    uint32_t tag[MAXSEC];
    uint64_t len[MAXSEC];
    int crc_ok[MAXSEC];
} layout;

static const char *tag_name(uint32_t t)
{
    static const char *const names[] = {"?", "header", "config", "params", "optim",
                                        "rng", "counters", "end"};
    return t < 8 ? names[t] : "?";
}

/* Walks a well-formed file; returns 0 on success. */
static int walk(const unsigned char *b, size_t n, layout *L)
{
    memset(L, 0, sizeof *L);
    size_t at = 12;
    while (at < n && L->n < MAXSEC) {
        if (n - at < 16) return -1;
        uint32_t tag = rd32(b + at);
        uint64_t len = rd64(b + at + 4);
        if (len > n - at - 16) return -1;
        L->off[L->n] = at;
        L->tag[L->n] = tag;
        L->len[L->n] = len;
        L->crc_ok[L->n] = tcrc32(b + at, 12 + (size_t)len) == rd32(b + at + 12 + len);
        L->n++;
        at += 16 + (size_t)len;
        if (tag == MCL_CKPT_SEC_END) break;
    }
    return at == n ? 0 : -1;
}

static int find_sec(const layout *L, uint32_t tag)
{
    for (int i = 0; i < L->n; i++)
        if (L->tag[i] == tag) return i;
    return -1;
}

/* Recompute the CRC of section i in place (after a deliberate, "valid" change). */
static void fix_crc(unsigned char *b, size_t off)
{
    uint64_t len = rd64(b + off + 4);
    wr32(b + off + 12 + len, tcrc32(b + off, 12 + (size_t)len));
}

/* ------------------------------------------------------------------ models */

typedef struct tspec {
    const char *name;
    int ndim;
    int64_t shape[4];
} tspec;

static const tspec BASE[] = {
    {"layer0.W", 2, {4, 4, 0, 0}},
    {"layer0.b", 1, {4, 0, 0, 0}},
    {"head.W", 2, {3, 4, 0, 0}},
    {"emb", 3, {2, 3, 5, 0}},
};
#define NBASE ((int)(sizeof BASE / sizeof BASE[0]))

static mcl_params *make_params(mcl_ctx *ctx, const tspec *s, int n, uint64_t seed)
{
    mcl_params *P = mcl_params_create(ctx);
    if (!CHECK(P != NULL, "params_create: %s", mcl_ctx_error(ctx))) return NULL;
    for (int i = 0; i < n; i++) {
        mcl_tensor *t = mcl_params_add(P, s[i].name, s[i].ndim, s[i].shape);
        if (!CHECK(t != NULL, "params_add %s: %s", s[i].name, mcl_ctx_error(ctx)) ||
            !CHECK(mcl_tensor_randn(t, seed, (uint64_t)i + 1, 0.0f, 1.0f) == MCL_OK,
                   "randn: %s", mcl_ctx_error(ctx))) {
            mcl_params_free(P);
            return NULL;
        }
    }
    return P;
}

static mcl_optim *make_optim(mcl_ctx *ctx, mcl_params *P, mcl_optim_kind kind)
{
    mcl_optim_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.kind = kind;
    cfg.sched.kind = MCL_SCHED_CONSTANT;
    cfg.sched.base_lr = kind == MCL_OPTIM_SGD ? 0.05f : 0.01f;
    cfg.momentum = kind == MCL_OPTIM_SGD ? 0.9f : 0.0f;
    cfg.weight_decay = kind == MCL_OPTIM_ADAMW ? 0.01f : 0.0f;
    mcl_optim *o = NULL;
    CHECK(mcl_optim_create(ctx, &cfg, P, &o) == MCL_OK && o, "optim_create: %s",
          mcl_ctx_error(ctx));
    return o;
}

/* Steps first+1 .. first+n with gradients from a backward of L = sum_i sum(w_i * c_i), so the
 * gradient of w_i is exactly c_i (host random numbers, the same on every backend). */
static int train(mcl_ctx *ctx, mcl_params *P, mcl_optim *o, int first, int n, uint64_t gseed)
{
    int np = mcl_params_count(P);
    for (int s = first; s < first + n; s++) {
        mcl_optim_zero_grad(o);
        mcl_tensor *L = NULL, *c[16] = {0};
        int ok = np <= 16;
        for (int i = 0; i < np && ok; i++) {
            mcl_tensor *w = mcl_params_get(P, i);
            int64_t m = mcl_tensor_numel(w);
            float *v = malloc((size_t)m * sizeof *v);
            mcl_rng r;
            mcl_rng_init(&r, gseed, 1000u * (uint64_t)(s + 1) + (uint64_t)i);
            for (int64_t k = 0; v && k < m; k++) v[k] = mcl_rng_next_normal(&r);
            c[i] = v ? tu_tensor_from(ctx, w->ndim, w->shape, v) : NULL;
            free(v);
            mcl_tensor *term = c[i] ? mcl_sum(ctx, mcl_mul(ctx, w, c[i])) : NULL;
            L = L ? mcl_add(ctx, L, term) : term;
            ok = L != NULL;
        }
        ok = ok && mcl_backward(ctx, L) == MCL_OK && mcl_optim_step(o) == MCL_OK;
        for (int i = 0; i < np && i < 16; i++) mcl_tensor_free(c[i]);
        mcl_ctx_reset(ctx);
        if (!CHECK(ok, "training step %d on %s: %s", s + 1, mcl_ctx_backend_name(ctx),
                   mcl_ctx_error(ctx)))
            return -1;
    }
    return 0;
}

/* Everything a checkpoint restores into a model, read back to the host. */
typedef struct snap {
    float *v;
    int64_t n;
    int64_t steps;
} snap;

static snap take_snap(const mcl_params *P, const mcl_optim *o)
{
    snap s = {NULL, 0, o ? mcl_optim_steps(o) : -1};
    int np = mcl_params_count(P);
    int64_t total = 0;
    for (int i = 0; i < np; i++) {
        int64_t m = mcl_tensor_numel(mcl_params_get(P, i));
        total += m;
        for (int k = 0; o && k < 2; k++)
            if (mcl_optim_state(o, i, k)) total += m;
    }
    s.v = malloc((size_t)(total ? total : 1) * sizeof *s.v);
    if (!s.v) return s;
    int64_t at = 0;
    for (int i = 0; i < np; i++) {
        const mcl_tensor *t = mcl_params_get(P, i);
        int64_t m = mcl_tensor_numel(t);
        if (mcl_tensor_read(t, s.v + at, m) != MCL_OK) memset(s.v + at, 0xff, (size_t)m * 4);
        at += m;
        for (int k = 0; o && k < 2; k++) {
            const mcl_tensor *st = mcl_optim_state(o, i, k);
            if (!st) continue;
            if (mcl_tensor_read(st, s.v + at, m) != MCL_OK) memset(s.v + at, 0xff, (size_t)m * 4);
            at += m;
        }
    }
    s.n = at;
    return s;
}

static int snap_equal(const snap *a, const snap *b)
{
    return a->v && b->v && a->n == b->n && a->steps == b->steps &&
           memcmp(a->v, b->v, (size_t)a->n * sizeof *a->v) == 0;
}

static void snap_free(snap *s)
{
    free(s->v);
    s->v = NULL;
}

static const mcl_ckpt_counter COUNTERS[] = {
    {"step", 3},
    {"episode", 12345678901234ULL},
    {"max", UINT64_MAX},
    {"zero", 0},
};
#define NCOUNTERS ((int)(sizeof COUNTERS / sizeof COUNTERS[0]))

static mcl_status save_model(mcl_ctx *ctx, const char *path, const char *kind,
                             const mcl_params *P, const mcl_optim *o, uint64_t rng_counter,
                             char *eb, size_t ebl)
{
    mcl_ckpt_save_desc d;
    memset(&d, 0, sizeof d);
    d.model_kind = kind;
    d.config = CONFIG_TEXT;
    d.params = P;
    d.optim = o;
    d.rng.seed = mcl_ctx_seed(ctx);
    d.rng.counter = rng_counter;
    d.counters = COUNTERS;
    d.n_counters = NCOUNTERS;
    return mcl_ckpt_save(ctx, path, &d, eb, ebl);
}

/* ------------------------------------------------------------------ 1. round trip (ref) */

static void check_info(const mcl_ckpt_info *info, uint64_t seed, uint64_t counter,
                       int64_t steps, const char *what)
{
    CHECK(info->version == MCL_CKPT_FORMAT_VERSION, "%s: version %u", what, info->version);
    CHECK(strcmp(info->model_kind, KIND) == 0, "%s: model kind '%s'", what, info->model_kind);
    CHECK(strncmp(info->created_by, "metacl ", 7) == 0, "%s: created by '%s'", what,
          info->created_by);
    CHECK(info->config && strcmp(info->config, CONFIG_TEXT) == 0 &&
              info->config_len == strlen(CONFIG_TEXT),
          "%s: config text comes back exactly", what);
    CHECK(info->rng.seed == seed && info->rng.counter == counter,
          "%s: rng (%llu, %llu), want (%llu, %llu)", what, (unsigned long long)info->rng.seed,
          (unsigned long long)info->rng.counter, (unsigned long long)seed,
          (unsigned long long)counter);
    CHECK(info->has_optim == (steps >= 0) && (steps < 0 || info->optim_steps == steps),
          "%s: optimizer steps %lld", what, (long long)info->optim_steps);
    int ok = info->n_counters == NCOUNTERS;
    for (int i = 0; ok && i < NCOUNTERS; i++) {
        uint64_t v = 1;
        ok = mcl_ckpt_info_counter(info, COUNTERS[i].name, &v) && v == COUNTERS[i].value &&
             strcmp(info->counters[i].name, COUNTERS[i].name) == 0;
    }
    CHECK(ok, "%s: %d counters come back in order with their values", what, info->n_counters);
    uint64_t dummy;
    CHECK(!mcl_ckpt_info_counter(info, "no-such-counter", &dummy), "%s: absent counter", what);
}

static void test_round_trip_ref(void)
{
    printf("round trip on the reference backend\n");
    char path[128], eb[1024];
    fname(path, sizeof path, "rt.ckpt");
    mcl_ctx *a = tu_ctx_ref(), *b = tu_ctx_ref();
    mcl_ctx_set_seed(a, SEED);
    mcl_params *PA = make_params(a, BASE, NBASE, SEED);
    mcl_params *PB = make_params(b, BASE, NBASE, SEED + 99); /* other values */
    mcl_optim *OA = PA ? make_optim(a, PA, MCL_OPTIM_ADAM) : NULL;
    mcl_optim *OB = PB ? make_optim(b, PB, MCL_OPTIM_ADAM) : NULL;
    if (!OA || !OB) goto done;
    if (train(a, PA, OA, 0, 3, SEED) != 0) goto done;
    uint64_t rngc = mcl_ctx_next_stream(a) + 1000;

    mcl_status st = save_model(a, path, KIND, PA, OA, rngc, eb, sizeof eb);
    if (!CHECK(st == MCL_OK, "save: %s", eb)) goto done;
    CHECK(count_temp_files(path) == 0, "no temp file left after a save");

    /* header + config only */
    mcl_ckpt_info info;
    st = mcl_ckpt_read_info(path, &info, eb, sizeof eb);
    if (CHECK(st == MCL_OK, "read_info: %s", eb)) {
        CHECK(strcmp(info.model_kind, KIND) == 0 && info.config &&
                  strcmp(info.config, CONFIG_TEXT) == 0 && info.version == 1 &&
                  strncmp(info.created_by, "metacl ", 7) == 0,
              "read_info: kind, config, version, created-by");
        CHECK(info.n_counters == 0 && info.counters == NULL && !info.has_optim,
              "read_info reads only the header and the config");
    }
    mcl_ckpt_info_free(&info);
    CHECK(info.config == NULL && info.counters == NULL, "info_free clears the info");

    snap sa = take_snap(PA, OA), sb0 = take_snap(PB, OB);
    CHECK(!snap_equal(&sa, &sb0), "the target model starts different");
    st = mcl_ckpt_load(b, path, KIND, PB, OB, &info, eb, sizeof eb);
    if (CHECK(st == MCL_OK, "load: %s", eb)) {
        snap sb = take_snap(PB, OB);
        CHECK(sa.n > 0 && snap_equal(&sa, &sb),
              "params, Adam m and v, step count come back bitwise (%lld floats, steps %lld/%lld)",
              (long long)sa.n, (long long)sa.steps, (long long)sb.steps);
        CHECK(mcl_optim_steps(OB) == 3, "step count restored: %lld",
              (long long)mcl_optim_steps(OB));
        check_info(&info, SEED, rngc, 3, "load");
        /* the comparison can fail: one flipped bit is seen */
        if (sb.v && sb.n > 5) {
            uint32_t u;
            memcpy(&u, &sb.v[5], 4);
            u ^= 1u;
            memcpy(&sb.v[5], &u, 4);
            CHECK(!snap_equal(&sa, &sb), "a deliberately wrong expectation (one bit) is detected");
        }
        snap_free(&sb);

        /* training on from the loaded copy stays bitwise equal (Adam bias correction needs
         * the restored step count) */
        if (train(a, PA, OA, 3, 2, SEED + 7) == 0 && train(b, PB, OB, 3, 2, SEED + 7) == 0) {
            snap ca = take_snap(PA, OA), cb = take_snap(PB, OB);
            CHECK(snap_equal(&ca, &cb), "two more steps from the loaded checkpoint: bitwise equal");
            snap_free(&ca);
            snap_free(&cb);
        }
    }
    mcl_ckpt_info_free(&info);
    snap_free(&sa);
    snap_free(&sb0);

    /* saving is deterministic: the same model gives the same bytes */
    {
        char p2[128];
        fname(p2, sizeof p2, "rt2.ckpt");
        CHECK(save_model(a, path, KIND, PA, OA, 1, eb, sizeof eb) == MCL_OK &&
                  save_model(a, p2, KIND, PA, OA, 1, eb, sizeof eb) == MCL_OK,
              "two saves: %s", eb);
        size_t n1, n2;
        unsigned char *b1 = read_bytes(path, &n1), *b2 = read_bytes(p2, &n2);
        CHECK(b1 && b2 && n1 == n2 && memcmp(b1, b2, n1) == 0, "saving twice gives the same bytes");
        free(b1);
        free(b2);
        remove(p2);
    }

    /* parameters only: load with no optimizer (the file's optimizer section is skipped) */
    {
        mcl_params *PC = make_params(b, BASE, NBASE, SEED + 5);
        if (PC) {
            st = mcl_ckpt_load(b, path, KIND, PC, NULL, NULL, eb, sizeof eb);
            snap x = take_snap(PA, NULL), y = take_snap(PC, NULL);
            CHECK(st == MCL_OK && snap_equal(&x, &y), "load without optimizer: %s", eb);
            snap_free(&x);
            snap_free(&y);
            mcl_params_free(PC);
        }
    }

    /* SGD with momentum: one slot per parameter; a model without an optimizer section */
    {
        char p3[128];
        fname(p3, sizeof p3, "sgd.ckpt");
        mcl_params *P1 = make_params(a, BASE, NBASE, SEED + 11);
        mcl_params *P2 = make_params(b, BASE, NBASE, SEED + 12);
        mcl_optim *O1 = P1 ? make_optim(a, P1, MCL_OPTIM_SGD) : NULL;
        mcl_optim *O2 = P2 ? make_optim(b, P2, MCL_OPTIM_SGD) : NULL;
        if (O1 && O2 && train(a, P1, O1, 0, 2, SEED + 3) == 0) {
            st = save_model(a, p3, KIND, P1, O1, 77, eb, sizeof eb);
            CHECK(st == MCL_OK, "save SGD: %s", eb);
            st = mcl_ckpt_load(b, p3, KIND, P2, O2, NULL, eb, sizeof eb);
            snap x = take_snap(P1, O1), y = take_snap(P2, O2);
            CHECK(st == MCL_OK && snap_equal(&x, &y), "SGD momentum round trip: %s", eb);
            snap_free(&x);
            snap_free(&y);
        }
        /* no optimizer saved: loads into a params-only call, and reports has_optim = 0 */
        mcl_ckpt_save_desc d;
        memset(&d, 0, sizeof d);
        d.model_kind = KIND;
        d.params = P1;
        st = mcl_ckpt_save(a, p3, &d, eb, sizeof eb);
        CHECK(st == MCL_OK, "save without optimizer, counters or config: %s", eb);
        mcl_ckpt_info inf2;
        st = mcl_ckpt_load(b, p3, KIND, P2, NULL, &inf2, eb, sizeof eb);
        CHECK(st == MCL_OK && !inf2.has_optim && inf2.n_counters == 0 && inf2.config &&
                  inf2.config[0] == '\0',
              "load of a minimal checkpoint: %s", eb);
        mcl_ckpt_info_free(&inf2);
        mcl_optim_free(O1);
        mcl_optim_free(O2);
        mcl_params_free(P1);
        mcl_params_free(P2);
        remove(p3);
    }

    /* invalid arguments to save */
    {
        mcl_ckpt_save_desc d;
        memset(&d, 0, sizeof d);
        d.model_kind = "has space";
        d.params = PA;
        char p4[128];
        fname(p4, sizeof p4, "bad.ckpt");
        mcl_ctx_clear_error(a);
        st = mcl_ckpt_save(a, p4, &d, eb, sizeof eb);
        CHECK(st == MCL_ERR_INVALID && strstr(eb, "model kind"), "bad model kind: %s", eb);
        CHECK_ERR("bad model kind recorded in the context", a, TU_ST(MCL_ERR_INVALID),
                  "model kind");
        mcl_ckpt_counter dup[2] = {{"step", 1}, {"step", 2}};
        d.model_kind = KIND;
        d.counters = dup;
        d.n_counters = 2;
        st = mcl_ckpt_save(NULL, p4, &d, eb, sizeof eb);
        CHECK(st == MCL_ERR_INVALID && strstr(eb, "counter 'step' appears twice"),
              "duplicate counter: %s", eb);
        st = mcl_ckpt_save(NULL, p4, NULL, eb, sizeof eb);
        CHECK(st == MCL_ERR_NULL, "NULL description: %s", eb);
        CHECK(access(p4, F_OK) != 0 && count_temp_files(p4) == 0,
              "rejected saves create no file");
        mcl_ctx_clear_error(a);
    }

done:
    remove(path);
    mcl_optim_free(OA);
    mcl_optim_free(OB);
    mcl_params_free(PA);
    mcl_params_free(PB);
    mcl_ctx_free(a);
    mcl_ctx_free(b);
}

/* ------------------------------------------------------------------ 2. across backends */

static void cross(mcl_ctx *from, mcl_ctx *to, const char *what)
{
    char path[128], eb[1024];
    fname(path, sizeof path, "x.ckpt");
    mcl_ctx_set_seed(from, SEED + 1);
    mcl_params *P1 = make_params(from, BASE, NBASE, SEED + 21);
    mcl_params *P2 = make_params(to, BASE, NBASE, SEED + 22);
    mcl_optim *O1 = P1 ? make_optim(from, P1, MCL_OPTIM_ADAMW) : NULL;
    mcl_optim *O2 = P2 ? make_optim(to, P2, MCL_OPTIM_ADAMW) : NULL;
    if (O1 && O2 && train(from, P1, O1, 0, 3, SEED + 4) == 0) {
        mcl_status st = save_model(from, path, KIND, P1, O1, 5, eb, sizeof eb);
        CHECK(st == MCL_OK, "%s: save: %s", what, eb);
        mcl_ckpt_info info;
        st = mcl_ckpt_load(to, path, KIND, P2, O2, &info, eb, sizeof eb);
        snap x = take_snap(P1, O1), y = take_snap(P2, O2);
        CHECK(st == MCL_OK && snap_equal(&x, &y), "%s: bitwise equal after load: %s", what, eb);
        if (st == MCL_OK) check_info(&info, SEED + 1, 5, 3, what);
        mcl_ckpt_info_free(&info);
        snap_free(&x);
        snap_free(&y);
    }
    remove(path);
    mcl_optim_free(O1);
    mcl_optim_free(O2);
    mcl_params_free(P1);
    mcl_params_free(P2);
}

static void test_cross_backend(void)
{
    mcl_ctx *ocl = NULL;
    char err[256] = "";
    mcl_status st = mcl_ctx_create(&ocl, MCL_BACKEND_OPENCL, NULL, err, sizeof err);
    if (st == MCL_ERR_UNSUPPORTED) { /* no OpenCL platform or device: the only reason to skip */
        printf("OpenCL: not available (%s): cross-backend round trips skipped\n", err);
        return;
    }
    if (!CHECK(st == MCL_OK && ocl, "the OpenCL backend does not open: %s", err)) return;
    printf("across backends (OpenCL device found)\n");
    mcl_ctx *ref = tu_ctx_ref();
    cross(ocl, ref, "OpenCL -> reference");
    cross(ref, ocl, "reference -> OpenCL");
    mcl_ctx_free(ref);
    mcl_ctx_free(ocl);
}

/* ------------------------------------------------------------------ 3+4. corruption table */

typedef struct target {
    mcl_ctx *ctx;
    mcl_params *P;
    mcl_optim *adam, *sgd;
} target;

typedef struct ccase {
    char label[128];
    unsigned char *bytes; /* NULL: the file does not exist */
    size_t len;
    int opt;              /* 0 no optimizer, 1 Adam, 2 SGD */
    mcl_status want;
    char needle[160];
} ccase;

#define MAXCASES 256
static ccase g_cases[MAXCASES];
static int g_ncases;

#if defined(__GNUC__)
__attribute__((format(printf, 6, 7)))
#endif
static void add_case(const unsigned char *bytes, size_t len, int opt, mcl_status want,
                     const char *needle, const char *label_fmt, ...)
{
    if (g_ncases >= MAXCASES) {
        CHECK(0, "too many cases");
        return;
    }
    ccase *c = &g_cases[g_ncases++];
    memset(c, 0, sizeof *c);
    va_list ap;
    va_start(ap, label_fmt);
    vsnprintf(c->label, sizeof c->label, label_fmt, ap);
    va_end(ap);
    if (bytes) {
        c->bytes = malloc(len ? len : 1);
        if (c->bytes && len) memcpy(c->bytes, bytes, len);
    }
    c->len = len;
    c->opt = opt;
    c->want = want;
    snprintf(c->needle, sizeof c->needle, "%s", needle);
}

static mcl_optim *target_opt(const target *T, int opt)
{
    return opt == 1 ? T->adam : opt == 2 ? T->sgd : NULL;
}

/* Load `path` into the target; returns the status, message in eb. Checks that a failure
 * leaves the model untouched and the info empty. */
static mcl_status try_load(target *T, const char *path, int opt, char *eb, size_t ebl,
                           const char *label)
{
    mcl_optim *o = target_opt(T, opt);
    snap before = take_snap(T->P, o);
    mcl_ctx_clear_error(T->ctx);
    mcl_ckpt_info info;
    mcl_status st = mcl_ckpt_load(T->ctx, path, KIND, T->P, o, &info, eb, ebl);
    if (st != MCL_OK) {
        snap after = take_snap(T->P, o);
        if (!snap_equal(&before, &after))
            CHECK(0, "%s: a failed load changed the model", label);
        snap_free(&after);
        if (info.config || info.counters || info.model_kind[0])
            CHECK(0, "%s: a failed load left data in the info", label);
    }
    mcl_ckpt_info_free(&info);
    snap_free(&before);
    return st;
}

static void run_cases(target *T)
{
    char path[128], eb[1024], pre[160];
    fname(path, sizeof path, "case.ckpt");
    snprintf(pre, sizeof pre, "checkpoint '%s': ", path);
    for (int i = 0; i < g_ncases; i++) {
        ccase *c = &g_cases[i];
        remove(path);
        if (c->bytes && write_bytes(path, c->bytes, c->len) != 0) {
            CHECK(0, "%s: cannot write the test file", c->label);
            continue;
        }
        mcl_status st = try_load(T, path, c->opt, eb, sizeof eb, c->label);
        int ok = st == c->want && strncmp(eb, pre, strlen(pre)) == 0 && strstr(eb, c->needle);
        CHECK(ok, "%s: status %d (%s), message \"%s\"; want status %d (%s) and \"%s\"", c->label,
              (int)st, mcl_status_str(st), eb, (int)c->want, mcl_status_str(c->want), c->needle);
        char what[200];
        snprintf(what, sizeof what, "%.150s (context)", c->label);
        CHECK_ERR(what, T->ctx, TU_ST(c->want), c->needle);
        if (ok) printf("  ok  %-58s %s\n", c->label, eb + strlen(pre));
        free(c->bytes);
        c->bytes = NULL;
    }
    remove(path);
    g_ncases = 0;
}

/* Per-record layout of a tensor section (params: slots 1, header 4 bytes; optim: after kind,
 * step, slots, count). Fills names and data offsets (relative to the payload). */
typedef struct recpos {
    int n;
    char name[16][64];
    size_t data_off[16];
    size_t data_len[16];
} recpos;

static void records(const unsigned char *pl, size_t plen, size_t start, int slots, recpos *R)
{
    memset(R, 0, sizeof *R);
    uint32_t count = rd32(pl + start - 4);
    size_t at = start;
    for (uint32_t i = 0; i < count && i < 16 && at < plen; i++) {
        uint32_t nl = rd32(pl + at);
        at += 4;
        snprintf(R->name[i], sizeof R->name[i], "%.*s", (int)nl, (const char *)(pl + at));
        at += nl;
        uint32_t nd = rd32(pl + at);
        at += 4;
        uint64_t numel = 1;
        for (uint32_t k = 0; k < nd; k++) numel *= rd64(pl + at + 8 * k);
        at += 8 * nd;
        R->data_off[i] = at;
        R->data_len[i] = (size_t)(4 * numel * (uint64_t)slots);
        at += R->data_len[i];
        R->n++;
    }
}

static void test_corruption(void)
{
    printf("corrupt files\n");
    char eb[1024], pa[128];
    fname(pa, sizeof pa, "src.ckpt");
    mcl_ctx *sctx = tu_ctx_ref();
    mcl_ctx_set_seed(sctx, SEED);
    target T;
    memset(&T, 0, sizeof T);
    T.ctx = tu_ctx_ref();
    T.P = make_params(T.ctx, BASE, NBASE, SEED + 50);
    T.adam = T.P ? make_optim(T.ctx, T.P, MCL_OPTIM_ADAM) : NULL;
    T.sgd = T.P ? make_optim(T.ctx, T.P, MCL_OPTIM_SGD) : NULL;
    mcl_params *SP = make_params(sctx, BASE, NBASE, SEED);
    mcl_optim *SO = SP ? make_optim(sctx, SP, MCL_OPTIM_ADAM) : NULL;
    unsigned char *base = NULL;
    size_t n = 0;
    if (!T.adam || !T.sgd || !SO || train(sctx, SP, SO, 0, 2, SEED) != 0) goto done;
    if (!CHECK(save_model(sctx, pa, KIND, SP, SO, 9, eb, sizeof eb) == MCL_OK, "save: %s", eb))
        goto done;
    base = read_bytes(pa, &n);
    if (!CHECK(base && n > 100, "read the saved file")) goto done;

    /* ---- 3. the layout, checked independently ---- */
    layout L;
    int wr = walk(base, n, &L);
    CHECK(wr == 0 && memcmp(base, "MCLCKPT\0", 8) == 0 && rd32(base + 8) == 1,
          "magic \"MCLCKPT\\0\", version 1, sections cover the file exactly");
    {
        static const uint32_t want_tags[] = {MCL_CKPT_SEC_HEADER, MCL_CKPT_SEC_CONFIG,
                                             MCL_CKPT_SEC_PARAMS, MCL_CKPT_SEC_OPTIM,
                                             MCL_CKPT_SEC_RNG,    MCL_CKPT_SEC_COUNTERS,
                                             MCL_CKPT_SEC_END};
        int ok = L.n == 7;
        for (int i = 0; ok && i < 7; i++) ok = L.tag[i] == want_tags[i] && L.crc_ok[i];
        CHECK(ok, "sections header, config, params, optim, rng, counters, end, each with the "
                  "CRC-32 of tag + length + payload");
        int c = find_sec(&L, MCL_CKPT_SEC_CONFIG);
        CHECK(c >= 0 && L.len[c] == strlen(CONFIG_TEXT) &&
                  memcmp(base + L.off[c] + 12, CONFIG_TEXT, strlen(CONFIG_TEXT)) == 0,
              "the config section is the config text");
        int r = find_sec(&L, MCL_CKPT_SEC_RNG);
        CHECK(r >= 0 && L.len[r] == 16 && rd64(base + L.off[r] + 12) == SEED &&
                  rd64(base + L.off[r] + 20) == 9,
              "the rng section holds seed and counter");
    }
    if (wr != 0 || L.n != 7) goto done;
    const int s_hdr = 0, s_params = 2, s_optim = 3, s_rng = 4, s_cnt = 5, s_end = 6;
    recpos RP, RO;
    {
        const unsigned char *pl = base + L.off[s_params] + 12;
        records(pl, (size_t)L.len[s_params], 4, 1, &RP);
        const unsigned char *po = base + L.off[s_optim] + 12;
        size_t kl = rd32(po);
        records(po, (size_t)L.len[s_optim], 4 + kl + 8 + 4 + 4, 2, &RO);
        CHECK(RP.n == NBASE && RO.n == NBASE && strcmp(RP.name[1], "layer0.b") == 0 &&
                  strcmp(RO.name[3], "emb") == 0,
              "tensor records in params and optim");
    }

    /* ---- the table ---- */
    unsigned char *m = malloc(n + 64);
    if (!m) goto done;

    /* truncation at every section boundary, inside every section header, payload, checksum */
    add_case(base, 0, 1, MCL_ERR_FORMAT, "empty file", "empty file");
    add_case(base, 5, 1, MCL_ERR_FORMAT, "truncated in the file header (magic)",
             "cut in the magic");
    add_case(base, 10, 1, MCL_ERR_FORMAT, "truncated in the file header (format version)",
             "cut in the version");
    for (int i = 0; i < L.n; i++) {
        const char *nm = tag_name(L.tag[i]);
        char nd[160];
        if (i == 0) snprintf(nd, sizeof nd, "truncated after the file header");
        else snprintf(nd, sizeof nd, "truncated after section '%s'", tag_name(L.tag[i - 1]));
        add_case(base, L.off[i], 1, MCL_ERR_FORMAT, nd, "cut before section %s", nm);
        snprintf(nd, sizeof nd, "truncated in the header of section %d", i + 1);
        add_case(base, L.off[i] + 7, 1, MCL_ERR_FORMAT, nd, "cut in the header of %s", nm);
        if (L.len[i] > 1) {
            snprintf(nd, sizeof nd, "truncated in section %s", nm);
            add_case(base, L.off[i] + 12 + (size_t)L.len[i] / 2, 1, MCL_ERR_FORMAT, nd,
                     "cut in the middle of %s", nm);
        }
        snprintf(nd, sizeof nd, "truncated in section %s (checksum)", nm);
        add_case(base, L.off[i] + 12 + (size_t)L.len[i] + 2, 1, MCL_ERR_FORMAT, nd,
                 "cut in the CRC of %s", nm);
    }
    for (int k = 0; k < RP.n; k++) {
        char nd[160];
        snprintf(nd, sizeof nd, "truncated in section params (tensor '%s'", RP.name[k]);
        add_case(base, L.off[s_params] + 12 + RP.data_off[k] + RP.data_len[k] / 2, 1,
                 MCL_ERR_FORMAT, nd, "cut inside tensor %s", RP.name[k]);
        snprintf(nd, sizeof nd, "truncated in section optim (state of tensor '%s'", RO.name[k]);
        add_case(base, L.off[s_optim] + 12 + RO.data_off[k] + 3, 1, MCL_ERR_FORMAT, nd,
                 "cut inside the state of %s", RO.name[k]);
    }
    /* head.W [3,4]: name length, "head.W", ndim, 2 dims, values: cut 3 bytes into the name */
    add_case(base, L.off[s_params] + 12 + RP.data_off[2] - 16 - 4 - 3, 1, MCL_ERR_FORMAT,
             "truncated in section params (name of tensor 2)", "cut inside a tensor name");

    /* a flipped byte in every section's payload and in every CRC */
    for (int i = 0; i < L.n; i++) {
        const char *nm = tag_name(L.tag[i]);
        char nd[160];
        snprintf(nd, sizeof nd, "CRC mismatch in section %s", nm);
        memcpy(m, base, n);
        m[L.off[i] + 12 + (size_t)L.len[i] / 2] ^= 0x10;
        add_case(m, n, 1, MCL_ERR_FORMAT, nd, "flipped byte in %s", nm);
        memcpy(m, base, n);
        m[L.off[i] + 12 + (size_t)L.len[i] + 1] ^= 0x01;
        add_case(m, n, 1, MCL_ERR_FORMAT, nd, "flipped byte in the CRC of %s", nm);
    }
    memcpy(m, base, n);
    m[L.off[s_rng]] ^= 0x40; /* the tag: an unknown tag whose CRC no longer matches */
    add_case(m, n, 1, MCL_ERR_FORMAT, "CRC mismatch in section 5", "flipped byte in a tag");
    memcpy(m, base, n);
    m[L.off[s_params] + 12 + RP.data_off[0]] ^= 0x80; /* a value's lowest byte */
    add_case(m, n, 1, MCL_ERR_FORMAT, "CRC mismatch in section params", "one flipped value bit");

    /* magic, version */
    memcpy(m, base, n);
    m[0] = 'X';
    add_case(m, n, 1, MCL_ERR_FORMAT, "not a metacl checkpoint (bad magic)", "bad magic");
    memcpy(m, base, n);
    m[7] = '!';
    add_case(m, n, 1, MCL_ERR_FORMAT, "not a metacl checkpoint (bad magic)", "magic without NUL");
    memcpy(m, base, n);
    wr32(m + 8, 7);
    add_case(m, n, 1, MCL_ERR_FORMAT, "format version 7 (this build reads 1)", "version 7");
    memcpy(m, base, n);
    wr32(m + 8, 0);
    add_case(m, n, 1, MCL_ERR_FORMAT, "format version 0 (this build reads 1)", "version 0");
    {
        const char *txt = "model=acl\nlayers=2\n";
        add_case((const unsigned char *)txt, strlen(txt), 1, MCL_ERR_FORMAT,
                 "not a metacl checkpoint (bad magic)", "a config file instead");
    }

    /* length fields pointing beyond the file (CRC not even reachable) */
    memcpy(m, base, n);
    wr64(m + L.off[s_params] + 4, (uint64_t)1 << 62);
    add_case(m, n, 1, MCL_ERR_FORMAT,
             "section params: length field 4611686018427387904 points beyond the end of the file",
             "params length 2^62");
    memcpy(m, base, n);
    wr64(m + L.off[s_cnt] + 4, L.len[s_cnt] + 1000);
    add_case(m, n, 1, MCL_ERR_FORMAT, "section counters: length field", "counters length +1000");
    memcpy(m, base, n);
    wr64(m + L.off[s_end] + 4, UINT64_MAX);
    add_case(m, n, 1, MCL_ERR_FORMAT, "section end: length field 18446744073709551615",
             "end length 2^64-1");
    memcpy(m, base, n);
    wr32(m + L.off[s_rng], 0x77);
    wr64(m + L.off[s_rng] + 4, (uint64_t)1 << 40);
    add_case(m, n, 1, MCL_ERR_FORMAT, "unknown tag 0x00000077", "unknown tag with a huge length");
    memcpy(m, base, n);
    wr64(m + L.off[s_params] + 4, L.len[s_params] - 8);
    add_case(m, n, 1, MCL_ERR_FORMAT, "CRC mismatch in section params", "params length -8");

    /* absurd contents with a valid CRC (a crafted file): rejected before allocating */
    {
        size_t po = L.off[s_params] + 12;
        memcpy(m, base, n);
        wr32(m + po, 0xFFFFFFFFu);
        fix_crc(m, L.off[s_params]);
        add_case(m, n, 1, MCL_ERR_FORMAT, "section params is shorter than its contents",
                 "tensor count 2^32-1 (valid CRC)");
        memcpy(m, base, n);
        wr64(m + po + RP.data_off[0] - 16, (uint64_t)1 << 60); /* layer0.W dim 0 */
        fix_crc(m, L.off[s_params]);
        add_case(m, n, 1, MCL_ERR_FORMAT, "tensor 'layer0.W' has an absurd dim 0",
                 "dim 2^60 (valid CRC)");
        memcpy(m, base, n);
        wr64(m + po + RP.data_off[3] - 24, (uint64_t)1 << 33); /* emb [2^33, 2^33, 5] */
        wr64(m + po + RP.data_off[3] - 16, (uint64_t)1 << 33);
        fix_crc(m, L.off[s_params]);
        add_case(m, n, 1, MCL_ERR_FORMAT, "tensor 'emb' has an absurd dim 1: 8589934592",
                 "dims whose product overflows (valid CRC)");
        memcpy(m, base, n);
        wr32(m + po + RP.data_off[0] - 20, 9); /* layer0.W ndim */
        fix_crc(m, L.off[s_params]);
        add_case(m, n, 1, MCL_ERR_FORMAT, "tensor 'layer0.W' has 9 dims", "ndim 9 (valid CRC)");
        memcpy(m, base, n);
        wr32(m + po + 4, 0x7FFFFFFFu); /* name length of tensor 0 */
        fix_crc(m, L.off[s_params]);
        add_case(m, n, 1, MCL_ERR_FORMAT, "tensor 0 has a name of 2147483647 bytes",
                 "name length 2^31-1 (valid CRC)");
        memcpy(m, base, n);
        wr32(m + L.off[s_cnt] + 12, 0x10000000u);
        fix_crc(m, L.off[s_cnt]);
        add_case(m, n, 1, MCL_ERR_FORMAT, "268435456 counters do not fit",
                 "counter count 2^28 (valid CRC)");
        memcpy(m, base, n);
        wr32(m + L.off[s_rng], 99);
        fix_crc(m, L.off[s_rng]);
        add_case(m, n, 1, MCL_ERR_FORMAT, "unknown section tag 0x00000063",
                 "unknown tag 99 (valid CRC)");
        memcpy(m, base, n);
        wr32(m + L.off[s_end] + 12, 3);
        fix_crc(m, L.off[s_end]);
        add_case(m, n, 1, MCL_ERR_FORMAT, "the end section counts 3 sections, the file has 6",
                 "wrong section count in end (valid CRC)");
    }

    /* structure: trailing data, duplicate, missing and misplaced sections */
    memcpy(m, base, n);
    memcpy(m + n, "garbage", 7);
    add_case(m, n + 7, 1, MCL_ERR_FORMAT, "7 bytes of unexpected data after the end section",
             "trailing data");
    {
        /* rng twice: ... rng rng counters end */
        size_t rs = L.off[s_rng], rl = 16 + (size_t)L.len[s_rng];
        memcpy(m, base, L.off[s_cnt]);
        memcpy(m + L.off[s_cnt], base + rs, rl);
        memcpy(m + L.off[s_cnt] + rl, base + L.off[s_cnt], n - L.off[s_cnt]);
        add_case(m, n + rl, 1, MCL_ERR_FORMAT, "section rng appears twice", "duplicate section");
        /* counters removed, end count fixed: the missing section is named */
        size_t cs = L.off[s_cnt], cl = 16 + (size_t)L.len[s_cnt];
        memcpy(m, base, cs);
        memcpy(m + cs, base + cs + cl, n - cs - cl);
        wr32(m + L.off[s_end] - cl + 12, 5);
        fix_crc(m, L.off[s_end] - cl);
        add_case(m, n - cl, 1, MCL_ERR_FORMAT, "section counters is missing", "missing section");
        /* config first */
        size_t hs = L.off[s_hdr], hl = 16 + (size_t)L.len[s_hdr];
        size_t cfs = L.off[1], cfl = 16 + (size_t)L.len[1];
        memcpy(m, base, n);
        memcpy(m + hs, base + cfs, cfl);
        memcpy(m + hs + cfl, base + hs, hl);
        add_case(m, n, 1, MCL_ERR_FORMAT, "the first section is config, not header",
                 "header not first");
    }

    /* files of other models */
    {
        char px[128];
        fname(px, sizeof px, "other.ckpt");
        size_t xn;
        unsigned char *xb;
        /* other model kind */
        if (save_model(sctx, px, "smn", SP, SO, 9, eb, sizeof eb) == MCL_OK &&
            (xb = read_bytes(px, &xn)) != NULL) {
            add_case(xb, xn, 1, MCL_ERR_INVALID, "model kind 'smn' (expected 'acl')",
                     "wrong model kind");
            free(xb);
        }
        /* a missing, an extra, a mis-shaped tensor */
        tspec miss[NBASE - 1], extra[NBASE + 1], shaped[NBASE];
        memcpy(miss, BASE, 2 * sizeof *BASE);
        memcpy(miss + 2, BASE + 3, sizeof *BASE); /* no head.W */
        memcpy(extra, BASE, sizeof BASE);
        extra[NBASE] = (tspec){"extra.bias", 1, {2, 0, 0, 0}};
        memcpy(shaped, BASE, sizeof BASE);
        shaped[0].shape[0] = 3; /* layer0.W [3,4] */
        struct {
            const tspec *s;
            int n;
            const char *needle, *label;
            mcl_status want;
        } v[] = {
            {miss, NBASE - 1, "tensor 'head.W' of the model is missing from the file",
             "missing tensor", MCL_ERR_INVALID},
            {extra, NBASE + 1, "tensor 'extra.bias' in the file is not in the model",
             "extra tensor", MCL_ERR_INVALID},
            {shaped, NBASE, "tensor 'layer0.W' has shape [3,4] in the file, [4,4] in the model",
             "wrong shape", MCL_ERR_SHAPE},
        };
        for (size_t k = 0; k < sizeof v / sizeof v[0]; k++) {
            mcl_params *XP = make_params(sctx, v[k].s, v[k].n, SEED + 3);
            if (XP && save_model(sctx, px, KIND, XP, NULL, 9, eb, sizeof eb) == MCL_OK &&
                (xb = read_bytes(px, &xn)) != NULL) {
                add_case(xb, xn, 0, v[k].want, v[k].needle, "%s", v[k].label);
                free(xb);
            } else {
                CHECK(0, "cannot make the file for '%s': %s", v[k].label, eb);
            }
            mcl_params_free(XP);
        }
        /* optimizer mismatches */
        if (save_model(sctx, px, KIND, SP, NULL, 9, eb, sizeof eb) == MCL_OK &&
            (xb = read_bytes(px, &xn)) != NULL) {
            add_case(xb, xn, 1, MCL_ERR_INVALID, "the file has no optimizer state",
                     "no optimizer state in the file");
            free(xb);
        }
        add_case(base, n, 2, MCL_ERR_INVALID,
                 "optimizer state in the file is adam (Adam/AdamW, 2 slots per parameter), the "
                 "optimizer is sgd",
                 "Adam state into SGD");
        remove(px);
    }

    /* nonexistent file, a directory */
    add_case(NULL, 0, 1, MCL_ERR_IO, "cannot open: No such file or directory", "nonexistent file");
    run_cases(&T);
    {
        char pd[128];
        fname(pd, sizeof pd, "dir.ckpt");
        mkdir(pd, 0755);
        mcl_status st = try_load(&T, pd, 1, eb, sizeof eb, "a directory");
        CHECK(st == MCL_ERR_IO && strstr(eb, "is a directory"), "loading a directory: %s", eb);
        st = mcl_ckpt_read_info(pd, &(mcl_ckpt_info){0}, eb, sizeof eb);
        CHECK(st == MCL_ERR_IO, "read_info of a directory: %s", eb);
        rmdir(pd);
    }

    /* the matching can fail: a truncation is not reported as a CRC error */
    {
        write_bytes(pa, base, L.off[s_params] + 40);
        mcl_status st = try_load(&T, pa, 1, eb, sizeof eb, "wrong expectation");
        CHECK(st == MCL_ERR_FORMAT && !tu_err_matches(T.ctx, TU_ST(MCL_ERR_FORMAT),
                                                      "CRC mismatch in section params") &&
                  !tu_err_matches(T.ctx, TU_ST(MCL_ERR_IO), "truncated"),
              "a deliberately wrong expectation (message or status) is detected: %s", eb);
    }

    /* read_info: only header and config are read */
    {
        mcl_ckpt_info info;
        write_bytes(pa, base, L.off[s_params] + 40);
        mcl_status st = mcl_ckpt_read_info(pa, &info, eb, sizeof eb);
        CHECK(st == MCL_OK && info.config && strcmp(info.config, CONFIG_TEXT) == 0,
              "read_info of a file cut in params still reads header and config: %s", eb);
        mcl_ckpt_info_free(&info);
        write_bytes(pa, base, L.off[1] + 20);
        st = mcl_ckpt_read_info(pa, &info, eb, sizeof eb);
        CHECK(st == MCL_ERR_FORMAT && strstr(eb, "truncated in section config") &&
                  info.config == NULL,
              "read_info of a file cut in config: %s", eb);
        mcl_ckpt_info_free(&info);
        memcpy(m, base, n);
        wr32(m + 8, 2);
        write_bytes(pa, m, n);
        st = mcl_ckpt_read_info(pa, &info, eb, sizeof eb);
        CHECK(st == MCL_ERR_FORMAT && strstr(eb, "format version 2 (this build reads 1)"),
              "read_info of version 2: %s", eb);
        mcl_ckpt_info_free(&info);
    }

    /* ---- every prefix and every single-byte change is rejected ---- */
    {
        int bad_prefix = 0, bad_flip = 0;
        size_t first_bad_prefix = 0, first_bad_flip = 0;
        for (size_t k = 0; k < n; k++) {
            write_bytes(pa, base, k);
            mcl_status st = try_load(&T, pa, 1, eb, sizeof eb, "prefix");
            int ok = st == MCL_ERR_FORMAT &&
                     (strstr(eb, "truncated") || (k == 0 && strstr(eb, "empty file")));
            if (!ok && !bad_prefix++) first_bad_prefix = k;
        }
        CHECK(bad_prefix == 0, "all %zu prefixes rejected as truncated (%d not; first: %zu bytes)",
              n, bad_prefix, first_bad_prefix);
        for (size_t k = 0; k < n; k++) {
            memcpy(m, base, n);
            m[k] ^= 0x5A;
            write_bytes(pa, m, n);
            mcl_status st = try_load(&T, pa, 1, eb, sizeof eb, "flip");
            if (st != MCL_ERR_FORMAT && !bad_flip++) first_bad_flip = k;
        }
        CHECK(bad_flip == 0, "all %zu single-byte changes rejected (%d not; first at %zu)", n,
              bad_flip, first_bad_flip);
        /* and the untouched file still loads */
        write_bytes(pa, base, n);
        CHECK(try_load(&T, pa, 1, eb, sizeof eb, "intact") == MCL_OK, "the intact file loads: %s",
              eb);
    }
    free(m);

done:
    for (int i = 0; i < g_ncases; i++) free(g_cases[i].bytes);
    g_ncases = 0;
    free(base);
    remove(pa);
    mcl_optim_free(SO);
    mcl_params_free(SP);
    mcl_optim_free(T.adam);
    mcl_optim_free(T.sgd);
    mcl_params_free(T.P);
    mcl_ctx_free(T.ctx);
    mcl_ctx_free(sctx);
}

/* ------------------------------------------------------------------ 5. atomic saves */

static void test_atomic(void)
{
    printf("atomic saves\n");
    char path[128], eb[1024];
    fname(path, sizeof path, "atomic.ckpt");
    mcl_ctx *ctx = tu_ctx_ref();
    mcl_params *P = make_params(ctx, BASE, NBASE, SEED);
    mcl_params *Q = make_params(ctx, BASE, NBASE, SEED + 1);
    mcl_optim *O = P ? make_optim(ctx, P, MCL_OPTIM_ADAM) : NULL;
    unsigned char *orig = NULL;
    size_t on = 0;
    if (!O || !Q) goto done;
    if (!CHECK(save_model(ctx, path, KIND, P, O, 1, eb, sizeof eb) == MCL_OK, "save: %s", eb))
        goto done;
    orig = read_bytes(path, &on);
    if (!CHECK(orig != NULL, "read back")) goto done;

    /* into a directory that does not exist */
    {
        char p2[160];
        snprintf(p2, sizeof p2, "%s-no-such-dir/x.ckpt", g_prefix);
        mcl_ctx_clear_error(ctx);
        mcl_status st = save_model(ctx, p2, KIND, Q, NULL, 1, eb, sizeof eb);
        CHECK(st == MCL_ERR_IO && strstr(eb, "No such file or directory") &&
                  strstr(eb, "no-such-dir/x.ckpt"),
              "save into a missing directory: %s", eb);
        CHECK_ERR("save into a missing directory (context)", ctx, TU_ST(MCL_ERR_IO),
                  "cannot create the temporary file");
    }
    /* onto a path that is a directory */
    {
        char pd[128];
        fname(pd, sizeof pd, "isdir.ckpt");
        CHECK(mkdir(pd, 0755) == 0, "mkdir %s", pd);
        mcl_status st = save_model(ctx, pd, KIND, Q, NULL, 1, eb, sizeof eb);
        CHECK(st == MCL_ERR_IO && strstr(eb, "cannot rename"), "save onto a directory: %s", eb);
        struct stat sb;
        CHECK(stat(pd, &sb) == 0 && S_ISDIR(sb.st_mode), "the directory is still there");
        CHECK(count_temp_files(pd) == 0, "no temp file left after a failed rename");
        CHECK(rmdir(pd) == 0, "the directory stayed empty");
    }
    /* cut short by the file-size limit: an I/O error in the middle of writing */
    {
        struct rlimit old, lim;
        if (getrlimit(RLIMIT_FSIZE, &old) == 0) {
            void (*prev)(int) = signal(SIGXFSZ, SIG_IGN);
            lim = old;
            lim.rlim_cur = 200;
            fflush(stdout);
            fflush(stderr);
            /* nothing may be printed while the limit holds: the log may be longer */
            int set = setrlimit(RLIMIT_FSIZE, &lim) == 0;
            mcl_status st = set ? save_model(ctx, path, KIND, Q, O, 2, eb, sizeof eb) : MCL_OK;
            setrlimit(RLIMIT_FSIZE, &old);
            signal(SIGXFSZ, prev);
            if (set) {
                CHECK(st == MCL_ERR_IO && strstr(eb, "cannot write the temporary file"),
                      "save cut short by RLIMIT_FSIZE fails: %s", eb);
                CHECK(same_file_bytes(path, orig, on), "the existing file is byte-identical");
            } else {
                printf("setrlimit(RLIMIT_FSIZE) not permitted: write-failure case skipped\n");
            }
        }
    }
    CHECK(same_file_bytes(path, orig, on), "after the failed saves the file is byte-identical");
    CHECK(count_temp_files(path) == 0, "no temp file left behind");
    {
        mcl_status st = mcl_ckpt_load(ctx, path, KIND, Q, NULL, NULL, eb, sizeof eb);
        snap x = take_snap(P, NULL), y = take_snap(Q, NULL);
        CHECK(st == MCL_OK && snap_equal(&x, &y), "and it still loads: %s", eb);
        snap_free(&x);
        snap_free(&y);
    }
    /* a successful save replaces the file */
    {
        mcl_status st = save_model(ctx, path, KIND, Q, NULL, 3, eb, sizeof eb);
        CHECK(st == MCL_OK && !same_file_bytes(path, orig, on) && count_temp_files(path) == 0,
              "a successful save replaces the file: %s", eb);
    }

done:
    free(orig);
    remove(path);
    mcl_optim_free(O);
    mcl_params_free(P);
    mcl_params_free(Q);
    mcl_ctx_free(ctx);
}

/* ------------------------------------------------- mcl_ckpt_export, mcl_params_copy_matching */

static int same_values(mcl_tensor *x, mcl_tensor *y)
{
    const int64_t n = mcl_tensor_numel(x);
    if (n != mcl_tensor_numel(y)) return 0;
    float *a = malloc((size_t)n * sizeof *a), *b = malloc((size_t)n * sizeof *b);
    int ok = a && b && mcl_tensor_read(x, a, n) == MCL_OK && mcl_tensor_read(y, b, n) == MCL_OK &&
             memcmp(a, b, (size_t)n * sizeof *a) == 0;
    free(a);
    free(b);
    return ok;
}

static void test_export_and_copy(void)
{
    printf("export (no optimizer) and copy_matching\n");
    char path[128], path2[128], eb[1024];
    fname(path, sizeof path, "exp-src.ckpt");
    fname(path2, sizeof path2, "exp-dst.ckpt");
    mcl_ctx *a = tu_ctx_ref();
    mcl_ctx_set_seed(a, SEED);
    mcl_params *PA = make_params(a, BASE, NBASE, SEED + 21), *PB = make_params(a, BASE, NBASE, SEED + 22);
    mcl_optim *OA = PA ? make_optim(a, PA, MCL_OPTIM_ADAM) : NULL;
    mcl_ckpt_info info;
    memset(&info, 0, sizeof info);
    if (!OA || !PB) goto done;
    mcl_status st = save_model(a, path, KIND, PA, OA, 77, eb, sizeof eb);
    if (!CHECK(st == MCL_OK, "save: %s", eb)) goto done;
    st = mcl_ckpt_load(a, path, KIND, PB, NULL, &info, eb, sizeof eb);
    if (!CHECK(st == MCL_OK, "load: %s", eb)) goto done;
    st = mcl_ckpt_export(a, path2, KIND, PB, &info, eb, sizeof eb);
    if (!CHECK(st == MCL_OK, "export: %s", eb)) goto done;
    mcl_ckpt_info_free(&info);
    mcl_params *PC = make_params(a, BASE, NBASE, SEED + 23);
    st = PC ? mcl_ckpt_load(a, path2, KIND, PC, NULL, &info, eb, sizeof eb) : MCL_ERR_OOM;
    if (CHECK(st == MCL_OK, "load the export: %s", eb)) {
        check_info(&info, SEED, 77, -1, "export");
        int eq = 1;
        for (int i = 0; i < NBASE; i++)
            eq &= same_values(mcl_params_find(PA, BASE[i].name), mcl_params_find(PC, BASE[i].name));
        CHECK(eq, "the export holds the same values, without optimizer state");
    }
    /* copy_matching: same name and shape only, a skipped prefix left alone */
    static const tspec OTHER[] = {
        {"layer0.W", 2, {4, 4, 0, 0}}, /* copied */
        {"layer0.b", 1, {5, 0, 0, 0}}, /* another shape: kept */
        {"head.W", 2, {3, 4, 0, 0}},   /* skipped by prefix */
        {"extra", 1, {2, 0, 0, 0}},    /* not in the source */
    };
    mcl_params *PD = make_params(a, OTHER, 4, SEED + 24);
    if (PD) {
        float before[16];
        mcl_tensor_read(mcl_params_find(PD, "head.W"), before, 12);
        const char *const skip[] = {"head."};
        int copied = -1;
        st = mcl_params_copy_matching(PD, PA, skip, 1, &copied);
        float after[16];
        mcl_tensor_read(mcl_params_find(PD, "head.W"), after, 12);
        CHECK(st == MCL_OK && copied == 1, "copy_matching copied %d tensor(s) (1)", copied);
        CHECK(same_values(mcl_params_find(PD, "layer0.W"), mcl_params_find(PA, "layer0.W")),
              "the matching tensor has the source's values");
        CHECK(memcmp(before, after, sizeof(float) * 12) == 0, "the skipped prefix is left alone");
        copied = -1;
        st = mcl_params_copy_matching(PD, PA, NULL, 0, &copied);
        CHECK(st == MCL_OK && copied == 2, "without the skip list head.W is copied too (%d)", copied);
        CHECK(mcl_params_copy_matching(NULL, PA, NULL, 0, &copied) == MCL_ERR_NULL && copied == 0,
              "a NULL registry is refused");
        /* 16 + 5 + 12 + 2 elements, all trainable; then head.W (12) as a state tensor */
        CHECK(mcl_params_numel_trainable(PD) == 35, "trainable elements: %lld (35)",
              (long long)mcl_params_numel_trainable(PD));
        mcl_tensor_requires_grad(mcl_params_find(PD, "head.W"), 0);
        CHECK(mcl_params_numel_trainable(PD) == 23 && mcl_params_numel(PD) == 35,
              "a tensor without grad is not counted as trainable: %lld of %lld (23 of 35)",
              (long long)mcl_params_numel_trainable(PD), (long long)mcl_params_numel(PD));
        mcl_params_free(PD);
    }
    mcl_params_free(PC);
done:
    mcl_ckpt_info_free(&info);
    remove(path);
    remove(path2);
    mcl_optim_free(OA);
    mcl_params_free(PA);
    mcl_params_free(PB);
    mcl_ctx_free(a);
}

int main(void)
{
    tu_begin("test-checkpoint", SEED);
    snprintf(g_prefix, sizeof g_prefix, "tckpt-%ld", (long)getpid());
    test_round_trip_ref();
    test_cross_backend();
    test_corruption();
    test_atomic();
    test_export_and_copy();
    return tu_summary();
}
