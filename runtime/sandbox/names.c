/* SPDX-License-Identifier: Apache-2.0 */
/* Names (names.h).  A claim is one symlinkat: atomic, so of two creates
 * with one name exactly one gets it.  Replacing a stale link and giving a
 * name back read, then remove, a link; those two steps hold an exclusive
 * flock on .names/, so neither removes a link another has just made. */
#include "config.h"

#include "names.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "labels.h"
#include "paths.h"
#include "util.h"

/* The names directory (made 0700 on first use), locked when `lock`. */
static int open_names(int rootfd, bool create, bool lock) {
  if (create && mkdirat(rootfd, NAMES_DIR, 0700) < 0 && errno != EEXIST)
    return -1;
  _cleanup_close_ int fd = openat(rootfd, NAMES_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0)
    return -1;
  while (lock && flock(fd, LOCK_EX) < 0)
    if (errno != EINTR)
      return -1;
  return steal_fd(&fd);
}

/* The id a link of .names points to ("../ID"): 0, or -1 (ENOENT: no link;
 * EINVAL: not one of ours). */
static int read_link(int namesfd, const char *name, char id[40]) {
  char target[64];
  ssize_t n = readlinkat(namesfd, name, target, sizeof(target) - 1);
  if (n < 0)
    return -1;
  target[n] = '\0';
  if (strncmp(target, "../", 3) != 0 || !paths_valid_name(target + 3) || strlen(target + 3) >= 40) {
    errno = EINVAL;
    return -1;
  }
  snprintf(id, 40, "%s", target + 3);
  return 0;
}

static bool dir_exists(int rootfd, const char *id) {
  struct stat st;
  return fstatat(rootfd, id, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
}

int names_claim(int rootfd, const char *name, const char *id, hutch_error_t *err) {
  if (labels_check_name(name, err) < 0)
    return -1;
  _cleanup_close_ int fd = open_names(rootfd, true, true);
  if (fd < 0)
    return hutch_error_sys(err, "state directory: open %s/", NAMES_DIR);
  _cleanup_free_ char *target = xasprintf("../%s", id);
  if (symlinkat(target, fd, name) == 0)
    return 0;
  if (errno != EEXIST)
    return hutch_error_sys(err, "claim the name %s", name);
  char owner[40];
  if (read_link(fd, name, owner) == 0 && dir_exists(rootfd, owner)) {
    hutch_error_set(err, EEXIST, "the name %s is taken by sandbox %s", name, owner);
    return hutch_error_hint(err, "choose another name, or remove that sandbox with `hutch rm %s`", name);
  }
  /* Its sandbox is gone without giving it back: replaced, once. */
  if (unlinkat(fd, name, 0) < 0 || symlinkat(target, fd, name) < 0)
    return hutch_error_sys(err, "claim the name %s (in place of a stale link)", name);
  return 0;
}

void names_release(int rootfd, const char *name, const char *id) {
  _cleanup_close_ int fd = open_names(rootfd, false, true);
  char owner[40];
  if (fd >= 0 && read_link(fd, name, owner) == 0 && strcmp(owner, id) == 0)
    unlinkat(fd, name, 0);
}

int names_lookup(int rootfd, const char *name, char id[40]) {
  _cleanup_close_ int fd = open_names(rootfd, false, false);
  if (fd < 0 || read_link(fd, name, id) < 0 || !dir_exists(rootfd, id)) {
    errno = ENOENT;
    return -1;
  }
  return 0;
}

int names_resolve(int rootfd, const char *name_or_id, char id[40], hutch_error_t *err) {
  if (strlen(name_or_id) < 40) {
    /* An id, or what is no name: state_read says what is wrong with it. */
    if (labels_id_like(name_or_id) || labels_check_name(name_or_id, NULL) < 0) {
      snprintf(id, 40, "%s", name_or_id);
      return 0;
    }
    if (names_lookup(rootfd, name_or_id, id) == 0)
      return 0;
    /* A directory of that name: an id of another form (hutch's own are
     * id-like), as before names were. */
    if (dir_exists(rootfd, name_or_id)) {
      snprintf(id, 40, "%s", name_or_id);
      return 0;
    }
  }
  hutch_error_set(err, ENOENT, "no sandbox with id or name '%s'", name_or_id);
  return hutch_error_hint(err, "`hutch ps` lists the sandboxes");
}
