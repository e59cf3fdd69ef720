/* test-rng.c — Philox4x32-10 and the draws built on it.
 *
 * Known answers: the published Random123 kat_vectors for philox4x32 with 10 rounds.
 * Statistics use a fixed seed, so every run draws the same numbers; each tolerance is
 * 5 standard errors of the estimate (a correct generator fails with probability < 1e-6 for a
 * random seed) and each chi-square bound is the 1e-4 upper quantile of its distribution.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metacl.h"
#include "testutil.h"

#define SEED 0x5eed1234abcdULL
#define NDRAW 1000000

/* ---- known-answer vectors ---- */

static int words_equal(const uint32_t *a, const uint32_t *b, int n)
{
    for (int i = 0; i < n; i++)
        if (a[i] != b[i]) return 0;
    return 1;
}

static void test_kat(void)
{
    static const struct {
        uint32_t ctr[4], key[2], out[4];
    } kat[3] = {
        {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}},
        {{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu},
         {0xffffffffu, 0xffffffffu},
         {0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}},
        {{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u},
         {0xa4093822u, 0x299f31d0u},
         {0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}},
    };
    for (int k = 0; k < 3; k++) {
        uint32_t out[4];
        mcl_philox4x32_10(kat[k].ctr, kat[k].key, out);
        CHECK(words_equal(out, kat[k].out, 4),
              "philox4x32_10 KAT %d: got %08x %08x %08x %08x, want %08x %08x %08x %08x", k,
              out[0], out[1], out[2], out[3], kat[k].out[0], kat[k].out[1], kat[k].out[2],
              kat[k].out[3]);
        uint32_t out10[4];
        mcl_philox4x32_r(kat[k].ctr, kat[k].key, 10, out10);
        CHECK(words_equal(out10, out, 4), "philox4x32_r(10) = philox4x32_10 (KAT %d)", k);
        /* the comparison detects a one-bit error */
        out[k] ^= 1u << (5 + k);
        CHECK(!words_equal(out, kat[k].out, 4), "KAT comparison detects a flipped bit (%d)", k);
    }
    /* fewer rounds give something else */
    uint32_t o7[4];
    mcl_philox4x32_r(kat[2].ctr, kat[2].key, 7, o7);
    CHECK(!words_equal(o7, kat[2].out, 4), "7 rounds differ from 10 rounds");

    /* stream layout (rng.h): key = seed, counter = (index/4 lo, hi, stream lo, hi),
     * element i = word i%4. Stream (0,0) block 0 is KAT 0. */
    for (int i = 0; i < 4; i++)
        CHECK(mcl_rng_u32(0, 0, (uint64_t)i) == kat[0].out[i], "mcl_rng_u32(0,0,%d) = KAT 0 word", i);
    {
        uint64_t seed = 0x299f31d0a4093822ULL, stream = 0x0370734413198a2eULL;
        uint64_t blk = ((uint64_t)3 << 32) | 0x243f6a88u; /* high word of the block index set */
        uint32_t ctr[4] = {(uint32_t)blk, (uint32_t)(blk >> 32), (uint32_t)stream,
                           (uint32_t)(stream >> 32)};
        uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
        uint32_t out[4];
        mcl_philox4x32_10(ctr, key, out);
        int ok = 1;
        for (int i = 0; i < 4; i++) ok &= mcl_rng_u32(seed, stream, blk * 4 + (uint64_t)i) == out[i];
        CHECK(ok, "mcl_rng_u32 uses (index/4 lo, index/4 hi, stream lo, stream hi) and key = seed");
    }
}

/* ---- streams ---- */

static int count_equal_words(uint64_t s1, uint64_t t1, uint64_t s2, uint64_t t2, int n)
{
    int eq = 0;
    for (int i = 0; i < n; i++)
        eq += mcl_rng_u32(s1, t1, (uint64_t)i) == mcl_rng_u32(s2, t2, (uint64_t)i);
    return eq;
}

