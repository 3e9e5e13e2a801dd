/* SPDX-License-Identifier: Apache-2.0 */
/* Messages between the host side and the sandbox over an AF_UNIX
 * SOCK_SEQPACKET socket.  Each message keeps its boundaries, so a step's
 * error travels whole: {errno, message, hint}, rebuilt on the receiving side
 * into the same hutch_error the child had. */
#ifndef HUTCH_SYNC_H
#define HUTCH_SYNC_H

#include <stddef.h>
#include <stdint.h>

#include "hutch.h"

#define SYNC_MAX_PAYLOAD 65536
#define SYNC_MAX_FDS 8

enum sync_type {
  SYNC_GO = 1,       /* parent -> child: the next step may run */
  SYNC_ERROR,        /* a step failed: errno, message, hint */
  SYNC_READY,        /* child -> parent: setup done */
  SYNC_EXIT,         /* init -> parent: the process ended (struct sync_exit) */
  SYNC_EXEC,         /* client -> init: run a process (serialized request + stdio fds) */
  SYNC_STARTED,      /* init -> client: the process started */
  SYNC_SIGNAL,       /* client -> init: deliver a signal to the process group */
  SYNC_FUSE_FD,      /* child -> parent: the mounted FUSE connection for --overlay fuse (one fd) */
  SYNC_NET_LISTENER, /* child -> parent: the proxy's listening socket (one fd), --net proxy */
  SYNC_LAYER_FD,     /* child -> parent: the upper directory on the sandbox's tmpfs (one fd), image builds */
  SYNC_ROOT_FD,      /* client -> init: ask for the sandbox's root; init -> client: it (O_PATH), its userns,
                        and (hutch >= 0.2) its tmpfs (O_PATH) and netns */
  SYNC_NETNS,        /* network helper -> setup process: the sandbox's network namespace (and the proxy's listener) */
  SYNC_SEED,         /* parent -> child: a fork's parent's upper directory, to copy (one fd) */
  SYNC_SEEDED,       /* child -> parent: it is copied */
};

struct sync_exit {
  int32_t status;
  int32_t signal;
  int32_t failure_stage; /* enum payload_stage when the program never ran, else 0 */
  int32_t failure_errno;
  char failure[512];
  uint64_t oom_limit; /* killed by the memory watchdog (memwatch.h) at this limit, else 0 */
  /* What the process and the children it waited for used (wait4), for the
   * audit log where no cgroup counts: CPU time and peak resident size. */
  uint64_t cpu_usec;
  uint64_t maxrss;
};

struct sync_started {
  int32_t pid; /* as seen inside the sandbox */
};

/* init -> creator with a long-lived sandbox's SYNC_READY: the numbers of
 * the fds init holds for hutch (init.h), -1 for none. */
struct sync_held_fds {
  int32_t scratch_fd;
  int32_t netns_fd;
};

/* Returns 0, or -1 with *err filled. */
int sync_send(int fd, uint32_t type, const void *payload, size_t len, const int *fds, size_t nfds, hutch_error_t *err);
/* Best effort: send an error object to the peer (used on failing paths). */
void sync_send_error(int fd, const hutch_error_t e);
/* Receive one message.  Returns 1 with *type set, 0 on EOF (peer gone), -1
 * on failure.  An SYNC_ERROR message is returned as -1 with *err rebuilt
 * from it.  payload may be NULL when none is expected; fds/nfds may be NULL. */
int sync_recv(int fd, uint32_t *type, void *payload, size_t cap, size_t *len, int *fds, size_t *nfds,
              hutch_error_t *err);
/* Receive and require one message type (EOF is an error naming `what`). */
int sync_expect(int fd, uint32_t want, void *payload, size_t cap, size_t *len, const char *what, hutch_error_t *err);
/* The same, keeping the first npassed fds the message carries in passed[]
 * (-1 for each one missing); the others are closed. */
int sync_expect_fds(int fd, uint32_t want, void *payload, size_t cap, size_t *len, int *passed, size_t npassed,
                    const char *what, hutch_error_t *err);

#endif
