/* test-reliability.c — untrusted input is refused before it costs anything (doc/reliability.md):
 *   - the memory budget (mcl_parse_size, METACL_MEMORY_LIMIT, mcl_check_budget) and the ACL
 *     estimate (mcl_acl_param_bytes equals the bytes of the parameters a model registers);
 *   - a crafted checkpoint (valid CRCs, config "layers = 1024, hidden = 4096", 36 KB of
 *     parameters) refused by mcl_acl_open quickly, with the peak RSS still small;
 *   - a model config beyond the budget (hidden 65536, 1 head: a 16 GiB tensor) refused by
 *     mcl_acl_create before anything is allocated;
 *   - checkpoint counters out of range (optimizer steps, rng counter) refused;
 *   - duplicate config keys refused naming both lines;
 *   - FIFOs and devices refused without blocking or reading (config text, checkpoint, IDX,
 *     PNG) — an alarm turns a hang into a failure;
 *   - an IDX label of INT32_MAX refused;
 *   - the atomic writer (mcl_write_file_atomic, mcl_atomic_open and abort, a PNG)
 *     follows no symlink and opens no FIFO planted at the temporary names it would take next
 *     (each is skipped), and leaves no temporary behind;
 *   - the families' estimates (mcl_lm/smn/oct_param_floats) equal the floats of the tensors
 *     their models register, for several configs; a model beyond the budget (the issue's
 *     lm, smn and oct sizes) is refused by its create before allocating, with a small RSS;
 *     budget messages print sizes in units that fit (KiB for a few thousand bytes);
 *   - a safetensors header is bounded before cJSON builds its tree: a value of __metadata__
 *     that is not a string (a 4 MB array) and nesting deeper than a header has are refused,
 *     a 2 MB shape array is refused by the budget (its tree counted), a valid file still reads;
 *   - the run-directory lock (mcl_dir_lock): a second lock of the same directory is refused
 *     naming the holder's PID; released, it can be taken again.
 * Every refusal is also checked to be a refusal of the right thing (the message), so a check
 * that passed by accident (another error) fails.
 */
#define _POSIX_C_SOURCE 200809L
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include "acl.h"
#include "lm.h"
#include "oct.h"
#include "smn.h"
#include "checkpoint.h"
#include "dataset.h"
#include "idx.h"
#include "png_io.h"
#include "safetensors.h"
#include "testutil.h"
#include "util.h"

static char g_dir[256];
static char g_err[2048];

static void tpath(char *out, size_t n, const char *name) { snprintf(out, n, "%s/%s", g_dir, name); }

static long maxrss_mb(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss / 1024; /* KiB on Linux */
}

static void on_alarm(int sig)
{
    (void)sig;
    static const char msg[] = "test-reliability: FAIL: timed out (a FIFO blocked?)\n";
    (void)!write(2, msg, sizeof msg - 1);
    _exit(1);
}

static mcl_acl_config tiny_cfg(void)
{
    mcl_acl_config c;
    mcl_acl_config_default(&c);
    c.n_way = 2;
    c.hidden = 8;
    c.heads = 2;
    c.layers = 1;
    c.conv_channels = 2;
    c.image_size = 16;
    c.feature_norm = MCL_ACL_FEATNORM_BATCH;
    return c;
}

static unsigned char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long k = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc((size_t)k + 1);
    if (b && fread(b, 1, (size_t)k, f) != (size_t)k) {
        free(b);
        b = NULL;
    }
    fclose(f);
    *n = (size_t)k;
    return b;
}

static void put32(unsigned char *b, uint32_t v)
{
    for (int i = 0; i < 4; i++) b[i] = (unsigned char)(v >> (8 * i));
}
static uint32_t get32(const unsigned char *b)
{
    return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}
static uint64_t get64(const unsigned char *b) { return get32(b) | (uint64_t)get32(b + 4) << 32; }

/* Copy a checkpoint, replacing section `tag`'s payload by `payload` (n bytes) with a valid CRC.
 * Returns 0 on success. */
static int rewrite_section(const char *in, const char *out, uint32_t tag, const void *payload,
                           size_t n)
{
    size_t len;
    unsigned char *b = slurp(in, &len);
    if (!b) return -1;
    FILE *f = fopen(out, "wb");
    if (!f) {
        free(b);
        return -1;
    }
    fwrite(b, 1, 12, f);
    size_t at = 12;
    while (at + 12 <= len) {
        uint32_t t = get32(b + at);
        uint64_t l = get64(b + at + 4);
        const unsigned char *p = b + at + 12;
        unsigned char h[12];
        memcpy(h, b + at, 12);
        if (t == tag) {
            p = payload;
            for (int i = 0; i < 8; i++) h[4 + i] = (unsigned char)((uint64_t)n >> (8 * i));
        }
        uint64_t pl = t == tag ? n : l;
        uLong crc = crc32(crc32(0, h, 12), p, (uInt)pl);
        unsigned char cb[4];
        put32(cb, (uint32_t)crc);
        fwrite(h, 1, 12, f);
        fwrite(p, 1, (size_t)pl, f);
        fwrite(cb, 1, 4, f);
        at += 12 + (size_t)l + 4;
    }
    free(b);
    return fclose(f);
}

