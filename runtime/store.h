/* The content-addressed rootfs store (internal side of hutch.h's store API).
 *
 * Layout under the store directory:
 *   images/sha256-<hex>/rootfs/   the unpacked tree, never written after import
 *   images/sha256-<hex>/meta.json digest, names, size, created, ids_preserved, source
 *   names/<name>                  symlink to ../images/sha256-<hex>
 *   index/<st_dev>-<st_ino>       "size mtime ctime digest" of an imported file
 *   tmp/<random>/                 imports in progress and removals; a directory
 *                                 nobody holds a lock on is left from a crash
 *
 * Every visible change is one rename(2), so a crash leaves either the old or
 * the new state, never half an image. */
#ifndef HUTCH_STORE_H
#define HUTCH_STORE_H

#include <stdint.h>

#include "hutch.h"
#include "idmap.h"
#include "sha256.h"

struct hutch_store {
  char *path; /* absolute */
  int fd;     /* the store directory */
};

/* "sha256:" + 64 hex + NUL */
#define STORE_DIGEST_SIZE (7 + SHA256_HEX_SIZE)
/* Shortest hex prefix accepted in place of a full digest. */
#define STORE_MIN_PREFIX 12

struct unpack_stats {
  uint64_t size;             /* bytes of regular file content */
  uint64_t entries;          /* entries written */
  uint64_t skipped_special;  /* device nodes, fifos and sockets left out */
  uint64_t owners_collapsed; /* entries whose owner or group had no mapping and became root */
  uint64_t non_root_owned;   /* entries left with an owner or group other than 0 */
  uint64_t setid_dropped;    /* setuid/setgid bits dropped with them */
  uint64_t warnings;         /* attributes (xattrs, ACLs, times) that could not be restored */
  char first_warning[256];
  char first_collapsed[256]; /* path of the first entry that lost its owner */
};

struct unpack_request {
  int fd;                       /* the archive, read from offset 0 (pread) or its position */
  uint64_t total;               /* its size for progress, 0 when unknown */
  const char *target;           /* empty directory to unpack into, absolute */
  const struct idmap_set *maps; /* the namespace the unpacking child runs in */
  hutch_progress_fn progress;
  void *progress_data;
};

/* Stream the archive into req->target from a child that is root in a new
 * user and mount namespace, chrooted into the target.  Every byte read is
 * hashed; *digest is the sha256 of the whole input. */
int unpack_archive(const struct unpack_request *req, uint8_t digest[SHA256_DIGEST_SIZE], struct unpack_stats *stats,
                   hutch_error_t *err);

/* Pure checks on archive entries (NULL when fine, else why the path is refused). */
const char *unpack_path_problem(const char *path);

#endif
