/* SPDX-License-Identifier: Apache-2.0 */
/* Unpacking an untrusted rootfs tarball.
 *
 * A child that is root in a new user and mount namespace opens the archive,
 * then chroots into the (empty) target directory and extracts there.  Our
 * entry checks refuse absolute paths, "..", and paths or hard links that go
 * through a symlink; should one of them have a bug, the chroot still keeps
 * every write inside the new entry.  The symlink check is ours rather than
 * libarchive's SECURE_SYMLINKS, which opens and stats every component of
 * every path (seven syscalls an entry, more than half the import's time):
 * ours remembers the directories it has verified.  The child reads the
 * archive fd it inherited (a plain file or pipe, never a directory, so no
 * way out of the chroot) and hashes exactly the bytes it unpacks: one pass
 * over the input, no copy through a socket, and the digest names what is in
 * the tree even if the file changes meanwhile.  The caller only reports
 * progress. */
#include "config.h"

#include "archive_dl.h"
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>

#include "idmap.h"
#include "layer.h"
#include "oci_image.h"
#include "store.h"
#include "util.h"

/* Large reads: fewer syscalls and callbacks; libarchive hands out file
 * bodies straight from this buffer. */
#define READ_CHUNK (1024 * 1024)

/* Written by the child, read by the caller (a shared mapping). */
struct unpack_shared {
  struct unpack_stats stats;
  uint64_t done; /* bytes read so far, for progress */
  uint8_t digest[SHA256_DIGEST_SIZE];
};

const char *unpack_path_problem(const char *path) {
  if (path == NULL || path[0] == '\0')
    return "its path is empty";
  if (path[0] == '/')
    return "its path is absolute";
  const char *p = path;
  while (*p) {
    const char *end = strchrnul(p, '/');
    if (end - p == 2 && p[0] == '.' && p[1] == '.')
      return "its path contains \"..\"";
    p = *end ? end + 1 : end;
  }
  return NULL;
}

struct child_ctx {
  int fd; /* the archive */
  bool seekable;
  uint64_t offset, limit; /* read [offset, offset+limit) of fd */
  struct unpack_shared *shared;
  const char *target;
  int target_fd;
  const struct idmap_set *maps;
  struct unpack_stats *stats; /* shared with the caller */
  bool layer;                 /* apply onto the existing tree, with whiteouts */
  bool add;                   /* Dockerfile ADD: any tar, into a directory */
  struct layer_paths written; /* layer: paths this layer wrote (and their ancestors) */
  /* Directories reached from the root without a symlink, as far as this
   * child knows: forgotten whenever something may have replaced one. */
  struct layer_paths real_dirs;
  bool owner_restored; /* ARCHIVE_EXTRACT_OWNER is set */
  const struct import_budget *budget;
  uint64_t used_bytes, used_entries; /* by earlier layers of the same image */
};

/* After chroot an open directory fd is a way back out (fchdir), so none may
 * survive into the confined part. */
static void close_directory_fds(void) {
  DIR *d = opendir("/proc/self/fd");
  if (d == NULL)
    return;
  int self = dirfd(d);
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    char *end;
    long fd = strtol(de->d_name, &end, 10);
    if (*end != '\0' || end == de->d_name || fd == self)
      continue;
    struct stat st;
    if (fstat((int)fd, &st) == 0 && S_ISDIR(st.st_mode))
      close((int)fd);
  }
  closedir(d);
}

/* Whether a directory component of `path` (not its last one) is a symlink,
 * one fstatat a component.  A hard link target reached through a symlink
 * could name a file anywhere (were it not for the chroot); so could an
 * entry written through one. */
static bool through_symlink(const char *path) {
  _cleanup_free_ char *copy = xstrdup(path);
  for (char *s = strchr(copy, '/'); s != NULL; s = strchr(s + 1, '/')) {
    *s = '\0';
    struct stat st;
    int r = fstatat(AT_FDCWD, copy, &st, AT_SYMLINK_NOFOLLOW);
    *s = '/';
    if (r < 0)
      return false; /* the link itself will fail with a clear error */
    if (S_ISLNK(st.st_mode))
      return true;
  }
  return false;
}

