/* SPDX-License-Identifier: Apache-2.0 */
#include "config.h"

#include "sync.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include "util.h"

struct sync_header {
  uint32_t type;
  int32_t errnum;
  uint32_t len;      /* payload, or message for SYNC_ERROR */
  uint32_t hint_len; /* SYNC_ERROR only */
};

int sync_send(int fd, uint32_t type, const void *payload, size_t len, const int *fds, size_t nfds, hutch_error_t *err) {
  if (len > SYNC_MAX_PAYLOAD || nfds > SYNC_MAX_FDS)
    return hutch_error_set(err, EMSGSIZE, "sync message of %zu bytes and %zu fds too large", len, nfds);
  struct sync_header h = {.type = type, .len = (uint32_t)len};
  struct iovec iov[2] = {{&h, sizeof(h)}, {(void *)payload, len}};
  union {
    char buf[CMSG_SPACE(sizeof(int) * SYNC_MAX_FDS)];
    struct cmsghdr align;
  } cbuf;
  struct msghdr msg = {.msg_iov = iov, .msg_iovlen = len ? 2 : 1};
  if (nfds > 0) {
    memset(&cbuf, 0, sizeof(cbuf));
    msg.msg_control = cbuf.buf;
    msg.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
    struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
    memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
  }
  ssize_t r;
  do
    r = sendmsg(fd, &msg, MSG_NOSIGNAL);
  while (r < 0 && errno == EINTR);
  if (r < 0)
    return hutch_error_sys(err, "send on the sync socket");
  return 0;
}

void sync_send_error(int fd, const hutch_error_t e) {
  if (e == NULL)
    return;
  size_t mlen = strlen(e->msg), hlen = e->hint ? strlen(e->hint) : 0;
  if (mlen > SYNC_MAX_PAYLOAD / 2)
    mlen = SYNC_MAX_PAYLOAD / 2;
  if (hlen > SYNC_MAX_PAYLOAD / 2)
    hlen = SYNC_MAX_PAYLOAD / 2;
  struct sync_header h = {.type = SYNC_ERROR, .errnum = e->errnum, .len = (uint32_t)mlen, .hint_len = (uint32_t)hlen};
  struct iovec iov[3] = {{&h, sizeof(h)}, {e->msg, mlen}, {e->hint, hlen}};
  struct msghdr msg = {.msg_iov = iov, .msg_iovlen = hlen ? 3 : 2};
  while (sendmsg(fd, &msg, MSG_NOSIGNAL) < 0 && errno == EINTR)
    ;
}

int sync_recv(int fd, uint32_t *type, void *payload, size_t cap, size_t *len, int *fds, size_t *nfds,
              hutch_error_t *err) {
  _cleanup_free_ char *buf = xmalloc(sizeof(struct sync_header) + SYNC_MAX_PAYLOAD + 1);
  union {
    char buf[CMSG_SPACE(sizeof(int) * SYNC_MAX_FDS)];
    struct cmsghdr align;
  } cbuf;
  struct iovec iov = {buf, sizeof(struct sync_header) + SYNC_MAX_PAYLOAD};
  struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf.buf, .msg_controllen = sizeof(cbuf.buf)};
  ssize_t r;
  do
    r = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC);
  while (r < 0 && errno == EINTR);
  if (r < 0)
    return hutch_error_sys(err, "receive on the sync socket");
  if (nfds)
    *nfds = 0;
  for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c != NULL; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
      continue;
    size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    int got[SYNC_MAX_FDS];
    memcpy(got, CMSG_DATA(c), n * sizeof(int));
    for (size_t i = 0; i < n; i++) {
      if (fds != NULL && nfds != NULL && *nfds < SYNC_MAX_FDS)
        fds[(*nfds)++] = got[i];
      else
        close(got[i]);
    }
  }
  if (r == 0)
    return 0;
  if ((size_t)r < sizeof(struct sync_header))
    return hutch_error_set(err, EPROTO, "short message of %zd bytes on the sync socket", r);
  struct sync_header h;
  memcpy(&h, buf, sizeof(h));
  const char *body = buf + sizeof(h);
  size_t body_len = (size_t)r - sizeof(h);
  if (h.type == SYNC_ERROR) {
    if ((size_t)h.len + h.hint_len > body_len)
      return hutch_error_set(err, EPROTO, "malformed error message on the sync socket");
    hutch_error_set(err, h.errnum, "%.*s", (int)h.len, body);
    if (h.hint_len)
      hutch_error_hint(err, "%.*s", (int)h.hint_len, body + h.len);
    return -1;
  }
  if (h.len != body_len)
    return hutch_error_set(err, EPROTO, "message length mismatch on the sync socket");
  if (body_len > cap || (body_len > 0 && payload == NULL))
    return hutch_error_set(err, EPROTO, "unexpected %zu-byte payload for message type %u", body_len, h.type);
  if (body_len)
    memcpy(payload, body, body_len);
  if (len)
    *len = body_len;
  *type = h.type;
  return 1;
}

int sync_expect_fds(int fd, uint32_t want, void *payload, size_t cap, size_t *len, int *passed, size_t npassed,
                    const char *what, hutch_error_t *err) {
  uint32_t type = 0;
  int fds[SYNC_MAX_FDS];
  size_t nfds = 0;
  for (size_t i = 0; i < npassed; i++)
    passed[i] = -1;
  int r = sync_recv(fd, &type, payload, cap, len, fds, &nfds, err);
  for (size_t i = 0; i < nfds; i++) {
    if (i < npassed && r > 0 && type == want)
      passed[i] = fds[i];
    else
      close(fds[i]);
  }
  if (r < 0)
    return -1;
  if (r == 0)
    return hutch_error_set(err, EPIPE, "%s: the other side exited before answering", what);
  if (type != want)
    return hutch_error_set(err, EPROTO, "%s: unexpected message type %u (wanted %u)", what, type, want);
  return 0;
}

int sync_expect(int fd, uint32_t want, void *payload, size_t cap, size_t *len, const char *what, hutch_error_t *err) {
  return sync_expect_fds(fd, want, payload, cap, len, NULL, 0, what, err);
}
