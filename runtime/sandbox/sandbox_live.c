/* SPDX-License-Identifier: Apache-2.0 */
/* Long-lived sandboxes (`hutch create`, `exec --in`, `rm`, `ps`): create,
 * open by id, init's control socket and the proof it asks (a process in
 * one is sandbox_proc.c's handle), remove, list.  The start itself is
 * sandbox.c. */
#include "config.h"

#include "sandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "audit_sandbox.h"
#include "cdi_ldconfig.h"
#include "cgroup.h"
#include "layer_copy.h"
#include "names.h"
#include "net_host.h"
#include "orphan_sweep.h"
#include "overlay_fuse.h"
#include "paths.h"
#include "port_relay.h"
#include "proc_stat.h"
#include "sandbox_fds.h"
#include "sandbox_internal.h"
#include "sandbox_ttl.h"
#include "ttl_expire.h"
#include "state.h"
#include "sync.h"
#include "teardown.h"
#include "util.h"

/* ---- long-lived sandboxes ---- */

int hutch_sandbox_create(const struct hutch_sandbox_config *cfg, struct hutch_sandbox **out, hutch_error_t *err) {
  return hutch_sandbox_create_with(cfg, NULL, out, err);
}

int hutch_sandbox_create_with(const struct hutch_sandbox_config *cfg, const struct hutch_sandbox_extras *x,
                              struct hutch_sandbox **out, hutch_error_t *err) {
  return sandbox_create_seeded(cfg, x, NULL, out, err);
}

int sandbox_create_seeded(const struct hutch_sandbox_config *cfg, const struct hutch_sandbox_extras *x,
                          const struct start_seed *seed, struct hutch_sandbox **out, hutch_error_t *err) {
  struct started s;
  struct port_set ports;
  struct hutch_sandbox_extras xc;
  struct hutch_port chosen[PORTS_MAX];
  /* The ports first: one in use starts nothing. */
  if (hutch_sandbox_extras_check(x, err) < 0 || ports_bind_extras(cfg, x, &ports, &xc, chosen, err) < 0)
    return -1;
  if (sandbox_start_seeded(cfg, x ? &xc : NULL, seed, &s, err) < 0) {
    port_set_close(&ports);
    return -1;
  }
  struct hutch_sandbox *sb = xcalloc(1, sizeof(*sb));
  sb->layer_fd = steal_fd(&s.layer_fd);
  snprintf(sb->id, sizeof(sb->id), "%s", s.id);
  sb->state_fd = steal_fd(&s.state_fd);
  sb->root_fd = steal_fd(&s.root_fd[0]);
  sb->userns_fd = steal_fd(&s.root_fd[1]);
  sb->pid = s.pid;
  sb->start_time = proc_stat_start_time(s.pid);
  sb->init_pidfd = steal_fd(&s.pidfd);
  sb->limits = s.limits;
  if (s.net.enabled)
    sb->audit_log = xstrdup(s.net.audit_log);
  sb->audit_copy = cfg->audit_copy ? xstrdup(cfg->audit_copy) : NULL;
  /* As hutch_sandbox_open() reads it from the state: a process that names
   * no working directory starts in the sandbox's. */
  if (cfg->workdir)
    sb->workdir = xstrdup(cfg->workdir);
  started_release(&s);
  if (ports_publish(sb, &ports, -1, err) < 0) {
    port_set_close(&ports);
    hutch_error_t ignored = NULL;
    hutch_sandbox_destroy(sb, &ignored);
    hutch_error_free(&ignored);
    return -1;
  }
  /* A limit that cannot be kept is no sandbox: none is left running
   * without the keeper it was promised. */
  if (x && x->ttl > 0 && sandbox_ttl_apply(sb, x->ttl, &x->on_ttl, seed ? "fork" : "create", err) < 0) {
    hutch_error_t ignored = NULL;
    hutch_sandbox_destroy(sb, &ignored);
    hutch_error_free(&ignored);
    return -1;
  }
  if (x && x->devices && x->devices[0] && !cfg->read_only_root)
    cdi_update_ld_cache(sb);
  *out = sb;
  return 0;
}

