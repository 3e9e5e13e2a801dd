/* compute_score in a sandbox of its own: reward.py is the task set's code,
 * but the answer it reads is the model's, written in a sandbox; so it runs
 * under hutch exec, without network, bounded in time, memory and
 * processes, and the answer reaches it as a JSON file (data), never as
 * code.  A fixed driver prints one JSON line: {"score": X} or {"error"}. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "error.h"
#include "util.h"

#define REWARD_OUT_MAX (64u << 10)

/* The driver's own output goes to the real stdout only at the end: what
 * reward.py prints is moved to stderr. */
static const char driver_py[] =
    "import importlib.util, json, math, sys\n"
    "out, sys.stdout = sys.stdout, sys.stderr\n"
    "try:\n"
    "    with open('/hutch-reward/args.json', encoding='utf-8') as f:\n"
    "        a = json.load(f)\n"
    "    spec = importlib.util.spec_from_file_location('reward', '/hutch-task/reward.py')\n"
    "    mod = importlib.util.module_from_spec(spec)\n"
    "    spec.loader.exec_module(mod)\n"
    "    if not hasattr(mod, 'compute_score'):\n"
    "        raise AttributeError('reward.py must define compute_score function')\n"
    "    s = float(mod.compute_score(a['answer'], a['ground_truth'], **a['kwargs']))\n"
    "    res = {'score': s} if math.isfinite(s) else {'error': 'compute_score returned %r' % s, 'kind': "
    "'ValueError'}\n"
    "except BaseException as e:\n"
    "    res = {'error': '%s: %s' % (type(e).__name__, e), 'kind': type(e).__name__}\n"
    "out.write('\\n' + json.dumps(res) + '\\n')\n"
    "out.flush()\n";

static char *last_line(char *buf) {
  size_t n = strlen(buf);
  while (n > 0 && buf[n - 1] == '\n')
    buf[--n] = '\0';
  char *nl = strrchr(buf, '\n');
  return nl ? nl + 1 : buf;
}

int bench_python(const struct bench_opts *o, const struct bench_set *set, const char *dir, const char *driver,
                 const cJSON *args, size_t cap, cJSON **result, char **why) {
  *result = NULL;
  *why = NULL;
  hutch_error_t err = NULL;
  if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
    *why = hutch_errno_format(errno, "mkdir %s", dir);
    return -1;
  }
  _cleanup_free_ char *text = cJSON_PrintUnformatted(args);
  _cleanup_free_ char *args_path = xasprintf("%s/args.json", dir);
  _cleanup_free_ char *driver_path = xasprintf("%s/driver.py", dir);
  /* Scratch files of this scoring only: no fsync. */
  if (write_file_at(AT_FDCWD, args_path, text, strlen(text), 0644) < 0 ||
      write_file_at(AT_FDCWD, driver_path, driver, strlen(driver), 0644) < 0) {
    *why = hutch_errno_format(errno, "write %s", dir);
    return -1;
  }
  _cleanup_free_ char *bind_reward = xasprintf("--bind=%s:/hutch-reward:ro", dir);
  _cleanup_free_ char *bind_task = xasprintf("--bind=%s:/hutch-task:ro", set->dir);
  _cleanup_free_ char *timeout = xasprintf("--timeout=%g", o->reward_timeout);
  /* The scoring sandbox's audit log beside its directory, not in it: that
   * directory is bound into the sandbox. */
  _cleanup_free_ char *audit = xasprintf("--audit=%s.audit.jsonl", dir);
  /* Without --reward-memory, the policy's limits (memory, pids, disk), which
   * fall back to rlimits where cgroups cannot be used. */
  _cleanup_free_ char *memory = o->reward_memory ? xasprintf("--memory=%s", o->reward_memory) : NULL;
  _cleanup_free_ char *rootfs = o->reward_rootfs ? xasprintf("--rootfs=%s", o->reward_rootfs) : NULL;
  _cleanup_free_ char *store = o->s.store ? xasprintf("--store=%s", o->s.store) : NULL;
  _cleanup_free_ char *state = o->s.state_dir ? xasprintf("--state-dir=%s", o->s.state_dir) : NULL;
  _cleanup_free_ char *policy = o->s.policy ? xasprintf("--policy=%s", o->s.policy) : NULL;
  const char *argv[24];
  size_t n = 0;
  argv[n++] = o->hutch;
  argv[n++] = "exec";
  argv[n++] = "--net=none";
  argv[n++] = "--workdir=/hutch-reward";
  argv[n++] = "--env=HOME=/tmp";
  argv[n++] = timeout;
  argv[n++] = audit;
  argv[n++] = bind_reward;
  argv[n++] = bind_task;
  const char *opt[] = {rootfs, store, state, policy, memory, o->s.no_cgroups ? "--no-cgroups" : NULL};
  for (size_t i = 0; i < ARRAY_SIZE(opt); i++)
    if (opt[i])
      argv[n++] = opt[i];
  argv[n++] = "--";
  argv[n++] = "python3";
  argv[n++] = "-I";
  argv[n++] = "/hutch-reward/driver.py";
  argv[n] = NULL;

  int out[2], errp[2];
  if (pipe2(out, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0) {
    *why = hutch_errno_format(errno, "pipe");
    return -1;
  }
  struct bench_child c;
  if (bench_spawn(&c, (char *const *)argv, NULL, out[1], errp[1], &err) < 0) {
    *why = hutch_error_format(err);
    hutch_error_free(&err);
    close(out[0]), close(out[1]), close(errp[0]), close(errp[1]);
    return -1;
  }
  close(out[1]);
  close(errp[1]);
  /* stderr: kept for the error's text, at most what the pipe holds; the
   * sandbox may write more, so it is read without blocking at the end. */
  fcntl(errp[0], F_SETFL, O_NONBLOCK);
  _cleanup_free_ char *buf = NULL;
  bench_wait(&c, o->reward_timeout + 30, 10, out[0], &buf, cap);
  char ebuf[2048];
  ssize_t en = read(errp[0], ebuf, sizeof(ebuf) - 1);
  ebuf[en > 0 ? en : 0] = '\0';
  close(out[0]);
  close(errp[0]);
  int code = WIFEXITED(c.status) ? WEXITSTATUS(c.status) : 128 + WTERMSIG(c.status);
  if (c.stopped) {
    *why = xstrdup("stopped");
    return -1;
  }
  if (code == 0 && (*result = cJSON_Parse(last_line(buf))) != NULL)
    return 0;
  if (code == 124 || c.timed_out)
    *why = xasprintf("took longer than %g s", o->reward_timeout);
  else if (code == 127)
    *why = xasprintf("python3 is not in the image (%s): choose one with --reward-rootfs",
                     o->reward_rootfs ? o->reward_rootfs : "the default");
  else
    *why = xasprintf("hutch exec exited with status %d%s%s", code, ebuf[0] ? ": " : "", last_line(ebuf));
  return -1;
}

