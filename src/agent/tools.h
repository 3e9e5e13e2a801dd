/* SPDX-License-Identifier: Apache-2.0 */
/* The model's three tools, with LLM-in-Sandbox's names and parameters:
 * execute_bash, str_replace_editor and submit. */
#ifndef HUTCH_AGENT_TOOLS_H
#define HUTCH_AGENT_TOOLS_H

#include <cjson/cJSON.h>
#include <stdbool.h>

#include "sandbox_io.h"

struct edit_history;
struct shell_session;

/* --tools: what the model is told and answered.  lis: LLM-in-Sandbox
 * 0.2.0's tool results byte for byte (editor_lis.c); hutch: hutch's editor
 * (any text file, undo_edit, no overwriting create, the file's exact bytes). */
enum tool_profile { TOOLS_LIS, TOOLS_HUTCH };

struct tool_env {
  enum tool_profile profile;
  struct task_sandbox *sandbox;
  const char *shell; /* "bash" when the image has it, else "sh" */
  const char *working_dir;
  double timeout;
  struct edit_history *history;
  struct shell_session *session; /* --shell persistent; NULL: a fresh shell per command */
};

/* What became of a call, as hutch run's terminal line and --json say it
 * (console.h; console_text.c names each for --json, in this order); the
 * model is told in the observation, in the reference's words. */
enum tool_outcome {
  TOOL_EXITED,      /* a command ran and exited: exit_code */
  TOOL_TIMED_OUT,   /* a command ran past its timeout and was killed */
  TOOL_NOT_STARTED, /* a command could not be started: error */
  TOOL_EDITED,      /* the editor did what it was asked */
  TOOL_EDIT_FAILED, /* the editor refused or failed: error */
  TOOL_SUBMITTED,
  TOOL_REFUSED, /* an unknown tool, arguments that cannot be used: error */
  TOOL_NOT_RUN, /* a budget was spent, or submit came first: error */
  TOOL_STOPPED, /* a stop request (a signal to hutch run) ended it */
  TOOL_NO_CALL, /* a reply without a tool call (answered with the reminder) */
};

struct tool_result {
  char *observation;
  int exit_code; /* of the command a tool ran; -1 when none */
  double seconds;
  bool submitted;
  bool interrupted;
  enum tool_outcome outcome;
  char *error;    /* the why of a failed outcome, one line; NULL when none */
  double timeout; /* TOOL_TIMED_OUT: the timeout it ran past */
};

/* The "tools" array of a request: the reference's names, parameters,
 * `required`, enums and order, hutch's own descriptions; persistent:
 * execute_bash's description tells of the kept shell. */
cJSON *tools_schema(enum tool_profile profile, bool persistent);
/* --tools-file: a JSON array of tools sent instead of tools_schema's. */
/* A tools array in text (what: where it came from, for the error). */
cJSON *tools_parse(const char *text, size_t len, const char *what, hutch_error_t *err);
cJSON *tools_load_file(const char *path, hutch_error_t *err);
/* Runs one call; never fails: problems become the observation. */
void tools_run(struct tool_env *env, const char *name, const char *arguments, struct tool_result *out);
void tool_result_clear(struct tool_result *r);

/* str_replace_editor (editor.c). */
char *editor_run(struct tool_env *env, const cJSON *args, int *exit_code, bool *interrupted);
/* str_replace_editor of --tools lis (editor_lis.c); *failed when the
 * answer is one of the reference's errors (its exit_code is 0 all the same,
 * as the reference's editor runs no command of its own). */
char *editor_lis_run(struct tool_env *env, const cJSON *args, int *exit_code, bool *interrupted, bool *failed);
struct edit_history *edit_history_new(void);
void edit_history_free(struct edit_history *h);

#endif
