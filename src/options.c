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

/* A port number 0..65535 (min 0 or 1), all digits. */
static bool parse_port(const char *s, size_t len, unsigned min, unsigned short *out) {
  if (len == 0 || len > 5)
    return false;
  unsigned v = 0;
  for (size_t i = 0; i < len; i++) {
    if (s[i] < '0' || s[i] > '9')
      return false;
    v = v * 10 + (unsigned)(s[i] - '0');
  }
  if (v < min || v > 65535)
    return false;
  *out = (unsigned short)v;
  return true;
}

bool parse_publish(const char *spec, struct hutch_port *out, char *addr, size_t addr_len) {
  *out = (struct hutch_port){0};
  const char *last = strrchr(spec, ':');
  if (last == NULL || !parse_port(last + 1, strlen(last + 1), 1, &out->port))
    return false;
  /* What is before the last ':': HOSTPORT, ADDR:HOSTPORT or [V6]:HOSTPORT. */
  const char *host_port = spec, *a = NULL, *a_end = NULL;
  if (*spec == '[') {
    const char *close = memchr(spec, ']', (size_t)(last - spec));
    if (close == NULL || close[1] != ':')
      return false;
    a = spec + 1;
    a_end = close;
    host_port = close + 2;
  } else {
    const char *colon = memchr(spec, ':', (size_t)(last - spec));
    if (colon != NULL) {
      a = spec;
      a_end = colon;
      host_port = colon + 1;
    }
  }
  if (a != NULL) {
    if (a_end == a || (size_t)(a_end - a) >= addr_len)
      return false;
    memcpy(addr, a, (size_t)(a_end - a));
    addr[a_end - a] = '\0';
    out->host_addr = addr;
  }
  return host_port <= last && parse_port(host_port, (size_t)(last - host_port), 0, &out->host_port);
}
