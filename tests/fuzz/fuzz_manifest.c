/* SPDX-License-Identifier: Apache-2.0 */
/* Image manifests (hutch-manifest(5)). */
#include "config.h"

#include "fuzz.h"
#include "manifest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > (1u << 20))
    return 0;
  char *text = fuzz_cstring(data, size);
  hutch_error_t err = NULL;
  struct manifest m;
  if (manifest_parse(text, "fuzz.manifest", &m, &err) == 0) {
    manifest_find_arch(&m, "amd64");
    manifest_clear(&m);
  }
  hutch_error_free(&err);
  free(text);
  return 0;
}
