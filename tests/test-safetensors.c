/* test-safetensors.c — the safetensors reader and writer (src/common/safetensors.h) and the ACL
 * name map (src/models/acl/acl_interop.h):
 *   - a file built byte by byte here (header JSON written out, F32/F16/BF16 data, a scalar, a
 *     zero-size tensor, metadata) parses to the values it encodes;
 *   - every kind of corruption is refused with its own status and message;
 *   - write -> read is bit-exact (NaN payloads, signed zeros, odd names and metadata), the
 *     writer is deterministic and its header is 8-byte aligned; files go through disk;
 *   - an ACL model exported under the official names has the official shapes (linear weights
 *     transposed, SRWM tensors with a leading 1) and imports bit-identically into another
 *     model; a missing, extra or mis-shaped tensor is refused and leaves the model as it was. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "acl_interop.h"
#include "safetensors.h"
#include "testutil.h"

#define SEED 20261125ULL

static char dir[256];

/* ----------------------------------------------------------- hand-made files */

typedef struct bytes {
    unsigned char *p;
    size_t n;
} bytes;

/* 8-byte LE header length, the header text, then n data bytes */
static bytes make_file(const char *header, const unsigned char *data, size_t n)
{
    bytes b;
    size_t h = strlen(header);
    b.n = 8 + h + n;
    b.p = malloc(b.n);
    for (int i = 0; i < 8; i++) b.p[i] = (unsigned char)((uint64_t)h >> (8 * i));
    memcpy(b.p + 8, header, h);
    if (n) memcpy(b.p + 8 + h, data, n);
    return b;
}

static void put_f32(unsigned char *p, float v)
{
    uint32_t u;
    memcpy(&u, &v, sizeof u);
    for (int i = 0; i < 4; i++) p[i] = (unsigned char)(u >> (8 * i));
}

static void put_u16(unsigned char *p, uint16_t v)
{
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
}

/* The good file: a F32 [2] (bytes 0..8), b F16 [4] (8..16), c BF16 [1] (16..18),
 * s F32 scalar (18..22), z F32 [0,3] (22..22); the entries are not in offset order. */
static const char *GOOD_HEADER =
    "{\"__metadata__\":{\"format\":\"pt\",\"k\":\"v\"},"
    "\"b\":{\"dtype\":\"F16\",\"shape\":[4],\"data_offsets\":[8,16]},"
    "\"z\":{\"shape\":[0,3],\"dtype\":\"F32\",\"data_offsets\":[22,22]},"
    "\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
    "\"s\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[18,22]},"
    "\"c\":{\"dtype\":\"BF16\",\"shape\":[1],\"data_offsets\":[16,18]}}   ";

static void good_data(unsigned char *d)
{
    put_f32(d + 0, 1.5f);
    put_f32(d + 4, -2.0f);
    put_u16(d + 8, 0x3c00);  /* F16 1.0        */
    put_u16(d + 10, 0xb800); /* F16 -0.5       */
    put_u16(d + 12, 0x0001); /* F16 2^-24 (the smallest subnormal) */
    put_u16(d + 14, 0x7c00); /* F16 +inf       */
    put_u16(d + 16, 0x4040); /* BF16 3.0       */
    put_f32(d + 18, 7.25f);
}

static int values_equal(const mcl_st_tensor *t, const float *want, int64_t n)
{
    if (!t || t->numel != n) return 0;
    for (int64_t i = 0; i < n; i++)
        if (memcmp(&t->data[i], &want[i], sizeof(float)) != 0) return 0;
    return 1;
}

