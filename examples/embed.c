/* SPDX-License-Identifier: Apache-2.0 */
/* Embedding hutch: start a sandbox from an image in the store, run a shell
 * command in it with its output on a pipe, print what it wrote and how it
 * ended, tear the sandbox down.  Built against an installed hutch:
 *
 *   cc embed.c $(pkg-config --cflags --libs hutch) -o embed
 *   ./embed IMAGE 'echo hello from $(uname -n)'
 *
 * HUTCH_STORE and HUTCH_POLICY choose the store and policy as they do for
 * the hutch command; the defaults are the user's store and the installed
 * policy.  See hutch(3). */
#include <hutch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Prints the error once, with its hint, and frees it. */
static int fail(const char *step, hutch_error_t *err) {
  hutch_error_print(stderr, step, *err);
  hutch_error_free(err);
  return 1;
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: embed IMAGE COMMAND\n");
    return 2;
  }
  /* A program compiled against one major version must not run with another. */
  if (strncmp(hutch_version(), HUTCH_VERSION_STRING, strlen(HUTCH_VERSION_STRING)) != 0)
    fprintf(stderr, "embed: compiled against hutch %s, running with %s\n", HUTCH_VERSION_STRING, hutch_version());

  hutch_error_t err = NULL;
  struct hutch_store *store = NULL;
  struct hutch_policy *policy = NULL;
  struct hutch_image image = {0};
  if (hutch_store_open(NULL, &store, &err) < 0)
    return fail("open the store", &err);
  if (hutch_policy_load(NULL, &policy, &err) < 0)
    return fail("load the policy", &err);
  if (hutch_image_lookup(store, argv[1], &image, &err) < 0)
    return fail("find the image", &err);

  struct hutch_sandbox_config cfg = {
      .rootfs = image.rootfs, .image = argv[1], .policy = policy, .rootfs_subordinate_ids = image.ids_preserved};
  struct hutch_sandbox *sb = NULL;
  if (hutch_sandbox_create(&cfg, &sb, &err) < 0)
    return fail("create the sandbox", &err);

  /* The command's output comes back on a pipe; a short command's output
   * fits in the pipe's buffer, so it can be read after the wait. */
  int out[2];
  if (pipe(out) < 0) {
    perror("embed: pipe");
    hutch_sandbox_destroy(sb, NULL);
    return 1;
  }
  const char *const cmd[] = {"/bin/sh", "-c", argv[2], NULL};
  struct hutch_process proc = {.argv = cmd, .stdio = {STDIN_FILENO, out[1], STDERR_FILENO}, .timeout = 30};
  struct hutch_exit ex;
  int r = hutch_sandbox_exec(sb, &proc, &ex, &err);
  close(out[1]);
  if (r < 0) {
    hutch_sandbox_destroy(sb, NULL);
    return fail("run the command", &err);
  }
  char buf[4096];
  ssize_t n;
  while ((n = read(out[0], buf, sizeof(buf))) > 0)
    fwrite(buf, 1, (size_t)n, stdout);
  close(out[0]);
  printf("sandbox %s: exit code %d after %.3f s\n", ex.id, hutch_exit_code(&ex), ex.wall_seconds);

  if (hutch_sandbox_destroy(sb, &err) < 0)
    return fail("destroy the sandbox", &err);
  hutch_image_clear(&image);
  hutch_policy_free(policy);
  hutch_store_close(store);
  return hutch_exit_code(&ex);
}
