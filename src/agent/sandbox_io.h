/* SPDX-License-Identifier: Apache-2.0 */
/* The task's long-lived sandbox, and one command run in it with its stdin
 * fed from memory and its stdout/stderr captured (read concurrently, capped). */
#ifndef HUTCH_AGENT_SANDBOX_IO_H
#define HUTCH_AGENT_SANDBOX_IO_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hutch.h"

struct task_sandbox {
  struct hutch_sandbox *sb;
  char *id;
  const char *const *env;
  volatile sig_atomic_t *stop;
  bool removed;
  bool halted; /* a stop request killed its processes; its files are still there */
  /* Called while a command runs (every 200 ms at most, and as output
   * comes) with the bytes it has written so far: hutch run's live line. */
  void (*progress)(void *data, uint64_t output_bytes);
  void *progress_data;
};

struct capture {
  char *data; /* NUL-terminated; may hold NULs before len */
  size_t len;
  bool capped;
  uint64_t seen; /* bytes read, those past the cap too */
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
/* The stop path: every process in the sandbox is killed (a running
 * command returns), and the sandbox stays, with its files, for the
 * copy-back.  Once only. */
void task_sandbox_halt(struct task_sandbox *t);
/* Kill the sandbox now and remove it: what a halt could not end. */
void task_sandbox_kill(struct task_sandbox *t);

#endif