static void test_budget(void)
{
    uint64_t v = 0;
    CHECK(mcl_parse_size("512M", &v) == 0 && v == (uint64_t)512 << 20, "512M");
    CHECK(mcl_parse_size("2GiB", &v) == 0 && v == (uint64_t)2 << 30, "2GiB");
    CHECK(mcl_parse_size("1234", &v) == 0 && v == 1234, "1234");
    CHECK(mcl_parse_size("12X", &v) != 0, "12X refused");
    CHECK(mcl_parse_size("-1G", &v) != 0, "-1G refused");
    CHECK(mcl_parse_size("99999999999999999999", &v) != 0, "overflow refused");
    CHECK(mcl_parse_size("20000000000T", &v) != 0, "overflow by the suffix refused");
    uint64_t def = mcl_memory_budget();
    CHECK(def > ((uint64_t)64 << 20), "default budget %llu bytes is plausible", (unsigned long long)def);
    setenv("METACL_MEMORY_LIMIT", "3M", 1);
    CHECK(mcl_memory_budget() == (uint64_t)3 << 20, "METACL_MEMORY_LIMIT=3M read");
    CHECK(mcl_check_budget((uint64_t)4 << 20, "four MiB", g_err, sizeof g_err) == MCL_ERR_OOM &&
              strstr(g_err, "four MiB") && strstr(g_err, "METACL_MEMORY_LIMIT"),
          "4 MiB over a 3 MiB budget refused: %s", g_err);
    CHECK(mcl_check_budget((uint64_t)2 << 20, "two MiB", g_err, sizeof g_err) == MCL_OK, "2 MiB fits");
    mcl_set_memory_limit((uint64_t)5 << 20); /* the CLI option wins over the environment */
    CHECK(mcl_check_budget((uint64_t)4 << 20, "four MiB", g_err, sizeof g_err) == MCL_OK,
          "--memory-limit 5M lets 4 MiB through");
    mcl_set_memory_limit(0);
    unsetenv("METACL_MEMORY_LIMIT");
    CHECK(mcl_memory_budget() == def, "budget back to the default");

    /* the estimate is exact for the parameters a model registers */
    mcl_ctx *ctx = tu_ctx_ref();
    mcl_acl_config c = tiny_cfg();
    mcl_acl *m = ctx ? mcl_acl_create(ctx, &c) : NULL;
    if (CHECK(m != NULL, "tiny model: %s", ctx ? mcl_ctx_error(ctx) : "no ctx")) {
        int64_t numel = mcl_params_numel(mcl_acl_params(m));
        CHECK(mcl_acl_param_count(&c) == (uint64_t)numel, "param count %llu = registered %lld",
              (unsigned long long)mcl_acl_param_count(&c), (long long)numel);
        CHECK(mcl_acl_param_bytes(&c) == 4 * (uint64_t)numel, "param bytes");
        CHECK(mcl_acl_param_count(&c) != (uint64_t)numel + 1, "a wrong count is told apart");
        CHECK(mcl_acl_train_bytes(&c, 4, 10) > 4 * mcl_acl_param_bytes(&c),
              "training needs more than parameters + gradients + Adam state");
    }
    mcl_acl_free(m);
    mcl_acl_config_default(&c);
    c.layers = 3;
    c.feature_norm = MCL_ACL_FEATNORM_NONE;
    if (ctx && (m = mcl_acl_create(ctx, &c)) != NULL) {
        CHECK(mcl_acl_param_count(&c) == (uint64_t)mcl_params_numel(mcl_acl_params(m)),
              "param count of the paper sizes with 3 layers");
        mcl_acl_free(m);
    }

    /* hidden 65536 with one head: a 16 GiB matrix; refused before any allocation */
    mcl_acl_config_default(&c);
    c.hidden = 65536;
    c.heads = 1;
    setenv("METACL_MEMORY_LIMIT", "1G", 1);
    m = ctx ? mcl_acl_create(ctx, &c) : NULL;
    CHECK(m == NULL && ctx && mcl_ctx_status(ctx) == MCL_ERR_OOM &&
              strstr(mcl_ctx_error(ctx), "memory budget"),
          "hidden 65536 refused by the budget: %s", ctx ? mcl_ctx_error(ctx) : "");
    CHECK(maxrss_mb() < 200, "peak RSS %ld MB after the refusal", maxrss_mb());
    mcl_acl_free(m);
    unsetenv("METACL_MEMORY_LIMIT");
    mcl_ctx_free(ctx);
}

