/* SPDX-License-Identifier: Apache-2.0 */
/* Id-map computation from /etc/subuid-style contents. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "idmap.h"
#include "tap.h"

int main(void) {
  const char *subuid = "# comment\nalice:100000:65536\nbob:165536:65536\n1002:300000:1000\n";
  uint32_t start = 0, count = 0;

  tap_is_int(idmap_find_subordinate(subuid, "alice", 1000, &start, &count), 1, "alice found by name");
  tap_is_int(start, 100000, "alice's range start");
  tap_is_int(count, 65536, "alice's range count");
  tap_is_int(idmap_find_subordinate(subuid, "carol", 1002, &start, &count), 1, "found by numeric uid");
  tap_is_int(start, 300000, "numeric entry start");
  tap_is_int(idmap_find_subordinate(subuid, "dave", 1003, &start, &count), 0, "no range for dave");
  tap_is_int(idmap_find_subordinate(NULL, "alice", 1000, &start, &count), 0, "missing file means no range");
  tap_is_int(idmap_find_subordinate("alice:abc:10\n", "alice", 1000, &start, &count), -1, "malformed start");
  tap_is_int(idmap_find_subordinate("alice:10\n", "alice", 1000, &start, &count), -1, "missing count");
  tap_is_int(idmap_find_subordinate("alice:10:0\n", "alice", 1000, &start, &count), -1, "zero count");
  tap_is_int(idmap_find_subordinate("alice:99999999999:1\n", "alice", 1000, &start, &count), -1, "overflow");
  tap_is_int(idmap_find_subordinate("alicex:1:1\nalice:5:6", "alice", 1000, &start, &count), 1,
             "prefix of another name does not match");
  tap_is_int(start, 5, "the exact name's range");

  struct idmap_set m;
  idmap_compute(1000, 1000, "alice", subuid, subuid, &m);
  tap_is_int(m.kind, IDMAP_SUBORDINATE, "user with ranges: subordinate maps");
  tap_ok(m.setgroups_allowed, "setgroups stays allowed with newgidmap");
  tap_is_int(m.uid.n, 2, "two uid ranges");
  char *s = idmap_format(&m.uid);
  tap_is_str(s, "0 1000 1\n1 100000 65535\n", "uid map text: 0 is the user, 1.. the range");
  free(s);
  tap_is_int(idmap_to_host(&m.uid, 0), 1000, "inside 0 -> the user");
  tap_is_int(idmap_to_host(&m.uid, 1000), 100999, "inside 1000 -> range base + 999");
  tap_is_int(idmap_to_host(&m.uid, 65536), -1, "beyond the map: unmapped");

  idmap_compute(1003, 1003, "dave", subuid, subuid, &m);
  tap_is_int(m.kind, IDMAP_SINGLE, "user without ranges: single map");
  tap_ok(!m.setgroups_allowed, "setgroups is denied with the single map");
  s = idmap_format(&m.gid);
  tap_is_str(s, "0 1003 1\n", "single gid map");
  free(s);

  idmap_compute(1000, 1000, "alice", subuid, "bob:1:2\n", &m);
  tap_is_int(m.kind, IDMAP_SINGLE, "a uid range without a gid range falls back to single for both");
  tap_is_int(m.uid.n, 1, "uid map reduced to one range");

  idmap_compute(0, 0, "root", NULL, NULL, &m);
  tap_is_int(m.kind, IDMAP_ROOT, "root: identity");
  s = idmap_format(&m.uid);
  tap_is_str(s, "0 0 65536\n", "root's identity map covers 0..65535");
  free(s);

  idmap_compute(1000, 1000, "alice", subuid, subuid, &m);
  struct idmap_set single;
  idmap_single(&m, &single);
  tap_is_int(single.kind, IDMAP_SINGLE, "the single mapping of a subordinate set");
  tap_is_int(single.uid.n, 1, "keeps one uid range");
  tap_is_int(idmap_to_host(&single.uid, 0), 1000, "uid 0 is still the user");
  tap_is_int(idmap_to_host(&single.uid, 1), -1, "and nothing else is mapped");
  idmap_compute(0, 0, "root", NULL, NULL, &m);
  idmap_single(&m, &single);
  tap_is_int(single.kind, IDMAP_ROOT, "root's identity map stays as it is");

  /* idmap_for_sandbox() computes a sandbox's single mapping without
   * looking the user's range up: it must be the same as the single mapping
   * of the looked-up set. */
  struct idmap_set direct;
  idmap_compute(1000, 1000, NULL, NULL, NULL, &direct);
  idmap_compute(1000, 1000, "alice", subuid, subuid, &m);
  idmap_single(&m, &single);
  tap_is_int(direct.kind, single.kind, "no lookup: the same kind as the single mapping of a range");
  tap_is_int(direct.setgroups_allowed, single.setgroups_allowed, "no lookup: setgroups denied likewise");
  char *a = idmap_format(&direct.uid), *b = idmap_format(&single.uid);
  tap_is_str(a, b, "no lookup: the same uid map");
  free(a);
  free(b);
  a = idmap_format(&direct.gid);
  b = idmap_format(&single.gid);
  tap_is_str(a, b, "no lookup: the same gid map");
  free(a);
  free(b);

  struct idmap id;
  tap_ok(idmap_identity_within("         0          0 4294967295\n", &id), "identity in the initial namespace");
  s = idmap_format(&id);
  tap_is_str(s, "0 0 65536\n", "one line, ids 0..65535");
  free(s);
  tap_ok(idmap_identity_within("0 1001 1\n1 100000 65535\n", &id), "identity as root of a rootless namespace");
  s = idmap_format(&id);
  tap_is_str(s, "0 0 1\n1 1 65535\n", "follows the outer map's lines");
  free(s);
  tap_ok(idmap_identity_within("0 1000 1\n", &id), "identity in a single-id namespace");
  s = idmap_format(&id);
  tap_is_str(s, "0 0 1\n", "uid 0 alone");
  free(s);
  tap_ok(!idmap_identity_within("1000 1000 1\n", &id), "no identity when 0 is unmapped");
  tap_ok(!idmap_identity_within("", &id), "nor from an empty map");

  const char *big = "alice:100000:1000000\n";
  idmap_compute(1000, 1000, "alice", big, big, &m);
  tap_is_int(m.uid.ranges[1].count, 65535, "a large range is capped at 65535 extra ids");
  return tap_done();
}
