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
#include "sha256.h"

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
/* Who writes the log: "hutch" (its version), "uid", "gid", "euid", "pid". */
void audit_rec_caller(struct audit_rec *r);
/* A "file" record's members: what hutch wrote into (direction "in") or
 * read out of ("out") a sandbox, by `op`, with its size and the sha256 of
 * its bytes in hex (NULL: no content, as for a removal). */
void audit_rec_file(struct audit_rec *r, const char *direction, const char *op, const char *path, uint64_t bytes,
                    const char *hex);

/* The files of a copy, hashed as they were copied, for their "file"
 * records: "SHA256HEX\0BYTES\0PATH\0" each, a flat buffer so that a copy
 * made in a helper process hands it back in one piece.  Bounded: a path is
 * kept up to one byte past AUDIT_VALUE_MAX (the record cuts it and says
 * so), and past AUDIT_FILES_MAX bytes further files are not listed (the
 * copy's record counts them: "files" against "listed"). */
#define AUDIT_FILES_MAX (16u << 20)
struct audit_files {
  char *data;
  size_t len, cap;
};
void audit_files_add(struct audit_files *f, const uint8_t digest[SHA256_DIGEST_SIZE], uint64_t bytes, const char *path);
/* Each entry of a list (as a helper sent it back: never trusted to end in
 * a NUL) to fn; returns how many. */
size_t audit_files_each(const char *list, size_t len,
                        void (*fn)(const char *hex, uint64_t bytes, const char *path, void *data), void *data);

/* Records gathered for one append (a copy's files, then the copy). */
struct audit_recs {
  struct audit_rec *v;
  size_t n, cap;
};
/* A new record of `type` at the end of rs. */
struct audit_rec *audit_recs_add(struct audit_recs *rs, const char *type);
/* A "file" record (op "copy") for each entry of an audit_files list;
 * returns how many. */
size_t audit_recs_files(struct audit_recs *rs, const char *direction, const char *list, size_t len);
/* n numbers, keys[i]:values[i] (a copy's counts). */
void audit_rec_u64s(struct audit_rec *r, const char *const *keys, const uint64_t *values, size_t n);
void audit_recs_free(struct audit_recs *rs);

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
