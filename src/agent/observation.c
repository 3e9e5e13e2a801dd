/* SPDX-License-Identifier: Apache-2.0 */
#include "config.h"

#include "observation.h"

#include <stdint.h>
#include <string.h>

#include "util.h"

/* The literal backslashes before '[' are part of the reference's strings:
 * they were meant for a console markup library and reached the model too. */
#define BASH_HEAD "Execution output of \\[execute_bash]:\n\\[STDOUT]\n"
#define BASH_ERR "\n\\[STDERR]\n"
#define EDITOR_HEAD "Execution output of \\[str_replace_editor]:\n"
#define TRUNC_DIVIDER "--------------------------------------------------"
#define TRUNC_NOTE "<Observation truncated in middle for saving context>"

/* Python's str.isspace() for each character: the reference leaves out a
 * stream that strip() empties. */
static bool py_blank(const char *s) {
  const unsigned char *p = (const unsigned char *)s;
  while (*p) {
    if (*p == ' ' || (*p >= '\t' && *p <= '\r') || (*p >= 0x1c && *p <= 0x1f)) {
      p++;
      continue;
    }
    uint32_t cp;
    size_t n = utf8_decode(p, strlen((const char *)p), &cp);
    if (n == 0)
      return false;
    if (!(cp == 0x85 || cp == 0xa0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200a) || cp == 0x2028 || cp == 0x2029 ||
          cp == 0x202f || cp == 0x205f || cp == 0x3000))
      return false;
    p += n;
  }
  return true;
}

char *obs_bash(int exit_code, bool timed_out, double timeout, const char *out, const char *err) {
  _cleanup_free_ char *code = NULL;
  _cleanup_free_ char *tmo = NULL;
  if (timed_out) {
    code = xstrdup("-1");
    tmo = xasprintf("The command took too long to execute (>%.0fs)", timeout);
    out = tmo;
  } else if (exit_code < 0) {
    code = xstrdup("-1");
  } else if (exit_code == 0) {
    code = xstrdup("0");
  } else {
    code = xasprintf("Error: Exit code %d", exit_code);
  }
  if (out == NULL || py_blank(out))
    out = "";
  bool with_err = !timed_out && err != NULL && !py_blank(err);
  return xasprintf("Exit code: %s\n" BASH_HEAD "%s%s%s", code, out, with_err ? BASH_ERR : "", with_err ? err : "");
}

char *obs_bash_failure(const char *why) {
  _cleanup_free_ char *msg = xasprintf("Error: %s", why);
  return obs_bash(-1, false, 0, msg, msg);
}

char *obs_session_restarted(const char *working_dir) {
  return xasprintf("\n[The shell session ended; a new one was started in %s. Directory changes and exported "
                   "variables of the old session are gone.]",
                   working_dir);
}

char *obs_editor(const char *result) {
  return xasprintf(EDITOR_HEAD "%s", result);
}

char *obs_unknown_action(const char *name) {
  return xasprintf("Unknown action: %s", name);
}

char *obs_bad_arguments(const char *name, const char *why) {
  return xasprintf("ERROR: the arguments of %s could not be used: %s. Send them as one JSON object, e.g. "
                   "{\"command\": \"ls\"}.",
                   name, why);
}

char *obs_lis_not_object(const char *name) {
  if (strcmp(name, "execute_bash") == 0)
    return xstrdup("Exit code: 0\n"
                   "Execution output of \\[execute_bash]:\n");
  return xasprintf("Execution output of \\[%s]:\n", name);
}

char *obs_steps_remaining(long n) {
  return xasprintf("\nSteps Remaining: %ld", n);
}

char *obs_not_run_cap(size_t n_calls, long max_calls) {
  return xasprintf("ERROR: not run: this reply has %zu tool calls, and at most %ld of one reply are run "
                   "(--max-calls-per-reply). Send the others in your next reply.",
                   n_calls, max_calls);
}

