/* SPDX-License-Identifier: Apache-2.0 */
/* hutch_sandbox_pause / hutch_sandbox_resume: every process of a live
 * sandbox frozen, its init included, and later let go on.  With a cgroup
 * (v2) its freezer does it; without one, the pauser (pause_ptrace.c).
 * A pause is recorded in `<state>/<id>/paused` (its own file: state.json
 * changes only to stop a time limit's clock), made with O_EXCL before the freeze, so that a
 * second pause, a command or a copy that comes meanwhile sees it and
 * stops, and removed after the resume. */
#include "config.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "audit.h"
#include "paths.h"
#include "cgroup.h"
#include "pause_ptrace.h"
#include "proc_stat.h"
#include "sandbox.h"
#include "sandbox_ttl.h"
#include "state.h"
#include "util.h"

#define PAUSED_FILE "paused"
#define PAUSED_MAX 4096

const char *hutch_pause_method_name(enum hutch_pause_method m) {
  switch (m) {
  case HUTCH_PAUSE_CGROUP:
    return "cgroup";
  case HUTCH_PAUSE_PTRACE:
    return "ptrace";
  default:
    return "none";
  }
}

/* The record of a pause, NULL-safe on a file being written (empty: the
 * pause is under way). */
static void parse_marker(const char *text, struct hutch_pause_status *out) {
  *out = (struct hutch_pause_status){.paused = true, .method = HUTCH_PAUSE_NONE};
  cJSON *o = text ? cJSON_Parse(text) : NULL;
  if (o == NULL)
    return;
  const cJSON *m = cJSON_GetObjectItemCaseSensitive(o, "method");
  if (cJSON_IsString(m))
    out->method = strcmp(m->valuestring, "cgroup") == 0   ? HUTCH_PAUSE_CGROUP
                  : strcmp(m->valuestring, "ptrace") == 0 ? HUTCH_PAUSE_PTRACE
                                                          : HUTCH_PAUSE_NONE;
  const cJSON *v;
  if (cJSON_IsNumber(v = cJSON_GetObjectItemCaseSensitive(o, "since")))
    out->since = v->valuedouble;
  if (cJSON_IsNumber(v = cJSON_GetObjectItemCaseSensitive(o, "tasks")))
    out->tasks = (unsigned)v->valuedouble;
  if (cJSON_IsNumber(v = cJSON_GetObjectItemCaseSensitive(o, "pauser_pid")))
    out->pauser_pid = (pid_t)v->valuedouble;
  if (cJSON_IsString(v = cJSON_GetObjectItemCaseSensitive(o, "pauser_start_time")))
    out->pauser_start_time = strtoull(v->valuestring, NULL, 10);
  cJSON_Delete(o);
}

/* 1 and *out when sandbox `id` (under state root `rootfd`) is paused, 0
 * when not.  A ptrace pause whose pauser is gone is no pause: its tasks
 * died with the pauser (PTRACE_O_EXITKILL). */
static int read_marker(int rootfd, const char *id, struct hutch_pause_status *out) {
  *out = (struct hutch_pause_status){0};
  char p[64];
  snprintf(p, sizeof(p), "%s/" PAUSED_FILE, id);
  errno = 0;
  _cleanup_free_ char *text = read_file_at(rootfd, p, PAUSED_MAX, NULL);
  if (text == NULL && errno == ENOENT)
    return 0;
  parse_marker(text, out);
  if (out->method == HUTCH_PAUSE_PTRACE && !proc_stat_alive(out->pauser_pid, out->pauser_start_time)) {
    out->paused = false;
    return 0;
  }
  return 1;
}

int hutch_sandbox_pause_status(const char *state_dir, const char *id, struct hutch_pause_status *out,
                               hutch_error_t *err) {
  *out = (struct hutch_pause_status){0};
  if (!paths_valid_name(id))
    return hutch_error_set(err, EINVAL, "invalid sandbox id '%s'", id);
  _cleanup_close_ int rootfd = state_open_root(state_dir, NULL, err);
  if (rootfd < 0)
    return -1;
  return read_marker(rootfd, id, out);
}

bool sandbox_is_paused(struct hutch_sandbox *sb) {
  return sandbox_paused(sb, NULL);
}

