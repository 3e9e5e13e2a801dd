/* SPDX-License-Identifier: Apache-2.0 */
/* cgroup v2: where a sandbox's cgroup comes from, its limits, its removal
 * and what it used.  The values come from resource_limits.c; this file does the
 * reading and writing under the cgroup2 mount.
 *
 * Layout: sandboxes get <parent>/<id>.  As root the parent is --cgroup-parent
 * or /hutch; rootless it is <own cgroup>/hutch when the cgroup hutch runs in
 * is delegated to the user (writable, with the controllers in
 * cgroup.controllers).  Controllers are enabled down the path; where the
 * "no internal processes" rule refuses that (EBUSY) because hutch itself
 * sits in the cgroup, hutch first moves into <parent>/self. */
#ifndef HUTCH_CGROUP_H
#define HUTCH_CGROUP_H

#include <stdbool.h>
#include <sys/types.h>

#include "hutch.h"
#include "resource_limits.h"

enum cgroup_mode { CGROUP_MODE_NONE = 0, CGROUP_MODE_V1, CGROUP_MODE_HYBRID, CGROUP_MODE_V2 };

struct cgroup_where {
  enum cgroup_mode mode;
  char *mount;  /* the cgroup2 mount (/sys/fs/cgroup) */
  char *self;   /* hutch's own cgroup, relative to the mount */
  char *base;   /* the highest cgroup hutch writes to ("/" as root) */
  char *parent; /* where sandbox cgroups go */
  char controllers[256];
};

/* Read-only: can cgroups serve this plan here?  On -1 the error names the
 * cause and its hint the fix; nothing was written. */
int cgroup_locate(const struct limits_plan *plan, struct cgroup_where *w, hutch_error_t *err);
void cgroup_where_clear(struct cgroup_where *w);
const char *cgroup_mode_name(enum cgroup_mode mode);
/* Read-only (statfs): which cgroup layout this host mounts.  The doctor
 * reports the same answer a start acts on. */
enum cgroup_mode cgroup_detect_mode(void);
/* The cgroup2 mount of a layout (the unified one of a hybrid host), NULL
 * for v1 and none. */
const char *cgroup_v2_mount(enum cgroup_mode mode);

struct sandbox_cgroup {
  int fd;     /* the leaf directory, for clone3's CLONE_INTO_CGROUP; -1: none */
  char *path; /* its absolute path */
};

/* Enable the controllers down to the parent, make the leaf <parent>/<id>
 * and write the plan's limits into it. */
int cgroup_create(struct cgroup_where *w, const struct limits_plan *plan, const char *id, struct sandbox_cgroup *out,
                  hutch_error_t *err);
void sandbox_cgroup_release(struct sandbox_cgroup *cg);
/* Move pid into the cgroup (when clone3 could not start it there). */
int cgroup_enter(const char *path, pid_t pid, hutch_error_t *err);
/* cgroup.kill, then rmdir; a cgroup that is already gone is success. */
int cgroup_remove(const char *path, hutch_error_t *err);
/* cgroup.freeze: every process of the cgroup frozen (on) or thawed, and
 * the wait, at most `timeout` seconds, for cgroup.events to say so; the
 * two halves apart, for a caller with other work meanwhile. */
int cgroup_freeze(const char *path, bool on, double timeout, hutch_error_t *err);
int cgroup_freeze_set(const char *path, bool on, hutch_error_t *err);
int cgroup_freeze_wait(const char *path, bool on, double timeout, hutch_error_t *err);
/* What the cgroup has used so far (fields the kernel lacks stay 0). */
void cgroup_read_usage(const char *path, struct hutch_usage *u);
/* Start a per-process measurement: returns an fd on memory.peak reset for
 * this opener (kernel 6.12+), or -1 when the kernel cannot. */
int cgroup_peak_reset(const char *path);
uint64_t cgroup_peak_read(int fd);

/* Decide how a sandbox's limits are applied: its cgroup (created, fd for
 * clone3), or when cgroups cannot serve here and nothing strict was asked
 * (see limits_plan_strict), rlimits with one warning line.  -1 refuses the
 * start, naming the cause and the fix. */
int cgroup_setup_limits(const struct limits_plan *plan, const char *id, double timeout, struct sandbox_cgroup *cg,
                        struct limits_rlimits *rl, struct hutch_limits_status *st, hutch_error_t *err);

/* One line for `hutch policy show --effective`: where a sandbox's cgroup
 * would come from here, or why limits would degrade or be refused. */
char *cgroup_explain(const struct limits_plan *plan);

#endif
