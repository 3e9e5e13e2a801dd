/* SPDX-License-Identifier: Apache-2.0 */
/* When a live sandbox's time limit runs out (ttl_expire.h). */
#include "config.h"

#include "ttl_expire.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "audit.h"
#include "proc_stat.h"
#include "sandbox.h"
#include "teardown.h"
#include "util.h"

int64_t ttl_boot_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_BOOTTIME, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

double ttl_wall_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static const char *action_name(enum hutch_ttl_action a) {
  return a == HUTCH_TTL_PAUSE ? "pause" : "remove";
}

/* "ttl" (a limit set or cleared) or "ttl_expired"; a record that cannot be
 * written is a warning: the limit holds all the same. */
void ttl_audit(int dirfd, const char *type, const struct ttl_record *t, const char *by) {
  struct audit_rec r;
  audit_rec_init(&r, type);
  if (ttl_active(t))
    audit_rec_double(&r, "seconds", t->seconds);
  else
    audit_rec_null(&r, "seconds");
  audit_rec_str(&r, strcmp(type, "ttl") == 0 ? "on_ttl" : "action", action_name(t->on_ttl));
  audit_rec_str(&r, "by", by);
  if (strcmp(type, "ttl") == 0)
    audit_rec_caller(&r);
  hutch_error_t err = NULL;
  if (dirfd < 0 || audit_append(dirfd, AUDIT_LOG_NAME, 0, &r, &err) < 0) {
    if (err == NULL)
      hutch_error_set(&err, EBADF, "audit log: the sandbox's directory is gone");
    hutch_log_error(HUTCH_LOG_WARNING, err);
    hutch_error_free(&err);
  }
  audit_rec_free(&r);
}

/* A handle on st, as hutch_sandbox_open makes one, for the pause. */
static int pause_recorded(int rootfd, const struct sandbox_state *st, hutch_error_t *err) {
  struct hutch_sandbox *sb = xcalloc(1, sizeof(*sb));
  snprintf(sb->id, sizeof(sb->id), "%s", st->id);
  sb->state_fd = fcntl(rootfd, F_DUPFD_CLOEXEC, 3);
  sb->root_fd = sb->userns_fd = sb->init_pidfd = sb->layer_fd = -1;
  sb->pid = st->pid;
  sb->start_time = st->start_time;
  sb->limits = st->limits;
  int r = sb->state_fd < 0 ? hutch_error_sys(err, "pause sandbox %s: dup", st->id) : hutch_sandbox_pause(sb, NULL, err);
  hutch_sandbox_close(sb);
  return r;
}

void sandbox_ttl_run_out(int rootfd, int lockfd, struct sandbox_state *st, const char *by) {
  ttl_audit(lockfd, "ttl_expired", &st->live.ttl, by);
  _cleanup_free_ char *why = NULL;
  hutch_error_t err = NULL;
  if (st->live.ttl.on_ttl == HUTCH_TTL_PAUSE) {
    /* The limit is used up: recorded so before the pause (which then finds
     * no clock to stop), and the lock let go, which the pause takes. */
    st->live.ttl = (struct ttl_record){0};
    if (st->live.keeper.pid == getpid())
      st->live.keeper = (struct helper_record){0};
    int r = state_write(lockfd, st, &err);
    close(lockfd);
    lockfd = -1;
    if (r == 0 && pause_recorded(rootfd, st, &err) == 0)
      return;
    /* Never left running past its limit: a failed pause removes it. */
    why = xasprintf("ttl expired (the pause failed: %s)", err->msg);
    hutch_error_free(&err);
  }
  struct teardown t;
  teardown_from_state(&t, rootfd, st);
  t.end_reason = why ? why : "ttl expired";
  if (sandbox_teardown(&t, &err) < 0) {
    hutch_log_error(HUTCH_LOG_WARNING, err);
    hutch_error_free(&err);
  }
  if (lockfd >= 0)
    close(lockfd);
}

/* Run out, running, and no keeper of it alive. */
static bool unwatched_and_due(const struct sandbox_state *st) {
  return ttl_plan_expired(&st->live.ttl, ttl_boot_now()) && state_is_running(st) &&
         !proc_stat_alive(st->live.keeper.pid, st->live.keeper.start_time);
}

int sandbox_ttl_backstop(int rootfd, const struct sandbox_state *seen) {
  if (!unwatched_and_due(seen))
    return 0;
  hutch_error_t err = NULL;
  int lockfd = state_lock(rootfd, seen->id, &err);
  struct sandbox_state st;
  if (lockfd < 0 || state_read(rootfd, seen->id, &st, &err) < 0) {
    hutch_error_free(&err);
    if (lockfd >= 0)
      close(lockfd);
    return 0;
  }
  /* Looked at again under the lock: a `hutch ttl` may just have moved it. */
  if (!unwatched_and_due(&st)) {
    state_clear(&st);
    close(lockfd);
    return 0;
  }
  bool pause = st.live.ttl.on_ttl == HUTCH_TTL_PAUSE;
  sandbox_ttl_run_out(rootfd, lockfd, &st, "backstop");
  hutch_log(HUTCH_LOG_WARNING, "sandbox %s: its time limit ran out while no keeper watched it: %s", st.id,
            pause ? "paused now" : "removed now");
  state_clear(&st);
  return 1;
}
