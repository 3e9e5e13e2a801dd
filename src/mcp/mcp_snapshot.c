/* SPDX-License-Identifier: Apache-2.0 */
/* sandbox_snapshot and sandbox_reset: a session's sandbox kept as an image
 * and started anew, from its image or from such a snapshot (sandbox_create
 * starts one from it too); sandbox_snapshot_delete removes one.  A
 * session's snapshots are its own: named mcp-TAG-N (TAG: random, the
 * session's; N never given twice), at most the server's --max-snapshots of
 * them at once, told to the reaper as they are made, and removed when
 * deleted, at the session's end, or by the reaper when the server is
 * killed. */
#include "config.h"

#include "mcp.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>

#include "util.h"

/* The session's tag, made at its first snapshot: another session's
 * snapshots, or an image of the store's, are never named like its own. */
static bool session_tag(struct mcp_session *s, hutch_error_t *err) {
  if (s->snap_tag[0])
    return true;
  unsigned char rnd[4];
  if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd)) {
    hutch_error_sys(err, "mcp: a tag for the session's snapshots (getrandom)");
    return false;
  }
  for (size_t i = 0; i < sizeof(rnd); i++)
    sprintf(s->snap_tag + 2 * i, "%02x", rnd[i]);
  return true;
}

/* The index of the session's snapshot of that name; s->n_snapshots when none. */
static unsigned snapshot_index(const struct mcp_session *s, const char *name) {
  unsigned i = 0;
  while (i < s->n_snapshots && strcmp(s->snapshots[i].name, name) != 0)
    i++;
  return i;
}

bool mcp_snapshot_own(const struct mcp_session *s, const char *name) {
  return snapshot_index(s, name) < s->n_snapshots;
}

static cJSON *t_snapshot(struct mcp_call *c) {
  const char *why;
  struct mcp_sandbox **p = mcp_find(c, &why);
  if (p == NULL)
    return mcp_no_sandbox(why);
  struct mcp_sandbox *m = *p;
  struct mcp_session *s = c->s;
  if (s->n_snapshots >= c->cfg->max_snapshots) {
    _cleanup_free_ char *t = xasprintf("sandbox_snapshot: this session keeps %u snapshots already, the server's "
                                       "--max-snapshots; they are removed when the session ends",
                                       s->n_snapshots);
    return mcp_result(t, NULL, true);
  }
  hutch_error_t err = NULL;
  if (!session_tag(s, &err))
    return mcp_tool_error(&err);
  _cleanup_free_ char *name = xasprintf("mcp-%s-%u", s->snap_tag, s->snap_seq + 1);
  /* Told before it is made: a server killed during the copy leaves no
   * image the reaper does not know of (one it is told of and that never
   * came is not there to remove: a warning, nothing more). */
  if (mcp_reaper_announce_image(c->cfg->reaper_fd, true, name, &err) < 0)
    return mcp_tool_error(&err);
  struct hutch_snapshot_options o = {.name = name};
  struct hutch_snapshot_result res = {0};
  if (hutch_sandbox_snapshot(m->sb, &o, &res, &err) < 0) {
    hutch_error_t ignored = NULL;
    if (mcp_reaper_announce_image(c->cfg->reaper_fd, false, name, &ignored) < 0)
      hutch_error_free(&ignored);
    return mcp_tool_error(&err);
  }
  s->snap_seq++;
  s->snapshots = xrealloc(s->snapshots, (s->n_snapshots + 1) * sizeof(*s->snapshots));
  s->snapshots[s->n_snapshots++] = (struct mcp_snapshot){.name = xstrdup(name), .base = xstrdup(m->image)};
  cJSON *st = cJSON_CreateObject();
  cJSON_AddStringToObject(st, "id", m->id);
  cJSON_AddStringToObject(st, "image", name);
  cJSON_AddStringToObject(st, "digest", res.digest);
  cJSON_AddNumberToObject(st, "size", (double)res.size);
  cJSON_AddNumberToObject(st, "files", (double)res.files);
  cJSON_AddNumberToObject(st, "snapshots_left", (double)(c->cfg->max_snapshots - s->n_snapshots));
  _cleanup_free_ char *t = xasprintf("snapshot %s of sandbox %s: %" PRIu64 " entries, %" PRIu64
                                     " bytes; sandbox_reset with snapshot \"%s\" goes back to it (%u more may be "
                                     "kept; all are removed when the session ends)",
                                     name, m->id, res.files, res.size, name, c->cfg->max_snapshots - s->n_snapshots);
  return mcp_result(t, st, false);
}

static cJSON *t_reset(struct mcp_call *c) {
  const char *why;
  struct mcp_sandbox **p = mcp_find(c, &why);
  if (p == NULL)
    return mcp_no_sandbox(why);
  struct mcp_sandbox *m = *p;
  const char *to = mcp_arg_str(c, "snapshot");
  /* Only the session's own: an image of the store would be a way around
   * the server's --allow-image. */
  if (to && !mcp_snapshot_own(c->s, to))
    return mcp_bad(c, "snapshot \"%s\" is not one of this session's (sandbox_snapshot names them)", to);
  hutch_error_t err = NULL;
  struct hutch_store *store = NULL;
  struct hutch_image image = {0};
  if (to && (hutch_store_open(c->cfg->store, &store, &err) < 0 || hutch_image_lookup(store, to, &image, &err) < 0)) {
    hutch_store_close(store);
    return mcp_tool_error(&err);
  }
  /* The interpreter ends with every other process: its handle goes first. */
  mcp_python_stop(m);
  struct hutch_reset_options o = {.to = to ? &image : NULL};
  int r = hutch_sandbox_reset(m->sb, &o, &err);
  hutch_image_clear(&image);
  hutch_store_close(store);
  if (r < 0)
    return mcp_tool_error(&err);
  if (to) {
    free(m->image);
    m->image = xstrdup(to);
  }
  cJSON *st = cJSON_CreateObject();
  cJSON_AddStringToObject(st, "id", m->id);
  cJSON_AddStringToObject(st, "image", m->image);
  _cleanup_free_ char *t =
      xasprintf("reset sandbox %s: its processes ended and its files are those of %s again", m->id, m->image);
  return mcp_result(t, st, false);
}

