/* SPDX-License-Identifier: Apache-2.0
 *
 * report.html's pure parts: the templates' Mustache subset (every value
 * escaped, a malformed template refused), and the view of a run (results by
 * score and error kind, a run's time, the steps' calls, diffs, tokens and
 * latency counted once per reply, texts bounded). */
#include "config.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"
#include "tap.h"
#include "template.h"
#include "util.h"

/* tmpl rendered with the view given as JSON text; "ERROR: msg" on failure. */
static char *render(const char *tmpl, const char *view_json, const char *partials_json, size_t max) {
  cJSON *view = cJSON_Parse(view_json);
  cJSON *partials = partials_json ? cJSON_Parse(partials_json) : NULL;
  hutch_error_t err = NULL;
  size_t len = 0;
  char *out = tmpl_render("t.html", tmpl, view, partials, max, &len, &err);
  cJSON_Delete(view);
  cJSON_Delete(partials);
  if (out == NULL) {
    out = xasprintf("ERROR %d: %s", err ? err->errnum : 0, err ? err->msg : "(none)");
    hutch_error_free(&err);
  } else if (strlen(out) != len) {
    free(out);
    out = xstrdup("ERROR: the length is not the text's");
  }
  return out;
}

static void check(char *got, const char *want, const char *what) {
  tap_is_str(got, want, "%s", what);
  free(got);
}

static void templates(void) {
  check(render("<p title=\"{{a}}\">{{a}}</p>", "{\"a\": \"</script><img src=x onerror='alert(1)'> & \\\"q\\\"\"}", NULL,
               1 << 20),
        "<p title=\"&lt;/script&gt;&lt;img src=x onerror=&#39;alert(1)&#39;&gt; &amp; &quot;q&quot;\">"
        "&lt;/script&gt;&lt;img src=x onerror=&#39;alert(1)&#39;&gt; &amp; &quot;q&quot;</p>",
        "a value is escaped for text and for a quoted attribute: no tag, no quote of it survives");
  check(render("{{{a}}}", "{\"a\": \"<b>\"}", NULL, 1 << 20),
        "ERROR 22: report/t.html: at offset 0: a tag's name holds a character other than letters, digits, '.', '_', "
        "'-'",
        "there is no unescaped {{{name}}}");
  check(render("{{&a}}", "{\"a\": \"<b>\"}", NULL, 1 << 20),
        "ERROR 22: report/t.html: at offset 0: a tag's name holds a character other than letters, digits, '.', '_', "
        "'-'",
        "nor {{&name}}");
  check(render("{{n}} {{f}} {{t}} {{z}} {{missing}}|", "{\"n\": 42, \"f\": 0.25, \"t\": true, \"z\": null}", NULL,
               1 << 20),
        "42 0.25 true  |", "numbers as numbers; true; null and a missing name are nothing");
  check(render("{{#l}}[{{x}}]{{/l}}{{^l}}none{{/l}}", "{\"l\": [{\"x\": 1}, {\"x\": \"<\"}]}", NULL, 1 << 20),
        "[1][&lt;]", "a section over a list repeats with each element as the context");
  check(render("{{#l}}[{{x}}]{{/l}}{{^l}}none{{/l}}", "{\"l\": []}", NULL, 1 << 20), "none",
        "an empty list: only the inverted section");
  check(render("{{#o}}{{x}}-{{y}}{{/o}}", "{\"o\": {\"x\": \"in\"}, \"y\": \"out\"}", NULL, 1 << 20), "in-out",
        "an object's section: names looked up from it outwards");
  check(render("{{#s}}<{{.}}>{{/s}}{{#b}}B{{/b}}{{#f}}F{{/f}}{{#e}}E{{/e}}{{#zero}}Z{{/zero}}",
               "{\"s\": \"str\", \"b\": true, \"f\": false, \"e\": \"\", \"zero\": 0}", NULL, 1 << 20),
        "<str>B", "a string, true: once; false, \"\" and 0: not at all");
  check(render("{{a.b.c}}", "{\"a\": {\"b\": {\"c\": \"deep\"}}}", NULL, 1 << 20), "deep", "dotted names");
  check(render("{{#a}}({{#a}}x{{/a}}){{/a}}", "{\"a\": {\"a\": true}}", NULL, 1 << 20), "(x)",
        "a section of the same name inside its own is matched by depth");
  check(render("{{! a comment }}<{{>p.html}}>", "{\"v\": \"<v>\"}", "{\"p.html\": \"[{{v}}]\"}", 1 << 20),
        "<[&lt;v&gt;]>", "a partial, rendered in the context; a comment is nothing");
  check(render("{{>q.html}}", "{}", "{\"p.html\": \"x\"}", 1 << 20),
        "ERROR 22: report/t.html: at offset 0: a partial that is not among the report's files",
        "an unknown partial is an error");
  char *r = render("{{>p.html}}", "{}", "{\"p.html\": \"{{>p.html}}\"}", 1 << 20);
  tap_ok(strstr(r, "nested too deep") != NULL, "a partial that includes itself ends at the nesting bound: %s", r);
  free(r);
  check(render("a {{#l}}x", "{\"l\": true}", NULL, 1 << 20),
        "ERROR 22: report/t.html: at offset 2: a section without its end", "an unclosed section is an error");
  check(render("a {{/l}}", "{}", NULL, 1 << 20),
        "ERROR 22: report/t.html: at offset 2: a section's end without its start", "a stray end is an error");
  check(render("a {{x", "{}", NULL, 1 << 20), "ERROR 22: report/t.html: at offset 2: {{ without }}",
        "an unclosed tag is an error");
  check(render("{{#l}}0123456789{{/l}}", "{\"l\": [1, 2, 3]}", NULL, 25),
        "ERROR 27: report.html would be larger than 25 bytes", "the page's size is bounded (EFBIG)");
}

