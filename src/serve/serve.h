/* SPDX-License-Identifier: Apache-2.0 */
/* hutch serve: an HTTP service with SandboxFusion's API (POST /run_code),
 * so that verl's code-RL reward and its sandbox_fusion tool run against
 * hutch unchanged (hutch-serve(1)).
 *
 * serve_http.c    the listening socket, connections read side by side on
 *                 the main thread, bounded, and each request routed
 * serve_wire.c    HTTP/1.1 framing: the request head parsed, answers written
 * serve_queue.c   the bounded queue and the worker threads that run jobs
 * serve_fair.c    the waiting requests shared fairly between clients
 * serve_request.c POST /run_code's body: SandboxFusion's fields, checked
 * serve_lang.c    the languages: how each compiles and runs, which the
 *                 image has
 * serve_run.c     one request in a fresh sandbox: files in, compile, run,
 *                 files out, SandboxFusion's answer
 * serve_probe.c   what the image offers, looked at once when the server starts
 * serve_warm.c    sandboxes made ahead of the requests (--warm)
 * serve_metrics.c the counters and histogram of /metrics
 * src/cli/cmd_serve.c parses the options.
 *
 * Every request runs in a sandbox of its own, made for it and destroyed
 * after, with no network.  The sandboxes die with the worker thread that
 * made them (die_with_creator) and MCP's reaper (src/mcp/mcp_reaper.c)
 * removes what a killed server left; a step in a sandbox is MCP's bounded
 * command (mcp_exec), and the audit lines go through MCP's bounded file
 * (mcp_audit_write). */
#ifndef HUTCH_SERVE_H
#define HUTCH_SERVE_H

#include <cjson/cJSON.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "../mcp/mcp.h"
#include "hutch.h"

#define SERVE_STR_(x) #x
#define SERVE_STR(x) SERVE_STR_(x)

/* ---- serve_lang.c ---- */
#define SERVE_MAX_ARGV 12
struct serve_lang {
  const char *name;                    /* SandboxFusion's name of it */
  const char *tool;                    /* the program whose presence in the image makes it available */
  const char *source;                  /* the code's file name in the working directory */
  const char *compile[SERVE_MAX_ARGV]; /* NULL-terminated; compile[0] NULL: interpreted */
  const char *run[SERVE_MAX_ARGV];
};
/* SandboxFusion's languages (its Language type), in its order. */
extern const char *const serve_sf_languages[];
/* The language named so that hutch knows how to run, or NULL. */
const struct serve_lang *serve_lang_find(const char *name);
/* Every language hutch knows, NULL-terminated in order. */
const struct serve_lang *serve_lang_at(size_t i);
/* Whether name is one of SandboxFusion's languages at all. */
bool serve_sf_language(const char *name);

/* ---- serve_metrics.c ---- */
enum serve_outcome {
  SERVE_SUCCESS, /* status Success */
  SERVE_FAILED,  /* status Failed: the code failed (exit code, time limit) */
  SERVE_SANDBOX_ERROR /* status SandboxError: hutch could not run it, or the language is not here */,
  SERVE_REJECTED, /* never ran: refused (4xx), queue full, client gone */
  SERVE_N_OUTCOMES
};
#define SERVE_N_BUCKETS 14
struct serve_metrics {
  pthread_mutex_t lock;
  uint64_t http[6];                      /* answers by class: 1xx..5xx, [0] unused */
  uint64_t outcomes[SERVE_N_OUTCOMES];   /* /run_code requests by outcome */
  uint64_t buckets[SERVE_N_BUCKETS + 1]; /* run_code latency histogram (cumulative at print), +Inf last */
  double latency_sum;                    /* seconds */
  uint64_t latency_count;
  uint64_t queue_full, too_large, unauthorized, bad_request;
  uint64_t fair_share;                 /* waiting requests that gave their place to another client's */
  uint64_t sandbox_failures;           /* a sandbox could not be made or run */
  uint64_t timeouts;                   /* compile or run steps past their time limit */
  unsigned queued, running, sandboxes; /* gauges */
  unsigned clients;                    /* clients with requests waiting */
  unsigned ready;                      /* of the sandboxes, those made ahead (--warm) */
};
void serve_metrics_http(struct serve_metrics *m, int status);
void serve_metrics_done(struct serve_metrics *m, enum serve_outcome o, double seconds);
void serve_metrics_count(struct serve_metrics *m, uint64_t *counter);
void serve_metrics_gauge(struct serve_metrics *m, unsigned *gauge, int delta);
/* The Prometheus text exposition (version 0.0.4); malloc'd. */
char *serve_metrics_text(struct serve_metrics *m);

