/* SPDX-License-Identifier: Apache-2.0 */
/* Host paths no sandbox may reach: hutch's image store, state directory and
 * cache in any way, and the policy's files (and the sandbox's own image)
 * for writing.  A bind, or any host directory into which hutch copies what
 * a sandbox made, is checked here before it is used.
 *
 * Paths are compared as the kernel sees them, by (st_dev, st_ino), walking
 * up through ".." of the host's tree: a symlink, a second bind mount of the
 * same directory or a ".." in the name leads to the same objects and is
 * refused as well.  (A hard link to a protected file is not found: only
 * directories are walked.) */
#ifndef HUTCH_PROTECTED_H
#define HUTCH_PROTECTED_H

#include <stdbool.h>
#include <sys/types.h>

#include "hutch.h"
#include "paths.h"

struct protected_set {
  struct protected_entry *v;
  size_t n;
};

/* Add PATH (which may not exist yet: then what would become its parents
 * are protected).  write_only: only read-write access is refused. */
void protected_set_add(struct protected_set *set, const char *path, const char *what, bool write_only);
/* hutch's own: the store (NULL: the default), the state directory `state`
 * (a path, as opened), the cache, and the policy's file and seccomp profile
 * (write only; policy may be NULL). */
void protected_set_hutch(struct protected_set *set, const char *store, const char *state,
                         const struct hutch_policy *policy);
void protected_set_clear(struct protected_set *set);

/* Refuses (EPERM, with a hint) a PATH that is, contains or lies inside an
 * entry; `writable`: sandbox content may be written there.  `use` names the
 * use in the message ("--bind", "output directory").  On success, *id (may
 * be NULL) is what PATH named when checked, for the user to compare with
 * what it opens afterwards. */
int protected_check(const struct protected_set *set, const char *path, bool writable, const char *use,
                    struct file_id *id, hutch_error_t *err);

/* Every --bind of a sandbox about to start, against hutch's set plus its
 * image (write only); *ids (new array, one per bind) is what each source
 * was when checked, for the child to compare with what it mounts. */
int protected_check_binds(const struct hutch_sandbox_config *cfg, const char *state_path, struct file_id **ids,
                          hutch_error_t *err);

#endif
