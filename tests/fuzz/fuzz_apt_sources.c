/* SPDX-License-Identifier: Apache-2.0 */
/* apt's source lists of an image (`hutch rootfs build` reads them from the
 * base image to know which hosts a build may reach), in both formats. */
#include "config.h"

#include "apt_sources.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > (1u << 20))
    return 0;
  char *text = fuzz_cstring(data, size);
  struct apt_source *list = NULL;
  size_t n = 0;
  apt_sources_parse(text, false, &list, &n);
  apt_sources_parse(text, true, &list, &n);
  for (size_t i = 0; i < n; i++)
    free(apt_uri_host(list[i].uri));
  apt_sources_mirror(list, n, "bookworm");
  apt_sources_free(list, n);
  free(apt_uri_host(text));
  free(text);
  return 0;
}
