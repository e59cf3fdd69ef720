/* test-sha256.c — SHA-256 (src/data/sha256.c) against the FIPS 180-2 / NIST CAVS
 * example vectors ("abc", "", the 448-bit and 896-bit messages, one million 'a'), padding
 * boundaries (lengths around 55/56/64 bytes; reference digests from Python's hashlib),
 * incremental updates split at random points, the file variant, and its errors.
 * Deterministic: the split points come from Philox with the printed seed. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "prepared.h"
#include "rng.h"
#include "sha256.h"
#include "testutil.h"

#define SEED 0x5a256ULL

static void check_hex(const char *what, const void *msg, size_t n, const char *want)
{
    char hex[65];
    mcl_sha256_buf_hex(msg, n, hex);
    CHECK(strcmp(hex, want) == 0, "%s: got %s, want %s", what, hex, want);
}

static void test_fips(void)
{
    check_hex("\"abc\"", "abc", 3,
              "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    check_hex("empty message", "", 0,
              "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    const char *m448 = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    check_hex("448-bit message", m448, strlen(m448),
              "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    const char *m896 = "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnop"
                       "jklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu";
    check_hex("896-bit message", m896, strlen(m896),
              "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
    size_t n = 1000000;
    char *a = malloc(n);
    if (!CHECK(a != NULL, "malloc")) return;
    memset(a, 'a', n);
    check_hex("one million 'a'", a, n,
              "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    /* the same in 1000 updates of 1000 bytes */
    mcl_sha256_ctx c;
    mcl_sha256_init(&c);
    for (int i = 0; i < 1000; i++) mcl_sha256_update(&c, a + 1000 * i, 1000);
    uint8_t d[32];
    char hex[65];
    mcl_sha256_final(&c, d);
    mcl_sha256_hex(d, hex);
    CHECK(strcmp(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0") == 0,
          "one million 'a' in 1000 updates: %s", hex);
    free(a);
}

static void test_boundaries(void)
{
    static const struct {
        size_t n;
        const char *hex;
    } v[] = {
        {55, "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318"},
        {56, "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a"},
        {63, "7d3e74a05d7db15bce4ad9ec0658ea98e3f06eeecf16b4c6fff2da457ddc2f34"},
        {64, "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb"},
        {65, "635361c48bb9eab14198e76ea8ab7f1a41685d6ad62aa9146d301d4f17eb0ae0"},
        {119, "31eba51c313a5c08226adf18d4a359cfdfd8d2e816b13f4af952f7ea6584dcfb"},
        {120, "2f3d335432c70b580af0e8e1b3674a7c020d683aa5f73aaaedfdc55af904c21c"},
    };
    char a[128];
    memset(a, 'a', sizeof a);
    for (size_t i = 0; i < sizeof v / sizeof *v; i++) {
        char what[64];
        snprintf(what, sizeof what, "%zu x 'a'", v[i].n);
        check_hex(what, a, v[i].n, v[i].hex);
    }
    /* a wrong digest is noticed */
    char hex[65];
    mcl_sha256_buf_hex("abd", 3, hex);
    CHECK(strcmp(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad") != 0,
          "a one-letter change changes the digest");
}

static void test_incremental(void)
{
    /* 768 bytes 0..255 x 3 (hashlib digest), fed in random pieces */
    uint8_t m[768];
    for (int i = 0; i < 768; i++) m[i] = (uint8_t)i;
    const char *want = "f3a25aa93aa2fbba28d79260535bbd6a5eb0fc1c24a8b0f04e12b484c1dfe363";
    check_hex("bytes 0..255 x 3", m, sizeof m, want);
    mcl_rng r;
    mcl_rng_init(&r, SEED, 1);
    int bad = 0;
    for (int trial = 0; trial < 200; trial++) {
        mcl_sha256_ctx c;
        mcl_sha256_init(&c);
        size_t off = 0;
        while (off < sizeof m) {
            size_t k = mcl_rng_next_below(&r, 130);
            if (k > sizeof m - off) k = sizeof m - off;
            mcl_sha256_update(&c, m + off, k);
            off += k;
        }
        uint8_t d[32];
        char hex[65];
        mcl_sha256_final(&c, d);
        mcl_sha256_hex(d, hex);
        bad += strcmp(hex, want) != 0;
    }
    CHECK(bad == 0, "random update splits: %d of 200 digests differ", bad);
}

static void test_file(void)
{
    char path[64], hex[65], err[512];
    snprintf(path, sizeof path, "test-sha256.tmp.%ld", (long)getpid());
    FILE *f = fopen(path, "wb");
    if (!CHECK(f != NULL, "create %s", path)) return;
    fputs("abc", f);
    fclose(f);
    mcl_status st = mcl_sha256_file(path, hex, err, sizeof err);
    CHECK(st == MCL_OK && strcmp(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad") == 0,
          "file holding \"abc\": status %d, %s", (int)st, hex);
    unlink(path);
    err[0] = '\0';
    st = mcl_sha256_file(path, hex, err, sizeof err);
    CHECK(st == MCL_ERR_IO && strstr(err, path) != NULL && hex[0] == '\0',
          "missing file: status %d, message '%s'", (int)st, err);
    st = mcl_sha256_file(".", hex, err, sizeof err);
    CHECK(st == MCL_ERR_IO, "a directory is an error: status %d, message '%s'", (int)st, err);
}

int main(void)
{
    tu_begin("test-sha256", SEED);
    test_fips();
    test_boundaries();
    test_incremental();
    test_file();
    return tu_summary();
}
