/* SPDX-License-Identifier: Apache-2.0 */
/* Before the first request: a sandbox of the image is made once, which
 * shows that sandboxes start here at all (a server that cannot run any
 * says so at its start, not in every answer), and which languages' tools
 * the image has.  It is made with a memory limit, as requests ask for: on
 * a host without a usable cgroup that limit is refused, and the server
 * then applies requests' limits as rlimits (said once). */
#include "config.h"

#include "serve.h"

#include <string.h>

#include "util.h"

#define PROBE_MEMORY (256ull << 20)

/* `command -v` of every tool in one process: the tools found, a line each. */
static int find_tools(struct serve_config *cfg, struct hutch_sandbox *sb, hutch_error_t *err) {
  const char *argv[64] = {"/bin/sh", "-c", "for t; do if command -v \"$t\" >/dev/null 2>&1; then echo \"$t\"; fi; done",
                          "sh"};
  size_t n = 4;
  for (size_t i = 0; serve_lang_at(i) && n < ARRAY_SIZE(argv) - 1; i++)
    argv[n++] = serve_lang_at(i)->tool;
  argv[n] = NULL;
  struct mcp_exec_result r;
  if (mcp_exec(&cfg->exec, sb, argv, "/", NULL, 0, 30, NULL, &r, err) < 0)
    return -1;
  if (r.exit.timed_out || r.exit.signal || r.exit.status != 0) {
    hutch_error_set(err, r.exit.exec_errno,
                    "serve: looking for the languages' tools in image %s failed (exit %d%s): %.200s%.200s",
                    cfg->image_name, r.exit.status, r.exit.timed_out ? ", timed out" : "", r.exit.failure, r.err);
    mcp_exec_result_clear(&r);
    return -1;
  }
  for (char *save = NULL, *l = strtok_r(r.out, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
    for (size_t i = 0; serve_lang_at(i) && i < ARRAY_SIZE(cfg->languages); i++)
      if (strcmp(serve_lang_at(i)->tool, l) == 0)
        cfg->languages[i] = true;
  mcp_exec_result_clear(&r);
  return 0;
}

int serve_probe(struct serve_config *cfg, hutch_error_t *err) {
  struct hutch_sandbox *sb = NULL;
  hutch_error_t first = NULL;
  if (serve_sandbox_make(cfg, PROBE_MEMORY, &sb, &first) < 0) {
    cfg->no_cgroups = true;
    if (serve_sandbox_make(cfg, PROBE_MEMORY, &sb, err) < 0) {
      hutch_error_free(&first);
      return hutch_error_wrap(err, "serve: a sandbox of image %s could not be started", cfg->image_name);
    }
    _cleanup_free_ char *why = hutch_error_format(first);
    hutch_notice("serve: memory limits are applied as rlimits: %s", why);
    hutch_error_free(&first);
  }
  int r = find_tools(cfg, sb, err);
  serve_sandbox_drop(cfg, sb);
  return r;
}
