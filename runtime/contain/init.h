/* SPDX-License-Identifier: Apache-2.0 */
/* PID 1 of every sandbox: hutch's own small init.  It reaps zombies,
 * forwards signals, starts the processes it is asked for (a long-lived
 * sandbox receives exec requests on its control socket) and, by exiting,
 * takes everything in the sandbox's pid namespace with it. */
#ifndef HUTCH_INIT_H
#define HUTCH_INIT_H

#include <stdbool.h>

#include "payload.h"

struct init_config {
  int parent_fd;      /* sync socket to the hutch that created us */
  int listen_fd;      /* control socket of a long-lived sandbox, else -1 */
  char **sandbox_env; /* every process's base environment */
  const void *bpf;
  size_t bpf_len;
  uint64_t nofile;
  uint64_t rlimit_data;         /* RLIMIT_DATA of every command, 0: none */
  uint64_t memory_watch;        /* the rlimits fallback's memory limit for the whole sandbox (memwatch.h), 0: none */
  int memwatch_fd;              /* its sock_diag socket (memwatch_open), -1: none */
  struct payload_spec *primary; /* one-shot: the process whose end ends the sandbox */
  bool die_with_creator;        /* long-lived: keep the parent-death signal after the handover */
  int exec_fd;                  /* long-lived: hutch-init to exec once handed over (init_exec.h), -1: none */
  /* long-lived: held for hutch alone, handed over with the root at
   * SYNC_ROOT_FD (init.c): the sandbox's tmpfs (its root, O_PATH: upper/
   * in scratch mode, tmp/, shm/) and its network namespace; -1: none. */
  int scratch_fd;
  int netns_fd;
  /* long-lived: called once handed over (init_exec_small); returns only
   * when it could not replace init */
  void (*become)(const struct init_config *cfg);
};

__attribute__((noreturn)) void init_main(struct init_config *cfg);
/* hutch-init's: the same init after the handover, serving cfg->listen_fd. */
__attribute__((noreturn)) void init_idle_main(struct init_config *cfg);

#endif
