/* SPDX-License-Identifier: Apache-2.0 */
/* The Streamable HTTP transport of MCP, on a loopback address only: one
 * endpoint (/mcp) taking POSTed JSON-RPC messages and answering each with
 * application/json; DELETE ends a session; GET (a server-initiated event
 * stream) is refused with 405, as the transport allows.  Every request needs
 * a bearer token, each token being one client's, and a Host header naming
 * the loopback address and port listened on; an Origin header that is not
 * this loopback address is refused too (DNS rebinding: a page whose name an
 * attacker points at 127.0.0.1 reaches the port with its own name in Host
 * and Origin).  A client reaches only its own sessions, and holds at most
 * --max-sessions of the server's MCP_MAX_SESSIONS.
 *
 * This, the main thread, reads connections side by side, one request per
 * connection (Connection: close), without waiting on any, and routes each
 * request: a session's requests go to its own thread (mcp_worker.c), which
 * answers them in order, so that sessions do not wait on each other.  A
 * GET opens the session's event stream (server-sent events), on which its
 * thread sends notifications (a subscribed resource that changed).
 * Anyone on the machine can connect: until a connection's header block is
 * in and names a token, it holds one of MAX_UNAUTH slots (the oldest makes
 * room for a new one), HEADER_SECONDS and MAX_HEADER bytes; past its token
 * it is never pushed out by those, and has BODY_SECONDS for its body.  A
 * tool call's wait watches its own connection, and a client that hangs up,
 * or cancels it, ends it. */
#include "config.h"

#include "mcp_http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util.h"

#define MAX_HEADER 8192      /* bytes of a header block: read before the token is seen */
#define MAX_BODY (32u << 20) /* read once it is */
#define HEADER_SECONDS 3.0   /* for a header block to come whole, from the connection's accept */
#define BODY_SECONDS 10.0    /* then for its body */
#define SEND_SECONDS 10.0    /* for an answer to be taken */
#define MAX_UNAUTH 32        /* connections whose header block is still coming */
#define MAX_AUTHED 16        /* past their token, their body still coming */
#define MAX_INCOMING (MAX_UNAUTH + MAX_AUTHED)
#define ACCEPT_BATCH 16 /* connections accepted at one turn */
#define LISTEN_BACKLOG 128
/* A server holding this many sessions is nearly full: a session then ends
 * after a 30th of --idle without a request (a minute of the default 30). */
#define NEAR_FULL (MCP_MAX_SESSIONS * 3 / 4)
#define NEAR_FULL_IDLE_PART 30

/* The value of header `name` (case-insensitive), copied into buf. */
static bool header(const struct mcp_request *rq, const char *name, char *buf, size_t len) {
  size_t n = strlen(name);
  for (const char *line = strstr(rq->headers, "\r\n"); line && line[2]; line = strstr(line + 2, "\r\n")) {
    const char *h = line + 2;
    if (strncasecmp(h, name, n) != 0 || h[n] != ':')
      continue;
    const char *v = h + n + 1;
    while (*v == ' ' || *v == '\t')
      v++;
    const char *end = strstr(v, "\r\n");
    size_t vl = end ? (size_t)(end - v) : strlen(v);
    while (vl && (v[vl - 1] == ' ' || v[vl - 1] == '\t'))
      vl--;
    snprintf(buf, len, "%.*s", (int)vl, v);
    return true;
  }
  return false;
}

unsigned mcp_token_match(const char *const *tokens, const char *given) {
  size_t a = strlen(given);
  unsigned client = 0;
  for (unsigned t = 0; tokens[t]; t++) {
    size_t b = strlen(tokens[t]);
    unsigned char diff = a != b;
    for (size_t i = 0; i < a && i < b; i++)
      diff |= (unsigned char)(given[i] ^ tokens[t][i]);
    client |= (unsigned)(diff == 0) * (t + 1); /* tokens are distinct: one matches at most */
  }
  return client;
}

/* The client whose token rq carries: 1 + the token's index, 0 for none. */
static unsigned token_client(const char *const *tokens, const struct mcp_request *rq) {
  char auth[512];
  if (!header(rq, "Authorization", auth, sizeof(auth)) || strncasecmp(auth, "Bearer ", 7) != 0)
    return 0;
  return mcp_token_match(tokens, auth + 7);
}

