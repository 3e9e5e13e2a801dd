/* The pure half of sandbox_fs: paths, pseudo file systems, id maps, bounds. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "sandbox_fs.h"
#include "tap.h"

static void split_is(const char *path, const char *parent, const char *name) {
  char *p = NULL, *n = NULL;
  bool ok = sfs_split(path, &p, &n);
  if (parent == NULL) {
    tap_ok(!ok, "%s names nothing to create", path);
    return;
  }
  tap_ok(ok && strcmp(p, parent) == 0 && strcmp(n, name) == 0, "%s splits into %s and %s", path, parent, name);
  free(p);
  free(n);
}

int main(void) {
  split_is("/a/b", "/a", "b");
  split_is("/a//b//", "/a", "b");
  split_is("/b", "/", "b");
  split_is("b", ".", "b");
  split_is("/", NULL, NULL);
  split_is("/a/..", NULL, NULL);
  split_is("/a/.", NULL, NULL);

  char *j = sfs_join("/tmp/", "x");
  tap_is_str(j, "/tmp/x", "join does not double a slash");
  free(j);
  j = sfs_join("/tmp", "x");
  tap_is_str(j, "/tmp/x", "join adds one");
  free(j);

  tap_ok(sfs_pseudo_fs(0x9fa0), "proc is a pseudo file system");
  tap_ok(sfs_pseudo_fs(0x62656572), "sysfs is");
  tap_ok(!sfs_pseudo_fs(0x01021994), "tmpfs is not");
  tap_ok(!sfs_pseudo_fs(0x794c7630), "overlayfs is not");

  tap_is_int((int)sfs_map_inside_root("         0     100000      65536\n"), 100000, "a subordinate range");
  tap_is_int((int)sfs_map_inside_root("         0       1000          1\n"), 1000, "the single mapping");
  tap_is_int((int)sfs_map_inside_root("1 100001 65535\n0 1000 1\n"), 1000, "0 on a later line");
  tap_is_int((int)sfs_map_inside_root("1 100001 65535\n"), -1, "0 unmapped");
  tap_is_int((int)sfs_map_inside_root(""), -1, "an empty map");

  struct sfs_budget b;
  struct hutch_copy_limits lim = {.bytes = 10, .entries = 2, .depth = 3, .seconds = 5};
  sfs_budget_init(&b, &lim, 100);
  tap_ok(sfs_budget_entry(&b, 1, 100) == NULL, "a first entry passes");
  tap_is_str(sfs_budget_entry(&b, 4, 100), "depth", "too deep");
  tap_ok(sfs_budget_entry(&b, 3, 100) == NULL, "a second entry passes");
  tap_is_str(sfs_budget_entry(&b, 1, 100), "entries", "a third is over the entry cap");
  tap_is_str(sfs_budget_entry(&b, 1, 105), "time", "past the one deadline");
  tap_ok(sfs_budget_bytes_left(&b, 4) == 6, "bytes left");
  tap_ok(sfs_budget_bytes_left(&b, 12) == 0, "none left past the bound");
  sfs_budget_init(&b, NULL, 0);
  tap_ok(b.max_entries == HUTCH_COPY_ENTRIES && b.max_depth == HUTCH_COPY_DEPTH && b.deadline == HUTCH_COPY_SECONDS &&
             sfs_budget_bytes_left(&b, 1) == UINT64_MAX,
         "defaults: entry, depth and time bounds, no byte bound");
  return tap_done();
}
