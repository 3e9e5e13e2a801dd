/* SPDX-License-Identifier: Apache-2.0 */
/* The audit log's chain, bound and head (audit.h); pure but for the
 * appends, copies and reads at the end. */
#include "config.h"

#include "audit.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "sha256.h"
#include "util.h"

static void rec_add(struct audit_rec *r, const char *s, size_t n) {
  text_append(&r->data, &r->len, &r->cap, s, n);
}

#define rec_fmt(r, ...) text_appendf(&(r)->data, &(r)->len, &(r)->cap, __VA_ARGS__)

static void rec_key(struct audit_rec *r, const char *key) {
  rec_add(r, ",\"", 2);
  rec_add(r, key, strlen(key));
  rec_add(r, "\":", 2);
}

/* What the strings of a record may take: AUDIT_RECORD_MAX less room kept
 * for its numbers, which are always written. */
#define STRING_ROOM (AUDIT_RECORD_MAX - 2048)

static size_t room_left(const struct audit_rec *r) {
  return r->len < STRING_ROOM ? STRING_ROOM - r->len : 0;
}

/* Every byte that is not printable ASCII is escaped: the log is ASCII,
 * one line per record, whatever the sandbox named.  At most AUDIT_VALUE_MAX
 * bytes of s, and no more than `room` bytes written; false when cut. */
static bool rec_json_string(struct audit_rec *r, const char *s, size_t room) {
  rec_add(r, "\"", 1);
  size_t i = 0, used = 2;
  bool whole = true;
  for (const unsigned char *p = (const unsigned char *)s; *p; p++, i++) {
    char esc[8];
    size_t n;
    if (*p == '"' || *p == '\\') {
      esc[0] = '\\';
      esc[1] = (char)*p;
      n = 2;
    } else if (*p < 0x20 || *p >= 0x7f) {
      snprintf(esc, sizeof(esc), "\\u%04x", *p);
      n = 6;
    } else {
      esc[0] = (char)*p;
      n = 1;
    }
    if (i >= AUDIT_VALUE_MAX || used + n > room) {
      whole = false;
      break;
    }
    rec_add(r, esc, n);
    used += n;
  }
  rec_add(r, "\"", 1);
  return whole;
}

/* "KEY_truncated":true after a value that was cut. */
static void rec_truncated(struct audit_rec *r, const char *key) {
  rec_key(r, key);
  r->len -= 2;
  r->data[r->len] = '\0';
  rec_add(r, "_truncated\":true", 16);
}

void audit_rec_init(struct audit_rec *r, const char *type) {
  *r = (struct audit_rec){0};
  snprintf(r->type, sizeof(r->type), "%s", type);
  rec_add(r, "", 0);
}

void audit_rec_free(struct audit_rec *r) {
  free(r->data);
  *r = (struct audit_rec){0};
}

void audit_rec_str(struct audit_rec *r, const char *key, const char *val) {
  rec_key(r, key);
  if (val == NULL) {
    rec_add(r, "null", 4);
    return;
  }
  if (!rec_json_string(r, val, room_left(r)))
    rec_truncated(r, key);
}

void audit_rec_u64(struct audit_rec *r, const char *key, uint64_t v) {
  rec_key(r, key);
  rec_fmt(r, "%" PRIu64, v);
}

void audit_rec_i64(struct audit_rec *r, const char *key, int64_t v) {
  rec_key(r, key);
  rec_fmt(r, "%" PRId64, v);
}

void audit_rec_double(struct audit_rec *r, const char *key, double v) {
  rec_key(r, key);
  if (isfinite(v))
    rec_fmt(r, "%.6f", v);
  else
    rec_add(r, "null", 4);
}

void audit_rec_bool(struct audit_rec *r, const char *key, bool v) {
  rec_key(r, key);
  rec_add(r, v ? "true" : "false", v ? 4 : 5);
}

void audit_rec_null(struct audit_rec *r, const char *key) {
  rec_key(r, key);
  rec_add(r, "null", 4);
}

