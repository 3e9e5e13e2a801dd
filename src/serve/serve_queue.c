/* SPDX-License-Identifier: Apache-2.0 */
/* The requests waiting to run and the --max-concurrency worker threads
 * that run them, each request in a sandbox of its own.  The queue holds
 * --max-queue requests at most, shared between clients (serve_fair.c):
 * past that the main thread answers 503 (or --busy-status) at once,
 * without reading more of anyone's time.  A
 * request whose client hung up while it waited is dropped unrun.  On the
 * server's end the waiting requests are answered 503 and the running ones
 * are let finish (each is bounded by its time limits). */
#include "config.h"

#include "serve.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

struct serve_queue {
  struct serve_config *cfg;
  pthread_mutex_t lock;
  pthread_cond_t wake;
  struct serve_fair waiting;
  bool stopping;
  pthread_t *threads;
  unsigned n_threads;
};

void serve_note(const struct serve_config *cfg, const char *peer, unsigned client, const char *method, const char *path,
                int http, const char *language, const char *outcome, const char *sandbox, double seconds) {
  if (http)
    serve_metrics_http(cfg->metrics, http);
  if (cfg->audit == NULL)
    return;
  cJSON *j = cJSON_CreateObject();
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  cJSON_AddNumberToObject(j, "time", (double)ts.tv_sec + ts.tv_nsec / 1e9);
  cJSON_AddStringToObject(j, "peer", peer);
  if (client)
    cJSON_AddNumberToObject(j, "client", client);
  /* The client's strings, as valid UTF-8: the audit file stays JSON. */
  _cleanup_free_ char *m = mcp_utf8(method, strlen(method)), *p = mcp_utf8(path, strlen(path));
  cJSON_AddStringToObject(j, "method", m);
  cJSON_AddStringToObject(j, "path", p);
  if (http)
    cJSON_AddNumberToObject(j, "http", http);
  if (language) {
    _cleanup_free_ char *l = mcp_utf8(language, strlen(language));
    cJSON_AddStringToObject(j, "language", l);
  }
  cJSON_AddStringToObject(j, "outcome", outcome);
  if (sandbox && sandbox[0])
    cJSON_AddStringToObject(j, "sandbox", sandbox);
  cJSON_AddNumberToObject(j, "seconds", seconds);
  char *line = cJSON_PrintUnformatted(j);
  mcp_audit_write(cfg->audit, line);
  free(line);
  cJSON_Delete(j);
}

static void job_free(struct serve_job *j) {
  if (j->fd >= 0)
    close(j->fd);
  serve_request_clear(&j->rq);
  free(j);
}

