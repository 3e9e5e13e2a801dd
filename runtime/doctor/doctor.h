/* SPDX-License-Identifier: Apache-2.0 */
/* The ladder of `hutch doctor`: the report it fills and the checks, one
 * file a concern.  probe_report.c holds the report helpers;
 * probe_ns.c the namespace, id map, procfs, seccomp and network checks;
 * probe_fs.c the store, the state directory and overlayfs;
 * probe_capacity.c the limits on how many sandboxes may live at once;
 * doctor.c runs them in order (and judges cgroups and the outer
 * container).  Every check adds rows with report_add and never fails the
 * caller: what went wrong is the row's detail and fix. */
#ifndef HUTCH_DOCTOR_H
#define HUTCH_DOCTOR_H

#include <stdbool.h>
#include <sys/resource.h>

#include "probe.h"

struct report {
  struct hutch_check *checks;
  size_t n, cap;
};

struct ladder {
  struct report *r;
  struct probe_env env;
  const struct idmap_set *maps; /* the caller's, as `hutch exec` computes them */
  struct idmap_set single;      /* what a sandbox of an image without subordinate ids uses */
  bool userns_ok;
  struct probe_result userns_res;
  char *state_path;
  int state_fd;
  struct rlimit nproc; /* the caller's RLIMIT_NPROC (the doctor runs at the hard one) */
};

/* ---- probe_report.c ---- */
struct hutch_check *report_add(struct report *r, const char *id, const char *title, bool required);
void report_detail(struct hutch_check *c, const char *fmt, ...) HUTCH_PRINTF(2, 3);
/* The detail of a failed step: "FMT: strerror(errnum)" (hutch_errno_format). */
void report_detail_errno(struct hutch_check *c, int errnum, const char *fmt, ...) HUTCH_PRINTF(3, 4);
/* Takes fix (a new string). */
void report_fix(struct hutch_check *c, char *fix);
const char *probe_stage_name(int stage);
/* "step (stage): strerror" for a failed probe. */
void report_fail(struct hutch_check *c, const struct probe_result *res);

/* ---- probe_ns.c ---- */
void doctor_check_kernel(struct ladder *l);
void doctor_check_sysctls(struct ladder *l);
void doctor_check_userns(struct ladder *l);
void doctor_check_apparmor(struct ladder *l);
void doctor_check_idmap(struct ladder *l);
void doctor_check_procfs(struct ladder *l);
void doctor_check_uts(struct ladder *l);
void doctor_check_seccomp(struct ladder *l);
void doctor_check_network(struct ladder *l);

/* ---- probe_fs.c ---- */
void doctor_check_store(struct ladder *l, const char *store_opt);
/* Opens the state directory into l->state_fd and l->state_path. */
void doctor_check_state_and_overlay(struct ladder *l, const char *state_opt);

/* ---- probe_capacity.c ---- */
/* One row per limit on live sandboxes (idle ones from `hutch create`),
 * with the number each allows and, for those hutch cannot raise itself,
 * the command that raises it; then the tightest of them. */
void doctor_check_capacity(struct ladder *l);
/* ---- probe_pause.c ---- */
void doctor_check_pause(struct ladder *l);

#endif
