/* SPDX-License-Identifier: Apache-2.0 */
/* The devices a sandbox asks for (--device: a CDI name "vendor/class=name"
 * or "/dev/NODE"), resolved on the host before the clone: the policy's
 * [devices] allow, the CDI specs of the host (/var/run/cdi, then /etc/cdi;
 * $HUTCH_CDI_DIRS, colon-separated, instead), and each node and mount
 * checked.  No hook of a spec ever runs: they are listed as skipped. */
#ifndef HUTCH_CDI_H
#define HUTCH_CDI_H

#include "devices.h"
#include "hutch.h"

struct cdi_resolved {
  struct device_plan plan;   /* the nodes and the ld.so configuration, for the child */
  char **names;              /* as asked, NULL-terminated */
  char **env;                /* "K=V" of the specs, LD_LIBRARY_PATH of their libraries; NULL-terminated */
  struct hutch_bind *mounts; /* the specs' mounts, read-only (strings owned) */
  size_t n_mounts;
  char **nodes_text; /* "HOST -> DEST" for the audit log */
  char **hooks;      /* "hookName PATH" of each hook left unrun */
  /* cfg's binds followed by the mounts, and cdi env before cfg's env */
  struct hutch_bind *binds;
  char **all_env;
};

/* devices NULL or empty: nothing to do (0, *out zeroed).  Else resolves
 * them as the header says and fills *cfg_out, a copy of cfg whose binds
 * and env include the devices' (pointing into *out).  EPERM when the policy
 * or a check refuses, ENOENT for an unknown device. */
int cdi_resolve(const struct hutch_sandbox_config *cfg, const char *const *devices, struct cdi_resolved *out,
                struct hutch_sandbox_config *cfg_out, hutch_error_t *err);
void cdi_resolved_clear(struct cdi_resolved *r);

#endif
