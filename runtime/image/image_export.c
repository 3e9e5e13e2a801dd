/* SPDX-License-Identifier: Apache-2.0 */
/* `hutch rootfs export`: an image of the store written as an archive that
 * podman, skopeo and docker load (hutch_image_export in hutch.h).
 *
 * The image becomes one layer: its whole tree as it shows in a sandbox (a
 * built image's layers merged, whiteouts applied), written as an
 * uncompressed tar by a child that is root in a user namespace with the
 * caller's id maps, the ones the store's files were unpacked with: it
 * reads every file whatever its owner, and the owners it sees are the
 * image's own ids.  The tree is never followed through a symlink.  The
 * layer is then hashed, and its config, manifest and the archive around
 * them are written here. */
#include "config.h"

#include <cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "archive_dl.h"
#include "hutch.h"
#include "idmap.h"
#include "image_export.h"
#include "image_layers.h"
#include "oci_image.h"
#include "request.h"
#include "sha256.h"
#include "util.h"

#define EXPORT_MAX_DEPTH 256
#define COPY_CHUNK (256 * 1024)

/* ---- the layer, written in the child ---------------------------------- */

struct layer_ctx {
  const char *const *trees; /* top first */
  int out;                  /* the layer file */
};

struct names {
  char **v;
  size_t n;
};

static void collect(const char *path, const char *name, void *data) {
  (void)path;
  struct names *n = data;
  n->v = xrealloc(n->v, (n->n + 1) * sizeof(*n->v));
  n->v[n->n++] = xstrdup(name);
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static int write_file_data(struct archive *a, const char *path, const char *rel, hutch_error_t *err) {
  _cleanup_close_ int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0)
    return hutch_error_sys(err, "export: open /%s", rel);
  _cleanup_free_ char *buf = xmalloc(COPY_CHUNK);
  for (;;) {
    ssize_t n = read(fd, buf, COPY_CHUNK);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return hutch_error_sys(err, "export: read /%s", rel);
    if (n == 0)
      return 0;
    if (ARCHIVE(archive_write_data)(a, buf, (size_t)n) != n)
      return hutch_error_set(err, ARCHIVE(archive_errno)(a), "export: write /%s: %s", rel,
                             ARCHIVE(archive_error_string)(a));
  }
}

/* Extended attributes go along (file capabilities, user.*) but for the ones
 * hutch's own layers use or another machine could not take: overlayfs's
 * (user.overlay.*, trusted.*) and an SELinux label of this host. */
static void add_xattrs(struct archive_entry *e, const char *path) {
  char names[4096];
  ssize_t len = llistxattr(path, names, sizeof(names));
  if (len <= 0)
    return;
  _cleanup_free_ char *value = xmalloc(XATTR_SIZE_MAX);
  for (const char *name = names; name < names + len; name += strlen(name) + 1) {
    if (strncmp(name, "trusted.", 8) == 0 || strncmp(name, "user.overlay.", 13) == 0 ||
        strcmp(name, "security.selinux") == 0)
      continue;
    ssize_t n = lgetxattr(path, name, value, XATTR_SIZE_MAX);
    if (n >= 0)
      ARCHIVE(archive_entry_xattr_add_entry)(e, name, value, (size_t)n);
  }
}

struct walk {
  struct archive *a;
  struct archive_entry_linkresolver *links;
  const char *const *trees;
  uint64_t entries;
};

/* One entry: directories, regular files (hard links kept as such within
 * the tree) and symlinks; an image holds nothing else (hutch drops device
 * nodes, fifos and sockets when it imports). */
static int walk_dir(struct walk *w, const char *rel, int depth, hutch_error_t *err);

