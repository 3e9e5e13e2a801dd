/* SPDX-License-Identifier: Apache-2.0 */
#include "config.h"

#include "sandbox_io.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>

#include "util.h"

/* Seconds a stopped command gets to end once everything in the sandbox was
 * sent SIGKILL. */
#define STOP_GRACE_SECONDS 5.0

/* Returns false at EOF or on error. */
static bool drain(int fd, struct capture *c, size_t cap) {
  char buf[65536];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return errno == EAGAIN;
    if (n == 0)
      return false;
    c->seen += (uint64_t)n;
    size_t keep = c->len < cap ? cap - c->len : 0;
    if (keep > (size_t)n)
      keep = (size_t)n;
    if (keep < (size_t)n)
      c->capped = true;
    if (keep > 0) {
      c->data = xrealloc(c->data, c->len + keep + 1);
      memcpy(c->data + c->len, buf, keep);
      c->len += keep;
      c->data[c->len] = '\0';
    }
  }
}

void task_sandbox_halt(struct task_sandbox *t) {
  if (t->removed || t->halted)
    return;
  t->halted = true;
  hutch_error_t err = NULL;
  if (hutch_sandbox_signal_tree(t->sb, 1, SIGKILL, false, &err) < 0)
    hutch_error_free(&err);
}

/* The stop path ends the sandbox through the handle the task holds:
 * nothing is read back from the state directory. */
void task_sandbox_kill(struct task_sandbox *t) {
  if (t->removed)
    return;
  t->removed = true;
  hutch_error_t err = NULL;
  if (hutch_sandbox_destroy(t->sb, &err) < 0)
    hutch_error_free(&err);
  t->sb = NULL;
}

int task_sandbox_run(struct task_sandbox *t, const struct run_request *req, struct run_result *res,
                     hutch_error_t *err) {
  memset(res, 0, sizeof(*res));
  res->out.data = xstrdup("");
  res->err.data = xstrdup("");
  if (t->removed) {
    res->interrupted = true;
    return hutch_error_set(err, ECANCELED, "the sandbox was stopped");
  }
  struct hutch_spawn spec = {
      .argv = req->argv,
      .env = t->env,
      .workdir = req->workdir,
      .stdio = {{HUTCH_STDIO_PIPE, -1}, {HUTCH_STDIO_PIPE, -1}, {HUTCH_STDIO_PIPE, -1}},
  };
  struct hutch_proc *p = NULL;
  if (hutch_proc_spawn(t->sb, &spec, &p, err) < 0)
    return -1;
  /* Without input the command reads EOF at once. */
  if (req->input == NULL || req->input_len == 0)
    hutch_proc_close_fd(p, 0);
  double start = monotonic_seconds(), stopped_at = 0;
  size_t in_off = 0;
  bool out_open = true, err_open = true, killed = false;
  for (;;) {
    /* A stop request arrives as a signal, which ends the poll early; the
     * bound covers one that came just before it. */
    int ms = 200;
    if (req->timeout > 0 && !killed) {
      double left = start + req->timeout - monotonic_seconds();
      ms = left <= 0 ? 0 : left < 0.2 ? (int)(left * 1000) + 1 : 200;
    }
    int in = hutch_proc_fd(p, 0);
    struct pollfd pfd[4] = {{hutch_proc_event_fd(p), POLLIN, 0},
                            {out_open ? hutch_proc_fd(p, 1) : -1, POLLIN, 0},
                            {err_open ? hutch_proc_fd(p, 2) : -1, POLLIN, 0},
                            {in, POLLOUT, 0}};
    int n = poll(pfd, 4, ms);
    if (n < 0 && errno != EINTR)
      break;
    if (t->stop && *t->stop && stopped_at == 0) {
      /* The command and everything else in the sandbox go; its files stay
       * for the copy-back. */
      res->interrupted = true;
      stopped_at = monotonic_seconds();
      hutch_error_t kerr = NULL;
      if (hutch_proc_kill(p, &kerr) < 0)
        hutch_error_free(&kerr);
      task_sandbox_halt(t);
    }
    /* What a SIGKILL did not end (a process stuck in the kernel): the
     * sandbox goes, files and all, rather than hold the run. */
    if (stopped_at > 0 && monotonic_seconds() > stopped_at + STOP_GRACE_SECONDS)
      task_sandbox_kill(t);
    bool ended = n > 0 && pfd[0].revents;
    if (req->timeout > 0 && !killed && !ended && monotonic_seconds() >= start + req->timeout) {
      /* Its whole process group goes, as `hutch exec --timeout` does. */
      killed = true;
      hutch_error_t kerr = NULL;
      if (hutch_proc_kill(p, &kerr) < 0)
        hutch_error_free(&kerr);
    }
    if (n <= 0) {
      if (t->progress)
        t->progress(t->progress_data, res->out.seen + res->err.seen);
      continue;
    }
    if (pfd[1].revents)
      out_open = drain(hutch_proc_fd(p, 1), &res->out, req->cap);
    if (pfd[2].revents)
      err_open = drain(hutch_proc_fd(p, 2), &res->err, req->cap);
    if (t->progress && (pfd[1].revents || pfd[2].revents))
      t->progress(t->progress_data, res->out.seen + res->err.seen);
    if (pfd[3].revents & (POLLOUT | POLLERR | POLLHUP)) {
      ssize_t wn = write(in, req->input + in_off, req->input_len - in_off);
      if (wn > 0)
        in_off += (size_t)wn;
      if ((wn < 0 && errno != EAGAIN && errno != EINTR) || in_off == req->input_len)
        hutch_proc_close_fd(p, 0);
    }
    if (ended)
      break;
  }
  /* What the command wrote before it exited is still in the pipes; a
   * background process may keep them open forever, so never wait for EOF. */
  if (out_open)
    drain(hutch_proc_fd(p, 1), &res->out, req->cap);
  if (err_open)
    drain(hutch_proc_fd(p, 2), &res->err, req->cap);
  int r = hutch_proc_wait(p, -1, &res->exit, err);
  hutch_proc_free(p);
  if (r < 0)
    return -1;
  if (killed) {
    res->exit.timed_out = true;
    if (res->exit.limits.cgroup[0])
      res->exit.usage.oom_killed = false;
  }
  return 0;
}

void run_result_clear(struct run_result *r) {
  free(r->out.data);
  free(r->err.data);
  memset(r, 0, sizeof(*r));
}
