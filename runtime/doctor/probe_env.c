/* SPDX-License-Identifier: Apache-2.0 */
/* What the host is, read without changing anything: container markers,
 * the user namespace sysctls, masked /proc paths, the cgroup layout; and the
 * fix texts the doctor prints, which depend on where hutch runs. */
#include "config.h"

#include <ctype.h>
#include <fcntl.h>
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "resource_limits.h"
#include "overlay_fuse.h"
#include "probe.h"
#include "util.h"

#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif
#ifndef CGROUP_SUPER_MAGIC
#define CGROUP_SUPER_MAGIC 0x27e0eb
#endif
#ifndef TMPFS_MAGIC
#define TMPFS_MAGIC 0x01021994
#endif

/* HUTCH_PROBE_SYSCTL_ROOT replaces /proc/sys for these reads, so that the
 * tests can exercise the verdicts on values this host does not have (an
 * AppArmor restriction on a kernel without AppArmor); the namespace probes
 * themselves are never faked. */
long probe_read_sysctl(const char *path) {
  const char *root = getenv("HUTCH_PROBE_SYSCTL_ROOT");
  _cleanup_free_ char *faked = NULL;
  if (root && root[0] && strncmp(path, "/proc/sys/", 10) == 0)
    path = faked = xasprintf("%s/%s", root, path + 10);
  _cleanup_free_ char *s = read_file_at(AT_FDCWD, path, 64, NULL);
  if (s == NULL)
    return -1;
  return strtol(s, NULL, 10);
}

static void append(char *buf, size_t size, const char *fmt, ...) HUTCH_PRINTF(3, 4);
static void append(char *buf, size_t size, const char *fmt, ...) {
  size_t len = strlen(buf);
  if (len + 1 >= size)
    return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf + len, size - len, fmt, ap);
  va_end(ap);
}

/* Mount points under /proc, from our mountinfo: what Docker, podman and
 * Kubernetes put there to mask host information.  binfmt_misc is systemd's
 * own and harmless (its mount point is an empty directory, which the
 * kernel's "too revealing" check ignores). */
static void find_masked_proc(char *out, size_t size) {
  out[0] = '\0';
  _cleanup_fclose_ FILE *f = fopen("/proc/self/mountinfo", "re");
  if (f == NULL)
    return;
  char line[4096];
  while (fgets(line, sizeof(line), f)) {
    char mnt[1024];
    if (sscanf(line, "%*s %*s %*s %*s %1023s", mnt) != 1)
      continue;
    if (strncmp(mnt, "/proc/", 6) != 0 || strcmp(mnt, "/proc/sys/fs/binfmt_misc") == 0)
      continue;
    if (strstr(out, mnt) == NULL)
      append(out, size, "%s%s", out[0] ? " " : "", mnt);
  }
}

static bool environ_has(const char *path, const char *entry) {
  size_t len;
  _cleanup_free_ char *s = read_file_at(AT_FDCWD, path, 1 << 20, &len);
  if (s == NULL)
    return false;
  for (size_t off = 0; off < len; off += strlen(s + off) + 1)
    if (strcmp(s + off, entry) == 0)
      return true;
  return false;
}