/* Open the state directory and read one sandbox's state (by id or name)
 * from it; returns the directory fd. */
static int read_sandbox_state(const char *state_dir, const char *what, struct sandbox_state *st, hutch_error_t *err) {
  char id[40];
  _cleanup_close_ int rootfd = state_open_root(state_dir, NULL, err);
  if (rootfd < 0 || names_resolve(rootfd, what, id, err) < 0 || state_read(rootfd, id, st, err) < 0)
    return -1;
  return steal_fd(&rootfd);
}

int hutch_sandbox_open(const char *state_dir, const char *what, struct hutch_sandbox **out, hutch_error_t *err) {
  struct sandbox_state st;
  _cleanup_close_ int rootfd = read_sandbox_state(state_dir, what, &st, err);
  if (rootfd < 0)
    return -1;
  if (sandbox_ttl_backstop(rootfd, &st) > 0) {
    /* Its limit ran out unwatched: removed now, or paused. */
    char was[40];
    snprintf(was, sizeof(was), "%s", st.id);
    state_clear(&st);
    hutch_error_t gone = NULL;
    if (state_read(rootfd, was, &st, &gone) < 0) {
      hutch_error_free(&gone);
      hutch_error_set(err, ENOENT, "sandbox %s: its time limit ran out (ttl expired); it is removed", was);
      return hutch_error_hint(err, "`hutch audit %s` shows its log", was);
    }
  }
  const char *id = st.id;
  bool running = state_is_running(&st);
  bool long_lived = st.long_lived;
  struct hutch_limits_status limits = st.limits;
  char *audit_log = steal_pointer(&st.net.audit_log);
  char *workdir = steal_pointer(&st.workdir);
  state_clear(&st);
  if (!running || !long_lived) {
    free(audit_log);
    free(workdir);
    hutch_error_set(err, ESRCH, "sandbox %s is %s", id, running ? "a one-shot sandbox" : "not running");
    return hutch_error_hint(
        err, running ? "only sandboxes made by `hutch create` accept `exec --in`" : "remove it with `hutch rm %s`", id);
  }
  struct hutch_sandbox *sb = xcalloc(1, sizeof(*sb));
  sb->layer_fd = -1;
  snprintf(sb->id, sizeof(sb->id), "%s", id);
  sb->state_fd = steal_fd(&rootfd);
  sb->root_fd = sb->userns_fd = sb->init_pidfd = -1; /* asked of its init, opened, when first needed */
  sb->pid = st.pid;
  sb->start_time = st.start_time;
  sb->limits = limits;
  sb->audit_log = audit_log;
  sb->workdir = workdir;
  *out = sb;
  return 0;
}

const char *hutch_sandbox_id(const struct hutch_sandbox *sb) {
  return sb->id;
}

const struct hutch_limits_status *hutch_sandbox_limits(const struct hutch_sandbox *sb) {
  return &sb->limits;
}

const char *hutch_sandbox_audit_log(const struct hutch_sandbox *sb) {
  return sb->audit_log;
}

void hutch_sandbox_close(struct hutch_sandbox *sb) {
  if (sb == NULL)
    return;
  if (sb->state_fd >= 0)
    close(sb->state_fd);
  if (sb->layer_fd >= 0)
    close(sb->layer_fd);
  if (sb->root_fd >= 0)
    close(sb->root_fd);
  if (sb->userns_fd >= 0)
    close(sb->userns_fd);
  if (sb->init_pidfd >= 0)
    close(sb->init_pidfd);
  sandbox_proc_release_pool(sb);
  audit_sink_unref(sb->audit_sink);
  free(sb->audit_log);
  free(sb->audit_copy);
  free(sb->workdir);
  free(sb);
}

int sandbox_connect_control(struct hutch_sandbox *sb, hutch_error_t *err) {
  int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return hutch_error_sys(err, "control socket: socket");
  struct sockaddr_un addr = {.sun_family = AF_UNIX};
  snprintf(addr.sun_path, sizeof(addr.sun_path), "/proc/self/fd/%d/%s/ctl.sock", sb->state_fd, sb->id);
  if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
    hutch_error_sys(err, "connect to sandbox %s", sb->id);
    close(fd);
    return -1;
  }
  return fd;
}