static void results(void) {
  struct bench_range r01 = {0, 1}, r10 = {0, 10};
  tap_is_str(report_result(1, NULL, &r01), "pass", "the range's top score passes");
  tap_is_str(report_result(0, NULL, &r01), "fail", "its bottom fails (answer 7 for truth 12: no pass)");
  tap_is_str(report_result(0.5, NULL, &r01), "partial", "between: partial");
  tap_is_str(report_result(1, NULL, &r10), "partial", "1 of [0, 10] is partial");
  tap_is_str(report_result(1, "reward: x", &r01), "error", "an error is an error whatever its score");
  static const char *const errors[][2] = {
      {"reward: ValueError: bad", "reward"},
      {"verifier: scored 1e+300, outside the task set's score range [0, 1]", "verifier"},
      {"Timeout", "timeout"},
      {"AuthenticationError: the model's API refused the key (HTTP 401/403)", "api"},
      {"hutch run exited with status 3 (see logs/x.txt)", "agent"},
      {"the worker of this task ended with status 9", "worker"},
      {"answer.txt is larger than 1048576 bytes", "answer"},
      {"input_files is not an object of file names and contents", "input"},
      {"vanilla_llm_prompt.py: boom", "prompt"},
      {"something new", "other"},
  };
  for (size_t i = 0; i < sizeof(errors) / sizeof(*errors); i++)
    tap_is_str(report_error_kind(errors[i][0]), errors[i][1], "error kind of '%s'", errors[i][0]);
  static const char *const lines[][2] = {
      {"{\"error\": \"reward: x\", \"end\": \"scoring_error\"}", "scoring_error"},
      {"{\"error\": \"the model's API failed: 503\", \"end\": \"api_error\"}", "api_error"},
      {"{\"error\": \"reward: x\", \"end\": \"finished\"}", "reward"},
      {"{\"error\": \"reward: x\", \"end\": \"<b>not a word</b>\"}", "reward"},
      {"{\"error\": \"the model's API failed: 503\"}", "api"},
  };
  for (size_t i = 0; i < sizeof(lines) / sizeof(*lines); i++) {
    cJSON *l = cJSON_Parse(lines[i][0]);
    tap_is_str(report_line_kind(l), lines[i][1], "the kind of the line %s", lines[i][0]);
    cJSON_Delete(l);
  }
  char *a = report_anchor("demo_006");
  tap_is_str(a, "demo_006", "an id of letters, digits and _ is its own anchor");
  free(a);
  a = report_anchor("zz\"<i> x.y");
  tap_is_str(a, "zz.22.3ci.3e.20x.2ey", "any other byte is .XX: no quote, space or markup in an id attribute");
  free(a);
  tap_ok(report_natural_cmp("task_2", "task_10") < 0 && report_natural_cmp("task_10", "task_2") > 0 &&
             report_natural_cmp("a", "b") < 0 && report_natural_cmp("x007", "x7") == 0 &&
             report_natural_cmp("ab", "a") > 0,
         "ids in natural order: task_2 before task_10");
}

