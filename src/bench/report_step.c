/* SPDX-License-Identifier: Apache-2.0
 *
 * report.html's view of a run's steps (report.h): each step's reasoning and
 * thought, its call as what it is (a command, a file created, an edit as a
 * diff, a file viewed, the answer submitted, else the call's parameters
 * one by one), its observation, exit status and wall time, and its model
 * call's latency and tokens.  Pure. */
#include "config.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "report.h"
#include "util.h"

/* The bytes of text that fit in max, not cutting a UTF-8 sequence. */
static size_t utf8_cut(const char *text, size_t len, size_t max) {
  if (len <= max)
    return len;
  size_t n = max;
  while (n > 0 && ((unsigned char)text[n] & 0xc0) == 0x80)
    n--;
  return n;
}

cJSON *report_text(struct report_ctx *c, const char *text) {
  if (text == NULL || text[0] == '\0')
    return NULL;
  size_t len = strlen(text);
  cJSON *t = cJSON_CreateObject();
  if (c->budget < 64) {
    cJSON_AddStringToObject(t, "more", "not shown: the page's texts are over their budget; see the run's files");
    return t;
  }
  size_t max = REPORT_TEXT_MAX < c->budget ? REPORT_TEXT_MAX : c->budget;
  size_t n = utf8_cut(text, len, max);
  c->budget -= n;
  _cleanup_free_ char *shown = xstrndup(text, n);
  cJSON_AddStringToObject(t, "text", shown);
  size_t lines = 1;
  for (size_t i = 0; i + 1 < n; i++)
    lines += shown[i] == '\n';
  cJSON_AddNumberToObject(t, "lines", (double)lines);
  if (n > REPORT_FOLD_CHARS || lines > REPORT_FOLD_LINES)
    cJSON_AddTrueToObject(t, "long");
  if (n < len) {
    _cleanup_free_ char *more = xasprintf("\xe2\x80\xa6 %zu more bytes in the run's trajectory.json", len - n);
    cJSON_AddStringToObject(t, "more", more);
  }
  return t;
}

static void add_text(struct report_ctx *c, cJSON *o, const char *key, const char *text) {
  cJSON *t = report_text(c, text);
  if (t)
    cJSON_AddItemToObject(o, key, t);
}

/* The lines of text: [start, end) pairs. */
struct lines {
  const char **at;
  size_t *len;
  size_t n;
};

static void split_lines(const char *text, struct lines *l) {
  l->n = 0;
  size_t cap = 1;
  for (const char *p = text; *p; p++)
    cap += *p == '\n';
  l->at = xcalloc(cap, sizeof(*l->at));
  l->len = xcalloc(cap, sizeof(*l->len));
  for (const char *p = text; *p;) {
    const char *nl = strchr(p, '\n');
    size_t n = nl ? (size_t)(nl - p) : strlen(p);
    l->at[l->n] = p;
    l->len[l->n++] = n;
    p += n + (nl != NULL);
  }
}

static bool same_line(const struct lines *a, size_t i, const struct lines *b, size_t j) {
  return a->len[i] == b->len[j] && memcmp(a->at[i], b->at[j], a->len[i]) == 0;
}

static void diff_line(cJSON *out, const char *cls, char sign, const char *text, size_t n) {
  cJSON *l = cJSON_CreateObject();
  cJSON_AddStringToObject(l, "cls", cls);
  _cleanup_free_ char *t = xasprintf("%c%.*s\n", sign, (int)n, text);
  cJSON_AddStringToObject(l, "text", t);
  cJSON_AddItemToArray(out, l);
}

cJSON *report_diff(const char *old_text, const char *new_text) {
  struct lines a, b;
  split_lines(old_text ? old_text : "", &a);
  split_lines(new_text ? new_text : "", &b);
  size_t head = 0, tail = 0;
  while (head < a.n && head < b.n && same_line(&a, head, &b, head))
    head++;
  while (tail < a.n - head && tail < b.n - head && same_line(&a, a.n - 1 - tail, &b, b.n - 1 - tail))
    tail++;
  cJSON *out = cJSON_CreateArray();
  for (size_t i = 0; i < head; i++)
    diff_line(out, "ctx", ' ', a.at[i], a.len[i]);
  for (size_t i = head; i < a.n - tail; i++)
    diff_line(out, "del", '-', a.at[i], a.len[i]);
  for (size_t j = head; j < b.n - tail; j++)
    diff_line(out, "add", '+', b.at[j], b.len[j]);
  for (size_t i = a.n - tail; i < a.n; i++)
    diff_line(out, "ctx", ' ', a.at[i], a.len[i]);
  free(a.at), free(a.len), free(b.at), free(b.len);
  return out;
}

