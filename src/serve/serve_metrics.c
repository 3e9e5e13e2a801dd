/* SPDX-License-Identifier: Apache-2.0 */
/* The counters behind GET /metrics, in Prometheus' text exposition format:
 * answers by HTTP class, /run_code requests by SandboxFusion status and
 * their latency (from the connection's accept to the answer written,
 * queue included), the queue, the sandboxes alive, and what failed. */
#include "config.h"

#include "serve.h"

#include <string.h>

#include "util.h"

/* Seconds; a print(1) in python is tens of milliseconds, a C++ compile
 * around a second, a time limit tens of seconds. */
static const double bounds[SERVE_N_BUCKETS] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120};

void serve_metrics_http(struct serve_metrics *m, int status) {
  int c = status / 100;
  pthread_mutex_lock(&m->lock);
  if (c >= 1 && c <= 5)
    m->http[c]++;
  pthread_mutex_unlock(&m->lock);
}

void serve_metrics_done(struct serve_metrics *m, enum serve_outcome o, double seconds) {
  pthread_mutex_lock(&m->lock);
  m->outcomes[o]++;
  if (o != SERVE_REJECTED) {
    size_t b = 0;
    while (b < SERVE_N_BUCKETS && seconds > bounds[b])
      b++;
    m->buckets[b]++;
    m->latency_sum += seconds;
    m->latency_count++;
  }
  pthread_mutex_unlock(&m->lock);
}

void serve_metrics_count(struct serve_metrics *m, uint64_t *counter) {
  pthread_mutex_lock(&m->lock);
  (*counter)++;
  pthread_mutex_unlock(&m->lock);
}

void serve_metrics_gauge(struct serve_metrics *m, unsigned *gauge, int delta) {
  pthread_mutex_lock(&m->lock);
  *gauge = (unsigned)((int)*gauge + delta);
  pthread_mutex_unlock(&m->lock);
}

/* text_appendf keeps 127 bytes a call: the help lines go whole, in pieces. */
static void family(char **t, size_t *len, size_t *cap, const char *name, const char *type, const char *help) {
  const char *parts[] = {"# HELP ", name, " ", help, "\n# TYPE ", name, " ", type, "\n"};
  for (size_t i = 0; i < ARRAY_SIZE(parts); i++)
    text_append(t, len, cap, parts[i], strlen(parts[i]));
}

char *serve_metrics_text(struct serve_metrics *m) {
  pthread_mutex_lock(&m->lock);
  struct serve_metrics s = *m; /* a consistent view, printed unlocked */
  pthread_mutex_unlock(&m->lock);
  char *t = NULL;
  size_t len = 0, cap = 0;
  family(&t, &len, &cap, "hutch_serve_http_responses_total", "counter", "Answers sent, by HTTP status class.");
  for (int c = 1; c <= 5; c++)
    text_appendf(&t, &len, &cap, "hutch_serve_http_responses_total{code=\"%dxx\"} %llu\n", c,
                 (unsigned long long)s.http[c]);
  static const char *const names[SERVE_N_OUTCOMES] = {"Success", "Failed", "SandboxError", "rejected"};
  family(&t, &len, &cap, "hutch_serve_requests_total", "counter",
         "POST /run_code requests, by the status answered (rejected: refused or never run).");
  for (int o = 0; o < SERVE_N_OUTCOMES; o++)
    text_appendf(&t, &len, &cap, "hutch_serve_requests_total{status=\"%s\"} %llu\n", names[o],
                 (unsigned long long)s.outcomes[o]);
  family(&t, &len, &cap, "hutch_serve_request_duration_seconds", "histogram",
         "Time from a /run_code request's connection to its answer, queue included.");
  uint64_t cum = 0;
  for (size_t b = 0; b <= SERVE_N_BUCKETS; b++) {
    cum += s.buckets[b];
    if (b < SERVE_N_BUCKETS)
      text_appendf(&t, &len, &cap, "hutch_serve_request_duration_seconds_bucket{le=\"%g\"} %llu\n", bounds[b],
                   (unsigned long long)cum);
    else
      text_appendf(&t, &len, &cap, "hutch_serve_request_duration_seconds_bucket{le=\"+Inf\"} %llu\n",
                   (unsigned long long)cum);
  }
  text_appendf(&t, &len, &cap, "hutch_serve_request_duration_seconds_sum %.6f\n", s.latency_sum);
  text_appendf(&t, &len, &cap, "hutch_serve_request_duration_seconds_count %llu\n",
               (unsigned long long)s.latency_count);
  family(&t, &len, &cap, "hutch_serve_refused_total", "counter", "Requests refused before they ran, by reason.");
  const struct {
    const char *reason;
    uint64_t n;
  } refused[] = {{"queue_full", s.queue_full},
                 {"too_large", s.too_large},
                 {"unauthorized", s.unauthorized},
                 {"bad_request", s.bad_request},
                 {"fair_share", s.fair_share}};
  for (size_t i = 0; i < ARRAY_SIZE(refused); i++)
    text_appendf(&t, &len, &cap, "hutch_serve_refused_total{reason=\"%s\"} %llu\n", refused[i].reason,
                 (unsigned long long)refused[i].n);
  family(&t, &len, &cap, "hutch_serve_sandbox_failures_total", "counter",
         "Sandboxes that could not be made, written to or run in (answered SandboxError).");
  text_appendf(&t, &len, &cap, "hutch_serve_sandbox_failures_total %llu\n", (unsigned long long)s.sandbox_failures);
  family(&t, &len, &cap, "hutch_serve_time_limit_exceeded_total", "counter",
         "Compile or run steps killed at their time limit.");
  text_appendf(&t, &len, &cap, "hutch_serve_time_limit_exceeded_total %llu\n", (unsigned long long)s.timeouts);
  family(&t, &len, &cap, "hutch_serve_queue_depth", "gauge", "Requests waiting for a worker.");
  text_appendf(&t, &len, &cap, "hutch_serve_queue_depth %u\n", s.queued);
  family(&t, &len, &cap, "hutch_serve_queue_clients", "gauge", "Clients with requests waiting, served in turn.");
  text_appendf(&t, &len, &cap, "hutch_serve_queue_clients %u\n", s.clients);
  family(&t, &len, &cap, "hutch_serve_requests_running", "gauge", "Requests being run.");
  text_appendf(&t, &len, &cap, "hutch_serve_requests_running %u\n", s.running);
  family(&t, &len, &cap, "hutch_serve_sandboxes_live", "gauge", "Sandboxes alive now.");
  text_appendf(&t, &len, &cap, "hutch_serve_sandboxes_live %u\n", s.sandboxes);
  family(&t, &len, &cap, "hutch_serve_sandboxes_ready", "gauge",
         "Of those, sandboxes made ahead of the requests (--warm), nothing run in them yet.");
  text_appendf(&t, &len, &cap, "hutch_serve_sandboxes_ready %u\n", s.ready);
  return t;
}
