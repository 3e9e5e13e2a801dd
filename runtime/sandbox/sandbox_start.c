/* SPDX-License-Identifier: Apache-2.0 */
/* The host side of a sandbox's start: an ordered list of named steps
 * (sandbox_start, at the end), the counterpart of the child's in
 * contain.c (contain_main).  A failed step hands the half-made sandbox
 * to the one teardown (teardown.c). */
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
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>

#include "audit_sandbox.h"
#include "cdi.h"
#include "cgroup.h"
#include "clone.h"
#include "config_capture.h"
#include "contain.h"
#include "init_exec.h"
#include "idmap.h"
#include "names.h"
#include "net_host.h"
#include "layer_copy.h"
#include "orphan_sweep.h"
#include "overlay_fuse.h"
#include "paths.h"
#include "payload.h"
#include "policy.h"
#include "port_relay.h"
#include "proc_stat.h"
#include "protected.h"
#include "pty_relay.h"
#include "request.h"
#include "state.h"
#include "subnet.h"
#include "sync.h"
#include "teardown.h"
#include "user_spec.h"
#include "util.h"

static const char *const default_env[] = {
    "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "HOME=/root",
    "LANG=C.UTF-8",
    NULL,
};
/* With a user, HOME is that user's (contain/identity.c) unless set. */
static const char *const default_env_user[] = {
    "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "LANG=C.UTF-8",
    NULL,
};

/* The bounds of this process's argument and environment strings, which the
 * sandbox's init (a fork, not an exec) wipes: read once per process, since
 * they do not move. */