static void test_streams(void)
{
    /* different (seed, stream) -> different words (a coincidence has probability 2^-32) */
    const uint64_t keys[][2] = {
        {SEED, 0}, {SEED, 1}, {SEED + 1, 0}, {SEED, (uint64_t)1 << 32},
        {SEED ^ ((uint64_t)1 << 32), 0}, {0, 0}, {0, 1}, {1, 0},
    };
    const int nk = (int)(sizeof keys / sizeof keys[0]);
    int worst = 0;
    for (int a = 0; a < nk; a++)
        for (int b = a + 1; b < nk; b++) {
            int eq = count_equal_words(keys[a][0], keys[a][1], keys[b][0], keys[b][1], 256);
            if (eq > worst) worst = eq;
        }
    CHECK(worst <= 1, "distinct (seed, stream) pairs share at most 1 of 256 words (worst %d)", worst);
    CHECK(count_equal_words(SEED, 7, SEED, 7, 256) == 256, "same key -> same numbers");

    /* the sequential generator walks the stream */
    mcl_rng r1, r2;
    mcl_rng_init(&r1, SEED, 3);
    mcl_rng_init(&r2, SEED, 3);
    int same = 1, walks = 1;
    for (uint64_t i = 0; i < 1000; i++) {
        uint32_t x = mcl_rng_next_u32(&r1);
        same &= x == mcl_rng_next_u32(&r2);
        walks &= x == mcl_rng_u32(SEED, 3, i);
    }
    CHECK(same, "two generators with the same key agree");
    CHECK(walks, "mcl_rng_next_u32 returns words 0, 1, 2, ... of its stream");
    mcl_rng_init(&r1, SEED, 3);
    int uni = 1;
    for (uint64_t i = 0; i < 1000; i++) uni &= mcl_rng_next_uniform(&r1) == mcl_rng_uniform(SEED, 3, i);
    CHECK(uni, "mcl_rng_next_uniform follows mcl_rng_uniform over the stream");
    mcl_rng_init(&r1, SEED, 4);
    mcl_rng_init(&r2, SEED, 4);
    int nsame = 1;
    for (int i = 0; i < 100; i++) {
        float a = mcl_rng_next_normal(&r1), b = mcl_rng_next_normal(&r2);
        nsame &= memcmp(&a, &b, sizeof a) == 0;
    }
    CHECK(nsame, "normal sequences with the same key are identical");

    /* unit conversion: 24 bits, never 1 */
    CHECK(mcl_u32_to_unit(0) == 0.0f, "u32_to_unit(0) = 0");
    CHECK(mcl_u32_to_unit(0x100u) == 1.0f / 16777216.0f, "u32_to_unit(0x100) = 2^-24");
    CHECK(mcl_u32_to_unit(0xffffffffu) == 1.0f - 1.0f / 16777216.0f && mcl_u32_to_unit(0xffffffffu) < 1.0f,
          "u32_to_unit(max) = 1 - 2^-24 < 1");
}

/* ---- distributions ---- */

static void test_uniform(void)
{
    double s = 0, s2 = 0;
    float lo = 1, hi = -1;
    for (uint64_t i = 0; i < NDRAW; i++) {
        float u = mcl_rng_uniform(SEED, 11, i);
        if (u < lo) lo = u;
        if (u > hi) hi = u;
        s += u;
        s2 += (double)u * u;
    }
    double mean = s / NDRAW, var = s2 / NDRAW - mean * mean;
    /* SE(mean) = sqrt(1/12 / n) = 2.89e-4; SE(var) = sqrt((1/80 - 1/144) / n) = 7.45e-5 */
    CHECK(lo >= 0.0f && hi < 1.0f, "uniform draws in [0, 1): min %g max %.9g", (double)lo, (double)hi);
    CHECK_NEAR("uniform mean (5 SE)", mean, 0.5, 5 * 2.89e-4, 0);
    CHECK_NEAR("uniform variance (5 SE)", var, 1.0 / 12, 5 * 7.45e-5, 0);
    CHECK(!tu_near(mean, 0.51, 5 * 2.89e-4, 0), "helper detects a mean of 0.51");

    /* deciles: chi-square with 9 degrees of freedom, bound 33.72 (p = 1e-4) */
    long cnt[10] = {0};
    for (uint64_t i = 0; i < NDRAW; i++) {
        int b = (int)(mcl_rng_uniform(SEED, 12, i) * 10.0f);
        if (b > 9) b = 9;
        cnt[b]++;
    }
    double chi = 0, e = NDRAW / 10.0;
    for (int b = 0; b < 10; b++) chi += (cnt[b] - e) * (cnt[b] - e) / e;
    CHECK(chi < 33.72, "uniform deciles: chi2(9) = %.2f < 33.72", chi);
}

