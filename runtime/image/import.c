/* SPDX-License-Identifier: Apache-2.0 */
/* Importing into the store: hutch_image_import, which sends `docker save`
 * archives and OCI layouts (compressed or not) to oci.c and unpacks
 * anything else as a plain tarball here, and what every importer writes
 * (meta.json, the notices).  It lives above the store (store.c), which
 * keeps entries, names and the stages they are built in without knowing
 * the image formats written into it. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pwd.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cJSON.h>

#include "hutch.h"
#include "idmap.h"
#include "oci.h"
#include "oci_compressed.h"
#include "paths.h"
#include "policy.h"
#include "store.h"
#include "util.h"

static const char *idmap_kind_name(enum idmap_kind k) {
  switch (k) {
  case IDMAP_ROOT:
    return "root";
  case IDMAP_SUBORDINATE:
    return "subordinate";
  case IDMAP_SINGLE:
    return "single";
  }
  return "unknown";
}

void store_print_notices(const char *file, const struct idmap_set *maps, const struct unpack_stats *s) {
  if (s->skipped_special > 0)
    hutch_notice("%s: left out %" PRIu64 " device nodes, fifos or sockets (a sandbox gets its own minimal /dev)", file,
                 s->skipped_special);
  if (s->owners_collapsed == 0)
    return;
  struct passwd *pw = getpwuid(geteuid());
  if (maps->kind == IDMAP_SINGLE)
    hutch_notice("%s: unpacked with a single-id mapping (no subordinate id range): %" PRIu64
                 " entries owned by other users or groups (first: %s) now belong to root and %" PRIu64
                 " setuid/setgid bits were dropped. To keep owners, give your user a range (as root: usermod "
                 "--add-subuids 100000-165535 --add-subgids 100000-165535 %s; newuidmap and newgidmap come with the "
                 "uidmap package), then `hutch rootfs rm` this image and import it again",
                 file, s->owners_collapsed, s->first_collapsed, s->setid_dropped,
                 pw && pw->pw_name ? pw->pw_name : "USER");
  else
    hutch_notice("%s: %" PRIu64 " entries have owners or groups outside the mapped ids (first: %s); they "
                 "now belong to root and %" PRIu64 " setuid/setgid bits were dropped",
                 file, s->owners_collapsed, s->first_collapsed, s->setid_dropped);
}

cJSON *store_meta_new(const char *hex, const char *file, const struct idmap_set *maps, const struct unpack_stats *s) {
  _cleanup_free_ char *source = realpath(file, NULL);
  cJSON *j = cJSON_CreateObject();
  _cleanup_free_ char *digest = xasprintf("sha256:%s", hex);
  cJSON_AddStringToObject(j, "digest", digest);
  cJSON_AddItemToObject(j, "names", cJSON_CreateArray());
  cJSON_AddNumberToObject(j, "size", (double)s->size);
  cJSON_AddNumberToObject(j, "created", (double)time(NULL));
  /* True when the tree holds files of ids 1..65535: a sandbox must then map
   * them too.  A tree owned by root alone needs no more than uid 0 inside
   * (sandboxed processes can neither chown nor setuid), which spares a
   * rootless start the two setuid newuidmap/newgidmap helpers. */
  cJSON_AddBoolToObject(j, "ids_preserved", maps->kind != IDMAP_SINGLE && s->non_root_owned > 0);
  cJSON_AddNumberToObject(j, "non_root_owned", (double)s->non_root_owned);
  cJSON_AddStringToObject(j, "idmap", idmap_kind_name(maps->kind));
  cJSON_AddStringToObject(j, "source", source ? source : file);
  cJSON_AddNumberToObject(j, "entries", (double)s->entries);
  cJSON_AddNumberToObject(j, "skipped_special", (double)s->skipped_special);
  cJSON_AddNumberToObject(j, "owners_collapsed", (double)s->owners_collapsed);
  return j;
}

/* The stat index: index/<st_dev>-<st_ino> holds "size mtime ctime digest"
 * of a file imported before, so that importing it again unchanged costs one
 * stat and no read. */

static char *index_rel(const struct stat *st) {
  return xasprintf("index/%" PRIu64 "-%" PRIu64, (uint64_t)st->st_dev, (uint64_t)st->st_ino);
}

static bool ts_before(const struct timespec *a, const struct timespec *b) {
  return a->tv_sec < b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec < b->tv_nsec);
}

/* 1 with hex filled when the file is known and unchanged.  An entry written
 * within the same timestamp tick as the file's last change is not trusted:
 * the file could have changed again in that tick without its times moving. */