void probe_env_read(struct probe_env *env) {
  memset(env, 0, sizeof(*env));
  env->max_user_namespaces = probe_read_sysctl("/proc/sys/user/max_user_namespaces");
  env->unprivileged_userns_clone = probe_read_sysctl("/proc/sys/kernel/unprivileged_userns_clone");
  env->apparmor_restrict_userns = probe_read_sysctl("/proc/sys/kernel/apparmor_restrict_unprivileged_userns");
  find_masked_proc(env->masked_proc, sizeof(env->masked_proc));

  if (access("/.dockerenv", F_OK) == 0) {
    env->docker = true;
    append(env->evidence, sizeof(env->evidence), "/.dockerenv exists; ");
  }
  if (access("/run/.containerenv", F_OK) == 0) {
    env->podman = true;
    append(env->evidence, sizeof(env->evidence), "/run/.containerenv exists; ");
  }
  if (getenv("KUBERNETES_SERVICE_HOST") || access("/var/run/secrets/kubernetes.io/serviceaccount", F_OK) == 0) {
    env->kubernetes = true;
    append(env->evidence, sizeof(env->evidence), "Kubernetes service environment or service account; ");
  }
  if (environ_has("/proc/1/environ", "container=lxc")) {
    env->lxc = true;
    append(env->evidence, sizeof(env->evidence), "PID 1 has container=lxc; ");
  }
  _cleanup_free_ char *cg1 = read_file_at(AT_FDCWD, "/proc/1/cgroup", 1 << 16, NULL);
  if (cg1 != NULL) {
    if (strstr(cg1, "/docker") && !env->docker) {
      env->docker = true;
      append(env->evidence, sizeof(env->evidence), "PID 1's cgroup names docker; ");
    }
    if (strstr(cg1, "kubepods") && !env->kubernetes) {
      env->kubernetes = true;
      append(env->evidence, sizeof(env->evidence), "PID 1's cgroup names kubepods; ");
    }
    if (strstr(cg1, "libpod") && !env->podman) {
      env->podman = true;
      append(env->evidence, sizeof(env->evidence), "PID 1's cgroup names libpod; ");
    }
    if (strstr(cg1, "/lxc") && !env->lxc) {
      env->lxc = true;
      append(env->evidence, sizeof(env->evidence), "PID 1's cgroup names lxc; ");
    }
  }
  if (!env->podman && !env->lxc &&
      (environ_has("/proc/1/environ", "container=podman") || environ_has("/proc/1/environ", "container=docker"))) {
    env->other_container = true;
    append(env->evidence, sizeof(env->evidence), "PID 1 has container= set; ");
  }
  env->github_actions = getenv("GITHUB_ACTIONS") != NULL;
  env->gitlab_ci = getenv("GITLAB_CI") != NULL;

  /* "Seccomp: 2" in our status: someone (the container engine, systemd, a
   * CI runner) already filters our system calls. */
  _cleanup_free_ char *status = read_file_at(AT_FDCWD, "/proc/self/status", 1 << 16, NULL);
  const char *sc = status ? strstr(status, "\nSeccomp:") : NULL;
  if (sc != NULL) {
    sc += strlen("\nSeccomp:");
    while (*sc == ' ' || *sc == '\t')
      sc++;
    env->outer_seccomp = *sc == '2';
  }

  /* The initial user namespace maps every id: "0 0 4294967295". */
  _cleanup_fclose_ FILE *m = fopen("/proc/self/uid_map", "re");
  unsigned long in, out, count, total = 0;
  bool identity_all = false;
  while (m != NULL && fscanf(m, "%lu %lu %lu", &in, &out, &count) == 3) {
    total += count;
    env->map_extents++;
    if (in == 0 && out == 0 && count == 4294967295UL)
      identity_all = true;
  }
  env->mapped_ids = total;
  env->nested_userns = m != NULL && !identity_all;

  if (env->kubernetes)
    env->name = "kubernetes";
  else if (env->podman)
    env->name = "podman";
  else if (env->docker)
    env->name = "docker";
  else if (env->lxc)
    env->name = "lxc";
  else if (env->other_container)
    env->name = "container";
  else
    env->name = "host";
}

const char *probe_fs_name(long f_type) {
  static const struct {
    long magic;
    const char *name;
  } types[] = {
      {0xEF53, "ext4"},
      {0x58465342, "xfs"},
      {0x9123683E, "btrfs"},
      {TMPFS_MAGIC, "tmpfs"},
      {0x794c7630, "overlayfs"},
      {0x6969, "nfs"},
      {0x2fc12fc1, "zfs"},
      {0x65735546, "fuse"},
      {0xFF534D42, "cifs"},
      {0x01021997, "v9fs"},
      {0x5346414F, "afs"},
      {0x73717368, "squashfs"},
      {0x858458f6, "ramfs"},
      {0x4244, "hfs"},
      {0xF2F52010, "f2fs"},
      {0x6E736673, "nsfs"},
      {CGROUP2_SUPER_MAGIC, "cgroup2"},
      {CGROUP_SUPER_MAGIC, "cgroup"},
  };
  for (size_t i = 0; i < ARRAY_SIZE(types); i++)
    if (types[i].magic == f_type)
      return types[i].name;
  return "unknown";
}