static void test_normal(void)
{
    double s = 0, s2 = 0;
    long within1 = 0, beyond3 = 0, nonfinite = 0;
    for (uint64_t i = 0; i < NDRAW; i++) {
        float z = mcl_rng_normal(SEED, 21, i);
        if (!isfinite(z)) {
            nonfinite++;
            continue;
        }
        s += z;
        s2 += (double)z * z;
        if (fabsf(z) < 1.0f) within1++;
        if (fabsf(z) > 3.0f) beyond3++;
    }
    double mean = s / NDRAW, sd = sqrt(s2 / NDRAW - mean * mean);
    /* SE(mean) = 1/sqrt(n) = 1e-3; SE(sd) ~ 1/sqrt(2n) = 7.1e-4;
     * P(|z|<1) = 0.682689, SE 4.66e-4; P(|z|>3) = 0.0026998, SE 5.19e-5 */
    CHECK(nonfinite == 0, "normal draws are finite (%ld not)", nonfinite);
    CHECK_NEAR("normal mean (5 SE)", mean, 0.0, 5e-3, 0);
    CHECK_NEAR("normal std (5 SE)", sd, 1.0, 5 * 7.1e-4, 0);
    CHECK_NEAR("normal P(|z|<1) (5 SE)", (double)within1 / NDRAW, 0.682689, 5 * 4.66e-4, 0);
    CHECK_NEAR("normal P(|z|>3) (5 SE)", (double)beyond3 / NDRAW, 0.0026998, 5 * 5.19e-5, 0);
}

static void test_bernoulli(void)
{
    long k = 0, k0 = 0, k1 = 0;
    for (uint64_t i = 0; i < NDRAW; i++) k += mcl_rng_bernoulli(SEED, 31, i, 0.3f);
    /* SE = sqrt(0.3 * 0.7 / n) = 4.58e-4 */
    CHECK_NEAR("Bernoulli(0.3) frequency (5 SE)", (double)k / NDRAW, 0.3, 5 * 4.58e-4, 0);
    for (uint64_t i = 0; i < 10000; i++) {
        k0 += mcl_rng_bernoulli(SEED, 32, i, 0.0f);
        k1 += mcl_rng_bernoulli(SEED, 32, i, 1.0f);
    }
    CHECK(k0 == 0, "Bernoulli(0) never fires (%ld)", k0);
    CHECK(k1 == 10000, "Bernoulli(1) always fires (%ld)", k1);
}

/* mcl_rng_bernoulli_indices against its definition (element i chosen iff
 * mcl_rng_uniform(seed, stream, counter + i) < p, increasing order): run lengths around the
 * 64-index chunks (1, 5, 63, 64, 65, 1000) and ones long enough for the parallel path (70001,
 * 200003: several segments), counters that are not multiples of 4, one whose run crosses 2^32
 * in the block number's low word and one that wraps past 2^64; p = 0 (none), p = 1 (all),
 * out-of-range p. Then: the chosen set is exactly the set dropout drops with the same key. */
static int bi_matches(uint64_t stream, uint64_t counter, int64_t n, float p, int64_t *got, int64_t *want)
{
    int64_t k = mcl_rng_bernoulli_indices(SEED, stream, counter, n, p, got), w = 0;
    for (int64_t i = 0; i < n; i++)
        if (mcl_rng_uniform(SEED, stream, counter + (uint64_t)i) < p) want[w++] = i;
    if (k != w) {
        printf("  bernoulli_indices(n %lld, counter %llu, p %g): %lld indices, want %lld\n",
               (long long)n, (unsigned long long)counter, (double)p, (long long)k, (long long)w);
        return 0;
    }
    for (int64_t j = 0; j < w; j++)
        if (got[j] != want[j]) {
            printf("  bernoulli_indices(n %lld, counter %llu, p %g): idx[%lld] = %lld, want %lld\n",
                   (long long)n, (unsigned long long)counter, (double)p, (long long)j,
                   (long long)got[j], (long long)want[j]);
            return 0;
        }
    return 1;
}

