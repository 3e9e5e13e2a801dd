/* SPDX-License-Identifier: Apache-2.0 */
/* The proxy's log joined to the audit log at a sandbox's end
 * (audit_proxy.h).  The proxy wrote it at the sandbox's pace, with the
 * host names the sandbox chose: it is read through a buffer of fixed size,
 * each line kept as a string (the audit log does not trust it to be
 * well-formed), and its records go in batches, never all at once. */
#include "config.h"

#include "audit_proxy.h"

#include <stdlib.h>
#include <string.h>

#include "proxy.h"
#include "util.h"

/* Room kept under the audit log's bound for the records after the joined
 * lines (net_dropped or net_unread, net_summary, a command's): the end
 * record is written past the bound anyway. */
#define JOIN_KEEP (16 * 1024)

void audit_batch_init(struct audit_batch *b, struct audit_log *log) {
  *b = (struct audit_batch){.log = log, .recs = xcalloc(AUDIT_BATCH_MAX, sizeof(struct audit_rec))};
}

void audit_batch_borrow(struct audit_batch *b, const struct audit_rec *r) {
  if (b->n > b->first_own || b->n == AUDIT_BATCH_MAX)
    audit_batch_flush(b);
  b->recs[b->n++] = *r;
  b->first_own = b->n;
}

struct audit_rec *audit_batch_add(struct audit_batch *b, const char *type) {
  if (b->n == AUDIT_BATCH_MAX)
    audit_batch_flush(b);
  struct audit_rec *r = &b->recs[b->n++];
  audit_rec_init(r, type);
  return r;
}

void audit_batch_flush(struct audit_batch *b) {
  if (b->n == 0)
    return;
  hutch_error_t err = NULL;
  /* A sandbox removed meanwhile (its log ended: EPIPE) is no news. */
  if (audit_log_append_n(b->log, 0, b->recs, b->n, &err) < 0 && err->errnum != EPIPE)
    hutch_log_error(HUTCH_LOG_WARNING, err);
  hutch_error_free(&err);
  for (size_t i = b->first_own; i < b->n; i++)
    audit_rec_free(&b->recs[i]);
  b->n = b->first_own = 0;
}

void audit_batch_free(struct audit_batch *b) {
  for (size_t i = b->first_own; i < b->n; i++)
    audit_rec_free(&b->recs[i]);
  free(b->recs);
  *b = (struct audit_batch){0};
}

/* The bytes the proxy's lines may take: what the log has left, less what
 * is kept for the records after them (and for those already batched). */
static uint64_t join_room(struct audit_batch *b) {
  uint64_t room;
  hutch_error_t err = NULL;
  if (audit_log_room(b->log, &room, &err) < 0) {
    hutch_log_error(HUTCH_LOG_WARNING, err);
    hutch_error_free(&err);
    return 0;
  }
  uint64_t keep = JOIN_KEEP;
  for (size_t i = 0; i < b->n; i++)
    keep += audit_rec_line_max(&b->recs[i]);
  return room > keep ? room - keep : 0;
}

void audit_proxy_join(struct audit_batch *b, const char *path) {
  uint64_t room = join_room(b), joined = 0, not_joined = 0;
  struct proxy_audit_summary sum = {0};
  _cleanup_error_ hutch_error_t err = NULL;
  struct proxy_log_reader *r = NULL;
  int n = proxy_log_open(path, &r, &err);
  const char *line;
  while (n >= 0 && (n = proxy_log_next(r, &line, &err)) > 0) {
    if (*line == '\0')
      continue;
    proxy_summary_add_line(&sum, line);
    if (not_joined == 0) {
      struct audit_rec *rec = audit_batch_add(b, "net");
      audit_rec_str(rec, "proxy", line);
      uint64_t size = audit_rec_line_max(rec);
      if (size <= room) {
        room -= size;
        joined++;
        continue;
      }
      /* The first that does not fit: it and every later line only counted. */
      audit_rec_free(rec);
      b->n--;
    }
    not_joined++;
  }
  proxy_log_close(r);
  proxy_summary_finish(&sum);
  if (n < 0) {
    /* Never a summary of what was not read. */
    struct audit_rec *u = audit_batch_add(b, "net_unread");
    audit_rec_str(u, "log", path);
    audit_rec_str(u, "error", err->msg);
    audit_rec_u64(u, "lines_read", sum.lines);
    audit_rec_u64(u, "joined", joined);
    return;
  }
  if (not_joined > 0) {
    struct audit_rec *d = audit_batch_add(b, "net_dropped");
    audit_rec_u64(d, "lines", not_joined);
    audit_rec_str(d, "reason", "the audit log's bound (audit_log)");
  }
  struct audit_rec *s = audit_batch_add(b, "net_summary");
  audit_rec_u64(s, "requests", sum.requests);
  audit_rec_u64(s, "allowed", sum.allowed);
  audit_rec_u64(s, "refused", sum.refused);
  audit_rec_u64(s, "errors", sum.errors);
  audit_rec_u64(s, "unlogged", sum.unlogged);
  audit_rec_u64(s, "bytes_up", sum.bytes_up);
  audit_rec_u64(s, "bytes_down", sum.bytes_down);
  audit_rec_u64(s, "lines", sum.lines);
  audit_rec_u64(s, "joined", joined);
  audit_rec_u64(s, "not_joined", not_joined);
  audit_rec_u64(s, "bad_lines", sum.bad_lines);
}
