/* SPDX-License-Identifier: Apache-2.0 */
/* A live sandbox's time limit (sandbox_ttl.h).  Every change goes through
 * state_update, under the sandbox's lock: `hutch ttl`, a pause, a resume
 * and the keeper never lose each other's update.  Where the time counts
 * is ttl_plan.c; who waits for it is keeper.c; what is done when it runs
 * out is ttl_expire.c. */
#include "config.h"

#include "sandbox_ttl.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "keeper.h"
#include "sandbox.h"
#include "ttl_expire.h"
#include "util.h"

struct set_args {
  struct hutch_sandbox *sb;
  double seconds;
  const enum hutch_ttl_action *on_ttl;
  struct ttl_record result;
};

static int set_fn(struct sandbox_state *st, void *data, hutch_error_t *err) {
  struct set_args *a = data;
  if (!st->long_lived || !state_is_running(st)) {
    hutch_error_set(err, ESRCH, "sandbox %s is not running", st->id);
    return hutch_error_hint(err, "remove it with `hutch rm %s`", st->id);
  }
  struct ttl_record *t = &st->live.ttl;
  if (a->seconds <= 0) {
    /* Its keeper sees the record change and ends. */
    *t = (struct ttl_record){0};
    a->result = *t;
    return 0;
  }
  enum hutch_ttl_action on = a->on_ttl ? *a->on_ttl : ttl_active(t) ? t->on_ttl : HUTCH_TTL_REMOVE;
  /* Paused (or being paused): the time is all left, to run from the
   * resume; the pause's own update then finds the clock stopped. */
  ttl_plan_set(t, a->seconds, sandbox_is_paused(a->sb), ttl_boot_now(), ttl_wall_now());
  t->on_ttl = on;
  a->result = *t;
  return keeper_ensure(a->sb->state_fd, st, err);
}

int sandbox_ttl_apply(struct hutch_sandbox *sb, double seconds, const enum hutch_ttl_action *on_ttl, const char *by,
                      hutch_error_t *err) {
  if (isnan(seconds) || seconds > TTL_MAX_SECONDS) {
    hutch_error_set(err, EINVAL, "invalid time limit for sandbox %s: %g seconds", sb->id, seconds);
    return hutch_error_hint(err, "a time limit is at most ten years; 0 (or less) clears it");
  }
  if (on_ttl && *on_ttl != HUTCH_TTL_REMOVE && *on_ttl != HUTCH_TTL_PAUSE)
    return hutch_error_set(err, EINVAL, "invalid action for sandbox %s's time limit: %d", sb->id, (int)*on_ttl);
  struct set_args a = {.sb = sb, .seconds = seconds, .on_ttl = on_ttl};
  if (state_update(sb->state_fd, sb->id, set_fn, &a, err) < 0)
    return hutch_error_wrap(err, "set the time limit of sandbox %s", sb->id);
  _cleanup_close_ int dirfd = openat(sb->state_fd, sb->id, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
  ttl_audit(dirfd, "ttl", &a.result, by);
  return 0;
}

int hutch_sandbox_set_ttl(struct hutch_sandbox *sb, double seconds, hutch_error_t *err) {
  return sandbox_ttl_apply(sb, seconds, NULL, "set_ttl", err);
}

/* A positive return: nothing to change, nothing written. */
static int stop_fn(struct sandbox_state *st, void *data, hutch_error_t *err) {
  (void)data;
  (void)err;
  return ttl_plan_pause(&st->live.ttl, ttl_boot_now()) ? 0 : 1;
}

static int start_fn(struct sandbox_state *st, void *data, hutch_error_t *err) {
  (void)data;
  (void)err;
  return ttl_plan_resume(&st->live.ttl, ttl_boot_now(), ttl_wall_now()) ? 0 : 1;
}

int sandbox_ttl_stop_clock(struct hutch_sandbox *sb, int lockfd, hutch_error_t *err) {
  if (state_update_locked(lockfd, sb->state_fd, sb->id, stop_fn, NULL, err) < 0)
    return hutch_error_wrap(err, "stop the clock of sandbox %s's time limit", sb->id);
  return 0;
}

int sandbox_ttl_start_clock(struct hutch_sandbox *sb, int lockfd, hutch_error_t *err) {
  return sandbox_ttl_start_clock_at(lockfd, sb->state_fd, sb->id, err);
}

int sandbox_ttl_start_clock_at(int lockfd, int rootfd, const char *id, hutch_error_t *err) {
  if (state_update_locked(lockfd, rootfd, id, start_fn, NULL, err) < 0) {
    hutch_error_wrap(err, "start the clock of sandbox %s's time limit again", id);
    return hutch_error_hint(err, "`hutch ttl %s DURATION` sets it anew", id);
  }
  return 0;
}
