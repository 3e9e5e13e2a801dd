/* SPDX-License-Identifier: Apache-2.0 */
/* The body of POST /run_code: SandboxFusion's RunCodeRequest (code,
 * language, compile_timeout, run_timeout, memory_limit_MB, stdin, files,
 * fetch_files), its defaults and types.  What does not fit is refused as
 * its FastAPI server refuses it: 422 with {"detail": [{"type", "loc",
 * "msg"}]}, each entry naming the field; fields it does not know are
 * ignored, as there.  hutch adds bounds of its own (the operator's
 * --max-timeout and --max-memory, file counts), refused the same way. */
#include "config.h"

#include "serve.h"

#include <math.h>
#include <string.h>

#include "util.h"

#define MAX_PATH_LEN 4096

struct problems {
  cJSON *list;
};

static void problem(struct problems *p, const char *type, const char *field, const char *msg, const cJSON *input) {
  cJSON *e = cJSON_CreateObject();
  cJSON_AddStringToObject(e, "type", type);
  cJSON *loc = cJSON_AddArrayToObject(e, "loc");
  cJSON_AddItemToArray(loc, cJSON_CreateString("body"));
  if (field)
    cJSON_AddItemToArray(loc, cJSON_CreateString(field));
  cJSON_AddStringToObject(e, "msg", msg);
  if (input)
    cJSON_AddItemToObject(e, "input", cJSON_Duplicate(input, false));
  cJSON_AddItemToArray(p->list, e);
}

static char *take_string(struct problems *p, const cJSON *body, const char *field, bool required, bool *present) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(body, field);
  *present = v != NULL && !cJSON_IsNull(v);
  if (v == NULL) {
    if (required)
      problem(p, "missing", field, "Field required", NULL);
    return NULL;
  }
  if (cJSON_IsNull(v) && !required)
    return NULL;
  if (!cJSON_IsString(v)) {
    problem(p, "string_type", field, "Input should be a valid string", v);
    return NULL;
  }
  return xstrdup(v->valuestring);
}

/* A number field: its value, or dflt when absent; bounds are hutch's. */
static double take_number(struct problems *p, const cJSON *body, const char *field, double dflt, bool integer) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(body, field);
  if (v == NULL)
    return dflt;
  if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble)) {
    problem(p, integer ? "int_type" : "float_type", field,
            integer ? "Input should be a valid integer" : "Input should be a valid number", v);
    return dflt;
  }
  if (integer && (fabs(v->valuedouble) > 1e15 || v->valuedouble != (double)(long long)v->valuedouble)) {
    problem(p, "int_from_float", field, "Input should be a valid integer, got a number with a fractional part", v);
    return dflt;
  }
  return v->valuedouble;
}

static void check_timeout(struct problems *p, const struct serve_config *cfg, const char *field, double t) {
  if (!(t > 0)) {
    problem(p, "greater_than", field, "Input should be greater than 0 (seconds)", NULL);
  } else if (t > cfg->max_timeout) {
    _cleanup_free_ char *m =
        xasprintf("Input should be at most %g seconds on this server (hutch serve --max-timeout)", cfg->max_timeout);
    problem(p, "less_than_equal", field, m, NULL);
  }
}

static void take_files(struct problems *p, const cJSON *body, struct serve_run_request *rq) {
  const cJSON *files = cJSON_GetObjectItemCaseSensitive(body, "files"), *f;
  if (files == NULL)
    return;
  if (!cJSON_IsObject(files)) {
    problem(p, "dict_type", "files", "Input should be a valid dictionary", NULL);
    return;
  }
  int n = cJSON_GetArraySize(files);
  if (n > SERVE_MAX_FILES) {
    problem(p, "too_long", "files", "at most " SERVE_STR(SERVE_MAX_FILES) " files on this server", NULL);
    return;
  }
  rq->files = xcalloc((size_t)n + 1, sizeof(*rq->files));
  cJSON_ArrayForEach(f, files) {
    if (cJSON_IsNull(f))
      continue; /* SandboxFusion skips a file without content */
    size_t plen = strlen(f->string);
    if (!cJSON_IsString(f)) {
      problem(p, "string_type", "files", "Input should be a valid string (base64 of the file's bytes)", NULL);
      return;
    }
    if (plen == 0 || plen > MAX_PATH_LEN) {
      problem(p, "value_error", "files", "a file's path is empty or longer than 4096 bytes", NULL);
      return;
    }
    size_t tlen = strlen(f->valuestring);
    unsigned char *data = xmalloc(tlen / 4 * 3 + 3);
    size_t len = 0;
    if (!base64_decode(f->valuestring, tlen, data, &len)) {
      free(data);
      _cleanup_free_ char *m = xasprintf("the content of %s is not base64", f->string);
      problem(p, "value_error", "files", m, NULL);
      return;
    }
    struct serve_file *sf = &rq->files[rq->n_files++];
    sf->path = xstrdup(f->string);
    sf->data = data;
    sf->len = len;
  }
}

