/* SPDX-License-Identifier: Apache-2.0
 *
 * The pre-flight: one request to the model's API before any task, so that
 * a server that is down, still loading, refusing the key or serving
 * another model stops the run before it writes anything, rather than
 * turning every task into a 0.  The request is GET {base}/models, which an
 * OpenAI-compatible server answers as soon as it can serve (vLLM lists its
 * served model names there) and which spends no token.  Only where that
 * cannot tell (no such route, or a list without the model) is one
 * completion of one token asked for.  It is retried as a task's request
 * would be (--max-tries, --retry-delay), or for as long as
 * --wait-for-endpoint allows. */
#include "config.h"

#include <curl/curl.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "error.h"
#include "lis_compat.h"
#include "llm_client.h"
#include "util.h"

/* The list of a server with many models (OpenRouter's is hundreds of
 * kilobytes); a longer one is not read as a list. */
#define MODELS_MAX (8u << 20)
/* /models answers at once on a server that serves (it waits behind no
 * generation): a request unanswered this long is given up, and tried again,
 * sooner than a completion would be.  (vLLM loading its model has bound its
 * port but does not listen yet: a connection is refused, and tried again.) */
#define GET_TIMEOUT 30.0
#define BACKOFF_MAX 10.0
#define TELL_EVERY 60.0
/* Models named in a refusal, at most. */
#define NAMED_MAX 10

struct body {
  char *buf;
  size_t len;
  bool too_big;
};

static size_t on_body(char *data, size_t size, size_t nmemb, void *p) {
  struct body *b = p;
  size_t n = size * nmemb;
  if (b->len + n > MODELS_MAX) {
    b->too_big = true;
    return 0;
  }
  b->buf = xrealloc(b->buf, b->len + n + 1);
  memcpy(b->buf + b->len, data, n);
  b->len += n;
  b->buf[b->len] = '\0';
  return n;
}

static int on_progress(void *p, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un) {
  (void)p, (void)dt, (void)dn, (void)ut, (void)un;
  return bench_stop ? 1 : 0;
}

/* GET url: *status (0: no HTTP answer, then *why says what came of it)
 * and the body, at most MODELS_MAX bytes. */
static void get(const char *url, const char *key, double timeout, long *status, struct body *b, char **why) {
  CURL *h = curl_easy_init();
  struct curl_slist *hdr = curl_slist_append(NULL, "Accept: application/json");
  _cleanup_free_ char *auth = key && *key ? xasprintf("Authorization: Bearer %s", key) : NULL;
  if (auth)
    hdr = curl_slist_append(hdr, auth);
  curl_easy_setopt(h, CURLOPT_URL, url);
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, b);
  curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)(timeout * 1000) + 1);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "");
  curl_easy_setopt(h, CURLOPT_USERAGENT, "hutch/" PACKAGE_VERSION);
  CURLcode rc = curl_easy_perform(h);
  *status = 0;
  if (rc == CURLE_OK || (rc == CURLE_WRITE_ERROR && b->too_big))
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, status);
  else
    *why = xstrdup(curl_easy_strerror(rc));
  curl_easy_cleanup(h);
  curl_slist_free_all(hdr);
  if (auth)
    explicit_bzero(auth, strlen(auth));
}

/* The ids of a /models list, ", "-separated (the first few); NULL when the
 * body is no list, or an empty one.  *listed: model is one of them. */
static char *model_ids(const struct body *b, const char *model, bool *listed) {
  *listed = false;
  cJSON *j = b->too_big ? NULL : cJSON_ParseWithLength(b->buf ? b->buf : "", b->len);
  const cJSON *data = cJSON_GetObjectItemCaseSensitive(j, "data");
  char *ids = NULL;
  size_t len = 0;
  FILE *f = cJSON_GetArraySize(data) > 0 ? open_memstream(&ids, &len) : NULL;
  int n = 0;
  const cJSON *m, *list = f ? data : NULL;
  cJSON_ArrayForEach(m, list) {
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(m, "id");
    if (!cJSON_IsString(id))
      continue;
    *listed = *listed || strcmp(id->valuestring, model) == 0;
    if (n < NAMED_MAX) {
      _cleanup_free_ char *shown = text_escape_cstr(id->valuestring);
      fprintf(f, "%s%.200s", n ? ", " : "", shown);
    } else if (n == NAMED_MAX) {
      fprintf(f, ", ...");
    }
    n++;
  }
  if (f)
    fclose(f);
  cJSON_Delete(j);
  if (n == 0) {
    free(ids);
    return NULL;
  }
  return ids;
}

/* One completion of one token: the request a task's first one is, but
 * for max_tokens. */
