/* SPDX-License-Identifier: Apache-2.0 */
/* "did you mean": the names closest to a mistyped word (pure, no I/O). */
#include "config.h"

#include "suggest.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

/* Longer words are no command's name: their distance is not computed. */
#define WORD_MAX 64

/* The optimal string alignment distance, case ignored: insertions,
 * deletions, substitutions and swaps of two neighbours cost one each, so
 * that "exce" is one step from "exec". */
static size_t distance(const char *a, const char *b) {
  size_t la = strlen(a), lb = strlen(b);
  size_t d[WORD_MAX + 1][WORD_MAX + 1];
  for (size_t i = 0; i <= la; i++)
    d[i][0] = i;
  for (size_t j = 0; j <= lb; j++)
    d[0][j] = j;
  for (size_t i = 1; i <= la; i++)
    for (size_t j = 1; j <= lb; j++) {
      int ca = tolower((unsigned char)a[i - 1]), cb = tolower((unsigned char)b[j - 1]);
      size_t best = d[i - 1][j - 1] + (ca != cb);
      if (d[i - 1][j] + 1 < best)
        best = d[i - 1][j] + 1;
      if (d[i][j - 1] + 1 < best)
        best = d[i][j - 1] + 1;
      if (i > 1 && j > 1 && ca == tolower((unsigned char)b[j - 2]) && tolower((unsigned char)a[i - 2]) == cb &&
          d[i - 2][j - 2] + 1 < best)
        best = d[i - 2][j - 2] + 1;
      d[i][j] = best;
    }
  return d[la][lb];
}

/* How far a word may be from a name and still be taken for a typo of it:
 * one edit in a short name ("ps" and "rm" are different words), two in a
 * longer one, three in a long one; and never as many edits as the word
 * has letters (nothing of it would be left). */
static size_t tolerance(const char *name) {
  size_t n = strlen(name);
  return n <= 3 ? 1 : n <= 7 ? 2 : 3;
}

static bool is_prefix(const char *word, const char *name) {
  size_t n = strlen(word);
  if (n > strlen(name))
    return false;
  for (size_t i = 0; i < n; i++)
    if (tolower((unsigned char)word[i]) != tolower((unsigned char)name[i]))
      return false;
  return true;
}

size_t suggest_closest(const char *word, const char *const *names, size_t n, const char **out) {
  size_t len = strlen(word);
  if (len == 0 || len > WORD_MAX)
    return 0;
  size_t best = (size_t)-1, found = 0;
  for (size_t i = 0; i < n; i++) {
    if (strlen(names[i]) > WORD_MAX)
      continue;
    size_t d = distance(word, names[i]);
    /* The start of a name, three letters or more ("bench"), is as close
     * as one edit. */
    if (len >= 3 && is_prefix(word, names[i]) && d > 1)
      d = 1;
    if (d > tolerance(names[i]) || d >= len || d > best)
      continue;
    if (d < best) {
      best = d;
      found = 0;
    }
    if (found < SUGGEST_MAX)
      out[found++] = names[i];
  }
  return found;
}

void suggest_format(const char *const *found, size_t n, char *buf, size_t len) {
  size_t at = 0;
  if (len == 0)
    return;
  buf[0] = '\0';
  for (size_t i = 0; i < n && at < len; i++) {
    const char *sep = i == 0 ? "" : i + 1 == n ? " or " : ", ";
    int w = snprintf(buf + at, len - at, "%s'%s'", sep, found[i]);
    if (w < 0)
      break;
    at += (size_t)w;
  }
}
