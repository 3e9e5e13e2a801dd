/* SPDX-License-Identifier: Apache-2.0 */
/* A process in a live sandbox, as a handle (hutch.h: hutch_proc_*), and
 * hutch_sandbox_exec() on top of it.  The process is started by the
 * sandbox's init (init.c) on a control connection of the handle's own:
 * SYNC_EXEC carries its stdio fds and the proof that hutch asks, SYNC_STARTED
 * its pid and a pidfd, SYNC_SIGNAL a signal for its group, and SYNC_EXIT its
 * end.  When that connection closes, init kills what is still running.
 *
 * A connection whose process has ended is not closed but kept by the
 * sandbox's handle for its next command (struct ctl_pool): init remembers
 * that it has proven itself, so the next spawn pays neither a connect nor
 * the proof (init.c).  Still one process per connection at a time. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>

#include "audit_sandbox.h"
#include "cgroup.h"
#include "pty_relay.h"
#include "request.h"
#include "sandbox.h"
#include "sync.h"
#include "util.h"

/* The idle connection of a sandbox handle, shared with the handles of its
 * processes: a process may outlive its sandbox's handle (hutch.h), and
 * gives its connection back only while that handle is open.  Counted, and
 * with atomics only: a caller may use one sandbox from several threads. */
struct ctl_pool {
  int refs;  /* the sandbox handle's, and one per process handle */
  int spare; /* an idle, proven connection, or -1 */
  bool open; /* the sandbox handle is open */
};

static void pool_unref(struct ctl_pool *pool) {
  if (pool == NULL || __atomic_sub_fetch(&pool->refs, 1, __ATOMIC_ACQ_REL) > 0)
    return;
  if (pool->spare >= 0)
    close(pool->spare);
  free(pool);
}

