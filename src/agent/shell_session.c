/* SPDX-License-Identifier: Apache-2.0 */
#include "config.h"

#include "shell_session.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "util.h"

/* Seconds a command gets to end after SIGINT, then after SIGKILL. */
#define GRACE_SECONDS 2.0

struct stream {
  char *data;
  size_t len, scanned;
  bool trimmed;
  uint64_t seen; /* bytes read, trimmed ones too */
};

struct session_proc {
  const char *argv[6];
  struct hutch_proc *h; /* the shell; its pipes are stdin, stdout and stderr */
  struct hutch_exit exit;
  hutch_error_t err;
  int rc;
  long pid; /* the shell's pid inside the sandbox */
  bool dead;
};

struct shell_session {
  struct task_sandbox *t;
  char *shell;
  char *workdir;
  struct session_proc *p;
};

enum wait_status { W_DONE, W_TIMEOUT, W_DIED, W_STOPPED };

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void stream_reset(struct stream *s) {
  free(s->data);
  memset(s, 0, sizeof(*s));
  s->data = xstrdup("");
}

/* Appends what fd holds now; false at EOF or on a hard error.  Past cap only
 * a short tail is kept, enough to find the marker in. */
static bool stream_read(int fd, struct stream *s, size_t cap) {
  char buf[65536];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return errno == EAGAIN;
    if (n == 0)
      return false;
    s->seen += (uint64_t)n;
    s->data = xrealloc(s->data, s->len + (size_t)n + 1);
    memcpy(s->data + s->len, buf, (size_t)n);
    s->len += (size_t)n;
    s->data[s->len] = '\0';
    if (s->len > cap + 8192) {
      memmove(s->data + cap, s->data + s->len - 256, 256);
      s->len = cap + 256;
      s->data[s->len] = '\0';
      s->scanned = cap;
      s->trimmed = true;
    }
  }
}

/* Finds "TOK" (stderr) or "TOK N\n" (stdout, value in *value); the stream
 * then ends where the marker starts. */
static bool stream_marker(struct stream *s, const char *tok, long *value) {
  size_t tl = strlen(tok);
  size_t from = s->scanned > tl + 24 ? s->scanned - tl - 24 : 0;
  char *m = memmem(s->data + from, s->len - from, tok, tl);
  s->scanned = s->len;
  if (m == NULL)
    return false;
  char *rest = m + tl;
  char *nl = memchr(rest, '\n', s->len - (size_t)(rest - s->data));
  if (nl == NULL) {
    s->scanned = (size_t)(m - s->data);
    return false;
  }
  if (value)
    *value = strtol(rest, NULL, 10);
  s->len = (size_t)(m - s->data);
  s->data[s->len] = '\0';
  return true;
}

static void to_capture(struct stream *s, size_t cap, struct capture *c) {
  free(c->data);
  c->capped = s->trimmed || s->len > cap;
  c->len = s->len > cap ? cap : s->len;
  c->data = steal_pointer(&s->data);
  c->data[c->len] = '\0';
  memset(s, 0, sizeof(*s));
}

static void new_token(char *tok, size_t size) {
  unsigned char r[12];
  if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r)) {
    for (size_t i = 0; i < sizeof(r); i++)
      r[i] = (unsigned char)(now() * 1e9) ^ (unsigned char)(i * 37);
  }
  int off = snprintf(tok, size, "__hutch_");
  for (size_t i = 0; i < sizeof(r); i++)
    off += snprintf(tok + off, size - (size_t)off, "%02x", r[i]);
}

/* Signals every descendant of the session shell, and the shell itself
 * when `self`, from the host through the runtime: no sh or kill of the
 * sandbox's runs for it.  Not the handle's group signal: an interrupted
 * command's shell, in that group, must live on. */
static void signal_session(struct shell_session *s, int sig, bool self) {
  if (s->p->pid <= 0 || s->t->removed)
    return;
  hutch_error_t err = NULL;
  hutch_sandbox_signal_tree(s->t->sb, (pid_t)s->p->pid, sig, self, &err);
  hutch_error_free(&err);
}

/* Feeds script to the shell and waits for the markers of tok on both
 * streams until deadline. */
