/* SPDX-License-Identifier: Apache-2.0 */
/* The end of a live sandbox's time limit (ttl_expire.c), for its keeper
 * and for the backstop: the sandbox removed, or paused; and the clocks
 * and audit records every part of the ttl uses. */
#ifndef HUTCH_TTL_EXPIRE_H
#define HUTCH_TTL_EXPIRE_H

#include <stdint.h>

#include "hutch.h"
#include "state.h"

/* CLOCK_BOOTTIME in nanoseconds; the wall clock in seconds. */
int64_t ttl_boot_now(void);
double ttl_wall_now(void);
/* Appends "ttl" (a limit set or cleared: seconds or null, on_ttl, by, the
 * caller) or "ttl_expired" (seconds, action, by) to the audit log in the
 * sandbox directory dirfd; a failure is a warning, the limit holds all the
 * same. */
void ttl_audit(int dirfd, const char *type, const struct ttl_record *t, const char *by);
/* The limit of sandbox st (read under the lock `lockfd`, its directory,
 * which this closes) has run out: records "ttl_expired" and removes the
 * sandbox (end reason "ttl expired") or pauses it; a pause that fails
 * removes it (it is never left running past its limit). */
void sandbox_ttl_run_out(int rootfd, int lockfd, struct sandbox_state *st, const char *by);
/* For a listing or an open: when st's limit has run out and no keeper
 * watches it (killed), does what the keeper would have, and says so as a
 * warning.  Returns 1 when it acted (st is stale then), else 0. */
int sandbox_ttl_backstop(int rootfd, const struct sandbox_state *st);

#endif
