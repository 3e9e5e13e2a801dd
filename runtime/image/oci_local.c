/* SPDX-License-Identifier: Apache-2.0 */
/* Importing an image from a file or directory (oci_import in oci.h): a
 * docker-archive, an OCI layout or a dir: copy, found by the names it
 * holds, its documents read and verified, its layers handed to plan_apply.
 * Everything in it is hostile: names are only looked up, symlinks followed
 * inside the archive or directory only. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "layer.h"
#include "oci.h"
#include "oci_image.h"
#include "oci_plan.h"
#include "oci_tar.h"
#include "store.h"
#include "util.h"

/* ---- a local image: a layout directory or an archive ------------------- */

struct source {
  const char *file;
  int dirfd; /* a layout directory, else -1 */
  int fd;    /* an archive, else -1 */
  struct tar_index tar;
  const char *blobs; /* where blobs are, by digest: "blobs/sha256/" (OCI), "" (dir:) */
  const char *want;  /* --image, or NULL */
};

/* Symlinks in a directory are followed inside it only, as the archive's
 * are (tar_index_resolve): a layout is as hostile as the archive would be. */
static int source_openat(const struct source *s, const char *member) {
  return openat2_retry(s->dirfd, member, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK, 0,
                       RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS);
}

static bool source_has(const struct source *s, const char *member) {
  if (s->dirfd >= 0) {
    _cleanup_close_ int fd = source_openat(s, member);
    struct stat st;
    return fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  }
  return tar_index_resolve(&s->tar, member) != NULL;
}

static int source_open(const struct source *s, const char *member, struct blob *b, hutch_error_t *err) {
  b->fd = -1;
  _cleanup_free_ char *clean = layer_clean_path(member);
  if (unpack_path_problem(member) != NULL)
    return hutch_error_set(err, EINVAL, "%s: the image names the file \"%s\", outside the image", s->file, member);
  if (s->dirfd >= 0) {
    int fd = source_openat(s, member);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
      int e = fd < 0 ? errno : EINVAL;
      if (fd >= 0)
        close(fd);
      struct stat lst;
      bool link = fstatat(s->dirfd, member, &lst, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(lst.st_mode);
      return hutch_error_set(err, e, "%s: open %s%s", s->file, member,
                             link ? " (a symlink that leads nowhere in the layout; links are followed inside it only)"
                                  : "");
    }
    *b = (struct blob){.fd = fd, .offset = 0, .size = (uint64_t)st.st_size};
    return 0;
  }
  const struct tar_member *m = tar_index_resolve(&s->tar, clean);
  if (m == NULL)
    return hutch_error_set(err, ENOENT, "%s: the archive has no %s%s", s->file, member,
                           tar_index_find(&s->tar, clean) ? " (a symlink that leads nowhere in the archive)" : "");
  int fd = dup(s->fd);
  if (fd < 0)
    return hutch_error_sys(err, "dup");
  *b = (struct blob){.fd = fd, .offset = m->offset, .size = m->size};
  return 0;
}

/* ---- local images ------------------------------------------------------ */

static char *blob_member(const struct source *s, const char *digest) {
  char hex[SHA256_HEX_SIZE];
  oci_digest_hex(digest, hex);
  return xasprintf("%s%s", s->blobs, hex);
}

/* Open, verify and read a small document named by a descriptor. */
static int source_document(const struct source *s, const char *what, const struct oci_descriptor *d, char **text,
                           size_t *len, hutch_error_t *err) {
  _cleanup_free_ char *member = blob_member(s, d->digest);
  struct blob b;
  if (source_open(s, member, &b, err) < 0)
    return -1;
  char hex[SHA256_HEX_SIZE];
  oci_digest_hex(d->digest, hex);
  int r = blob_verify(&b, what, hex, d->size, err);
  if (r == 0)
    r = blob_read(&b, what, text, len, err);
  blob_close(&b);
  return r;
}

