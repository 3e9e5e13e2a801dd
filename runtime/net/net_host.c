/* SPDX-License-Identifier: Apache-2.0 */
#include "config.h"

#include "net_host.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>

#include "policy.h"
#include "proc_stat.h"
#include "proxy.h"
#include "request.h"
#include "sync.h"
#include "subnet.h"
#include "util.h"

int net_host_load_policy_file(const char *path, struct net_policy *out, hutch_error_t *err) {
  _cleanup_free_ char *text = read_file_at(AT_FDCWD, path, POLICY_MAX_BYTES, NULL);
  if (text == NULL)
    return hutch_error_sys(err, "--net-policy: read %s", path);
  if (policy_parse_network(text, path, out, err) < 0)
    return hutch_error_wrap(err, "--net-policy");
  return 0;
}

int net_host_resolve(struct net_host *nh, const struct hutch_sandbox_config *cfg, const struct hutch_policy *policy,
                     hutch_error_t *err) {
  *nh = (struct net_host){.state_fd = -1, .proxy_pid = -1, .channel = -1};
  if (cfg->net != HUTCH_NET_PROXY) {
    bool extra = (cfg->net_allow && cfg->net_allow[0]) || (cfg->net_resolve && cfg->net_resolve[0]) ||
                 (cfg->net_allow_address && cfg->net_allow_address[0]) || cfg->net_policy || cfg->net_audit_log;
    if (extra) {
      hutch_error_set(err, EINVAL, "network: --allow, --resolve, --net-policy and an audit log need --net proxy");
      return hutch_error_hint(err, "a sandbox without --net proxy has loopback only");
    }
    return 0;
  }
  nh->enabled = true;
  if (cfg->net_policy) {
    if (net_host_load_policy_file(cfg->net_policy, &nh->policy, err) < 0)
      return -1;
  } else {
    net_policy_copy(&nh->policy, &policy->settings.network);
  }
  for (const char *const *a = cfg->net_allow; a && *a; a++)
    if (net_policy_add_allow(&nh->policy, *a, err) < 0)
      return hutch_error_wrap(err, "--allow %s", *a);
  for (const char *const *r = cfg->net_resolve; r && *r; r++)
    if (net_policy_add_resolve(&nh->policy, *r, err) < 0)
      return hutch_error_wrap(err, "--resolve %s", *r);
  for (const char *const *a = cfg->net_allow_address; a && *a; a++)
    if (net_policy_set(&nh->policy, "allow_address", *a, 0, err) < 0)
      return hutch_error_wrap(err, "allow_address %s", *a);
  return 0;
}

int net_host_reserve(struct net_host *nh, const struct hutch_sandbox_config *cfg, int state_fd, const char *sandbox_dir,
                     const char *id, hutch_error_t *err) {
  nh->state_fd = state_fd;
  snprintf(nh->id, sizeof(nh->id), "%s", id);
  if (!nh->enabled)
    return 0;
  /* Until the sandbox's init exists, this process keeps the block alive. */
  if (subnet_allocate(state_fd, &nh->policy.subnet, id, getpid(), &nh->sandbox.block, err) < 0)
    return -1;
  nh->subnet_held = true;
  nh->sandbox.enabled = true;
  nh->sandbox.port = NET_PROXY_PORT;
  subnet_ntoa(net_gateway_addr(&nh->sandbox), nh->gateway);
  subnet_ntoa(net_sandbox_addr(&nh->sandbox), nh->address);
  nh->audit_log_in_state = cfg->net_audit_log == NULL && !cfg->keep;
  nh->audit_log = cfg->net_audit_log ? xstrdup(cfg->net_audit_log) : xasprintf("%s/proxy.log", sandbox_dir);
  _cleanup_free_ char *url = xasprintf("http://%s:%u", nh->gateway, (unsigned)NET_PROXY_PORT);
  static const char *const proxy_vars[] = {"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"};
  nh->env = xcalloc(ARRAY_SIZE(proxy_vars) + 3, sizeof(char *));
  size_t n = 0;
  for (size_t i = 0; i < ARRAY_SIZE(proxy_vars); i++)
    nh->env[n++] = xasprintf("%s=%s", proxy_vars[i], url);
  nh->env[n++] = xstrdup("NO_PROXY=localhost,127.0.0.1,::1");
  nh->env[n++] = xstrdup("no_proxy=localhost,127.0.0.1,::1");
  return 0;
}

