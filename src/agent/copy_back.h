/* SPDX-License-Identifier: Apache-2.0 */
/* The run directory's files/: the sandbox's output directory, copied back
 * at the run's end, however it ends while the sandbox is there (a stop
 * request included: the sandbox's processes are killed first, its files
 * stay); and, while the run goes on, brought up to date at each step's end
 * with what changed since (hutch_sandbox_update_out).  A hutch run killed
 * with SIGKILL takes its sandbox with it (die_with_creator: nothing of a
 * sandbox outlives the process that owns it, and its writable layer is a
 * tmpfs of its own): files/ then holds the output directory as the end of
 * the last step copied left it, and the trajectory says which step.
 *
 * The copies at each step's end are bounded: together they copy at most
 * --copy-limit bytes; each takes at most STEP_COPY_SECONDS and walks at
 * most STEP_COPY_ENTRIES entries; all of them take at most a tenth of the
 * run's time (after its first second).  The first bound reached ends them
 * for the run (logged, and in the trajectory); the copy at the end is
 * made all the same. */
#ifndef HUTCH_AGENT_COPY_BACK_H
#define HUTCH_AGENT_COPY_BACK_H

#include <stdint.h>

#include "sandbox_io.h"
#include "trajectory.h"

#define STEP_COPY_SECONDS 2.0
#define STEP_COPY_ENTRIES 10000u

struct copy_back {
  const char *run_dir;
  const char *src; /* the output directory in the sandbox */
  uint64_t limit;  /* --copy-limit */
  void (*log)(void *data, const char *msg);
  void *log_data;
  /* What files/ holds: "none", "step" (as step `step` ended) or "end". */
  const char *from;
  long step;
  /* The copies at each step's end. */
  long copies;
  uint64_t files, bytes;
  double seconds;
  const char *stopped;            /* the bound that ended them, or "error"; NULL while they go on */
  struct hutch_copy_report final; /* of the copy at the end */
};

void copy_back_init(struct copy_back *cb, const char *run_dir, const char *src, uint64_t limit,
                    void (*log)(void *data, const char *msg), void *log_data);
/* At the end of step `step`, `elapsed` seconds into the run: files/
 * brought up to date.  Never fails the run: a failure ends these copies,
 * logged. */
void copy_back_step(struct copy_back *cb, struct task_sandbox *t, long step, double elapsed);
/* At the run's end: the whole output directory, within --copy-limit and
 * the runtime's bounds, into files/ (replacing what the step copies left
 * there once it is whole: they may hold files removed since); logged.  -1
 * with err when the copy failed; files/ then keeps what the step copies
 * left. */
int copy_back_final(struct copy_back *cb, struct task_sandbox *t, hutch_error_t *err);
/* files_from, files_step, step_copies and the copy at the end's
 * copy_back_* in the trajectory's hutch part. */
void copy_back_record(const struct copy_back *cb, struct trajectory *traj);

#endif
