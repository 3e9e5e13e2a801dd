/* SPDX-License-Identifier: Apache-2.0 */
/* An overlayfs upper directory copied as it is (layer_tree.h).  Everything
 * in the source is hostile (a sandbox wrote it): no name is followed
 * (every entry is opened or read with O_NOFOLLOW, below a directory fd of
 * its own), and what a layer cannot hold is refused. */
#include "config.h"

#include "layer_tree.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "util.h"

/* Hard links: the first copy of each (dev, ino), linked to again.  An
 * open-addressing table (a power of two of slots, at most half full): the
 * layer is the sandbox's, which may hold as many linked files as its
 * inodes allow, and each one is looked up once. */
struct link_seen {
  dev_t dev;
  ino_t ino;
  char *path; /* below the destination's top; NULL: a free slot */
};

struct copy {
  int dst_top;
  struct link_seen *links;
  size_t n_links, slots;
  char path[4096]; /* of the entry at hand, for messages */
  /* xattr names and a value, made at the first xattr: most entries have
   * none, and an allocation of this size per entry costs a map and an unmap
   * with some allocators (musl's: the front end's child copies a fork's
   * layer four times slower with one). */
  char *names, *value;
  /* Who a file this process creates belongs to, and the bits its umask
   * takes: a file made right needs no chown or chmod after.  A layer is
   * mostly files of the sandbox's root, and each call saved is one of about
   * fourteen a file (a fork's child copies while its parent is paused). */
  uid_t uid;
  gid_t gid;
  mode_t umask;
  bool assume; /* false: the destination makes that unsure, set all */
};

#define XATTR_BUF 65536

static size_t link_slot(const struct link_seen *t, size_t slots, dev_t dev, ino_t ino) {
  uint64_t h = ((uint64_t)ino ^ ((uint64_t)dev << 32)) * 0x9E3779B97F4A7C15ull;
  size_t i = (size_t)(h >> 20) & (slots - 1);
  while (t[i].path != NULL && (t[i].dev != dev || t[i].ino != ino))
    i = (i + 1) & (slots - 1);
  return i;
}

static void link_add(struct copy *c, dev_t dev, ino_t ino, const char *path) {
  if (2 * (c->n_links + 1) > c->slots) {
    size_t slots = c->slots ? 2 * c->slots : 64;
    struct link_seen *t = xcalloc(slots, sizeof(*t));
    for (size_t i = 0; i < c->slots; i++)
      if (c->links[i].path)
        t[link_slot(t, slots, c->links[i].dev, c->links[i].ino)] = c->links[i];
    free(c->links);
    c->links = t;
    c->slots = slots;
  }
  c->links[link_slot(c->links, c->slots, dev, ino)] = (struct link_seen){dev, ino, xstrdup(path)};
  c->n_links++;
}

static int copy_xattrs(int src, int dst, const char *path, struct copy *c, hutch_error_t *err) {
  ssize_t n = flistxattr(src, NULL, 0);
  if (n <= 0)
    return n == 0 || errno == ENOTSUP ? 0 : hutch_error_sys(err, "layer: list the xattrs of %s", path);
  if (c->names == NULL) {
    c->names = xmalloc(XATTR_BUF);
    c->value = xmalloc(XATTR_BUF);
  }
  char *names = c->names, *value = c->value;
  if ((n = flistxattr(src, names, XATTR_BUF)) < 0)
    return hutch_error_sys(err, "layer: list the xattrs of %s", path);
  for (char *name = names; name < names + n; name += strlen(name) + 1) {
    /* File capabilities are not carried: a chown drops them, and every
     * copy chowned its files once; a file gains nothing by a copy. */
    if (strcmp(name, "security.capability") == 0)
      continue;
    ssize_t len = fgetxattr(src, name, value, XATTR_BUF);
    if (len < 0)
      return hutch_error_sys(err, "layer: read xattr %s of %s", name, path);
    if (fsetxattr(dst, name, value, (size_t)len, 0) < 0)
      return hutch_error_sys(err, "layer: set xattr %s on %s", name, path);
  }
  return 0;
}

/* Owner, then mode (chown clears set-id bits), then times. */
static int copy_attrs(int dst, const struct stat *st, const char *path, hutch_error_t *err) {
  if (fchown(dst, st->st_uid, st->st_gid) < 0)
    return hutch_error_sys(err, "layer: chown %s", path);
  if (fchmod(dst, st->st_mode & 07777) < 0)
    return hutch_error_sys(err, "layer: chmod %s", path);
  struct timespec times[2] = {st->st_atim, st->st_mtim};
  if (futimens(dst, times) < 0)
    return hutch_error_sys(err, "layer: set the times of %s", path);
  return 0;
}

/* The same for a file created with its mode (less the umask) by this
 * process: what creation got right is not set again. */
