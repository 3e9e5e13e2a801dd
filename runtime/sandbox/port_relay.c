/* SPDX-License-Identifier: Apache-2.0 */
/* The relay of a sandbox's published ports: a host process holding the
 * listeners, and its connector, a child that has joined the sandbox's user
 * and network namespaces with no capability left.  The relay cannot join
 * them itself: entering a network namespace needs CAP_SYS_ADMIN in the
 * caller's own user namespace, and a process that joins the sandbox's to
 * get it cannot come back to the host's.  Sockets keep the namespace they
 * were made in, so the connector makes them and hands them over, and the
 * relay joins both sides in one epoll loop (relay_conn.c).
 *
 * The connector answers one request: a socket connecting to 127.0.0.1 on
 * the port of entry N of the relay's configuration, which it has from the
 * fork.  The sandbox can make it do nothing else. */
#include "config.h"

#include "port_relay.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "relay_conn.h"
#include "sync.h"
#include "util.h"

#define MSG_SOCKET_REQ 0x52500001u
#define MSG_SOCKET 0x52500002u
#define MSG_JOINED 0x52500003u

struct req {
  uint32_t slot, index;
};
struct rep {
  uint32_t slot;
  int32_t errnum;
};

/* Closes every fd but those in keep (and 0-2, which go to /dev/null). */
static void close_all_but(const int *keep, size_t n) {
  int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
  if (devnull >= 0)
    for (int i = 0; i < 3; i++)
      dup2(devnull, i);
  close_fds_except(keep, n);
}

static void send_rep(int ch, uint32_t type, uint32_t slot, int errnum, int fd) {
  struct rep r = {.slot = slot, .errnum = errnum};
  sync_send(ch, type, &r, sizeof(r), fd >= 0 ? &fd : NULL, fd >= 0 ? 1 : 0, NULL);
}

/* Until init has exec'd hutch-init its memory belongs to the host's user
 * namespace (it is a fork of the creator), and a process that is not
 * dumpable there is out of an unprivileged caller's reach: setns says
 * EPERM.  A create returns before that exec, so EPERM is waited out, for
 * a bounded time. */
