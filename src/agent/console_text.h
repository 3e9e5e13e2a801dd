/* SPDX-License-Identifier: Apache-2.0 */
/* The text of what hutch run shows while it works (console.c): a step's
 * line and its --json event, the live line, the totals, and a --json line
 * made safe for a terminal.  Pure; tests/unit/test_agent_text. */
#ifndef HUTCH_AGENT_CONSOLE_TEXT_H
#define HUTCH_AGENT_CONSOLE_TEXT_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tools.h"

/* A step as its line and its event tell it. */
struct step_view {
  long step;
  const char *tool;      /* the call's name; "" for a reply without one */
  const char *arguments; /* the JSON text the model wrote; may be NULL */
  const char *call_id;   /* may be NULL */
  enum tool_outcome outcome;
  int exit_code;
  const char *error; /* why it failed; may be NULL */
  double timeout;    /* TOOL_TIMED_OUT */
  double seconds;    /* the tool's */
  /* The first call of its reply: the line ends with the model's time and
   * the reply's tokens. */
  bool with_model;
  double model_seconds;
  long prompt_tokens, completion_tokens;
};

/* The run's totals, for its last line and the end event. */
struct run_totals {
  const char *end_reason; /* NULL: an error */
  long steps, model_calls;
  long prompt_tokens, completion_tokens;
  double seconds, model_seconds, tool_seconds;
};

/* The tool's short name: bash, edit, submit, or the name itself. */
const char *console_tool_name(const char *tool);
/* What a call does, in short, one line of at most max characters ("..."
 * marks a cut): execute_bash's command, the editor's command and path;
 * nothing for other tools.  escaped: controls and bytes that are not UTF-8
 * written as text_escape writes them (for a terminal); else as they are
 * (for JSON). */
char *console_summary(const char *tool, const char *arguments, size_t max, bool escaped);
/* "exit 3", "timed out after 120 s", "error: ...", "submitted"... escaped. */
char *console_outcome(const struct step_view *v);
/* "step 3: bash ls -> exit 0 (0.01 s; model 1.20 s, 1200 + 35 tokens)",
 * escaped. */
char *console_step_line(const struct step_view *v);
/* The step's --json event. */
cJSON *console_step_event(const struct step_view *v);
/* WHAT (escaped) ... "12 s, no output yet", cut to `width` characters by
 * shortening WHAT. */
char *console_live_line(const char *what, double elapsed, uint64_t bytes, double quiet_for, size_t width);
/* "end: submitted after 7 steps in 12.3 s: model 8.1 s (7 calls), tools
 * 3.2 s, 700 tokens in, 70 out" */
char *console_totals_line(const struct run_totals *t);
/* A --json line: cJSON's text with what it leaves as it is but a terminal
 * acts on (DEL, C1 controls, bidirectional controls) as \u escapes, and
 * bytes that are not UTF-8 as \ufffd. */
char *console_json_safe(const char *json);
/* "0.42 s", "12.3 s", "123 s" */
char *console_seconds(double s);
/* "512 bytes", "3.4 KiB", "12.0 MiB" */
char *console_bytes(uint64_t n);

#endif
