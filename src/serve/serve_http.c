/* SPDX-License-Identifier: Apache-2.0 */
/* hutch serve's main thread: the listening socket and the connections
 * whose request is still coming, read side by side without waiting on any
 * (a client that sends a byte a second holds its own slot, never the
 * server), each by its deadline, each bounded: SERVE_MAX_HEAD bytes of
 * head, --max-body of body (Content-Length only: a chunked body is refused
 * with 411, saying so).  Once whole, a request is answered here (health,
 * metrics, refusals) or, for POST /run_code, queued for a worker.
 *
 * Who may ask: on a loopback address anyone on this machine, as
 * SandboxFusion (verl's client sends no token); a token file makes every
 * request but the health check carry "Authorization: Bearer TOKEN", and
 * any other address needs one.  Without tokens, a browser must not be a
 * way in: a request with an Origin header, a Host that does not name a
 * loopback address (DNS rebinding), or a body that is not JSON (a form's
 * "simple" POST) is refused. */
#include "config.h"

#include "serve.h"

#include "../mcp/mcp_http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util.h"

volatile sig_atomic_t serve_stopping;

#define MAX_CONNS 128     /* connections whose request is being read */
#define HEAD_SECONDS 10.0 /* for the head to come whole, from the accept */
#define BODY_SECONDS 60.0 /* then for the body */
#define ACCEPT_BATCH 32

struct conn {
  int fd;
  char peer[64];
  char *buf;
  size_t len, cap;
  size_t head_len; /* bytes of the head and its blank line; 0 until seen */
  size_t body_len;
  struct serve_head head;
  unsigned client;
  double accepted, deadline;
};

struct server {
  struct serve_config *cfg;
  struct serve_queue *queue;
  bool loopback;
  int lfd;
  struct conn conns[MAX_CONNS];
  size_t n;
};

static void conn_close(struct conn *c) {
  if (c->fd >= 0)
    close(c->fd);
  free(c->buf);
  serve_head_clear(&c->head);
  memset(c, 0, sizeof(*c));
  c->fd = -1;
}

/* Answers a request that goes no further, and audits it. */
static void refuse(struct server *srv, struct conn *c, int status, const char *extra, const char *detail,
                   uint64_t *counter) {
  serve_respond_detail(c->fd, status, extra, detail);
  if (counter)
    serve_metrics_count(srv->cfg->metrics, counter);
  serve_note(srv->cfg, c->peer, c->client, c->head.method[0] ? c->head.method : "-",
             c->head.target[0] ? c->head.target : "-", status, NULL, detail, NULL, monotonic_seconds() - c->accepted);
}

/* The token's client: 1 + its index; 0 when none matches.  Every token
 * is compared to its end: the time taken tells nothing of a match.  The
 * token comes as "Bearer TOKEN", or as the password of "Basic" (what
 * Python's requests sends from ~/.netrc, so that verl's client, which sets
 * no header of its own, reaches a server off loopback unchanged). */
static unsigned token_client(const char *const *tokens, const char *auth) {
  char given[1024];
  if (auth && strncasecmp(auth, "Bearer ", 7) == 0) {
    snprintf(given, sizeof(given), "%s", auth + 7);
  } else if (auth && strncasecmp(auth, "Basic ", 6) == 0 && strlen(auth + 6) < 1000) {
    unsigned char plain[BASE64_DECODED_MAX(1000) + 1];
    size_t n = 0;
    if (!base64_decode(auth + 6, strlen(auth + 6), plain, &n))
      return 0;
    plain[n] = '\0';
    const char *colon = memchr(plain, ':', n);
    if (colon == NULL || memchr(plain, '\0', n))
      return 0;
    snprintf(given, sizeof(given), "%s", colon + 1);
  } else {
    return 0;
  }
  unsigned client = mcp_token_match(tokens, given);
  explicit_bzero(given, sizeof(given));
  return client;
}

/* Host names a loopback address: 127.x.x.x, localhost, [::1], with or
 * without a port. */
static bool host_loopback(const char *host) {
  if (host == NULL)
    return false;
  char name[256];
  snprintf(name, sizeof(name), "%s", host);
  char *colon = name[0] == '[' ? strstr(name, "]:") : strrchr(name, ':');
  if (colon)
    colon[name[0] == '[' ? 1 : 0] = '\0';
  struct in_addr a;
  return strcasecmp(name, "localhost") == 0 || strcmp(name, "[::1]") == 0 ||
         (inet_pton(AF_INET, name, &a) == 1 && (ntohl(a.s_addr) >> 24) == 127);
}

