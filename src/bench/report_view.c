/* SPDX-License-Identifier: Apache-2.0
 *
 * report.html's view of a run (report.h): a benchmark's totals, score
 * distribution, error kinds and one row per task, pass and fail by score
 * and error kind; each task's detail (its problem, answer, truth, totals,
 * steps and images); or a lone hutch run's.  Pure. */
#include "config.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "report.h"
#include "util.h"

const char *report_result(double score, const char *error, const struct bench_range *r) {
  if (error)
    return "error";
  if (score >= r->max)
    return "pass";
  if (score <= r->min)
    return "fail";
  return "partial";
}

const char *report_error_kind(const char *error) {
  static const struct {
    const char *prefix, *kind;
  } kinds[] = {
      {"reward: ", "reward"},
      {"verifier: ", "verifier"},
      {"Timeout", "timeout"},
      {"AuthenticationError", "api"},
      {"the model's API failed", "api"},
      {"hutch run exited with status", "agent"},
      {"the worker of this task ended", "worker"},
      {"answer.txt ", "answer"},
      {"input_files", "input"},
      {"vanilla_llm_prompt.py: ", "prompt"},
  };
  for (size_t i = 0; error && i < sizeof(kinds) / sizeof(*kinds); i++)
    if (strncmp(error, kinds[i].prefix, strlen(kinds[i].prefix)) == 0)
      return kinds[i].kind;
  return "other";
}

const char *report_line_kind(const cJSON *line) {
  /* The line's own word for how its task ended, when it has one (a word of
   * at most 32 letters, digits and '_'), else the error's wording's. */
  const cJSON *end = cJSON_GetObjectItemCaseSensitive(line, "end");
  const cJSON *e = cJSON_GetObjectItemCaseSensitive(line, "error");
  if (cJSON_IsString(end) && strcmp(end->valuestring, "finished") != 0) {
    size_t n = strlen(end->valuestring);
    bool word = n > 0 && n <= 32;
    for (size_t i = 0; word && i < n; i++)
      word = isalnum((unsigned char)end->valuestring[i]) || end->valuestring[i] == '_';
    if (word)
      return end->valuestring;
  }
  return report_error_kind(cJSON_IsString(e) ? e->valuestring : NULL);
}

char *report_anchor(const char *id) {
  size_t n = strlen(id);
  char *out = xmalloc(n * 3 + 1), *o = out;
  for (const unsigned char *p = (const unsigned char *)id; *p; p++) {
    if (isalnum(*p) || *p == '_' || *p == '-')
      *o++ = (char)*p;
    else
      o += sprintf(o, ".%02x", *p);
  }
  *o = '\0';
  return out;
}

int report_natural_cmp(const char *a, const char *b) {
  while (*a && *b) {
    if (isdigit((unsigned char)*a) && isdigit((unsigned char)*b)) {
      /* Runs of digits by value: leading zeros skipped, then the longer
       * run is the larger number, then digit by digit. */
      while (*a == '0' && isdigit((unsigned char)a[1]))
        a++;
      while (*b == '0' && isdigit((unsigned char)b[1]))
        b++;
      size_t la = 0, lb = 0;
      while (isdigit((unsigned char)a[la]))
        la++;
      while (isdigit((unsigned char)b[lb]))
        lb++;
      if (la != lb)
        return la < lb ? -1 : 1;
      int c = memcmp(a, b, la);
      if (c)
        return c;
      a += la, b += lb;
      continue;
    }
    if (*a != *b)
      return (unsigned char)*a < (unsigned char)*b ? -1 : 1;
    a++, b++;
  }
  return (unsigned char)*a < (unsigned char)*b ? -1 : (unsigned char)*a > (unsigned char)*b;
}

static const char *str(const cJSON *o, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsString(v) ? v->valuestring : NULL;
}

double report_run_seconds(const cJSON *traj, bool *exact) {
  const cJSON *tm = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(traj, "hutch"), "timings");
  double begin = report_num(tm, "begin", -1), saved = report_num(tm, "saved", -1);
  *exact = true;
  if (begin >= 0 && saved >= begin)
    return saved - begin;
  *exact = false;
  const cJSON *steps = cJSON_GetObjectItemCaseSensitive(traj, "steps");
  const cJSON *last = cJSON_GetArrayItem(steps, cJSON_GetArraySize(steps) - 1);
  return report_num(cJSON_GetObjectItemCaseSensitive(last, "metadata"), "elapsed", -1);
}

