/* SPDX-License-Identifier: Apache-2.0 */
/* hutch_sandbox_signal_tree: signals a process of a sandbox and what
 * descends from it, from the host's /proc, with pidfds: no program of the
 * sandbox's (sh, kill) runs for it. */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "proc_tree.h"
#include "proc_stat.h"
#include "sandbox.h"
#include "state.h"
#include "util.h"

/* PPid and inner pid of a host pid; false when it is gone.  /proc/PID/status
 * is readable without ptrace access, which the host user lacks over the
 * sandbox's init (it is not dumpable). */
static bool read_status(pid_t pid, pid_t *ppid, pid_t *inner) {
  char p[64];
  snprintf(p, sizeof(p), "/proc/%d/status", (int)pid);
  _cleanup_free_ char *status = read_file_at(AT_FDCWD, p, 16384, NULL);
  return status != NULL && proc_status_parse(status, ppid, inner);
}

struct proc_entry *proc_tree_read(size_t *n) {
  *n = 0;
  _cleanup_dir_ DIR *d = opendir("/proc");
  if (d == NULL)
    return NULL;
  struct proc_entry *e = NULL;
  size_t cap = 0;
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    char *end;
    long pid = strtol(de->d_name, &end, 10);
    pid_t ppid, inner;
    if (*end != '\0' || pid <= 0 || !read_status((pid_t)pid, &ppid, &inner))
      continue;
    if (*n == cap) {
      cap = cap ? 2 * cap : 256;
      e = xrealloc(e, cap * sizeof(*e));
    }
    e[(*n)++] = (struct proc_entry){.pid = (pid_t)pid, .ppid = ppid, .inner = inner};
  }
  return e ? e : xcalloc(1, sizeof(*e));
}

int hutch_sandbox_signal_tree(struct hutch_sandbox *sb, pid_t leader, int sig, bool self, hutch_error_t *err) {
  if (proc_stat_start_time(sb->pid) != sb->start_time)
    return hutch_error_set(err, ESRCH, "signal in sandbox %s: its init (pid %d) is gone", sb->id, (int)sb->pid);
  size_t n;
  struct proc_entry *e = proc_tree_read(&n);
  if (e == NULL)
    return hutch_error_sys(err, "signal in sandbox %s: read /proc", sb->id);
  proc_tree_select(e, n, sb->pid, leader, self);
  for (size_t i = 0; i < n; i++) {
    if (!e[i].chosen)
      continue;
    /* The pidfd pins the process; it is checked once more to be the one
     * scanned (same parent, same inner pid), so a pid reused since the scan
     * is never hit. */
    int fd = (int)syscall(SYS_pidfd_open, e[i].pid, 0);
    pid_t ppid, inner;
    if (fd >= 0 && read_status(e[i].pid, &ppid, &inner) && ppid == e[i].ppid && inner == e[i].inner)
      syscall(SYS_pidfd_send_signal, fd, sig, NULL, 0);
    if (fd >= 0)
      close(fd);
  }
  free(e);
  return 0;
}

/* The parent hutch_die_with_parent() tied this process to, 0: none. */
static pid_t tied_parent;

int hutch_die_with_parent(pid_t parent, hutch_error_t *err) {
  /* 0: the parent is outside our pid namespace (docker exec); 1: init.
   * Neither ends before the process does: nothing to tie to. */
  if (parent <= 1)
    return 0;
  /* SIGTERM, not SIGKILL: the sandbox's state and mounts are cleaned up by
   * this process, which must live on long enough to do it. */
  if (prctl(PR_SET_PDEATHSIG, SIGTERM, 0, 0, 0) < 0)
    return hutch_error_sys(err, "set the parent-death signal");
  /* A parent that died before the prctl sent no signal: we are already
   * some other process's child. */
  if (getppid() != parent)
    return hutch_error_set(err, ESRCH, "the calling process (pid %d) has exited", (int)parent);
  tied_parent = parent;
  return 0;
}

bool sandbox_parent_died(void) {
  return tied_parent != 0 && getppid() != tied_parent;
}