static bool is_path(const struct conn *c, const char *path) {
  size_t n = strlen(path);
  return strncmp(c->head.target, path, n) == 0 && (c->head.target[n] == '\0' || c->head.target[n] == '?');
}

static const char *const public_paths[] = {"/v1/ping", "/health"};

/* The head is in: whether the request may go on to its body (else it
 * was answered).  The checks that need no body come first, so that a
 * refused request costs no body read. */
static bool head_ok(struct server *srv, struct conn *c) {
  struct serve_config *cfg = srv->cfg;
  struct serve_metrics *m = cfg->metrics;
  bool public = false;
  for (size_t i = 0; i < ARRAY_SIZE(public_paths); i++)
  public |= is_path(c, public_paths[i]);
  if (cfg->tokens) {
    c->client = token_client(cfg->tokens, serve_header(&c->head, "Authorization"));
    if (c->client == 0 && !public) {
      refuse(srv, c, 401, "WWW-Authenticate: Bearer\r\n",
             "this server needs a token (Authorization: Bearer TOKEN, or Basic with it as the password, as "
             "~/.netrc gives Python's requests), one of hutch serve --token-file",
             &m->unauthorized);
      return false;
    }
  } else {
    if (srv->loopback && !host_loopback(serve_header(&c->head, "Host"))) {
      refuse(srv, c, 403, NULL, "Host does not name this loopback server", &m->unauthorized);
      return false;
    }
    if (serve_header(&c->head, "Origin")) {
      refuse(srv, c, 403, NULL,
             "requests from a web page (an Origin header) are refused: a server without "
             "--token-file takes only local programs' requests",
             &m->unauthorized);
      return false;
    }
  }
  if (serve_header(&c->head, "Transfer-Encoding")) {
    refuse(srv, c, 411, NULL, "Transfer-Encoding is not taken: send the body with a Content-Length", &m->bad_request);
    return false;
  }
  const char *cl = serve_header(&c->head, "Content-Length");
  if (cl == NULL && strcmp(c->head.method, "POST") == 0) {
    refuse(srv, c, 411, NULL, "a POST needs a Content-Length", &m->bad_request);
    return false;
  }
  if (cl) {
    char *end;
    errno = 0;
    unsigned long long v = strtoull(cl, &end, 10);
    if (*cl < '0' || *cl > '9' || *end || errno) {
      refuse(srv, c, 400, NULL, "Content-Length is not a number", &m->bad_request);
      return false;
    }
    if (v > cfg->max_body) {
      _cleanup_free_ char *d = xasprintf(
          "a body of %llu bytes is past this server's bound of %zu (hutch serve --max-body)", v, cfg->max_body);
      refuse(srv, c, 413, NULL, d, &m->too_large);
      return false;
    }
    c->body_len = (size_t)v;
  }
  const char *expect = serve_header(&c->head, "Expect");
  if (expect && strcasecmp(expect, "100-continue") == 0 && c->body_len) {
    static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
    if (send(c->fd, cont, sizeof(cont) - 1, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
      return false;
  }
  return true;
}

static void run_code(struct server *srv, struct conn *c) {
  struct serve_config *cfg = srv->cfg;
  const char *ct = serve_header(&c->head, "Content-Type");
  if (ct && strncasecmp(ct, "application/json", 16) != 0) {
    refuse(srv, c, 415, NULL, "the body must be JSON (Content-Type: application/json)", &cfg->metrics->bad_request);
    return serve_metrics_done(cfg->metrics, SERVE_REJECTED, 0);
  }
  struct serve_job *j = xcalloc(1, sizeof(*j));
  _cleanup_free_ char *detail = NULL;
  int status = serve_request_parse(cfg, c->buf + c->head_len, c->body_len, &j->rq, &detail);
  if (status) {
    serve_respond(c->fd, status, "application/json", NULL, detail, strlen(detail), 10);
    serve_metrics_count(cfg->metrics, &cfg->metrics->bad_request);
    serve_metrics_done(cfg->metrics, SERVE_REJECTED, monotonic_seconds() - c->accepted);
    serve_note(cfg, c->peer, c->client, "POST", "/run_code", status, NULL, "invalid request", NULL,
               monotonic_seconds() - c->accepted);
    free(j);
    return;
  }
  j->fd = c->fd;
  snprintf(j->peer, sizeof(j->peer), "%s", c->peer);
  j->client = c->client;
  j->accepted = c->accepted;
  if (serve_queue_push(srv->queue, j)) {
    c->fd = -1; /* the worker's now */
    return;
  }
  j->fd = -1;
  int busy = cfg->busy_status;
  _cleanup_free_ char *d = xasprintf("too many requests: %u run and %u wait, this server's most (hutch serve "
                                     "--max-concurrency, --max-queue): try again shortly",
                                     cfg->max_concurrency, cfg->max_queue);
  refuse(srv, c, busy, "Retry-After: 1\r\n", d, &cfg->metrics->queue_full);
  serve_metrics_done(cfg->metrics, SERVE_REJECTED, monotonic_seconds() - c->accepted);
  serve_request_clear(&j->rq);
  free(j);
}

/* A whole request, routed. */
static void route(struct server *srv, struct conn *c) {
  struct serve_config *cfg = srv->cfg;
  const char *method = c->head.method;
  bool get = strcmp(method, "GET") == 0, post = strcmp(method, "POST") == 0;
  int status = 200;
  if (is_path(c, "/run_code") && post)
    return run_code(srv, c);
  if ((is_path(c, "/v1/ping") || is_path(c, "/health")) && get) {
    const char *body = is_path(c, "/health") ? "{\"status\":\"ok\"}" : "\"pong\"";
    serve_respond(c->fd, 200, "application/json", NULL, body, strlen(body), 10);
  } else if (is_path(c, "/metrics") && get) {
    _cleanup_free_ char *t = serve_metrics_text(cfg->metrics);
    serve_respond(c->fd, 200, "text/plain; version=0.0.4; charset=utf-8", NULL, t, strlen(t), 10);
  } else if (is_path(c, "/run_jupyter") && post) {
    _cleanup_cjson_ cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "status", "SandboxError");
    cJSON_AddStringToObject(j, "message", "run_jupyter is not supported by hutch serve: use /run_code");
    cJSON_AddNullToObject(j, "driver");
    cJSON_AddArrayToObject(j, "cells");
    cJSON_AddNullToObject(j, "executor_pod_name");
    cJSON_AddObjectToObject(j, "files");
    serve_respond_json(c->fd, 200, NULL, j);
  } else if (is_path(c, "/run_code") || is_path(c, "/run_jupyter")) {
    status = 405;
    serve_respond_detail(c->fd, 405, "Allow: POST\r\n", "Method Not Allowed");
  } else if (is_path(c, "/v1/ping") || is_path(c, "/health") || is_path(c, "/metrics")) {
    status = 405;
    serve_respond_detail(c->fd, 405, "Allow: GET\r\n", "Method Not Allowed");
  } else {
    status = 404;
    serve_respond_detail(c->fd, 404, NULL, "Not Found");
  }
  serve_note(cfg, c->peer, c->client, method, c->head.target, status, NULL, status == 200 ? "ok" : "refused", NULL,
             monotonic_seconds() - c->accepted);
}

/* Reads what c's socket holds: false when c is done with (answered, or
 * gone), true while more is to come. */
static bool conn_read(struct server *srv, struct conn *c) {
  if (c->len == c->cap && c->head_len == 0) {
    refuse(srv, c, 431, NULL, "the request head is past " SERVE_STR(SERVE_MAX_HEAD) " bytes",
           &srv->cfg->metrics->too_large);
    return false;
  }
  ssize_t n = recv(c->fd, c->buf + c->len, c->cap - c->len, MSG_DONTWAIT);
  if (n < 0 && (errno == EAGAIN || errno == EINTR))
    return true;
  if (n <= 0)
    return false;
  c->len += (size_t)n;
  if (c->head_len == 0) {
    char *end = memmem(c->buf, c->len, "\r\n\r\n", 4);
    size_t sep = 4;
    char *lf = memmem(c->buf, c->len, "\n\n", 2);
    if (lf && (end == NULL || lf < end)) {
      end = lf;
      sep = 2;
    }
    if (end == NULL)
      return true;
    const char *why = NULL;
    if (!serve_head_parse(c->buf, (size_t)(end - c->buf), &c->head, &why)) {
      refuse(srv, c, 400, NULL, why, &srv->cfg->metrics->bad_request);
      return false;
    }
    c->head_len = (size_t)(end - c->buf) + sep;
    if (!head_ok(srv, c))
      return false;
    c->deadline = monotonic_seconds() + BODY_SECONDS;
    size_t need = c->head_len + c->body_len;
    if (need > c->cap) {
      c->cap = need;
      c->buf = xrealloc(c->buf, c->cap + 1);
    }
  }
  if (c->len < c->head_len + c->body_len)
    return true;
  route(srv, c);
  return false;
}

static void peer_name(const struct sockaddr_storage *ss, char *out, size_t len) {
  char a[INET6_ADDRSTRLEN] = "?";
  unsigned port = 0;
  if (ss->ss_family == AF_INET) {
    const struct sockaddr_in *s4 = (const struct sockaddr_in *)ss;
    inet_ntop(AF_INET, &s4->sin_addr, a, sizeof(a));
    port = ntohs(s4->sin_port);
    snprintf(out, len, "%s:%u", a, port);
  } else {
    const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)ss;
    inet_ntop(AF_INET6, &s6->sin6_addr, a, sizeof(a));
    port = ntohs(s6->sin6_port);
    snprintf(out, len, "[%s]:%u", a, port);
  }
}

