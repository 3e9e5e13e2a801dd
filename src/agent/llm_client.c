/* SPDX-License-Identifier: Apache-2.0 */
#include "config.h"

#include "llm_client.h"

#include <curl/curl.h>
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "llm_gate.h"
#include "observation.h"
#include "util.h"
#include "json_num.h"

#define RETRY_AFTER_MAX 600.0
#define BACKOFF_MAX 60.0
#define ERROR_TEXT_MAX 2000

struct llm_client {
  struct llm_options o;
  CURL *curl;
  char *url;
  struct curl_slist *headers;
  struct llm_gate *gate; /* shared with other clients ($HUTCH_LLM_GATE), or NULL */
};

static bool curl_ready;

void llm_client_global_init(void) {
  if (!curl_ready) {
    curl_global_init(CURL_GLOBAL_DEFAULT);
    curl_ready = true;
  }
}

struct llm_client *llm_client_new(const struct llm_options *opts) {
  llm_client_global_init();
  struct llm_client *c = xcalloc(1, sizeof(*c));
  c->o = *opts;
  c->curl = curl_easy_init();
  if (c->curl == NULL)
    abort();
  size_t l = strlen(opts->base_url);
  while (l > 0 && opts->base_url[l - 1] == '/')
    l--;
  c->url = xasprintf("%.*s/chat/completions", (int)l, opts->base_url);
  c->headers = curl_slist_append(NULL, "Content-Type: application/json");
  c->headers = curl_slist_append(c->headers, "Accept: application/json");
  c->headers = curl_slist_append(c->headers, "Expect:");
  if (opts->api_key && *opts->api_key) {
    _cleanup_free_ char *auth = xasprintf("Authorization: Bearer %s", opts->api_key);
    c->headers = curl_slist_append(c->headers, auth);
    explicit_bzero(auth, strlen(auth));
  }
  c->gate = llm_gate_open(getenv("HUTCH_LLM_GATE"));
  return c;
}

void llm_client_free(struct llm_client *c) {
  if (c == NULL)
    return;
  llm_gate_close(c->gate);
  curl_slist_free_all(c->headers);
  curl_easy_cleanup(c->curl);
  free(c->url);
  free(c);
}

/* ---- transport ---- */

struct xfer {
  char *buf;
  size_t len, cap, max;
  bool too_big;
  double retry_after; /* seconds, -1 when absent */
  volatile sig_atomic_t *stop;
};

static size_t on_body(char *data, size_t size, size_t nmemb, void *p) {
  struct xfer *x = p;
  size_t n = size * nmemb;
  if (x->len + n > x->max) {
    x->too_big = true;
    return 0;
  }
  if (x->len + n + 1 > x->cap) {
    x->cap = (x->len + n + 1) * 2;
    if (x->cap > x->max + 1)
      x->cap = x->max + 1;
    x->buf = xrealloc(x->buf, x->cap);
  }
  memcpy(x->buf + x->len, data, n);
  x->len += n;
  x->buf[x->len] = '\0';
  return n;
}

static size_t on_header(char *data, size_t size, size_t nmemb, void *p) {
  struct xfer *x = p;
  size_t n = size * nmemb;
  if (n > 12 && strncasecmp(data, "Retry-After:", 12) == 0) {
    _cleanup_free_ char *v = xstrndup(data + 12, n - 12);
    char *end;
    double secs = strtod(v, &end);
    if (end != v && secs >= 0) {
      x->retry_after = secs;
    } else {
      /* An HTTP date. */
      struct tm tm = {0};
      const char *s = v;
      while (*s == ' ')
        s++;
      if (strptime(s, "%a, %d %b %Y %H:%M:%S GMT", &tm) != NULL) {
        double d = difftime(timegm(&tm), time(NULL));
        x->retry_after = d > 0 ? d : 0;
      }
    }
  }
  return n;
}

static int on_progress(void *p, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un) {
  struct xfer *x = p;
  return x->stop && *x->stop ? 1 : 0;
}

