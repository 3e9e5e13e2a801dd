/* SPDX-License-Identifier: Apache-2.0 */
/* One client connection of the proxy: request head, decision, upstream
 * connect, then the byte pump.  Sockets are non-blocking and registered
 * edge-triggered once; `can_read`/`can_write` remember readiness until a
 * call says EAGAIN, and a full buffer simply stops the reads that would
 * fill it (backpressure). */
#include "config.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netdb.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include "http_parse.h"
#include "net_policy.h"
#include "proxy_internal.h"
#include "tls_sni.h"
#include "util.h"

/* Rounds of reads and writes one connection gets before the others. */
#define PUMP_ROUNDS 8

static size_t buf_len(const struct proxy_buf *b) {
  return b->end - b->start;
}

static size_t buf_space(struct proxy_buf *b) {
  if (b->start == b->end)
    b->start = b->end = 0;
  else if (b->end == b->cap && b->start > 0) {
    memmove(b->data, b->data + b->start, b->end - b->start);
    b->end -= b->start;
    b->start = 0;
  }
  return b->cap - b->end;
}

/* A request head is read into a new buffer without growing it. */
_Static_assert(HTTP_MAX_HEAD <= PROXY_BUF_MIN, "a request head fits in a direction's first buffer");

static void buf_init(struct proxy *p, struct proxy_buf *b, size_t cap) {
  *b = (struct proxy_buf){.data = xmalloc(cap), .cap = cap};
  p->buf_bytes += cap;
}

static void buf_free(struct proxy *p, struct proxy_buf *b) {
  p->buf_bytes -= b->cap;
  free(b->data);
  *b = (struct proxy_buf){0};
}

/* A read filled all the room there was: the next one gets twice as much,
 * while the proxy's buffers together have room to spare. */
static void buf_grow(struct proxy *p, struct proxy_buf *b) {
  size_t cap = b->cap * 2;
  if (cap > PROXY_BUF_MAX || p->buf_bytes + (cap - b->cap) > PROXY_BUF_TOTAL)
    return;
  b->data = xrealloc(b->data, cap);
  p->buf_bytes += cap - b->cap;
  b->cap = cap;
}

static int ep_add(struct proxy *p, struct endpoint *ep) {
  struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET, .data.ptr = ep};
  return epoll_ctl(p->epfd, EPOLL_CTL_ADD, ep->fd, &ev);
}

