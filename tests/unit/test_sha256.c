/* SHA-256 against the FIPS 180-2 test vectors, both block functions, and
 * streaming in odd-sized pieces against one-shot hashing. */
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

int main(void) {
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
