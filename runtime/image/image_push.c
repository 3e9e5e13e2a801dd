/* SPDX-License-Identifier: Apache-2.0 */
/* hutch_image_push (`hutch rootfs push NAME docker://REF`): the image as
 * `hutch rootfs export` writes it (one uncompressed layer, its config and
 * an OCI manifest: image_export.h), uploaded blob by blob and named by
 * its manifest under REF's tag. */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <sys/stat.h>

#include "hutch.h"
#include "image.h"
#include "image_export.h"
#include "oci_image.h"
#include "registry.h"
#include "util.h"

static void phase(const struct hutch_push_options *o, const char *label) {
  if (o->phase)
    o->phase(label, o->data);
}

int hutch_image_push(struct hutch_store *store, const char *name_or_digest, const char *ref_text,
                     const struct hutch_push_options *opts, char digest_out[72], hutch_error_t *err) {
  static const struct hutch_push_options none;
  const struct hutch_push_options *o = opts ? opts : &none;
  struct registry_ref ref;
  if (registry_ref_parse(ref_text, &ref, err) < 0)
    return -1;
  int ret = -1;
  struct registry_client *client = NULL;
  struct export_parts p = {.layer_fd = -1};
  _cleanup_free_ char *pretty = registry_ref_format(&ref);
  _cleanup_free_ char *near = NULL, *manifest = NULL, *dir = NULL, *layer = NULL, *config = NULL;
  bool sent_layer = false, sent_config = false;
  double t0, t1;
  char mhex[SHA256_HEX_SIZE];
  int r;
  if (ref.digest) {
    hutch_error_set(err, EINVAL, "a push names a tag, not a digest (%s)", ref_text);
    hutch_error_hint(err, "write docker://HOST/REPO:TAG; the digest is printed once pushed");
    goto out;
  }
  if (registry_client_new(&ref,
                          &(struct registry_options){
                              .auth_file = o->auth_file, .tls_insecure = o->tls_insecure, .cert_dir = o->cert_dir},
                          &client, err) < 0)
    goto out;
  /* The layer is written in the store's file system, unnamed. */
  dir = xasprintf("%s/downloads", hutch_store_path(store));
  if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
    hutch_error_sys(err, "rootfs store: create %s", dir);
    goto out;
  }
  near = xasprintf("%s/push", dir);
  phase(o, "exporting");
  t0 = monotonic_seconds();
  r = image_export_parts(store, name_or_digest, near, &p, err);
  phase(o, NULL);
  if (r < 0)
    goto out;
  t1 = monotonic_seconds();
  manifest = image_export_manifest(&p, mhex);
  layer = xasprintf("sha256:%s", p.layer_hex);
  config = xasprintf("sha256:%s", p.config_hex);
  phase(o, "uploading");
  r = registry_put_blob(client, layer, NULL, p.layer_fd, p.layer_size, o->progress, o->data, &sent_layer, err);
  if (r == 0)
    r = registry_put_blob(client, config, p.config, -1, strlen(p.config), NULL, NULL, &sent_config, err);
  if (r == 0)
    r = registry_put_manifest(client, ref.tag, OCI_MT_MANIFEST, manifest, mhex, err);
  phase(o, NULL);
  if (r < 0)
    goto out;
  hutch_debug("pushed %s to %s: layer %" PRIu64 " bytes (%s), exported in %.1f s, sent in %.1f s", name_or_digest,
              pretty, p.layer_size, sent_layer ? "uploaded" : "already there", t1 - t0, monotonic_seconds() - t1);
  snprintf(digest_out, 72, "sha256:%s", mhex);
  ret = 0;
out:
  if (ret < 0)
    hutch_error_wrap(err, "push %s to %s", name_or_digest, pretty);
  image_export_parts_clear(&p);
  registry_client_free(client);
  registry_ref_clear(&ref);
  return ret;
}