/* The proof init asks of a client (init.c: caller_is_hutch): a pidfd of
 * init itself.  Only a process whose pid namespace holds init's pid can
 * make one, that is hutch on the host side, never a sandbox next to this
 * one, which shares the user (and so passes SO_PEERCRED) but not the pid
 * namespace.  The start time rules out a pid reused since the record. */
int sandbox_init_pidfd(struct hutch_sandbox *sb, hutch_error_t *err) {
  sandbox_follow_if_ended(sb);
  if (sb->init_pidfd >= 0)
    return sb->init_pidfd; /* it pins that very process: no pid reuse to rule out */
  int pidfd = (int)syscall(SYS_pidfd_open, sb->pid, 0);
  if ((pidfd < 0 || proc_stat_start_time(sb->pid) != sb->start_time) && sandbox_follow_reset(sb)) {
    if (pidfd >= 0)
      close(pidfd);
    pidfd = (int)syscall(SYS_pidfd_open, sb->pid, 0);
  }
  if (pidfd < 0)
    return hutch_error_sys(err, "open sandbox %s's init (pid %d)", sb->id, (int)sb->pid);
  if (proc_stat_start_time(sb->pid) != sb->start_time) {
    close(pidfd);
    hutch_error_set(err, ESRCH, "sandbox %s is not running", sb->id);
    return hutch_error_hint(err, "remove it with `hutch rm %s`", sb->id);
  }
  sb->init_pidfd = pidfd;
  return pidfd;
}

int sandbox_root_fd(struct hutch_sandbox *sb, hutch_error_t *err) {
  sandbox_follow_if_ended(sb);
  if (sb->root_fd >= 0 && sb->userns_fd >= 0)
    return sb->root_fd;
  int fds[SANDBOX_INIT_FDS];
  if (sandbox_refuse_paused(sb, err) < 0 || sandbox_ask_init_fds(sb, fds, err) < 0)
    return hutch_error_wrap(err, "open the files of sandbox %s", sb->id);
  for (int i = 2; i < SANDBOX_INIT_FDS; i++)
    if (fds[i] >= 0)
      close(fds[i]);
  if (sb->root_fd >= 0)
    close(sb->root_fd);
  if (sb->userns_fd >= 0)
    close(sb->userns_fd);
  sb->root_fd = fds[0];
  sb->userns_fd = fds[1];
  return sb->root_fd;
}

/* The removal holds the sandbox's state lock (state.h), as a reset, a
 * fork's or a snapshot's copy, a pause and a resume do: one under way is
 * waited for, and the state read once it is done, so that a removal never
 * tears down half of what another caller is making (a reset's new init
 * left running with its directory gone, a copy whose layer went under
 * it).  The teardown takes no lock of its own (a time limit's expiry runs
 * it under this lock too). */
int hutch_sandbox_remove(const char *state_dir, const char *what, hutch_error_t *err) {
  char id[40];
  _cleanup_close_ int rootfd = state_open_root(state_dir, NULL, err);
  if (rootfd < 0 || names_resolve(rootfd, what, id, err) < 0)
    return -1;
  _cleanup_close_ int lock = state_lock(rootfd, id, err);
  struct sandbox_state st;
  if (lock < 0 || state_read(rootfd, id, &st, err) < 0)
    return -1;
  struct teardown t;
  teardown_from_state(&t, rootfd, &st);
  t.end_reason = state_is_running(&st) ? "removed" : "removed (its init had already ended)";
  int r = sandbox_teardown(&t, err);
  state_clear(&st);
  return r;
}

