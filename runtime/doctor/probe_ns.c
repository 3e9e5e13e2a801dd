/* SPDX-License-Identifier: Apache-2.0 */
/* The doctor's namespace checks: the kernel, the user namespace sysctls,
 * a user namespace and its id maps, procfs, the hostname, no_new_privs and
 * seccomp, the network namespace; each one tried in a child (probe.c). */
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
#include "net_sandbox.h"
#include "paths.h"
#include "doctor.h"
#include "probe.h"
#include "state.h"
#include "util.h"

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

/* What a start does for --net none: the namespace made by a helper
 * process (net_sandbox.c), lo up there, and entered. */
static int probe_net_none(hutch_error_t *err) {
  struct net_sandbox_config c = {.enabled = false};
  struct net_start ns;
  return net_sandbox_start(&c, NULL, &ns, err) < 0 || net_sandbox_finish(&c, &ns, -1, err) < 0 ? -1 : 0;
}

static int try_netns(void *data, struct probe_result *res) {
  int what = *(int *)data; /* 0: lo, 1: a veth, 2: --net proxy's gateway */
  hutch_error_t err = NULL;
  int r = what == 2 ? probe_net_proxy(&err) : what == 1 ? probe_net_veth(&err) : probe_net_none(&err);
  if (r < 0) {
    probe_fail_error(res, err);
    hutch_error_free(&err);
    return -1;
  }
  return 0;
}

void doctor_check_kernel(struct ladder *l) {
  struct hutch_check *c = report_add(l->r, "kernel", "kernel", false);
  struct utsname u;
  int major = 0, minor = 0;
  if (uname(&u) < 0) {
    c->status = HUTCH_CHECK_WARN;
    report_detail_errno(c, errno, "uname");
    return;
  }
  sscanf(u.release, "%d.%d", &major, &minor);
  c->status = HUTCH_CHECK_INFO;
  report_detail(c, "Linux %s %s", u.release, u.machine);
  if (major < 5 || (major == 5 && minor < 12)) {
    /* Only a hint: the probes below say what actually works. */
    c->status = HUTCH_CHECK_WARN;
    report_detail(c, "Linux %s: hutch needs 5.12 (overlayfs in a user namespace from 5.11, mount_setattr from 5.12)",
                  u.release);
    report_fix(c, xstrdup("Upgrade the kernel to 5.12 or later."));
  }
}

void doctor_check_sysctls(struct ladder *l) {
  struct probe_env *e = &l->env;
  struct hutch_check *c = report_add(l->r, "max_user_namespaces", "user.max_user_namespaces", false);
  if (e->max_user_namespaces < 0) {
    c->status = HUTCH_CHECK_SKIP;
    report_detail(c, "not present on this kernel");
  } else if (e->max_user_namespaces == 0) {
    c->status = HUTCH_CHECK_FAIL;
    report_detail(c, "0: no user namespace may be created%s", e->nested_userns ? " from this (nested) namespace" : "");
    report_fix(c, probe_fix_userns_refused(e, ENOSPC));
  } else {
    report_detail(c, "%ld", e->max_user_namespaces);
  }

  c = report_add(l->r, "unprivileged_userns_clone", "kernel.unprivileged_userns_clone", false);
  if (e->unprivileged_userns_clone < 0) {
    c->status = HUTCH_CHECK_SKIP;
    report_detail(c, "not present on this kernel (only Debian and older Ubuntu kernels have it)");
  } else if (e->unprivileged_userns_clone == 0 && geteuid() != 0) {
    c->status = HUTCH_CHECK_FAIL;
    report_detail(c, "0: only root may create user namespaces");
    report_fix(c, probe_fix_userns_refused(e, EPERM));
  } else {
    report_detail(c, "%ld%s", e->unprivileged_userns_clone,
                  e->unprivileged_userns_clone == 0 ? " (does not apply to root)" : "");
  }
}

void doctor_check_userns(struct ladder *l) {
  struct hutch_check *c = report_add(l->r, "userns", "user namespace", true);
  struct probe_result *res = &l->userns_res;
  if (probe_run(CLONE_NEWUSER | CLONE_NEWNS, &l->single, try_mount_tmpfs, NULL, res) == 0) {
    l->userns_ok = true;
    report_detail(c, "created, %s mapped, root inside may mount (tmpfs)",
                  l->single.kind != IDMAP_ROOT ? "uid/gid 0 to this user"
                  : l->env.nested_userns       ? "uid/gid 0 identity (nested)"
                                               : "ids 0-65535 identity");
    return;
  }
  report_fail(c, res);
  if (res->stage == PROBE_STAGE_UNSHARE || res->stage == PROBE_STAGE_CRASH) {
    report_fix(c, probe_fix_userns_refused(&l->env, res->errnum));
  } else if (l->env.apparmor_restrict_userns == 1) {
    report_fix(c, probe_fix_apparmor());
  } else if (res->stage == PROBE_STAGE_MAPS && l->env.nested_userns && l->single.kind == IDMAP_ROOT) {
    report_fix(c, xasprintf("hutch runs as uid 0 of a nested user namespace (%lu ids mapped in %u extents) and maps "
                            "ids 0-65535 into the sandbox as one extent; the kernel accepts that only when the outer "
                            "namespace maps 0-65535 as one contiguous extent too. Run hutch there as a non-root user, "
                            "or give the outer namespace a single 65536-id extent (podman --userns=auto, or one "
                            "--map-users range).",
                            l->env.mapped_ids, l->env.map_extents));
  } else if (res->stage == PROBE_STAGE_RUN) {
    report_fix(c, probe_fix_outer_lsm(&l->env));
  } else {
    const char *hint = userns_failure_hint(res->errnum);
    report_fix(c, xstrdup(hint ? hint : "See the kernel log (dmesg) for the cause."));
  }
}

