/* SPDX-License-Identifier: Apache-2.0 */
/* Compressed image archives: `docker save IMAGE | gzip > image.tar.gz`, or
 * a compressed OCI layout tarball.  oci_import reads an image archive's
 * members in place, by offset, which a compressed stream does not allow; so
 * one that is recognised by its first member is decompressed once into an
 * unnamed file next to the store's entries and imported from there.  A
 * compressed rootfs tarball is left to the unpacker, which decompresses it
 * as it goes. */
#include "config.h"

#include "oci_compressed.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "archive_dl.h"
#include "layer.h"
#include "oci_image.h"
#include "util.h"

static struct archive *open_stream(int fd, bool raw, hutch_error_t *err) {
  if (lseek(fd, 0, SEEK_SET) < 0) {
    hutch_error_sys(err, "seek to the start");
    return NULL;
  }
  struct archive *a = ARCHIVE(archive_read_new)();
  if (a == NULL)
    abort();
  if (raw)
    ARCHIVE(archive_read_support_format_raw)(a);
  else
    ARCHIVE(archive_read_support_format_tar)(a);
  archive_dl_support_filters(a);
  if (ARCHIVE(archive_read_open_fd)(a, fd, 1 << 20) != ARCHIVE_OK) {
    hutch_error_set(err, ARCHIVE(archive_errno)(a) > 0 ? ARCHIVE(archive_errno)(a) : 0,
                    "open the compressed stream: %s", ARCHIVE(archive_error_string)(a));
    ARCHIVE(archive_read_free)(a);
    return NULL;
  }
  return a;
}

/* Whether fd is a compressed tarball whose first member (past "./") names
 * a part of an image archive.  An uncompressed one is oci_import's. */
static bool compressed_image_archive(int fd) {
  /* Not a tar inside: the unpacker says what it is. */
  _cleanup_error_ hutch_error_t ignored = NULL;
  struct archive *a = open_stream(fd, false, &ignored);
  if (a == NULL)
    return false;
  bool image = false;
  /* The bottom of the filter chain reads the file: only a second one
   * decompresses. */
  for (int i = 0; i < 4 && ARCHIVE(archive_filter_count)(a) > 1; i++) {
    struct archive_entry *e;
    if (ARCHIVE(archive_read_next_header)(a, &e) != ARCHIVE_OK)
      break;
    const char *name = ARCHIVE(archive_entry_pathname)(e);
    _cleanup_free_ char *clean = layer_clean_path(name ? name : "");
    if (clean[0] == '\0')
      continue; /* the root directory says nothing */
    image = oci_archive_member_name(clean);
    break;
  }
  ARCHIVE(archive_read_free)(a);
  return image;
}

/* An unnamed file in dir; a named one removed at once where the file
 * system has no O_TMPFILE. */
static int unnamed_file(const char *dir, hutch_error_t *err) {
  int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd >= 0 || (errno != EOPNOTSUPP && errno != EISDIR))
    return fd >= 0 ? fd : hutch_error_sys(err, "create a file in %s", dir);
  _cleanup_free_ char *path = xasprintf("%s/decompressed.XXXXXX", dir);
  fd = mkostemp(path, O_CLOEXEC);
  if (fd < 0)
    return hutch_error_sys(err, "create %s", path);
  unlink(path);
  return fd;
}

static int decompress(int fd, int out, hutch_error_t *err) {
  struct archive *a = open_stream(fd, true, err);
  if (a == NULL)
    return -1;
  int r = -1;
  struct archive_entry *e;
  if (ARCHIVE(archive_read_next_header)(a, &e) != ARCHIVE_OK) {
    hutch_error_set(err, 0, "decompress: %s", ARCHIVE(archive_error_string)(a));
    goto out;
  }
  for (;;) {
    const void *buf;
    size_t size;
    la_int64_t offset;
    int s = ARCHIVE(archive_read_data_block)(a, &buf, &size, &offset);
    if (s == ARCHIVE_EOF)
      break;
    if (s < ARCHIVE_WARN) {
      hutch_error_set(err, 0, "decompress: %s", ARCHIVE(archive_error_string)(a));
      goto out;
    }
    for (size_t done = 0; done < size;) {
      ssize_t n = pwrite(out, (const char *)buf + done, size - done, (off_t)offset + (off_t)done);
      if (n < 0 && errno == EINTR)
        continue;
      if (n < 0) {
        hutch_error_sys(err, "decompress: write");
        goto out;
      }
      done += (size_t)n;
    }
  }
  r = 0;
out:
  ARCHIVE(archive_read_free)(a);
  return r;
}

int oci_decompress_image_archive(int fd, const char *dir, int *out, hutch_error_t *err) {
  *out = -1;
  if (archive_dl_load(err) < 0)
    return -1;
  if (!compressed_image_archive(fd))
    return 0;
  hutch_log(HUTCH_LOG_INFO, "a compressed image archive: decompressing it once to read its layers");
  int plain = unnamed_file(dir, err);
  if (plain < 0)
    return -1;
  if (decompress(fd, plain, err) < 0) {
    close(plain);
    return -1;
  }
  *out = plain;
  return 1;
}
