/* SPDX-License-Identifier: Apache-2.0
 *
 * A build step in its sandbox, its output and its time bounded
 * (build_step.h). */
#include "config.h"

#include "build_step.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "util.h"

#define READ_CHUNK 65536

void build_output_init(struct build_output *bo, int term_fd, int log_fd, uint64_t step_max, uint64_t total_max) {
  bo->term_fd = term_fd;
  bo->log_fd = log_fd;
  bo->step_max = step_max ? step_max : STEP_OUTPUT_DEFAULT_STEP_MAX;
  bo->total = (struct step_budget){.max = total_max ? total_max : STEP_OUTPUT_DEFAULT_TOTAL_MAX};
}

struct sinks {
  int fds[2];
};

static void emit(const char *buf, size_t len, void *data) {
  const struct sinks *s = data;
  for (size_t i = 0; i < 2; i++)
    if (s->fds[i] >= 0)
      (void)write_all(s->fds[i], buf, len);
}

void build_output_log(struct build_output *bo, const char *buf, size_t len) {
  struct sinks s = {{bo->log_fd, -1}};
  struct step_output o;
  step_output_init(&o, bo->step_max, &bo->total);
  step_output_feed(&o, buf, len, emit, &s);
  step_output_end(&o, emit, &s);
}

struct reader {
  int in;   /* the pipe's read end */
  int stop; /* an eventfd: the step's process has ended */
  struct sinks sinks;
  struct step_output out;
};

/* After the step's process: what it wrote is in the pipe, at most the
 * pipe's size; a process it left may write on, so the drain stops there
 * rather than at an end that may never come. */
static void drain(struct reader *r, char *buf) {
  int size = fcntl(r->in, F_GETPIPE_SZ);
  uint64_t left = (uint64_t)(size > 0 ? size : 1 << 20) + READ_CHUNK;
  int flags = fcntl(r->in, F_GETFL);
  if (flags < 0 || fcntl(r->in, F_SETFL, flags | O_NONBLOCK) < 0)
    return;
  while (left > 0) {
    ssize_t n = read(r->in, buf, READ_CHUNK);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return;
    step_output_feed(&r->out, buf, (size_t)n, emit, &r->sinks);
    left -= (uint64_t)n < left ? (uint64_t)n : left;
  }
}

static void *reader_main(void *data) {
  struct reader *r = data;
  _cleanup_free_ char *buf = xmalloc(READ_CHUNK);
  for (;;) {
    struct pollfd pfd[2] = {{r->in, POLLIN, 0}, {r->stop, POLLIN, 0}};
    int n = poll(pfd, 2, -1);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return NULL;
    if (pfd[1].revents) {
      drain(r, buf);
      return NULL;
    }
    ssize_t k = read(r->in, buf, READ_CHUNK);
    if (k < 0 && errno == EINTR)
      continue;
    if (k <= 0)
      return NULL; /* every writer is gone */
    step_output_feed(&r->out, buf, (size_t)k, emit, &r->sinks);
  }
}

int build_step_exec(struct hutch_sandbox *sb, struct hutch_process *proc, double timeout, struct build_output *bo,
                    struct hutch_exit *ex, hutch_error_t *err) {
  int pipefd[2];
  if (pipe2(pipefd, O_CLOEXEC) < 0)
    return hutch_error_sys(err, "a pipe for the step's output");
  struct reader r = {.in = pipefd[0], .stop = eventfd(0, EFD_CLOEXEC), .sinks = {{bo->term_fd, bo->log_fd}}};
  if (r.stop < 0) {
    close(pipefd[0]);
    close(pipefd[1]);
    return hutch_error_sys(err, "an eventfd for the step's output");
  }
  step_output_init(&r.out, bo->step_max, &bo->total);
  /* The thread takes no signal: hutch_sandbox_exec forwards them to the
   * step from this one. */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old);
  pthread_t thread;
  int e = pthread_create(&thread, NULL, reader_main, &r);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (e != 0) {
    close(pipefd[0]);
    close(pipefd[1]);
    close(r.stop);
    errno = e;
    return hutch_error_sys(err, "start the thread that reads the step's output");
  }
  proc->stdio[1] = proc->stdio[2] = pipefd[1];
  proc->timeout = timeout;
  int ret = hutch_sandbox_exec(sb, proc, ex, err);
  if (ret == 0 && ex->timed_out) {
    hutch_error_set(err, ETIMEDOUT, "the step ran past its timeout of %g s and was killed", timeout);
    ret = hutch_error_hint(err, "raise it with --step-timeout DURATION (default: 1h), or make the step faster");
  }
  close(pipefd[1]);
  (void)eventfd_write(r.stop, 1);
  pthread_join(thread, NULL);
  step_output_end(&r.out, emit, &r.sinks);
  close(pipefd[0]);
  close(r.stop);
  return ret;
}
