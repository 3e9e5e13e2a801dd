#include "config.h"

#include "sandbox.h"
#include "sandbox_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>

#include "cgroup.h"
#include "contain.h"
#include "idmap.h"
#include "net_host.h"
#include "layer_copy.h"
#include "overlay_fuse.h"
#include "paths.h"
#include "payload.h"
#include "policy.h"
#include "proc_stat.h"
#include "protected.h"
#include "pty_relay.h"
#include "request.h"
#include "state.h"
#include "subnet.h"
#include "sync.h"
#include "util.h"

/* The user namespace is created first by the kernel (all of clone's
 * namespaces are owned by it), so every other namespace is ours to use
 * rootless, and also when hutch runs as real root. */
#define SANDBOX_NAMESPACES                                                                                             \
  (CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP)

static const char *const default_env[] = {
    "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "HOME=/root",
    "LANG=C.UTF-8",
    NULL,
};

static const int caller_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

int hutch_exit_code(const struct hutch_exit *ex) {
  if (ex->timed_out)
    return 124;
  if (ex->setup_failed)
    return 125;
  if (ex->exec_errno != 0)
    return ex->exec_errno == ENOENT ? 127 : 126;
  if (ex->signal)
    return 128 + ex->signal;
  return ex->status;
}

int forwarder_start(struct forwarder *f, hutch_error_t *err) {
  sigset_t mask;
  sigemptyset(&mask);
  for (size_t i = 0; i < ARRAY_SIZE(caller_signals); i++)
    sigaddset(&mask, caller_signals[i]);
  if (sigprocmask(SIG_BLOCK, &mask, &f->old_mask) < 0)
    return hutch_error_sys(err, "block signals");
  f->fd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
  if (f->fd < 0) {
    sigprocmask(SIG_SETMASK, &f->old_mask, NULL);
    return hutch_error_sys(err, "signalfd");
  }
  return 0;
}

void forwarder_stop(struct forwarder *f) {
  if (f->fd < 0)
    return;
  close(f->fd);
  f->fd = -1;
  /* Drop what arrived but was not forwarded, so unblocking does not kill
   * the caller with a signal that was meant for the sandbox. */
  sigset_t pending;
  sigpending(&pending);
  struct timespec zero = {0, 0};
  for (size_t i = 0; i < ARRAY_SIZE(caller_signals); i++) {
    if (sigismember(&pending, caller_signals[i])) {
      sigset_t one;
      sigemptyset(&one);
      sigaddset(&one, caller_signals[i]);
      sigtimedwait(&one, NULL, &zero);
    }
  }
  sigprocmask(SIG_SETMASK, &f->old_mask, NULL);
}

int forwarder_read(struct forwarder *f) {
  struct signalfd_siginfo si;
  if (read(f->fd, &si, sizeof(si)) != (ssize_t)sizeof(si))
    return 0;
  return (int)si.ssi_signo;
}

/* clone3 gives us a pidfd atomically and, with CLONE_INTO_CGROUP (5.7+),
 * starts the child in its cgroup, so not one instruction of it runs
 * unlimited; clone() is the fallback for kernels before 5.3 and for outer
 * seccomp profiles that refuse clone3 (ENOSYS).  *in_cgroup tells whether
 * the child is already in cgroup_fd's cgroup. */
/* The bounds of this process's argument and environment strings, which the
 * sandbox's init (a fork, not an exec) wipes: read once per process, since
 * they do not move. */
static uint64_t caller_strings[4];
static void read_caller_strings(void) {
  _cleanup_free_ char *text = proc_stat_read(0);
  if (text == NULL || !proc_stat_parse(text, PROC_STAT_ARG_START, 4, caller_strings))
    memset(caller_strings, 0, sizeof(caller_strings));
}

