/* SPDX-License-Identifier: Apache-2.0 */
/* What a registry (or an image archive) sends: the first byte picks the
 * parser, the rest is its input.  Documents: OCI indexes, manifests and
 * configs, Docker's manifest.json; headers: WWW-Authenticate; and image
 * references and the auth file, which a user writes but a project file may
 * carry. */
#include "config.h"

#include "fuzz.h"
#include "oci_image.h"
#include "registry.h"

static void documents(const char *json, size_t len) {
  hutch_error_t err = NULL;
  oci_doc_kind(NULL, json, len);
  oci_doc_kind(OCI_MT_INDEX, json, len);
  struct oci_descriptor *d = NULL;
  size_t n = 0;
  if (oci_parse_index(json, len, &d, &n, &err) == 0) {
    oci_select_platform(d, n, "linux", "amd64", NULL);
    oci_select_platform(d, n, "linux", "arm64", "v8");
    for (size_t i = 0; i < n; i++)
      oci_layer_media_type_ok(d[i].media_type);
    if (oci_filter_by_name(d, &n, "busybox:1", &err) < 0)
      hutch_error_free(&err);
    oci_descriptors_free(d, n);
  }
  hutch_error_free(&err);
  struct oci_manifest m;
  if (oci_parse_manifest(json, len, &m, &err) == 0)
    oci_manifest_clear(&m);
  hutch_error_free(&err);
  struct oci_config c;
  if (oci_parse_config(json, len, &c, &err) == 0) {
    oci_user_is_root(c.user ? c.user : "");
    oci_config_clear(&c);
  }
  hutch_error_free(&err);
  struct docker_save s;
  if (docker_parse_save(json, len, NULL, &s, &err) == 0)
    docker_save_clear(&s);
  hutch_error_free(&err);
  if (docker_parse_save(json, len, "busybox:latest", &s, &err) == 0)
    docker_save_clear(&s);
  hutch_error_free(&err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1 || size > OCI_MAX_DOCUMENT)
    return 0;
  uint8_t which = data[0];
  char *text = fuzz_cstring(data + 1, size - 1);
  size_t len = size - 1;
  hutch_error_t err = NULL;
  switch (which % 4) {
  case 0:
    documents(text, len);
    break;
  case 1: {
    struct registry_challenge c;
    if (registry_challenge_parse(text, &c) == 0)
      registry_challenge_clear(&c);
    break;
  }
  case 2: {
    struct registry_ref r;
    if (registry_ref_parse(text, &r, &err) == 0) {
      free(registry_ref_format(&r));
      registry_ref_clear(&r);
    }
    hutch_error_free(&err);
    char hex[SHA256_HEX_SIZE];
    oci_digest_hex(text, hex);
    oci_ref_matches(text, "busybox:latest");
    oci_ref_matches("docker.io/library/busybox:latest", text);
    oci_archive_member_name(text);
    oci_archive_marker(text);
    oci_user_is_root(text);
    break;
  }
  case 3:
    free(registry_auth_lookup(text, "docker.io"));
    free(registry_auth_lookup(text, "127.0.0.1:5000"));
    break;
  }
  free(text);
  return 0;
}
