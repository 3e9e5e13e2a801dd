/* SPDX-License-Identifier: Apache-2.0 */
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

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "hutch.h"
#include "idmap.h"
#include "resource_limits.h"
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
  uint64_t whiteouts;        /* layers: whiteout and opaque markers applied */
  uint64_t headers;          /* entries read, written or not (the budget's count) */
  char first_warning[256];
  char first_collapsed[256]; /* path of the first entry that lost its owner */
};

struct unpack_request {
  int fd;                       /* the archive, read from offset 0 (pread) or its position */
  uint64_t total;               /* its size for progress, 0 when unknown */
  const char *target;           /* empty directory to unpack into, absolute */
  int target_fd;                /* > 0: that directory, open (target then names it in messages) */
  const struct idmap_set *maps; /* the namespace the unpacking child runs in */
  hutch_progress_fn progress;
  void *progress_data;
  /* An image layer (oci.c): the archive is bytes [offset, offset+length) of
   * fd (length 0: to its end), applied onto the tree already in target with
   * whiteouts honoured (layer.h); it may hold no entry at all. */
  bool layer;
  uint64_t offset, length;
  /* Dockerfile ADD of a local archive: a plain tree unpacked into target
   * (a directory that may hold files already); it may be empty, and an
   * image archive's manifest at its top is just a file. */
  bool add;
  /* The import's budget, checked entry by entry as the archive is read
   * (never after the fact); `used` is what earlier layers of the same image
   * took.  Required: there is no unbounded unpack. */
  const struct import_budget *budget;
  uint64_t used_bytes, used_entries;
};

/* Stream the archive into req->target from a child that is root in a new
 * user and mount namespace, chrooted into the target.  Every byte read is
 * hashed; *digest is the sha256 of the whole input. */
int unpack_archive(const struct unpack_request *req, uint8_t digest[SHA256_DIGEST_SIZE], struct unpack_stats *stats,
                   hutch_error_t *err);

/* Pure checks on archive entries (NULL when fine, else why the path is refused). */
const char *unpack_path_problem(const char *path);

/* ---- for importers of image formats (oci.c) ---- */

struct cJSON;

/* A new entry being built under tmp/, locked against the stale-tmp cleaner. */
struct store_stage {
  char name[40]; /* below tmp/ */
  int fd;
  char *rootfs; /* absolute path of its empty rootfs/ */
};
int store_stage_begin(struct hutch_store *store, struct store_stage *stage, hutch_error_t *err);
/* What every import starts with (a tarball's, an image's layers): the ids
 * its files may get (the caller's maps), the budget of what it may unpack
 * (the policy a sandbox would get: $HUTCH_POLICY or the default), and a
 * stage to unpack into. */
int store_import_begin(struct hutch_store *store, const struct idmap_set **maps, struct import_budget *budget,
                       struct store_stage *stage, hutch_error_t *err);
void store_stage_abort(struct hutch_store *store, struct store_stage *stage);
/* Write meta as meta.json and make the entry images/sha256-<hex> with one
 * rename.  Returns 1 when that entry appeared meanwhile (the stage is
 * discarded), 0 on success; the stage is consumed either way. */
int store_stage_commit(struct hutch_store *store, struct store_stage *stage, const char *hex, struct cJSON *meta,
                       hutch_error_t *err);
bool store_has_entry(struct hutch_store *store, const char *hex);
/* The members every entry's meta.json has. */
struct cJSON *store_meta_new(const char *hex, const char *source, const struct idmap_set *maps,
                             const struct unpack_stats *stats);
/* Point `name` (NULL: none) at the entry and fill out (may be NULL). */
int store_name_entry(struct hutch_store *store, const char *hex, const char *name, struct hutch_image *out,
                     hutch_error_t *err);
/* store_meta_new() and store_print_notices() are in import.c. */
void store_print_notices(const char *file, const struct idmap_set *maps, const struct unpack_stats *s);

/* ---- for the import dispatch (import.c) ---- */

/* s is n lowercase hex digits. */
bool store_is_hex(const char *s, size_t n);
/* Remove what killed imports, removals and builds left under tmp/ (nobody
 * holds their lock).  A build's stage also holds the state directory of
 * the sandbox its steps ran in ("state"): it goes only when `vet` (called
 * with the locked directory's fd and path) returns 0, having stopped what
 * that sandbox recorded (build_sweep.h); with no vet, it stays. */
typedef int (*store_stale_vet)(int dirfd, const char *path, void *data);
void store_clean_stale_tmp(struct hutch_store *store, store_stale_vet vet, void *data);

#endif
