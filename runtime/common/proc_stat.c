/* SPDX-License-Identifier: Apache-2.0 */
#include "config.h"

#include "proc_stat.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

/* comm may hold spaces and parentheses: the fields after it start after the
 * last ')'.  Returns the text of field 3 (the state), or NULL. */
static const char *after_comm(const char *text) {
  const char *p = strrchr(text, ')');
  if (p == NULL || p[1] != ' ' || p[2] == '\0')
    return NULL;
  return p + 2;
}

char proc_stat_state(const char *text) {
  const char *p = after_comm(text);
  return p ? p[0] : 0;
}

bool proc_stat_parse(const char *text, int first, size_t n, uint64_t *out) {
  const char *p = after_comm(text);
  if (p == NULL || first < PROC_STAT_STATE + 1)
    return false;
  for (int field = PROC_STAT_STATE; field < first; field++) {
    p = strchr(p, ' ');
    if (p == NULL)
      return false;
    p++;
  }
  for (size_t i = 0; i < n; i++) {
    char *end;
    if (*p < '0' || *p > '9')
      return false;
    out[i] = strtoull(p, &end, 10);
    if (*end != ' ' && *end != '\n' && *end != '\0')
      return false;
    p = *end == ' ' ? end + 1 : end;
    if (i + 1 < n && (*p < '0' || *p > '9'))
      return false;
  }
  return true;
}

char *proc_stat_read(pid_t pid) {
  char path[64];
  if (pid == 0)
    snprintf(path, sizeof(path), "/proc/self/stat");
  else
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
  return read_file_at(AT_FDCWD, path, 4096, NULL);
}

uint64_t proc_stat_start_time(pid_t pid) {
  _cleanup_free_ char *text = proc_stat_read(pid);
  uint64_t start;
  /* A zombie is gone, whatever its start time says: its sandbox is dead. */
  if (text == NULL || proc_stat_state(text) == 'Z' || proc_stat_state(text) == 'X' ||
      !proc_stat_parse(text, PROC_STAT_START_TIME, 1, &start))
    return 0;
  return start;
}

bool proc_stat_alive(pid_t pid, uint64_t start_time) {
  if (pid <= 0 || start_time == 0)
    return false;
  return proc_stat_start_time(pid) == start_time;
}
