/* SPDX-License-Identifier: Apache-2.0 */
/* The text of hutch run's terminal (console_text.h).  Whatever the model or
 * the sandbox wrote (a command, a path, a tool's name, an error quoting
 * either) is made one line and escaped here, before it goes near a
 * terminal; JSON keeps it as it is, in escapes a terminal cannot act on. */
#include "config.h"

#include "console_text.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "util.h"

/* Characters (UTF-8 sequences; a stray byte counts as one) in s. */
static size_t chars(const char *s) {
  size_t n = 0;
  for (const unsigned char *p = (const unsigned char *)s; *p; n++) {
    uint32_t cp;
    size_t len = utf8_decode(p, strlen((const char *)p), &cp);
    p += len ? len : 1;
  }
  return n;
}

/* s cut to at most max characters, "..." in place of what is left out;
 * takes s. */
static char *cut(char *s, size_t max, bool more) {
  if (!more && chars(s) <= max)
    return s;
  size_t keep = max > 3 ? max - 3 : 0;
  unsigned char *p = (unsigned char *)s;
  for (size_t n = 0; *p && n < keep; n++) {
    uint32_t cp;
    size_t len = utf8_decode(p, strlen((const char *)p), &cp);
    p += len ? len : 1;
  }
  *p = '\0';
  char *r = xasprintf("%s...", s);
  free(s);
  return r;
}

/* The first line of s, tabs and carriage returns as spaces; *more when
 * another line with something on it follows. */
static char *first_line(const char *s, bool *more) {
  while (*s == '\n')
    s++;
  size_t n = strcspn(s, "\n");
  char *l = xstrndup(s, n);
  for (char *c = l; *c; c++)
    if (*c == '\t' || *c == '\r')
      *c = ' ';
  *more = s[n] != '\0' && s[n + strspn(s + n, "\n \t")] != '\0';
  return l;
}

/* One line for the terminal: its controls escaped; takes s. */
static char *shown(char *s) {
  for (char *c = s; *c; c++)
    if (*c == '\n' || *c == '\t')
      *c = ' ';
  char *e = text_escape_cstr(s);
  free(s);
  return e;
}

const char *console_tool_name(const char *tool) {
  if (strcmp(tool, "execute_bash") == 0)
    return "bash";
  if (strcmp(tool, "str_replace_editor") == 0)
    return "edit";
  return tool;
}

static const char *arg_str(const cJSON *args, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(args, key);
  return cJSON_IsString(v) ? v->valuestring : NULL;
}

char *console_summary(const char *tool, const char *arguments, size_t max, bool escaped) {
  cJSON *args = arguments ? cJSON_Parse(arguments) : NULL;
  char *text = NULL;
  bool more = false;
  if (cJSON_IsObject(args) && strcmp(tool, "execute_bash") == 0 && arg_str(args, "command")) {
    text = first_line(arg_str(args, "command"), &more);
  } else if (cJSON_IsObject(args) && strcmp(tool, "str_replace_editor") == 0) {
    const char *cmd = arg_str(args, "command"), *path = arg_str(args, "path");
    _cleanup_free_ char *both = xasprintf("%s%s%s", cmd ? cmd : "", cmd && path ? " " : "", path ? path : "");
    text = first_line(both, &more);
  } else {
    text = xstrdup("");
  }
  cJSON_Delete(args);
  if (escaped)
    text = shown(text);
  return cut(text, max, more);
}

/* "error: why", or "error creating file: ..." for a why that says "Error"
 * itself first (the reference's editor answers so). */
static char *error_text(const char *why) {
  if (why == NULL)
    return xstrdup("error");
  if (strncasecmp(why, "error", 5) == 0 && (why[5] == ':' || why[5] == ' '))
    return xasprintf("error%s", why + 5);
  return xasprintf("error: %s", why);
}

static char *timeout_text(double t) {
  return t == (double)(long)t ? xasprintf("%.0f s", t) : xasprintf("%.1f s", t);
}

char *console_outcome(const struct step_view *v) {
  const char *why = v->error ? v->error : "";
  char *r;
  switch (v->outcome) {
  case TOOL_EXITED:
    r = xasprintf("exit %d", v->exit_code);
    break;
  case TOOL_TIMED_OUT: {
    _cleanup_free_ char *t = timeout_text(v->timeout);
    r = xasprintf("timed out after %s", t);
    break;
  }
  case TOOL_NOT_STARTED:
    r = xasprintf("not started: %s", why);
    break;
  case TOOL_EDITED:
    r = xstrdup("ok");
    break;
  case TOOL_EDIT_FAILED:
    r = error_text(v->error);
    break;
  case TOOL_SUBMITTED:
    r = xstrdup("submitted");
    break;
  case TOOL_REFUSED:
    r = xasprintf("refused: %s", why);
    break;
  case TOOL_NOT_RUN:
    r = xasprintf("not run: %s", why);
    break;
  case TOOL_STOPPED:
    r = xstrdup("stopped");
    break;
  default:
    r = xstrdup("reminded to call a tool");
    break;
  }
  /* The why may quote a path or a message of the sandbox's. */
  bool more;
  _cleanup_free_ char *one = first_line(r, &more);
  free(r);
  return cut(shown(steal_pointer(&one)), 200, more);
}

char *console_seconds(double s) {
  if (s < 10)
    return xasprintf("%.2f s", s);
  if (s < 100)
    return xasprintf("%.1f s", s);
  return xasprintf("%.0f s", s);
}

