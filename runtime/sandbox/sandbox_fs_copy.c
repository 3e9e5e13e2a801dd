/* SPDX-License-Identifier: Apache-2.0 */
/* Directory trees between the host and a sandbox (hutch.h:
 * hutch_sandbox_copy_in, hutch_sandbox_copy_out, hutch_sandbox_update_out).
 * One walk serves both directions: every entry is opened by one name below
 * a directory already open, never through a symlink, classified with fstat
 * before anything is opened for real, and counted against the copy's
 * bounds. */
#include "config.h"

#include "sandbox_fs.h"

#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "audit_sandbox.h"
#include "outname.h"
#include "sandbox.h"
#include "sha256.h"
#include "util.h"

#define CHUNK 65536

struct walk {
  struct sfs_budget budget;
  struct hutch_copy_report *rep;
  const struct sfs_owner *owner;    /* of what is created on the destination side; NULL: hutch's own */
  const char *src_name, *dest_name; /* for messages */
  /* Out of a sandbox: every name through outname_map(), so that nothing
   * lands under a name a host program loads by itself (outname.h). */
  bool host_names;
  /* hutch_sandbox_update_out: a file whose size and modification time dest
   * already has is left, a copied file takes its source's time. */
  bool update;
  /* Each file copied, hashed as it was, for the audit log. */
  struct audit_files files;
};

/* Where the walk stops: 1 when a bound was reached (recorded), 0 to go on. */
static int stop(struct walk *w, const char *why) {
  if (why == NULL)
    return 0;
  w->rep->stopped = why;
  return 1;
}

/* A new or replaced regular file name below dir; -1 with errno, ENOTSUP when
 * something else is there (it is skipped). */
static int open_dest_file(int dir, const char *name, const struct sfs_owner *owner) {
  int fd = openat2_retry(dir, name, O_WRONLY | O_CREAT | O_EXCL, 0644, SFS_RESOLVE_CHILD);
  if (fd >= 0) {
    if (owner && sfs_own(fd, owner) < 0) {
      close(fd);
      return -1;
    }
    return fd;
  }
  if (errno != EEXIST)
    return -1;
  _cleanup_close_ int p = openat2_retry(dir, name, O_PATH | O_NOFOLLOW, 0, SFS_RESOLVE_CHILD);
  struct stat st;
  if (p < 0 || fstat(p, &st) < 0)
    return -1;
  if (!S_ISREG(st.st_mode)) {
    errno = ENOTSUP;
    return -1;
  }
  return sfs_reopen(p, O_WRONLY | O_TRUNC);
}

/* Copies src (open for reading) to a new dest file, within the bytes and
 * the time left, with the modification time mtime unless NULL.  1: a bound
 * was reached (the partial file is removed). */
static int copy_file(struct walk *w, int src, int dir, const char *name, const char *path, const struct timespec *mtime,
                     hutch_error_t *err) {
  _cleanup_close_ int out = open_dest_file(dir, name, w->owner);
  if (out < 0 && errno == ENOTSUP) {
    w->rep->skipped++;
    return 0;
  }
  if (out < 0)
    return hutch_error_sys(err, "create %s/%s", w->dest_name, path);
  _cleanup_free_ char *buf = xmalloc(CHUNK);
  /* A file that does not fit in what is left is not copied at all: read at
   * most one byte past it to know. */
  uint64_t left = sfs_budget_bytes_left(&w->budget, w->rep->bytes), copied = 0;
  struct sha256_ctx hash;
  sha256_init(&hash);
  for (;;) {
    if (monotonic_seconds() >= w->budget.deadline) {
      unlinkat(dir, name, 0);
      return stop(w, "time");
    }
    size_t want = left - copied >= CHUNK ? CHUNK : (size_t)(left - copied) + 1;
    ssize_t n = read(src, buf, want);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return hutch_error_sys(err, "read %s/%s", w->src_name, path);
    if (n == 0)
      break;
    if ((uint64_t)n > left - copied) {
      unlinkat(dir, name, 0);
      return stop(w, "bytes");
    }
    if (write_all(out, buf, (size_t)n) < 0)
      return hutch_error_sys(err, "write %s/%s", w->dest_name, path);
    sha256_update(&hash, buf, (size_t)n);
    copied += (uint64_t)n;
  }
  if (mtime != NULL && futimens(out, (const struct timespec[2]){{.tv_nsec = UTIME_OMIT}, *mtime}) < 0)
    return hutch_error_sys(err, "set the time of %s/%s", w->dest_name, path);
  uint8_t digest[SHA256_DIGEST_SIZE];
  sha256_final(&hash, digest);
  audit_files_add(&w->files, digest, copied, path);
  w->rep->files++;
  w->rep->bytes += copied;
  return 0;
}