/* ---- the configuration (cmd_serve.c fills it) ---- */
struct serve_config {
  const char *listen;        /* ADDRESS:PORT */
  const char *const *tokens; /* NULL-terminated bearer tokens, or NULL: none asked */
  const char *store, *state_dir;
  struct hutch_policy *policy;
  const char *image_name;
  struct hutch_image image; /* looked up once */
  char **env;               /* the image's environment */
  unsigned max_concurrency; /* requests run at once */
  unsigned max_queue;       /* requests waiting for a worker, at most */
  size_t max_body;          /* bytes of a request body */
  size_t max_file;          /* bytes of one fetched file */
  double max_timeout;       /* seconds a compile or run step may ask for */
  uint64_t max_memory;      /* bytes a request may ask for; 0: any */
  int busy_status;          /* 503, or 504 (verl's client retries that one) */
  bool json;                /* say where it listens as a JSON line on stdout */
  bool no_cgroups;          /* memory limits as rlimits: this host has no usable cgroup */
  int reaper_fd;
  unsigned warm; /* sandboxes made ahead, at most (--warm) */
  struct serve_warm *warmer;
  bool languages[32]; /* by serve_lang_at index: the image has its tool */
  struct mcp_audit *audit;
  struct mcp_config exec; /* what mcp_exec reads of it: max_output, the bytes kept of each stream */
  struct serve_metrics *metrics;
};

/* ---- serve_request.c ---- */
struct serve_file {
  char *path;
  unsigned char *data;
  size_t len;
};
struct serve_run_request {
  char *code, *language, *stdin_text;
  size_t stdin_len;
  bool has_stdin;
  double compile_timeout, run_timeout;
  long long memory_mb; /* <= 0: the server's default */
  struct serve_file *files;
  size_t n_files;
  char **fetch; /* NULL-terminated */
  size_t n_fetch;
};
#define SERVE_MAX_FILES 1024
/* Parses and checks a body: 0, or the HTTP status (400, 422) with
 * *detail set to FastAPI's error body (malloc'd). */
int serve_request_parse(const struct serve_config *cfg, const char *body, size_t len, struct serve_run_request *rq,
                        char **detail);
void serve_request_clear(struct serve_run_request *rq);

/* ---- serve_run.c ---- */
/* Asked while a step runs: true when the client hung up (the step is killed). */
struct serve_client {
  int fd;
};
/* Runs rq in a fresh sandbox; returns SandboxFusion's answer (never NULL),
 * *outcome and the sandbox's id (empty when none was made). */
cJSON *serve_run(const struct serve_config *cfg, const struct serve_run_request *rq, struct serve_client *client,
                 enum serve_outcome *outcome, char sandbox_id[40]);
/* The answer for a request that could not run: status SandboxError. */
cJSON *serve_sandbox_error(const char *message);
/* A sandbox of the server's image, with its environment and that memory
 * limit (0: the policy's), told to the reaper; and its end. */
