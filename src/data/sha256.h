/* sha256.h — SHA-256 (FIPS 180-4) of buffers and files (internal to the data code).
 *
 * mcl_sha256_file() is declared in prepared.h (the prepared-set writer records the hashes in
 * SHA256SUMS); this header adds the incremental and buffer forms. */
#ifndef MCL_SHA256_H
#define MCL_SHA256_H

#include <stddef.h>
#include <stdint.h>

#include "status.h"

typedef struct mcl_sha256_ctx {
    uint32_t h[8];
    uint64_t nbytes;  /* message length so far, in bytes */
    uint8_t buf[64];  /* partial block */
    size_t nbuf;
} mcl_sha256_ctx;

void mcl_sha256_init(mcl_sha256_ctx *c);
void mcl_sha256_update(mcl_sha256_ctx *c, const void *data, size_t n);
void mcl_sha256_final(mcl_sha256_ctx *c, uint8_t digest[32]);

/* One-shot digest of a buffer. */
void mcl_sha256(const void *data, size_t n, uint8_t digest[32]);
/* Lower-case hex of a digest: 64 chars + NUL. */
void mcl_sha256_hex(const uint8_t digest[32], char hex[65]);
/* Hex digest of a buffer. */
void mcl_sha256_buf_hex(const void *data, size_t n, char hex[65]);

#endif
