/* SPDX-License-Identifier: Apache-2.0 */
/* What the HTTP transport's two halves share: mcp_http.c reads connections
 * and routes their requests (the main thread), mcp_worker.c serves each
 * session's requests on a thread of the session's own. */
#ifndef HUTCH_MCP_HTTP_H
#define HUTCH_MCP_HTTP_H

#include <pthread.h>
#include <stdatomic.h>

#include "mcp.h"

struct mcp_request {
  char method[8];
  char path[256];
  char *headers; /* the raw header block, NUL-terminated; owns the body's bytes too */
  char *body;
  size_t body_len;
  unsigned client; /* 1 + the index of the token it names */
};

/* A request waiting for its session's thread, with the connection it came
 * on (answered and closed by that thread). */
struct mcp_job {
  int fd;
  struct mcp_request rq;
  cJSON *id; /* the JSON-RPC id, to match a notifications/cancelled */
  struct mcp_job *next;
};

/* What every session's thread shares with the main thread. */
struct mcp_pool {
  pthread_mutex_t lock; /* guards the fields of every mcp_hsession said so, and queued */
  const struct mcp_config *cfg;
  unsigned queued; /* jobs waiting, all sessions together */
};

struct mcp_hsession {
  struct mcp_session s; /* its thread's alone, once started */
  struct mcp_pool *pool;
  pthread_t thread;
  pthread_cond_t wake;
  /* Under pool->lock: */
  struct mcp_job *head, *tail;
  unsigned queued;
  struct mcp_job *running;
  bool done;          /* its thread has ended: to be joined */
  int end_fd;         /* the DELETE that ends it, answered once its sandboxes are gone; -1: none */
  int stream_new;     /* a GET stream just opened, for its thread to take; -1: none */
  double last_used;   /* monotonic time of its last request */
  atomic_bool cancel; /* the running request was cancelled by its client */
  atomic_bool ending; /* DELETE, --idle or the server's end: its thread ends it */
  int stream;         /* its thread's: the GET stream notifications go to; -1: none */
  struct mcp_hsession *next;
};

/* ---- mcp_http.c ---- */
/* All of buf to fd (non-blocking) by the deadline: false when the client
 * did not take it. */
bool mcp_http_send(int fd, const char *buf, size_t len, double deadline);
/* 1 + the index of the token that `given` is, 0 for none.  Every token is
 * compared to its end: no timing tells how much of one, or which one,
 * matched (hutch serve's tokens too). */
unsigned mcp_token_match(const char *const *tokens, const char *given);
/* A whole HTTP response (Connection: close), its body JSON when there is one. */
void mcp_http_respond(int fd, int status, const char *reason, const char *extra, const char *body);

/* ---- mcp_worker.c ---- */
/* Starts the session's thread (h->s initialized, h->pool set). */
int mcp_worker_start(struct mcp_hsession *h, hutch_error_t *err);
/* Under pool->lock: queues a job for the session (its thread answers it). */
void mcp_worker_enqueue(struct mcp_hsession *h, struct mcp_job *j);
/* Under pool->lock: notifications/cancelled of request id: the running call
 * ends, or the waiting request is dropped. */
void mcp_worker_cancel(struct mcp_hsession *h, const cJSON *id);
/* Under pool->lock: the session is to end (DELETE answered on end_fd when
 * not -1, once its sandboxes are gone). */
void mcp_worker_end(struct mcp_hsession *h, int end_fd);
/* Waits for the thread of an ended session and frees it. */
void mcp_worker_join(struct mcp_hsession *h);
void mcp_job_free(struct mcp_job *j);

#endif