/* The rest of a plan from its image manifest (p->key: the manifest's
 * digest): the config, read and verified, and the layers. */
static int plan_from_manifest(const struct source *s, struct plan *p, const char *text, size_t len,
                              hutch_error_t *err) {
  struct oci_manifest m;
  if (oci_parse_manifest(text, len, &m, err) < 0)
    return -1;
  p->manifest_digest = xasprintf("sha256:%s", p->key);
  p->config_digest = xstrdup(m.config.digest);
  _cleanup_free_ char *config = NULL;
  size_t config_len = 0;
  int r = source_document(s, "image config", &m.config, &config, &config_len, err);
  if (r == 0)
    r = oci_parse_config(config, config_len, &p->config, err);
  if (r == 0)
    r = plan_layers_from_manifest(p, &m, err);
  oci_manifest_clear(&m);
  return r;
}

/* From index.json down to one image manifest, for this host's platform. */
static int plan_oci_layout(const struct source *s, struct plan *p, hutch_error_t *err) {
  struct blob b;
  if (source_open(s, "index.json", &b, err) < 0)
    return -1;
  _cleanup_free_ char *text = NULL;
  size_t len = 0;
  int r = blob_read(&b, "index.json", &text, &len, err);
  blob_close(&b);
  if (r < 0)
    return -1;
  struct oci_descriptor *list = NULL;
  size_t n = 0;
  if (oci_parse_index(text, len, &list, &n, err) < 0)
    return hutch_error_wrap(err, "index.json");
  if (oci_filter_by_name(list, &n, s->want, err) < 0) {
    oci_descriptors_free(list, n);
    return hutch_error_wrap(err, "index.json");
  }
  struct oci_descriptor chosen = {0};
  for (int depth = 0;; depth++) {
    ssize_t i = n == 1 ? 0 : oci_pick_platform(list, n, depth ? "the image index" : "index.json", err);
    if (i < 0) {
      oci_descriptors_free(list, n);
      return -1;
    }
    chosen = list[i];
    memset(&list[i], 0, sizeof(list[i]));
    oci_descriptors_free(list, n);
    list = NULL;
    free(text);
    text = NULL;
    if (source_document(s, "image manifest", &chosen, &text, &len, err) < 0)
      goto fail;
    enum oci_doc_kind kind = oci_doc_kind(chosen.media_type, text, len);
    if (kind == OCI_DOC_MANIFEST)
      break;
    if (kind != OCI_DOC_INDEX || depth + 1 >= OCI_MAX_INDEX_DEPTH) {
      hutch_error_set(err, EINVAL, "%s is neither an image manifest nor an index", chosen.digest);
      goto fail;
    }
    if (oci_parse_index(text, len, &list, &n, err) < 0)
      goto fail;
    oci_descriptor_clear(&chosen);
  }
  oci_digest_hex(chosen.digest, p->key);
  r = plan_from_manifest(s, p, text, len, err);
  oci_descriptor_clear(&chosen);
  return r;
fail:
  oci_descriptor_clear(&chosen);
  return -1;
}

/* `docker save`: manifest.json names the config and the layers by path; the
 * config's name is its digest, and each layer's digest is either in its
 * name (blobs/sha256/HEX) or the config's diff_id (an uncompressed
 * <id>/layer.tar). */
