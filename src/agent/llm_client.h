/* SPDX-License-Identifier: Apache-2.0 */
/* POST {base}/chat/completions over libcurl: retries with backoff, a
 * per-call timeout, a reply size cap, and the reply read into plain C. */
#ifndef HUTCH_AGENT_LLM_CLIENT_H
#define HUTCH_AGENT_LLM_CLIENT_H

#include <cjson/cJSON.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>

#include "hutch.h"

struct llm_options {
  const char *base_url;
  const char *api_key; /* NULL: no Authorization header */
  double timeout;      /* seconds per request */
  int max_tries;
  double retry_delay; /* first backoff, doubled each time */
  size_t max_reply;
  long min_max_tokens; /* floor when a context-length error lowers max_tokens */
  volatile sig_atomic_t *stop;
  double deadline;                          /* monotonic seconds: no request, try or wait goes past it; 0: none */
  void (*log)(void *data, const char *msg); /* one formatted line */
  void *log_data;
};

struct llm_call {
  char *id;
  char *name;
  char *arguments; /* JSON text as the model wrote it */
};

struct llm_reply {
  char *content;   /* NULL when the message had none */
  char *reasoning; /* reasoning_content / reasoning / thinking, or NULL */
  struct llm_call *calls;
  size_t n_calls;
  long prompt_tokens, completion_tokens, total_tokens;
  bool has_usage;
  /* usage.cost, where the endpoint reports what the call cost (OpenRouter,
   * LiteLLM's proxy): a finite number, at least 0, in its own unit. */
  double cost;
  bool has_cost;
  double seconds; /* wall time including retries */
  int tries;
  char *raw; /* the reply's body as received (JSON), for --save-litellm-response */
};

/* LLM_TIMED_OUT: the deadline came first. */
enum llm_status { LLM_OK = 0, LLM_FAILED = -1, LLM_INTERRUPTED = -2, LLM_TIMED_OUT = -3 };

struct llm_client;
struct llm_client *llm_client_new(const struct llm_options *opts);
/* libcurl's global set-up (its TLS library's), once per process; done by
 * the first llm_client_new, or ahead by a process that forks clients'
 * processes (hutch benchmark): each fork then starts with it done. */
void llm_client_global_init(void);
void llm_client_free(struct llm_client *c);
/* body: the request; its "max_tokens" may be lowered after a context-length
 * error (and stays lowered for later calls). */
enum llm_status llm_chat(struct llm_client *c, cJSON *body, struct llm_reply *out, hutch_error_t *err);
void llm_reply_clear(struct llm_reply *r);
/* The calls written in the reply's text (text_calls.h), when it has none
 * of the API's: true when there were any. */
bool llm_reply_text_calls(struct llm_reply *r);
/* Only the first n calls stay in the reply. */
void llm_reply_keep_calls(struct llm_reply *r, size_t n);

/* Pure helpers, unit-tested. */
/* Parses a 200 reply; -1 with a message on anything malformed. */
int llm_parse_reply(const char *text, size_t len, struct llm_reply *out, hutch_error_t *err);
/* A context-length error message: a smaller max_tokens to try, or 0 when none fits. */
long llm_shrink_max_tokens(const char *message, long current, long floor);
/* The base URL with any user:password@ removed, for logs and trajectories. */
char *llm_redact_url(const char *url);
bool llm_is_context_error(const char *message);
/* An error reply's message ("error.message", "error", "message" or
 * "detail"), else its first bytes: valid UTF-8 on one line, at most about
 * 2000 bytes. */
char *llm_error_message(const char *body, size_t len);

#endif