/* A row of a totals table: {name, value}, its value for the caller to add. */
static cJSON *total(cJSON *list, const char *name) {
  cJSON *e = cJSON_CreateObject();
  cJSON_AddStringToObject(e, "name", name);
  cJSON_AddItemToArray(list, e);
  return e;
}

static void total_str(cJSON *list, const char *name, const char *value) {
  cJSON_AddStringToObject(total(list, name), "value", value);
}

/* Tokens, model and tool time, and cost, the totals of a task or a run. */
static void sums_totals(cJSON *list, const struct report_sums *s) {
  if (s->has_usage) {
    report_addf(total(list, "tokens in"), "value", "%ld", s->prompt_tokens);
    report_addf(total(list, "tokens out"), "value", "%ld", s->completion_tokens);
  }
  report_addf(total(list, "model time"), "value", "%.3f s", s->model_seconds);
  report_addf(total(list, "tool time"), "value", "%.3f s", s->tool_seconds);
  if (s->has_cost)
    report_addf(total(list, "cost"), "value", "%.6g", s->cost);
}

static char *text_of(const cJSON *v) {
  if (v == NULL || cJSON_IsNull(v))
    return xstrdup("");
  return cJSON_IsString(v) ? xstrdup(v->valuestring) : cJSON_PrintUnformatted(v);
}

/* A table cell's short form of a text: its first 80 characters, on one
 * line. */
static char *cell(const char *text) {
  size_t n = 0, chars = 0;
  while (text[n] && chars < 80) {
    uint32_t cp;
    size_t k = utf8_decode((const unsigned char *)text + n, strlen(text + n), &cp);
    n += k ? k : 1;
    chars++;
  }
  char *out = xasprintf("%.*s%s", (int)n, text, text[n] ? "\xe2\x80\xa6" : "");
  for (char *p = out; *p; p++)
    if (*p == '\n' || *p == '\r' || *p == '\t')
      *p = ' ';
  return out;
}

