/* SPDX-License-Identifier: Apache-2.0 */
/* The tools that change what a session's sandbox is, beyond its files and
 * commands: sandbox_pause and sandbox_resume (and, through
 * mcp_snapshot.c, sandbox_snapshot, sandbox_reset and
 * sandbox_snapshot_delete, and through mcp_fork.c, sandbox_fork).  Each is one entry of
 * lifecycle[] below (and its schema in mcp_schema.c: tools[]); mcp_tools_call
 * looks here for a tool its own table has not, and audits the call as it
 * audits every other. */
#include "config.h"

#include "mcp.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "util.h"

static double wall_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The session's sandbox the call names, when it may be paused (pausing)
 * or resumed (!pausing): *ps says how it is paused, if it is.  NULL with
 * *fail, the tool error, when it may not. */
static struct mcp_sandbox *target(struct mcp_call *c, bool pausing, struct hutch_pause_status *ps, cJSON **fail) {
  const char *why;
  struct mcp_sandbox **p = mcp_find(c, &why);
  if (p == NULL) {
    *fail = mcp_no_sandbox(why);
    return NULL;
  }
  hutch_error_t err = NULL;
  int r = hutch_sandbox_pause_status(c->cfg->state_dir, (*p)->id, ps, &err);
  if (r < 0) {
    *fail = mcp_tool_error(&err);
    return NULL;
  }
  if (pausing == (r == 1)) {
    _cleanup_free_ char *t = pausing ? xasprintf("sandbox %s is paused already (%s): sandbox_resume lets it go on",
                                                 (*p)->id, hutch_pause_method_name(ps->method))
                                     : xasprintf("sandbox %s is not paused", (*p)->id);
    *fail = mcp_result(t, NULL, true);
    return NULL;
  }
  return *p;
}

static cJSON *t_pause(struct mcp_call *c) {
  struct hutch_pause_status ps;
  cJSON *fail = NULL;
  struct mcp_sandbox *m = target(c, true, &ps, &fail);
  if (m == NULL)
    return fail;
  hutch_error_t err = NULL;
  enum hutch_pause_method used = HUTCH_PAUSE_NONE;
  if (hutch_sandbox_pause(m->sb, &used, &err) < 0)
    return mcp_tool_error(&err);
  const char *method = hutch_pause_method_name(used);
  cJSON *st = cJSON_CreateObject();
  cJSON_AddStringToObject(st, "id", m->id);
  cJSON_AddBoolToObject(st, "paused", true);
  cJSON_AddStringToObject(st, "method", method);
  _cleanup_free_ char *t = xasprintf("paused sandbox %s (%s): its processes are frozen, and it takes no command and "
                                     "no file call until sandbox_resume",
                                     m->id, method);
  return mcp_result(t, st, false);
}

static cJSON *t_resume(struct mcp_call *c) {
  struct hutch_pause_status ps;
  cJSON *fail = NULL;
  struct mcp_sandbox *m = target(c, false, &ps, &fail);
  if (m == NULL)
    return fail;
  hutch_error_t err = NULL;
  if (hutch_sandbox_resume(m->sb, &err) < 0)
    return mcp_tool_error(&err);
  double now = wall_now(), seconds = ps.since > 0 && now > ps.since ? now - ps.since : 0;
  cJSON *st = cJSON_CreateObject();
  cJSON_AddStringToObject(st, "id", m->id);
  cJSON_AddBoolToObject(st, "paused", false);
  cJSON_AddNumberToObject(st, "paused_seconds", seconds);
  _cleanup_free_ char *t = xasprintf("resumed sandbox %s after %.1f s paused", m->id, seconds);
  return mcp_result(t, st, false);
}

/* A tool here: its handler, and whether it acts on a paused sandbox. */
static const struct {
  const char *name;
  cJSON *(*fn)(struct mcp_call *c);
  bool runs_paused;
} lifecycle[] = {
    {"sandbox_pause", t_pause, true},
    {"sandbox_resume", t_resume, true},
};

cJSON *mcp_lifecycle_call(struct mcp_call *c) {
  for (size_t i = 0; i < ARRAY_SIZE(lifecycle); i++)
    if (strcmp(c->tool, lifecycle[i].name) == 0)
      return lifecycle[i].fn(c);
  return mcp_snapshot_call(c);
}

bool mcp_tool_runs_paused(const char *tool) {
  /* A paused sandbox is copied as it is (by a snapshot, and into a fork's
   * children, and stays paused), and a reset makes it run again. */
  if (strcmp(tool, "sandbox_destroy") == 0 || strcmp(tool, "sandbox_snapshot") == 0 ||
      strcmp(tool, "sandbox_reset") == 0 || strcmp(tool, "sandbox_fork") == 0)
    return true;
  for (size_t i = 0; i < ARRAY_SIZE(lifecycle); i++)
    if (strcmp(tool, lifecycle[i].name) == 0)
      return lifecycle[i].runs_paused;
  return false;
}
