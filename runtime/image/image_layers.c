/* SPDX-License-Identifier: Apache-2.0 */
/* Reading a stacked image's files without mounting it (image_layers.h). */
#include "config.h"

#include "image_layers.h"

#include <dirent.h>
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>

#include "layer.h"
#include "util.h"

static bool is_whiteout(const struct stat *st) {
  return S_ISCHR(st->st_mode) && st->st_rdev == 0;
}

/* overlayfs marks a directory opaque with "y" in user.overlay.opaque (an
 * unprivileged mount's upper directory) or trusted.overlay.opaque. */
static bool is_opaque(const char *dir) {
  char v[2];
  ssize_t n = lgetxattr(dir, "user.overlay.opaque", v, sizeof(v));
  if (n < 0)
    n = lgetxattr(dir, "trusted.overlay.opaque", v, sizeof(v));
  return n == 1 && v[0] == 'y';
}

enum verdict {
  PASS,  /* this tree says nothing of rel: look below */
  SHOWS, /* rel is here */
  HIDES, /* rel is not here, and nothing below may show it */
};

/* What one tree says of rel.  Its ancestors decide first: one that is a
 * whiteout or not a directory hides rel, an opaque one hides what lies
 * below this tree. */
static enum verdict tree_verdict(const char *tree, const char *rel, char **path) {
  bool opaque = false;
  _cleanup_free_ char *prefix = xstrdup(rel);
  for (char *s = strchr(prefix, '/'); s; s = strchr(s + 1, '/')) {
    *s = '\0';
    _cleanup_free_ char *dir = xasprintf("%s/%s", tree, prefix);
    *s = '/';
    struct stat st;
    if (lstat(dir, &st) < 0)
      return opaque ? HIDES : PASS; /* nor anything deeper */
    if (is_whiteout(&st) || !S_ISDIR(st.st_mode))
      return HIDES;
    opaque = opaque || is_opaque(dir);
  }
  _cleanup_free_ char *p = xasprintf("%s/%s", tree, rel);
  struct stat st;
  if (lstat(p, &st) == 0) {
    if (is_whiteout(&st))
      return HIDES;
    *path = steal_pointer(&p);
    return SHOWS;
  }
  return opaque ? HIDES : PASS;
}

char *image_layers_path(const char *const *trees, const char *rel) {
  for (size_t i = 0; trees[i]; i++) {
    char *path = NULL;
    switch (tree_verdict(trees[i], rel, &path)) {
    case SHOWS:
      return path;
    case HIDES:
      return NULL;
    case PASS:
      break;
    }
  }
  return NULL;
}

void image_layers_list(const char *const *trees, const char *rel, image_layers_entry_fn fn, void *data) {
  struct layer_paths seen = {0}; /* names of one directory: no ancestors */
  for (size_t i = 0; trees[i]; i++) {
    _cleanup_free_ char *dir = NULL;
    enum verdict v = tree_verdict(trees[i], rel, &dir);
    if (v == HIDES)
      break;
    if (v == PASS)
      continue;
    _cleanup_dir_ DIR *d = opendir(dir);
    struct dirent *de;
    while (d && (de = readdir(d)) != NULL) {
      if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0 || layer_paths_has(&seen, de->d_name))
        continue;
      layer_paths_add(&seen, de->d_name);
      _cleanup_free_ char *path = xasprintf("%s/%s", dir, de->d_name);
      struct stat st;
      if (lstat(path, &st) == 0 && !is_whiteout(&st))
        fn(path, de->d_name, data);
    }
    /* The directory itself opaque: nothing below it shows. */
    if (is_opaque(dir))
      break;
  }
  layer_paths_clear(&seen);
}
