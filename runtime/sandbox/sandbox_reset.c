/* SPDX-License-Identifier: Apache-2.0 */
/* hutch_sandbox_reset: a live sandbox started again, as a new incarnation
 * under its identity.  Its init is killed (every namespace, and whatever
 * lived in one, goes with it: processes, the tmpfs of the writable layer,
 * /tmp and /dev/shm, SysV IPC), its proxy, fuse daemon and cgroup stopped,
 * and a sandbox started from the configuration recorded at its creation
 * (config_record.h) with its id, state directory, name, labels and audit
 * log kept, its generation one more.  Nothing is cleared kind by kind, so
 * no kind is forgotten.  Its published ports, whose relay ends with the
 * old init, are bound again (the same host ports) and relayed to the new
 * one.
 *
 * Everything that can be refused (the record, the policy's fingerprint,
 * the image's tree, a die_with_creator sandbox) is checked before the old
 * incarnation is stopped.  The whole reset holds the state's lock
 * (state_lock): a second reset, or a handle following this one, waits. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef P_PIDFD
#define P_PIDFD 3 /* waitid() on a pidfd, Linux 5.4 */
#endif

#include "audit.h"
#include "audit_proxy.h"
#include "config_capture.h"
#include "config_record.h"
#include "idmap.h"
#include "keeper.h"
#include "pause_ptrace.h"
#include "policy.h"
#include "port_relay.h"
#include "proc_stat.h"
#include "sandbox.h"
#include "sandbox_internal.h"
#include "state.h"
#include "teardown.h"
#include "util.h"

static const char *const layer_dirs[] = {"upper", "work", "root"};

static int remove_in_userns(void *data, hutch_error_t *err) {
  const char *path = data;
  if (remove_tree_at(AT_FDCWD, path) < 0 && errno != ENOENT)
    return hutch_error_sys(err, "remove %s", path);
  return 0;
}

/* A layer on the host's disk (--keep, --overlay fuse): removed whole.
 * Files the sandbox's other users made belong to subordinate ids, which
 * only root of a namespace with the same maps may remove (as state.c). */
static int clear_disk_layer(int dirfd, const char *id, hutch_error_t *err) {
  for (size_t i = 0; i < ARRAY_SIZE(layer_dirs); i++) {
    if (remove_tree_at(dirfd, layer_dirs[i]) == 0 || errno == ENOENT)
      continue;
    if (errno != EACCES && errno != EPERM)
      return hutch_error_sys(err, "reset %s: remove its %s/", id, layer_dirs[i]);
    const struct idmap_set *maps;
    _cleanup_free_ char *dir = fd_path(dirfd);
    if (dir == NULL || idmap_for_caller(&maps, err) < 0)
      return hutch_error_wrap(err, "reset %s: remove its %s/", id, layer_dirs[i]);
    _cleanup_free_ char *abs = xasprintf("%s/%s", dir, layer_dirs[i]);
    if (userns_run(maps, 0, remove_in_userns, abs, err) < 0)
      return hutch_error_wrap(err, "reset %s", id);
  }
  return 0;
}

int sandbox_reuse_dir(int rootfd, const char *id, bool layers, hutch_error_t *err) {
  int fd = openat(rootfd, id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0)
    return hutch_error_sys(err, "state directory: open sandbox dir %s", id);
  if (unlinkat(fd, "ctl.sock", 0) < 0 && errno != ENOENT) {
    hutch_error_sys(err, "state directory: remove %s/ctl.sock", id);
    close(fd);
    return -1;
  }
  for (size_t i = 0; layers && i < ARRAY_SIZE(layer_dirs); i++) {
    if (mkdirat(fd, layer_dirs[i], 0755) < 0) {
      hutch_error_sys(err, "state directory: create %s/%s", id, layer_dirs[i]);
      close(fd);
      return -1;
    }
  }
  return fd;
}

/* ---- the audit log ---- */

/* The proxy's log of the incarnation that ended, joined now: the next one
 * writes a log of its own.  A log outside the state directory (one the
 * creator named) stays where it is, and is joined whole at the end. */
