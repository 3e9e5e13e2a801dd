/* The task's long-lived sandbox, and one command run in it with its stdin
 * fed from memory and its stdout/stderr captured (read concurrently, capped). */
#ifndef HUTCH_AGENT_SANDBOX_IO_H
#define HUTCH_AGENT_SANDBOX_IO_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

#include "hutch.h"

struct task_sandbox {
  struct hutch_sandbox *sb;
  char *id;
  const char *const *env;
  volatile sig_atomic_t *stop;
  bool removed;
};

struct capture {
  char *data; /* NUL-terminated; may hold NULs before len */
  size_t len;
  bool capped;
};

struct run_result {
  struct capture out, err;
  struct hutch_exit exit;
  bool interrupted; /* a stop request ended the sandbox meanwhile */
};

struct run_request {
  const char *const *argv;
  const char *workdir;
  const char *input; /* NULL: stdin is empty */
  size_t input_len;
  double timeout;
  size_t cap; /* bytes kept of each of stdout and stderr */
};

int task_sandbox_run(struct task_sandbox *t, const struct run_request *req, struct run_result *res, hutch_error_t *err);
void run_result_clear(struct run_result *r);
/* Kill the sandbox now (from the stop path); a running command returns. */
void task_sandbox_kill(struct task_sandbox *t);

#endif