int hutch_sandbox_destroy(struct hutch_sandbox *sb, hutch_error_t *err) {
  /* Reset from elsewhere since: the init to kill is the new one. */
  sandbox_follow_if_ended(sb);
  /* Under the state lock, as hutch_sandbox_remove; a record that is gone
   * (its directory too) leaves the handle's own knowledge. */
  hutch_error_t ignored = NULL;
  _cleanup_close_ int lock = state_lock(sb->state_fd, sb->id, &ignored);
  hutch_error_free(&ignored);
  /* The fuse daemon and the proxy are in the record; init and the cgroup
   * are also known from the handle, which a lost record does not undo. */
  struct sandbox_state st = {.pid = sb->pid, .start_time = sb->start_time, .limits = sb->limits};
  bool recorded = state_read(sb->state_fd, sb->id, &st, &ignored) == 0;
  hutch_error_free(&ignored);
  /* A reset between the follow and the lock: its new incarnation is the
   * one the record names, and the one to end. */
  if (!recorded || !state_is_running(&st) || (st.pid == sb->pid && st.start_time == sb->start_time)) {
    st.pid = sb->pid;
    st.start_time = sb->start_time;
    st.limits = sb->limits;
  }
  st.net.proxy = recorded && sb->audit_log && st.net.proxy;
  if (!recorded)
    st.fuse = (struct overlay_fuse_daemon){0};
  snprintf(st.id, sizeof(st.id), "%s", sb->id);
  struct teardown t;
  teardown_from_state(&t, sb->state_fd, &st);
  t.end_reason = "destroyed";
  t.audit_copy = sb->audit_copy;
  int r = sandbox_teardown(&t, err);
  state_clear(&st);
  hutch_sandbox_close(sb);
  return r;
}

/* One sandbox's info, taking `st`'s strings. */
static void info_from_state(struct hutch_sandbox_info *info, struct sandbox_state *st) {
  memset(info, 0, sizeof(*info));
  snprintf(info->id, sizeof(info->id), "%s", st->id);
  info->pid = st->pid;
  info->running = state_is_running(st);
  info->created = st->created;
  info->image = steal_pointer(&st->image);
  info->rootfs = steal_pointer(&st->rootfs);
  info->limits = st->limits;
  info->net_proxy = st->net.proxy;
  snprintf(info->net_address, sizeof(info->net_address), "%s", st->net.address);
  info->overlay_fuse = st->overlay_fuse;
  info->proc_host_ro = st->proc_host_ro;
  if (st->limits.cgroup[0])
    cgroup_read_usage(st->limits.cgroup, &info->usage);
}

/* Calls fn with the state of each sandbox of the state directory (fn may
 * take its strings; it is cleared after). */
static int each_state(int rootfd, const char *path, void (*fn)(struct sandbox_state *st, void *data), void *data,
                      hutch_error_t *err) {
  int dfd = dup(rootfd);
  _cleanup_dir_ DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
  if (d == NULL)
    return hutch_error_sys(err, "list %s", path);
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    if (de->d_name[0] == '.' || !paths_valid_name(de->d_name))
      continue;
    struct sandbox_state st;
    hutch_error_t ignored = NULL;
    if (state_read(rootfd, de->d_name, &st, &ignored) < 0) {
      hutch_error_free(&ignored);
      continue;
    }
    /* A limit run out unwatched is acted on now: removed, not listed. */
    if (sandbox_ttl_backstop(rootfd, &st) > 0) {
      state_clear(&st);
      if (state_read(rootfd, de->d_name, &st, &ignored) < 0) {
        hutch_error_free(&ignored);
        continue;
      }
    }
    /* A copy's freeze whose holder was killed is undone (pause.c). */
    sandbox_hold_backstop(rootfd, st.id, st.limits.cgroup);
    /* A record whose owner and init were killed is removed, not listed;
     * so is a start killed before its record.  One under way is not a
     * sandbox yet. */
    if (sandbox_orphan_backstop(rootfd, &st) > 0 || st.starting) {
      state_clear(&st);
      continue;
    }
    fn(&st, data);
    state_clear(&st);
  }
  return 0;
}

static int for_each_state(const char *state_dir, void (*fn)(struct sandbox_state *st, void *data), void *data,
                          hutch_error_t *err) {
  _cleanup_free_ char *path = NULL;
  _cleanup_close_ int rootfd = state_open_root(state_dir, &path, err);
  if (rootfd < 0)
    return -1;
  return each_state(rootfd, path, fn, data, err);
}

static void look_only(struct sandbox_state *st, void *data) {
  (void)st;
  (void)data;
}

