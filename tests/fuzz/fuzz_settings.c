/* SPDX-License-Identifier: Apache-2.0 */
/* hutch run's settings file (hutch.yaml, LLM-in-Sandbox's config.yaml):
 * read through settings_parse() as `hutch run --settings FILE TASK` does,
 * so that every key's value goes through the setting it sets.  The file is
 * written to a private temporary directory, removed at exit. */
#define _GNU_SOURCE
#include "config.h"

#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "fuzz.h"
#include "settings.h"

static char dir[] = "/tmp/hutch-fuzz-settings.XXXXXX";
static char file[sizeof(dir) + 16];

static void cleanup(void) {
  unlink(file);
  rmdir(dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > (1u << 20))
    return 0;
  if (file[0] == '\0') {
    if (mkdtemp(dir) == NULL)
      abort();
    snprintf(file, sizeof(file), "%s/hutch.yaml", dir);
    atexit(cleanup);
    /* Not the settings of whoever runs the fuzzer. */
    unsetenv("LLM_IN_SANDBOX_CONFIG");
    /* No python3 for `lis: true` to run: it fails at once, spawning none. */
    setenv("PATH", "/nonexistent", 1);
  }
  int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0 || (size && write(fd, data, size) != (ssize_t)size))
    abort();
  close(fd);
  char *argv[] = {"hutch run", "--settings", file, "the task", NULL};
  struct settings s;
  settings_parse(4, argv, &s);
  settings_free(&s);
  return 0;
}
