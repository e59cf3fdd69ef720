/* test-strokes.c — stroke sets: parsers, tar reader, class splits, the handwriting renderer.
 *
 * Parts (each prints a line; a part whose source is not installed prints SKIP):
 *   render     determinism: a pinned hash of the first images for a fixed seed; the same
 *              sample rendered twice, out of order and from several threads gives the same
 *              bits; robustness on degenerate glyphs
 *   splits     the split rule: pinned values, proportions over 20 992 CJK characters
 *   jhf        a table of malformed .jhf inputs (each an error naming file:line), valid forms
 *   json       tables of malformed hanzi / kanji JSON inputs, valid forms
 *   tar        the ustar reader on malformed archives (truncated header, bad checksum, size
 *              beyond the file, absurd size, ...) and on a valid one
 *   hanzi      the whole hanzi path on a small fake npm tarball in a temporary directory
 *              (./test-strokes.XXXXXX): load, licence copy, prepare, determinism of the bytes;
 *              npm missing → the install message
 *   hanzi, kanji, hershey   the real sources, when present (hanzi: its npm tarball already in
 *              the data dir; the test never downloads): counts, splits, every glyph renders
 * Exit: 0 all passed, 1 a failure, 77 when every part was skipped (never, in practice: the
 * in-memory parts always run).
 */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "strokes.h"
#include "testutil.h"

/* From-memory entry points of strokes.c (see its header). */
typedef mcl_status (*mcl_tar_file_fn)(void *user, const char *name, const uint8_t *data,
                                      size_t size, char *err, size_t len);
mcl_split mcl_stroke_split_of(const void *key, size_t len);
mcl_status mcl_jhf_parse_buffer(const char *buf, size_t n, const char *fname, mcl_strokeset **out,
                                char *err, size_t len);
mcl_status mcl_glyph_from_json(const char *json, size_t n, const char *format, mcl_glyph *g,
                               char *err, size_t len);
void mcl_glyph_clear(mcl_glyph *g);
mcl_status mcl_kanji_parse_buffer(const char *buf, size_t n, int max_strokes, mcl_strokeset **out,
                                  char *err, size_t len);
mcl_status mcl_tar_parse_buffer(const uint8_t *buf, size_t n, mcl_tar_file_fn fn, void *user,
                                char *err, size_t len);

#define SEED 12345u
#define IMG (MCL_IMG * MCL_IMG)

static int parts_run, parts_skipped;

static uint64_t fnv(const void *p, size_t n, uint64_t h)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 1099511628211ull;
    }
    return h;
}

static long ink(const uint8_t *img)
{
    long s = 0;
    for (int i = 0; i < IMG; i++) s += img[i];
    return s;
}

/* Ink in the outermost 1-px frame. */
static long frame_ink(const uint8_t *img)
{
    long s = 0;
    for (int i = 0; i < MCL_IMG; i++)
        s += img[i] + img[(MCL_IMG - 1) * MCL_IMG + i] + img[i * MCL_IMG] +
             img[i * MCL_IMG + MCL_IMG - 1];
    return s;
}

/* ------------------------------------------------------------------------------------------
 * A small set built from memory: hershey-like lines, a hanzi JSON, a kanji array.
 * ---------------------------------------------------------------------------------------- */
static const char jhf_text[] = "    1  1JZ\n"                                /* empty (space) */
                               "    2  6JZRFJ[ RRFZ[\n"                      /* two strokes */
                               "    3 16H\\LFL[ RLFTFWGXHYJYLXNWOTP RLPTP\n" /* a 'P'-like glyph */
                               "    4 12I[RFRF RJMZM RNTVT RR[RZ\n"          /* dots and bars */
                               "    5 11H]XFWGQINKLNKQKULXNZQ[\n";           /* one curve */

static const char hanzi_json[] =
    "{\"strokes\": [\"M 0 0 Z\"], \"medians\": [[[121, 393], [193, 372], [417, 402], "
    "[827, 434], [920, 401]], [[500, 800], [510, 500], [505, 60]], [[300, 600], [700, 200]]]}";

static const char kanji_json[] = "[[32, 56, 216, 43], [130, 53, 111, 203], [40, 120, 220, 130]]";

static mcl_strokeset *memory_set(void)
{
    char err[256];
    mcl_strokeset *s = NULL;
    if (mcl_jhf_parse_buffer(jhf_text, strlen(jhf_text), "mem.jhf", &s, err, sizeof err) !=
        MCL_OK) {
        CHECK(0, "memory set: %s", err);
        return NULL;
    }
    mcl_glyph *g = realloc(s->glyphs, (size_t)(s->n + 2) * sizeof *g);
    if (!g) {
        mcl_strokeset_free(s);
        return NULL;
    }
    s->glyphs = g;
    if (mcl_glyph_from_json(hanzi_json, strlen(hanzi_json), "hanzi", &s->glyphs[s->n], err,
                            sizeof err) == MCL_OK)
        s->n++;
    else
        CHECK(0, "hanzi glyph: %s", err);
    if (mcl_glyph_from_json(kanji_json, strlen(kanji_json), "kanji", &s->glyphs[s->n], err,
                            sizeof err) == MCL_OK)
        s->n++;
    else
        CHECK(0, "kanji glyph: %s", err);
    return s;
}

/* ------------------------------------------------------------------------------------------
 * render
 * ---------------------------------------------------------------------------------------- */
#define PINNED_RENDER_HASH 0x88ce9efcb0e482e0ull /* FNV-1a-64 of the first images (test_render) */

