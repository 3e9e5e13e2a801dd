/* SPDX-License-Identifier: Apache-2.0 */
#include "config.h"

#include "error.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "errno_text.h"
#include "text_escape.h"

static int error_vset(hutch_error_t *err, int errnum, const char *fmt, va_list ap) {
  if (err == NULL)
    return -1;
  if (*err != NULL) /* keep the first (innermost) error */
    return -1;
  /* Plain calloc and asprintf, aborting as util.h's x-allocators do: util.h
   * includes error.h, so error.c does not use util. */
  struct hutch_error *e = calloc(1, sizeof(*e));
  if (e == NULL)
    abort();
  e->errnum = errnum;
  if (vasprintf(&e->msg, fmt, ap) < 0)
    abort();
  *err = e;
  return -1;
}

int hutch_error_set(hutch_error_t *err, int errnum, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  error_vset(err, errnum, fmt, ap);
  va_end(ap);
  return -1;
}

int hutch_error_sys(hutch_error_t *err, const char *fmt, ...) {
  int saved = errno;
  va_list ap;
  va_start(ap, fmt);
  error_vset(err, saved, fmt, ap);
  va_end(ap);
  errno = saved;
  return -1;
}

int hutch_error_wrap(hutch_error_t *err, const char *fmt, ...) {
  if (err == NULL || *err == NULL)
    return -1;
  char *prefix = NULL;
  va_list ap;
  va_start(ap, fmt);
  if (vasprintf(&prefix, fmt, ap) < 0)
    abort();
  va_end(ap);
  char *msg;
  if (asprintf(&msg, "%s: %s", prefix, (*err)->msg) < 0)
    abort();
  free(prefix);
  free((*err)->msg);
  (*err)->msg = msg;
  return -1;
}

int hutch_error_hint(hutch_error_t *err, const char *fmt, ...) {
  if (err == NULL || *err == NULL)
    return -1;
  va_list ap;
  va_start(ap, fmt);
  free((*err)->hint);
  if (vasprintf(&(*err)->hint, fmt, ap) < 0)
    abort();
  va_end(ap);
  return -1;
}

void hutch_error_move(hutch_error_t *dst, hutch_error_t *src) {
  if (dst == NULL) {
    hutch_error_free(src);
    return;
  }
  if (*dst == NULL) {
    *dst = *src;
    *src = NULL;
  } else {
    hutch_error_free(src);
  }
}

void hutch_error_free(hutch_error_t *err) {
  if (err == NULL || *err == NULL)
    return;
  free((*err)->msg);
  free((*err)->hint);
  free(*err);
  *err = NULL;
}

/* Whether msg holds `text`, case ignored ("no such file or directory"). */
static bool holds_text(const char *msg, const char *text) {
  size_t n = strlen(text);
  for (const char *p = msg; *p; p++)
    if (strncasecmp(p, text, n) == 0)
      return true;
  return false;
}

/* Whether msg names an HTTP status ("answered HTTP 401"): the errno that
 * goes with it only sorts the status for callers (EACCES for 401, EPROTO
 * for a 500) and would tell a reader less than the status does. */
static bool names_http_status(const char *msg) {
  for (const char *p = strstr(msg, "HTTP "); p != NULL; p = strstr(p + 1, "HTTP ")) {
    const char *d = p + 5;
    bool word = p == msg || !isalnum((unsigned char)p[-1]);
    if (word && isdigit((unsigned char)d[0]) && isdigit((unsigned char)d[1]) && isdigit((unsigned char)d[2]) &&
        !isalnum((unsigned char)d[3]))
      return true;
  }
  return false;
}

char *hutch_errno_format(int errnum, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *msg;
  if (vasprintf(&msg, fmt, ap) < 0)
    abort();
  va_end(ap);
  /* errno 0 is no error: strerror(0) would say "Success".  The text is
   * glibc's in every build (errno_text.h). */
  if (errnum == 0)
    return msg;
  char *out, unknown[32];
  const char *text = errno_text(errnum, unknown);
  /* Said once: not after a message that says it already, nor after an
   * HTTP status, which the errno only stands for. */
  if (holds_text(msg, text) || names_http_status(msg))
    return msg;
  if (asprintf(&out, "%s: %s", msg, text) < 0)
    abort();
  free(msg);
  return out;
}

char *hutch_error_format(const hutch_error_t err) {
  char *out = strdup(err == NULL ? "" : err->msg);
  if (out == NULL)
    abort();
  if (err == NULL || err->errnum == 0)
    return out;
  free(out);
  return hutch_errno_format(err->errnum, "%s", err->msg);
}

void hutch_error_print(FILE *out, const char *prog, const hutch_error_t err) {
  if (err == NULL)
    return;
  /* A message may quote what a sandbox wrote (a file name, a reply). */
  char *text = hutch_error_format(err);
  char *msg = text_escape_cstr(text);
  fprintf(out, "%s: %s\n", prog, msg);
  free(msg);
  free(text);
  if (err->hint != NULL) {
    char *hint = text_escape_cstr(err->hint);
    fprintf(out, "%s: hint: %s\n", prog, hint);
    free(hint);
  }
}
