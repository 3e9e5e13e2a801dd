/* SPDX-License-Identifier: Apache-2.0 */
/* A stacked image read without mounting it: whiteouts and opaque
 * directories of an upper layer hide what is below them. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "image_layers.h"
#include "tap.h"
#include "util.h"

static char root[64];

static void put(const char *rel, const char *text) {
  _cleanup_free_ char *path = xasprintf("%s/%s", root, rel);
  for (char *s = strchr(path + strlen(root) + 1, '/'); s; s = strchr(s + 1, '/')) {
    *s = '\0';
    mkdir(path, 0755);
    *s = '/';
  }
  FILE *f = fopen(path, "w");
  if (f == NULL || fputs(text, f) < 0 || fclose(f) != 0)
    abort();
}

static void dir(const char *rel) {
  _cleanup_free_ char *path = xasprintf("%s/%s", root, rel);
  mkdir(path, 0755);
}

/* 1 made, 0 not possible here (no CAP_MKNOD), to be skipped. */
static int whiteout(const char *rel) {
  _cleanup_free_ char *path = xasprintf("%s/%s", root, rel);
  return mknod(path, S_IFCHR | 0000, makedev(0, 0)) == 0;
}

static int opaque(const char *rel) {
  _cleanup_free_ char *path = xasprintf("%s/%s", root, rel);
  return setxattr(path, "user.overlay.opaque", "y", 1, 0) == 0 ||
         setxattr(path, "trusted.overlay.opaque", "y", 1, 0) == 0;
}

/* The text of rel as the stack shows it, "-" when hidden or absent. */
static char *show(const char *const *trees, const char *rel) {
  _cleanup_free_ char *path = image_layers_path(trees, rel);
  if (path == NULL)
    return xstrdup("-");
  char *text = read_file_at(AT_FDCWD, path, 4096, NULL);
  return text ? text : xstrdup("?");
}

static void collect(const char *path, const char *name, void *data) {
  (void)path;
  char *list = data;
  strcat(list, name);
  strcat(list, " ");
}

int main(void) {
  snprintf(root, sizeof(root), "/tmp/hutch-test-layers.XXXXXX");
  if (mkdtemp(root) == NULL)
    abort();
  /* top: the newest layer; mid; base. */
  put("base/etc/apt/sources.list", "base list");
  put("base/etc/apt/sources.list.d/a.list", "a");
  put("base/etc/apt/sources.list.d/b.list", "b");
  put("base/etc/apt/sources.list.d/c.list", "c");
  put("base/opt/keep/file", "base keep");
  put("base/opt/gone/file", "base gone");
  put("mid/etc/apt/sources.list.d/b.list", "b from mid");
  put("mid/etc/apt/sources.list.d/d.list", "d");
  put("mid/opt/shadow/x", "mid");
  put("top/etc/hostname", "top");
  dir("top/etc/apt");
  char *b = xasprintf("%s/base", root), *m = xasprintf("%s/mid", root), *t = xasprintf("%s/top", root);
  const char *trees[] = {t, m, b, NULL};

  char *s;
  tap_is_str(s = show(trees, "etc/apt/sources.list"), "base list", "a file only the base has shows through");
  free(s);
  tap_is_str(s = show(trees, "etc/apt/sources.list.d/b.list"), "b from mid", "the upper layer's version wins");
  free(s);
  tap_is_str(s = show(trees, "etc/hostname"), "top", "a file of the top layer");
  free(s);
  tap_is_str(s = show(trees, "etc/none"), "-", "a name no layer has");
  free(s);
  char list[256] = "";
  image_layers_list(trees, "etc/apt/sources.list.d", collect, list);
  tap_ok(strstr(list, "a.list") && strstr(list, "b.list") && strstr(list, "c.list") && strstr(list, "d.list") &&
             strlen(list) == strlen("a.list b.list c.list d.list "),
         "a directory lists each name once, from every layer (%s)", list);

  if (whiteout("top/etc/apt/sources.list") && whiteout("mid/etc/apt/sources.list.d/a.list") && whiteout("top/opt")) {
    tap_is_str(s = show(trees, "etc/apt/sources.list"), "-", "a whiteout deletes the file below it");
    free(s);
    tap_is_str(s = show(trees, "opt/keep/file"), "-", "a whiteout of a directory deletes what is in it");
    free(s);
    list[0] = '\0';
    image_layers_list(trees, "etc/apt/sources.list.d", collect, list);
    tap_ok(strstr(list, "a.list") == NULL && strstr(list, "c.list") != NULL,
           "a listing leaves whited-out names out (%s)", list);
  } else {
    printf("ok %d - whiteouts # SKIP no mknod of 0:0 here (%s)\n", ++tap_count, strerror(errno));
  }
  if (opaque("mid/etc/apt/sources.list.d")) {
    list[0] = '\0';
    image_layers_list(trees, "etc/apt/sources.list.d", collect, list);
    tap_ok(strstr(list, "c.list") == NULL && strstr(list, "b.list") && strstr(list, "d.list"),
           "an opaque directory hides the layers below it (%s)", list);
    tap_is_str(s = show(trees, "etc/apt/sources.list.d/c.list"), "-", "and their files");
    free(s);
  } else {
    printf("ok %d - opaque directories # SKIP no overlay xattr here (%s)\n", ++tap_count, strerror(errno));
  }
  free(b);
  free(m);
  free(t);
  _cleanup_free_ char *rm = xasprintf("rm -rf '%s'", root);
  if (system(rm) != 0)
    tap_ok(0, "remove %s", root);
  return tap_done();
}
