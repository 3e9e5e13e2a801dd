/* SPDX-License-Identifier: Apache-2.0 */
/* The server name of a TLS ClientHello, as a sandbox sends it. */
#include "config.h"

#include "fuzz.h"
#include "tls_sni.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 2 * TLS_SNI_MAX_HELLO)
    return 0;
  unsigned char *buf = malloc(size ? size : 1);
  if (buf == NULL)
    abort();
  memcpy(buf, data, size);
  char name[256];
  /* The proxy looks again as bytes arrive: every prefix must be safe. */
  for (size_t len = size > 32 ? size - 32 : 0; len <= size; len++) {
    if (tls_sni_extract(buf, len, name) == TLS_SNI_FOUND && strnlen(name, sizeof(name)) == sizeof(name))
      abort(); /* the name must be a C string */
  }
  free(buf);
  return 0;
}
