/* SPDX-License-Identifier: Apache-2.0 */
/* --verify CMD: once the model is done (submit, or its steps or budget
 * spent), CMD runs with /bin/sh -c in the task's own sandbox, as the task
 * left it, and its exit status and last line of output are recorded in
 * trajectory.json ("hutch": {"verifier": ...}): how SWE-bench-style and
 * terminal-style benchmarks score a task (hutch-benchmark(1)). */
#include "config.h"

#include "verify.h"

#include <string.h>

#include "util.h"

/* The output kept: its last line is the score. */
#define VERIFY_CAP (64u << 10)

void verify_run(struct task_sandbox *t, const char *cmd, const char *workdir, double timeout, struct trajectory *traj) {
  const char *argv[] = {"/bin/sh", "-c", cmd, NULL};
  struct run_request req = {.argv = argv, .workdir = workdir, .timeout = timeout, .cap = VERIFY_CAP};
  struct run_result res;
  memset(&res, 0, sizeof(res));
  hutch_error_t err = NULL;
  cJSON *v = cJSON_CreateObject();
  cJSON_AddStringToObject(v, "command", cmd);
  if (task_sandbox_run(t, &req, &res, &err) < 0) {
    _cleanup_free_ char *why = hutch_error_format(err);
    cJSON_AddStringToObject(v, "error", why);
    hutch_error_free(&err);
  } else {
    cJSON_AddNumberToObject(v, "exit_code", res.exit.signal ? 128 + res.exit.signal : res.exit.status);
    cJSON_AddBoolToObject(v, "timed_out", res.exit.timed_out);
    /* The last non-empty line of stdout, as text (NULs end it). */
    char *o = res.out.data ? res.out.data : "";
    size_t n = strlen(o);
    while (n > 0 && strchr(" \t\r\n", o[n - 1]))
      n--;
    size_t b = n;
    while (b > 0 && o[b - 1] != '\n')
      b--;
    _cleanup_free_ char *last = xstrndup(o + b, n - b);
    cJSON_AddStringToObject(v, "last_line", last);
    cJSON_AddNumberToObject(v, "seconds", res.exit.wall_seconds);
  }
  run_result_clear(&res);
  trajectory_set(traj, "verifier", v);
}