static void test_crafted_ckpt(void)
{
    char good[512], bad[512], bad2[512];
    tpath(good, sizeof good, "tiny.ckpt");
    tpath(bad, sizeof bad, "crafted.ckpt");
    tpath(bad2, sizeof bad2, "crafted2.ckpt");
    mcl_ctx *ctx = tu_ctx_ref();
    mcl_acl_config c = tiny_cfg();
    mcl_acl *m = ctx ? mcl_acl_create(ctx, &c) : NULL;
    if (!CHECK(m != NULL, "tiny model")) {
        mcl_ctx_free(ctx);
        return;
    }
    CHECK(mcl_acl_save(m, good, NULL, NULL, 0, g_err, sizeof g_err) == MCL_OK, "save: %s", g_err);
    mcl_acl_free(m);
    mcl_acl *back = NULL;
    CHECK(mcl_acl_open(ctx, good, &back, g_err, sizeof g_err) == MCL_OK, "the untouched file opens: %s", g_err);
    mcl_acl_free(back);

    /* the same parameters, a config asking for ~86 G floats */
    mcl_acl_config big = c;
    big.layers = 1024;
    big.hidden = 4096;
    big.heads = 16;
    char *text = mcl_acl_config_to_text(&big);
    int ok = text && rewrite_section(good, bad, MCL_CKPT_SEC_CONFIG, text, strlen(text)) == 0;
    free(text);
    if (CHECK(ok, "crafted checkpoint written")) {
        mcl_ckpt_info info;
        CHECK(mcl_ckpt_read_info(bad, &info, g_err, sizeof g_err) == MCL_OK,
              "its CRCs are valid: %s", g_err);
        mcl_ckpt_info_free(&info);
        double t0 = mcl_now_s();
        back = NULL;
        mcl_status st = mcl_acl_open(ctx, bad, &back, g_err, sizeof g_err);
        double dt = mcl_now_s() - t0;
        CHECK(st == MCL_ERR_FORMAT && back == NULL && strstr(g_err, "params section"),
              "config larger than the params section refused: %d %s", (int)st, g_err);
        CHECK(dt < 2.0, "refused in %.3f s", dt);
        CHECK(maxrss_mb() < 200, "peak RSS %ld MB after the refusal", maxrss_mb());
        mcl_acl_free(back);
    }
    /* a config that fits its params section but not the budget (the budget is the limit) */
    setenv("METACL_MEMORY_LIMIT", "1K", 1);
    back = NULL;
    mcl_status st = mcl_acl_open(ctx, good, &back, g_err, sizeof g_err);
    CHECK(st == MCL_ERR_OOM && back == NULL && strstr(g_err, "memory budget"),
          "a checkpoint over a 1 KiB budget refused: %s", g_err);
    mcl_acl_free(back);
    unsetenv("METACL_MEMORY_LIMIT");

    /* counters out of range: optimizer steps and the rng counter */
    m = mcl_acl_create(ctx, &c);
    mcl_optim_config oc;
    memset(&oc, 0, sizeof oc);
    oc.kind = MCL_OPTIM_ADAM;
    oc.beta1 = 0.9f;
    oc.beta2 = 0.999f;
    oc.eps = 1e-8f;
    oc.sched.kind = MCL_SCHED_CONSTANT;
    oc.sched.base_lr = 1e-3f;
    mcl_optim *opt = NULL;
    if (m && mcl_optim_create(ctx, &oc, mcl_acl_params(m), &opt) == MCL_OK) {
        mcl_optim_set_steps(opt, (int64_t)MCL_CKPT_MAX_STEPS + 1);
        CHECK(mcl_acl_save(m, bad2, opt, NULL, 0, g_err, sizeof g_err) == MCL_OK, "save: %s", g_err);
        st = mcl_acl_load(m, bad2, opt, 0, NULL, g_err, sizeof g_err);
        CHECK(st == MCL_ERR_FORMAT && strstr(g_err, "optimizer step count") && strstr(g_err, bad2),
              "optimizer steps 10^12 + 1 refused: %s", g_err);
        mcl_optim_set_steps(opt, (int64_t)MCL_CKPT_MAX_STEPS);
        CHECK(mcl_acl_save(m, bad2, opt, NULL, 0, g_err, sizeof g_err) == MCL_OK, "save: %s", g_err);
        CHECK(mcl_acl_load(m, bad2, opt, 0, NULL, g_err, sizeof g_err) == MCL_OK,
              "optimizer steps 10^12 accepted: %s", g_err);
        mcl_ctx_set_stream(ctx, MCL_CKPT_MAX_RNG_COUNTER + 1);
        CHECK(mcl_acl_save(m, bad2, opt, NULL, 0, g_err, sizeof g_err) == MCL_OK, "save: %s", g_err);
        st = mcl_acl_load(m, bad2, opt, 1, NULL, g_err, sizeof g_err);
        CHECK(st == MCL_ERR_FORMAT && strstr(g_err, "rng counter"), "rng counter 2^62 + 1 refused: %s", g_err);
    } else {
        CHECK(0, "optimizer: %s", mcl_ctx_error(ctx));
    }
    mcl_optim_free(opt);
    mcl_acl_free(m);
    mcl_ctx_free(ctx);
}

static void test_duplicate_keys(void)
{
    mcl_acl_config c;
    mcl_acl_config_default(&c);
    mcl_status st = mcl_acl_config_parse(&c, "hidden = 8\nheads = 2\n# hidden = 4\nhidden=16\n", g_err,
                                         sizeof g_err);
    CHECK(st == MCL_ERR_INVALID && strstr(g_err, "'hidden'") && strstr(g_err, "lines 1 and 4"),
          "duplicate key refused with both lines: %s", g_err);
    CHECK(c.hidden == 256, "nothing applied (all or nothing)");
    st = mcl_acl_config_parse(&c, "heads=4\nlayers = 1\nlayers = 2\nheads = 8\n", g_err, sizeof g_err);
    CHECK(st == MCL_ERR_INVALID && strstr(g_err, "config:3:") && strstr(g_err, "lines 2 and 3"),
          "the first duplicate in text order is named: %s", g_err);
    st = mcl_acl_config_parse(&c, "hidden = 8\nheads = 2\n", g_err, sizeof g_err);
    CHECK(st == MCL_OK && c.hidden == 8, "distinct keys accepted: %s", g_err);
    st = mcl_acl_config_parse(&c, "hidden = 16\n", g_err, sizeof g_err);
    CHECK(st == MCL_OK && c.hidden == 16, "a second parse call overrides (not a duplicate)");
}

