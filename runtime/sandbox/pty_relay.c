/* SPDX-License-Identifier: Apache-2.0 */
#include "config.h"

#include "pty_relay.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

static const int relay_signals[] = {SIGWINCH, SIGPIPE};

void pty_relay_size(const struct hutch_process *proc, unsigned short *rows, unsigned short *cols) {
  struct winsize ws = {.ws_row = proc->tty_rows, .ws_col = proc->tty_cols};
  if (proc->tty && ws.ws_row == 0 && ws.ws_col == 0 && ioctl(proc->stdio[0], TIOCGWINSZ, &ws) < 0 &&
      ioctl(proc->stdio[1], TIOCGWINSZ, &ws) < 0)
    memset(&ws, 0, sizeof(ws));
  *rows = ws.ws_row;
  *cols = ws.ws_col;
}

/* The caller's window changed: the pty takes its size, and the kernel
 * sends SIGWINCH to the pty's foreground process group in the sandbox. */
static void copy_winsize(struct pty_relay *r) {
  struct signalfd_siginfo si;
  while (read(r->winch_fd, &si, sizeof(si)) == (ssize_t)sizeof(si))
    ;
  struct winsize ws;
  if ((r->caller < 0 || ioctl(r->caller, TIOCGWINSZ, &ws) < 0) && (r->out < 0 || ioctl(r->out, TIOCGWINSZ, &ws) < 0))
    return;
  ioctl(r->master, TIOCSWINSZ, &ws);
}

/* Takes master.  in is -1 for no input.  Blocks SIGWINCH (read through a
 * signalfd: the size is copied to the pty) and SIGPIPE (a closed `out`
 * ends the output, not hutch), and puts `in` in raw mode when it is a
 * terminal.  On failure master is closed and nothing is changed. */
static int pty_relay_start(struct pty_relay *r, int master, int in, int out, hutch_error_t *err) {
  *r = (struct pty_relay){.master = master, .in = in, .out = out, .caller = in, .winch_fd = -1};
  sigset_t mask;
  sigemptyset(&mask);
  for (size_t i = 0; i < ARRAY_SIZE(relay_signals); i++)
    sigaddset(&mask, relay_signals[i]);
  int flags = fcntl(master, F_GETFL);
  if (flags < 0 || fcntl(master, F_SETFL, flags | O_NONBLOCK) < 0) {
    hutch_error_sys(err, "pty: non-blocking master");
    goto fail;
  }
  if (sigprocmask(SIG_BLOCK, &mask, &r->old_mask) < 0) {
    hutch_error_sys(err, "pty: block SIGWINCH and SIGPIPE");
    goto fail;
  }
  sigdelset(&mask, SIGPIPE);
  r->winch_fd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
  if (r->winch_fd < 0) {
    hutch_error_sys(err, "pty: signalfd for SIGWINCH");
    sigprocmask(SIG_SETMASK, &r->old_mask, NULL);
    goto fail;
  }
  /* Raw: every key, ^C and ^Z included, goes to the sandbox's pty, whose
   * own line discipline echoes, edits and signals as the program inside
   * asks.  Only a terminal we read from is changed. */
  if (in >= 0 && tcgetattr(in, &r->saved) == 0) {
    struct termios raw = r->saved;
    cfmakeraw(&raw);
    if (tcsetattr(in, TCSANOW, &raw) < 0) {
      hutch_error_sys(err, "pty: put the terminal in raw mode");
      close(r->winch_fd);
      sigprocmask(SIG_SETMASK, &r->old_mask, NULL);
      goto fail;
    }
    r->raw = true;
  }
  return 0;
fail:
  close(master);
  r->master = r->winch_fd = -1;
  return -1;
}

int pty_relay_begin(struct pty_relay *r, const struct hutch_process *proc, int master, hutch_error_t *err) {
  *r = (struct pty_relay){.master = -1, .in = -1, .out = -1, .caller = -1, .winch_fd = -1};
  if (!proc->tty) {
    if (master >= 0)
      close(master);
    return 0;
  }
  if (master < 0)
    return hutch_error_set(err, EPROTO, "pty: the sandbox's init sent no pty master");
  return pty_relay_start(r, master, proc->tty_no_input ? -1 : proc->stdio[0], proc->stdio[1], err);
}

