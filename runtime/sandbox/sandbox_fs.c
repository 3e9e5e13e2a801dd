/* SPDX-License-Identifier: Apache-2.0 */
/* A sandbox's single files (sandbox_fs.h); each one written into, read out
 * of or removed from the sandbox is recorded in its audit log. */
#include "config.h"

#include "sandbox_fs.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "audit_sandbox.h"
#include "paths.h"
#include "sandbox.h"
#include "util.h"

void hutch_sandbox_set_no_symlinks(struct hutch_sandbox *sb, bool on) {
  sb->fs_no_symlinks = on;
}

/* Whether the call follows no symlink (hutch_sandbox_set_no_symlinks). */
static bool strict(const struct sfs_call *c) {
  return (c->resolve & RESOLVE_NO_SYMLINKS) != 0;
}

int sfs_reopen(int path_fd, int flags) {
  char p[64];
  snprintf(p, sizeof(p), "/proc/self/fd/%d", path_fd);
  return open(p, flags | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
}

int sfs_check_fs(int fd, const char *what, hutch_error_t *err) {
  struct statfs sf;
  if (fstatfs(fd, &sf) < 0)
    return hutch_error_sys(err, "statfs %s", what);
  if (sfs_pseudo_fs((int64_t)sf.f_type))
    return hutch_error_set(err, EACCES,
                           "%s is on a kernel file system (/proc, /sys or the like), which hutch does "
                           "not read or write for a sandbox",
                           what);
  return 0;
}

int sfs_own(int fd, const struct sfs_owner *owner) {
  /* AT_EMPTY_PATH: fd may be an O_PATH one (a directory just made),
   * which fchown() refuses. */
  if (owner->inside)
    return owner->other ? fchownat(fd, "", owner->in_uid, owner->in_gid, AT_EMPTY_PATH) : 0;
  if (!owner->chown)
    return 0;
  return fchownat(fd, "", owner->uid, owner->gid, AT_EMPTY_PATH);
}

static int fail_open(hutch_error_t *err, const char *what, const char *path) {
  hutch_error_sys(err, "%s %s in the sandbox", what, path);
  if (errno == ELOOP)
    return hutch_error_hint(err, "a path here is never resolved through a symlink of the sandbox; name the real path");
  if (errno == ENOSYS)
    return hutch_error_hint(err, "hutch needs openat2(2), Linux 5.6 or later, to reach a sandbox's files");
  return -1;
}

/* An O_PATH fd of path, its type in *st; a symlink last is followed when
 * asked to, unless the call follows none (then the link's own fd). */
static int open_path(const struct sfs_call *c, const char *path, bool follow, struct stat *st) {
  int fd = openat2_retry(c->root, path, O_PATH | (follow && !strict(c) ? 0 : O_NOFOLLOW), 0, c->resolve);
  if (fd >= 0 && fstat(fd, st) < 0) {
    int saved = errno;
    close(fd);
    errno = saved;
    return -1;
  }
  return fd;
}

static int op_kind(struct sfs_call *c, hutch_error_t *err) {
  struct stat st;
  _cleanup_close_ int fd = open_path(c, c->path, true, &st);
  if (fd >= 0) {
    c->value = S_ISDIR(st.st_mode) ? HUTCH_FILE_DIR : S_ISREG(st.st_mode) ? HUTCH_FILE_REGULAR : HUTCH_FILE_OTHER;
    return 0;
  }
  if (errno != ENOENT && errno != ENOTDIR && errno != ELOOP)
    return fail_open(err, "inspect", c->path);
  /* A dangling or looping symlink, or a magic link: there, but no file. */
  _cleanup_close_ int link = open_path(c, c->path, false, &st);
  c->value = link >= 0 ? HUTCH_FILE_OTHER : HUTCH_FILE_NONE;
  return 0;
}

int hutch_sandbox_file_kind(struct hutch_sandbox *sb, const char *path, hutch_error_t *err) {
  struct sfs_call c = {.path = path};
  if (sfs_run(sb, op_kind, &c, err) < 0)
    return -1;
  return (int)c.value;
}

/* An fd of the regular file at path, opened again with flags. */
static int open_regular(const struct sfs_call *c, const char *path, int flags, hutch_error_t *err) {
  struct stat st;
  _cleanup_close_ int fd = open_path(c, path, true, &st);
  if (fd < 0)
    return fail_open(err, "open", path);
  if (S_ISLNK(st.st_mode)) {
    hutch_error_set(err, ELOOP, "%s in the sandbox is a symlink", path);
    return hutch_error_hint(err, "no symlink of the sandbox is followed here; name the file it points to");
  }
  if (!S_ISREG(st.st_mode))
    return hutch_error_set(err, S_ISDIR(st.st_mode) ? EISDIR : EINVAL, "%s in the sandbox is not a regular file", path);
  if (sfs_check_fs(fd, path, err) < 0)
    return -1;
  int r = sfs_reopen(fd, flags);
  if (r < 0)
    return hutch_error_sys(err, "open %s in the sandbox", path);
  return r;
}

static int op_read(struct sfs_call *c, hutch_error_t *err) {
  const char *path = c->path;
  size_t max = c->max;
  _cleanup_close_ int fd = open_regular(c, path, O_RDONLY, err);
  if (fd < 0)
    return -1;
  size_t cap = 65536, n = 0;
  _cleanup_free_ char *buf = xmalloc(cap + 1);
  for (;;) {
    if (n == cap) {
      if (cap > max)
        return hutch_error_set(err, EFBIG, "%s in the sandbox is larger than %zu bytes", path, max);
      cap = cap * 2 > max + 1 ? max + 1 : cap * 2;
      buf = xrealloc(buf, cap + 1);
    }
    ssize_t r = read(fd, buf + n, cap - n);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0)
      return hutch_error_sys(err, "read %s in the sandbox", path);
    if (r == 0)
      break;
    n += (size_t)r;
  }
  if (n > max)
    return hutch_error_set(err, EFBIG, "%s in the sandbox is larger than %zu bytes", path, max);
  buf[n] = '\0';
  c->out_len = n;
  c->out = steal_pointer(&buf);
  return 0;
}