static void take_fetch(struct problems *p, const cJSON *body, struct serve_run_request *rq) {
  const cJSON *list = cJSON_GetObjectItemCaseSensitive(body, "fetch_files"), *f;
  rq->fetch = xcalloc(1, sizeof(char *));
  if (list == NULL)
    return;
  if (!cJSON_IsArray(list)) {
    problem(p, "list_type", "fetch_files", "Input should be a valid list", NULL);
    return;
  }
  int n = cJSON_GetArraySize(list);
  if (n > SERVE_MAX_FILES) {
    problem(p, "too_long", "fetch_files", "at most " SERVE_STR(SERVE_MAX_FILES) " files on this server", NULL);
    return;
  }
  rq->fetch = xrealloc(rq->fetch, ((size_t)n + 1) * sizeof(char *));
  cJSON_ArrayForEach(f, list) {
    if (!cJSON_IsString(f) || f->valuestring[0] == '\0' || strlen(f->valuestring) > MAX_PATH_LEN) {
      problem(p, "string_type", "fetch_files", "Input should be a valid string (a path of at most 4096 bytes)", f);
      break;
    }
    rq->fetch[rq->n_fetch++] = xstrdup(f->valuestring);
  }
  rq->fetch[rq->n_fetch] = NULL;
}

/* pydantic's message for a Literal: "Input should be 'a', 'b' or 'c'". */
static char *literal_message(void) {
  char *m = xstrdup("Input should be ");
  for (size_t i = 0; serve_sf_languages[i]; i++) {
    const char *sep = i == 0 ? "" : serve_sf_languages[i + 1] ? ", " : " or ";
    char *t = xasprintf("%s%s'%s'", m, sep, serve_sf_languages[i]);
    free(m);
    m = t;
  }
  return m;
}

int serve_request_parse(const struct serve_config *cfg, const char *body, size_t len, struct serve_run_request *rq,
                        char **detail) {
  memset(rq, 0, sizeof(*rq));
  struct problems p = {cJSON_CreateArray()};
  _cleanup_cjson_ cJSON *j = cJSON_ParseWithLength(body, len);
  if (j == NULL) {
    problem(&p, "json_invalid", NULL, "JSON decode error", NULL);
  } else if (!cJSON_IsObject(j)) {
    problem(&p, "model_attributes_type", NULL, "Input should be a valid dictionary or object to extract fields from",
            NULL);
  } else {
    bool present;
    rq->code = take_string(&p, j, "code", true, &present);
    rq->language = take_string(&p, j, "language", true, &present);
    if (rq->language && !serve_sf_language(rq->language)) {
      _cleanup_free_ char *m = literal_message();
      problem(&p, "literal_error", "language", m, cJSON_GetObjectItemCaseSensitive(j, "language"));
    }
    rq->stdin_text = take_string(&p, j, "stdin", false, &rq->has_stdin);
    rq->stdin_len = rq->stdin_text ? strlen(rq->stdin_text) : 0;
    rq->compile_timeout = take_number(&p, j, "compile_timeout", 10, false);
    rq->run_timeout = take_number(&p, j, "run_timeout", 10, false);
    check_timeout(&p, cfg, "compile_timeout", rq->compile_timeout);
    check_timeout(&p, cfg, "run_timeout", rq->run_timeout);
    double mb = take_number(&p, j, "memory_limit_MB", -1, true);
    rq->memory_mb = mb > 0 ? (long long)(mb < 1e12 ? mb : 1e12) : -1;
    if (rq->memory_mb > 0 && cfg->max_memory && (uint64_t)rq->memory_mb << 20 > cfg->max_memory) {
      _cleanup_free_ char *m = xasprintf("Input should be at most %llu (MB) on this server (hutch serve --max-memory)",
                                         (unsigned long long)(cfg->max_memory >> 20));
      problem(&p, "less_than_equal", "memory_limit_MB", m, NULL);
    }
    take_files(&p, j, rq);
    take_fetch(&p, j, rq);
  }
  if (cJSON_GetArraySize(p.list) == 0) {
    cJSON_Delete(p.list);
    return 0;
  }
  cJSON *out = cJSON_CreateObject();
  cJSON_AddItemToObject(out, "detail", p.list);
  *detail = cJSON_PrintUnformatted(out);
  cJSON_Delete(out);
  serve_request_clear(rq);
  return 422;
}

void serve_request_clear(struct serve_run_request *rq) {
  free(rq->code);
  free(rq->language);
  free(rq->stdin_text);
  for (size_t i = 0; i < rq->n_files; i++) {
    free(rq->files[i].path);
    free(rq->files[i].data);
  }
  free(rq->files);
  for (size_t i = 0; i < rq->n_fetch; i++)
    free(rq->fetch[i]);
  free(rq->fetch);
  memset(rq, 0, sizeof(*rq));
}
