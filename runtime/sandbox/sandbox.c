/* SPDX-License-Identifier: Apache-2.0 */
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
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>

#include "audit.h"
#include "audit_sandbox.h"
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
#include "teardown.h"
#include "util.h"

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
 * timeout; on expiry `on_timeout` kills the process.  *ru: what init and
 * all it reaped used, as init counted it before its exit (init.c). */
static int wait_for_exit(int fd, double timeout, struct forwarder *fw, struct pty_relay *relay,
                         int (*on_timeout)(void *), void *data, int (*forward)(void *, int), struct hutch_exit *out,
                         struct rusage *ru, double start, hutch_error_t *err) {
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
      *ru = (struct rusage){.ru_maxrss = (long)(ex.maxrss / 1024)};
      ru->ru_utime.tv_sec = (time_t)(ex.cpu_usec / 1000000u);
      ru->ru_utime.tv_usec = (suseconds_t)(ex.cpu_usec % 1000000u);
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
  return hutch_run_with(cfg, NULL, proc, out, err);
}

int hutch_run_with(const struct hutch_sandbox_config *cfg, const struct hutch_sandbox_extras *x,
                   const struct hutch_process *proc, struct hutch_exit *out, hutch_error_t *err) {
  memset(out, 0, sizeof(*out));
  if (hutch_sandbox_extras_check(x, err) < 0)
    return -1;
  if (x && (x->name || (x->labels && x->labels[0]))) {
    hutch_error_set(err, EINVAL, "a one-shot sandbox has no name or labels");
    return hutch_error_hint(err, "name and label a long-lived sandbox (hutch_sandbox_create_with)");
  }
  double start = monotonic_seconds(), started_at = audit_now();
  struct forwarder fw = {.fd = -1};
  if (!proc->keep_caller_signals && forwarder_start(&fw, err) < 0)
    return -1;
  struct started s;
  if (sandbox_start(cfg, x, proc, &s, err) < 0) {
    forwarder_stop(&fw);
    return -1;
  }
  snprintf(out->id, sizeof(out->id), "%s", s.id);
  out->limits = s.limits;
  struct audit_sink *sink = audit_sink_new(s.state_fd, s.id);
  struct audit_cmd *audit = audit_cmd_begin(sink, proc->argv, proc->workdir, proc->stdio, proc->tty, started_at);
  audit_sink_unref(sink); /* the command's own reference keeps it */
  struct run_ctx ctx = {s.sync_fd, s.pidfd, s.pid};
  struct pty_relay relay;
  hutch_error_t relay_err = NULL;
  if (pty_relay_begin(&relay, proc, steal_fd(&s.pty_fd), &relay_err) < 0)
    run_timeout(&ctx);    /* killed: it would run with nobody at its terminal */
  struct rusage ru = {0}; /* init's and all it reaped: the command's use without a cgroup */
  int r = wait_for_exit(s.sync_fd, proc->timeout, &fw, &relay, run_timeout, &ctx, run_forward, out, &ru, start, err);
  pty_relay_stop(&relay);
  if (relay_err != NULL) {
    hutch_error_free(err);
    if (err != NULL)
      *err = steal_pointer(&relay_err);
    hutch_error_free(&relay_err);
    r = -1;
  }
  /* Whether init sent SYNC_EXIT with what it and all it reaped used.  A
   * sandbox killed whole (a timeout, its caller's death) has no such
   * count: the processes its pid namespace's end kills are reaped by the
   * kernel, which counts them nowhere, so without a cgroup the usage is
   * unknown, not init's alone. */
  bool reported = r >= 0;
  if (r < 0 && (out->timed_out || sandbox_parent_died())) {
    /* Killed on timeout or with its caller before init could report: that is the report. */
    hutch_error_free(err);
    out->signal = SIGKILL;
    r = 0;
  }
  /* Init's exit tears the sandbox's namespaces down (its mounts: about
   * 0.3 ms).  It is waited for here only where what follows needs init
   * gone: its status after a failure, the cgroup to remove (and its final
   * counts), the fuse daemon and the proxy, which end with it, and a kept
   * sandbox's record (hutch ps must not see it running).  Else the
   * teardown's own steps (the audit log's end, the state directory) run
   * meanwhile, and init is reaped after them: never left to the caller's
   * reaper, which may not reap (a program that is PID 1 of a container
   * would gather a zombie per sandbox).  The command's usage came with
   * SYNC_EXIT. */
  bool had_cgroup = s.cg.path != NULL;
  int wstatus = 0;
  bool reaped = false;
  if (r < 0 || had_cgroup || s.fuse.pid > 0 || s.net.enabled || cfg->keep) {
    double reap_start = monotonic_seconds();
    while (wait4(s.pid, &wstatus, 0, r < 0 ? &ru : NULL) < 0 && errno == EINTR)
      ;
    reaped = true;
    hutch_debug("end: init's exit %.3f ms after the command's", (monotonic_seconds() - reap_start) * 1e3);
  }
  /* The teardown does the rest, and reports what the proxy and the cgroup
   * counted, final now. */
  struct teardown t;
  teardown_from_started(&t, &s);
  t.pid = -1;
  t.net_summary = &out->net;
  t.usage = &out->usage;
  t.keep = cfg->keep;
  t.best_effort = true;
  t.audit_cmd = audit;
  t.audit_exit = out;
  t.audit_rusage = reported ? &ru : NULL;
  t.end_reason = "the command ended";
  t.audit_copy = cfg->audit_copy;
  hutch_error_t cleanup_err = NULL;
  if (sandbox_teardown(&t, &cleanup_err) < 0) {
    _cleanup_free_ char *why = hutch_error_format(cleanup_err);
    hutch_warn("%s (`hutch rm %s` retries)", why, s.id);
    hutch_error_free(&cleanup_err);
  }
  forwarder_stop(&fw);
  if (had_cgroup) {
    if (r < 0 && out->usage.oom_kills > 0 && WIFSIGNALED(wstatus) && WTERMSIG(wstatus) == SIGKILL) {
      /* The OOM killer chose init itself: still an out-of-memory end. */
      hutch_error_free(err);
      out->signal = SIGKILL;
      r = 0;
    }
    out->usage.oom_killed = out->usage.oom_kills > 0 && out->signal == SIGKILL && !out->timed_out;
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
  if (!reaped) {
    double reap_start = monotonic_seconds();
    while (waitpid(s.pid, NULL, 0) < 0 && errno == EINTR)
      ;
    hutch_debug("end: init's exit %.3f ms after the teardown", (monotonic_seconds() - reap_start) * 1e3);
  }
  started_release(&s);
  out->wall_seconds = monotonic_seconds() - start;
  return r;
}
