/* SPDX-License-Identifier: Apache-2.0 */
/* The proxy's event loop and listeners (proxy.h).  Connections live in
 * proxy_conn.c; this file accepts them, routes epoll events, sweeps the
 * timeouts and enforces each listener's byte budget. */
#include "config.h"

#include <fcntl.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include "proxy_internal.h"
#include "util.h"

#define ACCEPT_BATCH 64
#define SWEEP_INTERVAL 0.25
#define MAX_EVENTS 4096

int proxy_new(struct proxy **out, hutch_error_t *err) {
  /* Each tunnel holds two descriptors: a thousand concurrent tunnels do
   * not fit the usual soft RLIMIT_NOFILE of 1024, so the soft limit is
   * raised to the hard one here (the proxy is a process of its own). */
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
      hutch_log_errno(HUTCH_LOG_DEBUG, errno, "proxy: raise RLIMIT_NOFILE");
  }
  struct proxy *p = xcalloc(1, sizeof(*p));
  p->max_events = rl.rlim_cur < 64 ? 64 : rl.rlim_cur > MAX_EVENTS ? MAX_EVENTS : (size_t)rl.rlim_cur;
  p->epfd = epoll_create1(EPOLL_CLOEXEC);
  if (p->epfd < 0) {
    hutch_error_sys(err, "proxy: epoll_create1");
    free(p);
    return -1;
  }
  *out = p;
  return 0;
}

/* The resolver threads start at the first name to resolve: most sandboxes
 * reach only literal or overridden addresses, or nothing at all, and the
 * threads would otherwise cost every start. */
struct resolver *proxy_resolver(struct proxy *p, hutch_error_t *err) {
  if (p->resolver)
    return p->resolver;
  struct resolver *r;
  if (resolver_new(&r, err) < 0)
    return NULL;
  p->resolver_ep = (struct endpoint){.kind = EP_RESOLVER, .fd = resolver_fd(r), .owner = p};
  struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &p->resolver_ep};
  if (epoll_ctl(p->epfd, EPOLL_CTL_ADD, p->resolver_ep.fd, &ev) < 0) {
    hutch_error_sys(err, "proxy: epoll_ctl (resolver)");
    resolver_free(r);
    return NULL;
  }
  p->resolver = r;
  return r;
}

int proxy_add_listener(struct proxy *p, const struct proxy_listener_config *cfg, hutch_error_t *err) {
  int flags = fcntl(cfg->listen_fd, F_GETFL);
  if (flags < 0 || fcntl(cfg->listen_fd, F_SETFL, flags | O_NONBLOCK) < 0) {
    hutch_error_sys(err, "proxy: listener of sandbox %s: set O_NONBLOCK", cfg->sandbox_id);
    close(cfg->listen_fd);
    if (cfg->audit_fd >= 0)
      close(cfg->audit_fd);
    return -1;
  }
  struct listener *l = xcalloc(1, sizeof(*l));
  l->p = p;
  l->ep = (struct endpoint){.kind = EP_LISTENER, .fd = cfg->listen_fd, .owner = l};
  l->sandbox_id = xstrdup(cfg->sandbox_id ? cfg->sandbox_id : "");
  l->policy = cfg->policy;
  l->audit_fd = cfg->audit_fd;
  l->peer_pid = cfg->peer_pid;
  p->listeners = xrealloc(p->listeners, (p->n_listeners + 1) * sizeof(*p->listeners));
  p->listeners[p->n_listeners++] = l;
  struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &l->ep};
  if (epoll_ctl(p->epfd, EPOLL_CTL_ADD, l->ep.fd, &ev) < 0)
    return hutch_error_sys(err, "proxy: listener of sandbox %s: epoll_ctl", l->sandbox_id);
  return 0;
}

static void set_listening(struct listener *l, bool on) {
  struct epoll_event ev = {.events = on ? EPOLLIN : 0, .data.ptr = &l->ep};
  if (epoll_ctl(l->p->epfd, EPOLL_CTL_MOD, l->ep.fd, &ev) < 0)
    hutch_log_errno(HUTCH_LOG_WARNING, errno, "proxy: epoll_ctl (listener)");
}

/* Paused until the sweep after `seconds`: connections wait in the
 * kernel's backlog meanwhile. */
static void pause_listener(struct listener *l, double now, double seconds) {
  if (l->paused_until > 0)
    return;
  l->paused_until = now + seconds;
  set_listening(l, false);
}

void listener_refused(struct listener *l, double now) {
  if (!proxy_bucket_take(&l->serve_tokens, PROXY_REFUSALS_SERVED, PROXY_REFUSALS_SERVED, now))
    pause_listener(l, now, 0.1);
}

/* A Unix socket's path can be reached by whatever sees the file (a sandbox
 * with a bind of the directory, a process of the same uid): a proxy meant
 * for one process serves only the connections that process made, as the
 * kernel recorded them at connect(). */
static bool peer_is(int fd, pid_t pid) {
  struct ucred cred;
  socklen_t len = sizeof(cred);
  return getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 && len == sizeof(cred) && cred.pid == pid;
}

