/* SPDX-License-Identifier: Apache-2.0 */
#include "config.h"

#include "options.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool parse_duration(const char *s, double *out) {
  if (s == NULL || *s == '\0')
    return false;
  char *end;
  double v = strtod(s, &end);
  if (end == s || !isfinite(v) || v <= 0)
    return false;
  double mult;
  if (*end == '\0' || strcmp(end, "s") == 0)
    mult = 1;
  else if (strcmp(end, "ms") == 0)
    mult = 0.001;
  else if (strcmp(end, "m") == 0)
    mult = 60;
  else if (strcmp(end, "h") == 0)
    mult = 3600;
  else
    return false;
  *out = v * mult;
  return true;
}

void format_duration(double seconds, char *buf, size_t len) {
  if (!(seconds > 0))
    seconds = 0;
  if (seconds < 10) {
    snprintf(buf, len, "%.1fs", seconds);
    return;
  }
  long long n = (long long)(seconds + 0.5);
  long long d = n / 86400, h = n / 3600 % 24, m = n / 60 % 60, s = n % 60;
  if (d > 0)
    snprintf(buf, len, "%lldd%02lldh", d, h);
  else if (h > 0)
    snprintf(buf, len, "%lldh%02lldm", h, m);
  else if (m > 0)
    snprintf(buf, len, "%lldm%02llds", m, s);
  else
    snprintf(buf, len, "%llds", s);
}

bool parse_bind(const char *spec, struct hutch_bind *out, char **storage) {
  char *copy = strdup(spec);
  if (copy == NULL)
    return false;
  char *src = copy, *dst = strchr(copy, ':');
  if (dst == NULL)
    goto bad;
  *dst++ = '\0';
  char *mode = strchr(dst, ':');
  bool ro = false;
  if (mode != NULL) {
    *mode++ = '\0';
    if (strcmp(mode, "ro") == 0)
      ro = true;
    else if (strcmp(mode, "rw") != 0)
      goto bad;
  }
  if (src[0] != '/' || dst[0] != '/')
    goto bad;
  *out = (struct hutch_bind){.source = src, .dest = dst, .readonly = ro};
  *storage = copy;
  return true;
bad:
  free(copy);
  return false;
}

bool valid_env_assignment(const char *kv) {
  const char *eq = strchr(kv, '=');
  if (eq == NULL || eq == kv || isdigit((unsigned char)kv[0]))
    return false;
  for (const char *p = kv; p < eq; p++)
    if (!isalnum((unsigned char)*p) && *p != '_')
      return false;
  return true;
}