static void join_proxy_log(int dirfd, const char *path) {
  struct audit_log log;
  hutch_error_t err = NULL;
  if (audit_log_open(dirfd, AUDIT_LOG_NAME, &log, &err) < 0) {
    hutch_log_error(HUTCH_LOG_WARNING, err);
    hutch_error_free(&err);
    return;
  }
  struct audit_batch b;
  audit_batch_init(&b, &log);
  audit_proxy_join(&b, path);
  audit_batch_flush(&b);
  audit_batch_free(&b);
  audit_log_close(&log);
}

struct reset_audit {
  uint64_t generation;
  const char *image, *to;
  const char *paused; /* the pause it was in, or NULL */
  double stop_ms;
  const char *error; /* a failed reset: why */
};

static void fill_reset(struct audit_rec *r, const struct reset_audit *a) {
  audit_rec_init(r, "reset");
  audit_rec_caller(r);
  audit_rec_u64(r, "generation", a->generation);
  audit_rec_str(r, "image", a->image);
  audit_rec_str(r, "to", a->to);
  audit_rec_str(r, "paused", a->paused);
  audit_rec_double(r, "stop_ms", a->stop_ms);
  audit_rec_str(r, "error", a->error);
}

/* The record step's (sandbox_start.c): before the new init is handed over. */
static int audit_reset(int sbfd, const struct started *s, void *data, hutch_error_t *err) {
  struct audit_rec r;
  fill_reset(&r, data);
  audit_rec_str(&r, "limits", s->limits.mode);
  audit_rec_str(&r, "network", s->net.enabled ? "proxy" : "none");
  int rc = audit_append(sbfd, AUDIT_LOG_NAME, 0, &r, err);
  audit_rec_free(&r);
  return rc;
}

static void audit_failed_reset(int dirfd, struct reset_audit *a, const hutch_error_t err) {
  _cleanup_free_ char *why = hutch_error_format(err);
  a->error = why;
  struct audit_rec r;
  fill_reset(&r, a);
  hutch_error_t aerr = NULL;
  if (audit_append(dirfd, AUDIT_LOG_NAME, 0, &r, &aerr) < 0) {
    hutch_log_error(HUTCH_LOG_WARNING, aerr);
    hutch_error_free(&aerr);
  }
  audit_rec_free(&r);
  a->error = NULL;
}

/* ---- the handles ---- */

static void close_fd(int *fd) {
  if (*fd >= 0)
    close(*fd);
  *fd = -1;
}

/* sb's objects of the old incarnation let go: asked for again when needed.
 * An init that was this process's child (its creator's handle, reset from
 * elsewhere) is reaped through the pidfd, so no zombie stays; anyone
 * else's child gives ECHILD. */
static void forget_init(struct hutch_sandbox *sb) {
  if (sb->init_pidfd >= 0) {
    siginfo_t si;
    while (waitid((idtype_t)P_PIDFD, (id_t)sb->init_pidfd, &si, WEXITED | WNOHANG) < 0 && errno == EINTR)
      ;
  }
  close_fd(&sb->init_pidfd);
  close_fd(&sb->root_fd);
  close_fd(&sb->userns_fd);
  close_fd(&sb->layer_fd);
  sandbox_proc_release_pool(sb);
}

static void set_str(char **dst, const char *src) {
  free(*dst);
  *dst = src ? xstrdup(src) : NULL;
}

/* The state read under its lock, which the caller holds. */
static bool follow_reset_locked(struct hutch_sandbox *sb) {
  hutch_error_t ignored = NULL;
  struct sandbox_state st;
  if (state_read(sb->state_fd, sb->id, &st, &ignored) < 0) {
    hutch_error_free(&ignored);
    return false;
  }
  bool follow = (st.pid != sb->pid || st.start_time != sb->start_time) && state_is_running(&st);
  if (follow) {
    hutch_debug("sandbox %s: following its reset (generation %llu, init pid %d)", sb->id,
                (unsigned long long)st.live.generation, (int)st.pid);
    forget_init(sb);
    sb->pid = st.pid;
    sb->start_time = st.start_time;
    sb->limits = st.limits;
    set_str(&sb->workdir, st.workdir);
    set_str(&sb->audit_log, st.net.proxy ? st.net.audit_log : NULL);
  }
  state_clear(&st);
  return follow;
}

