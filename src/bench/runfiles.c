/* SPDX-License-Identifier: Apache-2.0
 *
 * What hutch benchmark reads back from run directories: benchmark.json
 * and results.jsonl's lines, written by a runner, perhaps on another
 * machine (a shard), perhaps edited since.  Every field a reader uses is
 * checked here, for its type and its range, before any use: a count sizes
 * nothing unbounded, a name makes no path, a score outside the task set's
 * range is averaged into nothing, and a line's run_dir stays a relative path
 * under runs/.  Pure: opening the run_dir (beneath its run directory, no
 * symlink on the way) is bench_open_run_dir's, in results.c. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "util.h"

void bench_fmt_double(char buf[32], double v) {
  /* As Python's repr: the fewest digits that read back as v, in fixed
   * notation from 1e-4 to 1e16 (0.1, not 0.10000000000000001; 100, not
   * 1e+02), else with an exponent (1e+300). */
  if (!isfinite(v)) {
    snprintf(buf, 32, "%g", v);
    return;
  }
  int digits = 1;
  for (; digits < 17; digits++) {
    snprintf(buf, 32, "%.*e", digits - 1, v);
    if (strtod(buf, NULL) == v)
      break;
  }
  snprintf(buf, 32, "%.*e", digits - 1, v);
  int exp = atoi(strchr(buf, 'e') + 1);
  if (exp >= -4 && exp < 16)
    snprintf(buf, 32, "%.*f", digits - 1 - exp > 0 ? digits - 1 - exp : 0, v);
}

char *bench_score_outside(double score, const struct bench_range *r) {
  char v[32], lo[32], hi[32];
  bench_fmt_double(v, score);
  if (!isfinite(score))
    return xasprintf("%s, not a finite number", v);
  if (score >= r->min && score <= r->max)
    return NULL;
  bench_fmt_double(lo, r->min);
  bench_fmt_double(hi, r->max);
  return xasprintf("%s, outside the task set's score range [%s, %s]", v, lo, hi);
}

bool bench_task_name_ok(const char *name) {
  /* A folder's name: it makes part of a run directory's name, printed on a
   * line of its own. */
  for (const char *p = name; *p; p++)
    if (*p == '/' || (unsigned char)*p < 0x20 || *p == 0x7f)
      return false;
  return name[0] != '\0' && name[0] != '.';
}

/* An integer cJSON holds exactly, in [lo, hi]. */
static bool integer_in(const cJSON *v, double lo, double hi, long *out) {
  /* In range first: only then is the conversion to long defined. */
  if (!cJSON_IsNumber(v) || !(v->valuedouble >= lo && v->valuedouble <= hi) ||
      (double)(long)v->valuedouble != v->valuedouble)
    return false;
  *out = (long)v->valuedouble;
  return true;
}

static const char *string_of(const cJSON *o, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsString(v) ? v->valuestring : NULL;
}

