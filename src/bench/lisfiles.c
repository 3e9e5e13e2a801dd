/* SPDX-License-Identifier: Apache-2.0
 *
 * LLM-in-Sandbox's results.json and trajectory.json, as its benchmark
 * runner (0.2.0) writes them for the same tasks: its keys in its order, its
 * types (a reward is what compute_score returned: a float, an int or a
 * bool; temperature a float), json.dump's layout (bench_pyjson), and its
 * rules for what a task's error is.  hutch's own view of each task stays in
 * results.jsonl, summary.md and benchmark.json; a line says LIS's view in
 * "lis_error" (its error: a model API that kept failing is none, a
 * reward.py that raised is str() of the exception) and "reward_repr" (what
 * compute_score returned, as Python's repr).  A task with an error is
 * recorded as LIS records it: reward 0.0, no answer, no steps. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "error.h"
#include "lis_compat.h"
#include "util.h"

#define TRAJ_MAX ((size_t)1 << 30)

const char *bench_lis_error(const cJSON *line) {
  const cJSON *e = cJSON_GetObjectItemCaseSensitive(line, "lis_error");
  if (e == NULL)
    e = cJSON_GetObjectItemCaseSensitive(line, "error"); /* a line of an older hutch */
  return cJSON_IsString(e) ? e->valuestring : NULL;
}

static bool int_text(const char *t) {
  const char *p = t + (*t == '-');
  if (*p == '\0' || strlen(p) > 400)
    return false;
  return strspn(p, "0123456789") == strlen(p);
}

cJSON *bench_lis_reward_node(const char *repr) {
  double v;
  if (repr == NULL || !bench_score_repr(repr, &v))
    return NULL;
  if (strcmp(repr, "True") == 0 || strcmp(repr, "False") == 0)
    return cJSON_CreateBool(repr[0] == 'T');
  if (int_text(repr)) {
    cJSON *n = cJSON_CreateNumber(v);
    n->valuestring = xstrdup(repr);
    return n;
  }
  return bench_pyjson_float(v);
}

cJSON *bench_lis_reward(const cJSON *line) {
  if (bench_lis_error(line))
    return bench_pyjson_float(0.0);
  const cJSON *r = cJSON_GetObjectItemCaseSensitive(line, "reward_repr");
  cJSON *n = cJSON_IsString(r) ? bench_lis_reward_node(r->valuestring) : NULL;
  if (n)
    return n;
  const cJSON *s = cJSON_GetObjectItemCaseSensitive(line, "score");
  return bench_pyjson_float(cJSON_IsNumber(s) ? s->valuedouble : 0.0);
}

char *bench_lis_score4(const cJSON *reward) {
  double v = cJSON_IsBool(reward) ? (cJSON_IsTrue(reward) ? 1 : 0) : reward->valuedouble;
  return xasprintf("%.4f", v);
}

char *bench_lis_error_text(const char *why, const char *kind) {
  /* The driver's text is "KIND: str(e)", and the worker's "reward: " + it. */
  const char *t = why;
  if (strncmp(t, "reward: ", 8) == 0 && kind) {
    size_t k = strlen(kind);
    if (strncmp(t + 8, kind, k) == 0 && strncmp(t + 8 + k, ": ", 2) == 0)
      return xstrdup(t + 8 + k + 2);
  }
  return xstrdup(why);
}

static cJSON *dup_or_null(const cJSON *v) {
  return v ? cJSON_Duplicate(v, true) : cJSON_CreateNull();
}

static long long int_of(const cJSON *v, long long dflt) {
  return cJSON_IsNumber(v) ? (long long)v->valuedouble : dflt;
}

static cJSON *int_node(long long v) {
  char t[32];
  snprintf(t, sizeof(t), "%lld", v);
  cJSON *n = cJSON_CreateNumber((double)v);
  n->valuestring = xstrdup(t);
  return n;
}