/* Serve the sandbox's listener until its init is gone.  The listening
 * socket and a pidfd of the sandbox's init arrive on the channel once they
 * exist; every audit line is written when the channel closes.  Returns the
 * exit status of a proxy process. */
static int proxy_serve(const char *id, const struct net_policy *policy, int channel, int audit_fd) {
  _cleanup_error_ hutch_error_t err = NULL;
  struct proxy *p = NULL;
  if (proxy_new(&p, &err) < 0) {
    sync_send_error(channel, err);
    close(audit_fd);
    close(channel);
    return 1;
  }
  uint32_t type;
  int fds[SYNC_MAX_FDS];
  size_t nfds = 0;
  /* EOF: the sandbox did not start; nothing to serve. */
  int r = sync_recv(channel, &type, NULL, 0, NULL, fds, &nfds, &err);
  if (r <= 0 || type != SYNC_NET_LISTENER || nfds != 2) {
    for (size_t i = 0; i < nfds; i++)
      close(fds[i]);
    close(audit_fd);
    close(channel);
    proxy_free(p);
    return 0;
  }
  struct proxy_listener_config lc = {
      .listen_fd = fds[0],
      .sandbox_id = id,
      .policy = policy,
      .audit_fd = audit_fd,
  };
  int status = 1;
  if (proxy_add_listener(p, &lc, &err) < 0) {
    sync_send_error(channel, err);
  } else {
    sync_send(channel, SYNC_READY, NULL, 0, NULL, 0, NULL);
    status = proxy_run(p, fds[1], &err) < 0 ? 1 : 0;
  }
  close(fds[1]);
  /* The caller waits for this, not for the teardown after it (resolver
   * threads, the gateway namespace's last socket, a process's exit). */
  close(channel);
  proxy_free(p);
  return status;
}

/* A long-lived sandbox's proxy: a process of its own session, holding
 * nothing of the caller's but its channel and the audit log, since it
 * outlives the caller. */
__attribute__((noreturn)) static void proxy_process_main(struct net_host *nh, int channel, int audit_fd) {
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  signal(SIGPIPE, SIG_IGN);
  setsid();
  int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
  if (devnull >= 0)
    for (int i = 0; i < 3; i++)
      dup2(devnull, i);
  /* Close everything else: the caller's sync socket, state directory and
   * terminal must not be held open by a process that may outlive it. */
  int keep[] = {channel, audit_fd};
  close_fds_except(keep, ARRAY_SIZE(keep));
  _exit(proxy_serve(nh->id, &nh->policy, channel, audit_fd));
}

/* The thread's own copies: one that is stuck past the caller's patience
 * is left running, and must not read the caller's memory after that. */
struct proxy_thread_start {
  char id[40];
  struct net_policy policy;
  int channel, audit_fd;
};

static void *proxy_thread_main(void *data) {
  struct proxy_thread_start *start = data;
  proxy_serve(start->id, &start->policy, start->channel, start->audit_fd);
  net_policy_clear(&start->policy);
  free(start);
  return NULL;
}

/* A one-shot run's proxy ends with the run, in this process: a thread
 * starts in microseconds, where a fork copies page tables and then pays a
 * copy-on-write fault for every page either side touches, and a process
 * has to be torn down after.  It has no more access than a forked proxy
 * would have (the same user, the host's namespaces). */
static int spawn_proxy_thread(struct net_host *nh, int channel, int audit_fd, hutch_error_t *err) {
  struct proxy_thread_start *start = xcalloc(1, sizeof(*start));
  snprintf(start->id, sizeof(start->id), "%s", nh->id);
  net_policy_copy(&start->policy, &nh->policy);
  start->channel = channel;
  start->audit_fd = audit_fd;
  /* No signal of the caller's is the proxy's to take; its sends are
   * MSG_NOSIGNAL, so a closed socket is EPIPE, never SIGPIPE. */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  int r = pthread_create(&nh->proxy_thread, NULL, proxy_thread_main, start);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (r != 0) {
    net_policy_clear(&start->policy);
    free(start);
    return hutch_error_set(err, r, "network: start the proxy thread");
  }
  nh->proxy_threaded = true;
  return 0;
}