bool sandbox_follow_reset(struct hutch_sandbox *sb) {
  /* Under the lock: a reset under way is waited for. */
  hutch_error_t ignored = NULL;
  _cleanup_close_ int lock = state_lock(sb->state_fd, sb->id, &ignored);
  if (lock < 0) {
    hutch_error_free(&ignored);
    return false;
  }
  return follow_reset_locked(sb);
}

static bool init_ended(const struct hutch_sandbox *sb) {
  if (sb->init_pidfd >= 0) {
    struct pollfd p = {.fd = sb->init_pidfd, .events = POLLIN};
    return poll(&p, 1, 0) > 0;
  }
  return !proc_stat_alive(sb->pid, sb->start_time);
}

void sandbox_follow_if_ended(struct hutch_sandbox *sb) {
  if (init_ended(sb))
    sandbox_follow_reset(sb);
}

void sandbox_follow_if_ended_locked(struct hutch_sandbox *sb) {
  /* The state lock is a flock of the directory: taken again on a second
   * descriptor by the process that holds it, it would wait for ever. */
  if (init_ended(sb))
    follow_reset_locked(sb);
}

/* ---- the reset ---- */

/* What a reset needs before it stops anything, taken from the state. */
struct plan {
  struct sandbox_state st;
  struct config_record rec;
  struct hutch_policy *policy;
  struct hutch_sandbox_config cfg;
  struct hutch_sandbox_extras x;
  char **env; /* --to: the image's Env under the recorded one */
  char *state_path;
  struct hutch_pause_status paused;
};

static void plan_clear(struct plan *p) {
  state_clear(&p->st);
  config_record_clear(&p->rec);
  hutch_policy_free(p->policy);
  cleanup_strvp(&p->env);
  free(p->state_path);
}

static int make_plan(struct hutch_sandbox *sb, const struct hutch_reset_options *o, struct plan *p,
                     hutch_error_t *err) {
  if (state_read(sb->state_fd, sb->id, &p->st, err) < 0)
    return -1;
  if (!p->st.long_lived)
    return hutch_error_set(err, EINVAL, "sandbox %s is a one-shot sandbox", sb->id);
  if (config_record_decode(p->st.live.config, sb->id, &p->rec, err) < 0)
    return -1;
  p->cfg = p->rec.cfg;
  /* Its init dies with the thread that starts it: that must be its creator. */
  if (p->cfg.die_with_creator && state_is_running(&p->st)) {
    _cleanup_free_ char *text = proc_stat_read(p->st.pid);
    uint64_t ppid = 0;
    if (text == NULL || !proc_stat_parse(text, 4, 1, &ppid) || (pid_t)ppid != getpid()) {
      hutch_error_set(err, EPERM, "sandbox %s dies with the program that created it; only that program may reset it",
                      sb->id);
      return hutch_error_hint(err, "reset it through the handle of the program that made it, or recreate it");
    }
  }
  if (hutch_policy_load(p->rec.policy_path, &p->policy, err) < 0)
    return hutch_error_wrap(err, "reset %s", sb->id);
  p->cfg.policy = p->policy;
  char fp[CONFIG_FINGERPRINT_LEN];
  if (config_capture_fingerprint(&p->cfg, fp, err) < 0 || config_record_check_policy(&p->rec, fp, sb->id, err) < 0)
    return hutch_error_wrap(err, "reset %s", sb->id);
  const struct hutch_image *to = o ? o->to : NULL;
  if (to) {
    if (to->rootfs == NULL)
      return hutch_error_set(err, EINVAL, "reset %s: the image to reset to has no tree", sb->id);
    p->cfg.rootfs = to->rootfs;
    p->cfg.rootfs_lowers = (const char *const *)to->lowers;
    p->cfg.image = to->name ? to->name : to->digest;
    p->cfg.workdir = to->workdir;
    p->cfg.rootfs_subordinate_ids = to->ids_preserved;
    p->env = hutch_image_env(to, p->rec.cfg.env);
    p->cfg.env = (const char *const *)p->env;
  }
  /* An image removed since (`hutch rootfs rm`) is refused now, not by the
   * child's mount once the old incarnation is gone. */
  size_t n_lowers = 0;
  while (p->cfg.rootfs_lowers && p->cfg.rootfs_lowers[n_lowers])
    n_lowers++;
  for (size_t i = 0; i <= n_lowers; i++) {
    const char *tree = i == 0 ? p->cfg.rootfs : p->cfg.rootfs_lowers[i - 1];
    if (faccessat(AT_FDCWD, tree, F_OK, 0) < 0) {
      hutch_error_sys(err, "reset %s: image %s: its tree %s", sb->id, p->cfg.image ? p->cfg.image : "?", tree);
      return hutch_error_hint(err, "the image was removed from the store: reset it to another with --to IMAGE");
    }
  }
  /* The name and labels it has now; the rest of the extras as recorded. */
  p->x = p->rec.x;
  p->x.name = p->st.live.name;
  p->x.labels = (const char *const *)p->st.live.labels;
  if ((p->state_path = fd_path(sb->state_fd)) == NULL)
    return hutch_error_sys(err, "reset %s: the state directory's path", sb->id);
  p->cfg.state_dir = p->state_path;
  if (hutch_sandbox_pause_status(p->state_path, sb->id, &p->paused, err) < 0)
    return -1;
  return 0;
}