static int walk_entry(struct walk *w, const char *rel, int depth, hutch_error_t *err) {
  _cleanup_free_ char *path = image_layers_path(w->trees, rel);
  struct stat st;
  if (path == NULL || lstat(path, &st) < 0)
    return 0; /* hidden, or gone */
  if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode))
    return 0;
  struct archive_entry *e = ARCHIVE(archive_entry_new)();
  if (e == NULL)
    abort();
  ARCHIVE(archive_entry_copy_stat)(e, &st);
  ARCHIVE(archive_entry_set_pathname)(e, rel);
  add_xattrs(e, path);
  int ret = 0;
  if (S_ISLNK(st.st_mode)) {
    char target[PATH_MAX];
    ssize_t n = readlink(path, target, sizeof(target) - 1);
    if (n < 0) {
      ret = hutch_error_sys(err, "export: readlink /%s", rel);
      goto out;
    }
    target[n] = '\0';
    ARCHIVE(archive_entry_set_symlink)(e, target);
    ARCHIVE(archive_entry_set_size)(e, 0);
  }
  if (S_ISREG(st.st_mode)) {
    struct archive_entry *spare = NULL;
    ARCHIVE(archive_entry_linkify)(w->links, &e, &spare);
    if (spare)
      ARCHIVE(archive_entry_free)(spare);
    if (e == NULL)
      return 0; /* not with tar's strategy: an entry is never held back */
  }
  if (ARCHIVE(archive_write_header)(w->a, e) < ARCHIVE_WARN) {
    ret =
        hutch_error_set(err, ARCHIVE(archive_errno)(w->a), "export: /%s: %s", rel, ARCHIVE(archive_error_string)(w->a));
    goto out;
  }
  w->entries++;
  if (S_ISREG(st.st_mode) && ARCHIVE(archive_entry_size)(e) > 0)
    ret = write_file_data(w->a, path, rel, err);
  if (ret == 0 && S_ISDIR(st.st_mode))
    ret = walk_dir(w, rel, depth + 1, err);
out:
  ARCHIVE(archive_entry_free)(e);
  return ret;
}

static int walk_dir(struct walk *w, const char *rel, int depth, hutch_error_t *err) {
  if (depth > EXPORT_MAX_DEPTH)
    return hutch_error_set(err, ELOOP, "export: /%s is more than %d directories deep", rel, EXPORT_MAX_DEPTH);
  struct names names = {0};
  image_layers_list(w->trees, rel, collect, &names);
  /* Sorted: the same tree gives the same layer, byte for byte. */
  if (names.n)
    qsort(names.v, names.n, sizeof(*names.v), cmp_str);
  int ret = 0;
  for (size_t i = 0; i < names.n; i++) {
    if (ret == 0) {
      _cleanup_free_ char *child = rel[0] ? xasprintf("%s/%s", rel, names.v[i]) : xstrdup(names.v[i]);
      ret = walk_entry(w, child, depth, err);
    }
    free(names.v[i]);
  }
  free(names.v);
  return ret;
}

static int layer_child(void *data, hutch_error_t *err) {
  struct layer_ctx *c = data;
  struct walk w = {.trees = c->trees};
  w.a = ARCHIVE(archive_write_new)();
  w.links = ARCHIVE(archive_entry_linkresolver_new)();
  if (w.a == NULL || w.links == NULL)
    abort();
  ARCHIVE(archive_write_set_format_pax_restricted)(w.a);
  ARCHIVE(archive_entry_linkresolver_set_strategy)(w.links, ARCHIVE_FORMAT_TAR_PAX_RESTRICTED);
  int ret = -1;
  if (ARCHIVE(archive_write_open_fd)(w.a, c->out) != ARCHIVE_OK) {
    hutch_error_set(err, ARCHIVE(archive_errno)(w.a), "export: %s", ARCHIVE(archive_error_string)(w.a));
    goto out;
  }
  if (walk_dir(&w, "", 0, err) < 0)
    goto out;
  if (ARCHIVE(archive_write_close)(w.a) != ARCHIVE_OK) {
    hutch_error_set(err, ARCHIVE(archive_errno)(w.a), "export: %s", ARCHIVE(archive_error_string)(w.a));
    goto out;
  }
  ret = 0;
out:
  ARCHIVE(archive_entry_linkresolver_free)(w.links);
  ARCHIVE(archive_write_free)(w.a);
  return ret;
}

/* ---- the archive around it -------------------------------------------- */

