/* SPDX-License-Identifier: Apache-2.0 */
/* A sandbox's process tree as the host's /proc shows it: which processes
 * descend from one of them.  Pure (proc_tree.c); the OS half that reads
 * /proc and signals is sandbox_signal.c. */
#ifndef HUTCH_PROC_TREE_H
#define HUTCH_PROC_TREE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct proc_entry {
  pid_t pid;   /* on the host */
  pid_t ppid;  /* on the host */
  pid_t inner; /* in the innermost pid namespace (NSpid's last field) */
  bool chosen;
};

/* PPid and the last NSpid field of /proc/PID/status text. */
bool proc_status_parse(const char *status, pid_t *ppid, pid_t *inner);
/* Marks the descendants of the process whose inner pid is `leader` among
 * those of host pid `init` (a sandbox's init), and the leader itself when
 * `self`; returns how many are marked.  Leader 1 is the init: every
 * process of the sandbox. */
size_t proc_tree_select(struct proc_entry *e, size_t n, pid_t init, pid_t leader, bool self);

/* Appends the pids of /proc/PID/task/TID/children text (space-separated)
 * to v[*n..cap); returns how many did not fit. */
size_t proc_children_parse(const char *text, pid_t *v, size_t *n, size_t cap);

/* Every process of the host's /proc (sandbox_signal.c): *n of them, in a
 * malloc'd array; NULL with errno set when /proc cannot be read. */
struct proc_entry *proc_tree_read(size_t *n);

#endif
