/* SPDX-License-Identifier: Apache-2.0 */
#include "config.h"

#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <sched.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

const char *hutch_program_name = "hutch";

void cleanup_strvp(char ***strv) {
  if (*strv == NULL)
    return;
  for (char **s = *strv; *s != NULL; s++)
    free(*s);
  free(*strv);
}

void *xmalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (p == NULL)
    abort();
  return p;
}

void *xcalloc(size_t n, size_t size) {
  void *p = calloc(n ? n : 1, size ? size : 1);
  if (p == NULL)
    abort();
  return p;
}

void *xrealloc(void *p, size_t n) {
  void *q = realloc(p, n ? n : 1);
  if (q == NULL)
    abort();
  return q;
}

char *xstrdup(const char *s) {
  char *d = strdup(s);
  if (d == NULL)
    abort();
  return d;
}

char *xstrndup(const char *s, size_t n) {
  char *d = strndup(s, n);
  if (d == NULL)
    abort();
  return d;
}

char *xvasprintf(const char *fmt, va_list ap) {
  char *s = NULL;
  if (vasprintf(&s, fmt, ap) < 0)
    abort();
  return s;
}

char *xasprintf(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *s = xvasprintf(fmt, ap);
  va_end(ap);
  return s;
}

ssize_t read_all(int fd, void *buf, size_t len) {
  size_t got = 0;
  while (got < len) {
    ssize_t r = read(fd, (char *)buf + got, len - got);
    if (r < 0) {
      if (errno == EINTR)
        continue;
      return -1;
    }
    if (r == 0)
      break;
    got += (size_t)r;
  }
  return (ssize_t)got;
}

int stdio_refuse_directory(int fd, int stream, hutch_error_t *err) {
  static const char *const names[] = {"stdin", "stdout", "stderr"};
  const char *what = stream >= 0 && stream < 3 ? names[stream] : "stream";
  struct stat st;
  if (fd < 0)
    return 0;
  if (fstat(fd, &st) < 0) {
    /* A closed stream stays closed; one that cannot be looked at is not
     * handed over unseen. */
    if (errno == EBADF)
      return 0;
    return hutch_error_sys(err, "the command's %s (fd %d)", what, fd);
  }
  if (!S_ISDIR(st.st_mode))
    return 0;
  hutch_error_set(err, EISDIR, "the command's %s (fd %d) is a directory, which would give the sandbox the host's files",
                  what, fd);
  return hutch_error_hint(err, "give it a file, a pipe or a terminal; to share a directory, bind it (--bind)");
}

int write_all(int fd, const void *buf, size_t len) {
  const char *p = buf;
  while (len > 0) {
    ssize_t w = write(fd, p, len);
    if (w < 0) {
      if (errno == EINTR)
        continue;
      return -1;
    }
    p += w;
    len -= (size_t)w;
  }
  return 0;
}

int write_file_at(int dirfd, const char *path, const void *data, size_t len, int mode) {
  _cleanup_close_ int fd = openat(dirfd, path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode);
  if (fd < 0)
    return -1;
  if (write_all(fd, data, len) < 0)
    return -1;
  return 0;
}

int copy_all(int fd, int src_fd) {
  char buf[64 * 1024];
  ssize_t n;
  while ((n = read_all(src_fd, buf, sizeof(buf))) > 0)
    if (write_all(fd, buf, (size_t)n) < 0)
      return -1;
  return n < 0 ? -1 : 0;
}

/* data (src_fd < 0) or all of src_fd, to a temporary name beside path,
 * then renamed over it. */
static int replace_file(const char *path, const void *data, size_t len, int src_fd, int mode, bool sync) {
  _cleanup_free_ char *tmp = xasprintf("%s.tmp.%d", path, (int)getpid());
  _cleanup_close_ int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode);
  if (fd < 0)
    return -1;
  if ((src_fd >= 0 ? copy_all(fd, src_fd) : write_all(fd, data, len)) < 0 || (sync && fsync(fd) < 0)) {
    int saved = errno;
    unlink(tmp);
    errno = saved;
    return -1;
  }
  if (rename(tmp, path) < 0) {
    int saved = errno;
    unlink(tmp);
    errno = saved;
    return -1;
  }
  return 0;
}

