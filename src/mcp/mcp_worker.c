/* SPDX-License-Identifier: Apache-2.0 */
/* Over HTTP, each session is served by a thread of its own: one session's
 * long command holds that session's later requests (they are served in
 * order, as over stdio), never another session's.  The thread creates the
 * session's sandboxes, which die with it (die_with_creator), and it alone
 * touches them, its watches and its GET stream; the main thread hands it
 * requests through a queue of at most MCP_SESSION_QUEUE (and
 * MCP_MAX_QUEUED for the server), under the pool's lock.  At its end (a
 * DELETE, --idle, the server's end) it ends the call it runs, drops what
 * waits, destroys the sandboxes, answers the DELETE, and is joined. */
#include "config.h"

#include "mcp_http.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

/* A session's thread runs the runtime's sandbox set-up (paths on the stack
 * and the like): the stack of a main thread, not a library's default. */
#define STACK_SIZE (8u << 20)
/* How long an event may take to be accepted by the client's GET stream;
 * a client that does not read it loses the stream. */
#define STREAM_SEND_SECONDS 2.0

void mcp_job_free(struct mcp_job *j) {
  if (j == NULL)
    return;
  if (j->fd >= 0)
    close(j->fd);
  free(j->rq.headers);
  cJSON_Delete(j->id);
  free(j);
}

static void stream_close(struct mcp_hsession *h) {
  if (h->stream < 0)
    return;
  mcp_http_send(h->stream, "0\r\n\r\n", 5, monotonic_seconds() + 0.2); /* the chunked body's end */
  close(h->stream);
  h->stream = -1;
}

/* A GET stream the main thread handed over replaces the one before (a
 * client opens a new one when it lost its old one). */
static void stream_take(struct mcp_hsession *h) {
  pthread_mutex_lock(&h->pool->lock);
  int fd = h->stream_new;
  h->stream_new = -1;
  pthread_mutex_unlock(&h->pool->lock);
  if (fd < 0)
    return;
  stream_close(h);
  h->stream = fd;
}

/* Over the GET stream, as one server-sent event in one chunk; without a
 * stream the notification is dropped, as the transport has it. */
static void notify(struct mcp_session *s, const char *json) {
  struct mcp_hsession *h = s->notify_data;
  stream_take(h);
  if (h->stream < 0)
    return;
  _cleanup_free_ char *event = xasprintf("event: message\ndata: %s\n\n", json);
  _cleanup_free_ char *chunk = xasprintf("%zx\r\n%s\r\n", strlen(event), event);
  if (!mcp_http_send(h->stream, chunk, strlen(chunk), monotonic_seconds() + STREAM_SEND_SECONDS)) {
    close(h->stream);
    h->stream = -1;
  }
}

/* Between calls: a stream the client closed is let go, and the watches
 * are looked at when due. */
static void idle(struct mcp_hsession *h) {
  stream_take(h);
  char junk[256];
  ssize_t n = h->stream >= 0 ? recv(h->stream, junk, sizeof(junk), MSG_DONTWAIT) : -1;
  if (h->stream >= 0 && (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))) {
    close(h->stream);
    h->stream = -1;
  }
  mcp_watches_poll(h->pool->cfg, &h->s);
}

/* The running call is to end: its client cancelled it or hung up, or the
 * session ends. */
static bool job_gone(void *data, const cJSON *request) {
  (void)request; /* the main thread matched the cancellation's id */
  struct mcp_hsession *h = data;
  if (atomic_load(&h->cancel) || atomic_load(&h->ending))
    return true;
  char junk[512];
  ssize_t n = recv(h->running->fd, junk, sizeof(junk), MSG_DONTWAIT);
  return n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR);
}

static void serve(struct mcp_hsession *h, struct mcp_job *j) {
  struct mcp_cancel cancel = {.fd = j->fd, .gone = job_gone, .data = h};
  _cleanup_free_ char *reply = mcp_handle_message(h->pool->cfg, &h->s, j->rq.body, j->rq.body_len, &cancel);
  if (reply)
    mcp_http_respond(j->fd, 200, "OK", NULL, reply);
  else
    mcp_http_respond(j->fd, 202, "Accepted", NULL, NULL);
}

