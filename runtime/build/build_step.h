/* SPDX-License-Identifier: Apache-2.0
 *
 * A build step in its sandbox, bounded in what it can make hutch keep and
 * in time: its stdout and stderr go through a pipe that hutch reads to the
 * end (the step never blocks on it), escaped and capped per step and for
 * the whole build (step_output.h), to the terminal and the build log; it is
 * killed past its timeout.  What the recipe builder (image_build.c) and the
 * Dockerfile builder (dockerfile_layer.c) share. */
#ifndef HUTCH_BUILD_STEP_H
#define HUTCH_BUILD_STEP_H

#include <stddef.h>
#include <stdint.h>

#include "hutch.h"
#include "step_output.h"

/* Default of --step-timeout, in seconds. */
#define BUILD_STEP_DEFAULT_TIMEOUT 3600.0

/* Where a build's output goes, with the whole build's budget. */
struct build_output {
  int term_fd, log_fd; /* -1: not there */
  uint64_t step_max;
  struct step_budget total;
};

/* step_max, total_max 0: the defaults. */
void build_output_init(struct build_output *bo, int term_fd, int log_fd, uint64_t step_max, uint64_t total_max);

/* Runs proc in sb (its stdout and stderr are the pipe; the rest is the
 * caller's).  The step ends when its process does: output that a process
 * it left behind writes after that is read for a moment, then no longer.
 * Returns as hutch_sandbox_exec, and -1 (ETIMEDOUT, with the fix) for a
 * step killed past timeout seconds. */
int build_step_exec(struct hutch_sandbox *sb, struct hutch_process *proc, double timeout, struct build_output *bo,
                    struct hutch_exit *ex, hutch_error_t *err);

/* Other text the sandbox chose (a RUN step's proxy lines) to the log only,
 * escaped and capped as a step's output is. */
void build_output_log(struct build_output *bo, const char *buf, size_t len);

#endif