/* A new connection, in a slot of its own; when every slot is taken, the
 * one that has waited longest for its head makes room. */
static void admit(struct server *srv, int fd, const struct sockaddr_storage *ss) {
  if (srv->n == MAX_CONNS) {
    size_t oldest = SIZE_MAX;
    for (size_t i = 0; i < srv->n; i++)
      if (srv->conns[i].head_len == 0 && (oldest == SIZE_MAX || srv->conns[i].accepted < srv->conns[oldest].accepted))
        oldest = i;
    if (oldest == SIZE_MAX) {
      serve_respond_detail(fd, 503, "Retry-After: 1\r\n", "too many connections coming in");
      close(fd);
      return;
    }
    refuse(srv, &srv->conns[oldest], 408, NULL, "the request head did not come in time", NULL);
    conn_close(&srv->conns[oldest]);
    srv->conns[oldest] = srv->conns[--srv->n];
  }
  struct conn *c = &srv->conns[srv->n++];
  memset(c, 0, sizeof(*c));
  c->fd = fd;
  peer_name(ss, c->peer, sizeof(c->peer));
  c->cap = SERVE_MAX_HEAD;
  c->buf = xmalloc(c->cap + 1);
  c->accepted = monotonic_seconds();
  c->deadline = c->accepted + HEAD_SECONDS;
}

