/* SPDX-License-Identifier: Apache-2.0 */
/* A long-lived sandbox's files, read and written by hutch from the host
 * through the sandbox's root fd (hutch.h: hutch_sandbox_read_file and the
 * rest).  The pure half (sandbox_fs_path.c) splits paths, tells kernel
 * pseudo file systems apart, reads an id map and keeps a copy's bounds; the
 * OS half is sandbox_fs.c (single files), sandbox_fs_copy.c (trees) and
 * sandbox_fs_run.c (where an operation runs). */
#ifndef HUTCH_SANDBOX_FS_H
#define HUTCH_SANDBOX_FS_H

#include <linux/openat2.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "hutch.h"

/* ---- pure (sandbox_fs_path.c) ---- */

/* A file system hutch never reads or writes for a sandbox: /proc, /sys and
 * their kin expose the processes and the kernel, and hutch's own view of
 * them (its credentials, its capabilities over the sandbox's user
 * namespace) is wider than the sandbox's. */
bool sfs_pseudo_fs(int64_t f_type);
/* The host id that id 0 inside maps to, from /proc/PID/uid_map or gid_map
 * text as the host sees it; -1 when 0 is not mapped. */
int64_t sfs_map_inside_root(const char *proc_map);
/* The other way: the id inside that host id `host` is, -1 when unmapped. */
int64_t sfs_map_inside_of(const char *proc_map, uint32_t host);
/* The first id of /proc/PID/status's line `key` ("Uid", "Gid"): the real
 * one, as the reader's namespace sees it; -1 without one. */
int64_t sfs_status_id(const char *status, const char *key);
/* Splits a path into its parent and its last component ("/a/b/" -> "/a",
 * "b"); false when there is no last component to create or remove ("/",
 * ".", ".."). */
bool sfs_split(const char *path, char **parent, char **name);
/* dir + "/" + name, without doubling a slash dir ends with. */
char *sfs_join(const char *dir, const char *name);

/* A copy's bounds: entries and depth counted as the walk goes, bytes as
 * they are copied, one deadline for the whole copy. */
struct sfs_budget {
  uint64_t max_bytes; /* 0: none */
  uint64_t max_entries;
  unsigned max_depth;
  double deadline; /* monotonic seconds */
  uint64_t entries;
};
void sfs_budget_init(struct sfs_budget *b, const struct hutch_copy_limits *limits, double now);
/* Counts one entry found at `depth` (1: directly in the copied directory);
 * NULL, or the bound it breaks ("entries", "depth", "time"). */
const char *sfs_budget_entry(struct sfs_budget *b, unsigned depth, double now);
/* Bytes that may still be copied after `done`; UINT64_MAX without a bound. */
uint64_t sfs_budget_bytes_left(const struct sfs_budget *b, uint64_t done);

/* ---- OS (sandbox_fs.c), shared with sandbox_fs_copy.c ---- */

/* How a path inside a sandbox is resolved (openat2's RESOLVE_*).  SANDBOX:
 * as the sandbox names it ("/" and ".." stop at its root, an absolute
 * symlink means its own root; /proc's magic links, which would lead out,
 * are refused).  STRICT: the same, but no symlink at all (ELOOP), as the
 * copies and a handle set with hutch_sandbox_set_no_symlinks go.  CHILD:
 * one name below a directory already open, never through a symlink. */
#define SFS_RESOLVE_SANDBOX (RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS)
#define SFS_RESOLVE_STRICT (RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)
#define SFS_RESOLVE_CHILD (RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)

/* Who owns what hutch creates in a sandbox: its user's (its init's) ids,
 * root of its user namespace unless it runs as another
 * (hutch_sandbox_extras.user). */
struct sfs_owner {
  uid_t uid; /* as the host sees them */
  gid_t gid;
  uid_t in_uid; /* as the sandbox sees them */
  gid_t in_gid;
  bool chown;  /* they differ from hutch's own */
  bool inside; /* the call runs in the sandbox's user namespace (sfs_run's helper): give the ids inside */
  bool other;  /* the sandbox runs as a user other than its root */
};

/* One operation on a sandbox's files: what it is given and what it gives
 * back, so that it can run in hutch or in a helper process (sfs_run). */
struct sfs_call {
  int root; /* the sandbox's root (O_PATH) */
  struct sfs_owner owner;
  uint64_t resolve; /* SFS_RESOLVE_SANDBOX, or _STRICT for a handle that follows no symlink */
  const char *path, *dest;
  const void *data;
  size_t len, max;
  unsigned depth;
  bool create;
  const struct hutch_copy_limits *limits;
  bool update; /* hutch_sandbox_update_out: what is unchanged in dest is left */
  /* out */
  char *out; /* malloc'd; NUL-terminated */
  size_t out_len;
  int64_t value;
  struct hutch_copy_report rep;
};
typedef int (*sfs_op)(struct sfs_call *c, hutch_error_t *err);

/* Runs op on the sandbox's files (c's in fields set, root, owner and
 * resolve filled here).  A root served by FUSE (--overlay fuse) is only reachable from
 * inside the sandbox's user namespace: op then runs in a forked helper that
 * joins it, without capabilities, and its results come back by a pipe.  So
 * does every op on a sandbox that runs as another user when hutch cannot
 * give that user's ids a file itself (an unprivileged hutch, whose
 * sandbox maps its subordinate range): that helper keeps CAP_CHOWN,
 * CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH and CAP_FOWNER in the sandbox's
 * user namespace, as much as root of the sandbox (as root, hutch has
 * them), to read the user's private files and give the user what it
 * makes. */
int sfs_run(struct hutch_sandbox *sb, sfs_op op, struct sfs_call *c, hutch_error_t *err);
/* mkdir -p through the sandbox's root, resolving each step with `resolve`;
 * every new directory is its user's (sfs_owner). */
int sfs_mkdirs(int root, const struct sfs_owner *owner, const char *path, uint64_t resolve, hutch_error_t *err);
/* Opens an O_PATH fd again for reading or writing, through /proc/self/fd:
 * only a file that was checked first is ever opened for real, so no device
 * or FIFO is opened on the sandbox's say-so. */
int sfs_reopen(int path_fd, int flags);
/* -1 with err set when fd is on a pseudo file system (sfs_pseudo_fs). */
int sfs_check_fs(int fd, const char *what, hutch_error_t *err);
/* Gives a file hutch created in the sandbox to the sandbox's user (its root
 * unless it runs as another). */
int sfs_own(int fd, const struct sfs_owner *owner);

#endif