enum { REQ_BAD = 0, REQ_OK = 1, REQ_UNAUTHORIZED = -1, REQ_MORE = 2, REQ_TOO_LARGE = 3 };

/* A connection whose request is being read.  Many are read at once, each
 * as its bytes come, each by its deadline: a client that connects and
 * sends nothing, or a byte at a time, holds its own slot, never the server. */
struct conn {
  int fd;
  char *buf;
  size_t len, cap, body_len;
  size_t scanned;  /* bytes searched for the header block's end */
  char *end;       /* the end of the header block, once seen */
  unsigned client; /* once its token is seen: its client */
  double since, deadline;
};

static void conn_init(struct conn *c, int fd) {
  double now = monotonic_seconds();
  *c = (struct conn){.fd = fd, .cap = MAX_HEADER, .since = now, .deadline = now + HEADER_SECONDS};
  c->buf = xmalloc(c->cap + 1);
}

/* What has come of c's request, without waiting: REQ_MORE until it is all
 * in (then REQ_OK, rq owning the buffer), REQ_BAD when it is not one,
 * REQ_TOO_LARGE for a header block past MAX_HEADER, REQ_UNAUTHORIZED as
 * soon as its headers lack a token.  Anyone on the machine can connect to
 * a loopback port: nothing of a body (up to MAX_BODY) is read or allocated
 * before the token is seen, and each byte is searched once. */
static int conn_read(struct conn *c, struct mcp_request *rq, const char *const *tokens) {
  memset(rq, 0, sizeof(*rq));
  if (c->len == c->cap)
    return c->end ? REQ_BAD : REQ_TOO_LARGE;
  ssize_t n = recv(c->fd, c->buf + c->len, c->cap - c->len, MSG_DONTWAIT);
  if (n < 0 && (errno == EAGAIN || errno == EINTR))
    return REQ_MORE;
  if (n <= 0)
    return REQ_BAD;
  c->len += (size_t)n;
  c->buf[c->len] = '\0';
  if (c->end == NULL) {
    size_t from = c->scanned > 3 ? c->scanned - 3 : 0;
    c->end = memmem(c->buf + from, c->len - from, "\r\n\r\n", 4);
    c->scanned = c->len;
    if (c->end == NULL)
      return c->len == c->cap ? REQ_TOO_LARGE : REQ_MORE;
    if (memchr(c->buf, '\0', (size_t)(c->end - c->buf)))
      return REQ_BAD; /* the header block is text */
    c->end[2] = '\0'; /* the header block ends with its last CRLF */
    rq->headers = c->buf;
    c->client = token_client(tokens, rq);
    if (c->client == 0)
      return REQ_UNAUTHORIZED;
    c->deadline = monotonic_seconds() + BODY_SECONDS;
    char cl[32];
    if (header(rq, "Content-Length", cl, sizeof(cl))) {
      char *e;
      unsigned long long v = strtoull(cl, &e, 10);
      if (*e || v > MAX_BODY)
        return REQ_BAD;
      c->body_len = (size_t)v;
    }
    size_t need = (size_t)(c->end + 4 - c->buf) + c->body_len;
    if (need > c->cap) {
      size_t off = (size_t)(c->end - c->buf);
      c->cap = need;
      c->buf = xrealloc(c->buf, c->cap + 1);
      c->end = c->buf + off;
    }
  }
  if (c->len < (size_t)(c->end + 4 - c->buf) + c->body_len)
    return REQ_MORE;
  if (sscanf(c->buf, "%7s %255s", rq->method, rq->path) != 2)
    return REQ_BAD;
  rq->headers = steal_pointer(&c->buf);
  rq->body = c->end + 4;
  rq->body_len = c->body_len;
  rq->client = c->client;
  return REQ_OK;
}

static void conn_free(struct conn *c) {
  free(c->buf);
  c->buf = NULL;
  if (c->fd >= 0)
    close(c->fd);
  c->fd = -1;
}

bool mcp_http_send(int fd, const char *buf, size_t len, double deadline) {
  while (len > 0) {
    ssize_t n = send(fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      buf += n;
      len -= (size_t)n;
      continue;
    }
    if (n < 0 && errno != EAGAIN && errno != EINTR)
      return false;
    double left = deadline - monotonic_seconds();
    struct pollfd p = {fd, POLLOUT, 0};
    if (left <= 0 || (poll(&p, 1, (int)(left * 1000) + 1) < 0 && errno != EINTR))
      return false;
  }
  return true;
}

