/* SPDX-License-Identifier: Apache-2.0 */
/* hutch benchmark's terminal text (progress_text.c): a task's line says how
 * it ended, with its score only where one was measured, escaped and on one
 * line; the live line fits the terminal; the totals add up every task's
 * steps, tokens, model and tool time; the events carry no unmeasured
 * score. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "tap.h"
#include "util.h"

static void check(char *got, const char *want, const char *desc) {
  tap_is_str(got, want, "%s", desc);
  free(got);
}

static cJSON *parse(const char *text) {
  cJSON *j = cJSON_Parse(text);
  tap_ok(j != NULL, "the line parses: %.60s", text);
  return j;
}

static void task_lines(void) {
  cJSON *ok = parse("{\"id\": \"t1\", \"score\": 1, \"error\": null, \"end\": \"finished\", \"elapsed_seconds\": 2.5,"
                    " \"steps\": 4, \"tokens\": 1234, \"tokens_in\": 1200, \"tokens_out\": 34,"
                    " \"timings\": {\"model\": 1.5, \"tools\": 0.5}}");
  check(bench_task_line(3, 20, ok), "[3/20] t1  score 1.0000  4 steps  1234 tokens  2.50 s",
        "a finished task: score, steps, tokens, time");
  cJSON *to = parse("{\"id\": \"t2\", \"score\": 0, \"error\": \"Timeout\", \"end\": \"timeout\","
                    " \"elapsed_seconds\": 60, \"steps\": 9, \"tokens\": 56789}");
  check(bench_task_line(4, 20, to), "[4/20] t2  score 0.0000  timeout  9 steps  56.8k tokens  60.0 s: Timeout",
        "a measured error: its kind and why, after the score");
  cJSON *api = parse("{\"id\": \"t3\", \"score\": 0, \"error\": \"HTTP 502\", \"end\": \"api_error\","
                     " \"elapsed_seconds\": 0.2}");
  check(bench_task_line(5, 20, api), "[5/20] t3  not finished (api_error)  0.20 s: HTTP 502",
        "an unfinished task has no score on its line");
  cJSON *bad =
      parse("{\"id\": \"x\\u001b[2J\\u202e\", \"score\": 0, \"error\": \"reward: \\u001b]0;t\\u0007\\nline 2\","
            " \"end\": \"scoring_error\", \"elapsed_seconds\": 1}");
  char *line = bench_task_line(1, 1, bad);
  tap_ok(strchr(line, '\033') == NULL && strchr(line, '\n') == NULL && strchr(line, '\a') == NULL,
         "an id and an error of the sandbox's: no ESC, BEL or newline reaches the terminal");
  tap_ok(strstr(line, "\xe2\x80\xae") == NULL, "nor a bidirectional override");
  tap_ok(strstr(line, "\\x1b[2J") != NULL, "they are written escaped: %s", line);
  free(line);
  char big[2000];
  memset(big, 'e', sizeof(big) - 1);
  big[sizeof(big) - 1] = '\0';
  cJSON *longer = cJSON_CreateObject();
  cJSON_AddStringToObject(longer, "id", "t4");
  cJSON_AddNumberToObject(longer, "score", 0);
  cJSON_AddStringToObject(longer, "error", big);
  cJSON_AddStringToObject(longer, "end", "task_error");
  line = bench_task_line(1, 1, longer);
  tap_ok(strlen(line) < 400 && strcmp(line + strlen(line) - 3, "...") == 0,
         "a long error is cut, ... marking the cut (%zu characters)", strlen(line));
  free(line);
  cJSON *old = parse("{\"id\": \"t5\", \"score\": 1, \"error\": null, \"elapsed_seconds\": 1}");
  check(bench_task_line(2, 2, old), "[2/2] t5  score 1.0000  1.00 s", "a line of an older hutch: no steps or tokens");

  cJSON *ev = bench_task_event(5, 20, api);
  tap_ok(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(ev, "score")), "the event of an unfinished task: score null");
  tap_ok(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(ev, "measured")), "and measured false");
  tap_is_str(cJSON_GetObjectItemCaseSensitive(ev, "end")->valuestring, "api_error", "its end kind");
  cJSON_Delete(ev);
  ev = bench_task_event(3, 20, ok);
  tap_ok(cJSON_GetObjectItemCaseSensitive(ev, "score")->valuedouble == 1 &&
             cJSON_GetObjectItemCaseSensitive(ev, "tokens_in")->valuedouble == 1200 &&
             cJSON_GetObjectItemCaseSensitive(ev, "steps")->valuedouble == 4,
         "a finished task's event: score, tokens in, steps");
  cJSON_Delete(ev);

  struct bench_totals t = {0};
  bench_totals_add(&t, ok);
  bench_totals_add(&t, to);
  bench_totals_add(&t, api);
  bench_totals_add(&t, old);
  tap_ok(t.done == 4 && t.measured == 3 && t.sum == 2 && t.errors == 2 && t.steps == 13,
         "totals: 4 done, 3 measured, sum 2, 2 errors, 13 steps");
  check(bench_totals_line(&t),
        "totals over 4 tasks: 13 steps, 58.0k tokens (1200 in, 34 out), model 1.50 s, tools 0.50 s",
        "the totals' line: tokens with the split where known, model and tool time");
  check(bench_live_line(&t, 20, 2, 65, 0), "[####................] 4/20  2 running  mean 0.667  2 errors  1m05s",
        "the live line: bar, done, running, mean of the measured, errors, clock");
  char *live = bench_live_line(&t, 20, 2, 65, 30);
  tap_is_int((int)strlen(live), 29, "cut to the terminal's width less one: no wrap");
  free(live);
  struct bench_totals none = {0};
  check(bench_live_line(&none, 3, 1, 7200, 0), "[....................] 0/3  1 running  no score yet  0 errors  2h00m",
        "before any score: no mean");

  struct bench_status st = {.complete = false, .tasks = 20, .stopped = "interrupted"};
  ev = bench_end_event(&t, &st, 12.5, 130, "/out");
  tap_ok(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(ev, "mean_score")), "an incomplete run's end event: no mean");
  tap_ok(cJSON_GetObjectItemCaseSensitive(ev, "exit_code")->valuedouble == 130, "its exit status");
  cJSON_Delete(ev);
  st.complete = true;
  ev = bench_end_event(&t, &st, 12.5, 0, "/out");
  tap_ok(cJSON_GetObjectItemCaseSensitive(ev, "mean_score")->valuedouble == 2.0 / 3, "a complete run's: the mean");
  cJSON_Delete(ev);
  cJSON_Delete(ok);
  cJSON_Delete(to);
  cJSON_Delete(api);
  cJSON_Delete(bad);
  cJSON_Delete(longer);
  cJSON_Delete(old);
}

int main(void) {
  task_lines();
  return tap_done();
}
