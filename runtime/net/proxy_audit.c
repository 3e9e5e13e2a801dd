/* SPDX-License-Identifier: Apache-2.0 */
/* The proxy's audit log: one JSON object per line, one write() per line on
 * an O_APPEND descriptor, so that a reader never sees half a line and
 * several proxies may share a file.
 *
 * The sandbox sets the pace of its requests, and the log is on the host's
 * disk: it holds at most log_max bytes ([network] in hutch-policy(5)), and
 * refusals and errors (which cost the sandbox nothing to repeat) past
 * NET_LOG_REFUSALS_PER_SECOND are counted instead of logged.  What was
 * counted is logged as lines whose decision is "unlogged", with the
 * requests' number by decision and their bytes: every second for the
 * refusals over the rate, and, past log_max, one line when it is reached
 * and one when the proxy ends, in room kept for them. */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "proxy_internal.h"
#include "util.h"

struct sbuf {
  char *data;
  size_t len, cap;
};

static void sb_add(struct sbuf *b, const char *s, size_t n) {
  text_append(&b->data, &b->len, &b->cap, s, n);
}

static void sb_str(struct sbuf *b, const char *s) {
  sb_add(b, s, strlen(s));
}

/* Host names, methods and errors come from the sandbox: every byte that is
 * not printable ASCII is escaped, so the log stays valid UTF-8 JSON. */
static void sb_json(struct sbuf *b, const char *s) {
  if (s == NULL) {
    sb_str(b, "null");
    return;
  }
  sb_str(b, "\"");
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    char esc[8];
    if (*p == '"' || *p == '\\') {
      esc[0] = '\\';
      esc[1] = (char)*p;
      sb_add(b, esc, 2);
    } else if (*p < 0x20 || *p >= 0x7f) {
      snprintf(esc, sizeof(esc), "\\u%04x", *p);
      sb_add(b, esc, 6);
    } else {
      sb_add(b, (const char *)p, 1);
    }
  }
  sb_str(b, "\"");
}

char *proxy_json_escape(const char *s) {
  struct sbuf b = {0};
  sb_json(&b, s);
  return b.data;
}

#define sb_fmt(b, ...) text_appendf(&(b)->data, &(b)->len, &(b)->cap, __VA_ARGS__)

bool proxy_bucket_take(struct proxy_bucket *b, double rate, double burst, double now) {
  if (b->at == 0) {
    b->tokens = burst;
    b->at = now;
  } else if (now > b->at) {
    b->tokens += (now - b->at) * rate;
    if (b->tokens > burst)
      b->tokens = burst;
    b->at = now;
  }
  if (b->tokens < 1)
    return false;
  b->tokens -= 1;
  return true;
}

/* A line's start: its time and sandbox. */
static void line_begin(struct sbuf *b, const char *sandbox) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  struct tm tm;
  gmtime_r(&ts.tv_sec, &tm);
  char when[40];
  strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);
  sb_fmt(b, "{\"time\":\"%s.%03ldZ\",\"sandbox\":", when, ts.tv_nsec / 1000000);
  sb_json(b, sandbox);
}

static void format_request(struct sbuf *b, const struct audit_record *r) {
  line_begin(b, r->sandbox);
  sb_str(b, ",\"method\":");
  sb_json(b, r->method);
  sb_str(b, ",\"host\":");
  sb_json(b, r->host);
  sb_fmt(b, ",\"port\":%u,\"address\":", r->port);
  sb_json(b, r->address);
  sb_str(b, ",\"decision\":");
  sb_json(b, r->decision);
  sb_str(b, ",\"rule\":");
  sb_json(b, r->rule);
  sb_fmt(b, ",\"override\":%s,\"bytes_up\":%" PRIu64 ",\"bytes_down\":%" PRIu64 ",\"duration_ms\":%.1f,\"error\":",
         r->override ? "true" : "false", r->bytes_up, r->bytes_down, r->duration_ms);
  sb_json(b, r->error);
  sb_str(b, "}\n");
}

/* Requests counted instead of logged (hutch-policy(5), log_max): the
 * decision "unlogged", their number by decision and their bytes. */
static void format_unlogged(struct sbuf *b, const char *sandbox, const struct proxy_unlogged *u, const char *reason) {
  line_begin(b, sandbox);
  sb_fmt(b,
         ",\"decision\":\"unlogged\",\"requests\":%" PRIu64 ",\"allowed\":%" PRIu64 ",\"refused\":%" PRIu64
         ",\"errors\":%" PRIu64 ",\"bytes_up\":%" PRIu64 ",\"bytes_down\":%" PRIu64 ",\"reason\":",
         u->allowed + u->refused + u->errors, u->allowed, u->refused, u->errors, u->bytes_up, u->bytes_down);
  sb_json(b, reason);
  sb_str(b, "}\n");
}

