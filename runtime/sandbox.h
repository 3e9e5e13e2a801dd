/* Host side of sandboxes (hutch.h's hutch_run and hutch_sandbox_*). */
#ifndef HUTCH_SANDBOX_H
#define HUTCH_SANDBOX_H

#include "hutch.h"

struct hutch_sandbox {
  char id[40];
  int state_fd; /* the state root directory */
  pid_t pid;
  uint64_t start_time;
  struct hutch_limits_status limits; /* limits.cgroup: the sandbox's cgroup, if any */
  char *audit_log;                   /* --net proxy: the proxy's audit log */
  char *workdir;                     /* where exec --in starts a command without --workdir */
  int layer_fd;                      /* an image build's upper directory (layer_copy.h), else -1 */
};

#endif
