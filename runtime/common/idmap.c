/* SPDX-License-Identifier: Apache-2.0 */
#include "config.h"

#include "idmap.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

int idmap_find_subordinate(const char *content, const char *user, uint32_t id, uint32_t *start, uint32_t *count) {
  if (content == NULL)
    return 0;
  char idbuf[16];
  snprintf(idbuf, sizeof(idbuf), "%" PRIu32, id);
  const char *line = content;
  while (*line) {
    const char *end = strchr(line, '\n');
    size_t len = end ? (size_t)(end - line) : strlen(line);
    const char *c1 = memchr(line, ':', len);
    if (line[0] != '#' && c1 != NULL) {
      size_t namelen = (size_t)(c1 - line);
      bool mine = (user != NULL && strlen(user) == namelen && memcmp(line, user, namelen) == 0) ||
                  (strlen(idbuf) == namelen && memcmp(line, idbuf, namelen) == 0);
      if (mine) {
        const char *rest = c1 + 1;
        size_t restlen = len - namelen - 1;
        const char *c2 = memchr(rest, ':', restlen);
        if (c2 == NULL)
          return -1;
        uint32_t s, n;
        if (!parse_u32_digits(rest, (size_t)(c2 - rest), &s) ||
            !parse_u32_digits(c2 + 1, restlen - (size_t)(c2 - rest) - 1, &n))
          return -1;
        if (n == 0)
          return -1;
        *start = s;
        *count = n;
        return 1;
      }
    }
    if (end == NULL)
      break;
    line = end + 1;
  }
  return 0;
}

static void compute_one(uint32_t id, const char *user, const char *subfile, bool root, struct idmap *map,
                        bool *have_range) {
  memset(map, 0, sizeof(*map));
  if (root) {
    /* Real root may write any map: the identity keeps the store's owners
     * (unpacked as real uids) and the sandbox's ids the same. */
    map->ranges[0] = (struct idmap_range){0, 0, IDMAP_INSIDE_IDS};
    map->n = 1;
    *have_range = true;
    return;
  }
  map->ranges[0] = (struct idmap_range){0, id, 1};
  map->n = 1;
  uint32_t start, count;
  if (idmap_find_subordinate(subfile, user, id, &start, &count) == 1) {
    if (count > IDMAP_INSIDE_IDS - 1)
      count = IDMAP_INSIDE_IDS - 1;
    map->ranges[1] = (struct idmap_range){1, start, count};
    map->n = 2;
    *have_range = true;
  } else {
    *have_range = false;
  }
}

void idmap_compute(uid_t uid, gid_t gid, const char *user, const char *subuid, const char *subgid,
                   struct idmap_set *out) {
  bool root = uid == 0;
  bool have_uids, have_gids;
  compute_one(uid, user, subuid, root, &out->uid, &have_uids);
  compute_one(gid, user, subgid, root, &out->gid, &have_gids);
  out->setgroups_allowed = true;
  if (root) {
    out->kind = IDMAP_ROOT;
  } else if (have_uids && have_gids) {
    out->kind = IDMAP_SUBORDINATE;
  } else {
    out->setgroups_allowed = false;
    /* Both maps must agree in shape, or files would get owners the other
     * map cannot express: fall back to the single mapping for both. */
    out->uid.n = 1;
    out->gid.n = 1;
    out->kind = IDMAP_SINGLE;
  }
}

bool idmap_identity_within(const char *proc_map, struct idmap *out) {
  memset(out, 0, sizeof(*out));
  const char *line = proc_map ? proc_map : "";
  while (*line && out->n < IDMAP_MAX_RANGES) {
    unsigned long long inside, outside, count;
    if (sscanf(line, "%llu %llu %llu", &inside, &outside, &count) == 3 && inside < IDMAP_INSIDE_IDS && count > 0) {
      unsigned long long end = inside + count;
      if (end > IDMAP_INSIDE_IDS)
        end = IDMAP_INSIDE_IDS;
      out->ranges[out->n++] = (struct idmap_range){(uint32_t)inside, (uint32_t)inside, (uint32_t)(end - inside)};
    }
    const char *nl = strchr(line, '\n');
    if (nl == NULL)
      break;
    line = nl + 1;
  }
  return idmap_to_host(out, 0) == 0;
}

void idmap_single(const struct idmap_set *from, struct idmap_set *out) {
  *out = *from;
  if (from->kind == IDMAP_ROOT)
    return;
  out->uid.n = out->gid.n = 1;
  out->kind = IDMAP_SINGLE;
  out->setgroups_allowed = false;
}

char *idmap_format(const struct idmap *map) {
  char *buf = xcalloc(1, 64 * IDMAP_MAX_RANGES);
  size_t off = 0;
  for (size_t i = 0; i < map->n; i++)
    off += (size_t)snprintf(buf + off, 64, "%" PRIu32 " %" PRIu32 " %" PRIu32 "\n", map->ranges[i].inside,
                            map->ranges[i].outside, map->ranges[i].count);
  return buf;
}

int64_t idmap_to_host(const struct idmap *map, uint32_t inside) {
  for (size_t i = 0; i < map->n; i++) {
    const struct idmap_range *r = &map->ranges[i];
    if (inside >= r->inside && inside - r->inside < r->count)
      return (int64_t)r->outside + (inside - r->inside);
  }
  return -1;
}