int write_file_atomic(const char *path, const void *data, size_t len, int mode) {
  return replace_file(path, data, len, -1, mode, true);
}

int write_file_replace(const char *path, const void *data, size_t len, int mode) {
  return replace_file(path, data, len, -1, mode, false);
}

int copy_file_replace(const char *path, int src_fd, int mode) {
  return replace_file(path, NULL, 0, src_fd, mode, false);
}

/* All of fd, at most max bytes (EFBIG past that), NUL-terminated. */
static char *read_fd_all(int fd, size_t max, size_t *len_out) {
  size_t cap = 4096, len = 0;
  _cleanup_free_ char *buf = xmalloc(cap + 1);
  for (;;) {
    if (len == cap) {
      if (cap >= max) {
        errno = EFBIG;
        return NULL;
      }
      cap = cap * 2 > max ? max : cap * 2;
      buf = xrealloc(buf, cap + 1);
    }
    ssize_t r = read(fd, buf + len, cap - len);
    if (r < 0) {
      if (errno == EINTR)
        continue;
      return NULL;
    }
    if (r == 0)
      break;
    len += (size_t)r;
  }
  buf[len] = '\0';
  if (len_out)
    *len_out = len;
  return steal_pointer(&buf);
}

char *read_file_at(int dirfd, const char *path, size_t max, size_t *len_out) {
  _cleanup_close_ int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return NULL;
  return read_fd_all(fd, max, len_out);
}

bool kernel_at_least(int major, int minor) {
  static int have_major = -1, have_minor;
  if (have_major < 0) {
    struct utsname u;
    int ma = 0, mi = 0;
    if (uname(&u) == 0)
      sscanf(u.release, "%d.%d", &ma, &mi);
    have_minor = mi;
    __atomic_store_n(&have_major, ma, __ATOMIC_RELEASE);
  }
  int ma = __atomic_load_n(&have_major, __ATOMIC_ACQUIRE);
  return ma > major || (ma == major && have_minor >= minor);
}

int openat2_retry(int dirfd, const char *path, uint64_t flags, mode_t mode, uint64_t resolve) {
  /* openat2 refuses any flag but O_DIRECTORY and O_NOFOLLOW beside O_PATH. */
  uint64_t extra = (flags & O_PATH) ? O_CLOEXEC : O_CLOEXEC | O_NOCTTY;
  struct open_how how = {.flags = flags | extra, .mode = mode, .resolve = resolve};
  for (int i = 0; i < 32; i++) {
    long fd = syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
    if (fd >= 0 || errno != EAGAIN)
      return (int)fd;
  }
  return -1;
}

char *read_regular_file_at(int dirfd, const char *path, size_t max, size_t *len_out) {
  _cleanup_close_ int fd = openat(dirfd, path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0)
    return NULL;
  struct stat st;
  if (fstat(fd, &st) < 0)
    return NULL;
  if (!S_ISREG(st.st_mode)) {
    errno = EINVAL;
    return NULL;
  }
  return read_fd_all(fd, max, len_out);
}

int mkdir_p(const char *path, int mode) {
  _cleanup_free_ char *p = xstrdup(path);
  for (char *s = p + 1; *s; s++) {
    if (*s != '/')
      continue;
    *s = '\0';
    if (mkdir(p, mode) < 0 && errno != EEXIST)
      return -1;
    *s = '/';
  }
  if (mkdir(p, mode) < 0 && errno != EEXIST)
    return -1;
  return 0;
}

static int remove_dir_contents(int dfd) {
  _cleanup_dir_ DIR *d = fdopendir(dfd);
  if (d == NULL) {
    close(dfd);
    return -1;
  }
  int ret = 0;
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
      continue;
    if (remove_tree_at(dirfd(d), de->d_name) < 0)
      ret = -1;
  }
  return ret;
}

