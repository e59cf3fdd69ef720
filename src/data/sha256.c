/* sha256.c — SHA-256 as specified in FIPS 180-4 (§4.1.2 functions, §4.2.2 constants,
 * §5.1.1 padding, §6.2 computation). Written from the standard. */
#include "sha256.h"
#include "util.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "prepared.h"

/* FIPS 180-4 §4.2.2: the first 32 bits of the fractional parts of the cube roots of the
 * first 64 primes. */
static const uint32_t K[64] = {
    0x428a2f98u, 0x71374491u, 0xb5c0fbcfu, 0xe9b5dba5u, 0x3956c25bu, 0x59f111f1u, 0x923f82a4u,
    0xab1c5ed5u, 0xd807aa98u, 0x12835b01u, 0x243185beu, 0x550c7dc3u, 0x72be5d74u, 0x80deb1feu,
    0x9bdc06a7u, 0xc19bf174u, 0xe49b69c1u, 0xefbe4786u, 0x0fc19dc6u, 0x240ca1ccu, 0x2de92c6fu,
    0x4a7484aau, 0x5cb0a9dcu, 0x76f988dau, 0x983e5152u, 0xa831c66du, 0xb00327c8u, 0xbf597fc7u,
    0xc6e00bf3u, 0xd5a79147u, 0x06ca6351u, 0x14292967u, 0x27b70a85u, 0x2e1b2138u, 0x4d2c6dfcu,
    0x53380d13u, 0x650a7354u, 0x766a0abbu, 0x81c2c92eu, 0x92722c85u, 0xa2bfe8a1u, 0xa81a664bu,
    0xc24b8b70u, 0xc76c51a3u, 0xd192e819u, 0xd6990624u, 0xf40e3585u, 0x106aa070u, 0x19a4c116u,
    0x1e376c08u, 0x2748774cu, 0x34b0bcb5u, 0x391c0cb3u, 0x4ed8aa4au, 0x5b9cca4fu, 0x682e6ff3u,
    0x748f82eeu, 0x78a5636fu, 0x84c87814u, 0x8cc70208u, 0x90befffau, 0xa4506cebu, 0xbef9a3f7u,
    0xc67178f2u};

static inline uint32_t rotr(uint32_t x, unsigned n) { return (x >> n) | (x << (32u - n)); }

/* §6.2.2: process one 512-bit block. */
static void compress(uint32_t h[8], const uint8_t *p)
{
    uint32_t w[64];
    for (int t = 0; t < 16; t++)
        w[t] = (uint32_t)p[4 * t] << 24 | (uint32_t)p[4 * t + 1] << 16 |
               (uint32_t)p[4 * t + 2] << 8 | (uint32_t)p[4 * t + 3];
    for (int t = 16; t < 64; t++) {
        uint32_t s0 = rotr(w[t - 15], 7) ^ rotr(w[t - 15], 18) ^ (w[t - 15] >> 3);
        uint32_t s1 = rotr(w[t - 2], 17) ^ rotr(w[t - 2], 19) ^ (w[t - 2] >> 10);
        w[t] = w[t - 16] + s0 + w[t - 7] + s1;
    }
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
    for (int t = 0; t < 64; t++) {
        uint32_t S1 = rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25);
        uint32_t ch = (e & f) ^ (~e & g);
        uint32_t t1 = hh + S1 + ch + K[t] + w[t];
        uint32_t S0 = rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22);
        uint32_t maj = (a & b) ^ (a & c) ^ (b & c);
        uint32_t t2 = S0 + maj;
        hh = g;
        g = f;
        f = e;
        e = d + t1;
        d = c;
        c = b;
        b = a;
        a = t1 + t2;
    }
    h[0] += a; h[1] += b; h[2] += c; h[3] += d;
    h[4] += e; h[5] += f; h[6] += g; h[7] += hh;
}

