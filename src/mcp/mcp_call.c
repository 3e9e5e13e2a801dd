/* SPDX-License-Identifier: Apache-2.0 */
/* What every tool's handler uses, in mcp_tools.c and mcp_lifecycle.c: its
 * result, its errors, its arguments, and the session's sandbox it names
 * (refused while paused, unless the tool works on a paused sandbox). */
#include "config.h"

#include "mcp.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "util.h"

cJSON *mcp_result(const char *text, cJSON *structured, bool is_error) {
  cJSON *r = cJSON_CreateObject();
  cJSON *content = cJSON_AddArrayToObject(r, "content");
  cJSON *t = cJSON_CreateObject();
  cJSON_AddStringToObject(t, "type", "text");
  cJSON_AddStringToObject(t, "text", text);
  cJSON_AddItemToArray(content, t);
  if (structured)
    cJSON_AddItemToObject(r, "structuredContent", structured);
  cJSON_AddBoolToObject(r, "isError", is_error);
  return r;
}

cJSON *mcp_tool_error(hutch_error_t *err) {
  _cleanup_free_ char *msg = hutch_error_format(*err);
  _cleanup_free_ char *text = (*err)->hint ? xasprintf("%s\nhint: %s", msg, (*err)->hint) : xstrdup(msg);
  hutch_error_free(err);
  return mcp_result(text, NULL, true);
}

cJSON *mcp_bad(struct mcp_call *c, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  _cleanup_free_ char *why = xvasprintf(fmt, ap);
  va_end(ap);
  _cleanup_free_ char *text = xasprintf("%s: %s", c->tool, why);
  c->invalid = true;
  return mcp_result(text, NULL, true);
}

const char *mcp_arg_str(struct mcp_call *c, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(c->args, key);
  return cJSON_IsString(v) ? v->valuestring : NULL;
}

struct mcp_sandbox *mcp_sandbox_find(struct mcp_session *s, const char *id) {
  for (struct mcp_sandbox *m = s->sandboxes; m; m = m->next)
    if (strcmp(m->id, id) == 0)
      return m;
  return NULL;
}

struct mcp_sandbox **mcp_find(struct mcp_call *c, const char **why) {
  const char *id = mcp_arg_str(c, "id");
  if (id == NULL) {
    *why = "wants \"id\", a sandbox id from sandbox_create";
    return NULL;
  }
  for (struct mcp_sandbox **p = &c->s->sandboxes; *p; p = &(*p)->next)
    if (strcmp((*p)->id, id) == 0) {
      /* A copy, kept past a sandbox_destroy; an id no sandbox has is the
       * client's text, of any length: not audited. */
      snprintf(c->sandbox, sizeof(c->sandbox), "%s", (*p)->id);
      /* A paused sandbox runs nothing: a command would wait for its
       * timeout, the interpreter's call too.  Refused at once instead, as
       * hutch exec --in refuses; a pause made with hutch pause counts. */
      struct hutch_pause_status ps;
      hutch_error_t ignored = NULL;
      if (!mcp_tool_runs_paused(c->tool) &&
          hutch_sandbox_pause_status(c->cfg->state_dir, (*p)->id, &ps, &ignored) == 1) {
        *why = "it is paused: it runs nothing, and its files wait, until sandbox_resume";
        return NULL;
      }
      hutch_error_free(&ignored);
      return p;
    }
  *why = "no sandbox of this session has that id (sandbox_list names them)";
  return NULL;
}

cJSON *mcp_no_sandbox(const char *why) {
  _cleanup_free_ char *text = xasprintf("sandbox: %s", why);
  return mcp_result(text, NULL, true);
}
