/* SPDX-License-Identifier: Apache-2.0 */
/* An image build's layer (and a one-shot --keep's) is made on the
 * sandbox's size-limited tmpfs and copied out of it at the end, as it is
 * (layer_tree.h), from a user namespace that maps its owners. */
#ifndef HUTCH_LAYER_COPY_H
#define HUTCH_LAYER_COPY_H

#include "error.h"

/* From a sandbox's layer directory (SYNC_LAYER_FD) into the directory
 * `dest`, from a child that is root in a user namespace with the caller's
 * id maps (the sandbox's, or a superset). */
int layer_copy_out(int layer_fd, const char *dest, hutch_error_t *err);

#endif
