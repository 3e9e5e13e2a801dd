/* SPDX-License-Identifier: Apache-2.0 */
/* Copying an overlayfs upper directory as it is: modes, owners, times,
 * xattrs (user.overlay.* included), symlinks, hard links, fifos and
 * whiteouts (0/0 character devices).  Here, below the host side, so that
 * both use it: an image build's layer copied out of the sandbox's tmpfs to
 * the store (layer_copy.h, for the builders and a snapshot), and a forked
 * sandbox's child seeding its own upper directory from its parent's before
 * its overlay is mounted (contain.c: step_seed_layer). */
#ifndef HUTCH_LAYER_TREE_H
#define HUTCH_LAYER_TREE_H

#include "error.h"

/* Copy what is in src_dir into the empty dst_dir.  The caller is root in a
 * user namespace that maps the tree's owners: the tree holds files of
 * other ids, and whiteouts.  Refuses trees deeper than
 * LAYER_COPY_MAX_DEPTH and entries other than the above. */
#define LAYER_COPY_MAX_DEPTH 256
int layer_copy_tree(int src_dir, int dst_dir, hutch_error_t *err);

#endif
