/* SPDX-License-Identifier: Apache-2.0 */
/* hutch_image_pull: an image from its manifest (hutch-manifest(5)), or from
 * a registry (docker://, oci.h). */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "download.h"
#include "hutch.h"
#include "image.h"
#include "manifest.h"
#include "oci.h"
#include "paths.h"
#include "util.h"

#define DOCKER_PREFIX "docker://"

bool hutch_image_name_valid(const char *name) {
  return paths_valid_name(name);
}

void image_say(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  _cleanup_free_ char *line = xvasprintf(fmt, ap);
  va_end(ap);
  hutch_log(HUTCH_LOG_INFO, "%s", line);
}

static void phase(const struct hutch_pull_options *o, const char *label) {
  if (o->phase)
    o->phase(label, o->data);
}

static int download_dir(struct hutch_store *store, char **out, hutch_error_t *err) {
  char *dir = xasprintf("%s/downloads", hutch_store_path(store));
  if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
    hutch_error_sys(err, "rootfs store: create %s", dir);
    free(dir);
    return -1;
  }
  *out = dir;
  return 0;
}

static int pull_manifest(struct hutch_store *store, const char *ref, const struct hutch_pull_options *o,
                         struct hutch_image *out, hutch_error_t *err) {
  struct manifest m = {0};
  if (manifest_load(ref, &m, err) < 0)
    return -1;
  const char *arch = o->arch ? o->arch : manifest_host_arch();
  const char *name = o->name ? o->name : ref;
  const struct manifest_source *src = manifest_find_arch(&m, arch);
  if (src == NULL) {
    _cleanup_free_ char *have = xstrdup("");
    for (size_t i = 0; i < m.n_sources; i++) {
      char *t = xasprintf("%s%s%s", have, i ? ", " : "", m.sources[i].arch);
      free(have);
      have = t;
    }
    hutch_error_set(err, ENOENT, "%s has no download for the architecture %s", ref, arch);
    hutch_error_hint(err, "the manifest lists %s (--arch chooses one)", have);
    manifest_clear(&m);
    return -1;
  }
  _cleanup_free_ char *digest = xasprintf("sha256:%s", src->sha256);
  _cleanup_free_ char *url = xstrdup(src->url);
  manifest_clear(&m);

  /* The store keys an image by the sha256 of its tarball: the pinned digest
   * finds it without any download. */
  _cleanup_error_ hutch_error_t e = NULL;
  if (hutch_image_lookup(store, digest, out, &e) == 0) {
    hutch_image_clear(out);
    if (hutch_image_tag(store, digest, name, err) < 0 || hutch_image_lookup(store, name, out, err) < 0)
      return -1;
    return 1;
  }

  _cleanup_free_ char *dir = NULL;
  if (download_dir(store, &dir, err) < 0)
    return -1;
  _cleanup_free_ char *dest = xasprintf("%s/sha256-%s", dir, digest + 7);
  const char *base = strrchr(url, '/');
  _cleanup_free_ char *label = xasprintf("downloading %s", base ? base + 1 : url);
  struct download_request req = {
      .url = url, .dest = dest, .sha256 = digest, .progress = o->progress, .progress_data = o->data};
  phase(o, label);
  double t0 = monotonic_seconds();
  int r = download_file(&req, err);
  phase(o, NULL);
  if (r < 0)
    return hutch_error_wrap(err, "pull %s", ref);
  image_say("downloaded %s in %.1f s, sha256 verified", url, monotonic_seconds() - t0);

  _cleanup_free_ char *ilabel = xasprintf("importing %s", ref);
  struct hutch_import_options opts = {
      .name = name, .sha256 = digest, .progress = o->progress, .progress_data = o->data};
  phase(o, ilabel);
  r = hutch_image_import(store, dest, &opts, out, err);
  phase(o, NULL);
  /* The tarball is in the store now, unpacked: keeping it would double the space. */
  unlink(dest);
  if (r < 0)
    return hutch_error_wrap(err, "pull %s", ref);
  if (strcmp(out->digest, digest) != 0) {
    hutch_error_set(err, EBADMSG, "pull %s: imported as %s, not the verified %s", ref, out->digest, digest);
    return -1;
  }
  return r;
}

static bool is_docker(const char *ref) {
  return strncmp(ref, DOCKER_PREFIX, strlen(DOCKER_PREFIX)) == 0;
}

int hutch_image_pull(struct hutch_store *store, const char *ref, const struct hutch_pull_options *opts,
                     struct hutch_image *out, hutch_error_t *err) {
  static const struct hutch_pull_options none = {0};
  const struct hutch_pull_options *o = opts ? opts : &none;
  if (!is_docker(ref))
    return pull_manifest(store, ref, o, out, err);
  /* docker:// references are the OCI importer's (oci.h). */
  struct oci_pull_options oo = {
      .progress = o->progress,
      .progress_data = o->data,
      .registry = {.auth_file = o->auth_file, .tls_insecure = o->tls_insecure, .cert_dir = o->cert_dir},
  };
  phase(o, "downloading");
  int r = rootfs_pull_oci(hutch_store_path(store), ref, o->name ? o->name : ref + strlen(DOCKER_PREFIX), &oo, out, err);
  phase(o, NULL);
  return r;
}
