/* SPDX-License-Identifier: Apache-2.0 */
/* Whiteout names and the written-path set of an image layer (layer.h). */
#include "config.h"

#include "layer.h"

#include <stdint.h>
#include <string.h>

#include "util.h"

char *layer_clean_path(const char *path) {
  size_t len = strlen(path);
  char *out = xmalloc(len + 1);
  size_t n = 0;
  const char *p = path;
  while (*p) {
    while (*p == '/')
      p++;
    const char *end = strchrnul(p, '/');
    size_t clen = (size_t)(end - p);
    if (clen > 0 && !(clen == 1 && p[0] == '.')) {
      if (n > 0)
        out[n++] = '/';
      memcpy(out + n, p, clen);
      n += clen;
    }
    p = end;
  }
  out[n] = '\0';
  return out;
}

enum layer_whiteout layer_classify(const char *clean, char **target) {
  *target = NULL;
  const char *slash = strrchr(clean, '/');
  const char *base = slash ? slash + 1 : clean;
  size_t dirlen = slash ? (size_t)(slash - clean) : 0;
  if (strncmp(base, LAYER_WHITEOUT_PREFIX, strlen(LAYER_WHITEOUT_PREFIX)) != 0)
    return LAYER_PLAIN;
  if (strcmp(base, LAYER_OPAQUE_MARKER) == 0) {
    *target = xstrndup(clean, dirlen);
    return LAYER_OPAQUE;
  }
  const char *name = base + strlen(LAYER_WHITEOUT_PREFIX);
  /* ".wh..wh.*" is reserved for markers like the opaque one; a name that is
   * not one component would delete something else than a sibling. */
  if (name[0] == '\0' || strcmp(name, ".") == 0 || strcmp(name, "..") == 0 ||
      strncmp(name, LAYER_WHITEOUT_PREFIX, strlen(LAYER_WHITEOUT_PREFIX)) == 0)
    return LAYER_BAD;
  *target = slash ? xasprintf("%.*s/%s", (int)dirlen, clean, name) : xstrdup(name);
  return LAYER_WHITEOUT;
}

static uint64_t hash_str(const char *s, size_t len) {
  uint64_t h = 1469598103934665603ULL; /* FNV-1a */
  for (size_t i = 0; i < len; i++)
    h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
  return h;
}

static bool find_slot(const struct layer_paths *set, const char *s, size_t len, size_t *slot) {
  size_t i = (size_t)hash_str(s, len) & (set->cap - 1);
  while (set->slots[i]) {
    if (strlen(set->slots[i]) == len && memcmp(set->slots[i], s, len) == 0) {
      *slot = i;
      return true;
    }
    i = (i + 1) & (set->cap - 1);
  }
  *slot = i;
  return false;
}

static void grow(struct layer_paths *set) {
  size_t old_cap = set->cap;
  char **old = set->slots;
  set->cap = old_cap ? old_cap * 2 : 256;
  set->slots = xcalloc(set->cap, sizeof(char *));
  for (size_t i = 0; i < old_cap; i++) {
    if (old[i] == NULL)
      continue;
    size_t slot;
    find_slot(set, old[i], strlen(old[i]), &slot);
    set->slots[slot] = old[i];
  }
  free(old);
}

/* Adding "a/b/c" adds "a/b" and "a": stop at the first ancestor already
 * there, since its own ancestors were added with it. */
void layer_paths_add(struct layer_paths *set, const char *clean) {
  size_t len = strlen(clean);
  while (len > 0) {
    if ((set->n + 1) * 2 > set->cap)
      grow(set);
    size_t slot;
    if (find_slot(set, clean, len, &slot))
      return;
    set->slots[slot] = xstrndup(clean, len);
    set->n++;
    while (len > 0 && clean[len - 1] != '/')
      len--;
    if (len > 0)
      len--; /* the '/' */
  }
}

bool layer_paths_has(const struct layer_paths *set, const char *clean) {
  size_t slot;
  return set->cap > 0 && find_slot(set, clean, strlen(clean), &slot);
}

void layer_paths_clear(struct layer_paths *set) {
  for (size_t i = 0; i < set->cap; i++)
    free(set->slots[i]);
  free(set->slots);
  memset(set, 0, sizeof(*set));
}
