/* SPDX-License-Identifier: Apache-2.0 */
#include "config.h"

#include "mounts.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "in_root.h"
#include "resource_limits.h"
#include "paths.h"
#include "util.h"

static const char *const dev_nodes[6] = {"null", "zero", "full", "random", "urandom", "tty"};

/* /proc entries that reveal or change host state: Docker's maskedPaths and
 * readonlyPaths, plus kallsyms. */
static const char *const proc_readonly[] = {"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"};
static const char *const proc_masked_files[] = {
    "/proc/kcore",         "/proc/kallsyms",    "/proc/keys",       "/proc/timer_list", "/proc/sched_debug",
    "/proc/latency_stats", "/proc/timer_stats", "/proc/interrupts", "/proc/key-users",  "/proc/kpagecount",
    "/proc/kpageflags",    "/proc/kpagecgroup", "/proc/config.gz",  "/proc/vmallocinfo"};
static const char *const proc_masked_dirs[] = {"/proc/acpi", "/proc/asound", "/proc/scsi", "/proc/driver"};

void mount_plan_init(struct mount_plan *plan) {
  memset(plan, 0, sizeof(*plan));
  plan->proc_fd = plan->tmp_fd = plan->shm_fd = plan->dev_fd = plan->empty_fd = plan->scratch_fd = -1;
  for (size_t i = 0; i < ARRAY_SIZE(plan->dev_fds); i++)
    plan->dev_fds[i] = -1;
}

void mount_plan_release(struct mount_plan *plan) {
  int *fds[] = {&plan->proc_fd, &plan->tmp_fd, &plan->shm_fd, &plan->dev_fd, &plan->empty_fd, &plan->scratch_fd};
  for (size_t i = 0; i < ARRAY_SIZE(fds); i++)
    if (*fds[i] >= 0)
      close(*fds[i]);
  for (size_t i = 0; i < ARRAY_SIZE(plan->dev_fds); i++)
    if (plan->dev_fds[i] >= 0)
      close(plan->dev_fds[i]);
  for (size_t i = 0; i < plan->n_binds; i++) {
    if (plan->binds[i].fd >= 0)
      close(plan->binds[i].fd);
    free(plan->binds[i].dest);
  }
  free(plan->binds);
  mount_plan_init(plan);
}

int mounts_make_private(hutch_error_t *err) {
  /* Without this, mounts made in the sandbox would propagate back to the
   * host's shared mounts (systemd makes / shared). */
  if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
    return hutch_error_sys(err, "mounts: make / private");
  return 0;
}

/* Ptys a sandbox may have at once: terminals for a multiplexer's worth of
 * shells, a fiftieth of the pool the sandboxes share. */
#define MOUNTS_PTYS "64"

/* Inodes cost kernel memory that size= does not count: one per 8 KiB of
 * the budget (524,288 for 4 GiB), as many small files as a source tree
 * has, not millions of empty ones. */
#define TMPFS_BYTES_PER_INODE 8192
#define TMPFS_MIN_INODES 4096

