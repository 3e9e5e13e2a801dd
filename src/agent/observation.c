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
  bool with_err = !timed_out && err != NULL && err[0] != '\0';
  return xasprintf("Exit code: %s\n" BASH_HEAD "%s%s%s", code, out ? out : "", with_err ? BASH_ERR : "",
                   with_err ? err : "");
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

char *obs_steps_remaining(long n) {
  return xasprintf("\nSteps Remaining: %ld", n);
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
      i++;
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

/* Python's str.splitlines() on "\n" only: a trailing newline ends the last
 * line rather than starting an empty one. */
static size_t count_lines(const char *s) {
  size_t n = 0;
  const char *p = s;
  while (*p) {
    const char *nl = strchr(p, '\n');
    n++;
    if (nl == NULL)
      break;
    p = nl + 1;
  }
  return n;
}

char *text_cut_middle(const char *s, int keep) {
  size_t n = count_lines(s);
  if (n <= (size_t)keep * 2)
    return xstrdup(s);
  /* End of line `keep` (exclusive of its newline) and start of line n-keep. */
  const char *p = s;
  for (int i = 0; i < keep; i++)
    p = strchr(p, '\n') + 1;
  size_t top_len = (size_t)(p - s) - 1;
  const char *q = s;
  for (size_t i = 0; i < n - (size_t)keep; i++)
    q = strchr(q, '\n') + 1;
  size_t bottom_len = strlen(q);
  if (bottom_len > 0 && q[bottom_len - 1] == '\n')
    bottom_len--;
  return xasprintf("%.*s\n" TRUNC_DIVIDER "\n" TRUNC_NOTE "\n" TRUNC_DIVIDER "\n%.*s", (int)top_len, s, (int)bottom_len,
                   q);
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
