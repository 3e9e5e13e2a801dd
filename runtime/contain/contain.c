/* SPDX-License-Identifier: Apache-2.0 */
#include "config.h"

#include "contain.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "caps.h"
#include "devices.h"
#include "fuse_mount.h"
#include "identity.h"
#include "in_root.h"
#include "init_exec.h"
#include "init_seccomp.h"
#include "layer_tree.h"
#include "memwatch.h"
#include "mounts.h"
#include "net_sandbox.h"
#include "request.h"
#include "sync.h"
#include "util.h"

/* A debug line from the child: straight to stderr, which is the caller's
 * until step_detach_from_caller (the library's log handler belongs to the
 * caller's process, not to this fork of it). */
static void HUTCH_PRINTF(2, 3) child_debug(const struct contain_config *cfg, const char *fmt, ...) {
  if (!cfg->debug)
    return;
  char line[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof(line), fmt, ap);
  va_end(ap);
  dprintf(STDERR_FILENO, "%s: debug: %s\n", hutch_program_name, line);
}

static int step_die_with_parent(struct contain_config *cfg, hutch_error_t *err) {
  /* A sandbox must not outlive the hutch that starts it, even when that
   * hutch is SIGKILLed: the kernel then kills init, and with it the whole
   * pid namespace.  A long-lived one is meant to outlive its creator, but
   * only once the creator has recorded it (state.json): init clears this
   * when handed over (init.c), so no sandbox runs that `hutch ps` and
   * `hutch rm` cannot see.  A creator that died before this prctl is seen
   * as EOF by step_wait_for_id_maps. */
  (void)cfg;
  if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
    return hutch_error_sys(err, "set the parent-death signal");
  return 0;
}

static int step_hide_caller_strings(struct contain_config *cfg, hutch_error_t *err) {
  /* Init is a fork of the caller, not an exec: /proc/1/cmdline inside would
   * show hutch's whole command line (an API key, --env values, bind and
   * policy paths) and /proc/1/environ its environment.  Wipe both in place
   * before any sandboxed process exists; what was parsed from them lives on
   * in init's heap, which PR_SET_DUMPABLE (step_lock_down_init) keeps from
   * /proc/1/mem and ptrace. */
  uint64_t *r = cfg->caller_strings;
  if (r[1] <= r[0] || r[3] < r[2]) {
    hutch_error_set(err, EINVAL, "init: the bounds of the caller's argument strings are unknown");
    return hutch_error_hint(err, "is /proc mounted on the host? hutch reads /proc/self/stat");
  }
  /* The one-shot command's argv and workdir may point into those strings:
   * init's own copies, made before the wipe. */
  struct payload_spec *p = cfg->init.primary;
  if (p != NULL) {
    size_t n = strv_length((const char *const *)p->argv);
    char **argv = xcalloc(n + 1, sizeof(char *));
    for (size_t i = 0; i < n; i++)
      argv[i] = xstrdup(p->argv[i]);
    p->argv = argv;
    if (p->workdir)
      p->workdir = xstrdup(p->workdir);
  }
  static const char name[] = "hutch-init";
  char *args = (char *)(uintptr_t)r[0];
  size_t len = (size_t)(r[1] - r[0]);
  memset(args, 0, len);
  memcpy(args, name, len - 1 < sizeof(name) - 1 ? len - 1 : sizeof(name) - 1);
  memset((char *)(uintptr_t)r[2], 0, (size_t)(r[3] - r[2]));
  return 0;
}

static int write_own_map(const char *name, const char *content, hutch_error_t *err) {
  char path[32];
  snprintf(path, sizeof(path), "/proc/self/%s", name);
  _cleanup_close_ int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0 || write_all(fd, content, strlen(content)) < 0)
    return hutch_error_sys(err, "user namespace: write %s", path);
  return 0;
}

