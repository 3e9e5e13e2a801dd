/* SPDX-License-Identifier: Apache-2.0 */
/* The runner's children (a task's agent, hutch exec): started with their
 * standard streams set, waited for with a deadline, stopped with SIGTERM
 * (the agent or hutch then removes the sandbox) and killed after a grace
 * period.  A task's agent is a child of the agent spawner (spawner.c),
 * which runs it in the forked child itself (agent_main), with no exec: the
 * child is first given what a fresh program would have. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent.h"
#include "bench.h"
#include "error.h"
#include "util.h"

/* In a new child: the standard streams (-1: /dev/null, `null`), and the
 * signal state a fresh exec would give.  Every handler the worker set goes
 * back to its default (execve's rule; an ignored signal stays ignored), and
 * so do SIGINT, SIGTERM, SIGHUP and SIGPIPE; the worker's mask, which the
 * caller blocked around the fork so that no signal could reach the
 * worker's handlers in the child, is restored last. */
static void child_setup(int in, int out, int errfd, int null, const sigset_t *mask) {
  dup2(in >= 0 ? in : null, 0);
  dup2(out >= 0 ? out : null, 1);
  dup2(errfd >= 0 ? errfd : null, 2);
  struct sigaction dfl;
  memset(&dfl, 0, sizeof(dfl));
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; sig++) {
    struct sigaction cur;
    bool caught = sigaction(sig, NULL, &cur) == 0 && cur.sa_handler != SIG_IGN && cur.sa_handler != SIG_DFL;
    if (caught || sig == SIGINT || sig == SIGTERM || sig == SIGHUP || sig == SIGPIPE)
      sigaction(sig, &dfl, NULL);
  }
  stack_t no_stack = {.ss_flags = SS_DISABLE};
  sigaltstack(&no_stack, NULL);
  sigprocmask(SIG_SETMASK, mask, NULL);
}

/* fork() with every signal blocked (the caller's mask, or *restore, given
 * back to the child); the child set up by child_setup.  0 in the child, the
 * pid in the parent, -1 with err. */
static pid_t fork_child(int in, int out, int errfd, const sigset_t *restore, hutch_error_t *err) {
  int null = open("/dev/null", O_RDWR | O_CLOEXEC);
  sigset_t all, mask;
  sigfillset(&all);
  sigprocmask(SIG_SETMASK, &all, &mask);
  /* Nothing the worker buffered may come out twice. */
  fflush(NULL);
  pid_t pid = fork();
  int e = errno;
  if (pid == 0) {
    child_setup(in, out, errfd, null, restore ? restore : &mask);
    return 0;
  }
  sigprocmask(SIG_SETMASK, &mask, NULL);
  if (null >= 0)
    close(null);
  if (pid < 0)
    return hutch_error_set(err, e, "fork");
  return pid;
}

static int spawn(struct bench_child *c, const char *path, char *const argv[], int in, int out, int errfd,
                 hutch_error_t *err) {
  memset(c, 0, sizeof(*c));
  pid_t pid = fork_child(in, out, errfd, NULL, err);
  if (pid < 0)
    return -1;
  if (pid == 0) {
    execv(path, argv);
    _exit(127);
  }
  c->pid = pid;
  return 0;
}

