/* SPDX-License-Identifier: Apache-2.0 */
/* What oci.c (blobs, plans, pulls) and oci_local.c (archives and layouts)
 * share: a blob is a verified byte range of a file, a plan what an image is
 * made of wherever it comes from, applied into one new store entry. */
#ifndef HUTCH_OCI_PLAN_H
#define HUTCH_OCI_PLAN_H

#include <stdint.h>
#include <sys/types.h>

#include "hutch.h"
#include "oci_image.h"
#include "sha256.h"

struct hutch_store;

/* Indexes may nest (an index of indexes); real images use one or two. */
#define OCI_MAX_INDEX_DEPTH 4

struct blob {
  int fd;
  uint64_t offset, size;
};

void blob_close(struct blob *b);
int blob_hash(const struct blob *b, char hex[SHA256_HEX_SIZE], hutch_error_t *err);
/* Before a blob is used: its bytes must be the ones its digest names. */
int blob_verify(const struct blob *b, const char *what, const char *want_hex, uint64_t want_size, hutch_error_t *err);
/* A small document (up to OCI_MAX_DOCUMENT), NUL-terminated. */
int blob_read(const struct blob *b, const char *what, char **out, size_t *len, hutch_error_t *err);

struct plan {
  const char *format; /* "oci-layout", "oci-archive", "docker-archive", "dir", "registry" */
  const char *source; /* a file, or the reference pulled */
  char key[SHA256_HEX_SIZE];
  char *manifest_digest; /* NULL for `docker save` */
  char *config_digest;
  struct oci_config config;
  size_t n_layers;
  char **layer_hex; /* the digest each layer's bytes must have */
  uint64_t *layer_size;
};

void plan_clear(struct plan *p);
void plan_add_layer(struct plan *p, const char *hex, uint64_t size);
/* Layers from a manifest; refuses what hutch cannot apply. */
int plan_layers_from_manifest(struct plan *p, const struct oci_manifest *m, hutch_error_t *err);

/* Hands out layer i as a verified blob. */
typedef int (*layer_fn)(void *ctx, const struct plan *p, size_t i, struct blob *out, hutch_error_t *err);
/* Apply every layer into a new entry.  0: made, 1: it was there already. */
int plan_apply(struct hutch_store *store, const struct plan *p, layer_fn get_layer, void *ctx,
               hutch_progress_fn progress, void *progress_data, hutch_error_t *err);

/* The entry of an index for this host's platform (or the one without a
 * platform); -1 with the platforms it has named otherwise. */
ssize_t oci_pick_platform(const struct oci_descriptor *d, size_t n, const char *where, hutch_error_t *err);

#endif
