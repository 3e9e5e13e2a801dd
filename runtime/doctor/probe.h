/* SPDX-License-Identifier: Apache-2.0 */
/* The checks behind `hutch doctor`.
 *
 * probe.c runs each namespace check as a real attempt in a forked child
 * (the harness below) and assembles the report; probe_env.c reads what the
 * host is (container markers, sysctls, cgroup layout) without changing
 * anything, and holds the fix texts; probe_net.c creates a veth pair over
 * rtnetlink inside a throwaway network namespace. */
#ifndef HUTCH_PROBE_H
#define HUTCH_PROBE_H

#include <stdbool.h>

#include "cgroup.h"
#include "error.h"
#include "hutch.h"
#include "idmap.h"

/* Where a probe stopped. */
enum probe_stage {
  PROBE_DONE = 0,
  PROBE_STAGE_UNSHARE, /* unshare(2) of the namespaces */
  PROBE_STAGE_MAPS,    /* writing uid_map/gid_map (directly or through newuidmap) */
  PROBE_STAGE_RUN,     /* the attempt inside the namespaces */
  PROBE_STAGE_CRASH,   /* the child died without reporting (a signal: SIGSYS from a seccomp filter) */
};

struct probe_result {
  int stage;
  int errnum;
  int signal;
  char what[400]; /* the step that failed */
};

/* Child side: return 0, or -1 after probe_fail(). */
typedef int (*probe_fn)(void *data, struct probe_result *res);

/* Fill res from errno and a description of the step; returns -1. */
int probe_fail(struct probe_result *res, const char *fmt, ...) HUTCH_PRINTF(2, 3);
/* Copy an error object's errno and message into res; returns -1. */
int probe_fail_error(struct probe_result *res, hutch_error_t err);

/* Fork; the child unshares `flags` (none when 0), waits for the parent to
 * write `maps` when flags has CLONE_NEWUSER, then runs fn.  The outcome is
 * in res (stage PROBE_DONE on success).  Returns 0 when res says success,
 * -1 otherwise; the harness itself never fails the caller. */
int probe_run(unsigned long flags, const struct idmap_set *maps, probe_fn fn, void *data, struct probe_result *res);

/* ---- probe_env.c: what the host is, read-only ---- */

struct probe_env {
  bool docker, podman, kubernetes, lxc, other_container;
  bool github_actions, gitlab_ci;
  bool outer_seccomp;       /* a seccomp filter was already installed on us */
  bool nested_userns;       /* our user namespace is not the initial one */
  unsigned long mapped_ids; /* ids mapped into our user namespace */
  unsigned map_extents;     /* lines in our uid_map */
  char evidence[512];       /* how the container was recognised */
  const char *name;         /* "host", "docker", "podman", "kubernetes", "lxc", "container" */
  /* sysctls, -1 when absent */
  long max_user_namespaces;
  long unprivileged_userns_clone;
  long apparmor_restrict_userns;
  char masked_proc[512]; /* mounts over paths under /proc, space-separated; empty when none */
};

void probe_env_read(struct probe_env *env);
/* A number from /proc/sys (PATH starts with /proc/sys/), -1 when absent.
 * HUTCH_PROBE_SYSCTL_ROOT, when set, stands for /proc/sys: the tests fake
 * values this host does not have. */
long probe_read_sysctl(const char *path);

struct cgroup_facts {
  enum cgroup_mode layout;
  char path[512];        /* our cgroup v2 path, "/" relative to the mount */
  char controllers[256]; /* of our cgroup (v2) */
  bool has_cpu, has_memory, has_pids;
  bool writable; /* we may create a child cgroup and move processes (W_OK on the dir and cgroup.procs) */
  bool readonly_mount;
};
const char *cgroup_layout_name(enum cgroup_mode layout);
void probe_cgroup_read(struct cgroup_facts *facts);

/* Name of a filesystem type from statfs(2), "unknown" otherwise. */
const char *probe_fs_name(long f_type);

/* Fix texts: each returns a new string. */
char *probe_fix_userns_refused(const struct probe_env *env, int errnum);
char *probe_fix_apparmor(void);
char *probe_fix_outer_lsm(const struct probe_env *env);
char *probe_fix_proc_masked(const struct probe_env *env);
char *probe_fix_cgroup(const struct probe_env *env, const struct cgroup_facts *cg);
/* overlayfs refused in a user namespace, the state directory being on fs:
 * the real fix, then the named degraded mode --overlay fuse. */
char *probe_fix_overlay(const char *fs);
/* sethostname refused in a new UTS namespace (an outer seccomp profile). */
char *probe_fix_sethostname(const struct probe_env *env);

/* ---- probe_net.c ---- */

/* Create a veth pair in the current network namespace. */
int probe_net_veth(hutch_error_t *err);
/* What --net proxy does at a start, in the current (throwaway) network
 * namespace: gateway namespace, veth, addresses, route, listening socket,
 * and a connection to it from the sandbox's side. */
int probe_net_proxy(hutch_error_t *err);

#endif
