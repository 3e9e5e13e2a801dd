/* SPDX-License-Identifier: Apache-2.0 */
#include "config.h"

#include "transfer.h"

#include <errno.h>
#include <string.h>

#include "util.h"

bool transfer_safe_relpath(const char *p) {
  if (strncmp(p, "./", 2) == 0)
    p += 2;
  if (*p == '\0' || *p == '/')
    return false;
  for (const char *c = p; *c;) {
    const char *slash = strchr(c, '/');
    size_t n = slash ? (size_t)(slash - c) : strlen(c);
    if (n == 0 || (n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
      return false;
    c += n;
    if (*c == '/')
      c++;
  }
  return true;
}

static struct hutch_sandbox *live(struct task_sandbox *t, hutch_error_t *err) {
  if (t->removed) {
    hutch_error_set(err, ECANCELED, "the sandbox was stopped");
    return NULL;
  }
  return t->sb;
}

int transfer_in(struct task_sandbox *t, const char *src, const char *dest, struct hutch_copy_report *rep,
                hutch_error_t *err) {
  memset(rep, 0, sizeof(*rep));
  struct hutch_sandbox *sb = live(t, err);
  if (sb == NULL)
    return -1;
  if (hutch_sandbox_copy_in(sb, src, dest, NULL, rep, err) < 0) {
    hutch_error_wrap(err, "copy %s into the sandbox", src);
    return hutch_error_hint(err, "--input-dir names a directory whose contents are copied in");
  }
  return 0;
}

int transfer_out(struct task_sandbox *t, const char *src, const char *dest, uint64_t limit,
                 struct hutch_copy_report *rep, hutch_error_t *err) {
  memset(rep, 0, sizeof(*rep));
  struct hutch_sandbox *sb = live(t, err);
  if (sb == NULL)
    return -1;
  struct hutch_copy_limits limits = {.bytes = limit};
  if (hutch_sandbox_copy_out(sb, src, dest, &limits, rep, err) < 0)
    return hutch_error_wrap(err, "copy %s back", src);
  return 0;
}

int transfer_update_out(struct task_sandbox *t, const char *src, const char *dest,
                        const struct hutch_copy_limits *limits, struct hutch_copy_report *rep, hutch_error_t *err) {
  memset(rep, 0, sizeof(*rep));
  struct hutch_sandbox *sb = live(t, err);
  if (sb == NULL)
    return -1;
  if (hutch_sandbox_update_out(sb, src, dest, limits, rep, err) < 0)
    return hutch_error_wrap(err, "copy %s back", src);
  return 0;
}
