/* SPDX-License-Identifier: Apache-2.0 */
/* The host side of `hutch exec -t`: the bytes between the caller's
 * terminal (or whatever its stdin and stdout are) and the master of the
 * pty that the sandbox's init opened for the process (payload.c). */
#ifndef HUTCH_PTY_RELAY_H
#define HUTCH_PTY_RELAY_H

#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <termios.h>

#include "hutch.h"

struct pty_relay {
  int master;  /* -1: no relay */
  int in, out; /* the caller's side; in is -1 once it ended (or with no input) */
  int caller;  /* in as given: the terminal whose size and mode count */
  int winch_fd;
  bool raw; /* `in` was put in raw mode: `saved` restores it */
  struct termios saved;
  sigset_t old_mask;
  char pending[4096]; /* read from `in`, not yet taken by the master */
  size_t pending_len, pending_off;
};

#define PTY_RELAY_POLLFDS 3

/* The window size of proc's new pty: as asked, else that of its stdin,
 * else of its stdout, else 0 x 0. */
void pty_relay_size(const struct hutch_process *proc, unsigned short *rows, unsigned short *cols);
/* The relay of proc (hutch.h: tty), with master as its init sent it;
 * without proc->tty an idle relay that the functions below accept. */
int pty_relay_begin(struct pty_relay *r, const struct hutch_process *proc, int master, hutch_error_t *err);
/* The pollfds to wait on (up to PTY_RELAY_POLLFDS); returns their number. */
size_t pty_relay_fill(const struct pty_relay *r, struct pollfd *pfd);
/* Move what the pollfds filled by pty_relay_fill say is ready. */
void pty_relay_step(struct pty_relay *r, const struct pollfd *pfd, size_t n);
/* After the process ended: what it wrote last, until the pty is quiet for
 * quiet_ms or its slave is closed everywhere, for 10 * quiet_ms at most. */
void pty_relay_drain(struct pty_relay *r, int quiet_ms);
/* Restores the terminal and the signal mask, closes the master.  Idempotent. */
void pty_relay_stop(struct pty_relay *r);

#endif