static int copy_dir(struct walk *w, int src, int dest, const char *path, unsigned depth, hutch_error_t *err);

/* One entry of a directory being copied: 1 when a bound stopped the copy. */
static int copy_entry(struct walk *w, int src, int dest, const char *name, const char *path, unsigned depth,
                      hutch_error_t *err) {
  int s = stop(w, sfs_budget_entry(&w->budget, depth, monotonic_seconds()));
  if (s)
    return s;
  _cleanup_close_ int p = openat2_retry(src, name, O_PATH | O_NOFOLLOW, 0, SFS_RESOLVE_CHILD);
  struct stat st;
  if (p < 0 || fstat(p, &st) < 0) {
    if (errno == ENOENT)
      return 0; /* gone meanwhile */
    return hutch_error_sys(err, "open %s/%s", w->src_name, path);
  }
  if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
    w->rep->skipped++;
    return 0;
  }
  if (sfs_check_fs(p, path, NULL) < 0) {
    w->rep->skipped++;
    return 0;
  }
  _cleanup_free_ char *mapped = w->host_names ? outname_map(name) : NULL;
  const char *to = mapped ? mapped : name;
  if (mapped && strcmp(mapped, name) != 0)
    w->rep->renamed++;
  if (S_ISREG(st.st_mode)) {
    if (w->update) {
      struct stat d;
      if (fstatat(dest, to, &d, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(d.st_mode) && d.st_size == st.st_size &&
          d.st_mtim.tv_sec == st.st_mtim.tv_sec && d.st_mtim.tv_nsec == st.st_mtim.tv_nsec)
        return 0;
      /* What dest holds stays whole rather than go for a copy that
       * cannot fit. */
      if ((uint64_t)st.st_size > sfs_budget_bytes_left(&w->budget, w->rep->bytes))
        return stop(w, "bytes");
    }
    _cleanup_close_ int in = sfs_reopen(p, O_RDONLY);
    if (in < 0)
      return hutch_error_sys(err, "open %s/%s", w->src_name, path);
    return copy_file(w, in, dest, to, path, w->update ? &st.st_mtim : NULL, err);
  }
  if (mkdirat(dest, to, 0755) == 0) {
    _cleanup_close_ int made = openat2_retry(dest, to, O_PATH | O_DIRECTORY, 0, SFS_RESOLVE_CHILD);
    if (made < 0 || (w->owner && sfs_own(made, w->owner) < 0))
      return hutch_error_sys(err, "create %s/%s", w->dest_name, path);
  } else if (errno != EEXIST) {
    return hutch_error_sys(err, "create %s/%s", w->dest_name, path);
  }
  _cleanup_close_ int sub_dest = openat2_retry(dest, to, O_PATH | O_DIRECTORY, 0, SFS_RESOLVE_CHILD);
  if (sub_dest < 0 && (errno == ENOTDIR || errno == ELOOP)) {
    w->rep->skipped++; /* something else is in the way on the destination side */
    return 0;
  }
  if (sub_dest < 0)
    return hutch_error_sys(err, "open %s/%s", w->dest_name, path);
  w->rep->dirs++;
  return copy_dir(w, p, sub_dest, path, depth + 1, err);
}

static int copy_dir(struct walk *w, int src, int dest, const char *path, unsigned depth, hutch_error_t *err) {
  int fd = sfs_reopen(src, O_RDONLY | O_DIRECTORY);
  _cleanup_dir_ DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
  if (d == NULL) {
    if (fd >= 0)
      close(fd);
    return hutch_error_sys(err, "read %s/%s", w->src_name, path);
  }
  struct dirent *de;
  while ((errno = 0, de = readdir(d)) != NULL) {
    if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
      continue;
    _cleanup_free_ char *sub = path[0] ? xasprintf("%s/%s", path, de->d_name) : xstrdup(de->d_name);
    int r = copy_entry(w, src, dest, de->d_name, sub, depth, err);
    if (r != 0)
      return r;
  }
  if (errno != 0)
    return hutch_error_sys(err, "read %s/%s", w->src_name, path);
  return 0;
}

static int walk(struct walk *w, int src, int dest, hutch_error_t *err) {
  if (sfs_check_fs(src, w->src_name, err) < 0 || sfs_check_fs(dest, w->dest_name, err) < 0)
    return -1;
  int r = copy_dir(w, src, dest, "", 1, err);
  return r < 0 ? -1 : 0;
}

