/* SPDX-License-Identifier: Apache-2.0 */
/* Minimal TAP producer for the C unit tests (run under automake's TAP driver). */
#ifndef HUTCH_TAP_H
#define HUTCH_TAP_H

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static int tap_count;
static int tap_failed;

__attribute__((format(printf, 2, 3))) static void tap_ok(int cond, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  printf("%s %d - ", cond ? "ok" : "not ok", ++tap_count);
  vprintf(fmt, ap);
  printf("\n");
  va_end(ap);
  if (!cond)
    tap_failed++;
  fflush(stdout);
}

#define tap_is_int(got, want, ...)                                                                                     \
  do {                                                                                                                 \
    long long _g = (long long)(got), _w = (long long)(want);                                                           \
    tap_ok(_g == _w, __VA_ARGS__);                                                                                     \
    if (_g != _w)                                                                                                      \
      printf("#   got %lld, want %lld\n", _g, _w);                                                                     \
  } while (0)

#define tap_is_str(got, want, ...)                                                                                     \
  do {                                                                                                                 \
    const char *_g = (got), *_w = (want);                                                                              \
    int _eq = (_g == NULL && _w == NULL) || (_g != NULL && _w != NULL && strcmp(_g, _w) == 0);                         \
    tap_ok(_eq, __VA_ARGS__);                                                                                          \
    if (!_eq)                                                                                                          \
      printf("#   got \"%s\", want \"%s\"\n", _g ? _g : "(null)", _w ? _w : "(null)");                                 \
  } while (0)

static inline int tap_done(void) {
  printf("1..%d\n", tap_count);
  return tap_failed ? 1 : 0;
}

#endif
