/* SPDX-License-Identifier: Apache-2.0 */
/* One regular file between the host and a sandbox (hutch.h:
 * hutch_sandbox_copy_file_in, hutch_sandbox_copy_file_out), under the rules
 * of the tree copies in sandbox_fs_copy.c: the sandbox side is reached
 * through its root with no symlink followed at all, every file is
 * classified with fstat on an O_PATH fd before it is opened for real (no
 * FIFO or device is ever opened), the destination is a new file or a
 * regular file replaced in place (never a symlink, never a directory), and
 * the bytes and the time are bounded, as streams rather than in memory.
 * Each copy is recorded in the sandbox's audit log, the file's sha256
 * taken as its bytes go by. */
#include "config.h"

#include "sandbox_fs.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "audit_sandbox.h"
#include "sandbox.h"
#include "sha256.h"
#include "util.h"

#define CHUNK 65536

/* Why a path that is there cannot be copied: a symlink (never followed),
 * a directory, or a FIFO, device or socket (never opened). */
static int refuse_kind(hutch_error_t *err, const char *side, const char *path, mode_t mode) {
  if (S_ISLNK(mode)) {
    hutch_error_set(err, ELOOP, "%s%s is a symlink", path, side);
    return hutch_error_hint(err, "hutch copies never follow a symlink; name the file it points to");
  }
  if (S_ISDIR(mode))
    return hutch_error_set(err, EISDIR, "%s%s is a directory", path, side);
  return hutch_error_set(err, EINVAL, "%s%s is not a regular file (a FIFO, device or socket is never opened)", path,
                         side);
}

/* The error of an openat2 that refused a symlink on the way. */
static int fail_sandbox_open(hutch_error_t *err, const char *path) {
  hutch_error_sys(err, "open %s in the sandbox", path);
  if (errno == ELOOP || errno == EXDEV)
    return hutch_error_hint(err, "hutch copies never go through a symlink in the sandbox; name the real path");
  if (errno == ENOSYS)
    return hutch_error_hint(err, "hutch needs openat2(2), Linux 5.6 or later, to reach a sandbox's files");
  return -1;
}

/* The regular file `name` below dir for writing: made anew (given to owner
 * when not NULL), or one already there truncated in place; anything else
 * there is refused. */
static int open_dest(int dir, const char *name, const struct sfs_owner *owner, const char *path, const char *side,
                     hutch_error_t *err) {
  int fd = openat2_retry(dir, name, O_WRONLY | O_CREAT | O_EXCL, 0644, SFS_RESOLVE_CHILD);
  if (fd >= 0) {
    if (owner && sfs_own(fd, owner) < 0) {
      close(fd);
      return hutch_error_sys(err, "create %s%s", path, side);
    }
    return fd;
  }
  if (errno != EEXIST)
    return hutch_error_sys(err, "create %s%s", path, side);
  _cleanup_close_ int p = openat2_retry(dir, name, O_PATH | O_NOFOLLOW, 0, SFS_RESOLVE_CHILD);
  struct stat st;
  if (p < 0 || fstat(p, &st) < 0)
    return hutch_error_sys(err, "open %s%s", path, side);
  if (!S_ISREG(st.st_mode))
    return refuse_kind(err, side, path, st.st_mode);
  fd = sfs_reopen(p, O_WRONLY | O_TRUNC);
  if (fd < 0)
    return hutch_error_sys(err, "open %s%s", path, side);
  return fd;
}

/* in to out within the copy's bounds, hashed as it goes; the file copied
 * goes into c's out as an audit_files list, named `path` (its path in the
 * sandbox).  On a bound reached the partial file (name below dir) is
 * removed and rep->stopped says which. */
static int stream(struct sfs_call *c, int in, int out, int dir, const char *name, const char *path,
                  hutch_error_t *err) {
  struct hutch_copy_report *rep = &c->rep;
  struct sfs_budget b;
  sfs_budget_init(&b, c->limits, monotonic_seconds());
  uint64_t left = sfs_budget_bytes_left(&b, 0), copied = 0;
  _cleanup_free_ char *buf = xmalloc(CHUNK);
  struct sha256_ctx hash;
  sha256_init(&hash);
  for (;;) {
    if (monotonic_seconds() >= b.deadline) {
      rep->stopped = "time";
      break;
    }
    size_t want = left - copied >= CHUNK ? CHUNK : (size_t)(left - copied) + 1;
    ssize_t n = read(in, buf, want);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return hutch_error_sys(err, "read %s", c->path);
    if (n == 0) {
      rep->files = 1;
      rep->bytes = copied;
      uint8_t digest[SHA256_DIGEST_SIZE];
      sha256_final(&hash, digest);
      struct audit_files files = {0};
      audit_files_add(&files, digest, copied, path);
      c->out = files.data;
      c->out_len = files.len;
      return 0;
    }
    if ((uint64_t)n > left - copied) {
      rep->stopped = "bytes";
      break;
    }
    if (write_all(out, buf, (size_t)n) < 0)
      return hutch_error_sys(err, "write %s", name);
    sha256_update(&hash, buf, (size_t)n);
    copied += (uint64_t)n;
  }
  unlinkat(dir, name, 0);
  return 0;
}

