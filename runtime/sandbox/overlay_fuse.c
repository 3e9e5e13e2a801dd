/* SPDX-License-Identifier: Apache-2.0 */
/* --overlay fuse: fuse-overlayfs as the sandbox's root (see overlay_fuse.h).
 *
 * Where the daemon lives, and why.  fuse-overlayfs must act as root of the
 * sandbox's user namespace: it creates files in the upper layer owned by
 * whichever sandbox id asked, which needs CAP_CHOWN over those ids, and the
 * kernel hands it requests with ids as that namespace sees them.  So it
 * joins the sandbox's user namespace (setns).  It must also be out of the
 * payload's reach: a process in the sandbox's pid namespace (or one below
 * it) shows up in the sandbox's /proc and can be signalled by any process
 * of the same uid there, and sandbox processes all run as uid 0 of that
 * namespace.  So it is not forked by the setup child (everything that child
 * forks is in the sandbox's pid namespace) but by hutch on the host side,
 * and it never joins the pid namespace nor the mount namespace: it stays in
 * hutch's, where the layers' paths (the image in the store, upper/ and
 * work/ in the state directory) mean what they say.  From the sandbox it
 * is reachable only through the FUSE requests its filesystem answers.
 *
 * It does not mount anything itself: the setup child mounts the FUSE
 * filesystem on the new root with the connection's fd (fd=N) and passes
 * that fd over; fuse-overlayfs serves it given "/dev/fd/3" as its mount
 * point (libfuse's convention for an already mounted connection).  Only
 * the daemon keeps the fd: when it dies, the connection aborts and the
 * sandbox's file accesses fail (ENOTCONN) instead of hanging; when the
 * sandbox's mount namespace goes, the kernel aborts the connection and the
 * daemon exits by itself.  Teardown still waits for that and kills it after
 * a grace period (overlay_fuse_stop). */
#include "config.h"

#include "overlay_fuse.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proc_stat.h"
#include "sync.h"
#include "util.h"

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

static const char fuse_hint[] = "--overlay fuse needs fuse-overlayfs (apt-get install fuse-overlayfs) and /dev/fuse; "
                                "run `hutch doctor`";

char *overlay_fuse_program(char *why, size_t why_size) {
  const char *env = getenv("HUTCH_FUSE_OVERLAYFS");
  const char *name = env && env[0] ? env : OVERLAY_FUSE_PROGRAM;
  if (strchr(name, '/') != NULL) {
    if (access(name, X_OK) == 0)
      return xstrdup(name);
    _cleanup_free_ char *text = hutch_errno_format(errno, "%s", name);
    snprintf(why, why_size, "%s", text);
    return NULL;
  }
  const char *path = getenv("PATH");
  if (path == NULL || path[0] == '\0')
    path = "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin";
  char *full = find_in_path(name, path);
  if (full != NULL)
    return full;
  snprintf(why, why_size, "%s is not in PATH (%s)", name, path);
  return NULL;
}

/* fuse-overlayfs splits its options at ',' and lower layers at ':'. */
static bool plain_path(const char *p) {
  return strpbrk(p, ",:") == NULL;
}

/* In the forked daemon: never returns. */
__attribute__((noreturn)) static void daemon_exec(const char *program, int userns_fd, int fuse_fd, int log_dirfd,
                                                  const char *layers, int status_fd) {
  int e = 0;
  /* Its own session: the terminal's ^C is for the payload, which hutch
   * forwards; the daemon must outlive it until the sandbox is gone. */
  setsid();
  sigset_t all;
  sigemptyset(&all);
  sigprocmask(SIG_SETMASK, &all, NULL);
  for (int sig = 1; sig < NSIG; sig++)
    signal(sig, SIG_DFL);
  if (setns(userns_fd, CLONE_NEWUSER) < 0) {
    e = errno;
    goto fail;
  }
  /* Everything above 10 first, so that the dup2s below cannot clobber. */
  int fuse = fcntl(fuse_fd, F_DUPFD_CLOEXEC, 10);
  int null = open("/dev/null", O_RDWR | O_CLOEXEC);
  int log = openat(log_dirfd, OVERLAY_FUSE_LOG, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fuse < 0 || null < 0 || log < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 || dup2(log, 2) < 0 ||
      dup2(fuse, 3) < 0) {
    e = errno;
    goto fail;
  }
  /* Nothing else of hutch's (the caller's pipes, the state directory)
   * reaches the daemon; the status pipe closes on exec. */
  if (syscall(SYS_close_range, 4, ~0U, CLOSE_RANGE_CLOEXEC) < 0) {
    e = errno;
    goto fail;
  }
  /* Nothing of the caller's environment (an API key of `hutch run`) nor
   * its working directory: the daemon needs neither. */
  if (chdir("/") < 0) {
    e = errno;
    goto fail;
  }
  const char *argv[] = {program, "-f", "-o", layers, "/dev/fd/3", NULL};
  const char *envp[] = {"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C.UTF-8", NULL};
  execve(program, (char *const *)argv, (char *const *)envp);
  e = errno;
fail:
  (void)!write(status_fd, &e, sizeof(e));
  _exit(127);
}

