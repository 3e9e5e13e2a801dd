#include "config.h"

#include "text_calls.h"

#include <cjson/cJSON.h>
#include <string.h>

#include "util.h"

/* A reply's text is the model's, up to --max-reply-size: every search is
 * bounded to the call it is in, the list grows by doubling, and a call
 * takes at most this many parameters (a tool has a handful), so that the
 * work stays linear in the text. */
#define PARAMS_MAX 64

static void add_call(struct text_call **calls, size_t *n, char *name, char *args) {
  if ((*n & (*n - 1)) == 0) /* 0, 1, 2, 4...: the list is full */
    *calls = xrealloc(*calls, (*n ? *n * 2 : 1) * sizeof(**calls));
  (*calls)[*n] = (struct text_call){name, args};
  (*n)++;
}

/* A parameter value sits between newlines the template added. */
static char *trim_value(const char *s, size_t len) {
  if (len > 0 && s[0] == '\n') {
    s++;
    len--;
  }
  if (len > 0 && s[len - 1] == '\n')
    len--;
  return xstrndup(s, len);
}

static size_t parse_qwen(const char *content, struct text_call **calls) {
  size_t n = 0;
  const char *p = content;
  while ((p = strstr(p, "<function=")) != NULL) {
    p += strlen("<function=");
    const char *gt = strchr(p, '>');
    if (gt == NULL)
      break;
    const char *end = strstr(gt, "</function>");
    if (end == NULL)
      break;
    _cleanup_free_ char *name = xstrndup(p, (size_t)(gt - p));
    cJSON *args = cJSON_CreateObject();
    const char *q = gt + 1;
    for (int k = 0; k < PARAMS_MAX && (q = memmem(q, (size_t)(end - q), "<parameter=", 11)) != NULL; k++) {
      q += strlen("<parameter=");
      const char *kgt = memchr(q, '>', (size_t)(end - q));
      const char *vend = kgt ? memmem(kgt, (size_t)(end - kgt), "</parameter>", 12) : NULL;
      if (kgt == NULL || vend == NULL)
        break;
      _cleanup_free_ char *key = xstrndup(q, (size_t)(kgt - q));
      _cleanup_free_ char *value = trim_value(kgt + 1, (size_t)(vend - kgt - 1));
      cJSON_DeleteItemFromObject(args, key);
      cJSON_AddStringToObject(args, key, value);
      q = vend + strlen("</parameter>");
    }
    char *text = cJSON_PrintUnformatted(args);
    cJSON_Delete(args);
    add_call(calls, &n, steal_pointer(&name), text);
    p = end + strlen("</function>");
  }
  return n;
}

static size_t parse_hermes(const char *content, struct text_call **calls) {
  size_t n = 0;
  const char *p = content;
  while ((p = strstr(p, "<tool_call>")) != NULL) {
    p += strlen("<tool_call>");
    const char *end = strstr(p, "</tool_call>");
    if (end == NULL)
      break;
    _cleanup_free_ char *body = xstrndup(p, (size_t)(end - p));
    p = end + strlen("</tool_call>");
    cJSON *j = cJSON_Parse(body);
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(j, "name");
    if (!cJSON_IsString(name)) {
      cJSON_Delete(j);
      continue;
    }
    const cJSON *args = cJSON_GetObjectItemCaseSensitive(j, "arguments");
    if (args == NULL)
      args = cJSON_GetObjectItemCaseSensitive(j, "parameters");
    char *text;
    if (cJSON_IsString(args))
      text = xstrdup(args->valuestring);
    else if (cJSON_IsObject(args))
      text = cJSON_PrintUnformatted(args);
    else
      text = xstrdup("{}");
    add_call(calls, &n, xstrdup(name->valuestring), text);
    cJSON_Delete(j);
  }
  return n;
}

size_t text_calls_parse(const char *content, struct text_call **out) {
  *out = NULL;
  if (content == NULL)
    return 0;
  size_t n = parse_qwen(content, out);
  if (n == 0)
    n = parse_hermes(content, out);
  return n;
}

void text_calls_free(struct text_call *calls, size_t n) {
  for (size_t i = 0; i < n; i++) {
    free(calls[i].name);
    free(calls[i].arguments);
  }
  free(calls);
}