static void test_hand_made(void)
{
    unsigned char d[22];
    good_data(d);
    bytes f = make_file(GOOD_HEADER, d, sizeof d);
    mcl_safetensors *s = NULL;
    char err[1024] = "";
    mcl_status st = mcl_st_parse(f.p, f.n, "good", &s, err, sizeof err);
    CHECK(st == MCL_OK && s, "the hand-made file parses: %s", err);
    if (s) {
        CHECK(s->n == 5, "5 tensors (got %d)", s->n);
        /* in buffer order: a b c s z (z's zero bytes sit at the end) */
        const char *order[5] = {"a", "b", "c", "s", "z"};
        for (int i = 0; i < 5 && i < s->n; i++)
            CHECK(!strcmp(s->t[i].name, order[i]), "tensor %d is '%s' (got '%s')", i, order[i], s->t[i].name);
        const float a[2] = {1.5f, -2.0f}, b[4] = {1.0f, -0.5f, ldexpf(1.0f, -24), INFINITY}, c[1] = {3.0f},
                    sc[1] = {7.25f};
        const mcl_st_tensor *ta = mcl_st_find(s, "a"), *tb = mcl_st_find(s, "b"), *tc = mcl_st_find(s, "c"),
                            *ts = mcl_st_find(s, "s"), *tz = mcl_st_find(s, "z");
        CHECK(values_equal(ta, a, 2) && ta->dtype == MCL_ST_F32 && ta->ndim == 1 && ta->shape[0] == 2, "F32 a");
        CHECK(values_equal(tb, b, 4) && tb->dtype == MCL_ST_F16, "F16 b: 1, -0.5, 2^-24, inf");
        CHECK(values_equal(tc, c, 1) && tc->dtype == MCL_ST_BF16, "BF16 c = 3");
        CHECK(values_equal(ts, sc, 1) && ts->ndim == 0, "scalar s = 7.25, ndim 0");
        CHECK(tz && tz->numel == 0 && tz->ndim == 2 && tz->shape[1] == 3, "zero-size z [0,3]");
        CHECK(mcl_st_meta(s, "k") && !strcmp(mcl_st_meta(s, "k"), "v"), "metadata k = v");
        CHECK(s->n_meta == 2 && !mcl_st_meta(s, "missing"), "two metadata keys");
        CHECK(!mcl_st_find(s, "__metadata__"), "the metadata is not a tensor");
        /* the value check can fail: a flipped byte of a's data still parses but differs */
        mcl_safetensors *s2 = NULL;
        f.p[8 + strlen(GOOD_HEADER) + 1] ^= 0x40;
        CHECK(mcl_st_parse(f.p, f.n, "flipped", &s2, err, sizeof err) == MCL_OK, "flipped data parses");
        CHECK(s2 && !values_equal(mcl_st_find(s2, "a"), a, 2), "a changed value is detected");
        mcl_st_free(s2);
    }
    mcl_st_free(s);
    free(f.p);
}

/* ----------------------------------------------------------- corrupt files */

typedef struct bad_case {
    const char *what;
    const char *header; /* NULL: raw bytes below */
    int data_bytes;     /* zero bytes of data after the header */
    mcl_status want;
    const char *needle;
} bad_case;

#define F32_2 "{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}"

