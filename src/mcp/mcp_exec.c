/* SPDX-License-Identifier: Apache-2.0 */
/* A command of a tool call in a live sandbox: its output kept up to a bound
 * (the rest read and dropped, so the process never blocks on a full pipe),
 * killed at its timeout, and killed as soon as the client that asked for it
 * goes away or cancels the request. */
#include "config.h"

#include "mcp.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

struct sink {
  char *buf;
  size_t len, max;
  bool cut;
};

/* Reads what the pipe holds: 0 at EOF, 1 to go on.  At most 64 chunks at
 * a time: processes that write as fast as they are read must not keep the
 * caller from its deadline and its cancellation. */
static int drain(int fd, struct sink *k) {
  char chunk[16384];
  for (int i = 0; i < 64; i++) {
    ssize_t n = read(fd, chunk, sizeof(chunk));
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return errno == EAGAIN ? 1 : 0;
    if (n == 0)
      return 0;
    size_t keep = k->len < k->max ? k->max - k->len : 0;
    if ((size_t)n > keep)
      k->cut = true;
    if (keep > (size_t)n)
      keep = (size_t)n;
    memcpy(k->buf + k->len, chunk, keep);
    k->len += keep;
  }
  return 1;
}

void mcp_exec_result_clear(struct mcp_exec_result *r) {
  free(r->out);
  free(r->err);
  memset(r, 0, sizeof(*r));
}

int mcp_exec(const struct mcp_config *cfg, struct hutch_sandbox *sb, const char *const *argv, const char *workdir,
             const char *input, size_t input_len, double timeout, struct mcp_cancel *cancel, struct mcp_exec_result *r,
             hutch_error_t *err) {
  memset(r, 0, sizeof(*r));
  struct hutch_spawn spec = {
      .argv = argv,
      .workdir = workdir,
      .stdio = {{input ? HUTCH_STDIO_PIPE : HUTCH_STDIO_NULL, -1}, {HUTCH_STDIO_PIPE, -1}, {HUTCH_STDIO_PIPE, -1}},
  };
  struct hutch_proc *p = NULL;
  if (hutch_proc_spawn(sb, &spec, &p, err) < 0)
    return -1;
  struct sink out = {.buf = xmalloc(cfg->max_output + 1), .max = cfg->max_output};
  struct sink errs = {.buf = xmalloc(cfg->max_output + 1), .max = cfg->max_output};
  size_t in_off = 0;
  bool out_open = true, err_open = true;
  double deadline = monotonic_seconds() + timeout;
  int rc = 0;
  double ended = 0;
  for (;;) {
    int in_fd = input ? hutch_proc_fd(p, 0) : -1;
    if (in_fd >= 0 && in_off == input_len) {
      hutch_proc_close_fd(p, 0);
      in_fd = -1;
    }
    struct pollfd fds[5] = {
        {out_open ? hutch_proc_fd(p, 1) : -1, POLLIN, 0},
        {err_open ? hutch_proc_fd(p, 2) : -1, POLLIN, 0},
        {hutch_proc_event_fd(p), POLLIN, 0},
        {cancel ? cancel->fd : -1, POLLIN | POLLRDHUP, 0},
        {in_fd, POLLOUT, 0},
    };
    double left = deadline - monotonic_seconds();
    int ms = left <= 0 ? 0 : left > 0.2 ? 200 : (int)(left * 1000) + 1;
    int n = poll(fds, 5, ms);
    if (n < 0 && errno != EINTR) {
      rc = hutch_error_sys(err, "poll");
      break;
    }
    if (fds[0].revents && drain(fds[0].fd, &out) == 0)
      out_open = false;
    if (fds[1].revents && drain(fds[1].fd, &errs) == 0)
      err_open = false;
    if (fds[4].revents & (POLLOUT | POLLERR | POLLHUP)) {
      ssize_t w = write(in_fd, input + in_off, input_len - in_off);
      if (w > 0)
        in_off += (size_t)w;
      else if (w < 0 && errno != EAGAIN && errno != EINTR)
        in_off = input_len; /* the process closed its stdin */
    }
    if (!r->cancelled && mcp_call_gone(cancel)) {
      r->cancelled = true;
      hutch_proc_kill(p, NULL);
    }
    /* The process has ended and its pipes are read to the end; a
     * descendant left running in the background (`server &`) may hold
     * them open: what it writes within a short grace is kept. */
    int done = hutch_proc_wait(p, 0, &r->exit, NULL);
    if (done == 0 && ended == 0)
      ended = monotonic_seconds();
    if (done == 0 && ((!out_open && !err_open) || monotonic_seconds() - ended > 0.25))
      break;
    if (done == 0 && (r->cancelled || monotonic_seconds() >= deadline))
      break;
    if (done != 0 && monotonic_seconds() >= deadline) {
      hutch_proc_kill(p, NULL);
      if (hutch_proc_wait(p, 5, &r->exit, err) < 0) {
        rc = -1;
        break;
      }
      r->exit.timed_out = true;
      break;
    }
  }
  hutch_proc_free(p);
  out.buf[out.len] = errs.buf[errs.len] = '\0';
  r->out = out.buf;
  r->out_len = out.len;
  r->out_cut = out.cut;
  r->err = errs.buf;
  r->err_len = errs.len;
  r->err_cut = errs.cut;
  return rc;
}
