/* Totals of a proxy audit log (proxy_audit_summarize): the file holds the
 * flat JSON objects proxy_audit.c writes, one a line.  Each line is parsed
 * as such an object; a line that is not one (a torn or foreign line) is
 * skipped, never trusted halfway. */
#include "config.h"

#include <ctype.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "proxy_internal.h"
#include "util.h"

#define SUMMARY_MAX_LOG (256u << 20)
#define SUMMARY_MAX_KEYS 512

struct fields {
  char decision[16];
  char host[256];
  char rule[160];
  uint64_t port, bytes_up, bytes_down;
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

static int by_count(const void *a, const void *b) {
  const struct refusal *x = a, *y = b;
  if (x->count != y->count)
    return x->count < y->count ? 1 : -1;
  return strcmp(x->key, y->key);
}

int proxy_audit_summarize(const char *path, struct proxy_audit_summary *out, hutch_error_t *err) {
  *out = (struct proxy_audit_summary){0};
  size_t len;
  _cleanup_free_ char *text = read_file_at(AT_FDCWD, path, SUMMARY_MAX_LOG, &len);
  if (text == NULL) {
    if (errno == ENOENT)
      return 0; /* no request was made */
    return hutch_error_sys(err, "proxy audit log %s: read", path);
  }
  _cleanup_free_ struct refusal *refused = xcalloc(SUMMARY_MAX_KEYS, sizeof(*refused));
  size_t n_refused = 0;
  char *cursor = text;
  while (cursor != NULL) {
    char *line = strsep(&cursor, "\n");
    struct fields f;
    if (*line == '\0' || !parse_line(line, &f))
      continue;
    out->requests++;
    out->bytes_up += f.bytes_up;
    out->bytes_down += f.bytes_down;
    if (strcmp(f.decision, "allow") == 0) {
      out->allowed++;
    } else if (strcmp(f.decision, "refuse") == 0) {
      out->refused++;
      char key[256];
      snprintf(key, sizeof(key), "%.120s:%" PRIu64 " (%.100s)", f.host[0] ? f.host : "-", f.port, f.rule);
      size_t i;
      for (i = 0; i < n_refused; i++)
        if (strcmp(refused[i].key, key) == 0)
          break;
      if (i == n_refused && n_refused < SUMMARY_MAX_KEYS)
        snprintf(refused[n_refused++].key, sizeof(refused[0].key), "%s", key);
      if (i < n_refused)
        refused[i].count++;
    } else {
      out->errors++;
    }
  }
  qsort(refused, n_refused, sizeof(*refused), by_count);
  for (size_t i = 0; i < n_refused && i < ARRAY_SIZE(out->top_refused); i++) {
    snprintf(out->top_refused[i], sizeof(out->top_refused[i]), "%.200s x%" PRIu64, refused[i].key, refused[i].count);
    out->n_top_refused++;
  }
  return 0;
}
