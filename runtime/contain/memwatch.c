/* SPDX-License-Identifier: Apache-2.0 */
#include "config.h"

#include "memwatch.h"

#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "resource_limits.h"
#include "util.h"

/* More than pids.max can be: a tree this large is a race with pid reuse. */
#define MEMWATCH_MAX_PROCESSES (1u << 22)

bool memwatch_parse_status(const char *status, uint64_t *bytes) {
  uint64_t anon, shmem, pte = 0, threads = 1;
  if (!limits_keyed_value(status, "RssAnon:", &anon) || !limits_keyed_value(status, "RssShmem:", &shmem))
    return false;
  /* Every kernel that has the Rss fields has these; kept optional all the
   * same: a thread at the least. */
  (void)limits_keyed_value(status, "VmPTE:", &pte);
  if (!limits_keyed_value(status, "Threads:", &threads) || threads == 0)
    threads = 1;
  *bytes = (anon + shmem + pte) * 1024 + threads * MEMWATCH_TASK_COST;
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

/* Inode numbers seen in one look: each memfd, pipe and epoll instance is
 * counted once however many fds and processes share it. */
struct ino_set {
  uint64_t *v; /* open addressing; 0 is a free slot */
  size_t cap, n;
};

/* true when ino was not in the set (and now is). */
static bool ino_set_add(struct ino_set *s, uint64_t ino) {
  if (ino == 0)
    return true;
  if (2 * (s->n + 1) > s->cap) {
    struct ino_set bigger = {xcalloc(s->cap ? 2 * s->cap : 256, sizeof(uint64_t)), s->cap ? 2 * s->cap : 256, 0};
    for (size_t i = 0; i < s->cap; i++)
      if (s->v[i])
        ino_set_add(&bigger, s->v[i]);
    free(s->v);
    *s = bigger;
  }
  size_t i = (size_t)(ino * 0x9E3779B97F4A7C15ull) & (s->cap - 1);
  for (; s->v[i]; i = (i + 1) & (s->cap - 1))
    if (s->v[i] == ino)
      return false;
  s->v[i] = ino;
  s->n++;
  return true;
}

struct seen {
  struct ino_set memfds, pipes;
};

/* An epoll instance's watches: its fdinfo has a "tfd:" line for each,
 * counted in large reads (a look may meet millions of them). */
static uint64_t epoll_watches(long pid, const char *fd_name) {
  char path[320]; /* d_name: 256 */
  snprintf(path, sizeof(path), "/proc/%ld/fdinfo/%s", pid, fd_name);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return 0;
  static char buf[64 * 1024];
  static const char key[] = "\ntfd:";
  const size_t k = sizeof(key) - 1;
  /* buf[0] carries the last k - 1 bytes of the read before, so that a key
   * split between two reads is found; the text starts after a newline. */
  size_t kept = 1;
  buf[0] = '\n';
  uint64_t n = 0;
  ssize_t got;
  while ((got = read(fd, buf + kept, sizeof(buf) - kept)) > 0) {
    size_t len = kept + (size_t)got;
    for (const char *p = buf; (p = memmem(p, len - (size_t)(p - buf), key, k)) != NULL; p += k)
      n++;
    kept = len < k - 1 ? len : k - 1;
    memmove(buf, buf + len - kept, kept);
  }
  close(fd);
  return n;
}

/* What a process's open files hold that no RssAnon or RssShmem shows: each
 * file's own objects, a memfd written with write(2) and kept open, pipes
 * (at their default size: reading how full each one is would take five
 * calls a pipe, a look of a second for a sandbox of 50000 pipes), epoll
 * watches (an open memfd that is mapped too counts twice, towards killing
 * early).  Sockets are counted from the network namespace
 * (memwatch_sock.c), which lists those no process holds as well. */
static uint64_t fd_bytes(long pid, struct seen *seen) {
  char dir[64];
  snprintf(dir, sizeof(dir), "/proc/%ld/fd", pid);
  DIR *d = opendir(dir);
  if (d == NULL)
    return 0;
  uint64_t bytes = 0;
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    if (de->d_name[0] == '.')
      continue;
    bytes += MEMWATCH_FD_COST;
    char target[64];
    ssize_t n = readlinkat(dirfd(d), de->d_name, target, sizeof(target) - 1);
    if (n <= 0)
      continue;
    target[n] = '\0';
    unsigned long long ino;
    if (strncmp(target, "/memfd:", 7) == 0) {
      struct stat st;
      if (fstatat(dirfd(d), de->d_name, &st, 0) == 0 && ino_set_add(&seen->memfds, (uint64_t)st.st_ino))
        bytes += (uint64_t)st.st_blocks * 512;
    } else if (sscanf(target, "pipe:[%llu]", &ino) == 1) {
      if (ino_set_add(&seen->pipes, ino))
        bytes += MEMWATCH_PIPE_COST;
    } else if (strcmp(target, "anon_inode:[eventpoll]") == 0) {
      /* Every epoll instance shares one anonymous inode: one inherited
       * across a fork counts in each process (towards killing early). */
      bytes += epoll_watches(pid, de->d_name) * MEMWATCH_EPOLL_WATCH_COST;
    }
  }
  closedir(d);
  return bytes;
}

/* The sum over the rows of a /proc/sysvipc table (after its header).  The
 * IPC namespace is the sandbox's own: the tables list its objects only. */
