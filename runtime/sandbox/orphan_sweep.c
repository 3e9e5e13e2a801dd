/* SPDX-License-Identifier: Apache-2.0 */
/* A one-shot sandbox (hutch exec, hutch_run) and one made with
 * die_with_creator (hutch run's, a build's) end with the process that
 * made them: the kernel kills init (its parent-death signal), and its pid
 * namespace, mounts and proxy go with it.  What that process would have
 * removed at the end, its record in the state directory, its cgroup and
 * its audit log's end, stays when it is SIGKILLed: `hutch ps` listed it as
 * dead for ever.  Nothing else will ever remove it, so the next hutch that
 * lists the state directory or starts a one-shot in it does, as `hutch rm`
 * would.  A record without an owner (a long-lived sandbox, or one made by
 * an older hutch) is left to `hutch rm`, and so is one made with --keep,
 * whose remains are asked for. */
#include "config.h"

#include "orphan_sweep.h"

#include <unistd.h>

#include "proc_stat.h"
#include "teardown.h"
#include "util.h"

static bool orphaned(const struct sandbox_state *st) {
  return st->owner_pid > 0 && !st->keep && !state_is_running(st) &&
         !proc_stat_alive(st->owner_pid, st->owner_start_time);
}

int sandbox_orphan_backstop(int rootfd, const struct sandbox_state *seen) {
  if (!orphaned(seen))
    return 0;
  hutch_error_t err = NULL;
  _cleanup_close_ int lock = state_lock(rootfd, seen->id, &err);
  struct sandbox_state st;
  if (lock < 0 || state_read(rootfd, seen->id, &st, &err) < 0) {
    hutch_error_free(&err);
    return 0;
  }
  /* Looked at again under the lock: another sweep or a `hutch rm` may have
   * been first. */
  if (!orphaned(&st)) {
    state_clear(&st);
    return 0;
  }
  struct teardown t;
  teardown_from_state(&t, rootfd, &st);
  t.end_reason = "removed (the process it ended with was killed)";
  if (sandbox_teardown(&t, &err) < 0) {
    hutch_log_error(HUTCH_LOG_WARNING, err);
    hutch_error_free(&err);
  } else {
    hutch_debug("sandbox %s: removed, the process it ended with (pid %d) was killed", st.id, (int)st.owner_pid);
  }
  state_clear(&st);
  return 1;
}