/* Whether the directory an entry goes into is reached through a symlink.
 * The answer is remembered for directories that exist: an archive has far
 * fewer directories than files, so most entries cost one hash lookup. */
static bool parent_through_symlink(struct child_ctx *c, const char *clean) {
  const char *slash = strrchr(clean, '/');
  if (slash == NULL)
    return false;
  _cleanup_free_ char *parent = xstrndup(clean, (size_t)(slash - clean));
  if (layer_paths_has(&c->real_dirs, parent))
    return false;
  struct open_how how = {.flags = O_PATH | O_DIRECTORY | O_CLOEXEC, .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH};
  int fd = (int)syscall(SYS_openat2, AT_FDCWD, parent, &how, sizeof(how));
  if (fd >= 0) {
    close(fd);
    layer_paths_add(&c->real_dirs, parent);
    return false;
  }
  if (errno == ELOOP)
    return true;
  /* Not all there yet (libarchive creates the rest as directories), or a
   * file in the way (libarchive fails with a clear error): what exists must
   * still hold no symlink. */
  return through_symlink(clean);
}

static void note_first(char *buf, size_t size, const char *path, const char *msg) {
  if (buf[0] == '\0')
    snprintf(buf, size, "%s%s%s", path, msg ? ": " : "", msg ? msg : "");
}

/* Owners the namespace cannot express become root; a setuid/setgid bit on
 * such a file would now grant root's (or root group's) ids, so it goes. */
static void map_owner(struct archive_entry *e, const struct idmap_set *maps, struct unpack_stats *stats) {
  int64_t uid = ARCHIVE(archive_entry_uid)(e), gid = ARCHIVE(archive_entry_gid)(e);
  bool uid_ok = uid >= 0 && uid <= UINT32_MAX && idmap_to_host(&maps->uid, (uint32_t)uid) >= 0;
  bool gid_ok = gid >= 0 && gid <= UINT32_MAX && idmap_to_host(&maps->gid, (uint32_t)gid) >= 0;
  if ((uid_ok && uid != 0) || (gid_ok && gid != 0))
    stats->non_root_owned++;
  if (uid_ok && gid_ok)
    return;
  mode_t mode = ARCHIVE(archive_entry_perm)(e);
  mode_t keep = mode;
  if (!uid_ok) {
    ARCHIVE(archive_entry_set_uid)(e, 0);
    keep &= ~(mode_t)S_ISUID;
  }
  if (!gid_ok) {
    ARCHIVE(archive_entry_set_gid)(e, 0);
    keep &= ~(mode_t)S_ISGID;
  }
  if (keep != mode) {
    ARCHIVE(archive_entry_set_perm)(e, keep);
    stats->setid_dropped++;
  }
  stats->owners_collapsed++;
  note_first(stats->first_collapsed, sizeof(stats->first_collapsed), ARCHIVE(archive_entry_pathname)(e), NULL);
}

/* trusted.* cannot be set in a user namespace anyway; user.overlay.* would
 * steer the overlay mounts that later stack on this tree. */
static void filter_xattrs(struct archive_entry *e) {
  if (ARCHIVE(archive_entry_xattr_count)(e) == 0)
    return;
  struct kept {
    char *name;
    void *value;
    size_t size;
  };
  size_t n = 0, cap = (size_t)ARCHIVE(archive_entry_xattr_count)(e);
  struct kept *kept = xcalloc(cap, sizeof(*kept));
  bool dropped = false;
  const char *name;
  const void *value;
  size_t size;
  ARCHIVE(archive_entry_xattr_reset)(e);
  while (ARCHIVE(archive_entry_xattr_next)(e, &name, &value, &size) == ARCHIVE_OK && n < cap) {
    if (strncmp(name, "trusted.", 8) == 0 || strncmp(name, "user.overlay.", 13) == 0) {
      dropped = true;
      continue;
    }
    kept[n].name = xstrdup(name);
    kept[n].value = xmalloc(size);
    memcpy(kept[n].value, value, size);
    kept[n].size = size;
    n++;
  }
  if (dropped) {
    ARCHIVE(archive_entry_xattr_clear)(e);
    for (size_t i = 0; i < n; i++)
      ARCHIVE(archive_entry_xattr_add_entry)(e, kept[i].name, kept[i].value, kept[i].size);
  }
  for (size_t i = 0; i < n; i++) {
    free(kept[i].name);
    free(kept[i].value);
  }
  free(kept);
}

