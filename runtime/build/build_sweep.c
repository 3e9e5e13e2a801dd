/* SPDX-License-Identifier: Apache-2.0 */
/* A build's stage (store tmp/) holds the state directory of the sandbox
 * its steps run in (image_build.c, dockerfile_layer.c), private to the
 * build: `hutch ps` does not see it.  A build that is killed takes that
 * sandbox's processes with it (die_with_creator: init, then the proxy
 * that watches init); what the sandbox held on the host outside its
 * processes, its cgroup, goes only with a teardown, and a stage made by
 * a hutch before die_with_creator was set may still have its sandbox
 * running.  So the stage is not just deleted: its sandboxes are removed
 * first, and a stage whose sandbox is still there stays, recorded, for
 * the next build. */
#include "config.h"

#include "build_sweep.h"

#include <stdlib.h>

#include "store.h"
#include "util.h"

/* 0 when nothing of a sandbox is left in the stage at `path`. */
static int remove_stage_sandboxes(int dirfd, const char *path, void *data) {
  (void)dirfd;
  (void)data;
  _cleanup_free_ char *state = xasprintf("%s/state", path);
  struct hutch_sandbox_info *infos = NULL;
  size_t n = 0;
  hutch_error_t err = NULL;
  /* A state directory that cannot be listed records nothing to stop. */
  if (hutch_sandbox_list(state, &infos, &n, &err) < 0) {
    hutch_debug("build: %s: %s", state, err->msg);
    hutch_error_free(&err);
    hutch_sandbox_info_free(infos, n);
    return 0;
  }
  for (size_t i = 0; i < n; i++) {
    hutch_debug("build: removing sandbox %s (%s) of a killed build in %s", infos[i].id,
                infos[i].running ? "still running" : "ended", state);
    if (hutch_sandbox_remove(state, infos[i].id, &err) < 0) {
      hutch_warn("a killed build's sandbox %s (in %s) could not be removed: %s; the next build tries again",
                 infos[i].id, state, err->msg);
      hutch_error_free(&err);
    }
  }
  hutch_sandbox_info_free(infos, n);
  /* What a failed removal kept (its record, for a retry) keeps the stage. */
  if (n > 0 && hutch_sandbox_list(state, &infos, &n, &err) == 0) {
    hutch_sandbox_info_free(infos, n);
    return n > 0 ? -1 : 0;
  }
  hutch_error_free(&err);
  return 0;
}

void build_sweep_stale(struct hutch_store *store) {
  store_clean_stale_tmp(store, remove_stage_sandboxes, NULL);
}