static int plan_docker_archive(const struct source *s, struct plan *p, struct docker_save *save, hutch_error_t *err) {
  struct blob b;
  if (source_open(s, "manifest.json", &b, err) < 0)
    return -1;
  _cleanup_free_ char *text = NULL;
  size_t len = 0;
  int r = blob_read(&b, "manifest.json", &text, &len, err);
  blob_close(&b);
  if (r < 0 || docker_parse_save(text, len, s->want, save, err) < 0)
    return -1;
  _cleanup_free_ char *clean = layer_clean_path(save->config);
  const char *base = strrchr(clean, '/') ? strrchr(clean, '/') + 1 : clean;
  _cleanup_free_ char *digest = xasprintf("sha256:%.64s", base);
  char hex[SHA256_HEX_SIZE];
  if (!oci_digest_hex(digest, hex) || (strlen(base) != 64 && strcmp(base + 64, ".json") != 0)) {
    hutch_error_set(err, EINVAL, "manifest.json names the config \"%s\", which is not named by its digest",
                    save->config);
    return hutch_error_hint(err, "hutch verifies every part of an image: save it again with `docker save`");
  }
  if (source_open(s, save->config, &b, err) < 0)
    return -1;
  free(text);
  text = NULL;
  r = blob_verify(&b, "image config", hex, 0, err);
  if (r == 0)
    r = blob_read(&b, "image config", &text, &len, err);
  blob_close(&b);
  if (r < 0 || oci_parse_config(text, len, &p->config, err) < 0)
    return -1;
  memcpy(p->key, hex, sizeof(p->key));
  p->config_digest = xasprintf("sha256:%s", hex);
  for (size_t i = 0; i < save->n_layers; i++) {
    _cleanup_free_ char *lc = layer_clean_path(save->layers[i]);
    char lhex[SHA256_HEX_SIZE];
    _cleanup_free_ char *named = strncmp(lc, "blobs/sha256/", 13) == 0 ? xasprintf("sha256:%s", lc + 13) : NULL;
    if (named && oci_digest_hex(named, lhex)) {
      plan_add_layer(p, lhex, 0);
    } else if (i < p->config.n_diff_ids && oci_digest_hex(p->config.diff_ids[i], lhex)) {
      plan_add_layer(p, lhex, 0);
    } else {
      hutch_error_set(err, EINVAL, "layer %zu (%s) has no digest to check it against", i + 1, save->layers[i]);
      return hutch_error_hint(err, "the config's rootfs.diff_ids must list one sha256 digest per layer");
    }
  }
  return 0;
}

/* A `dir:` copy (podman save --format docker-dir, skopeo copy dir:):
 * manifest.json is the image manifest itself, blobs are files named by
 * their hex digest, and the manifest's own digest keys the entry. */
static int plan_dir_copy(const struct source *s, struct plan *p, hutch_error_t *err) {
  if (s->want) {
    hutch_error_set(err, EINVAL, "a dir: copy holds one image; --image %s names none of it", s->want);
    return hutch_error_hint(err, "leave --image out");
  }
  struct blob b;
  if (source_open(s, "manifest.json", &b, err) < 0)
    return -1;
  _cleanup_free_ char *text = NULL;
  size_t len = 0;
  int r = blob_hash(&b, p->key, err);
  if (r == 0)
    r = blob_read(&b, "manifest.json", &text, &len, err);
  blob_close(&b);
  if (r < 0)
    return -1;
  enum oci_doc_kind kind = oci_doc_kind(NULL, text, len);
  if (kind == OCI_DOC_INDEX) {
    hutch_error_set(err, ENOTSUP, "manifest.json is an image index (a dir: copy of several platforms)");
    return hutch_error_hint(err, "copy one platform's image (skopeo copy without --all), or save it as an OCI "
                                 "layout (skopeo copy --all ... oci:DIR)");
  }
  if (kind != OCI_DOC_MANIFEST) {
    hutch_error_set(err, EINVAL,
                    "it has manifest.json, as an image archive has, but neither a `docker save` manifest (an "
                    "array) nor an image manifest; nothing was unpacked");
    return hutch_error_hint(err, "save the image again (podman save, skopeo copy, docker save); a root filesystem "
                                 "tarball must not have manifest.json, index.json or oci-layout at its top");
  }
  return plan_from_manifest(s, p, text, len, err) < 0 ? hutch_error_wrap(err, "manifest.json") : 0;
}

