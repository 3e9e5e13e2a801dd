/* SPDX-License-Identifier: Apache-2.0 */
#include "config.h"

#include "git_init.h"

#include <string.h>

#include "util.h"

#define GIT_INIT_TIMEOUT 30.0

void git_init_start(struct git_init *g, struct task_sandbox *t, const char *working_dir) {
  memset(g, 0, sizeof(*g));
  g->status = -1;
  /* The sandbox's binary acting on the sandbox's files; hutch reads
   * nothing it prints (its streams are /dev/null).  --template= leaves out
   * the template directory's sample hooks (inactive), description (read
   * by gitweb only) and info/exclude (comments only): the repository is the
   * same to git, made and copied back with 17 files fewer. */
  const char *argv[] = {"git", "init", "--template=", NULL};
  struct hutch_spawn spec = {.argv = argv, .env = t->env, .workdir = working_dir};
  hutch_error_t err = NULL;
  g->started = monotonic_seconds();
  if (!t->removed && hutch_proc_spawn(t->sb, &spec, &g->proc, &err) < 0)
    g->proc = NULL;
  hutch_error_free(&err);
}

bool git_init_finish(struct git_init *g, struct task_sandbox *t) {
  if (g->waited || g->started == 0)
    return false;
  g->waited = true;
  if (g->proc == NULL)
    return true;
  struct hutch_exit ex;
  memset(&ex, 0, sizeof(ex));
  for (;;) {
    double left = g->started + GIT_INIT_TIMEOUT - monotonic_seconds();
    bool stop = t->stop && *t->stop;
    hutch_error_t err = NULL;
    /* Short slices: a stop request (a signal) is seen within 0.2 s. */
    int r = stop || left <= 0 ? 1 : hutch_proc_wait(g->proc, left < 0.2 ? left : 0.2, &ex, &err);
    hutch_error_free(&err);
    if (r == 0) {
      g->status = ex.exec_errno || ex.signal ? -1 : ex.status;
      break;
    }
    if (r < 0 || stop || left <= 0) {
      hutch_error_t kerr = NULL;
      hutch_proc_kill(g->proc, &kerr);
      hutch_error_free(&kerr);
      break;
    }
  }
  hutch_proc_free(g->proc);
  g->proc = NULL;
  return true;
}

/* path is dir or inside it (both absolute, without trailing slashes). */
static bool within(const char *path, const char *dir) {
  size_t n = strlen(dir);
  if (strcmp(dir, "/") == 0)
    return true;
  return strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

bool git_init_overlaps(const char *working_dir, const char *input_dir) {
  /* Spellings that hide where a path leads ("//", "/./", "/.", "/../",
   * "/..") count as overlapping: the copy then simply waits. */
  const char *paths[] = {working_dir, input_dir};
  for (size_t i = 0; i < 2; i++) {
    size_t n = strlen(paths[i]);
    if (strstr(paths[i], "//") || strstr(paths[i], "/./") || strstr(paths[i], "/../") ||
        (n >= 2 && strcmp(paths[i] + n - 2, "/.") == 0) || (n >= 3 && strcmp(paths[i] + n - 3, "/..") == 0))
      return true;
  }
  _cleanup_free_ char *git = xasprintf("%s/.git", strcmp(working_dir, "/") == 0 ? "" : working_dir);
  return within(git, input_dir) || within(input_dir, git);
}