static int complete_one(const struct settings *s, hutch_error_t *err) {
  cJSON *body = bench_one_message(s->model, "Say OK.", 1);
  struct llm_options lo = {.base_url = s->base_url,
                           .api_key = s->api_key,
                           .timeout = s->llm_timeout,
                           .max_tries = (int)s->max_tries,
                           .retry_delay = s->retry_delay,
                           .max_reply = (size_t)s->max_reply_size,
                           .min_max_tokens = 1,
                           .stop = &bench_stop};
  struct llm_client *c = llm_client_new(&lo);
  struct llm_reply rep;
  memset(&rep, 0, sizeof(rep));
  enum llm_status st = llm_chat(c, body, &rep, err);
  llm_reply_clear(&rep);
  llm_client_free(c);
  cJSON_Delete(body);
  if (st == LLM_INTERRUPTED)
    return hutch_error_set(err, EINTR, "interrupted");
  return st == LLM_OK ? 0 : -1;
}

/* Sleeps, waking early when the run is stopped; false when stopped. */
static bool nap(double seconds) {
  double end = monotonic_seconds() + seconds;
  while (!bench_stop) {
    double left = end - monotonic_seconds();
    if (left <= 0)
      return true;
    poll(NULL, 0, left > 0.1 ? 100 : (int)(left * 1000) + 1);
  }
  return false;
}

int bench_preflight(const struct bench_opts *o, hutch_error_t *err) {
  const struct settings *s = &o->s;
  size_t l = strlen(s->base_url);
  while (l > 0 && s->base_url[l - 1] == '/')
    l--;
  _cleanup_free_ char *url = xasprintf("%.*s/models", (int)l, s->base_url);
  _cleanup_free_ char *shown = llm_redact_url(url);
  const char *model = lis_request_model(s->model);
  double start = monotonic_seconds(), told = 0, delay = s->retry_delay;
  bool said = false;
  double deadline = o->wait_endpoint > 0 ? start + o->wait_endpoint : 0;
  for (long tries = 1;; tries++) {
    double timeout = s->llm_timeout < GET_TIMEOUT ? s->llm_timeout : GET_TIMEOUT;
    if (deadline > 0 && deadline - monotonic_seconds() < timeout)
      timeout = deadline - monotonic_seconds() > 1 ? deadline - monotonic_seconds() : 1;
    struct body b = {0};
    long status = 0;
    _cleanup_free_ char *why = NULL;
    get(url, s->api_key, timeout, &status, &b, &why);
    _cleanup_free_ char *buf = b.buf;
    if (bench_stop)
      return hutch_error_set(err, EINTR, "interrupted");
    if (status == 200) {
      bool listed;
      _cleanup_free_ char *ids = model_ids(&b, model, &listed);
      if (ids == NULL || listed)
        goto up;
      /* Not listed: a router may serve names it does not list. */
      if (complete_one(s, err) == 0)
        goto up;
      _cleanup_free_ char *m = text_escape_cstr(model);
      return hutch_error_wrap(err, "the model's API at %s does not serve the model '%.200s' (it lists %s)", shown, m,
                              ids);
    }
    if (status == 401 || status == 403) {
      _cleanup_free_ char *msg = llm_error_message(buf, b.len);
      hutch_error_set(err, EACCES, "the model's API at %s refused the key: HTTP %ld: %s", shown, status, msg);
      return hutch_error_hint(err, "check the API key (--api-key, $LLM_API_KEY or $OPENAI_API_KEY; without one, "
                                   "hutch sends \"Bearer dummy\")");
    }
    if (status != 0 && status != 429 && status < 500) {
      /* No /models here (404, 405): the completion tells. */
      if (complete_one(s, err) == 0)
        goto up;
      return hutch_error_wrap(err, "the model's API at %s", shown);
    }
    if (why == NULL) {
      _cleanup_free_ char *msg = llm_error_message(buf, b.len);
      why = xasprintf("HTTP %ld: %s", status, msg);
    }
    double now = monotonic_seconds();
    bool waiting = deadline > 0 && now < deadline;
    if (deadline > 0 ? !waiting : tries >= s->max_tries) {
      if (deadline > 0)
        hutch_error_set(err, ETIMEDOUT, "the model's API at %s did not answer within %g s: %s", shown, o->wait_endpoint,
                        why);
      else
        hutch_error_set(err, EHOSTUNREACH, "the model's API at %s does not answer (%ld tries): %s", shown, tries, why);
      return hutch_error_hint(err, "start the model's server, or check --base-url; --wait-for-endpoint 10m waits "
                                   "for a server still loading");
    }
    if (waiting && (!said || now - told >= TELL_EVERY)) {
      if (!said)
        fprintf(stderr, "hutch benchmark: waiting up to %g s for the model's API at %s (%s)\n", o->wait_endpoint, shown,
                why);
      else
        fprintf(stderr, "hutch benchmark: still waiting for the model's API (%.0f s left): %s\n", deadline - now, why);
      told = now;
      said = true;
    }
    double wait = waiting && deadline - now < delay ? deadline - now : delay;
    if (!nap(wait))
      return hutch_error_set(err, EINTR, "interrupted");
    delay = delay * 2 < BACKOFF_MAX ? delay * 2 : BACKOFF_MAX;
  }
up:
  if (said)
    fprintf(stderr, "hutch benchmark: the model's API answers, after %.0f s\n", monotonic_seconds() - start);
  return 0;
}
