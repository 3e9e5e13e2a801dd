/* SPDX-License-Identifier: Apache-2.0 */
/* The sandbox's mount tree.  Host objects (device nodes, bind sources, a
 * fresh procfs) are opened as detached mounts before pivot_root; after it,
 * every path resolves inside the new root, so a symlink in the image can
 * never point a mount at the host. */
#ifndef HUTCH_MOUNTS_H
#define HUTCH_MOUNTS_H

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

#include "hutch.h"
#include "paths.h"

struct detached_bind {
  int fd;
  char *dest; /* normalised absolute path inside the sandbox */
};

struct mount_plan {
  int proc_fd;
  int dev_fds[6]; /* see mounts.c: null, zero, full, random, urandom, tty */
  struct detached_bind *binds;
  size_t n_binds;
  int tmp_fd, shm_fd; /* /tmp and /dev/shm: directories of the sandbox's tmpfs */
  int dev_fd;         /* /dev: a directory of the sandbox's tmpfs */
  int empty_fd;       /* an empty read-only directory of it, over /proc's masked directories */
  int scratch_fd;     /* the tmpfs's root (its mount, O_PATH): a long-lived init keeps it (init.h) */
};

void mount_plan_init(struct mount_plan *plan);
void mount_plan_release(struct mount_plan *plan);

int mounts_make_private(hutch_error_t *err);
/* The sandbox's one size-limited tmpfs (size = `bytes`, LIMITS_UNLIMITED:
 * the kernel's default), every writable place of the sandbox on one budget:
 * its tmp/ and shm/ go to plan->tmp_fd and shm_fd for /tmp and /dev/shm,
 * dev/ to plan->dev_fd for /dev, and an empty read-only directory to
 * plan->empty_fd for the masks of mounts_mask_proc(), and its root to
 * plan->scratch_fd.
 * It is mounted on `dir` (the sandbox's directory) and, with `layers`,
 * stays there to hold the overlay's upper and work directories.  Returns 1
 * when it holds them, 0 when it does not (not asked, or the kernel lacks
 * user xattrs on tmpfs, which overlayfs needs in an upper directory: Linux
 * < 6.6), -1 on failure. */
int mounts_sandbox_tmpfs(uint64_t bytes, const char *dir, bool layers, struct mount_plan *plan, hutch_error_t *err);
int mounts_overlay(const char *lower, const char *upper, const char *work, const char *target, hutch_error_t *err);
/* The same over a stack: more_lowers are the trees below `lower` (a built
 * image's base), nearest first, NULL-terminated; may be NULL. */
int mounts_overlay_layers(const char *lower, const char *const *more_lowers, const char *upper, const char *work,
                          const char *target, hutch_error_t *err);
/* ids (may be NULL): what each bind's source was when protected.c checked
 * it; a source that names something else by now is refused. */
int mounts_open_detached(const struct hutch_bind *binds, const struct file_id *ids, size_t n_binds, bool proc_host_ro,
                         struct mount_plan *plan, hutch_error_t *err);
/* pivot_root into new_root.  The old root is put on a directory of the new
 * root with a random name, made here and written to old_name, until
 * mounts_detach_old_root(old_name): nothing may run from the sandbox in
 * between.  Where the new root takes no new directory, the old root is
 * detached here, and old_name is "". */
#define OLD_ROOT_NAME_SIZE 64
/* The root mount (after pivot_root) read-only. */
int mounts_read_only_root(hutch_error_t *err);
int mounts_pivot_root(const char *new_root, char old_name[OLD_ROOT_NAME_SIZE], hutch_error_t *err);
int mounts_detach_old_root(const char *old_name, hutch_error_t *err);
int mounts_place_proc(struct mount_plan *plan, hutch_error_t *err);
int mounts_setup_dev(struct mount_plan *plan, bool tty_group_mapped, hutch_error_t *err);
int mounts_mask_proc(struct mount_plan *plan, hutch_error_t *err);
int mounts_tmp(struct mount_plan *plan, hutch_error_t *err);
int mounts_place_binds(struct mount_plan *plan, hutch_error_t *err);

#endif
