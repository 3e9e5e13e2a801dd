/* SPDX-License-Identifier: Apache-2.0
 *
 * Text a task or a model wrote, for summary.md: as a Markdown code span,
 * the one construct inside which CommonMark and GitHub take every
 * character as itself, so that no link, image, emphasis, heading, HTML tag,
 * entity or autolink of the text's comes alive.  Backslash escapes would
 * need every construct named (and GitHub's autolinks of bare URLs and
 * e-mail addresses escape them); inside a code span only its own fence and,
 * in a table, '|' have a meaning.  Pure. */
#include "config.h"

#include <string.h>

#include "bench.h"
#include "util.h"

char *bench_md_code(const char *text, size_t max, bool in_table) {
  /* Control and bidirectional characters and bytes that are not UTF-8 as
   * visible escapes (\x1b), then on one line, cut at max characters. */
  _cleanup_free_ char *safe = text_escape_cstr(text);
  size_t len = 0, chars = 0;
  while (safe[len] && chars < max) {
    uint32_t cp;
    size_t n = utf8_decode((const unsigned char *)safe + len, strlen(safe + len), &cp);
    len += n ? n : 1;
    chars++;
  }
  bool cut = safe[len] != '\0';
  if (len == 0)
    return xstrdup("");
  /* The fence: one backtick more than the longest run in the text. */
  size_t run = 0, longest = 0;
  for (size_t i = 0; i < len; i++) {
    run = safe[i] == '`' ? run + 1 : 0;
    if (run > longest)
      longest = run;
  }
  char *out = xmalloc(2 * (longest + 2) + 2 * len + 4);
  size_t o = 0;
  for (size_t i = 0; i <= longest; i++)
    out[o++] = '`';
  /* One space each side: CommonMark strips it, so that text that begins
   * or ends with a backtick does not run into the fence. */
  out[o++] = ' ';
  for (size_t i = 0; i < len; i++) {
    char c = safe[i];
    if (c == '\n' || c == '\t')
      c = ' ';
    if (c == '|' && in_table)
      out[o++] = '\\'; /* GitHub splits a row at any '|' not escaped so */
    out[o++] = c;
  }
  out[o++] = ' ';
  for (size_t i = 0; i <= longest; i++)
    out[o++] = '`';
  out[o] = '\0';
  if (!cut)
    return out;
  char *more = xasprintf("%s...", out);
  free(out);
  return more;
}