static double seconds_of(const char *json, bool *exact) {
  cJSON *t = cJSON_Parse(json);
  double s = report_run_seconds(t, exact);
  cJSON_Delete(t);
  return s;
}

static void run_time(void) {
  bool exact = false;
  const char *steps = "\"steps\": [{\"metadata\": {\"elapsed\": 10}}, {\"metadata\": {\"elapsed\": 20}}, "
                      "{\"metadata\": {\"elapsed\": 30}}]";
  _cleanup_free_ char *with = xasprintf("{%s, \"hutch\": {\"timings\": {\"begin\": 100, \"saved\": 131.5}}}", steps);
  _cleanup_free_ char *without = xasprintf("{%s}", steps);
  tap_ok(seconds_of(with, &exact) == 31.5 && exact,
         "a run's time is saved - begin (31.5 s), never its steps' elapsed added up (60 s)");
  tap_ok(seconds_of(without, &exact) == 30 && !exact, "without timings: the last step's elapsed, as a lower bound");
  tap_ok(seconds_of("{\"steps\": []}", &exact) < 0, "with neither: not known");
}

/* The view of steps given as JSON; *sums filled. */
static cJSON *steps_of(const char *json, struct report_sums *sums) {
  cJSON *steps = cJSON_Parse(json);
  struct report_ctx c = {.budget = REPORT_TEXTS_MAX};
  memset(sums, 0, sizeof(*sums));
  cJSON *v = report_steps_view(&c, steps, sums);
  cJSON_Delete(steps);
  return v;
}

static const char *vstr(const cJSON *v, const char *path) {
  _cleanup_free_ char *p = xstrdup(path);
  for (char *save = NULL, *k = strtok_r(p, ".", &save); k && v; k = strtok_r(NULL, ".", &save))
    v = cJSON_IsArray(v) ? cJSON_GetArrayItem(v, atoi(k)) : cJSON_GetObjectItemCaseSensitive(v, k);
  return cJSON_IsString(v) ? v->valuestring : v ? "(not a string)" : NULL;
}

