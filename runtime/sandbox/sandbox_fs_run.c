/* SPDX-License-Identifier: Apache-2.0 */
/* sfs_run: an operation on a sandbox's files runs in hutch itself, or, for
 * a FUSE root, in a helper inside the sandbox's user namespace. */
#include "config.h"

#include "sandbox_fs.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proc_stat.h"
#include "sandbox.h"
#include "state.h"
#include "util.h"

#define FUSE_SUPER_MAGIC 0x65735546

static char *init_file(pid_t pid, const char *file) {
  _cleanup_free_ char *path = xasprintf("/proc/%d/%s", (int)pid, file);
  return read_file_at(AT_FDCWD, path, 4096, NULL);
}

static int open_sandbox(struct hutch_sandbox *sb, struct sfs_call *c, hutch_error_t *err) {
  c->root = sandbox_root_fd(sb, err);
  if (c->root < 0)
    return -1;
  /* Read from the init's maps and ids, as the host sees them: init runs
   * as the sandbox's user (hutch_sandbox_extras.user), and the sandbox
   * cannot change its ids.  The start time proves the pid is still that
   * init. */
  _cleanup_free_ char *uid_map = init_file(sb->pid, "uid_map");
  _cleanup_free_ char *gid_map = init_file(sb->pid, "gid_map");
  _cleanup_free_ char *status = init_file(sb->pid, "status");
  int64_t uid = status ? sfs_status_id(status, "Uid") : -1, gid = status ? sfs_status_id(status, "Gid") : -1;
  int64_t in_uid = uid_map && uid >= 0 ? sfs_map_inside_of(uid_map, (uint32_t)uid) : -1;
  int64_t in_gid = gid_map && gid >= 0 ? sfs_map_inside_of(gid_map, (uint32_t)gid) : -1;
  if (in_uid < 0 || in_gid < 0 || proc_stat_start_time(sb->pid) != sb->start_time)
    return hutch_error_set(err, ESRCH, "sandbox %s: the ids of its init (pid %d) cannot be read", sb->id, (int)sb->pid);
  c->owner = (struct sfs_owner){
      .uid = (uid_t)uid,
      .gid = (gid_t)gid,
      .in_uid = (uid_t)in_uid,
      .in_gid = (gid_t)in_gid,
      .chown = uid != geteuid() || gid != getegid(),
      .other = in_uid != 0 || in_gid != 0,
  };
  /* A sandbox of another user: no symlink is followed.  hutch reads and
   * writes there with the access of the sandbox's root (the user's private
   * files, the image's), so a link the user planted would lead hutch to a
   * file the user cannot reach itself (a read-write bind it may only read,
   * a root-only file) and make the user its reader or writer. */
  c->resolve = sb->fs_no_symlinks || c->owner.other ? SFS_RESOLVE_STRICT : SFS_RESOLVE_SANDBOX;
  return 0;
}

/* What the helper keeps in the sandbox's user namespace for a sandbox of
 * another user: root's access to that user's files, and giving them away. */
#define HELPER_USER_CAPS                                                                                               \
  ((1u << CAP_CHOWN) | (1u << CAP_DAC_OVERRIDE) | (1u << CAP_DAC_READ_SEARCH) | (1u << CAP_FOWNER))

struct reply {
  int32_t rc, errnum;
  uint32_t msg_len, hint_len;
  uint64_t out_len;
  int64_t value;
  struct hutch_copy_report rep; /* rep.stopped points into the same program, as forked */
};

