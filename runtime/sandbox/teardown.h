/* SPDX-License-Identifier: Apache-2.0 */
/* The one teardown of a sandbox (teardown.c): what it needs to know, from
 * a start in this process or from a sandbox's state.json. */
#ifndef HUTCH_TEARDOWN_H
#define HUTCH_TEARDOWN_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/types.h>

#include "hutch.h"
#include "net_host.h"
#include "overlay_fuse.h"
#include "state.h"

struct teardown {
  int state_fd; /* borrowed: the state root */
  char id[40];
  /* Init: our child (a start in this process) or the one recorded. */
  pid_t pid;           /* -1: gone (or reaped by the caller) */
  uint64_t start_time; /* recorded: rules out a reused pid */
  int pidfd;           /* borrowed, or -1 */
  bool child;
  struct overlay_fuse_daemon fuse;
  double fuse_grace;
  const char *cgroup; /* borrowed; NULL: none */
  double cg_setup_seconds;
  /* --net proxy: started by this process (borrowed), or recorded. */
  struct net_host *net;
  bool proxy_recorded;
  pid_t proxy_pid;
  uint64_t proxy_start_time;
  /* Its helpers (helper_proc.h): the ttl's keeper; pid 0: none. */
  pid_t keeper_pid;
  uint64_t keeper_start_time;
  /* What a one-shot run reports, filled on the way when not NULL. */
  struct hutch_net_summary *net_summary;
  struct hutch_usage *usage;
  /* The audit log (audit_sandbox.h): a one-shot's command still to be
   * recorded (taken), why the sandbox ended, the proxy's log to join, and
   * where the final log is also copied (borrowed, may be NULL). */
  struct audit_cmd *audit_cmd;
  const struct hutch_exit *audit_exit;
  const struct rusage *audit_rusage;
  const char *end_reason;
  char proxy_log[4096];
  const char *audit_copy;
  const cJSON *ports; /* borrowed; its published ports' relay (port_relay.h); NULL: none */
  const char *name;   /* borrowed; its name, given back with the directory; NULL: none */
  bool keep;          /* --keep: the state directory stays */
  bool best_effort;   /* go on past a failed step (nothing to retry from) */
  bool dir_removed;
  bool audit_done;
};

/* Fill from a sandbox's recorded state (borrowing `st`'s strings); from a
 * start in this process: teardown_from_started (sandbox_internal.h). */
void teardown_from_state(struct teardown *t, int state_fd, const struct sandbox_state *st);
/* Stop init, the fuse daemon, the helpers, the proxy; give the /30 back; remove the
 * cgroup and (without keep) the state directory.  Idempotent.  Strict
 * (not best_effort): stops at a failed step and keeps the state directory
 * so that a retry can finish. */
int sandbox_teardown(struct teardown *t, hutch_error_t *err);

#endif
