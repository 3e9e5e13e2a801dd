/* SPDX-License-Identifier: Apache-2.0 */
/* state_update (state_update.c): processes changing one sandbox's record
 * at once lose none of each other's changes, and a change refused by its
 * function leaves the record as it was. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "state.h"
#include "tap.h"
#include "util.h"

#define ID "0123456789ab"
#define ROUNDS 200
#define WRITERS 4

static int bump(struct sandbox_state *st, void *data, hutch_error_t *err) {
  (void)data;
  (void)err;
  st->created++;
  return 0;
}

static int refuse(struct sandbox_state *st, void *data, hutch_error_t *err) {
  (void)data;
  st->created = -1;
  return hutch_error_set(err, EPERM, "refused");
}

int main(void) {
  char dir[] = "/tmp/test_state_update.XXXXXX";
  tap_ok(mkdtemp(dir) != NULL, "a state root");
  int rootfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  mkdirat(rootfd, ID, 0700);
  int sbfd = openat(rootfd, ID, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  struct sandbox_state st = {.id = ID, .pid = 1, .long_lived = true};
  tap_is_int(state_write(sbfd, &st, NULL), 0, "a record written");

  /* Each writer reads, adds one and writes back ROUNDS times; without the
   * lock, two that read the same value write the same sum and one is lost. */
  for (int w = 0; w < WRITERS; w++) {
    if (fork() == 0) {
      for (int i = 0; i < ROUNDS; i++)
        if (state_update(rootfd, ID, bump, NULL, NULL) < 0)
          _exit(1);
      _exit(0);
    }
  }
  int failed = 0, status;
  while (wait(&status) > 0)
    failed += !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  tap_is_int(failed, 0, "every writer's updates succeeded");
  struct sandbox_state got;
  tap_is_int(state_read(rootfd, ID, &got, NULL), 0, "the record read back");
  tap_is_int((int)got.created, WRITERS * ROUNDS, "no update was lost among %d writers", WRITERS);
  state_clear(&got);

  hutch_error_t err = NULL;
  tap_is_int(state_update(rootfd, ID, refuse, NULL, &err), -1, "a refused change fails");
  tap_is_int(err ? err->errnum : 0, EPERM, "with the function's error");
  hutch_error_free(&err);
  tap_is_int(state_read(rootfd, ID, &got, NULL), 0, "read again");
  tap_is_int((int)got.created, WRITERS * ROUNDS, "the record is as it was");
  state_clear(&got);

  tap_is_int(state_update(rootfd, "fedcba987654", bump, NULL, &err), -1, "a missing sandbox fails");
  tap_is_int(err ? err->errnum : 0, ENOENT, "with ENOENT");
  hutch_error_free(&err);
  tap_is_int(state_update(rootfd, "../x", bump, NULL, &err), -1, "a path is not an id");
  tap_is_int(err ? err->errnum : 0, EINVAL, "with EINVAL");
  hutch_error_free(&err);

  close(sbfd);
  int dfd = open(dir, O_RDONLY | O_DIRECTORY);
  remove_dir_contents_fd(dfd);
  close(dfd);
  close(rootfd);
  rmdir(dir);
  return tap_done();
}
