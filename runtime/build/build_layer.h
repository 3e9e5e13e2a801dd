/* SPDX-License-Identifier: Apache-2.0 */
/* What the recipe builder (image_build.c) and the Dockerfile builder share:
 * an image's trees, freezing a build sandbox's upper directory as a layer,
 * and the layer's metadata. */
#ifndef HUTCH_BUILD_LAYER_H
#define HUTCH_BUILD_LAYER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hutch.h"

struct cJSON;

/* The image's trees, its own first, NULL-terminated (image_layers.h). */
const char **build_image_trees(const struct hutch_image *img);
/* Refuses a layer on top when that would stack more than
 * HUTCH_IMAGE_MAX_LAYERS trees. */
int build_check_depth(const struct hutch_image *top, hutch_error_t *err);
/* Copy the build sandbox's upper directory (its layer) into dest. */
int build_copy_layer(struct hutch_sandbox *sb, const char *state_dir, const char *dest, hutch_error_t *err);
/* Remove what the sandbox wrote about itself (proxy settings, resolv.conf). */
void build_prune_sandbox_files(const char *upper, const struct hutch_image *base);
/* Bytes of file content below dir, and whether an entry has another owner than the caller. */
uint64_t build_tree_bytes(const char *dir, bool *foreign_ids);
/* meta.json's "lowers": base, then base's lowers. */
void build_add_lowers(struct cJSON *meta, const struct hutch_image *base);

/* The archive hosts of the image's apt sources, added to allow (a plain list). */
void build_add_archive_hosts(const struct hutch_image *img, char ***allow, size_t *n_allow);
/* o->from: an image in the store, else a manifest's name, pulled (with its
 * Debian fallback). */
int build_resolve_base(struct hutch_store *store, const struct hutch_build_options *o, struct hutch_image *base,
                       hutch_error_t *err);

#endif