const char *cgroup_layout_name(enum cgroup_mode layout) {
  switch (layout) {
  case CGROUP_MODE_V2:
    return "unified";
  case CGROUP_MODE_HYBRID:
    return "hybrid";
  case CGROUP_MODE_V1:
    return "v1";
  default:
    return "none";
  }
}

static bool has_word(const char *list, const char *word) {
  size_t n = strlen(word);
  for (const char *p = list; (p = strstr(p, word)) != NULL; p += n)
    if ((p == list || isspace((unsigned char)p[-1])) && (p[n] == '\0' || isspace((unsigned char)p[n])))
      return true;
  return false;
}

/* Read-only: statfs, access(2) and reads; nothing under /sys/fs/cgroup is
 * ever created or written here. */
void probe_cgroup_read(struct cgroup_facts *cg) {
  memset(cg, 0, sizeof(*cg));
  /* The layout and our cgroup2 path as a start finds them (cgroup.c,
   * resource_limits.c), so the doctor reports what a start acts on. */
  cg->layout = cgroup_detect_mode();
  const char *v2root = cgroup_v2_mount(cg->layout);
  if (v2root == NULL)
    return;
  _cleanup_free_ char *self = read_file_at(AT_FDCWD, "/proc/self/cgroup", 64 * 1024, NULL);
  _cleanup_free_ char *path = self ? limits_cgroup2_path(self) : NULL;
  snprintf(cg->path, sizeof(cg->path), "%.511s", path ? path : "/");
  _cleanup_free_ char *dir = xasprintf("%s%s", v2root, strcmp(cg->path, "/") == 0 ? "" : cg->path);
  _cleanup_free_ char *ctl = xasprintf("%s/cgroup.controllers", dir);
  _cleanup_free_ char *controllers = read_file_at(AT_FDCWD, ctl, 4096, NULL);
  if (controllers != NULL) {
    controllers[strcspn(controllers, "\n")] = '\0';
    snprintf(cg->controllers, sizeof(cg->controllers), "%s", controllers);
  }
  cg->has_cpu = has_word(cg->controllers, "cpu");
  cg->has_memory = has_word(cg->controllers, "memory");
  cg->has_pids = has_word(cg->controllers, "pids");
  struct statvfs vf;
  cg->readonly_mount = statvfs(v2root, &vf) == 0 && (vf.f_flag & ST_RDONLY);
  _cleanup_free_ char *procs = xasprintf("%s/cgroup.procs", dir);
  cg->writable = !cg->readonly_mount && access(dir, W_OK) == 0 && access(procs, W_OK) == 0;
}

/* ---- fix texts ---- */

static const char fix_docker_seccomp[] =
    "Docker: run the container with --security-opt seccomp=unconfined (or a copy of the default profile that also "
    "allows unshare/clone with CLONE_NEWUSER, mount, umount2 and pivot_root), and --security-opt apparmor=unconfined "
    "where AppArmor runs; --privileged is the blunt alternative.";
static const char fix_podman_seccomp[] =
    "podman: --security-opt seccomp=unconfined (rootless podman's own profile usually allows user namespaces).";
static const char fix_k8s_seccomp[] =
    "Kubernetes: securityContext.seccompProfile.type: Unconfined (or a Localhost profile allowing CLONE_NEWUSER), "
    "with hostUsers: false on the pod.";
