/* SPDX-License-Identifier: Apache-2.0 */
#include "config.h"

#include "subnet.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>

#include "proc_stat.h"
#include "util.h"

#define SUBNET_MAX_ENTRIES 16384

int subnet_pick(const struct net_cidr *range, const struct subnet_entry *used, size_t n_used, uint32_t *out) {
  if (range->family != AF_INET || range->prefix > 30) {
    errno = EINVAL;
    return -1;
  }
  uint32_t base;
  memcpy(&base, range->addr, 4);
  base = ntohl(base);
  uint32_t mask = range->prefix == 0 ? 0 : ~0u << (32 - range->prefix);
  base &= mask;
  uint64_t blocks = (uint64_t)1 << (30 - range->prefix);
  for (uint64_t i = 0; i < blocks; i++) {
    uint32_t b = base + (uint32_t)(i << 2);
    bool taken = false;
    for (size_t j = 0; j < n_used && !taken; j++)
      taken = used[j].block == b;
    if (!taken) {
      *out = b;
      return 0;
    }
  }
  errno = ENOSPC;
  return -1;
}

bool subnet_parse_line(const char *line, struct subnet_entry *out) {
  char addr[16], id[40];
  int pid;
  uint64_t start;
  char extra;
  if (sscanf(line, "%15s %39s %d %" SCNu64 " %c", addr, id, &pid, &start, &extra) != 4 || pid <= 0)
    return false;
  struct in_addr in;
  if (inet_pton(AF_INET, addr, &in) != 1)
    return false;
  uint32_t block = ntohl(in.s_addr);
  if ((block & 3) != 0)
    return false;
  *out = (struct subnet_entry){.block = block, .pid = pid, .start_time = start};
  snprintf(out->id, sizeof(out->id), "%s", id);
  return true;
}

void subnet_ntoa(uint32_t addr, char *buf) {
  snprintf(buf, 16, "%u.%u.%u.%u", addr >> 24, (addr >> 16) & 255, (addr >> 8) & 255, addr & 255);
}

char *subnet_format(const struct subnet_entry *e, size_t n) {
  size_t cap = n * 96 + 1, len = 0;
  char *text = xmalloc(cap);
  text[0] = '\0';
  for (size_t i = 0; i < n; i++) {
    char a[16];
    subnet_ntoa(e[i].block, a);
    len +=
        (size_t)snprintf(text + len, cap - len, "%s %s %d %" PRIu64 "\n", a, e[i].id, (int)e[i].pid, e[i].start_time);
  }
  return text;
}

/* The table, locked: every change is read, modified and rewritten under
 * one exclusive flock() of the file itself. */
struct subnet_table {
  int fd;
  struct subnet_entry *e;
  size_t n;
};

static void table_close(struct subnet_table *t) {
  if (t->fd >= 0)
    close(t->fd); /* drops the lock */
  free(t->e);
}

static int table_open(int state_fd, struct subnet_table *t, hutch_error_t *err) {
  *t = (struct subnet_table){.fd = -1};
  t->fd = openat(state_fd, SUBNET_FILE, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (t->fd < 0)
    return hutch_error_sys(err, "network: open the subnet table %s", SUBNET_FILE);
  while (flock(t->fd, LOCK_EX) < 0)
    if (errno != EINTR)
      return hutch_error_sys(err, "network: lock the subnet table");
  char path[64];
  snprintf(path, sizeof(path), "/proc/self/fd/%d", t->fd);
  _cleanup_free_ char *text = read_file_at(AT_FDCWD, path, SUBNET_MAX_ENTRIES * 96, NULL);
  if (text == NULL)
    return hutch_error_sys(err, "network: read the subnet table");
  for (char *save = NULL, *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
    struct subnet_entry e;
    /* A line that does not parse is dropped: the file is ours alone, and
     * a torn write must not block every later start. */
    if (!subnet_parse_line(line, &e) || t->n >= SUBNET_MAX_ENTRIES)
      continue;
    t->e = xrealloc(t->e, (t->n + 1) * sizeof(*t->e));
    t->e[t->n++] = e;
  }
  return 0;
}

static int table_write(struct subnet_table *t, hutch_error_t *err) {
  _cleanup_free_ char *text = subnet_format(t->e, t->n);
  size_t len = strlen(text);
  if (ftruncate(t->fd, 0) < 0 || pwrite(t->fd, text, len, 0) != (ssize_t)len)
    return hutch_error_sys(err, "network: write the subnet table");
  return 0;
}

static void table_reclaim(struct subnet_table *t) {
  size_t kept = 0;
  for (size_t i = 0; i < t->n; i++) {
    if (proc_stat_alive(t->e[i].pid, t->e[i].start_time))
      t->e[kept++] = t->e[i];
  }
  t->n = kept;
}

int subnet_allocate(int state_fd, const struct net_cidr *range, const char *id, pid_t pid, uint32_t *block,
                    hutch_error_t *err) {
  _cleanup_(table_close) struct subnet_table t;
  if (table_open(state_fd, &t, err) < 0)
    return -1;
  table_reclaim(&t);
  if (subnet_pick(range, t.e, t.n, block) < 0) {
    if (errno == EINVAL) {
      hutch_error_sys(err, "network: the subnet range is not an IPv4 range of /30 or larger");
      return hutch_error_hint(err, "set [network] subnet to a range such as 10.89.0.0/16 (hutch-policy(5))");
    }
    hutch_error_sys(err, "network: no free /30 in the subnet range (%zu in use)", t.n);
    return hutch_error_hint(err, "end some sandboxes, or give [network] subnet a larger range (hutch-policy(5))");
  }
  t.e = xrealloc(t.e, (t.n + 1) * sizeof(*t.e));
  struct subnet_entry *e = &t.e[t.n++];
  *e = (struct subnet_entry){.block = *block, .pid = pid, .start_time = proc_stat_start_time(pid)};
  snprintf(e->id, sizeof(e->id), "%s", id);
  return table_write(&t, err);
}

int subnet_set_owner(int state_fd, const char *id, pid_t pid, hutch_error_t *err) {
  _cleanup_(table_close) struct subnet_table t;
  if (table_open(state_fd, &t, err) < 0)
    return -1;
  for (size_t i = 0; i < t.n; i++) {
    if (strcmp(t.e[i].id, id) == 0) {
      t.e[i].pid = pid;
      t.e[i].start_time = proc_stat_start_time(pid);
      return table_write(&t, err);
    }
  }
  return hutch_error_set(err, ENOENT, "network: sandbox %s holds no subnet", id);
}

void subnet_release(int state_fd, const char *id) {
  _cleanup_(table_close) struct subnet_table t;
  hutch_error_t ignored = NULL;
  if (table_open(state_fd, &t, &ignored) < 0) {
    hutch_error_free(&ignored);
    return;
  }
  size_t kept = 0;
  for (size_t i = 0; i < t.n; i++)
    if (strcmp(t.e[i].id, id) != 0)
      t.e[kept++] = t.e[i];
  if (kept == t.n)
    return;
  t.n = kept;
  if (table_write(&t, &ignored) < 0)
    hutch_error_free(&ignored);
}
