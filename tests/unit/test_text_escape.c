/* SPDX-License-Identifier: Apache-2.0 */
/* What hutch prints of a sandbox's text: control sequences made visible,
 * everything else left as it is. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "util.h"

static void esc(const char *in, size_t len, const char *want, const char *what) {
  char *got = text_escape_controls(in, len);
  tap_is_str(got, want, "%s", what);
  free(got);
}

int main(void) {
  esc("plain text, tabs\tand\nnewlines", 29, "plain text, tabs\tand\nnewlines", "text, tab and newline pass");
  esc("caf\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x90\x87", 14, "caf\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x90\x87", "UTF-8 passes");
  esc("\x1b]52;c;aGk=\x07", 12, "\\x1b]52;c;aGk=\\x07", "OSC 52 (set the clipboard) is escaped");
  esc("\x1b[2J\x1b[H", 7, "\\x1b[2J\\x1b[H", "CSI clear screen and cursor home are escaped");
  esc("ok\rFAIL", 7, "ok\\x0dFAIL", "a carriage return cannot overwrite the line");
  esc("a\0b", 3, "a\\x00b", "NUL");
  esc("\x7f", 1, "\\x7f", "DEL");
  esc("\xc2\x9b"
      "31m",
      5, "\\u009b31m", "C1 CSI as UTF-8 is escaped");
  esc("\x9b"
      "31m",
      4, "\\x9b31m", "a lone 0x9b byte (8-bit CSI) is escaped");
  esc("\xe2\x80\xae"
      "txt.exe",
      10, "\\u202etxt.exe", "a right-to-left override is escaped");
  esc("\xe2\x81\xa6x", 4, "\\u2066x", "a bidirectional isolate is escaped");
  esc("\xc0\xaf", 2, "\\xc0\\xaf", "an overlong encoding is not UTF-8");
  esc("\xed\xa0\x80", 3, "\\xed\\xa0\\x80", "a surrogate is not UTF-8");
  esc("\xe2\x82", 2, "\\xe2\\x82", "a truncated sequence at the end");
  char *s = text_escape_cstr("\x1b[31mred");
  tap_is_str(s, "\\x1b[31mred", "the C-string form");
  free(s);
  tap_done();
}
