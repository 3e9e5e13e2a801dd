/* SPDX-License-Identifier: Apache-2.0 */
/* --mode llm, LLM-in-Sandbox's vanilla mode: the model answers in one
 * completion, without a sandbox, so that the two modes can be compared on
 * the same tasks.  The prompt is the task folder's
 * vanilla_llm_prompt.py create_prompt(row) when there is one (task-set code:
 * run in a sandbox all the same), else the problem statement. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "error.h"
#include "lis_compat.h"
#include "llm_client.h"
#include "util.h"

#define PROMPT_MAX ((size_t)256 << 20)
/* LLM-in-Sandbox's timeout of the one request (queue and generation). */
#define VANILLA_TIMEOUT 1800.0

static void llm_log(void *data, const char *msg) {
  FILE *f = data;
  if (f)
    fprintf(f, "hutch benchmark: %s\n", msg);
}

static char *make_prompt(const struct bench_opts *o, const struct bench_set *set, const cJSON *row, const char *dir,
                         char **why) {
  _cleanup_free_ char *path = xasprintf("%s/vanilla_llm_prompt.py", set->dir);
  const cJSON *ps = cJSON_GetObjectItemCaseSensitive(row, "problem_statement");
  if (access(path, R_OK) < 0)
    return xstrdup(ps->valuestring);
  _cleanup_free_ char *pdir = xasprintf("%s/prompt", dir);
  cJSON *res = NULL;
  _cleanup_free_ char *fail = NULL;
  if (bench_python(o, set, pdir, "vanilla_llm_prompt", "prompt", row, PROMPT_MAX, &res, &fail) < 0) {
    *why = xasprintf("vanilla_llm_prompt.py: %s", fail);
    return NULL;
  }
  const cJSON *p = cJSON_GetObjectItemCaseSensitive(res, "prompt");
  const cJSON *e = cJSON_GetObjectItemCaseSensitive(res, "error");
  char *prompt = cJSON_IsString(p) ? xstrdup(p->valuestring) : NULL;
  if (prompt == NULL)
    *why = xasprintf("vanilla_llm_prompt.py: %s", cJSON_IsString(e) ? e->valuestring : "no prompt");
  cJSON_Delete(res);
  return prompt;
}

int bench_vanilla(const struct bench_opts *o, const struct bench_set *set, const cJSON *row, const char *dir, FILE *log,
                  char **answer, char **why, bool *fatal, int *end) {
  const struct settings *s = &o->s;
  *answer = NULL;
  *fatal = false;
  _cleanup_free_ char *prompt = make_prompt(o, set, row, dir, why);
  if (prompt == NULL)
    return -1;
  cJSON *body = bench_one_message(s->model, prompt, o->max_response_len);
  if (s->has_temperature)
    cJSON_AddNumberToObject(body, "temperature", s->temperature);
  cJSON *extra = s->extra_body ? lis_parse_extra_body(s->extra_body) : NULL;
  lis_fix_string_bools(extra);
  for (cJSON *e = cJSON_IsObject(extra) ? extra->child : NULL; e; e = e->next) {
    cJSON_DeleteItemFromObjectCaseSensitive(body, e->string);
    cJSON_AddItemToObject(body, e->string, cJSON_Duplicate(e, true));
  }
  cJSON_Delete(extra);
  /* The task's time limit bounds the request, its tries and their waits,
   * as it bounds a task's hutch run in the other mode. */
  double limit = o->task_timeout > 0 && o->task_timeout < VANILLA_TIMEOUT ? o->task_timeout : VANILLA_TIMEOUT;
  struct llm_options lo = {
      .base_url = s->base_url,
      .api_key = s->api_key,
      .timeout = limit,
      .deadline = monotonic_seconds() + limit,
      .max_tries = (int)s->max_tries,
      .retry_delay = s->retry_delay,
      .max_reply = (size_t)s->max_reply_size,
      .min_max_tokens = 8192, /* LLM-in-Sandbox's floor in this mode */
      .stop = &bench_stop,
      .log = llm_log,
      .log_data = log,
  };
  struct llm_client *c = llm_client_new(&lo);
  struct llm_reply rep;
  memset(&rep, 0, sizeof(rep));
  hutch_error_t err = NULL;
  enum llm_status st = llm_chat(c, body, &rep, &err);
  cJSON_Delete(body);
  llm_client_free(c);
  if (log)
    fprintf(log, "Query:\n%s\n\n", prompt);
  if (st == LLM_TIMED_OUT) {
    /* The model's time is the task's: measured, as a task of the other
     * mode past its limit is. */
    *end = BENCH_END_TIMEOUT;
    *why = xasprintf("Timeout: the model did not answer within the task's time limit (%g s, --task-timeout)", limit);
    hutch_error_free(&err);
    llm_reply_clear(&rep);
    return -1;
  }
  if (st != LLM_OK) {
    *end = BENCH_END_API;
    *why = st == LLM_INTERRUPTED ? xstrdup("stopped") : hutch_error_format(err);
    *fatal = *why && (strstr(*why, "answered HTTP 401") || strstr(*why, "answered HTTP 403"));
    hutch_error_free(&err);
    llm_reply_clear(&rep);
    return -1;
  }
  *answer = xstrdup(rep.content ? rep.content : "");
  if (log)
    fprintf(log, "Response:\n%s\n", *answer);
  llm_reply_clear(&rep);
  return 0;
}
