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

#include "sandbox.h"
#include "state.h"
#include "util.h"

/* A path as the sandbox names it: "/" and ".." stop at its root, and an
 * absolute symlink means its own root, as for its processes.  /proc's magic
 * links (/proc/PID/root, fd/N) would lead out: refused. */
#define RESOLVE_SANDBOX (RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS)
/* One name below a directory already open, never through a symlink. */
#define RESOLVE_CHILD (RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)

int sfs_openat2(int dirfd, const char *path, uint64_t flags, mode_t mode, uint64_t resolve) {
  /* openat2 refuses any flag but O_DIRECTORY and O_NOFOLLOW beside O_PATH. */
  uint64_t extra = (flags & O_PATH) ? O_CLOEXEC : O_CLOEXEC | O_NOCTTY;
  struct open_how how = {.flags = flags | extra, .mode = mode, .resolve = resolve};
  /* EAGAIN: a rename raced with a lookup that RESOLVE_IN_ROOT keeps inside. */
  for (int i = 0; i < 32; i++) {
    long fd = syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
    if (fd >= 0 || errno != EAGAIN)
      return (int)fd;
  }
  return -1;
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
  if (!owner->chown)
    return 0;
  return fchown(fd, owner->uid, owner->gid);
}

static int64_t inside_root(pid_t pid, const char *file) {
  _cleanup_free_ char *path = xasprintf("/proc/%d/%s", (int)pid, file);
  _cleanup_free_ char *map = read_file_at(AT_FDCWD, path, 4096, NULL);
  return map ? sfs_map_inside_root(map) : -1;
}

int sfs_open_sandbox(struct hutch_sandbox *sb, int *root, struct sfs_owner *owner, hutch_error_t *err) {
  *root = sandbox_root_fd(sb, err);
  if (*root < 0)
    return -1;
  /* Read from the init's maps, as the host sees them; the start time
   * proves the pid is still that init. */
  int64_t uid = inside_root(sb->pid, "uid_map"), gid = inside_root(sb->pid, "gid_map");
  if (uid < 0 || gid < 0 || state_pid_start_time(sb->pid) != sb->start_time)
    return hutch_error_set(err, ESRCH, "sandbox %s: the id maps of its init (pid %d) cannot be read", sb->id,
                           (int)sb->pid);
  owner->uid = (uid_t)uid;
  owner->gid = (gid_t)gid;
  owner->chown = owner->uid != geteuid() || owner->gid != getegid();
  return 0;
}

static int fail_open(hutch_error_t *err, const char *what, const char *path) {
  hutch_error_sys(err, "%s %s in the sandbox", what, path);
  if (errno == ENOSYS)
    return hutch_error_hint(err, "hutch needs openat2(2), Linux 5.6 or later, to reach a sandbox's files");
  return -1;
}

/* An O_PATH fd of path, its type in *st. */
static int open_path(int root, const char *path, bool follow, struct stat *st) {
  int fd = sfs_openat2(root, path, O_PATH | (follow ? 0 : O_NOFOLLOW), 0, RESOLVE_SANDBOX);
  if (fd >= 0 && fstat(fd, st) < 0) {
    int saved = errno;
    close(fd);
    errno = saved;
    return -1;
  }
  return fd;
}

int hutch_sandbox_file_kind(struct hutch_sandbox *sb, const char *path, hutch_error_t *err) {
  int root;
  struct sfs_owner owner;
  if (sfs_open_sandbox(sb, &root, &owner, err) < 0)
    return -1;
  struct stat st;
  _cleanup_close_ int fd = open_path(root, path, true, &st);
  if (fd >= 0)
    return S_ISDIR(st.st_mode) ? HUTCH_FILE_DIR : S_ISREG(st.st_mode) ? HUTCH_FILE_REGULAR : HUTCH_FILE_OTHER;
  if (errno != ENOENT && errno != ENOTDIR && errno != ELOOP)
    return fail_open(err, "inspect", path);
  /* A dangling or looping symlink, or a magic link: there, but no file. */
  _cleanup_close_ int link = open_path(root, path, false, &st);
  return link >= 0 ? HUTCH_FILE_OTHER : HUTCH_FILE_NONE;
}

/* An fd of the regular file at path, opened again with flags. */
static int open_regular(int root, const char *path, int flags, hutch_error_t *err) {
  struct stat st;
  _cleanup_close_ int fd = open_path(root, path, true, &st);
  if (fd < 0)
    return fail_open(err, "open", path);
  if (!S_ISREG(st.st_mode))
    return hutch_error_set(err, S_ISDIR(st.st_mode) ? EISDIR : EINVAL, "%s in the sandbox is not a regular file", path);
  if (sfs_check_fs(fd, path, err) < 0)
    return -1;
  int r = sfs_reopen(fd, flags);
  if (r < 0)
    return hutch_error_sys(err, "open %s in the sandbox", path);
  return r;
}

int hutch_sandbox_read_file(struct hutch_sandbox *sb, const char *path, size_t max, char **data, size_t *len,
                            hutch_error_t *err) {
  int root;
  struct sfs_owner owner;
  if (sfs_open_sandbox(sb, &root, &owner, err) < 0)
    return -1;
  _cleanup_close_ int fd = open_regular(root, path, O_RDONLY, err);
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
  *len = n;
  *data = steal_pointer(&buf);
  return 0;
}

