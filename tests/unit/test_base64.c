/* SPDX-License-Identifier: Apache-2.0 */
/* Base64 (base64.h): RFC 4648's test vectors both ways, every byte value
 * and length through a round trip, and what the decoder refuses. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "util.h"

static void vector(const char *bytes, const char *text) {
  char *got = base64_encode(bytes, strlen(bytes));
  tap_is_str(got, text, "encode \"%s\"", bytes);
  free(got);
  unsigned char out[16];
  size_t n = 99;
  bool ok = base64_decode(text, strlen(text), out, &n);
  tap_ok(ok && n == strlen(bytes) && memcmp(out, bytes, n) == 0, "decode \"%s\"", text);
}

static void refused(const char *text, const char *why) {
  unsigned char out[64];
  size_t n = 0;
  char *shown = text_escape_cstr(text);
  tap_ok(!base64_decode(text, strlen(text), out, &n), "refuse \"%s\": %s", shown, why);
  free(shown);
}

static void unpadded(const char *text, const char *want) {
  unsigned char out[16];
  size_t n = 0;
  bool ok = base64_decode(text, strlen(text), out, &n);
  tap_ok(ok && n == strlen(want) && memcmp(out, want, n) == 0, "\"%s\" without its padding decodes", text);
}

int main(void) {
  /* RFC 4648, section 10. */
  vector("", "");
  vector("f", "Zg==");
  vector("fo", "Zm8=");
  vector("foo", "Zm9v");
  vector("foob", "Zm9vYg==");
  vector("fooba", "Zm9vYmE=");
  vector("foobar", "Zm9vYmFy");

  /* The two last characters of the alphabet, and bytes that are not text. */
  char *t = base64_encode("\xfb\xff\xbf", 3);
  tap_is_str(t, "+/+/", "62 and 63 are + and /");
  free(t);
  unsigned char all[256 + 3];
  for (size_t i = 0; i < sizeof(all); i++)
    all[i] = (unsigned char)(i * 7 + 3);
  size_t bad = 0;
  for (size_t len = 0; len <= sizeof(all); len++) {
    char *text = base64_encode(all, len);
    unsigned char out[BASE64_DECODED_MAX(sizeof(all) / 3 * 4 + 8)];
    size_t n = 0;
    if (strlen(text) != (len + 2) / 3 * 4 || !base64_decode(text, strlen(text), out, &n) || n != len ||
        memcmp(out, all, len) != 0 || BASE64_DECODED_MAX(strlen(text)) < len)
      bad++;
    free(text);
  }
  tap_is_int((int)bad, 0, "every length from 0 to %zu bytes comes back whole", sizeof(all));

  unpadded("Zg", "f");
  unpadded("Zm8", "fo");
  unpadded("Zm9vYg", "foob");

  refused("Zm9v Yg==", "white space");
  refused("Zm9v\nYg==", "a line break");
  refused("Zm9vYg-_", "the URL-safe alphabet");
  refused("Zm9v\x80YmFy", "a byte beyond ASCII");
  refused("Zg=a", "data after the padding");
  refused("aG=Vs", "padding inside the text");
  refused("Zm9vY===", "three padding characters");
  refused("====", "padding alone");
  refused("Zg=", "padding that does not complete a group");
  refused("Zm9vY", "a last group of one character");
  refused("Zh==", "bits after the last byte");
  refused("Zm9=", "bits after the last two bytes");
  unsigned char out[8];
  size_t n = 0;
  tap_ok(!base64_decode("Zm9v\0YmFy", 9, out, &n), "a NUL inside the text");
  tap_ok(base64_decode("Zm9vYmFy", 4, out, &n) && n == 3 && memcmp(out, "foo", 3) == 0, "only len characters are read");
  return tap_done();
}
