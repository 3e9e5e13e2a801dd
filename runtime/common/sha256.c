/* SPDX-License-Identifier: Apache-2.0 */
/* SHA-256 (FIPS 180-4).  The portable block function follows the standard
 * directly; on x86-64 CPUs with the SHA extensions a second one does the same
 * rounds in hardware, which makes hashing a rootfs tarball several times
 * cheaper than unpacking it.
 *
 * Why not OpenSSL's libcrypto (EVP, EVP_MAC), which libcurl loads anyway:
 * every `hutch exec` hashes its policy and seccomp profile and checks the
 * cached filter's HMAC (policy.c), and that path must stay cheap.  Measured
 * on an x86-64 VM with the SHA extensions (medians of 200):
 *   - those three hashes, first use in a process: 22 us here, 1.07 ms with
 *     EVP (fetching the digest starts OpenSSL's default provider); warm,
 *     20 us either way;
 *   - `hutch-full exec --rootfs busybox -- /bin/true`: 9.8 ms here, 12.7 ms
 *     linked with libcrypto (loading and relocating it, then the above);
 *   - 256 MiB in 64 KiB pieces: 1010 MB/s here, 1005 MB/s with EVP.
 * And the musl front end, which starts sandboxes, has no libcrypto to link
 * statically (contrib/musl/build-deps builds none), so it would need this
 * file anyway.  Where the CPU lacks the SHA extensions, OpenSSL's vector
 * code hashes bulk data about twice as fast as the portable function here
 * (430 and 230 MB/s); only importing images would gain from that. */
#include "config.h"

#include "sha256.h"

#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#define SHA256_HAVE_X86 1
#include <immintrin.h>
#if defined(HAVE_SYS_PLATFORM_X86_H) && !defined(HUTCH_MUSL_FRONT_END)
/* glibc >= 2.33: the features ld.so already probed at start-up. */
#include <sys/platform/x86.h>
#define SHA256_HAVE_GLIBC_X86 1
#else
#include <cpuid.h>
#endif
#endif

static const uint32_t K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static inline uint32_t ror(uint32_t x, unsigned n) {
  return (x >> n) | (x << (32 - n));
}

