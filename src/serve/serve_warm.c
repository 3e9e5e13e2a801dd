/* SPDX-License-Identifier: Apache-2.0 */
/* Sandboxes made ahead of the requests (--warm N): a thread of its own
 * keeps up to N of them ready, with the memory limit the last request
 * asked for (verl's client asks the same one every time), so that a
 * request finds its sandbox made and the time of making one (about a
 * third of a python print(1)'s) is off its path.  Nothing has run in a
 * ready sandbox: it is as fresh as one made for the request.  A request
 * that asks for another limit gets a sandbox made for it, and the ready
 * ones are replaced with the new limit.  The sandboxes belong to this
 * thread (die_with_creator), which ends after the workers. */
#include "config.h"

#include "serve.h"

#include <errno.h>
#include <string.h>
#include <time.h>

#include "util.h"

struct serve_warm {
  struct serve_config *cfg;
  unsigned target;
  pthread_t thread;
  pthread_mutex_t lock;
  pthread_cond_t wake;
  struct hutch_sandbox **ready; /* target slots, n used */
  unsigned n;
  uint64_t memory; /* of the ready ones */
  uint64_t want;   /* the last request's */
  bool stopping;
};

/* Under the lock: the ready sandboxes are handed to the caller to drop. */
static unsigned take_all(struct serve_warm *w, struct hutch_sandbox **out) {
  unsigned n = w->n;
  memcpy(out, w->ready, n * sizeof(*out));
  w->n = 0;
  serve_metrics_gauge(w->cfg->metrics, &w->cfg->metrics->ready, -(int)n);
  return n;
}

static void *warmer(void *arg) {
  struct serve_warm *w = arg;
  struct hutch_sandbox **old = xcalloc(w->target, sizeof(*old));
  bool warned = false;
  pthread_mutex_lock(&w->lock);
  while (!w->stopping) {
    if (w->memory != w->want) {
      unsigned n = take_all(w, old);
      w->memory = w->want;
      pthread_mutex_unlock(&w->lock);
      for (unsigned i = 0; i < n; i++)
        serve_sandbox_drop(w->cfg, old[i]);
      pthread_mutex_lock(&w->lock);
      continue;
    }
    if (w->n == w->target) {
      pthread_cond_wait(&w->wake, &w->lock);
      continue;
    }
    uint64_t memory = w->memory;
    pthread_mutex_unlock(&w->lock);
    struct hutch_sandbox *sb = NULL;
    hutch_error_t err = NULL;
    if (serve_sandbox_make(w->cfg, memory, &sb, &err) < 0) {
      /* Said once; a request then makes its own and answers why it fails. */
      if (!warned)
        hutch_log_error(HUTCH_LOG_WARNING, err);
      warned = true;
      hutch_error_free(&err);
      struct timespec ts;
      clock_gettime(CLOCK_REALTIME, &ts);
      ts.tv_sec += 1;
      pthread_mutex_lock(&w->lock);
      if (!w->stopping)
        pthread_cond_timedwait(&w->wake, &w->lock, &ts);
      continue;
    }
    pthread_mutex_lock(&w->lock);
    if (w->stopping || w->memory != memory || w->n == w->target) {
      pthread_mutex_unlock(&w->lock);
      serve_sandbox_drop(w->cfg, sb);
      pthread_mutex_lock(&w->lock);
      continue;
    }
    w->ready[w->n++] = sb;
    serve_metrics_gauge(w->cfg->metrics, &w->cfg->metrics->ready, 1);
  }
  unsigned n = take_all(w, old);
  pthread_mutex_unlock(&w->lock);
  for (unsigned i = 0; i < n; i++)
    serve_sandbox_drop(w->cfg, old[i]);
  free(old);
  return NULL;
}

int serve_warm_start(struct serve_config *cfg, unsigned n, struct serve_warm **out, hutch_error_t *err) {
  *out = NULL;
  if (n == 0)
    return 0;
  struct serve_warm *w = xcalloc(1, sizeof(*w));
  w->cfg = cfg;
  w->target = n;
  w->ready = xcalloc(n, sizeof(*w->ready));
  pthread_mutex_init(&w->lock, NULL);
  pthread_cond_init(&w->wake, NULL);
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old);
  int e = pthread_create(&w->thread, NULL, warmer, w);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (e) {
    free(w->ready);
    free(w);
    errno = e;
    return hutch_error_sys(err, "serve: start the thread of --warm");
  }
  *out = w;
  return 0;
}

struct hutch_sandbox *serve_warm_take(struct serve_warm *w, uint64_t memory) {
  if (w == NULL)
    return NULL;
  struct hutch_sandbox *sb = NULL;
  pthread_mutex_lock(&w->lock);
  w->want = memory;
  if (w->memory == memory && w->n > 0) {
    sb = w->ready[--w->n];
    serve_metrics_gauge(w->cfg->metrics, &w->cfg->metrics->ready, -1);
  }
  pthread_cond_signal(&w->wake);
  pthread_mutex_unlock(&w->lock);
  return sb;
}

void serve_warm_stop(struct serve_warm *w) {
  if (w == NULL)
    return;
  pthread_mutex_lock(&w->lock);
  w->stopping = true;
  pthread_cond_signal(&w->wake);
  pthread_mutex_unlock(&w->lock);
  pthread_join(w->thread, NULL);
  pthread_cond_destroy(&w->wake);
  pthread_mutex_destroy(&w->lock);
  free(w->ready);
  free(w);
}
