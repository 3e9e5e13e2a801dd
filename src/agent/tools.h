/* The model's three tools, with LLM-in-Sandbox's names and parameters:
 * execute_bash, str_replace_editor and submit. */
#ifndef HUTCH_AGENT_TOOLS_H
#define HUTCH_AGENT_TOOLS_H

#include <cjson/cJSON.h>
#include <stdbool.h>

#include "sandbox_io.h"

struct edit_history;
struct shell_session;

struct tool_env {
  struct task_sandbox *sandbox;
  const char *shell; /* "bash" when the image has it, else "sh" */
  const char *working_dir;
  double timeout;
  struct edit_history *history;
  struct shell_session *session; /* --shell persistent; NULL: a fresh shell per command */
};

struct tool_result {
  char *observation;
  int exit_code; /* of the command a tool ran; -1 when none */
  double seconds;
  bool submitted;
  bool interrupted;
};

/* The "tools" array of a request, in the reference's order; persistent:
 * execute_bash's description tells of the kept shell. */
cJSON *tools_schema(bool persistent);
/* Runs one call; never fails: problems become the observation. */
void tools_run(struct tool_env *env, const char *name, const char *arguments, struct tool_result *out);
void tool_result_clear(struct tool_result *r);

/* str_replace_editor (editor.c). */
char *editor_run(struct tool_env *env, const cJSON *args, int *exit_code, bool *interrupted);
struct edit_history *edit_history_new(void);
void edit_history_free(struct edit_history *h);

#endif
