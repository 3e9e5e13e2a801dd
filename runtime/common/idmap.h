/* SPDX-License-Identifier: Apache-2.0 */
/* User and group id maps for the sandbox's user namespace.
 *
 * The pure half (idmap.c) computes which ranges a user may map from the
 * contents of /etc/subuid and /etc/subgid; the OS half (userns.c) writes them
 * for a child, directly or through the setuid newuidmap/newgidmap helpers. */
#ifndef HUTCH_IDMAP_H
#define HUTCH_IDMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "hutch.h"

#define IDMAP_MAX_RANGES 4
/* Ids 0..65535 inside the sandbox: what distribution images use. */
#define IDMAP_INSIDE_IDS 65536u

struct idmap_range {
  uint32_t inside, outside, count;
};

struct idmap {
  struct idmap_range ranges[IDMAP_MAX_RANGES];
  size_t n;
};

enum idmap_kind {
  IDMAP_ROOT,        /* real root: identity map written directly */
  IDMAP_SUBORDINATE, /* user with a subuid/subgid range: needs newuidmap/newgidmap */
  IDMAP_SINGLE,      /* user without a range: only 0 -> the user, setgroups denied */
};

struct idmap_set {
  struct idmap uid, gid;
  enum idmap_kind kind;
  /* setgroups(2) may be used in the sandbox: not with the single mapping,
   * nor below a namespace that denied it (it is inherited). */
  bool setgroups_allowed;
};

/* Find the first range of `user` (by name or by numeric id) in the contents
 * of a subuid/subgid file.  Returns 1 and fills start/count when found, 0
 * when the user has no range, -1 on a malformed line for that user. */
int idmap_find_subordinate(const char *content, const char *user, uint32_t id, uint32_t *start, uint32_t *count);

/* Compute the maps for a caller with the given ids.  subuid/subgid are the
 * files' contents (may be NULL when missing). */
void idmap_compute(uid_t uid, gid_t gid, const char *user, const char *subuid, const char *subgid,
                   struct idmap_set *out);

/* Root's identity map, limited to the ids the current user namespace has:
 * `proc_map` is the text of /proc/self/uid_map (or gid_map).  In the initial
 * namespace that is 0..65535 in one line; as uid 0 of a nested namespace
 * (a rootless container, `unshare -r`) each line of the outer map must
 * stay one line, or the kernel refuses the map.  Returns false when id 0 is
 * not mapped at all. */
bool idmap_identity_within(const char *proc_map, struct idmap *out);

/* The single mapping (uid and gid 0 only) derived from any set. */
void idmap_single(const struct idmap_set *from, struct idmap_set *out);

/* "inside outside count\n" lines, as /proc/PID/uid_map wants them. */
char *idmap_format(const struct idmap *map);
/* Map an id seen inside to the host id; returns -1 when unmapped. */
int64_t idmap_to_host(const struct idmap *map, uint32_t inside);

/* ---- OS side (userns.c) ---- */

/* The maps for the calling user, computed once per process. */
int idmap_for_caller(const struct idmap_set **out, hutch_error_t *err);
/* The maps for a sandbox of the calling user: with `subordinate_ids` (an
 * image unpacked with a range) those of idmap_for_caller(); without, what a
 * sandbox uses then (root: its identity map; anyone else: the single
 * mapping), computed without looking up the user's range. */
int idmap_for_sandbox(bool subordinate_ids, const struct idmap_set **out, hutch_error_t *err);
/* Write the maps of a child that was cloned into a new user namespace. */
int userns_write_maps(pid_t pid, const struct idmap_set *maps, hutch_error_t *err);
/* Run fn(data) in a child that is root in a new user namespace with `maps`
 * (plus the namespaces in extra_clone_flags, e.g. CLONE_NEWNS).  Returns
 * fn's non-negative result; an error the child reports with
 * child_fail() is carried back with its errno and message. */
int userns_run(const struct idmap_set *maps, unsigned long extra_clone_flags, int (*fn)(void *data, hutch_error_t *err),
               void *data, hutch_error_t *err);
/* A hint naming the fix for a failed user namespace step. */
const char *userns_failure_hint(int errnum);

#endif