static void *run(void *arg) {
  struct mcp_hsession *h = arg;
  struct mcp_pool *pool = h->pool;
  pthread_mutex_lock(&pool->lock);
  for (;;) {
    while (h->head == NULL && !atomic_load(&h->ending) && !mcp_stopping) {
      struct timespec until;
      clock_gettime(CLOCK_MONOTONIC, &until);
      until.tv_sec += 1; /* the watches' and the stream's turn */
      pthread_cond_timedwait(&h->wake, &pool->lock, &until);
      pthread_mutex_unlock(&pool->lock);
      idle(h);
      pthread_mutex_lock(&pool->lock);
    }
    if (atomic_load(&h->ending) || mcp_stopping)
      break;
    struct mcp_job *j = h->head;
    h->head = j->next;
    if (h->head == NULL)
      h->tail = NULL;
    h->queued--;
    pool->queued--;
    h->running = j;
    atomic_store(&h->cancel, false);
    pthread_mutex_unlock(&pool->lock);
    serve(h, j);
    pthread_mutex_lock(&pool->lock);
    h->running = NULL;
    h->last_used = monotonic_seconds();
    pthread_mutex_unlock(&pool->lock);
    mcp_job_free(j);
    pthread_mutex_lock(&pool->lock);
  }
  /* What still waits is not served: its client hears the session ended. */
  struct mcp_job *waiting = h->head;
  pool->queued -= h->queued;
  h->head = h->tail = NULL;
  h->queued = 0;
  pthread_mutex_unlock(&pool->lock);
  while (waiting) {
    struct mcp_job *j = waiting;
    waiting = j->next;
    _cleanup_free_ char *body = mcp_error_reply(j->id, -32001, "the session ended");
    mcp_http_respond(j->fd, 404, "Not Found", NULL, body);
    mcp_job_free(j);
  }
  mcp_session_end(pool->cfg, &h->s);
  stream_take(h);
  stream_close(h);
  pthread_mutex_lock(&pool->lock);
  int end_fd = h->end_fd;
  h->end_fd = -1;
  pthread_mutex_unlock(&pool->lock);
  if (end_fd >= 0) {
    mcp_http_respond(end_fd, 200, "OK", NULL, NULL);
    close(end_fd);
  }
  pthread_mutex_lock(&pool->lock);
  h->done = true;
  pthread_mutex_unlock(&pool->lock);
  return NULL;
}

int mcp_worker_start(struct mcp_hsession *h, hutch_error_t *err) {
  h->end_fd = h->stream_new = h->stream = -1;
  h->s.notify = notify;
  h->s.notify_data = h;
  atomic_init(&h->cancel, false);
  atomic_init(&h->ending, false);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&h->wake, &ca);
  pthread_condattr_destroy(&ca);
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, STACK_SIZE);
  /* The signals that end the server go to the main thread, whose wait
   * they interrupt; a session's thread sees mcp_stopping. */
  sigset_t block, old;
  sigemptyset(&block);
  sigaddset(&block, SIGINT);
  sigaddset(&block, SIGTERM);
  sigaddset(&block, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &block, &old);
  int r = pthread_create(&h->thread, &attr, run, h);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  pthread_attr_destroy(&attr);
  if (r != 0) {
    pthread_cond_destroy(&h->wake);
    errno = r;
    return hutch_error_sys(err, "mcp: start the session's thread");
  }
  return 0;
}

void mcp_worker_enqueue(struct mcp_hsession *h, struct mcp_job *j) {
  j->next = NULL;
  if (h->tail)
    h->tail->next = j;
  else
    h->head = j;
  h->tail = j;
  h->queued++;
  h->pool->queued++;
  h->last_used = monotonic_seconds();
  pthread_cond_signal(&h->wake);
}

void mcp_worker_cancel(struct mcp_hsession *h, const cJSON *id) {
  if (id == NULL)
    return;
  if (h->running && h->running->id && cJSON_Compare(h->running->id, id, true)) {
    atomic_store(&h->cancel, true);
    return;
  }
  /* A request not yet begun is dropped: the cancellation says its client
   * no longer waits for it. */
  for (struct mcp_job **p = &h->head; *p; p = &(*p)->next) {
    struct mcp_job *j = *p;
    if (j->id == NULL || !cJSON_Compare(j->id, id, true))
      continue;
    *p = j->next;
    if (h->tail == j) {
      h->tail = NULL;
      for (struct mcp_job *t = h->head; t; t = t->next)
        h->tail = t;
    }
    h->queued--;
    h->pool->queued--;
    mcp_job_free(j);
    return;
  }
}

void mcp_worker_end(struct mcp_hsession *h, int end_fd) {
  if (end_fd >= 0) {
    if (h->end_fd >= 0)
      close(h->end_fd); /* a second DELETE of the same session: the later one is answered */
    h->end_fd = end_fd;
  }
  atomic_store(&h->ending, true);
  pthread_cond_signal(&h->wake);
}

void mcp_worker_join(struct mcp_hsession *h) {
  pthread_join(h->thread, NULL);
  pthread_cond_destroy(&h->wake);
  if (h->stream_new >= 0)
    close(h->stream_new);
  if (h->end_fd >= 0)
    close(h->end_fd);
  free(h);
}
