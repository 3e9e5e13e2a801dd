/* SPDX-License-Identifier: Apache-2.0 */
/* hutch run's output streams (console.h): run.log, stderr with its live
 * line, and --json's stdout. */
#include "config.h"

#include "console.h"

#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

/* The live line appears once a call has run this long, and is redrawn at
 * most this often. */
#define LIVE_AFTER 1.0
#define LIVE_EVERY 0.25

void console_init(struct console *c, bool quiet, bool json) {
  memset(c, 0, sizeof(*c));
  c->mode = json ? CONSOLE_JSON : quiet ? CONSOLE_QUIET : CONSOLE_LINES;
  c->tty = c->mode == CONSOLE_LINES && isatty(STDERR_FILENO);
}

void console_clear(struct console *c) {
  if (!c->live_shown)
    return;
  fputs("\r\033[K", stderr);
  fflush(stderr);
  c->live_shown = false;
}

void console_free(struct console *c) {
  console_clear(c);
  free(c->live_what);
  c->live_what = NULL;
}

static void to_log(struct console *c, const char *kind, const char *line) {
  if (c->log == NULL)
    return;
  time_t now = time(NULL);
  struct tm tm;
  char ts[32];
  strftime(ts, sizeof(ts), "%Y-%m-%d %H:%M:%S", localtime_r(&now, &tm));
  fprintf(c->log, "%s %s%s\n", ts, kind, line);
  fflush(c->log);
}

void console_event(struct console *c, cJSON *event) {
  if (c->mode != CONSOLE_JSON) {
    cJSON_Delete(event);
    return;
  }
  _cleanup_free_ char *text = cJSON_PrintUnformatted(event);
  cJSON_Delete(event);
  _cleanup_free_ char *safe = console_json_safe(text);
  fprintf(stdout, "%s\n", safe);
  fflush(stdout);
}

void console_log(struct console *c, const char *kind, const char *text) {
  /* Answers, commands, file and host names come from the sandbox or the
   * model: neither may drive the user's terminal (run.log is read with cat
   * and less -R too). */
  _cleanup_free_ char *msg = text_escape_cstr(text);
  to_log(c, kind, msg);
  if (c->mode == CONSOLE_LINES || kind[0] != '\0') {
    console_clear(c);
    fprintf(stderr, "hutch run: %s%s\n", kind, msg);
  }
  if (c->mode == CONSOLE_JSON) {
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "event", "log");
    size_t kl = strcspn(kind, ":");
    _cleanup_free_ char *level = kl ? xstrndup(kind, kl) : xstrdup("info");
    cJSON_AddStringToObject(e, "level", level);
    cJSON_AddStringToObject(e, "message", text);
    console_event(c, e);
  }
}

void console_error(struct console *c, const hutch_error_t err) {
  console_clear(c);
  hutch_error_print(stderr, "hutch run", err);
  if (c->log) {
    hutch_error_print(c->log, "error", err);
    fflush(c->log);
  }
  if (c->mode != CONSOLE_JSON)
    return;
  cJSON *e = cJSON_CreateObject();
  cJSON_AddStringToObject(e, "event", "error");
  cJSON_AddStringToObject(e, "message", err->msg);
  if (err->hint)
    cJSON_AddStringToObject(e, "hint", err->hint);
  console_event(c, e);
}

void console_start(struct console *c, const char *run_dir, const char *model, const char *url) {
  if (c->mode == CONSOLE_JSON) {
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "event", "start");
    cJSON_AddNumberToObject(e, "schema", CONSOLE_JSON_SCHEMA);
    cJSON_AddNumberToObject(e, "time", (double)time(NULL));
    cJSON_AddStringToObject(e, "run_dir", run_dir);
    cJSON_AddStringToObject(e, "model", model);
    cJSON_AddStringToObject(e, "base_url", url);
    console_event(c, e);
  }
  _cleanup_free_ char *line = xasprintf("run directory %s; model %s at %s", run_dir, model, url);
  console_log(c, "", line);
}

void console_sandbox(struct console *c, const char *id, const char *shell, bool persistent) {
  _cleanup_free_ char *line = xasprintf("sandbox %s ready (shell: %s%s)", id, shell, persistent ? ", persistent" : "");
  console_log(c, "", line);
  if (c->mode != CONSOLE_JSON)
    return;
  cJSON *e = cJSON_CreateObject();
  cJSON_AddStringToObject(e, "event", "sandbox");
  cJSON_AddStringToObject(e, "id", id);
  cJSON_AddStringToObject(e, "shell", shell);
  cJSON_AddBoolToObject(e, "persistent", persistent);
  console_event(c, e);
}

