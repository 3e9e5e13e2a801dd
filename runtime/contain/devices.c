/* SPDX-License-Identifier: Apache-2.0 */
/* The child's side of a sandbox's devices (devices.h). */
#include "config.h"

#include "devices.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/mount.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "in_root.h"
#include "util.h"

int devices_open(struct device_plan *p, hutch_error_t *err) {
  for (size_t i = 0; p && i < p->n_nodes; i++) {
    struct device_node *n = &p->nodes[i];
    /* Never through a symlink: one swapped in since the check would lead
     * the bind to another node. */
    n->fd =
        (int)syscall(SYS_open_tree, AT_FDCWD, n->host_path, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_SYMLINK_NOFOLLOW);
    if (n->fd < 0)
      return hutch_error_sys(err, "device %s: open", n->host_path);
    struct stat st;
    if (fstat(n->fd, &st) < 0)
      return hutch_error_sys(err, "device %s: stat", n->host_path);
    if (!S_ISCHR(st.st_mode) || st.st_rdev != n->rdev || st.st_dev != n->id.dev || st.st_ino != n->id.ino)
      return hutch_error_set(err, EAGAIN, "device %s: changed while the sandbox started", n->host_path);
    /* As the standard nodes (mounts.c): the device still reads and
     * writes, but its owner and mode cannot be changed through it. */
    struct mount_attr attr = {.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID};
    if (syscall(SYS_mount_setattr, n->fd, "", AT_EMPTY_PATH, &attr, sizeof(attr)) < 0)
      return hutch_error_sys(err, "device %s: make the bind read-only", n->host_path);
  }
  return 0;
}

int devices_place(struct device_plan *p, hutch_error_t *err) {
  for (size_t i = 0; p && i < p->n_nodes; i++) {
    struct device_node *n = &p->nodes[i];
    /* A node the sandbox has anyway (--device /dev/zero): already there. */
    struct stat st;
    if (lstat(n->dest, &st) == 0) {
      if (S_ISCHR(st.st_mode) && st.st_rdev == n->rdev) {
        close(n->fd);
        n->fd = -1;
        continue;
      }
      return hutch_error_set(err, EEXIST, "device %s: %s is taken in the sandbox's /dev", n->host_path, n->dest);
    }
    _cleanup_close_ int target = in_root_mountpoint(n->dest, false, true, err);
    if (target < 0 || in_root_move_mount(&n->fd, target, n->dest, err) < 0)
      return hutch_error_wrap(err, "device %s", n->host_path);
  }
  return 0;
}

int devices_write_ld_conf(const struct device_plan *p, hutch_error_t *err) {
  if (p == NULL || p->ld_conf == NULL)
    return 0;
  _cleanup_close_ int dir = in_root_mkdirs("/etc/ld.so.conf.d", 0755);
  if (dir < 0)
    return hutch_error_sys(err, "devices: create /etc/ld.so.conf.d");
  static const char name[] = "000-hutch-cdi.conf";
  if (unlinkat(dir, name, 0) < 0 && errno != ENOENT)
    return hutch_error_sys(err, "devices: replace /etc/ld.so.conf.d/%s", name);
  if (in_root_create_file(dir, name, p->ld_conf, 0644) < 0)
    return hutch_error_sys(err, "devices: write /etc/ld.so.conf.d/%s", name);
  return 0;
}