bool sandbox_paused(struct hutch_sandbox *sb, enum hutch_pause_method *method) {
  struct hutch_pause_status ps;
  bool paused = read_marker(sb->state_fd, sb->id, &ps) == 1;
  if (method)
    *method = paused ? ps.method : HUTCH_PAUSE_NONE;
  return paused;
}

int sandbox_refuse_paused(struct hutch_sandbox *sb, hutch_error_t *err) {
  struct hutch_pause_status ps;
  if (read_marker(sb->state_fd, sb->id, &ps) == 0 || sandbox_hold_backstop(sb->state_fd, sb->id, sb->limits.cgroup) > 0)
    return 0;
  hutch_error_set(err, EAGAIN, "sandbox %s is paused (%s)", sb->id, hutch_pause_method_name(ps.method));
  return hutch_error_hint(err, "`hutch resume %s` lets it go on", sb->id);
}

static void audit_event(int dirfd, const char *type, const char *method, double ms, unsigned tasks, double paused_s) {
  struct audit_rec r;
  audit_rec_init(&r, type);
  audit_rec_caller(&r);
  audit_rec_str(&r, "method", method);
  if (strcmp(type, "pause") == 0) {
    audit_rec_double(&r, "freeze_ms", ms);
    audit_rec_u64(&r, "tasks", tasks);
  } else
    audit_rec_double(&r, "paused_seconds", paused_s);
  hutch_error_t err = NULL;
  if (audit_append(dirfd, AUDIT_LOG_NAME, 0, &r, &err) < 0) {
    hutch_log_error(HUTCH_LOG_WARNING, err);
    hutch_error_free(&err);
  }
  audit_rec_free(&r);
}

static double wall_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The record written over the empty marker, by a rename (a reader sees
 * the whole of one or the other). */
static int write_marker(int dirfd, enum hutch_pause_method m, bool hold, double since, const struct pause_report *rep,
                        uint64_t pauser_start, hutch_error_t *err) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "method", hutch_pause_method_name(m));
  if (hold) /* a copy's (sandbox_hold_backstop) */
    cJSON_AddTrueToObject(o, "hold");
  cJSON_AddNumberToObject(o, "since", since);
  cJSON_AddNumberToObject(o, "tasks", rep->tasks);
  if (m == HUTCH_PAUSE_PTRACE) {
    char start[32];
    snprintf(start, sizeof(start), "%llu", (unsigned long long)pauser_start);
    cJSON_AddNumberToObject(o, "pauser_pid", rep->pid);
    cJSON_AddStringToObject(o, "pauser_start_time", start);
  }
  _cleanup_free_ char *text = cJSON_PrintUnformatted(o);
  cJSON_Delete(o);
  if (write_file_at(dirfd, PAUSED_FILE ".tmp", text, strlen(text), 0600) < 0 ||
      renameat(dirfd, PAUSED_FILE ".tmp", dirfd, PAUSED_FILE) < 0)
    return hutch_error_sys(err, "pause: record it");
  return 0;
}

/* A pause or resume holds the state lock (state.h) throughout: another
 * one, or a snapshot that must see the sandbox frozen while it copies,
 * waits for it. */
int hutch_sandbox_pause(struct hutch_sandbox *sb, enum hutch_pause_method *used, hutch_error_t *err) {
  if (used)
    *used = HUTCH_PAUSE_NONE;
  _cleanup_close_ int dirfd = state_lock(sb->state_fd, sb->id, err);
  return dirfd < 0 ? -1 : sandbox_pause_locked(sb, dirfd, used, err);
}

/* A pause that failed: its time limit goes on (a failure to is said). */
static void restart_clock(struct hutch_sandbox *sb, int dirfd) {
  hutch_error_t err = NULL;
  if (sandbox_ttl_start_clock(sb, dirfd, &err) < 0) {
    hutch_log_error(HUTCH_LOG_WARNING, err);
    hutch_error_free(&err);
  }
}

int sandbox_pause_locked(struct hutch_sandbox *sb, int dirfd, enum hutch_pause_method *used, hutch_error_t *err) {
  struct pause_pending p = {0}; /* a pause: it outlives this process */
  if (used)
    *used = HUTCH_PAUSE_NONE;
  if (sandbox_pause_begin_locked(sb, dirfd, &p, err) < 0)
    return -1;
  return sandbox_pause_finish_locked(sb, dirfd, &p, used, err);
}