void console_reply(struct console *c, long n, const struct llm_reply *rep) {
  if (c->mode != CONSOLE_JSON)
    return;
  cJSON *e = cJSON_CreateObject();
  cJSON_AddStringToObject(e, "event", "model");
  cJSON_AddNumberToObject(e, "reply", (double)n);
  cJSON_AddNumberToObject(e, "seconds", rep->seconds);
  cJSON_AddNumberToObject(e, "tries", rep->tries);
  cJSON_AddNumberToObject(e, "prompt_tokens", (double)rep->prompt_tokens);
  cJSON_AddNumberToObject(e, "completion_tokens", (double)rep->completion_tokens);
  cJSON_AddNumberToObject(e, "calls", (double)rep->n_calls);
  console_event(c, e);
}

void console_end(struct console *c, const struct run_totals *t, int exit_code, bool partial, const char *files_from,
                 const char *run_dir) {
  _cleanup_free_ char *totals = console_totals_line(t);
  _cleanup_free_ char *line = xasprintf("%s; output in %s", totals, run_dir);
  console_log(c, "", line);
  if (c->mode != CONSOLE_JSON) {
    printf("%s\n", run_dir);
    return;
  }
  cJSON *e = cJSON_CreateObject();
  cJSON_AddStringToObject(e, "event", "end");
  if (t->end_reason)
    cJSON_AddStringToObject(e, "end_reason", t->end_reason);
  else
    cJSON_AddNullToObject(e, "end_reason");
  cJSON_AddNumberToObject(e, "exit_code", exit_code);
  cJSON_AddBoolToObject(e, "partial", partial);
  cJSON_AddStringToObject(e, "files_from", files_from);
  cJSON_AddNumberToObject(e, "steps", (double)t->steps);
  cJSON_AddNumberToObject(e, "model_calls", (double)t->model_calls);
  cJSON_AddNumberToObject(e, "prompt_tokens", (double)t->prompt_tokens);
  cJSON_AddNumberToObject(e, "completion_tokens", (double)t->completion_tokens);
  cJSON_AddNumberToObject(e, "seconds", t->seconds);
  cJSON_AddNumberToObject(e, "model_seconds", t->model_seconds);
  cJSON_AddNumberToObject(e, "tool_seconds", t->tool_seconds);
  cJSON_AddStringToObject(e, "run_dir", run_dir);
  console_event(c, e);
}

void console_step(struct console *c, const struct step_view *v) {
  _cleanup_free_ char *line = console_step_line(v);
  to_log(c, "", line);
  if (c->mode == CONSOLE_LINES) {
    console_clear(c);
    fprintf(stderr, "hutch run: %s\n", line);
  }
  console_event(c, console_step_event(v));
}

void console_tool_begin(struct console *c, long step, const char *tool, const char *arguments, const char *call_id) {
  double now = monotonic_seconds();
  if (c->tty) {
    _cleanup_free_ char *name = text_escape_cstr(console_tool_name(tool));
    _cleanup_free_ char *what = console_summary(tool, arguments, 200, true);
    free(c->live_what);
    c->live_what = xasprintf("hutch run: step %ld: %s%s%s", step, name, what[0] ? " " : "", what);
    c->live_begun = c->live_drawn = c->live_output_at = now;
    c->live_bytes = 0;
  }
  if (c->mode == CONSOLE_JSON) {
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "event", "tool");
    cJSON_AddNumberToObject(e, "step", (double)step);
    cJSON_AddStringToObject(e, "tool", tool);
    if (call_id)
      cJSON_AddStringToObject(e, "call_id", call_id);
    _cleanup_free_ char *what = console_summary(tool, arguments, 200, false);
    cJSON_AddStringToObject(e, "summary", what);
    console_event(c, e);
  }
}

static size_t term_width(void) {
  struct winsize ws;
  if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
    return ws.ws_col;
  return 80;
}

void console_tool_progress(void *console, uint64_t output_bytes) {
  struct console *c = console;
  if (c->live_what == NULL)
    return;
  double now = monotonic_seconds();
  if (output_bytes != c->live_bytes) {
    c->live_bytes = output_bytes;
    c->live_output_at = now;
  }
  if (now - c->live_begun < LIVE_AFTER || (c->live_shown && now - c->live_drawn < LIVE_EVERY))
    return;
  _cleanup_free_ char *line =
      console_live_line(c->live_what, now - c->live_begun, c->live_bytes, now - c->live_output_at, term_width());
  fprintf(stderr, "\r\033[K%s", line);
  fflush(stderr);
  c->live_shown = true;
  c->live_drawn = now;
}

void console_tool_end(struct console *c) {
  console_clear(c);
  free(c->live_what);
  c->live_what = NULL;
}
