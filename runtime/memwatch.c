#include "config.h"

#include "memwatch.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "limits.h"
#include "util.h"

/* More than pids.max can be: a tree this large is a race with pid reuse. */
#define MEMWATCH_MAX_PROCESSES (1u << 22)

bool memwatch_parse_status(const char *status, uint64_t *bytes) {
  uint64_t anon, shmem;
  if (!limits_keyed_value(status, "RssAnon:", &anon) || !limits_keyed_value(status, "RssShmem:", &shmem))
    return false;
  *bytes = (anon + shmem) * 1024;
  return true;
}

int memwatch_next_ms(uint64_t bytes, uint64_t limit, unsigned cpus) {
  if (bytes >= limit)
    return 1;
  double ms = (double)(limit - bytes) / (MEMWATCH_RATE_PER_CPU * (cpus ? cpus : 1)) * 1000.0;
  if (ms >= MEMWATCH_INTERVAL_MS)
    return MEMWATCH_INTERVAL_MS;
  return ms < 1 ? 1 : (int)ms;
}

static size_t read_small(const char *path, char *buf, size_t cap) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return 0;
  size_t len = 0;
  ssize_t n;
  while (len + 1 < cap && (n = read(fd, buf + len, cap - 1 - len)) > 0)
    len += (size_t)n;
  close(fd);
  buf[len] = '\0';
  return len;
}

struct pid_stack {
  long *v;
  size_t n, cap;
};

static void push(struct pid_stack *s, long pid) {
  if (s->n == s->cap) {
    s->cap = s->cap ? s->cap * 2 : 64;
    s->v = xrealloc(s->v, s->cap * sizeof(*s->v));
  }
  s->v[s->n++] = pid;
}

/* Push the children of every thread of `pid` ("self" when pid is 0). */
static void push_children(struct pid_stack *s, long pid) {
  char dir[64];
  if (pid)
    snprintf(dir, sizeof(dir), "/proc/%ld/task", pid);
  else
    snprintf(dir, sizeof(dir), "/proc/self/task");
  DIR *d = opendir(dir);
  if (d == NULL)
    return;
  struct dirent *de;
  static char buf[65536];
  while ((de = readdir(d)) != NULL) {
    if (de->d_name[0] == '.')
      continue;
    char path[sizeof(dir) + sizeof(de->d_name) + 16];
    snprintf(path, sizeof(path), "%s/%s/children", dir, de->d_name);
    if (read_small(path, buf, sizeof(buf)) == 0)
      continue;
    for (char *p = buf; *p;) {
      char *end;
      long child = strtol(p, &end, 10);
      if (end == p)
        break;
      push(s, child);
      p = end;
    }
  }
  closedir(d);
}

void memwatch_sum(uint64_t *bytes, uint64_t *processes) {
  *bytes = *processes = 0;
  struct pid_stack s = {0};
  push_children(&s, 0);
  char status[4096];
  while (s.n > 0 && *processes < MEMWATCH_MAX_PROCESSES) {
    long pid = s.v[--s.n];
    char path[64];
    snprintf(path, sizeof(path), "/proc/%ld/status", pid);
    uint64_t b;
    if (read_small(path, status, sizeof(status)) > 0 && memwatch_parse_status(status, &b))
      *bytes += b;
    (*processes)++;
    push_children(&s, pid);
  }
  free(s.v);
}
