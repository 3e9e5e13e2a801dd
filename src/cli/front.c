/* SPDX-License-Identifier: Apache-2.0 */
/* The musl front end: `hutch` when configured --with-musl-front-end.
 *
 * Why it exists: glibc's start-up probes the CPU (CPUID), and where a
 * hypervisor traps CPUID that costs about half a millisecond per process,
 * as much as the rest of starting a sandbox.  musl's start-up does not.  So
 * the verbs whose speed matters, `exec` (one-shot and --in), `create` and
 * `fork`, run here, built from the same sources against static musl builds of
 * libseccomp, libcap and cJSON.
 *
 * What it cannot do, it hands to hutch-full (the glibc program, beside
 * this one or in the libexec directory) with the whole command line,
 * before anything of a sandbox exists: every other verb (their libraries,
 * libcurl and libarchive, are loaded with dlopen, which a static program
 * has not), --net proxy (its veth is set up over libmnl, not built for
 * musl; a fork of a --net proxy sandbox too), and a user that /etc/passwd does not list (musl has no NSS, and
 * the subordinate id ranges are looked up by user name). */
#include "config.h"

#include <pwd.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static char **front_argv;

int cli_hand_over(const char *why) {
  /* As the library's debug lines (HUTCH_DEBUG): which program ran a command. */
  if (getenv("HUTCH_DEBUG") != NULL)
    fprintf(stderr, "hutch: debug: front end: %s: handing the command to hutch-full\n", why);
  /* hutch-full's parent is ours: it takes the one found at our start, so
   * that a caller that died meanwhile is still seen (die with parent). */
  char parent[24];
  snprintf(parent, sizeof(parent), "%d", (int)cli_parent_pid);
  setenv(HUTCH_HANDED_OVER_ENV, parent, 1);
  cli_exec_program("front end", "hutch-full", front_argv);
  /* Not the command's 126 or 127 of `hutch exec`: hutch itself failed. */
  return EXIT_RUNTIME;
}

int main(int argc, char **argv) {
  cli_start();
  front_argv = argv;
  const char *verb = argc > 1 ? argv[1] : "";
  bool start_verb = strcmp(verb, "exec") == 0 || strcmp(verb, "create") == 0 || strcmp(verb, "fork") == 0;
  if (!start_verb)
    return cli_hand_over("a verb of hutch-full");
  uid_t uid = geteuid();
  if (uid != 0 && getpwuid(uid) == NULL)
    return cli_hand_over("a user not in /etc/passwd");
  if (strcmp(verb, "fork") == 0)
    return cmd_fork(argc - 1, argv + 1);
  return strcmp(verb, "exec") == 0 ? cmd_exec(argc - 1, argv + 1) : cmd_create(argc - 1, argv + 1);
}
