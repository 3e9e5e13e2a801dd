/* `hutch doctor`: the probe ladder.  Each namespace check is the real
 * operation a sandbox start makes, attempted in a forked child that then
 * exits, so a refusal is seen where it happens (the unshare, the id map
 * write, the mount inside) and named with its errno and its fix. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "mounts.h"
#include "netlink.h"
#include "paths.h"
#include "probe.h"
#include "state.h"
#include "util.h"

/* A probe that hangs (a helper waiting on a terminal, a wedged FUSE
 * mount) must not hang the doctor. */
#define PROBE_TIMEOUT_SECONDS 20

int probe_fail(struct probe_result *res, const char *fmt, ...) {
  res->errnum = errno;
  res->stage = PROBE_STAGE_RUN;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(res->what, sizeof(res->what), fmt, ap);
  va_end(ap);
  return -1;
}

int probe_fail_error(struct probe_result *res, hutch_error_t err) {
  res->stage = PROBE_STAGE_RUN;
  res->errnum = err ? err->errnum : EIO;
  snprintf(res->what, sizeof(res->what), "%s", err && err->msg ? err->msg : "failed");
  return -1;
}

static void send_result(int fd, const struct probe_result *res) {
  (void)!write(fd, res, sizeof(*res));
}

int probe_run(unsigned long flags, const struct idmap_set *maps, probe_fn fn, void *data, struct probe_result *res) {
  memset(res, 0, sizeof(*res));
  int sp[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0) {
    res->stage = PROBE_STAGE_CRASH;
    res->errnum = errno;
    snprintf(res->what, sizeof(res->what), "socketpair");
    return -1;
  }
  bool userns = (flags & CLONE_NEWUSER) != 0;
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) {
    res->stage = PROBE_STAGE_CRASH;
    res->errnum = errno;
    snprintf(res->what, sizeof(res->what), "fork");
    close(sp[0]);
    close(sp[1]);
    return -1;
  }
  if (pid == 0) {
    close(sp[0]);
    alarm(PROBE_TIMEOUT_SECONDS);
    prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    struct probe_result r = {0};
    if (flags != 0 && unshare((int)flags) < 0) {
      r.stage = PROBE_STAGE_UNSHARE;
      r.errnum = errno;
      static const struct {
        unsigned long flag;
        const char *name;
      } names[] = {{CLONE_NEWUSER, "CLONE_NEWUSER"}, {CLONE_NEWNS, "CLONE_NEWNS"},   {CLONE_NEWPID, "CLONE_NEWPID"},
                   {CLONE_NEWNET, "CLONE_NEWNET"},   {CLONE_NEWIPC, "CLONE_NEWIPC"}, {CLONE_NEWUTS, "CLONE_NEWUTS"}};
      size_t off = (size_t)snprintf(r.what, sizeof(r.what), "unshare(");
      for (size_t i = 0; i < ARRAY_SIZE(names); i++)
        if ((flags & names[i].flag) && off < sizeof(r.what))
          off += (size_t)snprintf(r.what + off, sizeof(r.what) - off, "%s%s", off > 8 ? "|" : "", names[i].name);
      if (off < sizeof(r.what))
        snprintf(r.what + off, sizeof(r.what) - off, ")");
      send_result(sp[1], &r);
      _exit(1);
    }
    if (userns) {
      char c = 'R';
      if (write(sp[1], &c, 1) != 1 || read(sp[1], &c, 1) != 1 || c != 'G')
        _exit(1);
      if (maps->kind != IDMAP_SINGLE)
        setgroups(0, NULL);
    }
    if (fn(data, &r) < 0) {
      if (r.stage == PROBE_DONE)
        r.stage = PROBE_STAGE_RUN;
    } else {
      r = (struct probe_result){0};
    }
    send_result(sp[1], &r);
    _exit(0);
  }
  close(sp[1]);
  _cleanup_close_ int fd = sp[0];
  bool have = false;
  char buf[sizeof(*res)];
  if (userns) {
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n == (ssize_t)sizeof(*res)) {
      memcpy(res, buf, sizeof(*res));
      have = true;
    } else if (n == 1) {
      hutch_error_t err = NULL;
      if (userns_write_maps(pid, maps, &err) < 0) {
        res->stage = PROBE_STAGE_MAPS;
        res->errnum = err ? err->errnum : EPERM;
        snprintf(res->what, sizeof(res->what), "%s", err && err->msg ? err->msg : "write the id maps");
        hutch_error_free(&err);
        have = true;
        kill(pid, SIGKILL);
      } else {
        (void)!write(fd, "G", 1);
      }
    }
  }
  if (!have) {
    ssize_t n;
    while ((n = read(fd, res, sizeof(*res))) < 0 && errno == EINTR)
      ;
    have = n == (ssize_t)sizeof(*res);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
    ;
  if (!have) {
    memset(res, 0, sizeof(*res));
    res->stage = PROBE_STAGE_CRASH;
    if (WIFSIGNALED(status)) {
      res->signal = WTERMSIG(status);
      snprintf(res->what, sizeof(res->what), "the probe was killed by signal %d (%s)", res->signal,
               strsignal(res->signal));
    } else {
      snprintf(res->what, sizeof(res->what), "the probe exited with status %d without a result",
               WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    }
  }
  return res->stage == PROBE_DONE ? 0 : -1;
}

/* ---- the report ---- */

struct report {
  struct hutch_check *checks;
  size_t n, cap;
};

static struct hutch_check *add_check(struct report *r, const char *id, const char *title, bool required) {
  if (r->n == r->cap) {
    r->cap = r->cap ? r->cap * 2 : 16;
    r->checks = xrealloc(r->checks, r->cap * sizeof(*r->checks));
  }
  struct hutch_check *c = &r->checks[r->n++];
  *c = (struct hutch_check){.id = id, .title = title, .required = required, .status = HUTCH_CHECK_OK};
  return c;
}

static void set_detail(struct hutch_check *c, const char *fmt, ...) HUTCH_PRINTF(2, 3);
static void set_detail(struct hutch_check *c, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  free(c->detail);
  c->detail = xvasprintf(fmt, ap);
  va_end(ap);
}

/* The detail of a failed step: "FMT: strerror(errnum)" (hutch_errno_format). */
static void set_detail_errno(struct hutch_check *c, int errnum, const char *fmt, ...) HUTCH_PRINTF(3, 4);
static void set_detail_errno(struct hutch_check *c, int errnum, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  _cleanup_free_ char *what = xvasprintf(fmt, ap);
  va_end(ap);
  free(c->detail);
  c->detail = hutch_errno_format(errnum, "%s", what);
}

static void set_fix(struct hutch_check *c, char *fix) {
  free(c->fix);
  c->fix = fix;
}

static const char *stage_name(int stage) {
  switch (stage) {
  case PROBE_STAGE_UNSHARE:
    return "creating the namespaces";
  case PROBE_STAGE_MAPS:
    return "writing the id maps";
  case PROBE_STAGE_RUN:
    return "inside the namespaces";
  case PROBE_STAGE_CRASH:
    return "the probe died";
  default:
    return "done";
  }
}

/* "step (stage): strerror" for a failed probe. */
static void fail_from(struct hutch_check *c, const struct probe_result *res) {
  c->status = HUTCH_CHECK_FAIL;
  c->errnum = res->errnum;
  if (res->stage == PROBE_STAGE_CRASH)
    set_detail(c, "%s", res->what);
  else
    set_detail_errno(c, res->errnum, "%s failed (%s)", res->what, stage_name(res->stage));
}

/* ---- child-side attempts ---- */

static int try_mount_tmpfs(void *data, struct probe_result *res) {
  (void)data;
  if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
    return probe_fail(res, "make / private (mount MS_REC|MS_PRIVATE)");
  if (mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "size=16k") < 0)
    return probe_fail(res, "mount a tmpfs");
  return 0;
}

