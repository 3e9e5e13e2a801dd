/* SPDX-License-Identifier: Apache-2.0 */
/* What the start of a sandbox (sandbox.c) shares with the calls on a live
 * one (sandbox_live.c): the started sandbox before it is handed out.  The
 * wait for a process in a live sandbox is the process handle's
 * (sandbox_proc.c, on the calls of sandbox.h). */
#ifndef HUTCH_SANDBOX_INTERNAL_H
#define HUTCH_SANDBOX_INTERNAL_H

#include <stdint.h>

#include "cgroup.h"
#include "hutch.h"
#include "net_host.h"
#include "overlay_fuse.h"
#include "sync.h"
#include "teardown.h"

struct started {
  char id[40];
  int state_fd;
  bool dir_made; /* the state directory <state_fd>/<id> is ours to remove */
  pid_t pid;
  int pidfd;
  int sync_fd;
  struct sandbox_cgroup cg;
  struct hutch_limits_status limits;
  double cg_setup_seconds;
  struct net_host net;
  struct overlay_fuse_daemon fuse; /* --overlay fuse */
  int layer_fd;                    /* image builds: the upper directory (SYNC_LAYER_FD) */
  int root_fd[2];                  /* long-lived: the sandbox's root (O_PATH) and userns, from its init */
  struct sync_held_fds held;       /* long-lived: where its init holds the tmpfs and netns (state.json) */
  int pty_fd;                      /* exec -t: the master of the process's pty, from its init */
};

/* Close what a start left open (after a failure, or once handed out). */
void started_release(struct started *s);
/* The teardown (teardown.c) of a sandbox started in this process,
 * borrowing `s`'s objects. */
void teardown_from_started(struct teardown *t, struct started *s);
/* The host side of a start: clone, maps, handshake, state.json; `primary`
 * is the one-shot command (NULL: a long-lived sandbox runs init only), x a
 * long-lived one's extras (NULL: none; checked by the caller). */
int sandbox_start(const struct hutch_sandbox_config *cfg, const struct hutch_sandbox_extras *x,
                  const struct hutch_process *primary, struct started *out, hutch_error_t *err);

/* A long-lived sandbox started again under the identity it had (a reset,
 * sandbox_reset.c): its id and state directory, kept, its name and labels
 * (x), and what else state.json recorded of it (`live`), with the next
 * generation.  The record step writes `audit`'s record instead of a start
 * record, before the handover; a failed start leaves the directory, its
 * name and its audit log as they were. */
struct start_identity {
  const char *id;
  int64_t created;
  const struct sandbox_live *live;
  uint64_t generation;
  int (*audit)(int sbfd, const struct started *s, void *data, hutch_error_t *err);
  void *audit_data;
};
int sandbox_start_as(const struct hutch_sandbox_config *cfg, const struct hutch_sandbox_extras *x,
                     const struct start_identity *identity, struct started *out, hutch_error_t *err);
/* A fork's child (sandbox_fork.c): a new sandbox, as sandbox_start makes a
 * long-lived one, whose writable layer starts as a copy of its parent's
 * upper directory (the child copies it before its overlay is mounted:
 * contain.c, step_seed_layer), recorded as forked from `forked_from`
 * (state.json and its start record).  The handshake asks `take` for the
 * layer once the child runs (a new fd, closed by the start: the caller
 * pauses the parent there, while the child's first steps go on), sends
 * it, and calls `copied` once the child has copied it (the caller may let
 * the parent go on, while the child's start ends). */
struct start_seed {
  int (*take)(void *data, hutch_error_t *err);
  int (*copied)(void *data, hutch_error_t *err);
  void *data;
  const char *forked_from;
};
int sandbox_start_seeded(const struct hutch_sandbox_config *cfg, const struct hutch_sandbox_extras *x,
                         const struct start_seed *seed, struct started *out, hutch_error_t *err);
/* hutch_sandbox_create_with (sandbox_live.c) of a seeded start (seed NULL:
 * a plain one): its handle, its ports, its time limit. */
int sandbox_create_seeded(const struct hutch_sandbox_config *cfg, const struct hutch_sandbox_extras *x,
                          const struct start_seed *seed, struct hutch_sandbox **out, hutch_error_t *err);
/* The kept state directory `id` made ready for a start again (its control
 * socket gone, empty layer directories when `layers`): its fd. */
int sandbox_reuse_dir(int rootfd, const char *id, bool layers, hutch_error_t *err);

#endif
