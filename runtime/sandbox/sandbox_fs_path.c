/* SPDX-License-Identifier: Apache-2.0 */
#include "config.h"

#include "sandbox_fs.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "util.h"

/* <linux/magic.h> names; spelled out so that an old header still builds. */
static const int64_t pseudo_types[] = {
    0x9fa0,     /* proc */
    0x62656572, /* sysfs */
    0x27e0eb,   /* cgroup */
    0x63677270, /* cgroup2 */
    0x64626720, /* debugfs */
    0x74726163, /* tracefs */
    0x73636673, /* securityfs */
    0xcafe4a11, /* bpf */
    0x62656570, /* configfs */
    0xde5e81e4, /* efivarfs */
    0x6165676c, /* pstore */
    0x6e736673, /* nsfs */
    0x1cd1,     /* devpts */
    0x42494e4d, /* binfmt_misc */
};

bool sfs_pseudo_fs(int64_t f_type) {
  for (size_t i = 0; i < ARRAY_SIZE(pseudo_types); i++)
    if ((f_type & 0xffffffff) == pseudo_types[i])
      return true;
  return false;
}

int64_t sfs_map_inside_root(const char *proc_map) {
  for (const char *line = proc_map; line && *line;) {
    unsigned long long inside, outside, count;
    if (sscanf(line, "%llu %llu %llu", &inside, &outside, &count) == 3 && inside == 0 && count > 0 &&
        outside <= UINT32_MAX)
      return (int64_t)outside;
    line = strchr(line, '\n');
    if (line)
      line++;
  }
  return -1;
}

int64_t sfs_map_inside_of(const char *proc_map, uint32_t host) {
  for (const char *line = proc_map; line && *line;) {
    unsigned long long inside, outside, count;
    if (sscanf(line, "%llu %llu %llu", &inside, &outside, &count) == 3 && host >= outside && host - outside < count &&
        inside + (host - outside) <= UINT32_MAX)
      return (int64_t)(inside + (host - outside));
    line = strchr(line, '\n');
    if (line)
      line++;
  }
  return -1;
}

int64_t sfs_status_id(const char *status, const char *key) {
  size_t n = strlen(key);
  for (const char *line = status; line && *line;) {
    unsigned long long id;
    if (strncmp(line, key, n) == 0 && line[n] == ':' && sscanf(line + n + 1, "%llu", &id) == 1 && id <= UINT32_MAX)
      return (int64_t)id;
    line = strchr(line, '\n');
    if (line)
      line++;
  }
  return -1;
}

bool sfs_split(const char *path, char **parent, char **name) {
  size_t end = strlen(path);
  while (end > 1 && path[end - 1] == '/')
    end--;
  size_t start = end;
  while (start > 0 && path[start - 1] != '/')
    start--;
  size_t n = end - start;
  if (n == 0 || (n == 1 && path[start] == '.') || (n == 2 && path[start] == '.' && path[start + 1] == '.'))
    return false;
  size_t plen = start;
  while (plen > 1 && path[plen - 1] == '/')
    plen--;
  *parent = plen == 0 ? xstrdup(".") : xstrndup(path, plen);
  *name = xstrndup(path + start, n);
  return true;
}

char *sfs_join(const char *dir, const char *name) {
  size_t l = strlen(dir);
  return xasprintf("%s%s%s", dir, l > 0 && dir[l - 1] == '/' ? "" : "/", name);
}

void sfs_budget_init(struct sfs_budget *b, const struct hutch_copy_limits *limits, double now) {
  memset(b, 0, sizeof(*b));
  b->max_bytes = limits ? limits->bytes : 0;
  b->max_entries = limits && limits->entries ? limits->entries : HUTCH_COPY_ENTRIES;
  b->max_depth = limits && limits->depth ? limits->depth : HUTCH_COPY_DEPTH;
  b->deadline = now + (limits && limits->seconds > 0 ? limits->seconds : HUTCH_COPY_SECONDS);
}

const char *sfs_budget_entry(struct sfs_budget *b, unsigned depth, double now) {
  if (now >= b->deadline)
    return "time";
  if (b->entries >= b->max_entries)
    return "entries";
  if (depth > b->max_depth)
    return "depth";
  b->entries++;
  return NULL;
}

uint64_t sfs_budget_bytes_left(const struct sfs_budget *b, uint64_t done) {
  if (b->max_bytes == 0)
    return UINT64_MAX;
  return done >= b->max_bytes ? 0 : b->max_bytes - done;
}
