/* SPDX-License-Identifier: Apache-2.0 */
/* sandbox_fork: new sandboxes of the session that start from one of its
 * sandboxes' files (hutch_sandbox_fork, as `hutch fork` makes them).  The
 * children are the session's as a sandbox_create's are: they count against
 * --max-sandboxes, die with the session's thread, are told to the reaper,
 * and go with the session.  All or nothing: a fork that cannot give the
 * session every child it asked for leaves none. */
#include "config.h"

#include "mcp.h"

#include <string.h>

#include "util.h"

/* The first `added` sandboxes of the session's list (the children added,
 * newest first), removed again. */
static void undo_children(const struct mcp_config *cfg, struct mcp_session *s, unsigned added) {
  while (added-- > 0 && s->sandboxes) {
    struct mcp_sandbox *m = s->sandboxes;
    s->sandboxes = m->next;
    mcp_sandbox_drop(cfg, m);
  }
}

static cJSON *t_fork(struct mcp_call *c) {
  const char *why;
  struct mcp_sandbox **p = mcp_find(c, &why);
  if (p == NULL)
    return mcp_no_sandbox(why);
  struct mcp_sandbox *parent = *p;
  struct mcp_session *s = c->s;
  const cJSON *nj = cJSON_GetObjectItemCaseSensitive(c->args, "n");
  /* The schema holds n to 1..HUTCH_FORK_MAX. */
  unsigned n = nj ? (unsigned)nj->valuedouble : 1, have = mcp_session_count(s);
  if (have + n > c->cfg->max_sandboxes) {
    _cleanup_free_ char *t = xasprintf("sandbox_fork: this session has %u sandboxes and may have %u (the server's "
                                       "--max-sandboxes): %u more would pass it; destroy some first",
                                       have, c->cfg->max_sandboxes, n);
    return mcp_result(t, NULL, true);
  }
  /* Tied to the session's thread, as sandbox_create's: a killed server
   * takes them along. */
  struct hutch_fork_options o = {.n = n, .die_with_creator = true};
  struct hutch_sandbox *children[HUTCH_FORK_MAX];
  struct hutch_fork_result res = {0};
  hutch_error_t err = NULL;
  if (hutch_sandbox_fork(parent->sb, &o, children, &res, &err) < 0)
    return mcp_tool_error(&err);
  unsigned added = 0;
  for (; added < n; added++)
    if (mcp_session_add(c->cfg, s, children[added], parent->image, parent->workdir, &err) == NULL)
      break;
  if (added < n) {
    /* The one that failed is destroyed; those after it, and those before. */
    for (unsigned i = added + 1; i < n; i++) {
      hutch_error_t ignored = NULL;
      if (hutch_sandbox_destroy(children[i], &ignored) < 0) {
        hutch_log_error(HUTCH_LOG_WARNING, ignored);
        hutch_error_free(&ignored);
      }
    }
    undo_children(c->cfg, s, added);
    return mcp_tool_error(&err);
  }
  cJSON *ids = cJSON_CreateArray();
  _cleanup_free_ char *list = NULL;
  size_t len = 0, cap = 0;
  for (unsigned i = 0; i < n; i++) {
    const char *id = hutch_sandbox_id(children[i]);
    cJSON_AddItemToArray(ids, cJSON_CreateString(id));
    text_appendf(&list, &len, &cap, "%s%s", i ? ", " : "", id);
  }
  unsigned left = c->cfg->max_sandboxes - mcp_session_count(s);
  cJSON *st = cJSON_CreateObject();
  cJSON_AddStringToObject(st, "id", parent->id);
  cJSON_AddItemToObject(st, "children", ids);
  cJSON_AddNumberToObject(st, "paused_ms", res.paused_seconds * 1000);
  cJSON_AddNumberToObject(st, "sandboxes_left", left);
  _cleanup_free_ char *t =
      xasprintf("forked sandbox %s into %u new sandbox%s of this session: %s. Each starts from its "
                "files (not /tmp, not its processes) and is independent of it and of the others "
                "(%s paused %.1f ms for the copy; %u more sandboxes may be made)",
                parent->id, n, n == 1 ? "" : "es", list, parent->id, res.paused_seconds * 1000, left);
  return mcp_result(t, st, false);
}

cJSON *mcp_fork_call(struct mcp_call *c) {
  if (strcmp(c->tool, "sandbox_fork") == 0)
    return t_fork(c);
  return NULL;
}
