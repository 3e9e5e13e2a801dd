/* SPDX-License-Identifier: Apache-2.0 */
/* --overlay fuse: the sandbox's root served by fuse-overlayfs instead of
 * the kernel's overlayfs, a degraded mode for kernels and outer containers
 * that refuse overlayfs in a user namespace.  Only ever used when asked for.
 *
 * Who does what:
 *   - the setup child (contain/fuse_mount.c) opens /dev/fuse before any mount, mounts
 *     the FUSE filesystem on the new root itself (mount(2) with fd=N), and
 *     hands the connection's fd to the host side (SYNC_FUSE_FD);
 *   - the host side (sandbox.c) starts fuse-overlayfs on that fd
 *     (overlay_fuse_start) and only then lets the child go on to pivot_root;
 *   - teardown stops it (overlay_fuse_stop).  See overlay_fuse.c for where
 *     the daemon lives and why. */
#ifndef HUTCH_OVERLAY_FUSE_H
#define HUTCH_OVERLAY_FUSE_H

#include <stdint.h>
#include <sys/types.h>

#include "hutch.h"

/* The program started; overridable (tests, unusual installs) with
 * $HUTCH_FUSE_OVERLAYFS.  Looked up in PATH when it has no '/'. */
#define OVERLAY_FUSE_PROGRAM "fuse-overlayfs"
/* Where the daemon's stderr goes, in the sandbox's state directory. */
#define OVERLAY_FUSE_LOG "fuse-overlayfs.log"

struct overlay_fuse_daemon {
  pid_t pid;           /* 0: none */
  uint64_t start_time; /* /proc/PID/stat field 22, to never signal a reused pid */
};

/* Host side, the counterpart: receive the connection, start the daemon
 * (overlay_fuse_start), let the child go on. */
int overlay_fuse_host_start(int sync_fd, pid_t sandbox_pid, const char *lower, const char *upper, const char *work,
                            int log_dirfd, struct overlay_fuse_daemon *out, hutch_error_t *err);

/* Resolve the program to run: an absolute path, or NULL when there is none
 * (then *why says what was looked for). */
char *overlay_fuse_program(char *why, size_t why_size);

/* Host side: start fuse-overlayfs serving fuse_fd for the sandbox whose
 * init is `sandbox_pid` (its user namespace is joined), with the given
 * layers.  `log_dirfd`/OVERLAY_FUSE_LOG receives the daemon's stderr.
 * Returns once the program has been executed (or failed to be). */
int overlay_fuse_start(pid_t sandbox_pid, int fuse_fd, const char *lower, const char *upper, const char *work,
                       int log_dirfd, struct overlay_fuse_daemon *out, hutch_error_t *err);

/* Stop a daemon: it normally exits by itself once the sandbox's mount
 * namespace is gone (its connection is then aborted); after `grace` seconds
 * it is killed.  Reaps it when it is our child.  Safe on a stale record. */
void overlay_fuse_stop(const struct overlay_fuse_daemon *d, double grace);

#endif
