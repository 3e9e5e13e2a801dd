/* SPDX-License-Identifier: Apache-2.0 */
/* SHA-256 (FIPS 180-4), streaming.  Pure: no I/O, no allocation. */
#ifndef HUTCH_SHA256_H
#define HUTCH_SHA256_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SHA256_DIGEST_SIZE 32
#define SHA256_HEX_SIZE (2 * SHA256_DIGEST_SIZE + 1)

struct sha256_ctx {
  uint32_t state[8];
  uint64_t length; /* bytes hashed so far */
  uint8_t buf[64];
  size_t buffered;
};

void sha256_init(struct sha256_ctx *ctx);
void sha256_update(struct sha256_ctx *ctx, const void *data, size_t len);
/* Writes the digest; the context must be re-initialised before reuse. */
void sha256_final(struct sha256_ctx *ctx, uint8_t out[SHA256_DIGEST_SIZE]);
/* Lower-case hex, NUL-terminated. */
void sha256_hex(const uint8_t digest[SHA256_DIGEST_SIZE], char out[SHA256_HEX_SIZE]);
/* One-shot convenience. */
void sha256_buffer(const void *data, size_t len, uint8_t out[SHA256_DIGEST_SIZE]);

/* HMAC-SHA256 (RFC 2104), streaming: a key of any length, hashed first when
 * longer than a block. */
struct hmac_sha256_ctx {
  struct sha256_ctx inner, outer;
};
void hmac_sha256_init(struct hmac_sha256_ctx *ctx, const void *key, size_t key_len);
void hmac_sha256_update(struct hmac_sha256_ctx *ctx, const void *data, size_t len);
void hmac_sha256_final(struct hmac_sha256_ctx *ctx, uint8_t out[SHA256_DIGEST_SIZE]);
/* Compares two digests in a time that does not depend on where they differ. */
bool sha256_digest_equal(const uint8_t a[SHA256_DIGEST_SIZE], const uint8_t b[SHA256_DIGEST_SIZE]);

/* The CPU's SHA extensions are used when present; tests turn them off to
 * check the portable code.  Returns whether the extensions are in use. */
bool sha256_set_accel(bool enable);

#endif