static void test_render(void)
{
    printf("part render\n");
    parts_run++;
    mcl_strokeset *s = memory_set();
    if (!s) return;
    CHECK(s->n == 7, "memory set has %d glyphs, want 7", s->n);
    enum { NI = 6 };
    int ng = s->n;
    uint8_t *a = calloc((size_t)ng * NI, IMG), *b = calloc((size_t)ng * NI, IMG);
    uint8_t *c = calloc((size_t)ng * NI, IMG);
    if (!a || !b || !c) {
        CHECK(0, "out of memory");
        free(a), free(b), free(c);
        mcl_strokeset_free(s);
        return;
    }
    /* forward order */
    uint64_t h = 14695981039346656037ull;
    for (int g = 0; g < ng; g++)
        for (int k = 0; k < NI; k++) {
            uint8_t *img = a + ((size_t)g * NI + k) * IMG;
            mcl_render_glyph(&s->glyphs[g], SEED, g, k, k == 0, img);
            h = fnv(img, IMG, h);
        }
    printf("render hash = 0x%016llxull\n", (unsigned long long)h);
    CHECK(h == PINNED_RENDER_HASH,
          "render hash 0x%016llx, pinned 0x%016llx (the renderer's output changed)",
          (unsigned long long)h, (unsigned long long)PINNED_RENDER_HASH);
    /* reverse order, each twice */
    for (int g = ng - 1; g >= 0; g--)
        for (int k = NI - 1; k >= 0; k--) {
            uint8_t *img = b + ((size_t)g * NI + k) * IMG;
            mcl_render_glyph(&s->glyphs[g], SEED, g, k, k == 0, img);
            mcl_render_glyph(&s->glyphs[g], SEED, g, k, k == 0, img);
        }
    CHECK(memcmp(a, b, (size_t)ng * NI * IMG) == 0, "reverse-order renders differ");
    /* many threads, interleaved */
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1) num_threads(4)
#endif
    for (int i = ng * NI - 1; i >= 0; i--)
        mcl_render_glyph(&s->glyphs[i / NI], SEED, i / NI, i % NI, i % NI == 0,
                         c + (size_t)i * IMG);
    CHECK(memcmp(a, c, (size_t)ng * NI * IMG) == 0, "threaded renders differ");

    uint8_t x[IMG], y[IMG];
    for (int g = 1; g < ng; g++) { /* glyph 0 is empty */
        const uint8_t *clean = a + (size_t)g * NI * IMG;
        CHECK(ink(clean) > 0, "glyph %d: clean image has no ink", g);
        int full = 0;
        for (int i = 0; i < IMG; i++) full |= clean[i] == 255;
        CHECK(full, "glyph %d: clean image never reaches 255", g);
        for (int k = 1; k < NI; k++) {
            const uint8_t *img = a + ((size_t)g * NI + k) * IMG;
            CHECK(ink(img) > 0, "glyph %d instance %d has no ink", g, k);
            CHECK(memcmp(img, clean, IMG) != 0, "glyph %d instance %d equals the clean image", g,
                  k);
            if (k > 1)
                CHECK(memcmp(img, img - IMG, IMG) != 0, "glyph %d instances %d, %d equal", g, k - 1,
                      k);
        }
        /* clean does not depend on seed or instance */
        mcl_render_glyph(&s->glyphs[g], SEED + 1, g, 99, 1, x);
        CHECK(memcmp(x, clean, IMG) == 0, "glyph %d: clean image depends on seed/instance", g);
        /* other seed, other class id → other image */
        mcl_render_glyph(&s->glyphs[g], SEED + 1, g, 1, 0, x);
        CHECK(memcmp(x, a + ((size_t)g * NI + 1) * IMG, IMG) != 0, "glyph %d: seed ignored", g);
        mcl_render_glyph(&s->glyphs[g], SEED, g + 100, 1, 0, y);
        CHECK(memcmp(y, a + ((size_t)g * NI + 1) * IMG, IMG) != 0, "glyph %d: class ignored", g);
    }
    CHECK(ink(a) == 0, "the empty glyph has ink");
    /* the margin: distorted samples stay inside the canvas */
    long framed = 0;
    for (int g = 1; g < ng; g++)
        for (int k = 0; k < 200; k++) {
            mcl_render_glyph(&s->glyphs[g], SEED, g, k, 0, x);
            framed += frame_ink(x) > 0;
        }
    CHECK(framed <= 12, "%ld of 1200 samples touch the outermost pixels", framed);

    /* degenerate glyphs: no crash, sensible output */
    float pts[8] = {0.5f, 0.5f, 0.5f, 0.5f, 0.2f, 0.2f, 0.0f, 0.0f};
    int ss[3] = {0, 1, 2};
    mcl_glyph d = {1, ss, pts, "dot", MCL_SPLIT_TRAIN};
    mcl_render_glyph(&d, SEED, 0, 0, 0, x);
    CHECK(ink(x) > 0, "a one-point glyph draws a dot");
    float nanpts[4] = {0.5f, 0.5f, 0.0f, 0.0f};
    nanpts[2] = strtof("nan", NULL);
    nanpts[3] = strtof("inf", NULL);
    int ssn[2] = {0, 2};
    mcl_glyph dn = {1, ssn, nanpts, "nan", MCL_SPLIT_TRAIN};
    mcl_render_glyph(&dn, SEED, 0, 0, 0, x); /* must not crash */
    mcl_render_glyph(&dn, SEED, 0, 0, 1, x);
    CHECK(1, "NaN glyph rendered without a crash");
    int bad[3] = {0, 5, 2}; /* stroke_start not increasing */
    mcl_glyph db = {2, bad, pts, "bad", MCL_SPLIT_TRAIN};
    mcl_render_glyph(&db, SEED, 0, 0, 0, x);
    CHECK(ink(x) == 0, "inconsistent stroke_start renders nothing");
    mcl_glyph dz = {0, ss, pts, "none", MCL_SPLIT_TRAIN};
    mcl_render_glyph(&dz, SEED, 0, 0, 0, x);
    CHECK(ink(x) == 0, "a glyph without strokes renders nothing");
    mcl_render_glyph(NULL, SEED, 0, 0, 0, x);
    CHECK(ink(x) == 0, "NULL glyph renders nothing");
    float far[4] = {-1e20f, 0.0f, 1e20f, 1.0f};
    mcl_glyph dfar = {1, ssn, far, "far", MCL_SPLIT_TRAIN};
    mcl_render_glyph(&dfar, SEED, 0, 0, 0, x); /* huge coordinates: no crash */
    CHECK(1, "huge coordinates rendered without a crash");

    free(a);
    free(b);
    free(c);
    mcl_strokeset_free(s);
}

