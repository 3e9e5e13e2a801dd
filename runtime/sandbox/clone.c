/* SPDX-License-Identifier: Apache-2.0 */
/* The clone of a sandbox's child (clone.h), apart from the start's steps
 * that use it. */
#include "config.h"

#include "clone.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util.h"

/* The user namespace is created first by the kernel (all of clone's
 * namespaces are owned by it), so every other namespace is ours to use
 * rootless, and also when hutch runs as real root.  The network namespace
 * is not among them: a helper of the child makes it while the child builds
 * the mounts (net_sandbox_start), and the child enters it before anything
 * of the sandbox runs. */
#define SANDBOX_NAMESPACES (CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP)

/* clone3 gives us a pidfd atomically and, with CLONE_INTO_CGROUP (5.7+),
 * starts the child in its cgroup, so not one instruction of it runs
 * unlimited; clone() is the fallback for kernels before 5.3 and for outer
 * seccomp profiles that refuse clone3 (ENOSYS).  *in_cgroup tells whether
 * the child is already in cgroup_fd's cgroup.  `sibling`: the child is made
 * the caller's parent's (CLONE_PARENT: the kernel then gives it that
 * parent's exit signal and refuses one of our own, and the pidfd is the
 * parent's to open). */
static pid_t clone_sandbox_at(int *pidfd, int cgroup_fd, bool *in_cgroup, bool sibling) {
  struct clone_args args = {
      .flags = SANDBOX_NAMESPACES | (sibling ? CLONE_PARENT : CLONE_PIDFD),
      .pidfd = sibling ? 0 : (uint64_t)(uintptr_t)pidfd,
      .exit_signal = sibling ? 0 : SIGCHLD,
  };
  pid_t pid;
  if (cgroup_fd >= 0) {
    args.flags |= CLONE_INTO_CGROUP;
    args.cgroup = (uint64_t)cgroup_fd;
    pid = (pid_t)syscall(SYS_clone3, &args, sizeof(args));
    if (pid >= 0) {
      *in_cgroup = true;
      return pid;
    }
    /* Kernels before 5.7 refuse the flag or the larger struct; the parent
     * then moves the child before it may proceed. */
    args.flags &= ~CLONE_INTO_CGROUP;
    args.cgroup = 0;
  }
  *in_cgroup = false;
  pid = (pid_t)syscall(SYS_clone3, &args, sizeof(args));
  if (pid >= 0 || (errno != ENOSYS && errno != E2BIG))
    return pid;
  *pidfd = -1;
  return (pid_t)syscall(SYS_clone, SANDBOX_NAMESPACES | (sibling ? CLONE_PARENT : SIGCHLD), NULL, NULL, NULL, NULL);
}

/* Whether other threads run in this process, in one stat: procfs counts a
 * process's threads in the link count of its task directory (2 + threads,
 * proc_task_getattr).  Unknown counts as "yes", the safe way. */
static bool caller_threaded(void) {
  struct stat st;
  return stat("/proc/self/task", &st) < 0 || st.st_nlink != 3;
}

/* The sandbox's child is a raw clone, so it runs none of the fork handlers
 * that leave malloc (and stdio, and other libraries' locks) usable in a
 * child; its set-up before exec (libcap, libseccomp, error messages) does
 * allocate.  In a single-threaded caller (the hutch command) nothing can
 * hold such a lock at the clone.  In a caller with other threads (the
 * Python package, any embedder) one may, and the child would wait for it
 * forever: there, the clone is made by a helper fork()ed first (glibc takes
 * malloc's locks around fork, and the helper has one thread), as the
 * caller's own child (CLONE_PARENT), so the caller waits for it, gets its
 * exit and dies-with-parent relations as before.  The helper sends the pid
 * (or the errno) and exits; the caller opens the pidfd (its own unreaped
 * child: the pid cannot have been reused).  The cost: a fork of the caller
 * (its page tables copied, then unmapped by the helper's exit). */
static pid_t clone_sandbox_helped(int *pidfd, int cgroup_fd, bool *in_cgroup, pid_t *helper_out) {
  struct {
    pid_t pid;
    int errnum;
    bool in_cgroup;
    bool pidfd_wanted;
  } msg = {-1, 0, false, false};
  int p[2];
  if (pipe2(p, O_CLOEXEC) < 0)
    return -1;
  pid_t helper = fork();
  if (helper < 0) {
    int e = errno;
    close(p[0]);
    close(p[1]);
    errno = e;
    return -1;
  }
  if (helper == 0) {
    close(p[0]);
    int unused = -2;
    msg.pid = clone_sandbox_at(&unused, cgroup_fd, &msg.in_cgroup, true);
    if (msg.pid == 0) {
      close(p[1]);
      *in_cgroup = msg.in_cgroup;
      return 0; /* the sandbox's child, on the caller's way */
    }
    msg.errnum = errno;
    msg.pidfd_wanted = unused != -1; /* clone3: a pidfd is to be had */
    (void)!write(p[1], &msg, sizeof(msg));
    _exit(0);
  }
  close(p[1]);
  ssize_t n;
  while ((n = read(p[0], &msg, sizeof(msg))) < 0 && errno == EINTR)
    ;
  close(p[0]);
  if (n != (ssize_t)sizeof(msg)) {
    while (waitpid(helper, NULL, 0) < 0 && errno == EINTR)
      ;
    errno = EPROTO;
    return -1;
  }
  /* Reaped at the start's end (start_free): its exit, the unmapping of a
   * copy of the caller's memory, runs meanwhile. */
  *helper_out = helper;
  if (msg.pid < 0) {
    errno = msg.errnum;
    return -1;
  }
  *in_cgroup = msg.in_cgroup;
  *pidfd = msg.pidfd_wanted ? (int)syscall(SYS_pidfd_open, msg.pid, 0) : -1;
  return msg.pid;
}

/* RLIMIT_NPROC counts every process of this user, every sandbox's init
 * among them, and is checked at this clone; the new user namespace also
 * keeps the limit in force now as the cap on all its processes.  With the
 * soft limit of a login session (often a few thousand), that caps the
 * number of live sandboxes well below what root allowed: the clone runs at
 * the hard limit, and the caller's own soft limit is put back after it,
 * in the parent and in the new child alike (clone returns in both).
 * `hutch doctor` names the hard limit (capacity.nproc). */
pid_t clone_sandbox(int *pidfd, int cgroup_fd, bool *in_cgroup, pid_t *helper) {
  struct rlimit old;
  bool raised = nproc_raise(&old);
  pid_t pid = caller_threaded() ? clone_sandbox_helped(pidfd, cgroup_fd, in_cgroup, helper)
                                : clone_sandbox_at(pidfd, cgroup_fd, in_cgroup, false);
  nproc_restore(raised, &old);
  return pid;
}
