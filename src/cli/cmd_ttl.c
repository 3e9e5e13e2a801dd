/* SPDX-License-Identifier: Apache-2.0 */
/* hutch ttl: set or clear a live sandbox's time limit (hutch-exec(1),
 * TIME LIMITS). */
#include "config.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "options.h"
#include "util.h"

static void ttl_usage(FILE *out) {
  fprintf(out, "Usage: hutch ttl [OPTIONS] ID DURATION|none\n\n"
               "Set the time limit of a live sandbox to DURATION from now (90s, 10m, 2h, or plain\n"
               "seconds), or clear it with `none`.  When it runs out the sandbox is removed, or\n"
               "paused if it was made with `create --on-ttl pause`.  Paused time does not count:\n"
               "set while paused, DURATION runs from the resume.  A host process of hutch's (the\n"
               "keeper) waits for the limit; a sandbox without one has none.\n\n"
               "Options:\n"
               "  --state-dir DIR  where sandboxes keep their state (default: $HUTCH_STATE_DIR)\n"
               "  --json           print one JSON object: id, ttl, ttl_left, on_ttl, status\n"
               "  -h, --help       show this help\n");
}

/* The sandbox's limit as it now stands, from the listing. */
static int report(const char *state_dir, const char *id, bool json) {
  hutch_error_t err = NULL;
  struct hutch_sandbox_status *list;
  size_t n;
  if (hutch_sandbox_list_status(state_dir, &list, &n, &err) < 0)
    return cli_fail(&err);
  const struct hutch_sandbox_status *s = NULL;
  for (size_t i = 0; i < n && s == NULL; i++)
    if (strcmp(list[i].info.id, id) == 0)
      s = &list[i];
  if (s == NULL) {
    hutch_sandbox_status_free(list, n);
    hutch_error_set(&err, ENOENT, "sandbox %s is gone", id);
    return cli_fail(&err);
  }
  bool paused = s->state == HUTCH_SANDBOX_PAUSED;
  const char *action = s->on_ttl == HUTCH_TTL_PAUSE ? "pause" : "remove";
  if (json) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", id);
    cJSON_AddStringToObject(o, "status", paused ? "paused" : "running");
    if (s->ttl > 0) {
      cJSON_AddNumberToObject(o, "ttl", s->ttl);
      cJSON_AddNumberToObject(o, "ttl_left", s->ttl_left);
      cJSON_AddStringToObject(o, "on_ttl", action);
    } else {
      cJSON_AddNullToObject(o, "ttl");
      cJSON_AddNullToObject(o, "ttl_left");
    }
    _cleanup_free_ char *text = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    printf("%s\n", text);
  } else if (s->ttl > 0) {
    char left[32];
    format_duration(s->ttl_left, left, sizeof(left));
    if (paused)
      printf("%s: paused; %s left once resumed, then %s\n", id, left,
             s->on_ttl == HUTCH_TTL_PAUSE ? "paused" : "removed");
    else
      printf("%s: %s in %s\n", id, s->on_ttl == HUTCH_TTL_PAUSE ? "paused" : "removed", left);
  } else {
    printf("%s: no time limit\n", id);
  }
  hutch_sandbox_status_free(list, n);
  return 0;
}

int cmd_ttl(int argc, char **argv) {
  const char *state_dir = NULL;
  bool json = false;
  int r = cli_sandbox_verb_opts("ttl", argc, argv, ttl_usage, &state_dir, &json);
  if (r >= 0)
    return r;
  if (argc - optind < 2)
    return cli_usage_error("ttl", argc == optind ? "no sandbox id given" : "no duration given (or none to clear it)");
  if (argc - optind > 2)
    return cli_usage_error("ttl", "unexpected argument '%s' (one sandbox at a time)", argv[optind + 2]);
  const char *what = argv[optind], *duration = argv[optind + 1];
  struct hutch_sandbox_extras x = {0};
  if (strcmp(duration, "none") != 0 && (!parse_duration(duration, &x.ttl) || hutch_sandbox_extras_check(&x, NULL) < 0))
    return cli_usage_error("ttl", "DURATION wants 90s, 10m, 2h, plain seconds (at most ten years) or none, got '%s'",
                           duration);
  hutch_error_t err = NULL;
  struct hutch_sandbox *sb;
  if (hutch_sandbox_open(state_dir, what, &sb, &err) < 0)
    return cli_fail(&err);
  char id[40];
  snprintf(id, sizeof(id), "%s", hutch_sandbox_id(sb));
  r = hutch_sandbox_set_ttl(sb, x.ttl, &err);
  hutch_sandbox_close(sb);
  if (r < 0)
    return cli_fail(&err);
  return report(state_dir, id, json);
}