static int step_wait_for_id_maps(struct contain_config *cfg, hutch_error_t *err) {
  /* Until uid_map and gid_map are written we are "nobody" with
   * capabilities we cannot use on anything. */
  if (cfg->own_maps == NULL) {
    /* The parent writes them (newuidmap, or root's), then says GO.  EOF
     * here also means the parent died before (the parent-death race). */
    return sync_expect(cfg->init.parent_fd, SYNC_GO, NULL, 0, NULL, "wait for the id maps", err);
  }
  /* The single mapping, 0 -> the caller's own ids, is one the child may
   * write itself, as `unshare -r` does: the parent need not write three
   * files in /proc and wake us.  The parent-death race stays covered: the
   * parent-death signal is set (step_die_with_parent), and a parent that
   * died before that has closed its end of the sync socket, which shows as
   * a hangup here (getppid() cannot tell: it is 0 in a new pid namespace). */
  struct pollfd pfd = {cfg->init.parent_fd, 0, 0};
  if (poll(&pfd, 1, 0) != 0) {
    hutch_error_set(err, EPIPE, "wait for the id maps: hutch has gone");
    return -1;
  }
  _cleanup_free_ char *uid_map = idmap_format(&cfg->own_maps->uid);
  _cleanup_free_ char *gid_map = idmap_format(&cfg->own_maps->gid);
  /* An unprivileged writer may map its own gid only after giving up
   * setgroups(2), or it could drop a group that denies it access. */
  if (write_own_map("setgroups", "deny", err) < 0 || write_own_map("uid_map", uid_map, err) < 0 ||
      write_own_map("gid_map", gid_map, err) < 0)
    return -1;
  return 0;
}

static int step_cgroup_namespace(struct contain_config *cfg, hutch_error_t *err) {
  /* clone's cgroup namespace was rooted where hutch is, not in the
   * sandbox's cgroup (CLONE_INTO_CGROUP moves the child after the
   * namespaces are made, and the fallback moves it later still): a new one,
   * now that the child is in place, hides the host's cgroup paths. */
  if (cfg->own_cgroup && unshare(CLONE_NEWCGROUP) < 0)
    return hutch_error_sys(err, "cgroup namespace");
  return 0;
}

static int step_rlimits(struct contain_config *cfg, hutch_error_t *err) {
  /* Set in init, so every process of the sandbox inherits them.  Each
   * sandbox has its own user namespace, so RLIMIT_NPROC counts this
   * sandbox's processes, not all of the user's. */
  for (size_t i = 0; i < cfg->rlimits.n; i++) {
    const struct limits_rlimit *l = &cfg->rlimits.r[i];
    if (l->resource == RLIMIT_DATA) {
      /* The commands' to bound, not init's: init's own mappings are small
       * and fixed, but a sanitizer's shadow memory in a debug build would
       * make every later allocation of init fail. */
      cfg->init.rlimit_data = l->value;
      if (cfg->init.primary != NULL)
        cfg->init.primary->rlimit_data = l->value;
      /* RLIMIT_DATA is per process: the watchdog bounds their sum. */
      cfg->init.memory_watch = l->value;
      continue;
    }
    struct rlimit rl = {l->value, l->value};
    if (l->resource == RLIMIT_CPU)
      rl.rlim_max = l->value + 1; /* SIGXCPU first, SIGKILL a second later */
    if (setrlimit(l->resource, &rl) < 0)
      return hutch_error_sys(err, "set resource limit %d", l->resource);
  }
  /* The sandbox's share of its user's pools that the kernel bounds by
   * rlimit (resource_limits.h: limits_pools): counted per user namespace,
   * so these hold the sandbox as a whole. */
  for (size_t i = 0; i < limits_n_pools; i++) {
    const struct limits_pool *p = &limits_pools[i];
    struct rlimit rl;
    if (p->resource < 0)
      continue;
    if (getrlimit(p->resource, &rl) < 0)
      return hutch_error_sys(err, "kernel pools: read the limit of %s", p->what);
    uint64_t cur, max;
    limits_pool_rlimit(p->value, rl.rlim_cur, rl.rlim_max, &cur, &max);
    rl = (struct rlimit){cur, max};
    if (setrlimit(p->resource, &rl) < 0)
      return hutch_error_sys(err, "kernel pools: limit %s to %llu", p->what, (unsigned long long)max);
  }
  /* No core files: they would land in the overlay and can hold secrets.
   * Nothing in the sandbox can raise a hard limit back. */
  struct rlimit core = {0, 0};
  if (setrlimit(RLIMIT_CORE, &core) < 0)
    return hutch_error_sys(err, "set resource limit RLIMIT_CORE");
  return 0;
}

