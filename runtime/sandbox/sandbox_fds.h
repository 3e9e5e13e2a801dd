/* SPDX-License-Identifier: Apache-2.0 */
/* The fds a long-lived sandbox's init holds for hutch, and its writable
 * layer, from the host (sandbox_fds.c). */
#ifndef HUTCH_SANDBOX_FDS_H
#define HUTCH_SANDBOX_FDS_H

#include "hutch.h"

struct hutch_sandbox;

/* SYNC_ROOT_FD's answer: root (O_PATH), userns, tmpfs (O_PATH), netns. */
#define SANDBOX_INIT_FDS 4
/* Asks sb's running init for them; the last two are -1 from an init of an
 * older hutch.  The caller owns them all. */
int sandbox_ask_init_fds(struct hutch_sandbox *sb, int fds[SANDBOX_INIT_FDS], hutch_error_t *err);

enum sandbox_held { SANDBOX_HELD_SCRATCH = 0, SANDBOX_HELD_NETNS = 1 };
/* The sandbox's tmpfs (its root, O_PATH: upper/ in scratch mode, tmp/,
 * shm/) or its network namespace, a new fd: asked of its init, or taken
 * from it while it is paused.  EOPNOTSUPP for a sandbox made by an older
 * hutch. */
int sandbox_held_fd(struct hutch_sandbox *sb, enum sandbox_held which, hutch_error_t *err);
/* The sandbox's writable layer (overlayfs's upper directory), a new
 * O_RDONLY directory fd: <state>/<id>/upper on the host's disk, else
 * upper/ of its tmpfs. */
int sandbox_upper_fd(struct hutch_sandbox *sb, hutch_error_t *err);

#endif
