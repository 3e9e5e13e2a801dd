/* hutch_image_import: which importer a file goes to.  `docker save`
 * archives and OCI layouts (compressed or not) go to oci.c, anything else
 * is unpacked as a plain tarball by the store (store.c).  The dispatch
 * lives here, above both, so that the store does not know the image
 * formats that are written into it. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hutch.h"
#include "oci.h"
#include "oci_compressed.h"
#include "paths.h"
#include "store.h"
#include "util.h"

int hutch_image_import(struct hutch_store *store, const char *file, const struct hutch_import_options *opts,
                       struct hutch_image *out, hutch_error_t *err) {
  static const struct hutch_import_options defaults;
  if (opts == NULL)
    opts = &defaults;
  FILE *notices = opts->notices ? opts->notices : stderr;
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
  store_clean_stale_tmp(store);

  char hex[SHA256_HEX_SIZE] = "";
  int already = 0;
  int image_format = OCI_NOT_AN_IMAGE;
  bool indexed = regular && store_index_lookup(store, &st, hex) == 1;
  if (indexed) {
    hutch_debug("import %s: unchanged since it was imported as sha256:%s (index)", file, hex);
    already = 1;
  } else if (regular || S_ISDIR(st.st_mode)) {
    /* `docker save` archives and OCI layouts: an image of layers. */
    image_format = oci_import(store, file, fd, opts, notices, hex, err);
    if (image_format < 0)
      return hutch_error_wrap(err, "import %s", file);
    if (image_format == OCI_NOT_AN_IMAGE && regular) {
      _cleanup_free_ char *tmp = xasprintf("%s/tmp", store->path);
      _cleanup_close_ int plain = -1;
      int c = oci_decompress_image_archive(fd, tmp, notices, &plain, err);
      if (c < 0)
        return hutch_error_wrap(err, "import %s", file);
      if (c > 0 && (image_format = oci_import(store, file, plain, opts, notices, hex, err)) < 0)
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
  if (image_format == OCI_NOT_AN_IMAGE && S_ISDIR(st.st_mode)) {
    hutch_error_set(err, EISDIR, "import %s", file);
    return hutch_error_hint(err,
                            "import a tarball of the tree (tar -C %s -cf rootfs.tar .), or an OCI image layout "
                            "directory (one with index.json and blobs/)",
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
      int r = store_import_tarball(store, fd, &st, file, expect ? hex : NULL, opts, notices, got, err);
      hutch_debug("import %s: unpacked in %.3f s", file, monotonic_seconds() - t0);
      if (r < 0)
        return hutch_error_wrap(err, "import %s", file);
      already = r;
      memcpy(hex, got, sizeof(got));
    }
    struct stat after;
    if (regular && fstat(fd, &after) == 0 && after.st_size == st.st_size && after.st_mtim.tv_sec == st.st_mtim.tv_sec &&
        after.st_mtim.tv_nsec == st.st_mtim.tv_nsec && after.st_ctim.tv_sec == st.st_ctim.tv_sec &&
        after.st_ctim.tv_nsec == st.st_ctim.tv_nsec)
      store_index_record(store, &st, hex);
  }

  if (store_name_entry(store, hex, opts->name, notices, out, err) < 0)
    return hutch_error_wrap(err, "import %s", file);
  return already;
}