static const char fix_gha[] = "GitHub Actions: in a container job, `options: --security-opt seccomp=unconfined "
                              "--security-opt systempaths=unconfined`; on an ubuntu-24.04 runner install hutch's "
                              "AppArmor profile in a step (`sudo make install`, or `sed 's|@BINDIR@|/usr/local/bin|; "
                              "s|@LIBEXECDIR@|/usr/local/libexec/hutch|' policies/apparmor/hutch | sudo tee "
                              "/etc/apparmor.d/hutch && sudo apparmor_parser -r "
                              "/etc/apparmor.d/hutch`).";
static const char fix_gitlab[] = "GitLab runner (docker executor): in config.toml [runners.docker], security_opt = "
                                 "[\"seccomp=unconfined\", \"systempaths=unconfined\"] (privileged = true is the "
                                 "blunt alternative).";

static void add_ci(const struct probe_env *env, char *buf, size_t size) {
  if (env->github_actions)
    append(buf, size, "\n%s", fix_gha);
  if (env->gitlab_ci)
    append(buf, size, "\n%s", fix_gitlab);
}

char *probe_fix_userns_refused(const struct probe_env *env, int errnum) {
  char buf[4096] = "";
  bool root = geteuid() == 0;
  if (errnum == ENOSPC || env->max_user_namespaces == 0) {
    append(buf, sizeof(buf),
           "user.max_user_namespaces is %ld%s: as root, `sysctl -w user.max_user_namespaces=15000` and make it "
           "permanent with `echo user.max_user_namespaces=15000 > /etc/sysctl.d/90-hutch-userns.conf`.",
           env->max_user_namespaces,
           env->nested_userns ? " in this (nested) user namespace; the outer one sets it" : "");
    return xstrdup(buf);
  }
  if (!root && env->unprivileged_userns_clone == 0) {
    append(buf, sizeof(buf),
           "kernel.unprivileged_userns_clone is 0: as root, `sysctl -w kernel.unprivileged_userns_clone=1` and "
           "`echo kernel.unprivileged_userns_clone=1 > /etc/sysctl.d/90-hutch-userns.conf`.");
    return xstrdup(buf);
  }
  if (env->outer_seccomp || strcmp(env->name, "host") != 0) {
    append(buf, sizeof(buf), "A seccomp filter%s refuses new namespaces (Docker's default profile does).",
           strcmp(env->name, "host") != 0 ? " of the outer container" : " installed on hutch's parent");
    bool known = false;
    if (env->docker || env->other_container) {
      append(buf, sizeof(buf), "\n%s", fix_docker_seccomp);
      known = true;
    }
    if (env->podman) {
      append(buf, sizeof(buf), "\n%s", fix_podman_seccomp);
      known = true;
    }
    if (env->kubernetes) {
      append(buf, sizeof(buf), "\n%s", fix_k8s_seccomp);
      known = true;
    }
    if (env->lxc) {
      append(buf, sizeof(buf),
             "\nLXC: set lxc.apparmor.profile = lxc-container-default-with-nesting (or "
             "security.nesting=true in LXD/Incus).");
      known = true;
    }
    if (!known)
      append(buf, sizeof(buf), "\n%s\n%s\n%s", fix_docker_seccomp, fix_podman_seccomp, fix_k8s_seccomp);
    add_ci(env, buf, sizeof(buf));
    return xstrdup(buf);
  }
  append(buf, sizeof(buf),
         "The kernel refused an unprivileged user namespace. Check `sysctl user.max_user_namespaces` (> 0), "
         "`sysctl kernel.unprivileged_userns_clone` (Debian kernels: 1), that hutch does not run under chroot (a "
         "chrooted process may not create user namespaces), and the kernel log (`dmesg`) for an LSM denial.");
  return xstrdup(buf);
}