int sandbox_pause_begin_locked(struct hutch_sandbox *sb, int dirfd, struct pause_pending *p, hutch_error_t *err) {
  *p = (struct pause_pending){.report_fd = -1, .hold = p->hold};
  sandbox_follow_if_ended_locked(sb); /* a reset since this handle looked */
  if (!proc_stat_alive(sb->pid, sb->start_time)) {
    hutch_error_set(err, ESRCH, "sandbox %s is not running", sb->id);
    return hutch_error_hint(err, "remove it with `hutch rm %s`", sb->id);
  }
  struct hutch_pause_status ps;
  if (read_marker(sb->state_fd, sb->id, &ps) == 1) {
    hutch_error_set(err, EALREADY, "sandbox %s is already paused (%s)", sb->id, hutch_pause_method_name(ps.method));
    return hutch_error_hint(err, "`hutch resume %s` lets it go on", sb->id);
  }
  unlinkat(dirfd, PAUSED_FILE, 0); /* a pause whose pauser died, or one left half made */
  _cleanup_close_ int mfd = openat(dirfd, PAUSED_FILE, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (mfd < 0) {
    if (errno == EEXIST) {
      hutch_error_set(err, EALREADY, "sandbox %s is being paused by another caller", sb->id);
      return hutch_error_hint(err, "`hutch ps` shows it paused once that pause is done");
    }
    return hutch_error_sys(err, "pause sandbox %s: mark it", sb->id);
  }
  /* Once marked: a `hutch ttl` from now on sees it paused (sandbox_ttl.c). */
  if (sandbox_ttl_stop_clock(sb, dirfd, err) < 0) {
    unlinkat(dirfd, PAUSED_FILE, 0);
    return hutch_error_wrap(err, "pause sandbox %s", sb->id);
  }
  p->since = wall_now();
  p->t0 = monotonic_seconds();
  int r;
  if (sb->limits.cgroup[0]) {
    p->method = HUTCH_PAUSE_CGROUP;
    r = cgroup_freeze_set(sb->limits.cgroup, true, err);
  } else {
    p->method = HUTCH_PAUSE_PTRACE;
    r = (p->report_fd = pause_ptrace_launch(dirfd, sb->pid, sb->start_time, p->hold, &p->mid, err)) < 0 ? -1 : 0;
  }
  if (r < 0) {
    unlinkat(dirfd, PAUSED_FILE, 0);
    restart_clock(sb, dirfd);
    return hutch_error_wrap(err, "pause sandbox %s (%s)", sb->id, hutch_pause_method_name(p->method));
  }
  return 0;
}

int sandbox_pause_finish_locked(struct hutch_sandbox *sb, int dirfd, struct pause_pending *p,
                                enum hutch_pause_method *used, hutch_error_t *err) {
  if (used)
    *used = HUTCH_PAUSE_NONE;
  struct pause_report rep = {0};
  uint64_t pauser_start = 0;
  enum hutch_pause_method m = p->method;
  int r;
  if (m == HUTCH_PAUSE_CGROUP) {
    r = cgroup_freeze_wait(sb->limits.cgroup, true, PAUSE_SETTLE_SECONDS, err);
  } else {
    r = pause_ptrace_wait(dirfd, steal_fd(&p->report_fd), p->mid, &rep, err);
    if (r == 0)
      pauser_start = proc_stat_start_time(rep.pid);
    else if (err && *err && (*err)->errnum == EPERM)
      hutch_error_hint(err, "this host forbids tracing the sandbox's processes (Yama ptrace_scope 3, or a seccomp "
                            "filter around hutch) and gives it no cgroup v2 to freeze; `hutch doctor` says which");
  }
  double ms = (monotonic_seconds() - p->t0) * 1000;
  if (r == 0)
    r = write_marker(dirfd, m, p->hold, p->since, &rep, pauser_start, err);
  if (r < 0) {
    unlinkat(dirfd, PAUSED_FILE, 0);
    restart_clock(sb, dirfd);
    return hutch_error_wrap(err, "pause sandbox %s (%s)", sb->id, hutch_pause_method_name(m));
  }
  audit_event(dirfd, "pause", hutch_pause_method_name(m), ms, rep.tasks, 0);
  if (used)
    *used = m;
  return 0;
}

/* What a `hutch pause` killed half way may have left: a frozen cgroup, or
 * a pauser holding the tasks. */
static void undo_unfinished(struct hutch_sandbox *sb, int dirfd) {
  hutch_error_t ignored = NULL;
  struct pause_report rep;
  if (sb->limits.cgroup[0])
    cgroup_freeze(sb->limits.cgroup, false, PAUSE_SETTLE_SECONDS, &ignored);
  else if (faccessat(dirfd, PAUSE_SOCK, F_OK, AT_SYMLINK_NOFOLLOW) == 0)
    pause_ptrace_resume(dirfd, &rep, &ignored);
  hutch_error_free(&ignored);
}

int hutch_sandbox_resume(struct hutch_sandbox *sb, hutch_error_t *err) {
  _cleanup_close_ int dirfd = state_lock(sb->state_fd, sb->id, err);
  return dirfd < 0 ? -1 : sandbox_resume_locked(sb, dirfd, err);
}

int sandbox_resume_locked(struct hutch_sandbox *sb, int dirfd, hutch_error_t *err) {
  struct hutch_pause_status ps;
  if (read_marker(sb->state_fd, sb->id, &ps) == 0) {
    /* A marker whose pauser is gone: its tasks were killed with it. */
    bool dead = faccessat(dirfd, PAUSED_FILE, F_OK, AT_SYMLINK_NOFOLLOW) == 0;
    unlinkat(dirfd, PAUSED_FILE, 0);
    if (dead || !proc_stat_alive(sb->pid, sb->start_time)) {
      hutch_error_set(err, ESRCH, "sandbox %s is not running%s", sb->id,
                      dead ? ": its pauser ended, and every process of the sandbox with it" : "");
      return hutch_error_hint(err, "remove it with `hutch rm %s`", sb->id);
    }
    return hutch_error_set(err, EINVAL, "sandbox %s is not paused", sb->id);
  }
  if (ps.method == HUTCH_PAUSE_NONE) {
    /* A mark never completed: its `hutch pause` is under way, or was
     * killed, maybe once the freeze was made: that freeze is undone. */
    struct stat st;
    if (fstatat(dirfd, PAUSED_FILE, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
        wall_now() - (double)st.st_mtime < 4 * PAUSE_SETTLE_SECONDS) {
      hutch_error_set(err, EAGAIN, "sandbox %s is being paused", sb->id);
      return hutch_error_hint(err, "try again once `hutch pause` has returned");
    }
    undo_unfinished(sb, dirfd);
    unlinkat(dirfd, PAUSED_FILE, 0);
    audit_event(dirfd, "resume", "unfinished", 0, 0, 0);
    return sandbox_ttl_start_clock(sb, dirfd, err);
  }
  struct pause_report rep = {0};
  int r = ps.method == HUTCH_PAUSE_CGROUP ? cgroup_freeze(sb->limits.cgroup, false, PAUSE_SETTLE_SECONDS, err)
                                          : pause_ptrace_resume(dirfd, &rep, err);
  if (r < 0)
    return hutch_error_wrap(err, "resume sandbox %s (%s)", sb->id, hutch_pause_method_name(ps.method));
  unlinkat(dirfd, PAUSED_FILE, 0);
  audit_event(dirfd, "resume", hutch_pause_method_name(ps.method), 0, 0, wall_now() - ps.since);
  /* After the mark is gone: a `hutch ttl` meanwhile already set a running clock. */
  return sandbox_ttl_start_clock(sb, dirfd, err);
}

/* ---- a pause held for a copy (sandbox.h: sandbox_hold) ---- */

/* Whether sandbox id's marker is a copy's cgroup freeze, complete. */
static bool cgroup_hold_marked(int rootfd, const char *id) {
  char p[64];
  snprintf(p, sizeof(p), "%s/" PAUSED_FILE, id);
  _cleanup_free_ char *text = read_file_at(rootfd, p, PAUSED_MAX, NULL);
  cJSON *o = text ? cJSON_Parse(text) : NULL;
  const cJSON *m = cJSON_GetObjectItemCaseSensitive(o, "method");
  bool held = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "hold")) && cJSON_IsString(m) &&
              strcmp(m->valuestring, "cgroup") == 0;
  cJSON_Delete(o);
  return held;
}