pid_t bench_fork_agent(char *argv[], char *envp[], int in, int out, int errfd, const sigset_t *mask) {
  hutch_error_t err = NULL;
  pid_t pid = fork_child(in, out, errfd, mask, &err);
  if (pid < 0) {
    errno = err->errnum;
    hutch_error_free(&err);
    return -1;
  }
  if (pid > 0)
    return pid;
  /* What execve would have closed (O_CLOEXEC: the spawner's sockets) and
   * what it would have let through (an fd the runner's own caller left
   * open): the agent starts with its standard streams only. */
  if (syscall(SYS_close_range, 3, ~0U, 0) < 0) {
    dprintf(2, "hutch run: close the runner's fds: %s\nhint: close_range needs Linux 5.9 or later\n", strerror(errno));
    _exit(125);
  }
  /* The rest of what the agent's code keeps in globals starts as a fresh
   * program's: the spawner sets no log handler, ties itself to no parent
   * but the runner, makes no sandbox and no LLM client (libcurl is
   * initialised in this child, the shared LLM gate opened from
   * $HUTCH_LLM_GATE), and getopt is reset by settings_parse, the only
   * getopt user.  ps and pgrep tell the task's agent from the runner (the
   * command line is still the runner's). */
  prctl(PR_SET_NAME, "hutch-agent", 0, 0, 0);
  environ = envp;
  int argc = 0;
  while (argv[argc])
    argc++;
  int r = agent_main(argc, argv);
  /* As exit() would, but with none of the runner's atexit handlers (its
   * stdio buffers were empty at the fork: only the agent's are flushed). */
  fflush(NULL);
  _exit(r);
}

int bench_spawn_agent(struct bench_child *c, char *argv[], int in, int out, int errfd, hutch_error_t *err) {
  memset(c, 0, sizeof(*c));
  c->pidfd = c->chan = -1;
  const int stdio[3] = {in, out, errfd};
  return bench_spawner_request(c, argv, stdio, err);
}

int bench_spawn_fds(struct bench_child *c, char *const argv[], int in, int out, int errfd, hutch_error_t *err) {
  return spawn(c, argv[0], argv, in, out, errfd, err);
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
  /* A task's agent is the spawner's child: its end comes on its channel. */
  int pfd = c->remote ? -1 : (int)syscall(SYS_pidfd_open, c->pid, 0);
  int ev = c->remote ? c->chan : pfd;
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
    int ms = ev >= 0 ? (int)(left * 1000) + 1 : 50;
    if (until <= 0 && ev >= 0)
      ms = 1000;
    struct pollfd p[2] = {{.fd = ev, .events = POLLIN}, {.fd = capture, .events = POLLIN}};
    int r = poll(p, 2, ms);
    if (r > 0 && capture >= 0 && (p[1].revents & (POLLIN | POLLHUP))) {
      if (p[1].revents & POLLIN)
        drain(capture, buf, len, cap);
      else
        capture = -1; /* the writer is gone; stop polling it */
    }
    if (c->remote) {
      if (r > 0 && p[0].revents)
        exited = bench_spawner_ended(c) == 1;
      continue;
    }
    int status;
    struct rusage ru;
    pid_t w = wait4(c->pid, &status, WNOHANG, &ru);
    if (w == c->pid) {
      c->status = status;
      c->cpu = (double)bench_rusage_us(&ru) / 1e6;
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

int64_t bench_rusage_us(const struct rusage *ru) {
  return (int64_t)(ru->ru_utime.tv_sec + ru->ru_stime.tv_sec) * 1000000 + ru->ru_utime.tv_usec + ru->ru_stime.tv_usec;
}

int bench_wait(struct bench_child *c, double timeout, double grace, int capture, char **buf, size_t cap) {
  size_t len = 0;
  if (buf && *buf == NULL)
    *buf = xstrdup("");
  double start = monotonic_seconds();
  if (!wait_until(c, timeout > 0 ? start + timeout : 0, true, capture, buf, &len, cap)) {
    if (!c->stopped)
      c->timed_out = true;
    bench_child_signal(c, SIGTERM);
    if (!wait_until(c, monotonic_seconds() + grace, false, capture, buf, &len, cap)) {
      bench_child_signal(c, SIGKILL);
      if (c->remote)
        wait_until(c, 0, false, -1, NULL, NULL, 0);
      else {
        struct rusage ru;
        while (wait4(c->pid, &c->status, 0, &ru) < 0 && errno == EINTR)
          ;
        c->cpu = (double)bench_rusage_us(&ru) / 1e6;
      }
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
