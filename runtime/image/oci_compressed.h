/* SPDX-License-Identifier: Apache-2.0 */
/* Compressed image archives (`docker save | gzip`, compressed OCI layout
 * tarballs), made readable for oci_import. */
#ifndef HUTCH_OCI_COMPRESSED_H
#define HUTCH_OCI_COMPRESSED_H

#include <stdio.h>

#include "hutch.h"

/* When fd is a compressed tarball whose first member is part of an image
 * archive: 1, and *out an unnamed file in `dir` holding it decompressed.
 * 0 when it is anything else (the rootfs unpacker takes it), -1 on error. */
int oci_decompress_image_archive(int fd, const char *dir, int *out, hutch_error_t *err);

#endif