void audit_rec_strv(struct audit_rec *r, const char *key, const char *const *v) {
  if (v == NULL) {
    audit_rec_null(r, key);
    return;
  }
  rec_key(r, key);
  rec_add(r, "[", 1);
  bool whole = true;
  for (size_t i = 0; v[i]; i++) {
    /* Each one is cut at AUDIT_VALUE_MAX; the list where the record is full. */
    if (room_left(r) < 8) {
      whole = false;
      break;
    }
    if (i)
      rec_add(r, ",", 1);
    if (!rec_json_string(r, v[i], room_left(r)))
      whole = false;
  }
  rec_add(r, "]", 1);
  if (!whole)
    rec_truncated(r, key);
}

void audit_rec_file(struct audit_rec *r, const char *direction, const char *op, const char *path, uint64_t bytes,
                    const char *hex) {
  audit_rec_str(r, "direction", direction);
  audit_rec_str(r, "op", op);
  audit_rec_str(r, "path", path);
  if (hex == NULL)
    return;
  audit_rec_u64(r, "bytes", bytes);
  char digest[8 + SHA256_HEX_SIZE];
  snprintf(digest, sizeof(digest), "sha256:%s", hex);
  audit_rec_str(r, "sha256", digest);
}

void audit_rec_caller(struct audit_rec *r) {
  audit_rec_str(r, "hutch", PACKAGE_VERSION);
  audit_rec_u64(r, "uid", getuid());
  audit_rec_u64(r, "gid", getgid());
  audit_rec_u64(r, "euid", geteuid());
  audit_rec_i64(r, "pid", getpid());
}

void audit_rec_u64s(struct audit_rec *r, const char *const *keys, const uint64_t *values, size_t n) {
  for (size_t i = 0; i < n; i++)
    audit_rec_u64(r, keys[i], values[i]);
}

struct audit_rec *audit_recs_add(struct audit_recs *rs, const char *type) {
  if (rs->n == rs->cap) {
    rs->cap = rs->cap ? rs->cap * 2 : 8;
    rs->v = xrealloc(rs->v, rs->cap * sizeof(*rs->v));
  }
  audit_rec_init(&rs->v[rs->n], type);
  return &rs->v[rs->n++];
}

void audit_recs_free(struct audit_recs *rs) {
  for (size_t i = 0; i < rs->n; i++)
    audit_rec_free(&rs->v[i]);
  free(rs->v);
  *rs = (struct audit_recs){0};
}

struct file_recs {
  struct audit_recs *rs;
  const char *direction;
};

static void add_file_rec(const char *hex, uint64_t bytes, const char *path, void *data) {
  struct file_recs *f = data;
  audit_rec_file(audit_recs_add(f->rs, "file"), f->direction, "copy", path, bytes, hex);
}

size_t audit_recs_files(struct audit_recs *rs, const char *direction, const char *list, size_t len) {
  struct file_recs f = {rs, direction};
  return audit_files_each(list, len, add_file_rec, &f);
}

void audit_files_add(struct audit_files *f, const uint8_t digest[SHA256_DIGEST_SIZE], uint64_t bytes,
                     const char *path) {
  char hex[SHA256_HEX_SIZE], size[24];
  sha256_hex(digest, hex);
  int n = snprintf(size, sizeof(size), "%" PRIu64, bytes);
  size_t plen = strnlen(path, AUDIT_VALUE_MAX + 1);
  size_t want = sizeof(hex) + (size_t)n + 1 + plen + 1;
  if (f->len + want > AUDIT_FILES_MAX)
    return;
  if (f->len + want > f->cap) {
    f->cap = (f->len + want) * 2;
    f->data = xrealloc(f->data, f->cap);
  }
  char *p = f->data + f->len;
  memcpy(p, hex, sizeof(hex));
  memcpy(p + sizeof(hex), size, (size_t)n + 1);
  memcpy(p + sizeof(hex) + (size_t)n + 1, path, plen);
  p[want - 1] = '\0';
  f->len += want;
}

size_t audit_files_each(const char *list, size_t len,
                        void (*fn)(const char *hex, uint64_t bytes, const char *path, void *data), void *data) {
  size_t count = 0;
  const char *p = list, *end = list ? list + len : NULL;
  while (p && p < end) {
    const char *hex = p;
    const char *bytes = hex + strnlen(hex, (size_t)(end - hex)) + 1;
    if (bytes >= end)
      break;
    const char *path = bytes + strnlen(bytes, (size_t)(end - bytes)) + 1;
    if (path >= end)
      break;
    size_t plen = strnlen(path, (size_t)(end - path));
    if (path + plen >= end)
      break; /* not terminated: cut short */
    p = path + plen + 1;
    fn(hex, strtoull(bytes, NULL, 10), path, data);
    count++;
  }
  return count;
}