static int index_lookup(struct hutch_store *store, const struct stat *st, char hex[SHA256_HEX_SIZE]) {
  _cleanup_free_ char *rel = index_rel(st);
  _cleanup_close_ int fd = openat(store->fd, rel, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0)
    return 0;
  struct stat ist;
  char buf[256];
  ssize_t n = fstat(fd, &ist) < 0 ? -1 : read_all(fd, buf, sizeof(buf) - 1);
  if (n <= 0)
    return 0;
  buf[n] = '\0';
  uint64_t size;
  long long ms, mns, cs, cns;
  char h[SHA256_HEX_SIZE];
  if (sscanf(buf, "%" SCNu64 " %lld.%lld %lld.%lld %64s", &size, &ms, &mns, &cs, &cns, h) != 6 ||
      strlen(h) != SHA256_HEX_SIZE - 1 || !store_is_hex(h, SHA256_HEX_SIZE - 1))
    return 0;
  if (size != (uint64_t)st->st_size || ms != st->st_mtim.tv_sec || mns != st->st_mtim.tv_nsec ||
      cs != st->st_ctim.tv_sec || cns != st->st_ctim.tv_nsec)
    return 0;
  if (!ts_before(&st->st_mtim, &ist.st_mtim) || !ts_before(&st->st_ctim, &ist.st_mtim))
    return 0;
  if (!store_has_entry(store, h))
    return 0;
  memcpy(hex, h, SHA256_HEX_SIZE);
  return 1;
}

static void index_record(struct hutch_store *store, const struct stat *st, const char *hex) {
  _cleanup_free_ char *rel = index_rel(st);
  _cleanup_free_ char *path = xasprintf("%s/%s", store->path, rel);
  _cleanup_free_ char *line =
      xasprintf("%" PRIu64 " %lld.%09ld %lld.%09ld %s\n", (uint64_t)st->st_size, (long long)st->st_mtim.tv_sec,
                st->st_mtim.tv_nsec, (long long)st->st_ctim.tv_sec, st->st_ctim.tv_nsec, hex);
  if (write_file_atomic(path, line, strlen(line), 0600) < 0)
    hutch_log_errno(HUTCH_LOG_DEBUG, errno, "rootfs store: could not record %s in the index", path);
}

/* A plain tarball, unpacked as a new entry (expect_hex: its digest when
 * known).  Returns 0 with hex filled, 1 when the bytes turned out to be in
 * the store already (a pipe, or a concurrent import). */
static int import_tarball(struct hutch_store *store, int fd, const struct stat *st, const char *file,
                          const char *expect_hex, const struct hutch_import_options *opts, char hex[SHA256_HEX_SIZE],
                          hutch_error_t *err) {
  const struct idmap_set *maps;
  struct import_budget budget;
  struct store_stage stage;
  if (store_import_begin(store, &maps, &budget, &stage, err) < 0)
    return -1;
  struct unpack_request req = {
      .fd = fd,
      .total = S_ISREG(st->st_mode) ? (uint64_t)st->st_size : 0,
      .target = stage.rootfs,
      .maps = maps,
      .progress = opts->progress,
      .progress_data = opts->progress_data,
      .budget = &budget,
  };
  uint8_t digest[SHA256_DIGEST_SIZE];
  struct unpack_stats stats;
  if (unpack_archive(&req, digest, &stats, err) < 0) {
    store_stage_abort(store, &stage);
    return -1;
  }
  sha256_hex(digest, hex);
  if (expect_hex && strcmp(hex, expect_hex) != 0) {
    store_stage_abort(store, &stage);
    hutch_error_set(err, 0, "the file changed while it was being imported");
    return hutch_error_hint(err, "import it again once whatever writes it has finished");
  }
  cJSON *meta = store_meta_new(hex, file, maps, &stats);
  int r = store_stage_commit(store, &stage, hex, meta, err);
  cJSON_Delete(meta);
  if (r == 0)
    store_print_notices(file, maps, &stats);
  return r;
}