/* The client closed its end (or reset it) while its request waited. */
static bool hung_up(int fd) {
  struct pollfd p = {fd, POLLRDHUP, 0};
  return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

static const char *outcome_name(enum serve_outcome o) {
  static const char *const names[SERVE_N_OUTCOMES] = {"Success", "Failed", "SandboxError", "client gone"};
  return names[o];
}

static void run_job(struct serve_config *cfg, struct serve_job *j) {
  struct serve_metrics *m = cfg->metrics;
  enum serve_outcome outcome = SERVE_REJECTED;
  char sandbox[40] = "";
  int http = 0;
  if (!hung_up(j->fd)) {
    serve_metrics_gauge(m, &m->running, 1);
    struct serve_client client = {j->fd};
    cJSON *answer = serve_run(cfg, &j->rq, &client, &outcome, sandbox);
    serve_metrics_gauge(m, &m->running, -1);
    if (outcome != SERVE_REJECTED) {
      http = 200;
      serve_respond_json(j->fd, 200, NULL, answer);
    }
    cJSON_Delete(answer);
  }
  double seconds = monotonic_seconds() - j->accepted;
  serve_metrics_done(m, outcome, seconds);
  serve_note(cfg, j->peer, j->client, "POST", "/run_code", http, j->rq.language, outcome_name(outcome), sandbox,
             seconds);
  job_free(j);
}

/* The metrics' gauges of the waiting requests and their clients, by how
 * much they moved while the lock was held. */
static void gauges(struct serve_queue *q, int jobs, int clients) {
  struct serve_metrics *m = q->cfg->metrics;
  if (jobs)
    serve_metrics_gauge(m, &m->queued, jobs);
  if (clients)
    serve_metrics_gauge(m, &m->clients, clients);
}

/* A waiting request answered without running: the server stops, or
 * another client's request took its place. */
static void unrun(struct serve_queue *q, struct serve_job *j, int status, const char *extra, const char *detail,
                  const char *why) {
  serve_respond_detail(j->fd, status, extra, detail);
  double seconds = monotonic_seconds() - j->accepted;
  serve_metrics_done(q->cfg->metrics, SERVE_REJECTED, seconds);
  serve_note(q->cfg, j->peer, j->client, "POST", "/run_code", status, j->rq.language, why, NULL, seconds);
  job_free(j);
}

static void *worker(void *arg) {
  struct serve_queue *q = arg;
  for (;;) {
    pthread_mutex_lock(&q->lock);
    while (q->waiting.n_jobs == 0 && !q->stopping)
      pthread_cond_wait(&q->wake, &q->lock);
    unsigned clients = q->waiting.n_clients;
    struct serve_job *j = serve_fair_pop(&q->waiting);
    int dc = (int)q->waiting.n_clients - (int)clients;
    pthread_mutex_unlock(&q->lock);
    if (j == NULL)
      return NULL; /* stopping, nothing left */
    gauges(q, -1, dc);
    run_job(q->cfg, j);
  }
}

int serve_queue_start(struct serve_config *cfg, struct serve_queue **out, hutch_error_t *err) {
  struct serve_queue *q = xcalloc(1, sizeof(*q));
  q->cfg = cfg;
  pthread_mutex_init(&q->lock, NULL);
  pthread_cond_init(&q->wake, NULL);
  q->threads = xcalloc(cfg->max_concurrency, sizeof(pthread_t));
  /* The workers take no signal: SIGINT and SIGTERM go to the main thread,
   * which stops the server in order. */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old);
  int rc = 0;
  for (; q->n_threads < cfg->max_concurrency; q->n_threads++) {
    int e = pthread_create(&q->threads[q->n_threads], NULL, worker, q);
    if (e) {
      errno = e;
      rc = hutch_error_sys(err, "serve: start worker thread %u of %u", q->n_threads + 1, cfg->max_concurrency);
      hutch_error_hint(err, "a smaller --max-concurrency");
      break;
    }
  }
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  *out = q;
  if (rc < 0)
    serve_queue_stop(q);
  return rc;
}

bool serve_queue_push(struct serve_queue *q, struct serve_job *j) {
  struct serve_job *out = NULL;
  pthread_mutex_lock(&q->lock);
  unsigned clients = q->waiting.n_clients;
  bool room = !q->stopping && serve_fair_push(&q->waiting, j, q->cfg->max_queue, &out);
  int dc = (int)q->waiting.n_clients - (int)clients;
  if (room)
    pthread_cond_signal(&q->wake);
  pthread_mutex_unlock(&q->lock);
  gauges(q, room && out == NULL ? 1 : 0, dc);
  if (out) {
    serve_metrics_count(q->cfg->metrics, &q->cfg->metrics->fair_share);
    _cleanup_free_ char *d = xasprintf("too many requests: this client has the most of the %u waiting, and "
                                       "another client's request took this one's place (hutch serve's fair share): "
                                       "try again shortly",
                                       q->cfg->max_queue);
    unrun(q, out, q->cfg->busy_status, "Retry-After: 1\r\n", d, "gave its place to another client's");
  }
  return room;
}

void serve_queue_stop(struct serve_queue *q) {
  if (q == NULL)
    return;
  pthread_mutex_lock(&q->lock);
  q->stopping = true;
  struct serve_fair waiting = q->waiting;
  q->waiting = (struct serve_fair){0};
  pthread_cond_broadcast(&q->wake);
  pthread_mutex_unlock(&q->lock);
  gauges(q, -(int)waiting.n_jobs, -(int)waiting.n_clients);
  for (struct serve_job *j; (j = serve_fair_pop(&waiting));)
    unrun(q, j, 503, NULL, "hutch serve is stopping: the request was not run", "server stopping");
  for (unsigned i = 0; i < q->n_threads; i++)
    pthread_join(q->threads[i], NULL);
  pthread_cond_destroy(&q->wake);
  pthread_mutex_destroy(&q->lock);
  free(q->threads);
  free(q);
}