/* The old incarnation stopped: init (and with it every process and mount
 * of the sandbox), fuse, the proxy and its /30, the cgroup; the pause it
 * was in, the proxy's log joined, a layer on disk removed. */
static int stop_incarnation(struct hutch_sandbox *sb, struct plan *p, int dirfd, hutch_error_t *err) {
  struct teardown t;
  teardown_from_state(&t, sb->state_fd, &p->st);
  t.name = NULL;       /* the name stays */
  t.keep = true;       /* and the directory */
  t.audit_done = true; /* and the log, with no end */
  if (sandbox_teardown(&t, err) < 0)
    return hutch_error_wrap(err, "reset %s: stop it", sb->id);
  unlinkat(dirfd, "paused", 0);
  unlinkat(dirfd, PAUSE_SOCK, 0);
  if (p->st.net.proxy && p->rec.cfg.net_audit_log == NULL && p->st.net.audit_log) {
    join_proxy_log(dirfd, p->st.net.audit_log);
    unlinkat(dirfd, "proxy.log", 0);
  }
  if (faccessat(dirfd, "upper", F_OK, AT_SYMLINK_NOFOLLOW) == 0 && clear_disk_layer(dirfd, sb->id, err) < 0)
    return -1;
  return 0;
}

/* The new incarnation ended again, as the old one was (stop_incarnation),
 * when what it was promised cannot be kept: its published ports. */
static void stop_new_incarnation(struct hutch_sandbox *sb, int dirfd) {
  struct sandbox_state st;
  hutch_error_t e = NULL;
  if (state_read(sb->state_fd, sb->id, &st, &e) == 0) {
    struct teardown t;
    teardown_from_state(&t, sb->state_fd, &st);
    t.name = NULL;
    t.keep = true;
    t.audit_done = true;
    if (sandbox_teardown(&t, &e) == 0)
      unlinkat(dirfd, "paused", 0);
    state_clear(&st);
  }
  if (e) {
    hutch_log_error(HUTCH_LOG_WARNING, e);
    hutch_error_free(&e);
  }
  forget_init(sb);
}

/* A time limit's keeper ends with the init it watched; the limit goes on
 * across the reset (its deadline is kept in the state), so a new keeper
 * watches the new init.  Failing that, the next listing or open after the
 * deadline still acts on it (ttl_expire.c), hence a warning, not an error. */
