/* SPDX-License-Identifier: Apache-2.0
 *
 * hutch benchmark's run files read back (src/bench/runfiles.c,
 * markdown.c): a shard's benchmark.json and results.jsonl's lines may come
 * from another machine or have been edited, and what a model wrote becomes
 * summary.md.  The first byte picks: 'm' benchmark.json (bench_meta_check),
 * 'l' a results line (bench_line_check, with two shard directories), 'r' a
 * run_dir (bench_run_dir_ok), anything else text for bench_md_code.  What a
 * check takes must be what its readers may use without another look. */
#include "config.h"

#include <math.h>

#include "bench/bench.h"
#include "fuzz.h"

static void meta(const char *text, size_t len) {
  cJSON *j = cJSON_ParseWithLength(text, len);
  struct bench_meta m;
  char *why = NULL;
  if (bench_meta_check(j, &m, &why) == 0) {
    if (why || !m.taskdir || !m.task || !bench_task_name_ok(m.task) || !m.mode || !m.llm_name ||
        !cJSON_IsObject(m.config) || m.shard_k < 0 || m.shard_k >= m.shard_n || m.shard_n > BENCH_SHARDS_MAX ||
        !isfinite(m.range.min) || !isfinite(m.range.max) || !(m.range.min < m.range.max))
      abort();
  } else if (why == NULL) {
    abort();
  }
  free(why);
  cJSON_Delete(j);
}

static void line(const char *text, size_t len) {
  cJSON *j = cJSON_ParseWithLength(text, len);
  cJSON *shards = cJSON_Parse("[\"/s\", \"/t\"]");
  struct bench_range r = {0, 1};
  char *why = NULL;
  if (bench_line_check(j, &r, shards, &why) == 0) {
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(j, "id");
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(j, "score");
    const cJSON *rd = cJSON_GetObjectItemCaseSensitive(j, "run_dir");
    if (why || !cJSON_IsString(id) || !id->valuestring[0] || !cJSON_IsNumber(s) || !isfinite(s->valuedouble) ||
        s->valuedouble < 0 || s->valuedouble > 1 || (rd && !bench_run_dir_ok(rd->valuestring)))
      abort();
  } else if (why == NULL) {
    abort();
  }
  free(why);
  cJSON_Delete(j);
  cJSON_Delete(shards);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1 || size > 65536)
    return 0;
  char *text = fuzz_cstring(data + 1, size - 1);
  size_t len = strlen(text);
  if (data[0] == 'm') {
    meta(text, len);
  } else if (data[0] == 'l') {
    line(text, len);
  } else if (data[0] == 'r') {
    /* A run_dir taken has no ".." and is beneath runs/. */
    if (bench_run_dir_ok(text) && (strncmp(text, "runs/", 5) != 0 || strstr(text, "/.") || strstr(text, "//")))
      abort();
  } else {
    /* One line: a code span (its fence, a space, the text, a space, the
     * fence, then "..." where cut) whose fence is longer than any run of
     * backticks in the text, and no '|' there a table would split at. */
    char *md = bench_md_code(text, 80, true);
    size_t n = strlen(md), fence = strspn(md, "`"), run = 0;
    if (n >= 3 && strcmp(md + n - 3, "...") == 0)
      n -= 3;
    if (strchr(md, '\n') || strchr(md, '\r') || (n > 0 && (fence == 0 || n < 2 * fence + 2)))
      abort();
    for (size_t i = n - fence; n > 0 && i < n; i++)
      if (md[i] != '`' || md[n - fence - 1] != ' ' || md[fence] != ' ')
        abort();
    for (size_t i = fence + 1; n > 0 && i < n - fence - 1; i++) {
      run = md[i] == '`' ? run + 1 : 0;
      if (run >= fence || (md[i] == '|' && md[i - 1] != '\\'))
        abort();
    }
    free(md);
  }
  free(text);
  return 0;
}