static const bad_case bad_cases[] = {
    {"bad JSON", "{\"a\":" F32_2, 8, MCL_ERR_FORMAT, "not valid JSON"},
    {"not an object", "[1,2]", 0, MCL_ERR_FORMAT, "does not start with '{'"},
    {"text after the JSON", "{\"a\":" F32_2 "}x", 8, MCL_ERR_FORMAT, "text after"},
    {"unknown dtype", "{\"a\":{\"dtype\":\"I64\",\"shape\":[1],\"data_offsets\":[0,8]}}", 8,
     MCL_ERR_UNSUPPORTED, "dtype 'I64' is not supported"},
    {"dtype not a string", "{\"a\":{\"dtype\":4,\"shape\":[1],\"data_offsets\":[0,4]}}", 4, MCL_ERR_FORMAT,
     "dtype is not a string"},
    {"offsets past the buffer", "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 4,
     MCL_ERR_FORMAT, "outside the 4-byte buffer"},
    {"begin after end", "{\"a\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[4,0]}}", 4, MCL_ERR_FORMAT,
     "reversed"},
    {"overlap",
     "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
     "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}",
     12, MCL_ERR_FORMAT, "overlapping"},
    {"gap",
     "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
     "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]}}",
     12, MCL_ERR_FORMAT, "gap"},
    {"data not starting at 0", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8,
     MCL_ERR_FORMAT, "gap"},
    {"trailing data", "{\"a\":" F32_2 "}", 12, MCL_ERR_FORMAT, "trailing data"},
    {"shape vs offsets", "{\"a\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}", 8, MCL_ERR_FORMAT,
     "its shape needs more bytes"},
    {"shape smaller than offsets", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,8]}}", 8,
     MCL_ERR_FORMAT, "its shape needs another number of bytes"},
    {"huge shape", "{\"a\":{\"dtype\":\"F32\",\"shape\":[9007199254740992,9007199254740992],\"data_offsets\":[0,8]}}",
     8, MCL_ERR_FORMAT, "its shape needs more bytes"},
    {"odd byte count", "{\"a\":{\"dtype\":\"F16\",\"shape\":[1],\"data_offsets\":[0,3]}}", 3, MCL_ERR_FORMAT,
     "its shape needs"},
    {"duplicate name", "{\"a\":" F32_2 ",\"a\":" F32_2 "}", 8, MCL_ERR_FORMAT, "tensor 'a' given twice"},
    {"missing shape", "{\"a\":{\"dtype\":\"F32\",\"data_offsets\":[0,8]}}", 8, MCL_ERR_FORMAT, "no \"shape\""},
    {"unknown key", "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8],\"x\":1}}", 8, MCL_ERR_FORMAT,
     "unknown key 'x'"},
    {"key twice", "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"shape\":[2],\"data_offsets\":[0,8]}}", 8,
     MCL_ERR_FORMAT, "key 'shape' given twice"},
    {"negative dim", "{\"a\":{\"dtype\":\"F32\",\"shape\":[-2],\"data_offsets\":[0,8]}}", 8, MCL_ERR_FORMAT,
     "dim 0 is not a non-negative integer"},
    {"fractional offset", "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8.5]}}", 8, MCL_ERR_FORMAT,
     "data_offsets is not two non-negative integers"},
    {"three offsets", "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8,8]}}", 8, MCL_ERR_FORMAT,
     "data_offsets is not two"},
    {"too many dims", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,4]}}", 4,
     MCL_ERR_FORMAT, "9 dims"},
    {"entry not an object", "{\"a\":[0,8]}", 8, MCL_ERR_FORMAT, "tensor 'a': not a JSON object"},
    {"empty name", "{\"\":" F32_2 "}", 8, MCL_ERR_FORMAT, "a tensor name of 0 bytes"},
    {"metadata not an object", "{\"__metadata__\":[1]}", 0, MCL_ERR_FORMAT, "__metadata__ is not a JSON object"},
    {"metadata value not a string", "{\"__metadata__\":{\"k\":1}}", 0, MCL_ERR_FORMAT,
     "__metadata__ key 'k': value is not a string"},
    {"metadata twice", "{\"__metadata__\":{},\"__metadata__\":{}}", 0, MCL_ERR_FORMAT, "__metadata__ given twice"},
    {"metadata key twice", "{\"__metadata__\":{\"k\":\"a\",\"k\":\"b\"}}", 0, MCL_ERR_FORMAT,
     "__metadata__ key 'k' given twice"},
};

static void expect_bad(const char *what, const bytes *f, mcl_status want, const char *needle)
{
    mcl_safetensors *s = (mcl_safetensors *)1;
    char err[1024] = "";
    mcl_status st = mcl_st_parse(f->p, f->n, "corrupt", &s, err, sizeof err);
    CHECK(st == want && s == NULL && strstr(err, needle) && !strncmp(err, "corrupt: ", 9),
          "%s: status %d (want %d), message '%s' (want '%s')", what, (int)st, (int)want, err, needle);
}