static enum wait_status feed_and_wait(struct shell_session *s, const char *script, const char *tok, double deadline,
                                      size_t cap, struct stream *out, struct stream *err, long *value) {
  struct session_proc *p = s->p;
  size_t in_len = script ? strlen(script) : 0, in_off = 0;
  bool got_out = false, got_err = false;
  while (!(got_out && got_err)) {
    if (s->t->stop && *s->t->stop) {
      task_sandbox_halt(s->t);
      return W_STOPPED;
    }
    double left = deadline - now();
    if (left <= 0)
      return W_TIMEOUT;
    int ms = left > 0.2 ? 200 : (int)(left * 1000) + 1;
    int in = hutch_proc_fd(p->h, 0), outfd = hutch_proc_fd(p->h, 1), errfd = hutch_proc_fd(p->h, 2);
    struct pollfd pfd[4] = {{hutch_proc_event_fd(p->h), POLLIN, 0},
                            {got_out ? -1 : outfd, POLLIN, 0},
                            {got_err ? -1 : errfd, POLLIN, 0},
                            {in_off < in_len ? in : -1, POLLOUT, 0}};
    int n = poll(pfd, 4, ms);
    if (n < 0 && errno != EINTR)
      return W_DIED;
    if (n <= 0) {
      if (s->t->progress)
        s->t->progress(s->t->progress_data, out->seen + err->seen);
      continue;
    }
    if (pfd[1].revents) {
      stream_read(outfd, out, cap);
      got_out = stream_marker(out, tok, value);
    }
    if (pfd[2].revents) {
      stream_read(errfd, err, cap);
      got_err = stream_marker(err, tok, NULL);
    }
    if (s->t->progress && (pfd[1].revents || pfd[2].revents))
      s->t->progress(s->t->progress_data, out->seen + err->seen);
    if (pfd[3].revents) {
      ssize_t w = write(in, script + in_off, in_len - in_off);
      if (w > 0)
        in_off += (size_t)w;
      else if (w < 0 && errno != EAGAIN && errno != EINTR)
        return W_DIED;
    }
    if (pfd[0].revents) {
      stream_read(outfd, out, cap);
      stream_read(errfd, err, cap);
      if (!got_out)
        got_out = stream_marker(out, tok, value);
      if (!got_err)
        got_err = stream_marker(err, tok, NULL);
      if (!(got_out && got_err)) {
        p->dead = true;
        p->rc = hutch_proc_wait(p->h, -1, &p->exit, &p->err);
        return W_DIED;
      }
    }
  }
  return W_DONE;
}

static void proc_free(struct session_proc *p) {
  if (p == NULL)
    return;
  /* EOF on stdin ends an idle shell; a killed sandbox ends any.  What
   * still runs after that is killed as the handle goes. */
  hutch_proc_close_fd(p->h, 0);
  hutch_error_t err = NULL;
  hutch_proc_wait(p->h, 5, &p->exit, &err);
  hutch_error_free(&err);
  hutch_error_free(&p->err);
  hutch_proc_free(p->h);
  free(p);
}

static int start(struct shell_session *s, hutch_error_t *err) {
  struct session_proc *p = xcalloc(1, sizeof(*p));
  size_t i = 0;
  p->argv[i++] = s->shell;
  if (strcmp(s->shell, "bash") == 0) {
    p->argv[i++] = "--noprofile";
    p->argv[i++] = "--norc";
  }
  p->argv[i++] = "-s";
  p->argv[i] = NULL;
  struct hutch_spawn spec = {
      .argv = p->argv,
      .env = s->t->env,
      .workdir = s->workdir,
      .stdio = {{HUTCH_STDIO_PIPE, -1}, {HUTCH_STDIO_PIPE, -1}, {HUTCH_STDIO_PIPE, -1}},
  };
  if (hutch_proc_spawn(s->t->sb, &spec, &p->h, &p->err) < 0) {
    hutch_error_set(err, EIO, "start a %s session in the sandbox: %s", s->shell, p->err->msg);
    hutch_error_free(&p->err);
    free(p);
    return -1;
  }
  s->p = p;
  char tok[64];
  new_token(tok, sizeof(tok));
  /* Fds 8 and 9 keep the session's own stdout and stderr for the markers,
   * whatever a command does to 1 and 2 with exec. */
  _cleanup_free_ char *script =
      xasprintf("exec 8>&1 9>&2\nprintf '%%s %%d\\n' %s \"$$\" >&8\nprintf '%%s\\n' %s >&9\n", tok, tok);
  struct stream o = {0}, e = {0};
  stream_reset(&o);
  stream_reset(&e);
  enum wait_status st = feed_and_wait(s, script, tok, now() + 60, 4096, &o, &e, NULL);
  if (st != W_DONE) {
    hutch_error_set(err, EIO, "start a %s session in the sandbox: %s%.300s", s->shell,
                    p->err ? p->err->msg : p->exit.failure, st == W_TIMEOUT ? " (no answer in 60 s)" : e.data);
    free(o.data);
    free(e.data);
    s->p = NULL;
    p->pid = 0;
    proc_free(p);
    return -1;
  }
  free(o.data);
  free(e.data);
  /* From the handle, not from what the shell printed. */
  p->pid = hutch_proc_sandbox_pid(p->h);
  return 0;
}