static uint64_t caller_strings[4];
static void read_caller_strings(void) {
  _cleanup_free_ char *text = proc_stat_read(0);
  if (text == NULL || !proc_stat_parse(text, PROC_STAT_ARG_START, 4, caller_strings))
    memset(caller_strings, 0, sizeof(caller_strings));
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
  /* What the sandbox's own /etc/passwd or /etc/group says (--user) is the
   * image's matter, not this host's: its hint says what to give instead. */
  if (strstr((*err)->msg, "the sandbox's /etc/"))
    return;
  if ((*err)->hint) {
    _cleanup_free_ char *hint = steal_pointer(&(*err)->hint);
    hutch_error_hint(err, "%s; `hutch doctor` checks what this host allows", hint);
  } else {
    hutch_error_hint(err, "run `hutch doctor`: it tries each step of a sandbox start on this host and names the fix");
  }
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

void teardown_from_started(struct teardown *t, struct started *s) {
  *t = (struct teardown){
      .state_fd = s->state_fd,
      .pid = s->pid,
      .pidfd = s->pidfd,
      .child = true,
      .fuse = s->fuse,
      .fuse_grace = 2,
      .cgroup = s->cg.path,
      .cg_setup_seconds = s->cg_setup_seconds,
      .net = &s->net,
  };
  snprintf(t->id, sizeof(t->id), "%s", s->id);
  if (s->net.enabled && s->net.audit_log)
    snprintf(t->proxy_log, sizeof(t->proxy_log), "%s", s->net.audit_log);
  t->end_reason = "start failed";
}

/* What the steps of a start hand on to each other.  What a teardown must
 * undo (the process, the state directory, the cgroup, the proxy and the
 * /30) is in `out`, the started sandbox. */
struct start {
  pid_t clone_helper; /* a multi-threaded caller's clone helper, to reap (clone_sandbox_helped) */
  const struct hutch_sandbox_config *cfg;
  const struct hutch_process *primary;   /* NULL: a long-lived sandbox */
  const struct hutch_sandbox_extras *x;  /* a long-lived one's name and labels, or NULL */
  const struct start_identity *identity; /* a reset: the identity it keeps, else NULL */
  const struct start_seed *seed;         /* a fork's child: its parent's layer, else NULL */
  struct hutch_policy *policy;
  struct started *out;
  /* devices: cfg is dev_cfg, the caller's (asked) with the devices' binds
   * and env; the config record keeps the caller's, as a reset resolves
   * the devices again */
  struct cdi_resolved devices;
  struct hutch_sandbox_config dev_cfg;
  const struct hutch_sandbox_config *asked;
  /* prepare */
  char *state_path;
  const void *bpf;
  size_t bpf_len;
  struct file_id *bind_ids;
  cJSON *config; /* a long-lived one's creation record (config_record.h) */
  const struct idmap_set *maps;
  struct idmap_set single;
  struct user_spec user; /* hutch_sandbox_extras.user, parsed */
  /* reserve */
  bool scratch;
  uint64_t disk;
  bool disk_unbounded;
  int sbfd;
  char *sbpath, *upper, *work, *root;
  int listen_fd;
  bool name_claimed;
  struct limits_rlimits rlimits;
  /* spawn */
  bool spawning; /* from here a failure is most likely the host's */
  bool in_cgroup;
  bool send_layer;
};

/* devices (--device): resolved and checked first of all (cdi.h); their
 * mounts and env become part of the configuration the steps use, so that
 * the mounts pass the checks every bind does. */
static int prepare_devices(struct start *st, hutch_error_t *err) {
  if (st->x == NULL || st->x->devices == NULL || st->x->devices[0] == NULL)
    return 0;
  if (cdi_resolve(st->cfg, st->x->devices, &st->devices, &st->dev_cfg, err) < 0)
    return -1;
  st->cfg = &st->dev_cfg;
  return 0;
}

/* The single mapping needs no helper and no privilege: the child writes
 * it itself (contain.c: step_wait_for_id_maps) and waits for no GO, unless
 * the parent must move it into its cgroup first (no CLONE_INTO_CGROUP). */
static bool child_writes_maps(const struct start *st) {
  return st->maps->kind == IDMAP_SINGLE && (st->out->cg.fd < 0 || st->in_cgroup);
}

static void start_free(struct start *st) {
  while (st->clone_helper > 0 && waitpid(st->clone_helper, NULL, 0) < 0 && errno == EINTR)
    ;
  st->clone_helper = 0;
  free(st->state_path);
  free(st->bind_ids);
  cJSON_Delete(st->config);
  st->config = NULL;
  free(st->sbpath);
  free(st->upper);
  free(st->work);
  free(st->root);
  cdi_resolved_clear(&st->devices);
  if (st->sbfd >= 0)
    close(st->sbfd);
  if (st->listen_fd >= 0)
    close(st->listen_fd);
}

/* --user: its syntax (hutch_sandbox_extras_check has said it is right),
 * and what it cannot go with. */
static int prepare_user(struct start *st, hutch_error_t *err) {
  if (user_spec_parse(st->x ? st->x->user : NULL, &st->user, err) < 0)
    return -1;
  if (st->user.set && st->cfg->build_caps)
    return hutch_error_set(err, EINVAL, "an image build runs as root of its sandbox: no user");
  /* Root of the sandbox is what a sandbox runs as anyway. */
  if (user_spec_is_root(&st->user))
    st->user.set = false;
  return 0;
}

/* The ids a spec gives by number are checked before anything starts; a
 * name's, by the child once it has read the sandbox's /etc/passwd. */
static int prepare_user_mapped(struct start *st, hutch_error_t *err) {
  const struct user_spec *u = &st->user;
  if (u->uid_numeric && idmap_to_host(&st->maps->uid, u->uid) < 0)
    hutch_error_set(err, EINVAL, "user %s: uid %u is not mapped in the sandbox's user namespace", st->x->user, u->uid);
  else if (u->group_given && u->gid_numeric && idmap_to_host(&st->maps->gid, u->gid) < 0)
    hutch_error_set(err, EINVAL, "user %s: gid %u is not mapped in the sandbox's user namespace", st->x->user, u->gid);
  else
    return 0;
  return hutch_error_hint(err, "a sandbox maps ids 0 to 65535: give one of those");
}

/* prepare: everything the child needs is made here, before clone: the
 * child inherits it in memory, and nothing is compiled on its side.  The
 * configuration is checked, the seccomp program compiled (or taken from
 * the cache; it then belongs to the policy, so a program that starts
 * many sandboxes with one policy compiles it once), the network policy
 * resolved, the --bind sources checked against what hutch protects and
 * the id maps chosen.  Nothing exists yet that a teardown would undo,
 * except the open state root. */
static int step_prepare(struct start *st, hutch_error_t *err) {
  if (prepare_devices(st, err) < 0)
    return -1;
  const struct hutch_sandbox_config *cfg = st->cfg;
  struct started *out = st->out;
  if (cfg->policy == NULL)
    return hutch_error_set(err, EINVAL, "sandbox: no policy");
  if (cfg->rootfs == NULL)
    return hutch_error_set(err, EINVAL, "sandbox: no rootfs");
  st->policy = (struct hutch_policy *)cfg->policy;
  out->state_fd = state_open_root(cfg->state_dir, &st->state_path, err);
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
  int r = policy_seccomp_program(st->policy, have_key ? cache_key : NULL, &st->bpf, &st->bpf_len, err);
  explicit_bzero(cache_key, sizeof(cache_key));
  if (r < 0)
    return -1;
  /* --net proxy: the network policy and --allow/--resolve, checked
   * before anything of the sandbox exists. */
  if (net_host_resolve(&out->net, cfg, st->policy, err) < 0)
    return -1;
  if (protected_check_binds(cfg, st->state_path, &st->bind_ids, err) < 0)
    return -1;
  if (prepare_user(st, err) < 0)
    return -1;
  bool other_ids = st->user.set;
  if (idmap_for_sandbox(cfg->rootfs_subordinate_ids || other_ids, &st->maps, err) < 0)
    return -1;
  if (other_ids && st->maps->kind == IDMAP_SINGLE) {
    hutch_error_set(err, EPERM,
                    "user %s: a sandbox of this user maps one id (its root), so it cannot run as another: there "
                    "is no subordinate id range for this user (or newuidmap/newgidmap are missing)",
                    st->x->user);
    return hutch_error_hint(err, "give the user a range in /etc/subuid and /etc/subgid (as root: usermod "
                                 "--add-subuids 100000-165535 --add-subgids 100000-165535 USER) and install the "
                                 "uidmap package; or run as root of the sandbox (no user)");
  }
  if (other_ids && prepare_user_mapped(st, err) < 0)
    return -1;
  if (st->maps->kind == IDMAP_SUBORDINATE && !cfg->rootfs_subordinate_ids && !other_ids) {
    /* Nothing in the image belongs to ids 1..65535, and nothing in the
     * sandbox can make them appear (no CAP_CHOWN, no CAP_SETUID): uid 0
     * alone is the same sandbox, without running newuidmap and newgidmap,
     * two setuid programs that cost more than the rest of the start. */
    idmap_single(st->maps, &st->single);
    st->maps = &st->single;
  }
  if (cfg->rootfs_subordinate_ids && st->maps->kind == IDMAP_SINGLE) {
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
  /* A long-lived sandbox's configuration goes into its state.json, which
   * the record step writes anyway: what a reset starts again from.  Too
   * large a record is refused here, before anything exists. */
  if (st->primary == NULL && config_capture(st->asked, st->x, &st->config, err) < 0)
    return -1;
  return 0;
}

/* Where the writable layer goes, refused or announced before anything is
 * made.  It goes on the sandbox's size-limited tmpfs (contain.c:
 * step_sandbox_tmpfs), one-shot or long-lived.  An image build's layer and
 * a one-shot --keep's are copied out of it at the end (layer_copy.c).  Two
 * stay on the host's disk, not bounded by [limits] disk ("disk
 * unbounded", announced): a long-lived --keep, which `hutch rm` leaves
 * behind from another process, and --overlay fuse, whose daemon stays in
 * hutch's mount namespace (overlay_fuse.c), where the child's tmpfs does
 * not exist. */
static int step_choose_layer(struct start *st, hutch_error_t *err) {
  const struct hutch_sandbox_config *cfg = st->cfg;
  st->scratch = !(cfg->keep && st->primary == NULL) && cfg->overlay != HUTCH_OVERLAY_FUSE;
  st->disk =
      cfg->limits.disk ? cfg->limits.disk : limits_or_default(st->policy->settings.limits.disk, LIMITS_DEFAULT_DISK);
  const char *why_on_disk = cfg->overlay == HUTCH_OVERLAY_FUSE ? "--overlay fuse" : "create --keep";
  /* overlayfs keeps its own xattrs (user.overlay.*) in the upper layer,
   * which tmpfs takes from Linux 6.6 on.  Before that the layer goes on the
   * host's disk: refused where the limit is the user's (--disk) or the
   * policy's never to drop (required = yes, fallback = refuse); otherwise
   * degraded, as the policy's fallback allows for the other limits. */
  if (st->scratch && st->disk != LIMITS_UNLIMITED && !kernel_at_least(6, 6)) {
    const struct policy_limits *pl = &st->policy->settings.limits;
    if (cfg->limits.disk || pl->required || pl->fallback == LIMITS_FALLBACK_REFUSE) {
      hutch_error_set(err, EOPNOTSUPP,
                      "resource limits: %s cannot be applied here: the sandbox's writable layer needs a tmpfs with "
                      "user xattrs (Linux 6.6 or later)",
                      cfg->limits.disk ? "--disk" : "[limits] disk");
      return hutch_error_hint(err, "upgrade the kernel to 6.6 or later; or drop the limit (--disk, or [limits] "
                                   "disk = max) to keep the layer on the host's disk");
    }
    st->scratch = false;
    why_on_disk = "Linux before 6.6";
  }
  st->disk_unbounded = !st->scratch && st->disk != LIMITS_UNLIMITED;
  if (st->disk_unbounded)
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
  /* A fork's seed is copied by the child before it mounts the kernel's
   * overlay; fuse-overlayfs's daemon serves a layer the child never
   * writes (sandbox_fork.c refuses such a parent first). */
  if (st->seed && cfg->overlay == HUTCH_OVERLAY_FUSE)
    return hutch_error_set(err, EOPNOTSUPP, "--overlay fuse: a fork's layer cannot be seeded");
  return 0;
}

/* reserve: what the sandbox holds on the host, each undone by the
 * teardown: its id and state directory, the control socket a long-lived
 * one is reached on, the network policy and /30 (--net proxy), the
 * cgroup and its limits. */
static int step_reserve(struct start *st, hutch_error_t *err) {
  const struct hutch_sandbox_config *cfg = st->cfg;
  struct started *out = st->out;
  if (st->identity) {
    /* A reset: the directory, its name and its audit log stay the sandbox's. */
    snprintf(out->id, sizeof(out->id), "%s", st->identity->id);
    st->sbfd = sandbox_reuse_dir(out->state_fd, out->id, !st->scratch, err);
  } else {
    /* What killed one-shots left is removed by the next (a state
     * directory a caller reuses would otherwise only grow). */
    if (st->primary != NULL)
      sandbox_orphan_sweep(out->state_fd);
    state_new_id(out->id);
    st->sbfd = state_create_sandbox_dir(out->state_fd, out->id, !st->scratch, err);
    out->dir_made = st->sbfd >= 0;
  }
  if (st->sbfd < 0)
    return -1;
  /* Until step_record: this process makes it, so a start killed from here
   * on is removed by the next listing (state.h: maker). */
  if (!st->identity && state_write_maker(st->sbfd, "", err) < 0)
    return -1;
  /* Before the clone: a name already taken costs no start.  After the
   * directory: a claim always points to one (names_claim). */
  if (st->x && st->x->name && !st->identity) {
    if (names_claim(out->state_fd, st->x->name, out->id, err) < 0)
      return -1;
    st->name_claimed = true;
  }
  st->sbpath = xasprintf("%s/%s", st->state_path, out->id);
  st->upper = xasprintf("%s/upper", st->sbpath);
  st->work = xasprintf("%s/work", st->sbpath);
  st->root = xasprintf("%s/root", st->sbpath);
  if (st->primary == NULL && (st->listen_fd = bind_control_socket(st->sbfd, err)) < 0)
    return -1;
  if (net_host_reserve(&out->net, cfg, out->state_fd, st->sbpath, out->id, err) < 0)
    return -1;
  struct limits_plan plan;
  limits_plan_make(&cfg->limits, &st->policy->settings.limits, &plan);
  plan.nproc_exempt = st->maps->kind == IDMAP_ROOT;
  double cg_start = monotonic_seconds();
  if (cgroup_setup_limits(&plan, out->id, st->primary ? st->primary->timeout : 0, &out->cg, &st->rlimits, &out->limits,
                          err) < 0)
    return -1;
  out->limits.disk_unbounded = st->disk_unbounded;
  out->cg_setup_seconds = monotonic_seconds() - cg_start;
  /* ... with the cgroup it made, which that removal takes too. */
  if (!st->identity && out->limits.cgroup[0] && state_write_maker(st->sbfd, out->limits.cgroup, err) < 0)
    return -1;
  /* Every start on such a host would say it: once a day is enough to be
   * seen (hutch doctor, --json and state.json say it every time). */
  if (out->limits.warning[0] && !plan.fallback_quiet && state_stamp_due(out->state_fd, STATE_STAMP_NO_CGROUP))
    hutch_warn("%s", out->limits.warning);
  return 0;
}

/* The primary command's stdio, which its sandbox inherits (an fd of -1:
 * the caller's own 0-2): none may be a directory (stdio_refuse_directory). */
static int step_check_stdio(struct start *st, hutch_error_t *err) {
  for (int i = 0; st->primary && i < 3; i++)
    if (stdio_refuse_directory(st->primary->stdio[i] >= 0 ? st->primary->stdio[i] : i, i, err) < 0)
      return -1;
  return 0;
}

/* spawn: clone the child into its namespaces (and, where the kernel can,
 * straight into its cgroup); it runs contain_main's steps (contain.c) and
 * waits for the handshake.  Its configuration is in its copy of memory. */
static int step_spawn(struct start *st, hutch_error_t *err) {
  const struct hutch_sandbox_config *cfg = st->cfg;
  const struct hutch_process *primary = st->primary;
  struct started *out = st->out;
  st->spawning = true;
  /* The proxy's variables come before the caller's --env, which may
   * override them. */
  const char *const *layers[] = {st->user.set ? default_env_user : default_env, (const char *const *)out->net.env,
                                 cfg->env, primary ? primary->env : NULL};
  _cleanup_strv_ char **sandbox_env = env_merge(layers, 3);
  _cleanup_strv_ char **primary_env = env_merge(layers, 4);
  struct payload_spec primary_spec = {0};
  if (primary) {
    primary_spec = (struct payload_spec){
        .argv = (char *const *)primary->argv,
        .envp = primary_env,
        .workdir = primary->workdir,
        .stdio = {primary->stdio[0], primary->stdio[1], primary->stdio[2]},
        .bpf = st->bpf,
        .bpf_len = st->bpf_len,
        .nofile = st->policy->settings.nofile,
        .tty = primary->tty,
    };
    pty_relay_size(primary, &primary_spec.rows, &primary_spec.cols);
  }
  static pthread_once_t caller_strings_once = PTHREAD_ONCE_INIT;
  pthread_once(&caller_strings_once, read_caller_strings);
  int sp[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0)
    return hutch_error_sys(err, "sync socket");
  st->send_layer = st->scratch && (cfg->build_caps || cfg->keep);
  /* A long-lived init becomes hutch-init once handed over (init_exec.h). */
  _cleanup_free_ char *init_exe = primary == NULL ? init_exec_path() : NULL;
  if (primary == NULL && init_exe == NULL)
    hutch_debug("no %s beside hutch or in %s: the sandbox's init stays a fork of hutch", INIT_EXEC_NAME,
                HUTCH_LIBEXECDIR);
  struct contain_config cc = {
      .lower = cfg->rootfs,
      .lowers = cfg->rootfs_lowers,
      .build_caps = cfg->build_caps,
      .upper = st->upper,
      .work = st->work,
      .root = st->root,
      .sandbox_dir = st->sbpath,
      .scratch_dir = st->scratch ? st->sbpath : NULL,
      .send_layer = st->send_layer,
      .seeded = st->seed != NULL,
      .disk = st->disk,
      .hostname = cfg->hostname ? cfg->hostname : st->policy->settings.hostname,
      .binds = cfg->binds,
      .bind_ids = st->bind_ids,
      .n_binds = cfg->n_binds,
      .groups_mapped = st->maps->setgroups_allowed && idmap_to_host(&st->maps->gid, 5) >= 0,
      .proc_host_ro = cfg->proc_host_ro,
      .read_only_root = cfg->read_only_root,
      .overlay_fuse = cfg->overlay == HUTCH_OVERLAY_FUSE,
      .fuse_fd = -1,
      .long_lived = primary == NULL,
      /* A fork's seeded upper is the parent's, not hutch's: its /etc may
       * be anything the parent made of it (contain.c: step_etc_in_upper). */
      .etc_in_upper = !cfg->keep && !cfg->build_caps && cfg->overlay != HUTCH_OVERLAY_FUSE && st->seed == NULL,
      .rlimits = st->rlimits,
      .own_cgroup = out->cg.fd >= 0,
      .net = out->net.sandbox,
      .caller_strings = {caller_strings[0], caller_strings[1], caller_strings[2], caller_strings[3]},
      .init_exe = init_exe,
      .identity = {.spec = st->user, .maps = st->maps},
      .devices = st->devices.names ? &st->devices.plan : NULL,
      .init =
          {
              .parent_fd = sp[1],
              .die_with_creator = cfg->die_with_creator,
              .listen_fd = st->listen_fd,
              .exec_fd = -1,
              .memwatch_fd = -1,
              .scratch_fd = -1,
              .netns_fd = -1,
              .sandbox_env = sandbox_env,
              .bpf = st->bpf,
              .bpf_len = st->bpf_len,
              .nofile = st->policy->settings.nofile,
              .primary = primary ? &primary_spec : NULL,
          },
  };
  out->pid = clone_sandbox(&out->pidfd, out->cg.fd, &st->in_cgroup, &st->clone_helper);
  if (out->pid < 0) {
    hutch_error_sys(err, "create the sandbox's namespaces (clone)");
    const char *hint = userns_failure_hint(errno);
    if (hint)
      hutch_error_hint(err, "%s", hint);
    close(sp[0]);
    close(sp[1]);
    return -1;
  }
  if (out->pid == 0) {
    close(sp[0]);
    cc.own_maps = child_writes_maps(st) ? st->maps : NULL;
    contain_main(&cc);
  }
  close(sp[1]);
  out->sync_fd = sp[0];
  return 0;
}

/* A fork's child: the parent's layer sent (the caller pauses the parent as
 * it hands it over), and the caller told once the child has copied it. */
static int send_seed(struct start *st, hutch_error_t *err) {
  int fd = st->seed->take(st->seed->data, err);
  if (fd < 0)
    return -1;
  hutch_error_t send_err = NULL;
  int r = sync_send(st->out->sync_fd, SYNC_SEED, NULL, 0, &fd, 1, &send_err);
  close(fd);
  if (r == 0)
    return 0;
  /* A child that failed on its way to the copy has said why: that is the
   * error, not the socket it closed. */
  uint32_t type;
  if (sync_recv(st->out->sync_fd, &type, NULL, 0, NULL, NULL, NULL, err) < 0) {
    hutch_error_free(&send_err);
    return -1;
  }
  hutch_error_move(err, &send_err);
  return -1;
}

static int wait_seeded(struct start *st, hutch_error_t *err) {
  if (sync_expect(st->out->sync_fd, SYNC_SEEDED, NULL, 0, NULL, "fork: copy the parent's layer", err) < 0)
    return -1;
  return st->seed->copied(st->seed->data, err);
}

/* handshake: the child waits for its cgroup and id maps, then for GO; a
 * fork's child for its parent's layer, which it copies; it asks for a
 * fuse-overlayfs daemon, sends an image build's layer and the proxy's
 * listener, and says when it is set up (one-shot: the payload started;
 * long-lived: init ready). */
static int step_handshake(struct start *st, hutch_error_t *err) {
  const struct hutch_sandbox_config *cfg = st->cfg;
  const struct hutch_process *primary = st->primary;
  struct started *out = st->out;
  if (out->cg.fd >= 0 && !st->in_cgroup && cgroup_enter(out->cg.path, out->pid, err) < 0)
    return -1;
  if (!child_writes_maps(st) &&
      (userns_write_maps(out->pid, st->maps, err) < 0 || sync_send(out->sync_fd, SYNC_GO, NULL, 0, NULL, 0, err) < 0))
    return -1;
  if (st->seed && send_seed(st, err) < 0)
    return -1;
  if (cfg->overlay == HUTCH_OVERLAY_FUSE &&
      overlay_fuse_host_start(out->sync_fd, out->pid, cfg->rootfs, st->upper, st->work, st->sbfd, &out->fuse, err) < 0)
    return -1;
  if (st->send_layer && receive_layer(out->sync_fd, &out->layer_fd, err) < 0)
    return -1;
  /* The proxy starts up while the child sets the sandbox up. */
  if (net_host_spawn_proxy(&out->net, primary == NULL, err) < 0 || (st->seed && wait_seeded(st, err) < 0) ||
      (out->net.enabled && start_proxy(out, primary == NULL, err) < 0))
    return -1;
  uint32_t want = primary ? SYNC_STARTED : SYNC_READY;
  struct sync_started started;
  /* A one-shot's answer carries a pidfd of the payload (unused here) and,
   * with a pty, its master; a long-lived one's its root and userns. */
  int started_fds[2] = {-1, -1};
  void *payload = primary ? (void *)&started : &out->held;
  size_t cap = primary ? sizeof(started) : sizeof(out->held);
  if (sync_expect_fds(out->sync_fd, want, payload, cap, NULL, primary ? started_fds : out->root_fd, 2, "sandbox setup",
                      err) < 0)
    return -1;
  if (started_fds[0] >= 0)
    close(started_fds[0]);
  out->pty_fd = started_fds[1];
  return net_host_proxy_ready(&out->net, err);
}

/* record: state.json, which `hutch ps`, `exec --in` and `hutch rm` read;
 * then a long-lived sandbox is handed over: it may now outlive its
 * creator (init.c). */
static int step_record(struct start *st, hutch_error_t *err) {
  const struct hutch_sandbox_config *cfg = st->cfg;
  struct started *out = st->out;
  const struct start_identity *id = st->identity;
  struct sandbox_state rec = {
      .pid = out->pid,
      .start_time = proc_stat_start_time(out->pid),
      .created = id ? id->created : time(NULL),
      .long_lived = st->primary == NULL,
      .keep = cfg->keep,
      /* A one-shot dies with this process; so does one made to die with its creator. */
      .owner_pid = st->primary != NULL || cfg->die_with_creator ? getpid() : 0,
      .owner_start_time = st->primary != NULL || cfg->die_with_creator ? proc_stat_start_time(getpid()) : 0,
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
      .live = {.name = st->x ? (char *)st->x->name : NULL,
               .labels = st->x ? (char **)st->x->labels : NULL,
               .config = st->config,
               .devices = st->devices.names,
               .held = out->held,
               .forked_from = st->seed ? (char *)st->seed->forked_from : NULL},
  };
  if (id) {
    /* What else its state held goes on (state_live.h). */
    rec.live = *id->live;
    rec.live.name = st->x ? (char *)st->x->name : NULL;
    rec.live.labels = st->x ? (char **)st->x->labels : NULL;
    rec.live.generation = id->generation;
    rec.live.config = st->config;
    /* The new incarnation's own: its devices resolved again, the fds its
     * new init holds. */
    rec.live.devices = st->devices.names;
    rec.live.held = out->held;
  }
  snprintf(rec.id, sizeof(rec.id), "%s", out->id);
  snprintf(rec.net.gateway, sizeof(rec.net.gateway), "%s", out->net.gateway);
  snprintf(rec.net.address, sizeof(rec.net.address), "%s", out->net.address);
  if (state_write(st->sbfd, &rec, err) < 0)
    return -1;
  state_drop_maker(st->sbfd); /* state.json says what it said, and more */
  /* No log, no sandbox: a long-lived one is not handed over without it; a
   * one-shot's command, running now, is recorded when it ends. */
  _cleanup_strv_ char **ports = st->x ? ports_strv(st->x->ports, st->x->n_ports) : NULL;
  if (id ? id->audit(st->sbfd, out, id->audit_data, err) < 0
         : audit_sandbox_start(st->sbfd, out->id, cfg, st->policy, &out->limits, &out->net, st->primary == NULL,
                               rec.live.name, (const char *const *)rec.live.labels, &st->devices,
                               (const char *const *)ports, rec.live.forked_from, st->user.set ? st->x->user : NULL,
                               err) < 0)
    return -1;
  if (st->primary == NULL && (sync_send(out->sync_fd, SYNC_GO, NULL, 0, NULL, 0, err) < 0 ||
                              sync_expect(out->sync_fd, SYNC_READY, NULL, 0, NULL, "hand the sandbox over", err) < 0))
    return -1;
  return 0;
}

static int start(const struct hutch_sandbox_config *cfg, const struct hutch_sandbox_extras *x,
                 const struct hutch_process *primary, const struct start_identity *identity,
                 const struct start_seed *seed, struct started *out, hutch_error_t *err) {
  *out = (struct started){.state_fd = -1,
                          .pid = -1,
                          .pidfd = -1,
                          .sync_fd = -1,
                          .layer_fd = -1,
                          .root_fd = {-1, -1},
                          .held = {-1, -1},
                          .pty_fd = -1,
                          .cg = {.fd = -1},
                          .net = {.proxy_pid = -1, .channel = -1}};
  struct start st = {.cfg = cfg,
                     .asked = cfg,
                     .primary = primary,
                     .x = x,
                     .identity = identity,
                     .seed = seed,
                     .out = out,
                     .sbfd = -1,
                     .listen_fd = -1};

  /* Each step's time goes to the debug log (HUTCH_DEBUG): where a start's
   * milliseconds go, on the host that runs it. */
#define STEP(name)                                                                                                     \
  do {                                                                                                                 \
    double t0 = monotonic_seconds();                                                                                   \
    int r = name(&st, err);                                                                                            \
    hutch_debug("start: %s %.3f ms", #name, (monotonic_seconds() - t0) * 1e3);                                         \
    if (r < 0)                                                                                                         \
      goto fail;                                                                                                       \
  } while (0)

  STEP(step_check_stdio);
  STEP(step_prepare);
  STEP(step_choose_layer);
  STEP(step_reserve);
  STEP(step_spawn);
  STEP(step_handshake);
  STEP(step_record);
#undef STEP
  start_free(&st);
  return 0;

fail:
  /* From the clone on, a failure is most likely this host's (hutch doctor
   * names the fix); before, the configuration's. */
  if (st.spawning)
    point_to_doctor(err);
  /* Given back first, so that it never points to a directory gone. */
  if (st.name_claimed)
    names_release(out->state_fd, x->name, out->id);
  start_free(&st);
  struct teardown t;
  teardown_from_started(&t, out);
  t.fuse_grace = 1;
  t.keep = cfg->keep || !out->dir_made;
  t.audit_done = identity != NULL; /* a reset's failure is the reset's to record */
  t.best_effort = true;
  sandbox_teardown(&t, NULL);
  started_release(out);
  return -1;
}

int sandbox_start(const struct hutch_sandbox_config *cfg, const struct hutch_sandbox_extras *x,
                  const struct hutch_process *primary, struct started *out, hutch_error_t *err) {
  return start(cfg, x, primary, NULL, NULL, out, err);
}

int sandbox_start_as(const struct hutch_sandbox_config *cfg, const struct hutch_sandbox_extras *x,
                     const struct start_identity *identity, struct started *out, hutch_error_t *err) {
  return start(cfg, x, NULL, identity, NULL, out, err);
}

int sandbox_start_seeded(const struct hutch_sandbox_config *cfg, const struct hutch_sandbox_extras *x,
                         const struct start_seed *seed, struct started *out, hutch_error_t *err) {
  return start(cfg, x, NULL, NULL, seed, out, err);
}