/* ------------------------------------------------------------------------------------------
 * splits
 * ---------------------------------------------------------------------------------------- */
static void test_splits(void)
{
    printf("part splits\n");
    parts_run++;
    /* FNV-1a-64 of the UTF-8 bytes, mod 100: pinned examples */
    static const struct {
        const char *key;
        mcl_split want;
    } pin[] = {
        {"\xe4\xb8\x80", MCL_SPLIT_TRAIN}, /* 一 */
        {"\xe4\xba\xba", MCL_SPLIT_TRAIN}, /* 人 */
        {"\xe5\xa4\xa7", MCL_SPLIT_TRAIN}, /* 大 */
        {"a", MCL_SPLIT_TEST},
        {"b", MCL_SPLIT_TRAIN},
        {"\xe6\xb0\xb4", MCL_SPLIT_VAL}, /* 水: bucket 73 */
    };
    for (size_t i = 0; i < sizeof pin / sizeof pin[0]; i++) {
        mcl_split got = mcl_stroke_split_of(pin[i].key, strlen(pin[i].key));
        CHECK(got == pin[i].want, "split of key %zu is %d, want %d", i, (int)got, (int)pin[i].want);
    }
    int cnt[4] = {0};
    int n = 0;
    for (unsigned cp = 0x4e00; cp <= 0x9fff; cp++, n++) {
        char u[3] = {(char)(0xe0 | (cp >> 12)), (char)(0x80 | ((cp >> 6) & 0x3f)),
                     (char)(0x80 | (cp & 0x3f))};
        mcl_split sp = mcl_stroke_split_of(u, 3);
        CHECK(sp >= MCL_SPLIT_TRAIN && sp <= MCL_SPLIT_TEST, "split out of range");
        cnt[sp]++;
        if (sp != mcl_stroke_split_of(u, 3)) CHECK(0, "split not deterministic");
    }
    printf("CJK U+4E00..U+9FFF: train %d, val %d, test %d\n", cnt[1], cnt[2], cnt[3]);
    CHECK(cnt[0] == 0 && cnt[1] + cnt[2] + cnt[3] == n, "splits cover every class once");
    CHECK_NEAR("train fraction", (double)cnt[1] / n, 0.70, 0.01, 0);
    CHECK_NEAR("val fraction", (double)cnt[2] / n, 0.10, 0.01, 0);
    CHECK_NEAR("test fraction", (double)cnt[3] / n, 0.20, 0.01, 0);
}

/* Splits of a loaded set: every class in exactly one split, no text twice, ≈ 70/10/20. */
static void check_set_splits(const mcl_strokeset *s, int key_is_text)
{
    int cnt[4] = {0};
    for (int i = 0; i < s->n; i++) {
        mcl_split sp = s->glyphs[i].split;
        CHECK(sp >= MCL_SPLIT_TRAIN && sp <= MCL_SPLIT_TEST, "%s class %d: split %d", s->name, i,
              (int)sp);
        if (sp >= 0 && sp <= 3) cnt[sp]++;
        if (key_is_text && i < 50) {
            const char *t = s->glyphs[i].text;
            CHECK(sp == mcl_stroke_split_of(t, strlen(t)), "%s class %d: split is not the rule's",
                  s->name, i);
        }
        if (i > 0 && key_is_text)
            CHECK(strcmp(s->glyphs[i - 1].text, s->glyphs[i].text) < 0,
                  "%s: classes %d, %d not in strictly increasing text order", s->name, i - 1, i);
    }
    double n = s->n;
    printf("%s: %d classes: train %d, val %d, test %d\n", s->name, s->n, cnt[1], cnt[2], cnt[3]);
    CHECK(cnt[1] + cnt[2] + cnt[3] == s->n, "%s: splits do not cover the classes", s->name);
    CHECK_NEAR("train fraction", cnt[1] / n, 0.70, 0.04, 0);
    CHECK_NEAR("val fraction", cnt[2] / n, 0.10, 0.03, 0);
    CHECK_NEAR("test fraction", cnt[3] / n, 0.20, 0.04, 0);
    /* no text twice (texts are the class names) */
    char **t = malloc((size_t)s->n * sizeof *t);
    if (!t) return;
    for (int i = 0; i < s->n; i++) t[i] = s->glyphs[i].text;
    int dup = 0;
    for (int i = 0; i < s->n && i < 3000; i++)
        for (int j = i + 1; j < s->n; j++) dup += strcmp(t[i], t[j]) == 0;
    CHECK(dup == 0, "%s: %d class names appear twice", s->name, dup);
    free(t);
}

/* ------------------------------------------------------------------------------------------
 * jhf
 * ---------------------------------------------------------------------------------------- */
