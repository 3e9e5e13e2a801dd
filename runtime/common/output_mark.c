/* SPDX-License-Identifier: Apache-2.0 */
/* The mark of hutch's output directories (hutch.h: hutch_output_mark,
 * hutch_output_marked): a run's or a benchmark's directory holds files a
 * sandbox chose, so nothing of hutch reads its settings from there. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "error.h"
#include "hutch.h"
#include "util.h"

static const char mark_text[] = "This directory holds files that hutch sandboxes wrote.\n"
                                "hutch reads no settings file from here or below (hutch-security(7)).\n";

int hutch_output_mark(const char *dir, hutch_error_t *err) {
  _cleanup_close_ int d = open(dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (d < 0)
    return hutch_error_sys(err, "open %s", dir);
  _cleanup_close_ int fd = openat(d, HUTCH_OUTPUT_MARK, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0444);
  if (fd < 0 && errno == EEXIST)
    return 0;
  if (fd < 0 || write_all(fd, mark_text, sizeof(mark_text) - 1) < 0)
    return hutch_error_sys(err, "write %s/%s", dir, HUTCH_OUTPUT_MARK);
  return 0;
}

char *hutch_output_marked(const char *path) {
  _cleanup_free_ char *real = realpath(path, NULL);
  if (real == NULL)
    return xstrdup(path);
  /* From the directory itself up to "/": a mark of any kind, even a
   * dangling link, counts. */
  for (;;) {
    _cleanup_free_ char *mark = xasprintf("%s%s" HUTCH_OUTPUT_MARK, real, strcmp(real, "/") == 0 ? "" : "/");
    struct stat st;
    if (lstat(mark, &st) == 0 || errno != ENOENT)
      return xstrdup(real);
    char *slash = strrchr(real, '/');
    if (slash == NULL || strcmp(real, "/") == 0)
      return NULL;
    if (slash == real)
      slash[1] = '\0';
    else
      *slash = '\0';
  }
}
