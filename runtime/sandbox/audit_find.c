/* SPDX-License-Identifier: Apache-2.0 */
/* hutch_audit_find and hutch_audit_verify (hutch.h): where a sandbox's
 * audit log is, live or archived, and the check of its chain. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "audit.h"
#include "audit_sandbox.h"
#include "hutch.h"
#include "names.h"
#include "paths.h"
#include "state.h"
#include "util.h"

#define AUDIT_LOCK_SECONDS 5

int hutch_audit_find(const char *state_dir, const char *what, char **path, hutch_error_t *err) {
  *path = NULL;
  struct stat st;
  if (strchr(what, '/') != NULL || stat(what, &st) == 0) {
    if (stat(what, &st) < 0)
      return hutch_error_sys(err, "audit log: %s", what);
    *path = S_ISDIR(st.st_mode) ? xasprintf("%s/" AUDIT_LOG_NAME, what) : xstrdup(what);
    return 0;
  }
  if (!paths_valid_name(what))
    return hutch_error_set(err, EINVAL, "audit log: %s is neither a file, a directory nor a sandbox id", what);
  _cleanup_free_ char *root = NULL;
  _cleanup_close_ int rootfd = state_open_root(state_dir, &root, err);
  if (rootfd < 0)
    return -1;
  /* A live sandbox's name; once it is removed, only its id finds the log. */
  char id[40];
  if (names_lookup(rootfd, what, id) == 0)
    what = id;
  _cleanup_free_ char *live = xasprintf("%s/" AUDIT_LOG_NAME, what);
  _cleanup_free_ char *kept = xasprintf(AUDIT_ARCHIVE_DIR "/%s.jsonl", what);
  const char *rel = fstatat(rootfd, live, &st, AT_SYMLINK_NOFOLLOW) == 0   ? live
                    : fstatat(rootfd, kept, &st, AT_SYMLINK_NOFOLLOW) == 0 ? kept
                                                                           : NULL;
  if (rel == NULL) {
    hutch_error_set(err, ENOENT, "audit log: no log of sandbox %s in %s", what, root);
    return hutch_error_hint(err,
                            "a one-shot `hutch exec` keeps its log in %s/%s/ID.jsonl, or in the file of "
                            "--audit FILE; at most the newest %d are kept",
                            root, AUDIT_ARCHIVE_DIR, AUDIT_ARCHIVE_KEEP);
  }
  *path = xasprintf("%s/%s", root, rel);
  return 0;
}

/* Opens one input of the verification: never a terminal, never waiting on
 * a FIFO or device (O_NONBLOCK), never through a symbolic link planted in
 * its place (the log and its head may sit where a sandbox wrote), and only
 * a regular file.  -ENOENT (no error set) when `missing_ok` and it is not
 * there. */
static int open_input(const char *path, bool missing_ok, hutch_error_t *err) {
  _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | O_NOFOLLOW);
  if (fd < 0 && errno == ENOENT && missing_ok)
    return -ENOENT;
  if (fd < 0 && errno == ELOOP) {
    hutch_error_set(err, ELOOP, "audit log: %s is a symbolic link", path);
    return hutch_error_hint(err, "give the file it points to: a link in a log's place is not followed");
  }
  if (fd < 0)
    return hutch_error_sys(err, "audit log: open %s", path);
  struct stat st;
  if (fstat(fd, &st) < 0)
    return hutch_error_sys(err, "audit log: stat %s", path);
  if (!S_ISREG(st.st_mode))
    return hutch_error_set(err, EINVAL, "audit log: %s is not a regular file (%s)", path,
                           S_ISFIFO(st.st_mode)   ? "a FIFO"
                           : S_ISDIR(st.st_mode)  ? "a directory"
                           : S_ISSOCK(st.st_mode) ? "a socket"
                                                  : "a device");
  return steal_fd(&fd);
}

int hutch_audit_verify(const char *path, void (*line)(const char *text, size_t len, uint64_t no, void *data),
                       void *data, struct hutch_audit_verdict *out, hutch_error_t *err) {
  memset(out, 0, sizeof(*out));
  _cleanup_close_ int fd = open_input(path, false, err);
  if (fd < 0)
    return -1;
  /* A live log is appended to under an exclusive lock, the head replaced
   * after each line: the log and its head are read between appends.  An
   * append holds it for a moment; whoever holds it longer is not waited
   * for past AUDIT_LOCK_SECONDS. */
  double until = monotonic_seconds() + AUDIT_LOCK_SECONDS;
  while (flock(fd, LOCK_SH | LOCK_NB) < 0) {
    if (errno != EINTR && errno != EWOULDBLOCK)
      return hutch_error_sys(err, "audit log: lock %s", path);
    if (monotonic_seconds() > until) {
      hutch_error_set(err, EWOULDBLOCK, "audit log: %s stayed locked for %d s", path, AUDIT_LOCK_SECONDS);
      return hutch_error_hint(err, "a writer holds it: try again, or verify a copy of the log and its head");
    }
    usleep(10000);
  }
  _cleanup_free_ char *head = xasprintf("%s" AUDIT_HEAD_SUFFIX, path);
  _cleanup_close_ int hfd = open_input(head, true, err);
  if (hfd < 0 && hfd != -ENOENT)
    return -1;
  struct audit_verdict v;
  if (audit_verify(fd, hfd, line, data, &v, err) < 0)
    return hutch_error_wrap(err, "%s", path);
  out->ok = v.ok;
  out->lines = v.lines;
  out->broken_line = v.broken_line;
  snprintf(out->reason, sizeof(out->reason), "%s", v.reason);
  out->ended = v.ended;
  out->capped = v.capped;
  out->headed = v.headed;
  out->net = v.net;
  out->net_unread = v.net_unread;
  out->net_requests = v.net_requests;
  out->net_unlogged = v.net_unlogged;
  out->net_not_joined = v.net_not_joined;
  return 0;
}