int serve_sandbox_make(const struct serve_config *cfg, uint64_t memory, struct hutch_sandbox **sb, hutch_error_t *err);
void serve_sandbox_drop(const struct serve_config *cfg, struct hutch_sandbox *sb);
/* ---- serve_warm.c ---- */
struct serve_warm;
/* Starts the thread that keeps n sandboxes ready (none for n 0). */
int serve_warm_start(struct serve_config *cfg, unsigned n, struct serve_warm **out, hutch_error_t *err);
/* A ready sandbox of that memory limit, or NULL (w NULL too): the caller
 * makes one.  The limit is noted for the next ones made. */
struct hutch_sandbox *serve_warm_take(struct serve_warm *w, uint64_t memory);
/* Ends the thread and drops the ready sandboxes: after the workers. */
void serve_warm_stop(struct serve_warm *w);
/* ---- serve_probe.c ---- */
/* Looks at the image once: which languages' tools it has, and whether a
 * memory limit needs rlimits here (sets cfg->languages, cfg->no_cgroups). */
int serve_probe(struct serve_config *cfg, hutch_error_t *err);

/* ---- serve_wire.c ---- */
#define SERVE_MAX_HEAD 16384
#define SERVE_MAX_HEADERS 64
struct serve_head {
  char method[16];
  char target[1024];
  struct {
    const char *name, *value;
  } h[SERVE_MAX_HEADERS];
  size_t n;
  char *storage; /* the head's bytes, NUL-separated */
};
/* Parses the head (the bytes before the blank line, CRLF or LF lines);
 * false with *why on anything that is not HTTP/1.x. */
bool serve_head_parse(const char *buf, size_t len, struct serve_head *out, const char **why);
const char *serve_header(const struct serve_head *h, const char *name);
void serve_head_clear(struct serve_head *h);
/* A whole answer (Connection: close) by the deadline: false when the client
 * did not take it. */
bool serve_respond(int fd, int status, const char *content_type, const char *extra, const char *body, size_t len,
                   double seconds);
bool serve_respond_json(int fd, int status, const char *extra, const cJSON *j);
/* FastAPI's {"detail": msg}. */
bool serve_respond_detail(int fd, int status, const char *extra, const char *msg);
const char *serve_reason(int status);

/* ---- serve_queue.c ---- */
struct serve_job {
  int fd;
  char peer[64];
  unsigned client; /* 1 + the token's index; 0: none asked */
  double accepted; /* monotonic time the connection came */
  struct serve_run_request rq;
  struct serve_job *next;
};
/* ---- serve_fair.c ---- */
struct serve_fair_client;
struct serve_fair {
  struct serve_fair_client *turn;     /* the client served next; NULL: nothing waits */
  struct serve_fair_client *last_new; /* the last of those served first: they had nothing waiting */
  unsigned n_jobs, n_clients;
};
/* The client a job is counted under: its token's line, else its address. */
void serve_fair_key(const struct serve_job *j, char key[64]);
/* Queues j (true), or false when max wait and j's client already holds its
 * share.  *pushed_out: the request j took the place of, to be answered. */
bool serve_fair_push(struct serve_fair *f, struct serve_job *j, unsigned max, struct serve_job **pushed_out);
/* The next request, the clients in turn; NULL when none waits. */
struct serve_job *serve_fair_pop(struct serve_fair *f);

struct serve_queue;
int serve_queue_start(struct serve_config *cfg, struct serve_queue **out, hutch_error_t *err);
/* Takes the job (true), or false when the queue is full (the caller answers). */
bool serve_queue_push(struct serve_queue *q, struct serve_job *j);
/* Answers every waiting job 503, lets the running ones end, joins. */
void serve_queue_stop(struct serve_queue *q);
/* Audits and counts a request answered without running (from any thread). */
void serve_note(const struct serve_config *cfg, const char *peer, unsigned client, const char *method, const char *path,
                int http, const char *language, const char *outcome, const char *sandbox, double seconds);

/* ---- serve_http.c ---- */
extern volatile sig_atomic_t serve_stopping;
/* Serves until SIGINT/SIGTERM (serve_stopping). */
int serve_http(struct serve_config *cfg, hutch_error_t *err);

#endif
