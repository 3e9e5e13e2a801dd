/* SPDX-License-Identifier: Apache-2.0 */
/* Copying an overlayfs upper directory as it is: modes, owners, times,
 * xattrs (user.overlay.* included), symlinks, hard links, fifos and
 * whiteouts (0/0 character devices).  An image build's layer is made on
 * the sandbox's size-limited tmpfs and copied to the store at the end. */
#ifndef HUTCH_LAYER_COPY_H
#define HUTCH_LAYER_COPY_H

#include "error.h"

/* Copy what is in src_dir into the empty dst_dir.  The caller is root in a
 * user namespace that maps the tree's owners (userns_run): the tree holds
 * files of other ids, and whiteouts.  Refuses trees deeper than
 * LAYER_COPY_MAX_DEPTH and entries other than the above. */
#define LAYER_COPY_MAX_DEPTH 256
int layer_copy_tree(int src_dir, int dst_dir, hutch_error_t *err);
/* The same from a sandbox's layer directory (SYNC_LAYER_FD) into the
 * directory `dest`, from a child that is root in a user namespace with the
 * caller's id maps (the sandbox's, or a superset). */
int layer_copy_out(int layer_fd, const char *dest, hutch_error_t *err);

#endif