void doctor_check_apparmor(struct ladder *l) {
  struct hutch_check *c = report_add(l->r, "apparmor_userns", "kernel.apparmor_restrict_unprivileged_userns", false);
  long v = l->env.apparmor_restrict_userns;
  if (v < 0) {
    c->status = HUTCH_CHECK_SKIP;
    report_detail(c, "not present (no AppArmor user namespace mediation on this kernel)");
  } else if (v == 0) {
    report_detail(c, "0: unrestricted");
  } else if (l->userns_ok) {
    report_detail(c,
                  "%ld, but the uid map write and a mount in the namespace succeeded (hutch's profile or "
                  "unconfined)",
                  v);
  } else if (l->userns_res.stage == PROBE_STAGE_UNSHARE) {
    /* AppArmor lets the namespace be created and takes its capabilities
     * away; a refused unshare is something else (a seccomp filter, a
     * sysctl), named by the user namespace check. */
    c->status = HUTCH_CHECK_INFO;
    report_detail(c, "%ld, but user namespaces are refused before AppArmor applies (%s): see the user namespace check",
                  v, l->userns_res.what);
  } else {
    c->status = HUTCH_CHECK_FAIL;
    c->errnum = l->userns_res.errnum;
    report_detail_errno(c, l->userns_res.errnum, "%ld: %s failed while %s", v, l->userns_res.what,
                        probe_stage_name(l->userns_res.stage));
    report_fix(c, probe_fix_apparmor());
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

void doctor_check_idmap(struct ladder *l) {
  struct hutch_check *c = report_add(l->r, "subids", "subordinate ids (newuidmap, /etc/subuid)", false);
  if (geteuid() == 0 && l->env.nested_userns) {
    /* uid 0 of a rootless container or `unshare -r`: only what the outer
     * namespace maps can be mapped again. */
    report_detail(c, "uid 0 of a nested user namespace mapping %lu id%s in %u extent%s: sandboxes map those directly",
                  l->env.mapped_ids, l->env.mapped_ids == 1 ? "" : "s", l->env.map_extents,
                  l->env.map_extents == 1 ? "" : "s");
    return;
  }
  if (geteuid() == 0) {
    report_detail(c, "running as root: ids 0-65535 are mapped directly, no helper needed");
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
    report_detail(c,
                  "no /etc/subuid and /etc/subgid range for %s: sandboxes map uid 0 only (images whose files "
                  "belong to other ids cannot be imported with their owners)",
                  user);
    report_fix(c, xasprintf("As root: `usermod --add-subuids 100000-165535 --add-subgids 100000-165535 %s` (pick a "
                            "range no other user has) and install the uidmap package.",
                            user));
    return;
  }
  if (!hu || !hg) {
    c->status = HUTCH_CHECK_WARN;
    report_detail(c, "range %u+%u, but %s%s%s: sandboxes map uid 0 only", computed.uid.ranges[1].outside,
                  computed.uid.ranges[1].count, why_u, why_u[0] && why_g[0] ? "; " : "", why_g);
    report_fix(c, xstrdup("Install the uidmap package (apt-get install uidmap / dnf install shadow-utils); the "
                          "helpers must be setuid root or carry cap_setuid/cap_setgid."));
    return;
  }
  /* The real attempt: newuidmap and newgidmap apply the full range. */
  struct probe_result res;
  if (probe_run(CLONE_NEWUSER, &computed, try_nothing, NULL, &res) < 0) {
    c->required = true;
    report_fail(c, &res);
    report_fix(c, xasprintf("newuidmap/newgidmap refused the ranges for %s: check that /etc/subuid and /etc/subgid "
                            "give %s a range that overlaps no other user's, and that the helpers are setuid root.",
                            user, user));
    return;
  }
  report_detail(c, "%s: uids %u-%u and gids %u-%u applied through newuidmap/newgidmap", user,
                computed.uid.ranges[1].outside, computed.uid.ranges[1].outside + computed.uid.ranges[1].count - 1,
                computed.gid.ranges[1].outside, computed.gid.ranges[1].outside + computed.gid.ranges[1].count - 1);
}

void doctor_check_procfs(struct ladder *l) {
  struct hutch_check *c = report_add(l->r, "procfs", "fresh procfs in a pid namespace", true);
  if (!l->userns_ok) {
    c->status = HUTCH_CHECK_SKIP;
    report_detail(c, "needs a user namespace");
    return;
  }
  struct probe_result res;
  if (probe_run(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID, &l->single, try_fresh_proc, NULL, &res) == 0) {
    report_detail(c, "mounted%s",
                  l->env.masked_proc[0] ? " (the outer /proc has over-mounts, but one procfs is "
                                          "fully visible)"
                                        : "");
    return;
  }
  report_fail(c, &res);
  if (res.errnum == EPERM && res.stage == PROBE_STAGE_RUN) {
    report_detail(c,
                  "mount too revealing: the kernel refused a fresh procfs (EPERM) because the outer /proc is "
                  "masked (over-mounted: %s)",
                  l->env.masked_proc[0] ? l->env.masked_proc : "not visible from here");
    report_fix(c, probe_fix_proc_masked(&l->env));
  } else {
    report_fix(c, probe_fix_outer_lsm(&l->env));
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
void doctor_check_uts(struct ladder *l) {
  struct hutch_check *c = report_add(l->r, "uts", "hostname in a UTS namespace", true);
  if (!l->userns_ok) {
    c->status = HUTCH_CHECK_SKIP;
    report_detail(c, "needs a user namespace");
    return;
  }
  struct probe_result res;
  if (probe_run(CLONE_NEWUSER | CLONE_NEWUTS, &l->single, try_sethostname, NULL, &res) == 0) {
    report_detail(c, "set");
    return;
  }
  report_fail(c, &res);
  report_fix(c, res.stage == PROBE_STAGE_RUN && res.errnum == EPERM ? probe_fix_sethostname(&l->env)
                                                                    : probe_fix_outer_lsm(&l->env));
}

void doctor_check_seccomp(struct ladder *l) {
  struct hutch_check *c = report_add(l->r, "no_new_privs", "no_new_privs", true);
  struct probe_result res;
  if (probe_run(0, NULL, try_no_new_privs, NULL, &res) == 0) {
    report_detail(c, "set");
  } else {
    report_fail(c, &res);
    report_fix(c, xstrdup("The kernel refuses PR_SET_NO_NEW_PRIVS (Linux 3.5 or later has it): check for an outer "
                          "seccomp filter or LSM refusing prctl."));
  }
  c = report_add(l->r, "seccomp", "seccomp filter", true);
  if (probe_run(0, NULL, try_seccomp, NULL, &res) == 0) {
    report_detail(c, "a filter was installed and enforced%s",
                  l->env.outer_seccomp ? " (stacked on an outer filter that is already active)" : "");
  } else {
    report_fail(c, &res);
    report_fix(c, xstrdup("The kernel needs CONFIG_SECCOMP_FILTER; an outer seccomp profile must allow seccomp(2) "
                          "and prctl(2) (Docker's default does)."));
  }
}

void doctor_check_network(struct ladder *l) {
  struct hutch_check *c = report_add(l->r, "netns", "network namespace (loopback)", true);
  struct hutch_check *v = report_add(l->r, "veth", "veth pair in the network namespace", false);
  if (!l->userns_ok) {
    c->status = v->status = HUTCH_CHECK_SKIP;
    report_detail(c, "needs a user namespace");
    report_detail(v, "needs a user namespace");
    return;
  }
  struct probe_result res;
  int veth = 0;
  /* As a start makes it: the user namespace by clone, the network
   * namespace by a helper's unshare (an outer seccomp profile may treat the
   * two calls apart). */
  if (probe_run(CLONE_NEWUSER, &l->single, try_netns, &veth, &res) == 0) {
    report_detail(c, "created by unshare in a helper process and entered; lo up");
  } else {
    report_fail(c, &res);
    report_fix(c, res.stage == PROBE_STAGE_UNSHARE ? probe_fix_userns_refused(&l->env, res.errnum)
                                                   : probe_fix_outer_lsm(&l->env));
  }
  veth = 1;
  if (probe_run(CLONE_NEWUSER | CLONE_NEWNET, &l->single, try_netns, &veth, &res) == 0) {
    report_detail(v, "created (RTM_NEWLINK veth)");
  } else {
    report_fail(v, &res);
    v->status = HUTCH_CHECK_WARN;
    report_fix(v, xstrdup("Networked sandboxes need the veth driver: load it (as root: `modprobe veth`) or build the "
                          "kernel with CONFIG_VETH."));
  }
  struct hutch_check *p = report_add(l->r, "net-proxy", "--net proxy: veth to a gateway namespace", false);
  int gateway = 2;
  if (probe_run(CLONE_NEWUSER, &l->single, try_netns, &gateway, &res) == 0) {
    report_detail(p, "gateway namespace, veth eth0/gw0, /30, default route and the proxy's port: reachable");
  } else {
    report_fail(p, &res);
    p->status = HUTCH_CHECK_WARN;
    report_fix(p, xstrdup("--net proxy will not start here; --net none (loopback only) still works. Check the veth "
                          "check above, and that nested network namespaces are allowed."));
  }
}
