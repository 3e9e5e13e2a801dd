/* SPDX-License-Identifier: Apache-2.0 */
/* One relayed connection (relay_conn.h).  Each direction is a pipe: the
 * source is read (spliced into the pipe) only while the pipe has room, the
 * pipe emptied into the destination only while it takes data, so a peer
 * that does not read stalls its own connection and nothing else, and the
 * relay holds at most one pipe's worth per direction, in the kernel. */
#include "config.h"

#include "relay_conn.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util.h"

#define PIPE_SIZE (64 * 1024)

static void close_fd(int *fd) {
  if (*fd >= 0)
    close(*fd);
  *fd = -1;
}

static void dir_close(struct relay_dir *d) {
  close_fd(&d->pipe[0]);
  close_fd(&d->pipe[1]);
}

static int dir_open(struct relay_dir *d) {
  *d = (struct relay_dir){.pipe = {-1, -1}};
  if (pipe2(d->pipe, O_NONBLOCK | O_CLOEXEC) < 0)
    return -1;
  fcntl(d->pipe[1], F_SETPIPE_SZ, PIPE_SIZE);
  /* What it really holds (less once the user's pipe quota is spent): the
   * room a read may count on. */
  int size = fcntl(d->pipe[1], F_GETPIPE_SZ);
  d->cap = size > 0 ? (size_t)size : 4096;
  return 0;
}

void relay_conn_close(struct relay_conn *c, int ep) {
  if (c->state == CONN_FREE)
    return;
  if (c->cfd >= 0)
    epoll_ctl(ep, EPOLL_CTL_DEL, c->cfd, NULL);
  if (c->sfd >= 0)
    epoll_ctl(ep, EPOLL_CTL_DEL, c->sfd, NULL);
  close_fd(&c->cfd);
  close_fd(&c->sfd);
  if (c->state == CONN_OPEN || c->state == CONN_CONNECTING) {
    dir_close(&c->up);
    dir_close(&c->down);
  }
  *c = (struct relay_conn){.state = CONN_FREE, .cfd = -1, .sfd = -1};
}

void relay_conn_begin(struct relay_conn *c, int ep, size_t slot, int cfd, double now) {
  (void)ep;
  (void)slot;
  *c = (struct relay_conn){.state = CONN_WAIT_SOCKET, .cfd = cfd, .sfd = -1, .since = now};
}

static int watch(int ep, int fd, uint32_t *have, uint32_t want, uint64_t tag) {
  if (*have == want)
    return 0;
  struct epoll_event ev = {.events = want, .data.u64 = tag};
  int op = *have == UINT32_MAX ? EPOLL_CTL_ADD : EPOLL_CTL_MOD;
  if (epoll_ctl(ep, op, fd, &ev) < 0)
    return -1;
  *have = want;
  return 0;
}

/* What each socket is watched for, from the state of the pipes. */
static int rewatch(struct relay_conn *c, int ep, size_t slot) {
  uint32_t cw = 0, sw = 0;
  if (c->state == CONN_CONNECTING)
    sw = EPOLLOUT;
  else {
    if (!c->up.eof && c->up.queued < c->up.cap)
      cw |= EPOLLIN;
    if (c->down.queued > 0)
      cw |= EPOLLOUT;
    if (!c->down.eof && c->down.queued < c->down.cap)
      sw |= EPOLLIN;
    if (c->up.queued > 0)
      sw |= EPOLLOUT;
  }
  if (watch(ep, c->cfd, &c->cev, cw, RELAY_TAG(TAG_CLIENT, slot)) < 0 ||
      watch(ep, c->sfd, &c->sev, sw, RELAY_TAG(TAG_SANDBOX, slot)) < 0)
    return -1;
  return 0;
}

int relay_conn_connecting(struct relay_conn *c, int ep, size_t slot, int sfd, double now) {
  c->sfd = sfd;
  c->state = CONN_CONNECTING;
  c->since = now;
  c->cev = c->sev = UINT32_MAX;
  c->up.pipe[0] = c->up.pipe[1] = c->down.pipe[0] = c->down.pipe[1] = -1;
  if (dir_open(&c->up) < 0 || dir_open(&c->down) < 0 || rewatch(c, ep, slot) < 0) {
    relay_conn_close(c, ep);
    return -1;
  }
  return 0;
}

/* Moves what it can from src through d to dst: 1 when a byte moved, 0
 * when none could, -1 when the connection is broken. */
static int pump(struct relay_dir *d, int src, int dst, uint64_t *bytes) {
  int moved = 0;
  if (!d->eof && d->queued < d->cap) {
    ssize_t n = splice(src, NULL, d->pipe[1], NULL, d->cap - d->queued, SPLICE_F_NONBLOCK | SPLICE_F_MOVE);
    if (n > 0) {
      d->queued += (size_t)n;
      moved = 1;
    } else if (n == 0) {
      d->eof = true;
      moved = 1;
    } else if (errno != EAGAIN && errno != EINTR)
      return -1;
  }
  if (d->queued > 0) {
    ssize_t n = splice(d->pipe[0], NULL, dst, NULL, d->queued, SPLICE_F_NONBLOCK | SPLICE_F_MOVE);
    if (n > 0) {
      d->queued -= (size_t)n;
      *bytes += (uint64_t)n;
      moved = 1;
    } else if (n < 0 && errno != EAGAIN && errno != EINTR)
      return -1;
  }
  if (d->eof && d->queued == 0 && !d->shut) {
    shutdown(dst, SHUT_WR);
    d->shut = true;
  }
  return moved;
}

bool relay_conn_event(struct relay_conn *c, int ep, size_t slot, bool client, uint32_t events, double now,
                      struct relay_stats *st) {
  if (c->state == CONN_CONNECTING) {
    if (client) {
      /* The client left (or wrote) before the sandbox's side is up: an
       * error or hangup ends it; data waits in its socket. */
      if (events & (EPOLLERR | EPOLLHUP)) {
        st->failed++;
        relay_conn_close(c, ep);
        return false;
      }
      return true;
    }
    int e = 0;
    socklen_t len = sizeof(e);
    if (getsockopt(c->sfd, SOL_SOCKET, SO_ERROR, &e, &len) < 0 || e != 0) {
      st->failed++;
      relay_conn_close(c, ep);
      return false;
    }
    c->state = CONN_OPEN;
    c->since = now;
    st->accepted++;
  }
  int a = pump(&c->up, c->cfd, c->sfd, &st->bytes_in);
  int b = a < 0 ? -1 : pump(&c->down, c->sfd, c->cfd, &st->bytes_out);
  if (a > 0 || b > 0)
    c->since = now;
  bool done = c->up.shut && c->down.shut;
  /* A hangup or error that moved nothing cannot be waited out: level
   * triggered, it would be reported again at once. */
  bool stuck = (events & (EPOLLERR | EPOLLHUP)) && a <= 0 && b <= 0;
  if (a < 0 || b < 0 || done || stuck || rewatch(c, ep, slot) < 0) {
    relay_conn_close(c, ep);
    return false;
  }
  return true;
}
