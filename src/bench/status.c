/* SPDX-License-Identifier: Apache-2.0
 *
 * How each task ended and what a run measured (pure).  A task's line in
 * results.jsonl says how it ended ("end"); only a measured end counts in a
 * score, and a run is complete only when every task has one: a task the
 * model's API or hutch failed was not measured, and presenting its 0 as
 * the model's would be a wrong number.  Lines of an older hutch, without
 * "end", are read by what their error and exit status say. */
#include "config.h"

#include <string.h>

#include "bench.h"
#include "util.h"

const char *const bench_end_names[BENCH_END_N] = {"finished",      "timeout",   "task_error",
                                                  "scoring_error", "api_error", "infra_error"};

/* hutch run's exit statuses (hutch-run(1)). */
#define AGENT_API 3
#define AGENT_USAGE 2
#define AGENT_FAILED 125

int bench_line_end(const cJSON *line) {
  const cJSON *end = cJSON_GetObjectItemCaseSensitive(line, "end");
  if (end) {
    for (int k = 0; cJSON_IsString(end) && k < BENCH_END_N; k++)
      if (strcmp(end->valuestring, bench_end_names[k]) == 0)
        return k;
    return -1;
  }
  const cJSON *error = cJSON_GetObjectItemCaseSensitive(line, "error");
  const cJSON *code = cJSON_GetObjectItemCaseSensitive(line, "exit_code");
  if (!cJSON_IsString(error))
    return BENCH_END_FINISHED;
  const char *e = error->valuestring;
  double c = cJSON_IsNumber(code) ? code->valuedouble : -1;
  if (c == AGENT_API)
    return BENCH_END_API;
  if (strcmp(e, "Timeout") == 0)
    return BENCH_END_TIMEOUT;
  if (strncmp(e, "reward: ", 8) == 0 || strncmp(e, "verifier: ", 10) == 0)
    return BENCH_END_SCORING;
  if (c == AGENT_USAGE || c == AGENT_FAILED || c >= 128 || strncmp(e, "the worker of this task ended", 29) == 0)
    return BENCH_END_INFRA;
  return BENCH_END_TASK;
}

void bench_status_count(struct bench_status *st, const cJSON *lines, long tasks) {
  memset(st->ends, 0, sizeof(st->ends));
  long measured = 0, n = 0;
  const cJSON *l;
  cJSON_ArrayForEach(l, lines) {
    int end = bench_line_end(l);
    n++;
    if (end < 0)
      continue;
    st->ends[end]++;
    measured += bench_end_measured(end);
  }
  st->tasks = tasks;
  st->not_run = tasks > n ? tasks - n : 0;
  st->complete = measured == tasks;
}

cJSON *bench_status_json(const struct bench_status *st) {
  cJSON *j = cJSON_CreateObject();
  cJSON_AddBoolToObject(j, "complete", st->complete);
  cJSON_AddItemToObject(j, "stopped", st->stopped ? cJSON_CreateString(st->stopped) : cJSON_CreateNull());
  cJSON_AddNumberToObject(j, "tasks", (double)st->tasks);
  cJSON *ends = cJSON_AddObjectToObject(j, "ends");
  for (int k = 0; k < BENCH_END_N; k++)
    cJSON_AddNumberToObject(ends, bench_end_names[k], (double)st->ends[k]);
  cJSON_AddNumberToObject(j, "not_run", (double)st->not_run);
  if (st->shards > 0) {
    cJSON_AddNumberToObject(j, "shards", (double)st->shards);
    cJSON_AddItemToObject(j, "missing_shards", cJSON_Duplicate(st->missing_shards, true));
    cJSON_AddNumberToObject(j, "missing_shard_count", (double)st->missing);
    cJSON_AddItemToObject(j, "incomplete_shards", cJSON_Duplicate(st->incomplete_shards, true));
    cJSON_AddNumberToObject(j, "incomplete_shard_count", (double)st->incomplete);
    cJSON_AddBoolToObject(j, "partial", st->partial);
  }
  return j;
}
