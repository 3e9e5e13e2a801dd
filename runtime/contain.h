/* The sandbox side of a start: the ordered list of steps the first process
 * in the new namespaces runs before it becomes the sandbox's init. */
#ifndef HUTCH_CONTAIN_H
#define HUTCH_CONTAIN_H

#include <stdbool.h>
#include <stddef.h>

#include "hutch.h"
#include "init.h"
#include "limits.h"
#include "net_sandbox.h"
#include "protected.h"

struct contain_config {
  const char *lower;         /* the image's tree */
  const char *const *lowers; /* the trees below it (a built image's base), nearest first; may be NULL */
  const char *upper;
  const char *work;
  const char *root; /* mount point of the new root */
  /* When set, upper/, work/ and root/ (in this directory) are made by the
   * child on a tmpfs of its own mount namespace: see step_scratch_layers. */
  const char *scratch_dir;
  const char *hostname;
  const struct hutch_bind *binds;
  const struct file_id *bind_ids; /* each source as checked by protected_check() */
  size_t n_binds;
  bool groups_mapped; /* setgroups is allowed and gid 5 (tty) exists inside */
  bool proc_host_ro;  /* degraded mode: the outer /proc, read-only */
  bool build_caps;    /* image builds: keep the file-ownership capabilities (caps.h) */
  bool overlay_fuse;  /* degraded mode: fuse-overlayfs serves the root (overlay_fuse.h) */
  int fuse_fd;        /* its /dev/fuse, opened by the child */
  bool long_lived;
  struct limits_rlimits rlimits; /* limits without a cgroup, for init and all it starts */
  bool own_cgroup;               /* started in the sandbox's own cgroup */
  struct net_sandbox_config net; /* --net proxy: the veth and the gateway */
  struct init_config init;
};

/* Runs in the cloned child; never returns.  A failing step is reported to
 * the parent over init.parent_fd with its errno and message. */
__attribute__((noreturn)) void contain_main(struct contain_config *cfg);

#endif