/* mkdir -p through the sandbox's root; every new directory is its root's. */
static int mkdirs(int root, const struct sfs_owner *owner, const char *path, hutch_error_t *err) {
  _cleanup_close_ int cur = sfs_openat2(root, "/", O_PATH | O_DIRECTORY, 0, RESOLVE_SANDBOX);
  if (cur < 0)
    return fail_open(err, "open", "/");
  size_t len = strlen(path);
  for (size_t at = 0; at < len;) {
    while (at < len && path[at] == '/')
      at++;
    size_t end = at;
    while (end < len && path[end] != '/')
      end++;
    if (end == at)
      break;
    _cleanup_free_ char *prefix = xstrndup(path, end);
    _cleanup_free_ char *name = xstrndup(path + at, end - at);
    int next = sfs_openat2(root, prefix, O_PATH | O_DIRECTORY, 0, RESOLVE_SANDBOX);
    if (next < 0 && errno == ENOENT) {
      if (sfs_check_fs(cur, prefix, err) < 0)
        return -1;
      if (mkdirat(cur, name, 0755) == 0) {
        _cleanup_close_ int made = sfs_openat2(cur, name, O_PATH | O_DIRECTORY, 0, RESOLVE_CHILD);
        if (made < 0 || sfs_own(made, owner) < 0)
          return hutch_error_sys(err, "create %s in the sandbox", prefix);
      } else if (errno != EEXIST) {
        return hutch_error_sys(err, "create %s in the sandbox", prefix);
      }
      next = sfs_openat2(root, prefix, O_PATH | O_DIRECTORY, 0, RESOLVE_SANDBOX);
    }
    if (next < 0)
      return fail_open(err, "open", prefix);
    close(cur);
    cur = next;
    at = end;
  }
  return 0;
}

int hutch_sandbox_mkdirs(struct hutch_sandbox *sb, const char *path, hutch_error_t *err) {
  int root;
  struct sfs_owner owner;
  if (sfs_open_sandbox(sb, &root, &owner, err) < 0)
    return -1;
  return mkdirs(root, &owner, path, err);
}

/* The directory path names, checked, as an O_PATH fd. */
static int open_dir(int root, const char *path, hutch_error_t *err) {
  _cleanup_close_ int fd = sfs_openat2(root, path, O_PATH | O_DIRECTORY, 0, RESOLVE_SANDBOX);
  if (fd < 0)
    return fail_open(err, "open", path);
  if (sfs_check_fs(fd, path, err) < 0)
    return -1;
  return steal_fd(&fd);
}

int hutch_sandbox_write_file(struct hutch_sandbox *sb, const char *path, const void *data, size_t len, bool create,
                             hutch_error_t *err) {
  int root;
  struct sfs_owner owner;
  if (sfs_open_sandbox(sb, &root, &owner, err) < 0)
    return -1;
  _cleanup_close_ int fd = -1;
  if (!create) {
    /* What is there is replaced in place (its owner and mode stay), as
     * `cat > path` does; only a missing file is made anew. */
    struct stat st;
    _cleanup_close_ int probe = open_path(root, path, true, &st);
    if (probe >= 0 || errno != ENOENT) {
      fd = open_regular(root, path, O_WRONLY | O_TRUNC, err);
      if (fd < 0)
        return -1;
    }
  }
  if (fd < 0) {
    /* A new file, as `set -C; cat > path` makes it: never over anything. */
    _cleanup_free_ char *parent = NULL, *name = NULL;
    if (!sfs_split(path, &parent, &name))
      return hutch_error_set(err, EINVAL, "%s in the sandbox names no file", path);
    if (create && mkdirs(root, &owner, parent, err) < 0)
      return -1;
    _cleanup_close_ int dir = open_dir(root, parent, err);
    if (dir < 0)
      return -1;
    fd = sfs_openat2(dir, name, O_WRONLY | O_CREAT | O_EXCL, 0644, RESOLVE_CHILD);
    if (fd < 0 || sfs_own(fd, &owner) < 0)
      return hutch_error_sys(err, "create %s in the sandbox", path);
  }
  if (write_all(fd, data, len) < 0)
    return hutch_error_sys(err, "write %s in the sandbox", path);
  return 0;
}

int hutch_sandbox_remove_file(struct hutch_sandbox *sb, const char *path, hutch_error_t *err) {
  int root;
  struct sfs_owner owner;
  if (sfs_open_sandbox(sb, &root, &owner, err) < 0)
    return -1;
  _cleanup_free_ char *parent = NULL, *name = NULL;
  if (!sfs_split(path, &parent, &name))
    return hutch_error_set(err, EINVAL, "%s in the sandbox names no file", path);
  _cleanup_close_ int dir = sfs_openat2(root, parent, O_PATH | O_DIRECTORY, 0, RESOLVE_SANDBOX);
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
  _cleanup_close_ int fd = sfs_openat2(dir, ".", O_RDONLY | O_DIRECTORY, 0, RESOLVE_CHILD);
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
    _cleanup_close_ int sub = sfs_openat2(dirfd(d), de->d_name, O_PATH | O_DIRECTORY, 0, RESOLVE_CHILD);
    if (sub >= 0 && sfs_check_fs(sub, path, NULL) == 0)
      list_below(l, sub, path, depth - 1);
  }
}

int hutch_sandbox_list_dir(struct hutch_sandbox *sb, const char *dir, unsigned depth, size_t max, char ***out,
                           hutch_error_t *err) {
  int root;
  struct sfs_owner owner;
  if (sfs_open_sandbox(sb, &root, &owner, err) < 0)
    return -1;
  _cleanup_close_ int fd = open_dir(root, dir, err);
  if (fd < 0)
    return -1;
  struct lister l = {.max = max ? max : 1};
  list_add(&l, xstrdup(dir));
  if (depth > 0)
    list_below(&l, fd, dir, depth);
  *out = l.paths;
  return 0;
}
