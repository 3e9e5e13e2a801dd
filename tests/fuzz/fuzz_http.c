/* SPDX-License-Identifier: Apache-2.0 */
/* The head of a request to the allowlist proxy, as a sandbox sends it, and
 * the head hutch rebuilds from it for upstream. */
#include "config.h"

#include "fuzz.h"
#include "http_parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 2 * HTTP_MAX_HEAD)
    return 0;
  /* An exact-size buffer: the parser must not read past len. */
  char *buf = malloc(size ? size : 1);
  if (buf == NULL)
    abort();
  memcpy(buf, data, size);
  static struct http_request req;
  /* The proxy parses again as bytes arrive: every prefix must be safe. */
  for (size_t len = size > 64 ? size - 64 : 0; len <= size; len++) {
    enum http_parse_status st = http_parse_request(buf, len, &req);
    if (st == HTTP_PARSE_OK) {
      if (req.head_len > len)
        abort();
      size_t n = 0;
      char *up = http_upstream_head(buf, &req, &n);
      if (up && strlen(up) != n)
        abort();
      free(up);
    }
  }
  free(buf);
  return 0;
}