static __attribute__((noreturn)) void helper(pid_t parent, int userns, int wfd, sfs_op op, struct sfs_call *c) {
  hutch_error_t err = NULL;
  struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
  struct __user_cap_data_struct keep[2];
  memset(keep, 0, sizeof(keep));
  /* Joining gives every capability in the namespace: dropped at once, so
   * the helper can do no more than the sandbox's root, or for a sandbox
   * of another user, than hutch as root does for it (sandbox_fs.h). */
  if (c->owner.other)
    keep[0].effective = keep[0].permitted = HELPER_USER_CAPS;
  c->owner.inside = true;
  int rc;
  if (setns(userns, CLONE_NEWUSER) < 0)
    rc = hutch_error_sys(&err, "join the sandbox's user namespace");
  else if (syscall(SYS_capset, &h, keep) < 0)
    rc = hutch_error_sys(&err, "drop capabilities in the sandbox's user namespace");
  /* A copy for a caller that was killed is done for nobody: it stops with
   * the caller (set once in the namespace, whose entry clears it). */
  else if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
    _exit(1);
  else
    rc = op(c, &err);
  struct reply r = {.rc = rc < 0 ? -1 : rc, .value = c->value, .rep = c->rep};
  if (err) {
    r.errnum = err->errnum;
    r.msg_len = (uint32_t)strlen(err->msg);
    r.hint_len = err->hint ? (uint32_t)strlen(err->hint) : 0;
  }
  r.out_len = rc >= 0 && c->out ? c->out_len : 0;
  if (write_all(wfd, &r, sizeof(r)) < 0 || (err && write_all(wfd, err->msg, r.msg_len) < 0) ||
      (err && r.hint_len && write_all(wfd, err->hint, r.hint_len) < 0) ||
      (r.out_len && write_all(wfd, c->out, r.out_len) < 0))
    _exit(1);
  _exit(0);
}

static int read_exact(int fd, void *buf, size_t len) {
  return read_all(fd, buf, len) == (ssize_t)len ? 0 : -1;
}

static int run_in_userns(int userns, sfs_op op, struct sfs_call *c, hutch_error_t *err) {
  int p[2];
  if (pipe2(p, O_CLOEXEC) < 0)
    return hutch_error_sys(err, "a pipe to the file helper");
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    close(p[0]);
    close(p[1]);
    return hutch_error_sys(err, "start the file helper");
  }
  if (pid == 0) {
    close(p[0]);
    helper(parent, userns, p[1], op, c);
  }
  close(p[1]);
  _cleanup_close_ int rfd = p[0];
  struct reply r;
  int rc = -1;
  if (read_exact(rfd, &r, sizeof(r)) < 0) {
    hutch_error_sys(err, "the file helper gave no answer");
  } else {
    _cleanup_free_ char *msg = xmalloc((size_t)r.msg_len + 1);
    _cleanup_free_ char *hint = xmalloc((size_t)r.hint_len + 1);
    char *out = r.out_len ? xmalloc(r.out_len + 1) : NULL;
    if (read_exact(rfd, msg, r.msg_len) < 0 || read_exact(rfd, hint, r.hint_len) < 0 ||
        (out && read_exact(rfd, out, r.out_len) < 0)) {
      free(out);
      hutch_error_sys(err, "the file helper's answer was cut short");
    } else {
      msg[r.msg_len] = hint[r.hint_len] = '\0';
      if (out)
        out[r.out_len] = '\0';
      c->out = out;
      c->out_len = r.out_len;
      c->value = r.value;
      c->rep = r.rep;
      rc = r.rc;
      if (rc < 0) {
        hutch_error_set(err, r.errnum, "%s", msg);
        if (r.hint_len)
          hutch_error_hint(err, "%s", hint);
      }
    }
  }
  while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
    ;
  return rc;
}

int sfs_run(struct hutch_sandbox *sb, sfs_op op, struct sfs_call *c, hutch_error_t *err) {
  if (open_sandbox(sb, c, err) < 0)
    return -1;
  struct statfs sf;
  if (fstatfs(c->root, &sf) < 0)
    return hutch_error_sys(err, "statfs the root of sandbox %s", sb->id);
  /* Root gives any id a file; an unprivileged hutch gives the user's
   * (its subordinate range) only from inside the sandbox's namespace. */
  bool other_ids = c->owner.other && c->owner.chown && geteuid() != 0;
  if (sf.f_type != FUSE_SUPER_MAGIC && !other_ids)
    return op(c, err);
  return run_in_userns(sb->userns_fd, op, c, err);
}
