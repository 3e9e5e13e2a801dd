#include "config.h"

#include "transfer.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>

#include "util.h"

#define LIST_MAX (64u << 20)
#define COPY_TIMEOUT 600

bool transfer_safe_relpath(const char *p) {
  if (strncmp(p, "./", 2) == 0)
    p += 2;
  if (*p == '\0' || *p == '/')
    return false;
  for (const char *c = p; *c;) {
    const char *slash = strchr(c, '/');
    size_t n = slash ? (size_t)(slash - c) : strlen(c);
    if (n == 0 || (n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
      return false;
    c += n;
    if (*c == '/')
      c++;
  }
  return true;
}

/* ---- in ---- */

static int run_ok(struct task_sandbox *t, const char *const *argv, const char *workdir, const char *input, size_t len,
                  size_t cap, struct run_result *res, hutch_error_t *err) {
  struct run_request req = {
      .argv = argv, .workdir = workdir, .input = input, .input_len = len, .timeout = COPY_TIMEOUT, .cap = cap};
  if (task_sandbox_run(t, &req, res, err) < 0)
    return -1;
  int code = hutch_exit_code(&res->exit);
  if (code != 0)
    return hutch_error_set(err, EIO, "%s in the sandbox: exit code %d: %.300s", argv[0], code, res->err.data);
  return 0;
}

static int copy_in_dir(struct task_sandbox *t, int dirfd, const char *host, const char *dest, struct copy_report *rep,
                       hutch_error_t *err) {
  const char *mk[] = {"mkdir", "-p", dest, NULL};
  struct run_result res;
  int r = run_ok(t, mk, "/", NULL, 0, 4096, &res, err);
  run_result_clear(&res);
  if (r < 0)
    return -1;
  rep->dirs++;
  int dfd = dup(dirfd);
  _cleanup_dir_ DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
  if (d == NULL)
    return hutch_error_sys(err, "read directory %s", host);
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
      continue;
    _cleanup_free_ char *hpath = xasprintf("%s/%s", host, de->d_name);
    _cleanup_free_ char *spath = xasprintf("%s/%s", dest, de->d_name);
    struct stat st;
    if (fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
      return hutch_error_sys(err, "stat %s", hpath);
    if (S_ISDIR(st.st_mode)) {
      _cleanup_close_ int sub = openat(dirfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (sub < 0)
        return hutch_error_sys(err, "open %s", hpath);
      if (copy_in_dir(t, sub, hpath, spath, rep, err) < 0)
        return -1;
    } else if (S_ISREG(st.st_mode)) {
      size_t len = 0;
      _cleanup_free_ char *data = read_file_at(dirfd, de->d_name, (size_t)1 << 32, &len);
      if (data == NULL)
        return hutch_error_sys(err, "read %s", hpath);
      const char *wr[] = {"sh", "-c", "cat > \"$1\"", "sh", spath, NULL};
      r = run_ok(t, wr, "/", data, len, 4096, &res, err);
      run_result_clear(&res);
      if (r < 0)
        return hutch_error_wrap(err, "copy %s in", hpath);
      rep->files++;
      rep->bytes += len;
    } else {
      rep->skipped++;
    }
  }
  return 0;
}

int transfer_in(struct task_sandbox *t, const char *src, const char *dest, struct copy_report *rep,
                hutch_error_t *err) {
  memset(rep, 0, sizeof(*rep));
  _cleanup_close_ int fd = open(src, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    hutch_error_sys(err, "input directory %s", src);
    return hutch_error_hint(err, "--input-dir names a directory whose contents are copied in");
  }
  return copy_in_dir(t, fd, src, dest, rep, err);
}

/* ---- out ---- */

/* NUL-separated list of the entries find(1) prints for `tests`. */
static char *list(struct task_sandbox *t, const char *src, const char *tests, size_t *len, hutch_error_t *err) {
  _cleanup_free_ char *script = xasprintf("cd \"$1\" && find . -mindepth 1 %s -print0", tests);
  const char *argv[] = {"sh", "-c", script, "sh", src, NULL};
  struct run_result res;
  if (run_ok(t, argv, "/", NULL, 0, LIST_MAX, &res, err) < 0) {
    run_result_clear(&res);
    return NULL;
  }
  if (res.out.capped) {
    run_result_clear(&res);
    hutch_error_set(err, EFBIG, "the listing of %s is larger than %u MiB", src, LIST_MAX >> 20);
    return NULL;
  }
  *len = res.out.len;
  char *r = steal_pointer(&res.out.data);
  run_result_clear(&res);
  return r;
}

/* Opens (creating when asked) the directory rel below root, one component at
 * a time and never through a symlink. */
static int open_dir_below(int root, const char *rel, bool create) {
  int cur = dup(root);
  _cleanup_free_ char *copy = xstrdup(rel);
  char *save = NULL;
  for (char *c = strtok_r(copy, "/", &save); c != NULL && cur >= 0; c = strtok_r(NULL, "/", &save)) {
    if (strcmp(c, ".") == 0)
      continue;
    int next = openat(cur, c, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (next < 0 && errno == ENOENT && create && mkdirat(cur, c, 0755) == 0)
      next = openat(cur, c, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int saved = errno;
    close(cur);
    errno = saved;
    cur = next;
  }
  return cur;
}

int transfer_out(struct task_sandbox *t, const char *src, const char *dest, uint64_t limit, struct copy_report *rep,
                 hutch_error_t *err) {
  memset(rep, 0, sizeof(*rep));
  if (mkdir(dest, 0755) < 0 && errno != EEXIST)
    return hutch_error_sys(err, "create %s", dest);
  _cleanup_close_ int root = open(dest, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (root < 0)
    return hutch_error_sys(err, "open %s", dest);
  /* Is there anything to copy? A missing output directory is not an error. */
  const char *probe[] = {"test", "-d", src, NULL};
  struct run_request req = {.argv = probe, .workdir = "/", .timeout = COPY_TIMEOUT, .cap = 4096};
  struct run_result res;
  if (task_sandbox_run(t, &req, &res, err) < 0) {
    run_result_clear(&res);
    return -1;
  }
  bool exists = hutch_exit_code(&res.exit) == 0;
  run_result_clear(&res);
  if (!exists)
    return 0;
  size_t dlen = 0, flen = 0, olen = 0;
  _cleanup_free_ char *dirs = list(t, src, "-type d", &dlen, err);
  if (dirs == NULL)
    return hutch_error_wrap(err, "copy %s back", src);
  _cleanup_free_ char *files = list(t, src, "-type f", &flen, err);
  if (files == NULL)
    return hutch_error_wrap(err, "copy %s back", src);
  _cleanup_free_ char *others = list(t, src, "! -type d ! -type f", &olen, err);
  if (others == NULL)
    return hutch_error_wrap(err, "copy %s back", src);
  for (size_t i = 0; i < olen; i++)
    if (others[i] == '\0')
      rep->skipped++;
  for (size_t off = 0; off < dlen; off += strlen(dirs + off) + 1) {
    const char *rel = dirs + off;
    if (!transfer_safe_relpath(rel)) {
      rep->skipped++;
      continue;
    }
    int fd = open_dir_below(root, rel, true);
    if (fd < 0)
      return hutch_error_sys(err, "create %s/%s", dest, rel + 2);
    close(fd);
    rep->dirs++;
  }
  for (size_t off = 0; off < flen; off += strlen(files + off) + 1) {
    const char *rel = files + off;
    if (!transfer_safe_relpath(rel)) {
      rep->skipped++;
      continue;
    }
    uint64_t left = limit - rep->bytes;
    const char *argv[] = {"cat", "--", rel, NULL};
    if (run_ok(t, argv, src, NULL, 0, (size_t)(left < SIZE_MAX ? left + 1 : left), &res, err) < 0) {
      run_result_clear(&res);
      return hutch_error_wrap(err, "copy %s/%s back", src, rel + 2);
    }
    if (res.out.len > left) {
      run_result_clear(&res);
      rep->limit_hit = true;
      return 0;
    }
    const char *slash = strrchr(rel, '/');
    _cleanup_free_ char *parent = xstrndup(rel, (size_t)(slash - rel));
    _cleanup_close_ int pfd = open_dir_below(root, parent, true);
    int fd = pfd < 0 ? -1 : openat(pfd, slash + 1, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0 || write_all(fd, res.out.data, res.out.len) < 0) {
      int saved = errno;
      if (fd >= 0)
        close(fd);
      run_result_clear(&res);
      errno = saved;
      return hutch_error_sys(err, "write %s/%s", dest, rel + 2);
    }
    close(fd);
    rep->files++;
    rep->bytes += res.out.len;
    run_result_clear(&res);
  }
  return 0;
}