/* libarchive reports format problems as EILSEQ; the text says it better. */
static int la_errno(struct archive *a) {
  int e = ARCHIVE(archive_errno)(a);
  return e <= 0 || e == EILSEQ ? 0 : e;
}

static int entry_error(hutch_error_t *err, int errnum, const char *path, const char *what) {
  return hutch_error_set(err, errnum, "entry \"%s\": %s", path, what);
}

/* An entry that would land outside the tree: the archive is refused whole. */
static int hostile_entry(hutch_error_t *err, const char *fmt, ...) HUTCH_PRINTF(2, 3);
static int hostile_entry(hutch_error_t *err, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  _cleanup_free_ char *msg = xvasprintf(fmt, ap);
  va_end(ap);
  hutch_error_set(err, 0, "%s", msg);
  return hutch_error_hint(err, "the archive tries to place files outside its own tree, so it was refused and "
                               "nothing was imported; rebuild it from the root directory (tar -C DIR -cf FILE .)");
}

/* A small archive may expand without bound (a gzip of zeros grows a
 * thousandfold): the budget is checked before each entry is written, from
 * its header, so the refusal comes before the bytes reach the disk. */
static int over_budget(hutch_error_t *err, const struct import_budget *b, const char *path, const char *key,
                       uint64_t limit) {
  char v[32];
  bool size = strcmp(key, "image_size") == 0;
  if (size)
    hutch_format_size(limit, v, sizeof(v));
  else
    snprintf(v, sizeof(v), "%llu", (unsigned long long)limit);
  hutch_error_set(err, 0, "entry \"%s\": the image holds more than [limits] %s = %s%s (policy %s)", path, key, v,
                  size ? " of file contents" : " entries", b->policy);
  return hutch_error_hint(err,
                          "nothing was imported; if the image is trusted and really this large, raise %s in "
                          "the policy's [limits] (hutch-policy(5))",
                          key);
}

static int check_budget(struct child_ctx *c, struct archive_entry *e, const char *path, bool link, hutch_error_t *err) {
  const struct import_budget *b = c->budget;
  if (b->entries != LIMITS_UNLIMITED && c->used_entries + c->stats->headers > b->entries)
    return over_budget(err, b, path, "image_entries", b->entries);
  if (link || ARCHIVE(archive_entry_filetype)(e) != AE_IFREG || b->bytes == LIMITS_UNLIMITED)
    return 0;
  /* The size in the header is what copy_data() writes at most; a sparse
   * member counts whole, holes and all. */
  la_int64_t size = ARCHIVE(archive_entry_size_is_set)(e) ? ARCHIVE(archive_entry_size)(e) : 0;
  uint64_t used = c->used_bytes + c->stats->size;
  if (size < 0 || used > b->bytes || (uint64_t)size > b->bytes - used)
    return over_budget(err, b, path, "image_size", b->bytes);
  return 0;
}

/* ---- layers: whiteouts, opaque directories, replaced directories ---- */

/* A directory of the tree reached without any symlink: a whiteout under a
 * symlinked directory names nothing of this image. */
static int open_dir_nofollow(const char *dir) {
  struct open_how how = {.flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC, .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH};
  return (int)syscall(SYS_openat2, AT_FDCWD, dir[0] ? dir : ".", &how, sizeof(how));
}

static bool nothing_there(int e) {
  return e == ENOENT || e == ENOTDIR || e == ELOOP || e == EXDEV;
}

/* Remove `clean` (any type, recursively, never following a symlink). */
static int layer_remove(const char *clean, hutch_error_t *err) {
  const char *slash = strrchr(clean, '/');
  _cleanup_free_ char *dir = slash ? xstrndup(clean, (size_t)(slash - clean)) : xstrdup("");
  _cleanup_close_ int fd = open_dir_nofollow(dir);
  if (fd < 0)
    return nothing_there(errno) ? 0 : hutch_error_sys(err, "layer: open the directory of \"%s\"", clean);
  if (remove_tree_at(fd, slash ? slash + 1 : clean) < 0)
    return hutch_error_sys(err, "layer: remove \"%s\"", clean);
  return 0;
}