char *fd_path(int fd) {
  char self[64], buf[PATH_MAX];
  snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
  ssize_t n = readlink(self, buf, sizeof(buf) - 1);
  if (n < 0)
    return NULL;
  if (n == 0 || buf[0] != '/' || (size_t)n >= sizeof(buf) - 1) {
    errno = ENAMETOOLONG; /* not a path (or cut short) */
    return NULL;
  }
  buf[n] = '\0';
  return xstrdup(buf);
}

int remove_dir_contents_fd(int dfd) {
  int own = fcntl(dfd, F_DUPFD_CLOEXEC, 0);
  /* The copy shares dfd's offset: read from the start, and rewound for
   * the caller's next read. */
  if (own < 0 || lseek(own, 0, SEEK_SET) < 0) {
    if (own >= 0)
      close(own);
    return -1;
  }
  int r = remove_dir_contents(own);
  int saved = errno;
  lseek(dfd, 0, SEEK_SET);
  errno = saved;
  return r;
}

int dir_is_empty(int dfd) {
  if (lseek(dfd, 0, SEEK_SET) < 0)
    return -1;
  char buf[512] __attribute__((aligned(8)));
  for (;;) {
    long n = syscall(SYS_getdents64, dfd, buf, sizeof(buf));
    if (n <= 0)
      return n == 0 ? 1 : -1;
    for (long off = 0; off < n;) {
      const struct dirent64 *de = (const struct dirent64 *)(buf + off);
      if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
        return 0;
      off += de->d_reclen;
    }
  }
}

char *find_in_path(const char *prog, const char *default_path) {
  const char *path = getenv("PATH");
  _cleanup_free_ char *copy = xstrdup(path && *path ? path : default_path);
  char *save = NULL;
  for (char *dir = strtok_r(copy, ":", &save); dir; dir = strtok_r(NULL, ":", &save)) {
    char *full = xasprintf("%s/%s", dir, prog);
    if (access(full, X_OK) == 0)
      return full;
    free(full);
  }
  return NULL;
}

