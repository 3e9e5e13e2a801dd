/* SPDX-License-Identifier: Apache-2.0 */
/* SHA-256 against the FIPS 180-2 test vectors, both block functions, and
 * streaming in odd-sized pieces against one-shot hashing; HMAC-SHA256
 * against the RFC 4231 test cases. */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sha256.h"
#include "tap.h"

static void hex_of(const void *data, size_t len, char out[SHA256_HEX_SIZE]) {
  uint8_t d[SHA256_DIGEST_SIZE];
  sha256_buffer(data, len, d);
  sha256_hex(d, out);
}

static void check_vectors(const char *impl) {
  char hex[SHA256_HEX_SIZE];

  hex_of("", 0, hex);
  tap_is_str(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "%s: empty message", impl);

  hex_of("abc", 3, hex);
  tap_is_str(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", "%s: \"abc\"", impl);

  const char *m448 = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  hex_of(m448, strlen(m448), hex);
  tap_is_str(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1", "%s: 448-bit message", impl);

  /* One million 'a', fed in uneven pieces to exercise the buffering. */
  char chunk[1000];
  memset(chunk, 'a', sizeof(chunk));
  struct sha256_ctx ctx;
  sha256_init(&ctx);
  size_t left = 1000000, step = 1;
  while (left > 0) {
    size_t n = step < left ? step : left;
    if (n > sizeof(chunk))
      n = sizeof(chunk);
    sha256_update(&ctx, chunk, n);
    left -= n;
    step = step * 7 % 997 + 1;
  }
  uint8_t d[SHA256_DIGEST_SIZE];
  sha256_final(&ctx, d);
  sha256_hex(d, hex);
  tap_is_str(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0", "%s: one million 'a'", impl);
}

/* RFC 4231, section 4: test cases 1-7 (case 5 compares the first 128 bits,
 * as the RFC gives only those). */
static void check_hmac(void) {
  uint8_t k0b[20], kaa20[20], k25[25], k0c[20], kaa131[131], ddd[50], dcd[50];
  memset(k0b, 0x0b, sizeof(k0b));
  memset(kaa20, 0xaa, sizeof(kaa20));
  for (size_t i = 0; i < sizeof(k25); i++)
    k25[i] = (uint8_t)(i + 1);
  memset(k0c, 0x0c, sizeof(k0c));
  memset(kaa131, 0xaa, sizeof(kaa131));
  memset(ddd, 0xdd, sizeof(ddd));
  memset(dcd, 0xcd, sizeof(dcd));
  static const char big_data[] = "This is a test using a larger than block-size key and a larger than block-size data. "
                                 "The key needs to be hashed before being used by the HMAC algorithm.";
  static const char big_key_data[] = "Test Using Larger Than Block-Size Key - Hash Key First";
  const struct {
    const void *key;
    size_t key_len;
    const void *data;
    size_t data_len;
    const char *want;
  } cases[] = {
      {k0b, sizeof(k0b), "Hi There", 8, "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"},
      {"Jefe", 4, "what do ya want for nothing?", 28,
       "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"},
      {kaa20, sizeof(kaa20), ddd, sizeof(ddd), "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe"},
      {k25, sizeof(k25), dcd, sizeof(dcd), "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b"},
      {k0c, sizeof(k0c), "Test With Truncation", 20, "a3b6167473100ee06e0c796c2955552b"},
      {kaa131, sizeof(kaa131), big_key_data, strlen(big_key_data),
       "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"},
      {kaa131, sizeof(kaa131), big_data, strlen(big_data),
       "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2"},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    uint8_t mac[SHA256_DIGEST_SIZE];
    char hex[SHA256_HEX_SIZE];
    struct hmac_sha256_ctx ctx;
    hmac_sha256_init(&ctx, cases[i].key, cases[i].key_len);
    /* In two pieces: the streaming interface is what the cache uses. */
    size_t half = cases[i].data_len / 2;
    hmac_sha256_update(&ctx, cases[i].data, half);
    hmac_sha256_update(&ctx, (const char *)cases[i].data + half, cases[i].data_len - half);
    hmac_sha256_final(&ctx, mac);
    sha256_hex(mac, hex);
    hex[strlen(cases[i].want)] = '\0';
    tap_is_str(hex, cases[i].want, "HMAC-SHA256: RFC 4231 test case %zu", i + 1);
  }
  uint8_t a[SHA256_DIGEST_SIZE] = {0}, b[SHA256_DIGEST_SIZE] = {0};
  tap_ok(sha256_digest_equal(a, b), "equal digests compare equal");
  b[SHA256_DIGEST_SIZE - 1] = 1;
  tap_ok(!sha256_digest_equal(a, b), "digests differing in the last byte compare unequal");
}

int main(void) {
  check_hmac();
  bool accel = sha256_set_accel(true);
  check_vectors(accel ? "accelerated" : "portable (no CPU extensions)");
  sha256_set_accel(false);
  check_vectors("portable");

  /* Padding edges: lengths around one and two blocks, every split point. */
  uint8_t data[200];
  for (size_t i = 0; i < sizeof(data); i++)
    data[i] = (uint8_t)(i * 131 + 7);
  int mismatches = 0;
  for (size_t len = 0; len <= 130; len++) {
    uint8_t ref[SHA256_DIGEST_SIZE], got[SHA256_DIGEST_SIZE];
    sha256_set_accel(false);
    sha256_buffer(data, len, ref);
    sha256_set_accel(true);
    for (size_t split = 0; split <= len; split++) {
      struct sha256_ctx ctx;
      sha256_init(&ctx);
      sha256_update(&ctx, data, split);
      sha256_update(&ctx, data + split, len - split);
      sha256_final(&ctx, got);
      if (memcmp(ref, got, sizeof(ref)) != 0)
        mismatches++;
    }
  }
  tap_is_int(mismatches, 0, "streamed and one-shot digests agree for lengths 0..130 at every split");

  /* A larger random buffer through both block functions. */
  size_t big = 1 << 20;
  uint8_t *buf = malloc(big);
  uint32_t x = 2463534242u;
  for (size_t i = 0; i < big; i++) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    buf[i] = (uint8_t)x;
  }
  uint8_t a[SHA256_DIGEST_SIZE], b[SHA256_DIGEST_SIZE];
  sha256_set_accel(false);
  sha256_buffer(buf, big - 3, a);
  sha256_set_accel(true);
  sha256_buffer(buf, big - 3, b);
  tap_ok(memcmp(a, b, sizeof(a)) == 0, "portable and accelerated block functions agree on 1 MiB");
  free(buf);

  char hex[SHA256_HEX_SIZE];
  uint8_t ff[SHA256_DIGEST_SIZE];
  memset(ff, 0xf0, sizeof(ff));
  sha256_hex(ff, hex);
  tap_is_int(strlen(hex), 64, "hex form is 64 characters");
  tap_ok(strspn(hex, "f0") == 64 && hex[0] == 'f' && hex[1] == '0', "hex form is lower case, high nibble first");
  return tap_done();
}
