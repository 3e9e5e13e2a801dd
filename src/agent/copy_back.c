/* SPDX-License-Identifier: Apache-2.0 */
/* files/, at each step's end and at the run's end (copy_back.h). */
#include "config.h"

#include "copy_back.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "transfer.h"
#include "util.h"

/* The step copies may take this share of the run's time, after its first
 * second. */
#define STEP_COPY_SHARE 0.1
#define STEP_COPY_FREE 1.0

static void say(struct copy_back *cb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(struct copy_back *cb, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  _cleanup_free_ char *msg = xvasprintf(fmt, ap);
  va_end(ap);
  if (cb->log)
    cb->log(cb->log_data, msg);
}

void copy_back_init(struct copy_back *cb, const char *run_dir, const char *src, uint64_t limit,
                    void (*log)(void *data, const char *msg), void *log_data) {
  memset(cb, 0, sizeof(*cb));
  cb->run_dir = run_dir;
  cb->src = src;
  cb->limit = limit;
  cb->log = log;
  cb->log_data = log_data;
  cb->from = "none";
}

/* The step copies end for the run: why, once. */
static void step_copies_stop(struct copy_back *cb, const char *bound, const char *why) {
  cb->stopped = bound;
  if (cb->step > 0)
    say(cb, "copies of files/ at each step's end stop: %s; until the run's end files/ holds %s as step %ld ended", why,
        cb->src, cb->step);
  else
    say(cb, "copies of files/ at each step's end stop: %s", why);
}

void copy_back_step(struct copy_back *cb, struct task_sandbox *t, long step, double elapsed) {
  if (cb->stopped || t->removed || t->halted)
    return;
  if (cb->seconds > STEP_COPY_FREE + STEP_COPY_SHARE * elapsed) {
    step_copies_stop(cb, "time", "they took more than a tenth of the run's time");
    return;
  }
  if (cb->bytes >= cb->limit) {
    step_copies_stop(cb, "bytes", "together they copied --copy-limit");
    return;
  }
  _cleanup_free_ char *files = xasprintf("%s/files", cb->run_dir);
  struct hutch_copy_limits limits = {
      .bytes = cb->limit - cb->bytes, .entries = STEP_COPY_ENTRIES, .seconds = STEP_COPY_SECONDS};
  struct hutch_copy_report rep;
  hutch_error_t err = NULL;
  double t0 = monotonic_seconds();
  int r = transfer_update_out(t, cb->src, files, &limits, &rep, &err);
  cb->seconds += monotonic_seconds() - t0;
  cb->copies++;
  cb->files += rep.files;
  cb->bytes += rep.bytes;
  if (r < 0) {
    _cleanup_free_ char *why = hutch_error_format(err);
    hutch_error_free(&err);
    step_copies_stop(cb, "error", why);
    return;
  }
  if (rep.stopped == NULL) {
    cb->step = step;
    cb->from = "step";
    return;
  }
  /* What it copied before the bound may mix two steps' files: the step
   * stays the last one copied whole. */
  _cleanup_free_ char *why =
      strcmp(rep.stopped, "bytes") == 0
          ? xasprintf("together they would copy more than --copy-limit (%llu bytes)", (unsigned long long)cb->limit)
      : strcmp(rep.stopped, "entries") == 0 ? xasprintf("one would walk more than %u entries", STEP_COPY_ENTRIES)
      : strcmp(rep.stopped, "time") == 0    ? xasprintf("one took more than %.0f s", STEP_COPY_SECONDS)
                                            : xasprintf("one reached a directory %u levels deep", HUTCH_COPY_DEPTH);
  step_copies_stop(cb, rep.stopped, why);
}

/* dir/a and dir/b swapped, or a put in b's place (b removed). */
static int put_in_place(const char *dir, const char *from, const char *to) {
  _cleanup_close_ int d = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (d < 0)
    return -1;
  if (renameat2(d, from, d, to, RENAME_EXCHANGE) == 0)
    return remove_tree_at(d, from);
  if (errno != EINVAL && errno != ENOSYS && errno != EOPNOTSUPP)
    return -1;
  /* A file system that cannot swap: two renames, the old one gone between
   * them. */
  _cleanup_free_ char *old = xasprintf("%s.old", to);
  if (remove_tree_at(d, old) < 0 || renameat(d, to, d, old) < 0 || renameat(d, from, d, to) < 0)
    return -1;
  return remove_tree_at(d, old);
}

/* Which bound ended the copy at the end early, in the run's log. */
static void say_stopped(struct copy_back *cb, const char *stopped) {
  if (strcmp(stopped, "bytes") == 0)
    say(cb, "the copy-back stopped at the --copy-limit of %llu bytes: some files are missing",
        (unsigned long long)cb->limit);
  else if (strcmp(stopped, "entries") == 0)
    say(cb, "the copy-back stopped at %u entries (files, directories and skipped ones): some files are missing",
        HUTCH_COPY_ENTRIES);
  else if (strcmp(stopped, "depth") == 0)
    say(cb, "the copy-back stopped at a directory %u levels deep: some files are missing", HUTCH_COPY_DEPTH);
  else
    say(cb, "the copy-back stopped after %.0f s, its time limit: some files are missing", HUTCH_COPY_SECONDS);
}

/* The whole copy into dir/name. */
static int copy_whole(struct copy_back *cb, struct task_sandbox *t, const char *name, hutch_error_t *err) {
  _cleanup_free_ char *dest = xasprintf("%s/%s", cb->run_dir, name);
  return transfer_out(t, cb->src, dest, cb->limit, &cb->final, err);
}

int copy_back_final(struct copy_back *cb, struct task_sandbox *t, hutch_error_t *err) {
  if (strcmp(cb->from, "step") != 0) {
    if (copy_whole(cb, t, "files", err) < 0)
      return -1;
  } else {
    /* Beside files/ until it is whole: a hutch run killed meanwhile leaves
     * files/ as the trajectory says, and this directory by its name. */
    _cleanup_free_ char *tmp = xasprintf("%s/files.incomplete", cb->run_dir);
    if (remove_tree_at(AT_FDCWD, tmp) < 0)
      return hutch_error_sys(err, "remove %s", tmp);
    if (copy_whole(cb, t, "files.incomplete", err) < 0) {
      remove_tree_at(AT_FDCWD, tmp);
      return -1;
    }
    if (put_in_place(cb->run_dir, "files.incomplete", "files") < 0)
      return hutch_error_sys(err, "put %s in place of %s/files", tmp, cb->run_dir);
  }
  cb->from = "end";
  const struct hutch_copy_report *rep = &cb->final;
  say(cb, "copied back %llu files, %llu bytes, to %s/files%s", (unsigned long long)rep->files,
      (unsigned long long)rep->bytes, cb->run_dir, rep->skipped ? " (symlinks and special files skipped)" : "");
  if (rep->stopped)
    say_stopped(cb, rep->stopped);
  if (rep->renamed)
    say(cb, "%llu renamed to NAME.sandbox in %s/files: names host programs load by themselves (hutch-security(7))",
        (unsigned long long)rep->renamed, cb->run_dir);
  return 0;
}

void copy_back_record(const struct copy_back *cb, struct trajectory *traj) {
  if (strcmp(cb->from, "end") == 0) {
    const struct hutch_copy_report *rep = &cb->final;
    if (rep->skipped)
      trajectory_set(traj, "copy_back_skipped", cJSON_CreateNumber((double)rep->skipped));
    if (rep->renamed)
      trajectory_set(traj, "copy_back_renamed", cJSON_CreateNumber((double)rep->renamed));
    trajectory_set(traj, "copy_back_limit_hit", cJSON_CreateBool(rep->stopped != NULL));
    if (rep->stopped)
      trajectory_set(traj, "copy_back_stopped", cJSON_CreateString(rep->stopped));
  }
  trajectory_set(traj, "files_from", cJSON_CreateString(cb->from));
  trajectory_set(traj, "files_step",
                 strcmp(cb->from, "step") == 0 ? cJSON_CreateNumber((double)cb->step) : cJSON_CreateNull());
  cJSON *sc = cJSON_CreateObject();
  cJSON_AddNumberToObject(sc, "count", (double)cb->copies);
  cJSON_AddNumberToObject(sc, "files", (double)cb->files);
  cJSON_AddNumberToObject(sc, "bytes", (double)cb->bytes);
  cJSON_AddNumberToObject(sc, "seconds", cb->seconds);
  if (cb->stopped)
    cJSON_AddStringToObject(sc, "stopped", cb->stopped);
  else
    cJSON_AddNullToObject(sc, "stopped");
  trajectory_set(traj, "step_copies", sc);
}