int bench_score(const struct bench_opts *o, const struct bench_set *set, const char *dir, const char *answer,
                const cJSON *row, double *score, char **why, char **kind) {
  *why = NULL;
  if (kind)
    *kind = NULL;
  cJSON *args = cJSON_CreateObject();
  cJSON_AddStringToObject(args, "answer", answer);
  const cJSON *gt = cJSON_GetObjectItemCaseSensitive(row, "ground_truth");
  cJSON_AddItemToObject(args, "ground_truth", gt ? cJSON_Duplicate(gt, true) : cJSON_CreateNull());
  cJSON *kw = cJSON_Duplicate(row, true);
  cJSON_DeleteItemFromObjectCaseSensitive(kw, "ground_truth");
  cJSON_AddItemToObject(args, "kwargs", kw);
  cJSON *res = NULL;
  _cleanup_free_ char *fail = NULL;
  int r = bench_python(o, set, dir, driver_py, args, REWARD_OUT_MAX, &res, &fail);
  cJSON_Delete(args);
  if (r < 0) {
    *why = xasprintf("reward: %s", fail);
    if (strncmp(fail, "took longer", 11) == 0) {
      free(*why);
      *why = xasprintf("reward: compute_score took longer than %g s", o->reward_timeout);
    }
    return -1;
  }
  const cJSON *s = cJSON_GetObjectItemCaseSensitive(res, "score");
  const cJSON *e = cJSON_GetObjectItemCaseSensitive(res, "error");
  const cJSON *k = cJSON_GetObjectItemCaseSensitive(res, "kind");
  r = -1;
  if (cJSON_IsNumber(s) && isfinite(s->valuedouble)) {
    *score = s->valuedouble;
    r = 0;
  } else {
    *why = xasprintf("reward: %s", cJSON_IsString(e) ? e->valuestring : "the driver said nothing");
    if (kind && cJSON_IsString(k))
      *kind = xstrdup(k->valuestring);
  }
  cJSON_Delete(res);
  return r;
}