static void pump(struct server *srv) {
  struct pollfd p[MAX_CONNS + 1];
  size_t n = srv->n;
  int ms = 1000;
  double now = monotonic_seconds();
  for (size_t i = 0; i < n; i++) {
    p[i] = (struct pollfd){srv->conns[i].fd, POLLIN, 0};
    double left = srv->conns[i].deadline - now;
    if (left * 1000 < ms)
      ms = left > 0 ? (int)(left * 1000) + 1 : 0;
  }
  p[n] = (struct pollfd){srv->lfd, POLLIN, 0};
  if (poll(p, n + 1, ms) < 0)
    return;
  now = monotonic_seconds();
  for (size_t i = n; i-- > 0;) { /* from the end: a finished slot takes the last one */
    struct conn *c = &srv->conns[i];
    bool more = true;
    if (p[i].revents)
      more = conn_read(srv, c);
    if (more && now >= c->deadline) {
      refuse(srv, c, 408, NULL,
             c->head_len ? "the request body did not come in time" : "the request head did not come in time", NULL);
      more = false;
    }
    if (!more) {
      conn_close(c);
      srv->conns[i] = srv->conns[--srv->n];
    }
  }
  for (int k = 0; (p[n].revents & POLLIN) && k < ACCEPT_BATCH; k++) {
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    int fd = accept4(srv->lfd, (struct sockaddr *)&ss, &sl, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0)
      break;
    admit(srv, fd, &ss);
  }
}