static void test_jhf(void)
{
    printf("part jhf\n");
    parts_run++;
    static const struct {
        const char *text;
        int line; /* the line the error must name */
    } bad[] = {
        {"12345\n", 1},                         /* too short for a header */
        {"1234X  2JZRR\n", 1},                  /* id not a number */
        {"       2JZRR\n", 1},                  /* id blank */
        {"12345  0JZRR\n", 1},                  /* vertex count 0 */
        {"12345 -2JZRR\n", 1},                  /* vertex count negative */
        {"123451 2JZRR\n", 1},                  /* count field "1 2" */
        {"12345  2JZRRRR\n", 1},                /* more data than the count says */
        {"12345  3JZRR", 1},                    /* less data, end of file */
        {"12345  2JZR\tR\n", 1},                /* tab */
        {"12345  2JZ\xc3\xa9\n", 1},            /* bytes above 0x7e */
        {"12345  2JZRR\n1234\n", 2},            /* second line short */
        {"12345  2JZRR\n\x01\n", 2},            /* control byte on line 2 */
        {"12345  3JZRR\n12345  2JZRR\n", 2},    /* continuation overflows */
        {"12345  3JZRR\n\n", 2},                /* continuation is blank */
        {"12345  2JZRR\r\n12345  2JZR\r\n", 2}, /* CRLF, short */
        {"12345  2JZRR\0\n", 1},                /* NUL */
    };
    char err[256];
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        size_t n = strlen(bad[i].text);
        if (i == sizeof bad / sizeof bad[0] - 1) n = 14; /* include the NUL */
        mcl_strokeset *s = (mcl_strokeset *)1;
        err[0] = 0;
        mcl_status st = mcl_jhf_parse_buffer(bad[i].text, n, "t.jhf", &s, err, sizeof err);
        char want[32];
        snprintf(want, sizeof want, "t.jhf:%d:", bad[i].line);
        CHECK(st == MCL_ERR_FORMAT, "bad jhf %zu: status %d", i, (int)st);
        CHECK(s == NULL, "bad jhf %zu: output not NULL", i);
        CHECK(strstr(err, want) != NULL, "bad jhf %zu: message '%s' does not name %s", i, err,
              want);
    }
    /* valid forms */
    static const struct {
        const char *text;
        int glyphs, strokes0, points0;
    } good[] = {
        {"", 0, 0, 0},
        {"12345  1JZ\n", 1, 0, 0},
        {"12345  6JZRFJ[ RRFZ[\n", 1, 2, 4},
        {"12345  6JZRFJ[ RRFZ[", 1, 2, 4},                   /* no final newline */
        {"12345  6JZRFJ[ RRFZ[\r\n", 1, 2, 4},               /* CRLF */
        {"12345  6JZRFJ[\n RRFZ[\n", 1, 2, 4},               /* continued on the next line */
        {"\n12345  6JZRFJ[ RRFZ[\n\n12345  1JZ\n", 2, 2, 4}, /* blank lines */
        {"12345  9JZ RRFJ[ R RRFZ[ R\n", 1, 2, 4},           /* pen-ups at the ends and doubled */
        {"12345  2JZRR\n", 1, 1, 1},                         /* a single point */
        {"99999999JZ"
         "RRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRR"
         "RRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRRR"
         "RRR",
         -1, 0, 0}, /* count 999, too little data: error */
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        mcl_strokeset *s = NULL;
        mcl_status st =
            mcl_jhf_parse_buffer(good[i].text, strlen(good[i].text), "g.jhf", &s, err, sizeof err);
        if (good[i].glyphs < 0) {
            CHECK(st == MCL_ERR_FORMAT && !s, "jhf %zu: want an error, got %d", i, (int)st);
            continue;
        }
        CHECK(st == MCL_OK, "good jhf %zu: %s", i, err);
        if (st != MCL_OK) continue;
        CHECK(s->n == good[i].glyphs, "good jhf %zu: %d glyphs, want %d", i, s->n, good[i].glyphs);
        if (s->n > 0) {
            const mcl_glyph *g = &s->glyphs[0];
            CHECK(g->n_strokes == good[i].strokes0, "good jhf %zu: %d strokes, want %d", i,
                  g->n_strokes, good[i].strokes0);
            CHECK(g->stroke_start[g->n_strokes] == good[i].points0,
                  "good jhf %zu: %d points, want %d", i, g->stroke_start[g->n_strokes],
                  good[i].points0);
        }
        mcl_strokeset_free(s);
    }
    /* coordinates: value = char - 'R', stored as v/128 + 1/2 (y down) */
    mcl_strokeset *s = NULL;
    const char *t = "12345  3JZRFJ[\n";
    if (mcl_jhf_parse_buffer(t, strlen(t), "c.jhf", &s, err, sizeof err) == MCL_OK && s->n == 1) {
        const float *p = s->glyphs[0].pts;
        CHECK(p[0] == 0.5f && p[1] == -12.0f / 128.0f + 0.5f && p[2] == -8.0f / 128.0f + 0.5f &&
                  p[3] == 9.0f / 128.0f + 0.5f,
              "jhf coordinates %g %g %g %g", p[0], p[1], p[2], p[3]);
    } else {
        CHECK(0, "coordinate glyph: %s", err);
    }
    mcl_strokeset_free(s);
    CHECK(mcl_jhf_parse_buffer(NULL, 0, "n.jhf", &s, err, sizeof err) == MCL_OK && s && s->n == 0,
          "empty NULL buffer is an empty set");
    mcl_strokeset_free(s);
}

/* ------------------------------------------------------------------------------------------
 * json
 * ---------------------------------------------------------------------------------------- */