void mcp_http_respond(int fd, int status, const char *reason, const char *extra, const char *body) {
  size_t blen = body ? strlen(body) : 0;
  _cleanup_free_ char *head =
      xasprintf("HTTP/1.1 %d %s\r\nConnection: close\r\nContent-Length: %zu\r\n%s%s\r\n", status, reason, blen,
                blen ? "Content-Type: application/json\r\n" : "", extra ? extra : "");
  double deadline = monotonic_seconds() + SEND_SECONDS;
  if (mcp_http_send(fd, head, strlen(head), deadline) && blen)
    mcp_http_send(fd, body, blen, deadline);
}

static void respond(int fd, int status, const char *reason, const char *extra, const char *body) {
  mcp_http_respond(fd, status, reason, extra, body);
}

/* A 401 sent before the body was read: what of it already arrived is
 * dropped first (without waiting for more), so that closing does not reset
 * the connection under the answer of a small request. */
static void respond_unauthorized(int fd) {
  char junk[4096];
  for (int i = 0; i < 16 && recv(fd, junk, sizeof(junk), MSG_DONTWAIT) > 0; i++)
    ;
  respond(fd, 401, "Unauthorized", "WWW-Authenticate: Bearer\r\n", NULL);
  shutdown(fd, SHUT_WR);
}

static void respond_error(int fd, int status, const char *reason, const cJSON *id, int code, const char *message) {
  _cleanup_free_ char *body = mcp_error_reply(id, code, message);
  respond(fd, status, reason, NULL, body);
}

struct server {
  const struct mcp_config *cfg;
  const struct mcp_http_config *http;
  char host_ok[3][64]; /* what Host may say: this address, localhost, the loopback */
  bool bare_host_ok;   /* on port 80, Host may leave the port out */
  struct mcp_pool pool;
  struct mcp_hsession *sessions; /* under pool.lock; those ending too, until joined */
  int lfd;
  struct conn incoming[MAX_INCOMING]; /* being read */
  size_t n_incoming;
};

/* Whether `name` (HOST:PORT, or HOST alone on port 80) is one of the names
 * this server answers to. */
static bool host_name_ok(const struct server *srv, const char *name) {
  for (size_t i = 0; i < ARRAY_SIZE(srv->host_ok); i++) {
    const char *h = srv->host_ok[i];
    size_t hl = (size_t)(strrchr(h, ':') - h); /* the name without its port: each ends in :PORT */
    if (strcasecmp(name, h) == 0 || (srv->bare_host_ok && strlen(name) == hl && strncasecmp(name, h, hl) == 0))
      return true;
  }
  return false;
}

/* DNS rebinding: a browser sends the attacker's name in Host (and in Origin,
 * which not every request carries).  A request without Host is not HTTP/1.1
 * and is refused too. */
static bool host_ok(const struct server *srv, const struct mcp_request *rq) {
  char host[256];
  return header(rq, "Host", host, sizeof(host)) && host_name_ok(srv, host);
}

static bool origin_ok(const struct server *srv, const struct mcp_request *rq) {
  char origin[256];
  if (!header(rq, "Origin", origin, sizeof(origin)))
    return true;
  return strncmp(origin, "http://", 7) == 0 && host_name_ok(srv, origin + 7);
}

/* Under pool.lock: the session id of client's, not ending.  Another
 * client's sessions are not its to find. */
static struct mcp_hsession *session_find(struct server *srv, const char *id, unsigned client) {
  for (struct mcp_hsession *h = srv->sessions; h; h = h->next)
    if (strcmp(h->s.id, id) == 0 && h->s.client == client && !atomic_load(&h->ending))
      return h;
  return NULL;
}

/* Under pool.lock: sessions held, ending ones too (their thread still
 * holds sandboxes). */
static unsigned count_sessions(const struct server *srv, unsigned client) {
  unsigned n = 0;
  for (const struct mcp_hsession *h = srv->sessions; h; h = h->next)
    n += client == 0 || h->s.client == client;
  return n;
}

/* How long a session may go without a request: --idle, or a 30th of it
 * while the server is nearly full. */
static double idle_limit(const struct server *srv) {
  double idle = srv->http->idle;
  return count_sessions(srv, 0) >= NEAR_FULL ? idle / NEAR_FULL_IDLE_PART : idle;
}