static void nodelay(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

static double wait_limit(const struct conn *c) {
  double idle = c->l->policy->idle_timeout;
  return idle < PROXY_CONNECT_TIMEOUT ? idle : PROXY_CONNECT_TIMEOUT;
}

static void set_text(char *dst, size_t len, const char *src) {
  if (dst[0] == '\0' && src && src != dst)
    snprintf(dst, len, "%s", src);
}

static void pending_remove(struct conn *c) {
  if (!c->pending)
    return;
  struct proxy *p = c->l->p;
  for (struct conn **pp = &p->pending; *pp; pp = &(*pp)->pending_next) {
    if (*pp == c) {
      *pp = c->pending_next;
      break;
    }
  }
  c->pending = false;
}

static void uncount(struct conn *c) {
  if (c->counted) {
    c->l->active--;
    c->counted = false;
  }
}

static void close_upstream(struct conn *c) {
  if (c->up.fd >= 0)
    close(c->up.fd);
  c->up.fd = -1;
  c->up.can_read = c->up.can_write = false;
}

static void cancel_job(struct conn *c) {
  if (c->job) {
    c->job->c = NULL;
    c->job = NULL;
  }
}

void conn_close(struct conn *c, const char *error) {
  if (c->dead)
    return;
  c->dead = true;
  set_text(c->error, sizeof(c->error), error);
  struct listener *l = c->l;
  if (c->decision) {
    double now = monotonic_seconds();
    struct audit_record r = {
        .sandbox = l->sandbox_id,
        .method = c->method[0] ? c->method : NULL,
        .host = c->host[0] ? c->host : NULL,
        .port = c->port,
        .address = c->address[0] ? c->address : NULL,
        .decision = c->decision,
        .rule = c->rule,
        .override = c->override,
        .bytes_up = c->bytes_up,
        .bytes_down = c->bytes_down,
        .duration_ms = (now - c->start) * 1000.0,
        .error = c->error[0] ? c->error : NULL,
    };
    proxy_log_request(l, &r, now);
    if (strcmp(c->decision, "allow") != 0)
      listener_refused(l, now);
  }
  if (c->lingers)
    l->lingering--;
  c->lingers = false;
  pending_remove(c);
  cancel_job(c);
  uncount(c);
  close_upstream(c);
  if (c->client.fd >= 0)
    close(c->client.fd);
  c->client.fd = -1;
  if (c->prev)
    c->prev->next = c->next;
  else
    l->conns = c->next;
  if (c->next)
    c->next->prev = c->prev;
  c->next = l->p->graveyard;
  l->p->graveyard = c;
}

void conn_free(struct conn *c) {
  buf_free(c->l->p, &c->c2u);
  buf_free(c->l->p, &c->u2c);
  free(c);
}

static const char *status_text(int status) {
  switch (status) {
  case 200:
    return "Connection established";
  case 400:
    return "Bad Request";
  case 403:
    return "Forbidden";
  case 411:
    return "Length Required";
  case 431:
    return "Request Header Fields Too Large";
  case 502:
    return "Bad Gateway";
  case 503:
    return "Service Unavailable";
  case 504:
    return "Gateway Timeout";
  default:
    return "Error";
  }
}

/* Answers the client with `status` and a one-line reason, then lingers
 * until the client closes (or PROXY_LINGER passes), unless
 * PROXY_LINGER_MAX others of its sandbox linger already: then it is
 * closed once the answer is written.  Its buffers shrink to the answer. */
static void respond(struct conn *c, int status, const char *decision, const char *rule, const char *reason) {
  char line[200];
  snprintf(line, sizeof(line), "%s", reason);
  for (char *s = line; *s; s++)
    if ((unsigned char)*s < 0x20 || (unsigned char)*s >= 0x7f)
      *s = '?';
  c->decision = decision;
  set_text(c->rule, sizeof(c->rule), rule);
  if (status != 403)
    set_text(c->error, sizeof(c->error), line);
  cancel_job(c);
  close_upstream(c);
  uncount(c);
  struct listener *l = c->l;
  if (c->state != CONN_LINGER && l->lingering < PROXY_LINGER_MAX) {
    l->lingering++;
    c->lingers = true;
  }
  c->state = CONN_LINGER;
  c->deadline = monotonic_seconds() + PROXY_LINGER;
  char refused[240] = "";
  if (status == 403)
    snprintf(refused, sizeof(refused), "X-Hutch-Refused: %s\r\n", line);
  char answer[sizeof(line) + sizeof(refused) + 160];
  int n =
      snprintf(answer, sizeof(answer),
               "HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\nContent-Length: %zu\r\nConnection: close\r\n%s\r\n%s\n",
               status, status_text(status), strlen(line) + 1, refused, line);
  if (n < 0 || (size_t)n >= sizeof(answer))
    n = (int)sizeof(answer) - 1; /* cannot happen: line and refused are bounded above */
  /* What the client sends now is read into a scratch buffer and dropped. */
  buf_free(l->p, &c->c2u);
  buf_free(l->p, &c->u2c);
  buf_init(l->p, &c->u2c, (size_t)n);
  memcpy(c->u2c.data, answer, (size_t)n);
  c->u2c.end = (size_t)n;
}

void conn_accept(struct listener *l, int fd, double now) {
  struct conn *c = xcalloc(1, sizeof(*c));
  c->l = l;
  c->client = (struct endpoint){.kind = EP_CLIENT, .fd = fd, .owner = c};
  c->up = (struct endpoint){.kind = EP_UPSTREAM, .fd = -1, .owner = c};
  buf_init(l->p, &c->c2u, PROXY_BUF_MIN);
  buf_init(l->p, &c->u2c, PROXY_BUF_MIN);
  c->start = c->last_active = now;
  nodelay(fd);
  if (ep_add(l->p, &c->client) < 0) {
    hutch_log_errno(HUTCH_LOG_WARNING, errno, "proxy: epoll_ctl");
    close(fd);
    conn_free(c);
    return;
  }
  c->next = l->conns;
  if (l->conns)
    l->conns->prev = c;
  l->conns = c;
  if (l->active >= l->policy->max_connections) {
    char why[120];
    snprintf(why, sizeof(why), "too many connections (max_connections %u)", l->policy->max_connections);
    respond(c, 503, "refuse", "max_connections", why);
    set_text(c->error, sizeof(c->error), why);
    return;
  }
  c->counted = true;
  l->active++;
}

static bool parse_literal(const char *host, struct sockaddr_storage *ss) {
  memset(ss, 0, sizeof(*ss));
  if (inet_pton(AF_INET, host, &((struct sockaddr_in *)ss)->sin_addr) == 1) {
    ss->ss_family = AF_INET;
    return true;
  }
  if (inet_pton(AF_INET6, host, &((struct sockaddr_in6 *)ss)->sin6_addr) == 1) {
    ss->ss_family = AF_INET6;
    return true;
  }
  return false;
}

/* `last`: the error of the address tried before, if any. */
static void connect_next(struct conn *c, double now, int last) {
  while (c->next_addr < c->n_addrs) {
    struct sockaddr_storage *a = &c->addrs[c->next_addr++];
    socklen_t len;
    if (a->ss_family == AF_INET) {
      ((struct sockaddr_in *)a)->sin_port = htons(c->port);
      len = sizeof(struct sockaddr_in);
    } else {
      ((struct sockaddr_in6 *)a)->sin6_port = htons(c->port);
      len = sizeof(struct sockaddr_in6);
    }
    net_address_format((struct sockaddr *)a, c->address, sizeof(c->address));
    int fd = socket(a->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      last = errno;
      continue;
    }
    nodelay(fd);
    if (connect(fd, (struct sockaddr *)a, len) < 0 && errno != EINPROGRESS) {
      last = errno;
      close(fd);
      continue;
    }
    c->up.fd = fd;
    c->up.can_read = c->up.can_write = false;
    if (ep_add(c->l->p, &c->up) < 0) {
      last = errno;
      close_upstream(c);
      continue;
    }
    c->state = CONN_CONNECTING;
    c->deadline = now + wait_limit(c);
    return;
  }
  _cleanup_free_ char *why = hutch_errno_format(last, "connect to %.100s port %u failed", c->host, c->port);
  respond(c, 502, "error", c->rule, why);
}

/* The addresses are known: keep those the policy allows, in order.  A name
 * admitted by `allow = public` must have public addresses only: one that
 * also points inside (a name an attacker controls, answering with a public
 * and a private address) is refused whole. */
static void addresses_ready(struct conn *c, double now) {
  struct net_decision first = {0};
  char first_addr[64] = "";
  size_t kept = 0;
  for (size_t i = 0; i < c->n_addrs; i++) {
    struct net_decision d;
    net_policy_decide_address(c->l->policy, (struct sockaddr *)&c->addrs[i], c->override, c->public_only, &d);
    if (d.allowed) {
      c->addrs[kept++] = c->addrs[i];
    } else if (first.rule[0] == '\0') {
      first = d;
      net_address_format((struct sockaddr *)&c->addrs[i], first_addr, sizeof(first_addr));
    }
  }
  if (c->public_only && first.rule[0] != '\0')
    kept = 0;
  if (kept == 0) {
    snprintf(c->address, sizeof(c->address), "%s", first_addr);
    c->rule[0] = '\0';
    respond(c, 403, "refuse", first.rule, first.reason);
    return;
  }
  c->n_addrs = kept;
  c->next_addr = 0;
  connect_next(c, now, 0);
}

void conn_resolved(struct conn *c, struct resolve_job *job, double now) {
  c->job = NULL;
  if (job->gai_error != 0 || job->n_addrs == 0) {
    char why[200];
    snprintf(why, sizeof(why), "cannot resolve %.100s: %s", c->host,
             job->gai_error ? gai_strerror(job->gai_error) : "no IPv4 or IPv6 address");
    respond(c, 502, "error", c->rule, why);
  } else {
    memcpy(c->addrs, job->addrs, sizeof(job->addrs[0]) * job->n_addrs);
    c->n_addrs = job->n_addrs;
    addresses_ready(c, now);
  }
  conn_pump(c, now);
}

/* Plain HTTP: the client's buffer becomes the rebuilt head and the part of
 * the body already read; bytes past the body are dropped. */
static void rewrite_plain(struct conn *c, const struct http_request *req) {
  const char *head = c->c2u.data + c->c2u.start;
  size_t have = buf_len(&c->c2u) - req->head_len;
  size_t body = have < req->content_length ? have : (size_t)req->content_length;
  size_t up_len;
  _cleanup_free_ char *up = http_upstream_head(head, req, &up_len);
  struct proxy *p = c->l->p;
  struct proxy_buf b;
  buf_init(p, &b, up_len + body > PROXY_BUF_MIN ? up_len + body : PROXY_BUF_MIN);
  memcpy(b.data, up, up_len);
  memcpy(b.data + up_len, head + req->head_len, body);
  b.end = up_len + body;
  buf_free(p, &c->c2u);
  c->c2u = b;
  c->body_left = req->content_length - body;
}

static void handle_head(struct conn *c, double now) {
  _cleanup_free_ struct http_request *req = xmalloc(sizeof(*req));
  enum http_parse_status st = http_parse_request(c->c2u.data + c->c2u.start, buf_len(&c->c2u), req);
  if (st == HTTP_PARSE_INCOMPLETE)
    return;
  snprintf(c->method, sizeof(c->method), "%s", req->method);
  snprintf(c->host, sizeof(c->host), "%s", req->host);
  c->port = req->port;
  if (st == HTTP_PARSE_ERROR) {
    respond(c, req->status, "error", "malformed request", req->error);
    return;
  }
  c->connect = req->connect;
  const struct net_policy *policy = c->l->policy;
  if (c->l->exhausted) {
    respond(c, 403, "refuse", "byte_budget", "byte budget exhausted");
    return;
  }
  struct net_decision d;
  net_policy_decide_host(policy, req->host, req->port, &d);
  if (!d.allowed) {
    respond(c, 403, "refuse", d.rule, d.reason);
    return;
  }
  snprintf(c->rule, sizeof(c->rule), "%s", d.rule);
  c->public_only = d.public_only;
  if (c->connect)
    c->c2u.start += req->head_len; /* bytes after the head are tunnel data */
  else
    rewrite_plain(c, req);

  const struct net_resolve *o = net_policy_find_resolve(policy, req->host);
  if (o) {
    c->override = true;
    c->addrs[0] = o->addr;
    c->n_addrs = 1;
    addresses_ready(c, now);
  } else if (parse_literal(req->host, &c->addrs[0])) {
    c->n_addrs = 1;
    addresses_ready(c, now);
  } else {
    _cleanup_error_ hutch_error_t rerr = NULL;
    struct resolver *r = proxy_resolver(c->l->p, &rerr);
    if (r == NULL) {
      _cleanup_free_ char *why = hutch_errno_format(rerr ? rerr->errnum : 0, "cannot resolve %.100s: %.60s", c->host,
                                                    rerr ? rerr->msg : "resolver");
      respond(c, 502, "error", c->rule, why);
      return;
    }
    struct resolve_job *job = xcalloc(1, sizeof(*job));
    snprintf(job->host, sizeof(job->host), "%s", req->host);
    job->c = c;
    c->job = job;
    c->state = CONN_RESOLVING;
    c->deadline = now + wait_limit(c);
    resolver_submit(r, job);
  }
}

static void connected(struct conn *c) {
  c->deadline = 0;
  c->decision = "allow";
  if (!c->connect) {
    c->state = CONN_FORWARD;
    return;
  }
  c->state = CONN_TUNNEL;
  c->tls_required = net_policy_tls_required(c->l->policy, c->port);
  c->sni_pending = c->l->policy->sni_check || c->tls_required;
  /* The answer goes in front of anything already queued (nothing is). */
  static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
  memcpy(c->u2c.data + c->u2c.end, ok, sizeof(ok) - 1);
  c->u2c.end += sizeof(ok) - 1;
  c->own_pending = sizeof(ok) - 1;
}

/* The tunnel's first bytes against sni_check and tls_required.  Nothing
 * reaches the upstream before this says yes.  False when the connection
 * was closed. */
static bool check_sni(struct conn *c) {
  char name[256];
  enum tls_sni_status st = tls_sni_extract((const unsigned char *)c->c2u.data + c->c2u.start, buf_len(&c->c2u), name);
  if (st == TLS_SNI_INCOMPLETE && buf_len(&c->c2u) < TLS_SNI_MAX_HELLO + 64)
    return true;
  struct sockaddr_storage literal;
  char want[256], got[256];
  const char *rule;
  switch (st) {
  case TLS_SNI_FOUND:
    if (net_host_normalize(c->host, want, sizeof(want)) && net_host_normalize(name, got, sizeof(got)) &&
        strcmp(want, got) == 0) {
      c->sni_pending = false;
      return true;
    }
    rule = "sni mismatch";
    snprintf(c->error, sizeof(c->error), "TLS server name %.70s does not match the CONNECT host %.70s", name, c->host);
    break;
  case TLS_SNI_NONE:
    /* TLS clients send no server name for an address (RFC 6066 3), so an
     * address the policy allowed needs none. */
    if (!c->tls_required || parse_literal(c->host, &literal)) {
      c->sni_pending = false;
      return true;
    }
    rule = "sni required";
    snprintf(c->error, sizeof(c->error), "the TLS ClientHello names no server (SNI); port %u requires %.100s", c->port,
             c->host);
    break;
  case TLS_SNI_NOT_TLS:
    if (!c->tls_required) {
      c->sni_pending = false;
      return true;
    }
    rule = "tls required";
    snprintf(c->error, sizeof(c->error), "the tunnel to %.100s port %u did not start with a TLS ClientHello", c->host,
             c->port);
    break;
  default:
    rule = "malformed TLS ClientHello";
    snprintf(c->error, sizeof(c->error), "the tunnel's first bytes are a malformed TLS ClientHello");
    break;
  }
  c->decision = "refuse";
  snprintf(c->rule, sizeof(c->rule), "%s", rule);
  conn_close(c, NULL);
  return false;
}

static void account(struct conn *c, size_t n) {
  struct listener *l = c->l;
  l->bytes_used += n;
  if (l->policy->byte_budget && l->bytes_used >= l->policy->byte_budget)
    l->exhausted = true;
}

/* With a byte budget, a read takes no more than is left of it (past a
 * buffer's minimum), so that little is forwarded past the budget. */
static size_t budget_room(const struct conn *c, size_t room) {
  const struct listener *l = c->l;
  if (l->policy->byte_budget == 0)
    return room;
  uint64_t left = l->policy->byte_budget > l->bytes_used ? l->policy->byte_budget - l->bytes_used : 0;
  if (left < PROXY_BUF_MIN)
    left = PROXY_BUF_MIN;
  return room < left ? room : (size_t)left;
}

/* Reading the client.  Returns -1 when the connection was closed. */
static int read_client(struct conn *c, double now, bool *progress) {
  char scratch[16384]; /* what is read only to be dropped */
  char *dst;
  size_t room, space = 0;
  bool discard = false;
  switch (c->state) {
  case CONN_HEAD:
    room = HTTP_MAX_HEAD - buf_len(&c->c2u);
    buf_space(&c->c2u);
    dst = c->c2u.data + c->c2u.end;
    break;
  case CONN_TUNNEL:
    space = buf_space(&c->c2u);
    room = budget_room(c, space);
    dst = c->c2u.data + c->c2u.end;
    break;
  case CONN_FORWARD:
    if (c->body_left > 0) {
      space = buf_space(&c->c2u);
      room = budget_room(c, space);
      if (room > c->body_left)
        room = (size_t)c->body_left;
      dst = c->c2u.data + c->c2u.end;
      break;
    }
    /* nothing after the body reaches the upstream */
    __attribute__((fallthrough));
  case CONN_LINGER:
    room = sizeof(scratch);
    dst = scratch;
    discard = true;
    break;
  default:
    return 0;
  }
  if (room == 0)
    return 0;
  ssize_t n = read(c->client.fd, dst, room);
  if (n < 0) {
    if (errno == EAGAIN || errno == EINTR) {
      c->client.can_read = errno == EINTR;
      return 0;
    }
    c->decision = c->decision ? c->decision : (buf_len(&c->c2u) ? "error" : NULL);
    conn_close(c, strerror(errno));
    return -1;
  }
  *progress = true;
  c->last_active = now;
  if (n == 0) {
    c->client_eof = true;
    return 0;
  }
  if (discard)
    return 0;
  c->c2u.end += (size_t)n;
  if ((size_t)n == space)
    buf_grow(c->l->p, &c->c2u);
  if (c->state == CONN_FORWARD)
    c->body_left -= (uint64_t)n;
  if (c->state == CONN_HEAD)
    handle_head(c, now);
  return 0;
}

static int write_upstream(struct conn *c, double now, bool *progress) {
  if (c->state == CONN_TUNNEL && c->sni_pending && buf_len(&c->c2u) > 0 && !check_sni(c))
    return -1;
  if (c->up.fd < 0 || !c->up.can_write || buf_len(&c->c2u) == 0 || c->sni_pending ||
      (c->state != CONN_FORWARD && c->state != CONN_TUNNEL))
    return 0;
  ssize_t n = send(c->up.fd, c->c2u.data + c->c2u.start, buf_len(&c->c2u), MSG_NOSIGNAL);
  if (n > 0)
    c->c2u.start += (size_t)n;
  if (n < 0) {
    if (errno == EAGAIN || errno == EINTR) {
      c->up.can_write = errno == EINTR;
      return 0;
    }
    _cleanup_free_ char *why = hutch_errno_format(errno, "upstream");
    conn_close(c, why);
    return -1;
  }
  c->bytes_up += (uint64_t)n;
  c->last_active = now;
  account(c, (size_t)n);
  *progress = true;
  return 0;
}

static void read_upstream(struct conn *c, double now, bool *progress) {
  if (c->up.fd < 0 || !c->up.can_read || c->up_eof || (c->state != CONN_FORWARD && c->state != CONN_TUNNEL))
    return;
  size_t space = buf_space(&c->u2c);
  size_t room = budget_room(c, space);
  if (room == 0)
    return;
  ssize_t n = read(c->up.fd, c->u2c.data + c->u2c.end, room);
  if (n < 0) {
    if (errno == EAGAIN || errno == EINTR) {
      c->up.can_read = errno == EINTR;
      return;
    }
    _cleanup_free_ char *why = hutch_errno_format(errno, "upstream");
    snprintf(c->error, sizeof(c->error), "%s", why);
    n = 0;
  }
  *progress = true;
  c->last_active = now;
  if (n == 0) {
    c->up_eof = true;
  } else {
    c->u2c.end += (size_t)n;
    if ((size_t)n == space)
      buf_grow(c->l->p, &c->u2c);
  }
}

static int write_client(struct conn *c, double now, bool *progress) {
  if (!c->client.can_write || buf_len(&c->u2c) == 0)
    return 0;
  ssize_t n = send(c->client.fd, c->u2c.data + c->u2c.start, buf_len(&c->u2c), MSG_NOSIGNAL);
  if (n > 0)
    c->u2c.start += (size_t)n;
  if (n < 0) {
    if (errno == EAGAIN || errno == EINTR) {
      c->client.can_write = errno == EINTR;
      return 0;
    }
    conn_close(c, strerror(errno));
    return -1;
  }
  size_t own = (size_t)n < c->own_pending ? (size_t)n : c->own_pending;
  c->own_pending -= own;
  if (c->state == CONN_FORWARD || c->state == CONN_TUNNEL) {
    c->bytes_down += (uint64_t)n - own;
    account(c, (size_t)n - own);
  }
  c->last_active = now;
  *progress = true;
  return 0;
}

/* Half-closes and the end of the connection.  False when it was closed. */
static bool settle(struct conn *c) {
  switch (c->state) {
  case CONN_HEAD:
    if (c->client_eof) {
      if (buf_len(&c->c2u) > 0)
        c->decision = "error";
      conn_close(c, "the client closed before the request head was complete");
      return false;
    }
    break;
  case CONN_LINGER:
    if (buf_len(&c->u2c) == 0 && !c->client_shut) {
      shutdown(c->client.fd, SHUT_WR);
      c->client_shut = true;
    }
    if ((c->client_eof || !c->lingers) && buf_len(&c->u2c) == 0) {
      conn_close(c, NULL);
      return false;
    }
    break;
  case CONN_FORWARD:
    if (c->client_eof && c->body_left > 0) {
      conn_close(c, "the client closed before the request body was complete");
      return false;
    }
    if (c->up_eof && buf_len(&c->u2c) == 0) {
      conn_close(c, NULL);
      return false;
    }
    break;
  case CONN_TUNNEL:
    if (c->client_eof && c->sni_pending) {
      conn_close(c, "the client closed during the TLS ClientHello");
      return false;
    }
    if (c->client_eof && buf_len(&c->c2u) == 0 && !c->up_shut) {
      shutdown(c->up.fd, SHUT_WR);
      c->up_shut = true;
    }
    if (c->up_eof && buf_len(&c->u2c) == 0 && !c->client_shut) {
      shutdown(c->client.fd, SHUT_WR);
      c->client_shut = true;
    }
    if (c->up_shut && c->client_shut) {
      conn_close(c, NULL);
      return false;
    }
    break;
  default:
    break;
  }
  return true;
}

void conn_pump(struct conn *c, double now) {
  for (int round = 0; round < PUMP_ROUNDS; round++) {
    bool progress = false;
    if (c->client.can_read && !c->client_eof && read_client(c, now, &progress) < 0)
      return;
    if (write_upstream(c, now, &progress) < 0)
      return;
    read_upstream(c, now, &progress);
    if (write_client(c, now, &progress) < 0)
      return;
    if (!settle(c))
      return;
    if (c->l->exhausted && (c->state == CONN_FORWARD || c->state == CONN_TUNNEL)) {
      conn_close(c, "byte budget exhausted");
      return;
    }
    if (!progress)
      return;
  }
  /* Still busy: the others get their turn first. */
  if (!c->pending) {
    c->pending = true;
    c->pending_next = c->l->p->pending;
    c->l->p->pending = c;
  }
}

void conn_event(struct conn *c, struct endpoint *ep, uint32_t events, double now) {
  if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))
    ep->can_read = true;
  if (events & (EPOLLOUT | EPOLLHUP | EPOLLERR))
    ep->can_write = true;
  if (ep == &c->up && c->state == CONN_CONNECTING && ep->can_write) {
    int e = 0;
    socklen_t len = sizeof(e);
    if (getsockopt(c->up.fd, SOL_SOCKET, SO_ERROR, &e, &len) < 0)
      e = errno;
    if (e != 0) {
      close_upstream(c);
      connect_next(c, now, e);
    } else {
      connected(c);
    }
  }
  conn_pump(c, now);
}

void conn_timeout_check(struct conn *c, double now) {
  if (c->deadline > 0 && now >= c->deadline) {
    if (c->state == CONN_LINGER) {
      conn_close(c, NULL);
      return;
    }
    if (c->state == CONN_RESOLVING || c->state == CONN_CONNECTING) {
      char why[200];
      snprintf(why, sizeof(why), "timed out %s %.100s", c->state == CONN_RESOLVING ? "resolving" : "connecting to",
               c->host);
      respond(c, 504, "error", c->rule, why);
      conn_pump(c, now);
      return;
    }
  }
  if (now - c->last_active >= c->l->policy->idle_timeout) {
    if (c->state == CONN_HEAD && buf_len(&c->c2u) > 0)
      c->decision = "error";
    conn_close(c, "idle timeout");
  }
}