static void test_json(void)
{
    printf("part json\n");
    parts_run++;
    char err[256];
    static const char *const bad_hanzi[] = {
        "",
        "{",
        "[]",
        "{}",
        "null",
        "{\"medians\": 5}",
        "{\"medians\": []}",
        "{\"medians\": [[]]}",
        "{\"medians\": [[[1]]]}",
        "{\"medians\": [[[1, 2, 3]]]}",
        "{\"medians\": [[[\"a\", 2]]]}",
        "{\"medians\": [[[1e300, 2]]]}",
        "{\"medians\": [[[1, -2e4]]]}",
        "{\"medians\": [[[1, 2]], 7]}",
        "{\"medians\": [[[1, 2]], [[true, 2]]]}",
        "{\"medians\": [[[1, 2]]]} x",
        "{\"medians\": [[[1, 2]]]}{}",
        "{\"Medians\": [[[1, 2]]]}",
        "{\"medians\": {\"a\": [[1, 2]]}}",
    };
    for (size_t i = 0; i < sizeof bad_hanzi / sizeof bad_hanzi[0]; i++) {
        mcl_glyph g;
        err[0] = 0;
        mcl_status st =
            mcl_glyph_from_json(bad_hanzi[i], strlen(bad_hanzi[i]), "hanzi", &g, err, sizeof err);
        CHECK(st == MCL_ERR_FORMAT && err[0], "bad hanzi json %zu: status %d '%s'", i, (int)st,
              err);
        CHECK(g.pts == NULL && g.stroke_start == NULL, "bad hanzi json %zu: output left behind", i);
    }
    /* deep nesting (beyond cJSON's limit) */
    size_t deep = 5000;
    char *d = malloc(2 * deep + 1);
    if (d) {
        memset(d, '[', deep);
        memset(d + deep, ']', deep);
        d[2 * deep] = 0;
        mcl_glyph g;
        CHECK(mcl_glyph_from_json(d, 2 * deep, "hanzi", &g, err, sizeof err) == MCL_ERR_FORMAT,
              "deep nesting is an error");
        CHECK(mcl_glyph_from_json(d, 2 * deep, "kanji", &g, err, sizeof err) == MCL_ERR_FORMAT,
              "deep nesting is an error (kanji)");
        free(d);
    }
    static const char *const bad_kanji[] = {
        "[]",
        "{}",
        "[1, 2, 3, 4]",
        "[[1, 2, 3]]",
        "[[1, 2, 3, 4, 5]]",
        "[[1, 2, 3, -4]]",
        "[[1, 2, 3, 2000]]",
        "[[1, 2, 3, \"4\"]]",
        "[[1, 2, 3, 4], null]",
        "[[1, 2, 3, 4]] ]",
    };
    for (size_t i = 0; i < sizeof bad_kanji / sizeof bad_kanji[0]; i++) {
        mcl_glyph g;
        err[0] = 0;
        mcl_status st =
            mcl_glyph_from_json(bad_kanji[i], strlen(bad_kanji[i]), "kanji", &g, err, sizeof err);
        CHECK(st == MCL_ERR_FORMAT && err[0], "bad kanji json %zu: status %d '%s'", i, (int)st,
              err);
    }
    mcl_glyph g;
    CHECK(mcl_glyph_from_json("[]", 2, "nope", &g, err, sizeof err) == MCL_ERR_INVALID,
          "unknown format is invalid");
    /* valid: conversion of the hanzi box (x / 1024, (900 - y) / 1024) */
    const char *ok = " {\"medians\": [[[0, 900], [1024, -124]], [[512, 388]]]}\n";
    if (mcl_glyph_from_json(ok, strlen(ok), "hanzi", &g, err, sizeof err) == MCL_OK) {
        CHECK(g.n_strokes == 2 && g.stroke_start[1] == 2 && g.stroke_start[2] == 3,
              "hanzi strokes");
        CHECK(g.pts[0] == 0.0f && g.pts[1] == 0.0f && g.pts[2] == 1.0f && g.pts[3] == 1.0f &&
                  g.pts[4] == 0.5f && g.pts[5] == 0.5f,
              "hanzi coordinates");
        mcl_glyph_clear(&g);
    } else {
        CHECK(0, "valid hanzi json: %s", err);
    }
    const char *okk = "[[0, 0, 256, 128]]";
    if (mcl_glyph_from_json(okk, strlen(okk), "kanji", &g, err, sizeof err) == MCL_OK) {
        CHECK(g.n_strokes == 1 && g.pts[2] == 1.0f && g.pts[3] == 0.5f, "kanji coordinates");
        mcl_glyph_clear(&g);
    } else {
        CHECK(0, "valid kanji json: %s", err);
    }
    /* whole kanjidraw files */
    static const char *const bad_file[] = {
        "[]",
        "{\"x\": {}}",
        "{\"0\": {\"\xe4\xb8\x80\": [[1, 2, 3, 4]]}}",
        "{\"1\": []}",
        "{\"1\": {\"\xe4\xb8\x80\": [[1, 2, 3, 4], [1, 2, 3, 4]]}}",
        "{\"1\": {\"\": [[1, 2, 3, 4]]}}",
        "{\"1\": {\"\\u0001\": [[1, 2, 3, 4]]}}",
        "{\"1\": {\"\xff\": [[1, 2, 3, 4]]}}",
        "{\"1\": {\"\xe4\xb8\x80\": [[1, 2, 3, 4]]}, \"01\": {\"\xe4\xb8\x80\": [[1, 2, 3, 4]]}}",
        "{\"1\": {\"\xe4\xb8\x80\": [[1, 2, 3]]}}",
        "{\" 1\": {\"\xe4\xb8\x80\": [[1, 2, 3, 4]]}}",
        "{\"1\": {\"\xe4\xb8\x80\": [[1, 2, 3, 4]]}",
    };
    for (size_t i = 0; i < sizeof bad_file / sizeof bad_file[0]; i++) {
        mcl_strokeset *s = (mcl_strokeset *)1;
        err[0] = 0;
        mcl_status st =
            mcl_kanji_parse_buffer(bad_file[i], strlen(bad_file[i]), 0, &s, err, sizeof err);
        CHECK(st == MCL_ERR_FORMAT && err[0] && s == NULL, "bad kanji file %zu: status %d '%s'", i,
              (int)st, err);
    }
    const char *file =
        "{\"2\": {\"\xe4\xba\x8c\": [[1, 2, 3, 4], [5, 6, 7, 8]]}, "
        "\"1\": {\"\xe4\xb8\x80\": [[1, 2, 3, 4]], \"\xe4\xb8\xa8\": [[9, 9, 9, 200]]}}";
    mcl_strokeset *s = NULL;
    if (mcl_kanji_parse_buffer(file, strlen(file), 0, &s, err, sizeof err) == MCL_OK) {
        CHECK(s->n == 3 && strcmp(s->glyphs[0].text, "\xe4\xb8\x80") == 0 &&
                  strcmp(s->glyphs[2].text, "\xe4\xba\x8c") == 0,
              "kanji file: 3 glyphs in code point order");
        mcl_strokeset_free(s);
    } else {
        CHECK(0, "valid kanji file: %s", err);
    }
    if (mcl_kanji_parse_buffer(file, strlen(file), 1, &s, err, sizeof err) == MCL_OK) {
        CHECK(s->n == 2, "kanji file, <= 1 stroke: %d glyphs, want 2", s->n);
        mcl_strokeset_free(s);
    } else {
        CHECK(0, "valid kanji file: %s", err);
    }
}

