/* SPDX-License-Identifier: Apache-2.0 */
/* The clone of a sandbox's child: namespaces, pidfd and cgroup in one
 * call, safely from a caller with threads (clone.c). */
#ifndef HUTCH_CLONE_H
#define HUTCH_CLONE_H

#include <stdbool.h>
#include <sys/types.h>

/* Clones the sandbox's child into its namespaces (and into cgroup_fd's
 * cgroup where >= 0; *in_cgroup says whether it got there).  Returns the
 * pid in the parent, 0 in the child, -1 with errno.  *pidfd is the child's
 * pidfd or -1; *helper is set to a clone helper the caller must reap
 * (a threaded caller's, clone_sandbox_helped) or left alone. */
pid_t clone_sandbox(int *pidfd, int cgroup_fd, bool *in_cgroup, pid_t *helper);

#endif