static int join_sandbox(int init_pidfd) {
  for (int i = 0;; i++) {
    if (setns(init_pidfd, CLONE_NEWUSER | CLONE_NEWNET) == 0)
      return 0;
    if (errno != EPERM || i == 500)
      return -1;
    struct timespec ts = {0, 10 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
}

__attribute__((noreturn)) static void connector_main(int ch, int init_pidfd, const struct port_set *s) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  int keep[] = {ch, init_pidfd};
  close_all_but(keep, ARRAY_SIZE(keep));
  struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
  struct __user_cap_data_struct none[2];
  memset(none, 0, sizeof(none));
  /* Joining gives every capability in the sandbox's user namespace:
   * dropped at once, so the connector can do no more than a process of
   * the sandbox. */
  if (join_sandbox(init_pidfd) < 0 || syscall(SYS_capset, &h, none) < 0 || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) {
    send_rep(ch, MSG_JOINED, 0, errno ? errno : EPERM, -1);
    _exit(1);
  }
  close(init_pidfd);
  send_rep(ch, MSG_JOINED, 0, 0, -1);
  for (;;) {
    struct req q;
    uint32_t type = 0;
    size_t len = 0;
    int r = sync_recv(ch, &type, &q, sizeof(q), &len, NULL, NULL, NULL);
    if (r <= 0)
      _exit(0); /* the relay is gone */
    if (type != MSG_SOCKET_REQ || len != sizeof(q) || q.index >= s->n) {
      send_rep(ch, MSG_SOCKET, q.slot, EINVAL, -1);
      continue;
    }
    struct sockaddr_in to = {
        .sin_family = AF_INET, .sin_port = htons(s->pub[q.index].port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int e = fd < 0 ? errno : 0;
    if (fd >= 0 && connect(fd, (struct sockaddr *)&to, sizeof(to)) < 0 && errno != EINPROGRESS)
      e = errno;
    send_rep(ch, MSG_SOCKET, q.slot, e, e ? -1 : fd);
    if (fd >= 0)
      close(fd);
  }
}

struct relay {
  int ep, ch, sbfd;
  const struct port_set *s;
  size_t max_conns, open;
  struct relay_conn conns[RELAY_MAX_CONNS];
  struct relay_stats st, written;
  double idle;
};

/* The counts, replaced whole (a file of fixed size): read by the teardown
 * for the audit's ports_summary. */
static void write_stats(struct relay *r) {
  if (memcmp(&r->st, &r->written, sizeof(r->st)) == 0)
    return;
  int fd = openat(r->sbfd, RELAY_STATS_NAME ".new", O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0)
    return;
  bool ok = write_all(fd, &r->st, sizeof(r->st)) == 0;
  close(fd);
  if (ok && renameat(r->sbfd, RELAY_STATS_NAME ".new", r->sbfd, RELAY_STATS_NAME) == 0)
    r->written = r->st;
}

static void accept_clients(struct relay *r, size_t index, double now) {
  /* A bounded batch: the other listeners and connections get their turn. */
  for (int i = 0; i < 64; i++) {
    int cfd = accept4(r->s->fds[index], NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (cfd < 0)
      return;
    size_t slot = 0;
    while (slot < r->max_conns && r->conns[slot].state != CONN_FREE)
      slot++;
    struct req q = {.slot = (uint32_t)slot, .index = (uint32_t)index};
    if (slot == r->max_conns || sync_send(r->ch, MSG_SOCKET_REQ, &q, sizeof(q), NULL, 0, NULL) < 0) {
      r->st.refused++;
      close(cfd);
      continue;
    }
    relay_conn_begin(&r->conns[slot], r->ep, slot, cfd, now);
    r->open++;
  }
}

/* The connector's answer for one waiting client. */
static int take_socket(struct relay *r, double now) {
  struct rep p;
  uint32_t type = 0;
  size_t len = 0, nfds = 1;
  int fd = -1;
  int rc = sync_recv(r->ch, &type, &p, sizeof(p), &len, &fd, &nfds, NULL);
  if (rc <= 0)
    return -1; /* the connector is gone: the sandbox's namespace with it */
  struct relay_conn *c = p.slot < r->max_conns ? &r->conns[p.slot] : NULL;
  bool valid = type == MSG_SOCKET && len == sizeof(p) && c && c->state == CONN_WAIT_SOCKET;
  if (!valid || p.errnum != 0 || nfds != 1 || fd < 0) {
    if (fd >= 0)
      close(fd);
    if (valid) {
      r->st.failed++;
      relay_conn_close(c, r->ep);
      r->open--;
    }
    return 0;
  }
  if (relay_conn_connecting(c, r->ep, p.slot, fd, now) < 0) {
    r->st.failed++;
    r->open--;
  }
  return 0;
}

static void expire(struct relay *r, double now) {
  for (size_t i = 0; i < r->max_conns; i++) {
    struct relay_conn *c = &r->conns[i];
    if (c->state == CONN_FREE)
      continue;
    double limit = c->state == CONN_OPEN ? r->idle : RELAY_CONNECT_TIMEOUT;
    if (now - c->since > limit) {
      if (c->state != CONN_OPEN)
        r->st.failed++;
      relay_conn_close(c, r->ep);
      r->open--;
    }
  }
}

static int add(int ep, int fd, uint64_t tag) {
  struct epoll_event ev = {.events = EPOLLIN, .data.u64 = tag};
  return epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
}

/* Each connection takes four fds (two sockets, two pipes): as many as the
 * fd limit allows, up to RELAY_MAX_CONNS. */
static size_t conn_room(void) {
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
    return 64;
  rl.rlim_cur = rl.rlim_max;
  setrlimit(RLIMIT_NOFILE, &rl);
  getrlimit(RLIMIT_NOFILE, &rl);
  size_t room = rl.rlim_cur > 4 * PORTS_MAX ? (size_t)(rl.rlim_cur - 4 * PORTS_MAX) / 4 : 1;
  return room < RELAY_MAX_CONNS ? room : RELAY_MAX_CONNS;
}

static int serve(struct relay *r, int init_pidfd) {
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGHUP);
  int sfd = signalfd(-1, &stop, SFD_CLOEXEC | SFD_NONBLOCK);
  int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
  struct itimerspec tick = {.it_interval = {1, 0}, .it_value = {1, 0}};
  if (sfd < 0 || tfd < 0 || timerfd_settime(tfd, 0, &tick, NULL) < 0 || add(r->ep, sfd, RELAY_TAG(TAG_SIGNAL, 0)) ||
      add(r->ep, tfd, RELAY_TAG(TAG_TIMER, 0)) || add(r->ep, init_pidfd, RELAY_TAG(TAG_INIT, 0)) ||
      add(r->ep, r->ch, RELAY_TAG(TAG_CONNECTOR, 0)))
    return 1;
  for (size_t i = 0; i < r->s->n; i++)
    if (add(r->ep, r->s->fds[i], RELAY_TAG(TAG_LISTENER, i)) < 0)
      return 1;
  unsigned ticks = 0;
  for (;;) {
    struct epoll_event evs[64];
    int n = epoll_wait(r->ep, evs, ARRAY_SIZE(evs), -1);
    if (n < 0 && errno != EINTR)
      return 1;
    double now = monotonic_seconds();
    for (int i = 0; i < n; i++) {
      uint32_t kind = (uint32_t)(evs[i].data.u64 >> 32), index = (uint32_t)evs[i].data.u64;
      switch (kind) {
      case TAG_LISTENER:
        accept_clients(r, index, now);
        break;
      case TAG_CLIENT:
      case TAG_SANDBOX:
        if (index < r->max_conns && r->conns[index].state != CONN_FREE &&
            !relay_conn_event(&r->conns[index], r->ep, index, kind == TAG_CLIENT, evs[i].events, now, &r->st))
          r->open--;
        break;
      case TAG_CONNECTOR:
        if (take_socket(r, now) < 0)
          return 0;
        break;
      case TAG_INIT:
      case TAG_SIGNAL:
        return 0; /* the sandbox has ended, or the relay is stopped */
      case TAG_TIMER: {
        uint64_t x;
        if (read(tfd, &x, sizeof(x)) < 0 && errno != EAGAIN)
          return 1;
        expire(r, now);
        if (++ticks % 5 == 0)
          write_stats(r);
        break;
      }
      default:
        break;
      }
    }
  }
}

void relay_main(int sbfd, int init_pidfd, int ready_fd, const struct port_set *s) {
  sigset_t all;
  sigfillset(&all);
  sigprocmask(SIG_SETMASK, &all, NULL);
  signal(SIGPIPE, SIG_IGN);
  setsid();
  prctl(PR_SET_DUMPABLE, 0);
  /* Nor the caller's working directory, which it may want to unmount. */
  if (chdir("/") < 0)
    _exit(1);
  /* The library's log handler may be the caller's (Python's): not the
   * relay's to call. */
  hutch_set_log_handler(NULL, NULL);
  int keep[PORTS_MAX + 3] = {sbfd, init_pidfd, ready_fd};
  memcpy(keep + 3, s->fds, s->n * sizeof(int));
  close_all_but(keep, 3 + s->n);
  int32_t ready[2] = {getpid(), 0};
  int sp[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0) {
    ready[1] = errno;
    write_all(ready_fd, ready, sizeof(ready));
    _exit(1);
  }
  pid_t c = fork();
  if (c == 0) {
    close(sp[0]);
    connector_main(sp[1], init_pidfd, s);
  }
  close(sp[1]);
  struct rep joined = {0};
  uint32_t type = 0;
  size_t len = 0;
  if (c < 0)
    ready[1] = errno;
  else if (sync_recv(sp[0], &type, &joined, sizeof(joined), &len, NULL, NULL, NULL) <= 0 || type != MSG_JOINED)
    ready[1] = EIO;
  else
    ready[1] = joined.errnum;
  write_all(ready_fd, ready, sizeof(ready));
  close(ready_fd);
  if (ready[1] != 0)
    _exit(1);
  static struct relay r;
  r.ep = epoll_create1(EPOLL_CLOEXEC);
  r.ch = sp[0];
  r.sbfd = sbfd;
  r.s = s;
  r.max_conns = conn_room();
  r.idle = RELAY_IDLE_TIMEOUT;
  for (size_t i = 0; i < RELAY_MAX_CONNS; i++)
    r.conns[i] = (struct relay_conn){.state = CONN_FREE, .cfd = -1, .sfd = -1};
  int rc = r.ep < 0 ? 1 : serve(&r, init_pidfd);
  for (size_t i = 0; i < r.max_conns; i++)
    relay_conn_close(&r.conns[i], r.ep);
  /* Written even when unchanged since the last: the file says it ended. */
  memset(&r.written, 0xff, sizeof(r.written));
  write_stats(&r);
  _exit(rc);
}
