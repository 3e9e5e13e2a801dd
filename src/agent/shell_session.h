/* SPDX-License-Identifier: Apache-2.0 */
/* `--shell persistent`: one shell per task, alive across execute_bash calls,
 * so that cd and export carry over.  Commands are fed through the shell's
 * stdin; stdout and stderr stay two pipes; the end of each command is found
 * by a per-command random marker on both pipes (stripped before the model
 * sees the output), which also carries the exit code. */
#ifndef HUTCH_AGENT_SHELL_SESSION_H
#define HUTCH_AGENT_SHELL_SESSION_H

#include <stdbool.h>

#include "sandbox_io.h"

struct shell_session;

struct session_result {
  struct capture out, err;
  int exit_code;    /* -1 when unknown (timed out) */
  bool timed_out;   /* the command was interrupted; the session lives on */
  bool restarted;   /* the session had ended (e.g. `exit`); a new one was started */
  bool interrupted; /* a stop request ended the sandbox meanwhile */
};

struct shell_session *shell_session_new(struct task_sandbox *t, const char *shell, const char *workdir);
int shell_session_run(struct shell_session *s, const char *command, double timeout, size_t cap,
                      struct session_result *res, hutch_error_t *err);
void session_result_clear(struct session_result *r);
void shell_session_free(struct shell_session *s);

#endif
