/* SPDX-License-Identifier: Apache-2.0 */
/* The state directory's pure helpers: mountinfo's discard option, and the
 * emptiness check the spare sandbox directories are taken by. */
#include "config.h"

#include <fcntl.h>
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
  close(dfd);
  close(fd);
  rmdir(dir);
  return tap_done();
}