void mcl_sha256_init(mcl_sha256_ctx *c)
{
    /* §5.3.3: the first 32 bits of the fractional parts of the square roots of the first
     * 8 primes. */
    static const uint32_t H0[8] = {0x6a09e667u, 0xbb67ae85u, 0x3c6ef372u, 0xa54ff53au,
                                   0x510e527fu, 0x9b05688cu, 0x1f83d9abu, 0x5be0cd19u};
    memcpy(c->h, H0, sizeof H0);
    c->nbytes = 0;
    c->nbuf = 0;
}

void mcl_sha256_update(mcl_sha256_ctx *c, const void *data, size_t n)
{
    const uint8_t *p = data;
    c->nbytes += n;
    if (c->nbuf) {
        size_t take = 64 - c->nbuf < n ? 64 - c->nbuf : n;
        memcpy(c->buf + c->nbuf, p, take);
        c->nbuf += take;
        p += take;
        n -= take;
        if (c->nbuf < 64) return;
        compress(c->h, c->buf);
        c->nbuf = 0;
    }
    for (; n >= 64; p += 64, n -= 64) compress(c->h, p);
    if (n) {
        memcpy(c->buf, p, n);
        c->nbuf = n;
    }
}

void mcl_sha256_final(mcl_sha256_ctx *c, uint8_t digest[32])
{
    /* §5.1.1: append bit 1, zeros to 448 mod 512 bits, then the length in bits (64-bit BE). */
    uint64_t bits = c->nbytes * 8u;
    c->buf[c->nbuf++] = 0x80;
    if (c->nbuf > 56) {
        memset(c->buf + c->nbuf, 0, 64 - c->nbuf);
        compress(c->h, c->buf);
        c->nbuf = 0;
    }
    memset(c->buf + c->nbuf, 0, 56 - c->nbuf);
    for (int i = 0; i < 8; i++) c->buf[56 + i] = (uint8_t)(bits >> (56 - 8 * i));
    compress(c->h, c->buf);
    for (int i = 0; i < 8; i++) {
        digest[4 * i] = (uint8_t)(c->h[i] >> 24);
        digest[4 * i + 1] = (uint8_t)(c->h[i] >> 16);
        digest[4 * i + 2] = (uint8_t)(c->h[i] >> 8);
        digest[4 * i + 3] = (uint8_t)c->h[i];
    }
    memset(c, 0, sizeof *c);
}

void mcl_sha256(const void *data, size_t n, uint8_t digest[32])
{
    mcl_sha256_ctx c;
    mcl_sha256_init(&c);
    mcl_sha256_update(&c, data, n);
    mcl_sha256_final(&c, digest);
}

void mcl_sha256_hex(const uint8_t digest[32], char hex[65])
{
    static const char xd[] = "0123456789abcdef";
    for (int i = 0; i < 32; i++) {
        hex[2 * i] = xd[digest[i] >> 4];
        hex[2 * i + 1] = xd[digest[i] & 15];
    }
    hex[64] = '\0';
}

void mcl_sha256_buf_hex(const void *data, size_t n, char hex[65])
{
    uint8_t d[32];
    mcl_sha256(data, n, d);
    mcl_sha256_hex(d, hex);
}

mcl_status mcl_sha256_file(const char *path, char hex[65], char *err, size_t len)
{
    if (!path || !hex) {
        if (err && len) snprintf(err, len, "sha256: null argument");
        return MCL_ERR_NULL;
    }
    hex[0] = '\0';
    FILE *f = NULL;
    mcl_status ost = mcl_fopen_regular(path, &f, NULL, err, len); /* no FIFO, no device */
    if (ost != MCL_OK) return ost;
    mcl_sha256_ctx c;
    mcl_sha256_init(&c);
    uint8_t buf[1 << 16];
    size_t got;
    while ((got = fread(buf, 1, sizeof buf, f)) > 0) mcl_sha256_update(&c, buf, got);
    int bad = ferror(f), e = errno;
    fclose(f);
    if (bad) {
        if (err && len) snprintf(err, len, "%s: read error: %s", path, strerror(e));
        return MCL_ERR_IO;
    }
    uint8_t d[32];
    mcl_sha256_final(&c, d);
    mcl_sha256_hex(d, hex);
    return MCL_OK;
}