/* ------------------------------------------------------------------------------------------
 * tar
 * ---------------------------------------------------------------------------------------- */
/* One ustar header for a regular file (type '0'), with a correct checksum. */
static void tar_header(uint8_t h[512], const char *prefix, const char *name, unsigned long size)
{
    memset(h, 0, 512);
    snprintf((char *)h, 100, "%s", name);
    memcpy(h + 100, "0000644", 8);
    memcpy(h + 108, "0000000", 8);
    memcpy(h + 116, "0000000", 8);
    snprintf((char *)h + 124, 12, "%011lo", size);
    memcpy(h + 136, "00000000000", 12);
    h[156] = '0';
    memcpy(h + 257, "ustar", 6);
    memcpy(h + 263, "00", 2);
    if (prefix) snprintf((char *)h + 345, 155, "%s", prefix);
    memset(h + 148, ' ', 8);
    unsigned sum = 0;
    for (int i = 0; i < 512; i++) sum += h[i];
    snprintf((char *)h + 148, 8, "%06o", sum);
}

typedef struct tarbuf {
    uint8_t *p;
    size_t n;
} tarbuf;

static void tar_add(tarbuf *t, const char *prefix, const char *name, const void *data, size_t size)
{
    size_t padded = (size + 511) / 512 * 512;
    uint8_t *np = realloc(t->p, t->n + 512 + padded);
    if (!np) return;
    t->p = np;
    tar_header(t->p + t->n, prefix, name, size);
    memset(t->p + t->n + 512, 0, padded);
    if (size) memcpy(t->p + t->n + 512, data, size);
    t->n += 512 + padded;
}

static void tar_end(tarbuf *t)
{
    uint8_t *np = realloc(t->p, t->n + 1024);
    if (!np) return;
    t->p = np;
    memset(t->p + t->n, 0, 1024);
    t->n += 1024;
}

typedef struct seen {
    int n;
    char names[8][300];
    size_t sizes[8];
} seen;

static mcl_status on_member(void *user, const char *name, const uint8_t *data, size_t size,
                            char *err, size_t len)
{
    (void)err;
    (void)len;
    seen *s = user;
    if (s->n < 8) {
        snprintf(s->names[s->n], sizeof s->names[0], "%s", name);
        s->sizes[s->n] = size;
    }
    s->n++;
    return data[size] == 0 ? MCL_OK : MCL_ERR_STATE; /* data is NUL-terminated */
}

static const char licence_text[] = "ARPHIC PUBLIC LICENSE (test stand-in)\n";

static tarbuf fake_package(int with_licence)
{
    tarbuf t = {NULL, 0};
    const char *pj = "{\"name\": \"hanzi-writer-data\"}";
    tar_add(&t, NULL, "package/package.json", pj, strlen(pj));
    if (with_licence) tar_add(&t, NULL, "package/ARPHICPL.TXT", licence_text, strlen(licence_text));
    tar_add(&t, NULL, "package/\xe4\xba\xba.json", hanzi_json,
            strlen(hanzi_json)); /* 人, 3 strokes */
    const char *one = "{\"medians\": [[[121, 393], [920, 401]]]}";
    tar_add(&t, "package", "\xe4\xb8\x80.json", one, strlen(one)); /* 一 via the prefix field */
    tar_add(&t, NULL, "package/README.md", "x", 1);
    tar_end(&t);
    return t;
}