static int copy_file_attrs(int dst, const struct stat *st, const struct copy *c, hutch_error_t *err) {
  bool owned = c->assume && st->st_uid == c->uid && st->st_gid == c->gid;
  if (!owned && fchown(dst, st->st_uid, st->st_gid) < 0)
    return hutch_error_sys(err, "layer: chown %s", c->path);
  mode_t mode = st->st_mode & 07777;
  if ((!owned || mode != (mode & 0777 & ~c->umask)) && fchmod(dst, mode) < 0)
    return hutch_error_sys(err, "layer: chmod %s", c->path);
  struct timespec times[2] = {st->st_atim, st->st_mtim};
  if (futimens(dst, times) < 0)
    return hutch_error_sys(err, "layer: set the times of %s", c->path);
  return 0;
}

/* The bytes of [from, to) of in, to the same offsets of out, a file just
 * made (its offset 0: a range from there needs no seek). */
static int copy_range(int in, int out, off_t from, off_t to, const char *path, hutch_error_t *err) {
  if (from != 0 && lseek(out, from, SEEK_SET) < 0)
    return hutch_error_sys(err, "layer: copy %s", path);
  for (off_t off = from; off < to;) {
    off_t left = to - off;
    ssize_t n = sendfile(out, in, &off, left > (1 << 30) ? (1 << 30) : (size_t)left);
    if (n < 0)
      return hutch_error_sys(err, "layer: copy %s", path);
    if (n == 0)
      break; /* it shrank meanwhile: the sandbox idles, so it cannot */
  }
  return 0;
}

/* A file's data with its holes kept: a sparse file takes no more room in
 * the copy than in the layer.  A fork's child copies its parent's layer
 * into a tmpfs of the parent's size: holes filled in by the copy would not
 * fit, and a sandbox could make itself one that cannot be forked. */
static int copy_data(int in, int out, const struct stat *st, const char *path, hutch_error_t *err) {
  off_t size = st->st_size;
  /* As many blocks as bytes: no hole worth keeping, and no lseek needed to
   * find one (a new file's offset is 0, where the copy starts). */
  if ((off_t)st->st_blocks * 512 >= size)
    return copy_range(in, out, 0, size, path, err);
  for (off_t pos = 0; pos < size;) {
    off_t data = lseek(in, pos, SEEK_DATA);
    if (data < 0 && errno == ENXIO)
      break; /* a hole to the end */
    off_t hole = data < 0 ? size : lseek(in, data, SEEK_HOLE);
    if (data < 0) {
      /* A file system that cannot tell: every byte is data. */
      if (errno != EINVAL && errno != EOPNOTSUPP)
        return hutch_error_sys(err, "layer: find the data of %s", path);
      data = pos;
    }
    if (hole < 0 || hole > size)
      hole = size;
    if (copy_range(in, out, data, hole, path, err) < 0)
      return -1;
    pos = hole;
  }
  if (ftruncate(out, size) < 0) /* a hole at the end */
    return hutch_error_sys(err, "layer: copy %s", path);
  return 0;
}

