/* SPDX-License-Identifier: Apache-2.0 */
/* A live sandbox's time limit as state.json records it, and the pure
 * arithmetic of it: set, paused, resumed, how much is left, run out.
 * Times are CLOCK_BOOTTIME nanoseconds (the same in every process, and
 * not moved by setting the clock); the wall-clock deadline is for display
 * only. */
#ifndef HUTCH_TTL_PLAN_H
#define HUTCH_TTL_PLAN_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "hutch.h"

/* The longest limit taken: ten years, far inside what an int64 of
 * nanoseconds holds. */
#define TTL_MAX_SECONDS (10.0 * 365 * 24 * 3600)

struct ttl_record {
  double seconds; /* the limit as last set; 0: none */
  enum hutch_ttl_action on_ttl;
  int64_t deadline_ns; /* CLOCK_BOOTTIME when it runs out; 0 while paused */
  double deadline;     /* the same on the wall clock (seconds since the epoch), shown only */
  double left;         /* while paused: the seconds it had left */
};

/* A helper process of the sandbox's (ttl_plan.h for want of a better
 * home: the keeper is the first), recorded so that only that very process
 * is ever signalled. */
struct helper_record {
  pid_t pid; /* 0: none */
  uint64_t start_time;
};

/* 0 < s <= TTL_MAX_SECONDS, a finite number. */
bool ttl_seconds_valid(double s);
bool ttl_active(const struct ttl_record *t);
/* Active and its clock stopped (the sandbox is paused). */
bool ttl_stopped(const struct ttl_record *t);
/* A limit of `seconds` from now (`boot_ns`, `wall` the same instant);
 * while `paused` it is all left, to run from the resume. */
void ttl_plan_set(struct ttl_record *t, double seconds, bool paused, int64_t boot_ns, double wall);
/* Stops the clock: the time left is kept.  Returns false (nothing done)
 * when there is no limit or its clock is stopped already. */
bool ttl_plan_pause(struct ttl_record *t, int64_t boot_ns);
/* Starts it again with what was left.  False when there is nothing to do. */
bool ttl_plan_resume(struct ttl_record *t, int64_t boot_ns, double wall);
/* Seconds left (0 when run out or none). */
double ttl_plan_left(const struct ttl_record *t, int64_t boot_ns);
/* Active, running, and at or past its deadline. */
bool ttl_plan_expired(const struct ttl_record *t, int64_t boot_ns);
/* Seconds as nanoseconds, saturated to [0, TTL_MAX_SECONDS]. */
int64_t ttl_ns(double seconds);

#endif
