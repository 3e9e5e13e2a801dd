/* SPDX-License-Identifier: Apache-2.0 */
/* Reading a proxy audit log (proxy.h): line by line through a buffer of
 * fixed size, whatever the file's size (the sandbox set its pace and chose
 * its contents), and the totals of its lines.  Each line is parsed as the
 * flat JSON object proxy_audit.c writes; a line that is not one (a torn or
 * foreign line) is counted as such, never trusted halfway. */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proxy_internal.h"
#include "util.h"

#define SUMMARY_MAX_KEYS 512
#define READ_CHUNK (64 * 1024)

/* ---- the reader ---- */

struct proxy_log_reader {
  int fd;
  char *path;
  char *buf; /* READ_CHUNK + 1, for the NUL after the last line */
  size_t start, end;
  bool eof;
  bool skipping; /* the rest of a line cut at PROXY_LOG_LINE_MAX */
};

int proxy_log_open(const char *path, struct proxy_log_reader **out, hutch_error_t *err) {
  *out = NULL;
  /* Never a FIFO or a device to wait on, never through a link. */
  _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | O_NOFOLLOW);
  if (fd < 0)
    return hutch_error_sys(err, "proxy log %s: open", path);
  struct stat st;
  if (fstat(fd, &st) < 0)
    return hutch_error_sys(err, "proxy log %s: stat", path);
  if (!S_ISREG(st.st_mode))
    return hutch_error_set(err, EINVAL, "proxy log %s is not a regular file", path);
  struct proxy_log_reader *r = xcalloc(1, sizeof(*r));
  r->fd = steal_fd(&fd);
  r->path = xstrdup(path);
  r->buf = xmalloc(READ_CHUNK + 1);
  *out = r;
  return 0;
}

void proxy_log_close(struct proxy_log_reader *r) {
  if (r == NULL)
    return;
  close(r->fd);
  free(r->path);
  free(r->buf);
  free(r);
}

int proxy_log_next(struct proxy_log_reader *r, const char **line, hutch_error_t *err) {
  for (;;) {
    char *at = r->buf + r->start;
    size_t have = r->end - r->start;
    char *nl = memchr(at, '\n', have);
    if (nl != NULL) {
      *nl = '\0';
      r->start += (size_t)(nl - at) + 1;
      if (r->skipping) {
        r->skipping = false;
        continue;
      }
      *line = at;
      return 1;
    }
    if (!r->skipping && have >= PROXY_LOG_LINE_MAX) {
      /* The rest of the line, to its newline, is dropped. */
      at[PROXY_LOG_LINE_MAX] = '\0';
      r->skipping = true;
      r->start = r->end;
      *line = at;
      return 1;
    }
    if (r->skipping) {
      r->start = r->end;
      have = 0;
    }
    if (r->eof) {
      if (have == 0)
        return 0;
      at[have] = '\0'; /* a last line without its newline: torn */
      r->start = r->end;
      *line = at;
      return 1;
    }
    memmove(r->buf, at, have);
    r->start = 0;
    r->end = have;
    ssize_t n;
    while ((n = read(r->fd, r->buf + r->end, READ_CHUNK - r->end)) < 0 && errno == EINTR)
      ;
    if (n < 0)
      return hutch_error_sys(err, "proxy log %s: read", r->path);
    r->eof = n == 0;
    r->end += (size_t)n;
  }
}

struct fields {
  char decision[16];
  char host[256];
  char rule[160];
  uint64_t port, bytes_up, bytes_down;
  uint64_t allowed, refused, errors; /* an "unlogged" line's */
};

/* A JSON string at *p (after the opening quote) into out (truncated). */
static bool parse_string(const char **p, char *out, size_t cap) {
  const char *s = *p;
  size_t n = 0;
  for (;;) {
    unsigned char c = (unsigned char)*s++;
    if (c == '\0' || c == '\n' || c < 0x20)
      return false;
    if (c == '"')
      break;
    if (c == '\\') {
      char e = *s++;
      switch (e) {
      case '"':
      case '\\':
      case '/':
        c = (unsigned char)e;
        break;
      case 'b':
        c = '\b';
        break;
      case 'f':
        c = '\f';
        break;
      case 'n':
        c = '\n';
        break;
      case 'r':
        c = '\r';
        break;
      case 't':
        c = '\t';
        break;
      case 'u': {
        unsigned v = 0;
        for (int i = 0; i < 4; i++) {
          if (!isxdigit((unsigned char)s[i]))
            return false;
          v = v * 16 +
              (unsigned)(isdigit((unsigned char)s[i]) ? s[i] - '0' : (tolower((unsigned char)s[i]) - 'a' + 10));
        }
        s += 4;
        c = v < 0x80 && v >= 0x20 ? (unsigned char)v : '?';
        break;
      }
      default:
        return false;
      }
    }
    if (n + 1 < cap)
      out[n++] = (char)c;
  }
  if (cap)
    out[n] = '\0';
  *p = s;
  return true;
}

static void skip_ws(const char **p) {
  while (**p == ' ' || **p == '\t')
    (*p)++;
}

