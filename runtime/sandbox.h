/* Host side of sandboxes (hutch.h's hutch_run and hutch_sandbox_*). */
#ifndef HUTCH_SANDBOX_H
#define HUTCH_SANDBOX_H

#include "hutch.h"

struct hutch_sandbox {
  char id[40];
  int state_fd;  /* the state root directory */
  int root_fd;   /* the sandbox's own root (O_PATH), -1 until asked for (sandbox_root_fd) */
  int userns_fd; /* and its user namespace */
  pid_t pid;
  uint64_t start_time;
  struct hutch_limits_status limits; /* limits.cgroup: the sandbox's cgroup, if any */
  char *audit_log;                   /* --net proxy: the proxy's audit log */
  char *workdir;                     /* where exec --in starts a command without --workdir */
  int layer_fd;                      /* an image build's upper directory (layer_copy.h), else -1 */
};

/* The sandbox's root directory as its processes see it (an O_PATH fd the
 * handle owns, with sb->userns_fd): from its init's ready message, or asked
 * of the init over the control socket for a sandbox opened by id. */
int sandbox_root_fd(struct hutch_sandbox *sb, hutch_error_t *err);

/* hutch_die_with_parent() was called and that parent has died. */
bool sandbox_parent_died(void);

#endif
