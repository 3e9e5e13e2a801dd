/* SPDX-License-Identifier: Apache-2.0 */
/* The small init of a long-lived sandbox.  Init starts as a fork of the
 * hutch that created the sandbox, with that process's heap, stack and
 * relocated libraries (about 160 KiB of private memory).  Once handed over
 * it execs hutch-init, a small static program, which carries on with the
 * same control socket and configuration and idles in a fraction of that.
 * The binary is opened before pivot_root (the sandbox cannot name it) and
 * run with execveat; its configuration travels in a sealed memfd. */
#ifndef HUTCH_INIT_EXEC_H
#define HUTCH_INIT_EXEC_H

#include <stddef.h>
#include <stdint.h>

#include "init.h"

#define INIT_EXEC_NAME "hutch-init"

/* Where hutch-init is: beside the running program (a build tree, or
 * hutch-agent in the libexec directory), else the installed libexec
 * directory; malloc'd, or NULL when there is none (init then stays the
 * fork). */
char *init_exec_path(void);

/* The configuration a long-lived init carries over, as bytes (pure; the
 * listening socket's fd number included).  encode returns a malloc'd blob
 * and its size; decode fills cfg, its env and bpf pointing into the blob
 * (which it must outlive), 0 or -1 when the blob is malformed. */
void *init_config_encode(const struct init_config *cfg, size_t *len);
int init_config_decode(void *blob, size_t len, struct init_config *cfg);

/* Execs hutch-init from cfg->exec_fd; returns (with everything as it was)
 * only when that cannot be done. */
void init_exec_small(const struct init_config *cfg);

#endif
