/* SPDX-License-Identifier: Apache-2.0 */
/* --overlay fuse, the child's half (overlay_fuse.h tells the whole story):
 * open /dev/fuse while the host's /dev is still visible, mount the FUSE
 * filesystem on the new root, and hand its connection to the host side,
 * which starts the daemon on it. */
#include "config.h"

#include "fuse_mount.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/mount.h>
#include <unistd.h>

#include "sync.h"
#include "util.h"

int overlay_fuse_open_device(hutch_error_t *err) {
  int fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    hutch_error_sys(err, "--overlay fuse: open /dev/fuse");
    if (errno == ENOENT)
      hutch_error_hint(err, "the fuse module is not loaded (as root: `modprobe fuse`), or an outer container "
                            "does not pass the device (docker/podman: --device /dev/fuse)");
    else
      hutch_error_hint(err, "the device is not usable here (permissions, or an outer container's device "
                            "cgroup): docker/podman --device /dev/fuse; run `hutch doctor`");
    return -1;
  }
  return fd;
}

int overlay_fuse_mount(int fuse_fd, const char *target, hutch_error_t *err) {
  /* allow_other: every sandbox id, not only uid 0, may use the root; the
   * kernel still limits a FUSE mount of a user namespace to that
   * namespace.  default_permissions: the kernel checks modes and owners
   * itself, as it does on overlayfs, instead of trusting the daemon to. */
  char opts[128];
  snprintf(opts, sizeof(opts), "fd=%d,rootmode=40000,user_id=0,group_id=0,allow_other,default_permissions", fuse_fd);
  if (mount("fuse-overlayfs", target, "fuse.fuse-overlayfs", MS_NODEV, opts) < 0) {
    hutch_error_sys(err, "--overlay fuse: mount the FUSE filesystem on %s", target);
    return hutch_error_hint(err, "FUSE mounts in a user namespace need Linux >= 4.18; run `hutch doctor`");
  }
  return 0;
}

int overlay_fuse_child_mount(int fuse_fd, const char *target, int parent_fd, hutch_error_t *err) {
  if (overlay_fuse_mount(fuse_fd, target, err) < 0)
    return -1;
  int r = sync_send(parent_fd, SYNC_FUSE_FD, NULL, 0, &fuse_fd, 1, err);
  /* The daemon must hold the only copy: if it dies, the connection aborts
   * and this sandbox's accesses fail instead of waiting forever. */
  close(fuse_fd);
  if (r < 0)
    return -1;
  return sync_expect(parent_fd, SYNC_GO, NULL, 0, NULL, "wait for the fuse-overlayfs daemon", err);
}
