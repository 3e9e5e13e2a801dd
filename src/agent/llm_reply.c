/* SPDX-License-Identifier: Apache-2.0 */
/* The pure half of the LLM client: reading replies and error messages. */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "llm_client.h"
#include "observation.h"
#include "text_calls.h"
#include "util.h"

static void call_clear(struct llm_call *c) {
  free(c->id);
  free(c->name);
  free(c->arguments);
}

void llm_reply_clear(struct llm_reply *r) {
  free(r->content);
  free(r->reasoning);
  llm_reply_keep_calls(r, 0);
  free(r->calls);
  free(r->raw);
  memset(r, 0, sizeof(*r));
}

void llm_reply_keep_calls(struct llm_reply *r, size_t n) {
  for (size_t i = n; i < r->n_calls; i++)
    call_clear(&r->calls[i]);
  if (n < r->n_calls)
    r->n_calls = n;
}

bool llm_reply_text_calls(struct llm_reply *r) {
  struct text_call *tcalls = NULL;
  size_t n = r->n_calls == 0 && r->content ? text_calls_parse(r->content, &tcalls) : 0;
  if (n == 0)
    return false;
  free(r->calls);
  r->calls = xcalloc(n, sizeof(*r->calls));
  for (size_t i = 0; i < n; i++) {
    r->calls[i].id = xasprintf("text_call_%zu", i + 1);
    r->calls[i].name = steal_pointer(&tcalls[i].name);
    r->calls[i].arguments = steal_pointer(&tcalls[i].arguments);
  }
  r->n_calls = n;
  text_calls_free(tcalls, n);
  return true;
}

/* ---- reply parsing ---- */

static char *opt_string(const cJSON *obj, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
  if (cJSON_IsString(v) && v->valuestring[0])
    return xstrdup(v->valuestring);
  return NULL;
}

/* content may also be a list of {type: text, text: ...} parts, joined in
 * one pass (a reply may hold millions of tiny ones). */
static char *content_text(const cJSON *msg) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(msg, "content");
  if (cJSON_IsString(v))
    return xstrdup(v->valuestring);
  if (!cJSON_IsArray(v))
    return NULL;
  size_t len = 0;
  const cJSON *part;
  cJSON_ArrayForEach(part, v) {
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(part, "text");
    if (cJSON_IsString(t))
      len += strlen(t->valuestring);
  }
  char *acc = xmalloc(len + 1);
  size_t o = 0;
  cJSON_ArrayForEach(part, v) {
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(part, "text");
    if (cJSON_IsString(t)) {
      size_t n = strlen(t->valuestring);
      memcpy(acc + o, t->valuestring, n);
      o += n;
    }
  }
  acc[o] = '\0';
  return acc;
}

/* Far beyond any real count of tokens, and small enough that sums and
 * differences of a few such counts stay within a long. */
#define TOKENS_MAX 1000000000000000L /* 10^15 */

/* A token count as the server wrote it: any JSON number, which a server
 * (or what answers in its place) may make negative or too large for a
 * long.  Those read as 0, or as TOKENS_MAX. */
static long token_count(const cJSON *n) {
  if (!cJSON_IsNumber(n) || !(n->valuedouble >= 0))
    return 0;
  if (n->valuedouble >= (double)TOKENS_MAX)
    return TOKENS_MAX;
  return (long)n->valuedouble;
}