static int tmpfs_open(uint64_t bytes, hutch_error_t *err) {
  int fs = (int)syscall(SYS_fsopen, "tmpfs", FSOPEN_CLOEXEC);
  if (fs < 0)
    return hutch_error_sys(err, "mounts: fsopen tmpfs");
  char size[32], inodes[32];
  snprintf(size, sizeof(size), "%llu", (unsigned long long)bytes);
  uint64_t n = bytes / TMPFS_BYTES_PER_INODE;
  snprintf(inodes, sizeof(inodes), "%llu", (unsigned long long)(n < TMPFS_MIN_INODES ? TMPFS_MIN_INODES : n));
  bool bounded = bytes != LIMITS_UNLIMITED;
  int mnt = -1;
  if (syscall(SYS_fsconfig, fs, FSCONFIG_SET_STRING, "mode", "0700", 0) == 0 &&
      (!bounded || (syscall(SYS_fsconfig, fs, FSCONFIG_SET_STRING, "size", size, 0) == 0 &&
                    syscall(SYS_fsconfig, fs, FSCONFIG_SET_STRING, "nr_inodes", inodes, 0) == 0)) &&
      syscall(SYS_fsconfig, fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) == 0)
    mnt = (int)syscall(SYS_fsmount, fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
  int saved = errno;
  close(fs);
  if (mnt < 0) {
    errno = saved;
    return hutch_error_sys(err, "mounts: the sandbox's tmpfs (size %s)", bounded ? size : "default");
  }
  return mnt;
}

/* A directory of the tmpfs (mode, whatever the umask), as a detached bind
 * with `attrs` added to the tmpfs's nosuid and nodev. */
static int tmpfs_subdir(int mnt, const char *name, mode_t mode, uint64_t attrs, hutch_error_t *err) {
  if (mkdirat(mnt, name, 0700) < 0 || fchmodat(mnt, name, mode, 0) < 0)
    return hutch_error_sys(err, "mounts: create %s on the sandbox's tmpfs", name);
  _cleanup_close_ int fd = (int)syscall(SYS_open_tree, mnt, name, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
  if (fd < 0)
    return hutch_error_sys(err, "mounts: clone %s of the sandbox's tmpfs", name);
  struct mount_attr attr = {.attr_set = attrs};
  if (attrs != 0 && syscall(SYS_mount_setattr, fd, "", AT_EMPTY_PATH, &attr, sizeof(attr)) < 0)
    return hutch_error_sys(err, "mounts: flags of %s of the sandbox's tmpfs", name);
  return steal_fd(&fd);
}

int mounts_sandbox_tmpfs(uint64_t bytes, const char *dir, bool layers, struct mount_plan *plan, hutch_error_t *err) {
  _cleanup_close_ int mnt = tmpfs_open(bytes, err);
  if (mnt < 0)
    return -1;
  /* Attached first: only a mount of this namespace can be cloned. */
  if (syscall(SYS_move_mount, mnt, "", AT_FDCWD, dir, MOVE_MOUNT_F_EMPTY_PATH) < 0)
    return hutch_error_sys(err, "mounts: attach the sandbox's tmpfs at %s", dir);
  /* /dev and the masks of /proc's directories are directories of it too:
   * binds, where tmpfs mounts of their own would each add a superblock to
   * make at the start and to tear down at the end (in init's exit, which a
   * one-shot waits for).  The empty one is reachable only through its
   * read-only binds: nothing of the tmpfs's root is mounted in the
   * sandbox. */
  if ((plan->tmp_fd = tmpfs_subdir(mnt, "tmp", 01777, 0, err)) < 0 ||
      (plan->shm_fd = tmpfs_subdir(mnt, "shm", 01777, 0, err)) < 0 ||
      (plan->dev_fd = tmpfs_subdir(mnt, "dev", 0755, MOUNT_ATTR_NOEXEC, err)) < 0 ||
      (plan->empty_fd = tmpfs_subdir(mnt, "empty", 0555, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOEXEC, err)) < 0)
    return -1;
  /* overlayfs keeps user.overlay.* xattrs in the upper directory, which
   * tmpfs supports from Linux 6.6. */
  if (layers && setxattr(dir, "user.hutch.probe", "1", 1, 0) == 0) {
    removexattr(dir, "user.hutch.probe");
    plan->scratch_fd = steal_fd(&mnt);
    return 1;
  }
  if (layers && errno != EOPNOTSUPP)
    return hutch_error_sys(err, "mounts: user xattrs on the sandbox's tmpfs");
  /* The clones keep the tmpfs; the directory's own contents show again.
   * The mount's fd still leads to it, detached. */
  if (umount2(dir, MNT_DETACH) < 0)
    return hutch_error_sys(err, "mounts: unmount the sandbox's tmpfs from %s", dir);
  plan->scratch_fd = steal_fd(&mnt);
  return 0;
}

/* overlayfs option values treat ',' as separator and ':' as a lower-layer
 * separator; '\' escapes both. */
static char *escape_overlay_path(const char *path) {
  char *out = xmalloc(strlen(path) * 2 + 1), *o = out;
  for (const char *p = path; *p; p++) {
    if (*p == ',' || *p == ':' || *p == '\\')
      *o++ = '\\';
    *o++ = *p;
  }
  *o = '\0';
  return out;
}

int mounts_overlay(const char *lower, const char *upper, const char *work, const char *target, hutch_error_t *err) {
  return mounts_overlay_layers(lower, NULL, upper, work, target, err);
}

/* mount(2) carries at most one page of options: about 40 lowers of a
 * Dockerfile build.  The new mount API takes each lower on its own
 * (lowerdir+, Linux 6.8), up to overlayfs's own limit of 500. */
static int overlay_fsconfig(const char *lower, const char *const *more_lowers, const char *upper, const char *work,
                            const char *target, hutch_error_t *err) {
  _cleanup_close_ int fs = (int)syscall(SYS_fsopen, "overlay", FSOPEN_CLOEXEC);
  if (fs < 0)
    return hutch_error_sys(err, "mounts: fsopen overlay");
  bool ok = syscall(SYS_fsconfig, fs, FSCONFIG_SET_STRING, "lowerdir+", lower, 0) == 0;
  for (const char *const *m = more_lowers; ok && m && *m; m++)
    ok = syscall(SYS_fsconfig, fs, FSCONFIG_SET_STRING, "lowerdir+", *m, 0) == 0;
  if (!ok) {
    hutch_error_sys(err, "mounts: overlayfs over %s: more layers than one page of mount options", lower);
    return hutch_error_hint(err, "an image of this many layers needs Linux >= 6.8 (lowerdir+); "
                                 "join RUN lines of the Dockerfile to make fewer layers");
  }
  if (syscall(SYS_fsconfig, fs, FSCONFIG_SET_STRING, "upperdir", upper, 0) < 0 ||
      syscall(SYS_fsconfig, fs, FSCONFIG_SET_STRING, "workdir", work, 0) < 0 ||
      syscall(SYS_fsconfig, fs, FSCONFIG_SET_FLAG, "userxattr", NULL, 0) < 0 ||
      syscall(SYS_fsconfig, fs, FSCONFIG_SET_FLAG, "volatile", NULL, 0) < 0 ||
      syscall(SYS_fsconfig, fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0)
    return hutch_error_sys(err, "mounts: overlayfs over %s", lower);
  _cleanup_close_ int mnt = (int)syscall(SYS_fsmount, fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_NODEV);
  if (mnt < 0 || syscall(SYS_move_mount, mnt, "", AT_FDCWD, target, MOVE_MOUNT_F_EMPTY_PATH) < 0)
    return hutch_error_sys(err, "mounts: mount overlayfs over %s on %s", lower, target);
  return 0;
}

int mounts_overlay_layers(const char *lower, const char *const *more_lowers, const char *upper, const char *work,
                          const char *target, hutch_error_t *err) {
  _cleanup_free_ char *l = escape_overlay_path(lower);
  /* A built image is a layer over its base: "layer:base", top first. */
  for (const char *const *m = more_lowers; m && *m; m++) {
    _cleanup_free_ char *e = escape_overlay_path(*m);
    char *joined = xasprintf("%s:%s", l, e);
    free(l);
    l = joined;
  }
  _cleanup_free_ char *u = escape_overlay_path(upper);
  _cleanup_free_ char *w = escape_overlay_path(work);
  /* userxattr: in a user namespace overlayfs may only use user.overlay.*
   * xattrs; without them it cannot mark a directory opaque, and replacing a
   * directory of the image fails with EIO.  volatile: the upper layer dies
   * with the sandbox, so overlayfs may skip every sync, most of the cost of
   * tearing a sandbox down. */
  _cleanup_free_ char *opts = xasprintf("lowerdir=%s,upperdir=%s,workdir=%s,userxattr,volatile", l, u, w);
  if (strlen(opts) >= 4000)
    return overlay_fsconfig(lower, more_lowers, upper, work, target, err);
  if (mount("overlay", target, "overlay", MS_NODEV, opts) < 0) {
    hutch_error_sys(err, "mounts: overlayfs over %s", lower);
    if (errno == EPERM || errno == EINVAL)
      hutch_error_hint(err, "overlayfs inside a user namespace needs Linux >= 5.11, and the store and state "
                            "directories on filesystems that support it (not overlayfs or NFS); "
                            "run `hutch doctor`");
    return -1;
  }
  return 0;
}

static int open_tree_clone(const char *path, bool recursive) {
  return (int)syscall(SYS_open_tree, AT_FDCWD, path,
                      OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | (recursive ? AT_RECURSIVE : 0));
}

static int open_proc(hutch_error_t *err) {
  int fs = (int)syscall(SYS_fsopen, "proc", FSOPEN_CLOEXEC);
  if (fs < 0)
    return hutch_error_sys(err, "mounts: fsopen proc");
  int mnt = -1;
  if (syscall(SYS_fsconfig, fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) == 0)
    mnt = (int)syscall(SYS_fsmount, fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC);
  int saved = errno;
  close(fs);
  if (mnt < 0) {
    errno = saved;
    hutch_error_sys(err, "mounts: mount a fresh procfs");
    if (saved == EPERM)
      hutch_error_hint(err, "the kernel refuses a new procfs when the outer /proc has masked paths (\"mount too "
                            "revealing\": Docker, podman and Kubernetes do this). Relax the outer container "
                            "(docker --security-opt systempaths=unconfined, podman --security-opt unmask=/proc/*, "
                            "Kubernetes procMount: Unmasked), or accept the degraded --proc host-ro; run "
                            "`hutch doctor`");
    return -1;
  }
  return mnt;
}

/* The degraded --proc host-ro: a read-only recursive clone of the outer
 * /proc.  Its pid entries are the host's; mounts_mask_proc() still covers
 * the dangerous files. */
static int open_host_proc_ro(hutch_error_t *err) {
  int fd = open_tree_clone("/proc", true);
  if (fd < 0)
    return hutch_error_sys(err, "mounts: clone the host's /proc (--proc host-ro)");
  struct mount_attr attr = {.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC};
  if (syscall(SYS_mount_setattr, fd, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr, sizeof(attr)) < 0) {
    hutch_error_sys(err, "mounts: make the host's /proc read-only (--proc host-ro)");
    close(fd);
    return -1;
  }
  return fd;
}

int mounts_open_detached(const struct hutch_bind *binds, const struct file_id *ids, size_t n_binds, bool proc_host_ro,
                         struct mount_plan *plan, hutch_error_t *err) {
  plan->proc_fd = proc_host_ro ? open_host_proc_ro(err) : open_proc(err);
  if (plan->proc_fd < 0)
    return -1;
  for (size_t i = 0; i < ARRAY_SIZE(dev_nodes); i++) {
    char path[32];
    snprintf(path, sizeof(path), "/dev/%s", dev_nodes[i]);
    plan->dev_fds[i] = open_tree_clone(path, false);
    if (plan->dev_fds[i] < 0)
      return hutch_error_sys(err, "mounts: clone host device %s", path);
    /* The node is the host's: where the sandbox's uid 0 is the host's
     * owner of it (hutch run as root), a read-write bind would let the
     * sandbox chmod or chown the host's /dev/null.  Read-only, the device
     * still reads and writes (a write goes to the driver, not the
     * filesystem); its attributes do not change.  The masks of /proc,
     * binds of /dev/null, inherit the flag. */
    struct mount_attr attr = {.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID};
    if (syscall(SYS_mount_setattr, plan->dev_fds[i], "", AT_EMPTY_PATH, &attr, sizeof(attr)) < 0)
      return hutch_error_sys(err, "mounts: make host device %s read-only", path);
  }
  plan->binds = xcalloc(n_binds ? n_binds : 1, sizeof(*plan->binds));
  for (size_t i = 0; i < n_binds; i++) {
    struct detached_bind *b = &plan->binds[plan->n_binds];
    b->fd = -1;
    b->dest = paths_normalize_inside(binds[i].dest);
    if (b->dest == NULL || strcmp(b->dest, "/") == 0)
      return hutch_error_set(err, EINVAL, "bind: destination '%s' must be an absolute path without '..', not /",
                             binds[i].dest);
    plan->n_binds++;
    b->fd = open_tree_clone(binds[i].source, true);
    if (b->fd < 0)
      return hutch_error_sys(err, "bind: open %s", binds[i].source);
    /* Checked by the parent a moment ago, by name: a link swapped in since
     * (by a sandbox that can write a directory on the way) must not lead
     * the mount elsewhere. */
    struct stat st;
    if (ids && (fstat(b->fd, &st) < 0 || st.st_dev != ids[i].dev || st.st_ino != ids[i].ino))
      return hutch_error_set(err, EAGAIN, "bind: %s changed while the sandbox started", binds[i].source);
    if (binds[i].readonly) {
      struct mount_attr attr = {.attr_set = MOUNT_ATTR_RDONLY};
      if (syscall(SYS_mount_setattr, b->fd, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr, sizeof(attr)) < 0)
        return hutch_error_sys(err, "bind: make %s read-only", binds[i].source);
    }
  }
  return 0;
}

#define OLD_ROOT_PREFIX ".hutch-old-root-"

int mounts_pivot_root(const char *new_root, char old_name[OLD_ROOT_NAME_SIZE], hutch_error_t *err) {
  /* The old root goes on a directory of its own, not on top of the new
   * root ("pivot_root(".", ".")"): stacked on "/", it would be what ".." of
   * "/" leads to, and a symlink of the image the setup follows before
   * mounts_detach_old_root() ("etc -> ../tmp/x") would reach the host.  A
   * fresh directory of a random name, made now: the image cannot name it,
   * and mkdir refuses anything already there. */
  uint8_t rnd[16];
  if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
    return hutch_error_sys(err, "pivot_root: a name for the old root (getrandom)");
  int n = snprintf(old_name, OLD_ROOT_NAME_SIZE, OLD_ROOT_PREFIX);
  for (size_t i = 0; i < sizeof(rnd); i++)
    n += snprintf(old_name + n, OLD_ROOT_NAME_SIZE - (size_t)n, "%02x", rnd[i]);
  if (chdir(new_root) < 0)
    return hutch_error_sys(err, "pivot_root: chdir %s", new_root);
  if (mkdir(old_name, 0700) == 0) {
    if (syscall(SYS_pivot_root, ".", old_name) < 0)
      return hutch_error_sys(err, "pivot_root into %s", new_root);
  } else {
    /* A root that takes no new directory (fuse-overlayfs serving a state
     * directory on FUSE refuses it): stacked, and detached at once, so that
     * nothing runs with the old root on top; mounts_detach_old_root() then
     * has nothing to do. */
    old_name[0] = '\0';
    if (syscall(SYS_pivot_root, ".", ".") < 0)
      return hutch_error_sys(err, "pivot_root into %s", new_root);
    if (umount2(".", MNT_DETACH) < 0)
      return hutch_error_sys(err, "pivot_root: detach the old root");
  }
  if (chdir("/") < 0)
    return hutch_error_sys(err, "pivot_root: chdir /");
  return 0;
}

int mounts_detach_old_root(const char *old_name, hutch_error_t *err) {
  /* The lazy unmount drops the old root with every host mount under it, so
   * nothing of the host's tree stays reachable (chroot would leave it
   * reachable); then its directory goes. */
  if (old_name[0] == '\0')
    return 0; /* detached by mounts_pivot_root already */
  if (strncmp(old_name, OLD_ROOT_PREFIX, sizeof(OLD_ROOT_PREFIX) - 1) != 0 || strchr(old_name, '/') != NULL)
    return hutch_error_set(err, EINVAL, "pivot_root: %s is not an old root's name", old_name);
  char path[OLD_ROOT_NAME_SIZE + 1];
  snprintf(path, sizeof(path), "/%s", old_name);
  if (umount2(path, MNT_DETACH | UMOUNT_NOFOLLOW) < 0)
    return hutch_error_sys(err, "pivot_root: detach the old root from %s", path);
  if (rmdir(path) < 0)
    return hutch_error_sys(err, "pivot_root: remove %s", path);
  return 0;
}

/* The detached mount *fd placed on dest of the new root (its mount point
 * made, as a directory or a file, when missing): resolved as in_root.h
 * says, never through /proc's magic links. */
static int place_detached(int *fd, const char *dest, bool dir, bool no_symlinks, hutch_error_t *err) {
  _cleanup_close_ int target = in_root_mountpoint(dest, dir, no_symlinks, err);
  if (target < 0)
    return -1;
  return in_root_move_mount(fd, target, dest, err);
}

/* The same, for a mount point of the sandbox's own tmpfs (/dev's). */
static int move_detached(int *fd, const char *dest, hutch_error_t *err) {
  if (syscall(SYS_move_mount, *fd, "", AT_FDCWD, dest, MOVE_MOUNT_F_EMPTY_PATH) < 0)
    return hutch_error_sys(err, "mounts: attach at %s", dest);
  close(*fd);
  *fd = -1;
  return 0;
}

int mounts_place_proc(struct mount_plan *plan, hutch_error_t *err) {
  /* On a directory of the image, not through a symlink: the masks below,
   * init's memory watch and its reports name /proc by path, and an image
   * that moved it (proc -> /dev/shm/../p) would have them look elsewhere. */
  return place_detached(&plan->proc_fd, "/proc", true, true, err);
}

int mounts_setup_dev(struct mount_plan *plan, bool tty_group_mapped, hutch_error_t *err) {
  /* /dev is a directory of the sandbox's tmpfs (nosuid, nodev, noexec):
   * the nodes below are binds of the host's, each a mount with its own
   * flags, so nodev here keeps no device from working. */
  if (place_detached(&plan->dev_fd, "/dev", true, true, err) < 0)
    return -1;
  for (size_t i = 0; i < ARRAY_SIZE(dev_nodes); i++) {
    char path[32];
    snprintf(path, sizeof(path), "/dev/%s", dev_nodes[i]);
    /* Rootless cannot mknod a device: the host's nodes are bind-mounted
     * instead, each over an empty file.  The tmpfs is new and empty, so
     * the file is made in one call, with no look first. */
    if (mknod(path, S_IFREG | 0644, 0) < 0)
      return hutch_error_sys(err, "create mount point %s", path);
    if (move_detached(&plan->dev_fds[i], path, err) < 0)
      return -1;
  }
  if (mkdir("/dev/pts", 0755) < 0 || mkdir("/dev/shm", 01777) < 0)
    return hutch_error_sys(err, "mounts: create /dev/pts and /dev/shm");
  /* A private devpts instance: the sandbox sees only its own ptys.  Every
   * instance but the host's draws on one pool (kernel.pty.max less
   * kernel.pty.reserve, 3072 by default): its own maximum keeps one sandbox
   * from taking all of it, and with it every other sandbox's `exec -t`. */
  const char *pts_opts = tty_group_mapped ? "newinstance,ptmxmode=0666,max=" MOUNTS_PTYS ",mode=0620,gid=5"
                                          : "newinstance,ptmxmode=0666,max=" MOUNTS_PTYS;
  if (mount("devpts", "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC, pts_opts) < 0)
    return hutch_error_sys(err, "mounts: devpts on /dev/pts");
  /* The sandbox's tmpfs: /dev/shm shares its budget with /tmp and the
   * writable layer, rather than half the host's memory of its own. */
  if (move_detached(&plan->shm_fd, "/dev/shm", err) < 0)
    return -1;
  static const char *const links[][2] = {{"pts/ptmx", "/dev/ptmx"},
                                         {"/proc/self/fd", "/dev/fd"},
                                         {"/proc/self/fd/0", "/dev/stdin"},
                                         {"/proc/self/fd/1", "/dev/stdout"},
                                         {"/proc/self/fd/2", "/dev/stderr"}};
  for (size_t i = 0; i < ARRAY_SIZE(links); i++)
    if (symlink(links[i][0], links[i][1]) < 0)
      return hutch_error_sys(err, "mounts: symlink %s", links[i][1]);
  if (chmod("/dev/shm", 01777) < 0)
    return hutch_error_sys(err, "mounts: chmod /dev/shm");
  return 0;
}

int mounts_mask_proc(struct mount_plan *plan, hutch_error_t *err) {
  for (size_t i = 0; i < ARRAY_SIZE(proc_readonly); i++) {
    const char *p = proc_readonly[i];
    if (mount(p, p, NULL, MS_BIND | MS_REC, NULL) < 0) {
      if (errno == ENOENT)
        continue;
      return hutch_error_sys(err, "mounts: bind %s", p);
    }
    if (mount(NULL, p, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
      return hutch_error_sys(err, "mounts: make %s read-only", p);
  }
  for (size_t i = 0; i < ARRAY_SIZE(proc_masked_files); i++) {
    const char *p = proc_masked_files[i];
    if (mount("/dev/null", p, NULL, MS_BIND, NULL) < 0 && errno != ENOENT)
      return hutch_error_sys(err, "mounts: mask %s", p);
  }
  /* The sandbox tmpfs's empty read-only directory over the first masked
   * directory, and binds of that over the others (a bind keeps the flags of
   * the mount it copies). */
  const char *empty = NULL;
  for (size_t i = 0; i < ARRAY_SIZE(proc_masked_dirs); i++) {
    const char *p = proc_masked_dirs[i];
    int r = empty ? mount(empty, p, NULL, MS_BIND, NULL)
                  : (int)syscall(SYS_move_mount, plan->empty_fd, "", AT_FDCWD, p, MOVE_MOUNT_F_EMPTY_PATH);
    if (r < 0) {
      if (errno == ENOENT)
        continue;
      return hutch_error_sys(err, "mounts: mask %s", p);
    }
    if (empty == NULL)
      empty = p;
  }
  return 0;
}

int mounts_tmp(struct mount_plan *plan, hutch_error_t *err) {
  return place_detached(&plan->tmp_fd, "/tmp", true, false, err);
}

int mounts_place_binds(struct mount_plan *plan, hutch_error_t *err) {
  for (size_t i = 0; i < plan->n_binds; i++) {
    struct detached_bind *b = &plan->binds[i];
    struct stat st;
    if (fstat(b->fd, &st) < 0)
      return hutch_error_sys(err, "bind: stat source of %s", b->dest);
    if (place_detached(&b->fd, b->dest, S_ISDIR(st.st_mode), false, err) < 0)
      return hutch_error_wrap(err, "bind %s", b->dest);
  }
  return 0;
}

int mounts_read_only_root(hutch_error_t *err) {
  /* Not recursive: /proc, /dev, /tmp, /dev/shm and the binds are mounts of
   * their own and keep their flags.  A flag set from inside the sandbox's
   * user namespace, which the command (without CAP_SYS_ADMIN, and with
   * mount calls refused by seccomp) cannot clear. */
  struct mount_attr attr = {.attr_set = MOUNT_ATTR_RDONLY};
  if (syscall(SYS_mount_setattr, AT_FDCWD, "/", 0, &attr, sizeof(attr)) < 0)
    return hutch_error_sys(err, "mounts: make the root read-only (mount_setattr /)");
  return 0;
}