char *probe_fix_apparmor(void) {
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  exe[n > 0 ? n : 0] = '\0';
  char *slash = strrchr(exe, '/');
  if (slash != NULL)
    *slash = '\0';
  /* The profile names `hutch` and the programs of the libexec directory.
   * In a build tree they are side by side; installed, this is either
   * hutch-full behind the musl front end (in the libexec directory) or
   * `hutch` itself (in the bin directory). */
  const char *here = exe[0] ? exe : HUTCH_BINDIR;
  const char *bindir = strcmp(here, HUTCH_LIBEXECDIR) == 0 ? HUTCH_BINDIR : here;
  const char *libexecdir = strcmp(here, HUTCH_BINDIR) == 0 ? HUTCH_LIBEXECDIR : here;
  return xasprintf("AppArmor restricts unprivileged user namespaces (kernel.apparmor_restrict_unprivileged_userns=1): "
                   "the namespace is created but has no capabilities. Install hutch's AppArmor profile, which grants "
                   "`userns` to hutch and its programs only (`make install` does it):\n  sed 's|@BINDIR@|%s|; "
                   "s|@LIBEXECDIR@|%s|' %s/apparmor/hutch | sudo tee /etc/apparmor.d/hutch\n  sudo apparmor_parser -r "
                   "/etc/apparmor.d/hutch\n(the profile is policies/apparmor/hutch in the source tree). Last resort, "
                   "for the whole machine: `sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0`.",
                   bindir, libexecdir, HUTCH_DATADIR);
}

char *probe_fix_outer_lsm(const struct probe_env *env) {
  char buf[2048] = "";
  append(buf, sizeof(buf),
         "Root in the new user namespace may not mount: an LSM denies it. Look for "
         "apparmor=\"DENIED\" or avc: denied in `dmesg`.");
  if (env->docker || env->kubernetes || env->other_container)
    append(buf, sizeof(buf),
           "\nDocker/Kubernetes: --security-opt apparmor=unconfined (Kubernetes: "
           "securityContext.appArmorProfile.type: Unconfined); containerd's default profile has "
           "`deny mount`.");
  if (env->podman)
    append(buf, sizeof(buf), "\npodman with SELinux: --security-opt label=type:spc_t.");
  if (env->lxc)
    append(buf, sizeof(buf), "\nLXC: lxc.apparmor.profile = lxc-container-default-with-nesting.");
  return xstrdup(buf);
}

char *probe_fix_proc_masked(const struct probe_env *env) {
  char buf[3072] = "";
  append(buf, sizeof(buf),
         "The kernel refuses a new procfs (\"mount too revealing\") because the outer /proc has paths masked by "
         "over-mounts (%s): hutch will not run a sandbox that sees the outer procfs. Unmask /proc in the outer "
         "container:",
         env->masked_proc[0] ? env->masked_proc : "none found from here");
  /* Every engine's option: the one running us may not be recognisable. */
  append(buf, sizeof(buf),
         "\nDocker: --security-opt systempaths=unconfined together with --security-opt seccomp=unconfined (or a "
         "seccomp profile allowing namespaces); --privileged is the blunt alternative.");
  append(buf, sizeof(buf), "\npodman: --security-opt unmask=/proc/* (or unmask=ALL).");
  append(buf, sizeof(buf),
         "\nKubernetes: securityContext.procMount: Unmasked, which needs hostUsers: false on "
         "the pod.");
  append(buf, sizeof(buf), "\n%s\n%s", fix_gha, fix_gitlab);
  /* Named, weaker, and never chosen for the user. */
  append(buf, sizeof(buf),
         "\nWithout changing the outer container: --proc host-ro, a degraded mode (the outer /proc bound "
         "read-only with its dangerous files masked; the sandbox then sees the outer container's processes; see "
         "hutch-security(7)).");
  return xstrdup(buf);
}