char *obs_not_run_steps(long max_steps) {
  return xasprintf("ERROR: not run: the run's step budget is spent (--max-steps %ld).", max_steps);
}

char *obs_not_run_time(void) {
  return xstrdup("ERROR: not run: the run's time limit is reached (--run-timeout).");
}

char *obs_not_run_conversation(unsigned long long max) {
  return xasprintf("ERROR: not run: the run's conversation reached --max-conversation-size (%llu bytes).", max);
}

char *obs_left_out_conversation(size_t len, unsigned long long max) {
  return xasprintf("ERROR: the output of this call (%zu bytes) was left out: the run's conversation reached "
                   "--max-conversation-size (%llu bytes), and the run ends.",
                   len, max);
}

char *obs_calls_left_out(size_t n) {
  return xasprintf("\n[%zu more calls of this reply were not run and are left out of the conversation.]", n);
}

static size_t utf8_seq(const unsigned char *s, size_t left) {
  uint32_t cp;
  return utf8_decode(s, left, &cp);
}

bool text_is_utf8(const char *s, size_t len) {
  const unsigned char *p = (const unsigned char *)s;
  for (size_t i = 0; i < len;) {
    size_t n = utf8_seq(p + i, len - i);
    if (n == 0)
      return false;
    i += n;
  }
  return true;
}

/* Bytes of the longest start of a valid sequence at p (an incomplete one):
 * what Python replaces with a single U+FFFD.  At least 1. */
static size_t invalid_subpart(const unsigned char *p, size_t left) {
  unsigned char b = p[0];
  size_t need;
  unsigned char lo = 0x80, hi = 0xbf;
  if (b >= 0xc2 && b <= 0xdf)
    need = 2;
  else if (b >= 0xe0 && b <= 0xef) {
    need = 3;
    lo = b == 0xe0 ? 0xa0 : 0x80;
    hi = b == 0xed ? 0x9f : 0xbf;
  } else if (b >= 0xf0 && b <= 0xf4) {
    need = 4;
    lo = b == 0xf0 ? 0x90 : 0x80;
    hi = b == 0xf4 ? 0x8f : 0xbf;
  } else {
    return 1;
  }
  size_t n = 1;
  while (n < need && n < left && p[n] >= lo && p[n] <= hi) {
    n++;
    lo = 0x80;
    hi = 0xbf;
  }
  return n;
}

char *text_utf8_sanitize(const char *s, size_t len) {
  const unsigned char *p = (const unsigned char *)s;
  char *out = xmalloc(len * 3 + 1);
  size_t o = 0;
  for (size_t i = 0; i < len;) {
    size_t n = utf8_seq(p + i, len - i);
    if (n == 0 || (n == 1 && p[i] == 0)) {
      /* NUL too: the result is a C string handed to JSON. */
      memcpy(out + o, "\xef\xbf\xbd", 3);
      o += 3;
      i += n == 0 ? invalid_subpart(p + i, len - i) : 1;
      continue;
    }
    memcpy(out + o, p + i, n);
    o += n;
    i += n;
  }
  out[o] = '\0';
  return out;
}

char *text_strip_ansi(const char *s) {
  size_t len = strlen(s);
  char *out = xmalloc(len + 1);
  size_t o = 0;
  for (size_t i = 0; i < len; i++) {
    if (s[i] == '\r')
      continue;
    if (s[i] == '\x1b' && s[i + 1] == '[') {
      size_t j = i + 2;
      while ((s[j] >= '0' && s[j] <= '9') || s[j] == ';')
        j++;
      if (s[j] == 'm') {
        i = j;
        continue;
      }
    }
    out[o++] = s[i];
  }
  out[o] = '\0';
  return out;
}

/* Length of the line break at p (Python's str.splitlines(): \n, \r, \r\n,
 * \v, \f, \x1c-\x1e, U+0085, U+2028, U+2029), 0 when none. */