double audit_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* UTC by arithmetic (the proleptic Gregorian calendar, days since
 * 1970-01-01 to a date): gmtime_r would read /etc/localtime on first use,
 * on every command's path, for a time zone this log never uses. */
void audit_format_time(double realtime, char *buf, size_t len) {
  int64_t sec = (int64_t)realtime;
  long ms = (long)((realtime - (double)sec) * 1000);
  if (ms < 0 || ms > 999)
    ms = 0;
  int64_t days = sec >= 0 ? sec / 86400 : (sec - 86399) / 86400, rem = sec - days * 86400;
  int64_t z = days + 719468, era = (z >= 0 ? z : z - 146096) / 146097;
  int64_t doe = z - era * 146097, yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100), mp = (5 * doy + 2) / 153;
  int64_t d = doy - (153 * mp + 2) / 5 + 1, m = mp < 10 ? mp + 3 : mp - 9, y = yoe + era * 400 + (m <= 2);
  snprintf(buf, len, "%04" PRId64 "-%02" PRId64 "-%02" PRId64 "T%02" PRId64 ":%02" PRId64 ":%02" PRId64 ".%03ldZ", y, m,
           d, rem / 3600, rem % 3600 / 60, rem % 60, ms);
}

/* ---- the head ---- */

enum head_state { HEAD_OPEN, HEAD_CAPPED, HEAD_ENDED };
static const char *const head_states[] = {"open", "capped", "ended"};

struct head {
  uint64_t lines, bytes, cap;
  char sha256[SHA256_HEX_SIZE];
  enum head_state state;
};

static const char zero_hash[SHA256_HEX_SIZE] = "0000000000000000000000000000000000000000000000000000000000000000";

static bool is_hex64(const char *s) {
  for (int i = 0; i < 64; i++)
    if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
      return false;
  return true;
}

/* Version 2, updated in place by one pwrite (no new file and rename per
 * record, which on a filesystem with online discard costs a block freed and
 * allocated each time): every number fixed-width, so each head has the same
 * size, and the sha256 of what comes before "check" last, so that a head
 * written only in part (a crash in the middle of the pwrite) or edited
 * reads as such, not as another valid head.  The checksum is no seal: the
 * head is as safe as the state directory the sandbox cannot reach.
 * Version 1 (text of any length, replaced by rename) is still read. */
#define HEAD_FORMAT                                                                                                    \
  "hutch-audit-head 2\nlines %020" PRIu64 "\nbytes %020" PRIu64 "\ncap %020" PRIu64 "\nsha256 %.64s\nstate %-6s\n"
#define HEAD_CHECK "check "
#define HEAD_MAX 512

enum head_parsed { HEAD_OK = 0, HEAD_NOT_A_HEAD = -1, HEAD_TORN = -2 };

static void head_digest(const char *text, size_t len, char hex[SHA256_HEX_SIZE]) {
  uint8_t d[SHA256_DIGEST_SIZE];
  sha256_buffer(text, len, d);
  sha256_hex(d, hex);
}

/* The head's text (always of one length); returns its length. */
static size_t head_format(const struct head *h, char *text, size_t size) {
  int n = snprintf(text, size, HEAD_FORMAT, h->lines, h->bytes, h->cap, h->sha256, head_states[h->state]);
  char hex[SHA256_HEX_SIZE];
  head_digest(text, (size_t)n, hex);
  n += snprintf(text + n, size - (size_t)n, HEAD_CHECK "%s\n", hex);
  return (size_t)n;
}