int overlay_fuse_start(pid_t sandbox_pid, int fuse_fd, const char *lower, const char *upper, const char *work,
                       int log_dirfd, struct overlay_fuse_daemon *out, hutch_error_t *err) {
  *out = (struct overlay_fuse_daemon){0};
  char why[512] = "";
  _cleanup_free_ char *program = overlay_fuse_program(why, sizeof(why));
  if (program == NULL) {
    hutch_error_set(err, ENOENT, "--overlay fuse: %s", why);
    return hutch_error_hint(err, "%s", fuse_hint);
  }
  /* Absolute: the daemon runs from "/", and --state-dir may be relative. */
  _cleanup_free_ char *l = realpath(lower, NULL);
  _cleanup_free_ char *u = realpath(upper, NULL);
  _cleanup_free_ char *w = realpath(work, NULL);
  if (l == NULL || u == NULL || w == NULL)
    return hutch_error_sys(err, "--overlay fuse: resolve the layers %s, %s, %s", lower, upper, work);
  if (!plain_path(l) || !plain_path(u) || !plain_path(w))
    return hutch_error_set(err, EINVAL, "--overlay fuse: a layer path holds ',' or ':' (%s, %s, %s)", l, u, w);
  _cleanup_free_ char *layers = xasprintf("lowerdir=%s,upperdir=%s,workdir=%s", l, u, w);
  char ns[64];
  snprintf(ns, sizeof(ns), "/proc/%d/ns/user", (int)sandbox_pid);
  _cleanup_close_ int userns_fd = open(ns, O_RDONLY | O_CLOEXEC);
  if (userns_fd < 0)
    return hutch_error_sys(err, "--overlay fuse: open the sandbox's user namespace (%s)", ns);
  int status[2];
  if (pipe2(status, O_CLOEXEC) < 0)
    return hutch_error_sys(err, "--overlay fuse: pipe");
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) {
    close(status[0]);
    close(status[1]);
    return hutch_error_sys(err, "--overlay fuse: fork the fuse-overlayfs daemon");
  }
  if (pid == 0) {
    close(status[0]);
    daemon_exec(program, userns_fd, fuse_fd, log_dirfd, layers, status[1]);
  }
  close(status[1]);
  int e = 0;
  ssize_t n;
  while ((n = read(status[0], &e, sizeof(e))) < 0 && errno == EINTR)
    ;
  close(status[0]);
  if (n > 0) {
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
      ;
    errno = e;
    hutch_error_sys(err, "--overlay fuse: start %s in the sandbox's user namespace", program);
    return hutch_error_hint(err, "%s", fuse_hint);
  }
  out->pid = pid;
  out->start_time = proc_stat_start_time(pid);
  return 0;
}

void overlay_fuse_stop(const struct overlay_fuse_daemon *d, double grace) {
  if (d->pid <= 0)
    return;
  /* Ours and already exited: reaped, nothing to signal.  Anyone else's
   * child: ECHILD, and its parent reaps it. */
  if (waitpid(d->pid, NULL, WNOHANG) == d->pid)
    return;
  int pidfd = (int)syscall(SYS_pidfd_open, d->pid, 0);
  if (pidfd < 0) {
    waitpid(d->pid, NULL, WNOHANG);
    return;
  }
  /* The pidfd pins the process: checked after opening, a reused pid can
   * no longer be the one signalled. */
  if (d->start_time != 0 && proc_stat_start_time(d->pid) != d->start_time) {
    close(pidfd);
    waitpid(d->pid, NULL, WNOHANG); /* ours, exited meanwhile */
    return;
  }
  struct pollfd pfd = {pidfd, POLLIN, 0};
  int r;
  while ((r = poll(&pfd, 1, (int)(grace * 1000))) < 0 && errno == EINTR)
    ;
  if (r == 0) {
    syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
    while (poll(&pfd, 1, 5000) < 0 && errno == EINTR)
      ;
  }
  close(pidfd);
  /* Ours when this hutch started it; ECHILD otherwise, and its parent reaps. */
  while (waitpid(d->pid, NULL, 0) < 0 && errno == EINTR)
    ;
}

int overlay_fuse_host_start(int sync_fd, pid_t sandbox_pid, const char *lower, const char *upper, const char *work,
                            int log_dirfd, struct overlay_fuse_daemon *out, hutch_error_t *err) {
  uint32_t type;
  int fds[SYNC_MAX_FDS];
  size_t nfds = 0;
  int r = sync_recv(sync_fd, &type, NULL, 0, NULL, fds, &nfds, err);
  if (r <= 0 || type != SYNC_FUSE_FD || nfds != 1) {
    for (size_t i = 0; i < nfds; i++)
      close(fds[i]);
    if (r < 0)
      return -1; /* the child's own error, already naming its step */
    return hutch_error_set(err, EPROTO, "sandbox setup: expected the FUSE connection for --overlay fuse (got %s)",
                           r == 0 ? "EOF" : "another message");
  }
  r = overlay_fuse_start(sandbox_pid, fds[0], lower, upper, work, log_dirfd, out, err);
  close(fds[0]);
  if (r < 0)
    return -1;
  return sync_send(sync_fd, SYNC_GO, NULL, 0, NULL, 0, err);
}
