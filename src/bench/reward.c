/* SPDX-License-Identifier: Apache-2.0 */
/* compute_score in a sandbox: reward.py is the task set's code, but the
 * answer it reads is the model's, written in a sandbox; so it runs under
 * hutch exec, without network, bounded in time, memory and processes, and
 * the answer reaches it on its stdin as data (Python's marshal format, made
 * here), never as code.  A fixed driver answers each request with one line:
 * "score X" or "error KIND TEXT", marked with a secret of that request.
 * A worker slot's scoring sandbox answers one task after another (python3
 * and reward.py's imports once per slot); a task whose slot has none starts
 * one of its own.  The driver, and how no answer reaches the next through
 * the sandbox they share, is reward_driver.c. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "error.h"
#include "util.h"

#define REWARD_OUT_MAX (64u << 10)
/* Beyond the time limit: the sandbox's start and removal. */
#define PY_SLACK 30.0

static char *last_line(char *buf) {
  size_t n = strlen(buf);
  while (n > 0 && buf[n - 1] == '\n')
    buf[--n] = '\0';
  char *nl = strrchr(buf, '\n');
  return nl ? nl + 1 : buf;
}

/* The line that begins with the secret and a space, whole (its newline
 * seen), in buf from `from` on; NULL while there is none, *from then moved
 * to the start of the line not yet whole. */
static char *secret_line(char *buf, size_t *from, const char *secret) {
  size_t sl = strlen(secret);
  char *p = buf + *from;
  for (char *nl; (nl = strchr(p, '\n')) != NULL; p = nl + 1) {
    if (strncmp(p, secret, sl) == 0 && p[sl] == ' ') {
      *nl = '\0';
      return p + sl + 1;
    }
  }
  *from = (size_t)(p - buf);
  return NULL;
}

/* The newest bytes of a stream, at most cap, NUL-terminated in e. */
static void keep_tail(char *e, size_t cap, size_t *elen, const char *data, size_t n) {
  if (n >= cap) {
    memcpy(e, data + n - cap, cap);
    *elen = cap;
  } else {
    size_t keep = *elen + n > cap ? cap - n : *elen;
    memmove(e, e + *elen - keep, keep);
    memcpy(e + keep, data, n);
    *elen = keep + n;
  }
  e[*elen] = '\0';
}

char *bench_py_driver_dir(const char *out) {
  char *dir = xasprintf("%s/runs/.reward-driver", out);
  _cleanup_free_ char *path = xasprintf("%s/driver.py", dir);
  /* Made afresh (a resumed run's may be another version's), and put in
   * place by a rename: a second run on the same directory (a requeued job)
   * must not leave the first one's scoring sandboxes a missing or
   * half-written driver. */
  if (mkdir_p(dir, 0755) < 0 || write_file_atomic(path, bench_driver_py, strlen(bench_driver_py), 0644) < 0) {
    free(dir);
    return NULL;
  }
  return dir;
}

struct bench_py *bench_scorer;