static void test_bernoulli_indices(void)
{
    static const int64_t ns[] = {1, 5, 63, 64, 65, 1000, 70001, 200003};
    static const uint64_t ctrs[] = {0, 1, 2, 3, 7, 1001, 0x3fffffffdull, UINT64_MAX - 9};
    static const float ps[] = {0.3f, 0.05f, 0.9f};
    const int64_t nmax = 200003;
    int64_t *got = malloc((size_t)nmax * sizeof *got), *want = malloc((size_t)nmax * sizeof *want);
    if (!CHECK(got && want, "memory")) {
        free(got);
        free(want);
        return;
    }
    int ok = 1, runs = 0;
    for (size_t a = 0; a < sizeof ns / sizeof ns[0]; a++)
        for (size_t b = 0; b < sizeof ctrs / sizeof ctrs[0]; b++)
            for (size_t c = 0; c < sizeof ps / sizeof ps[0]; c++, runs++)
                ok &= bi_matches(40 + c, ctrs[b], ns[a], ps[c], got, want);
    CHECK(ok, "mcl_rng_bernoulli_indices = its definition over %d runs (n 1..200003, odd counters, "
          "a counter wrapping past 2^64)", runs);
    /* p = 0 chooses none, p = 1 all; p < 0 or NaN none, p > 1 all */
    int64_t k0 = mcl_rng_bernoulli_indices(SEED, 41, 3, 1000, 0.0f, got);
    CHECK(k0 == 0, "p = 0: no index (%lld)", (long long)k0);
    int64_t k1 = mcl_rng_bernoulli_indices(SEED, 41, 3, 1000, 1.0f, got), in_order = 1;
    for (int64_t i = 0; i < k1; i++) in_order &= got[i] == i;
    CHECK(k1 == 1000 && in_order, "p = 1: every index, in order (%lld)", (long long)k1);
    CHECK(mcl_rng_bernoulli_indices(SEED, 41, 3, 1000, -0.5f, got) == 0 &&
              mcl_rng_bernoulli_indices(SEED, 41, 3, 1000, NAN, got) == 0 &&
              mcl_rng_bernoulli_indices(SEED, 41, 3, 1000, 2.0f, got) == 1000,
          "p < 0 or NaN: none, p > 1: all");
    CHECK(mcl_rng_bernoulli_indices(SEED, 41, 3, 0, 0.5f, got) == 0 &&
              mcl_rng_bernoulli_indices(SEED, 41, 3, -5, 0.5f, got) == 0 &&
              mcl_rng_bernoulli_indices(SEED, 41, 3, 10, 0.5f, NULL) == 0,
          "n <= 0 or no array: 0 indices");
    /* a wrong list is told apart (the comparison can fail) */
    (void)mcl_rng_bernoulli_indices(SEED, 42, 5, 65, 0.3f, got);
    int64_t kw = 0;
    for (int64_t i = 0; i < 65; i++)
        if (mcl_rng_uniform(SEED, 42, 5 + (uint64_t)i) < 0.3f) want[kw++] = i;
    if (kw > 0) want[kw / 2] += 1;
    CHECK(kw > 0 && memcmp(got, want, (size_t)kw * sizeof *got) != 0,
          "a list with one index moved differs from the function's");

    /* the chosen set = dropout's dropped set with the same (seed, stream, counter) and p */
    mcl_ctx *ctx = tu_ctx_ref();
    const int64_t n = 5003, shape[1] = {n};
    const float p = 0.3f;
    const uint64_t stream = 43, counter = 6;
    mcl_tensor *x = mcl_tensor_create(ctx, 1, shape);
    float *vd = NULL;
    if (CHECK(x && mcl_tensor_fill(x, 1.0f) == MCL_OK, "fixture: %s", mcl_ctx_error(ctx))) {
        mcl_tensor *d = mcl_dropout_keyed(ctx, x, p, SEED, stream, counter);
        vd = d ? tu_read(d) : NULL;
        if (CHECK(vd != NULL, "dropout: %s", mcl_ctx_error(ctx))) {
            int64_t k = mcl_rng_bernoulli_indices(SEED, stream, counter, n, p, got), j = 0;
            int same = 1;
            for (int64_t i = 0; i < n; i++) {
                const int chosen = j < k && got[j] == i;
                j += chosen;
                same &= chosen == (vd[i] == 0.0f);
            }
            CHECK(same && j == k, "the chosen indices are exactly the elements dropout drops "
                  "(%lld of %lld)", (long long)k, (long long)n);
        }
    }
    free(vd);
    mcl_ctx_reset(ctx);
    mcl_tensor_free(x);
    mcl_ctx_free(ctx);
    free(got);
    free(want);
}

