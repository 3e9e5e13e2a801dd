/* SPDX-License-Identifier: Apache-2.0 */
/* hutch run's terminal text (console_text.c): a step's line says what
 * became of the call for each kind of result, one line, escaped; the live
 * line fits the terminal; --json lines carry nothing a terminal acts on. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "console_text.h"
#include "tap.h"
#include "util.h"

static void check(char *got, const char *want, const char *desc) {
  tap_is_str(got, want, "%s", desc);
  free(got);
}

static void summaries(void) {
  tap_is_str(console_tool_name("execute_bash"), "bash", "execute_bash is bash");
  tap_is_str(console_tool_name("str_replace_editor"), "edit", "str_replace_editor is edit");
  tap_is_str(console_tool_name("fly"), "fly", "another tool keeps its name");
  check(console_summary("execute_bash", "{\"command\": \"ls -la\"}", 80, true), "ls -la", "a command");
  check(console_summary("execute_bash", "{\"command\": \"cat > f <<EOF\\nx\\nEOF\"}", 80, true), "cat > f <<EOF...",
        "a script: its first line, and ... for the rest");
  check(console_summary("execute_bash", "{\"command\": \"\\n\\necho a\\n\\n\"}", 80, true), "echo a",
        "empty lines around one are no more");
  check(console_summary("execute_bash", "{\"command\": \"printf '\\u001b[2J\\u009b\\tx'\"}", 80, true),
        "printf '\\x1b[2J\\u009b x'", "controls escaped, a tab a space");
  check(console_summary("execute_bash", "{\"command\": \"printf '\\u001b[2J'\"}", 80, false), "printf '\x1b[2J'",
        "for JSON the text as it is");
  check(console_summary("execute_bash", "{\"command\": \"echo 0123456789\"}", 10, true), "echo 01...",
        "cut to the width, ... in what is left out");
  check(console_summary("execute_bash", "{\"command\": \"echo \\u00e9\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9\"}", 9, true),
        "echo \xc3\xa9...", "counted in characters, never half of one");
  check(console_summary("str_replace_editor",
                        "{\"command\": \"create\", \"path\": \"/testbed/a.py\", \"file_text\": \"x\"}", 80, true),
        "create /testbed/a.py", "the editor: its command and path");
  check(console_summary("submit", "{}", 80, true), "", "submit: nothing");
  check(console_summary("execute_bash", "{\"command\": ", 80, true), "", "arguments that do not parse: nothing");
  check(console_summary("execute_bash", NULL, 80, true), "", "no arguments: nothing");
}

static void outcomes(void) {
  struct step_view v = {.step = 3, .tool = "execute_bash", .arguments = "{\"command\": \"make\"}"};
  v.outcome = TOOL_EXITED, v.exit_code = 2;
  check(console_outcome(&v), "exit 2", "a command that exited");
  v.outcome = TOOL_TIMED_OUT, v.timeout = 120;
  check(console_outcome(&v), "timed out after 120 s", "a command past its timeout");
  v.timeout = 0.5;
  check(console_outcome(&v), "timed out after 0.5 s", "a fractional timeout");
  v.outcome = TOOL_NOT_STARTED, v.error = "exec sh: No such file or directory";
  check(console_outcome(&v), "not started: exec sh: No such file or directory", "a command that could not start");
  v.outcome = TOOL_EDIT_FAILED, v.error = "Error creating file: bash: line 1: /a: No space left on device";
  check(console_outcome(&v), "error creating file: bash: line 1: /a: No space left on device",
        "the reference's editor error (ENOSPC): no exit status");
  v.error = "ERROR: could not write /a: No space left on device";
  check(console_outcome(&v), "error: could not write /a: No space left on device", "hutch's editor error");
  v.error = "No replacement was performed";
  check(console_outcome(&v), "error: No replacement was performed", "an error that does not say so itself");
  v.error = "Error: bad\nsecond line \x1b[2J";
  check(console_outcome(&v), "error: bad...", "one line of it");
  v.error = "Error: \x1b]52;c;eA==\x07";
  check(console_outcome(&v), "error: \\x1b]52;c;eA==\\x07", "escaped");
  v.outcome = TOOL_EDITED;
  check(console_outcome(&v), "ok", "an edit");
  v.outcome = TOOL_SUBMITTED;
  check(console_outcome(&v), "submitted", "submit: no -1");
  v.outcome = TOOL_REFUSED, v.error = "unknown tool";
  check(console_outcome(&v), "refused: unknown tool", "an unknown tool");
  v.outcome = TOOL_NOT_RUN, v.error = "the run's step budget is spent (--max-steps 5).";
  check(console_outcome(&v), "not run: the run's step budget is spent (--max-steps 5).", "a call not run");
  v.outcome = TOOL_STOPPED;
  check(console_outcome(&v), "stopped", "a call a stop request ended");
}

static void lines(void) {
  struct step_view v = {.step = 3,
                        .tool = "execute_bash",
                        .arguments = "{\"command\": \"make\"}",
                        .outcome = TOOL_EXITED,
                        .exit_code = 0,
                        .seconds = 1.234,
                        .with_model = true,
                        .model_seconds = 12.5,
                        .prompt_tokens = 1200,
                        .completion_tokens = 35};
  check(console_step_line(&v), "step 3: bash make -> exit 0 (1.23 s; model 12.5 s, 1200 + 35 tokens)", "a step's line");
  v.with_model = false;
  v.seconds = 250;
  check(console_step_line(&v), "step 3: bash make -> exit 0 (250 s)", "a later call of the same reply");
  struct step_view n = {
      .step = 4, .tool = "", .outcome = TOOL_NO_CALL, .with_model = true, .model_seconds = 0.5, .prompt_tokens = 9};
  check(console_step_line(&n), "step 4: no tool call -> reminded to call a tool (model 0.50 s, 9 + 0 tokens)",
        "a reply without a call");
  struct step_view u = {.step = 5, .tool = "fl\ny\x1b", .outcome = TOOL_REFUSED, .error = "unknown tool"};
  check(console_step_line(&u), "step 5: fl y\\x1b -> refused: unknown tool (0.00 s)",
        "a tool name of the model's, escaped");
  cJSON *e = console_step_event(&v);
  _cleanup_free_ char *text = cJSON_PrintUnformatted(e);
  tap_is_str(text,
             "{\"event\":\"step\",\"step\":3,\"tool\":\"execute_bash\",\"summary\":\"make\",\"result\":\"exit\","
             "\"exit_code\":0,\"seconds\":250}",
             "its --json event");
  cJSON_Delete(e);

  check(console_live_line("hutch run: step 2: bash sleep 100", 12.4, 0, 12.4, 200),
        "hutch run: step 2: bash sleep 100 ... 12 s, no output yet", "live: no output yet");
  check(console_live_line("x", 5, 2048, 1, 200), "x ... 5 s, output arriving (2.0 KiB)", "live: output arriving");
  check(console_live_line("x", 9, 1, 4, 200), "x ... 9 s, 1 byte of output, none for 4 s", "live: output, then quiet");
  char *cut = console_live_line("hutch run: step 2: bash sleep 100000000000000000000", 1, 0, 1, 60);
  tap_ok(strlen(cut) == 59, "live: one column short of the width (%zu)", strlen(cut));
  check(cut, "hutch run: step 2: bash sleep 100... ... 1 s, no output yet", "live: what runs is cut, not the state");

  struct run_totals t = {.end_reason = "submitted",
                         .steps = 7,
                         .model_calls = 1,
                         .prompt_tokens = 700,
                         .completion_tokens = 70,
                         .seconds = 12.3,
                         .model_seconds = 8.1,
                         .tool_seconds = 3.2};
  check(console_totals_line(&t),
        "end: submitted after 7 steps in 12.3 s: model 8.10 s (1 call), tools 3.20 s, 700 tokens in, 70 out",
        "the totals");
  t.end_reason = NULL, t.steps = 1;
  check(console_totals_line(&t),
        "end: error after 1 step in 12.3 s: model 8.10 s (1 call), tools 3.20 s, 700 tokens in, 70 out",
        "an error's totals");
}

static void json(void) {
  check(console_json_safe("{\"a\":\"x\xc2\x9by\x7fz\"}"), "{\"a\":\"x\\u009by\\u007fz\"}", "C1 and DEL escaped");
  check(console_json_safe("{\"a\":\"\xe2\x80\xae!\"}"), "{\"a\":\"\\u202e!\"}", "a bidirectional override escaped");
  check(console_json_safe("{\"a\":\"\xff\xc3\"}"), "{\"a\":\"\\ufffd\\ufffd\"}", "bytes that are not UTF-8");
  check(console_json_safe("{\"a\":\"\xc3\xa9\\n\\u001b\"}"), "{\"a\":\"\xc3\xa9\\n\\u001b\"}",
        "UTF-8 and cJSON's own escapes as they are");
  check(console_bytes(0), "0 bytes", "bytes");
  check(console_bytes(3 << 20), "3.0 MiB", "MiB");
  check(console_seconds(0.004), "0.00 s", "seconds");
}

int main(void) {
  summaries();
  outcomes();
  lines();
  json();
  return tap_done();
}