/* The parent directory of path (sandbox side: through the root, no
 * symlink; host side: as the caller named it) and the last component. */
static int open_parent(int root, const char *path, char **name, hutch_error_t *err) {
  _cleanup_free_ char *parent = NULL;
  if (!sfs_split(path, &parent, name))
    return hutch_error_set(err, EINVAL, "%s names no file", path);
  int fd = root >= 0 ? openat2_retry(root, parent, O_PATH | O_DIRECTORY, 0, SFS_RESOLVE_STRICT)
                     : open(parent, O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return root >= 0 ? fail_sandbox_open(err, parent) : hutch_error_sys(err, "open %s", parent);
  if (sfs_check_fs(fd, parent, err) < 0) {
    close(fd);
    return -1;
  }
  return fd;
}

static int op_file_in(struct sfs_call *c, hutch_error_t *err) {
  _cleanup_close_ int p = open(c->path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
  struct stat st;
  if (p < 0 || fstat(p, &st) < 0)
    return hutch_error_sys(err, "open %s", c->path);
  if (!S_ISREG(st.st_mode))
    return refuse_kind(err, "", c->path, st.st_mode);
  _cleanup_close_ int in = sfs_reopen(p, O_RDONLY);
  if (in < 0)
    return hutch_error_sys(err, "open %s", c->path);
  _cleanup_free_ char *name = NULL;
  _cleanup_close_ int dir = open_parent(c->root, c->dest, &name, err);
  if (dir < 0)
    return -1;
  _cleanup_close_ int out = open_dest(dir, name, &c->owner, c->dest, " in the sandbox", err);
  if (out < 0)
    return -1;
  return stream(c, in, out, dir, name, c->dest, err);
}

int hutch_sandbox_copy_file_in(struct hutch_sandbox *sb, const char *src, const char *dest,
                               const struct hutch_copy_limits *limits, struct hutch_copy_report *rep,
                               hutch_error_t *err) {
  struct sfs_call c = {.path = src, .dest = dest, .limits = limits};
  int r = sfs_run(sb, op_file_in, &c, err);
  *rep = c.rep;
  struct audit_copy_desc d = {"in", "file", src, dest};
  audit_sandbox_copy(sandbox_audit_sink(sb), &d, c.out, c.out_len, &c.rep, r);
  free(c.out);
  return r;
}

static int op_file_out(struct sfs_call *c, hutch_error_t *err) {
  _cleanup_close_ int p = openat2_retry(c->root, c->path, O_PATH | O_NOFOLLOW, 0, SFS_RESOLVE_STRICT);
  struct stat st;
  if (p < 0 || fstat(p, &st) < 0)
    return fail_sandbox_open(err, c->path);
  if (!S_ISREG(st.st_mode))
    return refuse_kind(err, " in the sandbox", c->path, st.st_mode);
  if (sfs_check_fs(p, c->path, err) < 0)
    return -1;
  _cleanup_close_ int in = sfs_reopen(p, O_RDONLY);
  if (in < 0)
    return hutch_error_sys(err, "open %s in the sandbox", c->path);
  _cleanup_free_ char *name = NULL;
  _cleanup_close_ int dir = open_parent(-1, c->dest, &name, err);
  if (dir < 0)
    return -1;
  _cleanup_close_ int out = open_dest(dir, name, NULL, c->dest, "", err);
  if (out < 0)
    return -1;
  return stream(c, in, out, dir, name, c->path, err);
}

int hutch_sandbox_copy_file_out(struct hutch_sandbox *sb, const char *src, const char *dest,
                                const struct hutch_copy_limits *limits, struct hutch_copy_report *rep,
                                hutch_error_t *err) {
  struct sfs_call c = {.path = src, .dest = dest, .limits = limits};
  int r = sfs_run(sb, op_file_out, &c, err);
  *rep = c.rep;
  struct audit_copy_desc d = {"out", "file", src, dest};
  audit_sandbox_copy(sandbox_audit_sink(sb), &d, c.out, c.out_len, &c.rep, r);
  free(c.out);
  return r;
}
