/* SPDX-License-Identifier: Apache-2.0
 *
 * A build step's output, escaped and capped (step_output.h). */
#include "config.h"

#include "step_output.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "hutch.h"
#include "text_escape.h"
#include "util.h"

void step_output_init(struct step_output *o, uint64_t max, struct step_budget *total) {
  memset(o, 0, sizeof(*o));
  o->max = max;
  o->total = total;
}

/* Whether s (left bytes) is the start of a UTF-8 sequence that goes on past
 * it: the lead byte asks for more bytes than there are, and those there
 * are continuation bytes. */
static bool utf8_cut(const unsigned char *s, size_t left) {
  size_t need = (s[0] & 0xe0) == 0xc0 ? 2 : (s[0] & 0xf0) == 0xe0 ? 3 : (s[0] & 0xf8) == 0xf0 ? 4 : 0;
  if (need <= left)
    return false;
  for (size_t i = 1; i < left; i++)
    if ((s[i] & 0xc0) != 0x80)
      return false;
  return true;
}

static uint64_t room(const struct step_output *o) {
  uint64_t step = o->max - o->written, all = o->total->max - o->total->used;
  return step < all ? step : all;
}

/* Escapes s into out (room for len * TEXT_ESCAPE_MAX bytes) while the caps
 * allow; what does not fit, from the first character that does not, is
 * counted as dropped.  Returns the bytes put in out. */
static size_t keep(struct step_output *o, const unsigned char *s, size_t len, char *out) {
  size_t n = 0, i = 0, used;
  uint64_t left = o->dropped ? 0 : room(o);
  char one[TEXT_ESCAPE_MAX + 1];
  for (; i < len; i += used) {
    size_t k = text_escape_char(s + i, len - i, one, &used);
    if (k > left)
      break;
    memcpy(out + n, one, k);
    n += k;
    left -= k;
  }
  o->dropped += len - i;
  o->written += n;
  o->total->used += n;
  if (n > 0)
    o->mid_line = out[n - 1] != '\n';
  return n;
}

void step_output_feed(struct step_output *o, const char *buf, size_t len, step_emit_fn emit, void *data) {
  if (o->dropped > 0) {
    o->dropped += len; /* past a cap: counted, nothing more to escape */
    return;
  }
  const unsigned char *s = (const unsigned char *)buf;
  _cleanup_free_ char *out = xmalloc((len + sizeof(o->held)) * TEXT_ESCAPE_MAX + 1);
  size_t n = 0;
  /* A sequence cut by the last read, completed by this one's first bytes
   * (or not: then it is escaped as the bytes it is). */
  while (o->n_held > 0 && len > 0 && utf8_cut(o->held, o->n_held) && (*s & 0xc0) == 0x80) {
    o->held[o->n_held++] = *s++;
    len--;
  }
  if (o->n_held > 0) {
    if (len == 0 && utf8_cut(o->held, o->n_held))
      return; /* still cut */
    n += keep(o, o->held, o->n_held, out + n);
    o->n_held = 0;
  }
  /* A sequence this read cuts waits for the next. */
  size_t tail = 0;
  for (size_t t = 1; t < sizeof(o->held) && t <= len; t++)
    if (utf8_cut(s + len - t, t))
      tail = t;
  n += keep(o, s, len - tail, out + n);
  memcpy(o->held, s + len - tail, tail);
  o->n_held = tail;
  if (n > 0)
    emit(out, n, data);
}

void step_output_end(struct step_output *o, step_emit_fn emit, void *data) {
  char out[sizeof(o->held) * TEXT_ESCAPE_MAX + 1];
  size_t n = o->n_held ? keep(o, o->held, o->n_held, out) : 0;
  o->n_held = 0;
  if (n > 0)
    emit(out, n, data);
  if (o->dropped == 0)
    return;
  char step[32], all[32];
  hutch_format_size(o->max, step, sizeof(step));
  hutch_format_size(o->total->max, all, sizeof(all));
  _cleanup_free_ char *line = xasprintf("%soutput truncated, %" PRIu64 " bytes dropped (a build keeps %s of a step's "
                                        "output and %s in all; --step-log-max and --log-max keep more)\n",
                                        o->mid_line ? "\n" : "", o->dropped, step, all);
  emit(line, strlen(line), data);
  o->mid_line = false;
}