int net_host_spawn_proxy(struct net_host *nh, bool long_lived, hutch_error_t *err) {
  if (!nh->enabled)
    return 0;
  _cleanup_close_ int audit_fd = open(nh->audit_log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (audit_fd < 0)
    return hutch_error_sys(err, "network: open the audit log %s", nh->audit_log);
  int sp[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0)
    return hutch_error_sys(err, "network: socketpair");
  if (!long_lived) {
    if (spawn_proxy_thread(nh, sp[1], audit_fd, err) < 0) {
      close(sp[0]);
      close(sp[1]);
      return -1;
    }
    audit_fd = -1; /* the thread's now */
    nh->channel = sp[0];
    return 0;
  }
  pid_t pid = fork();
  if (pid < 0) {
    close(sp[0]);
    close(sp[1]);
    return hutch_error_sys(err, "network: fork the proxy");
  }
  if (pid == 0) {
    close(sp[0]);
    proxy_process_main(nh, sp[1], audit_fd);
  }
  close(sp[1]);
  nh->channel = sp[0];
  nh->proxy_pid = pid;
  nh->proxy_start_time = proc_stat_start_time(pid);
  return 0;
}

int net_host_start_proxy(struct net_host *nh, int listen_fd, int stop_fd, hutch_error_t *err) {
  _cleanup_close_ int lfd = listen_fd;
  int fds[2] = {lfd, stop_fd};
  if (sync_send(nh->channel, SYNC_NET_LISTENER, NULL, 0, fds, 2, err) < 0)
    return hutch_error_wrap(err, "network: hand the listening socket to the proxy");
  return 0;
}

int net_host_proxy_ready(struct net_host *nh, hutch_error_t *err) {
  if (nh->channel < 0)
    return 0;
  /* The channel stays open: net_host_finish waits for its EOF. */
  return sync_expect(nh->channel, SYNC_READY, NULL, 0, NULL, "network: start the proxy", err);
}

/* `grace_ms`: how long it may take to end by itself first (it does once
 * the sandbox's init is gone, after its last lines: the connections it
 * closes, what it counted without logging). */
static void kill_proxy(pid_t pid, uint64_t start_time, bool ours, int grace_ms) {
  if (pid <= 0)
    return;
  int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
  if (pidfd < 0)
    return;
  /* The pidfd pins the process: check it is still the proxy we started. */
  if (start_time != 0 && proc_stat_start_time(pid) != start_time) {
    close(pidfd);
    return;
  }
  struct pollfd ended = {pidfd, POLLIN, 0};
  double until = monotonic_seconds() + grace_ms / 1e3;
  while (grace_ms > 0 && poll(&ended, 1, grace_ms) < 0 && errno == EINTR)
    grace_ms = (int)((until - monotonic_seconds()) * 1e3);
  syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
  if (ours) {
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
      ;
  } else {
    struct pollfd pfd = {pidfd, POLLIN, 0};
    while (poll(&pfd, 1, 5000) < 0 && errno == EINTR)
      ;
    waitpid(pid, NULL, WNOHANG); /* our child after all (the agent's sandboxes) */
  }
  close(pidfd);
}

/* A stuck proxy thread cannot be killed: it is left to end with the
 * process (it holds copies of what it reads). */
static void join_proxy_thread(struct net_host *nh, bool wait) {
  if (!nh->proxy_threaded)
    return;
  nh->proxy_threaded = false;
  struct timespec deadline;
  clock_gettime(CLOCK_REALTIME, &deadline);
  deadline.tv_sec += wait ? 5 : 0;
  if (pthread_timedjoin_np(nh->proxy_thread, NULL, &deadline) != 0) {
    pthread_detach(nh->proxy_thread);
  }
}

void net_host_finish(struct net_host *nh, struct hutch_net_summary *summary) {
  if (!nh->enabled)
    return;
  if (nh->proxy_pid > 0 || nh->proxy_threaded) {
    /* It stops by itself once init is gone and closes its channel when
     * the audit log is complete (or dies, which closes it too); a stuck
     * one is not waited for longer than a few seconds.  Its exit is
     * reaped last, by net_host_clear, off the path to the caller. */
    int fd = nh->channel >= 0 ? nh->channel : (nh->proxy_pid > 0 ? (int)syscall(SYS_pidfd_open, nh->proxy_pid, 0) : -1);
    struct pollfd pfd = {fd, POLLIN, 0};
    int n = 1;
    if (fd >= 0)
      while ((n = poll(&pfd, 1, 5000)) < 0 && errno == EINTR)
        ;
    if (fd >= 0 && fd != nh->channel)
      close(fd);
    if (nh->channel >= 0)
      close(nh->channel);
    nh->channel = -1;
    if (n == 0 && nh->proxy_pid > 0) {
      kill_proxy(nh->proxy_pid, 0, true, 0);
      nh->proxy_pid = -1;
    } else if (n == 0) {
      join_proxy_thread(nh, false);
    } else {
      nh->reap_proxy = true;
    }
  }
  if (summary) {
    hutch_error_t unread = NULL; /* in summary->unread */
    if (hutch_net_summarize(nh->audit_log, summary, &unread) < 0)
      hutch_error_free(&unread);
    if (nh->audit_log_in_state)
      summary->audit_log[0] = '\0';
  }
  if (nh->subnet_held)
    subnet_release(nh->state_fd, nh->id);
  nh->subnet_held = false;
}

void net_host_abort(struct net_host *nh) {
  /* The channel's EOF ends a proxy still waiting for its listener; one
   * already serving ends with the sandbox's init, killed by now. */
  if (nh->channel >= 0)
    close(nh->channel);
  nh->channel = -1;
  if (nh->proxy_pid > 0)
    kill_proxy(nh->proxy_pid, 0, true, 0);
  nh->proxy_pid = -1;
  join_proxy_thread(nh, true);
  if (nh->subnet_held)
    subnet_release(nh->state_fd, nh->id);
  nh->subnet_held = false;
}

void net_host_clear(struct net_host *nh) {
  if (nh->channel >= 0)
    close(nh->channel);
  nh->channel = -1;
  if (nh->reap_proxy && nh->proxy_pid > 0)
    while (waitpid(nh->proxy_pid, NULL, 0) < 0 && errno == EINTR)
      ;
  join_proxy_thread(nh, true);
  nh->reap_proxy = false;
  nh->proxy_pid = -1;
  if (nh->enabled)
    net_policy_clear(&nh->policy);
  free(nh->audit_log);
  strv_free(nh->env);
  nh->audit_log = NULL;
  nh->env = NULL;
  nh->enabled = false;
}

void net_host_teardown(int state_fd, const char *id, pid_t proxy_pid, uint64_t proxy_start_time) {
  /* Its init is gone by now: the proxy is ending. */
  if (proxy_pid > 0 && proxy_start_time != 0)
    kill_proxy(proxy_pid, proxy_start_time, false, 2000);
  subnet_release(state_fd, id);
}

int hutch_net_summarize(const char *audit_log, struct hutch_net_summary *out, hutch_error_t *err) {
  struct proxy_audit_summary s;
  memset(out, 0, sizeof(*out));
  out->proxy = true;
  snprintf(out->audit_log, sizeof(out->audit_log), "%s", audit_log);
  if (proxy_audit_summarize(audit_log, &s, err) < 0) {
    /* Never a count of zero for a log that was not read. */
    snprintf(out->unread, sizeof(out->unread), "%s", (*err)->msg);
    return -1;
  }
  out->requests = s.requests;
  out->allowed = s.allowed;
  out->refused = s.refused;
  out->errors = s.errors;
  out->unlogged = s.unlogged;
  if (s.n_top_refused > 0)
    snprintf(out->top_refused, sizeof(out->top_refused), "%s", s.top_refused[0]);
  return 0;
}

void hutch_net_summary_format(const struct hutch_net_summary *s, char *buf, size_t len) {
  if (s->unread[0]) {
    _cleanup_free_ char *why = text_escape_cstr(s->unread);
    snprintf(buf, len, "requests unknown: the proxy's log could not be read (%s)", why);
    return;
  }
  int n = snprintf(buf, len, "%llu request%s, %llu allowed, %llu refused", (unsigned long long)s->requests,
                   s->requests == 1 ? "" : "s", (unsigned long long)s->allowed, (unsigned long long)s->refused);
  if (s->top_refused[0] && n > 0 && (size_t)n < len) {
    /* A host name the sandbox asked for: whatever bytes it sent. */
    _cleanup_free_ char *host = text_escape_cstr(s->top_refused);
    n += snprintf(buf + n, len - (size_t)n, " (%s)", host);
  }
  if (s->errors && n > 0 && (size_t)n < len)
    n += snprintf(buf + n, len - (size_t)n, ", %llu failed", (unsigned long long)s->errors);
  if (s->unlogged && n > 0 && (size_t)n < len)
    snprintf(buf + n, len - (size_t)n, "; %llu counted, not logged (refusals past the rate, or log_max reached)",
             (unsigned long long)s->unlogged);
}
