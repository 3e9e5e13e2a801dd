/* SPDX-License-Identifier: Apache-2.0 */
/* The user a sandbox's init and every process it starts run as
 * (hutch_sandbox_extras.user), resolved in the sandbox's own root by its
 * setup; the switch itself is caps_drop_all's (caps.h), between the
 * bounding set and the last capability. */
#ifndef HUTCH_IDENTITY_H
#define HUTCH_IDENTITY_H

#include <stddef.h>

#include "hutch.h"
#include "idmap.h"
#include "user_spec.h"

struct contain_identity {
  struct user_spec spec;        /* spec.set: switch to it */
  const struct idmap_set *maps; /* the sandbox's, to say which ids exist */
  struct user_ident ident;      /* what it came to (identity_resolve) */
};

/* After pivot_root, with /proc in place: the spec against the new root's
 * /etc/passwd and /etc/group (each a regular file of at most 1 MiB, never
 * reached through /proc), the ids checked against the maps, and HOME
 * (its passwd home, else "/") added to each of the n environments that
 * lacks one.  Nothing to do without a spec. */
int identity_resolve(struct contain_identity *id, char ***envs[], size_t n, hutch_error_t *err);

#endif