static pid_t clone_sandbox(int *pidfd, int cgroup_fd, bool *in_cgroup) {
  struct clone_args args = {
      .flags = SANDBOX_NAMESPACES | CLONE_PIDFD,
      .pidfd = (uint64_t)(uintptr_t)pidfd,
      .exit_signal = SIGCHLD,
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
  return (pid_t)syscall(SYS_clone, SANDBOX_NAMESPACES | SIGCHLD, NULL, NULL, NULL, NULL);
}

void started_release(struct started *s) {
  if (s->layer_fd >= 0)
    close(s->layer_fd);
  net_host_clear(&s->net);
  sandbox_cgroup_release(&s->cg);
  if (s->pidfd >= 0)
    close(s->pidfd);
  if (s->sync_fd >= 0)
    close(s->sync_fd);
  if (s->state_fd >= 0)
    close(s->state_fd);
  for (int i = 0; i < 2; i++)
    if (s->root_fd[i] >= 0)
      close(s->root_fd[i]);
  if (s->pty_fd >= 0)
    close(s->pty_fd);
  s->pidfd = s->sync_fd = s->state_fd = s->root_fd[0] = s->root_fd[1] = s->pty_fd = -1;
}

static int bind_control_socket(int sbdirfd, hutch_error_t *err) {
  int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return hutch_error_sys(err, "control socket: socket");
  /* Through /proc/self/fd the path stays short whatever the state dir's
   * length (sun_path holds 108 bytes). */
  struct sockaddr_un addr = {.sun_family = AF_UNIX};
  snprintf(addr.sun_path, sizeof(addr.sun_path), "/proc/self/fd/%d/ctl.sock", sbdirfd);
  if (bind(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0 || listen(fd, 64) < 0) {
    hutch_error_sys(err, "control socket: bind");
    close(fd);
    return -1;
  }
  return fd;
}

/* A start that failed on the way (namespaces, mounts, the setup steps)
 * names `hutch doctor`, which tries each step and names the fix. */
static void point_to_doctor(hutch_error_t *err) {
  if (err == NULL || *err == NULL || ((*err)->hint && strstr((*err)->hint, "hutch doctor")))
    return;
  if ((*err)->hint) {
    _cleanup_free_ char *hint = steal_pointer(&(*err)->hint);
    hutch_error_hint(err, "%s; `hutch doctor` checks what this host allows", hint);
  } else {
    hutch_error_hint(err, "run `hutch doctor`: it tries each step of a sandbox start on this host and names the fix");
  }
}

static void kill_and_reap(pid_t pid, int pidfd) {
  if (pidfd >= 0)
    syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
  else
    kill(pid, SIGKILL);
  while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
    ;
}

/* --net proxy: the child's setup sends the listening socket it made in
 * the gateway namespace; the proxy serving it stops when init's pidfd
 * says the sandbox has ended. */
static int start_proxy(struct started *s, bool long_lived, hutch_error_t *err) {
  uint32_t type;
  int fds[SYNC_MAX_FDS];
  size_t nfds = 0;
  int r = sync_recv(s->sync_fd, &type, NULL, 0, NULL, fds, &nfds, err);
  if (r <= 0 || type != SYNC_NET_LISTENER || nfds != 1) {
    for (size_t i = 0; i < nfds; i++)
      close(fds[i]);
    if (r < 0)
      return hutch_error_wrap(err, "sandbox setup");
    return hutch_error_set(err, EPROTO, "sandbox setup: expected the proxy's listening socket (got %s)",
                           r == 0 ? "EOF" : "another message");
  }
  if (s->pidfd < 0 && (s->pidfd = (int)syscall(SYS_pidfd_open, s->pid, 0)) < 0) {
    close(fds[0]);
    return hutch_error_sys(err, "network: pidfd of the sandbox's init");
  }
  if (net_host_start_proxy(&s->net, fds[0], s->pidfd, err) < 0)
    return -1;
  /* A long-lived sandbox outlives this process: its init keeps the /30. */
  if (long_lived && subnet_set_owner(s->state_fd, s->id, s->pid, err) < 0)
    return -1;
  return 0;
}

/* An image build's layer directory, sent by the child (contain.c). */
static int receive_layer(int sync_fd, int *out, hutch_error_t *err) {
  uint32_t type;
  int fds[SYNC_MAX_FDS];
  size_t nfds = 0;
  int r = sync_recv(sync_fd, &type, NULL, 0, NULL, fds, &nfds, err);
  if (r > 0 && type == SYNC_LAYER_FD && nfds == 1) {
    *out = fds[0];
    return 0;
  }
  for (size_t i = 0; i < nfds; i++)
    close(fds[i]);
  if (r < 0)
    return -1; /* the child's own error, naming its step */
  return hutch_error_set(err, EPROTO, "sandbox setup: expected the build's layer directory (got %s)",
                         r == 0 ? "EOF" : "another message");
}

int sandbox_start(const struct hutch_sandbox_config *cfg, const struct hutch_process *primary, struct started *out,
                  hutch_error_t *err) {
  *out = (struct started){.state_fd = -1,
                          .pidfd = -1,
                          .sync_fd = -1,
                          .layer_fd = -1,
                          .root_fd = {-1, -1},
                          .pty_fd = -1,
                          .cg = {.fd = -1},
                          .net = {.proxy_pid = -1, .channel = -1}};
  if (cfg->policy == NULL)
    return hutch_error_set(err, EINVAL, "sandbox: no policy");
  if (cfg->rootfs == NULL)
    return hutch_error_set(err, EINVAL, "sandbox: no rootfs");
  /* Everything the child needs is prepared here, before clone: the child
   * inherits it in memory, and nothing is compiled on its side. */
  const void *bpf;
  size_t bpf_len;
  struct hutch_policy *policy = (struct hutch_policy *)cfg->policy;
  _cleanup_free_ char *state_path = NULL;
  out->state_fd = state_open_root(cfg->state_dir, &state_path, err);
  if (out->state_fd < 0)
    return -1;
  /* The cache's key is in the state directory: opened first.  Without the
   * key nothing cached can be trusted: compile. */
  uint8_t cache_key[STATE_CACHE_KEY_SIZE];
  hutch_error_t key_err = NULL;
  bool have_key = state_cache_key(out->state_fd, cache_key, &key_err) == 0;
  if (!have_key) {
    hutch_debug("%s: %s: not using the seccomp cache", key_err->msg, strerror(key_err->errnum));
    hutch_error_free(&key_err);
  }
  int r = policy_seccomp_program(policy, have_key ? cache_key : NULL, &bpf, &bpf_len, err);
  explicit_bzero(cache_key, sizeof(cache_key));
  if (r < 0)
    return -1;
  _cleanup_free_ struct file_id *bind_ids = NULL;
  if (protected_check_binds(cfg, state_path, &bind_ids, err) < 0)
    return -1;
  const struct idmap_set *maps;
  if (idmap_for_caller(&maps, err) < 0)
    return -1;
  struct idmap_set single;
  if (maps->kind == IDMAP_SUBORDINATE && !cfg->rootfs_subordinate_ids) {
    /* Nothing in the image belongs to ids 1..65535, and nothing in the
     * sandbox can make them appear (no CAP_CHOWN, no CAP_SETUID): uid 0
     * alone is the same sandbox, without running newuidmap and newgidmap,
     * two setuid programs that cost more than the rest of the start. */
    idmap_single(maps, &single);
    maps = &single;
  }
  if (cfg->rootfs_subordinate_ids && maps->kind == IDMAP_SINGLE) {
    /* Its files would belong to ids this user namespace cannot map: they
     * would show up as nobody and be unwritable even for root inside. */
    hutch_error_set(err, EPERM,
                    "user namespace: image %s was unpacked with a subordinate id range, and there is "
                    "none for this user now (or newuidmap/newgidmap are missing)",
                    cfg->image ? cfg->image : cfg->rootfs);
    return hutch_error_hint(err, "give the user a range (as root: usermod --add-subuids 100000-165535 "
                                 "--add-subgids 100000-165535 USER) and install the uidmap package; or "
                                 "`hutch rootfs rm` the image and import it again with the single mapping");
  }
  state_new_id(out->id);
  /* The writable layer goes on the sandbox's size-limited tmpfs
   * (contain.c: step_sandbox_tmpfs), one-shot or long-lived.  An image
   * build's layer and a one-shot --keep's are copied out of it at the end
   * (layer_copy.c).  Two stay on the host's disk, not bounded by [limits]
   * disk ("disk unbounded", announced): a long-lived --keep, which `hutch
   * rm` leaves behind from another process, and --overlay fuse, whose
   * daemon stays in hutch's mount namespace (overlay_fuse.c), where the
   * child's tmpfs does not exist. */
  bool scratch = !(cfg->keep && primary == NULL) && cfg->overlay != HUTCH_OVERLAY_FUSE;
  uint64_t disk =
      cfg->limits.disk ? cfg->limits.disk : limits_or_default(policy->settings.limits.disk, LIMITS_DEFAULT_DISK);
  const char *why_on_disk = cfg->overlay == HUTCH_OVERLAY_FUSE ? "--overlay fuse" : "create --keep";
  /* overlayfs keeps its own xattrs (user.overlay.*) in the upper layer,
   * which tmpfs takes from Linux 6.6 on.  Before that the layer goes on the
   * host's disk: refused where the limit is the user's (--disk) or the
   * policy's never to drop (required = yes, fallback = refuse); otherwise
   * degraded, as the policy's fallback allows for the other limits. */
  if (scratch && disk != LIMITS_UNLIMITED && !kernel_at_least(6, 6)) {
    const struct policy_limits *pl = &policy->settings.limits;
    if (cfg->limits.disk || pl->required || pl->fallback == LIMITS_FALLBACK_REFUSE) {
      hutch_error_set(err, EOPNOTSUPP,
                      "resource limits: %s cannot be applied here: the sandbox's writable layer needs a tmpfs with "
                      "user xattrs (Linux 6.6 or later)",
                      cfg->limits.disk ? "--disk" : "[limits] disk");
      return hutch_error_hint(err, "upgrade the kernel to 6.6 or later; or drop the limit (--disk, or [limits] "
                                   "disk = max) to keep the layer on the host's disk");
    }
    scratch = false;
    why_on_disk = "Linux before 6.6";
  }
  bool disk_unbounded = !scratch && disk != LIMITS_UNLIMITED;
  if (disk_unbounded)
    hutch_warn("degraded mode \"%s\" (%s): the writable layer is on the host's disk, not within "
               "[limits] disk; /tmp and /dev/shm are",
               HUTCH_DEGRADED_DISK_UNBOUNDED, why_on_disk);
  /* The daemon is given one lower tree: a built image without its base
   * would be a different (broken) root, so refuse rather than start it. */
  if (cfg->overlay == HUTCH_OVERLAY_FUSE && cfg->rootfs_lowers && cfg->rootfs_lowers[0]) {
    hutch_error_set(err, ENOTSUP,
                    "--overlay fuse: image %s is a layer over another image (hutch rootfs build), "
                    "which fuse-overlayfs is not given here",
                    cfg->image ? cfg->image : cfg->rootfs);
    return hutch_error_hint(err, "run it with the kernel's overlayfs (without --overlay fuse)");
  }
  _cleanup_close_ int sbfd = state_create_sandbox_dir(out->state_fd, out->id, !scratch, err);
  if (sbfd < 0)
    return -1;
  _cleanup_free_ char *sbpath = xasprintf("%s/%s", state_path, out->id);
  _cleanup_free_ char *upper = xasprintf("%s/upper", sbpath);
  _cleanup_free_ char *work = xasprintf("%s/work", sbpath);
  _cleanup_free_ char *root = xasprintf("%s/root", sbpath);
  _cleanup_close_ int listen_fd = -1;
  if (primary == NULL && (listen_fd = bind_control_socket(sbfd, err)) < 0)
    goto fail_dir;
  if (net_host_prepare(&out->net, cfg, policy, out->state_fd, sbpath, out->id, err) < 0)
    goto fail_dir;
  struct limits_plan plan;
  limits_plan_make(&cfg->limits, &policy->settings.limits, &plan);
  plan.nproc_exempt = maps->kind == IDMAP_ROOT;
  struct limits_rlimits rlimits;
  double cg_start = monotonic_seconds();
  if (cgroup_setup_limits(&plan, out->id, primary ? primary->timeout : 0, &out->cg, &rlimits, &out->limits, err) < 0)
    goto fail_dir;
  out->limits.disk_unbounded = disk_unbounded;
  out->cg_setup_seconds = monotonic_seconds() - cg_start;

  /* The proxy's variables come before the caller's --env, which may
   * override them. */
  const char *const *layers[] = {default_env, (const char *const *)out->net.env, cfg->env,
                                 primary ? primary->env : NULL};
  char **sandbox_env = env_merge(layers, 3);
  char **primary_env = env_merge(layers, 4);
  struct payload_spec primary_spec = {0};
  if (primary) {
    primary_spec = (struct payload_spec){
        .argv = (char *const *)primary->argv,
        .envp = primary_env,
        .workdir = primary->workdir,
        .stdio = {primary->stdio[0], primary->stdio[1], primary->stdio[2]},
        .bpf = bpf,
        .bpf_len = bpf_len,
        .nofile = policy->settings.nofile,
        .tty = primary->tty,
    };
    pty_relay_size(primary, &primary_spec.rows, &primary_spec.cols);
  }

  static pthread_once_t caller_strings_once = PTHREAD_ONCE_INIT;
  pthread_once(&caller_strings_once, read_caller_strings);
  int sp[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0) {
    hutch_error_sys(err, "sync socket");
    goto fail_env;
  }
  struct contain_config cc = {
      .lower = cfg->rootfs,
      .lowers = cfg->rootfs_lowers,
      .build_caps = cfg->build_caps,
      .upper = upper,
      .work = work,
      .root = root,
      .sandbox_dir = sbpath,
      .scratch_dir = scratch ? sbpath : NULL,
      .send_layer = scratch && (cfg->build_caps || cfg->keep),
      .disk = disk,
      .hostname = cfg->hostname ? cfg->hostname : policy->settings.hostname,
      .binds = cfg->binds,
      .bind_ids = bind_ids,
      .n_binds = cfg->n_binds,
      .groups_mapped = maps->setgroups_allowed && idmap_to_host(&maps->gid, 5) >= 0,
      .proc_host_ro = cfg->proc_host_ro,
      .overlay_fuse = cfg->overlay == HUTCH_OVERLAY_FUSE,
      .fuse_fd = -1,
      .long_lived = primary == NULL,
      .rlimits = rlimits,
      .own_cgroup = out->cg.fd >= 0,
      .net = out->net.sandbox,
      .caller_strings = {caller_strings[0], caller_strings[1], caller_strings[2], caller_strings[3]},
      .init =
          {
              .parent_fd = sp[1],
              .die_with_creator = cfg->die_with_creator,
              .listen_fd = listen_fd,
              .sandbox_env = sandbox_env,
              .bpf = bpf,
              .bpf_len = bpf_len,
              .nofile = policy->settings.nofile,
              .primary = primary ? &primary_spec : NULL,
          },
  };
  bool in_cgroup = false;
  out->pid = clone_sandbox(&out->pidfd, out->cg.fd, &in_cgroup);
  if (out->pid < 0) {
    hutch_error_sys(err, "create the sandbox's namespaces (clone)");
    const char *hint = userns_failure_hint(errno);
    if (hint)
      hutch_error_hint(err, "%s", hint);
    close(sp[0]);
    close(sp[1]);
    goto fail_env;
  }
  if (out->pid == 0) {
    close(sp[0]);
    contain_main(&cc);
  }
  close(sp[1]);
  out->sync_fd = sp[0];
  strv_free(sandbox_env);
  strv_free(primary_env);
  sandbox_env = primary_env = NULL;

  if (out->cg.fd >= 0 && !in_cgroup && cgroup_enter(out->cg.path, out->pid, err) < 0)
    goto fail_child;
  if (userns_write_maps(out->pid, maps, err) < 0)
    goto fail_child;
  if (sync_send(out->sync_fd, SYNC_GO, NULL, 0, NULL, 0, err) < 0)
    goto fail_child;
  if (cfg->overlay == HUTCH_OVERLAY_FUSE &&
      overlay_fuse_host_start(out->sync_fd, out->pid, cfg->rootfs, upper, work, sbfd, &out->fuse, err) < 0)
    goto fail_child;
  if (cc.send_layer && receive_layer(out->sync_fd, &out->layer_fd, err) < 0)
    goto fail_child;
  /* The proxy starts up while the child sets the sandbox up. */
  if (net_host_spawn_proxy(&out->net, primary == NULL, err) < 0 ||
      (out->net.enabled && start_proxy(out, primary == NULL, err) < 0))
    goto fail_child;
  uint32_t want = primary ? SYNC_STARTED : SYNC_READY;
  struct sync_started started;
  /* A one-shot's answer carries a pidfd of the payload (unused here) and,
   * with a pty, its master; a long-lived one's its root and userns. */
  int started_fds[2] = {-1, -1};
  if (sync_expect_fds(out->sync_fd, want, primary ? &started : NULL, primary ? sizeof(started) : 0, NULL,
                      primary ? started_fds : out->root_fd, 2, "sandbox setup", err) < 0)
    goto fail_child;
  if (started_fds[0] >= 0)
    close(started_fds[0]);
  out->pty_fd = started_fds[1];
  if (net_host_proxy_ready(&out->net, err) < 0)
    goto fail_child;

  struct sandbox_state st = {
      .pid = out->pid,
      .start_time = proc_stat_start_time(out->pid),
      .created = time(NULL),
      .long_lived = primary == NULL,
      .keep = cfg->keep,
      .proc_host_ro = cfg->proc_host_ro,
      .overlay_fuse = cfg->overlay == HUTCH_OVERLAY_FUSE,
      .fuse = out->fuse,
      .image = (char *)cfg->image,
      .workdir = (char *)cfg->workdir,
      .rootfs = (char *)cfg->rootfs,
      .limits = out->limits,
      .net =
          {
              .proxy = out->net.enabled,
              .proxy_pid = out->net.proxy_pid,
              .proxy_start_time = out->net.proxy_start_time,
              .audit_log = out->net.audit_log,
          },
  };
  snprintf(st.id, sizeof(st.id), "%s", out->id);
  snprintf(st.net.gateway, sizeof(st.net.gateway), "%s", out->net.gateway);
  snprintf(st.net.address, sizeof(st.net.address), "%s", out->net.address);
  if (state_write(sbfd, &st, err) < 0)
    goto fail_child;
  /* Recorded: a long-lived sandbox may now outlive its creator (init.c). */
  if (primary == NULL && (sync_send(out->sync_fd, SYNC_GO, NULL, 0, NULL, 0, err) < 0 ||
                          sync_expect(out->sync_fd, SYNC_READY, NULL, 0, NULL, "hand the sandbox over", err) < 0))
    goto fail_child;
  return 0;

fail_child:
  point_to_doctor(err);
  kill_and_reap(out->pid, out->pidfd);
  goto fail_dir;
fail_env:
  point_to_doctor(err);
  strv_free(sandbox_env);
  strv_free(primary_env);
fail_dir:
  net_host_abort(&out->net);
  overlay_fuse_stop(&out->fuse, 1);
  if (out->cg.path)
    cgroup_remove(out->cg.path, NULL);
  if (!cfg->keep)
    state_remove_sandbox_dir(out->state_fd, out->id, NULL);
  started_release(out);
  return -1;
}

void sandbox_fill_exit(struct hutch_exit *out, const struct sync_exit *ex) {
  out->status = ex->status;
  out->signal = ex->signal;
  if (ex->oom_limit) {
    /* The memory watchdog of the rlimits fallback: as the OOM killer's end. */
    out->usage.oom_killed = true;
    out->usage.oom_kills = 1;
    out->usage.memory_max = ex->oom_limit;
  }
  if (ex->failure_stage == PAYLOAD_EXEC) {
    out->exec_errno = ex->failure_errno ? ex->failure_errno : ENOEXEC;
    snprintf(out->failure, sizeof(out->failure), "%s", ex->failure);
  } else if (ex->failure_stage != 0) {
    out->setup_failed = true;
    _cleanup_free_ char *why = hutch_errno_format(ex->failure_errno, "%.400s", ex->failure);
    snprintf(out->failure, sizeof(out->failure), "%s", why);
  }
}

/* Wait for SYNC_EXIT on fd while forwarding signals and watching the
 * timeout; on expiry `on_timeout` kills the process. */
static int wait_for_exit(int fd, double timeout, struct forwarder *fw, struct pty_relay *relay,
                         int (*on_timeout)(void *), void *data, int (*forward)(void *, int), struct hutch_exit *out,
                         double start, hutch_error_t *err) {
  bool killed = false;
  for (;;) {
    int wait_ms = -1;
    if (timeout > 0 && !killed) {
      double left = start + timeout - monotonic_seconds();
      wait_ms = left <= 0 ? 0 : (int)(left * 1000) + 1;
    }
    struct pollfd pfd[2 + PTY_RELAY_POLLFDS] = {{fd, POLLIN, 0}, {fw->fd, POLLIN, 0}};
    size_t n_relay = pty_relay_fill(relay, pfd + 2);
    int n = poll(pfd, 2 + n_relay, wait_ms);
    if (n < 0 && errno != EINTR)
      return hutch_error_sys(err, "wait for the sandbox");
    if (n == 0 && timeout > 0 && !killed) {
      killed = true;
      out->timed_out = true;
      if (on_timeout(data) < 0)
        return hutch_error_sys(err, "kill the sandbox after its timeout");
      continue;
    }
    if (pfd[1].revents & POLLIN) {
      int sig = forwarder_read(fw);
      if (sig > 0)
        forward(data, sig);
      /* The parent-death signal (hutch_die_with_parent) ends the process
       * even when it ignores SIGTERM; the caller then cleans up as ever. */
      if (sig > 0 && !killed && sandbox_parent_died()) {
        killed = true;
        out->signal = SIGKILL;
        if (on_timeout(data) < 0)
          return hutch_error_sys(err, "kill the sandbox after its caller's death");
      }
    }
    if (n > 0)
      pty_relay_step(relay, pfd + 2, n_relay);
    if (pfd[0].revents & (POLLIN | POLLHUP | POLLERR)) {
      struct sync_exit ex;
      int r = sync_expect(fd, SYNC_EXIT, &ex, sizeof(ex), NULL, "wait for the process", err);
      if (r < 0)
        return -1;
      sandbox_fill_exit(out, &ex);
      pty_relay_drain(relay, 100); /* its last words */
      return 0;
    }
  }
}

struct run_ctx {
  int sync_fd;
  int pidfd;
  pid_t pid;
};

static int run_timeout(void *data) {
  struct run_ctx *c = data;
  /* The whole sandbox goes: init's death kills its pid namespace. */
  if (c->pidfd >= 0)
    return (int)syscall(SYS_pidfd_send_signal, c->pidfd, SIGKILL, NULL, 0);
  return kill(c->pid, SIGKILL);
}

static int run_forward(void *data, int sig) {
  struct run_ctx *c = data;
  /* init forwards it to the process group of the payload. */
  return kill(c->pid, sig);
}

int hutch_run(const struct hutch_sandbox_config *cfg, const struct hutch_process *proc, struct hutch_exit *out,
              hutch_error_t *err) {
  memset(out, 0, sizeof(*out));
  double start = monotonic_seconds();
  struct forwarder fw = {.fd = -1};
  if (!proc->keep_caller_signals && forwarder_start(&fw, err) < 0)
    return -1;
  struct started s;
  if (sandbox_start(cfg, proc, &s, err) < 0) {
    forwarder_stop(&fw);
    return -1;
  }
  snprintf(out->id, sizeof(out->id), "%s", s.id);
  out->limits = s.limits;
  struct run_ctx ctx = {s.sync_fd, s.pidfd, s.pid};
  struct pty_relay relay;
  hutch_error_t relay_err = NULL;
  if (pty_relay_begin(&relay, proc, steal_fd(&s.pty_fd), &relay_err) < 0)
    run_timeout(&ctx); /* killed: it would run with nobody at its terminal */
  int r = wait_for_exit(s.sync_fd, proc->timeout, &fw, &relay, run_timeout, &ctx, run_forward, out, start, err);
  pty_relay_stop(&relay);
  if (relay_err != NULL) {
    hutch_error_free(err);
    if (err != NULL)
      *err = steal_pointer(&relay_err);
    hutch_error_free(&relay_err);
    r = -1;
  }
  if (r < 0 && (out->timed_out || sandbox_parent_died())) {
    /* Killed on timeout or with its caller before init could report: that is the report. */
    hutch_error_free(err);
    out->signal = SIGKILL;
    r = 0;
  }
  int wstatus;
  while (waitpid(s.pid, &wstatus, 0) < 0 && errno == EINTR)
    ;
  /* The sandbox's mount namespace is gone with init: the daemon flushes
   * and exits by itself, before the upper layer is removed. */
  overlay_fuse_stop(&s.fuse, 2);
  forwarder_stop(&fw);
  /* Before the state directory goes: the audit log may be in it. */
  net_host_finish(&s.net, &out->net);
  if (s.cg.path) {
    /* Everything in the sandbox is gone with its init: what the cgroup
     * counted is the whole sandbox's, and final. */
    cgroup_read_usage(s.cg.path, &out->usage);
    if (r < 0 && out->usage.oom_kills > 0 && WIFSIGNALED(wstatus) && WTERMSIG(wstatus) == SIGKILL) {
      /* The OOM killer chose init itself: still an out-of-memory end. */
      hutch_error_free(err);
      out->signal = SIGKILL;
      r = 0;
    }
    out->usage.oom_killed = out->usage.oom_kills > 0 && out->signal == SIGKILL && !out->timed_out;
    hutch_error_t cg_err = NULL;
    double rm_start = monotonic_seconds();
    if (cgroup_remove(s.cg.path, &cg_err) < 0) {
      hutch_log_error(HUTCH_LOG_WARNING, cg_err);
      hutch_error_free(&cg_err);
    }
    hutch_debug("cgroup %s: %.3f ms to set up, %.3f ms to remove", s.cg.path, s.cg_setup_seconds * 1e3,
                (monotonic_seconds() - rm_start) * 1e3);
  }
  if (r < 0) {
    if (WIFSIGNALED(wstatus))
      hutch_error_wrap(err, "the sandbox's init was killed by signal %d", WTERMSIG(wstatus));
  }
  if (cfg->keep && s.layer_fd >= 0) {
    /* --keep: the upper layer, from the tmpfs it was bounded on. */
    _cleanup_free_ char *rel = xasprintf("%s/upper", s.id);
    _cleanup_free_ char *path = xasprintf("/proc/self/fd/%d/%s", s.state_fd, rel);
    hutch_error_t copy_err = NULL;
    if (mkdirat(s.state_fd, rel, 0700) < 0 || layer_copy_out(s.layer_fd, path, &copy_err) < 0) {
      if (copy_err == NULL)
        hutch_error_sys(&copy_err, "create %s", rel);
      hutch_error_wrap(&copy_err, "--keep: the upper layer could not be kept");
      hutch_log_error(HUTCH_LOG_WARNING, copy_err);
      hutch_error_free(&copy_err);
    }
  }
  if (!cfg->keep) {
    hutch_error_t cleanup_err = NULL;
    if (state_remove_sandbox_dir(s.state_fd, s.id, &cleanup_err) < 0) {
      _cleanup_free_ char *why = hutch_error_format(cleanup_err);
      hutch_warn("%s (`hutch rm %s` retries)", why, s.id);
      hutch_error_free(&cleanup_err);
    }
  }
  started_release(&s);
  out->wall_seconds = monotonic_seconds() - start;
  return r;
}