static int copy_file(int sdir, int ddir, const char *name, const struct stat *st, struct copy *c, hutch_error_t *err) {
  _cleanup_close_ int in = openat(sdir, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (in < 0)
    return hutch_error_sys(err, "layer: open %s", c->path);
  /* Its own mode from the start (no set-id bit, which a chown would
   * clear): nobody else can reach the copy while it is made. */
  _cleanup_close_ int out =
      openat(ddir, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, st->st_mode & 0777);
  if (out < 0)
    return hutch_error_sys(err, "layer: create %s", c->path);
  if (copy_data(in, out, st, c->path, err) < 0)
    return -1;
  if (copy_xattrs(in, out, c->path, c, err) < 0 || copy_file_attrs(out, st, c, err) < 0)
    return -1;
  if (st->st_nlink > 1)
    link_add(c, st->st_dev, st->st_ino, c->path + 1);
  return 0;
}

/* Symlinks, fifos and whiteouts: no contents, no fd to set attributes on. */
static int copy_node(int sdir, int ddir, const char *name, const struct stat *st, struct copy *c, hutch_error_t *err) {
  /* A socket a build step's daemon left (gpg-agent's) means nothing in an
   * image: left out. */
  if (S_ISSOCK(st->st_mode))
    return 0;
  if (S_ISLNK(st->st_mode)) {
    char target[4096];
    ssize_t n = readlinkat(sdir, name, target, sizeof(target) - 1);
    if (n < 0)
      return hutch_error_sys(err, "layer: read the symlink %s", c->path);
    target[n] = '\0';
    if (symlinkat(target, ddir, name) < 0)
      return hutch_error_sys(err, "layer: create the symlink %s", c->path);
  } else if (S_ISFIFO(st->st_mode) || (S_ISCHR(st->st_mode) && st->st_rdev == makedev(0, 0))) {
    /* A 0/0 character device is overlayfs's whiteout, which any user may
     * make: the file of the image below is deleted in this layer. */
    if (mknodat(ddir, name, st->st_mode & (S_IFMT | 07777), st->st_rdev) < 0)
      return hutch_error_sys(err, "layer: create %s", c->path);
  } else {
    return hutch_error_set(err, EPERM, "layer: %s is a device node, which a layer cannot hold", c->path);
  }
  if (fchownat(ddir, name, st->st_uid, st->st_gid, AT_SYMLINK_NOFOLLOW) < 0)
    return hutch_error_sys(err, "layer: chown %s", c->path);
  if (!S_ISLNK(st->st_mode) && fchmodat(ddir, name, st->st_mode & 07777, 0) < 0)
    return hutch_error_sys(err, "layer: chmod %s", c->path);
  struct timespec times[2] = {st->st_atim, st->st_mtim};
  if (utimensat(ddir, name, times, AT_SYMLINK_NOFOLLOW) < 0)
    return hutch_error_sys(err, "layer: set the times of %s", c->path);
  return 0;
}

static bool linked_before(int ddir, const char *name, const struct stat *st, struct copy *c, int *r,
                          hutch_error_t *err) {
  if (S_ISDIR(st->st_mode) || st->st_nlink < 2 || c->slots == 0)
    return false;
  const struct link_seen *l = &c->links[link_slot(c->links, c->slots, st->st_dev, st->st_ino)];
  if (l->path == NULL)
    return false;
  *r = linkat(c->dst_top, l->path, ddir, name, 0) < 0 ? hutch_error_sys(err, "layer: hard link %s", c->path) : 0;
  return true;
}

static int copy_dir(int sdir, int ddir, unsigned depth, struct copy *c, hutch_error_t *err) {
  if (depth > LAYER_COPY_MAX_DEPTH)
    return hutch_error_set(err, ELOOP, "layer: %s is more than %d directories deep", c->path, LAYER_COPY_MAX_DEPTH);
  /* A reading of its own, from the start: a dup would share sdir's offset
   * with whoever else holds it (every child of a fork holds the one
   * seed, and the first to read would leave it at the end for the next). */
  int fd = openat(sdir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  DIR *d = fd < 0 ? NULL : fdopendir(fd);
  if (d == NULL) {
    if (fd >= 0)
      close(fd);
    return hutch_error_sys(err, "layer: read the directory %s", c->path);
  }
  size_t base = strlen(c->path);
  int r = 0;
  struct dirent *de;
  while (r == 0 && (errno = 0, de = readdir(d)) != NULL) {
    const char *name = de->d_name;
    if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
      continue;
    snprintf(c->path + base, sizeof(c->path) - base, "/%s", name);
    struct stat st;
    if (fstatat(sdir, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
      r = hutch_error_sys(err, "layer: stat %s", c->path);
    } else if (linked_before(ddir, name, &st, c, &r, err)) {
      /* r is set */
    } else if (S_ISREG(st.st_mode)) {
      r = copy_file(sdir, ddir, name, &st, c, err);
    } else if (!S_ISDIR(st.st_mode)) {
      r = copy_node(sdir, ddir, name, &st, c, err);
    } else if (mkdirat(ddir, name, 0700) < 0) {
      r = hutch_error_sys(err, "layer: create the directory %s", c->path);
    } else {
      _cleanup_close_ int s = openat(sdir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      _cleanup_close_ int t = openat(ddir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (s < 0 || t < 0)
        r = hutch_error_sys(err, "layer: open the directory %s", c->path);
      else if ((r = copy_dir(s, t, depth + 1, c, err)) == 0 && (r = copy_xattrs(s, t, c->path, c, err)) == 0)
        r = copy_attrs(t, &st, c->path, err);
    }
    c->path[base] = '\0';
  }
  if (r == 0 && errno != 0)
    r = hutch_error_sys(err, "layer: read the directory %s", c->path);
  closedir(d);
  return r;
}

int layer_copy_tree(int src_dir, int dst_dir, hutch_error_t *err) {
  struct copy c = {.dst_top = dst_dir, .uid = geteuid(), .gid = getegid(), .umask = umask(0)};
  /* Read by setting it back: both callers run this in a process of its
   * own (a start's child, userns_run's), with no thread to race. */
  umask(c.umask);
  /* A set-group-id destination gives what is made in it its group, a
   * default ACL its mode: nothing is assumed of a creation there. */
  struct stat st;
  c.assume = fstat(dst_dir, &st) == 0 && !(st.st_mode & S_ISGID) &&
             fgetxattr(dst_dir, "system.posix_acl_default", NULL, 0) < 0;
  int r = copy_dir(src_dir, dst_dir, 0, &c, err);
  /* The top directory's own attributes: the opaque marker, its mode. */
  if (r == 0)
    r = copy_xattrs(src_dir, dst_dir, "/", &c, err);
  if (r == 0 && fstat(src_dir, &st) < 0)
    r = hutch_error_sys(err, "layer: stat /");
  if (r == 0)
    r = copy_attrs(dst_dir, &st, "/", err);
  for (size_t i = 0; i < c.slots; i++)
    free(c.links[i].path);
  free(c.links);
  free(c.names);
  free(c.value);
  return r;
}