static void test_tar(void)
{
    printf("part tar\n");
    parts_run++;
    char err[256];
    tarbuf t = fake_package(1);
    if (!t.p) {
        CHECK(0, "out of memory");
        return;
    }
    seen sn;
    memset(&sn, 0, sizeof sn);
    mcl_status st = mcl_tar_parse_buffer(t.p, t.n, on_member, &sn, err, sizeof err);
    CHECK(st == MCL_OK, "valid tar: %s", err);
    CHECK(sn.n == 5, "valid tar: %d members, want 5", sn.n);
    CHECK(strcmp(sn.names[3], "package/\xe4\xb8\x80.json") == 0, "prefix field joined: '%s'",
          sn.names[3]);
    CHECK(sn.sizes[4] == 1, "member size");

    /* malformed archives */
    uint8_t *m = malloc(t.n + 4096);
    if (!m) {
        free(t.p);
        return;
    }
    struct {
        const char *what;
        size_t n;
        const char *needle;
    } cases[] = {
        {"empty input", 0, "end-of-archive"},
        {"truncated header", 100, "truncated header"},
        {"bad checksum", t.n, "checksum"},
        {"size beyond the file", 512 + 512, "truncated"},
        {"absurd size", t.n, "refusing"},
        {"non-octal size", t.n, "size field"},
        {"not ustar", t.n, "ustar"},
        {"no end block", 2 * 512, "end-of-archive"},
        {"padding truncated", 512 + 100, "truncated"},
        {"non-octal checksum", t.n, "checksum field"},
        {"base-256 size", t.n, "size field"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        memcpy(m, t.p, t.n);
        size_t n = cases[i].n;
        switch (i) {
        case 2: m[0] ^= 1; break;
        case 3: /* first member claims 5000 bytes, the input ends after its first block */
            tar_header(m, NULL, "package/package.json", 5000);
            break;
        case 4: tar_header(m, NULL, "package/package.json", 077777777777ul); break;
        case 5: {
            memcpy(m + 124, "0000000009x", 12);
            memset(m + 148, ' ', 8);
            unsigned sum = 0;
            for (int k = 0; k < 512; k++) sum += m[k];
            snprintf((char *)m + 148, 8, "%06o", sum);
            break;
        }
        case 6: {
            memcpy(m + 257, "ustaR", 5);
            memset(m + 148, ' ', 8);
            unsigned sum = 0;
            for (int k = 0; k < 512; k++) sum += m[k];
            snprintf((char *)m + 148, 8, "%06o", sum);
            break;
        }
        case 9: memcpy(m + 148, "12x4567", 8); break;
        case 10: {
            m[124] = 0x80;
            memset(m + 148, ' ', 8);
            unsigned sum = 0;
            for (int k = 0; k < 512; k++) sum += m[k];
            snprintf((char *)m + 148, 8, "%06o", sum);
            break;
        }
        default: break;
        }
        memset(&sn, 0, sizeof sn);
        err[0] = 0;
        st = mcl_tar_parse_buffer(m, n, on_member, &sn, err, sizeof err);
        CHECK(st == MCL_ERR_FORMAT, "tar '%s': status %d (%s)", cases[i].what, (int)st, err);
        CHECK(strstr(err, cases[i].needle) != NULL, "tar '%s': message '%s' lacks '%s'",
              cases[i].what, err, cases[i].needle);
    }
    /* an archive that is only the end marker is empty and fine */
    memset(m, 0, 1024);
    memset(&sn, 0, sizeof sn);
    CHECK(mcl_tar_parse_buffer(m, 1024, on_member, &sn, err, sizeof err) == MCL_OK && sn.n == 0,
          "end marker only: empty archive");
    /* every prefix of a valid archive: an error, never a crash, until the end marker */
    int oks = 0;
    for (size_t n = 0; n + 1024 < t.n; n += 7) {
        memset(&sn, 0, sizeof sn);
        oks += mcl_tar_parse_buffer(t.p, n, on_member, &sn, err, sizeof err) == MCL_OK;
    }
    CHECK(oks == 0, "%d truncated archives were accepted", oks);
    free(m);
    free(t.p);
}

/* ------------------------------------------------------------------------------------------
 * hanzi (fake npm tarball in a temporary directory)
 * ---------------------------------------------------------------------------------------- */

static int write_gz(const char *path, const void *data, size_t n)
{
    gzFile g = gzopen(path, "wb");
    if (!g) return -1;
    int ok = gzwrite(g, data, (unsigned)n) == (int)n;
    return gzclose(g) == Z_OK && ok ? 0 : -1;
}

static char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *b = malloc(1 << 20);
    size_t k = b ? fread(b, 1, (1 << 20) - 1, f) : 0;
    fclose(f);
    if (b) b[k] = 0;
    if (n) *n = k;
    return b;
}

static void test_hanzi_fake(void)
{
    printf("part hanzi (fake tarball)\n");
    parts_run++;
    char dir[] = "test-strokes.XXXXXX";
    if (!mkdtemp(dir)) {
        CHECK(0, "mkdtemp failed");
        return;
    }
    char tgz[256], path[512], err[512];
    snprintf(tgz, sizeof tgz, "%s/hanzi-writer-data-2.0.1.tgz", dir);
    tarbuf t = fake_package(1);
    CHECK(t.p && write_gz(tgz, t.p, t.n) == 0, "writing the fake tarball");

    mcl_strokeset *s = NULL;
    mcl_status st = mcl_strokeset_load("hanzi", dir, 0, &s, err, sizeof err);
    CHECK(st == MCL_OK, "load fake hanzi: %s", err);
    if (st == MCL_OK) {
        CHECK(s->n == 2, "fake hanzi: %d classes, want 2", s->n);
        if (s->n == 2) {
            CHECK(strcmp(s->glyphs[0].text, "\xe4\xb8\x80") == 0 &&
                      strcmp(s->glyphs[1].text, "\xe4\xba\xba") == 0,
                  "fake hanzi: classes in code point order");
            CHECK(s->glyphs[1].n_strokes == 3, "fake hanzi: strokes");
            CHECK(s->glyphs[0].split == mcl_stroke_split_of("\xe4\xb8\x80", 3),
                  "fake hanzi: split");
        }
        mcl_strokeset_free(s);
    }
    snprintf(path, sizeof path, "%s/hanzi/LICENSE-ARPHIC.txt", dir);
    char *lic = slurp(path, NULL);
    CHECK(lic && strcmp(lic, licence_text) == 0, "the licence is copied to %s", path);
    free(lic);
    st = mcl_strokeset_load("hanzi", dir, 2, &s, err, sizeof err);
    CHECK(st == MCL_OK && s->n == 1, "max_strokes 2 keeps one character");
    if (st == MCL_OK) mcl_strokeset_free(s);

    /* prepare, twice: same bytes */
    st = mcl_strokes_prepare("hanzi", dir, 3, 7, err, sizeof err);
    CHECK(st == MCL_OK, "prepare fake hanzi: %s", err);
    snprintf(path, sizeof path, "%s/hanzi/SHA256SUMS", dir);
    char *sums1 = slurp(path, NULL);
    snprintf(path, sizeof path, "%s/hanzi/classes.txt", dir);
    char *classes = slurp(path, NULL);
    if (classes) {
        static const char *const word[] = {"all", "train", "val", "test"};
        char want[128];
        snprintf(want, sizeof want, "0\t%s\t\xe4\xb8\x80\n1\t%s\t\xe4\xba\xba\n",
                 word[mcl_stroke_split_of("\xe4\xb8\x80", 3)],
                 word[mcl_stroke_split_of("\xe4\xba\xba", 3)]);
        CHECK(strcmp(classes, want) == 0, "classes.txt is '%s', want '%s'", classes, want);
    } else {
        CHECK(0, "no classes.txt");
    }
    free(classes);
    snprintf(path, sizeof path, "%s/hanzi/meta.txt", dir);
    char *meta = slurp(path, NULL);
    CHECK(meta && strstr(meta, "licence=Arphic Public License") && strstr(meta, "instances=3") &&
              strstr(meta, "seed=7"),
          "meta.txt: %s", meta ? meta : "(missing)");
    free(meta);
    st = mcl_strokes_prepare("hanzi", dir, 3, 7, err, sizeof err);
    CHECK(st == MCL_OK, "prepare again: %s", err);
    snprintf(path, sizeof path, "%s/hanzi/SHA256SUMS", dir);
    char *sums2 = slurp(path, NULL);
    CHECK(sums1 && sums2 && strcmp(sums1, sums2) == 0, "prepare is deterministic (SHA256SUMS)");
    free(sums1);
    free(sums2);

    /* a tarball without the licence file */
    tarbuf t2 = fake_package(0);
    CHECK(t2.p && write_gz(tgz, t2.p, t2.n) == 0, "writing the second tarball");
    st = mcl_strokeset_load("hanzi", dir, 0, &s, err, sizeof err);
    CHECK(st == MCL_ERR_FORMAT && strstr(err, "ARPHICPL"), "missing licence: %d %s", (int)st, err);
    free(t2.p);
    /* not gzip */
    FILE *f = fopen(tgz, "wb");
    if (f) {
        fwrite(t.p, 1, 2048, f);
        fclose(f);
    }
    st = mcl_strokeset_load("hanzi", dir, 0, &s, err, sizeof err);
    CHECK(st != MCL_OK && strstr(err, "gzip"), "plain tar as .tgz: %d %s", (int)st, err);
    /* truncated gzip */
    CHECK(write_gz(tgz, t.p, t.n) == 0, "rewrite");
    size_t zn = 0;
    char *z = slurp(tgz, &zn);
    f = z ? fopen(tgz, "wb") : NULL;
    if (f) {
        fwrite(z, 1, zn / 2, f);
        fclose(f);
    }
    free(z);
    st = mcl_strokeset_load("hanzi", dir, 0, &s, err, sizeof err);
    CHECK(st != MCL_OK && err[0], "truncated tgz: %d %s", (int)st, err);
    free(t.p);

    /* no tarball and no npm: the message says what to run and install */
    unlink(tgz);
    const char *old = getenv("PATH");
    char *saved = old ? strdup(old) : NULL;
    setenv("PATH", "/nonexistent-metacl-test", 1);
    st = mcl_strokeset_load("hanzi", dir, 0, &s, err, sizeof err);
    if (saved) {
        setenv("PATH", saved, 1);
        free(saved);
    } else {
        unsetenv("PATH");
    }
    CHECK(st == MCL_ERR_IO, "npm missing: status %d", (int)st);
    CHECK(strstr(err, "npm pack hanzi-writer-data@2.0.1") && strstr(err, "apt-get install npm"),
          "npm missing: message '%s'", err);

    st = mcl_strokeset_load("nope", dir, 0, &s, err, sizeof err);
    CHECK(st == MCL_ERR_INVALID && s == NULL, "unknown set name");
    tu_rm_rf(dir);
}