static int py_start(struct bench_py *py, const struct bench_opts *o, const struct bench_set *set, const char *dir,
                    const char *module, const char *func, double wait, bool shared, char **why) {
  memset(py, 0, sizeof(*py));
  py->in = py->out = py->err = -1;
  py->shared = shared;
  *why = NULL;
  hutch_error_t err = NULL;
  /* The run's one driver directory (read-only in every scoring sandbox),
   * else one of this scoring's own. */
  if (o->driver_dir == NULL) {
    if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
      *why = hutch_errno_format(errno, "mkdir %s", dir);
      return -1;
    }
    _cleanup_free_ char *driver_path = xasprintf("%s/driver.py", dir);
    /* A scratch file of this scoring only: no fsync. */
    if (write_file_at(AT_FDCWD, driver_path, bench_driver_py, strlen(bench_driver_py), 0644) < 0) {
      *why = hutch_errno_format(errno, "write %s", dir);
      return -1;
    }
  }
  _cleanup_free_ char *bind_reward = xasprintf("--bind=%s:/hutch-reward:ro", o->driver_dir ? o->driver_dir : dir);
  _cleanup_free_ char *bind_task = xasprintf("--bind=%s:/hutch-task:ro", set->dir);
  /* hutch exec's own limit is a backstop; the time limit proper counts from
   * the args (bench_py_finish). */
  _cleanup_free_ char *timeout = xasprintf("--timeout=%g", wait + o->reward_timeout + PY_SLACK);
  /* A shared one lives as long as its runner (die-with-parent) and is
   * stopped by it: each request's limit is counted by its worker. */
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
  /* Nothing a request writes outside /tmp and /dev/shm (which the driver
   * empties after each) can be there for the next one to load. */
  argv[n++] = "--read-only";
  argv[n++] = "--workdir=/hutch-reward";
  argv[n++] = "--env=HOME=/tmp";
  if (!shared)
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
  argv[n++] = module;
  argv[n++] = func;
  argv[n] = NULL;

  int in[2], out[2], errp[2];
  in[0] = in[1] = out[0] = out[1] = errp[0] = errp[1] = -1;
  if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0) {
    *why = hutch_errno_format(errno, "pipe");
    /* The runner starts scoring sandboxes all run long: none may leak. */
    int *all[] = {in, out, errp};
    for (size_t i = 0; i < ARRAY_SIZE(all); i++)
      for (int j = 0; j < 2; j++)
        if (all[i][j] >= 0)
          close(all[i][j]);
    return -1;
  }
  int r = bench_spawn_fds(&py->c, (char *const *)argv, in[0], out[1], errp[1], &err);
  close(in[0]), close(out[1]), close(errp[1]);
  py->in = in[1], py->out = out[0], py->err = errp[0];
  if (r < 0) {
    *why = hutch_error_format(err);
    hutch_error_free(&err);
    bench_py_end(py);
    return -1;
  }
  /* stderr: kept for the error's text, at most what the pipe holds; the
   * sandbox may write more, so it is read without blocking at the end. */
  fcntl(py->err, F_SETFL, O_NONBLOCK);
  /* A driver gone before its args are written is an error of its own, not
   * a signal that ends the worker. */
  signal(SIGPIPE, SIG_IGN);
  py->running = true;
  return 0;
}

int bench_py_start(struct bench_py *py, const struct bench_opts *o, const struct bench_set *set, const char *dir,
                   const char *module, const char *func, double wait, char **why) {
  return py_start(py, o, set, dir, module, func, wait, false, why);
}

int bench_py_start_shared(struct bench_py *py, const struct bench_opts *o, const struct bench_set *set, const char *dir,
                          char **why) {
  return py_start(py, o, set, dir, "reward", "score", 0, true, why);
}

/* A shared scoring sandbox that failed a request, or said the request was
 * its last, in a worker: no longer used, this process's copies of its
 * pipes closed.  The runner, its parent, stops it (the worker exits with
 * BENCH_EXIT_SCORER_STOPPED): only the parent knows whether its pid is
 * still its own and not reaped (and reused) already. */
static void shared_stop(struct bench_py *py) {
  py->running = false;
  bench_py_end(py);
}

bool bench_py_usable(struct bench_py *py) {
  if (py == NULL || !py->running)
    return false;
  struct pollfd p = {.fd = py->out, .events = POLLIN};
  if (poll(&p, 1, 0) == 0)
    return true;
  shared_stop(py); /* gone, or it wrote what nobody asked for */
  return false;
}

void bench_py_end(struct bench_py *py) {
  if (py->in >= 0)
    close(py->in); /* the driver reads the end of its input and exits */
  if (py->running && !py->shared)
    bench_wait(&py->c, 30, 10, -1, NULL, 0);
  if (py->out >= 0)
    close(py->out);
  if (py->err >= 0)
    close(py->err);
  py->in = py->out = py->err = -1;
  py->running = false;
}

/* Gives the driver its input and reads its stdout until its result line,
 * its end or `until`, all without blocking: its stderr is drained
 * meanwhile (the newest of it kept in ebuf for an error's text), since a
 * driver or reward.py's child blocked on a full pipe would never answer,
 * and a driver that never reads its input holds the runner no longer than
 * the time limit. */