static size_t line_break(const char *s) {
  const unsigned char *p = (const unsigned char *)s;
  if (p[0] == '\r')
    return p[1] == '\n' ? 2 : 1;
  if (p[0] == '\n' || p[0] == '\v' || p[0] == '\f' || (p[0] >= 0x1c && p[0] <= 0x1e))
    return 1;
  if (p[0] == 0xc2 && p[1] == 0x85)
    return 2;
  if (p[0] == 0xe2 && p[1] == 0x80 && (p[2] == 0xa8 || p[2] == 0xa9))
    return 3;
  return 0;
}

char *text_cut_middle(const char *s, int keep) {
  /* Each line's start and end (before its break); a break at the very end
   * starts no new line. */
  size_t n = 0, cap = 64;
  size_t(*lines)[2] = xmalloc(cap * sizeof(*lines));
  for (size_t i = 0, start = 0; s[i] != '\0' || start < i;) {
    size_t br = s[i] ? line_break(s + i) : 0;
    if (br == 0 && s[i] != '\0') {
      i++;
      continue;
    }
    if (n == cap)
      lines = xrealloc(lines, (cap *= 2) * sizeof(*lines));
    lines[n][0] = start;
    lines[n++][1] = i;
    if (s[i] == '\0')
      break;
    i += br;
    start = i;
  }
  if (n <= (size_t)keep * 2) {
    free(lines);
    return xstrdup(s);
  }
  size_t len = strlen(s);
  char *out = xmalloc(len + sizeof(TRUNC_DIVIDER) * 2 + sizeof(TRUNC_NOTE) + 8);
  size_t o = 0;
  for (size_t k = 0; k < n; k++) {
    if (k == (size_t)keep) {
      const char *mid = "\n" TRUNC_DIVIDER "\n" TRUNC_NOTE "\n" TRUNC_DIVIDER;
      memcpy(out + o, mid, strlen(mid));
      o += strlen(mid);
      k = n - (size_t)keep;
    }
    if (k > 0)
      out[o++] = '\n';
    memcpy(out + o, s + lines[k][0], lines[k][1] - lines[k][0]);
    o += lines[k][1] - lines[k][0];
  }
  out[o] = '\0';
  free(lines);
  return out;
}

char *text_clip(const char *s, size_t max) {
  /* Characters, not bytes: count code points and never split one. */
  size_t chars = 0, i = 0;
  while (s[i] && chars < max) {
    i++;
    while ((s[i] & 0xc0) == 0x80)
      i++;
    chars++;
  }
  if (s[i] == '\0')
    return xstrdup(s);
  return xasprintf("%.*s" OBS_CLIPPED, (int)i, s);
}

char *text_cut_bytes(const char *s, size_t max) {
  size_t len = strlen(s);
  if (len <= max)
    return xstrdup(s);
  /* Cut on sequence starts, never inside one. */
  size_t head = max / 2, tail = len - max / 2;
  while (head > 0 && ((unsigned char)s[head] & 0xc0) == 0x80)
    head--;
  while (tail < len && ((unsigned char)s[tail] & 0xc0) == 0x80)
    tail++;
  _cleanup_free_ char *mark = xasprintf("\n" TRUNC_DIVIDER "\n<Observation truncated in middle: %zu bytes left out, "
                                        "as one observation keeps at most %zu>\n" TRUNC_DIVIDER "\n",
                                        tail - head, max);
  size_t ml = strlen(mark);
  char *out = xmalloc(head + ml + (len - tail) + 1);
  memcpy(out, s, head);
  memcpy(out + head, mark, ml);
  memcpy(out + head + ml, s + tail, len - tail + 1);
  return out;
}

char *text_for_model(const char *s, size_t len, bool capped) {
  _cleanup_free_ char *utf8 = text_utf8_sanitize(s, len);
  _cleanup_free_ char *plain = text_strip_ansi(utf8);
  char *cut = text_cut_middle(plain, OBS_KEEP_LINES);
  if (!capped)
    return cut;
  char *r = xasprintf("%s\n<output capped: hutch kept the first part of a very large output>", cut);
  free(cut);
  return r;
}