int bench_meta_check(const cJSON *meta, struct bench_meta *m, char **why) {
  memset(m, 0, sizeof(*m));
  m->range = (struct bench_range){0, 1};
  *why = NULL;
  if (!cJSON_IsObject(meta)) {
    *why = xstrdup("is not a JSON object");
    return -1;
  }
  m->taskdir = string_of(meta, "taskdir");
  m->task = string_of(meta, "task");
  m->config = cJSON_GetObjectItemCaseSensitive(meta, "config");
  m->mode = string_of(m->config, "mode");
  m->llm_name = string_of(m->config, "llm_name");
  const cJSON *sh = cJSON_GetObjectItemCaseSensitive(meta, "shard");
  const cJSON *range = cJSON_GetObjectItemCaseSensitive(meta, "score_range");
  const cJSON *status = cJSON_GetObjectItemCaseSensitive(meta, "status");
  m->merged_from = cJSON_GetObjectItemCaseSensitive(meta, "merged_from");
  if (m->taskdir == NULL || m->taskdir[0] == '\0')
    *why = xstrdup("\"taskdir\" is not a path");
  else if (m->task == NULL || !bench_task_name_ok(m->task))
    *why = xstrdup("\"task\" is not the name of a task folder");
  else if (!cJSON_IsObject(m->config))
    *why = xstrdup("\"config\" is not an object");
  else if (m->mode == NULL || (strcmp(m->mode, "llm-in-sandbox") != 0 && strcmp(m->mode, "llm") != 0))
    *why = xstrdup("\"config.mode\" is not llm-in-sandbox or llm");
  else if (m->llm_name == NULL)
    *why = xstrdup("\"config.llm_name\" is not a string");
  else if (!cJSON_IsArray(sh) || cJSON_GetArraySize(sh) != 2 ||
           !integer_in(cJSON_GetArrayItem(sh, 1), 1, (double)BENCH_SHARDS_MAX, &m->shard_n) ||
           !integer_in(cJSON_GetArrayItem(sh, 0), 0, (double)m->shard_n - 1, &m->shard_k))
    *why = xasprintf("\"shard\" is not [K, N] with 0 <= K < N <= %ld", (long)BENCH_SHARDS_MAX);
  else if (range &&
           (!cJSON_IsArray(range) || cJSON_GetArraySize(range) != 2 || !cJSON_IsNumber(cJSON_GetArrayItem(range, 0)) ||
            !cJSON_IsNumber(cJSON_GetArrayItem(range, 1)) || !isfinite(cJSON_GetArrayItem(range, 0)->valuedouble) ||
            !isfinite(cJSON_GetArrayItem(range, 1)->valuedouble) ||
            !(cJSON_GetArrayItem(range, 0)->valuedouble < cJSON_GetArrayItem(range, 1)->valuedouble)))
    *why = xstrdup("\"score_range\" is not [MIN, MAX] of finite numbers, MIN below MAX");
  else if (status && (!cJSON_IsObject(status) || !cJSON_IsBool(cJSON_GetObjectItemCaseSensitive(status, "complete")) ||
                      !integer_in(cJSON_GetObjectItemCaseSensitive(status, "tasks"), 0, 9007199254740992.0, &m->tasks)))
    *why = xstrdup("\"status\" is not an object with \"complete\" (true or false) and \"tasks\" (a count)");
  if (*why == NULL && m->merged_from) {
    const cJSON *d;
    bool ok = cJSON_IsArray(m->merged_from);
    cJSON_ArrayForEach(d, m->merged_from) ok = ok && cJSON_IsString(d) && d->valuestring[0] == '/';
    if (!ok)
      *why = xstrdup("\"merged_from\" is not a list of absolute paths");
  }
  if (*why)
    return -1;
  m->has_status = status != NULL;
  m->complete = status && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(status, "complete"));
  if (range)
    m->range =
        (struct bench_range){cJSON_GetArrayItem(range, 0)->valuedouble, cJSON_GetArrayItem(range, 1)->valuedouble};
  return 0;
}

bool bench_run_dir_ok(const char *rd) {
  /* runs/ID/RUN as the worker writes it: each component a name of its
   * own, none empty, none beginning with '.' (no ".", no ".."; no id's
   * file name begins with one, bench_safe_name). */
  if (strncmp(rd, "runs/", 5) != 0 || strlen(rd) >= 4096)
    return false;
  for (const char *p = rd + 5;;) {
    const char *slash = strchr(p, '/');
    if (*p == '\0' || *p == '/' || *p == '.')
      return false;
    if (slash == NULL)
      return true;
    p = slash + 1;
  }
}

static bool time_of(const cJSON *v) {
  return cJSON_IsNumber(v) && isfinite(v->valuedouble) && v->valuedouble >= 0;
}

