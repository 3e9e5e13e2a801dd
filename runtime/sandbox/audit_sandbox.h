/* SPDX-License-Identifier: Apache-2.0 */
/* What a sandbox's audit log records (hutch-audit(5)), written by the
 * host side only, into the sandbox's state directory (no bind reaches it:
 * protected.c): its start, each command, the files copied in and out, the
 * proxy's decisions and its end.  The chain itself is common/audit.c. */
#ifndef HUTCH_AUDIT_SANDBOX_H
#define HUTCH_AUDIT_SANDBOX_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/resource.h>

#include "audit.h"
#include "hutch.h"
#include "net_host.h"

/* The directory, under the state root, where the logs of ended sandboxes
 * are kept (a dot name: never taken for a sandbox), and how many: past
 * KEEP, the newest TRIM stay. */
#define AUDIT_ARCHIVE_DIR ".audit"
#define AUDIT_ARCHIVE_KEEP 1000
#define AUDIT_ARCHIVE_TRIM 900

/* The start record; the log's bound is the policy's [limits] audit_log.
 * name, labels and ports ("ADDR:HOSTPORT:PORT") (NULL: none) are a
 * long-lived sandbox's; devices (may be NULL): what --device gave the
 * sandbox (cdi.h); forked_from: a fork's parent's id (NULL: not a fork);
 * user: the user its processes run as, as asked (NULL: its root). */
struct cdi_resolved;
int audit_sandbox_start(int sbfd, const char *id, const struct hutch_sandbox_config *cfg,
                        const struct hutch_policy *policy, const struct hutch_limits_status *limits,
                        const struct net_host *net, bool long_lived, const char *name, const char *const *labels,
                        const struct cdi_resolved *devices, const char *const *ports, const char *forked_from,
                        const char *user, hutch_error_t *err);

/* Where a sandbox's handle appends its commands' records: the log and its
 * head opened at the first one and kept open (no file opened, created or
 * renamed per command), shared by the handle and its processes (counted
 * references: a process may outlive its handle), one appender at a time. */
struct audit_sink;
struct audit_sink *audit_sink_new(int state_fd, const char *id);
void audit_sink_unref(struct audit_sink *s);
/* Opens the log if it is not open yet: a command is not started unless its
 * record can be written (out of descriptors, say); NULL is ready. */
int audit_sink_ready(struct audit_sink *s, hutch_error_t *err);

/* A command, from its start to its end; its record goes to `sink`. */
struct audit_cmd;
/* `start`: when it started (audit_now()), 0: now. */
struct audit_cmd *audit_cmd_begin(struct audit_sink *sink, const char *const *argv, const char *workdir,
                                  const int stdio[3], bool tty, double start);
/* Writes its record and frees c: ex NULL when it was not waited for (then
 * `how` says what became of it); ru: what its reaped processes used, when
 * hutch reaped them (a one-shot's init), else NULL. */
void audit_cmd_end(struct audit_cmd *c, const struct hutch_exit *ex, const char *how, const struct rusage *ru);
/* The same record, returned instead of written (the caller frees it with
 * audit_rec_free), for audit_sandbox_end to write with the end. */
struct audit_rec audit_cmd_finish(struct audit_cmd *c, const struct hutch_exit *ex, const char *how,
                                  const struct rusage *ru);

/* A copy between the host and a sandbox: its files (an audit_files list,
 * as the copy collected them) as "file" records, then its "copy" record,
 * in one append.  `kind`: "tree" (a directory), "update" (a directory
 * brought up to date: unchanged files are not copied) or "file" (one
 * file; its path is the one in the sandbox). */
struct audit_copy_desc {
  const char *direction; /* "in", "out" */
  const char *kind;
  const char *src, *dest;
};
void audit_sandbox_copy(struct audit_sink *sink, const struct audit_copy_desc *d, const char *files, size_t len,
                        const struct hutch_copy_report *rep, int result);
/* One file hutch wrote into a sandbox (op "write", direction "in") or read
 * out of it ("read", "out"), its bytes hashed here; or removed ("remove",
 * "in"; data NULL).  `ok`: whether the operation succeeded. */
void audit_sandbox_file(struct audit_sink *sink, const char *op, const char *direction, const char *path,
                        const void *data, size_t len, bool ok);

/* The end: the last command's record (a one-shot's; may be NULL), the
 * proxy's lines (its log `proxy_log`, may be NULL) and the end record in
 * one append, then a copy to `copy_to` (may be NULL) and, when the state
 * directory goes, the log moved to the archive.  Nothing without a log
 * (a start that failed before its start record). */
void audit_sandbox_end(int state_fd, const char *id, const struct audit_rec *last_cmd, const char *reason,
                       const char *proxy_log, const char *copy_to, bool archive);

#endif
