/* hutch run: the agent loop lives in its own program, hutch-agent, so that
 * libcurl and libyaml never load into `hutch exec`.  This verb only finds
 * that program and hands it the command line. */
#include "config.h"

#include <errno.h>
#include <linux/limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static void cannot_execute(const char *path, int errnum) {
  char *why = hutch_errno_format(errnum, "cannot execute %s", path);
  fprintf(stderr, "hutch run: %s\n", why);
  free(why);
}

int cmd_run(int argc, char **argv) {
  (void)argc;
  char self[PATH_MAX];
  char path[PATH_MAX + 32];
  ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  /* Beside the hutch binary first: a build tree runs its own agent. */
  if (n > 0) {
    self[n] = '\0';
    char *slash = strrchr(self, '/');
    if (slash) {
      *slash = '\0';
      snprintf(path, sizeof(path), "%s/hutch-agent", self);
      if (access(path, X_OK) == 0) {
        execv(path, argv);
        cannot_execute(path, errno);
        return EXIT_CANNOT_EXEC;
      }
    }
  }
  snprintf(path, sizeof(path), "%s/hutch-agent", HUTCH_LIBEXECDIR);
  execv(path, argv);
  int e = errno;
  cannot_execute(path, e);
  fprintf(stderr, "hint: hutch run needs hutch-agent, installed with hutch (`make install`)\n");
  return e == ENOENT ? EXIT_NOT_FOUND : EXIT_CANNOT_EXEC;
}
