/* SPDX-License-Identifier: Apache-2.0 */
/* Host devices a sandbox was given (--device, CDI): the child's side.
 * Each node, checked by the host side (sandbox/cdi.c), is opened as a
 * detached bind before pivot_root and compared with what was checked,
 * then placed over an empty file in the sandbox's /dev.  A bind keeps
 * the flags of the host mount it comes from, so the nodev of /dev's
 * tmpfs does not stop it; access follows the node's host permissions. */
#ifndef HUTCH_CONTAIN_DEVICES_H
#define HUTCH_CONTAIN_DEVICES_H

#include <stddef.h>
#include <sys/types.h>

#include "hutch.h"
#include "paths.h"

struct device_node {
  char *host_path;
  char *dest;        /* under /dev in the sandbox */
  dev_t rdev;        /* as checked */
  struct file_id id; /* the node as checked: the bind must be this very inode */
  int fd;            /* the detached bind (child), -1 before */
};

struct device_plan {
  struct device_node *nodes;
  size_t n_nodes;
  /* /etc/ld.so.conf.d/000-hutch-cdi.conf in the sandbox (the directories of
   * the spec's libraries), NULL: none. */
  char *ld_conf;
};

/* Before pivot_root: every node as a detached, read-only, nosuid bind,
 * refused (EAGAIN) when it is no longer the character device checked. */
int devices_open(struct device_plan *p, hutch_error_t *err);
/* After /dev is set up: each bind on its place, over an empty file. */
int devices_place(struct device_plan *p, hutch_error_t *err);
/* After /etc is written: the ld.so configuration of the spec's libraries. */
int devices_write_ld_conf(const struct device_plan *p, hutch_error_t *err);

#endif
