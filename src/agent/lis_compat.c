/* SPDX-License-Identifier: Apache-2.0 */
#include "config.h"

#include "lis_compat.h"

#include <ctype.h>
#include <stdbool.h>
#include <string.h>
#include <strings.h>

#include "util.h"

#define REDACTED "[REDACTED]"
/* Shorter "keys" (dummy, x) are placeholders: redacting them would
 * scramble ordinary words of the conversation. */
#define SECRET_MIN 6

const char *lis_refused_prefix(const char *model) {
  static const char *const refused[] = {"anthropic/", "azure/"};
  for (size_t i = 0; i < ARRAY_SIZE(refused); i++)
    if (strncmp(model, refused[i], strlen(refused[i])) == 0)
      return refused[i];
  return NULL;
}

bool lis_sends_temperature(const char *model) {
  return strstr(model, "o3") == NULL && strstr(model, "o4") == NULL;
}

void lis_fix_string_bools(cJSON *j) {
  if (j == NULL)
    return;
  for (cJSON *e = j->child; e != NULL; e = e->next) {
    if (cJSON_IsString(e) && (strcasecmp(e->valuestring, "true") == 0 || strcasecmp(e->valuestring, "false") == 0)) {
      bool v = strcasecmp(e->valuestring, "true") == 0;
      cJSON *b = cJSON_CreateBool(v);
      if (cJSON_IsObject(j))
        cJSON_ReplaceItemInObjectCaseSensitive(j, e->string, b); /* copies the key to b */
      else
        cJSON_ReplaceItemViaPointer(j, e, b);
      e = b;
    } else if (cJSON_IsObject(e) || cJSON_IsArray(e)) {
      lis_fix_string_bools(e);
    }
  }
}

static long code_points(const char *s) {
  long n = 0;
  for (const unsigned char *p = (const unsigned char *)s; *p; p++)
    if ((*p & 0xC0) != 0x80)
      n++;
  return n;
}

long lis_count_tokens(const cJSON *messages) {
  long chars = 0;
  const cJSON *m;
  cJSON_ArrayForEach(m, messages) {
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(m, "content");
    if (cJSON_IsString(c))
      chars += code_points(c->valuestring);
    else if (cJSON_IsNull(c))
      chars += 4; /* str(None) */
    else if (c != NULL) {
      _cleanup_free_ char *t = cJSON_PrintUnformatted(c);
      chars += t ? code_points(t) : 0;
    }
  }
  return chars / 4;
}

char *lis_store_name(const char *ref) {
  char *n = xstrdup(ref);
  for (char *p = n; *p; p++)
    if (!isalnum((unsigned char)*p) && *p != '.' && *p != '_' && *p != '-' && *p != ':')
      *p = '_';
  return n;
}

char *lis_redact(const char *text, const char *secret) {
  if (secret == NULL || strlen(secret) < SECRET_MIN)
    return xstrdup(text);
  /* The secret as cJSON escapes it, without the quotes. */
  cJSON *s = cJSON_CreateString(secret);
  _cleanup_free_ char *quoted = cJSON_PrintUnformatted(s);
  cJSON_Delete(s);
  size_t ql = strlen(quoted);
  _cleanup_free_ char *needle = xstrndup(quoted + 1, ql - 2);
  size_t nl = strlen(needle), rl = strlen(REDACTED);
  size_t cap = strlen(text) + 1, len = 0;
  for (const char *p = text; (p = strstr(p, needle)) != NULL; p += nl)
    cap += rl;
  char *out = xmalloc(cap);
  for (const char *p = text;;) {
    const char *hit = strstr(p, needle);
    size_t n = hit ? (size_t)(hit - p) : strlen(p);
    memcpy(out + len, p, n);
    len += n;
    if (hit == NULL)
      break;
    memcpy(out + len, REDACTED, rl);
    len += rl;
    p = hit + nl;
  }
  out[len] = '\0';
  return out;
}

cJSON *lis_parse_extra_body(const char *text) {
  _cleanup_free_ char *json = lis_extra_body_json(text);
  return json ? cJSON_Parse(json) : NULL;
}

/* JSON, or the Python literal LLM-in-Sandbox users write (True, False, None). */
char *lis_extra_body_json(const char *text) {
  cJSON *j = cJSON_Parse(text);
  if (j) {
    cJSON_Delete(j);
    return xstrdup(text);
  }
  char *fixed = xmalloc(strlen(text) * 2 + 1);
  size_t o = 0;
  bool in_str = false;
  char quote = 0;
  for (const char *p = text; *p; p++) {
    if (in_str) {
      if (*p == '\\' && p[1]) {
        fixed[o++] = *p++;
        fixed[o++] = *p;
        continue;
      }
      if (*p == quote) {
        in_str = false;
        fixed[o++] = '"';
        continue;
      }
      if (*p == '"' && quote == '\'') {
        fixed[o++] = '\\';
      }
      fixed[o++] = *p;
      continue;
    }
    if (*p == '"' || *p == '\'') {
      in_str = true;
      quote = *p;
      fixed[o++] = '"';
      continue;
    }
    const struct { const char *py, *js; } words[] = {{"True", "true"}, {"False", "false"}, {"None", "null"}};
    bool hit = false;
    for (size_t i = 0; i < ARRAY_SIZE(words); i++) {
      size_t n = strlen(words[i].py);
      if (strncmp(p, words[i].py, n) == 0) {
        memcpy(fixed + o, words[i].js, strlen(words[i].js));
        o += strlen(words[i].js);
        p += n - 1;
        hit = true;
        break;
      }
    }
    if (!hit)
      fixed[o++] = *p;
  }
  fixed[o] = '\0';
  j = cJSON_Parse(fixed);
  if (j == NULL) {
    free(fixed);
    return NULL;
  }
  cJSON_Delete(j);
  return fixed;
}

const char *lis_request_model(const char *m) {
  /* LiteLLM provider prefixes mean nothing to the server itself. */
  static const char *const prefixes[] = {"openai/", "hosted_vllm/"};
  for (size_t i = 0; i < ARRAY_SIZE(prefixes); i++)
    if (strncmp(m, prefixes[i], strlen(prefixes[i])) == 0)
      return m + strlen(prefixes[i]);
  return m;
}

bool lis_truthy(const cJSON *v) {
  if (v == NULL || cJSON_IsNull(v) || cJSON_IsFalse(v))
    return false;
  if (cJSON_IsNumber(v))
    return v->valuedouble != 0;
  if (cJSON_IsString(v))
    return v->valuestring[0] != '\0';
  if (cJSON_IsArray(v) || cJSON_IsObject(v))
    return v->child != NULL;
  return true;
}
