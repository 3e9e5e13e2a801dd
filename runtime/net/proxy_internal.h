/* SPDX-License-Identifier: Apache-2.0 */
/* The proxy's pieces (proxy.c: loop and listeners; proxy_conn.c: one
 * client connection; proxy_resolve.c: resolver threads; proxy_audit.c: the
 * JSON lines).  Internal to those files. */
#ifndef HUTCH_PROXY_INTERNAL_H
#define HUTCH_PROXY_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "proxy.h"

/* A direction's buffer starts small, for the many connections that carry
 * one request and its answer, and doubles while reads keep filling it: a
 * bulk transfer then moves megabytes per read and write.  Copying through
 * such buffers measured faster on loopback than splice(2) through pipes,
 * whose page-sized pieces cost more per byte than the copies they save.
 * All buffers of a proxy together stay under PROXY_BUF_TOTAL. */
#define PROXY_BUF_MIN (64 * 1024)
#define PROXY_BUF_MAX (4 * 1024 * 1024)
#define PROXY_BUF_TOTAL ((size_t)256 * 1024 * 1024)
#define PROXY_MAX_ADDRS 16
/* Seconds an answered error waits for the client to close first, so that
 * the answer is not destroyed by a reset. */
#define PROXY_LINGER 2.0
/* Longest wait for a name or a connect; the idle timeout when shorter. */
#define PROXY_CONNECT_TIMEOUT 30.0
/* Answered errors lingering at once per sandbox; past them an answer is
 * written and its connection closed at once: a sandbox that opens
 * connections only to be refused and never closes them makes the proxy
 * hold no more than these. */
#define PROXY_LINGER_MAX 64
/* Refusals and errors answered a second per sandbox (after a burst of as
 * many) before its listener stops accepting until the bucket has refilled:
 * a sandbox looping refused requests then makes the proxy work at this
 * pace, not at its own.  Connections wait in the kernel's backlog. */
#define PROXY_REFUSALS_SERVED 500
/* Bytes of log_max kept for the lines that say what was not logged. */
#define PROXY_LOG_RESERVE 1024

enum endpoint_kind { EP_LISTENER, EP_CLIENT, EP_UPSTREAM, EP_RESOLVER, EP_STOP };

struct endpoint {
  enum endpoint_kind kind;
  int fd;
  void *owner; /* struct conn, struct listener or struct proxy */
  bool can_read, can_write;
};

struct proxy_buf {
  char *data;
  size_t start, end, cap;
};

enum conn_state {
  CONN_HEAD,       /* reading the request head */
  CONN_RESOLVING,  /* waiting for the resolver threads */
  CONN_CONNECTING, /* non-blocking connect to addrs[next_addr - 1] */
  CONN_FORWARD,    /* plain HTTP: the head and body up, the answer down */
  CONN_TUNNEL,     /* CONNECT: bytes both ways */
  CONN_LINGER,     /* an answer of ours, then waiting for the client to close */
};

struct listener;
struct resolve_job;

struct conn {
  struct listener *l;
  struct conn *prev, *next;  /* the listener's connections */
  struct conn *pending_next; /* on the proxy's list of unfinished pumps */
  bool pending;
  struct endpoint client, up;
  enum conn_state state;
  struct proxy_buf c2u, u2c;
  bool client_eof, up_eof, client_shut, up_shut;
  bool counted;       /* in l->active */
  bool lingers;       /* in l->lingering: its answer waits for the client to close */
  uint64_t body_left; /* plain HTTP: body bytes still to forward */
  bool sni_pending;
  bool tls_required; /* the tunnel must start with a ClientHello naming host */
  bool connect;      /* a CONNECT request */
  char method[24];
  char host[256];
  uint16_t port;
  struct sockaddr_storage addrs[PROXY_MAX_ADDRS];
  size_t n_addrs, next_addr;
  bool override;
  bool public_only;     /* admitted by `allow = public`: every address must be public */
  char address[64];     /* the one used, or empty */
  const char *decision; /* "allow", "refuse", "error", or NULL: not logged */
  char rule[160];
  char error[200];
  uint64_t bytes_up, bytes_down;
  size_t own_pending;                  /* bytes of our own answer at the front of u2c */
  double start, last_active, deadline; /* deadline: resolve/connect/linger, 0: none */
  struct resolve_job *job;
  bool dead;
};