cJSON *report_task_view(struct report_ctx *c, const struct report_task *t, const struct bench_range *r,
                        struct report_sums *sums) {
  memset(sums, 0, sizeof(*sums));
  cJSON *v = cJSON_CreateObject();
  const cJSON *h = cJSON_GetObjectItemCaseSensitive(t->traj, "hutch");
  const char *id = t->line ? str(t->line, "id") : t->name;
  _cleanup_free_ char *anchor = report_anchor(id);
  cJSON_AddStringToObject(v, "id", id);
  cJSON_AddStringToObject(v, "anchor", anchor);
  const char *error = t->line ? str(t->line, "error") : NULL;
  if (t->line) {
    double score = report_num(t->line, "score", 0);
    const char *result = report_result(score, error, r);
    cJSON_AddStringToObject(v, "result", result);
    const char *kind = error ? report_line_kind(t->line) : NULL;
    _cleanup_free_ char *label = kind ? xasprintf("error: %s", kind) : xstrdup(result);
    cJSON_AddStringToObject(v, "result_text", label);
    report_addf(v, "score", "%.4f", score);
    cJSON_AddItemToObject(v, "problem", report_text(c, str(t->line, "problem_statement")));
    _cleanup_free_ char *truth = text_of(cJSON_GetObjectItemCaseSensitive(t->line, "ground_truth"));
    cJSON *tt = report_text(c, truth);
    if (tt)
      cJSON_AddItemToObject(v, "truth", tt);
    cJSON *e = report_text(c, error);
    if (e)
      cJSON_AddItemToObject(v, "error", e);
  } else {
    /* A lone run has no score: its badge says how it ended. */
    const char *end = str(h, "end_reason");
    cJSON_AddStringToObject(v, "result",
                            end == NULL || strcmp(end, "error") == 0 || strcmp(end, "interrupted") == 0 ? "error"
                            : strcmp(end, "submitted") == 0                                             ? "done"
                                                                                                        : "unfinished");
    cJSON_AddStringToObject(v, "result_text", end ? end : "no end recorded");
    cJSON_AddTrueToObject(v, "open");
    cJSON *p = report_text(c, str(t->traj, "problem_statement"));
    if (p)
      cJSON_AddItemToObject(v, "problem", p);
  }
  const char *answer = t->line ? str(t->line, "agent_answer") : t->answer;
  cJSON *a = report_text(c, answer);
  if (a)
    cJSON_AddItemToObject(v, "answer", a);
  const cJSON *steps = cJSON_GetObjectItemCaseSensitive(t->traj, "steps");
  cJSON_AddItemToObject(v, "steps", report_steps_view(c, steps, sums));
  /* The endpoint's own count, where the steps have none (a run of an older
   * hutch, or a step that was not a model call's). */
  const cJSON *usage = cJSON_GetObjectItemCaseSensitive(h, "usage");
  if (!sums->has_usage && cJSON_IsObject(usage)) {
    sums->prompt_tokens = (long)report_num(usage, "prompt_tokens", 0);
    sums->completion_tokens = (long)report_num(usage, "completion_tokens", 0);
    sums->has_usage = true;
  }
  if (!sums->has_cost && report_num(usage, "cost", -1) >= 0) {
    sums->cost = report_num(usage, "cost", 0);
    sums->has_cost = true;
  }
  cJSON *totals = cJSON_AddArrayToObject(cJSON_AddObjectToObject(v, "task_totals"), "list");
  const char *end = str(h, "end_reason");
  total_str(totals, "end", end ? end : t->traj ? "(not recorded)" : "(no trajectory.json)");
  report_addf(total(totals, "steps"), "value", "%d", cJSON_GetArraySize(steps));
  bool exact = true;
  double secs = t->line ? report_num(t->line, "elapsed_seconds", -1) : report_run_seconds(t->traj, &exact);
  if (secs >= 0)
    report_addf(total(totals, "time"), "value", exact ? "%.1f s" : "at least %.1f s", secs);
  sums_totals(totals, sums);
  if (t->line) {
    double code = report_num(t->line, "exit_code", -1);
    if (code >= 0)
      report_addf(total(totals, "hutch run's exit status"), "value", "%.0f", code);
    const char *rd = str(t->line, "run_dir");
    if (rd)
      total_str(totals, "run directory", rd);
  } else {
    _cleanup_free_ char *shown = cell(answer ? answer : "");
    total_str(totals, "answer", shown);
  }
  /* The row of the task table (a benchmark's). */
  if (t->line) {
    cJSON *row = cJSON_AddObjectToObject(v, "row");
    cJSON_AddNumberToObject(row, "score_raw", report_num(t->line, "score", 0));
    cJSON_AddNumberToObject(row, "time_raw", secs >= 0 ? secs : 0);
    report_addf(row, "time", "%.1f s", secs >= 0 ? secs : 0);
    cJSON_AddNumberToObject(row, "steps", cJSON_GetArraySize(steps));
    double tokens =
        report_num(t->line, "tokens", sums->has_usage ? (double)(sums->prompt_tokens + sums->completion_tokens) : -1);
    cJSON_AddNumberToObject(row, "tokens_raw", tokens >= 0 ? tokens : 0);
    if (tokens >= 0)
      report_addf(row, "tokens", "%.0f", tokens);
    _cleanup_free_ char *status = cell(error ? error : end ? end : "");
    cJSON_AddStringToObject(row, "status", status);
    if (error)
      cJSON_AddStringToObject(row, "kind", report_line_kind(t->line));
    _cleanup_free_ char *ans = cell(answer ? answer : "");
    _cleanup_free_ char *truth_text = text_of(cJSON_GetObjectItemCaseSensitive(t->line, "ground_truth"));
    _cleanup_free_ char *truth = cell(truth_text);
    cJSON_AddStringToObject(row, "answer", ans);
    cJSON_AddStringToObject(row, "truth", truth);
  }
  cJSON_AddItemToObject(v, "images", t->images ? t->images : cJSON_CreateArray());
  return v;
}

/* The scores' distribution: a bar per score when there are few distinct
 * ones, else ten bins over the range; the errors apart. */
