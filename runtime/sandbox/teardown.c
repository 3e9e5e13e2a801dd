/* SPDX-License-Identifier: Apache-2.0 */
/* The one teardown of a sandbox, for every way one ends: a start that
 * failed half-way (sandbox.c), a one-shot run's end (hutch_run), `hutch rm`
 * and hutch_sandbox_destroy of a live or dead sandbox (sandbox_live.c).
 * The steps run in one order, each marks itself done, and each is safe on
 * a sandbox that never got that far: so a teardown may run on a half-made
 * sandbox and may run twice. */
#include "config.h"

#include "teardown.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "audit_sandbox.h"
#include "cgroup.h"
#include "helper_proc.h"
#include "names.h"
#include "port_relay.h"
#include "proc_stat.h"
#include "state.h"
#include "util.h"

#ifndef P_PIDFD
#define P_PIDFD 3 /* waitid() on a pidfd, Linux 5.4 */
#endif

void teardown_from_state(struct teardown *t, int state_fd, const struct sandbox_state *st) {
  *t = (struct teardown){
      .state_fd = state_fd,
      .pid = st->pid,
      .start_time = st->start_time,
      .pidfd = -1,
      .fuse = st->fuse,
      .fuse_grace = 2,
      .cgroup = st->limits.cgroup[0] ? st->limits.cgroup : NULL,
      .proxy_recorded = st->net.proxy,
      .proxy_pid = st->net.proxy_pid,
      .proxy_start_time = st->net.proxy_start_time,
      .keeper_pid = st->live.keeper.pid,
      .keeper_start_time = st->live.keeper.start_time,
  };
  snprintf(t->id, sizeof(t->id), "%s", st->id);
  t->name = st->live.name;
  t->ports = st->live.ports;
  if (st->net.proxy && st->net.audit_log)
    snprintf(t->proxy_log, sizeof(t->proxy_log), "%s", st->net.audit_log);
}

/* Our own child (a start in this process): killed through its pidfd and
 * reaped.  Anyone else's (a long-lived sandbox whose creator has exited):
 * killed only if it is still the process recorded, then waited for on a
 * pidfd. */
static int step_stop_init(struct teardown *t, hutch_error_t *err) {
  if (t->pid <= 0)
    return 0;
  pid_t pid = t->pid;
  t->pid = -1;
  if (t->child) {
    if (t->pidfd >= 0)
      syscall(SYS_pidfd_send_signal, t->pidfd, SIGKILL, NULL, 0);
    else
      kill(pid, SIGKILL);
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
      ;
    return 0;
  }
  if (t->start_time == 0 || proc_stat_start_time(pid) != t->start_time)
    return 0; /* not running, or the pid is someone else's now */
  int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
  if (pidfd < 0) {
    if (errno == ESRCH)
      return 0;
    t->pid = pid; /* may still run: a retry must try again */
    return hutch_error_sys(err, "open sandbox %s's init (pid %d)", t->id, (int)pid);
  }
  /* Re-check after opening: the pidfd pins this exact process, so a pid
   * reused in between can no longer be hit. */
  if (proc_stat_start_time(pid) != t->start_time) {
    close(pidfd);
    return 0;
  }
  if (syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0) < 0 && errno != ESRCH) {
    hutch_error_sys(err, "kill sandbox %s", t->id);
    close(pidfd);
    t->pid = pid;
    return -1;
  }
  /* Init's exit waits for every process of its pid namespace to die, which
   * takes seconds when hundreds of sandboxes go at once on a loaded host.
   * Bounded all the same (a process stuck in the kernel never exits); and
   * a success is reported only once init is gone, so that whatever comes
   * next (a new sandbox with the same id, a removed upper layer) never
   * meets it still running. */
  double deadline = monotonic_seconds() + 60;
  for (;;) {
    struct pollfd pfd = {pidfd, POLLIN, 0};
    int n = poll(&pfd, 1, 1000);
    if (n > 0)
      break;
    if (n < 0 && errno != EINTR) {
      hutch_error_sys(err, "wait for sandbox %s's init (pid %d)", t->id, (int)pid);
      close(pidfd);
      t->pid = pid;
      return -1;
    }
    if (monotonic_seconds() > deadline) {
      hutch_error_set(err, ETIMEDOUT, "sandbox %s's init (pid %d) has not exited 60 s after SIGKILL", t->id, (int)pid);
      close(pidfd);
      t->pid = pid;
      return -1;
    }
  }
  /* A program that created the sandbox and destroys it through the library
   * (not the hutch command, which exits) is init's parent: reap it, or it
   * stays a zombie as long as the program runs.  Through the pidfd, so only
   * this very process; anyone else's child gives ECHILD. */
  siginfo_t si;
  while (waitid((idtype_t)P_PIDFD, (id_t)pidfd, &si, WEXITED | WNOHANG) < 0 && errno == EINTR)
    ;
  close(pidfd);
  return 0;
}

