/* SPDX-License-Identifier: Apache-2.0 */
/* hutch run --verify CMD: a command run in the task's sandbox after the
 * model is done, its exit status and last line recorded (verify.c). */
#ifndef HUTCH_AGENT_VERIFY_H
#define HUTCH_AGENT_VERIFY_H

#include "sandbox_io.h"
#include "trajectory.h"

void verify_run(struct task_sandbox *t, const char *cmd, const char *workdir, double timeout, struct trajectory *traj);

#endif