/* Sessions whose client has gone quiet end, their sandboxes with them (a
 * session whose call runs, or whose requests wait, is not quiet); the
 * threads of ended sessions are joined. */
static void reclaim(struct server *srv) {
  pthread_mutex_lock(&srv->pool.lock);
  double now = monotonic_seconds(), limit = idle_limit(srv);
  for (struct mcp_hsession *h = srv->sessions; h; h = h->next)
    if (!atomic_load(&h->ending) && h->running == NULL && h->head == NULL && now - h->last_used > limit)
      mcp_worker_end(h, -1);
  struct mcp_hsession *done = NULL;
  for (struct mcp_hsession **p = &srv->sessions; *p;) {
    struct mcp_hsession *h = *p;
    if (h->done) {
      *p = h->next;
      h->next = done;
      done = h;
    } else {
      p = &h->next;
    }
  }
  pthread_mutex_unlock(&srv->pool.lock);
  while (done) {
    struct mcp_hsession *h = done;
    done = h->next;
    mcp_worker_join(h);
  }
}

/* Under pool.lock: whether client may start one more session: 0, or the
 * HTTP status that refuses it, *message saying why and what to do. */
static int session_room(struct server *srv, unsigned client, char **message) {
  unsigned mine = count_sessions(srv, client);
  if (mine >= srv->http->max_sessions) {
    *message = xasprintf("too many sessions: this client (token %u of the token file) holds %u, the most one client "
                         "may (hutch mcp --max-sessions); end one (DELETE) or let one go idle for --idle",
                         client, mine);
    return 429;
  }
  if (count_sessions(srv, 0) >= MCP_MAX_SESSIONS) {
    *message = xasprintf("too many sessions: the server holds %u sessions, its most, for all its clients; one "
                         "without a request for %.0f s ends while it is this full: try again then",
                         MCP_MAX_SESSIONS, idle_limit(srv));
    return 503;
  }
  return 0;
}

/* Connections past their token whose body is still coming. */
static size_t count_authed(const struct server *srv) {
  size_t n = 0;
  for (size_t i = 0; i < srv->n_incoming; i++)
    n += srv->incoming[i].client != 0;
  return n;
}

/* A new connection, in a slot of its own: when every slot of those not past
 * their token is taken, the oldest of them makes room (a fresh connection
 * sends its headers at once, and is read at the next turn, before any
 * more are accepted). */
static void admit(struct server *srv, int fd) {
  size_t unauth = 0, oldest = SIZE_MAX;
  for (size_t i = 0; i < srv->n_incoming; i++) {
    const struct conn *c = &srv->incoming[i];
    if (c->client)
      continue;
    unauth++;
    if (oldest == SIZE_MAX || c->since < srv->incoming[oldest].since)
      oldest = i;
  }
  if (unauth >= MAX_UNAUTH) {
    conn_free(&srv->incoming[oldest]);
    srv->incoming[oldest] = srv->incoming[--srv->n_incoming];
  }
  conn_init(&srv->incoming[srv->n_incoming++], fd);
}

static bool handle(struct server *srv, int fd, struct mcp_request *rq);

/* Accepts and reads connections for up to `ms` milliseconds, without ever
 * waiting on one of them: each complete request is routed at once. */