cJSON *bench_lis_config(const cJSON *meta) {
  const cJSON *c = cJSON_GetObjectItemCaseSensitive(meta, "config");
  cJSON *r = cJSON_CreateObject();
#define GET(k) cJSON_GetObjectItemCaseSensitive(c, k)
  cJSON_AddItemToObject(r, "mode", dup_or_null(GET("mode")));
  /* The image the tasks ran in, as given (hutch's "default" otherwise). */
  const cJSON *img = GET("docker_image");
  cJSON_AddItemToObject(r, "docker_image",
                        cJSON_IsString(img) ? cJSON_Duplicate(img, 0) : cJSON_CreateString("default"));
  cJSON_AddItemToObject(r, "llm_name", dup_or_null(GET("llm_name")));
  cJSON_AddItemToObject(r, "llm_base_url", dup_or_null(GET("llm_base_url")));
  cJSON_AddItemToObject(r, "max_steps", int_node(int_of(GET("max_steps"), 100)));
  /* A float, but an int where the command line wrote one (Python Fire
   * reads --temperature 1 as the int 1). */
  const cJSON *t = GET("temperature");
  const cJSON *tt = cJSON_GetObjectItemCaseSensitive(meta, "temperature_text");
  if (cJSON_IsString(tt) && int_text(tt->valuestring))
    cJSON_AddItemToObject(r, "temperature", bench_lis_reward_node(tt->valuestring));
  else
    cJSON_AddItemToObject(r, "temperature", bench_pyjson_float(cJSON_IsNumber(t) ? t->valuedouble : 1.0));
  cJSON_AddItemToObject(r, "max_token_limit", int_node(int_of(GET("max_token_limit"), 65536)));
  cJSON_AddItemToObject(r, "max_tokens_per_call", int_node(int_of(GET("max_tokens_per_call"), 65536)));
  cJSON_AddItemToObject(r, "max_response_len", int_node(int_of(GET("max_response_len"), 65536)));
  /* extra_body with its numbers as written (1.0 stays a float). */
  const cJSON *et = cJSON_GetObjectItemCaseSensitive(meta, "extra_body_text");
  _cleanup_free_ char *json = cJSON_IsString(et) ? lis_extra_body_json(et->valuestring) : NULL;
  cJSON *eb = json ? cJSON_Parse(json) : NULL;
  if (eb) {
    hutch_error_t err = NULL;
    if (bench_json_keep_numbers(eb, json, strlen(json), &err) < 0)
      hutch_error_free(&err);
    bench_json_last_wins(eb);
    lis_fix_string_bools(eb);
  }
  cJSON_AddItemToObject(r, "extra_body", eb ? eb : dup_or_null(GET("extra_body")));
  const cJSON *save = GET("save_litellm_response");
  cJSON_AddBoolToObject(r, "save_litellm_response", cJSON_IsTrue(save));
#undef GET
  return r;
}

cJSON *bench_line_steps(const char *out, const cJSON *line) {
  _cleanup_close_ int run_fd = bench_open_run_dir(out, line);
  size_t len = 0;
  /* Never through a symlink in the run's place of trajectory.json. */
  _cleanup_free_ char *text = run_fd >= 0 ? read_regular_file_at(run_fd, "trajectory.json", TRAJ_MAX, &len) : NULL;
  cJSON *t = text ? cJSON_ParseWithLength(text, len) : NULL;
  cJSON *steps = cJSON_DetachItemFromObjectCaseSensitive(t, "steps");
  cJSON_Delete(t);
  return cJSON_IsArray(steps) ? steps : (cJSON_Delete(steps), cJSON_CreateArray());
}

static const char *str_or(const cJSON *o, const char *k) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
  return cJSON_IsString(v) ? v->valuestring : "";
}

/* A step as LLM-in-Sandbox's TrajectoryStep.to_dict() gives it: hutch's
 * own keys of its metadata (tool_time, exit_code, ...) are left out. */
static cJSON *lis_step(const cJSON *st) {
  cJSON *r = cJSON_CreateObject();
  cJSON_AddStringToObject(r, "thought", str_or(st, "thought"));
  cJSON_AddStringToObject(r, "reasoning_content", str_or(st, "reasoning_content"));
  const cJSON *a = cJSON_GetObjectItemCaseSensitive(st, "action");
  const cJSON *params = cJSON_GetObjectItemCaseSensitive(a, "parameters");
  cJSON *action = cJSON_AddObjectToObject(r, "action");
  /* A run of an older hutch kept unparsable arguments as {"_unparsed"}:
   * LIS records no call for them. */
  bool unparsed = cJSON_IsObject(params) && params->child && !params->child->next &&
                  strcmp(params->child->string, "_unparsed") == 0;
  cJSON_AddStringToObject(action, "function", unparsed ? "" : str_or(a, "function"));
  cJSON_AddItemToObject(action, "parameters",
                        unparsed || params == NULL ? cJSON_CreateObject() : cJSON_Duplicate(params, true));
  cJSON_AddStringToObject(r, "observation", str_or(st, "observation"));
  const cJSON *m = cJSON_GetObjectItemCaseSensitive(st, "metadata");
  cJSON *meta = cJSON_AddObjectToObject(r, "metadata");
  cJSON_AddItemToObject(meta, "step", int_node(int_of(cJSON_GetObjectItemCaseSensitive(m, "step"), 0)));
  const cJSON *et = cJSON_GetObjectItemCaseSensitive(m, "exec_time");
  cJSON_AddItemToObject(meta, "exec_time", bench_pyjson_float(cJSON_IsNumber(et) ? et->valuedouble : 0.0));
  return r;
}