static inline uint32_t load_be32(const uint8_t *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

static void blocks_portable(uint32_t state[8], const uint8_t *data, size_t nblocks) {
  while (nblocks--) {
    uint32_t w[64];
    for (int t = 0; t < 16; t++)
      w[t] = load_be32(data + 4 * t);
    for (int t = 16; t < 64; t++) {
      uint32_t s0 = ror(w[t - 15], 7) ^ ror(w[t - 15], 18) ^ (w[t - 15] >> 3);
      uint32_t s1 = ror(w[t - 2], 17) ^ ror(w[t - 2], 19) ^ (w[t - 2] >> 10);
      w[t] = w[t - 16] + s0 + w[t - 7] + s1;
    }
    uint32_t a = state[0], b = state[1], c = state[2], d = state[3];
    uint32_t e = state[4], f = state[5], g = state[6], h = state[7];
    for (int t = 0; t < 64; t++) {
      uint32_t t1 = h + (ror(e, 6) ^ ror(e, 11) ^ ror(e, 25)) + ((e & f) ^ (~e & g)) + K[t] + w[t];
      uint32_t t2 = (ror(a, 2) ^ ror(a, 13) ^ ror(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
      h = g;
      g = f;
      f = e;
      e = d + t1;
      d = c;
      c = b;
      b = a;
      a = t1 + t2;
    }
    state[0] += a;
    state[1] += b;
    state[2] += c;
    state[3] += d;
    state[4] += e;
    state[5] += f;
    state[6] += g;
    state[7] += h;
    data += 64;
  }
}

#ifdef SHA256_HAVE_X86
/* The SHA-NI instructions keep the state as the register pairs ABEF/CDGH and
 * take the message schedule four words at a time. */
__attribute__((target("sha,sse4.1,ssse3"))) static void blocks_shani(uint32_t state[8], const uint8_t *data,
                                                                     size_t nblocks) {
  const __m128i bswap = _mm_set_epi64x(0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL);
  __m128i tmp = _mm_loadu_si128((const __m128i *)&state[0]);
  __m128i st1 = _mm_loadu_si128((const __m128i *)&state[4]);
  tmp = _mm_shuffle_epi32(tmp, 0xB1);         /* CDAB */
  st1 = _mm_shuffle_epi32(st1, 0x1B);         /* EFGH */
  __m128i st0 = _mm_alignr_epi8(tmp, st1, 8); /* ABEF */
  st1 = _mm_blend_epi16(st1, tmp, 0xF0);      /* CDGH */

  while (nblocks--) {
    __m128i abef = st0, cdgh = st1;
    __m128i w[16];
#pragma GCC unroll 16
    for (int i = 0; i < 16; i++) {
      if (i < 4)
        w[i] = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(data + 16 * i)), bswap);
      else
        w[i] = _mm_sha256msg2_epu32(
            _mm_add_epi32(_mm_sha256msg1_epu32(w[i - 4], w[i - 3]), _mm_alignr_epi8(w[i - 1], w[i - 2], 4)), w[i - 1]);
      __m128i msg = _mm_add_epi32(w[i], _mm_loadu_si128((const __m128i *)&K[4 * i]));
      st1 = _mm_sha256rnds2_epu32(st1, st0, msg);
      st0 = _mm_sha256rnds2_epu32(st0, st1, _mm_shuffle_epi32(msg, 0x0E));
    }
    st0 = _mm_add_epi32(st0, abef);
    st1 = _mm_add_epi32(st1, cdgh);
    data += 64;
  }

  tmp = _mm_shuffle_epi32(st0, 0x1B);    /* FEBA */
  st1 = _mm_shuffle_epi32(st1, 0xB1);    /* DCHG */
  st0 = _mm_blend_epi16(tmp, st1, 0xF0); /* DCBA */
  st1 = _mm_alignr_epi8(st1, tmp, 8);    /* HGFE */
  _mm_storeu_si128((__m128i *)&state[0], st0);
  _mm_storeu_si128((__m128i *)&state[4], st1);
}

#ifdef SHA256_HAVE_GLIBC_X86
/* Read what ld.so found, rather than issue CPUID again: under a hypervisor
 * each CPUID is a trap (about 13 us on a Firecracker VM), and hutch hashes
 * its policy on every start.  "Active" also means the OS saves the
 * registers these instructions use. */
static bool cpu_has_shani(void) {
  return CPU_FEATURE_ACTIVE(SHA) && CPU_FEATURE_ACTIVE(SSSE3) && CPU_FEATURE_ACTIVE(SSE4_1);
}
#else
static bool cpu_has_shani(void) {
  /* Three CPUIDs, not the four of __get_cpuid and __get_cpuid_count (each
   * asks for the highest leaf again): under a hypervisor each one traps. */
  unsigned a, b, c, d;
  if (__get_cpuid_max(0, NULL) < 7)
    return false;
  __cpuid(1, a, b, c, d);
  bool sse = (c & bit_SSSE3) && (c & bit_SSE4_1);
  __cpuid_count(7, 0, a, b, c, d);
  return sse && (b & (1u << 29)) != 0;
}
#endif
#endif

typedef void (*blocks_fn)(uint32_t state[8], const uint8_t *data, size_t nblocks);
static blocks_fn blocks_impl;

static blocks_fn pick_blocks(void) {
#ifdef SHA256_HAVE_X86
  if (cpu_has_shani())
    return blocks_shani;
#endif
  return blocks_portable;
}

static inline void run_blocks(uint32_t state[8], const uint8_t *data, size_t nblocks) {
  if (blocks_impl == NULL)
    blocks_impl = pick_blocks();
  blocks_impl(state, data, nblocks);
}

bool sha256_set_accel(bool enable) {
  blocks_impl = enable ? pick_blocks() : blocks_portable;
  return blocks_impl != blocks_portable;
}

void sha256_init(struct sha256_ctx *ctx) {
  static const uint32_t iv[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  memcpy(ctx->state, iv, sizeof(iv));
  ctx->length = 0;
  ctx->buffered = 0;
}

void sha256_update(struct sha256_ctx *ctx, const void *data, size_t len) {
  const uint8_t *p = data;
  ctx->length += len;
  if (ctx->buffered > 0) {
    size_t take = 64 - ctx->buffered;
    if (take > len)
      take = len;
    memcpy(ctx->buf + ctx->buffered, p, take);
    ctx->buffered += take;
    p += take;
    len -= take;
    if (ctx->buffered < 64)
      return;
    run_blocks(ctx->state, ctx->buf, 1);
    ctx->buffered = 0;
  }
  if (len >= 64) {
    run_blocks(ctx->state, p, len / 64);
    p += len - len % 64;
    len %= 64;
  }
  memcpy(ctx->buf, p, len);
  ctx->buffered = len;
}

void sha256_final(struct sha256_ctx *ctx, uint8_t out[SHA256_DIGEST_SIZE]) {
  uint64_t bits = ctx->length * 8;
  uint8_t pad[72] = {0x80};
  /* Pad to 56 mod 64, then the message length in bits, big-endian. */
  size_t padlen = ctx->buffered < 56 ? 56 - ctx->buffered : 120 - ctx->buffered;
  for (int i = 0; i < 8; i++)
    pad[padlen + (size_t)i] = (uint8_t)(bits >> (56 - 8 * i));
  uint64_t length = ctx->length;
  sha256_update(ctx, pad, padlen + 8);
  ctx->length = length;
  for (int i = 0; i < 8; i++) {
    out[4 * i] = (uint8_t)(ctx->state[i] >> 24);
    out[4 * i + 1] = (uint8_t)(ctx->state[i] >> 16);
    out[4 * i + 2] = (uint8_t)(ctx->state[i] >> 8);
    out[4 * i + 3] = (uint8_t)ctx->state[i];
  }
}

void sha256_hex(const uint8_t digest[SHA256_DIGEST_SIZE], char out[SHA256_HEX_SIZE]) {
  static const char hex[] = "0123456789abcdef";
  for (int i = 0; i < SHA256_DIGEST_SIZE; i++) {
    out[2 * i] = hex[digest[i] >> 4];
    out[2 * i + 1] = hex[digest[i] & 15];
  }
  out[2 * SHA256_DIGEST_SIZE] = '\0';
}

void sha256_buffer(const void *data, size_t len, uint8_t out[SHA256_DIGEST_SIZE]) {
  struct sha256_ctx ctx;
  sha256_init(&ctx);
  sha256_update(&ctx, data, len);
  sha256_final(&ctx, out);
}

void hmac_sha256_init(struct hmac_sha256_ctx *ctx, const void *key, size_t key_len) {
  uint8_t block[64] = {0};
  if (key_len > sizeof(block))
    sha256_buffer(key, key_len, block);
  else
    memcpy(block, key, key_len);
  uint8_t pad[64];
  for (size_t i = 0; i < sizeof(pad); i++)
    pad[i] = block[i] ^ 0x36;
  sha256_init(&ctx->inner);
  sha256_update(&ctx->inner, pad, sizeof(pad));
  for (size_t i = 0; i < sizeof(pad); i++)
    pad[i] = block[i] ^ 0x5c;
  sha256_init(&ctx->outer);
  sha256_update(&ctx->outer, pad, sizeof(pad));
}

void hmac_sha256_update(struct hmac_sha256_ctx *ctx, const void *data, size_t len) {
  sha256_update(&ctx->inner, data, len);
}

void hmac_sha256_final(struct hmac_sha256_ctx *ctx, uint8_t out[SHA256_DIGEST_SIZE]) {
  uint8_t inner[SHA256_DIGEST_SIZE];
  sha256_final(&ctx->inner, inner);
  sha256_update(&ctx->outer, inner, sizeof(inner));
  sha256_final(&ctx->outer, out);
}

bool sha256_digest_equal(const uint8_t a[SHA256_DIGEST_SIZE], const uint8_t b[SHA256_DIGEST_SIZE]) {
  uint8_t diff = 0;
  for (int i = 0; i < SHA256_DIGEST_SIZE; i++)
    diff |= (uint8_t)(a[i] ^ b[i]);
  return diff == 0;
}