static int hash_fd(int fd, char hex[SHA256_HEX_SIZE], uint64_t *size, hutch_error_t *err) {
  _cleanup_free_ char *buf = xmalloc(COPY_CHUNK);
  struct sha256_ctx ctx;
  sha256_init(&ctx);
  uint64_t done = 0;
  for (;;) {
    ssize_t n = pread(fd, buf, COPY_CHUNK, (off_t)done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return hutch_error_sys(err, "export: read the layer");
    if (n == 0)
      break;
    sha256_update(&ctx, buf, (size_t)n);
    done += (uint64_t)n;
  }
  uint8_t d[SHA256_DIGEST_SIZE];
  sha256_final(&ctx, d);
  sha256_hex(d, hex);
  *size = done;
  return 0;
}

static void text_hex(const char *text, char hex[SHA256_HEX_SIZE]) {
  uint8_t d[SHA256_DIGEST_SIZE];
  sha256_buffer(text, strlen(text), d);
  sha256_hex(d, hex);
}

static int member_header(struct archive *a, const char *name, uint64_t size, hutch_error_t *err) {
  struct archive_entry *e = ARCHIVE(archive_entry_new)();
  if (e == NULL)
    abort();
  bool dir = name[strlen(name) - 1] == '/';
  struct stat st = {.st_mode = dir ? S_IFDIR | 0755 : S_IFREG | 0644, .st_size = dir ? 0 : (off_t)size};
  ARCHIVE(archive_entry_copy_stat)(e, &st);
  ARCHIVE(archive_entry_set_pathname)(e, name);
  int r = ARCHIVE(archive_write_header)(a, e);
  ARCHIVE(archive_entry_free)(e);
  if (r < ARCHIVE_WARN)
    return hutch_error_set(err, ARCHIVE(archive_errno)(a), "export: %s: %s", name, ARCHIVE(archive_error_string)(a));
  return 0;
}

static int member_text(struct archive *a, const char *name, const char *text, hutch_error_t *err) {
  size_t len = strlen(text);
  if (member_header(a, name, len, err) < 0)
    return -1;
  if (len && ARCHIVE(archive_write_data)(a, text, len) != (la_ssize_t)len)
    return hutch_error_set(err, ARCHIVE(archive_errno)(a), "export: %s: %s", name, ARCHIVE(archive_error_string)(a));
  return 0;
}

static int member_fd(struct archive *a, const char *name, int fd, uint64_t size, hutch_error_t *err) {
  if (member_header(a, name, size, err) < 0)
    return -1;
  _cleanup_free_ char *buf = xmalloc(COPY_CHUNK);
  uint64_t done = 0;
  while (done < size) {
    ssize_t n = pread(fd, buf, size - done < COPY_CHUNK ? (size_t)(size - done) : COPY_CHUNK, (off_t)done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return n < 0 ? hutch_error_sys(err, "export: read the layer") : hutch_error_set(err, EIO, "export: short layer");
    if (ARCHIVE(archive_write_data)(a, buf, (size_t)n) != n)
      return hutch_error_set(err, ARCHIVE(archive_errno)(a), "export: %s: %s", name, ARCHIVE(archive_error_string)(a));
    done += (uint64_t)n;
  }
  return 0;
}

static char *print_json(cJSON *j) {
  char *s = cJSON_PrintUnformatted(j);
  cJSON_Delete(j);
  if (s == NULL)
    abort();
  char *copy = xstrdup(s);
  cJSON_free(s);
  return copy;
}

static char *config_json(const struct hutch_image *img, const char *layer_hex) {
  const char *os, *arch, *variant;
  oci_host_platform(&os, &arch, &variant);
  cJSON *j = cJSON_CreateObject();
  cJSON_AddStringToObject(j, "architecture", arch);
  if (variant)
    cJSON_AddStringToObject(j, "variant", variant);
  cJSON_AddStringToObject(j, "os", os);
  cJSON *c = cJSON_AddObjectToObject(j, "config");
  if (img->env && img->env[0])
    cJSON_AddItemToObject(
        c, "Env",
        cJSON_CreateStringArray((const char *const *)img->env, (int)strv_length((const char *const *)img->env)));
  if (img->workdir)
    cJSON_AddStringToObject(c, "WorkingDir", img->workdir);
  if (img->user)
    cJSON_AddStringToObject(c, "User", img->user);
  cJSON *rootfs = cJSON_AddObjectToObject(j, "rootfs");
  cJSON_AddStringToObject(rootfs, "type", "layers");
  _cleanup_free_ char *diff = xasprintf("sha256:%s", layer_hex);
  cJSON_AddItemToArray(cJSON_AddArrayToObject(rootfs, "diff_ids"), cJSON_CreateString(diff));
  cJSON *h = cJSON_CreateObject();
  _cleanup_free_ char *by = xasprintf("hutch rootfs export %s", img->digest);
  cJSON_AddStringToObject(h, "created_by", by);
  cJSON_AddItemToArray(cJSON_AddArrayToObject(j, "history"), h);
  return print_json(j);
}

static cJSON *descriptor(const char *media_type, const char *hex, uint64_t size) {
  cJSON *d = cJSON_CreateObject();
  cJSON_AddStringToObject(d, "mediaType", media_type);
  _cleanup_free_ char *digest = xasprintf("sha256:%s", hex);
  cJSON_AddStringToObject(d, "digest", digest);
  cJSON_AddNumberToObject(d, "size", (double)size);
  return d;
}

/* The name other tools give the image: localhost/NAME[:latest], when NAME
 * is a valid reference (lower case); NULL for an unnamed image. */
static char *export_ref(const struct hutch_image *img) {
  const char *name = img->name;
  if (name == NULL || strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789._-:") != strlen(name) ||
      strchr(name, ':') != strrchr(name, ':'))
    return NULL;
  return strchr(name, ':') ? xasprintf("localhost/%s", name) : xasprintf("localhost/%s:latest", name);
}

char *image_export_manifest(const struct export_parts *p, char hex[SHA256_HEX_SIZE]) {
  cJSON *m = cJSON_CreateObject();
  cJSON_AddNumberToObject(m, "schemaVersion", 2);
  cJSON_AddStringToObject(m, "mediaType", OCI_MT_MANIFEST);
  cJSON_AddItemToObject(m, "config",
                        descriptor("application/vnd.oci.image.config.v1+json", p->config_hex, strlen(p->config)));
  cJSON_AddItemToArray(cJSON_AddArrayToObject(m, "layers"),
                       descriptor("application/vnd.oci.image.layer.v1.tar", p->layer_hex, p->layer_size));
  char *manifest = print_json(m);
  text_hex(manifest, hex);
  return manifest;
}

static int write_oci(struct archive *a, const struct export_parts *p, hutch_error_t *err) {
  char mhex[SHA256_HEX_SIZE];
  _cleanup_free_ char *manifest = image_export_manifest(p, mhex);
  cJSON *idx = cJSON_CreateObject();
  cJSON_AddNumberToObject(idx, "schemaVersion", 2);
  cJSON_AddStringToObject(idx, "mediaType", OCI_MT_INDEX);
  cJSON *d = descriptor(OCI_MT_MANIFEST, mhex, strlen(manifest));
  if (p->ref)
    cJSON_AddStringToObject(cJSON_AddObjectToObject(d, "annotations"), "org.opencontainers.image.ref.name", p->ref);
  cJSON_AddItemToArray(cJSON_AddArrayToObject(idx, "manifests"), d);
  _cleanup_free_ char *index = print_json(idx);
  _cleanup_free_ char *lname = xasprintf("blobs/sha256/%s", p->layer_hex);
  _cleanup_free_ char *cname = xasprintf("blobs/sha256/%s", p->config_hex);
  _cleanup_free_ char *mname = xasprintf("blobs/sha256/%s", mhex);
  /* The directories too: rootless skopeo and podman unpack the archive and
   * fail on a directory they had to make themselves. */
  if (member_header(a, "blobs/", 0, err) < 0 || member_header(a, "blobs/sha256/", 0, err) < 0 ||
      member_text(a, "oci-layout", "{\"imageLayoutVersion\":\"1.0.0\"}", err) < 0 ||
      member_fd(a, lname, p->layer_fd, p->layer_size, err) < 0 || member_text(a, cname, p->config, err) < 0 ||
      member_text(a, mname, manifest, err) < 0 || member_text(a, "index.json", index, err) < 0)
    return -1;
  return 0;
}

/* `docker save`'s layout as podman writes it: <diff_id>.tar, <config>.json. */
static int write_docker(struct archive *a, const struct export_parts *p, hutch_error_t *err) {
  _cleanup_free_ char *lname = xasprintf("%s.tar", p->layer_hex);
  _cleanup_free_ char *cname = xasprintf("%s.json", p->config_hex);
  cJSON *arr = cJSON_CreateArray();
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "Config", cname);
  cJSON *tags = cJSON_AddArrayToObject(o, "RepoTags");
  if (p->ref)
    cJSON_AddItemToArray(tags, cJSON_CreateString(p->ref));
  cJSON_AddItemToArray(cJSON_AddArrayToObject(o, "Layers"), cJSON_CreateString(lname));
  cJSON_AddItemToArray(arr, o);
  _cleanup_free_ char *manifest = print_json(arr);
  if (member_fd(a, lname, p->layer_fd, p->layer_size, err) < 0 || member_text(a, cname, p->config, err) < 0 ||
      member_text(a, "manifest.json", manifest, err) < 0)
    return -1;
  return 0;
}

static int open_beside(const char *file, char **tmp_path, hutch_error_t *err) {
  _cleanup_free_ char *copy = xstrdup(file);
  _cleanup_free_ char *dir = xstrdup(dirname(copy));
  *tmp_path = xasprintf("%s/.hutch-export-XXXXXX", dir);
  int fd = mkostemp(*tmp_path, O_CLOEXEC);
  if (fd < 0) {
    int e = errno;
    free(*tmp_path);
    *tmp_path = NULL;
    hutch_error_set(err, e, "export: create a file in %s", dir);
    return -1;
  }
  return fd;
}

int image_export_parts(struct hutch_store *store, const char *name_or_digest, const char *near_file,
                       struct export_parts *p, hutch_error_t *err) {
  *p = (struct export_parts){.layer_fd = -1};
  if (archive_dl_load(err) < 0)
    return hutch_error_wrap(err, "export");
  struct hutch_image img = {0};
  if (hutch_image_lookup(store, name_or_digest, &img, err) < 0)
    return -1;
  const struct idmap_set *maps;
  _cleanup_free_ char *layer_tmp = NULL;
  size_t n_lowers = img.lowers ? strv_length((const char *const *)img.lowers) : 0;
  const char **trees = xcalloc(n_lowers + 2, sizeof(*trees));
  trees[0] = img.rootfs;
  for (size_t i = 0; i < n_lowers; i++)
    trees[i + 1] = img.lowers[i];
  int ret = -1;
  if (idmap_for_caller(&maps, err) < 0)
    goto out;
  /* The layer is written next to the archive (same file system, the space
   * the archive needs anyway), unnamed once opened. */
  p->layer_fd = open_beside(near_file, &layer_tmp, err);
  if (p->layer_fd < 0)
    goto out;
  unlink(layer_tmp);
  struct layer_ctx lc = {.trees = trees, .out = p->layer_fd};
  double t0 = monotonic_seconds();
  if (userns_run(maps, CLONE_NEWNS, layer_child, &lc, err) < 0)
    goto out;
  if (hash_fd(p->layer_fd, p->layer_hex, &p->layer_size, err) < 0)
    goto out;
  hutch_debug("export %s: layer sha256:%.12s, %" PRIu64 " bytes in %.3f s", name_or_digest, p->layer_hex, p->layer_size,
              monotonic_seconds() - t0);
  p->config = config_json(&img, p->layer_hex);
  text_hex(p->config, p->config_hex);
  p->ref = export_ref(&img);
  ret = 0;
out:
  if (ret < 0)
    image_export_parts_clear(p);
  free(trees);
  hutch_image_clear(&img);
  return ret;
}

void image_export_parts_clear(struct export_parts *p) {
  if (p->layer_fd >= 0)
    close(p->layer_fd);
  free(p->config);
  free(p->ref);
  *p = (struct export_parts){.layer_fd = -1};
}

int hutch_image_export(struct hutch_store *store, const char *name_or_digest, const char *format, const char *file,
                       hutch_error_t *err) {
  bool oci = format == NULL || strcmp(format, "oci-archive") == 0;
  if (!oci && strcmp(format, "docker-archive") != 0) {
    hutch_error_set(err, EINVAL, "export: unknown format \"%s\"", format);
    return hutch_error_hint(err, "use --format oci-archive or --format docker-archive");
  }
  struct export_parts p;
  _cleanup_free_ char *out_tmp = NULL;
  _cleanup_close_ int out = -1;
  int ret = -1;
  if (image_export_parts(store, name_or_digest, file, &p, err) < 0)
    goto out;
  out = open_beside(file, &out_tmp, err);
  if (out < 0)
    goto out;
  struct archive *a = ARCHIVE(archive_write_new)();
  if (a == NULL)
    abort();
  ARCHIVE(archive_write_set_format_pax_restricted)(a);
  int r = ARCHIVE(archive_write_open_fd)(a, out) == ARCHIVE_OK ? 0 : -1;
  if (r < 0)
    hutch_error_set(err, ARCHIVE(archive_errno)(a), "export: %s", ARCHIVE(archive_error_string)(a));
  if (r == 0)
    r = oci ? write_oci(a, &p, err) : write_docker(a, &p, err);
  if (r == 0 && ARCHIVE(archive_write_close)(a) != ARCHIVE_OK)
    r = hutch_error_set(err, ARCHIVE(archive_errno)(a), "export: %s", ARCHIVE(archive_error_string)(a));
  ARCHIVE(archive_write_free)(a);
  if (r < 0)
    goto out;
  if (fchmod(out, 0644) < 0 || fsync(out) < 0 || rename(out_tmp, file) < 0) {
    hutch_error_sys(err, "export: write %s", file);
    goto out;
  }
  free(out_tmp);
  out_tmp = NULL;
  ret = 0;
out:
  if (out_tmp)
    unlink(out_tmp);
  image_export_parts_clear(&p);
  if (ret < 0)
    hutch_error_wrap(err, "export %s", name_or_digest);
  return ret;
}