static void steps(void) {
  struct report_sums s;
  cJSON *v = steps_of(
      "[{\"thought\": \"t\", \"reasoning_content\": \"r\", \"action\": {\"function\": \"str_replace_editor\", "
      "\"parameters\": {\"command\": \"create\", \"path\": \"/a.py\", \"file_text\": \"x = 1\\n\"}}, \"observation\": "
      "\"ok\", \"metadata\": {\"reply\": 1, \"exec_time\": 2.5, \"tool_time\": 0.25, \"exit_code\": 0, "
      "\"prompt_tokens\": 100, \"completion_tokens\": 7, \"cost\": 0.5}},"
      " {\"action\": {\"function\": \"str_replace_editor\", \"parameters\": {\"command\": \"str_replace\", \"path\": "
      "\"/a.py\", \"old_str\": \"a\\nb\\nc\", \"new_str\": \"a\\nB\\nc\"}}, \"metadata\": {\"reply\": 1, "
      "\"exec_time\": 2.5, \"tool_time\": 0.5, \"exit_code\": 1}},"
      " {\"action\": {\"function\": \"execute_bash\", \"parameters\": {\"command\": \"ls -l\", \"timeout\": 5}}, "
      "\"metadata\": {\"reply\": 2, \"exec_time\": 1, \"tool_time\": 1, \"exit_code\": null}},"
      " {\"action\": {\"function\": \"\", \"parameters\": {}}, \"metadata\": {\"reply\": 3, \"exec_time\": 1}},"
      " {\"action\": {\"function\": \"mystery\", \"parameters\": {\"_unparsed\": \"{not json\"}}, \"metadata\": "
      "{\"exec_time\": 1}}]",
      &s);
  tap_is_int(cJSON_GetArraySize(v), 5, "a view per step");
  tap_ok(s.model_seconds == 5.5 && s.tool_seconds == 1.75,
         "model time counted once per reply (2.5 + 1 + 1 + 1), tool time per step (%g, %g)", s.model_seconds,
         s.tool_seconds);
  tap_ok(s.has_usage && s.prompt_tokens == 100 && s.completion_tokens == 7 && s.has_cost && s.cost == 0.5,
         "tokens and cost from the steps that carry them");
  tap_is_str(vstr(v, "0.call.cls"), "create", "a created file: its kind");
  tap_is_str(vstr(v, "0.call.code.text"), "x = 1\n", "its code as it is, not JSON-escaped");
  tap_is_str(vstr(v, "0.latency"), "model 2.500 s", "the model's latency");
  tap_is_str(vstr(v, "0.wall"), "tool 0.250 s", "the tool's wall time");
  tap_is_str(vstr(v, "0.exit.text"), "exit 0", "the exit status");
  tap_is_str(vstr(v, "0.reasoning.text"), "r", "the reasoning");
  tap_is_str(vstr(v, "0.thought.text"), "t", "the thought");
  tap_is_str(vstr(v, "0.obs.text"), "ok", "the observation");
  tap_ok(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(v, 1), "latency") == NULL &&
             cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(v, 1), "tokens") == NULL,
         "a reply's second call shows no latency or tokens of its own");
  tap_is_int(
      cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(v, 1), "same_reply"), "n")
          ->valuedouble,
      1, "but the step whose reply it shares");
  tap_is_str(vstr(v, "1.exit.cls"), "bad", "a non-zero exit is marked");
  _cleanup_free_ char *diff = NULL;
  const cJSON *l;
  size_t dl = 0, dc = 0;
  cJSON_ArrayForEach(l, cJSON_GetObjectItemCaseSensitive(
                            cJSON_GetObjectItemCaseSensitive(
                                cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(v, 1), "call"), "diff"),
                            "hunk")) {
    text_appendf(&diff, &dl, &dc, "%s:", vstr(l, "cls"));
    text_append(&diff, &dl, &dc, vstr(l, "text"), strlen(vstr(l, "text")));
  }
  tap_is_str(diff, "ctx: a\ndel:-b\nadd:+B\nctx: c\n", "an edit as a diff, its shared lines as context");
  tap_is_str(vstr(v, "2.call.command.text"), "ls -l", "a command as a command");
  tap_is_str(vstr(v, "2.call.params.list.0.name"), "timeout", "its other parameters by name");
  tap_is_str(vstr(v, "2.call.params.list.0.value.text"), "5", "with their values");
  tap_ok(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(v, 2), "exit") == NULL, "no exit status: none shown");
  tap_is_str(vstr(v, "3.call.cls"), "none", "a reply with no call");
  tap_is_str(vstr(v, "3.tool"), "(no tool call)", "is said to have none");
  tap_is_str(vstr(v, "4.call.params.list.0.value.text"), "{not json", "arguments that were no JSON, as written");
  cJSON_Delete(v);
  cJSON *d = report_diff("x\n", "");
  tap_ok(cJSON_GetArraySize(d) == 1 && strcmp(vstr(d, "0.text"), "-x\n") == 0, "a deletion: one line removed");
  cJSON_Delete(d);
}

static void texts(void) {
  struct report_ctx c = {.budget = REPORT_TEXTS_MAX};
  tap_ok(report_text(&c, NULL) == NULL && report_text(&c, "") == NULL, "no text, no block");
  /* A long text of 3-byte characters: cut at a character, with a note. */
  size_t n = (REPORT_TEXT_MAX + 300) / 3 * 3;
  char *big = xmalloc(n + 1);
  for (size_t i = 0; i < n; i += 3)
    memcpy(big + i, "\xe2\x82\xac", 3);
  big[n] = '\0';
  cJSON *t = report_text(&c, big);
  const char *text = vstr(t, "text");
  size_t len = strlen(text);
  tap_ok(len <= REPORT_TEXT_MAX && len % 3 == 0, "a text is cut at %zu bytes, not inside a character", len);
  tap_ok(vstr(t, "more") && strstr(vstr(t, "more"), "more bytes in the run's trajectory.json"),
         "and says how much more there is: %s", vstr(t, "more"));
  tap_ok(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(t, "long")), "a long text is folded");
  cJSON_Delete(t);
  c.budget = 10;
  t = report_text(&c, big);
  tap_ok(vstr(t, "text") == NULL && strstr(vstr(t, "more"), "over their budget"),
         "past the page's budget a text is only named");
  cJSON_Delete(t);
  free(big);
}

int main(void) {
  templates();
  results();
  run_time();
  steps();
  texts();
  return tap_done();
}
