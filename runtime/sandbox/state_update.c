/* SPDX-License-Identifier: Apache-2.0 */
/* Read-modify-write of a sandbox's state.json under a lock (state.h). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include "paths.h"
#include "state.h"
#include "util.h"

/* <root>/<id> open and flock()ed `how` (LOCK_EX, with LOCK_NB or not). */
static int lock_dir(int rootfd, const char *id, int how, hutch_error_t *err) {
  if (!paths_valid_name(id))
    return hutch_error_set(err, EINVAL, "invalid sandbox id '%s'", id);
  int fd = openat(rootfd, id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) {
      hutch_error_set(err, ENOENT, "no sandbox with id '%s'", id);
      return hutch_error_hint(err, "`hutch ps` lists the sandboxes");
    }
    return hutch_error_sys(err, "state of sandbox %s: open its directory", id);
  }
  /* A directory fd's flock is shared by nothing else hutch holds, and it
   * goes with the fd: a holder that dies unlocks. */
  while (flock(fd, how) < 0) {
    if (errno != EINTR) {
      hutch_error_sys(err, "state of sandbox %s: lock", id);
      close(fd);
      return -1;
    }
  }
  return fd;
}

int state_lock(int rootfd, const char *id, hutch_error_t *err) {
  return lock_dir(rootfd, id, LOCK_EX, err);
}

int state_trylock(int rootfd, const char *id) {
  return lock_dir(rootfd, id, LOCK_EX | LOCK_NB, NULL);
}

int state_update(int rootfd, const char *id, state_update_fn fn, void *data, hutch_error_t *err) {
  _cleanup_close_ int dirfd = state_lock(rootfd, id, err);
  if (dirfd < 0)
    return -1;
  return state_update_locked(dirfd, rootfd, id, fn, data, err);
}

int state_update_locked(int dirfd, int rootfd, const char *id, state_update_fn fn, void *data, hutch_error_t *err) {
  struct sandbox_state st;
  int r = state_read(rootfd, id, &st, err);
  if (r == 0)
    r = fn(&st, data, err);
  if (r == 0)
    r = state_write(dirfd, &st, err);
  state_clear(&st);
  return r < 0 ? -1 : 0;
}
