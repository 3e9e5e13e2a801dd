/* SPDX-License-Identifier: Apache-2.0
 *
 * report.html: the view of a run that report/page.html renders (the
 * templates, template.h).  report_view.c and report_step.c build it from
 * the run files, pure (no I/O, unit-tested); report.c reads the files,
 * renders and writes the page.  Every text in the view is what a model, a
 * sandbox or a task wrote, bounded, and goes into the page escaped. */
#ifndef HUTCH_BENCH_REPORT_H
#define HUTCH_BENCH_REPORT_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

#include "bench.h"
#include "error.h"

/* A text of the page at most this long (the rest: a note of how much more
 * there is in the run files), and all texts together at most the page's
 * budget: past it a text is only named. */
#define REPORT_TEXT_MAX ((size_t)64 << 10)
#define REPORT_TEXTS_MAX ((size_t)64 << 20)
/* A text longer than this (or of more lines) is folded under its label. */
#define REPORT_FOLD_CHARS 3000
#define REPORT_FOLD_LINES 40

/* What the view builders share: the texts' budget left. */
struct report_ctx {
  size_t budget;
};

/* o[key]: a finite number, else dflt. */
double report_num(const cJSON *o, const char *key, double dflt);
/* o[key] = the formatted text (numbers: at most 63 bytes). */
void report_addf(cJSON *o, const char *key, const char *fmt, ...) HUTCH_PRINTF(3, 4);
/* A text as the page shows it: {text, lines, long (folded), more (a note
 * of what was cut)}; NULL for NULL or "" (nothing to show). */
cJSON *report_text(struct report_ctx *c, const char *text);
/* The sums over a run's steps, and its run's. */
struct report_sums {
  long prompt_tokens, completion_tokens;
  bool has_usage;
  double model_seconds, tool_seconds;
  double cost;
  bool has_cost;
};
/* The steps' view (report_step.c), in order, adding to *sums (model time:
 * once per reply; tokens and cost: where the step's metadata has them). */
cJSON *report_steps_view(struct report_ctx *c, const cJSON *steps, struct report_sums *sums);
/* The lines of an edit as a diff: [{cls: "ctx"|"del"|"add", text: sign,
 * line, "\n"}], the lines both sides share at the start and the end as
 * context. */
cJSON *report_diff(const char *old_text, const char *new_text);

/* A task's result: "pass" (its range's top score), "fail" (its bottom),
 * "partial" (between) or "error" (error not NULL). */
const char *report_result(double score, const char *error, const struct bench_range *r);
/* An error's kind, from how hutch benchmark words it: "reward",
 * "verifier", "timeout", "api", "agent", "worker", "answer", "input",
 * "prompt" or "other". */
const char *report_error_kind(const char *error);
/* The kind of a results.jsonl line's error: its "end" (how hutch benchmark
 * says the task ended) when it is a word other than "finished", else
 * report_error_kind of its error. */
const char *report_line_kind(const cJSON *line);
/* An id as a fragment of the page (task-ID, row-ID): letters, digits, '_'
 * and '-' as they are, any other byte as .XX. */
char *report_anchor(const char *id);
/* Ids in natural order (task_2 before task_10). */
int report_natural_cmp(const char *a, const char *b);
/* A run's wall time: hutch.timings saved - begin, exact; else the last
 * step's elapsed (time since the run began), a lower bound (*exact false);
 * -1 when neither is there.  Never the sum of the steps' elapsed, each of
 * which is already a time since the start. */
double report_run_seconds(const cJSON *traj, bool *exact);

/* One task of a page: its result line (NULL for a lone hutch run), its
 * run's trajectory.json (NULL when it has none), its images (taken), its
 * answer (a lone run's files/answer.txt; else the line's). */
struct report_task {
  const cJSON *line;
  const cJSON *traj;
  cJSON *images;
  const char *name; /* a lone run's: its directory's name */
  const char *answer;
};
/* The task's detail view, with *sums its totals. */
cJSON *report_task_view(struct report_ctx *c, const struct report_task *t, const struct bench_range *r,
                        struct report_sums *sums);
/* The page of a benchmark: meta (benchmark.json, checked), the tasks' lines
 * sorted by id, their detail views and sums (one each), the run's time (-1:
 * not known); nonce: the page's script's. */
cJSON *report_bench_view(const struct bench_meta *m, const cJSON *lines, cJSON *details, const struct report_sums *sums,
                         double elapsed, const char *nonce);
/* The page of a lone hutch run. */
cJSON *report_run_view(cJSON *detail, const struct report_task *t, const struct report_sums *sums, const char *nonce);

#endif
