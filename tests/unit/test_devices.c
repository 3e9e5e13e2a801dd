/* SPDX-License-Identifier: Apache-2.0 */
/* The child's side of --device (contain/devices.c): the node it binds
 * must be the one the host side checked.  A node swapped for another
 * (another inode, another device number), a symlink put in its place, or
 * a file that is no device is refused with EAGAIN before anything is
 * placed.  Run in a user and mount namespace of the test's own, where
 * open_tree may clone the host's /dev nodes as the sandbox's setup does. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "devices.h"
#include "tap.h"

/* devices_open of one node at `path`, checked as `as` was: its errno
 * (0: opened). */
static int open_as(const char *path, const char *as, bool same_rdev) {
  struct stat st;
  if (stat(as, &st) < 0)
    return -1;
  struct device_node n = {
      .host_path = (char *)path,
      .dest = "/dev/x",
      .rdev = same_rdev ? st.st_rdev : st.st_rdev + 1,
      .id = {st.st_dev, st.st_ino},
      .fd = -1,
  };
  struct device_plan p = {.nodes = &n, .n_nodes = 1};
  hutch_error_t err = NULL;
  int r = devices_open(&p, &err);
  int e = r < 0 ? (err ? err->errnum : -1) : 0;
  hutch_error_free(&err);
  if (n.fd >= 0)
    close(n.fd);
  return e;
}

int main(void) {
  char dir[] = "/tmp/test-devices.XXXXXX";
  if (mkdtemp(dir) == NULL)
    return 1;
  char link[64], file[64];
  snprintf(link, sizeof(link), "%s/link", dir);
  snprintf(file, sizeof(file), "%s/file", dir);
  if (symlink("/dev/zero", link) < 0 || close(open(file, O_CREAT | O_WRONLY, 0600)) < 0)
    return 1;
  /* The results are reported through a pipe by a child in the namespaces. */
  int fds[2];
  if (pipe(fds) < 0)
    return 1;
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    int res[5] = {-2, -2, -2, -2, -2};
    if (unshare(CLONE_NEWUSER | CLONE_NEWNS) == 0) {
      res[0] = open_as("/dev/zero", "/dev/zero", true);
      res[1] = open_as("/dev/zero", "/dev/full", true);  /* swapped for another node */
      res[2] = open_as("/dev/zero", "/dev/zero", false); /* another device number */
      res[3] = open_as(link, "/dev/zero", true);         /* a symlink in its place */
      res[4] = open_as(file, file, true);                /* no device */
    }
    if (write(fds[1], res, sizeof(res)) != (ssize_t)sizeof(res))
      _exit(1);
    _exit(0);
  }
  close(fds[1]);
  int res[5];
  bool got = read(fds[0], res, sizeof(res)) == (ssize_t)sizeof(res);
  waitpid(pid, NULL, 0);
  unlink(link);
  unlink(file);
  rmdir(dir);
  if (!got || res[0] == -2) {
    printf("1..0 # SKIP no user and mount namespace here\n");
    return 0;
  }
  tap_is_int(res[0], 0, "the node checked is bound");
  tap_is_int(res[1], EAGAIN, "a node swapped for another is refused");
  tap_is_int(res[2], EAGAIN, "a node of another device number is refused");
  tap_ok(res[3] != 0, "a symlink in the node's place is refused (errno %d)", res[3]);
  tap_is_int(res[4], EAGAIN, "a file that is no device is refused");
  return tap_done();
}