static uint64_t sysv_table(const char *path, uint64_t (*row)(const char *line)) {
  FILE *f = fopen(path, "re");
  if (f == NULL)
    return 0;
  uint64_t bytes = 0;
  char line[512];
  if (fgets(line, sizeof(line), f) != NULL)
    while (fgets(line, sizeof(line), f) != NULL)
      bytes += row(line);
  fclose(f);
  return bytes;
}

/* System V shared memory no process has attached (nattch 0); attached
 * segments are in their processes' RssShmem. */
static uint64_t shm_row(const char *line) {
  unsigned long long v[16];
  /* key shmid perms size cpid lpid nattch uid gid cuid cgid atime dtime ctime rss swap */
  if (sscanf(line, "%llu %llu %llo %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1],
             &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9], &v[10], &v[11], &v[12], &v[13], &v[14],
             &v[15]) == 16 &&
      v[6] == 0)
    return v[14];
  return 0;
}

/* System V messages queued and not received: up to kernel.msgmni queues of
 * kernel.msgmnb bytes, 500 MiB with the defaults. */
static uint64_t msg_row(const char *line) {
  unsigned long long key, id, perms, cbytes, qnum;
  /* key msqid perms cbytes qnum lspid lrpid uid gid cuid cgid stime rtime ctime */
  if (sscanf(line, "%llu %llu %llo %llu %llu", &key, &id, &perms, &cbytes, &qnum) == 5)
    return MEMWATCH_SYSV_QUEUE_COST + cbytes + qnum * MEMWATCH_SYSV_MESSAGE_COST;
  return 0;
}

/* System V semaphore sets: up to kernel.semmns semaphores of a cache line
 * each, a billion with the defaults. */
static uint64_t sem_row(const char *line) {
  unsigned long long key, id, perms, nsems;
  /* key semid perms nsems uid gid cuid cgid otime ctime */
  if (sscanf(line, "%llu %llu %llo %llu", &key, &id, &perms, &nsems) == 4)
    return MEMWATCH_SYSV_QUEUE_COST + nsems * MEMWATCH_SYSV_SEMAPHORE_COST;
  return 0;
}

/* A number from /proc/sys, or `otherwise`. */
static uint64_t sysctl_value(const char *path, uint64_t otherwise) {
  char buf[32];
  uint64_t v;
  if (read_small(path, buf, sizeof(buf)) == 0 || sscanf(buf, "%" SCNu64, &v) != 1)
    return otherwise;
  return v;
}

/* The sockets of the sandbox's network namespace: none to count when
 * sockstat says the namespace has no socket but the watchdog's own (its
 * count takes in every socket the kernel has not freed, a closed sender's
 * that still holds data included). */
static uint64_t socket_bytes(struct memwatch *w, uint64_t bytes, uint64_t limit, unsigned cpus) {
  char sockstat[1024], sockstat6[1024];
  bool v4 = read_small("/proc/net/sockstat", sockstat, sizeof(sockstat)) > 0;
  uint64_t used;
  if (v4 && memwatch_sockstat_field(sockstat, "sockets:", "used", &used) && used <= 1) {
    w->inet_bytes = 0;
    return 0;
  }
  if (w->wmem_max == 0) {
    /* The kernel's defaults where /proc/sys cannot be read. */
    w->wmem_max = sysctl_value("/proc/sys/net/core/wmem_max", 212992);
    w->wmem_default = sysctl_value("/proc/sys/net/core/wmem_default", 212992);
    w->dgram_qlen = sysctl_value("/proc/sys/net/unix/max_dgram_qlen", 10);
  }
  struct memwatch_socks local = {0};
  memwatch_sockets_local(w->diag_fd, &local);
  uint64_t sum = memwatch_socks_bytes(&local, w->wmem_max, w->wmem_default, w->dgram_qlen);
  double now = monotonic_seconds();
  if (memwatch_inet_due((now - w->inet_at) * 1000, bytes + sum + w->inet_bytes, limit, cpus)) {
    bool v6 = read_small("/proc/net/sockstat6", sockstat6, sizeof(sockstat6)) > 0;
    struct memwatch_socks inet = {0};
    memwatch_sockets_inet(w->diag_fd, v4 ? sockstat : NULL, v6 ? sockstat6 : NULL, &inet);
    w->inet_bytes = memwatch_socks_bytes(&inet, 0, 0, 0);
    w->inet_at = now;
  }
  return sum + w->inet_bytes;
}

void memwatch_sum(struct memwatch *w, uint64_t limit, unsigned cpus, uint64_t *bytes, uint64_t *processes) {
  *bytes = *processes = 0;
  struct pid_stack s = {0};
  struct seen seen = {0};
  push_children(&s, 0);
  if (s.n > 0)
    *bytes += sysv_table("/proc/sysvipc/shm", shm_row) + sysv_table("/proc/sysvipc/msg", msg_row) +
              sysv_table("/proc/sysvipc/sem", sem_row);
  char status[4096];
  while (s.n > 0 && *processes < MEMWATCH_MAX_PROCESSES && *bytes <= limit) {
    long pid = s.v[--s.n];
    char path[64];
    snprintf(path, sizeof(path), "/proc/%ld/status", pid);
    uint64_t b;
    if (read_small(path, status, sizeof(status)) > 0 && memwatch_parse_status(status, &b))
      *bytes += b;
    *bytes += fd_bytes(pid, &seen);
    (*processes)++;
    push_children(&s, pid);
  }
  if (s.n > 0 && *processes == 0)
    *processes = 1;
  if (*processes > 0 && w->diag_fd >= 0 && *bytes <= limit)
    *bytes += socket_bytes(w, *bytes, limit, cpus);
  free(s.v);
  free(seen.memfds.v);
  free(seen.pipes.v);
}
