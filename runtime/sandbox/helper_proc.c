/* SPDX-License-Identifier: Apache-2.0 */
/* Starting and stopping a sandbox's host helpers (helper_proc.h). */
#include "config.h"

#include "helper_proc.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proc_stat.h"
#include "util.h"

/* Closes every fd from 3 up but those of keep. */
static void close_all_but(const int *keep, size_t n) {
  unsigned lo = 3;
  for (;;) {
    int next = -1;
    for (size_t i = 0; i < n; i++)
      if (keep[i] >= (int)lo && (next < 0 || keep[i] < next))
        next = keep[i];
    if (next < 0)
      break;
    if ((unsigned)next > lo)
      syscall(SYS_close_range, lo, (unsigned)next - 1, 0);
    lo = (unsigned)next + 1;
  }
  syscall(SYS_close_range, lo, ~0U, 0);
}

/* What the helper must not inherit: the caller's signal mask and handlers
 * (a handler of the caller's would run its code here), its terminal and
 * session, its working directory (a mount it pins), its fds, its log
 * handler. */
static void child_setup(const char *name, const int *keep, size_t n_keep) {
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  for (int s = 1; s < NSIG; s++)
    if (s != SIGKILL && s != SIGSTOP)
      signal(s, SIG_DFL);
  signal(SIGPIPE, SIG_IGN);
  setsid();
  prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  prctl(PR_SET_NAME, name, 0, 0, 0);
  hutch_set_log_handler(NULL, NULL);
  if (chdir("/") < 0)
    _exit(1);
  int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
  for (int i = 0; devnull >= 0 && i < 3; i++)
    dup2(devnull, i);
  close_all_but(keep, n_keep);
}

pid_t helper_start(const char *name, const int *keep, size_t n_keep, helper_main_fn main, void *data,
                   uint64_t *start_time, hutch_error_t *err) {
  *start_time = 0;
  int pipefd[2];
  if (pipe2(pipefd, O_CLOEXEC) < 0)
    return hutch_error_sys(err, "start the %s: pipe", name);
  _cleanup_close_ int rd = pipefd[0];
  _cleanup_close_ int wr = pipefd[1];
  pid_t mid = fork();
  if (mid < 0)
    return hutch_error_sys(err, "start the %s: fork", name);
  if (mid == 0) {
    pid_t pid = fork();
    if (pid != 0) {
      int32_t v = pid;
      _exit(pid < 0 || write_all(wr, &v, sizeof(v)) < 0);
    }
    child_setup(name, keep, n_keep);
    main(data);
  }
  close(wr);
  wr = -1;
  int status;
  while (waitpid(mid, &status, 0) < 0 && errno == EINTR)
    ;
  int32_t pid = 0;
  if (read_all(rd, &pid, sizeof(pid)) != (ssize_t)sizeof(pid) || pid <= 0)
    return hutch_error_set(err, ECHILD, "start the %s: its fork failed", name);
  *start_time = proc_stat_start_time(pid);
  if (*start_time == 0)
    return hutch_error_set(err, ESRCH, "start the %s: it ended at once", name);
  return pid;
}

void helper_stop(pid_t pid, uint64_t start_time) {
  if (pid <= 0 || start_time == 0 || pid == getpid())
    return;
  int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
  if (pidfd < 0)
    return;
  /* The pidfd pins the process: check it is still the helper recorded. */
  if (proc_stat_start_time(pid) == start_time && syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0) == 0) {
    struct pollfd p = {pidfd, POLLIN, 0};
    while (poll(&p, 1, 5000) < 0 && errno == EINTR)
      ;
  }
  close(pidfd);
}