static char *exchange(struct bench_py *py, const char *input, size_t in_len, double until, size_t cap, char **buf,
                      char *ebuf, size_t ebuf_cap, bool *timed_out) {
  size_t len = 0, from = 0, in_off = 0, elen = 0;
  *buf = xstrdup("");
  ebuf[0] = '\0';
  /* A shared one's stderr may still hold the end of an earlier task's:
   * not this one's to report. */
  char stale[4096];
  for (int i = 0; i < 64 && py->shared && py->err >= 0 && read(py->err, stale, sizeof(stale)) > 0; i++)
    ;
  fcntl(py->in, F_SETFL, O_NONBLOCK);
  fcntl(py->out, F_SETFL, O_NONBLOCK);
  for (;;) {
    if (py->in >= 0 && in_off == in_len && !py->shared) {
      close(py->in); /* the end of its input */
      py->in = -1;
    }
    char *line = secret_line(*buf, &from, py->secret);
    if (line)
      return line;
    double left = until - monotonic_seconds();
    if (left <= 0 || bench_stop) {
      *timed_out = !bench_stop;
      return NULL;
    }
    struct pollfd p[3] = {{.fd = py->out, .events = POLLIN},
                          {.fd = py->err, .events = POLLIN},
                          {.fd = in_off < in_len ? py->in : -1, .events = POLLOUT}};
    if (poll(p, 3, (int)(left * 1000) + 1) <= 0)
      continue;
    char tmp[65536];
    if (p[2].revents) {
      ssize_t w = write(py->in, input + in_off, in_len - in_off);
      if (w > 0)
        in_off += (size_t)w;
      else if (w < 0 && errno != EAGAIN && errno != EINTR)
        in_off = in_len; /* it is gone: its end is read below */
    }
    if (p[1].revents) {
      ssize_t n = read(py->err, tmp, sizeof(tmp));
      if (n > 0)
        keep_tail(ebuf, ebuf_cap - 1, &elen, tmp, (size_t)n);
      else if (n == 0) {
        close(py->err);
        py->err = -1;
      }
    }
    if (!p[0].revents)
      continue;
    ssize_t n = read(py->out, tmp, sizeof(tmp));
    if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN))
      return NULL; /* the driver and everything it started are gone */
    if (n < 0)
      continue;
    /* Past cap, only the newest cap bytes are kept: the result line comes
     * last, and whatever printed before it cannot push it out. */
    *buf = xrealloc(*buf, len + (size_t)n + 1);
    memcpy(*buf + len, tmp, (size_t)n);
    len += (size_t)n;
    (*buf)[len] = '\0';
    if (len > cap) {
      memmove(*buf, *buf + len - cap, cap + 1);
      from = from > len - cap ? from - (len - cap) : 0;
      len = cap;
    }
  }
}

int bench_py_finish(struct bench_py *py, const struct bench_opts *o, const cJSON *args, size_t cap, cJSON **result,
                    char **why) {
  *result = NULL;
  *why = NULL;
  /* The secret is made only now, after the task's agent has ended: a
   * scoring started ahead of the agent must not have it in memory when the
   * agent (a fork of this process) and its sandbox's init are forked. */
  unsigned char rnd[16];
  if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd)) {
    *why = hutch_errno_format(errno, "getrandom");
    return -1;
  }
  for (size_t i = 0; i < sizeof(rnd); i++)
    snprintf(py->secret + 2 * i, 3, "%02x", rnd[i]);
  explicit_bzero(rnd, sizeof(rnd));
  size_t alen, sl = strlen(py->secret);
  _cleanup_free_ char *data = bench_py_marshal(args, &alen);
  if (data == NULL) {
    *why = xstrdup("a string of the task is too large for the driver");
    return -1;
  }
  /* A request: "SECRET SIZE\n", then SIZE bytes of marshal data. */
  char head[64];
  int hl = snprintf(head, sizeof(head), "%s %zu\n", py->secret, alen);
  _cleanup_free_ char *input = xmalloc((size_t)hl + alen);
  memcpy(input, head, (size_t)hl);
  memcpy(input + hl, data, alen);
  _cleanup_free_ char *buf = NULL;
  char ebuf[2048];
  bool timed_out = false;
  py->cpu = 0;
  char *line = exchange(py, input, (size_t)hl + alen, monotonic_seconds() + o->reward_timeout, cap + sl + 32, &buf,
                        ebuf, sizeof(ebuf), &timed_out);
  bool last = false;
  int64_t cpu_us = 0;
  const char *res = line ? bench_py_result_head(line, &cpu_us, &last) : NULL;
  if (res)
    py->cpu = (double)cpu_us / 1e6;
  if (res && (*result = bench_py_result(res)) != NULL) {
    /* Its last: left now, so that the runner starts the slot's next task
     * with a new one (BENCH_EXIT_SCORER_STOPPED). */
    if (last && py->shared)
      shared_stop(py);
    return 0;
  }
  if (bench_stop) {
    *why = xstrdup("stopped");
    return -1;
  }
  if (py->shared) {
    shared_stop(py);
    if (timed_out)
      *why = xasprintf("took longer than %g s", o->reward_timeout);
    else
      *why = xasprintf("the scoring sandbox ended with no result%s%s", ebuf[0] ? ": " : "", last_line(ebuf));
    return -1;
  }
  /* hutch exec removes the sandbox on SIGTERM. */
  if (timed_out)
    kill(py->c.pid, SIGTERM);
  bench_wait(&py->c, 30, 10, -1, NULL, 0);
  py->running = false;
  /* What it wrote last, before it exited. */
  char tmp[2048];
  ssize_t en = py->err >= 0 ? read(py->err, tmp, sizeof(tmp)) : 0;
  size_t elen = strlen(ebuf);
  if (en > 0)
    keep_tail(ebuf, sizeof(ebuf) - 1, &elen, tmp, (size_t)en);
  bench_py_end(py);
  int code = WIFEXITED(py->c.status) ? WEXITSTATUS(py->c.status) : 128 + WTERMSIG(py->c.status);
  if (timed_out || code == 124 || py->c.timed_out)
    *why = xasprintf("took longer than %g s", o->reward_timeout);
  else if (code == 127)
    *why = xasprintf("python3 is not in the image (%s): choose one with --reward-rootfs",
                     o->reward_rootfs ? o->reward_rootfs : "the default");
  else if (code == 0)
    *why = xstrdup("the driver gave no result (a result is one line, marked as the driver's)");
  else
    *why = xasprintf("hutch exec exited with status %d%s%s", code, ebuf[0] ? ": " : "", last_line(ebuf));
  return -1;
}

