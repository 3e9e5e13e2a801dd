/* SPDX-License-Identifier: Apache-2.0 */
/* The doctor's `pause` check: whether `hutch pause` can hold a sandbox
 * without a cgroup, that is whether this user may PTRACE_SEIZE a process
 * of a user namespace it owns, as the pauser does (pause_ptrace.c).  Yama
 * (ptrace_scope 1 and 2 allow it: the user holds CAP_SYS_PTRACE in that
 * namespace; 3 does not) and an outer seccomp filter decide. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

#include "doctor.h"
#include "util.h"

/* The child: a user namespace of its own, then asleep until killed. */
__attribute__((noreturn)) static void sleeper(int ready) {
  char ok = unshare(CLONE_NEWUSER) == 0 ? 'y' : 'n';
  if (write(ready, &ok, 1) != 1 || ok != 'y')
    _exit(1);
  for (;;)
    pause();
}

void doctor_check_pause(struct ladder *l) {
  struct hutch_check *c = report_add(l->r, "pause", "hutch pause without a cgroup (ptrace)", false);
  if (!l->userns_ok) {
    c->status = HUTCH_CHECK_SKIP;
    report_detail(c, "needs a user namespace");
    return;
  }
  int p[2];
  if (pipe2(p, O_CLOEXEC) < 0) {
    c->status = HUTCH_CHECK_WARN;
    report_detail_errno(c, errno, "pipe");
    return;
  }
  pid_t pid = fork();
  if (pid == 0) {
    close(p[0]);
    sleeper(p[1]);
  }
  close(p[1]);
  char ok = 'n';
  bool ready = pid > 0 && read(p[0], &ok, 1) == 1 && ok == 'y';
  close(p[0]);
  int saved = 0;
  if (ready && ptrace(PTRACE_SEIZE, pid, 0, PTRACE_O_EXITKILL) < 0)
    saved = errno;
  if (pid > 0) {
    kill(pid, SIGKILL);
    while (waitpid(pid, NULL, __WALL) < 0 && errno == EINTR)
      ;
  }
  if (!ready) {
    c->status = HUTCH_CHECK_WARN;
    report_detail(c, "a user namespace for the probe could not be made");
    return;
  }
  if (saved == 0) {
    report_detail(c, "a process of a user namespace of this user can be held in a ptrace stop: without a cgroup v2, "
                     "`hutch pause` uses ptrace");
    return;
  }
  c->status = HUTCH_CHECK_WARN;
  _cleanup_free_ char *scope = read_file_at(AT_FDCWD, "/proc/sys/kernel/yama/ptrace_scope", 16, NULL);
  char yama[48] = "";
  if (scope)
    snprintf(yama, sizeof(yama), " (Yama ptrace_scope %.8s)", strtok(scope, "\n") ? scope : "?");
  report_detail_errno(c, saved, "PTRACE_SEIZE of a process in a user namespace of this user%s", yama);
  report_fix(c, xstrdup("`hutch pause` needs a cgroup v2 (its freezer) here, or ptrace allowed: Yama ptrace_scope "
                        "0 to 2 (3 cannot be lowered without a reboot), and no seccomp filter around hutch that "
                        "refuses ptrace"));
}
