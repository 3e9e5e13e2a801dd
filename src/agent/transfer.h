/* SPDX-License-Identifier: Apache-2.0 */
/* Files in and out of the task's sandbox: --input-dir copied in, the
 * output directory copied back into the run's files/. */
#ifndef HUTCH_AGENT_TRANSFER_H
#define HUTCH_AGENT_TRANSFER_H

#include <stdint.h>

#include "sandbox_io.h"

/* Copies the contents of host directory src into dest (inside), through
 * the runtime (hutch_sandbox_copy_in): no program of the sandbox's runs.
 * Symlinks and special files are skipped. */
int transfer_in(struct task_sandbox *t, const char *src, const char *dest, struct hutch_copy_report *rep,
                hutch_error_t *err);
/* Copies the regular files and directories under src (inside) into the
 * host directory dest (created), never following a symlink, never writing
 * outside dest, within `limit` bytes and the runtime's entry, depth and time
 * bounds (hutch_sandbox_copy_out); rep->stopped names the bound reached. */
int transfer_out(struct task_sandbox *t, const char *src, const char *dest, uint64_t limit,
                 struct hutch_copy_report *rep, hutch_error_t *err);

/* The same into a dest an earlier copy filled: only what changed since
 * is copied, within `limits` (hutch_sandbox_update_out). */
int transfer_update_out(struct task_sandbox *t, const char *src, const char *dest,
                        const struct hutch_copy_limits *limits, struct hutch_copy_report *rep, hutch_error_t *err);

/* A relative path ("./a/b") that is safe to create under a directory: no
 * "..", no empty or "." components. Pure; unit-tested. */
bool transfer_safe_relpath(const char *p);

#endif
