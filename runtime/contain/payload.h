/* SPDX-License-Identifier: Apache-2.0 */
/* Starting one untrusted process inside a set-up sandbox (from its init). */
#ifndef HUTCH_PAYLOAD_H
#define HUTCH_PAYLOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "hutch.h"

struct payload_spec {
  char *const *argv;
  char *const *envp; /* complete environment */
  const char *workdir;
  int stdio[3];    /* fds to install as 0, 1, 2; -1 keeps the current one */
  const void *bpf; /* compiled seccomp program; NULL: inherited from init */
  size_t bpf_len;
  uint64_t nofile;
  uint64_t rlimit_data; /* RLIMIT_DATA, 0: none */
  /* A pseudo-terminal from the sandbox's devpts as stdin, stdout, stderr
   * and controlling terminal (stdio is then ignored), of this size. */
  bool tty;
  unsigned short rows, cols;
};

enum payload_stage { PAYLOAD_SETUP = 1, PAYLOAD_CHDIR, PAYLOAD_EXEC };

/* What a payload that never reached its program reports back. */
struct payload_failure {
  int32_t errnum;
  int32_t stage;
  char msg[512];
};

/* Fork the payload.  *failure receives its report when it never reached
 * its program (stage 0 in sanitizer builds until it has exited; read it
 * once it has), else NULL; payload_failure_free() lets go of it.  With
 * spec->tty, *pty_master receives the pty's master (close-on-exec), which
 * the caller hands on and closes: it must never stay in the sandbox. */
pid_t payload_spawn(const struct payload_spec *spec, struct payload_failure **failure, int *pty_master,
                    hutch_error_t *err);
void payload_failure_free(struct payload_failure *f);

#endif