static const char *str_param(const cJSON *params, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(params, key);
  return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* A budgeted copy of text for a diff: the text as report_text would show
 * it (cut at REPORT_TEXT_MAX). */
static char *diff_side(struct report_ctx *c, const char *text) {
  cJSON *t = report_text(c, text);
  const cJSON *s = cJSON_GetObjectItemCaseSensitive(t, "text");
  char *out = xstrdup(cJSON_IsString(s) ? s->valuestring : "");
  cJSON_Delete(t);
  return out;
}

/* Every parameter but the ones the view shows otherwise, as name and text
 * (strings as they are, other values as JSON). */
static void other_params(struct report_ctx *c, cJSON *call, const cJSON *params, const char *const *shown) {
  cJSON *list = cJSON_CreateArray();
  const cJSON *p;
  cJSON_ArrayForEach(p, params) {
    bool skip = false;
    for (const char *const *s = shown; *s && !skip; s++)
      skip = strcmp(p->string, *s) == 0;
    if (skip)
      continue;
    _cleanup_free_ char *json = cJSON_IsString(p) ? NULL : cJSON_Print(p);
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "name", p->string);
    add_text(c, e, "value", cJSON_IsString(p) ? p->valuestring : json);
    cJSON_AddItemToArray(list, e);
  }
  if (cJSON_GetArraySize(list) > 0)
    cJSON_AddItemToObject(cJSON_AddObjectToObject(call, "params"), "list", list);
  else
    cJSON_Delete(list);
}

/* The call as what it is: {cls, and what that kind shows}. */
static cJSON *call_view(struct report_ctx *c, const cJSON *action) {
  const cJSON *f = cJSON_GetObjectItemCaseSensitive(action, "function");
  const char *fn = cJSON_IsString(f) ? f->valuestring : "";
  const cJSON *params = cJSON_GetObjectItemCaseSensitive(action, "parameters");
  cJSON *call = cJSON_CreateObject();
  const char *cmd = str_param(params, "command");
  const char *path = str_param(params, "path");
  static const char *const none[] = {NULL};
  if (fn[0] == '\0') {
    cJSON_AddStringToObject(call, "cls", "none");
  } else if (strcmp(fn, "execute_bash") == 0 && cmd) {
    cJSON_AddStringToObject(call, "cls", "bash");
    add_text(c, call, "command", cmd);
    static const char *const shown[] = {"command", NULL};
    other_params(c, call, params, shown);
  } else if (strcmp(fn, "str_replace_editor") == 0 && cmd && path) {
    static const char *const shown[] = {"command", "path", "file_text", "old_str", "new_str", NULL};
    cJSON_AddStringToObject(call, "path", path);
    if (strcmp(cmd, "create") == 0) {
      cJSON_AddStringToObject(call, "cls", "create");
      cJSON_AddStringToObject(call, "what", "create");
      add_text(c, call, "code", str_param(params, "file_text"));
    } else if (strcmp(cmd, "str_replace") == 0 || strcmp(cmd, "insert") == 0) {
      bool insert = strcmp(cmd, "insert") == 0;
      cJSON_AddStringToObject(call, "cls", "edit");
      cJSON_AddStringToObject(call, "what", cmd);
      _cleanup_free_ char *old_text = insert ? xstrdup("") : diff_side(c, str_param(params, "old_str"));
      _cleanup_free_ char *new_text = diff_side(c, str_param(params, "new_str"));
      cJSON_AddItemToObject(cJSON_AddObjectToObject(call, "diff"), "hunk", report_diff(old_text, new_text));
    } else {
      cJSON_AddStringToObject(call, "cls", strcmp(cmd, "view") == 0 ? "view" : "file");
      cJSON_AddStringToObject(call, "what", cmd);
    }
    other_params(c, call, params, shown);
  } else if (strcmp(fn, "submit") == 0) {
    cJSON_AddStringToObject(call, "cls", "submit");
    other_params(c, call, params, none);
  } else {
    cJSON_AddStringToObject(call, "cls", "other");
    other_params(c, call, params, none);
  }
  return call;
}

