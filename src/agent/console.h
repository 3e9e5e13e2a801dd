/* SPDX-License-Identifier: Apache-2.0 */
/* What hutch run shows while it works (hutch-run(1), OUTPUT).  run.log gets
 * every line, whatever the mode.  Lines (the default): stderr gets hutch's
 * messages and a line per step, a live line while a tool call runs longer
 * than a second when stderr is a terminal, and the totals at the end.
 * --quiet: stderr gets warnings and errors only.  --json: the same on
 * stderr as --quiet, and stdout one JSON object per event.  The text is
 * console_text.c's: escaped, one line each. */
#ifndef HUTCH_AGENT_CONSOLE_H
#define HUTCH_AGENT_CONSOLE_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "console_text.h"
#include "hutch.h"
#include "llm_client.h"

/* The --json schema's version, in its start event. */
#define CONSOLE_JSON_SCHEMA 1

enum console_mode { CONSOLE_LINES, CONSOLE_QUIET, CONSOLE_JSON };

struct console {
  enum console_mode mode;
  bool tty;  /* lines, and stderr is a terminal: the live line */
  FILE *log; /* run.log once open; NULL before */
  /* The tool call that runs: its line's head, escaped; NULL when none. */
  char *live_what;
  double live_begun, live_drawn, live_output_at;
  uint64_t live_bytes;
  bool live_shown;
};

void console_init(struct console *c, bool quiet, bool json);
void console_free(struct console *c);
/* The live line off the screen, before something else writes to stderr. */
void console_clear(struct console *c);
/* One line of hutch's (text as written, escaped here) with its kind
 * ("warning: ", "error: ", "" for progress): run.log, then stderr as the
 * mode says, and a "log" event with --json. */
void console_log(struct console *c, const char *kind, const char *text);
/* With --json, the event on a line of stdout; taken. */
void console_event(struct console *c, cJSON *event);
/* An error of hutch's, with its hint: stderr whatever the mode, run.log, and
 * an "error" event. */
void console_error(struct console *c, const hutch_error_t err);
/* The run begins in run_dir: its line, and the start event. */
void console_start(struct console *c, const char *run_dir, const char *model, const char *url);
/* The sandbox is ready. */
void console_sandbox(struct console *c, const char *id, const char *shell, bool persistent);
/* Reply n of the model's (the "model" event). */
void console_reply(struct console *c, long n, const struct llm_reply *rep);
/* The totals' line; then the run directory alone on stdout, or with
 * --json the end event and nothing else. */
void console_end(struct console *c, const struct run_totals *t, int exit_code, bool partial, const char *files_from,
                 const char *run_dir);
/* A step's line, or its event. */
void console_step(struct console *c, const struct step_view *v);
/* A tool call starts, ends; in between, console_tool_progress (the task
 * sandbox's progress callback, data the console) redraws the live line. */
void console_tool_begin(struct console *c, long step, const char *tool, const char *arguments, const char *call_id);
void console_tool_progress(void *console, uint64_t output_bytes);
void console_tool_end(struct console *c);

#endif
