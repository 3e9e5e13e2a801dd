/* SPDX-License-Identifier: Apache-2.0
 *
 * The text of what hutch benchmark shows while it works (progress.c): a
 * task's line and its --json event, the live line, the totals and the end
 * event.  Everything a task set or a model wrote (ids, errors that quote a
 * sandbox) is escaped for a terminal here.  Pure; tests/unit/test_bench. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "console_text.h"
#include "util.h"

/* An error quoted on a task's line, at most: the whole is in
 * results.jsonl and the task's run directory. */
#define WHY_MAX 300

/* text on one line of a terminal: controls escaped, and the newlines and
 * tabs text_escape keeps written as \n and a space. */
static char *one_line(const char *text) {
  char *e = text_escape_cstr(text);
  size_t n = 0;
  for (const char *p = e; *p; p++)
    n += *p == '\n';
  char *out = xmalloc(strlen(e) + n + 1), *q = out;
  for (const char *p = e; *p; p++) {
    if (*p == '\n') {
      *q++ = '\\';
      *q++ = 'n';
    } else {
      *q++ = *p == '\t' ? ' ' : *p;
    }
  }
  *q = '\0';
  free(e);
  return out;
}

static double num(const cJSON *line, const char *key, double dflt) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(line, key);
  return cJSON_IsNumber(v) && isfinite(v->valuedouble) ? v->valuedouble : dflt;
}

static const char *str(const cJSON *line, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(line, key);
  return cJSON_IsString(v) ? v->valuestring : NULL;
}

void bench_totals_add(struct bench_totals *t, const cJSON *line) {
  int end = bench_line_end(line);
  t->done++;
  t->errors += str(line, "error") != NULL;
  if (bench_end_measured(end)) {
    t->measured++;
    t->sum += num(line, "score", 0);
  }
  t->steps += (long)num(line, "steps", 0);
  double in = num(line, "tokens_in", -1), out = num(line, "tokens_out", -1), all = num(line, "tokens", -1);
  if (in >= 0 && out >= 0) {
    t->tokens_in += in;
    t->tokens_out += out;
  } else if (all >= 0) {
    /* A line of an older hutch: the sum only. */
    t->tokens_unsplit += all;
  }
  const cJSON *tm = cJSON_GetObjectItemCaseSensitive(line, "timings");
  t->model_seconds += num(tm, "model", 0);
  t->tool_seconds += num(tm, "tools", 0);
}

/* "1234 tokens", "56.7k tokens", "1.23M tokens" */
static char *tokens_text(double n) {
  if (n < 10000)
    return xasprintf("%.0f tokens", n);
  if (n < 1e6)
    return xasprintf("%.1fk tokens", n / 1e3);
  return xasprintf("%.2fM tokens", n / 1e6);
}

char *bench_task_line(size_t done, size_t total, const cJSON *line) {
  _cleanup_free_ char *id = one_line(str(line, "id") ? str(line, "id") : "?");
  int end = bench_line_end(line);
  const char *kind = end >= 0 ? bench_end_names[end] : "unknown end";
  _cleanup_free_ char *secs = console_seconds(num(line, "elapsed_seconds", 0));
  const char *e = str(line, "error");
  _cleanup_free_ char *cut = e ? xstrndup(e, WHY_MAX) : NULL;
  if (cut && strlen(e) > WHY_MAX) {
    /* Not in the middle of a character. */
    size_t n = strlen(cut);
    while (n > 0 && ((unsigned char)cut[n] & 0xC0) == 0x80)
      n--;
    cut[n] = '\0';
  }
  _cleanup_free_ char *why = cut ? one_line(cut) : NULL;
  const char *ellipsis = cut && strlen(e) > WHY_MAX ? "..." : "";
  if (!bench_end_measured(end))
    return xasprintf("[%zu/%zu] %s  not finished (%s)  %s: %s%s", done, total, id, kind, secs, why ? why : "",
                     ellipsis);
  _cleanup_free_ char *steps = cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(line, "steps"))
                                   ? xasprintf("  %ld steps", (long)num(line, "steps", 0))
                                   : xstrdup("");
  double tok = num(line, "tokens", -1);
  _cleanup_free_ char *tt = tok >= 0 ? tokens_text(tok) : NULL;
  _cleanup_free_ char *tokens = tt ? xasprintf("  %s", tt) : xstrdup("");
  if (end == BENCH_END_FINISHED && why == NULL)
    return xasprintf("[%zu/%zu] %s  score %.4f%s%s  %s", done, total, id, num(line, "score", 0), steps, tokens, secs);
  return xasprintf("[%zu/%zu] %s  score %.4f  %s%s%s  %s%s%s%s", done, total, id, num(line, "score", 0), kind, steps,
                   tokens, secs, why ? ": " : "", why ? why : "", ellipsis);
}

