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
#include "util.h"

/* gzip, xz, zstd, bzip2, lz4 (frame format), lzma ("alone"). */
static bool compressed_magic(const unsigned char *b, size_t n) {
  static const struct {
    unsigned char bytes[6];
    size_t len;
  } magics[] = {
      {{0x1f, 0x8b}, 2},    {{0xfd, '7', 'z', 'X', 'Z', 0x00}, 6}, {{0x28, 0xb5, 0x2f, 0xfd}, 4},
      {{'B', 'Z', 'h'}, 3}, {{0x04, 0x22, 0x4d, 0x18}, 4},         {{0x5d, 0x00, 0x00}, 3},
  };
  for (size_t i = 0; i < ARRAY_SIZE(magics); i++)
    if (n >= magics[i].len && memcmp(b, magics[i].bytes, magics[i].len) == 0)
      return true;
  return false;
}

bool oci_member_marks_image(const char *name) {
  while (name[0] == '.' && name[1] == '/')
    name += 2;
  static const char *const exact[] = {"oci-layout", "index.json", "manifest.json", "repositories", "blobs", "blobs/"};
  for (size_t i = 0; i < ARRAY_SIZE(exact); i++)
    if (strcmp(name, exact[i]) == 0)
      return true;
  if (strncmp(name, "blobs/", 6) == 0)
    return true;
  /* `docker save`: <64 hex>/ (a layer's directory) or <64 hex>.json. */
  size_t hex = strspn(name, "0123456789abcdef");
  return hex == 64 && (name[64] == '/' || name[64] == '\0' || strcmp(name + 64, ".json") == 0);
}

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
  ARCHIVE(archive_read_support_filter_gzip)(a);
  ARCHIVE(archive_read_support_filter_xz)(a);
  ARCHIVE(archive_read_support_filter_zstd)(a);
  ARCHIVE(archive_read_support_filter_bzip2)(a);
  ARCHIVE(archive_read_support_filter_lzma)(a);
  ARCHIVE(archive_read_support_filter_lz4)(a);
  if (ARCHIVE(archive_read_open_fd)(a, fd, 1 << 20) != ARCHIVE_OK) {
    hutch_error_set(err, ARCHIVE(archive_errno)(a) > 0 ? ARCHIVE(archive_errno)(a) : 0,
                    "open the compressed stream: %s", ARCHIVE(archive_error_string)(a));
    ARCHIVE(archive_read_free)(a);
    return NULL;
  }
  return a;
}

/* Whether the first member (past "./") names a part of an image archive. */
static int first_member_is_image(int fd, hutch_error_t *err) {
  struct archive *a = open_stream(fd, false, err);
  if (a == NULL)
    return 0; /* not a tar inside: the unpacker says what it is */
  int image = 0;
  for (int i = 0; i < 4; i++) {
    struct archive_entry *e;
    if (ARCHIVE(archive_read_next_header)(a, &e) != ARCHIVE_OK)
      break;
    const char *name = ARCHIVE(archive_entry_pathname)(e);
    if (name == NULL || strcmp(name, ".") == 0 || strcmp(name, "./") == 0)
      continue;
    image = oci_member_marks_image(name);
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

int oci_decompress_image_archive(int fd, const char *dir, FILE *notices, int *out, hutch_error_t *err) {
  *out = -1;
  unsigned char head[6];
  ssize_t n = pread(fd, head, sizeof(head), 0);
  if (n <= 0 || !compressed_magic(head, (size_t)n))
    return 0;
  if (archive_dl_load(err) < 0)
    return -1;
  if (first_member_is_image(fd, err) <= 0)
    return 0;
  fprintf(notices, "hutch: a compressed image archive: decompressing it once to read its layers\n");
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
