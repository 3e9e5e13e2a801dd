/* SPDX-License-Identifier: Apache-2.0 */
/* hutch: a rootless sandbox runtime for LLM agents.  This is hutch-full's
 * main, every verb; the musl front end has its own (front.c). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "suggest.h"

static const struct {
  const char *name;
  int (*run)(int argc, char **argv);
  const char *summary;
} verbs[] = {
    {"exec", cmd_exec, "run a command in a new sandbox, or in a live one with --in"},
    {"create", cmd_create, "start a long-lived sandbox and print its id"},
    {"ps", cmd_ps, "list sandboxes"},
    {"rm", cmd_rm, "kill sandboxes and remove what they left"},
    {"pause", cmd_pause, "freeze every process of a live sandbox"},
    {"resume", cmd_resume, "let a paused sandbox go on"},
    {"ttl", cmd_ttl, "set or clear a live sandbox's time limit"},
    {"reset", cmd_reset, "return a live sandbox to its image's state"},
    {"snapshot", cmd_snapshot, "keep a live sandbox's files as an image, without stopping it"},
    {"fork", cmd_fork, "start new live sandboxes from a live one's files, each independent"},
    {"rootfs", cmd_rootfs, "pull, build, import, export, push, list and remove images"},
    {"build", cmd_build, "build an image from a Dockerfile (hutch rootfs build -f)"},
    {"policy", cmd_policy, "show what a sandbox policy allows"},
    {"run", cmd_run, "give a model a sandboxed computer for a task (hutch-run(1))"},
    {"benchmark", cmd_benchmark, "evaluate a model on a task set, one sandbox per task (hutch-benchmark(1))"},
    {"report", cmd_report,
     "write report.html again, the page of a hutch benchmark or hutch run directory (hutch-benchmark(1))"},
    {"doctor", cmd_doctor, "check that this host can run sandboxes, and how to fix it"},
    {"cp", cmd_cp, "copy files and directories between the host and a live sandbox"},
    {"mcp", cmd_mcp, "serve sandboxes to MCP clients over stdio or loopback HTTP"},
    {"serve", cmd_serve, "run code for verl and other SandboxFusion clients, over HTTP (hutch-serve(1))"},
    {"audit", cmd_audit, "print a sandbox's audit log and verify it (hutch-audit(1))"},
};

static void usage(FILE *out) {
  fprintf(out, "Usage: hutch COMMAND [OPTIONS] [ARGS...]\n\n"
               "A rootless sandbox runtime for LLM agents.\n\nCommands:\n");
  for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
    fprintf(out, "  %-9s %s\n", verbs[i].name, verbs[i].summary);
  fprintf(out, "\nOptions:\n"
               "  -h, --help     show this help\n"
               "  -V, --version  show the version\n\n"
               "Run `hutch COMMAND --help` for a command's options; see hutch(1).\n");
}

/* A mistyped verb: the closest ones when they are close, else the list of
 * them, in a line or two rather than the whole usage. */
static void unknown_verb(const char *verb) {
  const size_t n = sizeof(verbs) / sizeof(verbs[0]);
  const char *names[sizeof(verbs) / sizeof(verbs[0])];
  for (size_t i = 0; i < n; i++)
    names[i] = verbs[i].name;
  const char *found[SUGGEST_MAX];
  size_t n_found = suggest_closest(verb, names, n, found);
  if (n_found > 0) {
    char list[256];
    suggest_format(found, n_found, list, sizeof(list));
    fprintf(stderr, "hutch: unknown command '%s': did you mean %s?\n", verb, list);
  } else {
    fprintf(stderr, "hutch: unknown command '%s' (commands:", verb);
    for (size_t i = 0; i < n; i++)
      fprintf(stderr, " %s", names[i]);
    fprintf(stderr, ")\n");
  }
  fprintf(stderr, "Try `hutch --help`.\n");
}

int main(int argc, char **argv) {
  cli_start();
  const char *handed = HUTCH_BEHIND_FRONT_END ? getenv(HUTCH_HANDED_OVER_ENV) : NULL;
  if (handed != NULL) {
    /* The front end's caller is ours (it may have died during the hand-
     * over: hutch_die_with_parent then sees a changed parent).  ps and
     * pgrep show our processes (a sandbox's init, its proxy) under the
     * name the user ran, the front end's (HUTCH_SELF). */
    cli_handed_over = true;
    cli_parent_pid = (pid_t)strtol(handed, NULL, 10);
    unsetenv(HUTCH_HANDED_OVER_ENV);
    const char *self = getenv("HUTCH_SELF");
    const char *base = self ? strrchr(self, '/') : NULL;
    if (base != NULL && base[1] != '\0')
      prctl(PR_SET_NAME, base + 1, 0, 0, 0);
  }
  if (argc < 2) {
    usage(stderr);
    return EXIT_USAGE;
  }
  const char *verb = argv[1];
  if (strcmp(verb, "-h") == 0 || strcmp(verb, "--help") == 0 || strcmp(verb, "help") == 0) {
    usage(stdout);
    return 0;
  }
  if (strcmp(verb, "-V") == 0 || strcmp(verb, "--version") == 0) {
    printf("hutch %s\n", hutch_version());
    return 0;
  }
  for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
    if (strcmp(verb, verbs[i].name) == 0)
      return verbs[i].run(argc - 1, argv + 1);
  unknown_verb(verb);
  return EXIT_USAGE;
}

/* hutch-full runs every verb itself. */
int cli_hand_over(const char *why) {
  (void)why;
  return -1;
}
