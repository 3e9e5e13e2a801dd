/* SPDX-License-Identifier: Apache-2.0 */
/* What a long-lived sandbox's init holds for hutch (init.h): its root and
 * user namespace, opened on request, and the sandbox's tmpfs and network
 * namespace, held from the start.  A running init hands them over on the
 * control socket (SYNC_ROOT_FD, to a caller that proves it is hutch).  The
 * held ones hutch takes itself with pidfd_getfd, at the numbers init
 * reported at the start (state.json): always from a frozen init (paused),
 * which cannot answer, and first from a running one, whose answer costs a
 * round trip and a root opened.  That needs the ptrace access the host
 * user has to the tasks of a user namespace it owns, the access a ptrace
 * pause rests on too; where the host forbids it, a running init is asked.
 * Nothing in the sandbox reaches them: init is not dumpable, and its
 * processes hold no capability (/proc/1/fd stays closed to them). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <linux/nsfs.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sandbox.h"
#include "sandbox_fds.h"
#include "state.h"
#include "util.h"

#ifndef SYS_pidfd_getfd
#define SYS_pidfd_getfd 438
#endif

int sandbox_ask_init_fds(struct hutch_sandbox *sb, int fds[SANDBOX_INIT_FDS], hutch_error_t *err) {
  for (int i = 0; i < SANDBOX_INIT_FDS; i++)
    fds[i] = -1;
  /* The same proof as for a command (init.c: caller_is_hutch). */
  int pidfd = sandbox_init_pidfd(sb, err);
  if (pidfd < 0)
    return -1;
  _cleanup_close_ int fd = sandbox_connect_control(sb, err);
  if (fd < 0 || sync_send(fd, SYNC_ROOT_FD, NULL, 0, &pidfd, 1, err) < 0 ||
      sync_expect_fds(fd, SYNC_ROOT_FD, NULL, 0, NULL, fds, SANDBOX_INIT_FDS, "the sandbox's root", err) < 0)
    return -1;
  if (fds[0] >= 0 && fds[1] >= 0)
    return 0;
  for (int i = 0; i < SANDBOX_INIT_FDS; i++)
    if (fds[i] >= 0)
      close(fds[i]);
  return hutch_error_set(err, EPROTO, "its init sent no root");
}

static const char *held_name(enum sandbox_held which) {
  return which == SANDBOX_HELD_SCRATCH ? "tmpfs" : "network namespace";
}

/* That fd is what its name says: init's fds are taken by number, and a
 * number must not hand hutch anything else. */
static int check_held(int fd, enum sandbox_held which, hutch_error_t *err) {
  struct statfs fs;
  struct stat st;
  if (fstatfs(fd, &fs) < 0 || fstat(fd, &st) < 0)
    return hutch_error_sys(err, "the sandbox's %s", held_name(which));
  bool ok = which == SANDBOX_HELD_SCRATCH ? fs.f_type == TMPFS_MAGIC && S_ISDIR(st.st_mode)
                                          : fs.f_type == NSFS_MAGIC && ioctl(fd, NS_GET_NSTYPE) == CLONE_NEWNET;
  return ok ? 0 : hutch_error_set(err, EPROTO, "what its init holds as its %s is not one", held_name(which));
}

static int getfd_by_number(struct hutch_sandbox *sb, enum sandbox_held which, hutch_error_t *err) {
  struct sandbox_state st;
  if (state_read(sb->state_fd, sb->id, &st, err) < 0)
    return -1;
  int number = which == SANDBOX_HELD_SCRATCH ? st.live.held.scratch_fd : st.live.held.netns_fd;
  state_clear(&st);
  if (number < 0) {
    hutch_error_set(err, EOPNOTSUPP, "its init holds no %s for hutch: it was made by an older hutch", held_name(which));
    return hutch_error_hint(err, "resume it (`hutch resume %s`), or recreate it", sb->id);
  }
  int pidfd = sandbox_init_pidfd(sb, err);
  if (pidfd < 0)
    return -1;
  int fd = (int)syscall(SYS_pidfd_getfd, pidfd, number, 0);
  if (fd < 0) {
    hutch_error_sys(err, "take the %s its paused init holds (pidfd_getfd)", held_name(which));
    return errno == EPERM ? hutch_error_hint(err, "this host forbids tracing the sandbox's init (Yama ptrace_scope "
                                                  "3, or a seccomp filter around hutch); resume it first")
                          : -1;
  }
  return fd;
}

int sandbox_held_fd(struct hutch_sandbox *sb, enum sandbox_held which, hutch_error_t *err) {
  int fd;
  bool paused = sandbox_paused(sb, NULL);
  /* Taken by number first, running or not: asking a running init costs a
   * round trip on its socket, and the root it opens for each request (2.5
   * ms of a fork's 14 on a machine of the project's kind).  Asked where the
   * host forbids the taking (Yama, a filter around hutch, a kernel before
   * 5.6), which a running init's answer does not need. */
  hutch_error_t first = NULL;
  fd = getfd_by_number(sb, which, paused ? err : &first);
  hutch_error_free(&first);
  if (fd < 0 && !paused) {
    int fds[SANDBOX_INIT_FDS];
    if (sandbox_ask_init_fds(sb, fds, err) < 0)
      return hutch_error_wrap(err, "sandbox %s", sb->id);
    fd = fds[2 + which];
    for (int i = 0; i < SANDBOX_INIT_FDS; i++)
      if (i != 2 + (int)which && fds[i] >= 0)
        close(fds[i]);
    if (fd < 0) {
      hutch_error_set(err, EOPNOTSUPP, "its init holds no %s for hutch: it was made by an older hutch",
                      held_name(which));
      hutch_error_hint(err, "recreate it");
    }
  }
  if (fd >= 0 && check_held(fd, which, err) < 0) {
    close(fd);
    fd = -1;
  }
  return fd < 0 ? hutch_error_wrap(err, "sandbox %s", sb->id) : fd;
}

int sandbox_upper_fd(struct hutch_sandbox *sb, hutch_error_t *err) {
  /* On the host's disk (--keep, --overlay fuse, a kernel without user
   * xattrs on tmpfs): the directory hutch made. */
  char path[64];
  snprintf(path, sizeof(path), "%s/upper", sb->id);
  int fd = openat(sb->state_fd, path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd >= 0 || errno != ENOENT)
    return fd >= 0 ? fd : hutch_error_sys(err, "sandbox %s: open its layer", sb->id);
  _cleanup_close_ int scratch = sandbox_held_fd(sb, SANDBOX_HELD_SCRATCH, err);
  if (scratch < 0)
    return -1;
  fd = openat(scratch, "upper", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0)
    return hutch_error_sys(err, "sandbox %s: open its layer on its tmpfs", sb->id);
  return fd;
}