struct shell_session *shell_session_new(struct task_sandbox *t, const char *shell, const char *workdir) {
  struct shell_session *s = xcalloc(1, sizeof(*s));
  s->t = t;
  s->shell = xstrdup(shell);
  s->workdir = xstrdup(workdir);
  return s;
}

static void drop_stray(struct session_proc *p) {
  struct stream junk = {0};
  stream_reset(&junk);
  stream_read(hutch_proc_fd(p->h, 1), &junk, 0);
  stream_read(hutch_proc_fd(p->h, 2), &junk, 0);
  free(junk.data);
}

static void end_session(struct shell_session *s) {
  if (s->p && !s->p->dead)
    signal_session(s, SIGKILL, true);
  proc_free(s->p);
  s->p = NULL;
}

int shell_session_run(struct shell_session *s, const char *command, double timeout, size_t cap,
                      struct session_result *res, hutch_error_t *err) {
  memset(res, 0, sizeof(*res));
  res->exit_code = -1;
  res->out.data = xstrdup("");
  res->err.data = xstrdup("");
  if (s->t->removed) {
    res->interrupted = true;
    return hutch_error_set(err, ECANCELED, "the sandbox was stopped");
  }
  if (s->p == NULL && start(s, err) < 0)
    return -1;
  drop_stray(s->p);
  char tok[64];
  do
    new_token(tok, sizeof(tok));
  while (strstr(command, tok) != NULL);
  /* The command travels as a quoted here-document, so no byte of it is
   * expanded before eval; eval runs it in the session shell itself. */
  _cleanup_free_ char *script = xasprintf("__hutch_c=$(cat <<'%s'\n%s\n%s\n)\n"
                                          "{ eval \"$__hutch_c\"\n} </dev/null\n"
                                          "printf '%%s %%d\\n' %s \"$?\" >&8\nprintf '%%s\\n' %s >&9\n",
                                          tok, command, tok, tok, tok);
  struct stream o = {0}, e = {0};
  stream_reset(&o);
  stream_reset(&e);
  long code = -1;
  double deadline = now() + (timeout > 0 ? timeout : 1e9);
  enum wait_status st = feed_and_wait(s, script, tok, deadline, cap, &o, &e, &code);
  if (st == W_TIMEOUT) {
    res->timed_out = true;
    signal_session(s, SIGINT, false);
    st = feed_and_wait(s, NULL, tok, now() + GRACE_SECONDS, cap, &o, &e, &code);
    if (st == W_TIMEOUT) {
      signal_session(s, SIGKILL, false);
      st = feed_and_wait(s, NULL, tok, now() + GRACE_SECONDS, cap, &o, &e, &code);
    }
    if (st == W_TIMEOUT) {
      /* Something ignores every signal: only a new session helps. */
      end_session(s);
    }
  }
  if (st == W_STOPPED) {
    res->interrupted = true;
  } else if (st == W_DIED) {
    code = s->p->rc == 0 ? hutch_exit_code(&s->p->exit) : -1;
    end_session(s);
    if (s->t->stop && *s->t->stop) {
      res->interrupted = true;
    } else if (start(s, err) < 0) {
      free(o.data);
      free(e.data);
      return -1;
    } else {
      res->restarted = true;
    }
  }
  res->exit_code = st == W_DONE || st == W_DIED ? (int)code : -1;
  to_capture(&o, cap, &res->out);
  to_capture(&e, cap, &res->err);
  return 0;
}

void session_result_clear(struct session_result *r) {
  free(r->out.data);
  free(r->err.data);
  memset(r, 0, sizeof(*r));
}

void shell_session_free(struct shell_session *s) {
  if (s == NULL)
    return;
  if (s->p && !s->t->removed)
    end_session(s);
  else if (s->p)
    proc_free(s->p);
  free(s->shell);
  free(s->workdir);
  free(s);
}