static void test_below(void)
{
    mcl_rng r;
    /* n = 10: range and chi-square(9) < 33.72 (p = 1e-4) */
    mcl_rng_init(&r, SEED, 41);
    long cnt[10] = {0};
    long out = 0;
    for (int i = 0; i < NDRAW; i++) {
        uint32_t x = mcl_rng_next_below(&r, 10);
        if (x >= 10) out++;
        else cnt[x]++;
    }
    double chi = 0, e = NDRAW / 10.0;
    for (int b = 0; b < 10; b++) chi += (cnt[b] - e) * (cnt[b] - e) / e;
    CHECK(out == 0, "next_below(10): %ld values out of range", out);
    CHECK(chi < 33.72, "next_below(10): chi2(9) = %.2f < 33.72", chi);

    /* n = 1: always 0; n = 7 and n = 2^31 + 1 (high rejection rate): in range */
    int ok1 = 1;
    for (int i = 0; i < 1000; i++) ok1 &= mcl_rng_next_below(&r, 1) == 0;
    CHECK(ok1, "next_below(1) is always 0");
    long bad = 0;
    for (int i = 0; i < 100000; i++) {
        bad += mcl_rng_next_below(&r, 7) >= 7;
        bad += mcl_rng_next_below(&r, 0x80000001u) >= 0x80000001u;
        bad += mcl_rng_next_below(&r, 0xffffffffu) == 0xffffffffu;
    }
    CHECK(bad == 0, "next_below(7 / 2^31+1 / 2^32-1): %ld out of range", bad);

    /* modulo bias: n = 3·2^30. x % n would give [0, 2^30) probability 1/2, and a multiply-shift
     * without rejection gives multiples of 3 probability 1/2; unbiased: 1/3 each.
     * 200000 draws: SE = sqrt(2/9 / 200000) = 1.05e-3; tolerance 5e-3. */
    const uint32_t n = 3u << 30;
    long low = 0, mult3 = 0;
    const int nd = 200000;
    for (int i = 0; i < nd; i++) {
        uint32_t x = mcl_rng_next_below(&r, n);
        low += x < (1u << 30);
        mult3 += x % 3 == 0;
    }
    CHECK_NEAR("next_below(3*2^30): P(x < 2^30) (no modulo bias)", (double)low / nd, 1.0 / 3, 5e-3, 0);
    CHECK_NEAR("next_below(3*2^30): P(x % 3 == 0)", (double)mult3 / nd, 1.0 / 3, 5e-3, 0);
}

static int perm_index4(const int *v)
{
    /* Lehmer code of a permutation of 0..3 -> 0..23 */
    int idx = 0;
    for (int i = 0; i < 4; i++) {
        int smaller = 0;
        for (int j = i + 1; j < 4; j++) smaller += v[j] < v[i];
        idx = idx * (4 - i) + smaller;
    }
    return idx;
}

static void test_shuffle(void)
{
    enum { N = 100 };
    int v[N], w[N], seen[N];
    mcl_rng r;
    for (int i = 0; i < N; i++) v[i] = w[i] = i;
    mcl_rng_init(&r, SEED, 51);
    mcl_rng_shuffle_int(&r, v, N);
    memset(seen, 0, sizeof seen);
    int perm = 1, moved = 0;
    for (int i = 0; i < N; i++) {
        if (v[i] < 0 || v[i] >= N || seen[v[i]]) perm = 0;
        else seen[v[i]] = 1;
        moved += v[i] != i;
    }
    CHECK(perm, "shuffle gives a permutation");
    CHECK(moved > N / 2, "shuffle moves most elements (%d of %d)", moved, N);
    mcl_rng_init(&r, SEED, 51);
    mcl_rng_shuffle_int(&r, w, N);
    CHECK(memcmp(v, w, sizeof v) == 0, "same key -> same shuffle");
    for (int i = 0; i < N; i++) w[i] = i;
    mcl_rng_init(&r, SEED, 52);
    mcl_rng_shuffle_int(&r, w, N);
    CHECK(memcmp(v, w, sizeof v) != 0, "another stream -> another shuffle");

    /* n = 0 and 1 are fine */
    int one = 42;
    mcl_rng_shuffle_int(&r, &one, 1);
    mcl_rng_shuffle_int(&r, NULL, 0);
    CHECK(one == 42, "shuffle of 1 element keeps it");

    /* all 24 permutations of 4 equally likely: 48000 shuffles, chi2(23) < 57.07 (p = 1e-4) */
    long cnt[24] = {0};
    const int ns = 48000;
    mcl_rng_init(&r, SEED, 53);
    for (int k = 0; k < ns; k++) {
        int a[4] = {0, 1, 2, 3};
        mcl_rng_shuffle_int(&r, a, 4);
        cnt[perm_index4(a)]++;
    }
    double chi = 0, e = ns / 24.0;
    for (int k = 0; k < 24; k++) chi += (cnt[k] - e) * (cnt[k] - e) / e;
    CHECK(chi < 57.07, "shuffle of 4: chi2(23) over the 24 permutations = %.2f < 57.07", chi);
}

