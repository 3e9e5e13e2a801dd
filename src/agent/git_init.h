/* LLM-in-Sandbox's set-up step `git init` in the working directory, so the
 * model finds a repository to diff and commit in. */
#ifndef HUTCH_AGENT_GIT_INIT_H
#define HUTCH_AGENT_GIT_INIT_H

#include "sandbox_io.h"

/* Runs the sandbox's own git there, bounded in time and output.  Its
 * result is ignored, as LLM-in-Sandbox ignores it (`git init || true`): an
 * image without git simply has no repository.  Returns the exit status for
 * the log, or -1 when git could not be started. */
int git_init_working_dir(struct task_sandbox *t, const char *working_dir);

#endif