/* An opaque directory keeps only what its own layer wrote into it. */
static int layer_prune(const char *dir, const struct layer_paths *written, hutch_error_t *err) {
  int fd = open_dir_nofollow(dir);
  if (fd < 0)
    return nothing_there(errno) ? 0 : hutch_error_sys(err, "layer: open the opaque directory \"%s\"", dir);
  _cleanup_dir_ DIR *d = fdopendir(fd);
  if (d == NULL) {
    close(fd);
    return hutch_error_sys(err, "layer: read the opaque directory \"%s\"", dir);
  }
  _cleanup_strv_ char **names = NULL;
  size_t n = 0;
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
      continue;
    names = xrealloc(names, (n + 2) * sizeof(*names));
    names[n++] = xstrdup(de->d_name);
    names[n] = NULL;
  }
  for (size_t i = 0; i < n; i++) {
    _cleanup_free_ char *child = dir[0] ? xasprintf("%s/%s", dir, names[i]) : xstrdup(names[i]);
    if (!layer_paths_has(written, child)) {
      if (remove_tree_at(dirfd(d), names[i]) < 0)
        return hutch_error_sys(err, "layer: remove \"%s\" under an opaque directory", child);
      continue;
    }
    struct stat st;
    if (fstatat(dirfd(d), names[i], &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode) &&
        layer_prune(child, written, err) < 0)
      return -1;
  }
  return 0;
}

/* 1 when the entry was a whiteout (applied, never written), 0 when it is to
 * be written, -1 on error. */