/* The host directory path, created when missing, never through a symlink. */
static int host_dir(const char *path, bool create, hutch_error_t *err) {
  if (create && mkdir(path, 0755) < 0 && errno != EEXIST)
    return hutch_error_sys(err, "create %s", path);
  int fd = open(path, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0)
    return hutch_error_sys(err, "open %s", path);
  return fd;
}

static int op_copy_in(struct sfs_call *c, hutch_error_t *err) {
  _cleanup_close_ int in = host_dir(c->path, false, err);
  if (in < 0 || sfs_mkdirs(c->root, &c->owner, c->dest, SFS_RESOLVE_STRICT, err) < 0)
    return -1;
  _cleanup_close_ int out = openat2_retry(c->root, c->dest, O_PATH | O_DIRECTORY, 0, SFS_RESOLVE_STRICT);
  if (out < 0)
    return hutch_error_sys(err, "open %s in the sandbox", c->dest);
  struct walk w = {.rep = &c->rep, .owner = &c->owner, .src_name = c->path, .dest_name = c->dest};
  sfs_budget_init(&w.budget, c->limits, monotonic_seconds());
  int r = walk(&w, in, out, err);
  c->out = w.files.data;
  c->out_len = w.files.len;
  return r;
}

int hutch_sandbox_copy_in(struct hutch_sandbox *sb, const char *src, const char *dest,
                          const struct hutch_copy_limits *limits, struct hutch_copy_report *rep, hutch_error_t *err) {
  struct sfs_call c = {.path = src, .dest = dest, .limits = limits};
  int r = sfs_run(sb, op_copy_in, &c, err);
  *rep = c.rep;
  struct audit_copy_desc d = {"in", "tree", src, dest};
  audit_sandbox_copy(sandbox_audit_sink(sb), &d, c.out, c.out_len, &c.rep, r);
  free(c.out);
  return r;
}

char *hutch_output_name(const char *name) {
  return outname_map(name);
}

static int op_copy_out(struct sfs_call *c, hutch_error_t *err) {
  _cleanup_close_ int out = host_dir(c->dest, true, err);
  if (out < 0)
    return -1;
  _cleanup_close_ int in = openat2_retry(c->root, c->path, O_PATH | O_DIRECTORY, 0, SFS_RESOLVE_STRICT);
  if (in < 0 && errno == ENOENT)
    return 0;
  if (in < 0) {
    hutch_error_sys(err, "open %s in the sandbox", c->path);
    if (errno == ELOOP || errno == ENOTDIR)
      hutch_error_hint(err, "the directory copied back is never reached through a symlink");
    return -1;
  }
  struct walk w = {.rep = &c->rep,
                   .owner = NULL,
                   .src_name = c->path,
                   .dest_name = c->dest,
                   .host_names = true,
                   .update = c->update};
  sfs_budget_init(&w.budget, c->limits, monotonic_seconds());
  int r = walk(&w, in, out, err);
  c->out = w.files.data;
  c->out_len = w.files.len;
  return r;
}

static int copy_out(struct hutch_sandbox *sb, const char *src, const char *dest, const struct hutch_copy_limits *limits,
                    bool update, struct hutch_copy_report *rep, hutch_error_t *err) {
  struct sfs_call c = {.path = src, .dest = dest, .limits = limits, .update = update};
  int r = sfs_run(sb, op_copy_out, &c, err);
  *rep = c.rep;
  /* An update that found nothing changed took nothing out of the sandbox:
   * repeated at every step, it would fill the log with nothing. */
  if (!update || r < 0 || c.rep.files > 0 || c.rep.stopped) {
    struct audit_copy_desc d = {"out", update ? "update" : "tree", src, dest};
    audit_sandbox_copy(sandbox_audit_sink(sb), &d, c.out, c.out_len, &c.rep, r);
  }
  free(c.out);
  return r;
}

int hutch_sandbox_copy_out(struct hutch_sandbox *sb, const char *src, const char *dest,
                           const struct hutch_copy_limits *limits, struct hutch_copy_report *rep, hutch_error_t *err) {
  return copy_out(sb, src, dest, limits, false, rep, err);
}

int hutch_sandbox_update_out(struct hutch_sandbox *sb, const char *src, const char *dest,
                             const struct hutch_copy_limits *limits, struct hutch_copy_report *rep,
                             hutch_error_t *err) {
  return copy_out(sb, src, dest, limits, true, rep, err);
}