static void test_tensor_fill(void)
{
    mcl_ctx *ctx = tu_ctx_ref();
    int64_t shape[2] = {100, 100};
    mcl_tensor *a = mcl_tensor_create(ctx, 2, shape), *b = mcl_tensor_create(ctx, 2, shape);
    mcl_tensor *c = mcl_tensor_create(ctx, 2, shape);
    float *va = NULL, *vb = NULL, *vc = NULL;
    if (!CHECK(a && b && c, "create: %s", mcl_ctx_error(ctx))) goto done;
    CHECK(mcl_tensor_randn(a, SEED, 61, 2.0f, 0.5f) == MCL_OK, "randn: %s", mcl_ctx_error(ctx));
    CHECK(mcl_tensor_randn(b, SEED, 61, 2.0f, 0.5f) == MCL_OK, "randn again");
    CHECK(mcl_tensor_randn(c, SEED, 62, 2.0f, 0.5f) == MCL_OK, "randn other stream");
    va = tu_read(a);
    vb = tu_read(b);
    vc = tu_read(c);
    if (!va || !vb || !vc) goto done;
    const size_t bytes = 10000 * sizeof(float);
    CHECK(memcmp(va, vb, bytes) == 0, "mcl_tensor_randn is reproducible (same bits)");
    CHECK(memcmp(va, vc, bytes) != 0, "another stream fills differently");
    double s = 0, s2 = 0;
    int distinct = 0;
    for (int i = 0; i < 10000; i++) {
        s += va[i];
        s2 += (double)va[i] * va[i];
        distinct += i > 0 && va[i] != va[i - 1];
    }
    double mean = s / 10000, sd = sqrt(s2 / 10000 - mean * mean);
    /* SE(mean) = 0.5/100 = 0.005, SE(sd) = 0.5/sqrt(20000) = 0.0035 */
    CHECK_NEAR("randn mean 2 (5 SE)", mean, 2.0, 0.025, 0);
    CHECK_NEAR("randn std 0.5 (5 SE)", sd, 0.5, 0.018, 0);
    CHECK(distinct > 9990, "randn values vary (%d changes)", distinct);

    CHECK(mcl_tensor_rand_uniform(a, SEED, 63, -3.0f, 5.0f) == MCL_OK, "rand_uniform");
    free(va);
    va = tu_read(a);
    if (!va) goto done;
    int inrange = 1;
    s = 0;
    for (int i = 0; i < 10000; i++) {
        inrange &= va[i] >= -3.0f && va[i] < 5.0f;
        s += va[i];
    }
    /* SE(mean) = 8/sqrt(12)/100 = 0.0231 */
    CHECK(inrange, "rand_uniform values in [-3, 5)");
    CHECK_NEAR("rand_uniform mean 1 (5 SE)", s / 10000, 1.0, 0.116, 0);
done:
    free(va);
    free(vb);
    free(vc);
    mcl_tensor_free(a);
    mcl_tensor_free(b);
    mcl_tensor_free(c);
    mcl_ctx_free(ctx);
}

int main(void)
{
    tu_begin("test-rng", SEED);
    test_kat();
    test_streams();
    test_uniform();
    test_normal();
    test_bernoulli();
    test_bernoulli_indices();
    test_below();
    test_shuffle();
    test_tensor_fill();
    return tu_summary();
}