static int save_text(const char *out, const char *name, char *text, hutch_error_t *err) {
  return bench_save(out, name, text, strlen(text), err);
}

int bench_write_lis(const char *out, const char *task, const cJSON *meta, const cJSON *lines,
                    const struct bench_status *status, double elapsed, hutch_error_t *err) {
  cJSON *traj = cJSON_CreateObject();
  /* Python's sum() of the rewards: exact while they are ints and bools,
   * then float additions in the tasks' order. */
  long long isum = 0;
  double fsum = 0;
  bool floats = false;
  int total = 0, errors = 0;
  const cJSON *l;
  cJSON_ArrayForEach(l, lines) {
    const char *lerr = bench_lis_error(l);
    cJSON *reward = bench_lis_reward(l);
    double v = cJSON_IsBool(reward) ? cJSON_IsTrue(reward) : reward->valuedouble;
    bool is_float = cJSON_IsNumber(reward) && strpbrk(reward->valuestring ? reward->valuestring : ".", ".eIN");
    if (is_float && !floats) {
      floats = true;
      fsum = (double)isum;
    }
    if (floats)
      fsum += v;
    else
      isum += (long long)v;
    total++;
    /* `if r.error`: an empty message is no error to its count. */
    if (lerr && *lerr)
      errors++;
    cJSON *e = cJSON_CreateObject();
    cJSON_AddItemToObject(e, "problem_statement",
                          dup_or_null(cJSON_GetObjectItemCaseSensitive(l, "problem_statement")));
    cJSON *steps = cJSON_CreateArray();
    if (lerr == NULL) {
      cJSON *raw = bench_line_steps(out, l);
      const cJSON *st;
      cJSON_ArrayForEach(st, raw) cJSON_AddItemToArray(steps, lis_step(st));
      cJSON_Delete(raw);
    }
    cJSON_AddItemToObject(e, "trajectory", steps);
    cJSON_AddItemToObject(e, "reward", reward);
    const cJSON *ans = cJSON_GetObjectItemCaseSensitive(l, "agent_answer");
    cJSON_AddStringToObject(e, "agent_answer", lerr == NULL && cJSON_IsString(ans) ? ans->valuestring : "");
    cJSON_AddItemToObject(e, "ground_truth", dup_or_null(cJSON_GetObjectItemCaseSensitive(l, "ground_truth")));
    /* A dict keeps a repeated key's first place and its last value. */
    const char *id = cJSON_GetObjectItemCaseSensitive(l, "id")->valuestring;
    if (cJSON_GetObjectItemCaseSensitive(traj, id))
      cJSON_ReplaceItemInObjectCaseSensitive(traj, id, e);
    else
      cJSON_AddItemToObject(traj, id, e);
  }
  double mean = total == 0 ? 0.0 : floats ? fsum / total : (double)isum / total;
  if (save_text(out, "trajectory.json", bench_pyjson(traj), err) < 0) {
    cJSON_Delete(traj);
    return -1;
  }
  cJSON *res = cJSON_CreateObject();
  cJSON_AddItemToObject(res, "config", bench_lis_config(meta));
  cJSON_AddStringToObject(res, "task", task);
  cJSON_AddItemToObject(res, "total", int_node(total));
  cJSON_AddItemToObject(res, "mean_score", bench_pyjson_float(mean));
  cJSON_AddItemToObject(res, "num_errors", int_node(errors));
  cJSON_AddItemToObject(res, "elapsed_time_seconds", bench_pyjson_float(elapsed));
  /* A partial merge's: what its score is not over (hutch's keys; a reader
   * of LLM-in-Sandbox's takes the keys it knows). */
  if (status && status->partial) {
    cJSON_AddItemToObject(res, "missing_shards", cJSON_Duplicate(status->missing_shards, true));
    cJSON_AddItemToObject(res, "incomplete_shards", cJSON_Duplicate(status->incomplete_shards, true));
  }
  int r = save_text(out, "results.json", bench_pyjson(res), err);
  cJSON_Delete(res);
  cJSON_Delete(traj);
  return r;
}
