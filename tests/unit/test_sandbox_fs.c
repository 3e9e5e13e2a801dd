/* SPDX-License-Identifier: Apache-2.0 */
/* The pure half of sandbox_fs: paths, pseudo file systems, id maps, bounds. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "proc_tree.h"
#include "sandbox_fs.h"
#include "tap.h"
#include "util.h"

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
  const char *sub = "         0       1000          1\n         1     100000      65535\n";
  tap_is_int((int)sfs_map_inside_of(sub, 1000), 0, "the caller is 0 inside");
  tap_is_int((int)sfs_map_inside_of(sub, 100999), 1000, "range base + 999 is 1000 inside");
  tap_is_int((int)sfs_map_inside_of(sub, 100000 + 65535), -1, "past the range: unmapped");
  tap_is_int((int)sfs_map_inside_of(sub, 99999), -1, "below it: unmapped");
  tap_is_int((int)sfs_map_inside_of("0 0 4294967295\n", 1000), 1000, "root's identity map");
  const char *status = "Name:\thutch-init\nUmask:\t0022\nUid:\t101000\t101000\t101000\t101000\n"
                       "Gid:\t100100\t100100\t100100\t100100\n";
  tap_is_int((int)sfs_status_id(status, "Uid"), 101000, "status: the real uid");
  tap_is_int((int)sfs_status_id(status, "Gid"), 100100, "status: the real gid");
  tap_is_int((int)sfs_status_id("Uidx:\t5\n", "Uid"), -1, "status: only the key itself");
  tap_is_int((int)sfs_status_id("Name:\tx\n", "Uid"), -1, "status: no such line");

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

  pid_t ppid = 0, inner = 0;
  tap_ok(proc_status_parse("Name:\tsh\nPPid:\t4100\nNSpid:\t4200\t7\n", &ppid, &inner) && ppid == 4100 && inner == 7,
         "status: PPid, and the innermost NSpid");
  tap_ok(!proc_status_parse("Name:\tsh\nPPid:\t1\n", &ppid, &inner), "status without NSpid");
  /* init 4000 (1) -> shell 4001 (2) -> cmd 4003 (4) -> child 4002 (3); 4005 (5) apart; 5001 (2) is
   * another sandbox's shell. */
  struct proc_entry e[] = {
      {4000, 10, 1, false},   {4002, 4003, 3, false}, {4001, 4000, 2, false}, {4003, 4001, 4, false},
      {4005, 4000, 5, false}, {5000, 10, 1, false},   {5001, 5000, 2, false},
  };
  tap_is_int((int)proc_tree_select(e, ARRAY_SIZE(e), 4000, 2, false), 2, "the shell's two descendants");
  tap_ok(e[1].chosen && e[3].chosen && !e[2].chosen && !e[0].chosen && !e[4].chosen && !e[6].chosen,
         "a child listed before its parent, not the shell, not a sibling, not another sandbox's");
  tap_is_int((int)proc_tree_select(e, ARRAY_SIZE(e), 4000, 2, true), 3, "with the shell itself");
  tap_ok(!e[6].chosen, "the same inner pid in another sandbox is left alone");
  tap_is_int((int)proc_tree_select(e, ARRAY_SIZE(e), 4000, 99, true), 0, "an unknown leader: none");
  tap_is_int((int)proc_tree_select(e, ARRAY_SIZE(e), 4000, 1, false), 4, "leader 1: every process under the init");
  tap_ok(!e[0].chosen && !e[5].chosen && !e[6].chosen, "not the init itself, nor another sandbox's processes");
  tap_is_int((int)proc_tree_select(e, ARRAY_SIZE(e), 4000, 1, true), 5, "and the init with them");

  /* The other way: a sandbox's own uid_map as the host reads it. */
  const char *proc = "         0     100000      65536\n     65536       1001          1\n";
  tap_is_int((int)sfs_map_inside_of(proc, 100000), 0, "proc map: the range's first id is 0 inside");
  tap_is_int((int)sfs_map_inside_of(proc, 165535), 65535, "its last");
  tap_is_int((int)sfs_map_inside_of(proc, 1001), 65536, "a second line");
  tap_is_int((int)sfs_map_inside_of(proc, 165536), -1, "past the range: unmapped");
  tap_is_int((int)sfs_map_inside_of(proc, 0), -1, "the host's root: unmapped");
  tap_is_int((int)sfs_map_inside_of("", 5), -1, "an empty map maps nothing");
  tap_is_int((int)sfs_map_inside_of("0 0 4294967295\n", 7), 7, "root's identity map");
  pid_t kids[3];
  size_t nk = 0;
  tap_is_int((int)proc_children_parse("4001 4005 ", kids, &nk, 3), 0, "children: all fit");
  tap_ok(nk == 2 && kids[0] == 4001 && kids[1] == 4005, "children: in the file's order");
  tap_is_int((int)proc_children_parse("", kids, &nk, 3), 0, "no children: none added");
  tap_is_int((int)proc_children_parse("7 8 9", kids, &nk, 3), 2, "children beyond the room are counted as lost");
  tap_ok(nk == 3 && kids[2] == 7, "what fits is kept");
  return tap_done();
}
