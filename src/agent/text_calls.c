/* SPDX-License-Identifier: Apache-2.0 */
#include "config.h"

#include "text_calls.h"

#include <cjson/cJSON.h>
#include <string.h>

#include "util.h"

/* A reply's text is the model's, up to --max-reply-size: every search
 * reads only up to its match (find) and, inside a call, only the call; the
 * list grows by doubling; a call takes at most this many parameters (a
 * tool has a handful).  So the work stays linear in the text. */
#define PARAMS_MAX 64

/* The first needle in [p, stop), or NULL.  Not strstr or memmem: their
 * checks in a sanitizer build read the whole haystack at each call. */
static const char *find(const char *p, const char *stop, const char *needle) {
  size_t nl = strlen(needle);
  while (p < stop && (p = memchr(p, needle[0], (size_t)(stop - p))) != NULL && (size_t)(stop - p) >= nl) {
    if (memcmp(p, needle, nl) == 0)
      return p;
    p++;
  }
  return NULL;
}

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

static size_t parse_qwen(const char *p, const char *stop, struct text_call **calls) {
  size_t n = 0;
  while ((p = find(p, stop, "<function=")) != NULL) {
    p += strlen("<function=");
    const char *gt = find(p, stop, ">");
    const char *end = gt ? find(gt, stop, "</function>") : NULL;
    if (end == NULL)
      break;
    _cleanup_free_ char *name = xstrndup(p, (size_t)(gt - p));
    cJSON *args = cJSON_CreateObject();
    const char *q = gt + 1;
    for (int k = 0; k < PARAMS_MAX && (q = find(q, end, "<parameter=")) != NULL; k++) {
      q += strlen("<parameter=");
      const char *kgt = find(q, end, ">");
      const char *vend = kgt ? find(kgt, end, "</parameter>") : NULL;
      if (vend == NULL)
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

static size_t parse_hermes(const char *p, const char *stop, struct text_call **calls) {
  size_t n = 0;
  while ((p = find(p, stop, "<tool_call>")) != NULL) {
    p += strlen("<tool_call>");
    const char *end = find(p, stop, "</tool_call>");
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
  const char *stop = content + strlen(content);
  size_t n = parse_qwen(content, stop, out);
  if (n == 0)
    n = parse_hermes(content, stop, out);
  return n;
}

void text_calls_free(struct text_call *calls, size_t n) {
  for (size_t i = 0; i < n; i++) {
    free(calls[i].name);
    free(calls[i].arguments);
  }
  free(calls);
}