/* A token bucket: `rate` tokens a second, `burst` at most. */
struct proxy_bucket {
  double tokens, at; /* at 0: full */
};
/* True (and one token less) when it holds a token at `now`; pure. */
bool proxy_bucket_take(struct proxy_bucket *b, double rate, double burst, double now);

/* Requests answered without a line of their own in the log. */
struct proxy_unlogged {
  uint64_t allowed, refused, errors, bytes_up, bytes_down;
};

struct listener {
  struct proxy *p;
  struct endpoint ep;
  char *sandbox_id;
  const struct net_policy *policy;
  int audit_fd;
  /* The log (proxy_audit.c): the bytes this listener wrote to it (a
   * file shared with others, such as a build's log, counts only those),
   * whether they reached log_max, what was counted instead, and the
   * refusals' rate. */
  uint64_t log_bytes;
  bool log_full;
  int log_errno; /* a write failed: the later lines are counted, not written */
  struct proxy_bucket log_tokens;
  struct proxy_unlogged rated; /* past the rate, not yet reported */
  double rated_since;
  struct proxy_unlogged dropped; /* past log_max, reported when the proxy ends */
  bool log_ended;
  struct proxy_bucket serve_tokens; /* refusals answered (PROXY_REFUSALS_SERVED) */
  unsigned lingering;
  pid_t peer_pid; /* > 0: connections from any other process are closed unserved */
  unsigned active;
  uint64_t bytes_used;
  bool exhausted;
  double paused_until; /* out of file descriptors: accept later */
  struct conn *conns;
};

struct resolver;

struct proxy {
  int epfd;
  struct listener **listeners;
  size_t n_listeners;
  struct resolver *resolver;
  struct endpoint resolver_ep, stop_ep;
  struct conn *pending;   /* connections with more to pump */
  struct conn *graveyard; /* closed, freed after the current batch of events */
  size_t max_events;
  size_t buf_bytes; /* of every connection's buffers */
};

/* proxy_conn.c */
void conn_accept(struct listener *l, int fd, double now);
void conn_event(struct conn *c, struct endpoint *ep, uint32_t events, double now);
void conn_pump(struct conn *c, double now);
void conn_resolved(struct conn *c, struct resolve_job *job, double now);
void conn_timeout_check(struct conn *c, double now);
void conn_close(struct conn *c, const char *error);
void conn_free(struct conn *c);

/* proxy_resolve.c: getaddrinfo in a few threads, completions on an eventfd. */
struct resolve_job {
  struct resolve_job *next;
  struct conn *c; /* NULL once the connection is gone */
  char host[256];
  int gai_error;
  struct sockaddr_storage addrs[PROXY_MAX_ADDRS];
  size_t n_addrs;
};
int resolver_new(struct resolver **out, hutch_error_t *err);
int resolver_fd(const struct resolver *r);
void resolver_submit(struct resolver *r, struct resolve_job *job);
/* The finished jobs (a list through ->next), after the eventfd fired. */
struct resolve_job *resolver_take_done(struct resolver *r);
void resolver_free(struct resolver *r);
/* proxy.c: the proxy's resolver, started on first use; NULL on failure. */
struct resolver *proxy_resolver(struct proxy *p, hutch_error_t *err);
/* proxy.c: a refusal or error was answered; past PROXY_REFUSALS_SERVED a
 * second the listener pauses. */
void listener_refused(struct listener *l, double now);

/* proxy_audit.c */
struct audit_record {
  const char *sandbox, *method, *host;
  unsigned port;
  const char *address; /* NULL: null */
  const char *decision, *rule;
  bool override;
  uint64_t bytes_up, bytes_down;
  double duration_ms;
  const char *error; /* NULL: null */
};
/* One request's line, with one write() (lines of concurrent writers never
 * interleave), or counted instead: a refusal or error past
 * NET_LOG_REFUSALS_PER_SECOND, any request once the log reached log_max. */
void proxy_log_request(struct listener *l, const struct audit_record *r, double now);
/* The sweep: the refusals counted past the rate, one line a second. */
void proxy_log_tick(struct listener *l, double now);
/* The proxy ends: what is still counted, and what log_max kept out. */
void proxy_log_end(struct listener *l);
/* JSON string escaping into a growing buffer (exposed for the unit test). */
char *proxy_json_escape(const char *s);

#endif
