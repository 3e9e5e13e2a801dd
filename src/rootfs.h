/* `hutch rootfs` verbs spread over several files: pull (rootfs_pull.c),
 * build (rootfs_build.c), the rest in cmd_rootfs.c. */
#ifndef HUTCH_SRC_ROOTFS_H
#define HUTCH_SRC_ROOTFS_H

#include <stdbool.h>
#include <stdint.h>

#include "hutch.h"

/* A progress bar on stderr, drawn by cli_draw_progress (a hutch_progress_fn)
 * at most ten times a second; callers install it only when stderr is a
 * terminal and erase it with cli_progress_end(). */
struct cli_progress {
  const char *label;
  double last;
  bool drawn;
};
void cli_draw_progress(uint64_t done, uint64_t total, void *data);
void cli_progress_end(struct cli_progress *p);
void cli_format_size(uint64_t bytes, char *buf, size_t len);

int rootfs_pull(int argc, char **argv, const char *store_path);
int rootfs_build(int argc, char **argv, const char *store_path);

/* Put the image `ref` (an image manifest's name, e.g. ubuntu:24.04) for
 * `arch` (NULL: this machine's) into the store under `name` (NULL: ref):
 * download, verify, import.  Nothing is downloaded when the pinned digest
 * is in the store already.  Progress goes to stderr on a terminal. */
int rootfs_pull_manifest(struct hutch_store *store, const char *ref, const char *arch, const char *name,
                         struct hutch_image *out, hutch_error_t *err);

/* `docker://` references (OCI registries). */
#define ROOTFS_DOCKER_PREFIX "docker://"

#endif
