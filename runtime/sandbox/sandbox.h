/* SPDX-License-Identifier: Apache-2.0 */
/* Host side of sandboxes (hutch.h's hutch_run and hutch_sandbox_*). */
#ifndef HUTCH_SANDBOX_H
#define HUTCH_SANDBOX_H

#include <signal.h>

#include "hutch.h"
#include "sync.h"

struct hutch_sandbox {
  char id[40];
  int state_fd;  /* the state root directory */
  int root_fd;   /* the sandbox's own root (O_PATH), -1 until asked for (sandbox_root_fd) */
  int userns_fd; /* and its user namespace */
  pid_t pid;
  uint64_t start_time;
  int init_pidfd;                    /* of its init, -1 until first needed (sandbox_init_pidfd) */
  struct hutch_limits_status limits; /* limits.cgroup: the sandbox's cgroup, if any */
  char *audit_log;                   /* --net proxy: the proxy's audit log */
  char *workdir;                     /* where exec --in starts a command without --workdir */
  int layer_fd;                      /* an image build's upper directory (layer_copy.h), else -1 */
  struct ctl_pool *ctl_pool;         /* an idle control connection for the next command (sandbox_proc.c) */
  char *audit_copy;                  /* hutch_sandbox_config.audit_copy of the creator, else NULL */
  struct audit_sink *audit_sink;     /* its commands' audit records, from the first (sandbox_proc.c) */
  bool fs_no_symlinks;               /* hutch_sandbox_set_no_symlinks */
};

/* The sandbox's root directory as its processes see it (an O_PATH fd the
 * handle owns, with sb->userns_fd): from its init's ready message, or asked
 * of the init over the control socket for a sandbox opened by id. */
int sandbox_root_fd(struct hutch_sandbox *sb, hutch_error_t *err);

/* Where the handle's audit records go (audit_sandbox.h): its commands',
 * and the files it writes into or reads out of the sandbox. */
struct audit_sink *sandbox_audit_sink(struct hutch_sandbox *sb);

/* Signals that reach hutch while it waits are forwarded to the sandbox;
 * they are read from a signalfd, and the caller's mask is restored after. */
struct forwarder {
  int fd;
  sigset_t old_mask;
};
int forwarder_start(struct forwarder *f, hutch_error_t *err);
void forwarder_stop(struct forwarder *f);
int forwarder_read(struct forwarder *f); /* the signal read, 0 when none */

/* A connection to a long-lived sandbox's init (init.c), and the proof it
 * asks of hutch: a pidfd of that init. */
int sandbox_connect_control(struct hutch_sandbox *sb, hutch_error_t *err);
/* Opened once and kept by the handle: the caller does not close it. */
int sandbox_init_pidfd(struct hutch_sandbox *sb, hutch_error_t *err);
/* init's report of a process's end, as hutch.h tells it. */
void sandbox_fill_exit(struct hutch_exit *out, const struct sync_exit *ex);
/* Lets go of sb's idle control connection (hutch_sandbox_close). */
void sandbox_proc_release_pool(struct hutch_sandbox *sb);
/* EAGAIN, with the hint to resume it, when sb is paused (pause.c): its
 * init is frozen and would not answer. */
int sandbox_refuse_paused(struct hutch_sandbox *sb, hutch_error_t *err);
/* Whether sb is paused, or being paused (pause.c). */
bool sandbox_is_paused(struct hutch_sandbox *sb);
/* A reset (sandbox_reset.c) replaces a sandbox's init: when the state
 * names another, running one, sb follows it (what it held of the old one
 * is let go, asked for again when needed); true when it did.  The second
 * checks first whether the init sb knows has ended (a poll of its pidfd,
 * else its start time). */
bool sandbox_follow_reset(struct hutch_sandbox *sb);
void sandbox_follow_if_ended(struct hutch_sandbox *sb);
/* The same, for a caller that holds the sandbox's state lock. */
void sandbox_follow_if_ended_locked(struct hutch_sandbox *sb);
/* Whether sb is paused, or being paused (pause.c), and how (method may
 * be NULL; HUTCH_PAUSE_NONE while a pause is under way). */
bool sandbox_paused(struct hutch_sandbox *sb, enum hutch_pause_method *method);
/* hutch_sandbox_pause and hutch_sandbox_resume for a caller that holds
 * the state lock (state_lock: dirfd, sb's locked directory) and may do
 * more under it, as a snapshot does. */
int sandbox_pause_locked(struct hutch_sandbox *sb, int dirfd, enum hutch_pause_method *used, hutch_error_t *err);
int sandbox_resume_locked(struct hutch_sandbox *sb, int dirfd, hutch_error_t *err);
/* sandbox_pause_locked in two halves, for a caller with other work while
 * the tasks stop (a fork starts its child meanwhile): the first marks it
 * paused and sets the freeze going (the cgroup's freezer, or the pauser);
 * the second waits until every task is held and records the pause.  A
 * begun pause must be finished. */
struct pause_pending {
  enum hutch_pause_method method;
  double since, t0;
  int report_fd; /* ptrace: where the pauser's report comes; -1 otherwise */
  pid_t mid;     /* ptrace: the process that forks the pauser, reaped by the finish */
  bool hold;     /* held for this process: the pauser lets go when it ends */
};
int sandbox_pause_begin_locked(struct hutch_sandbox *sb, int dirfd, struct pause_pending *p, hutch_error_t *err);
int sandbox_pause_finish_locked(struct hutch_sandbox *sb, int dirfd, struct pause_pending *p,
                                enum hutch_pause_method *used, hutch_error_t *err);
/* A pause held for a copy of the sandbox's files (a snapshot, a fork):
 * sandbox_hold_begin takes the state lock, so that no pause or resume of
 * another caller comes between, and says whether it was paused already;
 * sandbox_hold_freeze pauses it unless it was (sandbox_hold_freeze_begin
 * sets that pause going ahead, for a caller with other work meanwhile);
 * sandbox_hold_end resumes what the hold paused (a resume that fails is
 * its error, or logged when err already holds one) and unlocks.  Every way
 * out must end the hold: declare it with
 * __attribute__((cleanup(sandbox_hold_cleanup))) and dirfd -1 before the
 * begin. */
struct sandbox_hold {
  struct hutch_sandbox *sb;
  int dirfd; /* the locked state directory; -1: not held */
  bool was_paused;
  bool freezing; /* a pause begun, not yet finished */
  struct pause_pending pending;
  bool paused_here;
  enum hutch_pause_method method; /* of the pause it is in */
  double paused_at;
  double paused_seconds; /* set by the end: how long the hold kept it paused */
};
int sandbox_hold_begin(struct sandbox_hold *h, struct hutch_sandbox *sb, hutch_error_t *err);
int sandbox_hold_freeze_begin(struct sandbox_hold *h, hutch_error_t *err);
int sandbox_hold_freeze(struct sandbox_hold *h, hutch_error_t *err);
int sandbox_hold_end(struct sandbox_hold *h, hutch_error_t *err);
void sandbox_hold_cleanup(struct sandbox_hold *h);
/* A hold's cgroup freeze outlives a holder killed during its copy (a
 * pauser lets go by itself): the next listing or command of the sandbox
 * (id under rootfd, its cgroup) thaws it and returns 1; 0 when there was
 * nothing to undo, or its holder is at work still. */
int sandbox_hold_backstop(int rootfd, const char *id, const char *cgroup);
/* hutch_die_with_parent() was called and that parent has died. */
bool sandbox_parent_died(void);

#endif
