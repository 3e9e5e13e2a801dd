/* SPDX-License-Identifier: Apache-2.0 */
/* The keeper of a sandbox's time limit.  It waits, in one poll, on three
 * things: its init's pidfd (the sandbox ended: nothing left to keep), a
 * timerfd armed at the deadline (CLOCK_BOOTTIME, absolute), and inotify on
 * the sandbox's directory, where every change of the limit (hutch ttl, a
 * pause, a resume) renames a new state.json in.  Each wake-up re-reads the
 * record under the state lock and re-arms from it: no signal, no message.
 *
 * What it holds is fixed: three fds, the state root, one state record
 * at a time (read capped at 1 MiB), a 4 KiB inotify buffer.  Nothing the
 * sandbox writes reaches it (the sandbox cannot write its state
 * directory), so the sandbox cannot make it grow. */
#include "config.h"

#include "keeper.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "helper_proc.h"
#include "proc_stat.h"
#include "ttl_expire.h"
#include "util.h"

struct keeper_args {
  int rootfd;
  char id[40];
  pid_t init;
  uint64_t init_start;
};

/* Re-reads the record and re-arms the timer; runs the limit out when it is
 * due.  False when there is nothing left to keep. */
static bool keeper_check(const struct keeper_args *a, int tfd) {
  hutch_error_t err = NULL;
  int lockfd = state_lock(a->rootfd, a->id, &err);
  struct sandbox_state st;
  if (lockfd < 0 || state_read(a->rootfd, a->id, &st, &err) < 0) {
    hutch_error_free(&err);
    if (lockfd >= 0)
      close(lockfd);
    return false;
  }
  bool keep = false;
  /* Another keeper recorded (or none: a start that failed to record this
   * one): this one is not wanted. */
  if (st.live.keeper.pid != getpid() || !state_is_running(&st)) {
    keep = false;
  } else if (!ttl_active(&st.live.ttl)) {
    /* The limit was cleared (hutch ttl ID none). */
    st.live.keeper = (struct helper_record){0};
    if (state_write(lockfd, &st, &err) < 0)
      hutch_error_free(&err);
  } else if (ttl_plan_expired(&st.live.ttl, ttl_boot_now())) {
    sandbox_ttl_run_out(a->rootfd, lockfd, &st, "keeper");
    lockfd = -1;
  } else {
    struct itimerspec its = {0};
    if (!ttl_stopped(&st.live.ttl)) {
      its.it_value.tv_sec = st.live.ttl.deadline_ns / 1000000000;
      its.it_value.tv_nsec = st.live.ttl.deadline_ns % 1000000000;
    }
    keep = timerfd_settime(tfd, TFD_TIMER_ABSTIME, &its, NULL) == 0;
  }
  state_clear(&st);
  if (lockfd >= 0)
    close(lockfd);
  return keep;
}

/* Reads what inotify has; false when the directory itself went (removed,
 * or renamed into a spare). */
static bool drain_inotify(int ifd, bool *changed) {
  _Alignas(struct inotify_event) char buf[4096];
  ssize_t n;
  while ((n = read(ifd, buf, sizeof(buf))) > 0) {
    for (char *p = buf; p < buf + n;) {
      const struct inotify_event *ev = (const struct inotify_event *)p;
      if (ev->mask & (IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED | IN_UNMOUNT))
        return false;
      if ((ev->mask & IN_Q_OVERFLOW) || (ev->len && strcmp(ev->name, "state.json") == 0))
        *changed = true;
      p += sizeof(*ev) + ev->len;
    }
  }
  return true;
}

__attribute__((noreturn)) static void keeper_main(void *data) {
  const struct keeper_args *a = data;
  int pidfd = (int)syscall(SYS_pidfd_open, a->init, 0);
  if (pidfd < 0 || proc_stat_start_time(a->init) != a->init_start)
    _exit(0);
  int tfd = timerfd_create(CLOCK_BOOTTIME, TFD_CLOEXEC | TFD_NONBLOCK);
  int ifd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
  char dir[64];
  snprintf(dir, sizeof(dir), "/proc/self/fd/%d/%s", a->rootfd, a->id);
  /* Without these it could not keep anything: it ends, and the next
   * listing or open of the sandbox finds the limit unwatched (backstop). */
  if (tfd < 0 || ifd < 0 ||
      inotify_add_watch(ifd, dir, IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR | IN_DONT_FOLLOW) < 0)
    _exit(1);
  bool changed = true;
  for (;;) {
    if (changed && !keeper_check(a, tfd))
      _exit(0);
    changed = false;
    struct pollfd p[3] = {{pidfd, POLLIN, 0}, {tfd, POLLIN, 0}, {ifd, POLLIN, 0}};
    if (poll(p, 3, -1) < 0) {
      if (errno == EINTR)
        continue;
      _exit(1);
    }
    if (p[0].revents)
      _exit(0); /* init ended: `hutch rm` cleans up what is left */
    if (p[1].revents) {
      uint64_t ticks;
      if (read(tfd, &ticks, sizeof(ticks)) < 0 && errno != EAGAIN)
        _exit(1);
      changed = true;
    }
    if (p[2].revents && !drain_inotify(ifd, &changed))
      _exit(0);
  }
}

int keeper_ensure(int rootfd, struct sandbox_state *st, hutch_error_t *err) {
  if (!ttl_active(&st->live.ttl) || proc_stat_alive(st->live.keeper.pid, st->live.keeper.start_time))
    return 0;
  struct keeper_args a = {.rootfd = rootfd, .init = st->pid, .init_start = st->start_time};
  snprintf(a.id, sizeof(a.id), "%s", st->id);
  uint64_t start = 0;
  pid_t pid = helper_start("hutch-keeper", &rootfd, 1, keeper_main, &a, &start, err);
  if (pid < 0)
    return hutch_error_wrap(err, "sandbox %s: its time limit", st->id);
  st->live.keeper = (struct helper_record){.pid = pid, .start_time = start};
  return 0;
}
