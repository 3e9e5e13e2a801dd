/* SPDX-License-Identifier: Apache-2.0 */
/* Verbs whose code lives in a program of its own (hutch run: hutch-agent,
 * hutch benchmark: hutch-benchmark), so that libcurl and libyaml never load
 * into the hutch binary: find that program and execv() it. */
#include "config.h"

#include <errno.h>
#include <linux/limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static void cannot_execute(const char *verb, const char *path, int errnum) {
  char *why = hutch_errno_format(errnum, "cannot execute %s", path);
  fprintf(stderr, "hutch %s: %s\n", verb, why);
  free(why);
}

int cli_exec_program(const char *verb, const char *program, char **argv) {
  char self[PATH_MAX];
  char path[PATH_MAX + 64];
  ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  /* Beside the hutch binary first: a build tree runs its own programs. */
  if (n > 0) {
    self[n] = '\0';
    /* The helper may run hutch itself again (hutch benchmark runs hutch run
     * and hutch exec): this very binary, not whichever is on PATH; in
     * hutch-full handed a command by the musl front end, the front end,
     * which set it. */
    setenv("HUTCH_SELF", self, !cli_handed_over);
    char *slash = strrchr(self, '/');
    if (slash) {
      *slash = '\0';
      snprintf(path, sizeof(path), "%s/%s", self, program);
      if (access(path, X_OK) == 0) {
        execv(path, argv);
        cannot_execute(verb, path, errno);
        return EXIT_CANNOT_EXEC;
      }
    }
  }
  snprintf(path, sizeof(path), "%s/%s", HUTCH_LIBEXECDIR, program);
  execv(path, argv);
  int e = errno;
  cannot_execute(verb, path, e);
  fprintf(stderr, "hint: hutch %s needs %s, installed with hutch (`make install`)\n", verb, program);
  return e == ENOENT ? EXIT_NOT_FOUND : EXIT_CANNOT_EXEC;
}
