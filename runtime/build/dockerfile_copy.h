/* SPDX-License-Identifier: Apache-2.0 */
/* COPY and ADD of a Dockerfile build: what the sources are (the build
 * context, or an earlier stage's stacked trees), .dockerignore, the
 * content hash that keys the build cache, and the copy into a new layer.
 *
 * Every source tree is hostile: the context may hold links pointing out of
 * it, a stage's trees were written by its RUN steps.  Names are resolved
 * from each tree's fd (openat2 RESOLVE_BENEATH, and no symlinks at all in a
 * stage's trees); a link inside a copied directory is copied as a link,
 * never followed; the layer is written from its own fd without following
 * any link a source put there. */
#ifndef HUTCH_DOCKERFILE_COPY_H
#define HUTCH_DOCKERFILE_COPY_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "audit.h"
#include "error.h"
#include "sha256.h"

struct df_ignore {
  char **patterns; /* cleaned; a leading '!' re-includes */
  size_t n;
};
/* .dockerignore's text (NULL: none). */
void df_ignore_parse(const char *text, struct df_ignore *out);
void df_ignore_clear(struct df_ignore *ig);
/* Whether the context path rel ("a/b") is excluded. */
bool df_ignored(const struct df_ignore *ig, const char *rel);

/* What a copy wrote into the layer, for the build's audit log: each
 * regular file's path in the image, size and sha256, hashed as it was
 * copied (a link or a directory is not listed). */
struct df_copied {
  uint64_t files, bytes;
  struct audit_files list;
};

struct df_copy {
  const int *trees; /* source trees, top first: the context (one), or a stage's layers */
  size_t n_trees;
  bool context; /* trees[0] is the build context: .dockerignore applies, a top-level link is followed inside it */
  const struct df_ignore *ignore;
  char *const *sources; /* relative to the trees; the last component may be a glob */
  size_t n_sources;
  const char *dest; /* absolute, in the image */
  bool dest_is_dir; /* the sources go into dest (it ends in '/', there are several, or it is a directory) */
  uid_t uid;        /* owner of what is copied (in the sandbox's ids) */
  gid_t gid;
  int chmod; /* mode bits for files and directories copied, or -1 */
  /* df_copy_into: where its files are listed (NULL: nowhere), and what the
   * audit log names as where they come from (NULL: "context" or "stage"). */
  struct df_copied *copied;
  const char *audit_from;
};

/* Update ctx with everything the copy would read (names, types, modes,
 * contents, link targets); fails as df_copy_into would (a source missing,
 * a link out of the context). */
int df_copy_hash(const struct df_copy *c, struct sha256_ctx *ctx, hutch_error_t *err);
/* Copy into the empty layer directory layer_fd (as root of a user
 * namespace that maps uid/gid). */
int df_copy_into(const struct df_copy *c, int layer_fd, hutch_error_t *err);
/* The sources with their globs expanded (relative to the trees), in order. */
char **df_copy_expand(const struct df_copy *c, hutch_error_t *err);
/* One of those (O_PATH, a top-level link in the context followed inside it). */
int df_copy_open_source(const struct df_copy *c, const char *rel, struct stat *st, hutch_error_t *err);
/* p (relative to wd, or absolute) as an absolute path in the image with "."
 * and ".." resolved lexically, clamped at "/" (Docker's rule). */
char *df_image_path(const char *wd, const char *p);
/* mkdir -p dir (absolute, in the image) in the layer, mode 0755, owned by uid:gid; a ".." in dir is refused. */
int df_layer_mkdirs(int layer_fd, const char *dir, uid_t uid, gid_t gid, int *out_fd, hutch_error_t *err);

#endif