char *probe_fix_cgroup(const struct probe_env *env, const struct cgroup_facts *cg) {
  char buf[2048] = "";
  switch (cg->layout) {
  case CGROUP_MODE_HYBRID:
  case CGROUP_MODE_V1:
    append(buf, sizeof(buf),
           "This host mounts cgroup %s: the cpu, memory and pids controllers are on cgroup v1, which cannot be "
           "delegated safely to an unprivileged user. Boot with the unified hierarchy: add "
           "systemd.unified_cgroup_hierarchy=1 to GRUB_CMDLINE_LINUX in /etc/default/grub, run update-grub, reboot.",
           cg->layout == CGROUP_MODE_HYBRID ? "hybrid (v1 controllers, v2 without them at /sys/fs/cgroup/unified)"
                                            : "v1");
    break;
  case CGROUP_MODE_NONE:
    append(buf, sizeof(buf),
           "No cgroup filesystem is mounted at /sys/fs/cgroup: mount cgroup2 there (as root: "
           "`mount -t cgroup2 none /sys/fs/cgroup`).");
    break;
  case CGROUP_MODE_V2:
    if (strcmp(env->name, "host") != 0) {
      append(buf, sizeof(buf),
             "Inside a container, give it a private, writable cgroup namespace: Docker/podman "
             "--cgroupns=private (the default on cgroup v2) with a writable /sys/fs/cgroup; "
             "move every process out of the container's root cgroup into a leaf before "
             "enabling controllers.");
    } else if (geteuid() != 0) {
      append(buf, sizeof(buf),
             "Delegate the controllers to your user's systemd instance: as root, create "
             "/etc/systemd/system/user@.service.d/delegate.conf with\n  [Service]\n  Delegate=cpu cpuset io memory "
             "pids\nthen `systemctl daemon-reload` and log in again.");
    } else {
      append(buf, sizeof(buf),
             "Enable the controllers for the cgroup hutch runs in (as root: run hutch from a "
             "systemd scope with `systemd-run --scope -p Delegate=yes hutch ...`).");
    }
    break;
  }
  return xstrdup(buf);
}

char *probe_fix_overlay(const char *fs) {
  char buf[2048] = "";
  append(buf, sizeof(buf),
         "overlayfs in a user namespace needs Linux 5.11 or later and an upper directory on a filesystem that "
         "supports it (tmpfs, ext4, xfs, btrfs; not overlayfs, NFS or FUSE); the state directory is on %s. Point it "
         "elsewhere: --state-dir DIR or HUTCH_STATE_DIR=DIR (for example on /dev/shm or a volume).",
         fs);
  char why[512] = "";
  _cleanup_free_ char *prog = overlay_fuse_program(why, sizeof(why));
  bool dev = access("/dev/fuse", R_OK | W_OK) == 0;
  /* The degraded mode is named, never chosen: the user passes the flag. */
  if (prog != NULL && dev)
    append(buf, sizeof(buf),
           "\nWhere the kernel refuses it whatever the directory (an outer container, an older kernel): "
           "--overlay fuse, a degraded mode in which %s serves the sandbox's root from user space (see "
           "hutch-security(7)).",
           prog);
  else
    append(buf, sizeof(buf),
           "\nWhere the kernel refuses it whatever the directory (an outer container, an older kernel): install "
           "fuse-overlayfs (apt-get install fuse-overlayfs; dnf install fuse-overlayfs) and use --overlay fuse, a "
           "degraded mode that serves the sandbox's root from user space (see hutch-security(7))%s%s%s.",
           prog ? "" : "; now: ", prog ? "" : why,
           dev ? "" : "; it also needs /dev/fuse (in a container: --device /dev/fuse)");
  return xstrdup(buf);
}

char *probe_fix_sethostname(const struct probe_env *env) {
  char buf[2048] = "";
  append(buf, sizeof(buf),
         "A seccomp filter%s refuses sethostname(2) although the namespaces are allowed (podman's default profile "
         "allows it only with CAP_SYS_ADMIN).",
         strcmp(env->name, "host") != 0 ? " of the outer container" : " installed on hutch's parent");
  append(buf, sizeof(buf),
         "\npodman: --security-opt seccomp=unconfined (or --cap-add SYS_ADMIN, which grants more).\nDocker: "
         "--security-opt seccomp=unconfined.\nKubernetes: securityContext.seccompProfile.type: Unconfined.");
  add_ci(env, buf, sizeof(buf));
  return xstrdup(buf);
}
