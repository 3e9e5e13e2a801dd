/* SPDX-License-Identifier: Apache-2.0 */
#include "config.h"

#include "in_root.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <fcntl.h>
#include <sys/mount.h>
#include <linux/openat2.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "paths.h"
#include "util.h"

/* As the sandbox's processes resolve a path, less the magic links. */
#define RESOLVE_IMAGE (RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS)
/* One name below a directory already open, never through a symlink. */
#define RESOLVE_CHILD (RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)

int in_root_open(const char *path, int flags, mode_t mode) {
  /* The process's root is the new root (pivot_root); RESOLVE_IN_ROOT takes
   * it from this fd, whatever the working directory is. */
  _cleanup_close_ int root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (root < 0)
    return -1;
  return openat2_retry(root, path, (uint64_t)flags, mode, RESOLVE_IMAGE);
}

int in_root_child(int dir, const char *name) {
  return openat2_retry(dir, name, O_PATH | O_NOFOLLOW, 0, RESOLVE_CHILD);
}

int in_root_mkdirs(const char *path, mode_t mode) {
  _cleanup_close_ int cur = in_root_open("/", O_PATH | O_DIRECTORY, 0);
  if (cur < 0)
    return -1;
  for (size_t at = 0, start; paths_next_name(path, &at, &start);) {
    _cleanup_free_ char *prefix = xstrndup(path, at);
    _cleanup_free_ char *name = xstrndup(path + start, at - start);
    int next = in_root_open(prefix, O_PATH | O_DIRECTORY, 0);
    if (next < 0 && errno == ENOENT) {
      /* Made below the directory just resolved, then resolved again from
       * the root: a name that was a dangling symlink stays refused. */
      if (mkdirat(cur, name, mode) < 0 && errno != EEXIST)
        return -1;
      next = in_root_open(prefix, O_PATH | O_DIRECTORY, 0);
    }
    if (next < 0)
      return -1;
    close(cur);
    cur = next;
  }
  return steal_fd(&cur);
}

static int refused(hutch_error_t *err, const char *path, bool no_symlinks) {
  hutch_error_sys(err, "mount point %s", path);
  if (errno == ELOOP && no_symlinks)
    return hutch_error_hint(err,
                            "the image's %s is a symlink: hutch mounts it only on a directory of the image, "
                            "since the setup and init reach it by that path afterwards",
                            path);
  if (errno == ELOOP || errno == EXDEV)
    return hutch_error_hint(err,
                            "the image's symlinks on the way to %s lead through /proc (a magic link such as "
                            "/proc/self/fd/N), which the setup never follows; or they loop",
                            path);
  return -1;
}

/* /proc and /dev, once placed, are hutch's: a mount point that an image's
 * symlink leads into them (tmp -> /proc, mnt -> /proc/self, tmp -> /dev)
 * would cover procfs or its masks, or what init reads there (its memory
 * watch, /proc/self/ns/user), or the /dev/null the masks are made of.  A
 * path the caller names there itself, with no symlink (a bind on
 * /dev/kvm), is the caller's choice. */
static int kept_out_of_kernel_dirs(int fd, const char *path, hutch_error_t *err) {
  char link[32], real[PATH_MAX];
  snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
  ssize_t n = readlink(link, real, sizeof(real) - 1);
  if (n < 0)
    return hutch_error_sys(err, "mount point %s: where it leads", path);
  real[n] = '\0';
  _cleanup_free_ char *named = paths_normalize_inside(path);
  static const char *const kernel_dirs[] = {"/proc", "/dev"};
  for (size_t i = 0; i < sizeof(kernel_dirs) / sizeof(*kernel_dirs); i++)
    if (named == NULL || paths_led_into(real, named, kernel_dirs[i])) {
      hutch_error_set(err, EPERM, "mount point %s leads into %s (%s)", path, kernel_dirs[i], real);
      return hutch_error_hint(err,
                              "the image's symlinks on the way to %s lead into %s, which is hutch's: it mounts "
                              "nothing there that a symlink chose",
                              path, kernel_dirs[i]);
    }
  return 0;
}

int in_root_mountpoint(const char *path, bool dir, bool no_symlinks, hutch_error_t *err) {
  _cleanup_close_ int fd = -1;
  if (no_symlinks) {
    _cleanup_close_ int root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
    fd = root < 0 ? -1 : openat2_retry(root, path, O_PATH | O_NOFOLLOW, 0, RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS);
    if (fd >= 0 || errno != ENOENT)
      goto opened;
  }
  fd = in_root_open(path, O_PATH, 0);
  if (fd < 0 && errno == ENOENT) {
    const char *slash = strrchr(path, '/');
    _cleanup_free_ char *parent = slash && slash != path ? xstrndup(path, (size_t)(slash - path)) : xstrdup("/");
    const char *name = slash ? slash + 1 : path;
    if (*name == '\0')
      return hutch_error_set(err, EINVAL, "mount point %s: no name", path);
    _cleanup_close_ int p = in_root_mkdirs(parent, 0755);
    if (p < 0)
      return refused(err, parent, false);
    if (dir) {
      if (mkdirat(p, name, 0755) < 0 && errno != EEXIST)
        return hutch_error_sys(err, "create mount point %s", path);
    } else {
      int f = openat2_retry(p, name, O_WRONLY | O_CREAT | O_NOFOLLOW, 0644, RESOLVE_CHILD);
      if (f < 0 && errno != EEXIST)
        return hutch_error_sys(err, "create mount point %s", path);
      if (f >= 0)
        close(f);
    }
    fd = in_root_child(p, name);
  }
opened:
  if (fd < 0)
    return refused(err, path, no_symlinks);
  struct stat st;
  if (fstat(fd, &st) < 0)
    return hutch_error_sys(err, "mount point %s", path);
  if (S_ISLNK(st.st_mode) && no_symlinks) {
    errno = ELOOP;
    return refused(err, path, true);
  }
  if (S_ISLNK(st.st_mode))
    return hutch_error_set(err, ENOENT, "mount point %s is a symlink that leads nowhere", path);
  if (dir ? !S_ISDIR(st.st_mode) : S_ISDIR(st.st_mode))
    return hutch_error_set(err, dir ? ENOTDIR : EISDIR, "mount point %s is a %s", path,
                           S_ISDIR(st.st_mode) ? "directory" : "file");
  if (!no_symlinks && kept_out_of_kernel_dirs(fd, path, err) < 0)
    return -1;
  return steal_fd(&fd);
}

int in_root_move_mount(int *tree, int target, const char *dest, hutch_error_t *err) {
  if (syscall(SYS_move_mount, *tree, "", target, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
    return hutch_error_sys(err, "mounts: attach at %s", dest);
  close(*tree);
  *tree = -1;
  return 0;
}

int in_root_create_file(int dir, const char *name, const char *content, mode_t mode) {
  _cleanup_close_ int fd = openat2_retry(dir, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, mode, RESOLVE_CHILD);
  if (fd < 0)
    return -1;
  return write_all(fd, content, strlen(content));
}