static int layer_entry(struct child_ctx *c, struct archive_entry *e, const char *path, const char *clean,
                       hutch_error_t *err) {
  _cleanup_free_ char *target = NULL;
  enum layer_whiteout kind = layer_classify(clean, &target);
  /* Whiteouts remove directories: what was verified may be gone, and then
   * recreated as anything. */
  if (kind != LAYER_PLAIN)
    layer_paths_clear(&c->real_dirs);
  switch (kind) {
  case LAYER_BAD:
    return entry_error(err, 0, path, "a whiteout that names no file it may delete");
  case LAYER_WHITEOUT:
    c->stats->whiteouts++;
    /* The spec forbids a layer to add and delete the same name: what it
     * wrote itself stays. */
    if (layer_paths_has(&c->written, target))
      return 1;
    return layer_remove(target, err) < 0 ? -1 : 1;
  case LAYER_OPAQUE:
    c->stats->whiteouts++;
    return layer_prune(target, &c->written, err) < 0 ? -1 : 1;
  case LAYER_PLAIN:
    break;
  }
  if (clean[0] == '\0')
    return 0;
  /* A non-directory replacing a directory of a lower layer replaces the
   * whole subtree (libarchive would only remove an empty one). */
  struct stat st;
  if (ARCHIVE(archive_entry_filetype)(e) != AE_IFDIR && fstatat(AT_FDCWD, clean, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
      S_ISDIR(st.st_mode) && !layer_paths_has(&c->written, clean)) {
    layer_paths_clear(&c->real_dirs);
    if (layer_remove(clean, err) < 0)
      return -1;
  }
  layer_paths_add(&c->written, clean);
  return 0;
}

static int copy_data(struct archive *in, struct archive *out, const char *path, hutch_error_t *err) {
  for (;;) {
    const void *buf;
    size_t size;
    la_int64_t offset;
    int r = ARCHIVE(archive_read_data_block)(in, &buf, &size, &offset);
    if (r == ARCHIVE_EOF)
      return 0;
    if (r < ARCHIVE_WARN)
      return entry_error(err, la_errno(in), path, ARCHIVE(archive_error_string)(in));
    if (ARCHIVE(archive_write_data_block)(out, buf, size, offset) < ARCHIVE_OK)
      return entry_error(err, la_errno(out), path, ARCHIVE(archive_error_string)(out));
  }
}

static int extract_options(bool owner) {
  return (owner ? ARCHIVE_EXTRACT_OWNER : 0) | ARCHIVE_EXTRACT_PERM | ARCHIVE_EXTRACT_TIME | ARCHIVE_EXTRACT_XATTR |
         ARCHIVE_EXTRACT_ACL | ARCHIVE_EXTRACT_SECURE_NODOTDOT | ARCHIVE_EXTRACT_SECURE_NOABSOLUTEPATHS;
}

/* A file, symlink or hard link owned by 0:0 in a fresh tree needs no
 * chown: the child creates it (anew, also over an earlier entry of the same
 * name) as uid 0, and with gid 0, since no directory is setgid yet
 * (libarchive applies directory modes when the archive is closed).  A
 * directory may be an earlier entry's, with another owner, and a layer goes
 * onto a tree that may hold setgid directories: those are always set. */
static void choose_owner_restore(struct archive *out, struct child_ctx *c, struct archive_entry *e) {
  bool need = c->layer || ARCHIVE(archive_entry_filetype)(e) == AE_IFDIR || ARCHIVE(archive_entry_uid)(e) != 0 ||
              ARCHIVE(archive_entry_gid)(e) != 0;
  if (need != c->owner_restored) {
    ARCHIVE(archive_write_disk_set_options)(out, extract_options(need));
    c->owner_restored = need;
  }
}

static int extract_all(struct archive *in, struct archive *out, struct child_ctx *c, hutch_error_t *err) {
  struct unpack_stats *stats = c->stats;
  for (;;) {
    struct archive_entry *e;
    int r = ARCHIVE(archive_read_next_header)(in, &e);
    if (r == ARCHIVE_EOF)
      return 0;
    if (r < ARCHIVE_WARN)
      return hutch_error_set(err, la_errno(in), "read the archive after %llu entries: %s",
                             (unsigned long long)stats->entries, ARCHIVE(archive_error_string)(in));
    const char *path = ARCHIVE(archive_entry_pathname)(e);
    const char *problem = unpack_path_problem(path);
    if (problem)
      return hostile_entry(err, "entry \"%s\": %s", path ? path : "", problem);
    const char *link = ARCHIVE(archive_entry_hardlink)(e);
    stats->headers++;
    if (check_budget(c, e, path, link != NULL, err) < 0)
      return -1;
    if (link) {
      if ((problem = unpack_path_problem(link)))
        return hostile_entry(err, "entry \"%s\": hard link to \"%s\": %s", path, link, problem);
      if (through_symlink(link))
        return hostile_entry(err, "entry \"%s\": hard link to \"%s\" goes through a symlink", path, link);
    }
    _cleanup_free_ char *clean = layer_clean_path(path);
    /* An image archive that reached the tree unpacker (compressed with its
     * marks past the first member, or from a pipe) is never a tree. */
    if (!c->layer && !c->add && oci_archive_marker(clean)) {
      hutch_error_set(err, EINVAL,
                      "entry \"%s\": an image archive's %s at the top of the tarball; nothing was imported", path,
                      clean);
      return hutch_error_hint(err, "an image archive is imported from an uncompressed file (decompress it first); a "
                                   "root filesystem tarball must not have manifest.json, index.json or oci-layout at "
                                   "its top");
    }
    if (c->layer) {
      int w = layer_entry(c, e, path, clean, err);
      if (w < 0)
        return -1;
      if (w > 0)
        continue;
    }
    mode_t type = ARCHIVE(archive_entry_filetype)(e);
    if (parent_through_symlink(c, clean))
      return hostile_entry(err, "entry \"%s\" goes through a symlink", path);
    /* A directory that becomes anything else (libarchive replaces an empty
     * one) may become a symlink: forget what was verified. */
    if ((link || type != AE_IFDIR) && layer_paths_has(&c->real_dirs, clean))
      layer_paths_clear(&c->real_dirs);
    if (!link && (type == AE_IFCHR || type == AE_IFBLK || type == AE_IFIFO || type == AE_IFSOCK)) {
      stats->skipped_special++;
      continue;
    }
    map_owner(e, c->maps, stats);
    filter_xattrs(e);
    choose_owner_restore(out, c, e);

    r = ARCHIVE(archive_write_header)(out, e);
    if (r < ARCHIVE_WARN) {
      const char *msg = ARCHIVE(archive_error_string)(out);
      /* libarchive's own SECURE_* refusals: same story as ours. */
      if (msg && (strstr(msg, "symlink") || strstr(msg, "..") || strstr(msg, "absolute")))
        return hostile_entry(err, "entry \"%s\": %s", path, msg);
      return entry_error(err, la_errno(out), path, msg ? msg : "cannot create it");
    }
    if (r == ARCHIVE_WARN) {
      stats->warnings++;
      note_first(stats->first_warning, sizeof(stats->first_warning), path, ARCHIVE(archive_error_string)(out));
    }
    if (ARCHIVE(archive_entry_size_is_set)(e) && ARCHIVE(archive_entry_size)(e) > 0 &&
        copy_data(in, out, path, err) < 0)
      return -1;
    r = ARCHIVE(archive_write_finish_entry)(out);
    if (r < ARCHIVE_WARN)
      return entry_error(err, la_errno(out), path, ARCHIVE(archive_error_string)(out));
    if (r == ARCHIVE_WARN) {
      stats->warnings++;
      note_first(stats->first_warning, sizeof(stats->first_warning), path, ARCHIVE(archive_error_string)(out));
    }
    if (type == AE_IFREG && !link)
      stats->size += (uint64_t)ARCHIVE(archive_entry_size)(e);
    stats->entries++;
  }
}

/* ---- the child's input: the archive fd, hashed as it is read ---- */

/* Chunks read and not yet hashed, or still in libarchive's hands (the last
 * one handed out): the hashing thread may lag this far behind. */
#define READ_RING 4

struct reader {
  struct child_ctx *c;
  char *buf[READ_RING];
  size_t len[READ_RING];
  uint64_t pos;    /* bytes read */
  uint64_t issued; /* chunks read */
  /* The hashing thread runs beside libarchive, on another core. */
  pthread_t thread;
  bool threaded;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  uint64_t posted, hashed; /* chunks, under mu */
  bool stop;               /* under mu */
  struct sha256_ctx sha;   /* the hashing thread's while it runs */
};

static void *reader_hash_main(void *data) {
  struct reader *r = data;
  pthread_mutex_lock(&r->mu);
  for (;;) {
    while (r->hashed == r->posted && !r->stop)
      pthread_cond_wait(&r->cv, &r->mu);
    if (r->hashed == r->posted)
      break;
    size_t slot = r->hashed % READ_RING;
    pthread_mutex_unlock(&r->mu);
    sha256_update(&r->sha, r->buf[slot], r->len[slot]);
    pthread_mutex_lock(&r->mu);
    r->hashed++;
    pthread_cond_broadcast(&r->cv);
  }
  pthread_mutex_unlock(&r->mu);
  return NULL;
}

static void reader_init(struct reader *r, struct child_ctx *c) {
  *r = (struct reader){.c = c};
  for (size_t i = 0; i < READ_RING; i++)
    r->buf[i] = xmalloc(READ_CHUNK);
  sha256_init(&r->sha);
  pthread_mutex_init(&r->mu, NULL);
  pthread_cond_init(&r->cv, NULL);
  /* Without the thread, chunks are hashed inline. */
  r->threaded = pthread_create(&r->thread, NULL, reader_hash_main, r) == 0;
}

/* Wait for every chunk read to be hashed, then end the thread. */
static void reader_stop(struct reader *r) {
  if (!r->threaded)
    return;
  pthread_mutex_lock(&r->mu);
  r->stop = true;
  pthread_cond_broadcast(&r->cv);
  pthread_mutex_unlock(&r->mu);
  pthread_join(r->thread, NULL);
  r->threaded = false;
}

static void reader_free(struct reader *r) {
  reader_stop(r);
  for (size_t i = 0; i < READ_RING; i++)
    free(r->buf[i]);
  pthread_mutex_destroy(&r->mu);
  pthread_cond_destroy(&r->cv);
}

static ssize_t read_chunk(int fd, void *buf, size_t len, uint64_t offset, bool seekable) {
  for (;;) {
    ssize_t r = seekable ? pread(fd, buf, len, (off_t)offset) : read(fd, buf, len);
    if (r >= 0 || errno != EINTR)
      return r;
  }
}

/* The next chunk into *out: its size, 0 at the end of the input, -1 with
 * errno on a read error. */
static ssize_t reader_next(struct reader *r, const void **out) {
  struct child_ctx *c = r->c;
  uint64_t left = c->limit - r->pos;
  size_t want = left < READ_CHUNK ? (size_t)left : READ_CHUNK;
  if (want == 0)
    return 0;
  size_t slot = r->issued % READ_RING;
  if (r->threaded && r->issued >= READ_RING) {
    /* The slot's previous chunk must be hashed before it is overwritten. */
    pthread_mutex_lock(&r->mu);
    while (r->hashed < r->issued - READ_RING + 1)
      pthread_cond_wait(&r->cv, &r->mu);
    pthread_mutex_unlock(&r->mu);
  }
  ssize_t n = read_chunk(c->fd, r->buf[slot], want, c->offset + r->pos, c->seekable);
  if (n <= 0)
    return n;
  r->len[slot] = (size_t)n;
  r->issued++;
  r->pos += (uint64_t)n;
  if (r->threaded) {
    pthread_mutex_lock(&r->mu);
    r->posted = r->issued;
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
  } else {
    sha256_update(&r->sha, r->buf[slot], (size_t)n);
  }
  __atomic_store_n(&c->shared->done, r->pos, __ATOMIC_RELAXED);
  *out = r->buf[slot];
  return n;
}

/* No skip callback: libarchive must see (and we hash) every byte. */
static la_ssize_t reader_read(struct archive *a, void *data, const void **out) {
  struct reader *r = data;
  ssize_t n = reader_next(r, out);
  if (n < 0)
    ARCHIVE(archive_set_error)(a, errno, "read the archive at byte %llu", (unsigned long long)r->pos);
  return n;
}

static int child_main(void *data, hutch_error_t *err) {
  struct child_ctx *c = data;
  prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
  if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
    return hutch_error_sys(err, "unpack: make mounts private");

  struct reader rd;
  reader_init(&rd, c);
  struct archive *in = ARCHIVE(archive_read_new)();
  struct archive *out = ARCHIVE(archive_write_disk_new)();
  if (in == NULL || out == NULL)
    abort();
  ARCHIVE(archive_read_support_format_tar)(in);
  /* Spawned when the archive is opened, if at all (archive_dl.h): still
   * outside the chroot, so never a program the archive provided. */
  archive_dl_support_filters(in);
  int ret = -1;
  /* Open (and sniff the format) before the chroot. */
  if (ARCHIVE(archive_read_open)(in, &rd, NULL, reader_read, NULL) != ARCHIVE_OK) {
    hutch_error_set(err, la_errno(in), "not a tar archive: %s", ARCHIVE(archive_error_string)(in));
    hutch_error_hint(err, "hutch imports tar archives, uncompressed or compressed with gzip, xz, zstd, bzip2 or lz4");
    goto out;
  }
  /* A directory the caller opened without following links is entered as
   * it is: a path string would be resolved again, through whatever a
   * ".." or a link in it names. */
  if (c->target_fd >= 0 ? fchdir(c->target_fd) < 0 : chdir(c->target) < 0) {
    hutch_error_sys(err, "unpack: enter %s", c->target);
    goto out;
  }
  close_directory_fds();
  if (chroot(".") < 0 || chdir("/") < 0) {
    hutch_error_sys(err, "unpack: chroot into %s", c->target);
    goto out;
  }
  /* No user/group lookup functions: ids are taken numerically from the
   * archive, never from an /etc/passwd the archive itself just wrote.  No
   * ARCHIVE_EXTRACT_SPARSE: it writes every file in st_blksize pieces to
   * look for zeros (one write per 4 KiB); the holes of sparse members are
   * kept without it, as the data arrives with its offsets. */
  c->owner_restored = true;
  ARCHIVE(archive_write_disk_set_options)(out, extract_options(true));
  if (extract_all(in, out, c, err) < 0)
    goto out;
  if (c->stats->entries == 0 && !c->layer && !c->add) {
    hutch_error_set(err, 0, "the archive holds no files");
    hutch_error_hint(err, "a rootfs tarball holds a whole tree: tar -C DIR -cf FILE .");
    goto out;
  }
  /* Directory modes and times are applied last, here. */
  if (ARCHIVE(archive_write_close)(out) < ARCHIVE_WARN) {
    hutch_error_set(err, la_errno(out), "unpack: finish directories: %s", ARCHIVE(archive_error_string)(out));
    goto out;
  }
  /* The digest covers the whole input, including what follows the
   * end-of-archive marker. */
  const void *rest;
  ssize_t n;
  while ((n = reader_next(&rd, &rest)) > 0)
    ;
  if (n < 0) {
    hutch_error_sys(err, "read the archive at byte %llu", (unsigned long long)rd.pos);
    goto out;
  }
  reader_stop(&rd);
  sha256_final(&rd.sha, c->shared->digest);
  ret = 0;
out:
  ARCHIVE(archive_read_free)(in);
  ARCHIVE(archive_write_free)(out);
  layer_paths_clear(&c->written);
  layer_paths_clear(&c->real_dirs);
  reader_free(&rd);
  return ret;
}

struct unpack_thread {
  struct child_ctx *ctx;
  int result;
  hutch_error_t err;
};

static void *unpack_thread_main(void *data) {
  struct unpack_thread *t = data;
  t->result = userns_run(t->ctx->maps, CLONE_NEWNS, child_main, t->ctx, &t->err);
  return NULL;
}

#define PROGRESS_INTERVAL_NS (100 * 1000 * 1000L)

int unpack_archive(const struct unpack_request *req, uint8_t digest[SHA256_DIGEST_SIZE], struct unpack_stats *stats,
                   hutch_error_t *err) {
  /* Here, in the caller: the child chroots into the new image, where the
   * library's file is out of reach. */
  if (archive_dl_load(err) < 0)
    return hutch_error_wrap(err, "unpack");
  if (req->budget == NULL)
    return hutch_error_set(err, EINVAL, "unpack: no import budget");
  struct unpack_shared *shared = mmap(NULL, sizeof(*shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (shared == MAP_FAILED)
    return hutch_error_sys(err, "unpack: map shared counters");
  memset(shared, 0, sizeof(*shared));

  struct stat st;
  /* A layer is a range of a file (a member of an image archive, or a
   * verified download): read exactly that range. */
  struct child_ctx ctx = {
      .fd = req->fd,
      .seekable = fstat(req->fd, &st) == 0 && S_ISREG(st.st_mode),
      .offset = req->offset,
      .limit = req->length ? req->length : UINT64_MAX,
      .shared = shared,
      .target = req->target,
      .target_fd = req->target_fd > 0 ? req->target_fd : -1,
      .maps = req->maps,
      .stats = &shared->stats,
      .layer = req->layer,
      .add = req->add,
      .budget = req->budget,
      .used_bytes = req->used_bytes,
      .used_entries = req->used_entries,
  };
  struct unpack_thread t = {.ctx = &ctx, .result = -1};
  if (req->progress == NULL) {
    unpack_thread_main(&t);
  } else {
    /* The child does the work; this thread only reports how far it got. */
    pthread_t thread;
    int r = pthread_create(&thread, NULL, unpack_thread_main, &t);
    if (r != 0) {
      munmap(shared, sizeof(*shared));
      return hutch_error_set(err, r, "unpack: start a thread");
    }
    for (;;) {
      struct timespec deadline;
      clock_gettime(CLOCK_REALTIME, &deadline);
      deadline.tv_nsec += PROGRESS_INTERVAL_NS;
      if (deadline.tv_nsec >= 1000000000L) {
        deadline.tv_sec++;
        deadline.tv_nsec -= 1000000000L;
      }
      r = pthread_timedjoin_np(thread, NULL, &deadline);
      if (r != ETIMEDOUT && r != EINTR)
        break;
      req->progress(__atomic_load_n(&shared->done, __ATOMIC_RELAXED), req->total, req->progress_data);
    }
  }

  int ret = -1;
  if (t.result < 0) {
    hutch_error_move(err, &t.err);
  } else {
    if (req->progress)
      req->progress(shared->done, req->total, req->progress_data);
    memcpy(digest, shared->digest, SHA256_DIGEST_SIZE);
    *stats = shared->stats;
    ret = 0;
  }
  hutch_error_free(&t.err);
  munmap(shared, sizeof(*shared));
  return ret;
}
