/* SPDX-License-Identifier: Apache-2.0 */
/* The sandbox side of a start: the ordered list of steps the first process
 * in the new namespaces runs before it becomes the sandbox's init. */
#ifndef HUTCH_CONTAIN_H
#define HUTCH_CONTAIN_H

#include <stdbool.h>
#include <stddef.h>

#include "devices.h"
#include "hutch.h"
#include "identity.h"
#include "idmap.h"
#include "init.h"
#include "resource_limits.h"
#include "net_sandbox.h"
#include "paths.h"

struct contain_config {
  const char *lower;         /* the image's tree */
  const char *const *lowers; /* the trees below it (a built image's base), nearest first; may be NULL */
  const char *upper;
  const char *work;
  const char *root;        /* mount point of the new root */
  const char *sandbox_dir; /* the sandbox's directory in the state directory */
  /* When set (the sandbox's directory), upper/, work/ and root/ are made by
   * the child on the sandbox's tmpfs: see step_sandbox_tmpfs. */
  const char *scratch_dir;
  uint64_t disk;   /* bytes of that tmpfs ([limits] disk), or LIMITS_UNLIMITED */
  bool send_layer; /* image builds: hand the upper directory to the parent (SYNC_LAYER_FD) */
  /* A fork's child: its parent's upper directory, sent by hutch once the
   * parent is paused (SYNC_SEED), is copied into this sandbox's own upper
   * before the overlay is mounted (SYNC_SEEDED once done). */
  bool seeded;
  const char *hostname;
  const struct hutch_bind *binds;
  const struct file_id *bind_ids; /* each source as checked by protected_check() */
  size_t n_binds;
  bool groups_mapped;  /* setgroups is allowed and gid 5 (tty) exists inside */
  bool proc_host_ro;   /* degraded mode: the outer /proc, read-only */
  bool read_only_root; /* the root mount read-only once set up */
  bool build_caps;     /* image builds: keep the file-ownership capabilities (caps.h) */
  bool overlay_fuse;   /* degraded mode: fuse-overlayfs serves the root (overlay_fuse.h) */
  int fuse_fd;         /* its /dev/fuse, opened by the child */
  bool long_lived;
  /* The upper layer is thrown away with the sandbox (no --keep, no image
   * build, kernel overlayfs): /etc/hosts and /etc/resolv.conf may be
   * written into it before the overlay is mounted (contain.c). */
  bool etc_in_upper;
  bool etc_written; /* they were (set by the child) */
  bool debug;       /* HUTCH_DEBUG: the child prints its steps (set by contain_main) */
  /* The single mapping, which the child writes itself (no parent write,
   * no SYNC_GO); NULL: the parent writes the maps and then sends SYNC_GO. */
  const struct idmap_set *own_maps;
  struct limits_rlimits rlimits; /* limits without a cgroup, for init and all it starts */
  bool own_cgroup;               /* started in the sandbox's own cgroup */
  struct net_sandbox_config net; /* --net proxy: the veth and the gateway */
  /* Where the caller's argument and environment strings lie in memory
   * (/proc/self/stat's arg_start, arg_end, env_start, env_end), which init
   * inherits without exec and wipes; all zero when unknown. */
  uint64_t caller_strings[4];
  /* --device: host nodes and the ld.so configuration; NULL: none */
  struct device_plan *devices;
  /* --user: whom init and every process it starts run as (identity.h);
   * spec.set false: root of the sandbox's user namespace */
  struct contain_identity identity;
  const char *init_exe; /* long-lived: hutch-init, opened before pivot_root (init_exec.h); NULL: none */
  struct init_config init;
};

/* Runs in the cloned child; never returns.  A failing step is reported to
 * the parent over init.parent_fd with its errno and message. */
__attribute__((noreturn)) void contain_main(struct contain_config *cfg);

#endif