double report_num(const cJSON *o, const char *key, double dflt) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsNumber(v) && isfinite(v->valuedouble) ? v->valuedouble : dflt;
}

void report_addf(cJSON *o, const char *key, const char *fmt, ...) {
  char buf[64];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  cJSON_AddStringToObject(o, key, buf);
}

static cJSON *step_view(struct report_ctx *c, const cJSON *st, long n, bool same_reply, long reply_first,
                        struct report_sums *sums) {
  const cJSON *m = cJSON_GetObjectItemCaseSensitive(st, "metadata");
  const cJSON *action = cJSON_GetObjectItemCaseSensitive(st, "action");
  cJSON *v = cJSON_CreateObject();
  cJSON_AddNumberToObject(v, "n", (double)n);
  const cJSON *f = cJSON_GetObjectItemCaseSensitive(action, "function");
  cJSON_AddStringToObject(v, "tool", cJSON_IsString(f) && f->valuestring[0] ? f->valuestring : "(no tool call)");
  const cJSON *exit_code = cJSON_GetObjectItemCaseSensitive(m, "exit_code");
  if (cJSON_IsNumber(exit_code)) {
    cJSON *e = cJSON_AddObjectToObject(v, "exit");
    report_addf(e, "text", "exit %.0f", exit_code->valuedouble);
    cJSON_AddStringToObject(e, "cls", exit_code->valuedouble == 0 ? "ok" : "bad");
  }
  double tool = report_num(m, "tool_time", -1), model = report_num(m, "exec_time", -1);
  if (tool >= 0 && cJSON_IsString(f) && f->valuestring[0]) {
    report_addf(v, "wall", "tool %.3f s", tool);
    sums->tool_seconds += tool;
  }
  if (same_reply) {
    cJSON *s = cJSON_AddObjectToObject(v, "same_reply");
    cJSON_AddNumberToObject(s, "n", (double)reply_first);
  } else {
    if (model >= 0) {
      report_addf(v, "latency", "model %.3f s", model);
      sums->model_seconds += model;
    }
    double in = report_num(m, "prompt_tokens", -1), out = report_num(m, "completion_tokens", -1);
    if (in >= 0 && out >= 0) {
      cJSON *t = cJSON_AddObjectToObject(v, "tokens");
      cJSON_AddNumberToObject(t, "in", in);
      cJSON_AddNumberToObject(t, "out", out);
      sums->prompt_tokens += (long)in;
      sums->completion_tokens += (long)out;
      sums->has_usage = true;
    }
    double cost = report_num(m, "cost", -1);
    if (cost >= 0) {
      report_addf(v, "cost", "%.6g", cost);
      sums->cost += cost;
      sums->has_cost = true;
    }
  }
  const cJSON *r = cJSON_GetObjectItemCaseSensitive(st, "reasoning_content");
  const cJSON *t = cJSON_GetObjectItemCaseSensitive(st, "thought");
  const cJSON *o = cJSON_GetObjectItemCaseSensitive(st, "observation");
  add_text(c, v, "reasoning", cJSON_IsString(r) ? r->valuestring : NULL);
  add_text(c, v, "thought", cJSON_IsString(t) ? t->valuestring : NULL);
  cJSON_AddItemToObject(v, "call", call_view(c, action));
  add_text(c, v, "obs", cJSON_IsString(o) ? o->valuestring : NULL);
  return v;
}

cJSON *report_steps_view(struct report_ctx *c, const cJSON *steps, struct report_sums *sums) {
  cJSON *list = cJSON_CreateArray();
  long n = 0, reply_first = 0;
  double last_reply = -1;
  const cJSON *st;
  cJSON_ArrayForEach(st, steps) {
    n++;
    /* A reply's second call and later: its latency and tokens are the
     * first one's. */
    const cJSON *reply = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(st, "metadata"), "reply");
    bool same = cJSON_IsNumber(reply) && reply->valuedouble == last_reply;
    if (!same)
      reply_first = n;
    last_reply = cJSON_IsNumber(reply) ? reply->valuedouble : -1;
    cJSON_AddItemToArray(list, step_view(c, st, n, same, reply_first, sums));
  }
  return list;
}