/* ADDRESS:PORT, [IPv6]:PORT or localhost:PORT; port 0 picks one. */
static int listen_on(struct server *srv, hutch_error_t *err) {
  const char *spec = srv->cfg->listen;
  _cleanup_free_ char *host = xstrdup(spec);
  char *colon = strrchr(host, ':');
  if (colon == NULL || colon == host)
    return hutch_error_set(err, EINVAL, "serve: --listen %s: wants ADDRESS:PORT", spec);
  *colon = '\0';
  char *end;
  unsigned long port = strtoul(colon + 1, &end, 10);
  if (*end || colon[1] == '\0' || port > 65535)
    return hutch_error_set(err, EINVAL, "serve: --listen %s: bad port", spec);
  char *name = host;
  if (name[0] == '[' && name[strlen(name) - 1] == ']') {
    name[strlen(name) - 1] = '\0';
    name++;
  }
  if (strcmp(name, "localhost") == 0)
    name = "127.0.0.1";
  struct addrinfo hints = {.ai_flags = AI_NUMERICHOST, .ai_socktype = SOCK_STREAM}, *ai = NULL;
  if (getaddrinfo(name, NULL, &hints, &ai) != 0 || ai == NULL) {
    hutch_error_set(err, EINVAL, "serve: --listen %s: not an IP address", spec);
    return hutch_error_hint(err, "such as 127.0.0.1:8080, [::1]:8080 or 0.0.0.0:8080 (with --token-file)");
  }
  struct sockaddr_storage ss = {0};
  socklen_t sl = ai->ai_addrlen;
  memcpy(&ss, ai->ai_addr, ai->ai_addrlen);
  freeaddrinfo(ai);
  if (ss.ss_family == AF_INET) {
    struct sockaddr_in *a = (struct sockaddr_in *)&ss;
    a->sin_port = htons((uint16_t)port);
    srv->loopback = (ntohl(a->sin_addr.s_addr) >> 24) == 127;
  } else {
    struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
    a->sin6_port = htons((uint16_t)port);
    srv->loopback = IN6_IS_ADDR_LOOPBACK(&a->sin6_addr);
  }
  if (!srv->loopback && srv->cfg->tokens == NULL) {
    hutch_error_set(err, EPERM, "serve: --listen %s is not a loopback address: it needs --token-file", spec);
    return hutch_error_hint(err, "head -c 32 /dev/urandom | base64 > token; chmod 600 token; then --token-file "
                                 "token, and clients send Authorization: Bearer TOKEN");
  }
  int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0)
    return hutch_error_sys(err, "serve: socket");
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (bind(fd, (struct sockaddr *)&ss, sl) < 0 || listen(fd, 512) < 0 ||
      getsockname(fd, (struct sockaddr *)&ss, &sl) < 0) {
    hutch_error_sys(err, "serve: listen on %s", spec);
    close(fd);
    return -1;
  }
  char shown[96];
  peer_name(&ss, shown, sizeof(shown));
  fprintf(stderr, "hutch serve: listening on http://%s (POST /run_code)\n", shown);
  if (srv->cfg->json) {
    _cleanup_cjson_ cJSON *j = cJSON_CreateObject();
    _cleanup_free_ char *url = xasprintf("http://%s", shown);
    _cleanup_free_ char *run = xasprintf("http://%s/run_code", shown);
    cJSON_AddStringToObject(j, "url", url);
    cJSON_AddStringToObject(j, "run_code", run);
    cJSON_AddStringToObject(j, "image", srv->cfg->image_name);
    cJSON *langs = cJSON_AddArrayToObject(j, "languages");
    for (size_t i = 0; serve_lang_at(i); i++)
      if (srv->cfg->languages[i])
        cJSON_AddItemToArray(langs, cJSON_CreateString(serve_lang_at(i)->name));
    cJSON_AddNumberToObject(j, "max_concurrency", srv->cfg->max_concurrency);
    cJSON_AddNumberToObject(j, "max_queue", srv->cfg->max_queue);
    cJSON_AddStringToObject(j, "memory_limits", srv->cfg->no_cgroups ? "rlimits" : "cgroup");
    cJSON_AddBoolToObject(j, "token", srv->cfg->tokens != NULL);
    _cleanup_free_ char *t = cJSON_PrintUnformatted(j);
    printf("%s\n", t);
    fflush(stdout);
  }
  return fd;
}

int serve_http(struct serve_config *cfg, hutch_error_t *err) {
  struct server *srv = xcalloc(1, sizeof(*srv));
  srv->cfg = cfg;
  srv->lfd = listen_on(srv, err);
  /* The ready sandboxes' thread outlives the workers, which use them. */
  if (srv->lfd < 0 || serve_warm_start(cfg, cfg->warm, &cfg->warmer, err) < 0 ||
      serve_queue_start(cfg, &srv->queue, err) < 0) {
    serve_warm_stop(cfg->warmer);
    if (srv->lfd >= 0)
      close(srv->lfd);
    free(srv);
    return -1;
  }
  while (!serve_stopping)
    pump(srv);
  close(srv->lfd);
  for (size_t i = 0; i < srv->n; i++)
    conn_close(&srv->conns[i]);
  fprintf(stderr, "hutch serve: stopping: the running requests finish, the waiting ones are answered 503\n");
  serve_queue_stop(srv->queue);
  serve_warm_stop(cfg->warmer);
  free(srv);
  return 0;
}