static void pump(struct server *srv, int ms) {
  struct pollfd p[MAX_INCOMING + 1];
  size_t n = srv->n_incoming;
  for (size_t i = 0; i < n; i++)
    p[i] = (struct pollfd){srv->incoming[i].fd, POLLIN, 0};
  p[n] = (struct pollfd){srv->lfd, POLLIN, 0};
  double now = monotonic_seconds();
  for (size_t i = 0; i < n; i++) {
    double left = srv->incoming[i].deadline - now;
    if (left * 1000 < ms)
      ms = left > 0 ? (int)(left * 1000) + 1 : 0;
  }
  if (poll(p, n + 1, ms) < 0)
    return;
  now = monotonic_seconds();
  /* From the end: a finished connection is replaced by the last one. */
  for (size_t i = n; i-- > 0;) {
    struct conn *c = &srv->incoming[i];
    int got = REQ_MORE;
    struct mcp_request rq;
    bool was_authed = c->client != 0;
    if (p[i].revents)
      got = conn_read(c, &rq, srv->http->tokens);
    /* Past its token, its body to come: in a slot of those, or refused. */
    bool no_room = got == REQ_MORE && !was_authed && c->client && count_authed(srv) > MAX_AUTHED;
    if (got == REQ_MORE && now < c->deadline && !no_room)
      continue;
    if (got == REQ_OK) {
      if (handle(srv, c->fd, &rq))
        c->fd = -1; /* a session's thread answers it */
      free(rq.headers);
    } else if (no_room) {
      respond_error(c->fd, 503, "Service Unavailable", NULL, -32000, "too many requests coming in");
    } else if (got == REQ_UNAUTHORIZED) {
      respond_unauthorized(c->fd);
    } else if (got == REQ_TOO_LARGE) {
      respond(c->fd, 431, "Request Header Fields Too Large", NULL, NULL);
    } else if (got == REQ_MORE) {
      respond(c->fd, 408, "Request Timeout", NULL, NULL);
    } else {
      respond(c->fd, 400, "Bad Request", NULL, NULL);
    }
    conn_free(c);
    srv->incoming[i] = srv->incoming[--srv->n_incoming];
  }
  for (int k = 0; p[n].revents && k < ACCEPT_BATCH; k++) {
    int fd = accept4(srv->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0)
      break; /* none left (the listening socket does not block), or a passing error */
    admit(srv, fd);
  }
}

/* initialize: a new session, answered here (it touches no sandbox), its
 * thread started for what follows. */
static void initialize(struct server *srv, int fd, struct mcp_request *rq) {
  _cleanup_free_ char *why = NULL;
  reclaim(srv); /* the room idle sessions leave is counted */
  pthread_mutex_lock(&srv->pool.lock);
  int status = session_room(srv, rq->client, &why);
  pthread_mutex_unlock(&srv->pool.lock);
  if (status)
    return respond_error(fd, status, status == 429 ? "Too Many Requests" : "Service Unavailable", NULL, -32000, why);
  struct mcp_hsession *h = xcalloc(1, sizeof(*h));
  h->pool = &srv->pool;
  h->s.client = rq->client;
  unsigned char rnd[16];
  if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd)) {
    free(h);
    return respond_error(fd, 500, "Internal Server Error", NULL, -32603, "getrandom failed");
  }
  for (size_t i = 0; i < sizeof(rnd); i++)
    sprintf(h->s.id + 2 * i, "%02x", rnd[i]);
  _cleanup_free_ char *reply = mcp_handle_message(srv->cfg, &h->s, rq->body, rq->body_len, NULL);
  if (!h->s.initialized) {
    free(h);
    if (reply == NULL)
      return respond(fd, 202, "Accepted", NULL, NULL); /* a notification named initialize */
    return respond(fd, 200, "OK", NULL, reply);
  }
  hutch_error_t err = NULL;
  if (mcp_worker_start(h, &err) < 0) {
    _cleanup_free_ char *msg = hutch_error_format(err);
    hutch_error_free(&err);
    free(h);
    return respond_error(fd, 500, "Internal Server Error", NULL, -32603, msg);
  }
  h->last_used = monotonic_seconds();
  pthread_mutex_lock(&srv->pool.lock);
  h->next = srv->sessions;
  srv->sessions = h;
  pthread_mutex_unlock(&srv->pool.lock);
  _cleanup_free_ char *extra = xasprintf("Mcp-Session-Id: %s\r\n", h->s.id);
  respond(fd, 200, "OK", extra, reply);
}

/* GET: the session's event stream, which its thread writes to from now on
 * (chunked: it has no length). */
static bool open_stream(int fd, struct mcp_hsession *h) {
  static const char head[] = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-store\r\n"
                             "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n";
  if (!mcp_http_send(fd, head, sizeof(head) - 1, monotonic_seconds() + SEND_SECONDS))
    return false;
  if (h->stream_new >= 0)
    close(h->stream_new);
  h->stream_new = fd;
  return true;
}