int hutch_sandbox_read_file(struct hutch_sandbox *sb, const char *path, size_t max, char **data, size_t *len,
                            hutch_error_t *err) {
  struct sfs_call c = {.path = path, .max = max};
  if (sfs_run(sb, op_read, &c, err) < 0)
    return -1;
  *data = c.out ? c.out : xstrdup("");
  *len = c.out_len;
  audit_sandbox_file(sandbox_audit_sink(sb), "read", "out", path, *data, *len, true);
  return 0;
}

int sfs_mkdirs(int root, const struct sfs_owner *owner, const char *path, uint64_t resolve, hutch_error_t *err) {
  _cleanup_close_ int cur = openat2_retry(root, "/", O_PATH | O_DIRECTORY, 0, resolve);
  if (cur < 0)
    return fail_open(err, "open", "/");
  for (size_t at = 0, start; paths_next_name(path, &at, &start);) {
    _cleanup_free_ char *prefix = xstrndup(path, at);
    _cleanup_free_ char *name = xstrndup(path + start, at - start);
    int next = openat2_retry(root, prefix, O_PATH | O_DIRECTORY, 0, resolve);
    if (next < 0 && errno == ENOENT) {
      if (sfs_check_fs(cur, prefix, err) < 0)
        return -1;
      if (mkdirat(cur, name, 0755) == 0) {
        _cleanup_close_ int made = openat2_retry(cur, name, O_PATH | O_DIRECTORY, 0, SFS_RESOLVE_CHILD);
        if (made < 0 || sfs_own(made, owner) < 0)
          return hutch_error_sys(err, "create %s in the sandbox", prefix);
      } else if (errno != EEXIST) {
        return hutch_error_sys(err, "create %s in the sandbox", prefix);
      }
      next = openat2_retry(root, prefix, O_PATH | O_DIRECTORY, 0, resolve);
    }
    if (next < 0)
      return fail_open(err, "open", prefix);
    close(cur);
    cur = next;
  }
  return 0;
}

static int op_mkdirs(struct sfs_call *c, hutch_error_t *err) {
  return sfs_mkdirs(c->root, &c->owner, c->path, c->resolve, err);
}

int hutch_sandbox_mkdirs(struct hutch_sandbox *sb, const char *path, hutch_error_t *err) {
  struct sfs_call c = {.path = path};
  return sfs_run(sb, op_mkdirs, &c, err);
}

/* The directory path names, checked, as an O_PATH fd. */
static int open_dir(const struct sfs_call *c, const char *path, hutch_error_t *err) {
  _cleanup_close_ int fd = openat2_retry(c->root, path, O_PATH | O_DIRECTORY, 0, c->resolve);
  if (fd < 0)
    return fail_open(err, "open", path);
  if (sfs_check_fs(fd, path, err) < 0)
    return -1;
  return steal_fd(&fd);
}

static int op_write(struct sfs_call *c, hutch_error_t *err) {
  const struct sfs_owner *owner = &c->owner;
  const char *path = c->path;
  _cleanup_close_ int fd = -1;
  if (!c->create) {
    /* What is there is replaced in place (its owner and mode stay), as
     * `cat > path` does; only a missing file is made anew. */
    struct stat st;
    _cleanup_close_ int probe = open_path(c, path, true, &st);
    if (probe >= 0 || errno != ENOENT) {
      fd = open_regular(c, path, O_WRONLY | O_TRUNC, err);
      if (fd < 0)
        return -1;
    }
  }
  if (fd < 0) {
    /* A new file, as `set -C; cat > path` makes it: never over anything. */
    _cleanup_free_ char *parent = NULL, *name = NULL;
    if (!sfs_split(path, &parent, &name))
      return hutch_error_set(err, EINVAL, "%s in the sandbox names no file", path);
    if (c->create && sfs_mkdirs(c->root, owner, parent, c->resolve, err) < 0)
      return -1;
    _cleanup_close_ int dir = open_dir(c, parent, err);
    if (dir < 0)
      return -1;
    fd = openat2_retry(dir, name, O_WRONLY | O_CREAT | O_EXCL, 0644, SFS_RESOLVE_CHILD);
    if (fd < 0 || sfs_own(fd, owner) < 0)
      return hutch_error_sys(err, "create %s in the sandbox", path);
  }
  if (write_all(fd, c->data, c->len) < 0)
    return hutch_error_sys(err, "write %s in the sandbox", path);
  return 0;
}