static void test_corrupt(void)
{
    const int n = (int)(sizeof bad_cases / sizeof bad_cases[0]);
    for (int i = 0; i < n; i++) {
        const bad_case *c = &bad_cases[i];
        unsigned char zeros[64] = {0};
        bytes f = make_file(c->header, zeros, (size_t)c->data_bytes);
        expect_bad(c->what, &f, c->want, c->needle);
        free(f.p);
    }
    printf("%d corrupt headers refused\n", n);
    /* the header length itself */
    unsigned char raw[32] = {0};
    bytes f = {raw, 5};
    expect_bad("shorter than 8 bytes", &f, MCL_ERR_FORMAT, "too short");
    f.n = 16;
    raw[5] = 1; /* 2^40 */
    expect_bad("absurd header length", &f, MCL_ERR_FORMAT, "header length 1099511627776 is absurd");
    memset(raw, 0, sizeof raw);
    raw[0] = 9; /* 9 > the 8 bytes after it */
    expect_bad("header longer than the file", &f, MCL_ERR_FORMAT, "header length 9 is absurd");
    raw[0] = 0;
    expect_bad("header length 0", &f, MCL_ERR_FORMAT, "header length 0 is absurd");
    /* the checks can fail: the same harness on a good file reports a mismatch */
    unsigned char d[22];
    good_data(d);
    bytes g = make_file(GOOD_HEADER, d, sizeof d);
    mcl_safetensors *s = NULL;
    char err[256] = "";
    CHECK(mcl_st_parse(g.p, g.n, "good", &s, err, sizeof err) == MCL_OK, "control: the good file parses");
    mcl_st_free(s);
    free(g.p);
    /* NULL arguments */
    CHECK(mcl_st_parse(NULL, 0, NULL, &s, err, sizeof err) == MCL_ERR_NULL, "NULL buffer");
}

/* ----------------------------------------------------------- round trip */

