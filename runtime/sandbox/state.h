/* SPDX-License-Identifier: Apache-2.0 */
/* Per-sandbox state on the host: <state-dir>/<id>/ holds the overlay's
 * upper and work dirs, the mount point of the new root, the control socket
 * of a long-lived sandbox and state.json.  Everything else about a sandbox
 * lives in its namespaces and vanishes with them. */
#ifndef HUTCH_STATE_H
#define HUTCH_STATE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "hutch.h"
#include "overlay_fuse.h"
#include "policy.h"
#include "state_live.h"

struct sandbox_state {
  char id[40];
  pid_t pid;           /* init, as seen from the host */
  uint64_t start_time; /* init's start time (clock ticks, /proc/PID/stat field 22) */
  int64_t created;
  bool long_lived;
  bool keep;
  /* The process the sandbox dies with (a one-shot's hutch, the creator of
   * one made with die_with_creator); pid 0: none recorded.  Once both it
   * and init are gone, nothing will remove the record: the orphan sweep
   * (orphan_sweep.c) does. */
  pid_t owner_pid;
  uint64_t owner_start_time;
  /* No state.json yet: a start under way, owner_pid its maker (the maker
   * file, state_write_maker), or one killed before it was recorded. */
  bool starting;
  bool proc_host_ro;               /* the degraded --proc host-ro was asked for */
  bool overlay_fuse;               /* the degraded --overlay fuse was asked for */
  struct overlay_fuse_daemon fuse; /* its daemon (pid 0: none) */
  char *image;
  char *rootfs;
  char *workdir;                     /* the default working directory of exec --in */
  struct hutch_limits_status limits; /* limits.cgroup: removed with the sandbox */
  /* --net proxy (net.proxy false: loopback only) */
  struct {
    bool proxy;
    char gateway[16], address[16];
    pid_t proxy_pid;
    uint64_t proxy_start_time;
    char *audit_log;
  } net;
  struct sandbox_live live; /* name and labels (state_live.c) */
};

/* Open (creating 0700) the state directory `opt`, or the default one when
 * NULL; refuses one owned by someone else or writable by others.  The
 * default $TMPDIR/hutch-UID is used only when it is ours and private (never
 * through a link); otherwise paths_state_fallback(), with a warning.
 * Returns a directory fd and, when `used` is not NULL, the path opened. */
int state_open_root(const char *opt, char **used, hutch_error_t *err);
/* The user's key for the seccomp cache's MACs, made (random, 0600) on first
 * use in the state directory rootfd. */
#define STATE_CACHE_KEY_SIZE POLICY_CACHE_KEY_SIZE
int state_cache_key(int rootfd, uint8_t key[STATE_CACHE_KEY_SIZE], hutch_error_t *err);
/* A fresh random id. */
void state_new_id(char id[40]);
/* A notice said at most once per STATE_STAMP_PERIOD per state directory:
 * true when it is due (the stamp file `name` in rootfd is missing or older,
 * and is then created or touched), false when it was said within the
 * period.  A stamp that is not a private regular file of the user's (a
 * symlink, a FIFO, another's) is never followed or written: due. */
#define STATE_STAMP_PERIOD (24 * 60 * 60)
#define STATE_STAMP_NO_CGROUP ".warned-no-cgroup"
bool state_stamp_due(int rootfd, const char *name);
/* mkdir <root>/<id> (or a spare emptied sandbox directory renamed to it),
 * with upper/, work/ and root/ in it when `layers`; returns the sandbox dir
 * fd. */
int state_create_sandbox_dir(int rootfd, const char *id, bool layers, hutch_error_t *err);
/* Whether mountinfo line `line` is mount mnt_id with the filesystem option
 * "discard" (ext4, xfs: freed blocks discarded synchronously). */
bool state_mountinfo_discard(const char *line, int mnt_id);
/* Whether the state directory rootfd is on such a mount (false when that
 * cannot be told): each directory hutch had to make and remove there then
 * costs a discard (about 0.15 ms on a virtual disk). */
bool state_on_discard_mount(int rootfd);
int state_write(int sbdirfd, const struct sandbox_state *st, hutch_error_t *err);
/* Until state.json is written, the sandbox directory's `maker` file names
 * the process making it (this one) and the cgroup made for it (cgroup: ""
 * when none yet): state_read gives a directory with only that file as a
 * start under way (starting, owner_pid), which the orphan sweep removes
 * once its maker is gone; without it, a start killed before its record
 * (a `hutch create` or `hutch fork` SIGKILLed) was listed dead for ever.
 * state_drop_maker: once state.json holds the sandbox. */
#define STATE_MAKER_FILE "maker"
int state_write_maker(int sbdirfd, const char *cgroup, hutch_error_t *err);
void state_drop_maker(int sbdirfd);
int state_read(int rootfd, const char *id, struct sandbox_state *st, hutch_error_t *err);
void state_clear(struct sandbox_state *st);

/* Reads <id>/state.json, lets fn change it and writes it back, holding an
 * exclusive flock on the <id>/ directory throughout (state_update.c).
 * Every change made after create (pause, resume, ttl, reset, a keeper)
 * goes through here, so that two of them never lose each other's update.
 * A negative return of fn leaves the record as it was, and so does a
 * positive one (nothing to change), which is no failure. */
typedef int (*state_update_fn)(struct sandbox_state *st, void *data, hutch_error_t *err);
int state_update(int rootfd, const char *id, state_update_fn fn, void *data, hutch_error_t *err);
/* state_update for a caller that holds the lock already (lockfd:
 * state_lock's): a second lock of the same directory would wait forever. */
int state_update_locked(int lockfd, int rootfd, const char *id, state_update_fn fn, void *data, hutch_error_t *err);
/* The same lock, for a change that is more than state.json (a marker file
 * beside it): returns the locked <id>/ directory fd; closing it unlocks. */
int state_lock(int rootfd, const char *id, hutch_error_t *err);
/* The same lock when nobody holds it; -1 (errno EWOULDBLOCK) when somebody
 * does, or on any failure. */
int state_trylock(int rootfd, const char *id);
/* Whether the init recorded in st is still the same live process. */
bool state_is_running(const struct sandbox_state *st);
/* Remove <root>/<id>: emptied and kept as a spare while there are fewer
 * than a few, removed otherwise; files owned by subordinate ids are removed
 * from a user namespace with the caller's maps. */
int state_remove_sandbox_dir(int rootfd, const char *id, hutch_error_t *err);

#endif
