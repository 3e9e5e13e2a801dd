/* SPDX-License-Identifier: Apache-2.0 */
#include "config.h"

#include "llm_saved.h"

#include <errno.h>
#include <string.h>

#include "lis_compat.h"
#include "util.h"

/* Each request file holds the whole conversation so far, which the
 * sandbox's output fills: the files of a long run grow with the square of
 * its length.  Past this many bytes in all, no more are written. */
#define SAVED_MAX_BYTES (1ull << 30)

static unsigned long long saved_bytes;
static bool saved_full;

/* The request keys LiteLLM takes as arguments; any other key of the body
 * came from --extra-body. */
static bool standard_key(const char *k) {
  static const char *const keys[] = {"model", "messages", "tools", "max_tokens", "temperature"};
  for (size_t i = 0; i < ARRAY_SIZE(keys); i++)
    if (strcmp(k, keys[i]) == 0)
      return true;
  return false;
}

/* Serialised, the key scrubbed, written by temp file and rename: a reader
 * never sees half a file. */
static void write_json(const char *dir, const char *kind, long call, cJSON *j, const char *api_key) {
  _cleanup_free_ char *text = cJSON_Print(j);
  if (text == NULL) {
    hutch_warn("could not serialise %s %ld for --save-litellm-response", kind, call);
    return;
  }
  _cleanup_free_ char *clean = lis_redact(text, api_key);
  _cleanup_free_ char *path = xasprintf("%s/%s_%03ld.json", dir, kind, call);
  size_t len = strlen(clean);
  if (saved_full || saved_bytes + len + 1 > SAVED_MAX_BYTES) {
    if (!saved_full)
      hutch_warn("--save-litellm-response: %s and later files are not written: they would pass %llu bytes in all", path,
                 SAVED_MAX_BYTES);
    saved_full = true;
    return;
  }
  saved_bytes += len + 1;
  clean[len] = '\n';
  if (write_file_atomic(path, clean, len + 1, 0644) < 0)
    hutch_log_errno(HUTCH_LOG_WARNING, errno, "could not write %s", path);
  clean[len] = '\0';
}

void llm_saved_write(const char *dir, long call, const cJSON *body, const struct llm_reply *rep, const char *base_url,
                     const char *api_key) {
  cJSON *req = cJSON_CreateObject();
  cJSON_AddNumberToObject(req, "call_id", (double)call);
  _cleanup_free_ char *url = llm_redact_url(base_url);
  cJSON_AddItemToObject(req, "model", cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(body, "model"), true));
  cJSON_AddStringToObject(req, "api_base", url);
  cJSON_AddItemToObject(req, "messages", cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(body, "messages"), true));
  cJSON *extra = cJSON_AddObjectToObject(req, "extra_params");
  cJSON *eb = NULL;
  const cJSON *e;
  cJSON_ArrayForEach(e, body) {
    if (standard_key(e->string))
      continue;
    if (eb == NULL)
      eb = cJSON_AddObjectToObject(extra, "extra_body");
    cJSON_AddItemToObject(eb, e->string, cJSON_Duplicate(e, true));
  }
  cJSON *kw = cJSON_AddObjectToObject(req, "kwargs");
  const cJSON *t = cJSON_GetObjectItemCaseSensitive(body, "temperature");
  if (t)
    cJSON_AddItemToObject(kw, "temperature", cJSON_Duplicate(t, true));
  /* Not in LLM-in-Sandbox's file, but sent: the rest of the body. */
  cJSON_AddItemToObject(req, "max_tokens", cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(body, "max_tokens"), true));
  cJSON_AddItemToObject(req, "tools", cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(body, "tools"), true));
  write_json(dir, "request", call, req, api_key);
  cJSON_Delete(req);

  cJSON *resp = cJSON_CreateObject();
  cJSON_AddNumberToObject(resp, "call_id", (double)call);
  cJSON *raw = rep->raw ? cJSON_Parse(rep->raw) : NULL;
  cJSON_AddItemToObject(resp, "response", raw ? raw : cJSON_CreateNull());
  write_json(dir, "response", call, resp, api_key);
  cJSON_Delete(resp);
}
