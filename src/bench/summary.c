/* SPDX-License-Identifier: Apache-2.0
 *
 * summary.md: the run at a glance, for people (results.json is for
 * programs).  It never shows a score the run did not measure: an
 * incomplete run's head says so, and what is missing, instead of a mean; a
 * partial merge's names the shards it lacks.  Every text in it that a task,
 * a model or a run file wrote (ids, errors, the task's and model's names)
 * is a Markdown code span (bench_md_code): a Markdown viewer shows it as it
 * is, no link, image or markup of its own alive. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "util.h"

/* Shards named one by one, at most. */
#define SHARDS_NAMED 10

/* "shard 2 of 3" or "shards 2, 5, ... of 8 (N in all)": count shards, the
 * first of them in list. */
static void shards(FILE *f, const cJSON *list, long count, long n) {
  int k = 0;
  fprintf(f, "shard%s ", count > 1 ? "s" : "");
  const cJSON *e;
  cJSON_ArrayForEach(e, list) {
    if (k == SHARDS_NAMED)
      break;
    fprintf(f, "%s%.0f", k++ ? ", " : "", e->valuedouble);
  }
  fprintf(f, "%s of %ld", count > k ? ", ..." : "", n);
  if (count > k)
    fprintf(f, " (%ld in all)", count);
}

/* The head of an incomplete run: what is missing and how to go on. */
static void incomplete(FILE *f, const struct bench_status *st, double elapsed) {
  long measured = 0;
  for (int k = 0; k < BENCH_END_N; k++)
    measured += bench_end_measured(k) ? st->ends[k] : 0;
  fprintf(f, "| tasks | measured | not finished | not run | time |\n|---:|---:|---:|---:|---:|\n");
  fprintf(f, "| %ld | %ld | %ld | %ld | %.1f s |\n\n", st->tasks, measured,
          st->ends[BENCH_END_API] + st->ends[BENCH_END_INFRA], st->not_run, elapsed);
  fprintf(f, "**Incomplete: no score.**");
  if (st->stopped)
    fprintf(f, " The run stopped: %s.", st->stopped);
  fprintf(f,
          " %ld tasks ended on a failure of the model's API (`api_error`) and %ld on one of hutch (`infra_error`); "
          "`hutch benchmark --resume` runs them, and the %ld not run.\n\n",
          st->ends[BENCH_END_API], st->ends[BENCH_END_INFRA], st->not_run);
}

int bench_write_summary(const char *out, const char *task, const cJSON *config, const cJSON *lines,
                        const struct bench_status *st, double elapsed, hutch_error_t *err) {
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  const cJSON *llm = cJSON_GetObjectItemCaseSensitive(config, "llm_name");
  const cJSON *mode = cJSON_GetObjectItemCaseSensitive(config, "mode");
  _cleanup_free_ char *t = bench_md_code(task, 200, false);
  _cleanup_free_ char *m = bench_md_code(cJSON_IsString(llm) ? llm->valuestring : "?", 200, false);
  _cleanup_free_ char *md = bench_md_code(cJSON_IsString(mode) ? mode->valuestring : "?", 200, false);
  fprintf(f, "# %s: %s, %s\n\n", t, m, md);
  double sum = 0;
  int total = 0, errors = 0;
  const cJSON *l;
  cJSON_ArrayForEach(l, lines) {
    if (!bench_end_measured(bench_line_end(l)))
      continue;
    sum += cJSON_GetObjectItemCaseSensitive(l, "score")->valuedouble;
    total++;
    errors += cJSON_IsString(cJSON_GetObjectItemCaseSensitive(l, "error"));
  }
  if (st && !st->complete && !st->partial) {
    incomplete(f, st, elapsed);
  } else {
    if (st && st->partial) {
      fprintf(f, "**Partial:");
      if (st->missing > 0) {
        fputc(' ', f);
        shards(f, st->missing_shards, st->missing, st->shards);
        fprintf(f, " missing%s", st->incomplete > 0 ? ";" : "");
      }
      if (st->incomplete > 0) {
        fputc(' ', f);
        shards(f, st->incomplete_shards, st->incomplete, st->shards);
        fprintf(f, " incomplete");
      }
      fprintf(f, ".** The score is over the %d tasks measured in the shards there are.\n\n", total);
    }
    fprintf(f, "| tasks | mean score | errors | time |\n|---:|---:|---:|---:|\n| %d | %.4f | %d | %.1f s |\n\n", total,
            total ? sum / total : 0.0, errors, elapsed);
  }
  fprintf(f, "| id | score | time | error | end |\n|---|---:|---:|---|---|\n");
  cJSON_ArrayForEach(l, lines) {
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(l, "error");
    const cJSON *tm = cJSON_GetObjectItemCaseSensitive(l, "elapsed_seconds");
    int end = bench_line_end(l);
    _cleanup_free_ char *id = bench_md_code(cJSON_GetObjectItemCaseSensitive(l, "id")->valuestring, 80, true);
    _cleanup_free_ char *why = bench_md_code(cJSON_IsString(e) ? e->valuestring : "", 80, true);
    fprintf(f, "| %s | %.4f | %.1f s | %s | %s |\n", id, cJSON_GetObjectItemCaseSensitive(l, "score")->valuedouble,
            cJSON_IsNumber(tm) ? tm->valuedouble : 0.0, why, end >= 0 ? bench_end_names[end] : "?");
  }
  fclose(f);
  return bench_save(out, "summary.md", text, len, err);
}