int sandbox_hold_backstop(int rootfd, const char *id, const char *cgroup) {
  if (cgroup == NULL || cgroup[0] == '\0' || !cgroup_hold_marked(rootfd, id))
    return 0;
  /* A holder holds the lock from before its freeze until after its thaw:
   * a lock free with the mark still there is a holder gone. */
  _cleanup_close_ int dirfd = state_trylock(rootfd, id);
  if (dirfd < 0 || !cgroup_hold_marked(rootfd, id))
    return 0;
  hutch_error_t err = NULL;
  if (cgroup_freeze(cgroup, false, PAUSE_SETTLE_SECONDS, &err) < 0) {
    hutch_error_wrap(&err, "sandbox %s: thaw what a killed snapshot or fork left frozen", id);
    hutch_log_error(HUTCH_LOG_WARNING, err);
    hutch_error_free(&err);
    return 0;
  }
  unlinkat(dirfd, PAUSED_FILE, 0);
  audit_event(dirfd, "resume", "holder-killed", 0, 0, 0);
  if (sandbox_ttl_start_clock_at(dirfd, rootfd, id, &err) < 0) {
    hutch_log_error(HUTCH_LOG_WARNING, err);
    hutch_error_free(&err);
  }
  hutch_debug("sandbox %s: thawed, the snapshot or fork that froze it for its copy was killed", id);
  return 1;
}