int llm_parse_reply(const char *text, size_t len, struct llm_reply *out, hutch_error_t *err) {
  memset(out, 0, sizeof(*out));
  if (!text_is_utf8(text, len))
    return hutch_error_set(err, EBADMSG, "the reply is not UTF-8 text");
  cJSON *root = cJSON_ParseWithLength(text, len);
  if (root == NULL) {
    /* HTML error pages from proxies are common: say what came back. */
    _cleanup_free_ char *head = text_utf8_sanitize(text, len > 120 ? 120 : len);
    for (char *p = head; *p; p++)
      if (*p == '\n' || *p == '\r')
        *p = ' ';
    return hutch_error_set(err, EBADMSG, "the reply is not JSON (it starts with \"%s\")", head);
  }
  int r = -1;
  const cJSON *choices = cJSON_GetObjectItemCaseSensitive(root, "choices");
  const cJSON *first = cJSON_IsArray(choices) ? cJSON_GetArrayItem(choices, 0) : NULL;
  const cJSON *msg = cJSON_GetObjectItemCaseSensitive(first, "message");
  if (!cJSON_IsObject(msg)) {
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(root, "error");
    const cJSON *em = cJSON_IsObject(e) ? cJSON_GetObjectItemCaseSensitive(e, "message") : e;
    if (cJSON_IsString(em))
      hutch_error_set(err, EBADMSG, "the server answered with an error: %s", em->valuestring);
    else
      hutch_error_set(err, EBADMSG, "the reply has no choices[0].message");
    goto out;
  }
  out->content = content_text(msg);
  out->reasoning = opt_string(msg, "reasoning_content");
  if (out->reasoning == NULL)
    out->reasoning = opt_string(msg, "reasoning");
  if (out->reasoning == NULL)
    out->reasoning = opt_string(msg, "thinking");
  const cJSON *calls = cJSON_GetObjectItemCaseSensitive(msg, "tool_calls");
  if (calls != NULL && !cJSON_IsNull(calls) && !cJSON_IsArray(calls)) {
    hutch_error_set(err, EBADMSG, "the reply's tool_calls is not a list");
    goto out;
  }
  int n = cJSON_GetArraySize(calls);
  if (n > 0)
    out->calls = xcalloc((size_t)n, sizeof(*out->calls));
  /* In one pass: cJSON_GetArrayItem walks the list from its start. */
  const cJSON *call = calls ? calls->child : NULL;
  for (int i = 0; i < n; i++, call = call->next) {
    const cJSON *fn = cJSON_GetObjectItemCaseSensitive(call, "function");
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(fn, "name");
    if (!cJSON_IsString(name)) {
      hutch_error_set(err, EBADMSG, "tool call %d of the reply has no function name", i + 1);
      goto out;
    }
    struct llm_call *c = &out->calls[out->n_calls++];
    c->name = xstrdup(name->valuestring);
    c->id = opt_string(call, "id");
    if (c->id == NULL)
      c->id = xasprintf("call_%d", i + 1);
    const cJSON *args = cJSON_GetObjectItemCaseSensitive(fn, "arguments");
    if (cJSON_IsString(args))
      c->arguments = xstrdup(args->valuestring);
    else if (cJSON_IsObject(args))
      c->arguments = cJSON_PrintUnformatted(args);
    else
      c->arguments = xstrdup("{}");
  }
  const cJSON *usage = cJSON_GetObjectItemCaseSensitive(root, "usage");
  if (cJSON_IsObject(usage)) {
    const cJSON *pt = cJSON_GetObjectItemCaseSensitive(usage, "prompt_tokens");
    const cJSON *ct = cJSON_GetObjectItemCaseSensitive(usage, "completion_tokens");
    const cJSON *tt = cJSON_GetObjectItemCaseSensitive(usage, "total_tokens");
    out->prompt_tokens = token_count(pt);
    out->completion_tokens = token_count(ct);
    out->total_tokens = cJSON_IsNumber(tt) ? token_count(tt) : out->prompt_tokens + out->completion_tokens;
    out->has_usage = true;
    const cJSON *cost = cJSON_GetObjectItemCaseSensitive(usage, "cost");
    if (cJSON_IsNumber(cost) && isfinite(cost->valuedouble) && cost->valuedouble >= 0) {
      out->cost = cost->valuedouble;
      out->has_cost = true;
    }
  }
  r = 0;
out:
  cJSON_Delete(root);
  if (r < 0)
    llm_reply_clear(out);
  return r;
}

/* ---- context-length errors ---- */

bool llm_is_context_error(const char *msg) {
  static const char *const marks[] = {"context length",  "context_length", "maximum context",     "context window",
                                      "too many tokens", "max_tokens",     "maximum input length"};
  for (size_t i = 0; i < ARRAY_SIZE(marks); i++)
    if (strcasestr(msg, marks[i]))
      return true;
  return false;
}

/* The number right before `word` ("... of 32768 tokens"), or -1. */
static long number_before(const char *msg, const char *word) {
  const char *p = strcasestr(msg, word);
  if (p == NULL)
    return -1;
  while (p > msg && p[-1] == ' ')
    p--;
  const char *e = p;
  while (p > msg && p[-1] >= '0' && p[-1] <= '9')
    p--;
  if (p == e)
    return -1;
  long n = strtol(p, NULL, 10);
  return n > TOKENS_MAX ? -1 : n; /* a message's number is the server's to make up */
}

long llm_shrink_max_tokens(const char *message, long current, long floor) {
  if (!llm_is_context_error(message) || current <= floor)
    return 0;
  /* vLLM: "maximum context length is 32768 tokens. However, you requested
   * 65536 output tokens and your prompt contains at least 1200 input tokens". */
  long limit = -1, input = -1;
  const char *p = strcasestr(message, "maximum context length");
  if (p) {
    while (*p && (*p < '0' || *p > '9'))
      p++;
    if (*p)
      limit = strtol(p, NULL, 10);
    if (limit > TOKENS_MAX)
      limit = -1;
  }
  input = number_before(message, " input tokens");
  if (input < 0)
    input = number_before(message, " tokens from the input");
  if (input < 0)
    input = number_before(message, " tokens in the messages");
  long next = -1;
  if (limit > 0 && input >= 0 && limit - input - 100 >= floor && limit - input - 100 < current)
    next = limit - input - 100;
  else
    next = current / 2;
  if (next < floor)
    next = floor;
  return next < current ? next : 0;
}
