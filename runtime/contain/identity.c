/* SPDX-License-Identifier: Apache-2.0 */
#include "config.h"

#include "identity.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>

#include "in_root.h"
#include "request.h"
#include "util.h"

/* What the setup reads of the sandbox's /etc/passwd and /etc/group: the
 * sandbox's files (a fork's parent may have written them), so bounded. */
#define ID_FILE_MAX (1u << 20)

/* The new root's file at path: *out NULL when there is none. */
static int read_id_file(const char *path, char **out, hutch_error_t *err) {
  *out = NULL;
  /* O_NONBLOCK: a FIFO put there cannot hold the setup. */
  _cleanup_close_ int fd = in_root_open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY, 0);
  if (fd < 0 && errno == ENOENT)
    return 0;
  struct stat st;
  if (fd < 0 || fstat(fd, &st) < 0)
    return hutch_error_sys(err, "user: open the sandbox's %s", path);
  if (!S_ISREG(st.st_mode) || st.st_size > (off_t)ID_FILE_MAX) {
    if (!S_ISREG(st.st_mode))
      hutch_error_set(err, EINVAL, "user: the sandbox's %s is not a regular file", path);
    else
      hutch_error_set(err, EFBIG, "user: the sandbox's %s is larger than %u bytes", path, ID_FILE_MAX);
    return hutch_error_hint(err, "give the ids by number (--user UID:GID): no name is looked up then");
  }
  char *buf = xmalloc((size_t)st.st_size + 1);
  ssize_t n = read_all(fd, buf, (size_t)st.st_size);
  if (n < 0) {
    free(buf);
    return hutch_error_sys(err, "user: read the sandbox's %s", path);
  }
  buf[n] = '\0';
  *out = buf;
  return 0;
}

/* The highest id the map gives the sandbox. */
static uint64_t map_top(const struct idmap *m) {
  uint64_t top = 0;
  for (size_t i = 0; i < m->n; i++)
    if ((uint64_t)m->ranges[i].inside + m->ranges[i].count > top)
      top = (uint64_t)m->ranges[i].inside + m->ranges[i].count;
  return top ? top - 1 : 0;
}

static int check_mapped(const struct idmap *m, const char *what, uint32_t id, hutch_error_t *err) {
  if (idmap_to_host(m, id) >= 0)
    return 0;
  hutch_error_set(err, EINVAL, "user: %s %u is not mapped in the sandbox's user namespace (it maps 0 to %llu)", what,
                  id, (unsigned long long)map_top(m));
  if (map_top(m) == 0)
    return hutch_error_hint(err, "a sandbox of this user maps one id: give the user a subordinate range in "
                                 "/etc/subuid and /etc/subgid (as root: usermod --add-subuids 100000-165535 "
                                 "--add-subgids 100000-165535 USER) and install the uidmap package");
  return hutch_error_hint(err, "give an id the sandbox maps");
}

/* env with HOME=home appended when it has no HOME. */
static void add_home(char ***env, const char *home) {
  size_t n = 0;
  for (char **e = *env; e && *e; e++, n++)
    if (strncmp(*e, "HOME=", 5) == 0)
      return;
  char **grown = xcalloc(n + 2, sizeof(char *));
  if (n)
    memcpy(grown, *env, n * sizeof(char *));
  grown[n] = xasprintf("HOME=%s", home);
  /* The old array is the parent's copy in this process's memory: left
   * as it is (its strings are still in use). */
  *env = grown;
}

int identity_resolve(struct contain_identity *id, char ***envs[], size_t n, hutch_error_t *err) {
  if (!id->spec.set)
    return 0;
  _cleanup_free_ char *passwd = NULL, *group = NULL;
  if (read_id_file("/etc/passwd", &passwd, err) < 0)
    return -1;
  if (id->spec.group_given && !id->spec.gid_numeric && read_id_file("/etc/group", &group, err) < 0)
    return -1;
  if (user_spec_resolve(&id->spec, passwd, group, &id->ident, err) < 0)
    return -1;
  if (check_mapped(&id->maps->uid, "uid", id->ident.uid, err) < 0 ||
      check_mapped(&id->maps->gid, "gid", id->ident.gid, err) < 0)
    return -1;
  for (size_t i = 0; i < n; i++)
    if (envs[i] != NULL)
      add_home(envs[i], id->ident.home[0] ? id->ident.home : "/");
  return 0;
}