size_t pty_relay_fill(const struct pty_relay *r, struct pollfd *pfd) {
  size_t n = 0;
  if (r->master < 0)
    return 0;
  bool pending = r->pending_off < r->pending_len;
  pfd[n++] = (struct pollfd){r->master, (short)(POLLIN | (pending ? POLLOUT : 0)), 0};
  if (r->in >= 0 && !pending)
    pfd[n++] = (struct pollfd){r->in, POLLIN, 0};
  pfd[n++] = (struct pollfd){r->winch_fd, POLLIN, 0};
  return n;
}

/* Returns false once the master has nothing more to give. */
static bool copy_output(struct pty_relay *r) {
  char buf[8192];
  ssize_t n = read(r->master, buf, sizeof(buf));
  if (n < 0 && (errno == EAGAIN || errno == EINTR))
    return true;
  if (n <= 0)
    return false; /* EIO: no process holds the slave any more */
  /* A caller's stdout that went away ends the output, not the process:
   * what it writes then is dropped. */
  if (r->out >= 0 && write_all(r->out, buf, (size_t)n) < 0)
    r->out = -1;
  return true;
}

/* Input ended: like a ^D typed at the start of a line, so that a program
 * reading a line-buffered pty sees its end too. */
static void end_input(struct pty_relay *r) {
  r->in = -1;
  struct termios t;
  if (tcgetattr(r->master, &t) == 0 && (t.c_lflag & ICANON)) {
    char eof = (char)t.c_cc[VEOF];
    if (write(r->master, &eof, 1) < 0) {
      /* Full or gone: the process will not read any more either. */
    }
  }
}

void pty_relay_step(struct pty_relay *r, const struct pollfd *pfd, size_t n) {
  for (size_t i = 0; i < n && r->master >= 0; i++) {
    short ev = pfd[i].revents;
    if (ev == 0)
      continue;
    if (pfd[i].fd == r->winch_fd) {
      copy_winsize(r);
    } else if (pfd[i].fd == r->master) {
      if ((ev & POLLOUT) && r->pending_off < r->pending_len) {
        ssize_t w = write(r->master, r->pending + r->pending_off, r->pending_len - r->pending_off);
        if (w > 0)
          r->pending_off += (size_t)w;
        else if (w < 0 && errno != EAGAIN && errno != EINTR)
          r->pending_off = r->pending_len;
      }
      if ((ev & (POLLIN | POLLHUP | POLLERR)) && !copy_output(r)) {
        /* The slave is closed everywhere: nothing more will come. */
        close(r->master);
        r->master = -1;
      }
    } else if (pfd[i].fd == r->in && r->in >= 0) {
      ssize_t got = read(r->in, r->pending, sizeof(r->pending));
      if (got > 0) {
        r->pending_off = 0;
        r->pending_len = (size_t)got;
      } else if (got == 0 || (errno != EAGAIN && errno != EINTR)) {
        end_input(r);
      }
    }
  }
}

void pty_relay_drain(struct pty_relay *r, int quiet_ms) {
  /* Bounded: a process left behind in a live sandbox may hold the slave
   * and write on forever. */
  double until = monotonic_seconds() + 10 * quiet_ms / 1000.0;
  while (r->master >= 0 && monotonic_seconds() < until) {
    struct pollfd pfd = {r->master, POLLIN, 0};
    int n = poll(&pfd, 1, quiet_ms);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0 || !copy_output(r))
      break;
  }
}

void pty_relay_stop(struct pty_relay *r) {
  if (r->raw && tcsetattr(r->caller, TCSANOW, &r->saved) < 0) {
    /* Nothing better to do: the terminal is gone. */
  }
  r->raw = false;
  if (r->master >= 0)
    close(r->master);
  r->master = -1;
  if (r->winch_fd < 0)
    return;
  close(r->winch_fd);
  r->winch_fd = -1;
  /* Drop what arrived meanwhile: a SIGPIPE meant for a write of ours must
   * not kill the caller once unblocked. */
  sigset_t pending;
  sigpending(&pending);
  struct timespec zero = {0, 0};
  for (size_t i = 0; i < ARRAY_SIZE(relay_signals); i++) {
    if (sigismember(&pending, relay_signals[i]) && !sigismember(&r->old_mask, relay_signals[i])) {
      sigset_t one;
      sigemptyset(&one);
      sigaddset(&one, relay_signals[i]);
      sigtimedwait(&one, NULL, &zero);
    }
  }
  sigprocmask(SIG_SETMASK, &r->old_mask, NULL);
}