/* manifest.json: an array for `docker save`, an object for a dir: copy. */
static bool manifest_is_array(const struct source *s) {
  struct blob b;
  char c = '\0';
  hutch_error_t ignored = NULL;
  if (source_open(s, "manifest.json", &b, &ignored) < 0) {
    hutch_error_free(&ignored);
    return true; /* the docker path reports it */
  }
  for (uint64_t i = 0; i < b.size && i < 4096; i++) {
    if (pread(b.fd, &c, 1, (off_t)(b.offset + i)) != 1 || !strchr(" \t\r\n", c))
      break;
  }
  blob_close(&b);
  return c != '{';
}

struct local_ctx {
  const struct source *s;
  const struct docker_save *save; /* NULL for an OCI layout */
};

static int local_layer(void *data, const struct plan *p, size_t i, struct blob *out, hutch_error_t *err) {
  struct local_ctx *c = data;
  _cleanup_free_ char *digest = xasprintf("sha256:%s", p->layer_hex[i]);
  _cleanup_free_ char *member = c->save ? xstrdup(c->save->layers[i]) : blob_member(c->s, digest);
  if (source_open(c->s, member, out, err) < 0)
    return -1;
  if (blob_verify(out, "layer", p->layer_hex[i], p->layer_size[i], err) < 0) {
    blob_close(out);
    return -1;
  }
  return 0;
}

int oci_import(struct hutch_store *store, const char *file, int fd, const struct hutch_import_options *opts,
               char hex[SHA256_HEX_SIZE], hutch_error_t *err) {
  struct stat st;
  if (fstat(fd, &st) < 0)
    return hutch_error_sys(err, "stat");
  struct source s = {.file = file, .dirfd = -1, .fd = -1, .blobs = "blobs/sha256/", .want = opts->image};
  if (S_ISDIR(st.st_mode)) {
    s.dirfd = fd;
  } else {
    int r = tar_index_read(fd, &s.tar, err);
    if (r <= 0)
      return r < 0 ? hutch_error_wrap(err, "an image archive (it has manifest.json, index.json or oci-layout)")
                   : OCI_NOT_AN_IMAGE;
    s.fd = fd;
  }
  struct plan p = {.source = file};
  struct docker_save save = {0};
  int r;
  /* Docker 25 and later write both index.json and manifest.json: the OCI
   * layout is the one that names each blob by its digest. */
  if (source_has(&s, "index.json")) {
    p.format = s.dirfd >= 0 ? "oci-layout" : "oci-archive";
    r = plan_oci_layout(&s, &p, err);
  } else if (source_has(&s, "manifest.json") && manifest_is_array(&s)) {
    p.format = "docker-archive";
    r = plan_docker_archive(&s, &p, &save, err);
  } else if (source_has(&s, "manifest.json")) {
    p.format = s.dirfd >= 0 ? "dir" : "dir-archive";
    s.blobs = "";
    r = plan_dir_copy(&s, &p, err);
  } else if (source_has(&s, "oci-layout") || tar_index_find(&s.tar, "manifest.json") ||
             tar_index_find(&s.tar, "index.json")) {
    /* Never a plain tree: what marks an image archive is there, the rest not. */
    r = hutch_error_set(err, EINVAL, "an image archive (it has %s) without %s",
                        source_has(&s, "oci-layout") ? "oci-layout" : "manifest.json or index.json",
                        "a readable index.json (OCI layout) or manifest.json (docker save)");
    hutch_error_hint(err, "save the image again (podman save, skopeo copy, docker save)");
  } else {
    tar_index_clear(&s.tar);
    return OCI_NOT_AN_IMAGE;
  }
  if (r == 0) {
    struct local_ctx ctx = {.s = &s, .save = p.manifest_digest ? NULL : &save};
    r = plan_apply(store, &p, local_layer, &ctx, opts->progress, opts->progress_data, err);
    if (r >= 0)
      memcpy(hex, p.key, SHA256_HEX_SIZE);
  }
  plan_clear(&p);
  docker_save_clear(&save);
  tar_index_clear(&s.tar);
  return r;
}