/* ------------------------------------------------------------------------------------------
 * Debian sources
 * ---------------------------------------------------------------------------------------- */
static void test_source(const char *name, const char *pkg, int max_strokes, int lo, int hi)
{
    printf("part %s (max strokes %d)\n", name, max_strokes);
    char err[512];
    mcl_strokeset *s = NULL;
    if (!strcmp(name, "hanzi")) { /* never download from a test: only a tarball already there */
        char tgz[4096];
        struct stat sb;
        snprintf(tgz, sizeof tgz, "%s/hanzi-writer-data-2.0.1.tgz", mcl_data_dir_default());
        if (stat(tgz, &sb) != 0) {
            printf("SKIP hanzi: %s not found (metacl data prepare hanzi fetches it)\n", tgz);
            parts_skipped++;
            return;
        }
    }
    mcl_status st = mcl_strokeset_load(name, NULL, max_strokes, &s, err, sizeof err);
    if (st == MCL_ERR_IO && strstr(err, pkg)) {
        printf("SKIP %s: %s\n", name, err);
        parts_skipped++;
        return;
    }
    parts_run++;
    CHECK(st == MCL_OK, "%s: %s", name, err);
    if (st != MCL_OK) return;
    CHECK(s->n >= lo && s->n <= hi, "%s: %d classes, want %d..%d", name, s->n, lo, hi);
    check_set_splits(s, strcmp(name, "hershey") != 0);
    /* every glyph renders, clean and distorted, with ink; few touch the frame */
    uint8_t img[IMG];
    int empty = 0, framed = 0, over = 0;
    for (int c = 0; c < s->n; c++) {
        const mcl_glyph *g = &s->glyphs[c];
        if (g->n_strokes < 1) empty++;
        if (max_strokes > 0 && g->n_strokes > max_strokes) over++;
        mcl_render_glyph(g, SEED, c, 0, 1, img);
        if (ink(img) == 0) empty++;
        mcl_render_glyph(g, SEED, c, 1, 0, img);
        if (ink(img) == 0) empty++;
        framed += frame_ink(img) > 0;
    }
    CHECK(empty == 0, "%s: %d empty glyphs or renders", name, empty);
    CHECK(over == 0, "%s: %d glyphs above the stroke limit", name, over);
    printf("%s: %d of %d distorted samples touch the outermost pixels\n", name, framed, s->n);
    CHECK(framed <= s->n / 100 + 1, "%s: %d samples touch the outermost pixels", name, framed);
    mcl_strokeset_free(s);
}

int main(void)
{
    tu_begin("test-strokes", SEED);
    test_render();
    test_splits();
    test_jhf();
    test_json();
    test_tar();
    test_hanzi_fake();
    test_source("hanzi", "npm", 10, 3800, 4200);
    test_source("kanji", "python3-kanjidraw", 10, 2000, 2600);
    test_source("kanji", "python3-kanjidraw", 0, 6000, 7000);
    test_source("hershey", "hershey-fonts-data", 0, 1000, 1500);
    if (parts_run == 0 && parts_skipped > 0) {
        printf("all parts skipped\n");
        tu_summary();
        return TU_SKIP;
    }
    return tu_summary();
}
