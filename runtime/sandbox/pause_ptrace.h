/* SPDX-License-Identifier: Apache-2.0 */
/* Pausing a sandbox without a cgroup: a host process of its own, the
 * pauser, holds every task of the sandbox in a ptrace stop.  Only a tracer
 * resumes a task from a ptrace stop (a SIGCONT, the kernel's too, does
 * not), and every task of the sandbox is held, so nothing inside can undo
 * it.  The pauser traces with PTRACE_O_EXITKILL: when it dies, whatever
 * killed it, the tasks die with it, and a pause is never undone silently. */
#ifndef HUTCH_PAUSE_PTRACE_H
#define HUTCH_PAUSE_PTRACE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "hutch.h"

/* The pauser's socket, in the sandbox's state directory. */
#define PAUSE_SOCK "pause.sock"

/* The most tasks (threads) a pauser holds; a sandbox with more is not
 * paused (the pause fails, nothing stays held). */
#define PAUSE_MAX_TASKS 65536
/* How long the tasks may take to stop, and to go on at a resume. */
#define PAUSE_SETTLE_SECONDS 5.0

/* What the pauser answers, at the pause and at the resume. */
struct pause_report {
  int32_t error;  /* 0, or the errno of the failure message says */
  uint32_t tasks; /* held (pause), let go (resume) */
  int32_t pid;    /* the pauser's */
  uint32_t scans; /* passes down the tree until no task was new */
  double seconds; /* from the pauser's start to the last task held (or let go) */
  char message[256];
};

/* Starts the pauser of the sandbox whose init is host pid `init` (start
 * time `init_start`), which listens on `dirfd`/pause.sock and holds every
 * task of init's tree, init included; returns once all are held (0, *rep
 * filled) or on failure (-1: nothing stays held, the pauser is gone). */
int pause_ptrace_start(int dirfd, pid_t init, uint64_t init_start, struct pause_report *rep, hutch_error_t *err);
/* The same in two halves, for a caller with other work meanwhile: the
 * pauser started (the fd its report comes on, and *mid, the process that
 * forks it, for the wait to reap), then its report waited for (the fd
 * closed).  A launch must be waited for.  `hold`: the pause is held for
 * this process (a copy of the sandbox's files), and the pauser lets every
 * task go on when it ends, even SIGKILLed. */
int pause_ptrace_launch(int dirfd, pid_t init, uint64_t init_start, bool hold, pid_t *mid, hutch_error_t *err);
int pause_ptrace_wait(int dirfd, int report_fd, pid_t mid, struct pause_report *rep, hutch_error_t *err);
/* Asks the pauser listening on `dirfd`/pause.sock to let every task go on
 * and exit; returns once it has. */
int pause_ptrace_resume(int dirfd, struct pause_report *rep, hutch_error_t *err);

#endif
