/* SPDX-License-Identifier: Apache-2.0 */
/* A sandbox's audit log (hutch-audit(5)): JSON lines, each carrying the
 * sha256 of the line before it (the first one zeros), appended one write()
 * per line under an exclusive lock, with the last line's hash, the line
 * count and the size kept beside it in a head file (LOG.head, a fixed-size
 * record with its own checksum, rewritten in place), so that an
 * edited, reordered, partly written or shortened log fails verification.
 * The records' contents are the sandbox layer's (audit_sandbox.c); this
 * file knows the chain, the bound and the head only. */
#ifndef HUTCH_AUDIT_H
#define HUTCH_AUDIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "error.h"

#define AUDIT_LOG_NAME "audit.jsonl"
#define AUDIT_HEAD_SUFFIX ".head"
/* What one log may hold unless the policy says otherwise ([limits] audit). */
#define AUDIT_DEFAULT_CAP (64ull << 20)
/* One value (an argument, a path, a proxy line) is cut at this many bytes. */
#define AUDIT_VALUE_MAX 4096
/* The members of one record, before the chain's own. */
#define AUDIT_RECORD_MAX (64 * 1024)

/* A record's members ("key":value,...), built in memory. */
struct audit_rec {
  char *data;
  size_t len, cap;
  char type[24];
};
void audit_rec_init(struct audit_rec *r, const char *type);
void audit_rec_free(struct audit_rec *r);
/* A string value (NULL: null), every byte that is not printable ASCII
 * escaped, cut at AUDIT_VALUE_MAX bytes or where the record would pass
 * AUDIT_RECORD_MAX (then "KEY_truncated":true follows it).  Numbers are
 * always written, so a record's outcome is never lost to a long argv. */
void audit_rec_str(struct audit_rec *r, const char *key, const char *val);
void audit_rec_u64(struct audit_rec *r, const char *key, uint64_t v);
void audit_rec_i64(struct audit_rec *r, const char *key, int64_t v);
void audit_rec_double(struct audit_rec *r, const char *key, double v);
void audit_rec_bool(struct audit_rec *r, const char *key, bool v);
void audit_rec_null(struct audit_rec *r, const char *key);
/* A list of strings (NULL-terminated; NULL: null), cut as strings are. */
void audit_rec_strv(struct audit_rec *r, const char *key, const char *const *v);
/* "2026-12-02T00:38:26.123Z" of a CLOCK_REALTIME time. */
void audit_format_time(double realtime, char *buf, size_t len);
double audit_now(void);

/* Appends r to the log `name` in directory dirfd (created 0600 when
 * missing, never through a symlink).  Past `cap` bytes one record "capped"
 * is written and every later one is dropped, but an "end", which is always
 * written.  `cap` 0: the one the log was started with (its head keeps it),
 * else AUDIT_DEFAULT_CAP.  An "end" closes the log (nothing is appended
 * after it).  Nothing is flushed to disk (why: append_one).  Refused when
 * the log does not match its head (changed behind hutch's back). */
int audit_append(int dirfd, const char *name, uint64_t cap, const struct audit_rec *r, hutch_error_t *err);
/* Several records under one lock and one head update (a copy's files). */
int audit_append_n(int dirfd, const char *name, uint64_t cap, const struct audit_rec *recs, size_t n,
                   hutch_error_t *err);

/* A log and its head kept open, for a sandbox's handle to append each of
 * its commands without opening, creating or renaming a file: the append
 * takes the log's lock, reads the head (another process may have appended),
 * writes the line and updates the head in place with one pwrite.  The lock
 * is of the open file: threads sharing one must take turns themselves. */
struct audit_log {
  int log_fd, head_fd;
  char name[64];
};
int audit_log_open(int dirfd, const char *name, struct audit_log *l, hutch_error_t *err);
void audit_log_close(struct audit_log *l);
/* As audit_append_n. */
int audit_log_append_n(struct audit_log *l, uint64_t cap, const struct audit_rec *recs, size_t n, hutch_error_t *err);
/* The bytes the log may still take before its cap (0 once capped or
 * ended), read from its head: what records that may be left out (the
 * proxy's lines) are measured against. */
int audit_log_room(struct audit_log *l, uint64_t *room, hutch_error_t *err);
/* The most bytes r's line takes in a log (its members and the chain's). */
size_t audit_rec_line_max(const struct audit_rec *r);

/* The result of a verification. */
struct audit_verdict {
  bool ok;
  uint64_t lines;       /* lines read (complete ones) */
  uint64_t broken_line; /* where it breaks (0: not at a line: the head, an empty log) */
  char reason[256];
  bool ended;  /* the last record is "end" */
  bool capped; /* a "capped" record is in it */
  bool headed; /* a head file was there and was compared */
  /* The proxy's log (--net proxy), as the records net_summary, net_dropped
   * and net_unread say: its requests, those it counted without logging
   * them, its lines not joined to this log; or that it was not read. */
  bool net;
  bool net_unread;
  uint64_t net_requests, net_unlogged, net_not_joined;
};
/* Reads the log at log_fd and its head (head_fd, -1 when absent), checking
 * every line's place and hash; each complete line goes to `line` (when not
 * NULL) as it was read.  Returns 0 with the verdict (ok or not), -1 when
 * the log cannot be read. */
int audit_verify(int log_fd, int head_fd, void (*line)(const char *text, size_t len, uint64_t no, void *data),
                 void *data, struct audit_verdict *v, hutch_error_t *err);

/* Copies the log `name` in dirfd and its head to `dest` and dest.head
 * (replacing them; written to a temporary name and renamed). */
int audit_copy_to(int dirfd, const char *name, const char *dest, hutch_error_t *err);

#endif
