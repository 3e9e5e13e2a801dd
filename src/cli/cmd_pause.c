/* SPDX-License-Identifier: Apache-2.0 */
/* hutch pause and hutch resume: freeze every process of a live sandbox,
 * and let it go on (hutch-exec(1), PAUSE AND RESUME). */
#include "config.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "util.h"

static void pause_usage(FILE *out, bool resume) {
  if (resume)
    fprintf(out, "Usage: hutch resume [OPTIONS] ID\n\n"
                 "Let a sandbox paused by `hutch pause` go on where it stopped.\n\n");
  else
    fprintf(out, "Usage: hutch pause [OPTIONS] ID\n\n"
                 "Freeze every process of a long-lived sandbox, its init included: its memory\n"
                 "stays, it uses no CPU, and nothing inside can undo it.  With a cgroup v2 its\n"
                 "freezer does it (method cgroup); without one a host process of hutch's holds\n"
                 "every task in a ptrace stop (method ptrace), and should that process be\n"
                 "killed, the sandbox's processes die with it.  While paused, `exec --in` and\n"
                 "`cp` fail (exit status 125); `rm` works.  `hutch resume ID` lets it go on.\n\n");
  fprintf(out, "Options:\n"
               "  --state-dir DIR  where sandboxes keep their state (default: $HUTCH_STATE_DIR)\n"
               "  --json           print one JSON object: id, state, method, seconds\n"
               "  -h, --help       show this help\n");
}

static void usage_pause(FILE *out) {
  pause_usage(out, false);
}

static void usage_resume(FILE *out) {
  pause_usage(out, true);
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int run(int argc, char **argv, bool resume) {
  const char *verb = resume ? "resume" : "pause";
  const char *state_dir = NULL;
  bool json = false;
  int r = cli_sandbox_verb_opts(verb, argc, argv, resume ? usage_resume : usage_pause, &state_dir, &json);
  if (r >= 0)
    return r;
  if (optind >= argc)
    return cli_usage_error(verb, "no sandbox id given");
  if (optind + 1 < argc)
    return cli_usage_error(verb, "unexpected argument '%s' (one sandbox at a time)", argv[optind + 1]);
  const char *id = argv[optind];
  hutch_error_t err = NULL;
  struct hutch_sandbox *sb;
  if (hutch_sandbox_open(state_dir, id, &sb, &err) < 0)
    return cli_fail(&err);
  struct hutch_pause_status st = {0};
  enum hutch_pause_method m = HUTCH_PAUSE_NONE;
  if (resume && hutch_sandbox_pause_status(state_dir, id, &st, &err) < 0) {
    hutch_sandbox_close(sb);
    return cli_fail(&err);
  }
  double t0 = now();
  r = resume ? hutch_sandbox_resume(sb, &err) : hutch_sandbox_pause(sb, &m, &err);
  double seconds = now() - t0;
  hutch_sandbox_close(sb);
  if (r < 0)
    return cli_fail(&err);
  if (resume)
    m = st.method;
  else if (hutch_sandbox_pause_status(state_dir, id, &st, &err) < 0)
    hutch_error_free(&err); /* only the task count is lost */
  if (json) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", id);
    cJSON_AddStringToObject(o, "state", resume ? "running" : "paused");
    cJSON_AddStringToObject(o, "method", hutch_pause_method_name(m));
    cJSON_AddNumberToObject(o, "seconds", seconds);
    if (!resume && m == HUTCH_PAUSE_PTRACE)
      cJSON_AddNumberToObject(o, "tasks", st.tasks);
    _cleanup_free_ char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    printf("%s\n", s);
  } else if (resume) {
    printf("%s resumed (%s) in %.1f ms\n", id, hutch_pause_method_name(m), seconds * 1000);
  } else if (m == HUTCH_PAUSE_PTRACE) {
    printf("%s paused (ptrace: %u tasks held by a host process) in %.1f ms\n", id, st.tasks, seconds * 1000);
  } else {
    printf("%s paused (%s) in %.1f ms\n", id, hutch_pause_method_name(m), seconds * 1000);
  }
  return 0;
}

int cmd_pause(int argc, char **argv) {
  return run(argc, argv, false);
}

int cmd_resume(int argc, char **argv) {
  return run(argc, argv, true);
}