/* Sleeps, waking early when a stop is requested; false when stopped. */
static bool nap(double seconds, volatile sig_atomic_t *stop) {
  double end = monotonic_seconds() + seconds;
  for (;;) {
    if (stop && *stop)
      return false;
    double left = end - monotonic_seconds();
    if (left <= 0)
      return true;
    poll(NULL, 0, left > 0.1 ? 100 : (int)(left * 1000) + 1);
  }
}

static double jitter(double d) {
  static bool seeded;
  if (!seeded) {
    srand48((long)(monotonic_seconds() * 1e6) ^ getpid());
    seeded = true;
  }
  return d * (0.5 + drand48());
}

static void logf_(struct llm_client *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void logf_(struct llm_client *c, const char *fmt, ...) {
  if (c->o.log == NULL)
    return;
  va_list ap;
  va_start(ap, fmt);
  _cleanup_free_ char *msg = xvasprintf(fmt, ap);
  va_end(ap);
  c->o.log(c->o.log_data, msg);
}

char *llm_error_message(const char *body, size_t len) {
  if (len == 0)
    return xstrdup("(empty body)");
  cJSON *j = cJSON_ParseWithLength(body, len);
  const cJSON *e = cJSON_GetObjectItemCaseSensitive(j, "error");
  const cJSON *m = cJSON_IsObject(e) ? cJSON_GetObjectItemCaseSensitive(e, "message") : e;
  if (!cJSON_IsString(m))
    m = cJSON_GetObjectItemCaseSensitive(j, "message");
  if (!cJSON_IsString(m))
    m = cJSON_GetObjectItemCaseSensitive(j, "detail");
  char *r;
  if (cJSON_IsString(m))
    r = text_utf8_sanitize(m->valuestring, strlen(m->valuestring));
  else
    r = text_utf8_sanitize(body, len > 300 ? 300 : len);
  cJSON_Delete(j);
  for (char *p = r; *p; p++)
    if (*p == '\n' || *p == '\r')
      *p = ' ';
  /* It goes into every retry's log line and the error: a server's message
   * may be as long as a reply. */
  size_t n = strlen(r);
  if (n > ERROR_TEXT_MAX) {
    n = ERROR_TEXT_MAX;
    while (n > 0 && ((unsigned char)r[n] & 0xc0) == 0x80)
      n--;
    char *cut = xasprintf("%.*s...", (int)n, r);
    free(r);
    r = cut;
  }
  return r;
}

static char *error_text(const struct xfer *x) {
  return llm_error_message(x->buf, x->len);
}

/* Seconds until the deadline, at most `cap`; cap when there is none. */
static double until_deadline(const struct llm_client *c, double cap) {
  if (c->o.deadline <= 0)
    return cap;
  double left = c->o.deadline - monotonic_seconds();
  return left < cap ? left : cap;
}

enum llm_status llm_chat(struct llm_client *c, cJSON *body, struct llm_reply *out, hutch_error_t *err) {
  memset(out, 0, sizeof(*out));
  double start = monotonic_seconds();
  double delay = c->o.retry_delay;
  int tries = 0;
  _cleanup_free_ char *last = NULL;
  for (;;) {
    if (c->o.stop && *c->o.stop)
      return LLM_INTERRUPTED;
    double timeout = until_deadline(c, c->o.timeout);
    if (timeout <= 0)
      return LLM_TIMED_OUT;
    _cleanup_free_ char *payload = cJSON_PrintUnformatted(body);
    struct xfer x = {.max = c->o.max_reply, .retry_after = -1, .stop = c->o.stop};
    CURL *h = c->curl;
    curl_easy_reset(h);
    curl_easy_setopt(h, CURLOPT_URL, c->url);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, c->headers);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, payload);
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(payload));
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &x);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, &x);
    curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(h, CURLOPT_XFERINFODATA, &x);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)(timeout * 1000) + 1);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)(timeout < 30 ? timeout * 1000 + 1 : 30000));
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "");
    curl_easy_setopt(h, CURLOPT_USERAGENT, "hutch/" PACKAGE_VERSION);
    tries++;
    if (!llm_gate_enter(c->gate, c->o.stop))
      return LLM_INTERRUPTED;
    CURLcode rc = curl_easy_perform(h);
    llm_gate_leave(c->gate);
    long status = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    _cleanup_free_ char *buf = x.buf;
    bool retry = false;
    free(last);
    last = NULL;
    if (rc == CURLE_ABORTED_BY_CALLBACK && c->o.stop && *c->o.stop)
      return LLM_INTERRUPTED;
    if (rc == CURLE_OPERATION_TIMEDOUT && until_deadline(c, 1) <= 0)
      return LLM_TIMED_OUT;
    if (x.too_big) {
      hutch_error_set(err, EFBIG, "the reply is larger than %zu bytes", c->o.max_reply);
      hutch_error_hint(err, "raise --max-reply-size if the server is right to send that much");
      return LLM_FAILED;
    }
    if (rc != CURLE_OK) {
      last = xasprintf("%s (%s)", curl_easy_strerror(rc), rc == CURLE_OPERATION_TIMEDOUT ? "timeout" : "network");
      retry = true;
    } else if (status == 429 || status >= 500) {
      _cleanup_free_ char *why = error_text(&x);
      last = xasprintf("HTTP %ld: %s", status, why);
      retry = true;
    } else if (status != 200) {
      _cleanup_free_ char *why = error_text(&x);
      const cJSON *mt = cJSON_GetObjectItemCaseSensitive(body, "max_tokens");
      long cur = cJSON_IsNumber(mt) ? json_number_to_long(mt->valuedouble) : 0;
      long next = cur > 0 ? llm_shrink_max_tokens(why, cur, c->o.min_max_tokens) : 0;
      if (next > 0) {
        logf_(c, "context length exceeded: max_tokens %ld -> %ld (%s)", cur, next, why);
        cJSON_ReplaceItemInObject(body, "max_tokens", cJSON_CreateNumber((double)next));
        tries--; /* not a failure of the server */
        continue;
      }
      hutch_error_set(err, EPROTO, "%s answered HTTP %ld: %s", c->url, status, why);
      if (status == 401 || status == 403)
        hutch_error_hint(err, "check the API key (--api-key, $LLM_API_KEY or $OPENAI_API_KEY; without one, hutch sends "
                              "\"Bearer dummy\")");
      else if (status == 404)
        hutch_error_hint(err, "check --base-url (it should end in /v1 for most servers) and --model");
      else if (llm_is_context_error(why))
        hutch_error_hint(err, "the conversation no longer fits the model's context; lower --max-token-limit");
      return LLM_FAILED;
    } else {
      if (llm_parse_reply(x.buf ? x.buf : "", x.len, out, err) < 0) {
        hutch_error_wrap(err, "%s", c->url);
        return LLM_FAILED;
      }
      out->seconds = monotonic_seconds() - start;
      out->tries = tries;
      out->raw = steal_pointer(&buf);
      return LLM_OK;
    }
    if (retry && tries >= c->o.max_tries) {
      hutch_error_set(err, EIO, "%s failed %d times; last: %s", c->url, tries, last);
      hutch_error_hint(err, "check that the server at --base-url is up; --max-tries and --llm-timeout set the "
                            "patience");
      return LLM_FAILED;
    }
    double wait = jitter(delay);
    if (x.retry_after >= 0)
      wait = x.retry_after > wait ? x.retry_after : wait;
    if (wait > RETRY_AFTER_MAX)
      wait = RETRY_AFTER_MAX;
    /* Told to slow down: every client sharing the gate waits, as long as
     * the longest wait any of them was given. */
    if (status == 429 && c->gate)
      wait = llm_gate_throttled(c->gate, wait);
    logf_(c, "request failed (%s); try %d of %d in %.2f s", last, tries + 1, c->o.max_tries, wait);
    if (!nap(until_deadline(c, wait), c->o.stop))
      return LLM_INTERRUPTED;
    delay = delay * 2 < BACKOFF_MAX ? delay * 2 : BACKOFF_MAX;
  }
}