/* Whether rq may be routed at all; if not, it was answered. */
static bool admissible(struct server *srv, int fd, const struct mcp_request *rq) {
  char version[32];
  if (strcmp(rq->path, "/mcp") != 0)
    respond(fd, 404, "Not Found", NULL, NULL);
  else if (rq->client == 0)
    respond(fd, 401, "Unauthorized", "WWW-Authenticate: Bearer\r\n", NULL);
  else if (!host_ok(srv, rq))
    respond_error(fd, 403, "Forbidden", NULL, -32000, "Host is not this server's loopback address and port");
  else if (!origin_ok(srv, rq))
    respond_error(fd, 403, "Forbidden", NULL, -32000, "Origin is not this server's loopback address and port");
  else if (header(rq, "MCP-Protocol-Version", version, sizeof(version)) && !mcp_version_supported(version))
    respond_error(fd, 400, "Bad Request", NULL, -32600, "unsupported MCP-Protocol-Version");
  else if (strcmp(rq->method, "POST") != 0 && strcmp(rq->method, "DELETE") != 0 && strcmp(rq->method, "GET") != 0)
    respond(fd, 405, "Method Not Allowed", "Allow: GET, POST, DELETE\r\n", NULL);
  else
    return true;
  return false;
}

static const char session_busy[] = "too many requests waiting in this session (" MCP_STR(
    MCP_SESSION_QUEUE) " behind the one it runs): wait for their answers";

/* Routes a request: true when the connection went to a session's thread
 * (which answers and closes it), false when it was answered here. */
static bool handle(struct server *srv, int fd, struct mcp_request *rq) {
  if (!admissible(srv, fd, rq))
    return false;
  char sid[64] = "";
  header(rq, "Mcp-Session-Id", sid, sizeof(sid));
  bool post = strcmp(rq->method, "POST") == 0;
  _cleanup_cjson_ cJSON *msg = post ? cJSON_ParseWithLength(rq->body, rq->body_len) : NULL;
  if (post && msg == NULL) {
    respond_error(fd, 400, "Bad Request", NULL, -32700, "parse error: not JSON");
    return false;
  }
  const char *method = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(msg, "method"));
  const cJSON *id = cJSON_GetObjectItemCaseSensitive(msg, "id");
  if (method && strcmp(method, "initialize") == 0) {
    initialize(srv, fd, rq);
    return false;
  }
  if (!sid[0]) {
    respond_error(fd, 400, "Bad Request", NULL, -32600, "no Mcp-Session-Id: initialize first");
    return false;
  }
  pthread_mutex_lock(&srv->pool.lock);
  struct mcp_hsession *h = session_find(srv, sid, rq->client);
  bool taken = false;
  int status = 0;
  const char *why = NULL;
  if (h == NULL) {
    status = 404;
    why = "session not found (ended or expired)";
  } else if (strcmp(rq->method, "DELETE") == 0) {
    mcp_worker_end(h, fd);
    taken = true;
  } else if (!post) {
    taken = open_stream(fd, h);
  } else if (method && id) {
    /* A request: its session's thread answers it, in turn. */
    if (h->queued >= MCP_SESSION_QUEUE) {
      status = 429;
      why = session_busy;
    } else if (srv->pool.queued >= MCP_MAX_QUEUED) {
      status = 503;
      why = "too many requests waiting in the server, all sessions together: try again shortly";
    } else {
      struct mcp_job *j = xcalloc(1, sizeof(*j));
      j->fd = fd;
      j->rq = *rq;
      rq->headers = NULL; /* the job's now, the body with it */
      j->id = cJSON_Duplicate(id, true);
      mcp_worker_enqueue(h, j);
      taken = true;
    }
  } else {
    /* A notification or a response: answered here, touching no sandbox. */
    const cJSON *params = cJSON_GetObjectItemCaseSensitive(msg, "params");
    if (method && strcmp(method, "notifications/cancelled") == 0)
      mcp_worker_cancel(h, cJSON_GetObjectItemCaseSensitive(params, "requestId"));
    h->last_used = monotonic_seconds();
  }
  pthread_mutex_unlock(&srv->pool.lock);
  if (status) {
    respond_error(fd, status,
                  status == 404   ? "Not Found"
                  : status == 429 ? "Too Many Requests"
                                  : "Service Unavailable",
                  id, status == 404 ? -32001 : -32000, why);
  } else if (!taken && post) {
    /* No session state is reached for a message that is not a request. */
    _cleanup_free_ char *reply =
        mcp_handle_message(srv->cfg, &(struct mcp_session){.initialized = true}, rq->body, rq->body_len, NULL);
    if (reply)
      respond(fd, 200, "OK", NULL, reply);
    else
      respond(fd, 202, "Accepted", NULL, NULL);
  } else if (!taken) {
    respond(fd, 500, "Internal Server Error", NULL, NULL); /* a stream the client did not take */
  }
  return taken;
}