static void test_fifo_and_devices(void)
{
    char fifo[512], zero[512], sub[600];
    tpath(fifo, sizeof fifo, "fifo");
    tpath(zero, sizeof zero, "zero");
    if (!CHECK(mkfifo(fifo, 0600) == 0, "mkfifo")) return;
    int have_zero = symlink("/dev/zero", zero) == 0;
    signal(SIGALRM, on_alarm);
    alarm(20);
    char *text = NULL;
    mcl_status st = mcl_read_text_file(fifo, 1 << 20, &text, g_err, sizeof g_err);
    CHECK(st == MCL_ERR_IO && strstr(g_err, "not a regular file"), "config FIFO refused: %s", g_err);
    free(text);
    text = NULL;
    if (have_zero) {
        st = mcl_read_text_file(zero, 1 << 20, &text, g_err, sizeof g_err);
        CHECK(st == MCL_ERR_IO && strstr(g_err, "not a regular file"), "/dev/zero refused: %s", g_err);
        free(text);
    }
    mcl_ckpt_info info;
    st = mcl_ckpt_read_info(fifo, &info, g_err, sizeof g_err);
    CHECK(st == MCL_ERR_IO && strstr(g_err, "not a regular file") && strstr(g_err, "checkpoint '"),
          "checkpoint FIFO refused: %s", g_err);
    mcl_ckpt_info_free(&info);
    if (have_zero) {
        st = mcl_ckpt_read_info(zero, &info, g_err, sizeof g_err);
        CHECK(st == MCL_ERR_IO && strstr(g_err, "not a regular file"), "checkpoint /dev/zero refused: %s", g_err);
        mcl_ckpt_info_free(&info);
    }
    mcl_idx x;
    memset(&x, 0, sizeof x);
    st = mcl_idx_read(fifo, 1 << 20, &x, g_err, sizeof g_err);
    CHECK(st == MCL_ERR_IO && strstr(g_err, "not a regular file"), "IDX FIFO refused: %s", g_err);
    mcl_idx_free(&x);
    uint8_t *gray = NULL;
    int w = 0, h = 0;
    st = mcl_png_read(fifo, 1 << 20, &gray, &w, &h, g_err, sizeof g_err);
    CHECK(st == MCL_ERR_IO && strstr(g_err, "not a regular file"), "PNG FIFO refused: %s", g_err);
    free(gray);
    snprintf(sub, sizeof sub, "%s/sub", g_dir);
    mkdir(sub, 0755);
    st = mcl_read_text_file(sub, 1 << 20, &text, g_err, sizeof g_err);
    CHECK(st == MCL_ERR_IO && strstr(g_err, "is a directory"), "a directory refused: %s", g_err);
    rmdir(sub);
    alarm(0);
    unlink(fifo);
    unlink(zero);
}

static void test_labels(void)
{
    char ip[512], lp[512], spec[1100];
    enum { N = 4 };
    uint8_t img[N * 28 * 28];
    memset(img, 7, sizeof img);
    int32_t lab[N] = {0, 1, INT32_MAX, 1};
    int64_t d3[3] = {N, 28, 28}, d1[1] = {N};
    tpath(ip, sizeof ip, "images.idx");
    tpath(lp, sizeof lp, "labels.idx");
    mcl_idx_write(ip, MCL_IDX_UBYTE, 3, d3, img, 0, g_err, sizeof g_err);
    mcl_idx_write(lp, MCL_IDX_INT32, 1, d1, lab, 0, g_err, sizeof g_err);
    snprintf(spec, sizeof spec, "idx:%s,%s", ip, lp);
    mcl_dataset *ds = NULL;
    mcl_status st = mcl_dataset_load(spec, NULL, MCL_SPLIT_ALL, &ds, g_err, sizeof g_err);
    CHECK(st == MCL_ERR_FORMAT && ds == NULL && strstr(g_err, "out of range") && strstr(g_err, "2147483647"),
          "label INT32_MAX refused: %s", g_err);
    mcl_dataset_free(ds);
    ds = NULL;
    lab[2] = 5;
    mcl_idx_write(lp, MCL_IDX_INT32, 1, d1, lab, 0, g_err, sizeof g_err);
    st = mcl_dataset_load(spec, NULL, MCL_SPLIT_ALL, &ds, g_err, sizeof g_err);
    CHECK(st == MCL_OK && ds && ds->n_classes == 3, "labels 0, 1, 5 accepted: %s", g_err);
    mcl_dataset_free(ds);
}

/* `test-reliability set-counter FILE NAME VALUE` (for test-reliability-cli.sh): rewrite the named
 * counter of a checkpoint in place, with a valid CRC. */