/* What keeps snapshot `name` of the session: a sandbox of the session that
 * runs on it (its overlay's lower layer: removing it would take files from
 * under the sandbox, and its reset would fail), or a later snapshot whose
 * layer lies over it (the store would keep it, unnamed, past the session).
 * NULL when nothing does, else the tool error. */
static cJSON *snapshot_in_use(const struct mcp_session *s, const char *name) {
  for (const struct mcp_sandbox *m = s->sandboxes; m; m = m->next)
    if (strcmp(m->image, name) == 0) {
      _cleanup_free_ char *t = xasprintf("snapshot %s: sandbox %s runs on it; destroy that sandbox, or sandbox_reset "
                                         "it to its image, before the snapshot is deleted",
                                         name, m->id);
      return mcp_result(t, NULL, true);
    }
  for (unsigned i = 0; i < s->n_snapshots; i++)
    if (strcmp(s->snapshots[i].base, name) == 0) {
      _cleanup_free_ char *t = xasprintf("snapshot %s: snapshot %s of this session was taken of a sandbox that ran "
                                         "on it, and is a layer over it; delete %s first",
                                         name, s->snapshots[i].name, s->snapshots[i].name);
      return mcp_result(t, NULL, true);
    }
  return NULL;
}

static cJSON *t_delete(struct mcp_call *c) {
  struct mcp_session *s = c->s;
  const char *name = mcp_arg_str(c, "snapshot");
  unsigned i = snapshot_index(s, name);
  if (i == s->n_snapshots)
    return mcp_bad(c, "snapshot \"%s\" is not one of this session's (sandbox_snapshot names them)", name);
  cJSON *busy = snapshot_in_use(s, name);
  if (busy)
    return busy;
  hutch_error_t err = NULL;
  struct hutch_store *store = NULL;
  if (hutch_store_open(c->cfg->store, &store, &err) < 0 || hutch_image_remove(store, name, &err) < 0) {
    hutch_store_close(store);
    return mcp_tool_error(&err);
  }
  hutch_store_close(store);
  /* Gone from the store: a reaper that was not told would find it gone. */
  if (mcp_reaper_announce_image(c->cfg->reaper_fd, false, name, &err) < 0) {
    hutch_log_error(HUTCH_LOG_WARNING, err);
    hutch_error_free(&err);
  }
  _cleanup_free_ char *gone = s->snapshots[i].name;
  free(s->snapshots[i].base);
  memmove(&s->snapshots[i], &s->snapshots[i + 1], (s->n_snapshots - i - 1) * sizeof(*s->snapshots));
  s->n_snapshots--;
  cJSON *st = cJSON_CreateObject();
  cJSON_AddStringToObject(st, "snapshot", gone);
  cJSON_AddNumberToObject(st, "snapshots_left", (double)(c->cfg->max_snapshots - s->n_snapshots));
  _cleanup_free_ char *t =
      xasprintf("deleted snapshot %s (%u more may be kept)", gone, c->cfg->max_snapshots - s->n_snapshots);
  return mcp_result(t, st, false);
}

cJSON *mcp_snapshot_call(struct mcp_call *c) {
  if (strcmp(c->tool, "sandbox_snapshot") == 0)
    return t_snapshot(c);
  if (strcmp(c->tool, "sandbox_reset") == 0)
    return t_reset(c);
  if (strcmp(c->tool, "sandbox_snapshot_delete") == 0)
    return t_delete(c);
  return mcp_fork_call(c);
}

void mcp_snapshots_end(const struct mcp_config *cfg, struct mcp_session *s) {
  struct hutch_store *store = NULL;
  hutch_error_t err = NULL;
  if (s->n_snapshots && hutch_store_open(cfg->store, &store, &err) < 0) {
    /* The reaper tries again when the server ends: it is not told to forget them. */
    hutch_log_error(HUTCH_LOG_WARNING, err);
    hutch_error_free(&err);
  }
  /* Newest first: a snapshot of a sandbox that was reset to an older one
   * is a layer over it. */
  for (unsigned i = s->n_snapshots; i-- > 0;) {
    if (store && hutch_image_remove(store, s->snapshots[i].name, &err) < 0) {
      hutch_log_error(HUTCH_LOG_WARNING, err);
      hutch_error_free(&err);
    } else if (store && mcp_reaper_announce_image(cfg->reaper_fd, false, s->snapshots[i].name, &err) < 0) {
      hutch_log_error(HUTCH_LOG_WARNING, err);
      hutch_error_free(&err);
    }
    free(s->snapshots[i].name);
    free(s->snapshots[i].base);
  }
  hutch_store_close(store);
  free(s->snapshots);
  s->snapshots = NULL;
  s->n_snapshots = 0;
}