static void keep_time_limit(struct hutch_sandbox *sb, int lock) {
  struct sandbox_state st;
  hutch_error_t e = NULL;
  if (state_read(sb->state_fd, sb->id, &st, &e) == 0 && ttl_active(&st.live.ttl) &&
      (keeper_ensure(sb->state_fd, &st, &e) < 0 || state_write(lock, &st, &e) < 0))
    hutch_warn("sandbox %s: after its reset, no keeper watches its time limit (%s)", sb->id, e ? e->msg : "?");
  hutch_error_free(&e);
  state_clear(&st);
}

int hutch_sandbox_reset(struct hutch_sandbox *sb, const struct hutch_reset_options *o, hutch_error_t *err) {
  double t0 = monotonic_seconds();
  _cleanup_close_ int lock = state_lock(sb->state_fd, sb->id, err);
  if (lock < 0)
    return hutch_error_wrap(err, "reset sandbox %s", sb->id);
  struct plan p = {0};
  if (make_plan(sb, o, &p, err) < 0) {
    plan_clear(&p);
    return -1;
  }
  struct reset_audit a = {
      .generation = p.st.live.generation + 1,
      .image = p.cfg.image,
      .to = o && o->to ? p.cfg.image : NULL,
      .paused = p.paused.paused ? hutch_pause_method_name(p.paused.method) : NULL,
  };
  double t_stop = monotonic_seconds();
  if (stop_incarnation(sb, &p, lock, err) < 0) {
    audit_failed_reset(lock, &a, *err);
    plan_clear(&p);
    return -1;
  }
  a.stop_ms = (monotonic_seconds() - t_stop) * 1e3;
  /* Its published ports end with the old init's relay: bound again, the
   * same host ports (what its url names), before the new one starts. */
  struct port_set ports = {0};
  port_set_close(&ports);
  if (p.x.n_ports && ports_bind(p.cfg.policy, p.x.ports, p.x.n_ports, &ports, err) < 0) {
    hutch_error_wrap(err, "reset sandbox %s: its published ports", sb->id);
    hutch_error_hint(err,
                     "another program took the port while the sandbox was reset; `hutch rm %s`, and create it "
                     "again",
                     sb->id);
    audit_failed_reset(lock, &a, *err);
    forget_init(sb);
    plan_clear(&p);
    return -1;
  }
  struct start_identity id = {
      .id = sb->id,
      .created = p.st.created,
      .live = &p.st.live,
      .generation = a.generation,
      .audit = audit_reset,
      .audit_data = &a,
  };
  struct started s;
  int r = sandbox_start_as(&p.cfg, &p.x, &id, &s, err);
  if (r < 0) {
    port_set_close(&ports);
    hutch_error_wrap(err, "reset sandbox %s", sb->id);
    audit_failed_reset(lock, &a, *err);
    forget_init(sb);
    plan_clear(&p);
    return -1;
  }
  /* This handle follows at once; the others when they next call. */
  forget_init(sb);
  sb->pid = s.pid;
  sb->start_time = proc_stat_start_time(s.pid);
  sb->init_pidfd = steal_fd(&s.pidfd);
  sb->root_fd = steal_fd(&s.root_fd[0]);
  sb->userns_fd = steal_fd(&s.root_fd[1]);
  sb->layer_fd = steal_fd(&s.layer_fd);
  sb->limits = s.limits;
  set_str(&sb->audit_log, s.net.enabled ? s.net.audit_log : NULL);
  set_str(&sb->workdir, p.cfg.workdir);
  started_release(&s);
  if (ports_publish(sb, &ports, lock, err) < 0) {
    port_set_close(&ports);
    hutch_error_wrap(err, "reset sandbox %s: its published ports", sb->id);
    audit_failed_reset(lock, &a, *err);
    stop_new_incarnation(sb, lock);
    plan_clear(&p);
    return -1;
  }
  keep_time_limit(sb, lock);
  hutch_debug("reset %s: %.3f ms (stop %.3f ms), generation %llu", sb->id, (monotonic_seconds() - t0) * 1e3, a.stop_ms,
              (unsigned long long)a.generation);
  plan_clear(&p);
  return 0;
}