int hutch_image_import(struct hutch_store *store, const char *file, const struct hutch_import_options *opts,
                       struct hutch_image *out, hutch_error_t *err) {
  static const struct hutch_import_options defaults;
  if (opts == NULL)
    opts = &defaults;
  if (opts->name && !paths_valid_name(opts->name)) {
    hutch_error_set(err, EINVAL, "\"%s\" is not a valid image name", opts->name);
    return hutch_error_hint(err, "a name is 1 to 128 letters, digits, '.', '_', '-' or ':', starting with a letter "
                                 "or digit, without \"..\"");
  }
  _cleanup_close_ int fd = open(file, O_RDONLY | O_CLOEXEC | O_NOCTTY);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) < 0)
    return hutch_error_sys(err, "import %s: open", file);
  bool regular = S_ISREG(st.st_mode);
  store_clean_stale_tmp(store, NULL, NULL);

  char hex[SHA256_HEX_SIZE] = "";
  int already = 0;
  int image_format = OCI_NOT_AN_IMAGE;
  /* The index maps a file to one image: not for a choice among several. */
  bool indexed = regular && opts->image == NULL && index_lookup(store, &st, hex) == 1;
  if (indexed) {
    hutch_debug("import %s: unchanged since it was imported as sha256:%s (index)", file, hex);
    already = 1;
  } else if (regular || S_ISDIR(st.st_mode)) {
    /* `docker save` archives and OCI layouts: an image of layers. */
    image_format = oci_import(store, file, fd, opts, hex, err);
    if (image_format < 0)
      return hutch_error_wrap(err, "import %s", file);
    if (image_format == OCI_NOT_AN_IMAGE && regular) {
      _cleanup_free_ char *tmp = xasprintf("%s/tmp", store->path);
      _cleanup_close_ int plain = -1;
      int c = oci_decompress_image_archive(fd, tmp, &plain, err);
      if (c < 0)
        return hutch_error_wrap(err, "import %s", file);
      if (c > 0 && (image_format = oci_import(store, file, plain, opts, hex, err)) < 0)
        return hutch_error_wrap(err, "import %s", file);
      if (c > 0 && image_format == OCI_NOT_AN_IMAGE) {
        hutch_error_set(err, EINVAL,
                        "import %s: a compressed image archive, but neither an OCI layout (index.json) "
                        "nor a `docker save` archive (manifest.json)",
                        file);
        return -1;
      }
    }
    if (image_format != OCI_NOT_AN_IMAGE)
      already = image_format;
  }
  if (image_format == OCI_NOT_AN_IMAGE && opts->image) {
    hutch_error_set(err, EINVAL,
                    "import %s: --image %s names an image in an image archive, and this is a plain tarball", file,
                    opts->image);
    return hutch_error_hint(err, "leave --image out to import the tarball as a root filesystem");
  }
  if (image_format == OCI_NOT_AN_IMAGE && S_ISDIR(st.st_mode)) {
    hutch_error_set(err, EISDIR, "import %s", file);
    return hutch_error_hint(err,
                            "import a tarball of the tree (tar -C %s -cf rootfs.tar .), an OCI image layout "
                            "directory (one with index.json and blobs/) or a dir: copy (manifest.json and blobs)",
                            file);
  }
  if (!indexed) {
    /* A digest given by the caller (a pull) spares even the unpack.
     * Otherwise the file is hashed once, while it is unpacked: same bytes
     * under another inode unpack, then find their entry and discard the
     * stage (the index above keeps an unchanged file O(1)). */
    const char *known = opts->sha256 && strncmp(opts->sha256, "sha256:", 7) == 0 ? opts->sha256 + 7 : opts->sha256;
    bool expect = regular && image_format == OCI_NOT_AN_IMAGE && known && strlen(known) == SHA256_HEX_SIZE - 1 &&
                  store_is_hex(known, SHA256_HEX_SIZE - 1);
    if (expect) {
      memcpy(hex, known, SHA256_HEX_SIZE);
      already = store_has_entry(store, hex);
    }
    if (!already && image_format == OCI_NOT_AN_IMAGE) {
      char got[SHA256_HEX_SIZE];
      double t0 = monotonic_seconds();
      int r = import_tarball(store, fd, &st, file, expect ? hex : NULL, opts, got, err);
      hutch_debug("import %s: unpacked in %.3f s", file, monotonic_seconds() - t0);
      if (r < 0)
        return hutch_error_wrap(err, "import %s", file);
      already = r;
      memcpy(hex, got, sizeof(got));
    }
    struct stat after;
    if (regular && opts->image == NULL && fstat(fd, &after) == 0 && after.st_size == st.st_size &&
        after.st_mtim.tv_sec == st.st_mtim.tv_sec && after.st_mtim.tv_nsec == st.st_mtim.tv_nsec &&
        after.st_ctim.tv_sec == st.st_ctim.tv_sec && after.st_ctim.tv_nsec == st.st_ctim.tv_nsec)
      index_record(store, &st, hex);
  }

  if (store_name_entry(store, hex, opts->name, out, err) < 0)
    return hutch_error_wrap(err, "import %s", file);
  return already;
}
