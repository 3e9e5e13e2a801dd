#include "config.h"

#include "git_init.h"

#define GIT_INIT_TIMEOUT 30.0
#define GIT_INIT_CAPTURE 4096

int git_init_working_dir(struct task_sandbox *t, const char *working_dir) {
  /* The sandbox's binary acting on the sandbox's files; hutch reads
   * nothing it prints. */
  const char *argv[] = {"git", "init", NULL};
  struct run_request req = {.argv = argv, .workdir = working_dir, .timeout = GIT_INIT_TIMEOUT, .cap = GIT_INIT_CAPTURE};
  struct run_result res;
  hutch_error_t err = NULL;
  int r = task_sandbox_run(t, &req, &res, &err);
  hutch_error_free(&err);
  if (r == 0)
    r = res.exit.exec_errno || res.exit.signal ? -1 : res.exit.status;
  run_result_clear(&res);
  return r < 0 ? -1 : r;
}