/* The sandbox's share of its user's pools that the kernel bounds per user
 * namespace (/proc/sys/user: inotify, fanotify), set in its own namespace
 * while this process still has CAP_SYS_RESOURCE there; nothing in the
 * sandbox gets that capability back to raise them.  Whichever procfs the
 * files are opened through, they are the writer's user namespace's: the
 * fresh procfs, not yet mounted, where there is one (it is writable
 * wherever it can be made); with --proc host-ro, the outer /proc. */
static int step_user_ns_pools(struct contain_config *cfg, const struct mount_plan *plan, hutch_error_t *err) {
  int dirfd = cfg->proc_host_ro ? AT_FDCWD : plan->proc_fd;
  const char *dir = cfg->proc_host_ro ? "/proc/sys/user" : "sys/user";
  for (size_t i = 0; i < limits_n_pools; i++) {
    const struct limits_pool *p = &limits_pools[i];
    if (p->sysctl == NULL)
      continue;
    char path[64], value[24];
    snprintf(path, sizeof(path), "%s/%s", dir, p->sysctl);
    int n = snprintf(value, sizeof(value), "%llu", (unsigned long long)p->value);
    _cleanup_close_ int fd = openat(dirfd, path, O_WRONLY | O_CLOEXEC);
    /* A kernel without the pool (fanotify's limits came in Linux 5.13)
     * has nothing there to share either. */
    if (fd < 0 && errno == ENOENT)
      continue;
    if (fd >= 0 && write(fd, value, (size_t)n) == n)
      continue;
    if (cfg->proc_host_ro && (errno == EROFS || errno == EACCES)) {
      /* A container's read-only /proc/sys, and no procfs of our own. */
      dprintf(STDERR_FILENO,
              "%s: warning: --proc host-ro: /proc/sys is read-only here, so the sandbox shares its user's "
              "inotify and fanotify limits (hutch-policy(5), KERNEL POOLS)\n",
              hutch_program_name);
      return 0;
    }
    hutch_error_sys(err, "kernel pools: set /proc/sys/user/%s to %s in the sandbox's user namespace", p->sysctl, value);
    return -1;
  }
  return 0;
}

static int step_drop_host_groups(struct contain_config *cfg, hutch_error_t *err) {
  /* Supplementary groups are the host's: they would grant access through
   * group permissions on bind-mounted host files. */
  /* The raw syscall: glibc's setgroups() makes every thread of the process
   * change too, and this child of a raw clone inherits the thread list of
   * a caller that has threads (a program embedding the library), which it
   * would wait for forever. */
  if (cfg->groups_mapped && syscall(SYS_setgroups, 0, NULL) < 0)
    return hutch_error_sys(err, "drop supplementary groups");
  return 0;
}

static int step_close_inherited_fds(struct contain_config *cfg, const struct net_start *net, hutch_error_t *err) {
  /* Whatever the caller had open (the store, the state directory, a
   * terminal it means to keep) has no business in the sandbox.  Kept: the
   * sync socket, a long-lived sandbox's control socket, and the network
   * helper's socket (it keeps none of the others: net_sandbox_start). */
  int keep[3] = {cfg->init.parent_fd, cfg->init.listen_fd, net->sock};
  int lo = 3;
  for (;;) {
    int next = -1;
    for (size_t i = 0; i < ARRAY_SIZE(keep); i++)
      if (keep[i] >= lo && (next < 0 || keep[i] < next))
        next = keep[i];
    if (next < 0)
      break;
    if (next > lo && syscall(SYS_close_range, lo, next - 1, 0) < 0)
      return hutch_error_sys(err, "close inherited fds");
    lo = next + 1;
  }
  if (syscall(SYS_close_range, lo, ~0U, 0) < 0)
    return hutch_error_sys(err, "close inherited fds");
  return 0;
}