int sandbox_hold_begin(struct sandbox_hold *h, struct hutch_sandbox *sb, hutch_error_t *err) {
  *h = (struct sandbox_hold){.sb = sb, .dirfd = -1};
  if ((h->dirfd = state_lock(sb->state_fd, sb->id, err)) < 0)
    return -1;
  h->was_paused = sandbox_paused(sb, &h->method);
  return 0;
}

int sandbox_hold_freeze_begin(struct sandbox_hold *h, hutch_error_t *err) {
  if (h->was_paused || h->paused_here || h->freezing)
    return 0;
  h->paused_at = monotonic_seconds();
  h->pending.hold = true;
  if (sandbox_pause_begin_locked(h->sb, h->dirfd, &h->pending, err) < 0)
    return -1;
  h->freezing = true;
  return 0;
}

int sandbox_hold_freeze(struct sandbox_hold *h, hutch_error_t *err) {
  if (h->was_paused || h->paused_here)
    return 0;
  if (sandbox_hold_freeze_begin(h, err) < 0)
    return -1;
  h->freezing = false;
  if (sandbox_pause_finish_locked(h->sb, h->dirfd, &h->pending, &h->method, err) < 0)
    return -1;
  h->paused_here = true;
  return 0;
}

/* A resume that fails is the caller's failure (err, when it has none yet;
 * logged otherwise): it must learn that its sandbox stands still. */
int sandbox_hold_end(struct sandbox_hold *h, hutch_error_t *err) {
  int r = 0;
  if (h->freezing) {
    /* A freeze set going and never waited for: once it is done, it is
     * undone as any other (a pauser must not be left holding the tasks). */
    hutch_error_t e = NULL;
    if (sandbox_hold_freeze(h, &e) < 0) {
      hutch_log_error(HUTCH_LOG_WARNING, e);
      hutch_error_free(&e);
    }
  }
  if (h->paused_here) {
    h->paused_here = false;
    hutch_error_t e = NULL;
    if (sandbox_resume_locked(h->sb, h->dirfd, &e) < 0) {
      hutch_error_wrap(&e, "resume sandbox %s after the copy", h->sb->id);
      hutch_error_hint(&e, "it stays paused: `hutch resume %s`, or `hutch rm %s`", h->sb->id, h->sb->id);
      if (err && *err == NULL) {
        hutch_error_move(err, &e);
      } else {
        hutch_log_error(HUTCH_LOG_WARNING, e);
        hutch_error_free(&e);
      }
      r = -1;
    }
    h->paused_seconds = monotonic_seconds() - h->paused_at;
  }
  if (h->dirfd >= 0)
    close(h->dirfd);
  h->dirfd = -1;
  return r;
}

void sandbox_hold_cleanup(struct sandbox_hold *h) {
  sandbox_hold_end(h, NULL);
}
