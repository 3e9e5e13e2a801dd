/* SPDX-License-Identifier: Apache-2.0 */
/* What the recipe builder (image_build.c), the Dockerfile builder and a
 * snapshot share: an image's trees, freezing a sandbox's upper directory
 * as a layer, and the layer's metadata (build_layer.c). */
#ifndef HUTCH_BUILD_LAYER_H
#define HUTCH_BUILD_LAYER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hutch.h"
#include "idmap.h"
#include "sha256.h"

struct cJSON;

/* The image's trees, its own first, NULL-terminated (image_layers.h). */
const char **build_image_trees(const struct hutch_image *img);
/* Refuses a layer on top when that would stack more than
 * HUTCH_IMAGE_MAX_LAYERS trees. */
int build_check_depth(const struct hutch_image *top, hutch_error_t *err);
/* The sandbox's writable layer as a new directory fd: an image build's,
 * handed over at its start, else its upper directory (sandbox_fds.h). */
int build_open_layer(struct hutch_sandbox *sb, hutch_error_t *err);
/* Copy that layer into dest. */
int build_copy_layer(int layer, const char *dest, hutch_error_t *err);
/* Both: the sandbox's layer copied into dest. */
int build_copy_sandbox_layer(struct hutch_sandbox *sb, const char *dest, hutch_error_t *err);
/* Remove what the sandbox wrote about itself (proxy settings, resolv.conf):
 * `live`, a live sandbox's layer (a snapshot), else a build's. */
void build_prune_sandbox_files(const char *upper, const struct hutch_image *base, bool live);
/* What is below dir: bytes of file content, entries (dir itself not
 * counted), and whether an entry has another owner than the caller. */
struct build_tree_stats {
  uint64_t bytes, entries;
  bool foreign_ids;
};
void build_tree_stats(const char *dir, struct build_tree_stats *out);
uint64_t build_tree_bytes(const char *dir, bool *foreign_ids);
/* meta.json's "lowers": base, then base's lowers. */
void build_add_lowers(struct cJSON *meta, const struct hutch_image *base);
/* A layer has no archive to hash: its key is the hash of its kind
 * ("hutch-rootfs-build"), its base, what made it (text) and of when, with
 * random bytes, so that two never collide. */
void build_layer_digest(const char *kind, const char *base_digest, const char *text, char hex[SHA256_HEX_SIZE]);
/* The meta.json of a layer over base (its tree's stats t): what every
 * entry has, its size and owners, its lowers and "built_from". */
struct cJSON *build_layer_meta(const char *hex, const char *source, const struct idmap_set *maps,
                               const struct hutch_image *base, const struct build_tree_stats *t);
/* Its "image": the environment and working directory its sandboxes get. */
void build_meta_image(struct cJSON *meta, char *const *env, const char *workdir);

/* The archive hosts of the image's apt sources, added to allow (a plain list). */
void build_add_archive_hosts(const struct hutch_image *img, char ***allow, size_t *n_allow);
/* o->from: an image in the store, else a manifest's name, pulled (with its
 * Debian fallback). */
int build_resolve_base(struct hutch_store *store, const struct hutch_build_options *o, struct hutch_image *base,
                       hutch_error_t *err);

#endif
