/* SPDX-License-Identifier: Apache-2.0 */
/* The state directory's pure helpers: mountinfo's discard option, the
 * emptiness check the spare sandbox directories are taken by, and the
 * maker file of a start under way as state_read gives it. */
#include "config.h"

#include <fcntl.h>
#include <string.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "state.h"
#include "tap.h"
#include "util.h"

int main(void) {
  const char *ext4 = "29 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw,relatime,discard,resv_strict\n";
  tap_ok(state_mountinfo_discard(ext4, 29), "ext4 with discard in its options");
  tap_ok(!state_mountinfo_discard(ext4, 30), "another mount id is not it");
  tap_ok(!state_mountinfo_discard("29 1 254:0 / / rw - ext4 /dev/vda rw,relatime,nodiscard\n", 29), "nodiscard");
  tap_ok(!state_mountinfo_discard("29 1 0:5 / /b rw - btrfs /dev/b rw,ssd,discard=async,space_cache=v2\n", 29),
         "btrfs discard=async is not synchronous");
  tap_ok(state_mountinfo_discard("29 1 0:5 / /x rw - xfs /dev/x rw,discard\n", 29), "discard last");
  tap_ok(!state_mountinfo_discard("29 1 0:5 / /discard rw - tmpfs discard rw,size=10k\n", 29),
         "the mount point or source named discard is not the option");
  tap_ok(!state_mountinfo_discard("29 1 0:5 / / rw,discard\n", 29), "no separator: not a mountinfo line");

  char dir[] = "/tmp/test_state.XXXXXX";
  tap_ok(mkdtemp(dir) != NULL, "a directory");
  int fd = open(dir, O_RDONLY | O_DIRECTORY);
  tap_is_int(dir_is_empty(fd), 1, "an empty directory is empty");
  int dfd = open(dir, O_RDONLY | O_DIRECTORY);
  mkdirat(dfd, "sub", 0700);
  tap_is_int(dir_is_empty(fd), 0, "one with a subdirectory is not");
  close(openat(dfd, "sub/file", O_CREAT | O_WRONLY, 0600));
  tap_is_int(remove_dir_contents_fd(fd), 0, "emptied");
  tap_is_int(dir_is_empty(fd), 1, "and then empty");

  /* A start under way: a directory with only its maker file. */
  const char *id = "0123456789ab";
  mkdirat(dfd, id, 0700);
  int sbfd = openat(dfd, id, O_RDONLY | O_DIRECTORY);
  struct sandbox_state st;
  tap_is_int(state_read(dfd, id, &st, NULL), 0, "a directory without state.json reads");
  tap_ok(!st.starting && st.owner_pid == 0, "without a maker file: no maker (listed dead, as before)");
  state_clear(&st);
  tap_is_int(state_write_maker(sbfd, "/sys/fs/cgroup/hutch/x", NULL), 0, "a maker recorded");
  tap_is_int(state_read(dfd, id, &st, NULL), 0, "read");
  tap_ok(st.starting && st.owner_pid == getpid() && st.owner_start_time > 0, "the maker is this process");
  tap_is_str(st.limits.cgroup, "/sys/fs/cgroup/hutch/x", "with its cgroup");
  tap_ok(!state_is_running(&st), "nothing runs in it");
  state_clear(&st);
  tap_is_int(state_write_maker(sbfd, "", NULL), 0, "a maker without a cgroup");
  tap_is_int(state_read(dfd, id, &st, NULL), 0, "read");
  tap_ok(st.starting && st.limits.cgroup[0] == '\0', "an empty cgroup is none");
  state_clear(&st);
  static const char *const bad[] = {"", "12", "12 34", "x 34\n\n", "-3 34\n\n", "12 34 5\n\n", "12 34\nno-newline"};
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    write_file_at(sbfd, STATE_MAKER_FILE, bad[i], strlen(bad[i]), 0600);
    state_read(dfd, id, &st, NULL);
    tap_ok(!st.starting && st.owner_pid == 0 && st.limits.cgroup[0] == '\0',
           "a maker file that does not parse is none (%zu)", i);
    state_clear(&st);
  }
  char longcg[400];
  memset(longcg, 'c', sizeof(longcg) - 1);
  longcg[sizeof(longcg) - 1] = '\0';
  tap_is_int(state_write_maker(sbfd, longcg, NULL), 0, "a cgroup path too long for the record");
  state_read(dfd, id, &st, NULL);
  tap_ok(!st.starting, "is no maker either");
  state_clear(&st);
  state_drop_maker(sbfd);
  state_read(dfd, id, &st, NULL);
  tap_ok(!st.starting, "dropped: no maker");
  state_clear(&st);
  close(sbfd);
  unlinkat(dfd, id, AT_REMOVEDIR);

  close(dfd);
  close(fd);
  rmdir(dir);
  return tap_done();
}