int remove_tree_at(int dirfd, const char *name) {
  if (unlinkat(dirfd, name, 0) == 0 || errno == ENOENT)
    return 0;
  if (errno != EISDIR && errno != EPERM)
    return -1;
  int dfd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dfd < 0 && errno == EACCES) {
    /* A directory we own but may not read (overlayfs leaves its work/work
     * at mode 000): unlinkat said EISDIR, so this is no symlink to chmod
     * through. */
    if (fchmodat(dirfd, name, 0700, 0) == 0)
      dfd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    else
      errno = EACCES;
  }
  if (dfd < 0)
    return -1;
  /* A directory we cannot write into cannot be emptied; make it writable
   * first (we own it, or we are root in the namespace that does). */
  fchmod(dfd, 0700);
  if (remove_dir_contents(dfd) < 0)
    return -1;
  if (unlinkat(dirfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
    return -1;
  return 0;
}

double monotonic_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The one sink of the library's log lines (hutch_set_log_handler). */
static hutch_log_fn log_handler;
static void *log_handler_data;

void hutch_set_log_handler(hutch_log_fn fn, void *data) {
  log_handler = fn;
  log_handler_data = data;
}

const char *hutch_log_level_prefix(enum hutch_log_level level) {
  switch (level) {
  case HUTCH_LOG_DEBUG:
    return "debug: ";
  case HUTCH_LOG_NOTICE:
    return "notice: ";
  case HUTCH_LOG_WARNING:
    return "warning: ";
  case HUTCH_LOG_INFO:
    break;
  }
  return "";
}

static bool debug_enabled(void) {
  static int enabled = -1;
  if (enabled < 0)
    enabled = getenv("HUTCH_DEBUG") != NULL;
  return enabled;
}

/* One line to the handler, else to stderr as "prog: kind: message", with
 * what may have come from a sandbox made harmless to the terminal. */
static void log_line(enum hutch_log_level level, const char *fmt, va_list ap) {
  if (level == HUTCH_LOG_DEBUG && !debug_enabled())
    return;
  _cleanup_free_ char *msg = xvasprintf(fmt, ap);
  _cleanup_free_ char *safe = text_escape_cstr(msg);
  if (log_handler)
    log_handler(level, safe, log_handler_data);
  else
    fprintf(stderr, "%s: %s%s\n", hutch_program_name, hutch_log_level_prefix(level), safe);
}

void hutch_log(enum hutch_log_level level, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  log_line(level, fmt, ap);
  va_end(ap);
}

void hutch_warn(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  log_line(HUTCH_LOG_WARNING, fmt, ap);
  va_end(ap);
}

void hutch_notice(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  log_line(HUTCH_LOG_NOTICE, fmt, ap);
  va_end(ap);
}

void hutch_log_errno(enum hutch_log_level level, int errnum, const char *fmt, ...) {
  if (level == HUTCH_LOG_DEBUG && !debug_enabled())
    return;
  va_list ap;
  va_start(ap, fmt);
  _cleanup_free_ char *what = xvasprintf(fmt, ap);
  va_end(ap);
  _cleanup_free_ char *line = hutch_errno_format(errnum, "%s", what);
  hutch_log(level, "%s", line);
}

void hutch_log_error(enum hutch_log_level level, const hutch_error_t err) {
  _cleanup_free_ char *line = hutch_error_format(err);
  hutch_log(level, "%s", line);
}

void hutch_debug(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  log_line(HUTCH_LOG_DEBUG, fmt, ap);
  va_end(ap);
}

void text_append(char **data, size_t *len, size_t *cap, const char *s, size_t n) {
  if (*len + n + 1 > *cap) {
    *cap = (*len + n + 1) * 2;
    *data = xrealloc(*data, *cap);
  }
  memcpy(*data + *len, s, n);
  *len += n;
  (*data)[*len] = '\0';
}

void text_appendf(char **data, size_t *len, size_t *cap, const char *fmt, ...) {
  char tmp[128];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
  va_end(ap);
  if (n > 0)
    text_append(data, len, cap, tmp, (size_t)n < sizeof(tmp) ? (size_t)n : sizeof(tmp) - 1);
}

bool nproc_raise(struct rlimit *old) {
  if (getrlimit(RLIMIT_NPROC, old) < 0) {
    *old = (struct rlimit){RLIM_INFINITY, RLIM_INFINITY};
    return false;
  }
  if (old->rlim_cur >= old->rlim_max)
    return false;
  struct rlimit hard = {old->rlim_max, old->rlim_max};
  return setrlimit(RLIMIT_NPROC, &hard) == 0;
}

void nproc_restore(bool raised, const struct rlimit *old) {
  if (!raised)
    return;
  int e = errno;
  (void)setrlimit(RLIMIT_NPROC, old);
  errno = e;
}

void run_beside_caller(pid_t pid) {
  int e = errno;
  cpu_set_t set;
  int cpu = sched_getcpu();
  if (cpu >= 0 && sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_ISSET(cpu, &set) && CPU_COUNT(&set) > 1) {
    CPU_CLR(cpu, &set);
    (void)sched_setaffinity(pid, sizeof(set), &set);
  }
  errno = e;
}

void close_fds_except(const int *keep, size_t n) {
  int lo = 3;
  for (;;) {
    int next = -1;
    for (size_t i = 0; i < n; i++)
      if (keep[i] >= lo && (next < 0 || keep[i] < next))
        next = keep[i];
    if (next < 0)
      break;
    if (next > lo)
      syscall(SYS_close_range, lo, next - 1, 0);
    lo = next + 1;
  }
  syscall(SYS_close_range, lo, ~0U, 0);
}

bool parse_u32_digits(const char *s, size_t len, uint32_t *out) {
  if (len == 0 || len > 10)
    return false;
  uint64_t v = 0;
  for (size_t i = 0; i < len; i++) {
    if (s[i] < '0' || s[i] > '9')
      return false;
    v = v * 10 + (uint64_t)(s[i] - '0');
  }
  if (v > UINT32_MAX)
    return false;
  *out = (uint32_t)v;
  return true;
}