static int try_nothing(void *data, struct probe_result *res) {
  (void)data;
  (void)res;
  return 0;
}

struct overlay_dirs {
  const char *lower, *upper, *work, *merged;
  const char *tmpfs; /* where a sandbox's tmpfs goes, NULL: the layer stays in the state directory */
};

static int try_overlay(void *data, struct probe_result *res) {
  const struct overlay_dirs *d = data;
  hutch_error_t err = NULL;
  if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
    return probe_fail(res, "make / private");
  /* As a sandbox does from Linux 6.6 on (contain.c: step_sandbox_tmpfs):
   * its layer on a tmpfs of its own over its directory. */
  if (d->tmpfs != NULL) {
    if (mount("tmpfs", d->tmpfs, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0700,size=1m") < 0)
      return probe_fail(res, "mount a tmpfs on %s", d->tmpfs);
    const char *dirs[] = {d->lower, d->upper, d->work, d->merged};
    for (size_t i = 0; i < ARRAY_SIZE(dirs); i++)
      if (mkdir(dirs[i], 0755) < 0)
        return probe_fail(res, "create %s", dirs[i]);
    _cleanup_free_ char *file = xasprintf("%s/lower-file", d->lower);
    if (write_file_at(AT_FDCWD, file, "", 0, 0644) < 0)
      return probe_fail(res, "create %s", file);
  }
  if (mounts_overlay(d->lower, d->upper, d->work, d->merged, &err) < 0) {
    probe_fail_error(res, err);
    hutch_error_free(&err);
    return -1;
  }
  /* A write through the overlay is a copy-up into the upper dir: what
   * fails when upper's filesystem lacks user xattrs or O_TMPFILE. */
  _cleanup_free_ char *path = xasprintf("%s/lower-file", d->merged);
  _cleanup_close_ int fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
  if (fd < 0 || write(fd, "x", 1) != 1)
    return probe_fail(res, "write through the overlay (copy-up into %s)", d->upper);
  _cleanup_free_ char *dir = xasprintf("%s/new-dir", d->merged);
  if (mkdir(dir, 0755) < 0)
    return probe_fail(res, "create a directory in the overlay");
  return 0;
}

static int try_fresh_proc(void *data, struct probe_result *res) {
  (void)data;
  if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
    return probe_fail(res, "make / private");
  /* The unshare made our children, not us, members of the new pid
   * namespace: its PID 1 makes the attempt and exits with the errno. */
  pid_t pid = fork();
  if (pid < 0)
    return probe_fail(res, "fork into the new pid namespace");
  if (pid == 0) {
    int fs = (int)syscall(SYS_fsopen, "proc", FSOPEN_CLOEXEC);
    if (fs < 0)
      _exit(errno & 0xff);
    if (syscall(SYS_fsconfig, fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0)
      _exit(errno & 0xff);
    int mnt = (int)syscall(SYS_fsmount, fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC);
    _exit(mnt < 0 ? errno & 0xff : 0);
  }
  int status;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR)
      return probe_fail(res, "wait for the pid namespace's init");
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
    return 0;
  errno = WIFEXITED(status) ? WEXITSTATUS(status) : EINTR;
  return probe_fail(res, "mount a fresh procfs (fsopen/fsmount \"proc\")");
}

static int try_no_new_privs(void *data, struct probe_result *res) {
  (void)data;
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
    return probe_fail(res, "prctl(PR_SET_NO_NEW_PRIVS)");
  if (prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1) {
    errno = EINVAL;
    return probe_fail(res, "prctl(PR_GET_NO_NEW_PRIVS) does not report the flag");
  }
  return 0;
}

static int try_seccomp(void *data, struct probe_result *res) {
  (void)data;
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
    return probe_fail(res, "prctl(PR_SET_NO_NEW_PRIVS)");
  /* getppid answers ENOTSUP, everything else is allowed.  No architecture
   * check: this child makes no other call that could alias it. */
  struct sock_filter insns[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_getppid, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (ENOTSUP & SECCOMP_RET_DATA)),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  struct sock_fprog prog = {.len = ARRAY_SIZE(insns), .filter = insns};
  if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0)
    return probe_fail(res, "seccomp(SECCOMP_SET_MODE_FILTER)");
  errno = 0;
  if (syscall(SYS_getppid) != -1 || errno != ENOTSUP) {
    errno = EINVAL;
    return probe_fail(res, "the installed filter is not enforced");
  }
  return 0;
}

static int try_netns(void *data, struct probe_result *res) {
  int what = *(int *)data; /* 0: lo, 1: a veth, 2: --net proxy's gateway */
  hutch_error_t err = NULL;
  int r = what == 2 ? probe_net_proxy(&err) : what == 1 ? probe_net_veth(&err) : netlink_loopback_up(&err);
  if (r < 0) {
    probe_fail_error(res, err);
    hutch_error_free(&err);
    return -1;
  }
  return 0;
}

/* ---- checks ---- */

struct ladder {
  struct report *r;
  struct probe_env env;
  const struct idmap_set *maps; /* the caller's, as `hutch exec` computes them */
  struct idmap_set single;      /* what a sandbox of an image without subordinate ids uses */
  bool userns_ok;
  struct probe_result userns_res;
  char *state_path;
  int state_fd;
};

static void check_kernel(struct ladder *l) {
  struct hutch_check *c = add_check(l->r, "kernel", "kernel", false);
  struct utsname u;
  int major = 0, minor = 0;
  if (uname(&u) < 0) {
    c->status = HUTCH_CHECK_WARN;
    set_detail_errno(c, errno, "uname");
    return;
  }
  sscanf(u.release, "%d.%d", &major, &minor);
  c->status = HUTCH_CHECK_INFO;
  set_detail(c, "Linux %s %s", u.release, u.machine);
  if (major < 5 || (major == 5 && minor < 12)) {
    /* Only a hint: the probes below say what actually works. */
    c->status = HUTCH_CHECK_WARN;
    set_detail(c, "Linux %s: hutch needs 5.12 (overlayfs in a user namespace from 5.11, mount_setattr from 5.12)",
               u.release);
    set_fix(c, xstrdup("Upgrade the kernel to 5.12 or later."));
  }
}

static void check_sysctls(struct ladder *l) {
  struct probe_env *e = &l->env;
  struct hutch_check *c = add_check(l->r, "max_user_namespaces", "user.max_user_namespaces", false);
  if (e->max_user_namespaces < 0) {
    c->status = HUTCH_CHECK_SKIP;
    set_detail(c, "not present on this kernel");
  } else if (e->max_user_namespaces == 0) {
    c->status = HUTCH_CHECK_FAIL;
    set_detail(c, "0: no user namespace may be created%s", e->nested_userns ? " from this (nested) namespace" : "");
    set_fix(c, probe_fix_userns_refused(e, ENOSPC));
  } else {
    set_detail(c, "%ld", e->max_user_namespaces);
  }

  c = add_check(l->r, "unprivileged_userns_clone", "kernel.unprivileged_userns_clone", false);
  if (e->unprivileged_userns_clone < 0) {
    c->status = HUTCH_CHECK_SKIP;
    set_detail(c, "not present on this kernel (only Debian and older Ubuntu kernels have it)");
  } else if (e->unprivileged_userns_clone == 0 && geteuid() != 0) {
    c->status = HUTCH_CHECK_FAIL;
    set_detail(c, "0: only root may create user namespaces");
    set_fix(c, probe_fix_userns_refused(e, EPERM));
  } else {
    set_detail(c, "%ld%s", e->unprivileged_userns_clone,
               e->unprivileged_userns_clone == 0 ? " (does not apply to root)" : "");
  }
}

static void check_userns(struct ladder *l) {
  struct hutch_check *c = add_check(l->r, "userns", "user namespace", true);
  struct probe_result *res = &l->userns_res;
  if (probe_run(CLONE_NEWUSER | CLONE_NEWNS, &l->single, try_mount_tmpfs, NULL, res) == 0) {
    l->userns_ok = true;
    set_detail(c, "created, %s mapped, root inside may mount (tmpfs)",
               l->single.kind != IDMAP_ROOT ? "uid/gid 0 to this user"
               : l->env.nested_userns       ? "uid/gid 0 identity (nested)"
                                            : "ids 0-65535 identity");
    return;
  }
  fail_from(c, res);
  if (res->stage == PROBE_STAGE_UNSHARE || res->stage == PROBE_STAGE_CRASH) {
    set_fix(c, probe_fix_userns_refused(&l->env, res->errnum));
  } else if (l->env.apparmor_restrict_userns == 1) {
    set_fix(c, probe_fix_apparmor());
  } else if (res->stage == PROBE_STAGE_MAPS && l->env.nested_userns && l->single.kind == IDMAP_ROOT) {
    set_fix(c, xasprintf("hutch runs as uid 0 of a nested user namespace (%lu ids mapped in %u extents) and maps "
                         "ids 0-65535 into the sandbox as one extent; the kernel accepts that only when the outer "
                         "namespace maps 0-65535 as one contiguous extent too. Run hutch there as a non-root user, "
                         "or give the outer namespace a single 65536-id extent (podman --userns=auto, or one "
                         "--map-users range).",
                         l->env.mapped_ids, l->env.map_extents));
  } else if (res->stage == PROBE_STAGE_RUN) {
    set_fix(c, probe_fix_outer_lsm(&l->env));
  } else {
    const char *hint = userns_failure_hint(res->errnum);
    set_fix(c, xstrdup(hint ? hint : "See the kernel log (dmesg) for the cause."));
  }
}

static void check_apparmor(struct ladder *l) {
  struct hutch_check *c = add_check(l->r, "apparmor_userns", "kernel.apparmor_restrict_unprivileged_userns", false);
  long v = l->env.apparmor_restrict_userns;
  if (v < 0) {
    c->status = HUTCH_CHECK_SKIP;
    set_detail(c, "not present (no AppArmor user namespace mediation on this kernel)");
  } else if (v == 0) {
    set_detail(c, "0: unrestricted");
  } else if (l->userns_ok) {
    set_detail(c,
               "%ld, but the uid map write and a mount in the namespace succeeded (hutch's profile or "
               "unconfined)",
               v);
  } else if (l->userns_res.stage == PROBE_STAGE_UNSHARE) {
    /* AppArmor lets the namespace be created and takes its capabilities
     * away; a refused unshare is something else (a seccomp filter, a
     * sysctl), named by the user namespace check. */
    c->status = HUTCH_CHECK_INFO;
    set_detail(c, "%ld, but user namespaces are refused before AppArmor applies (%s): see the user namespace check", v,
               l->userns_res.what);
  } else {
    c->status = HUTCH_CHECK_FAIL;
    c->errnum = l->userns_res.errnum;
    set_detail_errno(c, l->userns_res.errnum, "%ld: %s failed while %s", v, l->userns_res.what,
                     stage_name(l->userns_res.stage));
    set_fix(c, probe_fix_apparmor());
  }
}

static bool helper_usable(const char *path, char *why, size_t size) {
  struct stat st;
  if (stat(path, &st) < 0) {
    _cleanup_free_ char *text = hutch_errno_format(errno, "%s", path);
    snprintf(why, size, "%s", text);
    return false;
  }
  if ((st.st_mode & S_ISUID) && st.st_uid == 0)
    return true;
  char cap[64];
  if (getxattr(path, "security.capability", cap, sizeof(cap)) > 0)
    return true;
  snprintf(why, size, "%s is neither setuid root nor file-capable", path);
  return false;
}

static void check_idmap(struct ladder *l) {
  struct hutch_check *c = add_check(l->r, "subids", "subordinate ids (newuidmap, /etc/subuid)", false);
  if (geteuid() == 0 && l->env.nested_userns) {
    /* uid 0 of a rootless container or `unshare -r`: only what the outer
     * namespace maps can be mapped again. */
    set_detail(c, "uid 0 of a nested user namespace mapping %lu id%s in %u extent%s: sandboxes map those directly",
               l->env.mapped_ids, l->env.mapped_ids == 1 ? "" : "s", l->env.map_extents,
               l->env.map_extents == 1 ? "" : "s");
    return;
  }
  if (geteuid() == 0) {
    set_detail(c, "running as root: ids 0-65535 are mapped directly, no helper needed");
    return;
  }
  char why_u[512] = "", why_g[512] = "";
  bool hu = helper_usable(NEWUIDMAP_PATH, why_u, sizeof(why_u));
  bool hg = helper_usable(NEWGIDMAP_PATH, why_g, sizeof(why_g));
  struct idmap_set computed;
  struct passwd *pw = getpwuid(geteuid());
  _cleanup_free_ char *subuid = read_file_at(AT_FDCWD, "/etc/subuid", 1 << 20, NULL);
  _cleanup_free_ char *subgid = read_file_at(AT_FDCWD, "/etc/subgid", 1 << 20, NULL);
  idmap_compute(geteuid(), getegid(), pw ? pw->pw_name : NULL, subuid, subgid, &computed);
  const char *user = pw ? pw->pw_name : "USER";
  if (computed.kind != IDMAP_SUBORDINATE) {
    c->status = HUTCH_CHECK_WARN;
    set_detail(c,
               "no /etc/subuid and /etc/subgid range for %s: sandboxes map uid 0 only (images whose files "
               "belong to other ids cannot be imported with their owners)",
               user);
    set_fix(c, xasprintf("As root: `usermod --add-subuids 100000-165535 --add-subgids 100000-165535 %s` (pick a "
                         "range no other user has) and install the uidmap package.",
                         user));
    return;
  }
  if (!hu || !hg) {
    c->status = HUTCH_CHECK_WARN;
    set_detail(c, "range %u+%u, but %s%s%s: sandboxes map uid 0 only", computed.uid.ranges[1].outside,
               computed.uid.ranges[1].count, why_u, why_u[0] && why_g[0] ? "; " : "", why_g);
    set_fix(c, xstrdup("Install the uidmap package (apt-get install uidmap / dnf install shadow-utils); the "
                       "helpers must be setuid root or carry cap_setuid/cap_setgid."));
    return;
  }
  /* The real attempt: newuidmap and newgidmap apply the full range. */
  struct probe_result res;
  if (probe_run(CLONE_NEWUSER, &computed, try_nothing, NULL, &res) < 0) {
    c->required = true;
    fail_from(c, &res);
    set_fix(c, xasprintf("newuidmap/newgidmap refused the ranges for %s: check that /etc/subuid and /etc/subgid "
                         "give %s a range that overlaps no other user's, and that the helpers are setuid root.",
                         user, user));
    return;
  }
  set_detail(c, "%s: uids %u-%u and gids %u-%u applied through newuidmap/newgidmap", user,
             computed.uid.ranges[1].outside, computed.uid.ranges[1].outside + computed.uid.ranges[1].count - 1,
             computed.gid.ranges[1].outside, computed.gid.ranges[1].outside + computed.gid.ranges[1].count - 1);
}

static void check_store(struct ladder *l, const char *store_opt) {
  struct hutch_check *c = add_check(l->r, "store", "rootfs store", true);
  _cleanup_free_ char *path = store_opt ? xstrdup(store_opt) : paths_default_store();
  /* The store may not exist yet: then its nearest existing parent must be
   * writable, since `hutch rootfs import` creates it. */
  _cleanup_free_ char *probe = xstrdup(path);
  struct stat st;
  while (stat(probe, &st) < 0) {
    char *slash = strrchr(probe, '/');
    if (slash == NULL || slash == probe) {
      snprintf(probe, strlen(probe) + 1, "/");
      break;
    }
    *slash = '\0';
  }
  struct statfs sf;
  const char *fs = statfs(probe, &sf) == 0 ? probe_fs_name((long)sf.f_type) : "unknown";
  if (access(probe, W_OK | X_OK) < 0) {
    c->status = HUTCH_CHECK_FAIL;
    c->errnum = errno;
    set_detail_errno(c, errno, "%s%s%s is not writable", path,
                     strcmp(probe, path) ? " (does not exist; its parent " : "", strcmp(probe, path) ? probe : "");
    set_fix(c, xstrdup("Point hutch at a writable directory: --store DIR or HUTCH_STORE=DIR."));
    return;
  }
  set_detail(c, "%s (%s, %s)", path, fs, strcmp(probe, path) ? "not created yet" : "writable");
}

static void check_state_and_overlay(struct ladder *l, const char *state_opt) {
  struct hutch_check *c = add_check(l->r, "state", "state directory", true);
  hutch_error_t err = NULL;
  l->state_fd = state_open_root(state_opt, &l->state_path, &err);
  struct hutch_check *o = add_check(l->r, "overlay", "overlayfs in a user namespace", true);
  if (l->state_fd < 0) {
    c->status = HUTCH_CHECK_FAIL;
    c->errnum = err->errnum;
    set_detail_errno(c, err->errnum, "%s", err->msg);
    set_fix(c, xstrdup(err->hint ? err->hint
                                 : "Use a private, writable directory: --state-dir DIR or "
                                   "HUTCH_STATE_DIR=DIR."));
    hutch_error_free(&err);
    o->status = HUTCH_CHECK_SKIP;
    set_detail(o, "needs a usable state directory");
    return;
  }
  struct statfs sf;
  const char *fs = fstatfs(l->state_fd, &sf) == 0 ? probe_fs_name((long)sf.f_type) : "unknown";
  set_detail(c, "%s (%s, private, writable)", l->state_path, fs);
  struct hutch_check *d = add_check(l->r, "state_discard", "no synchronous discard where state is kept", false);
  if (state_on_discard_mount(l->state_fd)) {
    d->status = HUTCH_CHECK_WARN;
    set_detail(d,
               "%s is on a filesystem mounted with discard: a sandbox directory made and removed there "
               "(more at once than hutch keeps spare) waits for a discard of its block",
               l->state_path);
    set_fix(d, xstrdup("Put the state directory on a tmpfs (HUTCH_STATE_DIR=$XDG_RUNTIME_DIR/hutch, or "
                       "--state-dir DIR), or mount the filesystem without discard and run fstrim periodically."));
  } else {
    set_detail(d, "%s (no synchronous discard)", fs);
  }

  if (!l->userns_ok) {
    o->status = HUTCH_CHECK_SKIP;
    set_detail(o, "needs a user namespace");
    return;
  }
  /* The same layout a sandbox uses: <state>/<id>/{upper,work,root}, with a
   * tiny lower tree beside them. */
  char id[40];
  state_new_id(id);
  memcpy(id, "doctor", 6);
  _cleanup_close_ int sbfd = state_create_sandbox_dir(l->state_fd, id, true, &err);
  if (sbfd < 0) {
    o->status = HUTCH_CHECK_FAIL;
    o->errnum = err->errnum;
    set_detail_errno(o, err->errnum, "%s", err->msg);
    set_fix(o, xstrdup("Use a writable state directory: --state-dir DIR or HUTCH_STATE_DIR=DIR."));
    hutch_error_free(&err);
    return;
  }
  _cleanup_free_ char *base = xasprintf("%s/%s", l->state_path, id);
  _cleanup_free_ char *lower = xasprintf("%s/lower", base);
  _cleanup_free_ char *upper = xasprintf("%s/upper", base);
  _cleanup_free_ char *work = xasprintf("%s/work", base);
  _cleanup_free_ char *merged = xasprintf("%s/root", base);
  struct probe_result res;
  bool on_tmpfs = kernel_at_least(6, 6);
  if (!on_tmpfs && (mkdirat(sbfd, "lower", 0755) < 0 || write_file_at(sbfd, "lower/lower-file", "", 0, 0644) < 0)) {
    res = (struct probe_result){.stage = PROBE_STAGE_RUN, .errnum = errno};
    snprintf(res.what, sizeof(res.what), "create the lower tree in %s", base);
  } else {
    struct overlay_dirs dirs = {lower, upper, work, merged, on_tmpfs ? base : NULL};
    probe_run(CLONE_NEWUSER | CLONE_NEWNS, &l->single, try_overlay, &dirs, &res);
  }
  state_remove_sandbox_dir(l->state_fd, id, NULL);
  if (res.stage == PROBE_DONE) {
    set_detail(o, "mounted with userxattr, upper on %s, copy-up works", on_tmpfs ? "the sandbox's tmpfs" : fs);
    return;
  }
  fail_from(o, &res);
  set_fix(o, probe_fix_overlay(fs));
}

static void check_procfs(struct ladder *l) {
  struct hutch_check *c = add_check(l->r, "procfs", "fresh procfs in a pid namespace", true);
  if (!l->userns_ok) {
    c->status = HUTCH_CHECK_SKIP;
    set_detail(c, "needs a user namespace");
    return;
  }
  struct probe_result res;
  if (probe_run(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID, &l->single, try_fresh_proc, NULL, &res) == 0) {
    set_detail(c, "mounted%s",
               l->env.masked_proc[0] ? " (the outer /proc has over-mounts, but one procfs is "
                                       "fully visible)"
                                     : "");
    return;
  }
  fail_from(c, &res);
  if (res.errnum == EPERM && res.stage == PROBE_STAGE_RUN) {
    set_detail(c,
               "mount too revealing: the kernel refused a fresh procfs (EPERM) because the outer /proc is "
               "masked (over-mounted: %s)",
               l->env.masked_proc[0] ? l->env.masked_proc : "not visible from here");
    set_fix(c, probe_fix_proc_masked(&l->env));
  } else {
    set_fix(c, probe_fix_outer_lsm(&l->env));
  }
}

static int try_sethostname(void *data, struct probe_result *res) {
  (void)data;
  if (sethostname("sandbox", 7) < 0)
    return probe_fail(res, "sethostname in a new UTS namespace");
  return 0;
}

/* The sandbox names itself: an outer seccomp profile may refuse
 * sethostname where it allows the namespaces themselves (podman's default
 * allows it only with CAP_SYS_ADMIN). */
static void check_uts(struct ladder *l) {
  struct hutch_check *c = add_check(l->r, "uts", "hostname in a UTS namespace", true);
  if (!l->userns_ok) {
    c->status = HUTCH_CHECK_SKIP;
    set_detail(c, "needs a user namespace");
    return;
  }
  struct probe_result res;
  if (probe_run(CLONE_NEWUSER | CLONE_NEWUTS, &l->single, try_sethostname, NULL, &res) == 0) {
    set_detail(c, "set");
    return;
  }
  fail_from(c, &res);
  set_fix(c, res.stage == PROBE_STAGE_RUN && res.errnum == EPERM ? probe_fix_sethostname(&l->env)
                                                                 : probe_fix_outer_lsm(&l->env));
}

static void check_seccomp(struct ladder *l) {
  struct hutch_check *c = add_check(l->r, "no_new_privs", "no_new_privs", true);
  struct probe_result res;
  if (probe_run(0, NULL, try_no_new_privs, NULL, &res) == 0) {
    set_detail(c, "set");
  } else {
    fail_from(c, &res);
    set_fix(c, xstrdup("The kernel refuses PR_SET_NO_NEW_PRIVS (Linux 3.5 or later has it): check for an outer "
                       "seccomp filter or LSM refusing prctl."));
  }
  c = add_check(l->r, "seccomp", "seccomp filter", true);
  if (probe_run(0, NULL, try_seccomp, NULL, &res) == 0) {
    set_detail(c, "a filter was installed and enforced%s",
               l->env.outer_seccomp ? " (stacked on an outer filter that is already active)" : "");
  } else {
    fail_from(c, &res);
    set_fix(c, xstrdup("The kernel needs CONFIG_SECCOMP_FILTER; an outer seccomp profile must allow seccomp(2) "
                       "and prctl(2) (Docker's default does)."));
  }
}

static void check_cgroups(struct ladder *l) {
  struct hutch_check *c = add_check(l->r, "cgroup", "cgroup v2 and delegation", false);
  struct cgroup_facts cg;
  probe_cgroup_read(&cg);
  const char *layout = cgroup_layout_name(cg.layout);
  if (cg.layout != CGROUP_UNIFIED) {
    c->status = HUTCH_CHECK_WARN;
    set_detail(c, "%s%s: resource limits cannot be delegated (sandboxes still start; limits would not apply)", layout,
               cg.layout == CGROUP_HYBRID ? " (cgroup v1 controllers, v2 at /sys/fs/cgroup/unified without them)" : "");
    set_fix(c, probe_fix_cgroup(&l->env, &cg));
    return;
  }
  bool all = cg.has_cpu && cg.has_memory && cg.has_pids;
  if (cg.writable && all) {
    set_detail(c, "unified; %s is delegated to this user with %s", cg.path, cg.controllers);
    return;
  }
  c->status = HUTCH_CHECK_WARN;
  set_detail(c, "unified; %s%s%s; controllers: %s%s%s%s", cg.path, cg.readonly_mount ? " (read-only mount)" : "",
             cg.writable ? " is writable" : " is not delegated", cg.controllers[0] ? cg.controllers : "none",
             cg.has_cpu ? "" : " (no cpu)", cg.has_memory ? "" : " (no memory)", cg.has_pids ? "" : " (no pids)");
  set_fix(c, probe_fix_cgroup(&l->env, &cg));
}

static void check_network(struct ladder *l) {
  struct hutch_check *c = add_check(l->r, "netns", "network namespace (loopback)", true);
  struct hutch_check *v = add_check(l->r, "veth", "veth pair in the network namespace", false);
  if (!l->userns_ok) {
    c->status = v->status = HUTCH_CHECK_SKIP;
    set_detail(c, "needs a user namespace");
    set_detail(v, "needs a user namespace");
    return;
  }
  struct probe_result res;
  int veth = 0;
  if (probe_run(CLONE_NEWUSER | CLONE_NEWNET, &l->single, try_netns, &veth, &res) == 0) {
    set_detail(c, "created; lo brought up over rtnetlink");
  } else {
    fail_from(c, &res);
    set_fix(c, res.stage == PROBE_STAGE_UNSHARE ? probe_fix_userns_refused(&l->env, res.errnum)
                                                : probe_fix_outer_lsm(&l->env));
  }
  veth = 1;
  if (probe_run(CLONE_NEWUSER | CLONE_NEWNET, &l->single, try_netns, &veth, &res) == 0) {
    set_detail(v, "created (RTM_NEWLINK veth)");
  } else {
    fail_from(v, &res);
    v->status = HUTCH_CHECK_WARN;
    set_fix(v, xstrdup("Networked sandboxes need the veth driver: load it (as root: `modprobe veth`) or build the "
                       "kernel with CONFIG_VETH."));
  }
  struct hutch_check *p = add_check(l->r, "net-proxy", "--net proxy: veth to a gateway namespace", false);
  int gateway = 2;
  if (probe_run(CLONE_NEWUSER | CLONE_NEWNET, &l->single, try_netns, &gateway, &res) == 0) {
    set_detail(p, "gateway namespace, veth eth0/gw0, /30, default route and the proxy's port: reachable");
  } else {
    fail_from(p, &res);
    p->status = HUTCH_CHECK_WARN;
    set_fix(p, xstrdup("--net proxy will not start here; --net none (loopback only) still works. Check the veth "
                       "check above, and that nested network namespaces are allowed."));
  }
}

static void check_container(struct ladder *l) {
  struct hutch_check *c = add_check(l->r, "container", "outer container", false);
  struct probe_env *e = &l->env;
  c->status = HUTCH_CHECK_INFO;
  char blocks[1024] = "";
  for (size_t i = 0; i < l->r->n; i++) {
    struct hutch_check *k = &l->r->checks[i];
    if (k->status == HUTCH_CHECK_FAIL && k != c) {
      size_t len = strlen(blocks);
      snprintf(blocks + len, sizeof(blocks) - len, "%s%s", len ? ", " : "", k->id);
    }
  }
  size_t ev = strlen(e->evidence);
  if (ev >= 2 && strcmp(e->evidence + ev - 2, "; ") == 0)
    e->evidence[ev - 2] = '\0';
  set_detail(c, "%s%s%s%s%s%s%s%s%s", strcmp(e->name, "host") == 0 ? "none detected" : e->name,
             e->evidence[0] ? " (" : "", e->evidence, e->evidence[0] ? ")" : "",
             e->outer_seccomp ? "; an outer seccomp filter is active" : "",
             e->nested_userns ? "; inside a nested user namespace" : "",
             e->masked_proc[0] ? "; /proc has over-mounts" : "", blocks[0] ? "; it blocks: " : "", blocks);
  if (e->github_actions || e->gitlab_ci) {
    size_t len = strlen(c->detail);
    c->detail = xrealloc(c->detail, len + 32);
    snprintf(c->detail + len, 32, "%s", e->github_actions ? "; GitHub Actions" : "; GitLab CI");
  }
}

int hutch_doctor_run(const struct hutch_doctor_options *opts, struct hutch_doctor_report *out, hutch_error_t *err) {
  memset(out, 0, sizeof(*out));
  struct report r = {0};
  struct ladder l = {.r = &r, .state_fd = -1};
  probe_env_read(&l.env);
  if (idmap_for_caller(&l.maps, err) < 0)
    return -1;
  idmap_single(l.maps, &l.single);

  check_kernel(&l);
  check_sysctls(&l);
  check_userns(&l);
  check_apparmor(&l);
  check_idmap(&l);
  check_store(&l, opts ? opts->store : NULL);
  check_state_and_overlay(&l, opts ? opts->state_dir : NULL);
  check_procfs(&l);
  check_uts(&l);
  check_seccomp(&l);
  check_cgroups(&l);
  check_network(&l);
  check_container(&l);
  if (l.state_fd >= 0)
    close(l.state_fd);
  free(l.state_path);

  out->checks = r.checks;
  out->n = r.n;
  out->environment = xstrdup(l.env.name);
  out->ready = true;
  for (size_t i = 0; i < r.n; i++)
    if (r.checks[i].required && r.checks[i].status == HUTCH_CHECK_FAIL)
      out->ready = false;
  return 0;
}

void hutch_doctor_report_clear(struct hutch_doctor_report *report) {
  for (size_t i = 0; i < report->n; i++) {
    free(report->checks[i].detail);
    free(report->checks[i].fix);
  }
  free(report->checks);
  free(report->environment);
  memset(report, 0, sizeof(*report));
}

const char *hutch_check_status_name(enum hutch_check_status status) {
  switch (status) {
  case HUTCH_CHECK_OK:
    return "ok";
  case HUTCH_CHECK_INFO:
    return "info";
  case HUTCH_CHECK_SKIP:
    return "skip";
  case HUTCH_CHECK_WARN:
    return "warn";
  default:
    return "fail";
  }
}