int hutch_sandbox_write_file(struct hutch_sandbox *sb, const char *path, const void *data, size_t len, bool create,
                             hutch_error_t *err) {
  struct sfs_call c = {.path = path, .data = data, .len = len, .create = create};
  int r = sfs_run(sb, op_write, &c, err);
  /* A write that failed is recorded too: its file may hold part of it. */
  audit_sandbox_file(sandbox_audit_sink(sb), "write", "in", path, data ? data : "", data ? len : 0, r >= 0);
  return r;
}

static int op_remove(struct sfs_call *c, hutch_error_t *err) {
  const char *path = c->path;
  _cleanup_free_ char *parent = NULL, *name = NULL;
  if (!sfs_split(path, &parent, &name))
    return hutch_error_set(err, EINVAL, "%s in the sandbox names no file", path);
  _cleanup_close_ int dir = openat2_retry(c->root, parent, O_PATH | O_DIRECTORY, 0, c->resolve);
  if (dir < 0 && (errno == ENOENT || errno == ENOTDIR))
    return 0; /* as rm -f */
  if (dir < 0)
    return fail_open(err, "open", parent);
  if (sfs_check_fs(dir, parent, err) < 0)
    return -1;
  if (unlinkat(dir, name, 0) < 0 && errno != ENOENT)
    return hutch_error_sys(err, "remove %s in the sandbox", path);
  return 0;
}

int hutch_sandbox_remove_file(struct hutch_sandbox *sb, const char *path, hutch_error_t *err) {
  struct sfs_call c = {.path = path};
  int r = sfs_run(sb, op_remove, &c, err);
  if (r >= 0)
    audit_sandbox_file(sandbox_audit_sink(sb), "remove", "in", path, NULL, 0, true);
  return r;
}

struct lister {
  char **paths;
  size_t n, max;
};

static void list_add(struct lister *l, char *path) {
  l->paths = xrealloc(l->paths, (l->n + 2) * sizeof(char *));
  l->paths[l->n++] = path;
  l->paths[l->n] = NULL;
}

static void list_below(struct lister *l, int dir, const char *prefix, unsigned depth) {
  _cleanup_close_ int fd = openat2_retry(dir, ".", O_RDONLY | O_DIRECTORY, 0, SFS_RESOLVE_CHILD);
  _cleanup_dir_ DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
  if (d == NULL)
    return;
  fd = -1;
  struct dirent *de;
  while (l->n < l->max && (de = readdir(d)) != NULL) {
    if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
      continue;
    char *path = sfs_join(prefix, de->d_name);
    list_add(l, path);
    if (depth <= 1)
      continue;
    _cleanup_close_ int sub = openat2_retry(dirfd(d), de->d_name, O_PATH | O_DIRECTORY, 0, SFS_RESOLVE_CHILD);
    if (sub >= 0 && sfs_check_fs(sub, path, NULL) == 0)
      list_below(l, sub, path, depth - 1);
  }
}

static int op_list(struct sfs_call *c, hutch_error_t *err) {
  _cleanup_close_ int fd = open_dir(c, c->path, err);
  if (fd < 0)
    return -1;
  struct lister l = {.max = c->max ? c->max : 1};
  list_add(&l, xstrdup(c->path));
  if (c->depth > 0)
    list_below(&l, fd, c->path, c->depth);
  /* NUL-separated, so that it can come back from a helper in one piece. */
  size_t total = 0;
  for (size_t i = 0; i < l.n; i++)
    total += strlen(l.paths[i]) + 1;
  c->out = xmalloc(total + 1);
  for (size_t i = 0; i < l.n; i++) {
    size_t n = strlen(l.paths[i]) + 1;
    memcpy(c->out + c->out_len, l.paths[i], n);
    c->out_len += n;
    free(l.paths[i]);
  }
  free(l.paths);
  return 0;
}

int hutch_sandbox_list_dir(struct hutch_sandbox *sb, const char *dir, unsigned depth, size_t max, char ***out,
                           hutch_error_t *err) {
  struct sfs_call c = {.path = dir, .depth = depth, .max = max};
  if (sfs_run(sb, op_list, &c, err) < 0)
    return -1;
  size_t n = 0;
  for (size_t off = 0; off < c.out_len; off += strlen(c.out + off) + 1)
    n++;
  char **paths = xcalloc(n + 1, sizeof(char *));
  n = 0;
  for (size_t off = 0; off < c.out_len; off += strlen(c.out + off) + 1)
    paths[n++] = xstrdup(c.out + off);
  free(c.out);
  *out = paths;
  return 0;
}