static int set_counter(const char *path, const char *name, const char *value)
{
    size_t len;
    unsigned char *b = slurp(path, &len);
    if (!b) return 1;
    uint64_t v = strtoull(value, NULL, 0);
    int done = 0;
    for (size_t at = 12; at + 12 <= len && !done;) {
        uint32_t t = get32(b + at);
        uint64_t l = get64(b + at + 4);
        if (t == MCL_CKPT_SEC_COUNTERS) {
            unsigned char *p = b + at + 12;
            uint32_t n = get32(p), k = 4;
            for (uint32_t i = 0; i < n; i++) {
                uint32_t nl = get32(p + k);
                int hit = nl == strlen(name) && !memcmp(p + k + 4, name, nl);
                k += 4 + nl;
                if (hit) {
                    for (int j = 0; j < 8; j++) p[k + j] = (unsigned char)(v >> (8 * j));
                    done = 1;
                }
                k += 8;
            }
            put32(p + l, (uint32_t)crc32(crc32(0, b + at, 12), p, (uInt)l));
        }
        at += 12 + (size_t)l + 4;
    }
    FILE *f = done ? fopen(path, "wb") : NULL;
    int bad = !f || fwrite(b, 1, len, f) != len;
    if (f && fclose(f) != 0) bad = 1;
    free(b);
    if (!done) fprintf(stderr, "%s: no counter '%s'\n", path, name);
    return bad;
}

/* Plant, at the next 6 temporary names the writer would take for `path`, 3 symlinks to
 * `victim` and 3 FIFOs; returns 0 when all were made. */
static int plant_traps(const char *path, const char *victim)
{
    char tmp[1200];
    if (mcl_tmp_name(path, tmp, sizeof tmp) != 0) return -1; /* takes one number: k */
    const char *dot = strrchr(tmp, '.');
    unsigned k = (unsigned)strtoul(dot + 1, NULL, 10);
    for (unsigned i = 1; i <= 6; i++) {
        snprintf(tmp, sizeof tmp, "%s.tmp.%ld.%u", path, (long)getpid(), k + i);
        if (i <= 3 ? symlink(victim, tmp) != 0 : mkfifo(tmp, 0600) != 0) return -1;
    }
    return 0;
}

/* Files in g_dir whose name starts with `prefix` and holds ".tmp." but is a regular file. */
static int stray_tmps(const char *prefix)
{
    char cmd[800];
    snprintf(cmd, sizeof cmd, "find '%s' -maxdepth 1 -type f -name '%s.tmp.*' | grep -q .", g_dir,
             prefix);
    return system(cmd) == 0;
}

