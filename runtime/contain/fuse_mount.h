/* SPDX-License-Identifier: Apache-2.0 */
/* --overlay fuse, the child's half: see overlay_fuse.h (sandbox/) for the
 * whole story, of which the host side is there. */
#ifndef HUTCH_FUSE_MOUNT_H
#define HUTCH_FUSE_MOUNT_H

#include "hutch.h"

/* Child side: open /dev/fuse (while the host's /dev is still visible). */
int overlay_fuse_open_device(hutch_error_t *err);
/* Child side: mount the FUSE filesystem whose connection is fuse_fd on
 * target, for ids 0 of the current user namespace. */
int overlay_fuse_mount(int fuse_fd, const char *target, hutch_error_t *err);

/* Child side, in place of the kernel overlay: mount on target, hand the
 * connection to the parent over parent_fd (SYNC_FUSE_FD), keep no copy of
 * it, and wait until the parent has started the daemon (SYNC_GO). */
int overlay_fuse_child_mount(int fuse_fd, const char *target, int parent_fd, hutch_error_t *err);

#endif