static void accept_batch(struct listener *l, double now) {
  for (int i = 0; i < ACCEPT_BATCH; i++) {
    int fd = accept4(l->ep.fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd >= 0 && l->peer_pid > 0 && !peer_is(fd, l->peer_pid)) {
      hutch_log(HUTCH_LOG_WARNING, "proxy: a connection from another process than %d refused (%s)", (int)l->peer_pid,
                l->sandbox_id);
      close(fd);
      continue;
    }
    if (fd >= 0) {
      conn_accept(l, fd, now);
      continue;
    }
    if (errno == EINTR || errno == ECONNABORTED)
      continue;
    if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
      /* Level-triggered: without a pause the loop would spin on it. */
      hutch_log_errno(HUTCH_LOG_WARNING, errno, "proxy: accept (sandbox %s), pausing for 100 ms", l->sandbox_id);
      pause_listener(l, now, 0.1);
    } else if (errno != EAGAIN) {
      hutch_log_errno(HUTCH_LOG_WARNING, errno, "proxy: accept (sandbox %s)", l->sandbox_id);
    }
    return;
  }
}

static void resolved(struct proxy *p, double now) {
  struct resolve_job *job = resolver_take_done(p->resolver);
  while (job) {
    struct resolve_job *next = job->next;
    if (job->c && !job->c->dead)
      conn_resolved(job->c, job, now);
    free(job);
    job = next;
  }
}

static void run_pending(struct proxy *p, double now) {
  struct conn *list = p->pending;
  p->pending = NULL;
  for (struct conn *c = list; c; c = c->pending_next)
    c->pending = false;
  /* conn_pump() may put a connection back on p->pending (a fresh list),
   * or close one further down this list: close marks it dead first. */
  struct conn *c = list;
  while (c) {
    struct conn *next = c->pending_next;
    if (!c->dead)
      conn_pump(c, now);
    c = next;
  }
}

static void sweep(struct proxy *p, double now) {
  for (size_t i = 0; i < p->n_listeners; i++) {
    struct listener *l = p->listeners[i];
    if (l->paused_until > 0 && now >= l->paused_until) {
      l->paused_until = 0;
      set_listening(l, true);
    }
    proxy_log_tick(l, now);
    for (struct conn *c = l->conns, *next; c; c = next) {
      next = c->next;
      conn_timeout_check(c, now);
    }
  }
}

/* Past the budget nothing more goes through: open transfers end now, new
 * requests are refused when their head is read. */
static void enforce_budgets(struct proxy *p) {
  for (size_t i = 0; i < p->n_listeners; i++) {
    struct listener *l = p->listeners[i];
    if (!l->exhausted)
      continue;
    for (struct conn *c = l->conns, *next; c; c = next) {
      next = c->next;
      if (c->state != CONN_HEAD && c->state != CONN_LINGER)
        conn_close(c, "byte budget exhausted");
    }
  }
}

static void bury(struct proxy *p) {
  while (p->graveyard) {
    struct conn *c = p->graveyard;
    p->graveyard = c->next;
    conn_free(c);
  }
}

/* Every connection closed and logged, then what was counted instead. */
static void close_all(struct proxy *p, const char *why) {
  for (size_t i = 0; i < p->n_listeners; i++) {
    while (p->listeners[i]->conns)
      conn_close(p->listeners[i]->conns, why);
    proxy_log_end(p->listeners[i]);
  }
  bury(p);
}

int proxy_run(struct proxy *p, int stop_fd, hutch_error_t *err) {
  struct endpoint stop = {.kind = EP_STOP, .fd = stop_fd, .owner = p};
  if (stop_fd >= 0) {
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &stop};
    if (epoll_ctl(p->epfd, EPOLL_CTL_ADD, stop_fd, &ev) < 0)
      return hutch_error_sys(err, "proxy: epoll_ctl (stop fd)");
  }
  _cleanup_free_ struct epoll_event *events = xcalloc(p->max_events, sizeof(*events));
  double next_sweep = monotonic_seconds() + SWEEP_INTERVAL;
  bool stopping = false;
  int r = 0;
  while (!stopping) {
    int n = epoll_wait(p->epfd, events, (int)p->max_events, p->pending ? 0 : (int)(SWEEP_INTERVAL * 1000));
    if (n < 0) {
      if (errno == EINTR)
        continue;
      r = hutch_error_sys(err, "proxy: epoll_wait");
      break;
    }
    double now = monotonic_seconds();
    for (int i = 0; i < n; i++) {
      struct endpoint *ep = events[i].data.ptr;
      switch (ep->kind) {
      case EP_LISTENER:
        accept_batch(ep->owner, now);
        break;
      case EP_CLIENT:
      case EP_UPSTREAM: {
        struct conn *c = ep->owner;
        if (!c->dead)
          conn_event(c, ep, events[i].events, now);
        break;
      }
      case EP_RESOLVER:
        resolved(p, now);
        break;
      case EP_STOP:
        stopping = true;
        break;
      }
    }
    run_pending(p, now);
    enforce_budgets(p);
    if (now >= next_sweep) {
      sweep(p, now);
      next_sweep = now + SWEEP_INTERVAL;
    }
    bury(p);
  }
  close_all(p, "proxy stopped");
  if (stop_fd >= 0)
    epoll_ctl(p->epfd, EPOLL_CTL_DEL, stop_fd, NULL);
  return r;
}

void proxy_free(struct proxy *p) {
  if (p == NULL)
    return;
  close_all(p, "proxy stopped");
  for (size_t i = 0; i < p->n_listeners; i++) {
    struct listener *l = p->listeners[i];
    close(l->ep.fd);
    if (l->audit_fd >= 0)
      close(l->audit_fd);
    free(l->sandbox_id);
    free(l);
  }
  free(p->listeners);
  resolver_free(p->resolver);
  if (p->epfd >= 0)
    close(p->epfd);
  free(p);
}
