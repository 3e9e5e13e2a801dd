/* SPDX-License-Identifier: Apache-2.0 */
/* The members of an uncompressed tar file, found by walking its headers
 * with libarchive (loaded for it): an image archive (`docker save`, an OCI
 * layout tarball) is read in place, each blob as a byte range of the file,
 * without unpacking the archive.
 * Names are only ever compared with the names an index or manifest gives,
 * never used as paths. */
#ifndef HUTCH_OCI_TAR_H
#define HUTCH_OCI_TAR_H

#include <stdbool.h>
#include <stdint.h>

#include "hutch.h"

struct tar_member {
  char *name; /* cleaned: no leading "./", no trailing '/' */
  char *link; /* a symlink's target as written, else NULL */
  uint64_t offset, size;
};

struct tar_index {
  struct tar_member *members;
  size_t n;
};

/* 1 with the index (regular files and symlinks) filled when fd is an
 * uncompressed tar archive with a manifest.json, index.json or oci-layout at
 * its top, 0 when it is not one (a rootfs tarball, a compressed file), -1
 * on a read error or a damaged image archive. */
int tar_index_read(int fd, struct tar_index *out, hutch_error_t *err);
/* The last member of that name (a later one replaces an earlier one in tar). */
const struct tar_member *tar_index_find(const struct tar_index *idx, const char *name);
void tar_index_clear(struct tar_index *idx);
/* The member a name leads to, following symlinks inside the archive only;
 * NULL when there is none or a link leaves the archive. */
const struct tar_member *tar_index_resolve(const struct tar_index *idx, const char *name);
/* Pure: where the symlink `member` -> `target` points, as a cleaned member
 * name; NULL for an absolute target or one above the archive's top. */
char *tar_link_target(const char *member, const char *target);

#endif