/* One line into f; false when it is not a flat JSON object. */
static bool parse_line(const char *line, struct fields *f) {
  *f = (struct fields){0};
  const char *p = line;
  skip_ws(&p);
  if (*p++ != '{')
    return false;
  skip_ws(&p);
  if (*p == '}')
    return false;
  for (;;) {
    char key[32], sval[256];
    skip_ws(&p);
    if (*p++ != '"' || !parse_string(&p, key, sizeof(key)))
      return false;
    skip_ws(&p);
    if (*p++ != ':')
      return false;
    skip_ws(&p);
    bool is_str = false;
    uint64_t num = 0;
    if (*p == '"') {
      p++;
      if (!parse_string(&p, sval, sizeof(sval)))
        return false;
      is_str = true;
    } else if (isdigit((unsigned char)*p) || *p == '-') {
      char *end;
      double d = strtod(p, &end);
      if (end == p)
        return false;
      num = d > 0 && d < 1.8e19 ? (uint64_t)d : 0;
      p = end;
    } else if (strncmp(p, "true", 4) == 0 || strncmp(p, "null", 4) == 0) {
      p += 4;
    } else if (strncmp(p, "false", 5) == 0) {
      p += 5;
    } else {
      return false;
    }
    if (is_str && strcmp(key, "decision") == 0)
      snprintf(f->decision, sizeof(f->decision), "%.15s", sval);
    else if (is_str && strcmp(key, "host") == 0)
      snprintf(f->host, sizeof(f->host), "%s", sval);
    else if (is_str && strcmp(key, "rule") == 0)
      snprintf(f->rule, sizeof(f->rule), "%.159s", sval);
    else if (!is_str && strcmp(key, "port") == 0)
      f->port = num;
    else if (!is_str && strcmp(key, "bytes_up") == 0)
      f->bytes_up = num;
    else if (!is_str && strcmp(key, "bytes_down") == 0)
      f->bytes_down = num;
    else if (!is_str && strcmp(key, "allowed") == 0)
      f->allowed = num;
    else if (!is_str && strcmp(key, "refused") == 0)
      f->refused = num;
    else if (!is_str && strcmp(key, "errors") == 0)
      f->errors = num;
    skip_ws(&p);
    if (*p == ',') {
      p++;
      continue;
    }
    if (*p++ != '}')
      return false;
    skip_ws(&p);
    return (*p == '\0' || *p == '\r') && f->decision[0] != '\0';
  }
}

struct refusal {
  char key[256];
  uint64_t count;
};

struct proxy_refusals {
  size_t n;
  struct refusal e[SUMMARY_MAX_KEYS];
};

static void count_refusal(struct proxy_audit_summary *s, const struct fields *f) {
  if (s->refusals == NULL)
    s->refusals = xcalloc(1, sizeof(*s->refusals));
  struct proxy_refusals *r = s->refusals;
  char key[256];
  snprintf(key, sizeof(key), "%.120s:%" PRIu64 " (%.100s)", f->host[0] ? f->host : "-", f->port, f->rule);
  size_t i;
  for (i = 0; i < r->n; i++)
    if (strcmp(r->e[i].key, key) == 0)
      break;
  if (i == r->n && r->n < SUMMARY_MAX_KEYS)
    snprintf(r->e[r->n++].key, sizeof(r->e[0].key), "%s", key);
  if (i < r->n)
    r->e[i].count++;
}

void proxy_summary_add_line(struct proxy_audit_summary *s, const char *line) {
  struct fields f;
  if (*line == '\0')
    return;
  s->lines++;
  if (!parse_line(line, &f)) {
    s->bad_lines++;
    return;
  }
  s->bytes_up += f.bytes_up;
  s->bytes_down += f.bytes_down;
  if (strcmp(f.decision, "unlogged") == 0) {
    /* Requests the proxy counted instead of logging them. */
    uint64_t n = f.allowed + f.refused + f.errors;
    s->requests += n;
    s->unlogged += n;
    s->allowed += f.allowed;
    s->refused += f.refused;
    s->errors += f.errors;
    return;
  }
  s->requests++;
  if (strcmp(f.decision, "allow") == 0) {
    s->allowed++;
  } else if (strcmp(f.decision, "refuse") == 0) {
    s->refused++;
    count_refusal(s, &f);
  } else {
    s->errors++;
  }
}

static int by_count(const void *a, const void *b) {
  const struct refusal *x = a, *y = b;
  if (x->count != y->count)
    return x->count < y->count ? 1 : -1;
  return strcmp(x->key, y->key);
}

void proxy_summary_finish(struct proxy_audit_summary *s) {
  struct proxy_refusals *r = s->refusals;
  s->refusals = NULL;
  if (r == NULL)
    return;
  qsort(r->e, r->n, sizeof(r->e[0]), by_count);
  for (size_t i = 0; i < r->n && i < ARRAY_SIZE(s->top_refused); i++) {
    snprintf(s->top_refused[i], sizeof(s->top_refused[i]), "%.200s x%" PRIu64, r->e[i].key, r->e[i].count);
    s->n_top_refused++;
  }
  free(r);
}

int proxy_audit_summarize(const char *path, struct proxy_audit_summary *out, hutch_error_t *err) {
  *out = (struct proxy_audit_summary){0};
  struct proxy_log_reader *r;
  if (proxy_log_open(path, &r, err) < 0)
    return -1;
  const char *line;
  int n;
  while ((n = proxy_log_next(r, &line, err)) > 0)
    proxy_summary_add_line(out, line);
  proxy_log_close(r);
  proxy_summary_finish(out);
  return n;
}
