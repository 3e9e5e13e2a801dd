/* SPDX-License-Identifier: Apache-2.0 */
/* The new root's paths as a sandbox's setup reaches them after pivot_root.
 *
 * The image's symlinks are followed as the sandbox's own processes follow
 * them ("/" and ".." stop at its root), but never /proc's magic links
 * (/proc/self/fd/N, /proc/PID/cwd): once /proc is mounted they lead to what
 * the setup holds, not to the image: the caller's stdin, stdout and stderr
 * (a directory among them is a host directory), the detached binds.  A
 * symlink of the image that goes through one is refused (ELOOP), so the
 * setup never makes a directory, file or mount point, or writes or
 * removes a file, outside the sandbox's own tree. */
#ifndef HUTCH_IN_ROOT_H
#define HUTCH_IN_ROOT_H

#include <stdbool.h>
#include <sys/types.h>

#include "error.h"

/* openat2() of path in the current root (flags as openat2 takes them;
 * O_CLOEXEC added): the fd, or -1 with errno. */
int in_root_open(const char *path, int flags, mode_t mode);
/* An O_PATH fd of the directory path, made (mode) with any missing parent
 * first: or -1 with errno. */
int in_root_mkdirs(const char *path, mode_t mode);
/* An O_PATH fd of the mount point path, a directory (dir) or a file, made
 * (with its parents) when missing; one of the other type is an error.
 * no_symlinks: no symlink at all on the way (/proc and /dev, whose place
 * the setup and init name by path afterwards). */
int in_root_mountpoint(const char *path, bool dir, bool no_symlinks, hutch_error_t *err);
/* Places the detached mount *tree (closed, then -1) on the mount point fd
 * (named dest in errors). */
int in_root_move_mount(int *tree, int target, const char *dest, hutch_error_t *err);
/* name, in the directory dir (an fd of in_root_open()), never through a
 * symlink: an O_PATH fd of it, or -1 with errno. */
int in_root_child(int dir, const char *name);
/* Writes content to the new file name in dir: O_EXCL, never through a
 * symlink; -1 with errno (EEXIST: the name is taken). */
int in_root_create_file(int dir, const char *name, const char *content, mode_t mode);

#endif
