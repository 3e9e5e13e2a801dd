#include "config.h"

#include "memwatch.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "resource_limits.h"
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

/* Memory no process maps is in no RssAnon or RssShmem: a memfd written
 * with write(2) and kept open.  Counted from the process's open files,
 * each memfd once per look (`seen`, inode numbers; an open memfd that is
 * mapped too counts twice, towards killing early). */
static uint64_t memfd_bytes(long pid, struct pid_stack *seen) {
  char dir[64];
  snprintf(dir, sizeof(dir), "/proc/%ld/fd", pid);
  DIR *d = opendir(dir);
  if (d == NULL)
    return 0;
  uint64_t bytes = 0;
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    char target[64];
    ssize_t n = readlinkat(dirfd(d), de->d_name, target, sizeof(target) - 1);
    if (n < 7 || strncmp(target, "/memfd:", 7) != 0)
      continue;
    struct stat st;
    if (fstatat(dirfd(d), de->d_name, &st, 0) < 0)
      continue;
    bool counted = false;
    for (size_t i = 0; i < seen->n && !counted; i++)
      counted = seen->v[i] == (long)st.st_ino;
    if (counted)
      continue;
    push(seen, (long)st.st_ino);
    bytes += (uint64_t)st.st_blocks * 512;
  }
  closedir(d);
  return bytes;
}

/* System V shared memory no process has attached (nattch 0): the IPC
 * namespace is the sandbox's own, so /proc/sysvipc/shm lists its segments
 * only.  Attached ones are in their processes' RssShmem. */
static uint64_t sysv_unattached_bytes(void) {
  FILE *f = fopen("/proc/sysvipc/shm", "re");
  if (f == NULL)
    return 0;
  uint64_t bytes = 0;
  char line[512];
  if (fgets(line, sizeof(line), f) == NULL) { /* the header */
    fclose(f);
    return 0;
  }
  while (fgets(line, sizeof(line), f) != NULL) {
    unsigned long long v[16];
    /* key shmid perms size cpid lpid nattch uid gid cuid cgid atime dtime ctime rss swap */
    if (sscanf(line, "%llu %llu %llo %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1],
               &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9], &v[10], &v[11], &v[12], &v[13], &v[14],
               &v[15]) == 16 &&
        v[6] == 0)
      bytes += v[14];
  }
  fclose(f);
  return bytes;
}

void memwatch_sum(uint64_t *bytes, uint64_t *processes) {
  *bytes = *processes = 0;
  struct pid_stack s = {0}, memfds = {0};
  push_children(&s, 0);
  char status[4096];
  while (s.n > 0 && *processes < MEMWATCH_MAX_PROCESSES) {
    long pid = s.v[--s.n];
    char path[64];
    snprintf(path, sizeof(path), "/proc/%ld/status", pid);
    uint64_t b;
    if (read_small(path, status, sizeof(status)) > 0 && memwatch_parse_status(status, &b))
      *bytes += b;
    *bytes += memfd_bytes(pid, &memfds);
    (*processes)++;
    push_children(&s, pid);
  }
  if (*processes > 0)
    *bytes += sysv_unattached_bytes();
  free(s.v);
  free(memfds.v);
}