/* "127.0.0.1:PORT" or "[::1]:PORT" (or localhost): loopback only. */
static int listen_on(const char *spec, struct server *srv, hutch_error_t *err) {
  _cleanup_free_ char *host = xstrdup(spec);
  char *colon = strrchr(host, ':');
  if (colon == NULL)
    return hutch_error_set(err, EINVAL, "--listen %s: wants ADDRESS:PORT", spec);
  *colon = '\0';
  char *end;
  unsigned long port = strtoul(colon + 1, &end, 10);
  if (*end || colon[1] == '\0' || port > 65535)
    return hutch_error_set(err, EINVAL, "--listen %s: bad port", spec);
  struct sockaddr_storage ss = {0};
  socklen_t sl;
  bool v6 = strcmp(host, "[::1]") == 0 || strcmp(host, "::1") == 0;
  if (v6) {
    struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
    a->sin6_family = AF_INET6;
    a->sin6_port = htons((uint16_t)port);
    a->sin6_addr = in6addr_loopback;
    sl = sizeof(*a);
  } else {
    struct sockaddr_in *a = (struct sockaddr_in *)&ss;
    a->sin_family = AF_INET;
    a->sin_port = htons((uint16_t)port);
    if (strcmp(host, "localhost") == 0)
      a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    else if (inet_pton(AF_INET, host, &a->sin_addr) != 1)
      return hutch_error_set(err, EINVAL, "--listen %s: not an IP address", spec);
    sl = sizeof(*a);
    if ((ntohl(a->sin_addr.s_addr) >> 24) != 127) {
      hutch_error_set(err, EINVAL, "--listen %s: not a loopback address", spec);
      return hutch_error_hint(err, "hutch mcp serves the local machine only (127.0.0.1 or [::1]); put a TLS proxy in "
                                   "front of it for anything else");
    }
  }
  int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  int one = 1;
  if (fd < 0)
    return hutch_error_sys(err, "mcp: socket");
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (bind(fd, (struct sockaddr *)&ss, sl) < 0 || listen(fd, LISTEN_BACKLOG) < 0 ||
      getsockname(fd, (struct sockaddr *)&ss, &sl) < 0) {
    hutch_error_sys(err, "mcp: listen on %s", spec);
    close(fd);
    return -1;
  }
  unsigned p = ntohs(v6 ? ((struct sockaddr_in6 *)&ss)->sin6_port : ((struct sockaddr_in *)&ss)->sin_port);
  const char *shown = v6 ? "[::1]" : strcmp(host, "localhost") == 0 ? "127.0.0.1" : host;
  snprintf(srv->host_ok[0], sizeof(srv->host_ok[0]), "%s:%u", shown, p);
  snprintf(srv->host_ok[1], sizeof(srv->host_ok[1]), "localhost:%u", p);
  snprintf(srv->host_ok[2], sizeof(srv->host_ok[2]), "%s:%u", v6 ? "[::1]" : "127.0.0.1", p);
  srv->bare_host_ok = p == 80;
  fprintf(stderr, "hutch mcp: listening on http://%s:%u/mcp\n", shown, p);
  return fd;
}

int mcp_http_serve(const struct mcp_config *cfg, const struct mcp_http_config *http, hutch_error_t *err) {
  struct server srv = {.cfg = cfg, .http = http, .pool = {.lock = PTHREAD_MUTEX_INITIALIZER, .cfg = cfg}};
  _cleanup_close_ int lfd = listen_on(http->listen, &srv, err);
  if (lfd < 0)
    return -1;
  srv.lfd = lfd;
  while (!mcp_stopping) {
    pump(&srv, 1000);
    reclaim(&srv);
  }
  for (size_t i = 0; i < srv.n_incoming; i++)
    conn_free(&srv.incoming[i]);
  /* Every session ends: its call is ended, its sandboxes destroyed. */
  pthread_mutex_lock(&srv.pool.lock);
  for (struct mcp_hsession *h = srv.sessions; h; h = h->next)
    mcp_worker_end(h, -1);
  struct mcp_hsession *all = srv.sessions;
  srv.sessions = NULL;
  pthread_mutex_unlock(&srv.pool.lock);
  while (all) {
    struct mcp_hsession *h = all;
    all = h->next;
    mcp_worker_join(h);
  }
  return 0;
}