static struct ctl_pool *pool_get(struct hutch_sandbox *sb) {
  struct ctl_pool *pool = __atomic_load_n(&sb->ctl_pool, __ATOMIC_ACQUIRE);
  if (pool == NULL) {
    struct ctl_pool *fresh = xcalloc(1, sizeof(*fresh));
    *fresh = (struct ctl_pool){.refs = 1, .spare = -1, .open = true};
    if (__atomic_compare_exchange_n(&sb->ctl_pool, &pool, fresh, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
      pool = fresh;
    else
      free(fresh);
  }
  __atomic_add_fetch(&pool->refs, 1, __ATOMIC_ACQ_REL);
  return pool;
}

/* Made at the handle's first record (CAS: threads may spawn at once). */
struct audit_sink *sandbox_audit_sink(struct hutch_sandbox *sb) {
  struct audit_sink *sink = __atomic_load_n(&sb->audit_sink, __ATOMIC_ACQUIRE);
  if (sink != NULL)
    return sink;
  struct audit_sink *fresh = audit_sink_new(sb->state_fd, sb->id);
  if (__atomic_compare_exchange_n(&sb->audit_sink, &sink, fresh, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
    return fresh;
  audit_sink_unref(fresh);
  return sink;
}

void sandbox_proc_release_pool(struct hutch_sandbox *sb) {
  struct ctl_pool *pool = sb->ctl_pool;
  if (pool == NULL)
    return;
  sb->ctl_pool = NULL;
  __atomic_store_n(&pool->open, false, __ATOMIC_RELEASE);
  int fd = __atomic_exchange_n(&pool->spare, -1, __ATOMIC_ACQ_REL);
  if (fd >= 0)
    close(fd);
  pool_unref(pool);
}

struct hutch_proc {
  int ctl_fd; /* to init: SYNC_EXIT arrives here */
  struct ctl_pool *pool;
  int pidfd;
  pid_t sandbox_pid;
  int fds[3]; /* the caller's ends of the pipes, -1 for other streams */
  int pty;    /* with spec->tty: the master of its pty, until taken */
  char id[40];
  struct hutch_limits_status limits;
  /* This process's share of the sandbox's cgroup: counters before and
   * after, and the peak through a memory.peak fd reset for it. */
  bool cgroup;
  struct hutch_usage before;
  int peak_fd;
  double start;
  bool ended;
  struct hutch_exit exit;
  struct audit_cmd *audit; /* its record in the audit log, written at its end */
};

/* The pid a pidfd refers to in this process's pid namespace: its fdinfo's
 * "Pid:" line (-1 once the process is gone, or unknown). */
static pid_t pidfd_pid(int pidfd) {
  char path[64];
  snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", pidfd);
  _cleanup_free_ char *info = read_file_at(AT_FDCWD, path, 4096, NULL);
  const char *line = info == NULL ? NULL : strncmp(info, "Pid:", 4) == 0 ? info : strstr(info, "\nPid:");
  if (line == NULL)
    return -1;
  line += line[0] == '\n' ? 5 : 4;
  char *end;
  long v = strtol(line, &end, 10);
  return end != line && v > 0 ? (pid_t)v : -1;
}

/* The fd the process gets for one stream (*owned when it is ours to
 * close once sent), and the caller's end of a pipe in *mine. */
static int stdio_fd(const struct hutch_stdio *st, int stream, bool *owned, int *mine, hutch_error_t *err) {
  *owned = true;
  *mine = -1;
  switch (st->kind) {
  case HUTCH_STDIO_NULL: {
    int fd = open("/dev/null", O_RDWR | O_CLOEXEC);
    return fd >= 0 ? fd : hutch_error_sys(err, "open /dev/null");
  }
  case HUTCH_STDIO_FD:
    *owned = false;
    if (st->fd < 0)
      return hutch_error_set(err, EBADF, "stream %d: no fd given", stream);
    return stdio_refuse_directory(st->fd, stream, err) < 0 ? -1 : st->fd;
  case HUTCH_STDIO_PIPE: {
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0)
      return hutch_error_sys(err, "a pipe for stream %d", stream);
    /* stdin: the process reads, the caller writes; else the other way. */
    int theirs = stream == 0 ? p[0] : p[1];
    *mine = stream == 0 ? p[1] : p[0];
    fcntl(*mine, F_SETFL, O_NONBLOCK);
    return theirs;
  }
  }
  return hutch_error_set(err, EINVAL, "stream %d: unknown kind %d", stream, (int)st->kind);
}

static struct hutch_proc *proc_new(struct hutch_sandbox *sb) {
  struct hutch_proc *p = xcalloc(1, sizeof(*p));
  p->pool = pool_get(sb);
  p->ctl_fd = p->pidfd = p->peak_fd = p->pty = -1;
  p->sandbox_pid = -1;
  for (int i = 0; i < 3; i++)
    p->fds[i] = -1;
  snprintf(p->id, sizeof(p->id), "%s", sb->id);
  p->limits = sb->limits;
  p->start = monotonic_seconds();
  return p;
}

/* A connection to init for p: the sandbox's idle one when it has one
 * (*proven: it needs no proof), else a new one. */
static int connect_ctl(struct hutch_proc *p, struct hutch_sandbox *sb, bool *proven, hutch_error_t *err) {
  p->ctl_fd = __atomic_exchange_n(&p->pool->spare, -1, __ATOMIC_ACQ_REL);
  *proven = p->ctl_fd >= 0;
  if (p->ctl_fd < 0)
    p->ctl_fd = sandbox_connect_control(sb, err);
  return p->ctl_fd;
}

/* Sends the request with the stdio fds, and on a new connection the
 * proof; the caller's pipe ends go into p->fds.  An idle connection that
 * init has closed meanwhile (it ended: the sandbox is gone) is replaced by
 * a new one, which then says why. */
static int send_exec(struct hutch_proc *p, struct hutch_sandbox *sb, const struct hutch_spawn *spec, const char *buf,
                     size_t len, hutch_error_t *err) {
  bool proven;
  if (connect_ctl(p, sb, &proven, err) < 0)
    return -1;
  int fds[4] = {-1, -1, -1, -1};
  bool owned[3] = {false, false, false};
  int r = 0;
  for (int i = 0; i < 3 && r == 0; i++) {
    fds[i] = stdio_fd(&spec->stdio[i], i, &owned[i], &p->fds[i], err);
    r = fds[i] < 0 ? -1 : 0;
  }
  for (int tries = 0; r == 0; tries++) {
    if (!proven && (fds[3] = sandbox_init_pidfd(sb, err)) < 0) {
      r = -1;
      break;
    }
    hutch_error_t send_err = NULL;
    r = sync_send(p->ctl_fd, SYNC_EXEC, buf, len, fds, proven ? 3 : 4, &send_err);
    if (r == 0 || !proven || tries > 0) {
      hutch_error_move(err, &send_err);
      break;
    }
    hutch_error_free(&send_err);
    close(p->ctl_fd);
    p->ctl_fd = sandbox_connect_control(sb, err);
    proven = false;
    r = p->ctl_fd < 0 ? -1 : 0;
  }
  /* init has its copies now (or never will): the process's ends go. */
  for (int i = 0; i < 3; i++)
    if (owned[i] && fds[i] >= 0)
      close(fds[i]);
  return r;
}

int hutch_proc_spawn(struct hutch_sandbox *sb, const struct hutch_spawn *spec, struct hutch_proc **out,
                     hutch_error_t *err) {
  *out = NULL;
  if (sandbox_refuse_paused(sb, err) < 0)
    return -1;
  sandbox_follow_if_ended(sb); /* a reset since: its cgroup and workdir */
  /* Its record is written when it ends: a log that cannot be opened now
   * (no descriptor left, say) would leave a command that ran unrecorded. */
  if (audit_sink_ready(sandbox_audit_sink(sb), err) < 0)
    return hutch_error_wrap(err, "exec in sandbox %s: its command would not be audited", sb->id);
  struct hutch_proc *p = proc_new(sb);
  const char *cg = sb->limits.cgroup[0] ? sb->limits.cgroup : NULL;
  if (cg) {
    p->cgroup = true;
    cgroup_read_usage(cg, &p->before);
    p->peak_fd = cgroup_peak_reset(cg);
  }
  struct exec_request req = {
      .argv = (char **)spec->argv,
      .env = (char **)spec->env,
      .workdir = (char *)(spec->workdir ? spec->workdir : sb->workdir),
      .tty = spec->tty,
      .rows = spec->tty_rows,
      .cols = spec->tty_cols,
  };
  _cleanup_free_ char *buf = NULL;
  size_t len;
  if (request_encode(&req, SYNC_MAX_PAYLOAD, &buf, &len, err) < 0) {
    hutch_proc_free(p);
    return -1;
  }
  struct sync_started started;
  int fds[2] = {-1, -1}; /* its pidfd, and with a pty its master */
  if (send_exec(p, sb, spec, buf, len, err) < 0 ||
      sync_expect_fds(p->ctl_fd, SYNC_STARTED, &started, sizeof(started), NULL, fds, 2, "start the process", err) < 0) {
    hutch_proc_free(p);
    return hutch_error_wrap(err, "exec in sandbox %s", sb->id);
  }
  p->pidfd = fds[0];
  p->pty = fds[1];
  if (spec->tty && p->pty < 0) {
    hutch_proc_free(p);
    return hutch_error_set(err, EPROTO, "exec in sandbox %s: its init sent no pty master", sb->id);
  }
  p->sandbox_pid = started.pid;
  int stdio[3];
  for (int i = 0; i < 3; i++)
    stdio[i] = spec->stdio[i].kind == HUTCH_STDIO_FD ? spec->stdio[i].fd : -1;
  p->audit = audit_cmd_begin(sandbox_audit_sink(sb), spec->argv, req.workdir, stdio, spec->tty, 0);
  *out = p;
  return 0;
}

pid_t hutch_proc_pid(const struct hutch_proc *p) {
  /* Read when asked, off the spawn path. */
  return p->pidfd >= 0 ? pidfd_pid(p->pidfd) : -1;
}

pid_t hutch_proc_sandbox_pid(const struct hutch_proc *p) {
  return p->sandbox_pid;
}

int hutch_proc_pidfd(const struct hutch_proc *p) {
  return p->pidfd;
}

int hutch_proc_fd(const struct hutch_proc *p, int stream) {
  return stream >= 0 && stream < 3 ? p->fds[stream] : -1;
}

int hutch_proc_pty(const struct hutch_proc *p) {
  return p->pty;
}

void hutch_proc_close_fd(struct hutch_proc *p, int stream) {
  if (stream >= 0 && stream < 3 && p->fds[stream] >= 0) {
    close(p->fds[stream]);
    p->fds[stream] = -1;
  }
}

int hutch_proc_event_fd(const struct hutch_proc *p) {
  return p->ctl_fd;
}

/* The process's share of the sandbox's cgroup since it started. */
static void read_usage(struct hutch_proc *p) {
  struct hutch_usage after;
  cgroup_read_usage(p->limits.cgroup, &after);
  struct hutch_usage *u = &p->exit.usage;
  *u = after;
  u->oom_kills = after.oom_kills - p->before.oom_kills;
  u->cpu_usec = after.cpu_usec - p->before.cpu_usec;
  u->nr_throttled = after.nr_throttled - p->before.nr_throttled;
  u->throttled_usec = after.throttled_usec - p->before.throttled_usec;
  if (p->peak_fd >= 0)
    u->memory_peak = cgroup_peak_read(p->peak_fd);
  u->oom_killed = u->oom_kills > 0 && p->exit.signal == SIGKILL;
}

int hutch_proc_wait(struct hutch_proc *p, double timeout, struct hutch_exit *out, hutch_error_t *err) {
  double deadline = monotonic_seconds() + timeout;
  while (!p->ended) {
    int ms = -1;
    if (timeout >= 0) {
      double left = deadline - monotonic_seconds();
      ms = left <= 0 ? 0 : (int)(left * 1000) + 1;
    }
    struct pollfd pfd = {p->ctl_fd, POLLIN, 0};
    int n = poll(&pfd, 1, ms);
    if (n < 0 && errno != EINTR)
      return hutch_error_sys(err, "wait for the process in sandbox %s", p->id);
    if (n == 0) {
      memset(out, 0, sizeof(*out));
      snprintf(out->id, sizeof(out->id), "%s", p->id);
      out->limits = p->limits;
      out->timed_out = true;
      out->wall_seconds = monotonic_seconds() - p->start;
      return 1;
    }
    if (n < 0)
      continue;
    struct sync_exit ex;
    if (sync_expect(p->ctl_fd, SYNC_EXIT, &ex, sizeof(ex), NULL, "wait for the process", err) < 0)
      return hutch_error_wrap(err, "exec in sandbox %s", p->id);
    p->ended = true;
    memset(&p->exit, 0, sizeof(p->exit));
    snprintf(p->exit.id, sizeof(p->exit.id), "%s", p->id);
    p->exit.limits = p->limits;
    sandbox_fill_exit(&p->exit, &ex);
    if (p->cgroup)
      read_usage(p);
    p->exit.wall_seconds = monotonic_seconds() - p->start;
    struct rusage ru = {.ru_maxrss = (long)(ex.maxrss / 1024)};
    ru.ru_utime.tv_sec = (time_t)(ex.cpu_usec / 1000000u);
    ru.ru_utime.tv_usec = (suseconds_t)(ex.cpu_usec % 1000000u);
    audit_cmd_end(steal_pointer(&p->audit), &p->exit, NULL, &ru);
  }
  *out = p->exit;
  return 0;
}

int hutch_proc_signal(struct hutch_proc *p, int sig, hutch_error_t *err) {
  if (p->ended)
    return 0;
  int32_t s = sig;
  hutch_error_t send_err = NULL;
  if (sync_send(p->ctl_fd, SYNC_SIGNAL, &s, sizeof(s), NULL, 0, &send_err) == 0)
    return 0;
  /* init is gone, and with it every process of its sandbox. */
  if (send_err->errnum == EPIPE || send_err->errnum == ECONNRESET) {
    hutch_error_free(&send_err);
    return 0;
  }
  hutch_error_move(err, &send_err);
  return hutch_error_wrap(err, "signal the process in sandbox %s", p->id);
}

int hutch_proc_kill(struct hutch_proc *p, hutch_error_t *err) {
  return hutch_proc_signal(p, SIGKILL, err);
}

/* After the end of p's process, its connection is idle: the sandbox's
 * handle keeps it for the next command, unless that handle is closed, or
 * something unread is on it (the end of init, a late answer). */
static void give_back_ctl(struct hutch_proc *p) {
  if (!p->ended || p->ctl_fd < 0 || !__atomic_load_n(&p->pool->open, __ATOMIC_ACQUIRE))
    return;
  struct pollfd pfd = {p->ctl_fd, POLLIN, 0};
  if (poll(&pfd, 1, 0) != 0)
    return;
  int old = __atomic_exchange_n(&p->pool->spare, p->ctl_fd, __ATOMIC_ACQ_REL);
  if (old >= 0)
    close(old);
  p->ctl_fd = -1;
}

void hutch_proc_free(struct hutch_proc *p) {
  if (p == NULL)
    return;
  give_back_ctl(p);
  pool_unref(p->pool);
  audit_cmd_end(p->audit, NULL, "not waited for: killed with its handle", NULL);
  int fds[] = {p->ctl_fd, p->pidfd, p->peak_fd, p->fds[0], p->fds[1], p->fds[2], p->pty};
  for (size_t i = 0; i < ARRAY_SIZE(fds); i++)
    if (fds[i] >= 0)
      close(fds[i]);
  free(p);
}

/* ---- the blocking convenience ---- */

int hutch_sandbox_exec(struct hutch_sandbox *sb, const struct hutch_process *proc, struct hutch_exit *out,
                       hutch_error_t *err) {
  memset(out, 0, sizeof(*out));
  snprintf(out->id, sizeof(out->id), "%s", sb->id);
  out->limits = sb->limits;
  double start = monotonic_seconds();
  struct hutch_spawn spec = {.argv = proc->argv, .env = proc->env, .workdir = proc->workdir, .tty = proc->tty};
  for (int i = 0; i < 3; i++)
    spec.stdio[i] = (struct hutch_stdio){HUTCH_STDIO_FD, proc->stdio[i]};
  if (proc->tty)
    pty_relay_size(proc, &spec.tty_rows, &spec.tty_cols);
  struct forwarder fw = {.fd = -1};
  if (!proc->keep_caller_signals && forwarder_start(&fw, err) < 0)
    return -1;
  struct hutch_proc *p = NULL;
  struct pty_relay relay = {.master = -1, .in = -1, .out = -1, .caller = -1, .winch_fd = -1};
  int r = hutch_proc_spawn(sb, &spec, &p, err);
  if (r == 0) {
    int master = p->pty;
    p->pty = -1;
    if ((r = pty_relay_begin(&relay, proc, master, err)) < 0)
      hutch_proc_kill(p, NULL); /* it would run with nobody at its terminal */
  }
  bool killed = false;
  while (r == 0) {
    /* Signals that reach the caller go to the process; at the timeout it
     * is killed, and its end is still waited for. */
    int ms = -1;
    if (proc->timeout > 0 && !killed) {
      double left = start + proc->timeout - monotonic_seconds();
      ms = left <= 0 ? 0 : (int)(left * 1000) + 1;
    }
    struct pollfd pfd[2 + PTY_RELAY_POLLFDS] = {{hutch_proc_event_fd(p), POLLIN, 0}, {fw.fd, POLLIN, 0}};
    size_t n_relay = pty_relay_fill(&relay, pfd + 2);
    int n = poll(pfd, 2 + n_relay, ms);
    if (n > 0)
      pty_relay_step(&relay, pfd + 2, n_relay);
    if (n < 0 && errno != EINTR) {
      r = hutch_error_sys(err, "exec in sandbox %s: wait for the sandbox", sb->id);
    } else if (n == 0 && ms >= 0) {
      killed = true;
      r = hutch_proc_kill(p, err);
    } else if (n > 0 && (pfd[1].revents & POLLIN)) {
      int sig = forwarder_read(&fw);
      if (sig > 0)
        r = hutch_proc_signal(p, sig, err);
    } else if (n > 0 && pfd[0].revents) {
      break;
    }
  }
  if (r == 0)
    r = hutch_proc_wait(p, -1, out, err);
  if (r == 0)
    pty_relay_drain(&relay, 100); /* its last words */
  pty_relay_stop(&relay);
  hutch_proc_free(p);
  forwarder_stop(&fw);
  out->timed_out = killed;
  if (killed && out->limits.cgroup[0])
    out->usage.oom_killed = false;
  out->wall_seconds = monotonic_seconds() - start;
  return r < 0 ? -1 : 0;
}