int bench_line_check(const cJSON *line, const struct bench_range *r, const cJSON *shard_dirs, char **why) {
  *why = NULL;
  if (!cJSON_IsObject(line)) {
    *why = xstrdup("is not a JSON object");
    return -1;
  }
  const char *id = string_of(line, "id");
  const cJSON *score = cJSON_GetObjectItemCaseSensitive(line, "score");
  const cJSON *error = cJSON_GetObjectItemCaseSensitive(line, "error");
  const cJSON *rd = cJSON_GetObjectItemCaseSensitive(line, "run_dir");
  const cJSON *sd = cJSON_GetObjectItemCaseSensitive(line, "shard_dir");
  const cJSON *tokens = cJSON_GetObjectItemCaseSensitive(line, "tokens");
  const cJSON *timings = cJSON_GetObjectItemCaseSensitive(line, "timings");
  int end = bench_line_end(line);
  const cJSON *lis_error = cJSON_GetObjectItemCaseSensitive(line, "lis_error");
  const cJSON *repr = cJSON_GetObjectItemCaseSensitive(line, "reward_repr");
  double reward = 0;
  if (id == NULL || id[0] == '\0')
    *why = xstrdup("\"id\" is not a task id");
  else if (!cJSON_IsNumber(score) || !isfinite(score->valuedouble))
    *why = xstrdup("\"score\" is not a finite number");
  else if (error && !cJSON_IsNull(error) && !cJSON_IsString(error))
    *why = xstrdup("\"error\" is not text");
  else if (end < 0)
    *why = xstrdup("\"end\" is not one of finished, timeout, task_error, scoring_error, api_error, infra_error");
  else if ((end == BENCH_END_FINISHED) != !cJSON_IsString(error))
    *why =
        xstrdup(end == BENCH_END_FINISHED ? "\"end\" is finished, with an error" : "\"end\" is an error, without one");
  else if (!time_of(cJSON_GetObjectItemCaseSensitive(line, "elapsed_seconds")))
    *why = xstrdup("\"elapsed_seconds\" is not a time in seconds");
  else if (tokens && !time_of(tokens))
    *why = xstrdup("\"tokens\" is not a count");
  else if (timings && !cJSON_IsObject(timings))
    *why = xstrdup("\"timings\" is not an object");
  else if (lis_error && !cJSON_IsNull(lis_error) && !cJSON_IsString(lis_error))
    *why = xstrdup("\"lis_error\" is not text");
  else if (repr && !(cJSON_IsString(repr) && bench_score_repr(repr->valuestring, &reward)))
    *why = xstrdup("\"reward_repr\" is not a score's repr (True, False, an int or a float)");
  else if (rd && (!cJSON_IsString(rd) || !bench_run_dir_ok(rd->valuestring))) {
    _cleanup_free_ char *shown = text_escape_cstr(cJSON_IsString(rd) ? rd->valuestring : "(not text)");
    *why = xasprintf("\"run_dir\" '%.200s' is not a directory under runs/", shown);
  } else if (sd) {
    const cJSON *d;
    bool known = false;
    cJSON_ArrayForEach(d, shard_dirs) known =
        known || (cJSON_IsString(sd) && strcmp(d->valuestring, sd->valuestring) == 0);
    if (!known)
      *why = xstrdup("\"shard_dir\" is not a shard of this merged run (its merged_from)");
  }
  if (*why == NULL && !(cJSON_IsString(error) && score->valuedouble == 0)) {
    /* A task's error scores 0, whatever the range. */
    _cleanup_free_ char *out = bench_score_outside(score->valuedouble, r);
    if (out)
      *why = xasprintf("\"score\" %s", out);
  }
  /* The reward LLM-in-Sandbox's files average, where they see no error. */
  if (*why == NULL && repr && !cJSON_IsString(lis_error)) {
    _cleanup_free_ char *out = bench_score_outside(reward, r);
    if (out)
      *why = xasprintf("\"reward_repr\" %s", out);
  }
  return *why ? -1 : 0;
}
