#include "config.h"

#include "sandbox_io.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/eventfd.h>

#include "util.h"

struct worker {
  struct hutch_sandbox *sb;
  struct hutch_process proc;
  struct hutch_exit *exit;
  hutch_error_t err;
  int rc;
  int done_fd;
};

static void *worker_main(void *p) {
  struct worker *w = p;
  w->rc = hutch_sandbox_exec(w->sb, &w->proc, w->exit, &w->err);
  uint64_t one = 1;
  if (write(w->done_fd, &one, sizeof(one)) < 0)
    abort();
  return NULL;
}

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

void task_sandbox_kill(struct task_sandbox *t) {
  if (t->removed)
    return;
  t->removed = true;
  hutch_error_t err = NULL;
  if (hutch_sandbox_remove(t->state_dir, t->id, &err) < 0)
    hutch_error_free(&err);
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
  int outp[2] = {-1, -1}, errp[2] = {-1, -1}, inp[2] = {-1, -1};
  _cleanup_close_ int done_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (done_fd < 0 || pipe2(outp, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0 || pipe2(inp, O_CLOEXEC) < 0) {
    hutch_error_sys(err, "pipes for a command");
    goto fail;
  }
  fcntl(outp[0], F_SETFL, O_NONBLOCK);
  fcntl(errp[0], F_SETFL, O_NONBLOCK);
  fcntl(inp[1], F_SETFL, O_NONBLOCK);
  if (req->input == NULL || req->input_len == 0) {
    close(inp[1]);
    inp[1] = -1;
  }
  struct worker w = {
      .sb = t->sb,
      .proc = {.argv = req->argv,
               .env = t->env,
               .workdir = req->workdir,
               .stdio = {inp[0], outp[1], errp[1]},
               .timeout = req->timeout,
               .keep_caller_signals = true},
      .exit = &res->exit,
      .done_fd = done_fd,
  };
  /* The worker blocks every signal: the stop signals belong to this
   * thread's handler, and the runtime leaves them alone
   * (keep_caller_signals). */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old);
  pthread_t th;
  int pr = pthread_create(&th, NULL, worker_main, &w);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (pr != 0) {
    errno = pr;
    hutch_error_sys(err, "start a thread");
    goto fail;
  }
  size_t in_off = 0;
  bool out_open = true, err_open = true, done = false;
  while (!done) {
    struct pollfd pfd[4] = {{done_fd, POLLIN, 0},
                            {out_open ? outp[0] : -1, POLLIN, 0},
                            {err_open ? errp[0] : -1, POLLIN, 0},
                            {inp[1], POLLOUT, 0}};
    int n = poll(pfd, 4, -1);
    if (n < 0 && errno != EINTR)
      break;
    if (t->stop && *t->stop) {
      res->interrupted = true;
      task_sandbox_kill(t);
    }
    if (n <= 0)
      continue;
    if (pfd[1].revents)
      out_open = drain(outp[0], &res->out, req->cap);
    if (pfd[2].revents)
      err_open = drain(errp[0], &res->err, req->cap);
    if (pfd[3].revents & (POLLOUT | POLLERR | POLLHUP)) {
      ssize_t wn = write(inp[1], req->input + in_off, req->input_len - in_off);
      if (wn > 0)
        in_off += (size_t)wn;
      if ((wn < 0 && errno != EAGAIN && errno != EINTR) || in_off == req->input_len) {
        close(inp[1]);
        inp[1] = -1;
      }
    }
    if (pfd[0].revents & POLLIN)
      done = true;
  }
  pthread_join(th, NULL);
  /* What the command wrote before it exited is still in the pipes; a
   * background process may keep them open forever, so never wait for EOF. */
  if (out_open)
    drain(outp[0], &res->out, req->cap);
  if (err_open)
    drain(errp[0], &res->err, req->cap);
  int fds[] = {outp[0], outp[1], errp[0], errp[1], inp[0], inp[1]};
  for (size_t i = 0; i < ARRAY_SIZE(fds); i++)
    if (fds[i] >= 0)
      close(fds[i]);
  if (w.rc < 0) {
    hutch_error_move(err, &w.err);
    return -1;
  }
  return 0;
fail:;
  int fds2[] = {outp[0], outp[1], errp[0], errp[1], inp[0], inp[1]};
  for (size_t i = 0; i < ARRAY_SIZE(fds2); i++)
    if (fds2[i] >= 0)
      close(fds2[i]);
  return -1;
}

void run_result_clear(struct run_result *r) {
  free(r->out.data);
  free(r->err.data);
  memset(r, 0, sizeof(*r));
}