static enum head_parsed head_parse(const char *text, struct head *h) {
  char hex[72], state[16], check[72];
  int version = 0;
  if (sscanf(text, "hutch-audit-head %d\n", &version) != 1 || (version != 1 && version != 2))
    return HEAD_NOT_A_HEAD;
  int fields = sscanf(text,
                      "hutch-audit-head %*d\nlines %" SCNu64 "\nbytes %" SCNu64 "\ncap %" SCNu64
                      "\nsha256 %70s\nstate %15s\n" HEAD_CHECK "%70s",
                      &h->lines, &h->bytes, &h->cap, hex, state, check);
  if (version == 2) {
    /* Whatever a torn write left, the check over the rest tells it. */
    const char *c = strstr(text, "\n" HEAD_CHECK);
    char want[SHA256_HEX_SIZE];
    if (c == NULL || fields != 6 || strlen(check) != 64)
      return HEAD_TORN;
    head_digest(text, (size_t)(c + 1 - text), want);
    if (strcmp(want, check) != 0)
      return HEAD_TORN;
  } else if (fields < 5) {
    return HEAD_NOT_A_HEAD;
  }
  if (strlen(hex) != 64 || !is_hex64(hex))
    return HEAD_NOT_A_HEAD;
  memcpy(h->sha256, hex, SHA256_HEX_SIZE);
  for (size_t i = 0; i < ARRAY_SIZE(head_states); i++)
    if (strcmp(state, head_states[i]) == 0) {
      h->state = (enum head_state)i;
      return HEAD_OK;
    }
  return HEAD_NOT_A_HEAD;
}

/* Reads a head from the start of fd; *len: its size (0: an empty file,
 * a head not yet written). */
static enum head_parsed head_read_fd(int fd, struct head *h, size_t *len) {
  char buf[HEAD_MAX];
  ssize_t n;
  while ((n = pread(fd, buf, sizeof(buf) - 1, 0)) < 0 && errno == EINTR)
    ;
  if (len)
    *len = n > 0 ? (size_t)n : 0;
  if (n < 0)
    return HEAD_NOT_A_HEAD;
  buf[n] = '\0';
  return head_parse(buf, h);
}

static const char *head_problem(enum head_parsed p) {
  return p == HEAD_TORN ? "is torn or edited (its checksum does not match)" : "is not a head file";
}

/* One pwrite over the old head (a version 1 head, shorter, is overwritten
 * whole; anything longer cut). */
static int head_store(const struct audit_log *l, const struct head *h, size_t old_len, hutch_error_t *err) {
  char text[HEAD_MAX];
  size_t n = head_format(h, text, sizeof(text));
  if (pwrite(l->head_fd, text, n, 0) != (ssize_t)n || (old_len > n && ftruncate(l->head_fd, (off_t)n) < 0))
    return hutch_error_sys(err, "audit log: write %s" AUDIT_HEAD_SUFFIX, l->name);
  return 0;
}

/* ---- appending ---- */

static char *line_compose(const struct head *h, const char *type, const char *members, size_t *len) {
  char when[40];
  audit_format_time(audit_now(), when, sizeof(when));
  char *line = xasprintf("{\"seq\":%" PRIu64 ",\"prev\":\"%s\",\"time\":\"%s\",\"type\":\"%s\"%s}\n", h->lines + 1,
                         h->lines ? h->sha256 : zero_hash, when, type, members);
  *len = strlen(line);
  return line;
}

/* One record onto the log (fd, locked) after head h.
 *
 * No fsync, the "end" included: the records go to disk with the kernel's
 * writeback, like auditd's default (flush = incremental_async).  An fsync
 * protects only against a host crash in the seconds after the record, and
 * it cost a one-shot `hutch exec` a journal commit per file (three, with
 * the archive's directory) on its critical path: 0.9-2.5 ms on an ext4 with
 * online discard, where each commit also waits for its discards, against
 * a whole start of 3-4 ms.  What a crash can do then is what it always
 * could to the records a long-lived sandbox's commands append (never
 * flushed): lose the last ones.  Log and head go to disk independently, so
 * after a crash they may disagree; the verification then reports the log as
 * cut or not matching its head, never as complete (the head checks itself,
 * and the chain each line). */
static int append_one(int fd, const char *name, struct head *h, const struct audit_rec *r, hutch_error_t *err) {
  bool end = strcmp(r->type, "end") == 0;
  if (h->state == HEAD_ENDED)
    return hutch_error_set(err, EPIPE, "audit log: %s has ended", name);
  if (h->state == HEAD_CAPPED && !end)
    return 0; /* dropped: the "capped" record says so */
  size_t len;
  _cleanup_free_ char *line = line_compose(h, r->type, r->data ? r->data : "", &len);
  if (!end && h->bytes + len > h->cap) {
    _cleanup_free_ char *capped = xasprintf(",\"cap\":%" PRIu64 ",\"dropped\":\"%s\"", h->cap, r->type);
    free(line);
    line = line_compose(h, "capped", capped, &len);
    h->state = HEAD_CAPPED;
  }
  /* One write per line on O_APPEND: a reader never sees two records mixed,
   * and a short append is caught by the next verification (no newline, or
   * the head's size); the head is then left as it was. */
  if (write(fd, line, len) != (ssize_t)len)
    return hutch_error_sys(err, "audit log: append to %s", name);
  uint8_t digest[SHA256_DIGEST_SIZE];
  sha256_buffer(line, len - 1, digest);
  sha256_hex(digest, h->sha256);
  h->lines++;
  h->bytes += len;
  if (end)
    h->state = HEAD_ENDED;
  return 0;
}

