/* SPDX-License-Identifier: Apache-2.0 */
/* The tar walk that tells an image archive from a rootfs tarball and finds
 * an image's members (oci_tar.c, libarchive's reader), over a file in
 * memory. */
#define _GNU_SOURCE
#include "config.h"

#include <sys/mman.h>
#include <unistd.h>

#include "fuzz.h"
#include "oci_tar.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > (1u << 20))
    return 0;
  int fd = memfd_create("fuzz-tar", MFD_CLOEXEC);
  if (fd < 0)
    abort();
  if (size && write(fd, data, size) != (ssize_t)size)
    abort();
  hutch_error_t err = NULL;
  struct tar_index idx;
  if (tar_index_read(fd, &idx, &err) == 1) {
    static const char *const names[] = {"manifest.json", "index.json", "oci-layout", "blobs/sha256/x", "a/b"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
      tar_index_find(&idx, names[i]);
      tar_index_resolve(&idx, names[i]);
    }
    for (size_t i = 0; i < idx.n && i < 64; i++) {
      tar_index_resolve(&idx, idx.members[i].name);
      if (idx.members[i].link)
        free(tar_link_target(idx.members[i].name, idx.members[i].link));
    }
    tar_index_clear(&idx);
  }
  hutch_error_free(&err);
  close(fd);
  return 0;
}
