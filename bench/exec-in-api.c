/* SPDX-License-Identifier: Apache-2.0 */
/* The per-command cost an agent loop pays: /bin/true run in a live
 * sandbox, in-process through the runtime library (no hutch process
 * start), both through the process handle (hutch_proc_spawn + wait + free)
 * and through the blocking hutch_sandbox_exec(), next to posix_spawn() +
 * waitpid() of the host's /bin/true from the same process, interleaved
 * in a shuffled order.
 * Prints one JSON object; handle_vs_host is the ratio of the medians.
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
  struct hutch_sandbox_config cfg = {
      .rootfs = image.rootfs, .image = argv[1], .policy = policy, .rootfs_subordinate_ids = image.ids_preserved};
  if (hutch_sandbox_create(&cfg, &sb, &err) < 0)
    return fail(&err);
  int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
  const char *const true_argv[] = {"/bin/true", NULL};
  struct hutch_process proc = {.argv = true_argv, .stdio = {devnull, devnull, devnull}};
  const struct hutch_spawn spec = {
      .argv = true_argv, .stdio = {{HUTCH_STDIO_FD, devnull}, {HUTCH_STDIO_FD, devnull}, {HUTCH_STDIO_FD, devnull}}};
  double *in = calloc((size_t)runs, sizeof(double)), *host = calloc((size_t)runs, sizeof(double));
  double *handle = calloc((size_t)runs, sizeof(double));
  /* The three run in a shuffled order each round: whatever runs right
   * after the host's process has ended pays for part of its teardown
   * (about 50 us here), which a fixed order would always charge to the
   * same one.  A fixed seed: every run of the bench shuffles alike. */
  unsigned seed = 1;
  for (int i = 0; i < runs + 10; i++) {
    int order[3] = {0, 1, 2};
    for (int k = 2; k > 0; k--) {
      int j = (int)(rand_r(&seed) % (unsigned)(k + 1));
      int t = order[k];
      order[k] = order[j];
      order[j] = t;
    }
    for (int k = 0; k < 3; k++) {
      int which = order[k];
      struct hutch_exit ex;
      double t0 = now_ms();
      if (which == 0) {
        if (hutch_sandbox_exec(sb, &proc, &ex, &err) < 0 || hutch_exit_code(&ex) != 0) {
          hutch_sandbox_destroy(sb, NULL);
          return err ? fail(&err) : 1;
        }
      } else if (which == 1) {
        pid_t pid;
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        for (int fd = 0; fd < 3; fd++)
          posix_spawn_file_actions_adddup2(&fa, devnull, fd);
        if (posix_spawn(&pid, "/bin/true", &fa, NULL, (char *const *)true_argv, environ) != 0)
          return 1;
        posix_spawn_file_actions_destroy(&fa);
        waitpid(pid, NULL, 0);
      } else {
        struct hutch_proc *p = NULL;
        if (hutch_proc_spawn(sb, &spec, &p, &err) < 0 || hutch_proc_wait(p, -1, &ex, &err) < 0 ||
            hutch_exit_code(&ex) != 0) {
          hutch_proc_free(p);
          hutch_sandbox_destroy(sb, NULL);
          return err ? fail(&err) : 1;
        }
        hutch_proc_free(p);
      }
      double took = now_ms() - t0;
      if (i >= 10) /* the first ten warm up */
        (which == 0 ? in : which == 1 ? host : handle)[i - 10] = took;
    }
  }
  hutch_sandbox_destroy(sb, NULL);
  double h50 = pct(handle, runs, 50), s50 = pct(host, runs, 50);
  printf("{\"runs\": %d, \"handle_median_ms\": %.3f, \"handle_p90_ms\": %.3f, \"exec_in_median_ms\": %.3f, "
         "\"exec_in_p90_ms\": %.3f, \"host_spawn_median_ms\": %.3f, \"host_spawn_p90_ms\": %.3f, "
         "\"handle_vs_host\": %.2f}\n",
         runs, h50, pct(handle, runs, 90), pct(in, runs, 50), pct(in, runs, 90), s50, pct(host, runs, 90), h50 / s50);
  hutch_image_clear(&image);
  hutch_policy_free(policy);
  hutch_store_close(store);
  return 0;
}
