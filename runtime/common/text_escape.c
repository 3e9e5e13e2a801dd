/* SPDX-License-Identifier: Apache-2.0 */
/* Making text safe to print on a terminal.  Much of what hutch prints came
 * from a sandbox (an answer file, a command's output, a file or host name),
 * and a terminal obeys control sequences in it: OSC 52 sets the clipboard,
 * CSI clears the screen and moves the cursor, a carriage return overwrites
 * a line, and bidirectional overrides reorder what is shown.  Printed,
 * they become visible escapes instead. */
#include "config.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text_escape.h"

size_t utf8_decode(const unsigned char *s, size_t left, uint32_t *cp) {
  unsigned char c = s[0];
  size_t n;
  uint32_t v, min;
  if (c < 0x80) {
    *cp = c;
    return 1;
  } else if ((c & 0xe0) == 0xc0) {
    n = 2, v = c & 0x1f, min = 0x80;
  } else if ((c & 0xf0) == 0xe0) {
    n = 3, v = c & 0x0f, min = 0x800;
  } else if ((c & 0xf8) == 0xf0) {
    n = 4, v = c & 0x07, min = 0x10000;
  } else {
    return 0;
  }
  if (left < n)
    return 0;
  for (size_t i = 1; i < n; i++) {
    if ((s[i] & 0xc0) != 0x80)
      return 0;
    v = v << 6 | (s[i] & 0x3f);
  }
  if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
    return 0;
  *cp = v;
  return n;
}

/* C0 but tab and newline, DEL, C1, and the bidirectional embeddings,
 * overrides and isolates. */
static bool needs_escape(uint32_t cp) {
  if (cp == '\t' || cp == '\n')
    return false;
  return cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp <= 0x9f) || (cp >= 0x202a && cp <= 0x202e) ||
         (cp >= 0x2066 && cp <= 0x2069);
}

size_t text_escape_char(const unsigned char *s, size_t left, char out[TEXT_ESCAPE_MAX + 1], size_t *used) {
  uint32_t cp;
  size_t n = utf8_decode(s, left, &cp);
  if (n == 0) {
    /* Not UTF-8: a lone byte such as 0x9b is CSI to an 8-bit terminal. */
    *used = 1;
    return (size_t)sprintf(out, "\\x%02x", s[0]);
  }
  *used = n;
  /* Those escaped are all below U+10000: four hex digits. */
  if (needs_escape(cp))
    return (size_t)(cp < 0x80 ? sprintf(out, "\\x%02x", (unsigned)cp)
                              : sprintf(out, "\\u%04x", (unsigned)(cp & 0xffff)));
  memcpy(out, s, n);
  return n;
}

char *text_escape_controls(const char *text, size_t len) {
  const unsigned char *s = (const unsigned char *)text;
  /* At most TEXT_ESCAPE_MAX bytes out ("\u202e") for each byte in. */
  char *out = malloc(len * TEXT_ESCAPE_MAX + 1);
  if (out == NULL) /* as xmalloc, which lives above this file */
    abort();
  size_t o = 0;
  char one[TEXT_ESCAPE_MAX + 1];
  for (size_t i = 0, used; i < len; i += used) {
    size_t n = text_escape_char(s + i, len - i, one, &used);
    memcpy(out + o, one, n);
    o += n;
  }
  out[o] = '\0';
  return out;
}

char *text_escape_cstr(const char *text) {
  return text_escape_controls(text, strlen(text));
}