static void test_round_trip(void)
{
    uint64_t x = SEED;
    float v[3 * 4 * 5];
    for (int i = 0; i < 60; i++) { /* xorshift bits, every pattern incl. NaNs with payloads */
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        uint32_t u = (uint32_t)(x >> 11);
        memcpy(&v[i], &u, sizeof u);
    }
    const uint32_t special[4] = {0x80000000u, 0x7fc00001u, 0xff800000u, 0x00000001u}; /* -0, NaN, -inf, denormal */
    memcpy(v, special, sizeof special);
    mcl_safetensors *s = mcl_st_create();
    char err[512] = "";
    const int64_t s3[3] = {3, 4, 5}, s1[1] = {7}, s0[2] = {0, 2};
    CHECK(mcl_st_add(s, "w \"quoted\"\\back", 3, s3, v, err, sizeof err) == MCL_OK, "add 3-D: %s", err);
    CHECK(mcl_st_add(s, "layers.0.W_y", 1, s1, v + 10, err, sizeof err) == MCL_OK, "add 1-D");
    CHECK(mcl_st_add(s, "scalar", 0, NULL, v + 20, err, sizeof err) == MCL_OK, "add scalar");
    CHECK(mcl_st_add(s, "empty", 2, s0, NULL, err, sizeof err) == MCL_OK, "add zero-size");
    CHECK(mcl_st_set_meta(s, "text", "line 1\nline 2\t\"q\" \\ \xc3\xa9", err, sizeof err) == MCL_OK, "meta");
    CHECK(mcl_st_set_meta(s, "k", "old", err, sizeof err) == MCL_OK && mcl_st_set_meta(s, "k", "new", err, sizeof err) == MCL_OK,
          "meta replaced");
    /* refused additions */
    CHECK(mcl_st_add(s, "scalar", 0, NULL, v, err, sizeof err) == MCL_ERR_INVALID && strstr(err, "twice"), "duplicate add");
    CHECK(mcl_st_add(s, "__metadata__", 0, NULL, v, err, sizeof err) == MCL_ERR_INVALID, "reserved name");
    CHECK(mcl_st_add(s, "", 0, NULL, v, err, sizeof err) == MCL_ERR_INVALID, "empty name");
    const int64_t s9[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1}, sneg[1] = {-1};
    CHECK(mcl_st_add(s, "deep", 9, s9, v, err, sizeof err) == MCL_ERR_INVALID, "9 dims");
    CHECK(mcl_st_add(s, "neg", 1, sneg, v, err, sizeof err) == MCL_ERR_INVALID, "negative dim");
    CHECK(s->n == 4, "4 tensors after the refusals");

    unsigned char *buf = NULL, *buf2 = NULL;
    size_t n = 0, n2 = 0;
    CHECK(mcl_st_serialize(s, &buf, &n, err, sizeof err) == MCL_OK, "serialize: %s", err);
    uint64_t hl = 0;
    for (int i = 7; i >= 0 && buf; i--) hl = hl << 8 | buf[i];
    CHECK(buf && hl % 8 == 0 && n == 8 + hl + 4 * (60 + 7 + 1), "header of %llu bytes (a multiple of 8), %zu in all",
          (unsigned long long)hl, n);
    mcl_safetensors *r = NULL;
    CHECK(buf && mcl_st_parse(buf, n, "round trip", &r, err, sizeof err) == MCL_OK, "parse back: %s", err);
    if (r) {
        CHECK(r->n == 4, "4 tensors back");
        for (int i = 0; i < s->n; i++) {
            const mcl_st_tensor *a = &s->t[i], *b = mcl_st_find(r, a->name);
            int same = b && b->ndim == a->ndim && b->numel == a->numel && b->dtype == MCL_ST_F32;
            for (int dd = 0; same && dd < a->ndim; dd++) same = a->shape[dd] == b->shape[dd];
            if (same && a->numel) same = !memcmp(a->data, b->data, (size_t)a->numel * sizeof(float));
            CHECK(same, "tensor '%s' comes back bit-exact", a->name);
        }
        CHECK(mcl_st_meta(r, "text") && !strcmp(mcl_st_meta(r, "text"), "line 1\nline 2\t\"q\" \\ \xc3\xa9"),
              "metadata with escapes comes back");
        CHECK(mcl_st_meta(r, "k") && !strcmp(mcl_st_meta(r, "k"), "new"), "replaced metadata value");
        CHECK(mcl_st_serialize(r, &buf2, &n2, err, sizeof err) == MCL_OK && n2 == n && !memcmp(buf, buf2, n),
              "serializing what was read gives the same bytes");
    }
    /* through a file */
    char path[400];
    snprintf(path, sizeof path, "%s/rt.safetensors", dir);
    mcl_safetensors *fr = NULL;
    CHECK(mcl_st_write(s, path, err, sizeof err) == MCL_OK, "write: %s", err);
    CHECK(mcl_st_read(path, &fr, err, sizeof err) == MCL_OK && fr && fr->n == 4, "read the file back: %s", err);
    CHECK(tu_count_entries(dir, ".tmp.") == 0, "no temporary file left");
    mcl_st_free(fr);
    snprintf(path, sizeof path, "%s/missing.safetensors", dir);
    CHECK(mcl_st_read(path, &fr, err, sizeof err) == MCL_ERR_IO && !fr, "a missing file is MCL_ERR_IO");
    CHECK(mcl_st_read(dir, &fr, err, sizeof err) != MCL_OK && !fr, "a directory is refused: %s", err);
    /* truncating a good file anywhere is refused, never a crash */
    int refused = 0;
    for (size_t cut = 0; buf && cut < n; cut += 7) {
        mcl_safetensors *t = NULL;
        if (mcl_st_parse(buf, cut, "cut", &t, err, sizeof err) != MCL_OK) refused++;
        mcl_st_free(t);
    }
    CHECK(refused == (int)((n + 6) / 7), "every truncation refused (%d of %d)", refused, (int)((n + 6) / 7));
    free(buf);
    free(buf2);
    mcl_st_free(r);
    mcl_st_free(s);
}

/* ----------------------------------------------------------- the ACL map */

static void tiny_cfg(mcl_acl_config *c)
{
    mcl_acl_config_default(c);
    c->n_way = 3;
    c->hidden = 16;
    c->heads = 2;
    c->layers = 2;
    c->ff_mult = 2;
    c->conv_channels = 4;
    c->feature_norm = MCL_ACL_FEATNORM_BATCH;
    c->seed = SEED;
}

static int shape_is(const mcl_st_tensor *t, int nd, int64_t a, int64_t b, int64_t c, int64_t d)
{
    const int64_t w[4] = {a, b, c, d};
    if (!t || t->ndim != nd) return 0;
    for (int i = 0; i < nd; i++)
        if (t->shape[i] != w[i]) return 0;
    return 1;
}

