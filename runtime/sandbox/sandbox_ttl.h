/* SPDX-License-Identifier: Apache-2.0 */
/* A live sandbox's time limit (sandbox_ttl.c): set and cleared
 * (hutch_sandbox_set_ttl, create), its clock stopped by a pause and
 * started again by the resume.  When it runs out: ttl_expire.h. */
#ifndef HUTCH_SANDBOX_TTL_H
#define HUTCH_SANDBOX_TTL_H

#include "hutch.h"
#include "state.h"

/* Sets sb's limit to `seconds` from now (<= 0: none), with `on_ttl` (NULL:
 * as it was, else remove), starts its keeper when it has none, and
 * records a "ttl" audit record saying `by` whom. */
int sandbox_ttl_apply(struct hutch_sandbox *sb, double seconds, const enum hutch_ttl_action *on_ttl, const char *by,
                      hutch_error_t *err);
/* pause.c: the clock stops once the sandbox is marked paused, and starts
 * again once the mark is gone; nothing is written without a limit.  The
 * caller holds the state lock (lockfd: state_lock's), as a pause does
 * throughout. */
int sandbox_ttl_stop_clock(struct hutch_sandbox *sb, int lockfd, hutch_error_t *err);
int sandbox_ttl_start_clock(struct hutch_sandbox *sb, int lockfd, hutch_error_t *err);
/* The same for sandbox `id` of state root `rootfd`, with no handle. */
int sandbox_ttl_start_clock_at(int lockfd, int rootfd, const char *id, hutch_error_t *err);

#endif
