/* SPDX-License-Identifier: Apache-2.0 */
/* A sandbox's host helper process (the ttl's keeper; a published port's
 * relay): started only when its feature is used, it outlives its caller
 * and holds nothing of it, and is stopped by the teardown (teardown.c:
 * step_stop_helpers) only if it is still the very process recorded. */
#ifndef HUTCH_HELPER_PROC_H
#define HUTCH_HELPER_PROC_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "hutch.h"

typedef void (*helper_main_fn)(void *data) __attribute__((noreturn));

/* Runs main(data) in a new process: forked twice (nobody's child, so a
 * caller that lives on, a library's, has nothing to reap), in a session of
 * its own, in "/", with stdio on /dev/null, every fd but the `n_keep` of
 * `keep` closed, the library's log handler reset (the caller's may be a
 * Python function), no signal handler of the caller's, not dumpable, and
 * named `name` (ps, pgrep).  Returns its pid, and its start time in
 * *start_time, once it runs. */
pid_t helper_start(const char *name, const int *keep, size_t n_keep, helper_main_fn main, void *data,
                   uint64_t *start_time, hutch_error_t *err);
/* Kills the helper recorded as pid and start time, unless it is gone, the
 * pid is another process's now, or it is the calling process; waits (up to
 * 5 s) for it to end. */
void helper_stop(pid_t pid, uint64_t start_time);

#endif
