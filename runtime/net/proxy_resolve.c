/* SPDX-License-Identifier: Apache-2.0 */
/* Name resolution for the proxy: getaddrinfo() blocks, so a few threads
 * run it and hand the results back through an eventfd the event loop
 * watches.  A slow or dead DNS server then delays only the requests that
 * wait for it. */
#include "config.h"

#include <netdb.h>
#include <pthread.h>
#include <string.h>
#include <sys/eventfd.h>

#include "proxy_internal.h"
#include "util.h"

#define RESOLVER_THREADS 4

struct resolver {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  struct resolve_job *queue, *queue_tail, *done;
  bool stop;
  int efd;
  pthread_t threads[RESOLVER_THREADS];
  size_t n_threads;
};

static void resolve_one(struct resolve_job *job) {
  struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_ADDRCONFIG};
  struct addrinfo *res = NULL;
  job->gai_error = getaddrinfo(job->host, NULL, &hints, &res);
  job->n_addrs = 0;
  for (struct addrinfo *ai = res; ai && job->n_addrs < PROXY_MAX_ADDRS; ai = ai->ai_next) {
    if ((ai->ai_family != AF_INET && ai->ai_family != AF_INET6) || ai->ai_addrlen > sizeof(job->addrs[0]))
      continue;
    memset(&job->addrs[job->n_addrs], 0, sizeof(job->addrs[0]));
    memcpy(&job->addrs[job->n_addrs++], ai->ai_addr, ai->ai_addrlen);
  }
  if (res)
    freeaddrinfo(res);
}

static void *worker(void *arg) {
  struct resolver *r = arg;
  pthread_mutex_lock(&r->mu);
  for (;;) {
    while (!r->stop && r->queue == NULL)
      pthread_cond_wait(&r->cv, &r->mu);
    if (r->stop)
      break;
    struct resolve_job *job = r->queue;
    r->queue = job->next;
    if (r->queue == NULL)
      r->queue_tail = NULL;
    pthread_mutex_unlock(&r->mu);
    resolve_one(job);
    pthread_mutex_lock(&r->mu);
    job->next = r->done;
    r->done = job;
    uint64_t one = 1;
    if (write(r->efd, &one, sizeof(one)) < 0) {
      /* an eventfd write only fails when the counter is full: it is
       * readable then anyway */
    }
  }
  pthread_mutex_unlock(&r->mu);
  return NULL;
}

int resolver_new(struct resolver **out, hutch_error_t *err) {
  struct resolver *r = xcalloc(1, sizeof(*r));
  pthread_mutex_init(&r->mu, NULL);
  pthread_cond_init(&r->cv, NULL);
  r->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (r->efd < 0) {
    hutch_error_sys(err, "proxy: eventfd for the resolver");
    resolver_free(r);
    return -1;
  }
  for (size_t i = 0; i < RESOLVER_THREADS; i++) {
    int e = pthread_create(&r->threads[i], NULL, worker, r);
    if (e != 0) {
      hutch_error_set(err, e, "proxy: start a resolver thread");
      resolver_free(r);
      return -1;
    }
    r->n_threads++;
  }
  *out = r;
  return 0;
}

int resolver_fd(const struct resolver *r) {
  return r->efd;
}

void resolver_submit(struct resolver *r, struct resolve_job *job) {
  job->next = NULL;
  pthread_mutex_lock(&r->mu);
  if (r->queue_tail)
    r->queue_tail->next = job;
  else
    r->queue = job;
  r->queue_tail = job;
  pthread_cond_signal(&r->cv);
  pthread_mutex_unlock(&r->mu);
}

struct resolve_job *resolver_take_done(struct resolver *r) {
  uint64_t n;
  if (read(r->efd, &n, sizeof(n)) < 0) {
    /* EAGAIN: nothing new, the list below is empty or was taken already */
  }
  pthread_mutex_lock(&r->mu);
  struct resolve_job *done = r->done;
  r->done = NULL;
  pthread_mutex_unlock(&r->mu);
  return done;
}

static void free_list(struct resolve_job *j) {
  while (j) {
    struct resolve_job *next = j->next;
    free(j);
    j = next;
  }
}

void resolver_free(struct resolver *r) {
  if (r == NULL)
    return;
  pthread_mutex_lock(&r->mu);
  r->stop = true;
  pthread_cond_broadcast(&r->cv);
  pthread_mutex_unlock(&r->mu);
  /* A thread inside getaddrinfo() finishes that lookup first. */
  for (size_t i = 0; i < r->n_threads; i++)
    pthread_join(r->threads[i], NULL);
  free_list(r->queue);
  free_list(r->done);
  if (r->efd >= 0)
    close(r->efd);
  pthread_mutex_destroy(&r->mu);
  pthread_cond_destroy(&r->cv);
  free(r);
}