void sandbox_orphan_sweep(int rootfd) {
  hutch_error_t err = NULL;
  /* Looking at each record is the sweep (each_state's backstops). */
  if (each_state(rootfd, "the state directory", look_only, NULL, &err) < 0) {
    hutch_debug("orphan sweep: %s", err->msg);
    hutch_error_free(&err);
  }
}

struct info_list {
  struct hutch_sandbox_info *infos;
  size_t n;
};

static void add_info(struct sandbox_state *st, void *data) {
  struct info_list *l = data;
  l->infos = xrealloc(l->infos, (l->n + 1) * sizeof(*l->infos));
  info_from_state(&l->infos[l->n++], st);
}

int hutch_sandbox_list(const char *state_dir, struct hutch_sandbox_info **out, size_t *n, hutch_error_t *err) {
  struct info_list l = {0};
  int r = for_each_state(state_dir, add_info, &l, err);
  *out = l.infos;
  *n = l.n;
  return r;
}

void hutch_sandbox_info_free(struct hutch_sandbox_info *infos, size_t n) {
  for (size_t i = 0; i < n; i++) {
    free(infos[i].image);
    free(infos[i].rootfs);
  }
  free(infos);
}

struct status_list {
  const char *state_dir;
  struct hutch_sandbox_status *s;
  size_t n;
};

static void add_status(struct sandbox_state *st, void *data) {
  struct status_list *l = data;
  l->s = xrealloc(l->s, (l->n + 1) * sizeof(*l->s));
  struct hutch_sandbox_status *s = &l->s[l->n++];
  memset(s, 0, sizeof(*s));
  info_from_state(&s->info, st);
  s->state = s->info.running ? HUTCH_SANDBOX_RUNNING : HUTCH_SANDBOX_DEAD;
  struct hutch_pause_status pause;
  hutch_error_t perr = NULL;
  if (s->info.running && hutch_sandbox_pause_status(l->state_dir, s->info.id, &pause, &perr) == 1) {
    s->state = HUTCH_SANDBOX_PAUSED;
    s->pause_method = pause.method;
  }
  hutch_error_free(&perr);
  s->ttl = st->live.ttl.seconds;
  s->ttl_left = ttl_plan_left(&st->live.ttl, ttl_boot_now());
  s->on_ttl = st->live.ttl.on_ttl;
  s->name = steal_pointer(&st->live.name);
  s->labels = st->live.labels ? steal_pointer(&st->live.labels) : xcalloc(1, sizeof(char *));
  s->devices = st->live.devices ? steal_pointer(&st->live.devices) : xcalloc(1, sizeof(char *));
  ports_from_state(st->live.ports, &s->ports, &s->n_ports);
  s->generation = st->live.generation;
  snprintf(s->forked_from, sizeof(s->forked_from), "%s", st->live.forked_from ? st->live.forked_from : "");
}

int hutch_sandbox_list_status(const char *state_dir, struct hutch_sandbox_status **out, size_t *n, hutch_error_t *err) {
  struct status_list l = {.state_dir = state_dir};
  int r = for_each_state(state_dir, add_status, &l, err);
  *out = l.s;
  *n = l.n;
  return r;
}

void hutch_sandbox_status_free(struct hutch_sandbox_status *s, size_t n) {
  for (size_t i = 0; i < n; i++) {
    free(s[i].info.image);
    free(s[i].info.rootfs);
    free(s[i].name);
    cleanup_strvp(&s[i].labels);
    free(s[i].ports);
    cleanup_strvp(&s[i].devices);
  }
  free(s);
}

int hutch_sandbox_resolve(const char *state_dir, const char *name_or_id, char id[40], hutch_error_t *err) {
  _cleanup_close_ int rootfd = state_open_root(state_dir, NULL, err);
  if (rootfd < 0 || names_resolve(rootfd, name_or_id, id, err) < 0)
    return -1;
  /* An id that names no sandbox is not one: ENOENT, as for a name. */
  struct stat st;
  if (fstatat(rootfd, id, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode)) {
    hutch_error_set(err, ENOENT, "no sandbox with id or name '%s'", name_or_id);
    return hutch_error_hint(err, "`hutch ps` lists the sandboxes");
  }
  return 0;
}