cJSON *bench_task_event(size_t done, size_t total, const cJSON *line) {
  cJSON *e = cJSON_CreateObject();
  cJSON_AddStringToObject(e, "event", "task");
  cJSON_AddNumberToObject(e, "done", (double)done);
  cJSON_AddNumberToObject(e, "total", (double)total);
  cJSON_AddStringToObject(e, "id", str(line, "id") ? str(line, "id") : "");
  int end = bench_line_end(line);
  cJSON_AddStringToObject(e, "end", end >= 0 ? bench_end_names[end] : "unknown");
  cJSON_AddBoolToObject(e, "measured", bench_end_measured(end));
  /* A score only where one was measured: an unfinished task has none. */
  if (bench_end_measured(end))
    cJSON_AddNumberToObject(e, "score", num(line, "score", 0));
  else
    cJSON_AddNullToObject(e, "score");
  cJSON_AddItemToObject(e, "error", str(line, "error") ? cJSON_CreateString(str(line, "error")) : cJSON_CreateNull());
  cJSON_AddNumberToObject(e, "elapsed_seconds", num(line, "elapsed_seconds", 0));
  static const char *const keys[] = {"steps", "tokens", "tokens_in", "tokens_out"};
  for (size_t k = 0; k < ARRAY_SIZE(keys); k++)
    if (num(line, keys[k], -1) >= 0)
      cJSON_AddNumberToObject(e, keys[k], num(line, keys[k], 0));
  const cJSON *run = cJSON_GetObjectItemCaseSensitive(line, "run_dir");
  if (cJSON_IsString(run))
    cJSON_AddStringToObject(e, "run_dir", run->valuestring);
  return e;
}

/* "45 s", "12m05s", "3h07m" */
static char *clock_text(double s) {
  long n = s > 0 ? (long)s : 0;
  if (n < 60)
    return xasprintf("%ld s", n);
  if (n < 3600)
    return xasprintf("%ldm%02lds", n / 60, n % 60);
  return xasprintf("%ldh%02ldm", n / 3600, n / 60 % 60);
}

char *bench_live_line(const struct bench_totals *t, size_t total, size_t running, double elapsed, size_t width) {
  char bar[21];
  size_t fill = total ? t->done * 20 / total : 20;
  for (size_t i = 0; i < 20; i++)
    bar[i] = i < fill ? '#' : '.';
  bar[20] = '\0';
  _cleanup_free_ char *clock = clock_text(elapsed);
  _cleanup_free_ char *mean =
      t->measured ? xasprintf("mean %.3f", t->sum / (double)t->measured) : xstrdup("no score yet");
  char *s = xasprintf("[%s] %zu/%zu  %zu running  %s  %d error%s  %s", bar, t->done, total, running, mean, t->errors,
                      t->errors == 1 ? "" : "s", clock);
  /* One line of the terminal: a longer one would wrap, and \r would then
   * redraw only its last row.  The text is ASCII. */
  if (width > 1 && strlen(s) >= width)
    s[width - 1] = '\0';
  return s;
}

char *bench_totals_line(const struct bench_totals *t) {
  double in_out = t->tokens_in + t->tokens_out;
  _cleanup_free_ char *all = tokens_text(in_out + t->tokens_unsplit);
  _cleanup_free_ char *split =
      in_out > 0 ? xasprintf(" (%.0f in, %.0f out)", t->tokens_in, t->tokens_out) : xstrdup("");
  _cleanup_free_ char *model = console_seconds(t->model_seconds);
  _cleanup_free_ char *tools = console_seconds(t->tool_seconds);
  return xasprintf("totals over %zu tasks: %ld steps, %s%s, model %s, tools %s", t->done, t->steps, all, split, model,
                   tools);
}

cJSON *bench_end_event(const struct bench_totals *t, const struct bench_status *st, double elapsed, int exit_code,
                       const char *out) {
  cJSON *e = cJSON_CreateObject();
  cJSON_AddStringToObject(e, "event", "end");
  cJSON_AddBoolToObject(e, "complete", st->complete);
  /* The mean only of a complete run: an incomplete one has no score. */
  if (st->complete && t->measured)
    cJSON_AddNumberToObject(e, "mean_score", t->sum / (double)t->measured);
  else
    cJSON_AddNullToObject(e, "mean_score");
  cJSON_AddNumberToObject(e, "tasks", (double)st->tasks);
  cJSON_AddNumberToObject(e, "measured", (double)t->measured);
  cJSON_AddNumberToObject(e, "errors", t->errors);
  cJSON *ends = cJSON_AddObjectToObject(e, "ends");
  for (int k = 0; k < BENCH_END_N; k++)
    cJSON_AddNumberToObject(ends, bench_end_names[k], (double)st->ends[k]);
  cJSON_AddNumberToObject(e, "not_run", (double)st->not_run);
  cJSON_AddItemToObject(e, "stopped", st->stopped ? cJSON_CreateString(st->stopped) : cJSON_CreateNull());
  cJSON_AddNumberToObject(e, "steps", (double)t->steps);
  cJSON_AddNumberToObject(e, "tokens", t->tokens_in + t->tokens_out + t->tokens_unsplit);
  cJSON_AddNumberToObject(e, "tokens_in", t->tokens_in);
  cJSON_AddNumberToObject(e, "tokens_out", t->tokens_out);
  cJSON_AddNumberToObject(e, "model_seconds", t->model_seconds);
  cJSON_AddNumberToObject(e, "tool_seconds", t->tool_seconds);
  cJSON_AddNumberToObject(e, "elapsed_seconds", elapsed);
  cJSON_AddNumberToObject(e, "exit_code", exit_code);
  cJSON_AddStringToObject(e, "output", out);
  return e;
}
