/* SPDX-License-Identifier: Apache-2.0 */
/* What `hutch rootfs export` writes, shared with `hutch rootfs push`
 * (image_push.c): an image of the store as one uncompressed layer, its
 * config and its OCI manifest. */
#ifndef HUTCH_IMAGE_EXPORT_H
#define HUTCH_IMAGE_EXPORT_H

#include <stdint.h>

#include "hutch.h"
#include "sha256.h"

struct export_parts {
  char layer_hex[SHA256_HEX_SIZE], config_hex[SHA256_HEX_SIZE];
  uint64_t layer_size;
  int layer_fd; /* an unnamed file, read with pread */
  char *config;
  char *ref; /* localhost/NAME:TAG, or NULL */
};

/* The layer (written in a user namespace, unnamed in near_file's
 * directory) and the config of an image of the store. */
int image_export_parts(struct hutch_store *store, const char *name_or_digest, const char *near_file,
                       struct export_parts *p, hutch_error_t *err);
void image_export_parts_clear(struct export_parts *p);
/* The OCI image manifest of the parts, and the hex digest of its bytes. */
char *image_export_manifest(const struct export_parts *p, char hex[SHA256_HEX_SIZE]);

#endif