int bench_python(const struct bench_opts *o, const struct bench_set *set, const char *dir, const char *module,
                 const char *func, const cJSON *args, size_t cap, cJSON **result, char **why) {
  struct bench_py py;
  if (bench_py_start(&py, o, set, dir, module, func, 0, why) < 0)
    return -1;
  int r = bench_py_finish(&py, o, args, cap, result, why);
  bench_py_end(&py);
  return r;
}

cJSON *bench_score_args(const char *answer, const cJSON *row) {
  cJSON *args = cJSON_CreateObject();
  cJSON_AddStringToObject(args, "answer", answer);
  const cJSON *gt = cJSON_GetObjectItemCaseSensitive(row, "ground_truth");
  cJSON_AddItemToObject(args, "ground_truth", gt ? cJSON_Duplicate(gt, true) : cJSON_CreateNull());
  cJSON *kw = cJSON_Duplicate(row, true);
  cJSON_DeleteItemFromObjectCaseSensitive(kw, "ground_truth");
  cJSON_AddItemToObject(args, "kwargs", kw);
  return args;
}

int bench_score_finish(struct bench_py *py, const struct bench_opts *o, const char *answer, const cJSON *row,
                       double *score, char **why, char **kind, char **repr) {
  *why = NULL;
  if (kind)
    *kind = NULL;
  if (repr)
    *repr = NULL;
  cJSON *args = bench_score_args(answer, row);
  cJSON *res = NULL;
  _cleanup_free_ char *fail = NULL;
  int r = bench_py_finish(py, o, args, REWARD_OUT_MAX, &res, &fail);
  cJSON_Delete(args);
  if (r < 0) {
    if (strncmp(fail, "took longer", 11) == 0)
      *why = xasprintf("reward: compute_score took longer than %g s", o->reward_timeout);
    else
      *why = xasprintf("reward: %s", fail);
    return -1;
  }
  const cJSON *s = cJSON_GetObjectItemCaseSensitive(res, "score");
  const cJSON *e = cJSON_GetObjectItemCaseSensitive(res, "error");
  const cJSON *k = cJSON_GetObjectItemCaseSensitive(res, "kind");
  r = -1;
  if (cJSON_IsNumber(s) && isfinite(s->valuedouble)) {
    *score = s->valuedouble;
    const cJSON *rp = cJSON_GetObjectItemCaseSensitive(res, "repr");
    if (repr && cJSON_IsString(rp))
      *repr = xstrdup(rp->valuestring);
    r = 0;
  } else {
    *why = xasprintf("reward: %s", cJSON_IsString(e) ? e->valuestring : "the driver said nothing");
    if (kind && cJSON_IsString(k))
      *kind = xstrdup(k->valuestring);
  }
  cJSON_Delete(res);
  return r;
}

int bench_score(const struct bench_opts *o, const struct bench_set *set, const char *dir, const char *answer,
                const cJSON *row, double *score, char **why, char **kind, char **repr) {
  struct bench_py py;
  if (bench_py_start(&py, o, set, dir, "reward", "score", 0, why) < 0) {
    char *fail = *why;
    *why = xasprintf("reward: %s", fail);
    free(fail);
    if (kind)
      *kind = NULL;
    if (repr)
      *repr = NULL;
    return -1;
  }
  int r = bench_score_finish(&py, o, answer, row, score, why, kind, repr);
  bench_py_end(&py);
  return r;
}
