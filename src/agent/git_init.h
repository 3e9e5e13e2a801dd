/* SPDX-License-Identifier: Apache-2.0 */
/* LLM-in-Sandbox's set-up step `git init` in the working directory, so the
 * model finds a repository to diff and commit in. */
#ifndef HUTCH_AGENT_GIT_INIT_H
#define HUTCH_AGENT_GIT_INIT_H

#include <stdbool.h>

#include "sandbox_io.h"

/* The sandbox's own git, started there in the background: it runs while
 * hutch copies the input in, writes the prompt and asks the model, and is
 * waited for before the first tool runs.  Its result is ignored, as
 * LLM-in-Sandbox ignores it (`git init || true`): an image without git
 * simply has no repository. */
struct git_init {
  struct hutch_proc *proc;
  double started;
  bool waited;
  int status; /* the exit status for the log, -1 when git could not start or was stopped */
};

void git_init_start(struct git_init *g, struct task_sandbox *t, const char *working_dir);
/* Waits for it (bounded to 30 s from its start, then killed, and ended at
 * once on a stop request); the first call after git_init_start() returns
 * true, any other false. */
bool git_init_finish(struct git_init *g, struct task_sandbox *t);
/* Whether copying into input_dir may write in working_dir's .git (the
 * input directory holds it, or is inside it): then the copy waits for git,
 * as the steps' order says. */
bool git_init_overlaps(const char *working_dir, const char *input_dir);

#endif
