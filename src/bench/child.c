/* The runner's children (hutch run, hutch exec): started with their
 * standard streams set, waited for with a deadline, stopped with SIGTERM
 * (hutch then removes the sandbox) and killed after a grace period. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "error.h"
#include "util.h"

static int spawn(struct bench_child *c, const char *path, char *const argv[], int in, int out, int errfd,
                 hutch_error_t *err) {
  memset(c, 0, sizeof(*c));
  int null = open("/dev/null", O_RDWR | O_CLOEXEC);
  pid_t pid = fork();
  if (pid < 0) {
    int e = errno;
    close(null);
    return hutch_error_set(err, e, "fork");
  }
  if (pid == 0) {
    dup2(in >= 0 ? in : null, 0);
    dup2(out >= 0 ? out : null, 1);
    dup2(errfd >= 0 ? errfd : null, 2);
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = SIG_DFL;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    sigaction(SIGPIPE, &sa, NULL);
    execv(path, argv);
    _exit(127);
  }
  close(null);
  c->pid = pid;
  return 0;
}

char *bench_agent_program(const char *hutch) {
  const char *slash = strrchr(hutch, '/');
  if (slash) {
    char *beside = xasprintf("%.*s/hutch-agent", (int)(slash - hutch), hutch);
    if (access(beside, X_OK) == 0)
      return beside;
    free(beside);
  }
  char *installed = xstrdup(HUTCH_LIBEXECDIR "/hutch-agent");
  if (access(installed, X_OK) == 0)
    return installed;
  free(installed);
  return NULL;
}

int bench_spawn_fds(struct bench_child *c, char *const argv[], int in, int out, int errfd, hutch_error_t *err) {
  return spawn(c, argv[0], argv, in, out, errfd, err);
}

int bench_spawn_path(struct bench_child *c, const char *path, char *const argv[], const char *stdin_path, int in_fd,
                     int out, int errfd, hutch_error_t *err) {
  memset(c, 0, sizeof(*c));
  if (stdin_path == NULL && in_fd >= 0)
    return spawn(c, path, argv, in_fd, out, errfd, err);
  _cleanup_close_ int in = open(stdin_path ? stdin_path : "/dev/null", O_RDONLY | O_CLOEXEC);
  if (in < 0)
    return hutch_error_sys(err, "open %s", stdin_path ? stdin_path : "/dev/null");
  return spawn(c, path, argv, in, out, errfd, err);
}

int bench_spawn(struct bench_child *c, char *const argv[], const char *stdin_path, int out, int errfd,
                hutch_error_t *err) {
  return bench_spawn_path(c, argv[0], argv, stdin_path, -1, out, errfd, err);
}

static void drain(int fd, char **buf, size_t *len, size_t cap) {
  char tmp[65536];
  ssize_t n = read(fd, tmp, sizeof(tmp));
  if (n <= 0)
    return;
  size_t keep = *len < cap ? cap - *len : 0;
  if ((size_t)n < keep)
    keep = (size_t)n;
  if (keep) {
    *buf = xrealloc(*buf, *len + keep + 1);
    memcpy(*buf + *len, tmp, keep);
    *len += keep;
    (*buf)[*len] = '\0';
  }
}

/* Waits until the child exits or `until` (monotonic; 0: never) passes;
 * true when it exited. */
static bool wait_until(struct bench_child *c, double until, bool watch_stop, int capture, char **buf, size_t *len,
                       size_t cap) {
  int pfd = (int)syscall(SYS_pidfd_open, c->pid, 0);
  bool exited = false;
  while (!exited) {
    if (watch_stop && bench_stop) {
      c->stopped = true;
      break;
    }
    double left = until > 0 ? until - monotonic_seconds() : 1.0;
    if (until > 0 && left <= 0)
      break;
    /* Without pidfds (before Linux 5.3): look every 50 ms. */
    int ms = pfd >= 0 ? (int)(left * 1000) + 1 : 50;
    if (until <= 0 && pfd >= 0)
      ms = 1000;
    struct pollfd p[2] = {{.fd = pfd, .events = POLLIN}, {.fd = capture, .events = POLLIN}};
    int r = poll(p, 2, ms);
    if (r > 0 && capture >= 0 && (p[1].revents & (POLLIN | POLLHUP))) {
      if (p[1].revents & POLLIN)
        drain(capture, buf, len, cap);
      else
        capture = -1; /* the writer is gone; stop polling it */
    }
    int status;
    pid_t w = waitpid(c->pid, &status, WNOHANG);
    if (w == c->pid) {
      c->status = status;
      exited = true;
    } else if (w < 0 && errno == ECHILD) {
      c->status = 0;
      exited = true;
    }
  }
  if (pfd >= 0)
    close(pfd);
  return exited;
}

int bench_wait(struct bench_child *c, double timeout, double grace, int capture, char **buf, size_t cap) {
  size_t len = 0;
  if (buf && *buf == NULL)
    *buf = xstrdup("");
  double start = monotonic_seconds();
  if (!wait_until(c, timeout > 0 ? start + timeout : 0, true, capture, buf, &len, cap)) {
    if (!c->stopped)
      c->timed_out = true;
    kill(c->pid, SIGTERM);
    if (!wait_until(c, monotonic_seconds() + grace, false, capture, buf, &len, cap)) {
      kill(c->pid, SIGKILL);
      while (waitpid(c->pid, &c->status, 0) < 0 && errno == EINTR)
        ;
    }
  }
  /* What the child wrote last, before it exited. */
  if (capture >= 0) {
    int fl = fcntl(capture, F_GETFL);
    fcntl(capture, F_SETFL, fl | O_NONBLOCK);
    for (size_t before = (size_t)-1; before != len;) {
      before = len;
      drain(capture, buf, &len, cap);
    }
  }
  return 0;
}