int audit_log_open(int dirfd, const char *name, struct audit_log *l, hutch_error_t *err) {
  *l = (struct audit_log){.log_fd = -1, .head_fd = -1};
  snprintf(l->name, sizeof(l->name), "%s", name);
  _cleanup_free_ char *head_name = xasprintf("%s" AUDIT_HEAD_SUFFIX, name);
  l->log_fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (l->log_fd < 0)
    return hutch_error_sys(err, "audit log: open %s", name);
  l->head_fd = openat(dirfd, head_name, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (l->head_fd < 0) {
    hutch_error_sys(err, "audit log: open %s", head_name);
    audit_log_close(l);
    return -1;
  }
  return 0;
}

void audit_log_close(struct audit_log *l) {
  if (l->log_fd >= 0)
    close(l->log_fd);
  if (l->head_fd >= 0)
    close(l->head_fd);
  l->log_fd = l->head_fd = -1;
}

/* The head of l; a new one of `cap` (0: the default) while its file is
 * empty. */
static int head_load(const struct audit_log *l, uint64_t cap, struct head *h, size_t *head_len, hutch_error_t *err) {
  *h = (struct head){.cap = cap ? cap : AUDIT_DEFAULT_CAP};
  enum head_parsed hp = head_read_fd(l->head_fd, h, head_len);
  if (*head_len > 0 && hp != HEAD_OK)
    return hutch_error_set(err, EBADMSG, "audit log: %s" AUDIT_HEAD_SUFFIX " %s", l->name, head_problem(hp));
  if (*head_len == 0)
    *h = (struct head){.cap = cap ? cap : AUDIT_DEFAULT_CAP};
  return 0;
}

/* Under the log's lock: the head read, the log's size checked against it,
 * the records appended, the head updated. */
static int append_locked(struct audit_log *l, uint64_t cap, const struct audit_rec *recs, size_t n,
                         hutch_error_t *err) {
  struct stat sst;
  if (fstat(l->log_fd, &sst) < 0)
    return hutch_error_sys(err, "audit log: stat %s", l->name);
  struct head h;
  size_t head_len;
  if (head_load(l, cap, &h, &head_len, err) < 0)
    return -1;
  if ((uint64_t)sst.st_size != h.bytes)
    return hutch_error_set(err, EBADMSG, "audit log: %s holds %" PRIu64 " bytes, its head says %" PRIu64, l->name,
                           (uint64_t)sst.st_size, h.bytes);
  uint64_t lines = h.lines;
  int r = 0;
  for (size_t i = 0; i < n && r == 0; i++)
    r = append_one(l->log_fd, l->name, &h, &recs[i], err);
  /* What was appended is in the head, also after a failed record. */
  if (h.lines != lines && head_store(l, &h, head_len, r < 0 ? NULL : err) < 0)
    return -1;
  return r;
}

int audit_log_room(struct audit_log *l, uint64_t *room, hutch_error_t *err) {
  *room = 0;
  while (flock(l->log_fd, LOCK_SH) < 0)
    if (errno != EINTR)
      return hutch_error_sys(err, "audit log: lock %s", l->name);
  struct head h;
  size_t head_len;
  int r = head_load(l, 0, &h, &head_len, err);
  (void)flock(l->log_fd, LOCK_UN);
  if (r < 0)
    return -1;
  if (h.state == HEAD_OPEN && h.bytes < h.cap)
    *room = h.cap - h.bytes;
  return 0;
}

size_t audit_rec_line_max(const struct audit_rec *r) {
  /* line_compose's: a seq of 20 digits, the hash, a time of 24 characters. */
  return sizeof("{\"seq\":,\"prev\":\"\",\"time\":\"\",\"type\":\"\"}\n") + 20 + 64 + 24 + strlen(r->type) + r->len;
}

int audit_log_append_n(struct audit_log *l, uint64_t cap, const struct audit_rec *recs, size_t n, hutch_error_t *err) {
  /* One appender at a time (exec --in from several hutch processes): the
   * chain needs the line before.  A lock of the open file: threads sharing
   * l must take turns themselves. */
  while (flock(l->log_fd, LOCK_EX) < 0)
    if (errno != EINTR)
      return hutch_error_sys(err, "audit log: lock %s", l->name);
  int r = append_locked(l, cap, recs, n, err);
  (void)flock(l->log_fd, LOCK_UN);
  return r;
}

int audit_append_n(int dirfd, const char *name, uint64_t cap, const struct audit_rec *recs, size_t n,
                   hutch_error_t *err) {
  struct audit_log l;
  if (audit_log_open(dirfd, name, &l, err) < 0)
    return -1;
  int r = audit_log_append_n(&l, cap, recs, n, err);
  audit_log_close(&l);
  return r;
}

int audit_append(int dirfd, const char *name, uint64_t cap, const struct audit_rec *r, hutch_error_t *err) {
  return audit_append_n(dirfd, name, cap, r, 1, err);
}

/* ---- verifying ---- */

static void verdict_fail(struct audit_verdict *v, uint64_t line, const char *fmt, ...) HUTCH_PRINTF(3, 4);
static void verdict_fail(struct audit_verdict *v, uint64_t line, const char *fmt, ...) {
  if (!v->ok)
    return;
  v->ok = false;
  v->broken_line = line;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(v->reason, sizeof(v->reason), fmt, ap);
  va_end(ap);
}

/* The record's type: the fourth member, at a place the writer fixes. */
static void line_type(const char *text, size_t len, char *type, size_t tlen) {
  type[0] = '\0';
  const char *p = memmem(text, len, ",\"type\":\"", 9);
  if (p == NULL)
    return;
  p += 9;
  size_t i = 0;
  while (p + i < text + len && p[i] != '"' && i + 1 < tlen) {
    type[i] = p[i];
    i++;
  }
  type[i] = '\0';
}

/* The value of a number member of a record hutch wrote with numbers only
 * (net_summary, net_dropped); 0 when absent. */
static uint64_t line_u64(const char *text, size_t len, const char *key) {
  char want[40];
  int n = snprintf(want, sizeof(want), ",\"%s\":", key);
  const char *p = memmem(text, len, want, (size_t)n);
  return p ? strtoull(p + n, NULL, 10) : 0;
}

/* What the records about the proxy's log say, for the verdict. */
static void line_network(const char *text, size_t len, const char *type, struct audit_verdict *v) {
  if (strcmp(type, "net_summary") == 0) {
    v->net = true;
    v->net_requests = line_u64(text, len, "requests");
    v->net_unlogged = line_u64(text, len, "unlogged");
    v->net_not_joined = line_u64(text, len, "not_joined");
  } else if (strcmp(type, "net_unread") == 0) {
    v->net = v->net_unread = true;
  }
}

static int verify_locked(int log_fd, int head_fd, void (*line)(const char *text, size_t len, uint64_t no, void *data),
                         void *data, struct audit_verdict *v, hutch_error_t *err) {
  *v = (struct audit_verdict){.ok = true};
  int dfd = dup(log_fd);
  _cleanup_fclose_ FILE *f = dfd >= 0 ? fdopen(dfd, "r") : NULL;
  if (f == NULL) {
    if (dfd >= 0)
      close(dfd);
    return hutch_error_sys(err, "audit log: read");
  }
  char prev[SHA256_HEX_SIZE];
  memcpy(prev, zero_hash, sizeof(prev));
  uint64_t bytes = 0;
  bool ended = false;
  _cleanup_free_ char *buf = NULL;
  size_t cap = 0;
  ssize_t n;
  while ((n = getline(&buf, &cap, f)) > 0) {
    uint64_t no = v->lines + 1;
    if (buf[n - 1] != '\n') {
      verdict_fail(v, no, "line %" PRIu64 " is incomplete (no newline: a partial write, or cut)", no);
      break;
    }
    v->lines = no;
    bytes += (uint64_t)n;
    if (line)
      line(buf, (size_t)n - 1, no, data);
    if (ended)
      verdict_fail(v, no, "line %" PRIu64 " follows the end record", no);
    char want[96];
    int wl = snprintf(want, sizeof(want), "{\"seq\":%" PRIu64 ",\"prev\":\"%s\",", no, prev);
    if ((size_t)n < (size_t)wl || memcmp(buf, want, (size_t)wl) != 0) {
      if (strncmp(buf, "{\"seq\":", 7) != 0 || strtoull(buf + 7, NULL, 10) != no)
        verdict_fail(v, no, "line %" PRIu64 ": not record %" PRIu64 " (a line removed, added or moved)", no, no);
      else
        verdict_fail(v, no, "line %" PRIu64 ": the previous line's hash does not match (line %" PRIu64 " changed)", no,
                     no - 1);
    }
    uint8_t digest[SHA256_DIGEST_SIZE];
    sha256_buffer(buf, (size_t)n - 1, digest);
    sha256_hex(digest, prev);
    char type[24];
    line_type(buf, (size_t)n - 1, type, sizeof(type));
    ended = strcmp(type, "end") == 0;
    if (strcmp(type, "capped") == 0)
      v->capped = true;
    line_network(buf, (size_t)n - 1, type, v);
  }
  if (ferror(f))
    return hutch_error_sys(err, "audit log: read");
  v->ended = ended && v->ok;
  if (v->lines == 0)
    verdict_fail(v, 0, "the log is empty");
  if (head_fd >= 0) {
    struct head h;
    v->headed = true;
    enum head_parsed hp = head_read_fd(head_fd, &h, NULL);
    if (hp != HEAD_OK)
      verdict_fail(v, 0, "the head file %s", head_problem(hp));
    else if (h.lines != v->lines || h.bytes != bytes || strcmp(h.sha256, prev) != 0)
      verdict_fail(v, v->lines < h.lines ? v->lines : h.lines,
                   "the log has %" PRIu64 " lines (%" PRIu64 " bytes), its head records %" PRIu64 " (%" PRIu64
                   " bytes) ending in another hash: lines cut off the end, added, or changed",
                   v->lines, bytes, h.lines, h.bytes);
    else if ((h.state == HEAD_ENDED) != ended)
      verdict_fail(v, v->lines, "the head says the log %s, the log says otherwise",
                   h.state == HEAD_ENDED ? "ended" : "is open");
  } else if (!ended) {
    verdict_fail(v, v->lines, "no end record, and no head file: lines may have been cut off the end");
  }
  return 0;
}

int audit_verify(int log_fd, int head_fd, void (*line)(const char *text, size_t len, uint64_t no, void *data),
                 void *data, struct audit_verdict *v, hutch_error_t *err) {
  /* Read between two appends (which hold the lock exclusively), a live
   * log and its head agree; a log that cannot be locked is read as it is. */
  bool locked = flock(log_fd, LOCK_SH) == 0;
  int r = verify_locked(log_fd, head_fd, line, data, v, err);
  if (locked)
    (void)flock(log_fd, LOCK_UN);
  return r;
}

int audit_copy_to(int dirfd, const char *name, const char *dest, hutch_error_t *err) {
  const char *names[] = {name, NULL};
  _cleanup_free_ char *head_name = xasprintf("%s" AUDIT_HEAD_SUFFIX, name);
  names[1] = head_name;
  for (int i = 0; i < 2; i++) {
    /* Copied through a buffer: a log of any bound ([limits] audit_log =
     * max) costs no more memory than a small one. */
    _cleanup_close_ int fd = openat(dirfd, names[i], O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0)
      return hutch_error_sys(err, "audit log: read %s", names[i]);
    if (!S_ISREG(st.st_mode))
      return hutch_error_set(err, EINVAL, "audit log: %s is not a regular file", names[i]);
    _cleanup_free_ char *to = i == 0 ? xstrdup(dest) : xasprintf("%s" AUDIT_HEAD_SUFFIX, dest);
    /* No fsync, as for the log itself (hutch-audit(5), "Durability"): two
     * of them were 2 to 5 ms of every `hutch run`'s teardown. */
    if (copy_file_replace(to, fd, 0600) < 0)
      return hutch_error_sys(err, "audit log: copy %s to %s", names[i], to);
  }
  return 0;
}