static cJSON *distribution(const cJSON *lines, const struct bench_range *r) {
  double vals[10];
  int counts[10] = {0}, n_vals = 0, most = 0;
  bool binned = false;
  const cJSON *l;
  cJSON_ArrayForEach(l, lines) {
    if (str(l, "error"))
      continue;
    double s = report_num(l, "score", 0);
    int i = 0;
    while (i < n_vals && vals[i] != s)
      i++;
    if (i == n_vals) {
      if (n_vals == 10) {
        binned = true;
        break;
      }
      vals[n_vals++] = s;
    }
    counts[i]++;
  }
  if (binned) {
    n_vals = 10;
    memset(counts, 0, sizeof(counts));
    cJSON_ArrayForEach(l, lines) {
      if (str(l, "error"))
        continue;
      int i = (int)floor((report_num(l, "score", 0) - r->min) / (r->max - r->min) * 10);
      counts[i < 0 ? 0 : i > 9 ? 9 : i]++;
    }
  } else {
    /* Few scores: in order. */
    for (int i = 1; i < n_vals; i++)
      for (int j = i; j > 0 && vals[j - 1] > vals[j]; j--) {
        double v = vals[j];
        vals[j] = vals[j - 1], vals[j - 1] = v;
        int c = counts[j];
        counts[j] = counts[j - 1], counts[j - 1] = c;
      }
  }
  for (int i = 0; i < n_vals; i++)
    most = counts[i] > most ? counts[i] : most;
  cJSON *list = cJSON_CreateArray();
  for (int i = 0; i < n_vals; i++) {
    cJSON *b = cJSON_CreateObject();
    double lo = binned ? r->min + (r->max - r->min) * i / 10 : vals[i];
    double hi = binned ? r->min + (r->max - r->min) * (i + 1) / 10 : vals[i];
    char label[80];
    if (binned)
      snprintf(label, sizeof(label), "%.4g\xe2\x80\x93%.4g", lo, hi);
    else
      snprintf(label, sizeof(label), "%.4f", vals[i]);
    cJSON_AddStringToObject(b, "label", label);
    cJSON_AddNumberToObject(b, "count", counts[i]);
    cJSON_AddNumberToObject(b, "width", most ? 2 + 198.0 * counts[i] / most : 0);
    cJSON_AddStringToObject(b, "cls", hi >= r->max ? "pass" : lo <= r->min ? "fail" : "partial");
    cJSON_AddItemToArray(list, b);
  }
  return list;
}

/* The error kinds, counted, each with its first task's error. */
static cJSON *error_kinds(const cJSON *lines) {
  cJSON *list = cJSON_CreateArray();
  const cJSON *l;
  cJSON_ArrayForEach(l, lines) {
    const char *e = str(l, "error");
    if (e == NULL)
      continue;
    const char *kind = report_line_kind(l);
    cJSON *k;
    cJSON_ArrayForEach(k, list) if (strcmp(str(k, "kind"), kind) == 0) break;
    if (k == NULL) {
      k = cJSON_CreateObject();
      cJSON_AddStringToObject(k, "kind", kind);
      cJSON_AddNumberToObject(k, "count", 0);
      _cleanup_free_ char *ex = cell(e);
      cJSON_AddStringToObject(k, "example", ex);
      cJSON_AddStringToObject(k, "example_id", str(l, "id"));
      cJSON_AddItemToArray(list, k);
    }
    cJSON_SetNumberValue(cJSON_GetObjectItemCaseSensitive(k, "count"),
                         cJSON_GetObjectItemCaseSensitive(k, "count")->valuedouble + 1);
  }
  return list;
}

static cJSON *page(const char *title, const char *nonce) {
  cJSON *v = cJSON_CreateObject();
  cJSON_AddStringToObject(v, "title", title);
  cJSON_AddStringToObject(v, "nonce", nonce);
  return v;
}

