/* The per-command cost an agent loop pays: hutch_sandbox_exec() of
 * /bin/true into a live sandbox, in-process through the runtime library
 * (no hutch process start), next to posix_spawn()+waitpid() of the host's
 * /bin/true from the same process.  Prints one JSON object.
 *
 *   exec-in-api IMAGE RUNS    (HUTCH_STORE, HUTCH_POLICY as for hutch) */
#include "config.h"

#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include "hutch.h"

extern char **environ;

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double pct(double *v, int n, double p) {
  qsort(v, (size_t)n, sizeof(*v), cmp);
  int i = (int)(p / 100.0 * (n - 1) + 0.5);
  return v[i];
}

static int fail(hutch_error_t *err) {
  hutch_error_print(stderr, "exec-in-api", *err);
  hutch_error_free(err);
  return 1;
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: exec-in-api IMAGE RUNS\n");
    return 2;
  }
  int runs = atoi(argv[2]);
  if (runs < 10)
    runs = 10;
  hutch_error_t err = NULL;
  struct hutch_store *store = NULL;
  struct hutch_policy *policy = NULL;
  struct hutch_image image = {0};
  struct hutch_sandbox *sb = NULL;
  if (hutch_store_open(NULL, &store, &err) < 0 || hutch_policy_load(NULL, &policy, &err) < 0 ||
      hutch_image_lookup(store, argv[1], &image, &err) < 0)
    return fail(&err);
  struct hutch_sandbox_config cfg = {.rootfs = image.rootfs,
                                     .image = argv[1],
                                     .policy = policy,
                                     .rootfs_subordinate_ids = image.ids_preserved};
  if (hutch_sandbox_create(&cfg, &sb, &err) < 0)
    return fail(&err);
  int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
  const char *const true_argv[] = {"/bin/true", NULL};
  struct hutch_process proc = {.argv = true_argv, .stdio = {devnull, devnull, devnull}};
  double *in = calloc((size_t)runs, sizeof(double)), *host = calloc((size_t)runs, sizeof(double));
  for (int i = 0; i < runs + 10; i++) {
    struct hutch_exit ex;
    double t0 = now_ms();
    if (hutch_sandbox_exec(sb, &proc, &ex, &err) < 0 || hutch_exit_code(&ex) != 0) {
      hutch_sandbox_destroy(sb, NULL);
      return err ? fail(&err) : 1;
    }
    double t1 = now_ms();
    pid_t pid;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    for (int fd = 0; fd < 3; fd++)
      posix_spawn_file_actions_adddup2(&fa, devnull, fd);
    if (posix_spawn(&pid, "/bin/true", &fa, NULL, (char *const *)true_argv, environ) != 0)
      return 1;
    posix_spawn_file_actions_destroy(&fa);
    waitpid(pid, NULL, 0);
    double t2 = now_ms();
    if (i >= 10) { /* the first ten warm up */
      in[i - 10] = t1 - t0;
      host[i - 10] = t2 - t1;
    }
  }
  hutch_sandbox_destroy(sb, NULL);
  printf("{\"runs\": %d, \"exec_in_median_ms\": %.3f, \"exec_in_p90_ms\": %.3f, "
         "\"host_spawn_median_ms\": %.3f, \"host_spawn_p90_ms\": %.3f}\n",
         runs, pct(in, runs, 50), pct(in, runs, 90), pct(host, runs, 50), pct(host, runs, 90));
  hutch_image_clear(&image);
  hutch_policy_free(policy);
  hutch_store_close(store);
  return 0;
}
