/* SPDX-License-Identifier: Apache-2.0 */
/* The proxy's log joined to a sandbox's audit log when the sandbox ends
 * (hutch-audit(5): net, net_dropped, net_unread, net_summary), and the
 * batches of records that go in with it.  The proxy's log is the
 * sandbox's doing, of any size: it is read as a stream, its first lines
 * joined up to the audit log's bound, every line counted. */
#ifndef HUTCH_AUDIT_PROXY_H
#define HUTCH_AUDIT_PROXY_H

#include <stddef.h>
#include <stdint.h>

#include "audit.h"

/* Records appended AUDIT_BATCH_MAX at a time, each batch under one lock
 * and one head update; a sandbox's end (its command, its end and a few
 * proxy lines) is one batch. */
#define AUDIT_BATCH_MAX 256
struct audit_batch {
  struct audit_log *log;
  struct audit_rec *recs;
  size_t n;
  size_t first_own; /* recs before it are the caller's, not freed */
};
void audit_batch_init(struct audit_batch *b, struct audit_log *log);
/* A record of the caller's, appended with the batch (before any of its own). */
void audit_batch_borrow(struct audit_batch *b, const struct audit_rec *r);
/* A new record of `type` in the batch, flushed first when it is full. */
struct audit_rec *audit_batch_add(struct audit_batch *b, const char *type);
/* Appends what the batch holds (a failure is logged: the gap shows in the
 * verification) and empties it. */
void audit_batch_flush(struct audit_batch *b);
void audit_batch_free(struct audit_batch *b);

/* The proxy's log `path` into the batch: its lines as "net" records while
 * they leave room in the audit log for what follows, then "net_dropped"
 * (how many lines were not joined) when some were not, and "net_summary"
 * (every line's totals); or, when it cannot be read whole, "net_unread"
 * with why, and no summary. */
void audit_proxy_join(struct audit_batch *b, const char *path);

#endif