static bool unlogged_any(const struct proxy_unlogged *u) {
  return u->allowed + u->refused + u->errors > 0;
}

static void unlogged_add(struct proxy_unlogged *to, const struct proxy_unlogged *u) {
  to->allowed += u->allowed;
  to->refused += u->refused;
  to->errors += u->errors;
  to->bytes_up += u->bytes_up;
  to->bytes_down += u->bytes_down;
}

static bool write_line(struct listener *l, const struct sbuf *b) {
  if (l->audit_fd < 0 || l->log_errno)
    return false;
  ssize_t n = write(l->audit_fd, b->data, b->len);
  if (n > 0)
    l->log_bytes += (uint64_t)n;
  if (n == (ssize_t)b->len)
    return true;
  l->log_errno = n < 0 ? errno : EIO;
  hutch_log_errno(HUTCH_LOG_WARNING, l->log_errno,
                  "proxy: write its log (sandbox %s); later requests are counted, not logged", l->sandbox_id);
  return false;
}

static void why_unlogged(const struct listener *l, bool last, char *why, size_t len) {
  if (l->log_errno) {
    snprintf(why, len, "writing the log failed (%s): %s requests were counted, not logged", strerror(l->log_errno),
             last ? "these" : "these and later");
    return;
  }
  char size[32];
  hutch_format_size(l->policy->log_max, size, sizeof(size));
  snprintf(why, len, "the log reached log_max (%s): %s", size,
           last ? "these requests since were counted, not logged"
                : "these requests and every later one are counted, not logged, until the proxy ends");
}

/* The line that counts what the bound kept out: when it is reached (and
 * the counts start again), and when the proxy ends (`last`). */
static void write_dropped(struct listener *l, bool last) {
  char why[200];
  why_unlogged(l, last, why, sizeof(why));
  struct sbuf b = {0};
  format_unlogged(&b, l->sandbox_id, &l->dropped, why);
  write_line(l, &b);
  free(b.data);
  l->dropped = (struct proxy_unlogged){0};
}

/* A line, or `u` counted when it does not fit under log_max (less what is
 * kept for the counts): the first time, a line says so, past the bound
 * into the room kept. */
static void put(struct listener *l, const struct sbuf *line, const struct proxy_unlogged *u) {
  uint64_t room = l->policy->log_max - PROXY_LOG_RESERVE;
  if (!l->log_full && l->log_bytes + line->len <= room && write_line(l, line))
    return;
  unlogged_add(&l->dropped, u);
  if (l->log_full)
    return;
  l->log_full = true;
  write_dropped(l, false);
}

static void report_rated(struct listener *l) {
  if (!unlogged_any(&l->rated))
    return;
  char why[160];
  snprintf(why, sizeof(why), "refusals and errors past %d a second (after %d): answered and counted, not each logged",
           NET_LOG_REFUSALS_PER_SECOND, NET_LOG_REFUSAL_BURST);
  struct sbuf b = {0};
  format_unlogged(&b, l->sandbox_id, &l->rated, why);
  struct proxy_unlogged u = l->rated;
  l->rated = (struct proxy_unlogged){0};
  l->rated_since = 0;
  put(l, &b, &u);
  free(b.data);
}

void proxy_log_request(struct listener *l, const struct audit_record *r, double now) {
  if (l->audit_fd < 0)
    return;
  bool allowed = strcmp(r->decision, "allow") == 0, refused = strcmp(r->decision, "refuse") == 0;
  struct proxy_unlogged u = {
      .allowed = allowed,
      .refused = refused,
      .errors = !allowed && !refused,
      .bytes_up = r->bytes_up,
      .bytes_down = r->bytes_down,
  };
  if (!allowed && !proxy_bucket_take(&l->log_tokens, NET_LOG_REFUSALS_PER_SECOND, NET_LOG_REFUSAL_BURST, now)) {
    if (!unlogged_any(&l->rated))
      l->rated_since = now;
    unlogged_add(&l->rated, &u);
    return;
  }
  if (l->log_full) {
    unlogged_add(&l->dropped, &u);
    return;
  }
  struct sbuf b = {0};
  format_request(&b, r);
  put(l, &b, &u);
  free(b.data);
}

void proxy_log_tick(struct listener *l, double now) {
  if (unlogged_any(&l->rated) && now - l->rated_since >= 1.0)
    report_rated(l);
}

void proxy_log_end(struct listener *l) {
  if (l->log_ended)
    return;
  l->log_ended = true;
  report_rated(l);
  if (unlogged_any(&l->dropped))
    write_dropped(l, true);
}