cJSON *report_bench_view(const struct bench_meta *m, const cJSON *lines, cJSON *details, const struct report_sums *sums,
                         double elapsed, const char *nonce) {
  _cleanup_free_ char *title = xasprintf("hutch benchmark: %s \xe2\x80\x94 %s (%s)", m->task, m->llm_name, m->mode);
  cJSON *v = page(title, nonce);
  cJSON *b = cJSON_AddObjectToObject(v, "bench");
  cJSON_AddStringToObject(b, "task", m->task);
  cJSON_AddStringToObject(b, "model", m->llm_name);
  cJSON_AddStringToObject(b, "mode", m->mode);
  int n = cJSON_GetArraySize(lines), pass = 0, fail = 0, partial = 0, errors = 0;
  double sum = 0;
  struct report_sums all = {0};
  const cJSON *l;
  int i = 0;
  cJSON_ArrayForEach(l, lines) {
    const char *res = report_result(report_num(l, "score", 0), str(l, "error"), &m->range);
    pass += strcmp(res, "pass") == 0;
    fail += strcmp(res, "fail") == 0;
    partial += strcmp(res, "partial") == 0;
    errors += strcmp(res, "error") == 0;
    sum += report_num(l, "score", 0);
    const struct report_sums *s = &sums[i++];
    all.prompt_tokens += s->prompt_tokens;
    all.completion_tokens += s->completion_tokens;
    all.has_usage |= s->has_usage;
    all.model_seconds += s->model_seconds;
    all.tool_seconds += s->tool_seconds;
    all.cost += s->cost;
    all.has_cost |= s->has_cost;
  }
  cJSON *totals = cJSON_AddArrayToObject(v, "totals");
  report_addf(total(totals, "tasks"), "value", "%d", n);
  /* As LLM-in-Sandbox's mean_score: over every task, an error's 0 too. */
  report_addf(total(totals, "mean score"), "value", "%.4f", n ? sum / n : 0);
  report_addf(total(totals, "passed"), "value", "%d", pass);
  report_addf(total(totals, "partial"), "value", "%d", partial);
  report_addf(total(totals, "failed"), "value", "%d", fail);
  report_addf(total(totals, "errors"), "value", "%d", errors);
  if (elapsed >= 0)
    report_addf(total(totals, "time"), "value", "%.1f s", elapsed);
  else
    total_str(totals, "time", "(not recorded: no results.json)");
  sums_totals(totals, &all);
  if (m->merged_from)
    report_addf(total(totals, "merged from shards"), "value", "%d", cJSON_GetArraySize(m->merged_from));
  else if (m->shard_n > 1)
    report_addf(total(totals, "shard"), "value", "%ld of %ld (0-based)", m->shard_k, m->shard_n);
  /* Objects around the lists, for the templates to show a table once
   * (a section over a list repeats). */
  cJSON *dist = cJSON_AddObjectToObject(b, "distribution");
  cJSON_AddItemToObject(dist, "bins", distribution(lines, &m->range));
  cJSON_AddNumberToObject(dist, "errors", errors);
  cJSON *kinds = error_kinds(lines);
  if (cJSON_GetArraySize(kinds) > 0)
    cJSON_AddItemToObject(cJSON_AddObjectToObject(b, "errors"), "kinds", kinds);
  else
    cJSON_Delete(kinds);
  /* The rows: each task's detail's row, with its id, anchor and result. */
  cJSON *rows = cJSON_AddArrayToObject(b, "rows");
  cJSON *d;
  cJSON_ArrayForEach(d, details) {
    cJSON *row = cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(d, "row"), true);
    static const char *const keys[] = {"id", "anchor", "result", "result_text", "score"};
    for (size_t k = 0; k < sizeof(keys) / sizeof(*keys); k++)
      cJSON_AddItemToObject(row, keys[k], cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(d, keys[k]), true));
    cJSON_AddItemToArray(rows, row);
  }
  cJSON_AddItemToObject(v, "tasks", details);
  return v;
}

cJSON *report_run_view(cJSON *detail, const struct report_task *t, const struct report_sums *sums, const char *nonce) {
  (void)sums;
  const char *model = str(cJSON_GetObjectItemCaseSensitive(t->traj, "hutch"), "model");
  _cleanup_free_ char *title = xasprintf("hutch run: %s \xe2\x80\x94 %s", t->name, model ? model : "?");
  cJSON *v = page(title, nonce);
  cJSON *totals = cJSON_DetachItemFromObjectCaseSensitive(detail, "task_totals");
  cJSON_AddItemToObject(v, "totals", cJSON_DetachItemFromObjectCaseSensitive(totals, "list"));
  cJSON_Delete(totals);
  cJSON *tasks = cJSON_AddArrayToObject(v, "tasks");
  cJSON_AddItemToArray(tasks, detail);
  return v;
}