/* every parameter of a and b bit-identical */
static int same_params(mcl_acl *a, mcl_acl *b)
{
    mcl_params *pa = mcl_acl_params(a), *pb = mcl_acl_params(b);
    if (mcl_params_count(pa) != mcl_params_count(pb)) return 0;
    int same = 1;
    for (int i = 0; i < mcl_params_count(pa) && same; i++) {
        float *x = tu_read(mcl_params_get(pa, i)), *y = tu_read(mcl_params_get(pb, i));
        same = x && y && !memcmp(x, y, (size_t)mcl_tensor_numel(mcl_params_get(pa, i)) * sizeof(float));
        free(x);
        free(y);
    }
    return same;
}

/* a copy of s without tensor `drop` (NULL: all), then `extra` added (NULL: none) */
static mcl_safetensors *copy_set(const mcl_safetensors *s, const char *drop, const char *extra, int64_t extra_n)
{
    mcl_safetensors *c = mcl_st_create();
    for (int i = 0; i < s->n; i++)
        if (!drop || strcmp(s->t[i].name, drop) != 0)
            mcl_st_add(c, s->t[i].name, s->t[i].ndim, s->t[i].shape, s->t[i].data, NULL, 0);
    for (int i = 0; i < s->n_meta; i++) mcl_st_set_meta(c, s->meta_key[i], s->meta_val[i], NULL, 0);
    if (extra) {
        float *z = calloc((size_t)extra_n, sizeof *z);
        mcl_st_add(c, extra, 1, &extra_n, z, NULL, 0);
        free(z);
    }
    return c;
}