static void test_atomic_writer(void)
{
    char path[512], victim[512], tmp[4200];
    tpath(victim, sizeof victim, "victim");
    FILE *f = fopen(victim, "wb");
    if (!CHECK(f != NULL, "create victim")) return;
    fputs("precious\n", f);
    fclose(f);
    signal(SIGALRM, on_alarm);
    alarm(20);
    /* 1. mcl_write_file_atomic */
    tpath(path, sizeof path, "out.json");
    CHECK(plant_traps(path, victim) == 0, "plant traps");
    mcl_status st = mcl_write_file_atomic(path, "{}\n", 3, g_err, sizeof g_err);
    CHECK(st == MCL_OK, "write past 3 symlinks and 3 FIFOs: %s", g_err);
    size_t n = 0;
    unsigned char *b = slurp(victim, &n);
    CHECK(b && n == 9 && !memcmp(b, "precious\n", 9), "the symlinks' target is untouched");
    free(b);
    struct stat sb;
    CHECK(lstat(path, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_size == 3, "out.json is a regular file of 3 bytes");
    CHECK(!stray_tmps("out.json"), "no temporary of out.json left");
    /* 2. the stream writer; an abort leaves nothing */
    tpath(path, sizeof path, "stream.txt");
    CHECK(plant_traps(path, victim) == 0, "plant traps (stream)");
    mcl_atomic_file af;
    st = mcl_atomic_open(&af, path, g_err, sizeof g_err);
    if (CHECK(st == MCL_OK, "mcl_atomic_open past the traps: %s", g_err)) {
        fputs("hello\n", af.f);
        st = mcl_atomic_commit(&af, g_err, sizeof g_err);
        CHECK(st == MCL_OK, "mcl_atomic_commit: %s", g_err);
    }
    CHECK(lstat(path, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_size == 6, "stream.txt written");
    if (mcl_atomic_open(&af, path, g_err, sizeof g_err) == MCL_OK) {
        snprintf(tmp, sizeof tmp, "%s", af.tmp);
        fputs("half", af.f);
        mcl_atomic_abort(&af);
        CHECK(access(tmp, F_OK) != 0, "an aborted write leaves no temporary");
        CHECK(lstat(path, &sb) == 0 && sb.st_size == 6, "an aborted write leaves the old file");
    }
    b = slurp(victim, &n);
    CHECK(b && n == 9, "the victim is untouched after the stream writes");
    free(b);
    /* 3. a PNG */
    tpath(path, sizeof path, "fig.png");
    CHECK(plant_traps(path, victim) == 0, "plant traps (png)");
    uint8_t px[4] = {0, 255, 255, 0};
    st = mcl_png_write(path, px, 2, 2, 1, g_err, sizeof g_err);
    CHECK(st == MCL_OK, "PNG written past the traps: %s", g_err);
    b = slurp(victim, &n);
    CHECK(b && n == 9, "the victim is untouched after the PNG");
    free(b);
    alarm(0);
}

static double numel_of(mcl_params *p) { return (double)mcl_params_numel(p); }
static double frozen_of(mcl_params *p) { return (double)(mcl_params_numel(p) - mcl_params_numel_trainable(p)); }

static void test_family_budgets(void)
{
    mcl_ctx *ctx = tu_ctx_ref();
    if (!CHECK(ctx != NULL, "ref context")) return;
    /* lm: plain, fast on q/k/v/o, + embedding, + ffw */
    for (int v = 0; v < 4; v++) {
        mcl_lm_config c;
        mcl_lm_config_default(&c);
        c.layers = 2;
        c.width = 12;
        c.heads = 3;
        c.head_dim = 5;
        c.ffw = 20;
        c.mem_len = 4;
        c.meta_hidden = 3;
        c.fast = v > 0;
        c.fast_embed = v >= 2;
        c.fast_ffw = v >= 3;
        double fast = -1, n = mcl_lm_param_floats(&c, &fast);
        mcl_lm *m = mcl_lm_create(ctx, &c);
        if (CHECK(m != NULL, "lm %d: %s", v, mcl_ctx_error(ctx))) {
            CHECK(n == numel_of(m->params), "lm %d: estimate %.0f = registered %.0f", v, n, numel_of(m->params));
            CHECK(fast == frozen_of(m->params), "lm %d: fast state %.0f = untrained %.0f", v, fast, frozen_of(m->params));
            CHECK(n + 1 != numel_of(m->params), "lm %d: a wrong count is told apart", v);
        }
        mcl_lm_free(m);
    }
    /* smn: mlp with/without fast weights, heads, value head; resnet */
    for (int v = 0; v < 5; v++) {
        mcl_smn_config c;
        mcl_smn_config_default(&c);
        c.hidden = 7;
        c.layers = 2;
        c.meta_hidden = 3;
        c.fast = v != 1;
        c.fast_head = v != 2;
        c.value_head = v != 3;
        if (v == 4) {
            c.arch = MCL_SMN_RESNET;
            c.width = 2;
            c.value_head = 0;
            c.n_out = 5;
        }
        double fast = -1, n = mcl_smn_param_floats(&c, &fast);
        mcl_smn *m = mcl_smn_create(ctx, &c);
        if (CHECK(m != NULL, "smn %d: %s", v, mcl_ctx_error(ctx))) {
            CHECK(n == numel_of(m->params), "smn %d: estimate %.0f = registered %.0f", v, n, numel_of(m->params));
            CHECK(fast == frozen_of(m->params), "smn %d: fast state %.0f = untrained %.0f", v, fast, frozen_of(m->params));
        }
        mcl_smn_free(m);
    }
    /* oct: pi + Conv-4, 2-token + Conv-8, cnn, pi without the image, frozen extractor */
    for (int v = 0; v < 5; v++) {
        mcl_oct_config c;
        memset(&c, 0, sizeof c);
        c.arch = v == 1 ? MCL_OCT_TWO_TOKEN : v == 2 ? MCL_OCT_CNN : MCL_OCT_PI;
        c.extractor = v == 1 ? MCL_OCT_CONV8 : MCL_OCT_CONV4;
        c.channels = 2;
        c.features = 6;
        c.width = 8;
        c.blocks = 2;
        c.heads = 2;
        c.kv_heads = v == 0 ? 1 : 2;
        c.head_dim = 3;
        c.ffw_mult = 2;
        c.window = 5;
        c.pi_mask = 2;
        c.n_way = 4;
        c.no_image = v == 3;
        c.freeze_extractor = v == 4;
        c.seed = 1;
        double ext = -1, n = mcl_oct_param_floats(&c, &ext);
        mcl_oct *m = mcl_oct_create(ctx, &c);
        if (CHECK(m != NULL, "oct %d: %s", v, mcl_ctx_error(ctx))) {
            CHECK(n == numel_of(m->params), "oct %d: estimate %.0f = registered %.0f", v, n, numel_of(m->params));
            if (v == 4) CHECK(ext == frozen_of(m->params), "oct: frozen extractor %.0f = untrained %.0f", ext, frozen_of(m->params));
        }
        mcl_oct_free(m);
    }
    /* the sizes under a 100 MiB budget: refused by create, nothing allocated */
    setenv("METACL_MEMORY_LIMIT", "100M", 1);
    mcl_lm_config lc;
    mcl_lm_config_default(&lc);
    lc.layers = 7;
    lc.width = 4096;
    lc.heads = 64;
    lc.head_dim = 32;
    mcl_lm *lm = mcl_lm_create(ctx, &lc);
    CHECK(!lm && mcl_ctx_status(ctx) == MCL_ERR_OOM && strstr(mcl_ctx_error(ctx), "memory budget") &&
              strstr(mcl_ctx_error(ctx), "GiB"),
          "lm width 4096 refused by the budget: %s", mcl_ctx_error(ctx));
    mcl_lm_free(lm);
    mcl_ctx_clear_error(ctx);
    mcl_smn_config sc;
    mcl_smn_config_default(&sc);
    sc.hidden = 4095;
    sc.layers = 28;
    mcl_smn *sm = mcl_smn_create(ctx, &sc);
    CHECK(!sm && mcl_ctx_status(ctx) == MCL_ERR_OOM && strstr(mcl_ctx_error(ctx), "memory budget"),
          "smn hidden 4095 refused by the budget: %s", mcl_ctx_error(ctx));
    mcl_smn_free(sm);
    mcl_ctx_clear_error(ctx);
    mcl_oct_config oc;
    memset(&oc, 0, sizeof oc);
    oc.arch = MCL_OCT_PI;
    oc.channels = 4;
    oc.width = 4096;
    oc.blocks = 16;
    oc.heads = 8;
    oc.kv_heads = 8;
    oc.head_dim = 64;
    oc.ffw_mult = 4;
    oc.window = 15;
    oc.n_way = 5;
    mcl_oct *om = mcl_oct_create(ctx, &oc);
    CHECK(!om && mcl_ctx_status(ctx) == MCL_ERR_OOM && strstr(mcl_ctx_error(ctx), "memory budget"),
          "oct width 4096 x 16 blocks refused by the budget: %s", mcl_ctx_error(ctx));
    mcl_oct_free(om);
    mcl_ctx_clear_error(ctx);
    CHECK(maxrss_mb() < 200, "peak RSS %ld MB after the refusals", maxrss_mb());
    /* units */
    setenv("METACL_MEMORY_LIMIT", "1K", 1);
    CHECK(mcl_check_budget(3000, "three thousand bytes", g_err, sizeof g_err) == MCL_ERR_OOM &&
              strstr(g_err, "2.93 KiB") && strstr(g_err, "1.00 KiB"),
          "small sizes in KiB, not \"0.0 MiB\": %s", g_err);
    char b[32];
    CHECK(!strcmp(mcl_fmt_bytes(512, b, sizeof b), "512 B") &&
              !strcmp(mcl_fmt_bytes((uint64_t)5 << 30, b, sizeof b), "5.00 GiB"),
          "mcl_fmt_bytes: 512 B, 5.00 GiB (%s)", b);
    unsetenv("METACL_MEMORY_LIMIT");
    mcl_ctx_free(ctx);
}

/* set-config IN OUT KEY VALUE: copy a checkpoint with its config's KEY line set to VALUE (the
 * line added when missing), the CRC made valid. */
static int set_config(const char *in, const char *out, const char *key, const char *value)
{
    size_t len;
    unsigned char *b = slurp(in, &len);
    if (!b) return 1;
    char *text = NULL;
    for (size_t at = 12; at + 12 <= len;) {
        uint64_t l = get64(b + at + 4);
        if (get32(b + at) == MCL_CKPT_SEC_CONFIG && at + 12 + l <= len) {
            text = calloc(1, (size_t)l + strlen(key) + strlen(value) + 8);
            if (text) memcpy(text, b + at + 12, (size_t)l);
            break;
        }
        at += 12 + (size_t)l + 4;
    }
    free(b);
    if (!text) return 1;
    char *out_text = calloc(1, strlen(text) + strlen(key) + strlen(value) + 8);
    int done = 0;
    for (char *line = text, *next; out_text && line && *line; line = next) {
        next = strchr(line, '\n');
        if (next) *next++ = 0;
        char *k = line;
        while (*k == ' ') k++;
        size_t kl = strlen(key);
        if (!strncmp(k, key, kl) && (k[kl] == ' ' || k[kl] == '=')) {
            sprintf(out_text + strlen(out_text), "%s = %s\n", key, value);
            done = 1;
        } else {
            sprintf(out_text + strlen(out_text), "%s\n", line);
        }
    }
    if (out_text && !done) sprintf(out_text + strlen(out_text), "%s = %s\n", key, value);
    int bad = !out_text || rewrite_section(in, out, MCL_CKPT_SEC_CONFIG, out_text, strlen(out_text)) != 0;
    free(text);
    free(out_text);
    return bad;
}

/* A safetensors buffer: 8-byte length + header (padded with spaces to 8) + data bytes. */
static unsigned char *st_buf(const char *hdr_head, size_t fill, const char *fill_unit, const char *hdr_tail,
                             size_t data, size_t *n)
{
    size_t hh = strlen(hdr_head), fu = strlen(fill_unit), ht = strlen(hdr_tail);
    size_t hl = hh + fill * fu + ht;
    hl = (hl + 7) / 8 * 8;
    unsigned char *b = malloc(8 + hl + data);
    if (!b) return NULL;
    for (int i = 0; i < 8; i++) b[i] = (unsigned char)((uint64_t)hl >> (8 * i));
    char *p = (char *)b + 8;
    memset(p, ' ', hl);
    memcpy(p, hdr_head, hh);
    p += hh;
    for (size_t i = 0; i < fill; i++, p += fu) memcpy(p, fill_unit, fu);
    memcpy(p, hdr_tail, ht);
    memset(b + 8 + hl, 0, data);
    *n = 8 + hl + data;
    return b;
}

static void test_safetensors_bounds(void)
{
    size_t n = 0;
    mcl_safetensors *st = NULL;
    long rss0 = maxrss_mb();
    /* __metadata__ with an array value of 2M zeros: refused before the tree is built */
    unsigned char *b = st_buf("{\"__metadata__\":{\"a\":[0", 2000000, ",0", "]}}", 0, &n);
    mcl_status s = b ? mcl_st_parse(b, n, "meta.safetensors", &st, g_err, sizeof g_err) : MCL_ERR_OOM;
    CHECK(s == MCL_ERR_FORMAT && strstr(g_err, "not a string"), "a non-string metadata value refused: %s", g_err);
    mcl_st_free(st);
    st = NULL;
    free(b);
    CHECK(maxrss_mb() - rss0 < 60, "RSS grew by %ld MB for a 4 MB header (a tree would cost ~160 MB)", maxrss_mb() - rss0);
    /* nesting deeper than a header has */
    b = st_buf("{\"t\":{\"dtype\":\"F32\",\"shape\":[[1]],\"data_offsets\":[0,4]}}", 0, "", "", 4, &n);
    s = b ? mcl_st_parse(b, n, "deep.safetensors", &st, g_err, sizeof g_err) : MCL_ERR_OOM;
    CHECK(s == MCL_ERR_FORMAT && strstr(g_err, "levels deep"), "nesting refused: %s", g_err);
    mcl_st_free(st);
    st = NULL;
    free(b);
    /* a shape of 1M ones: the tree (~100 MB) is over a 16 MiB budget */
    setenv("METACL_MEMORY_LIMIT", "16M", 1);
    b = st_buf("{\"t\":{\"dtype\":\"F32\",\"data_offsets\":[0,4],\"shape\":[1", 1000000, ",1", "]}}", 4, &n);
    s = b ? mcl_st_parse(b, n, "shape.safetensors", &st, g_err, sizeof g_err) : MCL_ERR_OOM;
    CHECK(s == MCL_ERR_OOM && strstr(g_err, "JSON tree") && strstr(g_err, "memory budget"),
          "a 2 MB shape array refused by the budget: %s", g_err);
    mcl_st_free(st);
    st = NULL;
    free(b);
    /* a valid file still reads under that budget */
    b = st_buf("{\"__metadata__\":{\"k\":\"v\"},\"t\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 0, "",
               "", 4, &n);
    s = b ? mcl_st_parse(b, n, "ok.safetensors", &st, g_err, sizeof g_err) : MCL_ERR_OOM;
    CHECK(s == MCL_OK && st && st->n == 1, "a valid file reads: %s", s == MCL_OK ? "" : g_err);
    mcl_st_free(st);
    free(b);
    unsetenv("METACL_MEMORY_LIMIT");
}

/* The lock of a run directory: a second holder is refused (the lock is per process for fcntl,
 * so the second try runs in a child), naming the PID; after release it can be taken again. */
static void test_dir_lock(void)
{
    char dir[512];
    tpath(dir, sizeof dir, "run");
    mkdir(dir, 0755);
    int fd = -1;
    mcl_status st = mcl_dir_lock(dir, &fd, g_err, sizeof g_err);
    if (!CHECK(st == MCL_OK && fd >= 0, "first lock: %s", g_err)) return;
    fflush(NULL);
    pid_t c = fork();
    if (c == 0) {
        int fd2 = -1;
        char e[1024], want[64];
        mcl_status s2 = mcl_dir_lock(dir, &fd2, e, sizeof e);
        snprintf(want, sizeof want, "PID %ld", (long)getppid());
        _exit(s2 == MCL_ERR_STATE && fd2 < 0 && strstr(e, want) && strstr(e, "in use") ? 0 : 1);
    }
    int ws = 0;
    waitpid(c, &ws, 0);
    CHECK(WIFEXITED(ws) && WEXITSTATUS(ws) == 0, "a second process is refused, naming PID %ld", (long)getpid());
    mcl_dir_unlock(dir, fd, 0);
    c = fork();
    if (c == 0) {
        int fd2 = -1;
        _exit(mcl_dir_lock(dir, &fd2, NULL, 0) == MCL_OK ? 0 : 1);
    }
    waitpid(c, &ws, 0);
    CHECK(WIFEXITED(ws) && WEXITSTATUS(ws) == 0, "after the release another process takes the lock");
}

int main(int argc, char **argv)
{
    if (argc == 5 && !strcmp(argv[1], "set-counter")) return set_counter(argv[2], argv[3], argv[4]);
    if (argc == 6 && !strcmp(argv[1], "set-config")) return set_config(argv[2], argv[3], argv[4], argv[5]);
    tu_begin("test-reliability", 0);
    snprintf(g_dir, sizeof g_dir, "test-reliability.tmp.%ld", (long)getpid());
    if (mkdir(g_dir, 0755) != 0) {
        perror(g_dir);
        return 1;
    }
    test_budget();
    test_crafted_ckpt();
    test_duplicate_keys();
    test_fifo_and_devices();
    test_labels();
    test_atomic_writer();
    test_dir_lock();
    test_family_budgets();
    test_safetensors_bounds();
    int rc = tu_summary();
    if (rc == 0) {
        char cmd[300];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
        if (system(cmd) != 0) fprintf(stderr, "cannot remove %s\n", g_dir);
    }
    return rc;
}