static int step_sandbox_tmpfs(struct contain_config *cfg, struct mount_plan *plan, hutch_error_t *err) {
  /* One tmpfs of cfg->disk bytes, in this mount namespace only, holds every
   * place the sandbox can write: /tmp, /dev/shm and, where the layer need
   * not outlive the sandbox on disk (cfg->scratch_dir), its upper and work
   * directories.  A fill gets ENOSPC inside; the host's disk and the state
   * directory never see it, and the end of the sandbox frees it all. */
  int r = mounts_sandbox_tmpfs(cfg->disk, cfg->sandbox_dir, cfg->scratch_dir != NULL, plan, err);
  if (r < 0)
    return -1;
  /* A long-lived init keeps the tmpfs for hutch (init.h): after pivot_root
   * no path leads to its upper/, tmp/ and shm/. */
  if (cfg->long_lived)
    cfg->init.scratch_fd = steal_fd(&plan->scratch_fd);
  if (cfg->scratch_dir == NULL)
    return 0;
  if (r == 0) {
    if (cfg->disk != LIMITS_UNLIMITED) {
      hutch_error_set(err, EOPNOTSUPP,
                      "mounts: the sandbox's tmpfs has no user xattrs (Linux < 6.6), which "
                      "overlayfs needs to keep the writable layer there, within [limits] disk");
      return hutch_error_hint(err, "upgrade the kernel to 6.6 or later; or set [limits] disk = max in the policy to "
                                   "put the writable layer on the host's disk, without a size limit");
    }
    /* disk = max: the layer on disk as before, unbounded as asked. */
  }
  const char *dirs[] = {cfg->upper, cfg->work, cfg->root};
  for (size_t i = 0; i < ARRAY_SIZE(dirs); i++)
    if (mkdir(dirs[i], 0755) < 0 && !(r == 0 && errno == EEXIST))
      return hutch_error_sys(err, "mounts: create %s", dirs[i]);
  if (!cfg->send_layer)
    return 0;
  /* An image build's layer: after pivot_root no path leads to it, so the
   * parent gets the directory itself, to copy the layer out at the end. */
  _cleanup_close_ int fd = open(cfg->upper, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return hutch_error_sys(err, "mounts: open %s", cfg->upper);
  return sync_send(cfg->init.parent_fd, SYNC_LAYER_FD, NULL, 0, &fd, 1, err);
}

static int step_seed_layer(struct contain_config *cfg, hutch_error_t *err) {
  /* A fork: the parent's writable layer becomes this sandbox's own, by
   * copy, into the upper directory just made (on this sandbox's tmpfs,
   * which bounds it as [limits] disk bounds any write) and before the
   * overlay is mounted, so no write of either reaches the other.  hutch
   * sends it once the parent is paused (the steps above ran meanwhile),
   * and lets the parent go on once told it is copied.  This process is
   * root of the child's user namespace, whose maps are the parent's: every
   * owner of the parent's files is mapped here, and kept.  What it copies
   * is hostile: layer_copy_tree follows no name of it. */
  if (!cfg->seeded)
    return 0;
  _cleanup_close_ int seed = -1;
  if (sync_expect_fds(cfg->init.parent_fd, SYNC_SEED, NULL, 0, NULL, &seed, 1, "fork: wait for the parent's layer",
                      err) < 0)
    return -1;
  if (seed < 0)
    return hutch_error_set(err, EPROTO, "fork: the parent's layer did not come");
  _cleanup_close_ int upper = open(cfg->upper, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (upper < 0)
    return hutch_error_sys(err, "fork: open %s", cfg->upper);
  if (layer_copy_tree(seed, upper, err) < 0)
    return hutch_error_wrap(err, "fork: copy the parent's writable layer");
  return sync_send(cfg->init.parent_fd, SYNC_SEEDED, NULL, 0, NULL, 0, err);
}

static int step_open_fuse(struct contain_config *cfg, hutch_error_t *err) {
  /* --overlay fuse: before any mount, while the host's /dev is in view, so
   * a missing or refused device is the first and plainest failure. */
  if (cfg->overlay_fuse && (cfg->fuse_fd = overlay_fuse_open_device(err)) < 0)
    return -1;
  return 0;
}

/* The mode of the image's /etc, from the top layer that has the name:
 * true when it is a directory of root's (or there is none: 0755). */
static bool image_etc_dir(const struct contain_config *cfg, mode_t *mode) {
  for (size_t i = 0;; i++) {
    const char *layer = i == 0 ? cfg->lower : cfg->lowers ? cfg->lowers[i - 1] : NULL;
    if (layer == NULL)
      break;
    _cleanup_free_ char *path = xasprintf("%s/etc", layer);
    struct stat st;
    if (lstat(path, &st) == 0) {
      *mode = st.st_mode & 07777;
      return S_ISDIR(st.st_mode) && st.st_uid == 0 && st.st_gid == 0;
    }
    if (errno != ENOENT)
      return false;
  }
  *mode = 0755;
  return true;
}

static int step_etc_in_upper(struct contain_config *cfg, hutch_error_t *err) {
  /* /etc/hosts and /etc/resolv.conf are the sandbox's own.  Written into
   * the upper layer before the overlay is mounted, they cost two files:
   * no copy-up of /etc through the overlay, no bind mount, no scratch file
   * (step_write_etc does that otherwise).  Only where the upper layer dies
   * with the sandbox (nothing of the sandbox's may become part of a kept
   * layer or a built image), and only when the image's /etc is a plain
   * directory of root's, whose mode the new etc/ in the upper then takes
   * (a merged directory shows the upper's).  The upper directory is new
   * and hutch's: nothing in it is the sandbox's yet; an etc/ already there
   * means it is not, and the old way is taken. */
  mode_t mode;
  if (!cfg->etc_in_upper || !image_etc_dir(cfg, &mode))
    return 0;
  _cleanup_close_ int upper = open(cfg->upper, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (upper < 0)
    return hutch_error_sys(err, "mounts: open %s", cfg->upper);
  if (mkdirat(upper, "etc", 0700) < 0) {
    if (errno == EEXIST)
      return 0;
    return hutch_error_sys(err, "mounts: create %s/etc", cfg->upper);
  }
  _cleanup_close_ int etc = openat(upper, "etc", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (etc < 0 || fchmod(etc, mode) < 0)
    return hutch_error_sys(err, "mounts: %s/etc", cfg->upper);
  const char *name = cfg->hostname ? cfg->hostname : "sandbox";
  _cleanup_free_ char *hosts = xasprintf("127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n"
                                         "127.0.1.1\t%s\n",
                                         name);
  const char *resolv = net_sandbox_resolv_conf(&cfg->net);
  if (write_file_at(etc, "hosts", hosts, strlen(hosts), 0644) < 0 ||
      write_file_at(etc, "resolv.conf", resolv, strlen(resolv), 0644) < 0)
    return hutch_error_sys(err, "mounts: write %s/etc", cfg->upper);
  cfg->etc_written = true;
  return 0;
}

static int step_open_small_init(struct contain_config *cfg, hutch_error_t *err) {
  (void)err;
  /* While the host's tree is in view: the sandbox can neither name nor
   * replace the program its init will become.  Without it, init stays
   * the fork (the same sandbox, with more memory). */
  if (cfg->init_exe != NULL && (cfg->init.exec_fd = open(cfg->init_exe, O_PATH | O_CLOEXEC)) >= 0)
    cfg->init.become = init_exec_small;
  return 0;
}

static int step_root_layers(struct contain_config *cfg, hutch_error_t *err) {
  if (cfg->overlay_fuse)
    return overlay_fuse_child_mount(cfg->fuse_fd, cfg->root, cfg->init.parent_fd, err);
  return mounts_overlay_layers(cfg->lower, cfg->lowers, cfg->upper, cfg->work, cfg->root, err);
}

static int step_set_hostname(struct contain_config *cfg, hutch_error_t *err) {
  const char *name = cfg->hostname ? cfg->hostname : "sandbox";
  if (sethostname(name, strlen(name)) < 0)
    return hutch_error_sys(err, "set hostname %s", name);
  return 0;
}

/* Give the sandbox its own copy of an /etc file (name, in the directory
 * etc).  When the image has the file, the copy is written on /dev's tmpfs
 * and bind-mounted over it, as Docker does: the overlay's upper layer stays
 * empty, so a sandbox that writes nothing leaves nothing to copy up or
 * remove.  Otherwise (missing, or a symlink such as systemd-resolved's
 * stub, which must be replaced and never written through) the file is
 * created in the upper layer.  Every name is taken below etc, never
 * through a symlink (in_root.h). */
static int provide_etc_file(int etc, const char *name, const char *content, hutch_error_t *err) {
  struct stat st;
  if (fstatat(etc, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode)) {
    static const char scratch[] = "/dev/.hutch-etc";
    if (write_file_at(AT_FDCWD, scratch, content, strlen(content), 0644) < 0) {
      hutch_error_sys(err, "write %s", scratch);
      unlink(scratch);
      return -1;
    }
    _cleanup_free_ char *dest = xasprintf("/etc/%s", name);
    _cleanup_close_ int tree = (int)syscall(SYS_open_tree, AT_FDCWD, scratch, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
    _cleanup_close_ int target = tree >= 0 ? in_root_child(etc, name) : -1;
    int r = target < 0 ? hutch_error_sys(err, "bind-mount %s", dest) : in_root_move_mount(&tree, target, dest, err);
    unlink(scratch); /* the mount keeps the inode; no name is left in /dev */
    return r;
  }
  if (unlinkat(etc, name, 0) < 0 && errno != ENOENT)
    return hutch_error_sys(err, "replace /etc/%s", name);
  if (in_root_create_file(etc, name, content, 0644) < 0)
    return hutch_error_sys(err, "write /etc/%s", name);
  return 0;
}

static int step_write_etc(struct contain_config *cfg, hutch_error_t *err) {
  if (cfg->etc_written) /* step_etc_in_upper */
    return net_sandbox_write_tool_config(&cfg->net, err);
  const char *name = cfg->hostname ? cfg->hostname : "sandbox";
  /* /proc is mounted by now: the image's /etc is followed in its root, never
   * through a magic link to what this process holds (in_root.h). */
  _cleanup_close_ int etc = in_root_mkdirs("/etc", 0755);
  if (etc < 0) {
    hutch_error_sys(err, "create /etc");
    return errno == ELOOP
               ? hutch_error_hint(err, "the image's /etc is a symlink through /proc (a magic link) or a loop")
               : -1;
  }
  _cleanup_free_ char *hosts = xasprintf("127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n"
                                         "127.0.1.1\t%s\n",
                                         name);
  if (provide_etc_file(etc, "hosts", hosts, err) < 0)
    return -1;
  if (provide_etc_file(etc, "resolv.conf", net_sandbox_resolv_conf(&cfg->net), err) < 0)
    return -1;
  return net_sandbox_write_tool_config(&cfg->net, err);
}

/* read_only_root: last of the steps that write in the new root (/etc,
 * mount points, the proxy's tool configurations). */
static int step_read_only_root(struct contain_config *cfg, hutch_error_t *err) {
  return cfg->read_only_root ? mounts_read_only_root(err) : 0;
}

/* --user: the name or number against the sandbox's own /etc/passwd and
 * /etc/group, as they are with the binds in place and before the steps
 * that lock init down switch to it (caps_drop_all).  HOME is the user's
 * unless the caller or the image set one. */
static int step_resolve_user(struct contain_config *cfg, hutch_error_t *err) {
  char ***envs[] = {&cfg->init.sandbox_env, cfg->init.primary ? (char ***)(uintptr_t)&cfg->init.primary->envp : NULL};
  return identity_resolve(&cfg->identity, envs, ARRAY_SIZE(envs), err);
}

static int step_detach_from_caller(struct contain_config *cfg, hutch_error_t *err) {
  /* A long-lived sandbox must not hold its creator's terminal or pipes
   * (`id=$(hutch create)` would never see EOF) nor get its hangups. */
  if (!cfg->long_lived)
    return 0;
  int fd = open("/dev/null", O_RDWR | O_CLOEXEC);
  if (fd < 0)
    return hutch_error_sys(err, "open /dev/null");
  for (int i = 0; i < 3; i++)
    if (dup2(fd, i) < 0)
      return hutch_error_sys(err, "detach stdio");
  close(fd);
  if (setsid() < 0)
    return hutch_error_sys(err, "setsid");
  return 0;
}

static int step_hold_netns(struct contain_config *cfg, hutch_error_t *err) {
  /* A long-lived init keeps its network namespace for hutch (init.h),
   * which a host process would otherwise enter through init's /proc. */
  if (cfg->long_lived && (cfg->init.netns_fd = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC)) < 0)
    return hutch_error_sys(err, "open the sandbox's network namespace");
  return 0;
}

static int step_memory_watch(struct contain_config *cfg, hutch_error_t *err) {
  /* The watchdog counts the socket buffers of the sandbox's network
   * namespace, which init is in by now, through a socket that its seccomp
   * filter would not let it open later. */
  if (cfg->init.memory_watch && (cfg->init.memwatch_fd = memwatch_open(err)) < 0)
    return -1;
  return 0;
}

static int step_lock_down_init(struct contain_config *cfg, hutch_error_t *err) {
  /* Init and everything it starts hold no capability (an image build: only
   * the file-ownership ones), cannot gain one, and init cannot be ptraced
   * or have its memory read through /proc. */
  const struct user_ident *as = cfg->identity.spec.set ? &cfg->identity.ident : NULL;
  if ((cfg->build_caps ? caps_keep_for_build(err) : caps_drop_all(as, err)) < 0 || caps_set_no_new_privs(err) < 0)
    return -1;
  if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
    return hutch_error_sys(err, "init: PR_SET_DUMPABLE");
  return 0;
}

static int step_seccomp_init(struct contain_config *cfg, hutch_error_t *err) {
  /* Last: the filter binds init from here on, and the steps above make
   * calls no profile allows (mount, pivot_root, capset...).  Loaded once
   * here, every command inherits it instead of loading it again before its
   * execve (init_seccomp.c says why that is safe, and checks that the
   * profile leaves init working; when it would not, the commands load it
   * as before). */
  const char *refused = NULL;
  int r = init_seccomp_load(cfg->init.bpf, cfg->init.bpf_len, &refused, err);
  if (r < 0)
    return -1;
  if (r == 0) {
    child_debug(cfg, "seccomp: loaded by each command: the profile does not allow init's %s", refused);
    return 0;
  }
  cfg->init.bpf = NULL;
  cfg->init.bpf_len = 0;
  if (cfg->init.primary != NULL)
    cfg->init.primary->bpf = NULL;
  return 0;
}

void contain_main(struct contain_config *cfg) {
  hutch_error_t err = NULL;
  struct mount_plan plan;
  mount_plan_init(&plan);
  struct net_start net = {-1, -1};
  char old_root[OLD_ROOT_NAME_SIZE];

  /* With HUTCH_DEBUG, each step's time, as the host side prints its own
   * (sandbox_start.c), on the caller's stderr while init still has it. */
  cfg->debug = getenv("HUTCH_DEBUG") != NULL;
  /* The caller's log handler is code of the caller's, over fds this
   * process closes and reuses: the library's lines from here on (the
   * network helper's among them) go to stderr, as child_debug's do. */
  hutch_set_log_handler(NULL, NULL);
  double t0 = cfg->debug ? monotonic_seconds() : 0;
#define STEP(call)                                                                                                     \
  do {                                                                                                                 \
    if ((call) < 0)                                                                                                    \
      goto fail;                                                                                                       \
    if (cfg->debug) {                                                                                                  \
      double t1 = monotonic_seconds();                                                                                 \
      child_debug(cfg, "start: child: %.*s %.3f ms", (int)strcspn(#call, "("), #call, (t1 - t0) * 1e3);                \
      t0 = t1;                                                                                                         \
    }                                                                                                                  \
  } while (0)

  STEP(step_die_with_parent(cfg, &err));
  /* The network namespace is made by a helper while this process builds
   * the mounts: creating one costs more than any other step (with --net
   * proxy, a second one and a veth too), and nothing below needs it until
   * net_sandbox_finish.  Until then this process is still in hutch's
   * network namespace: no step before it may open a network socket (only
   * the helper's unnamed socket pair, closed by net_sandbox_finish).
   * Forked first, so that it starts as early as it can: it needs no id map
   * (its capabilities in this user namespace date from the clone), it
   * closes every fd but its socket itself, and it is gone before anything
   * of the sandbox runs.  Where the parent moves this process into its
   * cgroup later (no CLONE_INTO_CGROUP), the helper stays where hutch is. */
  STEP(net_sandbox_start(&cfg->net, mounts_detach_old_root, &net, &err));
  STEP(step_wait_for_id_maps(cfg, &err));
  STEP(step_cgroup_namespace(cfg, &err));
  STEP(step_drop_host_groups(cfg, &err));
  STEP(step_close_inherited_fds(cfg, &net, &err));
  STEP(step_open_fuse(cfg, &err));
  STEP(step_open_small_init(cfg, &err));
  /* Mounts: a private tree, the overlay as the new root, host objects
   * opened while the host is still visible, then pivot_root. */
  STEP(mounts_make_private(&err));
  STEP(step_sandbox_tmpfs(cfg, &plan, &err));
  STEP(step_seed_layer(cfg, &err));
  STEP(step_etc_in_upper(cfg, &err));
  STEP(step_root_layers(cfg, &err));
  STEP(mounts_open_detached(cfg->binds, cfg->bind_ids, cfg->n_binds, cfg->proc_host_ro, &plan, &err));
  STEP(devices_open(cfg->devices, &err));
  STEP(step_user_ns_pools(cfg, &plan, &err));
  STEP(mounts_pivot_root(cfg->root, old_root, &err));
  /* The old root, on its directory of a random name, is dropped by the
   * network helper (mounts_detach_old_root): the unmount waits for an RCU
   * grace period, which a CPU busy in the kernel (making a network
   * namespace) holds up by about 0.2 ms, and which the helper can wait out
   * while this process goes on in the new root.  Nothing the steps below
   * follow can lead there: ".." of "/" is "/", and the image cannot name a
   * directory made now.  net_sandbox_finish returns only once the old root
   * is gone; nothing from the sandbox runs before that. */
  STEP(net_sandbox_go(&net, old_root, &err));
  STEP(mounts_place_proc(&plan, &err));
  STEP(mounts_setup_dev(&plan, cfg->groups_mapped, &err));
  STEP(devices_place(cfg->devices, &err));
  STEP(mounts_mask_proc(&plan, &err));
  STEP(mounts_tmp(&plan, &err));
  STEP(step_set_hostname(cfg, &err));
  /* Before the binds: the setup writes /etc in the image's own tree (an
   * image's /etc -> /work must not have it write in a bound host
   * directory, with capabilities the command lacks), and a bind the caller
   * puts on /etc/hosts shows over hutch's. */
  STEP(step_write_etc(cfg, &err));
  STEP(devices_write_ld_conf(cfg->devices, &err));
  STEP(mounts_place_binds(&plan, &err));
  mount_plan_release(&plan);
  /* Into the helper's network namespace (lo up; with --net proxy, the veth
   * to the gateway namespace, whose listening socket goes to the parent);
   * the helper is reaped here, while init still has its capabilities. */
  STEP(net_sandbox_finish(&cfg->net, &net, cfg->init.parent_fd, &err));
  STEP(step_hold_netns(cfg, &err));
  STEP(step_resolve_user(cfg, &err));
  STEP(step_read_only_root(cfg, &err));
  STEP(step_detach_from_caller(cfg, &err));
  STEP(step_rlimits(cfg, &err));
  STEP(step_memory_watch(cfg, &err));
  /* Last before init runs anything: the steps above may still read the
   * caller's strings (--hostname, --bind paths). */
  STEP(step_hide_caller_strings(cfg, &err));
  STEP(step_lock_down_init(cfg, &err));
  STEP(step_seccomp_init(cfg, &err));
#undef STEP
  init_main(&cfg->init);

fail:
  hutch_error_wrap(&err, "sandbox setup");
  sync_send_error(cfg->init.parent_fd, err);
  _exit(125);
}
