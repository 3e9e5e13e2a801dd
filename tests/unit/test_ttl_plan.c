/* SPDX-License-Identifier: Apache-2.0 */
/* The arithmetic of a live sandbox's time limit (ttl_plan.c). */
#include "config.h"

#include "tap.h"
#include "ttl_plan.h"

#define S 1000000000LL /* a second, in nanoseconds */

int main(void) {
  struct ttl_record t = {0};
  tap_ok(!ttl_active(&t) && !ttl_stopped(&t), "a zeroed record is no limit");
  tap_ok(!ttl_plan_expired(&t, 1000 * S), "and never runs out");
  tap_ok(ttl_plan_left(&t, 5 * S) == 0, "nothing left of none");
  tap_ok(!ttl_plan_pause(&t, 5 * S) && !ttl_plan_resume(&t, 5 * S, 0), "no clock to stop or start");

  tap_ok(ttl_seconds_valid(0.001) && ttl_seconds_valid(TTL_MAX_SECONDS), "a millisecond and ten years");
  tap_ok(!ttl_seconds_valid(0) && !ttl_seconds_valid(-1), "zero and negative refused");
  tap_ok(!ttl_seconds_valid(TTL_MAX_SECONDS * 1.01), "more than ten years refused");
  tap_ok(!ttl_seconds_valid(1.0 / 0.0) && !ttl_seconds_valid(0.0 / 0.0), "infinity and NaN refused");

  /* Set at boot time 100 s (wall 1000 s), 90 s. */
  ttl_plan_set(&t, 90, false, 100 * S, 1000);
  tap_ok(ttl_active(&t) && !ttl_stopped(&t), "set: active, running");
  tap_ok(t.deadline_ns == 190 * S, "deadline 90 s from now");
  tap_ok(t.deadline == 1090, "and on the wall clock");
  tap_ok(ttl_plan_left(&t, 130 * S) == 60, "60 s left 30 s later");
  tap_ok(!ttl_plan_expired(&t, 190 * S - 1), "not run out a nanosecond before");
  tap_ok(ttl_plan_expired(&t, 190 * S), "run out at the deadline");
  tap_ok(ttl_plan_left(&t, 200 * S) == 0, "nothing left after it");

  /* Paused at 130 s: 60 s left, standing still. */
  tap_ok(ttl_plan_pause(&t, 130 * S), "pause stops the clock");
  tap_ok(ttl_stopped(&t) && t.left == 60, "60 s kept");
  tap_ok(!ttl_plan_expired(&t, 10000 * S), "a stopped clock never runs out");
  tap_ok(ttl_plan_left(&t, 10000 * S) == 60, "and still has 60 s, however long the pause");
  tap_ok(!ttl_plan_pause(&t, 140 * S) && t.left == 60, "a second pause changes nothing");
  /* Resumed at 500 s: deadline 560 s. */
  tap_ok(ttl_plan_resume(&t, 500 * S, 2000), "resume starts it");
  tap_ok(!ttl_stopped(&t) && t.deadline_ns == 560 * S, "from what was left");
  tap_ok(t.seconds == 90, "the limit as set is kept");
  tap_ok(!ttl_plan_resume(&t, 510 * S, 2010) && t.deadline_ns == 560 * S, "a second resume changes nothing");

  /* Set while paused: all of it is left, to run from the resume. */
  ttl_plan_set(&t, 30, true, 600 * S, 3000);
  tap_ok(ttl_stopped(&t) && t.left == 30 && t.seconds == 30, "set while paused: 30 s left, stopped");
  tap_ok(ttl_plan_resume(&t, 700 * S, 3100) && t.deadline_ns == 730 * S, "runs from the resume");

  /* Paused after it ran out (the keeper had not acted yet): nothing left,
   * and it runs out at once on resume. */
  ttl_plan_set(&t, 1, false, 0, 0);
  tap_ok(t.deadline_ns == 1 * S, "a deadline at boot time 0 + 1 s");
  tap_ok(ttl_plan_pause(&t, 5 * S) && t.left == 0 && ttl_stopped(&t), "paused past it: 0 left, still a limit");
  tap_ok(ttl_plan_resume(&t, 9 * S, 0) && ttl_plan_expired(&t, 9 * S), "run out at the resume");

  /* A deadline is never 0, the stopped clock's mark. */
  ttl_plan_set(&t, 0.0000000001, false, 0, 0);
  tap_ok(t.deadline_ns != 0 && !ttl_stopped(&t), "a tiny limit at boot time 0 still has a deadline");

  tap_ok(ttl_ns(1.5) == 1500000000LL, "seconds to nanoseconds");
  tap_ok(ttl_ns(-1) == 0 && ttl_ns(TTL_MAX_SECONDS * 10) == ttl_ns(TTL_MAX_SECONDS), "saturated");
  return tap_done();
}
