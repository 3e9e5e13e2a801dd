/* SPDX-License-Identifier: Apache-2.0 */
/* hutch-init: the small init a long-lived sandbox's init execs once it is
 * handed over (init_exec.h).  Static, linked with init's own code and
 * nothing of the CLI: it idles in a fraction of the fork's memory. */
#include "config.h"

#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "init.h"
#include "init_exec.h"
#include "util.h"

int main(int argc, char **argv) {
  /* First: exec made this process dumpable again, and the sandbox must
   * not ptrace its init or read its memory (contain.c locked that). */
  if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0 || argc != 2)
    _exit(125);
  char *end;
  long fd = strtol(argv[1], &end, 10);
  struct stat st;
  if (*end != '\0' || fd < 0 || fd > 1 << 20 || fstat((int)fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size <= 0 ||
      st.st_size > 1 << 22)
    _exit(125);
  size_t len = (size_t)st.st_size;
  char *blob = xmalloc(len);
  struct init_config cfg;
  if (pread((int)fd, blob, len, 0) != (ssize_t)len || init_config_decode(blob, len, &cfg) < 0)
    _exit(125);
  close((int)fd); /* the blob stays: cfg points into it */
  init_idle_main(&cfg);
}
