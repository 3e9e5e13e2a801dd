/* SPDX-License-Identifier: Apache-2.0 */
/* The arithmetic of a time limit (ttl_plan.h): no clock is read here, the
 * caller passes the instant, so that every case can be tested. */
#include "config.h"

#include "ttl_plan.h"

#include <math.h>

bool ttl_seconds_valid(double s) {
  return isfinite(s) && s > 0 && s <= TTL_MAX_SECONDS;
}

bool ttl_active(const struct ttl_record *t) {
  return t->seconds > 0;
}

bool ttl_stopped(const struct ttl_record *t) {
  return ttl_active(t) && t->deadline_ns == 0;
}

int64_t ttl_ns(double seconds) {
  if (!(seconds > 0))
    return 0;
  if (seconds > TTL_MAX_SECONDS)
    seconds = TTL_MAX_SECONDS;
  return (int64_t)(seconds * 1e9 + 0.5); /* rounded; no libm */
}

void ttl_plan_set(struct ttl_record *t, double seconds, bool paused, int64_t boot_ns, double wall) {
  t->seconds = seconds;
  if (paused) {
    t->deadline_ns = 0;
    t->deadline = 0;
    t->left = seconds;
    return;
  }
  /* 0 is the stopped clock's mark: a deadline is never 0. */
  t->deadline_ns = boot_ns + ttl_ns(seconds);
  if (t->deadline_ns == 0)
    t->deadline_ns = 1;
  t->deadline = wall + seconds;
  t->left = 0;
}

double ttl_plan_left(const struct ttl_record *t, int64_t boot_ns) {
  if (!ttl_active(t))
    return 0;
  if (ttl_stopped(t))
    return t->left > 0 ? t->left : 0;
  return t->deadline_ns > boot_ns ? (double)(t->deadline_ns - boot_ns) / 1e9 : 0;
}

bool ttl_plan_pause(struct ttl_record *t, int64_t boot_ns) {
  if (!ttl_active(t) || ttl_stopped(t))
    return false;
  t->left = ttl_plan_left(t, boot_ns);
  t->deadline_ns = 0;
  t->deadline = 0;
  return true;
}

bool ttl_plan_resume(struct ttl_record *t, int64_t boot_ns, double wall) {
  if (!ttl_stopped(t))
    return false;
  double seconds = t->seconds;
  /* Nothing left: a deadline of now, which has run out. */
  ttl_plan_set(t, t->left, false, boot_ns, wall);
  t->seconds = seconds;
  return true;
}

bool ttl_plan_expired(const struct ttl_record *t, int64_t boot_ns) {
  return ttl_active(t) && !ttl_stopped(t) && t->deadline_ns <= boot_ns;
}