static void test_acl_map(void)
{
    mcl_ctx *ctx = tu_ctx_ref();
    mcl_acl_config cfg;
    tiny_cfg(&cfg);
    mcl_acl *m = mcl_acl_create(ctx, &cfg);
    cfg.seed = SEED + 1;
    mcl_acl *m2 = mcl_acl_create(ctx, &cfg);
    CHECK(m && m2, "two tiny models");
    if (!m || !m2) {
        mcl_acl_free(m);
        mcl_acl_free(m2);
        mcl_ctx_free(ctx);
        return;
    }
    CHECK(!same_params(m, m2), "control: different seeds give different parameters");
    char err[1024] = "", name[96];
    int tr = -1, l1 = -1;
    CHECK(mcl_acl_official_name(&cfg, "layer1.ff.w2", name, sizeof name, &tr, &l1) == MCL_OK &&
              !strcmp(name, "layers.3.ff_layers.3.weight") && tr == 1 && l1 == 0,
          "layer1.ff.w2 -> layers.3.ff_layers.3.weight, transposed (got %s)", name);
    CHECK(mcl_acl_official_name(&cfg, "layer0.srwm.wb", name, sizeof name, &tr, &l1) == MCL_OK &&
              !strcmp(name, "layers.0.w_b") && tr == 0 && l1 == 1,
          "layer0.srwm.wb -> layers.0.w_b with a leading 1 (got %s)", name);
    CHECK(mcl_acl_official_name(&cfg, "conv2.norm.g", name, sizeof name, &tr, &l1) == MCL_OK &&
              !strcmp(name, "conv_layers.2.1.weight") && tr == 0 && l1 == 0,
          "conv2.norm.g -> conv_layers.2.1.weight (got %s)", name);
    CHECK(mcl_acl_official_name(&cfg, "layer2.ff.w2", name, sizeof name, &tr, &l1) == MCL_ERR_INVALID,
          "a layer the model does not have");

    mcl_safetensors *s = NULL;
    CHECK(mcl_acl_to_safetensors(m, &s, err, sizeof err) == MCL_OK && s, "export: %s", err);
    if (s) {
        const int64_t C = 4, Hd = 16, H = 2, D = 8, N = 3, FF = 32, F = 4 * 2 * 2;
        CHECK(s->n == mcl_params_count(mcl_acl_params(m)), "one tensor per parameter (%d)", s->n);
        CHECK(shape_is(mcl_st_find(s, "conv_layers.0.0.weight"), 4, C, 1, 3, 3), "conv 0 weight [C,1,3,3]");
        CHECK(shape_is(mcl_st_find(s, "conv_layers.3.1.bias"), 1, C, 0, 0, 0), "conv 3 norm bias [C]");
        CHECK(shape_is(mcl_st_find(s, "input_proj.weight"), 2, Hd, F + N + 1, 0, 0), "input_proj [Hd, F+N+1]");
        CHECK(shape_is(mcl_st_find(s, "layers.2.W_q"), 4, 1, H, D, D), "layers.2.W_q [1,H,D,D]");
        CHECK(shape_is(mcl_st_find(s, "layers.0.w_b"), 4, 1, H, D, 4), "layers.0.w_b [1,H,D,4]");
        CHECK(shape_is(mcl_st_find(s, "layers.0.out_linear.weight"), 2, Hd, Hd, 0, 0), "out_linear [Hd,Hd]");
        CHECK(shape_is(mcl_st_find(s, "layers.1.ff_layers.0.weight"), 2, FF, Hd, 0, 0), "ff 0 [FF,Hd]");
        CHECK(shape_is(mcl_st_find(s, "layers.3.ff_layers.3.weight"), 2, Hd, FF, 0, 0), "ff 3 [Hd,FF]");
        CHECK(shape_is(mcl_st_find(s, "out_layer.weight"), 2, N, Hd, 0, 0), "out_layer [N,Hd]");
        CHECK(shape_is(mcl_st_find(s, "feature_norm.running_var"), 1, F, 0, 0, 0), "feature_norm.running_var [F]");
        CHECK(mcl_st_meta(s, MCL_ACL_ST_META_CONFIG) && !strcmp(mcl_st_meta(s, MCL_ACL_ST_META_MODEL), "acl"),
              "config and model kind in the metadata");
        /* values: nn.Linear weight[o][i] = our W[i][o]; W_y[0][h][e][m] = our Wy[h][e][m] */
        float *win = tu_read(mcl_params_find(mcl_acl_params(m), "input.w"));
        float *wy = tu_read(mcl_params_find(mcl_acl_params(m), "layer1.srwm.Wy"));
        const mcl_st_tensor *tin = mcl_st_find(s, "input_proj.weight"), *twy = mcl_st_find(s, "layers.2.W_y");
        int ok_t = win && tin, ok_y = wy && twy;
        for (int64_t i = 0; ok_t && i < F + N + 1; i++)
            for (int64_t o = 0; o < Hd; o++) ok_t &= tin->data[o * (F + N + 1) + i] == win[i * Hd + o];
        for (int64_t k = 0; ok_y && k < H * D * D; k++) ok_y &= twy->data[k] == wy[k];
        CHECK(ok_t, "input_proj.weight is input.w transposed");
        CHECK(ok_y && win && tin && tin->data[1] != win[1], "W_y copies as it is (and the transpose check can fail)");
        free(win);
        free(wy);

        /* import into the other model: bit-identical */
        CHECK(mcl_acl_from_safetensors(m2, s, err, sizeof err) == MCL_OK, "import: %s", err);
        CHECK(same_params(m, m2), "export -> import gives bit-identical parameters");

        /* refusals leave the model as it was */
        mcl_acl_config c3 = cfg;
        c3.seed = SEED + 2;
        mcl_acl *m3 = mcl_acl_create(ctx, &c3), *m3ref = mcl_acl_create(ctx, &c3);
        mcl_safetensors *bad = copy_set(s, "layers.1.layer_norm.bias", NULL, 0);
        CHECK(mcl_acl_from_safetensors(m3, bad, err, sizeof err) == MCL_ERR_INVALID &&
                  strstr(err, "no tensor 'layers.1.layer_norm.bias' (our layer0.ff.ln.b)"),
              "a missing tensor is named: %s", err);
        mcl_st_free(bad);
        bad = copy_set(s, NULL, "conv_layers.0.1.running_mean", C);
        CHECK(mcl_acl_from_safetensors(m3, bad, err, sizeof err) == MCL_ERR_INVALID &&
                  strstr(err, "'conv_layers.0.1.running_mean'") && strstr(err, "BatchNorm2d"),
              "an extra BatchNorm statistic is named with a hint: %s", err);
        mcl_st_free(bad);
        bad = copy_set(s, "input_proj.weight", NULL, 0);
        {
            const int64_t sh[2] = {Hd, F + N};
            float *z = calloc((size_t)(Hd * (F + N)), sizeof *z);
            mcl_st_add(bad, "input_proj.weight", 2, sh, z, NULL, 0);
            free(z);
        }
        CHECK(mcl_acl_from_safetensors(m3, bad, err, sizeof err) == MCL_ERR_SHAPE &&
                  strstr(err, "has shape [16,19] in the file, the config needs [16,20]") && strstr(err, "extra_label"),
              "a wrong shape gives both shapes: %s", err);
        mcl_st_free(bad);
        CHECK(m3 && m3ref && same_params(m3, m3ref), "the refused imports left the model as it was");
        mcl_acl_free(m3);
        mcl_acl_free(m3ref);

        /* file form: config from the metadata, or a given config */
        char path[400];
        snprintf(path, sizeof path, "%s/acl.safetensors", dir);
        mcl_acl *m4 = NULL;
        CHECK(mcl_acl_export_safetensors(m, path, err, sizeof err) == MCL_OK, "export to a file: %s", err);
        CHECK(mcl_acl_import_safetensors(ctx, path, NULL, &m4, err, sizeof err) == MCL_OK && m4, "import: %s", err);
        CHECK(m4 && same_params(m, m4) && m4->cfg.seed == SEED, "the file gives the model back, config from the metadata");
        mcl_acl_free(m4);
        m4 = NULL;
        mcl_acl_config wrong = cfg;
        wrong.hidden = 32;
        CHECK(mcl_acl_import_safetensors(ctx, path, &wrong, &m4, err, sizeof err) == MCL_ERR_SHAPE && !m4 &&
                  strstr(err, path),
              "a config that does not fit is refused before a model is built: %s", err);
        wrong = cfg;
        wrong.feature_norm = MCL_ACL_FEATNORM_NONE;
        CHECK(mcl_acl_import_safetensors(ctx, path, &wrong, &m4, err, sizeof err) == MCL_ERR_INVALID && !m4 &&
                  strstr(err, "feature_norm.running_mean"),
              "running statistics the config has no place for are refused: %s", err);
        /* no metadata: the config must be given */
        mcl_safetensors *nometa = mcl_st_create();
        for (int i = 0; i < s->n; i++)
            mcl_st_add(nometa, s->t[i].name, s->t[i].ndim, s->t[i].shape, s->t[i].data, NULL, 0);
        CHECK(mcl_st_write(nometa, path, err, sizeof err) == MCL_OK, "write without metadata");
        CHECK(mcl_acl_import_safetensors(ctx, path, NULL, &m4, err, sizeof err) == MCL_ERR_INVALID && !m4 &&
                  strstr(err, "--config"),
              "without metadata the config is asked for: %s", err);
        CHECK(mcl_acl_import_safetensors(ctx, path, &cfg, &m4, err, sizeof err) == MCL_OK && m4 && same_params(m, m4),
              "with the config given it imports: %s", err);
        mcl_acl_free(m4);
        mcl_st_free(nometa);
    }
    mcl_st_free(s);
    mcl_acl_free(m);
    mcl_acl_free(m2);
    mcl_ctx_free(ctx);
}

int main(void)
{
    tu_begin("test-safetensors", SEED);
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/test-safetensors.%ld.XXXXXX", tmp && *tmp ? tmp : "/tmp", (long)getpid());
    if (!mkdtemp(dir)) {
        printf("cannot create a temporary directory\n");
        return 99;
    }
    test_hand_made();
    test_corrupt();
    test_round_trip();
    test_acl_map();
    if (tu_rm_rf(dir) != 0) printf("note: could not remove %s\n", dir);
    return tu_summary();
}