/* --overlay fuse: the daemon exits by itself once the sandbox's mount
 * namespace is gone with init (it flushes first); before the upper layer
 * is removed. */
static void step_stop_fuse(struct teardown *t) {
  overlay_fuse_stop(&t->fuse, t->fuse_grace);
  t->fuse = (struct overlay_fuse_daemon){0};
}

/* The helpers of a long-lived sandbox, each only if it is still the very
 * process recorded, and not the caller (a keeper whose limit ran out). */
static void step_stop_helpers(struct teardown *t) {
  helper_stop(t->keeper_pid, t->keeper_start_time);
  t->keeper_pid = 0;
}

/* --net proxy: the proxy stops by itself when init has died (killed
 * anyway, in case init was gone before it started), and the /30 is given
 * back.  Before the state directory goes: the audit log may be in it. */
static void step_stop_network(struct teardown *t) {
  if (t->net != NULL) {
    if (t->net_summary != NULL)
      net_host_finish(t->net, t->net_summary); /* a one-shot's end: its summary */
    else
      net_host_abort(t->net);
    t->net = NULL;
  }
  if (t->proxy_recorded)
    net_host_teardown(t->state_fd, t->id, t->proxy_pid, t->proxy_start_time);
  t->proxy_recorded = false;
}

/* -p: the relay (it ends by itself once init has) and its counts in the
 * audit log, before the end record. */
static void step_stop_relay(struct teardown *t) {
  port_relay_stop(t->state_fd, t->id, t->ports);
  t->ports = NULL;
}

/* Whatever escaped its init's death (nothing should) dies with the
 * cgroup; what it counted is the whole sandbox's, and final. */
static int step_remove_cgroup(struct teardown *t, hutch_error_t *err) {
  if (t->cgroup == NULL)
    return 0;
  if (t->usage != NULL)
    cgroup_read_usage(t->cgroup, t->usage);
  double rm_start = monotonic_seconds();
  if (cgroup_remove(t->cgroup, err) < 0)
    return -1;
  hutch_debug("cgroup %s: %.3f ms to set up, %.3f ms to remove", t->cgroup, t->cg_setup_seconds * 1e3,
              (monotonic_seconds() - rm_start) * 1e3);
  t->cgroup = NULL;
  return 0;
}

/* The audit log's last records, once the proxy's log is complete and the
 * cgroup's counts are final; before the state directory goes, from which
 * the log moves to the archive.  Once. */
static void step_audit_end(struct teardown *t) {
  if (t->audit_done)
    return;
  t->audit_done = true;
  struct audit_rec cmd = {0};
  if (t->audit_cmd != NULL)
    cmd = audit_cmd_finish(steal_pointer(&t->audit_cmd), t->audit_exit, "not waited for", t->audit_rusage);
  audit_sandbox_end(t->state_fd, t->id, cmd.data ? &cmd : NULL, t->end_reason ? t->end_reason : "removed",
                    t->proxy_log[0] ? t->proxy_log : NULL, t->audit_copy, !t->keep);
  audit_rec_free(&cmd);
}

static int step_remove_state_dir(struct teardown *t, hutch_error_t *err) {
  if (t->keep || t->dir_removed)
    return 0;
  /* Before the directory: a name never points to one gone. */
  if (t->name)
    names_release(t->state_fd, t->name, t->id);
  if (state_remove_sandbox_dir(t->state_fd, t->id, err) < 0)
    return -1;
  t->dir_removed = true;
  return 0;
}

/* Each step's time to the debug log (HUTCH_DEBUG), as a start's steps. */
#define TIMED(name, call)                                                                                              \
  ({                                                                                                                   \
    double t0_ = monotonic_seconds();                                                                                  \
    __auto_type r_ = call;                                                                                             \
    hutch_debug("teardown: %s %.3f ms", name, (monotonic_seconds() - t0_) * 1e3);                                      \
    r_;                                                                                                                \
  })

int sandbox_teardown(struct teardown *t, hutch_error_t *err) {
  /* Nothing else is safe while init may still run. */
  if (TIMED("stop init", step_stop_init(t, err)) < 0)
    return -1;
  step_stop_fuse(t);
  step_stop_relay(t);
  step_stop_helpers(t);
  step_stop_network(t);
  int r = TIMED("remove cgroup", step_remove_cgroup(t, err));
  /* A cgroup left behind keeps the state directory, which records it, so
   * that `hutch rm` can retry; a failed start has no record to retry
   * from, and goes whole. */
  if (r < 0 && !t->best_effort)
    return -1;
  TIMED("audit end", (step_audit_end(t), 0));
  hutch_error_t dir_err = NULL;
  if (TIMED("remove state dir", step_remove_state_dir(t, r < 0 ? &dir_err : err)) < 0 && r == 0)
    r = -1;
  hutch_error_free(&dir_err);
  return r;
}
