/* The proxy's audit log: one JSON object per line, one write() per line on
 * an O_APPEND descriptor, so that a reader never sees half a line and
 * several proxies may share a file. */
#include "config.h"

#include <inttypes.h>
#include <stdarg.h>
#include <string.h>
#include <time.h>

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

void proxy_audit_write(int fd, const struct audit_record *r) {
  if (fd < 0)
    return;
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  struct tm tm;
  gmtime_r(&ts.tv_sec, &tm);
  char when[40];
  strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);
  struct sbuf b = {0};
  sb_fmt(&b, "{\"time\":\"%s.%03ldZ\",\"sandbox\":", when, ts.tv_nsec / 1000000);
  sb_json(&b, r->sandbox);
  sb_str(&b, ",\"method\":");
  sb_json(&b, r->method);
  sb_str(&b, ",\"host\":");
  sb_json(&b, r->host);
  sb_fmt(&b, ",\"port\":%u,\"address\":", r->port);
  sb_json(&b, r->address);
  sb_str(&b, ",\"decision\":");
  sb_json(&b, r->decision);
  sb_str(&b, ",\"rule\":");
  sb_json(&b, r->rule);
  sb_fmt(&b, ",\"override\":%s,\"bytes_up\":%" PRIu64 ",\"bytes_down\":%" PRIu64 ",\"duration_ms\":%.1f,\"error\":",
         r->override ? "true" : "false", r->bytes_up, r->bytes_down, r->duration_ms);
  sb_json(&b, r->error);
  sb_str(&b, "}\n");
  if (write(fd, b.data, b.len) != (ssize_t)b.len)
    hutch_log_errno(HUTCH_LOG_DEBUG, errno, "proxy audit log: short write");
  free(b.data);
}