char *console_bytes(uint64_t n) {
  if (n < 1024)
    return xasprintf("%llu byte%s", (unsigned long long)n, n == 1 ? "" : "s");
  if (n < 1024 * 1024)
    return xasprintf("%.1f KiB", (double)n / 1024);
  if (n < 1024ull * 1024 * 1024)
    return xasprintf("%.1f MiB", (double)n / (1024 * 1024));
  return xasprintf("%.1f GiB", (double)n / (1024.0 * 1024 * 1024));
}

char *console_step_line(const struct step_view *v) {
  bool no_call = v->outcome == TOOL_NO_CALL;
  _cleanup_free_ char *tool = no_call ? xstrdup("no tool call") : shown(xstrdup(console_tool_name(v->tool)));
  _cleanup_free_ char *what = no_call ? xstrdup("") : console_summary(v->tool, v->arguments, 80, true);
  _cleanup_free_ char *outcome = console_outcome(v);
  /* A call that ran has its own time; the model's is its reply's, told on
   * the reply's first call. */
  bool ran = !no_call && v->outcome != TOOL_NOT_RUN;
  _cleanup_free_ char *t = ran ? console_seconds(v->seconds) : xstrdup("");
  _cleanup_free_ char *m = v->with_model ? console_seconds(v->model_seconds) : NULL;
  _cleanup_free_ char *model = v->with_model ? xasprintf("%smodel %s, %ld + %ld tokens", ran ? "; " : "", m,
                                                         v->prompt_tokens, v->completion_tokens)
                                             : xstrdup("");
  bool paren = ran || v->with_model;
  return xasprintf("step %ld: %s%s%s -> %s%s%s%s%s", v->step, tool, what[0] ? " " : "", what, outcome,
                   paren ? " (" : "", t, model, paren ? ")" : "");
}

/* --json's name of each outcome, in enum tool_outcome's order. */
static const char *const RESULT_NAMES[] = {"exit",      "timeout", "not_started", "ok",      "error",
                                           "submitted", "refused", "not_run",     "stopped", "no_call"};
_Static_assert(sizeof(RESULT_NAMES) / sizeof(RESULT_NAMES[0]) == TOOL_NO_CALL + 1, "a --json name for each outcome");

cJSON *console_step_event(const struct step_view *v) {
  cJSON *e = cJSON_CreateObject();
  cJSON_AddStringToObject(e, "event", "step");
  cJSON_AddNumberToObject(e, "step", (double)v->step);
  cJSON_AddStringToObject(e, "tool", v->tool);
  if (v->call_id)
    cJSON_AddStringToObject(e, "call_id", v->call_id);
  _cleanup_free_ char *what = console_summary(v->tool, v->arguments, 200, false);
  cJSON_AddStringToObject(e, "summary", what);
  cJSON_AddStringToObject(e, "result", RESULT_NAMES[v->outcome]);
  if (v->outcome == TOOL_EXITED)
    cJSON_AddNumberToObject(e, "exit_code", v->exit_code);
  if (v->outcome == TOOL_TIMED_OUT)
    cJSON_AddNumberToObject(e, "timeout", v->timeout);
  if (v->error)
    cJSON_AddStringToObject(e, "error", v->error);
  cJSON_AddNumberToObject(e, "seconds", v->seconds);
  return e;
}

char *console_live_line(const char *what, double elapsed, uint64_t bytes, double quiet_for, size_t width) {
  _cleanup_free_ char *size = console_bytes(bytes);
  _cleanup_free_ char *state = bytes == 0       ? xstrdup("no output yet")
                               : quiet_for >= 3 ? xasprintf("%s of output, none for %.0f s", size, quiet_for)
                                                : xasprintf("output arriving (%s)", size);
  _cleanup_free_ char *tail = xasprintf(" ... %.0f s, %s", elapsed, state);
  size_t tl = chars(tail);
  /* One column short of the width: a line that fills it wraps on some
   * terminals, and the next redraw would no longer overwrite it. */
  char *head = xstrdup(what);
  if (width > tl + 12)
    head = cut(head, width - 1 - tl, false);
  char *r = xasprintf("%s%s", head, tail);
  free(head);
  return r;
}

char *console_totals_line(const struct run_totals *t) {
  _cleanup_free_ char *all = console_seconds(t->seconds);
  _cleanup_free_ char *model = console_seconds(t->model_seconds);
  _cleanup_free_ char *tools = console_seconds(t->tool_seconds);
  return xasprintf("end: %s after %ld step%s in %s: model %s (%ld call%s), tools %s, %ld tokens in, %ld out",
                   t->end_reason ? t->end_reason : "error", t->steps, t->steps == 1 ? "" : "s", all, model,
                   t->model_calls, t->model_calls == 1 ? "" : "s", tools, t->prompt_tokens, t->completion_tokens);
}

char *console_json_safe(const char *json) {
  size_t len = strlen(json), cap = len + 64, o = 0;
  char *out = xmalloc(cap);
  const unsigned char *s = (const unsigned char *)json;
  for (size_t i = 0; i < len;) {
    if (o + 16 > cap)
      out = xrealloc(out, cap *= 2);
    uint32_t cp;
    size_t n = utf8_decode(s + i, len - i, &cp);
    char esc[TEXT_ESCAPE_MAX + 1];
    size_t used;
    if (n == 0) {
      o += (size_t)sprintf(out + o, "\\ufffd");
      i++;
    } else if (text_escape_char(s + i, len - i, esc, &used) != n || memcmp(esc, s + i, n) != 0) {
      /* What text_escape would escape; cJSON left it as it is (C0 it
       * escapes itself).  All of it is below U+10000. */
      o += (size_t)sprintf(out + o, "\\u%04x", (unsigned)cp);
      i += n;
    } else {
      memcpy(out + o, s + i, n);
      o += n;
      i += n;
    }
  }
  out[o] = '\0';
  return out;
}
